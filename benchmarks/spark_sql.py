"""Spark SQL through the noun (``paimon.sql``) against Apache Paimon's own Spark connector and
``spark.read.parquet``, in one run: TPC-H's 22 queries and the ``spark_read`` shapes.

    python benchmarks/spark_sql.py [--scale 1] [--events-rows 2000000] [--events-files 20]
                                   [--rounds 1] [--queries q01,q06,...] [--no-connector]

Data (cached under ``benchmarks/.data/spark_sql-<scale>-<events>/``, reused while the arguments are
the same): one warehouse holding ``tpch.*`` (``tpchgen-cli`` at ``--scale``, loaded by
``tests/sqlref/tpch.py``: file indexes, deletion vectors, deletes and an upsert) and
``bench.events`` (``benchmarks/spark_read.py``'s generator, indexes and delete, ``--events-rows``
rows in ``--events-files`` files); and each table's live rows written once as plain Parquet.

Engines, per query:

    sql        ``paimon.sql(text).collect()`` (parse, plan every reference, run)
    planned    the same query over planned-read DataFrames without parsing: the events shapes as
               ``paimon.table(t).read(where)`` composed with the DataFrame API; TPC-H's single-table
               queries (Q1, Q6) as Spark SQL over a temp view of ``read(where)``; '-' for the rest
    parquet    the same SQL text over temp views of ``spark.read.parquet`` of the live rows
    connector  the same SQL text in ``paimon-sql.sh`` (Paimon's connector, PySpark 4.1.2, its own JVM
               process), once right before ours and once right after (both runs are printed); in
               each process every statement runs once untimed, then once timed

Ours: after one untimed warm-up of every query on every engine, ``--rounds`` rounds, each running
every query on every engine (engine order rotating per round); the median per cell. Every engine's
result must equal the connector's (tests/sqlref/harness.py's equality), else the run fails.
Printed: seconds per query and engine, ratios ours/connector (to the mean of its two runs),
ours/parquet and sql/planned, and the totals.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import spark_read  # noqa: E402  (benchmarks/)
from sqlref import harness, tpch  # noqa: E402  (tests/)

DEFAULT_DATA = HERE / ".data"
EVENTS = "bench.events"
EVENT_COLUMNS = "id, ts, status, amount, customer, note, created"
#: Our session's driver memory: the connector's (``paimon_sql.py``), so both sides hold the same.
DRIVER_MEMORY = "4g"


@dataclass(frozen=True)
class Query:
    name: str
    sql: str
    #: The planned-read form: (table, where, how to finish the DataFrame) or None.
    planned: tuple[str, str | None, Callable[[Any, Any], Any]] | None = None


def _view_sql(sql: str) -> Callable[[Any, Any], Any]:
    """Finish a planned read by Spark SQL over it as the temp view ``planned_src``."""
    def finish(spark: Any, df: Any) -> Any:
        df.createOrReplaceTempView("planned_src")
        return spark.sql(sql)
    return finish


def _shaped(shape: spark_read.Query) -> Callable[[Any, Any], Any]:
    return lambda spark, df: spark_read.shaped(df, shape)


def event_queries(rows: int) -> list[Query]:
    """spark_read's shapes as SQL text (and as the planned read composed with the DataFrame API)."""
    out = []
    for q in spark_read.queries(rows):
        where = f" WHERE {q.where}" if q.where else ""
        if q.shape == "count":
            sql = f"SELECT count(*) AS n FROM {EVENTS}{where}"
        elif q.shape == "aggregate":
            sql = (f"SELECT status, count(*), sum(amount), min(ts), max(ts) FROM {EVENTS}{where} "
                   "GROUP BY status")
        elif q.shape == "hash":
            sql = f"SELECT count(*), bit_xor(xxhash64({EVENT_COLUMNS})) FROM {EVENTS}{where}"
        elif q.shape == "topn":
            sql = f"SELECT * FROM {EVENTS}{where} ORDER BY {', '.join(q.order)} LIMIT {spark_read.TOPN_LIMIT}"
        else:
            sql = f"SELECT * FROM {EVENTS}{where}"
        out.append(Query(q.label, sql, (EVENTS, q.where, _shaped(q))))
    return out


