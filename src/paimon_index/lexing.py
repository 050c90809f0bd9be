"""Spark SQL's lexical rules that WHERE text (:mod:`paimon_index.sql`) and SET expressions
(:mod:`paimon_index.expression`) share, so one text means one thing in both and in Spark.

    STRING_LITERAL       regex of a string literal: '...' or "...", backslash escapes, doubled quote
    WHITESPACE           regex of white space and comments (-- to the end of the line, /* ... */)
    string_value(text)   the literal's value as Spark's parser makes it (ParserUtils.unescapeSQLString)

Escapes: ``\\n``, ``\\t``, ``\\r``, ``\\b``, ``\\0``, ``\\Z`` (0x1A), ``\\uXXXX``, ``\\UXXXXXXXX``,
octal ``\\101``; ``\\%`` and ``\\_`` stay escaped (LIKE reads them); any other ``\\c`` is ``c``
(so ``'x\\\\y'`` is ``x\\y`` and ``'it\\'s'`` is ``it's``). A doubled quote inside is one quote.
"""

from __future__ import annotations

import re

__all__ = ["STRING_LITERAL", "WHITESPACE", "string_value"]

STRING_LITERAL = r"'(?:[^'\\]|\\.|'')*'" + r'|"(?:[^"\\]|\\.|"")*"'
WHITESPACE = r"\s+|--[^\n]*|/\*.*?\*/"
_ESCAPE = r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([01][0-7]{2})|(.))"
_ESCAPES = {q: re.compile(f"{_ESCAPE}|{q}{q}", re.DOTALL) for q in "'\""}
_ESCAPED_CHARS = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a",
                  "%": "\\%", "_": "\\_"}  # LIKE's escapes stay escaped


def string_value(quoted: str) -> str:
    """A string literal's value as Spark reads it (``quoted`` matches :data:`STRING_LITERAL`)."""
    quote = quoted[0]

    def replace(m: re.Match[str]) -> str:
        u16, u32, octal, char = m.groups()
        if u16 or u32:
            return chr(int(u16 or u32, 16))
        if octal:
            return chr(int(octal, 8))
        return quote if char is None else _ESCAPED_CHARS.get(char, char)

    return _ESCAPES[quote].sub(replace, quoted[1:-1])
