"""Temporary views over Paimon tables through ``paimon.sql`` (spark/sql/views.py).

Before session 32 ``CREATE TEMPORARY VIEW v AS SELECT ... FROM <a Paimon table>`` was refused ("not
supported on Paimon tables") where Paimon's connector takes it, and a Spark view over no Paimon
table could not be created while the current database was a Paimon one. Each statement's answer is
checked against a model of the rows (in CI) and against the same statements through Paimon's own
Spark connector on its own copy (slow).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import paimon_index.spark
import paimonsql
from paimon_index.errors import SqlError

pytestmark = pytest.mark.spark

#: A statement both sides refuse.
ERROR: list[tuple[Any, ...]] = [("error",)]
#: (statement, the rows it answers: None for a statement whose rows are not compared, ERROR)
STEPS: list[tuple[str, list[tuple[Any, ...]] | None]] = [
    ("CREATE DATABASE db", None),
    ("USE db", None),
    ("CREATE TABLE t (id BIGINT NOT NULL, s STRING, v INT) TBLPROPERTIES ('primary-key' = 'id', "
     "'bucket' = '2', 'deletion-vectors.enabled' = 'true', 'file-index.bitmap.columns' = 's')", None),
    ("CREATE TABLE a (id BIGINT, tag STRING) TBLPROPERTIES ('deletion-vectors.enabled' = 'true')", None),
    ("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)", None),
    ("INSERT INTO a VALUES (2, 'x'), (3, 'y'), (4, 'z')", None),
    ("CREATE TEMPORARY VIEW big AS SELECT * FROM t WHERE v > 1", None),
    ("SELECT count(*) FROM big", [(2,)]),
    # the view reads the table as it is at each statement
    ("INSERT INTO t VALUES (4, 'd', 4), (2, 'b2', 20)", None),
    ("SELECT * FROM big ORDER BY id", [(2, "b2", 20), (3, "c", 3), (4, "d", 4)]),
    ("SELECT x.id FROM big AS x WHERE x.s = 'd'", [(4,)]),
    ("SELECT b.id, a.tag FROM big b JOIN a ON a.id = b.id ORDER BY b.id", [(2, "x"), (3, "y"), (4, "z")]),
    ("WITH big AS (SELECT 42 AS id) SELECT * FROM big", [(42,)]),  # a CTE shadows the view
    ("CREATE TEMPORARY VIEW named (k, name) AS SELECT id, s FROM big WHERE id > 2", None),
    ("SELECT * FROM named ORDER BY k", [(3, "c"), (4, "d")]),
    ("SELECT k FROM named WHERE name IN (SELECT s FROM t WHERE v = 3)", [(3,)]),
    ("DELETE FROM a WHERE id IN (SELECT k FROM named)", None),
    ("CREATE OR REPLACE TEMPORARY VIEW big AS SELECT id FROM t WHERE v = 1", None),
    ("SELECT * FROM big", [(1,)]),
    # a view reads the views it names as they are at each use: `big` has no `s` now
    ("SELECT * FROM named ORDER BY k", ERROR),
    ("CREATE OR REPLACE TEMPORARY VIEW big AS SELECT * FROM named", ERROR),  # big -> named -> big
    ("SELECT * FROM a", [(2, "x")]),
    ("CREATE TEMPORARY VIEW plain AS SELECT 7 AS seven", None),  # Spark's own view
    ("SELECT * FROM plain", [(7,)]),
    ("DROP VIEW named", None),
    ("DROP VIEW plain", None),
]


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in df.collect()]


def test_temporary_views_read_their_tables_at_each_statement(spark: Any, tmp_path: Path) -> None:
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path / "ours"))
    for text, expected in STEPS:
        if expected is ERROR:
            with pytest.raises(Exception, match=r"UNRESOLVED_COLUMN|RECURSIVE_VIEW"):
                _rows(paimon.sql(text))
            continue
        got = _rows(paimon.sql(text))
        if expected is not None:
            assert sorted(got, key=repr) == sorted(expected, key=repr), text
    assert set(paimon.views) == {"big"}  # named and plain dropped
    with pytest.raises(Exception, match=r"TABLE_OR_VIEW_NOT_FOUND|not found"):
        paimon.sql("SELECT * FROM plain").collect()


def test_what_a_view_cannot_do(spark: Any, tmp_path: Path) -> None:
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path / "w"))
    paimon.sql("CREATE DATABASE db")
    paimon.sql("USE db")
    paimon.sql("CREATE TABLE t (id BIGINT, s STRING)")
    paimon.sql("INSERT INTO t VALUES (1, 'a')")
    paimon.sql("CREATE TEMPORARY VIEW v AS SELECT * FROM t")
    with pytest.raises(SqlError, match="already exists"):
        paimon.sql("CREATE TEMPORARY VIEW v AS SELECT id FROM t")
    with pytest.raises(SqlError, match="cannot be written to"):
        paimon.sql("INSERT INTO v VALUES (2, 'b')")
    with pytest.raises(SqlError, match="not supported"):
        paimon.sql("SELECT * FROM v VERSION AS OF 1")
    with pytest.raises(SqlError, match="TEMPORARY VIEW"):
        paimon.sql("CREATE VIEW p AS SELECT * FROM t")
    with pytest.raises(Exception, match="INVALID_TEMP_OBJ_QUALIFIER"):  # Spark's parser refuses it
        paimon.sql("CREATE TEMPORARY VIEW db.w AS SELECT * FROM t")
    assert _rows(paimon.sql("DESCRIBE v")) == [("id", "bigint", None), ("s", "string", None)]
    explained = _rows(paimon.sql("EXPLAIN SELECT * FROM v WHERE s = 'a'"))[0][0]
    assert "db.t AS t: planned read" in explained  # the view's table, planned in the statement


@pytest.mark.slow
def test_same_answers_as_paimons_connector(spark: Any, tmp_path: Path) -> None:
    """The same statements through Paimon's connector, on a warehouse of its own."""
    statements = [text for text, _ in STEPS]
    theirs = paimonsql.run(tmp_path / "theirs", statements)
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path / "ours"))
    for (text, expected), their in zip(STEPS, theirs, strict=True):
        if expected is ERROR:
            assert not their["ok"], (text, their)
            with pytest.raises(Exception):  # noqa: B017  (which error: the test above)
                _rows(paimon.sql(text))
            continue
        assert their["ok"], (text, their)
        ours = _rows(paimon.sql(text))
        if expected is not None:
            assert sorted(ours, key=repr) == sorted((tuple(r) for r in their["rows"]), key=repr), text
