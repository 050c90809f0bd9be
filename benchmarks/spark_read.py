"""Spark reads of an indexed Paimon table against ``spark.read.parquet`` of the same files, in one run.

The table (default 20,000,000 rows in 50 data files, generated with NumPy, seeded, one
``Table.write`` per file; cached under ``benchmarks/.data/`` and reused while rows, files and the
generator's version are the same)::

    id        BIGINT  unique, increasing                     Bloom filter (items = rows per file)
    ts        BIGINT  epoch millis, increasing with id       range bitmap (a clustered column)
    status    STRING  6 values, skewed (60% .. 0.1%)         bitmap
    amount    INT     uniform in [0, 1,000,000)              range bitmap (a spread column)
    customer  BIGINT, note STRING (~40 bytes)                payload
    created   TIMESTAMP(3)  ``ts`` as a timestamp              range bitmap

Then one ``Table.delete`` (deletion vectors) removes ``ts < T AND amount < 10,000``: 1% of the rows
of the first tenth of the files. The reference, ``spark.read.parquet`` of the table's live data
files, applies ``NOT (ts < T AND amount < 10,000)`` besides each query's filter, so it sees exactly
the table's rows.

Query shapes (each result hashed or collected the same way by every engine):

    full count           SELECT count(*)
    full aggregate       SELECT status, count(*), sum(amount), min(ts), max(ts) GROUP BY status
    select * spread      SELECT * WHERE status = 'REFUNDED'  (0.9%, every file and row group)
    OR                   SELECT * WHERE status = 'DISPUTED' OR id = <one id>
    range                SELECT * WHERE amount BETWEEN 500,000 AND 504,999   (0.5%, spread)
    TopN                 SELECT * ORDER BY amount DESC, id LIMIT 10
    TopN timestamp       SELECT * ORDER BY created DESC, id LIMIT 10  (the newest rows)
    point lookup         SELECT * WHERE id = <one id>
    clustered 0.05%      SELECT * WHERE ts BETWEEN a AND b  (~10,000 rows: one file, one or two row groups)
    count where bitmap   SELECT count(*) WHERE status = 'DISPUTED'
    count where range    SELECT count(*) WHERE amount >= 999,000

``SELECT *`` shapes with many rows -- the clustered query's ~10,000 included -- return
``count(*), bit_xor(xxhash64(every column))`` (every column is read, nothing is shipped to Python:
collecting 10,000 rows into Python costs ~0.2 s for every engine, which is not what the clustered
target measures); the point lookup and TopN collect their rows. Engines:

    parquet   the reference: ``spark.read.parquet(<live data files>)`` + the DV filter
    source    the ``paimon_index`` Python source, filter pushdown on (one fresh DataFrame per query;
              TopN with the source's ``topn``/``limit`` hint; the planned read gets ``order_by``/``limit``)
    planned   ``paimon_index.spark.jobs.read(spark, table, where=...)`` (when that verb exists)
    planned-scan  the same with ``small_read_bytes=0`` (never the driver's small read; only when
              named in ``--engines``)
    count     ``paimon_index.spark.jobs.count(spark, table, where)`` index-only counts (when it
              exists; the count shapes only)

After one untimed warm-up of every query on every engine, each round runs every query on every
engine, the engine order rotating per round (interleaved: drift hits every engine alike); the
reference runs with Spark's default single-task setting (off; paimon-index's sessions turn it on);
the table shows the median time of ``--rounds`` rounds, its ratio to
the reference's median, and from the last round: bytes read (Spark's task input bytes — Hadoop file
reads — plus, for our engines, the data and index bytes their scan report counts), files and row
groups read (ours: the scan report; the reference: the scan node's file count, and the row groups
whose footer min/max can match the filter — Parquet's own statistics test, counted with pyarrow,
which is what Spark's Parquet reader skips by; its dictionary filter may skip more). Every query's
result must equal the reference's, else the run fails. Then the time to the first row of a point
lookup in a cold session (a fresh process: JVM, Python workers, imports) for the reference, the
source and the planned read.

Targets (issue 14): no shape slower than 1.1x the reference; >= 10x faster on the point lookup and the
clustered query; ``count(*) WHERE`` an indexed predicate >= 20x faster. Verdicts are printed for
the best of our engines per shape. Numbers are measured, never adjusted; the load average is
printed.

    python benchmarks/spark_read.py [--rows N] [--files F] [--rounds R] [--data DIR] [--no-cold]
                                    [--engines source,planned,planned-scan,count]
                                    [--only "point lookup,TopN"]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

SEED = 20261123
#: Bump when the generated table changes: a cached table of another version is rebuilt.
GENERATOR_VERSION = 3
TABLE = "bench.events"
FIRST_ID = 5_000_000_000
FIRST_TS = 1_735_689_600_000  # 2025-01-01 00:00:00 UTC, millis
MILLIS_PER_ROW = 50
TS_JITTER = 1_000
AMOUNTS = 1_000_000
STATUSES = ("PAID", "SHIPPED", "PENDING", "CANCELLED", "REFUNDED", "DISPUTED")
STATUS_SHARES = (0.60, 0.25, 0.10, 0.04, 0.009, 0.001)
#: The delete: the rows of the first DELETED_FILES_SHARE of the files with amount below this.
DELETE_AMOUNT_BELOW = 10_000
DELETED_FILES_SHARE = 0.1
BLOOM_FPP = "0.01"
DEFAULT_DATA = Path(__file__).resolve().parent / ".data"
TARGET_NOT_SLOWER = 1.1
TARGET_SELECTIVE = 10.0
TARGET_INDEXED_COUNT = 20.0
#: The planned read with its driver-side small read off (Spark's Parquet reader reads every plan);
#: only run when named in ``--engines``, to compare the two in one run.
SCAN_ONLY = "planned-scan"
#: Set on by paimon-index's local sessions (one-file plans run as one task); the reference runs with
#: Spark's default (off): with it on, its 50-file queries cannot use it and measured ~5% slower.
SINGLE_TASK_SETTING = "spark.sql.optimizer.singleTaskExecution.enabled"


# ------------------------------------------------------------------------------------------------
# The table
# ------------------------------------------------------------------------------------------------
def generate(start: int, rows: int) -> pa.Table:
    """Rows ``start .. start+rows`` of the table (each slice seeded on its own: any file alone)."""
    rng = np.random.default_rng([SEED, start])
    position = np.arange(start, start + rows, dtype=np.int64)
    names = pa.array(STATUSES, pa.string())
    status = np.searchsorted(np.cumsum(STATUS_SHARES), rng.random(rows) * sum(STATUS_SHARES))
    customer = rng.integers(1_000_000, 9_000_000, rows)
    items = pc.cast(pa.array(rng.integers(1, 40, rows)), pa.string())
    ts = FIRST_TS + position * MILLIS_PER_ROW + rng.integers(0, TS_JITTER, rows)
    return pa.table({
        "id": FIRST_ID + position,
        "ts": ts,
        "status": names.take(pa.array(np.minimum(status, len(STATUSES) - 1))),
        "amount": rng.integers(0, AMOUNTS, rows).astype(np.int32),
        "customer": customer,
        "note": pc.binary_join_element_wise("customer ", pc.cast(pa.array(customer), pa.string()),
                                            " ordered ", items, " items", ""),
        "created": pa.array(ts, pa.timestamp("ms")),
    })


def index_options(rows_per_file: int) -> dict[str, str]:
    return {
        "bucket": "-1",
        "deletion-vectors.enabled": "true",
        "file-index.bloom-filter.columns": "id",
        "file-index.bloom-filter.id.items": str(rows_per_file),
        "file-index.bloom-filter.id.fpp": BLOOM_FPP,
        "file-index.bitmap.columns": "status",
        "file-index.range-bitmap.columns": "ts,amount,created",
    }


def delete_bound(rows: int) -> int:
    """``ts`` below which the delete applies (the first tenth of the rows, so of the files)."""
    return FIRST_TS + int(rows * DELETED_FILES_SHARE) * MILLIS_PER_ROW


def dv_filter(rows: int) -> str:
    """The rows the table still has, as a Spark filter over its data files."""
    return f"NOT (ts < {delete_bound(rows)} AND amount < {DELETE_AMOUNT_BELOW})"


@dataclass
class Built:
    warehouse: str
    rows: int
    files: list[str]
    seconds: float  # to generate and write (0 when reused)
    row_groups: int
    data_bytes: int


def build(data_dir: Path, rows: int, files: int, block_size: str | None = None) -> Built:
    """The cached table for (rows, files), written now if it is not there yet."""
    import paimon_index

    tag = f"r{rows}-f{files}-v{GENERATOR_VERSION}" + (f"-b{block_size}" if block_size else "")
    warehouse = data_dir / tag
    marker = warehouse / "complete.json"
    seconds = 0.0
    if not marker.exists():
        shutil.rmtree(warehouse, ignore_errors=True)
        warehouse.mkdir(parents=True)
        start = time.perf_counter()
        per_file = -(-rows // files)
        options = index_options(per_file)
        if block_size:
            options["file.block-size"] = block_size
        table = paimon_index.create_table(str(warehouse), TABLE, generate(0, 1).schema, options=options)
        for first in range(0, rows, per_file):
            table.write(generate(first, min(per_file, rows - first)))
        table.delete(f"ts < {delete_bound(rows)} AND amount < {DELETE_AMOUNT_BELOW}")
        seconds = time.perf_counter() - start
        marker.write_text(json.dumps({"rows": rows, "files": files, "seconds": seconds}))
    paths = live_files(str(warehouse))
    meta = [ds.dataset(p, format="parquet") for p in paths]
    groups = sum(len(next(iter(d.get_fragments())).row_groups) for d in meta)
    return Built(str(warehouse), rows, paths, seconds, groups, sum(os.path.getsize(p) for p in paths))


def live_files(warehouse: str) -> list[str]:
    import paimon_index
    from paimon_index.table.plan import plan_snapshot

    plan = plan_snapshot(paimon_index.open_table(warehouse, TABLE).paimon_table)
    assert plan is not None
    return sorted(str(f.file_path) for split in plan.splits for f in split.files)


# ------------------------------------------------------------------------------------------------
# Queries
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Query:
    label: str
    where: str | None
    shape: str  # count | aggregate | hash | rows | topn
    target: float | None  # needed speed-up over the reference (None: "not slower than 1.1x")
    order: tuple[str, ...] = ()  # topn: ORDER BY keys


TOPN_ORDER = ("amount DESC", "id")


def queries(rows: int) -> list[Query]:
    one = FIRST_ID + int(rows * 0.61)
    low = FIRST_TS + int(rows * 0.37) * MILLIS_PER_ROW
    high = low + max(rows // 2000, 1) * MILLIS_PER_ROW  # ~0.05% of the rows
    return [
        Query("full count", None, "count", None),
        Query("full aggregate", None, "aggregate", None),
        Query("select * spread", "status = 'REFUNDED'", "hash", None),
        Query("OR", f"status = 'DISPUTED' OR id = {one + 7}", "hash", None),
        Query("range", "amount BETWEEN 500000 AND 504999", "hash", None),
        Query("TopN", None, "topn", None, TOPN_ORDER),
        Query("TopN timestamp", None, "topn", None, ("created DESC", "id")),
        Query("point lookup", f"id = {one}", "rows", TARGET_SELECTIVE),
        Query("clustered 0.05%", f"ts BETWEEN {low} AND {high}", "hash", TARGET_SELECTIVE),
        Query("count where bitmap", "status = 'DISPUTED'", "count", TARGET_INDEXED_COUNT),
        Query("count where range", f"amount >= {AMOUNTS - AMOUNTS // 1000}", "count", TARGET_INDEXED_COUNT),
    ]


COLUMN_TYPES = {"id": "BIGINT", "ts": "BIGINT", "status": "STRING", "amount": "INT", "customer": "BIGINT",
                "note": "STRING", "created": "TIMESTAMP(3)"}
TOPN_LIMIT = 10


def shaped(df: Any, q: Query) -> Any:
    """The query's result DataFrame over ``df`` (already filtered by ``q.where``)."""
    from pyspark.sql import functions as F

    if q.shape == "count":
        return df.agg(F.count(F.lit(1)).alias("n"))
    if q.shape == "aggregate":
        return df.groupBy("status").agg(F.count(F.lit(1)), F.sum("amount"), F.min("ts"), F.max("ts"))
    if q.shape == "hash":
        return df.agg(F.count(F.lit(1)), F.bit_xor(F.xxhash64(*[F.col(c) for c in df.columns])))
    if q.shape == "topn":
        keys = [k.split() for k in q.order]
        return df.orderBy(*[F.col(k[0]).desc() if k[-1].upper() == "DESC" else F.col(k[0]) for k in keys]
                          ).limit(TOPN_LIMIT)
    return df


