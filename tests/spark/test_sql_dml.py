"""SQL DML through ``paimon.sql``: INSERT INTO/OVERWRITE, DELETE, UPDATE, MERGE INTO, TRUNCATE on
append tables (deletion vectors) and primary-key tables (deletion-vectors mode).

Each statement is checked against a Python model of the rows and commits exactly one snapshot; the
failing ones leave the table as it was. The same SQL text then runs through Apache Paimon's own
Spark connector (``paimon-sql.sh``) on a copy of the same warehouse, and both sides' final rows
must agree (skipped when ``java`` or the connector's venv is unavailable).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_index.spark
from commits import assert_one_commit
from paimon_index.errors import PaimonIndexError
from paimon_index.table.api import open_table
from paimon_index.table.catalog import create_table
from paimon_index.table.paimon import latest_snapshot

pytestmark = pytest.mark.spark

Row = tuple[Any, Any, Any]
Model = dict[str, list[Row]]

APPEND = {"deletion-vectors.enabled": "true", "bucket": "-1"}
KEYED = {"deletion-vectors.enabled": "true", "bucket": "2"}
APPEND_SCHEMA = pa.schema([("id", pa.int32()), ("s", pa.string()), ("p", pa.string())])
KEYED_SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("s", pa.string()), ("p", pa.string())])
SEED: list[Row] = [(i, f"s{i % 5}", "xyz"[i % 3]) for i in range(1, 31)]
SOURCE: list[Row] = [(3, "n3", "x"), (6, "n6", "x"), (9, "n9", "y"), (12, "n12", "y"), (40, "n40", "z"),
                     (41, "n41", "z")]
#: table -> (primary key?, partitioned?)
TABLES = {"src": (False, True), "a": (False, True), "ow": (False, True), "owp": (False, True),
          "dyn": (False, True), "tr": (False, True), "k": (True, False), "kow": (True, False),
          "ktr": (True, False)}


# -- the model -----------------------------------------------------------------------------------
def _upsert(rows: list[Row], new: list[Row]) -> list[Row]:
    by_key = {r[0]: r for r in rows}
    for r in new:
        by_key[r[0]] = r
    return list(by_key.values())


def _insert(table: str, new: Callable[[Model], list[Row]]) -> Callable[[Model], None]:
    def step(m: Model) -> None:
        rows = new(m)
        m[table] = _upsert(m[table], rows) if TABLES[table][0] else m[table] + rows
    return step


def _delete(table: str, where: Callable[[Row, Model], bool]) -> Callable[[Model], None]:
    def step(m: Model) -> None:
        m[table] = [r for r in m[table] if not where(r, m)]
    return step


def _update(table: str, where: Callable[[Row, Model], bool],
            new: Callable[[Row], Row]) -> Callable[[Model], None]:
    def step(m: Model) -> None:
        m[table] = [new(r) if where(r, m) else r for r in m[table]]
    return step


def _merge(table: str) -> Callable[[Model], None]:
    """MERGE_SQL's clauses, first matching clause per row."""
    def step(m: Model) -> None:
        source = [r for r in m["src"]]
        out: list[Row] = []
        for t in m[table]:
            matches = [s for s in source if s[0] == t[0]]
            if matches:
                s = matches[0]
                if t[0] == 3:
                    continue  # WHEN MATCHED AND t.id = 3 THEN DELETE
                out.append((t[0], f"{t[1]}+{s[1]}", t[2]))  # WHEN MATCHED THEN UPDATE
            elif t[0] > 250:
                continue  # WHEN NOT MATCHED BY SOURCE AND t.id > 250 THEN DELETE
            else:
                out.append(t)
        targets = {t[0] for t in m[table]}
        for s in source:
            if s[0] not in targets:
                out.append(s if s[0] > 40 else (s[0], "new", s[2]))  # WHEN NOT MATCHED ...
        m[table] = out
    return step


MERGE_SQL = ("MERGE INTO db.{t} AS t USING (SELECT id, s, p FROM db.src) AS s ON t.id = s.id "
             "WHEN MATCHED AND t.id = 3 THEN DELETE "
             "WHEN MATCHED THEN UPDATE SET s = concat(t.s, '+', s.s) "
             "WHEN NOT MATCHED AND s.id > 40 THEN INSERT * "
             "WHEN NOT MATCHED THEN INSERT (id, s, p) VALUES (s.id, 'new', s.p) "
             "WHEN NOT MATCHED BY SOURCE AND t.id > 250 THEN DELETE")

