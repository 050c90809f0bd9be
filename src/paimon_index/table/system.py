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

__all__ = ["FILE_INDEXES_SCHEMA", "file_indexes"]

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