def result_key(rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in rows), key=repr)


# ------------------------------------------------------------------------------------------------
# Engines
# ------------------------------------------------------------------------------------------------
@dataclass
class Run:
    seconds: float
    result: list[tuple[Any, ...]]
    bytes_read: int | None = None
    files_read: int | None = None
    row_groups_read: int | None = None


class Bench:
    def __init__(self, spark: Any, built: Built) -> None:
        self.spark = spark
        self.built = built
        self.sc = spark.sparkContext
        self._group = 0
        self.engines: dict[str, Callable[[Query], Run | None]] = {"parquet": self.parquet,
                                                                  "source": self.source}
        from paimon_index.spark import jobs

        if hasattr(jobs, "read"):
            self.engines["planned"] = self.planned
            self.engines[SCAN_ONLY] = lambda q: self.planned(q, small_read_bytes=0)
        if hasattr(jobs, "count"):
            self.engines["count"] = self.count

    # Every engine: a fresh DataFrame, the shape, collect; timed from building the DataFrame.
    def _timed(self, build_df: Callable[[], Any], q: Query, reports: Any = None) -> Run:
        self._group += 1
        group = f"bench-{self._group}"
        self.sc.setJobGroup(group, q.label)
        start = time.perf_counter()
        df = shaped(build_df(), q)
        rows = df.collect()
        seconds = time.perf_counter() - start
        run = Run(seconds, result_key(rows), bytes_read=self._input_bytes(group))
        run.files_read = _scan_files(df)
        if reports is not None:
            report = reports.value
            run.bytes_read = (run.bytes_read or 0) + report.data_bytes_read + report.index_bytes_read
            run.files_read = report.files_planned - report.files_skipped_by_index
            run.row_groups_read = report.row_groups_read
        return run

    def _input_bytes(self, group: str) -> int:
        """Bytes Spark's tasks read through Hadoop file systems, over the jobs of ``group``."""
        store = self.sc._jsc.sc().statusStore()
        jobs = store.jobsList(None)
        wanted: set[int] = set()
        for i in range(jobs.size()):
            job = jobs.apply(i)
            if job.jobGroup().isDefined() and job.jobGroup().get() == group:
                ids = job.stageIds()
                wanted |= {int(ids.apply(k)) for k in range(ids.size())}
        total = 0
        for stage in wanted:
            with contextlib.suppress(Exception):  # py4j: a skipped stage has no attempt
                total += int(store.lastStageAttempt(stage).inputBytes())
        return total

    def parquet(self, q: Query) -> Run:
        def build_df() -> Any:
            df = self.spark.read.parquet(*self.built.files).where(dv_filter(self.built.rows))
            return df if q.where is None else df.where(q.where)

        with spark_default(self.spark, SINGLE_TASK_SETTING):
            run = self._timed(build_df, q)
        run.row_groups_read = stats_row_groups(self.built.files, q.where)
        return run

    def source(self, q: Query) -> Run:
        from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
        from paimon_index.spark.report import scan_report

        reports = scan_report(self.spark)  # a Spark accumulator the read tasks add their reports to

        def build_df() -> Any:
            reader = (self.spark.read.format("paimon_index").option("warehouse", self.built.warehouse)
                      .option(SINGLE_SCAN_PUSHDOWN, "true").option("scan-report", reports.name))
            if q.shape == "topn":
                reader = reader.option("topn", ", ".join(q.order)).option("limit", str(TOPN_LIMIT))
            df = reader.load(TABLE)
            return df if q.where is None else df.where(q.where)

        return self._timed(build_df, q, reports)

    def planned(self, q: Query, **options: Any) -> Run:
        from paimon_index.spark import jobs

        made: list[Any] = []
        if q.shape == "topn":  # the planned read's own TopN (its global bound), as the source gets its hint
            options = {"order_by": ", ".join(q.order), "limit": TOPN_LIMIT, **options}

        def build_df() -> Any:
            made.append(jobs.read_planned(self.spark, TABLE, where=q.where,  # type: ignore[attr-defined]
                                          warehouse=self.built.warehouse, **options))
            return made[-1].dataframe

        run = self._timed(build_df, q)
        plan = made[-1].plan
        report = plan.report
        # Spark's input bytes, plus what the plan read (indexes) and the driver's small read (data).
        run.bytes_read = (run.bytes_read or 0) + report.index_bytes_read + report.data_bytes_read
        run.files_read = len(plan.files)
        if getattr(made[-1], "small_rows", None) is not None:
            run.row_groups_read = report.row_groups_read
        return run

    def count(self, q: Query) -> Run | None:
        from paimon_index.spark import jobs

        if q.shape != "count":
            return None
        start = time.perf_counter()
        n = jobs.count(self.spark, TABLE, q.where, warehouse=self.built.warehouse)  # type: ignore[attr-defined]
        return Run(time.perf_counter() - start, [(int(getattr(n, "rows", n)),)])


