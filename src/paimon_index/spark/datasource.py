"""``paimon_index``: a PySpark Python data source that reads Paimon tables through their indexes.

    spark = local_session()          # registers the source
    df = (spark.read.format("paimon_index")
          .option("warehouse", "/path/to/warehouse")
          .load("db.orders")
          .filter("status = 'PAID' AND score >= 90"))

Every query returns exactly the rows Spark returns over the same data (``spark.read.parquet``),
whatever its shape: self-joins, subqueries, a DataFrame or view scanned again, cached DataFrames.

Read options (strings; keys ignore case; a key that is not listed here nor a catalog option is an
error naming the nearest valid key, see :mod:`paimon_index.spark.options`):

- ``warehouse`` (required); the path given to ``load`` is the table identifier ``db.table``;
- ``filter-pushdown``: ``auto`` (default), ``true`` or ``false`` -- see *Pushdown* below;
- ``file-index.read.enabled`` (``true``; ``false`` reads without indexes, for comparison);
- ``topn`` + ``limit`` (e.g. ``"score DESC NULLS LAST"`` and ``"10"``): each data file yields only
  its range-bitmap TopN candidates among its matching, not deleted rows; the query must still say
  ``.orderBy(...).limit(k)``, whose result then equals the full sort (Spark offers Python sources no
  ORDER BY ... LIMIT hook, so this is an explicit hint). It is used only when pushdown took every
  filter Spark offered; otherwise the scan returns every matching row (exact, slower). Filters Spark
  never offers a Python source (an OR, ``score + 1 = 50``) must not be combined with ``topn``;
- ``metadata-columns`` (``true`` adds ``__paimon_file_path``, ``__paimon_row_index``,
  ``__paimon_partition``, ``__paimon_bucket``: where each row lives, the key of row-level changes);
- ``scan.snapshot-id`` (a positive integer: read that snapshot instead of the latest);
- ``scan-report`` (the ``name`` of :func:`paimon_index.spark.report.scan_report`: the driver's
  planning and every task add what they pruned to that Spark accumulator -- works on a cluster);
- catalog options: every key starting ``fs.`` (``fs.s3.endpoint``, ``fs.s3.accessKeyId`` ...) is
  passed to pypaimon's catalog, with pypaimon's spelling of the key.

Columns: every column of the table, scalar and nested (ROW, ARRAY, MAP) alike, all nullable;
timestamps in microseconds as Spark keeps them. Indexes and pushed filters apply to top-level
scalar columns; a filter on a nested column or field is always Spark's.

Writing: ``df.write.format("paimon_index").option("warehouse", W).mode("append").save("db.t")``
(write options: ``warehouse``, ``bucket-exclusive``, catalog options ``fs.*``); each Spark task
writes its rows with pypaimon's writer (the table's partitions and buckets) and builds every new
data file's index (embedded or ``<data-file>.index``, see :mod:`paimon_index.table.write`); the
task's commit messages travel to the driver, which commits all of them as **one** snapshot. A failed
job commits nothing. ``mode("overwrite")`` replaces the table's contents in that one snapshot (on a
partitioned table only the partitions written, as Paimon's ``dynamic-partition-overwrite = true``
default does; set it to ``false`` for the whole table).

Partitioning: one input partition per pypaimon split of the snapshot read (planned on the driver;
a split carries its data files, their embedded indexes and deletion-vector ranges, and is pickled
to the executor). With pushed filters, the driver plans without the files whose value statistics
(min/max/null counts, :func:`paimon_index.table.stats.plan_splits`) prove no row matches, counted
as ``files_skipped_by_stats``; it drops the files whose *embedded* index answers SKIP, and splits left
empty (when none is left, Spark reads one empty partition); executors evaluate ``.index`` files,
open the data files and yield Arrow batches.

Pushdown: Spark hands a Python source the top-level conjuncts of a query's filter. With pushdown
on, ``pushFilters`` turns each it can evaluate exactly into our predicate (``=``, ``<=>``, ``<``,
``<=``, ``>``, ``>=``, ``IN``, ``IS [NOT] NULL``, ``STARTS WITH``, ``ENDS WITH``, ``CONTAINS``, and
``NOT`` of those, with SQL's NULL semantics: ``NOT (c <=> 5)`` keeps the NULL rows, ``NOT (c IN (1,
NULL))`` keeps none) and ANDs them; the file indexes answer it, deletion vectors are subtracted and
the predicate is applied exactly to the rows read, so Spark does not re-check the filters taken.
Filters on FLOAT/DOUBLE columns other than ``IS [NOT] NULL`` (NaN and -0.0 compare differently in
Spark), on nested columns and fields, string matches under ``NOT``, and ORs are left to Spark.

**Where pushdown is on.** Spark 4.1 to 4.3 keep the read plan a Python source makes while filters
are pushed (the predicate and the pruned splits) on the *relation*, not on the scan: every scan of
the same DataFrame, view or table reference -- the other side of a self-join, a subquery, the next
query on a reused DataFrame -- reads the plan of the last scan that pushed filters. No choice of a
source can make that exact, so ``filter-pushdown = auto`` is **off** there: every filter is handed
back to Spark, the plan prunes nothing, rows are exact, and the indexes are not used by Spark
queries (they still are by :func:`paimon_index.table.read.read_arrow`). ``auto`` turns it on from
the first Spark release that keeps the plan in the scan (:data:`~paimon_index.spark.options.
SCAN_SCOPED_PUSHDOWN_SINCE`, apache/spark master's ``PythonScanBuilder``). ``filter-pushdown =
true`` forces it on anywhere: exact only if every DataFrame loaded is scanned once, by one query
(load a fresh DataFrame per query, do not join or subquery it with itself, do not cache it).

Append tables, with or without deletion vectors (32- and 64-bit), and primary-key tables in
deletion-vectors mode; see :mod:`paimon_index.table.read` for the read path. A primary-key table
without deletion vectors (merge-on-read) is read one (partition, bucket) per task, its rows of the
pinned snapshot merged by key there (:class:`MergedPartition`); no index prunes it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)
from pyspark.sql.types import DataType as SparkType

from paimon_index.errors import InvalidOptionError, PaimonIndexError
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, And, Leaf, Op, Or, Predicate, and_, bind, or_
from paimon_index.spark.options import (
    BUCKET_EXCLUSIVE,
    FILTER_PUSHDOWN,
    METADATA,
    READ_ENABLED,
    SNAPSHOT_ID,
    WAREHOUSE,
    ReadOptions,
    WriteOptions,
    parse_read_options,
    parse_write_options,
    pushdown_safe,
)
from paimon_index.types import DataType, TypeRoot

if TYPE_CHECKING:  # the table layer loads in the driver's planning and in tasks, not on import
    from paimon_index.table.files import FilePlan

__all__ = ["BUCKET_EXCLUSIVE", "FILTER_PUSHDOWN", "METADATA", "READ_ENABLED", "SNAPSHOT_ID", "SOURCE_NAME",
           "WAREHOUSE", "PaimonIndexDataSource", "metadata_fields", "pushdown_safe",
           "spark_filter_to_predicate", "spark_type"]

SOURCE_NAME = "paimon_index"
#: Spark's timestamps (with and without time zone) in the Arrow batches a Python source returns.
SPARK_ARROW_TIMEZONE = "UTC"
#: Literal-taking operators that may be negated leaf by leaf (SQL: NOT (c op v) is NULL, so the row
#: is dropped, exactly when c is NULL, as for the negated operator).
_NEGATED = {Op.EQ: Op.NE, Op.NE: Op.EQ, Op.GT: Op.LE, Op.GE: Op.LT, Op.LT: Op.GE, Op.LE: Op.GT,
            Op.IS_NULL: Op.IS_NOT_NULL, Op.IS_NOT_NULL: Op.IS_NULL}
_COMPARISONS = {EqualTo: Op.EQ, GreaterThan: Op.GT, GreaterThanOrEqual: Op.GE, LessThan: Op.LT,
                LessThanOrEqual: Op.LE, StringStartsWith: Op.STARTS_WITH, StringEndsWith: Op.ENDS_WITH,
                StringContains: Op.CONTAINS}
_STRING, _BIGINT, _INT = StringType(), LongType(), IntegerType()


def spark_type(dtype: DataType) -> str:
    """The Spark SQL type of a Paimon type."""
    simple = {TypeRoot.TINYINT: "tinyint", TypeRoot.SMALLINT: "smallint", TypeRoot.INT: "int",
              TypeRoot.BIGINT: "bigint", TypeRoot.FLOAT: "float", TypeRoot.DOUBLE: "double",
              TypeRoot.BOOLEAN: "boolean", TypeRoot.DATE: "date", TypeRoot.CHAR: "string",
              TypeRoot.VARCHAR: "string", TypeRoot.BINARY: "binary", TypeRoot.VARBINARY: "binary",
              TypeRoot.TIMESTAMP: "timestamp_ntz", TypeRoot.TIMESTAMP_LTZ: "timestamp"}
    if dtype.root is TypeRoot.DECIMAL:
        return f"decimal({dtype.precision}, {dtype.scale})"
    if dtype.root not in simple:
        raise PaimonIndexError(f"type {dtype} has no Spark mapping in this source yet")
    return simple[dtype.root]


def _column(f: Filter) -> str | None:
    path = f.attribute  # type: ignore[attr-defined]
    return path[0] if len(path) == 1 else None  # nested fields carry no file index


def _negate(p: Predicate) -> Predicate | None:
    """NOT p under SQL's three-valued logic (a row is kept only when NOT p is TRUE), or None."""
    if p in (ALWAYS_TRUE, ALWAYS_FALSE):
        return None  # "never TRUE" may be FALSE or NULL: its negation is not known
    if isinstance(p, Leaf):
        if p.op in _NEGATED:
            return Leaf(_NEGATED[p.op], p.column, p.literals)
        if p.op is Op.IN:  # literals are never NULL here (see _in)
            return Leaf(Op.NOT_IN, p.column, p.literals)
        return None  # NOT of a string match: no operator of ours; Spark applies it
    assert isinstance(p, And | Or)  # the constants returned above
    # The null-safe forms below are ORs and ANDs of leaves whose NULL rows are settled; NOT (a OR b)
    # = NOT a AND NOT b holds in three-valued logic, and so does its dual.
    children = [_negate(c) for c in p.children]
    if any(c is None for c in children):
        return None
    return and_(*children) if isinstance(p, Or) else or_(*children)  # type: ignore[arg-type]


