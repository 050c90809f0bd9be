"""The steps that run on the Spark driver only, measured, so their limits can be stated.

    python benchmarks/driver_steps.py [--files 500,2000] [--bucket-files 500] [--snapshots 100]
                                      [--rows 200000]

Every Spark job of paimon-index plans on the driver and commits there; a few verbs run there
entirely. None has a distributed form here, so this measures how each grows (one run, one
process, absolute numbers; no reference -- the reference is "what a cluster's driver can afford"):

    plan: read (splits)      what the source's ``partitions()`` does: pypaimon's plan of the latest
                             snapshot with value-statistics pruning (``table/stats.plan_splits``)
    plan: DELETE/UPDATE      ``plan_row_change``: the pinned plan with every bucket's DV entries
    plan: rewrite index      ``plan_rewrite``: every file's container head compared with the options
    expire                   ``expire_snapshots(retain_last=1)`` after S snapshots
    compact (pk, full)       ``Table.compact(full=True)`` of a primary-key table (bucket 4, DV mode)
    upsert (dynamic bucket)  ``Table.upsert`` into a ``bucket = -1`` primary-key table: what the
                             Spark upsert does on the driver for such tables (one writer task,
                             lookup and commit on the driver)

Planning is measured at each ``--files`` count (tables of that many data files: ``--bucket-files``
files per commit, one per bucket) and extrapolated linearly to 100,000 files from the largest.
Reported: wall-clock and CPU seconds, files or rows per wall and per CPU second, and the
extrapolation of both to 100,000 files.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import paimon_index
from paimon_index.predicate import ALWAYS_TRUE
from paimon_index.table.rewrite import plan_rewrite
from paimon_index.table.row_level import plan_row_change
from paimon_index.table.schemas import read_schema
from paimon_index.table.stats import plan_splits

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("tag", pa.string()), ("score", pa.int32())])
TARGET_FILES = 100_000
ROWS_PER_FILE = 20


def rows(n: int, start: int) -> pa.Table:
    rng = np.random.default_rng(start)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "tag": pa.array(np.char.add("t", (ids % 50).astype(str)).astype(object)),
                     "score": pa.array(rng.integers(0, 1000, n).astype(np.int32))}, schema=SCHEMA)


@dataclass(frozen=True)
class Timing:
    """Wall-clock and CPU seconds (this process, all threads) of one step: on a shared machine the
    wall clock also counts the wait for a core, the CPU time does not."""

    wall: float
    cpu: float


def timed(run: Callable[[], Any]) -> tuple[Timing, Any]:
    cpu, start = time.process_time(), time.perf_counter()
    out = run()
    return Timing(time.perf_counter() - start, time.process_time() - cpu), out


def many_files(root: Path, files: int, per_commit: int) -> paimon_index.Table:
    """An append table of ``files`` data files: commits of ``per_commit`` files (one per bucket)."""
    table = paimon_index.create_table(str(root / f"files-{files}"), "db.t", SCHEMA, options={
        "bucket": str(per_commit), "bucket-key": "id", "deletion-vectors.enabled": "true",
        "file-index.bitmap.columns": "tag"})
    for commit in range(files // per_commit):
        # Enough rows that every bucket gets some: one file per bucket per commit.
        table.write(rows(per_commit * ROWS_PER_FILE, commit * per_commit * ROWS_PER_FILE))
    return table


def bench_planning(table: paimon_index.Table) -> tuple[int, dict[str, Timing]]:
    paimon = table.paimon_table
    schema = read_schema(paimon)
    out = {}
    out["plan: read (splits)"], splits = timed(lambda: plan_splits(paimon, ALWAYS_TRUE, schema))
    out["plan: DELETE/UPDATE"], _ = timed(lambda: plan_row_change(paimon))
    out["plan: rewrite index"], _ = timed(lambda: plan_rewrite(paimon))
    return sum(len(s.files) for s in splits), out


def bench_expire(root: Path, snapshots: int) -> Timing:
    table = paimon_index.create_table(str(root / "expire"), "db.t", SCHEMA, options={"bucket": "-1"})
    for i in range(snapshots):
        table.write(rows(100, i * 100))
    return timed(lambda: table.expire_snapshots(retain_last=1))[0]


def pk_table(root: Path, name: str, bucket: str) -> paimon_index.Table:
    return paimon_index.create_table(str(root / name), "db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": bucket, "deletion-vectors.enabled": "true"})


def bench_compact(root: Path, n: int) -> Timing:
    table = pk_table(root, "compact", "4")
    for part in range(4):  # four upserts, each overlapping the last half of the previous keys
        table.upsert(rows(n // 4, part * n // 8))
    return timed(lambda: table.compact(full=True))[0]


def bench_dynamic_upsert(root: Path, n: int) -> tuple[Timing, Timing]:
    table = pk_table(root, "dynamic", "-1")
    first, _ = timed(lambda: table.upsert(rows(n, 0)))
    again, _ = timed(lambda: table.upsert(rows(n, n // 2)))  # half updates, half new keys
    return first, again


def line(step: str, size: int, unit: str, t: Timing, extrapolate: bool = False) -> str:
    scale = TARGET_FILES / size
    at_target = f"{t.wall * scale:>8.0f} / {t.cpu * scale:<6.0f}" if extrapolate else ""
    return (f"{step:<26} {size:>9,} {unit:<9} {t.wall:>8.2f} {t.cpu:>8.2f} "
            f"{size / t.wall:>10,.0f} {size / t.cpu:>10,.0f}  {at_target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="500,2000")
    parser.add_argument("--bucket-files", type=int, default=500)
    parser.add_argument("--snapshots", type=int, default=100)
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="paimon-index-driver-"))
    lines = [f"{'step':<26} {'size':>19} {'wall s':>8} {'cpu s':>8} {'per wall s':>10} {'per cpu s':>10}"
             f"  100k files: wall / cpu s"]
    try:
        for files in (int(f) for f in args.files.split(",")):
            build, table = timed(lambda files=files: many_files(root, files, args.bucket_files))
            count, steps = bench_planning(table)
            lines.append(line("(build: appends)", count, "files", build))
            lines += [line(step, count, "files", t, extrapolate=True) for step, t in steps.items()]
        expire = bench_expire(root, args.snapshots)
        lines.append(line("expire (retain 1)", args.snapshots, "snapshots", expire))
        lines.append(line("compact (pk, full)", args.rows, "rows", bench_compact(root, args.rows)))
        first, again = bench_dynamic_upsert(root, args.rows)
        lines.append(line("upsert dynamic (load)", args.rows, "rows", first))
        lines.append(line("upsert dynamic (changes)", args.rows, "rows", again))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