@contextlib.contextmanager
def spark_default(spark: Any, key: str) -> Any:
    """``key`` at Spark's own default while the block runs (the reference is plain Spark)."""
    previous = spark.conf.get(key, None)
    spark.conf.unset(key)
    try:
        yield
    finally:
        if previous is not None:
            spark.conf.set(key, previous)


def _scan_files(df: Any) -> int | None:
    """``numFiles`` of the file scans of ``df``'s executed plan (None: no file scan there)."""
    found: list[int] = []

    def walk(plan: Any) -> None:
        metrics = plan.metrics()
        if metrics.contains("numFiles"):
            found.append(int(metrics.apply("numFiles").value()))
        for attr in ("executedPlan", "plan"):  # adaptive plans and query stages hide their child
            inner = getattr(plan, attr, None)
            if inner is not None:
                with contextlib.suppress(Exception):  # py4j: the node has no such member
                    walk(inner())
        children = plan.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    return sum(found) if found else None


def stats_row_groups(files: list[str], where: str | None) -> int:
    """Row groups of ``files`` whose footer min/max may match ``where`` (pyarrow's statistics test)."""
    dataset = ds.dataset(files, format="parquet")
    expr = None if where is None else _arrow_filter(where)
    groups = 0
    for fragment in dataset.get_fragments():
        groups += len(fragment.split_by_row_group(expr) if expr is not None else fragment.row_groups)
    return groups


