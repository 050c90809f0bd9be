"""SQL value expressions for ``UPDATE ... SET col = <expression>``, evaluated with Arrow compute.

    compile_expression("score + 1", {"score": pa.int64(), ...}) -> Expression
    Expression.evaluate(rows: pa.Table) -> pa.Array       (one value per row, vectorized)

The same text means the same in Python and in Spark (``F.expr``), for what is supported:

* literals: integers (INT, or BIGINT when they do not fit), decimals ``1.5`` (exact, Arrow
  decimal128 as Spark's DECIMAL literal), ``1.5e3``/``1.5D`` (DOUBLE), ``'text'`` or ``"text"``
  read as Spark reads them (backslash escapes: ``'x\\\\y'`` is ``x\\y``, ``'it\\'s'``; a doubled quote is
  one), ``TRUE``, ``FALSE``, ``NULL``; ``--`` and ``/* */`` comments;
* column references, case-insensitive as in Spark, optionally in backquotes;
* ``+ - * / %`` and unary ``-``; ``/`` is Spark's fractional division (DOUBLE for integer and
  floating operands, DECIMAL rounded half-up to Spark's result scale for DECIMAL operands); ``%``
  is Java's remainder (the sign of the dividend; ``fmod`` for floating operands; exact for
  DECIMAL); ``||`` concatenates strings; parentheses;
* functions ``upper lower trim ltrim rtrim length abs coalesce concat``.

Semantics follow Spark 4 in its default ANSI mode: NULL in, NULL out; integer overflow, DECIMAL
overflow and division (or remainder) by zero raise (:class:`~paimon_index.errors.DataError`) instead
of wrapping or giving NULL. A NULL dividend with a zero divisor is NULL, as in Spark.
DECIMAL results take Spark's result types (``+ -``: scale max(s1, s2); ``*``: s1 + s2; ``/``:
max(6, s1 + p2 + 1); ``%``: max(s1, s2); precision capped at 38 as Spark adjusts it), an integer
operand being DECIMAL(3/5/10/20, 0) by width, an integer literal DECIMAL of its digits.

WHERE text uses the same arithmetic (:func:`evaluate_term`, :func:`evaluate_comparison`) for the
:class:`~paimon_index.predicate.Computed` comparisons :mod:`paimon_index.sql` parses.
Anything else (comparisons, CASE, other functions) is refused with
:class:`~paimon_index.errors.InvalidPredicateError` naming the position — never guessed.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import DataError, InvalidPredicateError
from paimon_index.lexing import STRING_LITERAL, WHITESPACE, string_value
from paimon_index.predicate import Computed, Op, Term, term_text

__all__ = ["Expression", "compile_expression", "evaluate_comparison", "evaluate_term"]

#: Spark's lexer for these expressions; string literals and comments exactly as in WHERE text
#: (:mod:`paimon_index.lexing`: single or double quotes, backslash escapes, a doubled quote).
_TOKEN = re.compile(rf"""
    (?P<space>{WHITESPACE})
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[dDlL]?)
  | (?P<string>{STRING_LITERAL})
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>\|\||[-+*/%(),])
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
            return pa.repeat(value, rows.num_rows)
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
        while (token := self.peek()) is not None and token[1] in ("*", "/", "%"):
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
_MAX_PRECISION = 38
_INTEGER_PRECISION = {8: 3, 16: 5, 32: 10, 64: 20}  # Spark: TINYINT..BIGINT as DECIMAL(p, 0)
_WIDE = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP)

Value: TypeAlias = Any  # a pa.Array, pa.ChunkedArray or pa.Scalar


def _arith(op: str, left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda rows: arithmetic(op, left(rows), right(rows))


def _numeric(op: str, value: Value) -> pa.DataType:
    t = _type(value)
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
            or pa.types.is_null(t)):
        raise DataError(f"operator {op} needs numbers, got {t}")
    return t


