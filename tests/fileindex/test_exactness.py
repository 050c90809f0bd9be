"""Exact index answers: when a result says ``exact``, its rows are exactly the rows the Arrow re-check
(Spark's semantics, tests/test_semantics_differential.py) keeps; otherwise still a superset."""

from __future__ import annotations

import decimal
import random

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.fileindex.builder import build_file_index
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader
from paimon_index.fileindex.result import REMAIN, SKIP, Rows
from paimon_index.predicate import Leaf, Op, Predicate, and_, bind, or_
from paimon_index.types import parse_schema

SCHEMA = parse_schema("i_bm INT, i_rb INT, i_bsi BIGINT, d_bm DOUBLE, d_rb DOUBLE, s_bm STRING, "
                      "s_rb STRING, dec_rb DECIMAL(10, 2), i_bf INT, ts9 TIMESTAMP(9)")
OPTIONS = {"file-index.bitmap.columns": "i_bm,d_bm,s_bm",
           "file-index.range-bitmap.columns": "i_rb,d_rb,s_rb,dec_rb",
           "file-index.bsi.columns": "i_bsi", "file-index.bloom-filter.columns": "i_bf"}
INTS = [None, -3, 0, 1, 2, 7]
DOUBLES = [None, -0.0, 0.0, 1.5, -2.0, float("nan"), float("inf")]
STRINGS = [None, "", "a", "ab", "b", "é"]
DECIMALS = [None, decimal.Decimal("-1.50"), decimal.Decimal("0.00"), decimal.Decimal("2.25")]
DOMAIN = {"i_bm": INTS, "i_rb": INTS, "i_bsi": INTS, "i_bf": INTS, "d_bm": DOUBLES, "d_rb": DOUBLES,
          "s_bm": STRINGS, "s_rb": STRINGS, "dec_rb": DECIMALS}
OPS = [Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN, Op.IS_NULL, Op.IS_NOT_NULL, Op.BETWEEN]
ROWS = 60
CASES = 150


def _table(rng: random.Random) -> pa.Table:
    types = {"i_bm": pa.int32(), "i_rb": pa.int32(), "i_bsi": pa.int64(), "d_bm": pa.float64(),
             "d_rb": pa.float64(), "s_bm": pa.string(), "s_rb": pa.string(), "dec_rb": pa.decimal128(10, 2),
             "i_bf": pa.int32()}
    columns = {name: pa.array([rng.choice(DOMAIN[name]) for _ in range(ROWS)], t)
               for name, t in types.items()}
    columns["ts9"] = pa.array([None] * ROWS, pa.timestamp("ns"))
    return pa.table(columns)


def _literal(rng: random.Random, column: str) -> object:
    values = DOMAIN[column]
    return rng.choice(values[1:]) if rng.random() > 0.05 else None


def _leaf(rng: random.Random) -> Predicate:
    column, op = rng.choice(sorted(DOMAIN)), rng.choice(OPS)
    if op in (Op.IN, Op.NOT_IN):
        return Leaf(op, column, tuple(_literal(rng, column) for _ in range(rng.randint(1, 3))))
    if op is Op.BETWEEN:  # (a NULL bound is left out: the Arrow re-check refuses it on DECIMAL)
        return Leaf(op, column, (rng.choice(DOMAIN[column][1:]), rng.choice(DOMAIN[column][1:])))
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return Leaf(op, column)
    return Leaf(op, column, (_literal(rng, column),))


def _predicate(rng: random.Random, depth: int = 0) -> Predicate:
    if depth >= 2 or rng.random() < 0.5:
        return _leaf(rng)
    children = [_predicate(rng, depth + 1) for _ in range(rng.randint(2, 3))]
    return and_(*children) if rng.random() < 0.5 else or_(*children)


def _matching(table: pa.Table, bound: Predicate) -> BitMap:
    positions = table.append_column("_pos", pa.array(np.arange(table.num_rows)))
    kept = positions.filter(to_arrow_expression(bound, SCHEMA)).column("_pos").to_numpy()
    return BitMap(kept.astype(np.uint32))


