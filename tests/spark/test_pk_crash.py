"""A real Spark driver SIGKILLed on the commit path of ``jobs.upsert`` / ``jobs.compact``.

tests/table/test_reliability.py crashes the distributed primary-key paths run task by task without
Spark (``reliability.ops``); here the real job runs in a driver process of its own (``local[1]``:
the tasks run in Spark's Python workers, the commit on the driver) which kills itself at a chosen
point of its commit -- after every task wrote its files and before the commit, or after the new
snapshot file was written and before the hint. Then, as after the simulated crashes: the table is at
the old or the new state, readable by our reader and pypaimon's, not wedged (the next upsert
commits), and remove_orphan_files leaves exactly the files some snapshot references.

One JVM per crash (the driver dies with it), so those are slow; the writer's abort as Spark calls it
after a failed commit is also checked directly (no Spark session, fast).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reliability import files, harness, ops

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

#: The driver's commit points: every task has returned its files, nothing is committed yet; the
#: snapshot file is written, the LATEST hint is not.
DRIVER_POINTS = {
    "driver-before-commit": harness.KillPoint(
        "driver-before-commit", "paimon_index.table.transaction:Transaction.commit", "before"),
    "snapshot-file-written": next(p for p in harness.KILL_POINTS if p.name == "snapshot-file-written"),
    # In a task: its first data file written (the task dies; Spark fails the job and aborts it).
    "data-file-written": next(p for p in harness.KILL_POINTS if p.name == "data-file-written"),
}

#: The driver: start local[1], run the job (the kill point is installed at every Python process's
#: start by reliability/killhook/sitecustomize.py).
DRIVER = """
import json, sys
from reliability import ops
from paimon_index.spark import jobs
from paimon_index.spark.session import local_session

warehouse, job, op = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spark = local_session("pk-crash", master="local[1]")
if job == "upsert":
    rows = ops._rows(op, with_kind=True).to_pandas()
    df = spark.createDataFrame(rows, "id BIGINT, cat STRING, v BIGINT, _ROW_KIND STRING")
    jobs.upsert(spark, df, ops.IDENTIFIER, warehouse=warehouse, partitions=2)
elif job == "write":
    df = spark.createDataFrame(ops._rows(op).to_pandas(), "id BIGINT, cat STRING, v BIGINT").repartition(2)
    jobs.write(df, ops.IDENTIFIER, warehouse=warehouse)
else:
    jobs.compact(spark, ops.IDENTIFIER, full=True, warehouse=warehouse)
