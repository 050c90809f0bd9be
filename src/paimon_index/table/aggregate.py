"""Index-only answers: ``count(*) WHERE`` and ``min``/``max``, reading data only where the indexes
cannot tell.

    count_rows(table, where=None, *, use_index=True) -> (int, AggregateReport)
    min_max(table, column, where=None, *, use_index=True) -> ((min, max), AggregateReport)
    plan_aggregate(table, where, use_index) -> (bound, schema, use_index)
    file_pairs(table, bound, schema, use_index, report) -> [(data file, deletion file | None)]
    count_from_index(meta, deletion_file, bound, schema, report) -> int | None   (per file, driver)
    count_by_reading(meta, deletion_file, bound, schema, report) -> int          (per file, anywhere)

**count**, per data file of the pinned plan (value statistics prune first, as reads do; a pruned
file counts 0):

1. no predicate: ``row_count - |deletion vector|`` (the vector read from its DV index file, no data);
2. the file's index container answers the predicate *exactly*
   (:attr:`~paimon_index.fileindex.result.FileIndexResult.exact`, decided in
   :mod:`paimon_index.fileindex.evaluate`): ``|selection - deletion vector|``; SKIP is 0;
3. otherwise the predicate's columns of the candidate rows are read and the predicate applied with
   Arrow (:func:`~paimon_index.arrow_filter.to_arrow_expression`), exactly as a read does.

A file written under an older schema version is answered from its index only when the index skips
it (a column it lacks, or SKIP); any other answer of an evolved file is re-checked on its data.

**min/max** (Spark's ``min``/``max``: NULLs ignored, NaN above every number, -0.0 and 0.0 equal,
no non-NULL value -> None), per data file: with a ``range-bitmap`` index on the column, no predicate
and no deleted row, the index header's min/max (no data read); with a predicate or deleted rows, the
exact selection (from the index, or from the predicate's columns) and the range bitmap's TopN give
the row of the smallest and of the largest value, and only those rows' row groups of that one
column are read; without a range bitmap, the column is read for the matching rows. Value statistics
are not used for min/max: a truncated string or a NaN hides behind them, and pypaimon's plan does
not keep them on the files it returns (only its manifest filter sees them).

:class:`AggregateReport` says how many files the indexes (and metadata) answered alone and what
was read for the others. Append tables only (primary-key tables need a merge first).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.deletionvectors.vector import BitmapDeletionVector
from paimon_index.errors import CorruptFileError, InvalidOptionError
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.options import FileIndexOptions
from paimon_index.fileindex.range_bitmap import RangeBitmapReader
from paimon_index.fileindex.result import REMAIN, FileIndexResult, Rows
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, Predicate, columns_of
from paimon_index.sql import bind_predicate
from paimon_index.table.fileio import TableIO
from paimon_index.table.read import (
    ScanReport,
    SplitVectors,
    UnsupportedTableError,
    _evaluate,
    _exact_selection,
    _read_file,
    _subtract_deleted,
    container_source,
    index_container,
    range_bitmap_reader,
)
from paimon_index.table.schemas import mapping_of
from paimon_index.table.stats import plan_splits
from paimon_index.table.write import table_options, table_schema
from paimon_index.types import DataType, TypeRoot

__all__ = [
    "AggregateReport",
    "count_by_reading",
    "count_from_index",
    "count_rows",
    "file_pairs",
    "index_counts",
    "min_max",
    "plan_aggregate",
    "spark_min_max",
]

_EPOCH_DATE = dt.date(1970, 1, 1)
_FLOATS = (TypeRoot.FLOAT, TypeRoot.DOUBLE)


@dataclass
class AggregateReport:
    """What an index-only aggregate answered from indexes and metadata, and what it read."""

    files_planned: int = 0
    #: Files answered without reading data: by the indexes, the schema or the row count and vector.
    files_answered_by_index: int = 0
    #: Files whose data (the needed columns of the candidate rows) had to be read.
    files_read: int = 0
    #: Reads and pruning of the files (``files_skipped_by_stats``, rows and bytes read, ...).
    scan: ScanReport = field(default_factory=ScanReport)

    @property
    def files_skipped_by_stats(self) -> int:
        return self.scan.files_skipped_by_stats

    def merge(self, other: AggregateReport) -> AggregateReport:
        """Add ``other``'s counts to this report (files counted elsewhere, e.g. on executors)."""
        self.files_planned += other.files_planned
        self.files_answered_by_index += other.files_answered_by_index
        self.files_read += other.files_read
        self.scan.merge(other.scan)
        return self

    def as_dict(self) -> dict[str, int]:
        return {"files_planned": self.files_planned, "files_answered_by_index": self.files_answered_by_index,
                "files_read": self.files_read, **self.scan.as_dict()}


