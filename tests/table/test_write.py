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
from paimon_index.table.write import INDEX_FILE_SUFFIX, table_schema, write_arrow

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

    schema = table_schema(table)
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
