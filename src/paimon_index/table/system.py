"""System views of a table's indexes, like Paimon's ``$file_indexes`` system table.

    file_indexes(table) -> pa.Table, one row per (data file, column, index type):

    partition      string    the partition values, e.g. "dt=2024-01-01/b=true" (NULL: "null"; "" when
                             unpartitioned), as SHOW PARTITIONS prints them
    bucket         int32
    file_path      string    the data file
    file_size      int64     bytes of the data file
    record_count   int64
    column         string
    index_type     string    bloom-filter, bitmap, range-bitmap, bsi, ...
    storage        string    EMBEDDED (in the manifest entry) or FILE (<data-file>.index)
    index_path     string    the .index file (null when embedded)
    index_size     int64     bytes of this index's body inside the container (0 when empty)

Paimon's other system tables (``system_table``): ``$snapshots``, ``$files``, ``$options``,
``$schemas``, ``$manifests``, ``$tags``, ``$branches`` as pypaimon builds them (``$files`` spelt as
Java prints it); ``$partitions``, ``$buckets`` and ``$table_indexes`` built here from the
snapshot's manifests, as Java's ``PartitionsTable``, ``BucketsTable`` and ``TableIndexesTable``
print them. A partition value is printed as Paimon casts it to STRING (:func:`java_text`):
``true``, ``2024-01-02``, ``1.0E7``; ``$partitions`` spells a partition ``d=2024-01-02/b=true`` with
NULL as ``partition.default-name``, the others ``{2024-01-02, true}`` with NULL as ``null``.

pypaimon internals used: as in :mod:`paimon_index.table.read`, plus ``DataSplit.partition``
(``GenericRow.values``) and ``DataSplit.bucket``, ``table.partition_keys``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from paimon_index.fileindex.options import parse_bool
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import container_source, open_container, partition_text
from paimon_index.table.paimon import (
    DELETION_VECTORS,
    LiveFile,
    PaimonTable,
    index_entries,
    latest_snapshot,
    live_files,
    table_options,
)
from paimon_index.table.plan import DV_ENABLED
from paimon_index.types import DataType, TypeRoot

__all__ = ["AUDIT_LOG", "DATA_SYSTEM_TABLES", "FILE_INDEXES_SCHEMA", "READ_OPTIMIZED", "ROW_KIND",
           "SYSTEM_TABLES", "file_indexes", "java_text", "partition_values", "partitions", "system_table"]

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
    keys = list(table.partition_keys or [])
    types = _partition_types(table, keys)
    for split in table.new_read_builder().new_scan().plan().splits():
        values = tuple(getattr(split.partition, "values", split.partition) or ())
        partition = _partition_path(keys, values, types, "null")
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
SYSTEM_TABLES = ("snapshots", "files", "file_indexes", "options", "schemas", "manifests", "tags",
                 "partitions", "buckets", "table_indexes", "branches")
#: Java's ``ReadOptimizedTable`` (``t$ro``): a primary-key table's top level, read as it is.
READ_OPTIMIZED = "ro"
#: Java's ``AuditLogTable`` (``t$audit_log``): the table's rows with their row kind first.
AUDIT_LOG = "audit_log"
#: ``t$audit_log``'s row kind column (``+I``, ``-U``, ``+U``, ``-D``), Java's ``SpecialFields.ROW_KIND``.
ROW_KIND = "rowkind"
#: System tables that are reads of the table's rows, planned as the table's own reads are (not
#: built here; see :func:`paimon_index.table.scan.plan_read`'s ``read_optimized`` and
#: ``keep_deleting``, :func:`paimon_index.spark.planned.read_planned`'s ``audit_log``).
DATA_SYSTEM_TABLES = (READ_OPTIMIZED, AUDIT_LOG)
#: Paimon's option naming a NULL partition value's directory, and its default.
PARTITION_DEFAULT_NAME = "partition.default-name"
DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
#: Java's ``Double.toString`` writes plain decimals in [1e-3, 1e7), computerized notation elsewhere.
_JAVA_PLAIN_LOW, _JAVA_PLAIN_HIGH = 1e-3, 1e7
#: DataFileMeta.file_source as Java's FileSource prints it.
_FILE_SOURCES = {"0": "APPEND", "1": "COMPACT"}


def partitions(table: PaimonTable, among: Iterable[tuple[Any, ...]] | None = None) -> list[str]:
    """The latest snapshot's partitions (or those of ``among``, each its values) as ``k1=v1/k2=v2``
    with values as Spark prints them (``true``, NULL as ``null``: Spark's SHOW PARTITIONS through
    Paimon's connector), sorted."""
    keys = list(table.partition_keys or [])
    types = _partition_types(table, keys)
    listed = partition_values(table) if among is None else among
    return sorted({_partition_path(keys, values, types, "null") for values in listed})


def java_text(value: Any, dtype: DataType | None) -> str:
    """A non-NULL value as Paimon casts it to STRING (``CastExecutors.resolveToString``): booleans
    ``true``/``false``, floats as Java's ``toString`` (``1.0``, ``1.0E7``), decimals with their
    scale, timestamps ``yyyy-MM-dd HH:mm:ss`` with the fraction trimmed to the precision, bytes as
    UTF-8 text."""
    root = dtype.root if dtype is not None else None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_float(value, single=root is TypeRoot.FLOAT)
    if isinstance(value, decimal.Decimal):
        scale = dtype.scale if dtype is not None and dtype.scale is not None else None
        return format(value if scale is None else value.quantize(decimal.Decimal(1).scaleb(-scale)), "f")
    if isinstance(value, dt.datetime):
        precision = dtype.precision if dtype is not None and dtype.precision is not None else 6
        fraction = f"{value.microsecond * 1000:09d}"
        while len(fraction) > precision and fraction.endswith("0"):
            fraction = fraction[:-1]
        return value.strftime("%Y-%m-%d %H:%M:%S") + (f".{fraction}" if fraction else "")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _java_float(value: float, *, single: bool) -> str:
    """Java's ``Float.toString`` / ``Double.toString`` of ``value`` (shortest digits that read back)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    number = np.float32(value) if single else np.float64(value)
    if _JAVA_PLAIN_LOW <= abs(float(number)) < _JAVA_PLAIN_HIGH:
        return np.format_float_positional(number, unique=True, trim="0")
    mantissa, exponent = np.format_float_scientific(number, unique=True, trim="0").split("e")
    return f"{mantissa}E{int(exponent)}"


def _partition_types(table: PaimonTable, keys: Sequence[str]) -> list[DataType | None]:
    from paimon_index.table.schemas import read_schema

    schema = read_schema(table)
    return [schema.get(k) for k in keys]


def _partition_path(keys: Sequence[str], values: Sequence[Any], types: Sequence[DataType | None],
                    null_text: str) -> str:
    """``k1=v1/k2=v2`` ("" unpartitioned), a NULL value as ``null_text``."""
    return "/".join(f"{k}={null_text if v is None else java_text(v, t)}"
                    for k, v, t in zip(keys, values, types, strict=True))


def _partition_row(values: Sequence[Any], types: Sequence[DataType | None]) -> str:
    """Paimon's cast of a partition row to STRING: ``{v1, v2}``, NULL as ``null`` (``{}`` unpartitioned)."""
    return "{" + ", ".join("null" if v is None else java_text(v, t)
                           for v, t in zip(values, types, strict=True)) + "}"


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
    """pypaimon's ``$files`` with Java's spellings: partition ``{v1, v2}`` (pypaimon's ``k=v``
    text, Python's ``str`` of each value, mapped back to the values it was made of), the full file
    path, stats maps as ``{col=value, ...}``, file_source APPEND/COMPACT."""
    keys = list(table.partition_keys or [])
    types = _partition_types(table, keys)
    spelled = {partition_text(keys, values): _partition_row(values, types)
               for values in partition_values(table)}
    root = str(table.table_path).rstrip("/")
    cols = rows.to_pydict()
    partition, paths = [], []
    for part, bucket, path in zip(cols["partition"], cols["bucket"], cols["file_path"], strict=True):
        if keys and part:
            plain = "{" + ", ".join(kv.partition("=")[2] for kv in part.split("/")) + "}"
            partition.append(spelled.get(part, plain))
        else:
            partition.append("{}")
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


_TIMESTAMP_MILLIS = pa.timestamp("ms")
PARTITIONS_SCHEMA = pa.schema([
    ("partition", pa.string()), ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()),
    ("file_count", pa.int64()), ("last_update_time", _TIMESTAMP_MILLIS), ("created_at", _TIMESTAMP_MILLIS),
    ("created_by", pa.string()), ("updated_by", pa.string()), ("options", pa.string()),
    ("total_buckets", pa.int32()), ("done", pa.bool_()), ("deleted_record_count", pa.int64()),
])
BUCKETS_SCHEMA = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("record_count", pa.int64()),
    ("file_size_in_bytes", pa.int64()), ("file_count", pa.int64()), ("last_update_time", _TIMESTAMP_MILLIS),
])


