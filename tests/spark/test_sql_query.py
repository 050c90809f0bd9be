"""Queries through the Spark noun (``attach(...).sql``) against Spark's own Parquet reader.

Reference: the same rows written as plain Parquet and read by ``spark.read.parquet`` under temp views,
the same SQL text with the Paimon names swapped for the views. Every shape where pushing a
predicate into one reference would be unsound (null-supplying sides, anti joins, ``IS NULL`` after an
outer join, non-deterministic functions, correlated subqueries, two references of one table with
different predicates) is in the list, over tables with indexes, deletion vectors and a primary-key
table with updates and deletes.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_index
from paimon_index.spark import attach
from paimon_index.spark.sql import parse
from paimon_index.spark.sql.query import rewrite
from paimon_index.table.metacache import configure, metadata_cache

pytestmark = pytest.mark.spark

ROWS = 3_000
A_OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "id",
             "file-index.bitmap.columns": "s", "file-index.range-bitmap.columns": "v"}
B_OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "name"}


def _a_rows(lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    v: list[float | None] = [None if i % 97 == 0 else (math.nan if i % 89 == 0 else (i % 50) - 25.0)
                             for i in ids]
    v = [-0.0 if i % 83 == 0 else x for i, x in zip(ids, v, strict=True)]
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "s": pa.array([None if i % 31 == 0 else f"s{i % 7}" for i in ids], pa.string()),
                     "v": pa.array(v, pa.float64())})


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> tuple[Any, Path]:
    root = tmp_path_factory.mktemp("sqlq")
    w = str(root / "w")
    a = paimon_index.create_table(w, "db.a", _a_rows(0, 1).schema, options=A_OPTIONS)
    for lo in range(0, ROWS, 1000):
        a.write(_a_rows(lo, lo + 1000))
    a.delete("(id >= 1300 AND id < 1400) OR id IN (5, 1234, 2718)")
    bschema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                         ("w", pa.int32())])
    b = paimon_index.create_table(w, "db.b", bschema, primary_keys=["id"], options=B_OPTIONS)
    b.upsert(pa.table({"id": pa.array(range(0, ROWS, 3), pa.int64()),
                       "name": [f"n{i % 5}" for i in range(0, ROWS, 3)],
                       "w": pa.array([i % 11 for i in range(0, ROWS, 3)], pa.int32())}, schema=bschema))
    b.upsert(pa.table({"id": pa.array(range(0, 600, 6), pa.int64()), "name": ["upd"] * 100,
                       "w": pa.array([None] * 100, pa.int32())}, schema=bschema))
    b.delete("id < 60")
    # The reference: the same rows as plain Parquet, read by Spark itself.
    for name, table in (("a", a), ("b", b)):
        path = root / f"{name}.parquet"
        pq.write_table(table.read(), path)
        spark.read.parquet(str(path)).createOrReplaceTempView(f"ref_{name}")
    return attach(spark, warehouse=w), root


def _reference_text(text: str) -> str:
    return re.sub(r"\b(?:paimon\.)?db\.([ab])\b", r"ref_\1", text)


def _normal(rows: list[Any]) -> list[tuple[Any, ...]]:
    def key(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return ("nan",)
        return v
    return sorted((tuple(key(v) for v in r) for r in rows), key=repr)


SHAPES = [
    "SELECT * FROM db.a WHERE id = 1233",
    "SELECT * FROM db.a WHERE s = 's3' AND v > 10",
    "SELECT count(*) FROM db.a WHERE s IS NULL OR v IS NULL",
    "SELECT count(*) FROM db.a WHERE v = 0.0",
    "SELECT count(*) FROM db.a WHERE isnan(v) OR v IN (1.0, -3.0)",
    "SELECT count(*) FROM db.a WHERE s NOT IN ('s1', 's2')",
    "SELECT count(*) FROM db.a WHERE id % 7 = 0 AND s = 's0'",
    # counted by the indexes' exact answers (bitmap on s, range bitmap on v; NULL, NaN, -0.0 in v)
    "SELECT count(*) FROM db.a WHERE v > 3",
    "SELECT count(*) FROM db.a WHERE v < 'NaN' OR v IS NULL",
    "SELECT count(*) FROM db.a WHERE v <> 0.0",
    "SELECT count(*) FROM db.a WHERE v BETWEEN -0.0 AND 2 AND s IN ('s1', 's2')",
    "SELECT count(*) FROM db.a WHERE s <> 's1'",
    "SELECT count(*) FROM db.a WHERE s IN ('s1', NULL)",
    "SELECT count(*) AS n FROM db.a WHERE s = 's3' HAVING count(*) > 5",
    "SELECT 1 AS one FROM db.a WHERE s = 's2' LIMIT 1",
    "SELECT count(*) FROM db.b WHERE name = 'upd'",
    "SELECT s, count(*), sum(v) FROM db.a WHERE id BETWEEN 100 AND 900 GROUP BY s",
    # inner join: both sides pruned by their own conjuncts
    "SELECT a.id, b.name FROM db.a a JOIN db.b b ON a.id = b.id AND b.name = 'n1' WHERE a.s = 's2'",
    # LEFT JOIN: WHERE on the null-supplying side is not pushed (IS NULL keeps unmatched rows)
    "SELECT a.id FROM db.a a LEFT JOIN db.b b ON a.id = b.id WHERE b.id IS NULL AND a.id < 200",
    "SELECT a.id, b.w FROM db.a a LEFT JOIN db.b b ON a.id = b.id AND b.w > 5 WHERE a.id < 300",
    "SELECT a.id, b.w FROM db.a a LEFT JOIN db.b b ON a.id = b.id WHERE coalesce(b.w, -1) < 0 AND a.id < 300",
    # ON about the preserved side of a LEFT JOIN filters nothing
    "SELECT count(*) FROM db.a a LEFT JOIN db.b b ON a.id = b.id AND a.s = 's1'",
    "SELECT b.id, a.s FROM db.a a RIGHT JOIN db.b b ON a.id = b.id AND a.s = 's1' WHERE b.id < 400",
    "SELECT count(*), count(a.id), count(b.id) FROM db.a a FULL JOIN db.b b ON a.id = b.id AND b.w = 3 "
    "WHERE a.s = 's4' OR b.name = 'n2'",
    "SELECT count(*) FROM db.a a LEFT ANTI JOIN db.b b ON a.id = b.id AND b.w < 4",
    "SELECT count(*) FROM db.a a LEFT SEMI JOIN db.b b ON a.id = b.id AND b.w < 4 AND a.s = 's5'",
    "SELECT count(*) FROM db.a a WHERE EXISTS (SELECT 1 FROM db.b b WHERE b.id = a.id AND b.name = 'upd')",
    "SELECT count(*) FROM db.a WHERE id IN (SELECT id FROM db.b WHERE w = 7) AND s = 's3'",
    "SELECT count(*) FROM db.a WHERE id NOT IN (SELECT id FROM db.b WHERE w = 7)",
    # two references of one table, different predicates
    "SELECT x.id, y.id FROM db.a x JOIN db.a y ON x.id + 1 = y.id WHERE x.s = 's1' AND y.s = 's2'",
    "WITH hot AS (SELECT * FROM db.a WHERE v > 20) SELECT count(*) FROM hot h JOIN db.a a ON h.id = a.id "
    "WHERE a.s = 's6'",
    "SELECT id FROM db.a WHERE id < 50 UNION ALL SELECT id FROM db.b WHERE id < 150",
    "SELECT id FROM db.a WHERE id < 100 EXCEPT SELECT id FROM db.b",
    "SELECT s, id, rank() OVER (PARTITION BY s ORDER BY v DESC NULLS LAST, id) r FROM db.a WHERE id < 400",
    "SELECT id, v FROM db.a WHERE v IS NOT NULL AND NOT isnan(v) ORDER BY v DESC, id LIMIT 7",
    "SELECT count(*) FROM db.a WHERE rand(7) < 2",
    # ORDER BY ... LIMIT: the read keeps its own top k (range bitmap on v), the statement the rest
    "SELECT id, v FROM db.a ORDER BY v DESC NULLS FIRST, id LIMIT 9",
    "SELECT id, v FROM db.a ORDER BY v ASC, id DESC LIMIT 5",
    "SELECT id, s FROM db.a WHERE v < 3 ORDER BY s DESC, id LIMIT 6",
    "SELECT id, -v AS v FROM db.a WHERE id < 900 ORDER BY v, id LIMIT 4",
    "SELECT id FROM db.a WHERE id % 5 = 1 AND rand(3) < 2 ORDER BY id DESC LIMIT 3",
    "SELECT count(*) FROM (SELECT id, s FROM db.a WHERE id > 2500) t WHERE t.s = 's0'",
    "SELECT * FROM db.b WHERE name = 'upd' AND w IS NULL",
    "SELECT name, count(*) FROM paimon.db.b GROUP BY name",
    # derived tables (and views put in place): the enclosing WHERE's conjuncts on plain projections
    # are copied down to the reference (session 32); grouping, LIMIT, computed columns and joins stop it
    "SELECT count(*) FROM (SELECT * FROM db.a) d WHERE d.s = 's3' AND v > 10",
    "SELECT k FROM (SELECT id AS k, s FROM db.a WHERE v > 0) AS d WHERE s = 's1' AND k < 500",
    "SELECT * FROM (SELECT * FROM (SELECT id, s, v FROM db.a) x WHERE x.v > 5) y WHERE y.s = 's2'",
    "SELECT d.k FROM (SELECT id, s FROM db.a) AS d(k, t) WHERE d.t = 's4' AND d.k > 100",
    "SELECT count(*) FROM (SELECT s, count(*) c FROM db.a GROUP BY s) d WHERE d.s = 's1'",
    "SELECT count(*) FROM (SELECT id, s FROM db.a ORDER BY id LIMIT 100) d WHERE s = 's1'",
    "SELECT count(*) FROM (SELECT id, s, id + 1 AS s2 FROM db.a) d WHERE s2 = 10 OR s = 's5'",
    "SELECT count(*) FROM (SELECT * FROM db.a WHERE id < 900) d LEFT JOIN db.b b ON d.id = b.id "
    "WHERE d.s = 's1' AND b.id IS NULL",
    "SELECT count(*) FROM (SELECT a.* FROM db.a a) d WHERE d.v IS NULL OR isnan(d.v)",
    "SELECT id FROM (SELECT id, s FROM db.a) d WHERE s = 's2' AND id IN (SELECT id FROM db.b WHERE w > 3)",
    "SELECT count(*) FROM (SELECT id, s AS x, v AS x FROM db.a) d WHERE id < 10",
    "SELECT count(*) FROM (SELECT DISTINCT s FROM db.a) d WHERE s IS NOT NULL",
    # Spark's TABLE statement (sqlglot read it as a column aliased `b`: it went to Spark, not found)
    "TABLE db.b",
    # join hints name the references' aliases (before session 32 the hint's name was replaced by the
    # read: "BROADCAST(_pyspark_... AS b)", a ParseException)
    "SELECT /*+ BROADCAST(b) */ a.id, b.name FROM db.a a JOIN db.b b ON a.id = b.id WHERE a.s = 's2'",
    "SELECT /*+ MERGE(a, b), REPARTITION(3) */ count(*) FROM db.a a JOIN db.b b ON a.id = b.id",
    # a column qualified by database.table (the reference is read under the alias `a`)
    "SELECT db.a.id, db.a.v FROM db.a LEFT SEMI JOIN db.b b ON db.a.id = b.id WHERE db.a.s = 's1'",
    # what Spark does to a reference before its SELECT sees it (each was dropped once: wrong rows)
    "SELECT s, v FROM db.a AS x(s, v, id) WHERE s < 40 AND v = 's1' ORDER BY s",
    "SELECT * FROM db.b PIVOT (count(id) AS n, max(w) AS m FOR name IN ('n1', 'upd'))",
    "SELECT name, col, count(*), sum(val) FROM db.b UNPIVOT (val FOR col IN (id, w)) WHERE name = 'n2' "
    "GROUP BY name, col",
    "SELECT count(*) FROM db.a TABLESAMPLE (0 PERCENT) WHERE s = 's3'",
    "SELECT count(*) FROM db.a TABLESAMPLE (4 ROWS)",
    # a parenthesized join (sqlglot hangs the join on the first table: it was dropped, every row of a)
    "SELECT count(*), count(b.id) FROM (db.a a LEFT JOIN db.b b ON a.id = b.id) WHERE a.s = 's1'",
    "SELECT a.id, b.w FROM (db.a a JOIN db.b b ON a.id = b.id AND b.w = 3) WHERE a.id < 900",
    # no column of the reference read: its rows counted from metadata (row counts minus vectors)
    "SELECT count(*) FROM db.a",
    "SELECT count(*) AS n, count(1), count(7) + 1 FROM paimon.db.b",
    "SELECT 1 AS one FROM db.a LIMIT 3",
    "SELECT count(*) FROM db.b HAVING count(*) > 5",
    "SELECT (SELECT count(*) FROM db.b) + count(*) FROM db.a a WHERE a.id < 10",
]


@pytest.mark.parametrize("text", SHAPES)
def test_query_equals_spark_over_the_same_parquet(warehouse: tuple[Any, Path], spark: Any, text: str) -> None:
    paimon, _ = warehouse
    ours = paimon.sql(text).collect()
    theirs = spark.sql(_reference_text(text)).collect()
    if "ORDER BY" in text and "OVER" not in text:
        assert [tuple(r) for r in ours] == [tuple(r) for r in theirs]
    else:
        assert _normal(ours) == _normal(theirs)
    assert len(theirs) > 0


def _pushed(paimon: Any, text: str) -> list[tuple[str, str | None]]:
    statement = parse(text)
    assert statement is not None
    return [(f"{r.name}:{r.alias}", r.where) for r in rewrite(paimon, statement).references]


@pytest.mark.parametrize("text,expected", [
    ("SELECT * FROM db.a WHERE id = 5 AND rand() < 0.5", [("db.a:a", "(id = 5)")]),
    ("SELECT * FROM db.a a LEFT JOIN db.b b ON a.id = b.id AND b.w > 5 AND a.s = 'x' WHERE b.id IS NULL "
     "AND a.v > 1", [("db.a:a", "(v > 1)"), ("db.b:b", "(w > 5)")]),
    ("SELECT * FROM db.a a RIGHT JOIN db.b b ON a.id = b.id AND a.s = 'x' WHERE b.w = 1",
     [("db.a:a", None), ("db.b:b", "(w = 1)")]),
    ("SELECT * FROM db.a a FULL JOIN db.b b ON a.id = b.id AND b.w = 1 WHERE a.s = 'x'",
     [("db.a:a", None), ("db.b:b", None)]),
    ("SELECT * FROM db.a a LEFT ANTI JOIN db.b b ON a.id = b.id AND b.w = 1 AND a.s = 'x'",
     [("db.a:a", None), ("db.b:b", "(w = 1)")]),
    # unqualified: `id` is a column of both tables, `s` of a only
    ("SELECT * FROM db.a JOIN db.b ON a.id = b.id WHERE s = 'x' AND id = 3",
     [("db.a:a", "(s = 'x')"), ("db.b:b", None)]),
    # an unknown source (a Spark view) may hold any column: unqualified names are not pushed
    ("SELECT * FROM db.a JOIN ref_b r ON a.id = r.id WHERE s = 'x' AND a.id = 3", [("db.a:a", "(id = 3)")]),
    ("SELECT * FROM db.a x JOIN db.a y ON x.id = y.id WHERE x.s = 's1' AND y.v < 0",
     [("db.a:x", "(s = 's1')"), ("db.a:y", "(v < 0)")]),
    ("SELECT * FROM db.a WHERE id IN (SELECT id FROM db.b WHERE w = 7)",
     [("db.a:a", None), ("db.b:b", "(w = 7)")]),
    # copied down through plain derived tables, renamed to the source's columns
    ("SELECT k FROM (SELECT id AS k, s FROM db.a WHERE v > 0) AS d WHERE s = 's1' AND k < 500",
     [("db.a:a", "(v > 0 AND `s` = 's1') AND (`id` < 500)")]),
    ("SELECT * FROM (SELECT * FROM (SELECT id, s, v FROM db.a) x WHERE x.v > 5) y WHERE y.s = 's2'",
     [("db.a:a", "(`v` > 5) AND (`s` = 's2')")]),
    ("SELECT count(*) FROM (SELECT id, s FROM db.a LIMIT 100) d WHERE s = 's1'", [("db.a:a", None)]),
    ("SELECT count(*) FROM (SELECT s, count(*) c FROM db.a GROUP BY s) d WHERE d.s = 's1'",
     [("db.a:a", None)]),
    # the statement's names and rows are not the table's: nothing pushed
    ("SELECT * FROM db.a AS x(s, v, id) WHERE s < 40", [("db.a:x", None)]),
    ("SELECT * FROM db.a TABLESAMPLE (5 ROWS) WHERE id = 3", [("db.a:a", None)]),
    ("SELECT * FROM db.b PIVOT (max(w) FOR name IN ('n1')) WHERE id = 3", [("db.b:b", None)]),
    ("SELECT * FROM (db.a a RIGHT JOIN db.b b ON a.id = b.id) WHERE a.s IS NULL AND b.w = 1",
     [("db.a:a", None), ("db.b:b", None)]),
])
def test_what_each_reference_is_given(warehouse: tuple[Any, Path], text: str,
                                      expected: list[tuple[str, str | None]]) -> None:
    paimon, _ = warehouse
    assert _pushed(paimon, text) == expected


@pytest.mark.parametrize("text,expected", [
    ("SELECT * FROM db.a WHERE s = 'x' ORDER BY v DESC, a.id LIMIT 3",
     ("`v` DESC NULLS LAST, `id` ASC NULLS FIRST", 3)),
    ("SELECT * FROM db.a ORDER BY v NULLS LAST LIMIT 2", ("`v` ASC NULLS LAST", 2)),
    ("SELECT -v AS v FROM db.a ORDER BY v LIMIT 2", None),            # ORDER BY the alias
    ("SELECT * FROM db.a WHERE rand() < 0.5 ORDER BY v LIMIT 2", None),  # a conjunct not pushed
    ("SELECT s, max(v) FROM db.a GROUP BY s ORDER BY s LIMIT 2", None),
    ("SELECT sum(v) OVER (ORDER BY id) FROM db.a ORDER BY id LIMIT 2", None),
    ("SELECT * FROM db.a JOIN db.b ON a.id = b.id ORDER BY a.id LIMIT 2", None),
    ("SELECT * FROM db.a ORDER BY id + 1 LIMIT 2", None),
])
def test_which_reads_keep_only_their_top_k(warehouse: tuple[Any, Path], text: str,
                                           expected: tuple[str, int] | None) -> None:
    paimon, _ = warehouse
    statement = parse(text)
    assert statement is not None
    ref = rewrite(paimon, statement).references[0]
    assert (None if ref.limit is None else (ref.order_by, ref.limit)) == expected


def test_indexes_prune_a_selective_reference(warehouse: tuple[Any, Path]) -> None:
    paimon, _ = warehouse
    statement = parse("SELECT * FROM db.a WHERE id = 2500")
    assert statement is not None
    (ref,) = rewrite(paimon, statement).references
    assert ref.planned is not None
    report = ref.planned.plan.report
    assert report.files_skipped_by_stats + report.files_skipped_by_index == 2  # 3 files, 1 holds it
    plan = paimon.sql("EXPLAIN SELECT * FROM db.a WHERE id = 2500").collect()[0][0]
    assert "== Paimon references ==" in plan and "pushed: (id = 2500)" in plan
    # Per file, the index bodies read (the one file the statistics leave: its Bloom filter on id).
    assert "index bodies read 1, not read 0:" in plan and "read id/bloom-filter (" in plan


@pytest.mark.parametrize("text,expected", [
    ("SELECT count(*) FROM db.a", True),
    ("SELECT count(1) AS n, 2 FROM db.b b LIMIT 1", True),
    ("SELECT count(*) FROM db.a VERSION AS OF 1", True),
    ("SELECT count(*) FROM db.a WHERE id < 3", False),  # a Bloom filter: no exact answer
    ("SELECT count(*) FROM db.a WHERE s = 's1'", True),  # the bitmap's exact answer
    ("SELECT count(*) FROM db.a WHERE s = 's1' AND v > 3", True),
    ("SELECT count(*) FROM db.a WHERE id % 7 = 0", False),
    ("SELECT count(*) FROM db.a WHERE s = 's1' AND rand() < 1", False),
    ("SELECT count(*) FROM db.a WHERE upper(s) = 'S1'", False),
    ("SELECT count(*) FROM db.b WHERE name = 'n1'", True),
    ("SELECT count(s) FROM db.a", False),
    ("SELECT count(*) FROM db.a GROUP BY s", False),
    ("SELECT count(DISTINCT *) FROM db.a", False),
    ("SELECT count(*), input_file_name() FROM db.a GROUP BY 2", False),
    ("SELECT count(*) FROM db.a TABLESAMPLE (5 ROWS)", False),
    ("SELECT count(*) FROM db.a JOIN db.b ON true", False),
])
def test_which_references_are_counted_from_metadata(warehouse: tuple[Any, Path], text: str,
                                                    expected: bool) -> None:
    paimon, _ = warehouse
    statement = parse(text)
    assert statement is not None
    assert rewrite(paimon, statement).references[0].rows_only is expected


@pytest.mark.parametrize("text,expected", [
    ("SELECT * FROM db.a WHERE s = 's1'", [["id", "s", "v"]]),
    ("SELECT count(*) FROM db.a WHERE s = 's1'", [["s"]]),
    ("SELECT a.id FROM db.a a JOIN db.b b USING (id) WHERE b.name = 'x'", [["id"], ["id", "name"]]),
    ("SELECT a.* FROM db.a a", [["id", "s", "v"]]),
    ("SELECT id FROM db.a NATURAL JOIN db.b", [["id", "s", "v"], ["id", "name", "w"]]),
    ("SELECT count(DISTINCT *) FROM db.a WHERE id < 3", [["id", "s", "v"]]),
    ("SELECT sum(v) FROM db.a WHERE id IN (SELECT id FROM db.b)", [["id", "v"], ["id"]]),
])
def test_the_columns_a_statement_may_read(warehouse: tuple[Any, Path], text: str,
                                          expected: list[list[str]]) -> None:
    """A superset of the columns each reference's statement reads (every name spelled anywhere;
    all of them under a ``*`` or a NATURAL join): the planned read weighs its driver read by them."""
    paimon, _ = warehouse
    statement = parse(text)
    assert statement is not None
    assert [r.reads for r in rewrite(paimon, statement).references] == expected


def test_sql_selecting_every_column_is_read_on_the_driver(warehouse: tuple[Any, Path], spark: Any,
                                                          monkeypatch: Any) -> None:
    """With the small read's file cap at one, a bitmap's rows over three files are read on the
    driver when the statement reads every column, and by Spark's reader when it reads fewer (the
    driver would decode more bytes); both as Spark's own read of the same rows answers."""
    from paimon_index.spark import planned

    paimon, _ = warehouse
    monkeypatch.setattr(planned, "SMALL_READ_FILES", 1)
    for text, driver in [("SELECT * FROM db.a WHERE s = 's1'", True),
                         ("SELECT id FROM db.a WHERE s = 's1'", False)]:
        statement = parse(text)
        assert statement is not None
        rewritten = rewrite(paimon, statement)
        (ref,) = rewritten.references
        assert ref.planned is not None and len(ref.planned.plan.files) > 1
        assert (ref.planned.small_rows is not None) is driver, text
        assert _normal(rewritten.dataframe(spark).collect()) == \
            _normal(spark.sql(_reference_text(text)).collect()), text


