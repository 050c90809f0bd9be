"""What deletion vectors cost the planned read, in one run: interleaved rounds, ratios of this run.

Tables (cached under ``benchmarks/.data/scan-costs/``, rebuilt when rows or the generator change):

    lineitem  TPC-H lineitem (``tpchgen-cli``, scale factor rows / 6,001,215, the first ``--rows``
              rows), four data files, ``deletion-vectors.enabled``, no index
    events    the table of ``benchmarks/spark_read.py`` (its generator and indexes), ``--rows`` x 10/3
              rows in 50 files, without spark_read's own delete
    indexed   the same lineitem rows in four files with range-bitmap indexes on Q6's and Q1's columns
              (as ``tests/sqlref/tpch.py`` indexes them), no deletes: every file's min/max overlaps
              Q6's ranges, so the indexes prune nothing

Deletes, each one snapshot on top of the last, read by time travel (so 15% holds the 1%):

    random     lineitem ``l_partkey <= P`` (uniform keys); events ``amount < A`` (uniform): 1%, 15%, 50%
    clustered  runs of ``l_orderkey`` / ``id`` (increasing in file order): 40 runs per file at each
               fraction (each run grows with the fraction), 1%, 15%, 50%

Measurements (each a table row; ``ratio`` = median / median of its reference, both in this run):

    no deletes     planned read (nothing pruned: no WHERE, ``small_read_bytes=0``) vs
                   ``spark.read.parquet`` of the live files (Spark's default single-task setting, as in
                   spark_read.py)                                           target <= 1.10
    indexes        ``indexed``: the planned read with the query's WHERE (the indexes asked, as a user's
                   read asks them; default ``small_read_bytes``) vs ``spark.read.parquet`` of the same
                   files                                                    target <= 1.10
    every index    the same, every index body read (as before the plan weighed their costs:
                   ``plan_read(whole_files=False)``), for the comparison in one run
    deleted x%     planned read with the vectors vs ``spark.read.parquet`` of the same data files
                   without them (the rows the vectors remove counted too)   target <= 1.10
    primary key    a primary-key table (deletion-vectors mode, bucket 4, ``--pk-rows`` keys) after a
                   10% upsert vs the same table after a full compaction (time travel to each
                   snapshot)                                                target <= 1.10;
                   ``count`` and ``filter`` shape the planned read's DataFrame; ``count (SQL)`` is
                   ``paimon.sql("SELECT count(*) ...")``, which counts from metadata (rows minus
                   vectors) as Paimon's connector does (its aggregate push-down)
    task size      the largest serialized task Spark started while the row ran (Spark's own "Starting
                   task ... N bytes" log line, read from the JVM's stderr) target < 1 MiB

Queries: lineitem ``Q6`` (four columns, 2% of the rows pass) and ``Q1`` (the pricing summary: seven
columns, 98% pass, grouped); events ``full aggregate`` (spark_read's) and ``spread`` (``status =
'REFUNDED'`` hashed); the primary-key table ``count`` and ``filter`` (``r < 10`` hashed). Checked:
each planned read's row count equals the live rows of its plan (rows minus vectors), and where the
rows must be the same (no deletes; the primary-key table's two snapshots) the results are equal.

After one untimed warm-up of every cell, each round runs every cell with the variants' order
alternating per round. The machine may be shared: the load average is printed. Numbers are measured,
never adjusted.

    python benchmarks/scan_costs.py [--rows N] [--pk-rows N] [--rounds R]
                                    [--only lineitem,indexed,events,pk]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spark_read  # the events table's generator

GENERATOR_VERSION = 1
DATA = Path(__file__).resolve().parent / ".data" / "scan-costs"
TPCH_ROWS_SF1 = 6_001_215
LINEITEM_FILES = 4
EVENTS_FILES = 50
FRACTIONS = (0.01, 0.15, 0.50)
CLUSTER_RUNS_PER_FILE = 40
PK_BUCKETS = "4"
PK_UPSERT = 0.10
TARGET = 1.10
#: The ``indexed`` table's indexes: ``tests/sqlref/tpch.py``'s range bitmaps of lineitem.
INDEXED_OPTIONS = {"file-index.range-bitmap.columns":
                   "l_shipdate,l_commitdate,l_receiptdate,l_extendedprice,l_discount,l_quantity"}
TASK_LIMIT = 1 << 20
#: Set on by paimon-index's local sessions; the ``spark.read.parquet`` reference of "no deletes" runs
#: at Spark's default (off), as spark_read.py's does.
SINGLE_TASK_SETTING = spark_read.SINGLE_TASK_SETTING


# ------------------------------------------------------------------------------------------------
# Task sizes: Spark logs every task it starts with its serialized size (INFO of TaskSetManager).
# ------------------------------------------------------------------------------------------------
_STARTED = re.compile(r"Starting task .*?, (\d+) bytes\)")
_LARGE = re.compile(r"very large size \((\d+) KiB\)")


class TaskSizes:
    """The JVM's stderr (inherited from this process's fd 2) through a pipe: task sizes are taken
    from it, everything else is passed on except TaskSetManager's INFO lines."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self._lock = threading.Lock()
        read, write = os.pipe()
        self._out = os.dup(2)
        os.dup2(write, 2)
        threading.Thread(target=self._pump, args=(read,), daemon=True).start()

    def _pump(self, fd: int) -> None:
        rest = b""
        while chunk := os.read(fd, 1 << 16):
            *lines, rest = (rest + chunk).split(b"\n")
            for line in lines:
                text = line.decode(errors="replace")
                started, large = _STARTED.search(text), _LARGE.search(text)
                with self._lock:
                    if started:
                        self.sizes.append(int(started.group(1)))
                    elif large:
                        self.sizes.append(int(large.group(1)) << 10)
                if started or "INFO TaskSetManager" in text:
                    continue
                os.write(self._out, line + b"\n")

    def take(self) -> int:
        time.sleep(0.2)  # the log lines of the last job's tasks reach the pipe
        with self._lock:
            largest = max(self.sizes, default=0)
            self.sizes.clear()
        return largest


