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
    real = _tasks.pk_compact_job
    seen: dict[str, set[str]] = {}

    def upsert_meanwhile(*args: Any, **kwargs: Any) -> Any:
        # Another writer commits after the compaction planned, before it commits.
        paimon_index.open_table(warehouse, "db.t").upsert(
            pa.table({"k": [1], "p": [1], "tag": ["late"], "n": [9]}, schema=SCHEMA))
        seen["tree"] = tree(warehouse)
        done = real(*args, **kwargs)
        assert any(path for d in done for path in d.written)  # the tasks wrote files
        return done

    monkeypatch.setattr(_tasks, "pk_compact_job", upsert_meanwhile)
    with pytest.raises(ConcurrentChangeError):
        jobs.compact(spark, "db.t", full=True, warehouse=warehouse)
    assert tree(warehouse) == seen["tree"]  # every file the tasks wrote deleted
    model[(1, 1)] = (1, 1, "late", 9)
    assert _rows(warehouse) == sorted(model.values())  # the late upsert kept, nothing compacted back
    monkeypatch.undo()
    jobs.compact(spark, "db.t", full=True, warehouse=warehouse)
    assert _rows(warehouse) == sorted(model.values())


# -- dynamic-bucket upserts from several tasks ----------------------------------------------------
ROWS_DDL = "k BIGINT, p INT, tag STRING, n BIGINT, _ROW_KIND STRING"


def _dynamic(warehouse: str, partitioned: bool) -> None:
    paimon_index.create_table(
        warehouse, "db.t", SCHEMA, primary_keys=["k", "p"] if partitioned else ["k"],
        partition_keys=["p"] if partitioned else (),
        options={"bucket": "-1", "deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "40",
                 "file-index.bitmap.columns": "tag"})


def _live_buckets(warehouse: str) -> dict[tuple, list[int]]:
    """Every live row's key -> the buckets holding a live row of it (read from the data files)."""
    from paimon_index.table.pk.plan import live_rows, maintainer

    table = open_table(warehouse, "db.t")
    plan = plan_snapshot(table, table.snapshot_manager().get_latest_snapshot())
    found: dict[tuple, list[int]] = {}
    for (_, bucket), files in plan.buckets.items():
        dvs = maintainer(plan, files)
        for meta in files.files:
            assert meta.level > 0  # merge-free: nothing left in level 0
            rows = live_rows(meta, dvs, ["k", "p"], io=plan.io)
            for k, p in zip(rows["k"].to_pylist(), rows["p"].to_pylist(), strict=True):
                found.setdefault((k, p), []).append(bucket)
    return found


def _check_buckets(warehouse: str, partitioned: bool) -> dict[tuple, int]:
    """No key in two buckets, and each key's bucket is the one its hash has in the HASH index."""
    from paimon_index.table.pk.dynamic import buckets_of

    found = _live_buckets(warehouse)
    assert all(len(b) == 1 for b in found.values()), {k: b for k, b in found.items() if len(b) > 1}
    table = open_table(warehouse, "db.t")
    snapshot = int(table.snapshot_manager().get_latest_snapshot().id)
    keys = list(found)
    indexed = buckets_of(table, snapshot, [(k, p) if partitioned else (k,) for k, p in keys])
    assert [indexed[(k, p) if partitioned else (k,)] for k, p in keys] == [found[key][0] for key in keys]
    return {key: b[0] for key, b in found.items()}


def _files(warehouse: str) -> set[str]:
    return {p for p in tree(warehouse) if not (Path(warehouse) / p).is_dir()}


def _batch(spark: Any, rows: list[tuple]) -> Any:
    return spark.createDataFrame(rows, ROWS_DDL)


def _apply(model: dict[tuple, tuple], rows: list[tuple]) -> None:
    for k, p, tag, n, kind in rows:
        if kind == "-D":
            model.pop((k, p), None)
        else:
            model[(k, p)] = (k, p, tag, n)