#: Statements answered by the counted rows alone (no Spark job); then some that must not be folded.
FOLDED_COUNTS = [
    "SELECT count(*) FROM db.a",
    "SELECT COUNT(1) AS n, count(*) FROM db.b",
    "SELECT count(*), count(*) AS `Two words` FROM db.a AS x",
    "SELECT count(*) AS n FROM db.a WHERE s = 's3'",  # the bitmap counts it exactly
    "SELECT * FROM (SELECT count(*) AS n FROM db.b) AS x",
]
UNFOLDED_COUNTS = [
    "SELECT count(*) FROM db.a LIMIT 0",
    "SELECT count(*) AS n FROM db.a HAVING count(*) > 5",
    "SELECT count(*) AS n FROM db.a HAVING count(*) > 5000",
    "SELECT count(DISTINCT 1) FROM db.b",
    "SELECT count(*) + 1 FROM db.a",
    "SELECT count(0) FROM db.a",
    "SELECT count(*) FROM db.a WHERE s = 's3' OR id % 2 = 0",  # not counted by the indexes
    "SELECT (SELECT count(*) FROM db.b) + (SELECT count(1) FROM db.a) AS m",
    "SELECT count(*) FROM db.a UNION ALL SELECT count(*) FROM db.b",
]


def test_a_count_of_counted_rows_is_answered_without_a_spark_job(warehouse: tuple[Any, Path],
                                                                  spark: Any) -> None:
    """``SELECT count(*) FROM t`` counted ``spark.range(<rows>)`` in a Spark job (~50-70 ms, where
    Paimon's connector answers by aggregate push-down); a SELECT of nothing but ``count(*)`` /
    ``count(1)`` over counted rows is now an inline table Spark collects without a job. Column
    names, types and rows as Spark's own read of the same rows gives them; other shapes unchanged."""
    paimon, _ = warehouse
    context = spark.sparkContext

    def run(number: int, text: str) -> tuple[Any, list[Any], list[int]]:
        group = f"fold-count-{number}"
        context.setJobGroup(group, text)
        try:
            got = paimon.sql(text)
            rows = got.collect()
        finally:
            context.setJobGroup(None, None)  # type: ignore[arg-type]
        return got, rows, list(context.statusTracker().getJobIdsForGroup(group))

    for number, text in enumerate(FOLDED_COUNTS + UNFOLDED_COUNTS):
        got, rows, jobs = run(number, text)
        want = spark.sql(_reference_text(text))
        assert got.columns == want.columns, text
        assert [f.dataType for f in got.schema.fields] == [f.dataType for f in want.schema.fields], text
        assert _normal(rows) == _normal(want.collect()), text
        if text in FOLDED_COUNTS:
            assert jobs == [], f"{text}: Spark jobs {jobs}"
    _, rows, jobs = run(-1, "SELECT count(*) FROM db.a VERSION AS OF 1")  # the first 1,000 rows
    assert (rows, jobs) == ([(1000,)], [])
    plan = paimon.sql("EXPLAIN SELECT count(*) FROM db.a").collect()[0][0]
    assert "row count from metadata" in plan and "LocalTableScan" in plan