def _in(column: str, values: Any) -> Predicate:
    """``column IN values``: TRUE only for a non-NULL listed value (a NULL in the list matches nothing,
    it only turns FALSE into NULL, which drops the row just the same)."""
    listed = tuple(v for v in values if v is not None)
    return Leaf(Op.IN, column, listed) if listed else ALWAYS_FALSE


def spark_filter_to_predicate(f: Filter) -> Predicate | None:
    """Our predicate for one Spark filter, exact under SQL's NULL semantics, or None (Spark applies it).

    A row is kept when the filter is TRUE; FALSE and NULL both drop it. So ``c <> v`` drops NULL
    rows like ``c = v`` does, but ``NOT (c <=> v)`` is TRUE for a NULL ``c`` (``c IS NULL OR c <> v``),
    and ``NOT (c IN (1, NULL))`` is never TRUE.
    """
    if isinstance(f, Not):
        if isinstance(f.child, In) and any(v is None for v in f.child.value):
            return ALWAYS_FALSE if _column(f.child) is not None else None
        inner = spark_filter_to_predicate(f.child)
        return None if inner is None else _negate(inner)
    column = _column(f)
    if column is None:
        return None
    if isinstance(f, IsNull | IsNotNull):
        return Leaf(Op.IS_NULL if isinstance(f, IsNull) else Op.IS_NOT_NULL, column)
    if isinstance(f, In):
        return _in(column, f.value)
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return Leaf(Op.IS_NULL, column)
        # Same rows as c = v (never NULL-true); its negation must keep the NULL rows, see _negate.
        return and_(Leaf(Op.IS_NOT_NULL, column), Leaf(Op.EQ, column, (f.value,)))
    op = _COMPARISONS.get(type(f))
    value = getattr(f, "value", None)
    if op is None or value is None:
        return None  # c = NULL and the like are never TRUE; Spark folds them, and applies the rest
    return Leaf(op, column, (value,))