_SRC = [r[0] for r in SOURCE]

#: (table, SQL text, the model's step) in order; both sides run exactly these texts.
STEPS: list[tuple[str, str, Callable[[Model], None]]] = [
    # append table: INSERT by position, column list, BY NAME; the query reads a Paimon table
    ("a", "INSERT INTO db.a VALUES (100, 'v', 'x'), (101, 'w', 'z')",
     _insert("a", lambda m: [(100, "v", "x"), (101, "w", "z")])),
    ("a", "INSERT INTO db.a (s, id, p) SELECT s, id + 200, p FROM db.src WHERE id < 10",
     _insert("a", lambda m: [(i + 200, s, p) for i, s, p in m["src"] if i < 10])),
    ("a", "INSERT INTO db.a BY NAME SELECT 'bn' AS s, 'y' AS p, 300 AS id",
     _insert("a", lambda m: [(300, "bn", "y")])),
    # a WITH before the INSERT, and INSERT ... TABLE (before session 32: "table db.x not found" --
    # sqlglot 30 keys the WITH as "with_" -- and an AttributeError)
    ("a", "WITH x AS (SELECT id + 600 AS id, s, p FROM db.src WHERE id < 10) "
          "INSERT INTO db.a SELECT * FROM x",
     _insert("a", lambda m: [(i + 600, s, p) for i, s, p in m["src"] if i < 10])),
    ("a", "INSERT INTO db.a TABLE db.src", _insert("a", lambda m: list(m["src"]))),
    # DEFAULT: a NULL (Spark's VALUES refused the keyword: UNRESOLVED_COLUMN `DEFAULT`)
    ("a", "INSERT INTO db.a VALUES (700, DEFAULT, 'x')", _insert("a", lambda m: [(700, None, "x")])),
    # DELETE: arithmetic, functions, IN (SELECT ...), EXISTS over another Paimon table
    ("a", "DELETE FROM db.a WHERE id % 7 = 0", _delete("a", lambda r, m: r[0] % 7 == 0)),
    ("a", "DELETE FROM db.a WHERE upper(s) = 'S3' AND p = 'x'",
     _delete("a", lambda r, m: r[1].upper() == "S3" and r[2] == "x")),
    ("a", "DELETE FROM db.a WHERE id IN (SELECT id + 1 FROM db.src)",
     _delete("a", lambda r, m: r[0] in {s[0] + 1 for s in m["src"]})),
    ("a", "DELETE FROM db.a AS t WHERE EXISTS "
          "(SELECT 1 FROM db.src AS x WHERE x.id = t.id - 2 AND x.p = 'y')",
     _delete("a", lambda r, m: any(x[0] == r[0] - 2 and x[2] == "y" for x in m["src"]))),
    # UPDATE: expressions over the old row (every SET sees the old values), subqueries
    ("a", "UPDATE db.a SET s = concat(s, '!'), id = id * 10 WHERE id BETWEEN 10 AND 20",
     _update("a", lambda r, m: 10 <= r[0] <= 20, lambda r: (r[0] * 10, r[1] + "!", r[2]))),
    ("a", "UPDATE db.a AS t SET s = 'src' WHERE t.id IN (SELECT id FROM db.src)",
     _update("a", lambda r, m: r[0] in {s[0] for s in m["src"]}, lambda r: (r[0], "src", r[2]))),
    # columns qualified by the database (the target named without an alias; Paimon's connector
    # takes them, ours refused them before session 32: UNRESOLVED_COLUMN `db`.`a`.`id`)
    ("a", "UPDATE db.a SET s = 'qualified' WHERE db.a.id IN (22, 101) OR paimon.db.a.s IS NULL",
     _update("a", lambda r, m: r[0] in (22, 101) or r[1] is None, lambda r: (r[0], "qualified", r[2]))),
    ("a", "DELETE FROM paimon.db.a WHERE paimon.db.a.id = 300", _delete("a", lambda r, m: r[0] == 300)),
    ("a", MERGE_SQL.format(t="a"), _merge("a")),
    ("a", "INSERT OVERWRITE db.a PARTITION (p = 'z') SELECT id, s FROM db.src WHERE p = 'y'",
     lambda m: m.__setitem__("a", [r for r in m["a"] if r[2] != "z"]
                             + [(i, s, "z") for i, s, p in m["src"] if p == "y"])),
    # INSERT OVERWRITE: static (Spark's default mode: the whole table), a static partition,
    # dynamic (only the partitions written)
    ("ow", "INSERT OVERWRITE db.ow SELECT id, s, p FROM db.src WHERE p = 'y'",
     lambda m: m.__setitem__("ow", [r for r in m["src"] if r[2] == "y"])),
    ("owp", "INSERT OVERWRITE db.owp PARTITION (p = 'x') VALUES (500, 'five')",
     lambda m: m.__setitem__("owp", [r for r in m["owp"] if r[2] != "x"] + [(500, "five", "x")])),
    ("", "SET spark.sql.sources.partitionOverwriteMode = dynamic", lambda m: None),
    ("dyn", "INSERT OVERWRITE db.dyn SELECT id, s, p FROM db.src WHERE p = 'y'",
     lambda m: m.__setitem__("dyn", [r for r in m["dyn"] if r[2] != "y"]
                             + [r for r in m["src"] if r[2] == "y"])),
    ("", "SET spark.sql.sources.partitionOverwriteMode = static", lambda m: None),
    ("tr", "TRUNCATE TABLE db.tr", lambda m: m.__setitem__("tr", [])),
    # one partition's rows (before session 32 the PARTITION clause was ignored: every row went)
    ("owp", "TRUNCATE TABLE db.owp PARTITION (p = 'y')",
     lambda m: m.__setitem__("owp", [r for r in m["owp"] if r[2] != "y"])),
    ("dyn", "ALTER TABLE db.dyn DROP PARTITION (p = 'z')",
     lambda m: m.__setitem__("dyn", [r for r in m["dyn"] if r[2] != "z"])),
    # primary-key table: INSERT upserts, DELETE / UPDATE / MERGE by key
    ("k", "INSERT INTO db.k VALUES (1, 'up', 'q'), (100, 'v', 'x')",
     _insert("k", lambda m: [(1, "up", "q"), (100, "v", "x")])),
    ("k", "INSERT INTO db.k SELECT id, s, p FROM db.src", _insert("k", lambda m: list(m["src"]))),
    ("k", "DELETE FROM db.k WHERE id % 7 = 0 OR s = 'n40'",
     _delete("k", lambda r, m: r[0] % 7 == 0 or r[1] == "n40")),
    ("k", "DELETE FROM db.k WHERE id IN (SELECT id + 1 FROM db.src)",
     _delete("k", lambda r, m: r[0] in {s[0] + 1 for s in m["src"]})),
    ("k", "UPDATE db.k SET s = upper(s), p = 'u' WHERE id BETWEEN 10 AND 20",
     _update("k", lambda r, m: 10 <= r[0] <= 20, lambda r: (r[0], r[1].upper(), "u"))),
    ("k", MERGE_SQL.format(t="k"), _merge("k")),
    ("k", "UPDATE db.k SET s = DEFAULT WHERE id = 22", _update("k", lambda r, m: r[0] == 22,
                                                               lambda r: (r[0], None, r[2]))),
    ("k", "MERGE INTO db.k USING db.src ON db.k.id = db.src.id "
          "WHEN MATCHED AND db.src.p = 'z' THEN UPDATE SET s = concat(db.k.s, '/', db.src.s)",
     _update("k", lambda r, m: any(x[0] == r[0] and x[2] == "z" for x in m["src"]),
             lambda r: (r[0], f"{r[1]}/n{r[0]}", r[2]))),
    ("kow", "INSERT OVERWRITE db.kow SELECT id, s, p FROM db.src",
     lambda m: m.__setitem__("kow", list(m["src"]))),
    ("ktr", "TRUNCATE TABLE db.ktr", lambda m: m.__setitem__("ktr", [])),
]

