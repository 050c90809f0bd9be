"""``CALL sys.<procedure>(name => value, ...)``: Paimon's Spark procedures on Paimon tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paimon_index.errors import SqlError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.sql.names import Catalog


__all__ = ["call"]


def call(catalog: Catalog, text: str) -> DataFrame:
    """Run ``CALL <text>``."""
    del catalog
    raise SqlError(f"CALL {text[:200]} is not supported yet")
