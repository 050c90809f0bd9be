"""Where files go in a bucket's LSM levels, and rewriting a bucket's live rows.

    free_level(files, new, max_level, from_top=False) -> level | None
    write_rows(table, rows) -> commit messages      pypaimon's key-value writer + file indexes
    kinds_as_bytes(rows) -> rows                    ``_ROW_KIND`` ('+I', '+U') as ``_VALUE_KIND`` bytes
    write_at(table, rows, partition, bucket) -> commit messages   the same, at a given bucket
    write_retractions(table, {bucket: rows}) -> {bucket: level-0 files of -U/-D rows}
    rewrite(table, dvs, files, level) -> (new files, removed files)
    rewrite_merged(table, rows, partition, bucket, level) -> new files    rows already merged

Merge-free readers read the files of levels >= 1 with their deletion vectors and merge nothing; so
every level >= 1 must stay a sorted run and every key must have at most one live row there. A new
file goes to the lowest level 1 .. num-levels - 1 where no file's key range (trimmed key) overlaps
its own; into a bucket with no file at a level >= 1 (a first write, an overwrite), to the highest
such level, as Java's first compaction of a bucket writes its files to the top level (so ``t$ro``,
the top level, holds a table just loaded, as with Java's writer). When no level is free, the
bucket is rewritten: all its live rows (vectors applied) into the top level, vectors dropped.
Rewritten rows get new sequence numbers (every key has one live row, so the order between versions
is no longer needed).

Rows may carry their row kind as a ``_VALUE_KIND`` column (int8, :func:`kinds_as_bytes`): each is
written with its own (Java writes an UPDATE's rows as ``+U`` and its compactions keep a row's kind,
which ``t$audit_log`` shows); rows without one are ``+I``.

Files roll at ``target-file-size`` of *encoded* bytes, as Java's writer rolls them: pypaimon rolls
when its Arrow buffer reaches the target, 3-5x more rows than a Parquet file of that size holds (a
full compaction of 20M rows in 4 buckets wrote 12 files where Paimon's connector wrote 4). The rows
per file come from the bytes per row of the rewritten files (a rewrite) or, for new rows larger
than one file, of a slice of them encoded as the file will be (:func:`estimated_bytes_per_row`);
:func:`rolled_on_encoded_bytes` sets pypaimon's threshold from it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paimon_index.deletionvectors.maintainer import BucketDvMaintainer
from paimon_index.table.fileio import TableIO
from paimon_index.table.parquet_layout import dictionary_columns
from paimon_index.table.pk.lookup import key_tuple, overlaps
from paimon_index.table.pk.plan import (
    DELETING_VALUE_KINDS,
    ROW_KIND_COLUMN,
    VALUE_KIND_COLUMN,
    kind_bytes,
    live_current_rows,
    user_columns,
    writable,
)
from paimon_index.table.schemas import read_schema
from paimon_index.table.write import attach_file_indexes, conform, with_value_kinds, write_with, writing

__all__ = ["encoded_bytes_per_row", "estimated_bytes_per_row", "free_level", "kinds_as_bytes", "rewrite",
           "rewrite_merged", "rolled_on_encoded_bytes", "write_at", "write_kinded", "write_retractions",
           "write_rows"]

#: Arrow bytes a key-value writer buffers per row besides the user's columns and the key's copy:
#: ``_SEQUENCE_NUMBER`` (8) and ``_VALUE_KIND`` (1).
_SYSTEM_BYTES_PER_ROW = 9
#: The most Arrow bytes, in multiples of ``target-file-size``, a writer buffers before it rolls a
#: file (pypaimon holds a file's rows in memory until it writes it): bounds the memory of a rewrite
#: of rows that encode very small.
MAX_ARROW_PER_TARGET = 8
#: Rows of new data encoded to estimate its bytes per row on disk (a slice from the middle: rows
#: arrive in key order, so a slice keeps the runs and sortedness the file's encoding sees).
ESTIMATE_SAMPLE_ROWS = 50_000


def _key_columns(table: Any, rows: pa.Table) -> list[str]:
    """The table's key columns (partition fields left out, as files hold the key) that ``rows`` has."""
    return [k for k in table.trimmed_primary_keys if k in rows.column_names]


def _arrow_bytes(table: Any, rows: pa.Table) -> int:
    """Arrow bytes of ``rows`` with the key's copy a key-value file holds (system columns aside)."""
    return rows.nbytes + sum(rows[k].nbytes for k in _key_columns(table, rows))


