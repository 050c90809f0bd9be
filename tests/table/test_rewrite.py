"""rewrite_file_index: only out-of-date files change, in one snapshot, and answers stay the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_index.errors import ConcurrentChangeError, InvalidPredicateError, TableError
from paimon_index.fileindex.format import ContainerReader
from paimon_index.table.catalog import alter_table_options, catalog, create_table, open_table
from paimon_index.table.read import read_arrow
from paimon_index.table.rewrite import (
    REASON_INDEX_TYPES_CHANGED,
    REASON_INDEX_UNREADABLE,
    REASON_VERIFY,
    build_current_container,
    commit_rewrite,
    next_index_file_name,
    plan_rewrite,
    rewrite_file,
    rewrite_file_index,
)
from paimon_index.table.row_level import delete_arrow
from paimon_index.table.system import file_indexes
from paimon_index.table.write import write_arrow

NAME = "db.t"
SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("score", pa.int32()), ("dt", pa.string())])
QUERIES = ["id = 1234", "tag = 't7' AND score > 50", "score BETWEEN 10 AND 12", "tag IN ('t1', 't2')",
           "id = 99999999"]
ROWS_PER_WRITE = 1000
WRITES = 3


def _batch(first: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(first, first + ROWS_PER_WRITE)
    return pa.table({"id": ids, "tag": [f"t{i % 40}" for i in ids],
                     "score": rng.integers(0, 100, ROWS_PER_WRITE).astype(np.int32),
                     "dt": np.where(ids % 2 == 0, "a", "b")}, schema=SCHEMA)


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    """Six files (three writes x two partitions), embedded bitmaps on tag, deletion vectors."""
    warehouse = str(tmp_path)
    table = create_table(warehouse, NAME, SCHEMA, partition_keys=["dt"], options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag",
        "file-index.in-manifest-threshold": "1mb"})
    rng = np.random.default_rng(5)
    for write in range(WRITES):
        write_arrow(table, _batch(write * ROWS_PER_WRITE, rng))
    delete_arrow(table, "tag = 't7' AND id < 1500")  # vectors keyed by data-file name must survive
    delete_arrow(table, "id = 1234")
    return warehouse


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def _table(warehouse: str) -> Any:
    return open_table(warehouse, NAME)


def _metas(warehouse: str) -> dict[str, tuple[Any, str]]:
    """file name -> (DataFileMeta, partition value) of every live data file (all levels)."""
    splits = _table(warehouse).new_read_builder().new_scan().plan_for_write().splits()
    out: dict[str, tuple[Any, str]] = {}
    for split in splits:
        for meta in split.files:
            assert meta.file_name not in out, f"{meta.file_name} is live twice"
            out[meta.file_name] = (meta, split.partition.values[0])
    return out


def _state(meta: Any) -> tuple[tuple[str, ...], bytes | None]:
    return tuple(meta.extra_files or ()), meta.embedded_index


def _listing(warehouse: str) -> dict[str, set[tuple[str, str, str]]]:
    out: dict[str, set[tuple[str, str, str]]] = {}
    for row in file_indexes(_table(warehouse)).to_pylist():
        out.setdefault(Path(row["file_path"]).name, set()).add((row["column"], row["index_type"],
                                                                  row["storage"]))
    return out


def _ids(rows: pa.Table) -> list[int]:
    # read_arrow returns a table without columns when every file was skipped
    return sorted(rows.column("id").to_pylist()) if rows.num_columns else []


def _answers(warehouse: str, use_index: bool = True) -> dict[str, list[int]]:
    table = _table(warehouse)
    return {q: _ids(read_arrow(table, q, use_index=use_index)[0]) for q in QUERIES}


def _pypaimon_rows(warehouse: str) -> list[tuple[Any, ...]]:
    builder = _table(warehouse).new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(*(rows.column(c).to_pylist() for c in SCHEMA.names), strict=True))


def _snapshot(warehouse: str) -> int:
    return _table(warehouse).snapshot_manager().get_latest_snapshot().id


def _dv_entries(warehouse: str) -> set[tuple[Any, ...]]:
    from pypaimon.index.index_file_handler import IndexFileHandler

    table = _table(warehouse)
    snapshot = table.snapshot_manager().get_latest_snapshot()
    out = set()
    for entry in IndexFileHandler(table).scan(snapshot):
        ranges = tuple(sorted((name, r.offset, r.length)
                              for name, r in (entry.index_file.dv_ranges or {}).items()))
        out.add((entry.index_file.index_type, entry.index_file.file_name, ranges))
    return out


@pytest.fixture
def truth(warehouse: str) -> tuple[dict[str, list[int]], list[tuple[Any, ...]]]:
    """Query answers without indexes, and pypaimon's own rows, before any rewrite."""
    answers = _answers(warehouse, use_index=False)
    assert _answers(warehouse) == answers
    return answers, _pypaimon_rows(warehouse)


