"""The Spark noun's SQL through a Spark Connect client: every statement kind, no JVM in this process.

Each answer is checked against a Python model of the rows and pypaimon's own read of the table
(neither goes through Spark Connect).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from paimon_index.spark import attach
from paimon_index.table.catalog import open_table as open_paimon

pytestmark = [pytest.mark.spark, pytest.mark.connect]


def _pypaimon_rows(warehouse: str, table: str) -> list[tuple]:
    paimon = open_paimon(warehouse, table)
    builder = paimon.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(*(rows[c].to_pylist() for c in rows.column_names), strict=True))


def test_every_statement_kind_through_spark_connect(connect_spark, tmp_path: Path) -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(connect_spark, ConnectSession)
    w = str(tmp_path / "w")
    paimon = attach(connect_spark, warehouse=w)
    paimon.sql("CREATE DATABASE db")
    paimon.sql("CREATE TABLE db.orders (id BIGINT, status STRING, score INT) TBLPROPERTIES ("
               "'bucket' = '-1', 'deletion-vectors.enabled' = 'true', "
               "'file-index.bloom-filter.columns' = 'id', 'file-index.bitmap.columns' = 'status')")
    paimon.sql("CREATE TABLE db.people (id BIGINT NOT NULL, name STRING) TBLPROPERTIES ("
               "'primary-key' = 'id', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')")
    assert sorted(paimon.tables("db")) == ["orders", "people"]
    model = {i: (i, ["NEW", "PAID", "CANCELLED"][i % 3], i % 100) for i in range(300)}
    paimon.sql("INSERT INTO db.orders SELECT id, element_at(array('NEW', 'PAID', 'CANCELLED'), "
               "CAST(id % 3 AS INT) + 1), CAST(id % 100 AS INT) FROM range(300)")
    paimon.sql("INSERT INTO db.people VALUES (1, 'ann'), (2, 'bob'), (4, 'eve')")
    people = {1: "ann", 2: "bob", 4: "eve"}

    # queries: a point lookup, a join, an aggregate, ORDER BY LIMIT, EXPLAIN
    assert [tuple(r) for r in paimon.sql("SELECT * FROM db.orders WHERE id = 42").collect()] == [model[42]]
    joined = paimon.sql("SELECT o.id, p.name FROM db.orders o JOIN db.people p ON o.id = p.id "
                        "WHERE o.status <> 'NEW'").collect()
    assert sorted(tuple(r) for r in joined) == sorted(
        (i, n) for i, n in people.items() if model[i][1] != "NEW")
    grouped = paimon.sql("SELECT status, count(*) FROM db.orders GROUP BY status").collect()
    counts = {r[0]: r[1] for r in grouped}
    assert counts == {s: sum(1 for v in model.values() if v[1] == s) for s in ("NEW", "PAID", "CANCELLED")}
    top = [r.id for r in paimon.sql("SELECT id FROM db.orders ORDER BY score DESC, id LIMIT 3").collect()]
    assert top == sorted(model, key=lambda i: (-model[i][2], i))[:3]
    plan = paimon.sql("EXPLAIN SELECT * FROM db.orders WHERE id = 42").collect()[0][0]
    assert "== Paimon references ==" in plan

    # DML
    paimon.sql("DELETE FROM db.orders WHERE status = 'CANCELLED' AND id % 7 = 0")
    model = {i: v for i, v in model.items() if not (v[1] == "CANCELLED" and i % 7 == 0)}
    paimon.sql("UPDATE db.orders SET score = score + 1000 WHERE id IN (SELECT id FROM db.people)")
    model = {i: (i, v[1], v[2] + 1000) if i in people else v for i, v in model.items()}
    paimon.sql("MERGE INTO db.people t USING (SELECT * FROM VALUES (2, 'bobby'), (9, 'zed') AS s(id, name)) "
               "s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT *")
    people.update({2: "bobby", 9: "zed"})
    assert _pypaimon_rows(w, "db.orders") == sorted(model.values())
    assert _pypaimon_rows(w, "db.people") == sorted(people.items())

    # CALL, system tables, time travel
    paimon.sql("CALL sys.compact(table => 'db.people')")
    snapshots = paimon.sql("SELECT snapshot_id FROM db.`orders$snapshots`").collect()
    first = min(r.snapshot_id for r in snapshots)
    assert paimon.sql(f"SELECT count(*) FROM db.orders VERSION AS OF {first}").collect()[0][0] == 300
    assert paimon.sql("SELECT count(*) FROM db.orders").collect()[0][0] == len(model)
    assert sorted(tuple(r) for r in paimon.sql("SELECT * FROM db.people").collect()) == sorted(people.items())
    # The row kinds the data files hold (MERGE's matched row '+U'), and the top level after a compaction.
    audit = paimon.sql("SELECT * FROM db.`people$audit_log` ORDER BY id").collect()
    assert [tuple(r) for r in audit] == [("+U" if i == 2 else "+I", i, n) for i, n in sorted(people.items())]
    paimon.sql("CALL sys.compact(table => 'db.people', compact_strategy => 'full')")
    top = paimon.sql("SELECT * FROM db.`people$ro`").collect()
    assert sorted(tuple(r) for r in top) == sorted(people.items())


def test_merge_on_read_changes_through_spark_connect(connect_spark, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A primary-key table without deletion vectors: a DELETE of a few rows (read and written on
    the driver) and an UPDATE of more rows than the driver writes (the tasks shuffle them by
    Paimon's bucket, an Arrow UDF of the key, and write them), after an upsert left two versions."""
    from paimon_index.spark import jobs

    monkeypatch.setattr(jobs, "SMALL_CHANGE_ROWS", 50)
    w = str(tmp_path / "w")
    paimon = attach(connect_spark, warehouse=w)
    paimon.sql("CREATE DATABASE db")
    paimon.sql("CREATE TABLE db.mor (id BIGINT NOT NULL, k INT, s STRING) TBLPROPERTIES ("
               "'primary-key' = 'id', 'bucket' = '3', 'file-index.bitmap.columns' = 'k')")
    paimon.sql("INSERT INTO db.mor SELECT id, CAST(id % 10 AS INT), 'a' FROM range(1000)")
    paimon.sql("INSERT INTO db.mor SELECT id, CAST(id % 10 AS INT), 'b' FROM range(0, 1000, 2)")
    model = {i: (i, i % 10, "b" if i % 2 == 0 else "a") for i in range(1000)}
    paimon.sql("DELETE FROM db.mor WHERE id < 20 AND k = 3")
    model = {i: v for i, v in model.items() if not (i < 20 and v[1] == 3)}
    paimon.sql("UPDATE db.mor SET s = concat(s, '!') WHERE k < 4")  # about 400 rows
    model = {i: (i, v[1], v[2] + "!") if v[1] < 4 else v for i, v in model.items()}
    assert _pypaimon_rows(w, "db.mor") == sorted(model.values())
    assert sorted(tuple(r) for r in paimon.sql("SELECT * FROM db.mor WHERE k = 1").collect()) == \
        sorted(v for v in model.values() if v[1] == 1)


