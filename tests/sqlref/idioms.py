"""Statements a Spark user types every day, through ``paimon.sql`` and through Paimon's own Spark
connector (``paimon-sql.sh``), each side on a warehouse of its own: every statement succeeds or
fails on both, and every query answers the same rows (tests/spark/test_sql_idioms.py on classic
Spark, tests/connect/test_connect_sql.py over Spark Connect).

Session 32 ran such batches by hand and found, among others, ``TRUNCATE TABLE t PARTITION (...)``
truncating the whole table, ``INSERT ... REPLACE WHERE`` and ``CLUSTERED BY`` ignored, temporary
views, CTE inserts, ``INSERT ... TABLE``, ``DEFAULT``, join hints, ``TABLE t``, ``SHOW COLUMNS``,
``DESCRIBE t col`` and database-qualified columns in DML refused or misread. This suite keeps them
(slow: the connector's JVM). Only statements whose answer does not depend on how each writer numbers
its snapshots or orders its files are compared.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from pathlib import Path
from typing import Any

import paimon_index.spark
import paimonsql

STATEMENTS = [
    "CREATE DATABASE db",
    "USE db",
    "SHOW CURRENT NAMESPACE",
    "DESCRIBE DATABASE db",
    "DESCRIBE DATABASE EXTENDED db",
    "CREATE TABLE t (id BIGINT NOT NULL, s STRING, v INT, p STRING NOT NULL) PARTITIONED BY (p) "
    "TBLPROPERTIES ('primary-key' = 'id,p', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')",
    "CREATE TABLE a (id BIGINT, s STRING, v DOUBLE, p STRING) PARTITIONED BY (p) "
    "TBLPROPERTIES ('deletion-vectors.enabled' = 'true', 'file-index.bitmap.columns' = 's')",
    "CREATE TABLE u (id BIGINT, w INT, tags ARRAY<STRING>)",
    "INSERT INTO t VALUES (1, 'a', 1, 'x'), (2, 'b', 2, 'y'), (3, 'c', 3, 'x'), (4, NULL, 4, 'z')",
    "INSERT INTO t (id, p, s, v) VALUES (5, 'y', 'e', 5)",
    "INSERT INTO a SELECT id, s, v * 1.5, p FROM t",
    "WITH x AS (SELECT id + 10 AS id, s, v, p FROM a) INSERT INTO a SELECT * FROM x",
    "INSERT INTO a TABLE a",
    "INSERT INTO a VALUES (30, 'k', DEFAULT, 'z')",
    "INSERT INTO u VALUES (1, 10, array('x', 'y')), (3, 30, array()), (5, 50, NULL)",
    "SELECT count(*), sum(v) FROM a",
    "TABLE t",
    "FROM t SELECT id, s WHERE v > 1",
    "SELECT * FROM t NATURAL JOIN u ORDER BY id",
    "SELECT * FROM t JOIN u USING (id) ORDER BY id",
    "SELECT s, sum(v) FROM t GROUP BY ALL ORDER BY s",
    "SELECT * EXCEPT (v) FROM t ORDER BY id",
    "SELECT id, tag FROM u LATERAL VIEW OUTER explode(tags) x AS tag ORDER BY id, tag",
    "SELECT /*+ BROADCAST(a) */ t.id FROM t JOIN a ON t.id = a.id ORDER BY t.id",
    "SELECT t.id, (SELECT max(w) FROM u WHERE u.id <= t.id) FROM t ORDER BY t.id",
    "SELECT s, count(*) FROM t GROUP BY s WITH ROLLUP ORDER BY s",
    "SELECT count(*) FILTER (WHERE s = 'a'), count_if(v > 1) FROM t",
    "SHOW TABLES",
    "SHOW COLUMNS IN t",
    "DESCRIBE t s",
    "SHOW PARTITIONS t",
    "SHOW PARTITIONS t PARTITION (p = 'x')",
    "CREATE TEMPORARY VIEW big AS SELECT * FROM t WHERE v > 1",
    "SELECT count(*) FROM big",
    "INSERT INTO t VALUES (6, 'f', 6, 'x')",
    "SELECT * FROM big WHERE p = 'x' ORDER BY id",
    "SELECT b.id, u.w FROM big b JOIN u ON b.id = u.id ORDER BY b.id",
    "UPDATE db.t AS x SET x.v = 100 WHERE x.id = 2",
    "UPDATE t SET t.s = 'q' WHERE t.id = 3 AND db.t.p = 'x'",
    "UPDATE a SET v = DEFAULT WHERE id = 1",
    "DELETE FROM paimon.db.a WHERE paimon.db.a.id = 11",
    "MERGE INTO t USING (SELECT id, w FROM u) src ON t.id = src.id AND t.p = 'x' "
    "WHEN MATCHED AND src.w > 20 THEN DELETE WHEN MATCHED THEN UPDATE SET t.v = src.w",
    "SELECT * FROM t ORDER BY id",
    "SELECT * FROM `t$audit_log` ORDER BY id",
    "SELECT rowkind, count(*) FROM db.`a$audit_log` WHERE p = 'x' GROUP BY rowkind",
    "SELECT * FROM `a$ro` ORDER BY id, p, s",
    "SELECT * FROM a ORDER BY id, p, s",
    "TRUNCATE TABLE a PARTITION (p = 'x')",
    "ALTER TABLE a DROP PARTITION (p = 'y')",
    "ALTER TABLE a ADD PARTITION (p = 'w')",
    "SELECT * FROM a ORDER BY id, p, s",
    "TRUNCATE TABLE t PARTITION (p = 'z')",
    "SELECT * FROM t ORDER BY id",
    "SET spark.sql.sources.partitionOverwriteMode = dynamic",
    "INSERT OVERWRITE t VALUES (9, 'n', 9, 'w')",
    "SET spark.sql.sources.partitionOverwriteMode = static",
    "SELECT * FROM t ORDER BY id",
    "REFRESH TABLE t",
    "CREATE TABLE c AS SELECT id, s FROM big",
    "SELECT * FROM c ORDER BY id",
    "ALTER TABLE c ADD COLUMNS (x STRING, y DOUBLE)",
    "ALTER TABLE c RENAME COLUMN x TO x2",
    "ALTER TABLE c DROP COLUMN y",
    "ALTER TABLE c ADD COLUMN f INT FIRST",
    "ALTER TABLE c ADD COLUMN g STRING AFTER id",
    "ALTER TABLE c ALTER COLUMN id DROP NOT NULL",
    "INSERT INTO c VALUES (7, NULL, 'g', 's7', 'x7')",
    "ALTER TABLE c ALTER COLUMN x2 FIRST",
    "ALTER TABLE c CHANGE COLUMN g AFTER s",
    "DESCRIBE c",
    "SELECT * FROM c ORDER BY id",
    "DROP VIEW big",
    "DROP TABLE c",
    "SHOW TABLES",
    # backticked names in statements sqlglot keeps as text (a raw TokenError before session 33)
    "SHOW TABLES IN `db`",
    "ALTER TABLE `db`.`u` SET TBLPROPERTIES ('k' = 'v')",
    "ALTER TABLE `db`.`u` UNSET TBLPROPERTIES ('k')",
    "SHOW COLUMNS IN `u` IN `db`",
    # NULL and boolean partition values (printed True/None before session 33)
    "CREATE TABLE m (id BIGINT, s STRING, d DATE, b BOOLEAN) PARTITIONED BY (d, b) "
    "TBLPROPERTIES ('bucket' = '2', 'bucket-key' = 'id', 'deletion-vectors.enabled' = 'true')",
    "INSERT INTO m VALUES (1, 'a', DATE'2024-01-02', true), (2, 'b', NULL, false)",
    "INSERT INTO m VALUES (3, 'c', NULL, false)",
    "SHOW PARTITIONS m",
    "SHOW PARTITIONS m PARTITION (b = false)",
    "UPDATE m SET s = 'z' WHERE d IS NULL",
    "SELECT * FROM m ORDER BY id",
    "CALL sys.compact(table => 'db.m')",
    "SELECT * FROM m WHERE d IS NULL ORDER BY id",
    # refused by both
    "ALTER TABLE t SET TBLPROPERTIES ('snapshot.num-retained.max' = '5')",
    "CREATE TABLE bad (a INT) CLUSTERED BY (a) INTO 4 BUCKETS",
    "CREATE TABLE bad (a INT) PARTITIONED BY (bucket(4, a))",
    "ALTER TABLE t DROP PARTITION (p = 'x'), PARTITION (p = 'nope')",
    # a second batch (session 33): column lists, BY NAME, set operations, semi/anti joins, PIVOT,
    # MERGE's * forms, partitioned CTAS, partition overwrites, changes without WHERE
    "CREATE DATABASE IF NOT EXISTS b COMMENT 'the second batch'",
    "USE paimon.b",
    "CREATE TABLE t (id BIGINT NOT NULL, s STRING, v INT, p STRING NOT NULL) PARTITIONED BY (p) "
    "TBLPROPERTIES ('primary-key' = 'id,p', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')",
    "CREATE TABLE IF NOT EXISTS t (id BIGINT)",
    "CREATE TABLE u (id BIGINT, w INT) COMMENT 'a table' TBLPROPERTIES ('deletion-vectors.enabled' = 'true')",
    "INSERT INTO t VALUES (1, 'a', 1, 'x'), (2, 'b', 2, 'y')",
    "INSERT INTO b.t (id, p, s, v) VALUES (3, 'x', 'c', 3)",
    "INSERT INTO t (v, id, s, p) SELECT 4, 4L, 'd', 'z'",
    "INSERT INTO u SELECT id, v FROM t",
    "INSERT INTO u BY NAME SELECT 9 AS w, 10L AS id",
    "SHOW TABLES FROM paimon.b",
    "SELECT * FROM t WHERE s ILIKE 'A%'",
    "SELECT * FROM t WHERE s RLIKE '^[ab]' ORDER BY id",
    "SELECT * FROM t WHERE id NOT IN (SELECT id FROM u WHERE w > 2) ORDER BY id",
    "SELECT * FROM t LEFT ANTI JOIN u ON t.id = u.id ORDER BY t.id",
    "SELECT * FROM t LEFT SEMI JOIN u ON t.id = u.id AND u.w > 1 ORDER BY t.id",
    "SELECT p, count(*) c FROM t GROUP BY p HAVING count(*) > 1",
    "SELECT * FROM t PIVOT (sum(v) FOR p IN ('x', 'y', 'z')) ORDER BY id",
    "SELECT id, s FROM t UNION SELECT id, CAST(w AS STRING) FROM u ORDER BY id, s",
    "SELECT id FROM t INTERSECT SELECT id FROM u",
    "SELECT id FROM t EXCEPT SELECT id FROM u",
    "SELECT * FROM (VALUES (1L, 'q')) AS x(a, b) JOIN t ON x.a = t.id",
    "SELECT id, rank() OVER (PARTITION BY p ORDER BY v DESC) AS r FROM t ORDER BY id",
    "UPDATE u SET w = w + 1",
    "DELETE FROM u WHERE id IN (SELECT id FROM t WHERE p = 'x')",
    "SELECT * FROM u ORDER BY id",
    "MERGE INTO t USING (SELECT 1L AS id, 'aa' AS s, 11 AS v, 'x' AS p UNION ALL SELECT 7L, 'g', 7, 'q') src "
    "ON t.id = src.id AND t.p = src.p WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "MERGE INTO t USING u ON t.id = u.id WHEN NOT MATCHED BY SOURCE AND t.p = 'q' THEN DELETE",
    "SELECT * FROM t ORDER BY id",
    "SELECT t.rowkind, t.id FROM db.`t$audit_log` t WHERE t.v > 2 ORDER BY id",
    "CREATE TABLE ct PARTITIONED BY (p) TBLPROPERTIES ('deletion-vectors.enabled' = 'true') "
    "AS SELECT id, s, p FROM t",
    "SHOW PARTITIONS ct",
    "INSERT OVERWRITE TABLE ct PARTITION (p) SELECT id, s, p FROM t WHERE p = 'y'",
    "SELECT * FROM ct ORDER BY id",
    "INSERT OVERWRITE ct PARTITION (p = 'x') SELECT 100, 'h'",
    "SELECT * FROM ct ORDER BY id",
    "DELETE FROM ct",
    "SELECT count(*) FROM ct",
    "TRUNCATE TABLE u",
    "SELECT count(*) FROM u",
    # tables without deletion vectors: DELETE / UPDATE / MERGE copy-on-write (refused before session 33)
    "CREATE TABLE cw (id BIGINT, s STRING, p STRING) PARTITIONED BY (p)",
    "INSERT INTO cw VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y'), (4, NULL, 'z')",
    "DELETE FROM cw WHERE id = 2",
    "UPDATE cw SET s = upper(s) WHERE p = 'y' OR s IS NULL",
    "MERGE INTO cw USING (SELECT 3L AS id, 'm' AS s, 'y' AS p UNION ALL SELECT 9L, 'n', 'x') src "
    "ON cw.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s WHEN NOT MATCHED THEN INSERT *",
    "SELECT * FROM cw ORDER BY id",
    "CREATE TABLE cwb (id BIGINT, v INT) TBLPROPERTIES ('bucket' = '2', 'bucket-key' = 'id')",
    "INSERT INTO cwb SELECT id, CAST(id AS INT) FROM range(10)",
    "DELETE FROM cwb WHERE v % 3 = 0",
    "UPDATE cwb SET v = -v WHERE id > 5",
    "SELECT * FROM cwb ORDER BY id",
    "MERGE INTO cwb USING (SELECT 1L AS id) src ON cwb.id = src.id WHEN MATCHED THEN DELETE "
    "WHEN NOT MATCHED BY SOURCE AND cwb.id > 7 THEN UPDATE SET v = 0",
    "SELECT * FROM cwb ORDER BY id",
    "DELETE FROM cwb",
    "SELECT count(*) FROM cwb",
    # nested, decimal and timestamp columns in a table without deletion vectors (copy-on-write)
    "CREATE TABLE e (id BIGINT, ts TIMESTAMP_NTZ, d DATE, amt DECIMAL(12, 2), tags ARRAY<STRING>, "
    "attrs MAP<STRING, INT>, st STRUCT<a: INT, b: STRING>) "
    "TBLPROPERTIES ('file-index.bloom-filter.columns' = 'id')",
    "INSERT INTO e VALUES (1, TIMESTAMP_NTZ'2024-01-02 03:04:05', DATE'2024-01-02', 12.5, array('a', 'b'), "
    "map('k', 1), named_struct('a', 1, 'b', 'x')), (2, NULL, NULL, NULL, NULL, NULL, NULL)",
    "INSERT INTO e SELECT 3, TIMESTAMP_NTZ'2025-06-01 00:00:00', DATE'2025-06-01', -0.01, array(), map(), "
    "named_struct('a', NULL, 'b', NULL)",
    "SELECT id, tags[0], attrs['k'], st.a, st.b FROM e ORDER BY id",
    "SELECT id FROM e WHERE array_contains(tags, 'a') OR st.a = 1 OR amt < 0",
    "SELECT sum(amt), avg(amt), min(ts), max(d) FROM e",
    "UPDATE e SET amt = amt * 2, tags = array_union(tags, array('z')) WHERE id = 1",
    "DELETE FROM e WHERE st.a IS NULL",
    "SELECT * FROM e ORDER BY id",
    "CALL sys.create_tag(table => 'b.e', tag => 't1')",
    "INSERT INTO e VALUES (4, NULL, NULL, 1.00, NULL, NULL, NULL)",
    "SELECT count(*) FROM e VERSION AS OF 't1'",
    "CALL sys.rollback(table => 'b.e', version => 't1')",
    "SELECT id FROM e ORDER BY id",
    "CREATE DATABASE b2",
    "CREATE TABLE b2.x (a INT)",
    "DROP DATABASE b2",
    "DROP DATABASE b2 CASCADE",
    "DROP DATABASE IF EXISTS nope",
    "DROP TABLE IF EXISTS nope",
    "DROP TABLE nope",
]


def _plain(value: Any) -> Any:
    """A value as the connector's JSON carries it."""
    if isinstance(value, dt.datetime):
        return str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    return value


