"""File-index build and query speed on 1,000,000 rows, against Apache Paimon (Java).

Datasets (as in ../shared/golden/PERFORMANCE.md), values from ``splitmix64(i)``, i = 0..n-1:

    int-1k       INT     floorMod(splitmix64(i), 1000)          1,000 distinct values
    string-1k    STRING  "s%04d" of the same                    1,000 distinct values
    bigint-uniq  BIGINT  splitmix64(i)                          all distinct

Build = Arrow column -> canonical keys -> index bytes (Java's figure starts from pre-boxed values,
so ours includes work Java's does not). Query = parse the container from bytes + evaluate +
materialize the row bitmap; ``=`` uses the value of row 500,000, ``IN`` the values of rows
k*100,000+1 (k = 0..9) as an OR of 10 ``=``. Each figure is the median of several timed runs after
a warm-up. ``x Java`` is Java's time divided by ours (above 1 = faster than Java); Java's query
figures are ranges, of which we take the midpoint.

    python benchmarks/file_index.py [--rows N] [--indexes bitmap,bloom-filter] [--no-range]

After the bitmap and Bloom filter table it prints the range-bitmap and BSI table of
``benchmarks/file_index_range.py`` (same datasets plus a DOUBLE column; ranges and TopN).
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from paimon_index.fileindex.builder import build_index_bodies
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.fileindex.result import Rows
from paimon_index.predicate import Leaf, Op, or_
from paimon_index.types import canonical_literal, from_arrow

PERFORMANCE_MD = Path(__file__).resolve().parents[1].parent / "shared" / "golden" / "PERFORMANCE.md"
GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
IN_COUNT = 10
BUILD_RUNS = 5
QUERY_RUNS = 30
INDEX_OPTIONS = {"bitmap": {}, "bloom-filter": {}}
JAVA_INDEX_NAMES = {"bitmap": "bitmap (v2)", "bloom-filter": "bloom-filter", "range-bitmap": "range-bitmap",
                    "bsi": "bsi"}


def splitmix64(n: int) -> np.ndarray:
    """splitmix64 of 0..n-1 (seed i, one step: z = i + gamma, then the two xor-shift-multiplies)."""
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) + GOLDEN_GAMMA
        z = (z ^ (z >> np.uint64(30))) * MIX1
        z = (z ^ (z >> np.uint64(27))) * MIX2
        z = z ^ (z >> np.uint64(31))
    return z.view(np.int64)


def datasets(n: int) -> dict[str, pa.Array]:
    raw = splitmix64(n)
    mod = np.mod(raw, 1000).astype(np.int32)  # numpy's mod is a floor mod, like Math.floorMod
    strings = np.char.add("s", np.char.zfill(mod.astype(str), 4))
    return {
        "int-1k": pa.array(mod, pa.int32()),
        "string-1k": pa.array(strings, pa.string()),
        "bigint-uniq": pa.array(raw, pa.int64()),
    }


def java_reference() -> dict[tuple[str, str], dict[str, float]]:
    """Java's figures from PERFORMANCE.md: build ms, bytes, eq µs, in µs (range midpoints)."""
    if not PERFORMANCE_MD.is_file():
        return {}
    out = {}
    for line in PERFORMANCE_MD.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not cells[2][:1].isdigit():
            continue

        def num(text: str) -> float:
            parts = [float(p.replace(",", "")) for p in re.split(r"[–-]", text) if p]
            return sum(parts) / len(parts)

        out[(cells[0], cells[1])] = {"build_ms": num(cells[2]), "bytes": num(cells[4]),
                                     "eq_us": num(cells[5]), "in_us": num(cells[6])}
    return out


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(name: str, column: pa.Array, index_type: str) -> dict[str, float]:
    table = pa.table({"c": column})
    options = {f"file-index.{index_type}.columns": "c"}
    options.update({f"file-index.{index_type}.c.{k}": v for k, v in INDEX_OPTIONS[index_type].items()})
    dtype = from_arrow(column.type)
    build_s = median_seconds(lambda: build_index_bodies(table, options), BUILD_RUNS)
    bodies = build_index_bodies(table, options)
    container = write_container(bodies)

    def lit(row: int) -> object:
        return canonical_literal(column[row].as_py(), dtype)

    n = len(column)  # row n/2 for =, rows k*n/10 + 1 for IN (500,000 and k*100,000+1 at 1M rows)
    eq = Leaf(Op.EQ, "c", (lit(n // 2),))
    in10 = or_(*(Leaf(Op.EQ, "c", (lit(k * n // IN_COUNT + 1),)) for k in range(IN_COUNT)))
    schema = {"c": dtype}

    def query(predicate: object) -> object:
        with ContainerReader(container) as reader:
            result = FileIndexEvaluator(reader, schema).evaluate(predicate)  # type: ignore[arg-type]
            return len(result.bitmap) if isinstance(result, Rows) else result.remain

    eq_us = median_seconds(lambda: query(eq), QUERY_RUNS) * 1e6
    in_us = median_seconds(lambda: query(in10), QUERY_RUNS) * 1e6
    return {"build_ms": build_s * 1000, "rows_per_s": len(column) / build_s,
            "bytes": len(bodies["c"][index_type]), "eq_us": eq_us, "in_us": in_us}


def ratio(java: float | None, ours: float) -> str:
    return "n/a" if not java else f"{java / ours:.1f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--indexes", default="bitmap,bloom-filter")
    parser.add_argument("--no-range", action="store_true", help="skip the range-bitmap and bsi table")
    args = parser.parse_args()
    java = java_reference()
    header = (f"{'dataset':<12} {'index':<13} {'build ms':>9} {'rows/s':>8} {'x Java':>7} "
              f"{'index bytes':>12} {'Java bytes':>11} {'= µs':>8} {'x Java':>7} "
              f"{'IN10 µs':>8} {'x Java':>7}")
    print(f"{args.rows:,} rows; Java figures: {PERFORMANCE_MD if java else 'not found'}")
    print(header)
    print("-" * len(header))
    for name, column in datasets(args.rows).items():
        for index_type in args.indexes.split(","):
            r = bench(name, column, index_type)
            j = java.get((name, JAVA_INDEX_NAMES[index_type]), {})
            java_bytes = f"{int(j['bytes']):,}" if j else "n/a"
            print(f"{name:<12} {index_type:<13} {r['build_ms']:>9.1f} {r['rows_per_s'] / 1e6:>7.1f}M "
                  f"{ratio(j.get('build_ms'), r['build_ms']):>7} {r['bytes']:>12,} {java_bytes:>11} "
                  f"{r['eq_us']:>8.0f} {ratio(j.get('eq_us'), r['eq_us']):>7} "
                  f"{r['in_us']:>8.0f} {ratio(j.get('in_us'), r['in_us']):>7}", flush=True)
    if not args.no_range:
        import file_index_range

        print()
        file_index_range.print_table(file_index_range.run(args.rows, repeat=15), args.rows)


if __name__ == "__main__":
    main()
