"""Compaction of a deletion-vectors-mode primary-key table, and switching the mode.

    compact(table, full=False, threshold=0.5) -> snapshot id | None
    set_deletion_vectors(warehouse, identifier, enabled) -> table

``compact`` rewrites the files whose deleted fraction exceeds ``threshold`` (seed 004 §5.1, default
50%) without their deleted rows, at their level, and drops their vectors; ``full=True`` rewrites
each bucket into one file at the top level with no vectors. Level-0 files of plain pypaimon writes
are folded in first (an empty upsert, its own snapshot). The compaction itself is planned on one
pinned snapshot and committed exactly on it: when an upsert lands in between, the compaction fails
with ConcurrentChangeError and deletes what it wrote — it never brings overwritten values back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paimon_index.errors import ConcurrentChangeError, InvalidOptionError, PrimaryKeyTableError
from paimon_index.table.paimon import CommitMessage
from paimon_index.table.pk.commit import begin, written_paths
from paimon_index.table.pk.levels import rewrite
from paimon_index.table.pk.plan import (
    DEFAULT_COMPACTION_THRESHOLD,
    Plan,
    arrow_fields,
    check_table,
    maintainer,
    max_level,
    plan_snapshot,
)
from paimon_index.table.plan import DV_ENABLED

__all__ = ["compact", "set_deletion_vectors"]

_COMPACT = "compact"


def compact(table: Any, *, full: bool = False, threshold: float = DEFAULT_COMPACTION_THRESHOLD) -> int | None:
    """Rewrite files whose deleted fraction exceeds ``threshold`` (or everything); one snapshot.

    Raises:
        ConcurrentChangeError: another snapshot landed after the compaction planned; nothing applied.
    """
    from paimon_index.table.pk.upsert import upsert_arrow

    options = check_table(table)
    if not 0.0 <= threshold <= 1.0:
        raise InvalidOptionError(f"compaction threshold {threshold} outside [0, 1]")
    with begin(table, _COMPACT) as txn:
        plan = plan_snapshot(table, txn.snapshot)
        if not plan.level0():
            return _compact_on(table, txn, plan, full, threshold, max_level(options))
    # Fold level-0 files first: an empty upsert does exactly that.
    import pyarrow as pa

    upsert_arrow(table, pa.schema(arrow_fields(table)).empty_table())
    with begin(table, _COMPACT) as txn:
        plan = plan_snapshot(table, txn.snapshot)
        if plan.level0():
            raise ConcurrentChangeError("level-0 files were written while compacting; run it again")
        return _compact_on(table, txn, plan, full, threshold, max_level(options))


def _compact_on(table: Any, txn: Any, plan: Plan, full: bool, threshold: float, top: int) -> int | None:
    for (partition, bucket_id), bucket in sorted(plan.buckets.items(), key=repr):
        dvs = maintainer(plan, bucket)
        if full:
            picked = list(bucket.files)
        else:
            picked = []
            for meta in bucket.files:
                vector = dvs.deletion_vector_of(meta.file_name)
                if vector is not None and meta.row_count and vector.cardinality / meta.row_count > threshold:
                    picked.append(meta)
        done = full and len(picked) == 1 and dvs.deletion_vector_of(picked[0].file_name) is None \
            and picked[0].level == top
        if done:
            picked = []
        placed: list[Any] = []
        removed: list[Any] = []
        if full and picked:
            placed, removed = rewrite(table, dvs, picked, top)
        else:
            for meta in picked:
                new, gone = rewrite(table, dvs, [meta], meta.level)
                placed += new
                removed += gone
        txn.track(*written_paths([], plan.index_dir, placed))
        # Also commits a bucket whose index held vectors of files no longer live (restore dropped them).
        dv = dvs.prepare_commit()
        stored = dv.write_to(plan.index_dir, write=plan.io.write_new)
        if stored is not None:
            txn.track(stored)
        if placed or removed or not dv.is_empty:
            txn.stage(CommitMessage(partition=partition, bucket=bucket_id, new_files=placed,
                                    deleted_files=removed, index_adds=list(dv.added),
                                    index_deletes=list(dv.deleted)))
    return txn.commit()


def set_deletion_vectors(warehouse: str, identifier: str, enabled: bool, *,
                         catalog_options: Mapping[str, str] | None = None) -> Any:
    """Turn deletion-vectors mode on or off; only after a full compaction (seed 004, compatibility)."""
    from paimon_index.table.catalog import alter_table_options, open_table

    table = open_table(warehouse, identifier, catalog_options=catalog_options)
    plan = plan_snapshot(table, table.snapshot_manager().get_latest_snapshot())
    files = [m for b in plan.buckets.values() for m in b.files]
    vectors = [e for b in plan.buckets.values() for e in b.dv_entries]
    fully_compacted = all(len(b.files) <= 1 and not b.dv_entries for b in plan.buckets.values())
    if files and not fully_compacted:
        raise PrimaryKeyTableError(
            f"switching deletion-vectors mode {'on' if enabled else 'off'} needs a full compaction first: "
            f"{len(files)} data files, {len(vectors)} deletion-vector index files "
            "(run compact(table, full=True))")
    return alter_table_options(warehouse, identifier, set_options={DV_ENABLED: str(enabled).lower()},
                               catalog_options=catalog_options, dv_switch_checked=True)
