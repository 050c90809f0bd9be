"""Merge engines (partial-update, aggregation) through Spark: SQL and the upsert job.

CI: a tiny sequence through ``paimon.sql`` (the upsert's tasks own their buckets: fixed buckets; a
dynamic-bucket table's assigners merge each key's rows, its writers merge in the old rows) against
expected rows worked out from Paimon's merge rules. Slow: the same SQL text through Apache Paimon's
own Spark connector (``paimon-sql.sh``) on twin tables in the same warehouse; then both sides read
both sides' tables, rows equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import paimon_index.spark
from paimon_index.errors import PaimonIndexError

pytestmark = pytest.mark.spark

AGG = ("CREATE TABLE db.{name} (k INT NOT NULL, s BIGINT, mx INT, l STRING, lv STRING, fv STRING) "
       "TBLPROPERTIES ('primary-key' = 'k', 'bucket' = '{bucket}', 'deletion-vectors.enabled' = 'true', "
       "'merge-engine' = 'aggregation', 'fields.s.aggregate-function' = 'sum', "
       "'fields.mx.aggregate-function' = 'max', 'fields.l.aggregate-function' = 'listagg', "
       "'fields.lv.aggregate-function' = 'last_value', 'fields.fv.aggregate-function' = 'first_value')")
PARTIAL = ("CREATE TABLE db.{name} (k INT NOT NULL, a STRING, b INT, c STRING) TBLPROPERTIES ("
           "'primary-key' = 'k', 'bucket' = '{bucket}', 'deletion-vectors.enabled' = 'true', "
           "'merge-engine' = 'partial-update')")
#: One key per row within an INSERT: the order of one key's rows inside a statement is Spark's.
AGG_STEPS = [
    "INSERT INTO db.{name} VALUES (1, 10, 5, 'a', 'x', 'f1'), (2, 20, NULL, 'b', NULL, NULL), "
    "(3, 1, 1, ' ', 'z', 'f3')",
    "INSERT INTO db.{name} VALUES (1, 5, 3, 'c', NULL, 'f9'), (2, NULL, 4, NULL, 'y', 'f2'), "
    "(4, 7, NULL, 'd', 'w', NULL)",
    "DELETE FROM db.{name} WHERE k = 3",
    "INSERT INTO db.{name} VALUES (3, 2, 2, 'e', NULL, 'f4'), (1, 1, 9, 'g', 'v', NULL)",
]
AGG_ROWS = [(1, 16, 9, "a,c,g", "v", "f1"), (2, 20, 4, "b", "y", None), (3, 2, 2, "e", None, "f4"),
            (4, 7, None, "d", "w", None)]
PARTIAL_STEPS = [
    "INSERT INTO db.{name} VALUES (1, 'a', NULL, NULL), (2, NULL, 2, 'c'), (5, 'e', 5, 'e')",
    "INSERT INTO db.{name} VALUES (1, NULL, 10, 'x'), (2, 'b', NULL, NULL), (3, 'n', NULL, NULL)",
    "UPDATE db.{name} SET b = 99, a = NULL WHERE k = 3",
    "DELETE FROM db.{name} WHERE k = 2",
    "INSERT INTO db.{name} VALUES (2, NULL, 7, NULL), (5, NULL, NULL, 'f')",
]
PARTIAL_ROWS = [(1, "a", 10, "x"), (2, None, 7, None), (3, "n", 99, None), (5, "e", 5, "f")]


def _run(paimon: Any, ddl: str, steps: list[str], name: str, bucket: str) -> None:
    paimon.sql(ddl.format(name=name, bucket=bucket))
    for step in steps:
        paimon.sql(step.format(name=name))


def _rows(paimon: Any, name: str) -> list[tuple]:
    return sorted(tuple(r) for r in paimon.sql(f"SELECT * FROM db.{name}").collect())


def test_sql_on_merge_engine_tables_merges_as_paimon(spark, tmp_path: Path) -> None:
    """Aggregation with fixed and dynamic buckets (each task merges its buckets' keys with their old
    rows), partial-update with dynamic buckets."""
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path))
    paimon.sql("CREATE DATABASE IF NOT EXISTS db")
    _run(paimon, AGG, AGG_STEPS, "agg", "2")
    assert _rows(paimon, "agg") == AGG_ROWS
    _run(paimon, AGG, AGG_STEPS, "agg_dynamic", "-1")
    assert _rows(paimon, "agg_dynamic") == AGG_ROWS
    _run(paimon, PARTIAL, PARTIAL_STEPS, "pu", "-1")
    assert _rows(paimon, "pu") == PARTIAL_ROWS
    # Paimon's connector refuses UPDATE and MERGE INTO on aggregation tables (RowLevelOp).
    with pytest.raises(PaimonIndexError, match="can not support UPDATE"):
        paimon.sql("UPDATE db.agg SET s = 1 WHERE k = 1")
    with pytest.raises(PaimonIndexError, match="can not support MERGE INTO"):
        paimon.sql("MERGE INTO db.agg t USING (SELECT 1 AS k) s ON t.k = s.k WHEN MATCHED THEN DELETE")
    assert _rows(paimon, "agg") == AGG_ROWS


#: What the connector's jar can run: it holds only the last_value / last_non_null_value aggregators
#: (tests/table/test_merge_engines.py checks every other one against Java Paimon's writer).
AGG_LAST = ("CREATE TABLE db.{name} (k INT NOT NULL, lv STRING, ln STRING, n INT) TBLPROPERTIES ("
            "'primary-key' = 'k', 'bucket' = '{bucket}', 'deletion-vectors.enabled' = 'true', "
            "'merge-engine' = 'aggregation', 'fields.lv.aggregate-function' = 'last_value')")
AGG_LAST_STEPS = [
    "INSERT INTO db.{name} VALUES (1, 'a', 'a', 1), (2, 'b', NULL, NULL), (3, NULL, 'c', 3)",
    "INSERT INTO db.{name} VALUES (1, NULL, NULL, 10), (2, 'x', 'y', NULL), (4, 'd', 'd', 4)",
    "DELETE FROM db.{name} WHERE k = 3",
    "INSERT INTO db.{name} VALUES (3, 'e', NULL, NULL)",
]
AGG_LAST_ROWS = [(1, None, "a", 10), (2, "x", "y", None), (3, "e", None, None), (4, "d", "d", 4)]


@pytest.mark.slow
def test_paimons_connector_runs_the_same_sql_to_the_same_rows_and_both_read_both(spark,
                                                                                  tmp_path: Path) -> None:
    import paimonsql

    warehouse = str(tmp_path)
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    paimon.sql("CREATE DATABASE IF NOT EXISTS db")
    _run(paimon, AGG_LAST, AGG_LAST_STEPS, "agg_ours", "2")
    _run(paimon, PARTIAL, PARTIAL_STEPS, "pu_ours", "2")
    assert _rows(paimon, "agg_ours") == AGG_LAST_ROWS
    theirs = [AGG_LAST.format(name="agg_java", bucket="2"),
              *(s.format(name="agg_java") for s in AGG_LAST_STEPS),
              PARTIAL.format(name="pu_java", bucket="2"), *(s.format(name="pu_java") for s in PARTIAL_STEPS)]
    refused = ["UPDATE db.agg_java SET n = 1 WHERE k = 1"]  # the connector refuses it, as we do
    tables = ("agg_java", "agg_ours", "pu_java", "pu_ours")
    reads = [f"SELECT * FROM db.{t}" for t in tables]
    results = paimonsql.run(warehouse, theirs + refused + reads)
    for text, result in zip(theirs, results, strict=False):
        assert result["ok"], (text, result)
    assert not results[len(theirs)]["ok"], results[len(theirs)]
    del results[len(theirs):len(theirs) + len(refused)]
    expected = {"agg": AGG_LAST_ROWS, "pu": PARTIAL_ROWS}
    for table, result in zip(tables, results[len(theirs):], strict=True):
        assert result["ok"], result
        assert sorted(tuple(r) for r in result["rows"]) == expected[table.split("_")[0]], ("connector", table)
        assert _rows(paimon, table) == expected[table.split("_")[0]], ("ours", table)


SEQUENCE_STEPS = [
    "CREATE TABLE db.{name} (id BIGINT NOT NULL, k INT, s STRING) TBLPROPERTIES ('primary-key' = 'id', "
    "'bucket' = '2', 'deletion-vectors.enabled' = 'true', 'merge-engine' = 'partial-update', "
    "'sequence.field' = 'k')",
    "INSERT INTO db.{name} VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c')",
    "DELETE FROM db.{name} WHERE s = 'b'",
    "INSERT INTO db.{name} VALUES (2, 1, 'z'), (3, 1, 'old')",
    "UPDATE db.{name} SET s = 'u' WHERE id = 1",
]


@pytest.mark.slow
def test_delete_on_a_partial_update_table_with_a_sequence_field_as_paimons_connector(spark,
                                                                                      tmp_path: Path) -> None:
    """DELETE removes the key (a later insert of it with a lower sequence value is there again), a
    lower sequence value does not update a live key, as Paimon's connector runs the same statements.
    Ours refused the DELETE through Spark before (the task checked the writer's deduplicate copy)."""
    import paimonsql

    theirs = [s.format(name="t") for s in SEQUENCE_STEPS]
    results = paimonsql.run(tmp_path / "connector", ["CREATE DATABASE IF NOT EXISTS db", *theirs,
                                                     "SELECT * FROM db.t"])
    for text, result in zip(["CREATE DATABASE", *theirs, "SELECT"], results, strict=True):
        assert result["ok"], (text, result)
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path / "ours"))
    paimon.sql("CREATE DATABASE db")
    for text in theirs:
        paimon.sql(text)
    expected = sorted(tuple(r) for r in results[-1]["rows"])
    assert expected == [(1, 1, "u"), (2, 1, "z"), (3, 3, "c")]
    assert _rows(paimon, "t") == expected