def _same_answers(warehouse: str, truth: tuple[dict[str, list[int]], list[tuple[Any, ...]]]) -> None:
    answers, rows = truth
    assert _answers(warehouse) == answers
    assert _answers(warehouse, use_index=False) == answers
    assert _pypaimon_rows(warehouse) == rows


def _rewrite(warehouse: str, **kwargs: Any) -> int | None:
    """rewrite_file_index, checking it adds exactly one snapshot (or none when it returns None)."""
    before = _snapshot(warehouse)
    snapshot = rewrite_file_index(_table(warehouse), **kwargs)
    assert _snapshot(warehouse) == (before if snapshot is None else before + 1)
    assert snapshot is None or snapshot == before + 1
    return snapshot


def _changed(before: dict[str, tuple[Any, str]], after: dict[str, tuple[Any, str]]) -> set[str]:
    assert set(before) == set(after)  # no data file appears or disappears
    return {name for name in before if _state(before[name][0]) != _state(after[name][0])}


# ------------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------------
def test_index_file_names_follow_paimon() -> None:
    assert next_index_file_name("data-1-0.parquet", None) == "data-1-0.parquet.index"
    assert next_index_file_name("data-1-0.parquet", "data-1-0.parquet.index") == "data-1-0.parquet-1.index"
    assert next_index_file_name("data-1-0.parquet", "data-1-0.parquet-1.index") == "data-1-0.parquet-2.index"
    assert next_index_file_name("data-1-0.parquet", "data-1-0.parquet-9.index") == "data-1-0.parquet-10.index"


def test_nothing_is_committed_when_every_index_is_up_to_date(warehouse: str) -> None:
    tasks = plan_rewrite(_table(warehouse)).tasks
    assert len(tasks) == 2 * WRITES and all(t.verify and t.reason == REASON_VERIFY for t in tasks)
    seen: list[tuple[int, int]] = []
    assert _rewrite(warehouse, progress=lambda done, total: seen.append((done, total))) is None
    assert seen == [(i, len(tasks)) for i in range(1, len(tasks) + 1)]


def test_adding_index_types_rewrites_every_file_and_the_new_indexes_are_used(warehouse: str, truth) -> None:
    before, dvs = _metas(warehouse), _dv_entries(warehouse)
    alter_table_options(warehouse, NAME, set_options={
        "file-index.bloom-filter.columns": "id", "file-index.range-bitmap.columns": "score",
        "file-index.bloom-filter.id.items": "2000", "file-index.in-manifest-threshold": "64b"})
    tasks = plan_rewrite(_table(warehouse)).tasks
    assert all(not t.verify and t.reason == REASON_INDEX_TYPES_CHANGED for t in tasks)  # no byte compare

    assert _rewrite(warehouse) is not None
    after = _metas(warehouse)
    assert _changed(before, after) == set(before)
    assert all(kinds == {("tag", "bitmap", "FILE"), ("id", "bloom-filter", "FILE"),
                         ("score", "range-bitmap", "FILE")} for kinds in _listing(warehouse).values())
    for name, (meta, _) in after.items():
        assert meta.extra_files == [name + ".index"] and meta.embedded_index is None
        assert meta.row_count == before[name][0].row_count and meta.file_size == before[name][0].file_size
    assert _dv_entries(warehouse) == dvs  # the deletion vectors are untouched ...
    _same_answers(warehouse, truth)  # ... and still apply (deleted rows stay deleted)

    _, report = read_arrow(_table(warehouse), "id = 99999999")
    assert report.files_skipped_by_index == len(after)  # the new bloom filters are used
    _, report = read_arrow(_table(warehouse), "score BETWEEN 10 AND 12")
    assert 0 < report.rows_selected_by_index == report.rows_read == report.rows_returned  # exact
    assert _rewrite(warehouse) is None  # now up to date


