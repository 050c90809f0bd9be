"""``rewrite_file_index``: rebuild data files' index containers after ``file-index.*`` options change.

    rewrite_file_index(table, where=None, progress=None) -> snapshot id | None

An ``ALTER TABLE`` of ``file-index.*`` options only changes what *new* data files get; this brings
the existing files of the latest snapshot in line, as Paimon's ``rewrite_file_index`` procedure
does. Three halves, so a Spark job can spread the middle one over executors:

``plan_rewrite`` (driver, metadata only)
    lists every data file of the latest snapshot — all levels, as pypaimon plans a *write*
    (``plan_for_write``), so primary-key level-0 files are included — in the partitions selected
    (a predicate on partition columns, one partition spec or a list of them). Per file it compares
    the (column, index type) set the current options ask for with the set in the file's container
    head (embedded bytes from the manifest, or the head of the ``.index`` file):

    * nothing configured and no container -> up to date, no task;
    * the sets differ, or the container cannot be read -> a task that rewrites without comparing;
    * same set -> a task that *verifies*: the options of one index (bloom ``fpp``, ``items``...) or
      the in-manifest threshold may have changed, which only the bytes show.

``rewrite_file`` (executor; the task holds plain values only, ``RewriteTask``)
    reads the file's indexed columns (only those) and builds the container the current options
    ask for (:func:`~paimon_index.fileindex.builder.build_file_index`) — so index types and columns
    no longer configured are dropped and an empty configuration removes the index. A verifying
    task whose container is byte-identical and stored the same way yields None. Otherwise the
    container is stored as Paimon's ``FileIndexProcessor`` stores it: embedded when at most
    ``file-index.in-manifest-threshold`` bytes, else in a **new** index file beside the data
    file, named as Paimon names it (``<data-file>.index`` for a file without one, then
    ``<data-file>-1.index``, ``-2``, ...), skipping names that exist on disk or that a deleted
    manifest entry holds — an old index file is never overwritten, older snapshots still read it.
    (Paimon writes ``<data-file>.index`` again when an embedded index moves back to a file,
    overwriting the one an older snapshot may use; we take the next free name instead.)

    Columns are matched by field id, as Paimon does: a file written before a column was renamed
    is indexed under the name the column has *in that file*; a column the file does not have
    (added later) gets no index in it.

``commit_rewrite`` (driver)
    commits all changed files as **one** snapshot: per file a ``CommitMessage`` deleting the old
    ``DataFileMeta`` and adding the same data file with its new index (``RewritePlan.messages``:
    the executors report how each index is stored, the driver's own ``DataFileMeta`` of the
    planned snapshot carry it into the messages). Nothing is committed when
    no file changed.

Why DELETE + ADD of one file name works, and when it does not
-------------------------------------------------------------
Paimon identifies a manifest entry by (partition, bucket, level, file name, extra files, embedded
index, external path); pypaimon 2.1's ``FileEntry.Identifier`` (``manifest/schema/file_entry.py``)
has the same fields. The old and new entries differ in ``extra_files`` or ``embedded_index``, so
the commit's own merge (``FileEntry.merge_entries``, in order) keeps both, and a scan sees the new
entry only: one live copy of the data file.

But a scan does not replay entries in order: Paimon's ``readAndMergeFileEntries`` and pypaimon's
``ManifestFileManager.read_entries_parallel`` first collect *every* DELETEd identifier in the
snapshot's manifests, then drop every ADD holding one of them. So an entry once deleted can never
be added again (until a manifest full compaction drops the ADD/DELETE pair) — an ADD that repeats
it makes the data file vanish from the table. This happens naturally: remove an index and add it
back (the rebuilt embedded bytes equal the first ones), or move a container from embedded to a
file and back. ``plan_rewrite`` therefore reads the DELETE entries of the planned files
(``RewriteTask.retired``), and when the natural new entry is among them the container goes into a
new index file instead (an empty container when no index is wanted): same bytes, same answers,
an identifier no DELETE holds, because a new index file name is never one a DELETE entry holds.

The commit is a :class:`~paimon_index.table.transaction.Transaction` on the planned snapshot: if
any commit landed meanwhile (one that may have removed or replaced a planned file), it fails with
:class:`~paimon_index.errors.ConcurrentChangeError` instead of resurrecting a file, and the new
index files are deleted. Java
commits the same change as a COMPACT snapshot (compact before/after); pypaimon's batch commit
refuses compact increments (``_reject_compact_increment``), hence the plain delete + add.

Deletion vectors are keyed by data-file name in the DV index manifest, which this commit does not
touch; the file keeps its name, so its vector keeps applying.

pypaimon internals used (our upgrade surface): ``table.copy_without_time_travel({"scan.snapshot-id":
...})`` (``paimon.pinned_current``), ``new_read_builder().new_scan().plan_for_write().splits()``
(``partition.values``, ``bucket``, ``files``), ``DataFileMeta`` (``file_name``, ``file_path``,
``schema_id``, ``extra_files``, ``embedded_index``, ``level``), ``table.table_schema.fields`` /
``table.schema_manager.get_schema(id)`` (``DataField.id/name/type``),
``PyarrowFieldParser.from_paimon_schema``, ``table.file_io.exists`` / ``new_output_stream``,
``ManifestListManager(table).read_all(snapshot)`` and ``ManifestFileManager(table).read(name, filter)``
(``ManifestEntry.kind/partition/bucket/file``, ``ManifestFileMeta.num_deleted_files``),
``CommitMessage(partition, bucket, new_files, deleted_files)`` and the batch committer.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from paimon_index.errors import CorruptFileError, InvalidPredicateError, PaimonIndexError
from paimon_index.fileindex.builder import build_file_index
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.fileindex.options import FileIndexOptions, IndexSpec
from paimon_index.predicate import Predicate, bind, columns_of
from paimon_index.sql import bind_predicate
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import container_source, open_container
from paimon_index.table.paimon import CommitMessage, PaimonTable, arrow_schema, deleted_entries, table_options
from paimon_index.table.plan import plan_snapshot
from paimon_index.table.transaction import Transaction
from paimon_index.table.write import INDEX_FILE_SUFFIX
from paimon_index.types import DataType, parse_type

__all__ = [
    "REASON_INDEX_TYPES_CHANGED",
    "REASON_INDEX_UNREADABLE",
    "REASON_VERIFY",
    "IndexedFile",
    "PartitionSelection",
    "RewritePlan",
    "RewriteTask",
    "RewrittenIndex",
    "build_current_container",
    "commit_rewrite",
    "next_index_file_name",
    "partition_filter",
    "plan_rewrite",
    "rewrite_file",
    "rewrite_file_index",
]

#: ``<stem>-<n>.index``: the n-th rewritten index file of a data file (Paimon's numbering).
_NUMBERED = re.compile(r"^(?P<stem>.*)-(?P<n>\d+)" + re.escape(INDEX_FILE_SUFFIX) + "$")


#: ``ManifestEntry.kind`` of a DELETE entry (0 is ADD).
DELETE_KIND = 1

#: Why a file was planned (``RewriteTask.reason``).
REASON_INDEX_TYPES_CHANGED = "configured (column, index type) set differs from the file's"
REASON_INDEX_UNREADABLE = "the file's current index cannot be read"
REASON_VERIFY = "same index types: rebuild and compare bytes"

#: Partitions to rewrite: a predicate on partition columns (SQL text or a Predicate), one partition
#: spec ``{column: value}``, or a list of specs (a partition matching any of them is selected).
PartitionSelection = Predicate | str | Mapping[str, Any] | Sequence[Mapping[str, Any]]

Pair = tuple[str, str]  # (column as named in the data file, index type)
Retired = tuple[tuple[str, ...], bytes | None]  # (extra files, embedded index) of a DELETE entry
FileKey = tuple[tuple[Any, ...], int, int, str]  # (partition, bucket, level, file name)

#: How a rebuilt container is stored (``_storage``).
STORE_NONE = "none"
STORE_EMBEDDED = "embedded"
STORE_FILE = "file"

#: A container without any index: what a data file carries when "no index" cannot be expressed
#: by an entry without one (see ``_storage``). Readers see no index on any column.
EMPTY_CONTAINER = write_container({})


def next_index_file_name(data_file: str, current: str | None) -> str:
    """A data file's next index file name, numbered as Paimon's ``createNewFileIndexFilePath``."""
    if current is None:
        return data_file + INDEX_FILE_SUFFIX
    numbered = _NUMBERED.match(current)
    if numbered:
        return f"{numbered['stem']}-{int(numbered['n']) + 1}{INDEX_FILE_SUFFIX}"
    return current[: -len(INDEX_FILE_SUFFIX)] + "-1" + INDEX_FILE_SUFFIX


@dataclass(frozen=True)
class IndexedFile:
    """A data file as a rewrite task needs it: the plain values of its ``DataFileMeta``."""

    file_name: str
    file_path: str
    level: int
    schema_id: int
    file_size: int
    extra_files: tuple[str, ...]
    embedded_index: bytes | None

    @classmethod
    def of(cls, meta: Any) -> IndexedFile:
        embedded = meta.embedded_index
        return cls(str(meta.file_name), str(meta.file_path), int(meta.level), int(meta.schema_id),
                   int(meta.file_size or 0), tuple(meta.extra_files or ()),
                   None if embedded is None else bytes(embedded))


@dataclass(frozen=True)
class RewriteTask:
    """One data file whose index may need rebuilding (plain values: pickled to an executor).

    ``verify``: the file's container has the configured index types, so the executor rebuilds it
    and rewrites only when the bytes (or the storage, embedded vs file) differ; otherwise the
    index is rewritten without comparing.
    """

    partition: tuple[Any, ...]
    bucket: int
    file: IndexedFile
    verify: bool = True
    reason: str = REASON_VERIFY
    #: (extra files, embedded index) of this data file's entries already DELETEd in the planned
    #: snapshot's manifests: an ADD with one of them would be invisible (module docstring).
    retired: frozenset[Retired] = frozenset()


@dataclass(frozen=True)
class RewrittenIndex:
    """A task's outcome for one data file: how its index is now stored (plain values; the driver
    turns it into the commit message with the file's own ``DataFileMeta``)."""

    partition: tuple[Any, ...]
    bucket: int
    level: int
    file_name: str
    extra_files: tuple[str, ...]
    embedded_index: bytes | None


