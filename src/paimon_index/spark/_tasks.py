"""What the Spark jobs of :mod:`paimon_index.spark.jobs` run on executors (private to them).

    mark_job(matched, plan, ...) -> DataFrame   DELETE/UPDATE: one task per bucket marks its rows
    write_job(rows, warehouse, table) -> DataFrame   UPDATE: tasks write the new rows' data files
    change_job(rows, warehouse, table, ...) -> DataFrame   merge-on-read changes: tasks write level 0
    collect(messages) -> (commit messages, rows)     the driver's half: what the tasks returned
    counted(spark, df) -> (df, RowCount)        rows of a DataFrame, counted as a job runs it
    with_bucket(df, paimon_table, ...) -> DataFrame  upsert: each row's Paimon bucket as a column
    dynamic_upsert_job(spark, df, ...) -> list  upsert of a dynamic-bucket table: route, assign, write
    rebuild_job(spark, groups, ...) -> list     rewrite_file_index: tasks rebuild their files' indexes
    pk_compact_job(spark, works, ...) -> list   primary-key compaction: tasks rewrite their buckets
    balanced_groups(sizes, groups)              items packed by bytes into groups of about equal size
    packed(spark, items, sizes) -> groups       the groups of the byte-balanced jobs above and below
    compact_job(spark, tasks, schema, ...) -> list   append compaction: tasks rewrite their groups
    ProgressWhile(done, total, label)           a progress bar on stderr while a job runs

Every task works through the table layer (:mod:`paimon_index.table.row_level`,
:mod:`paimon_index.table.pk`, :mod:`paimon_index.table.rewrite`), exactly as the
:class:`paimon_index.Table` verbs do in one process; tasks return pypaimon commit messages
(pickled) and the driver commits them.
"""

from __future__ import annotations

import heapq
import pickle
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

from paimon_index.spark import _connect
from paimon_index.table import pk
from paimon_index.table.catalog import open_table
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import (
    BUCKET_COLUMN,
    FILE_PATH_COLUMN,
    METADATA_COLUMNS,
    PARTITION_COLUMN,
    ROW_INDEX_COLUMN,
)
from paimon_index.table.row_level import RowChangePlan, bucket_plan, mark_positions, write_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from paimon_index.table.append_compaction import CompactGroup
    from paimon_index.table.pk.compaction import BucketCompacted, BucketWork
    from paimon_index.table.rewrite import RewriteTask
    from paimon_index.table.schemas import ReadSchema

CatalogOptions = Mapping[str, str] | None
T = TypeVar("T")
#: What every row-change task returns: its pickled commit messages and how many table rows it
#: marked deleted.
MESSAGE_SCHEMA = "message binary, rows long"
#: :func:`_fold`: positions per folded row (8 MiB of int64), far below Arrow's 2 GiB binary value.
FOLD_POSITIONS = 1 << 20
_POSITIONS = "__paimon_positions"
_FOLDED_SCHEMA = StructType([StructField(FILE_PATH_COLUMN, StringType()),
                             StructField(_POSITIONS, BinaryType()),
                             StructField(PARTITION_COLUMN, StringType()),
                             StructField(BUCKET_COLUMN, IntegerType())])
_FOLDED_ARROW = pa.schema([(FILE_PATH_COLUMN, pa.string()), (_POSITIONS, pa.binary()),
                          (PARTITION_COLUMN, pa.string()), (BUCKET_COLUMN, pa.int32())])
#: The upsert's shuffle key: the Paimon bucket of the row.
UPSERT_BUCKET_COLUMN = "__paimon_index_bucket__"
#: The observed metric of :func:`counted`.
_ROWS_SEEN = "rows"


# -- DELETE / UPDATE by position -----------------------------------------------------------------
def _pickled(messages: list[Any], rows: int = 0) -> pa.Table:
    kept: list[bytes | None] = [pickle.dumps(m) for m in messages if m is not None]
    if rows and not kept:
        kept = [None]  # the count must still reach the driver
    # A task's row count rides on its first message.
    counts = [rows] + [0] * (len(kept) - 1) if kept else []
    return pa.table({"message": pa.array(kept, pa.binary()), "rows": pa.array(counts, pa.int64())})


