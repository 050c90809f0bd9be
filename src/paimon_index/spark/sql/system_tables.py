"""Paimon's system tables (``db.`t$snapshots` ``, ``$files``, ...) as DataFrames."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paimon_index.errors import SqlError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.sql.names import Catalog, TableName


__all__ = ["frame"]


def frame(catalog: Catalog, name: TableName) -> DataFrame:
    """The system table ``name.system`` of ``name``."""
    del catalog
    raise SqlError(f"system table {name} is not supported yet")