# -- planning ------------------------------------------------------------------------------------

def plan_aggregate(table: Any, where: Predicate | str | None,
                   use_index: bool) -> tuple[Predicate, Mapping[str, DataType], bool]:
    """(the bound predicate, the read schema, whether indexes are used) for an aggregate of ``table``.

    Raises:
        UnsupportedTableError: a primary-key table.
        InvalidPredicateError: ``where`` does not parse or does not fit the schema.
    """
    if table.is_primary_key_table:
        raise UnsupportedTableError("index-only aggregates read append tables only (a primary-key "
                                    "table needs a merge first)")
    schema = table_schema(table)
    predicate = ALWAYS_TRUE if where is None else where
    bound = bind_predicate(predicate, schema) if isinstance(predicate, str) else predicate
    use_index = use_index and FileIndexOptions.from_table_options(table_options(table)).read_enabled
    return bound, schema, use_index


def _splits(table: Any, bound: Predicate, use_index: bool, schema: Mapping[str, DataType],
            report: AggregateReport) -> list[tuple[list[Any], list[Any]]]:
    """(data file metas, deletion file or None of each) per split the value statistics leave."""
    planned = []
    for split in plan_splits(table, bound if use_index else ALWAYS_TRUE, schema, report.scan):
        deletion_files = split.data_deletion_files or [None] * len(split.files)
        planned.append((list(split.files), list(deletion_files)))
        report.files_planned += len(split.files)
        report.scan.files_planned += len(split.files)
    return planned


def file_pairs(table: Any, bound: Predicate, schema: Mapping[str, DataType], use_index: bool,
               report: AggregateReport) -> list[tuple[Any, Any]]:
    """(data file meta, deletion file or None) of every file the value statistics leave."""
    return [pair for metas, deletions in _splits(table, bound, use_index, schema, report)
            for pair in zip(metas, deletions, strict=True)]


def _deleted(vectors: SplitVectors | None, deletion_file: Any, row_count: int) -> BitMap:
    """The file's deleted positions (empty without a vector), checked against its row count."""
    if deletion_file is None:
        return BitMap()
    assert vectors is not None, "a file with a deletion vector is counted with its split's vectors"
    vector = vectors.read(deletion_file)
    # A 32-bit vector is a bitmap already; a 64-bit one is rebuilt from its positions.
    deleted = vector.bitmap if isinstance(vector, BitmapDeletionVector) \
        else BitMap(vector.positions().astype(np.uint32))
    if deleted and deleted.max() >= row_count:
        raise CorruptFileError(f"deletion vector holds row {deleted.max()} of a {row_count}-row file",
                               path=deletion_file.dv_index_path, offset=deletion_file.offset,
                               field="deletion vector")
    return deleted


@contextmanager
def _vectors(io: TableIO, deletion_files: list[Any], report: ScanReport) -> Iterator[SplitVectors]:
    """The deletion vector source of one split (each DV index file read once), closed after use."""
    vectors = SplitVectors(io, deletion_files, report)
    try:
        yield vectors
    finally:
        vectors.close()


def _identity(schema: Mapping[str, DataType], meta: Any) -> bool:
    mapping = mapping_of(schema, meta)
    return mapping is None or mapping.identity


def _index_answer(io: TableIO, meta: Any, bound: Predicate, schema: Mapping[str, DataType],
                  report: ScanReport) -> FileIndexResult:
    """The container's answer for ``bound`` (REMAIN without a container)."""
    with index_container(io, meta.file_path, container_source(meta), report) as (container, readers):
        if container is None:
            return REMAIN
        return FileIndexEvaluator(container, schema, exact_answers=True, readers=readers).evaluate(bound)


# -- count -----------------------------------------------------------------------------------------