#: ``SELECT * FROM t [WHERE <pushed conjuncts>]``: the planned read is the answer; then shapes that
#: are not (a subquery, a conjunct not pushed, another projection, a LIMIT, a hint, a sample).
READ_IS_THE_ANSWER = [
    "SELECT * FROM db.a WHERE s = 's1'",
    "SELECT * FROM db.b WHERE id = 42",
    "SELECT * FROM db.a AS x WHERE x.v > 3 AND x.s IS NOT NULL",
    "SELECT * FROM db.b WHERE name = 'upd' AND w IS NULL",
    "SELECT * FROM db.a",
    "SELECT * FROM db.a WHERE v = 0.0 OR isnan(v)",
]
READ_IS_NOT_THE_ANSWER = [
    "SELECT * FROM db.a WHERE id IN (SELECT id FROM db.b WHERE w = 7)",
    "SELECT * FROM db.a WHERE rand(3) < 2 AND s = 's1'",
    "SELECT *, 1 AS one FROM db.b WHERE id < 30",
    "SELECT * EXCEPT (v) FROM db.a WHERE s = 's1'",
    "SELECT id, s FROM db.a WHERE s = 's1'",
    "SELECT * FROM db.a WHERE s = 's1' LIMIT 1000",
    "SELECT DISTINCT * FROM db.b WHERE w = 3",
    "SELECT /*+ REPARTITION(3) */ * FROM db.b WHERE w = 3",
    "SELECT * FROM db.a TABLESAMPLE (100 PERCENT) WHERE s = 's1'",
]


