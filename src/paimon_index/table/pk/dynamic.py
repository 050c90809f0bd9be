"""Dynamic-bucket (``bucket = -1``) upserts distributed the way Paimon distributes them.

    assigner_count(table, parallelism) -> n           Paimon's rule for the number of assigners
    route(table, rows, n) -> rows + key hash, assigner id      any task (stage 1)
    assign(table, snapshot_id, rows, n) -> rows + bucket       the task owning those assigners (stage 2)
    prepare(table, snapshot_id, rows) -> PreparedUpsert        the task owning those buckets (stage 3)
    write_fresh(table, rows) -> messages                        an overwrite: buckets from an empty index

Paimon (Java ``HashBucketAssigner`` / ``PartitionIndex``, Spark's ``DynamicBucketProcessor``, Flink's
``HashBucketAssignerOperator``) keeps, per partition, one ``HASH`` index file per bucket holding the
``BinaryRow.hashCode`` of the trimmed primary key of every key the bucket holds
(:mod:`paimon_index.bucket.hash_index`). Writers scale it out so:

1. **Route** every row by its key hash to one of ``n`` assigners: ``assigner = (|partitionHash % n|
   + |keyHash % n|) % n`` (``BucketAssigner.computeAssigner`` with as many channels as assigners),
   so every row of a key -- and every key of one hash -- reaches the same assigner.
2. **Assign**: an assigner owns, in every partition, the buckets ``b`` with ``b % n == id``
   (``BucketAssigner.isMyBucket``). A key whose hash is in the partition's index keeps its bucket
   (whoever owns it); a new key goes to the assigner's first own bucket holding fewer than
   ``dynamic-bucket.target-row-num`` keys, else to its lowest own bucket id not used yet (at most
   ``dynamic-bucket.max-buckets``; past it, a random own bucket, as Java does). No two assigners
   put new keys into one bucket, so they never race on one bucket's index.
3. **Write** per bucket: rows shuffled by (partition, bucket) so one task owns each bucket; it
   writes the rows at their bucket, extends that bucket's ``HASH`` index file with the new hashes
   (a whole new file, as Java writes it; the commit replaces the bucket's entry), looks the keys up
   and marks the older rows (:func:`paimon_index.table.pk.upsert.prepare_upsert`'s work), and the
   driver commits every task's result once (:func:`~paimon_index.table.pk.upsert.commit_prepared`).

Everything is planned on one snapshot: assigners read its index, the tasks look up against it,
and the commit lands exactly as the next one (or ConcurrentChangeError, every written file deleted).

Differences from Java, on purpose: a ``-D`` of a key the index does not hold is dropped at
assignment (there is no row to delete; Java gives it a bucket and stores its hash; with an ``input``
changelog it gets a bucket here too, for its changelog row, and its hash is not stored); as many
channels as assigners (Java's Spark writer uses ``dynamic-bucket.assigner-parallelism`` channels
and ``min(initial-buckets, parallelism)`` assigners: with channels not a multiple of assigners two
of its channels can own the same buckets). A fresh table gets buckets the same way as a table with
an index (Java's Spark writer uses ``SimpleHashBucketAssigner`` then, with the same ownership).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.bucket.hash_index import key_hashes, read_hash_index, serialize_hash_index
from paimon_index.deletionvectors.index_file import new_index_file_name
from paimon_index.errors import InvalidOptionError, PrimaryKeyTableError
from paimon_index.fileindex.options import parse_int
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import (
    HASH,
    bucket_number,
    index_entries,
    index_file_path,
    index_manifest_entry,
    snapshot_by_id,
    table_options,
)
from paimon_index.table.pk.levels import kinds_as_bytes, write_at
from paimon_index.table.pk.lookup import groups_of, join_on_keys, last_per_key
from paimon_index.table.pk.plan import DELETING_KINDS, ROW_KIND_COLUMN, arrow_fields, check_keys, user_columns
from paimon_index.table.write import conform

__all__ = ["ASSIGNER_COLUMN", "BUCKET_COLUMN", "KEY_HASH_COLUMN", "assign", "assigner_count", "buckets_of",
           "prepare", "route", "upsert_records", "write_fresh", "writes_records"]

KEY_HASH_COLUMN = "__paimon_index_key_hash__"
ASSIGNER_COLUMN = "__paimon_index_assigner__"
BUCKET_COLUMN = "__paimon_index_bucket__"
_ROW = "__paimon_index_row__"

#: Paimon's options (CoreOptions) of dynamic-bucket mode.
TARGET_ROW_NUM, DEFAULT_TARGET_ROW_NUM = "dynamic-bucket.target-row-num", 2_000_000
MAX_BUCKETS = "dynamic-bucket.max-buckets"
INITIAL_BUCKETS = "dynamic-bucket.initial-buckets"
ASSIGNER_PARALLELISM = "dynamic-bucket.assigner-parallelism"
#: Bucket ids are Java shorts: ids 0 .. Short.MAX_VALUE - 1 when the bucket count is unbounded.
SHORT_MAX_VALUE = 32767


def _int_option(options: dict[str, str], key: str, default: int | None,
                minimum: int | None = None) -> int | None:
    value = options.get(key)
    if value is None:
        return default
    return parse_int(value, key, minimum=minimum) if minimum is not None else parse_int(value, key)


def assigner_count(table: Any, parallelism: int) -> int:
    """The number of assigners, as Paimon's Spark writer picks it: ``assigner-parallelism`` (default
    the job's parallelism), at most ``max-buckets``, then at most ``initial-buckets``."""
    options = table_options(table)
    count = _int_option(options, ASSIGNER_PARALLELISM, parallelism, 1) or parallelism
    max_buckets = _int_option(options, MAX_BUCKETS, -1)
    if max_buckets is not None and max_buckets != -1:
        if max_buckets < 1:
            raise InvalidOptionError(f"'{MAX_BUCKETS}' must be -1 or positive, got {max_buckets}")
        count = min(count, max_buckets)
    initial = _int_option(options, INITIAL_BUCKETS, None, 1)
    if initial is not None:
        count = min(count, initial)
    return max(1, min(count, SHORT_MAX_VALUE))


