"""Differential matrix: every table kind × every read path × every state (tests/differential/matrix.py).

One table per kind (append unaware-bucket / fixed-bucket / partitioned, primary-key fixed-bucket /
dynamic-bucket / partitioned with deletion vectors, and partitioned without them -- merge-on-read,
Paimon's default; file indexes on all), driven through a sequence
of states (load, upserts with updates/new keys/deletes, DELETE/UPDATE, overwrite, compaction, a
schema change), read at each state by every path (``Table.read`` with and without indexes, the
planned Spark read -- driver-side small read and Spark's Parquet reader --, the ``paimon_index``
source, counts, min/max, TopN in Python and Spark, pypaimon's read, Java Paimon's read) for a few
WHEREs, against a Python model of the live rows. The matrix runs once per test run (a module
fixture); each test is one (kind, path) cell and reports that cell's differences across the states.

Before this suite, the differential tests crossed generated append tables with query shapes but
never a primary-key table with the small read, so an empty Arrow batch that ended Spark's local
relation (da54c16) went unseen.

The CI variant is one seed; ``slow`` reruns the matrix on more seeds with more WHEREs per state.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from differential.known_bugs import report_differences
from differential.matrix import APPEND_STATES, KINDS, PATHS, PK_STATES, MatrixRun, states_for, states_of
from javaoracle import java_oracle

pytestmark = pytest.mark.spark

CI_SEED = 0
#: The most data files a small read opens (paimon_index.spark.planned.SMALL_READ_FILES).
SMALL_READ_FILES = 8
SLOW_EXAMPLES = 3


#: Kinds the CI variant leaves to ``-m slow`` (CI's time budget; the slow variant runs all seven):
#: a fixed-bucket append table (fixed buckets: pk-fixed; bucket-key: the reliability and row-level
#: suites), the dynamic-bucket primary-key table (tests/table/test_pk_dynamic.py's model, the
#: reliability suite), the partitioned deletion-vectors one (partitions: append-partitioned and
#: pk-mor) and, since session 13 (CI's budget), pk-mor itself (merge-on-read: tests/spark/
#: test_pk_merge_on_read.py and tests/table/test_pk_merge_on_read.py against a model and Java).
SLOW_KINDS = ("append-fixed", "pk-dynamic", "pk-partitioned", "pk-mor")


def _slow_enabled(config: Any) -> bool:
    return bool(config.getoption("--run-slow") or "slow" in (config.option.markexpr or ""))


def run_matrix(spark: Any, root: Path, seed: int, wheres: int, spark_wheres: int,
               java: bool = True, kinds: tuple[str, ...] | None = None) -> MatrixRun:
    run = MatrixRun(spark, root, seed, wheres_per_state=wheres, spark_wheres_per_state=spark_wheres)
    for name, kind in KINDS.items():
        if kinds is None or name in kinds:
            run.run_kind(kind, states_of(name))
    if java:
        try:
            oracle = java_oracle()
        except pytest.skip.Exception as e:
            run.java_skipped = str(e)
        else:
            run.java_check(oracle)
    return run


@pytest.fixture(scope="module")
def matrix(spark: Any, tmp_path_factory: pytest.TempPathFactory,
           pytestconfig: pytest.Config) -> Iterator[MatrixRun]:
    started = time.perf_counter()
    kinds = None if _slow_enabled(pytestconfig) else tuple(k for k in KINDS if k not in SLOW_KINDS)
    run = run_matrix(spark, tmp_path_factory.mktemp("matrix"), CI_SEED, wheres=2, spark_wheres=1,
                     kinds=kinds)
    # The budget's evidence (pytest -s): seconds per path, and the cells that differ.
    print(f"\nmatrix: {time.perf_counter() - started:.0f} s; per path:",
          {k: round(v) for k, v in sorted(run.seconds.items(), key=lambda kv: -kv[1])})
    for (kind, path), messages in sorted(run.differences.items()):
        print(f"  differs: {kind} / {path}: {len(messages)}")
    yield run


CELLS = [pytest.param(kind, path, id=f"{kind}-{path}", marks=[pytest.mark.slow] if kind in SLOW_KINDS else [])
         for kind in KINDS for path in PATHS]


@pytest.mark.parametrize(("kind", "path"), CELLS)
def test_cell(matrix: MatrixRun, kind: str, path: str) -> None:
    if path == "java" and matrix.java_skipped:
        pytest.skip(matrix.java_skipped)
    if path == "pypaimon" and not KINDS[kind].pypaimon_reads:
        pytest.skip("pypaimon reads no 64-bit deletion vectors (this kind's); Java Paimon does")
    if path != "mutation":  # every state reached and read this way (a failed verb ends the sequence)
        seen, states = matrix.states_read(kind, path), states_for(kind, path)
        crashed = matrix.differences.get((kind, "mutation")) or matrix.claimed.get((kind, "mutation"))
        if not crashed:
            assert seen == states, f"states not read by {path}: {states - seen}"
    report_differences(f"{kind} / {path}", matrix.differences.get((kind, path), []),
                       matrix.claimed.get((kind, path), []))


def test_small_read_is_taken(matrix: MatrixRun) -> None:
    """The driver-side small read is what the default planned read ran wherever the plan was small
    (a few files, this few rows): the "planned-small" cells compare that path, not Spark's reader."""
    expected = [(k, s, files, rows) for k, s, files, fallback, rows in matrix.small_reads
                if 0 < files <= SMALL_READ_FILES and fallback is None]
    assert expected, "no planned read was small enough for the driver"
    missed = [(k, s, files) for k, s, files, rows in expected if rows is None]
    assert not missed, f"small read not taken: {missed}"
    kinds = {k for k, *_ in expected}
    run_kinds = {k for k, *_ in matrix.visited}
    # Those with a read plan (of the kinds this run ran).
    planned = {name for name, kind in KINDS.items() if not kind.merge_on_read and name in run_kinds}
    assert kinds == planned, f"kinds never read by the small read: {planned - kinds}"


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(1, 2**32 - 1))
def test_matrix_more_seeds(spark: Any, tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    """The fixed state sequences on other seeds (other rows, WHEREs, TopN and min/max columns)."""
    run = run_matrix(spark, tmp_path_factory.mktemp("matrix-slow"), seed, wheres=4, spark_wheres=2)
    failures = [m for ms in run.differences.values() for m in ms]
    assert not failures, f"seed {seed}\n" + "\n".join(failures)


#: States a drawn sequence picks from (after "load"); "evolved-*" only after "evolve", which comes once.
DRAWN_APPEND = ("delete", "update", "overwrite", "evolve", "evolved-update")
DRAWN_PK = ("upsert", "delete-update", "compact", "overwrite", "evolve", "evolved-compact")


def drawn_states(kind: str, data: Any) -> list[str]:
    choices = DRAWN_PK if KINDS[kind].primary_key else DRAWN_APPEND
    states, evolved = ["load"], False
    for _ in range(data.draw(st.integers(2, 6), label=f"{kind} steps")):
        allowed = [c for c in choices
                   if (c != "evolve" or not evolved) and (not c.startswith("evolved-") or evolved)]
        state = data.draw(st.sampled_from(allowed), label=f"{kind} state")
        evolved = evolved or state == "evolve"
        states.append(state)
        if state == "overwrite" and KINDS[kind].primary_key:
            states.append("after-overwrite")  # the known bug pk-overwrite-level0: no verb reads until then
    return states


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(1, 2**32 - 1), data=st.data())
def test_matrix_drawn_sequences(spark: Any, tmp_path_factory: pytest.TempPathFactory, seed: int,
                                data: Any) -> None:
    """Hypothesis-drawn state sequences per kind (verbs in other orders, repeated), every read path."""
    run = MatrixRun(spark, tmp_path_factory.mktemp("matrix-drawn"), seed, wheres_per_state=2,
                    spark_wheres_per_state=1)
    for name, kind in KINDS.items():
        run.run_kind(kind, drawn_states(name, data))
    failures = [m for ms in run.differences.values() for m in ms]
    assert not failures, f"seed {seed}\n" + "\n".join(failures)


