"""The Table API's verbs as Spark jobs: same names, same result types.

    from paimon_index.spark import jobs
    jobs.read(spark, "db.t", where=None, columns=None, warehouse=W)          -> DataFrame (planned read)
    jobs.read_planned(spark, "db.t", where=None, warehouse=W)                -> PlannedRead (+ its plan)
    jobs.write(df, "db.t", mode="append" | "overwrite", warehouse=W)        -> CommitResult
    jobs.upsert(spark, df, "db.t", warehouse=W)                              -> CommitResult
    jobs.delete(spark, "db.t", "status = 'CANCELLED'", warehouse=W)          -> CommitResult
    jobs.update(spark, "db.t", {"score": "score + 1", "note": None}, "id < 100", warehouse=W)
    jobs.rewrite_file_index(spark, "db.t", where=None, warehouse=W)          -> CommitResult
    jobs.compact(spark, "db.t", full=False, warehouse=W)                     -> CommitResult  (driver)
    jobs.expire_snapshots(spark, "db.t", retain_last=N, warehouse=W)         -> MaintenanceResult (driver)
    jobs.remove_orphan_files(spark, "db.t", older_than=T, warehouse=W)       -> MaintenanceResult (driver)
    jobs.count(spark, "db.t", "status = 'PAID'", warehouse=W)                -> int (driver + tasks)

Each verb commits at most **one** snapshot, as its :class:`paimon_index.Table` namesake does, and
returns :class:`paimon_index.CommitResult` (``operation``, ``snapshot_id`` -- None when nothing
changed --, ``rows_affected``, ``files_added``/``files_removed`` of that snapshot's delta) or
:class:`paimon_index.MaintenanceResult`. ``catalog_options`` (``fs.*``, pypaimon's spelling) reach
the driver's catalog, the ``paimon_index`` source and every task.

Where the work runs:

- ``read`` / ``read_planned`` plan on the driver with the indexes and let Spark's own Parquet reader
  read the surviving files (:mod:`paimon_index.spark.planned`);
- ``write`` goes through the ``paimon_index`` source (executors write files and indexes, the driver
  commits them together); ``upsert``, ``delete``, ``update`` and ``rewrite_file_index`` are the jobs
  of :mod:`paimon_index.spark.primary_key` and :mod:`paimon_index.spark.row_level`. On a
  primary-key table ``delete``/``update`` read the matching rows through the source and upsert
  their keys (``-D`` rows, or the new values), as :meth:`Table.delete`/:meth:`Table.update` do;
- ``count`` answers on the **driver** every file its indexes answer exactly (row counts, deletion
  vectors, index bitmaps: :mod:`paimon_index.table.aggregate`); the other files, if any, are
  counted by Spark tasks, each reading only the predicate's columns of its files' candidate rows;
- ``compact``, ``expire_snapshots`` and ``remove_orphan_files`` run on the **driver** through the
  Python API (their work is metadata plus a few files per bucket); the session is taken so that
  every verb has the same shape.

``rows_affected``: rows written (``write``, ``upsert``: rows of the DataFrame, counted as the job
runs them, so it is scanned once), deleted or updated; 0 for ``compact`` and index rewrites. SET
values of ``update`` are Spark SQL expression text when strings (``"'PAID'"`` is a string literal),
constants otherwise -- the Python API's rule, with Spark evaluating the expressions.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from paimon_index.errors import InvalidOptionError
from paimon_index.spark import primary_key as spark_pk
from paimon_index.spark import row_level as spark_row_level
from paimon_index.spark.datasource import SOURCE_NAME, WAREHOUSE
from paimon_index.spark.planned import PlannedRead, read, read_planned
from paimon_index.table.aggregate import AggregateReport
from paimon_index.table.api import APPEND, OVERWRITE, CommitResult, MaintenanceResult, open_table
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import FilePlan, missing_files_named
from paimon_index.table.paimon import delta_file_counts, latest_snapshot

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["PlannedRead", "compact", "count", "delete", "expire_snapshots", "read", "read_planned",
           "remove_orphan_files", "rewrite_file_index", "update", "upsert", "write"]

CatalogOptions = Mapping[str, str] | None
#: ``count``: data files per Spark task when files must be read (a file's read is one task's work
#: at most; a few per task keep the task overhead small next to it).
COUNT_FILES_PER_TASK = 4
#: Paimon's row-kind column and the kind that deletes a key (see table/pk).
ROW_KIND_COLUMN, DELETE_KIND = "_ROW_KIND", "-D"


def _result(warehouse: str, table: str, catalog_options: CatalogOptions, operation: str,
            snapshot_id: int | None, rows: int) -> CommitResult:
    """The verb's result: the data files its snapshot added and removed, read from the snapshot."""
    if snapshot_id is None:
        return CommitResult(operation, None, 0)
    opened = open_table(warehouse, table, catalog_options=catalog_options).paimon_table
    added, removed = delta_file_counts(opened, snapshot_id)
    return CommitResult(operation, snapshot_id, rows, added, removed)


