"""Dynamic-bucket upserts through the distributed path's three stages, run here task by task.

``jobs.upsert`` of a ``bucket = -1`` table runs :func:`paimon_index.table.pk.dynamic.route` (any
task), :func:`~paimon_index.table.pk.dynamic.assign` (one task per assigner's rows) and
:func:`~paimon_index.table.pk.dynamic.prepare` (one task per set of buckets), and the driver commits
what the last stage prepared. The Spark job only shuffles between them; here the same functions run
on hand-made splits, so random operation sequences -- with the number of assigners and writers
changing between upserts, as a job's parallelism does -- are checked against a dict quickly.
"""

from __future__ import annotations

import tempfile
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.pk import commit_prepared, dynamic, read_primary_key
from paimon_index.table.pk.plan import live_rows, maintainer, plan_snapshot

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False),
                    ("n", pa.int64())])


def _table(warehouse: str, target: int) -> Any:
    create_table(warehouse, "db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"], options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": str(target)})
    return open_table(warehouse, "db.t")


def _latest(table: Any) -> int | None:
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return None if snapshot is None else int(snapshot.id)


def distributed_upsert(table: Any, rows: pa.Table, assigners: int, writers: int, *,
                       merge: bool = False) -> int | None:
    """What jobs.upsert's three stages do, each stage's tasks run one after the other."""
    planned = _latest(table)
    routed = dynamic.route(table, rows, assigners)
    ids = routed[dynamic.ASSIGNER_COLUMN].to_numpy()
    assigned = [dynamic.assign(table, planned, routed.filter(pa.array(ids == i)), assigners, merge=merge)
                for i in range(assigners) if (ids == i).any()]
    if not assigned:
        return None
    every = pa.concat_tables(assigned)
    owner = every[dynamic.BUCKET_COLUMN].to_numpy() % writers  # a bucket (of every partition): one writer
    prepared = [dynamic.prepare(table, planned, every.filter(pa.array(owner == w)), merge=merge)
                for w in range(writers)]
    prepared = [p for p in prepared if p is not None]
    return commit_prepared(table, prepared) if prepared else None


def check(table: Any, model: dict[tuple[int, int], int]) -> None:
    rows, _ = read_primary_key(table, None)
    got = sorted(zip(rows["k"].to_pylist(), rows["p"].to_pylist(), rows["n"].to_pylist(), strict=True))
    assert got == sorted((k, p, n) for (k, p), n in model.items())
    # No key in two buckets; each key where the HASH index says it is.
    plan = plan_snapshot(table, table.snapshot_manager().get_latest_snapshot())
    where: dict[tuple[int, int], list[int]] = {}
    for (_, bucket), files in plan.buckets.items():
        dvs = maintainer(plan, files)
        for meta in files.files:
            live = live_rows(meta, dvs, ["k", "p"], io=plan.io)
            for key in zip(live["k"].to_pylist(), live["p"].to_pylist(), strict=True):
                where.setdefault(key, []).append(bucket)
    assert all(len(b) == 1 for b in where.values())
    indexed = dynamic.buckets_of(table, _latest(table), list(where))
    assert {k: b[0] for k, b in where.items()} == indexed


OPS = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 1), st.sampled_from(["+I", "+U", "-D"]),
                         st.integers(0, 9)), min_size=1, max_size=40)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(OPS, st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=4),
       target=st.sampled_from([3, 10]))
def test_random_dynamic_bucket_upserts_equal_a_dict(steps: list, target: int) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        table = _table(warehouse, target)
        model: dict[tuple[int, int], int] = {}
        for ops, assigners, writers in steps:
            batch = pa.table({"k": [o[0] for o in ops], "p": [o[1] for o in ops], "n": [o[3] for o in ops],
                              "_ROW_KIND": [o[2] for o in ops]},
                             schema=SCHEMA.append(pa.field("_ROW_KIND", pa.string())))
            distributed_upsert(table, batch, assigners, writers)
            for k, p, kind, n in ops:
                if kind == "-D":
                    model.pop((k, p), None)
                else:
                    model[(k, p)] = n
            table = open_table(warehouse, "db.t")
            check(table, model)


