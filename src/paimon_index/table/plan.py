"""One pinned-snapshot plan: what every (partition, bucket) of one snapshot holds.

    plan = plan_snapshot(table)                     # the latest snapshot (None: empty table)
    plan = plan_snapshot(table, snapshot_id=5, for_write=True)
    plan.snapshot / plan.snapshot_id                # the pinned snapshot: the commit's only base
    plan.buckets[(partition_values, bucket)] -> BucketFiles(files, deletion_files, dv_entries)
    plan.splits                                     # pypaimon's splits of that snapshot

Row-level changes (``row_level``) and index rewrites (``rewrite``) plan here, then commit through
a :class:`~paimon_index.table.transaction.Transaction` on ``plan.snapshot``: planning and
committing see the same snapshot, never "the latest" twice.

``for_write``: list every file as a *writer* sees it (all levels, primary-key level-0 files
included: pypaimon's ``plan_for_write``); otherwise as a reader does (``plan``: merge-free level
files with their deletion files).

``BucketFiles.dv_entries`` are the bucket's ``DELETION_VECTORS`` index-manifest entries.
``live_dv_entries`` keeps only vectors whose data file is still in the bucket — a vector of a
file the snapshot no longer holds must never be restored and committed again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from paimon_index.table.paimon import (
    DELETION_VECTORS,
    PaimonTable,
    Snapshot,
    index_entries,
    pinned_current,
    snapshot_by_id,
)
from paimon_index.table.paimon import (
    latest_snapshot as _latest,
)

__all__ = ["DV_BITMAP64", "DV_ENABLED", "BucketFiles", "BucketKey", "SnapshotPlan", "plan_snapshot"]

#: Table options of deletion vectors (Paimon's names): on, and 64-bit vectors.
DV_ENABLED = "deletion-vectors.enabled"
DV_BITMAP64 = "deletion-vectors.bitmap64"

#: (partition values, bucket)
BucketKey = tuple[tuple[Any, ...], int]


@dataclass(frozen=True)
class BucketFiles:
    """One bucket of the pinned snapshot."""

    partition: tuple[Any, ...]
    partition_row: Any  # pypaimon GenericRow, as commit messages and index entries carry it
    bucket: int
    files: tuple[Any, ...] = ()  # DataFileMeta
    deletion_files: Mapping[str, Any] = field(default_factory=dict)  # data file name -> DeletionFile
    dv_entries: tuple[Any, ...] = ()  # IndexManifestEntry of type DELETION_VECTORS

    @property
    def file_names(self) -> frozenset[str]:
        return frozenset(meta.file_name for meta in self.files)

    def live_dv_entries(self) -> tuple[Any, ...]:
        """DV entries restricted to vectors of files the bucket still holds (entries left unchanged
        when all their vectors are live; the caller rewrites the rest)."""
        live = self.file_names
        return tuple(e for e in self.dv_entries
                     if not e.index_file.dv_ranges or any(name in live for name in e.index_file.dv_ranges))


@dataclass(frozen=True)
class SnapshotPlan:
    """Every bucket of one snapshot (see the module docstring)."""

    snapshot: Snapshot | None
    buckets: Mapping[BucketKey, BucketFiles]
    splits: tuple[Any, ...] = ()
    #: pypaimon table pinned to the snapshot (reads see exactly this snapshot)
    table: PaimonTable | None = None

    @property
    def snapshot_id(self) -> int | None:
        return None if self.snapshot is None else int(self.snapshot.id)

    def bucket(self, partition: tuple[Any, ...], bucket: int) -> BucketFiles | None:
        return self.buckets.get((tuple(partition), bucket))


def plan_snapshot(table: PaimonTable, snapshot_id: int | None = None, *,
                  for_write: bool = False) -> SnapshotPlan:
    """Pin ``snapshot_id`` (default: the latest) and list each bucket's files, deletion files and
    DV entries. An empty table gives a plan without snapshot or buckets.

    Raises:
        KeyError: ``snapshot_id`` does not exist.
    """
    snapshot = _latest(table) if snapshot_id is None else snapshot_by_id(table, snapshot_id)
    if snapshot is None:
        if snapshot_id is not None:
            raise KeyError(f"snapshot {snapshot_id} does not exist")
        return SnapshotPlan(None, {})
    pinned = pinned_current(table, snapshot.id)  # under table's schema: see pinned_current
    scan = pinned.new_read_builder().new_scan()
    splits = tuple((scan.plan_for_write() if for_write else scan.plan()).splits())
    dv: dict[BucketKey, list[Any]] = {}
    for entry in index_entries(table, snapshot, DELETION_VECTORS):
        dv.setdefault((tuple(entry.partition.values or ()), entry.bucket), []).append(entry)
    collected: dict[BucketKey, dict[str, Any]] = {}
    for split in splits:
        key = (tuple(split.partition.values or ()), split.bucket)
        slot = collected.setdefault(key, {"row": split.partition, "files": {}, "deletions": {}})
        deletions = getattr(split, "data_deletion_files", None) or [None] * len(split.files)
        for meta, deletion in zip(split.files, deletions, strict=True):
            slot["files"][meta.file_name] = meta
            if deletion is not None:
                slot["deletions"][meta.file_name] = deletion
    buckets = {key: BucketFiles(key[0], slot["row"], key[1], tuple(slot["files"].values()),
                                dict(slot["deletions"]), tuple(dv.get(key, ())))
               for key, slot in collected.items()}
    return SnapshotPlan(snapshot, buckets, splits, pinned)
