"""Paimon types, the Arrow mapping and canonical keys."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

from paimon_index.errors import InvalidPredicateError, UnsupportedTypeError
from paimon_index.types import (
    DataType,
    TypeRoot,
    canonical_column,
    canonical_literal,
    from_arrow,
    parse_schema,
    parse_type,
)


def test_parse_schema_keeps_order_and_parameters() -> None:
    schema = parse_schema("id BIGINT NOT NULL, status STRING, ts TIMESTAMP(3), amount DECIMAL(10, 2), "
                          "`odd name` TIMESTAMP(6) WITH LOCAL TIME ZONE, c CHAR(3), b BYTES, t TIME")
    assert list(schema) == ["id", "status", "ts", "amount", "odd name", "c", "b", "t"]
    assert schema["id"] == DataType(TypeRoot.BIGINT, nullable=False)
    assert str(schema["status"]) == "STRING"
    assert schema["ts"].precision == 3 and schema["ts"].root is TypeRoot.TIMESTAMP
    assert (schema["amount"].precision, schema["amount"].scale) == (10, 2)
    assert schema["odd name"].root is TypeRoot.TIMESTAMP_LTZ
    assert str(schema["c"]) == "CHAR(3)" and str(schema["b"]) == "BYTES"
    assert schema["t"].precision == 0


@pytest.mark.parametrize("bad", ["x", "x FOO", "x INT, x INT", "x DECIMAL(50, 2)", "x TIMESTAMP(12)", ""])
def test_bad_schemas_are_rejected(bad: str) -> None:
    with pytest.raises((InvalidPredicateError, UnsupportedTypeError)):
        parse_schema(bad)


def test_arrow_mapping() -> None:
    assert from_arrow(pa.int16()).root is TypeRoot.SMALLINT
    assert from_arrow(pa.large_string()) == parse_type("STRING")
    assert from_arrow(pa.timestamp("us", tz="UTC")) == parse_type("TIMESTAMP(6) WITH LOCAL TIME ZONE")
    assert from_arrow(pa.time32("ms")) == parse_type("TIME(3)")
    assert from_arrow(pa.decimal128(10, 2)) == parse_type("DECIMAL(10, 2)")
    with pytest.raises(UnsupportedTypeError):
        from_arrow(pa.list_(pa.int32()))


def test_timestamps_are_floored_like_java() -> None:
    """Java's Timestamp keeps nanos-of-milli >= 0, so -1 µs is millisecond -1, not 0."""
    arr = pa.array([-1, 0, 1_999, None], pa.timestamp("us"))
    col = canonical_column(arr, parse_type("TIMESTAMP(3)"))
    assert col.values[:3].tolist() == [-1, 0, 1]
    assert col.valid.tolist() == [True, True, True, False]
    ns = pa.array([-1, 1_500], pa.timestamp("ns"))
    assert canonical_column(ns, parse_type("TIMESTAMP(6)")).values.tolist() == [-1, 1]


def test_dates_times_and_strings() -> None:
    d = canonical_column(pa.array([dt.date(2024, 1, 1), dt.date(1969, 12, 31)]))
    assert d.values.tolist() == [19723, -1]
    d64 = canonical_column(pa.array([-1, 86_400_000], pa.date64()), parse_type("DATE"))
    assert d64.values.tolist() == [-1, 1]
    t = canonical_column(pa.array([1_500_000], pa.time64("us")), parse_type("TIME(3)"))
    assert t.values.tolist() == [1500]
    s = canonical_column(pa.array(["é", None, ""]))
    assert s.values.to_pylist()[0] == "é".encode() and s.null_count == 1
    f = canonical_column(pa.array([0.1], pa.float32()))
    assert f.values.dtype == np.float32


def test_literals_become_canonical_keys() -> None:
    assert canonical_literal(dt.date(2024, 1, 1), parse_type("DATE")) == 19723
    ts = dt.datetime(2024, 1, 1, 10, 0, 0, 123456)
    assert canonical_literal(ts, parse_type("TIMESTAMP(3)")) == 1704103200123
    assert canonical_literal(ts, parse_type("TIMESTAMP(6)")) == 1704103200123456
    aware = dt.datetime(2024, 1, 1, 11, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert canonical_literal(aware, parse_type("TIMESTAMP(3) WITH LOCAL TIME ZONE")) == 1704103200000
    assert canonical_literal(dt.time(0, 0, 1, 500_000), parse_type("TIME(3)")) == 1500
    assert canonical_literal("abc", parse_type("STRING")) == b"abc"
    assert canonical_literal(decimal.Decimal("12.34"), parse_type("DECIMAL(10, 2)")) == 1234
    assert canonical_literal(0.1, parse_type("FLOAT")) == float(np.float32(0.1))
    assert canonical_literal(None, parse_type("INT")) is None


@pytest.mark.parametrize(("value", "type_text", "message"), [
    (2**31, "INT", "outside"),
    (-129, "TINYINT", "outside"),
    ("5", "INT", "does not fit"),
    (True, "INT", "does not fit"),
    (1, "BOOLEAN", "does not fit"),
    (decimal.Decimal("1.234"), "DECIMAL(10, 2)", "decimal places"),
    (10**9, "DECIMAL(5, 0)", "digits"),
    ("x", "BYTES", "binary columns take bytes"),
])
def test_literals_that_do_not_fit_are_rejected(value: object, type_text: str, message: str) -> None:
    with pytest.raises(InvalidPredicateError, match=message):
        canonical_literal(value, parse_type(type_text))


@pytest.mark.parametrize("make", [
    lambda v: pa.array(v, pa.large_string()),
    lambda v: pa.array(v).dictionary_encode(),
    lambda v: pa.chunked_array([v[:100], v[100:]]),
    lambda v: pa.array(v, pa.string_view()),
    lambda v: pa.chunked_array([pa.array(v[:7]).dictionary_encode(), pa.array(v[7:]).dictionary_encode()]),
])
def test_every_arrow_layout_of_a_column_builds_the_same_index(make) -> None:
    """Parquet readers and Spark hand columns over as large, dictionary, chunked or view arrays."""
    from paimon_index.fileindex.builder import build_file_index

    values = ["a", "b", None, "a", "é", "b"] * 50
    options = {"file-index.bitmap.columns": "s", "file-index.bloom-filter.columns": "s",
               "file-index.range-bitmap.columns": "s"}
    expected = build_file_index(pa.table({"s": pa.array(values)}), options)
    assert build_file_index(pa.table({"s": make(values)}), options) == expected
