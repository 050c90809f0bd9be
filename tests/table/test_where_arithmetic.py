"""Arithmetic in WHERE text (``id % 7 = 0``, ``price * qty > 100``, ``a < b``): evaluated on the rows
with Spark's ANSI semantics, never used to prune; the same answer on every table kind."""

from __future__ import annotations

import math
from decimal import Decimal

import pyarrow as pa
import pytest

import paimon_index
from paimon_index.errors import DataError, InvalidPredicateError

SCHEMA = pa.schema([("k", pa.int32()), ("id", pa.int64()), ("n", pa.int32()), ("x", pa.float64()),
                    ("d", pa.decimal128(10, 2)), ("status", pa.string())])


def rows() -> pa.Table:
    ks = list(range(40))
    ids = [None if k % 11 == 5 else (k * 3 - 40) for k in ks]  # negatives, zero, NULLs
    ns = [None if k % 9 == 4 else (7 - k) % 13 - 6 for k in ks]
    xs = [None if k % 10 == 3 else float("nan") if k == 17 else (k - 20) * 0.75 for k in ks]
    ds = [None if k % 8 == 6 else Decimal(k * 37 % 200 - 100) / 10 for k in ks]
    statuses = ["ABC"[k % 3] for k in ks]
    return pa.table([ks, ids, ns, xs, ds, statuses], schema=SCHEMA)


#: (WHERE text, the same condition in Python over a row dict, with Java's % and Spark's NULLs).

CASES: list[tuple[str, object]] = [
    ("status = 'C' AND id % 7 = 0",
     lambda r: r["status"] == "C" and r["id"] is not None and r["id"] % 7 == 0),
    ("id % 7 = -3", lambda r: r["id"] is not None and math.fmod(r["id"], 7) == -3),
    ("n % -4 = 1", lambda r: r["n"] is not None and math.fmod(r["n"], -4) == 1),
    ("id / 4 > 2.5", lambda r: r["id"] is not None and r["id"] / 4 > 2.5),
    ("id * 3 - n <= 10", lambda r: None not in (r["id"], r["n"]) and r["id"] * 3 - r["n"] <= 10),
    ("-id > 5", lambda r: r["id"] is not None and -r["id"] > 5),
    ("x % 2 = -1.5", lambda r: r["x"] is not None and math.fmod(r["x"], 2) == -1.5),
    ("x / 2 < -1", lambda r: r["x"] is not None and not math.isnan(r["x"]) and r["x"] / 2 < -1),
    ("d % 3 = -1.5", lambda r: r["d"] is not None and math.fmod(r["d"], 3) == -1.5),
    ("d * 2 + 1 BETWEEN 0 AND 9", lambda r: r["d"] is not None and 0 <= r["d"] * 2 + 1 <= 9),
    ("id % 3 IN (1, -1)", lambda r: r["id"] is not None and math.fmod(r["id"], 3) in (1, -1)),
    ("n + 1 IS NULL", lambda r: r["n"] is None),
    ("n = id", lambda r: None not in (r["n"], r["id"]) and r["n"] == r["id"]),
    ("NOT (id % 2 = 0)", lambda r: r["id"] is not None and r["id"] % 2 != 0),
    ("x > n", lambda r: None not in (r["x"], r["n"]) and (math.isnan(r["x"]) or r["x"] > r["n"])),
    ("(id + 1) * 2 > 10 OR status = 'A'",
     lambda r: r["status"] == "A" or (r["id"] is not None and (r["id"] + 1) * 2 > 10)),
    ("id - -1 = 0 OR id -1 = 0", lambda r: r["id"] in (-1, 1)),
    ("d / 3 > 1.333333", lambda r: r["d"] is not None and
     (Decimal(r["d"]) / 3).quantize(Decimal("0.000001"), rounding="ROUND_HALF_UP") > Decimal("1.333333")),
]

KINDS = {
    "append": {"options": {"deletion-vectors.enabled": "true", "bucket": "-1",
                           "file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "id"}},
    "pk-dv": {"primary_key": ["k"], "options": {"bucket": "2", "deletion-vectors.enabled": "true",
                                                  "file-index.bitmap.columns": "status"}},
    "pk-merge-on-read": {"primary_key": ["k"], "options": {"bucket": "2"}},
}


def _table(tmp_path, kind: str) -> paimon_index.Table:
    spec = KINDS[kind]
    table = paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, primary_keys=spec.get("primary_key", ()),
                                      options=spec["options"])
    data = rows()
    table.write(data.slice(0, 20))
    table.write(data.slice(20))
    return table


def _expected(condition) -> list[int]:
    return sorted(r["k"] for r in rows().to_pylist() if condition(r))


@pytest.mark.parametrize("kind", list(KINDS))
def test_read_where_arithmetic_matches_the_reference(tmp_path, kind: str) -> None:
    table = _table(tmp_path, kind)
    for text, condition in CASES:
        got = sorted(table.read(text).column("k").to_pylist())
        assert got == _expected(condition), text
        assert table.count(text) == len(got), text


@pytest.mark.parametrize("kind", ["append", "pk-dv"])
def test_delete_with_modulo_deletes_exactly_those_rows(tmp_path, kind: str) -> None:
    """The issue's example: refused before ("unexpected character '%'")."""
    table = _table(tmp_path, kind)
    where = "status = 'C' AND id % 7 = 0"
    doomed = _expected(CASES[0][1])
    assert doomed, "the data must hold matching rows"
    result = table.delete(where)
    assert result.rows_affected == len(doomed)
    left = sorted(table.read().column("k").to_pylist())
    assert left == [k for k in range(40) if k not in doomed]


def test_update_where_arithmetic(tmp_path) -> None:
    table = _table(tmp_path, "append")
    table.update({"status": "'Z'"}, where="n % 2 = 1 AND k < 30")
    changed = sorted(table.read("status = 'Z'").column("k").to_pylist())
    assert changed == _expected(lambda r: r["n"] is not None and math.fmod(r["n"], 2) == 1 and r["k"] < 30)


def test_division_by_zero_raises_as_spark_ansi_does(tmp_path) -> None:
    table = _table(tmp_path, "append")
    with pytest.raises(DataError, match="division by zero"):
        table.read("k / (id - id) > 0")
    with pytest.raises(DataError, match="remainder by zero"):
        table.read("k % 0 = 1")
    with pytest.raises(DataError, match="overflow"):
        table.read("n * 2147483647 * 2147483647 > 0")
    # A NULL dividend with a zero divisor is NULL (Spark evaluates no division for it).
    assert table.read("id + NULL / 0 > 1").num_rows == 0
    # Rows a plain conjunct drops are not evaluated (Spark's AND skips its right side).
    assert table.read("status = 'Q' AND k / (id - id) > 0").num_rows == 0


def test_comparing_a_number_with_a_string_is_refused(tmp_path) -> None:
    table = _table(tmp_path, "append")
    with pytest.raises(InvalidPredicateError, match="cannot compare"):
        table.read("id % 2 = 'x'")
