"""Evaluation over a container: AND/OR, several indexes per column, empty indexes, corrupt ones."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest
from pyroaring import BitMap

from paimon_index.errors import CorruptFileError
from paimon_index.fileindex.builder import build_file_index, build_index_bodies
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.fileindex.result import REMAIN, SKIP, Rows, and_not
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, Leaf, Op, and_, or_
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
