"""Scan reports through a Spark accumulator: the driver's planning and every task counted, no
shared directory; the same counts as the directory form and as the Python read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN
from paimon_index.spark.report import scan_report
from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.read import ScanReport, read_arrow
from paimon_index.table.write import write_arrow

pytestmark = pytest.mark.spark

FILES = 4
ROWS = 500
RARE = "m"  # between "a" and "z": value statistics cannot rule a file out, the bitmap can


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    where = str(tmp_path_factory.mktemp("report"))
    create_table(where, "db.t", "id BIGINT, tag STRING",
                 options={"bucket": "-1", "file-index.bitmap.columns": "tag"})
    for f in range(FILES):
        ids = list(range(f * ROWS, (f + 1) * ROWS))
        tags = ["a" if i % 2 else "z" for i in ids]
        if f == 1:
            tags[8] = RARE  # in place of a "z"
        write_arrow(open_table(where, "db.t"), pa.table({"id": pa.array(ids, pa.int64()), "tag": tags}))
    return where


def _load(spark, warehouse: str, report: str):
    return (spark.read.format("paimon_index").option("warehouse", warehouse)
            .option(SINGLE_SCAN_PUSHDOWN, "true").option("scan-report", report).load("db.t"))


def test_accumulator_counts_planning_and_tasks_like_the_python_read(spark, warehouse: str) -> None:
    report = scan_report(spark)
    assert _load(spark, warehouse, report.name).filter(f"tag = '{RARE}'").count() == 1
    got = report.value
    _, python = read_arrow(open_table(warehouse, "db.t"), f"tag = '{RARE}'")
    assert got.files_skipped_by_index == python.files_skipped_by_index == FILES - 1
    assert got.files_planned == FILES  # three dropped while planning (embedded bitmaps), one by its task
    assert got.rows_returned == python.rows_returned == 1

    report.reset()
    assert report.value == ScanReport()
    assert _load(spark, warehouse, report.name).filter("tag = 'a'").count() == FILES * ROWS // 2
    assert report.value.rows_returned == FILES * ROWS // 2
    assert report.value.files_skipped_by_index == 0


def test_planning_counts_arrive_when_no_file_is_left(spark, warehouse: str) -> None:
    report = scan_report(spark)
    assert _load(spark, warehouse, report.name).filter("tag = 'q'").count() == 0
    assert report.value.files_skipped_by_index == FILES
    assert report.value.rows_returned == 0


@pytest.mark.parametrize("name", ["paimon-index-scan-report:x1", "/tmp/reports"])
def test_a_misspelt_report_name_or_a_directory_is_an_error(spark, warehouse: str, name: str) -> None:
    with pytest.raises(Exception, match=r"expected the name of paimon_index\.spark\.report\.scan_report"):
        _load(spark, warehouse, name).filter("tag = 'a'").count()


def test_report_param_sums_every_counter(tmp_path: Path) -> None:
    from paimon_index.spark.report import ScanReportParam

    param = ScanReportParam()
    total = param.addInPlace(param.zero(ScanReport()), ScanReport(rows_read=3, files_planned=1))
    assert param.addInPlace(total, ScanReport(rows_read=4)) == ScanReport(rows_read=7, files_planned=1)
