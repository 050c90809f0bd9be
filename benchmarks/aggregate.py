"""Index-only aggregates against reading the data, measured in one run.

    python benchmarks/aggregate.py [--rows N] [--files F] [--repeat R] [--spark]

One append table of N rows in F data files (a bitmap index on ``status``, a range bitmap on
``score``, deletion vectors on, 1% of the rows deleted). Rows (interleaved: reference and ours
alternate, best of ``--repeat``):

    count(*)                 no predicate: row counts minus deletion-vector cardinalities (ours)
                             vs reading a column of every file and dropping the deleted rows
    count WHERE bitmap       ``status = 'PAID'``: |bitmap - vector| per file vs the same count
                             with ``use_index=False`` (the predicate's column of every file read)
    count WHERE range        ``score BETWEEN 200 AND 300`` on the range bitmap, likewise
    count WHERE and          both: ``status = 'PAID' AND score >= 900``
    count WHERE unindexed    ``amount < 10`` (no index): the fallback reads as the reference does
    min/max(score)           the range bitmap's TopN rows (deletion vectors present) vs reading
    Spark count WHERE        (``--spark``) Spark's own ``spark.read.parquet(files).filter(w).count()``
                             over the same data files (no deletion vectors applied: an upper bound
                             on Spark's work), against our index-only count
    metadata cache           each indexed count with the process's metadata cache off (every
                             manifest, container and vector read and parsed again) against on
                             and warm (interleaved), with the cache hits of one query
    jobs.count               (``--spark``) ``jobs.count`` on an indexed WHERE (driver only) and on
                             an unindexed one (files counted by Spark tasks), against
                             ``Table.count`` (everything in the driver's Python)

Reported: seconds, rows/s (table rows per second of answer time), bytes read, and the speed-up
(reference time / ours). Every answer is checked equal to its reference before it is timed.
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

import paimon_index

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("status", pa.string()),
                    ("score", pa.int32()), ("amount", pa.float64())])
STATUSES = np.array(["PAID", "OPEN", "CANCELLED", "REFUNDED", "SHIPPED"], dtype=object)
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "status",
           "file-index.range-bitmap.columns": "score"}
DELETED_FRACTION = 100  # one row in this many is deleted


def rows(n: int, start: int) -> pa.Table:
    rng = np.random.default_rng(start)
    return pa.table({"id": pa.array(np.arange(start, start + n, dtype=np.int64)),
                     "status": pa.array(STATUSES[rng.integers(0, len(STATUSES), n)]),
                     "score": pa.array(rng.integers(0, 1000, n).astype(np.int32),
                                       mask=rng.random(n) < 0.02),
                     "amount": pa.array(rng.random(n) * 1000)}, schema=SCHEMA)


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    answer = run()
    return time.perf_counter() - start, answer


def build(root: Path, n: int, files: int) -> paimon_index.Table:
    table = paimon_index.create_table(str(root), "db.orders", SCHEMA, options=OPTIONS)
    per_file = n // files
    for f in range(files):
        table.write(rows(per_file, f * per_file))
    # Delete 1% by an id range per file (the bitmap and range bitmap then differ from the live rows).
    table.delete(" OR ".join(f"(id >= {f * per_file} AND id < {f * per_file + per_file // DELETED_FRACTION})"
                             for f in range(files)))
    return table


def compare(table: paimon_index.Table, name: str, n: int, repeat: int, ours: Callable[[], Any],
            reference: Callable[[], Any], ref_bytes_of: Callable[[], int] | None = None) -> None:
    best_ours = best_ref = float("inf")
    ref_bytes = ours_bytes = 0
    for _ in range(repeat):
        t_ref, want = timed(reference)
        ref_bytes = ref_bytes_of() if ref_bytes_of is not None else _bytes(table)
        t_ours, got = timed(ours)
        ours_bytes = _bytes(table)
        if str(got) != str(want):
            raise SystemExit(f"{name}: ours {got} != reference {want}")
        best_ours, best_ref = min(best_ours, t_ours), min(best_ref, t_ref)
    print(f"{name:<24} {best_ref:9.3f} {n / best_ref:14,.0f} {ref_bytes:13,} {best_ours:9.4f} "
          f"{n / best_ours:16,.0f} {ours_bytes:12,} {best_ref / best_ours:8.1f}x")


def _bytes(table: paimon_index.Table) -> int:
    """Data and index bytes the last aggregate read."""
    report = table.last_aggregate_report
    return 0 if report is None else report.scan.data_bytes_read + report.scan.index_bytes_read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark", action="store_true", help="also time Spark's count over the files")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-aggregate-"))
    try:
        start = time.perf_counter()
        table = build(root, args.rows, args.files)
        print(f"table: {args.rows:,} rows, {args.files} files, 1% deleted, built in "
              f"{time.perf_counter() - start:.1f}s")
        print(f"{'query':<24} {'read (s)':>9} {'read rows/s':>14} {'read bytes':>13} {'index (s)':>9} "
              f"{'index rows/s':>16} {'index bytes':>12} {'speed-up':>9}")
        n = args.rows

        def read_count() -> int:  # reference without a predicate: read a column, drop deleted rows
            return table.read(columns=["id"], use_index=False).num_rows

        def read_bytes() -> int:
            report = table.last_scan_report
            return 0 if report is None else report.data_bytes_read
        compare(table, "count(*)", n, args.repeat, table.count, read_count, read_bytes)
        for name, where in [("count WHERE bitmap", "status = 'PAID'"),
                            ("count WHERE range", "score BETWEEN 200 AND 300"),
                            ("count WHERE and", "status = 'PAID' AND score >= 900"),
                            ("count WHERE unindexed", "amount < 10")]:
            compare(table, name, n, args.repeat, lambda w=where: table.count(w),
                    lambda w=where: table.count(w, use_index=False))
        compare(table, "min/max(score)", n, args.repeat, lambda: table.min_max("score"),
                lambda: table.min_max("score", use_index=False))
        cache_counts(table, n, args.repeat)
        if args.spark:
            spark_counts(table, n, args.repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cache_counts(table: paimon_index.Table, n: int, repeat: int) -> None:
    """Each indexed count with the metadata cache off against on and warm, interleaved."""
    from paimon_index.table.metacache import configure, metadata_cache

    budget = metadata_cache().max_bytes or 256 << 20
    print(f"{'metadata cache':<24} {'off (s)':>9} {'warm (s)':>9} {'speed-up':>9} {'hits/query':>11}")
    for name, where in [("count(*)", None), ("count WHERE bitmap", "status = 'PAID'"),
                        ("count WHERE range", "score BETWEEN 200 AND 300")]:
        best_off = best_warm = float("inf")
        hits = 0
        for _ in range(repeat):
            configure(0)
            t_off, want = timed(lambda w=where: table.count(w))
            configure(budget)
            table.count(where)  # fills the cache
            t_warm, got = timed(lambda w=where: table.count(w))
            if got != want:
                raise SystemExit(f"{name}: cached {got} != uncached {want}")
            report = table.last_aggregate_report
            hits = 0 if report is None else report.scan.metadata_cache_hits
            best_off, best_warm = min(best_off, t_off), min(best_warm, t_warm)
        print(f"{name:<24} {best_off:9.4f} {best_warm:9.4f} {best_off / best_warm:8.1f}x {hits:11,}")


def spark_counts(table: paimon_index.Table, n: int, repeat: int) -> None:
    """Spark's count over the table's data files (no deletion vectors: ours answers the live rows,
    so the check is against Spark's count minus the deleted matching rows, computed by us)."""
    from paimon_index.spark.session import local_session

    spark = local_session("bench-aggregate", master="local[2]")
    files = sorted(str(p) for p in Path(table.warehouse).rglob("data-*.parquet"))
    frame = spark.read.parquet(*files)
    for where in ("status = 'PAID'", "score BETWEEN 200 AND 300"):
        best_spark = best_ours = float("inf")
        for _ in range(repeat):
            t_spark, spark_all = timed(lambda w=where: frame.filter(w).count())
            t_ours, ours = timed(lambda w=where: table.count(w))
            best_spark, best_ours = min(best_spark, t_spark), min(best_ours, t_ours)
        deleted = table.count(where, use_index=False)
        print(f"Spark count WHERE {where!r}: Spark {best_spark:.3f}s ({n / best_spark:,.0f} rows/s, "
              f"{spark_all:,} rows incl. deleted) vs index-only {best_ours:.4f}s ({ours:,} live rows; "
              f"read path agrees: {deleted == ours}): {best_spark / best_ours:.1f}x")
    from paimon_index.spark import jobs

    identifier = table.identifier
    for where in ("status = 'PAID'", "amount < 10"):
        best_job = best_python = float("inf")
        for _ in range(repeat):
            t_job, by_job = timed(lambda w=where: jobs.count(spark, identifier, w, warehouse=table.warehouse))
            t_python, by_python = timed(lambda w=where: table.count(w))
            if by_job != by_python:
                raise SystemExit(f"jobs.count {where!r}: {by_job} != Table.count {by_python}")
            best_job, best_python = min(best_job, t_job), min(best_python, t_python)
        print(f"jobs.count WHERE {where!r}: {best_job:.3f}s vs Table.count {best_python:.3f}s "
              f"({by_job:,} rows)")
    spark.stop()


if __name__ == "__main__":
    main()
