"""A Spark job reports the snapshot *it* committed, even when another writer commits right after it.

The job's commit runs in a Python worker of the source, not in the driver; the driver used to report
the table's latest snapshot after the write, which is another writer's when one landed in between."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrameWriter

import paimon_index
from paimon_index.spark import jobs

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
#: The writes that commit through the source (a dynamic-bucket upsert commits on the driver itself).
KINDS = {
    "pk-fixed": (["id"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "append": ([], {"bucket": "-1"}),
}


@pytest.fixture()
def another_writer_after_each_save(monkeypatch: pytest.MonkeyPatch):
    """Right after the source's save returns (our snapshot landed), another writer commits."""
    others: list[int] = []
    save = DataFrameWriter.save

    def save_then_another_commit(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        save(self, *args, **kwargs)
        table = paimon_index.open_table(others_warehouse[0], "db.t")
        result = table.write(pa.table({"id": [10_000 + len(others)], "v": ["other"]}, schema=SCHEMA))
        others.append(result.snapshot_id)

    others_warehouse: list[str] = []
    monkeypatch.setattr(DataFrameWriter, "save", save_then_another_commit)
    return others, others_warehouse


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_job_reports_its_own_snapshot(spark, tmp_path: Path, kind: str,
                                          another_writer_after_each_save) -> None:
    others, others_warehouse = another_writer_after_each_save
    warehouse = str(tmp_path)
    others_warehouse.append(warehouse)
    keys, options = KINDS[kind]
    table = paimon_index.create_table(warehouse, "db.t", SCHEMA, primary_keys=keys, options=options)
    df = spark.createDataFrame([(i, "ours") for i in range(20)], "id BIGINT, v STRING")
    result = jobs.write(df, "db.t", warehouse=warehouse)
    assert others == [2]
    assert result.snapshot_id == 1
    assert table.read(snapshot_id=1).num_rows == 20
    # A job that commits nothing reports nothing, although the other writer committed meanwhile.
    empty = spark.createDataFrame([], "id BIGINT, v STRING")
    nothing = jobs.write(empty, "db.t", warehouse=warehouse)
    assert others == [2, 3]
    assert nothing.snapshot_id is None
