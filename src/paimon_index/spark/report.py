"""Scan reports of Spark queries over ``paimon_index`` tables, gathered through a Spark accumulator.

A Spark query runs its reads in Python workers on executors; what they pruned comes back to the
driver with the tasks' results, as a Spark accumulator's updates do -- no storage shared between
driver and executors is needed, so it works on a cluster as in local mode::

    report = scan_report(spark)                      # registers an accumulator on the driver
    df = (spark.read.format("paimon_index").option("warehouse", W)
          .option("scan-report", report.name).load("db.orders"))
    df.filter("status = 'PAID'").count()
    report.value                                     # ScanReport: files skipped, rows read, ...
    report.reset()                                   # zero it before the next query

How the counts travel: ``report.name`` (``paimon-index-scan-report:<id>``) names the accumulator.
Every read task (:meth:`ScanReportAccumulator.add_from_task`) registers the accumulator of that id
in its Python worker, as Spark does when it unpickles an accumulator captured by a closure, and adds
its :class:`~paimon_index.table.read.ScanReport`; Spark sends the update back with the task's result
and the driver's accumulator sums them. The source plans its splits in a Python worker the JVM
starts on the driver (``DataSourceReader.partitions``), which is no task and sends no update, so the
counts of that step (files dropped by statistics and embedded indexes) ride in the first partition
and are added by its task.

What the report counts: the tasks that ran (a ``limit`` may stop Spark before every partition ran),
each query that scanned the DataFrame (a second ``count()`` adds again; :meth:`reset` between
queries), and -- as every Spark accumulator updated inside a transformation -- a task Spark ran again
after a lost executor may be counted twice.

A ``scan-report`` value that names no accumulator (the directory of earlier versions) is an
error naming this way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.accumulators import AccumulatorParam

from paimon_index.errors import EnvironmentCheckError, InvalidOptionError
from paimon_index.spark.options import SCAN_REPORT_PREFIX
from paimon_index.table.files import ScanReport

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ACCUMULATOR_PREFIX", "ScanReportAccumulator", "add_task_report", "scan_report"]

#: ``scan-report`` values naming an accumulator start so; any other value is a directory.
ACCUMULATOR_PREFIX = SCAN_REPORT_PREFIX


class ScanReportParam(AccumulatorParam[ScanReport]):
    """Sums :class:`ScanReport` counters (Spark's accumulator protocol)."""

    def zero(self, value: ScanReport) -> ScanReport:
        return ScanReport()

    def addInPlace(self, value1: ScanReport, value2: ScanReport) -> ScanReport:
        return value1.merge(value2)


class ScanReportAccumulator:
    """One report, summed over the driver's planning and every read task of the queries that use
    ``name`` as their ``scan-report`` option."""

    def __init__(self, spark: SparkSession) -> None:
        from paimon_index.spark import _connect

        if _connect.is_connect(spark):
            raise EnvironmentCheckError(
                "scan_report(spark) needs a Spark accumulator, which a Spark Connect client cannot make: "
                "use jobs.read_planned(spark, table, where, warehouse=...).plan.report (what the planning "
                "pruned) or a classic SparkSession (docs/clusters.md, 'Spark Connect')")
        self._accumulator = spark.sparkContext.accumulator(ScanReport(), ScanReportParam())

    @property
    def name(self) -> str:
        """The ``scan-report`` option value of the reads to count."""
        return f"{ACCUMULATOR_PREFIX}{self._accumulator.aid}"

    @property
    def value(self) -> ScanReport:
        """The counts so far (a copy)."""
        return ScanReport().merge(self._accumulator.value)

    def reset(self) -> None:
        self._accumulator.value = ScanReport()


def scan_report(spark: SparkSession) -> ScanReportAccumulator:
    """A fresh report on ``spark``'s driver; pass ``report.name`` as the ``scan-report`` read option."""
    return ScanReportAccumulator(spark)


def _accumulator_id(option: str) -> int:
    """The accumulator id a ``scan-report`` value names."""
    text = option[len(ACCUMULATOR_PREFIX):]
    if not option.startswith(ACCUMULATOR_PREFIX) or not text.isdigit():
        raise InvalidOptionError(f"option 'scan-report' = {option!r}: expected the name of "
                                 "paimon_index.spark.report.scan_report(spark)")
    return int(text)


def add_task_report(option: str, report: ScanReport) -> None:
    """Add one task's ``report`` to the accumulator the ``scan-report`` option names."""
    aid = _accumulator_id(option)
    from pyspark.accumulators import _deserialize_accumulator

    # What unpickling an accumulator does in a task: register it in this worker, whose updates
    # Spark sends to the driver with the task's result (the registry is cleared per task).
    accumulator: Any = _deserialize_accumulator(aid, ScanReport(), ScanReportParam())
    accumulator.add(report)
