"""Writes follow Spark's store assignment: the reference is Spark itself (issue 21).

For each case, the same column types are created twice: as a Paimon table of ours and as a Parquet
table in Spark's own catalog (``CREATE TABLE p (...) USING parquet LOCATION '<tmp>'``). The same
DataFrame goes into both -- ``INSERT INTO p BY NAME SELECT * FROM src`` (or by position) on Spark's
side, :func:`paimon_index.spark.jobs.write` (or :func:`store_assigned` by position) on ours -- and
both are read back: the values must be equal, and one side errs exactly when the other does.

Before: an extra column was dropped without a word, DOUBLE 1.239 landed in DECIMAL(10, 2) by
Arrow's rules, ``L_ORDERKEY`` was refused for ``l_orderkey``, and a failed cast named no column.

Documented differences from Spark's Parquet table (:data:`NOT_NULL_KEPT`): a Spark data source
table does not keep ``NOT NULL`` (its columns are stored nullable), so Spark stores a NULL there;
Paimon's own connector refuses it (``NOT_NULL_ASSERT_VIOLATION``, checked with ``paimon-sql.sh``),
and so do we, naming the column. A missing nullable column is written NULL by both sides (Spark's
V2 tables without column defaults would refuse it; Paimon's connector fills NULL as we do).
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_index
from paimon_index.errors import DataError, InvalidOptionError
from paimon_index.spark import jobs
from paimon_index.spark.assign import store_assigned, target_schema

pytestmark = pytest.mark.spark

D = decimal.Decimal

#: (case, table columns, SELECT giving the data, the column the error must name or None).
CASES: list[tuple[str, str, str, str | None]] = [
    ("int->bigint", "v BIGINT", "SELECT CAST(7 AS INT) AS v", None),
    ("bigint->int fits", "v INT", "SELECT 5L AS v", None),
    ("bigint->int overflow", "v INT", "SELECT 3000000000L AS v", "v"),
    ("double->decimal(10,2) rounds half up", "v DECIMAL(10,2)",
     "SELECT * FROM VALUES (1.239D), (1.235D), (-1.235D), (0.005D), (CAST(NULL AS DOUBLE)) AS s(v)", None),
    ("double->decimal overflow", "v DECIMAL(5,2)", "SELECT 123456.7D AS v", "v"),
    ("double NaN, Infinity->decimal", "v DECIMAL(10,2)",
     "SELECT * FROM VALUES (CAST('NaN' AS DOUBLE)), (CAST('-Infinity' AS DOUBLE)) AS s(v)", None),
    ("double NaN->int", "v INT", "SELECT CAST('NaN' AS DOUBLE) AS v", "v"),
    ("decimal->smaller scale", "v DECIMAL(5,1)", "SELECT CAST(1.25 AS DECIMAL(5,2)) AS v", None),
    ("double->int truncates", "v INT", "SELECT * FROM VALUES (2.9D), (-2.9D) AS s(v)", None),
    ("double->float", "v FLOAT", "SELECT 0.1D AS v", None),
    ("float->double", "v DOUBLE", "SELECT CAST(0.1 AS FLOAT) AS v", None),
    ("string->int refused", "v INT", "SELECT '5' AS v", "v"),
    ("boolean->int refused", "v INT", "SELECT true AS v", "v"),
    ("int->string", "v STRING", "SELECT 42 AS v", None),
    ("date->timestamp_ntz", "v TIMESTAMP_NTZ", "SELECT DATE'2024-02-29' AS v", None),
    ("timestamp_ntz->date", "v DATE", "SELECT TIMESTAMP_NTZ'2024-02-29 23:59:59' AS v", None),
    ("varchar trailing blanks", "v VARCHAR(3)", "SELECT 'abc  ' AS v", None),
    ("varchar too long", "v VARCHAR(3)", "SELECT 'abcd' AS v", "v"),
    ("char padded", "v CHAR(4)", "SELECT 'ab' AS v", None),
    ("NULL into NOT NULL", "id INT NOT NULL, v STRING", "SELECT CAST(NULL AS INT) AS id, 'x' AS v", "id"),
    ("case-insensitive names", "id INT, v STRING", "SELECT 1 AS ID, 'a' AS V", None),
    ("extra column", "id INT", "SELECT 1 AS id, 2 AS extra", "extra"),
    ("missing nullable column", "id INT, v STRING", "SELECT 1 AS id", None),
    ("missing NOT NULL column", "id INT NOT NULL, v STRING", "SELECT 'a' AS v", "id"),
    ("reordered columns", "id INT, v STRING", "SELECT 'a' AS v, 1 AS id", None),
]

#: By position (what the SQL layer's ``INSERT INTO t SELECT ...`` calls): (case, columns, SELECT, error).
POSITIONAL: list[tuple[str, str, str, str | None]] = [
    ("renamed by position", "id INT, v STRING", "SELECT 1 AS a, 'x' AS b", None),
    ("widened by position", "id BIGINT, v DECIMAL(10,2)", "SELECT 1 AS a, 1.235D AS b", None),
    ("too many columns", "id INT", "SELECT 1 AS a, 2 AS b", "too many"),
    ("not enough columns", "id INT, v STRING", "SELECT 1 AS a", "not enough"),
]

#: Cases where Spark's Parquet table loses NOT NULL: ours must fail (as Paimon's connector does) and
#: Spark's stores the NULL.
NOT_NULL_KEPT = {"NULL into NOT NULL", "missing NOT NULL column"}

#: The cases CI runs (each costs two Spark writes); the rest run with --run-slow.
CI_CASES = {"bigint->int overflow", "double->decimal(10,2) rounds half up", "double NaN, Infinity->decimal",
            "string->int refused", "varchar too long", "NULL into NOT NULL", "case-insensitive names",
            "extra column", "missing nullable column", "renamed by position", "too many columns"}

_counter = itertools.count()


def _cases(cases: list[tuple[str, str, str, str | None]]) -> list[Any]:
    return [pytest.param(*c, id=c[0], marks=[] if c[0] in CI_CASES else [pytest.mark.slow]) for c in cases]


def _normal(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def _rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(_normal(v) for v in r.values()) for r in rows), key=repr)


def _spark_side(spark: Any, tmp: Path, columns: str, select: str, by_name: bool) -> tuple[Any, Any]:
    """(rows Spark stored, the error Spark raised) for ``INSERT INTO p [BY NAME] SELECT * FROM src``."""
    name = f"p_store_{next(_counter)}"
    spark.sql(f"CREATE TABLE {name} ({columns}) USING parquet LOCATION '{tmp / name}'")
    try:
        spark.sql(select).createOrReplaceTempView("src")
        try:
            spark.sql(f"INSERT INTO {name} {'BY NAME ' if by_name else ''}SELECT * FROM src")
        except Exception as e:  # Spark's own error classes: only "did it fail" is compared
            return _rows([r.asDict() for r in spark.table(name).collect()]), e
        return _rows([r.asDict() for r in spark.table(name).collect()]), None
    finally:
        spark.sql(f"DROP TABLE {name}")


def _our_side(spark: Any, warehouse: str, columns: str, select: str, by_name: bool) -> tuple[Any, Any]:
    table = f"db.store_{next(_counter)}"
    created = paimon_index.create_table(warehouse, table, columns)
    df = spark.sql(select)
    try:
        if by_name:
            jobs.write(df, table, warehouse=warehouse)
        else:
            placed = store_assigned(df, target_schema(created.paimon_table), by_name=False, table=table)
            jobs.write(placed, table, warehouse=warehouse)
    except Exception as e:
        return _rows(paimon_index.open_table(warehouse, table).read().to_pylist()), e
    return _rows(paimon_index.open_table(warehouse, table).read().to_pylist()), None


def _compare(spark: Any, tmp_path: Path, columns: str, select: str, error_names: str | None,
             by_name: bool, not_null_kept: bool = False) -> None:
    theirs, their_error = _spark_side(spark, tmp_path, columns, select, by_name)
    ours, our_error = _our_side(spark, str(tmp_path / "w"), columns, select, by_name)
    if not_null_kept:  # see the module docstring
        assert their_error is None and any(None in row for row in theirs), theirs
        assert our_error is not None and error_names is not None and error_names in str(our_error)
        assert "NOT NULL" in str(our_error) and ours == []
        return
    assert (our_error is None) == (their_error is None), (our_error, their_error)
    assert ours == theirs
    if our_error is not None:
        assert ours == []  # nothing committed
        assert error_names is not None and error_names in str(our_error)
        assert len(str(our_error)) < 1200, str(our_error)
    else:
        assert error_names is None, "the case expects an error"


@pytest.mark.parametrize(("case", "columns", "select", "names"), _cases(CASES))
def test_jobs_write_stores_what_spark_insert_by_name_stores(spark, tmp_path: Path, case: str,
                                                            columns: str, select: str,
                                                            names: str | None) -> None:
    _compare(spark, tmp_path, columns, select, names, by_name=True, not_null_kept=case in NOT_NULL_KEPT)


@pytest.mark.parametrize(("case", "columns", "select", "names"), _cases(POSITIONAL))
def test_by_position_stores_what_spark_insert_stores(spark, tmp_path: Path, case: str, columns: str,
                                                     select: str, names: str | None) -> None:
    _compare(spark, tmp_path, columns, select, names, by_name=False)


def test_case_sensitive_session_refuses_other_case(spark, tmp_path: Path) -> None:
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        _compare(spark, tmp_path, "id INT, v STRING", "SELECT 1 AS ID, 'a' AS v", "ID", by_name=True)
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


def test_refusals_happen_before_any_job(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "w")
    paimon_index.create_table(warehouse, "db.t", "id INT, v DECIMAL(10,2)")
    sc = spark.sparkContext
    sc.setJobGroup("store-refusal", "store-refusal")
    try:
        for select, what in [("SELECT 1 AS id, 'x' AS v", "STRING"),
                             ("SELECT 1 AS id, 1 AS extra", "'extra'")]:
            with pytest.raises(DataError, match=what):
                jobs.write(spark.sql(select), "db.t", warehouse=warehouse)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert sc.statusTracker().getJobIdsForGroup("store-refusal") == []


def test_the_source_writer_resolves_names_and_refuses_casts_it_cannot(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "w")
    paimon_index.create_table(warehouse, "db.t", "id INT NOT NULL, v DECIMAL(10,2), s STRING")

    def save(select: str) -> None:
        writer = spark.sql(select).write.format("paimon_index").option("warehouse", warehouse)
        writer.mode("append").save("db.t")

    save("SELECT 1L AS ID, CAST(1.5 AS DECIMAL(4,1)) AS V")  # case, missing nullable, exact casts
    rows = paimon_index.open_table(warehouse, "db.t").read().to_pylist()
    assert rows == [{"id": 1, "v": D("1.50"), "s": None}]
    with pytest.raises(Exception, match=r"jobs\.write") as info:
        save("SELECT 2 AS id, 1.239D AS v")  # rounds in Spark: the Arrow tasks would not
    assert "'v'" in str(info.value) and "DECIMAL(10,2)" in str(info.value)
    with pytest.raises(Exception, match="extra"):
        save("SELECT 2 AS id, 1 AS extra")
    with pytest.raises(Exception, match="'id'"):
        save("SELECT 3000000000L AS id")  # an overflow in the task names the column
    assert paimon_index.open_table(warehouse, "db.t").count() == 1


def test_a_failed_arrow_cast_names_the_column(tmp_path: Path) -> None:
    """Before: ``DataError: ... Failed to parse string: 'y' as a scalar of type int64``, no column."""
    table = paimon_index.create_table(str(tmp_path / "w"), "db.t", "id BIGINT, s STRING")
    with pytest.raises(DataError, match="column 'id'") as info:
        table.write(pa.table({"id": ["1", "y"], "s": ["a", "b"]}))
    assert "db.t" in str(info.value) and "'y'" in str(info.value)


def test_a_bitmap_key_too_large_names_the_column_and_the_option(tmp_path: Path) -> None:
    """Before: "index-block-size 16384b cannot hold a key", no column, no option key."""
    table = paimon_index.create_table(str(tmp_path / "w"), "db.t", "id BIGINT, big STRING",
                                      options={"file-index.bitmap.columns": "big"})
    with pytest.raises(InvalidOptionError) as info:
        table.write(pa.table({"id": pa.array([1], pa.int64()), "big": ["x" * 20_000]}))
    message = str(info.value)
    assert "column 'big'" in message and "file-index.bitmap.big.index-block-size" in message
    assert table.count() == 0
