"""The vectorized key-value write (``table/paimon.py::vectorize_key_value_write``) against pypaimon's
own per-row code and Java Paimon: the same bucket for every key, the same rows in the files."""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from javaoracle import java_oracle
from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.pk import upsert_arrow
from paimon_index.table.write import new_table_write

BUCKETS = 7
ROWS = 3000


def _key_column(arrow_type: pa.DataType, rng: np.random.Generator) -> pa.Array:
    if pa.types.is_boolean(arrow_type):
        return pa.array(rng.integers(0, 2, ROWS).astype(bool))
    if pa.types.is_integer(arrow_type):
        info = np.iinfo(arrow_type.to_pandas_dtype())
        values = rng.integers(info.min, info.max, ROWS, dtype=np.int64, endpoint=True)
        values[:4] = [info.min, info.max, 0, -1]
        return pa.array(values, arrow_type)
    if pa.types.is_floating(arrow_type):
        values = rng.normal(0, 1e6, ROWS)
        values[:3] = [0.0, -0.0, 1e300]
        return pa.array(values).cast(arrow_type)
    if pa.types.is_date32(arrow_type):
        return pa.array(rng.integers(-100_000, 100_000, ROWS).astype(np.int32)).cast(pa.date32())
    if pa.types.is_decimal(arrow_type):
        cents = rng.integers(-10**8, 10**8, ROWS)
        return pa.array([decimal.Decimal(int(c)).scaleb(-arrow_type.scale) for c in cents], arrow_type)
    if pa.types.is_timestamp(arrow_type):
        return pa.array(rng.integers(-10**15, 10**15, ROWS), pa.int64()).cast(arrow_type)
    lengths = rng.integers(0, 40, ROWS)  # inline (< 8 bytes) and variable-part strings
    words = ["".join(chr(97 + int(c)) for c in rng.integers(0, 26, n)) + "é" * (n % 3) for n in lengths]
    return pa.array([w.encode() for w in words] if pa.types.is_binary(arrow_type) else words, arrow_type)


KEY_TYPES = {
    "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64(),
    "boolean": pa.bool_(), "float": pa.float32(), "double": pa.float64(), "date": pa.date32(),
    "decimal-compact": pa.decimal128(10, 2), "decimal-wide": pa.decimal128(30, 4),
    "timestamp": pa.timestamp("us"), "string": pa.string(), "bytes": pa.binary(),
}


def _buckets(writer, batch: pa.RecordBatch) -> list[int]:
    return list(writer.row_key_extractor.extract_partition_bucket_batch(batch)[1])


@pytest.mark.parametrize("name", list(KEY_TYPES))
def test_buckets_equal_pypaimons_per_row_hash(tmp_path: Path, name: str) -> None:
    """Every key type: our vectorized bucket of each row equals pypaimon's per-row BinaryRow hash."""
    rng = np.random.default_rng(len(name))
    schema = pa.schema([pa.field("k", KEY_TYPES[name], nullable=False),
                        pa.field("j", pa.int32(), nullable=False), ("v", pa.string())])
    table = create_table(str(tmp_path), "db.t", schema, primary_keys=["k", "j"],
                         options={"bucket": str(BUCKETS), "deletion-vectors.enabled": "true"})
    batch = pa.record_batch([_key_column(KEY_TYPES[name], rng),
                             pa.array(rng.integers(-9, 9, ROWS), pa.int32()),
                             pa.array(["x"] * ROWS)], schema=schema)
    ours = new_table_write(table)
    theirs = table.new_batch_write_builder().new_write()
    try:
        assert _buckets(ours, batch) == _buckets(theirs, batch)
    finally:
        ours.close()
        theirs.close()


