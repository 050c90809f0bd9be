"""Benchmark: range-bitmap and bsi file indexes on 1,000,000 rows, against Java's figures.

Datasets (as in ``shared/golden/PERFORMANCE.md``; ``splitmix64(i)`` = the SplitMix64 output for
state ``i``: ``z = i + 0x9E3779B97F4A7C15``, then the standard mix):

    int-1k       INT     floorMod(splitmix64(i), 1000)            1,000 distinct
    string-1k    STRING  "s%04d" of the same                       1,000 distinct
    bigint-uniq  BIGINT  splitmix64(i)                             all distinct
    double-uniq  DOUBLE  (splitmix64(i) >>> 11) * 2^-53            all distinct (no Java figure)

Build = Arrow array -> canonical keys (:func:`paimon_index.types.canonical_column`) -> index bytes
(Java's figure excludes turning data into objects; ours includes reading the Arrow array).
Query = parse the container from bytes + evaluate + materialize the row bitmap, as Java measured:
``=`` uses the value of row 500,000; ``IN`` 10 values (rows k*100,000+1) as an OR of 10 ``=``;
range = ``<`` a value selecting ~10% of the rows; TopN-10 = ``ORDER BY c ASC NULLS LAST LIMIT 10``
(range-bitmap only). Medians after warm-up runs. "vs Java" = how many times faster than Java's
figure (the middle of Java's range), > 1 is faster.

Run: ``.venv/bin/python benchmarks/file_index_range.py [--rows N] [--repeat R]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from paimon_index.fileindex.base import SortOrder, TopN
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.fileindex.registry import get_index_type
from paimon_index.fileindex.result import Rows
from paimon_index.predicate import Leaf, Op, or_
from paimon_index.types import DataType, canonical_column, parse_type

GOLDEN_GAMMA = 0x9E3779B97F4A7C15
MIX1, MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
DISTINCT = 1000
IN_COUNT = 10
RANGE_FRACTION = 0.10
TOPN_K = 10

#: Java's figures (PERFORMANCE.md): build ms, index bytes, `=` µs (low, high), IN µs (low, high).
JAVA = {
    ("int-1k", "range-bitmap"): (216, 1_316_471, (1640, 3660), (4100, 9760)),
    ("string-1k", "range-bitmap"): (287, 1_325_477, (743, 795), (4200, 9380)),
    ("bigint-uniq", "range-bitmap"): (2399, 10_636_839, (1268, 1387), (4690, 5030)),
}


def splitmix64(n: int) -> np.ndarray:
    """``splitmix64(i)`` for ``i`` in ``[0, n)`` as signed 64-bit integers."""
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) + np.uint64(GOLDEN_GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
        return (z ^ (z >> np.uint64(31))).view(np.int64)


@dataclass
class Dataset:
    name: str
    dtype: DataType
    arrow: pa.Array
    keys: np.ndarray  # the same values as canonical keys (bytes as an object array for strings)
    range_literal: object


def datasets(rows: int) -> list[Dataset]:
    mixed = splitmix64(rows)
    ints = np.mod(mixed, DISTINCT)  # floorMod: NumPy's mod takes the divisor's sign
    strings = np.char.mod("s%04d", ints).astype(object)
    doubles = (mixed.view(np.uint64) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    cut = int(DISTINCT * RANGE_FRACTION)
    return [
        Dataset("int-1k", parse_type("INT"), pa.array(ints.astype(np.int32)), ints, cut),
        Dataset("string-1k", parse_type("STRING"), pa.array(strings, pa.string()),
                np.array([s.encode() for s in strings], dtype=object), f"s{cut:04d}".encode()),
        Dataset("bigint-uniq", parse_type("BIGINT"), pa.array(mixed), mixed,
                int(np.quantile(mixed, RANGE_FRACTION))),
        Dataset("double-uniq", parse_type("DOUBLE"), pa.array(doubles), doubles, RANGE_FRACTION),
    ]


def _median_us(fn: Callable[[], object], repeat: int) -> float:
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def _literal(ds: Dataset, row: int) -> object:
    v = ds.keys[row]
    return v if isinstance(v, bytes) else v.item()


def run(rows: int, repeat: int) -> list[dict[str, object]]:
    results = []
    for ds in datasets(rows):
        for index in ("range-bitmap", "bsi"):
            index_type = get_index_type(index)
            if ds.dtype.root not in index_type.supported:
                continue
            schema = {"c": ds.dtype}

            def build(ds: Dataset = ds, index_type: type = index_type) -> bytes:
                column = canonical_column(ds.arrow, ds.dtype)
                return index_type.create_writer(ds.dtype, {}, "c").build(column)

            build()
            times = []
            for _ in range(max(3, repeat // 3)):
                t = time.perf_counter()
                body = build()
                times.append(time.perf_counter() - t)
            build_ms = statistics.median(times) * 1e3
            container = write_container({"c": {index: body}})

            def query(predicate: object, container: bytes = container,
                      schema: dict = schema) -> int:
                evaluator = FileIndexEvaluator(ContainerReader(container), schema)
                result = evaluator.evaluate(predicate)  # type: ignore[arg-type]
                return len(result.bitmap) if isinstance(result, Rows) else -1

            # row n/2 for =, rows k*n/10 + 1 for IN (500,000 and k*100,000+1 at 1M rows, as Java)
            eq = Leaf(Op.EQ, "c", (_literal(ds, rows // 2),))
            in_rows = [k * rows // IN_COUNT + 1 for k in range(IN_COUNT)]
            in10 = or_(*(Leaf(Op.EQ, "c", (_literal(ds, r),)) for r in in_rows))
            lt = Leaf(Op.LT, "c", (ds.range_literal,))
            row: dict[str, object] = {
                "dataset": ds.name, "index": index, "build_ms": build_ms,
                "rows_per_s": rows / (build_ms / 1e3), "bytes": len(body),
                "eq_us": _median_us(lambda q=eq: query(q), repeat),
                "in_us": _median_us(lambda q=in10: query(q), repeat),
                "lt_us": _median_us(lambda q=lt: query(q), repeat),
                "lt_rows": query(lt),
                "topn_us": None,
            }
            if index == "range-bitmap":
                topn = TopN((SortOrder("c", True, False),), TOPN_K, True)

                def top(container: bytes = container, schema: dict = schema,
                        topn: TopN = topn) -> int:
                    evaluator = FileIndexEvaluator(ContainerReader(container), schema)
                    result = evaluator.evaluate_topn(topn)
                    return len(result.bitmap) if isinstance(result, Rows) else -1

                row["topn_us"] = _median_us(top, repeat)
            results.append(row)
    return results


def _ratio(java: float | None, ours: float, higher_is_better: bool = False) -> str:
    if java is None:
        return "-"
    r = ours / java if higher_is_better else java / ours
    return f"{r:.1f}x"


def print_table(results: list[dict[str, object]], rows: int) -> None:
    scale = rows / 1_000_000
    header = (f"{'dataset':<12} {'index':<13} {'build ms':>9} {'rows/s':>7} {'vs Java':>7} "
              f"{'index bytes':>12} {'= µs':>8} {'vs Java':>7} {'IN10 µs':>8} {'vs Java':>7} "
              f"{'< µs':>8} {'(rows)':>8} {'TopN10 µs':>9}")
    print(header)
    print("-" * len(header))
    for r in results:
        java = JAVA.get((r["dataset"], r["index"])) if scale == 1 else None  # type: ignore[arg-type]
        build_ms, eq, in_us, lt = (float(r[k]) for k in ("build_ms", "eq_us", "in_us", "lt_us"))
        topn = "-" if r["topn_us"] is None else f"{float(r['topn_us']):.0f}"  # type: ignore[arg-type]
        size = f"{r['bytes']:,}"
        if java is not None:
            size += "" if java[1] == r["bytes"] else "*"
        print(f"{r['dataset']:<12} {r['index']:<13} {build_ms:>9.1f} "
              f"{float(r['rows_per_s']) / 1e6:>6.1f}M "  # type: ignore[arg-type]
              f"{_ratio(java and java[0], build_ms):>7} {size:>12} "
              f"{eq:>8.0f} {_ratio(java and sum(java[2]) / 2, eq):>7} "
              f"{in_us:>8.0f} {_ratio(java and sum(java[3]) / 2, in_us):>7} "
              f"{lt:>8.0f} {r['lt_rows']:>8} {topn:>9}")
    print("\nvs Java: times faster than Java's figure (PERFORMANCE.md, middle of its range); "
          "index bytes marked * differ from Java's size.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print_table(run(args.rows, args.repeat), args.rows)


if __name__ == "__main__":
    main()
