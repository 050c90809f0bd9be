"""Value statistics of data files: written as Java Paimon writes them, used to skip files before any index.

    attach_value_stats(table, messages)          # writer hook: every new file gets its SimpleStats
    file_value_stats(table, meta) -> (SimpleStats, value_stats_cols)
    plan_splits(table, bound, schema, report)    # pypaimon's plan minus the files stats rule out
    stats_may_match(bound, stats) -> bool        # False only if no row of the file can match
    stats_all_match(bound, stats) -> bool        # True only if every row of the file matches
    stats_some_match(bound, stats) -> bool       # True only if some row of the file matches
    stats_fraction(bound, stats) -> float | None # an estimate of the fraction of rows that match

**Writing** (Java: ``ParquetSimpleStatsExtractor`` + ``TruncateSimpleColStatsCollector`` +
``SimpleStatsConverter``). Java reads the min/max/null count of every column from the Parquet
footer it just wrote, merges them over the row groups, then applies the column's stats mode:

- ``metadata.stats-mode`` (Java's default ``truncate(16)``; ``full``, ``counts``, ``none``), per
  column ``fields.<name>.stats-mode``;
- ``truncate(n)``: a string keeps its first ``n`` code points as min; the max keeps its first ``n``
  code points with the last one that can be incremented incremented (and the rest dropped), so it is
  still an upper bound; bytes likewise per byte. If no code point can be incremented, the column
  gets no min/max (Java: ``null, null``);
- dense store (Java's default ``metadata.stats-dense-store = true``): columns with mode ``none``
  are left out and ``value_stats_cols`` lists the others — ``None`` when every column has stats,
  ``[]`` when none has.

pyarrow writes no footer min/max for a string over its statistics size limit (4 KiB); such a column's
min/max are then computed from the file's values (then truncated), as Java's footer has them.

Where we differ from Java, always towards "cannot tell": a FLOAT/DOUBLE column holding NaN gets no
min/max (the footer's min/max ignore NaN, and Paimon and Spark order NaN above every number, so
``x > c`` would drop a NaN row); ``TIMESTAMP`` with precision > 6, ``TIMESTAMP_LTZ``, ``TIME`` and
nested types get null counts only; an increment that would land on a UTF-16 surrogate code point
(Java then writes ``?``, which is not an upper bound) jumps to U+E000.

**Pruning** (:func:`stats_may_match`): a file is skipped when its min/max/null counts prove no row
matches, with SQL semantics (NULL never matches a comparison) and never wrongly:

- FLOAT/DOUBLE: NaN may hide behind any max (pypaimon's footer-based stats skip NaN; Java writes
  ``max = NaN``), so only the min is used (``<``, ``<=``, ``=``, ``IN``, ``BETWEEN``); a NaN min or
  a NaN literal never prunes; ``-0.0`` and ``0.0`` compare equal;
- strings and bytes: min/max may be truncated bounds; ``STARTS_WITH`` uses them as bounds,
  ``ENDS_WITH``/``CONTAINS``/``LIKE`` never prune (but an all-NULL file is skipped for them);
- a literal NULL never prunes;
- schema evolution: a predicate column is found in a file's stats by field id, through the schema
  the file was written with; a column the file does not have, or whose type changed, is not used.
Only append tables are pruned: skipping a file of a primary-key table could bring back an older
version of a row.

**Proofs and estimates for the read plan's cost decisions** (:mod:`paimon_index.table.files`,
``weigh_index``): what the same statistics say before any index body is read --

- :func:`stats_all_match`: every row of the file satisfies the predicate (NULL counts 0 and the
  min/max inside a comparison's range; ``IS NOT NULL`` with no NULL; ``IS NULL`` with only NULLs).
  Min/max are used as *bounds* only, so truncated strings prove too; never FLOAT/DOUBLE (NaN may
  sit behind any max), CHAR (padding), a NULL literal. An index can then add nothing for the leaf.
- :func:`stats_some_match`: some row of the file satisfies it: a min or max is a value some row
  holds (types whose statistics are never truncated: integers, DATE, DECIMAL, BOOLEAN,
  TIMESTAMP(<= 6)), so a leaf that the min or the max satisfies has a matching row (an AND only
  when all its leaves name one column and one of those two values satisfies them all). True of
  the file's written rows: a caller whose file has deleted rows cannot use it. No index can then
  skip the file.
- :func:`stats_fraction`: an *estimate* (not a proof) of the fraction of rows that match, taking
  the values spread evenly between min and max and the columns as independent: comparisons and
  ``BETWEEN`` on numeric keys (the overlap of the literal range with [min, max]), ``IS [NOT]
  NULL`` (the NULL count), AND a product, OR at least its largest known part. ``=``/``IN`` and
  anything else are not estimated (None): a point lookup is what an index answers best.

pypaimon internals used: ``DataFileMeta.value_stats`` (``SimpleStats`` of ``GenericRow``/
``BinaryRow`` with ``fields``), ``value_stats_cols``, ``schema_id``, ``write_cols``;
``table.table_schema``, ``table.schema_manager.get_schema``; ``TableScan.file_scanner.
_filter_manifest_entry`` (wrapped per scan: the entries still carry their stats there).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from paimon_index.errors import InvalidOptionError
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, And, Leaf, Op, Or, Predicate, columns_of
from paimon_index.table.fileio import TableIO
from paimon_index.types import DataType, TypeRoot, canonical_literal, parse_type

__all__ = [
    "DEFAULT_STATS_MODE",
    "ColumnStats",
    "FileStats",
    "attach_value_stats",
    "file_value_stats",
    "plan_splits",
    "row_group_may_match",
    "stats_all_match",
    "stats_fraction",
    "stats_may_match",
    "stats_some_match",
    "truncate_max",
    "truncate_min",
]

STATS_MODE_OPTION = "metadata.stats-mode"
FIELD_STATS_MODE = "fields.{}.stats-mode"
DENSE_STORE_OPTION = "metadata.stats-dense-store"
#: Java Paimon's default ``metadata.stats-mode``.
DEFAULT_STATS_MODE = "truncate(16)"
_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)
_MAX_TIMESTAMP_PRECISION = 6
_FLOATS = (TypeRoot.FLOAT, TypeRoot.DOUBLE)
_STRINGS = (TypeRoot.CHAR, TypeRoot.VARCHAR)
_BINARIES = (TypeRoot.BINARY, TypeRoot.VARBINARY)
_ADD = 0


@dataclass(frozen=True)
class ColumnStats:
    """One column's stats in canonical keys (see :mod:`paimon_index.types`); None = unknown."""

    min: Any
    max: Any
    null_count: int | None
    row_count: int