def arithmetic(op: str, a: Value, b: Value) -> Value:
    """``a op b`` (``+ - * / %``) with Spark's ANSI semantics (see the module docstring)."""
    ta, tb = _numeric(op, a), _numeric(op, b)
    if pa.types.is_null(ta) or pa.types.is_null(tb):
        other = tb if pa.types.is_null(ta) else ta
        target = pa.float64() if op == "/" and not pa.types.is_decimal(other) else \
            (other if not pa.types.is_null(other) else pa.int32())
        return pa.scalar(None, target) if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar) \
            else pa.nulls(_length(a, b), target)
    floating = pa.types.is_floating(ta) or pa.types.is_floating(tb)
    if op in ("/", "%"):
        _check_divisor(op, a, b)
    if floating or (op == "/" and not (pa.types.is_decimal(ta) or pa.types.is_decimal(tb))):
        a, b = a.cast(pa.float64()), b.cast(pa.float64())
        if op == "%":
            return _fmod(a, b)
        return pc.divide(a, b) if op == "/" else _ARITH[op](a, b)
    if pa.types.is_decimal(ta) or pa.types.is_decimal(tb):
        return _decimal_arithmetic(op, a, b)
    if ta != tb:
        a, b = _common([a, b])
    if op == "%":
        # Java's remainder: a - b * (a / b) with the quotient truncated toward zero (Arrow's integer
        # division); MIN % -1 is 0 (the quotient would overflow).
        a = pc.if_else(pc.equal(b, -1), pa.scalar(0, _type(a)), a)
        return pc.subtract(a, pc.multiply(b, pc.divide(a, b)))
    return _ARITH[op](a, b)


def _length(*values: Value) -> int:
    return next((len(v) for v in values if not isinstance(v, pa.Scalar)), 1)


def _check_divisor(op: str, a: Value, b: Value) -> None:
    """ANSI: a zero divisor of a non-NULL dividend is an error (a NULL dividend gives NULL)."""
    zero = pc.and_(pc.equal(b, pa.scalar(0, _type(b)) if not pa.types.is_decimal(_type(b)) else
                            pa.scalar(decimal.Decimal(0), _type(b))), pc.is_valid(a))
    if pc.any(zero).as_py():
        raise DataError("division by zero" if op == "/" else "remainder by zero")


def _fmod(a: Value, b: Value) -> Value:
    """Java's ``%`` on doubles (C's fmod: exact, the sign of the dividend), NULL in NULL out."""
    n = _length(a, b)
    arrays = [pa.array([v.as_py()] * n, pa.float64()) if isinstance(v, pa.Scalar) else v for v in (a, b)]
    valid = pc.and_(pc.is_valid(arrays[0]), pc.is_valid(arrays[1]))
    x, y = (pc.fill_null(v, 1.0).to_numpy(zero_copy_only=False) for v in arrays)
    with np.errstate(all="ignore"):
        result = np.fmod(x, y)
    return pa.array(result, pa.float64(), mask=pc.invert(valid).to_numpy(zero_copy_only=False))


def _decimal_type(value: Value) -> tuple[int, int]:
    t = _type(value)
    if pa.types.is_decimal(t):
        return t.precision, t.scale
    if isinstance(value, pa.Scalar) and value.is_valid:  # a literal: DECIMAL of its digits
        return max(len(str(abs(int(value.as_py())))), 1), 0
    return _INTEGER_PRECISION[t.bit_width], 0


def _bounded(precision: int, scale: int) -> tuple[int, int]:
    """Spark's ``DecimalType.adjustPrecisionScale`` (precision loss allowed, its default)."""
    if precision <= _MAX_PRECISION:
        return precision, scale
    integral = precision - scale
    return _MAX_PRECISION, max(_MAX_PRECISION - integral, min(scale, 6))


