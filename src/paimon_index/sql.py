"""SQL-like predicate text and ORDER BY clauses -> predicate trees and sort orders.

Grammar (keywords case-insensitive)::

    expr       := and_expr ("OR" and_expr)*
    and_expr   := not_expr ("AND" not_expr)*
    not_expr   := "NOT" not_expr | primary
    primary    := "(" expr ")" | "TRUE" | "FALSE" | comparison
    comparison := sum op sum                               op: = <=> <> != < <= > >=
                | sum ["NOT"] "IN" "(" [literal ("," literal)*] ")"
                | sum "IS" ["NOT"] "NULL" | column "IS" ["NOT"] ("TRUE" | "FALSE")
                | sum ["NOT"] "BETWEEN" sum "AND" sum
                | column "LIKE" string                     'abc%' -> STARTS_WITH 'abc'
    sum        := product (("+" | "-") product)*
    product    := unary (("*" | "/" | "%") unary)*
    unary      := ("-" | "+") unary | column | literal | "(" sum ")"
    column     := identifier | `back-quoted name`          (`` inside = one back-quote)
    literal    := integer | decimal | float | string | TRUE | FALSE | NULL
                | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]' | TIME 'hh:mm:ss[.fff]'
                | X'hex' | NaN | Infinity | -Infinity

Strings are Spark's string literals: ``'...'`` or ``"..."``, a doubled quote inside is one quote, and
backslash escapes mean what Spark makes of them (``'x\\\\y'`` is ``x\\y``; ``\\n``, ``\\t``, ``\\u0041``,
``\\101``; ``\\%`` and ``\\_`` stay escaped for LIKE; any other ``\\c`` is ``c``). ``-- ...`` and
``/* ... */`` are comments. :func:`split_top_level` and :func:`unwrap_parentheses` cut *any* Spark
SQL condition on these tokens (what the grammar does not know included), for callers that replace
the parts they cannot parse.

A comparison of a column with a literal is a :class:`~paimon_index.predicate.Leaf` (what indexes and
statistics answer). Anything else — arithmetic on a side (``id % 7 = 0``, ``price * qty > 100``), or a
column compared with a column — is a :class:`~paimon_index.predicate.Computed` comparison, evaluated
on the rows with Spark's ANSI semantics (:mod:`paimon_index.expression`: ``/`` is fractional, ``%``
takes the dividend's sign, overflow and division by zero raise
:class:`~paimon_index.errors.DataError`); indexes never prune with it. ``x IN (...)``, ``BETWEEN`` and
``IS [NOT] NULL`` on such a side become ORs/ANDs of comparisons and ``<=> NULL``, exactly as in SQL.

Numbers: ``12`` is an ``int``, ``1.5`` a ``decimal.Decimal``, ``1e3`` a ``float``; each is compared
with a column by its value, as Spark compares them (:mod:`paimon_index.coercion`). NOT is pushed
down to the leaves while parsing with :func:`paimon_index.predicate.negate` (NOT of ``=`` is ``<>``,
of ``<`` is ``>=``, of IN is NOT IN, of BETWEEN an OR of two ranges, De Morgan for AND/OR), exact
under SQL's three-valued logic, so the tree never holds a NOT node. ``c <=> v`` (null-safe equal)
and ``c IS [NOT] TRUE|FALSE`` are two-valued: ``NOT (c <=> 5)`` is ``c IS NULL OR c <> 5``, and
``b IS NOT TRUE`` keeps FALSE and NULL rows. NOT over a LIKE has no leaf and is rejected.

Errors are :class:`~paimon_index.errors.InvalidPredicateError` with the 0-based position of the
offending token in the text (the message shows a caret under it).
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Mapping
from dataclasses import dataclass

from paimon_index.errors import InvalidPredicateError
from paimon_index.fileindex.base import SortOrder
from paimon_index.lexing import STRING_LITERAL, WHITESPACE, string_value
from paimon_index.predicate import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    Computed,
    Leaf,
    Op,
    Predicate,
    Term,
    and_,
    bind,
    is_false,
    is_not_false,
    is_not_true,
    is_true,
    negate,
    null_safe_eq,
    or_,
)
from paimon_index.types import DataType, parse_schema

__all__ = ["bind_predicate", "parse_order_by", "parse_predicate", "split_top_level", "unwrap_parentheses"]

#: Spark's lexer, as far as this grammar goes: string literals in single or double quotes with
#: backslash escapes and a doubled quote inside; comments are whitespace.
_TOKENS = rf"""
    (?P<ws>{WHITESPACE})
  | (?P<string>{STRING_LITERAL})
  | (?P<hex>[xX]'[0-9A-Fa-f]*')
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<op><=>|<>|!=|<=|>=|=|<|>|\(|\)|,|[-+*/%])
  | (?P<word>-?[A-Za-z_][A-Za-z0-9_]*)
