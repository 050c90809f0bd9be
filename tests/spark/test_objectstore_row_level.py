"""A Spark DELETE on an ``s3://`` table: the executors write the deletion-vector index file into the
bucket (before, each wrote it under its own working directory and the snapshot named a file the
bucket did not hold). References: the same DELETE through the Python API on a local table, and
pypaimon's own listing of the files the snapshot references."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import paimon_index
from objectstore.conftest import S3Warehouse, s3, s3_server  # noqa: F401 - the S3 fixtures
from objectstore.files import referenced_files
from paimon_index.spark import jobs

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string())])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "id"}


def rows(first: int, n: int) -> pa.Table:
    ids = list(range(first, first + n))
    return pa.table({"id": ids, "tag": [f"t{i % 5}" for i in ids]}, schema=SCHEMA)


def test_spark_delete_writes_deletion_vectors_into_the_bucket(spark, s3: S3Warehouse,  # noqa: F811
                                                              tmp_path: Path) -> None:
    remote = paimon_index.create_table(s3.warehouse, "db.t", SCHEMA, options=OPTIONS,
                                       catalog_options=s3.catalog_options)
    local = paimon_index.create_table(str(tmp_path / "wh"), "db.t", SCHEMA, options=OPTIONS)
    for t in (remote, local):
        t.write(rows(0, 50))
        t.write(rows(50, 50))
    result = jobs.delete(spark, "db.t", "tag = 't3' OR id < 4", warehouse=s3.warehouse,
                         catalog_options=s3.catalog_options)
    expected = local.delete("tag = 't3' OR id < 4")
    assert (result.snapshot_id, result.rows_affected) == (expected.snapshot_id, expected.rows_affected)
    assert result.rows_affected == 23
    reopened = paimon_index.open_table(s3.warehouse, "db.t", catalog_options=s3.catalog_options)
    assert sorted(reopened.read()["id"].to_pylist()) == sorted(local.read()["id"].to_pylist())
    keys = set(s3.objects())
    referenced = referenced_files(reopened.paimon_table, latest_only=True)
    dv_files = [p for p in referenced if "/index/index-" in p]
    assert dv_files, "the DELETE committed no deletion-vector index file"
    missing = [p for p in referenced if p[len(f"s3://{s3.bucket}/"):] not in keys]
    assert not missing, f"the snapshot names files the bucket does not hold: {missing}"
    # The planned read (what paimon.sql reads through) on s3://, which no Hadoop file system of this
    # session serves: the paimon_index source reads it through pypaimon's file IO instead (before:
    # Py4JJavaError "No FileSystem for scheme s3" from spark.read.parquet).
    planned = jobs.read_planned(spark, "db.t", "id >= 40", warehouse=s3.warehouse,
                                catalog_options=s3.catalog_options)
    assert planned.fallback is not None and "s3://" in planned.fallback
    assert sorted(r.id for r in planned.dataframe.collect()) == \
        sorted(i for i in local.read()["id"].to_pylist() if i >= 40)
