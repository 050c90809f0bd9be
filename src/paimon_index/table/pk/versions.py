"""The live version of each key of a merge-on-read snapshot, as positions in its data files.

    last_version_wins(table) -> bool                 deduplicate: a key's row is its newest version
    newest_live(keys, sequence, kinds) -> indices    the rows that are their key's live newest version
    superseded_positions(table, snapshot, keep_deleting=False) -> {data file name: sorted positions} | None

A primary-key table without deletion vectors keeps every version of a key until a compaction
merges them: a reader merges by key (Paimon's ``MergeTreeReaders``). Under the ``deduplicate``
engine, without ``sequence.field`` and without ``ignore-delete``, the merged row of a key *is* its
version of the highest ``_SEQUENCE_NUMBER``, unless that version is a ``-U``/``-D`` (then the key is
gone). So the merge needs no values: from each file's ``_KEY_*``, ``_SEQUENCE_NUMBER`` and
``_VALUE_KIND`` columns it is known which rows survive, and every other row is *superseded* -- a
deletion vector computed at read time. The read plan (:func:`paimon_index.table.scan.plan_read`)
subtracts these positions as it subtracts a vector, so every reader of the plan (the Python read,
the planned Spark read and its small read, counts, min/max, TopN) reads such a table with its
indexes, as a deletion-vectors table:

    bucket files (any levels)           _KEY_id  _SEQUENCE_NUMBER  _VALUE_KIND
      a.parquet  row 0                     7           10           +I   superseded (12 is newer)
      a.parquet  row 1                     9           11           +I   live
      b.parquet  row 0                     7           12           +U   live
      b.parquet  row 1                    13           14           -D   superseded (a delete)

The positions are computed per (partition, bucket) over *every* file of the bucket (a file the
indexes skip still supersedes older rows of its keys) and cached per bucket with the names of its
files (data files are never rewritten under one name). A later snapshot whose bucket only gained
newer files (a commit's level-0 files, every sequence number above the cached files') starts from
the cached positions: the older files' rows whose keys the new files hold join them, and only the
new rows are told among themselves. None -- the caller merges the rows itself -- for another merge
engine, and when a key's equality is not Arrow's (a NULL key, a floating-point key) or two versions
of one key share its highest sequence number (their order is the merge reader's own).

Byte layout read: a primary-key data file's ``_KEY_<k>`` columns (the trimmed primary key),
``_SEQUENCE_NUMBER`` (BIGINT) and ``_VALUE_KIND`` (TINYINT: ``+I`` 0, ``-U`` 1, ``+U`` 2, ``-D`` 3).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.fileindex.options import parse_bool
from paimon_index.table.fileio import TableIO
from paimon_index.table.metacache import metadata_cache
from paimon_index.table.paimon import DELETING_VALUE_KINDS, table_options
from paimon_index.table.pk.merge import (
    DEDUPLICATE,
    IGNORE_DELETE,
    IGNORE_DELETE_FALLBACKS,
    MERGE_ENGINE,
    SEQUENCE_FIELD,
)
from paimon_index.table.pk.plan import (
    KEY_PREFIX,
    SEQUENCE_COLUMN,
    VALUE_KIND_COLUMN,
    one_sorted_run,
    plan_snapshot,
    trimmed_keys,
)
from paimon_index.table.schemas import ReadSchema, read_schema

__all__ = ["last_version_wins", "newest_live", "superseded_positions"]

#: Cache entry weight of a file's positions beyond their int64s (the dict entry, the array header).
_WEIGHT_PER_FILE = 256
#: Buckets told apart at once (each thread holds a bucket's key columns).
_MAX_THREADS = 8


def last_version_wins(table: Any) -> bool:
    """Whether a key's merged row is its version of the highest sequence number: ``deduplicate``
    without ``sequence.field`` and without an ``ignore-delete`` option."""
    options = table_options(table)
    if options.get(MERGE_ENGINE, DEDUPLICATE).strip().lower() != DEDUPLICATE:
        return False
    if options.get(SEQUENCE_FIELD, "").strip():
        return False
    return not any(parse_bool(options.get(o, "false"), o) for o in (IGNORE_DELETE, *IGNORE_DELETE_FALLBACKS))


def newest_live(keys: Sequence[pa.Array | pa.ChunkedArray], sequence: np.ndarray,
                kinds: np.ndarray, *, keep_deleting: bool = False) -> np.ndarray | None:
    """The indices, in key order, of the rows that are their key's newest version (highest
    ``sequence``) and not a ``-U``/``-D`` (``kinds``: ``_VALUE_KIND`` bytes) -- what ``deduplicate``
    keeps of rows holding several versions of a key. ``keep_deleting``: a newest ``-U``/``-D`` too
    (Java's merge with ``forceKeepDelete``, what ``t$audit_log`` shows).

    None when that cannot be told by Arrow's equality and order: a NULL or floating-point key
    (the key comparator's equality: NULLs equal, NaN, -0.0), or two versions of one key sharing its
    highest sequence number (the merge reader's order decides between them)."""
    count = len(sequence)
    for column in keys:
        if column.null_count or pa.types.is_floating(column.type):
            return None
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    if len(keys) == 1 and pa.types.is_integer(keys[0].type):
        return _newest_live_integer(keys[0].to_numpy(), sequence, kinds, keep_deleting)
    names = [f"k{i}" for i in range(len(keys))]
    sortable = pa.table([*keys, pa.array(sequence, pa.int64())], names=[*names, "s"])
    order = pc.sort_indices(sortable, sort_keys=[(n, "ascending") for n in [*names, "s"]]).to_numpy()
    same_key = np.ones(count - 1, dtype=bool)  # sorted row i and row i + 1 hold one key
    for column in keys:
        ordered = column.take(pa.array(order))
        if isinstance(ordered, pa.ChunkedArray):
            ordered = ordered.combine_chunks()
        same_key &= pc.equal(ordered[1:], ordered[:-1]).to_numpy(zero_copy_only=False)
    last = np.append(~same_key, True)  # each key's newest: its versions sort by sequence
    ordered_sequence = sequence[order]
    if np.any(same_key & (ordered_sequence[1:] == ordered_sequence[:-1]) & last[1:]):
        return None
    live = last if keep_deleting else last & ~np.isin(kinds[order], DELETING_VALUE_KINDS)
    return order[live].astype(np.int64, copy=False)


def _newest_live_integer(keys: np.ndarray, sequence: np.ndarray, kinds: np.ndarray,
                         keep_deleting: bool = False) -> np.ndarray | None:
    """:func:`newest_live` of one integer key column. A bucket's rows are its files one after
    another, each sorted by key (Paimon writes sorted runs), so a stable sort of the keys alone
    merges a few runs (numpy's timsort finds them); each key's newest version is then its group's
    highest sequence number. A bucket of 5.5M rows in 9 files: 0.115 s against 0.238 s for
    Arrow's sort of key and sequence."""
    order = np.argsort(keys, kind="stable")
    ordered_keys, ordered_sequence = keys[order], sequence[order]
    first = np.append(True, ordered_keys[1:] != ordered_keys[:-1])  # a key's first row
    starts = np.flatnonzero(first)
    newest = np.maximum.reduceat(ordered_sequence, starts)
    # np.repeat with per-group counts is ~10x slower than indexing by each row's group number.
    is_newest = ordered_sequence == newest[np.cumsum(first) - 1]
    if np.count_nonzero(is_newest) != len(starts):
        return None  # a key's highest sequence number held twice
    live = is_newest if keep_deleting else is_newest & ~np.isin(kinds[order], DELETING_VALUE_KINDS)
    return order[live].astype(np.int64, copy=False)


def superseded_positions(table: Any, snapshot: Any, io: TableIO | None = None, *,
                         keep_deleting: bool = False) -> dict[str, np.ndarray] | None:
    """Per data file of ``snapshot`` (a merge-on-read table's), the sorted positions of its rows
    that are not their key's live version (files with none are absent; ``{}`` when every bucket
    is :func:`one_sorted_run`); None when a bucket needs a merge and the table's is not
    :func:`last_version_wins`, or :func:`newest_live` cannot tell for some bucket.
    ``keep_deleting``: a key's newest version counts as live when it is a ``-U``/``-D`` too."""
    plan = plan_snapshot(table, snapshot, vectors=False)
    buckets = [(key, b) for key, b in plan.buckets.items() if not one_sorted_run(b.files)]
    if not buckets:
        return {}
    if not last_version_wins(table):
        return None
    io = TableIO.of(table) if io is None else io
    keys, schema = trimmed_keys(table), read_schema(table)
    cache = metadata_cache()
    superseded: dict[str, np.ndarray] = {}
    missing: list[tuple[tuple[Any, ...], list[Any], _Latest | None]] = []
    for bucket_key, bucket in buckets:
        files = list(bucket.files)
        cache_key = ("superseded", plan.index_dir, bucket_key, keep_deleting)
        latest = cache.get(cache_key) if cache.enabled else None
        if latest is not None and set(latest.file_names) == {str(m.file_name) for m in files}:
            superseded.update(latest.superseded)
        else:
            missing.append((cache_key, files, latest))

    def compute(item: tuple[Any, list[Any], _Latest | None]) -> dict[str, np.ndarray] | None:
        _, files, latest = item
        if latest is not None:
            found = _bucket_superseded_after(io, latest, files, keys, schema, keep_deleting)
            if found is not None:
                return found
        return _bucket_superseded(io, files, keys, schema, keep_deleting)

    # Buckets on threads: pyarrow's decode and numpy's and Arrow's sorts release the GIL.
    workers = min(len(missing), os.cpu_count() or 1, _MAX_THREADS)
    with ThreadPoolExecutor(max(workers, 1)) as pool:
        results = list(pool.map(compute, missing))
    for (cache_key, files, _), found in zip(missing, results, strict=True):
        if found is None:
            return None
        if cache.enabled:
            weight = sum(int(a.nbytes) + _WEIGHT_PER_FILE for a in found.values())
            cache.put(cache_key, _Latest(tuple(str(m.file_name) for m in files),
                                         max(int(m.max_sequence_number) for m in files), found), weight)
        superseded.update(found)
    return superseded


@dataclass(frozen=True)
class _Latest:
    """A bucket's positions as last computed -- the answer for the same files, and where the next
    snapshot's starts: its files and their highest sequence number."""

    file_names: tuple[str, ...]
    max_sequence: int
    superseded: dict[str, np.ndarray]


def _bucket_superseded_after(io: TableIO, latest: _Latest, files: Sequence[Any], keys: list[str],
                             schema: ReadSchema, keep_deleting: bool = False) -> dict[str, np.ndarray] | None:
    """The positions of a bucket whose files are ``latest``'s plus newer ones (a commit's level-0
    files: each of their sequence numbers above every one of ``latest``), from ``latest``'s: an
    older row whose key the new files hold is superseded now; the new rows are told among
    themselves. None -- tell the bucket whole -- when the files are not that (a compaction removed
    some, a concurrent writer's numbers overlap), or the key is not one integer column.

    What it reads: the new files' key, sequence and kind columns, the older files' key column."""
    cached = set(latest.file_names)
    if len(keys) != 1 or not cached <= {str(m.file_name) for m in files}:
        return None
    older = [m for m in files if str(m.file_name) in cached]
    newer = [m for m in files if str(m.file_name) not in cached]
    if not newer or min(int(m.min_sequence_number) for m in newer) <= latest.max_sequence:
        return None
    read = _versions_of(io, newer, keys, schema)
    if read is None:
        return None
    rows, parts = read
    new_keys = rows[keys[0]]
    if not pa.types.is_integer(new_keys.type):
        return None
    live_rows = newest_live([new_keys], rows[SEQUENCE_COLUMN].to_numpy(), rows[VALUE_KIND_COLUMN].to_numpy(),
                            keep_deleting=keep_deleting)
    if live_rows is None:
        return None
    out = dict(latest.superseded)
    out.update(_not_live(newer, parts, live_rows, rows.num_rows))
    changed = np.unique(new_keys.to_numpy())
    for meta in older:
        column = _key_columns(meta, keys, schema)
        if column is None:
            return None
        with io.parquet(meta.file_path) as parquet:
            key_column = parquet.read(columns=column)[0]
        if key_column.null_count:
            return None
        held = key_column.to_numpy()
        if len(held) > 1 and bool(np.all(held[1:] > held[:-1])):  # sorted, one row per key
            at = np.searchsorted(held, changed)
            found = at < len(held)
            at = at[found]
            positions = at[held[at] == changed[found]]
        else:
            positions = np.flatnonzero(np.isin(held, changed))
        if len(positions):
            name = str(meta.file_name)
            before = out.get(name)
            out[name] = positions.astype(np.int64) if before is None else np.union1d(before, positions)
    return out


def _key_columns(meta: Any, keys: list[str], schema: ReadSchema) -> list[str] | None:
    """The ``_KEY_`` columns of ``keys`` under the names the file's own schema gave them (Paimon
    renames a primary-key column in place); None when the file's schema lacks one."""
    own = {s.name: s.file_name for s in schema.mapping(int(meta.schema_id)).sources}
    if any(own.get(k) is None for k in keys):
        return None
    return [KEY_PREFIX + str(own[k]) for k in keys]


def _versions_of(io: TableIO, files: Sequence[Any], keys: list[str], schema: ReadSchema
                 ) -> tuple[pa.Table, list[pa.Table]] | None:
    """The key (named ``keys``), sequence and kind columns of ``files``, one after another, and each
    file's part; None when a file's schema lacks a key column (the merge reader's own business)."""
    parts = []
    for meta in files:
        columns = _key_columns(meta, keys, schema)
        if columns is None:
            return None
        with io.parquet(meta.file_path) as parquet:
            read = parquet.read(columns=[*columns, SEQUENCE_COLUMN, VALUE_KIND_COLUMN])
        parts.append(read.rename_columns([*keys, SEQUENCE_COLUMN, VALUE_KIND_COLUMN]))
    rows = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
    return rows, parts


def _not_live(files: Sequence[Any], parts: Sequence[pa.Table], live_rows: np.ndarray, count: int
              ) -> dict[str, np.ndarray]:
    """Per file, the positions of its rows not among ``live_rows`` (indices into the files' rows
    one after another)."""
    live = np.zeros(count, dtype=bool)
    live[live_rows] = True
    out: dict[str, np.ndarray] = {}
    start = 0
    for meta, part in zip(files, parts, strict=True):
        gone = np.flatnonzero(~live[start:start + part.num_rows]).astype(np.int64)
        start += part.num_rows
        if len(gone):
            out[str(meta.file_name)] = gone
    return out


def _bucket_superseded(io: TableIO, files: Sequence[Any], keys: list[str], schema: ReadSchema,
                       keep_deleting: bool = False) -> dict[str, np.ndarray] | None:
    """:func:`superseded_positions` of one bucket's files, told over all of them."""
    read = _versions_of(io, files, keys, schema)
    if read is None:
        return None
    rows, parts = read
    live_rows = newest_live([rows[k] for k in keys], rows[SEQUENCE_COLUMN].to_numpy(),
                            rows[VALUE_KIND_COLUMN].to_numpy(), keep_deleting=keep_deleting)
    if live_rows is None:
        return None
    return _not_live(files, parts, live_rows, rows.num_rows)
