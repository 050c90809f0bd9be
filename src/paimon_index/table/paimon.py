"""The one module that touches pypaimon: typed views and the few operations the table layer needs.

Everything else in :mod:`paimon_index.table` calls the functions here instead of reaching into
pypaimon, so a pypaimon upgrade breaks in one named place (``tests/table/test_boundaries.py``
touches every pypaimon symbol used below and an AST scan keeps other modules from importing
pypaimon; the modules not yet migrated are an explicit allow-list there).

What is used, and why
---------------------
* ``FileStoreCommit`` (``write/file_store_commit.py``) is constructed directly, not through
  ``BatchTableCommit``: the table commit may take pypaimon's native commit path, which would
  bypass the two hooks below.
* **Pinned base**: ``FileStoreCommit._try_commit`` reads ``self.snapshot_manager
  .get_latest_snapshot()`` as the base of every attempt. :class:`PinnedSnapshotManager` answers
  with the planned snapshot, so the commit is built on exactly that snapshot; with
  ``commit_max_retries = 0`` there is one attempt only.
* **Exclusive snapshot file**: pypaimon's local ``rename`` checks "target exists" and then
  renames under a *thread* lock, so two processes can both "succeed" and the second snapshot file
  silently replaces the first (the first writer's rows vanish); on an object store its rename is a
  copy and a delete, so two writers can both "win" there too. :class:`ExclusiveSnapshotCommit`
  publishes ``snapshot-<id>`` with an atomic create-if-absent (``os.link`` locally, a conditional
  PUT on S3: :meth:`paimon_index.table.fileio.TableIO.create_exclusive`) and refuses stores that
  have none; a catalog that commits snapshots itself (REST) is deferred to. A refused attempt's
  manifest files are deleted (pypaimon leaves them).
* **Overwrite deletes deletion vectors**: ``FileStoreCommit._overwrite_hash_index_deletes`` is the
  one place an overwrite collects index entries to drop; pypaimon drops only HASH entries, so the
  DV entries of the replaced files survived and every later DELETE/UPDATE restored vectors of
  files the snapshot no longer has. :func:`overwrite_index_deletes` adds the DV entries of the
  overwritten partitions (as Paimon's Java overwrite does).
* **Cached manifest entries**: :func:`cached_manifest_reads` replaces one scan's
  ``ManifestFileManager.read_entries_parallel`` so each manifest file is decoded once per process
  (:mod:`paimon_index.table.metacache`): its entries are kept unfiltered, with statistics, and every
  scan applies its own filters (bucket, partition, ``_filter_manifest_entry``) and drops the
  statistics on fresh copies, then merges ADD and DELETE entries as pypaimon does. Row-range
  reads (data-evolution tables) go to pypaimon's own reader.
* **Vectorized key-value writes**: :func:`vectorize_key_value_write` replaces two per-row Python
  loops of one table write (90% of a primary-key load's time): the fixed-bucket extractor's
  ``_extract_buckets_batch`` (one ``GenericRow`` serialized and hashed per row) by
  :func:`~paimon_index.bucket.hash_index.key_hashes` over the bucket-key columns and Java's
  ``Math.abs(hash % buckets)``; and, for the ``deduplicate`` merge function, the key-value data
  writer's ``_merge_pending_by_pk`` (a ``to_pydict`` round trip per row) by a check that the sorted
  keys are already distinct — the rows this package writes hold one row per key, on which
  deduplicate is the identity. Where keys repeat, pypaimon's fold runs unchanged. Its
  ``_add_system_fields`` takes its sequence numbers as one NumPy range instead of one generator
  call per row.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pypaimon.common.options.config as pypaimon_config
from pypaimon.catalog.catalog_exception import CatalogException, TableAlreadyExistException
from pypaimon.common.json_util import JSON
from pypaimon.common.options.config_option import ConfigOption
from pypaimon.index.deletion_vector_meta import DeletionVectorMeta
from pypaimon.index.index_file_handler import IndexFileHandler
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.manifest.schema.simple_stats import SimpleStats
from pypaimon.read.reader.deduplicate_merge_function import DeduplicateMergeFunction
from pypaimon.schema.data_types import PyarrowFieldParser
from pypaimon.schema.schema_change import Move, SchemaChange
from pypaimon.snapshot.renaming_snapshot_commit import RenamingSnapshotCommit
from pypaimon.snapshot.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from pypaimon.snapshot.snapshot_commit import SnapshotCommit
from pypaimon.table.row.generic_row import GenericRow
from pypaimon.table.system import system_table_loader
from pypaimon.utils.file_store_path_factory import canonical_data_file_path
from pypaimon.write.commit_message import CommitMessage
from pypaimon.write.file_store_commit import FileStoreCommit
from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor
from pypaimon.write.row_kind import row_kinds

from paimon_index.bucket.hash_index import key_hashes
from paimon_index.errors import NoAtomicCreateError, TableError
from paimon_index.table.fileio import TableIO
from paimon_index.table.metacache import MANIFEST_WEIGHT_FACTOR, metadata_cache

__all__ = [
    "BATCH_COMMIT_IDENTIFIER",
    "DELETING_VALUE_KINDS",
    "DELETION_VECTORS",
    "HASH",
    "JSON",
    "VALUE_KIND_INPUT",
    "CatalogException",
    "CommitMessage",
    "ConfigOption",
    "DataFile",
    "DeletedEntry",
    "ExclusiveSnapshotCommit",
    "GenericRow",
    "IndexEntry",
    "IndexFileHandler",
    "IndexManifestEntry",
    "LiveFile",
    "ManifestFileManager",
    "ManifestListManager",
    "Message",
    "Move",
    "PaimonTable",
    "PinnedSnapshotManager",
    "PyarrowFieldParser",
    "SchemaChange",
    "SimpleStats",
    "Snapshot",
    "SnapshotView",
    "Split",
    "TableAlreadyExistException",
    "arrow_schema",
    "bucket_number",
    "cached_manifest_reads",
    "canonical_data_file_path",
    "check_snapshot_store",
    "commit_compact",
    "count_deleted_rows",
    "deleted_entries",
    "delta_file_counts",
    "index_entries",
    "index_file_path",
    "index_manifest_entry",
    "latest_snapshot",
    "live_files",
    "message_written_files",
    "new_file_store_commit",
    "null_partitions_restored",
    "overwrite_index_deletes",
    "partition_row",
    "pinned_current",
    "pinned_table",
    "pypaimon_config",
    "row_key_extractor",
    "schema_after",
    "snapshot_by_id",
    "snapshot_exists",
    "system_table_loader",
    "table_name",
    "table_options",
    "value_kinds_from",
    "vectorize_key_value_write",
    "write_changelog_file",
]

log = logging.getLogger(__name__)

#: Index types of Paimon's index manifest.
DELETION_VECTORS = "DELETION_VECTORS"
HASH = "HASH"
#: ``IndexManifestEntry.kind`` / ``ManifestEntry.kind`` of a removal.
KIND_DELETE = 1
#: ``ManifestEntry.kind`` of an addition.
KIND_ADD = 0
#: pypaimon option pinning a scan to one snapshot.
SCAN_SNAPSHOT_ID = "scan.snapshot-id"
#: Table option: the number of buckets; ``-1`` (its default) is dynamic buckets on a primary-key
#: table and no buckets (unaware) on an append table, ``-2`` Paimon's postponed buckets.
BUCKET = "bucket"
DYNAMIC_BUCKET = -1


def table_options(table: Any) -> dict[str, str]:
    """The table's options as a plain map."""
    return dict(table.options.options.to_map())


