"""The Table API's verbs as Spark jobs: same names, same result types.

    from paimon_index.spark import jobs
    jobs.read(spark, "db.t", where=None, columns=None, warehouse=W)          -> DataFrame (planned read)
    jobs.read_planned(spark, "db.t", where=None, warehouse=W)                -> PlannedRead (+ its plan)
    jobs.write(df, "db.t", mode="append" | "overwrite", warehouse=W)        -> CommitResult
    jobs.upsert(spark, df, "db.t", warehouse=W)                              -> CommitResult
    jobs.delete(spark, "db.t", "status = 'CANCELLED'", warehouse=W)          -> CommitResult
    jobs.update(spark, "db.t", {"score": "score + 1", "note": None}, "id < 100", warehouse=W)
    jobs.rewrite_file_index(spark, "db.t", where=None, warehouse=W)          -> CommitResult
    jobs.compact(spark, "db.t", full=False, warehouse=W)                     -> CommitResult
    jobs.expire_snapshots(spark, "db.t", retain_last=N, warehouse=W)         -> MaintenanceResult (driver)
    jobs.remove_orphan_files(spark, "db.t", older_than=T, warehouse=W)       -> MaintenanceResult (driver)
    jobs.count(spark, "db.t", "status = 'PAID'", warehouse=W)                -> int (driver + tasks)

Each verb commits at most **one** snapshot, as its :class:`paimon_index.Table` namesake does, and
returns :class:`paimon_index.CommitResult` (``operation``, ``snapshot_id`` -- None when nothing
changed --, ``rows_affected``, ``files_added``/``files_removed`` of that snapshot's delta) or
:class:`paimon_index.MaintenanceResult`. ``catalog_options`` (``fs.*``, pypaimon's spelling) reach
the driver's catalog, the ``paimon_index`` source and every task.

This is the Spark layer's one public module of verbs; what its jobs run on executors is in the
private :mod:`paimon_index.spark._tasks`, and every job calls the same table-layer functions as
its :class:`paimon_index.Table` namesake (the job only distributes the per-file or per-bucket work).

Where the work runs:

- ``read`` / ``read_planned`` plan on the driver with the indexes and let Spark's own Parquet reader
  read the surviving files (:mod:`paimon_index.spark.planned`);
- ``write`` goes through the ``paimon_index`` source (executors write files and indexes, the driver
  commits them together);
- ``upsert`` computes each row's Paimon bucket (fixed-bucket tables, pypaimon's bucket function)
  and repartitions by it, so every bucket reaches exactly one task, then writes through the source
  with ``bucket-exclusive = true``: each task deduplicates its rows (the last row of a key wins;
  ``-D``/``-U`` rows delete the key), writes them with pypaimon's key-value writer plus each new
  file's index, and for the buckets it owns looks the written and deleted keys up, marks the older
  rows in deletion vectors and places the new files in levels
  (:func:`paimon_index.table.pk.prepare_upsert`); the driver commits what all tasks prepared as one
  snapshot (:func:`~paimon_index.table.pk.commit_prepared`), exactly on the snapshot they planned
  on. A dynamic-bucket table (``bucket = -1``) is distributed as Paimon does it
  (:mod:`paimon_index.table.pk.dynamic`): rows routed by key hash to assigner tasks that own
  disjoint buckets and assign them from the pinned snapshot's HASH index, then shuffled by
  (partition, bucket) to tasks that write each bucket, extend its HASH index file and do its
  lookup; the driver commits once;
- ``delete``/``update`` of an append table are :func:`paimon_index.table.row_level.change_rows`,
  the shape :meth:`Table.delete`/:meth:`Table.update` run in one process: the driver pins the
  latest snapshot and every bucket's DV state; the table is read at that snapshot with the metadata
  columns (data file, row position, partition, bucket), filters pushed into the file indexes; the
  matching positions are grouped per bucket and each group's task merges them into the bucket's
  vectors and writes its new DV index file; an UPDATE's new values (Spark SQL expressions over the
  old row) are written by tasks as new data files with their indexes; the driver commits every
  task's messages as **one** snapshot, exactly on the planned one (ConcurrentChangeError, the
  tasks' files deleted, if another commit landed meanwhile). A failing task fails the job before
  anything is committed;
- ``delete``/``update`` of a primary-key table are :func:`paimon_index.table.pk.change_by_key`,
  as in :class:`paimon_index.Table`: the matching rows are read through the source and their keys
  upserted by the ``upsert`` job (``-D`` rows, or the new values). The source's writer plans its
  upsert on the latest snapshot (it takes no snapshot to commit on), so these rows are read from
  the latest snapshot too. A primary-key table without deletion vectors: the merged rows of one
  pinned snapshot are read on the driver and the change is committed exactly on it
  (:mod:`paimon_index.spark.merge_on_read`);
- ``rewrite_file_index``: one job; the driver plans the files (those of the partitions ``where``
  selects) and packs them into tasks of about equal bytes (``min(files, 2 x defaultParallelism)``
  tasks, so one large file does not leave the other cores idle behind it); executors rebuild and
  compare each file's container (:func:`paimon_index.table.rewrite.rewrite_file`); the driver
  commits the changed ones together;
- ``count`` answers on the **driver** every file its indexes answer exactly (row counts, deletion
  vectors, index bitmaps: :mod:`paimon_index.table.aggregate`); the other files, if any, are
  counted by Spark tasks, each reading only the predicate's columns of its files' candidate rows;
- ``compact`` of an append table: the driver picks the groups (Paimon's pick,
  :mod:`paimon_index.table.append_compaction`), byte-balanced Spark tasks rewrite them, the
  driver commits one ``COMPACT`` snapshot;
- ``compact`` of a primary-key table: the driver plans on one pinned snapshot and sends each
  (partition, bucket)'s work as plain values to tasks packed by bytes; each task rewrites its
  buckets and writes their DV index files; the driver commits once, exactly on the planned snapshot;
- ``expire_snapshots`` and ``remove_orphan_files`` run on the **driver** through the Python API
  (their work is metadata); the session is taken so that every verb has the same shape.

``rows_affected``: rows written (``write``, ``upsert``: rows of the DataFrame, counted as the job
runs them, so it is scanned once), deleted or updated; 0 for ``compact`` and index rewrites. SET
values of ``update`` are Spark SQL expression text when strings (``"'PAID'"`` is a string literal),
constants otherwise -- the Python API's rule, with Spark evaluating the expressions.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from paimon_index.errors import InvalidOptionError, PrimaryKeyTableError
from paimon_index.spark import _connect, _tasks
from paimon_index.spark.assign import store_assigned, target_schema
from paimon_index.spark.datasource import (
    BUCKET_EXCLUSIVE,
    SOURCE_NAME,
    WAREHOUSE,
)
from paimon_index.spark.options import COMMIT_USER, DELETE_KEYS
from paimon_index.spark.planned import (
    PlannedRead,
    change_statement,
    read,
    read_planned,
    source_read,
    statement_rows_read,
)
from paimon_index.table import pk
from paimon_index.table.aggregate import AggregateReport
from paimon_index.table.api import (
    APPEND,
    OVERWRITE,
    CommitResult,
    MaintenanceResult,
    commit_result,
    open_table,
)
from paimon_index.table.catalog import parse_identifier
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import FilePlan, missing_files_named
from paimon_index.table.paimon import DYNAMIC_BUCKET, bucket_number, latest_snapshot, table_name
from paimon_index.table.pk.merge_on_read import LATEST
from paimon_index.table.pk.upsert import DELETE_KIND, ROW_KIND_COLUMN, change_by_key
from paimon_index.table.row_level import (
    RowChange,
    RowChangePlan,
    assignment_columns,
    change_rows,
)
from paimon_index.table.transaction import Transaction, new_commit_user, snapshot_of_user

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["PlannedRead", "change_matched", "compact", "count", "delete", "expire_snapshots", "overwrite",
           "read", "read_planned", "remove_orphan_files", "rewrite_file_index", "spark_schema", "update",
           "upsert", "upsert_changes", "write"]

CatalogOptions = Mapping[str, str] | None
#: A DELETE or UPDATE of a primary-key table (deletion-vectors mode) matching at most this many rows
#: is upserted on the driver by ``pk.upsert_arrow`` (what ``Table.delete``/``update`` run): fetching
#: the rows costs one Spark job that stops after this many, where the distributed upsert's
#: shuffle and tasks cost seconds. 0 turns it off.
SMALL_CHANGE_ROWS = 10_000
#: ... and of a merge-on-read table (no deletion vectors) on a local master, where the driver is
#: the executors' machine: writing level-0 files needs no lookup, and the write job's shuffle and
#: its tasks' first imports cost more than the driver's write. Measured (2M rows after an upsert
#: and a DELETE, a 5% UPDATE of 101,131 rows, local[2]): 0.94-1.46 s against 1.15-1.97 s through
#: the tasks, 2.0-2.7 s against 7.3-8.6 s as a process's first change. Off with SMALL_CHANGE_ROWS = 0.
#: More when the statement's own read took them on the driver (``planned.statement_rows_read``):
#: 20M rows, a 5% UPDATE of 1,010,613 rows read by the driver, 1.8-2.0 s against 2.3-2.7 s through
#: the tasks, 2.9 against 5.2 s as a process's first change.
LOCAL_CHANGE_ROWS = 250_000
#: ``count``: data files per Spark task when files must be read (a file's read is one task's work
#: at most; a few per task keep the task overhead small next to it).
COUNT_FILES_PER_TASK = 4


def _opened(warehouse: str, table: str, catalog_options: CatalogOptions) -> Any:
    """The pypaimon table (the driver's)."""
    return open_table(warehouse, table, catalog_options=catalog_options).paimon_table


def _result(warehouse: str, table: str, catalog_options: CatalogOptions, operation: str,
            snapshot_id: int | None, rows: int) -> CommitResult:
    """The verb's result, as :class:`paimon_index.Table`'s verbs build it."""
    if snapshot_id is None:
        return CommitResult(operation, None, 0)
    return commit_result(_opened(warehouse, table, catalog_options), operation, snapshot_id, rows)


def _latest(warehouse: str, table: str, catalog_options: CatalogOptions) -> int | None:
    snapshot = latest_snapshot(_opened(warehouse, table, catalog_options))
    return None if snapshot is None else int(snapshot.id)


def write(df: DataFrame, table: str, mode: str = APPEND, *, warehouse: str,
          catalog_options: CatalogOptions = None) -> CommitResult:
    """Append ``df`` to ``table``, or replace its rows (``mode="overwrite"``), in one snapshot.

    Runs through the ``paimon_index`` source (see its docstring for partitions and overwrite of
    partitioned tables); on a primary-key table an append is an upsert. ``df``'s columns are
    resolved and cast as Spark's ``INSERT INTO ... BY NAME`` does (ANSI store assignment,
    :func:`paimon_index.spark.assign.store_assigned`), on the driver before the job starts.

    Raises:
        InvalidOptionError: an unknown mode, or an overwrite of a primary-key table.
        InvalidIdentifierError: a bad table name, a system table or a branch.
        TableNotFoundError: no such table (nothing runs).
        DataError: an extra or missing column, or a type Spark's store assignment refuses; (in the
            job) a value that overflows its column or a NULL into a NOT NULL column.
        ConcurrentChangeError: (overwrite) another commit landed meanwhile; nothing was applied.
    """
    if mode not in (APPEND, OVERWRITE):
        raise InvalidOptionError(f"write mode must be {APPEND!r} or {OVERWRITE!r}, got {mode!r}")
    parse_identifier(table, for_write=True)
    opened = open_table(warehouse, table, catalog_options=catalog_options)  # TableNotFoundError here
    if opened.is_primary_key_table and mode == APPEND and pk.dv_mode(opened.paimon_table):
        # An upsert (which store-assigns the rows itself): rows shuffled so that each bucket
        # reaches one task (dynamic buckets: assigned by assigner tasks first).
        snapshot, written = _upsert(df.sparkSession, df, table, warehouse=warehouse,
                                    catalog_options=catalog_options)
        return _result(warehouse, table, catalog_options, mode, snapshot, written)
    df = store_assigned(df, target_schema(opened.paimon_table), by_name=True, case_sensitive=None,
                        table=table, passthrough=(ROW_KIND_COLUMN,) if opened.is_primary_key_table else ())
    dynamic = bucket_number(opened.paimon_table) == DYNAMIC_BUCKET
    if opened.is_primary_key_table and mode == APPEND and dynamic:
        df = df.repartition(1)  # one HASH index per bucket: two writing tasks would conflict
    before = _latest(warehouse, table, catalog_options)
    counted, rows = _tasks.counted(df.sparkSession, df)
    writer = counted.write.format(SOURCE_NAME).options(**dict(catalog_options or {}))
    user = new_commit_user()  # the snapshot is found by its commit user: others may commit meanwhile
    # The source commits on the driver, where Spark wraps what its commit raised (a
    # ConcurrentChangeError of an overwrite) in an AnalysisException: raised again as itself.
    with _connect.active_session(df.sparkSession), _connect.task_errors(f"write to {table}"):
        writer.option(WAREHOUSE, warehouse).option(COMMIT_USER, user).mode(mode).save(table)
    snapshot = snapshot_of_user(_opened(warehouse, table, catalog_options), user, before)
    return _result(warehouse, table, catalog_options, mode, snapshot, int(rows.value))


def upsert(spark: SparkSession, df: DataFrame, table: str, *, warehouse: str,
           catalog_options: CatalogOptions = None, partitions: int | None = None) -> CommitResult:
    """Insert or replace ``df``'s rows by primary key (``_ROW_KIND`` '-D'/'-U' rows delete their key).

    Tasks own whole buckets (``partitions`` tasks, default Spark's parallelism); see the module
    docstring. A table without deletion vectors (merge-on-read): tasks write the rows as level-0
    key-value rows with their kinds (:mod:`paimon_index.spark.merge_on_read`).

    Raises:
        PrimaryKeyTableError: ``table`` is not a primary-key table.
        ConcurrentChangeError: another commit landed meanwhile; nothing was applied.
    """
    snapshot, rows = _upsert(spark, df, table, warehouse=warehouse, partitions=partitions,
                             catalog_options=catalog_options)
    return _result(warehouse, table, catalog_options, "upsert", snapshot, rows)


def _upsert(spark: SparkSession, df: DataFrame, table: str, *, warehouse: str,
            partitions: int | None = None, catalog_options: CatalogOptions = None,
            delete_keys: bool = False, operation: str | None = None,
            planned: object = LATEST, rows_at_least: int = 0) -> tuple[int | None, int]:
    """Upsert ``df`` into the primary-key table ``table`` in one commit: the last snapshot id (None
    when nothing was committed) and the number of rows of ``df`` written. ``delete_keys``: ``df``
    holds a DELETE's ``-D`` rows, which remove their keys whatever the table's merge engine.
    A merge-on-read table (no deletion vectors): ``df``'s rows as level-0 key-value rows, exactly on
    ``planned`` (:mod:`paimon_index.spark.merge_on_read`).

    A value the store assignment refuses fails whichever job first computes the rows (the small
    change's fetch, the tasks' write): raised as the ``DataError`` naming its column, as a project
    error a task or the source's commit raised is raised as itself (:func:`_connect.task_errors`).
    """
    with _connect.task_errors(f"{operation or 'upsert'} of {table}"):
        return _upsert_rows(spark, df, table, warehouse=warehouse, partitions=partitions,
                            catalog_options=catalog_options, delete_keys=delete_keys, operation=operation,
                            planned=planned, rows_at_least=rows_at_least)


def _upsert_rows(spark: SparkSession, df: DataFrame, table: str, *, warehouse: str,
                 partitions: int | None, catalog_options: CatalogOptions, delete_keys: bool,
                 operation: str | None, planned: object, rows_at_least: int) -> tuple[int | None, int]:
    catalog_options = dict(catalog_options or {})
    paimon_table = _opened(warehouse, table, catalog_options)
    if paimon_table.is_primary_key_table and not pk.dv_mode(paimon_table):
        from paimon_index.spark.merge_on_read import write_frame

        df = store_assigned(df, target_schema(paimon_table), by_name=True, case_sensitive=None, table=table,
                            passthrough=(ROW_KIND_COLUMN,))
        local = SMALL_CHANGE_ROWS > 0 and _connect.local_master(spark)
        # Rows the statement's read already held on the driver (bounded by that read) are
        # written there too: measured, see LOCAL_CHANGE_ROWS.
        small = max(LOCAL_CHANGE_ROWS, statement_rows_read()) if local else SMALL_CHANGE_ROWS
        return write_frame(df, paimon_table, planned, operation or ("delete" if delete_keys else "upsert"),
                           warehouse=warehouse, table=table, catalog_options=catalog_options,
                           partitions=partitions or _connect.parallelism(spark), small_rows=small,
                           rows_at_least=rows_at_least)
    if not pk.dv_mode(paimon_table):
        raise PrimaryKeyTableError(f"{table} is not a primary-key table (upserts need a primary key)")
    from paimon_index.table.pk.changelog import INPUT, producer
    from paimon_index.table.pk.merge import change_kind, merge_engine
    from paimon_index.table.pk.plan import check_table

    # A merge engine's options are refused on the driver, before any task runs. 'input': the tasks
    # write each record into its bucket's changelog (fixed buckets, and dynamic ones' writers).
    check_table(paimon_table, upsert=True, input_ok=True)
    inputs = producer(paimon_table, input_ok=True) == INPUT
    count = partitions or _connect.parallelism(spark)
    # Level-0 files (a crash between an upsert's two commits, a plain pypaimon write) are folded on
    # the driver first, their own COMPACT snapshot; the tasks plan on the result.
    planned_id = pk.folded_snapshot_id(paimon_table)
    # By name, cast as Spark's INSERT casts (the source's writer takes only exact Arrow casts).
    df = store_assigned(df, target_schema(paimon_table), by_name=True, case_sensitive=None, table=table,
                        passthrough=(ROW_KIND_COLUMN,))
    if operation in ("delete", "update") and SMALL_CHANGE_ROWS > 0:
        # The rows of a DELETE/UPDATE come from the table's own read: fetching a few is cheap. (Not
        # for MERGE or plain upserts, whose rows may come from joins worth computing once.)
        head = df.limit(SMALL_CHANGE_ROWS + 1).toArrow()
        if head.num_rows <= SMALL_CHANGE_ROWS:
            snapshot = pk.upsert_arrow(paimon_table, head, delete_keys=delete_keys,
                                       kind=change_kind(operation)) if head.num_rows else None
            return (None, 0) if snapshot is None else (snapshot, head.num_rows)
    if operation == "update" and ROW_KIND_COLUMN not in df.columns:  # written as '+U', as Java's UPDATE
        from pyspark.sql import functions as F

        df = df.withColumn(ROW_KIND_COLUMN, F.lit(change_kind(operation)))
    df, written = _tasks.counted(spark, df)
    writer_options = {**catalog_options, WAREHOUSE: warehouse}
    if delete_keys:
        writer_options[DELETE_KEYS] = "true"
    if bucket_number(paimon_table) == DYNAMIC_BUCKET:
        # Paimon's dynamic-bucket topology: route by key hash to assigners that own disjoint
        # buckets, assign from the HASH index, shuffle by bucket; tasks own whole buckets. With a
        # merge engine the assigner merges each key's rows, the bucket's task merges in the old row.
        from paimon_index.table.pk import dynamic

        merge = not delete_keys and merge_engine(paimon_table) is not None
        prepared = _tasks.dynamic_upsert_job(df, warehouse, table, catalog_options, planned_id,
                                             dynamic.assigner_count(paimon_table, count), count,
                                             list(paimon_table.partition_keys), merge=merge,
                                             records=inputs, delete_keys=delete_keys)
        if not prepared:
            return None, 0
        snapshot = pk.commit_prepared(paimon_table, prepared)
        return snapshot, int(written.value)
    # Shuffle by Paimon's bucket: a task owns whole buckets and looks their keys up itself.
    shuffled = _tasks.bucket_owned(df, paimon_table, warehouse, table, catalog_options, count)
    writer_options[BUCKET_EXCLUSIVE] = "true"
    user = new_commit_user()  # the snapshot is found by its commit user: others may commit meanwhile
    with _connect.active_session(spark):
        shuffled.write.format(SOURCE_NAME).options(**writer_options).option(COMMIT_USER, user) \
            .mode("append").save(table)
    snapshot = snapshot_of_user(_opened(warehouse, table, catalog_options), user, planned_id)
    if snapshot is None:
        return None, 0
    return snapshot, int(written.value)


class _SparkKeyedRows:
    """:class:`~paimon_index.table.pk.upsert.KeyedRows` as DataFrames: read through the source,
    upserted by the :func:`upsert` job."""

    def __init__(self, spark: SparkSession, table: str, columns: list[str], warehouse: str,
                 catalog_options: CatalogOptions) -> None:
        self.spark, self.table, self.columns = spark, table, columns
        self.warehouse, self.catalog_options = warehouse, catalog_options
        self._proven = 0  # the rows :meth:`matching`'s plan proved match (merge-on-read tables)

    def _merge_on_read(self) -> bool:
        from paimon_index.spark.merge_on_read import is_merge_on_read

        return is_merge_on_read(_opened(self.warehouse, self.table, dict(self.catalog_options or {})))

    def matching(self, where: str, snapshot_id: int) -> DataFrame:
        from paimon_index.spark.merge_on_read import merged_frame

        # Merge-on-read: the merged rows of ``snapshot_id``, committed exactly on it. Deletion
        # vectors: the latest snapshot, not ``snapshot_id``: the upsert plans on the latest one (it
        # takes no snapshot to commit on), so reading an older one would only widen the window in
        # which a concurrent change is overwritten.
        exact = self._merge_on_read()
        rows, _, proven = merged_frame(self.spark, self.warehouse, self.table, self.catalog_options,
                                       snapshot_id if exact else None, where)
        self._proven = proven if exact else 0
        return rows

    def deleted(self, rows: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        return rows.select(*self.columns, F.lit(DELETE_KIND).alias(ROW_KIND_COLUMN))

    def assigned(self, rows: DataFrame, assignments: Mapping[str, Any]) -> DataFrame:
        return _assigned_rows(rows, self.columns, assignments)

    def upsert(self, rows: DataFrame, snapshot_id: int) -> tuple[int | None, int]:
        # Rows with a row kind are a DELETE's (``deleted``): they remove their keys on every engine.
        deleting = ROW_KIND_COLUMN in rows.columns
        # Merge-on-read: committed exactly on ``snapshot_id``, one row per matching row (deleted or
        # assigned), so the count the plan proved is theirs. Deletion vectors: the upsert plans on
        # the latest snapshot (see matching; ``_proven`` is 0).
        return _upsert(self.spark, rows, self.table, warehouse=self.warehouse,
                       catalog_options=self.catalog_options, delete_keys=deleting,
                       operation="delete" if deleting else "update",
                       planned=snapshot_id if self._merge_on_read() else LATEST, rows_at_least=self._proven)


def _assigned(value: Any) -> Column:
    """A SET value as a Spark column: a string is SQL expression text (``"'PAID'"`` is the string
    literal), anything else a constant."""
    from pyspark.sql import functions as F

    return F.expr(value) if isinstance(value, str) else F.lit(value)


def _assigned_rows(rows: DataFrame, columns: list[str], assignments: Mapping[str, Any]) -> DataFrame:
    """``rows`` with the SET values, each cast to its column's type (every value sees the old row)."""
    from pyspark.sql import functions as F

    return rows.select(*[_assigned(assignments[c]).cast(rows.schema[c].dataType).alias(c)
                         if c in assignments else F.col(c) for c in columns])


def _read_pinned(spark: SparkSession, warehouse: str, table: str, plan: RowChangePlan,
                 catalog_options: CatalogOptions, where: str | None = None) -> DataFrame:
    """The table at the planned snapshot, with the metadata columns; ``where`` (Spark SQL, a
    condition every row the change takes meets) prunes files and filters the rows.

    Spark's Parquet reader reads it (the planned read); what that read cannot take
    (``PlannedRead.fallback``) the ``paimon_index`` source reads."""
    planned = read_planned(spark, table, where, warehouse=warehouse, change_of=plan.snapshot_id,
                           catalog_options=catalog_options, small_read_bytes=0, metadata=True)
    if planned.fallback is None:
        return planned.dataframe
    # Pushdown forced on (the private key; users cannot): every scan of this DataFrame (UPDATE scans
    # it twice) pushes the same filter, so the read plan Spark 4.1-4.3 share between them is right
    # for each (docs/semantics.md).
    pinned = source_read(spark, table, plan.snapshot_id, warehouse, catalog_options, metadata=True,
                         current_schema=True, single_scan_pushdown=True)
    return pinned if where is None else pinned.filter(where)


def _stage(txn: Transaction, messages: DataFrame, plan: RowChangePlan | None = None) -> int:
    """Run the job, stage the commit messages its tasks returned (with ``plan``, a row change's:
    the files a copy-on-write task rewrote become their DELETE entries); the rows they changed."""
    collected, rows = _tasks.collect(messages, f"{txn.operation} of {table_name(txn.table)}")
    txn.stage(collected if plan is None else plan.messages(collected))
    return rows


def _delete_by_position(spark: SparkSession, table: str, where: str, *, warehouse: str,
                        catalog_options: CatalogOptions) -> RowChange:
    def mark(plan: RowChangePlan, txn: Transaction) -> int:
        matched = _read_pinned(spark, warehouse, table, plan, catalog_options, where)
        return _stage(txn, _tasks.mark_job(matched, plan, warehouse, table, catalog_options), plan)

    return change_rows(_opened(warehouse, table, catalog_options), "delete", mark)


def _update_by_position(spark: SparkSession, table: str, assignments: Mapping[str, Any], where: str, *,
                        columns: list[str], warehouse: str, catalog_options: CatalogOptions) -> RowChange:
    def mark(plan: RowChangePlan, txn: Transaction) -> int:
        matched = _read_pinned(spark, warehouse, table, plan, catalog_options, where)
        written = _tasks.write_job(_assigned_rows(matched, columns, assignments), warehouse, table,
                                   catalog_options)
        marked = _tasks.mark_job(matched, plan, warehouse, table, catalog_options)
        return _stage(txn, marked.unionAll(written), plan)

    return change_rows(_opened(warehouse, table, catalog_options), "update", mark)


def delete(spark: SparkSession, table: str, where: str, *, warehouse: str,
           catalog_options: CatalogOptions = None) -> CommitResult:
    """``DELETE FROM table WHERE where`` (Spark SQL condition) in one commit (as ``Table.delete``).

    Append tables: deletion vectors (without them, copy-on-write: the files holding deleted rows
    rewritten), exactly on the snapshot read. Primary-key tables: the matching keys are upserted as
    deletes. See the module docstring.

    Raises:
        ConcurrentChangeError: another commit landed after the rows were found; nothing was applied.
    """
    opened = open_table(warehouse, table, catalog_options=catalog_options)
    if opened.is_primary_key_table:
        keyed = _SparkKeyedRows(spark, table, opened.schema.names, warehouse, catalog_options)
        with change_statement():  # the matching rows are written before it returns
            snapshot, rows = change_by_key(opened.paimon_table, where, None, keyed)
        return _result(warehouse, table, catalog_options, "delete", snapshot, rows)
    change = _delete_by_position(spark, table, where, warehouse=warehouse, catalog_options=catalog_options)
    return _result(warehouse, table, catalog_options, "delete", change.snapshot_id, change.rows)


def update(spark: SparkSession, table: str, set: Mapping[str, Any], where: str | None = None, *,
           warehouse: str, catalog_options: CatalogOptions = None) -> CommitResult:
    """``UPDATE table SET col = value, ... WHERE where`` in one commit (``where`` None: every row).

    Raises:
        InvalidOptionError: an unknown column, a primary-key column, or (append table) no
            deletion vectors.
        ConcurrentChangeError: another commit landed after the rows were found; nothing was applied.
    """
    opened = open_table(warehouse, table, catalog_options=catalog_options)
    columns = opened.schema.names
    assignments = assignment_columns(table, columns, set)
    condition = "true" if where is None else where
    if opened.is_primary_key_table:
        keyed = _SparkKeyedRows(spark, table, columns, warehouse, catalog_options)
        with change_statement():  # the matching rows are written before it returns
            snapshot, rows = change_by_key(opened.paimon_table, condition, assignments, keyed)
        return _result(warehouse, table, catalog_options, "update", snapshot, rows)
    change = _update_by_position(spark, table, assignments, condition, columns=columns, warehouse=warehouse,
                                 catalog_options=catalog_options)
    return _result(warehouse, table, catalog_options, "update", change.snapshot_id, change.rows)


def rewrite_file_index(spark: SparkSession, table: str, where: str | None = None, *, warehouse: str,
                       catalog_options: CatalogOptions = None, progress: bool = False) -> CommitResult:
    """Rebuild the file indexes the table's ``file-index.*`` options ask for, as one Spark job
    (tasks balanced by file bytes; ``where``: partitions), committed as one snapshot.

    ``progress`` prints ``files checked / total`` on stderr as tasks finish (an accumulator of
    files done, polled while the job runs; under Spark Connect, which has no accumulators, only
    the start and the end).
    """
    from paimon_index.table.rewrite import commit_rewrite, plan_rewrite

    paimon_table = _opened(warehouse, table, catalog_options)
    plan = plan_rewrite(paimon_table, where)
    tasks = plan.tasks
    if not tasks:
        return _result(warehouse, table, catalog_options, "rewrite_file_index", None, 0)
    groups = _tasks.packed(spark, tasks, [_tasks.file_bytes(t.file) for t in tasks])
    # Spark Connect has no accumulators: its progress bar shows the start and the end only.
    files_done = None if _connect.is_connect(spark) else spark.sparkContext.accumulator(0)
    if progress:
        done = (lambda: 0) if files_done is None else (lambda: int(files_done.value))
        with _tasks.ProgressWhile(done, len(tasks), "rewrite_file_index"):
            pickled = _tasks.rebuild_job(spark, groups, files_done, warehouse, table, catalog_options)
    else:
        pickled = _tasks.rebuild_job(spark, groups, files_done, warehouse, table, catalog_options)
    messages = plan.messages(pickle.loads(p) for p in pickled)
    snapshot = commit_rewrite(paimon_table, messages, snapshot_id=plan.snapshot_id)
    return _result(warehouse, table, catalog_options, "rewrite_file_index", snapshot, 0)


def compact(spark: SparkSession, table: str, *, full: bool = False, warehouse: str,
            catalog_options: CatalogOptions = None) -> CommitResult:
    """Compact a table in one ``COMPACT`` snapshot, as :meth:`paimon_index.Table.compact` does.

    A primary-key table: the driver plans on one pinned snapshot (level-0 files folded first, as
    :meth:`paimon_index.Table.compact` does) and sends each (partition, bucket)'s work, plain values,
    to Spark tasks packed by bytes; each task rewrites its buckets and writes their DV index files
    (:func:`paimon_index.table.pk.compaction.compact_bucket`, the Python path's function); the
    driver commits every bucket's change once, exactly on the planned snapshot
    (ConcurrentChangeError, the tasks' files deleted, when another snapshot landed meanwhile). An
    append table is planned on the driver, its picked groups rewritten in Spark tasks
    (byte-balanced) and committed on the driver (:func:`_compact_append`).
    """
    opened = open_table(warehouse, table, catalog_options=catalog_options)
    if not opened.is_primary_key_table:
        return _compact_append(spark, table, full=full, warehouse=warehouse, catalog_options=catalog_options)
    parse_identifier(table, for_write=True)  # a system table or branch: refused as Table.compact refuses it
    from paimon_index.table.pk.compaction import compact as compact_pk

    def run(works: list[Any]) -> list[Any]:
        return _tasks.pk_compact_job(spark, works, warehouse, table, catalog_options)

    snapshot = compact_pk(opened.paimon_table, full=full, run=run)
    return _result(warehouse, table, catalog_options, "compact", snapshot, 0)


def _compact_append(spark: SparkSession, table: str, *, full: bool, warehouse: str,
                    catalog_options: CatalogOptions, partitions: Any = None) -> CommitResult:
    """Append compaction (:mod:`paimon_index.table.append_compaction`): the pick on the driver, each
    group rewritten by a Spark task, one exact commit on the driver."""
    from paimon_index.table.append_compaction import commit_compaction, plan_compaction

    paimon_table = _opened(warehouse, table, catalog_options)
    plan = plan_compaction(paimon_table, full=full, partitions=partitions)
    if not plan.groups or plan.schema is None:
        return _result(warehouse, table, catalog_options, "compact", None, 0)
    tasks = _tasks.packed(spark, list(enumerate(plan.groups)), [g.bytes for g in plan.groups])
    rewritten: list[list[Any]] = [[] for _ in plan.groups]
    for index, metas in _tasks.compact_job(spark, tasks, plan.schema, warehouse, table, catalog_options):
        rewritten[index] = metas
    snapshot = commit_compaction(paimon_table, plan, rewritten)
    return _result(warehouse, table, catalog_options, "compact", snapshot, 0)


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
    the tasks. A primary-key table is counted on the driver (:meth:`paimon_index.Table.count`: in
    deletion-vectors mode from its files' row counts, vectors and indexes as here).
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
    io, bound = TableIO.of(plan.table), plan.predicate
    schema = plan.schema.detached({f.schema_id for f in remaining})  # no pypaimon object in a task
    chunks = [remaining[i:i + COUNT_FILES_PER_TASK] for i in range(0, len(remaining), COUNT_FILES_PER_TASK)]

    def count_files(chunk: list[FilePlan]) -> Iterator[bytes]:
        task_report = AggregateReport()
        found = sum(aggregate.count_by_reading(io, f, bound, schema, task_report, use_index) for f in chunk)
        yield pickle.dumps((found, task_report))

    for pickled in _connect.run_tasks(spark, chunks, count_files, f"count of {table}"):
        found, task_report = pickle.loads(pickled)
        total += found
        report.merge(task_report)
    return total


# ------------------------------------------------------------------------------------------------
# SQL DML job shapes (paimon_index.spark.sql.dml): an overwrite with Spark's partition semantics,
# and the row-change shape whose matched rows a caller's query chooses.
# ------------------------------------------------------------------------------------------------
#: Paimon's table option deciding whether an overwrite of a partitioned table replaces only the
#: partitions written (true) or the whole table / the static partition given (false).
DYNAMIC_PARTITION_OVERWRITE = "dynamic-partition-overwrite"


def spark_schema(spark: SparkSession, table: str, *, warehouse: str,
                 catalog_options: CatalogOptions = None) -> StructType:
    """The table's columns as Spark types (as the ``paimon_index`` source reads them)."""
    from paimon_index.spark.merge_on_read import is_merge_on_read

    paimon_table = _opened(warehouse, table, dict(catalog_options or {}))
    if is_merge_on_read(paimon_table):  # the source does not read these: the merged read's schema
        from paimon_index.spark.merge_on_read import spark_schema as merged_schema

        merged: StructType = merged_schema(paimon_table)
        return merged
    schema: StructType = source_read(spark, table, None, warehouse, catalog_options).schema
    return schema


def overwrite(df: DataFrame, table: str, partition: Mapping[str, Any] | None = None, *,
              dynamic: bool = False, warehouse: str, catalog_options: CatalogOptions = None) -> CommitResult:
    """``INSERT OVERWRITE`` as Paimon's Spark connector runs it, in one snapshot exactly on the
    snapshot planned: ``dynamic`` False (Spark's default ``partitionOverwriteMode=static``) replaces
    the whole table, or the partitions matching the static spec ``partition`` (column -> value);
    ``dynamic`` True replaces only the partitions ``df`` writes. ``df`` holds the table's columns.

    Append tables: tasks write the files (:func:`_tasks.write_job`), the driver commits them as an
    overwrite. Primary-key tables: the rows shuffled by bucket (a dynamic-bucket table's into one
    task, whose HASH index assigns them), each task writes its buckets (:func:`_tasks.overwrite_job`:
    deletion-vectors mode, the last row per key into levels >= 1; merge-on-read, level-0 key-value
    files that readers merge, as Paimon's connector writes them); the driver commits the messages as
    one overwrite. Which of several rows of one key in ``df`` wins is the order they reach their
    task, as in Paimon's connector.

    Raises:
        ConcurrentChangeError: another commit landed meanwhile; nothing was applied.
    """
    paimon_table = _opened(warehouse, table, catalog_options)
    target = paimon_table.copy({DYNAMIC_PARTITION_OVERWRITE: "true" if dynamic else "false"})
    before = latest_snapshot(paimon_table)
    if paimon_table.is_primary_key_table:
        from paimon_index.table.pk.overwrite import check_overwrite, commit_overwrite

        check_overwrite(paimon_table)  # refusals on the driver, before any task writes

        by_bucket = _tasks.bucket_owned(df, paimon_table, warehouse, table, catalog_options,
                                        _connect.parallelism(df.sparkSession))
        messages, written = _tasks.collect(_tasks.overwrite_job(by_bucket, warehouse, table, catalog_options),
                                           f"overwrite of {table}")
        snapshot = commit_overwrite(target, messages, planned=None if before is None else int(before.id),
                                    partition=partition or None)
        return _result(warehouse, table, catalog_options, OVERWRITE, snapshot, written)
    with Transaction(target, before, overwrite=True, partition=partition, operation="overwrite") as txn:
        collected, _ = _tasks.collect(_tasks.write_job(df, warehouse, table, catalog_options),
                                      f"overwrite of {table}")
        txn.stage(collected)
        rows = sum(int(f.row_count) for m in collected for f in m.new_files)
        snapshot = txn.commit()
    return _result(warehouse, table, catalog_options, OVERWRITE, snapshot, rows)


#: ``change_matched``'s ``build``: the table at the planned snapshot with the metadata columns in,
#: (the rows to mark deleted -- metadata columns --, the rows to write -- the table's columns) out.
MatchedRows = Callable[["DataFrame"], "tuple[DataFrame | None, DataFrame | None]"]


def change_matched(spark: SparkSession, table: str, build: MatchedRows, *, operation: str, warehouse: str,
                   catalog_options: CatalogOptions = None, prune: str | None = None) -> CommitResult:
    """DELETE / UPDATE / MERGE of an append table by position, as one snapshot exactly on the
    planned one: ``build`` gets the table pinned at that snapshot with the metadata columns (an
    empty table: an empty frame of that schema) and chooses the rows to mark deleted and the rows to
    write; their tasks run as one Spark job and the driver commits all their messages together
    (:func:`paimon_index.table.row_level.change_rows`' shape, plus the new rows of a MERGE).
    ``rows_affected``: the rows marked deleted. ``prune``: a Spark SQL condition that every row
    ``build`` takes meets (a DELETE's own conjuncts on the table): the files the indexes tell hold
    no such row are not read, and ``build`` gets only the rows meeting it.

    A table without deletion vectors is changed copy-on-write (as Paimon's connector does): each
    data file holding a row to mark is rewritten without it, in the same snapshot.

    Raises:
        ConcurrentChangeError: another commit landed after the plan; nothing was applied.
    """
    from paimon_index.table.row_level import plan_row_change

    paimon_table = _opened(warehouse, table, catalog_options)
    plan = plan_row_change(paimon_table)
    if plan is None:
        loaded = source_read(spark, table, None, warehouse, catalog_options, metadata=True)
        pinned = spark.createDataFrame([], loaded.schema)
    else:
        pinned = _read_pinned(spark, warehouse, table, plan, catalog_options, prune)
    marked, written = build(pinned)
    with Transaction(paimon_table, None if plan is None else plan.snapshot, operation=operation) as txn:
        parts: list[DataFrame] = []
        if marked is not None and plan is not None:
            parts.append(_tasks.mark_job(marked, plan, warehouse, table, catalog_options))
        if written is not None:
            parts.append(_tasks.write_job(written, warehouse, table, catalog_options))
        rows = 0
        if parts:
            job = parts[0] if len(parts) == 1 else parts[0].unionAll(parts[1])
            rows = _stage(txn, job, plan)
        snapshot = txn.commit()
    return _result(warehouse, table, catalog_options, operation, snapshot, rows)


def upsert_changes(spark: SparkSession, rows: DataFrame, table: str, *, operation: str, warehouse: str,
                   catalog_options: CatalogOptions = None, planned: object = LATEST,
                   rows_at_least: int = 0) -> CommitResult:
    """DELETE / UPDATE / MERGE of a primary-key table: ``rows`` (the table's columns and
    ``_ROW_KIND``, '-D' deleting its key) upserted in one commit by the :func:`upsert` job.
    UPDATE / MERGE of an ``aggregation`` table are refused as Paimon's connector refuses them; a
    DELETE removes the keys on every merge engine. ``planned``: the snapshot ``rows`` were read on,
    which a merge-on-read table (no deletion vectors) commits exactly on; ``rows_at_least``: how
    many rows ``rows`` has at least, when its read's plan proved it (more than the driver writes:
    no row is fetched first)."""
    from paimon_index.table.pk.merge import check_row_level

    if operation in ("update", "merge"):
        check_row_level(_opened(warehouse, table, dict(catalog_options or {})), operation)
    snapshot, count = _upsert(spark, rows, table, warehouse=warehouse, catalog_options=catalog_options,
                              delete_keys=operation == "delete", operation=operation, planned=planned,
                              rows_at_least=rows_at_least)
    return _result(warehouse, table, catalog_options, operation, snapshot, count)
