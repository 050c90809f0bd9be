"""The differential test's plain-Python reference agrees with Spark SQL itself.

``tests/test_semantics_differential.py`` checks our Arrow re-check and indexes against
``model_eval``; here the same generated columns and predicate trees go to Spark SQL (as SQL text over
a DataFrame of the same rows), one query per column type with one output column per predicate.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from test_semantics_differential import BY_NAME, ColumnType, Tree, cases, model_eval

pytestmark = pytest.mark.spark

SPARK_TYPES = {"TINYINT": "tinyint", "SMALLINT": "smallint", "INT": "int", "BIGINT": "bigint",
               "FLOAT": "float", "DOUBLE": "double", "DECIMAL(10, 2)": "decimal(10,2)",
               "DECIMAL(38, 10)": "decimal(38,10)", "STRING": "string", "BOOLEAN": "boolean",
               "DATE": "date", "TIMESTAMP(3)": "timestamp_ntz", "TIMESTAMP(6)": "timestamp_ntz"}
CASES_PER_TYPE = 12


def sql_literal(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)  # Spark types it INT, BIGINT or DECIMAL(n, 0) by size, by value either way
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, float):
        text = "NaN" if math.isnan(v) else repr(v).replace("inf", "Infinity")
        return f"CAST('{text}' AS DOUBLE)"
    if isinstance(v, str):
        return f"CAST(X'{v.encode('utf-8').hex()}' AS STRING)"
    if isinstance(v, dt.datetime):
        return f"TIMESTAMP_NTZ '{v.isoformat(sep=' ')}'"
    assert isinstance(v, dt.date)
    return f"DATE '{v.isoformat()}'"


def sql_text(tree: Tree) -> str:
    kind = tree[0]
    if kind == "not":
        return f"(NOT {sql_text(tree[1])})"
    if kind in ("and", "or"):
        return f"({sql_text(tree[1])} {kind.upper()} {sql_text(tree[2])})"
    op, lits = tree[1], tree[2]
    if op in ("IN", "NOT IN"):
        return f"(c {op} ({', '.join(map(sql_literal, lits))}))"
    if op == "BETWEEN":
        return f"(c BETWEEN {sql_literal(lits[0])} AND {sql_literal(lits[1])})"
    if op == "LIKE PREFIX":
        return f"startswith(c, {sql_literal(lits[0])})"
    if not lits:
        return f"(c {op})"
    return f"(c {op} {sql_literal(lits[0])})"


def _has_empty_list(tree: Tree) -> bool:
    if tree[0] == "leaf":
        return tree[1] in ("IN", "NOT IN") and not tree[2]
    return any(_has_empty_list(t) for t in tree[1:])


def _generated(type_name: str) -> list[tuple[ColumnType, list[Any], Tree]]:
    out: list[tuple[ColumnType, list[Any], Tree]] = []

    @settings(max_examples=CASES_PER_TYPE, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(cases([type_name]))
    def collect(case: tuple[ColumnType, list[Any], Tree]) -> None:
        if case[1] and not _has_empty_list(case[2]):  # Spark's parser rejects IN ()
            out.append(case)

    collect()
    return out


@pytest.mark.parametrize("type_name", list(BY_NAME))
def test_reference_agrees_with_spark_sql(spark: Any, type_name: str) -> None:
    generated = _generated(type_name)
    assert generated
    ctype = BY_NAME[type_name]
    dtype = ctype.dtype
    for values, tree in ((v, t) for _, v, t in generated):
        df = spark.createDataFrame([(i, v) for i, v in enumerate(values)],
                                   f"id int, c {SPARK_TYPES[type_name]}")
        expression = sql_text(tree)
        got = {r.id for r in df.where(expression).select("id").collect()}
        expected = {i for i, v in enumerate(values) if model_eval(tree, v, dtype) is True}
        assert got == expected, (expression, values)