def bucket_key_names(table: Any) -> list[str]:
    """The columns a fixed-bucket table's bucket is hashed from: ``bucket-key``, else the trimmed
    primary key (pypaimon's ``TableSchema.bucket_keys``, Java's ``TableSchema.bucketKeys``)."""
    return list(table.table_schema.bucket_keys)


def bucket_number(table: Any) -> int:
    """The table's ``bucket`` option (> 0: fixed buckets; see :data:`BUCKET`).

    Raises:
        InvalidOptionError: not an integer >= -2.
    """
    from paimon_index.fileindex.options import parse_int

    return parse_int(table_options(table).get(BUCKET, str(DYNAMIC_BUCKET)), BUCKET, minimum=-2)


def table_name(table: Any) -> str:
    """``database.table`` of a pypaimon table, for messages."""
    identifier = getattr(table, "identifier", None)
    if identifier is None:
        return "?"
    full = getattr(identifier, "get_full_name", None)
    return str(full() if callable(full) else identifier)


# typed views ----------------------------------------------------------------------------------------
# What the table layer uses of pypaimon's objects, as Protocols: annotate with these instead of Any
# (tests/table/test_boundaries.py checks pypaimon's classes still have every attribute listed).

@runtime_checkable
class DataFile(Protocol):
    """pypaimon ``DataFileMeta``: one data file of a manifest entry."""

    file_name: str
    file_path: str | None
    external_path: str | None
    file_size: int
    row_count: int
    level: int
    schema_id: int
    extra_files: list[str]
    embedded_index: bytes | None

    def collect_files(self, bucket_path: str | None = None) -> list[str]: ...
    def aligned_file_path(self, file_name: str, bucket_path: str | None = None) -> str: ...


@runtime_checkable
class Split(Protocol):
    """pypaimon ``DataSplit``: the files of one (partition, bucket) a scan planned."""

    partition: Any  # GenericRow (``.values``)
    bucket: int
    files: list[Any]  # DataFile
    data_deletion_files: list[Any] | None  # DeletionFile (dv_index_path, offset, length) per file


@runtime_checkable
class IndexEntry(Protocol):
    """pypaimon ``IndexManifestEntry``: an index file (DV, HASH) added to or removed from a bucket."""

    kind: int
    partition: Any  # GenericRow
    bucket: int
    index_file: Any  # IndexFileMeta (index_type, file_name, external_path, dv_ranges)


@runtime_checkable
class Message(Protocol):
    """pypaimon ``CommitMessage``: one bucket's changes of one commit."""

    partition: tuple[Any, ...]
    bucket: int
    new_files: list[Any]
    deleted_files: list[Any]
    index_adds: list[Any]
    index_deletes: list[Any]
    changelog_files: list[Any]

    def is_empty(self) -> bool: ...


@runtime_checkable
class SnapshotView(Protocol):
    """pypaimon ``Snapshot``: what a commit and a plan read of one."""

    id: int
    commit_user: str
    index_manifest: str | None
    base_manifest_list: str
    delta_manifest_list: str
    changelog_manifest_list: str | None


