"""jobs.count and Table.min_max against Spark's own count/min/max over the same live rows (Parquet)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import paimon_index
from paimon_index.spark import jobs
from paimon_index.table.aggregate import AggregateReport

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("k", pa.int32()), ("x", pa.float64()),
                    ("u", pa.int32())])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "s",
           "file-index.range-bitmap.columns": "k,x"}
FILES, ROWS = 4, 500


def _same(a: object, b: object) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


def test_count_and_min_max_equal_spark(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    t = paimon_index.create_table(warehouse, "db.t", SCHEMA, options=OPTIONS)
    rng = np.random.default_rng(5)
    for f in range(FILES):
        t.write(pa.table({
            "id": pa.array(np.arange(f * ROWS, (f + 1) * ROWS)),
            "s": pa.array(rng.choice(["a", "b", "c"], ROWS), mask=rng.random(ROWS) < 0.2),
            "k": pa.array(rng.integers(0, 100, ROWS).astype(np.int32), mask=rng.random(ROWS) < 0.1),
            "x": pa.array(rng.choice([-0.0, 0.0, 2.5, math.nan, -1.0], ROWS), mask=rng.random(ROWS) < 0.1),
            "u": pa.array(rng.integers(0, 10, ROWS).astype(np.int32))}, schema=SCHEMA))
    t.delete("s = 'c' AND k < 50")
    live = tmp_path / "live"
    live.mkdir()
    pq.write_table(t.read(use_index=False), live / "part-0.parquet")
    reference = spark.read.parquet(str(live))
    counts = [(None, True), ("s = 'a'", True), ("s <> 'b' AND k >= 30", True), ("x > 0", True),
              ("x = 0", True), ("s = 'a' AND u < 4", False)]
    extremes = [("k", None), ("x", None), ("x", "k > 90"), ("k", "s = 'b'")]
    # One Spark job for every reference answer (count_if, min/max over FILTER).
    exprs = [f"count_if({w or 'true'})" for w, _ in counts] + \
        [f"{f}({c}) FILTER (WHERE {w or 'true'})" for c, w in extremes for f in ("min", "max")]
    want = reference.selectExpr(*exprs).collect()[0]
    for i, (where, answered_on_driver) in enumerate(counts):
        report = AggregateReport()
        got = jobs.count(spark, "db.t", where, warehouse=warehouse, report=report)
        assert got == want[i], where
        # The driver answers indexed WHEREs alone; the others go to Spark tasks.
        assert (report.files_read == 0) == answered_on_driver, (where, report.as_dict())
    for j, (column, where) in enumerate(extremes):
        lo, hi = want[len(counts) + 2 * j], want[len(counts) + 2 * j + 1]
        got = t.min_max(column, where)
        assert _same(got[0], lo) and _same(got[1], hi), (column, where, got, (lo, hi))