def test_a_bucket_key_apart_from_the_primary_key(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string(), nullable=False),
                        ("v", pa.int64())])
    table = create_table(str(tmp_path), "db.t", schema, primary_keys=["a", "b"],
                         options={"bucket": "5", "bucket-key": "b", "deletion-vectors.enabled": "true"})
    batch = pa.record_batch([pa.array(range(500)), pa.array([f"s{i % 37}" for i in range(500)]),
                             pa.array(range(500))], schema=schema)
    ours, theirs = new_table_write(table), table.new_batch_write_builder().new_write()
    try:
        buckets = _buckets(ours, batch)
        assert buckets == _buckets(theirs, batch)
        assert len(set(buckets)) > 1
    finally:
        ours.close()
        theirs.close()


def _file_rows(table, messages) -> pa.Table:
    parts = [pq.read_table(f.file_path) for m in messages for f in m.new_files]
    return pa.concat_tables(parts).sort_by([("_KEY_k", "ascending"), ("_SEQUENCE_NUMBER", "ascending")])


@pytest.mark.parametrize("repeat", [False, True], ids=["distinct-keys", "repeated-keys"])
def test_files_hold_what_pypaimons_writer_writes(tmp_path: Path, repeat: bool) -> None:
    """Distinct keys skip pypaimon's per-row fold; repeated keys still go through it (the last row
    wins): either way the files hold exactly the rows pypaimon's own writer writes."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                        ("d", pa.decimal128(12, 3)), ("t", pa.timestamp("us"))])
    keys = np.arange(2000) % (700 if repeat else 2000)
    data = pa.table({"k": keys, "v": [f"v{i}" for i in range(2000)],
                     "d": [decimal.Decimal(i).scaleb(-3) for i in range(2000)],
                     "t": pa.array(np.arange(2000) * 1_000_003, pa.int64()).cast(pa.timestamp("us"))},
                    schema=schema)
    table = create_table(str(tmp_path), "db.t", schema, primary_keys=["k"], options={"bucket": "3"})
    written = []
    for writer in (new_table_write(table), table.new_batch_write_builder().new_write()):
        try:
            writer.write_arrow(data)
            written.append(_file_rows(table, writer.prepare_commit()))
        finally:
            writer.close()
    ours, theirs = written
    assert ours.num_rows == (700 if repeat else 2000)
    assert ours.equals(theirs)


def test_java_finds_one_row_per_key_after_we_upsert_its_keys(tmp_path: Path) -> None:
    """Java Paimon writes keys of several types; our upsert of the same keys must land in the same
    buckets (else Java's merge-free read sees each key twice)."""
    warehouse = str(tmp_path)
    ddl = ("i INT NOT NULL, s STRING NOT NULL, d DATE NOT NULL, m DECIMAL(10,2) NOT NULL, "
           "b BIGINT NOT NULL, tag STRING")
    rows = [{"i": i * 7919 - 50_000, "s": "key" * (i % 5) + str(i),
             "d": f"20{10 + i % 20}-0{1 + i % 9}-1{i % 10}", "m": f"{i * 13 - 900}.{i % 100:02d}",
             "b": -i * 10**12, "tag": "java"} for i in range(300)]
    path = tmp_path / "java.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    oracle = java_oracle()
    oracle.run("write", "--warehouse", warehouse, "--table", "db.t", "--schema", ddl, "--pk", "i,s,d,m,b",
               "--options", "bucket=5,deletion-vectors.enabled=true", "--jsonl", str(path))
    table = open_table(warehouse, "db.t")
    ours = pa.Table.from_pylist([{**r, "d": datetime.date.fromisoformat(r["d"]), "m": decimal.Decimal(r["m"]),
                                  "tag": "ours"} for r in rows], table_schema(table))
    snapshot = upsert_arrow(table, ours)
    got = oracle.run("read", "--warehouse", warehouse, "--table", "db.t", "--snapshot", str(snapshot),
                     "--rows")["row_values"]
    assert len(got) == len(rows)
    assert {r[-1] for r in got} == {"ours"}


def table_schema(table) -> pa.Schema:
    from paimon_index.table.pk.plan import arrow_fields

    return pa.schema(arrow_fields(table))


def test_the_buckets_spark_tasks_assign_equal_pypaimons(tmp_path: Path) -> None:
    """``bucket_of_rows``, ``buckets_of`` (the upsert job's routing of rows to tasks) and
    ``bucket_groups`` (a task's rows per bucket) on a partitioned table: pypaimon's own answer."""
    from paimon_index.table.pk import bucket_of_rows, buckets_of
    from paimon_index.table.pk.upsert import bucket_groups

    schema = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                        ("v", pa.string())])
    table = create_table(str(tmp_path), "db.t", schema, primary_keys=["p", "k"], partition_keys=["p"],
                         options={"bucket": "4", "deletion-vectors.enabled": "true"})
    rows = pa.table({"p": [f"p{i % 3}" for i in range(900)], "k": range(-450, 450), "v": ["x"] * 900},
                    schema=schema)
    extractor = table.create_row_key_extractor()
    partitions, buckets = extractor.extract_partition_bucket_batch(rows.to_batches()[0])
    assert bucket_of_rows(table, rows) == ([tuple(p) for p in partitions], list(buckets))
    assert buckets_of(table, rows).to_pylist() == list(buckets)
    groups = {key: sorted(idx.to_pylist()) for key, idx in bucket_groups(table, rows)}
    want: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip((tuple(p) for p in partitions), buckets, strict=True)):
        want.setdefault(key, []).append(i)
    assert groups == want