@runtime_checkable
class PaimonTable(Protocol):
    """pypaimon ``FileStoreTable``: the members the table layer calls."""

    identifier: Any
    file_io: Any
    partition_keys: list[str]
    primary_keys: list[str]
    is_primary_key_table: bool
    table_schema: Any
    schema_manager: Any
    fields: Any
    options: Any

    def copy(self, dynamic_options: dict[str, str]) -> Any: ...
    def snapshot_manager(self) -> Any: ...
    def path_factory(self) -> Any: ...
    def new_read_builder(self) -> Any: ...
    def new_batch_write_builder(self) -> Any: ...


# snapshots ----------------------------------------------------------------------------------------

def latest_snapshot(table: Any) -> Snapshot | None:
    """The table's latest snapshot (None for a table without one)."""
    return table.snapshot_manager().get_latest_snapshot()


def snapshot_by_id(table: Any, snapshot_id: int) -> Snapshot | None:
    """Snapshot ``snapshot_id`` (None when it does not exist or was expired)."""
    manager = table.snapshot_manager()
    if not table.file_io.exists(manager.get_snapshot_path(snapshot_id)):
        return None
    return manager.get_snapshot_by_id(snapshot_id)


def snapshot_exists(table: Any, snapshot_id: int) -> bool:
    return bool(table.file_io.exists(table.snapshot_manager().get_snapshot_path(snapshot_id)))


def pinned_table(table: Any, snapshot_id: int) -> Any:
    """The table read as of ``snapshot_id`` (scans plan that snapshot, not the latest), under that
    snapshot's schema: time travel, as Java reads it."""
    return table.copy({SCAN_SNAPSHOT_ID: str(snapshot_id)})


def schema_after(table: Any, changes: list[Any]) -> Any:
    """The ``TableSchema`` pypaimon's schema manager would commit for ``changes`` (``SchemaChange``
    objects) on the table's latest schema, without committing it: what a check of the new schema
    (Paimon's ``SchemaValidation``) looks at before the change lands.

    Raises:
        ValueError / RuntimeError: pypaimon refuses the change (as its commit would)."""
    manager = table.schema_manager
    return manager._generate_table_schema(manager.latest(), changes)


def pinned_current(table: Any, snapshot_id: int) -> Any:
    """The files of ``snapshot_id`` under the table's *current* schema: what a change planned on
    that snapshot reads (its condition and new values name today's columns; a schema change commits
    no snapshot, so the latest one may predate it)."""
    return table.copy_without_time_travel({SCAN_SNAPSHOT_ID: str(snapshot_id)})


def read_snapshot(table: Any) -> Snapshot | None:
    """The snapshot a read of ``table`` sees: the pinned one (``scan.snapshot-id``), else the latest."""
    pinned = table.options.options.to_map().get(SCAN_SNAPSHOT_ID)
    if pinned is None:
        return latest_snapshot(table)
    snapshot = snapshot_by_id(table, int(pinned))
    if snapshot is None:
        raise TableError(f"table {table.identifier} has no snapshot {pinned} (never committed or expired)")
    return snapshot


class PinnedSnapshotManager:
    """A table's snapshot manager whose "latest snapshot" is the planned one (the commit's base)."""

    def __init__(self, manager: Any, pinned: Snapshot | None) -> None:
        self._manager = manager
        self._pinned = pinned

    def get_latest_snapshot(self) -> Snapshot | None:
        return self._pinned

    def __getattr__(self, name: str) -> Any:
        return getattr(self._manager, name)


# the atomic snapshot commit -----------------------------------------------------------------------

class ExclusiveSnapshotCommit(SnapshotCommit):
    """Publishes a snapshot file only if no snapshot of that id exists, atomically across processes.

    ``expected_id``: refuse any other id (the exact commit of a planned snapshot N lands as N+1 or
    not at all). After :meth:`commit`, ``landed`` holds the published id, ``refused`` the ids that
    another writer took, and ``uncertain`` is set when publishing raised (the snapshot may exist).

    A file-system catalog's table publishes with :meth:`TableIO.create_exclusive` (``os.link``
    locally, a conditional PUT on ``s3://``; other stores refuse unless the user opted out, see
    :mod:`paimon_index.table.fileio`). A table whose catalog commits snapshots itself (a REST
    catalog: not pypaimon's ``RenamingSnapshotCommit``) defers to it: the catalog server decides.
    """

    def __init__(self, table: Any, expected_id: int | None) -> None:
        self._table = table
        self._manager = table.snapshot_manager()
        self._io = TableIO(table.file_io)
        own = table.new_snapshot_commit()
        self._fallback = None if isinstance(own, RenamingSnapshotCommit) else own
        self.expected_id = expected_id
        self.landed: int | None = None
        self.refused: list[int] = []
        self.uncertain = False
        self.on_refused: Callable[[Snapshot], None] | None = None

    def commit(self, base_snapshot_uuid: str | None, snapshot: Snapshot, statistics: Any) -> bool:
        if self.expected_id is not None and snapshot.id != self.expected_id:
            return self._refuse(snapshot)
        latest = self._manager.get_latest_snapshot()
        if latest is not None and latest.id >= snapshot.id:
            # Taken already — or expired after a newer one landed: never re-create an old id.
            return self._refuse(snapshot)
        try:
            if self._fallback is None:
                published = self._publish(snapshot)
            else:
                published = bool(self._fallback.commit(base_snapshot_uuid, snapshot, statistics))
        except BaseException:
            self.uncertain = True
            raise
        if not published:
            return self._refuse(snapshot)
        self.landed = snapshot.id
        return True

    def _refuse(self, snapshot: Snapshot) -> bool:
        self.refused.append(snapshot.id)
        if self.on_refused is not None:
            try:
                self.on_refused(snapshot)
            except Exception as e:  # cleanup is best effort: a leftover manifest is only an orphan
                log.warning("could not delete the manifests of refused snapshot %d: %s", snapshot.id, e)
        return False

    def _publish(self, snapshot: Snapshot) -> bool:
        path = self._manager.get_snapshot_path(snapshot.id)
        if not self._io.create_exclusive(path, JSON.to_json(snapshot, indent=2).encode("utf-8")):
            return False
        self._write_latest_hint(snapshot.id)
        return True

    def _write_latest_hint(self, snapshot_id: int) -> None:
        # Only a hint: readers reconcile it with a listing, so a lost race here is harmless.
        try:
            self._io.write_text(self._manager.latest_file, str(snapshot_id))
        except Exception as e:
            log.warning("could not update the LATEST hint to %d: %s", snapshot_id, e)

    def close(self) -> None:
        if self._fallback is not None:
            self._fallback.close()


