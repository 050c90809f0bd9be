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
    Field,
    TypeRoot,
    canonical_column,
    canonical_literal,
    from_arrow,
    parse_fields,
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


# ------------------------------------------------------------------------------------------------
# Type strings: both dialects, nested types, errors
# ------------------------------------------------------------------------------------------------
#: text -> (Paimon dialect, Spark dialect), each as Paimon prints the type (written out by hand).
SPELLINGS = {
    "TINYINT": ("TINYINT", "TINYINT"), "BYTE": ("TINYINT", "TINYINT"),
    "SMALLINT": ("SMALLINT", "SMALLINT"), "SHORT": ("SMALLINT", "SMALLINT"),
    "INT": ("INT", "INT"), "INTEGER": ("INT", "INT"),
    "BIGINT": ("BIGINT", "BIGINT"), "LONG": ("BIGINT", "BIGINT"),
    "FLOAT": ("FLOAT", "FLOAT"), "REAL": ("FLOAT", "FLOAT"), "DOUBLE": ("DOUBLE", "DOUBLE"),
    "DOUBLE PRECISION": ("DOUBLE", "DOUBLE"), "BOOLEAN": ("BOOLEAN", "BOOLEAN"),
    "decimal": ("DECIMAL(10, 0)", "DECIMAL(10, 0)"), "DECIMAL(5)": ("DECIMAL(5, 0)", "DECIMAL(5, 0)"),
    "NUMERIC(38,10)": ("DECIMAL(38, 10)", "DECIMAL(38, 10)"), "DEC(7, 2)": ("DECIMAL(7, 2)", "DECIMAL(7, 2)"),
    "STRING": ("STRING", "STRING"), "CHAR(10)": ("CHAR(10)", "CHAR(10)"),
    "VARCHAR(20)": ("VARCHAR(20)", "VARCHAR(20)"), "BYTES": ("BYTES", "BYTES"),
    "BINARY": ("BINARY(1)", "BYTES"), "BINARY(4)": ("BINARY(4)", "BINARY(4)"),
    "VARBINARY(8)": ("VARBINARY(8)", "VARBINARY(8)"), "DATE": ("DATE", "DATE"),
    "TIME": ("TIME(0)", "TIME(0)"), "TIME(3)": ("TIME(3)", "TIME(3)"),
    "TIMESTAMP": ("TIMESTAMP(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    "TIMESTAMP(3)": ("TIMESTAMP(3)", "TIMESTAMP(3)"),
    "TIMESTAMP WITHOUT TIME ZONE": ("TIMESTAMP(6)", "TIMESTAMP(6)"),
    "TIMESTAMP_NTZ": ("TIMESTAMP(6)", "TIMESTAMP(6)"),
    "TIMESTAMP_LTZ": ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    "TIMESTAMP_LTZ(3)": ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    "TIMESTAMP(9) WITH LOCAL TIME ZONE": ("TIMESTAMP(9) WITH LOCAL TIME ZONE",
                                          "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
    "INT NOT NULL": ("INT NOT NULL", "INT NOT NULL"), "INT NULL": ("INT", "INT"),
    "ARRAY<INT NOT NULL>": ("ARRAY<INT NOT NULL>", "ARRAY<INT NOT NULL>"),
    "MULTISET<STRING>": ("MULTISET<STRING>", "MULTISET<STRING>"),
    "MAP<STRING, ARRAY<BIGINT>>": ("MAP<STRING, ARRAY<BIGINT>>", "MAP<STRING NOT NULL, ARRAY<BIGINT>>"),
    "ROW<a INT, `b c` STRING COMMENT 'it''s'>": ("ROW<`a` INT, `b c` STRING COMMENT 'it''s'>",) * 2,
    "ROW(a INT NOT NULL)": ("ROW<`a` INT NOT NULL>",) * 2,
    "STRUCT<a: CHAR(2), b: STRUCT<`x``y`: DATE>> NOT NULL": (
        "ROW<`a` CHAR(2), `b` ROW<`x``y` DATE>> NOT NULL",) * 2,
}


@pytest.mark.parametrize("text", list(SPELLINGS))
def test_every_spelling_in_both_dialects(text: str) -> None:
    paimon, spark = SPELLINGS[text]
    assert str(parse_type(text)) == paimon
    assert str(parse_type(text, dialect="spark")) == spark
    # Paimon's spelling reads back as itself (the form pypaimon and Java store).
    assert str(parse_type(paimon)) == paimon


def test_fields_carry_comments_and_quoted_names() -> None:
    text = "`a``b` INT NOT NULL COMMENT 'the \\'key\\'', c: STRING COMMENT ''"
    fields = parse_fields(text, dialect="spark")
    assert fields == (Field("a`b", DataType(TypeRoot.INT, nullable=False), "the 'key'"),
                      Field("c", parse_type("STRING"), ""))
    assert str(fields[0]) == "`a``b` INT NOT NULL COMMENT 'the ''key'''"
    assert str(fields[1]) == "`c` STRING"  # Java prints no COMMENT for an empty one


def test_nested_types_have_no_index_key() -> None:
    dtype = parse_type("ARRAY<INT>")
    assert dtype.is_nested and dtype.element == parse_type("INT")
    with pytest.raises(UnsupportedTypeError, match=r"ARRAY<INT> has no index key"):
        _ = dtype.key_kind


@pytest.mark.parametrize(("text", "dialect", "message", "position"), [
    ("x", "paimon", "expected a data type, found end of text", 1),
    ("x FOO", "paimon", "unknown data type 'FOO'", 2),
    ("x INT, x INT", "paimon", "column 'x' declared twice", 7),
    ("x DECIMAL(50, 2)", "paimon", r"DECIMAL\(50, 2\) needs 1 <= precision <= 38", 2),
    ("x DECIMAL(5, 6)", "paimon", r"DECIMAL\(5, 6\) needs", 2),
    ("x TIMESTAMP(12)", "paimon", r"precision 12 is outside \[0, 9\]", 2),
    ("x CHAR(0)", "paimon", r"length 0 is outside", 2),
    ("x INT(3)", "paimon", r"type INT takes no parameters, got 1", 2),
    ("x TIME WITH LOCAL TIME ZONE", "paimon", "WITH LOCAL TIME ZONE only follows TIMESTAMP", 2),
    ("x INT,", "paimon", "expected a column name, found end of text", 6),
    ("x INT y", "paimon", "expected a column name|unexpected", 6),
    ("x ARRAY<INT", "paimon", r"expected '>' to close ARRAY<...>", 11),
    ("x MAP<INT>", "paimon", r"expected ',' between the MAP key and value types, found '>'", 9),
    ("x ROW<a INT", "paimon", r"expected '>' to close the field list", 11),
    ("x INT COMMENT", "paimon", "expected a quoted comment after COMMENT", 13),
    ("x INT ~", "paimon", r"unexpected character '~'", 6),
    ("x CHAR", "spark", "a Spark DDL CHAR needs a length", 2),
    ("x VARCHAR", "spark", "a Spark DDL VARCHAR needs a length", 2),
])
def test_schema_errors_give_position_and_token(text: str, dialect: str, message: str, position: int) -> None:
    with pytest.raises(InvalidPredicateError, match=message) as info:
        parse_fields(text, dialect=dialect)  # type: ignore[arg-type]
    assert info.value.position == position


@pytest.mark.parametrize("text", ["VARIANT", "BLOB", "INTERVAL"])
def test_types_without_a_representation_are_unsupported(text: str) -> None:
    with pytest.raises(UnsupportedTypeError, match=f"data type {text} .* is not supported"):
        parse_type(text)
