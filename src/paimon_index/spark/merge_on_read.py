"""Primary-key tables without deletion vectors (merge-on-read) in Spark: reads and changes.

    merged_frame(spark, warehouse, table, catalog_options, snapshot_id) -> (DataFrame, snapshot id, rows)
    spark_schema(paimon_table) -> StructType            the columns as the paimon_index source types them
    write_frame(rows, paimon_table, planned, operation, ...) -> (snapshot id, rows)   in Spark tasks

Such a table's rows need a merge by key across its files (the newest sequence number wins, a
``-D``/``-U`` removes the key): the read is the ``paimon_index`` source on one pinned snapshot,
each task merging one (partition, bucket) with pypaimon's merge (:meth:`paimon_index.Table.read`'s);
no index prunes it (Paimon's indexes cannot answer a merged row either). A change (the rows of a
DELETE, UPDATE, MERGE INTO or upsert, with their ``_ROW_KIND``) is written by Spark tasks, each
holding whole buckets, as level-0 key-value rows
(:func:`paimon_index.table.pk.merge_on_read.prepare_changes`), and committed by the driver in one
APPEND snapshot exactly on the snapshot the rows were read from
(:func:`~paimon_index.table.pk.merge_on_read.commit_changes`) — as Paimon's own connector writes
them. A small DELETE/UPDATE is written on the driver instead
(:data:`paimon_index.spark.jobs.SMALL_CHANGE_ROWS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession

from paimon_index.errors import UnsupportedTableError
from paimon_index.table.pk.plan import ROW_KIND_COLUMN

if TYPE_CHECKING:
    from paimon_index.table.api import Table

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
                 snapshot_id: int | None = None, where: str | None = None,
                 opened: Table | None = None
                 ) -> tuple[DataFrame, int | None, int]:
    """The merged rows of ``table`` at ``snapshot_id`` (default: the latest, pinned here) as a
    DataFrame, the snapshot they are of (None: the table is empty), and how many rows its plan
    proves match ``where`` (its indexes answered exactly; 0: unknown). ``where`` (Spark SQL, a
    condition every row the caller takes meets) prunes the read and filters it; ``opened``: the
    table already open. Merge-on-read and deletion-vectors tables alike.

    Planned like any read (each key's older versions subtracted, :mod:`paimon_index.table.pk.versions`:
    indexes and Spark's Parquet reader, or the driver for a few rows); what the plan cannot subtract
    (another merge engine, tied sequence numbers) the ``paimon_index`` source reads, one task per
    (partition, bucket) merging its rows by key."""
    from paimon_index.spark.planned import proven_rows, read_planned, source_read
    from paimon_index.table.api import open_table

    opened = opened or open_table(warehouse, table, catalog_options=catalog_options)
    pinned = opened.snapshot_id if snapshot_id is None else snapshot_id
    if pinned is None:
        return spark.createDataFrame([], spark_schema(opened.paimon_table)), None, 0
    try:
        # Today's columns (a change's read): the snapshot may predate a schema change.
        # Every column is read (a change writes whole rows): the driver may read a selective plan.
        planned = read_planned(spark, table, where, warehouse=warehouse, change_of=pinned,
                               catalog_options=catalog_options, opened=opened,
                               reads=[f.name for f in opened.paimon_table.table_schema.fields])
        if planned.fallback is None:
            proven = proven_rows(planned.plan) if where is not None else None
            return planned.dataframe, pinned, proven or 0
    except UnsupportedTableError:
        pass  # rows the plan cannot tell apart by version: merged by key
    merged = source_read(spark, table, pinned, warehouse, catalog_options, current_schema=True)
    return (merged if where is None else merged.filter(where)), pinned, 0


def write_frame(rows: DataFrame, paimon_table: Any, planned: int | object | None, operation: str, *,
                warehouse: str, table: str, catalog_options: Mapping[str, str] | None,
                partitions: int, small_rows: int = 0, rows_at_least: int = 0) -> tuple[int | None, int]:
    """Write ``rows`` (the table's columns, ``_ROW_KIND`` optional) as level-0 key-value rows in
    one snapshot exactly on ``planned`` (:data:`~paimon_index.table.pk.merge_on_read.LATEST`: the
    latest one): the new snapshot id (None: nothing to write) and the number of rows.

    Shuffled by Paimon's bucket (and partition) into ``partitions`` tasks, each writing whole
    buckets (pypaimon's writer numbers a bucket's rows from its newest sequence number); a
    dynamic-bucket table's rows in one task (its HASH index assigns new keys to buckets). The
    driver commits the tasks' messages. A DELETE/UPDATE of at most ``small_rows`` rows is written
    on the driver instead: rows the driver read itself (a local relation) are taken as they are;
    others are fetched with a LIMIT one row past ``small_rows``, unless ``rows_at_least`` (what the
    plan of the rows proved) says there are more -- then the tasks read them once."""
    from paimon_index.table.pk.merge import change_kind
    from paimon_index.table.pk.merge_on_read import write_changes

    kind = change_kind(operation)
    if operation in ("delete", "update") and small_rows > 0 and rows_at_least <= small_rows:
        # Not persisted and counted: at 20M rows a 5% UPDATE spent 3.2 s of its 6.1 s
        # materializing the rows its write then read back; the LIMIT stops once it has enough.
        head = rows.toArrow() if rows.isLocal() else rows.limit(small_rows + 1).toArrow()
        if head.num_rows <= small_rows:
            snapshot = write_changes(paimon_table, head, planned=planned, kind=kind, operation=operation) \
                if head.num_rows else None
            return (None, 0) if snapshot is None else (snapshot, head.num_rows)
    return _write_by_tasks(rows, paimon_table, planned, operation, kind, warehouse=warehouse, table=table,
                           catalog_options=catalog_options, partitions=partitions)


def _write_by_tasks(rows: DataFrame, paimon_table: Any, planned: int | object | None, operation: str,
                    kind: str, *, warehouse: str, table: str, catalog_options: Mapping[str, str] | None,
                    partitions: int) -> tuple[int | None, int]:
    """:func:`write_frame`'s Spark job: the rows shuffled to bucket-owning tasks, which write them."""
    from paimon_index.spark import _tasks
    from paimon_index.table.pk.merge_on_read import check_changes, commit_changes

    # Refusals before any job writes: a DELETE deletes; a MERGE or upsert deletes when a row says so.
    try:
        check_changes(paimon_table, operation, deleting=True)
    except UnsupportedTableError:
        if operation == "delete" or (ROW_KIND_COLUMN in rows.columns and _deletes(rows)):
            raise
        check_changes(paimon_table, operation, deleting=False)
    rows = _tasks.bucket_owned(rows, paimon_table, warehouse, table, catalog_options, partitions)
    messages, written = _tasks.collect(_tasks.change_job(rows, warehouse, table, catalog_options,
                                                         kind=kind, operation=operation),
                                       f"{operation} of {table}")
    return commit_changes(paimon_table, messages, planned=planned, operation=operation), written


def _deletes(rows: DataFrame) -> bool:
    from pyspark.sql import functions as F

    return bool(rows.filter(F.col(ROW_KIND_COLUMN).isin("-D", "-U")).limit(1).count())


