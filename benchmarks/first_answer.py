"""The first answer in a fresh process: ``paimon.sql`` against Apache Paimon's own Spark connector.

    python benchmarks/first_answer.py [--rounds 3] [--scale 1] [--no-connector]

What a user waits for from a cold start (issue 21: "first answer in a fresh process <= 8 s"): from
spawning the process to the first query's rows being in Python, interleaved per round:

    ours       ``python -c``: import paimon_index.spark, ``local_session()``, ``attach``,
               ``paimon.sql(q).collect()``; the child reports when each step ended. The driver
               JVM maps this machine's class archive (:mod:`paimon_index.spark.class_archive`;
               when there is none yet, an untimed first child spawns its trainer and the
               benchmark waits until the archive is published)
    ours, no archive
               the same child with ``PAIMON_INDEX_CLASS_ARCHIVE=off``: the JVM loads every class
    connector  ``paimon-sql.sh`` (Paimon's ``SparkCatalog`` in PySpark 4.1.2, its own JVM) with the
               same statement; the moment its answer line is printed (it flushes per statement)

Both clocks are the wall clock (``time.time()``), spawn to answer, so interpreter start, imports,
the JVM and the Spark session are all in it. Data: ``spark_sql.py``'s cached warehouse (TPC-H at
``--scale`` with indexes and deletion vectors, ``bench.events``). Both answers must be equal, else
the run fails. Printed: per query the median seconds (ours' steps: import, session, answer), the
ratio ours / connector, and whether the 8 s target holds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "tests"))

import spark_read  # noqa: E402  (benchmarks/)
import spark_sql  # noqa: E402  (benchmarks/)
from paimon_index.spark import class_archive  # noqa: E402
from sqlref import harness  # noqa: E402  (tests/)

#: The issue's target for the first answer in a fresh process, seconds.
TARGET_SECONDS = 8.0
QUERIES = {
    "count": "SELECT count(*) FROM tpch.lineitem",
    # spark_read's point lookup: one live row of spark_sql.py's 2,000,000 events
    "point lookup": f"SELECT * FROM bench.events WHERE id = {spark_read.FIRST_ID + int(2_000_000 * 0.61)}",
    "q06": "SELECT sum(l_extendedprice * l_discount) AS revenue FROM tpch.lineitem "
           "WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01' "
           "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
}
#: The child: each step's end on the wall clock, then the answer, as one JSON line.
CHILD = """
import json, sys, time
started = float(sys.argv[3])
from paimon_index.spark import attach
from paimon_index.spark.session import local_session
imported = time.time()
spark = local_session("first-answer", master="local[2]")
session = time.time()
df = attach(spark, warehouse=sys.argv[1]).sql(sys.argv[2])
rows = df.collect()
answered = time.time()
from sqlref import harness
print(json.dumps({"import": imported - started, "session": session - started, "answer": answered - started,
                  "ok": True, "columns": df.columns,
                  "rows": [[harness.plain(v) for v in r] for r in rows]}), flush=True)
