"""FLOAT/DOUBLE fields inside struct columns through the planned read.

pyarrow (pypaimon's writer) leaves NaN out of a column's min/max, and Spark 4 pushes filters on
struct fields into its Parquet reader (``spark.sql.optimizer.nestedPredicatePushdown.
supportedFileSources``), whose row-group filter would then drop NaN rows Spark's semantics keep
(NaN is above every number and equal to itself). The reference is Spark's filter over the same
data files with Parquet filter pushdown off (no row-group pruning).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_index.spark import jobs
from paimon_index.table.catalog import create_table
from paimon_index.table.scan import plan_read
from paimon_index.table.write import write_arrow

pytestmark = pytest.mark.spark

INNER = pa.struct([("f", pa.float32()), ("y", pa.int32())])
POINT = pa.struct([("d", pa.float64()), ("x", pa.int32()), ("in", INNER)])
SCHEMA = pa.schema([("id", pa.int64()), ("s", POINT), ("d", pa.float64())])
WHERES = ["s.d > 1", "s.d <=> CAST('NaN' AS DOUBLE)", "s.d = 'NaN' OR s.x = 2", "s.in.f > 5",
          "s IS NULL OR s.d IS NULL AND d > 1"]


def test_nan_inside_a_struct_is_never_pruned_by_parquet_statistics(spark: Any, tmp_path: Path) -> None:
    w = str(tmp_path)
    t = create_table(w, "db.n", SCHEMA, options={"bucket": "-1"})
    nan = float("nan")
    # one file per pair: the first file's statistics say 0.5..0.5 (pyarrow leaves NaN out)
    for k, (a, b) in enumerate([(nan, 0.5), (0.5, 0.25), (-0.0, 3.0)]):
        s = [{"d": a, "x": k, "in": {"f": a, "y": k}}, {"d": b, "x": k + 1, "in": {"f": b, "y": 0}},
             {"d": None, "x": k + 2, "in": None}, None]
        write_arrow(t, pa.table({"id": list(range(4 * k, 4 * k + 4)), "s": pa.array(s, POINT),
                                 "d": [a, b, 2.0, None]}, schema=SCHEMA))
    paths = [f.path for f in plan_read(t).files]
    conf, key = spark.conf, "spark.sql.parquet.filterPushdown"
    for where in WHERES:
        got = sorted(r["id"] for r in jobs.read(spark, "db.n", where, ["id"], warehouse=w).collect())
        conf.set(key, "false")
        try:
            want = sorted(r["id"] for r in spark.read.parquet(*paths).filter(where).select("id").collect())
        finally:
            conf.unset(key)
        assert got == want, where
    # the struct comes back as written: NULL structs stay NULL, NaN and -0.0 inside kept
    rows = {r["id"]: r["s"] for r in jobs.read(spark, "db.n", warehouse=w).collect()}
    assert rows[3] is None and rows[0]["d"] != rows[0]["d"] and str(rows[8]["in"]["f"]) == "-0.0"
    # only the float fields lose pushdown: an INT field of the same struct is still pushed
    def pushed(where: str) -> str:
        plan = jobs.read(spark, "db.n", where, warehouse=w)._jdf.queryExecution().executedPlan().toString()
        return plan[plan.index("PushedFilters"):].split("]")[0]

    assert "s.d" not in pushed("s.d > 1") and "s.x" in pushed("s.x = 1")
