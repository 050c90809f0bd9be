"""Index-only answers: ``count(*) WHERE`` and ``min``/``max``, reading data only where the indexes
cannot tell.

    count_rows(table, where=None, *, use_index=True) -> (int, AggregateReport)
    min_max(table, column, where=None, *, use_index=True) -> ((min, max), AggregateReport)
    plan_aggregate(table, where, use_index) -> ReadPlan       (the one read plan, exact answers on)
    index_counts(plan, report) -> (count, [FilePlan the indexes could not answer])
    count_by_reading(io, file, bound, schema, report) -> int  (per file, anywhere: a task resolves it)

**count**, per data file of the pinned read plan (:func:`paimon_index.table.scan.plan_read`: value
statistics, indexes and vectors applied as for a read; a file the plan drops counts 0):

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
was read for the others. Append tables, and primary-key tables in deletion-vectors mode whose reads
need no merge (the others: :class:`~paimon_index.errors.UnsupportedTableError`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from paimon_index.errors import InvalidOptionError
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.range_bitmap import RangeBitmapReader
from paimon_index.fileindex.result import Rows
from paimon_index.predicate import ALWAYS_TRUE, Predicate
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import (
    FilePlan,
    ScanReport,
    bitmap_positions,
    exact_selection,
    index_container,
    missing_files_named,
    range_bitmap_reader,
    read_rows,
    resolve,
)
from paimon_index.table.scan import ReadPlan, plan_read
from paimon_index.table.schemas import mapping_of
from paimon_index.types import DataType, TypeRoot

__all__ = [
    "AggregateReport",
    "count_by_reading",
    "count_rows",
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

def plan_aggregate(table: Any, where: Predicate | str | None, use_index: bool) -> ReadPlan:
    """The read plan of an aggregate of ``table``: strict WHERE, exact index answers.

    A primary-key table in deletion-vectors mode is planned as its merge-free read (its files of
    levels >= 1 minus their vectors hold each key once), so its files answer as an append table's.

    Raises:
        UnsupportedTableError: a primary-key table whose rows need a merge by key.
        InvalidPredicateError: ``where`` does not parse or does not fit the schema.
    """
    return plan_read(table, ALWAYS_TRUE if where is None else where, use_index=use_index, strict=True,
                     exact_answers=True)


def _count_planned(plan: ReadPlan, report: AggregateReport) -> None:
    """The plan's pruning in ``report``: a file the plan dropped (SKIP, every row deleted, a column its
    schema version lacks) is answered without data; value statistics' drops are no files at all."""
    report.scan.merge(plan.report)
    report.files_planned += plan.report.files_planned
    report.files_answered_by_index += plan.report.files_planned - len(plan.files)


def _identity(schema: Mapping[str, DataType], f: FilePlan) -> bool:
    mapping = mapping_of(schema, f)
    return mapping is None or mapping.identity


# -- count -----------------------------------------------------------------------------------------

def index_counts(plan: ReadPlan, report: AggregateReport) -> tuple[int, list[FilePlan]]:
    """(the count of every file the metadata and indexes answer, the other files of the plan).

    A file is answered when its plan is exact (:attr:`FilePlan.exact`: no predicate, or an index
    answer that is exactly the matching rows) or when the plan dropped it (SKIP, every row deleted,
    a column its schema version lacks); value statistics' drops are not files at all here.
    """
    _count_planned(plan, report)
    total = 0
    remaining: list[FilePlan] = []
    for f in plan.files:
        if f.exact:
            report.files_answered_by_index += 1
            total += f.live_rows if f.selected is None else len(f.selected)
        else:
            remaining.append(f)
    return total, remaining


def count_by_reading(io: TableIO, f: FilePlan, bound: Predicate, schema: Mapping[str, DataType],
                     report: AggregateReport, use_index: bool = True) -> int:
    """The file's exact count: its candidate live rows (resolved here when ``f`` comes unresolved,
    as a task gets it), the predicate applied to its columns of those rows."""
    report.files_read += 1
    if not f.resolved:
        planned = resolve(io, f, bound, schema, report.scan, use_index=use_index, exact_answers=True)
        if planned is None:
            return 0
        f = planned
        if f.exact:
            return f.live_rows if f.selected is None else len(f.selected)
    return read_rows(io, f, bound, schema, report.scan, columns=[]).num_rows