def _fold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task's matched rows folded into one row per (data file, partition, bucket): the positions
    as the bytes of an int64 array (at most :data:`FOLD_POSITIONS` a row), so the shuffle to the
    bucket tasks moves a few rows per task, not one per matched row."""
    found: dict[tuple[Any, Any, Any], list[np.ndarray]] = {}
    for batch in batches:
        if not batch.num_rows:
            continue
        positions = batch.column(ROW_INDEX_COLUMN).to_numpy(zero_copy_only=False).astype(np.int64)
        keys = pa.table({"f": batch.column(FILE_PATH_COLUMN), "p": batch.column(PARTITION_COLUMN),
                         "b": batch.column(BUCKET_COLUMN), "i": np.arange(batch.num_rows)})
        distinct = keys.group_by(["f", "p", "b"], use_threads=False).aggregate([])
        if distinct.num_rows == 1:  # the usual batch: one file's rows
            only = distinct.to_pylist()[0]
            found.setdefault((only["f"], only["p"], only["b"]), []).append(positions)
            continue
        for group in keys.group_by(["f", "p", "b"], use_threads=False).aggregate([("i", "list")]).to_pylist():
            chosen = np.asarray(group["i_list"], dtype=np.int64)
            found.setdefault((group["f"], group["p"], group["b"]), []).append(positions[chosen])
    out: dict[str, list[Any]] = {name: [] for name in _FOLDED_ARROW.names}
    for (path, partition, bucket), chunks in found.items():
        merged = np.concatenate(chunks)
        for first in range(0, len(merged), FOLD_POSITIONS):
            out[FILE_PATH_COLUMN].append(path)
            out[_POSITIONS].append(merged[first:first + FOLD_POSITIONS].tobytes())
            out[PARTITION_COLUMN].append(partition)
            out[BUCKET_COLUMN].append(bucket)
    if out[_POSITIONS]:
        yield pa.RecordBatch.from_pydict(out, schema=_FOLDED_ARROW)


def _mark_task(plan: RowChangePlan, warehouse: str, table: str,
               catalog_options: CatalogOptions) -> Callable[[tuple[Any, ...], pa.Table], pa.Table]:
    # The task gets the buckets' plain plans, never the plan itself (its pinned snapshot is pypaimon's).
    buckets, snapshot_id = plan.buckets, plan.snapshot_id

    def mark(key: tuple[Any, ...], rows: pa.Table) -> pa.Table:
        partition, bucket = key[0].as_py(), key[1].as_py()
        by_file: dict[str, list[np.ndarray]] = {}
        for path, blob in zip(rows.column(FILE_PATH_COLUMN).to_pylist(), rows.column(_POSITIONS).to_pylist(),
                              strict=True):
            by_file.setdefault(path, []).append(np.frombuffer(blob, dtype=np.int64))
        positions = {path: np.concatenate(chunks) for path, chunks in by_file.items()}
        marked = sum(len(p) for p in positions.values())
        planned = bucket_plan(buckets, snapshot_id, partition, bucket)
        opened = open_table(warehouse, table, catalog_options=catalog_options)  # its partition fields
        return _pickled(mark_positions(opened, planned, positions), marked)

    return mark


def mark_job(matched: DataFrame, plan: RowChangePlan, warehouse: str, table: str,
             catalog_options: CatalogOptions) -> DataFrame:
    """The matched rows' positions marked in their buckets' vectors, one task per bucket
    (:func:`paimon_index.table.row_level.mark_positions`, each writing the bucket's new DV index
    file); copy-on-write, one task per data file, rewritten without them. Each task of ``matched``
    first folds its rows per data file (:func:`_fold`): the shuffle carries position arrays, not a
    row (and a file path) per matched row. The tasks receive the
    buckets' plain plans (:class:`~paimon_index.table.row_level.BucketPlan`) and open the table for
    its partition fields."""
    positions = matched.select(*METADATA_COLUMNS).mapInArrow(_fold, _FOLDED_SCHEMA)
    # Copy-on-write rewrites whole files: one task per file, not per bucket (an unaware-bucket
    # table's partition is one bucket of many files).
    copy_on_write = any(b.files is not None for b in plan.buckets.values())
    keys = (PARTITION_COLUMN, BUCKET_COLUMN, *([FILE_PATH_COLUMN] if copy_on_write else []))
    return positions.groupBy(*keys).applyInArrow(_mark_task(plan, warehouse, table, catalog_options),
                                                 MESSAGE_SCHEMA)


def write_job(rows: DataFrame, warehouse: str, table: str, catalog_options: CatalogOptions) -> DataFrame:
    """``rows`` written as new data files with their indexes, by the tasks holding them."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        kept = [b for b in batches if b.num_rows]
        if kept:
            opened = open_table(warehouse, table, catalog_options=catalog_options)
            yield from _pickled(write_rows(opened, pa.Table.from_batches(kept))).to_batches()

    return rows.mapInArrow(write, MESSAGE_SCHEMA)


