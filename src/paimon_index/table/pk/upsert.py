"""Upserts by key: one commit, at most one live row per key in levels >= 1.

    upsert_arrow(table, data) -> snapshot id        rows with a ``_ROW_KIND`` column ('+I', '+U',
                                                    '-U', '-D') or without (all upserts)
    split_batch(table, data) -> (upserts, deleted keys)             an executor's half
    merge_batch(table, data) / prepare_merge(table, data)           the same with a merge engine
    prepare_upsert(table, messages, deleted keys, scope) -> PreparedUpsert   executor, own buckets
    commit_prepared(table, [PreparedUpsert]) -> snapshot id         driver
    commit_upsert(table, messages, [deleted keys]) -> snapshot id   driver does the lookup
    change_by_key(table, where, set | None, rows) -> (snapshot id, rows)   DELETE/UPDATE by key

DELETE and UPDATE of a primary-key table are upserts of the matching rows' keys
(:func:`change_by_key`, the one implementation behind :meth:`paimon_index.Table.delete`/``update``
and :func:`paimon_index.spark.jobs.delete`/``update``; :class:`KeyedRows` says where the rows are:
Arrow tables in this process, DataFrames in Spark).

An upsert:

1. **Pin**: a :class:`~paimon_index.table.transaction.Transaction` pins the latest snapshot N;
   everything below is planned on N (:func:`~paimon_index.table.pk.plan.plan_snapshot`).
2. **Batch**: NULL keys are refused; rows are deduplicated by key (the last one wins; ``-D``/``-U``
   delete the key); the level-0 files of plain pypaimon writes (invisible to merge-free readers)
   are folded in as older rows and removed. With a merge engine (``partial-update``,
   ``aggregation``: :mod:`~paimon_index.table.pk.merge`) the rows of a key are merged in order,
   then with the key's old live row read back from its file; the result is written, or deletes
   the key.
3. **Write**: pypaimon's key-value writer writes the surviving upserts (it assigns buckets — fixed,
   or dynamic through the HASH index — and sequence numbers), each new file gets its file index.
4. **Look up** per bucket (:mod:`~paimon_index.table.pk.lookup`): the bucket's new keys and the
   deleted keys of its partition, trimmed, mark the older rows in deletion vectors. With
   ``changelog-producer`` = ``lookup`` the same read gives the change rows, written as the
   bucket's changelog file (:mod:`~paimon_index.table.pk.changelog`; such a snapshot commits as
   ``COMPACT``, never ``OVERWRITE``, so Java's changelog readers see it).
5. **Level** (:mod:`~paimon_index.table.pk.levels`): each new file to the lowest free level; with
   none free, the bucket is rewritten into the top level.
6. **Commit** exactly on N, or ConcurrentChangeError with every file written deleted. A change of
   older rows commits as Java's writer commits it (:func:`~paimon_index.table.pk.commit.commit_in_two`):
   ``APPEND`` N + 1 of the write's level-0 files (its rows, and its ``-U``/``-D`` rows of the keys
   it deletes) and ``COMPACT`` N + 2 of its lookup compaction (the same files at their levels, the
   vectors, rewritten buckets, a lookup changelog) — Java's delta and streaming readers read
   ``APPEND`` snapshots only. An upsert that only adds new keys is one ``APPEND`` snapshot, its
   files at their levels. Level-0 files already in N (a crash between the two, a plain pypaimon
   write) are folded first by a ``COMPACT`` of their own (:func:`fold_level0`).

Differences from Java, on purpose: Java's universal compaction merges sorted runs by size ratios;
here a bucket is rewritten only when no level is free. A merge engine's change of older rows is one
snapshot (its level-0 rows would be merged results, merged again by a fold after a crash).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import (
    ConcurrentChangeError,
    InvalidOptionError,
    PrimaryKeyTableError,
    UnsupportedChangelogProducerError,
)
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import (
    DELETION_VECTORS,
    CommitMessage,
    bucket_number,
    latest_snapshot,
    row_key_extractor,
    snapshot_by_id,
    table_name,
    table_options,
)
from paimon_index.table.pk.changelog import (
    INPUT,
    LOOKUP,
    bucket_changelog,
    input_changelog,
    producer,
    write_changelog,
    written_records,
)
from paimon_index.table.pk.commit import (
    abandon,
    begin,
    commit_in_two,
    delete_discarded,
    on_snapshot,
    written_paths,
)
from paimon_index.table.pk.levels import free_level, kinds_as_bytes, rewrite, write_retractions, write_rows
from paimon_index.table.pk.lookup import (
    file_keys,
    groups_of,
    join_on_keys,
    keys_of_partition,
    last_per_key,
    lookup_rows,
    mark_keys,
    rows_of_partition,
)
from paimon_index.table.pk.merge import MergeEngine, merge_engine
from paimon_index.table.pk.plan import (
    DELETING_KINDS,
    DELETING_VALUE_KINDS,
    KEY_PREFIX,
    ROW_KIND_COLUMN,
    SEQUENCE_COLUMN,
    VALUE_KIND_COLUMN,
    VALUE_KINDS,
    Bucket,
    BucketKey,
    Plan,
    arrow_fields,
    check_keys,
    check_table,
    key_schema,
    kind_bytes,
    live_current_rows,
    maintainer,
    max_level,
    plan_snapshot,
    trimmed_keys,
    user_columns,
)
from paimon_index.table.schemas import read_schema
from paimon_index.table.write import conform

__all__ = ["KeyedRows", "PreparedUpsert", "bucket_groups", "bucket_of_rows", "buckets_of", "change_by_key",
           "commit_prepared", "commit_upsert", "fold_level0", "folded_snapshot_id", "input_records",
           "merge_batch", "merged_with_old", "owned_buckets", "prepare_merge", "prepare_upsert",
           "split_batch", "upsert_arrow", "with_row_kinds"]

_UPSERT = "upsert"
#: Tasks cannot fold level-0 files: the write's driver folds them first (fold_level0).
_LEVEL0_REFUSAL = ("the table's snapshot has level-0 files (a write whose compaction has not committed "
                   "yet, or one left by a crash or a plain pypaimon write); nothing was applied: run it "
                   "again, and run compact() if this persists")
#: pypaimon skips a commit without data files; one of changelog files only is a change too.
IGNORE_EMPTY_COMMIT = "snapshot.ignore-empty-commit"


@dataclass
class PreparedUpsert:
    """The outcome of an upsert's lookup, ready to commit (what an executor sends the driver)."""

    snapshot_id: int | None
    messages: list[Any]  # the change as one snapshot
    discarded: list[Any]  # files written by this upsert, then rewritten away before the commit
    written: list[str] = field(default_factory=list)  # every file written (deleted if not committed)
    # The same change as Java commits it (commit_in_two): its write (APPEND: level-0 files) and its
    # lookup compaction (COMPACT); taken when ``in_two`` (older rows change) for any task.
    writes: list[Any] = field(default_factory=list)
    compacts: list[Any] = field(default_factory=list)
    in_two: bool = False


