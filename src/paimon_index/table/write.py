"""Write Arrow data to a Paimon table with the file indexes its options ask for.

    write_files(table, data) -> commit messages   (the one file writer; nothing committed)
    write_arrow(table, data, overwrite=False) -> snapshot id | None

1. pypaimon's batch writer writes the Parquet data files (its file layout, partitions, buckets,
   statistics) and prepares the commit messages;
2. for every new data file, :func:`~paimon_index.fileindex.builder.build_file_index` builds the
   container the table's ``file-index.*`` options ask for from the file's own rows (row position =
   position in the file). ``write_arrow`` builds it from the rows in memory *while* pypaimon writes
   the Parquet file, then reads the file's indexed columns back and uses that container only if
   they equal the rows exactly (one new file, same values, same order); otherwise it builds from
   the file — so the positions are always the file's;
3. a container of at most ``file-index.in-manifest-threshold`` bytes goes into the data file's
   manifest entry (``embedded_index``), a larger one is written beside the data file as
   ``<data-file>.index`` and listed in its ``extra_files`` — as Paimon's ``DataFileIndexWriter`` does;
4. one :class:`~paimon_index.table.transaction.Transaction` makes it all visible as one snapshot
   (an append may retry on newer snapshots; an overwrite is exact). If anything fails, nothing is
   committed, the files written are deleted and the table's latest snapshot is unchanged.

**Parquet layout.** Every data writer's file IO is wrapped (:func:`new_table_write`) so that its
files get row groups of the table's block size, dictionaries only on columns where they pay (as
Java's writer decides) and Java's dictionary page limit: :mod:`paimon_index.table.parquet_layout`.

pypaimon internals used (our upgrade surface): ``TableWrite.file_store_write._create_data_writer``
(wrapped per write) and ``DataWriter.file_io.write_parquet(path, data, compression, zstd_level,
**kwargs)``; ``CommitMessage.new_files`` as ``DataFileMeta`` with
``file_name``, ``file_path``, ``embedded_index``, ``extra_files``;
``table.fields`` (``name``, ``type``); ``table.file_io.new_output_stream``;
``table.snapshot_manager().get_latest_snapshot().id``.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pyarrow as pa

from paimon_index.errors import DataError, PaimonIndexError
from paimon_index.fileindex.builder import build_file_index
from paimon_index.fileindex.options import FileIndexOptions
from paimon_index.table.catalog import dictionaries_enabled, dictionary_page_bytes, row_group_bytes
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import INDEX_FILE_SUFFIX
from paimon_index.table.paimon import (
    VALUE_KIND_INPUT,
    PaimonTable,
    null_partitions_restored,
    table_options,
    value_kinds_from,
    vectorize_key_value_write,
)
from paimon_index.table.parquet_layout import LayoutParquetIO
from paimon_index.table.schemas import read_schema
from paimon_index.table.stats import attach_value_stats
from paimon_index.types import DataType

__all__ = ["INDEX_FILE_SUFFIX", "attach_file_indexes", "conform", "file_container", "new_table_write",
           "rows_container", "store_container", "write_arrow",
           "write_files", "write_with", "writing"]

def attach_file_indexes(table: PaimonTable, messages: list[Any],
                        options: FileIndexOptions | Mapping[str, str] | None = None,
                        prebuilt: tuple[pa.Table, bytes | None] | None = None) -> list[Any]:
    """Build the file index of every new data file in ``messages`` and attach it (in place).

    ``prebuilt`` = (rows, container built from them) is used for a single new file whose indexed
    columns, read back, equal ``rows`` exactly (same values, same order); otherwise — or when they
    differ in any way — the container is built from the file.
    """
    attach_value_stats(table, messages)  # min/max/null counts as Java writes them (table/stats.py)
    opts = options if isinstance(options, FileIndexOptions) else \
        FileIndexOptions.from_table_options(options if options is not None else table_options(table))
    if opts.empty:
        return messages
    schema = read_schema(table)
    io = TableIO.of(table)
    metas = [meta for message in messages for meta in message.new_files]
    for meta in metas:
        if prebuilt is not None and len(metas) == 1 and meta.row_count == prebuilt[0].num_rows:
            stored = store_container(table, meta, _verified(io, meta, opts, schema, *prebuilt), opts)
            meta.embedded_index, meta.extra_files = stored.embedded_index, stored.extra_files
        else:
            _attach(table, meta, opts, schema, io)
    return messages


def _indexed_columns(options: FileIndexOptions, names: list[str]) -> list[str]:
    return [c for c in sorted({spec.column for spec in options.specs}) if c in names]


def _verified(io: TableIO, meta: Any, options: FileIndexOptions, schema: Mapping[str, DataType],
              rows: pa.Table, container: bytes | None) -> bytes | None:
    """``container`` if the file's indexed columns equal ``rows``'; else one built from the file."""
    with io.parquet(meta.file_path) as parquet:  # read back through the table's FileIO
        columns = _indexed_columns(options, parquet.schema_arrow.names)
        stored = parquet.read(columns=columns) \
            if columns and columns == _indexed_columns(options, rows.schema.names) else None
    if stored is not None:
        try:
            same = stored.cast(rows.select(columns).schema).equals(rows.select(columns))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            same = False
        if same:
            return container
    return file_container(meta, options, schema, io=io)


def file_container(meta: Any, options: FileIndexOptions, schema: Mapping[str, DataType], *,
                   io: TableIO) -> bytes | None:
    """The container ``options`` ask for, built from the data file's own rows (None: no index)."""
    wanted = sorted({spec.column for spec in options.specs})
    with io.parquet(meta.file_path) as parquet:
        present = [c for c in wanted if c in parquet.schema_arrow.names]
        # Exactly the file's rows, in file order. A ParquetFile, not read_table: the latter would
        # treat a partition folder such as dt=2024-01-01/ as a column and clash with the file's.
        rows = parquet.read(columns=present) if present else parquet.read()
    return rows_container(rows, options, schema)


