"""The paimon_index Spark source: same rows as brute force, filters pushed into the indexes."""

from __future__ import annotations

import itertools
import operator
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.errors import InvalidOptionError
from paimon_index.predicate import Leaf, Op, bind
from paimon_index.spark.datasource import spark_filter_to_predicate
from paimon_index.spark.options import (
    SINGLE_SCAN_PUSHDOWN,
    parse_read_options,
    parse_write_options,
    pushdown_safe,
)
from paimon_index.table.write import write_arrow
from paimon_index.types import parse_type

pytestmark = pytest.mark.spark


def test_spark_filters_translate_to_predicates() -> None:
    assert spark_filter_to_predicate(EqualTo(("s",), "a")) == Leaf(Op.EQ, "s", ("a",))
    assert spark_filter_to_predicate(Not(In(("i",), (1, 2)))) == Leaf(Op.NOT_IN, "i", (1, 2))
    assert spark_filter_to_predicate(Not(GreaterThan(("i",), 3))) == Leaf(Op.LE, "i", (3,))
    assert spark_filter_to_predicate(Not(IsNull(("i",)))) == Leaf(Op.IS_NOT_NULL, "i")
    assert spark_filter_to_predicate(StringStartsWith(("s",), "ab")) == Leaf(Op.STARTS_WITH, "s", ("ab",))
    assert spark_filter_to_predicate(EqualTo(("a", "b"), 1)) is None  # nested field
    assert spark_filter_to_predicate(Not(StringStartsWith(("s",), "x"))) is None


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    root = tmp_path_factory.mktemp("spark-warehouse")
    rng = np.random.default_rng(11)
    statuses = np.array(["NEW", "PAID", "SHIPPED", None], dtype=object)
    parts = [pa.table({
        "id": pa.array(np.arange(5_000, dtype=np.int64) + b * 5_000),
        "status": pa.array(statuses[rng.integers(0, 4, 5_000)], pa.string()),
        "score": pa.array(rng.integers(0, 100, 5_000).astype(np.int32)),
        "ts": pa.array(np.arange(5_000, dtype=np.int64) * 1_000 + b, pa.timestamp("ms")),  # TIMESTAMP(3)
    }) for b in range(3)]
    catalog = CatalogFactory.create({"warehouse": str(root)})
    catalog.create_database("db", True)
    options = {"bucket": "-1", "file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "id",
               "file-index.range-bitmap.columns": "score"}
    catalog.create_table("db.orders", Schema.from_pyarrow_schema(parts[0].schema, options=options), False)
    table = catalog.get_table("db.orders")
    for part in parts:
        write_arrow(table, part)
    return root, pa.concat_tables(parts)


@pytest.mark.parametrize(("where", "pushed"), [
    ("status = 'PAID' AND score >= 90", True),
    ("NOT (status = 'NEW') AND id < 100", True),
    ("id IN (7, 12345) OR status IS NULL", False),  # an OR conjunct is not offered to Python sources
    ("score + 1 = 50", False),  # not translatable: Spark applies it
])
def test_reads_equal_brute_force(spark, warehouse: tuple[Path, pa.Table], where: str, pushed: bool) -> None:
    root, everything = warehouse
    # One filter per fresh DataFrame: forced pushdown is exact on every Spark (docs/semantics.md).
    df = (spark.read.format("paimon_index").option("warehouse", str(root))
          .option(SINGLE_SCAN_PUSHDOWN, "true").load("db.orders"))
    assert df.schema.simpleString() == "struct<id:bigint,status:string,score:int,ts:timestamp_ntz>"
    filtered = df.filter(where)
    plan = filtered._jdf.queryExecution().executedPlan().toString()
    spark_filters = re.search(r"\bFilter \(", plan) is not None  # the operator, not "RuntimeFilters"
    assert spark_filters != pushed, plan  # taken filters are not re-checked by Spark
    got = sorted(r.id for r in filtered.select("id").collect())
    off = (spark.read.format("paimon_index").option("warehouse", str(root))
           .option("file-index.read.enabled", "false").load("db.orders"))
    spark.createDataFrame(everything.to_pandas()).createOrReplaceTempView("truth")
    want = sorted(r.id for r in spark.sql(f"SELECT id FROM truth WHERE {where}").collect())
    assert got == want == sorted(r.id for r in off.filter(where).select("id").collect())


