"""Index-only aggregates (``Table.count``, ``Table.min_max``) against plain references.

References: the live rows filtered by a plain Python model (or by the Spark-checked reference
evaluator of the differential suite), and the same verbs with indexes off. Each test also pins what
was answered without reading data, so a fallback that quietly reads everything fails too.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import paimon_index
from differential.expr import PYTHON, evaluate
from differential.generate import COLUMNS, Materialized, generate_table, materialize, tables
from differential.known_bugs import Case, crash_detail, file_difference, report_differences
from differential.queries import generate_where
from paimon_index.errors import InvalidOptionError, InvalidPredicateError
from paimon_index.table.aggregate import count_rows, min_max
from table.test_evolution import evolved, model_rows, pypaimon_rows, scenarios  # noqa: F401 - fixture

Row = dict[str, Any]
FILES = 3
ROWS_PER_FILE = 400

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("k", pa.int32()), ("b", pa.int64()),
                    ("x", pa.float64()), ("dec", pa.decimal128(10, 2)), ("day", pa.date32()),
                    ("u", pa.int32())])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "s",
           "file-index.range-bitmap.columns": "k,x,dec,day", "file-index.bsi.columns": "b",
           "file-index.bloom-filter.columns": "id"}


def _batch(rng: np.random.Generator, start: int) -> pa.Table:
    n = ROWS_PER_FILE
    x = rng.choice([0.0, -0.0, 1.5, -2.5, math.nan, math.inf, 7.25], n)
    return pa.table({
        "id": pa.array(np.arange(start, start + n)),
        "s": pa.array(rng.choice(["a", "b", "c", "日本"], n), mask=rng.random(n) < 0.2),
        "k": pa.array(rng.integers(-5, 50, n).astype(np.int32), mask=rng.random(n) < 0.1),
        "b": pa.array(rng.integers(-1000, 1000, n), mask=rng.random(n) < 0.1),
        "x": pa.array(x, mask=rng.random(n) < 0.1),
        "dec": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-9999, 9999, n)],
                        pa.decimal128(10, 2)),
        "day": pa.array([dt.date(1969, 12, 1) + dt.timedelta(days=int(v)) for v in rng.integers(0, 90, n)]),
        "u": pa.array(rng.integers(0, 10, n).astype(np.int32)),
    }, schema=SCHEMA)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> paimon_index.Table:
    rng = np.random.default_rng(7)
    t = paimon_index.create_table(str(tmp_path_factory.mktemp("agg")), "db.t", SCHEMA, options=OPTIONS)
    for f in range(FILES):
        t.write(_batch(rng, f * ROWS_PER_FILE))
    fifth = ", ".join(str(i) for i in range(0, FILES * ROWS_PER_FILE, 5))
    t.delete(f"id IN ({fifth})")  # deletion vectors on every file
    return t


def _live(t: paimon_index.Table) -> list[Row]:
    return t.read(use_index=False).to_pylist()


def _spark_key(v: Any) -> tuple[int, Any]:
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


def model_min_max(values: list[Any]) -> tuple[Any, Any]:
    """Spark's min/max: NULLs skipped, NaN above every number, None without a value."""
    present = [v for v in values if v is not None]
    if not present:
        return None, None
    return min(present, key=_spark_key), max(present, key=_spark_key)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b  # -0.0 == 0.0, as Spark compares them


# -- count --------------------------------------------------------------------------------------
def test_count_without_predicate_reads_no_data(table: paimon_index.Table) -> None:
    live = len(_live(table))
    assert live < FILES * ROWS_PER_FILE  # the vectors removed rows
    assert table.count() == live
    report = table.last_aggregate_report
    assert report is not None
    assert report.files_answered_by_index == FILES and report.files_read == 0
    assert report.scan.data_bytes_read == 0 and report.scan.rows_read == 0


