"""Primary-key upserts through Spark: deletion vectors instead of merges, one snapshot per job."""

from __future__ import annotations

from pathlib import Path

import pytest

from paimon_index.spark import jobs
from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
from paimon_index.spark.report import scan_report
from paimon_index.table.catalog import create_table, open_table

pytestmark = pytest.mark.spark

DDL = "k BIGINT NOT NULL, tag STRING, n INT"
ROWS_DDL = DDL + ", _ROW_KIND STRING"


def _rows(spark, warehouse: str, where: str | None = None, **options: str) -> list[tuple]:
    # Each DataFrame here is scanned once, by one query: forced pushdown is exact (docs/semantics.md).
    reader = (spark.read.format("paimon_index").option("warehouse", warehouse)
              .option(SINGLE_SCAN_PUSHDOWN, "true"))
    for key, value in options.items():
        reader = reader.option(key, value)
    df = reader.load("db.pk")
    df = df if where is None else df.filter(where)
    return sorted((r.k, r.tag, r.n) for r in df.collect())


def _pypaimon(warehouse: str) -> list[tuple]:
    table = open_table(warehouse, "db.pk")
    builder = table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(rows["k"].to_pylist(), rows["tag"].to_pylist(), rows["n"].to_pylist(), strict=True))


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_upserts_and_deletes_by_key_equal_a_dict(spark, tmp_path: Path, bucket: str) -> None:
    warehouse = str(tmp_path)
    create_table(warehouse, "db.pk", DDL, primary_keys=["k"], options={
        "bucket": bucket, "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag"})
    model: dict[int, tuple] = {}
    batches = [
        [(k, "common", 0, "+I") for k in range(400)],
        [(k, "rare" if k < 3 else "common", 1, "+U") for k in range(0, 400, 7)] + [(5, None, 1, "-D")],
        [(k, "common", 2, "-D") for k in range(100, 150)] + [(1000, "rare", 2, "+I")],
    ]
    for number, batch in enumerate(batches):
        result = jobs.upsert(spark, spark.createDataFrame(batch, ROWS_DDL), "db.pk", warehouse=warehouse)
        assert result.snapshot_id is not None and result.rows_affected == len(batch)
        for k, tag, n, kind in batch:
            if kind == "-D":
                model.pop(k, None)
            else:
                model[k] = (k, tag, n)
        assert _rows(spark, warehouse) == sorted(model.values()) == _pypaimon(warehouse), number

    reports = scan_report(spark)
    got = _rows(spark, warehouse, "tag = 'rare'", **{"scan-report": reports.name})
    report = reports.value
    assert got == sorted(v for v in model.values() if v[1] == "rare")
    assert report.files_skipped_by_index > 0 and report.rows_read == len(got)  # merge-free, by index

    jobs.compact(spark, "db.pk", warehouse=warehouse, full=True)
    jobs.expire_snapshots(spark, "db.pk", warehouse=warehouse, retain_last=1)
    assert _rows(spark, warehouse) == sorted(model.values()) == _pypaimon(warehouse)


def test_a_key_written_by_two_tasks_is_refused(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    create_table(warehouse, "db.pk", DDL, primary_keys=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true"})
    for n in range(2, 10):  # two rows of key 1, one per task
        df = spark.createDataFrame([(1, "a", 0), (1, "b", n)], DDL).repartition(2, "n")
        if sorted(df.rdd.glom().map(len).collect()) == [1, 1]:
            break
    assert sorted(df.rdd.glom().map(len).collect()) == [1, 1]
    with pytest.raises(Exception, match="repartition"):
        df.write.format("paimon_index").option("warehouse", warehouse).mode("append").save("db.pk")
    assert open_table(warehouse, "db.pk").snapshot_manager().get_latest_snapshot() is None


def test_partitioned_table_upserts_through_spark_equal_a_dict_and_pypaimon(spark, tmp_path: Path) -> None:
    """Issue 12 item 6d through Spark: tasks own (partition, bucket)s and look up trimmed keys; the
    same k lives in several partitions and a delete reaches only its own."""
    warehouse = str(tmp_path)
    create_table(warehouse, "db.pt", "p STRING NOT NULL, " + DDL, primary_keys=["p", "k"],
                 partition_keys=["p"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
    ddl = "p STRING, " + ROWS_DDL
    model: dict[tuple[str, int], tuple] = {}
    batches = [
        [(p, k, "first", 0, "+I") for p in "ab" for k in range(40)],
        [("a", k, "second", 1, "+U") for k in range(0, 40, 3)]
        + [("b", k, None, 1, "-D") for k in range(0, 40, 4)],
    ]
    for batch in batches:
        result = jobs.upsert(spark, spark.createDataFrame(batch, ddl), "db.pt", warehouse=warehouse)
        assert result.snapshot_id is not None
        for p, k, tag, n, kind in batch:
            if kind == "-D":
                model.pop((p, k), None)
            else:
                model[(p, k)] = (p, k, tag, n)
        table = open_table(warehouse, "db.pt")
        builder = table.new_read_builder()
        theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        ours = spark.read.format("paimon_index").option("warehouse", warehouse).load("db.pt").collect()
        assert sorted((r.p, r.k, r.tag, r.n) for r in ours) == sorted(model.values()) == \
            sorted(tuple(r.values()) for r in theirs.to_pylist())


@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_write_to_a_primary_key_table_from_many_tasks_is_an_upsert(spark, tmp_path: Path,
                                                                   bucket: str) -> None:
    """jobs.write (and so SQL INSERT) of a primary-key table from several tasks failed: dynamic
    buckets with "HASH index conflict", a key in two tasks with "repartition"."""
    warehouse = str(tmp_path)
    create_table(warehouse, "db.pk", DDL, primary_keys=["k"], options={
        "bucket": bucket, "deletion-vectors.enabled": "true"})
    rows = [(k % 150, f"t{k}", k) for k in range(300)]  # every key twice, in different tasks
    df = spark.createDataFrame(rows, DDL).repartition(4)
    result = jobs.write(df, "db.pk", warehouse=warehouse)
    assert result.snapshot_id is not None and result.rows_affected == 300
    got = _pypaimon(warehouse)
    assert [k for k, _, _ in got] == list(range(150))  # one row per key
    assert all(n in (k, k + 150) and tag == f"t{n}" for k, tag, n in got)  # one of its two rows
