"""spark/jobs.py and stats pruning in Spark reads.

References: the same verbs through the Python API on a second table (results and rows), pypaimon's
own read of the Spark-written table, and ``spark.read.parquet`` over the same rows for a pruned read.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_index
from paimon_index.spark import jobs
from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
from paimon_index.spark.report import scan_report
from paimon_index.table.catalog import open_table as open_paimon

pytestmark = pytest.mark.spark

APPEND_SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("n", pa.int32())])
PK_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("tag", pa.string()), ("n", pa.int32())])
#: Rows of each append in the pruning test: disjoint id ranges, one data file each.
FILE_ROWS = 100


def _pypaimon_rows(warehouse: str, table: str) -> list[tuple]:
    """pypaimon's own read (deletion vectors applied), sorted."""
    paimon = open_paimon(warehouse, table)
    builder = paimon.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(*(rows[c].to_pylist() for c in rows.column_names), strict=True))


def _api_rows(table: paimon_index.Table) -> list[tuple]:
    rows = table.read()
    return sorted(zip(*(rows[c].to_pylist() for c in rows.column_names), strict=True))


def _same_commit(spark_result: paimon_index.CommitResult, api_result: paimon_index.CommitResult) -> None:
    assert isinstance(spark_result, paimon_index.CommitResult)
    assert (spark_result.operation, spark_result.snapshot_id, spark_result.rows_affected) == \
        (api_result.operation, api_result.snapshot_id, api_result.rows_affected)