def _commit(txn: Any, table: Any, index_dir: str, prepared: list[PreparedUpsert]) -> int | None:
    """Commit what was prepared (by one process or many tasks, all on ``txn``'s snapshot): Java's
    two snapshots when any part changes older rows, else one; the files rewritten away deleted
    after a single snapshot (the two-part form commits them in its APPEND)."""
    if any(p.in_two for p in prepared):
        return commit_in_two(txn, [m for p in prepared for m in p.writes],
                             [m for p in prepared for m in p.compacts])
    messages = [m for p in prepared for m in p.messages]
    txn.stage(messages)
    _changelog_kind(txn, messages)
    snapshot_id = txn.commit()
    delete_discarded(table, index_dir, [m for p in prepared for m in p.discarded])
    return snapshot_id


def with_row_kinds(table: Any, data: pa.Table, kind: str = "+I") -> pa.Table:
    check_keys(table, data)
    if ROW_KIND_COLUMN not in data.column_names:
        kinds = pa.array(np.full(data.num_rows, kind, dtype=object), pa.string())
        return data.append_column(ROW_KIND_COLUMN, kinds)
    unknown = set(pc.unique(data[ROW_KIND_COLUMN]).to_pylist()) - {"+I", "+U", *DELETING_KINDS}
    if unknown:
        raise InvalidOptionError(f"{ROW_KIND_COLUMN} holds unknown row kinds {sorted(map(str, unknown))}")
    return data


def input_records(table: Any, data: pa.Table, *, delete_keys: bool = False, kind: str = "+I",
                  options: Mapping[str, str] | None = None) -> pa.Table | None:
    """With ``changelog-producer`` = ``input``: the records of ``data`` (rows without ``_ROW_KIND``
    are ``kind``) that Java's writer hands to its changelog writer, with ``_ROW_KIND`` -- every one,
    unmerged, but for the kinds ``ignore-delete`` / ``ignore-update-before`` drop before the write
    (a DELETE's ``-D`` rows, ``delete_keys``, are all kept); None with another producer.

    Dynamic buckets: ``data`` carries each record's assigned bucket (``dynamic.assign(records=True)``),
    kept in the result for the writer to group by.

    Raises:
        UnsupportedChangelogProducerError: ``input`` on a dynamic-bucket table's rows without their
            assigned bucket (nothing written).
    """
    options = table_options(table) if options is None else options
    if producer(table, options, input_ok=True) != INPUT:
        return None
    assigned = _BUCKET in data.column_names  # a dynamic-bucket writer's rows (dynamic.prepare)
    if bucket_number(table) <= 0 and not assigned and data.num_rows:  # (no record: compaction's fold)
        raise UnsupportedChangelogProducerError(
            f"'changelog-producer' = 'input' on {table_name(table)} with 'bucket' = "
            f"{options.get('bucket', '-1')}: a dynamic-bucket table's records need their assigned "
            "buckets; write through paimon_index.table.pk.upsert_arrow (Table.upsert) or the Spark jobs")
    batch = with_row_kinds(table, data, kind)
    target = pa.schema([*arrow_fields(table), pa.field(ROW_KIND_COLUMN, pa.string()),
                        *([data.schema.field(_BUCKET)] if assigned else [])])
    return conform(batch if delete_keys else written_records(options, batch), target)


#: ``_VALUE_KIND`` byte -> row kind (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE).
_ROW_KINDS = np.array(list(VALUE_KINDS), dtype=object)


def _level0_rows(table: Any, bucket: Bucket, plan: Plan, columns: list[str]) -> pa.Table | None:
    """Rows of the bucket's level-0 files as an older upsert batch (sequence order, with row kinds)."""
    level0 = [m for m in bucket.files if m.level == 0]
    if not level0:
        return None
    dvs = maintainer(plan, bucket)
    # Level-0 files may predate a schema change: their columns by field id.
    parts = [live_current_rows(table, m, dvs, columns, [SEQUENCE_COLUMN, VALUE_KIND_COLUMN], io=plan.io)
             for m in level0]
    rows = pa.concat_tables(parts).sort_by([(SEQUENCE_COLUMN, "ascending")])
    kinds = _ROW_KINDS[np.clip(rows[VALUE_KIND_COLUMN].to_numpy(), 0, 3)]
    if merge_engine(table) is None:  # deduplicate: -U and -D both delete
        kinds = np.where(np.isin(rows[VALUE_KIND_COLUMN].to_numpy(), DELETING_VALUE_KINDS), "-D", "+I")
    return rows.select(columns).append_column(ROW_KIND_COLUMN, pa.array(kinds.astype(object), pa.string()))


