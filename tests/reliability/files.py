"""Which files of a table some snapshot references, computed with pypaimon's own readers.

Independent of the project's maintenance code, so "no orphans left" and "nothing referenced was
deleted" are checked against something we did not write.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from reliability import ops


def table_dir(warehouse: str) -> Path:
    return Path(warehouse) / "db.db" / "t"


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def referenced_files(warehouse: str) -> set[str]:
    """Every file some snapshot of the table needs, plus schema files and snapshot hints."""
    from pypaimon import CatalogFactory
    from pypaimon.index.index_file_handler import IndexFileHandler
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    root = table_dir(warehouse)
    table = CatalogFactory.create({"warehouse": warehouse}).get_table(ops.IDENTIFIER)
    files = {str(p) for p in (root / "schema").glob("schema-*")}
    files |= {str(p) for p in (root / "snapshot").iterdir()}  # snapshot files and hints
    manager = table.snapshot_manager()
    manifest_dir = root / "manifest"
    lists = ManifestListManager(table)
    for path in sorted((root / "snapshot").glob("snapshot-*")):
        snapshot = manager.get_snapshot_by_id(int(path.name.split("-", 1)[1]))
        if snapshot is None:
            continue
        for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list,
                     snapshot.changelog_manifest_list, snapshot.index_manifest):
            if name:
                files.add(str(manifest_dir / name))
        for meta in lists.read_all(snapshot):
            files.add(str(manifest_dir / meta.file_name))
        if snapshot.statistics:
            files.add(str(root / "statistics" / snapshot.statistics))
        for entry in IndexFileHandler(table).scan(snapshot):
            meta = entry.index_file
            where = meta.external_path
            files.add(_local(where) if where else str(root / "index" / meta.file_name))
        pinned = table.copy({"scan.snapshot-id": str(snapshot.id)})
        for split in pinned.new_read_builder().new_scan().plan_for_write().splits():
            for meta in split.files:
                path = _local(meta.file_path)
                files.add(path)
                folder = posixpath.dirname(path)
                files.update(posixpath.join(folder, extra) for extra in meta.extra_files or ())
    return files


def files_on_disk(warehouse: str) -> set[str]:
    return {str(p) for p in table_dir(warehouse).rglob("*") if p.is_file()}


def orphans(warehouse: str) -> set[str]:
    """Files of the table no snapshot references."""
    return files_on_disk(warehouse) - referenced_files(warehouse)


def missing(warehouse: str) -> set[str]:
    """Files some snapshot references that are not on disk (must always be empty)."""
    return referenced_files(warehouse) - files_on_disk(warehouse)


def assert_exactly_referenced(warehouse: str, when: str) -> None:
    """The table's directory holds exactly the files some snapshot references."""
    on_disk, referenced = files_on_disk(warehouse), referenced_files(warehouse)
    assert on_disk == referenced, (f"{when}: orphans {sorted(on_disk - referenced)[:5]}, "
                                   f"missing {sorted(referenced - on_disk)[:5]}")