def rows_container(rows: pa.Table, options: FileIndexOptions, schema: Mapping[str, DataType]) -> bytes | None:
    """The container ``options`` ask for, built from ``rows`` with the table's types (``schema``)."""
    return build_file_index(rows, options, {k: v for k, v in schema.items() if k in rows.schema.names})


def store_container(table: PaimonTable, meta: Any, container: bytes | None, options: FileIndexOptions,
                    index_file_name: str | None = None) -> Any:
    """``meta`` carrying ``container``: embedded when small enough, else written as an index file.

    The new meta keeps every extra file that is not a ``.index`` file; ``index_file_name`` names
    the index file (default ``<data-file>.index``).
    """
    extras = [name for name in meta.extra_files or () if not name.endswith(INDEX_FILE_SUFFIX)]
    if container is None:
        return replace(meta, extra_files=extras, embedded_index=None)
    if len(container) <= options.in_manifest_threshold:
        return replace(meta, extra_files=extras, embedded_index=container)
    name = index_file_name or meta.file_name + INDEX_FILE_SUFFIX
    with table.file_io.new_output_stream(posixpath.join(posixpath.dirname(meta.file_path), name)) as out:
        out.write(container)
    return replace(meta, extra_files=[*extras, name], embedded_index=None)


def _attach(table: PaimonTable, meta: Any, options: FileIndexOptions, schema: Mapping[str, DataType],
            io: TableIO) -> None:
    stored = store_container(table, meta, file_container(meta, options, schema, io=io), options)
    meta.embedded_index, meta.extra_files = stored.embedded_index, stored.extra_files


def new_table_write(table: PaimonTable) -> Any:
    """pypaimon's batch table write, its Parquet files laid out by :mod:`~paimon_index.table.parquet_layout`.

    Every writer of new data files (``write_files``, the Spark writer, the key-value writer of
    upserts and compaction) takes its table write from here.
    """
    writer = table.new_batch_write_builder().new_write()
    store = writer.file_store_write
    create = store._create_data_writer
    options = table_options(table)
    block, dictionary = row_group_bytes(options), dictionary_page_bytes(options)
    dictionaries = dictionaries_enabled(options)

    def sized(*args: Any, **kwargs: Any) -> Any:
        data_writer = create(*args, **kwargs)
        data_writer.file_io = LayoutParquetIO(data_writer.file_io, block, dictionary, dictionaries)
        return data_writer

    store._create_data_writer = sized
    vectorize_key_value_write(writer)
    null_partitions_restored(writer)
    return writer


@contextlib.contextmanager
def writing(table: PaimonTable) -> Iterator[Any]:
    """:func:`new_table_write` for one block, closed after it. When the block fails, no file it
    wrote is left: the writer is aborted (files rolled but not prepared) and the files of the
    messages its ``prepare_commit`` returned are deleted (in no snapshot yet)."""
    from paimon_index.table.transaction import Transaction

    writer = new_table_write(table)
    prepared: list[Any] = []
    prepare = writer.prepare_commit

    def recording(*args: Any, **kwargs: Any) -> Any:
        messages = prepare(*args, **kwargs)
        prepared.extend(messages)
        return messages

    writer.prepare_commit = recording
    try:
        yield writer
    except BaseException:
        with contextlib.suppress(Exception):  # a failed writer may fail again: keep the cause
            writer.abort()
        orphan = Transaction(table, None, operation="write")
        orphan.stage(prepared)
        orphan.abort()
        with contextlib.suppress(Exception):
            writer.close()
        raise
    writer.close()


