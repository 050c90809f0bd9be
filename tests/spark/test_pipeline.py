"""The pipeline a user runs: create and alter a table, write with Spark, read through the indexes.

Every answer is compared with the same query with indexes off and with pypaimon's own read; the
scan report (gathered from the driver and the executors) proves which files the indexes skipped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from paimon_index.errors import InvalidOptionError
from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
from paimon_index.spark.report import scan_report
from paimon_index.table.catalog import alter_table_options, create_table, open_table
from paimon_index.table.system import file_indexes

pytestmark = pytest.mark.spark

FILES_PER_STORAGE = 4
ROWS_PER_FILE = 2_000
DDL = "id BIGINT, tag STRING, score INT, region STRING"


def _batch(spark, first: int, rare: bool):
    rng = np.random.default_rng(first)
    ids = np.arange(first, first + ROWS_PER_FILE)
    tags = np.where(ids % 500 == 0, "rare", "common") if rare else np.full(ROWS_PER_FILE, "common")
    rows = list(zip(ids.tolist(), tags.tolist(), rng.integers(0, 10_000, ROWS_PER_FILE).tolist(),
                    np.array(["eu", "us", "ap"])[ids % 3].tolist(), strict=True))
    return spark.createDataFrame(rows, DDL).coalesce(1)  # one task: one data file per write


@pytest.fixture(scope="module")
def pipeline(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Eight single-file appends: four with embedded indexes, then (after ALTER) four with .index files."""
    warehouse = str(tmp_path_factory.mktemp("pipeline"))
    create_table(warehouse, "db.events", DDL, options={
        "bucket": "-1", "file-index.bitmap.columns": "tag", "file-index.bloom-filter.columns": "id",
        "file-index.range-bitmap.columns": "score", "file-index.in-manifest-threshold": "1 mb"})
    for i in range(2 * FILES_PER_STORAGE):
        if i == FILES_PER_STORAGE:
            alter_table_options(warehouse, "db.events",
                                set_options={"file-index.in-manifest-threshold": "1b"})
        rare = i in (1, FILES_PER_STORAGE + 2)  # one file of each storage holds the rare tag
        (_batch(spark, i * ROWS_PER_FILE, rare).write.format("paimon_index").option("warehouse", warehouse)
         .mode("append").save("db.events"))
    return warehouse, "db.events"