def _latest(warehouse: str, table: str, catalog_options: CatalogOptions) -> int | None:
    snapshot = latest_snapshot(open_table(warehouse, table, catalog_options=catalog_options).paimon_table)
    return None if snapshot is None else int(snapshot.id)


def write(df: DataFrame, table: str, mode: str = APPEND, *, warehouse: str,
          catalog_options: CatalogOptions = None) -> CommitResult:
    """Append ``df`` to ``table``, or replace its rows (``mode="overwrite"``), in one snapshot.

    Runs through the ``paimon_index`` source (see its docstring for partitions and overwrite of
    partitioned tables); on a primary-key table an append is an upsert.

    Raises:
        InvalidOptionError: an unknown mode, or an overwrite of a primary-key table.
        ConcurrentChangeError: (overwrite) another commit landed meanwhile; nothing was applied.
    """
    if mode not in (APPEND, OVERWRITE):
        raise InvalidOptionError(f"write mode must be {APPEND!r} or {OVERWRITE!r}, got {mode!r}")
    before = _latest(warehouse, table, catalog_options)
    counted, rows = spark_pk.count_rows(df.sparkSession, df)
    writer = counted.write.format(SOURCE_NAME).options(**dict(catalog_options or {}))
    writer.option(WAREHOUSE, warehouse).mode(mode).save(table)
    after = _latest(warehouse, table, catalog_options)
    snapshot = None if after == before else after
    return _result(warehouse, table, catalog_options, mode, snapshot, int(rows.value))


def upsert(spark: SparkSession, df: DataFrame, table: str, *, warehouse: str,
           catalog_options: CatalogOptions = None, partitions: int | None = None) -> CommitResult:
    """Insert or replace ``df``'s rows by primary key (``_ROW_KIND`` '-D'/'-U' rows delete their key).

    See :func:`paimon_index.spark.primary_key.upsert` (tasks own whole buckets; ``partitions``
    tasks, default Spark's parallelism).

    Raises:
        PrimaryKeyTableError: ``table`` is not a primary-key table in deletion-vectors mode.
        ConcurrentChangeError: another commit landed meanwhile; nothing was applied.
    """
    snapshot, rows = spark_pk.upsert_rows(spark, df, table, warehouse=warehouse, partitions=partitions,
                                          catalog_options=catalog_options)
    return _result(warehouse, table, catalog_options, "upsert", snapshot, rows)