def test_only_out_of_date_files_are_rewritten(warehouse: str, truth) -> None:
    """Files written after the ALTER already carry the new index; only the older ones change."""
    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.columns": "id"})
    old = _metas(warehouse)
    write_arrow(_table(warehouse), _batch(10_000, np.random.default_rng(1)))  # two files with bloom
    written = _metas(warehouse)
    fresh = set(written) - set(old)
    assert len(fresh) == 2

    tasks = plan_rewrite(_table(warehouse)).tasks
    assert {t.file.file_name for t in tasks if not t.verify} == set(old)
    assert {t.file.file_name for t in tasks if t.verify} == fresh
    assert _rewrite(warehouse) is not None
    assert _changed(written, _metas(warehouse)) == set(old)
    answers = _answers(warehouse, use_index=False)
    assert _answers(warehouse) == answers and answers["id = 1234"] == []


def test_changed_index_option_is_found_by_comparing_bytes(warehouse: str, truth) -> None:
    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.columns": "id"})
    _rewrite(warehouse)
    before = _metas(warehouse)
    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.id.fpp": "0.001"})
    tasks = plan_rewrite(_table(warehouse)).tasks
    assert all(t.verify for t in tasks)  # same index types: only the bytes can tell
    assert _rewrite(warehouse) is not None
    assert _changed(before, _metas(warehouse)) == set(before)
    _same_answers(warehouse, truth)


def test_bitmap_to_range_bitmap_and_removing_a_type(warehouse: str, truth) -> None:
    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.columns": "id",
                                                      "file-index.bitmap.columns": "tag,score"})
    _rewrite(warehouse)
    assert all(kinds == {("tag", "bitmap", "EMBEDDED"), ("score", "bitmap", "FILE"),
                         ("id", "bloom-filter", "FILE")} or {k[:2] for k in kinds} ==
               {("tag", "bitmap"), ("score", "bitmap"), ("id", "bloom-filter")}
               for kinds in _listing(warehouse).values())
    # score: bitmap -> range-bitmap; the bloom filter on id is dropped
    alter_table_options(warehouse, NAME, set_options={"file-index.bitmap.columns": "tag",
                                                      "file-index.range-bitmap.columns": "score"},
                        remove=["file-index.bloom-filter.columns"])
    assert _rewrite(warehouse) is not None
    assert all({k[:2] for k in kinds} == {("tag", "bitmap"), ("score", "range-bitmap")}
               for kinds in _listing(warehouse).values())
    _same_answers(warehouse, truth)
    _, report = read_arrow(_table(warehouse), "score BETWEEN 10 AND 12")
    assert 0 < report.rows_selected_by_index == report.rows_read == report.rows_returned  # exact


def test_empty_configuration_removes_every_index(warehouse: str, truth) -> None:
    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.columns": "id",
                                                      "file-index.in-manifest-threshold": "16b"})
    _rewrite(warehouse)  # every container now lives in an .index file
    alter_table_options(warehouse, NAME, remove=["file-index.bloom-filter.columns",
                                                 "file-index.bitmap.columns"])
    assert _rewrite(warehouse) is not None
    assert _listing(warehouse) == {}
    assert all(meta.extra_files == [] and meta.embedded_index is None
               for meta, _ in _metas(warehouse).values())
    _same_answers(warehouse, truth)
    assert plan_rewrite(_table(warehouse)).tasks == [] and _rewrite(warehouse) is None