def test_assigners_own_disjoint_buckets_and_existing_keys_keep_theirs(tmp_path: Any) -> None:
    """Three assigners fill only buckets b with b % 3 == their id; a later run with two assigners
    leaves the existing keys where they are and opens new buckets of its own residues."""
    table = _table(str(tmp_path), 5)
    keys = np.arange(60, dtype=np.int64)
    rows = pa.table({"k": keys, "p": np.zeros(60, np.int32), "n": keys}, schema=SCHEMA)
    routed = dynamic.route(table, rows, 3)
    for i in range(3):
        mine = dynamic.assign(table, None,
                              routed.filter(pa.array(routed[dynamic.ASSIGNER_COLUMN].to_numpy() == i)), 3)
        buckets = set(mine[dynamic.BUCKET_COLUMN].to_pylist())
        assert buckets and all(b % 3 == i for b in buckets)
        counts = np.bincount(mine[dynamic.BUCKET_COLUMN].to_numpy())
        assert counts.max() <= 5  # target-row-num
    distributed_upsert(table, rows, 3, 2)
    table = open_table(str(tmp_path), "db.t")
    before = dynamic.buckets_of(table, _latest(table), [(int(k), 0) for k in keys])
    more = pa.table({"k": np.arange(30, 90, dtype=np.int64), "p": np.zeros(60, np.int32),
                     "n": np.full(60, -1)}, schema=SCHEMA)
    routed = dynamic.route(table, more, 2)
    for i in range(2):
        mine = dynamic.assign(table, _latest(table),
                              routed.filter(pa.array(routed[dynamic.ASSIGNER_COLUMN].to_numpy() == i)), 2)
        placed = dict(zip(mine["k"].to_pylist(), mine[dynamic.BUCKET_COLUMN].to_pylist(), strict=True))
        assert all(placed[k] == before[(k, 0)] for k in placed if k < 60)  # existing keys: their bucket
        assert all(placed[k] % 2 == i for k in placed if k >= 60)  # new keys: this assigner's buckets
    distributed_upsert(table, more, 2, 3)
    table = open_table(str(tmp_path), "db.t")
    after = dynamic.buckets_of(table, _latest(table), [(k, 0) for k in range(90)])
    assert {k: after[k] for k in before} == before
    check(table, {(k, 0): k for k in range(30)} | {(k, 0): -1 for k in range(30, 90)})


def test_a_delete_of_a_key_the_index_does_not_hold_is_dropped(tmp_path: Any) -> None:
    table = _table(str(tmp_path), 5)
    rows = pa.table({"k": [1, 2], "p": [0, 0], "n": [1, 2], "_ROW_KIND": ["+I", "-D"]},
                    schema=SCHEMA.append(pa.field("_ROW_KIND", pa.string())))
    assigned = dynamic.assign(table, None, dynamic.route(table, rows, 1), 1)
    assert assigned["k"].to_pylist() == [1]


@pytest.mark.parametrize("options", [{"dynamic-bucket.assigner-parallelism": "3"},
                                     {"dynamic-bucket.initial-buckets": "2"},
                                     {"dynamic-bucket.max-buckets": "1"}])
def test_the_number_of_assigners_follows_paimons_options(tmp_path: Any, options: dict[str, str]) -> None:
    create_table(str(tmp_path), "db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                 options={"bucket": "-1", "deletion-vectors.enabled": "true", **options})
    table = open_table(str(tmp_path), "db.t")
    want = {"dynamic-bucket.assigner-parallelism": 3, "dynamic-bucket.initial-buckets": 2,
            "dynamic-bucket.max-buckets": 1}[next(iter(options))]
    assert dynamic.assigner_count(table, 4) == want


def test_a_bucket_rewritten_for_lack_of_levels_keeps_its_new_keys_in_their_bucket(tmp_path: Any) -> None:
    """With no free level the upsert rewrites the bucket; its new keys (not in the committed HASH
    index yet) must stay in the bucket their assigner chose, not the one pypaimon's own assigner
    would pick."""
    warehouse = str(tmp_path)
    create_table(warehouse, "db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"], options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "1000",
        "num-sorted-run.compaction-trigger": "1"})  # levels 1..1: the second upsert of a bucket rewrites it
    model: dict[tuple[int, int], int] = {}
    for step in range(3):
        keys = np.arange(step * 10, step * 10 + 40, dtype=np.int64)
        rows = pa.table({"k": keys, "p": np.zeros(len(keys), np.int32), "n": np.full(len(keys), step)},
                        schema=SCHEMA)
        distributed_upsert(open_table(warehouse, "db.t"), rows, 3, 2)
        model.update({(int(k), 0): step for k in keys})
        check(open_table(warehouse, "db.t"), model)


def test_a_date_partition_finds_its_hash_index(tmp_path: Any) -> None:
    """The HASH index of a partition is found by its values whatever their type: upserting the same
    keys again replaces them (a DATE partition)."""
    import datetime

    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("d", pa.date32(), nullable=False),
                        ("n", pa.int64())])
    create_table(str(tmp_path), "db.t", schema, primary_keys=["k", "d"], partition_keys=["d"], options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "5"})
    day = datetime.date(2026, 11, 26)
    for n in range(2):
        rows = pa.table({"k": np.arange(30, dtype=np.int64), "d": [day] * 30, "n": np.full(30, n)},
                        schema=schema)
        distributed_upsert(open_table(str(tmp_path), "db.t"), rows, 2, 2)
    got, _ = read_primary_key(open_table(str(tmp_path), "db.t"), None)
    assert sorted(got["k"].to_pylist()) == list(range(30)) and set(got["n"].to_pylist()) == {1}


