"""The Python read: the rows of a plan (:mod:`paimon_index.table.scan`), file by file.

    read_arrow(table, predicate, *, use_index=True, topn=None) -> (pa.Table, ScanReport)
    read_plan(plan, io) -> iterator of pa.Table          (one per planned file)
    read_file_plans(io, files, bound, schema, ...)       (a Spark task's share: resolve, then read)

1. :func:`paimon_index.table.scan.plan_read` pins one snapshot and resolves every data file the
   value statistics leave: its index container (embedded in the manifest, or ``<data-file>.index``)
   answers the predicate (SKIP drops the file, a row bitmap selects rows), its deletion vector is
   subtracted, and TopN keeps the range-bitmap candidates (:mod:`paimon_index.table.files`);
2. per file, only the Parquet row groups holding a selected row are read, then only the selected
   live rows are taken, and the exact predicate is applied (index answers are supersets: a Bloom
   filter keeps whole files, the bitmap index's ``<>`` keeps NULL rows);
3. the :class:`~paimon_index.table.files.ScanReport` says what each step pruned and what was read.

TopN (``topn=TopN(...)``, seed 000): each file keeps only its range-bitmap TopN candidates among its
live matching rows (the exact selection computed first when the index does not answer the predicate
exactly). The caller still sorts and limits: candidates are a superset of the file's share of the
global TopN (ties at the boundary are kept: ``strict=False``).

Schema evolution: every data file is read under the schema it was written with and mapped to the
current columns by field id (see :mod:`paimon_index.table.files`); the exact re-check runs on the
current-schema rows.

Primary-key tables in deletion-vectors mode are read the same way, merge-free (their level >= 1
files minus their vectors; :mod:`paimon_index.table.pk.read` says when a merge is needed).
``file-index.read.enabled = false`` in the table options, or ``use_index=False``, turns index use off.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from paimon_index.errors import UnsupportedTableError
from paimon_index.fileindex.base import TopN
from paimon_index.predicate import Predicate
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import (
    METADATA_COLUMNS,
    FilePlan,
    ScanReport,
    SplitVectors,
    read_rows,
    resolve,
)
from paimon_index.table.scan import ReadPlan, plan_read
from paimon_index.types import DataType

__all__ = ["METADATA_COLUMNS", "ScanReport", "UnsupportedTableError", "read_arrow", "read_file_plans",
           "read_plan"]


def read_plan(plan: ReadPlan, io: TableIO | None = None, *, columns: Sequence[str] | None = None
              ) -> Iterator[pa.Table]:
    """The matching live rows of every file of a resolved ``plan`` (one table per file that has any)."""
    if plan.table is None or not plan.files:
        return
    io = io if io is not None else TableIO.of(plan.table)
    if columns is None and plan.primary_key:  # the user's columns, not the _KEY_/_SEQUENCE_ ones
        columns = [f.name for f in plan.table.fields]
    for f in plan.files:
        rows = read_rows(io, f, plan.predicate, plan.schema, plan.report, columns=columns)
        if rows.num_rows:
            yield rows


def read_file_plans(io: TableIO, files: Sequence[FilePlan], bound: Predicate, schema: Mapping[str, DataType],
                    report: ScanReport, *, use_index: bool = True, topn: TopN | None = None,
                    row_ids: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
    """The matching live rows of ``files`` (resolved here when they come unresolved, as a task gets
    them: each DV index file read once for the group), as Arrow batches. ``row_ids``: the table's
    partition keys, to add the metadata columns :data:`METADATA_COLUMNS`."""
    with SplitVectors(io, [f.deletion for f in files if not f.resolved], report) as vectors:
        for f in files:
            planned = resolve(io, f, bound, schema, report, vectors=vectors, topn=topn, use_index=use_index)
            if planned is None:
                continue
            yield from read_rows(io, planned, bound, schema, report, row_ids=row_ids).to_batches()


def read_arrow(table: Any, predicate: Predicate | str, *, use_index: bool = True,
               topn: TopN | None = None) -> tuple[pa.Table, ScanReport]:
    """All rows of ``table`` (pypaimon; an append table, or a primary-key table in deletion-vectors
    mode that needs no merge) matching ``predicate`` (SQL-like text, bound strictly, or a predicate
    tree), on its pinned snapshot or the latest."""
    plan = plan_read(table, predicate, use_index=use_index, topn=topn, strict=True)
    parts = list(read_plan(plan))
    if not parts:
        return pa.schema([]).empty_table(), plan.report
    # Files of different schema versions may differ in nullability only (NOT NULL dropped since).
    return pa.concat_tables(parts, promote_options="default"), plan.report
