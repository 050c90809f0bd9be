"""Legacy BSI index: Java's golden files both ways, a brute-force oracle, corrupt input."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldens import GOLDEN, answer_of, case_names, load_case
from mutations import check_golden_corruption
from paimon_index.binary import BytesSource
from paimon_index.errors import BsiValueError, CorruptFileError, PaimonIndexError, UnsupportedTypeError
from paimon_index.fileindex import bsi
from paimon_index.fileindex.base import SortOrder, TopN
from paimon_index.fileindex.bsi import BsiIndex, BsiReader
from paimon_index.fileindex.builder import build_index_bodies
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.fileindex.result import REMAIN, Rows
from paimon_index.predicate import Leaf, Op
from paimon_index.types import CanonicalColumn, DataType, parse_type

INDEX = "bsi"
CASES = case_names(INDEX)
#: cases Java could write (the others carry ``write_error``: Long.MIN_VALUE in the values)
WRITTEN = [n for n in CASES if not load_case(n).write_error]
needs_golden = pytest.mark.skipif(not CASES, reason=f"golden files not found at {GOLDEN}")
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def _agrees(java: str, ours: str) -> bool:
    if java.startswith("ERROR"):
        return ours == "REMAIN" or ours.startswith("ERROR")
    return java == ours


def column(dtype: DataType, values: list[int | None]) -> CanonicalColumn:
    return CanonicalColumn(dtype, np.array([0 if v is None else v for v in values], dtype=np.int64),
                           np.array([v is not None for v in values], dtype=bool))


def build(dtype: DataType, values: list[int | None]) -> bytes:
    return BsiIndex.create_writer(dtype, {}).build(column(dtype, values))


def evaluator_for(dtype: DataType, body: bytes) -> FileIndexEvaluator:
    return FileIndexEvaluator(ContainerReader(write_container({"c": {INDEX: body}}), "t.index"),
                              {"c": dtype})


def oracle(values: list[int | None], op: Op, lits: tuple[int, ...]) -> str:
    tests = {
        Op.EQ: lambda v: v == lits[0], Op.NE: lambda v: v != lits[0],
        Op.LT: lambda v: v < lits[0], Op.LE: lambda v: v <= lits[0],
        Op.GT: lambda v: v > lits[0], Op.GE: lambda v: v >= lits[0],
        Op.IN: lambda v: v in lits, Op.NOT_IN: lambda v: v not in lits,
        Op.BETWEEN: lambda v: lits[0] <= v <= lits[1], Op.IS_NOT_NULL: lambda v: True,
    }
    if op is Op.IS_NULL:
        hits = [i for i, v in enumerate(values) if v is None]
    else:
        hits = [i for i, v in enumerate(values) if v is not None and tests[op](v)]
    return "ROWS " + ",".join(map(str, hits)) if hits else "EMPTY"


# ------------------------------------------------------------------------------------------------
# Golden files
# ------------------------------------------------------------------------------------------------
@needs_golden
@pytest.mark.parametrize("name", WRITTEN)
def test_reader_gives_java_answers(name: str) -> None:
    case = load_case(name)
    expectations = case.expectations()
    assert expectations
    mismatches = []
    with ContainerReader(case.path / "index.bin") as container:
        evaluator = FileIndexEvaluator(container, {"c": case.dtype})
        for text, predicate, java in expectations:
            try:
                ours = answer_of(evaluator.evaluate(predicate))
            except PaimonIndexError as e:
                ours = f"ERROR {e}"
            if not _agrees(java, ours):
                mismatches.append(f"{text}: java {java[:70]} ours {ours[:70]}")
    assert not mismatches, "\n".join(mismatches)


@needs_golden
@pytest.mark.parametrize("name", WRITTEN)
def test_writer_gives_java_bytes(name: str) -> None:
    case = load_case(name)
    table = pa.table({"c": case.arrow()})
    bodies = build_index_bodies(table, {"file-index.bsi.columns": "c"}, {"c": case.dtype})
    assert bodies["c"][INDEX] == (case.path / "index.raw").read_bytes()
    assert write_container(bodies) == (case.path / "index.bin").read_bytes()


@needs_golden
def test_writer_refuses_long_min() -> None:
    """Java's writer fails on Long.MIN_VALUE ("values should be non-negative"); so do we."""
    refused = [load_case(n) for n in CASES if load_case(n).write_error]
    assert refused
    for case in refused:
        assert "non-negative" in (case.write_error or "")
        with pytest.raises(BsiValueError, match=r"Long\.MIN_VALUE"):
            BsiIndex.create_writer(case.dtype, {}).build(column(case.dtype, case.values()))


