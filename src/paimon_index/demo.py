"""The main job: a Paimon table with file indexes on a local warehouse, written and queried.

    paimon-index demo [--warehouse DIR] [--rows N] [--no-spark]

Steps, each printed:

1. create a Paimon table ``demo.orders`` (id BIGINT, status STRING, region STRING, score INT,
   ts TIMESTAMP(3)) through pypaimon, with file-index options: Bloom filter on ``id``, bitmap on
   ``status`` and ``region``, range bitmap on ``score``;
2. append generated rows in several writes (one data file each); every data file gets its index
   container, embedded in the manifest when small, else ``<data-file>.index`` (the listing shows
   which, like Paimon's ``$file_indexes``);
3. run queries through the index-aware reader: files skipped, rows read, time — each result checked
   against the same read with indexes off;
4. TopN: each data file's range bitmap names its candidate rows for ``ORDER BY score DESC, id
   LIMIT 5``; only those are read and merged; checked against sorting the whole table;
5. the same queries through the ``paimon_index`` PySpark source on a local Spark session.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.fileindex.base import TopN
from paimon_index.predicate import ALWAYS_TRUE
from paimon_index.sql import parse_order_by
from paimon_index.table.read import read_arrow
from paimon_index.table.system import file_indexes
from paimon_index.table.write import write_arrow

__all__ = ["run_demo"]

DATA_FILES = 8
STATUSES = np.array(["PENDING", "PAID", "SHIPPED", "DELIVERED", "RETURNED", "CANCELLED"])
REGIONS = np.array(["US", "EU", "APAC", "LATAM", "MEA"])
TABLE = "demo.orders"
TABLE_OPTIONS = {
    "bucket": "-1",
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": "200000",
    "file-index.bloom-filter.id.fpp": "0.01",
    "file-index.bitmap.columns": "status,region",
    "file-index.range-bitmap.columns": "score",
    "file-index.in-manifest-threshold": "500b",
}
QUERIES = [
    "id = 300001",
    "id IN (16, 1000000, 2999998, 5)",
    "status = 'RETURNED' AND region = 'MEA'",
    "status IN ('CANCELLED', 'RETURNED') OR region = 'LATAM'",
    "region <> 'US' AND status = 'PENDING' AND score >= 90",
    "score BETWEEN 40 AND 41 AND status IN ('PAID', 'SHIPPED')",
    "status = 'LOST'",
]
TOPN_ORDER = "score DESC, id"
TOPN_LIMIT = 5


def generate(rows: int, seed: int = 20261122) -> pa.Table:
    rng = np.random.default_rng(seed)
    # Rows are written in id order, so each data file holds a contiguous id range (as after a
    # sort or compaction); status skews by file so that bitmap answers differ between files.
    ids = np.arange(rows, dtype=np.int64) * 3 + 1
    file_of_row = np.arange(rows) * DATA_FILES // max(rows, 1)
    weights = np.linspace(1, 3, len(STATUSES))
    status_idx = (rng.choice(len(STATUSES), rows, p=weights / weights.sum()) + file_of_row) % len(STATUSES)
    status_idx[(file_of_row % 3 == 0) & (status_idx == 4)] = 0  # some files hold no RETURNED rows
    millis = rng.integers(0, 86_400_000 * 300, rows).astype("timedelta64[ms]")
    return pa.table({
        "id": pa.array(ids),
        "status": pa.array(STATUSES[status_idx]),
        "region": pa.array(REGIONS[rng.integers(0, len(REGIONS), rows)]),
        "score": pa.array(rng.integers(0, 101, rows).astype(np.int32)),
        "ts": pa.array((np.datetime64("2026-01-01T00:00:00") + millis).astype("datetime64[ms]")),
    })


def create_table(warehouse: Path, schema: pa.Schema) -> Any:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(warehouse.resolve())})
    catalog.create_database(TABLE.split(".")[0], True)
    catalog.create_table(TABLE, Schema.from_pyarrow_schema(schema, options=TABLE_OPTIONS), False)
    return catalog.get_table(TABLE)


def topn(table: Any, order_by: str, limit: int) -> tuple[pa.Table, int]:
    """The first ``limit`` rows by ``order_by``, reading only each data file's TopN candidates."""
    orders = parse_order_by(order_by)
    candidates, report = read_arrow(table, ALWAYS_TRUE, topn=TopN(tuple(orders), limit, strict=False))
    keys = [(o.column, "ascending" if o.ascending else "descending") for o in orders]
    return candidates.sort_by(keys).slice(0, limit), report.rows_read


