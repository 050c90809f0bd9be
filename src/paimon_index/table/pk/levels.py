"""Where files go in a bucket's LSM levels, and rewriting a bucket's live rows.

    free_level(files, new, max_level) -> level | None
    write_rows(table, rows) -> commit messages      pypaimon's key-value writer + file indexes
    write_at(table, rows, partition, bucket) -> commit messages   the same, at a given bucket
    rewrite(table, dvs, files, level) -> (new files, removed files)
    rewrite_merged(table, rows, partition, bucket, level) -> new files    rows already merged

Merge-free readers read the files of levels >= 1 with their deletion vectors and merge nothing; so
every level >= 1 must stay a sorted run and every key must have at most one live row there. A new
file goes to the lowest level 1 .. num-levels - 1 where no file's key range (trimmed key) overlaps
its own. When no level is free, the bucket is rewritten: all its live rows (vectors applied) into
the top level, vectors dropped. Rewritten rows get new sequence numbers (every key has one live
row, so the order between versions is no longer needed).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.deletionvectors.maintainer import BucketDvMaintainer
from paimon_index.table.fileio import TableIO
from paimon_index.table.pk.lookup import key_tuple, overlaps
from paimon_index.table.pk.plan import (
    DELETING_VALUE_KINDS,
    VALUE_KIND_COLUMN,
    live_current_rows,
    user_columns,
    writable,
)
from paimon_index.table.schemas import read_schema
from paimon_index.table.write import attach_file_indexes, conform, write_with, writing

__all__ = ["free_level", "rewrite", "rewrite_merged", "write_at", "write_rows"]


def free_level(files: Iterable[Any], new: Any, max_level: int) -> int | None:
    """The lowest level >= 1 where no file overlaps ``new``'s key range; None when all are taken."""
    low, high = key_tuple(new.min_key), key_tuple(new.max_key)
    taken = list(files)
    for level in range(1, max_level + 1):
        if not any(m.level == level and overlaps(m, low, high) for m in taken):
            return level
    return None


def write_rows(table: Any, rows: pa.Table) -> list[Any]:
    """Write ``rows`` with pypaimon's key-value writer (buckets, sequence numbers), indexes attached.

    The rows hold one row per key, already merged: written through
    :func:`~paimon_index.table.pk.plan.writable`."""
    with writing(writable(table)) as writer:
        if rows.num_rows:
            write_with(writer, rows)
        return attach_file_indexes(table, writer.prepare_commit())


def write_at(table: Any, rows: pa.Table, partition: tuple[Any, ...], bucket: int) -> list[Any]:
    """Write ``rows`` (all of one partition) into ``bucket`` with pypaimon's key-value writer
    (sequence numbers, level 0), indexes attached. No bucket is assigned and no HASH index touched:
    the caller knows the bucket (a rewritten bucket; a dynamic-bucket assigner's choice). The rows
    hold one row per key, already merged: written through :func:`~paimon_index.table.pk.plan.writable`."""
    with writing(writable(table)) as writer:
        if rows.num_rows:
            data = conform(rows, writer.table_pyarrow_schema)
            for batch in data.to_batches():
                writer.file_store_write.write(tuple(partition), int(bucket), batch)
        return attach_file_indexes(table, writer.prepare_commit())


def rewrite(table: Any, dvs: BucketDvMaintainer, files: list[Any], level: int) -> tuple[list[Any], list[Any]]:
    """Rewrite ``files`` (live rows only, deletes dropped) into ``level``; (new files, files removed).

    The rows are written into the bucket they come from (never re-assigned: a dynamic-bucket
    table's new keys are not in the committed HASH index yet, and pypaimon's own assigner could
    pick another bucket); the bucket's key set does not grow, so no HASH index changes.
    """
    columns = user_columns(table)
    io = TableIO.of(table)
    schema = read_schema(table)  # files written before a schema change: their columns by field id
    parts = [live_current_rows(table, m, dvs, columns, [VALUE_KIND_COLUMN], io=io, schema=schema)
             for m in files]
    rows = pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})
    if rows.num_rows:
        live = pc.invert(pc.is_in(rows[VALUE_KIND_COLUMN], pa.array(DELETING_VALUE_KINDS, pa.int8())))
        rows = rows.filter(live).select(columns)
    for meta in files:
        dvs.remove_deletion_vector_of(meta.file_name)
    row = dvs.partition  # pypaimon's GenericRow (or plain values)
    partition = tuple(row.values or ()) if hasattr(row, "values") else tuple(row)
    return rewrite_merged(table, rows, partition, dvs.bucket, level), files


def rewrite_merged(table: Any, rows: pa.Table, partition: tuple[Any, ...], bucket: int,
                   level: int) -> list[Any]:
    """``rows`` (one row per key, the bucket's live rows) written into ``bucket`` as new files at
    ``level``; their metadata. No index file of the writer is kept (the bucket's keys do not change)."""
    messages = write_at(table, rows, partition, bucket) if rows.num_rows else []
    index_dir = str(table.path_factory().index_path())
    io = TableIO.of(table)
    for entry in (e for m in messages for e in m.index_adds):
        meta = entry.index_file
        io.delete_quietly(meta.external_path or posixpath.join(index_dir, meta.file_name))
    written = [f for m in messages for f in m.new_files]
    return [replace(f, level=level) for f in written]
