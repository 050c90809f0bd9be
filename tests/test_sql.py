"""The SQL-like predicate parser: every form, precedence, NOT push-down, errors with positions."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_index.errors import InvalidPredicateError
from paimon_index.fileindex.base import SortOrder
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, And, Leaf, Op, Or, Predicate
from paimon_index.sql import bind_predicate, parse_order_by, parse_predicate


@pytest.mark.parametrize(("text", "expected"), [
    ("c = 5", Leaf(Op.EQ, "c", (5,))),
    ("c != 5", Leaf(Op.NE, "c", (5,))),
    ("5 <= c", Leaf(Op.GE, "c", (5,))),
    ("c IN (1, 'a', NULL)", Leaf(Op.IN, "c", (1, "a", None))),
    ("c IN ()", Leaf(Op.IN, "c", ())),
    ("c not in (1)", Leaf(Op.NOT_IN, "c", (1,))),
    ("c IS NULL", Leaf(Op.IS_NULL, "c")),
    ("c is not null", Leaf(Op.IS_NOT_NULL, "c")),
    ("c BETWEEN 1 AND 9", Leaf(Op.BETWEEN, "c", (1, 9))),
    ("c NOT BETWEEN 1 AND 9", Or((Leaf(Op.LT, "c", (1,)), Leaf(Op.GT, "c", (9,))))),
    ("s LIKE 'ab%'", Leaf(Op.STARTS_WITH, "s", ("ab",))),
    ("s LIKE 'a_c'", Leaf(Op.LIKE, "s", ("a_c",))),
    ("s = 'it''s'", Leaf(Op.EQ, "s", ("it's",))),
    ("s = '😀 é'", Leaf(Op.EQ, "s", ("😀 é",))),
    ("`we``ird col` = 1", Leaf(Op.EQ, "we`ird col", (1,))),
    ("c = 1.50", Leaf(Op.EQ, "c", (decimal.Decimal("1.50"),))),
    ("c = -2e3", Leaf(Op.EQ, "c", (-2000.0,))),
    ("b = TRUE", Leaf(Op.EQ, "b", (True,))),
    ("x = X'0aFF'", Leaf(Op.EQ, "x", (b"\x0a\xff",))),
    ("d = DATE '2024-01-01'", Leaf(Op.EQ, "d", (dt.date(2024, 1, 1),))),
    ("t = TIMESTAMP '2024-01-01 10:00:00.123456'",
     Leaf(Op.EQ, "t", (dt.datetime(2024, 1, 1, 10, 0, 0, 123456),))),
    ("t = TIME '10:00:01.500'", Leaf(Op.EQ, "t", (dt.time(10, 0, 1, 500000),))),
    ("TRUE", ALWAYS_TRUE),
    ("NOT TRUE", ALWAYS_FALSE),
    ("a = 1 OR b = 2 AND c = 3",
     Or((Leaf(Op.EQ, "a", (1,)), And((Leaf(Op.EQ, "b", (2,)), Leaf(Op.EQ, "c", (3,))))))),
    ("(a = 1 OR b = 2) AND c = 3",
     And((Or((Leaf(Op.EQ, "a", (1,)), Leaf(Op.EQ, "b", (2,)))), Leaf(Op.EQ, "c", (3,))))),
    ("NOT (a = 1 OR b < 2)", And((Leaf(Op.NE, "a", (1,)), Leaf(Op.GE, "b", (2,))))),
    ("NOT NOT a IS NULL", Leaf(Op.IS_NULL, "a")),
    ("NOT a IN (1, 2)", Leaf(Op.NOT_IN, "a", (1, 2))),
])
def test_forms(text: str, expected: Predicate) -> None:
    assert parse_predicate(text) == expected


@pytest.mark.parametrize(("text", "position", "message"), [
    ("c = = 1", 4, "expected a literal"),
    ("c IN 1", 5, "expected '\\('"),
    ("c = 'open", 4, "unexpected character"),
    ("(c = 1", 6, "expected '\\)'"),
    ("c = 1 d", 6, "unexpected 'd'"),
    ("c NOT LIKE 'a%'", 6, "NOT LIKE is not supported"),
    ("d = DATE '2024-13-01'", 9, "invalid DATE literal"),
    ("t = TIMESTAMP '2024-01-01 00:00:00.1234567'", 14, "nanoseconds"),
    ("c BETWEEN 1", 11, "expected AND"),
    ("", 0, "empty predicate"),
    ("c IN (1 2)", 8, "expected ',' or '\\)'"),
])
def test_errors_point_at_the_token(text: str, position: int, message: str) -> None:
    with pytest.raises(InvalidPredicateError, match=message) as info:
        parse_predicate(text)
    assert info.value.position == position
    assert "^" in str(info.value)


def test_binding_converts_literals() -> None:
    bound = bind_predicate("d = DATE '2024-01-01' AND ts >= TIMESTAMP '2024-01-01 10:00:00'",
                           "d DATE, ts TIMESTAMP(3)")
    assert bound == And((Leaf(Op.EQ, "d", (19723,)), Leaf(Op.GE, "ts", (1704103200000,))))
    with pytest.raises(InvalidPredicateError, match="unknown column 'x'"):
        bind_predicate("x = 1", "c INT")
    with pytest.raises(InvalidPredicateError, match="does not fit type INT"):
        bind_predicate("c = 'a'", "c INT")


def test_order_by() -> None:
    assert parse_order_by("score DESC NULLS LAST, id") == (
        SortOrder("score", False, False), SortOrder("id", True, True))
    assert parse_order_by("x desc") == (SortOrder("x", False, False),)
    assert parse_order_by("x ASC NULLS LAST") == (SortOrder("x", True, False),)
    with pytest.raises(InvalidPredicateError, match="FIRST or LAST"):
        parse_order_by("x NULLS MIDDLE")


# -- round trip: print a random tree, parse it, evaluate both with three-valued logic ------------
COLUMNS = ["a", "b", "s"]
UNKNOWN = None


def sql_literal(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def to_sql(p: Predicate) -> str:
    if isinstance(p, And | Or):
        joiner = " AND " if isinstance(p, And) else " OR "
        return "(" + joiner.join(to_sql(c) for c in p.children) + ")"
    if p == ALWAYS_TRUE:
        return "TRUE"
    if p == ALWAYS_FALSE:
        return "FALSE"
    assert isinstance(p, Leaf)
    lits = [sql_literal(v) for v in p.literals]
    if p.op in (Op.IN, Op.NOT_IN):
        return f"{p.column} {p.op.value} ({', '.join(lits)})"
    if p.op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return f"{p.column} {p.op.value}"
    if p.op is Op.BETWEEN:
        return f"{p.column} BETWEEN {lits[0]} AND {lits[1]}"
    return f"{p.column} {p.op.value} {lits[0]}"


def _cmp(op: Op, x: object, y: object) -> bool | None:
    if x is None or y is None:
        return UNKNOWN
    return {Op.EQ: x == y, Op.NE: x != y, Op.LT: x < y, Op.LE: x <= y,  # type: ignore[operator]
            Op.GT: x > y, Op.GE: x >= y}[op]  # type: ignore[operator]


def evaluate(p: Predicate, row: dict[str, object]) -> bool | None:
    """SQL three-valued logic: True, False or None (UNKNOWN)."""
    if p == ALWAYS_TRUE:
        return True
    if p == ALWAYS_FALSE:
        return False
    if isinstance(p, And):
        vals = [evaluate(c, row) for c in p.children]
        return False if False in vals else (UNKNOWN if UNKNOWN in vals else True)
    if isinstance(p, Or):
        vals = [evaluate(c, row) for c in p.children]
        return True if True in vals else (UNKNOWN if UNKNOWN in vals else False)
    assert isinstance(p, Leaf)
    x = row[p.column]
    if p.op is Op.IS_NULL:
        return x is None
    if p.op is Op.IS_NOT_NULL:
        return x is not None
    if p.op in (Op.IN, Op.NOT_IN):
        hits = [_cmp(Op.EQ, x, v) for v in p.literals]
        found = True if True in hits else (UNKNOWN if UNKNOWN in hits else False)
        return found if p.op is Op.IN or found is UNKNOWN else not found
    if p.op is Op.BETWEEN:
        return evaluate(And((Leaf(Op.GE, p.column, (p.literals[0],)),
                             Leaf(Op.LE, p.column, (p.literals[1],)))), row)
    return _cmp(p.op, x, p.literals[0])


def negate(v: bool | None) -> bool | None:
    return None if v is None else not v


def values_for(column: str) -> st.SearchStrategy[object]:
    return st.sampled_from(["", "x", "it's", "é"]) if column == "s" else st.integers(-3, 3)


@st.composite
def leaves(draw: st.DrawFn) -> Predicate:
    column = draw(st.sampled_from(COLUMNS))
    op = draw(st.sampled_from([Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN,
                               Op.IS_NULL, Op.IS_NOT_NULL, Op.BETWEEN]))
    vals = values_for(column)
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return Leaf(op, column)
    if op in (Op.IN, Op.NOT_IN):
        return Leaf(op, column, tuple(draw(st.lists(st.one_of(vals, st.none()), max_size=3))))
    if op is Op.BETWEEN:
        return Leaf(op, column, (draw(vals), draw(vals)))
    return Leaf(op, column, (draw(vals),))


trees = st.recursive(leaves(), lambda kids: st.one_of(
    st.lists(kids, min_size=2, max_size=3).map(lambda cs: And(tuple(cs))),
    st.lists(kids, min_size=2, max_size=3).map(lambda cs: Or(tuple(cs)))), max_leaves=6)
rows = st.fixed_dictionaries({c: st.one_of(values_for(c), st.none()) for c in COLUMNS})


@settings(max_examples=300, deadline=None)
@given(tree=trees, row=rows, wrap_in_not=st.booleans())
def test_printed_trees_parse_back_to_the_same_logic(tree: Predicate, row: dict[str, object],
                                                    wrap_in_not: bool) -> None:
    text = to_sql(tree)
    if wrap_in_not:
        # NOT is pushed down while parsing; the WHERE outcome (TRUE keeps the row) must not change
        kept = evaluate(parse_predicate(f"NOT ({text})"), row) is True
        assert kept == (negate(evaluate(tree, row)) is True)
    else:
        assert evaluate(parse_predicate(text), row) == evaluate(tree, row)


def test_constants_unpickle_to_the_singletons() -> None:
    """Spark ships predicates to executors by pickle; readers test ``p is ALWAYS_TRUE``."""
    import pickle

    from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE

    assert pickle.loads(pickle.dumps(ALWAYS_TRUE)) is ALWAYS_TRUE
    assert pickle.loads(pickle.dumps(ALWAYS_FALSE)) is ALWAYS_FALSE


# ------------------------------------------------------------------------------------------------
# Null-safe equality and IS [NOT] TRUE/FALSE: two-valued, so NOT keeps the NULL rows (issue 12)
# ------------------------------------------------------------------------------------------------
_C_NOT_NULL = Leaf(Op.IS_NOT_NULL, "c")
_B_NOT_NULL = Leaf(Op.IS_NOT_NULL, "b")


@pytest.mark.parametrize(("text", "expected"), [
    ("c <=> 5", And((_C_NOT_NULL, Leaf(Op.EQ, "c", (5,))))),
    ("5 <=> c", And((_C_NOT_NULL, Leaf(Op.EQ, "c", (5,))))),
    ("c <=> NULL", Leaf(Op.IS_NULL, "c")),
    ("NOT (c <=> 5)", Or((Leaf(Op.IS_NULL, "c"), Leaf(Op.NE, "c", (5,))))),
    ("NOT c <=> NULL", Leaf(Op.IS_NOT_NULL, "c")),
    ("b IS TRUE", And((_B_NOT_NULL, Leaf(Op.EQ, "b", (True,))))),
    ("b IS NOT TRUE", Or((Leaf(Op.IS_NULL, "b"), Leaf(Op.NE, "b", (True,))))),
    ("b is false", And((_B_NOT_NULL, Leaf(Op.EQ, "b", (False,))))),
    ("b IS NOT FALSE", Or((Leaf(Op.IS_NULL, "b"), Leaf(Op.NE, "b", (False,))))),
    ("NOT b IS NOT TRUE", And((_B_NOT_NULL, Leaf(Op.EQ, "b", (True,))))),
    ("NOT (c <=> 5 OR b IS TRUE)",
     And((Or((Leaf(Op.IS_NULL, "c"), Leaf(Op.NE, "c", (5,)))),
          Or((Leaf(Op.IS_NULL, "b"), Leaf(Op.NE, "b", (True,))))))),
])
def test_null_safe_forms(text: str, expected: Predicate) -> None:
    assert parse_predicate(text) == expected


def test_is_needs_null_true_or_false() -> None:
    with pytest.raises(InvalidPredicateError, match="expected NULL, TRUE or FALSE") as info:
        parse_predicate("b IS 5")
    assert info.value.position == 5


# ------------------------------------------------------------------------------------------------
# Literals are compared by value, as Spark compares them (issue 12)
# ------------------------------------------------------------------------------------------------
COERCE_SCHEMA = ("i INT, t TINYINT, a DECIMAL(10, 2), w DECIMAL(38, 10), f FLOAT, d DOUBLE, "
                 "day DATE, ts TIMESTAMP(3), ts6 TIMESTAMP(6), tm TIME(3)")


@pytest.mark.parametrize(("text", "expected"), [
    # DECIMAL: an integer is its value, never the unscaled key (100 was read as 1.00)
    ("a > 100", Leaf(Op.GT, "a", (10000,))),
    ("a = 100", Leaf(Op.EQ, "a", (10000,))),
    ("a IN (1, 2.5)", Leaf(Op.IN, "a", (100, 250))),
    ("w = 1", Leaf(Op.EQ, "w", (10**10,))),
    # more decimal places than the column holds: compared exactly, not rounded
    ("a > 99.999", Leaf(Op.GE, "a", (10000,))),
    ("a >= 99.999", Leaf(Op.GE, "a", (10000,))),
    ("a < 99.999", Leaf(Op.LE, "a", (9999,))),
    ("a = 99.999", ALWAYS_FALSE),
    ("a <> 99.999", Leaf(Op.IS_NOT_NULL, "a")),
    ("a < -99.999", Leaf(Op.LE, "a", (-10000,))),
    ("a BETWEEN 0.001 AND 0.019", And((Leaf(Op.GE, "a", (1,)), Leaf(Op.LE, "a", (1,))))),
    ("a > 1e20", ALWAYS_FALSE),
    ("a < 1e20", Leaf(Op.LE, "a", (10**10 - 1,))),
    ("a > '5'", Leaf(Op.GT, "a", (500,))),
    # integers: a fraction or an out-of-range value matches by value
    ("i = 2.5", ALWAYS_FALSE),
    ("i < 2.5", Leaf(Op.LE, "i", (2,))),
    ("i > 2.5", Leaf(Op.GE, "i", (3,))),
    ("i > -2.5", Leaf(Op.GE, "i", (-2,))),
    ("i IN (2.5, 3)", Leaf(Op.IN, "i", (3,))),
    ("i IN (2.5)", ALWAYS_FALSE),
    ("i NOT IN (2.5)", Leaf(Op.IS_NOT_NULL, "i")),
    ("i NOT IN (2.5, 4)", Leaf(Op.NOT_IN, "i", (4,))),
    ("t < 1000", Leaf(Op.LE, "t", (127,))),
    ("t > 1000", ALWAYS_FALSE),
    ("t >= -1000", Leaf(Op.GE, "t", (-128,))),
    ("i < NaN", Leaf(Op.LE, "i", (2**31 - 1,))),  # NaN is above every number
    ("i = NaN", ALWAYS_FALSE),
    ("i = 2.0", Leaf(Op.EQ, "i", (2,))),
    ("i = 2e0", Leaf(Op.EQ, "i", (2,))),
    # FLOAT: an integer is cast to FLOAT; a decimal or double literal is compared as DOUBLE
    ("f = 16777217", Leaf(Op.EQ, "f", (16777216.0,))),
    ("f = 0.5", Leaf(Op.EQ, "f", (0.5,))),
    ("f = 0.1", ALWAYS_FALSE),
    ("f < 'NaN'", Leaf(Op.LT, "f", (math.nan,))),
    ("d = 0.1", Leaf(Op.EQ, "d", (0.1,))),
    # dates and timestamps, before 1970 too
    ("day < DATE '1969-12-31'", Leaf(Op.LT, "day", (-1,))),
    ("day = '1900-03-01'", Leaf(Op.EQ, "day", (-25508,))),
    ("day < TIMESTAMP '1969-12-31 10:00:00'", Leaf(Op.LE, "day", (-1,))),
    ("day = TIMESTAMP '1969-12-31 00:00:00'", Leaf(Op.EQ, "day", (-1,))),
    ("ts = TIMESTAMP '1969-12-31 23:59:59.999'", Leaf(Op.EQ, "ts", (-1,))),
    ("ts = TIMESTAMP '1969-12-31 23:59:59.9995'", ALWAYS_FALSE),  # between two milliseconds
    ("ts >= TIMESTAMP '1969-12-31 23:59:59.9995'", Leaf(Op.GE, "ts", (0,))),
    ("ts < TIMESTAMP '1969-12-31 23:59:59.9995'", Leaf(Op.LE, "ts", (-1,))),
    ("ts6 = TIMESTAMP '1969-12-31 23:59:59.999999'", Leaf(Op.EQ, "ts6", (-1,))),
    ("ts6 > '1970-01-01 00:00:01'", Leaf(Op.GT, "ts6", (1_000_000,))),
    ("tm = TIME '00:00:01.0005'", ALWAYS_FALSE),  # TIME keys are millis
    ("tm > TIME '00:00:01.0005'", Leaf(Op.GE, "tm", (1001,))),
    ("tm = TIME '00:00:01.001'", Leaf(Op.EQ, "tm", (1001,))),
])
def test_literals_bind_by_value(text: str, expected: Predicate) -> None:
    got = bind_predicate(text, COERCE_SCHEMA)
    assert str(got) == str(expected)  # str: NaN literals compare unequal


@pytest.mark.parametrize(("text", "message"), [
    ("i = 'abc'", "not a number"),
    ("i = TRUE", "does not fit"),
    ("day = 'someday'", "not an ISO date"),
    ("ts = 'noon'", "not an ISO timestamp"),
])
def test_literals_that_cannot_compare(text: str, message: str) -> None:
    with pytest.raises(InvalidPredicateError, match=message):
        bind_predicate(text, COERCE_SCHEMA)


def test_signed_special_floats_in_lists_and_bounds() -> None:
    """``-Infinity`` in an IN list or a BETWEEN bound (the differential suites' texts): the lexer
    reads the sign as an operator since WHERE takes arithmetic."""
    import math

    from paimon_index.sql import parse_predicate

    leaf = parse_predicate("d IN (Infinity, -Infinity, -2.25E0, -0.0E0, +3)")
    values = list(leaf.literals)  # type: ignore[union-attr]
    assert values[:3] == [math.inf, -math.inf, -2.25] and values[4] == 3
    assert math.copysign(1.0, values[3]) == -1.0
    between = parse_predicate("d BETWEEN -Infinity AND -1")
    assert str(between) == "d BETWEEN -inf AND -1"