def decimal_result_type(op: str, p1: int, s1: int, p2: int, s2: int) -> tuple[int, int]:
    """Spark's result precision and scale of DECIMAL(p1, s1) ``op`` DECIMAL(p2, s2)."""
    if op in ("+", "-"):
        scale = max(s1, s2)
        return _bounded(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return _bounded(p1 + p2 + 1, s1 + s2)
    if op == "/":
        scale = max(6, s1 + p2 + 1)
        return _bounded(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)
    return _bounded(min(p1 - s1, p2 - s2) + scale, scale)


def _decimal_arithmetic(op: str, a: Value, b: Value) -> Value:
    """DECIMAL ``a op b`` with Spark's result type, exact on the unscaled integers of the column.

    Vectorized over the rows: NumPy int64 when the magnitudes (bounded from the column's actual
    minimum and maximum) keep every intermediate inside 64 bits, else NumPy arrays of Python ints
    (Arrow has no kernel for Spark's half-up division or Java's remainder on decimals, and its
    decimal kernels refuse the 77-digit intermediates Spark's BigDecimal allows).
    """
    (p1, s1), (p2, s2) = _decimal_type(a), _decimal_type(b)
    precision, scale = decimal_result_type(op, p1, s1, p2, s2)
    x, bx, x_valid = _unscaled(a)
    y, by, y_valid = _unscaled(b)
    valid = x_valid & y_valid
    if op == "/":
        # |x / y| rounded half-up at ``scale``: floor((2 |x| 10^k + |y|) / (2 |y|)).
        k = scale - s1 + s2  # >= 0 for every type Spark derives
        peak = 2 * bx * 10**k + 2 * by + 10**k
    elif op == "*":
        k = s1 + s2 - scale
        peak = bx * by + 10**k
    else:
        exact = max(s1, s2)
        k = exact - scale
        peak = 2 * max(bx * 10 ** (exact - s1), by * 10 ** (exact - s2)) + 10**k + \
            10 ** (exact - s1) + 10 ** (exact - s2)
    big = peak >= _INT64_LIMIT
    x, y = (_as_big(v) if big else v for v in (x, y))
    if op != "*":
        y = np.where(valid, y, 1)  # masked rows: no division by zero (ANSI was checked before)
    if op == "/":
        magnitude = (2 * np.abs(x) * 10**k + np.abs(y)) // (2 * np.abs(y))
        result = np.where((x < 0) != (y < 0), -magnitude, magnitude)
    else:
        if op == "*":
            exact_value = x * y
        else:
            x, y = x * 10 ** (exact - s1), y * 10 ** (exact - s2)
            if op == "+":
                exact_value = x + y
            elif op == "-":
                exact_value = x - y
            else:  # Java's remainder: the sign of the dividend
                remainder = np.abs(x) % np.abs(y)
                exact_value = np.where(x < 0, -remainder, remainder)
        result = _round_half_up(exact_value, k) if k > 0 else exact_value
    result = np.where(valid, result, 0)
    limit = 10**precision
    if limit < peak and bool((over := np.abs(result) >= limit).any()):
        row = int(np.argmax(over))
        raise DataError(f"DECIMAL overflow: {_at(a, row)} {op} {_at(b, row)} does not fit "
                        f"DECIMAL({precision}, {scale})")
    array = _decimal_array(result, valid, precision, scale)
    return array[0] if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar) else array


_INT64_LIMIT = 2**63


def _at(value: Value, row: int) -> object:
    return value.as_py() if isinstance(value, pa.Scalar) else value[row].as_py()