def test_select_star_with_pushed_conjuncts_is_the_planned_read(warehouse: tuple[Any, Path],
                                                               spark: Any) -> None:
    """``SELECT * FROM t WHERE <every conjunct pushed>`` ran as a statement over a temporary view of
    the planned read, which already applies that WHERE: ~15-20 ms of a 40 ms point lookup. It is now
    that read's DataFrame (no view, no alias in its plan); its columns, types and rows are Spark's
    own read's. Other shapes still run as statements, with the same answers as before."""
    paimon, _ = warehouse
    for text in READ_IS_THE_ANSWER + READ_IS_NOT_THE_ANSWER:
        got, want = paimon.sql(text), spark.sql(_reference_text(text))
        assert got.columns == want.columns, text
        assert [f.dataType for f in got.schema.fields] == [f.dataType for f in want.schema.fields], text
        if "TABLESAMPLE" not in text and "LIMIT" not in text:
            assert _normal(got.collect()) == _normal(want.collect()), text
        else:  # which rows a sample or a LIMIT keeps is Spark's choice: as many
            assert got.count() == want.count(), text
        analyzed = got._jdf.queryExecution().analyzed().toString()
        assert ("SubqueryAlias" not in analyzed) is (text in READ_IS_THE_ANSWER), text


def test_a_count_reads_no_data_file(warehouse: tuple[Any, Path], spark: Any) -> None:
    """``SELECT count(*)`` of a table with deletion vectors read every file's row positions (0.67 s
    on TPC-H SF1's lineitem, Paimon's connector 0.09 s); its answer is the files' row counts minus
    their vectors. Time travel counts the snapshot's files."""
    paimon, _ = warehouse
    for name in ("db.a", "db.b"):
        expected = spark.sql(f"SELECT count(*) FROM ref_{name[-1]}").collect()[0][0]
        plan = paimon.sql(f"EXPLAIN SELECT count(*) FROM {name}").collect()[0][0]
        assert f"row count from metadata ({expected} rows, no data read)" in plan
        assert "Relation" not in plan.split("== Paimon references ==")[0]  # no file scan in Spark's plan
        assert paimon.sql(f"SELECT count(*) FROM {name}").collect()[0][0] == expected
        # The vectors' cardinalities come from the index manifest: no DV index file is read (the
        # metadata cache off, which would otherwise hand over vectors parsed before).
        statement = parse(f"SELECT count(*) FROM {name}")
        assert statement is not None
        budget = metadata_cache().stats()["max_bytes"]
        configure(max_bytes=0)
        try:
            (ref,) = rewrite(paimon, statement).references
        finally:
            configure(max_bytes=budget)
        assert ref.planned is not None and ref.planned.plan.report.dv_requests == 0
    assert paimon.sql("SELECT count(*) FROM db.a VERSION AS OF 1").collect()[0][0] == 1000


