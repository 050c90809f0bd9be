"""The public Table API, verb by verb, against a plain model of the rows and pypaimon's own read."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_index
from paimon_index import (
    CommitResult,
    ConcurrentChangeError,
    DataError,
    InvalidOptionError,
    InvalidPredicateError,
    TableError,
    TableExistsError,
    TableNotFoundError,
)
from paimon_index.table.paimon import index_entries, latest_snapshot

SCHEMA = pa.schema([("id", pa.int64()), ("score", pa.int32()), ("tag", pa.string()), ("dt", pa.string())])
APPEND_OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "id",
                  "file-index.bitmap.columns": "tag"}


def rows(*records: tuple) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in records], schema=SCHEMA)


def as_model(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r[c] for c in SCHEMA.names) for r in table.to_pylist())


def pypaimon_rows(table: paimon_index.Table) -> list[tuple]:
    builder = table.paimon_table.new_read_builder()
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return as_model(got.select(SCHEMA.names)) if got is not None and got.num_rows else []


def check(table: paimon_index.Table, model: list[tuple]) -> None:
    assert as_model(table.read()) == sorted(model)
    assert pypaimon_rows(table) == sorted(model)


@pytest.fixture
def table(tmp_path: Path) -> paimon_index.Table:
    return paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, partition_keys=["dt"],
                                     options=APPEND_OPTIONS)


def test_append_table_verbs_follow_the_model(table: paimon_index.Table) -> None:
    model = [(1, 10, "a", "x"), (2, 20, "b", "x"), (3, 30, "a", "y"), (4, None, None, "y")]
    result = table.write(rows(*model))
    assert result == CommitResult("append", 1, 4, 2, 0)  # one file per partition
    check(table, model)

    # SET sees the old row; '/' is fractional and the result is truncated into the INT column.
    result = table.update({"score": "score / 4 + id", "tag": "upper(tag) || '!'"}, "tag = 'a'")
    assert (result.operation, result.snapshot_id, result.rows_affected) == ("update", 2, 2)
    assert result.files_removed == 0  # the old rows are marked deleted, their files stay
    model = [(1, 3, "A!", "x"), (2, 20, "b", "x"), (3, 10, "A!", "y"), (4, None, None, "y")]
    check(table, model)

    result = table.update({"score": 7}, "score IS NULL")
    assert result.rows_affected == 1
    model[3] = (4, 7, None, "y")
    check(table, model)

    result = table.delete("id >= 3")
    assert (result.snapshot_id, result.rows_affected) == (4, 2)
    assert result.files_added == result.files_removed == 0
    model = model[:2]
    check(table, model)

    nothing = table.delete("id = 99")
    assert nothing == CommitResult("delete", None) and table.snapshot_id == 4
    assert table.update({"tag": "'z'"}, "id = 99").snapshot_id is None

    assert as_model(table.read(snapshot_id=1)) == sorted([(1, 10, "a", "x"), (2, 20, "b", "x"),
                                                          (3, 30, "a", "y"), (4, None, None, "y")])
    assert table.read("id = 2", columns=["tag", "id"]).to_pylist() == [{"tag": "b", "id": 2}]
    assert table.last_scan_report is not None and table.last_scan_report.rows_returned == 1


def test_overwrite_then_delete_and_update_work(table: paimon_index.Table) -> None:
    """Issue 11 item 3: after an overwrite of a table with deletion vectors, DELETE/UPDATE failed."""
    table.write(rows((1, 1, "a", "x"), (2, 2, "b", "y")))
    table.delete("id = 1")
    # Paimon's default dynamic partition overwrite: only partition x (the data's) is replaced.
    result = table.write(rows((5, 5, "e", "x"), (6, 6, "f", "x")), mode="overwrite")
    assert (result.operation, result.files_removed, result.files_added) == ("overwrite", 1, 1)
    assert index_entries(table.paimon_table, latest_snapshot(table.paimon_table), "DELETION_VECTORS") == []
    check(table, [(2, 2, "b", "y"), (5, 5, "e", "x"), (6, 6, "f", "x")])
    assert table.delete("id = 5").rows_affected == 1
    assert table.update({"score": "score * 10"}, "id = 6").rows_affected == 1
    check(table, [(2, 2, "b", "y"), (6, 60, "f", "x")])
    table.alter_options(set={"dynamic-partition-overwrite": "false"})
    table.write(rows((7, 7, "g", "z")), mode="overwrite")  # static: the whole table
    check(table, [(7, 7, "g", "z")])
    assert table.delete("id = 7").rows_affected == 1
    check(table, [])


def test_empty_write_commits_nothing_and_says_so(table: paimon_index.Table) -> None:
    """Issue 11 item 6: write_arrow returned the latest snapshot's id when it committed nothing."""
    from paimon_index.table.write import write_arrow

    table.write(rows((1, 1, "a", "x")))
    assert table.write(SCHEMA.empty_table()) == CommitResult("append", None)
    assert write_arrow(table.paimon_table, SCHEMA.empty_table()) is None
    assert table.snapshot_id == 1


