"""The Spark pipeline on a real S3-compatible server equals the same pipeline on a local warehouse.

The server is moto in server mode on 127.0.0.1 (``tests/objectstore``): Spark's executors (local
mode's Python workers) and the driver talk HTTP to it through pypaimon's file IO, configured only
by the ``fs.s3.*`` catalog options every job and read passes on. Every step of
``cluster_pipeline.run_pipeline`` (write with indexes, filtered reads with scan reports, DELETE,
UPDATE, rewrite_file_index, a primary-key load and upsert) gives the same rows, reports, snapshot
ids and rows affected on ``s3://`` as on a local directory, and the table's files are in the bucket.

Marked ``slow``: two whole pipelines are some thirty Spark jobs (2 to 15 minutes measured on 2 cores,
with more or fewer other test runs); ``pytest --run-slow tests/spark/test_objectstore_spark.py``. CI keeps
the Python pipeline on S3 (``tests/objectstore``) and a Spark DELETE on S3
(``test_objectstore_row_level.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.spark.cluster_pipeline import APPEND, PK, run_pipeline

from objectstore.conftest import S3Warehouse, s3, s3_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_spark_pipeline_on_s3_equals_local(spark, s3: S3Warehouse, tmp_path: Path,  # noqa: F811
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a path mistaken for local would land here, and be seen below
    on_s3 = json.loads(json.dumps(run_pipeline(spark, s3.warehouse, s3.catalog_options)))
    local = json.loads(json.dumps(run_pipeline(spark, str(tmp_path / "local"))))
    assert on_s3 == local
    # One snapshot per append job; the primary-key upsert of older rows commits Java's APPEND and
    # COMPACT (docs/primary-key.md), after the load's one.
    assert on_s3["snapshots"] == [4, 3]
    for table in (APPEND, PK):
        database, name = table.split(".")
        keys = s3.objects(f"wh/{database}.db/{name}/")
        assert any(k.endswith(".parquet") for k in keys), keys[:10]
        assert any("/snapshot/snapshot-" in k for k in keys), keys[:10]
    assert not [p for p in tmp_path.rglob("*") if "s3" in p.name or p.name == "wh"]  # no local copy