#: Statements that fail on both sides and must leave their table as it was.
FAILING: list[tuple[str, str]] = [
    # a target row matched by two source rows
    ("a", "MERGE INTO db.a AS t USING (SELECT id FROM db.src UNION ALL SELECT id FROM db.src) AS s "
          "ON t.id = s.id WHEN MATCHED THEN UPDATE SET s = 'twice'"),
    ("k", "MERGE INTO db.k AS t USING (SELECT id FROM db.src UNION ALL SELECT id FROM db.src) AS s "
          "ON t.id = s.id WHEN MATCHED THEN UPDATE SET s = 'twice'"),
    # a task fails (ANSI cast of 's1' to INT) after others wrote files
    ("a", "UPDATE db.a SET id = CAST(s AS INT) WHERE id < 30"),
    # a primary key cannot change
    ("k", "UPDATE db.k SET id = id + 1000 WHERE id < 5"),
]


# -- the two sides -------------------------------------------------------------------------------
def _snapshot(warehouse: str, table: str) -> int | None:
    snapshot = latest_snapshot(open_table(warehouse, f"db.{table}").paimon_table)
    return None if snapshot is None else int(snapshot.id)


def _rows(paimon: Any, table: str) -> list[Row]:
    return sorted(tuple(r) for r in paimon.sql(f"SELECT id, s, p FROM db.{table}").collect())


