"""SQL value expressions for ``UPDATE ... SET col = <expression>``, evaluated with Arrow compute.

    compile_expression("score + 1", {"score": pa.int64(), ...}) -> Expression
    Expression.evaluate(rows: pa.Table) -> pa.Array       (one value per row, vectorized)

The same text means the same in Python and in Spark (``F.expr``), for what is supported:

* literals: integers (INT, or BIGINT when they do not fit), decimals ``1.5`` (exact, Arrow
  decimal128 as Spark's DECIMAL literal), ``1.5e3``/``1.5D`` (DOUBLE), ``'text'`` or ``"text"``
  read as Spark reads them (backslash escapes: ``'x\\\\y'`` is ``x\\y``, ``'it\\'s'``; a doubled quote is
  one), ``TRUE``, ``FALSE``, ``NULL``; ``--`` and ``/* */`` comments;
* column references, case-insensitive as in Spark, optionally in backquotes;
* ``+ - * /`` and unary ``-``; ``/`` is Spark's fractional division (DOUBLE for integer and
  floating operands); ``||`` concatenates strings; parentheses;
* functions ``upper lower trim ltrim rtrim length abs coalesce concat``.

Semantics follow Spark 4 in its default ANSI mode: NULL in, NULL out; integer overflow and division
by zero raise (:class:`~paimon_index.errors.DataError`) instead of wrapping or giving NULL.
Anything else (comparisons, CASE, other functions) is refused with
:class:`~paimon_index.errors.InvalidPredicateError` naming the position — never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import DataError, InvalidPredicateError
from paimon_index.lexing import STRING_LITERAL, WHITESPACE, string_value

__all__ = ["Expression", "compile_expression"]

#: Spark's lexer for these expressions; string literals and comments exactly as in WHERE text
#: (:mod:`paimon_index.lexing`: single or double quotes, backslash escapes, a doubled quote).
_TOKEN = re.compile(rf"""
    (?P<space>{WHITESPACE})
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[dDlL]?)
  | (?P<string>{STRING_LITERAL})
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>\|\||[-+*/(),])
""", re.VERBOSE | re.DOTALL)

#: Largest INT literal; larger integer literals are BIGINT (Spark).
_INT_MAX = 2**31 - 1

Evaluator = Callable[[pa.Table], pa.Array | pa.Scalar]


@dataclass(frozen=True)
class Expression:
    """A compiled SET expression: :meth:`evaluate` returns one value per row."""

    text: str
    _evaluate: Evaluator

    def evaluate(self, rows: pa.Table) -> pa.Array:
        try:
            value = self._evaluate(rows)
        except (pa.ArrowInvalid, ZeroDivisionError) as e:
            raise DataError(f"evaluating {self.text!r}: {e}") from e
        if isinstance(value, pa.Scalar):
            return pa.array([value.as_py()] * rows.num_rows, value.type)
        return value.combine_chunks() if isinstance(value, pa.ChunkedArray) else value

    def __call__(self, rows: pa.Table) -> pa.Array:
        return self.evaluate(rows)


def compile_expression(text: str, columns: Mapping[str, pa.DataType] | pa.Schema) -> Expression:
    """Parse ``text`` against the table's columns (names; types only check references)."""
    names = list(columns.names) if isinstance(columns, pa.Schema) else list(columns)
    return Expression(text, _Parser(text, {n.lower(): n for n in names}).parse())


