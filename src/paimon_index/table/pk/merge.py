"""Merge engines of a deletion-vectors primary-key table: ``partial-update`` and ``aggregation``.

    merge_engine(table) -> MergeEngine | None     the table's engine, its options validated (None:
                                                  deduplicate, whose upsert reads no old values)
    MergeEngine.fold(rows) -> rows                one row per key: the merge of its rows in order
    check_row_level(table, operation)             UPDATE / MERGE refused where Paimon's connector refuses

In deletion-vectors mode every key has at most one live row in levels >= 1. Paimon's writer merges the
rows of one key in its write buffer (one level-0 record), then its lookup compaction merges the old
live row with that record (``LookupMergeFunction``: the high-level record first, then level 0) and
marks the old row deleted. An upsert here does the same in two folds of :meth:`MergeEngine.fold`:
the batch's rows of each key in order, then ``[old live row, batch result]``; a result of kind
``-D`` deletes the key (Paimon drops delete records when it compacts into levels >= 1 with deletion
vectors, so the next merge starts afresh). With ``sequence.field`` the rows of a key (and its old
row) merge in the order of those columns, NULL first, then as written — Java's comparator.

The fold is vectorized (a sort by key, group boundaries, Arrow hash aggregates per column). Groups
whose result depends on a sequential state the aggregates cannot express — a ``-D`` followed by more
rows under ``*.remove-record-on-delete``, a retraction of a ``product`` field, a ``product`` of a
DECIMAL column — are folded by :func:`fold_records`, a transliteration of Java's merge functions.

What is refused (``InvalidOptionError`` for options Paimon refuses too, ``UnsupportedTableError`` for
options Paimon has that this project does not implement): ``fields.*.sequence-group`` and
``partial-update.remove-record-on-sequence-group``; aggregate functions other than those in
:data:`FUNCTIONS` (``collect``, ``merge_map``, sketches, bitmaps, nested updates), ``fields.<f>.distinct``
for ``listagg``; ``merge-engine`` = ``first-row`` with deletion vectors (Paimon refuses it).
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import DataError, InvalidOptionError, UnsupportedTableError
from paimon_index.fileindex.options import parse_bool

__all__ = ["AGGREGATION", "DEDUPLICATE", "FIRST_ROW", "FUNCTIONS", "PARTIAL_UPDATE", "FieldAgg",
           "MergeEngine", "change_kind", "check_row_level", "fold_records", "merge_engine"]

#: Optional column of an upsert batch: Paimon's row kinds as short strings.
ROW_KIND_COLUMN = "_ROW_KIND"
INSERT_KIND = "+I"
UPDATE_AFTER_KIND = "+U"


def change_kind(operation: str | None) -> str:
    """The row kind Java's writers give the rows of ``operation`` that carry none: an UPDATE's rows
    are ``+U`` (its ``UPDATE ... SET``), every other write's ``+I``."""
    return UPDATE_AFTER_KIND if operation == "update" else INSERT_KIND

MERGE_ENGINE = "merge-engine"
DEDUPLICATE = "deduplicate"
PARTIAL_UPDATE = "partial-update"
AGGREGATION = "aggregation"
FIRST_ROW = "first-row"
ENGINES = (DEDUPLICATE, PARTIAL_UPDATE, AGGREGATION, FIRST_ROW)

IGNORE_DELETE = "ignore-delete"
IGNORE_DELETE_FALLBACKS = ("first-row.ignore-delete", "deduplicate.ignore-delete",
                           "partial-update.ignore-delete")
IGNORE_UPDATE_BEFORE = "ignore-update-before"
PARTIAL_UPDATE_REMOVE_ON_DELETE = "partial-update.remove-record-on-delete"
PARTIAL_UPDATE_REMOVE_ON_GROUP = "partial-update.remove-record-on-sequence-group"
AGGREGATION_REMOVE_ON_DELETE = "aggregation.remove-record-on-delete"
SEQUENCE_FIELD = "sequence.field"
SEQUENCE_ORDER = "sequence.field.sort-order"
DEFAULT_FUNCTION = "fields.default-aggregate-function"

SUM, PRODUCT, MIN, MAX = "sum", "product", "min", "max"
LAST_VALUE, LAST_NON_NULL, FIRST_VALUE, FIRST_NON_NULL = (
    "last_value", "last_non_null_value", "first_value", "first_non_null_value")
