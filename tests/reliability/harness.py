"""Real concurrency and real crashes against one table, checked by replaying a model.

``run_concurrently`` starts N processes (spawn: each its own interpreter, no shared state) that
apply random operations to one table at once and log, per operation, what it reported: the
snapshot it committed, nothing, a refusal (``ConcurrentChangeError``) or any other error.
``check_history`` then proves from the log and the table alone:

* no two operations claim one snapshot, and every snapshot that exists was claimed by exactly one
  operation that reported success (nothing committed behind a reported failure) — an operation
  claims the snapshot it reported and every other one its commit user committed (a primary-key
  write commits Java's two, APPEND and COMPACT, after a COMPACT of level-0 files it folded first);
  a COMPACT of an operation that was then refused changes no row and needs no claim;
* replaying the successful operations in snapshot order through the model gives, for every snapshot
  still retained, exactly the rows the project's reader and pypaimon's reader return (no duplicate
  key, nothing lost, no partial operation) — at a snapshot that holds level-0 files (a write whose
  compaction has not landed) the write is not visible yet, as Java reads it;
* no error other than a refusal was reported.

``crash_once`` runs one operation in a child process that SIGKILLs itself at a chosen point of the
commit path (the N-th call of a named function, before or after it runs), the way a lost machine
ends a job. The points are named after pypaimon's and our own functions; they are the only place
this suite knows those names.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paimon_index.table.transaction import committing_as
from reliability import ops

#: What an operation reported.
COMMITTED, NOTHING, REFUSED, FAILED = "committed", "nothing", "refused", "failed"
#: The only error a concurrent operation may report.
REFUSAL_ERROR = "ConcurrentChangeError"


#: Modules every child process needs, imported once by the fork server its children fork from (a
#: spawned interpreter would import them again for every crash and every worker, seconds each).
PRELOAD = ["reliability.ops", "reliability.files", "paimon_index", "paimon_index.table.pk",
           "paimon_index.table.catalog", "paimon_index.spark._tasks", "paimon_index.spark.datasource",
           "pypaimon"]


def _context() -> Any:
    """Fork-server processes: each child its own process (no state shared with the test's), forked
    from a server that has only imported :data:`PRELOAD` (no threads, no open tables)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _worker(warehouse: str, kind_name: str, worker: int, seed: int, count: int, log: str,
            allowed: tuple[str, ...] | None) -> None:
    rng = random.Random(seed * 1000 + worker)
    kind = ops.KINDS[kind_name]
    with open(log, "a", encoding="utf-8") as out:
        for counter in range(count):
            op = ops.random_op(rng, kind, worker, counter, allowed)
            user = f"harness-{worker}-{counter}-{seed}"
            entry: dict[str, Any] = {"worker": worker, "counter": counter, "op": op, "user": user}
            first = (existing_snapshots(warehouse) or [0])[-1]
            try:
                with committing_as(user):
                    snapshot = ops.run(warehouse, op)
                entry.update(status=COMMITTED if snapshot is not None else NOTHING, snapshot=snapshot)
            except Exception as e:
                status = REFUSED if type(e).__name__ == REFUSAL_ERROR else FAILED
                entry.update(status=status, error=f"{type(e).__name__}: {e}",
                             trace="" if status == REFUSED else traceback.format_exc())
            # Listed whatever the operation reported: a refused one must have committed nothing but
            # a compaction. Each with its kind, read now (a concurrent expiry may remove it later).
            entry["also"] = committed_by(warehouse, user, first)
            out.write(json.dumps(entry) + "\n")
            out.flush()


def run_concurrently(warehouse: str, kind_name: str, *, workers: int, ops_per_worker: int, seed: int,
                     log_dir: Path, allowed: tuple[str, ...] | None = None,
                     timeout: float = 600) -> list[dict[str, Any]]:
    """Run the workers at once; returns every logged operation."""
    context = _context()
    logs = [str(log_dir / f"worker-{w}.jsonl") for w in range(workers)]
    procs = [context.Process(target=_worker, args=(warehouse, kind_name, w, seed, ops_per_worker, logs[w],
                                                    allowed)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
        if p.is_alive():
            p.kill()
            raise AssertionError(f"worker {p.name} did not finish in {timeout} s")
        assert p.exitcode == 0, f"worker {p.name} died with exit code {p.exitcode}"
    entries = []
    for log in logs:
        with open(log, encoding="utf-8") as f:
            entries += [json.loads(line) for line in f]
    return entries


def committed_by(warehouse: str, user: str, after: int) -> list[tuple[int, str]]:
    """The snapshots after ``after`` that ``user`` committed (those not expired yet): id and kind."""
    found = []
    for snapshot_id in existing_snapshots(warehouse):
        if snapshot_id <= after:
            continue
        snapshot = _snapshot_json(warehouse, snapshot_id)
        if snapshot.get("commitUser") == user:
            found.append((snapshot_id, str(snapshot.get("commitKind"))))
    return found


def _snapshot_json(warehouse: str, snapshot_id: int) -> dict[str, Any]:
    try:
        path = Path(warehouse) / "db.db" / "t" / "snapshot" / f"snapshot-{snapshot_id}"
        return json.loads(path.read_text())
    except FileNotFoundError:  # expired meanwhile
        return {}


def pending(warehouse: str, snapshot_id: int | None = None) -> bool:
    """Whether a primary-key table's snapshot (default the latest) holds level-0 files: a write
    whose compaction has not landed, which deletion-vectors readers do not see yet."""
    from paimon_index.table.catalog import open_table
    from paimon_index.table.paimon import latest_snapshot, snapshot_by_id
    from paimon_index.table.pk.plan import dv_mode, plan_snapshot

    table = open_table(warehouse, ops.IDENTIFIER)
    if not table.is_primary_key_table or not dv_mode(table):
        return False
    snapshot = latest_snapshot(table) if snapshot_id is None else snapshot_by_id(table, snapshot_id)
    return snapshot is not None and bool(plan_snapshot(table, snapshot, vectors=False).level0())


def existing_snapshots(warehouse: str) -> list[int]:
    """Ids of the snapshot files of the table (listed from its directory, not from a hint)."""
    directory = Path(warehouse) / "db.db" / "t" / "snapshot"
    return sorted(int(p.name.split("-", 1)[1]) for p in directory.glob("snapshot-*"))


@dataclass
class History:
    entries: list[dict[str, Any]]
    by_snapshot: dict[int, dict[str, Any]]
    models: dict[int, ops.Model]  # snapshot id -> the model's rows after it


def check_history(warehouse: str, entries: list[dict[str, Any]], *, base: ops.Model | None = None,
                  base_snapshot: int = 0, read_pypaimon: bool = True) -> History:
    failures = [e for e in entries if e["status"] == FAILED]
    assert not failures, "operations failed with errors other than a refusal:\n" + \
        "\n".join(f"{e['op']['op']}: {e['error']}\n{e['trace']}" for e in failures[:3])
    by_snapshot: dict[int, dict[str, Any]] = {}  # the snapshot an operation reported: its effect
    part_of: dict[int, dict[str, Any]] = {}  # the other snapshots its commit user committed
    for e in entries:
        if e["status"] != COMMITTED:
            continue
        s = e["snapshot"]
        assert s not in by_snapshot and s not in part_of, \
            f"two operations claim snapshot {s}: {(by_snapshot.get(s) or part_of[s])['op']} and {e['op']}"
        by_snapshot[s] = e
    for e in entries:
        for s, kind in e.get("also", ()):
            if s in by_snapshot and by_snapshot[s] is e:
                continue
            # An operation that reported a refusal may leave a compaction it committed first (the
            # folding of level-0 files before a change), never a change of rows.
            assert e["status"] == COMMITTED or kind == "COMPACT", \
                f"snapshot {s} ({kind}) was committed by {e['op']}, which reported {e['status']}: " \
                f"{e.get('error')}"
            assert s not in by_snapshot and s not in part_of, f"two operations claim snapshot {s}"
            part_of[s] = e
    on_disk = existing_snapshots(warehouse)
    latest = max([base_snapshot, *on_disk, *by_snapshot])
    # A snapshot expired before its committer listed it cannot be attributed (its file is gone);
    # a change of rows in it that no operation reported still shows in the reads below.
    unclaimed = [s for s in on_disk if s > base_snapshot and s not in by_snapshot and s not in part_of]
    assert not unclaimed, f"snapshots {unclaimed} were committed by no operation that reported success"
    models: dict[int, ops.Model] = {}
    model = dict(base or {})
    for s in range(base_snapshot + 1, latest + 1):
        if s in by_snapshot:
            model = ops.apply_to_model(model, by_snapshot[s]["op"])
        models[s] = model
    for s in on_disk:
        if s <= base_snapshot:
            continue
        # A write whose compaction has not landed is not visible at its own APPEND snapshot.
        hidden = s in by_snapshot and pending(warehouse, s)
        want = models.get(s - 1, dict(base or {})) if hidden else models[s]
        op = (by_snapshot.get(s) or part_of[s])["op"]
        ours = ops.read_rows(warehouse, s)
        assert ours == want, _diff(f"snapshot {s} (ours)", want, ours, op)
        if read_pypaimon:
            theirs = ops.read_rows_pypaimon(warehouse, s)
            assert theirs == want, _diff(f"snapshot {s} (pypaimon)", want, theirs, op)
    return History(entries, by_snapshot, models)


def _diff(label: str, want: ops.Model, got: ops.Model, op: Mapping[str, Any]) -> str:
    missing = sorted(set(want) - set(got))[:8]
    extra = sorted(set(got) - set(want))[:8]
    changed = sorted(k for k in set(want) & set(got) if want[k] != got[k])[:8]
    return (f"{label} differs from the model after {op['op']}: missing ids {missing}, "
            f"unexpected ids {extra}, changed {[(k, want[k], got[k]) for k in changed]}")


# --------------------------------------------------------------------------------------------------
# crashes
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KillPoint:
    """SIGKILL at the ``nth`` call of ``target`` (``module:Class.method``), before or after it runs."""

    name: str
    target: str
    when: str = "before"  # or "after"
    nth: int = 1
    path_contains: str | None = None  # only count calls whose first str argument contains this


#: Points along the commit path, in the order an operation passes them.
KILL_POINTS = (
    KillPoint("data-file-written", "pypaimon.filesystem.local_file_io:LocalFileIO.write_parquet", "after"),
    KillPoint("dv-file-written", "paimon_index.deletionvectors.maintainer:DeletionVectorCommit.write_to",
              "after"),
    KillPoint("before-commit", "pypaimon.write.file_store_commit:FileStoreCommit._try_commit", "before"),
    KillPoint("manifest-list-written",
              "pypaimon.manifest.manifest_list_manager:ManifestListManager.write", "after", nth=2),
    KillPoint("before-snapshot-file", "paimon_index.table.paimon:ExclusiveSnapshotCommit._publish",
              "before"),
    KillPoint("snapshot-file-written",
              "paimon_index.table.paimon:ExclusiveSnapshotCommit._write_latest_hint", "before"),
    KillPoint("after-commit", "pypaimon.write.file_store_commit:FileStoreCommit._try_commit", "after"),
)


#: Points only the distributed paths pass (:mod:`reliability.ops` runs their tasks one by one): a
#: task's HASH index file written (dynamic bucket), the first task done (its files written, the
#: others' not), every task done and the driver not yet committing.
TASK_KILL_POINTS = (
    KillPoint("hash-index-written", "paimon_index.table.pk.dynamic:_write_hash_file", "after"),
    KillPoint("first-task-finished", "reliability.ops:_task_finished", "after"),
    KillPoint("tasks-finished-driver-next", "reliability.ops:_tasks_finished", "after"),
)


def kill_points(op_name: str) -> tuple[KillPoint, ...]:
    """The points ``op_name`` passes, in order: a distributed operation's task points come after
    its tasks wrote data and vectors and before the driver's commit."""
    if not op_name.startswith("dist_"):
        return KILL_POINTS
    return (*KILL_POINTS[:2], *TASK_KILL_POINTS, *KILL_POINTS[2:])


def _resolve(target: str) -> tuple[Any, str]:
    import importlib

    module_name, attr = target.split(":")
    owner: Any = importlib.import_module(module_name)
    parts = attr.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    return owner, parts[-1]


def _install(point: KillPoint, marker: str | None = None) -> None:
    """Patch ``point.target`` in this process; ``marker``: a file created just before the kill
    (for processes whose death the test does not see: Spark's Python workers)."""
    owner, name = _resolve(point.target)
    original = getattr(owner, name)
    calls = {"n": 0}

    def die() -> None:
        if marker:
            Path(marker).write_text(f"{point.name} {os.getpid()}\n")
        os.kill(os.getpid(), signal.SIGKILL)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counted = point.path_contains is None or any(
            isinstance(a, str) and point.path_contains in a for a in args)
        if counted:
            calls["n"] += 1
        hit = counted and calls["n"] == point.nth
        if hit and point.when == "before":
            die()
        result = original(*args, **kwargs)
        if hit and point.when == "after":
            die()
        return result

    setattr(owner, name, wrapper)


def _crash_child(warehouse: str, op: dict[str, Any], point: KillPoint) -> None:
    _install(point)
    ops.run(warehouse, op)


def crash_once(warehouse: str, op: dict[str, Any], point: KillPoint, timeout: float = 300) -> bool:
    """Run ``op`` in a child that kills itself at ``point``; True when it was killed there."""
    context = _context()
    proc = context.Process(target=_crash_child, args=(warehouse, op, point))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        raise AssertionError(f"{op['op']} did not finish in {timeout} s")
    return proc.exitcode == -signal.SIGKILL
