"""The pypaimon boundary: only ``table/paimon.py`` imports pypaimon, and every pypaimon symbol it uses
exists with the shape it assumes — so a pypaimon upgrade fails here, in one named place."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

import paimon_index

PACKAGE = Path(paimon_index.__file__).parent
BOUNDARY = "table/paimon.py"
#: Modules not yet migrated onto ``table/paimon.py``. This list must only shrink.
NOT_YET_MIGRATED = frozenset({
    "bucket/hash_index.py",
    "deletionvectors/index_file.py",
    "deletionvectors/maintainer.py",
    "spark/datasource.py",
    "table/catalog.py",
})


def _pypaimon_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "pypaimon"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pypaimon":
            found.add(node.module)
    return found


def test_only_the_boundary_module_imports_pypaimon() -> None:
    importing = {path.relative_to(PACKAGE).as_posix()
                 for path in PACKAGE.rglob("*.py") if _pypaimon_imports(path)}
    assert BOUNDARY in importing
    unexpected = importing - NOT_YET_MIGRATED - {BOUNDARY}
    assert not unexpected, f"import pypaimon only in {BOUNDARY}; these modules do: {sorted(unexpected)}"
    migrated = NOT_YET_MIGRATED - importing
    assert not migrated, f"remove {sorted(migrated)} from NOT_YET_MIGRATED: they no longer import pypaimon"


def _has_fields(cls: type, *names: str) -> None:
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    missing = [n for n in names if n not in fields and not hasattr(cls, n)]
    assert not missing, f"{cls.__module__}.{cls.__qualname__} lacks {missing}"


def _params(function: object, *names: str) -> None:
    params = list(inspect.signature(function).parameters)  # type: ignore[arg-type]
    missing = [n for n in names if n not in params]
    assert not missing, f"{function} lacks parameters {missing} (has {params})"


def test_the_commit_hooks_still_hold() -> None:
    """The exact commit relies on how ``FileStoreCommit`` picks its base, retries and overwrites."""
    from pypaimon.write.file_store_commit import FileStoreCommit

    try_commit = inspect.getsource(FileStoreCommit._try_commit)
    # the base of every attempt: what PinnedSnapshotManager answers
    assert "self.snapshot_manager.get_latest_snapshot()" in try_commit
    # one attempt when commit_max_retries is 0
    assert "retry_count >= self.commit_max_retries" in try_commit
    once = inspect.getsource(FileStoreCommit._try_commit_once)
    assert "latest_snapshot.id + 1 if latest_snapshot else 1" in once
    assert "self.snapshot_commit.commit(" in once
    overwrite = inspect.getsource(FileStoreCommit.overwrite)
    assert "self._overwrite_hash_index_deletes(" in overwrite
    _params(FileStoreCommit.__init__, "snapshot_commit", "table", "commit_user")
    _params(FileStoreCommit.commit, "commit_messages", "commit_identifier")
    _params(FileStoreCommit.overwrite, "overwrite_partition", "commit_messages", "commit_identifier")
    _params(FileStoreCommit._overwrite_hash_index_deletes, "partition_filter", "deletes")
    _params(FileStoreCommit._clean_up_tmp_manifests, "base_manifest_list", "delta_manifest_list",
            "changelog_manifest_list", "index_manifest")
    assert callable(FileStoreCommit.close)
    # commit_compact (a COMPACT snapshot): pypaimon's own entries, committed through _try_commit
    _params(FileStoreCommit._try_commit, "commit_kind", "commit_identifier", "commit_entries_plan",
            "detect_conflicts", "index_deletes", "index_adds")
    _params(FileStoreCommit._collect_manifest_entries, "commit_messages")
    assert "_row_id_check_from_snapshot" in inspect.getsource(FileStoreCommit.commit)


def test_every_pypaimon_symbol_the_boundary_uses() -> None:
    from pypaimon.common.json_util import JSON
    from pypaimon.index.index_file_handler import IndexFileHandler
    from pypaimon.index.index_file_meta import IndexFileMeta
    from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.manifest.schema.data_file_meta import DataFileMeta
    from pypaimon.schema.data_types import PyarrowFieldParser
    from pypaimon.snapshot.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
    from pypaimon.snapshot.snapshot_commit import SnapshotCommit
    from pypaimon.snapshot.snapshot_manager import SnapshotManager
    from pypaimon.utils.file_store_path_factory import FileStorePathFactory
    from pypaimon.write.commit_message import CommitMessage

    from paimon_index.table import paimon

    assert BATCH_COMMIT_IDENTIFIER == 2**63 - 1
    assert callable(JSON.to_json)
    _params(SnapshotCommit.commit, "base_snapshot_uuid", "snapshot", "statistics")
    _has_fields(Snapshot, "id", "commit_user", "index_manifest", "base_manifest_list", "delta_manifest_list",
                "changelog_manifest_list")
    _has_fields(CommitMessage, "partition", "bucket", "new_files", "deleted_files", "index_adds",
                "index_deletes", "changelog_files", "is_empty")
    _has_fields(DataFileMeta, "file_name", "file_path", "external_path", "extra_files", "embedded_index",
                "level", "row_count", "collect_files", "aligned_file_path", "physical_path")
    _has_fields(IndexManifestEntry, "kind", "partition", "bucket", "index_file")
    _has_fields(IndexFileMeta, "index_type", "file_name", "external_path", "dv_ranges")
    _params(IndexManifestEntry.__init__, "kind", "partition", "bucket", "index_file")
    _params(IndexFileHandler.scan, "snapshot")
    _params(ManifestFileManager.read, "manifest_file_name")
    _params(ManifestListManager.read_all, "snapshot")
    assert callable(PyarrowFieldParser.from_paimon_schema)
    _params(FileStorePathFactory.bucket_index_path, "partition", "bucket", "index_file", "file_io")
    for name in ("get_latest_snapshot", "get_snapshot_by_id", "get_snapshot_path"):
        assert callable(getattr(SnapshotManager, name)), name
    assert paimon.DELETION_VECTORS == "DELETION_VECTORS" and paimon.HASH == "HASH"


def test_the_file_io_and_table_surface(tmp_path: Path) -> None:
    import pyarrow as pa

    from paimon_index.table.catalog import create_table

    table = create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64())]), options={"bucket": "-1"})
    for name in ("exists", "delete_quietly", "try_to_write_atomic", "write_file", "to_filesystem_path",
                 "new_output_stream"):
        assert callable(getattr(table.file_io, name)), name
    assert type(table.file_io).__name__ == "LocalFileIO"  # ExclusiveSnapshotCommit's local path
    assert table.snapshot_manager().latest_file.endswith("/LATEST")
    for name in ("copy", "new_batch_write_builder", "new_read_builder", "snapshot_manager", "path_factory",
                 "new_snapshot_commit"):
        assert callable(getattr(table, name)), name
    assert table.copy({"scan.snapshot-id": "1"}).options.options.to_map()["scan.snapshot-id"] == "1"


@pytest.mark.parametrize("module", sorted(NOT_YET_MIGRATED))
def test_allow_listed_modules_exist(module: str) -> None:
    assert (PACKAGE / module).exists()


def test_real_pypaimon_objects_fit_the_typed_views(tmp_path: Path) -> None:
    import pyarrow as pa

    from paimon_index.table import paimon
    from paimon_index.table.catalog import create_table
    from paimon_index.table.row_level import delete_arrow
    from paimon_index.table.transaction import Transaction
    from paimon_index.table.write import write_arrow, write_files

    table = create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64())]),
                         options={"bucket": "-1", "deletion-vectors.enabled": "true"})
    write_arrow(table, pa.table({"id": [1, 2, 3]}))
    delete_arrow(table, "id = 2")
    assert isinstance(table, paimon.PaimonTable)
    snapshot = paimon.latest_snapshot(table)
    assert isinstance(snapshot, paimon.SnapshotView)
    (split,) = table.new_read_builder().new_scan().plan().splits()
    assert isinstance(split, paimon.Split) and split.data_deletion_files
    assert all(isinstance(meta, paimon.DataFile) for meta in split.files)
    (entry,) = paimon.index_entries(table, snapshot, paimon.DELETION_VECTORS)
    assert isinstance(entry, paimon.IndexEntry) and entry.index_file.dv_ranges
    messages = write_files(table, pa.table({"id": [4]}))
    assert messages and all(isinstance(m, paimon.Message) for m in messages)
    txn = Transaction(table, snapshot)
    txn.stage(messages)
    txn.abort()


def test_the_key_value_write_hooks_still_hold() -> None:
    """``vectorize_key_value_write`` replaces two per-row loops; they must still be what it replaces."""
    from pypaimon.read.reader.deduplicate_merge_function import DeduplicateMergeFunction
    from pypaimon.write.file_store_write import FileStoreWrite
    from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor, RowKeyExtractor
    from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

    groups = inspect.getsource(RowKeyExtractor.extract_partition_bucket_groups)
    assert "self._extract_buckets_batch(data)" in groups
    assert "_bucket_from_hash" in inspect.getsource(FixedBucketRowKeyExtractor._extract_buckets_batch)
    init = inspect.getsource(FixedBucketRowKeyExtractor.__init__)
    assert "self._bucket_key_fields" in init and "self.num_buckets" in init
    flush = inspect.getsource(KeyValueDataWriter._flush_all)
    assert "self._sort_by_primary_key(pending)" in flush and "self._merge_pending_by_pk(sorted_data)" in flush
    assert "self._merge_function" in inspect.getsource(KeyValueDataWriter.__init__)
    assert "trimmed_primary_keys" in inspect.getsource(KeyValueDataWriter._merge_pending_by_pk)
    assert callable(FileStoreWrite._create_data_writer)
    from pypaimon.write.table_write import TableWrite

    # value_kinds_from: the extra kind column passes pypaimon's schema check by this hook
    assert "self._validate_pyarrow_schema(data.schema)" in inspect.getsource(TableWrite.write_arrow)
    system = inspect.getsource(KeyValueDataWriter._add_system_fields)
    for part in ("self.sequence_generator.next() for _ in range(num_rows)", "'_SEQUENCE_NUMBER'",
                 "'_VALUE_KIND'", "row_kinds(self.options, data)", "f'_KEY_{pk_key}'"):
        assert part in system, part
    assert callable(DeduplicateMergeFunction.get_result)