def test_a_count_the_indexes_answer_exactly_reads_no_data_file(warehouse: tuple[Any, Path],
                                                               spark: Any) -> None:
    """``SELECT count(*) ... WHERE`` whose every conjunct the indexes answer exactly (a bitmap's
    ``=``/``IN``, a range bitmap's comparisons, deletion vectors subtracted) is the size of their
    answer: no data file read, the WHERE gone from Spark's plan; Spark's count of the same rows."""
    paimon, _ = warehouse
    for text in ("SELECT count(*) FROM db.a WHERE s IN ('s1', 's4') AND v >= -3",
                 "SELECT count(*) FROM db.b WHERE name = 'upd'"):
        expected = spark.sql(_reference_text(text)).collect()[0][0]
        plan = paimon.sql(f"EXPLAIN {text}").collect()[0][0]
        assert f"row count from the indexes' exact answer ({expected} rows, no data read)" in plan, plan
        assert "Relation" not in plan.split("== Paimon references ==")[0]
        assert paimon.sql(text).collect()[0][0] == expected
    # NaN is the largest DOUBLE and equal to itself in Spark: against Spark's filter over the rows in
    # memory (its Parquet reader drops row groups by pyarrow's statistics, which leave NaN out).
    rows = spark.createDataFrame(paimon_index.open_table(str(warehouse[1] / "w"), "db.a").read())
    for where in ("v >= 'NaN'", "v = 'NaN' OR v < -24", "v > 24"):
        text = f"SELECT count(*) FROM db.a WHERE {where}"
        assert "exact answer" in paimon.sql(f"EXPLAIN {text}").collect()[0][0], where
        assert paimon.sql(text).collect()[0][0] == rows.filter(where).count() > 0, where
    # Not exact (a Bloom filter's range): read, and Spark applies the WHERE.
    text = "SELECT count(*) FROM db.a WHERE id < 1500 AND s = 's1'"
    assert "planned read" in paimon.sql(f"EXPLAIN {text}").collect()[0][0]
    assert paimon.sql(text).collect()[0][0] == spark.sql(_reference_text(text)).collect()[0][0]


