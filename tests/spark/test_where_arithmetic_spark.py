"""WHERE arithmetic through the Python API gives Spark's answer over the same Parquet rows."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from tests.table.test_where_arithmetic import CASES, _table, rows

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("kind", ["append", "pk-merge-on-read"])
def test_where_arithmetic_equals_spark_sql(spark, tmp_path, kind: str) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(rows(), path)
    spark.read.parquet(str(path)).createOrReplaceTempView("arith_rows")
    table = _table(tmp_path / "wh", kind)
    for text, _ in CASES:
        want = sorted(r[0] for r in spark.sql(f"SELECT k FROM arith_rows WHERE {text}").collect())
        assert sorted(table.read(text).column("k").to_pylist()) == want, text
    # ANSI: Spark raises for a division by zero it evaluates, and so do we.
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):
        spark.sql("SELECT k FROM arith_rows WHERE k / (id - id) > 0").collect()
