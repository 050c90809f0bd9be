"""Differential test of the Python API: ``read_arrow(table, where)`` against a plain evaluation.

Generated tables (tests/differential/generate.py: every index type on the columns that take it,
NULL/NaN/±0.0/±Inf, DECIMAL(10,2) and (38,10), pre-1970 dates, partitions, several files, deletion
vectors) are read through ``paimon_index.table.read.read_arrow`` with and without indexes, for
random WHERE texts of the paimon_index.sql dialect; the reference is
:func:`differential.expr.evaluate` over the live rows, written from Spark's semantics (and checked
against Spark SQL in tests/spark/test_differential.py). Differences a known bug explains are xfail
(tests/differential/known_bugs.py); any other difference fails.
"""

from __future__ import annotations

import decimal
import random
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from differential.compare import diff_rows
from differential.expr import PYTHON, evaluate
from differential.generate import Materialized, generate_table, materialize, tables
from differential.known_bugs import Case, crash_detail, file_difference, report_differences
from differential.queries import generate_where
from paimon_index.table.catalog import create_table
from paimon_index.table.read import read_arrow
from paimon_index.table.write import write_arrow

CI_SEEDS = tuple(range(14))
WHERES_PER_TABLE = 25
#: Examples are seeds: shrinking a seed teaches nothing, so it is skipped.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
SLOW_EXAMPLES = 30


def _row_tuples(rows: list[dict[str, object]], names: list[str]) -> list[tuple[object, ...]]:
    return [tuple(row[n] for n in names) for row in rows]


def check_python_api(made: Materialized, rng: random.Random, count: int) -> tuple[list[str], list[str]]:
    """(unexplained differences, known-bug reasons) over ``count`` random WHERE texts."""
    table = made.open()
    rows = made.live.to_pylist()
    names = made.live.schema.names
    failures: list[str] = []
    claimed: list[str] = []
    for _ in range(count):
        where = generate_where(rng, made.spec, PYTHON)
        text = where.sql(PYTHON)
        want = _row_tuples([r for r in rows if evaluate(where, r) is True], names)
        for source, use_index in (("python", True), ("python-off", False)):
            try:
                got_table, _ = read_arrow(table, text, use_index=use_index)
                got = _row_tuples(got_table.to_pylist(), names) if got_table.num_rows else []
                detail = diff_rows(want, got)
            except Exception as e:
                detail = crash_detail(e)
            if detail is not None:
                file_difference(Case(made.spec, source, (where,), detail=detail),
                                f"[{source}] WHERE {text}\n    {detail}", failures, claimed)
    return failures, claimed


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_python_api_matches_reference(seed: int, tmp_path: Path) -> None:
    made = materialize(generate_table(random.Random(seed), f"seed{seed}"), tmp_path)
    failures, claimed = check_python_api(made, random.Random(10_000 + seed), WHERES_PER_TABLE)
    report_differences(made.spec.describe(), failures, claimed)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=tables(), query_seed=tables())
def test_python_api_matches_reference_hypothesis(seed: int, query_seed: int) -> None:
    spec = generate_table(random.Random(seed), f"seed{seed}")
    rng = random.Random(query_seed)
    with tempfile.TemporaryDirectory() as root:
        made = materialize(spec, Path(root))
        failures, _ = check_python_api(made, rng, WHERES_PER_TABLE)
        assert not failures, f"{spec.describe()}\n" + "\n".join(failures)


def test_reference_evaluator_semantics() -> None:
    """The evaluator's own rules on hand-picked rows (NULL, NaN, -0.0, IN with NULL)."""
    from differential.expr import Cmp, InList, IsBool, Lit, Not, Ref

    d = Ref("d", "float")
    nan, zero = Lit(float("nan"), "double"), Lit(0.0, "double")
    assert evaluate(Cmp(d, "=", nan), {"d": float("nan")}) is True
    assert evaluate(Cmp(d, ">", Lit(float("inf"), "double")), {"d": float("nan")}) is True
    assert evaluate(Cmp(d, "=", zero), {"d": -0.0}) is True
    assert evaluate(Cmp(d, "<", zero), {"d": -0.0}) is False
    assert evaluate(Cmp(d, "=", zero), {"d": None}) is None
    assert evaluate(Cmp(d, "<=>", Lit(None, "null")), {"d": None}) is True
    i = Ref("i", "int")
    assert evaluate(InList(i, (Lit(1, "int"), Lit(None, "null"))), {"i": 2}) is None
    assert evaluate(InList(i, (Lit(1, "int"), Lit(None, "null")), negated=True), {"i": 1}) is False
    assert evaluate(Not(Cmp(i, "=", Lit(1, "int"))), {"i": None}) is None
    assert evaluate(IsBool(Cmp(i, "=", Lit(1, "int")), False, negated=True), {"i": None}) is True
    assert evaluate(Cmp(i, "<", Lit(decimal.Decimal("1.5"), "decimal")), {"i": 1}) is True


