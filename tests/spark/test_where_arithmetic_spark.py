"""WHERE arithmetic through the Python API gives Spark's answer over the same Parquet rows."""

from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.table.test_where_arithmetic import CASES, _table, rows

import paimon_index
from paimon_index.errors import DataError
from paimon_index.expression import evaluate_term
from paimon_index.predicate import Computed
from paimon_index.sql import bind_predicate
from paimon_index.types import from_arrow

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("kind", ["append", "pk-merge-on-read"])
def test_where_arithmetic_equals_spark_sql(spark, tmp_path, kind: str) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(rows(), path)
    spark.read.parquet(str(path)).createOrReplaceTempView("arith_rows")
    table = _table(tmp_path / "wh", kind)
    for text, _ in CASES:
        want = sorted(r[0] for r in spark.sql(f"SELECT k FROM arith_rows WHERE {text}").collect())
        assert sorted(table.read(text).column("k").to_pylist()) == want, text
    # ANSI: Spark raises for a division by zero it evaluates, and so do we.
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):
        spark.sql("SELECT k FROM arith_rows WHERE k / (id - id) > 0").collect()


# -- DECIMAL: values and result types as Spark SQL computes them ------------------------------------

DECIMALS = pa.schema([("k", pa.int32()), ("price", pa.decimal128(18, 4)), ("l", pa.int64()),
                      ("x", pa.decimal128(22, 8)), ("y", pa.decimal128(15, 0)), ("e", pa.decimal128(10, 3)),
                      ("b10", pa.decimal128(38, 10)), ("big", pa.decimal128(38, 0))])


def _decimal_rows() -> pa.Table:
    fixed = [
        # Spark 4 rounds x / y once (HALF_UP at 24): a quotient ...666|4999..9(18 nines)8 stays ...666.
        (Decimal("12.3456"), 7, Decimal("10000002166666.63666666"), Decimal(999999999999997),
         Decimal("0.001"), Decimal("1.0000005000"), Decimal(10**30)),
        (Decimal("-12.3456"), -7, Decimal("-0.00000001"), Decimal(-3), Decimal("-0.001"),
         Decimal("-1.0000005000"), Decimal(-(10**30) + 1)),
        (Decimal("99999999999999.9999"), 2**62, Decimal("99999999999999.99999999"), Decimal(16),
         Decimal("0.003"), Decimal("-0.0000004999"), Decimal(7)),
        (None, 3, None, Decimal(1), None, None, None),
        (Decimal("0.0001"), -(2**62), Decimal("1.5"), Decimal(-999999999999999), Decimal("-9999999.999"),
         Decimal("9999999999999999999999999999.9999999999"), Decimal(-(10**31))),
    ]
    rng = random.Random(7)
    for _ in range(40):
        sign = rng.choice([-1, 1])

        def scaled(digits: int, scale: int) -> Decimal:
            return Decimal(rng.randint(-(10**digits), 10**digits)).scaleb(-scale)

        fixed.append((scaled(17, 4), sign * rng.randint(1, 10**6), scaled(21, 8),
                      Decimal(sign * rng.randint(1, 10**15 - 1)), scaled(9, 3), scaled(37, 10),
                      scaled(30, 0)))
    columns = list(zip(*fixed, strict=True))
    return pa.table([list(range(len(fixed))), *columns], schema=DECIMALS)


DECIMAL_TERMS = [
    "price * 3 % 7", "price * 3", "price / 3", "price / 7", "price % -3", "-price % 7", "price * l",
    "price + l", "price / l", "l / price", "x / y", "x * y", "x % y", "e / 16", "e / -16", "e * e / 3",
    "b10 + price", "b10 - big", "b10 / price", "b10 % price", "big % y", "big / 7", "big * 3 - l",
    "(price - 0.00005) / 2.5",
]


def test_decimal_arithmetic_equals_spark_sql(spark, tmp_path) -> None:
    path = tmp_path / "decimals.parquet"
    data = _decimal_rows()
    pq.write_table(data, path)
    spark.read.parquet(str(path)).createOrReplaceTempView("decimal_rows")
    schema = {f.name: from_arrow(f.type) for f in DECIMALS}
    columns = ", ".join(f"{text} AS v{i}" for i, text in enumerate(DECIMAL_TERMS))
    frame = spark.sql(f"SELECT k, {columns} FROM decimal_rows ORDER BY k")  # one job for every term
    answers = frame.collect()
    for i, text in enumerate(DECIMAL_TERMS):
        want_type = frame.schema[f"v{i}"].dataType
        term = bind_predicate(f"{text} = 0", schema)
        assert isinstance(term, Computed), text
        got = evaluate_term(term.left, data)
        assert got.type == pa.decimal128(want_type.precision, want_type.scale), text
        assert got.to_pylist() == [r[f"v{i}"] for r in answers], text
    table = paimon_index.create_table(str(tmp_path / "wh"), "db.d", DECIMALS)
    table.write(data)
    for where in ("price * 3 % 7 > 2", "x / y >= 0.010000002166666666666666", "b10 - big < 0",
                  "e / 16 = 0.000063 OR e / -16 = 0.000063", "price * l > 1000"):
        want = sorted(r[0] for r in spark.sql(f"SELECT k FROM decimal_rows WHERE {where}").collect())
        assert sorted(table.read(where).column("k").to_pylist()) == want, where


@pytest.mark.parametrize("text", ["big * 10", "big + 99999999999999999999999999999999999999"])
def test_decimal_overflow_at_precision_38_raises_as_spark_does(spark, tmp_path, text: str) -> None:
    path = tmp_path / "top.parquet"
    data = pa.table({"k": pa.array([1], pa.int32()),
                     "big": pa.array([Decimal(10**37)], pa.decimal128(38, 0))})
    pq.write_table(data, path)
    spark.read.parquet(str(path)).createOrReplaceTempView("top_rows")
    with pytest.raises(Exception, match="NUMERIC_VALUE_OUT_OF_RANGE"):
        spark.sql(f"SELECT k FROM top_rows WHERE {text} > 0").collect()
    table = paimon_index.create_table(str(tmp_path / "wh"), "db.top", data.schema)
    table.write(data)
    with pytest.raises(DataError, match=r"DECIMAL overflow: .* does not fit DECIMAL\(38, 0\)"):
        table.read(f"{text} > 0")
