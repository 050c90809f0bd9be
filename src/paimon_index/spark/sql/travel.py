"""Time travel: ``VERSION AS OF <snapshot id | 'tag'>`` and ``TIMESTAMP AS OF '<time>'``, as Paimon's
Spark connector reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from paimon_index.errors import SqlError

if TYPE_CHECKING:
    from paimon_index.spark.sql.names import Catalog, TableName

__all__ = ["snapshot_id"]


def snapshot_id(catalog: Catalog, name: TableName, version: exp.Expr) -> int:
    """The snapshot a time-travel clause of ``name`` asks for."""
    del catalog
    kind = str(version.this).upper()
    value = version.args.get("expression")
    if kind == "VERSION" and isinstance(value, exp.Literal) and not value.is_string:
        return int(value.this)
    if kind == "VERSION" and isinstance(value, exp.Literal) and value.this.isdigit():
        return int(value.this)
    raise SqlError(f"time travel {version.sql(dialect='spark')} on {name} is not supported yet")
