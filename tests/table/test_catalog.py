"""create_table / alter_table_options on real local warehouses: DDL types, option validation.

References: Java Paimon reads the schema and the rows we write (``../shared/java-paimon``; the
tests that need it skip when it or ``java`` is absent), pypaimon reads the rows back, and our index
writers decide which (index, type) pairs must be accepted.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_index.errors import InvalidOptionError, UnsupportedTypeError
from paimon_index.table.catalog import alter_table_options, arrow_schema, create_table, open_table

ORACLE = Path(__file__).resolve().parents[2].parent / "shared" / "java-paimon" / "oracle.sh"
needs_java = pytest.mark.skipif(not ORACLE.exists() or shutil.which("java") is None,
                                reason="Java Paimon oracle (../shared/java-paimon) or java not available")

#: Java prints UTF-8 whatever the locale; one small JVM.
JAVA_OPTS = "-Xmx1g -Dstdout.encoding=UTF-8"

#: Every type name of Spark SQL DDL and Paimon, and the Paimon type Paimon's Spark connector makes of
#: it, spelled as Java's DataField.asSQLString prints it (written out by hand, not by our code).
EVERY_TYPE = [
    ("c_tinyint", "TINYINT", "TINYINT"),
    ("c_byte", "BYTE", "TINYINT"),
    ("c_smallint", "SMALLINT", "SMALLINT"),
    ("c_short", "SHORT", "SMALLINT"),
    ("c_int", "INT NOT NULL", "INT NOT NULL"),
    ("c_integer", "INTEGER", "INT"),
    ("c_bigint", "BIGINT", "BIGINT"),
    ("c_long", "LONG", "BIGINT"),
    ("c_float", "FLOAT", "FLOAT"),
    ("c_real", "REAL", "FLOAT"),
    ("c_double", "DOUBLE", "DOUBLE"),
    ("c_decimal", "DECIMAL(10,2)", "DECIMAL(10, 2)"),
    ("c_numeric", "NUMERIC(38, 10)", "DECIMAL(38, 10)"),
    ("c_dec", "DEC", "DECIMAL(10, 0)"),
    ("c_boolean", "BOOLEAN", "BOOLEAN"),
    ("c_string", "STRING", "STRING"),
    ("c_char", "CHAR(10)", "CHAR(10)"),
    ("c_varchar", "VARCHAR(20)", "VARCHAR(20)"),
    ("c_binary", "BINARY", "BYTES"),
    ("c_binary4", "BINARY(4)", "BINARY(4)"),
    ("c_varbinary", "VARBINARY(8)", "VARBINARY(8)"),
    ("c_date", "DATE", "DATE"),
    ("c_timestamp", "TIMESTAMP", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("c_timestamp_ntz", "TIMESTAMP_NTZ", "TIMESTAMP(6)"),
    ("c_timestamp3", "TIMESTAMP(3)", "TIMESTAMP(3)"),
    ("c_timestamp_ltz3", "TIMESTAMP_LTZ(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("c_array", "ARRAY<INT>", "ARRAY<INT>"),
    ("c_map", "MAP<STRING, BIGINT>", "MAP<STRING NOT NULL, BIGINT>"),
    ("c_struct", "STRUCT<x: INT NOT NULL, `y z`: STRING COMMENT 'it''s'>",
     "ROW<`x` INT NOT NULL, `y z` STRING COMMENT 'it''s'>"),
]
EXPECTED_ROW_TYPE = "ROW<" + ", ".join(f"`{name}` {paimon}" for name, _, paimon in EVERY_TYPE) + \
    " COMMENT 'last column'>"

TS = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
TS_MICROS = 1714979289123456
#: One row: a value for every column of EVERY_TYPE (in order).
ROW = [7, -7, 300, -300, 70000, -70000, 2**40, -(2**40), 1.5, -2.5, 3.25, decimal.Decimal("12.34"),
       decimal.Decimal("1234567890123456789012345678.0123456789"), decimal.Decimal("42"), True, "héllo",
       "ab", "varchar", b"\x00\xff", b"abcd", b"xyz", dt.date(2024, 5, 6), TS, TS, TS, TS, [1, None, 3],
       [("k", 1)], {"x": 5, "y z": "why"}]
#: What Java's oracle prints for the columns it prints faithfully (others are checked by pypaimon).
JAVA_VALUES = {"c_tinyint": 7, "c_byte": -7, "c_smallint": 300, "c_short": -300, "c_int": 70000,
               "c_integer": -70000, "c_bigint": 2**40, "c_long": -(2**40), "c_float": 1.5, "c_real": -2.5,
               "c_double": 3.25, "c_decimal": "12.34",
               "c_numeric": "1234567890123456789012345678.0123456789", "c_dec": "42", "c_boolean": True,
               "c_string": "héllo", "c_char": "ab", "c_varchar": "varchar", "c_date": "2024-05-06",
               "c_timestamp": TS_MICROS, "c_timestamp_ntz": TS_MICROS,
               "c_timestamp3": TS_MICROS // 1000 * 1000, "c_timestamp_ltz3": TS_MICROS // 1000 * 1000}


def oracle(*commands: dict[str, str]) -> list[dict]:
    """Run Java Paimon commands in one JVM; one JSON answer per command."""
    lines = "\n".join(json.dumps(c) for c in commands)
    batch = Path(commands[0]["warehouse"]).parent / "oracle-commands.jsonl"
    batch.write_text(lines + "\n")
    out = subprocess.run([str(ORACLE), "batch", "--file", str(batch)], capture_output=True, text=True,
                         check=True, timeout=300, env={**os.environ, "PYTHON": sys.executable,
                                                         "ORACLE_JAVA_OPTS": JAVA_OPTS})
    answers = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    for a in answers:
        assert "error" not in a, a.get("stack", a)
    return answers


def write_rows(table, data: pa.Table) -> None:
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(data)
    builder.new_commit().commit(writer.prepare_commit())
    writer.close()


def every_type_table(tmp_path: Path, columns: slice = slice(None), name: str = "every"):
    """A table of EVERY_TYPE[columns] holding ROW; returns (warehouse, table, its DDL)."""
    warehouse = tmp_path / "wh"
    chosen = EVERY_TYPE[columns]
    ddl = ", ".join(f"{n} {t}" for n, t, _ in chosen) + " COMMENT 'last column'"
    table = create_table(str(warehouse), f"db.{name}", ddl, options={"bucket": "-1"})
    values = dict(zip([n for n, _, _ in EVERY_TYPE], ROW, strict=True))
    write_rows(table, pa.Table.from_pylist([{n: values[n] for n, _, _ in chosen}], schema=arrow_schema(ddl)))
    return warehouse, table, ddl


# ------------------------------------------------------------------------------------------------
# DDL types
# ------------------------------------------------------------------------------------------------
def test_ddl_types_become_the_paimon_types_of_the_spark_connector(tmp_path: Path) -> None:
    _, table, _ = every_type_table(tmp_path)
    got = {f.name: str(f.type) for f in table.fields}
    # pypaimon prints ROW fields in its own way; compare the atomic and the simple nested ones.
    for name, _, paimon in EVERY_TYPE[:-1]:
        assert got[name] == paimon, name
    assert [f.description for f in table.fields][-1] == "last column"


def test_rows_of_every_type_read_back_through_pypaimon(tmp_path: Path) -> None:
    _, table, _ = every_type_table(tmp_path)
    read = table.new_read_builder()
    rows = read.new_read().to_arrow(read.new_scan().plan().splits()).to_pylist()
    assert len(rows) == 1
    row = rows[0]
    names = [n for n, _, _ in EVERY_TYPE]
    expected = dict(zip(names, ROW, strict=True))
    for name in ("c_timestamp", "c_timestamp_ltz3"):  # instants come back in UTC
        row[name] = row[name].replace(tzinfo=None)
    expected["c_timestamp3"] = expected["c_timestamp_ltz3"] = TS.replace(microsecond=123000)
    expected["c_map"] = [("k", 1)]
    assert row == expected


@needs_java
def test_java_paimon_reads_the_schema_and_the_rows(tmp_path: Path) -> None:
    """Java reads the schema of every type; its oracle prints (and checksums) atomic values and
    cannot print a ROW value, so the rows are read from a second table without the ROW column and
    compared value by value where the oracle prints values faithfully."""
    warehouse, _, _ = every_type_table(tmp_path)
    every_type_table(tmp_path, slice(0, len(EVERY_TYPE) - 1), name="atomic")
    where = {"warehouse": str(warehouse)}
    schema, read_atomic = oracle({"cmd": "schema", "table": "db.every", **where},
                                 {"cmd": "read", "table": "db.atomic", "rows": "true", **where})
    assert schema["row_type"] == EXPECTED_ROW_TYPE
    assert read_atomic["rows"] == 1
    values = dict(zip([n for n, _, _ in EVERY_TYPE], read_atomic["row_values"][0], strict=False))
    assert {k: values[k] for k in JAVA_VALUES} == JAVA_VALUES


def test_a_spark_struct_type_needs_no_session_and_keeps_char_lengths(tmp_path: Path) -> None:
    T = pytest.importorskip("pyspark.sql.types")
    schema = T.StructType([
        T.StructField("id", T.LongType(), False, {"comment": "key"}),
        T.StructField("code", T.CharType(3)),
        T.StructField("name", T.VarcharType(12)),
        T.StructField("at", T.TimestampType()),
        T.StructField("local", T.TimestampNTZType()),
        T.StructField("raw", T.BinaryType()),
        T.StructField("tags", T.ArrayType(T.StringType(), containsNull=False)),
        T.StructField("attrs", T.MapType(T.StringType(), T.DecimalType(12, 3))),
    ])
    table = create_table(str(tmp_path), "db.s", schema)
    assert [str(f.type) for f in table.fields] == [
        "BIGINT NOT NULL", "CHAR(3)", "VARCHAR(12)", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP(6)",
        "BYTES", "ARRAY<STRING NOT NULL>", "MAP<STRING NOT NULL, DECIMAL(12, 3)>"]
    assert table.fields[0].description == "key"


def test_an_arrow_schema_still_goes_through_pypaimon(tmp_path: Path) -> None:
    table = create_table(str(tmp_path), "db.a", pa.schema([("id", pa.int64()), ("s", pa.string())]))
    assert [str(f.type) for f in table.fields] == ["BIGINT", "STRING"]


@pytest.mark.parametrize(("ddl", "message"), [
    ("id BIGINT, name", r"schema: expected a data type, found end of text \(at position 15\)"),
    ("id BIGINT name STRING", r"found 'name' \(at position 10\)"),
    ("id BIGIN", r"unknown data type 'BIGIN' \(at position 3\)"),
    ("id BIGINT, id INT", r"column 'id' declared twice \(at position 11\)"),
    ("c CHAR", r"a Spark DDL CHAR needs a length"),
    ("d DECIMAL(39, 2)", r"DECIMAL\(39, 2\) needs 1 <= precision <= 38"),
    ("a ARRAY<INT", r"expected '>' to close ARRAY<...>, found end of text"),
    ("m MAP<STRING>", r"expected ',' between the MAP key and value types, found '>'"),
    ("x INT COMMENT note", r"expected a quoted comment after COMMENT, found 'note'"),
    ("", "empty schema"),
])
def test_bad_ddl_is_refused_with_position_and_token(tmp_path: Path, ddl: str, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        create_table(str(tmp_path / "wh"), "db.t", ddl)
    assert not (tmp_path / "wh").exists()


def test_types_paimon_index_cannot_write_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedTypeError, match="VARIANT"):
        create_table(str(tmp_path / "wh"), "db.t", "id INT, v VARIANT")
    assert not (tmp_path / "wh").exists()


# ------------------------------------------------------------------------------------------------
# Options refused at CREATE
# ------------------------------------------------------------------------------------------------
DDL = "id BIGINT, price DECIMAL(10, 2), big DECIMAL(38, 10), raw BINARY, code CHAR(4), flag BOOLEAN, " \
      "tags ARRAY<STRING>, ts TIMESTAMP(9)"

REFUSED = [
    ({"file-index.bloom-filter.column": "id"},
     r"file-index.bloom-filter.column: unknown file index option; "
     r"did you mean 'file-index.bloom-filter.columns'\?"),
    ({"file-index.bitmap.colums": "code"},
     r"file-index.bitmap.colums: unknown file index option; did you mean 'file-index.bitmap.columns'\?"),
    ({"file-index.bloomfilter.columns": "id"},
     r"unknown file index type 'bloomfilter'; did you mean 'file-index.bloom-filter.columns'\?"),
    ({"file-index.bitmap.columns": "code", "file-index.bitmap.code.index-block-size.x": "1"},
     r"file-index.bitmap.code.index-block-size.x: unknown file index option"),
    ({"file-index.read-enabled": "false"}, r"did you mean 'file-index.read.enabled'\?"),
    ({"file_index.bitmap.columns": "code"}, r"did you mean 'file-index.bitmap.columns'\?"),
    ({"file-index.bloom-filter.columns": "idd"},
     r"file-index.bloom-filter.columns: the table has no column 'idd'; did you mean 'id'\?"),
    ({"file-index.bitmap.columns": "nowhere"}, r"the table has no column 'nowhere'; columns are id, price"),
    ({"file-index.bloom-filter.columns": "attrs[color]"}, r"'attrs\[color\]' is a map-key index"),
    ({"file-index.bloom-filter.columns": "price"},
     r"index type 'bloom-filter' does not support column 'price' of type DECIMAL\(10, 2\)"),
    ({"file-index.bloom-filter.columns": "flag"},
     r"index type 'bloom-filter' does not support column 'flag' of type BOOLEAN"),
    ({"file-index.bitmap.columns": "raw"},
     r"index type 'bitmap' does not support column 'raw' of type BYTES"),
    ({"file-index.bitmap.columns": "price"}, r"index type 'bitmap' does not support column 'price'"),
    ({"file-index.range-bitmap.columns": "big"},
     r"'range-bitmap' supports DECIMAL precision up to 18, column 'big' is DECIMAL\(38, 10\)"),
    ({"file-index.bsi.columns": "big"}, r"'bsi' supports DECIMAL precision up to 18, column 'big'"),
    ({"file-index.bsi.columns": "code"},
     r"index type 'bsi' does not support column 'code' of type CHAR\(4\)"),
    ({"file-index.range-bitmap.columns": "ts"},
     r"TIMESTAMP precision up to 6, column 'ts' is TIMESTAMP\(9\)"),
    ({"file-index.bloom-filter.columns": "tags"},
     r"'bloom-filter' does not support column 'tags' of type ARRAY<STRING>"),
    ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "1"},
     r"file-index.bloom-filter.id.fpp: 1.0 must be strictly between 0 and 1"),
    ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "0"}, "strictly between"),
    ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": "0"},
     r"file-index.bloom-filter.id.items: 0 outside \[1, 2147483647\]"),
    ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fp": "0.1"},
     r"has no option 'fp' \(known: fpp, items\)"),
    ({"file-index.bitmap.columns": "code", "file-index.bitmap.code.index-block-size": "16 parsecs"},
     "cannot parse size"),
    ({"file-index.range-bitmap.columns": "id", "file-index.range-bitmap.id.chunk-size": "4gb"},
     "exceeds 2147483647 bytes"),
    ({"file-index.in-manifest-threshold": "-1"}, "cannot parse size"),
    ({"file-index.bloom-filter.id.fpp": "0.1"},
     r"column 'id' is not declared in 'file-index.bloom-filter.columns'"),
    ({"deletion-vectors.enable": "true"},
     r"deletion-vectors.enable: unknown deletion-vectors option; did you mean 'deletion-vectors.enabled'\?"),
    ({"deletion-vector.enabled": "true"}, r"did you mean 'deletion-vectors.enabled'\?"),
    ({"deletion-vectors.bitmap-64": "true"}, r"did you mean 'deletion-vectors.bitmap64'\?"),
    ({"deletion-vectros.enabled": "true"},
     r"unknown table option; did you mean 'deletion-vectors.enabled'\?"),
    ({"Deletion_Vectors.enabled": "true"}, r"did you mean 'deletion-vectors.enabled'\?"),
    ({"deletion-vectors.enabled": "yes"}, r"deletion-vectors.enabled: expected true or false, got 'yes'"),
    ({"deletion-vector.index-file.target-size": "big"}, "cannot parse size"),
    # Paimon's SchemaValidation.validateForDeletionVectors (we created such tables before session 34)
    ({"deletion-vectors.enabled": "true", "merge-engine": "first-row"},
     "'merge-engine' = 'first-row' does not need"),
    # pypaimon's own check, a raw ValueError before session 34 (the table here has no primary key)
    ({"changelog-producer": "lookup"}, "table db.t: Cannot set 'changelog-producer' to 'lookup' on a table"),
]
#: Of REFUSED, the option sets Java's catalog refuses too, with its words.
JAVA_REFUSES = [
    ({"deletion-vectors.enabled": "true", "merge-engine": "first-row"},
     "First row merge engine does not need"),
    ({"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"},
     "only supported for NONE/INPUT/LOOKUP changelog producer"),
]


@pytest.mark.parametrize(("options", "message"), REFUSED)
def test_bad_options_are_refused_at_create_and_nothing_is_created(tmp_path: Path, options: dict[str, str],
                                                                 message: str) -> None:
    warehouse = tmp_path / "wh"
    with pytest.raises(InvalidOptionError, match=message):
        create_table(str(warehouse), "db.t", DDL, options=options)
    assert not warehouse.exists()


@needs_java
def test_java_refuses_the_deletion_vector_options_we_refuse(tmp_path: Path) -> None:
    """The same option sets through Java's catalog (the oracle's create): refused there too; a
    table we had created with them Java would refuse to load."""
    for i, (options, java_says) in enumerate(JAVA_REFUSES):
        batch = tmp_path / f"create-{i}.jsonl"
        command = {"cmd": "write", "warehouse": str(tmp_path / f"w{i}"), "table": "db.t", "pk": "id",
                   "schema": "id BIGINT NOT NULL, s STRING", "create-only": "true",
                   "options": ",".join(f"{k}={v}" for k, v in options.items())}
        batch.write_text(json.dumps(command) + "\n")
        out = subprocess.run([str(ORACLE), "batch", "--file", str(batch)], capture_output=True, text=True,
                             check=False, timeout=300, env={**os.environ, "PYTHON": sys.executable,
                                                             "ORACLE_JAVA_OPTS": JAVA_OPTS})
        answers = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        assert answers and java_says in answers[0].get("error", ""), (options, out.stdout[-2000:])
        with pytest.raises(InvalidOptionError):
            create_table(str(tmp_path / f"ours{i}"), "db.t", "id BIGINT NOT NULL, s STRING",
                         primary_keys=["id"], options=options)


def test_refusal_leaves_an_existing_database_untouched(tmp_path: Path) -> None:
    create_table(str(tmp_path), "db.keep", "id BIGINT")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(InvalidOptionError):
        create_table(str(tmp_path), "db.t", DDL, options={"file-index.bloom-filter.column": "id"})
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"partition_keys": ["dt"]}, r"partition key 'dt' is not a column"),
    ({"primary_keys": ["idd"]}, r"primary key 'idd' is not a column; did you mean 'id'\?"),
])
def test_missing_partition_or_primary_keys_are_refused(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        create_table(str(tmp_path / "wh"), "db.t", "id BIGINT NOT NULL, s STRING", **kwargs)
    assert not (tmp_path / "wh").exists()


def test_valid_and_foreign_options_are_kept(tmp_path: Path) -> None:
    """Index options of every type on supported columns, and Paimon options we do not validate."""
    options = {
        "bucket": "-1", "file.format": "parquet", "my.own.setting": "kept as Paimon keeps it",
        "file-index.bloom-filter.columns": "id,code", "file-index.bloom-filter.id.fpp": "0.01",
        "file-index.bloom-filter.id.items": "1000", "file-index.bitmap.columns": "code,flag",
        "file-index.bitmap.code.version": "1", "file-index.bitmap.code.index-block-size": "16kb",
        "file-index.range-bitmap.columns": "price", "file-index.range-bitmap.price.chunk-size": "8kb",
        "file-index.bsi.columns": "id", "file-index.in-manifest-threshold": "1kb",
        "file-index.read.enabled": "true", "deletion-vectors.enabled": "true",
        "deletion-vectors.bitmap64": "false", "deletion-vector.index-file.target-size": "2mb",
    }
    table = create_table(str(tmp_path), "db.t", DDL, options=options)
    stored = table.options.options.to_map()
    assert {k: stored[k] for k in options} == options


def test_the_same_validation_runs_for_arrow_schemas(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("price", pa.decimal128(10, 2))])
    with pytest.raises(InvalidOptionError, match="'bitmap' does not support column 'price'"):
        create_table(str(tmp_path / "wh"), "db.t", schema, options={"file-index.bitmap.columns": "price"})
    assert not (tmp_path / "wh").exists()


# ------------------------------------------------------------------------------------------------
# ALTER
# ------------------------------------------------------------------------------------------------
ALTER_REFUSED = [
    ({"file-index.bloom-filter.column": "id"}, (), r"did you mean 'file-index.bloom-filter.columns'\?"),
    ({"file-index.bitmap.columns": "raw"}, (), r"'bitmap' does not support column 'raw' of type BYTES"),
    ({"file-index.bitmap.columns": "code,missing"}, (), r"the table has no column 'missing'"),
    ({"deletion-vectors.enable": "true"}, (), r"did you mean 'deletion-vectors.enabled'\?"),
    # removing the columns list leaves its per-column option dangling
    ({}, ("file-index.bloom-filter.columns",), r"column 'id' is not declared"),
]


@pytest.mark.parametrize(("set_options", "remove", "message"), ALTER_REFUSED)
def test_bad_alters_are_refused_and_change_nothing(tmp_path: Path, set_options: dict[str, str],
                                                   remove: tuple[str, ...], message: str) -> None:
    create_table(str(tmp_path), "db.t", DDL, options={
        "bucket": "-1", "file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "0.05"})
    schema_dir = tmp_path / "db.db" / "t" / "schema"
    before = (sorted(p.name for p in schema_dir.iterdir()), open_table(str(tmp_path), "db.t").options.options
              .to_map())
    with pytest.raises(InvalidOptionError, match=message):
        alter_table_options(str(tmp_path), "db.t", set_options=set_options, remove=remove)
    after = (sorted(p.name for p in schema_dir.iterdir()), open_table(str(tmp_path), "db.t").options.options
             .to_map())
    assert after == before


# What Paimon's SchemaManager.checkAlterTableOption refuses once a table has snapshots (checked
# against Paimon's connector in tests/sqlref/dml.sql, ``alter_*_refused``).
CHANGE_REFUSED = [
    ("pk", {"deletion-vectors.enabled": "false"}, (), r"switching 'deletion-vectors.enabled'"),
    ("pk", {}, ("deletion-vectors.enabled",), r"switching 'deletion-vectors.enabled'"),
    ("pk", {"merge-engine": "partial-update"}, (), r"'merge-engine' cannot change"),
    ("pk", {"primary-key": "id,v"}, (), r"'primary-key' cannot change"),
    ("pk", {}, ("bucket",), r"'bucket' cannot be reset"),
    ("append", {"bucket": "4"}, (), r"dynamic-bucket table"),
    ("pk", {"bucket": "-1"}, (), r"cannot change to -1"),
    ("pk", {"ignore-delete": "false"}, (), r"'ignore-delete' cannot change from true to false"),
]


def _with_snapshot(tmp_path: Path, kind: str) -> None:
    import paimon_index

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    if kind == "pk":
        table = paimon_index.create_table(str(tmp_path), "db.t", schema, primary_keys=["id"], options={
            "bucket": "2", "deletion-vectors.enabled": "true", "ignore-delete": "true"})
        table.upsert(pa.table({"id": [1, 2], "v": [10, 20]}, schema=schema))
    else:
        table = paimon_index.create_table(str(tmp_path), "db.t", schema, options={"bucket": "-1"})
        table.write(pa.table({"id": [1, 2], "v": [10, 20]}, schema=schema))


@pytest.mark.parametrize(("kind", "set_options", "remove", "message"), CHANGE_REFUSED)
def test_changes_paimon_refuses_on_a_table_with_snapshots(
    tmp_path: Path, kind: str, set_options: dict[str, str], remove: tuple[str, ...], message: str) -> None:
    _with_snapshot(tmp_path, kind)
    before = open_table(str(tmp_path), "db.t").options.options.to_map()
    with pytest.raises(InvalidOptionError, match=message):
        alter_table_options(str(tmp_path), "db.t", set_options=set_options, remove=remove)
    assert open_table(str(tmp_path), "db.t").options.options.to_map() == before


def test_allowed_changes_on_a_table_with_snapshots(tmp_path: Path) -> None:
    """The same key list is no change; the mode switches once the user says it may (Paimon's
    deletion-vectors.modifiable); a fixed bucket count may change; an empty table may change anything."""
    from paimon_index.table.pk import set_deletion_vectors

    _with_snapshot(tmp_path, "pk")
    alter_table_options(str(tmp_path), "db.t", set_options={"primary-key": "id", "bucket": "4"})
    with pytest.raises(InvalidOptionError):  # Paimon reads the permission from the options before
        alter_table_options(str(tmp_path), "db.t", set_options={
            "deletion-vectors.modifiable": "true", "deletion-vectors.enabled": "false"})
    alter_table_options(str(tmp_path), "db.t", set_options={"deletion-vectors.modifiable": "true"})
    table = alter_table_options(str(tmp_path), "db.t", set_options={"deletion-vectors.enabled": "false"})
    assert table.options.options.to_map()["deletion-vectors.enabled"] == "false"
    # set_deletion_vectors checks the full compaction itself (one file per bucket here).
    assert set_deletion_vectors(str(tmp_path), "db.t", True).options.options.to_map()[
        "deletion-vectors.enabled"] == "true"
    create_table(str(tmp_path), "db.empty", "id BIGINT", options={"bucket": "-1"})
    alter_table_options(str(tmp_path), "db.empty", set_options={"bucket": "2", "merge-engine": "deduplicate"})


def test_a_valid_alter_applies(tmp_path: Path) -> None:
    create_table(str(tmp_path), "db.t", DDL,
                 options={"bucket": "-1", "file-index.bloom-filter.columns": "id"})
    table = alter_table_options(str(tmp_path), "db.t", set_options={"file-index.bitmap.columns": "code"},
                                remove=["file-index.bloom-filter.columns"])
    stored = table.options.options.to_map()
    assert stored["file-index.bitmap.columns"] == "code" and "file-index.bloom-filter.columns" not in stored


@needs_java
def test_alter_checks_the_columns_of_a_table_java_created(tmp_path: Path) -> None:
    """Column types come from the schema file Java wrote (its spellings, not ours)."""
    oracle({"cmd": "write", "warehouse": str(tmp_path), "table": "db.j", "create-only": "true",
            "schema": "id BIGINT NOT NULL, amount DECIMAL(10, 2), ts TIMESTAMP(3), s STRING"})
    refused = r"'bitmap' does not support column 'amount' of type DECIMAL\(10, 2\)"
    with pytest.raises(InvalidOptionError, match=refused):
        alter_table_options(str(tmp_path), "db.j", set_options={"file-index.bitmap.columns": "amount"})
    table = alter_table_options(str(tmp_path), "db.j", set_options={
        "file-index.bloom-filter.columns": "id,ts,s", "file-index.range-bitmap.columns": "amount"})
    assert table.options.options.to_map()["file-index.range-bitmap.columns"] == "amount"
    schema, = oracle({"cmd": "schema", "warehouse": str(tmp_path), "table": "db.j"})
    assert schema["options"]["file-index.bloom-filter.columns"] == "id,ts,s"


#: EVERY_TYPE columns whose DDL Spark's own parser accepts (Spark has no BINARY(n), VARBINARY(n),
#: TIMESTAMP(p) or TIMESTAMP_LTZ(p)).
NOT_SPARK = ("BINARY(", "VARBINARY(", "TIMESTAMP(", "TIMESTAMP_LTZ(")
SPARK_PARSABLE = [(n, t) for n, t, _ in EVERY_TYPE if not t.startswith(NOT_SPARK)]


@pytest.mark.spark
def test_our_ddl_parser_agrees_with_spark_s_parser() -> None:
    """Spark's StructType.fromDDL, mapped as Paimon's Spark connector maps Spark types, gives the same
    Paimon types as our Spark-free parser."""
    from pyspark.sql.types import StructType

    from paimon_index.spark.session import local_session
    from paimon_index.table.catalog import schema_fields

    local_session("paimon-index-tests", master="local[2]")  # the run's shared session
    ddl = ", ".join(f"{n} {t}" for n, t in SPARK_PARSABLE) + " COMMENT 'last column'"
    assert schema_fields(StructType.fromDDL(ddl)) == schema_fields(ddl)


@needs_java
def test_indexes_on_ddl_typed_columns_are_built_and_used_by_java(tmp_path: Path) -> None:
    """A table made from DDL (CHAR, VARCHAR(n), TIMESTAMP, DECIMAL) gets every index it accepted on
    write, and Java Paimon's file index evaluator uses them (exact row counts)."""
    from paimon_index.table.read import read_arrow
    from paimon_index.table.write import write_arrow

    ddl = "id BIGINT, code CHAR(4), name VARCHAR(16), at TIMESTAMP, amount DECIMAL(12, 2)"
    table = create_table(str(tmp_path), "db.t", ddl, options={
        "bucket": "-1", "file-index.bitmap.columns": "code", "file-index.bloom-filter.columns": "id,name,at",
        "file-index.range-bitmap.columns": "amount", "file-index.bsi.columns": "id"})
    n = 200
    rows = {"id": list(range(n)), "code": [f"c{i % 5}" for i in range(n)],
            "name": [f"n{i}" for i in range(n)], "at": [TS + dt.timedelta(seconds=i) for i in range(n)],
            "amount": [decimal.Decimal(i) / 4 for i in range(n)]}
    write_arrow(table, pa.Table.from_pydict(rows, schema=arrow_schema(ddl)))
    # 10.00, not 10: an integer literal on a DECIMAL column is taken as the unscaled value by
    # types.canonical_literal (0.10 here) -- reported to the owner of literal conversion.
    ours, _ = read_arrow(open_table(str(tmp_path), "db.t"), "code = 'c3' AND amount >= 10.00")
    assert sorted(ours.column("id").to_pylist()) == [i for i in range(n) if i % 5 == 3 and i >= 40]
    java, = oracle({"cmd": "read", "warehouse": str(tmp_path), "table": "db.t",
                    "where": "code = 'c3' AND amount >= 10.00", "per-file": "true"})
    assert java["rows"] == ours.num_rows == 32
    # Java's FileIndexEvaluator reads our bitmap (CHAR) and range bitmap (DECIMAL) to the exact rows.
    assert [f["index_verdict"] for f in java["per_file"]] == ["ROWS 32"]


@pytest.mark.parametrize(("key", "nearest"), [
    ("fs.s3.endpiont", "fs.s3.endpoint"),            # a typo under a file-system family
    ("fs.s3.accesskeyid", "fs.s3.accessKeyId"),      # pypaimon matches keys with case
    ("fs.oss.endpont", "fs.oss.endpoint"),
    ("metastre", "metastore"),                       # within a typo of a catalog key
])
def test_misspelt_catalog_option_names_the_nearest_key(tmp_path: Path, key: str, nearest: str) -> None:
    with pytest.raises(InvalidOptionError, match=f"{key}.*did you mean '{nearest}'"):
        create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64())]), catalog_options={key: "x"})
    assert not any(tmp_path.iterdir())  # refused before the catalog touched the warehouse


def test_catalog_options_pypaimon_reads_are_accepted(tmp_path: Path) -> None:
    options = {"fs.s3.path-style-access": "true", "s3.endpoint": "http://h",
               "fs.viewfs.mounttable.c.link./a": "x", "my-connector.setting": "kept",
               "fs.allow-non-atomic-commit": "false"}
    table = create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64())]), catalog_options=options)
    assert table.file_io.properties.to_map()["my-connector.setting"] == "kept"