def _merged_with_old(table: Any, plan: Plan, engine: MergeEngine, batch: pa.Table,
                     scope: set[BucketKey] | None = None) -> pa.Table:
    """``batch`` (one merged row per key, with ``_ROW_KIND``) merged with each key's old live row in
    levels >= 1 of the planned snapshot: ``[old row, batch row]`` folded, one row per key ('+I' to
    write, '-D' to delete). Fixed buckets: each key is looked up in its own bucket; dynamic buckets:
    in every bucket of its partition (``scope`` limits the buckets searched)."""
    if batch.num_rows == 0:
        return batch
    columns = user_columns(table)
    trimmed = trimmed_keys(table)
    trimmed_target = key_schema(table, trimmed)
    schema = read_schema(table)
    searched = sorted(set(plan.buckets) if scope is None else set(plan.buckets) & scope, key=repr)
    fixed = bucket_number(table) > 0
    rows = batch
    if fixed:
        rows = batch.append_column(_BUCKET, buckets_of(table, batch.select(columns)))
    old: list[pa.Table] = []
    partitions: dict[tuple[Any, ...], pa.Table] = {}
    for key in searched:
        bucket = plan.buckets[key]
        if not any(m.level > 0 for m in bucket.files):
            continue
        if key[0] not in partitions:
            partitions[key[0]] = rows_of_partition(rows, table, key[0])
        mine = partitions[key[0]]
        if fixed:
            mine = mine.filter(pc.equal(mine[_BUCKET], key[1]))
        if mine.num_rows == 0:
            continue
        probe = conform(mine.select(trimmed), trimmed_target)
        found = lookup_rows(table, bucket, maintainer(plan, bucket), probe, schema, io=plan.io)
        if found.num_rows:
            old.append(found)
    if not old:
        return engine.fold(batch)
    target = batch.schema
    older = pa.concat_tables([conform(t.select(columns), pa.schema([target.field(c) for c in columns]))
                              for t in old])
    older = older.append_column(ROW_KIND_COLUMN, pa.array(["+I"] * older.num_rows, pa.string()))
    # The old row first (Java's LookupMergeFunction adds the high-level record before level 0).
    return engine.fold(pa.concat_tables([older, batch.select(target.names)]))


#: ``upsert_arrow(planned=...)`` default: plan on the latest snapshot.
LATEST = object()
_BUCKET = "__paimon_index_bucket__"


def upsert_arrow(table: Any, data: pa.Table, *, planned: int | object | None = LATEST,
                 delete_keys: bool = False, kind: str = "+I") -> int | None:
    """Insert or replace rows by key (and delete keys with row kind ``-D``/``-U``), one commit.

    With a merge engine (``partial-update``, ``aggregation``) the rows of a key are merged in order,
    then with the key's old live row (:mod:`~paimon_index.table.pk.merge`). ``delete_keys``: the
    rows are ``-D`` rows of a DELETE, which removes their keys whatever the engine (as Paimon's
    connector does: a position delete, or ``-D`` under ``*.remove-record-on-delete``).

    ``kind``: the row kind of rows without ``_ROW_KIND`` (``+U`` for an UPDATE's rows, as Java's
    UPDATE writes them); it shows only in an ``input`` changelog.

    With ``changelog-producer`` = ``input`` (fixed buckets) the rows themselves, unmerged, are the
    changelog (:func:`~paimon_index.table.pk.changelog.input_changelog`), in the same snapshot.

    Returns the id of the last snapshot it committed (None when there was nothing to do).

    Raises:
        NullKeyError: a primary-key column holds NULL (nothing is written).
        ConcurrentChangeError: another snapshot landed after this upsert planned; nothing applied.
    """
    options = check_table(table, upsert=True, input_ok=True)
    engine = None if delete_keys else merge_engine(table, options)
    batch = with_row_kinds(table, data, kind)
    inputs = input_records(table, batch, delete_keys=delete_keys, options=options)
    # ``planned``: the snapshot the caller read ``data`` from (DELETE/UPDATE by predicate); the
    # upsert then plans and commits on exactly that snapshot, so a change that landed after the read
    # makes it fail instead of being overwritten.
    # An input changelog alone (a -D of a key never written) is a change: Java commits it (its
    # commit is empty only without changelog files); pypaimon would skip it as an empty commit.
    committing = table if inputs is None else table.copy({IGNORE_EMPTY_COMMIT: "false"})
    txn = begin(committing, _UPSERT) if planned is LATEST else \
        on_snapshot(committing, planned, _UPSERT)  # type: ignore[arg-type]
    keys = list(table.primary_keys)
    columns = user_columns(table)
    target = pa.schema([*arrow_fields(table), pa.field(ROW_KIND_COLUMN, pa.string())])
    try:
        with txn:
            plan = plan_snapshot(table, txn.snapshot)
            folding = data.num_rows == 0
            if plan.level0() and not folding and merge_engine(table, options) is None:
                # Level-0 files (a crash between an upsert's two commits, a plain pypaimon write) are
                # folded by a compaction of their own first: folded into this write, their rows would
                # be written at level 0 again, and Java's delta readers would read them twice.
                txn.abort()
                folded = fold_level0(table, planned)
                return upsert_arrow(table, data, planned=LATEST if planned is LATEST else folded,
                                    delete_keys=delete_keys, kind=kind)
            # Level-0 files are older than this batch: folded in first (merge engines: with the batch).
            older = [t for t in (_level0_rows(table, b, plan, columns) for b in plan.buckets.values())
                     if t is not None]
            if delete_keys and older and merge_engine(table, options) is not None:
                raise PrimaryKeyTableError("the table has level-0 files to merge first: run compact(table), "
                                           "then delete again")
            batch = pa.concat_tables([conform(t, target) for t in [*older, batch]])
            if engine is None:
                batch = last_per_key(batch, keys)
            else:  # merged in order, then with the old live rows
                batch = _merged_with_old(table, plan, engine, engine.fold(batch, single_as_is=True))
            deleting = pc.is_in(batch[ROW_KIND_COLUMN], pa.array(DELETING_KINDS))
            # Each row keeps its kind (an UPDATE's '+U'), as Java's writer writes it.
            upserts = kinds_as_bytes(batch.filter(pc.invert(deleting)).select([*columns, ROW_KIND_COLUMN]))
            removed = batch.filter(deleting)
            messages = write_rows(table, upserts)
            txn.track(*written_paths(messages, plan.index_dir))
            prepared = _prepare(table, plan, messages, removed, max_level(options), inputs=inputs,
                                in_two=not folding)
            txn.track(*prepared.written)
            if folding and older:
                txn.compact = True  # only level-0 files folded: a compaction, as Java commits it
            return _commit(txn, table, plan.index_dir, [prepared])
    except FileNotFoundError as e:  # the transaction deleted what it wrote
        raise _file_gone(table, txn.snapshot, e) from e