@pytest.fixture(scope="module")
def seeded(spark, tmp_path_factory) -> tuple[str, str, Model]:
    """A warehouse with every table seeded (pypaimon), and an untouched copy of it."""
    root = tmp_path_factory.mktemp("dml")
    warehouse, copy = str(root / "seeded"), str(root / "copy")
    for table, (keyed, partitioned) in TABLES.items():
        create_table(warehouse, f"db.{table}", KEYED_SCHEMA if keyed else APPEND_SCHEMA,
                     primary_keys=["id"] if keyed else [], partition_keys=["p"] if partitioned else [],
                     options=KEYED if keyed else APPEND)
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    model: Model = {}
    for table, (keyed, _) in TABLES.items():
        rows = SOURCE if table == "src" else SEED
        data = pa.Table.from_pylist([dict(zip(("id", "s", "p"), r, strict=True)) for r in rows],
                                    KEYED_SCHEMA if keyed else APPEND_SCHEMA)
        opened = open_table(warehouse, f"db.{table}")
        opened.upsert(data) if keyed else opened.write(data)
        model[table] = list(rows)
    assert _rows(paimon, "k") == sorted(SEED)
    shutil.copytree(warehouse, copy)
    return warehouse, copy, model


def _run_steps(paimon: Any, warehouse: str, model: Model,
               steps: list[tuple[str, str, Callable[[Model], None]]]) -> None:
    """Run ``steps`` through paimon.sql, each checked: the rows against the model, exactly one
    commit (:func:`commits.assert_one_commit`), an empty result (as Spark's DML)."""
    for table, text, step in steps:
        before = _snapshot(warehouse, table) if table else None
        result = paimon.sql(text)
        step(model)
        if not table:
            continue
        assert result.columns == [] and result.collect() == [], text
        assert _rows(paimon, table) == sorted(model[table]), text
        assert_one_commit(open_table(warehouse, f"db.{table}").paimon_table, before, text)


def _run_failing(paimon: Any, warehouse: str, failing: list[tuple[str, str]]) -> list[str]:
    """Each statement fails and leaves its table's snapshot and rows as they were; the errors."""
    errors = []
    for table, text in failing:
        before, rows = _snapshot(warehouse, table), _rows(paimon, table)
        with pytest.raises(Exception) as raised:  # Spark's own errors as well as ours
            paimon.sql(text)
        errors.append(f"{type(raised.value).__name__}: {raised.value}")
        assert _snapshot(warehouse, table) == before, text
        assert _rows(paimon, table) == rows, text
    return errors


def _fresh(seeded: tuple[str, str, Model], tmp_path: Path) -> tuple[str, Model]:
    """A copy of the seeded warehouse (the seeded one stays untouched for the slow tests)."""
    _, copy, seed = seeded
    warehouse = str(tmp_path / "w")
    shutil.copytree(copy, warehouse)
    return warehouse, {t: list(rows) for t, rows in seed.items()}