# ---------------------------------------------------------------------------------------------
# Truncation, as TruncateSimpleColStatsCollector
# ---------------------------------------------------------------------------------------------

def truncate_min(value: Any, length: int) -> Any:
    """A value <= ``value``: its first ``length`` code points (strings) or bytes."""
    if isinstance(value, str | bytes):
        return value[:length]
    return value


def truncate_max(value: Any, length: int) -> Any:
    """A value >= ``value`` of at most ``length`` code points/bytes, or None when there is none."""
    if isinstance(value, str):
        if len(value) <= length:
            return value
        for i in range(length - 1, -1, -1):
            following = ord(value[i]) + 1
            if following <= _MAX_CODE_POINT:
                if following in _SURROGATES:  # Java would write '?' here: not an upper bound
                    following = _SURROGATES.stop
                return value[:i] + chr(following)
        return None
    if isinstance(value, bytes):
        if len(value) <= length:
            return value
        for i in range(length - 1, -1, -1):
            if value[i] != 0xFF:
                return value[:i] + bytes([value[i] + 1])
        return None
    return value


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------

def _mode(options: Mapping[str, str], name: str) -> str:
    mode = options.get(FIELD_STATS_MODE.format(name), options.get(STATS_MODE_OPTION, DEFAULT_STATS_MODE))
    mode = mode.strip().lower()
    if mode not in ("none", "counts", "full") and not _TRUNCATE.match(mode):
        raise InvalidOptionError(f"stats mode {mode!r} (column {name!r}) is not one of none, counts, full, "
                                 "truncate(n)")
    return mode