@dataclass
class RewritePlan:
    """The files to check, on one snapshot (``snapshot_id``: the commit lands exactly as the next
    one; None: an empty table). ``tasks`` go to the executors; ``metas`` (pypaimon ``DataFileMeta``
    by file) stay on the driver, which builds the commit messages from them."""

    snapshot_id: int | None
    tasks: list[RewriteTask]
    metas: dict[FileKey, Any]

    def messages(self, rewritten: Iterable[RewrittenIndex | None]) -> list[Any]:
        """The commit message of each rewritten file: its planned entry deleted, the same data
        file added with its new index."""
        out = []
        for done in rewritten:
            if done is None:
                continue
            meta = self.metas[(done.partition, done.bucket, done.level, done.file_name)]
            new = replace(meta, extra_files=list(done.extra_files), embedded_index=done.embedded_index)
            out.append(CommitMessage(partition=done.partition, bucket=done.bucket, new_files=[new],
                                     deleted_files=[meta]))
        return out


# ------------------------------------------------------------------------------------------------
# columns of a data file (schema evolution) and the options it gets
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _FileSchema:
    """What the current index options mean for files written with one schema."""

    options: FileIndexOptions  # specs renamed to the file's column names, absent columns dropped
    types: dict[str, DataType]  # file column name -> Paimon type

    @property
    def pairs(self) -> frozenset[Pair]:
        return frozenset((spec.column, spec.index_type) for spec in self.options.specs)