LISTAGG, BOOL_AND, BOOL_OR = "listagg", "bool_and", "bool_or"
PRIMARY_KEY = "primary-key"  # Java's aggregator of key columns: the input value
#: The aggregate functions implemented (Paimon's names; ``first_not_null_value`` is Java's legacy alias).
FUNCTIONS = (SUM, PRODUCT, MIN, MAX, LAST_VALUE, LAST_NON_NULL, FIRST_VALUE, FIRST_NON_NULL, LISTAGG,
             BOOL_AND, BOOL_OR)
_LEGACY = {"first_not_null_value": FIRST_NON_NULL}
#: Paimon's other aggregate functions: known, not implemented here.
_NOT_IMPLEMENTED = ("collect", "merge_map", "merge_map_with_keytime", "nested_update",
                    "nested_partial_update", "hll_sketch", "theta_sketch", "rbm32", "rbm64")
#: Functions whose Java aggregator defines ``retract`` (the others throw without ``ignore-retract``).
_RETRACTABLE = (SUM, PRODUCT, LAST_VALUE, LAST_NON_NULL, PRIMARY_KEY)
_RETRACT_KINDS = ("-U", "-D")
_ORDER = "__paimon_index_merge_order__"
_GROUP = "__paimon_index_merge_group__"
#: Java's ``Character.isWhitespace`` (StringUtils.isBlank): listagg skips blank strings.
_BLANK = (r"^[\t\n\x0b\x0c\r\x1c-\x1f \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200a}\x{2028}\x{2029}"
          r"\x{205f}\x{3000}]*$")
_BLANK_PY = re.compile("^[\t\n\x0b\x0c\r\x1c-\x1f \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f"
                       "\u3000]*$")
_INT_RANGE = {pa.int8(): 7, pa.int16(): 15, pa.int32(): 31, pa.int64(): 63}


@dataclass(frozen=True)
class FieldAgg:
    """One column's aggregator (aggregation engine)."""

    function: str
    ignore_retract: bool = False
    delimiter: str = ","