def _read(spark, warehouse: str, table: str, **options: str):
    # Each DataFrame here is scanned once, by one query: forced pushdown is exact (docs/semantics.md).
    reader = (spark.read.format("paimon_index").option("warehouse", warehouse)
              .option(SINGLE_SCAN_PUSHDOWN, "true"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(table)


def _pypaimon_read(table) -> pa.Table:
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def _exact(where: str, pipeline):
    from paimon_index.arrow_filter import to_arrow_expression
    from paimon_index.sql import bind_predicate
    from paimon_index.table.schemas import read_schema

    schema = read_schema(open_table(*pipeline))
    return to_arrow_expression(bind_predicate(where, schema), schema)


def test_create_and_alter_validate_index_options(tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    with pytest.raises(InvalidOptionError, match="fpp"):
        create_table(warehouse, "db.t", pa.schema([("id", pa.int64())]),
                     options={"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "2"})
    create_table(warehouse, "db.t", pa.schema([("id", pa.int64())]),
                 options={"bucket": "2", "bucket-key": "id"})
    table = alter_table_options(warehouse, "db.t", set_options={"file-index.bitmap.columns": "id"})
    assert table.options.options.to_map()["file-index.bitmap.columns"] == "id"
    table = alter_table_options(warehouse, "db.t", remove=["file-index.bitmap.columns"])
    assert "file-index.bitmap.columns" not in table.options.options.to_map()


def test_both_storages_are_written_and_listed(pipeline) -> None:
    listing = file_indexes(open_table(*pipeline))
    files = {s: set(listing.filter(pa.compute.equal(listing["storage"], s))["file_path"].to_pylist())
             for s in ("EMBEDDED", "FILE")}
    by_storage = {s: len(paths) for s, paths in files.items()}
    assert by_storage == {"EMBEDDED": FILES_PER_STORAGE, "FILE": FILES_PER_STORAGE}


@pytest.mark.parametrize("where", ["tag = 'rare'", "tag = 'rare' AND region = 'us'", "id IN (5, 12001)",
                                   "score >= 9990", "tag IS NULL", "tag <> 'common'"])
def test_selective_queries_read_only_the_files_that_match(spark, pipeline, where: str) -> None:
    warehouse, table = pipeline
    reports = scan_report(spark)
    got = sorted(r.id for r in _read(spark, warehouse, table, **{"scan-report": reports.name})
                 .filter(where).select("id").collect())
    report = reports.value
    plain = sorted(r.id for r in _read(spark, warehouse, table, **{"file-index.read.enabled": "false"})
                   .filter(where).select("id").collect())
    pypaimon_ids = sorted(_pypaimon_read(open_table(*pipeline)).filter(_exact(where, pipeline))["id"]
                          .to_pylist())
    assert got == plain == pypaimon_ids
    files = 2 * FILES_PER_STORAGE
    # Value statistics rule files out while planning, before any index (not counted as planned).
    stats = report.files_skipped_by_stats
    assert report.files_planned + stats == files
    if where.startswith("tag = 'rare'") or where.startswith("tag IS NULL") or where.startswith("tag <>"):
        matching_files = 0 if "NULL" in where else 2
        assert report.files_skipped_by_index + stats == files - matching_files
        assert report.files_skipped_on_driver + stats >= FILES_PER_STORAGE - (0 if "NULL" in where else 1)
        assert report.rows_read == report.rows_selected_by_index == (0 if "NULL" in where else 8)
    if where.startswith("id IN"):  # bloom filters keep only the files that may hold 5 or 12001
        assert report.files_skipped_by_index + stats >= files - 4
    assert report.rows_returned == len(got)


def test_topn_option_yields_only_candidates_and_equals_the_full_sort(spark, pipeline) -> None:
    warehouse, table = pipeline
    order = ["score", "id"]
    for where in (None, "region = 'eu'"):
        reports = scan_report(spark)
        df = _read(spark, warehouse, table, topn="score DESC, id ASC", limit="7",
                   **{"scan-report": reports.name})
        df = df if where is None else df.filter(where)
        got = [(r.score, r.id) for r in df.orderBy(df.score.desc(), df.id.asc()).limit(7).collect()]
        report = reports.value
        full = _read(spark, warehouse, table)
        full = full if where is None else full.filter(where)
        want = [(r.score, r.id) for r in full.orderBy(full.score.desc(), full.id.asc()).limit(7).collect()]
        assert got == want and len(got) == 7, order
        assert report.rows_read < 2 * FILES_PER_STORAGE * 20  # each file offers a handful of candidates
    with pytest.raises(Exception, match="positive integer"):
        _read(spark, warehouse, table, topn="score DESC", limit="0").collect()


def test_overwrite_replaces_the_table_in_one_snapshot(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    table = create_table(warehouse, "db.o", "id BIGINT, dt STRING", partition_keys=["dt"],
                         options={"bucket": "-1", "file-index.bitmap.columns": "id"})
    df = spark.createDataFrame([(i, "a" if i % 2 else "b") for i in range(100)], "id bigint, dt string")
    df.write.format("paimon_index").option("warehouse", warehouse).mode("append").save("db.o")
    new = spark.createDataFrame([(1000, "a"), (1001, "a")], "id bigint, dt string")
    new.write.format("paimon_index").option("warehouse", warehouse).mode("overwrite").save("db.o")
    back = _read(spark, warehouse, "db.o")
    # Paimon's default dynamic-partition-overwrite: only partition a is replaced.
    assert sorted(r.id for r in back.filter("dt = 'a'").collect()) == [1000, 1001]
    assert back.filter("dt = 'b'").count() == 50
    assert back.filter("id = 1001").count() == 1  # the new files carry indexes too
    assert table.snapshot_manager().get_latest_snapshot().id == 2
    alter_table_options(warehouse, "db.o", set_options={"dynamic-partition-overwrite": "false"})
    new.write.format("paimon_index").option("warehouse", warehouse).mode("overwrite").save("db.o")
    assert sorted(r.id for r in _read(spark, warehouse, "db.o").collect()) == [1000, 1001]
