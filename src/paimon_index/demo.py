"""The main job: a Paimon table with file indexes and deletion vectors, written, queried and changed.

    paimon-index demo [--warehouse DIR] [--rows N] [--no-spark]

Every Python step goes through the public table API (``paimon_index.create_table`` -> ``Table``);
the Spark steps through the ``paimon_index`` source and the Spark jobs. Steps, each printed:

1. ``create_table`` of the Paimon table ``demo.orders`` (id BIGINT, status STRING, region STRING,
   score INT, ts TIMESTAMP(3)) with file-index options — Bloom filter on ``id``, bitmap on
   ``status`` and ``region``, range bitmap on ``score`` — and ``deletion-vectors.enabled``;
2. ``Table.write`` of generated rows in several writes (one data file each); every data file gets
   its index container, embedded in the manifest when small, else ``<data-file>.index``
   (``Table.file_indexes()`` shows which, like Paimon's ``$file_indexes``);
3. ``Table.read(where)`` for the queries of the file-index seeds (``=``, ``IN``, ``NOT IN``,
   ``IS NULL``, AND/OR, ranges): files skipped, rows read (``Table.last_scan_report``), time — each
   result checked against ``Table.read(where, use_index=False)``;
4. TopN: ``Table.read(order_by="score DESC, id", limit=5)`` reads only each data file's range-bitmap
   candidates; checked against sorting the whole generated data;
5. the same queries through the ``paimon_index`` PySpark source on a local Spark session (filter
   pushdown forced on, each DataFrame scanned once), with the scan report gathered from the
   executors, each count checked against the source with indexes off;
6. row-level changes through deletion vectors (DELETE, UPDATE), then ``Table.alter_options`` and
   ``rewrite_file_index``, with the listing before and after — as Spark jobs (or ``Table.delete``/
   ``update``/``rewrite_file_index`` with ``--no-spark``); every query is checked again afterwards;
7. a primary-key table ``demo.customers`` in deletion-vectors mode: a load, then an upsert with
   updates and deletes by key (each older row looked up and marked in a deletion vector), a
   merge-free read filtered on a non-key column, checked against a dict and pypaimon's own read;
8. maintenance: ``expire_snapshots(retain_last=...)`` and ``remove_orphan_files(older_than=now)``
   on both tables, printing what they removed; every query and the primary-key table are checked
   again afterwards (nothing the latest snapshot needs was removed).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import paimon_index
from paimon_index.table.api import Table

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
    "deletion-vectors.enabled": "true",
}
QUERIES = [
    "id = 300001",
    "id IN (16, 1000000, 2999998, 5)",
    "status = 'RETURNED' AND region = 'MEA'",
    "status IN ('CANCELLED', 'RETURNED') OR region = 'LATAM'",
    "region <> 'US' AND status = 'PENDING' AND score >= 90",
    "score BETWEEN 40 AND 41 AND status IN ('PAID', 'SHIPPED')",
    "status NOT IN ('PENDING', 'PAID', 'SHIPPED', 'DELIVERED')",
    "region IS NULL",
    "status = 'LOST'",
]
TOPN_ORDER = "score DESC, id"
#: The same order as Arrow sort keys, for the independent full sort (score and id are never NULL).
TOPN_SORT_KEYS = [("score", "descending"), ("id", "ascending")]
TOPN_LIMIT = 5
#: Snapshots each table keeps at the end: the latest one and the one before it (time travel).
RETAIN_SNAPSHOTS = 2


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
        # A few orders have no region (NULL), mostly in the last file: IS NULL skips the others.
        "region": pa.array(REGIONS[rng.integers(0, len(REGIONS), rows)],
                           mask=(file_of_row == DATA_FILES - 1) & (rng.random(rows) < 0.001)),
        "score": pa.array(rng.integers(0, 101, rows).astype(np.int32)),
        "ts": pa.array((np.datetime64("2026-01-01T00:00:00") + millis).astype("datetime64[ms]")),
    })


def create_demo_table(warehouse: Path, schema: pa.Schema) -> Table:
    return paimon_index.create_table(str(warehouse.resolve()), TABLE, schema, options=TABLE_OPTIONS)


def _ids(rows: pa.Table) -> list[int]:
    return sorted(rows.column("id").to_pylist()) if rows.num_rows else []


def _check_queries(table: Table, when: str) -> dict[str, list[int]]:
    """Every query with indexes equals the read without them; the matching ids per query."""
    found: dict[str, list[int]] = {}
    for text in QUERIES:
        found[text] = _ids(table.read(text))
        if found[text] != _ids(table.read(text, use_index=False)):
            raise SystemExit(f"{when}, {text!r} disagrees with a full scan")
    return found


def run_demo(warehouse: str | Path = "demo-warehouse", rows: int = 3_000_000, spark: bool = True) -> None:
    root = Path(warehouse)
    if (root / "demo.db").exists():
        shutil.rmtree(root / "demo.db")
    print(f"paimon-index demo: {rows:,} rows into the Paimon table {TABLE} at {root}")
    data = generate(rows)
    table = create_demo_table(root, data.schema)
    start = time.perf_counter()
    per_write = -(-rows // DATA_FILES)
    for i in range(DATA_FILES):
        part = data.slice(i * per_write, per_write)
        if part.num_rows:
            table.write(part)
    print(f"wrote {DATA_FILES} snapshots (one data file each) with their file indexes "
          f"in {time.perf_counter() - start:.2f}s")
    listing = table.file_indexes()
    for storage in ("EMBEDDED", "FILE"):
        picked = listing.filter(pc.equal(listing.column("storage"), storage))
        if picked.num_rows:
            size = sum(picked.column("index_size").to_pylist())
            print(f"  {storage:<8} {picked.num_rows:>3} indexes, {size:>10,} bytes "
                  f"({', '.join(sorted(set(picked.column('index_type').to_pylist())))})")

    print(f"\n{'query (Python reader)':<62} {'files skipped':>13} {'rows read':>10} {'matches':>8} "
          f"{'ms index':>9} {'ms no index':>12}  check")
    for text in QUERIES:
        start = time.perf_counter()
        got = table.read(text)
        ms = (time.perf_counter() - start) * 1000
        report = table.last_scan_report
        assert report is not None  # read() always leaves one
        start = time.perf_counter()
        plain = table.read(text, use_index=False)
        ms_plain = (time.perf_counter() - start) * 1000
        ok = _ids(got) == _ids(plain)
        skipped, files = report.files_skipped_by_index + report.files_skipped_by_stats, \
            report.files_planned + report.files_skipped_by_stats  # stats skip before the indexes
        print(f"{text:<62} {skipped:>6} of {files:<4} "
              f"{report.rows_read:>10,} {report.rows_returned:>8,} {ms:>9.1f} {ms_plain:>12.1f}  "
              f"{'same as full scan' if ok else 'MISMATCH'}")
        if not ok:
            raise SystemExit(f"demo query {text!r} disagrees with a full scan")

    start = time.perf_counter()
    best = table.read(order_by=TOPN_ORDER, limit=TOPN_LIMIT)
    ms = (time.perf_counter() - start) * 1000
    rows_read = table.last_scan_report.rows_read if table.last_scan_report else 0
    truth = data.sort_by(TOPN_SORT_KEYS).slice(0, TOPN_LIMIT)
    ok = best.column("id").to_pylist() == truth.column("id").to_pylist()
    print(f"{f'ORDER BY {TOPN_ORDER} LIMIT {TOPN_LIMIT}':<62} {'':>13} {rows_read:>10,} {best.num_rows:>8,} "
          f"{ms:>9.1f} {'':>12}  {'same as full sort' if ok else 'MISMATCH'}")
    if not ok:
        raise SystemExit("demo TopN disagrees with a full sort")
    print(f"\na full scan reads {rows:,} rows for every query")
    session = _spark_queries(root) if spark else None
    _row_level(root, session)
    customers = _primary_keys(root, session, max(rows // 10, 1_000))
    if session is not None:
        session.stop()
    _maintenance(root, customers)


def _spark_queries(root: Path) -> Any:
    from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
    from paimon_index.spark.report import scan_report
    from paimon_index.spark.session import local_session

    print("\nthe same table through the paimon_index PySpark source (local Spark):")
    session = local_session("paimon-index-demo")
    warehouse = str(root.resolve())

    def load(**options: str) -> Any:
        # A fresh DataFrame per query, scanned by exactly one count(): the one case where forced
        # pushdown is exact on every Spark, so the demo forces it with the project's private key to
        # show what the indexes skip. Users cannot (before 4.4 Spark shares one pushed-down plan
        # between all scans of a relation; see docs/semantics.md): they use jobs.read or SQL.
        reader = (session.read.format("paimon_index").option("warehouse", warehouse)
                  .option(SINGLE_SCAN_PUSHDOWN, "true"))
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load(TABLE)

    # Warm-up: starts the Python workers for planning (pushdown) and reading, so the timings below
    # are the queries' own.
    load(**{"file-index.read.enabled": "false"}).filter("id = -1").count()
    load().filter("id = -1").count()
    load().filter("id = -1 OR id = -2").count()  # and Spark's own Filter (ORs are not pushed)
    print(f"{'query (Spark)':<62} {'rows':>8} {'files skipped':>13} {'rows read':>10} "
          f"{'ms index':>9} {'ms no index':>12}")
    for text in QUERIES:
        reports = scan_report(session)
        start = time.perf_counter()
        count = load(**{"scan-report": reports.name}).filter(text).count()
        with_index = (time.perf_counter() - start) * 1000
        report = reports.value
        start = time.perf_counter()
        count_off = load(**{"file-index.read.enabled": "false"}).filter(text).count()
        without = (time.perf_counter() - start) * 1000
        if count != count_off:
            raise SystemExit(f"Spark query {text!r}: {count} rows with indexes, {count_off} without")
        skipped = f"{report.files_skipped_by_index} of {report.files_planned}"
        print(f"{text:<62} {count:>8,} {skipped:>13} {report.rows_read:>10,} {with_index:>9.0f} "
              f"{without:>12.0f}")
    return session


def _listing_summary(table: Table) -> str:
    listing = table.file_indexes()
    kinds: dict[tuple[str, str, str], int] = {}
    for row in listing.select(["column", "index_type", "storage"]).to_pylist():
        key = (row["column"], row["index_type"], row["storage"])
        kinds[key] = kinds.get(key, 0) + 1
    return ", ".join(f"{c}:{t} {s.lower()} x{n}" for (c, t, s), n in sorted(kinds.items()))


def _row_level(root: Path, session: Any) -> None:
    warehouse = str(root.resolve())
    where_deleted = "status = 'CANCELLED' AND region = 'MEA'"
    where_updated = "status = 'RETURNED' AND score >= 95"
    # A string in SET is SQL expression text, as in Spark's UPDATE: the constant is quoted.
    assignments = {"status": "'REFUNDED'"}
    table = paimon_index.open_table(warehouse, TABLE)
    before_delete = table.read(where_deleted).num_rows
    before_update = table.read(where_updated).num_rows
    how = "Spark jobs" if session is not None else "Table.delete/update"
    print(f"\nrow-level changes through deletion vectors ({how}):")
    start = time.perf_counter()
    if session is not None:
        from paimon_index.spark import jobs

        jobs.delete(session, TABLE, where_deleted, warehouse=warehouse)
        jobs.update(session, TABLE, assignments, where_updated, warehouse=warehouse)
    else:
        table.delete(where_deleted)
        table.update(assignments, where_updated)
    table = paimon_index.open_table(warehouse, TABLE)
    after_delete = table.read(where_deleted)
    report = table.last_scan_report
    assert report is not None
    refunded = table.read("status = 'REFUNDED'").num_rows
    print(f"  DELETE WHERE {where_deleted}: {before_delete:,} rows -> {after_delete.num_rows:,}; "
          f"UPDATE SET status = 'REFUNDED' WHERE {where_updated}: {before_update:,} rows -> "
          f"{refunded:,} REFUNDED ({time.perf_counter() - start:.1f}s)")
    if after_delete.num_rows or refunded != before_update:
        raise SystemExit("row-level changes did not apply")
    print(f"  a later query skips {report.files_skipped_by_index} of {report.files_planned} files "
          f"(indexes + deletion vectors), reading {report.rows_read:,} rows")

    print("\nindex options changed (bloom filter on region added, bitmap on region dropped), "
          "then rewrite_file_index:")
    print(f"  before: {_listing_summary(table)}")
    table.alter_options(set={"file-index.bitmap.columns": "status",
                             "file-index.bloom-filter.columns": "id,region"})
    start = time.perf_counter()
    if session is not None:
        from paimon_index.spark import jobs

        snapshot = jobs.rewrite_file_index(session, TABLE, warehouse=warehouse, progress=True).snapshot_id
    else:
        snapshot = table.rewrite_file_index().snapshot_id
    table = paimon_index.open_table(warehouse, TABLE)
    print(f"  after:  {_listing_summary(table)}  (snapshot {snapshot}, {time.perf_counter() - start:.1f}s)")
    _check_queries(table, "after the rewrite")
    print(f"  all {len(QUERIES)} queries still agree with a full scan")


PK_TABLE = "demo.customers"
PK_TIERS = np.array(["bronze", "silver", "gold", "platinum"])


def _customers(keys: np.ndarray, version: int) -> pa.Table:
    tiers = np.where(keys % 997 == 0, "platinum", PK_TIERS[(keys + version) % 3])
    return pa.table({"customer_id": pa.array(keys, pa.int64()), "tier": pa.array(tiers.astype(object)),
                     "version": pa.array(np.full(keys.size, version, dtype=np.int32))})


def _check_customers(table: Table, model: dict[int, str]) -> tuple[pa.Table, float]:
    """The merge-free read of every key equals the model and pypaimon's own (merging) read."""
    start = time.perf_counter()
    everything = table.read("customer_id >= 0")
    all_ms = (time.perf_counter() - start) * 1000
    # pypaimon's own read of the same table: an independent reader that merges rows by key.
    builder = table.paimon_table.new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    ours = dict(zip(everything["customer_id"].to_pylist(), everything["tier"].to_pylist(), strict=True))
    theirs_map = dict(zip(theirs["customer_id"].to_pylist(), theirs["tier"].to_pylist(), strict=True))
    if not (ours == model == theirs_map and everything.num_rows == len(model) == theirs.num_rows):
        raise SystemExit("the primary-key table disagrees with its model or with pypaimon's read")
    return everything, all_ms