@dataclass
class _Totals:
    """What the live files of a partition (or one of its buckets) add up to."""

    rows: int = 0
    bytes: int = 0
    files: int = 0
    updated: int | None = None  # the latest file creation time, in milliseconds
    total_buckets: int = 0  # as the last manifest entry says (Java's PartitionEntry.merge)


def _added_up(files: list[LiveFile], key: Callable[[LiveFile], Any]) -> dict[Any, _Totals]:
    """The live files' totals by ``key`` (a partition, a partition and bucket), in manifest order."""
    totals: dict[Any, _Totals] = {}
    for f in files:
        t = totals.setdefault(key(f), _Totals())
        t.rows += f.row_count
        t.bytes += f.file_size
        t.files += 1
        if f.creation_millis is not None and (t.updated is None or f.creation_millis > t.updated):
            t.updated = f.creation_millis
        t.total_buckets = f.total_buckets
    return totals


def _partitions(table: PaimonTable) -> pa.Table:
    """Java's ``$partitions``: one row per partition of the latest snapshot, sorted by its text;
    ``total_buckets`` as the last manifest entry of the partition says, ``deleted_record_count``
    the cardinalities of its deletion vectors (0 without; NULL when a vector's is unknown)."""
    keys = list(table.partition_keys or [])
    types = _partition_types(table, keys)
    options = table_options(table)
    snapshot = latest_snapshot(table)
    totals = _added_up(live_files(table, snapshot), lambda f: f.partition)
    deleted: dict[tuple[Any, ...], int | None] = {}
    if parse_bool(options.get(DV_ENABLED, "false"), DV_ENABLED):
        for entry in index_entries(table, snapshot, DELETION_VECTORS):
            values = tuple(entry.partition.values or ())
            known, ranges = deleted.get(values, 0), entry.index_file.dv_ranges
            if known is None or not ranges:
                continue  # unknown already, or nothing to add
            cardinalities = [m.cardinality for m in ranges.values()]
            deleted[values] = (None if any(c is None for c in cardinalities)
                               else known + sum(int(c) for c in cardinalities))
    null_text = options.get(PARTITION_DEFAULT_NAME, DEFAULT_PARTITION_NAME)
    rows: list[list[Any]] = sorted(
        ([_partition_path(keys, values, types, null_text), t.rows, t.bytes, t.files, t.updated,
          None, None, None, None, t.total_buckets, False, deleted.get(values, 0)]
         for values, t in totals.items()), key=lambda r: r[0])
    return _arrow_rows(rows, PARTITIONS_SCHEMA)