def _ids(rows: pa.Table) -> list[int]:
    return sorted(rows.column("id").to_pylist()) if rows.num_rows else []


def run_demo(warehouse: str | Path = "demo-warehouse", rows: int = 1_000_000, spark: bool = True) -> None:
    root = Path(warehouse)
    if (root / "demo.db").exists():
        shutil.rmtree(root / "demo.db")
    print(f"paimon-index demo: {rows:,} rows into the Paimon table {TABLE} at {root}")
    data = generate(rows)
    table = create_table(root, data.schema)
    start = time.perf_counter()
    per_write = -(-rows // DATA_FILES)
    for i in range(DATA_FILES):
        part = data.slice(i * per_write, per_write)
        if part.num_rows:
            write_arrow(table, part)
    print(f"wrote {DATA_FILES} snapshots (one data file each) with their file indexes "
          f"in {time.perf_counter() - start:.2f}s")
    listing = file_indexes(table)
    for storage in ("EMBEDDED", "FILE"):
        picked = listing.filter(pc.equal(listing.column("storage"), storage))
        if picked.num_rows:
            size = sum(picked.column("index_size").to_pylist())
            print(f"  {storage:<8} {picked.num_rows:>3} indexes, {size:>10,} bytes "
                  f"({', '.join(sorted(set(picked.column('index_type').to_pylist())))})")

    print(f"\n{'query':<58} {'files skipped':>13} {'rows read':>10} {'matches':>8} {'ms':>7}  check")
    for text in QUERIES:
        start = time.perf_counter()
        got, report = read_arrow(table, text)
        ms = (time.perf_counter() - start) * 1000
        plain, _ = read_arrow(table, text, use_index=False)
        ok = _ids(got) == _ids(plain)
        print(f"{text:<58} {report.files_skipped_by_index:>6} of {report.files_planned:<4} "
              f"{report.rows_read:>10,} {report.rows_returned:>8,} {ms:>7.1f}  "
              f"{'same as full scan' if ok else 'MISMATCH'}")
        if not ok:
            raise SystemExit(f"demo query {text!r} disagrees with a full scan")

    start = time.perf_counter()
    best, rows_read = topn(table, TOPN_ORDER, TOPN_LIMIT)
    ms = (time.perf_counter() - start) * 1000
    keys = [(o.column, "ascending" if o.ascending else "descending") for o in parse_order_by(TOPN_ORDER)]
    truth = data.sort_by(keys).slice(0, TOPN_LIMIT)
    ok = best.column("id").to_pylist() == truth.column("id").to_pylist()
    print(f"{f'ORDER BY {TOPN_ORDER} LIMIT {TOPN_LIMIT}':<58} {'':>13} {rows_read:>10,} {best.num_rows:>8,} "
          f"{ms:>7.1f}  {'same as full sort' if ok else 'MISMATCH'}")
    if not ok:
        raise SystemExit("demo TopN disagrees with a full sort")
    print(f"\na full scan reads {rows:,} rows for every query")
    if spark:
        _spark_queries(root)


def _spark_queries(root: Path) -> None:
    from paimon_index.spark.session import local_session

    print("\nthe same table through the paimon_index PySpark source (local Spark):")
    session = local_session("paimon-index-demo")
    df = session.read.format("paimon_index").option("warehouse", str(root.resolve())).load(TABLE)
    off = (session.read.format("paimon_index").option("warehouse", str(root.resolve()))
           .option("file-index.read.enabled", "false").load(TABLE))
    off.count()  # warm-up: starts the Python workers, so the timings below are the queries' own
    print(f"{'query':<58} {'rows':>8} {'ms index':>9} {'ms no index':>12}")
    for text in QUERIES[:3] + QUERIES[4:6]:
        start = time.perf_counter()
        count = df.filter(text).count()
        with_index = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        count_off = off.filter(text).count()
        without = (time.perf_counter() - start) * 1000
        if count != count_off:
            raise SystemExit(f"Spark query {text!r}: {count} rows with indexes, {count_off} without")
        print(f"{text:<58} {count:>8,} {with_index:>9.0f} {without:>12.0f}")
    session.stop()