def change_job(rows: DataFrame, warehouse: str, table: str, catalog_options: CatalogOptions, *,
               kind: str, operation: str) -> DataFrame:
    """A merge-on-read change (:mod:`paimon_index.spark.merge_on_read`): each task writes its rows
    (every row of a bucket in one task) as level-0 key-value files
    (:func:`paimon_index.table.pk.merge_on_read.prepare_changes`) and returns their messages and
    its row count."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        kept = [b for b in batches if b.num_rows]
        if kept:
            from paimon_index.table.pk.merge_on_read import prepare_changes

            opened = open_table(warehouse, table, catalog_options=catalog_options)
            change = pa.Table.from_batches(kept)
            messages = prepare_changes(opened, change, kind=kind, operation=operation)
            yield from _pickled(messages, change.num_rows).to_batches()

    return rows.mapInArrow(write, MESSAGE_SCHEMA)


def overwrite_job(rows: DataFrame, warehouse: str, table: str, catalog_options: CatalogOptions) -> DataFrame:
    """A primary-key ``INSERT OVERWRITE``: each task writes the rows of its buckets (every row of a
    bucket in one task) -- deletion-vectors mode: the last row per key placed in levels >= 1
    (:func:`paimon_index.table.pk.overwrite.prepare_overwrite`); merge-on-read: level-0 key-value files
    -- and returns their messages and its row count."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        kept = [b for b in batches if b.num_rows]
        if kept:
            from paimon_index.table.pk.overwrite import prepare_overwrite

            opened = open_table(warehouse, table, catalog_options=catalog_options)
            data = pa.Table.from_batches(kept)
            messages = prepare_overwrite(opened, data)
            yield from _pickled(messages, data.num_rows).to_batches()

    return rows.mapInArrow(write, MESSAGE_SCHEMA)


def collect(messages: DataFrame, what: str = "a Spark write of paimon-index") -> tuple[list[Any], int]:
    """The tasks' commit messages and the number of rows they marked deleted (runs the job; a
    task's error as :func:`~paimon_index.spark._connect.task_errors` raises it)."""
    with _connect.task_errors(what):
        rows = messages.collect()
    return ([pickle.loads(row.message) for row in rows if row.message is not None],
            sum(row.rows for row in rows))


# -- upsert --------------------------------------------------------------------------------------
class RowCount:
    """The row count an :class:`pyspark.sql.Observation` saw, read as ``.value`` once the action ran
    (reading it before blocks until then)."""

    def __init__(self, observation: Any) -> None:
        self._observation = observation

    @property
    def value(self) -> int:
        return int(self._observation.get.get(_ROWS_SEEN) or 0)


def counted(spark: SparkSession, df: DataFrame) -> tuple[DataFrame, RowCount]:
    """``df`` passed through unchanged, and its row count once an action ran it (no second scan of
    ``df``, whose source may not give the same rows twice).

    Counted by an observation (``df.observe``: Spark sums a count as the rows pass, and the driver
    -- or the Connect client -- gets it with the action's result), which classic PySpark and Spark
    Connect both have; an accumulator needs a SparkContext, which a Connect client has not.
    """
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    del spark
    observation = Observation()
    return df.observe(observation, F.count(F.lit(1)).alias(_ROWS_SEEN)), RowCount(observation)


def with_bucket(df: DataFrame, paimon_table: Any, warehouse: str, table: str,
                catalog_options: CatalogOptions) -> DataFrame:
    """``df`` with each row's Paimon bucket in :data:`UPSERT_BUCKET_COLUMN` (pypaimon's bucket
    function, fixed-bucket tables). An Arrow UDF of the bucket-key columns only: Spark sends Python
    those columns and keeps the rest of each row (a ``mapInArrow`` of every column took 0.84 s for
    2M rows of five columns where this takes 0.53 s)."""
    from pyspark.sql import functions as F

    from paimon_index.table.paimon import bucket_key_names

    def buckets(keys: Iterator[pa.Array]) -> Iterator[pa.Array]:
        opened = open_table(warehouse, table, catalog_options=catalog_options)
        for struct in keys:
            rows = pa.Table.from_batches([pa.RecordBatch.from_struct_array(struct)])
            yield pk.buckets_of(opened, rows)

    bucket = F.arrow_udf(buckets, IntegerType())  # type: ignore[call-overload]
    key = F.struct(*[F.col(_connect.quoted(n)) for n in bucket_key_names(paimon_table)])
    return df.withColumn(UPSERT_BUCKET_COLUMN, bucket(key))


