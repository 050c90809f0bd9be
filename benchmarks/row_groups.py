"""Parquet row group size: full scans against selective reads, for a few ``file.block-size`` values.

The table of ``benchmarks/spark_read.py`` (its generator; default 2,000,000 rows in 5 files of
400,000 rows, the rows per file of the 20M / 50-file run), written once per block size. For each:

    bytes, row groups   the data files' size on disk and their row groups
    full scan           every column of every live data file read with pyarrow (what a full Spark scan
                        decodes); seconds
    <query>             ``Table.read(where)`` (our reader: indexes pick rows, only the row groups
                        holding them are read); seconds, row groups read, data bytes read (the scan
                        report: compressed column chunks of the row groups read)

Rounds are interleaved over the block sizes (drift hits every size alike); the table shows medians.
Spark's own Parquet reader is not in this table: it also skips pages inside a row group through the
page index pyarrow writes, so its selective reads depend less on the row group size (see
``spark_read.py``'s bytes column).

    python benchmarks/row_groups.py [--rows N] [--files F] [--rounds R] [--sizes 128mb,16mb,4mb,1mb]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_read import DEFAULT_DATA, TABLE, build, queries

QUERIES = ("point lookup", "clustered 0.05%", "count where bitmap", "range")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="128mb,16mb,4mb,1mb")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)

    import paimon_index

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min) at start")
    sizes = [s.strip() for s in args.sizes.split(",")]
    built = {size: build(args.data, args.rows, args.files, size) for size in sizes}
    tables = {size: paimon_index.open_table(b.warehouse, TABLE) for size, b in built.items()}
    qs = [q for q in queries(args.rows) if q.label in QUERIES]
    times: dict[tuple[str, str], list[float]] = {}
    last: dict[tuple[str, str], tuple[int, int, int]] = {}
    for r in range(args.rounds):
        order = sizes[r % len(sizes):] + sizes[:r % len(sizes)]
        for size in order:
            start = time.perf_counter()
            rows = sum(pq.ParquetFile(p).read().num_rows for p in built[size].files)
            times.setdefault((size, "full scan"), []).append(time.perf_counter() - start)
            last[(size, "full scan")] = (rows, built[size].row_groups, built[size].data_bytes)
            for q in qs:
                table = tables[size]
                start = time.perf_counter()
                result = table.read(q.where)
                times.setdefault((size, q.label), []).append(time.perf_counter() - start)
                report = table.last_scan_report
                last[(size, q.label)] = (result.num_rows, report.row_groups_read, report.data_bytes_read)
    labels = ["full scan", *(q.label for q in qs)]
    head = "".join(f"{label:>28}" for label in labels)
    print(f"\n{'block size':<12}{'bytes':>13}{'row groups':>12}  {head}")
    print(f"{'':<12}{'':>13}{'':>12}  " + "".join(f"{'s / groups read / bytes read':>28}" for _ in labels))
    for size in sizes:
        cells = []
        for label in labels:
            rows, groups, data = last[(size, label)]
            cells.append(f"{statistics.median(times[(size, label)]):>9.3f} {groups:>6,} {data:>11,}")
        line = "".join(f"{c:>28}" for c in cells)
        print(f"{size:<12}{built[size].data_bytes:>13,}{built[size].row_groups:>12,}  {line}")
    answers = {label: {last[(size, label)][0] for size in sizes} for label in labels}
    print(f"\n(median of {args.rounds} interleaved rounds; rows returned per query: "
          + ", ".join(f"{label} {next(iter(v)):,}" for label, v in answers.items()) + ")")
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    differ = [label for label, v in answers.items() if len(v) != 1]
    for label in differ:
        print(f"FAILED: {label} returns different rows for different block sizes")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
