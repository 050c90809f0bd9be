"""Writing Paimon tables with file indexes, through pypaimon, on a real local warehouse."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pypaimon import CatalogFactory, Schema

from paimon_index.errors import InvalidOptionError
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader
from paimon_index.fileindex.result import Rows
from paimon_index.predicate import Leaf, Op
from paimon_index.table.schemas import read_schema
from paimon_index.table.write import INDEX_FILE_SUFFIX, write_arrow

OPTIONS = {
    "bucket": "-1",
    "file-index.bitmap.columns": "status",
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": "1000",
    "file-index.in-manifest-threshold": "2kb",
}


def make_table(warehouse: Path, data: pa.Table, options: dict[str, str]):
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    catalog.create_table("db.orders", Schema.from_pyarrow_schema(data.schema, options=options), False)
    return catalog.get_table("db.orders")


def orders(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    statuses = np.array(["NEW", "PAID", "SHIPPED", None], dtype=object)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64) + seed * 1_000_000),
        "status": pa.array(statuses[rng.integers(0, 4, n)], pa.string()),
    })


def data_files(table) -> list:
    splits = table.new_read_builder().new_scan().plan().splits()
    return [f for split in splits for f in split.files]


def test_small_containers_are_embedded_large_ones_written_beside_the_file(tmp_path: Path) -> None:
    small, large = orders(20, 1), orders(20_000, 2)
    table = make_table(tmp_path, small, OPTIONS)
    first = write_arrow(table, small)
    second = write_arrow(table, large)
    assert (first, second) == (1, 2)  # one snapshot per write

    files = {f.row_count: f for f in data_files(table)}
    embedded, beside = files[20], files[20_000]
    assert embedded.embedded_index and not embedded.extra_files
    assert beside.embedded_index is None and beside.extra_files == [beside.file_name + INDEX_FILE_SUFFIX]
    index_path = Path(beside.file_path).with_name(beside.extra_files[0])
    assert index_path.stat().st_size > 2048

    schema = read_schema(table)
    for meta, source, rows in ((embedded, embedded.embedded_index, small), (beside, index_path, large)):
        assert pq.read_table(meta.file_path).equals(rows)  # pypaimon kept our row order
        with ContainerReader(source) as container:
            evaluator = FileIndexEvaluator(container, schema)
            for status in ("PAID", "NEW"):
                got = evaluator.evaluate(Leaf(Op.EQ, "status", (status.encode(),)))
                want = np.flatnonzero(pc.equal(rows.column("status"), status).fill_null(False).to_numpy())
                assert isinstance(got, Rows) and list(got.bitmap) == want.tolist()
            if meta is embedded:  # 20 ids in a filter sized for 1,000 (the large file saturates it)
                assert not evaluator.evaluate(Leaf(Op.EQ, "id", (-5,))).remain
            assert evaluator.evaluate(Leaf(Op.EQ, "id", (int(rows.column("id")[3].as_py()),))).remain

    reader = table.new_read_builder()
    everything = reader.new_read().to_arrow(reader.new_scan().plan().splits())
    assert everything.num_rows == 20_020  # pypaimon still reads the table as before


def test_a_failed_write_commits_nothing(tmp_path: Path) -> None:
    data = orders(100, 3)
    table = make_table(tmp_path, data, {**OPTIONS, "file-index.bitmap.columns": "status,missing"})
    with pytest.raises(InvalidOptionError, match="column 'missing' does not exist"):
        write_arrow(table, data)
    assert table.snapshot_manager().get_latest_snapshot() is None
    assert data_files(table) == []


def test_file_index_listing_and_a_partitioned_table(tmp_path: Path) -> None:
    from paimon_index.table.read import read_arrow
    from paimon_index.table.system import FILE_INDEXES_SCHEMA, file_indexes

    data = orders(3_000, 4).append_column("dt", pa.array(["2024-01-01", "2024-01-02", "2024-01-03"] * 1_000))
    catalog = CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    schema = Schema.from_pyarrow_schema(data.schema, partition_keys=["dt"], options=OPTIONS)
    catalog.create_table("db.parts", schema, False)
    table = catalog.get_table("db.parts")
    write_arrow(table, data)

    listing = file_indexes(table)
    assert listing.schema == FILE_INDEXES_SCHEMA
    assert listing.num_rows == 3 * 2  # three partitions, two indexes each
    assert sorted(set(listing.column("partition").to_pylist())) == [
        "dt=2024-01-01", "dt=2024-01-02", "dt=2024-01-03"]
    assert set(listing.column("index_type").to_pylist()) == {"bitmap", "bloom-filter"}
    for storage, index_path in zip(listing.column("storage").to_pylist(),
                                   listing.column("index_path").to_pylist(), strict=True):
        assert (storage == "FILE") == (index_path is not None)
        assert index_path is None or Path(index_path).is_file()
    assert set(listing.column("record_count").to_pylist()) == {1_000}

    rows, report = read_arrow(table, "status = 'PAID' AND dt = '2024-01-02'")
    expected = data.filter(pc.and_(pc.equal(data.column("status"), "PAID"),
                                   pc.equal(data.column("dt"), "2024-01-02")))
    assert sorted(rows.column("id").to_pylist()) == sorted(expected.column("id").to_pylist())
    assert report.files_planned + report.files_skipped_by_stats == 3  # stats skip the other dt files


def test_an_index_built_in_memory_is_used_only_for_a_file_holding_exactly_those_rows(tmp_path: Path) -> None:
    """write_arrow builds the container while pypaimon writes; the file's rows decide if it is used."""
    from paimon_index.fileindex.builder import build_file_index
    from paimon_index.fileindex.options import FileIndexOptions
    from paimon_index.table.fileio import TableIO
    from paimon_index.table.files import container_source
    from paimon_index.table.write import attach_file_indexes, file_container

    data = orders(3_000, 4)
    table = make_table(tmp_path, data, {**OPTIONS, "file-index.in-manifest-threshold": "1 mb"})
    write_arrow(table, data)
    options = FileIndexOptions.from_table_options(OPTIONS)
    schema = read_schema(table)
    (meta,) = [m for s in table.new_read_builder().new_scan().plan().splits() for m in s.files]
    io = TableIO.of(table)
    assert bytes(meta.embedded_index) == file_container(meta, options, schema, io=io)  # same bytes either way

    # Rows in another order than the file's: the prebuilt container must be ignored.
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(data)
    messages = writer.prepare_commit()
    writer.close()
    shuffled = data.take(pa.array(np.random.default_rng(1).permutation(data.num_rows)))
    bogus = build_file_index(shuffled, options, schema)
    attach_file_indexes(table, messages, options, prebuilt=(shuffled, bogus))
    (new,) = messages[0].new_files
    source = container_source(new)
    stored = Path(source).read_bytes() if isinstance(source, str) else source
    assert stored == file_container(new, options, schema, io=io) != bogus