def conform(data: pa.Table, target: pa.Schema, *, table: str | None = None) -> pa.Table:
    """``data`` with the table's column order and Arrow types (what pypaimon's writer accepts).

    Spark hands timestamps in microseconds; a ``TIMESTAMP(3)`` column takes milliseconds, truncated
    as Paimon does. Other type changes must be lossless (a failed cast raises a DataError naming
    the column, ``table`` when given).
    """
    where = f"table {table}: " if table else ""
    columns = []
    for field in target:
        if field.name not in data.schema.names:
            raise DataError(f"{where}the data has no column {field.name!r} (table columns: {target.names})")
        column = data.column(field.name)
        if column.type != field.type:
            lossy = pa.types.is_timestamp(column.type) and pa.types.is_timestamp(field.type)
            try:
                column = column.cast(field.type, safe=not lossy)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
                raise DataError(f"{where}column {field.name!r}: values of type {column.type} do not fit "
                                f"the column's type {field.type} ({e}); cast the column to {field.type} "
                                "first, or write through paimon_index.spark.jobs.write, which casts as "
                                "Spark's INSERT does") from e
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=target)


def with_value_kinds(writer: Any, data: pa.Table, kinds: pa.Array) -> pa.Table:
    """``data`` (in the writer's columns) with ``kinds`` (int8 ``_VALUE_KIND`` bytes, one per row) in
    the column a primary-key table's ``writer`` takes them from, once set to (:func:`value_kinds_from`)."""
    value_kinds_from(writer, VALUE_KIND_INPUT)
    return data.append_column(pa.field(VALUE_KIND_INPUT, pa.int8(), nullable=False), kinds)


def write_with(writer: Any, data: pa.Table, value_kinds: pa.Array | None = None) -> None:
    """Write ``data`` with a pypaimon table writer, conformed to the table's schema first.
    ``value_kinds`` (a primary-key table's writer): each row's ``_VALUE_KIND`` byte (the writer
    writes every row's given kind from here on; pypaimon's own is ``+I``)."""
    try:
        conformed = conform(data, writer.table_pyarrow_schema, table=_name(writer.table))
        if value_kinds is not None:
            conformed = with_value_kinds(writer, conformed, value_kinds)
        writer.write_arrow(conformed)
    except PaimonIndexError:
        raise
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, RuntimeError, ValueError) as e:
        # pypaimon rejects a NULL primary key or bucket key with a bare RuntimeError/ValueError.
        raise DataError(f"table {_name(writer.table)}: the rows do not fit the table: {e}") from e


def _name(table: PaimonTable) -> str:
    from paimon_index.table.paimon import table_name

    return table_name(table)


def write_files(table: PaimonTable, data: pa.Table | pa.RecordBatch, options: FileIndexOptions | None = None
                ) -> list[Any]:
    """The one file writer: write ``data`` as new data files with their file indexes.

    Returns pypaimon ``CommitMessage``s to stage in a :class:`~paimon_index.table.transaction
    .Transaction` (nothing is committed here). The index of a single new file is built from the
    rows in memory while pypaimon writes it (kept only if the file holds exactly those rows).
    Files written before a failure here are deleted.

    Raises:
        DataError: rows that do not fit the table (a missing column, a lossy cast, a NULL key).
    """
    rows = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
    if rows.num_rows == 0:
        return []
    with writing(table) as writer:
        try:
            rows = conform(rows, writer.table_pyarrow_schema, table=_name(table))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise DataError(f"table {_name(table)}: the rows do not fit the table's schema: {e}") from e
        opts = options if options is not None else FileIndexOptions.from_table_options(table_options(table))
        schema = read_schema(table)
        with ThreadPoolExecutor(max_workers=1) as pool:
            # Build the index from the rows in memory while pypaimon writes the Parquet file (both
            # release the GIL); it is used only if the file turns out to hold exactly these rows.
            future = None if opts.empty else pool.submit(rows_container, rows, opts, schema)
            write_with(writer, rows)
            try:
                written = writer.prepare_commit()
            except (pa.ArrowInvalid, pa.ArrowTypeError, RuntimeError, ValueError) as e:
                # pypaimon writes (and so checks) buffered rows here: a NULL key fails now.
                raise DataError(f"table {_name(table)}: the rows do not fit the table: {e}") from e
            prebuilt = None if future is None else (rows, future.result())
        return attach_file_indexes(table, written, opts, prebuilt)


def write_arrow(table: PaimonTable, data: pa.Table | pa.RecordBatch, *, overwrite: bool = False,
                partition: Mapping[str, Any] | None = None) -> int | None:
    """Append (or overwrite with) ``data`` and its file indexes in one snapshot.

    An append may land on top of snapshots other writers committed meanwhile (it reads nothing);
    an overwrite commits exactly on the snapshot it replaces, dropping that snapshot's files and
    their deletion vectors (in ``partition`` only, when given).

    Returns:
        The new snapshot's id; None when nothing was committed (no rows to append).

    Raises:
        DataError: rows that do not fit the table.
        ConcurrentChangeError: (overwrite) another commit landed after the overwrite started.
    """
    from paimon_index.table.transaction import Transaction

    with Transaction.begin(table, exact=overwrite, overwrite=overwrite, partition=partition,
                           operation="overwrite" if overwrite else "append") as txn:
        txn.stage(write_files(table, data))
        return txn.commit()