def test_text_sparks_parser_refuses_is_refused_over_connect(connect_spark, tmp_path: Path) -> None:
    """Over Connect Spark's parser is on the server: the text is checked there (``EXPLAIN``, which
    runs nothing) before the statement runs; sqlglot alone answered ``k IS NULL = false``."""
    from pyspark.errors import ParseException

    w = str(tmp_path / "w")
    paimon = attach(connect_spark, warehouse=w)
    paimon.sql("CREATE DATABASE db")
    paimon.sql("CREATE TABLE db.t (id BIGINT, k INT)")
    paimon.sql("INSERT INTO db.t VALUES (1, NULL), (2, 3)")
    with pytest.raises(ParseException):
        paimon.sql("SELECT id FROM db.t WHERE k IS NULL = false")
    with pytest.raises(ParseException):
        paimon.sql("DELETE FROM db.t WHERE k IS NULL = false")
    assert sorted(tuple(r) for r in paimon.sql("SELECT * FROM db.t").collect()) == [(1, None), (2, 3)]
    # the check ran each statement's text through EXPLAIN only: CREATE DATABASE created one database
    paimon.sql("CREATE DATABASE db2")
    assert sorted(paimon.databases()) == ["db", "db2"]
    assert [r[0] for r in connect_spark.sql("SHOW DATABASES").collect() if r[0] == "db2"] == []


def test_statements_from_other_threads_through_spark_connect(connect_spark, tmp_path: Path) -> None:
    """As in classic mode (tests/spark/test_threads.py): writes through the source and reads from
    threads other than the one that made the client session; the server's session runs each."""
    from concurrent.futures import ThreadPoolExecutor

    paimon = attach(connect_spark, warehouse=str(tmp_path / "w"))
    paimon.sql("CREATE DATABASE db")
    primary_key = ", 'primary-key' = 'id', 'bucket' = '2'"
    for t in range(2):
        paimon.sql(f"CREATE TABLE db.t{t} (id BIGINT NOT NULL, s STRING) TBLPROPERTIES "
                   f"('deletion-vectors.enabled' = 'true'{primary_key if t else ''})")

    def work(t: int) -> list[tuple[object, ...]]:
        paimon.sql(f"INSERT INTO db.t{t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        paimon.sql(f"DELETE FROM db.t{t} WHERE id = 2")
        return sorted(tuple(r) for r in paimon.sql(f"SELECT * FROM db.t{t}").collect())

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(work, range(2))) == [[(1, "a"), (3, "c")]] * 2


def test_views_and_partition_truncation_through_spark_connect(connect_spark, tmp_path: Path) -> None:
    """Session 32's SQL additions over Spark Connect: a temporary view read at each statement,
    TRUNCATE of one partition, DROP PARTITION."""
    paimon = attach(connect_spark, warehouse=str(tmp_path / "w"))
    paimon.sql("CREATE DATABASE db")
    paimon.sql("CREATE TABLE db.t (id BIGINT, p STRING) PARTITIONED BY (p) "
               "TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    paimon.sql("INSERT INTO db.t VALUES (1, 'x'), (2, 'y'), (3, 'z')")
    paimon.sql("CREATE TEMPORARY VIEW v AS SELECT * FROM db.t WHERE id > 1")
    assert paimon.sql("SELECT count(*) FROM v").collect()[0][0] == 2
    paimon.sql("TRUNCATE TABLE db.t PARTITION (p = 'y')")
    assert sorted(r[0] for r in paimon.sql("SELECT id FROM v").collect()) == [3]
    paimon.sql("ALTER TABLE db.t DROP PARTITION (p = 'z')")
    assert sorted(tuple(r) for r in paimon.sql("SELECT * FROM db.t").collect()) == [(1, "x")]


@pytest.mark.slow
def test_common_statements_answer_as_paimons_connector_over_spark_connect(connect_spark,
                                                                          tmp_path: Path) -> None:
    """tests/sqlref/idioms.py's statements through a Spark Connect client and through the connector."""
    from sqlref import idioms

    differences = idioms.differences(connect_spark, tmp_path)
    assert not differences, "\n".join(differences)