def _java_abs_mod(values: np.ndarray, n: int) -> np.ndarray:
    """``Math.abs(value % n)`` of Java ints."""
    return np.abs(np.fmod(values.astype(np.int64), n))


def _keyed(table: Any, rows: pa.Table, names: list[str]) -> pa.Table:
    """``rows``' columns ``names`` with the table's Arrow types (what Java hashes)."""
    fields = {f.name: f for f in arrow_fields(table)}
    return conform(rows.select(names), pa.schema([fields[n] for n in names]))


def route(table: Any, rows: pa.Table, assigners: int) -> pa.Table:
    """``rows`` with each row's key hash (``BinaryRow.hashCode`` of its trimmed primary key) and its
    assigner (``BucketAssigner.computeAssigner``, channels = assigners)."""
    if rows.num_rows == 0:
        return rows.append_column(KEY_HASH_COLUMN, pa.array([], pa.int32())) \
            .append_column(ASSIGNER_COLUMN, pa.array([], pa.int32()))
    check_keys(table, rows)
    trimmed = list(table.trimmed_primary_keys)
    hashes = key_hashes(_keyed(table, rows, trimmed), list(table.trimmed_primary_keys_fields))
    partitions = list(table.partition_keys)
    if partitions:
        partition_hashes = key_hashes(_keyed(table, rows, partitions), list(table.partition_keys_fields))
        start = _java_abs_mod(partition_hashes, assigners)
    else:
        start = np.zeros(rows.num_rows, np.int64)
    assigner = (start + _java_abs_mod(hashes, assigners)) % assigners
    return rows.append_column(KEY_HASH_COLUMN, pa.array(hashes.astype(np.int32))) \
        .append_column(ASSIGNER_COLUMN, pa.array(assigner.astype(np.int32)))


@dataclass
class _PartitionIndex:
    """One partition's HASH index in the planned snapshot: hashes -> bucket, and keys per bucket."""

    hashes: np.ndarray  # int32, sorted, distinct
    buckets: np.ndarray  # int32, aligned with hashes
    counts: dict[int, int]  # bucket -> keys in its index file
    entries: dict[int, Any]  # bucket -> its HASH IndexManifestEntry

    def bucket_of(self, hashes: np.ndarray) -> np.ndarray:
        """Each hash's bucket, -1 when the index does not hold it."""
        if not len(self.hashes):
            return np.full(len(hashes), -1, np.int32)
        pos = np.minimum(np.searchsorted(self.hashes, hashes), len(self.hashes) - 1)
        return np.where(self.hashes[pos] == hashes, self.buckets[pos], -1).astype(np.int32)


