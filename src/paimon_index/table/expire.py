"""Snapshot expiry: keep the last N snapshots and delete every file only older snapshots used.

    expire_snapshots(table, retain_last=N) -> ExpireResult

What a snapshot references: its manifest lists (base, delta, changelog), the manifest files they
list, its index manifest, the live data files of its plan with their extra files (``.index`` file
indexes), and the index files (deletion vectors, HASH) of its index manifest. The files referenced
by an expired snapshot and by no retained one are deleted, then the expired snapshot files
themselves, oldest first, and the ``EARLIEST`` hint is moved — the order Paimon uses, so a reader
that still sees an old snapshot id finds it gone rather than half-deleted. Files that no snapshot
ever referenced (left by a failed job) are not touched here: that is orphan cleaning's job, which
needs an age threshold to stay clear of running writers.

pypaimon internals used: ``snapshot_manager().get_snapshot_by_id/get_snapshot_path``,
``ManifestListManager(table).read``, ``IndexFileHandler(table).scan``, ``table.copy`` with
``scan.snapshot-id`` and ``new_scan().plan_for_write()`` (all files, level 0 included).
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Any

from paimon_index.errors import InvalidOptionError

__all__ = ["ExpireResult", "expire_snapshots", "referenced_files"]

EARLIEST_HINT = "EARLIEST"


@dataclass
class ExpireResult:
    expired_snapshots: list[int] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def referenced_files(table: Any, snapshot: Any) -> set[str]:
    """Every file (absolute local path) that ``snapshot`` needs."""
    from pypaimon.index.index_file_handler import IndexFileHandler
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    root = _local(str(table.table_path))
    manifest_dir = posixpath.join(root, "manifest")
    index_dir = _local(str(table.path_factory().index_path()))
    files: set[str] = set()
    lists = ManifestListManager(table)
    for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.changelog_manifest_list):
        if name:
            files.add(posixpath.join(manifest_dir, name))
            files.update(posixpath.join(manifest_dir, m.file_name) for m in lists.read(name))
    if snapshot.index_manifest:
        files.add(posixpath.join(manifest_dir, snapshot.index_manifest))
        for entry in IndexFileHandler(table).scan(snapshot):
            meta = entry.index_file
            external = meta.external_path
            files.add(_local(external) if external else posixpath.join(index_dir, meta.file_name))
    if snapshot.statistics:
        files.add(posixpath.join(root, "statistics", snapshot.statistics))
    pinned = table.copy({"scan.snapshot-id": str(snapshot.id)})
    for split in pinned.new_read_builder().new_scan().plan_for_write().splits():
        for meta in split.files:
            path = _local(meta.file_path)
            files.add(path)
            files.update(posixpath.join(posixpath.dirname(path), extra) for extra in meta.extra_files or ())
    return files


def expire_snapshots(table: Any, *, retain_last: int) -> ExpireResult:
    """Keep the newest ``retain_last`` snapshots (>= 1); delete what only older ones used."""
    if retain_last < 1:
        raise InvalidOptionError(f"retain_last must be at least 1, got {retain_last}")
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    result = ExpireResult()
    if latest is None:
        return result
    ids = sorted(s.id for s in manager.list_snapshots())
    keep = [i for i in ids if i > latest.id - retain_last]
    expire = [i for i in ids if i <= latest.id - retain_last]
    if not expire:
        return result
    retained: set[str] = set()
    for snapshot_id in keep:
        retained |= referenced_files(table, manager.get_snapshot_by_id(snapshot_id))
    doomed: set[str] = set()
    for snapshot_id in expire:
        doomed |= referenced_files(table, manager.get_snapshot_by_id(snapshot_id)) - retained
    for path in sorted(doomed):
        if os.path.exists(path):
            os.remove(path)
            result.deleted_files.append(path)
    snapshot_dir = None
    for snapshot_id in expire:
        path = _local(manager.get_snapshot_path(snapshot_id))
        snapshot_dir = posixpath.dirname(path)
        if os.path.exists(path):
            os.remove(path)
        result.expired_snapshots.append(snapshot_id)
    if snapshot_dir is not None:
        hint = posixpath.join(snapshot_dir, EARLIEST_HINT)
        with open(hint + ".tmp", "w", encoding="utf-8") as out:
            out.write(str(keep[0]))
        os.replace(hint + ".tmp", hint)
    return result
