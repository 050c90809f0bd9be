"""Deletion-vectors mode vs merge-on-read for a primary-key table: upsert cost and read speed.

Two primary-key tables (``k`` BIGINT key, ``tag`` STRING with a bitmap index, ``amount`` DOUBLE,
``note`` STRING; ``bucket = 4``), loaded with the same ``--rows`` rows (default 10,000,000) in
``--loads`` appends of sequential keys, then upserted with ``--upsert`` rows (default 1,000,000):
10% of them update existing keys (random), the rest are new keys. ``tag = 'hot'`` marks 0.1% of
the rows.

    dv        ``deletion-vectors.enabled = true``, written with ``upsert_arrow``: every upsert looks
              the keys up and marks older rows in deletion vectors; no level-0 file remains
    merge     the same options without deletion vectors, written with pypaimon's writer: level-0
              files that every read merges by key

Measured (wall time, best of ``--repeat``):

    upsert         the upsert of ``--upsert`` rows into each table
    read all       every row: ours merge-free (``read_primary_key``), pypaimon's merge-free read of
                   the dv table, pypaimon's merge read of the merge table
    read filter    ``tag = 'hot'`` (a non-key column): ours with the bitmap index, pypaimon's
                   merge-free read with the filter, pypaimon's merge read with the filter

Targets (from the issue): DV-mode reads ≥ 3x faster than merge reads; upsert with lookup ≤ 2x the
plain write. Measured numbers only.

    python benchmarks/primary_key.py [--rows N] [--loads L] [--upsert U] [--repeat R]
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
from paimon_index.table.pk import read_primary_key, upsert_arrow

SEED = 20261122
HOT_EVERY = 1000
OPTIONS = {"bucket": "4", "file-index.bitmap.columns": "tag"}
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("tag", pa.string()), ("amount", pa.float64()),
                    ("note", pa.string())])
TARGET_READ_SPEEDUP = 3.0
TARGET_UPSERT_RATIO = 2.0


def rows_for(keys: np.ndarray, rng: np.random.Generator, version: int) -> pa.Table:
    tags = np.where(keys % HOT_EVERY == 0, "hot", "cold").astype(object)
    notes = np.char.add(f"v{version}-", (keys % 9973).astype(str)).astype(object)
    return pa.table({"k": keys, "tag": pa.array(tags, pa.string()), "amount": rng.random(keys.size) * 100,
                     "note": pa.array(notes, pa.string())}, schema=SCHEMA)


def plain_write(table: Any, data: pa.Table) -> None:
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    try:
        writer.write_arrow(data)
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()


def pypaimon_read(table: Any, hot_only: bool) -> int:
    builder = table.new_read_builder()
    if hot_only:
        builder = builder.with_filter(builder.new_predicate_builder().equal("tag", "hot"))
    return builder.new_read().to_arrow(builder.new_scan().plan().splits()).num_rows


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--upsert", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-pk-"))
    try:
        run(str(root), args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(warehouse: str, args: argparse.Namespace) -> None:
    rng = np.random.default_rng(SEED)
    dv = create_table(warehouse, "bench.dv", SCHEMA, primary_keys=["k"],
                      options={**OPTIONS, "deletion-vectors.enabled": "true"})
    merge = create_table(warehouse, "bench.merge", SCHEMA, primary_keys=["k"], options=OPTIONS)
    per_load = -(-args.rows // args.loads)
    load_dv = load_merge = 0.0
    for first in range(0, args.rows, per_load):
        data = rows_for(np.arange(first, min(first + per_load, args.rows), dtype=np.int64), rng, 0)
        load_dv += timed(lambda data=data: upsert_arrow(dv, data))[0]
        load_merge += timed(lambda data=data: plain_write(merge, data))[0]
    updates = rng.choice(args.rows, args.upsert // 10, replace=False).astype(np.int64)
    fresh = np.arange(args.rows, args.rows + args.upsert - updates.size, dtype=np.int64)
    batch = rows_for(rng.permutation(np.concatenate([updates, fresh])), rng, 1)
    upsert_dv, _ = timed(lambda: upsert_arrow(dv, batch))
    upsert_merge, _ = timed(lambda: plain_write(merge, batch))
    expected = args.rows + fresh.size

    print(f"{args.rows:,} rows loaded in {args.loads} appends, then {args.upsert:,} upserted "
          f"({updates.size:,} updates); bucket = 4, best of {args.repeat}\n")
    ratio = upsert_dv / upsert_merge
    print(f"{'write':<40}{'seconds':>9}{'rows/s':>14}{'ratio':>8}")
    print(f"{'load, plain pypaimon (merge table)':<40}{load_merge:>9.2f}{args.rows / load_merge:>14,.0f}")
    print(f"{'load, upsert with lookup (dv table)':<40}{load_dv:>9.2f}{args.rows / load_dv:>14,.0f}"
          f"{load_dv / load_merge:>8.2f}")
    plain_rate = args.upsert / upsert_merge
    print(f"{'upsert, plain pypaimon (merge table)':<40}{upsert_merge:>9.2f}{plain_rate:>14,.0f}{1:>8.2f}")
    print(f"{'upsert with lookup + DVs (dv table)':<40}{upsert_dv:>9.2f}{args.upsert / upsert_dv:>14,.0f}"
          f"{ratio:>8.2f}   target <= {TARGET_UPSERT_RATIO:.0f}: "
          f"{'met' if ratio <= TARGET_UPSERT_RATIO else 'NOT met'}")

    hot = int(np.count_nonzero(np.concatenate([np.arange(args.rows), fresh]) % HOT_EVERY == 0))
    for label, where, hot_only, want in (("read all", "k >= 0", False, expected),
                                         ("read filter tag = 'hot'", "tag = 'hot'", True, hot)):
        ours_s, (ours, _) = timed(lambda where=where: read_primary_key(dv, where), args.repeat)
        theirs_dv_s, theirs_dv = timed(lambda h=hot_only: pypaimon_read(dv, h), args.repeat)
        merge_s, merged = timed(lambda h=hot_only: pypaimon_read(merge, h), args.repeat)
        if not ours.num_rows == want == merged or (not hot_only and theirs_dv != want):
            raise SystemExit(f"{label}: ours {ours.num_rows}, pypaimon dv {theirs_dv}, merge {merged}, "
                             f"expected {want}")
        print(f"\n{label}")
        print(f"{'variant':<44}{'seconds':>9}{'rows':>12}{'vs merge':>10}")
        for name, seconds, count in (("ours, dv table, merge-free + index", ours_s, ours.num_rows),
                                     ("pypaimon, dv table, merge-free", theirs_dv_s, theirs_dv),
                                     ("pypaimon, merge table, merge read", merge_s, merged)):
            print(f"{name:<44}{seconds:>9.3f}{count:>12,}{merge_s / seconds:>9.1f}x")
        speedup = merge_s / ours_s
        print(f"dv-mode read vs merge read: {speedup:.1f}x   target >= {TARGET_READ_SPEEDUP:.0f}x: "
              f"{'met' if speedup >= TARGET_READ_SPEEDUP else 'NOT met'}")


if __name__ == "__main__":
    main()