INDEXED: list[tuple[str, Callable[[Row], bool]]] = [
    ("s = 'a'", lambda r: r["s"] == "a"),
    ("s IN ('b', '日本')", lambda r: r["s"] in ("b", "日本")),
    ("s <> 'a'", lambda r: r["s"] is not None and r["s"] != "a"),  # bitmap <>: NULL rows taken out
    ("s NOT IN ('a', 'c')", lambda r: r["s"] is not None and r["s"] not in ("a", "c")),
    ("s IS NULL", lambda r: r["s"] is None),
    ("k > 10 AND k <= 30", lambda r: r["k"] is not None and 10 < r["k"] <= 30),
    ("k <> 3 OR s = 'c'", lambda r: (r["k"] is not None and r["k"] != 3) or r["s"] == "c"),
    ("b BETWEEN -10 AND 500", lambda r: r["b"] is not None and -10 <= r["b"] <= 500),
    ("b < 0", lambda r: r["b"] is not None and r["b"] < 0),
    ("x = 0", lambda r: r["x"] == 0),  # both zeros
    ("x > 0", lambda r: r["x"] is not None and (math.isnan(r["x"]) or r["x"] > 0)),  # NaN is greatest
    ("x < 0", lambda r: r["x"] is not None and not math.isnan(r["x"]) and r["x"] < 0),
    ("x <> 1.5", lambda r: r["x"] is not None and r["x"] != 1.5),
    ("dec >= 12.5", lambda r: r["dec"] >= decimal.Decimal("12.5")),
    ("day < DATE '1970-01-01'", lambda r: r["day"] < dt.date(1970, 1, 1)),
    ("k IS NOT NULL AND s = 'b'", lambda r: r["k"] is not None and r["s"] == "b"),
]


@pytest.mark.parametrize(("where", "model"), INDEXED, ids=[w for w, _ in INDEXED])
def test_indexed_count_is_answered_by_the_index(table: paimon_index.Table, where: str,
                                                model: Callable[[Row], bool]) -> None:
    want = sum(1 for r in _live(table) if model(r))
    assert table.count(where) == want
    report = table.last_aggregate_report
    assert report is not None and report.files_read == 0 and report.scan.data_bytes_read == 0
    assert table.count(where, use_index=False) == want


@pytest.mark.parametrize(("where", "model"), [
    ("u = 3", lambda r: r["u"] == 3),                                    # no index: read u
    ("id >= 700", lambda r: r["id"] >= 700),                             # Bloom filter: never exact
    ("s = 'a' AND u < 5", lambda r: r["s"] == "a" and r["u"] < 5),       # exact AND unindexed
    ("s LIKE 'a%'", lambda r: r["s"] is not None and r["s"].startswith("a")),
    ("k IN (1, NULL)", lambda r: r["k"] == 1),                           # NULL literal: never exact
])
def test_count_reads_what_the_index_cannot_answer(table: paimon_index.Table, where: str,
                                                  model: Callable[[Row], bool]) -> None:
    want = sum(1 for r in _live(table) if model(r))
    assert table.count(where) == want
    report = table.last_aggregate_report
    assert report is not None and report.files_read + report.files_answered_by_index == report.files_planned
    assert report.files_read > 0


def test_count_of_an_empty_table_and_bad_input(tmp_path: Path) -> None:
    t = paimon_index.create_table(str(tmp_path), "db.e", SCHEMA, options=OPTIONS)
    assert t.count() == 0 and t.count("k = 1") == 0
    assert t.min_max("k") == (None, None)
    with pytest.raises(InvalidOptionError, match="'nope'"):
        t.min_max("nope")
    t.write(_batch(np.random.default_rng(1), 0))
    with pytest.raises(InvalidPredicateError, match="kk"):
        t.count("kk = 1")
    with pytest.raises(InvalidOptionError, match="'nope'"):
        t.min_max("nope")


# -- min / max ------------------------------------------------------------------------------------
MIN_MAX = [("k", None), ("x", None), ("dec", None), ("day", None), ("s", None), ("u", None),
           ("k", "s = 'a'"), ("x", "k > 40"), ("x", "x < 1"), ("dec", "u = 2"), ("day", "s IS NULL"),
           ("b", "b <> 0"), ("x", "x IS NULL"), ("k", "k = 1000")]


@pytest.mark.parametrize(("column", "where"), MIN_MAX, ids=[f"{c}:{w}" for c, w in MIN_MAX])
def test_min_max_equals_the_model(table: paimon_index.Table, column: str, where: str | None) -> None:
    rows = table.read(where, use_index=False).column(column).to_pylist()
    want = model_min_max(rows)
    for use_index in (True, False):
        got = table.min_max(column, where, use_index=use_index)
        assert same(got[0], want[0]) and same(got[1], want[1]), (use_index, got, want)


