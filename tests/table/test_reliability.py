"""The table layer under real concurrency and real crashes (see tests/reliability/harness.py).

CI runs a bounded set (3 processes x a few operations per table kind, the distributed paths of
``reliability.ops`` among the single-process verbs; SIGKILL at every point of the commit path for
the cases of ``CRASH_CASES``, followed -- for writes through the Spark source -- by the writer's
abort as Spark calls it when a task or the commit's Python worker dies); ``-m slow`` runs longer
histories and the other crashes (``SLOW_CRASH_CASES``). tests/spark/test_pk_crash.py kills real
Spark jobs.
"""

from __future__ import annotations

import random
import time

import pytest

from javaoracle import java_oracle
from reliability import files, harness, ops

#: Worker number of the rows a test writes before the concurrent ones (ids stay unique).
SETUP_WORKER = 99

#: Kill points an operation does not pass (it writes no data file, or no deletion vector, or no
#: HASH index: only a dynamic-bucket upsert does).
NOT_ON_PATH = {"append": {"dv-file-written"}, "overwrite": {"dv-file-written"},
               "delete": {"data-file-written"}, "update": set(), "upsert": set(), "compact": set(),
               "dist_compact": {"hash-index-written"},
               "dist_append": {"dv-file-written", "hash-index-written"}}
#: Operations through the source's writer: Spark aborts them (``PaimonIndexWriter.abort``) when a
#: task or the commit's Python worker dies.
SOURCE_WRITES = {"dist_upsert": ("pk-fixed", "pk-partial"), "dist_append": ("append-unaware",)}


def _not_on_path(kind_name: str, op_name: str) -> set[str]:
    if op_name == "dist_upsert":
        return set() if kind_name == "pk-dynamic" else {"hash-index-written"}
    if op_name == "dist_overwrite":  # no vector (nothing older survives), no HASH index of ours
        return {"dv-file-written", "hash-index-written"}
    if op_name == "dist_compact" and kind_name.startswith("append"):
        return {"hash-index-written", "dv-file-written"}  # append compaction drops vectors, writes none
    return NOT_ON_PATH[op_name]


#: (table kind, operation, which of its kill points) CI crashes. "task-side": the points up to the
#: driver's commit (the rest of a distributed upsert's commit is commit_prepared, crashed at every
#: point by pk-fixed's dist_upsert).
CRASH_CASES = [
    *[("append-unaware", op, "all") for op in ("append", "delete", "overwrite", "compact", "dist_append")],
    *[("pk-fixed", op, "all") for op in ("dist_upsert", "dist_compact", "dist_overwrite")],
    ("pk-dynamic", "dist_upsert", "task-side"),
    ("pk-partial", "dist_upsert", "task-side"),
]
#: Crashes only ``-m slow`` runs.
SLOW_CRASH_CASES = [
    # CI's budget: the driver-side twins of CI's cases (their commit points are the same).
    ("append-unaware", "update", "all"),
    ("pk-fixed", "upsert", "all"),
    ("pk-fixed", "compact", "all"),
    ("append-unaware", "dist_compact", "all"),
    ("pk-dynamic", "dist_upsert", "all"),
    ("pk-dynamic", "dist_overwrite", "all"),
    ("pk-dynamic", "dist_compact", "all"),
    ("pk-dynamic", "upsert", "all"),
    ("pk-partial", "dist_upsert", "all"),
    ("pk-partial", "upsert", "all"),
    ("pk-partial", "dist_compact", "all"),
]
#: The points of "task-side" cases: where the tasks write, finish, and the driver's commit starts.
TASK_SIDE = {"data-file-written", "dv-file-written", *(p.name for p in harness.TASK_KILL_POINTS),
             "before-commit"}


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


#: Kinds whose concurrent histories only ``-m slow`` runs (CI's budget; fixed buckets and merge
#: engines are crashed at every commit point in CI all the same).
SLOW_CONCURRENT_KINDS = ("append-fixed", "pk-partial")


@pytest.mark.parametrize("kind_name", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW_CONCURRENT_KINDS
                                       else k for k in sorted(ops.KINDS)])
def test_concurrent_operations_replay_to_the_model(tmp_path, kind_name):
    warehouse, model, base = _setup(tmp_path, kind_name)
    entries = harness.run_concurrently(warehouse, kind_name, workers=3, ops_per_worker=6, seed=11,
                                       log_dir=tmp_path)
    history = harness.check_history(warehouse, entries, base=model, base_snapshot=base)
    assert history.by_snapshot, "no operation committed at all"
    _no_orphans_after_cleanup(warehouse, "no point (a concurrent history)")  # and nothing missing
    latest = history.models[max(history.models)]
    _java_agrees(warehouse, latest)
    _not_wedged(warehouse, kind_name, latest)