def _round_half_up(values: np.ndarray, digits: int) -> np.ndarray:
    """``values / 10^digits`` rounded half away from zero (Java's HALF_UP)."""
    unit = 10**digits
    magnitude = (np.abs(values) + unit // 2) // unit
    return np.where(values < 0, -magnitude, magnitude)


def _as_big(values: np.ndarray) -> np.ndarray:
    return values if values.dtype == object else values.astype(object)


def _unscaled(value: Value) -> tuple[np.ndarray, int, np.ndarray]:
    """The unscaled integers of an integer or DECIMAL array (or scalar, as one element), the
    largest magnitude among them, and the validity; NULL slots hold 0."""
    if isinstance(value, pa.Scalar):
        if not value.is_valid:
            return np.zeros(1, np.int64), 0, np.zeros(1, bool)
        t = value.type
        number = int(value.as_py()) if not pa.types.is_decimal(t) else \
            int(decimal.Decimal(value.as_py()).scaleb(t.scale, _WIDE))
        bound = abs(number)
        return np.array([number], np.int64 if bound < _INT64_LIMIT else object), bound, np.ones(1, bool)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    valid = value.is_valid().to_numpy(zero_copy_only=False)
    t = value.type
    if pa.types.is_integer(t):
        ints = value.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        low, high = pc.min_max(value).values()
        bound = max(abs(low.as_py() or 0), abs(high.as_py() or 0))
        return ints, bound, valid
    if pa.types.is_decimal256(t):
        value = value.cast(pa.decimal128(t.precision, t.scale))  # every Spark DECIMAL fits
    low, high = pc.min_max(value).values()
    bound = max((abs(int(decimal.Decimal(v.as_py()).scaleb(t.scale, _WIDE)))
                 for v in (low, high) if v.is_valid), default=0)
    words = np.frombuffer(value.buffers()[1], np.int64, 2 * (value.offset + len(value)))[2 * value.offset:]
    lo, hi = words[0::2], words[1::2]
    if bound < _INT64_LIMIT:
        return np.where(valid, lo, 0), bound, valid
    big = hi.astype(object) * 2**64 + lo.view(np.uint64).astype(object)
    return np.where(valid, big, 0), bound, valid


def _decimal_array(values: np.ndarray, valid: np.ndarray, precision: int, scale: int) -> pa.Array:
    """A decimal128 array from unscaled integers (int64 or Python ints that fit 128 bits)."""
    if values.dtype == object:
        lo = (values & (2**64 - 1)).astype(np.uint64).view(np.int64)
        hi = (values >> 64).astype(np.int64)
    else:
        lo = values.astype(np.int64)
        hi = lo >> 63
    words = np.empty(2 * len(lo), np.int64)
    words[0::2], words[1::2] = lo, hi
    validity = None if bool(valid.all()) else pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.decimal128(precision, scale), len(lo), [validity, pa.py_buffer(words)])


def _text(value: pa.Array | pa.Scalar) -> pa.Array | pa.Scalar:
    return value if pa.types.is_string(_type(value)) or pa.types.is_large_string(_type(value)) \
        else value.cast(pa.string())


