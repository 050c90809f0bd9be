"""System views of a table's indexes, like Paimon's ``$file_indexes`` system table.

    file_indexes(table) -> pa.Table, one row per (data file, column, index type):

    partition      string    the partition values, e.g. "dt=2024-01-01" ("" when unpartitioned)
    bucket         int32
    file_path      string    the data file
    file_size      int64     bytes of the data file
    record_count   int64
    column         string
    index_type     string    bloom-filter, bitmap, range-bitmap, bsi, ...
    storage        string    EMBEDDED (in the manifest entry) or FILE (<data-file>.index)
    index_path     string    the .index file (null when embedded)
    index_size     int64     bytes of this index's body inside the container (0 when empty)

pypaimon internals used: as in :mod:`paimon_index.table.read`, plus ``DataSplit.partition``
(``GenericRow.values``) and ``DataSplit.bucket``, ``table.partition_keys``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from paimon_index.table.fileio import TableIO
from paimon_index.table.files import container_source, open_container, partition_text
from paimon_index.table.paimon import PaimonTable

__all__ = ["FILE_INDEXES_SCHEMA", "file_indexes", "partition_values", "partitions"]

FILE_INDEXES_SCHEMA = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("file_path", pa.string()),
    ("file_size", pa.int64()), ("record_count", pa.int64()), ("column", pa.string()),
    ("index_type", pa.string()), ("storage", pa.string()), ("index_path", pa.string()),
    ("index_size", pa.int64()),
])


def file_indexes(table: PaimonTable) -> pa.Table:
    """Every file index of the latest snapshot's data files (schema: module docstring)."""
    rows: dict[str, list[Any]] = {name: [] for name in FILE_INDEXES_SCHEMA.names}
    io = TableIO.of(table)
    for split in table.new_read_builder().new_scan().plan().splits():
        partition = partition_text(table.partition_keys or [], split.partition)
        for meta in split.files:
            source = container_source(meta)
            if source is None:
                continue
            embedded = isinstance(source, bytes)
            container = open_container(io, meta, source)
            assert container is not None
            with container:
                for entry in container.entries:
                    for name, value in (
                        ("partition", partition), ("bucket", split.bucket), ("file_path", meta.file_path),
                        ("file_size", meta.file_size), ("record_count", meta.row_count),
                        ("column", entry.column), ("index_type", entry.index_type),
                        ("storage", "EMBEDDED" if embedded else "FILE"),
                        ("index_path", None if embedded else source),
                        ("index_size", 0 if entry.empty else entry.length),
                    ):
                        rows[name].append(value)
    return pa.table(rows, schema=FILE_INDEXES_SCHEMA)


# ------------------------------------------------------------------------------------------------
# Paimon's system tables ($snapshots, $files, $options, $schemas, $manifests, $tags)
# ------------------------------------------------------------------------------------------------
#: The system tables :func:`system_table` builds (``file_indexes``: :func:`file_indexes`).
SYSTEM_TABLES = ("snapshots", "files", "file_indexes", "options", "schemas", "manifests", "tags")
#: DataFileMeta.file_source as Java's FileSource prints it.
_FILE_SOURCES = {"0": "APPEND", "1": "COMPACT"}


def partitions(table: PaimonTable) -> list[str]:
    """The latest snapshot's partitions as ``k1=v1/k2=v2`` (Spark's SHOW PARTITIONS), sorted."""
    keys = table.partition_keys or []
    return sorted({partition_text(keys, values) for values in partition_values(table)})


def partition_values(table: PaimonTable) -> set[tuple[Any, ...]]:
    """The latest snapshot's partitions, each its values in partition-key order."""
    return {tuple(getattr(split.partition, "values", split.partition) or [])
            for split in table.new_read_builder().new_scan().plan().splits()}


def _java_map(text: Any) -> Any:
    """pypaimon's JSON stats map as Java's ``Map.toString`` of a sorted map: ``{a=1, b=x}``."""
    import json

    if not isinstance(text, str):
        return text
    try:
        values = json.loads(text)
    except ValueError:
        return text
    if not isinstance(values, dict):
        return text

    def show(v: Any) -> str:
        return "null" if v is None else ("true" if v is True else "false" if v is False else str(v))

    return "{" + ", ".join(f"{k}={show(values[k])}" for k in sorted(values)) + "}"


def _files(table: Any, rows: pa.Table) -> pa.Table:
    """pypaimon's ``$files`` with Java's spellings: partition ``{v1, v2}``, the full file path,
    stats maps as ``{col=value, ...}``, file_source APPEND/COMPACT."""
    keys = list(table.partition_keys or [])
    root = str(table.table_path).rstrip("/")
    cols = rows.to_pydict()
    partition, paths = [], []
    for part, bucket, path in zip(cols["partition"], cols["bucket"], cols["file_path"], strict=True):
        values = [kv.partition("=")[2] for kv in part.split("/")] if keys and part else []
        partition.append("{" + ", ".join(values) + "}")
        if "/" in str(path):
            paths.append(path)
        else:
            prefix = f"{part}/" if keys and part else ""
            paths.append(f"{root}/{prefix}bucket-{bucket}/{path}")
    cols["partition"], cols["file_path"] = partition, paths
    for name in ("null_value_counts", "min_value_stats", "max_value_stats"):
        cols[name] = [_java_map(v) for v in cols[name]]
    cols["file_source"] = [_FILE_SOURCES.get(v, v) if v is not None else None for v in cols["file_source"]]
    return pa.table(cols, schema=rows.schema)


def system_table(table: PaimonTable, name: str) -> pa.Table:
    """System table ``name`` (one of :data:`SYSTEM_TABLES`) of the pypaimon table, as Arrow.

    Built by pypaimon's own system tables (``pypaimon.table.system``), with ``$files`` spelt as
    Java's ``FilesTable`` prints it (:func:`_files`); ``file_indexes`` is :func:`file_indexes`.
    """
    from paimon_index.table.paimon import system_table_loader

    if name == "file_indexes":
        return file_indexes(table)
    system = system_table_loader.load(name, table)
    if system is None or name not in SYSTEM_TABLES:
        from paimon_index.errors import TableError

        raise TableError(f"system table {name!r} is not supported; known: {', '.join(SYSTEM_TABLES)}")
    builder = system.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    if name == "files":
        rows = _files(table, rows)
    return rows
