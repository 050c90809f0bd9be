"""Requests a selective query makes through the FileIO seam: few, bounded, and reported truly.

On an object store every request is a round trip, so a point query must not read an index
container piece by piece, nor a deletion-vector file once per data file. The table's ``file_io``
is wrapped by a counter of its own (independent of the seam's :class:`IOCounters`): it sees every
read pyarrow or the parsers make, per file, and the :class:`ScanReport` must agree with it.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_index.table.catalog import create_table
from paimon_index.table.read import read_arrow
from paimon_index.table.row_level import delete_arrow
from paimon_index.table.write import write_arrow

FILES = 4
ROWS = 30_000
OPTIONS = {
    "bucket": "1", "bucket-key": "id", "deletion-vectors.enabled": "true",
    "file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "status",
    "file-index.in-manifest-threshold": "64b",  # every container is a <data-file>.index file
}


class _Stream:
    def __init__(self, stream: Any, reads: Counter[str], path: str) -> None:
        self._stream, self._reads, self._path = stream, reads, path

    def read(self, *args: Any) -> Any:
        self._reads[self._path] += 1
        return self._stream.read(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()


class CountingFileIO:
    """The table's real FileIO, with every opened input stream and read counted per file."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.opens: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()

    def new_input_stream(self, path: str) -> _Stream:
        self.opens[path] += 1
        return _Stream(self._inner.new_input_stream(path), self.reads, path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def of_kind(self, counts: Counter[str], kind: str) -> dict[str, int]:
        return {p: n for p, n in counts.items() if _kind(p) == kind}


def _kind(path: str) -> str:
    name = posixpath.basename(path)
    if name.endswith(".index"):
        return "container"
    if name.startswith("index-") and posixpath.basename(posixpath.dirname(path)) == "index":
        return "dv"
    return "data" if name.endswith(".parquet") else "metadata"


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    warehouse = tmp_path_factory.mktemp("warehouse")
    rng = np.random.default_rng(13)
    statuses = np.array(["NEW", "PAID", "SHIPPED", "RETURNED"], dtype=object)
    schema = pa.schema([("id", pa.int64()), ("status", pa.string()), ("amount", pa.float64())])
    t = create_table(str(warehouse), "db.orders", schema, options=OPTIONS)
    for f in range(FILES):
        # Interleaved ids: every file's min/max spans them all, so only the indexes can skip.
        write_arrow(t, pa.table({"id": np.arange(ROWS, dtype=np.int64) * FILES + f,
                                 "status": pa.array(statuses[rng.integers(0, 4, ROWS)], pa.string()),
                                 "amount": rng.random(ROWS)}, schema=schema))
    # One delete touching every file: one DV index file holding four vectors.
    delete_arrow(t, f"id < {50 * FILES}")
    return t


def test_a_point_query_makes_few_requests_and_reports_them(table: Any) -> None:
    target = 777 * FILES + 2
    counting = CountingFileIO(table.file_io)
    original = table.file_io
    table.file_io = counting
    try:
        rows, report = read_arrow(table, f"id = {target} AND status IN ('NEW', 'PAID', 'RETURNED')")
    finally:
        table.file_io = original
    plain, _ = read_arrow(table, f"id = {target}", use_index=False)
    assert rows.column("id").to_pylist() == plain.column("id").to_pylist() == [target]

    containers = counting.of_kind(counting.reads, "container")
    vectors = counting.of_kind(counting.reads, "dv")
    data = counting.of_kind(counting.reads, "data")
    # Every container was asked (statistics cannot rule the interleaved ids out).
    assert report.files_planned == FILES and len(containers) == FILES
    # The head, then the Bloom filter and bitmap parts together: at most 2 requests per container,
    # one open each.
    assert max(containers.values()) <= 2, containers
    assert all(counting.opens[p] == 1 for p in containers)
    # One DV index file, opened and read once for the whole split (not once per data file).
    assert len(vectors) == 1 and list(vectors.values()) == [1], vectors
    assert all(counting.opens[p] == 1 for p in vectors)
    # Only the file holding the id is read: its footer and one row group.
    assert len(data) == 1 and max(data.values()) <= 3, data
    # The report counts what the store saw.
    assert report.index_requests == sum(containers.values())
    assert report.dv_requests == sum(vectors.values())
    assert report.data_requests == sum(data.values())
    assert report.files_opened == sum(counting.opens[p] for p in {**containers, **vectors, **data})


def test_split_files_and_the_file_io_reach_executors_pickled(table: Any) -> None:
    """A Spark task gets its files' plans (unresolved: locations only) and the table's FileIO by
    pickle; it resolves and reads the same rows."""
    import pickle

    from paimon_index.table.fileio import TableIO
    from paimon_index.table.files import ScanReport
    from paimon_index.table.read import read_file_plans
    from paimon_index.table.scan import plan_read

    query = "status = 'PAID' AND id < 1000"
    plan = plan_read(table, query, strict=True, defer=True)
    io = pickle.loads(pickle.dumps(TableIO.of(table)))
    assert type(io.file_io) is type(table.file_io) and io.counters.read_requests == 0
    report = ScanReport()
    files = pickle.loads(pickle.dumps(plan.files))
    got = [i for b in read_file_plans(io, files, plan.predicate, plan.schema, report)
           for i in b.column("id").to_pylist()]
    expected, _ = read_arrow(table, query, use_index=False)
    assert sorted(got) == sorted(expected.column("id").to_pylist()) and got
    assert min(got) >= 50 * FILES  # the deleted rows stay deleted
    assert io.counters.read_requests == report.index_requests + report.dv_requests + report.data_requests


def test_bitmap_lookup_reads_one_block_not_the_whole_index(tmp_path: Path) -> None:
    """A V2 bitmap whose bitmaps dwarf its two index blocks: a lookup fetches its head, one block
    and one bitmap -- not the rest of the index, as parsing the block index once did."""
    from pypaimon.filesystem.local_file_io import LocalFileIO

    from paimon_index.fileindex.builder import build_file_index
    from paimon_index.fileindex.evaluate import FileIndexEvaluator
    from paimon_index.fileindex.format import ContainerReader
    from paimon_index.predicate import Leaf, Op, bind
    from paimon_index.table.fileio import IOCounters, TableIO
    from paimon_index.types import parse_type

    rng = np.random.default_rng(5)
    keys = np.array([f"key{k:05d}" for k in range(1_500)], dtype=object)  # 20-byte entries: 2 blocks
    values = keys[rng.integers(0, len(keys), 400_000)]
    dtype = parse_type("STRING")
    container = build_file_index(pa.table({"c": pa.array(values, pa.string())}),
                                 {"file-index.bitmap.columns": "c"}, {"c": dtype})
    assert container is not None
    path = str(tmp_path / "c.index")
    io = TableIO(LocalFileIO())
    io.write_bytes(path, container)
    tally = IOCounters()
    with ContainerReader(io.source(path, tally=tally), owns_source=True) as reader:
        (entry,) = reader.column_entries("c")
        evaluator = FileIndexEvaluator(reader, {"c": dtype})
        found = evaluator.evaluate(bind(Leaf(Op.EQ, "c", ("key01234",)), {"c": dtype}))
        expected = np.flatnonzero(values == "key01234")
        assert list(found.bitmap) == expected.tolist()  # type: ignore[attr-defined]
        bitmap_reader = evaluator.reader(entry)
        assert len(bitmap_reader.block_keys) == 2 and len(bitmap_reader._blocks) == 1  # type: ignore[union-attr]
    assert entry.length > 800_000
    # The container's first 64 KiB (the bitmap's head and both blocks), the rest of the bitmap's
    # prefetched head, then the one bitmap: ~66 KB of the index (1,071,323 bytes were read before).
    assert tally.read_requests <= 3 and tally.bytes_read <= 100 * 1024, tally
