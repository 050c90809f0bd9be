"""Deletion-vector speed: build, serialize, deserialize, merge and iterate 1,000,000 positions.

Datasets (NumPy, seeded):

    32-bit random   1,000,000 distinct positions drawn from [0, 2^31 - 1)
    32-bit dense    positions 0 .. 999,999
    64-bit random   1,000,000 distinct positions drawn from [0, 2^36)   (16 buckets)
    64-bit dense    2^32 - 500,000 .. 2^32 + 499,999                   (crosses a bucket)

build = ``delete_many`` of a NumPy array into an empty vector; serialize = the framed bytes (size,
magic, run-optimized bitmap, CRC); deserialize = frame -> vector with every check, CRC included;
merge = union of a second vector of the same kind and size (the other half of a 2M draw) into a
copy made beforehand; iterate = all positions as a NumPy array. Each figure is the median of
several runs after a warm-up; rows/s = positions / median time. There are no Java reference
numbers for deletion vectors, so only ours are printed.

    python benchmarks/deletion_vectors.py [--rows N] [--runs R]
    python benchmarks/deletion_vectors.py --seed-table [--max-rows 200000000]

``--seed-table`` repeats the measurement table of the deletion-vectors design (seed 004): for a data
file of N rows (2M, 20M, 200M) with 20/50/80% of its rows deleted at random, the time to add the
positions, serialize, deserialize, the serialized size, and the time to test every row of the file;
for 32-bit and 64-bit vectors, printed beside the seed's figures (Java RoaringBitmap, added one by
one), which are read from ../shared/seeds/004_*.txt when that file is present.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from paimon_index.deletionvectors.vector import (
    Bitmap64DeletionVector,
    BitmapDeletionVector,
    DeletionVector,
    deserialize_deletion_vector,
)

SEED = 20240601
SEED_DOC = sorted((Path(__file__).resolve().parents[1].parent / "shared" / "seeds").glob("004_*.txt"))
SEED_SIZES = (2_000_000, 20_000_000, 200_000_000)
SEED_DENSITIES = (0.2, 0.5, 0.8)
SEED_COLUMNS = ("add_ms", "serialize_ms", "deserialize_ms", "size_mb", "contains_ms")
RANDOM_32_RANGE = 2**31 - 1
RANDOM_64_RANGE = 2**36
DENSE_64_START = 2**32


def distinct_random(rng: np.random.Generator, count: int, upper: int) -> np.ndarray:
    """``count`` distinct int64 values from ``[0, upper)``, in random order."""
    values = np.unique(rng.integers(0, upper, size=count + count // 8, dtype=np.int64))
    while values.size < count:
        values = np.unique(np.concatenate([values, rng.integers(0, upper, size=count, dtype=np.int64)]))
    return rng.permutation(values)[:count]


def datasets(rows: int) -> list[tuple[str, type[DeletionVector], np.ndarray, np.ndarray]]:
    """(name, vector class, positions, positions of the vector merged in)."""
    rng = np.random.default_rng(SEED)
    random32 = distinct_random(rng, 2 * rows, RANDOM_32_RANGE)
    random64 = distinct_random(rng, 2 * rows, RANDOM_64_RANGE)
    dense32 = np.arange(rows, dtype=np.int64)
    dense64 = np.arange(DENSE_64_START - rows // 2, DENSE_64_START + rows - rows // 2, dtype=np.int64)
    return [
        ("32-bit random", BitmapDeletionVector, random32[:rows], random32[rows:]),
        ("32-bit dense", BitmapDeletionVector, dense32, dense32 + rows // 2),
        ("64-bit random", Bitmap64DeletionVector, random64[:rows], random64[rows:]),
        ("64-bit dense", Bitmap64DeletionVector, dense64, dense64 + rows // 2),
    ]


def median_seconds(action: Callable[..., object], runs: int,
                   setup: Callable[[], object] | None = None) -> float:
    """Median wall time of ``action`` (``setup``'s result is passed in when given), after a warm-up."""
    times = []
    for i in range(runs + 1):
        arg = setup() if setup else None
        start = time.perf_counter()
        action(arg) if setup else action()  # type: ignore[call-arg]
        elapsed = time.perf_counter() - start
        if i:
            times.append(elapsed)
    return statistics.median(times)


def measure(cls: type[DeletionVector], positions: np.ndarray, other_positions: np.ndarray,
            runs: int) -> dict[str, float]:
    vector = cls(positions)
    other = cls(other_positions)
    framed = vector.serialize()
    assert deserialize_deletion_vector(framed) == vector
    return {
        "build": median_seconds(lambda: cls(positions), runs),
        "serialize": median_seconds(vector.serialize, runs),
        "deserialize": median_seconds(lambda: deserialize_deletion_vector(framed), runs),
        "merge": median_seconds(lambda copy: copy.merge(other), runs, setup=vector.copy),
        "iterate": median_seconds(vector.positions, runs),
        "bytes": float(len(framed)),
    }


def seed_figures() -> dict[tuple[int, int], list[float]]:
    """The seed's table: (percent, rows) -> add, serialize, deserialize ms, size MB, contains ms."""
    if not SEED_DOC:
        return {}
    lines = [line.strip() for line in SEED_DOC[0].read_text().splitlines() if line.strip()]
    out = {}
    for i, line in enumerate(lines):
        m = re.fullmatch(r"(\d+)% /([\d,]+)", line)
        if m and i + 5 < len(lines):
            out[(int(m[1]), int(m[2].replace(",", "")))] = [float(v) for v in lines[i + 1 : i + 6]]
    return out


def once_ms(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def seed_table(max_rows: int) -> None:
    seed = seed_figures()
    rng = np.random.default_rng(SEED)
    header = (f"{'deleted / rows':<18}{'kind':>7}" + "".join(f"{c:>16}" for c in SEED_COLUMNS)
              + "   seed (Java): add / ser / deser ms, MB, contains ms")
    print(header)
    print("-" * len(header))
    for rows in (n for n in SEED_SIZES if n <= max_rows):
        all_rows = np.arange(rows, dtype=np.int64)
        for density in SEED_DENSITIES:
            positions = np.flatnonzero(rng.random(rows) < density)
            for cls, kind in ((BitmapDeletionVector, "32-bit"), (Bitmap64DeletionVector, "64-bit")):
                vector = cls()
                add = once_ms(lambda v=vector, p=positions: v.delete_many(p))
                framed = vector.serialize()
                ser = once_ms(vector.serialize)
                deser = once_ms(lambda f=framed: deserialize_deletion_vector(f))
                contains = once_ms(lambda v=vector, q=all_rows: v.is_deleted_many(q))
                java = seed.get((round(density * 100), rows))
                java_text = " / ".join(f"{v:g}" for v in java) if java else "n/a"
                print(f"{f'{density:.0%} / {rows:,}':<18}{kind:>7}{add:>16.1f}{ser:>16.1f}{deser:>16.1f}"
                      f"{len(framed) / 1e6:>16.2f}{contains:>16.1f}   {java_text}", flush=True)
                del vector, framed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seed-table", action="store_true", help="repeat seed 004's measurements")
    parser.add_argument("--max-rows", type=int, default=SEED_SIZES[-1])
    args = parser.parse_args()
    if args.seed_table:
        seed_table(args.max_rows)
        return

    operations = ["build", "serialize", "deserialize", "merge", "iterate"]
    header = f"{'dataset':<15}{'bytes':>11}" + "".join(f"{op + ' rows/s':>20}" for op in operations)
    print(f"{args.rows:,} positions per vector, median of {args.runs} runs")
    print(header)
    print("-" * len(header))
    for name, cls, positions, other in datasets(args.rows):
        result = measure(cls, positions, other, args.runs)
        rates = "".join(f"{args.rows / result[op]:>20,.0f}" for op in operations)
        print(f"{name:<15}{int(result['bytes']):>11,}{rates}")


if __name__ == "__main__":
    main()