# -- minimal repros of the bugs this suite found (issue 12); each failed before its fix ------------
def test_regression_decimal_literal_precision(tmp_path: Path) -> None:
    value = decimal.Decimal("-1234567890123456789012345678.1234567890")
    table = create_table(str(tmp_path), "db.t", pa.schema([("x", pa.decimal128(38, 10))]),
                         options={"bucket": "-1"})
    write_arrow(table, pa.table({"x": pa.array([value], pa.decimal128(38, 10))}))
    got, _ = read_arrow(table, f"x >= {value}")
    assert got.column("x").to_pylist() == [value]


@pytest.mark.parametrize(("op", "literal"), [("<=", "-1234567890123456789012345678.1234567890"),
                                           ("=", "-1234567890123456789012345678.1234567890"),
                                           ("<", "-1234567890123456789012345678.1234567889")])
def test_regression_decimal38_min_stat_rounded(tmp_path: Path, op: str, literal: str) -> None:
    """Found by the differential matrix: a DECIMAL(38, 10) file statistic (and literal) became its
    unscaled key under Python's 28-digit default context, so the file's min rounded up to
    -1234567890123456789012345678 and ``x <= min`` pruned the file holding the row."""
    value = decimal.Decimal("-1234567890123456789012345678.1234567890")
    import paimon_index

    schema = pa.schema([("id", pa.int64()), ("x", pa.decimal128(38, 10))])
    table = paimon_index.create_table(str(tmp_path), "db.t", schema, options={"bucket": "-1"})
    xs = pa.array([value, decimal.Decimal("1.5")], pa.decimal128(38, 10))
    table.write(pa.table({"id": [1, 2], "x": xs}, schema=schema))
    got = table.read(f"x {op} {literal}")
    assert got.column("x").to_pylist() == [value]


def test_regression_int_literal_out_of_range(tmp_path: Path) -> None:
    table = create_table(str(tmp_path), "db.t", pa.schema([("x", pa.int16())]), options={"bucket": "-1"})
    write_arrow(table, pa.table({"x": pa.array([1, None], pa.int16())}))
    got, _ = read_arrow(table, "x <= 123456789")
    assert got.column("x").to_pylist() == [1]


def test_regression_decimal_literal_scale(tmp_path: Path) -> None:
    table = create_table(str(tmp_path), "db.t", pa.schema([("x", pa.decimal128(10, 2))]),
                         options={"bucket": "-1"})
    write_arrow(table, pa.table({"x": pa.array([decimal.Decimal("1.50")], pa.decimal128(10, 2))}))
    got, _ = read_arrow(table, "x < 1.501")
    assert got.num_rows == 1


@pytest.mark.parametrize(("where", "want"), [
    ("d > 1.0E0", [1.5, "nan"]),          # NaN is greater than every other value in Spark
    ("d = NaN", ["nan"]),                 # NaN = NaN is TRUE in Spark
    ("d >= -0.0E0", [0.0, 1.5, "nan"]),   # -0.0 = 0.0 (and NaN above)
])
def test_regression_nan_ordering(tmp_path: Path, where: str, want: list[object]) -> None:
    table = create_table(str(tmp_path), "db.t", pa.schema([("d", pa.float64())]), options={"bucket": "-1"})
    write_arrow(table, pa.table({"d": pa.array([0.0, 1.5, float("nan"), None, -1.0])}))
    got, _ = read_arrow(table, where)
    norm = sorted(("nan" if v != v else v for v in got.column("d").to_pylist()), key=str)
    assert norm == sorted(want, key=str)


def test_regression_int_literal_on_decimal(tmp_path: Path) -> None:
    table = create_table(str(tmp_path), "db.t", pa.schema([("x", pa.decimal128(10, 2))]),
                         options={"bucket": "-1"})
    values = [decimal.Decimal("1.50"), decimal.Decimal("26.20"), decimal.Decimal("40.00")]
    write_arrow(table, pa.table({"x": pa.array(values, pa.decimal128(10, 2))}))
    got, _ = read_arrow(table, "x <= 32")
    assert got.num_rows == 2
