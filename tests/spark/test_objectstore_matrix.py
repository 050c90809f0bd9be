"""The differential matrix (tests/differential/matrix.py) on an S3 warehouse.

tests/spark/test_objectstore_spark.py runs one pipeline on S3 and on a local directory and compares
the two; this drives the matrix's table sequences -- every verb through the table and
``paimon_index.spark.jobs``, every state read by the Python read, the planned Spark read (driver's
small read and Spark's reader), the ``paimon_index`` source, counts, min/max, TopN and pypaimon's
own read -- with the warehouse in a bucket of the local S3-compatible server
(``tests/objectstore``), against the matrix's Python model (Java's read is left to the local
matrix: the oracle reads local warehouses). Marked ``slow`` (each request is an HTTP round trip to
the server): ``pytest --run-slow tests/spark/test_objectstore_matrix.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from differential.known_bugs import report_differences
from differential.matrix import KINDS, PATHS, MatrixRun, states_for, states_of
from objectstore.conftest import S3Warehouse, s3, s3_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SEED = 0
KINDS_ON_S3 = ("append-partitioned", "pk-fixed", "pk-dynamic", "pk-mor")


@pytest.mark.parametrize("kind", KINDS_ON_S3)
def test_every_state_read_every_way_on_s3(spark: Any, s3: S3Warehouse, tmp_path: Path,  # noqa: F811
                                          monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.chdir(tmp_path)  # a path mistaken for local would land here, and be seen below
    run = MatrixRun(spark, tmp_path, SEED, warehouse_root=f"{s3.warehouse}/matrix",
                    catalog_options=dict(s3.catalog_options))
    run.run_kind(KINDS[kind], states_of(kind))
    differences = [m for messages in run.differences.values() for m in messages]
    claimed = [m for messages in run.claimed.values() for m in messages]
    report_differences(f"{kind} on S3", differences, claimed)
    assert (kind, "mutation") not in run.differences
    for path in PATHS:
        if path in ("java", "mutation") or (path == "pypaimon" and not KINDS[kind].pypaimon_reads) \
                or (path == "planned-small" and KINDS[kind].merge_on_read):
            continue
        seen, wanted = run.states_read(kind, path), states_for(kind, path)
        assert seen == wanted, f"{path}: states not read on S3: {wanted - seen}"
    assert s3.objects(f"wh/matrix/{kind}/"), "the table is not in the bucket"
    assert not any(p.name != "parquet" for p in tmp_path.iterdir()), list(tmp_path.iterdir())