def test_min_max_from_the_range_bitmap_reads_little(tmp_path: Path) -> None:
    """No predicate, no deleted row: the header answers; with deleted rows, TopN finds the rows."""
    t = paimon_index.create_table(str(tmp_path), "db.m", SCHEMA, options=OPTIONS)
    rng = np.random.default_rng(3)
    for f in range(2):
        t.write(_batch(rng, f * ROWS_PER_FILE))
    lo, hi = t.min_max("k")
    report = t.last_aggregate_report
    assert report is not None and report.files_answered_by_index == 2 and report.scan.data_bytes_read == 0
    assert t.min_max("x")[1] != t.min_max("x")[1]  # NaN is the largest DOUBLE
    # Delete the smallest and largest k: the answer moves, and only the two rows' groups are read.
    t.delete(f"k = {lo} OR k = {hi}")
    want = model_min_max(t.read(use_index=False).column("k").to_pylist())
    assert t.min_max("k") == want and want != (lo, hi)
    report = t.last_aggregate_report
    assert report is not None and report.files_read == 0 and report.scan.rows_read <= 4


def test_all_null_and_nan_only_columns(tmp_path: Path) -> None:
    schema = pa.schema([("k", pa.int32()), ("x", pa.float64())])
    t = paimon_index.create_table(str(tmp_path), "db.n", schema,
                                  options={"bucket": "-1", "file-index.range-bitmap.columns": "k,x"})
    t.write(pa.table({"k": pa.array([None, None], pa.int32()), "x": pa.array([math.nan, None])}))
    assert t.min_max("k") == (None, None)
    lo, hi = t.min_max("x")
    assert math.isnan(lo) and math.isnan(hi)
    assert t.count("x = 'NaN'") == 1 and t.count("k IS NULL") == 2


# -- schema evolution ---------------------------------------------------------------------------
def _evolution_cases() -> list[Any]:
    return [pytest.param(s.name, q, id=f"{s.name}: {q}") for s in scenarios() for q, _ in s.queries]


@pytest.mark.parametrize(("name", "query"), _evolution_cases())
def test_count_on_evolved_tables(evolved, name: str, query: str) -> None:  # noqa: F811 - fixture
    scenario = next(s for s in evolved[1] if s.name == name)
    test = dict(scenario.queries)[query]
    want = len(model_rows(scenario.table, test))
    assert count_rows(scenario.table, query)[0] == want
    column = query.split()[0]
    values = [r[column] for r in pypaimon_rows(scenario.table) if test(r)]
    assert min_max(scenario.table, column, query)[0] == model_min_max(values)


# -- differential: random tables and WHEREs against the reference evaluator -------------------------
CI_SEEDS = (3, 11, 12)
WHERES_PER_TABLE = 20
SLOW_EXAMPLES = 25
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
MIN_MAX_COLUMNS = ("i", "bi", "f", "d", "dec10", "s", "dt", "ts")


def check_aggregates(made: Materialized, rng: random.Random, count: int) -> tuple[list[str], list[str]]:
    """(unexplained differences, known-bug reasons) of count and min/max over random WHEREs."""
    table = made.open()
    rows = made.live.to_pylist()
    columns = [c for c in MIN_MAX_COLUMNS if c in made.live.schema.names]
    failures: list[str] = []
    claimed: list[str] = []
    for _ in range(count):
        where = generate_where(rng, made.spec, PYTHON)
        text = where.sql(PYTHON)
        matching = [r for r in rows if evaluate(where, r) is True]
        column = rng.choice(columns)
        want = (len(matching), model_min_max([r[column] for r in matching]))
        try:
            (lo, hi), _ = min_max(table, column, text)
            got = (count_rows(table, text)[0], (lo, hi))
            detail = None if got[0] == want[0] and same(lo, want[1][0]) and same(hi, want[1][1]) \
                else f"count/min/max of {column}: got {got}, want {want}"
        except Exception as e:
            detail = crash_detail(e)
        if detail is not None:
            file_difference(Case(made.spec, "python", (where,), detail=detail), f"WHERE {text}\n    {detail}",
                            failures, claimed)
    return failures, claimed


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_aggregates_match_the_reference(seed: int, tmp_path: Path) -> None:
    made = materialize(generate_table(random.Random(seed), f"seed{seed}"), tmp_path)
    failures, claimed = check_aggregates(made, random.Random(20_000 + seed), WHERES_PER_TABLE)
    report_differences(made.spec.describe(), failures, claimed)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=tables(), query_seed=tables())
