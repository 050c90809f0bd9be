"""Dynamic-bucket HASH index files and key hashes, checked against pypaimon's implementation."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypaimon.index.dynamic_bucket import to_signed_int32
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.write.row_key_extractor import RowKeyExtractor, _hash_bytes_by_words

from paimon_index.binary import BytesSource
from paimon_index.bucket.hash_index import (
    HASH_INDEX,
    binary_row_hash,
    hash_index_meta,
    key_hashes,
    read_hash_index,
    serialize_hash_index,
    write_hash_index,
)
from paimon_index.deletionvectors.index_file import local_write
from paimon_index.errors import CorruptFileError


def pypaimon_key_hashes(table: pa.Table, fields: list[DataField]) -> list[int]:
    return [to_signed_int32(RowKeyExtractor._binary_row_hash_code(tuple(row[f.name] for f in fields), fields))
            for row in table.to_pylist()]


# -- the file ------------------------------------------------------------------------------------
def test_file_is_distinct_big_endian_ints() -> None:
    data = serialize_hash_index([5, -1, 5, 2**31 - 1, -(2**31)])
    assert data == bytes.fromhex("80000000 ffffffff 00000005 7fffffff")
    assert read_hash_index(data).tolist() == [-(2**31), -1, 5, 2**31 - 1]
    # Unsigned 32-bit hashes (as pypaimon's murmur returns them) are stored as Java ints.
    assert serialize_hash_index(np.array([0xFFFFFFFF], dtype=np.uint32)) == b"\xff\xff\xff\xff"
    assert serialize_hash_index([0xFFFFFFFF]) == b"\xff\xff\xff\xff"
    assert serialize_hash_index([]) == b"" and read_hash_index(b"").tolist() == []
    with pytest.raises(TypeError, match="integers"):
        serialize_hash_index([1.5])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=200))
def test_round_trip_is_the_set_of_hashes(hashes: list[int]) -> None:
    data = serialize_hash_index(hashes)
    assert read_hash_index(data).tolist() == sorted(set(hashes))
    assert hash_index_meta("index-x-0", data).row_count == len(set(hashes))


def test_write_to_directory(tmp_path: Path) -> None:
    meta = write_hash_index(tmp_path, [3, 1, 2], write=local_write, name_factory=lambda: "index-h-0")
    assert (meta.index_type, meta.file_name) == (HASH_INDEX, "index-h-0")
    assert (meta.file_size, meta.row_count) == (12, 3)
    assert meta.dv_ranges is None
    assert read_hash_index(tmp_path / "index-h-0").tolist() == [1, 2, 3]


def test_size_not_a_multiple_of_four_is_corrupt() -> None:
    with pytest.raises(CorruptFileError, match=r"h@8: hash index size: size 10 is not a multiple of 4"):
        read_hash_index(BytesSource(bytes(10), "h"))
    for n in range(1, 12):
        if n % 4:
            with pytest.raises(CorruptFileError):
                read_hash_index(bytes(n))


# -- the hash ------------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=40).map(lambda b: b[: len(b) - len(b) % 4]), max_size=30))
def test_binary_row_hash_is_paimons_murmur(rows: list[bytes]) -> None:
    expected = [to_signed_int32(_hash_bytes_by_words(r)) for r in rows]
    assert binary_row_hash(rows).tolist() == expected


def test_binary_row_hash_rejects_unaligned_rows() -> None:
    with pytest.raises(ValueError, match="whole number of 4-byte words"):
        binary_row_hash([b"abc"])


FIXED_FIELDS = [
    DataField(0, "i", AtomicType("INT")), DataField(1, "b", AtomicType("BIGINT")),
    DataField(2, "d", AtomicType("DOUBLE")), DataField(3, "z", AtomicType("BOOLEAN")),
    DataField(4, "dt", AtomicType("DATE")), DataField(5, "s", AtomicType("SMALLINT")),
    DataField(6, "t", AtomicType("TINYINT")), DataField(7, "f", AtomicType("FLOAT")),
]
ARROW_TYPES = [pa.int32(), pa.int64(), pa.float64(), pa.bool_(), pa.date32(), pa.int16(), pa.int8(),
               pa.float32()]
VALUES = [
    st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, width=64), st.booleans(),
    st.dates(datetime.date(1900, 1, 1), datetime.date(2200, 1, 1)), st.integers(-(2**15), 2**15 - 1),
    st.integers(-128, 127), st.floats(allow_nan=False, width=32),
]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fixed_width_key_hashes_match_pypaimon(data: st.DataObject) -> None:
    chosen = data.draw(st.lists(st.integers(0, len(FIXED_FIELDS) - 1), min_size=1, max_size=4, unique=True))
    rows = data.draw(st.integers(0, 12))
    fields = [DataField(i, FIXED_FIELDS[c].name, FIXED_FIELDS[c].type) for i, c in enumerate(chosen)]
    columns = {FIXED_FIELDS[c].name: pa.array([data.draw(st.none() | VALUES[c]) for _ in range(rows)],
                                               ARROW_TYPES[c]) for c in chosen}
    table = pa.table(columns)
    assert key_hashes(table, fields).tolist() == pypaimon_key_hashes(table, fields)
    assert key_hashes(table.to_batches()[0] if table.num_rows else table, fields).tolist() == \
        pypaimon_key_hashes(table, fields)


def test_other_key_types_match_pypaimon() -> None:
    fields = [DataField(0, "name", AtomicType("STRING")),
              DataField(1, "amount", AtomicType("DECIMAL(10, 2)")),
              DataField(2, "ts", AtomicType("TIMESTAMP(3)")), DataField(3, "id", AtomicType("BIGINT"))]
    table = pa.table({
        "name": ["short", "a string longer than seven bytes", None, "", "é"],
        "amount": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.00"), decimal.Decimal("0"),
                            decimal.Decimal("99999999.99")], pa.decimal128(10, 2)),
        "ts": pa.array([datetime.datetime(2024, 1, 1, 12, 0, 0, 123000), None, datetime.datetime(1970, 1, 1),
                        datetime.datetime(1999, 12, 31, 23, 59, 59), datetime.datetime(2038, 1, 19)],
                       pa.timestamp("ms")),
        "id": pa.array([1, 2, None, -4, 2**40], pa.int64()),
    })
    assert key_hashes(table, fields).tolist() == pypaimon_key_hashes(table, fields)
    chunked = pa.concat_tables([table.slice(0, 2), table.slice(2)])
    assert key_hashes(chunked, fields).tolist() == pypaimon_key_hashes(table, fields)


# -- against a table pypaimon wrote --------------------------------------------------------------
def test_hash_index_of_a_pypaimon_dynamic_bucket_table(tmp_path: Path) -> None:
    from pypaimon import CatalogFactory, Schema
    from pypaimon.index.index_file_handler import IndexFileHandler

    catalog = CatalogFactory.create({"warehouse": str(tmp_path / "warehouse")})
    catalog.create_database("db", False)
    arrow_schema = pa.schema([pa.field("pt", pa.string(), nullable=False),
                              pa.field("id", pa.int64(), nullable=False),
                              pa.field("name", pa.string()), pa.field("v", pa.int32())])
    schema = Schema.from_pyarrow_schema(arrow_schema, partition_keys=["pt"],
                                        primary_keys=["pt", "id", "name"],
                                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "4"})
    catalog.create_table("db.t", schema, False)
    table = catalog.get_table("db.t")
    rows = pa.table({"pt": ["a"] * 9 + ["b"] * 3, "id": list(range(12)),
                     "name": [f"name-{i}" * (i % 3) for i in range(12)], "v": list(range(12))},
                    schema=arrow_schema)
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(rows)
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()

    key_fields = table.table_schema.logical_bucket_key_fields
    assert [f.name for f in key_fields] == ["id", "name"]  # trimmed primary key
    expected = dict(zip(zip(rows["pt"].to_pylist(), key_hashes(rows, key_fields).tolist(), strict=True),
                        range(12), strict=True))
    entries = [e for e in IndexFileHandler(table).scan(None) if e.index_file.index_type == HASH_INDEX]
    assert len(entries) >= 3
    found = set()
    for entry in entries:
        (partition,) = entry.partition.values
        path = tmp_path / "warehouse" / "db.db" / "t" / "index" / entry.index_file.file_name
        data = path.read_bytes()
        hashes = read_hash_index(path).tolist()
        assert len(hashes) == entry.index_file.row_count and len(data) == entry.index_file.file_size
        assert serialize_hash_index(hashes) == data  # pypaimon also writes them distinct and ascending
        found.update((partition, h) for h in hashes)
    assert found == set(expected)
    # Bucket by bucket: the keys stored in a bucket's data files are exactly its index's hashes.
    index_of = {(e.partition.values[0], e.bucket): set(read_hash_index(
        tmp_path / "warehouse" / "db.db" / "t" / "index" / e.index_file.file_name).tolist()) for e in entries}
    read_builder = table.new_read_builder()
    for split in read_builder.new_scan().plan().splits():
        stored = read_builder.new_read().to_arrow([split])
        (partition,) = set(stored["pt"].to_pylist())
        assert set(key_hashes(stored, key_fields).tolist()) == index_of[(partition, split.bucket)]


def test_key_columns_are_cast_to_the_key_type_first() -> None:
    fields = [DataField(0, "a", AtomicType("INT")), DataField(1, "d", AtomicType("DOUBLE"))]
    narrow = pa.table({"a": pa.array([1, None, -7], pa.int32()), "d": pa.array([0.5, 2.0, None])})
    wide = pa.table({"a": pa.array([1, None, -7], pa.int64()), "d": pa.array([0.5, 2, None], pa.float32())})
    assert key_hashes(wide, fields).tolist() == key_hashes(narrow, fields).tolist()
    with pytest.raises(pa.ArrowInvalid, match="not in range"):
        key_hashes(pa.table({"a": pa.array([2**40]), "d": pa.array([1.0])}), fields)