def test_statement_without_paimon_tables_goes_to_spark_unchanged(warehouse: tuple[Any, Path]) -> None:
    paimon, _ = warehouse
    assert paimon.sql("SELECT count(*) FROM ref_a WHERE id < 10").collect()[0][0] == 9
    assert paimon.sql("SELECT 1 AS one").collect()[0].one == 1


def test_a_temp_view_shadows_a_paimon_table_of_the_current_database(warehouse: tuple[Any, Path],
                                                                    spark: Any) -> None:
    paimon, _ = warehouse
    paimon.current_database = "db"
    try:
        assert paimon.sql("SELECT count(*) FROM a").collect()[0][0] == paimon.table("db.a").count()
        spark.range(3).createOrReplaceTempView("a")
        assert paimon.sql("SELECT count(*) FROM a").collect()[0][0] == 3
    finally:
        spark.catalog.dropTempView("a")
        paimon.current_database = "default"


def test_missing_table_in_a_warehouse_database_is_named(warehouse: tuple[Any, Path]) -> None:
    paimon, _ = warehouse
    with pytest.raises(paimon_index.TableNotFoundError, match=r"db\.nope.*CREATE TABLE"):
        paimon.sql("SELECT * FROM db.nope")
    with pytest.raises(paimon_index.SqlError, match="one statement per call"):
        paimon.sql("SELECT 1; SELECT 2")