def check_snapshot_store(table: Any) -> None:
    """Raise before anything is written when ``table``'s snapshots cannot be published safely.

    Raises:
        NoAtomicCreateError: a file-system catalog on a store without an atomic create (see
            :mod:`paimon_index.table.fileio`), and the user did not opt out.
        EnvironmentCheckError: an ``s3://`` table without boto3 (the conditional PUT needs it).
    """
    io = TableIO(table.file_io)
    if io.is_local or not isinstance(table.new_snapshot_commit(), RenamingSnapshotCommit):
        return  # os.link; or the catalog publishes snapshots itself
    try:
        io.check_atomic_create()
    except NoAtomicCreateError as e:
        raise NoAtomicCreateError(f"table {table_name(table)}: {e}") from None


# the commit ---------------------------------------------------------------------------------------

def new_file_store_commit(table: Any, snapshot_commit: ExclusiveSnapshotCommit, commit_user: str, *,
                          pinned: Snapshot | None, exact: bool, overwrite: bool) -> FileStoreCommit:
    """pypaimon's committer wired to ``snapshot_commit``; ``exact``: one attempt on ``pinned``."""
    commit = FileStoreCommit(snapshot_commit, table, commit_user)
    if exact:
        commit.snapshot_manager = PinnedSnapshotManager(commit.snapshot_manager, pinned)
        commit.commit_max_retries = 0
    previous_index_manifest: dict[int, str | None] = {}

    def clean_refused(snapshot: Snapshot) -> None:
        base = pinned if exact else snapshot_by_id(table, snapshot.id - 1)
        previous_index_manifest[snapshot.id] = base.index_manifest if base is not None else None
        new_index = snapshot.index_manifest if snapshot.index_manifest != previous_index_manifest[
            snapshot.id] else None
        commit._clean_up_tmp_manifests(snapshot.base_manifest_list, snapshot.delta_manifest_list,
                                       snapshot.changelog_manifest_list, new_index)

    snapshot_commit.on_refused = clean_refused
    commit._collect_manifest_entries = _deletes_first(commit._collect_manifest_entries)
    if overwrite:
        hash_deletes = commit._overwrite_hash_index_deletes

        def index_deletes(partition_filter: Any, deletes: list[Any]) -> list[Any]:
            return overwrite_index_deletes(table, commit.snapshot_manager.get_latest_snapshot(),
                                           partition_filter, hash_deletes(partition_filter, deletes))

        commit._overwrite_hash_index_deletes = index_deletes
    return commit


def _deletes_first(collect: Any) -> Any:
    """pypaimon's ``_collect_manifest_entries`` with each message's DELETE entries before its ADD
    entries, as Java's ``FileStoreCommitImpl`` lists a compaction's files (before, then after).

    Java's expiry nets a delta's entries by path in their order (``planDeletedInDeltaManifest``:
    ADD forgets a path, DELETE marks it): a file deleted and added again under its name (moved up a
    level, its file index rewritten) listed ADD first was deleted by Java's expiry while the
    retained snapshot still read it."""

    def collected(messages: list[CommitMessage]) -> list[Any]:
        entries: list[Any] = []
        for message in messages:
            made = collect([message])
            entries += [e for e in made if e.kind == KIND_DELETE] + [e for e in made if e.kind != KIND_DELETE]
        return entries

    return collected


#: ``Snapshot.commit_kind`` of a compaction (Java's ``CommitKind.COMPACT``).
COMMIT_KIND_COMPACT = "COMPACT"