def test_aggregates_match_the_reference_hypothesis(seed: int, query_seed: int) -> None:
    spec = generate_table(random.Random(seed), f"seed{seed}")
    with tempfile.TemporaryDirectory() as root:
        made = materialize(spec, Path(root))
        failures, _ = check_aggregates(made, random.Random(query_seed), WHERES_PER_TABLE)
        assert not failures, f"{spec.describe()}\n" + "\n".join(failures)


def test_generator_columns_cover_min_max() -> None:
    assert set(MIN_MAX_COLUMNS) <= {c.name for c in COLUMNS}


@pytest.mark.parametrize("lost", ["index", "vector"])
def test_a_missing_index_or_vector_file_is_a_table_error_naming_it(tmp_path: Path, lost: str) -> None:
    """count() and min_max() raised a raw FileNotFoundError for a listed ``.index`` or DV index
    file that is gone, where read() raised TableError for the same table."""
    from paimon_index.errors import TableError

    t = paimon_index.create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]),
                                  options={"bucket": "-1", "deletion-vectors.enabled": "true",
                                           "file-index.bitmap.columns": "s",
                                           "file-index.range-bitmap.columns": "id",
                                           "file-index.in-manifest-threshold": "16b"})
    t.write(pa.table({"id": np.arange(100, dtype=np.int64), "s": [f"s{i % 3}" for i in range(100)]}))
    t.delete("id < 10")
    gone = list(tmp_path.rglob("*.parquet.index")) if lost == "index" \
        else list((tmp_path / "db.db" / "t" / "index").glob("index-*"))  # the DV index files
    assert gone
    for p in gone:
        p.unlink()
    calls = {"count where": lambda: t.count("s = 's1'"), "min/max": lambda: t.min_max("id"),
             "min/max where": lambda: t.min_max("id", "s = 's2'"), "read": lambda: t.read("s = 's1'")}
    if lost == "vector":  # a count without WHERE needs the vectors, not the indexes
        calls["count"] = lambda: t.count()
    for name, call in calls.items():
        with pytest.raises(TableError, match="missing") as caught:
            call()
        assert any(p.name in str(caught.value) for p in gone), (name, str(caught.value))


@pytest.mark.parametrize("deletion_vectors", [True, False], ids=["dv", "merge-on-read"])
def test_primary_key_count_and_min_max_equal_a_model(tmp_path: Path, deletion_vectors: bool) -> None:
    """A primary-key table's count read every row on the driver; in deletion-vectors mode its files
    of levels >= 1 minus their vectors hold each key once, so they answer as an append table's
    (no data read without a predicate). Merge-on-read tables still read merged rows."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("k", pa.int32())])
    options = {"bucket": "2", "file-index.bitmap.columns": "s", "file-index.range-bitmap.columns": "k"}
    if deletion_vectors:
        options["deletion-vectors.enabled"] = "true"
    t = paimon_index.create_table(str(tmp_path), "db.pk", schema, primary_keys=["id"], options=options)
    rng = random.Random(11)
    model: dict[int, Row] = {}
    for _ in range(3):
        ids = rng.sample(range(600), 300)
        batch = [{"id": i, "s": rng.choice(["a", "b", None]), "k": rng.choice([None, *range(30)])}
                 for i in ids]
        t.upsert(pa.Table.from_pylist(batch, schema=schema))
        model.update({r["id"]: r for r in batch})
    t.delete("k < 5")
    model = {i: r for i, r in model.items() if not (r["k"] is not None and r["k"] < 5)}
    assert t.count() == len(model)
    report = t.last_aggregate_report
    if deletion_vectors:
        assert report is not None and report.files_read == 0 and report.scan.data_bytes_read == 0
    k = lambda r: -1 if r["k"] is None else r["k"]  # noqa: E731 - NULL fails every comparison here
    for where, test in [("s = 'a'", lambda r: r["s"] == "a"), ("k > 20", lambda r: k(r) > 20),
                        ("k BETWEEN 7 AND 9 OR s IS NULL", lambda r: r["s"] is None or 7 <= k(r) <= 9)]:
        rows = [r for r in model.values() if test(r)]
        assert t.count(where) == len(rows), where
        assert t.min_max("k", where) == model_min_max([r["k"] for r in rows]), where
    assert t.min_max("k") == model_min_max([r["k"] for r in model.values()])