"""
_TOKEN = re.compile(_TOKENS, re.VERBOSE | re.DOTALL)
#: Any Spark SQL text: what the grammar does not know is one ``other`` token per character.
_ANY_TOKEN = re.compile(_TOKENS + r"  | (?P<other>.)", re.VERBOSE | re.DOTALL)

_FLIP = {Op.EQ: Op.EQ, Op.NE: Op.NE, Op.LT: Op.GT, Op.LE: Op.GE, Op.GT: Op.LT, Op.GE: Op.LE}
NULL_SAFE_EQ = "<=>"
_COMPARE = {NULL_SAFE_EQ: Op.EQ, "=": Op.EQ, "<>": Op.NE,
             "!=": Op.NE, "<": Op.LT, "<=": Op.LE, ">": Op.GT, ">=": Op.GE}
_ARITH_OPS = ("+", "-", "*", "/", "%")
_SPECIAL_FLOATS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
MAX_FRACTION_DIGITS = 6


class _Unexpected(Exception):
    def __init__(self, pos: int) -> None:
        self.pos = pos


def _tokens(text: str, pattern: re.Pattern[str]) -> list[_Token]:
    out, pos = [], 0
    while pos < len(text):
        m = pattern.match(text, pos)
        if m is None:
            raise _Unexpected(pos)
        if m.lastgroup != "ws":
            out.append(_Token(m.lastgroup or "", m.group(), pos))
        pos = m.end()
    out.append(_Token("end", "", len(text)))
    return out


@dataclass(frozen=True)
class _Token:
    kind: str  # string, hex, quoted, number, op, word, end
    text: str
    pos: int

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = self._tokenize(text)
        self.i = 0

    def _tokenize(self, text: str) -> list[_Token]:
        try:
            return _tokens(text, _TOKEN)
        except _Unexpected as e:
            raise self.error(f"unexpected character {text[e.pos]!r}", e.pos) from None

    def error(self, message: str, pos: int | None = None) -> InvalidPredicateError:
        at = self.peek().pos if pos is None else pos
        return InvalidPredicateError(message, position=at, text=self.text)

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        tok = self.peek()
        self.i += 1
        return tok

    def expect_op(self, op: str) -> _Token:
        tok = self.take()
        if tok.kind != "op" or tok.text != op:
            raise self.error(f"expected {op!r}, found {tok.text or 'end of text'!r}", tok.pos)
        return tok

    def expect_word(self, word: str) -> None:
        tok = self.take()
        if not tok.is_word(word):
            raise self.error(f"expected {word}, found {tok.text or 'end of text'!r}", tok.pos)

    # -- boolean structure ------------------------------------------------------------------------
    def parse(self) -> Predicate:
        if self.peek().kind == "end":
            raise self.error("empty predicate")
        result = self.or_expr()
        if self.peek().kind != "end":
            raise self.error(f"unexpected {self.peek().text!r} after the predicate")
        return result

    def or_expr(self) -> Predicate:
        parts = [self.and_expr()]
        while self.peek().is_word("OR"):
            self.take()
            parts.append(self.and_expr())
        return or_(*parts)

    def and_expr(self) -> Predicate:
        parts = [self.not_expr()]
        while self.peek().is_word("AND"):
            self.take()
            parts.append(self.not_expr())
        return and_(*parts)

    def not_expr(self) -> Predicate:
        tok = self.peek()
        if tok.is_word("NOT"):
            self.take()
            return self.negate(self.not_expr(), tok.pos)
        return self.primary()

    def negate(self, p: Predicate, pos: int) -> Predicate:
        try:
            return negate(p)
        except InvalidPredicateError as e:
            raise self.error(str(e), pos) from e

    def primary(self) -> Predicate:
        tok = self.peek()
        if tok.kind == "op" and tok.text == "(":
            start = self.i
            try:
                self.take()
                inner = self.or_expr()
                self.expect_op(")")
                if not self._continues_operand():
                    return inner
                first: InvalidPredicateError | None = None
            except InvalidPredicateError as e:
                first = e
            self.i = start  # ``(a + 1) > 2``: parentheses around an operand, not a condition
            try:
                return self.comparison()
            except InvalidPredicateError:
                if first is not None:
                    raise first from None
                raise
        if tok.is_word("TRUE", "FALSE") and self.peek(1).kind in ("end", "word", "op") \
                and not (self.peek(1).kind == "op" and self.peek(1).text in _COMPARE):
            self.take()
            return ALWAYS_TRUE if tok.text.upper() == "TRUE" else ALWAYS_FALSE
        return self.comparison()

    # -- leaves ---------------------------------------------------------------------------------
    def _continues_operand(self) -> bool:
        """Whether the next token continues an operand or a comparison (after a closing parenthesis)."""
        tok = self.peek()
        if tok.kind == "op" and (tok.text in _COMPARE or tok.text in _ARITH_OPS):
            return True
        if tok.kind in ("number", "word") and tok.text.startswith("-"):
            return True  # ``(a) -1``: a minus, not a negative literal
        return tok.is_word("IN", "BETWEEN", "IS", "LIKE") or \
            (tok.is_word("NOT") and self.peek(1).is_word("IN", "BETWEEN", "LIKE"))

    def comparison(self) -> Predicate:
        left = self.sum()
        tok = self.peek()
        if left[0] == "column" and (tok.is_word("IS", "IN", "LIKE") or
                                    (tok.is_word("NOT") and self.peek(1).is_word("IN", "LIKE"))):
            return self.after_column(str(left[1]))
        tok = self.take()
        if tok.kind == "op" and tok.text in _COMPARE:
            return self.compare(tok.text, left, self.sum())
        if tok.is_word("IS"):
            is_not = self.peek().is_word("NOT")
            if is_not:
                self.take()
            nxt = self.take()
            if not nxt.is_word("NULL"):
                found = nxt.text or "end of text"
                raise self.error(f"expected NULL after IS on an expression, found {found!r}", nxt.pos)
            return Computed(Op.NE if is_not else Op.EQ, left, ("literal", None), null_safe=True)
        if tok.is_word("NOT", "IN", "BETWEEN"):
            not_pos = tok.pos if tok.is_word("NOT") else None
            if not_pos is not None:
                tok = self.take()
            p: Predicate
            if tok.is_word("IN"):
                values = self.literal_list()
                p = or_(*(self.compare("=", left, ("literal", v)) for v in values))
            elif tok.is_word("BETWEEN"):
                low = self.sum()
                self.expect_word("AND")
                high = self.sum()
                if left[0] == "column" and low[0] == "literal" and high[0] == "literal":
                    p = Leaf(Op.BETWEEN, str(left[1]), (low[1], high[1]))
                else:
                    p = and_(self.compare(">=", left, low), self.compare("<=", left, high))
            else:
                raise self.error(f"expected IN or BETWEEN, found {tok.text or 'end of text'!r}", tok.pos)
            return p if not_pos is None else self.negate(p, not_pos)
        if left[0] == "literal" and not (tok.kind == "op" and tok.text in _COMPARE):
            raise self.error("expected a comparison operator after a literal", tok.pos)
        raise self.error(f"expected an operator after {_describe(left)}, found "
                         f"{tok.text or 'end of text'!r}", tok.pos)

    def compare(self, op: str, left: Term, right: Term) -> Predicate:
        """``left op right``: a leaf when one side is a column and the other a literal."""
        if left[0] == "column" and right[0] == "literal":
            column, value = str(left[1]), right[1]
            if op == NULL_SAFE_EQ:
                return null_safe_eq(column, value)
            return Leaf(_COMPARE[op], column, (value,))
        if left[0] == "literal" and right[0] == "column":
            column, value = str(right[1]), left[1]
            if op == NULL_SAFE_EQ:
                return null_safe_eq(column, value)
            return Leaf(_FLIP[_COMPARE[op]], column, (value,))
        return Computed(_COMPARE[op], left, right, null_safe=op == NULL_SAFE_EQ)

    # -- arithmetic operands ------------------------------------------------------------------------
    def _split_minus(self) -> None:
        """``a -1`` / ``a -b``: the lexer read ``-1`` / ``-b`` as one token; after an operand it is
        a binary minus, as Spark reads it."""
        tok = self.peek()
        if tok.kind in ("number", "word") and tok.text.startswith("-") and tok.text not in _SPECIAL_FLOATS:
            rest = tok.text[1:]
            kind = "number" if tok.kind == "number" else "word"
            self.tokens[self.i:self.i + 1] = [_Token("op", "-", tok.pos), _Token(kind, rest, tok.pos + 1)]

    def sum(self) -> Term:
        left = self.product()
        while True:
            self._split_minus()
            tok = self.peek()
            if not (tok.kind == "op" and tok.text in ("+", "-")):
                return left
            self.take()
            left = ("arith", tok.text, left, self.product())

    def product(self) -> Term:
        left = self.unary()
        while (tok := self.peek()).kind == "op" and tok.text in ("*", "/", "%"):
            self.take()
            left = ("arith", tok.text, left, self.unary())
        return left

    def unary(self) -> Term:
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("-", "+"):
            self.take()
            operand = self.unary()
            if tok.text == "+":
                return operand
            if operand[0] == "literal" and isinstance(operand[1], int | float | decimal.Decimal) \
                    and not isinstance(operand[1], bool):
                return ("literal", -operand[1])
            return ("negate", operand)
        if tok.kind == "word" and tok.text.startswith("-") and tok.text not in _SPECIAL_FLOATS:
            self._split_minus()
            return self.unary()
        if tok.kind == "op" and tok.text == "(":
            self.take()
            inner = self.sum()
            self.expect_op(")")
            return inner
        if tok.kind in ("word", "quoted") and not self._is_literal_start(tok):
            return ("column", self.column())
        return ("literal", self.literal())

    def _is_literal_start(self, tok: _Token) -> bool:
        if tok.kind != "word":
            return False
        word = tok.text.upper()
        if word in ("NULL", "TRUE", "FALSE") or tok.text in _SPECIAL_FLOATS:
            return True
        return word in ("DATE", "TIMESTAMP", "TIME") and self.peek(1).kind == "string"

    def column(self) -> str:
        tok = self.take()
        if tok.kind == "quoted":
            return tok.text[1:-1].replace("``", "`")
        if tok.kind == "word" and not tok.text.startswith("-"):
            return tok.text
        raise self.error(f"expected a column name, found {tok.text or 'end of text'!r}", tok.pos)

    def after_column(self, column: str) -> Predicate:
        tok = self.take()
        if tok.kind == "op" and tok.text == NULL_SAFE_EQ:
            return null_safe_eq(column, self.literal())
        if tok.kind == "op" and tok.text in _COMPARE:
            return Leaf(_COMPARE[tok.text], column, (self.literal(),))
        if tok.is_word("IS"):
            return self.after_is(column)
        if tok.is_word("NOT", "IN", "BETWEEN", "LIKE"):
            not_pos = tok.pos if tok.is_word("NOT") else None
            if not_pos is not None:
                tok = self.take()
            leaf: Predicate
            if tok.is_word("IN"):
                leaf = Leaf(Op.IN, column, tuple(self.literal_list()))
            elif tok.is_word("BETWEEN"):
                low = self.literal()
                self.expect_word("AND")
                leaf = Leaf(Op.BETWEEN, column, (low, self.literal()))
            elif tok.is_word("LIKE"):
                if not_pos is not None:
                    raise self.error("NOT LIKE is not supported", tok.pos)
                leaf = self.like(column)
            else:
                raise self.error(f"expected IN, BETWEEN or LIKE, found {tok.text!r}", tok.pos)
            return leaf if not_pos is None else self.negate(leaf, not_pos)
        raise self.error(f"expected an operator after column {column!r}, found "
                         f"{tok.text or 'end of text'!r}", tok.pos)

    def after_is(self, column: str) -> Predicate:
        """``IS [NOT] NULL|TRUE|FALSE``; all of them are two-valued."""
        is_not = self.peek().is_word("NOT")
        if is_not:
            self.take()
        tok = self.take()
        if tok.is_word("NULL"):
            return Leaf(Op.IS_NOT_NULL if is_not else Op.IS_NULL, column)
        if tok.is_word("TRUE"):
            return is_not_true(column) if is_not else is_true(column)
        if tok.is_word("FALSE"):
            return is_not_false(column) if is_not else is_false(column)
        raise self.error(f"expected NULL, TRUE or FALSE, found {tok.text or 'end of text'!r}", tok.pos)

    def like(self, column: str) -> Predicate:
        tok = self.take()
        if tok.kind != "string":
            raise self.error("LIKE takes a string pattern", tok.pos)
        pattern = string_value(tok.text)
        body = pattern[:-1]
        if pattern.endswith("%") and "%" not in body and "_" not in body and "\\" not in body:
            return Leaf(Op.STARTS_WITH, column, (body,))
        return Leaf(Op.LIKE, column, (pattern,))

    def literal_list(self) -> list[object]:
        self.expect_op("(")
        values: list[object] = []
        if self.peek().kind == "op" and self.peek().text == ")":
            self.take()
            return values
        while True:
            values.append(self.literal())
            tok = self.take()
            if tok.kind == "op" and tok.text == ")":
                return values
            if tok.kind != "op" or tok.text != ",":
                raise self.error(f"expected ',' or ')' in the IN list, found {tok.text or 'end of text'!r}",
                                 tok.pos)

    def literal(self) -> object:
        tok = self.take()
        if tok.kind == "op" and tok.text in ("-", "+"):
            # A signed literal where only a literal may stand (IN lists, BETWEEN bounds): the lexer
            # reads ``-Infinity`` / ``- 1`` as the operator and the literal.
            value = self.literal()
            if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
                return -value if tok.text == "-" else value
            raise self.error(f"expected a number after {tok.text!r}", tok.pos)
        if tok.kind == "string":
            return string_value(tok.text)
        if tok.kind == "hex":
            digits = tok.text[2:-1]
            if len(digits) % 2:
                raise self.error("a hex literal needs an even number of digits", tok.pos)
            return bytes.fromhex(digits)
        if tok.kind == "number":
            if re.fullmatch(r"-?\d+", tok.text):
                return int(tok.text)
            if "e" in tok.text.lower():
                return float(tok.text)
            return decimal.Decimal(tok.text)
        if tok.kind == "word":
            if tok.text in _SPECIAL_FLOATS:
                return _SPECIAL_FLOATS[tok.text]
            word = tok.text.upper()
            if word == "NULL":
                return None
            if word in ("TRUE", "FALSE"):
                return word == "TRUE"
            if word in ("DATE", "TIMESTAMP", "TIME") and self.peek().kind == "string":
                return self.temporal(word, self.take())
        raise self.error(f"expected a literal, found {tok.text or 'end of text'!r}", tok.pos)

    def temporal(self, word: str, tok: _Token) -> object:
        text = tok.text[1:-1].strip()
        fraction = re.search(r"\.(\d+)$", text)
        if fraction and len(fraction.group(1)) > MAX_FRACTION_DIGITS:
            raise self.error(f"{word} literal has more than {MAX_FRACTION_DIGITS} fractional digits "
                             "(nanoseconds are not supported)", tok.pos)
        try:
            if word == "DATE":
                return dt.date.fromisoformat(text)
            if word == "TIME":
                return dt.time.fromisoformat(text)
            return dt.datetime.fromisoformat(text)
        except ValueError as e:
            raise self.error(f"invalid {word} literal {text!r}: {e}", tok.pos) from e


def _describe(term: Term) -> str:
    from paimon_index.predicate import term_text

    return f"column {term[1]!r}" if term[0] == "column" else repr(term_text(term))


def parse_predicate(text: str) -> Predicate:
    """Parse predicate text into an unbound tree with natural Python literals."""
    return _Parser(text).parse()


def bind_predicate(text: str, schema: Mapping[str, DataType] | str) -> Predicate:
    """Parse and bind to ``schema`` (a mapping or a schema string such as ``"c INT, s STRING"``)."""
    if isinstance(schema, str):
        schema = parse_schema(schema)
    predicate = parse_predicate(text)
    try:
        return bind(predicate, schema)
    except InvalidPredicateError as e:
        raise InvalidPredicateError(f"{e} in {text!r}") from e


def parse_order_by(text: str) -> tuple[SortOrder, ...]:
    """``col [ASC|DESC] [NULLS FIRST|LAST], ...``; NULLs come first for ASC and last for DESC
    unless stated (Spark's defaults)."""
    p = _Parser(text)
    orders = []
    while True:
        column = p.column()
        ascending = True
        if p.peek().is_word("ASC", "DESC"):
            ascending = p.take().text.upper() == "ASC"
        nulls_first = ascending
        if p.peek().is_word("NULLS"):
            p.take()
            tok = p.take()
            if not tok.is_word("FIRST", "LAST"):
                raise p.error("expected FIRST or LAST after NULLS", tok.pos)
            nulls_first = tok.text.upper() == "FIRST"
        orders.append(SortOrder(column, ascending, nulls_first))
        tok = p.take()
        if tok.kind == "end":
            return tuple(orders)
        if tok.kind != "op" or tok.text != ",":
            raise p.error(f"expected ',' or the end of ORDER BY, found {tok.text!r}", tok.pos)


# -- cutting Spark SQL text this grammar may not parse ---------------------------------------------
#: Tokens that open and close a nesting level: a cut is never made inside one.
_OPEN, _CLOSE = {"(", "[", "CASE"}, {")", "]", "END"}


def _nesting(tok: _Token) -> int:
    key = tok.text.upper() if tok.kind == "word" else tok.text if tok.kind in ("op", "other") else ""
    return 1 if key in _OPEN else -1 if key in _CLOSE else 0


def split_top_level(text: str, keyword: str) -> list[str]:
    """``text`` (any Spark SQL condition) cut at its top-level ``keyword`` (``AND`` or ``OR``).

    Tokens are this module's, read as Spark reads them (quotes with backslash escapes, back-quoted
    names, comments); characters the grammar does not know are tokens of their own, so any text
    can be cut. Not cut: inside parentheses, brackets or ``CASE ... END``, and the ``AND`` of a
    ``BETWEEN``. The parts are stripped; one part means there is no such keyword.
    """
    tokens = _tokens(text, _ANY_TOKEN)
    parts, start, depth, betweens = [], 0, 0, 0
    for tok in tokens[:-1]:
        depth += _nesting(tok)
        if depth or tok.kind != "word":
            continue
        word = tok.text.upper()
        if word == "BETWEEN":
            betweens += 1
        elif word == keyword and keyword == "AND" and betweens:
            betweens -= 1
        elif word == keyword:
            parts.append(text[start:tok.pos].strip())
            start = tok.pos + len(tok.text)
    parts.append(text[start:].strip())
    return parts


def unwrap_parentheses(text: str) -> str | None:
    """The inside of ``( ... )`` when one pair of parentheses wraps all of ``text``, else None."""
    tokens = _tokens(text, _ANY_TOKEN)[:-1]
    if len(tokens) < 2 or tokens[0].text != "(" or tokens[-1].text != ")":
        return None
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.text in ("(", ")") and tok.kind == "op":
            depth += 1 if tok.text == "(" else -1
            if depth == 0:
                return text[tokens[0].pos + 1:tok.pos].strip() if i == len(tokens) - 1 else None
    return None