def _buckets(table: PaimonTable) -> pa.Table:
    """Java's ``$buckets``: one row per (partition, bucket) of the latest snapshot, sorted by the
    partition's text, then the bucket."""
    keys = list(table.partition_keys or [])
    types = _partition_types(table, keys)
    totals = _added_up(live_files(table, latest_snapshot(table)), lambda f: (f.partition, f.bucket))
    rows = sorted(([_partition_row(values, types), bucket, t.rows, t.bytes, t.files, t.updated]
                   for (values, bucket), t in totals.items()), key=lambda r: (r[0], r[1]))
    return _arrow_rows(rows, BUCKETS_SCHEMA)


_DV_RANGES = pa.list_(pa.struct([
    pa.field("f0", pa.string(), nullable=False), pa.field("f1", pa.int32(), nullable=False),
    pa.field("f2", pa.int32(), nullable=False), pa.field("_CARDINALITY", pa.int64()),
]))
TABLE_INDEXES_SCHEMA = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("index_type", pa.string()),
    ("file_name", pa.string()), ("file_size", pa.int64()), ("row_count", pa.int64()),
    ("dv_ranges", _DV_RANGES),
    ("row_range_start", pa.int64()), ("row_range_end", pa.int64()), ("index_field_id", pa.int32()),
    ("index_field_name", pa.string()),
])