def test_spark_read_skips_files_by_value_statistics(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    table = paimon_index.create_table(warehouse, "db.stats", APPEND_SCHEMA)  # no file index: stats only
    chunks = []
    for number in range(3):
        ids = pa.array(range(number * FILE_ROWS, (number + 1) * FILE_ROWS), pa.int64())
        chunk = pa.table({"id": ids, "tag": pa.array([f"t{i % 7}" for i in range(FILE_ROWS)]),
                          "n": pa.array([i % 5 for i in range(FILE_ROWS)], pa.int32())}, schema=APPEND_SCHEMA)
        table.write(chunk)
        chunks.append(chunk)
    where = "id >= 120 AND id < 135 AND n <> 3"
    reports = scan_report(spark)
    df = (spark.read.format("paimon_index").option("warehouse", warehouse)
          .option(SINGLE_SCAN_PUSHDOWN, "true").option("scan-report", reports.name).load("db.stats"))
    rows = sorted(tuple(r) for r in df.filter(where).collect())
    report = reports.value
    parquet = str(tmp_path / "reference.parquet")
    pq.write_table(pa.concat_tables(chunks), parquet)
    expected = sorted(tuple(r) for r in spark.read.parquet(parquet).filter(where).collect())
    assert rows == expected and len(rows) == 12
    assert report.files_skipped_by_stats == 2  # the two files whose id range misses [120, 135)
    assert report.files_planned == 1


def _append_df(spark, rows: list[tuple]):
    # One partition: the job writes one data file, as the Python API does, so file counts compare.
    return spark.createDataFrame(rows, "id BIGINT, tag STRING, n INT").repartition(1)


def test_job_verbs_on_an_append_table_equal_the_python_api(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    options = {"deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag"}
    api = paimon_index.create_table(warehouse, "db.api", APPEND_SCHEMA, options=options)
    paimon_index.create_table(warehouse, "db.spark", APPEND_SCHEMA, options=options)
    first = [(i, f"t{i % 4}", i % 9) for i in range(200)]
    second = [(i, "new", -i) for i in range(200, 260)]

    def check(spark_result, api_result) -> None:
        _same_commit(spark_result, api_result)
        assert _pypaimon_rows(warehouse, "db.spark") == _pypaimon_rows(warehouse, "db.api") == _api_rows(api)

    result = jobs.write(_append_df(spark, first), "db.spark", warehouse=warehouse)
    check(result, api.write(pa.Table.from_pylist(
        [dict(zip(APPEND_SCHEMA.names, r, strict=True)) for r in first], APPEND_SCHEMA)))
    assert (result.rows_affected, result.files_added, result.files_removed) == (200, 1, 0)

    result = jobs.delete(spark, "db.spark", "tag = 't1' AND id < 100", warehouse=warehouse)
    check(result, api.delete("tag = 't1' AND id < 100"))
    assert (result.rows_affected, result.files_added, result.files_removed) == (25, 0, 0)
    nothing = jobs.delete(spark, "db.spark", "id > 1000", warehouse=warehouse)
    assert nothing == paimon_index.CommitResult("delete", None) == api.delete("id > 1000")

    result = jobs.update(spark, "db.spark", {"n": "n * 10", "tag": "'upd'"}, "id >= 150", warehouse=warehouse)
    check(result, api.update({"n": "n * 10", "tag": "'upd'"}, "id >= 150"))
    assert result.rows_affected == 50 and result.files_added >= 1 and result.files_removed == 0
    result = jobs.update(spark, "db.spark", {"tag": None}, "id = 3", warehouse=warehouse)  # a constant
    check(result, api.update({"tag": None}, "id = 3"))

    second_table = pa.Table.from_pylist([dict(zip(APPEND_SCHEMA.names, r, strict=True)) for r in second],
                                        APPEND_SCHEMA)
    result = jobs.write(_append_df(spark, second), "db.spark", mode="overwrite", warehouse=warehouse)
    check(result, api.write(second_table, mode="overwrite"))
    assert result.rows_affected == 60 and result.files_added == 1 and result.files_removed >= 2

    for name in ("db.spark", "db.api"):
        paimon_index.open_table(warehouse, name).alter_options(set={"file-index.bloom-filter.columns": "id"})
    api = paimon_index.open_table(warehouse, "db.api")
    result = jobs.rewrite_file_index(spark, "db.spark", warehouse=warehouse)
    check(result, api.rewrite_file_index())
    assert result.snapshot_id is not None and result.files_added == result.files_removed == 1

    expired = jobs.expire_snapshots(spark, "db.spark", retain_last=2, warehouse=warehouse)
    assert isinstance(expired, paimon_index.MaintenanceResult)
    api_expired = api.expire_snapshots(retain_last=2)
    assert expired.expired_snapshots == api_expired.expired_snapshots and len(expired.expired_snapshots) >= 4
    # Each table has its own file names; kinds and counts (data, index, manifests) are the same.
    assert 0 < len(expired.deleted_files) == len(api_expired.deleted_files)

    past = time.time() - 3600
    for name in ("spark", "api"):  # one stray data file per table, older than the cut-off
        stray = tmp_path / "db.db" / name / "bucket-0" / "data-orphan.parquet"
        stray.write_bytes(b"not referenced")
        os.utime(stray, (past, past))
    orphans = jobs.remove_orphan_files(spark, "db.spark", older_than=time.time() - 60, warehouse=warehouse)
    assert [Path(f).name for f in orphans.deleted_files] == ["data-orphan.parquet"]
    assert [Path(f).name for f in api.remove_orphan_files(time.time() - 60).deleted_files] == \
        ["data-orphan.parquet"]
    assert _pypaimon_rows(warehouse, "db.spark") == _pypaimon_rows(warehouse, "db.api") == _api_rows(api)


def test_job_verbs_on_a_primary_key_table_equal_the_python_api(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    options = {"bucket": "2", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag"}
    api = paimon_index.create_table(warehouse, "db.api", PK_SCHEMA, primary_keys=["k"], options=options)
    paimon_index.create_table(warehouse, "db.spark", PK_SCHEMA, primary_keys=["k"], options=options)

    def check(spark_result, api_result) -> None:
        _same_commit(spark_result, api_result)
        assert _pypaimon_rows(warehouse, "db.spark") == _pypaimon_rows(warehouse, "db.api") == _api_rows(api)

    rows = [(k, f"t{k % 3}", k) for k in range(120)]
    df = spark.createDataFrame(rows, "k BIGINT, tag STRING, n INT")
    result = jobs.upsert(spark, df, "db.spark", warehouse=warehouse)
    check(result, api.upsert(pa.Table.from_pylist([dict(zip(PK_SCHEMA.names, r, strict=True)) for r in rows],
                                                  PK_SCHEMA)))
    assert result.rows_affected == 120 and result.files_added >= 1

    changed = [(k, "changed", -k) for k in range(100, 140)]
    result = jobs.write(spark.createDataFrame(changed, "k BIGINT, tag STRING, n INT"), "db.spark",
                        warehouse=warehouse)  # an append to a primary-key table upserts
    check(result, api.write(pa.Table.from_pylist(
        [dict(zip(PK_SCHEMA.names, r, strict=True)) for r in changed], PK_SCHEMA)))

    result = jobs.delete(spark, "db.spark", "tag = 't1' AND k < 60", warehouse=warehouse)
    check(result, api.delete("tag = 't1' AND k < 60"))
    assert result.rows_affected == 20

    result = jobs.update(spark, "db.spark", {"n": "n + 1000", "tag": "'upd'"}, "k >= 130",
                         warehouse=warehouse)
    check(result, api.update({"n": "n + 1000", "tag": "'upd'"}, "k >= 130"))
    assert result.rows_affected == 10
    with pytest.raises(paimon_index.InvalidOptionError, match="primary-key"):
        jobs.update(spark, "db.spark", {"k": "k + 1"}, "k = 1", warehouse=warehouse)

    result = jobs.compact(spark, "db.spark", full=True, warehouse=warehouse)
    check(result, api.compact(full=True))
    assert result.operation == "compact" and result.snapshot_id is not None and result.files_removed >= 1
