"""Predicate -> Arrow compute expression, with SQL semantics (a NULL comparison keeps no row).

Used to apply a predicate exactly to rows an index selected (index answers are supersets: the
bitmap index's ``<>`` keeps NULL rows, a Bloom filter keeps whole files). Literals may be natural
Python values (an unbound predicate) or canonical keys of ``schema``'s types (a bound one: bytes
for strings, days for DATE, epoch units for TIMESTAMP).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import InvalidPredicateError
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, And, Leaf, Op, Or, Predicate
from paimon_index.types import DataType, KeyKind, TypeRoot

__all__ = ["to_arrow_expression"]

_EPOCH = dt.datetime(1970, 1, 1)


def _literal(value: object, dtype: DataType) -> object:
    """A canonical key back to a value Arrow compares with the column."""
    if value is None:
        return None
    kind = dtype.key_kind
    if kind is KeyKind.BYTES and isinstance(value, bytes) and dtype.is_string:
        return value.decode("utf-8", errors="surrogatepass")
    if dtype.root is TypeRoot.DATE and isinstance(value, int):
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if dtype.is_timestamp and isinstance(value, int):
        unit = "ms" if (dtype.precision or 0) <= 3 else "us"
        return pa.scalar(value, pa.timestamp(unit, tz="UTC" if dtype.root is TypeRoot.TIMESTAMP_LTZ
                                              else None))
    if dtype.root is TypeRoot.TIME and isinstance(value, int):
        return pa.scalar(value, pa.time32("ms"))
    if kind is KeyKind.DECIMAL and isinstance(value, int):
        return decimal.Decimal(value).scaleb(-(dtype.scale or 0))
    return value


def _leaf(leaf: Leaf, schema: Mapping[str, DataType]) -> pc.Expression:
    field = pc.field(leaf.column)
    dtype = schema.get(leaf.column)
    if dtype is None:
        raise InvalidPredicateError(f"unknown column {leaf.column!r}")
    lits = [_literal(v, dtype) for v in leaf.literals]
    non_null = [v for v in lits if v is not None]
    match leaf.op:
        case Op.IS_NULL:
            return field.is_null()
        case Op.IS_NOT_NULL:
            return field.is_valid()
        case Op.IN:
            return field.isin(non_null) if non_null else pc.scalar(False)
        case Op.NOT_IN:
            if len(non_null) < len(lits):
                return pc.scalar(False)  # x NOT IN (..., NULL) is never TRUE
            return ~field.isin(non_null) & field.is_valid()
        case Op.BETWEEN:
            lo, hi = lits
            return (field >= lo) & (field <= hi)
        case Op.STARTS_WITH:
            return pc.starts_with(field, lits[0])
        case Op.ENDS_WITH:
            return pc.ends_with(field, lits[0])
        case Op.CONTAINS:
            return pc.match_substring(field, lits[0])
        case Op.LIKE:
            return pc.match_like(field, lits[0])
    v = lits[0]
    if v is None:
        return pc.scalar(False)  # comparison with NULL is UNKNOWN
    return {Op.EQ: field == v, Op.NE: field != v, Op.LT: field < v, Op.LE: field <= v,
            Op.GT: field > v, Op.GE: field >= v}[leaf.op]


def to_arrow_expression(predicate: Predicate, schema: Mapping[str, DataType]) -> pc.Expression:
    """An expression for ``pyarrow.Table.filter`` / ``dataset.to_table(filter=...)``."""
    if isinstance(predicate, Leaf):
        return _leaf(predicate, schema)
    if isinstance(predicate, And | Or):
        parts = [to_arrow_expression(c, schema) for c in predicate.children]
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if isinstance(predicate, And) else (out | p)
        return out
    if predicate == ALWAYS_FALSE:
        return pc.scalar(False)
    assert predicate == ALWAYS_TRUE
    return pc.scalar(True)