def _table_indexes(table: PaimonTable) -> pa.Table:
    """Java's ``$table_indexes``: one row per index file of the latest snapshot (deletion vectors,
    the dynamic-bucket hash index, global indexes), in index-manifest order; a deletion-vector
    file's ranges as (data file, offset, length, cardinality)."""
    keys = list(table.partition_keys or [])
    types = _partition_types(table, keys)
    field_names = {f.id: f.name for f in table.table_schema.fields}
    rows: list[list[Any]] = []
    for entry in index_entries(table, latest_snapshot(table)):
        meta, scope = entry.index_file, entry.index_file.global_index_meta
        ranges = None if not meta.dv_ranges else [
            {"f0": m.data_file_name, "f1": int(m.offset), "f2": int(m.length),
             "_CARDINALITY": None if m.cardinality is None else int(m.cardinality)}
            for m in meta.dv_ranges.values()]
        indexed = None
        if scope is not None:
            ids = [scope.index_field_id, *(scope.extra_field_ids or [])]
            if all(i in field_names for i in ids):
                indexed = ",".join(field_names[i] for i in ids)
        partition = _partition_row(tuple(entry.partition.values or ()), types)
        rows.append([partition, int(entry.bucket), meta.index_type, meta.file_name, int(meta.file_size),
                     int(meta.row_count), ranges,
                     None if scope is None else int(scope.row_range_start),
                     None if scope is None else int(scope.row_range_end),
                     None if scope is None else int(scope.index_field_id), indexed])
    return _arrow_rows(rows, TABLE_INDEXES_SCHEMA)


def _arrow_rows(rows: list[list[Any]], schema: pa.Schema) -> pa.Table:
    """``rows`` (lists in ``schema``'s column order) as an Arrow table of ``schema``."""
    return pa.table([pa.array([r[i] for r in rows], f.type) for i, f in enumerate(schema)], schema=schema)


def system_table(table: PaimonTable, name: str) -> pa.Table:
    """System table ``name`` (one of :data:`SYSTEM_TABLES`) of the pypaimon table, as Arrow.

    Built by pypaimon's own system tables (``pypaimon.table.system``), with ``$files`` spelt as
    Java's ``FilesTable`` prints it (:func:`_files`); ``file_indexes`` is :func:`file_indexes`.
    """
    from paimon_index.table.paimon import system_table_loader

    if name == "file_indexes":
        return file_indexes(table)
    if name == "partitions":
        return _partitions(table)
    if name == "buckets":
        return _buckets(table)
    if name == "table_indexes":
        return _table_indexes(table)
    system = system_table_loader.load(name, table)
    if system is None or name not in SYSTEM_TABLES:
        from paimon_index.errors import TableError

        raise TableError(f"system table {name!r} is not supported; known: {', '.join(SYSTEM_TABLES)}")
    builder = system.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    if name == "files":
        rows = _files(table, rows)
    return rows
