"""The table core's costs, each against the reference it replaces, measured in one run.

    python benchmarks/table_core.py [--rows N] [--files F] [--repeat R]

Rows (interleaved: reference and ours alternate, best of ``--repeat``):

    commit            committing one prepared data file: pypaimon's own batch commit (reference) vs
                      our Transaction (pinned base, exclusive snapshot publish, cleanup bookkeeping)
    write + stats     appending F files through the public API with value statistics
                      (``metadata.stats-mode`` default, truncate(16)) vs the same with
                      ``metadata.stats-mode = none`` (reference: what pypaimon writes)
    stats pruning     ``id BETWEEN x AND x+100`` (one file in F by its id range, no index on id):
                      our read with statistics vs the same read with ``use_index=False`` (reference:
                      every file planned and read)
    expire            ``expire_snapshots(retain_last=1)`` after F appends (no reference: absolute)

Reported: seconds, rows/s, bytes written or read, and the ratio ours / reference.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

import paimon_index
from paimon_index.table.transaction import Transaction

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("category", pa.string()),
                    ("amount", pa.float64())])


def rows(n: int, start: int) -> pa.Table:
    rng = np.random.default_rng(start)
    categories = np.char.add("c", rng.integers(0, 100, n).astype(str)).astype(object)
    return pa.table({"id": pa.array(np.arange(start, start + n, dtype=np.int64)),
                     "category": pa.array(categories),
                     "amount": pa.array(rng.random(n) * 1000)}, schema=SCHEMA)


def best(repeat: int, run: Callable[[], float]) -> float:
    return min(run() for _ in range(repeat))


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


def bench_commit(root: Path, n: int, repeat: int) -> tuple[float, float]:
    """(pypaimon's commit, our Transaction's commit) of one prepared file, seconds."""
    table = paimon_index.create_table(str(root / "commit"), "db.t", SCHEMA, options={"bucket": "-1"})
    paimon = table.paimon_table
    data = rows(n, 0)

    def prepared() -> list:
        writer = paimon.new_batch_write_builder().new_write()
        writer.write_arrow(data)
        messages = writer.prepare_commit()
        writer.close()
        return messages

    def theirs() -> float:
        messages = prepared()
        committer = paimon.new_batch_write_builder().new_commit()
        start = time.perf_counter()
        committer.commit(messages)
        elapsed = time.perf_counter() - start
        committer.close()
        return elapsed

    def ours() -> float:
        messages = prepared()
        start = time.perf_counter()
        txn = Transaction.begin(paimon, operation="benchmark")
        txn.stage(messages)
        txn.commit()
        return time.perf_counter() - start

    t_theirs, t_ours = [], []
    for _ in range(repeat):
        t_theirs.append(theirs())
        t_ours.append(ours())
    return min(t_theirs), min(t_ours)


def bench_write(root: Path, n: int, files: int, repeat: int, stats: bool) -> tuple[float, int]:
    def run() -> float:
        where = root / f"write-{stats}"
        shutil.rmtree(where, ignore_errors=True)
        options = {"bucket": "-1"} if stats else {"bucket": "-1", "metadata.stats-mode": "none"}
        table = paimon_index.create_table(str(where), "db.t", SCHEMA, options=options)
        parts = [rows(n // files, i * (n // files)) for i in range(files)]
        start = time.perf_counter()
        for part in parts:
            table.write(part)
        return time.perf_counter() - start

    seconds = best(repeat, run)
    return seconds, dir_bytes(root / f"write-{stats}")


def bench_prune(root: Path, n: int, repeat: int) -> tuple[float, float, int, int]:
    table = paimon_index.open_table(str(root / "write-True"), "db.t")
    low = n // 2
    where = f"id BETWEEN {low} AND {low + 100}"
    expected = table.read(where, use_index=False).num_rows
    t_plain = best(repeat, lambda: _timed(lambda: table.read(where, use_index=False)))
    t_stats = best(repeat, lambda: _timed(lambda: table.read(where)))
    report = table.last_scan_report
    assert table.read(where).num_rows == expected == 101
    assert report is not None
    return t_plain, t_stats, report.files_skipped_by_stats, report.data_bytes_read


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="paimon-index-core-"))
    try:
        commit_theirs, commit_ours = bench_commit(root, 10_000, args.repeat)
        w_stats, b_stats = bench_write(root, args.rows, args.files, args.repeat, stats=True)
        w_plain, b_plain = bench_write(root, args.rows, args.files, args.repeat, stats=False)
        p_plain, p_stats, skipped, read_bytes = bench_prune(root, args.rows, args.repeat)
        table = paimon_index.open_table(str(root / "write-True"), "db.t")
        t_expire = _timed(lambda: table.expire_snapshots(retain_last=1))
        print(f"table core: {args.rows:,} rows in {args.files} files, best of {args.repeat}")
        print(f"{'measure':<16} {'reference s':>12} {'ours s':>9} {'rows/s (ours)':>14} {'bytes (ours)':>13} "
              f"{'ours/reference':>15}")
        print(f"{'commit':<16} {commit_theirs:>12.4f} {commit_ours:>9.4f} {'':>14} {'':>13} "
              f"{commit_ours / commit_theirs:>14.2f}x")
        print(f"{'write + stats':<16} {w_plain:>12.3f} {w_stats:>9.3f} {args.rows / w_stats:>14,.0f} "
              f"{b_stats:>13,} {w_stats / w_plain:>14.2f}x")
        print(f"{'stats pruning':<16} {p_plain:>12.4f} {p_stats:>9.4f} {'':>14} {read_bytes:>13,} "
              f"{p_stats / p_plain:>14.2f}x   ({skipped} of {args.files} files skipped by statistics)")
        print(f"{'expire':<16} {'':>12} {t_expire:>9.3f}")
        print(f"(pypaimon without statistics wrote {b_plain:,} bytes of data files)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