def test_spark_writes_one_snapshot_with_file_indexes(spark, tmp_path: Path) -> None:
    from paimon_index.table.read import read_arrow
    from paimon_index.table.system import file_indexes

    catalog = CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("status", pa.string())])
    options = {"bucket": "-1", "file-index.bitmap.columns": "status",
               "file-index.in-manifest-threshold": "64b"}
    catalog.create_table("db.w", Schema.from_pyarrow_schema(schema, options=options), False)
    rows = [(i, ["NEW", "PAID", None][i % 3]) for i in range(3_000)]
    df = spark.createDataFrame(rows, "id bigint, status string").repartition(3)
    df.write.format("paimon_index").option("warehouse", str(tmp_path)).mode("append").save("db.w")

    table = catalog.get_table("db.w")
    assert table.snapshot_manager().get_latest_snapshot().id == 1  # three tasks, one snapshot
    listing = file_indexes(table)
    assert listing.num_rows == 3 and set(listing.column("storage").to_pylist()) == {"FILE"}
    got, report = read_arrow(table, "status = 'PAID'")
    assert sorted(got.column("id").to_pylist()) == [i for i, s in rows if s == "PAID"]
    assert report.rows_read == report.rows_returned == 1_000
    back = spark.read.format("paimon_index").option("warehouse", str(tmp_path)).load("db.w")
    assert back.filter("status IS NULL").count() == 1_000


def test_a_failed_spark_job_commits_nothing(spark, tmp_path: Path) -> None:
    catalog = CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("status", pa.string())])
    options = {"bucket": "-1", "file-index.bitmap.columns": "status,missing"}  # index build fails
    catalog.create_table("db.f", Schema.from_pyarrow_schema(schema, options=options), False)
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, status string")
    with pytest.raises(Exception, match="column 'missing' does not exist"):
        df.write.format("paimon_index").option("warehouse", str(tmp_path)).mode("append").save("db.f")
    assert catalog.get_table("db.f").snapshot_manager().get_latest_snapshot() is None


def _three_valued(f: object, row: dict[str, object]) -> bool | None:
    """A plain-Python model of a Spark filter under SQL's three-valued logic (None is NULL)."""
    if isinstance(f, Not):
        inner = _three_valued(f.child, row)
        return None if inner is None else not inner
    v = row[f.attribute[0]]  # type: ignore[attr-defined]
    if isinstance(f, IsNull | IsNotNull):
        return (v is None) == isinstance(f, IsNull)
    if isinstance(f, EqualNullSafe):
        return v == f.value if v is not None and f.value is not None else v is None and f.value is None
    if isinstance(f, In):
        if v is None:
            return None
        return True if v in [x for x in f.value if x is not None] else (None if None in f.value else False)
    if v is None or f.value is None:  # type: ignore[attr-defined]
        return None
    compare = {EqualTo: operator.eq, GreaterThan: operator.gt, LessThan: operator.lt,
               GreaterThanOrEqual: operator.ge, LessThanOrEqual: operator.le,
               StringStartsWith: str.startswith, StringEndsWith: str.endswith,
               StringContains: operator.contains}[type(f)]
    return bool(compare(v, f.value))  # type: ignore[attr-defined]


def _filters() -> list[object]:
    base: list[object] = [IsNull(("c",)), IsNotNull(("c",)), IsNull(("s",))]
    for lit in (1, 5, None):
        base += [cls(("c",), lit) for cls in (EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual,
                                             LessThan, LessThanOrEqual)]
    base += [In(("c",), vals) for vals in ((1, 2), (1, None), (None,), (5,))]
    base += [cls(("s",), "a") for cls in (StringStartsWith, StringEndsWith, StringContains, EqualTo,
                                         EqualNullSafe)]
    base += [EqualNullSafe(("bo",), True), EqualNullSafe(("bo",), False), EqualTo(("bo",), True)]
    return base + [Not(f) for f in base] + [Not(Not(f)) for f in base]


