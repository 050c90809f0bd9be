"""Build one data file's index container from its rows (an Arrow table) and the table options.

The row position of a value is its position in the table, exactly as in the data file. Each column
is converted once to canonical keys (:func:`paimon_index.types.canonical_column`) and handed whole
to every index writer configured for it; nothing loops over rows in Python.

Order of the container: Paimon's ``DataFileIndexWriter`` keeps its writers in
``HashMap<type, HashMap<column, writer>>`` (types added with ``computeIfAbsent``, columns with
``put``) and serializes them by walking that map into ``HashMap<column, HashMap<type, bytes>>``
(columns with ``computeIfAbsent``, types with ``put``); the container is written in the iteration
order of the latter. We replay the same calls through :func:`java_map_order`. (Inside one hash
bucket Java's order also depends on the order of the table's whole option map, which we do not
see; such a difference moves bytes around in the head only, never changes an answer.)
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from paimon_index.errors import InvalidOptionError
from paimon_index.fileindex.format import java_map_order, write_container
from paimon_index.fileindex.options import FileIndexOptions
from paimon_index.fileindex.registry import get_index_type
from paimon_index.types import CanonicalColumn, DataType, canonical_column, from_arrow

__all__ = ["build_file_index", "build_index_bodies", "container_order"]


def _options(options: FileIndexOptions | Mapping[str, str]) -> FileIndexOptions:
    return options if isinstance(options, FileIndexOptions) else FileIndexOptions.from_table_options(options)


def container_order(options: FileIndexOptions | Mapping[str, str]) -> dict[str, list[str]]:
    """``{column: [index types]}`` in the order Paimon's writer lays the container out."""
    by_type: dict[str, list[str]] = {}
    for spec in _options(options).specs:
        by_type.setdefault(spec.index_type, []).append(spec.column)
    column_calls: list[str] = []  # computeIfAbsent(column) calls while serializing the writers
    pairs: list[tuple[str, str]] = []
    for index_type in java_map_order(list(by_type), compute=True):
        for column in java_map_order(by_type[index_type]):
            column_calls.append(column)
            pairs.append((column, index_type))
    return {column: java_map_order([t for c, t in pairs if c == column])
            for column in java_map_order(column_calls, compute=True)}


def build_index_bodies(data: pa.Table | pa.RecordBatch, options: FileIndexOptions | Mapping[str, str],
                       schema: Mapping[str, DataType] | None = None) -> dict[str, dict[str, bytes]]:
    """``{column: {index type: body}}`` in the order Paimon's writer lays them out.

    Args:
        data: the data file's rows.
        options: parsed options or the table's raw option map.
        schema: Paimon types of the columns (default: mapped from the Arrow types).

    Raises:
        InvalidOptionError: an index names a column the data does not have.
        UnsupportedTypeError: an index type cannot index its column's type.
    """
    opts = _options(options)
    spec_options = {(spec.column, spec.index_type): dict(spec.options) for spec in opts.specs}
    canonical: dict[str, CanonicalColumn] = {}
    bodies: dict[str, dict[str, bytes]] = {}
    for column, index_types in container_order(opts).items():
        if column not in data.schema.names:
            raise InvalidOptionError(
                f"file-index.{index_types[0]}.columns: column {column!r} does not exist "
                f"(columns: {', '.join(data.schema.names)})")
        if column not in canonical:
            field = data.schema.field(column)
            dtype = (schema or {}).get(column) or from_arrow(field.type, field.nullable)
            canonical[column] = canonical_column(data.column(column), dtype)
        col = canonical[column]
        bodies[column] = {
            t: get_index_type(t).create_writer(col.dtype, spec_options[(column, t)], column).build(col)
            for t in index_types}
    return bodies


def build_file_index(data: pa.Table | pa.RecordBatch, options: FileIndexOptions | Mapping[str, str],
                     schema: Mapping[str, DataType] | None = None) -> bytes | None:
    """The container bytes for one data file, or ``None`` when no index is configured."""
    bodies = build_index_bodies(data, options, schema)
    if not bodies:
        return None
    return write_container(bodies)