def _types(fields: Iterable[Any]) -> dict[str, DataType]:
    types: dict[str, DataType] = {}
    for field in fields:
        try:
            types[field.name] = parse_type(str(field.type))
        except Exception:  # a type no index handles (ROW, ...): the index build reports it if asked
            continue
    return types


class _Schemas:
    """Current index options per file schema id (cached; ids map columns across renames)."""

    def __init__(self, table: PaimonTable, options: FileIndexOptions) -> None:
        self._table = table
        self._options = options
        self._current = table.table_schema
        self._cache: dict[int, _FileSchema] = {}

    def of(self, schema_id: int) -> _FileSchema:
        if schema_id not in self._cache:
            self._cache[schema_id] = self._build(schema_id)
        return self._cache[schema_id]

    def _build(self, schema_id: int) -> _FileSchema:
        file_schema = self._current if schema_id == self._current.id else \
            self._table.schema_manager.get_schema(schema_id)
        if file_schema is None:  # schema file gone: assume the current column names
            file_schema = self._current
        by_id = {field.id: field.name for field in file_schema.fields}
        renamed = {field.name: by_id[field.id] for field in self._current.fields if field.id in by_id}
        specs = tuple(IndexSpec(renamed[spec.column], spec.index_type, spec.options)
                      for spec in self._options.specs if spec.column in renamed)
        options = FileIndexOptions(specs, self._options.in_manifest_threshold, self._options.read_enabled)
        return _FileSchema(options, _types(file_schema.fields))


