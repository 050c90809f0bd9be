"""CALL sys.<procedure>(...) and time travel through paimon.sql, against Paimon's connector: the same
call on two copies of one warehouse gives the same result row and leaves the same snapshots."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import paimon_index.spark
import paimonsql
from paimon_index.errors import SqlError, TableNotFoundError
from paimon_index.table.catalog import open_table
from paimon_index.table.maintenance import _snapshot_ids

pytestmark = pytest.mark.spark


def rows(df: Any) -> list[list[Any]]:
    return [list(r) for r in df.collect()]


def _three_snapshots(spark: Any, warehouse: Path) -> Any:
    paimon = paimon_index.spark.attach(spark, warehouse=str(warehouse))
    paimon.sql("CREATE DATABASE db")
    paimon.sql(
        "CREATE TABLE db.a (id INT, name STRING) TBLPROPERTIES ('bucket' = '-1', "
        "'file-index.bloom-filter.columns' = 'name')"
    )
    for i in range(3):
        paimon.table("db.a").write(spark.sql(f"SELECT {i} AS id, 'n{i}' AS name"))
        time.sleep(0.01)
    return paimon


@pytest.fixture()
def paimon(spark: Any, tmp_path: Path) -> Any:
    return _three_snapshots(spark, tmp_path / "w")


def test_tags_rollback_and_time_travel(paimon: Any) -> None:
    assert rows(paimon.sql("CALL sys.create_tag(table => 'db.a', tag => 't1', snapshot => 1)")) == [[True]]
    assert rows(paimon.sql("CALL sys.create_tag('db.a', 't3')")) == [[True]]  # positional, latest snapshot
    assert [r[:2] for r in rows(paimon.sql("SELECT tag_name, snapshot_id FROM db.`a$tags` ORDER BY 1"))] == [
        ["t1", 1],
        ["t3", 3],
    ]
    assert rows(paimon.sql("SELECT id FROM db.a VERSION AS OF 't1'")) == [[0]]
    assert rows(paimon.sql("SELECT count(*) FROM db.a VERSION AS OF 2")) == [[2]]
    assert rows(paimon.sql("SELECT count(*) FROM db.a TIMESTAMP AS OF '2099-01-01 00:00:00'")) == [[3]]
    with pytest.raises(SqlError, match=r"no snapshot was committed at or before"):
        paimon.sql("SELECT * FROM db.a TIMESTAMP AS OF '2000-01-01 00:00:00'")
    with pytest.raises(
        SqlError, match=r"db.a VERSION AS OF 99: snapshot 99 does not exist \(available snapshots: 1..3\)"
    ):
        paimon.sql("SELECT * FROM db.a VERSION AS OF 99")
    with pytest.raises(SqlError, match=r"tag 'nosuch' does not exist"):
        paimon.sql("SELECT * FROM db.a VERSION AS OF 'nosuch'")
    assert rows(paimon.sql("CALL sys.rollback(table => 'db.a', version => 't1')")) == [[3, 1]]
    assert rows(paimon.sql("SELECT id FROM db.a")) == [[0]]
    assert rows(paimon.sql("CALL sys.delete_tag(table => 'db.a', tag => 't1,t3')")) == [[True]]
    assert rows(paimon.sql("SELECT * FROM db.`a$tags`")) == []
    with pytest.raises(SqlError, match=r"exactly one of version / snapshot / tag"):
        paimon.sql("CALL sys.rollback(table => 'db.a', version => '1', snapshot => 1)")


def test_argument_errors(paimon: Any) -> None:
    with pytest.raises(SqlError, match=r"procedure sys.nosuch is not supported; known: compact, create_tag"):
        paimon.sql("CALL sys.nosuch(table => 'db.a')")
    with pytest.raises(SqlError, match=r"unknown argument 'tablex'; its arguments: table, partitions"):
        paimon.sql("CALL sys.compact(tablex => 'db.a')")
    with pytest.raises(SqlError, match=r"missing required argument"):
        paimon.sql("CALL sys.create_tag(table => 'db.a')")
    with pytest.raises(SqlError, match=r"retain_max expects INT"):
        paimon.sql("CALL sys.expire_snapshots(table => 'db.a', retain_max => 'x')")
    with pytest.raises(SqlError, match=r"retainMax \(1\) must not be less than retainMin \(10\)"):
        paimon.sql("CALL sys.expire_snapshots(table => 'db.a', retain_max => 1)")
    with pytest.raises(TableNotFoundError, match=r"db.nosuch"):
        paimon.sql("CALL sys.expire_snapshots(table => 'db.nosuch', retain_max => 1)")


def test_expire_remove_orphans_rewrite_index(paimon: Any) -> None:
    result = paimon.sql("CALL sys.expire_snapshots(table => 'db.a', retain_max => 2, retain_min => 1)")
    assert result.columns == ["deleted_snapshots_count"] and rows(result) == [[1]]
    assert _snapshot_ids(open_table(paimon.warehouse, "db.a")) == [2, 3]
    orphan = Path(paimon.warehouse) / "db.db" / "a" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"x" * 10)
    old = time.time() - 3 * 86400
    os.utime(orphan, (old, old))
    result = paimon.sql("CALL sys.remove_orphan_files(table => 'db.a', dry_run => true)")
    assert result.columns == ["deletedFileCount", "deletedFileTotalLenInBytes"] and rows(result) == [[1, 10]]
    assert orphan.exists()
    assert rows(paimon.sql("CALL sys.remove_orphan_files(table => 'db.a')")) == [[1, 10]]
    assert not orphan.exists()
    paimon.sql("ALTER TABLE db.a SET TBLPROPERTIES ('file-index.bitmap.columns' = 'id')")
    result = paimon.sql("CALL sys.rewrite_file_index(table => 'db.a')")
    assert result.columns == ["written_partitions", "written_indexes"] and rows(result) == [[1, 3]]


# ------------------------------------------------------------------------------------------------
# Against Paimon's connector: one warehouse, copied; the same CALLs on each copy
# ------------------------------------------------------------------------------------------------
CALLS = [
    "CALL sys.create_tag(table => 'db.a', tag => 't2', snapshot => 2)",
    "SELECT tag_name, snapshot_id, schema_id, record_count FROM db.`a$tags`",
    "SELECT id FROM db.a VERSION AS OF 't2' ORDER BY id",
    "SELECT id FROM db.a VERSION AS OF 1 ORDER BY id",
    "CALL sys.expire_snapshots(table => 'db.a', retain_max => 2, retain_min => 1)",
    "SELECT snapshot_id, schema_id, commit_kind, total_record_count, delta_record_count "
    "FROM db.`a$snapshots`",
    "CALL sys.rollback(table => 'db.a', version => 't2')",
    "SELECT snapshot_id FROM db.`a$snapshots`",
    "CALL sys.delete_tag(table => 'db.a', tag => 't2')",
    "CALL sys.remove_orphan_files(table => 'db.a', dry_run => true)",
    "SELECT id, name FROM db.a ORDER BY id",
]


@pytest.mark.slow
def test_same_results_and_states_as_paimons_connector(spark: Any, tmp_path: Path) -> None:
    ours = _three_snapshots(spark, tmp_path / "ours")
    shutil.copytree(tmp_path / "ours", tmp_path / "theirs")
    theirs = paimonsql.run(tmp_path / "theirs", CALLS)
    for statement, reference in zip(CALLS, theirs, strict=True):
        assert reference["ok"], reference
        df = ours.sql(statement)
        assert df.columns == reference["columns"], statement
        assert rows(df) == reference["rows"], statement
    assert _snapshot_ids(open_table(str(tmp_path / "ours"), "db.a")) == _snapshot_ids(
        open_table(str(tmp_path / "theirs"), "db.a")
    )
