"""DELETE and UPDATE as Spark jobs: the table equals a plain model after every step."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_index.spark import jobs
from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
from paimon_index.spark.report import scan_report
from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.write import write_arrow

pytestmark = pytest.mark.spark

DDL = "id BIGINT, tag STRING, dt STRING"
TAGS = ["a", "b", "c", "rare"]


def _load(spark, warehouse: str, **options: str):
    # A fresh DataFrame per query: Spark 4.3 keeps a Python source's pushed-down read plan on the
    # relation, so reusing a DataFrame after a filtered query would reuse that plan (docs/read-path.md).
    # Each DataFrame here is scanned once, by one query: forced pushdown is exact (docs/semantics.md).
    reader = (spark.read.format("paimon_index").option("warehouse", warehouse)
              .option(SINGLE_SCAN_PUSHDOWN, "true"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load("db.t")


def _rows(spark, warehouse: str) -> list[tuple]:
    return sorted((r.id, r.tag, r.dt) for r in _load(spark, warehouse).collect())


def _pypaimon_rows(warehouse: str) -> list[tuple]:
    table = open_table(warehouse, "db.t")
    builder = table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(rows["id"].to_pylist(), rows["tag"].to_pylist(), rows["dt"].to_pylist(), strict=True))


@pytest.mark.parametrize(("bucket", "bitmap64"), [pytest.param("2", False, marks=pytest.mark.slow),
                                                  ("-1", True)])  # CI's budget: one layout
def test_random_appends_deletes_and_updates_equal_a_model(spark, tmp_path: Path, bucket: str,
                                                          bitmap64: bool) -> None:
    warehouse = str(tmp_path)
    options = {"bucket": bucket, "deletion-vectors.enabled": "true",
               "deletion-vectors.bitmap64": str(bitmap64).lower(), "file-index.bitmap.columns": "tag"}
    if bucket != "-1":
        options["bucket-key"] = "id"
    create_table(warehouse, "db.t", DDL, partition_keys=["dt"], options=options)
    rng = random.Random(int(bucket) + 7)
    model: list[tuple] = []
    next_id = 0
    for step in range(7):
        kind = "append" if step < 2 else rng.choice(["append", "delete", "update", "delete"])
        if kind == "append":
            rows = [(i, rng.choice(TAGS), rng.choice(["x", "y"])) for i in range(next_id, next_id + 300)]
            next_id += 300
            (spark.createDataFrame(rows, DDL).repartition(2).write.format("paimon_index")
             .option("warehouse", warehouse).mode("append").save("db.t"))
            model += rows
        elif kind == "delete":
            tag, limit = rng.choice(TAGS), rng.randrange(next_id + 1)
            jobs.delete(spark, "db.t", f"tag = '{tag}' AND id < {limit}", warehouse=warehouse)
            model = [r for r in model if not (r[1] == tag and r[0] < limit)]
        else:
            tag = rng.choice(TAGS)
            jobs.update(spark, "db.t", {"tag": "concat(tag, '+')", "id": "id + 100000"}, f"tag = '{tag}'",
                        warehouse=warehouse)
            model = [(r[0] + 100_000, r[1] + "+", r[2]) if r[1] == tag else r for r in model]
        assert _rows(spark, warehouse) == sorted(model), (step, kind)
        if not bitmap64:  # pypaimon reads 32-bit vectors only
            assert _pypaimon_rows(warehouse) == sorted(model)


def test_indexes_still_skip_after_a_delete_and_a_failed_job_changes_nothing(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    table = create_table(warehouse, "db.t", DDL, options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag"})
    for first in range(0, 4000, 1000):  # four files; 'rare' only in the first and the last
        rare = first in (0, 3000)
        write_arrow(table, pa.table({"id": list(range(first, first + 1000)),
                                     "tag": ["rare" if rare and i % 100 == 0 else "a" for i in range(1000)],
                                     "dt": ["x"] * 1000}))
    first = jobs.delete(spark, "db.t", "tag = 'rare' AND id < 1000", warehouse=warehouse)
    assert first.snapshot_id is not None and first.rows_affected == 10
    again = jobs.delete(spark, "db.t", "tag = 'rare' AND id < 1000", warehouse=warehouse)
    assert again.snapshot_id is None and again.rows_affected == 0  # idempotent
    reports = scan_report(spark)
    got = sorted(r.id for r in _load(spark, warehouse, **{"scan-report": reports.name})
                 .filter("tag = 'rare'").collect())
    report = reports.value
    assert got == list(range(3000, 4000, 100))
    # The two files holding only 'a' are ruled out by their value statistics (min = max = 'a') before
    # any index is read; the index plus the DV empties the first file's match.
    assert report.files_skipped_by_stats == 2 and report.files_skipped_by_index == 1
    assert report.rows_read == 10
    assert report.rows_removed_by_deletion_vectors == 10

    before = open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot().id
    rows_before = _rows(spark, warehouse)
    with pytest.raises(Exception, match="boom"):
        jobs.update(spark, "db.t", {"tag": "CASE WHEN id = 3500 THEN raise_error('boom') ELSE 'z' END"},
                    "id >= 3000", warehouse=warehouse)
    assert open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot().id == before
    assert _rows(spark, warehouse) == rows_before


def test_rewrite_file_index_job_rebuilds_only_out_of_date_files(spark, tmp_path: Path, capsys) -> None:
    from paimon_index.table.catalog import alter_table_options
    from paimon_index.table.system import file_indexes

    warehouse = str(tmp_path)
    table = create_table(warehouse, "db.t", DDL, partition_keys=["dt"], options={
        "bucket": "-1", "file-index.bitmap.columns": "tag"})
    for dt in ("x", "y"):
        write_arrow(table, pa.table({"id": list(range(500)), "tag": [TAGS[i % 4] for i in range(500)],
                                     "dt": [dt] * 500}))
    # all up to date
    assert jobs.rewrite_file_index(spark, "db.t", warehouse=warehouse, progress=True).snapshot_id is None
    alter_table_options(warehouse, "db.t", set_options={"file-index.bloom-filter.columns": "id"})
    snapshot = jobs.rewrite_file_index(spark, "db.t", where="dt = 'y'", warehouse=warehouse,
                                       progress=True).snapshot_id
    assert capsys.readouterr().err.endswith("] 1/1 files\n")  # one partition planned, one file
    listing = file_indexes(open_table(warehouse, "db.t")).to_pylist()
    types = {(r["partition"], r["index_type"]) for r in listing}
    assert types == {("dt=x", "bitmap"), ("dt=y", "bitmap"), ("dt=y", "bloom-filter")}
    assert open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot().id == snapshot == 3
    reports = scan_report(spark)
    got = _load(spark, warehouse, **{"scan-report": reports.name}).filter("id = 100000").count()
    report = reports.value
    assert got == 0 and report.files_skipped_by_index == 1  # dt=y's new bloom filter; dt=x has none


def test_the_fold_keeps_every_position_of_every_file_and_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    """mark_job's per-task fold: batches mixing files, partitions and buckets become one row per
    (file, partition, bucket) holding all its positions, split past FOLD_POSITIONS."""
    import numpy as np

    from paimon_index.spark import _tasks

    monkeypatch.setattr(_tasks, "FOLD_POSITIONS", 3)
    rows = [("f1", i, "", 0) for i in (5, 1, 9)] + [("f2", 4, "", 1), ("f1", 2, "", 0), ("f1", 7, "dt=x", 0)]
    batches = [pa.RecordBatch.from_pylist([dict(zip(_tasks.METADATA_COLUMNS, r, strict=True)) for r in part],
                                          schema=pa.schema([("__paimon_file_path", pa.string()),
                                                            ("__paimon_row_index", pa.int64()),
                                                            ("__paimon_partition", pa.string()),
                                                            ("__paimon_bucket", pa.int32())]))
               for part in (rows[:3], rows[3:], [])]
    folded = pa.Table.from_batches(list(_tasks._fold(iter(batches))))
    got: dict[tuple[str, str, int], list[int]] = {}
    for r in folded.to_pylist():
        assert len(r[_tasks._POSITIONS]) <= 3 * 8
        key = (r["__paimon_file_path"], r["__paimon_partition"], r["__paimon_bucket"])
        got.setdefault(key, []).extend(np.frombuffer(r[_tasks._POSITIONS], dtype=np.int64).tolist())
    assert {k: sorted(v) for k, v in got.items()} == {("f1", "", 0): [1, 2, 5, 9], ("f2", "", 1): [4],
                                                      ("f1", "dt=x", 0): [7]}
    assert list(_tasks._fold(iter([]))) == []
