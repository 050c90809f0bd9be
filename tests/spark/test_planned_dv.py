"""Deletion vectors in the planned read, against ``spark.read.parquet`` of the live rows.

The reference: each planned data file read with pyarrow, its deleted positions (the plan's vectors)
removed, written to a Parquet file of its own and read by Spark -- so what is compared is only how
the planned read applies the vectors on Spark's side (a filter on ``_metadata.row_index`` for a few
deleted runs, a broadcast join with 64-row words of deleted bits otherwise; both forced here for
every table). Tables: clustered and random deletions, a file with all rows but one deleted, files of
equal size (told apart by their size in the scan), a partitioned table, a primary-key table after
upserts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_index
from paimon_index.spark import jobs
from paimon_index.spark import planned as planned_module
from paimon_index.table.scan import plan_read

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("r", pa.int32()), ("s", pa.string()),
                    ("d", pa.float64())])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true"}
ROWS = 2_000
#: One file each: two clustered runs, ~30% at random, all rows but one, none.
DELETES = ("id BETWEEN 100 AND 700 OR id BETWEEN 1500 AND 1510",
           f"id >= {ROWS} AND id < {2 * ROWS} AND r < 30",
           f"id >= {2 * ROWS} AND id < {3 * ROWS} AND id <> {2 * ROWS + 321}")
#: (_RANGE_RUNS, _SET_POSITIONS) forcing each way of applying the vectors
PATHS = {"ranges": (1 << 30, 0), "positions": (-1, 1 << 30), "words": (-1, -1)}


def _force(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    runs, positions = PATHS[path]
    monkeypatch.setattr(planned_module, "_RANGE_RUNS", runs)
    monkeypatch.setattr(planned_module, "_SET_POSITIONS", positions)


def _batch(k: int, rows: int = ROWS, seed: int | None = None) -> pa.Table:
    rng = np.random.default_rng(k if seed is None else seed)
    ids = np.arange(k * rows, (k + 1) * rows, dtype=np.int64)
    return pa.table({"id": ids, "p": (ids % 2).astype(np.int32),
                     "r": rng.integers(0, 100, rows).astype(np.int32),
                     "s": [f"s{i % 7}" for i in range(rows)], "d": rng.random(rows)}, schema=SCHEMA)


def _table(root: Path, *, partitioned: bool = False) -> str:
    t = paimon_index.create_table(str(root), "db.t", SCHEMA, options=OPTIONS,
                                  partition_keys=["p"] if partitioned else ())
    for k in range(len(DELETES) + 1):
        t.write(_batch(k))
    for where in DELETES:
        t.delete(where)
    return str(root)


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _reference(spark: Any, files: Any, names: list[str], tmp: Path) -> Any:
    """``spark.read.parquet`` of the live rows of ``files``: the deleted positions removed with pyarrow."""
    tmp.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, f in enumerate(files):
        data = pq.ParquetFile(f.path).read(columns=names)  # no hive partition discovery
        if f.deleted is not None:
            keep = np.ones(data.num_rows, dtype=bool)
            keep[f.deleted] = False
            data = data.filter(pa.array(keep))
        paths.append(str(tmp / f"live-{i}.parquet"))
        pq.write_table(data, paths[-1])
    return spark.read.parquet(*paths).select(*names)


def _check(spark: Any, warehouse: str, table: str, tmp: Path, monkeypatch: pytest.MonkeyPatch,
           path: str) -> Any:
    _force(monkeypatch, path)
    read = jobs.read_planned(spark, table, warehouse=warehouse, use_index=False, small_read_bytes=0)
    names = read.dataframe.columns
    assert any(f.deleted is not None for f in read.plan.files)
    assert _rows(read.dataframe) == _rows(_reference(spark, read.plan.files, names, tmp / path))
    # and the same rows as the Python reader
    own = paimon_index.open_table(warehouse, table).read()
    assert sorted(read.dataframe.select("id").toPandas()["id"]) == sorted(own["id"].to_pylist())
    return read


@pytest.fixture(scope="module")
def unpartitioned(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _table(tmp_path_factory.mktemp("dv") / "a dir%20x")


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _table(tmp_path_factory.mktemp("dv-part"), partitioned=True)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_clustered_random_and_all_but_one(spark: Any, unpartitioned: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    read = _check(spark, unpartitioned, "db.t", tmp_path, monkeypatch, path)
    live = sorted(f.live_rows for f in read.plan.files)
    assert live[0] == 1  # the file with every row but one deleted
    text = read.dataframe._jdf.queryExecution().executedPlan().toString()
    if path == "words":  # the words are a file Spark reads, not a local relation shipped in tasks
        assert "LeftAnti" in text and "LocalTableScan" not in text
    else:
        assert "Join" not in text


@pytest.mark.parametrize("path", sorted(PATHS))
def test_partitioned(spark: Any, partitioned: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                     path: str) -> None:
    read = _check(spark, partitioned, "db.t", tmp_path, monkeypatch, path)
    assert len({f.partition for f in read.plan.files}) == 2


def test_the_default_rule(spark: Any, unpartitioned: str, tmp_path: Path) -> None:
    """Without forcing: the random file's thousand runs join, the same rows come back."""
    read = jobs.read_planned(spark, "db.t", warehouse=unpartitioned, use_index=False, small_read_bytes=0)
    text = read.dataframe._jdf.queryExecution().executedPlan().toString()
    assert "LeftAnti" in text
    expected = _reference(spark, read.plan.files, read.dataframe.columns, tmp_path)
    assert _rows(read.dataframe) == _rows(expected)


