"""A tiny run of benchmarks/spark_read.py (every query shape, every engine there is): it keeps working."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks import spark_read


@pytest.mark.slow
def test_every_query_shape_runs_and_equals_spark_read_parquet(spark, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    rows = 12_000
    built = spark_read.build(tmp_path, rows, 3)
    assert len(built.files) == 3
    failures = spark_read.measure(spark, built, spark_read.queries(rows), rounds=1)
    out = capsys.readouterr().out
    assert failures == [], out
    for q in spark_read.queries(rows):
        assert q.label in out
    assert "DIFFERS" not in out