def rolled_on_encoded_bytes(table: Any, rows: pa.Table, encoded_bytes_per_row: float) -> Any:
    """``table`` with pypaimon's rolling threshold (Arrow bytes of its buffer) set so that a file of
    ``rows`` rolls at about ``target-file-size`` encoded bytes, ``encoded_bytes_per_row`` being what
    such rows took in the files they come from (at most :data:`MAX_ARROW_PER_TARGET` x the target)."""
    if rows.num_rows == 0 or encoded_bytes_per_row <= 0:
        return table
    arrow_per_row = _arrow_bytes(table, rows) / rows.num_rows + _SYSTEM_BYTES_PER_ROW
    ratio = min(arrow_per_row / encoded_bytes_per_row, MAX_ARROW_PER_TARGET)
    if ratio <= 1:
        return table
    target = int(table.options.target_file_size(True))
    return table.copy({"target-file-size": str(int(target * ratio))})


def estimated_bytes_per_row(table: Any, rows: pa.Table) -> float:
    """Bytes per row ``rows`` will take in the table's data files, from a slice of them encoded as
    the key-value writer encodes a file (the key's copy, sequence numbers, row kinds; the table's
    compression; :mod:`~paimon_index.table.parquet_layout`'s dictionary choice); 0.0 when all of
    ``rows`` fit in one file in Arrow bytes anyway (pypaimon's own rolling then never cuts)."""
    target = int(table.options.target_file_size(True))
    if rows.num_rows == 0 or _arrow_bytes(table, rows) <= target:
        return 0.0
    count = min(rows.num_rows, ESTIMATE_SAMPLE_ROWS)
    sample = rows.slice((rows.num_rows - count) // 2, count)
    for key in _key_columns(table, sample):
        sample = sample.append_column(f"_KEY_{key}", sample[key])
    sample = sample.append_column("_SEQUENCE_NUMBER", pa.array(np.arange(count, dtype=np.int64)))
    sample = sample.append_column("_VALUE_KIND", pa.array(np.zeros(count, np.int8)))
    options = table.options
    sink = pa.BufferOutputStream()
    pq.write_table(sample, sink, compression=options.file_compression("zstd"),
                   compression_level=int(options.file_compression_zstd_level(1)),
                   use_dictionary=dictionary_columns(sample))
    return sink.getvalue().size / count


def encoded_bytes_per_row(files: Iterable[Any]) -> float:
    """Bytes per row of data files (their sizes over their row counts, deleted rows included)."""
    metas = list(files)
    rows = sum(int(m.row_count) for m in metas)
    return sum(int(m.file_size) for m in metas) / rows if rows else 0.0


def free_level(files: Iterable[Any], new: Any, max_level: int, *, from_top: bool = False) -> int | None:
    """The lowest level >= 1 where no file overlaps ``new``'s key range (``from_top``: the highest,
    for a bucket that had none at a level >= 1, whose first sorted run goes to the top and each
    overlapping newer one right below); None when all are taken."""
    low, high = key_tuple(new.min_key), key_tuple(new.max_key)
    taken = list(files)
    levels = range(max_level, 0, -1) if from_top else range(1, max_level + 1)
    for level in levels:
        if not any(m.level == level and overlaps(m, low, high) for m in taken):
            return level
    return None


def kinds_as_bytes(rows: pa.Table) -> pa.Table:
    """``rows`` with their ``_ROW_KIND`` ('+I', '+U'; none deleting) as a ``_VALUE_KIND`` byte
    column, what the writers here take; as they are without one."""
    if ROW_KIND_COLUMN not in rows.column_names:
        return rows
    return rows.drop_columns([ROW_KIND_COLUMN]).append_column(
        pa.field(VALUE_KIND_COLUMN, pa.int8(), nullable=False), kind_bytes(rows[ROW_KIND_COLUMN]))


def _kinds_of(rows: pa.Table) -> tuple[pa.Table, pa.Array | None]:
    """(rows without ``_VALUE_KIND``, its bytes; None when every row is ``+I``, the writers' own)."""
    if VALUE_KIND_COLUMN not in rows.column_names:
        return rows, None
    kinds = rows[VALUE_KIND_COLUMN].combine_chunks()
    rest = rows.drop_columns([VALUE_KIND_COLUMN])
    return (rest, None) if not pc.any(pc.not_equal(kinds, 0)).as_py() else (rest, kinds)


def write_kinded(writer: Any, rows: pa.Table) -> None:
    """``rows`` written by a fresh pypaimon key-value ``writer``; with ``_VALUE_KIND``, each row's kind."""
    rows, kinds = _kinds_of(rows)
    write_with(writer, rows, kinds)


def write_rows(table: Any, rows: pa.Table) -> list[Any]:
    """Write ``rows`` with pypaimon's key-value writer (buckets, sequence numbers), indexes attached.

    The rows hold one row per key, already merged: written through
    :func:`~paimon_index.table.pk.plan.writable`; with ``_VALUE_KIND``, each row's kind."""
    table = writable(table)
    rows, kinds = _kinds_of(rows)
    with writing(rolled_on_encoded_bytes(table, rows, estimated_bytes_per_row(table, rows))) as writer:
        if rows.num_rows:
            write_with(writer, rows, kinds)
        return attach_file_indexes(table, writer.prepare_commit())


def write_at(table: Any, rows: pa.Table, partition: tuple[Any, ...], bucket: int,
             encoded_bytes_per_row: float = 0.0) -> list[Any]:
    """Write ``rows`` (all of one partition) into ``bucket`` with pypaimon's key-value writer
    (sequence numbers, level 0), indexes attached. No bucket is assigned and no HASH index touched:
    the caller knows the bucket (a rewritten bucket; a dynamic-bucket assigner's choice). The rows
    hold one row per key, already merged: written through :func:`~paimon_index.table.pk.plan.writable`.
    Files roll on encoded bytes (:func:`rolled_on_encoded_bytes`): ``encoded_bytes_per_row`` when
    given (the rewritten files'), else :func:`estimated_bytes_per_row`."""
    table = writable(table)
    rows, kinds = _kinds_of(rows)
    per_row = encoded_bytes_per_row or estimated_bytes_per_row(table, rows)
    with writing(rolled_on_encoded_bytes(table, rows, per_row)) as writer:
        if rows.num_rows:
            data = conform(rows, writer.table_pyarrow_schema)
            if kinds is not None:
                data = with_value_kinds(writer, data, kinds)
            for batch in data.to_batches():
                writer.file_store_write.write(tuple(partition), int(bucket), batch)
        return attach_file_indexes(table, writer.prepare_commit())


def write_retractions(table: Any, rows: dict[tuple[tuple[Any, ...], int], pa.Table]) -> dict[
        tuple[tuple[Any, ...], int], list[Any]]:
    """Each (partition, bucket)'s ``rows`` (the table's columns and :data:`VALUE_KIND_COLUMN`, int8
    ``-U`` 1 / ``-D`` 3; one row per key) written as level-0 key-value files of that bucket, in one
    writer (one restore of the buckets' sequence numbers for all of them), file indexes attached,
    ``deleteRowCount`` counted: an upsert's deletes as Java's writer writes them before its
    compaction applies them (what Java's delta readers return); the new files per bucket. No HASH
    index is touched (a deleted key adds none)."""
    if not rows:
        return {}
    table = writable(table)
    with writing(table) as writer:
        for (partition, bucket), part in rows.items():
            data = with_value_kinds(writer, conform(part.drop_columns([VALUE_KIND_COLUMN]),
                                                    writer.table_pyarrow_schema),
                                    part[VALUE_KIND_COLUMN].combine_chunks())
            for batch in data.to_batches():
                writer.file_store_write.write(tuple(partition), int(bucket), batch)
        written: dict[tuple[tuple[Any, ...], int], list[Any]] = {}
        for message in attach_file_indexes(table, writer.prepare_commit()):
            written.setdefault((tuple(message.partition), int(message.bucket)), []).extend(message.new_files)
        return written


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
    if rows.num_rows:  # each live row keeps its kind, as Java's compaction keeps it
        live = pc.invert(pc.is_in(rows[VALUE_KIND_COLUMN], pa.array(DELETING_VALUE_KINDS, pa.int8())))
        rows = rows.filter(live).select([*columns, VALUE_KIND_COLUMN])
    for meta in files:
        dvs.remove_deletion_vector_of(meta.file_name)
    row = dvs.partition  # pypaimon's GenericRow (or plain values)
    partition = tuple(row.values or ()) if hasattr(row, "values") else tuple(row)
    return rewrite_merged(table, rows, partition, dvs.bucket, level, encoded_bytes_per_row(files)), files


def rewrite_merged(table: Any, rows: pa.Table, partition: tuple[Any, ...], bucket: int,
                   level: int, encoded_bytes_per_row: float = 0.0) -> list[Any]:
    """``rows`` (one row per key, the bucket's live rows; with ``_VALUE_KIND``, each row's kind)
    written into ``bucket`` as new files at ``level`` (in key order: one sorted run); their metadata.
    No index file of the writer is kept (the bucket's keys do not change).
    ``encoded_bytes_per_row``: the rewritten files' (files then roll on encoded bytes)."""
    if rows.num_rows:
        # In key order: the writer rolls files off the front of its sorted buffer, so rows handed over
        # in any other order give files whose key ranges overlap -- not a sorted run at one level
        # (Java's writer then refuses the table: "SortedRun is not sorted").
        rows = rows.sort_by([(k, "ascending") for k in _key_columns(table, rows)])
    messages = write_at(table, rows, partition, bucket, encoded_bytes_per_row) if rows.num_rows else []
    index_dir = str(table.path_factory().index_path())
    io = TableIO.of(table)
    for entry in (e for m in messages for e in m.index_adds):
        meta = entry.index_file
        io.delete_quietly(meta.external_path or posixpath.join(index_dir, meta.file_name))
    written = [f for m in messages for f in m.new_files]
    return [replace(f, level=level) for f in written]
