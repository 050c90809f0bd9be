"""DECIMAL arithmetic in WHERE/SET is evaluated on whole columns (no Decimal per row) and gives exactly
the value Java's BigDecimal gives under Spark's result types: checked here against a reference written
with Python's ``decimal`` row by row (the former implementation), on random values that take both the
64-bit path and the big-integer path; tests/spark/test_where_arithmetic_spark.py checks Spark itself."""

from __future__ import annotations

import decimal
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from paimon_index.errors import DataError
from paimon_index.expression import arithmetic, decimal_result_type

_WIDE = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP)


def _reference(op: str, x: Decimal | None, y: Decimal | None, precision: int, scale: int) -> Decimal | None:
    """Java's BigDecimal: the exact result rounded HALF_UP to ``scale`` (Spark 4 rounds a quotient once)."""
    if x is None or y is None:
        return None
    exact = {"+": _WIDE.add, "-": _WIDE.subtract, "*": _WIDE.multiply, "/": _WIDE.divide,
             "%": _WIDE.remainder}[op](x, y)
    result = exact.quantize(Decimal(1).scaleb(-scale), context=_WIDE)
    if abs(result) >= Decimal(10) ** (precision - scale):
        raise OverflowError
    return result


def _values(rng: random.Random, precision: int, scale: int, n: int, digits: int) -> list[Decimal | None]:
    out: list[Decimal | None] = []
    for _ in range(n):
        if rng.random() < 0.1:
            out.append(None)
            continue
        width = rng.randint(1, digits)
        unscaled = rng.randint(-(10**width - 1), 10**width - 1) or 1
        out.append(Decimal(unscaled).scaleb(-scale))
    return out


TYPES = [(18, 4), (10, 2), (38, 0), (38, 10), (22, 8), (15, 0), (38, 38), (5, 5), (20, 0), (3, 1)]


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%"])
@pytest.mark.parametrize("small", [True, False], ids=["int64", "big"])
def test_decimal_arithmetic_equals_bigdecimal(op: str, small: bool) -> None:
    rng = random.Random(hash((op, small)) & 0xFFFF)
    checked = 0
    for (p1, s1) in TYPES:
        for (p2, s2) in TYPES:
            precision, scale = decimal_result_type(op, p1, s1, p2, s2)
            xs = _values(rng, p1, s1, 30, min(p1, 6) if small else p1)
            ys = _values(rng, p2, s2, 30, min(p2, 6) if small else p2)
            try:
                want = [_reference(op, x, y, precision, scale) for x, y in zip(xs, ys, strict=True)]
            except OverflowError:
                with pytest.raises(DataError, match="DECIMAL overflow"):
                    arithmetic(op, pa.array(xs, pa.decimal128(p1, s1)), pa.array(ys, pa.decimal128(p2, s2)))
                continue
            got = arithmetic(op, pa.array(xs, pa.decimal128(p1, s1)), pa.array(ys, pa.decimal128(p2, s2)))
            assert got.type == pa.decimal128(precision, scale)
            assert got.to_pylist() == want, (op, (p1, s1), (p2, s2))
            checked += 1
    assert checked > 50


def test_a_column_with_an_integer_literal_and_a_bigint_column() -> None:
    prices = pa.array([Decimal("12.3456"), Decimal("-0.0001"), None, Decimal("99999999999999.9999")],
                      pa.decimal128(18, 4))
    got = arithmetic("*", prices, pa.scalar(3, pa.int32()))
    assert got.type == pa.decimal128(20, 4)  # the literal 3 is DECIMAL(1, 0)
    assert got.to_pylist() == [Decimal("37.0368"), Decimal("-0.0003"), None, Decimal("299999999999999.9997")]
    longs = pa.array([2**62, -3, 7, 1], pa.int64())  # BIGINT is DECIMAL(20, 0)
    got = arithmetic("*", prices, longs)
    assert got.type == pa.decimal128(38, 4)
    assert got.to_pylist() == [Decimal("12.3456") * 2**62, Decimal("0.0003"), None,
                               Decimal("99999999999999.9999")]


def test_half_up_rounding_at_the_result_scale_and_the_sign() -> None:
    # DECIMAL(10, 3) / 16 has scale 6: 0.001 / 16 = 0.0000625 -> 0.000063, and -0.000063.
    e = pa.array([Decimal("0.001"), Decimal("-0.001"), Decimal("0.003")], pa.decimal128(10, 3))
    assert arithmetic("/", e, pa.scalar(16, pa.int32())).to_pylist() == \
        [Decimal("0.000063"), Decimal("-0.000063"), Decimal("0.000188")]
    # Java's remainder takes the dividend's sign.
    assert arithmetic("%", e, pa.scalar(Decimal("-0.002"), pa.decimal128(3, 3))).to_pylist() == \
        [Decimal("0.001"), Decimal("-0.001"), Decimal("0.001")]


def test_overflow_at_precision_38_names_the_values() -> None:
    top = pa.array([Decimal(10**37), Decimal(9 * 10**37)], pa.decimal128(38, 0))
    assert arithmetic("+", top, pa.scalar(1, pa.int32())).type == pa.decimal128(38, 0)
    with pytest.raises(DataError, match=r"DECIMAL overflow: 10{37} \* 10 does not fit DECIMAL\(38, 0\)"):
        arithmetic("*", top, pa.scalar(10, pa.int32()))
    nines = pa.array([Decimal(10**38 - 1)], pa.decimal128(38, 0))
    with pytest.raises(DataError, match="DECIMAL overflow"):
        arithmetic("+", nines, pa.scalar(1, pa.int32()))


def test_null_dividend_with_a_zero_divisor_is_null() -> None:
    x = pa.array([None, Decimal("1.5")], pa.decimal128(5, 1))
    y = pa.array([Decimal("0.0"), Decimal("0.5")], pa.decimal128(5, 1))
    assert arithmetic("/", x, y).to_pylist() == [None, Decimal("3.000000")]
    with pytest.raises(DataError, match="division by zero"):
        arithmetic("/", y, y)