def test_moving_between_embedded_and_index_files(warehouse: str, truth) -> None:
    before = _metas(warehouse)
    assert all(meta.embedded_index and not meta.extra_files for meta, _ in before.values())

    def alter(**options: str) -> int | None:
        alter_table_options(warehouse, NAME, set_options=options)
        snapshot = _rewrite(warehouse)
        _same_answers(warehouse, truth)
        return snapshot

    assert alter(**{"file-index.in-manifest-threshold": "16b"}) is not None  # embedded -> file
    step1 = _metas(warehouse)
    assert all(meta.extra_files == [name + ".index"] and meta.embedded_index is None
               for name, (meta, _) in step1.items())
    for name, (meta, _) in step1.items():
        index = Path(meta.file_path).parent / meta.extra_files[0]
        assert index.read_bytes() == before[name][0].embedded_index

    # Back to a large threshold: the entry "this file with these embedded bytes" was deleted by the
    # previous rewrite, and an ADD of a deleted entry is invisible to Paimon's scans; so the bytes
    # stay in their index file (already up to date: nothing is committed).
    assert alter(**{"file-index.in-manifest-threshold": "1mb"}) is None

    # New bytes can be embedded ...
    assert alter(**{"file-index.bloom-filter.columns": "id"}) is not None
    step3 = _metas(warehouse)
    assert all(meta.embedded_index and not meta.extra_files for meta, _ in step3.values())
    # ... and moved to a file again: <data-file>.index is taken (snapshot 2 still reads it), so -1
    assert alter(**{"file-index.in-manifest-threshold": "16b"}) is not None
    for name, (meta, _) in _metas(warehouse).items():
        assert meta.extra_files == [name + "-1.index"]
        directory = Path(meta.file_path).parent
        assert (directory / (name + ".index")).read_bytes() == before[name][0].embedded_index  # untouched
        assert (directory / (name + "-1.index")).read_bytes() == step3[name][0].embedded_index
    assert {k[2] for kinds in _listing(warehouse).values() for k in kinds} == {"FILE"}


def test_removing_then_re_adding_an_index_keeps_every_file_visible(warehouse: str, truth) -> None:
    """Re-adding the index rebuilds the very entry the removal deleted: it must not be re-added as is."""
    before = _metas(warehouse)
    alter_table_options(warehouse, NAME, remove=["file-index.bitmap.columns"])
    assert _rewrite(warehouse) is not None and _listing(warehouse) == {}
    alter_table_options(warehouse, NAME, set_options={"file-index.bitmap.columns": "tag"})
    tasks = plan_rewrite(_table(warehouse)).tasks
    assert all(task.retired for task in tasks)  # each file's embedded entry was deleted once
    assert _rewrite(warehouse) is not None
    after = _metas(warehouse)
    assert set(after) == set(before)  # every file still live, exactly once
    for name, (meta, _) in after.items():  # same bytes, in an index file
        assert meta.extra_files == [name + ".index"]
        index = Path(meta.file_path).parent / meta.extra_files[0]
        assert index.read_bytes() == before[name][0].embedded_index
    _same_answers(warehouse, truth)
    assert _rewrite(warehouse) is None


def test_an_add_of_a_deleted_entry_is_invisible(warehouse: str) -> None:
    """Why ``RewriteTask.retired`` exists: pypaimon (as Paimon) drops every ADD whose identifier
    some DELETE in the snapshot's manifests holds, whatever the order."""
    from dataclasses import replace

    from pypaimon.write.commit_message import CommitMessage

    table = _table(warehouse)
    split = table.new_read_builder().new_scan().plan_for_write().splits()[0]
    meta = split.files[0]
    partition = tuple(split.partition.values)
    bare = replace(meta, embedded_index=None)
    commit_rewrite(table, [CommitMessage(partition, split.bucket, new_files=[bare], deleted_files=[meta])])
    assert meta.file_name in _metas(warehouse)
    commit_rewrite(_table(warehouse), [CommitMessage(partition, split.bucket, new_files=[meta],
                                                     deleted_files=[bare])])
    assert meta.file_name not in _metas(warehouse)  # the data file has vanished from the table