def test_braces_in_the_text_survive_the_rewrite(warehouse: tuple[Any, Path]) -> None:
    paimon, _ = warehouse
    row = paimon.sql("SELECT '{x}' AS t, count(*) AS n FROM db.a WHERE s = '{s1}'").collect()[0]
    assert (row.t, row.n) == ("{x}", 0)


@pytest.mark.parametrize("text,expected", [
    ("SELECT * FROM db.t FOR SYSTEM_VERSION AS OF 2", "SELECT * FROM db.t VERSION AS OF 2"),
    ("SELECT * FROM db.t SYSTEM_TIME AS OF '2024-01-01'", "SELECT * FROM db.t TIMESTAMP AS OF '2024-01-01'"),
    ("SELECT * FROM db.t FOR VERSION AS OF 'tag'", "SELECT * FROM db.t VERSION AS OF 'tag'"),
    ("SELECT 'FOR SYSTEM_TIME AS OF 1' FROM db.t", "SELECT 'FOR SYSTEM_TIME AS OF 1' FROM db.t"),
    ("SELECT x, system_time AS of FROM db.t", "SELECT x, system_time AS of FROM db.t"),
])
def test_spark_time_travel_spellings_are_read(text: str, expected: str) -> None:
    """`FOR SYSTEM_VERSION AS OF` did not parse, so the statement went to Spark unchanged and failed."""
    from paimon_index.spark.sql.names import _temporal_spelled

    assert _temporal_spelled(text) == expected


