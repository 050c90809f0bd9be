"""The main job: build and use Paimon file indexes on a local warehouse of generated data.

    paimon-index demo [--warehouse DIR] [--rows N]

Steps, each printed:

1. generate an ``orders`` table (id BIGINT, status STRING, region STRING, score INT,
   ts TIMESTAMP(3)) and write it as several Parquet data files under ``DIR/demo.db/orders/``;
2. for every data file, build the file-index container the table options ask for (Bloom filter on
   ``id``, bitmap on ``status`` and ``region``, range bitmap on ``score``); a container of up to
   ``file-index.in-manifest-threshold`` bytes would be embedded in the manifest, a larger one is
   written beside the data file as ``<data-file>.index`` (as Paimon does);
3. run queries: each file's indexes answer SKIP / row bitmap / REMAIN, only the selected rows are
   read, and the exact predicate is applied to them; the result is checked against a full scan;
4. TopN: each file's range bitmap names its candidate rows for ``ORDER BY score DESC LIMIT 5``;
   only those are read, merged and sorted, and checked against sorting the whole table.

The PySpark pipeline over real Paimon tables (pypaimon catalog, snapshots and commits) replaces the
hand-made folder in a later step; the index bytes are already Paimon's.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.fileindex.base import TopN
from paimon_index.fileindex.builder import build_file_index
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader
from paimon_index.fileindex.options import FileIndexOptions
from paimon_index.fileindex.result import Rows
from paimon_index.sql import bind_predicate, parse_order_by
from paimon_index.types import from_arrow

__all__ = ["run_demo"]

DATA_FILES = 8
ROW_GROUP_ROWS = 16_384
STATUSES = np.array(["PENDING", "PAID", "SHIPPED", "DELIVERED", "RETURNED", "CANCELLED"])
REGIONS = np.array(["US", "EU", "APAC", "LATAM", "MEA"])
TABLE_OPTIONS = {
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


@dataclass
class DataFile:
    path: Path
    rows: int
    index_bytes: bytes | None
    index_path: Path | None


def generate(rows: int, seed: int = 20261122) -> pa.Table:
    rng = np.random.default_rng(seed)
    # Files are written in id order, so each holds a contiguous id range (as after a sort/compaction);
    # status skews by file so that bitmap answers differ between files.
    ids = np.arange(rows, dtype=np.int64) * 3 + 1
    file_of_row = np.arange(rows) * DATA_FILES // max(rows, 1)
    weights = np.linspace(1, 3, len(STATUSES))
    status_idx = (rng.choice(len(STATUSES), rows, p=weights / weights.sum()) + file_of_row) % len(STATUSES)
    status_idx[(file_of_row % 3 == 0) & (status_idx == 4)] = 0  # some files hold no RETURNED rows
    millis = rng.integers(0, 86_400_000 * 300, rows).astype("timedelta64[ms]")
    ts = np.datetime64("2026-01-01T00:00:00") + millis
    return pa.table({
        "id": pa.array(ids),
        "status": pa.array(STATUSES[status_idx]),
        "region": pa.array(REGIONS[rng.integers(0, len(REGIONS), rows)]),
        "score": pa.array(rng.integers(0, 101, rows).astype(np.int32)),
        "ts": pa.array(ts.astype("datetime64[ms]")),
    })


def write_table(table: pa.Table, folder: Path, options: FileIndexOptions) -> list[DataFile]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    per_file = -(-table.num_rows // DATA_FILES)
    for i in range(DATA_FILES):
        part = table.slice(i * per_file, per_file)
        if part.num_rows == 0:
            continue
        path = folder / f"data-{i:05d}.parquet"
        pq.write_table(part, path, row_group_size=ROW_GROUP_ROWS)
        container = build_file_index(part, options)
        index_path = None
        if container is not None and len(container) > options.in_manifest_threshold:
            index_path = path.with_name(path.name + ".index")
            index_path.write_bytes(container)
        files.append(DataFile(path, part.num_rows, container, index_path))
    return files


def query(files: list[DataFile], text: str, schema: dict) -> tuple[pa.Table, int, int]:
    """Rows matching ``text`` read through the indexes; also files skipped and rows read."""
    predicate = bind_predicate(text, schema)
    exact = to_arrow_expression(predicate, schema)
    parts, skipped, rows_read = [], 0, 0
    for f in files:
        assert f.index_bytes is not None
        with ContainerReader(f.index_path or f.index_bytes, str(f.path)) as container:
            result = FileIndexEvaluator(container, schema).evaluate(predicate)
        if not result.remain:
            skipped += 1
            continue
        data = pq.read_table(f.path)
        if isinstance(result, Rows):
            positions = np.frombuffer(result.bitmap.to_array(), dtype=np.uint32)
            data = data.take(pa.array(positions))
        rows_read += data.num_rows
        parts.append(data.filter(exact))
    empty = pq.read_schema(files[0].path).empty_table()
    return (pa.concat_tables(parts) if parts else empty), skipped, rows_read


def topn(files: list[DataFile], schema: dict, order_by: str, limit: int) -> tuple[pa.Table, int]:
    """The first ``limit`` rows by ``order_by``, reading only each file's TopN candidates."""
    orders = parse_order_by(order_by)
    request = TopN(orders, limit, strict=len(orders) == 1)
    parts, rows_read = [], 0
    for f in files:
        assert f.index_bytes is not None
        with ContainerReader(f.index_path or f.index_bytes, str(f.path)) as container:
            result = FileIndexEvaluator(container, schema).evaluate_topn(request)
        data = pq.read_table(f.path)
        if isinstance(result, Rows):
            data = data.take(pa.array(np.frombuffer(result.bitmap.to_array(), dtype=np.uint32)))
        rows_read += data.num_rows
        parts.append(data)
    keys = [(o.column, "ascending" if o.ascending else "descending") for o in orders]
    return pa.concat_tables(parts).sort_by(keys).slice(0, limit), rows_read


