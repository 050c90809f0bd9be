"""``paimon_index``: a PySpark Python data source that reads Paimon tables through their indexes.

    spark = local_session()          # registers the source
    df = (spark.read.format("paimon_index")
          .option("warehouse", "/path/to/warehouse")
          .load("db.orders")
          .filter("status = 'PAID' AND score >= 90"))

Read options (strings): ``warehouse`` (required); ``file-index.read.enabled`` (``true``; ``false``
reads without indexes, for comparison); ``topn`` + ``limit`` (e.g. ``"score DESC NULLS LAST"`` and
``"10"``): each data file yields only its range-bitmap TopN candidates among its matching, not
deleted rows — the query must still say ``.orderBy(...).limit(k)``, whose result equals the full
sort (Spark offers Python sources no ORDER BY ... LIMIT hook, so this is an explicit hint);
``metadata-columns`` (``true`` adds ``__paimon_file_path``, ``__paimon_row_index``,
``__paimon_partition``, ``__paimon_bucket``: where each row lives, the key of row-level changes);
``scan.snapshot-id`` (read that snapshot instead of the latest); ``scan-report`` (a directory:
every task writes what it pruned there as JSON, summed by
:func:`paimon_index.spark.report.collect_scan_report`). The path given to ``load`` is the table
identifier ``db.table``.

Writing: ``df.write.format("paimon_index").option("warehouse", W).mode("append").save("db.t")``;
each Spark task writes its rows with pypaimon's writer (the table's partitions and buckets) and
builds every new data file's index (embedded or ``<data-file>.index``, see
:mod:`paimon_index.table.write`); the task's commit messages travel to the driver, which commits all
of them as **one** snapshot. A failed job commits nothing. ``mode("overwrite")`` replaces the
table's contents in that one snapshot (on a partitioned table only the partitions written, as
Paimon's ``dynamic-partition-overwrite = true`` default does; set it to ``false`` for the whole
table).

Partitioning: one input partition per pypaimon split of the latest snapshot (planned on the
driver; a split carries its data files, their embedded indexes and deletion-vector ranges, and is
pickled to the executor). The driver drops the files whose *embedded* index answers SKIP, and
splits left empty; executors evaluate ``.index`` files, open the data files and yield Arrow batches.

Pushdown: Spark hands a Python source the top-level conjuncts of a query's filter; ``pushFilters``
turns each of them (``=``, ``<=>`` with a non-NULL value, ``<``, ``<=``, ``>``, ``>=``, ``IN``,
``IS [NOT] NULL``, ``NOT`` of those, ``STARTS WITH``, ``ENDS WITH``, ``CONTAINS``) into our predicate
and ANDs them. (A conjunct that is an OR is not offered to Python sources: Spark applies it.)
The file indexes answer it (skip files, select rows), deletion vectors are subtracted, and the
predicate is then applied exactly to the rows read, so Spark does not re-check the filters we took
(its plan shows no Filter above the scan); the ones we cannot translate are handed back and Spark
applies them. Append tables, with or without deletion vectors (32- and 64-bit); see
:mod:`paimon_index.table.read` for the read path.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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

from paimon_index.errors import InvalidOptionError, PaimonIndexError
from paimon_index.fileindex.base import TopN
from paimon_index.fileindex.options import FileIndexOptions, parse_bool
from paimon_index.predicate import ALWAYS_TRUE, Leaf, Op, Predicate, and_, bind
from paimon_index.sql import parse_order_by
from paimon_index.table.read import (
    BUCKET_COLUMN,
    FILE_PATH_COLUMN,
    METADATA_COLUMNS,
    PARTITION_COLUMN,
    ROW_INDEX_COLUMN,
)
from paimon_index.table.write import table_options
from paimon_index.types import DataType, TypeRoot

__all__ = ["SOURCE_NAME", "PaimonIndexDataSource", "spark_filter_to_predicate", "spark_type"]

SOURCE_NAME = "paimon_index"
WAREHOUSE = "warehouse"
READ_ENABLED = "file-index.read.enabled"
TOPN = "topn"
LIMIT = "limit"
SCAN_REPORT = "scan-report"
METADATA = "metadata-columns"
#: Write option: every bucket reaches one task only, so tasks look keys up themselves.
BUCKET_EXCLUSIVE = "bucket-exclusive"
SNAPSHOT_ID = "scan.snapshot-id"
SPARK_TIMESTAMP_UNIT = "us"

_COMPARISONS = {EqualTo: Op.EQ, GreaterThan: Op.GT, GreaterThanOrEqual: Op.GE, LessThan: Op.LT,
                LessThanOrEqual: Op.LE, StringStartsWith: Op.STARTS_WITH, StringEndsWith: Op.ENDS_WITH,
                StringContains: Op.CONTAINS}
_NEGATED = {Op.EQ: Op.NE, Op.GT: Op.LE, Op.GE: Op.LT, Op.LT: Op.GE, Op.LE: Op.GT, Op.IN: Op.NOT_IN,
            Op.IS_NULL: Op.IS_NOT_NULL, Op.IS_NOT_NULL: Op.IS_NULL}


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


def spark_filter_to_predicate(f: Filter) -> Predicate | None:
    """Our predicate for one Spark filter, or None when it has no exact translation."""
    if isinstance(f, Not):
        inner = spark_filter_to_predicate(f.child)
        if isinstance(inner, Leaf) and inner.op in _NEGATED:
            return Leaf(_NEGATED[inner.op], inner.column, inner.literals)
        return None  # NOT over AND/OR or string matches: left to Spark
    column = _column(f)
    if column is None:
        return None
    if isinstance(f, IsNull | IsNotNull):
        return Leaf(Op.IS_NULL if isinstance(f, IsNull) else Op.IS_NOT_NULL, column)
    if isinstance(f, In):
        return Leaf(Op.IN, column, tuple(f.value))
    if isinstance(f, EqualNullSafe):
        return None if f.value is None else Leaf(Op.EQ, column, (f.value,))
    op = _COMPARISONS.get(type(f))
    return None if op is None else Leaf(op, column, (f.value,))  # type: ignore[attr-defined]


@dataclass(frozen=True)
class SplitPartition(InputPartition):
    """One pypaimon split and what to do with it (pickled to an executor)."""

    split: Any
    predicate: Predicate
    schema: Mapping[str, DataType]
    use_index: bool
    topn: TopN | None = None
    report_dir: str | None = None
    row_ids: tuple[str, ...] | None = None  # the partition keys, when metadata columns are asked for


def _topn(options: Mapping[str, str]) -> TopN | None:
    order_by, limit = options.get(TOPN), options.get(LIMIT)
    if order_by is None:
        if limit is not None:
            raise InvalidOptionError("option 'limit' is only meaningful with option 'topn'")
        return None
    if limit is None or not limit.strip().isdigit() or int(limit) <= 0:
        raise InvalidOptionError(f"option 'topn' needs option 'limit' as a positive integer, got {limit!r}")
    # Ties at the k-th value are all kept (strict=False): the query's own sort picks among them.
    return TopN(tuple(parse_order_by(order_by)), int(limit), strict=False)


class PaimonIndexReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: Mapping[str, DataType]) -> None:
        self.options = options
        self.schema = schema
        self.predicate: Predicate = ALWAYS_TRUE

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        taken = []
        for f in filters:
            predicate = spark_filter_to_predicate(f)
            try:
                bound = None if predicate is None else bind(predicate, self.schema)
            except PaimonIndexError:
                bound = None  # e.g. a literal of another type: Spark keeps the filter
            if bound is None:
                yield f
            else:
                taken.append(bound)
        self.predicate = and_(*taken)

    def partitions(self) -> Sequence[InputPartition]:
        from paimon_index.spark.report import write_report
        from paimon_index.table.read import ScanReport, prune_split

        table = _open_table(self.options)
        use_index = parse_bool(self.options.get(READ_ENABLED, "true"), READ_ENABLED) and \
            FileIndexOptions.from_table_options(table_options(table)).read_enabled
        topn = _topn(self.options)
        report_dir = self.options.get(SCAN_REPORT)
        if table.is_primary_key_table:
            from paimon_index.table.primary_key import check_merge_free
            from paimon_index.table.read import UnsupportedTableError

            if not check_merge_free(table):
                raise UnsupportedTableError("level-0 files with merge-on-read: read them with "
                                            "table.primary_key.read_primary_key, or compact first")
        splits = table.new_read_builder().new_scan().plan().splits()
        if use_index:
            report = ScanReport()
            files_before, rows_before = sum(len(s.files) for s in splits), sum(s.row_count for s in splits)
            splits = [p for p in (prune_split(s, self.predicate, self.schema, report) for s in splits)
                      if p is not None]
            # The executors count the files they get; these are the ones they never see.
            report.files_planned = files_before - sum(len(s.files) for s in splits)
            report.files_skipped_by_index = report.files_planned
            report.rows_planned = rows_before - sum(s.row_count for s in splits)
            if report_dir:
                write_report(report_dir, report)
        row_ids = tuple(table.partition_keys or ()) if _metadata_columns(self.options) else None
        return [SplitPartition(s, self.predicate, self.schema, use_index, topn, report_dir, row_ids)
                for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from paimon_index.spark.report import write_report
        from paimon_index.table.read import ScanReport, read_split

        assert isinstance(partition, SplitPartition)
        names = list(self.schema) + (list(METADATA_COLUMNS) if partition.row_ids is not None else [])
        report = ScanReport()
        for batch in read_split(partition.split, partition.predicate, partition.schema,
                                use_index=partition.use_index, report=report, topn=partition.topn,
                                row_ids=partition.row_ids):
            yield _as_spark_arrow(batch.select(names))
        if partition.report_dir:
            write_report(partition.report_dir, report)


@dataclass(frozen=True)
class PaimonCommitMessages(WriterCommitMessage):
    """pypaimon commit messages of one Spark task (data files with their indexes attached)."""

    messages: list[Any]
    removed_keys: Any = None  # pa.Table of keys deleted by a primary-key upsert task
    prepared: Any = None  # PreparedUpsert: the task owned its buckets and did the lookup itself


class PaimonIndexWriter(DataSourceArrowWriter):
    """Executors write data files and their indexes; the driver commits them in one snapshot."""

    def __init__(self, options: Mapping[str, str], overwrite: bool = False) -> None:
        self.options = options
        self.overwrite = overwrite

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessages:
        from paimon_index.table.primary_key import dv_mode, split_batch
        from paimon_index.table.write import attach_file_indexes, write_with

        table = _open_table(self.options)
        writer = table.new_batch_write_builder().new_write()
        try:
            if dv_mode(table):
                # One batch per task: the last row of a key decides, deletes are looked up later.
                batches = [b for b in iterator if b.num_rows]
                removed = None
                if batches:
                    upserts, removed = split_batch(table, pa.Table.from_batches(batches))
                    if upserts.num_rows:
                        write_with(writer, upserts)
                written = attach_file_indexes(table, writer.prepare_commit())
                if parse_bool(self.options.get(BUCKET_EXCLUSIVE, "false"), BUCKET_EXCLUSIVE):
                    from paimon_index.table.primary_key import owned_buckets, prepare_upsert

                    scope = owned_buckets(table, written, removed)
                    return PaimonCommitMessages([], None, prepare_upsert(table, written, removed, scope))
                return PaimonCommitMessages(written, removed)
            for batch in iterator:
                if batch.num_rows:
                    write_with(writer, pa.Table.from_batches([batch]))
            return PaimonCommitMessages(attach_file_indexes(table, writer.prepare_commit()))
        finally:
            writer.close()

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        from paimon_index.table.primary_key import commit_prepared, commit_upsert, dv_mode

        parts = [part for part in messages if isinstance(part, PaimonCommitMessages)]
        collected = [m for part in parts for m in part.messages]
        table = _open_table(self.options)
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
        """Nothing was committed: delete the files the finished tasks wrote (data, index files)."""
        from paimon_index.table.transaction import Transaction

        parts = [part for part in messages if isinstance(part, PaimonCommitMessages)]
        table = _open_table(self.options)
        orphans = Transaction(table, None, operation="aborted Spark write")
        orphans.stage(m for part in parts for m in part.messages)
        orphans.abort()


def _as_spark_arrow(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Spark takes timestamps from Python sources in microseconds (Paimon files may hold millis),
    and nullable columns as the schema declares them (a file may mark a column NOT NULL)."""
    fields = [pa.field(f.name, pa.timestamp(SPARK_TIMESTAMP_UNIT, f.type.tz)
                       if pa.types.is_timestamp(f.type) else f.type, nullable=True)
              for f in batch.schema]
    target = pa.schema(fields)
    return batch if target.equals(batch.schema) else batch.cast(target)


