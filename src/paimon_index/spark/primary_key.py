"""Primary-key tables in deletion-vectors mode, driven from Spark.

    upsert(spark, df, "db.t", warehouse=W)                 df may carry a _ROW_KIND column
    upsert_rows(spark, df, "db.t", warehouse=W) -> (snapshot id | None, rows written)
    compact(spark, "db.t", warehouse=W, full=False, threshold=0.5)
    expire_snapshots(spark, "db.t", warehouse=W, retain_last=N)

``upsert`` computes each row's Paimon bucket (fixed-bucket tables, with pypaimon's own bucket
function) and repartitions by it, so every bucket reaches exactly one task; then it writes through
the ``paimon_index`` source with ``bucket-exclusive = true``. Each task deduplicates its rows (the
last row of a key wins; ``-D``/``-U`` rows delete the key), writes them with pypaimon's key-value
writer (buckets, sequence numbers) plus each new file's index, and then, for the buckets it owns,
looks every written or deleted key up in the bucket's files, marks the older rows in deletion
vectors, writes the bucket's DV index file and places the new files in levels
(:func:`paimon_index.table.pk.prepare_upsert`); the driver commits what all tasks
prepared as one snapshot (:func:`~paimon_index.table.pk.commit_prepared`). A
dynamic-bucket table (``bucket = -1``) is written by one task (pypaimon's bucket assigner extends
one HASH index per bucket, which two tasks cannot share) and, like a plain ``df.write`` without
``bucket-exclusive``, has the lookup done on the driver
(:func:`~paimon_index.table.pk.commit_upsert`). Reads of such a table through the source
are merge-free (levels >= 1 with their vectors), file indexes included. The driver's commit is
exact (the project's Transaction): the job lands as the snapshot after the one its tasks planned on,
or raises ConcurrentChangeError having deleted every file the tasks wrote.

``compact`` and ``expire_snapshots`` run on the driver (they rewrite a few files or delete files;
the work is per bucket and bounded by what changed); the Spark session is taken for symmetry with
the other jobs and to resolve the table the same way. ``catalog_options`` (``fs.*``) reach the
driver's catalog, the source's writer and every task. :mod:`paimon_index.spark.jobs` wraps these
jobs with the Table API's result types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.types import IntegerType, StructField, StructType

from paimon_index.spark.datasource import BUCKET_EXCLUSIVE, SOURCE_NAME, WAREHOUSE
from paimon_index.table import maintenance as expire_module
from paimon_index.table import pk as primary_key
from paimon_index.table.catalog import open_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["compact", "count_rows", "expire_snapshots", "upsert", "upsert_rows"]

BUCKET = "bucket"
DYNAMIC_BUCKET = "-1"
BUCKET_COLUMN = "__paimon_index_bucket__"


def count_rows(spark: SparkSession, df: DataFrame) -> tuple[DataFrame, Any]:
    """``df`` passed through unchanged, and an accumulator that holds its row count once an action
    ran it (no second scan of ``df``, whose source may not give the same rows twice)."""
    counter = spark.sparkContext.accumulator(0)

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            counter.add(batch.num_rows)
            yield batch

    return df.mapInArrow(count, df.schema), counter


def upsert(spark: SparkSession, df: DataFrame, table: str, *, warehouse: str,
           partitions: int | None = None, catalog_options: Mapping[str, str] | None = None) -> int | None:
    """Upsert ``df`` into the primary-key table ``table`` in one snapshot; the new snapshot id."""
    return upsert_rows(spark, df, table, warehouse=warehouse, partitions=partitions,
                       catalog_options=catalog_options)[0]


def upsert_rows(spark: SparkSession, df: DataFrame, table: str, *, warehouse: str,
                partitions: int | None = None, catalog_options: Mapping[str, str] | None = None
                ) -> tuple[int | None, int]:
    """Upsert ``df`` into the primary-key table ``table`` in one snapshot: the new snapshot id (None
    when nothing was committed) and the number of rows of ``df`` written."""
    catalog_options = dict(catalog_options or {})
    paimon_table = open_table(warehouse, table, catalog_options=catalog_options)
    if not primary_key.dv_mode(paimon_table):
        raise primary_key.PrimaryKeyTableError(f"{table} is not a primary-key table in deletion-vectors mode")
    count = partitions or spark.sparkContext.defaultParallelism
    before = paimon_table.snapshot_manager().get_latest_snapshot()
    df, written = count_rows(spark, df)
    writer_options = {**catalog_options, WAREHOUSE: warehouse}
    if str(paimon_table.options.options.to_map().get(BUCKET, "-1")) == DYNAMIC_BUCKET:
        # pypaimon assigns dynamic buckets through one HASH index per bucket; two tasks would each
        # extend it (a conflict at commit), so the assignment runs in one task.
        shuffled = df.repartition(1)
    else:
        # Shuffle by Paimon's bucket: a task owns whole buckets and looks their keys up itself.
        schema = StructType([*df.schema.fields, StructField(BUCKET_COLUMN, IntegerType())])
        with_bucket = df.mapInArrow(_add_bucket(warehouse, table, catalog_options), schema)
        shuffled = with_bucket.repartition(count, BUCKET_COLUMN, *paimon_table.partition_keys) \
            .drop(BUCKET_COLUMN)
        writer_options[BUCKET_EXCLUSIVE] = "true"
    writer = shuffled.write.format(SOURCE_NAME)
    for key, value in writer_options.items():
        writer = writer.option(key, value)
    writer.mode("append").save(table)
    reopened = open_table(warehouse, table, catalog_options=catalog_options)
    after = reopened.snapshot_manager().get_latest_snapshot()
    if after is None or (before is not None and after.id == before.id):
        return None, 0
    return after.id, int(written.value)


def _add_bucket(warehouse: str, table: str, catalog_options: Mapping[str, str]
                ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def add(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        opened = open_table(warehouse, table, catalog_options=catalog_options)
        for batch in batches:
            _, buckets = primary_key.bucket_of_rows(opened, pa.Table.from_batches([batch]))
            yield batch.append_column(BUCKET_COLUMN, pa.array(buckets, pa.int32()))

    return add


def compact(spark: SparkSession, table: str, *, warehouse: str, full: bool = False,
            threshold: float = primary_key.DEFAULT_COMPACTION_THRESHOLD,
            catalog_options: Mapping[str, str] | None = None) -> int | None:
    """Rewrite files whose deleted fraction passes ``threshold`` (or all of them); one snapshot."""
    del spark
    return primary_key.compact(open_table(warehouse, table, catalog_options=catalog_options), full=full,
                               threshold=threshold)


def expire_snapshots(spark: SparkSession, table: str, *, warehouse: str, retain_last: int,
                     catalog_options: Mapping[str, str] | None = None) -> Any:
    """Keep the last ``retain_last`` snapshots and delete the files only older ones used."""
    del spark
    return expire_module.expire_snapshots(open_table(warehouse, table, catalog_options=catalog_options),
                                          retain_last=retain_last)