def _file_gone(table: Any, snapshot: Any, error: FileNotFoundError) -> Exception:
    """A file of the snapshot an upsert planned on went missing while it ran (its transaction deleted
    what it wrote). Found by the concurrency suite: a DELETE's fold of level-0 files read a
    deletion-vector file an expiry had just deleted (a raw FileNotFoundError)."""
    from paimon_index.table.files import file_gone_error

    planned = None if snapshot is None else int(snapshot.id)
    return file_gone_error(table, f"upsert of {table_name(table)}", error, planned)


def folded_snapshot_id(table: Any, planned: int | object | None = LATEST) -> int | None:
    """The snapshot a write whose tasks cannot fold level-0 files plans on: ``planned`` (default
    the latest; None: an empty table), or, when it holds level-0 files, the compaction of their own
    that folds them (:func:`fold_level0`). An expired ``planned`` is returned as it is (the write
    then refuses it)."""
    if planned is LATEST:
        snapshot = latest_snapshot(table)
        planned = None if snapshot is None else int(snapshot.id)
    elif planned is not None:
        snapshot = snapshot_by_id(table, planned)  # type: ignore[arg-type]
    if planned is None or snapshot is None or not plan_snapshot(table, snapshot, vectors=False).level0():
        return planned  # type: ignore[return-value]
    return fold_level0(table, planned)


def fold_level0(table: Any, planned: int | object | None = LATEST) -> int | None:
    """Fold the level-0 files of snapshot ``planned`` (default the latest) into the levels, one
    ``COMPACT`` snapshot exactly on it (what a crash between an upsert's two commits, or a plain
    pypaimon write, left behind); its id, or ``planned``'s when there was nothing to fold.

    Raises:
        ConcurrentChangeError: another snapshot landed meanwhile; nothing applied.
    """
    folded = upsert_arrow(table, pa.schema(arrow_fields(table)).empty_table(), planned=planned)
    if folded is not None:
        return folded
    if planned is LATEST:
        latest = latest_snapshot(table)
        return None if latest is None else int(latest.id)
    return planned  # type: ignore[return-value]


def _changelog_kind(txn: Any, messages: list[Any]) -> None:
    """A single snapshot (a merge engine's change) with changelog files that also removes files or
    changes vectors commits as ``COMPACT``.

    pypaimon would make it ``OVERWRITE``, and Java's changelog readers (incremental
    ``changelog`` scans, streaming reads) skip ``OVERWRITE`` snapshots: the changelog would be
    invisible. Java commits the same change as ``APPEND`` (level-0 files) + ``COMPACT`` (the lookup
    compaction: files removed, vectors, changelog); the one snapshot here is the compaction's."""
    if any(m.changelog_files for m in messages) and any(
            m.deleted_files or any(e.index_file.index_type == DELETION_VECTORS for e in
                                   [*m.index_adds, *m.index_deletes]) for m in messages):
        txn.compact = True


