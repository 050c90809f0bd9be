"""DDL and catalog statements over Paimon tables: CREATE/DROP/ALTER TABLE, databases, SHOW, DESCRIBE, USE."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from paimon_index.errors import SqlError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.sql.names import Catalog


__all__ = ["command", "run"]


def run(catalog: Catalog, statement: exp.Expr, text: str) -> DataFrame:
    """A parsed DDL statement (``CREATE``, ``DROP``, ``ALTER``, ``DESCRIBE``, ``USE``)."""
    from paimon_index.spark.sql.names import names_paimon_table

    if not names_paimon_table(catalog, statement):
        return catalog.spark.sql(text)
    raise SqlError(f"{type(statement).__name__.upper()} on Paimon tables is not supported yet: {text[:200]}")


def command(catalog: Catalog, keyword: str, rest: str, text: str) -> DataFrame:
    """A statement sqlglot keeps as raw text (``SHOW ...``, ``ALTER TABLE ... UNSET``)."""
    del keyword, rest
    return catalog.spark.sql(text)