def _paimon_type(field: Any) -> DataType | None:
    try:
        return parse_type(str(field.type))
    except Exception:
        return None  # nested and other types no stats are kept for (null counts only)


def _footer_stats(parquet: pq.ParquetFile, column: int) -> tuple[Any, Any, int | None]:
    """(min, max, null count) of one column over all row groups; min/max None when unknown."""
    meta = parquet.metadata
    lo = hi = None
    nulls: int | None = 0
    known = True
    for group in range(meta.num_row_groups):
        chunk = meta.row_group(group).column(column)
        stats = chunk.statistics
        rows = meta.row_group(group).num_rows
        if stats is None:
            return None, None, None
        group_nulls = stats.null_count if stats.has_null_count else None
        nulls = None if nulls is None or group_nulls is None else nulls + group_nulls
        if group_nulls is not None and group_nulls == rows:
            continue  # all NULL: no min/max to merge
        if not stats.has_min_max:
            known = False  # values without bounds (e.g. a string over the writer's size limit)
            continue
        lo = stats.min if lo is None or stats.min < lo else lo
        hi = stats.max if hi is None or stats.max > hi else hi
    return (lo, hi, nulls) if known else (None, None, nulls)


def _as_stats_value(value: Any, dtype: DataType) -> Any:
    """A footer value as pypaimon's row serializer takes it for ``dtype`` (None: not kept)."""
    if value is None:
        return None
    root = dtype.root
    if root in _STRINGS:
        return value if isinstance(value, str) else bytes(value).decode("utf-8")
    if root in _BINARIES:
        return bytes(value) if not isinstance(value, str) else value.encode("utf-8")
    if root is TypeRoot.TIMESTAMP:
        if (dtype.precision or 0) > _MAX_TIMESTAMP_PRECISION or not isinstance(value, dt.datetime):
            return None
        return value.replace(tzinfo=None) if value.tzinfo is None else None
    if root is TypeRoot.DATE:
        return value if isinstance(value, dt.date) else None
    if root is TypeRoot.DECIMAL:
        return value if isinstance(value, decimal.Decimal) else None
    if root in _FLOATS:
        return float(value)
    if root is TypeRoot.BOOLEAN:
        return bool(value)
    if root in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT):
        return int(value)
    return None  # TIME, TIMESTAMP_LTZ: null counts only


def file_value_stats(table: Any, meta: Any, options: Mapping[str, str] | None = None
                     ) -> tuple[Any, list[str] | None]:
    """``(SimpleStats, value_stats_cols)`` of a data file, from its Parquet footer, as Java writes them."""
    from paimon_index.table.paimon import table_options  # pypaimon: not at import time

    opts = options if options is not None else table_options(table)
    with TableIO.of(table).parquet(meta.file_path) as parquet:  # the footer, and columns only when needed
        return _parquet_value_stats(table, meta, opts, parquet)


