"""Deletion-vectors mode for primary-key tables: upserts that look up older rows, merge-free reads.

    upsert_arrow(table, data) -> snapshot id       rows with a ``_ROW_KIND`` column ('+I', '+U', '-U',
                                                   '-D') or without (all upserts)
    read_primary_key(table, predicate) -> (rows, ScanReport)
    compact(table, full=False, threshold=0.5) -> snapshot id | None
    set_deletion_vectors(table_warehouse, identifier, enabled)

A primary-key data file holds ``_KEY_<pk>...``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the
table's columns, sorted by key, one row per key. In deletion-vectors mode (seed 004) a reader
reads the files of levels >= 1 with their deletion vectors and merges nothing; so a write must
leave, for every key, at most one live row in those files. An upsert (one snapshot):

1. **Batch**: the new rows are deduplicated by key (the last one wins; ``-D``/``-U`` delete the
   key); the bucket's level-0 files (written by plain pypaimon, invisible to merge-free readers)
   are folded in as older rows and removed.
2. **Write**: pypaimon's key-value writer writes the surviving upserts (it assigns buckets — fixed,
   or dynamic through the HASH index — and sequence numbers that keep growing), then each new file
   gets its file index.
3. **Look up** (vectorized, per bucket): every key written or deleted is joined with the key
   columns of the bucket's live files whose ``[min_key, max_key]`` can hold it; each match is a row
   position added to that file's deletion vector (Paimon's lookup compaction gets the same outcome:
   ``ForceUpLevel0Compaction`` + ``LookupMergeTreeCompactRewriter``).
4. **Level**: a new file goes to the lowest level 1 .. num-levels - 1 where no file's key range
   overlaps its own, so every level >= 1 stays a sorted run. When no level is free, the bucket is
   compacted: all its live rows (deletion vectors applied, the new file included) are rewritten
   into the top level and its vectors dropped.
5. **Commit**: new files, removed files, DV index adds/deletes and pypaimon's HASH index changes go
   into one pypaimon commit, after checking no snapshot landed since the plan.

``compact`` rewrites files whose deleted fraction exceeds ``threshold`` (seed 004 §5.1, default
50%) without their deleted rows, at their level, and drops their vectors; ``full=True`` rewrites each
bucket into one file at the top level with no vectors. Rewritten rows get new sequence numbers
(every key has one live row, so order between versions is no longer needed).

Differences from Java, on purpose: Java commits an APPEND snapshot (level-0 files) and then a
COMPACT one; pypaimon's batch commit takes no compact increments, so here one snapshot carries the
final state (new files already at their level). Java's universal compaction merges sorted runs by
size ratios; here a bucket is compacted only when no level is free.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paimon_index.deletionvectors.maintainer import BucketDvMaintainer
from paimon_index.errors import InvalidOptionError, PaimonIndexError
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader
from paimon_index.fileindex.options import parse_bool, parse_int
from paimon_index.predicate import Leaf, Op, Predicate, bind
from paimon_index.sql import bind_predicate
from paimon_index.table.read import ScanReport, UnsupportedTableError, container_source, read_split
from paimon_index.table.row_level import DV_BITMAP64, DV_ENABLED, ConcurrentChangeError
from paimon_index.table.write import attach_file_indexes, conform, table_options, table_schema, write_with

__all__ = ["ROW_KIND_COLUMN", "PreparedUpsert", "PrimaryKeyTableError", "commit_prepared", "commit_upsert",
           "compact", "dv_mode", "prepare_upsert",
           "read_primary_key", "set_deletion_vectors", "split_batch", "upsert_arrow"]

#: Optional column of an upsert batch: Paimon's row kinds as short strings.
ROW_KIND_COLUMN = "_ROW_KIND"
DELETING_KINDS = ("-D", "-U")
KEY_PREFIX = "_KEY_"
SEQUENCE_COLUMN = "_SEQUENCE_NUMBER"
VALUE_KIND_COLUMN = "_VALUE_KIND"
#: ``_VALUE_KIND`` bytes of rows that delete their key (UPDATE_BEFORE, DELETE).
DELETING_VALUE_KINDS = (1, 3)
NUM_LEVELS = "num-levels"
SORTED_RUN_TRIGGER = "num-sorted-run.compaction-trigger"
DEFAULT_SORTED_RUN_TRIGGER = 5
MERGE_ON_READ = "deletion-vectors.merge-on-read"
MERGE_ENGINE = "merge-engine"
DEFAULT_COMPACTION_THRESHOLD = 0.5
#: Up to this many keys, a file index on a single-column key is asked before the file is read.
LOOKUP_INDEX_MAX_KEYS = 1024
_POSITION = "__paimon_index_position__"
_ORDER = "__paimon_index_order__"


class PrimaryKeyTableError(PaimonIndexError):
    """A primary-key operation that the table's state or options do not allow."""


