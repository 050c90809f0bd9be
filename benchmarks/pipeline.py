"""The pipeline on a big table: selective reads with file indexes vs without, and the write cost.

What is measured, and how:

Table ``bench.orders`` (default 10,000,000 rows in 50 data files), generated with NumPy (seeded) and
written with :func:`paimon_index.table.write.write_arrow`, **one call per data file** (not through
Spark). Columns, like an orders table::

    id        BIGINT  unique, increasing (gaps of 1-3)           Bloom filter (items = rows per file,
                                                                  fpp 0.01)
    ts        BIGINT  epoch seconds, increasing with id (~3 s apart, up to 10 min of jitter)   no index
    category  STRING  1,000 values, uniform at random: each is ~0.1% of the rows, in every file
                                                                  bitmap
    score     INT     uniform in [0, 100,000)                     range bitmap
    amount    DOUBLE, note STRING (~45 bytes)                     payload (no index)

So ``id`` and ``ts`` are clustered (a point or narrow range hits one or two files) while
``category`` and ``score`` are spread (0.1% of the rows, in every file and every row group).

Write: the same slices are written to ``bench.orders`` (with the ``file-index.*`` options) and to
``bench.orders_plain`` (without), alternating which table goes first per slice; the ratio of the
summed wall times is the index build overhead (target <= 1.30).

Queries: ``=`` and ``IN`` (3 values) on ``category`` (bitmap), a narrow ``BETWEEN`` on ``score``
(range bitmap), a point lookup on ``id`` (Bloom filter), and, for contrast, a narrow ``BETWEEN`` on
``ts`` (no file index: only Parquet/manifest statistics can help). Variants, each timed as the best
wall time of ``--repeat`` runs in this process:

    index            ``read_arrow(table, where)``
    no index         ``read_arrow(table, where, use_index=False)``
    pypaimon         pypaimon's own read: ``ReadBuilder.with_filter(<pypaimon predicate>)``, plan + to_arrow
    spark index      ``spark.read.format("paimon_index")...load().filter(where).count()`` (local[*])
    spark no index   the same with ``.option("file-index.read.enabled", "false")``

Spark variants are warmed up once (Python workers started) before any timing.

Columns: "files" = data files the variant opened (ours: the ScanReport; pypaimon: the files its plan
kept after manifest statistics; Spark: the scan reports of the driver and the tasks). "report bytes"
= compressed Parquet column chunks of the row groups read plus the bytes read from ``.index`` files,
as counted by our ScanReport (not available for pypaimon). "syscall bytes" = growth of ``rchar`` in
``/proc/self/io`` during the best run: every byte this process got from read()/pread() (data files,
index files, manifests, snapshots, from storage or the page cache); measured the same way for the
three in-process variants, not for Spark (its reads happen in worker processes). "speed-up" = time
of "no index" / time of the variant (Spark variants: vs "spark no index").

Every variant must return the same rows (ids compared for the in-process variants, counts for
Spark, all checked against a filter of the generated data); otherwise the run fails. Targets (from
the issue): >= 10x faster than the no-index read on the selective queries answered by an index;
index build adding <= 30% to the write time. Numbers are measured, never adjusted; the machine's
load is not controlled (the load average is printed before and after). pypaimon keeps Parquet
footers in a process-wide cache between repeats; our reader opens each file anew.

    python benchmarks/pipeline.py [--rows N] [--files F] [--repeat R] [--warehouse DIR]
                                  [--spark | --no-spark] [--plot FILE.png]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
from paimon_index.table.catalog import create_table
from paimon_index.table.read import read_arrow
from paimon_index.table.write import write_arrow

SEED = 20261122
CATEGORIES = 1_000
SCORE_VALUES = 100_000
FIRST_ID = 1_000_000_000
FIRST_TS = 1_704_067_200  # 2024-01-01 00:00:00 UTC
SECONDS_PER_ROW = 3
TS_JITTER = 600
INDEXED = "bench.orders"
PLAIN = "bench.orders_plain"
TARGET_SPEEDUP = 10.0
TARGET_WRITE_OVERHEAD = 1.30
BLOOM_FPP = "0.01"


def index_options(rows_per_file: int) -> dict[str, str]:
    return {
        "file-index.bloom-filter.columns": "id",
        "file-index.bloom-filter.id.items": str(rows_per_file),
        "file-index.bloom-filter.id.fpp": BLOOM_FPP,
        "file-index.bitmap.columns": "category",
        "file-index.range-bitmap.columns": "score",
    }


def generate(rows: int) -> pa.Table:
    """The orders (NumPy for numbers, Arrow compute for strings; both vectorized)."""
    rng = np.random.default_rng(SEED)
    position = np.arange(rows, dtype=np.int64)
    names = pa.array([f"c{i:04d}" for i in range(CATEGORIES)], pa.string())
    customer = pc.cast(pa.array(rng.integers(100_000, 2_000_000, rows)), pa.string())
    street = pc.cast(pa.array(rng.integers(1, 100_000, rows)), pa.string())
    items = pc.cast(pa.array(rng.integers(1, 20, rows)), pa.string())
    return pa.table({
        "id": FIRST_ID + np.cumsum(rng.integers(1, 4, rows)),
        "ts": FIRST_TS + position * SECONDS_PER_ROW + rng.integers(0, TS_JITTER, rows),
        "category": names.take(pa.array(rng.integers(0, CATEGORIES, rows))),
        "score": rng.integers(0, SCORE_VALUES, rows).astype(np.int32),
        "amount": np.round(rng.gamma(2.0, 40.0, rows), 2),
        "note": pc.binary_join_element_wise("customer ", customer, " / ship to street ", street, " / ",
                                            items, " items", ""),
    })


@dataclass
class Query:
    label: str
    where: str  # our SQL-like text and Spark's filter
    expected: ds.Expression  # on the generated data
    pypaimon: Callable[[Any], Any]  # PredicateBuilder -> pypaimon predicate
    indexed: bool  # answered by a file index (the speed-up target applies)


def queries(data: pa.Table) -> list[Query]:
    rows = data.num_rows
    one_id = int(data.column("id")[int(rows * 0.61)].as_py())
    score_low = SCORE_VALUES // 2
    score_high = score_low + SCORE_VALUES // 1000 - 1  # 0.1% of the values
    ts_low = FIRST_TS + int(rows * 0.37) * SECONDS_PER_ROW
    ts_high = ts_low + max(rows // 1000, 1) * SECONDS_PER_ROW  # ~0.1% of the rows
    some = ["c0007", "c0500", "c0993"]
    field = ds.field
    return [
        Query("= (bitmap)", "category = 'c0421'", field("category") == "c0421",
              lambda p: p.equal("category", "c0421"), True),
        Query("IN (bitmap)", f"category IN ({', '.join(repr(v) for v in some)})",
              field("category").isin(some), lambda p: p.is_in("category", some), True),
        Query("range (range bitmap)", f"score BETWEEN {score_low} AND {score_high}",
              (field("score") >= score_low) & (field("score") <= score_high),
              lambda p: p.between("score", score_low, score_high), True),
        Query("lookup (Bloom filter)", f"id = {one_id}", field("id") == one_id,
              lambda p: p.equal("id", one_id), True),
        Query("clustered range, no index", f"ts BETWEEN {ts_low} AND {ts_high}",
              (field("ts") >= ts_low) & (field("ts") <= ts_high),
              lambda p: p.between("ts", ts_low, ts_high), False),
    ]


def syscall_read_bytes() -> int | None:
    """``rchar`` of this process (bytes returned by read-like syscalls, all threads), if Linux."""
    try:
        with open("/proc/self/io", encoding="ascii") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


@dataclass
class Measured:
    variant: str
    seconds: float
    rows: int
    files: int | None
    report_bytes: int | None
    syscall_bytes: int | None
    ids: list[int] | None = None


@dataclass
class RunResult:
    rows: int
    files: int | None
    report_bytes: int | None
    ids: list[int] | None


def best_of(repeat: int, variant: str, fn: Callable[[], RunResult], in_process: bool = True) -> Measured:
    """The fastest of ``repeat`` runs, with that run's counts and (in process) ``rchar`` growth."""
    best: Measured | None = None
    for _ in range(repeat):
        before = syscall_read_bytes() if in_process else None
        start = time.perf_counter()
        got = fn()
        seconds = time.perf_counter() - start
        after = syscall_read_bytes() if in_process else None
        io = None if before is None or after is None else after - before
        if best is None or seconds < best.seconds:
            best = Measured(variant, seconds, got.rows, got.files, got.report_bytes, io, got.ids)
    assert best is not None
    return best


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist()) if table.num_rows else []