def _parquet_value_stats(table: Any, meta: Any, opts: Mapping[str, str], parquet: pq.ParquetFile
                         ) -> tuple[Any, list[str] | None]:
    from paimon_index.table.paimon import GenericRow, SimpleStats

    columns = {parquet.metadata.schema.column(i).path: i for i in range(parquet.metadata.num_columns)}
    fields: list[Any] = []
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls: list[Any] = []
    modes: list[str] = []
    floats_to_check: list[int] = []
    long_values: list[int] = []
    for field in table.fields:
        mode = _mode(opts, field.name)
        if mode == "none":
            continue
        dtype = _paimon_type(field)
        index = columns.get(field.name)
        lo, hi, count = (None, None, None) if index is None else _footer_stats(parquet, index)
        if dtype is None or mode == "counts":
            lo = hi = None
        elif lo is None and count is not None and count < meta.row_count and dtype.root in (*_STRINGS,
                                                                                           *_BINARIES):
            long_values.append(len(fields))
        else:
            lo, hi = _as_stats_value(lo, dtype), _as_stats_value(hi, dtype)
            if match := _TRUNCATE.match(mode):
                length = int(match.group(1))
                lo, hi = truncate_min(lo, length), truncate_max(hi, length)
            if lo is None or hi is None:
                lo = hi = None
            elif dtype.root in _FLOATS:
                floats_to_check.append(len(fields))
        fields.append(field)
        modes.append(mode)
        mins.append(lo)
        maxs.append(hi)
        nulls.append(count)
    if long_values:
        # pyarrow writes no footer min/max for a value over its size limit; Java truncates it.
        data = parquet.read(columns=[fields[i].name for i in long_values])
        for i in long_values:
            bounds = pc.min_max(data.column(fields[i].name))
            truncate = _TRUNCATE.match(modes[i])
            lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
            if truncate is not None:
                width = int(truncate.group(1))
                lo, hi = truncate_min(lo, width), truncate_max(hi, width)
            mins[i], maxs[i] = (lo, hi) if lo is not None and hi is not None else (None, None)
    if floats_to_check:
        # The footer's float min/max skip NaN: a column holding NaN must not claim a max.
        data = parquet.read(columns=[fields[i].name for i in floats_to_check])
        for i in floats_to_check:
            if pc.any(pc.is_nan(data.column(fields[i].name))).as_py():
                mins[i] = maxs[i] = None
    stats = SimpleStats(GenericRow(mins, fields), GenericRow(maxs, fields), nulls)
    dense = opts.get(DENSE_STORE_OPTION, "true").strip().lower() != "false"
    if not dense:
        raise InvalidOptionError(f"{DENSE_STORE_OPTION} = false is not supported by this writer")
    return stats, (None if len(fields) == len(table.fields) else [f.name for f in fields])


def attach_value_stats(table: Any, messages: Sequence[Any]) -> Sequence[Any]:
    """Give every new data file in ``messages`` Java's value statistics (in place).

    Files whose columns are a subset (``write_cols``) keep what pypaimon wrote.
    """
    from paimon_index.table.paimon import table_options  # pypaimon: not at import time

    opts = table_options(table)
    for message in messages:
        for meta in message.new_files:
            if getattr(meta, "write_cols", None) is not None or not str(meta.file_path).endswith(".parquet"):
                continue
            meta.value_stats, meta.value_stats_cols = file_value_stats(table, meta, opts)
    return messages


# ---------------------------------------------------------------------------------------------
# Pruning
# ---------------------------------------------------------------------------------------------

def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _leaf_may_match(leaf: Leaf, dtype: DataType, s: ColumnStats) -> bool:
    all_null = s.null_count is not None and s.null_count == s.row_count
    if leaf.op is Op.IS_NULL:
        return s.null_count is None or s.null_count > 0
    if leaf.op is Op.IS_NOT_NULL:
        return not all_null
    literals = leaf.literals
    if any(v is None or _is_nan(v) for v in literals):
        return True  # NULL literals and NaN: leave them to the exact evaluation
    if all_null:
        return False  # a comparison never matches NULL
    lo, hi = s.min, s.max
    if lo is None or hi is None or _is_nan(lo):
        return True  # Java writes max = NaN when a column holds NaN; a NaN min bounds nothing
    if dtype.root in _FLOATS:
        hi = None  # NaN may sit above any max
    op = leaf.op
    if op is Op.EQ or op is Op.IN:
        return any(not (v < lo or (hi is not None and v > hi)) for v in literals)
    if op is Op.LT:
        return lo < literals[0]
    if op is Op.LE:
        return lo <= literals[0]
    if op is Op.GT:
        return hi is None or hi > literals[0]
    if op is Op.GE:
        return hi is None or hi >= literals[0]
    if op is Op.BETWEEN:
        low, high = literals
        return not (high < lo or (hi is not None and low > hi))
    if op is Op.NE or op is Op.NOT_IN:
        return hi is None or lo != hi or lo not in literals
    if op is Op.STARTS_WITH and isinstance(lo, bytes) and isinstance(literals[0], bytes):
        prefix = literals[0]
        return not (hi < prefix or (lo > prefix and not lo.startswith(prefix)))
    return True


