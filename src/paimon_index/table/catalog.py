"""Create, open and alter Paimon tables from Python (pypaimon's filesystem catalog underneath).

    create_table(warehouse, "db.orders", schema, partition_keys=["dt"], options={...})
    open_table(warehouse, "db.orders")
    alter_table_options(warehouse, "db.orders", set_options={"file-index.bloom-filter.columns": "id"},
                        remove=["file-index.bitmap.columns"])

``schema`` is an Arrow schema, a Spark ``StructType`` or a Spark DDL string (``"id BIGINT, name
STRING"``, converted with the running Spark session's parser). Options are Paimon's own spellings
(``bucket``, ``deletion-vectors.enabled``, ``deletion-vectors.bitmap64``, ``file-index.*`` ...);
every ``file-index.*`` option is validated here (:class:`~paimon_index.fileindex.options.FileIndexOptions`)
so a misspelt index type or size fails at ``CREATE``/``ALTER`` time rather than at the first write.
An ``ALTER`` of index options changes what *new* files get; existing files keep their indexes until
``rewrite_file_index`` rebuilds them (as in Paimon).

pypaimon internals used: ``CatalogFactory.create({"warehouse": ...})``, ``Schema.from_pyarrow_schema``,
``catalog.create_database/create_table/get_table/alter_table``, ``SchemaChange.set_option/remove_option``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from paimon_index.errors import InvalidOptionError, PaimonIndexError
from paimon_index.fileindex.options import FileIndexOptions

__all__ = ["alter_table_options", "arrow_schema", "catalog", "create_table", "open_table"]

WAREHOUSE = "warehouse"
FILE_INDEX_PREFIX = "file-index."


def catalog(warehouse: str) -> Any:
    """pypaimon's filesystem catalog over ``warehouse`` (a local path or URI)."""
    from pypaimon import CatalogFactory

    return CatalogFactory.create({WAREHOUSE: str(warehouse)})


def open_table(warehouse: str, identifier: str) -> Any:
    """The pypaimon table ``db.table`` of ``warehouse``."""
    return catalog(warehouse).get_table(identifier)


def arrow_schema(schema: pa.Schema | Any) -> pa.Schema:
    """An Arrow schema from an Arrow schema, a Spark ``StructType`` or a Spark DDL string."""
    if isinstance(schema, pa.Schema):
        return schema
    try:
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StructType
    except ImportError as e:
        raise PaimonIndexError(f"schema {schema!r} is not an Arrow schema (pyspark is not installed)") from e
    if isinstance(schema, str):
        schema = StructType.fromDDL(schema)
    if not isinstance(schema, StructType):
        raise PaimonIndexError(f"expected an Arrow schema, a Spark StructType or a DDL string, "
                               f"got {type(schema).__name__}")
    converted = to_arrow_schema(schema)
    # Spark's timestamps are microseconds; Paimon stores TIMESTAMP(6) as such.
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in converted])


def _check_options(options: Mapping[str, str]) -> dict[str, str]:
    plain = {str(k): str(v) for k, v in options.items()}
    FileIndexOptions.from_table_options(plain)  # raises InvalidOptionError naming the option
    return plain


def create_table(warehouse: str, identifier: str, schema: pa.Schema | Any, *,
                 partition_keys: Iterable[str] = (), primary_keys: Iterable[str] = (),
                 options: Mapping[str, str] | None = None, exist_ok: bool = False) -> Any:
    """Create ``db.table`` (and its database) and return the pypaimon table."""
    from pypaimon import Schema

    if "." not in identifier:
        raise InvalidOptionError(f"table identifier {identifier!r} must be 'database.table'")
    plain = _check_options(options or {})
    cat = catalog(warehouse)
    cat.create_database(identifier.split(".", 1)[0], True)
    paimon_schema = Schema.from_pyarrow_schema(arrow_schema(schema), partition_keys=list(partition_keys),
                                               primary_keys=list(primary_keys) or None, options=plain)
    cat.create_table(identifier, paimon_schema, exist_ok)
    return cat.get_table(identifier)


def alter_table_options(warehouse: str, identifier: str, *, set_options: Mapping[str, str] | None = None,
                        remove: Iterable[str] = ()) -> Any:
    """``ALTER TABLE ... SET/RESET TBLPROPERTIES``: change options, return the re-opened table."""
    from pypaimon.schema.schema_change import SchemaChange

    cat = catalog(warehouse)
    current = dict(cat.get_table(identifier).options.options.to_map())
    updates = {str(k): str(v) for k, v in (set_options or {}).items()}
    removed = list(remove)
    merged = {k: v for k, v in {**current, **updates}.items() if k not in removed}
    _check_options(merged)
    changes = [SchemaChange.set_option(k, v) for k, v in updates.items()]
    changes += [SchemaChange.remove_option(k) for k in removed]
    if changes:
        cat.alter_table(identifier, changes)
    return cat.get_table(identifier)
