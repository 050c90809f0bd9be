"""Snapshot publish on S3: a conditional PUT, so of several writers planned on one snapshot exactly one
lands — real processes against the real (moto) server; pypaimon's own read is the reference."""

from __future__ import annotations

import multiprocessing
import sys
from typing import Any

import pyarrow as pa
import pytest

from objectstore.conftest import S3Warehouse
from paimon_index.errors import ConcurrentChangeError, EnvironmentCheckError, NoAtomicCreateError
from paimon_index.table import fileio
from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import check_snapshot_store, latest_snapshot, snapshot_by_id
from paimon_index.table.transaction import Transaction

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string())])
WRITERS = 2


def rows(first: int, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(range(first, first + 5), pa.int64()), "tag": [tag] * 5})


def pypaimon_messages(table: Any, data: pa.Table) -> list[Any]:
    """Commit messages of pypaimon's own writer (the data files are in the bucket already)."""
    write = table.new_batch_write_builder().new_write()
    write.write_arrow(data)
    messages = write.prepare_commit()
    write.close()
    return messages


def table_rows(table: Any) -> list[tuple]:
    builder = table.new_read_builder()
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(got.column("id").to_pylist(), got.column("tag").to_pylist(), strict=True))


def new_table(s3: S3Warehouse) -> Any:
    table = create_table(s3.warehouse, "db.t", SCHEMA, options={"bucket": "-1"},
                         catalog_options=s3.catalog_options)
    with Transaction.begin(table, exact=False) as txn:
        txn.stage(pypaimon_messages(table, rows(0, "base")))
        assert txn.commit() == 1
    return open_table(s3.warehouse, "db.t", catalog_options=s3.catalog_options)


def _writer(warehouse: str, options: dict[str, str], planned: int, first: int, barrier: Any,
            out: Any) -> None:
    table = open_table(warehouse, "db.t", catalog_options=options)
    txn = Transaction(table, snapshot_by_id(table, planned), operation="test")
    txn.stage(pypaimon_messages(table, rows(first, f"w{first}")))
    written = txn.written_files()
    barrier.wait()
    try:
        out.put(("landed", first, txn.commit(), written))
    except ConcurrentChangeError as e:
        out.put(("refused", first, str(e), written))
    except BaseException as e:  # anything else fails the test with its message
        out.put(("error", first, repr(e), written))


def test_two_processes_on_one_planned_snapshot_exactly_one_lands(s3: S3Warehouse) -> None:
    table = new_table(s3)
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(WRITERS), ctx.Queue()
    args = [(s3.warehouse, s3.catalog_options, 1, 100 * (i + 1), barrier, out) for i in range(WRITERS)]
    procs = [ctx.Process(target=_writer, args=a) for a in args]
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert not [r for r in results if r[0] == "error"], results
    landed = [r for r in results if r[0] == "landed"]
    assert len(landed) == 1 and landed[0][2] == 2, results
    winner = landed[0][1]
    table = open_table(s3.warehouse, "db.t", catalog_options=s3.catalog_options)
    assert latest_snapshot(table).id == 2
    expected = sorted([(i, "base") for i in range(5)] + [(winner + i, f"w{winner}") for i in range(5)])
    assert table_rows(table) == expected
    keys = set(s3.objects())
    for _, _, _, written in (r for r in results if r[0] == "refused"):
        leftovers = [p for p in written if p.split("/", 3)[3] in keys]
        assert not leftovers, f"a refused writer left {leftovers}"
    assert "wh/db.db/t/snapshot/snapshot-3" not in keys


def test_create_exclusive_is_a_conditional_put(s3: S3Warehouse) -> None:
    table = new_table(s3)
    io = TableIO.of(table)
    path = f"s3://{s3.bucket}/wh/db.db/t/snapshot/probe"
    with s3.server.log.counting(s3.bucket) as calls:
        assert io.create_exclusive(path, b"first")
        assert not io.create_exclusive(path, b"second")
    assert io.read_bytes(path) == b"first"
    puts = [r for r in calls.items if r.method == "PUT"]
    assert [r.status for r in puts] == [200, 412]


def test_a_store_without_atomic_create_is_refused_before_anything_is_written(
        s3: S3Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    table = new_table(s3)
    # An oss:// or hdfs:// table (pypaimon can only check-then-rename there): same FileIO, other scheme.
    monkeypatch.setattr(TableIO, "scheme", property(lambda self: "oss"))
    with pytest.raises(NoAtomicCreateError, match="allow-non-atomic"):
        Transaction.begin(table)
    with pytest.raises(NoAtomicCreateError, match="oss://"):
        TableIO.of(table).create_exclusive(f"s3://{s3.bucket}/x", b"")
    assert check_snapshot_store(open_table(s3.warehouse, "db.t", catalog_options={
        **s3.catalog_options, "fs.allow-non-atomic-commit": "true"})) is None


def test_without_boto3_an_s3_commit_names_the_extra(s3: S3Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create_table(s3.warehouse, "db.t", SCHEMA, catalog_options=s3.catalog_options)
    fileio._s3_client.cache_clear()
    try:
        with monkeypatch.context() as patched:
            patched.setitem(sys.modules, "boto3", None)  # import boto3 -> ImportError
            with pytest.raises(EnvironmentCheckError, match=r"pip install 'paimon-index\[s3\]'"):
                Transaction.begin(table)  # refused before the operation writes any file
            with pytest.raises(EnvironmentCheckError, match="boto3"):
                TableIO.of(table).create_exclusive(f"s3://{s3.bucket}/wh/probe", b"x")
    finally:
        fileio._s3_client.cache_clear()
    assert "wh/probe" not in s3.objects()
