"""Evaluation over a container: AND/OR, several indexes per column, empty indexes, corrupt ones."""

from __future__ import annotations

import decimal
import logging
import math

import pyarrow as pa
import pytest
from pyroaring import BitMap

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.errors import CorruptFileError
from paimon_index.fileindex.builder import build_file_index, build_index_bodies
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.fileindex.result import REMAIN, SKIP, Rows, and_not
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, Leaf, Op, and_, or_
from paimon_index.sql import bind_predicate
from paimon_index.types import parse_schema

SCHEMA = parse_schema("id INT, s STRING, z INT")
TABLE = pa.table({
    "id": pa.array([1, 2, 3, 2, None, 5], pa.int32()),
    "s": pa.array(["a", "b", "a", None, "c", "a"]),
    "z": pa.array([0, 0, 0, 0, 0, 0], pa.int32()),
})
OPTIONS = {"file-index.bitmap.columns": "id,s", "file-index.bloom-filter.columns": "id",
           "file-index.bloom-filter.id.items": "100"}


@pytest.fixture
def evaluator():
    data = build_file_index(TABLE, OPTIONS)
    assert data is not None
    with ContainerReader(data) as container:
        yield FileIndexEvaluator(container, SCHEMA)


def rows(result: object) -> list[int] | str:
    return list(result.bitmap) if isinstance(result, Rows) else repr(result)


def test_combinations_are_exact(evaluator: FileIndexEvaluator) -> None:
    eq2 = Leaf(Op.EQ, "id", (2,))
    is_a = Leaf(Op.EQ, "s", (b"a",))
    assert rows(evaluator.evaluate(eq2)) == [1, 3]
    assert rows(evaluator.evaluate(and_(is_a, Leaf(Op.NE, "id", (1,))))) == [2, 5]
    assert rows(evaluator.evaluate(or_(eq2, is_a))) == [0, 1, 2, 3, 5]
    # bloom says SKIP for an absent value: the AND of the column's indexes is SKIP
    assert evaluator.evaluate(Leaf(Op.EQ, "id", (99,))) in (SKIP,) or rows(
        evaluator.evaluate(Leaf(Op.EQ, "id", (99,)))) == []
    # a column without an index cannot tell
    assert evaluator.evaluate(Leaf(Op.EQ, "z", (1,))) is REMAIN
    assert rows(evaluator.evaluate(or_(eq2, Leaf(Op.EQ, "z", (1,))))) == "REMAIN"
    assert rows(evaluator.evaluate(and_(eq2, Leaf(Op.EQ, "z", (1,))))) == [1, 3]
    assert evaluator.evaluate(ALWAYS_TRUE) is REMAIN and evaluator.evaluate(ALWAYS_FALSE) is SKIP
    assert rows(evaluator.evaluate(Leaf(Op.LT, "id", (3,)))) == "REMAIN"  # bitmap cannot do ranges


def test_deletion_vector_and_not() -> None:
    deleted = BitMap([1])
    assert list(Rows(BitMap([1, 3])).and_not(deleted).bitmap) == [3]
    assert list(and_not(REMAIN, deleted, 4).bitmap) == [0, 2, 3]
    assert and_not(SKIP, deleted, 4) is SKIP


def test_empty_index_answers_like_paimon() -> None:
    data = write_container({"c": {"bloom-filter": None}})
    with ContainerReader(data) as container:
        ev = FileIndexEvaluator(container, parse_schema("c INT"))
        for op, lits in [(Op.EQ, (1,)), (Op.IN, (1, 2)), (Op.LT, (1,)), (Op.IS_NOT_NULL, ())]:
            assert ev.evaluate(Leaf(op, "c", lits)) is SKIP
        for op, lits in [(Op.NE, (1,)), (Op.NOT_IN, (1,)), (Op.IS_NULL, ()), (Op.BETWEEN, (1, 2))]:
            assert ev.evaluate(Leaf(op, "c", lits)) is REMAIN


def test_unknown_index_type_is_read_as_remain() -> None:
    data = write_container({"c": {"vector-ann": b"\x01\x02"}})
    with ContainerReader(data) as container:
        assert FileIndexEvaluator(container, parse_schema("c INT")).evaluate(
            Leaf(Op.EQ, "c", (1,))) is REMAIN


def test_corrupt_index_policy(caplog: pytest.LogCaptureFixture) -> None:
    bodies = build_index_bodies(TABLE, OPTIONS)
    bodies["s"]["bitmap"] = b"\x02\x00\x00"  # truncated bitmap body
    data = write_container(bodies)
    leaf = Leaf(Op.EQ, "s", (b"a",))
    with ContainerReader(data, "bad.index") as container:
        with pytest.raises(CorruptFileError, match=r"bad\.index@\d+: bitmap row count"):
            FileIndexEvaluator(container, SCHEMA).evaluate(leaf)
        lenient = FileIndexEvaluator(container, SCHEMA, on_corrupt="remain")
        with caplog.at_level(logging.WARNING):
            assert lenient.evaluate(leaf) is REMAIN
        assert lenient.corrupt_indexes == 1 and "ignoring corrupt bitmap index" in caplog.text