def run_demo(warehouse: str | Path = "demo-warehouse", rows: int = 1_000_000) -> None:
    root = Path(warehouse)
    folder = root / "demo.db" / "orders"
    if folder.exists():
        shutil.rmtree(folder)
    options = FileIndexOptions.from_table_options(TABLE_OPTIONS)
    print(f"paimon-index demo: {rows:,} rows into {folder}")
    start = time.perf_counter()
    table = generate(rows)
    files = write_table(table, folder, options)
    took = time.perf_counter() - start
    print(f"wrote {len(files)} Parquet data files with their file indexes in {took:.2f}s")
    for f in files:
        where = f"{f.index_path.name}" if f.index_path else "embedded in the manifest"
        print(f"  {f.path.name}: {f.rows:>9,} rows, index {len(f.index_bytes or b''):>9,} bytes -> {where}")

    schema = {name: from_arrow(table.schema.field(name).type) for name in table.schema.names}
    print(f"\n{'query':<58} {'files skipped':>13} {'rows read':>10} {'matches':>8} {'ms':>7}  check")
    for text in QUERIES:
        start = time.perf_counter()
        got, skipped, rows_read = query(files, text, schema)
        ms = (time.perf_counter() - start) * 1000
        truth = table.filter(to_arrow_expression(bind_predicate(text, schema), schema))
        ok = sorted(got.column("id").to_pylist()) == sorted(truth.column("id").to_pylist())
        print(f"{text:<58} {skipped:>6} of {len(files):<4} {rows_read:>10,} {got.num_rows:>8,} {ms:>7.1f}  "
              f"{'same as full scan' if ok else 'MISMATCH'}")
        if not ok:
            raise SystemExit(f"demo query {text!r} disagrees with a full scan")
    start = time.perf_counter()
    best, rows_read = topn(files, schema, TOPN_ORDER, TOPN_LIMIT)
    ms = (time.perf_counter() - start) * 1000
    keys = [(o.column, "ascending" if o.ascending else "descending") for o in parse_order_by(TOPN_ORDER)]
    truth = table.sort_by(keys).slice(0, TOPN_LIMIT)
    ok = best.column("id").to_pylist() == truth.column("id").to_pylist()
    print(f"{f'ORDER BY {TOPN_ORDER} LIMIT {TOPN_LIMIT}':<58} {'':>13} {rows_read:>10,} {best.num_rows:>8,} "
          f"{ms:>7.1f}  {'same as full sort' if ok else 'MISMATCH'}")
    if not ok:
        raise SystemExit("demo TopN disagrees with a full sort")
    print(f"\nfull scan reads {table.num_rows:,} rows for every query; inspect a container with:\n"
          f"  paimon-index file-index inspect {files[0].index_path or '<embedded>'} "
          f"--schema \"id BIGINT, status STRING, region STRING, score INT\"")
