"""Reading Paimon tables with index pushdown: same rows as without indexes and as pypaimon."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pypaimon import CatalogFactory, Schema
from pypaimon.filesystem.local_file_io import LocalFileIO

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.errors import UnsupportedTableError
from paimon_index.sql import bind_predicate
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import ScanReport, read_positions
from paimon_index.table.read import read_arrow
from paimon_index.table.schemas import read_schema
from paimon_index.table.write import write_arrow

OPTIONS = {
    "bucket": "-1",
    "file-index.bitmap.columns": "status",
    "file-index.bloom-filter.columns": "id",
    "file-index.range-bitmap.columns": "score",
    "file-index.in-manifest-threshold": "1kb",
}
QUERIES = [
    "status = 'RETURNED'",
    "id = 120007",
    "id IN (5, 60000, 999999)",
    "status <> 'NEW' AND score >= 95",
    "score BETWEEN 10 AND 11 OR status IS NULL",
    "status = 'NOPE'",
]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory):
    warehouse = tmp_path_factory.mktemp("warehouse")
    rng = np.random.default_rng(7)
    statuses = np.array(["NEW", "PAID", "SHIPPED", "RETURNED", None], dtype=object)
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    batches = []
    for b in range(6):  # six writes: six data files, each holding its own id range
        n = 40_000
        status = statuses[rng.integers(0, 4, n)]
        if b % 2:
            status[rng.integers(0, n, 50)] = None
        else:
            status[status == "RETURNED"] = "PAID"  # every other file holds no RETURNED row
        batches.append(pa.table({
            "id": pa.array(np.arange(n, dtype=np.int64) + b * n),
            "status": pa.array(status, pa.string()),
            "score": pa.array(rng.integers(0, 100, n).astype(np.int32)),
        }))
    catalog.create_table("db.orders", Schema.from_pyarrow_schema(batches[0].schema, options=OPTIONS), False)
    t = catalog.get_table("db.orders")
    for batch in batches:
        write_arrow(t, batch)
    return t, pa.concat_tables(batches)


def ids(rows: pa.Table) -> list[int]:
    return sorted(rows.column("id").to_pylist()) if rows.num_rows else []


@pytest.mark.parametrize("query", QUERIES)
def test_indexed_read_equals_plain_read_pypaimon_and_brute_force(table, query: str) -> None:
    t, everything = table
    schema = read_schema(t)
    with_index, report = read_arrow(t, query)
    without_index, plain = read_arrow(t, query, use_index=False)
    brute = everything.filter(to_arrow_expression(bind_predicate(query, schema), schema))
    builder = t.new_read_builder()
    pypaimon_rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    by_pypaimon = pypaimon_rows.filter(to_arrow_expression(bind_predicate(query, schema), schema))
    assert ids(with_index) == ids(without_index) == ids(brute) == ids(by_pypaimon)
    assert plain.rows_read == everything.num_rows and plain.files_skipped_by_index == 0
    assert report.rows_returned == brute.num_rows
    assert report.rows_read <= plain.rows_read


def test_the_indexes_prune_files_row_groups_and_rows(table) -> None:
    t, everything = table
    _, point = read_arrow(t, "id = 120007")
    skipped = point.files_skipped_by_stats  # value stats (ids are clustered per file), then Bloom filters
    assert point.files_planned + skipped == 6 and point.files_skipped_by_index + skipped >= 4
    _, returned = read_arrow(t, "status = 'RETURNED'")
    assert returned.files_skipped_by_index == 3  # bitmaps: three files hold no RETURNED row
    assert returned.rows_read == returned.rows_selected_by_index == returned.rows_returned
    _, narrow = read_arrow(t, "score = 42 AND status = 'PAID'")
    assert narrow.rows_read == narrow.rows_returned < everything.num_rows // 100  # exact bitmaps


def test_only_row_groups_holding_selected_rows_are_read(tmp_path: Path) -> None:
    path = tmp_path / "groups.parquet"
    data = pa.table({"x": pa.array(np.arange(10_000, dtype=np.int64))})
    pq.write_table(data, path, row_group_size=1_000)  # ten row groups
    positions = np.array([5, 2_500, 2_999, 7_001], dtype=np.int64)
    report = ScanReport()
    io = TableIO(LocalFileIO())
    rows = read_positions(str(path), positions, report, io=io)
    assert rows.column("x").to_pylist() == positions.tolist()
    assert (report.row_groups_planned, report.row_groups_read) == (10, 3)
    assert report.files_opened == 1 and 1 <= report.data_requests <= 4  # footer + wanted chunks
    everything = read_positions(str(path), None, ScanReport(), io=io)
    assert everything.num_rows == 10_000


def test_index_use_can_be_switched_off_and_primary_key_tables_merge_or_are_refused(tmp_path: Path) -> None:
    catalog = CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    off = {"bucket": "-1", "file-index.bitmap.columns": "id", "file-index.read.enabled": "false"}
    catalog.create_table("db.off", Schema.from_pyarrow_schema(data.schema, options=off), False)
    t = catalog.get_table("db.off")
    write_arrow(t, data)
    rows, report = read_arrow(t, "id = 9")
    assert rows.num_rows == 0 and report.files_skipped_by_index == 0 and report.rows_read == 3
    keyed = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    # Level-0 files of a table without deletion vectors: its keys may have several versions. The
    # deduplicate engine's are subtracted by the plan (table/pk/versions.py); another is refused.
    engines = {"db.pk": {"bucket": "1"}, "db.pu": {"bucket": "1", "merge-engine": "partial-update"}}
    for name, options in engines.items():
        schema = Schema.from_pyarrow_schema(keyed, primary_keys=["id"], options=options)
        catalog.create_table(name, schema, False)
        for ids in ([1, 2], [1]):
            write_arrow(catalog.get_table(name), pa.table({"id": pa.array(ids, pa.int64())}, schema=keyed))
    rows, report = read_arrow(catalog.get_table("db.pk"), "id = 1")
    assert rows.to_pylist() == [{"id": 1}] and report.rows_removed_by_deletion_vectors == 1
    with pytest.raises(UnsupportedTableError, match="without deletion vectors need a merge by key"):
        read_arrow(catalog.get_table("db.pu"), "id = 1")


@pytest.mark.parametrize("bitmap64", [False, True])
def test_deletion_vectors_are_applied_after_the_index(tmp_path: Path, bitmap64: bool) -> None:
    """Rows deleted through DV index files (committed via pypaimon's index manifest) disappear;
    the bitmap answer AND-NOT the vector is what is read. 32-bit: pypaimon's reader agrees."""
    from pypaimon.write.commit_message import CommitMessage

    from paimon_index.deletionvectors.maintainer import BucketDvMaintainer

    catalog = CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    options = {"bucket": "-1", "deletion-vectors.enabled": "true",
               "deletion-vectors.bitmap64": str(bitmap64).lower(), "file-index.bitmap.columns": "status"}
    rng = np.random.default_rng(3)
    batches = [pa.table({"id": pa.array(np.arange(2_000, dtype=np.int64) + i * 2_000),
                         "status": pa.array(np.array(["A", "B", "C"])[rng.integers(0, 3, 2_000)])})
               for i in range(2)]
    catalog.create_table("db.t", Schema.from_pyarrow_schema(batches[0].schema, options=options), False)
    t = catalog.get_table("db.t")
    for batch in batches:
        write_arrow(t, batch)

    splits = t.new_read_builder().new_scan().plan().splits()
    maintainer = BucketDvMaintainer(splits[0].partition, splits[0].bucket, bitmap64=bitmap64)
    deleted_ids: set[int] = set()
    for split in splits:
        for meta in split.files:
            positions = np.flatnonzero(rng.random(meta.row_count) < 0.3)
            maintainer.notify_new_deletions(meta.file_name, positions)
            file_ids = pq.read_table(meta.file_path).column("id").to_numpy()
            deleted_ids.update(file_ids[positions].tolist())
    commit = maintainer.commit_to(str(t.path_factory().index_path()), write=TableIO.of(t).write_new)
    message = CommitMessage(partition=(), bucket=splits[0].bucket, new_files=[],
                            index_adds=list(commit.added), index_deletes=list(commit.deleted))
    committer = t.new_batch_write_builder().new_commit()
    committer.commit([message])
    committer.close()

    everything = pa.concat_tables(batches)
    live = everything.filter(pc.invert(pc.is_in(everything.column("id"), pa.array(sorted(deleted_ids)))))
    schema = read_schema(t)
    for query in ("status = 'B'", "status <> 'A' AND id < 3000", "id >= 0"):
        got, report = read_arrow(t, query)
        brute = live.filter(to_arrow_expression(bind_predicate(query, schema), schema))
        assert ids(got) == ids(brute)
        assert report.rows_removed_by_deletion_vectors > 0
        assert report.rows_read == report.rows_returned or query == "status <> 'A' AND id < 3000"
        if not bitmap64:  # pypaimon reads 32-bit vectors only
            builder = t.new_read_builder()
            theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
            expression = to_arrow_expression(bind_predicate(query, schema), schema)
            assert ids(theirs.filter(expression)) == ids(brute)