def _pk_change(spark: SparkSession, table: str, where: str, assignments: Mapping[str, Any] | None, *,
               warehouse: str, catalog_options: CatalogOptions) -> CommitResult:
    """DELETE/UPDATE of a primary-key table: read the matching rows, upsert (or delete) their keys."""
    from pyspark.sql import functions as F

    opened = open_table(warehouse, table, catalog_options=catalog_options)
    keys = list(opened.paimon_table.primary_keys)
    columns = opened.schema.names
    if assignments is not None and set(assignments) & set(keys):
        raise InvalidOptionError(f"UPDATE of {table} cannot change primary-key columns {keys}")
    matched = (spark.read.format(SOURCE_NAME).options(**dict(catalog_options or {}))
               .option(WAREHOUSE, warehouse).load(table).filter(where))
    if assignments is None:
        rows = matched.select(*columns, F.lit(DELETE_KIND).alias(ROW_KIND_COLUMN))
    else:
        rows = matched.select(*[spark_row_level.assigned(assignments[c]).cast(matched.schema[c].dataType)
                                .alias(c) if c in assignments else F.col(c) for c in columns])
    operation = "delete" if assignments is None else "update"
    snapshot, count = spark_pk.upsert_rows(spark, rows, table, warehouse=warehouse,
                                           catalog_options=catalog_options)
    return _result(warehouse, table, catalog_options, operation, snapshot, count)


def delete(spark: SparkSession, table: str, where: str, *, warehouse: str,
           catalog_options: CatalogOptions = None) -> CommitResult:
    """``DELETE FROM table WHERE where`` (Spark SQL condition) in one snapshot.

    Append tables: deletion vectors (:func:`paimon_index.spark.row_level.delete`), exactly on the
    snapshot read. Primary-key tables: the matching keys are upserted as deletes.

    Raises:
        InvalidOptionError: an append table without ``deletion-vectors.enabled``.
        ConcurrentChangeError: another commit landed after the rows were found; nothing was applied.
    """
    if open_table(warehouse, table, catalog_options=catalog_options).is_primary_key_table:
        return _pk_change(spark, table, where, None, warehouse=warehouse, catalog_options=catalog_options)
    change = spark_row_level.delete_rows(spark, table, where, warehouse=warehouse,
                                         catalog_options=catalog_options)
    return _result(warehouse, table, catalog_options, "delete", change.snapshot_id, change.rows)


def update(spark: SparkSession, table: str, set: Mapping[str, Any], where: str | None = None, *,
           warehouse: str, catalog_options: CatalogOptions = None) -> CommitResult:
    """``UPDATE table SET col = value, ... WHERE where`` in one snapshot (``where`` None: every row).

    Raises:
        InvalidOptionError: an unknown column, a primary-key column, or (append table) no
            deletion vectors.
        ConcurrentChangeError: another commit landed after the rows were found; nothing was applied.
    """
    opened = open_table(warehouse, table, catalog_options=catalog_options)
    lower = {name.lower(): name for name in opened.schema.names}
    unknown = [c for c in set if str(c).lower() not in lower]
    if unknown:
        raise InvalidOptionError(f"UPDATE of {table} sets unknown columns {unknown} "
                                 f"(columns: {opened.schema.names})")
    assignments = {lower[str(c).lower()]: value for c, value in set.items()}
    condition = "true" if where is None else where
    if opened.is_primary_key_table:
        return _pk_change(spark, table, condition, assignments, warehouse=warehouse,
                          catalog_options=catalog_options)
    change = spark_row_level.update_rows(spark, table, assignments, condition, warehouse=warehouse,
                                         catalog_options=catalog_options)
    return _result(warehouse, table, catalog_options, "update", change.snapshot_id, change.rows)


def rewrite_file_index(spark: SparkSession, table: str, where: str | None = None, *, warehouse: str,
                       catalog_options: CatalogOptions = None, progress: bool = False) -> CommitResult:
    """Rebuild the file indexes the table's ``file-index.*`` options ask for, as one Spark job
    (tasks balanced by file bytes; ``where``: partitions), committed as one snapshot; ``progress``
    prints a bar on stderr."""
    snapshot = spark_row_level.rewrite_file_index(spark, table, where, warehouse=warehouse, progress=progress,
                                                  catalog_options=catalog_options)
    return _result(warehouse, table, catalog_options, "rewrite_file_index", snapshot, 0)


