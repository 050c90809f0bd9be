"""The rows a DELETE / UPDATE / MERGE of an append table marks, read by Spark's Parquet reader with
the metadata columns (``read_planned(metadata=True)``: each row's data file, position, partition and
bucket).

The positions are checked against pyarrow reading the data files themselves, the whole frame
against the ``paimon_index`` source's metadata columns, and the rows after each change against a
Python model and Apache Paimon's Java read -- on a partitioned, bucketed table whose data file names
and partition values hold the characters a URI escapes (space, ``%``, ``+``, ``[``), with
deletion vectors and a schema change.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from sqlglot import parse_one

import paimon_index.spark
from javaoracle import java_oracle
from paimon_index.errors import PaimonIndexError
from paimon_index.spark.datasource import METADATA, SOURCE_NAME
from paimon_index.spark.options import SNAPSHOT_ID, WAREHOUSE
from paimon_index.spark.planned import read_planned
from paimon_index.spark.sql.query import OwnConjuncts, own_conjuncts
from paimon_index.table.api import open_table
from paimon_index.table.files import FILE_PATH_COLUMN, METADATA_COLUMNS, ROW_INDEX_COLUMN
from paimon_index.table.paimon import latest_snapshot
from paimon_index.table.row_level import BucketPlan, mark_positions

pytestmark = pytest.mark.spark

#: Characters a URI path escapes (space, %, [) or keeps (+), in file names and partition values.
PREFIX = "da ta+%41[x]-"
PARTITIONS = ("a b", "x+y%25")


def _model(n: int) -> list[tuple[int, str, str]]:
    return [(i, f"s{i % 4}", PARTITIONS[i % 2]) for i in range(n)]


def _rows(df: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in columns) for r in df.select(*columns).collect())


def _java_rows(warehouse: str) -> list[tuple[Any, ...]]:
    java = java_oracle().batch([{"cmd": "read", "warehouse": warehouse, "table": "db.t", "rows": "true"}])
    return sorted(tuple(r) for r in java[0]["row_values"])


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> tuple[Any, str]:
    warehouse = str(tmp_path / "wh")
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    paimon.sql("CREATE DATABASE db")
    paimon.sql("CREATE TABLE db.t (id INT, s STRING, p STRING) PARTITIONED BY (p) TBLPROPERTIES "
               f"('deletion-vectors.enabled' = 'true', 'bucket' = '2', 'bucket-key' = 'id', "
               f"'data-file.prefix' = '{PREFIX}', 'file-index.bitmap.columns' = 's')")
    rows = _model(400)
    for first in (0, 200):  # two commits: two files per bucket
        chunk = rows[first:first + 200]
        paimon.sql("INSERT INTO db.t VALUES " + ", ".join(f"({i}, '{s}', '{p}')" for i, s, p in chunk))
    return paimon, warehouse


def test_positions_are_the_data_files_own_and_equal_the_sources(spark: Any, table: tuple[Any, str]) -> None:
    paimon, warehouse = table
    paimon.sql("DELETE FROM db.t WHERE id % 7 = 0")  # vectors in every bucket
    snapshot = latest_snapshot(open_table(warehouse, "db.t").paimon_table).id
    planned = read_planned(spark, "db.t", warehouse=warehouse, snapshot_id=snapshot, small_read_bytes=0,
                           metadata=True)
    assert planned.fallback is None
    df = planned.dataframe
    assert df.columns == ["id", "s", "p", *METADATA_COLUMNS]
    got = _rows(df, df.columns)
    assert len(got) == 400 - len(range(0, 400, 7))
    # every (file, position) holds the row's id in the data file itself
    names = set()
    for path in {r[3] for r in got}:
        names.add(Path(path).name)
        ids = pq.ParquetFile(path).read(columns=["id"])["id"].to_numpy()
        mine = [(r[0], r[4]) for r in got if r[3] == path]
        assert all(ids[position] == i for i, position in mine)
    assert names == {f.name for f in planned.plan.files} and all(n.startswith(PREFIX) for n in names)
    assert {r[5] for r in got} == {f"p={p}" for p in PARTITIONS} and {r[6] for r in got} == {0, 1}
    source = (spark.read.format(SOURCE_NAME).option(WAREHOUSE, warehouse).option(METADATA, "true")
              .option(SNAPSHOT_ID, str(snapshot)).load("db.t"))
    assert _rows(source, df.columns) == got


def test_the_plans_files_go_in_relations_a_task_can_carry(spark: Any, table: tuple[Any, str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The metadata columns join each row's file with one row per planned file, broadcast: a
    table of many thousand files puts them in several local relations, each task's share within
    ``LOCAL_RELATION_TASK_BYTES``, and the rows are those of one relation."""
    from paimon_index.spark import _connect

    paimon, warehouse = table
    paimon.sql("DELETE FROM db.t WHERE id % 7 = 0")
    one = read_planned(spark, "db.t", warehouse=warehouse, small_read_bytes=0, metadata=True).dataframe
    monkeypatch.setattr(_connect, "LOCAL_RELATION_TASK_BYTES", 300)  # ~250 bytes a file's row here
    split = read_planned(spark, "db.t", warehouse=warehouse, small_read_bytes=0, metadata=True).dataframe
    leaves = split._jdf.queryExecution().optimizedPlan().collectLeaves()
    relations = [leaves.apply(i) for i in range(leaves.size())
                 if leaves.apply(i).getClass().getSimpleName() == "LocalRelation"]
    assert len(relations) > 2
    assert _rows(split, split.columns) == _rows(one, one.columns)


