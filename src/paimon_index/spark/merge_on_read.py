"""Primary-key tables without deletion vectors (merge-on-read) in Spark: reads and changes.

    merged_frame(spark, warehouse, table, catalog_options, snapshot_id) -> (DataFrame, snapshot id)
    spark_schema(paimon_table) -> StructType            the columns as the paimon_index source types them
    write_frame(spark, rows, paimon_table, table, planned, operation) -> (snapshot id, rows)

Such a table's rows need a merge by key across its files (the newest sequence number wins, a
``-D``/``-U`` removes the key): the read is the ``paimon_index`` source on one pinned snapshot,
each task merging one (partition, bucket) with pypaimon's merge (:meth:`paimon_index.Table.read`'s);
no index prunes it (Paimon's indexes cannot answer a merged row either). A change (the rows of a
DELETE, UPDATE, MERGE INTO or upsert, with their ``_ROW_KIND``) is collected on the driver and
written by :func:`paimon_index.table.pk.merge_on_read.write_changes` as level-0 key-value rows in
one APPEND snapshot, exactly on the snapshot the rows were read from — as Paimon's own connector
writes them. The change is written on the driver, not distributed (a deletion-vectors table's is,
see :mod:`paimon_index.spark.jobs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

__all__ = ["is_merge_on_read", "merged_frame", "spark_schema", "write_frame"]


def is_merge_on_read(paimon_table: Any) -> bool:
    """A primary-key table without deletion vectors."""
    from paimon_index.table.pk import dv_mode

    return bool(paimon_table.is_primary_key_table) and not dv_mode(paimon_table)


def spark_schema(paimon_table: Any) -> Any:
    """The table's columns as Spark types, every field nullable (as the ``paimon_index`` source)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from paimon_index.spark.datasource import nullable_type
    from paimon_index.table.paimon import arrow_schema

    return nullable_type(from_arrow_schema(arrow_schema(paimon_table.table_schema.fields)))


def merged_frame(spark: SparkSession, warehouse: str, table: str, catalog_options: Mapping[str, str] | None,
                 snapshot_id: int | None = None) -> tuple[DataFrame, int | None]:
    """The merged rows of ``table`` at ``snapshot_id`` (default: the latest, pinned here) as a
    DataFrame, and the snapshot they are of (None: the table is empty). Read by the ``paimon_index``
    source: one task per (partition, bucket) merges its rows by key."""
    from paimon_index.spark.planned import source_read
    from paimon_index.table.api import open_table

    opened = open_table(warehouse, table, catalog_options=catalog_options)
    pinned = opened.snapshot_id if snapshot_id is None else snapshot_id
    if pinned is None:
        return spark.createDataFrame([], spark_schema(opened.paimon_table)), None
    return source_read(spark, table, pinned, warehouse, catalog_options), pinned


def write_frame(rows: DataFrame, paimon_table: Any, planned: int | object | None, operation: str
                ) -> tuple[int | None, int]:
    """Write ``rows`` (the table's columns, ``_ROW_KIND`` optional) as level-0 key-value rows in
    one snapshot exactly on ``planned`` (:data:`~paimon_index.table.pk.merge_on_read.LATEST`: the
    latest one): the new snapshot id (None: nothing to write) and the number of rows."""
    from paimon_index.table.pk.merge_on_read import check_changes, write_changes

    # Before any job runs (a DELETE deletes; other statements are checked on their rows' kinds).
    check_changes(paimon_table, operation, deleting=operation == "delete")
    arrow = rows.toArrow()
    if arrow.num_rows == 0:
        return None, 0
    kind = "+U" if operation == "update" else "+I"
    snapshot = write_changes(paimon_table, arrow, planned=planned, kind=kind, operation=operation)
    return snapshot, arrow.num_rows
