"""Row-level DELETE through deletion vectors: delete 1% of a table and read it back.

The table (default 10,000,000 rows in 50 data files; ``deletion-vectors.enabled``, bitmap index on
``category``, 100 categories uniformly spread, so ``category = 'c042'`` is 1% of every file):

    id BIGINT, category STRING, amount DOUBLE, note STRING

Measured (wall time, best of ``--repeat``):

    read before       full read of the table with our reader (``read_arrow``), and the 1% query
    delete            ``DELETE ... WHERE category = 'c042'``: find the rows through the bitmap index,
                      mark them in every bucket's deletion vector, write the DV index file, commit
                      — as a Spark job (``paimon_index.spark.jobs.delete``) and in one process
                      (``delete_arrow``), each on its own copy of the table
    read after        the same reads after the delete (deletion vectors applied)

The ratio column compares the read after the delete with the read before it: the cost of
applying the vectors. Numbers are measured on this machine only; there is no Java reference.

    python benchmarks/row_level.py [--rows N] [--files F] [--repeat R] [--no-spark]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.read import read_arrow
from paimon_index.table.row_level import delete_arrow
from paimon_index.table.write import write_arrow

SEED = 20261122
CATEGORIES = 100
DELETED_CATEGORY = "c042"
TABLE = "bench.events"
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "category"}


def generate(rows: int, first: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(first, first + rows, dtype=np.int64)
    names = np.array([f"c{i:03d}" for i in range(CATEGORIES)], dtype=object)
    return pa.table({"id": ids, "category": pa.array(names[rng.integers(0, CATEGORIES, rows)], pa.string()),
                     "amount": rng.random(rows) * 1000,
                     "note": pa.array(np.char.add("note-", (ids % 997).astype(str)).astype(object),
                                      pa.string())})


def build(warehouse: str, rows: int, files: int) -> float:
    table = create_table(warehouse, TABLE, generate(1, 0, np.random.default_rng(0)).schema, options=OPTIONS)
    rng = np.random.default_rng(SEED)
    per_file = -(-rows // files)
    start = time.perf_counter()
    for first in range(0, rows, per_file):
        write_arrow(table, generate(min(per_file, rows - first), first, rng))
    return time.perf_counter() - start


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def reads(warehouse: str, repeat: int) -> dict[str, tuple[float, int]]:
    table = open_table(warehouse, TABLE)
    out = {}
    for name, where in (("full read", "id >= 0"), ("1% query", f"category = '{DELETED_CATEGORY}'"),
                        ("other 1% query", "category = 'c007'")):
        seconds, (rows, _) = best(lambda where=where: read_arrow(table, where), repeat)
        out[name] = (seconds, rows.num_rows)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-spark", dest="spark", action="store_false")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-row-level-"))
    try:
        python_wh, spark_wh = str(root / "python"), str(root / "spark")
        written = build(python_wh, args.rows, args.files)
        print(f"{args.rows:,} rows in {args.files} files written in {written:.1f}s")
        before = reads(python_wh, args.repeat)
        if args.spark:
            shutil.copytree(python_wh, spark_wh)
        start = time.perf_counter()
        snapshot = delete_arrow(open_table(python_wh, TABLE), f"category = '{DELETED_CATEGORY}'")
        delete_python = time.perf_counter() - start
        deleted = before["1% query"][1]
        after = reads(python_wh, args.repeat)
        assert snapshot is not None and after["1% query"][1] == 0
        assert after["full read"][1] == before["full read"][1] - deleted
        delete_spark = None
        if args.spark:
            from paimon_index.spark import jobs
            from paimon_index.spark.session import local_session

            spark = local_session("bench-row-level")
            # Warm-up read (session, workers, imports). Pushdown forced on as in the DELETE job's own
            # read: this DataFrame is scanned once, by one query, so it is exact on every Spark.
            (spark.read.format("paimon_index").option("warehouse", spark_wh)
             .option(SINGLE_SCAN_PUSHDOWN, "true").load(TABLE).limit(1).collect())
            start = time.perf_counter()
            jobs.delete(spark, TABLE, f"category = '{DELETED_CATEGORY}'", warehouse=spark_wh)
            delete_spark = time.perf_counter() - start
            check = open_table(spark_wh, TABLE)
            assert read_arrow(check, "id >= 0")[0].num_rows == after["full read"][1]

        print(f"\nDELETE of {deleted:,} rows ({deleted / args.rows:.2%}) through deletion vectors")
        print(f"{'step':<28}{'seconds':>10}{'rows':>14}{'rows/s':>16}{'after/before':>14}")
        for name, seconds in (("delete (Spark job)", delete_spark), ("delete (one process)", delete_python)):
            if seconds is not None:
                print(f"{name:<28}{seconds:>10.2f}{deleted:>14,}{deleted / seconds:>16,.0f}")
        for name in before:
            (t0, n0), (t1, n1) = before[name], after[name]
            print(f"{'read ' + name + ' before':<28}{t0:>10.2f}{n0:>14,}{n0 / max(t0, 1e-9):>16,.0f}")
            print(f"{'read ' + name + ' after':<28}{t1:>10.2f}{n1:>14,}{n1 / max(t1, 1e-9):>16,.0f}"
                  f"{t1 / t0:>14.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
