"""Reading a deletion-vectors-mode primary-key table.

    read_primary_key(table, predicate) -> (rows, ScanReport)
    check_merge_free(table) -> bool

Merge-free (the normal case): the files of levels >= 1 minus their deletion vectors, through the
one read plan (:func:`paimon_index.table.scan.plan_read`) — no merge, file indexes used. When the
table has level-0 files (plain pypaimon writes) and ``deletion-vectors.merge-on-read`` is on, every
file is read and the newest version of each key (by sequence number) is kept (with a merge engine:
its versions merged in sequence order); without that option
such a table is refused (a merge-free read would miss those rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.predicate import Predicate
from paimon_index.table.paimon import pinned_current, read_snapshot
from paimon_index.table.pk.lookup import last_per_key
from paimon_index.table.pk.merge import ROW_KIND_COLUMN, merge_engine
from paimon_index.table.pk.plan import (
    DELETING_VALUE_KINDS,
    SEQUENCE_COLUMN,
    VALUE_KIND_COLUMN,
    Plan,
    arrow_fields,
    check_merge_free,
    live_current_rows,
    maintainer,
    merge_free,
    plan_snapshot,
    user_columns,
)
from paimon_index.table.read import ScanReport, read_plan
from paimon_index.table.scan import bind_where, plan_read
from paimon_index.table.schemas import read_schema

__all__ = ["check_merge_free", "read_primary_key"]


def read_primary_key(table: Any, predicate: Predicate | str) -> tuple[pa.Table, ScanReport]:
    """Read the rows matching ``predicate``, all from one snapshot (the pinned one, else the latest)."""
    snapshot = read_snapshot(table)
    if not merge_free(table, plan_snapshot(table, snapshot, vectors=False)):
        schema = read_schema(table)
        bound = bind_where(predicate, schema)
        return _merge_read(table, plan_snapshot(table, snapshot), bound, schema, user_columns(table))
    if snapshot is None:
        return pa.schema(arrow_fields(table)).empty_table(), ScanReport()
    # Under ``table``'s schema (the current one, unless ``table`` is time travel already): the
    # latest snapshot may predate a schema change, which commits none.
    pinned = pinned_current(table, snapshot.id)
    plan = plan_read(pinned, predicate, strict=True)
    parts = list(read_plan(plan))
    if not parts:
        return pa.schema(arrow_fields(table)).empty_table(), plan.report
    return pa.concat_tables(parts), plan.report


def _merge_read(table: Any, plan: Plan, bound: Predicate, schema: Mapping[str, Any],
                columns: list[str]) -> tuple[pa.Table, ScanReport]:
    """Merge-on-read (``deletion-vectors.merge-on-read``): every file, newest version of each key."""
    from paimon_index.arrow_filter import filter_rows

    report = ScanReport()
    parts = []
    for bucket in plan.buckets.values():
        dvs = maintainer(plan, bucket)
        for meta in bucket.files:
            report.files_planned += 1
            report.rows_planned += meta.row_count
            # A file of an older schema holds a renamed column under its old name, lacks an added one.
            parts.append(live_current_rows(table, meta, dvs, columns, [SEQUENCE_COLUMN, VALUE_KIND_COLUMN],
                                           io=plan.io, schema=schema))
    if not parts:
        return pa.schema(arrow_fields(table)).empty_table(), report
    rows = pa.concat_tables(parts, promote_options="permissive").sort_by([(SEQUENCE_COLUMN, "ascending")])
    report.rows_read = rows.num_rows
    engine = merge_engine(table)
    if engine is not None:  # partial-update / aggregation: every version of a key merged in order
        kinds = np.array(["+I", "-U", "+U", "-D"], dtype=object)[
            np.clip(rows[VALUE_KIND_COLUMN].to_numpy(), 0, 3)]
        versions = rows.select(columns).append_column(ROW_KIND_COLUMN, pa.array(kinds, pa.string()))
        merged = engine.fold(versions, single_as_is=True)
        kept = merged.filter(pc.is_in(merged[ROW_KIND_COLUMN], pa.array(["+I", "+U"]))).select(columns)
        result = filter_rows(kept, bound, schema)
        report.rows_returned = result.num_rows
        return result, report
    newest = last_per_key(rows, list(table.primary_keys))
    live = pc.invert(pc.is_in(newest[VALUE_KIND_COLUMN], pa.array(DELETING_VALUE_KINDS, pa.int8())))
    result = filter_rows(newest.filter(live).select(columns), bound, schema)
    report.rows_returned = result.num_rows
    return result, report