class _Parser:
    def __init__(self, text: str, columns: Mapping[str, str]) -> None:
        self.text = text
        self.columns = columns
        self.tokens: list[tuple[str, str, int]] = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                raise self.error("unexpected character", position)
            if match.lastgroup != "space":
                self.tokens.append((match.lastgroup or "", match.group(), position))
            position = match.end()
        self.at = 0

    def error(self, message: str, position: int | None = None) -> InvalidPredicateError:
        if position is None:
            position = self.tokens[self.at][2] if self.at < len(self.tokens) else len(self.text)
        return InvalidPredicateError(f"SET expression: {message}", position=position, text=self.text)

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str, int]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            raise self.error(f"expected {value!r}" if value else "unexpected end")
        self.at += 1
        return token

    def parse(self) -> Evaluator:
        if not self.tokens:
            raise self.error("empty expression", 0)
        result = self.additive()
        if self.peek() is not None:
            raise self.error(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return result

    def additive(self) -> Evaluator:
        left = self.multiplicative()
        while (token := self.peek()) is not None and token[1] in ("+", "-", "||"):
            self.take()
            right = self.multiplicative()
            left = _concat(left, right) if token[1] == "||" else _arith(token[1], left, right)
        return left

    def multiplicative(self) -> Evaluator:
        left = self.unary()
        while (token := self.peek()) is not None and token[1] in ("*", "/"):
            self.take()
            left = _arith(token[1], left, self.unary())
        return left

    def unary(self) -> Evaluator:
        token = self.peek()
        if token is not None and token[1] in ("-", "+"):
            self.take()
            operand = self.unary()
            return operand if token[1] == "+" else (lambda rows: pc.negate_checked(operand(rows)))
        return self.primary()

    def primary(self) -> Evaluator:
        kind, value, position = self.take()
        if value == "(":
            inner = self.additive()
            self.take(")")
            return inner
        if kind == "number":
            return _const(_number(value))
        if kind == "string":
            return _const(pa.scalar(string_value(value), pa.string()))
        if kind in ("name", "quoted"):
            name = value[1:-1].replace("``", "`") if kind == "quoted" else value
            if kind == "name" and (nxt := self.peek()) is not None and nxt[1] == "(":
                return self.call(name.lower(), position)
            upper = name.upper()
            if kind == "name" and upper in ("TRUE", "FALSE"):
                return _const(pa.scalar(upper == "TRUE"))
            if kind == "name" and upper == "NULL":
                return _const(pa.scalar(None, pa.null()))
            column = self.columns.get(name.lower())
            if column is None:
                raise self.error(f"unknown column {name!r}", position)
            return lambda rows: rows.column(column)
        raise self.error(f"unexpected {value!r}", position)

    def call(self, name: str, position: int) -> Evaluator:
        self.take("(")
        args: list[Evaluator] = []
        if (token := self.peek()) is not None and token[1] != ")":
            args.append(self.additive())
            while (token := self.peek()) is not None and token[1] == ",":
                self.take()
                args.append(self.additive())
        self.take(")")
        unary = {"upper": pc.utf8_upper, "lower": pc.utf8_lower, "trim": pc.utf8_trim_whitespace,
                 "ltrim": pc.utf8_ltrim_whitespace, "rtrim": pc.utf8_rtrim_whitespace,
                 "length": pc.utf8_length, "abs": pc.abs_checked}
        if name in unary:
            if len(args) != 1:
                raise self.error(f"{name}() takes one argument", position)
            function, arg = unary[name], args[0]
            return lambda rows: function(arg(rows))
        if name == "coalesce" and args:
            return lambda rows: pc.coalesce(*_common([a(rows) for a in args]))
        if name == "concat" and args:
            return lambda rows: pc.binary_join_element_wise(*[_text(a(rows)) for a in args], "")
        raise self.error(f"unsupported function {name}()", position)


def _number(text: str) -> pa.Scalar:
    suffix = text[-1].lower()
    body = text[:-1] if suffix in "dl" else text
    if suffix == "d" or "e" in body.lower():
        return pa.scalar(float(body), pa.float64())
    if "." in body:
        value = Decimal(body)
        digits = len(value.as_tuple().digits)
        scale = max(0, -int(value.as_tuple().exponent))
        return pa.scalar(value, pa.decimal128(max(digits, scale, 1), scale))
    integer = int(body)
    return pa.scalar(integer, pa.int32() if suffix != "l" and integer <= _INT_MAX else pa.int64())


def _const(value: pa.Scalar) -> Evaluator:
    return lambda rows: value


def _type(value: pa.Array | pa.ChunkedArray | pa.Scalar) -> pa.DataType:
    return value.type


def _common(values: list[pa.Array | pa.Scalar]) -> list[pa.Array | pa.Scalar]:
    typed = [v for v in values if not pa.types.is_null(_type(v))]
    if not typed:
        return values
    target = typed[0].type
    for value in typed[1:]:
        if value.type != target:
            target = _wider(target, value.type)
    return [v.cast(target) for v in values]


def _wider(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if pa.types.is_floating(a) or pa.types.is_floating(b):
        return pa.float64()
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        return pa.float64() if not (pa.types.is_decimal(a) and pa.types.is_decimal(b)) else \
            pa.decimal128(38, max(a.scale, b.scale))
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        return pa.int64()
    return pa.string()


_ARITH = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}


def _arith(op: str, left: Evaluator, right: Evaluator) -> Evaluator:
    def evaluate(rows: pa.Table) -> pa.Array | pa.Scalar:
        a, b = left(rows), right(rows)
        for side in (a, b):
            t = _type(side)
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
                    or pa.types.is_null(t)):
                raise DataError(f"operator {op} needs numbers, got {t}")
        if op == "/":
            # Spark's '/' is fractional: integer and floating operands divide as DOUBLE.
            a, b = _as_fractional(a), _as_fractional(b)
            if pc.any(pc.equal(b, 0)).as_py():
                raise DataError("division by zero")
            return pc.divide(a, b)
        ta, tb = _type(a), _type(b)
        nulls = pa.types.is_null(ta) or pa.types.is_null(tb)
        if pa.types.is_decimal(ta) != pa.types.is_decimal(tb) and not nulls:
            # Spark: DECIMAL with an integer stays exact; with a floating value becomes DOUBLE.
            other = tb if pa.types.is_decimal(ta) else ta
            if pa.types.is_floating(other):
                a, b = a.cast(pa.float64()), b.cast(pa.float64())
            elif pa.types.is_integer(other):
                wide = pa.decimal128(20, 0)
                a = a if pa.types.is_decimal(ta) else a.cast(wide)
                b = b if pa.types.is_decimal(tb) else b.cast(wide)
        elif pa.types.is_integer(ta) and pa.types.is_integer(tb) and ta != tb:
            a, b = _common([a, b])
        return _ARITH[op](a, b)

    return evaluate


def _as_fractional(value: pa.Array | pa.Scalar) -> pa.Array | pa.Scalar:
    return value if pa.types.is_decimal(_type(value)) else value.cast(pa.float64())


def _text(value: pa.Array | pa.Scalar) -> pa.Array | pa.Scalar:
    return value if pa.types.is_string(_type(value)) or pa.types.is_large_string(_type(value)) \
        else value.cast(pa.string())


def _concat(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda rows: pc.binary_join_element_wise(_text(left(rows)), _text(right(rows)), "")