#: The short variant: one statement of each kind on each table kind.
SHORT = [i for i, (_, text, _) in enumerate(STEPS) if text.startswith((
    "DELETE FROM db.a AS t WHERE EXISTS", "MERGE INTO db.a", "INSERT OVERWRITE db.owp", "UPDATE db.k",
    "MERGE INTO db.k", "UPDATE db.a SET s = 'qualified'", "WITH x AS", "INSERT INTO db.a TABLE",
    "INSERT INTO db.a VALUES (700, DEFAULT", "UPDATE db.k SET s = DEFAULT", "TRUNCATE TABLE db.owp PARTITION",
    "ALTER TABLE db.dyn DROP PARTITION"))]


def test_each_statement_kind_on_both_table_kinds(spark, seeded, tmp_path: Path) -> None:
    warehouse, model = _fresh(seeded, tmp_path)
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    _run_steps(paimon, warehouse, model, [STEPS[i] for i in SHORT])
    errors = _run_failing(paimon, warehouse, FAILING[:1])
    assert "more than one source row" in errors[0], errors


@pytest.fixture(scope="module")
def ours(spark, seeded, tmp_path_factory) -> tuple[Model, list[str]]:
    """Every STEP, then every FAILING statement, on a copy of the seeded warehouse."""
    warehouse, model = _fresh(seeded, tmp_path_factory.mktemp("all"))
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    _run_steps(paimon, warehouse, model, STEPS)
    return model, _run_failing(paimon, warehouse, FAILING)


@pytest.mark.slow
def test_every_statement_changes_the_rows_as_the_model_in_one_snapshot(ours) -> None:
    model, _ = ours
    assert sorted(model["a"]) != sorted(SEED) and model["tr"] == [] and model["ktr"] == []


@pytest.mark.slow
def test_failures_leave_the_table_as_it_was_with_clear_errors(ours) -> None:
    _, errors = ours
    assert all("more than one source row" in e for e in errors[:2]), errors
    assert "CAST_INVALID_INPUT" in errors[2], errors
    assert "primary-key" in errors[3], errors


def test_dml_on_a_spark_table_target_reads_paimon_tables(spark, seeded, tmp_path: Path) -> None:
    warehouse, _, _ = seeded
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    spark.sql("DROP TABLE IF EXISTS dml_spark_target")
    spark.sql("CREATE TABLE dml_spark_target (id INT, s STRING) USING parquet "
              f"LOCATION '{tmp_path / 'spark_target'}'")
    try:
        paimon.sql("INSERT INTO dml_spark_target SELECT id, s FROM db.src WHERE id > 10")
        assert sorted(tuple(r) for r in spark.table("dml_spark_target").collect()) == \
            sorted((i, s) for i, s, _ in SOURCE if i > 10)
    finally:
        spark.sql("DROP TABLE IF EXISTS dml_spark_target")


def test_errors_name_the_table_and_column(spark, seeded) -> None:
    warehouse, _, _ = seeded
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    with pytest.raises(PaimonIndexError, match=r"db\.nope"):
        paimon.sql("DELETE FROM db.nope WHERE id = 1")
    with pytest.raises(PaimonIndexError, match="no column 'nope'"):
        paimon.sql("UPDATE db.src SET nope = 1")
    with pytest.raises(PaimonIndexError, match="INSERT_COLUMN_ARITY_MISMATCH"):
        paimon.sql("INSERT INTO db.src VALUES (1, 'a')")
    with pytest.raises(PaimonIndexError, match="read-only"):
        paimon.sql("DELETE FROM db.`src$snapshots`")


#: Table kinds for the store-assignment refusals: append (deletion vectors), primary-key fixed and
#: dynamic bucket (deletion-vectors mode), merge-on-read.
STORE_KINDS = {"append": "'deletion-vectors.enabled' = 'true'",
               "pk-fixed": "'primary-key' = 'id', 'bucket' = '2', 'deletion-vectors.enabled' = 'true'",
               "pk-dynamic": "'primary-key' = 'id', 'bucket' = '-1', 'deletion-vectors.enabled' = 'true'",
               "pk-mor": "'primary-key' = 'id', 'bucket' = '2'"}