def _hash_entries(table: Any, snapshot_id: int | None) -> dict[tuple[Any, ...], dict[int, Any]]:
    """The HASH index entries of the planned snapshot: partition -> bucket -> entry."""
    if snapshot_id is None:
        return {}
    snapshot = snapshot_by_id(table, snapshot_id)
    if snapshot is None:
        from paimon_index.errors import ConcurrentChangeError

        raise ConcurrentChangeError(f"snapshot {snapshot_id} was expired while upserting; nothing was "
                                    "applied, run it again")
    out: dict[tuple[Any, ...], dict[int, Any]] = {}
    fields = {f.name: f for f in arrow_fields(table)}
    types = [fields[k].type for k in table.partition_keys]
    for entry in index_entries(table, snapshot, HASH):
        # The manifest's partition values, spelled as the rows' Arrow values are (a DATE as a date).
        partition = tuple(pa.array([v], t)[0].as_py() for v, t in zip(entry.partition.values or (), types,
                                                                        strict=True))
        buckets = out.setdefault(partition, {})
        if entry.bucket in buckets:
            raise PrimaryKeyTableError(f"partition {partition} has two HASH index files for bucket "
                                       f"{entry.bucket}: {buckets[entry.bucket].index_file.file_name}, "
                                       f"{entry.index_file.file_name}")
        buckets[entry.bucket] = entry
    return out


def _read_hashes(table: Any, io: TableIO, entry: Any) -> np.ndarray:
    path = index_file_path(table, entry.partition, entry.bucket, entry.index_file)
    with io.source(path, size=entry.index_file.file_size) as source:
        return read_hash_index(source)


def _load_partition(table: Any, io: TableIO, entries: dict[int, Any]) -> _PartitionIndex:
    hashes, buckets, counts = [], [], {}
    for bucket, entry in sorted(entries.items()):
        values = _read_hashes(table, io, entry)
        hashes.append(values)
        buckets.append(np.full(len(values), bucket, np.int32))
        counts[bucket] = len(values)
    if not hashes:
        return _PartitionIndex(np.empty(0, np.int32), np.empty(0, np.int32), {}, dict(entries))
    all_hashes, all_buckets = np.concatenate(hashes), np.concatenate(buckets)
    distinct, first = np.unique(all_hashes, return_index=True)  # a hash in two buckets: the lower one
    return _PartitionIndex(distinct, all_buckets[first], counts, dict(entries))


def _new_buckets(count: int, own: dict[int, int], assigners: int, assigner: int, target: int,
                 max_buckets: int) -> np.ndarray:
    """Buckets of ``count`` new distinct hashes, in order (Java ``PartitionIndex.assign``): fill the
    assigner's non-full buckets (ascending), then open its lowest unused bucket ids."""
    out = np.empty(count, np.int32)
    done = 0
    for bucket in sorted(own):
        if done == count:
            break
        room = target - own[bucket]
        if room > 0:
            take = min(room, count - done)
            out[done:done + take] = bucket
            own[bucket] += take
            done += take
    global_max = (SHORT_MAX_VALUE if max_buckets == -1 else max_buckets) - 1
    candidate = assigner % assigners
    while done < count:
        while candidate in own:
            candidate += assigners
        if candidate > global_max:
            if max_buckets == -1:
                raise PrimaryKeyTableError(
                    f"more than {global_max + 1} buckets in one partition: raise '{TARGET_ROW_NUM}' "
                    f"({target})")
            if not own:
                raise PrimaryKeyTableError(
                    f"assigner {assigner} of {assigners} owns no bucket below '{MAX_BUCKETS}' = "
                    f"{max_buckets}")
            choices = sorted(own)
            rest = count - done
            out[done:] = [random.choice(choices) for _ in range(rest)]
            for bucket in out[done:].tolist():
                own[bucket] += 1
            done = count
            break
        take = min(target, count - done)
        out[done:done + take] = candidate
        own[candidate] = take
        done += take
    return out