def count_from_index(meta: Any, deletion_file: Any, bound: Predicate, schema: Mapping[str, DataType],
                     report: AggregateReport, use_index: bool = True, *, io: TableIO,
                     vectors: SplitVectors | None = None) -> int | None:
    """The file's count from its row count, deletion vector and index alone; None when they cannot
    tell (:func:`count_by_reading` then counts it). ``vectors``: the split's deletion vectors
    (default: the file's DV index file is opened for this file alone)."""
    if vectors is not None or deletion_file is None:
        return _index_count(io, meta, deletion_file, bound, schema, report, use_index, vectors)[0]
    with _vectors(io, [deletion_file], report.scan) as own:
        return _index_count(io, meta, deletion_file, bound, schema, report, use_index, own)[0]


def index_counts(table: Any, bound: Predicate, schema: Mapping[str, DataType], use_index: bool,
                 report: AggregateReport, io: TableIO
                 ) -> tuple[int, list[tuple[Any, Any, FileIndexResult | None]]]:
    """(the count of every file the metadata and indexes answer, the other files as
    ``(meta, deletion file, candidates)``), one :class:`SplitVectors` per split."""
    total = 0
    remaining: list[tuple[Any, Any, FileIndexResult | None]] = []
    for metas, deletions in _splits(table, bound, use_index, schema, report):
        with _vectors(io, deletions, report.scan) as vectors:
            for meta, deletion_file in zip(metas, deletions, strict=True):
                count, candidates = _index_count(io, meta, deletion_file, bound, schema, report, use_index,
                                                 vectors)
                if count is None:
                    remaining.append((meta, deletion_file, candidates))
                else:
                    total += count
    return total, remaining


def _index_count(io: TableIO, meta: Any, deletion_file: Any, bound: Predicate, schema: Mapping[str, DataType],
                 report: AggregateReport, use_index: bool, vectors: SplitVectors | None
                 ) -> tuple[int | None, FileIndexResult | None]:
    """(the count when the index answers it, else None; the index's candidates when it has any)."""
    if bound is ALWAYS_TRUE:
        report.files_answered_by_index += 1
        return int(meta.row_count) - len(_deleted(vectors, deletion_file, meta.row_count)), None
    if bound is ALWAYS_FALSE:
        report.files_answered_by_index += 1
        return 0, None
    if not use_index:
        return None, None
    if not _identity(schema, meta):
        # An evolved file: only "no row can match" is taken from its index (or its schema).
        if _evaluate(io, meta, container_source(meta), bound, schema, report.scan).remain:
            return None, None
        report.files_answered_by_index += 1
        report.scan.files_skipped_by_index += 1
        return 0, None
    result = _index_answer(io, meta, bound, schema, report.scan)
    if not result.remain:
        report.files_answered_by_index += 1
        report.scan.files_skipped_by_index += 1
        return 0, None
    if not (isinstance(result, Rows) and result.exact):
        return None, result
    report.files_answered_by_index += 1
    selected = result.bitmap
    # |selection - deleted| without building the difference.
    removed = selected.intersection_cardinality(_deleted(vectors, deletion_file, meta.row_count)) \
        if deletion_file is not None else 0
    report.scan.rows_selected_by_index += len(selected)
    report.scan.rows_removed_by_deletion_vectors += removed
    return len(selected) - removed, None


def count_by_reading(meta: Any, deletion_file: Any, bound: Predicate, schema: Mapping[str, DataType],
                     report: AggregateReport, use_index: bool = True,
                     candidates: FileIndexResult | None = None, *, io: TableIO) -> int:
    """The file's exact count: the index's candidates (all rows without an index; ``candidates``
    when the caller has them already) minus the deletion vector, then the predicate applied to its
    columns of those rows."""
    report.files_read += 1
    with _vectors(io, [deletion_file], report.scan) as vectors:
        if candidates is None:
            source = container_source(meta) if use_index else None
            candidates = _evaluate(io, meta, source, bound, schema, report.scan, None, deletion_file, vectors)
        elif candidates.remain and deletion_file is not None:
            candidates = _subtract_deleted(candidates, deletion_file, meta.row_count, report.scan, vectors)
    if not candidates.remain:
        return 0
    return len(_matching(io, meta, candidates, bound, schema, report.scan, []))


