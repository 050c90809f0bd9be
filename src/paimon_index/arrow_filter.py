"""Predicate -> Arrow compute expression, with Spark SQL's semantics (a NULL comparison keeps no row).

Used to apply a predicate exactly to rows an index selected (index answers are supersets: the
bitmap index's ``<>`` keeps NULL rows, a Bloom filter keeps whole files). The predicate must be
bound (:func:`paimon_index.predicate.bind`): literals are canonical keys of ``schema``'s types
(bytes for strings, days for DATE, epoch units for TIMESTAMP, unscaled integers for DECIMAL).

Floating point follows Spark, not IEEE (which Arrow's kernels implement): NaN equals NaN and is
greater than every other value, including +Infinity; -0.0 equals 0.0. So ``f > 0`` keeps NaN rows,
``f < NaN`` keeps every non-NaN row, and ``IN`` compares ``f + 0.0`` (IEEE turns -0.0 into 0.0;
Arrow's ``is_in`` hashes -0.0 and 0.0 apart but already matches NaN with NaN).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import InvalidPredicateError
from paimon_index.predicate import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    Computed,
    Leaf,
    Op,
    Or,
    Predicate,
    has_computed,
)
from paimon_index.types import DataType, KeyKind, TypeRoot

__all__ = ["filter_rows", "to_arrow_expression"]

_EPOCH = dt.datetime(1970, 1, 1)
MAX_DECIMAL128_PRECISION = 38
#: Scaling a 38-digit unscaled key back must not round (the default context keeps 28 digits).
_DECIMAL_CONTEXT = decimal.Context(prec=2 * MAX_DECIMAL128_PRECISION)


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
        exact = _DECIMAL_CONTEXT.scaleb(decimal.Decimal(value), -(dtype.scale or 0))
        return pa.scalar(exact, pa.decimal128(dtype.precision or MAX_DECIMAL128_PRECISION, dtype.scale or 0))
    return value


_FALSE = pc.scalar(False)


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _float_compare(op: Op, field: pc.Expression, v: float) -> pc.Expression:
    """One comparison on a FLOAT/DOUBLE column in Spark's total order (NaN largest, -0.0 = 0.0)."""
    nan = pc.is_nan(field)
    if _is_nan(v):
        return {Op.EQ: nan, Op.NE: ~nan, Op.LT: ~nan, Op.LE: field.is_valid(), Op.GT: _FALSE,
                Op.GE: nan}[op]
    # IEEE already answers =, <>, < and <= right for a NaN row (FALSE, TRUE, FALSE, FALSE);
    # > and >= must add NaN rows, which IEEE never orders above anything.
    return {Op.EQ: field == v, Op.NE: field != v, Op.LT: field < v, Op.LE: field <= v,
            Op.GT: (field > v) | nan, Op.GE: (field >= v) | nan}[op]


def _float_in(field: pc.Expression, values: list[object]) -> pc.Expression:
    """``field IN values`` with -0.0 = 0.0 (both sides + 0.0) and NaN = NaN (is_in's own rule)."""
    return (field + pc.scalar(0.0)).isin([float(v) + 0.0 for v in values])  # type: ignore[arg-type]


def _leaf(leaf: Leaf, schema: Mapping[str, DataType]) -> pc.Expression:
    field = pc.field(leaf.column)
    dtype = schema.get(leaf.column)
    if dtype is None:
        raise InvalidPredicateError(f"unknown column {leaf.column!r}")
    if dtype.key_kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
        return _float_leaf(leaf, field)
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
            if None in lits:
                return pc.scalar(False)  # x BETWEEN NULL AND y is never TRUE (and NULL has no Arrow type)
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


