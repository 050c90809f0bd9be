"""Paimon's system tables (``db.`t$snapshots` ``, ``$files``, ...) as DataFrames.

``snapshots``, ``files``, ``options``, ``schemas``, ``manifests``, ``tags`` have the columns of
Paimon's Java system tables (built by pypaimon's system tables, ``$files`` spelt as Java prints it:
:func:`paimon_index.table.system.system_table`); ``file_indexes`` is paimon-index's
:func:`paimon_index.table.system.file_indexes`. Each is read when the statement runs (the rows of
that moment), then handed to Spark; their time columns are ``TIMESTAMP_NTZ``, as Java's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paimon_index.errors import SqlError
from paimon_index.table import catalog as _catalog
from paimon_index.table.system import DATA_SYSTEM_TABLES, SYSTEM_TABLES, system_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.sql.names import Catalog, TableName


__all__ = ["frame"]


def frame(catalog: Catalog, name: TableName) -> DataFrame:
    """The system table ``name.system`` of ``name``."""
    if name.system not in SYSTEM_TABLES:
        raise SqlError(f"system table {name} is not supported; known: "
                       + ", ".join(f"{name.identifier}${s}" for s in (*SYSTEM_TABLES, *DATA_SYSTEM_TABLES)))
    if not catalog.has_table(name.identifier):
        raise catalog.not_found(name.identifier)
    from pyspark.sql.pandas.types import from_arrow_schema

    table = _catalog.open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    rows = system_table(table, name.system)
    # Java's time columns (commit_time, creation_time, ...) are TIMESTAMP without time zone: the
    # local time of each moment, which the Arrow rows hold; Spark took them as TIMESTAMP (LTZ).
    schema = from_arrow_schema(rows.schema, prefer_timestamp_ntz=True)
    return catalog.spark.createDataFrame(rows, schema=schema)