def test_states_cover_every_verb() -> None:
    """The sequences visit what the matrix promises (a cheap guard against a state list shrinking)."""
    assert {"load", "delete", "update", "overwrite", "evolve"} <= set(APPEND_STATES)
    assert {"load", "upsert", "delete-update", "compact", "overwrite", "evolve"} <= set(PK_STATES)


# -- repros of the bugs this suite found and that were fixed --------------------------------------
def test_regression_pk_overwrite_is_readable(tmp_path: Path) -> None:
    """An overwrite of a deletion-vectors-mode primary-key table committed level-0 files, which no
    merge-free reader sees (ours refused to read, pypaimon and Java returned none of the rows); the
    last row of a key written twice in the batch wins, and a partitioned table keeps the partitions
    the batch does not hold (dynamic partition overwrite, Paimon's default)."""
    import pyarrow as pa

    import paimon_index

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int32())])
    table = paimon_index.create_table(str(tmp_path / "plain"), "db.t", schema, primary_keys=["id"],
                                      options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.upsert(pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([1, 2], pa.int32())}))
    table.write(pa.table({"id": pa.array([3, 4, 3], pa.int64()), "v": pa.array([3, 4, 5], pa.int32())}),
                mode="overwrite")
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == [{"id": 3, "v": 5}, {"id": 4, "v": 4}]
    builder = table.paimon_table.new_read_builder()  # pypaimon's own read sees the same rows
    assert sorted(builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist(),
                  key=lambda r: r["id"]) == [{"id": 3, "v": 5}, {"id": 4, "v": 4}]

    parted = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False),
                        ("v", pa.int32())])
    table = paimon_index.create_table(str(tmp_path / "parted"), "db.t", parted, primary_keys=["id", "p"],
                                      partition_keys=["p"],
                                      options={"bucket": "2", "deletion-vectors.enabled": "true"})
    table.upsert(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": pa.array([0, 1, 1], pa.int32()),
                           "v": pa.array([1, 2, 3], pa.int32())}))
    table.write(pa.table({"id": pa.array([9], pa.int64()), "p": pa.array([1], pa.int32()),
                          "v": pa.array([9], pa.int32())}), mode="overwrite")
    assert sorted((r["id"], r["p"], r["v"]) for r in table.read().to_pylist()) == [(1, 0, 1), (9, 1, 9)]
    table.upsert(pa.table({"id": pa.array([9], pa.int64()), "p": pa.array([1], pa.int32()),
                           "v": pa.array([10], pa.int32())}))  # the placed files take later upserts
    assert table.count() == 2 and table.read("id = 9").column("v").to_pylist() == [10]