def stats_may_match(predicate: Predicate, stats: Mapping[str, ColumnStats],
                    schema: Mapping[str, DataType]) -> bool:
    """False only when the stats prove that no row satisfies ``predicate`` (a bound predicate)."""
    if predicate is ALWAYS_TRUE:
        return True
    if predicate is ALWAYS_FALSE:
        return False
    if isinstance(predicate, And):
        return all(stats_may_match(c, stats, schema) for c in predicate.children)
    if isinstance(predicate, Or):
        return any(stats_may_match(c, stats, schema) for c in predicate.children)
    if not isinstance(predicate, Leaf):
        return True
    column = stats.get(predicate.column)
    dtype = schema.get(predicate.column)
    if column is None or dtype is None:
        return True
    try:
        return _leaf_may_match(predicate, dtype, column)
    except TypeError:
        return True  # literal and stats of incomparable kinds: cannot tell


#: Types whose min/max prove "every row matches" (as bounds; see the module docstring).
_ALL_MATCH_ROOTS = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT,
                              TypeRoot.DECIMAL, TypeRoot.DATE, TypeRoot.BOOLEAN, TypeRoot.TIMESTAMP,
                              TypeRoot.VARCHAR, TypeRoot.BINARY, TypeRoot.VARBINARY})
#: Types whose min/max are values some row holds (never truncated).
_ATTAINED_ROOTS = _ALL_MATCH_ROOTS - {TypeRoot.VARCHAR, TypeRoot.BINARY, TypeRoot.VARBINARY}
#: Types whose keys are numbers an even spread between min and max can be estimated on.
_NUMERIC_ROOTS = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT,
                            TypeRoot.DECIMAL, TypeRoot.DATE, TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ,
                            TypeRoot.FLOAT, TypeRoot.DOUBLE})


def _usable(leaf: Leaf, dtype: DataType | None, s: ColumnStats | None, roots: frozenset[TypeRoot]
            ) -> bool:
    if dtype is None or s is None or dtype.root not in roots:
        return False
    if dtype.root is TypeRoot.TIMESTAMP and (dtype.precision or 0) > _MAX_TIMESTAMP_PRECISION:
        return False
    return not any(v is None or _is_nan(v) for v in leaf.literals)


def _no_nulls(s: ColumnStats) -> bool:
    return s.null_count is not None and s.null_count == 0


def _leaf_all_match(leaf: Leaf, dtype: DataType | None, s: ColumnStats | None) -> bool:
    if not _usable(leaf, dtype, s, _ALL_MATCH_ROOTS):
        return False
    assert s is not None
    if leaf.op is Op.IS_NOT_NULL:
        return _no_nulls(s)
    if leaf.op is Op.IS_NULL:
        return s.null_count is not None and s.null_count == s.row_count
    lo, hi = s.min, s.max
    if not _no_nulls(s) or lo is None or hi is None:
        return False  # a NULL row matches no comparison
    lits = leaf.literals
    if leaf.op in (Op.NE, Op.NOT_IN):
        return all(v < lo or v > hi for v in lits)
    if leaf.op is Op.IN:
        return bool(lo == hi and lo in lits)
    # The other comparisons hold on one interval of values: every row matches when both bounds do.
    return _satisfies(leaf, lo) and _satisfies(leaf, hi)