def test_delete_update_merge_by_position_equal_a_model_and_java(spark: Any, table: tuple[Any, str]) -> None:
    paimon, warehouse = table
    model = {i: (i, s, p) for i, s, p in _model(400)}

    def check() -> None:
        assert _rows(paimon.sql("SELECT * FROM db.t"), ["id", "s", "p"]) == sorted(model.values())

    paimon.sql("DELETE FROM db.t AS x WHERE x.s = 's1' AND id % 3 = 0")
    model = {i: r for i, r in model.items() if not (r[1] == "s1" and i % 3 == 0)}
    check()
    # Schema changes commit no snapshot: the UPDATE plans on a snapshot written under the old names.
    # (An indexed column is renamed as Paimon allows it: out of the index option, renamed, back in.)
    paimon.sql("ALTER TABLE db.t UNSET TBLPROPERTIES ('file-index.bitmap.columns')")
    paimon.sql("ALTER TABLE db.t RENAME COLUMN s TO status")
    paimon.sql("ALTER TABLE db.t SET TBLPROPERTIES ('file-index.bitmap.columns' = 'status')")
    paimon.sql("UPDATE db.t SET status = concat(status, '!') WHERE id BETWEEN 50 AND 149 AND p = 'a b'")
    model = {i: (i, r[1] + "!" if 50 <= i <= 149 and r[2] == "a b" else r[1], r[2]) for i, r in model.items()}
    check_names = ["id", "status", "p"]
    assert _rows(paimon.sql("SELECT * FROM db.t"), check_names) == sorted(model.values())
    paimon.sql("MERGE INTO db.t AS t USING (SELECT id FROM db.t WHERE status = 's2') AS src ON t.id = src.id "
               "WHEN MATCHED THEN DELETE")
    model = {i: r for i, r in model.items() if r[1] != "s2"}
    assert _rows(paimon.sql("SELECT * FROM db.t"), check_names) == sorted(model.values())
    assert _java_rows(warehouse) == sorted(model.values())


def test_changes_by_position_in_typed_partitions_equal_a_model_and_java(spark: Any, tmp_path: Path) -> None:
    """A mark task rebuilds its bucket's partition row from plain values (it gets no pypaimon
    object): DATE before 1970, DECIMAL, TIMESTAMP_NTZ with microseconds and escaped strings as
    partition values, changed by Spark's DELETE / UPDATE / MERGE and the Python DELETE, then read
    by Java Paimon."""
    warehouse = str(tmp_path / "wh")
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    paimon.sql("CREATE DATABASE db")
    paimon.sql("CREATE TABLE db.t (id BIGINT, v STRING, d DATE, c DECIMAL(10,2), s STRING, ts TIMESTAMP_NTZ) "
               "PARTITIONED BY (d, c, s, ts) TBLPROPERTIES ('deletion-vectors.enabled' = 'true', "
               "'bucket' = '-1', 'file-index.bitmap.columns' = 'v')")
    paimon.sql("INSERT INTO db.t SELECT id, concat('v', id % 7), "
               "date_add(DATE'1969-12-30', CAST(id % 3 AS INT)), CAST(id % 2 AS DECIMAL(10,2)) + 0.25, "
               "CASE WHEN id % 2 = 0 THEN 'a/b c%' ELSE 'é=x' END, "
               "TIMESTAMP_NTZ'2020-01-01 00:00:00.123456' + make_interval(0, 0, 0, 0, 0, 0, id % 2) "
               "FROM range(3000)")
    paimon.sql("DELETE FROM db.t WHERE id % 5 = 0")
    paimon.sql("UPDATE db.t SET v = 'u' WHERE id % 11 = 1")
    paimon.sql("MERGE INTO db.t t USING (SELECT id FROM range(2990, 3010)) src ON t.id = src.id "
               "WHEN MATCHED THEN DELETE")
    paimon_index.open_table(warehouse, "db.t").delete("id % 13 = 2")
    model = {i: "u" if i % 11 == 1 else f"v{i % 7}" for i in range(3000)
             if i % 5 and not 2990 <= i < 3010 and i % 13 != 2}
    ours = paimon.sql("SELECT id, v, d, c, s FROM db.t").collect()
    assert sorted((r["id"], r["v"]) for r in ours) == sorted(model.items())
    assert {(r["d"].isoformat(), str(r["c"]), r["s"]) for r in ours if r["id"] in (6, 7)} == {
        ("1969-12-30", "0.25", "a/b c%"), ("1969-12-31", "1.25", "é=x")}
    assert sorted((int(r[0]), r[1]) for r in _java_rows(warehouse)) == sorted(model.items())


