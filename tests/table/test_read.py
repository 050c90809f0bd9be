"""Reading Paimon tables with index pushdown: same rows as without indexes and as pypaimon."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypaimon import CatalogFactory, Schema

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.sql import bind_predicate
from paimon_index.table.read import ScanReport, UnsupportedTableError, read_arrow, read_positions
from paimon_index.table.write import table_schema, write_arrow

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
    schema = table_schema(t)
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
    assert point.files_planned == 6 and point.files_skipped_by_index >= 4  # Bloom filters
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
    rows = read_positions(str(path), positions, report)
    assert rows.column("x").to_pylist() == positions.tolist()
    assert (report.row_groups_planned, report.row_groups_read) == (10, 3)
    everything = read_positions(str(path), None, ScanReport())
    assert everything.num_rows == 10_000


def test_index_use_can_be_switched_off_and_dv_tables_are_refused(tmp_path: Path) -> None:
    catalog = CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", True)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    off = {"bucket": "-1", "file-index.bitmap.columns": "id", "file-index.read.enabled": "false"}
    catalog.create_table("db.off", Schema.from_pyarrow_schema(data.schema, options=off), False)
    t = catalog.get_table("db.off")
    write_arrow(t, data)
    rows, report = read_arrow(t, "id = 9")
    assert rows.num_rows == 0 and report.files_skipped_by_index == 0 and report.rows_read == 3
    dv = {"bucket": "-1", "deletion-vectors.enabled": "true"}
    catalog.create_table("db.dv", Schema.from_pyarrow_schema(data.schema, options=dv), False)
    with pytest.raises(UnsupportedTableError, match="deletion vectors"):
        read_arrow(catalog.get_table("db.dv"), "id = 1")
