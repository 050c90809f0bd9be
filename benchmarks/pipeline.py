"""The pipeline on a big table: selective reads with file indexes vs without, and the write cost.

Table ``bench.orders`` (default 10,000,000 rows in 50 data files, one ``write_arrow`` per file),
generated with NumPy (seeded):

    id        BIGINT  unique, in random order across files   Bloom filter (file-index.bloom-filter)
    category  STRING  1,000 values; each value is one run of 0.1% of the rows (data arrives grouped,
                      as after a sort or by ingestion batch), so it lives in one or two files
                                                               bitmap
    ts        BIGINT  seconds, increasing with the row (with jitter)    range bitmap
    amount    DOUBLE, note STRING                              payload (no index)

Queries (each ≈ 0.1% of the rows or fewer):

    =      category = 'c0421'                         bitmap
    IN     category IN ('c0007', 'c0500', 'c0993')    bitmap
    range  ts BETWEEN a AND a + 0.05% of the span     range bitmap
    lookup id = <one id>                              Bloom filter

Variants (wall time, best of ``--repeat``; rows must agree, else the run fails):

    index      ``read_arrow(table, where)``: files skipped by index, selected rows only
    no index   ``read_arrow(table, where, use_index=False)``: every file read, then filtered
    pypaimon   pypaimon's own read with the same filter (``ReadBuilder.with_filter``)
    spark ix   ``spark.read.format("paimon_index") ... .filter(where).count()`` with indexes
    spark no   the same with ``file-index.read.enabled = false``

"bytes" is what the variant read from storage: compressed Parquet column chunks of the row groups
read plus the bytes read from ``.index`` files (our reader's ScanReport). pypaimon's bytes are not
measured (it hands the filter to Arrow, which prunes row groups and pages by statistics on its
own); only the number of files its plan kept is shown. The write table compares writing the same data to a
table with the index options and to one without. Targets (from the issue): ≥ 10x faster than the
no-index read on selective queries; index build adding ≤ 30% to the write time. Measured numbers
only; the machine's load is not controlled.

    python benchmarks/pipeline.py [--rows N] [--files F] [--repeat R] [--no-spark]
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

from paimon_index.table.catalog import create_table
from paimon_index.table.read import read_arrow
from paimon_index.table.write import write_arrow

SEED = 20261122
CATEGORIES = 1_000
SECONDS_PER_ROW = 3
INDEX_OPTIONS = {
    "file-index.bloom-filter.columns": "id",
    "file-index.bitmap.columns": "category",
    "file-index.range-bitmap.columns": "ts",
}
TARGET_SPEEDUP = 10.0
TARGET_WRITE_OVERHEAD = 1.30


def generate(rows: int) -> pa.Table:
    rng = np.random.default_rng(SEED)
    run = -(-rows // CATEGORIES)
    names = np.array([f"c{i:04d}" for i in range(CATEGORIES)], dtype=object)
    position = np.arange(rows, dtype=np.int64)
    return pa.table({
        "id": rng.permutation(rows).astype(np.int64) * 7 + 1,
        "category": pa.array(names[position // run], pa.string()),
        "ts": position * SECONDS_PER_ROW + rng.integers(0, 60, rows),
        "amount": np.round(rng.random(rows) * 1000, 2),
        "note": pa.array(np.char.add("order note ", (position % 9973).astype(str)).astype(object),
                         pa.string()),
    })


def write_table(warehouse: str, name: str, data: pa.Table, files: int, options: dict[str, str]) -> float:
    table = create_table(warehouse, name, data.schema, options={"bucket": "-1", **options})
    per_file = -(-data.num_rows // files)
    start = time.perf_counter()
    for first in range(0, data.num_rows, per_file):
        write_arrow(table, data.slice(first, per_file))
    return time.perf_counter() - start


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def pypaimon_read(table: Any, build: Callable[[Any], Any]) -> tuple[int, int, None]:
    """Rows and files kept by pypaimon's plan, for pypaimon's filtered read (bytes: not measured)."""
    builder = table.new_read_builder()
    builder = builder.with_filter(build(builder.new_predicate_builder()))
    splits = builder.new_scan().plan().splits()
    rows = builder.new_read().to_arrow(splits)
    files = [f for s in splits for f in s.files]
    return (0 if rows is None else rows.num_rows), len(files), None


def queries(data: pa.Table) -> list[tuple[str, str, Callable[[Any], Any]]]:
    ts = data.column("ts").to_numpy()
    low = int(ts[len(ts) // 3])
    high = low + int((ts[-1] - ts[0]) * 0.0005)
    one_id = int(data.column("id")[len(ts) // 2].as_py())
    return [
        ("=", "category = 'c0421'", lambda p: p.equal("category", "c0421")),
        ("IN", "category IN ('c0007', 'c0500', 'c0993')",
         lambda p: p.is_in("category", ["c0007", "c0500", "c0993"])),
        ("range", f"ts BETWEEN {low} AND {high}", lambda p: p.between("ts", low, high)),
        ("lookup", f"id = {one_id}", lambda p: p.equal("id", one_id)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-spark", dest="spark", action="store_false")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        run(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(root: Path, args: argparse.Namespace) -> None:
    from paimon_index.table.catalog import open_table

    data = generate(args.rows)
    warehouse = str(root)
    plain_s = write_table(warehouse, "bench.plain", data, args.files, {})
    indexed_s = write_table(warehouse, "bench.orders", data, args.files, INDEX_OPTIONS)
    table = open_table(warehouse, "bench.orders")
    print(f"table: {args.rows:,} rows in {args.files} data files, best of {args.repeat}\n")
    print(f"{'write':<26}{'seconds':>9}{'rows/s':>14}{'ratio':>8}")
    print(f"{'without file indexes':<26}{plain_s:>9.2f}{args.rows / plain_s:>14,.0f}{1:>8.2f}")
    ratio = indexed_s / plain_s
    verdict = "met" if ratio <= TARGET_WRITE_OVERHEAD else "NOT met"
    print(f"{'with file indexes':<26}{indexed_s:>9.2f}{args.rows / indexed_s:>14,.0f}{ratio:>8.2f}"
          f"   target <= {TARGET_WRITE_OVERHEAD:.2f}: {verdict}")

    spark = None
    if args.spark:
        from paimon_index.spark.session import local_session

        spark = local_session("bench-pipeline")

        def spark_count(where: str, enabled: str) -> int:
            return (spark.read.format("paimon_index").option("warehouse", warehouse)
                    .option("file-index.read.enabled", enabled).load("bench.orders").filter(where).count())

        spark_count("id = -1", "true")  # warm-up: Python workers for planning and reading

    for label, where, pypaimon_filter in queries(data):
        rows_ix = {}
        results = []
        t, (got, report) = best_of(args.repeat, lambda where=where: read_arrow(table, where))
        rows_ix["index"] = got.num_rows
        results.append(("index", t, got.num_rows, report.files_planned - report.files_skipped_by_index,
                        report.data_bytes_read + report.index_bytes_read))
        t, (got, report) = best_of(args.repeat, lambda where=where: read_arrow(table, where, use_index=False))
        rows_ix["no index"] = got.num_rows
        results.append(("no index", t, got.num_rows, report.files_planned, report.data_bytes_read))
        t, (count, files, size) = best_of(args.repeat, lambda f=pypaimon_filter: pypaimon_read(table, f))
        rows_ix["pypaimon"] = count
        results.append(("pypaimon", t, count, files, size))
        if spark is not None:
            t, count = best_of(args.repeat, lambda where=where: spark_count(where, "true"))
            rows_ix["spark ix"] = count
            results.append(("spark ix", t, count, None, None))
            t, count = best_of(args.repeat, lambda where=where: spark_count(where, "false"))
            rows_ix["spark no"] = count
            results.append(("spark no", t, count, None, None))
        if len(set(rows_ix.values())) != 1:
            raise SystemExit(f"{where}: the variants disagree: {rows_ix}")
        baseline = dict((r[0], r[1]) for r in results)
        print(f"\n{label}: {where}")
        print(f"{'variant':<12}{'seconds':>9}{'rows':>10}{'files':>7}{'bytes read':>16}{'speed-up':>10}")
        for name, seconds, rows, files, size in results:
            base = baseline["spark no"] if name.startswith("spark") else baseline["no index"]
            print(f"{name:<12}{seconds:>9.3f}{rows:>10,}{'' if files is None else files:>7}"
                  f"{'n/a' if size is None else f'{size:,}':>16}{base / seconds:>9.1f}x")
        speedup = baseline["no index"] / baseline["index"]
        print(f"index vs no index: {speedup:.1f}x   target >= {TARGET_SPEEDUP:.0f}x: "
              f"{'met' if speedup >= TARGET_SPEEDUP else 'NOT met'}")


if __name__ == "__main__":
    main()