def _not_wedged(warehouse: str, kind_name: str, model: ops.Model) -> None:
    """The next operations commit on top (a distributed one where the kind has it)."""
    kind = ops.KINDS[kind_name]
    rng = random.Random(1)
    for counter, name in enumerate(("dist_upsert", "upsert") if kind.primary_key else ("append",)):
        op = ops.random_op(rng, kind, SETUP_WORKER, 100 + counter, (name,))
        if ops.run(warehouse, op) is not None:
            model = ops.apply_to_model(model, op)
        assert ops.read_rows(warehouse) == model, f"{name} after the concurrent history"


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
    history = harness.check_history(warehouse, entries, base=model, base_snapshot=base)
    _no_orphans_after_cleanup(warehouse, "no point (a concurrent history)")
    _not_wedged(warehouse, kind_name, history.models[max(history.models)] if history.models else model)


def _effective_op(op_name: str, model: ops.Model, rng: random.Random, kind: ops.TableKind,
                  counter: int) -> dict:
    """An operation of that kind that certainly changes the table (so it passes every point)."""
    if op_name in ("delete", "update"):
        cat = rng.choice(sorted({r[0] for r in model.values()}))
        op = {"op": op_name, "cat": cat, "below": 1_000_000}
        return {**op, "value": rng.randint(1000, 2000)} if op_name == "update" else op
    if op_name == "compact":
        return {"op": "compact", "full": True}
    op = ops.random_op(rng, kind, 1, counter, (op_name,))
    if op_name.startswith("dist_"):  # two tasks: killed after the first, the second's work undone
        op.update(tasks=2, full=True) if op_name == "dist_compact" else op.update(tasks=2)
    return op


def _crash_cases(cases: list[tuple[str, str, str]], *marks) -> list:
    return [pytest.param(k, o, scope, marks=marks, id=f"{k}-{o}-{scope}") for k, o, scope in cases]


@pytest.mark.parametrize("kind_name,op_name,scope",
                         _crash_cases(CRASH_CASES) + _crash_cases(SLOW_CRASH_CASES, pytest.mark.slow))
def test_sigkill_at_every_commit_point(tmp_path, kind_name, op_name, scope):
    """A job killed anywhere on the commit path -- a distributed one also after some or all of its
    tasks finished and before its driver commits -- leaves the table at the old or the new state,
    readable by our reader and pypaimon's, not wedged, and after remove_orphan_files exactly the
    files some snapshot references."""
    warehouse, model, _ = _setup(tmp_path, kind_name)
    kind = ops.KINDS[kind_name]
    rng = random.Random(5)
    killed_at = []
    between: list[str] = []  # kills that left a write landed and its compaction not
    points = harness.kill_points(op_name)
    if scope == "task-side":
        points = tuple(p for p in points if p.name in TASK_SIDE)
    spark_aborts = kind_name in SOURCE_WRITES.get(op_name, ())
    for counter, point in enumerate(points):
        op = _effective_op(op_name, model, rng, kind, counter)
        if spark_aborts:
            op["spill"] = str(tmp_path / f"parts-{counter}.pickle")
        before = harness.existing_snapshots(warehouse)[-1]
        killed = harness.crash_once(warehouse, op, point)
        if killed:
            killed_at.append(point.name)
        after = harness.existing_snapshots(warehouse)[-1]
        # One commit: one snapshot, or a primary-key write's APPEND and COMPACT (Java's two).
        assert after in (before, before + 1, before + 2), \
            f"{point.name}: snapshots jumped from {before} to {after}"
        expected = ops.apply_to_model(model, op) if after > before else model
        # Killed between the two: the write landed, but deletion-vectors readers (ours, pypaimon's,
        # Java's) see it once the next write or compaction folds its level-0 files.
        hidden = after > before and harness.pending(warehouse)
        visible = model if hidden else expected
        if hidden:
            between.append(point.name)
        _state_is(warehouse, visible, f"after a kill at {point.name}", op)
        if killed and ops.spark_abort(warehouse, op):
            # A task or the commit's worker died (not the driver): Spark aborts the write with the
            # finished tasks' messages -- whether or not the commit had landed.
            _state_is(warehouse, visible, f"after a kill at {point.name} and Spark's abort", op)
        _no_orphans_after_cleanup(warehouse, point.name)  # and none missing
        model = expected
        # Not wedged: the next operation of the same kind commits on top.
        follows = [(op_name,)]
        if op_name in ("compact", "dist_compact"):  # something to compact next time: new files, vectors
            follows = [("upsert",)] if kind.primary_key else [("append",), ("delete",)]
        for allowed in follows:
            for _ in range(4):  # an upsert may rewrite its bucket whole: then upsert again
                follow = ops.random_op(rng, kind, 2, counter, allowed)
                if ops.run(warehouse, follow) is not None:
                    model = ops.apply_to_model(model, follow)
                if allowed != ("upsert",) or _pk_compaction_work(warehouse):
                    break
        assert ops.read_rows(warehouse) == model
    # A deduplicate table's change of older rows commits in two; a merge engine's in one.
    if kind.primary_key and not ops.partial_update(kind) and op_name in ("upsert", "dist_upsert") \
            and scope == "all":
        assert "after-commit" in between, f"no kill between a write and its compaction: {between}"
    unreached = [p.name for p in points if p.name not in killed_at]
    assert set(unreached) <= _not_on_path(kind_name, op_name), f"{op_name} never reached {unreached}"
    _no_orphans_after_cleanup(warehouse, "the end")
    assert ops.read_rows(warehouse) == model
    assert ops.read_rows_pypaimon(warehouse) == model