@pytest.mark.parametrize("seed", range(4))
def test_exact_answers_are_the_matching_rows(seed: int) -> None:
    rng = random.Random(seed)
    table = _table(rng)
    data = build_file_index(table, OPTIONS)
    assert data is not None
    exact_seen = inexact_seen = 0
    with ContainerReader(data) as container:
        for _ in range(CASES):
            unbound = _predicate(rng)
            bound = bind(unbound, SCHEMA)
            want = _matching(table, bound)
            for exact_answers in (False, True):
                result = FileIndexEvaluator(container, SCHEMA, exact_answers=exact_answers).evaluate(bound)
                got = result.bitmap if isinstance(result, Rows) else \
                    BitMap(range(ROWS)) if result.remain else BitMap()
                assert want <= got, f"{unbound}: {result} misses rows {list(want - got)}"
                if result.exact:
                    exact_seen += 1
                    assert got == want, f"{unbound}: exact answer {list(got)} != {list(want)}"
                else:
                    inexact_seen += 1
    assert exact_seen > CASES // 2 and inexact_seen > 0  # both kinds of answer were checked


@pytest.fixture
def evaluator():
    table = pa.table({"i_bm": pa.array([1, None, 2, 1], pa.int32()),
                      "i_bf": pa.array([1, 2, 3, 4], pa.int32()),
                      "d_rb": pa.array([-0.0, 0.0, float("nan"), None]),
                      "ts9": pa.array([1, 2, None, 4], pa.timestamp("ns"))})
    opts = {"file-index.bitmap.columns": "i_bm,ts9", "file-index.bloom-filter.columns": "i_bf",
            "file-index.range-bitmap.columns": "d_rb"}
    data = build_file_index(table, opts)
    assert data is not None
    with ContainerReader(data) as container:
        yield lambda **kw: FileIndexEvaluator(container, SCHEMA, **kw)


def test_which_answers_are_exact(evaluator) -> None:
    plain, strict = evaluator(), evaluator(exact_answers=True)
    eq = plain.evaluate(Leaf(Op.EQ, "i_bm", (1,)))
    assert eq.exact and list(eq.bitmap) == [0, 3]
    # The bitmap index's <> keeps NULL rows (Paimon's answer): exact only once they are taken out.
    ne = plain.evaluate(Leaf(Op.NE, "i_bm", (1,)))
    assert not ne.exact and list(ne.bitmap) == [1, 2]
    ne = strict.evaluate(Leaf(Op.NE, "i_bm", (1,)))
    assert ne.exact and list(ne.bitmap) == [2]
    # A NULL literal: the index matches NULL rows, SQL matches none of them.
    assert not plain.evaluate(Leaf(Op.IN, "i_bm", (1, None))).exact
    assert not plain.evaluate(Leaf(Op.EQ, "i_bf", (1,))).exact  # Bloom: never
    # = 0.0 finds both zeros (Spark's meaning) and is exact; asked in Java's order it is neither.
    zero = plain.evaluate(Leaf(Op.EQ, "d_rb", (0.0,)))
    assert zero.exact and list(zero.bitmap) == [0, 1]
    java = plain.evaluate(Leaf(Op.EQ, "d_rb", (0.0,)), java_order=True)
    assert not java.exact and list(java.bitmap) == [1]
    nan = plain.evaluate(Leaf(Op.GT, "d_rb", (1.0,)))
    assert nan.exact and list(nan.bitmap) == [2]  # NaN is above every number
    # TIMESTAMP(9): keys are floored to micros, so a bitmap answer is a superset only.
    floored = plain.evaluate(Leaf(Op.EQ, "ts9", (0,)))  # 1, 2 and 4 ns share the key 0 us
    assert not floored.exact and list(floored.bitmap) == [0, 1, 3]
    # AND with a "cannot tell" leaf is not exact; AND with a SKIP is (nothing matches).
    mixed = plain.evaluate(and_(Leaf(Op.EQ, "i_bm", (1,)), Leaf(Op.EQ, "i_bf", (1,))))
    assert not mixed.exact
    assert plain.evaluate(and_(Leaf(Op.EQ, "i_bm", (9,)), Leaf(Op.EQ, "i_bf", (1,)))).exact


def test_result_algebra_keeps_exactness() -> None:
    a, b = Rows(BitMap([1, 2]), exact=True), Rows(BitMap([2, 3]), exact=True)
    c = Rows(BitMap([2]))
    assert SKIP.exact and not REMAIN.exact
    assert (a & b).exact and (a | b).exact and list((a & b).bitmap) == [2]
    assert not (a & c).exact and not (a | c).exact
    assert not (a & REMAIN).exact and not (REMAIN & a).exact and (REMAIN | a) is REMAIN
    assert (a | SKIP).exact and (SKIP & c).exact
    assert a.and_not(BitMap([1])).exact and not c.and_not(BitMap()).exact
    assert not a.limit(1).exact
    assert (a & REMAIN).bitmap == a.bitmap  # exactness never changes the rows