def test_partition_restricted_rewrite_touches_only_that_partition(warehouse: str, truth) -> None:
    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.columns": "id"})
    before = _metas(warehouse)
    in_a = {name for name, (_, dt) in before.items() if dt == "a"}
    assert len(plan_rewrite(_table(warehouse), "dt = 'a'").tasks) == len(in_a)
    assert plan_rewrite(_table(warehouse), {"dt": "zzz"}).tasks == []
    assert len(plan_rewrite(_table(warehouse), [{"dt": "a"}, {"dt": "b"}]).tasks) == len(before)

    assert _rewrite(warehouse, where="dt = 'a'") is not None
    middle = _metas(warehouse)
    assert _changed(before, middle) == in_a
    assert _rewrite(warehouse, where="dt = 'a'") is None  # that partition is now up to date
    assert _rewrite(warehouse, where={"dt": "b"}) is not None
    assert _changed(middle, _metas(warehouse)) == set(before) - in_a
    _same_answers(warehouse, truth)

    with pytest.raises(InvalidPredicateError, match="unknown column"):
        plan_rewrite(_table(warehouse), "id = 1")
    with pytest.raises(InvalidPredicateError, match="not partition columns"):
        plan_rewrite(_table(warehouse), {"tag": "t1"})


def test_unreadable_index_file_is_rebuilt(warehouse: str, truth) -> None:
    alter_table_options(warehouse, NAME, set_options={"file-index.in-manifest-threshold": "16b"})
    _rewrite(warehouse)
    meta, _ = next(iter(_metas(warehouse).values()))
    index = Path(meta.file_path).parent / meta.extra_files[0]
    good = index.read_bytes()
    index.write_bytes(b"garbage")
    tasks = {t.file.file_name: t for t in plan_rewrite(_table(warehouse)).tasks}
    assert tasks[meta.file_name].reason == REASON_INDEX_UNREADABLE
    assert sum(not t.verify for t in tasks.values()) == 1
    assert _rewrite(warehouse) is not None
    repaired, _ = _metas(warehouse)[meta.file_name]
    assert (Path(meta.file_path).parent / repaired.extra_files[0]).read_bytes() == good
    _same_answers(warehouse, truth)


def test_a_stale_rewrite_is_refused_and_changes_nothing(warehouse: str, truth) -> None:
    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.columns": "id",
                                                      "file-index.in-manifest-threshold": "16b"})
    table = _table(warehouse)
    plan = plan_rewrite(table)
    stale = plan.messages(rewrite_file(table, task) for task in plan.tasks)
    stale_files = [Path(m.new_files[0].aligned_file_path(x))
                   for m in stale for x in m.new_files[0].extra_files]
    assert stale_files and all(p.exists() for p in stale_files)
    winner = _rewrite(warehouse)  # another job commits the same rewrite first
    state = _metas(warehouse)
    with pytest.raises(ConcurrentChangeError, match="run it again"):
        commit_rewrite(_table(warehouse), stale, snapshot_id=plan.snapshot_id)
    assert _snapshot(warehouse) == winner and _changed(state, _metas(warehouse)) == set()
    # the stale job wrote <data-file>.index first, so the winner took the next name; the refused
    # job's index files are gone, the winner's are there
    assert all(meta.extra_files == [name + "-1.index"] for name, (meta, _) in state.items())
    assert not [p for p in stale_files if p.exists()]
    assert all((Path(meta.file_path).parent / meta.extra_files[0]).exists() for meta, _ in state.values())
    _same_answers(warehouse, truth)


def test_a_stale_rewrite_without_its_plan_is_still_refused(warehouse: str, truth) -> None:
    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.columns": "id",
                                                      "file-index.in-manifest-threshold": "16b"})
    table = _table(warehouse)
    plan = plan_rewrite(table)
    stale = plan.messages(rewrite_file(table, task) for task in plan.tasks)
    winner = _rewrite(warehouse)
    with pytest.raises(ConcurrentChangeError, match="run it again"):
        commit_rewrite(_table(warehouse), stale)  # based on the latest snapshot: pypaimon's check
    assert _snapshot(warehouse) == winner
    _same_answers(warehouse, truth)


