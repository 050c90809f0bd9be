"""DML over Paimon tables: INSERT INTO/OVERWRITE, DELETE, UPDATE, MERGE INTO, TRUNCATE TABLE."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from paimon_index.errors import SqlError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.sql.names import Catalog


__all__ = ["run"]


def run(catalog: Catalog, statement: exp.Expr) -> DataFrame:
    """Run a DML statement on its Paimon target; an empty DataFrame, as Spark returns."""
    del catalog
    raise SqlError(f"{type(statement).__name__.upper()} on Paimon tables is not supported yet")