def _pk_compaction_work(warehouse: str) -> bool:
    """Whether a full compaction of the primary-key table has something to rewrite."""
    from paimon_index.table.catalog import open_table
    from paimon_index.table.pk.plan import plan_snapshot

    table = open_table(warehouse, ops.IDENTIFIER)
    plan = plan_snapshot(table, table.snapshot_manager().get_latest_snapshot())
    return any(len(b.files) > 1 or b.dv_entries for b in plan.buckets.values())


def _state_is(warehouse: str, expected: ops.Model, when: str, op: dict) -> None:
    assert not files.missing(warehouse), f"{when}: a snapshot references files that are gone"
    rows = ops.read_rows(warehouse)
    assert rows == expected, harness._diff(when, expected, rows, op)
    assert ops.read_rows_pypaimon(warehouse) == expected, when


def _no_orphans_after_cleanup(warehouse: str, where: str) -> None:
    """remove_orphan_files leaves exactly the files some snapshot references (none missing)."""
    from paimon_index.table.catalog import open_table
    from paimon_index.table.maintenance import remove_orphan_files

    time.sleep(0.05)  # every file is now strictly older than the cutoff
    remove_orphan_files(open_table(warehouse, ops.IDENTIFIER), older_than=time.time())
    files.assert_exactly_referenced(warehouse, f"after a kill at {where} and remove_orphan_files")


def test_an_upsert_whose_snapshot_expires_while_it_runs_is_refused(tmp_path, monkeypatch):
    """The concurrency suite's failure: a primary-key DELETE read a deletion-vector file of the
    snapshot it planned on after an expiry had removed that snapshot, and raised a raw
    FileNotFoundError. Now: ConcurrentChangeError, and the table is as it was."""
    import pyarrow as pa

    import paimon_index
    from paimon_index.errors import ConcurrentChangeError
    from paimon_index.table.pk import upsert

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = paimon_index.create_table(str(tmp_path), "db.t", schema, primary_keys=["id"],
                                  options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.upsert(pa.table({"id": pa.array(range(10), pa.int64()), "v": ["a"] * 10}, schema=schema))
    t.upsert(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["b", "b"]}, schema=schema))
    before = sorted(t.read().to_pylist(), key=lambda r: r["id"])
    index_dir = tmp_path / "db.db" / "t" / "index"
    snapshots = tmp_path / "db.db" / "t" / "snapshot"
    latest = max(int(p.name.split("-")[1]) for p in snapshots.glob("snapshot-*"))
    restore = upsert.maintainer

    def expired_meanwhile(*args, **kwargs):
        for f in index_dir.iterdir():  # what an expiry of the planned snapshot deletes
            f.rename(tmp_path / f.name)
        (snapshots / f"snapshot-{latest}").rename(tmp_path / "snap")
        return restore(*args, **kwargs)

    monkeypatch.setattr(upsert, "maintainer", expired_meanwhile)
    with pytest.raises(ConcurrentChangeError, match="expired while it ran"):
        t.delete("id = 3")
    monkeypatch.undo()
    (tmp_path / "snap").rename(snapshots / f"snapshot-{latest}")
    for f in tmp_path.glob("index-*"):
        f.rename(index_dir / f.name)
    assert max(int(p.name.split("-")[1]) for p in snapshots.glob("snapshot-*")) == latest
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == before
