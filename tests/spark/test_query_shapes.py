"""Ordinary Spark SQL over a ``paimon_index`` table returns exactly what ``spark.read.parquet`` returns.

The reference: the same rows written by Spark itself to a Parquet directory, queried with the same
SQL. Every query runs with the file indexes on and off; the single-scan queries also run with
filter pushdown forced on (private key ``SINGLE_SCAN_PUSHDOWN``), so the Spark-filter translation is checked
end to end on every Spark version, not only where pushdown is on by default.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema

from paimon_index.spark.datasource import pushdown_safe
from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
from paimon_index.table.write import write_arrow

pytestmark = pytest.mark.spark

TABLE = "db.t"
ROWS_PER_FILE = 24
#: Each file holds its own range of ``c`` (file 2 also NULLs), so the bitmap index skips files.
C_BASE = (0, 5, 10)
INDEX_OPTIONS = {"bucket": "-1", "file-index.bitmap.columns": "c,s,bo",
                 "file-index.bloom-filter.columns": "id"}
MODES = {"index": {}, "no index": {"file-index.read.enabled": "false"}}
PUSHED = {"pushdown": {SINGLE_SCAN_PUSHDOWN: "true"},
          "pushdown, no index": {SINGLE_SCAN_PUSHDOWN: "true", "file-index.read.enabled": "false"}}


def _rows() -> pa.Table:
    parts = []
    for f, base in enumerate(C_BASE):
        ids = range(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE)
        parts.append({
            "id": list(ids),
            "c": [None if f == 2 and i % 3 == 0 else base + i % 5 for i in ids],
            "s": [[None, "a", "b", "ab", "x%_"][i % 5] for i in ids],
            "bo": [[True, False, None][i % 3] for i in ids],
            "d": [[0.0, -0.0, math.nan, None, 1.5, -2.0][i % 6] for i in ids],
            "st": [None if i % 7 == 0 else {"a": i % 4, "b": str(i)} for i in ids],
            "arr": [None if i % 5 == 0 else list(range(i % 3)) for i in ids],
            "m": [None if i % 6 == 0 else [("k", i % 2), ("j", i)] for i in ids],
        })
    schema = pa.schema([("id", pa.int64()), ("c", pa.int32()), ("s", pa.string()), ("bo", pa.bool_()),
                        ("d", pa.float64()),
                        ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
                        ("arr", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int64()))])
    return pa.concat_tables(pa.Table.from_pydict(p, schema=schema) for p in parts)


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(warehouse of the Paimon table, Parquet directory written by Spark) over the same rows."""
    root = tmp_path_factory.mktemp("shapes")
    rows = _rows()
    catalog = CatalogFactory.create({"warehouse": str(root / "wh")})
    catalog.create_database("db", True)
    catalog.create_table(TABLE, Schema.from_pyarrow_schema(rows.schema, options=INDEX_OPTIONS), False)
    table = catalog.get_table(TABLE)
    for start in range(0, rows.num_rows, ROWS_PER_FILE):
        write_arrow(table, rows.slice(start, ROWS_PER_FILE))
    parquet = str(root / "parquet")
    spark.createDataFrame(rows).coalesce(1).write.parquet(parquet)
    return str(root / "wh"), parquet


def _load(spark: Any, warehouse: str, options: dict[str, str]) -> Any:
    reader = spark.read.format("paimon_index").option("warehouse", warehouse)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(TABLE)


def _canon(rows: list[Any]) -> list[str]:
    """Rows as sortable text (NaN, -0.0, nested values and NULLs compare as written)."""
    return sorted(repr(r.asDict(recursive=True)) for r in rows)


def _check(spark: Any, tables: tuple[str, str], options: dict[str, str], statements: list[str]) -> None:
    """Run the statements in order against fresh views ``pi`` (paimon_index) and ``pq`` (Parquet)."""
    warehouse, parquet = tables
    _load(spark, warehouse, options).createOrReplaceTempView("pi")
    spark.read.parquet(parquet).createOrReplaceTempView("pq")
    for sql in statements:
        want = _canon(spark.sql(sql.format(t="pq")).collect())
        got = _canon(spark.sql(sql.format(t="pi")).collect())
        assert got == want, sql


