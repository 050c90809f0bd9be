"""Primary-key compaction and dynamic-bucket upserts through Spark tasks: time and scaling.

A primary-key table (``k`` BIGINT key, ``status`` STRING with a bitmap index, ``amount`` DOUBLE,
``note`` STRING; deletion vectors on, ``bucket`` = ``--bucket``) loaded with ``--rows`` rows, then
``--rows / 5`` random keys upserted (deletion vectors in every bucket). The warehouse is copied
and each copy compacted once (``full``):

    python     Table.compact on this process (what jobs.compact ran before: the driver)
    spark      jobs.compact: the buckets rewritten in Spark tasks, one commit on the driver

(after a tiny compaction that starts Spark's Python workers), and ``--dynamic`` also loads the
same rows into a ``bucket = -1`` table through ``jobs.upsert`` (timed; with this checkout's code,
and the old one when run against an older checkout).

Run once per core count to see scaling (the machine's other load matters: print ``uptime``):

    python benchmarks/pk_distributed.py --rows 500000 --master local[1]
    python benchmarks/pk_distributed.py --rows 500000 --master local[2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import paimon_index

SEED = 20261126
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("status", pa.string()),
                    ("amount", pa.float64()),
                    ("note", pa.string())])
STATUSES = np.array(["PAID", "OPEN", "CANCELLED", "SHIPPED"], dtype=object)


def rows_for(keys: np.ndarray, rng: np.random.Generator, version: int) -> pa.Table:
    return pa.table({"k": keys, "status": pa.array(STATUSES[keys % 4], pa.string()),
                     "amount": rng.random(keys.size) * 100,
                     "note": pa.array(np.char.add(f"v{version}-", (keys % 9973).astype(str)).astype(object))},
                    schema=SCHEMA)


def build(warehouse: str, rows: int, bucket: str) -> None:
    rng = np.random.default_rng(SEED)
    table = paimon_index.create_table(warehouse, "db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": bucket, "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "status"})
    table.upsert(rows_for(np.arange(rows, dtype=np.int64), rng, 0))
    table.upsert(rows_for(np.sort(rng.choice(rows, rows // 5, replace=False)).astype(np.int64), rng, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--bucket", default="4")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--dynamic", action="store_true", help="time a dynamic-bucket load too")
    args = parser.parse_args()
    from paimon_index.spark import jobs
    from paimon_index.spark.session import local_session

    spark = local_session("pk-distributed-bench", master=args.master)
    root = tempfile.mkdtemp(prefix="pkdist-")
    try:
        base = str(Path(root) / "base")
        started = time.perf_counter()
        build(base, args.rows, args.bucket)
        print(f"built {args.rows:,} rows, bucket {args.bucket}: {time.perf_counter() - started:.1f} s")
        python_wh, spark_wh = str(Path(root) / "python"), str(Path(root) / "spark")
        shutil.copytree(base, python_wh)
        shutil.copytree(base, spark_wh)
        # Warm the Python workers (their first task imports paimon-index): a tiny compaction first.
        tiny = str(Path(root) / "tiny")
        build(tiny, 1000, args.bucket)
        jobs.compact(spark, "db.t", full=True, warehouse=tiny)
        print(f"load average before: {os.getloadavg()}")
        started = time.perf_counter()
        paimon_index.open_table(python_wh, "db.t").compact(full=True)
        python_s = time.perf_counter() - started
        started = time.perf_counter()
        jobs.compact(spark, "db.t", full=True, warehouse=spark_wh)
        spark_s = time.perf_counter() - started
        print(f"full compaction, {args.rows:,} rows: python (driver) {python_s:.2f} s "
              f"({args.rows / python_s:,.0f} rows/s); jobs.compact {args.master} {spark_s:.2f} s "
              f"({args.rows / spark_s:,.0f} rows/s)")
        same = paimon_index.open_table(python_wh, "db.t").count() == paimon_index.open_table(
            spark_wh, "db.t").count() == args.rows
        print(f"same row count: {same}")
        if args.dynamic:
            dyn = str(Path(root) / "dynamic")
            paimon_index.create_table(dyn, "db.d", SCHEMA, primary_keys=["k"], options={
                "bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "status"})
            data = rows_for(np.arange(args.rows, dtype=np.int64), np.random.default_rng(SEED), 0)
            df = spark.createDataFrame(data.to_pandas()).repartition(spark.sparkContext.defaultParallelism)
            df.cache().count()
            started = time.perf_counter()
            jobs.upsert(spark, df, "db.d", warehouse=dyn)
            load_s = time.perf_counter() - started
            print(f"dynamic-bucket load via jobs.upsert, {args.rows:,} rows, {args.master}: {load_s:.2f} s "
                  f"({args.rows / load_s:,.0f} rows/s)")
        print(f"load average after: {os.getloadavg()}")
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
