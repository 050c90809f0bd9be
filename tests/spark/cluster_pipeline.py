"""The whole pipeline as Spark jobs, returning its answers as plain values to compare between runs.

Run in-process with the test session (local mode), or as a script in a subprocess against a
standalone cluster (``python -m tests.spark.cluster_pipeline --master spark://... --warehouse W
--out answers.json``), or on an S3 warehouse (``catalog_options``): the answers must be equal.

Steps, each a Spark job committing one snapshot: write an append table with every index kind and
deletion vectors; filtered reads through the indexes (rows and scan reports); DELETE; UPDATE; a
new index option and ``rewrite_file_index``; a primary-key table's load and an upsert with
deletes. ``--kill-worker PGID`` also runs a slow write and kills that worker's process group while
its tasks run: the job must still commit exactly one snapshot with every row.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

import paimon_index
from paimon_index.spark import jobs
from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
from paimon_index.spark.report import scan_report

ROWS = 4_000
FILES = 4  # Spark partitions of the write: one data file each, in local mode and on a cluster
APPEND = "db.orders"
PK = "db.customers"
APPEND_SCHEMA = pa.schema([("id", pa.int64()), ("status", pa.string()), ("region", pa.string()),
                           ("score", pa.int32())])
PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                       ("score", pa.int32())])
QUERIES = ("status = 'ORDERED'", "id = 1234", "region = 'ap' AND score < 20", "status IS NULL")
SLOW_TASK_S = 4.0


def _rows(df: Any) -> list[list[Any]]:
    return sorted([list(r) for r in df.collect()], key=repr)


def _orders(spark: Any, first: int, count: int) -> Any:
    from pyspark.sql import functions as F

    ids = spark.range(first, first + count, numPartitions=FILES)
    return ids.select(
        F.col("id"),
        # ORDERED sorts between OPEN and PAID: only the first file holds it, and only its bitmap (not
        # the min/max statistics) rules the other files out.
        F.when((F.col("id") % 97 == 0) & (F.col("id") < ROWS // FILES), F.lit("ORDERED"))
        .when(F.col("id") % 13 == 0, F.lit(None))
        .otherwise(F.element_at(F.array(F.lit("PAID"), F.lit("OPEN")), (F.col("id") % 2 + 1).cast("int")))
        .alias("status"),
        F.element_at(F.array(F.lit("eu"), F.lit("us"), F.lit("ap")), (F.col("id") % 3 + 1).cast("int"))
        .alias("region"),
        ((F.col("id") * 7919) % 1000).cast("int").alias("score"))


def _step(answers: dict[str, Any], name: str, result: Any) -> None:
    answers[name] = {"snapshot": result.snapshot_id, "rows": result.rows_affected}


def run_pipeline(spark: Any, warehouse: str, catalog_options: Mapping[str, str] | None = None
                 ) -> dict[str, Any]:
    """Every step's answer: rows read, scan reports, each job's snapshot and rows affected."""
    options = dict(catalog_options or {})
    where = {"warehouse": warehouse, "catalog_options": options}
    paimon_index.create_table(warehouse, APPEND, APPEND_SCHEMA, catalog_options=options, options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "id",
        "file-index.bitmap.columns": "status", "file-index.range-bitmap.columns": "score"})
    answers: dict[str, Any] = {}
    _step(answers, "write", jobs.write(_orders(spark, 0, ROWS), APPEND, **where))

    def read(query: str) -> dict[str, Any]:
        report = scan_report(spark)
        df = (spark.read.format("paimon_index").options(**options).option("warehouse", warehouse)
              .option(SINGLE_SCAN_PUSHDOWN, "true").option("scan-report", report.name).load(APPEND))
        rows = _rows(df.filter(query))
        counts = report.value
        return {"rows": rows, "files_skipped_by_index": counts.files_skipped_by_index,
                "files_skipped_by_stats": counts.files_skipped_by_stats,
                "rows_returned": counts.rows_returned}

    answers["reads"] = {q: read(q) for q in QUERIES}
    _step(answers, "delete", jobs.delete(spark, APPEND, "region = 'eu' AND score < 500", **where))
    _step(answers, "update", jobs.update(spark, APPEND, {"status": "'DONE'", "score": "score + 1"},
                                         "status = 'OPEN' AND score > 900", **where))
    paimon_index.open_table(warehouse, APPEND, catalog_options=options).alter_options(
        set={"file-index.bloom-filter.columns": "id,region"})
    _step(answers, "rewrite", jobs.rewrite_file_index(spark, APPEND, **where))
    # Every row after the changes, and the rows the UPDATE wrote (new files, their indexes).
    answers["after_changes"] = {q: read(q) for q in ("true", "status = 'DONE'")}

    paimon_index.create_table(warehouse, PK, PK_SCHEMA, primary_keys=["id"], catalog_options=options,
                              options={"bucket": "2", "deletion-vectors.enabled": "true",
                                       "file-index.bloom-filter.columns": "name"})
    load = spark.createDataFrame([(i, f"n{i}", i % 100) for i in range(500)],
                                 "id long, name string, score int")
    _step(answers, "pk_load", jobs.write(load, PK, **where))
    changes = spark.createDataFrame(
        [(i, f"m{i}", 1, "+I") for i in range(400, 600)] + [(i, None, None, "-D") for i in range(0, 50)],
        "id long, name string, score int, _ROW_KIND string")
    _step(answers, "pk_upsert", jobs.upsert(spark, changes, PK, **where))
    pk = (spark.read.format("paimon_index").options(**options).option("warehouse", warehouse).load(PK))
    answers["pk_rows"] = _rows(pk)
    answers["snapshots"] = [paimon_index.open_table(warehouse, t, catalog_options=options).snapshot_id
                            for t in (APPEND, PK)]
    return answers


def _slow(batches: Iterator[Any]) -> Iterator[Any]:
    time.sleep(SLOW_TASK_S)  # long enough for the driver to kill a worker while tasks run
    yield from batches


def write_while_killing(spark: Any, warehouse: str, worker_group: int) -> dict[str, Any]:
    """A write whose tasks sleep; the worker's process group is killed once tasks run on both workers."""
    paimon_index.create_table(warehouse, "db.survivor", APPEND_SCHEMA)
    df = _orders(spark, 0, ROWS).repartition(FILES * 2).mapInArrow(_slow, _orders(spark, 0, 1).schema)
    killed = threading.Event()

    def kill_when_busy() -> None:
        tracker = spark.sparkContext.statusTracker()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed.is_set():
            stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            if any(s is not None and s.numActiveTasks >= 2 for s in stages):
                os.killpg(worker_group, signal.SIGKILL)  # the process group the test started
                killed.set()
                return
            time.sleep(0.2)

    watcher = threading.Thread(target=kill_when_busy, daemon=True)
    watcher.start()
    result = jobs.write(df, "db.survivor", warehouse=warehouse)
    watcher.join(timeout=5)
    table = paimon_index.open_table(warehouse, "db.survivor")
    return {"killed": killed.is_set(), "snapshot": result.snapshot_id, "rows": result.rows_affected,
            "latest": table.snapshot_id, "count": table.read().num_rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--master", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--kill-worker", type=int, default=None, help="process group of a worker")
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    from paimon_index.spark.session import SESSION_CONF, check_executors, configure

    builder = SparkSession.builder.master(args.master).appName("paimon-index-cluster-test")
    for key, value in SESSION_CONF.items():
        builder = builder.config(key, value)
    # A user's own session: configure() must check the executors, and point them at this Python.
    spark = builder.config("spark.executor.memory", "512m").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    started = time.monotonic()
    configure(spark, python=sys.executable)
    answers: dict[str, Any] = {"configure_s": time.monotonic() - started}
    started = time.monotonic()
    check_executors(spark)  # again, on executors and Python workers that are up
    answers["check_warm_s"] = time.monotonic() - started
    answers["pipeline"] = run_pipeline(spark, args.warehouse)
    if args.kill_worker is not None:
        answers["killed_write"] = write_while_killing(spark, args.warehouse + "-kill", args.kill_worker)
    spark.stop()
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(answers, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
