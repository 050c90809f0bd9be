"""Every verb of paimon_index.spark.jobs through a Spark Connect client (no JVM in this process).

The server is the local Spark Connect server of tests/connect/conftest.py. Every result is checked
against three references that do not go through Spark Connect: the same verb through the Python API
on a twin table (``paimon_index.Table``), pypaimon's own read of the table, and a Python model of
the rows (a dict by id / key).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_index
from paimon_index.errors import EnvironmentCheckError
from paimon_index.spark import _connect, jobs
from paimon_index.spark.session import configure
from paimon_index.table.aggregate import AggregateReport
from paimon_index.table.catalog import open_table as open_paimon

pytestmark = [pytest.mark.spark, pytest.mark.connect]

APPEND_SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("n", pa.int32())])
PK_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("tag", pa.string()), ("n", pa.int32())])
APPEND_COLUMNS = "id BIGINT, tag STRING, n INT"
PK_COLUMNS = "k BIGINT, tag STRING, n INT"
Row = tuple[int, str | None, int | None]


def _pypaimon_rows(warehouse: str, table: str) -> list[tuple]:
    """pypaimon's own read (deletion vectors applied), sorted."""
    paimon = open_paimon(warehouse, table)
    builder = paimon.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(*(rows[c].to_pylist() for c in rows.column_names), strict=True))


def _our_rows(warehouse: str, table: str) -> list[tuple]:
    rows = paimon_index.open_table(warehouse, table).read()
    return sorted(zip(*(rows[c].to_pylist() for c in rows.column_names), strict=True))


