"""file-index.* table options."""

from __future__ import annotations

import datetime as dt
import decimal
import re

import pyarrow as pa
import pytest

from paimon_index.errors import InvalidOptionError, UnsupportedTypeError
from paimon_index.fileindex.builder import build_file_index
from paimon_index.fileindex.options import FileIndexOptions, IndexSpec, check_index_columns, parse_memory_size
from paimon_index.fileindex.registry import INDEX_TYPES
from paimon_index.types import parse_type


def test_parses_paimon_spelling() -> None:
    opts = FileIndexOptions.from_table_options({
        "bucket": "4",
        "file-index.bloom-filter.columns": "id, name",
        "file-index.bloom-filter.id.fpp": "0.01",
        "file-index.bloom-filter.id.items": "5000",
        "file-index.bitmap.columns": "status",
        "file-index.bitmap.status.index-block-size": "64b",
        "file-index.in-manifest-threshold": "1kb",
        "file-index.read.enabled": "false",
        "file-index.some.future.key.with.many.parts": "ignored, as Paimon does (strict mode refuses it)",
    })
    assert set(opts.specs) == {
        IndexSpec("id", "bloom-filter", (("fpp", "0.01"), ("items", "5000"))),
        IndexSpec("name", "bloom-filter", ()),
        IndexSpec("status", "bitmap", (("index-block-size", "64b"),)),
    }
    assert opts.in_manifest_threshold == 1024
    assert opts.read_enabled is False
    again = FileIndexOptions.from_table_options(opts.to_table_options())
    assert set(again.specs) == set(opts.specs) and again.in_manifest_threshold == 1024


def test_defaults() -> None:
    opts = FileIndexOptions.from_table_options({})
    assert opts.empty and opts.in_manifest_threshold == 500 and opts.read_enabled


@pytest.mark.parametrize(("options", "message"), [
    ({"file-index.zonemap.columns": "a"}, "unknown file index type 'zonemap'"),
    ({"file-index.bitmap.columns": "a,,b"}, "empty column name"),
    ({"file-index.bitmap.b.version": "2"}, "column 'b' is not declared"),
    ({"file-index.bitmap.columns": "a", "file-index.bitmap.a.version": "3"}, "must be 1 or 2"),
    ({"file-index.bitmap.columns": "a", "file-index.bitmap.a.colour": "red"}, "has no option 'colour'"),
    ({"file-index.bloom-filter.columns": "a", "file-index.bloom-filter.a.fpp": "1.5"}, "between 0 and 1"),
    ({"file-index.bloom-filter.columns": "a", "file-index.bloom-filter.a.items": "lots"}, "integer"),
    ({"file-index.in-manifest-threshold": "12 parsecs"}, "cannot parse size"),
    ({"file-index.read.enabled": "yes"}, "true or false"),
])
def test_bad_options_are_rejected(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        FileIndexOptions.from_table_options(options)


@pytest.mark.parametrize(("text", "size"), [
    ("500", 500), ("64b", 64), ("16kb", 16384), ("16 KB", 16384), ("2m", 2 << 20), ("1gb", 1 << 30),
    ("3 bytes", 3), ("1 kibibytes", 1024),
])
def test_memory_sizes(text: str, size: int) -> None:
    assert parse_memory_size(text) == size


# ------------------------------------------------------------------------------------------------
# Strict parsing (CREATE/ALTER) and the schema checks
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "nearest_key"), [
    ("file-index.bloom-filter.column", "file-index.bloom-filter.columns"),
    ("file-index.bitmap.colums", "file-index.bitmap.columns"),
    ("file-index.range-bitmap.column", "file-index.range-bitmap.columns"),
    ("file-index.in-manifest-treshold", "file-index.in-manifest-threshold"),
    ("file-index.read.enable", "file-index.read.enabled"),
    ("file-index.bitmap.a.b.columns", "file-index.bitmap.columns"),
])
def test_strict_parsing_names_the_nearest_valid_key(key: str, nearest_key: str) -> None:
    # Lenient (reading a table as it is): Paimon ignores keys of unknown shape, so do we.
    assert FileIndexOptions.from_table_options({key: "a"}).empty
    expected = f"{re.escape(key)}: .*did you mean {re.escape(repr(nearest_key))}"
    with pytest.raises(InvalidOptionError, match=expected):
        FileIndexOptions.from_table_options({key: "a"}, strict=True)