def _exact_in_arrow(p: Predicate, schema: dict[str, DataType]) -> bool:
    """Whether our evaluation (indexes, then Arrow compute) gives Spark's answer for ``p``."""
    if isinstance(p, Leaf):
        dtype = schema.get(p.column)
        # A ROW/ARRAY/MAP column (even under IS NULL) has no index key nor Arrow evaluation here.
        # FLOAT/DOUBLE leaves are exact: the Arrow re-check (arrow_filter), the indexes (the zero
        # rewrite of fileindex.evaluate) and the statistics (min only) follow Spark's order, NaN
        # largest, NaN = NaN, -0.0 = 0.0 (tests/spark/test_datasource.py checks it against Spark).
        return not (dtype is None or dtype.is_nested)
    if not isinstance(p, And | Or):  # ALWAYS_TRUE, ALWAYS_FALSE
        return True
    return all(_exact_in_arrow(c, schema) for c in p.children)


def nullable_type(t: SparkType) -> SparkType:
    """``t`` with every field, element and value nullable (files may say NOT NULL; Spark must not
    rely on it, and a Python source's batches are checked against this exact schema)."""
    if isinstance(t, StructType):
        return StructType([StructField(f.name, nullable_type(f.dataType), True) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(nullable_type(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(nullable_type(t.keyType), nullable_type(t.valueType), True)
    return t


@dataclass(frozen=True)
class TableLayout:
    """What a read needs to know of the table (plain values, pickled to every task)."""

    #: Spark's schema of the rows returned (every column, then the metadata columns when asked).
    spark_schema: StructType
    #: The columns indexes and predicates can see (scalar types), by name: what pushFilters binds to.
    #: The planning and reading side use the table's own ReadSchema (with its history), which
    #: ``partitions()`` puts in every partition.
    index_schema: dict[str, DataType]
    #: The partition keys, when metadata columns are asked for.
    row_ids: tuple[str, ...] | None


@dataclass(frozen=True)
class SplitPartition(InputPartition):
    """The data files of one (partition, bucket) of the read plan, unresolved (their locations: the
    task reads their ``.index`` files and vectors itself), and what to do with them (pickled to an
    executor)."""

    files: tuple[FilePlan, ...]  # empty: nothing left to read, the partition only carries ``planned``
    predicate: Predicate
    use_index: bool
    apply_topn: bool
    #: The table's ReadSchema (current columns and the mapping of older files' columns).
    schema: dict[str, DataType]
    #: The table's FileIO seam (its pypaimon ``file_io`` pickles), so the task reads what the
    #: driver planned from the same warehouse, local or object store.
    io: Any = None
    #: What the driver pruned while planning (first partition only, with a ``scan-report``): the
    #: planning runs in no task, so the first task reports it.
    planned: Any = None


@dataclass(frozen=True)
class MergedPartition(InputPartition):
    """One (partition, bucket) of a primary-key table without deletion vectors: the task merges its
    rows of snapshot ``snapshot_id`` by key (pypaimon's merge read, the table's merge engine) and
    applies the pushed predicate exactly; no index prunes it. Plain values (pickled to a task)."""

    snapshot_id: int
    partition: tuple[Any, ...]
    bucket: int
    files: tuple[str, ...]
    predicate: Predicate
    schema: dict[str, DataType]


class PaimonIndexReader(DataSourceReader):
    def __init__(self, options: ReadOptions, layout: TableLayout) -> None:
        self.options = options
        self.layout = layout
        self.predicate: Predicate = ALWAYS_TRUE
        # TopN candidates are exact only among rows that pass *every* filter of the scan.
        self.all_filters_taken = True

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Take the filters we evaluate exactly; yield the others back for Spark to apply.

        With pushdown off (the default where Spark shares a pushed plan between scans) every
        filter is yielded back and the read plan prunes nothing, so whichever scan of the relation
        ends up using it gets every row and Spark's own filters give the exact answer.
        """
        taken = []
        for f in filters:
            bound = None
            if self.options.pushdown:
                predicate = spark_filter_to_predicate(f)
                try:
                    bound = None if predicate is None else bind(predicate, self.layout.index_schema)
                except PaimonIndexError:
                    bound = None  # e.g. a literal of another type: Spark keeps the filter
                if bound is not None and not _exact_in_arrow(bound, self.layout.index_schema):
                    bound = None
            if bound is None:
                self.all_filters_taken = False
                yield f
            else:
                taken.append(bound)
        self.predicate = and_(*taken)

    def partitions(self) -> Sequence[InputPartition]:
        from paimon_index.table.fileio import TableIO
        from paimon_index.table.pk import dv_mode
        from paimon_index.table.scan import plan_read

        table = _open_table(self.options)
        if table.is_primary_key_table and not dv_mode(table):
            return self._merged_partitions(table)
        # One plan, deferred: the driver drops the files whose value statistics, embedded index or
        # schema version rule the filters out; the tasks resolve the rest where the data is.
        plan = plan_read(table, self.predicate, use_index=self.options.use_index, defer=True)
        groups: dict[tuple[Any, ...], list[FilePlan]] = {}
        for f in plan.files:
            groups.setdefault((f.partition, f.bucket), []).append(f)
        apply_topn = self.all_filters_taken and self.options.topn is not None
        use_index = self.options.use_index
        io = TableIO.of(table) if plan.table is None else TableIO.of(plan.table)
        schema = plan.schema.detached({f.schema_id for f in plan.files})  # no pypaimon object in a task
        partitions = [SplitPartition(tuple(files), self.predicate, use_index, apply_topn, schema, io)
                      for files in groups.values()]
        if self.options.scan_report:
            # Always one partition at least, so the planning counts reach a task.
            first = partitions[0].files if partitions else ()
            partitions[:1] = [SplitPartition(first, self.predicate, use_index, apply_topn, schema, io,
                                             plan.report)]
        # No file left and no report: an empty list (Spark then reads one empty InputPartition).
        return partitions

    def _merged_partitions(self, table: Any) -> Sequence[InputPartition]:
        """A merge-on-read table: one partition per (partition, bucket) of the pinned snapshot."""
        from paimon_index.table.paimon import read_snapshot
        from paimon_index.table.pk.plan import plan_snapshot

        snapshot = read_snapshot(table)
        if snapshot is None:
            return []
        plan = plan_snapshot(table, snapshot, vectors=False)
        return [MergedPartition(int(snapshot.id), tuple(partition), int(bucket),
                                tuple(str(m.file_name) for m in files.files), self.predicate,
                                dict(self.layout.index_schema))
                for (partition, bucket), files in sorted(plan.buckets.items(), key=repr) if files.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        from paimon_index.spark.report import add_task_report
        from paimon_index.table.files import ScanReport
        from paimon_index.table.read import read_file_plans

        target = to_arrow_schema(self.layout.spark_schema, timezone=SPARK_ARROW_TIMEZONE)
        if isinstance(partition, MergedPartition):
            yield from self._read_merged(partition, target)
            return
        if not isinstance(partition, SplitPartition):
            return  # every file was ruled out: Spark reads the one empty partition it made instead
        report = ScanReport()
        topn = self.options.topn if partition.apply_topn and partition.use_index else None
        if partition.files:
            for batch in read_file_plans(partition.io, partition.files, partition.predicate, partition.schema,
                                         report, use_index=partition.use_index, topn=topn,
                                         row_ids=self.layout.row_ids):
                yield _as_spark_arrow(batch.select(target.names), target)
        if self.options.scan_report:
            if partition.planned is not None:
                report.merge(partition.planned)
            add_task_report(self.options.scan_report, report)


    def _read_merged(self, partition: MergedPartition, target: pa.Schema) -> Iterator[pa.RecordBatch]:
        from paimon_index.arrow_filter import filter_rows
        from paimon_index.table.pk.merge_on_read import merged_bucket_rows

        table = _open_table(self.options)
        rows = merged_bucket_rows(table, partition.snapshot_id, partition.partition, partition.bucket,
                                  partition.files)
        rows = filter_rows(rows, partition.predicate, partition.schema)
        for batch in rows.select(target.names).to_batches():
            if batch.num_rows:
                yield _as_spark_arrow(batch, target)


@dataclass(frozen=True)
class PaimonCommitMessages(WriterCommitMessage):
    """pypaimon commit messages of one Spark task (data files with their indexes attached)."""

    messages: list[Any]
    removed_keys: Any = None  # pa.Table of keys deleted by a primary-key upsert task
    prepared: Any = None  # PreparedUpsert: the task owned its buckets and did the lookup itself
    merged: Any = None  # pa.Table: a merge-engine task's rows merged by key, for the driver's upsert
    since: int | None = None  # the latest snapshot when the task started (0: none); see abort


class PaimonIndexWriter(DataSourceArrowWriter):
    """Executors write data files and their indexes; the driver commits them in one snapshot."""

    def __init__(self, options: WriteOptions, overwrite: bool = False,
                 renames: dict[str, str] | None = None, missing: tuple[str, ...] = ()) -> None:
        self.options = options
        self.overwrite = overwrite
        #: data column -> table column, where the names differ in case only (checked on the driver).
        self.renames = renames or {}
        #: nullable table columns the data does not give: written NULL.
        self.missing = missing

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessages:
        from dataclasses import replace

        from paimon_index.table.paimon import latest_snapshot

        table = _open_table(self.options)
        latest = latest_snapshot(table)
        # A commit of this task's files lands after this snapshot (abort looks from there on).
        since = 0 if latest is None else int(latest.id)
        return replace(self._write(table, iterator), since=since)

    def _write(self, table: Any, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessages:
        from paimon_index.table.pk import dv_mode, split_batch
        from paimon_index.table.write import attach_file_indexes, new_table_write, write_with

        if self.renames or self.missing:
            iterator = (_named(b, self.renames, self.missing) for b in iterator)
        if dv_mode(table) and not self.options.delete_keys:
            from paimon_index.table.pk.merge import merge_engine

            if merge_engine(table) is not None:  # partial-update / aggregation: old values merged in
                return self._write_merged(table, iterator)
        original = table
        if dv_mode(table):
            from paimon_index.table.pk.plan import writable

            table = writable(table)  # rows one per key (a DELETE's with delete_keys): no engine merge
        writer = new_table_write(table)
        try:
            if dv_mode(table):
                # One batch per task: the last row of a key decides, deletes are looked up later.
                batches = [b for b in iterator if b.num_rows]
                removed, inputs = None, None
                if batches:
                    data = pa.Table.from_batches(batches)
                    if self.options.bucket_exclusive:  # 'changelog-producer' = 'input': these records
                        from paimon_index.table.pk import input_records

                        inputs = input_records(original, data, delete_keys=self.options.delete_keys)
                    upserts, removed = split_batch(table, data)
                    if upserts.num_rows:
                        from paimon_index.table.pk.levels import write_kinded

                        write_kinded(writer, upserts)
                written = attach_file_indexes(table, writer.prepare_commit())
                if self.options.bucket_exclusive:
                    from paimon_index.table.pk import owned_buckets, prepare_upsert

                    scope = owned_buckets(table, written, removed)
                    # The table itself, not the writer's deduplicate copy: its checks and options
                    # (a DELETE of a partial-update table with 'sequence.field' was refused as a
                    # deduplicate table's).
                    return PaimonCommitMessages([], None, prepare_upsert(original, written, removed, scope,
                                                                         inputs=inputs))
                return PaimonCommitMessages(written, removed)
            for batch in iterator:
                if batch.num_rows:
                    write_with(writer, pa.Table.from_batches([batch]))
            return PaimonCommitMessages(attach_file_indexes(table, writer.prepare_commit()))
        finally:
            writer.close()

    def _write_merged(self, table: Any, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessages:
        """A merge-engine table's task: merge the batch by key; when the task owns its buckets, merge
        with the old rows, write and mark here, else hand the merged rows to the driver."""
        from paimon_index.table.pk.upsert import merge_batch, prepare_merge

        batches = [b for b in iterator if b.num_rows]
        if not batches:
            return PaimonCommitMessages([])
        data = pa.Table.from_batches(batches)
        if self.options.bucket_exclusive:
            return PaimonCommitMessages([], None, prepare_merge(table, data))
        return PaimonCommitMessages([], None, None, merge_batch(table, data))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        from paimon_index.table.transaction import committing_as

        with committing_as(self.options.commit_user):
            self._commit(messages)

    def _commit(self, messages: list[WriterCommitMessage | None]) -> None:
        from paimon_index.table.pk import commit_prepared, commit_upsert, dv_mode

        parts = [part for part in messages if isinstance(part, PaimonCommitMessages)]
        collected = [m for part in parts for m in part.messages]
        table = _open_table(self.options)
        merged = [p.merged for p in parts if p.merged is not None]
        if merged:  # merge-engine rows the tasks could not merge with old rows themselves
            from paimon_index.table.pk import upsert_arrow

            upsert_arrow(table, pa.concat_tables(merged, promote_options="permissive"))
            return
        prepared = [p.prepared for p in parts if p.prepared is not None]
        if prepared:  # the tasks did the lookup for the buckets they own
            commit_prepared(table, prepared)
            return
        if dv_mode(table):  # look up older rows, mark them, place the new files: one snapshot
            commit_upsert(table, collected, [p.removed_keys for p in parts if p.removed_keys is not None])
            return
        from paimon_index.table.transaction import Transaction

        # An append may land on newer snapshots; an overwrite replaces exactly the snapshot it saw
        # (and drops that snapshot's deletion vectors). A refused commit deletes the tasks' files.
        with Transaction.begin(table, exact=self.overwrite, overwrite=self.overwrite,
                               operation="Spark overwrite" if self.overwrite else "Spark append") as txn:
            txn.stage(collected)
            txn.commit()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Delete the files the finished tasks wrote (data, index files) -- unless the commit landed.

        Spark aborts after a task failed, and also after :meth:`commit` failed, which it may do
        after its snapshot landed (its Python worker killed after writing the snapshot file, or an
        outcome it could not tell): then those files are the table's and stay. A snapshot newer
        than the tasks' start holding one of them tells; when one of those snapshots has expired
        meanwhile, the files stay too (remove_orphan_files deletes them if they are not the table's).
        """
        from paimon_index.table.transaction import Transaction

        parts = [part for part in messages if isinstance(part, PaimonCommitMessages)]
        table = _open_table(self.options)
        if _may_have_landed(table, parts):
            return
        orphans = Transaction(table, None, operation="aborted Spark write")
        orphans.stage(m for part in parts for m in part.messages)
        orphans.track(*(p for part in parts if part.prepared is not None for p in part.prepared.written))
        orphans.abort()


def _may_have_landed(table: Any, parts: Sequence[PaimonCommitMessages]) -> bool:
    """Whether a snapshot committed after the tasks started holds a file they wrote (or one of
    those snapshots expired, so that cannot be told)."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    from paimon_index.table.paimon import index_entries, latest_snapshot, snapshot_by_id

    messages = [m for part in parts for m in
                [*part.messages, *(part.prepared.messages if part.prepared is not None else ()),
                 *(part.prepared.writes if part.prepared is not None else ()),
                 *(part.prepared.compacts if part.prepared is not None else ())]]
    data = {meta.file_name for m in messages for meta in m.new_files}
    index = {entry.index_file.file_name for m in messages for entry in m.index_adds}
    if not data and not index:
        return False
    starts = [p.prepared.snapshot_id if p.prepared is not None else p.since for p in parts]
    if any(s is None and p.prepared is None for s, p in zip(starts, parts, strict=True)):
        return True  # a part of unknown origin: keep the files
    first = min((s or 0) for s in starts) + 1
    latest = latest_snapshot(table)
    reader = ManifestFileManager(table)
    for snapshot_id in range(first, 0 if latest is None else int(latest.id) + 1):
        snapshot = snapshot_by_id(table, snapshot_id)
        if snapshot is None:
            return True
        if index and any(e.index_file.file_name in index for e in index_entries(table, snapshot)):
            return True
        for manifest in ManifestListManager(table).read_delta(snapshot):
            if reader.read(manifest.file_name, lambda e: e.file.file_name in data):
                return True
    return False


def _named(batch: pa.RecordBatch, renames: dict[str, str], missing: tuple[str, ...]) -> pa.RecordBatch:
    """``batch`` with the table's column names, and NULL columns for the nullable ones not given
    (the writer casts them to the table's types)."""
    names = [renames.get(n, n) for n in batch.schema.names] + list(missing)
    nulls = [pa.nulls(batch.num_rows) for _ in missing]
    return pa.RecordBatch.from_arrays([*batch.columns, *nulls], names=names)


def _open_for_write(options: WriteOptions) -> Any:
    """The table a write goes to, opened on the driver: a missing table is a TableNotFoundError
    naming how to create it, before any task starts."""
    from paimon_index.table.catalog import table_not_found

    try:
        return _open_table(options)
    except PaimonIndexError:
        raise
    except Exception as e:
        raise table_not_found(options.warehouse, options.table, e) from e


def _arrow_casts_as_spark(given: SparkType, target: SparkType) -> bool:
    """Whether Arrow's safe cast of ``given`` to ``target`` in the tasks stores what Spark's ANSI
    cast stores, and fails where it fails: integers to integers (an overflow fails both), integers
    to a DECIMAL with room for every digit, DECIMAL to DECIMAL of no smaller scale (no rounding),
    FLOAT to DOUBLE, DATE to TIMESTAMP_NTZ (midnight), strings. Other pairs round or use the
    session time zone: only :func:`paimon_index.spark.jobs.write` (Spark's own cast) does them."""
    from pyspark.sql.types import CharType, VarcharType

    digits: dict[type, int] = {ByteType: 3, ShortType: 5, IntegerType: 10, LongType: 20}
    if type(given) in digits and type(target) in digits:
        return True
    if type(given) in digits and isinstance(target, DecimalType):
        # Arrow checks the types (room for every digit of the integer type), Spark the values.
        return target.precision - target.scale >= digits[type(given)]
    if isinstance(given, DecimalType) and isinstance(target, DecimalType):
        return target.scale >= given.scale
    if isinstance(given, FloatType) and isinstance(target, DoubleType):
        return True
    if isinstance(given, DateType) and isinstance(target, TimestampNTZType):
        return True
    # CHAR/VARCHAR: the table's length is not checked by this path; jobs.write checks it.
    return isinstance(given, StringType) and isinstance(target, StringType | CharType | VarcharType)


def _writer_columns(schema: StructType, table: Any, name: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """Check the DataFrame's columns against the table's, by name (case-insensitively, Spark's
    default), as Spark's store assignment resolves them: an extra or missing column, or a type
    that needs a cast, is an error here, on the driver. Casts are not done by this source (its
    tasks see Arrow batches, not Spark expressions): :func:`paimon_index.spark.jobs.write` does
    them as Spark's INSERT does. Returns the renames (data column -> table column) and the nullable
    table columns the data does not give (written NULL)."""
    from paimon_index.errors import DataError
    from paimon_index.spark.assign import nullable, resolve_columns, target_schema
    from paimon_index.table.pk.upsert import ROW_KIND_COLUMN

    target = target_schema(table)
    passthrough = (ROW_KIND_COLUMN,) if table.is_primary_key_table else ()
    pairs = resolve_columns(schema.names, target, by_name=True, case_sensitive=False, table=name,
                            passthrough=passthrough)
    renames = {}
    for field, position in pairs:
        if position is None:
            continue
        given = schema.fields[position]
        if given.name != field.name:
            renames[given.name] = field.name
        if nullable(given.dataType) == nullable(field.dataType) or \
                _arrow_casts_as_spark(given.dataType, field.dataType):
            continue
        raise DataError(
            f"cannot write to {name}: column {field.name!r} is {field.dataType.simpleString().upper()}, "
            f"the data's {given.name!r} is {given.dataType.simpleString().upper()}; the paimon_index source "
            "writes values as they are. Use paimon_index.spark.jobs.write(df, ...), which casts as Spark's "
            f"INSERT does, or cast first: F.col({given.name!r}).cast({field.dataType.simpleString()!r})")
    return renames, tuple(field.name for field, position in pairs if position is None)


def _as_spark_arrow(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` in the exact Arrow schema Spark checks a Python source's batches against:
    timestamps in microseconds (Paimon files may hold millis or nanos; Spark keeps micros, as its
    own Parquet reader does), every field nullable (a file may mark a column NOT NULL)."""
    return batch if target.equals(batch.schema) else batch.cast(target, safe=False)


def _open_table(options: ReadOptions | WriteOptions) -> Any:
    from paimon_index.table.catalog import open_table

    # The catalog options are checked there (a misspelt fs.s3.* key names the nearest one).
    table = open_table(options.warehouse, options.table, catalog_options=dict(options.catalog))
    snapshot = getattr(options, "snapshot_id", None)
    if snapshot is None:
        return table
    if getattr(options, "current_schema", False):  # a change's read: today's columns
        from paimon_index.table.paimon import pinned_current

        return pinned_current(table, snapshot)
    return table.copy({SNAPSHOT_ID: str(snapshot)})


def metadata_fields() -> list[StructField]:
    """Spark's fields of the metadata columns (``metadata-columns``), in their order."""
    from paimon_index.table.files import BUCKET_COLUMN, FILE_PATH_COLUMN, PARTITION_COLUMN, ROW_INDEX_COLUMN

    return [StructField(FILE_PATH_COLUMN, _STRING), StructField(ROW_INDEX_COLUMN, _BIGINT),
            StructField(PARTITION_COLUMN, _STRING), StructField(BUCKET_COLUMN, _INT)]


#: Spark's type of every scalar Paimon type the schema-file layout handles (others: the catalog path).
_SPARK_SCALARS: dict[TypeRoot, SparkType] = {
    TypeRoot.TINYINT: ByteType(), TypeRoot.SMALLINT: ShortType(), TypeRoot.INT: IntegerType(),
    TypeRoot.BIGINT: LongType(), TypeRoot.FLOAT: FloatType(), TypeRoot.DOUBLE: DoubleType(),
    TypeRoot.BOOLEAN: BooleanType(), TypeRoot.DATE: DateType(), TypeRoot.CHAR: StringType(),
    TypeRoot.VARCHAR: StringType(), TypeRoot.VARBINARY: BinaryType(),
    TypeRoot.TIMESTAMP: TimestampNTZType(), TypeRoot.TIMESTAMP_LTZ: TimestampType(),
}
#: Paimon keeps a table's schema versions as ``<table>/schema/schema-<id>`` (JSON).
_SCHEMA_DIR, _SCHEMA_PREFIX = "schema", "schema-"
_LOCAL_SCHEMES = ("", "file")


def _spark_scalar(dtype: DataType) -> SparkType | None:
    if dtype.root is TypeRoot.DECIMAL:
        return DecimalType(dtype.precision or 10, dtype.scale or 0)
    return _SPARK_SCALARS.get(dtype.root)


def _layout_from_schema_file(options: ReadOptions) -> TableLayout | None:
    """The layout of a local append table with scalar columns, from its latest schema file; else None.

    What pypaimon's catalog would give (tests compare the two) without opening the catalog, whose
    import pulls pypaimon's whole writer (and polars, pandas): the worker that answers Spark's
    ``schema()`` starts seconds faster. Read through the FileIO seam with pypaimon's local FileIO.
    """
    import json
    import posixpath
    from urllib.parse import urlparse

    # pypaimon's local FileIO alone (no catalog: that would import its whole writer), behind our seam.
    from pypaimon.filesystem.local_file_io import LocalFileIO

    from paimon_index.errors import PaimonIndexError as _Unparsed
    from paimon_index.table.fileio import TableIO
    from paimon_index.types import parse_type

    url = urlparse(options.warehouse)
    database, _, name = options.table.partition(".")
    if url.scheme not in _LOCAL_SCHEMES or not name or options.catalog:
        return None
    root = url.path if url.scheme else options.warehouse
    folder = posixpath.join(root, f"{database}.db", name, _SCHEMA_DIR)
    try:
        io = TableIO(LocalFileIO(options.warehouse))
        ids = [int(e.name[len(_SCHEMA_PREFIX):]) for e in io.list(folder)
               if e.name.startswith(_SCHEMA_PREFIX) and e.name[len(_SCHEMA_PREFIX):].isdigit()]
        if not ids:
            return None
        schema = json.loads(io.read_bytes(posixpath.join(folder, f"{_SCHEMA_PREFIX}{max(ids)}")))
        if schema.get("primaryKeys"):
            return None  # primary-key tables: the catalog path checks their mode
        fields, index_schema = [], {}
        for field in schema["fields"]:
            if not isinstance(field.get("type"), str):
                return None  # nested types are JSON objects: the catalog path maps them
            dtype = parse_type(field["type"])
            spark = _spark_scalar(dtype)
            if spark is None:
                return None
            fields.append(StructField(str(field["name"]), spark, True))
            index_schema[str(field["name"])] = dtype
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, _Unparsed):
        return None  # anything unexpected: the catalog decides (and reports errors its way)
    row_ids = None
    if options.metadata_columns:
        fields += metadata_fields()
        row_ids = tuple(str(k) for k in schema.get("partitionKeys") or ())
    return TableLayout(StructType(fields), index_schema, row_ids)


def _unsupported(message: str) -> Exception:
    from paimon_index.errors import UnsupportedTableError

    return UnsupportedTableError(message)


def _layout_from_catalog(options: ReadOptions) -> TableLayout:
    """The layout of a table, from pypaimon's catalog and the table's schema alone.

    Spark calls ``schema()`` in a fresh Python worker: only the catalog and pyspark's Arrow
    mapping are imported here, not the read and write paths (pypaimon's writer, polars, pandas),
    which cost that worker seconds. ``partitions()`` builds the table's ReadSchema (with the
    history of older schemas) when it plans.
    """
    from pypaimon.schema.data_types import PyarrowFieldParser
    from pyspark.sql.pandas.types import from_arrow_schema

    from paimon_index.errors import PaimonIndexError as _Unparsed
    from paimon_index.types import parse_type

    table = _open_table(options)
    if table.is_primary_key_table and options.metadata_columns:
        from paimon_index.table.pk import dv_mode

        if not dv_mode(table):
            raise _unsupported("metadata columns (file, row index) of a primary-key table without deletion "
                               "vectors: its rows are merged across files and have none")
    fields = []
    for field in PyarrowFieldParser.from_paimon_schema(table.fields):
        try:
            fields.append(from_arrow_schema(pa.schema([field])).fields[0])
        except Exception as e:
            raise _unsupported(f"column {field.name!r} of {options.table} has type {field.type}: Spark "
                               "takes no such column from a Python source") from e
    index_schema: dict[str, DataType] = {}
    for field in table.fields:  # what table/schemas.py's ReadSchema holds: the parseable types
        try:
            index_schema[str(field.name)] = parse_type(str(field.type))
        except _Unparsed:
            continue
    row_ids = None
    if options.metadata_columns:
        fields += metadata_fields()
        row_ids = tuple(table.partition_keys or ())
    spark_schema = nullable_type(StructType(fields))
    assert isinstance(spark_schema, StructType)
    return TableLayout(spark_schema, index_schema, row_ids)


class PaimonIndexDataSource(DataSource):
    """See the module docstring: options, partitioning and pushdown."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _read_options(self) -> ReadOptions:
        parsed = getattr(self, "_parsed_read", None)
        if parsed is None:
            parsed = self._parsed_read = parse_read_options(self.options)
        return parsed

    def _layout(self) -> TableLayout:
        """The table's columns as Spark sees them, and the ones the indexes see (read once).

        Spark calls ``schema()`` in a fresh Python worker, then pickles this source (layout
        included) to the workers that push filters and plan. A local append table with scalar
        columns is laid out from its latest schema file (:func:`_layout_from_schema_file`), any
        other through pypaimon's catalog.
        """
        layout = getattr(self, "_table_layout", None)
        if layout is None:
            options = self._read_options()
            # The latest schema file is not a time-travel read's schema: that one is the snapshot's.
            fast = None if options.snapshot_id is not None else _layout_from_schema_file(options)
            layout = fast or _layout_from_catalog(options)
            self._table_layout = layout
        return layout

    def schema(self) -> StructType:
        return self._layout().spark_schema

    def reader(self, schema: Any) -> DataSourceReader:
        return PaimonIndexReader(self._read_options(), self._layout())

    def writer(self, schema: Any, overwrite: bool) -> PaimonIndexWriter:
        """Runs on the driver's side before any task: the options, the table (it must exist) and
        the DataFrame's columns are checked here (:func:`_writer_columns`)."""
        from paimon_index.table.pk import dv_mode

        options = parse_write_options(self.options)
        table = _open_for_write(options)
        if overwrite and dv_mode(table):
            raise InvalidOptionError("overwrite of a deletion-vectors-mode primary-key table is not "
                                     "supported: upsert (mode 'append') or delete by key")
        if dv_mode(table):  # 'changelog-producer' input / full-compaction: refused before any task
            from paimon_index.table.pk.plan import changelog_producer

            # 'input': written by the tasks of jobs' bucket-exclusive upserts (input_records).
            changelog_producer(table, input_ok=options.bucket_exclusive)
        elif table.is_primary_key_table:  # merge-on-read: 'lookup' / 'full-compaction' write none
            from paimon_index.table.pk.changelog import check_merge_on_read

            check_merge_on_read(table)
        renames, missing = _writer_columns(schema, table, options.table)
        return PaimonIndexWriter(options, overwrite, renames, missing)