def commit_compact(commit: FileStoreCommit, messages: Sequence[CommitMessage],
                   commit_identifier: int) -> None:
    """Commit ``messages`` as one ``COMPACT`` snapshot, as Java commits a compaction.

    pypaimon's ``commit`` makes every snapshot ``APPEND`` (``OVERWRITE`` once a file is deleted) and
    refuses compact increments; Java writes a compaction's files removed and added into the delta
    manifest with ``commitKind`` ``COMPACT``, with conflict checks. This builds the same entries
    pypaimon's ``commit`` builds (``deleted_files`` as DELETE, ``new_files`` as ADD, the index
    changes) and commits them through the same ``_try_commit``, only the kind differs.
    """
    entries = commit._collect_manifest_entries(list(messages))
    index_adds = [e for m in messages for e in m.index_adds]
    index_deletes = [e for m in messages for e in m.index_deletes]
    commit.conflict_detection._row_id_check_from_snapshot = None
    # Changelog files (``changelog-producer`` = ``lookup``) go to the changelog manifest list, as
    # Java's lookup compaction commits them.
    changelog = commit._collect_changelog_entries(list(messages))
    commit._try_commit(commit_kind=COMMIT_KIND_COMPACT, commit_identifier=commit_identifier,
                       commit_entries_plan=lambda snapshot: entries, detect_conflicts=True,
                       index_deletes=index_deletes, index_adds=index_adds, changelog_entries=changelog)


def overwrite_index_deletes(table: Any, snapshot: Snapshot | None, partition_filter: Any,
                            deletes: Sequence[Any]) -> list[Any]:
    """``deletes`` plus a DELETE of every DV index entry of ``snapshot`` in the overwritten partitions."""
    by_name = {entry.index_file.file_name: entry for entry in deletes}
    if snapshot is None:
        return list(by_name.values())
    for entry in IndexFileHandler(table).scan(snapshot):
        if entry.index_file.index_type != DELETION_VECTORS:
            continue
        if partition_filter is not None and not partition_filter.test(entry.partition):
            continue
        by_name[entry.index_file.file_name] = IndexManifestEntry(
            kind=KIND_DELETE, partition=entry.partition, bucket=entry.bucket, index_file=entry.index_file)
    return list(by_name.values())


def index_entries(table: Any, snapshot: Snapshot | None, index_type: str | None = None) -> list[Any]:
    """The index-manifest entries (``IndexManifestEntry``) of ``snapshot``, optionally of one type."""
    if snapshot is None:
        return []
    return [e for e in IndexFileHandler(table).scan(snapshot)
            if index_type is None or e.index_file.index_type == index_type]


def partition_row(table: Any, values: Sequence[Any]) -> GenericRow:
    """The partition row commit messages and index entries carry, from its plain values."""
    return GenericRow(list(values), table.partition_keys_fields)


def index_manifest_entry(table: Any, partition: Sequence[Any], bucket: int, index_type: str, file_name: str,
                         file_size: int, row_count: int, *, external_path: str | None = None,
                         dv_ranges: Iterable[tuple[str, int, int, int | None]] | None = None) -> Any:
    """An ADD ``IndexManifestEntry`` rebuilt from plain values (what a Spark task was sent):
    ``dv_ranges`` as (data file, offset, length, cardinality) for a DV index file."""
    ranges = None if dv_ranges is None else {
        name: DeletionVectorMeta(name, offset, length, cardinality)
        for name, offset, length, cardinality in dv_ranges}
    meta = IndexFileMeta(index_type=index_type, file_name=file_name, file_size=file_size, row_count=row_count,
                         dv_ranges=ranges, external_path=external_path)
    return IndexManifestEntry(kind=KIND_ADD, partition=partition_row(table, partition), bucket=bucket,
                              index_file=meta)


def index_file_path(table: Any, partition: Any, bucket: int, index_file: Any) -> str:
    """Where an index file (DV, hash) of ``(partition, bucket)`` lives."""
    values = tuple(partition.values) if hasattr(partition, "values") else tuple(partition)
    return table.path_factory().bucket_index_path(values, bucket, index_file, table.file_io)


def message_written_files(table: Any, messages: Iterable[CommitMessage]) -> list[str]:
    """Every file the messages add that the table did not hold before (the operation wrote them).

    A data file re-added with a new index (``rewrite_file_index``: DELETE + ADD of one name) is
    not new, nor are the extra files its deleted entry already had; index files added and deleted
    in one message are not new either.
    """
    paths: list[str] = []
    for message in messages:
        deleted = {meta.file_name: set(meta.extra_files or ()) for meta in message.deleted_files}
        for meta in [*message.new_files, *message.changelog_files]:
            files = meta.collect_files()
            old_extras = deleted.get(meta.file_name)
            if old_extras is None:
                paths.extend(files)
            else:  # the data file itself exists; only extra files it did not have are new
                paths.extend(meta.aligned_file_path(name) for name in meta.extra_files or ()
                             if name not in old_extras)
        removed = {e.index_file.file_name for e in message.index_deletes}
        for entry in message.index_adds:
            if entry.index_file.file_name not in removed:
                paths.append(index_file_path(table, entry.partition, entry.bucket, entry.index_file))
    return paths


def write_changelog_file(table: Any, partition: Sequence[Any], bucket: int, rows: pa.Table,
                         level: int) -> Any:
    """Write ``rows`` (key-value layout: ``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, the
    value columns; sorted by key) as one changelog file of ``(partition, bucket)``; its
    ``DataFileMeta`` (key range, statistics and sequence range as pypaimon computes them for data
    files).

    pypaimon's key-value writer writes the file (``_write_data_to_file``, its one-file step) with
    the changelog's name prefix (``changelog-file.prefix``, default ``changelog-``), format
    (``changelog-file.format``, default ``file.format``) and compression
    (``changelog-file.compression``), as Java's ``createRollingChangelogFileWriter`` does."""
    from pypaimon.common.options.core_options import CoreOptions
    from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

    options = CoreOptions.copy(table.options)
    raw = table_options(table)
    options.set(CoreOptions.DATA_FILE_PREFIX, raw.get("changelog-file.prefix", "changelog-"))
    if raw.get("changelog-file.format"):
        options.set(CoreOptions.FILE_FORMAT, raw["changelog-file.format"])
    if raw.get("changelog-file.compression"):
        options.set(CoreOptions.FILE_COMPRESSION, raw["changelog-file.compression"])
    writer = count_deleted_rows(KeyValueDataWriter(table, tuple(partition), int(bucket), -1, options=options))
    writer._write_data_to_file(rows)
    (meta,) = writer.committed_files
    return dataclasses.replace(meta, level=level)


