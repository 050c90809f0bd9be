"""A predicate literal against a column's type, compared the way Spark SQL compares them.

:func:`coerce_literal` answers one question: where does the literal fall among the values the column
can hold? Either exactly on one of them (:class:`Exact`, carrying the canonical key of
:mod:`paimon_index.types`) or strictly between two neighbours (:class:`Inexact`, the largest key
below and the smallest key above, each ``None`` when the literal is beyond the type's range).
:func:`paimon_index.predicate.bind` turns an inexact literal into an exact predicate with the same
rows (``i < 2.5`` on INT is ``i <= 2``, ``i = 2.5`` is FALSE), so no index and no Arrow kernel ever
compares a rounded literal.

What a literal means, per column type (Spark's implicit casts for a comparison)::

    column            int literal          decimal literal (1.5)     float literal (1e3, NaN)  string
    ----------------  -------------------  ------------------------  ------------------------  --------------
    TINYINT..BIGINT   its value            its exact value           its shortest decimal      a number
                                                                     form (*); NaN and +Inf
                                                                     above every value
    DECIMAL(p, s)     its value (100 ->    its exact value (99.999   as for integers           a number
                      100.00, never the    lies between 99.99 and
                      unscaled 1.00)       100.00)
    FLOAT             cast to FLOAT        compared as DOUBLE: 0.1   compared as DOUBLE        a number,
                      (rounded)            is between two floats                               NaN, Infinity
    DOUBLE            cast to DOUBLE       cast to DOUBLE            itself                    as FLOAT
    DATE              days (canonical)     -                         -                         'yyyy-mm-dd'
    TIMESTAMP(p)      epoch units          -                         -                         ISO text
                      (canonical)
    DATE vs datetime: the column's midnight is compared, so 10:00 lies between two days.
    TIMESTAMP(p <= 3) vs a literal with microseconds: lies between two milliseconds.

(*) Spark casts the column to DOUBLE for a DOUBLE literal. The shortest decimal that reads back as
the literal (``1e-1`` -> 0.1) gives the same answer for every column value of at most 15 significant
digits (two such decimals never share a double); BIGINT values beyond 10**15 and wide DECIMALs may
compare differently than in Spark, where the cast to DOUBLE rounds them.

Every other pairing is :func:`paimon_index.types.canonical_literal`'s exact conversion (or its error).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass

import numpy as np

from paimon_index.errors import InvalidPredicateError
from paimon_index.types import MILLIS_PRECISION, DataType, KeyKind, TypeRoot, canonical_literal

__all__ = ["Exact", "Inexact", "coerce_literal"]

_INT_BOUNDS = {
    KeyKind.INT8: (-(2**7), 2**7 - 1),
    KeyKind.INT16: (-(2**15), 2**15 - 1),
    KeyKind.INT32: (-(2**31), 2**31 - 1),
    KeyKind.INT64: (-(2**63), 2**63 - 1),
}
#: Enough digits that scaling a DECIMAL(38, s) literal by 10**s never rounds.
_EXACT = decimal.Context(prec=200, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_EPOCH_DATE = dt.date(1970, 1, 1)
MICROS_PER_MILLI = 1000


@dataclass(frozen=True, slots=True)
class Exact:
    """The literal is the column value with this canonical key (``None`` for SQL NULL)."""

    key: object


@dataclass(frozen=True, slots=True)
class Inexact:
    """The literal lies strictly between keys ``below`` and ``above`` (None: beyond the range)."""

    below: object
    above: object


Coerced = Exact | Inexact


def _bad(value: object, dtype: DataType, why: str = "") -> InvalidPredicateError:
    extra = f": {why}" if why else ""
    return InvalidPredicateError(f"literal {value!r} does not fit type {dtype}{extra}")


def _number(value: object, dtype: DataType) -> decimal.Decimal | float:
    """A numeric literal as an exact Decimal, or a float for NaN and the infinities."""
    if isinstance(value, str):
        text = value.strip()
        try:
            return decimal.Decimal(text) if not _is_special(text) else float(text)
        except (decimal.InvalidOperation, ValueError) as e:
            raise _bad(value, dtype, "not a number") from e
    if isinstance(value, float):
        # The shortest decimal that reads back as this double (1e-1 -> 0.1); see the module docstring.
        return value if not math.isfinite(value) else decimal.Decimal(repr(value))
    if isinstance(value, int):
        return decimal.Decimal(value)
    if isinstance(value, decimal.Decimal):
        return float(value) if not value.is_finite() else value
    raise _bad(value, dtype)


def _is_special(text: str) -> bool:
    return text.lower().lstrip("+-") in ("nan", "inf", "infinity")


def _integral(value: decimal.Decimal | float, scale: int, lo: int, hi: int) -> Coerced:
    """Where ``value * 10**scale`` falls among the integers ``lo..hi``."""
    if isinstance(value, float):  # NaN orders above every number in Spark, like +Inf
        return Inexact(None, lo) if value < 0 else Inexact(hi, None)
    scaled = _EXACT.scaleb(value, scale)
    floor = int(scaled.to_integral_value(rounding=decimal.ROUND_FLOOR))
    if floor == scaled and lo <= floor <= hi:
        return Exact(floor)
    if floor >= hi:
        return Inexact(hi, None)
    if floor < lo:
        return Inexact(None, lo)
    return Inexact(floor, floor + 1)


def _float32(value: float) -> Coerced:
    """Where a double falls among the FLOAT values (which all are doubles exactly)."""
    if not math.isfinite(value):
        return Exact(value)
    with np.errstate(over="ignore"):
        near = np.float32(value)
    if float(near) == value:
        return Exact(value)
    if float(near) > value:
        return Inexact(float(np.nextafter(near, np.float32(-np.inf))), float(near))
    return Inexact(float(near), float(np.nextafter(near, np.float32(np.inf))))


def _as_float_column(value: object, dtype: DataType) -> Coerced:
    if isinstance(value, bool):
        raise _bad(value, dtype)
    if dtype.key_kind is KeyKind.FLOAT32 and isinstance(value, int):
        with np.errstate(over="ignore"):
            return Exact(float(np.float32(value)))  # Spark casts the integer to FLOAT
    number = _number(value, dtype)
    as_double = float(number)  # a decimal literal is cast to DOUBLE; it may round, as in Spark
    if dtype.key_kind is KeyKind.FLOAT64:
        return Exact(as_double)
    return _float32(as_double)


def _as_timestamp(value: object, dtype: DataType) -> Coerced:
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip())
        except ValueError as e:
            raise _bad(value, dtype, "not an ISO timestamp") from e
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time())
    if isinstance(value, dt.datetime) and (dtype.precision or 0) <= MILLIS_PRECISION:
        micros = canonical_literal(value, DataType(dtype.root, precision=6))
        assert isinstance(micros, int)
        millis, rest = divmod(micros, MICROS_PER_MILLI)
        return Exact(millis) if rest == 0 else Inexact(millis, millis + 1)
    return Exact(canonical_literal(value, dtype))


def _as_date(value: object, dtype: DataType) -> Coerced:
    if isinstance(value, str):
        try:
            value = dt.date.fromisoformat(value.strip())
        except ValueError as e:
            raise _bad(value, dtype, "not an ISO date") from e
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        days = (value.date() - _EPOCH_DATE).days
        return Exact(days) if value.time() == dt.time() else Inexact(days, days + 1)
    return Exact(canonical_literal(value, dtype))


def coerce_literal(value: object, dtype: DataType) -> Coerced:
    """Where ``value`` falls among the values of ``dtype`` (see the module docstring).

    Raises:
        InvalidPredicateError: the literal cannot be compared with the column's type.
    """
    if value is None:
        return Exact(None)
    kind = dtype.key_kind
    if kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
        return _as_float_column(value, dtype)
    if kind in _INT_BOUNDS and dtype.root in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT,
                                              TypeRoot.BIGINT):
        if isinstance(value, bool):
            raise _bad(value, dtype)
        lo, hi = _INT_BOUNDS[kind]
        return _integral(_number(value, dtype), 0, lo, hi)
    if kind is KeyKind.DECIMAL:
        if isinstance(value, bool):
            raise _bad(value, dtype)
        limit = 10 ** (dtype.precision or 0) - 1
        return _integral(_number(value, dtype), dtype.scale or 0, -limit, limit)
    if dtype.root is TypeRoot.DATE:
        return _as_date(value, dtype)
    if dtype.is_timestamp:
        return _as_timestamp(value, dtype)
    return Exact(canonical_literal(value, dtype))