def tpch_queries() -> list[Query]:
    stmts = {s.name: s.text for s in harness.statements(harness.SQL_DIR / "tpch.sql")}
    planned = {
        "q01": ("tpch.lineitem", "l_shipdate <= date '1998-09-02'", _view_sql(
            stmts["q01"].replace("tpch.lineitem", "planned_src"))),
        "q06": ("tpch.lineitem", "l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01' AND "
                "l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
                _view_sql(stmts["q06"].replace("tpch.lineitem", "planned_src"))),
    }
    return [Query(name, text, planned.get(name)) for name, text in stmts.items()]


# -- data --------------------------------------------------------------------------------------------
def build(data: Path, scale: float, events_rows: int, events_files: int) -> tuple[Path, Path]:
    """The warehouse and the plain-Parquet directory (cached)."""
    import paimon_index

    root = data / f"spark_sql-sf{scale}-e{events_rows}x{events_files}-v{spark_read.GENERATOR_VERSION}"
    warehouse, parquet = root / "warehouse", root / "parquet"
    marker = root / "complete.json"
    if marker.exists():
        return warehouse, parquet
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    start = time.perf_counter()
    source = tpch.generate(scale, root / "tpchgen")
    tpch.load(warehouse, source)
    per_file = -(-events_rows // events_files)
    events = paimon_index.create_table(str(warehouse), EVENTS, spark_read.generate(0, 1).schema,
                                       options=spark_read.index_options(per_file))
    for first in range(0, events_rows, per_file):
        events.write(spark_read.generate(first, min(per_file, events_rows - first)))
    bound = spark_read.delete_bound(events_rows)
    events.delete(f"ts < {bound} AND amount < {spark_read.DELETE_AMOUNT_BELOW}")
    tpch.write_parquet(warehouse, parquet)
    pq.write_table(paimon_index.open_table(str(warehouse), EVENTS).read(), parquet / "events.parquet")
    shutil.rmtree(root / "tpchgen")
    marker.write_text(json.dumps({"seconds": time.perf_counter() - start}))
    return warehouse, parquet


def parquet_text(sql: str) -> str:
    """The query over the Parquet temp views (``tpch.x`` -> ``pq_x``, ``bench.events`` -> ``pq_events``)."""
    return sql.replace("tpch.", "pq_").replace(EVENTS, "pq_events")


# -- engines -----------------------------------------------------------------------------------------
def run_connector(warehouse: Path, qs: list[Query]) -> dict[str, dict[str, Any]]:
    """One connector process: every statement once untimed, then once timed."""
    texts = [q.sql for q in qs]
    answers = harness.run_connector(warehouse, texts + texts)
    out = {}
    for q, warm, timed in zip(qs, answers[:len(qs)], answers[len(qs):], strict=True):
        if not (warm["ok"] and timed["ok"]):
            raise SystemExit(f"the connector refused {q.name}: {warm.get('error') or timed.get('error')}")
        out[q.name] = timed
    return out


def collect(df: Any) -> dict[str, Any]:
    rows = df.collect()
    return {"ok": True, "columns": list(df.columns), "rows": [[harness.plain(v) for v in r] for r in rows]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (tpchgen-cli)")
    ap.add_argument("--events-rows", type=int, default=2_000_000)
    ap.add_argument("--events-files", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--queries", help="comma-separated query names (default: all)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--no-connector", action="store_true", help="skip Paimon's connector")
    a = ap.parse_args(argv)

    t0 = time.perf_counter()
    warehouse, parquet = build(a.data, a.scale, a.events_rows, a.events_files)
    print(f"data ready in {time.perf_counter() - t0:.1f} s: {warehouse}", flush=True)
    qs = tpch_queries() + event_queries(a.events_rows)
    if a.queries:
        wanted = set(a.queries.split(","))
        qs = [q for q in qs if q.name in wanted]
    connector = not a.no_connector and harness.connector_unavailable() is None

    before: dict[str, dict[str, Any]] = {}
    if connector:
        t = time.perf_counter()
        before = run_connector(warehouse, qs)
        print(f"connector run 1: {time.perf_counter() - t:.1f} s (process)", flush=True)

    import paimon_index.spark
    from paimon_index.spark.session import local_session

    # The connector's driver memory (paimon_sql.py's 4g): with Spark's default 1g, a run of session
    # 25 failed building a broadcast of Spark's own Parquet read ("Not enough memory to build and
    # broadcast the table") while earlier queries' broadcasts were still held.
    spark = local_session("spark-sql-bench", master="local[2]", conf={"spark.driver.memory": DRIVER_MEMORY})
    spark.sparkContext.setLogLevel("ERROR")
    paimon = paimon_index.spark.attach(spark, warehouse=str(warehouse))
    for name in [*tpch.TABLES, "events"]:
        spark.read.parquet(str(parquet / f"{name}.parquet")).createOrReplaceTempView(f"pq_{name}")

    def engine_runs(q: Query) -> dict[str, Callable[[], dict[str, Any]]]:
        runs = {"sql": lambda: collect(paimon.sql(q.sql)),
                "parquet": lambda: collect(spark.sql(parquet_text(q.sql)))}
        if q.planned is not None:
            table, where, finish = q.planned
            runs["planned"] = lambda: collect(finish(spark, paimon.table(table).read(where)))
        return runs

    results: dict[tuple[str, str], dict[str, Any]] = {}
    for q in qs:  # warm-up, and the answers checked below
        for engine, run in engine_runs(q).items():
            results[(q.name, engine)] = run()
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(a.rounds):
        for i, q in enumerate(qs):
            runs = list(engine_runs(q).items())
            k = (i + r) % len(runs)
            for engine, run in runs[k:] + runs[:k]:
                start = time.perf_counter()
                run()
                times.setdefault((q.name, engine), []).append(time.perf_counter() - start)
    spark.stop()

    after: dict[str, dict[str, Any]] = {}
    if connector:
        t = time.perf_counter()
        after = run_connector(warehouse, qs)
        print(f"connector run 2: {time.perf_counter() - t:.1f} s (process)", flush=True)

    wrong = []
    for q in qs:
        reference = before.get(q.name) or results[(q.name, "parquet")]
        for engine in ("sql", "planned", "parquet"):
            if (q.name, engine) in results:
                diff = harness.differences(reference, results[(q.name, engine)],
                                           ordered=harness.has_top_level_order_by(q.sql))
                if diff:
                    wrong.append(f"{q.name} {engine}: {diff}")
    print_table(qs, times, before, after, a)
    if wrong:
        print("\nWRONG ANSWERS:\n" + "\n".join(wrong))
        return 1
    return 0


def print_table(qs: list[Query], times: dict[tuple[str, str], list[float]], before: dict[str, Any],
                after: dict[str, Any], a: argparse.Namespace) -> None:
    def med(q: Query, engine: str) -> float | None:
        v = times.get((q.name, engine))
        return statistics.median(v) if v else None

    def s(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    def ratio(x: float | None, y: float | None) -> str:
        return "-" if x is None or not y else f"{x / y:.2f}x"

    print(f"\nTPC-H SF {a.scale} (tpchgen-cli) + bench.events {a.events_rows:,} rows / "
          f"{a.events_files} files; median of {a.rounds} round(s); seconds")
    head = (f"{'query':<20} {'sql':>8} {'planned':>8} {'parquet':>8} {'conn#1':>8} {'conn#2':>8} "
            f"{'sql/conn':>9} {'sql/parq':>9} {'sql/plan':>9}")
    print(head)
    print("-" * len(head))
    tot = {"sql": 0.0, "parquet": 0.0, "conn": 0.0}
    for q in qs:
        ours, plan, parq = med(q, "sql"), med(q, "planned"), med(q, "parquet")
        c1 = before[q.name]["seconds"] if q.name in before else None
        c2 = after[q.name]["seconds"] if q.name in after else None
        conn = statistics.mean([c for c in (c1, c2) if c is not None]) if c1 is not None else None
        tot["sql"] += ours or 0.0
        tot["parquet"] += parq or 0.0
        tot["conn"] += conn or 0.0
        print(f"{q.name:<20} {s(ours):>8} {s(plan):>8} {s(parq):>8} {s(c1):>8} {s(c2):>8} "
              f"{ratio(ours, conn):>9} {ratio(ours, parq):>9} {ratio(ours, plan):>9}")
    print("-" * len(head))
    print(f"{'total':<20} {tot['sql']:>8.3f} {'':>8} {tot['parquet']:>8.3f} "
          f"{sum(r['seconds'] for r in before.values()):>8.3f} "
          f"{sum(r['seconds'] for r in after.values()):>8.3f} "
          f"{ratio(tot['sql'], tot['conn']):>9} {ratio(tot['sql'], tot['parquet']):>9}")
    print("conn#1/#2: Paimon's connector (paimon-sql.sh) right before / after ours; "
          "sql/conn against their mean")


if __name__ == "__main__":
    sys.exit(main())