def test_errors_are_project_errors_naming_what(tmp_path: Path, table: paimon_index.Table) -> None:
    with pytest.raises(TableNotFoundError, match=r"db\.missing"):
        paimon_index.open_table(str(tmp_path), "db.missing")
    with pytest.raises(TableExistsError, match="exists already"):
        paimon_index.create_table(str(tmp_path), "db.t", SCHEMA)
    # a bare string would be one column per letter (before: TableError "'NoneType' object is not
    # iterable" for None, "no column 'i'" for "id")
    with pytest.raises(InvalidOptionError, match=r"primary_keys must be a list .* \(write \['id'\]\)"):
        paimon_index.create_table(str(tmp_path), "db.s", SCHEMA, primary_keys="id")
    assert paimon_index.create_table(str(tmp_path), "db.n", SCHEMA, primary_keys=None,
                                     partition_keys=None).paimon_table.primary_keys == []
    with pytest.raises(DataError, match="no column 'score'"):
        table.write(pa.table({"id": [1], "tag": ["a"], "dt": ["x"]}))
    with pytest.raises(DataError, match="do not fit"):
        table.write(pa.table({"id": ["not a number"], "score": [1], "tag": ["a"], "dt": ["x"]}))
    with pytest.raises(InvalidOptionError, match="write mode"):
        table.write(rows((1, 1, "a", "x")), mode="upsert")
    table.write(rows((1, 1, "a", "x")))
    with pytest.raises(InvalidOptionError, match="unknown column 'nope'"):
        table.update({"nope": 1}, "id = 1")
    with pytest.raises(InvalidPredicateError, match="unknown column 'nope'"):
        table.update({"score": "nope + 1"}, "id = 1")
    with pytest.raises(InvalidPredicateError, match=r"unsupported function sqrt\(\)"):
        table.update({"score": "sqrt(score)"}, "id = 1")
    with pytest.raises(DataError, match="division by zero"):
        table.update({"score": "score / 0"}, "id = 1")
    with pytest.raises(DataError, match="overflow"):
        table.update({"score": "score + 2147483647"}, "id = 1")
    with pytest.raises(TableError, match="no snapshot 7"):
        table.read(snapshot_id=7)
    with pytest.raises(InvalidOptionError, match="unknown columns"):
        table.read(columns=["nope"])
    with pytest.raises(TableError, match="primary-key"):
        table.upsert(rows((1, 1, "a", "x")))
    check(table, [(1, 1, "a", "x")])  # nothing above changed the table


def test_a_refused_delete_is_a_concurrent_change_error(table: paimon_index.Table) -> None:
    from paimon_index.table.row_level import _mark_all, _matching_rows, plan_row_change
    from paimon_index.table.transaction import Transaction

    table.write(rows((1, 1, "a", "x"), (2, 2, "b", "x")))
    paimon = table.paimon_table
    plan = plan_row_change(paimon)
    txn = Transaction(paimon, plan.snapshot, operation="delete")
    _mark_all(plan, _matching_rows(paimon, plan, "id = 1"), txn)
    table.write(rows((3, 3, "c", "x")))
    with pytest.raises(ConcurrentChangeError, match="planned on snapshot 1"):
        txn.commit()
    check(table, [(1, 1, "a", "x"), (2, 2, "b", "x"), (3, 3, "c", "x")])