def test_a_column_added_later_is_indexed_only_where_it_exists(tmp_path: Path) -> None:
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    warehouse = str(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("tag", pa.string())])
    table = create_table(warehouse, NAME, schema, options={"bucket": "-1"})
    write_arrow(table, pa.table({"id": list(range(100)), "tag": ["x"] * 100}, schema=schema))
    catalog(warehouse).alter_table(NAME, [SchemaChange.add_column("extra", AtomicType("STRING"))])
    table = _table(warehouse)
    wide = pa.schema([*schema, ("extra", pa.string())])
    write_arrow(table, pa.table({"id": list(range(100, 200)), "tag": ["y"] * 100,
                                 "extra": [f"e{i % 3}" for i in range(100)]}, schema=wide))
    alter_table_options(warehouse, NAME, set_options={"file-index.bitmap.columns": "extra,tag"})

    assert _rewrite(warehouse) is not None
    kinds = {Path(r["file_path"]).name: set() for r in file_indexes(_table(warehouse)).to_pylist()}
    for row in file_indexes(_table(warehouse)).to_pylist():
        kinds[Path(row["file_path"]).name].add(row["column"])
    assert sorted(kinds.values(), key=len) == [{"tag"}, {"tag", "extra"}]
    assert _rewrite(warehouse) is None  # the older file's missing column causes no endless rewrite
    builder = _table(warehouse).new_read_builder()
    assert builder.new_read().to_arrow(builder.new_scan().plan().splits()).num_rows == 200


def test_a_renamed_column_is_indexed_under_its_name_in_the_file(tmp_path: Path) -> None:
    from pypaimon.schema.schema_change import SchemaChange

    warehouse = str(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("tag", pa.string())])
    table = create_table(warehouse, NAME, schema, options={"bucket": "-1"})
    write_arrow(table, pa.table({"id": list(range(100)), "tag": ["x"] * 100}, schema=schema))
    catalog(warehouse).alter_table(NAME, [SchemaChange.rename_column("tag", "label")])
    alter_table_options(warehouse, NAME, set_options={"file-index.bitmap.columns": "label"})

    table = _table(warehouse)
    meta = plan_rewrite(table).tasks[0].file
    with ContainerReader(build_current_container(table, meta)) as container:
        assert container.columns == ["tag"]  # as Paimon's FileIndexProcessor maps it, by field id
    assert _rewrite(warehouse) is not None and _rewrite(warehouse) is None