def test_a_row_of_a_file_the_plan_does_not_hold_fails_the_read(spark: Any, table: tuple[Any, str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The metadata columns come from joining each row's file name with the plan's files: a row no
    planned file claims (a name decoded wrong) must fail, never fall out of the change."""
    from paimon_index.spark import planned as planned_module

    _, warehouse = table
    plan = read_planned(spark, "db.t", warehouse=warehouse, small_read_bytes=0, metadata=True).plan
    real = planned_module._with_metadata
    monkeypatch.setattr(planned_module, "_with_metadata",
                        lambda spark, df, files, keys, names: real(spark, df, files[1:], keys, names))
    df = read_planned(spark, "db.t", warehouse=warehouse, small_read_bytes=0, metadata=True).dataframe
    with pytest.raises(Exception, match=re.escape(plan.files[0].name)):
        df.collect()


def test_a_mark_naming_a_file_the_bucket_does_not_hold_is_refused() -> None:
    """Positions of a file the snapshot does not hold in that bucket would make a vector no read
    applies: the rows would stay. Refused before any vector file is written (no store needed)."""
    bucket = BucketPlan(partition=(), bucket=0, vectors=(), index_dir="/nowhere", bitmap64=False,
                        live_files=frozenset({"data-1.parquet"}))
    with pytest.raises(PaimonIndexError, match=r"data-2\.parquet"):
        mark_positions(None, bucket, {"/t/bucket-0/data-1.parquet": np.array([0]),
                                "/t/bucket-0/data-2.parquet": np.array([1])})


@pytest.mark.parametrize(("where", "expected", "whole"), [
    ("x.a = 1 AND b > 2", "(a = 1) AND (b > 2)", True),
    ("a = 1 AND b IN (SELECT b FROM o)", "(a = 1)", False),   # a subquery: Spark alone
    ("a = 1 AND rand() < 0.5", "(a = 1)", False),             # evaluated twice would differ
    ("y.a = 1 OR b = 2", None, False),                        # another table's qualifier
    ("a = 1 OR c = 2", None, False),                          # c: not a column of the table
    ("A % 7 = 0", "(A % 7 = 0)", True),
])
def test_own_conjuncts_keep_what_holds_for_every_row_taken(where: str, expected: str | None,
                                                           whole: bool) -> None:
    """The conjuncts a DELETE/UPDATE may prune its read with, and whether they are its whole
    condition (then the rows its plan proves are the statement's)."""
    condition = parse_one(f"SELECT 1 FROM t AS x WHERE {where}", dialect="spark").args["where"].this
    assert own_conjuncts(condition, "x", frozenset({"a", "b"})) == OwnConjuncts(expected, whole)


def test_pinned_frame_of_an_empty_snapshot_has_the_metadata_columns(spark: Any, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    paimon.sql("CREATE DATABASE db")
    paimon.sql("CREATE TABLE db.t (id INT) TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    paimon.sql("INSERT INTO db.t VALUES (1), (2)")
    paimon.sql("DELETE FROM db.t WHERE id > 0")
    df = read_planned(spark, "db.t", "id > 5", warehouse=warehouse, metadata=True).dataframe
    assert df.columns == ["id", *METADATA_COLUMNS] and df.count() == 0
    assert df.schema[FILE_PATH_COLUMN].dataType.typeName() == "string"
    assert df.schema[ROW_INDEX_COLUMN].dataType.typeName() == "long"