def test_translated_filters_keep_exactly_the_rows_sql_keeps() -> None:
    """Every translation, negations included, against the three-valued model: a NULL row is kept
    exactly when the filter is TRUE for it (``NOT (c <=> 5)`` keeps NULLs, ``NOT (c = 5)`` does not)."""
    schema = {"c": parse_type("INT"), "s": parse_type("STRING"), "bo": parse_type("BOOLEAN")}
    rows = [{"c": c, "s": s, "bo": bo} for c, s, bo in itertools.product(
        (None, 0, 1, 2, 5), (None, "", "a", "ab", "b"), (None, True, False))]
    data = pa.Table.from_pylist(rows, pa.schema([("c", pa.int32()), ("s", pa.string()), ("bo", pa.bool_())]))
    translated = 0
    for f in _filters():
        predicate = spark_filter_to_predicate(f)  # type: ignore[arg-type]
        if predicate is None:
            continue  # handed back: Spark applies it
        translated += 1
        kept = data.filter(to_arrow_expression(bind(predicate, schema), schema)).to_pylist()
        assert kept == [r for r in rows if _three_valued(f, r) is True], (f, predicate)
    assert translated > 60  # most filters are taken, not handed back


def test_read_options_are_parsed_once_and_checked() -> None:
    base = {"warehouse": "/w", "path": "db.t"}
    parsed = parse_read_options({**base, "scan.snapshot-id": "3", "fs.s3.accesskeyid": "k",
                                 "fs.s3.endpoint": "http://e", SINGLE_SCAN_PUSHDOWN: "TRUE"})
    assert (parsed.snapshot_id, parsed.pushdown, parsed.use_index) == (3, True, True)
    # Spark lower-cases option keys; pypaimon matches catalog keys with case.
    assert dict(parsed.catalog) == {"fs.s3.accessKeyId": "k", "fs.s3.endpoint": "http://e"}
    assert parse_read_options(base).pushdown is pushdown_safe()
    for bad, message in [({"scan.snapshot-id": "0"}, "positive integer"),
                         ({"filter-pushdown": "yes"}, "one of auto, true, false"),
                         ({"file-index.read.enabled": "maybe"}, "file-index.read.enabled"),
                         ({"limit": "5"}, "only meaningful with option 'topn'"),
                         ({"scan.snapshotid": "1"}, "did you mean 'scan.snapshot-id'")]:
        with pytest.raises(InvalidOptionError, match=re.escape(message)):
            parse_read_options({**base, **bad})
    with pytest.raises(InvalidOptionError, match=r"needs \.option"):
        parse_read_options({"path": "db.t"})
    with pytest.raises(InvalidOptionError, match="unknown write option 'topn'"):
        parse_write_options({**base, "topn": "x"})


@pytest.mark.parametrize(("version", "safe"), [("4.1.0", False), ("4.2.1", False), ("4.3.0", False),
                                               ("4.4.0", True), ("5.0.0.dev1", True), ("junk", False)])
def test_pushdown_is_gated_on_the_spark_version(version: str, safe: bool) -> None:
    assert pushdown_safe(version) is safe


