"""The class archive's trainer: a detached, lowest-priority program whose Spark session records the
driver's class archive while it runs a small workload of what users run.

    python -m paimon_index.spark.archive_training '{"spark.jars": "..."}'

Spawned by :func:`paimon_index.spark.class_archive.train` when a session finds no archive for its
key; its argument is the user's class path settings (the archive maps only with the same class
path). The archive holds the classes its JVM loaded, so the workload goes where a user's first
queries go: ``paimon.sql`` DDL, INSERTs and an UPDATE/DELETE/MERGE through the Spark jobs, planned
reads through Spark's Parquet reader of a primary-key table whose deletion vectors take the words
join, an aggregate with a filter (TPC-H Q6's shape), a GROUP BY, a join, a TopN, a point lookup
(the driver's small read), a metadata count, a compaction, an append table with a bitmap index,
and the ``paimon_index`` Python source. Measured (TPC-H SF1 Q6 in a fresh process, against an
archive recorded by a ``count(*)``): 5,629 classes loaded from outside this archive instead of
8,484 (an archive recorded by Q6 itself: 5,611), and the answer in 10.39 s instead of 11.33 s
(median of 6 interleaved rounds; shorter runs here varied by as much as the gain). Its tables live
in a temporary directory, removed at the end.

Every failure is swallowed: the archive then holds what was loaded until then (a workload step
that breaks must not leave the machine without an archive), and the program's output goes to
/dev/null anyway.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from typing import Any

from paimon_index.spark import class_archive

__all__ = ["ROWS", "STATEMENTS", "main"]

#: Rows of the training tables: enough that reads go to Spark's Parquet reader, not the driver's
#: small read (2,000 candidate rows at most), small enough to write in seconds.
ROWS = 40_000
#: The statements, in order, over a warehouse with nothing in it yet.
STATEMENTS = (
    "CREATE DATABASE train",
    "CREATE TABLE train.pk (k BIGINT NOT NULL, d DATE, q DECIMAL(12, 2), x DOUBLE, s STRING) "
    "TBLPROPERTIES ('primary-key' = 'k', 'bucket' = '2', 'deletion-vectors.enabled' = 'true', "
    "'file-index.bitmap.columns' = 's', 'file-index.range-bitmap.columns' = 'd')",
    f"INSERT INTO train.pk SELECT id, date_add(DATE'1994-01-01', CAST(id % 1000 AS INT)), "
    f"CAST(id % 5000 AS DECIMAL(12, 2)) / 100, (id % 11) / 100.0, CAST(id % 7 AS STRING) "
    f"FROM range({ROWS})",
    # Scattered keys: every file's vector holds many runs, so reads take the words join.
    f"INSERT INTO train.pk SELECT id * 7 % {ROWS}, DATE'1995-06-01', 1.5, 0.05, 'u' FROM range({ROWS // 10})",
    "SELECT count(*) FROM train.pk",
    "SELECT sum(q * x) AS revenue FROM train.pk WHERE d >= DATE'1994-03-01' AND d < DATE'1995-01-01' "
    "AND x BETWEEN 0.02 AND 0.07 AND q < 24",
    "SELECT s, count(*), sum(q), avg(x), min(d), max(d) FROM train.pk GROUP BY s ORDER BY s",
    "SELECT k, d FROM train.pk ORDER BY d DESC LIMIT 10",
    "SELECT count(*) FROM train.pk a JOIN train.pk b ON a.k = b.k + 1 WHERE a.s = '3'",
    "SELECT * FROM train.pk WHERE k = 1234",
    "DELETE FROM train.pk WHERE k % 97 = 0",
    "UPDATE train.pk SET x = x + 1 WHERE k % 89 = 0",
    "MERGE INTO train.pk t USING (SELECT id AS k FROM range(0, 100)) u ON t.k = u.k "
    "WHEN MATCHED THEN UPDATE SET s = 'm' WHEN NOT MATCHED THEN INSERT (k, s) VALUES (u.k, 'n')",
    "SELECT s, count(*) FROM train.pk WHERE x > 0.5 GROUP BY s",
    "CALL sys.compact(table => 'train.pk')",
    "CREATE TABLE train.events (id BIGINT, ts TIMESTAMP, status STRING) "
    "TBLPROPERTIES ('file-index.bitmap.columns' = 'status')",
    f"INSERT INTO train.events SELECT id, timestamp_seconds(1700000000 + id), "
    f"element_at(array('NEW', 'HELD', 'PAID'), CAST(id % 3 AS INT) + 1) FROM range({ROWS})",
    "SELECT status, count(*) FROM train.events WHERE status = 'HELD' GROUP BY status",
    "SELECT * FROM `train`.`pk$snapshots`",
)


def _train(spark: Any, warehouse: str) -> None:
    from paimon_index.spark import attach

    paimon = attach(spark, warehouse=warehouse)
    for statement in STATEMENTS:
        with contextlib.suppress(Exception):
            paimon.sql(statement).collect()
    with contextlib.suppress(Exception):  # the Python source's reader (its Python workers, Arrow)
        (spark.read.format("paimon_index").option("warehouse", warehouse).load("train.events")
         .where("status = 'PAID'").count())


def main(argv: list[str]) -> int:
    with contextlib.suppress(OSError):
        os.nice(class_archive.TRAINER_NICENESS - os.nice(0))
    os.environ[class_archive.ARCHIVE_SWITCH] = class_archive.RECORD
    conf = json.loads(argv[0]) if argv else {}
    from paimon_index.spark.session import local_session

    spark = local_session("paimon-index-class-archive", master="local[2]", conf=conf)
    with tempfile.TemporaryDirectory(prefix="paimon-index-training-") as warehouse:
        _train(spark, warehouse)
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