# ------------------------------------------------------------------------------------------------
# Layout, quirks, types
# ------------------------------------------------------------------------------------------------
def test_layout_and_min_statistic() -> None:
    """Version, row count, flags; the min statistic is always 0 (Java starts it at 0)."""
    body = build(parse_type("BIGINT"), [5, None, -3, 9])
    assert body[:5] == struct.pack(">bi", 1, 4)
    assert body[5] == 1 and body[6] == 1  # has positive; positive BSI version
    assert struct.unpack(">qq", body[7:23]) == (0, 9)  # min 0, not 5
    assert build(parse_type("INT"), []) == struct.pack(">bi??", 1, 0, False, False)
    assert bsi.WRITER_MIN == 0 and bsi.VERSION == bsi.BSI_VERSION == 1
    assert "min                 i64 >= 0" in (bsi.__doc__ or "")


def test_types() -> None:
    for good in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME", "TIMESTAMP(3)",
                 "TIMESTAMP(6) WITH LOCAL TIME ZONE", "DECIMAL(10, 2)"):
        BsiIndex.create_writer(parse_type(good), {})
    for bad in ("STRING", "DOUBLE", "FLOAT", "BOOLEAN", "BYTES"):
        with pytest.raises(UnsupportedTypeError):
            BsiIndex.create_writer(parse_type(bad), {})


def test_long_min_literal_and_null_literal() -> None:
    dtype = parse_type("BIGINT")
    ev = evaluator_for(dtype, build(dtype, [LONG_MAX, None, -1, 0, LONG_MIN + 1]))
    assert answer_of(ev.evaluate(Leaf(Op.EQ, "c", (LONG_MIN,)))) == "EMPTY"
    assert answer_of(ev.evaluate(Leaf(Op.LT, "c", (LONG_MIN,)))) == "EMPTY"
    assert answer_of(ev.evaluate(Leaf(Op.LE, "c", (LONG_MIN,)))) == "EMPTY"
    assert answer_of(ev.evaluate(Leaf(Op.GT, "c", (LONG_MIN,)))) == "ROWS 0,2,3,4"
    assert answer_of(ev.evaluate(Leaf(Op.GE, "c", (LONG_MIN,)))) == "ROWS 0,2,3,4"
    assert answer_of(ev.evaluate(Leaf(Op.NE, "c", (LONG_MIN,)))) == "ROWS 0,2,3,4"
    assert answer_of(ev.evaluate(Leaf(Op.LE, "c", (LONG_MIN + 1,)))) == "ROWS 4"
    assert ev.evaluate(Leaf(Op.EQ, "c", (None,))) is REMAIN
    assert ev.evaluate(Leaf(Op.NOT_IN, "c", (1, None))) is REMAIN


def test_topn_is_not_answered() -> None:
    dtype = parse_type("INT")
    ev = evaluator_for(dtype, build(dtype, [3, 1, 2, None]))
    assert ev.evaluate_topn(TopN((SortOrder("c"),), 1)) is REMAIN


def test_describe() -> None:
    body = build(parse_type("INT"), [5, None, -3, 9, -100])
    info = BsiReader(parse_type("INT"), BytesSource(body), 0, len(body)).describe()
    assert info["rows"] == 5 and info["nulls"] == 1
    assert info["positive"] == {"min": 0, "max": 9, "slices": 4, "rows": 2}
    assert info["negative"] == {"min": 0, "max": 100, "slices": 7, "rows": 2}


