"""``UPDATE ... SET col = '<expression>'``: the Python evaluator gives what Spark's ``F.expr`` gives.

Reference: Spark itself (``CAST(expr AS <column type>)`` over the same rows, as
``paimon_index.spark.jobs.update`` does), compared with :meth:`Table.update`'s evaluation.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_index.errors import DataError
from paimon_index.expression import compile_expression
from paimon_index.table.api import _assigned

pytestmark = pytest.mark.spark

ROWS = pa.table({
    "i": pa.array([1, -7, None, 2147483600, 0], pa.int32()),
    "l": pa.array([10, 3, 5, None, -4], pa.int64()),
    "d": pa.array([1.5, -2.25, None, 0.1, 3.0], pa.float64()),
    "s": pa.array(["ab", " Cd ", None, "", "x"], pa.string()),
})

#: (expression, target column type)
CASES = [
    ("i + 1", pa.int32()), ("l * 3 - i", pa.int64()), ("-l", pa.int64()), ("l / 4", pa.int64()),
    ("l / 4", pa.float64()), ("i / 3 + 1", pa.int32()), ("d * 2", pa.float64()), ("d + l", pa.float64()),
    ("d", pa.int64()), ("1.5 * l", pa.float64()), ("l + 2.25", pa.float64()), ("abs(i - 5)", pa.int32()),
    ("coalesce(i, l, 99)", pa.int64()), ("'lit'", pa.string()), ("'it''s'", pa.string()),
    ("upper(s)", pa.string()), ("lower(s) || '!'", pa.string()), ("trim(s)", pa.string()),
    ("length(s)", pa.int32()), ("concat(s, '-', s)", pa.string()), ("s || l", pa.string()),
    ("NULL", pa.int64()), ("`l` + (2 * (l - 1))", pa.int64()), ("TRUE", pa.bool_()),
    ("10000000000 + l", pa.int64()), ("1.5d + i", pa.float64()),
    # string literals as Spark's lexer reads them: backslash escapes, double quotes, comments
    ("'x\\\\y'", pa.string()), ("'it\\'s' || s", pa.string()), ('"dq" || s', pa.string()),
    ('"say ""hi"""', pa.string()), ("'a\\tb\\u0041\\101'", pa.string()), ("'50\\%' -- comment", pa.string()),
    ("concat(s, /* c */ 'z')", pa.string()),
]


def _spark_values(spark, expression: str, target: pa.DataType) -> list:
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type

    frame = spark.createDataFrame(ROWS.to_pandas().astype(object).where(ROWS.to_pandas().notna(), None),
                                  schema="i INT, l BIGINT, d DOUBLE, s STRING")
    frame = frame.withColumn("_pos", F.monotonically_increasing_id()).coalesce(1)
    got = frame.select("_pos", F.expr(expression).cast(from_arrow_type(target)).alias("v")).orderBy("_pos")
    return [row.v for row in got.collect()]


@pytest.mark.parametrize(("expression", "target"), CASES, ids=[f"{e}->{t}" for e, t in CASES])
def test_set_expression_equals_spark(spark, expression: str, target: pa.DataType) -> None:
    ours = _assigned(compile_expression(expression, ROWS.schema), target, "c")(ROWS).to_pylist()
    theirs = _spark_values(spark, expression, target)
    assert [v if v is None or not pa.types.is_floating(target) else pytest.approx(v) for v in theirs] == ours


@pytest.mark.parametrize("expression", ["i + 100", "l / 0", "2 * (i - 1)"])
def test_errors_where_spark_errors(spark, expression: str) -> None:
    """ANSI mode (Spark 4's default): integer overflow and division by zero fail the statement."""
    with pytest.raises(Exception):  # noqa: B017 - Spark raises its own error classes
        _spark_values(spark, expression, pa.int32())
    with pytest.raises(DataError):
        _assigned(compile_expression(expression, ROWS.schema), pa.int32(), "c")(ROWS)