def _collected(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _arrow(rows: list[Row], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema)


def _frame(spark, rows: list[Row], partitions: int):
    """Rows of the append table as a Connect DataFrame (``partitions`` tasks write them: a file each)."""
    return spark.createDataFrame(rows, APPEND_COLUMNS).repartition(partitions)


def _same_commit(ours: paimon_index.CommitResult, api: paimon_index.CommitResult) -> None:
    assert isinstance(ours, paimon_index.CommitResult)
    assert (ours.operation, ours.snapshot_id, ours.rows_affected) == (api.operation, api.snapshot_id,
                                                                       api.rows_affected)


def test_the_fixture_is_a_connect_client_of_a_two_core_server(connect_spark) -> None:
    assert _connect.is_connect(connect_spark)
    assert type(connect_spark).__module__.startswith("pyspark.sql.connect")
    assert _connect.parallelism(connect_spark) == 2  # local[2], read without a SparkContext


def test_configure_cannot_choose_the_servers_python(connect_spark) -> None:
    with pytest.raises(EnvironmentCheckError, match="PYSPARK_PYTHON"):
        configure(connect_spark, python="/nonexistent/python3")


def test_a_scan_report_accumulator_is_refused_with_what_to_use_instead(connect_spark) -> None:
    from paimon_index.spark.report import scan_report

    with pytest.raises(EnvironmentCheckError, match=r"Spark Connect.*read_planned"):
        scan_report(connect_spark)


def test_every_verb_on_an_append_table_with_indexes_and_deletion_vectors(
        connect_spark, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    spark, warehouse = connect_spark, str(tmp_path)
    options = {"deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag"}
    api = paimon_index.create_table(warehouse, "db.api", APPEND_SCHEMA, options=options)
    paimon_index.create_table(warehouse, "db.t", APPEND_SCHEMA, options=options)
    model: dict[int, Row] = {}

    def check(ours: paimon_index.CommitResult, theirs: paimon_index.CommitResult) -> None:
        _same_commit(ours, theirs)
        assert _pypaimon_rows(warehouse, "db.t") == sorted(model.values()) == _our_rows(warehouse, "db.t") \
            == _our_rows(warehouse, "db.api")

    def where(predicate) -> list[Row]:
        return sorted(r for r in model.values() if predicate(*r))

    # write: jobs.write used sparkContext (an accumulator) and failed under Connect.
    empty = jobs.write(_frame(spark, [], 1), "db.t", warehouse=warehouse)  # observed: 0 rows, no hang
    assert empty == paimon_index.CommitResult("append", None) == api.write(_arrow([], APPEND_SCHEMA))
    first = [(i, f"t{i % 4}", i % 9) for i in range(200)]
    result = jobs.write(_frame(spark, first, 1), "db.t", warehouse=warehouse)
    model.update({r[0]: r for r in first})
    check(result, api.write(_arrow(first, APPEND_SCHEMA)))
    assert (result.rows_affected, result.files_added, result.files_removed) == (200, 1, 0)
    more = [(i, f"t{i % 4}", i % 9) for i in range(200, 300)]
    result = jobs.write(_frame(spark, more, 1), "db.t", warehouse=warehouse)
    model.update({r[0]: r for r in more})
    check(result, api.write(_arrow(more, APPEND_SCHEMA)))

    # read / read_planned: Spark's Parquet reader, and the driver's small read.
    assert _collected(jobs.read(spark, "db.t", "tag = 't1' AND n > 2", warehouse=warehouse)) == \
        where(lambda i, tag, n: tag == "t1" and n > 2)
    assert _collected(jobs.read(spark, "db.t", "id < 20", ["n", "id"], warehouse=warehouse)) == \
        sorted((n, i) for i, _, n in where(lambda i, tag, n: i < 20))
    planned = jobs.read_planned(spark, "db.t", "id >= 250", warehouse=warehouse, small_read_bytes=0)
    assert planned.small_rows is None and len(planned.plan.files) == 1  # the first file: skipped by stats
    assert _collected(planned.dataframe) == where(lambda i, tag, n: i >= 250)

    # count: the bitmap answers `tag` on the driver; `n` needs tasks reading the files.
    report = AggregateReport()
    assert jobs.count(spark, "db.t", "n > 5", warehouse=warehouse, report=report) == \
        len(where(lambda i, tag, n: n > 5))
    assert report.files_read == 2
    assert jobs.count(spark, "db.t", "tag = 't2'", warehouse=warehouse) == \
        len(where(lambda i, tag, n: tag == "t2"))

    # delete / update: deletion vectors, tasks per bucket, one snapshot each.
    result = jobs.delete(spark, "db.t", "tag = 't1' AND id < 100", warehouse=warehouse)
    for row in where(lambda i, tag, n: tag == "t1" and i < 100):
        del model[row[0]]
    check(result, api.delete("tag = 't1' AND id < 100"))
    assert result.rows_affected == 25
    result = jobs.update(spark, "db.t", {"n": "n * 10", "tag": "'upd'"}, "id >= 150 AND id < 230",
                         warehouse=warehouse)
    for i, _, n in where(lambda i, tag, n: 150 <= i < 230):
        model[i] = (i, "upd", n * 10)
    check(result, api.update({"n": "n * 10", "tag": "'upd'"}, "id >= 150 AND id < 230"))
    assert result.rows_affected == 80

    # Reads over deletion vectors: Spark's reader with the deleted rows joined away (in Connect a
    # local relation sent by the client), and the driver's small read (a local relation too).
    planned = jobs.read_planned(spark, "db.t", None, warehouse=warehouse, small_read_bytes=0)
    assert planned.small_rows is None
    assert _collected(planned.dataframe) == sorted(model.values())
    small = jobs.read_planned(spark, "db.t", "id < 60 AND n > 1", warehouse=warehouse)
    assert small.small_rows is not None
    assert _collected(small.dataframe) == where(lambda i, tag, n: i < 60 and n > 1)
    report = AggregateReport()
    assert jobs.count(spark, "db.t", "n >= 5", warehouse=warehouse, report=report) == \
        len(where(lambda i, tag, n: n >= 5))
    # every live file: the two written, with vectors, and the update's (one per task that matched)
    live = open_paimon(warehouse, "db.t").new_read_builder().new_scan().plan().splits()
    assert report.files_read == sum(len(split.files) for split in live) >= 3

    # overwrite
    second = [(i, "new", -i) for i in range(300, 360)]
    result = jobs.write(_frame(spark, second, 1), "db.t", mode="overwrite",
                        warehouse=warehouse)
    model = {r[0]: r for r in second}
    check(result, api.write(_arrow(second, APPEND_SCHEMA), mode="overwrite"))
    assert (result.rows_affected, result.files_added) == (60, 1) and result.files_removed >= 3
    third = [(i, f"t{i % 3}", i) for i in range(400, 500)]
    result = jobs.write(_frame(spark, third, 2), "db.t", warehouse=warehouse)
    model.update({r[0]: r for r in third})
    check(result, api.write(_arrow(third, APPEND_SCHEMA)))

    # rewrite_file_index: one task per group of files; the progress bar has no accumulator here.
    for name in ("db.t", "db.api"):
        paimon_index.open_table(warehouse, name).alter_options(set={"file-index.bloom-filter.columns": "id"})
    api = paimon_index.open_table(warehouse, "db.api")
    capsys.readouterr()
    result = jobs.rewrite_file_index(spark, "db.t", warehouse=warehouse, progress=True)
    files = len(jobs.read_planned(spark, "db.t", None, warehouse=warehouse).plan.files)
    assert f"] {files}/{files} files" in capsys.readouterr().err
    check(result, api.rewrite_file_index())
    assert result.snapshot_id is not None and result.files_added == result.files_removed == files
    assert _collected(jobs.read(spark, "db.t", "id = 433", warehouse=warehouse)) == [model[433]]

    # maintenance (driver): expire, orphans
    expired = jobs.expire_snapshots(spark, "db.t", retain_last=2, warehouse=warehouse)
    api_expired = api.expire_snapshots(retain_last=2)
    assert expired.expired_snapshots == api_expired.expired_snapshots and len(expired.expired_snapshots) >= 5
    # Files of the expired snapshots only: the Spark UPDATE writes one file per task that matched
    # rows (here two), the API's one, so the Spark table has as many files to expire or more.
    assert 0 < len(api_expired.deleted_files) <= len(expired.deleted_files)
    assert not [f for f in expired.deleted_files if os.path.exists(f)]
    past = time.time() - 3600
    stray = tmp_path / "db.db" / "t" / "bucket-0" / "data-orphan.parquet"
    stray.write_bytes(b"not referenced")
    os.utime(stray, (past, past))
    orphans = jobs.remove_orphan_files(spark, "db.t", older_than=time.time() - 60, warehouse=warehouse)
    assert [Path(f).name for f in orphans.deleted_files] == ["data-orphan.parquet"] and not stray.exists()
    assert _pypaimon_rows(warehouse, "db.t") == sorted(model.values()) == _our_rows(warehouse, "db.t")


def test_every_verb_on_a_primary_key_table_in_deletion_vector_mode(connect_spark, tmp_path: Path) -> None:
    spark, warehouse = connect_spark, str(tmp_path)
    options = {"bucket": "2", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag"}
    api = paimon_index.create_table(warehouse, "db.api", PK_SCHEMA, primary_keys=["k"], options=options)
    paimon_index.create_table(warehouse, "db.t", PK_SCHEMA, primary_keys=["k"], options=options)
    model: dict[int, Row] = {}

    def check(ours: paimon_index.CommitResult, theirs: paimon_index.CommitResult) -> None:
        _same_commit(ours, theirs)
        assert _pypaimon_rows(warehouse, "db.t") == sorted(model.values()) == _our_rows(warehouse, "db.t") \
            == _our_rows(warehouse, "db.api")

    rows = [(k, f"t{k % 3}", k) for k in range(120)]
    result = jobs.upsert(spark, spark.createDataFrame(rows, PK_COLUMNS), "db.t", warehouse=warehouse)
    model.update({r[0]: r for r in rows})
    check(result, api.upsert(_arrow(rows, PK_SCHEMA)))
    assert result.rows_affected == 120 and result.files_added >= 2  # both buckets

    changed = [(k, "changed", -k) for k in range(100, 140)]
    result = jobs.write(spark.createDataFrame(changed, PK_COLUMNS), "db.t", warehouse=warehouse)  # upserts
    model.update({r[0]: r for r in changed})
    check(result, api.write(_arrow(changed, PK_SCHEMA)))
    assert result.rows_affected == 40

    result = jobs.delete(spark, "db.t", "tag = 't1' AND k < 60", warehouse=warehouse)
    for k in [k for k, tag, _ in model.values() if tag == "t1" and k < 60]:
        del model[k]
    check(result, api.delete("tag = 't1' AND k < 60"))
    assert result.rows_affected == 20

    result = jobs.update(spark, "db.t", {"n": "n + 1000", "tag": "'upd'"}, "k >= 130", warehouse=warehouse)
    for k, _, n in [r for r in model.values() if r[0] >= 130]:
        model[k] = (k, "upd", n + 1000)
    check(result, api.update({"n": "n + 1000", "tag": "'upd'"}, "k >= 130"))
    assert result.rows_affected == 10

    assert jobs.count(spark, "db.t", "n < 0", warehouse=warehouse) == \
        sum(1 for _, _, n in model.values() if n < 0) == 30
    assert _collected(jobs.read(spark, "db.t", "tag = 'changed'", warehouse=warehouse)) == \
        sorted(r for r in model.values() if r[1] == "changed")
    planned = jobs.read_planned(spark, "db.t", None, warehouse=warehouse, small_read_bytes=0)
    assert _collected(planned.dataframe) == sorted(model.values())

    result = jobs.compact(spark, "db.t", full=True, warehouse=warehouse)
    check(result, api.compact(full=True))
    assert result.operation == "compact" and result.snapshot_id is not None and result.files_removed >= 2
    expired = jobs.expire_snapshots(spark, "db.t", retain_last=1, warehouse=warehouse)
    assert expired.expired_snapshots == api.expire_snapshots(retain_last=1).expired_snapshots
    orphans = jobs.remove_orphan_files(spark, "db.t", older_than=time.time() - 60, warehouse=warehouse)
    assert orphans.deleted_files == ()
    assert _pypaimon_rows(warehouse, "db.t") == sorted(model.values()) == _our_rows(warehouse, "db.t")


#: Run in a fresh interpreter: the verbs that ran tasks through the SparkContext, then what the
#: process holds. A fresh process, because a pytest run may hold a classic session of tests/spark.
_CLIENT = r"""
import json, os, sys, time
import pyarrow as pa
import pyspark
from pyspark.sql import SparkSession
import paimon_index
from paimon_index.spark import jobs
from paimon_index.spark.session import configure

url, warehouse = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.remote(url).getOrCreate()
configure(spark)
schema = pa.schema([("id", pa.int64()), ("n", pa.int32())])
paimon_index.create_table(warehouse, "db.t", schema, options={"deletion-vectors.enabled": "true"})
written = jobs.write(spark.createDataFrame([(i, i % 5) for i in range(50)], "id BIGINT, n INT"), "db.t",
                     warehouse=warehouse)
deleted = jobs.delete(spark, "db.t", "n = 0", warehouse=warehouse)
counted = jobs.count(spark, "db.t", "n > 2", warehouse=warehouse)
paimon_index.open_table(warehouse, "db.t").alter_options(set={"file-index.bloom-filter.columns": "id"})
rewritten = jobs.rewrite_file_index(spark, "db.t", warehouse=warehouse)
read = sorted(tuple(r) for r in jobs.read(spark, "db.t", "id < 8", warehouse=warehouse).collect())

def descendants(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found

def command(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""

java = [command(p) for p in descendants(os.getpid()) if "java" in command(p)]
print(json.dumps({"written": written.rows_affected, "deleted": deleted.rows_affected, "count": counted,
                  "rewritten": rewritten.snapshot_id is not None, "read": read,
                  "context": pyspark.SparkContext._active_spark_context is not None,
                  "gateway": pyspark.SparkContext._gateway is not None, "java": java}))
"""


@pytest.mark.slow  # CI's budget (34 s): a client process of its own running the verbs
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="lists child processes through /proc")
def test_the_client_process_starts_no_jvm(connect_server, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(paimon_index.__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")])}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    done = subprocess.run([sys.executable, "-c", _CLIENT, connect_server.url, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    # The verbs did their work through the server ...
    assert (got["written"], got["deleted"], got["count"], got["rewritten"]) == (50, 10, 20, True)
    assert got["read"] == [[i, i % 5] for i in range(8) if i % 5]
    # ... and this process never had a JVM: no SparkContext, no Py4J gateway, no java child.
    assert (got["context"], got["gateway"], got["java"]) == (False, False, [])



def test_a_project_error_a_task_raises_is_raised_as_itself(connect_spark) -> None:
    """As in classic mode (tests/spark/test_append_compaction_job.py): the server's exception
    carries the task's traceback, its last line the project error."""
    from paimon_index.errors import ConcurrentChangeError

    def refused(payload: int):  # type: ignore[no-untyped-def]  (nested: pickled by value)
        from paimon_index.errors import ConcurrentChangeError

        raise ConcurrentChangeError(f"snapshot 3 was expired while task {payload} ran: run it again")
        yield b""

    with pytest.raises(ConcurrentChangeError, match=r"^snapshot 3 was expired while task 7 ran: run it again$"
                       ):
        _connect.run_tasks(connect_spark, [7], refused)


#: Spark's warning for a task over 1000 KiB, in the server's log.
LARGE_TASK = "contains a task of very large size"


def test_payloads_reach_their_tasks_without_a_large_task(connect_spark, connect_server) -> None:
    """run_tasks broadcasts its pickled payloads as local relations; as one relation, eight payloads
    of 600 KB made a 2,421 KiB task of the broadcast's collect job (the server warned). Now each
    relation's share per leaf partition stays under LOCAL_RELATION_TASK_BYTES, and every payload
    still reaches its own task."""
    payloads = [bytes([i]) * (600 << 10) for i in range(8)]

    def run(payload: bytes):  # type: ignore[no-untyped-def]  (nested: pickled by value)
        yield bytes([payload[0]]) + len(payload).to_bytes(8, "little")

    before = connect_server.log.read_text(errors="replace").count(LARGE_TASK)
    done = _connect.run_tasks(connect_spark, payloads, run)
    assert sorted(done) == sorted(bytes([i]) + (600 << 10).to_bytes(8, "little") for i in range(8))
    log = connect_server.log.read_text(errors="replace").splitlines()
    warnings = [line for line in log if LARGE_TASK in line]
    assert len(warnings) == before, warnings[before:]
