"""Spark's Parquet reader over the same rows in three Parquet layouts: which columns are
dictionary-encoded, and how large a dictionary page may grow.

    python benchmarks/parquet_layout.py [--rows 4000000] [--files 4] [--rounds 5] [--data DIR]

Rows: the maintenance benchmark's generator (``maintenance.generate``: ``id`` unique, ``status`` 8
values, ``amount`` ~10,000 doubles, ``customer`` 100,000 ints, ``note`` ~10,000 strings), sorted by
``id`` as a primary-key file is, cut into ``--files`` files. Every layout has the same row groups (4
MiB of Arrow bytes, our default block size) and zstd level 1 (pypaimon's); they differ in:

    arrow        pyarrow's defaults: every column dictionary-encoded, dictionary pages up to 1 MiB
    capped       every column dictionary-encoded, dictionary pages up to 64 KiB (our writer until
                 this benchmark)
    ours         ``paimon_index.table.parquet_layout``: a dictionary only where Java's writer keeps
                 one (its first-page check), pages up to 1 MiB (Java's default)

Queries, each ``spark.read.parquet(files)`` in one ``local[2]`` session:

    select *    SELECT * WHERE status = 'HELD' (0.1% of the rows, spread over every row group)
    aggregate   SELECT status, count(*), sum(amount as DECIMAL), max(note) GROUP BY status (every row
                decoded)

Rounds interleave the layouts (drift hits every layout alike); the table shows medians and each
layout's ratio to ``capped``. Results must be equal across layouts (the run fails otherwise).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from maintenance import DEFAULT_DATA, generate
from paimon_index.table.catalog import DEFAULT_DICTIONARY_PAGE_BYTES, DEFAULT_ROW_GROUP_BYTES
from paimon_index.table.parquet_layout import LayoutParquetIO, rows_per_row_group

LAYOUT_VERSION = 1
CAPPED_DICTIONARY_BYTES = 64 << 10
QUERIES = {
    "select *": "SELECT * FROM t WHERE status = 'HELD'",
    # amount summed as DECIMAL: exact, so the layouts' answers compare equal whatever the order
    "aggregate": "SELECT status, count(*), sum(CAST(amount AS DECIMAL(12, 2))), max(note) FROM t "
                 "GROUP BY status",
}


class _LocalParquetIO:
    """The file IO our writers wrap, as pypaimon's local one calls pyarrow (zstd at ``zstd_level``)."""

    def write_parquet(self, path: str, data: pa.Table, compression: str = "zstd", zstd_level: int = 1,
                      **kwargs: Any) -> None:
        pq.write_table(data, path, compression=compression, compression_level=zstd_level, **kwargs)


def write_layout(layout: str, data: pa.Table, path: Path) -> None:
    """``data`` as one Parquet file of ``layout``; ``ours`` through the writers' own file IO wrapper."""
    if layout == "ours":
        io = LayoutParquetIO(_LocalParquetIO(), DEFAULT_ROW_GROUP_BYTES, DEFAULT_DICTIONARY_PAGE_BYTES)
        io.write_parquet(str(path), data)
        return
    arguments: dict[str, Any] = {"row_group_size": rows_per_row_group(data, DEFAULT_ROW_GROUP_BYTES),
                                 "compression": "zstd", "compression_level": 1}
    if layout == "capped":
        arguments["dictionary_pagesize_limit"] = CAPPED_DICTIONARY_BYTES
    pq.write_table(data, path, **arguments)


def build(data_dir: Path, rows: int, files: int) -> dict[str, list[str]]:
    root = data_dir / f"parquet-layout-r{rows}-f{files}-v{LAYOUT_VERSION}"
    layouts = ("arrow", "capped", "ours")
    marker = root / "complete"
    if not marker.exists():
        base, _ = generate(rows)
        per_file = -(-rows // files)
        for layout in layouts:
            (root / layout).mkdir(parents=True, exist_ok=True)
            for i, first in enumerate(range(0, rows, per_file)):
                write_layout(layout, base.slice(first, per_file), root / layout / f"part-{i}.parquet")
        marker.write_text("")
    return {layout: sorted(str(p) for p in (root / layout).glob("*.parquet")) for layout in layouts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)

    from paimon_index.spark.session import local_session

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min) at start")
    built = build(args.data, args.rows, args.files)
    spark = local_session()
    frames = {layout: spark.read.parquet(*files) for layout, files in built.items()}
    times: dict[tuple[str, str], list[float]] = {}
    answers: dict[tuple[str, str], list[Any]] = {}
    for r in range(args.rounds + 1):  # round 0 warms every layout and query, untimed
        order = list(built)[r % 3:] + list(built)[:r % 3]
        for layout in order:
            frames[layout].createOrReplaceTempView("t")
            for label, sql in QUERIES.items():
                start = time.perf_counter()
                rows = spark.sql(sql).collect()
                if r:
                    times.setdefault((layout, label), []).append(time.perf_counter() - start)
                answers[(layout, label)] = sorted(tuple(row) for row in rows)
    wrong = [k for k in answers if answers[k] != answers[("capped", k[1])]]
    print(f"\n{args.rows:,} rows in {args.files} files, median of {args.rounds} interleaved rounds, "
          "local[2]\n")
    print(f"| layout | file bytes | {' | '.join(f'{q} s (x capped)' for q in QUERIES)} |")
    print("|---|---|" + "---|" * len(QUERIES))
    for layout, files in built.items():
        size = sum(os.path.getsize(f) for f in files)
        cells = []
        for label in QUERIES:
            mine = statistics.median(times[(layout, label)])
            ratio = mine / statistics.median(times[("capped", label)])
            cells.append(f"{mine:.3f} ({ratio:.2f}x)")
        print(f"| {layout} | {size:,} | {' | '.join(cells)} |")
    print(f"\nload average {os.getloadavg()[0]:.2f} (1 min) at the end")
    if wrong:
        print(f"DIFFERENT RESULTS: {wrong}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