def test_options_indexes_and_rewrite(table: paimon_index.Table) -> None:
    table.write(rows((1, 1, "a", "x"), (2, 2, "b", "y")))
    before = {(r["column"], r["index_type"]) for r in table.file_indexes().to_pylist()}
    assert before == {("id", "bloom-filter"), ("tag", "bitmap")}
    table.alter_options(set={"file-index.bitmap.columns": "tag,score"})
    result = table.rewrite_file_index()
    assert result.operation == "rewrite_file_index" and result.snapshot_id == 2
    assert result.files_added == result.files_removed == 2  # each file re-added with its new index
    after = {(r["column"], r["index_type"]) for r in table.file_indexes().to_pylist()}
    assert after == before | {("score", "bitmap")}
    assert table.rewrite_file_index().snapshot_id is None  # up to date: nothing committed
    check(table, [(1, 1, "a", "x"), (2, 2, "b", "y")])
    table.alter_options(remove=["file-index.bitmap.columns"])
    assert "file-index.bitmap.columns" not in table.paimon_table.options.options.to_map()


def test_expire_snapshots(table: paimon_index.Table) -> None:
    for i in range(3):
        table.write(rows((i, i, "a", "x")))
    result = table.expire_snapshots(retain_last=1)
    assert result.expired_snapshots == (1, 2)
    check(table, [(0, 0, "a", "x"), (1, 1, "a", "x"), (2, 2, "a", "x")])


def test_remove_orphan_files(table: paimon_index.Table) -> None:
    pytest.importorskip("paimon_index.table.maintenance")
    table.write(rows((1, 1, "a", "x")))
    bucket = next(Path(table.paimon_table.table_path).glob("dt=x/bucket-0"))
    orphan = bucket / "data-orphan-0.parquet"
    orphan.write_bytes(b"left by a crashed writer")
    old = time.time() - 3 * 24 * 3600
    os.utime(orphan, (old, old))
    result = table.remove_orphan_files(older_than=time.time() - 24 * 3600)
    assert any(str(path).endswith("data-orphan-0.parquet") for path in result.deleted_files)
    assert not orphan.exists()
    check(table, [(1, 1, "a", "x")])


PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])


def test_primary_key_table_verbs_follow_the_model(tmp_path: Path) -> None:
    table = paimon_index.create_table(str(tmp_path), "db.pk", PK_SCHEMA, primary_keys=["id"],
                                      options={"bucket": "2", "deletion-vectors.enabled": "true"})
    model: dict[int, tuple] = {}

    def pk_check() -> None:
        got = sorted(tuple(r.values()) for r in table.read().to_pylist())
        assert got == sorted((k, *v) for k, v in model.items())

    assert table.upsert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "n": [1, 2, 3]},
                                 schema=PK_SCHEMA)).rows_affected == 3
    model.update({1: ("a", 1), 2: ("b", 2), 3: ("c", 3)})
    pk_check()
    table.write(pa.table({"id": [2, 4], "v": ["B", "d"], "n": [20, 4]}, schema=PK_SCHEMA))  # append = upsert
    model.update({2: ("B", 20), 4: ("d", 4)})
    pk_check()
    result = table.update({"n": "n * 100", "v": "concat(v, '+')"}, "id <= 2")
    assert result.rows_affected == 2
    model.update({1: ("a+", 100), 2: ("B+", 2000)})
    pk_check()
    with pytest.raises(InvalidOptionError, match="primary-key columns"):
        table.update({"id": 9}, "id = 1")
    assert table.delete("v = 'c'").rows_affected == 1
    del model[3]
    pk_check()
    assert table.compact(full=True).snapshot_id is not None
    pk_check()
    assert as_model_pk(table.read("id = 4", columns=["v"])) == [("d",)]


