"""Predicates as Arrow expressions keep exactly the rows SQL's WHERE keeps."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.predicate import ALWAYS_FALSE, Leaf, Op, and_, bind, or_
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