def _options(table: PaimonTable, options: FileIndexOptions | None) -> FileIndexOptions:
    return options if options is not None else FileIndexOptions.from_table_options(table_options(table))


# ------------------------------------------------------------------------------------------------
# planning (driver)
# ------------------------------------------------------------------------------------------------
def partition_filter(table: PaimonTable, partitions: PartitionSelection | None
                      ) -> Callable[[list[tuple[Any, ...]]], set[tuple[Any, ...]]]:
    """A function selecting, from a list of partition value tuples, those ``partitions`` names."""
    keys = list(table.partition_keys or [])
    if partitions is None:
        return set
    if not keys:
        raise InvalidPredicateError("the table is not partitioned; rewrite it without a partition filter")
    if isinstance(partitions, Mapping) or (isinstance(partitions, Sequence)
                                           and not isinstance(partitions, str)):
        specs = [partitions] if isinstance(partitions, Mapping) else list(partitions)
        for spec in specs:
            unknown = sorted(set(spec) - set(keys))
            if unknown:
                raise InvalidPredicateError(f"partition spec {dict(spec)} names {unknown}, which are not "
                                            f"partition columns (partition columns: {keys})")

        def by_spec(values: list[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
            return {v for v in values
                    if any(all(str(v[keys.index(k)]) == str(x) for k, x in spec.items()) for spec in specs)}

        return by_spec

    from paimon_index.arrow_filter import to_arrow_expression

    fields = [f for f in table.table_schema.fields if f.name in keys]
    types = _types(fields)
    bound = bind_predicate(partitions, types) if isinstance(partitions, str) else bind(partitions, types)
    expression = to_arrow_expression(bound, types)
    arrow = arrow_schema(fields)
    selected_columns = columns_of(bound)

    def by_predicate(values: list[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
        if not values:
            return set()
        rows = pa.Table.from_pylist([dict(zip(keys, v, strict=True)) for v in values], schema=arrow)
        rows = rows.append_column("__position__", pa.array(range(len(values)), pa.int64()))
        kept = rows.select([*selected_columns, "__position__"]).filter(expression)
        return {values[i] for i in kept.column("__position__").to_pylist()}

    return by_predicate


def _container_pairs(meta: Any, io: TableIO) -> frozenset[Pair] | None:
    """The (column, index type) pairs in the file's current container (None: no container).

    Raises:
        CorruptFileError, OSError: the container cannot be read.
    """
    container = open_container(io, meta)
    if container is None:
        return None
    with container:  # reads the head only
        return frozenset((entry.column, entry.index_type) for entry in container.entries)


def _task(partition: tuple[Any, ...], bucket: int, meta: Any, wanted: frozenset[Pair], io: TableIO
          ) -> tuple[bool, str] | None:
    """(verify, reason) of the file's task, or None when it needs none."""
    try:
        current = _container_pairs(meta, io)
    except (CorruptFileError, OSError):
        return False, REASON_INDEX_UNREADABLE
    if current is None and not wanted:
        return None  # no index wanted, none present
    if current != wanted:
        return False, REASON_INDEX_TYPES_CHANGED
    return True, REASON_VERIFY


def _key(partition: tuple[Any, ...], bucket: int, meta: Any) -> FileKey:
    return partition, bucket, meta.level, meta.file_name


def _retired(table: PaimonTable, snapshot: Any, keys: set[FileKey]) -> dict[FileKey, set[Retired]]:
    """The DELETE entries, in ``snapshot``'s manifests, of the data files ``keys`` names.

    Paimon's and pypaimon's scans first collect every DELETEd identifier of a snapshot's manifests
    and then drop every ADD with one of them, regardless of order: an identifier once deleted can
    never be added again (until a manifest full compaction drops the pair).
    """
    retired: dict[FileKey, set[Retired]] = {}
    for partition, bucket, level, name, extras, embedded in deleted_entries(table, snapshot,
                                                                            {key[3] for key in keys}):
        key = (partition, bucket, level, name)
        if key in keys:
            retired.setdefault(key, set()).add((extras, embedded))
    return retired


def plan_rewrite(table: PaimonTable, partitions: PartitionSelection | None = None,
                 options: FileIndexOptions | None = None) -> RewritePlan:
    """The data files of the latest snapshot (in ``partitions``) whose index may need rebuilding.

    Files with no index configured and none present are left out; see the module docstring for
    how the others are classified.

    Raises:
        InvalidPredicateError: ``partitions`` names a column that is not a partition column, or the
            table is not partitioned.
    """
    opts = _options(table, options)
    select = partition_filter(table, partitions)
    plan = plan_snapshot(table, for_write=True)
    snapshot = plan.snapshot
    if snapshot is None:
        return RewritePlan(None, [], {})
    splits = plan.splits
    selected = select(list(dict.fromkeys(tuple(split.partition.values or ()) for split in splits)))
    schemas = _Schemas(table, opts)
    io = TableIO.of(table)
    planned = []
    for split in splits:
        partition = tuple(split.partition.values or ())
        if partition not in selected:
            continue
        for meta in split.files:
            decision = _task(partition, split.bucket, meta, schemas.of(meta.schema_id).pairs, io)
            if decision is not None:
                planned.append((partition, split.bucket, meta, *decision))
    retired = _retired(table, snapshot, {_key(p, b, m) for p, b, m, _, _ in planned}) if planned else {}
    tasks = [RewriteTask(p, b, IndexedFile.of(m), verify, reason, frozenset(retired.get(_key(p, b, m), ())))
             for p, b, m, verify, reason in planned]
    return RewritePlan(snapshot.id, tasks, {_key(p, b, m): m for p, b, m, _, _ in planned})


# ------------------------------------------------------------------------------------------------
# rebuilding one file (executor)
# ------------------------------------------------------------------------------------------------
def build_current_container(table: PaimonTable, meta: Any,
                            options: FileIndexOptions | None = None) -> bytes | None:
    """The container the table's current options ask for, built from the data file's own rows."""
    file_schema = _Schemas(table, _options(table, options)).of(meta.schema_id)
    return _build(meta, file_schema, TableIO.of(table))


def _build(meta: Any, file_schema: _FileSchema, io: TableIO) -> bytes | None:
    if file_schema.options.empty:
        return None
    with io.parquet(meta.file_path) as parquet:
        present = set(parquet.schema_arrow.names)
        specs = tuple(spec for spec in file_schema.options.specs if spec.column in present)
        if not specs:
            return None
        columns = sorted({spec.column for spec in specs})
        # Exactly the file's rows in file order (a partition folder is not a column here).
        rows = parquet.read(columns=columns)
    options = FileIndexOptions(specs, file_schema.options.in_manifest_threshold)
    return build_file_index(rows, options, {c: t for c, t in file_schema.types.items() if c in columns})


def _pairs(container: bytes | None) -> frozenset[Pair]:
    if container is None:
        return frozenset()
    with ContainerReader(container) as reader:
        return frozenset((entry.column, entry.index_type) for entry in reader.entries)


def _current_bytes(meta: Any, io: TableIO) -> bytes | None:
    source = container_source(meta)
    if source is None or isinstance(source, bytes):
        return source
    return io.read_bytes(source)


def _other_extras(meta: Any) -> tuple[str, ...]:
    return tuple(name for name in meta.extra_files or () if not name.endswith(INDEX_FILE_SUFFIX))


def _storage(meta: Any, wanted: bytes | None, threshold: int, retired: frozenset[Retired]
             ) -> tuple[str, bytes | None]:
    """How to store ``wanted``, and the bytes to store: (STORE_*, container).

    As Paimon: no index -> none; at most ``threshold`` bytes -> embedded; else a new index file. But
    when that manifest entry (same extra files and embedded bytes) was already deleted once — e.g.
    moving from an index file back to the embedded bytes the file had before — the ADD would be
    invisible, so the container goes into a new index file instead (an empty container when no
    index is wanted); a new index file name is never one a DELETE entry holds.
    """
    if wanted is not None and len(wanted) > threshold:
        return STORE_FILE, wanted
    if (_other_extras(meta), wanted) not in retired:
        return (STORE_NONE if wanted is None else STORE_EMBEDDED), wanted
    return STORE_FILE, EMPTY_CONTAINER if wanted is None else wanted


def _up_to_date(meta: Any, storage: str, container: bytes | None, io: TableIO) -> bool:
    has_file = any(name.endswith(INDEX_FILE_SUFFIX) for name in meta.extra_files or ())
    if storage == STORE_NONE:
        return not has_file and not meta.embedded_index
    if storage == STORE_EMBEDDED:
        return not has_file and meta.embedded_index == container
    if meta.embedded_index or not has_file:
        return False
    try:
        return _current_bytes(meta, io) == container
    except OSError:
        return False


def _fresh_index_name(table: PaimonTable, meta: Any, retired: frozenset[Retired]) -> str:
    """Paimon's next index file name for ``meta``, skipping names on disk or in a DELETE entry."""
    directory = posixpath.dirname(meta.file_path)
    taken = {name for extras, _ in retired for name in extras}
    current = next((n for n in meta.extra_files or () if n.endswith(INDEX_FILE_SUFFIX)), None)
    name = next_index_file_name(meta.file_name, current)
    while name in taken or table.file_io.exists(posixpath.join(directory, name)):
        name = next_index_file_name(meta.file_name, name)
    return name


def _store(table: PaimonTable, file: IndexedFile, storage: str, container: bytes | None,
           retired: frozenset[Retired]) -> tuple[tuple[str, ...], bytes | None]:
    """(extra files, embedded index) of ``file`` with its index stored as decided (a new index
    file written here); other extra files are kept."""
    extras = _other_extras(file)
    if storage == STORE_NONE:
        return extras, None
    if storage == STORE_EMBEDDED:
        return extras, container
    name = _fresh_index_name(table, file, retired)
    with table.file_io.new_output_stream(posixpath.join(posixpath.dirname(file.file_path), name)) as out:
        out.write(container)
    return (*extras, name), None


def rewrite_file(table: PaimonTable, task: RewriteTask,
                 options: FileIndexOptions | None = None) -> RewrittenIndex | None:
    """How the file's index is stored after rebuilding it, or None when it is up to date (the
    executor's half: ``table`` opened where it runs, the task plain values only).

    A new ``.index`` file, if any, is written here; it becomes visible only with the commit
    (:meth:`RewritePlan.messages`, :func:`commit_rewrite`).
    """
    opts = _options(table, options)
    file = task.file
    file_schema = _Schemas(table, opts).of(file.schema_id)
    io = TableIO.of(table)
    wanted = _build(file, file_schema, io)
    storage, container = _storage(file, wanted, opts.in_manifest_threshold, task.retired)
    # A task planned because the index types differ is rewritten without reading the old bytes,
    # unless the build came out with other types than planned (a column missing from the file).
    compare = task.verify or _pairs(wanted) != file_schema.pairs
    if (compare or storage == STORE_NONE) and _up_to_date(file, storage, container, io):
        return None
    extras, embedded = _store(table, file, storage, container, task.retired)
    return RewrittenIndex(task.partition, task.bucket, file.level, file.file_name, extras, embedded)


# ------------------------------------------------------------------------------------------------
# commit (driver)
# ------------------------------------------------------------------------------------------------
def commit_rewrite(table: PaimonTable, messages: Iterable[Any | None], *, snapshot_id: int | None = None
                   ) -> int | None:
    """Commit the rewritten files as snapshot ``snapshot_id + 1``; None when none changed.

    ``snapshot_id`` is the snapshot the tasks were planned on (``RewritePlan.snapshot_id``); without
    it the latest snapshot is taken as the base (the old, inexact behaviour, for callers that lost
    the plan).

    Raises:
        PaimonIndexError: one data file appears in two messages.
        ConcurrentChangeError: any commit landed after the plan (it may have removed or replaced a
            planned file); nothing was committed and the new index files were deleted.
    """
    collected = [m for m in messages if m is not None]
    # The new index files exist already: a planned snapshot that expired meanwhile deletes them too.
    txn = (Transaction.begin(table, operation="rewrite_file_index") if snapshot_id is None
           else Transaction.on(table, snapshot_id, operation="rewrite_file_index", staged=collected))
    with txn:
        if snapshot_id is None:
            txn.stage(collected)
        seen: set[tuple[tuple[Any, ...], int, str]] = set()
        for message in collected:
            for meta in message.deleted_files:
                key = (tuple(message.partition), message.bucket, meta.file_name)
                if key in seen:
                    raise PaimonIndexError(f"data file {meta.file_name} was rewritten twice in one commit")
                seen.add(key)
        return txn.commit()


def rewrite_file_index(table: PaimonTable, where: PartitionSelection | None = None,
                       progress: Callable[[int, int], None] | None = None) -> int | None:
    """Rebuild every out-of-date file index (of the partitions ``where`` selects) in one snapshot.

    ``progress(done, total)`` is called after each planned file. Returns the new snapshot's id, or
    None when every index was up to date (nothing is committed then).
    """
    options = _options(table, None)
    plan = plan_rewrite(table, where, options)
    rewritten = []
    for done, task in enumerate(plan.tasks, 1):
        rewritten.append(rewrite_file(table, task, options))
        if progress is not None:
            progress(done, len(plan.tasks))
    if not plan.tasks:
        return None
    return commit_rewrite(table, plan.messages(rewritten), snapshot_id=plan.snapshot_id)
