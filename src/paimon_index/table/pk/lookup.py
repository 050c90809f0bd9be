"""Finding the older rows of keys: vectorized joins against a bucket's live files.

    mark_keys(bucket, dvs, keys, skip, schema) -> rows marked   keys: trimmed-key columns
    lookup_rows(table, bucket, dvs, keys, schema) -> the live rows of keys (merge engines' old values)
    file_keys(files, key schema) -> the trimmed keys a bucket's new files hold
    keys_of_partition(keys, table, partition values) -> that partition's keys, trimmed
    last_per_key(rows, keys) -> the last row of each key, input order kept
    join_on_keys(rows, other, keys, how) -> a semi/inner join whatever the rows' other columns

Every key written or deleted in a bucket is joined with the ``_KEY_*`` columns of the bucket's live
files whose ``[min_key, max_key]`` can hold it; each match is a row position added to that file's
deletion vector (Paimon's lookup compaction reaches the same state: ``ForceUpLevel0Compaction`` +
``LookupMergeTreeCompactRewriter``). Keys here are *trimmed* (no partition fields): a bucket lives
in one partition, so full keys are first restricted to the bucket's partition and then trimmed —
deleting ``(p='a', k=1)`` must never touch ``(p='b', k=1)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.deletionvectors.maintainer import BucketDvMaintainer
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.predicate import Leaf, Op, bind
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import container_source, open_container
from paimon_index.table.pk.plan import KEY_PREFIX, POSITION, Bucket, live_rows, trimmed_keys
from paimon_index.table.write import conform

__all__ = ["file_keys", "key_range", "key_tuple", "keys_of_partition", "last_per_key", "lookup_rows",
           "mark_keys", "overlaps", "rows_of_partition"]

#: ``lookup_rows(positions=True)``: the name of the data file a row was found in.
FILE = "__paimon_index_file__"
#: Up to this many keys, a file index on a single-column key is asked before the file is read.
LOOKUP_INDEX_MAX_KEYS = 1024
_ORDER = "__paimon_index_order__"


def key_tuple(row: Any) -> tuple[Any, ...]:
    return tuple(row.values)


def overlaps(meta: Any, low: tuple[Any, ...], high: tuple[Any, ...]) -> bool:
    """Whether the file's key range meets ``[low, high]``."""
    return not (key_tuple(meta.max_key) < low or high < key_tuple(meta.min_key))


def key_range(keys: pa.Table) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    ordered = keys.sort_by([(c, "ascending") for c in keys.column_names])
    first, last = ordered.slice(0, 1).to_pylist()[0], ordered.slice(ordered.num_rows - 1).to_pylist()[0]
    return tuple(first.values()), tuple(last.values())


_GROUP_ROW = "__paimon_index_group_row__"


def groups_of(rows: pa.Table, columns: list[str]) -> list[tuple[tuple[Any, ...], np.ndarray]]:
    """(values of ``columns``, row indices) of each distinct combination, in first-row order."""
    if not columns:
        return [((), np.arange(rows.num_rows))]
    order = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    numbered = rows.select(columns).append_column(_GROUP_ROW, order)
    grouped = numbered.group_by(columns, use_threads=False).aggregate([(_GROUP_ROW, "list")])
    out = []
    for i in range(grouped.num_rows):
        values = tuple(grouped[c][i].as_py() for c in columns)
        out.append((values, np.asarray(grouped[f"{_GROUP_ROW}_list"][i].values.to_numpy(), dtype=np.int64)))
    return sorted(out, key=lambda g: int(g[1][0]))


