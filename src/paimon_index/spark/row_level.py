"""Row-level changes and index maintenance as Spark jobs over ``paimon_index`` tables.

    delete(spark, "db.t", "status = 'CANCELLED'", warehouse=W)          -> snapshot id | None
    delete_rows(spark, "db.t", where, warehouse=W) -> RowChange(snapshot_id, rows)   (same job)
    update(spark, "db.t", {"status": "'PAID'", "score": "score + 1"}, "id < 100", warehouse=W)
    rewrite_file_index(spark, "db.t", where="dt = '2024-01-01'", warehouse=W)   (one job; table/rewrite.py)

The jobs follow Paimon's Spark connector. The driver pins the latest snapshot and the DV state of
every bucket (:func:`paimon_index.table.row_level.plan_row_change`); the table is read at that
snapshot with the metadata columns (data file, row position, partition, bucket), filters pushed
into the file indexes. For DELETE, the matching rows' positions are grouped per bucket
(``groupBy(partition, bucket).applyInArrow``): each group's task merges them with the bucket's
vectors and writes the bucket's new DV index file. For UPDATE, the same happens to the old rows,
while the new values (Spark SQL expressions over the old row) are written as new data files with
their file indexes. Every task returns pypaimon commit messages (pickled); the driver commits them
all as **one** snapshot, exactly on the planned one (:class:`~paimon_index.table.transaction
.Transaction`): if another commit landed meanwhile it raises ``ConcurrentChangeError`` and deletes
the files the tasks wrote. A failing task fails the job before anything is committed.

SET values are Spark SQL expressions (``"'PAID'"`` is a string literal, ``"score + 1"`` an
expression), as in ``UPDATE t SET status = 'PAID'``. ``catalog_options`` (``fs.*``) reach the
driver's catalog, the source's reads and every task. :mod:`paimon_index.spark.jobs` wraps these
jobs with the Table API's result types.
"""

from __future__ import annotations