def split_batch(table: Any, data: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(upserts, keys to delete) of one batch: the last row per key decides (an executor's half)."""
    check_keys(table, data)
    keys = list(table.primary_keys)
    if ROW_KIND_COLUMN not in data.column_names:
        return data, pa.schema([data.schema.field(k) for k in keys]).empty_table()
    batch = last_per_key(with_row_kinds(table, data), keys)
    deleting = pc.is_in(batch[ROW_KIND_COLUMN], pa.array(DELETING_KINDS))
    upserts = kinds_as_bytes(batch.filter(pc.invert(deleting)))  # each row's kind ('+U'), to write
    return upserts, batch.filter(deleting)


def merge_batch(table: Any, data: pa.Table) -> pa.Table:
    """A task's batch of a merge-engine table merged by key, in order (one row per key, with
    ``_ROW_KIND``); :func:`prepare_merge` or :func:`upsert_arrow` merge it with the old rows."""
    engine = merge_engine(table)
    assert engine is not None, "merge_batch: the table's merge engine is deduplicate"
    return engine.fold(_conformed(table, data), single_as_is=True)


def _conformed(table: Any, data: pa.Table) -> pa.Table:
    """``data`` with row kinds, in the table's Arrow types."""
    target = pa.schema([*arrow_fields(table), pa.field(ROW_KIND_COLUMN, pa.string())])
    return conform(with_row_kinds(table, data), target)


def prepare_merge(table: Any, data: pa.Table) -> PreparedUpsert:
    """An executor's upsert of a merge-engine table (fixed buckets; the task owns the buckets of
    its rows): merge the batch by key, look up and merge the old rows, write the results, mark the
    old rows, place the new files. The driver commits the result (:func:`commit_prepared`).
    With ``changelog-producer`` = ``input`` the task's records, before any merge, are the changelog
    of their buckets (as :func:`upsert_arrow` writes it)."""
    options = check_table(table, upsert=True, input_ok=True)
    engine = merge_engine(table, options)
    assert engine is not None, "prepare_merge: the table's merge engine is deduplicate"
    plan = _executor_plan(table, LATEST)
    conformed = _conformed(table, data)
    inputs = input_records(table, conformed, options=options)
    batch = engine.fold(conformed, single_as_is=True)
    columns = user_columns(table)
    scope = {key for key, _ in bucket_groups(table, batch.select(columns))}
    merged = _merged_with_old(table, plan, engine, batch, scope)
    deleting = pc.is_in(merged[ROW_KIND_COLUMN], pa.array(DELETING_KINDS))
    messages = write_rows(table, merged.filter(pc.invert(deleting)).select(columns))
    try:
        return _prepare(table, plan, messages, merged.filter(deleting).select(list(table.primary_keys)),
                        max_level(options), scope, inputs=inputs)
    except BaseException:
        abandon(table, written_paths(messages, plan.index_dir), _UPSERT)
        raise


def merged_with_old(table: Any, snapshot_id: int | None, batch: pa.Table, scope: set[BucketKey]) -> pa.Table:
    """A task's rows of a merge-engine table (the table's columns and ``_ROW_KIND``, one row per
    key, folded already) merged with each key's old live row in the buckets ``scope`` of snapshot
    ``snapshot_id``, as :func:`prepare_merge` merges them: one row per key, ``_ROW_KIND`` '+I' (to
    write) or '-D' (to delete). Dynamic buckets: a key's old row is in the bucket its HASH index
    gave it, which the task owns."""
    engine = merge_engine(table)
    assert engine is not None, "merged_with_old: the table's merge engine is deduplicate"
    plan = _executor_plan(table, snapshot_id)
    return _merged_with_old(table, plan, engine, _conformed(table, batch), scope)


def _prepare(table: Any, plan: Plan, messages: list[Any], removed: pa.Table, top: int,
             scope: set[BucketKey] | None = None, *, inputs: pa.Table | None = None,
             in_two: bool = True) -> PreparedUpsert:
    """Look up, mark and place the new files of ``messages``; nothing is committed.

    Each bucket looks up the keys of its own new files (an existing key stays in its bucket, fixed
    or dynamic) and the deleted keys of its partition; ``scope`` limits the buckets searched for
    deleted keys (the buckets an executor owns), default all. ``removed``: the rows that delete
    their keys (the primary key, the table's other columns and ``_ROW_KIND`` where known).
    ``inputs``: the write's rows (with ``_ROW_KIND``) of a ``changelog-producer`` = ``input``
    table, written as each bucket's changelog.

    With ``in_two`` (a write, not a fold of level-0 files alone), a bucket whose older rows
    change (vectors, removed files) is prepared as Java commits it, in two parts
    (:func:`~paimon_index.table.pk.commit.commit_in_two`): ``messages`` the write (level-0 files:
    the new rows, the deleted keys' ``-U``/``-D`` rows), ``compacts`` its lookup compaction (the
    new files at their levels, the vectors, the level-0 files removed). A bucket that only gains
    new keys is one message at its final levels.
    """
    by_bucket: dict[BucketKey, list[Any]] = {}
    for message in messages:
        by_bucket.setdefault((tuple(message.partition), message.bucket), []).append(message)
    trimmed_target = key_schema(table, trimmed_keys(table))
    removed_keys = conform(removed.select(list(table.primary_keys)), key_schema(table))
    searched = set(plan.buckets) if scope is None else set(plan.buckets) & scope
    removed_of: dict[tuple[Any, ...], pa.Table] = {}
    if removed_keys.num_rows:
        for partition in {k[0] for k in searched}:
            removed_of[partition] = keys_of_partition(removed_keys, table, partition)
    touched = set(by_bucket) | {k for k in searched if k[0] in removed_of and removed_of[k[0]].num_rows}
    # Level-0 files (folded into the batch by upsert_arrow) go wherever they are.
    touched |= {k for k, b in plan.buckets.items() if any(m.level == 0 for m in b.files)}
    inputs_of: dict[BucketKey, pa.Table] = {}
    if inputs is not None and inputs.num_rows and _BUCKET in inputs.column_names:
        inputs_of = {(tuple(values[:-1]), int(values[-1])): inputs.take(pa.array(idx)).drop_columns(
                     [_BUCKET]) for values, idx in groups_of(
                     inputs, [*table.partition_keys, _BUCKET])}
        touched |= set(inputs_of)
    elif inputs is not None and inputs.num_rows:
        inputs_of = {key: inputs if rows is None else inputs.take(rows)
                     for key, rows in bucket_groups(table, inputs.select(user_columns(table)))}
        touched |= set(inputs_of)
    prepared = PreparedUpsert(plan.snapshot_id, [], [], written_paths(messages, plan.index_dir))
    schema = read_schema(table)
    options = table_options(table)
    changelog = producer(table, options, input_ok=True) == LOOKUP  # input: the callers checked it
    # Merge engines keep one snapshot: their level-0 rows would be merged results, which a fold
    # after a crash between the two commits would merge into the old rows a second time.
    in_two = in_two and merge_engine(table, options) is None
    retractions_of: dict[BucketKey, pa.Table] = {}
    changes_of: list[_BucketChange] = []
    for key in sorted(touched, key=repr):
        produced = by_bucket.get(key, [])
        existing = plan.buckets.get(key)
        if existing is None:
            # A bucket new in this upsert has no file to mark, so its maintainer never emits an
            # index entry (which would need pypaimon's partition row): the plain values do.
            existing = Bucket(key[0], key[1])
        dvs = maintainer(plan, existing)
        new_files = [replace(f, level=0) for m in produced for f in m.new_files]
        new_names = {f.file_name for f in new_files}
        removed_files = [m for m in existing.files if m.level == 0]
        for meta in removed_files:
            dvs.remove_deletion_vector_of(meta.file_name)
        deleted_here = removed_of.get(key[0]) if key in searched else None
        changes = None
        found: list[pa.Table] = []
        if changelog:
            # One read finds the old rows: the changelog's before rows, and the rows to mark.
            changes, positions = bucket_changelog(table, existing, dvs, new_files, deleted_here, io=plan.io,
                                                  schema=schema, skip=new_names | {m.file_name for m in
                                                                                   removed_files},
                                                  options=options)
            for file_name, marked in positions.items():
                dvs.notify_new_deletions(file_name, marked)
            if in_two and changes is not None and deleted_here is not None:  # -D rows to write
                trimmed = trimmed_keys(table)
                gone = changes.filter(pc.equal(changes[VALUE_KIND_COLUMN], pa.scalar(VALUE_KINDS[DELETE_KIND],
                                                                                     pa.int8())))
                found.append(gone.select([KEY_PREFIX + k for k in trimmed]).rename_columns(trimmed))
        else:
            lookup = pa.concat_tables([file_keys(new_files, trimmed_target, io=plan.io), conform(
                trimmed_target.empty_table() if deleted_here is None else deleted_here, trimmed_target)])
            mark_keys(existing, dvs, lookup, skip=new_names | {m.file_name for m in removed_files},
                      schema=schema, io=plan.io, found=found if in_two else None)
        if in_two and deleted_here is not None and deleted_here.num_rows and found:
            retracted = _retraction_rows(table, removed, key, deleted_here, found)
            if retracted is not None:
                retractions_of[key] = retracted
        remaining = [m for m in existing.files if m.level > 0]
        placed: list[Any] = []
        for new in new_files:
            level = free_level([*remaining, *placed], new, top, from_top=not remaining)
            placed.append(replace(new, level=0 if level is None else level))  # 0: rewritten below
        rewritten_away: list[Any] = []
        if any(m.level == 0 for m in placed):
            rewritten, gone_files = rewrite(table, dvs, remaining + placed, top)
            prepared.written += written_paths([], plan.index_dir, rewritten)
            removed_files += [m for m in gone_files if m.file_name not in new_names]
            rewritten_away = [m for m in gone_files if m.file_name in new_names]
            placed = rewritten
        dv = dvs.prepare_commit()
        if key not in plan.buckets and not dv.is_empty:
            raise PrimaryKeyTableError(f"internal: deletion vectors for new bucket {key}")
        stored = dv.write_to(plan.index_dir, write=plan.io.write_new)
        if stored is not None:
            prepared.written.append(stored)
        index_adds = [e for m in produced for e in m.index_adds]  # the HASH index of new keys
        index_deletes = [e for m in produced for e in m.index_deletes]
        input_files: list[Any] = []
        lookup_files: list[Any] = []
        if key in inputs_of:
            # Java's writer: the input records with the bucket's next sequence numbers, at level 0.
            first = max((m.max_sequence_number for m in existing.files), default=-1) + 1
            changes = input_changelog(table, inputs_of[key], first)
            input_files.append(write_changelog(table, key[0], key[1], changes, 0))
        elif changes is not None:
            # Java writes it at the compaction's output level: the level the new rows went to.
            lookup_files.append(write_changelog(table, key[0], key[1], changes,
                                                max((m.level for m in placed), default=0)))
        prepared.written += written_paths([], plan.index_dir, [*input_files, *lookup_files])
        changes_of.append(_BucketChange(key, new_files, placed, removed_files, rewritten_away,
                                        list(dv.added), list(dv.deleted), index_adds, index_deletes,
                                        input_files, lookup_files))
    # Every bucket's -U/-D rows in one writer (a writer per bucket restores sequence numbers each).
    retractions = write_retractions(table, retractions_of)
    prepared.written += written_paths([], plan.index_dir, [f for fs in retractions.values() for f in fs])
    for change in changes_of:
        _add_forms(prepared, change, retractions.get(change.key, []), in_two)
    return prepared


@dataclass
class _BucketChange:
    """What ``_prepare`` decided for one bucket, before its commit messages are built."""

    key: BucketKey
    new_files: list[Any]  # as written, level 0
    placed: list[Any]  # at their levels (or the bucket's rewritten files)
    removed_files: list[Any]
    rewritten_away: list[Any]  # new files a rewrite took in
    dv_added: list[Any]
    dv_deleted: list[Any]
    index_adds: list[Any]  # the HASH index of new keys
    index_deletes: list[Any]
    input_files: list[Any]  # an input changelog
    lookup_files: list[Any]  # a lookup changelog


def _add_forms(prepared: PreparedUpsert, change: _BucketChange, retractions: list[Any], in_two: bool) -> None:
    """Both forms of a bucket's change; the commit takes the two-part one for every bucket when any
    bucket needs it (the write then shows no row until its compaction lands, as Java's does), else
    the single one."""
    key, new_files, placed, removed_files = change.key, change.new_files, change.placed, change.removed_files
    if in_two and (removed_files or retractions or change.dv_added or change.dv_deleted):
        prepared.in_two = True
    index_adds, index_deletes = change.index_adds, change.index_deletes
    input_files, lookup_files = change.input_files, change.lookup_files
    for form, message in (
                (prepared.writes, CommitMessage(partition=key[0], bucket=key[1],
                                                new_files=[*new_files, *retractions], index_adds=index_adds,
                                                index_deletes=index_deletes, changelog_files=input_files)),
                (prepared.compacts, CommitMessage(partition=key[0], bucket=key[1], new_files=placed,
                                                  deleted_files=[*removed_files, *new_files, *retractions],
                                                  index_adds=change.dv_added, index_deletes=change.dv_deleted,
                                                  changelog_files=lookup_files)),
                (prepared.messages, CommitMessage(partition=key[0], bucket=key[1], new_files=placed,
                                                  deleted_files=removed_files,
                                                  index_adds=index_adds + change.dv_added,
                                                  index_deletes=index_deletes + change.dv_deleted,
                                                  changelog_files=[*input_files, *lookup_files]))):
        if not message.is_empty():
            form.append(message)
    prepared.discarded += change.rewritten_away  # in the single form only: the two-part one commits them


def _retraction_rows(table: Any, removed: pa.Table, key: BucketKey, deleted_here: pa.Table,
                     found: list[pa.Table]) -> pa.Table | None:
    """The rows of ``removed`` that delete a key the bucket ``key`` held (``found``: the trimmed keys
    its lookup marked), in the table's columns with their ``_VALUE_KIND`` (``-U``/``-D``), in key
    order; None when there is none."""
    trimmed = trimmed_keys(table)
    hit = pa.concat_tables([conform(f, deleted_here.schema) for f in found]).group_by(trimmed).aggregate([])
    rows = rows_of_partition(removed, table, key[0])
    rows = join_on_keys(rows, conform(hit, key_schema(table, trimmed)), trimmed, "left semi")
    if rows.num_rows == 0:
        return None
    kinds = rows[ROW_KIND_COLUMN] if ROW_KIND_COLUMN in rows.column_names else \
        pa.array([DELETE_KIND] * rows.num_rows, pa.string())
    codes = kind_bytes(kinds)
    fields = arrow_fields(table)
    columns = [rows[f.name] if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type)
               for f in fields]
    data = pa.Table.from_arrays([*columns, codes], schema=pa.schema(
        [*(f.with_nullable(True) for f in fields), pa.field(VALUE_KIND_COLUMN, pa.int8())]))
    return data.sort_by([(k, "ascending") for k in trimmed])  # each row keeps its own kind


def prepare_upsert(table: Any, messages: list[Any], removed_keys: pa.Table | None,
                   scope: set[BucketKey], *, snapshot_id: int | object | None = LATEST,
                   inputs: pa.Table | None = None) -> PreparedUpsert:
    """An executor's lookup for the buckets it owns (``scope``); the driver commits the result.

    ``snapshot_id``: the snapshot to plan on (the one the rows' buckets were assigned on), default
    the latest. ``inputs``: the task's :func:`input_records` (``changelog-producer`` = ``input``),
    written as its buckets' changelog."""
    # 'input': the job's driver checked the producer; a task that got no record has no inputs.
    options = check_table(table, upsert=True, input_ok=True)
    removed_keys = key_schema(table).empty_table() if removed_keys is None else removed_keys
    plan = _executor_plan(table, snapshot_id)
    return _prepare(table, plan, messages, removed_keys, max_level(options), scope, inputs=inputs)


def _executor_plan(table: Any, snapshot_id: int | object | None) -> Plan:
    """An executor's plan of ``snapshot_id`` (``LATEST``: the latest snapshot), which must hold no
    level-0 files (a task cannot fold them: only the driver's upsert_arrow or compact does)."""
    if snapshot_id is LATEST:
        snapshot = table.snapshot_manager().get_latest_snapshot()
    else:
        snapshot = None if snapshot_id is None else _snapshot(table, snapshot_id)  # type: ignore[arg-type]
    plan = plan_snapshot(table, snapshot)
    if plan.level0():
        raise ConcurrentChangeError(_LEVEL0_REFUSAL)
    return plan


def _snapshot(table: Any, snapshot_id: int) -> Any:
    snapshot = snapshot_by_id(table, snapshot_id)
    if snapshot is None:
        raise ConcurrentChangeError(f"snapshot {snapshot_id} was expired while upserting on it; nothing was "
                                    "applied, run it again")
    return snapshot


def bucket_of_rows(table: Any, rows: pa.Table) -> tuple[list[tuple[Any, ...]], list[int]]:
    """(partition, bucket) of each row, as pypaimon's writer assigns them (fixed-bucket tables)."""
    if rows.num_rows == 0:
        return [], []
    extractor = row_key_extractor(table)
    partitions, buckets = extractor.extract_partition_bucket_batch(rows.combine_chunks().to_batches()[0])
    return [tuple(p) for p in partitions], list(buckets)


def buckets_of(table: Any, rows: pa.Table) -> pa.Array:
    """Each row's bucket (int32), as pypaimon's writer assigns it (fixed-bucket tables): the
    vectorized hash, without :func:`bucket_of_rows`' partition tuple per row."""
    if rows.num_rows == 0:
        return pa.array([], pa.int32())
    batch = rows.combine_chunks().to_batches()[0]
    return pa.array(row_key_extractor(table)._extract_buckets_batch(batch), pa.int32())


def bucket_groups(table: Any, rows: pa.Table) -> list[tuple[BucketKey, pa.Array | None]]:
    """The rows of each (partition, bucket), as pypaimon's writer assigns them (fixed-bucket
    tables): their indices (None: all of ``rows``), grouped in Arrow, no loop per row."""
    if rows.num_rows == 0:
        return []
    batch = rows.combine_chunks().to_batches()[0]
    return [((tuple(partition), int(bucket)), indices)
            for partition, bucket, indices in row_key_extractor(table).extract_partition_bucket_groups(batch)]


def owned_buckets(table: Any, messages: list[Any], removed_keys: pa.Table | None) -> set[BucketKey]:
    """The buckets a task wrote to or deleted keys from (all of them exclusively its own)."""
    scope = {(tuple(m.partition), m.bucket) for m in messages}
    if removed_keys is not None and removed_keys.num_rows:
        scope |= {key for key, _ in bucket_groups(table, removed_keys)}
    return scope


def commit_prepared(table: Any, prepared: list[PreparedUpsert]) -> int | None:
    """Commit what executors prepared, all planned on the same snapshot, as exactly the next one."""
    planned = {p.snapshot_id for p in prepared}
    written = [path for p in prepared for path in p.written]
    if len(planned) > 1:
        abandon(table, written, _UPSERT)
        raise ConcurrentChangeError(f"tasks planned on different snapshots {sorted(map(str, planned))}; "
                                    "nothing was applied, run it again")
    if any(m.changelog_files for p in prepared for m in p.messages):
        # An input changelog alone (a -D of a key never written) is a change: Java commits it.
        table = table.copy({IGNORE_EMPTY_COMMIT: "false"})
    with on_snapshot(table, planned.pop() if planned else None, _UPSERT, written) as txn:
        return _commit(txn, table, str(table.path_factory().index_path()), prepared)


def commit_upsert(table: Any, messages: list[Any], removed_keys: list[pa.Table]) -> int | None:
    """The driver's half of a distributed upsert: look up, mark, place and commit, one snapshot.

    ``messages`` are the pypaimon commit messages of the tasks (level-0 files with their file
    indexes); ``removed_keys`` the keys the tasks saw deleted. A key must reach one task only
    (repartition by the primary key), else its winner would be ambiguous.
    """
    options = check_table(table, upsert=True)
    with begin(table, _UPSERT) as txn:
        plan = plan_snapshot(table, txn.snapshot)
        txn.track(*written_paths(messages, plan.index_dir))
        if plan.level0():
            raise ConcurrentChangeError(_LEVEL0_REFUSAL)
        trimmed = trimmed_keys(table)
        trimmed_target = key_schema(table, trimmed)
        per_bucket: dict[BucketKey, list[Any]] = {}
        for message in messages:
            per_bucket.setdefault((tuple(message.partition), message.bucket), []).extend(message.new_files)
        for (_, bucket), files in per_bucket.items():
            bucket_keys = file_keys(files, trimmed_target, io=TableIO.of(table))
            if bucket_keys.group_by(trimmed).aggregate([]).num_rows != bucket_keys.num_rows:
                raise PrimaryKeyTableError(
                    f"a key was written by two tasks into bucket {bucket}: repartition the data by the "
                    f"primary key {list(table.primary_keys)} (paimon_index.spark.jobs.upsert does)")
        # The tasks' deleting rows (keys, other columns, _ROW_KIND): their -U/-D rows are written.
        removed = pa.concat_tables(removed_keys, promote_options="permissive") if removed_keys else \
            key_schema(table).empty_table()
        prepared = _prepare(table, plan, messages, removed, max_level(options))
        txn.track(*prepared.written)
        return _commit(txn, table, plan.index_dir, [prepared])


Rows = TypeVar("Rows")
#: The row kind that deletes a key.
DELETE_KIND = "-D"


class KeyedRows(Protocol[Rows]):
    """Where the rows of a DELETE/UPDATE by key are, and how they are changed and upserted."""

    def matching(self, where: Any, snapshot_id: int) -> Rows:
        """The rows matching ``where``, one per key (read at ``snapshot_id`` where the upsert can
        commit exactly on it)."""
        ...

    def deleted(self, rows: Rows) -> Rows:
        """The rows with ``_ROW_KIND`` ``-D``: upserted, they delete their keys."""
        ...

    def assigned(self, rows: Rows, assignments: Mapping[str, Any]) -> Rows:
        """The rows with the SET values (cast to their columns' types)."""
        ...

    def upsert(self, rows: Rows, snapshot_id: int) -> tuple[int | None, int]:
        """Upsert the rows, planned on ``snapshot_id``: the new snapshot (None: nothing committed)
        and the number of rows upserted."""
        ...


def change_by_key(table: Any, where: Any, assignments: Mapping[str, Any] | None,
                  rows: KeyedRows[Rows]) -> tuple[int | None, int]:
    """DELETE (``assignments`` None) or UPDATE of a primary-key table: find the matching rows on
    the latest snapshot, then upsert their keys as deletes (``-D``) or with the new values. The new
    snapshot (None when nothing changed) and the number of rows changed.

    Raises:
        InvalidOptionError: an UPDATE of a primary-key column (it would move the row to a new key).
        ConcurrentChangeError: another commit landed after the rows were read (where ``rows``
            commits on the snapshot it read).
    """
    from paimon_index.table.pk.merge import check_row_level

    keys = list(table.primary_keys)
    if assignments is not None:
        check_row_level(table, "update")
    if assignments is not None and set(assignments) & set(keys):
        raise InvalidOptionError(f"UPDATE of {table_name(table)} cannot change primary-key columns {keys}")
    # Read and commit on one snapshot: a change landing in between refuses this one
    # (ConcurrentChangeError) instead of being undone by it.
    snapshot = latest_snapshot(table)
    if snapshot is None:
        return None, 0
    planned = int(snapshot.id)
    matched = rows.matching(where, planned)
    changed = rows.deleted(matched) if assignments is None else rows.assigned(matched, assignments)
    return rows.upsert(changed, planned)