def test_schema_in_a_fresh_worker_imports_neither_the_read_nor_the_write_path(tmp_path: Path) -> None:
    """Spark asks ``schema()`` in a fresh Python worker: for a local append table it must not open
    pypaimon's catalog (whose import pulls pypaimon's writer, polars and pandas: seconds per cold
    query) nor import our read and write paths, and must give what the catalog gives."""
    import json
    import subprocess
    import sys

    from paimon_index.spark.datasource import _layout_from_catalog, _layout_from_schema_file
    from paimon_index.table.catalog import create_table, open_table
    from paimon_index.table.schemas import read_schema

    ddl = ("t TINYINT, s SMALLINT, i INT NOT NULL, b BIGINT, f FLOAT, d DOUBLE, ok BOOLEAN, day DATE, "
           "c CHAR(3), v VARCHAR(10), str STRING, bin BYTES, dec DECIMAL(20, 4), small DECIMAL(5, 2), "
           "ntz TIMESTAMP(3), ltz TIMESTAMP_LTZ(6), p STRING")
    create_table(str(tmp_path), "db.all", ddl, partition_keys=["p"])
    create_table(str(tmp_path), "db.nested", "id BIGINT, tags ARRAY<STRING>")
    for metadata in ("false", "true"):
        options = parse_read_options({"warehouse": str(tmp_path), "path": "db.all",
                                      "metadata-columns": metadata})
        fast = _layout_from_schema_file(options)
        assert fast is not None
        assert fast == _layout_from_catalog(options)
        assert fast.index_schema == dict(read_schema(open_table(str(tmp_path), "db.all")))
    # Nested columns (and primary-key tables, other file systems) take the catalog path.
    nested = parse_read_options({"warehouse": str(tmp_path), "path": "db.nested"})
    assert _layout_from_schema_file(nested) is None

    code = f"""
import json, sys
from paimon_index.spark.datasource import PaimonIndexDataSource
source = PaimonIndexDataSource({{"warehouse": {str(tmp_path)!r}, "path": "db.all"}})
source.reader(source.schema())
print(json.dumps(sorted(m for m in ("paimon_index.table.write", "paimon_index.table.read", "polars",
                                    "pandas", "pypaimon.catalog.catalog_factory") if m in sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


FLOAT_FILTERS = ["d < 0", "d <= -0.0", "d < 0.0", "d > 1.5", "d >= 0.0", "d > -0.0", "d = 0.0", "d = -0.0",
                 "d <> 0", "d IN (0.0, 2.5)", "NOT (d IN (0.0, 2.5))", "d = double('NaN')",
                 "d > double('+inf')", "d >= double('NaN')", "d < double('NaN')", "d <> double('NaN')",
                 "f < 1.5", "f >= 0", "f = -0.0", "f > 2.5", "d <=> 0.0", "NOT (d <=> double('NaN'))"]


@pytest.fixture(scope="module")
def float_warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    """FLOAT/DOUBLE columns holding NaN, both zeros, infinities and NULL, in files with and without
    them (statistics), with a bitmap index on ``d`` and a Bloom filter on ``f``."""
    root = tmp_path_factory.mktemp("float-warehouse")
    special = [0.0, -0.0, float("nan"), float("inf"), float("-inf"), None, 1.5, 2.5, -3.0]
    parts = [pa.table({"id": pa.array(range(b * 100, b * 100 + len(values)), pa.int64()),
                       "d": pa.array(values, pa.float64()), "f": pa.array(values, pa.float32())})
             for b, values in enumerate([special, [1.5, 2.5, 3.5], [-0.0, 0.5], [float("nan"), 7.0]])]
    catalog = CatalogFactory.create({"warehouse": str(root)})
    catalog.create_database("db", True)
    options = {"bucket": "-1", "file-index.bitmap.columns": "d", "file-index.bloom-filter.columns": "f"}
    catalog.create_table("db.floats", Schema.from_pyarrow_schema(parts[0].schema, options=options), False)
    table = catalog.get_table("db.floats")
    for part in parts:
        write_arrow(table, part)
    return root, pa.concat_tables(parts)


@pytest.mark.parametrize("where", FLOAT_FILTERS)
def test_float_filters_are_taken_and_keep_the_rows_spark_keeps(spark, float_warehouse: tuple[Path, pa.Table],
                                                              where: str) -> None:
    """Comparisons on FLOAT/DOUBLE columns are pushed (no Spark Filter left above the scan) and keep
    exactly Spark's rows: NaN largest and equal to itself, -0.0 = 0.0, NULL never matching."""
    root, everything = float_warehouse
    df = (spark.read.format("paimon_index").option("warehouse", str(root))
          .option(SINGLE_SCAN_PUSHDOWN, "true").load("db.floats"))
    filtered = df.filter(where)
    plan = filtered._jdf.queryExecution().executedPlan().toString()
    if "<=>" not in where:  # Spark offers Python sources no filter for NOT (a <=> b)
        assert re.search(r"\bFilter \(", plan) is None, plan
    got = sorted(r.id for r in filtered.select("id").collect())
    truth = spark.createDataFrame(everything.to_pylist(), "id bigint, d double, f float")
    truth.createOrReplaceTempView("floats")
    want = sorted(r.id for r in spark.sql(f"SELECT id FROM floats WHERE {where}").collect())
    assert got == want