@pytest.mark.parametrize("partitioned", [False, True])
def test_dynamic_bucket_upserts_from_several_tasks_keep_each_key_in_one_bucket(
        spark: Any, tmp_path: Path, partitioned: bool) -> None:
    warehouse = str(tmp_path)
    _dynamic(warehouse, partitioned)
    model: dict[tuple, tuple] = {}

    def p_of(k: int) -> int:
        return k % 2 if partitioned else 0

    first = [(k, p_of(k), f"t{k % 3}", 0, "+I") for k in range(300)]
    result = jobs.upsert(spark, _batch(spark, first), "db.t", warehouse=warehouse, partitions=3)
    _apply(model, first)
    assert result.rows_affected == 300
    buckets = _check_buckets(warehouse, partitioned)
    per_bucket: dict[tuple[int, int], int] = {}
    for (_, p), b in buckets.items():
        per_bucket[(p, b)] = per_bucket.get((p, b), 0) + 1
    assert max(per_bucket.values()) <= 40  # dynamic-bucket.target-row-num
    # Three assigners each filled buckets of their own (b % 3): each left one partly filled (one
    # assigner -- the one task this ran in before -- fills bucket after bucket, one partial).
    partial = [(p, b) for (p, b), n in per_bucket.items() if n < 40 and p == 0]
    assert len(partial) >= 2 and len({b % 3 for _, b in partial}) >= 2
    assert _rows(warehouse) == sorted(model.values())

    # The same keys again (new values), new keys, deletes (and a delete of an unknown key).
    second = [(k, p_of(k), "again", 1, "+U") for k in range(0, 300, 3)] + \
        [(k, p_of(k), "new", 1, "+I") for k in range(300, 360)] + \
        [(k, p_of(k), None, None, "-D") for k in range(1, 300, 10)] + [(10_000, 0, None, None, "-D")]
    jobs.upsert(spark, _batch(spark, second), "db.t", warehouse=warehouse, partitions=2)
    _apply(model, second)
    after = _check_buckets(warehouse, partitioned)
    kept = set(after) & set(buckets)
    assert {k: after[k] for k in kept} == {k: buckets[k] for k in kept}  # old keys stayed where they were
    assert _rows(warehouse) == sorted(model.values())
    oracle = java_oracle()
    java = oracle.run("read", "--warehouse", warehouse, "--table", "db.t", "--rows")
    assert sorted(tuple(r) for r in java["row_values"]) == sorted(model.values())


def test_a_commit_between_assignment_and_commit_refuses_the_upsert(spark: Any, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Buckets are assigned from one snapshot's HASH index: a commit landing before the upsert
    commits could have given a new key a bucket too, so the upsert is refused, its files deleted."""
    warehouse = str(tmp_path)
    _dynamic(warehouse, partitioned=False)
    jobs.upsert(spark, _batch(spark, [(k, 0, "a", 0, "+I") for k in range(50)]), "db.t", warehouse=warehouse)
    real = _tasks.dynamic_upsert_job
    seen: dict[str, set[str]] = {}

    def upsert_meanwhile(*args: Any, **kwargs: Any) -> Any:
        # Another writer commits after the driver pinned the snapshot the buckets are assigned on.
        paimon_index.open_table(warehouse, "db.t").upsert(
            pa.table({"k": [500], "p": [0], "tag": ["late"], "n": [9]}, schema=SCHEMA))
        seen["tree"] = _files(warehouse)
        done = real(*args, **kwargs)
        assert done and all(p.written for p in done)  # the tasks wrote files
        return done

    monkeypatch.setattr(_tasks, "dynamic_upsert_job", upsert_meanwhile)
    with pytest.raises(ConcurrentChangeError):
        jobs.upsert(spark, _batch(spark, [(k, 0, "b", 1, "+I") for k in range(40, 120)]), "db.t",
                    warehouse=warehouse, partitions=2)
    assert _files(warehouse) == seen["tree"]  # every file the tasks wrote deleted (new buckets' dirs stay)
    model = {(k, 0): (k, 0, "a", 0) for k in range(50)} | {(500, 0): (500, 0, "late", 9)}
    assert _rows(warehouse) == sorted(model.values())
    _check_buckets(warehouse, partitioned=False)


@pytest.mark.slow
def test_paimons_connector_upserts_the_same_keys_into_their_buckets(spark: Any, tmp_path: Path) -> None:
    """After our distributed dynamic-bucket upserts, Paimon's own Spark connector (its
    HashBucketAssigner reading our HASH index) upserts the same keys: it replaces them, never
    duplicates; both sides read the same rows."""
    import paimonsql

    warehouse = str(tmp_path)
    _dynamic(warehouse, partitioned=True)
    rows = [(k, k % 2, f"t{k % 3}", 0, "+I") for k in range(200)]
    jobs.upsert(spark, _batch(spark, rows), "db.t", warehouse=warehouse, partitions=3)
    model: dict[tuple, tuple] = {}
    _apply(model, rows)
    values = ", ".join(f"({k}, {k % 2}, 'java', 7)" for k in range(0, 260, 2))
    results = paimonsql.run(warehouse, [f"INSERT INTO db.t VALUES {values}", "SELECT k, p, tag, n FROM db.t"])
    assert all(r["ok"] for r in results), results
    _apply(model, [(k, k % 2, "java", 7, "+I") for k in range(0, 260, 2)])
    theirs = sorted(tuple(r) for r in results[1]["rows"])
    assert theirs == sorted(model.values())  # no key twice
    assert _rows(warehouse) == sorted(model.values())
    _check_buckets(warehouse, partitioned=True)
    # and ours again on top of theirs
    third = [(k, k % 2, "ours", 8, "+U") for k in range(0, 300, 5)]
    jobs.upsert(spark, _batch(spark, third), "db.t", warehouse=warehouse, partitions=2)
    _apply(model, third)
    assert _rows(warehouse) == sorted(model.values())
    _check_buckets(warehouse, partitioned=True)