# Item 1: one relation scanned more than once (in one query, or by queries run one after another).
SHAPES = {
    "self-join": ["SELECT a.id, b.id FROM {t} a JOIN {t} b ON a.c = b.c WHERE a.id = 1"],
    "cross join, one side unfiltered": ["SELECT count(*) FROM {t} a CROSS JOIN {t} b WHERE a.id = 1"],
    "scalar subquery": ["SELECT id, (SELECT count(*) FROM {t}) AS n FROM {t} WHERE c = 5"],
    "in-subquery": ["SELECT id FROM {t} WHERE c IN (SELECT c FROM {t} WHERE id = 1)"],
    "exists": ["SELECT id FROM {t} a WHERE a.s = 'a' AND EXISTS "
               "(SELECT 1 FROM {t} b WHERE b.c = a.c AND b.id <> a.id AND b.bo)"],
    "view reused after a filtered query": ["SELECT id FROM {t} WHERE c = 5", "SELECT count(*) FROM {t}"],
    "view reused with another filter": ["SELECT id FROM {t} WHERE c = 5", "SELECT id FROM {t} WHERE c = 11"],
    "union of two filtered scans": ["SELECT id FROM {t} WHERE c = 5 UNION ALL "
                                    "SELECT id FROM {t} WHERE s = 'b'"],
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_relation_scanned_twice(spark: Any, tables: tuple[str, str], shape: str, mode: str) -> None:
    _check(spark, tables, MODES[mode], SHAPES[shape])


@pytest.mark.parametrize("mode", list(MODES))
def test_dataframe_reused_and_cached(spark: Any, tables: tuple[str, str], mode: str) -> None:
    warehouse, parquet = tables
    frames = {"pi": _load(spark, warehouse, MODES[mode]), "pq": spark.read.parquet(parquet)}
    got: dict[str, list[Any]] = {}
    for name, df in frames.items():
        filtered = df.filter("c = 5")
        out = [filtered.count(), df.count(), _canon(df.filter("s = 'a'").collect()), df.count()]
        cached = df.filter("bo").cache()
        out += [cached.filter("c = 6").count(), cached.count(), df.filter("c = 7").count()]
        cached.unpersist()
        got[name] = out
    assert got["pi"] == got["pq"]


# Item 2 (NULL semantics of negations), item 3 (crashes) and nested columns: single-scan queries.
WHERE = [
    "NOT (c <=> 5)", "c <=> 5", "c <=> NULL", "NOT (c <=> NULL)",
    "bo IS NOT TRUE", "bo IS NOT FALSE", "bo <=> false", "NOT bo",
    "NOT (c IN (1, 2))", "c IN (1, NULL)", "NOT (c IN (1, NULL))", "c NOT IN (6, 7)",
    "NOT (c = 5)", "NOT (c > 3)", "NOT (c IS NULL)",
    "NOT (s LIKE 'a%')", "NOT contains(s, 'b')", "endswith(s, 'b')",
    "s = 'x%_'", "NOT (s <=> 'a')",
    "d > 0.0", "d = -0.0", "NOT (d < 1.0)", "d <=> CAST('NaN' AS DOUBLE)", "d IN (0.0, 1.5)",
    "c = 99", "c = 99 AND s = 'a'",  # the indexes rule out every file
    "st.a = 1", "st IS NULL", "size(arr) > 1 AND m['k'] = 1", "id = 30 AND st.b = '30'",
]


@pytest.fixture(scope="module")
def expected(spark: Any, tables: tuple[str, str]) -> dict[str, list[str]]:
    """What Spark returns over the Parquet copy, per WHERE clause."""
    spark.read.parquet(tables[1]).createOrReplaceTempView("pq_where")
    return {w: _canon(spark.sql(f"SELECT * FROM pq_where WHERE {w}").collect()) for w in WHERE}


@pytest.mark.parametrize("mode", ["index", "pushdown",
                                  pytest.param("pushdown, no index", marks=pytest.mark.slow)])
def test_single_scan_filters(spark: Any, tables: tuple[str, str], expected: dict[str, list[str]],
                             mode: str) -> None:
    wrong = []
    for where in WHERE:
        df = _load(spark, tables[0], {**MODES, **PUSHED}[mode])  # fresh: one scan per DataFrame
        try:
            got = _canon(df.filter(where).collect())
        except Exception as e:  # collected, so one run shows every failing clause
            wrong.append(f"{where}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
            continue
        if got != expected[where]:
            wrong.append(f"{where}: {len(got)} rows, Spark over Parquet: {len(expected[where])}")
    assert not wrong, "\n".join(wrong)


def test_nested_columns_read_as_spark_reads_them(spark: Any, tables: tuple[str, str]) -> None:
    warehouse, parquet = tables
    want = spark.read.parquet(parquet).schema.simpleString()
    assert _load(spark, warehouse, {}).schema.simpleString() == want
    _check(spark, tables, {}, ["SELECT * FROM {t}",
                               "SELECT id, st.b, get(arr, 1), m['j'] FROM {t} WHERE id < 5"])


def test_pushdown_is_off_by_default_where_spark_shares_the_plan(spark: Any, tables: tuple[str, str]) -> None:
    """The canary: with pushdown forced on, a self-join is wrong exactly on the versions the gate
    turns pushdown off by default (Spark keeps the pushed plan on the relation there)."""
    warehouse, parquet = tables
    sql = SHAPES["self-join"][0]
    spark.read.parquet(parquet).createOrReplaceTempView("pq")
    want = _canon(spark.sql(sql.format(t="pq")).collect())
    _load(spark, warehouse, PUSHED["pushdown"]).createOrReplaceTempView("pi")
    forced = _canon(spark.sql(sql.format(t="pi")).collect())
    assert (forced == want) == pushdown_safe()
    plan = _load(spark, warehouse, {}).filter("c = 5")._jdf.queryExecution().executedPlan().toString()
    assert ("Filter (" in plan) != pushdown_safe(), plan  # off: Spark applies every filter itself


@pytest.mark.parametrize(("key", "nearest"), [
    ("file-index.read.enable", "file-index.read.enabled"),
    ("scan.snapshotid", "scan.snapshot-id"),
    ("metadata-column", "metadata-columns"),
])
def test_misspelt_read_option_is_an_error(spark: Any, tables: tuple[str, str], key: str,
                                          nearest: str) -> None:
    with pytest.raises(Exception, match=rf"unknown read option '{key}'.*did you mean '{nearest}'"):
        _load(spark, tables[0], {key: "false"}).count()


def test_option_keys_ignore_case_and_catalog_options_pass(spark: Any, tables: tuple[str, str]) -> None:
    options = {"File-Index.Read.Enabled": "false", "fs.s3.endpoint": "http://unused.invalid"}
    assert _load(spark, tables[0], options).filter("c = 5").count() == 5


def test_misspelt_write_option_is_an_error(spark: Any, tables: tuple[str, str]) -> None:
    df = spark.createDataFrame([(1,)], "id bigint")
    bad = r"unknown write option 'bucket-exclusiv'.*did you mean 'bucket-exclusive'"
    with pytest.raises(Exception, match=bad):
        (df.write.format("paimon_index").option("warehouse", tables[0]).option("bucket-exclusiv", "true")
         .mode("append").save(TABLE))


@pytest.fixture
def _no_cache(spark: Any) -> Iterator[None]:
    yield
    spark.catalog.clearCache()


def test_cached_dataframe_matches_parquet(spark: Any, tables: tuple[str, str], _no_cache: None) -> None:
    warehouse, parquet = tables
    counts = []
    for df in (_load(spark, warehouse, {}), spark.read.parquet(parquet)):
        df.cache()
        counts.append((df.filter("c = 5").count(), df.count(), df.filter("c IS NULL").count()))
    assert counts[0] == counts[1]


def test_indexes_ruling_out_every_file_on_the_driver(spark: Any, tmp_path: Any) -> None:
    """Embedded indexes (small containers kept in the manifest) let the driver drop every split;
    Spark then reads one empty partition of its own, which must yield no rows, not fail."""
    rows = _rows().select(["id", "c"])
    catalog = CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    options = {"bucket": "-1", "file-index.bitmap.columns": "c", "file-index.in-manifest-threshold": "1mb"}
    catalog.create_table(TABLE, Schema.from_pyarrow_schema(rows.schema, options=options), False)
    for start in range(0, rows.num_rows, ROWS_PER_FILE):
        write_arrow(catalog.get_table(TABLE), rows.slice(start, ROWS_PER_FILE))
    for where, count in [("c = 99", 0), ("c = 6", 5)]:
        assert _load(spark, str(tmp_path), PUSHED["pushdown"]).filter(where).count() == count, where


def test_planned_read_filters_and_shapes(spark: Any, tables: tuple[str, str],
                                         expected: dict[str, list[str]]) -> None:
    """The planned read (``jobs.read``) with each WHERE given to it (the indexes prune for it, Spark
    filters), and as a view under the relation-reuse shapes."""
    from paimon_index.spark import jobs

    warehouse, parquet = tables
    wrong = []
    for where in WHERE:
        got = _canon(jobs.read(spark, TABLE, where, warehouse=warehouse).collect())
        if got != expected[where]:
            wrong.append(f"{where}: {len(got)} rows, Spark over Parquet: {len(expected[where])}")
    assert not wrong, "\n".join(wrong)
    planned = jobs.read(spark, TABLE, warehouse=warehouse)
    assert planned.schema.simpleString() == spark.read.parquet(parquet).schema.simpleString()
    planned.createOrReplaceTempView("pi")
    spark.read.parquet(parquet).createOrReplaceTempView("pq")
    for shape in ("self-join", "exists", "view reused with another filter", "union of two filtered scans"):
        for sql in SHAPES[shape]:
            assert _canon(spark.sql(sql.format(t="pi")).collect()) == \
                _canon(spark.sql(sql.format(t="pq")).collect()), sql