def bucket_owned(df: DataFrame, paimon_table: Any, warehouse: str, table: str,
                 catalog_options: CatalogOptions,
                 partitions: int) -> DataFrame:
    """``df`` repartitioned so that every row of a Paimon bucket reaches one task: fixed buckets
    shuffled by (bucket, partition) into ``partitions`` tasks (:func:`with_bucket`); any other
    layout into one task (a dynamic-bucket table's HASH index assigns its new keys there)."""
    from paimon_index.table.paimon import bucket_number

    if bucket_number(paimon_table) <= 0:
        return df.repartition(1)
    keyed = with_bucket(df, paimon_table, warehouse, table, catalog_options)
    return keyed.repartition(partitions, UPSERT_BUCKET_COLUMN, *paimon_table.partition_keys) \
        .drop(UPSERT_BUCKET_COLUMN)


def dynamic_upsert_job(df: DataFrame, warehouse: str, table: str, catalog_options: CatalogOptions,
                       snapshot_id: int | None, assigners: int, partitions: int,
                       partition_keys: Sequence[str], *, merge: bool = False, records: bool = False,
                       delete_keys: bool = False) -> list[Any]:
    """The upsert of a dynamic-bucket table as Paimon distributes it
    (:mod:`paimon_index.table.pk.dynamic`): tasks route each row by its key hash to an assigner,
    a shuffle brings each assigner's rows to one task which assigns buckets from the HASH index of
    ``snapshot_id``, a second shuffle by (partition, bucket) gives each bucket to one task which
    writes its rows, extends its HASH index and looks its keys up. Runs the job; returns every
    task's :class:`~paimon_index.table.pk.upsert.PreparedUpsert` (the driver commits them).
    ``merge``: the table's merge engine merges each key's rows (assigners) and its old row (writers).
    ``records`` (``changelog-producer`` = ``input``): the assigners pass every record on with its
    key's bucket, unmerged; the writers take them as their buckets' changelog, then fold them
    (``delete_keys``: a DELETE's rows)."""
    from paimon_index.table.pk import dynamic

    def routed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        opened = open_table(warehouse, table, catalog_options=catalog_options)
        for batch in batches:
            if batch.num_rows:
                yield from dynamic.route(opened, pa.Table.from_batches([batch]), assigners).to_batches()

    def assigned(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        kept = [b for b in batches if b.num_rows]
        if kept:
            opened = open_table(warehouse, table, catalog_options=catalog_options)
            rows = pa.Table.from_batches(kept)
            yield from dynamic.assign(opened, snapshot_id, rows, assigners, merge=merge,
                                      records=records).to_batches()

    def prepared(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        kept = [b for b in batches if b.num_rows]
        if kept:
            opened = open_table(warehouse, table, catalog_options=catalog_options)
            result = dynamic.prepare(opened, snapshot_id, pa.Table.from_batches(kept), merge=merge,
                                     records=records, delete_keys=delete_keys)
            if result is not None:
                pickled = pa.array([pickle.dumps(result)], pa.binary())
                yield pa.RecordBatch.from_arrays([pickled], ["prepared"])

    with_hash = StructType([*df.schema.fields, StructField(dynamic.KEY_HASH_COLUMN, IntegerType()),
                            StructField(dynamic.ASSIGNER_COLUMN, IntegerType())])
    with_bucket = StructType([*with_hash.fields, StructField(dynamic.BUCKET_COLUMN, IntegerType())])
    stage = df.mapInArrow(routed, with_hash).repartition(assigners, dynamic.ASSIGNER_COLUMN)
    stage = stage.mapInArrow(assigned, with_bucket) \
        .repartition(partitions, dynamic.BUCKET_COLUMN, *partition_keys)
    with _connect.task_errors(f"upsert into {table}"):
        rows = stage.mapInArrow(prepared, "prepared binary").collect()
    return [pickle.loads(row.prepared) for row in rows]


# -- rewrite_file_index --------------------------------------------------------------------------
#: Tasks per core of the byte-balanced jobs (rewrite_file_index, compactions): a little more than
#: one, so a core that finishes early takes another group instead of idling behind the slowest one.
TASKS_PER_CORE = 2


def file_bytes(meta: Any) -> int:
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


def rebuild_job(spark: SparkSession, groups: list[list[RewriteTask]], files_done: Any, warehouse: str,
                table: str, catalog_options: CatalogOptions) -> list[bytes]:
    """One task per group: rebuild and compare each file's container
    (:func:`paimon_index.table.rewrite.rewrite_file`); runs the job and returns every file's pickled
    outcome (:class:`~paimon_index.table.rewrite.RewrittenIndex`, None: up to date; the driver
    makes the commit messages). ``files_done`` (an accumulator, or None -- Spark Connect has none)
    counts the files done as groups finish."""
    from paimon_index.table.rewrite import rewrite_file

    def rebuild(group: list[RewriteTask]) -> Iterator[bytes]:
        opened = open_table(warehouse, table, catalog_options=catalog_options)
        for task in group:
            yield pickle.dumps(rewrite_file(opened, task))
        if files_done is not None:
            files_done.add(len(group))

    return _connect.run_tasks(spark, groups, rebuild, f"rewrite_file_index of {table}")


def packed(spark: SparkSession, items: Sequence[T], sizes: Sequence[int]) -> list[list[T]]:
    """``items`` in at most ``TASKS_PER_CORE`` x Spark's parallelism groups of about equal total
    ``sizes`` (:func:`balanced_groups`): one Spark task each."""
    slots = min(len(items), _connect.parallelism(spark) * TASKS_PER_CORE)
    return [[items[i] for i in group] for group in balanced_groups(sizes, slots)]


# -- append compaction ---------------------------------------------------------------------------
def compact_job(spark: SparkSession, tasks: list[list[tuple[int, CompactGroup]]], schema: ReadSchema,
                warehouse: str, table: str, catalog_options: CatalogOptions) -> list[tuple[int, list[Any]]]:
    """One Spark task per list of (group index, group): each rewrites its groups
    (:func:`paimon_index.table.append_compaction.rewrite_group`) and returns the new files' metas;
    runs the job and returns (group index, new files) of every group. A task gets plain values
    only (the groups' :class:`~paimon_index.table.files.FilePlan`s and the detached schema)."""
    from paimon_index.table.append_compaction import rewrite_group

    def rewrite(work: list[tuple[int, CompactGroup]]) -> Iterator[bytes]:
        opened = open_table(warehouse, table, catalog_options=catalog_options)
        for index, group in work:
            yield pickle.dumps((index, rewrite_group(opened, group, schema)))

    return [pickle.loads(p) for p in _connect.run_tasks(spark, tasks, rewrite, f"compaction of {table}")]


# -- primary-key compaction ----------------------------------------------------------------------
def pk_compact_job(spark: SparkSession, works: list[BucketWork], warehouse: str, table: str,
                catalog_options: CatalogOptions) -> list[BucketCompacted]:
    """Primary-key compaction: the buckets' work (plain values) packed by bytes into at most
    ``TASKS_PER_CORE x defaultParallelism`` tasks; each task rewrites its buckets
    (:func:`paimon_index.table.pk.compaction.compact_buckets`, the Python path's own function) and
    returns their outcomes. Runs the job; the driver commits."""
    from paimon_index.table.pk.compaction import compact_buckets

    groups = packed(spark, works, [w.weight for w in works])

    def run(group: list[BucketWork]) -> Iterator[bytes]:
        opened = open_table(warehouse, table, catalog_options=catalog_options)
        io = TableIO.of(opened)
        for done in compact_buckets(opened, group, io):
            yield pickle.dumps(done)

    return [pickle.loads(p) for p in _connect.run_tasks(spark, groups, run, f"compaction of {table}")]


PROGRESS_INTERVAL_S = 0.5
PROGRESS_WIDTH = 30


class ProgressWhile:
    """Prints ``done() / total`` on stderr every :data:`PROGRESS_INTERVAL_S` while the block runs."""

    def __init__(self, done: Callable[[], int], total: int, label: str) -> None:
        self.done, self.total, self.label = done, total, label
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(PROGRESS_INTERVAL_S):
            _progress(self.label, min(self.done(), self.total - 1), self.total)

    def __enter__(self) -> ProgressWhile:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is None:
            _progress(self.label, self.total, self.total)


def _progress(label: str, done: int, total: int) -> None:
    filled = PROGRESS_WIDTH * done // total
    end = "\n" if done == total else ""
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (PROGRESS_WIDTH - filled)}] {done}/{total} files{end}")
    sys.stderr.flush()