def _metadata_columns(options: Mapping[str, str]) -> bool:
    return parse_bool(options.get(METADATA, "false"), METADATA)


def _open_table(options: Mapping[str, str]) -> Any:
    from pypaimon import CatalogFactory

    warehouse = options.get(WAREHOUSE)
    identifier = options.get("path")
    if not warehouse or not identifier:
        raise InvalidOptionError("paimon_index needs .option('warehouse', ...) and .load('db.table')")
    table = CatalogFactory.create({WAREHOUSE: warehouse}).get_table(identifier)
    snapshot = options.get(SNAPSHOT_ID)
    return table if snapshot is None else table.copy({SNAPSHOT_ID: snapshot})


class PaimonIndexDataSource(DataSource):
    """See the module docstring: options, partitioning and pushdown."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _table_schema(self) -> dict[str, DataType]:
        from paimon_index.table.primary_key import dv_mode
        from paimon_index.table.read import UnsupportedTableError
        from paimon_index.table.write import table_schema

        table = _open_table(self.options)
        if table.is_primary_key_table and not dv_mode(table):
            raise UnsupportedTableError("primary-key tables are read by this source in deletion-vectors "
                                        "mode only (their reads need no merge)")
        readable = table_schema(table)
        if len(readable) != len(table.fields):
            raise UnsupportedTableError("the table has column types this source cannot read yet")
        return readable

    def schema(self) -> str:
        columns = [f"`{name}` {spark_type(dtype)}" for name, dtype in self._table_schema().items()]
        if _metadata_columns(self.options):
            columns += [f"`{FILE_PATH_COLUMN}` string", f"`{ROW_INDEX_COLUMN}` bigint",
                        f"`{PARTITION_COLUMN}` string", f"`{BUCKET_COLUMN}` int"]
        return ", ".join(columns)

    def reader(self, schema: Any) -> DataSourceReader:
        return PaimonIndexReader(self.options, self._table_schema())

    def writer(self, schema: Any, overwrite: bool) -> PaimonIndexWriter:
        from paimon_index.table.primary_key import dv_mode

        if overwrite and dv_mode(_open_table(self.options)):
            raise InvalidOptionError("overwrite of a deletion-vectors-mode primary-key table is not "
                                     "supported: upsert (mode 'append') or delete by key")
        return PaimonIndexWriter(self.options, overwrite)