def _matching(io: TableIO, meta: Any, candidates: FileIndexResult, bound: Predicate,
              schema: Mapping[str, DataType], report: ScanReport, extra: list[str]) -> pa.Table:
    """The rows of ``candidates`` that satisfy ``bound``: its columns plus ``extra`` ones."""
    positions = None
    if isinstance(candidates, Rows):
        positions = np.frombuffer(candidates.bitmap.to_array(), dtype=np.uint32).astype(np.int64)
        report.rows_selected_by_index += len(positions)
    wanted = list(dict.fromkeys([*extra, *columns_of(bound)]))
    if not wanted:  # TRUE with deleted rows: no column needed, only the positions
        assert positions is not None
        return pa.table({"position": pa.array(positions)})
    rows = _read_file(io, meta, positions, report, mapping_of(schema, meta), wanted)
    report.rows_read += rows.num_rows
    kept = rows if bound is ALWAYS_TRUE else rows.filter(to_arrow_expression(bound, schema))
    report.rows_returned += kept.num_rows
    return kept


def count_rows(table: Any, where: Predicate | str | None = None, *, use_index: bool = True
               ) -> tuple[int, AggregateReport]:
    """``SELECT count(*) FROM table WHERE where`` on the latest snapshot of ``table`` (pypaimon)."""
    bound, schema, use_index = plan_aggregate(table, where, use_index)
    io = TableIO.of(table)
    report = AggregateReport()
    total, remaining = index_counts(table, bound, schema, use_index, report, io)
    for meta, deletion_file, candidates in remaining:
        total += count_by_reading(meta, deletion_file, bound, schema, report, use_index, candidates, io=io)
    return total, report


# -- min / max -----------------------------------------------------------------------------------

def _spark_order(value: Any) -> tuple[int, Any]:
    """Spark's order of non-NULL values: NaN above every number (-0.0 == 0.0 as Python has it)."""
    if isinstance(value, float) and math.isnan(value):
        return (1, 0.0)
    return (0, value)


def _combine(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    lows = [v for v in (a[0], b[0]) if v is not None]
    highs = [v for v in (a[1], b[1]) if v is not None]
    return (min(lows, key=_spark_order) if lows else None, max(highs, key=_spark_order) if highs else None)


def spark_min_max(column: pa.ChunkedArray | pa.Array) -> tuple[Any, Any]:
    """min and max of a column with Spark's meaning (NULLs ignored, NaN greatest)."""
    values = column.drop_null()
    if len(values) == 0:
        return None, None
    has_nan = False
    if pa.types.is_floating(values.type):
        nan = pc.is_nan(values)
        has_nan = bool(pc.any(nan).as_py())
        if has_nan:
            values = values.filter(pc.invert(nan))
            if len(values) == 0:
                return math.nan, math.nan
    found = pc.min_max(values)
    return found["min"].as_py(), math.nan if has_nan else found["max"].as_py()


def _natural(key: Any, dtype: DataType) -> Any:
    """A range-bitmap header key as the Python value Arrow reads from the file (None: unsure)."""
    root = dtype.root
    if root in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.BOOLEAN,
                *_FLOATS):
        return key
    if root is TypeRoot.DECIMAL:
        return decimal.Decimal(int(key)).scaleb(-(dtype.scale or 0))
    if root is TypeRoot.DATE:
        return _EPOCH_DATE + dt.timedelta(days=int(key))
    if root is TypeRoot.VARCHAR and isinstance(key, bytes):
        try:
            return key.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None  # TIMESTAMP (time zones), CHAR (padding): read the rows instead


def _file_min_max(io: TableIO, meta: Any, deletion_file: Any, column: str, bound: Predicate,
                  schema: Mapping[str, DataType], report: AggregateReport,
                  use_index: bool) -> tuple[Any, Any]:
    if use_index and _identity(schema, meta):
        with index_container(io, meta.file_path, container_source(meta), report.scan) as (container, readers):
            evaluator = None if container is None \
                else FileIndexEvaluator(container, schema, exact_answers=True, readers=readers)
            ranged = range_bitmap_reader(container, evaluator, column)
            if ranged is not None and evaluator is not None:
                answer = _min_max_from_index(io, meta, deletion_file, ranged, evaluator, column, bound,
                                             schema, report)
                if answer is not None:
                    return answer
    report.files_read += 1
    source = container_source(meta) if use_index else None
    with _vectors(io, [deletion_file], report.scan) as vectors:
        candidates = _evaluate(io, meta, source, bound, schema, report.scan, None, deletion_file, vectors)
    if not candidates.remain:
        return None, None
    rows = _matching(io, meta, candidates, bound, schema, report.scan, [column])
    return spark_min_max(rows.column(column))


