"""The pipeline on a Spark standalone cluster of this machine equals local mode's.

A master and two workers (one core each) are started by the test as subprocesses and killed by
their process groups at the end (:mod:`standalone`). The cluster's driver runs in a subprocess
(``tests/spark/cluster_pipeline.py``): this pytest process already holds the local session every
Spark test shares, and a process has one SparkContext. The script builds its own session the way a
user does and calls ``configure(spark, python=...)``, which checks that the executors import
paimon-index. Compared with the same pipeline run here in local mode: every read's rows and scan
report (gathered through an accumulator: no shared directory), each job's snapshot id (one
snapshot per job) and rows affected. Then a slow write loses one worker (its process group
killed while tasks run): Spark reruns the tasks on the other and the write still commits exactly
one snapshot with every row.

Marked ``cluster`` and ``slow`` (11 minutes measured on 2 shared cores): ``pytest --run-slow -m cluster
tests/spark/test_cluster.py``; skipped when the cluster cannot start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.spark.cluster_pipeline import ROWS, run_pipeline
from tests.spark.standalone import ClusterUnavailable, Standalone

import paimon_index

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
#: paimon-index as this test imports it (the work tree, not an installed copy) and the tests package.
PYTHONPATH = os.pathsep.join([str(Path(paimon_index.__file__).parents[1]), str(REPO)])
DRIVER_TIMEOUT_S = 1200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    try:
        started = Standalone.start(tmp_path_factory.mktemp("standalone"), workers=2,
                                   env={"PYTHONPATH": PYTHONPATH})
    except (ClusterUnavailable, OSError) as e:
        pytest.skip(f"no standalone cluster here: {e}")
    yield started
    started.stop()


def test_pipeline_on_a_standalone_cluster_equals_local_mode(spark, cluster: Standalone,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "answers.json"
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-m", "tests.spark.cluster_pipeline", "--master", cluster.url,
         "--warehouse", str(tmp_path / "cluster"), "--out", str(out),
         "--kill-worker", str(cluster.workers[1].pid)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    answers = json.loads(out.read_text())

    local = json.loads(json.dumps(run_pipeline(spark, str(tmp_path / "local"))))  # tuples -> lists
    assert answers["pipeline"] == local
    steps = ("write", "delete", "update", "rewrite")
    assert [local[s]["snapshot"] for s in steps] == [1, 2, 3, 4]  # one snapshot per job
    # The load writes new keys (one APPEND); the upsert changes older rows, which commits Java's
    # APPEND of its level-0 files and then a COMPACT (docs/primary-key.md, one commit two snapshots).
    assert [local[s]["snapshot"] for s in ("pk_load", "pk_upsert")] == [1, 3]
    assert local["snapshots"] == [4, 3]
    assert local["reads"]["status = 'ORDERED'"]["files_skipped_by_index"] == 3  # reports did arrive

    killed = answers["killed_write"]
    assert killed["killed"], "the worker was not killed while tasks ran"
    assert (killed["snapshot"], killed["latest"], killed["rows"], killed["count"]) == (1, 1, ROWS, ROWS)
    print(f"configure(spark) with the executor check on a fresh cluster application: "
          f"{answers['configure_s']:.2f} s; the check again: {answers['check_warm_s']:.2f} s")