def test_strict_parsing_suggests_declared_per_column_options() -> None:
    options = {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp.x": "0.1"}
    with pytest.raises(InvalidOptionError, match=r"did you mean 'file-index\.bloom-filter\.id\.fpp'"):
        FileIndexOptions.from_table_options(options, strict=True)


def test_strict_parsing_lists_the_key_shapes_when_nothing_is_near() -> None:
    with pytest.raises(InvalidOptionError, match=r"valid keys are file-index.<type>.columns, "):
        FileIndexOptions.from_table_options({"file-index.qqqqqqqqqqqqqqqqqqqqqqqqqqqqq": "1"}, strict=True)


def test_strict_parsing_accepts_every_valid_key() -> None:
    options = {"file-index.bloom-filter.columns": "a", "file-index.bloom-filter.a.fpp": "0.1",
               "file-index.bloom-filter.a.items": "10", "file-index.bitmap.columns": "a",
               "file-index.bitmap.a.version": "2", "file-index.bitmap.a.index-block-size": "1kb",
               "file-index.range-bitmap.columns": "a", "file-index.range-bitmap.a.chunk-size": "1kb",
               "file-index.bsi.columns": "a", "file-index.in-manifest-threshold": "1kb",
               "file-index.read.enabled": "true", "bucket": "-1"}
    assert len(FileIndexOptions.from_table_options(options, strict=True).specs) == 4


def _sample(arrow_type: pa.DataType) -> pa.Array:
    """Two rows (a value and a NULL) of ``arrow_type``."""
    if pa.types.is_integer(arrow_type):
        value: object = 3
    elif pa.types.is_floating(arrow_type):
        value = 1.5
    elif pa.types.is_boolean(arrow_type):
        value = True
    elif pa.types.is_string(arrow_type):
        value = "abc"
    elif pa.types.is_binary(arrow_type) or pa.types.is_fixed_size_binary(arrow_type):
        value = b"abcd"
    elif pa.types.is_decimal(arrow_type):
        value = decimal.Decimal("1.5")
    elif pa.types.is_date(arrow_type):
        value = dt.date(2024, 1, 2)
    elif pa.types.is_timestamp(arrow_type):
        value = dt.datetime(2024, 1, 2, 3, 4, 5, 678901)
    else:
        value = dt.time(1, 2, 3)
    return pa.array([value, None], arrow_type)


#: Every atomic Paimon type paimon-index represents, with the Arrow type pypaimon reads it as.
ATOMIC_TYPES = {
    "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
    "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(), "CHAR(4)": pa.string(),
    "VARCHAR(8)": pa.string(), "STRING": pa.string(), "BINARY(4)": pa.binary(), "VARBINARY(8)": pa.binary(),
    "BYTES": pa.binary(), "DECIMAL(10, 2)": pa.decimal128(10, 2), "DECIMAL(18, 4)": pa.decimal128(18, 4),
    "DECIMAL(38, 10)": pa.decimal128(38, 10), "DATE": pa.date32(), "TIME(3)": pa.time32("ms"),
    "TIMESTAMP(3)": pa.timestamp("ms"), "TIMESTAMP(6)": pa.timestamp("us"),
    "TIMESTAMP(9)": pa.timestamp("ns"), "TIMESTAMP(6) WITH LOCAL TIME ZONE": pa.timestamp("us", tz="UTC"),
}


@pytest.mark.parametrize("index_type", sorted(INDEX_TYPES))
@pytest.mark.parametrize("type_text", list(ATOMIC_TYPES))
def test_create_time_checks_accept_exactly_what_the_writers_build(index_type: str, type_text: str) -> None:
    """The CREATE/ALTER check must never refuse an index our writer builds, nor accept one it cannot
    build (that would break every write)."""
    options = FileIndexOptions.from_table_options({f"file-index.{index_type}.columns": "c"}, strict=True)
    dtype = parse_type(type_text)
    data = pa.table({"c": _sample(ATOMIC_TYPES[type_text])})
    try:
        build_file_index(data, options, {"c": dtype})
        builds = True
    except UnsupportedTypeError:
        builds = False
    try:
        check_index_columns(options, {"c": dtype})
        accepted = True
    except InvalidOptionError as e:
        assert f"'{index_type}'" in str(e) and "'c'" in str(e)
        accepted = False
    assert accepted == builds


@pytest.mark.parametrize(("columns", "message"), [
    ({"d": parse_type("INT")}, r"file-index.bitmap.columns: the table has no column 'c'; columns are d"),
    ({"cc": parse_type("INT")}, r"the table has no column 'c'; did you mean 'cc'\?"),
    ({"c": parse_type("ARRAY<INT>")}, r"does not support column 'c' of type ARRAY<INT>"),
    ({"c": "VARIANT"}, r"index type 'bitmap' does not support column 'c' of type VARIANT"),
])
def test_index_columns_must_exist_with_a_supported_type(columns: dict, message: str) -> None:
    options = FileIndexOptions.from_table_options({"file-index.bitmap.columns": "c"})
    with pytest.raises(InvalidOptionError, match=message):
        check_index_columns(options, columns)


def test_lenient_parsing_logs_what_it_ignores(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="paimon_index.fileindex.options"):
        assert FileIndexOptions.from_table_options({"file-index.bitmap.colums": "a"}).empty
    assert "ignoring table option (as Paimon does): file-index.bitmap.colums: unknown file index option; " \
           "did you mean 'file-index.bitmap.columns'?" in caplog.text
