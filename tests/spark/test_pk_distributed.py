"""Primary-key compaction in Spark tasks, per bucket, against the Python path and Java Paimon.

``jobs.compact`` plans on the driver and rewrites each (partition, bucket) in a Spark task with the
same per-bucket function :meth:`paimon_index.Table.compact` runs in one process; these tests show the
two leave the same table (rows, files per level, vectors), Java reads it with the same rows, and a
commit landing between the plan and the commit refuses the compaction with nothing left behind.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from tests.filetree import tree
from tests.javaoracle import java_oracle

import paimon_index
from paimon_index.errors import ConcurrentChangeError
from paimon_index.spark import _tasks, jobs
from paimon_index.table.catalog import open_table
from paimon_index.table.pk import compaction
from paimon_index.table.pk.plan import plan_snapshot

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False),
                    ("tag", pa.string()), ("n", pa.int64())])


def _table(warehouse: str, partitioned: bool, bucket: str = "2", rows: int = 600) -> dict[tuple, tuple]:
    """A DV-mode table with several files per bucket and vectors; the model of its rows."""
    keys = ["k", "p"] if partitioned else ["k"]
    table = paimon_index.create_table(
        warehouse, "db.t", SCHEMA, primary_keys=keys, partition_keys=["p"] if partitioned else (),
        options={"bucket": bucket, "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag",
                 "num-sorted-run.compaction-trigger": "3"})
    model: dict[tuple, tuple] = {}
    rng = np.random.default_rng(7)

    def upsert(ks: np.ndarray, n: int, kinds: list[str] | None = None) -> None:
        ps = (ks % 2).astype(np.int32) if partitioned else np.zeros(len(ks), np.int32)
        data = {"k": ks, "p": ps, "tag": [f"t{k % 5}" for k in ks], "n": np.full(len(ks), n)}
        batch = pa.table(data, schema=SCHEMA)
        if kinds is not None:
            batch = batch.append_column("_ROW_KIND", pa.array(kinds, pa.string()))
        table.upsert(batch)
        for i, k in enumerate(ks.tolist()):
            key = (k, int(ps[i]))
            if kinds is not None and kinds[i] == "-D":
                model.pop(key, None)
            else:
                model[key] = (k, int(ps[i]), f"t{k % 5}", n)

    upsert(np.arange(rows, dtype=np.int64), 0)
    upsert(np.sort(rng.choice(rows, rows // 2, replace=False)).astype(np.int64), 1)  # half the rows: vectors
    upsert(np.arange(rows, rows + 50, dtype=np.int64), 2)
    gone = np.arange(0, rows, 7, dtype=np.int64)
    upsert(gone, 3, ["-D"] * len(gone))
    return model


def _rows(warehouse: str) -> list[tuple]:
    got = paimon_index.open_table(warehouse, "db.t").read()
    return sorted(zip(*(got[c].to_pylist() for c in SCHEMA.names), strict=True))


def _layout(warehouse: str) -> list[tuple]:
    """(partition, bucket, level, rows, deleted rows) of every live file."""
    table = open_table(warehouse, "db.t")
    plan = plan_snapshot(table, table.snapshot_manager().get_latest_snapshot())
    from paimon_index.table.pk.plan import maintainer

    out = []
    for key, bucket in plan.buckets.items():
        dvs = maintainer(plan, bucket)
        for meta in bucket.files:
            vector = dvs.deletion_vector_of(meta.file_name)
            out.append((key, meta.level, meta.row_count, 0 if vector is None else vector.cardinality))
    return sorted(out, key=repr)


def _not_on_the_driver(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a bucket was compacted on the driver")


@pytest.mark.parametrize(("partitioned", "full"), [(False, True), (True, True), (True, False)])
def test_compaction_in_spark_tasks_leaves_the_table_the_python_compaction_leaves(
        spark: Any, tmp_path: Path, partitioned: bool, full: bool) -> None:
    here, there = str(tmp_path / "python"), str(tmp_path / "spark")
    model = _table(here, partitioned)
    shutil.copytree(here, there)
    before = _layout(there)
    assert any(deleted for *_, deleted in before)  # vectors to drop

    python = paimon_index.open_table(here, "db.t").compact(full=full)
    with pytest.MonkeyPatch.context() as patch:
        # The driver rewrites nothing: the buckets are compacted in the Spark tasks' processes.
        patch.setattr(compaction, "compact_bucket", _not_on_the_driver)
        result = jobs.compact(spark, "db.t", full=full, warehouse=there)

    assert result.operation == "compact" and result.snapshot_id == python.snapshot_id
    assert (result.files_added, result.files_removed) == (python.files_added, python.files_removed)
    assert _layout(there) == _layout(here) != before
    if full:
        assert all(deleted == 0 for *_, deleted in _layout(there))
        assert len({key for key, *_ in _layout(there)}) == len(_layout(there))  # one file per bucket
    assert _rows(there) == _rows(here) == sorted(model.values())
    oracle = java_oracle()
    java = oracle.run("read", "--warehouse", there, "--table", "db.t", "--rows")
    assert sorted(tuple(r) for r in java["row_values"]) == sorted(model.values())


def test_a_commit_between_plan_and_commit_refuses_the_compaction_and_leaves_nothing(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = str(tmp_path)
    model = _table(warehouse, partitioned=True, rows=200)
    real = _tasks.compact_job
    seen: dict[str, set[str]] = {}

    def upsert_meanwhile(*args: Any, **kwargs: Any) -> Any:
        # Another writer commits after the compaction planned, before it commits.
        paimon_index.open_table(warehouse, "db.t").upsert(
            pa.table({"k": [1], "p": [1], "tag": ["late"], "n": [9]}, schema=SCHEMA))
        seen["tree"] = tree(warehouse)
        done = real(*args, **kwargs)
        assert any(path for d in done for path in d.written)  # the tasks wrote files
        return done

    monkeypatch.setattr(_tasks, "compact_job", upsert_meanwhile)
    with pytest.raises(ConcurrentChangeError):
        jobs.compact(spark, "db.t", full=True, warehouse=warehouse)
    assert tree(warehouse) == seen["tree"]  # every file the tasks wrote deleted
    model[(1, 1)] = (1, 1, "late", 9)
    assert _rows(warehouse) == sorted(model.values())  # the late upsert kept, nothing compacted back
    monkeypatch.undo()
    jobs.compact(spark, "db.t", full=True, warehouse=warehouse)
    assert _rows(warehouse) == sorted(model.values())
