"""Transaction: an exact commit lands as planned + 1 or raises, with real concurrent processes.

The references are a plain model of the rows (a list) and pypaimon's own read of the table.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_index.errors import ConcurrentChangeError, PaimonIndexError
from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.paimon import index_entries, latest_snapshot, snapshot_by_id
from paimon_index.table.row_level import delete_arrow, write_rows
from paimon_index.table.transaction import Transaction
from paimon_index.table.write import write_arrow

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string())])
#: ``file-index.in-manifest-threshold`` of 1 byte: every index goes to a ``.index`` file we can see.
OPTIONS = {"bucket": "-1", "file-index.bloom-filter.columns": "id", "file-index.in-manifest-threshold": "1",
           "deletion-vectors.enabled": "true"}
WRITERS = 4


def rows(ids: range | list[int], tag: str = "x") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "tag": pa.array([tag] * len(ids))})


def table_rows(table) -> list[tuple]:
    builder = table.new_read_builder()
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(got.column("id").to_pylist(), got.column("tag").to_pylist(), strict=True))


def new_table(tmp_path: Path):
    warehouse = str(tmp_path / "wh")
    table = create_table(warehouse, "db.t", SCHEMA, options=OPTIONS)
    write_arrow(table, rows(range(10), "base"))
    return warehouse, open_table(warehouse, "db.t")


def _writer(warehouse: str, planned: int, first_id: int, exact: bool, barrier, out) -> None:
    table = open_table(warehouse, "db.t")
    txn = Transaction(table, snapshot_by_id(table, planned), exact=exact, operation="test")
    txn.stage(write_rows(table, rows(range(first_id, first_id + 5), f"w{first_id}")))
    written = txn.written_files()
    barrier.wait()
    try:
        out.put(("landed", first_id, txn.commit(), written))
    except ConcurrentChangeError as e:
        out.put(("refused", first_id, str(e), written))
    except BaseException as e:  # anything else fails the test with its message
        out.put(("error", first_id, repr(e), written))


def _run_writers(warehouse: str, planned: int, exact: bool) -> list[tuple]:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(warehouse, planned, 100 * (i + 1), exact, barrier, out))
             for i in range(WRITERS)]
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return results


def test_concurrent_exact_commits_one_lands_others_refused_and_clean(tmp_path: Path) -> None:
    warehouse, table = new_table(tmp_path)
    planned = latest_snapshot(table).id
    results = _run_writers(warehouse, planned, exact=True)
    assert not [r for r in results if r[0] == "error"], results
    landed = [r for r in results if r[0] == "landed"]
    refused = [r for r in results if r[0] == "refused"]
    assert len(landed) == 1 and len(refused) == WRITERS - 1, results
    assert landed[0][2] == planned + 1
    table = open_table(warehouse, "db.t")
    assert latest_snapshot(table).id == planned + 1
    winner = landed[0][1]
    model = sorted([(i, "base") for i in range(10)] + [(i, f"w{winner}") for i in range(winner, winner + 5)])
    assert table_rows(table) == model
    for _, _, message, written in refused:
        assert "planned on snapshot" in message
        assert written and not [p for p in written if os.path.exists(p)], written
    assert all(os.path.exists(p) for p in landed[0][3])
    assert any(p.endswith(".index") for p in landed[0][3])  # the index files were tracked too


def test_concurrent_appends_all_land_none_overwritten(tmp_path: Path) -> None:
    """Plain appends retry; before the exclusive snapshot create, two processes could both "win"
    the same snapshot id and the second snapshot file replaced the first (its rows lost)."""
    warehouse, table = new_table(tmp_path)
    planned = latest_snapshot(table).id
    results = _run_writers(warehouse, planned, exact=False)
    assert [r[0] for r in results] == ["landed"] * WRITERS, results
    assert sorted(r[2] for r in results) == list(range(planned + 1, planned + 1 + WRITERS))
    model = [(i, "base") for i in range(10)]
    for _, first, _, _ in results:
        model += [(i, f"w{first}") for i in range(first, first + 5)]
    assert table_rows(open_table(warehouse, "db.t")) == sorted(model)


def test_commit_after_another_commit_is_refused_and_cleans_up(tmp_path: Path) -> None:
    _, table = new_table(tmp_path)
    txn = Transaction.begin(table, operation="delete")
    txn.stage(write_rows(table, rows([77])))
    written = txn.written_files()
    assert written and all(os.path.exists(p) for p in written)
    write_arrow(table, rows([5], "other"))  # lands as planned + 1
    with pytest.raises(ConcurrentChangeError, match=r"delete on table .* planned on snapshot 1, but "
                                                    r"snapshot 2 was committed"):
        txn.commit()
    assert not [p for p in written if os.path.exists(p)]
    assert latest_snapshot(table).id == 2
    assert (77, "x") not in table_rows(table)
    with pytest.raises(PaimonIndexError, match="transaction is failed"):
        txn.commit()


def test_refused_commit_leaves_no_manifest_behind(tmp_path: Path) -> None:
    warehouse, table = new_table(tmp_path)
    manifest_dir = Path(warehouse) / "db.db" / "t" / "manifest"
    before = set(os.listdir(manifest_dir))
    txn = Transaction.begin(table)
    txn.stage(write_rows(table, rows([1])))
    # Another writer takes snapshot 2 between our pinned read and our publish: the commit is
    # prepared on snapshot 1 and its manifests written, then the exclusive create is refused.
    other = Transaction.begin(table)
    other.stage(write_rows(table, rows([2])))
    assert other.commit() == 2
    after_other = set(os.listdir(manifest_dir))
    with pytest.raises(ConcurrentChangeError):
        txn.commit()
    assert set(os.listdir(manifest_dir)) == after_other and before <= after_other


def test_abort_and_with_block_delete_written_files(tmp_path: Path) -> None:
    _, table = new_table(tmp_path)
    txn = Transaction.begin(table)
    txn.stage(write_rows(table, rows([1, 2])))
    written = txn.written_files()
    txn.abort()
    assert written and not [p for p in written if os.path.exists(p)]
    with pytest.raises(RuntimeError, match="boom"), Transaction.begin(table) as block:
        block.stage(write_rows(table, rows([3])))
        written = block.written_files()
        raise RuntimeError("boom")
    assert not [p for p in written if os.path.exists(p)]
    assert latest_snapshot(table).id == 1


def test_nothing_staged_commits_nothing(tmp_path: Path) -> None:
    _, table = new_table(tmp_path)
    assert Transaction.begin(table).commit() is None
    assert Transaction.begin(table, exact=False).commit() is None
    assert latest_snapshot(table).id == 1


def test_exact_commit_returns_planned_plus_one(tmp_path: Path) -> None:
    _, table = new_table(tmp_path)
    txn = Transaction.begin(table)
    txn.stage(write_rows(table, rows([42])))
    assert txn.commit() == 2
    assert snapshot_by_id(table, 2).commit_user == txn.commit_user
    assert (42, "x") in table_rows(table)


def test_empty_table_commits_snapshot_one(tmp_path: Path) -> None:
    table = create_table(str(tmp_path / "wh"), "db.t", SCHEMA, options=OPTIONS)
    txn = Transaction.begin(table)
    assert txn.snapshot_id is None
    txn.stage(write_rows(table, rows([1])))
    assert txn.commit() == 1


def test_overwrite_drops_deletion_vectors_of_replaced_files(tmp_path: Path) -> None:
    """Issue 11 item 3: the overwrite kept the DV entries of the files it removed."""
    _, table = new_table(tmp_path)
    assert delete_arrow(table, "id < 3") is not None
    assert index_entries(table, latest_snapshot(table), "DELETION_VECTORS")
    txn = Transaction.begin(table, overwrite=True, operation="overwrite")
    txn.stage(write_rows(table, rows(range(50, 55), "new")))
    snapshot = txn.commit()
    assert snapshot is not None
    assert index_entries(table, latest_snapshot(table), "DELETION_VECTORS") == []
    assert table_rows(table) == [(i, "new") for i in range(50, 55)]
    assert delete_arrow(table, "id = 51") == snapshot + 1
    assert table_rows(table) == [(i, "new") for i in (50, 52, 53, 54)]


def test_rewritten_data_file_is_not_deleted_on_abort(tmp_path: Path) -> None:
    """A DELETE + ADD of one data file name (index rewrite) must never delete the data file."""
    from dataclasses import replace

    from paimon_index.table.paimon import CommitMessage

    _, table = new_table(tmp_path)
    split = table.new_read_builder().new_scan().plan().splits()[0]
    meta = split.files[0]
    index_name = meta.file_name + "-1.index"
    new_meta = replace(meta, extra_files=[index_name], embedded_index=None)
    index_path = new_meta.aligned_file_path(index_name)
    Path(index_path).write_bytes(b"x")
    txn = Transaction.begin(table, operation="rewrite_file_index")
    txn.stage(CommitMessage(partition=tuple(split.partition.values), bucket=split.bucket,
                            new_files=[new_meta], deleted_files=[meta]))
    assert txn.written_files() == [index_path]
    txn.abort()
    assert not os.path.exists(index_path)
    assert os.path.exists(meta.physical_path())