def test_a_read_with_vectors_is_estimated_no_larger_than_its_files(spark: Any, unpartitioned: str) -> None:
    """Spark's size estimate of the read with its vectors joined is the scan's (an anti join's), so
    a small table with vectors is broadcast into a join. Joined as an outer join plus a filter, it
    was estimated as the product of the scan's and the words' sizes, and joined by a shuffle."""
    read = jobs.read_planned(spark, "db.t", warehouse=unpartitioned, use_index=False, small_read_bytes=0)
    assert "LeftAnti" in read.dataframe._jdf.queryExecution().executedPlan().toString()

    def estimated(df: Any) -> int:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))

    files = spark.read.parquet(*[f.path for f in read.plan.files])
    assert estimated(read.dataframe) <= estimated(files)
    big = spark.range(3_000_000).withColumnRenamed("id", "k")
    joined = big.join(read.dataframe, big["k"] == read.dataframe["id"])
    plan = joined._jdf.queryExecution().executedPlan().toString()
    assert "BroadcastHashJoin [k" in plan and "SortMergeJoin" not in plan


@pytest.mark.parametrize("path", sorted(PATHS))
def test_files_of_equal_size(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Files of one size are scanned in separate batches (the scan tells a batch's files apart by
    size); each file keeps its own vector."""
    root = str(tmp_path / "wh")
    t = paimon_index.create_table(root, "db.t", SCHEMA, options=OPTIONS)
    for _ in range(3):
        t.write(_batch(0))  # the same rows three times: three files of one size
    t.delete("r < 30 OR id BETWEEN 10 AND 20")
    table = t.paimon_table
    plan = plan_read(table, None)
    assert len({f.file_size for f in plan.files}) == 1 and len(plan.files) == 3
    _force(monkeypatch, path)
    # the table's delete hits the same rows of each file: give each file a vector of its own too
    rng = np.random.default_rng(7)
    vectors = [np.arange(0, ROWS - 1, dtype=np.int64),  # all but the last row
               np.sort(rng.choice(ROWS, ROWS // 3, replace=False)).astype(np.int64),
               np.arange(500, 900, dtype=np.int64)]
    own = [dataclasses.replace(f, deleted=v, deletion_needed=True)
           for f, v in zip(plan.files, vectors, strict=True)]
    for files in (list(plan.files), own):
        group = planned_module._Group(table, plan, files[0].schema_id)
        current = planned_module._spark_schema(table.table_schema.fields)
        got = planned_module._scan(spark, group, files, current)
        assert _rows(got) == _rows(_reference(spark, files, got.columns, tmp_path / path / str(id(files))))


@pytest.mark.parametrize("kind", ["append", "primary key"])
@pytest.mark.parametrize("rows_per_task", [None, 4])
def test_words_elsewhere_go_in_relations_a_task_can_carry(spark: Any, unpartitioned: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, kind: str,
                                                          rows_per_task: int | None) -> None:
    """Off a local master the words are local relations (the driver's disk is not the executors').
    Spark collects a local relation for the broadcast with a job whose tasks carry its rows (6.4 MB
    a task for a 20M-row table with 1/7 deleted on 2 cores): they go in relations of at most
    ``_connect.LOCAL_RELATION_TASK_BYTES`` a leaf partition, unioned -- one relation while they fit."""
    warehouse = unpartitioned
    if kind == "primary key":
        warehouse = str(tmp_path / "pk")
        _randomly_deleted(warehouse, kind)
    _force(monkeypatch, "words")
    monkeypatch.setattr(planned_module._connect, "local_master", lambda spark: False)
    if rows_per_task is not None:  # a word's row weighs 42 bytes in a task
        monkeypatch.setattr(planned_module._connect, "LOCAL_RELATION_TASK_BYTES", rows_per_task * 42)
    read = jobs.read_planned(spark, "db.t", warehouse=warehouse, use_index=False, small_read_bytes=0)
    assert read.plan.primary_key == (kind == "primary key")
    leaves = read.dataframe._jdf.queryExecution().optimizedPlan().collectLeaves()
    relations = [leaves.apply(i) for i in range(leaves.size())]
    sizes = [r.data().size() for r in relations if r.getClass().getSimpleName() == "LocalRelation"]
    if rows_per_task is None:
        assert len(sizes) == 1, sizes
    else:
        step = rows_per_task * planned_module._connect.parallelism(spark)  # no leafNodeDefaultParallelism
        assert len(sizes) > 2 and max(sizes) <= step, sizes
    expected = _reference(spark, read.plan.files, read.dataframe.columns, tmp_path / "reference")
    assert _rows(read.dataframe) == _rows(expected)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_primary_key_after_upserts(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   path: str) -> None:
    root = str(tmp_path / "pk")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("r", pa.int32()), ("s", pa.string())])
    t = paimon_index.create_table(root, "db.pk", schema, primary_keys=["id"],
                                  options={"bucket": "2", "deletion-vectors.enabled": "true"})
    keys = np.arange(4_000, dtype=np.int64)
    t.upsert(pa.table({"id": keys, "r": (keys % 100).astype(np.int32), "s": [f"v0-{k}" for k in keys]},
                      schema=schema))
    rng = np.random.default_rng(3)
    for round_ in range(1, 3):  # 10% of the keys at random, twice
        changed = np.sort(rng.choice(keys, len(keys) // 10, replace=False))
        t.upsert(pa.table({"id": changed, "r": (changed % 7).astype(np.int32),
                           "s": [f"v{round_}-{k}" for k in changed]}, schema=schema))
    read = _check(spark, root, "db.pk", tmp_path, monkeypatch, path)
    assert read.plan.primary_key
    got = {r["id"]: r["s"] for r in read.dataframe.collect()}
    assert len(got) == len(keys)
    own = t.read()
    assert got == dict(zip(own["id"].to_pylist(), own["s"].to_pylist(), strict=True))


def _rare_rows(keys: np.ndarray, every: int, r: np.ndarray, schema: pa.Schema) -> pa.Table:
    rare = np.array(["common", "rare"])
    return pa.table({"id": keys, "c": rare[(keys % every == 0).astype(int)], "r": r.astype(np.int32)},
                    schema=schema)


def _randomly_deleted(root: str, kind: str) -> Any:
    """A table of 8,000 rows (1% ``c = 'rare'``, bitmap on ``c``) with ~10% of its rows deleted at
    random: a primary-key table's old versions after a random upsert, an append table's DELETE."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("c", pa.string()), ("r", pa.int32())])
    keys = np.arange(8_000, dtype=np.int64)
    rng = np.random.default_rng(5)
    if kind == "primary key":
        t = paimon_index.create_table(root, "db.t", schema, primary_keys=["id"],
                                      options={"bucket": "2", "deletion-vectors.enabled": "true",
                                               "file-index.bitmap.columns": "c"})
        t.upsert(_rare_rows(keys, 97, keys % 100, schema))
        changed = np.sort(rng.choice(keys, len(keys) // 10, replace=False))  # old versions deleted
        t.upsert(_rare_rows(changed, 89, changed % 7, schema))
    else:
        t = paimon_index.create_table(root, "db.t", schema, options={
            "bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "c"})
        for part in np.array_split(keys, 2):
            t.write(_rare_rows(part, 97, rng.integers(0, 100, len(part)), schema))
        t.delete("r < 10")
    return t


@pytest.mark.parametrize("kind", ["primary key", "append"])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_only_the_deleted_rows_the_index_kept_are_dropped(spark: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, path: str,
                                                          kind: str) -> None:
    """A selective read of a table with ~10% of its rows deleted at random: Spark's filter rejects
    every row the bitmap did not keep, so only the deleted rows among the kept ones are dropped -- a
    few positions instead of every file's vector of hundreds of runs (no join by default)."""
    root = str(tmp_path / "wh")
    t = _randomly_deleted(root, kind)
    where = "c = 'rare'"
    if path == "ranges":  # the default rule: the kept deletes are few runs
        monkeypatch.undo()
    else:
        _force(monkeypatch, path)
    read = jobs.read_planned(spark, "db.t", where, warehouse=root, small_read_bytes=0)
    vectors = [f for f in read.plan.files if f.deleted is not None]
    assert vectors and sum(len(f.deleted) for f in vectors) >= 400
    for f in vectors:
        assert f.kept_deleted is not None
        rows = pq.ParquetFile(f.path).read(columns=["c"])["c"].to_numpy(zero_copy_only=False)
        assert f.kept_deleted.tolist() == np.intersect1d(np.flatnonzero(rows == "rare"), f.deleted).tolist()
    assert 0 < sum(len(f.kept_deleted) for f in vectors if f.kept_deleted is not None) <= 16
    text = read.dataframe._jdf.queryExecution().executedPlan().toString()
    assert ("LeftAnti" in text) == (path == "words")
    names = read.dataframe.columns
    expected = _reference(spark, read.plan.files, names, tmp_path / path).filter(where)
    assert _rows(read.dataframe) == _rows(expected)
    own = t.read()
    assert sorted(r["id"] for r in read.dataframe.collect()) == \
        sorted(i for i, c in zip(own["id"].to_pylist(), own["c"].to_pylist(), strict=True) if c == "rare")


def test_a_few_scattered_deletes_are_a_set_of_positions(spark: Any, tmp_path: Path) -> None:
    """A point change deletes a few rows far apart (more runs than a range filter takes): they were
    joined with their words, a broadcast job of its own (TPC-H's part after its upsert: 96
    positions); by default they are now a filter of per-file position sets, no join, the same rows
    as Spark's own read of the live rows."""
    root = str(tmp_path / "wh")
    t = paimon_index.create_table(root, "db.t", SCHEMA, options=OPTIONS)
    for k in range(2):
        t.write(_batch(k))
    t.delete(f"id % 37 = 5 AND id < {ROWS + 500}")  # ~68 rows in the first file, ~14 in the second
    read = jobs.read_planned(spark, "db.t", warehouse=root, use_index=False, small_read_bytes=0)
    deleted = [len(f.deleted) for f in read.plan.files if f.deleted is not None]
    assert len(deleted) == 2 and sum(deleted) > planned_module._RANGE_RUNS
    text = read.dataframe._jdf.queryExecution().executedPlan().toString()
    assert "Join" not in text and "INSET" in text.upper()
    expected = _reference(spark, read.plan.files, read.dataframe.columns, tmp_path)
    assert _rows(read.dataframe) == _rows(expected)
    assert read.dataframe.count() == 2 * ROWS - sum(deleted)
