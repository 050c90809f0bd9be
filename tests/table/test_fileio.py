"""The FileIO seam over a real pypaimon table's ``file_io`` (local here; S3 in tests/objectstore)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_index.errors import CorruptFileError
from paimon_index.table.catalog import create_table
from paimon_index.table.fileio import TableIO, coalesce


@pytest.fixture()
def io(tmp_path: Path) -> TableIO:
    table = create_table(str(tmp_path), "db.t", pa.schema([("id", pa.int64())]))
    return TableIO.of(table)


def test_coalesce_merges_near_ranges_only() -> None:
    assert coalesce([(100, 10), (0, 10), (5000, 1)], gap=100) == [(0, 110), (5000, 1)]
    assert coalesce([(0, 10), (5, 10)], gap=0) == [(0, 15)]
    assert coalesce([(0, 0)]) == []


def test_ranges_are_read_in_one_request_and_sliced(io: TableIO, tmp_path: Path) -> None:
    path = str(tmp_path / "blob")
    payload = bytes(range(256)) * 64
    io.write_bytes(path, payload)
    with pytest.raises(FileExistsError):
        io.write_bytes(path, b"x")
    before = io.counters.read_requests
    parts = io.read_ranges(path, [(10, 5), (4000, 100), (20, 3)])
    assert parts == [payload[10:15], payload[4000:4100], payload[20:23]]
    assert io.counters.read_requests - before == 1


def test_short_file_is_a_corrupt_file_error_naming_it(io: TableIO, tmp_path: Path) -> None:
    path = str(tmp_path / "short")
    io.write_bytes(path, b"abc")
    with io.source(path) as source, pytest.raises(CorruptFileError, match="short"):
        source.read_at(1, 10)


def test_list_parquet_and_delete(io: TableIO, tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / "d.parquet")
    (tmp_path / "sub").mkdir()
    names = {e.name: e for e in io.list(str(tmp_path))}
    assert names["d.parquet"].size == (tmp_path / "d.parquet").stat().st_size
    assert not names["d.parquet"].is_dir
    assert names["sub"].is_dir and names["d.parquet"].mtime is not None
    with io.parquet(str(tmp_path / "d.parquet")) as parquet:
        assert parquet.read().column("x").to_pylist() == [1, 2, 3]
    assert io.delete(str(tmp_path / "d.parquet")) and not io.exists(str(tmp_path / "d.parquet"))
    assert not io.delete(str(tmp_path / "d.parquet"))
    assert io.list(str(tmp_path / "missing")) == []


def test_prefetch_fetches_only_what_is_missing_and_serves_reads_across_spans(io: TableIO,
                                                                            tmp_path: Path) -> None:
    path = str(tmp_path / "spans")
    payload = bytes(range(256)) * 8
    io.write_bytes(path, payload)
    with io.source(path) as source:
        source.prefetch([(0, 100)])
        before = io.counters.as_dict()
        source.prefetch([(50, 100), (2000, 500)])  # half cached; the tail clipped to the file
        assert io.counters.read_requests - before["read_requests"] == 1
        assert io.counters.bytes_read - before["bytes_read"] == 2048 - 100
        assert bytes(source.read_at(0, 2048)) == payload  # one span now: no request
        assert io.counters.read_requests - before["read_requests"] == 1


def test_counters_as_dict_and_pickle_follow_the_fields() -> None:
    """``as_dict`` (also the pickled state) is derived from the fields: a counter added later is
    neither left out nor lost on the way back from a Spark task."""
    import pickle
    from dataclasses import dataclass

    from paimon_index.table.fileio import IOCounters

    @dataclass
    class MoreCounters(IOCounters):
        head_requests: int = 0

    counters = MoreCounters()
    counters.add(read_requests=2, bytes_read=10, head_requests=3)
    assert counters.as_dict() == {"read_requests": 2, "bytes_read": 10, "write_requests": 0,
                                  "bytes_written": 0, "list_requests": 0, "other_requests": 0,
                                  "head_requests": 3}
    back = pickle.loads(pickle.dumps(IOCounters(read_requests=1, list_requests=4)))
    assert back.as_dict() == IOCounters(read_requests=1, list_requests=4).as_dict()
    back.add(read_requests=1)  # the lock is rebuilt
    assert back.read_requests == 2


EXIT_AFTER_COUNT = """
import sys
import pyarrow as pa
import paimon_index
schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
t = paimon_index.create_table(sys.argv[1], "db.t", schema, primary_keys=["id"],
                              options={"bucket": "2", "deletion-vectors.enabled": "true"})
t.upsert(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
assert t.count() == 2
"""


def test_a_script_that_counts_and_exits_exits_cleanly(tmp_path: Path) -> None:
    """Reading Parquet through a Python stream with pyarrow's threads, then exiting, aborted the
    interpreter (exit code 134) about one run in two: a worker freed the last Python buffer while
    the interpreter shut down. With ``pre_buffer``'s I/O threads the same, rarer: 1 run in 24 with
    four scripts at once (CI's two busy workers found it). Twelve runs, four at a time: all
    passing by luck against ``pre_buffer``, about 3 in 5."""
    import subprocess
    import sys

    for batch in range(3):
        running = [(run, subprocess.Popen([sys.executable, "-c", EXIT_AFTER_COUNT, str(tmp_path / str(run))],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
                   for run in range(batch * 4, batch * 4 + 4)]
        for run, process in running:
            _, err = process.communicate(timeout=120)
            assert process.returncode == 0, f"run {run}: exit code {process.returncode}: {err[-500:]}"