def join_on_keys(rows: pa.Table, other: pa.Table, keys: Sequence[str], join_type: str) -> pa.Table:
    """``rows.join(other, keys, join_type)`` (``"left semi"`` or ``"inner"``) for rows that may hold
    nested columns (ARRAY, MAP, ROW), which Arrow's hash join refuses outside the keys ("Data type
    list<item: int32> is not supported in join non-key field": a DELETE of a primary-key table with
    an ARRAY column failed with it). The join runs on the keys and each row's number; the rows are
    then taken by number, in input order, ``other``'s other columns after them (inner)."""
    keys = list(keys)
    numbered = rows.select(keys).append_column(_ORDER, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    right = other.select(keys) if join_type == "left semi" else other
    matched = numbered.join(right, keys=keys, join_type=join_type).sort_by(_ORDER)
    taken = rows.take(matched[_ORDER])
    for name in right.column_names:
        if name not in keys:
            taken = taken.append_column(right.schema.field(name), matched[name])
    return taken


def last_per_key(data: pa.Table, keys: list[str]) -> pa.Table:
    """The last row of each key, in input order."""
    numbered = data.append_column(_ORDER, pa.array(np.arange(data.num_rows, dtype=np.int64)))
    last = numbered.group_by(keys, use_threads=False).aggregate([(_ORDER, "max")])
    wanted = np.sort(last[f"{_ORDER}_max"].to_numpy())
    return numbered.take(pa.array(wanted)).drop_columns([_ORDER])


def keys_of_partition(keys: pa.Table, table: Any, partition: tuple[Any, ...]) -> pa.Table:
    """The rows of ``keys`` (full primary key) in ``partition``, as trimmed keys."""
    return rows_of_partition(keys, table, partition).select(trimmed_keys(table))


def rows_of_partition(keys: pa.Table, table: Any, partition: tuple[Any, ...]) -> pa.Table:
    """The rows of ``keys`` (holding the full primary key) in ``partition``, all their columns."""
    if keys.num_rows == 0 or not table.partition_keys:
        return keys
    mask = None
    for name, value in zip(table.partition_keys, partition, strict=True):
        if name not in keys.column_names:  # a partition field outside the key: cannot be told apart
            continue
        test = pc.is_null(keys[name]) if value is None else pc.equal(keys[name], pa.scalar(value))
        mask = test if mask is None else pc.and_(mask, test)
    return keys if mask is None else keys.filter(pc.fill_null(mask, False))


def index_rules_out(meta: Any, keys: pa.Table, schema: Mapping[str, Any], io: TableIO) -> bool:
    """True when the file's index on a (single-column) key proves none of ``keys`` is in the file."""
    if keys.num_columns != 1 or keys.num_rows > LOOKUP_INDEX_MAX_KEYS:
        return False
    source = container_source(meta)
    column = keys.column_names[0]
    if source is None or column not in schema:
        return False
    predicate = bind(Leaf(Op.IN, column, tuple(keys.column(0).to_pylist())), schema)
    container = open_container(io, meta, source)
    assert container is not None
    with container:
        # A corrupt index must not lose a deletion: it answers REMAIN and the file is read.
        return not FileIndexEvaluator(container, schema, on_corrupt="remain").evaluate(predicate).remain


def mark_keys(bucket: Bucket, dvs: BucketDvMaintainer, keys: pa.Table, skip: set[str],
              schema: Mapping[str, Any] | None = None, *, io: TableIO,
              found: list[pa.Table] | None = None) -> int:
    """Mark every live row of ``keys`` (columns = trimmed primary keys) in the bucket's files.

    Files are read only when their key range can hold a key and, for a single-column key with a
    file index on it (and at most :data:`LOOKUP_INDEX_MAX_KEYS` keys), when the index cannot rule
    the keys out. Returns the number of rows marked; ``found`` (optional) gets the keys marked.
    """
    if keys.num_rows == 0:
        return 0
    low, high = key_range(keys)
    key_columns = [KEY_PREFIX + c for c in keys.column_names]
    probe = keys.rename_columns(key_columns)
    marked = 0
    for meta in bucket.files:
        if meta.file_name in skip or not overlaps(meta, low, high):
            continue
        if schema is not None and index_rules_out(meta, keys, schema, io):
            continue
        existing = live_rows(meta, dvs, key_columns, io=io)
        hits = existing.join(probe, keys=key_columns, join_type="inner")
        if hits.num_rows:
            marked += dvs.notify_new_deletions(meta.file_name, np.sort(hits[POSITION].to_numpy()))
            if found is not None:
                found.append(hits.select(key_columns).rename_columns(keys.column_names))
    return marked


def lookup_rows(table: Any, bucket: Bucket, dvs: BucketDvMaintainer, keys: pa.Table,
                schema: Mapping[str, Any] | None = None, *, io: TableIO, system: Sequence[str] = (),
                skip: Iterable[str] = (), positions: bool = False) -> pa.Table:
    """The live rows (the table's current columns) of ``keys`` (trimmed-key columns) in the bucket's
    files of levels >= 1: the old values a merge engine merges into, the ``before`` rows of a
    changelog. Files are pruned as :func:`mark_keys` prunes them; files named in ``skip`` are not
    read. In deletion-vectors mode each key has at most one such row. ``system``: system columns
    (``_SEQUENCE_NUMBER``) put first. ``positions``: each row also says where it is (columns
    :data:`FILE` and ``POSITION``), so the caller can mark it without reading the file again."""
    from paimon_index.table.pk.plan import live_current_rows, user_columns
    from paimon_index.table.schemas import read_schema

    columns = user_columns(table)
    parts: list[pa.Table] = []
    skipped = set(skip)
    if keys.num_rows:
        low, high = key_range(keys)
        read = read_schema(table)
        for meta in bucket.files:
            if meta.level == 0 or meta.file_name in skipped or not overlaps(meta, low, high):
                continue
            if schema is not None and index_rules_out(meta, keys, schema, io):
                continue
            if positions:
                existing = _positioned_rows(meta, dvs, columns, list(system), read, io)
            else:
                existing = live_current_rows(table, meta, dvs, columns, list(system), io=io, schema=read)
            hits = join_on_keys(existing, keys, keys.column_names, "left semi")
            if hits.num_rows:
                hits = hits.select([*system, *columns, *([POSITION] if positions else [])])
                if positions:
                    hits = hits.append_column(FILE, pa.array([meta.file_name] * hits.num_rows, pa.string()))
                parts.append(hits)
    return pa.concat_tables(parts, promote_options="permissive") if parts else \
        pa.schema([]).empty_table()


def _positioned_rows(meta: Any, dvs: BucketDvMaintainer, columns: list[str], system: list[str], read: Any,
                     io: TableIO) -> pa.Table:
    """``live_current_rows`` of one file with each row's ``POSITION`` kept."""
    mapping = read.mapping(int(meta.schema_id))
    file_columns = mapping.file_columns(columns) or []
    raw = live_rows(meta, dvs, [*system, *file_columns], io=io)
    current = mapping.evolve(raw.select(file_columns), columns, path=str(meta.file_path))
    for name in reversed(system):
        current = current.add_column(0, raw.schema.field(name), raw.column(name))
    return current.append_column(POSITION, raw.column(POSITION))


def _read_columns(io: TableIO, path: str, columns: list[str]) -> pa.Table:
    with io.parquet(path) as parquet:
        return parquet.read(columns=columns)


def file_keys(files: Iterable[Any], target: pa.Schema, *, io: TableIO) -> pa.Table:
    """The keys of data files of one bucket; ``target`` = the trimmed keys' schema."""
    names = target.names
    parts = [conform(_read_columns(io, f.file_path, [KEY_PREFIX + k for k in names])
                     .rename_columns(names), target) for f in files]
    return pa.concat_tables(parts) if parts else target.empty_table()