# schemas and manifests ------------------------------------------------------------------------------

def arrow_schema(fields: Sequence[Any]) -> pa.Schema:
    """The Arrow schema of pypaimon ``DataField``s."""
    return PyarrowFieldParser.from_paimon_schema(list(fields))


#: A DELETE entry of a data file in a snapshot's manifests:
#: (partition values, bucket, level, file name, extra files, embedded index).
DeletedEntry = tuple[tuple[Any, ...], int, int, str, tuple[str, ...], bytes | None]


def deleted_entries(table: Any, snapshot: Snapshot, file_names: set[str]) -> list[DeletedEntry]:
    """Every DELETE entry of ``snapshot``'s manifests for a data file named in ``file_names``."""
    reader = ManifestFileManager(table)
    found: list[DeletedEntry] = []
    for manifest in ManifestListManager(table).read_all(snapshot):
        if not manifest.num_deleted_files:
            continue
        for entry in reader.read(manifest.file_name,
                                 lambda e: e.kind == KIND_DELETE and e.file.file_name in file_names):
            meta = entry.file
            found.append((tuple(entry.partition.values or ()), entry.bucket, meta.level, meta.file_name,
                          tuple(meta.extra_files or ()), meta.embedded_index))
    return found


@dataclasses.dataclass(frozen=True)
class LiveFile:
    """A data file a snapshot holds, as its manifest entry describes it (what Paimon's
    ``$partitions`` and ``$buckets`` add up)."""

    partition: tuple[Any, ...]
    bucket: int
    total_buckets: int
    row_count: int
    file_size: int
    #: Its creation time as written (a local wall-clock time), in milliseconds; None when absent.
    creation_millis: int | None


def live_files(table: Any, snapshot: Snapshot | None) -> list[LiveFile]:
    """Every data file ``snapshot`` holds (its manifests' ADD entries less their DELETEs), in
    manifest order, at every level."""
    if snapshot is None:
        return []
    entries = ManifestFileManager(table).read_entries_parallel(ManifestListManager(table).read_all(snapshot),
                                                               drop_stats=True)
    out = []
    for entry in entries:
        meta, created = entry.file, entry.file.creation_time
        out.append(LiveFile(tuple(entry.partition.values or ()), int(entry.bucket), int(entry.total_buckets),
                            int(meta.row_count), int(meta.file_size),
                            None if created is None else int(created.get_millisecond())))
    return out


def delta_file_counts(table: Any, snapshot_id: int) -> tuple[int, int]:
    """(data files added, data files removed) by snapshot ``snapshot_id`` (its delta manifests)."""
    snapshot = snapshot_by_id(table, snapshot_id)
    if snapshot is None:
        return 0, 0
    reader = ManifestFileManager(table)
    added = removed = 0
    for manifest in ManifestListManager(table).read_delta(snapshot):
        for entry in reader.read(manifest.file_name):
            if entry.kind == KIND_DELETE:
                removed += 1
            else:
                added += 1
    return added, removed


# cached manifest reads ------------------------------------------------------------------------------

def cached_manifest_reads(scan: Any, report: Any = None) -> Any:
    """``scan`` (a pypaimon ``TableScan``) reading its manifest files through the metadata cache;
    ``report.metadata_cache_hits`` (when given) counts the manifests found decoded."""
    if not metadata_cache().enabled:
        return scan
    manager = getattr(getattr(scan, "file_scanner", None), "manifest_file_manager", None)
    if manager is None:
        return scan
    original = manager.read_entries_parallel

    def read_entries_parallel(manifest_files: list[Any], manifest_entry_filter: Any = None,
                              drop_stats: bool = True, max_workers: int = 8, early_entry_filter: Any = None,
                              early_record_filter: Any = None, partition_filter: Any = None,
                              row_ranges: Any = None) -> list[Any]:
        if early_record_filter is not None or row_ranges is not None:
            return list(original(manifest_files, manifest_entry_filter, drop_stats, max_workers,
                                 early_entry_filter, early_record_filter, partition_filter, row_ranges))
        added: list[Any] = []
        deleted: set[tuple[Any, ...]] = set()
        for entries in _manifest_entries(manager, manifest_files, max_workers, report):
            for entry in entries:
                early = early_entry_filter
                if early is not None and not early(entry.bucket, entry.total_buckets):
                    continue
                if partition_filter is not None and not partition_filter.test(entry.partition):
                    continue
                if manifest_entry_filter is not None and not manifest_entry_filter(entry):
                    continue
                # Fresh objects: the split generator sets file paths on what it is given.
                mine = entry.copy_without_stats() if drop_stats else ManifestEntry(
                    kind=entry.kind, partition=entry.partition, bucket=entry.bucket,
                    total_buckets=entry.total_buckets, file=copy.copy(entry.file))
                if mine.kind == KIND_ADD:
                    added.append(mine)
                else:
                    deleted.add(_entry_identifier(mine))
        return [entry for entry in added if _entry_identifier(entry) not in deleted]

    manager.read_entries_parallel = read_entries_parallel
    return scan


