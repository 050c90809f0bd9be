"""The table layer under real concurrency and real crashes (see tests/reliability/harness.py).

CI runs a bounded set (3 processes x a few operations per table kind; SIGKILL at every point of the
commit path for every operation on two table kinds); ``-m slow`` runs longer histories.
"""

from __future__ import annotations

import random
import time

import pytest

from javaoracle import java_oracle
from reliability import files, harness, ops

#: Worker number of the rows a test writes before the concurrent ones (ids stay unique).
SETUP_WORKER = 99

#: Kill points an operation does not pass (it writes no data file, or no deletion vector).
NOT_ON_PATH = {"append": {"dv-file-written"}, "overwrite": {"dv-file-written"},
               "delete": {"data-file-written"}, "update": set(), "upsert": set(), "compact": set()}

CRASH_OPS = {
    "append-unaware": ("append", "delete", "update", "overwrite", "compact"),
    "pk-fixed": ("upsert", "compact"),
}


def _setup(tmp_path, kind_name: str, seed: int = 7, steps: int = 4) -> tuple[str, ops.Model, int]:
    """A table with a few committed operations, applied one after another in this process."""
    warehouse = str(tmp_path / "wh")
    kind = ops.KINDS[kind_name]
    ops.create(warehouse, kind)
    rng = random.Random(seed)
    model: ops.Model = {}
    seeding = ("upsert",) if kind.primary_key else ("append",)
    for counter in range(steps):
        op = ops.random_op(rng, kind, SETUP_WORKER, counter, seeding)
        assert ops.run(warehouse, op) is not None
        model = ops.apply_to_model(model, op)
    return warehouse, model, harness.existing_snapshots(warehouse)[-1]


@pytest.mark.parametrize("kind_name", sorted(ops.KINDS))
def test_concurrent_operations_replay_to_the_model(tmp_path, kind_name):
    warehouse, model, base = _setup(tmp_path, kind_name)
    entries = harness.run_concurrently(warehouse, kind_name, workers=3, ops_per_worker=6, seed=11,
                                       log_dir=tmp_path)
    history = harness.check_history(warehouse, entries, base=model, base_snapshot=base)
    assert history.by_snapshot, "no operation committed at all"
    assert not files.missing(warehouse), "a snapshot references files that are gone"
    _java_agrees(warehouse, history.models[max(history.models)])


def _java_agrees(warehouse: str, model: ops.Model) -> None:
    """Apache Paimon's Java reader sees the model's rows, whole and filtered by an indexed column."""
    oracle = java_oracle()
    where = "cat = 'c1'"
    whole, filtered = oracle.batch([
        {"cmd": "read", "warehouse": warehouse, "table": ops.IDENTIFIER, "rows": "true"},
        {"cmd": "read", "warehouse": warehouse, "table": ops.IDENTIFIER, "where": where, "rows": "true"}])
    assert _java_model(whole) == model
    assert _java_model(filtered) == {k: r for k, r in model.items() if r[0] == "c1"}


def _java_model(answer: dict) -> ops.Model:
    values = answer.get("row_values", [])
    model = {row[0]: (row[1], row[2]) for row in values}
    assert len(model) == len(values), "Java read a key twice"
    return model


@pytest.mark.slow
@pytest.mark.parametrize("kind_name", sorted(ops.KINDS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_long_concurrent_histories(tmp_path, kind_name, seed):
    warehouse, model, base = _setup(tmp_path, kind_name, seed=seed)
    entries = harness.run_concurrently(warehouse, kind_name, workers=4, ops_per_worker=20, seed=seed,
                                       log_dir=tmp_path)
    harness.check_history(warehouse, entries, base=model, base_snapshot=base)
    assert not files.missing(warehouse)


def _effective_op(op_name: str, model: ops.Model, rng: random.Random, kind: ops.TableKind,
                  counter: int) -> dict:
    """An operation of that kind that certainly changes the table (so it passes every point)."""
    if op_name in ("delete", "update"):
        cat = rng.choice(sorted({r[0] for r in model.values()}))
        op = {"op": op_name, "cat": cat, "below": 1_000_000}
        return {**op, "value": rng.randint(1000, 2000)} if op_name == "update" else op
    if op_name == "compact":
        return {"op": "compact", "full": True}
    return ops.random_op(rng, kind, 1, counter, (op_name,))


@pytest.mark.parametrize("kind_name,op_name", [(k, o) for k, names in CRASH_OPS.items() for o in names])
def test_sigkill_at_every_commit_point(tmp_path, kind_name, op_name):
    """A job killed anywhere on the commit path leaves the table at the old or the new state,
    readable, not wedged, and — after remove_orphan_files — without a file no snapshot needs."""
    from paimon_index.table.catalog import open_table
    from paimon_index.table.maintenance import remove_orphan_files

    warehouse, model, _ = _setup(tmp_path, kind_name)
    kind = ops.KINDS[kind_name]
    rng = random.Random(5)
    killed_at = []
    for counter, point in enumerate(harness.KILL_POINTS):
        op = _effective_op(op_name, model, rng, kind, counter)
        before = harness.existing_snapshots(warehouse)[-1]
        if harness.crash_once(warehouse, op, point):
            killed_at.append(point.name)
        after = harness.existing_snapshots(warehouse)[-1]
        assert after in (before, before + 1), f"{point.name}: snapshots jumped from {before} to {after}"
        rows = ops.read_rows(warehouse)
        expected = ops.apply_to_model(model, op) if after == before + 1 else model
        assert rows == expected, harness._diff(f"after a kill at {point.name}", expected, rows, op)
        assert ops.read_rows_pypaimon(warehouse) == expected
        assert not files.missing(warehouse), f"{point.name}: a snapshot references files that are gone"
        model = expected
        # Not wedged: the next operation of the same kind commits on top.
        follows = [(op_name,)]
        if op_name == "compact":  # something to compact next time: new files, new vectors
            follows = [("upsert",)] if kind.primary_key else [("append",), ("delete",)]
        for allowed in follows:
            follow = ops.random_op(rng, kind, 2, counter, allowed)
            if ops.run(warehouse, follow) is not None:
                model = ops.apply_to_model(model, follow)
        assert ops.read_rows(warehouse) == model
    unreached = [p.name for p in harness.KILL_POINTS if p.name not in killed_at]
    assert set(unreached) <= NOT_ON_PATH[op_name], f"{op_name} never reached {unreached}"
    time.sleep(0.05)  # every file is now strictly older than the cutoff
    remove_orphan_files(open_table(warehouse, ops.IDENTIFIER), older_than=time.time())
    assert not files.orphans(warehouse), f"orphans left: {sorted(files.orphans(warehouse))[:5]}"
    assert ops.read_rows(warehouse) == model
    assert ops.read_rows_pypaimon(warehouse) == model