@pytest.mark.parametrize("kind", sorted(STORE_KINDS))
def test_values_the_store_assignment_refuses_are_data_errors_naming_the_column(spark, tmp_path: Path,
                                                                               kind: str) -> None:
    """An overflow or a NULL into a NOT NULL column fails inside the job (as Spark's INSERT fails):
    raised as the ``DataError`` naming the column, on every table kind and statement. Before, UPDATE
    and MERGE of primary-key tables raised Spark's ``SparkRuntimeException`` ([USER_RAISED_EXCEPTION]),
    and UPDATE/MERGE named the value ``'__paimon_v1'``."""
    from paimon_index.errors import DataError

    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path))
    paimon.sql("CREATE DATABASE db")
    paimon.sql(f"CREATE TABLE db.t (id BIGINT NOT NULL, v INT) TBLPROPERTIES ({STORE_KINDS[kind]})")
    paimon.sql("INSERT INTO db.t VALUES (1, 1), (2, 2)")
    before = _snapshot(str(tmp_path), "t")
    refused = [("INSERT INTO db.t VALUES (3, 3000000000L)", "column 'v' (INT): the value 3000000000 of the "
                "data's 'v' (BIGINT)"),
               ("INSERT INTO db.t SELECT CAST(NULL AS BIGINT), 1", "column 'id' (BIGINT) is NOT NULL"),
               ("UPDATE db.t SET v = v + 3000000000L WHERE id = 1",
                "column 'v' (INT): the value 3000000001 of the data's 'v' (BIGINT)"),
               ("MERGE INTO db.t USING (SELECT 2L AS id, 5000000000L AS v) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET v = s.v", "the value 5000000000 of the data's 'v' (BIGINT)")]
    for text, message in refused:
        with pytest.raises(DataError, match=re.escape(message)) as raised:
            paimon.sql(text)
        assert "cannot write to db.t" in str(raised.value) and "__paimon" not in str(raised.value), text
        assert _snapshot(str(tmp_path), "t") == before, text
    assert _rows_of(paimon) == [(1, 1), (2, 2)]


def _rows_of(paimon: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in paimon.sql("SELECT * FROM db.t").collect())


def test_clauses_not_carried_out_are_refused(spark, tmp_path: Path) -> None:
    """A clause Spark's parser takes and this layer does not carry out is refused, the table
    unchanged: ``INSERT INTO t REPLACE WHERE ...`` ran as a plain INSERT before session 32."""
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path))
    paimon.sql("CREATE DATABASE db")
    paimon.sql("CREATE TABLE db.t (a INT, p INT) PARTITIONED BY (p)")
    paimon.sql("INSERT INTO db.t VALUES (1, 1), (2, 2)")
    before = _snapshot(str(tmp_path), "t")
    with pytest.raises(PaimonIndexError, match="REPLACE WHERE"):
        paimon.sql("INSERT INTO db.t REPLACE WHERE p = 1 SELECT 9 AS a, 1 AS p")
    assert _snapshot(str(tmp_path), "t") == before
    assert sorted(tuple(r) for r in paimon.sql("SELECT * FROM db.t").collect()) == [(1, 1), (2, 2)]


def test_partitions_that_do_not_exist(spark, tmp_path: Path) -> None:
    """TRUNCATE of a partition that does not exist changes nothing, no snapshot (Paimon's connector:
    the same for a whole spec); DROP PARTITION of one is refused unless IF EXISTS, before anything
    is written; a partition of another table kind or a column that is no partition key is refused."""
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path))
    paimon.sql("CREATE DATABASE db")
    paimon.sql("CREATE TABLE db.t (id INT, p STRING, d DATE) PARTITIONED BY (p, d)")
    paimon.sql("INSERT INTO db.t VALUES (1, 'x', DATE'2024-01-01'), (2, 'x', DATE'2024-01-02'), "
               "(3, 'y', NULL)")
    before = _snapshot(str(tmp_path), "t")
    paimon.sql("TRUNCATE TABLE db.t PARTITION (p = 'nope')")
    paimon.sql("ALTER TABLE db.t DROP IF EXISTS PARTITION (p = 'x', d = DATE'1999-01-01')")
    with pytest.raises(PaimonIndexError, match="PARTITIONS_NOT_FOUND"):
        paimon.sql("ALTER TABLE db.t DROP PARTITION (p = 'nope')")
    with pytest.raises(PaimonIndexError, match="not a partition column"):
        paimon.sql("TRUNCATE TABLE db.t PARTITION (id = 1)")
    with pytest.raises(PaimonIndexError, match="one PARTITION"):
        paimon.sql("ALTER TABLE db.t DROP PARTITION (p = 'x'), PARTITION (p = 'y')")
    assert _snapshot(str(tmp_path), "t") == before
    paimon.sql("ALTER TABLE db.t DROP PARTITION (d = DATE'2024-01-02')")  # some of the keys: every match
    assert sorted(tuple(r) for r in paimon.sql("SELECT id FROM db.t").collect()) == [(1,), (3,)]
    paimon.sql("ALTER TABLE db.t ADD PARTITION (p = 'w')")  # nothing to add: a partition holds rows
    assert _snapshot(str(tmp_path), "t") == before + 1