def _entry_identifier(entry: Any) -> tuple[Any, ...]:
    """What pypaimon matches a DELETE entry to its ADD by."""
    meta = entry.file
    return (tuple(entry.partition.values), entry.bucket, meta.level, meta.file_name,
            tuple(meta.extra_files) if meta.extra_files else (), meta.embedded_index, meta.external_path)


def _manifest_entries(manager: Any, manifest_files: Sequence[Any], max_workers: int,
                      report: Any = None) -> list[list[Any]]:
    """Every entry of each manifest file (statistics kept, no filter), decoded once per process."""
    cache = metadata_cache()
    keys = [("manifest", f"{manager.manifest_path}/{m.file_name}", m.file_size) for m in manifest_files]
    found: list[list[Any] | None] = [cache.get(key) for key in keys]
    missing = [i for i, entries in enumerate(found) if entries is None]
    if report is not None and hasattr(report, "metadata_cache_hits"):
        report.metadata_cache_hits += len(found) - len(missing)

    def decode(i: int) -> list[Any]:
        meta = manifest_files[i]
        return list(manager.read(meta.file_name, None, False, file_size=meta.file_size))

    if len(missing) > 1:
        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(missing)))) as pool:
            decoded = list(pool.map(decode, missing))
    else:
        decoded = [decode(i) for i in missing]
    for i, entries in zip(missing, decoded, strict=True):
        found[i] = entries
        embedded = sum(len(e.file.embedded_index or b"") for e in entries)
        cache.put(keys[i], entries, MANIFEST_WEIGHT_FACTOR * int(manifest_files[i].file_size or 0) + embedded)
    return [entries or [] for entries in found]


def vectorize_key_value_write(writer: Any) -> None:
    """Give one pypaimon table write vectorized bucket assignment (fixed-bucket tables) and, on its
    key-value data writers, a fold that returns already-distinct keys as they are (see the module
    docstring). Other extractors and merge functions keep pypaimon's own code."""
    _vectorize_buckets(writer.row_key_extractor)
    store = writer.file_store_write
    create = store._create_data_writer

    def created(*args: Any, **kwargs: Any) -> Any:
        data_writer = create(*args, **kwargs)
        fold = getattr(data_writer, "_merge_pending_by_pk", None)
        deduplicate = type(getattr(data_writer, "_merge_function", None)) is DeduplicateMergeFunction
        if fold is not None and deduplicate:
            data_writer._merge_pending_by_pk = _distinct_or(fold, len(data_writer.trimmed_primary_keys))
        if fold is not None:
            data_writer._add_system_fields = _system_fields_of(data_writer)
        return data_writer

    store._create_data_writer = created


def null_partitions_restored(writer: Any) -> None:
    """Have one pypaimon table write find the files of a partition with a NULL value when it
    restores a bucket's last sequence number: pypaimon filters the partition by ``key = value``,
    which for NULL matched nothing and, against the manifests' partition statistics, raised a raw
    ``TypeError`` (a fixed-bucket append table: the second write of a NULL partition, a
    compaction of one). Java Paimon matches the partition row exactly; ``IS NULL`` does here."""
    store = writer.file_store_write
    if not hasattr(store, "_load_seq_number_stats"):
        return

    def restored(partition: tuple[Any, ...]) -> dict[int, int]:
        builder = store._sequence_read_table().new_read_builder()
        predicates = builder.new_predicate_builder()
        matches = [predicates.is_null(key) if value is None else predicates.equal(key, value)
                   for key, value in zip(store.table.partition_keys, partition, strict=True)]
        scan = builder.with_filter(predicates.and_predicates(matches)).new_scan()
        last: dict[int, int] = {}
        for split in scan.plan_for_write().splits():
            number = max(f.max_sequence_number for f in split.files)
            last[split.bucket] = max(number, last.get(split.bucket, -1))
        return last

    store._load_seq_number_stats = restored


#: The column that carries each row's ``_VALUE_KIND`` byte into a writer (:func:`value_kinds_from`).
VALUE_KIND_INPUT = "__paimon_index_value_kind__"
#: The writer attribute naming the column :func:`value_kinds_from` installed it for.
_KINDS_FROM = "_paimon_index_value_kinds_from"


def value_kinds_from(writer: Any, column: str) -> None:
    """Have one pypaimon table write take each row's ``_VALUE_KIND`` from its ``column`` (int8 row
    kind bytes), which is dropped before the file is written: pypaimon itself only reads row kinds
    from a ``rowkind.field`` column of the table. (Merge-on-read changes: ``-D``/``+U`` rows.)
    Installed once per writer: a second call for the same column changes nothing."""
    if getattr(writer, _KINDS_FROM, None) == column:
        return
    setattr(writer, _KINDS_FROM, column)
    store = writer.file_store_write
    create = store._create_data_writer

    def kinded(*args: Any, **kwargs: Any) -> Any:
        data_writer = create(*args, **kwargs)
        add_system_fields = data_writer._add_system_fields

        def with_kinds(batch: pa.RecordBatch) -> pa.RecordBatch:
            if column not in batch.schema.names:
                return add_system_fields(batch)
            position = batch.schema.get_field_index(column)
            values = batch.column(position)
            enhanced = add_system_fields(batch.remove_column(position))
            at = enhanced.schema.get_field_index("_VALUE_KIND")
            return enhanced.set_column(at, enhanced.schema.field(at), values)

        data_writer._add_system_fields = with_kinds
        return count_deleted_rows(data_writer)

    store._create_data_writer = kinded
    validate = writer._validate_pyarrow_schema
    writer._validate_pyarrow_schema = \
        lambda schema: validate(pa.schema([f for f in schema if f.name != column]))