@dataclass(frozen=True)
class MergeEngine:
    """A table's validated merge engine (``partial-update`` or ``aggregation``)."""

    name: str
    keys: tuple[str, ...]
    columns: tuple[str, ...]
    aggs: Mapping[str, FieldAgg] = field(default_factory=dict)
    ignore_delete: bool = False
    ignore_update_before: bool = False
    remove_record_on_delete: bool = False
    #: ``sequence.field``: rows of a key merge in the order of these columns (NULL first, as Java's
    #: comparator puts it), then in write order; ``sequence.field.sort-order`` = descending reverses
    #: the values' order.
    sequence_fields: tuple[str, ...] = ()
    sequence_ascending: bool = True

    # --------------------------------------------------------------------------------------------
    def fold(self, rows: pa.Table, *, single_as_is: bool = False) -> pa.Table:
        """One row per key of ``rows`` (the table's columns and ``_ROW_KIND``, in sequence order):
        the merge of the key's rows in that order, with ``_ROW_KIND`` '+I' (a row to write) or '-D'
        (the key is deleted).

        ``single_as_is``: a key with one row keeps that row and its kind, unmerged — Paimon's write
        buffer and merge-on-read reader (``ReducerMergeFunctionWrapper``) do so; its lookup
        compaction merges even a single record (``LookupMergeFunction``), e.g. a lone ``-U`` of an
        aggregation table retracts from nothing there.

        Raises:
            DataError: a retraction the engine cannot take (partial-update without
                ``ignore-delete`` / ``partial-update.remove-record-on-delete``; an aggregate function
                without retraction and without ``fields.<f>.ignore-retract``), or a sum / product
                that overflows its column's type.
        """
        rows = self._filtered(rows)
        columns = list(self.columns)
        if rows.num_rows == 0:
            return rows.select([*columns, ROW_KIND_COLUMN])
        numbered = rows.append_column(_ORDER, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        direction = "ascending" if self.sequence_ascending else "descending"
        order = pc.sort_indices(numbered, [(k, "ascending") for k in self.keys]
                                + [(f, direction) for f in self.sequence_fields] + [(_ORDER, "ascending")],
                                null_placement="at_start")
        rows = numbered.take(order).drop_columns([_ORDER])
        n = rows.num_rows
        boundary = np.zeros(n, dtype=bool)
        boundary[0] = True
        for key in self.keys:
            column = rows[key].combine_chunks()
            if n > 1:
                boundary[1:] |= pc.not_equal(column.slice(1), column.slice(0, n - 1)).to_numpy(
                    zero_copy_only=False)
        group = np.cumsum(boundary) - 1
        first = np.flatnonzero(boundary)
        groups = len(first)
        last = np.append(first[1:] - 1, n - 1)
        kind_column = rows[ROW_KIND_COLUMN]
        retract = pc.is_in(kind_column, pa.array(_RETRACT_KINDS)).to_numpy(zero_copy_only=False)
        if groups == n and (single_as_is or not retract.any()):
            return self._singles(rows.select([*columns, ROW_KIND_COLUMN]), single_as_is)
        delete = pc.equal(kind_column, "-D").to_numpy(zero_copy_only=False)
        special = self._special_groups(group, groups, last, retract, delete)
        deleted_last = np.zeros(groups, dtype=bool)
        if self.remove_record_on_delete:
            deleted_last = delete[last]
        single = (last == first) if single_as_is else np.zeros(groups, dtype=bool)
        special &= ~single
        deleted_last &= ~single
        vectorized = ~special & ~deleted_last & ~single
        results: dict[str, pa.Array] = {}
        for name in columns:
            results[name] = self._column(name, rows[name].combine_chunks(), group, groups, first, retract)
        plus = pa.array(np.full(groups, "+I", dtype=object), pa.string())
        folded = pa.table({**results, ROW_KIND_COLUMN: plus},
                          schema=pa.schema([*(rows.schema.field(c) for c in columns),
                                            pa.field(ROW_KIND_COLUMN, pa.string())]))
        parts = [folded.filter(pa.array(vectorized))]
        gone = deleted_last & ~special
        if gone.any():  # the last row is a -D: the key is deleted (that row is the result)
            minus = pa.array(["-D"] * int(gone.sum()), pa.string())
            deleted = rows.take(pa.array(last[gone])).select(columns)
            parts.append(deleted.append_column(ROW_KIND_COLUMN, minus))
        if special.any():
            parts.append(self._fold_sequential(rows, first, last, np.flatnonzero(special)))
        if single.any():  # the keys with one row: that row, as it came
            parts.append(rows.take(pa.array(first[single])).select([*columns, ROW_KIND_COLUMN]))
        return pa.concat_tables([p.cast(folded.schema) for p in parts])

    # --------------------------------------------------------------------------------------------
    def _filtered(self, rows: pa.Table) -> pa.Table:
        """Paimon's writer drops retractions under ``ignore-delete`` and -U under ``ignore-update-before``
        (``RowKindFilter``) before any merge."""
        dropped = (("-U", "-D") if self.ignore_delete else ("-U",) if self.ignore_update_before else ())
        if not dropped or rows.num_rows == 0:
            return rows
        return rows.filter(pc.invert(pc.is_in(rows[ROW_KIND_COLUMN], pa.array(dropped, pa.string()))))

    def _singles(self, rows: pa.Table, as_is: bool) -> pa.Table:
        """Every key has one row: as it is, or merged alone (adds only: each aggregator takes the
        value, except ``listagg``, for which a blank string is no value)."""
        if as_is:
            return rows
        for name, agg in self.aggs.items():
            if agg.function == LISTAGG:
                values = rows[name]
                blank = pc.fill_null(pc.match_substring_regex(values, _BLANK), False)
                index = rows.schema.get_field_index(name)
                rows = rows.set_column(index, rows.schema.field(index),
                                       pc.if_else(blank, pa.scalar(None, values.type), values))
        plus = pa.array(np.full(rows.num_rows, "+I", dtype=object), pa.string())
        return rows.set_column(rows.num_columns - 1, rows.schema.field(ROW_KIND_COLUMN), plus)

    def _special_groups(self, group: np.ndarray, groups: int, last: np.ndarray, retract: np.ndarray,
                        delete: np.ndarray) -> np.ndarray:
        """Groups folded row by row: their result needs a state the aggregates do not keep."""
        special = np.zeros(groups, dtype=bool)
        if not retract.any():
            return special
        not_last = np.ones(len(retract), dtype=bool)
        not_last[last] = False
        if self.name == PARTIAL_UPDATE:
            if not self.remove_record_on_delete:
                raise DataError(
                    "By default, partial-update cannot accept delete records (_ROW_KIND '-U'/'-D'); set "
                    f"one of: '{IGNORE_DELETE}' = 'true' (ignore them), "
                    f"'{PARTIAL_UPDATE_REMOVE_ON_DELETE}' = 'true' (a -D removes the whole row)")
            # A retraction anywhere but as the last (-D) row of its key: the exact sequential fold.
            special[group[retract & (not_last | ~delete)]] = True
            return special
        if self.remove_record_on_delete:
            special[group[delete & not_last]] = True
        retracting = retract & ~delete if self.remove_record_on_delete else retract
        if retracting.any():
            for name, agg in self.aggs.items():
                if agg.ignore_retract or name in self.keys:
                    continue
                if agg.function not in _RETRACTABLE:
                    raise DataError(
                        f"aggregate function '{agg.function}' of column {name!r} does not support retraction "
                        f"(_ROW_KIND '-U'/'-D'); to ignore retractions set 'fields.{name}.ignore-retract' = "
                        f"'true'" + (f", or '{AGGREGATION_REMOVE_ON_DELETE}' = 'true' to remove the row on -D"
                                     if not self.remove_record_on_delete else ""))
                if agg.function == PRODUCT:
                    special[group[retracting]] = True
        return special

    def _column(self, name: str, values: pa.Array, group: np.ndarray, groups: int, first: np.ndarray,
                retract: np.ndarray) -> pa.Array:
        """One column's fold over every group (special groups are recomputed separately)."""
        if name in self.keys:
            return values.take(pa.array(first))
        if self.name == PARTIAL_UPDATE:  # non-null values overwrite (retractions: special groups)
            return _last(values, group, groups, ~retract, skip_nulls=True)
        agg = self.aggs[name]
        adds = ~retract
        function = agg.function
        if function == SUM:
            # Integers summed as DECIMAL(38, 0): an overflow of the column's type is an error (Java's
            # exact arithmetic), never a wrapped value.
            wide = values.cast(pa.decimal128(38, 0)) if pa.types.is_integer(values.type) else values
            signed = wide
            if retract.any():
                signed = pc.if_else(pa.array(retract), pc.negate_checked(wide), wide)
            every = adds if agg.ignore_retract else np.ones(len(group), dtype=bool)
            return _checked(_aggregate(signed, group, groups, every, SUM), values.type, name)
        if function == PRODUCT:
            if pa.types.is_decimal(values.type):
                return self._fold_column_sequential(name, values, group, groups, retract)
            product = _aggregate(values, group, groups, adds, PRODUCT)
            if pa.types.is_integer(values.type):  # a wrapped 64-bit product shows in floating point
                approximate = _aggregate(values.cast(pa.float64(), safe=False), group, groups, adds, PRODUCT)
                bits = _INT_RANGE.get(values.type, 63)
                if (pc.max(pc.abs(approximate)).as_py() or 0) >= float(1 << bits):
                    raise DataError(f"aggregation of column {name!r} overflows its type {values.type}")
            return _checked(product, values.type, name)
        if function in (MIN, MAX):
            return _aggregate(values, group, groups, adds, function)
        if function in (BOOL_AND, BOOL_OR):
            return _aggregate(values, group, groups, adds, "all" if function == BOOL_AND else "any")
        # A retraction sets last_value to NULL, and last_non_null_value too when its value is not NULL.
        masked = values if not retract.any() else \
            pc.if_else(pa.array(retract), pa.nulls(len(values), values.type), values)
        if function == LAST_VALUE:
            rows = adds if agg.ignore_retract else np.ones(len(group), dtype=bool)
            return _last(masked, group, groups, rows, skip_nulls=False)
        if function == LAST_NON_NULL:
            present = pc.is_valid(values).to_numpy(zero_copy_only=False)
            rows = present & (adds if agg.ignore_retract else True)
            return _last(masked, group, groups, rows, skip_nulls=False)
        if function == FIRST_VALUE:
            return _first(values, group, groups, adds, skip_nulls=False)
        if function == FIRST_NON_NULL:
            return _first(values, group, groups, adds, skip_nulls=True)
        if function == LISTAGG:
            blank = pc.fill_null(pc.match_substring_regex(values, _BLANK), True)
            blank = blank.to_numpy(zero_copy_only=False)
            picked = adds & ~blank
            lists = _aggregate(values, group, groups, picked, "list")
            return pc.binary_join(lists, agg.delimiter)
        raise AssertionError(function)

    def _fold_column_sequential(self, name: str, values: pa.Array, group: np.ndarray, groups: int,
                                retract: np.ndarray) -> pa.Array:
        agg = self.aggs[name]
        out: list[Any] = [None] * groups
        python = values.to_pylist()
        for g, value, is_retract in zip(group.tolist(), python, retract.tolist(), strict=True):
            state = _State(out[g])
            _agg_step(agg, state, value, is_retract, name, values.type)
            out[g] = state.value
        return pa.array(out, values.type)

    def _fold_sequential(self, rows: pa.Table, first: np.ndarray, last: np.ndarray,
                         special: np.ndarray) -> pa.Table:
        columns = list(self.columns)
        out: list[dict[str, Any]] = []
        types = {c: rows.schema.field(c).type for c in columns}
        for g in special.tolist():
            part = rows.slice(int(first[g]), int(last[g] - first[g] + 1))
            records = [(r[ROW_KIND_COLUMN], r) for r in part.select([*columns, ROW_KIND_COLUMN]).to_pylist()]
            kind, values = fold_records(self, records, types)
            out.append({**values, ROW_KIND_COLUMN: kind})
        schema = pa.schema([*(rows.schema.field(c) for c in columns), pa.field(ROW_KIND_COLUMN, pa.string())])
        return pa.Table.from_pylist(out, schema=schema)


# ------------------------------------------------------------------------------------------------
# vectorized group aggregates (groups are 0..groups-1, rows sorted by group)
# ------------------------------------------------------------------------------------------------
def _scatter(group_ids: pa.Array, values: pa.Array, groups: int) -> pa.Array:
    """``values`` of the groups ``group_ids`` placed at their group; NULL for groups absent."""
    index = np.full(groups, -1, dtype=np.int64)
    index[group_ids.to_numpy(zero_copy_only=False)] = np.arange(len(group_ids), dtype=np.int64)
    return values.take(pa.array(index, mask=index < 0))


def _aggregate(values: pa.Array, group: np.ndarray, groups: int, rows: np.ndarray | bool, function: str,
               options: pc.FunctionOptions | None = None) -> pa.Array:
    mask = np.broadcast_to(np.asarray(rows, dtype=bool), group.shape)
    table = pa.table({_GROUP: pa.array(group[mask]), "v": values.filter(pa.array(mask))})
    if options is None and function != "list":
        options = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
    spec = ("v", function) if options is None else ("v", function, options)
    result = table.group_by(_GROUP, use_threads=False).aggregate([spec])
    return _scatter(result[_GROUP].combine_chunks(), result[f"v_{function}"].combine_chunks(), groups)


def _last(values: pa.Array, group: np.ndarray, groups: int, rows: np.ndarray | bool, *,
          skip_nulls: bool) -> pa.Array:
    return _pick(values, group, groups, rows, skip_nulls=skip_nulls, last=True)


def _first(values: pa.Array, group: np.ndarray, groups: int, rows: np.ndarray | bool, *,
           skip_nulls: bool) -> pa.Array:
    return _pick(values, group, groups, rows, skip_nulls=skip_nulls, last=False)


def _pick(values: pa.Array, group: np.ndarray, groups: int, rows: np.ndarray | bool, *, skip_nulls: bool,
          last: bool) -> pa.Array:
    """Each group's last (or first) value among ``rows`` (skipping NULLs if asked); NULL for a group
    with none. By position and ``take``, so every type works (Arrow's ``hash_first``/``hash_last``
    have no DECIMAL kernel)."""
    eligible = np.array(np.broadcast_to(np.asarray(rows, dtype=bool), group.shape))
    if skip_nulls and values.null_count:
        eligible &= values.is_valid().to_numpy(zero_copy_only=False)
    positions = np.flatnonzero(eligible)
    chosen = np.full(groups, -1 if last else len(group), dtype=np.int64)
    (np.maximum if last else np.minimum).at(chosen, group[positions], positions)
    absent = (chosen < 0) | (chosen >= len(group))
    return values.take(pa.array(np.where(absent, 0, chosen), mask=absent))


def _checked(values: pa.Array, target: pa.DataType, name: str) -> pa.Array:
    """A sum / product back in its column's type; Java's exact arithmetic fails on overflow."""
    if values.type == target:
        return values
    try:
        return values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise DataError(f"aggregation of column {name!r} overflows its type {target}: {e}") from e


# ------------------------------------------------------------------------------------------------
# the sequential reference: Java's merge functions, record by record
# ------------------------------------------------------------------------------------------------
@dataclass
class _State:
    value: Any
    initialized: bool = False


def _agg_step(agg: FieldAgg, state: _State, value: Any, is_retract: bool, name: str,
              type_: pa.DataType) -> None:
    """``FieldAggregator.agg`` / ``retract`` of one value into ``state`` (Java's semantics)."""
    acc = state.value
    function = agg.function
    if is_retract:
        if agg.ignore_retract:
            return
        if function == SUM:
            state.value = _int_checked(-value, type_, name) if acc is None and value is not None else \
                acc if value is None else _int_checked(acc - value, type_, name)
        elif function == PRODUCT:
            state.value = acc if acc is None or value is None else _divide(acc, value, type_, name)
        elif function == LAST_VALUE:
            state.value = None
        elif function == LAST_NON_NULL:
            state.value = None if value is not None else acc
        elif function == PRIMARY_KEY:
            state.value = value
        else:
            raise DataError(f"aggregate function '{function}' of column {name!r} does not support "
                            f"retraction; set 'fields.{name}.ignore-retract' = 'true'")
        return
    if function in (LAST_VALUE, PRIMARY_KEY):
        state.value = value
    elif function == LAST_NON_NULL:
        state.value = acc if value is None else value
    elif function == FIRST_VALUE:
        if not state.initialized:
            state.initialized, state.value = True, value
    elif function == FIRST_NON_NULL:
        if not state.initialized and value is not None:
            state.initialized, state.value = True, value
    elif function == LISTAGG:
        if value is None or _BLANK_PY.match(value):
            return
        state.value = value if acc is None or _BLANK_PY.match(acc) else f"{acc}{agg.delimiter}{value}"
    elif acc is None or value is None:
        state.value = value if acc is None else acc
    elif function == SUM:
        state.value = _int_checked(acc + value, type_, name)
    elif function == PRODUCT:
        state.value = _multiply(acc, value, type_, name)
    elif function == MIN:
        state.value = acc if acc < value else value
    elif function == MAX:
        state.value = value if acc < value else acc
    elif function == BOOL_AND:
        state.value = acc and value
    elif function == BOOL_OR:
        state.value = acc or value
    else:
        raise AssertionError(function)


def _int_checked(value: Any, type_: pa.DataType, name: str) -> Any:
    bits = _INT_RANGE.get(type_)
    if bits is not None and not -(1 << bits) <= value < (1 << bits):
        raise DataError(f"aggregation of column {name!r} overflows its type {type_}")
    if isinstance(value, decimal.Decimal) and pa.types.is_decimal(type_):
        return _decimal(value, type_, name)
    return value


def _decimal(value: decimal.Decimal, type_: Any, name: str) -> decimal.Decimal | None:
    """``Decimal.fromBigDecimal(value, precision, scale)``: HALF_UP to the scale, NULL past the precision."""
    quantized = value.quantize(decimal.Decimal(1).scaleb(-type_.scale), rounding=decimal.ROUND_HALF_UP,
                               context=decimal.Context(prec=80))
    if len(quantized.as_tuple().digits) > type_.precision and quantized != 0:
        return None
    return quantized


def _multiply(acc: Any, value: Any, type_: pa.DataType, name: str) -> Any:
    if isinstance(acc, decimal.Decimal):
        return _decimal(acc * value, type_, name)
    return _int_checked(acc * value, type_, name)


def _divide(acc: Any, value: Any, type_: pa.DataType, name: str) -> Any:
    if isinstance(acc, decimal.Decimal):
        return _decimal(decimal.Context(prec=80).divide(acc, value), type_, name)
    if isinstance(acc, float):
        return acc / value if value else (float("nan") if acc == 0 else float("inf") * (1 if acc > 0 else -1))
    if value == 0:
        raise DataError(f"product of column {name!r}: a retraction divides by zero")
    quotient = abs(acc) // abs(value)  # Java's integer division truncates toward zero
    return _int_checked(quotient if (acc >= 0) == (value >= 0) else -quotient, type_, name)


def fold_records(engine: MergeEngine, records: Sequence[tuple[str, Mapping[str, Any]]],
                 types: Mapping[str, pa.DataType]) -> tuple[str, dict[str, Any]]:
    """The merge of one key's ``(row kind, values)`` records in order, as Java's
    ``PartialUpdateMergeFunction`` / ``AggregateMergeFunction`` compute it: ('+I' | '-D', values).
    Row-kind filtering (``ignore-delete``) is the caller's."""
    columns = engine.columns
    row: dict[str, Any] = dict.fromkeys(columns)
    if engine.name == PARTIAL_UPDATE:
        meet_insert = filled = delete_row = False
        for kind, values in records:
            delete_row = False
            if kind in _RETRACT_KINDS:
                if not filled:
                    row, filled = {c: values[c] for c in columns}, True
                if not engine.remove_record_on_delete:
                    raise DataError("By default, partial-update cannot accept delete records")
                if kind == "-D":
                    delete_row, row = True, {c: values[c] for c in columns}
                continue
            for c in columns:
                if values[c] is not None:
                    row[c] = values[c]
            meet_insert = filled = True
        return ("-D" if delete_row or not meet_insert else "+I"), row
    states = {c: _State(None) for c in columns}
    delete_row = False
    for kind, values in records:
        delete_row = engine.remove_record_on_delete and kind == "-D"
        if delete_row:
            for c in columns:
                states[c].value = values[c]  # initRow: the accumulators restart from the -D row
            continue
        for c in columns:
            agg = engine.aggs.get(c, FieldAgg(PRIMARY_KEY))
            _agg_step(agg, states[c], values[c], kind in _RETRACT_KINDS, c, types[c])
    return ("-D" if delete_row else "+I"), {c: states[c].value for c in columns}


# ------------------------------------------------------------------------------------------------
# options
# ------------------------------------------------------------------------------------------------
def engine_name(options: Mapping[str, str]) -> str:
    name = options.get(MERGE_ENGINE, DEDUPLICATE).strip().lower()
    if name not in ENGINES:
        raise InvalidOptionError(f"'{MERGE_ENGINE}' = {options[MERGE_ENGINE]!r} is not a merge engine; "
                                 f"Paimon's are {', '.join(ENGINES)}")
    return name


def _bool(options: Mapping[str, str], key: str, *fallbacks: str) -> bool:
    for candidate in (key, *fallbacks):
        if candidate in options:
            return parse_bool(options[candidate], candidate)
    return False


def merge_engine(table: Any, options: Mapping[str, str] | None = None) -> MergeEngine | None:
    """The table's merge engine, options validated; None for ``deduplicate``.

    Raises:
        UnsupportedTableError: ``first-row`` with deletion vectors (Paimon refuses it), or an option
            of Paimon's this project does not implement (named, with the fix).
        InvalidOptionError: an option Paimon would refuse (unknown aggregate function, a type the
            function cannot take, conflicting options).
    """
    from paimon_index.table.paimon import table_options

    options = table_options(table) if options is None else options
    name = engine_name(options)
    if name == DEDUPLICATE:
        return None
    if name == FIRST_ROW:
        from paimon_index.table.catalog import FIRST_ROW_WITH_VECTORS

        raise UnsupportedTableError(FIRST_ROW_WITH_VECTORS)
    sequence_fields = tuple(f.strip() for f in options.get(SEQUENCE_FIELD, "").split(",") if f.strip())
    order = options.get(SEQUENCE_ORDER, "ascending").strip().lower()
    if order not in ("ascending", "descending"):
        raise InvalidOptionError(f"'{SEQUENCE_ORDER}' = {order!r}: 'ascending' or 'descending'")
    groups = sorted(k for k in options if k.startswith("fields.") and k.endswith(".sequence-group"))
    if groups or options.get(PARTIAL_UPDATE_REMOVE_ON_GROUP):
        option = groups[0] if groups else PARTIAL_UPDATE_REMOVE_ON_GROUP
        raise UnsupportedTableError(f"{option!r}: sequence groups of partial-update are not supported yet; "
                                    "remove the option")
    types = {f.name: str(f.type).removesuffix(" NOT NULL").strip().upper() for f in table.fields}
    columns = tuple(types)
    for sequence in sequence_fields:
        if sequence not in types:
            raise InvalidOptionError(f"'{SEQUENCE_FIELD}': sequence field {sequence!r} can not be found in "
                                     "the table schema")
        if options.get(f"fields.{sequence}.aggregate-function"):
            raise InvalidOptionError(f"'fields.{sequence}.aggregate-function': should not define "
                                     f"aggregation on sequence field {sequence!r}")
    ascending = order == "ascending"
    keys = tuple(table.primary_keys)
    ignore_delete = _bool(options, IGNORE_DELETE, *IGNORE_DELETE_FALLBACKS)
    ignore_update_before = _bool(options, IGNORE_UPDATE_BEFORE)
    if name == PARTIAL_UPDATE:
        remove = _bool(options, PARTIAL_UPDATE_REMOVE_ON_DELETE)
        if remove and ignore_delete:
            raise InvalidOptionError(f"'{IGNORE_DELETE}' and '{PARTIAL_UPDATE_REMOVE_ON_DELETE}' have "
                                     "conflicting behavior so should not be enabled at the same time: "
                                     "drop one")
        for column in columns:
            if column in keys:
                continue
            function = _function_of(options, column)
            if function is not None and function != LAST_NON_NULL:
                raise InvalidOptionError(
                    f"partial-update column {column!r} has aggregate function {function!r}: Paimon needs a "
                    f"sequence group for aggregation functions (only '{LAST_NON_NULL}' works without one); "
                    f"remove 'fields.{column}.aggregate-function' / '{DEFAULT_FUNCTION}'")
        return MergeEngine(name, keys, columns, {}, ignore_delete, ignore_update_before, remove,
                           sequence_fields, ascending)
    remove = _bool(options, AGGREGATION_REMOVE_ON_DELETE)
    aggs: dict[str, FieldAgg] = {}
    for column in columns:
        if column in keys:
            continue
        if column in sequence_fields:  # Java: "no agg for sequence fields, use last_value to do cover"
            aggs[column] = FieldAgg(LAST_VALUE)
            continue
        function = _function_of(options, column) or LAST_NON_NULL
        function = _LEGACY.get(function, function)
        if function in _NOT_IMPLEMENTED:
            raise UnsupportedTableError(
                f"aggregate function {function!r} of column {column!r} is not supported yet (supported: "
                f"{', '.join(FUNCTIONS)}); change 'fields.{column}.aggregate-function'")
        if function not in FUNCTIONS:
            raise InvalidOptionError(
                f"'fields.{column}.aggregate-function' (or '{DEFAULT_FUNCTION}') = {function!r}: unsupported "
                "aggregation or a misspelled function; Paimon's are "
                f"{', '.join(FUNCTIONS + _NOT_IMPLEMENTED)}")
        _check_type(function, column, types[column], options)
        ignore_retract = _bool(options, f"fields.{column}.ignore-retract")
        if ignore_retract and remove:
            raise InvalidOptionError(f"'{AGGREGATION_REMOVE_ON_DELETE}' and 'fields.{column}.ignore-retract' "
                                     "have conflicting behavior so should not be enabled at the same time: "
                                     "drop one")
        delimiter = options.get(f"fields.{column}.list-agg-delimiter", ",")
        aggs[column] = FieldAgg(function, ignore_retract, delimiter)
    return MergeEngine(name, keys, columns, aggs, ignore_delete, ignore_update_before, remove,
                       sequence_fields, ascending)


def _function_of(options: Mapping[str, str], column: str) -> str | None:
    value = options.get(f"fields.{column}.aggregate-function") or options.get(DEFAULT_FUNCTION)
    return value.strip() if value else None


_NUMERIC = ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "NUMERIC", "DEC")
_COMPARABLE = (*_NUMERIC, "CHAR", "VARCHAR", "STRING", "BOOLEAN", "DATE", "TIME", "TIMESTAMP",
               "TIMESTAMP_LTZ", "BINARY", "VARBINARY", "BYTES")