def ours(table: Any, where: str, use_index: bool) -> RunResult:
    got, report = read_arrow(table, where, use_index=use_index)
    return RunResult(got.num_rows, report.files_planned - report.files_skipped_by_index,
                     report.data_bytes_read + report.index_bytes_read, _ids(got))


def pypaimon_read(table: Any, build: Callable[[Any], Any]) -> RunResult:
    builder = table.new_read_builder()
    builder = builder.with_filter(build(builder.new_predicate_builder()))
    splits = builder.new_scan().plan().splits()
    got = builder.new_read().to_arrow(splits)
    files = sum(len(s.files) for s in splits)
    if got is None:
        return RunResult(0, files, None, [])
    return RunResult(got.num_rows, files, None, _ids(got))


@dataclass
class Written:
    plain_s: float
    indexed_s: float
    data_files: int
    data_bytes: int
    index_bytes: int
    index_files: int
    embedded: int


def write_tables(warehouse: str, data: pa.Table, files: int) -> Written:
    per_file = -(-data.num_rows // files)
    plain = create_table(warehouse, PLAIN, data.schema, options={"bucket": "-1"})
    indexed = create_table(warehouse, INDEXED, data.schema,
                           options={"bucket": "-1", **index_options(per_file)})
    seconds = {PLAIN: 0.0, INDEXED: 0.0}
    for k, first in enumerate(range(0, data.num_rows, per_file)):
        part = data.slice(first, per_file)
        order = [(PLAIN, plain), (INDEXED, indexed)]
        for name, table in order if k % 2 == 0 else order[::-1]:  # alternate: load drift hits both
            start = time.perf_counter()
            write_arrow(table, part)
            seconds[name] += time.perf_counter() - start
    metas = [m for s in indexed.new_read_builder().new_scan().plan().splits() for m in s.files]
    index_files = [os.path.join(os.path.dirname(m.file_path), name)
                   for m in metas for name in m.extra_files or () if name.endswith(".index")]
    embedded = [len(m.embedded_index) for m in metas if m.embedded_index]
    return Written(seconds[PLAIN], seconds[INDEXED], len(metas), sum(m.file_size for m in metas),
                   sum(os.path.getsize(p) for p in index_files) + sum(embedded), len(index_files),
                   len(embedded))


class SparkReads:
    """The ``paimon_index`` source through a local session; counts plus the gathered scan report."""

    def __init__(self, warehouse: str) -> None:
        from paimon_index.spark.session import local_session

        self.spark = local_session("bench-pipeline")
        self.warehouse = warehouse

    def count(self, where: str, use_index: bool) -> RunResult:
        from paimon_index.spark.report import collect_scan_report, scan_report_dir

        with scan_report_dir() as reports:
            # Pushdown forced on: each count loads a fresh DataFrame that one query scans once, the
            # case where it is exact on Spark 4.1-4.3 too ('auto' leaves every filter to Spark there,
            # so neither value statistics nor indexes would prune and the comparison would be moot).
            count = (self.spark.read.format("paimon_index").option("warehouse", self.warehouse)
                     .option(SINGLE_SCAN_PUSHDOWN, "true")
                     .option("file-index.read.enabled", "true" if use_index else "false")
                     .option("scan-report", reports).load(INDEXED).filter(where).count())
            report = collect_scan_report(reports)
        return RunResult(count, report.files_planned - report.files_skipped_by_index,
                         report.data_bytes_read + report.index_bytes_read, None)

    def warm_up(self, where: str) -> None:
        self.count(where, True)
        self.count(where, False)

    def stop(self) -> None:
        self.spark.stop()


def _num(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def print_write(w: Written, rows: int) -> float:
    ratio = w.indexed_s / w.plain_s
    print(f"write: write_arrow, one call per data file ({w.data_files} files), same slices to both tables")
    print(f"{'table':<24}{'seconds':>9}{'rows/s':>13}{'data bytes':>15}{'index bytes':>14}{'ratio':>7}")
    print(f"{'without file indexes':<24}{w.plain_s:>9.2f}{rows / w.plain_s:>13,.0f}{'':>15}{'':>14}"
          f"{1:>7.2f}")
    print(f"{'with file indexes':<24}{w.indexed_s:>9.2f}{rows / w.indexed_s:>13,.0f}{w.data_bytes:>15,}"
          f"{w.index_bytes:>14,}{ratio:>7.2f}")
    print(f"index storage: {w.index_files} .index files, {w.embedded} embedded in the manifest; "
          f"index bytes = {w.index_bytes / w.data_bytes:.1%} of the data bytes")
    verdict = "met" if ratio <= TARGET_WRITE_OVERHEAD else "NOT met"
    print(f"index build overhead {ratio:.2f}x   target <= {TARGET_WRITE_OVERHEAD:.2f}x: {verdict}\n")
    return ratio


def print_query(q: Query, expected: int, total: int, results: list[Measured]) -> dict[str, float]:
    times = {r.variant: r.seconds for r in results}
    print(f"{q.label}: {q.where}   ({expected:,} rows = {expected / total:.3%})")
    print(f"{'variant':<16}{'seconds':>9}{'rows':>10}{'files':>7}{'report bytes':>15}{'syscall bytes':>15}"
          f"{'speed-up':>10}")
    for r in results:
        base = times["spark no index"] if r.variant.startswith("spark") else times["no index"]
        print(f"{r.variant:<16}{r.seconds:>9.3f}{r.rows:>10,}{_num(r.files):>7}{_num(r.report_bytes):>15}"
              f"{_num(r.syscall_bytes):>15}{base / r.seconds:>9.1f}x")
    speedups = {"read_arrow": times["no index"] / times["index"]}
    if "spark index" in times:
        speedups["spark"] = times["spark no index"] / times["spark index"]
    for name, s in speedups.items():
        if q.indexed:
            verdict = "met" if s >= TARGET_SPEEDUP else "NOT met"
            print(f"{name}: index vs no index {s:.1f}x   target >= {TARGET_SPEEDUP:.0f}x: {verdict}")
        else:
            print(f"{name}: index vs no index {s:.1f}x   (no file index on this column: no target)")
    print()
    return speedups


def plot(path: str, title: str, labels: list[str], all_results: list[list[Measured]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no plot written to {path}")
        return
    variants = [r.variant for r in all_results[0]]
    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.8 / len(variants)
    for i, variant in enumerate(variants):
        seconds = [next(r.seconds for r in rs if r.variant == variant) for rs in all_results]
        ax.bar(np.arange(len(labels)) + i * width, seconds, width, label=variant)
    ax.set_xticks(np.arange(len(labels)) + width * (len(variants) - 1) / 2, labels)
    ax.set_yscale("log")
    ax.set_title(title)
    ax.set_ylabel("wall seconds (best run, log scale)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def run(warehouse: str, args: argparse.Namespace) -> None:
    from paimon_index.table.catalog import open_table

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min) at start; "
          f"warehouse {warehouse}")
    start = time.perf_counter()
    data = generate(args.rows)
    print(f"generated {args.rows:,} rows in {time.perf_counter() - start:.1f} s\n")
    per_file = -(-args.rows // args.files)
    print("index options: " + ", ".join(f"{k}={v}" for k, v in index_options(per_file).items()))
    written = write_tables(warehouse, data, args.files)
    if written.data_files < args.files:
        raise SystemExit(f"expected {args.files} data files, the table has {written.data_files}")
    ratio = print_write(written, args.rows)
    table = open_table(warehouse, INDEXED)
    spark = SparkReads(warehouse) if args.spark else None
    if spark is not None:
        spark.warm_up("id = -1")
    print(f"reads: {args.rows:,} rows in {written.data_files} data files, best of {args.repeat}. files: data "
          "files opened (pypaimon: kept by its plan; Arrow may then skip their row groups by Parquet "
          "statistics); report bytes: our ScanReport (data + index); syscall bytes: rchar of this process; "
          "speed-up: vs 'no index' (Spark rows: vs 'spark no index')\n")
    verdicts: list[tuple[str, str, float]] = []
    all_results: list[list[Measured]] = []
    try:
        for q in queries(data):
            expected = data.filter(q.expected)
            results = [
                best_of(args.repeat, "index", lambda q=q: ours(table, q.where, True)),
                best_of(args.repeat, "no index", lambda q=q: ours(table, q.where, False)),
                best_of(args.repeat, "pypaimon", lambda q=q: pypaimon_read(table, q.pypaimon)),
            ]
            if spark is not None:
                results.append(best_of(args.repeat, "spark index", lambda q=q: spark.count(q.where, True),
                                       in_process=False))
                results.append(best_of(args.repeat, "spark no index",
                                       lambda q=q: spark.count(q.where, False), in_process=False))
            want = _ids(expected)
            for r in results:
                assert r.rows == expected.num_rows, f"{q.where}: {r.variant} returned {r.rows:,} rows, " \
                                                    f"expected {expected.num_rows:,}"
                assert r.ids is None or r.ids == want, f"{q.where}: {r.variant} returned other rows"
            speedups = print_query(q, expected.num_rows, args.rows, results)
            all_results.append(results)
            if q.indexed:
                verdicts += [(q.label, name, s) for name, s in speedups.items()]
    finally:
        if spark is not None:
            spark.stop()
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    met = [v for v in verdicts if v[2] >= TARGET_SPEEDUP]
    print(f"summary: read target (>= {TARGET_SPEEDUP:.0f}x) met by {len(met)} of {len(verdicts)} "
          f"(query, reader) pairs: " + (", ".join(f"{label} via {name}" for label, name, _ in met) or "none"))
    print(f"summary: write overhead {ratio:.2f}x (target <= {TARGET_WRITE_OVERHEAD:.2f}x): "
          f"{'met' if ratio <= TARGET_WRITE_OVERHEAD else 'NOT met'}")
    if args.plot:
        plot(args.plot, f"{args.rows:,} rows in {written.data_files} files, best of {args.repeat}",
             [q.label for q in queries(data)], all_results)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant; the best time is shown")
    parser.add_argument("--warehouse", help="where to write the tables (kept); default: a temporary "
                                            "directory, removed afterwards")
    parser.add_argument("--spark", action=argparse.BooleanOptionalAction, default=True,
                        help="also read through the paimon_index Spark source")
    parser.add_argument("--plot", metavar="FILE.png", help="save a bar chart of the read times "
                                                          "(needs matplotlib)")
    args = parser.parse_args()
    if args.rows < args.files or args.files < 1 or args.repeat < 1:
        parser.error("need --rows >= --files >= 1 and --repeat >= 1")
    if args.warehouse:
        Path(args.warehouse).mkdir(parents=True, exist_ok=True)
        if (Path(args.warehouse) / "bench.db").exists():
            parser.error(f"{args.warehouse} already holds bench.db: give an empty warehouse")
        run(args.warehouse, args)
        return
    root = tempfile.mkdtemp(prefix="bench-pipeline-")
    try:
        run(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