def stats_all_match(predicate: Predicate, stats: Mapping[str, ColumnStats],
                    schema: Mapping[str, DataType]) -> bool:
    """True only when the stats prove that every row of the file satisfies ``predicate`` (bound)."""
    if predicate is ALWAYS_TRUE:
        return True
    if isinstance(predicate, And):
        return all(stats_all_match(c, stats, schema) for c in predicate.children)
    if isinstance(predicate, Or):
        return any(stats_all_match(c, stats, schema) for c in predicate.children)
    if not isinstance(predicate, Leaf):
        return False
    try:
        return _leaf_all_match(predicate, schema.get(predicate.column), stats.get(predicate.column))
    except TypeError:
        return False  # literal and stats of incomparable kinds: cannot tell


def _satisfies(leaf: Leaf, value: Any) -> bool:
    """Whether a non-NULL ``value`` satisfies a comparison ``leaf``."""
    lits = leaf.literals
    match leaf.op:
        case Op.EQ:
            return bool(value == lits[0])
        case Op.IN:
            return value in lits
        case Op.NE | Op.NOT_IN:
            return value not in lits
        case Op.LT:
            return bool(value < lits[0])
        case Op.LE:
            return bool(value <= lits[0])
        case Op.GT:
            return bool(value > lits[0])
        case Op.GE:
            return bool(value >= lits[0])
        case Op.BETWEEN:
            return bool(lits[0] <= value <= lits[1])
    return False


def _attained(leaf: Leaf, stats: Mapping[str, ColumnStats], schema: Mapping[str, DataType]
              ) -> list[Any]:
    """The values some row of the file holds in ``leaf``'s column (its min and max)."""
    s = stats.get(leaf.column)
    if not _usable(leaf, schema.get(leaf.column), s, _ATTAINED_ROOTS):
        return []
    assert s is not None
    if s.min is None or s.max is None or _is_nan(s.min) or _is_nan(s.max):
        return []
    return [s.min, s.max]


def stats_some_match(predicate: Predicate, stats: Mapping[str, ColumnStats],
                     schema: Mapping[str, DataType]) -> bool:
    """True only when the stats prove that some written row of the file satisfies ``predicate``."""
    try:
        if predicate is ALWAYS_TRUE:
            return True
        if isinstance(predicate, Or):
            return any(stats_some_match(c, stats, schema) for c in predicate.children)
        if isinstance(predicate, And):
            leaves = [c for c in predicate.children if isinstance(c, Leaf)]
            if len(leaves) != len(predicate.children) or len({c.column for c in leaves}) != 1:
                return False  # each column's min/max may be held by another row
            if any(c.op in (Op.IS_NULL, Op.IS_NOT_NULL) for c in leaves):
                return False
            return any(all(_satisfies(c, v) for c in leaves) for v in _attained(leaves[0], stats, schema))
        if not isinstance(predicate, Leaf):
            return False
        s = stats.get(predicate.column)
        dtype = schema.get(predicate.column)
        if s is not None and dtype is not None and s.null_count is not None:
            if predicate.op is Op.IS_NOT_NULL:
                return s.null_count < s.row_count
            if predicate.op is Op.IS_NULL:
                return s.null_count > 0
        return any(_satisfies(predicate, v) for v in _attained(predicate, stats, schema))
    except TypeError:
        return False


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
        return None
    number = float(value)
    return None if math.isnan(number) or math.isinf(number) else number