def _primary_keys(root: Path, session: Any, rows: int) -> dict[int, str]:
    warehouse = str(root.resolve())
    schema = pa.schema([pa.field("customer_id", pa.int64(), nullable=False), ("tier", pa.string()),
                        ("version", pa.int32())])
    table = paimon_index.create_table(warehouse, PK_TABLE, schema, primary_keys=["customer_id"], options={
        "bucket": "4", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tier"})
    rng = np.random.default_rng(7)
    load = _customers(np.arange(rows, dtype=np.int64), 0)
    updated = np.sort(rng.choice(rows, rows // 10, replace=False)).astype(np.int64)
    deleted = np.setdiff1d(rng.choice(rows, rows // 100, replace=False), updated).astype(np.int64)
    change = pa.concat_tables([
        _customers(updated, 1).append_column("_ROW_KIND", pa.array(["+U"] * updated.size)),
        _customers(deleted, 1).append_column("_ROW_KIND", pa.array(["-D"] * deleted.size))])
    how = "Spark jobs" if session is not None else "Table.upsert"
    print(f"\nprimary-key table {PK_TABLE} in deletion-vectors mode ({how}):")
    start = time.perf_counter()
    if session is not None:
        from paimon_index.spark import jobs

        jobs.upsert(session, session.createDataFrame(load.to_pandas()), PK_TABLE, warehouse=warehouse)
        loaded = time.perf_counter()
        jobs.upsert(session, session.createDataFrame(change.to_pandas()), PK_TABLE, warehouse=warehouse)
    else:
        table.upsert(load)
        loaded = time.perf_counter()
        table.upsert(change)
    done = time.perf_counter()
    print(f"  load {rows:,} rows {loaded - start:.1f}s; upsert {updated.size:,} updates + {deleted.size:,} "
          f"deletes by key {done - loaded:.1f}s (older rows marked in deletion vectors, no merge later)")
    model = dict(zip(load["customer_id"].to_pylist(), load["tier"].to_pylist(), strict=True))
    model.update(zip(updated.tolist(), _customers(updated, 1)["tier"].to_pylist(), strict=True))
    for key in deleted.tolist():
        model.pop(key, None)
    table = paimon_index.open_table(warehouse, PK_TABLE)
    everything, all_ms = _check_customers(table, model)
    start = time.perf_counter()
    platinum = table.read("tier = 'platinum'")
    filter_ms = (time.perf_counter() - start) * 1000
    report = table.last_scan_report
    assert report is not None
    print(f"  merge-free read of {everything.num_rows:,} rows in {all_ms:.0f} ms "
          f"(same as the model and pypaimon); tier = 'platinum': "
          f"{platinum.num_rows:,} rows in {filter_ms:.0f} ms, {report.files_skipped_by_index} of "
          f"{report.files_planned} files skipped, {report.rows_read:,} rows read")
    if sorted(platinum["customer_id"].to_pylist()) != sorted(
            k for k, tier in model.items() if tier == "platinum"):
        raise SystemExit("the primary-key table disagrees with its model")
    return model


def _maintenance(root: Path, customers: dict[int, str]) -> None:
    warehouse = str(root.resolve())
    orders = paimon_index.open_table(warehouse, TABLE)
    before = _check_queries(orders, "before maintenance")
    print(f"\nmaintenance: expire_snapshots(retain_last={RETAIN_SNAPSHOTS}), then "
          "remove_orphan_files(older_than=now):")
    for identifier in (TABLE, PK_TABLE):
        table = paimon_index.open_table(warehouse, identifier)
        start = time.perf_counter()
        expired = table.expire_snapshots(retain_last=RETAIN_SNAPSHOTS)
        # Every write of this process has committed or failed: a file no snapshot lists is an orphan.
        orphans = table.remove_orphan_files(older_than=time.time())
        ids = expired.expired_snapshots
        span = f"{min(ids)}..{max(ids)}" if ids else "none"
        print(f"  {identifier}: expired snapshots {span} ({len(ids)}), deleted {len(expired.deleted_files)} "
              f"files no kept snapshot lists; {len(orphans.deleted_files)} orphan files removed "
              f"({time.perf_counter() - start:.1f}s)")
    orders = paimon_index.open_table(warehouse, TABLE)
    if _check_queries(orders, "after maintenance") != before:
        raise SystemExit("maintenance changed the rows of the latest snapshot")
    _check_customers(paimon_index.open_table(warehouse, PK_TABLE), customers)
    print(f"  the latest snapshots read the same: all {len(QUERIES)} queries and the primary-key table")