#: ``_VALUE_KIND`` bytes of rows that delete their key (``-U`` 1, ``-D`` 3): Java's ``RowKind.isAdd``
#: is false for them.
DELETING_VALUE_KINDS = (1, 3)


def count_deleted_rows(data_writer: Any) -> Any:
    """Have one pypaimon key-value data writer record each file's ``deleteRowCount`` (its ``-U`` and
    ``-D`` rows), as Java's ``KeyValueDataFileWriter`` counts them; pypaimon records 0.

    The count decides how Java reads the file: a section of one file whose count is 0 is read raw
    (``MergeTreeSplitGenerator``: raw-convertible, no merge, no dropping of deletes), so a ``-D``
    row of a merge-on-read change counted as 0 came back from Java Paimon, and from pypaimon,
    which splits the same way, as a live row."""
    write, create = data_writer._write_data_to_file, data_writer._create_data_file_meta
    counts: list[int] = []

    def writing(data: pa.Table) -> Any:
        deleted = 0
        if "_VALUE_KIND" in data.schema.names:
            retract = pc.is_in(data.column("_VALUE_KIND"), pa.array(DELETING_VALUE_KINDS, pa.int8()))
            deleted = int(pc.sum(pc.cast(retract, pa.int64())).as_py() or 0)
        counts.append(deleted)
        try:
            return write(data)
        finally:
            counts.pop()

    def meta(*args: Any, **kwargs: Any) -> Any:
        created = create(*args, **kwargs)
        if counts:
            created.delete_row_count = counts[-1]
        return created

    data_writer._write_data_to_file = writing
    data_writer._create_data_file_meta = meta
    return data_writer


def row_key_extractor(table: Any) -> Any:
    """pypaimon's row key extractor of ``table`` (partition and bucket of rows), fixed buckets vectorized."""
    return _vectorize_buckets(table.create_row_key_extractor())


def _vectorize_buckets(extractor: Any) -> Any:
    if type(extractor) is FixedBucketRowKeyExtractor:
        fields, buckets = list(extractor._bucket_key_fields), int(extractor.num_buckets)

        def extract_buckets(data: pa.RecordBatch) -> list[int]:
            hashes = key_hashes(data, fields).astype(np.int64)
            # Java: Math.abs(hashcode % numBuckets), % truncating toward zero as np.fmod does.
            return np.abs(np.fmod(hashes, buckets)).tolist()

        extractor._extract_buckets_batch = extract_buckets
    return extractor


def _system_fields_of(data_writer: Any) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """pypaimon's ``KeyValueDataWriter._add_system_fields`` with the sequence numbers as one range
    (pypaimon calls its generator once per row): ``_KEY_<k>`` columns, ``_SEQUENCE_NUMBER``,
    ``_VALUE_KIND`` (``row_kinds``: 0 unless ``rowkind.field``), then the value columns."""

    def add(data: pa.RecordBatch) -> pa.RecordBatch:
        names = data.schema.names
        keys = [k for k in data_writer.trimmed_primary_keys if k in names]
        arrays = [data.column(k) for k in keys]
        fields = [pa.field(f"_KEY_{k}", data.schema.field(k).type, nullable=data.schema.field(k).nullable)
                  for k in keys]
        generator = data_writer.sequence_generator
        arrays.append(pa.array(np.arange(generator.current + 1, generator.current + data.num_rows + 1,
                                         dtype=np.int64)))
        generator.current += data.num_rows
        fields.append(pa.field("_SEQUENCE_NUMBER", pa.int64(), nullable=False))
        arrays.append(pa.array(row_kinds(data_writer.options, data), type=pa.int8()))
        fields.append(pa.field("_VALUE_KIND", pa.int8(), nullable=False))
        arrays.extend(data.columns)
        fields.extend(data.schema)
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    return add


def _distinct_or(fold: Callable[[pa.Table], pa.Table], key_arity: int) -> Callable[[pa.Table], pa.Table]:
    """``fold``, skipped when the key-sorted rows' keys (the first ``key_arity`` columns) are distinct."""

    def distinct_first(data: pa.Table) -> pa.Table:
        if data.num_rows < 2 or _keys_distinct(data, key_arity):
            return data
        return fold(data)

    return distinct_first


def _keys_distinct(data: pa.Table, key_arity: int) -> bool:
    """Whether no two neighbours of the key-sorted ``data`` have equal keys (NULLs: not proven)."""
    n = data.num_rows
    differs: Any = None
    for i in range(key_arity):
        column = data.column(i)
        step = pc.not_equal(column.slice(1), column.slice(0, n - 1))
        differs = step if differs is None else pc.or_kleene(differs, step)
    if differs is None:
        return False
    # A NULL comparison (a NULL key) or a false one sends the rows through pypaimon's fold.
    return bool(pc.all(pc.fill_null(differs, False)).as_py())