# ------------------------------------------------------------------------------------------------
# table facts
# ------------------------------------------------------------------------------------------------
def _check(table: Any) -> dict[str, str]:
    options = table_options(table)
    if not table.is_primary_key_table:
        raise UnsupportedTableError("upserts by key need a primary-key table")
    if not parse_bool(options.get(DV_ENABLED, "false"), DV_ENABLED):
        raise InvalidOptionError(f"deletion-vectors mode needs '{DV_ENABLED}' = 'true'")
    if options.get(MERGE_ENGINE, "deduplicate") != "deduplicate":
        raise UnsupportedTableError(f"merge engine {options[MERGE_ENGINE]!r}: only deduplicate is supported")
    return options


def dv_mode(table: Any) -> bool:
    """Whether ``table`` is a primary-key table in deletion-vectors mode."""
    options = table_options(table)
    return bool(table.is_primary_key_table) and parse_bool(options.get(DV_ENABLED, "false"), DV_ENABLED)


def check_merge_free(table: Any) -> bool:
    """True when a merge-free read sees everything; False when level-0 files need merge-on-read.

    Raises PrimaryKeyTableError when level-0 files exist and merge-on-read is not enabled.
    """
    options = _check(table)
    level0 = [m for s in table.new_read_builder().new_scan().plan_for_write().splits()
              for m in s.files if m.level == 0]
    if not level0:
        return True
    if parse_bool(options.get(MERGE_ON_READ, "false"), MERGE_ON_READ):
        return False
    raise PrimaryKeyTableError(f"the table has {len(level0)} level-0 files, which a merge-free read does "
                               f"not see: write through upsert_arrow, run compact(), or set "
                               f"'{MERGE_ON_READ}' = 'true'")


def _max_level(options: Mapping[str, str]) -> int:
    trigger = parse_int(options.get(SORTED_RUN_TRIGGER, str(DEFAULT_SORTED_RUN_TRIGGER)), SORTED_RUN_TRIGGER)
    levels = parse_int(options.get(NUM_LEVELS, str(trigger + 1)), NUM_LEVELS, minimum=2)
    return levels - 1


def _user_columns(table: Any) -> list[str]:
    return [f.name for f in table.fields]


@dataclass
class _Bucket:
    """The live files of one (partition, bucket) in the planned snapshot."""

    partition: Any  # GenericRow
    bucket: int
    files: list[Any] = field(default_factory=list)
    deletion_files: dict[str, Any] = field(default_factory=dict)
    dv_entries: list[Any] = field(default_factory=list)


@dataclass
class _Plan:
    snapshot_id: int | None
    buckets: dict[tuple[tuple[Any, ...], int], _Bucket]
    index_dir: str
    bitmap64: bool