def _row_groups(table) -> list[int]:
    return sorted(pq.ParquetFile(f.file_path).metadata.num_row_groups for f in data_files(table))


def test_row_groups_follow_the_block_size_and_java_reads_them_with_their_statistics(tmp_path: Path) -> None:
    from javaoracle import java_oracle
    from paimon_index.table.catalog import create_table

    data = orders(40_000, 3)
    sized = create_table(str(tmp_path), "db.sized", data.schema, options={
        **OPTIONS, "file.block-size": "64kb", "parquet.block.size": str(2**30)})  # file.block-size wins
    plain = create_table(str(tmp_path), "db.plain", data.schema, options=OPTIONS)
    for table in (sized, plain):
        write_arrow(table, data.slice(0, 20_000))
        write_arrow(table, data.slice(20_000))  # a second file: ids above the first file's
    # ~17 bytes a row in Arrow -> 64 KiB hold ~4,000 rows (the minimum row group is 4,096 rows)
    assert _row_groups(sized) == [5, 5]
    assert _row_groups(plain) == [1, 1]  # the 4 MiB default: one group for such small files
    one = int(data.column("id")[25_000].as_py())
    whole, point = java_oracle().batch([
        {"cmd": "read", "warehouse": str(tmp_path), "table": "db.sized"},
        {"cmd": "read", "warehouse": str(tmp_path), "table": "db.sized", "where": f"id = {one}",
         "index": "off", "rows": "true"}])
    assert whole["rows"] == data.num_rows
    assert [row[0] for row in point["row_values"]] == [one]
    # Java planned one file: the other's value statistics (written by us) rule it out.
    assert point["data_files_planned"] == 1


def _dictionary_encoded(warehouse: Path, table: str) -> dict[str, bool]:
    """Per column of a table's (one) data file: does its first row group have a dictionary page."""
    (path,) = [p for p in (warehouse / "db.db" / table).rglob("data-*.parquet")]
    group = pq.ParquetFile(path).metadata.row_group(0)
    columns = [group.column(i) for i in range(group.num_columns)]
    return {c.path_in_schema: c.has_dictionary_page for c in columns}


def _layout_rows(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),                          # unique
        "status": pa.array(np.array(["NEW", "PAID", "SHIPPED"])[rng.integers(0, 3, n)]),  # 3 values
        "amount": pa.array(rng.integers(0, 10_001, n) / 100.0),                # ~10,000 doubles
        "customer": pa.array(rng.integers(0, 100_000, n), pa.int64()),         # most values once
        "note": pa.array([f"note number {i % 9_973}" for i in range(n)]),      # ~10,000 strings
        "flag": pa.array(rng.integers(0, 2, n) == 1),                          # booleans
        "code": pa.array(rng.integers(0, 50, n), pa.int32()),                   # 50 ints
    })