def compact(spark: SparkSession, table: str, *, full: bool = False, warehouse: str,
            catalog_options: CatalogOptions = None) -> CommitResult:
    """Compact a primary-key table (``full``: everything into the highest level), one snapshot.

    Runs on the driver through :meth:`paimon_index.Table.compact` (no Spark tasks).

    Raises:
        TableError: an append table.
    """
    del spark
    return open_table(warehouse, table, catalog_options=catalog_options).compact(full=full)


def expire_snapshots(spark: SparkSession, table: str, *, retain_last: int | None = None,
                     older_than: datetime | float | None = None, warehouse: str,
                     catalog_options: CatalogOptions = None) -> MaintenanceResult:
    """Expire old snapshots and delete the files only they used.

    Runs on the driver through :meth:`paimon_index.Table.expire_snapshots` (no Spark tasks).
    """
    del spark
    opened = open_table(warehouse, table, catalog_options=catalog_options)
    return opened.expire_snapshots(retain_last=retain_last, older_than=older_than)


def remove_orphan_files(spark: SparkSession, table: str, *, older_than: datetime | float, warehouse: str,
                        catalog_options: CatalogOptions = None) -> MaintenanceResult:
    """Delete files no snapshot references that are older than ``older_than``.

    Runs on the driver through :meth:`paimon_index.Table.remove_orphan_files` (no Spark tasks).
    """
    del spark
    return open_table(warehouse, table, catalog_options=catalog_options).remove_orphan_files(older_than)


def count(spark: SparkSession, table: str, where: str | None = None, *, warehouse: str,
          catalog_options: CatalogOptions = None, use_index: bool = True,
          report: AggregateReport | None = None) -> int:
    """``SELECT count(*) FROM table WHERE where`` on the latest snapshot (``where``: the
    paimon_index.sql dialect, as :meth:`paimon_index.Table.count` takes it).

    The driver plans the files and answers every one whose row count, deletion vector and indexes
    hold the answer; only the others are counted by Spark tasks (:data:`COUNT_FILES_PER_TASK`
    files each), reading the predicate's columns of the index's candidate rows. ``report`` (if
    given) receives the :class:`~paimon_index.table.aggregate.AggregateReport` of the driver and
    the tasks. A primary-key table is counted on the driver (:meth:`paimon_index.Table.count`).
    """
    from paimon_index.table import aggregate

    report = report if report is not None else AggregateReport()
    opened = open_table(warehouse, table, catalog_options=catalog_options)
    if opened.is_primary_key_table or latest_snapshot(opened.paimon_table) is None:
        return opened.count(where, use_index=use_index)
    paimon_table = opened.paimon_table
    with missing_files_named(f"count of {table}"):
        plan = aggregate.plan_aggregate(paimon_table, where, use_index)
        total, unanswered = aggregate.index_counts(plan, report)
    if not unanswered:
        return total
    # Tasks get each file's locations only and resolve it again (a selection can be megabytes).
    remaining = [f.unresolved() for f in unanswered]
    io, bound, schema = TableIO.of(plan.table), plan.predicate, plan.schema
    chunks = [remaining[i:i + COUNT_FILES_PER_TASK] for i in range(0, len(remaining), COUNT_FILES_PER_TASK)]

    def count_files(part: Iterable[list[FilePlan]]) -> Iterator[bytes]:
        for chunk in part:
            task_report = AggregateReport()
            found = sum(aggregate.count_by_reading(io, f, bound, schema, task_report, use_index)
                        for f in chunk)
            yield pickle.dumps((found, task_report))

    for pickled in spark.sparkContext.parallelize(chunks, len(chunks)).mapPartitions(count_files).collect():
        found, task_report = pickle.loads(pickled)
        total += found
        report.merge(task_report)
    return total