def _concat(left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda rows: pc.binary_join_element_wise(_text(left(rows)), _text(right(rows)), "")


# -- WHERE text: computed comparisons ------------------------------------------------------------

def _literal(value: object) -> pa.Scalar:
    """A WHERE literal typed as Spark types it."""
    if value is None:
        return pa.scalar(None, pa.null())
    if isinstance(value, bool):
        return pa.scalar(value, pa.bool_())
    if isinstance(value, int):
        if -_INT_MAX - 1 <= value <= _INT_MAX:
            return pa.scalar(value, pa.int32())
        if -(2**63) <= value < 2**63:
            return pa.scalar(value, pa.int64())
        # Beyond BIGINT Spark types an integer literal DECIMAL(its digits, 0) (AstBuilder's BigDecimal).
        digits = len(str(abs(value)))
        if digits > _MAX_PRECISION:
            raise InvalidPredicateError(f"the integer literal {value} has {digits} digits: DECIMAL holds "
                                        f"at most {_MAX_PRECISION} (as in Spark)")
        return pa.scalar(Decimal(value), pa.decimal128(digits, 0))
    if isinstance(value, Decimal):
        return _number(format(value, "f"))
    if isinstance(value, float):
        return pa.scalar(value, pa.float64())
    if isinstance(value, str):
        return pa.scalar(value, pa.string())
    if isinstance(value, bytes):
        return pa.scalar(value, pa.binary())
    if isinstance(value, dt.datetime):
        return pa.scalar(value, pa.timestamp("us"))
    if isinstance(value, dt.date):
        return pa.scalar(value, pa.date32())
    if isinstance(value, dt.time):
        return pa.scalar(value, pa.time64("us"))
    raise InvalidPredicateError(f"unsupported literal {value!r}")


def evaluate_term(term: Term, rows: pa.Table) -> Value:
    """One side of a computed comparison over ``rows`` (an array, or a scalar for a constant)."""
    kind = term[0]
    try:
        if kind == "column":
            column = rows.column(str(term[1]))
            return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if kind == "literal":
            return _literal(term[1])
        if kind == "negate":
            value = evaluate_term(term[1], rows)  # type: ignore[arg-type]
            t = _numeric("-", value)
            return value if pa.types.is_null(t) else pc.negate_checked(value)
        op, left, right = term[1], term[2], term[3]
        return arithmetic(str(op), evaluate_term(left, rows), evaluate_term(right, rows))  # type: ignore[arg-type]
    except (pa.ArrowInvalid, ZeroDivisionError, decimal.InvalidOperation) as e:
        raise DataError(f"evaluating {term_text(term)!r}: {e}") from e


def _kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return str(t)


_COMPARE = {Op.EQ: pc.equal, Op.NE: pc.not_equal, Op.LT: pc.less, Op.LE: pc.less_equal,
            Op.GT: pc.greater, Op.GE: pc.greater_equal}


def _float_compare(op: Op, a: Value, b: Value) -> Value:
    """Spark's order on doubles: NaN equals NaN and is above every other value; -0.0 = 0.0."""
    a_nan, b_nan = pc.is_nan(a), pc.is_nan(b)
    either = pc.or_(a_nan, b_nan)
    plain = _COMPARE[op](a, b)
    # With a NaN on a side: compare (a is NaN) with (b is NaN) as 1/0 in the same direction.
    nan_order = _COMPARE[op](a_nan.cast(pa.int8()), b_nan.cast(pa.int8()))
    return pc.if_else(either, nan_order, plain)


def evaluate_comparison(p: Computed, rows: pa.Table) -> pa.Array:
    """The three-valued BOOLEAN of ``p`` for each row of ``rows`` (NULL: unknown)."""
    a, b = evaluate_term(p.left, rows), evaluate_term(p.right, rows)
    ta, tb = _type(a), _type(b)
    if not (pa.types.is_null(ta) or pa.types.is_null(tb)):
        ka, kb = _kind(ta), _kind(tb)
        if ka != kb:
            raise InvalidPredicateError(f"cannot compare {ta} with {tb} in {str(p)!r}")
        if ka == "number" and (pa.types.is_floating(ta) or pa.types.is_floating(tb)):
            a, b = a.cast(pa.float64()), b.cast(pa.float64())
            result = _float_compare(Op.EQ if p.null_safe else p.op, a, b)
        elif ka == "timestamp" and ta != tb:
            a, b = a.cast(pa.timestamp("us")), b.cast(pa.timestamp("us"))
            result = _COMPARE[Op.EQ if p.null_safe else p.op](a, b)
        else:
            result = _COMPARE[Op.EQ if p.null_safe else p.op](a, b)
    else:
        result = pa.scalar(None, pa.bool_())
    if p.null_safe:
        a_null, b_null = pc.is_null(a), pc.is_null(b)
        both, one = pc.and_(a_null, b_null), pc.xor(a_null, b_null)
        equal = pc.if_else(both, True, pc.if_else(one, False, result))
        result = equal if p.op is Op.EQ else pc.invert(equal)
    if isinstance(result, pa.Scalar):
        return pa.repeat(result.cast(pa.bool_()), rows.num_rows)
    return result.combine_chunks() if isinstance(result, pa.ChunkedArray) else result
