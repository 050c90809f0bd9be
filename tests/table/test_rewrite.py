"""rewrite_file_index: only out-of-date files change, in one snapshot, and answers stay the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from paimon_index.table.catalog import alter_table_options, create_table, open_table
from paimon_index.table.read import read_arrow
from paimon_index.table.rewrite import next_index_file_name, rewrite_file_index
from paimon_index.table.row_level import delete_arrow
from paimon_index.table.system import file_indexes
from paimon_index.table.write import write_arrow

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("score", pa.int32()), ("dt", pa.string())])
QUERIES = ["id = 1234", "tag = 't7' AND score > 50", "score BETWEEN 10 AND 12", "tag IN ('t1', 't2')"]


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    warehouse = str(tmp_path)
    table = create_table(warehouse, "db.t", SCHEMA, partition_keys=["dt"], options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag"})
    rng = np.random.default_rng(5)
    for first in range(0, 3000, 1000):
        ids = np.arange(first, first + 1000)
        write_arrow(table, pa.table({"id": ids, "tag": [f"t{i % 40}" for i in ids],
                                     "score": rng.integers(0, 100, 1000).astype(np.int32),
                                     "dt": np.where(ids % 2 == 0, "a", "b")}, schema=SCHEMA))
    delete_arrow(table, "tag = 't7' AND id < 1500")  # vectors keyed by data-file name must survive
    return warehouse


def _listing(warehouse: str) -> dict[str, set[tuple[str, str]]]:
    rows = file_indexes(open_table(warehouse, "db.t")).to_pylist()
    out: dict[str, set[tuple[str, str]]] = {}
    for row in rows:
        out.setdefault(Path(row["file_path"]).name, set()).add((row["index_type"], row["storage"]))
    return out


def _answers(warehouse: str) -> dict[str, list[int]]:
    table = open_table(warehouse, "db.t")
    return {q: sorted(read_arrow(table, q)[0].column("id").to_pylist()) for q in QUERIES}


def _pypaimon_ids(warehouse: str) -> list[int]:
    table = open_table(warehouse, "db.t")
    builder = table.new_read_builder()
    return sorted(builder.new_read().to_arrow(builder.new_scan().plan().splits()).column("id").to_pylist())


def _snapshot(warehouse: str) -> int:
    return open_table(warehouse, "db.t").snapshot_manager().get_latest_snapshot().id


def test_index_file_names_follow_paimon() -> None:
    assert next_index_file_name("data-1-0.parquet", None) == "data-1-0.parquet.index"
    assert next_index_file_name("data-1-0.parquet", "data-1-0.parquet.index") == "data-1-0.parquet-1.index"
    assert next_index_file_name("data-1-0.parquet", "data-1-0.parquet-1.index") == "data-1-0.parquet-2.index"


def test_nothing_is_committed_when_every_index_is_up_to_date(warehouse: str) -> None:
    before = _snapshot(warehouse)
    assert rewrite_file_index(open_table(warehouse, "db.t")) is None
    assert _snapshot(warehouse) == before


def test_add_change_and_remove_index_types(warehouse: str) -> None:
    truth = _answers(warehouse)
    everything = _pypaimon_ids(warehouse)
    files = set(_listing(warehouse))

    # add a bloom filter on id and a range bitmap on score, stored in .index files
    alter_table_options(warehouse, "db.t", set_options={
        "file-index.bloom-filter.columns": "id", "file-index.range-bitmap.columns": "score",
        "file-index.bloom-filter.id.items": "2000", "file-index.in-manifest-threshold": "64b"})
    before, seen = _snapshot(warehouse), []
    assert rewrite_file_index(open_table(warehouse, "db.t"), progress=lambda d, t: seen.append((d, t))) == \
        before + 1
    assert seen[-1] == (len(files), len(files))
    listing = _listing(warehouse)
    assert set(listing) == files
    assert all(kinds == {("bitmap", "FILE"), ("bloom-filter", "FILE"), ("range-bitmap", "FILE")}
               for kinds in listing.values())
    assert _answers(warehouse) == truth and _pypaimon_ids(warehouse) == everything
    _, report = read_arrow(open_table(warehouse, "db.t"), "id = 1234")
    assert report.files_skipped_by_index >= len(files) - 1  # the new bloom filters are used
    _, report = read_arrow(open_table(warehouse, "db.t"), "score BETWEEN 10 AND 12")
    assert report.rows_read == report.rows_returned  # range bitmap answers exactly

    # change one option of one index in one partition only: just those files are rewritten
    alter_table_options(warehouse, "db.t", set_options={"file-index.bloom-filter.id.fpp": "0.01"})
    table = open_table(warehouse, "db.t")
    old = {m.file_name: m for s in table.new_read_builder().new_scan().plan().splits() for m in s.files}
    rewrite_file_index(table, where="dt = 'a'")
    splits = open_table(warehouse, "db.t").new_read_builder().new_scan().plan().splits()
    new = {m.file_name: (m, s.partition.values[0]) for s in splits for m in s.files}
    for name, (meta, partition) in new.items():
        changed = meta.extra_files != old[name].extra_files
        assert changed == (partition == "a"), (name, partition)
        if partition == "a":
            # a new name (old snapshots keep theirs): written .index, then -1, now -2
            assert meta.extra_files == [name + "-2.index"]
            assert (Path(meta.file_path).parent / old[name].extra_files[0]).exists()
    assert _answers(warehouse) == truth

    # remove every index type but the bitmap, and make the containers small enough to embed
    alter_table_options(warehouse, "db.t", remove=["file-index.bloom-filter.columns",
                                                    "file-index.range-bitmap.columns",
                                                    "file-index.bloom-filter.id.items",
                                                    "file-index.bloom-filter.id.fpp"],
                        set_options={"file-index.in-manifest-threshold": "1 mb"})
    rewrite_file_index(open_table(warehouse, "db.t"))
    assert all(kinds == {("bitmap", "EMBEDDED")} for kinds in _listing(warehouse).values())
    assert _answers(warehouse) == truth and _pypaimon_ids(warehouse) == everything