def test_dictionaries_where_javas_writer_would_use_them(tmp_path: Path) -> None:
    """Each column is dictionary-encoded exactly when Java's Parquet writer, given the same rows,
    dictionary-encodes it (pyarrow alone would dictionary-encode every column until its dictionary
    fills, then fall back to plain pages in the same chunk: slow for Spark's vectorized reader)."""
    import json

    from javaoracle import java_oracle
    from paimon_index.table.catalog import create_table

    data = _layout_rows(30_000)
    ours = create_table(str(tmp_path), "db.ours", data.schema, options={"bucket": "-1"})
    write_arrow(ours, data)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in data.to_pylist()))
    java_oracle().batch([{"cmd": "write", "warehouse": str(tmp_path), "table": "db.java", "jsonl": str(rows),
                          "schema": "id BIGINT, status STRING, amount DOUBLE, customer BIGINT, note STRING, "
                                    "flag BOOLEAN, code INT", "options": "bucket=-1"}])
    java = _dictionary_encoded(tmp_path, "java")
    assert java == {"id": False, "status": True, "amount": True, "customer": False, "note": True,
                    "flag": False, "code": True}  # the reference itself, so a Java change shows here
    assert _dictionary_encoded(tmp_path, "ours") == java
    assert ours.new_read_builder().new_read().to_arrow(
        ours.new_read_builder().new_scan().plan().splits()).sort_by("id").equals(data)


def test_dictionary_options_are_honoured(tmp_path: Path) -> None:
    from paimon_index.table.catalog import create_table

    # 15,000 distinct 100-byte strings, each twice: a dictionary pays (ids are 2 bytes a row against
    # 104 plain), and it reaches 1.5 MB: past Java's 1 MiB page limit, and far past 64 KiB.
    n = 30_000
    data = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                     "text": pa.array([f"{i % 15_000:0100d}" for i in range(n)])})

    def dictionary_bytes(table) -> int:
        total = 0
        for f in data_files(table):
            meta = pq.ParquetFile(f.file_path).metadata
            for g in range(meta.num_row_groups):
                column = meta.row_group(g).column(1)
                if column.has_dictionary_page:
                    total += column.data_page_offset - column.dictionary_page_offset
        return total

    tables = {}
    for name, extra in {"default": {}, "small": {"parquet.dictionary.page.size": str(64 * 1024)},
                        "off": {"parquet.enable.dictionary": "FALSE"}}.items():
        tables[name] = create_table(str(tmp_path), f"db.{name}", data.schema,
                                    options={"bucket": "-1", "file.block-size": "64mb", **extra})
        write_arrow(tables[name], data)
    assert dictionary_bytes(tables["off"]) == 0
    assert 0 < 4 * dictionary_bytes(tables["small"]) < dictionary_bytes(tables["default"])
    for table in tables.values():
        assert table.new_read_builder().new_read().to_arrow(
            table.new_read_builder().new_scan().plan().splits()).sort_by("id").equals(data)


@pytest.mark.parametrize("options, message", [
    ({"file.block-size": "12 parsecs"}, "file.block-size: cannot parse size"),
    ({"parquet.block.size": "128mb"}, "parquet.block.size: expected an integer"),
    ({"parquet.block.size": "0"}, r"parquet.block.size: 0 outside"),
    ({"parquet.dictionary.page.size": "64kb"}, "parquet.dictionary.page.size: expected an integer"),
    ({"parquet.enable.dictionary": "yes"}, "parquet.enable.dictionary: expected true or false"),
])
def test_a_bad_block_size_is_refused_at_create(tmp_path: Path, options: dict[str, str], message: str) -> None:
    from paimon_index.table.catalog import create_table

    with pytest.raises(InvalidOptionError, match=message):
        create_table(str(tmp_path), "db.t", orders(1, 1).schema, options=options)


def test_a_partition_with_a_null_value_is_written_again_and_compacted(tmp_path: Path) -> None:
    """A fixed-bucket append table restores each bucket's last sequence number before it writes.
    pypaimon found a partition's files by ``key = value``: for a NULL partition value the second
    write raised a raw ``TypeError`` against the manifests' partition statistics (and
    ``CALL sys.compact`` of such a table failed in its tasks). Java Paimon writes the first rows and
    reads the result."""
    import datetime as dt
    import json

    import paimon_index
    from javaoracle import java_oracle

    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("d", pa.date32())])
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps(r) for r in [
        {"id": 1, "s": "a", "d": "2024-01-02"}, {"id": 2, "s": None, "d": None},
        {"id": 3, "s": "c", "d": None}]))
    warehouse = str(tmp_path / "w")
    java_oracle().batch([{"cmd": "write", "warehouse": warehouse, "table": "db.m",
                          "schema": "id BIGINT, s STRING, d DATE", "partition": "d",
                          "options": "bucket=1,bucket-key=id", "jsonl": str(rows)}])
    table = paimon_index.open_table(warehouse, "db.m")
    more = pa.table({"id": [4, 5], "s": ["d", None], "d": [None, dt.date(2024, 1, 2)]}, schema=schema)
    table.write(more)
    table.compact(full=True)
    assert sorted(r["id"] for r in table.read(where="d IS NULL").to_pylist()) == [2, 3, 4]
    whole, nulls = java_oracle().batch([
        {"cmd": "read", "warehouse": warehouse, "table": "db.m", "rows": "true"},
        {"cmd": "read", "warehouse": warehouse, "table": "db.m", "where": "d IS NULL", "rows": "true"}])
    assert sorted(r[0] for r in whole["row_values"]) == [1, 2, 3, 4, 5]
    assert sorted(r[0] for r in nulls["row_values"]) == [2, 3, 4]