spark.stop()
"""


def _run_driver(tmp_path: Path, warehouse: str, job: str, op: dict,
                point: harness.KillPoint) -> tuple[int, str]:
    """The job in a driver process of its own whose Python processes die at ``point``: its exit
    code (-SIGKILL: the driver died; 1: a Python worker died and the job failed) and which process
    was killed ("" if none)."""
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    marker = tmp_path / "killed"
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "reliability" / "killhook"), str(ROOT / "src"),
                                          str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]),
           "PAIMON_INDEX_TEST_KILL_POINT": json.dumps(
               {"name": point.name, "target": point.target, "when": point.when, "nth": point.nth,
                "path_contains": point.path_contains}),
           "PAIMON_INDEX_TEST_KILL_MARKER": str(marker)}
    with open(tmp_path / "driver.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, str(script), warehouse, job, json.dumps(op)], stdout=log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=400)
        finally:
            # The driver's JVM and Python workers (its process group) go with it.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    killed = marker.read_text() if marker.exists() else ""
    return code, killed


def _setup(warehouse: str, kind: ops.TableKind) -> ops.Model:
    ops.create(warehouse, kind)
    rng = random.Random(3)
    model: ops.Model = {}
    for counter in range(3):
        op = ops.random_op(rng, kind, 99, counter, ("upsert",) if kind.primary_key else ("append",))
        assert ops.run(warehouse, op) is not None
        model = ops.apply_to_model(model, op)
    return model


#: (table kind, job, kill point, who dies): a fixed-bucket upsert (and any write through the source)
#: commits in a Python worker of Spark's -- killed, Spark calls the writer's abort; a dynamic-bucket
#: upsert and a compaction commit in the driver.
CASES = [
    ("pk-fixed", "upsert", "data-file-written", "task"),
    ("pk-fixed", "upsert", "driver-before-commit", "worker"),
    ("pk-fixed", "upsert", "snapshot-file-written", "worker"),
    ("pk-dynamic", "upsert", "driver-before-commit", "driver"),
    ("pk-fixed", "compact", "snapshot-file-written", "driver"),
    # Spark's abort after a commit that landed deleted the committed files (fixed: abort keeps them).
    ("append-unaware", "write", "snapshot-file-written", "worker"),
]


@pytest.mark.slow
@pytest.mark.parametrize("kind_name,job,point_name,who", CASES)
def test_job_killed_on_the_commit_path(tmp_path, kind_name, job, point_name, who):
    from paimon_index.table.catalog import open_table
    from paimon_index.table.maintenance import remove_orphan_files

    warehouse = str(tmp_path / "wh")
    kind = ops.KINDS[kind_name]
    model = _setup(warehouse, kind)
    rng = random.Random(11)
    op = {"upsert": lambda: ops.random_op(rng, kind, 1, 0, ("upsert",)),
          "write": lambda: ops.random_op(rng, kind, 1, 0, ("append",)),
          "compact": lambda: {"op": "compact", "full": True}}[job]()
    before = harness.existing_snapshots(warehouse)[-1]
    code, killed = _run_driver(tmp_path, warehouse, job, op, DRIVER_POINTS[point_name])
    log = (tmp_path / "driver.log").read_text()[-3000:]
    assert killed.startswith(point_name), f"nothing was killed at {point_name} (exit {code}):\n{log}"
    # The driver died (no abort), or a task's or the commit's worker did and the job failed after
    # Spark's abort.
    assert code == (-signal.SIGKILL if who == "driver" else 1), f"exit {code}:\n{log}"

    after = harness.existing_snapshots(warehouse)[-1]
    # One commit: one snapshot, or a primary-key change of older rows' APPEND and COMPACT (Java's two).
    assert after in (before, before + 1, before + 2), f"snapshots jumped from {before} to {after}"
    if who == "task":
        assert after == before, "a task died, yet a snapshot landed"
    elif point_name == "snapshot-file-written":
        assert after > before, "the snapshot file was written, yet the table is at the old state"
    else:
        assert after == before, "killed before the commit, yet a snapshot landed"
    expected = ops.apply_to_model(model, op) if after > before else model
    # Killed between the two: the change landed in level-0 files, which deletion-vectors readers
    # (ours, pypaimon's, Java's) see once the next write or compaction folds them (below).
    hidden = after > before and harness.pending(warehouse)
    visible = model if hidden else expected
    assert ops.read_rows(warehouse) == visible
    assert ops.read_rows_pypaimon(warehouse) == visible

    if who == "worker" and not hidden:
        # Spark's abort left no file behind either (a dead task's files it cannot know). Killed
        # between the two snapshots, the abort keeps every file of a commit that landed, the
        # compaction's too, as Java's writer leaves them: remove_orphan_files deletes those (below).
        files.assert_exactly_referenced(warehouse, "after Spark's abort")
    time.sleep(0.05)  # every file is now strictly older than the cutoff
    remove_orphan_files(open_table(warehouse, ops.IDENTIFIER), older_than=time.time())
    files.assert_exactly_referenced(warehouse, "after remove_orphan_files")

    # Not wedged: the next write (the same task code, without Spark) commits on top.
    follow = ops.random_op(rng, kind, 2, 1, ("dist_upsert",) if kind.primary_key else ("dist_append",))
    assert ops.run(warehouse, follow) is not None
    expected = ops.apply_to_model(expected, follow)
    assert ops.read_rows(warehouse) == expected
    assert ops.read_rows_pypaimon(warehouse) == expected


@pytest.mark.parametrize("kind_name", ["append-unaware", "pk-fixed"])
def test_abort_after_a_commit_that_landed_keeps_the_files(tmp_path, kind_name):
    """Spark calls the writer's abort when its commit raised -- which it may after its snapshot
    landed. The abort deleted the committed files before (append: the snapshot's data files gone);
    it keeps them now, and without a commit it deletes everything the tasks wrote (a
    bucket-exclusive upsert's prepared files were left behind before)."""
    from paimon_index.spark.datasource import PaimonIndexWriter
    from paimon_index.spark.options import BUCKET_EXCLUSIVE, PATH, WAREHOUSE, parse_write_options

    warehouse = str(tmp_path / "wh")
    kind = ops.KINDS[kind_name]
    model = _setup(warehouse, kind)
    options = {WAREHOUSE: warehouse, PATH: ops.IDENTIFIER}
    if kind.primary_key:
        options[BUCKET_EXCLUSIVE] = "true"
    writer = PaimonIndexWriter(parse_write_options(options))
    rng = random.Random(5)
    op = ops.random_op(rng, kind, 1, 0, ("upsert",) if kind.primary_key else ("append",))
    rows = ops._rows(op, with_kind=kind.primary_key)

    # No commit: the abort deletes every file the task wrote.
    writer.abort([writer.write(iter(rows.to_batches())), None])
    files.assert_exactly_referenced(warehouse, "after an abort without a commit")
    assert ops.read_rows(warehouse) == model

    # The commit landed, then Spark aborted: the files stay.
    message = writer.write(iter(rows.to_batches()))
    writer.commit([message])
    model = ops.apply_to_model(model, op)
    writer.abort([message])
    files.assert_exactly_referenced(warehouse, "after an abort of a commit that landed")
    assert ops.read_rows(warehouse) == model
    assert ops.read_rows_pypaimon(warehouse) == model