def _check_type(function: str, column: str, type_: str, options: Mapping[str, str]) -> None:
    """The type checks of Java's aggregator factories (``type_``: the Paimon type, ``DECIMAL(10, 2)``)."""
    root = re.split(r"[\s(]", type_, maxsplit=1)[0]
    bad = None
    if function in (SUM, PRODUCT) and root not in _NUMERIC:
        bad = "a numeric type"
    elif function in (MIN, MAX) and root not in _COMPARABLE:
        bad = "a comparable type"
    elif function in (BOOL_AND, BOOL_OR) and root != "BOOLEAN":
        bad = "BOOLEAN"
    elif function == LISTAGG:
        if type_ not in ("STRING", "VARCHAR(2147483647)"):
            bad = "STRING (unbounded VARCHAR)"
        elif _bool(options, f"fields.{column}.distinct"):
            raise UnsupportedTableError(f"'fields.{column}.distinct' (listagg without duplicates) is not "
                                        "supported yet; remove the option")
    if bad is not None:
        raise InvalidOptionError(f"aggregate function {function!r} of column {column!r} needs {bad}, "
                                 f"not {type_}")


def check_row_level(table: Any, operation: str) -> None:
    """UPDATE and MERGE INTO of an ``aggregation`` table are refused, as Paimon's Spark connector
    refuses them (``RowLevelOp``: only deduplicate and partial-update support them); DELETE works
    on every engine (it removes the keys)."""
    from paimon_index.table.paimon import table_options

    name = engine_name(table_options(table))
    if operation in ("update", "merge") and name not in (DEDUPLICATE, PARTIAL_UPDATE):
        what = "UPDATE" if operation == "update" else "MERGE INTO"
        raise UnsupportedTableError(f"merge engine {name} can not support {what}, currently only "
                                    f"deduplicate, partial-update can support {what}")