def test_one_statement_lists_the_warehouse_once(warehouse: tuple[Any, Path],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement resolves each name several times (is it Paimon's? then its rewrite); each
    resolution listed the warehouse's databases and tables again — requests on an object store."""
    from paimon_index.table import catalog as table_catalog

    paimon, _ = warehouse
    calls: list[str] = []
    for name in ("database_names", "table_names"):
        real = getattr(table_catalog, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(*args, **kwargs)
        monkeypatch.setattr(table_catalog, name, counted)
    text = "SELECT count(*) FROM db.a AS a JOIN db.b AS b ON a.id = b.id WHERE a.id < 100 AND b.w > 2"
    expected = paimon.spark.sql(_reference_text(text)).collect()
    assert paimon.sql(text).collect() == expected
    assert sorted(calls) == ["database_names", "table_names"]
    calls.clear()
    paimon.sql("SELECT 1 FROM db.a LIMIT 1").collect()
    assert calls, "a new statement lists again (a table created in between is seen)"


def test_each_reference_opens_its_table_once(warehouse: tuple[Any, Path], spark: Any, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference opened its table for its columns, again for time travel, again in the planned
    read and again in the merge read's fallback — each open reads the schema (and on an object
    store, requests). One open per reference, the answers unchanged."""
    from paimon_index.table import catalog as table_catalog

    paimon, _ = warehouse
    merge_on_read = paimon_index.create_table(str(tmp_path / "m"), "db.m", _a_rows(0, 1).schema,
                                              primary_keys=["id"], options={"bucket": "1"})
    merge_on_read.write(_a_rows(0, 50))
    merge_on_read.write(_a_rows(40, 60))
    paimon_m = attach(spark, warehouse=str(tmp_path / "m"))
    opened: list[str] = []
    real = table_catalog.open_table

    def counted(*args: Any, **kwargs: Any) -> Any:
        opened.append(args[1] if len(args) > 1 else kwargs["identifier"])
        return real(*args, **kwargs)
    monkeypatch.setattr(table_catalog, "open_table", counted)
    cases = [
        (paimon, "SELECT count(*) FROM db.a WHERE id < 100", ["db.a"]),
        (paimon, "SELECT count(*) FROM db.a AS x JOIN db.a AS y ON x.id = y.id WHERE x.id < 10",
         ["db.a"] * 2),
        (paimon, "SELECT count(*), sum(w) FROM db.b WHERE w > 2", ["db.b"]),
        (paimon, "SELECT count(*) FROM db.a VERSION AS OF 1", ["db.a"]),
    ]
    for noun, text, want in cases:
        opened.clear()
        answer = [tuple(r) for r in noun.sql(text).collect()]
        if "VERSION AS OF 1" in text:
            assert answer == [(1000,)]  # the first write, before any delete
        else:
            assert answer == [tuple(r) for r in spark.sql(_reference_text(text)).collect()], text
        assert opened == want, text
    opened.clear()
    assert tuple(paimon_m.sql("SELECT count(*), max(id) FROM db.m WHERE id > 10").collect()[0]) == (49, 59)
    assert opened == ["db.m"]