"""


def first_line(command: list[str], env: dict[str, str] | None = None) -> tuple[float, dict[str, Any]]:
    """(seconds from spawn to the first JSON line, that line); the process is then ended."""
    started = time.time()
    proc = subprocess.Popen([*command, str(started)] if command[0] == sys.executable else command,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.startswith("{"):
                return time.time() - started, json.loads(line)
        raise SystemExit(f"no answer from {command[:3]} (exit {proc.wait()})")
    finally:
        proc.kill()
        proc.wait()


def ours(warehouse: Path, sql: str, *, archive: bool = True) -> tuple[float, dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT.parent / "src"), str(ROOT.parent / "tests"), os.environ.get("PYTHONPATH", "")])}
    env[class_archive.ARCHIVE_SWITCH] = "on" if archive else "off"
    seconds, answer = first_line([sys.executable, "-c", CHILD, str(warehouse), sql], env)
    return seconds, answer


def ours_without_archive(warehouse: Path, sql: str) -> tuple[float, dict[str, Any]]:
    return ours(warehouse, sql, archive=False)


def connector(warehouse: Path, sql: str) -> tuple[float, dict[str, Any]]:
    return first_line([str(harness.CONNECTOR), "--warehouse", str(warehouse), "--sql", sql])


def ready_archive(warehouse: Path, wait_seconds: float = 900.0) -> Path | None:
    """Run one untimed child of ours; when its session found no class archive and spawned the
    trainer, wait for the archive the trainer publishes (so no timed child starts without one).
    The archive it published, or None when there already was one."""
    started = time.time()
    ours(warehouse, "SELECT 1")
    suffix = class_archive.SUFFIX + class_archive.TRAINING_SUFFIX
    training = [lock for lock in class_archive.archive_dir().glob(f"{class_archive.PREFIX}*{suffix}")
                if lock.stat().st_mtime >= started - 1]
    if not training:
        return None
    archive = training[0].with_name(training[0].name.removesuffix(class_archive.TRAINING_SUFFIX))
    deadline = time.monotonic() + wait_seconds
    while not archive.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"the class archive's trainer published no {archive} in {wait_seconds:.0f} s")
        time.sleep(1)
    return archive


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor of the cached data")
    ap.add_argument("--data", type=Path, default=spark_sql.DEFAULT_DATA)
    ap.add_argument("--no-connector", action="store_true", help="skip Paimon's connector")
    a = ap.parse_args(argv)
    warehouse, _ = spark_sql.build(a.data, a.scale, 2_000_000, 20)
    with_connector = not a.no_connector and harness.connector_unavailable() is None
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; {warehouse}", flush=True)
    archives = sorted(class_archive.archive_dir().glob(f"{class_archive.PREFIX}*{class_archive.SUFFIX}"))
    print(f"class archives in {class_archive.archive_dir()} at start: {[a.name for a in archives] or 'none'}",
          flush=True)
    trained = ready_archive(warehouse)
    if trained is not None:
        print(f"no archive for this driver: its trainer published {trained.name} (untimed)", flush=True)

    times: dict[tuple[str, str], list[float]] = {}
    steps: dict[str, list[tuple[float, float]]] = {}
    wrong: list[str] = []
    for r in range(a.rounds):
        for name, sql in QUERIES.items():
            runs = [("ours", ours), ("no archive", ours_without_archive)] + (
                [("connector", connector)] if with_connector else [])
            answers = {}
            for engine, run in (runs if r % 2 == 0 else runs[::-1]):
                seconds, answers[engine] = run(warehouse, sql)
                times.setdefault((name, engine), []).append(seconds)
            steps.setdefault(name, []).append((answers["ours"]["import"], answers["ours"]["session"]))
            if not answers["ours"]["rows"]:  # every query here returns a row: an empty answer is wrong
                wrong.append(f"{name} (round {r + 1}): no row")
            for other in ("no archive", "connector"):
                if other in answers and (diff := harness.differences(answers[other], answers["ours"],
                                                                     ordered=False)):
                    wrong.append(f"{name} (round {r + 1}, {other}): {diff}")

    print(f"\nFirst answer in a fresh process (spawn -> rows in Python), median of {a.rounds} round(s); "
          f"seconds; TPC-H SF {a.scale}")
    head = (f"{'query':<14} {'ours':>7} {'import':>7} {'session':>8} {'no archive':>11} {'connector':>10} "
            f"{'ours/conn':>10} {'<= 8 s':>7}")
    print(head)
    print("-" * len(head))
    for name in QUERIES:
        mine = statistics.median(times[(name, "ours")])
        plain = statistics.median(times[(name, "no archive")])
        theirs = statistics.median(times[(name, "connector")]) if with_connector else None
        imported = statistics.median(s[0] for s in steps[name])
        session = statistics.median(s[1] for s in steps[name])
        ratio = "-" if theirs is None else f"{mine / theirs:.2f}x"
        print(f"{name:<14} {mine:>7.2f} {imported:>7.2f} {session:>8.2f} {plain:>11.2f} "
              f"{'-' if theirs is None else f'{theirs:.2f}':>10} {ratio:>10} "
              f"{'yes' if mine <= TARGET_SECONDS else 'no':>7}")
    print("import / session: when ours had imported paimon_index.spark / started its Spark session; "
          "no archive: ours with PAIMON_INDEX_CLASS_ARCHIVE=off")
    if wrong:
        print("\nWRONG ANSWERS:\n" + "\n".join(wrong))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