import heapq
import pickle
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_index.errors import InvalidOptionError
from paimon_index.spark.datasource import FILTER_PUSHDOWN, METADATA, SNAPSHOT_ID, SOURCE_NAME, WAREHOUSE
from paimon_index.table.catalog import open_table
from paimon_index.table.files import BUCKET_COLUMN, METADATA_COLUMNS, PARTITION_COLUMN
from paimon_index.table.row_level import (
    RowChange,
    RowChangePlan,
    commit_row_change,
    mark_deleted,
    plan_row_change,
    write_rows,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from paimon_index.table.rewrite import RewriteTask

__all__ = ["assigned", "balanced_groups", "delete", "delete_rows", "read_pinned", "rewrite_file_index",
           "update", "update_rows"]

#: What every task returns: its pickled commit messages and how many table rows it marked deleted.
MESSAGE_SCHEMA = "message binary, rows long"
CatalogOptions = Mapping[str, str] | None


def read_pinned(spark: SparkSession, warehouse: str, table: str, plan: RowChangePlan,
                catalog_options: CatalogOptions = None) -> DataFrame:
    """The table at the planned snapshot, with the metadata columns."""
    # Pushdown forced on: every scan of this DataFrame (UPDATE scans it twice) pushes the same
    # filter, so the read plan Spark 4.1-4.3 share between them is right for each (docs/semantics.md).
    return (spark.read.format(SOURCE_NAME).options(**dict(catalog_options or {}))
            .option(WAREHOUSE, warehouse).option(METADATA, "true")
            .option(SNAPSHOT_ID, str(plan.snapshot_id)).option(FILTER_PUSHDOWN, "true").load(table))


def _pickled(messages: list[Any], rows: int = 0) -> pa.Table:
    kept: list[bytes | None] = [pickle.dumps(m) for m in messages if m is not None]
    if rows and not kept:
        kept = [None]  # the count must still reach the driver
    # A task's row count rides on its first message.
    counts = [rows] + [0] * (len(kept) - 1) if kept else []
    return pa.table({"message": pa.array(kept, pa.binary()), "rows": pa.array(counts, pa.int64())})


def _mark_task(plan: RowChangePlan) -> Callable[[tuple[Any, ...], pa.Table], pa.Table]:
    def mark(key: tuple[Any, ...], rows: pa.Table) -> pa.Table:
        partition, bucket = key[0].as_py(), key[1].as_py()
        return _pickled([mark_deleted(plan.bucket(partition, bucket), rows)], rows.num_rows)

    return mark


def _write_task(warehouse: str, table: str, catalog_options: CatalogOptions
                ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = [b for b in batches if b.num_rows]
        if rows:
            opened = open_table(warehouse, table, catalog_options=catalog_options)
            yield from _pickled(write_rows(opened, pa.Table.from_batches(rows))).to_batches()

    return write


def _mark_job(matched: DataFrame, plan: RowChangePlan) -> DataFrame:
    positions = matched.select(*METADATA_COLUMNS)
    return positions.groupBy(PARTITION_COLUMN, BUCKET_COLUMN).applyInArrow(_mark_task(plan), MESSAGE_SCHEMA)


def _collect(messages: DataFrame) -> tuple[list[Any], int]:
    """The tasks' commit messages and the number of rows they marked deleted."""
    rows = messages.collect()
    return ([pickle.loads(row.message) for row in rows if row.message is not None],
            sum(row.rows for row in rows))


def _commit(paimon_table: Any, plan: RowChangePlan, messages: DataFrame) -> RowChange:
    collected, rows = _collect(messages)
    snapshot = commit_row_change(paimon_table, plan, collected)
    return RowChange(snapshot, rows if snapshot is not None else 0)


def delete_rows(spark: SparkSession, table: str, where: str, *, warehouse: str,
                catalog_options: CatalogOptions = None) -> RowChange:
    """``DELETE FROM table WHERE where`` through deletion vectors: the new snapshot (None when no
    row matched) and the number of rows deleted."""
    paimon_table = open_table(warehouse, table, catalog_options=catalog_options)
    plan = plan_row_change(paimon_table)
    if plan is None:
        return RowChange(None, 0)
    matched = read_pinned(spark, warehouse, table, plan, catalog_options).filter(where)
    return _commit(paimon_table, plan, _mark_job(matched, plan))


def delete(spark: SparkSession, table: str, where: str, *, warehouse: str,
           catalog_options: CatalogOptions = None) -> int | None:
    """``DELETE FROM table WHERE where`` through deletion vectors; the new snapshot id or None."""
    return delete_rows(spark, table, where, warehouse=warehouse, catalog_options=catalog_options).snapshot_id


def assigned(value: Any) -> Column:
    """A SET value as a Spark column: a string is SQL expression text (``"'PAID'"`` is the string
    literal), anything else a constant."""
    from pyspark.sql import functions as F

    return F.expr(value) if isinstance(value, str) else F.lit(value)


def update_rows(spark: SparkSession, table: str, assignments: Mapping[str, Any], where: str, *,
                warehouse: str, catalog_options: CatalogOptions = None) -> RowChange:
    """``UPDATE table SET col = expr, ... WHERE where``: old rows marked deleted, new rows appended;
    the new snapshot (None when no row matched) and the number of rows updated. A value is SQL
    expression text when a string, else a constant (:func:`assigned`)."""
    from pyspark.sql import functions as F

    paimon_table = open_table(warehouse, table, catalog_options=catalog_options)
    columns = [field.name for field in paimon_table.fields]
    unknown = set(assignments) - set(columns)
    if unknown:
        raise InvalidOptionError(f"UPDATE sets unknown columns: {sorted(unknown)}")
    plan = plan_row_change(paimon_table)
    if plan is None:
        return RowChange(None, 0)
    matched = read_pinned(spark, warehouse, table, plan, catalog_options).filter(where)
    new_rows = matched.select(*[assigned(assignments[c]).cast(matched.schema[c].dataType).alias(c)
                                if c in assignments else F.col(c) for c in columns])
    written = new_rows.mapInArrow(_write_task(warehouse, table, catalog_options), MESSAGE_SCHEMA)
    return _commit(paimon_table, plan, _mark_job(matched, plan).unionAll(written))


def update(spark: SparkSession, table: str, assignments: Mapping[str, str], where: str, *,
           warehouse: str, catalog_options: CatalogOptions = None) -> int | None:
    """``UPDATE table SET col = expr, ... WHERE where``; the new snapshot id or None."""
    return update_rows(spark, table, assignments, where, warehouse=warehouse,
                       catalog_options=catalog_options).snapshot_id


def rewrite_file_index(spark: SparkSession, table: str, where: str | None = None, *, warehouse: str,
                       progress: bool = True, catalog_options: CatalogOptions = None) -> int | None:
    """Rebuild out-of-date file indexes as **one** Spark job, committed as one snapshot.

    The driver plans the files (those of the partitions ``where`` selects) and packs them into
    tasks of about equal bytes (:func:`balanced_groups`: ``min(files, 2 x defaultParallelism)``
    tasks, so one large file does not leave the other cores idle behind it); executors rebuild and
    compare each file's container (:func:`paimon_index.table.rewrite.rewrite_file`); one ``collect``
    brings the commit messages back, and the driver commits the changed ones together.
    ``progress`` prints ``files checked / total`` on stderr as tasks finish (an accumulator of
    files done, polled while the job runs).
    """
    from paimon_index.table.rewrite import commit_rewrite, plan_rewrite, rewrite_file

    paimon_table = open_table(warehouse, table, catalog_options=catalog_options)
    tasks = plan_rewrite(paimon_table, where)
    if not tasks:
        return None
    sc = spark.sparkContext
    slots = min(len(tasks), max(1, sc.defaultParallelism) * TASKS_PER_CORE)
    groups = [[tasks[i] for i in group]
              for group in balanced_groups([_file_bytes(t.meta) for t in tasks], slots)]
    files_done = sc.accumulator(0)

    def rebuild(part: Iterable[list[RewriteTask]]) -> Iterator[bytes]:
        opened = open_table(warehouse, table, catalog_options=catalog_options)
        for group in part:
            for task in group:
                yield pickle.dumps(rewrite_file(opened, task))
            files_done.add(len(group))

    # One element per partition: parallelize slices a list of n elements into n partitions evenly.
    job = sc.parallelize(groups, len(groups)).mapPartitions(rebuild)
    if progress:
        with _ProgressWhile(lambda: int(files_done.value), len(tasks), "rewrite_file_index"):
            pickled = job.collect()
    else:
        pickled = job.collect()
    messages = [pickle.loads(p) for p in pickled]
    return commit_rewrite(paimon_table, messages, snapshot_id=tasks[0].snapshot_id)


#: Tasks per core of ``rewrite_file_index``: a little more than one, so a core that finishes early
#: takes another group instead of idling behind the slowest one.
TASKS_PER_CORE = 2


def _file_bytes(meta: Any) -> int:
    return max(1, int(getattr(meta, "file_size", 0) or 0))  # an unknown size still weighs


def balanced_groups(sizes: Sequence[int], groups: int) -> list[list[int]]:
    """The indexes of ``sizes`` in at most ``groups`` groups of about equal total size.

    Largest first, each onto the group lightest so far (LPT scheduling: the heaviest group weighs
    at most 4/3 of the best possible split); empty groups are dropped. Runs on the driver over
    the planned files: one sort and one heap operation per file.
    """
    if groups < 1:
        raise ValueError(f"groups must be positive, got {groups}")
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    heap = [(0, g) for g in range(min(groups, len(sizes)))]
    members: list[list[int]] = [[] for _ in heap]
    for i in order:
        load, g = heapq.heappop(heap)
        members[g].append(i)
        heapq.heappush(heap, (load + sizes[i], g))
    return [m for m in members if m]


PROGRESS_INTERVAL_S = 0.5


class _ProgressWhile:
    """Prints ``done() / total`` on stderr every :data:`PROGRESS_INTERVAL_S` while the block runs."""

    def __init__(self, done: Callable[[], int], total: int, label: str) -> None:
        self.done, self.total, self.label = done, total, label
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(PROGRESS_INTERVAL_S):
            _progress(self.label, min(self.done(), self.total - 1), self.total)

    def __enter__(self) -> _ProgressWhile:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is None:
            _progress(self.label, self.total, self.total)


PROGRESS_WIDTH = 30


def _progress(label: str, done: int, total: int) -> None:
    filled = PROGRESS_WIDTH * done // total
    end = "\n" if done == total else ""
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (PROGRESS_WIDTH - filled)}] {done}/{total} files{end}")
    sys.stderr.flush()
