"""Which files a table's snapshots reference, read with pypaimon's own readers (not the project's
maintenance code), as URIs or local paths — whatever the table names them."""

from __future__ import annotations

import posixpath
from typing import Any


def referenced_files(table: Any, latest_only: bool = False) -> set[str]:
    """Every file some snapshot of ``table`` (or the latest one) needs (snapshot files and hints
    excluded)."""
    from pypaimon.index.index_file_handler import IndexFileHandler
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    root = str(table.table_path)
    manager = table.snapshot_manager()
    manifest_dir = posixpath.join(root, "manifest")
    index_dir = str(table.path_factory().index_path())
    lists = ManifestListManager(table)
    files: set[str] = set()
    listing = table.file_io.list_status(manager.snapshot_dir)
    snapshot_ids = sorted(int(s.base_name.split("-", 1)[1]) for s in listing
                          if s.base_name.startswith("snapshot-"))
    if latest_only:
        snapshot_ids = snapshot_ids[-1:]
    for snapshot_id in snapshot_ids:
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list,
                     snapshot.changelog_manifest_list, snapshot.index_manifest):
            if name:
                files.add(posixpath.join(manifest_dir, name))
        files.update(posixpath.join(manifest_dir, meta.file_name) for meta in lists.read_all(snapshot))
        for entry in IndexFileHandler(table).scan(snapshot):
            meta = entry.index_file
            files.add(meta.external_path or posixpath.join(index_dir, meta.file_name))
        pinned = table.copy({"scan.snapshot-id": str(snapshot.id)})
        for split in pinned.new_read_builder().new_scan().plan_for_write().splits():
            for meta in split.files:
                files.add(meta.file_path)
                folder = posixpath.dirname(meta.file_path)
                files.update(posixpath.join(folder, extra) for extra in meta.extra_files or ())
    return files
