"""The differential matrix (tests/differential/matrix.py) driven through a Spark Connect client.

tests/spark/test_differential_matrix.py crosses every table kind with every read path and state on
classic Spark; the Spark Connect suites ran each verb once on one append and one primary-key table.
This runs the same table sequences -- the verbs through ``paimon_index.spark.jobs``, the reads by
the planned read (driver's small read and Spark's Parquet reader), the ``paimon_index`` source,
``jobs.count`` and TopN -- with a Connect client session as ``spark``, against the same Python
model and Spark SQL over a Parquet copy of its rows (run by the same server). The CI variant runs
the primary-key fixed-bucket kind (where the small read's wrong answer of issue 20 hid) and the
partitioned append kind; ``slow`` runs the other five.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from differential.known_bugs import report_differences
from differential.matrix import KINDS, MatrixRun, states_for, states_of

pytestmark = [pytest.mark.spark, pytest.mark.connect]

SEED = 0
#: The read paths that go through the Spark session (and so through Connect here).
SPARK_PATHS = ("planned-small", "planned-parquet", "source", "count-spark", "topn-spark", "reference")
CI_KINDS = ("pk-fixed", "append-partitioned")


@pytest.mark.parametrize("kind", [pytest.param(k, marks=[] if k in CI_KINDS else [pytest.mark.slow])
                                  for k in KINDS])
def test_every_state_read_every_spark_way_over_connect(connect_spark: Any, tmp_path: Path, kind: str) -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(connect_spark, ConnectSession)
    run = MatrixRun(connect_spark, tmp_path, SEED)
    run.run_kind(KINDS[kind], states_of(kind))
    differences = [m for messages in run.differences.values() for m in messages]
    claimed = [m for messages in run.claimed.values() for m in messages]
    report_differences(f"{kind} over Spark Connect", differences, claimed)
    crashed = (kind, "mutation") in run.differences or (kind, "mutation") in run.claimed
    assert not crashed
    for path in SPARK_PATHS:
        if path == "planned-small" and KINDS[kind].merge_on_read:
            continue
        seen, wanted = run.states_read(kind, path), states_for(kind, path)
        assert seen == wanted, f"{path}: states not read over Connect: {wanted - seen}"
    if not KINDS[kind].merge_on_read:  # the driver's small read was taken at least once
        assert any(rows is not None for _, _, _, _, rows in run.small_reads), run.small_reads