def log_task_sizes(spark: Any) -> None:
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        "org.apache.spark.scheduler.TaskSetManager", jvm.org.apache.logging.log4j.Level.INFO)


# ------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------
@dataclass
class Built:
    name: str
    warehouse: str
    table: str
    rows: int
    base: int  # the snapshot without deletes
    snapshots: dict[str, int]  # "random 15%" -> snapshot id
    seconds: float


def _cached(tag: str, make: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any], float]:
    warehouse = DATA / f"{tag}-v{GENERATOR_VERSION}"
    marker = warehouse / "complete.json"
    if marker.exists():
        return warehouse, json.loads(marker.read_text()), 0.0
    shutil.rmtree(warehouse, ignore_errors=True)
    warehouse.mkdir(parents=True)
    start = time.perf_counter()
    meta = make(warehouse)
    seconds = time.perf_counter() - start
    marker.write_text(json.dumps(meta))
    return warehouse, meta, seconds


def lineitem_source(rows: int) -> pa.Table:
    out = DATA / "tpch"
    scale = max(1, -(-rows // TPCH_ROWS_SF1))
    path = out / f"sf{scale}" / "lineitem.parquet"
    if not path.exists():
        exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
        subprocess.run([exe, "parquet", "-s", str(scale), "--tables=lineitem", f"--output-dir={path.parent}"],
                       check=True)
    data = pq.read_table(path).slice(0, rows)
    nullable = pa.schema([pa.field(f.name, f.type) for f in data.schema])  # Paimon columns are nullable
    return pa.Table.from_arrays(data.columns, schema=nullable)


def _orderkey_runs(max_key: int, runs: int, fraction: float) -> str:
    width = max_key / runs
    return " OR ".join(f"l_orderkey BETWEEN {int(i * width)} AND {int(i * width + fraction * width)}"
                       for i in range(runs))


def build_tables(rows: int, wanted: set[str]) -> list[Built]:
    import paimon_index

    built = []
    if "lineitem" in wanted:
        def make_lineitem(root: Path) -> dict[str, Any]:
            data = lineitem_source(rows)
            opts = {"bucket": "-1", "deletion-vectors.enabled": "true"}
            # two tables: the random deletes and the clustered ones, each on the same four files
            meta: dict[str, Any] = {}
            max_key = int(pa.compute.max(data["l_orderkey"]).as_py())
            for label in ("random", "clustered"):
                t = paimon_index.create_table(str(root), f"bench.lineitem_{label}", data.schema, options=opts)
                per = -(-data.num_rows // LINEITEM_FILES)
                for first in range(0, data.num_rows, per):
                    t.write(data.slice(first, per))
                meta[f"{label} base"] = int(t.snapshot_id)
                for fraction in FRACTIONS:
                    where = (f"l_partkey <= {int(200_000 * fraction)}" if label == "random" else
                             _orderkey_runs(max_key, CLUSTER_RUNS_PER_FILE * LINEITEM_FILES, fraction))
                    t.delete(where)
                    meta[f"{label} {fraction:.0%}"] = int(t.snapshot_id)
            return meta

        root, meta, seconds = _cached(f"lineitem-r{rows}", make_lineitem)
        built.append(Built("lineitem", str(root), "bench.lineitem", rows, 0, meta, seconds))
    if "indexed" in wanted:
        def make_indexed(root: Path) -> dict[str, Any]:
            data = lineitem_source(rows)
            t = paimon_index.create_table(str(root), "bench.lineitem_indexed", data.schema,
                                          options={"bucket": "-1", **INDEXED_OPTIONS})
            per = -(-data.num_rows // LINEITEM_FILES)
            for first in range(0, data.num_rows, per):
                t.write(data.slice(first, per))
            return {"base": int(t.snapshot_id)}

        root, meta, seconds = _cached(f"indexed-r{rows}", make_indexed)
        built.append(Built("indexed", str(root), "bench.lineitem_indexed", rows, meta["base"], meta, seconds))
    if "events" in wanted:
        events_rows = rows * 10 // 3

        def make_events(root: Path) -> dict[str, Any]:
            per_file = -(-events_rows // EVENTS_FILES)
            meta: dict[str, Any] = {}
            for label in ("random", "clustered"):
                schema = spark_read.generate(0, 1).schema
                t = paimon_index.create_table(str(root), f"bench.events_{label}", schema,
                                              options=spark_read.index_options(per_file))
                for first in range(0, events_rows, per_file):
                    t.write(spark_read.generate(first, min(per_file, events_rows - first)))
                meta[f"{label} base"] = int(t.snapshot_id)
                for fraction in FRACTIONS:
                    if label == "random":
                        t.delete(f"amount < {int(spark_read.AMOUNTS * fraction)}")
                    else:  # 40 runs a file, one delete per 5 files
                        runs = CLUSTER_RUNS_PER_FILE * EVENTS_FILES
                        width = events_rows / runs
                        for chunk in range(0, runs, CLUSTER_RUNS_PER_FILE * 5):
                            t.delete(" OR ".join(
                                f"id BETWEEN {spark_read.FIRST_ID + int(i * width)} AND "
                                f"{spark_read.FIRST_ID + int(i * width + fraction * width)}"
                                for i in range(chunk, min(chunk + CLUSTER_RUNS_PER_FILE * 5, runs))))
                    meta[f"{label} {fraction:.0%}"] = int(t.snapshot_id)
            return meta

        root, meta, seconds = _cached(f"events-r{events_rows}", make_events)
        built.append(Built("events", str(root), "bench.events", events_rows, 0, meta, seconds))
    return built


def build_pk(keys: int) -> tuple[str, dict[str, Any], float]:
    import paimon_index

    def make(root: Path) -> dict[str, Any]:
        schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("r", pa.int32()), ("s", pa.string()),
                            ("v", pa.float64())])
        rng = np.random.default_rng(spark_read.SEED)
        t = paimon_index.create_table(str(root), "bench.pk", schema, primary_keys=["k"],
                                      options={"bucket": PK_BUCKETS, "deletion-vectors.enabled": "true"})
        step = 1_000_000
        for first in range(0, keys, step):
            k = np.arange(first, min(first + step, keys), dtype=np.int64)
            t.upsert(pa.table({"k": k, "r": rng.integers(0, 100, len(k)).astype(np.int32),
                               "s": [f"row {i}" for i in k], "v": rng.random(len(k))}, schema=schema))
        changed = np.sort(rng.choice(keys, int(keys * PK_UPSERT), replace=False)).astype(np.int64)
        t.upsert(pa.table({"k": changed, "r": rng.integers(0, 100, len(changed)).astype(np.int32),
                           "s": [f"new {i}" for i in changed], "v": rng.random(len(changed))}, schema=schema))
        upserted = int(t.snapshot_id)
        t.compact(full=True)
        return {"upserted": upserted, "compacted": int(t.snapshot_id)}

    root, meta, seconds = _cached(f"pk-k{keys}", make)
    return str(root), meta, seconds


# ------------------------------------------------------------------------------------------------
# Measurement
# ------------------------------------------------------------------------------------------------
Q6 = ("l_shipdate >= DATE'1994-01-01' AND l_shipdate < DATE'1995-01-01' "
      "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")


def shaped(df: Any, query: str) -> Any:
    from pyspark.sql import functions as F

    if query == "Q6":
        return df.where(Q6).agg(F.sum(F.col("l_extendedprice") * F.col("l_discount")), F.count(F.lit(1)))
    if query == "Q1":
        return (df.where("l_shipdate <= DATE'1998-09-02'").groupBy("l_returnflag", "l_linestatus")
                .agg(F.sum("l_quantity"), F.sum("l_extendedprice"),
                     F.sum(F.col("l_extendedprice") * (1 - F.col("l_discount"))), F.avg("l_discount"),
                     F.count(F.lit(1))))
    if query == "full aggregate":
        return df.groupBy("status").agg(F.count(F.lit(1)), F.sum("amount"), F.min("ts"), F.max("ts"))
    if query == "spread":
        return df.where("status = 'REFUNDED'").agg(F.count(F.lit(1)),
                                                    F.bit_xor(F.xxhash64(*[F.col(c) for c in df.columns])))
    if query == "count":
        return df.agg(F.count(F.lit(1)))
    if query == "filter":
        return df.where("r < 10").agg(F.count(F.lit(1)),
                                      F.bit_xor(F.xxhash64(*[F.col(c) for c in df.columns])))
    raise ValueError(query)


@dataclass
class Cell:
    times: list[float] = field(default_factory=list)
    task: int = 0
    result: Any = None


@dataclass
class Row:
    table: str
    case: str
    query: str
    ours: str
    reference: str
    run: dict[str, Callable[[], Any]]  # variant -> DataFrame maker
    cells: dict[str, Cell] = field(default_factory=dict)
    #: (the planned read's rows, unshaped; the live rows its plan counts) to check once
    check: tuple[Callable[[], Any], int] | None = None


def measure(spark: Any, rows: list[Row], rounds: int, tasks: TaskSizes) -> None:
    def one(row: Row, variant: str) -> None:
        start = time.perf_counter()
        if variant == row.reference and row.case in ("no deletes", "indexes", "every index"):
            with spark_read.spark_default(spark, SINGLE_TASK_SETTING):
                result = row.run[variant]().collect()
        else:
            result = row.run[variant]().collect()
        seconds = time.perf_counter() - start
        cell = row.cells.setdefault(variant, Cell())
        cell.times.append(seconds)
        cell.task = max(cell.task, tasks.take())
        cell.result = result

    for row in rows:  # warm-up: every cell once, untimed (its task sizes count)
        for variant in (row.ours, row.reference):
            one(row, variant)
            row.cells[variant].times.clear()
    for r in range(rounds):
        for row in rows:
            order = (row.ours, row.reference) if r % 2 == 0 else (row.reference, row.ours)
            for variant in order:
                one(row, variant)
                print(f"  round {r + 1}: {row.table} / {row.case} / {row.query} / {variant}: "
                      f"{row.cells[variant].times[-1]:.2f} s", file=sys.stderr, flush=True)


WHERE = {"Q6": Q6, "Q1": "l_shipdate <= DATE'1998-09-02'"}


def indexed_rows(spark: Any, built: Built) -> list[Row]:
    """The indexed lineitem: the planned read asks the indexes the query's WHERE (they prune nothing)."""
    from paimon_index.spark import jobs

    out = []
    for query in ("Q6", "Q1"):
        read = jobs.read_planned(spark, built.table, WHERE[query], warehouse=built.warehouse)
        report = read.plan.report
        print(f"indexed / {query}: {len(read.plan.files)} files planned, {report.index_bytes_read:,} index "
              f"bytes read, {report.files_skipped_by_index} skipped by index", file=sys.stderr)
        paths = [f.path for f in read.plan.files]

        def planned(where: str = WHERE[query], q: str = query) -> Any:
            return shaped(jobs.read(spark, built.table, where, warehouse=built.warehouse), q)

        def plain(p: list[str] = paths, q: str = query) -> Any:
            return shaped(spark.read.parquet(*p), q)

        out.append(Row(built.name, "indexes", query, "planned", "parquet",
                       {"planned": planned, "parquet": plain}))

        def every_index(q: str = query) -> Any:
            with every_index_read():
                return planned(WHERE[q], q)

        out.append(Row(built.name, "every index", query, "planned", "parquet",
                       {"planned": every_index, "parquet": plain}))
    return out


@contextlib.contextmanager
def every_index_read() -> Any:
    """The planned read as it was before it weighed index costs: every index body asked (plan_read
    as for a reader of rows, ``whole_files=False``), for a comparison in the same run."""
    from paimon_index.spark import planned

    original = planned.plan_read

    def plan_read(*args: Any, **kwargs: Any) -> Any:
        kwargs["whole_files"] = False
        return original(*args, **kwargs)

    planned.plan_read = plan_read  # type: ignore[assignment]
    try:
        yield
    finally:
        planned.plan_read = original  # type: ignore[assignment]


def plan_rows(spark: Any, built: Built) -> list[Row]:
    from paimon_index.spark import jobs

    if built.name == "indexed":
        return indexed_rows(spark, built)

    queries = ("Q6", "Q1") if built.name == "lineitem" else ("full aggregate", "spread")
    out = []

    def planned(table: str, snapshot: int, query: str) -> Callable[[], Any]:
        return lambda: shaped(jobs.read_planned(spark, table, warehouse=built.warehouse, snapshot_id=snapshot,
                                                small_read_bytes=0).dataframe, query)

    def files_of(table: str, snapshot: int) -> tuple[list[str], tuple[Callable[[], Any], int]]:
        read = jobs.read_planned(spark, table, warehouse=built.warehouse, snapshot_id=snapshot,
                                 small_read_bytes=0)
        live = sum(f.live_rows for f in read.plan.files)
        return [f.path for f in read.plan.files], (lambda: read.dataframe, live)

    def plain(paths: list[str], query: str) -> Callable[[], Any]:
        return lambda: shaped(spark.read.parquet(*paths), query)

    base_table = f"{built.table}_random"
    base = built.snapshots["random base"]
    for query in queries:
        paths, check = files_of(base_table, base)
        out.append(Row(built.name, "no deletes", query, "planned", "parquet",
                       {"planned": planned(base_table, base, query), "parquet": plain(paths, query)},
                       check=check))
    for label in ("random", "clustered"):
        table = f"{built.table}_{label}"
        for fraction in FRACTIONS:
            snapshot = built.snapshots[f"{label} {fraction:.0%}"]
            paths, check = files_of(table, snapshot)
            for query in queries:
                out.append(Row(built.name, f"{label} {fraction:.0%}", query, "vectors", "no vectors",
                               {"vectors": planned(table, snapshot, query),
                                "no vectors": plain(paths, query)},
                               check=check if query == queries[0] else None))
    return out


def pk_rows(spark: Any, warehouse: str, meta: dict[str, Any]) -> list[Row]:
    from paimon_index.spark import jobs

    def planned(snapshot: int, query: str) -> Callable[[], Any]:
        return lambda: shaped(jobs.read_planned(spark, "bench.pk", warehouse=warehouse, snapshot_id=snapshot,
                                                small_read_bytes=0).dataframe, query)

    def sql_count(snapshot: int) -> Callable[[], Any]:
        from paimon_index.spark import attach

        paimon = attach(spark, warehouse=warehouse)
        return lambda: paimon.sql(f"SELECT count(*) FROM bench.pk VERSION AS OF {snapshot}")

    return [Row("pk", f"upsert {PK_UPSERT:.0%}", query, "upserted", "compacted",
                {"upserted": planned(meta["upserted"], query),
                 "compacted": planned(meta["compacted"], query)})
            for query in ("count", "filter")] + [
        Row("pk", f"upsert {PK_UPSERT:.0%}", "count (SQL)", "upserted", "compacted",
            {"upserted": sql_count(meta["upserted"]), "compacted": sql_count(meta["compacted"])})]


def print_table(rows: list[Row], rounds: int) -> list[str]:
    print(f"{'table':<10}{'case':<15}{'query':<16}{'variant':<12}{'median s':>10}{'ratio':>8}"
          f"{'largest task':>15}  target")
    misses = []
    for row in rows:
        ref = statistics.median(row.cells[row.reference].times)
        for variant in (row.reference, row.ours):
            cell = row.cells[variant]
            median = statistics.median(cell.times)
            ratio = median / ref
            verdict = ""
            if variant == row.ours:
                met = ratio <= TARGET
                verdict = f"<= {TARGET:.2f}: {'met' if met else 'NOT met'}"
                if not met:
                    misses.append(f"{row.table} / {row.case} / {row.query}: {ratio:.2f}x")
            big = cell.task >= TASK_LIMIT
            if big:
                misses.append(f"{row.table} / {row.case} / {row.query} / {variant}: "
                              f"a task of {cell.task:,} bytes")
            print(f"{row.table if variant == row.reference else '':<10}"
                  f"{row.case if variant == row.reference else '':<15}"
                  f"{row.query if variant == row.reference else '':<16}{variant:<12}"
                  f"{median:>10.3f}{ratio:>8.2f}"
                  f"{cell.task / 1024:>11.1f} KiB{' BIG' if big else ''}  {verdict}")
    print(f"(median of {rounds} interleaved rounds; ratio to the row's reference, measured in this run; "
          f"largest task over the warm-up and every round, target < {TASK_LIMIT >> 10} KiB)")
    return misses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=TPCH_ROWS_SF1,
                        help="lineitem rows (events: 10/3 of it, 20M at the default)")
    parser.add_argument("--pk-rows", type=int, default=2_000_000, help="keys of the primary-key table")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="lineitem,indexed,events,pk",
                        help="comma list of lineitem, indexed, events, pk")
    args = parser.parse_args(argv)
    wanted = {s.strip() for s in args.only.split(",")}

    tasks = TaskSizes()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min) at start "
          "(the machine may be shared with other Spark runs)")
    built = build_tables(args.rows, wanted)
    for b in built:
        made = f"generated and written in {b.seconds:.1f} s" if b.seconds else "cached"
        print(f"table {b.name}: {b.rows:,} rows, snapshots {b.snapshots} ({made})")
    pk = build_pk(args.pk_rows) if "pk" in wanted else None
    if pk is not None:
        print(f"table pk: {args.pk_rows:,} keys, bucket {PK_BUCKETS}, snapshots {pk[1]} "
              f"({f'generated and written in {pk[2]:.1f} s' if pk[2] else 'cached'})")

    from paimon_index.spark.session import local_session

    spark = local_session("scan-costs-bench", master="local[2]")
    log_task_sizes(spark)
    rows: list[Row] = []
    for b in built:
        rows += plan_rows(spark, b)
    if pk is not None:
        rows += pk_rows(spark, pk[0], pk[1])
    failures = []
    for row in rows:  # the planned read returns the live rows its plan counts (the vectors applied)
        if row.check is not None:
            got = row.check[0]().count()
            if got != row.check[1]:
                failures.append(f"{row.table} / {row.case}: {got:,} rows, "
                                f"the plan's live rows {row.check[1]:,}")
    measure(spark, rows, args.rounds, tasks)
    for row in rows:  # the rows the vectors removed are gone: results differ where rows were deleted
        ours, ref = row.cells[row.ours].result, row.cells[row.reference].result
        same = sorted(map(tuple, ours), key=repr) == sorted(map(tuple, ref), key=repr)
        if (row.case in ("no deletes", "indexes", "every index") or row.table == "pk") and not same:
            failures.append(f"{row.table} / {row.case} / {row.query}: results differ")
    spark.stop()
    print()
    misses = print_table(rows, args.rounds)
    print(f"\nload average {os.getloadavg()[0]:.2f} (1 min) at the end")
    for miss in misses:
        print("target not met: " + miss)
    for failure in failures:
        print("FAILED: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
