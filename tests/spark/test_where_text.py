"""WHERE text the planned read prunes with (``table/scan.py: conservative_predicate``) against
Spark's own filter over the same rows: the predicate must keep every row Spark keeps.

The text is cut on ``sql.py``'s tokens, read as Spark reads them: quotes with backslash escapes
and doubled quotes, double-quoted strings, back-quoted names, comments, ``CASE ... END``. The
literal values ``sql.py`` takes from string literals are checked against Spark's ``SELECT``.
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.sql import parse_predicate
from paimon_index.table.scan import conservative_predicate
from paimon_index.types import parse_schema

pytestmark = pytest.mark.spark

SCHEMA = parse_schema("id BIGINT, s STRING, v INT, `my col` INT")
STRINGS = ["a", "x\\y", "a' OR v = 1", "it's", "AND", "a AND b", 'd"q', "(", "a\\'b", "x\\\\y", "\n"]
ROWS = 400

TEXTS = [
    r"s = 'x\\y'",                                    # Spark's value is x\y (one backslash)
    r"s = 'a\' OR v = 1' AND id < 300",               # an escaped quote: the OR is inside the string
    r"s = 'it''s' OR v = 2",
    r"""s = "AND" OR s = "d\"q" """,                  # double-quoted strings
    r"s = 'a\\\'b' OR upper(s) = 'A'",
    "`my col` = 3 AND (upper(s) = 'A AND B' OR id > 350)",
    "((v = 1 OR length(s) = 3) AND (id < 100 OR (`my col` = 2 AND abs(v) = 4)))",
    "CASE WHEN v = 1 AND id < 200 AND `my col` = 2 THEN 0 ELSE 1 END = 1",
    "v BETWEEN 1 AND 3 AND CASE WHEN s = 'a' THEN v ELSE 0 END = 0",
    "v NOT BETWEEN 1 AND 3 AND nvl(s, 'z') <> 'a' OR id = 5",
    "id < 50 -- OR v = 1\n AND v = 2",
    "id < 50 /* AND v = 1 */ OR v = 2",
    "array_contains(array(1, 2), v) AND s IN ('a', 'x\\\\y', '(')",
    "coalesce(`my col`, 0) = 0 OR s LIKE 'a%' AND v = 1",
]


def _rows(seed: int) -> pa.Table:
    rnd = random.Random(seed)
    return pa.table({"id": pa.array(range(ROWS), pa.int64()),
                     "s": [rnd.choice([*STRINGS, None]) for _ in range(ROWS)],
                     "v": pa.array([rnd.choice([0, 1, 2, 3, 4, None]) for _ in range(ROWS)], pa.int32()),
                     "my col": pa.array([rnd.choice([0, 1, 2, 3, None]) for _ in range(ROWS)], pa.int32())})


@pytest.mark.parametrize("text", TEXTS)
def test_conservative_predicate_keeps_every_row_spark_keeps(spark: Any, text: str) -> None:
    rows = _rows(len(text))
    spark_ids = {r["id"] for r in spark.createDataFrame(rows.to_pandas()).filter(text).select("id").collect()}
    predicate, exact = conservative_predicate(text, SCHEMA)
    kept = set(rows.filter(to_arrow_expression(predicate, SCHEMA))["id"].to_pylist())
    assert spark_ids <= kept, f"{text!r} -> {predicate} drops {sorted(spark_ids - kept)[:5]}"
    if exact:  # an exact predicate keeps exactly Spark's rows
        assert kept == spark_ids, text


LITERALS = [r"'x\\y'", r"'a\'b'", "'it''s'", '"d""q"', r'"d\"q"', r"'\u0041\101\n\t\%\_\q\Z\0'",
            r"'\U0001F600'", "'a\\\nb'", r"'\\\\'"]


def test_string_literals_mean_what_spark_reads(spark: Any) -> None:
    got = [parse_predicate(f"s = {lit}").literals[0] for lit in LITERALS]  # type: ignore[attr-defined]
    want = list(spark.sql("SELECT " + ", ".join(f"{lit} AS c{i}" for i, lit in enumerate(LITERALS))).first())
    assert got == want