def _leaf_fraction(leaf: Leaf, dtype: DataType | None, s: ColumnStats | None) -> float | None:
    if dtype is None or s is None or s.row_count <= 0:
        return None
    non_null = None if s.null_count is None else 1.0 - s.null_count / s.row_count
    if leaf.op is Op.IS_NULL:
        return None if non_null is None else 1.0 - non_null
    if leaf.op is Op.IS_NOT_NULL:
        return non_null
    if dtype.root not in _NUMERIC_ROOTS or leaf.op not in (Op.LT, Op.LE, Op.GT, Op.GE, Op.BETWEEN):
        return None
    lo, hi = _number(s.min), _number(s.max)
    numbers = [_number(v) for v in leaf.literals]
    lits = [v for v in numbers if v is not None]
    if lo is None or hi is None or hi <= lo or len(lits) != len(numbers):
        return None
    low, high = lo, hi
    match leaf.op:
        case Op.LT | Op.LE:
            high = min(hi, lits[0])
        case Op.GT | Op.GE:
            low = max(lo, lits[0])
        case Op.BETWEEN:
            low, high = max(lo, lits[0]), min(hi, lits[1])
    return max(0.0, high - low) / (hi - lo) * (1.0 if non_null is None else non_null)


def stats_fraction(predicate: Predicate, stats: Mapping[str, ColumnStats],
                   schema: Mapping[str, DataType]) -> float | None:
    """An estimate of the fraction of the file's rows that satisfy ``predicate`` (None: no estimate).

    Not a proof: values taken as spread evenly between min and max, columns as independent (see
    the module docstring). Never use it to skip a file."""
    if predicate is ALWAYS_TRUE:
        return 1.0
    if predicate is ALWAYS_FALSE:
        return 0.0
    if isinstance(predicate, And):
        fractions = [stats_fraction(c, stats, schema) for c in predicate.children]
        if any(f is None for f in fractions):
            return None  # an unestimated leaf may match nothing
        return math.prod(f for f in fractions if f is not None)
    if isinstance(predicate, Or):
        known = [f for f in (stats_fraction(c, stats, schema) for c in predicate.children) if f is not None]
        return max(known) if known else None  # at least its largest part
    if not isinstance(predicate, Leaf):
        return None
    return _leaf_fraction(predicate, schema.get(predicate.column), stats.get(predicate.column))


def row_group_may_match(parquet: pq.ParquetFile, group: int, predicate: Predicate,
                        schema: Mapping[str, DataType]) -> bool:
    """False only when row group ``group``'s footer min/max/null counts prove no row matches
    ``predicate`` (bound, over columns the file has under the same names and types).

    The footer statistics pyarrow writes are exact (never truncated) but leave NaN out of a float's
    min/max: :func:`stats_may_match` then uses only the min, as for file statistics. A column
    without statistics, or with bounds of a type not kept (see :func:`_as_stats_value`), tells nothing.
    """
    if predicate is ALWAYS_TRUE:
        return True
    meta = parquet.metadata.row_group(group)
    columns = {meta.column(c).path_in_schema: c for c in range(meta.num_columns)}
    stats: dict[str, ColumnStats] = {}
    for name in columns_of(predicate):
        dtype = schema.get(name)
        index = columns.get(name)
        if dtype is None or index is None:
            continue
        chunk = meta.column(index).statistics
        if chunk is None:
            continue
        nulls = chunk.null_count if chunk.has_null_count else None
        lo = hi = None
        if chunk.has_min_max:
            try:
                lo = canonical_literal(_as_stats_value(chunk.min, dtype), dtype)
                hi = canonical_literal(_as_stats_value(chunk.max, dtype), dtype)
            except Exception:
                lo = hi = None  # bounds we cannot read are unknown bounds
        stats[name] = ColumnStats(lo, hi, nulls, meta.num_rows)
    return stats_may_match(predicate, stats, schema)