def _arrow_filter(where: str) -> Any:
    from paimon_index.arrow_filter import to_arrow_expression
    from paimon_index.sql import bind_predicate
    from paimon_index.types import parse_type

    schema = {name: parse_type(ddl) for name, ddl in COLUMN_TYPES.items()}
    return to_arrow_expression(bind_predicate(where, schema), schema)


# ------------------------------------------------------------------------------------------------
# Cold start: time to the first row in a fresh process
# ------------------------------------------------------------------------------------------------
def cold_first_row(engine: str, built: Built, where: str) -> float:
    """Seconds from "session up" to the first row of ``where`` in a fresh process (JVM, workers)."""
    code = f"""
import json, sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from paimon_index.spark.session import local_session
spark = local_session("cold", master="local[2]")
start = time.perf_counter()
if {engine!r} == "parquet":
    df = spark.read.parquet(*{built.files!r}).where({where!r})
elif {engine!r} == "planned":
    from paimon_index.spark import jobs
    df = jobs.read(spark, {TABLE!r}, where={where!r}, warehouse={built.warehouse!r})
else:
    df = (spark.read.format("paimon_index").option("warehouse", {built.warehouse!r})
          .option("_paimon-index.single-scan-pushdown", "true").load({TABLE!r})).where({where!r})
rows = df.limit(1).collect()
print(json.dumps({{"seconds": time.perf_counter() - start, "rows": len(rows)}}))
spark.stop()
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cold run of {engine} failed: {done.stderr[-2000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["rows"] == 1, answer
    return float(answer["seconds"])


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------
@dataclass
class Cell:
    times: list[float] = field(default_factory=list)
    last: Run | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def print_table(qs: list[Query], engines: list[str], cells: dict[tuple[str, str], Cell],
                rounds: int) -> list[str]:
    print(f"{'query':<20}{'engine':<13}{'median s':>10}{'ratio':>8}{'bytes read':>16}{'files':>7}"
          f"{'row groups':>12}  result")
    failures = []
    for q in qs:
        ref = cells[(q.label, "parquet")]
        best: float | None = None
        for engine in engines:
            cell = cells.get((q.label, engine))
            if cell is None or cell.last is None:
                continue
            ratio = cell.median / ref.median
            same = cell.last.result == ref.last.result if ref.last else False
            if engine != "parquet":
                best = ratio if best is None else min(best, ratio)
                if not same:
                    failures.append(f"{q.label} / {engine}: result differs from spark.read.parquet")
            verdict = "reference" if engine == "parquet" else "equal" if same else "DIFFERS"
            print(f"{q.label if engine == 'parquet' else '':<20}{engine:<13}{cell.median:>10.3f}"
                  f"{ratio:>8.3f}{_n(cell.last.bytes_read):>16}{_n(cell.last.files_read):>7}"
                  f"{_n(cell.last.row_groups_read):>12}  {verdict}")
        if best is not None:
            if q.target is None:
                verdict = "met" if best <= TARGET_NOT_SLOWER else "NOT met"
                print(f"{'':<20}best of ours {best:.3f}x the reference; "
                      f"target <= {TARGET_NOT_SLOWER}x: {verdict}")
            else:
                verdict = "met" if best <= 1 / q.target else "NOT met"
                print(f"{'':<20}best of ours {1 / best:.1f}x faster; target >= {q.target:.0f}x: {verdict}")
    print(f"(median of {rounds} interleaved rounds; bytes, files, row groups from the last round)")
    return failures


def measure(spark: Any, built: Built, qs: list[Query], rounds: int,
            only_engines: list[str] | None = None) -> list[str]:
    """Run every query on every engine for ``rounds`` interleaved rounds; print the table.

    Returns:
        The failures (results that differ from the reference's).
    """
    bench = Bench(spark, built)
    engines = [e for e in bench.engines if e == "parquet" or (e in only_engines if only_engines is not None
                                                               else e != SCAN_ONLY)]
    missing = [f"{verb} not available" for name, verb in (("planned", "jobs.read"), ("count", "jobs.count"))
               if name not in bench.engines]
    print("engines: " + ", ".join(engines) + (f"   ({'; '.join(missing)})" if missing else ""))
    # Warm-up, untimed: every query once on every engine (Python workers, the JVM's JIT and Spark's
    # generated code for each query shape), so round 1 times the same warm state as the others.
    for q in qs:
        for engine in engines:
            bench.engines[engine](q)
    cells: dict[tuple[str, str], Cell] = {}
    for r in range(rounds):
        order = engines[r % len(engines):] + engines[:r % len(engines)]
        for q in qs:
            for engine in order:
                run = bench.engines[engine](q)
                if run is None:
                    continue
                cell = cells.setdefault((q.label, engine), Cell())
                cell.times.append(run.seconds)
                cell.last = run
                print(f"  round {r + 1}: {q.label} / {engine}: {run.seconds:.2f} s", file=sys.stderr,
                      flush=True)
    print()
    failures = print_table(qs, engines, cells, rounds)
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="cache directory of the tables")
    parser.add_argument("--block-size", default=None, help="file.block-size of the table (default: ours)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-session measurement")
    parser.add_argument("--only", default=None, help="comma list of query labels to run")
    parser.add_argument("--engines", default=None,
                        help="comma list of engines besides the reference (default: every one there is)")
    args = parser.parse_args(argv)

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min) at start")
    built = build(args.data, args.rows, args.files, args.block_size)
    made = f"; generated and written in {built.seconds:.1f} s" if built.seconds else " (cached)"
    print(f"table {TABLE}: {built.rows:,} rows in {len(built.files)} data files, {built.row_groups} row "
          f"groups, {built.data_bytes:,} bytes{made}")
    qs = queries(args.rows)
    if args.only:
        wanted = {s.strip() for s in args.only.split(",")}
        qs = [q for q in qs if q.label in wanted]

    from paimon_index.spark.session import local_session

    spark = local_session("spark-read-bench", master="local[2]")
    engines = None if args.engines is None else [e.strip() for e in args.engines.split(",")]
    failures = measure(spark, built, qs, args.rounds, engines)
    spark.stop()
    if not args.no_cold:
        point = next(q for q in queries(args.rows) if q.label == "point lookup")
        assert point.where is not None
        print("\ntime to the first row of the point lookup in a cold session (fresh process, session up):")
        from paimon_index.spark import jobs

        cold = ["parquet", "source"] + (["planned"] if hasattr(jobs, "read") else [])
        for engine in cold:
            print(f"  {engine:<8}{cold_first_row(engine, built, point.where):>8.2f} s")
    print(f"\nload average {os.getloadavg()[0]:.2f} (1 min) at the end")
    for failure in failures:
        print("FAILED: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