def as_model_pk(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


def test_a_missing_data_file_is_a_table_error_naming_it(table: paimon_index.Table) -> None:
    table.write(rows((1, 1, "a", "x")))
    (data_file,) = Path(table.paimon_table.table_path).glob("dt=x/bucket-0/*.parquet")
    data_file.unlink()
    with pytest.raises(TableError, match=f"a file it lists is missing: .*{data_file.name}$"):
        table.read()


def test_primary_key_table_without_deletion_vectors(tmp_path: Path) -> None:
    """Plain primary-key tables: writes append (readers merge by key), reads merge; NULL keys refused."""
    table = paimon_index.create_table(str(tmp_path), "db.pk", PK_SCHEMA, primary_keys=["id"],
                                      options={"bucket": "1"})
    table.write(pa.table({"id": [1, 2], "v": ["a", "b"], "n": [1, 2]}, schema=PK_SCHEMA))
    table.upsert(pa.table({"id": [2], "v": ["B"], "n": [20]}, schema=PK_SCHEMA))
    assert sorted(tuple(r.values()) for r in table.read().to_pylist()) == [(1, "a", 1), (2, "B", 20)]
    assert [r["v"] for r in table.read("n > 5").to_pylist()] == ["B"]
    assert table.delete("id = 1").rows_affected == 1  # a -D row, merged on read (merge_on_read.py)
    assert sorted(tuple(r.values()) for r in table.read().to_pylist()) == [(2, "B", 20)]
    with pytest.raises(DataError, match=r"table db\.pk: the rows do not fit the table: .*contains nulls"):
        table.write(pa.table({"id": [None], "v": ["x"], "n": [0]}))
    assert table.snapshot_id == 3
    leftovers = [p for p in Path(table.paimon_table.table_path).rglob("*.parquet")]
    assert len(leftovers) == 3  # the failed write left no data file behind


_op = st.one_of(
    st.tuples(st.just("append"), st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["x", "y"])),
                                          min_size=0, max_size=6)),
    st.tuples(st.just("overwrite"), st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["x", "y"])),
                                             min_size=1, max_size=4)),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("update"), st.integers(0, 30)),
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=6))
def test_random_verb_sequences_follow_the_model(tmp_path_factory: pytest.TempPathFactory, ops: list) -> None:
    """Any sequence of append / overwrite (dynamic: the data's partitions) / delete / update
    leaves exactly the model's rows, as our read and pypaimon's read both see them."""
    table = paimon_index.create_table(str(tmp_path_factory.mktemp("wh")), "db.t", SCHEMA,
                                      partition_keys=["dt"], options=APPEND_OPTIONS)
    model: list[tuple] = []
    for op, arg in ops:
        if op == "append":
            new = [(i, i, "t", dt) for i, dt in arg]
            assert table.write(rows(*new)).rows_affected == len(new)
            model += new
        elif op == "overwrite":
            new = [(i, i, "t", dt) for i, dt in arg]
            table.write(rows(*new), mode="overwrite")
            replaced = {dt for _, dt in arg}
            model = [r for r in model if r[3] not in replaced] + new
        elif op == "delete":
            expected = sum(r[0] < arg for r in model)
            assert table.delete(f"id < {arg}").rows_affected == expected
            model = [r for r in model if r[0] >= arg]
        else:
            expected = sum(r[0] >= arg for r in model)
            result = table.update({"score": "score + 1", "tag": "'u'"}, f"id >= {arg}")
            assert result.rows_affected == expected
            model = [(i, s + 1, "u", dt) if i >= arg else (i, s, t, dt) for i, s, t, dt in model]
        check(table, model)


def _spark_key(value: object, ascending: bool, nulls_first: bool) -> tuple:
    """Spark's ORDER BY for one key as a Python sort key (NULLs placed, NaN greatest, -0.0 = 0.0)."""
    import math

    if value is None:
        return (0 if nulls_first else 2,)
    if isinstance(value, float):
        rank = (1, math.inf) if math.isnan(value) else (0, value + 0.0)
        rank = rank if ascending else (-rank[0], -rank[1])
        return (1, rank)
    return (1, value if ascending else -value)


