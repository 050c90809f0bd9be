"""The planned Spark read reads an index body only where it may skip a file (table/files.py
``weigh_index`` with ``whole_files``): Spark's filter decides every row, so a selection on a file
that cannot be skipped changes nothing -- and the rows are the same either way."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import paimon_index
from paimon_index.spark import jobs
from paimon_index.table.files import STATS_SOME_MATCH

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64())])
ROWS = 4_000


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    w = str(tmp_path_factory.mktemp("costs") / "w")
    t = paimon_index.create_table(w, "db.t", SCHEMA, options={"bucket": "-1",
                                                              "file-index.range-bitmap.columns": "x"})
    gap = np.concatenate([np.arange(0, 2000), np.arange(8000, 10000)])  # nothing in [2000, 8000)
    t.write(pa.table({"id": np.arange(ROWS), "x": gap}, schema=SCHEMA))
    t.write(pa.table({"id": np.arange(ROWS, 2 * ROWS), "x": np.arange(ROWS)}, schema=SCHEMA))
    return w


@pytest.mark.parametrize(("where", "read", "files"), [
    ("x BETWEEN 3000 AND 7000", 0, 2),  # gap: a skip unlikely (~1600 rows estimated); dense: max matches
    ("x BETWEEN 3000 AND 3010", 2, 1),  # few rows expected: both asked, the gap file skipped
    ("x < 5", 0, 2),                    # both minima match: no index can skip either file
])
def test_planned_read_asks_the_indexes_only_where_they_may_skip(spark: Any, warehouse: str, where: str,
                                                                read: int, files: int) -> None:
    planned = jobs.read_planned(spark, "db.t", where, warehouse=warehouse, small_read_bytes=0)
    report = planned.plan.report
    assert report.index_bodies_read == read and len(planned.plan.files) == files
    expected = paimon_index.open_table(warehouse, "db.t").read(where).num_rows
    assert planned.dataframe.count() == expected
    if where == "x < 5":
        assert all(use.not_read == (("x", "", STATS_SOME_MATCH),) for use in report.index_uses)


def test_python_read_of_the_same_table_still_takes_the_selection(warehouse: str) -> None:
    table = paimon_index.open_table(warehouse, "db.t")
    rows = table.read("x BETWEEN 3000 AND 7000")
    report = table.last_scan_report
    assert rows.num_rows == 1000 and report.index_bodies_read == 2 and report.files_skipped_by_index == 1