# -- merge engines: the distributed stages merge as the driver's upsert does ----------------------
ENGINES = {
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                    "fields.m.aggregate-function": "max", "fields.s.aggregate-function": "listagg"},
    "partial-update": {"merge-engine": "partial-update"},
}
ENGINE_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False),
                           pa.field("p", pa.string(), nullable=False),
                           ("n", pa.int64()), ("m", pa.int32()), ("s", pa.string())])
ENGINE_OPS = st.lists(st.tuples(st.integers(0, 25), st.sampled_from(["a", "b"]),
                                st.one_of(st.none(), st.integers(-5, 9)),
                                st.one_of(st.none(), st.integers(0, 9)),
                                st.one_of(st.none(), st.sampled_from(["x", "y", "z"]))),
                      min_size=1, max_size=30)


def _engine_rows(table: Any, engine: str) -> list[tuple[Any, ...]]:
    rows, _ = read_primary_key(table, None)
    return sorted(tuple(r.values()) for r in rows.select(ENGINE_SCHEMA.names).to_pylist())


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(engine=st.sampled_from(sorted(ENGINES)),
       steps=st.lists(st.tuples(ENGINE_OPS, st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=3))
def test_merge_engine_dynamic_upserts_distributed_equal_the_drivers_merge(engine: str, steps: list) -> None:
    """The three stages with a merge engine (each key's rows merged at its assigner, then with its
    old row by the task owning its bucket) against :func:`upsert_arrow`, the driver's merge (checked
    against Java and Paimon's connector in tests/table/test_merge_engines.py): the same rows."""
    from paimon_index.table.pk import upsert_arrow

    with tempfile.TemporaryDirectory() as warehouse:
        options = {"bucket": "-1", "deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "4",
                   **ENGINES[engine]}
        for name in ("dist", "driver"):
            create_table(warehouse, f"db.{name}", ENGINE_SCHEMA, primary_keys=["k", "p"],
                         partition_keys=["p"], options=options)
        for ops, assigners, writers in steps:
            batch = pa.Table.from_pylist([dict(zip(ENGINE_SCHEMA.names, op, strict=True)) for op in ops],
                                         ENGINE_SCHEMA)
            distributed_upsert(open_table(warehouse, "db.dist"), batch, assigners, writers, merge=True)
            upsert_arrow(open_table(warehouse, "db.driver"), batch)
            assert _engine_rows(open_table(warehouse, "db.dist"), engine) == \
                _engine_rows(open_table(warehouse, "db.driver"), engine)
        check_buckets = open_table(warehouse, "db.dist")
        rows, _ = read_primary_key(check_buckets, None)
        keys = list(zip(rows["k"].to_pylist(), rows["p"].to_pylist(), strict=True))
        assert len(set(keys)) == len(keys)


def test_overwrites_assign_from_a_fresh_index_and_index_every_bucket(tmp_path: Any) -> None:
    """Overwrite after upserts, overwrite after overwrite, upserts after both: every key where the
    HASH index says it is, the dict's rows, and Java reads them. Before, pypaimon's writer kept the
    old buckets of keys it knew but indexed only new keys; the overwrite's commit dropped the old
    index files, so a bucket held data with no HASH index and the next write of the partition was
    refused ('has data files but no complete HASH index')."""
    from javaoracle import java_oracle
    from paimon_index.table.pk.overwrite import overwrite_rows

    table = _table(str(tmp_path), target=3)
    model: dict[tuple[int, int], int] = {}

    def rows(keys: list[tuple[int, int]], n: int) -> pa.Table:
        return pa.table({"k": pa.array([k for k, _ in keys], pa.int64()),
                         "p": pa.array([p for _, p in keys], pa.int32()),
                         "n": pa.array([n] * len(keys), pa.int64())})

    def overwrite(keys: list[tuple[int, int]], n: int) -> None:
        overwrite_rows(open_table(str(tmp_path), "db.t"), rows(keys, n))
        for key in [key for key in model if key[1] in {p for _, p in keys}]:  # dynamic-partition-overwrite
            del model[key]
        model.update({key: n for key in keys})

    distributed_upsert(table, rows([(k, k % 2) for k in range(20)], 1), 2, 2)
    model.update({(k, k % 2): 1 for k in range(20)})
    overwrite([(k, 0) for k in range(10, 24, 2)], 2)
    check(open_table(str(tmp_path), "db.t"), model)
    overwrite([(k, 0) for k in range(0, 30, 3)], 3)
    check(open_table(str(tmp_path), "db.t"), model)
    distributed_upsert(open_table(str(tmp_path), "db.t"), rows([(k, k % 2) for k in range(25, 40)], 4), 2, 2)
    model.update({(k, k % 2): 4 for k in range(25, 40)})
    check(open_table(str(tmp_path), "db.t"), model)
    answer = java_oracle().run("read", "--warehouse", str(tmp_path), "--table", "db.t", "--rows")
    assert sorted(tuple(r) for r in answer["row_values"]) == sorted((k, p, n) for (k, p), n in model.items())