class FileStats:
    """Reads a data file's stats for the predicate's columns, mapped by field id.

    ``FileStats(table, schema).columns(meta, names)``: ``{column: ColumnStats}`` of the columns in
    ``names`` whose stats the file (pypaimon ``DataFileMeta``) has and can be used (a column added
    later, or whose type changed, is left out)."""

    def __init__(self, table: Any, schema: Mapping[str, DataType]) -> None:
        self._table = table
        self._schema = schema
        current = table.table_schema
        self._ids = {f.name: f.id for f in current.fields}
        self._schemas: dict[int, dict[int, tuple[str, str]]] = {}

    def _file_fields(self, schema_id: int) -> dict[int, tuple[str, str]]:
        """field id -> (name, type text) in the schema a file was written with."""
        if schema_id not in self._schemas:
            current = self._table.table_schema
            schema = current if schema_id == current.id else self._table.schema_manager.get_schema(schema_id)
            self._schemas[schema_id] = {} if schema is None else {
                f.id: (f.name, str(f.type)) for f in schema.fields}
        return self._schemas[schema_id]

    def columns(self, meta: Any, names: Sequence[str]) -> dict[str, ColumnStats]:
        stats = meta.value_stats
        if stats is None or stats.min_values is None:
            return {}
        stat_fields = [f.name for f in getattr(stats.min_values, "fields", None) or ()]
        file_fields = self._file_fields(meta.schema_id)
        current_types = {f.name: str(f.type) for f in self._table.table_schema.fields}
        found: dict[str, ColumnStats] = {}
        for name in names:
            field_id = self._ids.get(name)
            old = file_fields.get(field_id) if field_id is not None else None
            if old is None or old[1] != current_types.get(name) or old[0] not in stat_fields:
                continue  # added later, type changed, or no stats kept: not used
            index = stat_fields.index(old[0])
            dtype = self._schema[name]
            try:
                lo = stats.min_values.get_field(index)
                hi = stats.max_values.get_field(index)
                nulls = stats.null_counts[index] if stats.null_counts is not None else None
                found[name] = ColumnStats(canonical_literal(lo, dtype), canonical_literal(hi, dtype),
                                          nulls, meta.row_count)
            except Exception:
                continue  # unreadable stats are unknown stats
        return found


def plan_splits(table: Any, bound: Predicate, schema: Mapping[str, DataType], report: Any = None,
                read_builder: Any = None, kept_stats: dict[str, dict[str, ColumnStats]] | None = None
                ) -> list[Any]:
    """pypaimon's splits of ``table`` without the data files whose value stats rule ``bound`` out.

    ``report.files_skipped_by_stats`` counts them. Primary-key tables are planned unpruned.
    ``kept_stats``: filled with each kept file's stats of ``bound``'s columns, by file name (the
    splits' files come without their stats: pypaimon drops them after its filter).
    """
    from paimon_index.table.paimon import cached_manifest_reads

    scan = cached_manifest_reads((read_builder or table.new_read_builder()).new_scan(), report)
    if bound is ALWAYS_TRUE or table.is_primary_key_table:
        return list(scan.plan().splits())
    scanner = scan.file_scanner
    original = scanner._filter_manifest_entry
    reader = FileStats(table, schema)
    names = [c for c in columns_of(bound) if c in schema]
    skipped: set[tuple] = set()
    deleted: set[tuple] = set()
    lock = threading.Lock()  # pypaimon reads manifests on several threads

    def filter_entry(entry: Any) -> bool:
        if not original(entry):
            return False
        key = (tuple(entry.partition.values), entry.bucket, entry.file.level, entry.file.file_name)
        if entry.kind != _ADD:
            with lock:
                deleted.add(key)
            return True
        columns = reader.columns(entry.file, names)
        if stats_may_match(bound, columns, schema):
            if kept_stats is not None:
                with lock:
                    kept_stats[str(entry.file.file_name)] = columns
            return True
        with lock:
            skipped.add(key)
        return False

    scanner._filter_manifest_entry = filter_entry
    splits = list(scan.plan().splits())
    if report is not None and hasattr(report, "files_skipped_by_stats"):
        report.files_skipped_by_stats += len(skipped - deleted)  # live files only
    return splits


_FileStats = FileStats  # the name tests used before it was public