@pytest.mark.slow
def test_final_rows_equal_paimons_spark_connector(seeded, ours) -> None:
    """The same SQL text through Paimon's own Spark connector, on the copy of the seeded warehouse."""
    import paimonsql

    _, copy, _ = seeded  # the seeded tables, never changed by our side
    model, _ = ours
    statements = [text for _, text, _ in STEPS] + [text for _, text in FAILING]
    finals = [f"SELECT id, s, p FROM db.{t}" for t in TABLES]
    results = paimonsql.run(copy, statements + finals)
    for text, result in zip(statements, results, strict=False):
        expected_ok = text not in {t for _, t in FAILING}
        assert result["ok"] == expected_ok, (text, result)
    for table, result in zip(TABLES, results[len(statements):], strict=True):
        assert result["ok"], result
        theirs = sorted(tuple(r) for r in result["rows"])
        assert theirs == sorted(model[table]), table


@pytest.mark.parametrize("options", [{"bucket": "-1"}, {"bucket": "2", "bucket-key": "id"}],
                         ids=["unaware", "fixed"])
def test_tables_without_deletion_vectors_change_copy_on_write(spark, tmp_path: Path,
                                                              options: dict[str, str]) -> None:
    """DELETE / UPDATE / MERGE of append tables without deletion vectors (Paimon's default; refused
    before session 33): the files holding changed rows are rewritten, one snapshot each, the rows
    as a model's, and the rewritten files' old entries gone (no file listed twice)."""
    warehouse = str(tmp_path)
    create_table(warehouse, "db.c", APPEND_SCHEMA, partition_keys=["p"],
                 options={**options, "file-index.bloom-filter.columns": "id"})
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    model: Model = {"c": []}
    for first in (1, 11, 21):  # three writes: several files per partition
        rows = [(i, f"s{i % 4}", "xy"[i % 2]) for i in range(first, first + 10)]
        open_table(warehouse, "db.c").write(pa.Table.from_pylist(
            [dict(zip(("id", "s", "p"), r, strict=True)) for r in rows], APPEND_SCHEMA))
        model["c"] += rows
    assert open_table(warehouse, "db.c").count() == 30
    steps = [
        ("c", "DELETE FROM db.c WHERE id % 7 = 0 OR s = 's3'",
         _delete("c", lambda r, m: r[0] % 7 == 0 or r[1] == "s3")),
        ("c", "UPDATE db.c SET s = upper(s) WHERE p = 'x' AND id > 15",
         _update("c", lambda r, m: r[2] == "x" and r[0] > 15, lambda r: (r[0], r[1].upper(), r[2]))),
        ("c", "MERGE INTO db.c t USING (SELECT 2 AS id, 'm' AS s, 'x' AS p UNION ALL SELECT 99, 'n', 'y') u "
              "ON t.id = u.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *",
         lambda m: m.__setitem__("c", [r for r in m["c"] if r[0] != 2] + [(99, "n", "y")])),
    ]
    _run_steps(paimon, warehouse, model, steps)
    table = open_table(warehouse, "db.c").paimon_table
    splits = table.new_read_builder().new_scan().plan().splits()
    names = [f.file_name for split in splits for f in split.files]
    assert len(names) == len(set(names))
    assert sum(f.row_count for split in splits for f in split.files) == len(model["c"])  # no stale file