def _plan(table: Any) -> _Plan:
    from pypaimon.index.index_file_handler import IndexFileHandler

    from paimon_index.deletionvectors.index_file import DELETION_VECTORS_INDEX

    options = table_options(table)
    snapshot = table.snapshot_manager().get_latest_snapshot()
    index_dir = str(table.path_factory().index_path())
    bitmap64 = parse_bool(options.get(DV_BITMAP64, "false"), DV_BITMAP64)
    plan = _Plan(None if snapshot is None else snapshot.id, {}, index_dir, bitmap64)
    if snapshot is None:
        return plan
    pinned = table.copy({"scan.snapshot-id": str(snapshot.id)})
    for split in pinned.new_read_builder().new_scan().plan_for_write().splits():
        key = (tuple(split.partition.values), split.bucket)
        bucket = plan.buckets.setdefault(key, _Bucket(split.partition, split.bucket))
        deletion = split.data_deletion_files or [None] * len(split.files)
        for meta, dfile in zip(split.files, deletion, strict=True):
            bucket.files.append(meta)
            if dfile is not None:
                bucket.deletion_files[meta.file_name] = dfile
    for entry in IndexFileHandler(table).scan(snapshot):
        if entry.index_file.index_type == DELETION_VECTORS_INDEX:
            key = (tuple(entry.partition.values), entry.bucket)
            if key in plan.buckets:
                plan.buckets[key].dv_entries.append(entry)
    return plan


def _maintainer(plan: _Plan, bucket: _Bucket) -> BucketDvMaintainer:
    def open_index_file(meta: Any) -> str:
        return meta.external_path or posixpath.join(plan.index_dir, meta.file_name)

    return BucketDvMaintainer.restore(bucket.dv_entries, open_index_file, partition=bucket.partition,
                                      bucket=bucket.bucket, bitmap64=plan.bitmap64)