def test_primary_key_table_in_deletion_vectors_mode(tmp_path: Path) -> None:
    from paimon_index.table.pk import read_primary_key, upsert_arrow

    warehouse = str(tmp_path)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("tag", pa.string())])
    table = create_table(warehouse, "db.pk", schema, primary_keys=["k"], options={
        "bucket": "2", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag"})
    for round_ in range(3):  # overlapping keys: later rounds mark older rows deleted
        keys = list(range(round_ * 50, round_ * 50 + 100))
        upsert_arrow(table, pa.table({"k": keys, "tag": [f"r{round_}-{k % 4}" for k in keys]}, schema=schema))
    table = open_table(warehouse, "db.pk")

    def contents() -> list[tuple[int, str]]:
        rows, _ = read_primary_key(open_table(warehouse, "db.pk"), "k IS NOT NULL")
        return sorted(zip(rows["k"].to_pylist(), rows["tag"].to_pylist(), strict=True))

    def pypaimon_contents() -> list[tuple[int, str]]:
        builder = open_table(warehouse, "db.pk").new_read_builder()
        rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        return sorted(zip(rows["k"].to_pylist(), rows["tag"].to_pylist(), strict=True))

    truth = contents()
    assert truth == pypaimon_contents() and len(truth) == 200
    splits = table.new_read_builder().new_scan().plan_for_write().splits()
    files = {meta.file_name for split in splits for meta in split.files}
    alter_table_options(warehouse, "db.pk", set_options={"file-index.bloom-filter.columns": "k"})
    assert rewrite_file_index(open_table(warehouse, "db.pk")) is not None
    listing = file_indexes(open_table(warehouse, "db.pk")).to_pylist()
    assert {Path(r["file_path"]).name for r in listing if r["index_type"] == "bloom-filter"} == files
    assert contents() == truth == pypaimon_contents()
    rows, _ = read_primary_key(open_table(warehouse, "db.pk"), "k = 120")
    assert rows["tag"].to_pylist() == ["r2-0"]
    assert rewrite_file_index(open_table(warehouse, "db.pk")) is None


def test_a_rewrite_whose_planned_snapshot_expired_deletes_the_index_files_it_wrote(warehouse: str) -> None:
    """ConcurrentChangeError promises the written files are deleted; a rewrite refused because its
    planned snapshot expired left its new ``.index`` files behind (the transaction was made before
    the files were staged)."""
    from paimon_index.table.maintenance import expire_snapshots

    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.columns": "id",
                                                      "file-index.in-manifest-threshold": "64b"})
    table = _table(warehouse)
    plan = plan_rewrite(table)
    assert plan.snapshot_id is not None and plan.tasks
    messages = plan.messages(rewrite_file(table, t) for t in plan.tasks)
    written = [Path(m.new_files[0].file_path).with_name(e) for m in messages if m is not None
               for e in m.new_files[0].extra_files or ()]
    assert written and all(p.exists() for p in written)
    write_arrow(table, _batch(10 * ROWS_PER_WRITE, np.random.default_rng(1)))  # a newer snapshot
    expire_snapshots(_table(warehouse), retain_last=1)  # the planned one is gone
    with pytest.raises(ConcurrentChangeError, match="no longer exists"):
        commit_rewrite(_table(warehouse), messages, snapshot_id=plan.snapshot_id)
    assert not [p for p in written if p.exists()]


def test_a_rewrite_whose_files_an_expiry_removed_while_it_ran_is_refused(
        warehouse: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the concurrent histories (tests/table/test_reliability.py): ``rewrite_file_index``
    planned on a snapshot, another writer compacted and expired it, and the rewrite raised a raw
    ``FileNotFoundError`` -- neither a refusal to retry nor naming the operation."""
    import paimon_index
    from paimon_index.table import rewrite

    alter_table_options(warehouse, NAME, set_options={"file-index.bloom-filter.columns": "id"})
    plan = rewrite.plan_rewrite

    def planned_then_compacted_and_expired_by_another(*args: Any, **kwargs: Any) -> Any:
        tasks = plan(*args, **kwargs)
        other = paimon_index.open_table(warehouse, NAME)
        other.compact(full=True)
        other.expire_snapshots(retain_last=1)
        return tasks

    monkeypatch.setattr(rewrite, "plan_rewrite", planned_then_compacted_and_expired_by_another)
    table = paimon_index.open_table(warehouse, NAME)
    planned = table.snapshot_id
    refused = (rf"^rewrite_file_index of {NAME}: .+/data-[^/]+\.parquet was replaced by a newer commit and "
               r"expired while it ran; run it again$")
    with pytest.raises(ConcurrentChangeError, match=refused):
        table.rewrite_file_index()
    assert table.snapshot_id == planned + 1  # the other writer's compaction; the rewrite committed nothing
    monkeypatch.undo()
    assert table.rewrite_file_index().snapshot_id is None  # run again: the compaction's files have it


def test_a_change_whose_file_was_removed_by_hand_names_it(warehouse: str) -> None:
    """A file the latest snapshot lists, gone (no expiry): an error naming the change, the snapshot
    and the file, not a raw ``FileNotFoundError``."""
    import paimon_index

    table = paimon_index.open_table(warehouse, NAME)
    gone = next(Path(warehouse).glob("db.db/t/dt=a/bucket-0/data-*.parquet"))
    gone.unlink()
    with pytest.raises(TableError, match=rf"^compact of {NAME}: a file it lists is missing: .*{gone.name}$"
                       ) as caught:
        table.compact(full=True)
    assert not isinstance(caught.value, ConcurrentChangeError)