# ------------------------------------------------------------------------------------------------
# Properties against the oracle
# ------------------------------------------------------------------------------------------------
VALUES = {
    "TINYINT": st.integers(-128, 127),
    "INT": st.integers(-(2**31), 2**31 - 1),
    "BIGINT": st.one_of(st.integers(LONG_MIN + 1, LONG_MAX),
                        st.sampled_from([LONG_MIN + 1, LONG_MAX, -1, 0, 1])),
    "DECIMAL(10, 2)": st.integers(-(10**10) + 1, 10**10 - 1),
    "TIMESTAMP(6)": st.integers(-(2**60), 2**60),
}
OPS = [Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN, Op.BETWEEN, Op.IS_NULL,
       Op.IS_NOT_NULL]


@pytest.mark.parametrize("type_name", list(VALUES))
def test_answers_equal_brute_force(type_name: str) -> None:
    dtype = parse_type(type_name)
    values_st = VALUES[type_name]

    @given(st.data())
    @settings(max_examples=40, deadline=None)
    def check(data: st.DataObject) -> None:
        pool = data.draw(st.lists(values_st, min_size=1, max_size=8))
        values = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(pool)), max_size=60))
        literal = st.one_of(st.sampled_from(pool), values_st,
                            st.sampled_from([LONG_MIN, 0]) if type_name == "BIGINT" else values_st)
        ev = evaluator_for(dtype, build(dtype, values))
        for _ in range(12):
            op = data.draw(st.sampled_from(OPS))
            if op in (Op.IS_NULL, Op.IS_NOT_NULL):
                lits: tuple[int, ...] = ()
            elif op in (Op.IN, Op.NOT_IN):
                lits = tuple(data.draw(st.lists(literal, max_size=4)))
            elif op is Op.BETWEEN:
                lits = (data.draw(literal), data.draw(literal))
            else:
                lits = (data.draw(literal),)
            result = ev.evaluate(Leaf(op, "c", lits))
            assert isinstance(result, Rows), (op, lits)
            assert answer_of(result) == oracle(values, op, lits), (op, lits, values)

    check()


def test_large_column_matches_numpy() -> None:
    rng = np.random.default_rng(3)
    n = 120_000
    values = rng.integers(-(2**45), 2**45, n)
    valid = rng.random(n) > 0.2
    dtype = parse_type("BIGINT")
    ev = evaluator_for(dtype, BsiIndex.create_writer(dtype, {}).build(
        CanonicalColumn(dtype, values, valid)))
    live = np.flatnonzero(valid)
    for q in [int(x) for x in np.quantile(values[valid], [0.0, 0.3, 0.5, 1.0])] + [0, -1]:
        for op, fn in ((Op.LT, np.less), (Op.GE, np.greater_equal), (Op.EQ, np.equal)):
            got = ev.evaluate(Leaf(op, "c", (q,)))
            assert isinstance(got, Rows)
            assert np.array_equal(np.array(got.bitmap.to_array()), live[fn(values[live], q)])


# ------------------------------------------------------------------------------------------------
# Corrupt input
# ------------------------------------------------------------------------------------------------
@needs_golden
@pytest.mark.parametrize("name", WRITTEN)
def test_corrupt_golden_bodies_raise_project_errors_only(name: str) -> None:
    check_golden_corruption(load_case(name), fallback=0)


def test_truncation_error_names_file_offset_and_field() -> None:
    dtype = parse_type("INT")
    raw = build(dtype, [1, -2, 300, None, 7])
    for n in range(len(raw)):
        ev = evaluator_for(dtype, raw[:n])
        with pytest.raises(CorruptFileError, match=r"^t\.index@\d+: .*bsi.*: ") as info:
            ev.evaluate(Leaf(Op.EQ, "c", (1,)))
        assert info.value.field