def _rows(rows: list[Any], ordered: bool) -> list[Any]:
    out = [[_plain(v) for v in r] for r in rows]
    return out if ordered else sorted(out, key=repr)


def differences(spark: Any, root: Path) -> list[str]:
    """Run :data:`STATEMENTS` through ``paimon.sql`` on ``spark`` (classic or Spark Connect) and
    through the connector, each on a warehouse of its own under ``root``: the differences."""
    theirs = paimonsql.run(root / "theirs", STATEMENTS)
    paimon = paimon_index.spark.attach(spark, warehouse=str(root / "ours"))
    differences = []
    try:
        for text, their in zip(STATEMENTS, theirs, strict=True):
            try:
                ours: list[Any] | None = [list(r) for r in paimon.sql(text).collect()]
            except Exception as e:  # compared with the connector's refusal below
                ours, error = None, f"{type(e).__name__}: {str(e)[:200]}"
            if (ours is not None) != their["ok"]:
                differences.append(f"{text}\n  ours: {error if ours is None else 'ok'}\n  theirs: "
                                   f"{their.get('error', 'ok')}")
                continue
            if ours is not None and text.upper().startswith(("SELECT", "TABLE", "FROM", "SHOW", "DESCRIBE")):
                ordered = "ORDER BY" in text.upper()
                mine, other = _rows(ours, ordered), _rows(their["rows"], ordered)
                if mine != other:
                    differences.append(f"{text}\n  ours:   {mine}\n  theirs: {other}")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    return differences