def _min_max_from_index(io: TableIO, meta: Any, deletion_file: Any, ranged: RangeBitmapReader,
                        evaluator: FileIndexEvaluator, column: str, bound: Predicate,
                        schema: Mapping[str, DataType], report: AggregateReport) -> tuple[Any, Any] | None:
    """The file's (min, max) through its range bitmap; None when the index path cannot answer."""
    dtype = schema[column]
    span = ranged.value_range()
    if span is None:  # every row NULL: nothing to take, whatever the predicate
        report.files_answered_by_index += 1
        return None, None
    if bound is ALWAYS_TRUE and deletion_file is None:
        low, high = _natural(span[0], dtype), _natural(span[1], dtype)
        if low is not None and high is not None:
            report.files_answered_by_index += 1
            return low, high
    selection = REMAIN if bound is ALWAYS_TRUE else evaluator.evaluate(bound)
    exact = bound is ALWAYS_TRUE or selection.exact
    if selection.remain and deletion_file is not None:
        with _vectors(io, [deletion_file], report.scan) as vectors:
            selection = _subtract_deleted(selection, deletion_file, meta.row_count, report.scan, vectors)
    if not selection.remain:
        report.files_answered_by_index += 1
        return None, None
    if not exact:  # the predicate's columns decide which candidates match
        report.files_read += 1
        exact_filter = to_arrow_expression(bound, schema)
        found: BitMap | None = _exact_selection(io, meta, selection, bound, exact_filter, report.scan,
                                                mapping_of(schema, meta)).bitmap
    else:
        report.files_answered_by_index += 1
        found = selection.bitmap if isinstance(selection, Rows) else None
    if found is not None and not found:
        return None, None
    # The file's smallest (largest) value is the answer when a selected row holds it: no data read.
    header = ranged.header
    low, high = (_natural(span[0], dtype) if _holds(ranged.eq(header.min), found) else None,
                 _natural(span[1], dtype) if _holds(ranged.eq(header.max), found) else None)
    if low is not None and high is not None:
        return low, high
    # Otherwise the range bitmap's TopN finds the row of each end; only their row groups are read.
    rows = BitMap()
    if low is None:
        rows |= ranged.top_n(1, ascending=True, nulls_first=False, found=found, strict=True)
    if high is None:
        rows |= ranged.top_n(1, ascending=False, nulls_first=False, found=found, strict=True)
    positions = np.frombuffer(rows.to_array(), dtype=np.uint32).astype(np.int64)
    values = _read_file(io, meta, positions, report.scan, mapping_of(schema, meta), [column]).column(column)
    report.scan.rows_read += len(values)
    read_low, read_high = spark_min_max(values)
    return (read_low if low is None else low), (read_high if high is None else high)


def _holds(rows: BitMap, found: BitMap | None) -> bool:
    """Whether a selected row (every row when ``found`` is None) is among ``rows``."""
    return bool(rows) if found is None else rows.intersect(found)


def min_max(table: Any, column: str, where: Predicate | str | None = None, *, use_index: bool = True
            ) -> tuple[tuple[Any, Any], AggregateReport]:
    """``SELECT min(column), max(column) FROM table WHERE where`` with Spark's meaning."""
    bound, schema, use_index = plan_aggregate(table, where, use_index)
    if column not in schema:
        raise InvalidOptionError(f"min/max: unknown or non-scalar column {column!r} "
                                 f"(columns: {', '.join(schema)})")
    report = AggregateReport()
    io = TableIO.of(table)
    answer: tuple[Any, Any] = (None, None)
    for meta, deletion_file in file_pairs(table, bound, schema, use_index, report):
        answer = _combine(answer, _file_min_max(io, meta, deletion_file, column, bound, schema, report,
                                                use_index))
    return answer, report
