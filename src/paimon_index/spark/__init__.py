"""PySpark integration.

    import paimon_index.spark
    paimon = paimon_index.spark.attach(spark, warehouse=W)   # the noun: SQL, tables, listings
    paimon.sql("SELECT ... FROM db.t WHERE ...")

:func:`attach` (:mod:`paimon_index.spark.catalog`) is the entry point; :mod:`paimon_index.spark.jobs`
holds the same verbs as plain functions, :mod:`paimon_index.spark.session` the local session helper,
and the ``paimon_index`` data source is :mod:`paimon_index.spark.datasource`.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paimon_index.spark.catalog import Catalog, SparkTable, attach

__all__ = ["Catalog", "SparkTable", "attach"]


def __getattr__(name: str) -> object:
    # pyspark loads on first use, so `import paimon_index.spark` stays cheap.
    if name in __all__:
        from paimon_index.spark import catalog

        return getattr(catalog, name)
    raise AttributeError(f"module 'paimon_index.spark' has no attribute {name!r}")