def test_keys_of_several_strings_hash_as_pypaimon(tmp_path: Path) -> None:
    """Two string fields around an int: the variable part holds both long values, in field order."""
    rng = np.random.default_rng(3)
    schema = pa.schema([pa.field("a", pa.string(), nullable=False), pa.field("n", pa.int64(), nullable=False),
                        pa.field("b", pa.string(), nullable=False), ("v", pa.string())])
    table = create_table(str(tmp_path), "db.t", schema, primary_keys=["a", "n", "b"],
                         options={"bucket": str(BUCKETS), "deletion-vectors.enabled": "true"})
    a, b = _key_column(pa.string(), rng), _key_column(pa.string(), rng)
    batch = pa.record_batch([a, pa.array(rng.integers(-10**12, 10**12, ROWS)), b, pa.array(["x"] * ROWS)],
                            schema=schema)
    ours, theirs = new_table_write(table), table.new_batch_write_builder().new_write()
    try:
        assert _buckets(ours, batch) == _buckets(theirs, batch)
    finally:
        ours.close()
        theirs.close()


# -- a failed key-value write leaves no file ------------------------------------------------------
def _data_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("data-*"))


@pytest.mark.parametrize("mode", ["dv", "merge-on-read"])
def test_a_key_value_write_that_fails_after_its_files_leaves_none(tmp_path: Path, mode: str) -> None:
    """The file index is built after pypaimon wrote the data file: a value too large for its bitmap
    block fails there, and the data files already written must go (the upsert's, a bucket
    rewrite's, a merge-on-read change's writer). They were left behind before."""
    import paimon_index
    from paimon_index.errors import InvalidOptionError
    from paimon_index.table.pk.levels import write_at, write_rows
    from paimon_index.table.pk.merge_on_read import LATEST, write_changes

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    options = {"bucket": "1", "file-index.bitmap.columns": "s", "file-index.bitmap.s.index-block-size": "64"}
    if mode == "dv":
        options["deletion-vectors.enabled"] = "true"
    table = paimon_index.create_table(str(tmp_path), "d.t", schema, primary_keys=["id"], options=options)
    paimon = table.paimon_table
    rows = pa.table({"id": [1, 2], "s": ["x" * 1000, "y"]}, schema)
    writes = [lambda: table.upsert(rows)]
    if mode == "dv":
        writes += [lambda: write_rows(paimon, rows), lambda: write_at(paimon, rows, (), 0)]
    else:
        writes += [lambda: write_changes(paimon, rows, planned=LATEST, kind="+I", operation="upsert")]
    for write in writes:
        with pytest.raises(InvalidOptionError, match="index-block-size"):
            write()
        assert _data_files(tmp_path) == []
    assert table.count() == 0