def _float_leaf(leaf: Leaf, field: pc.Expression) -> pc.Expression:
    lits = list(leaf.literals)
    non_null = [v for v in lits if v is not None]
    match leaf.op:
        case Op.IS_NULL:
            return field.is_null()
        case Op.IS_NOT_NULL:
            return field.is_valid()
        case Op.IN:
            return _float_in(field, non_null) if non_null else _FALSE
        case Op.NOT_IN:
            if len(non_null) < len(lits):
                return _FALSE  # x NOT IN (..., NULL) is never TRUE
            return ~_float_in(field, non_null) & field.is_valid() if non_null else field.is_valid()
        case Op.BETWEEN:
            if None in lits:
                return _FALSE
            return _float_compare(Op.GE, field, lits[0]) & _float_compare(Op.LE, field, lits[1])  # type: ignore[arg-type]
        case Op.EQ | Op.NE | Op.LT | Op.LE | Op.GT | Op.GE:
            return _FALSE if lits[0] is None else _float_compare(leaf.op, field, lits[0])  # type: ignore[arg-type]
    raise InvalidPredicateError(f"{leaf.op.value} does not apply to a floating-point column")


def to_arrow_expression(predicate: Predicate, schema: Mapping[str, DataType],
                        computed: Mapping[Computed, str] | None = None) -> pc.Expression:
    """An expression for ``pyarrow.Table.filter`` / ``dataset.to_table(filter=...)``.

    A :class:`~paimon_index.predicate.Computed` comparison is evaluated on rows, not by an
    expression: ``computed`` names the BOOLEAN column holding it (:func:`filter_rows` adds them);
    without one it raises :class:`InvalidPredicateError`.
    """
    if isinstance(predicate, Leaf):
        return _leaf(predicate, schema)
    if isinstance(predicate, Computed):
        name = (computed or {}).get(predicate)
        if name is None:
            raise InvalidPredicateError(f"{predicate} is evaluated on the rows (filter_rows), not by an "
                                        "Arrow expression")
        return pc.field(name)
    if isinstance(predicate, And | Or):
        parts = [to_arrow_expression(c, schema, computed) for c in predicate.children]
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if isinstance(predicate, And) else (out | p)
        return out
    if predicate == ALWAYS_FALSE:
        return pc.scalar(False)
    assert predicate == ALWAYS_TRUE
    return pc.scalar(True)


_COMPUTED_PREFIX = "__paimon_index_computed_"


def filter_rows(rows: pa.Table, predicate: Predicate, schema: Mapping[str, DataType]) -> pa.Table:
    """The rows of ``rows`` (the schema's column names) where ``predicate`` (bound) is TRUE.

    Computed comparisons (arithmetic) are evaluated with :func:`paimon_index.expression.evaluate_comparison`;
    a top-level AND first applies its plain conjuncts, so arithmetic sees only the rows they keep
    (as Spark's AND skips its right side where the left is FALSE: ``status = 'C' AND 1 / x > 0``
    raises for no row whose status is not 'C').

    Raises:
        DataError: arithmetic that overflows or divides by zero on a row it is evaluated for.
        InvalidPredicateError: a comparison of values of different kinds (a number with a string).
    """
    if predicate is ALWAYS_TRUE:
        return rows
    if not has_computed(predicate):
        return rows.filter(to_arrow_expression(predicate, schema))
    if isinstance(predicate, And):
        plain = [c for c in predicate.children if not has_computed(c)]
        if plain:
            rows = rows.filter(to_arrow_expression(And(tuple(plain)) if len(plain) > 1 else plain[0], schema))
        for child in (c for c in predicate.children if has_computed(c)):
            rows = _filter_computed(rows, child, schema)
        return rows
    return _filter_computed(rows, predicate, schema)


def _filter_computed(rows: pa.Table, predicate: Predicate, schema: Mapping[str, DataType]) -> pa.Table:
    from paimon_index.expression import evaluate_comparison

    names: dict[Computed, str] = {}
    _collect(predicate, names)
    extended = rows
    for node, name in names.items():
        extended = extended.append_column(name, evaluate_comparison(node, rows))
    return extended.filter(to_arrow_expression(predicate, schema, names)).drop_columns(list(names.values()))


def _collect(p: Predicate, names: dict[Computed, str]) -> None:
    if isinstance(p, Computed):
        names.setdefault(p, f"{_COMPUTED_PREFIX}{len(names)}")
    elif isinstance(p, And | Or):
        for c in p.children:
            _collect(c, names)
