"""The Spark writer's driver side: commit through a Transaction, abort deletes what tasks wrote."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.paimon import index_entries, latest_snapshot
from paimon_index.table.row_level import delete_arrow
from paimon_index.table.write import write_arrow

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string())])


def _files(warehouse: str) -> list[str]:
    root = Path(warehouse) / "db.db" / "t"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and ("bucket-" in str(p) or "/index/" in str(p)))


def _rows(warehouse: str) -> list[tuple]:
    table = open_table(warehouse, "db.t")
    builder = table.new_read_builder()
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(got["id"].to_pylist(), got["tag"].to_pylist(), strict=True))


def test_abort_deletes_what_finished_tasks_wrote(tmp_path: Path) -> None:
    """The driver half, called as Spark calls it (tasks' messages in, one of them None). Fails on a
    no-op abort (the old behaviour: written files stayed as orphans)."""
    from paimon_index.spark.datasource import PaimonIndexWriter
    from paimon_index.spark.options import parse_write_options

    warehouse = str(tmp_path)
    create_table(warehouse, "db.t", SCHEMA, options={"bucket": "-1", "file-index.bloom-filter.columns": "id",
                                                     "file-index.in-manifest-threshold": "1"})
    before = _files(warehouse)
    options = parse_write_options({"warehouse": warehouse, "path": "db.t"})
    writer = PaimonIndexWriter(options)
    batch = pa.record_batch({"id": pa.array([1, 2], pa.int64()), "tag": pa.array(["a", "b"])})
    message = writer.write(iter([batch]))
    assert len(_files(warehouse)) == len(before) + 2  # the data file and its .index file
    writer.abort([message, None])
    assert _files(warehouse) == before
    assert latest_snapshot(open_table(warehouse, "db.t")) is None

    overwrite = PaimonIndexWriter(options, overwrite=True)
    message = overwrite.write(iter([batch]))
    overwrite.commit([message])
    assert _rows(warehouse) == [(1, "a"), (2, "b")]


def test_an_aborted_job_deletes_the_files_its_finished_tasks_wrote(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    create_table(warehouse, "db.t", SCHEMA, options={"bucket": "-1", "file-index.bloom-filter.columns": "id",
                                                     "file-index.in-manifest-threshold": "1"})
    before = _files(warehouse)

    table_dir = Path(warehouse) / "db.db" / "t"

    def fail_late(batches):
        for batch in batches:
            if batch.num_rows and max(batch.column("id").to_pylist()) >= 1000:
                # Give the other task time to write its file first (Spark may still run the two
                # one after the other: the direct test above is the one that needs the abort).
                deadline = time.monotonic() + 10
                while not list(table_dir.rglob("data-*.parquet")) and time.monotonic() < deadline:
                    time.sleep(0.2)
                time.sleep(1)
                raise ValueError("task failed on purpose")
            yield batch

    good = spark.createDataFrame([(i, "a") for i in range(5)], "id bigint, tag string").coalesce(1)
    bad = spark.createDataFrame([(1000 + i, "b") for i in range(5)], "id bigint, tag string").coalesce(1)
    frame = good.union(bad).mapInArrow(fail_late, "id bigint, tag string")
    with pytest.raises(Exception, match="task failed on purpose"):
        frame.write.format("paimon_index").option("warehouse", warehouse).mode("append").save("db.t")
    assert latest_snapshot(open_table(warehouse, "db.t")) is None
    assert _files(warehouse) == before  # no data file, no .index file left behind
    assert not list(table_dir.rglob("*.parquet*"))


def test_a_spark_overwrite_drops_deletion_vectors_so_deletes_keep_working(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    table = create_table(warehouse, "db.t", SCHEMA,
                         options={"bucket": "-1", "deletion-vectors.enabled": "true"})
    write_arrow(table, pa.table({"id": [1, 2, 3], "tag": ["a", "b", "c"]}))
    delete_arrow(table, "id = 2")
    frame = spark.createDataFrame([(7, "x"), (8, "y")], "id bigint, tag string")
    frame.write.format("paimon_index").option("warehouse", warehouse).mode("overwrite").save("db.t")
    table = open_table(warehouse, "db.t")
    assert index_entries(table, latest_snapshot(table), "DELETION_VECTORS") == []
    assert _rows(warehouse) == [(7, "x"), (8, "y")]
    assert delete_arrow(table, "id = 7") is not None
    assert _rows(warehouse) == [(8, "y")]