def count_rows(table: Any, where: Predicate | str | None = None, *, use_index: bool = True
               ) -> tuple[int, AggregateReport]:
    """``SELECT count(*) FROM table WHERE where`` on the latest snapshot of ``table`` (pypaimon)."""
    report = AggregateReport()
    with missing_files_named("count"):
        plan = plan_aggregate(table, where, use_index)
        total, remaining = index_counts(plan, report)
        io = TableIO.of(plan.table) if plan.table is not None else TableIO.of(table)
        for f in remaining:
            total += count_by_reading(io, f, plan.predicate, plan.schema, report)
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


def _file_min_max(io: TableIO, f: FilePlan, column: str, plan: ReadPlan, use_index: bool,
                  report: AggregateReport) -> tuple[Any, Any]:
    if use_index and _identity(plan.schema, f):
        with index_container(io, f.path, f.index, report.scan) as (container, readers):
            evaluator = None if container is None \
                else FileIndexEvaluator(container, plan.schema, exact_answers=True, readers=readers)
            ranged = range_bitmap_reader(container, evaluator, column)
            if ranged is not None:
                answer = _min_max_from_index(io, f, ranged, column, plan, report)
                if answer is not None:
                    return answer
    report.files_read += 1
    rows = read_rows(io, f, plan.predicate, plan.schema, report.scan, columns=[column])
    return spark_min_max(rows.column(column))


def _min_max_from_index(io: TableIO, f: FilePlan, ranged: RangeBitmapReader, column: str, plan: ReadPlan,
                        report: AggregateReport) -> tuple[Any, Any] | None:
    """The file's (min, max) through its range bitmap; None when the index path cannot answer."""
    dtype = plan.schema[column]
    span = ranged.value_range()
    if span is None:  # every row NULL: nothing to take, whatever the predicate
        report.files_answered_by_index += 1
        return None, None
    bound = plan.predicate
    if bound is ALWAYS_TRUE and f.deleted is None:
        low, high = _natural(span[0], dtype), _natural(span[1], dtype)
        if low is not None and high is not None:
            report.files_answered_by_index += 1
            return low, high
    live = f.live_positions()
    candidates = None if live is None else BitMap(live.astype(np.uint32))
    found: BitMap | None
    if f.exact:
        report.files_answered_by_index += 1
        found = candidates
    else:  # the predicate's columns decide which candidates match
        report.files_read += 1
        selection = Rows(candidates) if candidates is not None else Rows(BitMap(range(f.row_count)))
        found = exact_selection(io, f, selection, bound, plan.schema, report.scan).bitmap
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
    positions = bitmap_positions(rows)
    exact_file = dataclasses.replace(f, selected=positions, deleted=None)
    values = read_rows(io, exact_file, ALWAYS_TRUE, plan.schema, report.scan, columns=[column]).column(column)
    read_low, read_high = spark_min_max(values)
    return (read_low if low is None else low), (read_high if high is None else high)


def _holds(rows: BitMap, found: BitMap | None) -> bool:
    """Whether a selected row (every row when ``found`` is None) is among ``rows``."""
    return bool(rows) if found is None else rows.intersect(found)


def min_max(table: Any, column: str, where: Predicate | str | None = None, *, use_index: bool = True
            ) -> tuple[tuple[Any, Any], AggregateReport]:
    """``SELECT min(column), max(column) FROM table WHERE where`` with Spark's meaning."""
    report = AggregateReport()
    with missing_files_named(f"min/max of {column}"):
        plan = plan_aggregate(table, where, use_index)
        if column not in plan.schema:
            raise InvalidOptionError(f"min/max: unknown or non-scalar column {column!r} "
                                     f"(columns: {', '.join(plan.schema)})")
        _count_planned(plan, report)
        answer: tuple[Any, Any] = (None, None)
        if plan.table is None:
            return answer, report
        io = TableIO.of(plan.table)
        for f in plan.files:
            answer = _combine(answer, _file_min_max(io, f, column, plan, use_index, report))
    return answer, report
