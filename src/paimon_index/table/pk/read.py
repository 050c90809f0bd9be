"""Reading a deletion-vectors-mode primary-key table.

    read_primary_key(table, predicate) -> (rows, ScanReport)
    check_merge_free(table) -> bool

Merge-free (the normal case): the files of levels >= 1 minus their deletion vectors, through the
indexed reader (:func:`paimon_index.table.read.read_split`) — no merge, file indexes used. When the
table has level-0 files (plain pypaimon writes) and ``deletion-vectors.merge-on-read`` is on, every
file is read and the newest version of each key (by sequence number) is kept; without that option
such a table is refused (a merge-free read would miss those rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.fileindex.options import parse_bool
from paimon_index.predicate import Predicate
from paimon_index.sql import bind_predicate
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import read_snapshot
from paimon_index.table.pk.lookup import last_per_key
from paimon_index.table.pk.plan import (
    DELETING_VALUE_KINDS,
    MERGE_ON_READ,
    POSITION,
    SEQUENCE_COLUMN,
    VALUE_KIND_COLUMN,
    Plan,
    PrimaryKeyTableError,
    arrow_fields,
    check_table,
    live_rows,
    maintainer,
    plan_snapshot,
    user_columns,
)
from paimon_index.table.read import ScanReport, read_split
from paimon_index.table.write import table_schema

__all__ = ["check_merge_free", "read_primary_key"]


def _merge_free(table: Any, plan: Plan) -> bool:
    options = check_table(table)
    level0 = plan.level0()
    if not level0:
        return True
    if parse_bool(options.get(MERGE_ON_READ, "false"), MERGE_ON_READ):
        return False
    raise PrimaryKeyTableError(f"the table has {len(level0)} level-0 files, which a merge-free read does "
                               f"not see: write through upsert_arrow, run compact(), or set "
                               f"'{MERGE_ON_READ}' = 'true'")


def check_merge_free(table: Any) -> bool:
    """True when a merge-free read sees everything; False when level-0 files need merge-on-read.

    Raises PrimaryKeyTableError when level-0 files exist and merge-on-read is not enabled.
    """
    return _merge_free(table, plan_snapshot(table, read_snapshot(table), vectors=False))


def read_primary_key(table: Any, predicate: Predicate | str) -> tuple[pa.Table, ScanReport]:
    """Read the rows matching ``predicate``, all from one snapshot (the pinned one, else the latest)."""
    schema = table_schema(table)
    bound = bind_predicate(predicate, schema) if isinstance(predicate, str) else predicate
    columns = user_columns(table)
    snapshot = read_snapshot(table)
    if not _merge_free(table, plan_snapshot(table, snapshot, vectors=False)):
        return _merge_read(table, plan_snapshot(table, snapshot), bound, schema, columns)
    report = ScanReport()
    if snapshot is None:
        return pa.schema(arrow_fields(table)).empty_table(), report
    pinned = table.copy({"scan.snapshot-id": str(snapshot.id)})
    batches = [b.select(columns) for split in pinned.new_read_builder().new_scan().plan().splits()
               for b in read_split(split, bound, schema, io=TableIO.of(table), report=report)]
    if not batches:
        return pa.schema(arrow_fields(table)).empty_table(), report
    return pa.Table.from_batches(batches), report


def _merge_read(table: Any, plan: Plan, bound: Predicate, schema: Mapping[str, Any],
                columns: list[str]) -> tuple[pa.Table, ScanReport]:
    """Merge-on-read (``deletion-vectors.merge-on-read``): every file, newest version of each key."""
    from paimon_index.arrow_filter import to_arrow_expression

    report = ScanReport()
    parts = []
    for bucket in plan.buckets.values():
        dvs = maintainer(plan, bucket)
        for meta in bucket.files:
            report.files_planned += 1
            report.rows_planned += meta.row_count
            parts.append(live_rows(meta, dvs, [SEQUENCE_COLUMN, VALUE_KIND_COLUMN, *columns], io=plan.io)
                         .drop_columns([POSITION]))
    if not parts:
        return pa.schema(arrow_fields(table)).empty_table(), report
    rows = pa.concat_tables(parts, promote_options="permissive").sort_by([(SEQUENCE_COLUMN, "ascending")])
    report.rows_read = rows.num_rows
    newest = last_per_key(rows, list(table.primary_keys))
    live = pc.invert(pc.is_in(newest[VALUE_KIND_COLUMN], pa.array(DELETING_VALUE_KINDS, pa.int8())))
    result = newest.filter(live).select(columns).filter(to_arrow_expression(bound, schema))
    report.rows_returned = result.num_rows
    return result, report
