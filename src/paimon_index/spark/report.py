"""Scan reports of Spark queries over ``paimon_index`` tables.

A Spark query runs its reads in Python workers on executors; what they pruned comes back through
a directory given as the read option ``scan-report``: the driver (files dropped while planning)
and every task write one small JSON file there, and :func:`collect_scan_report` sums them::

    with scan_report_dir() as where:
        spark.read.format("paimon_index").option("warehouse", W).option("scan-report", where) \\
            .load("db.orders").filter("status = 'PAID'").count()
        report = collect_scan_report(where)

A file per task (named by a fresh UUID) needs no coordination between executors; on a cluster the
directory must be on storage every executor can write (a local path works in local mode).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from paimon_index.errors import PaimonIndexError
from paimon_index.table.read import ScanReport

__all__ = ["collect_scan_report", "scan_report_dir", "write_report"]

REPORT_SUFFIX = ".scan.json"


def write_report(directory: str, report: ScanReport) -> None:
    """Store one task's report in ``directory`` (atomically: written, then renamed)."""
    os.makedirs(directory, exist_ok=True)
    name = os.path.join(directory, uuid.uuid4().hex)
    with open(name + ".tmp", "w", encoding="utf-8") as out:
        json.dump(report.as_dict(), out)
    os.replace(name + ".tmp", name + REPORT_SUFFIX)


def collect_scan_report(directory: str | Path) -> ScanReport:
    """The sum of every report written to ``directory``."""
    total = ScanReport()
    for path in sorted(Path(directory).glob("*" + REPORT_SUFFIX)):
        try:
            counts = json.loads(path.read_text(encoding="utf-8"))
            total.merge(ScanReport(**{k: int(v) for k, v in counts.items()}))
        except (ValueError, TypeError) as e:
            raise PaimonIndexError(f"unreadable scan report {path}: {e}") from e
    return total


@contextmanager
def scan_report_dir() -> Iterator[str]:
    """A fresh temporary directory for one query's reports, removed afterwards."""
    where = tempfile.mkdtemp(prefix="paimon-index-scan-")
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)