# ------------------------------------------------------------------------------------------------
# Spark's float order and DECIMAL literals through every index (issue 12)
# ------------------------------------------------------------------------------------------------
FLOATS = [0.0, -0.0, math.nan, 1.0, None, 7.0, -math.inf, math.inf, -0.0, 2.5]
DECIMALS = ["99.00", "100.00", None, "100.01", "1.00", "-5.00", "99.99", "0.00", "100.00", "7.25"]
SEMANTICS_TABLE = pa.table({
    "f": pa.array(FLOATS, pa.float32()),
    "d": pa.array(FLOATS, pa.float64()),
    "a": pa.array([None if x is None else decimal.Decimal(x) for x in DECIMALS], pa.decimal128(10, 2)),
})
SEMANTICS_SCHEMA = parse_schema("f FLOAT, d DOUBLE, a DECIMAL(10, 2)")
FLOAT_INDEXES = ("bitmap", "range-bitmap", "bloom-filter")
DECIMAL_INDEXES = ("range-bitmap", "bsi")


def _evaluator_with(index_type: str, columns: str) -> FileIndexEvaluator:
    data = build_file_index(SEMANTICS_TABLE, {f"file-index.{index_type}.columns": columns})
    assert data is not None
    return FileIndexEvaluator(ContainerReader(data), SEMANTICS_SCHEMA)


def _exact_rows(text: str) -> set[int]:
    bound = bind_predicate(text, SEMANTICS_SCHEMA)
    table = SEMANTICS_TABLE.append_column("row", pa.array(range(SEMANTICS_TABLE.num_rows)))
    return set(table.filter(to_arrow_expression(bound, SEMANTICS_SCHEMA)).column("row").to_pylist())


def _index_rows(evaluator: FileIndexEvaluator, text: str) -> set[int]:
    result = evaluator.evaluate(bind_predicate(text, SEMANTICS_SCHEMA))
    if isinstance(result, Rows):
        return set(result.bitmap)
    return set() if not result.remain else set(range(SEMANTICS_TABLE.num_rows))


@pytest.mark.parametrize(("text", "spark"), [
    ("{c} = 0.0", {0, 1, 8}),
    ("{c} = -0.0", {0, 1, 8}),
    ("{c} IN (0.0, 7.0)", {0, 1, 5, 8}),
    ("{c} >= 0.0", {0, 1, 2, 3, 5, 7, 8, 9}),
    ("{c} > -0.0", {2, 3, 5, 7, 9}),
    ("{c} <= -0.0", {0, 1, 6, 8}),
    ("{c} < 0.0", {6}),
    ("{c} > 0", {2, 3, 5, 7, 9}),
    ("{c} < 'NaN'", {0, 1, 3, 5, 6, 7, 8, 9}),
    ("{c} >= NaN", {2}),
    ("{c} = NaN", {2}),
    ("{c} <> 0.0", {2, 3, 5, 6, 7, 9}),
    ("{c} NOT IN (0.0, NaN)", {3, 5, 6, 7, 9}),
    ("{c} BETWEEN -0.0 AND 2", {0, 1, 3, 8}),
    ("NOT ({c} <=> 0.0)", {2, 3, 4, 5, 6, 7, 9}),
])
@pytest.mark.parametrize("column", ["f", "d"])
@pytest.mark.parametrize("index_type", FLOAT_INDEXES)
def test_float_indexes_answer_supersets_in_sparks_order(index_type: str, column: str, text: str,
                                                        spark: set[int]) -> None:
    query = text.format(c=column)
    assert _exact_rows(query) == spark
    assert _index_rows(_evaluator_with(index_type, column), query) >= spark


@pytest.mark.parametrize(("text", "spark"), [
    ("a > 100", {3}),
    ("a >= 100", {1, 3, 8}),
    ("a = 100", {1, 8}),
    ("a > 99.999", {1, 3, 8}),
    ("a < 99.999", {0, 4, 5, 6, 7, 9}),
    ("a = 99.99", {6}),
    ("a IN (7.25, 1, 2.555)", {4, 9}),
    ("a BETWEEN 1 AND 99", {0, 4, 9}),
    ("a <> 100", {0, 3, 4, 5, 6, 7, 9}),
])
@pytest.mark.parametrize("index_type", DECIMAL_INDEXES)
def test_decimal_indexes_use_the_literals_value(index_type: str, text: str, spark: set[int]) -> None:
    assert _exact_rows(text) == spark
    assert _index_rows(_evaluator_with(index_type, "a"), text) >= spark