def assign(table: Any, snapshot_id: int | None, rows: pa.Table, assigners: int, *,
           io: TableIO | None = None, merge: bool = False, records: bool = False) -> pa.Table:
    """Stage 2: ``rows`` (routed, all rows of their assigners) deduplicated by key (the last row of
    a key decides; ``merge``: the key's rows merged in order by the table's merge engine) with each
    key's bucket in :data:`BUCKET_COLUMN`; a deleted key the index does not hold is dropped. Reads
    the HASH index of ``snapshot_id``.

    ``records`` (``changelog-producer`` = ``input``): every row is kept, in order, unmerged (the
    writer of the bucket folds them, after taking them as its changelog), and a deleted key the
    index does not hold gets a bucket as a new key does -- as Java's assigner gives every record
    one, so the ``-D`` lands in that bucket's changelog."""
    bucket_type = pa.int32()
    if rows.num_rows == 0:
        return rows.append_column(BUCKET_COLUMN, pa.array([], bucket_type))
    options = table_options(table)
    target = _int_option(options, TARGET_ROW_NUM, DEFAULT_TARGET_ROW_NUM, 1) or DEFAULT_TARGET_ROW_NUM
    max_buckets = _int_option(options, MAX_BUCKETS, -1) or -1
    io = io or TableIO.of(table)
    if records:
        original = rows
        rows = _conformed(table, rows)
    elif merge:
        rows, original = _folded(table, rows, assigners)
    else:
        # Deduplicate on the table's types, hand back the rows as they came (Spark's types).
        order = pa.array(np.arange(rows.num_rows, dtype=np.int64))
        numbered = _conformed(table, rows).append_column(_ROW, order)
        kept = last_per_key(numbered, list(table.primary_keys))
        original = rows.take(kept[_ROW])
        rows = kept.drop_columns([_ROW])
    if ROW_KIND_COLUMN in rows.column_names and not records:
        deleting = pc.is_in(rows[ROW_KIND_COLUMN], pa.array(DELETING_KINDS)).to_numpy(zero_copy_only=False)
    else:
        deleting = np.zeros(rows.num_rows, bool)
    hashes = rows[KEY_HASH_COLUMN].to_numpy().astype(np.int32)
    entries = _hash_entries(table, snapshot_id)
    buckets = np.full(rows.num_rows, -1, np.int32)
    indexes: dict[tuple[Any, ...], _PartitionIndex] = {}
    for (values), idx in groups_of(rows, [*table.partition_keys, ASSIGNER_COLUMN]):
        partition, assigner = tuple(values[:-1]), int(values[-1])
        index = indexes.get(partition)
        if index is None:
            index = indexes[partition] = _load_partition(table, io, entries.get(partition, {}))
        found = index.bucket_of(hashes[idx])
        buckets[idx] = found
        new = idx[(found < 0) & ~deleting[idx]]
        if not len(new):
            continue
        distinct, first, inverse = np.unique(hashes[new], return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # first-appearance order, as rows arrive
        own = {b: c for b, c in index.counts.items() if b % assigners == assigner % assigners}
        opened = _new_buckets(len(distinct), own, assigners, assigner, target, max_buckets)
        by_distinct = np.empty(len(distinct), np.int32)
        by_distinct[order] = opened
        buckets[new] = by_distinct[inverse.reshape(-1)]
        index.counts.update(own)
    keep = buckets >= 0  # deleted keys the index does not hold: nothing to delete
    out = original.append_column(BUCKET_COLUMN, pa.array(buckets, bucket_type))
    return out.filter(pa.array(keep)) if not keep.all() else out


def _folded(table: Any, rows: pa.Table, assigners: int) -> tuple[pa.Table, pa.Table]:
    """An assigner's ``rows`` merged by key with the table's merge engine (one row per key, as
    :func:`~paimon_index.table.pk.upsert.merge_batch` merges a fixed-bucket task's rows), routed
    again: (the rows in the table's types, the same rows in ``rows``' types)."""
    from paimon_index.table.pk.upsert import merge_batch

    columns = user_columns(table)
    given_kinds = ROW_KIND_COLUMN in rows.column_names
    folded = merge_batch(table, rows.select([*columns, ROW_KIND_COLUMN] if given_kinds else columns))
    if not given_kinds:
        if not pc.all(pc.equal(folded[ROW_KIND_COLUMN], "+I")).as_py():
            raise PrimaryKeyTableError("internal: inserts merged into a delete")
        folded = folded.drop_columns([ROW_KIND_COLUMN])
    conformed = route(table, folded, assigners)
    original = pa.Table.from_arrays([conformed[f.name].cast(f.type) for f in rows.schema], schema=rows.schema)
    return conformed, original


def _merged(table: Any, snapshot_id: int | None, rows: pa.Table, scope: set[tuple[tuple[Any, ...], int]]
            ) -> pa.Table:
    """A writer's ``rows`` (assigned, one merged row per key) merged with their keys' old rows by the
    merge engine, each with its key hash and bucket; ``_ROW_KIND`` '+I' or '-D'."""
    from paimon_index.table.pk.upsert import merged_with_old

    columns, keys = user_columns(table), list(table.primary_keys)
    kinds = [ROW_KIND_COLUMN] if ROW_KIND_COLUMN in rows.column_names else []
    batch = rows.select([*columns, *kinds])
    merged = merged_with_old(table, snapshot_id, batch, scope)
    placed = rows.select([*keys, KEY_HASH_COLUMN, BUCKET_COLUMN])
    joined = join_on_keys(merged, placed, keys, "inner")
    if joined.num_rows != merged.num_rows:
        raise PrimaryKeyTableError("internal: a merged key lost its bucket")
    return joined


def _write_hash_file(table: Any, io: TableIO, partition: tuple[Any, ...], bucket: int,
                     hashes: np.ndarray) -> tuple[Any, str]:
    """A bucket's whole new HASH index file: (its ADD entry, its path)."""
    data = serialize_hash_index(hashes)
    name = new_index_file_name()
    path, external = table.path_factory().new_bucket_index_path(partition, bucket, name)
    io.write_new(path, data)
    entry = index_manifest_entry(table, partition, bucket, HASH, name, len(data), len(data) // 4,
                                 external_path=path if external else None)
    return entry, path


def _index_bucket(table: Any, io: TableIO, by_bucket: dict[tuple[tuple[Any, ...], int], Any],
                  partition: tuple[Any, ...], bucket: int, hashes: np.ndarray) -> str:
    """The bucket's whole HASH index file of ``hashes``, its ADD entry in the bucket's message
    (``by_bucket``: the messages of the data files just written); the file's path."""
    message = by_bucket.get((partition, bucket))
    if message is None:
        raise PrimaryKeyTableError(f"internal: no data file written for bucket {bucket} of {partition}")
    entry, path = _write_hash_file(table, io, partition, bucket, hashes)
    message.index_adds.append(entry)
    return path


def _conformed(table: Any, rows: pa.Table) -> pa.Table:
    """The table's columns with its Arrow types (as Spark hands them, they may differ), then the
    routing columns ``rows`` carries."""
    fields = {f.name: f for f in arrow_fields(table)}
    columns = user_columns(table)
    out = conform(rows.select(columns), pa.schema([fields[c] for c in columns]))
    for name in (ROW_KIND_COLUMN, KEY_HASH_COLUMN, ASSIGNER_COLUMN, BUCKET_COLUMN):
        if name in rows.column_names:
            out = out.append_column(name, rows[name])
    return out


def _write_at_buckets(table: Any, rows: pa.Table, columns: list[str]) -> list[Any]:
    """Each (partition, bucket)'s rows written at that bucket (:func:`~paimon_index.table.pk.levels
    .write_at`: no HASH index touched), with their ``_ROW_KIND`` when they have one (none deleting);
    their commit messages. A failure deletes what was written."""
    from paimon_index.table.pk.commit import abandon, written_paths

    kept = [*columns, ROW_KIND_COLUMN] if ROW_KIND_COLUMN in rows.column_names else columns
    messages: list[Any] = []
    try:
        for values, idx in groups_of(rows, [*table.partition_keys, BUCKET_COLUMN]):
            # Each row keeps its kind (an UPDATE's or MERGE's '+U'), as Java's writer writes it.
            messages += write_at(table, kinds_as_bytes(rows.take(pa.array(idx)).select(kept)),
                                 tuple(values[:-1]), int(values[-1]))
    except BaseException:
        abandon(table, written_paths(messages, str(table.path_factory().index_path())), "upsert")
        raise
    return messages


def write_fresh(table: Any, rows: pa.Table, *, io: TableIO | None = None) -> list[Any]:
    """An overwrite's files (``rows``: one row per key, the table's columns): buckets assigned from
    an empty index -- nothing older survives an overwrite, and Java's overwrite likewise assigns
    from a fresh one --, the rows written at their buckets (level 0: the caller places them), each
    bucket with a whole new HASH index file of its keys in its message's ``index_adds`` (the
    overwrite's commit drops the replaced partitions' HASH entries). One assigner (one task). The
    messages; a failure deletes what was written.

    pypaimon's own dynamic-bucket writer kept the old index's buckets for the keys it held but wrote
    index files for new keys only, so after the commit dropped the old entries a bucket could hold
    data without a HASH index, and the next write of that partition was refused."""
    from paimon_index.table.pk.commit import abandon, written_paths

    if rows.num_rows == 0:
        return []
    io = io or TableIO.of(table)
    assigned = _conformed(table, assign(table, None, route(table, rows, 1), 1, io=io))
    messages: list[Any] = []
    written: list[str] = []
    try:
        messages = _write_at_buckets(table, assigned, user_columns(table))
        by_bucket = {(tuple(m.partition), m.bucket): m for m in messages}
        hashes = assigned[KEY_HASH_COLUMN].to_numpy().astype(np.int32)
        for values, idx in groups_of(assigned, [*table.partition_keys, BUCKET_COLUMN]):
            partition, bucket = tuple(values[:-1]), int(values[-1])
            written.append(_index_bucket(table, io, by_bucket, partition, bucket, np.unique(hashes[idx])))
    except BaseException:
        abandon(table, [*written, *written_paths(messages, str(table.path_factory().index_path()))],
                "overwrite")
        raise
    return messages


def prepare(table: Any, snapshot_id: int | None, rows: pa.Table, *, io: TableIO | None = None,
            merge: bool = False, records: bool = False, delete_keys: bool = False) -> Any:
    """Stage 3: the task owning the buckets of ``rows`` (assigned, one row per key) writes the
    upserts at their buckets (``merge``: merged with their keys' old rows by the table's merge
    engine first), extends those buckets' HASH index files with the new key hashes, looks the keys
    up and marks the older rows; returns the
    :class:`~paimon_index.table.pk.upsert.PreparedUpsert` the driver commits (None: no rows).
    On failure every file it wrote is deleted.

    ``records`` (``changelog-producer`` = ``input``, rows from ``assign(records=True)``): the rows
    are every input record, in order; they are the changelog of their buckets (``delete_keys``: a
    DELETE's ``-D`` rows, all kept), then folded to one row per key here."""
    from paimon_index.table.pk.commit import abandon, written_paths
    from paimon_index.table.pk.upsert import input_records, prepare_upsert

    if rows.num_rows == 0:
        return None
    io = io or TableIO.of(table)
    rows = _conformed(table, rows)
    columns = user_columns(table)
    scope = {(tuple(values[:-1]), int(values[-1]))
             for values, _ in groups_of(rows, [*table.partition_keys, BUCKET_COLUMN])}
    inputs = None
    if records:
        inputs = input_records(table, rows.drop_columns([c for c in (KEY_HASH_COLUMN, ASSIGNER_COLUMN)
                                                         if c in rows.column_names]),
                               delete_keys=delete_keys)
        rows = _folded_records(table, rows, merge)
    if merge:
        rows = _merged(table, snapshot_id, rows, scope)
    if ROW_KIND_COLUMN in rows.column_names:
        deleting = pc.is_in(rows[ROW_KIND_COLUMN], pa.array(DELETING_KINDS))
        # The deleting rows whole: their -U/-D rows are written (pk.upsert's _write_retractions).
        upserts, removed = rows.filter(pc.invert(deleting)), rows.filter(deleting).select([*columns,
                                                                                           ROW_KIND_COLUMN])
    else:
        upserts, removed = rows, None
    messages: list[Any] = []
    written: list[str] = []
    try:
        messages = _write_at_buckets(table, upserts, columns) if upserts.num_rows else []
        entries = _hash_entries(table, snapshot_id)
        by_bucket = {(tuple(m.partition), m.bucket): m for m in messages}
        hashes = upserts[KEY_HASH_COLUMN].to_numpy().astype(np.int32)
        for values, idx in groups_of(upserts, [*table.partition_keys, BUCKET_COLUMN]):
            partition, bucket = tuple(values[:-1]), int(values[-1])
            existing = entries.get(partition, {}).get(bucket)
            old = np.empty(0, np.int32) if existing is None else _read_hashes(table, io, existing)
            new = np.setdiff1d(hashes[idx], old)
            if not len(new):
                continue
            written.append(_index_bucket(table, io, by_bucket, partition, bucket, np.concatenate([old, new])))
        prepared = prepare_upsert(table, messages, removed, scope, snapshot_id=snapshot_id, inputs=inputs)
    except BaseException:
        index_dir = str(table.path_factory().index_path())
        abandon(table, [*written, *written_paths(messages, index_dir)], "upsert")
        raise
    prepared.written += written
    return prepared


def _folded_records(table: Any, rows: pa.Table, merge: bool) -> pa.Table:
    """A writer's input records (table types, routing columns, in order) folded to one row per key:
    the last record of a key decides (``merge``: its records merged in order by the merge engine),
    with its key's hash and bucket."""
    keys = list(table.primary_keys)
    if not merge:
        return last_per_key(rows, keys)
    from paimon_index.table.pk.upsert import merge_batch

    columns = user_columns(table)
    kinds = [ROW_KIND_COLUMN] if ROW_KIND_COLUMN in rows.column_names else []
    folded = merge_batch(table, rows.select([*columns, *kinds]))
    if not kinds:
        folded = folded.drop_columns([ROW_KIND_COLUMN])
    placed = last_per_key(rows.select([*keys, KEY_HASH_COLUMN, BUCKET_COLUMN]), keys)
    joined = join_on_keys(folded, placed, keys, "inner")
    if joined.num_rows != folded.num_rows:
        raise PrimaryKeyTableError("internal: a folded key lost its bucket")
    return joined


def writes_records(table: Any) -> bool:
    """Whether a write by key of ``table`` goes through :func:`upsert_records`: dynamic buckets with
    ``changelog-producer`` = ``input`` (each record must reach its key's bucket's changelog)."""
    from paimon_index.table.pk.changelog import INPUT, producer

    return bucket_number(table) <= 0 and producer(table, input_ok=True) == INPUT


def upsert_records(table: Any, data: pa.Table, *, planned: int | object | None, delete_keys: bool = False,
                   kind: str = "+I") -> int | None:
    """:func:`~paimon_index.table.pk.upsert.upsert_arrow` of a :func:`writes_records` table: the
    three stages of the Spark job in this process, one assigner, so each input record reaches the
    bucket its key is assigned to and lands in that bucket's changelog. ``planned``: as
    ``upsert_arrow``'s (``LATEST``: the latest snapshot); the commit lands exactly on it."""
    from paimon_index.table.pk.merge import merge_engine
    from paimon_index.table.pk.upsert import commit_prepared, folded_snapshot_id, with_row_kinds

    snapshot_id = folded_snapshot_id(table, planned)  # the tasks' half cannot fold level-0 files
    merge = not delete_keys and merge_engine(table) is not None
    assigned = assign(table, snapshot_id, route(table, with_row_kinds(table, data, kind), 1), 1, records=True)
    prepared = prepare(table, snapshot_id, assigned, merge=merge, records=True, delete_keys=delete_keys)
    return None if prepared is None else commit_prepared(table, [prepared])


def buckets_of(table: Any, snapshot_id: int | None,
               keys: Iterable[tuple[Any, ...]]) -> dict[tuple[Any, ...], int]:
    """Test aid: each full primary key's bucket according to the HASH index of ``snapshot_id``."""
    keys = list(keys)
    names = list(table.primary_keys)
    rows = pa.table({n: [k[i] for k in keys] for i, n in enumerate(names)})
    routed = route(table, _keyed(table, rows, names), 1)
    entries = _hash_entries(table, snapshot_id)
    io = TableIO.of(table)
    out: dict[tuple[Any, ...], int] = {}
    hashes = routed[KEY_HASH_COLUMN].to_numpy()
    for values, idx in groups_of(routed, list(table.partition_keys)):
        index = _load_partition(table, io, entries.get(tuple(values), {}))
        for i, bucket in zip(idx.tolist(), index.bucket_of(hashes[idx]).tolist(), strict=True):
            out[keys[i]] = bucket
    return out