@given(st.lists(st.tuples(st.one_of(st.none(), st.floats(allow_nan=True, width=64)),
                          st.one_of(st.none(), st.integers(-3, 3))), min_size=1, max_size=40),
       st.sampled_from(["f", "f DESC", "f NULLS LAST", "f DESC NULLS FIRST", "i DESC, f",
                        "f, i DESC NULLS FIRST"]),
       st.integers(0, 10))
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_read_order_by_limit_follows_spark_ordering(tmp_path_factory, values, order_by, limit) -> None:
    from paimon_index.sql import parse_order_by

    warehouse = str(tmp_path_factory.mktemp("wh"))
    schema = pa.schema([("id", pa.int64()), ("f", pa.float64()), ("i", pa.int32())])
    table = paimon_index.create_table(warehouse, "db.s", schema, options={
        "file-index.range-bitmap.columns": "f,i"})
    rows = pa.table({"id": pa.array(range(len(values)), pa.int64()),
                     "f": pa.array([v[0] for v in values], pa.float64()),
                     "i": pa.array([v[1] for v in values], pa.int32())})
    table.write(rows.slice(0, len(values) // 2))
    table.write(rows.slice(len(values) // 2))
    got = table.read(order_by=order_by, limit=limit)
    orders = parse_order_by(order_by)
    model = sorted(rows.to_pylist(), key=lambda r: tuple(
        _spark_key(r[o.column], o.ascending, o.nulls_first) for o in orders))
    # Rows tied on every key may come in any order: compare the keys, then the multiset of ids per key.
    want_keys = [tuple(_spark_key(r[o.column], o.ascending, o.nulls_first) for o in orders) for r in model]
    got_keys = [tuple(_spark_key(r[o.column], o.ascending, o.nulls_first) for o in orders)
                for r in got.to_pylist()]
    assert got_keys == want_keys[:limit]


def test_catalog_options_are_checked_and_forwarded(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    table = paimon_index.create_table(warehouse, "db.c", SCHEMA,
                                      catalog_options={"fs.s3.region": "us-east-1"})
    assert table.catalog_options == {"fs.s3.region": "us-east-1"}
    with pytest.raises(InvalidOptionError, match="'warehouse' is the warehouse argument"):
        paimon_index.open_table(warehouse, "db.c", catalog_options={"warehouse": "/elsewhere"})


def test_primary_key_table_reads_the_snapshot_asked_for(tmp_path: Path) -> None:
    """Time travel on a primary-key table (it used to read the latest snapshot whatever was asked)."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    table = paimon_index.create_table(str(tmp_path), "db.pk", schema, primary_keys=["k"],
                                      options={"bucket": "1", "deletion-vectors.enabled": "true"})
    first = table.upsert(pa.table({"k": pa.array([1, 2], pa.int64()), "v": ["a", "b"]})).snapshot_id
    table.upsert(pa.table({"k": pa.array([1], pa.int64()), "v": ["c"]}))
    assert sorted(table.read(snapshot_id=first).to_pylist(), key=lambda r: r["k"]) == \
        [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}]
    assert sorted(table.read().to_pylist(), key=lambda r: r["k"]) == [{"k": 1, "v": "c"}, {"k": 2, "v": "b"}]


def test_primary_key_update_is_refused_when_a_delete_lands_after_its_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """UPDATE reads the matching rows, then upserts them: a DELETE committed in between must refuse the
    UPDATE, not be undone by it (found by the reliability suite: deleted keys came back)."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    table = paimon_index.create_table(str(tmp_path), "db.pk", schema, primary_keys=["k"],
                                      options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.upsert(pa.table({"k": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    other = paimon_index.open_table(str(tmp_path), "db.pk")
    read = paimon_index.Table._read  # the UPDATE's read of its planned snapshot

    def read_then_another_writer_deletes(self: paimon_index.Table, *args: Any, **kwargs: Any) -> Any:
        rows = read(self, *args, **kwargs)
        monkeypatch.setattr(paimon_index.Table, "_read", read)  # once: the UPDATE's own read
        assert other.delete("k = 1").snapshot_id is not None
        return rows

    monkeypatch.setattr(paimon_index.Table, "_read", read_then_another_writer_deletes)
    with pytest.raises(ConcurrentChangeError):
        table.update({"v": "'z'"}, "k >= 1")
    assert table.read().to_pylist() == [{"k": 2, "v": "b"}]
