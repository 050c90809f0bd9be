"""Predicates as Arrow expressions keep exactly the rows SQL's WHERE keeps."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa
import pytest

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.predicate import ALWAYS_FALSE, Leaf, Op, and_, bind, or_
from paimon_index.sql import bind_predicate
from paimon_index.types import parse_schema

SCHEMA = parse_schema("i INT, s STRING, d DATE, ts TIMESTAMP(3)")
TABLE = pa.table({
    "i": pa.array([1, 2, None, 4], pa.int32()),
    "s": pa.array(["apple", None, "banana", "apricot"]),
    "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2), None, dt.date(2023, 12, 31)]),
    "ts": pa.array([0, 1000, 2000, None], pa.timestamp("ms")),
})


def ids(predicate: object) -> list[int]:
    bound = bind(predicate, SCHEMA)  # type: ignore[arg-type]
    kept = TABLE.append_column("row", pa.array(range(TABLE.num_rows))).filter(
        to_arrow_expression(bound, SCHEMA))
    return kept.column("row").to_pylist()


@pytest.mark.parametrize(("predicate", "rows"), [
    (Leaf(Op.EQ, "i", (2,)), [1]),
    (Leaf(Op.NE, "i", (2,)), [0, 3]),  # NULL is not <> 2 in SQL
    (Leaf(Op.NOT_IN, "i", (1, None)), []),  # NOT IN with a NULL keeps nothing
    (Leaf(Op.IN, "i", (1, None)), [0]),
    (Leaf(Op.EQ, "i", (None,)), []),
    (Leaf(Op.IS_NULL, "s", ()), [1]),
    (Leaf(Op.STARTS_WITH, "s", ("ap",)), [0, 3]),
    (Leaf(Op.BETWEEN, "d", (dt.date(2024, 1, 1), dt.date(2024, 1, 5))), [0, 1]),
    (Leaf(Op.GE, "ts", (dt.datetime(1970, 1, 1, 0, 0, 1),)), [1, 2]),
    (or_(Leaf(Op.LT, "i", (2,)), Leaf(Op.EQ, "s", ("banana",))), [0, 2]),
    (and_(Leaf(Op.IS_NOT_NULL, "i", ()), Leaf(Op.NE, "s", ("apple",))), [3]),
    (ALWAYS_FALSE, []),
])
def test_sql_semantics(predicate: object, rows: list[int]) -> None:
    assert ids(predicate) == rows


# ------------------------------------------------------------------------------------------------
# Spark's semantics where Arrow's differ or where literals were misread (issue 12)
# ------------------------------------------------------------------------------------------------
NAN = math.nan
SPARK_SCHEMA = parse_schema("f FLOAT, d DOUBLE, a DECIMAL(10, 2), w DECIMAL(38, 10), i INT, c INT, "
                            "bo BOOLEAN, ts TIMESTAMP(3)")
SPARK_TABLE = pa.table({
    "f": pa.array([0.0, -0.0, NAN, 1.0, None, 7.0, -math.inf, math.inf], pa.float32()),
    "d": pa.array([0.0, -0.0, NAN, 1.0, None, 7.0, -math.inf, math.inf], pa.float64()),
    "a": pa.array([decimal.Decimal(x) if x is not None else None for x in
                   ("99.00", "100.00", None, "100.01", "1.00", "-5.00", "99.99", "0.00")],
                  pa.decimal128(10, 2)),
    "w": pa.array([decimal.Decimal(x) if x is not None else None for x in
                   ("1234567890123456789012345678.0123456789", None, "1", "0", "-0.0000000001",
                    "2", "3", "4")], pa.decimal128(38, 10)),
    "i": pa.array([1, 2, 3, None, 5, 6, 7, 8], pa.int32()),
    "c": pa.array([5, None, 4, 5, None, 6, 7, 8], pa.int32()),
    "bo": pa.array([True, False, None, True, False, None, True, True]),
    "ts": pa.array([-1, 0, None, -1000, 1, 2, 3, 4], pa.timestamp("ms")),
})


def spark_rows(text: str) -> list[int]:
    bound = bind_predicate(text, SPARK_SCHEMA)
    kept = SPARK_TABLE.append_column("row", pa.array(range(SPARK_TABLE.num_rows))).filter(
        to_arrow_expression(bound, SPARK_SCHEMA))
    return kept.column("row").to_pylist()


@pytest.mark.parametrize(("text", "rows"), [
    # NaN is above every number (also +Infinity) and equals itself; -0.0 equals 0.0
    ("f > 0", [2, 3, 5, 7]),
    ("d > 0", [2, 3, 5, 7]),
    ("f >= Infinity", [2, 7]),
    ("f > Infinity", [2]),
    ("f < 'NaN'", [0, 1, 3, 5, 6, 7]),
    ("f <= NaN", [0, 1, 2, 3, 5, 6, 7]),
    ("f = NaN", [2]),
    ("d <> NaN", [0, 1, 3, 5, 6, 7]),
    ("f > NaN", []),
    ("f = 0.0", [0, 1]),
    ("d = -0.0", [0, 1]),
    ("f >= 0.0", [0, 1, 2, 3, 5, 7]),
    ("f < 0.0", [6]),
    ("f IN (0.0, 7.0)", [0, 1, 5]),
    ("d IN (-0.0, NaN)", [0, 1, 2]),
    ("f NOT IN (0.0, 7.0)", [2, 3, 6, 7]),
    ("f NOT IN (-0.0, NULL)", []),
    ("f BETWEEN -0.0 AND 1", [0, 1, 3]),
    ("f BETWEEN 1 AND NaN", [2, 3, 5, 7]),
    ("NOT f > 0", [0, 1, 6]),
    ("f = 0.1", []),  # FLOAT 0.1f is not the DOUBLE 0.1
    ("f = 1", [3]),
    # DECIMAL literals are values
    ("a > 100", [3]),
    ("a >= 100", [1, 3]),
    ("a > 99.999", [1, 3]),
    ("a < 99.999", [0, 4, 5, 6, 7]),
    ("a = 99.999", []),
    ("a IN (99, 1)", [0, 4]),
    ("w = 1234567890123456789012345678.0123456789", [0]),
    # a NULL bound: BETWEEN is never TRUE; under NOT only the other bound's range is left
    ("a BETWEEN 0 AND NULL", []),
    ("a BETWEEN NULL AND 200", []),
    ("NOT (a BETWEEN 0 AND NULL)", [5]),
    ("NOT (a BETWEEN NULL AND 50)", [0, 1, 3, 6]),
    ("i BETWEEN NULL AND 5", []),
    ("w < 0", [4]),
    ("w > 1.5", [0, 5, 6, 7]),
    # integers against fractions
    ("i = 2.5", []),
    ("i < 2.5", [0, 1]),
    ("i >= 2.5", [2, 4, 5, 6, 7]),
    ("i <> 2.5", [0, 1, 2, 4, 5, 6, 7]),
    ("i NOT IN (2.5, 5)", [0, 1, 2, 5, 6, 7]),
    # null-safe equality and IS [NOT] TRUE/FALSE keep NULL rows under NOT
    ("c <=> 5", [0, 3]),
    ("NOT (c <=> 5)", [1, 2, 4, 5, 6, 7]),
    ("NOT (c = 5)", [2, 5, 6, 7]),
    ("c <=> NULL", [1, 4]),
    ("NOT (c <=> NULL)", [0, 2, 3, 5, 6, 7]),
    ("bo IS TRUE", [0, 3, 6, 7]),
    ("bo IS NOT TRUE", [1, 2, 4, 5]),
    ("bo IS FALSE", [1, 4]),
    ("bo IS NOT FALSE", [0, 2, 3, 5, 6, 7]),
    ("NOT (bo IS NOT TRUE)", [0, 3, 6, 7]),
    ("NOT (bo IS NOT TRUE OR c <=> 7)", [0, 3, 7]),
    # timestamps before 1970 and literals finer than the column
    ("ts < TIMESTAMP '1970-01-01 00:00:00'", [0, 3]),
    ("ts = TIMESTAMP '1969-12-31 23:59:59.999'", [0]),
    ("ts >= TIMESTAMP '1969-12-31 23:59:59.9995'", [1, 4, 5, 6, 7]),
    ("ts <= TIMESTAMP '1969-12-31 23:59:59.9995'", [0, 3]),
])
def test_spark_semantics(text: str, rows: list[int]) -> None:
    assert spark_rows(text) == rows