# ------------------------------------------------------------------------------------------------
# reading files
# ------------------------------------------------------------------------------------------------
def _live_rows(meta: Any, maintainer: BucketDvMaintainer, columns: list[str] | None = None) -> pa.Table:
    """A data file's rows not deleted by its vector, with their positions."""
    rows = pq.ParquetFile(meta.file_path).read(columns=columns)
    rows = rows.append_column(_POSITION, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    vector = maintainer.deletion_vector_of(meta.file_name)
    if vector is not None:
        deleted = vector.positions()
        keep = np.ones(rows.num_rows, dtype=bool)
        keep[deleted[deleted < rows.num_rows]] = False
        rows = rows.filter(pa.array(keep))
    return rows


def _key_tuple(row: Any) -> tuple[Any, ...]:
    return tuple(row.values)


def _overlaps(meta: Any, low: tuple[Any, ...], high: tuple[Any, ...]) -> bool:
    return not (_key_tuple(meta.max_key) < low or high < _key_tuple(meta.min_key))


def _key_range(keys: pa.Table) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    ordered = keys.sort_by([(c, "ascending") for c in keys.column_names])
    first, last = ordered.slice(0, 1).to_pylist()[0], ordered.slice(ordered.num_rows - 1).to_pylist()[0]
    return tuple(first.values()), tuple(last.values())


def _index_rules_out(meta: Any, keys: pa.Table, schema: Mapping[str, Any]) -> bool:
    """True when the file's index on a (single-column) key proves none of ``keys`` is in the file."""
    if keys.num_columns != 1 or keys.num_rows > LOOKUP_INDEX_MAX_KEYS:
        return False
    source = container_source(meta)
    column = keys.column_names[0]
    if source is None or column not in schema:
        return False
    predicate = bind(Leaf(Op.IN, column, tuple(keys.column(0).to_pylist())), schema)
    with ContainerReader(source, meta.file_path) as container:
        # A corrupt index must not lose a deletion: it answers REMAIN and the file is read.
        return not FileIndexEvaluator(container, schema, on_corrupt="remain").evaluate(predicate).remain


def _mark_keys(bucket: _Bucket, maintainer: BucketDvMaintainer, keys: pa.Table, skip: set[str],
               schema: Mapping[str, Any] | None = None) -> int:
    """Mark every live row of ``keys`` (columns = primary keys) in the bucket's files; count marked.

    Files are read only when their key range can hold a key and, for a single-column key with a
    file index on it (and at most :data:`LOOKUP_INDEX_MAX_KEYS` keys), when the index cannot rule
    the keys out.
    """
    if keys.num_rows == 0:
        return 0
    low, high = _key_range(keys)
    key_columns = [KEY_PREFIX + c for c in keys.column_names]
    probe = keys.rename_columns(key_columns)
    marked = 0
    for meta in bucket.files:
        if meta.file_name in skip or not _overlaps(meta, low, high):
            continue
        if schema is not None and _index_rules_out(meta, keys, schema):
            continue
        existing = _live_rows(meta, maintainer, key_columns)
        hits = existing.join(probe, keys=key_columns, join_type="inner")
        if hits.num_rows:
            marked += maintainer.notify_new_deletions(meta.file_name, np.sort(hits[_POSITION].to_numpy()))
    return marked


# ------------------------------------------------------------------------------------------------
# upsert
# ------------------------------------------------------------------------------------------------
def _last_per_key(data: pa.Table, keys: list[str]) -> pa.Table:
    """The last row of each key, in input order."""
    numbered = data.append_column(_ORDER, pa.array(np.arange(data.num_rows, dtype=np.int64)))
    last = numbered.group_by(keys, use_threads=False).aggregate([(_ORDER, "max")])
    wanted = np.sort(last[f"{_ORDER}_max"].to_numpy())
    return numbered.take(pa.array(wanted)).drop_columns([_ORDER])


def _level0_rows(bucket: _Bucket, maintainer: BucketDvMaintainer, columns: list[str]) -> pa.Table | None:
    """Rows of the bucket's level-0 files as an older upsert batch (sequence order, with row kinds)."""
    level0 = [m for m in bucket.files if m.level == 0]
    if not level0:
        return None
    parts = [_live_rows(m, maintainer, [SEQUENCE_COLUMN, VALUE_KIND_COLUMN, *columns]) for m in level0]
    rows = pa.concat_tables(parts).sort_by([(SEQUENCE_COLUMN, "ascending")])
    kinds = np.where(np.isin(rows[VALUE_KIND_COLUMN].to_numpy(), DELETING_VALUE_KINDS), "-D", "+I")
    return rows.select(columns).append_column(ROW_KIND_COLUMN, pa.array(kinds.astype(object), pa.string()))


def _free_level(files: Iterable[Any], new: Any, max_level: int) -> int | None:
    low, high = _key_tuple(new.min_key), _key_tuple(new.max_key)
    for level in range(1, max_level + 1):
        if not any(m.level == level and _overlaps(m, low, high) for m in files):
            return level
    return None


def _write(table: Any, rows: pa.Table) -> list[Any]:
    writer = table.new_batch_write_builder().new_write()
    try:
        if rows.num_rows:
            write_with(writer, rows)
        return attach_file_indexes(table, writer.prepare_commit())
    finally:
        writer.close()


def upsert_arrow(table: Any, data: pa.Table) -> int | None:
    """Insert or replace rows by key (and delete keys with row kind ``-D``/``-U``), one snapshot."""
    options = _check(table)
    keys = list(table.primary_keys)
    columns = _user_columns(table)
    plan = _plan(table)
    target = pa.schema([*_arrow_fields(table), pa.field(ROW_KIND_COLUMN, pa.string())])
    batch = data if ROW_KIND_COLUMN in data.column_names else \
        data.append_column(ROW_KIND_COLUMN, pa.array(np.full(data.num_rows, "+I", dtype=object), pa.string()))
    unknown = set(pc.unique(batch[ROW_KIND_COLUMN]).to_pylist()) - {"+I", "+U", *DELETING_KINDS}
    if unknown:
        raise InvalidOptionError(f"{ROW_KIND_COLUMN} holds unknown row kinds {sorted(map(str, unknown))}")
    # Level-0 files (plain pypaimon writes) are older than this batch: folded in first.
    older = [t for t in (_level0_rows(b, _maintainer(plan, b), columns) for b in plan.buckets.values())
             if t is not None]
    batch = _last_per_key(pa.concat_tables([conform(t, target) for t in [*older, batch]]), keys)
    deleting = pc.is_in(batch[ROW_KIND_COLUMN], pa.array(DELETING_KINDS))
    upserts = batch.filter(pc.invert(deleting)).select(columns)
    removed_keys = batch.filter(deleting).select(keys)
    messages = _write(table, upserts)
    return _finish(table, plan, messages, removed_keys, _max_level(options))


def split_batch(table: Any, data: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(upserts, keys to delete) of one batch: the last row per key decides (an executor's half)."""
    keys = list(table.primary_keys)
    if ROW_KIND_COLUMN not in data.column_names:
        return data, pa.schema([data.schema.field(k) for k in keys]).empty_table()
    batch = _last_per_key(data, keys)
    deleting = pc.is_in(batch[ROW_KIND_COLUMN], pa.array(DELETING_KINDS))
    upserts = batch.filter(pc.invert(deleting)).drop_columns([ROW_KIND_COLUMN])
    return upserts, batch.filter(deleting).select(keys)


def commit_upsert(table: Any, messages: list[Any], removed_keys: list[pa.Table]) -> int | None:
    """The driver's half of a distributed upsert: look up, mark, place and commit, one snapshot.

    ``messages`` are the pypaimon commit messages of the tasks (level-0 files with their file
    indexes); ``removed_keys`` the keys the tasks saw deleted. A key must reach one task only
    (repartition by the primary key), else its winner would be ambiguous.
    """
    options = _check(table)
    plan = _plan(table)
    if any(m.level == 0 for b in plan.buckets.values() for m in b.files):
        raise PrimaryKeyTableError("the table has level-0 files: run compact(table) (or upsert_arrow) first")
    keys = list(table.primary_keys)
    target = _key_schema(table)
    per_bucket: dict[tuple[tuple[Any, ...], int], list[Any]] = {}
    for message in messages:
        per_bucket.setdefault((tuple(message.partition), message.bucket), []).extend(message.new_files)
    for (_, bucket), files in per_bucket.items():
        bucket_keys = _file_keys(files, target)
        if bucket_keys.group_by(keys).aggregate([]).num_rows != bucket_keys.num_rows:
            raise PrimaryKeyTableError(
                f"a key was written by two tasks into bucket {bucket}: repartition the data by the "
                f"primary key {keys} (paimon_index.spark.primary_key.upsert does)")
    removed = pa.concat_tables([conform(t, target) for t in removed_keys]) if removed_keys else \
        target.empty_table()
    return _finish(table, plan, messages, removed, _max_level(options))


@dataclass
class PreparedUpsert:
    """The outcome of an upsert's lookup, ready to commit (what an executor sends the driver)."""

    snapshot_id: int | None
    messages: list[Any]
    discarded: list[Any]  # files written by this upsert, then compacted away before the commit


def _file_keys(files: Iterable[Any], target: pa.Schema) -> pa.Table:
    names = target.names
    parts = [conform(pq.ParquetFile(f.file_path).read(columns=[KEY_PREFIX + k for k in names])
                     .rename_columns(names), target) for f in files]
    return pa.concat_tables(parts) if parts else target.empty_table()


def _key_schema(table: Any) -> pa.Schema:
    fields = {f.name: f for f in _arrow_fields(table)}
    return pa.schema([pa.field(k, fields[k].type) for k in table.primary_keys])


def _prepare(table: Any, plan: _Plan, messages: list[Any], removed_keys: pa.Table, max_level: int,
             scope: set[tuple[tuple[Any, ...], int]] | None = None) -> PreparedUpsert:
    """Look up, mark and place the new files of ``messages``; nothing is committed.

    Each bucket looks up the keys of its own new files (an existing key stays in its bucket, fixed
    or dynamic) and the deleted keys; ``scope`` limits the buckets searched for deleted keys (the
    buckets an executor owns), default all.
    """
    from pypaimon.table.row.generic_row import GenericRow
    from pypaimon.write.commit_message import CommitMessage

    by_bucket: dict[tuple[tuple[Any, ...], int], list[Any]] = {}
    for message in messages:
        by_bucket.setdefault((tuple(message.partition), message.bucket), []).append(message)
    target = _key_schema(table)
    removed_keys = conform(removed_keys, target)
    searched = set(plan.buckets) if scope is None else set(plan.buckets) & scope
    touched = set(by_bucket) | (searched if removed_keys.num_rows else set())
    # Level-0 files (folded into the batch by upsert_arrow) go wherever they are.
    touched |= {k for k, b in plan.buckets.items() if any(m.level == 0 for m in b.files)}
    prepared = PreparedUpsert(plan.snapshot_id, [], [])
    for key in touched:
        produced = by_bucket.get(key, [])
        existing = plan.buckets.get(key)
        if existing is None:
            existing = _Bucket(GenericRow(list(key[0]), table.partition_keys_fields), key[1])
        maintainer = _maintainer(plan, existing)
        new_files = [f for m in produced for f in m.new_files]
        new_names = {f.file_name for f in new_files}
        removed = [m for m in existing.files if m.level == 0]
        for meta in removed:
            maintainer.remove_deletion_vector_of(meta.file_name)
        lookup = pa.concat_tables([_file_keys(new_files, target), removed_keys])
        _mark_keys(existing, maintainer, lookup, skip=new_names | {m.file_name for m in removed},
                   schema=table_schema(table))
        remaining = [m for m in existing.files if m.level > 0]
        placed = []
        for new in new_files:
            level = _free_level([*remaining, *placed], new, max_level)
            placed.append(replace(new, level=0 if level is None else level))  # 0: compacted below
        if any(m.level == 0 for m in placed):
            rewritten, gone = _compact_bucket(table, existing, maintainer, remaining + placed, max_level)
            removed += [m for m in gone if m.file_name not in new_names]
            prepared.discarded += [m for m in gone if m.file_name in new_names]
            placed = rewritten
        dv = maintainer.prepare_commit()
        dv.write_to(plan.index_dir)
        index_adds = [e for m in produced for e in m.index_adds] + list(dv.added)
        index_deletes = [e for m in produced for e in m.index_deletes] + list(dv.deleted)
        if placed or removed or index_adds or index_deletes:
            prepared.messages.append(CommitMessage(partition=key[0], bucket=key[1], new_files=placed,
                                                   deleted_files=removed, index_adds=index_adds,
                                                   index_deletes=index_deletes))
    return prepared


def prepare_upsert(table: Any, messages: list[Any], removed_keys: pa.Table | None,
                   scope: set[tuple[tuple[Any, ...], int]]) -> PreparedUpsert:
    """An executor's lookup for the buckets it owns (``scope``); the driver commits the result."""
    options = _check(table)
    removed_keys = _key_schema(table).empty_table() if removed_keys is None else removed_keys
    plan = _plan(table)
    if any(m.level == 0 for b in plan.buckets.values() for m in b.files):
        raise PrimaryKeyTableError("the table has level-0 files: run compact(table) (or upsert_arrow) first")
    return _prepare(table, plan, messages, removed_keys, _max_level(options), scope)


def bucket_of_rows(table: Any, rows: pa.Table) -> tuple[list[tuple[Any, ...]], list[int]]:
    """(partition, bucket) of each row, as pypaimon's writer assigns them (fixed-bucket tables)."""
    if rows.num_rows == 0:
        return [], []
    extractor = table.create_row_key_extractor()
    partitions, buckets = extractor.extract_partition_bucket_batch(rows.combine_chunks().to_batches()[0])
    return [tuple(p) for p in partitions], list(buckets)


BucketKey = tuple[tuple[Any, ...], int]


def owned_buckets(table: Any, messages: list[Any], removed_keys: pa.Table | None) -> set[BucketKey]:
    """The buckets a task wrote to or deleted keys from (all of them exclusively its own)."""
    scope = {(tuple(m.partition), m.bucket) for m in messages}
    if removed_keys is not None and removed_keys.num_rows:
        partitions, buckets = bucket_of_rows(table, removed_keys)
        scope |= set(zip(partitions, buckets, strict=True))
    return scope


def commit_prepared(table: Any, prepared: list[PreparedUpsert]) -> int | None:
    """Commit what executors prepared, all planned on the same snapshot, as one snapshot."""
    planned = {p.snapshot_id for p in prepared}
    if len(planned) > 1:
        raise ConcurrentChangeError(f"tasks planned on different snapshots {sorted(map(str, planned))}; "
                                    "nothing was applied, run it again")
    plan = _Plan(planned.pop() if planned else None, {}, "", False)
    snapshot = _commit(table, plan, [m for p in prepared for m in p.messages])
    _remove_files(m for p in prepared for m in p.discarded)
    return snapshot


def _finish(table: Any, plan: _Plan, messages: list[Any], removed_keys: pa.Table,
            max_level: int) -> int | None:
    """Look up, mark, place the new files, and commit everything as one snapshot."""
    prepared = _prepare(table, plan, messages, removed_keys, max_level)
    snapshot = _commit(table, plan, prepared.messages)
    _remove_files(prepared.discarded)
    return snapshot


def _remove_files(metas: Iterable[Any]) -> None:
    """Delete data files (and their ``.index`` files) that no snapshot references."""
    for meta in metas:
        directory = posixpath.dirname(meta.file_path)
        for path in [meta.file_path, *(posixpath.join(directory, e) for e in meta.extra_files or ())]:
            local = path[len("file://"):] if path.startswith("file://") else path
            if os.path.exists(local):
                os.remove(local)


def _commit(table: Any, plan: _Plan, messages: list[Any]) -> int | None:
    if not messages:
        return None
    latest = table.snapshot_manager().get_latest_snapshot()
    if (None if latest is None else latest.id) != plan.snapshot_id:
        raise ConcurrentChangeError(f"snapshot {latest.id if latest else None} was committed after this "
                                    f"change was planned on snapshot {plan.snapshot_id}; nothing was "
                                    "applied, run it again")
    committer = table.new_batch_write_builder().new_commit()
    try:
        committer.commit(messages)
    finally:
        committer.close()
    return table.snapshot_manager().get_latest_snapshot().id


# ------------------------------------------------------------------------------------------------
# compaction
# ------------------------------------------------------------------------------------------------
def _compact_bucket(table: Any, bucket: _Bucket, maintainer: BucketDvMaintainer, files: list[Any],
                    max_level: int) -> tuple[list[Any], list[Any]]:
    """Rewrite ``files`` (live rows only) into the top level; returns (new files, files removed)."""
    columns = _user_columns(table)
    parts = [_live_rows(m, maintainer, [VALUE_KIND_COLUMN, *columns]) for m in files]
    rows = pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})
    if rows.num_rows:
        live = pc.invert(pc.is_in(rows[VALUE_KIND_COLUMN], pa.array(DELETING_VALUE_KINDS, pa.int8())))
        rows = rows.filter(live).select(columns)
    for meta in files:
        maintainer.remove_deletion_vector_of(meta.file_name)
    written = [f for m in _write(table, rows) for f in m.new_files] if rows.num_rows else []
    return [replace(f, level=max_level) for f in written], files


def compact(table: Any, *, full: bool = False, threshold: float = DEFAULT_COMPACTION_THRESHOLD) -> int | None:
    """Rewrite files whose deleted fraction exceeds ``threshold`` (or everything); one snapshot."""
    from pypaimon.write.commit_message import CommitMessage

    options = _check(table)
    if not 0.0 <= threshold <= 1.0:
        raise InvalidOptionError(f"compaction threshold {threshold} outside [0, 1]")
    plan = _plan(table)
    if any(m.level == 0 for b in plan.buckets.values() for m in b.files):
        # Fold level-0 files first: an empty upsert does exactly that.
        upsert_arrow(table, pa.schema(_arrow_fields(table)).empty_table())
        plan = _plan(table)
    max_level = _max_level(options)
    out = []
    for (partition, bucket_id), bucket in plan.buckets.items():
        maintainer = _maintainer(plan, bucket)
        if full:
            picked = list(bucket.files)
        else:
            picked = []
            for meta in bucket.files:
                vector = maintainer.deletion_vector_of(meta.file_name)
                if vector is not None and meta.row_count and vector.cardinality / meta.row_count > threshold:
                    picked.append(meta)
        if not picked or (full and len(picked) == 1 and maintainer.deletion_vector_of(picked[0].file_name)
                          is None and picked[0].level == max_level):
            continue
        if full:
            placed, removed = _compact_bucket(table, bucket, maintainer, picked, max_level)
        else:
            placed, removed = [], []
            for meta in picked:
                new, gone = _compact_bucket(table, bucket, maintainer, [meta], meta.level)
                placed += new
                removed += gone
        dv = maintainer.prepare_commit()
        dv.write_to(plan.index_dir)
        out.append(CommitMessage(partition=partition, bucket=bucket_id, new_files=placed,
                                 deleted_files=removed, index_adds=list(dv.added),
                                 index_deletes=list(dv.deleted)))
    return _commit(table, plan, out)


def _arrow_fields(table: Any) -> list[pa.Field]:
    writer = table.new_batch_write_builder().new_write()
    try:
        return list(writer.table_pyarrow_schema)
    finally:
        writer.close()


# ------------------------------------------------------------------------------------------------
# reading
# ------------------------------------------------------------------------------------------------
def read_primary_key(table: Any, predicate: Predicate | str) -> tuple[pa.Table, ScanReport]:
    """Merge-free read of a deletion-vectors-mode table: level >= 1 files minus their vectors."""
    schema = table_schema(table)
    bound = bind_predicate(predicate, schema) if isinstance(predicate, str) else predicate
    columns = _user_columns(table)
    if not check_merge_free(table):
        return _merge_read(table, bound, schema, columns)
    report = ScanReport()
    batches = [b.select(columns) for split in table.new_read_builder().new_scan().plan().splits()
               for b in read_split(split, bound, schema, report=report)]
    if not batches:
        return pa.schema(_arrow_fields(table)).empty_table(), report
    rows = pa.Table.from_batches(batches)
    return rows, report


def _merge_read(table: Any, bound: Predicate, schema: Mapping[str, Any],
                columns: list[str]) -> tuple[pa.Table, ScanReport]:
    """Merge-on-read (``deletion-vectors.merge-on-read``): every file, newest version of each key."""
    from paimon_index.arrow_filter import to_arrow_expression

    plan = _plan(table)
    report = ScanReport()
    parts = []
    for bucket in plan.buckets.values():
        maintainer = _maintainer(plan, bucket)
        for meta in bucket.files:
            report.files_planned += 1
            report.rows_planned += meta.row_count
            parts.append(_live_rows(meta, maintainer, [SEQUENCE_COLUMN, VALUE_KIND_COLUMN, *columns])
                         .drop_columns([_POSITION]))
    if not parts:
        return pa.schema(_arrow_fields(table)).empty_table(), report
    rows = pa.concat_tables(parts, promote_options="permissive").sort_by([(SEQUENCE_COLUMN, "ascending")])
    report.rows_read = rows.num_rows
    newest = _last_per_key(rows, list(table.primary_keys))
    live = pc.invert(pc.is_in(newest[VALUE_KIND_COLUMN], pa.array(DELETING_VALUE_KINDS, pa.int8())))
    result = newest.filter(live).select(columns).filter(to_arrow_expression(bound, schema))
    report.rows_returned = result.num_rows
    return result, report


def set_deletion_vectors(warehouse: str, identifier: str, enabled: bool) -> Any:
    """Turn deletion-vectors mode on or off; only after a full compaction (seed 004, compatibility)."""
    from paimon_index.table.catalog import alter_table_options, open_table

    table = open_table(warehouse, identifier)
    plan = _plan(table)
    files = [m for b in plan.buckets.values() for m in b.files]
    vectors = [e for b in plan.buckets.values() for e in b.dv_entries]
    fully_compacted = all(len(b.files) <= 1 and not b.dv_entries for b in plan.buckets.values())
    if files and not fully_compacted:
        raise PrimaryKeyTableError(
            f"switching deletion-vectors mode {'on' if enabled else 'off'} needs a full compaction first: "
            f"{len(files)} data files, {len(vectors)} deletion-vector index files "
            "(run compact(table, full=True))")
    return alter_table_options(warehouse, identifier, set_options={DV_ENABLED: str(enabled).lower()})
