"""Append-table compaction (table/append_compaction.py), checked against Apache Paimon's Java core.

Each scenario writes small files and deletes rows through the public API, compacts, and then asks
Java Paimon (``../shared/java-paimon/oracle.sh``) to read the table: the same rows as before the
compaction, whole and filtered by an indexed column, with Java's index verdicts on the rewritten
files (embedded containers and ``.index`` files). The concurrency test commits a real DELETE
between the compaction's plan and its commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import paimon_index
from paimon_index.errors import ConcurrentChangeError, UnsupportedTableError
from paimon_index.table.append_compaction import (
    CompactOptions,
    commit_compaction,
    plan_compaction,
    rewrite_group,
)
from paimon_index.table.paimon import latest_snapshot
from paimon_index.table.plan import plan_snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("v", pa.int64()),
                    ("p", pa.int32())])


def _batch(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "s": [f"s{i % 7}" for i in ids], "v": (ids * 37) % 1000,
                     "p": (ids % 2).astype(np.int32)}, schema=SCHEMA)


def _table(warehouse: Path, *, bucket: int = -1, partitioned: bool = False, index_file: bool = False,
           dv: bool = True, **options: str) -> Any:
    opts = {"bucket": str(bucket), "file-index.bitmap.columns": "s", "file-index.bloom-filter.columns": "id",
            "file-index.bloom-filter.id.items": "1000",
            **({"deletion-vectors.enabled": "true"} if dv else {}), **options}
    if bucket > 0:
        opts["bucket-key"] = "id"
    # every container in a .index file, or every one embedded in the manifest
    opts["file-index.in-manifest-threshold"] = "16b" if index_file else "64kb"
    return paimon_index.create_table(str(warehouse), "db.t", SCHEMA, options=opts,
                                     partition_keys=["p"] if partitioned else [])


def _files(table: Any) -> list[Any]:
    plan = plan_snapshot(table.paimon_table)
    return [m for b in plan.buckets.values() for m in b.files]


def _dv_entries(table: Any) -> int:
    plan = plan_snapshot(table.paimon_table)
    return sum(len(b.dv_entries) for b in plan.buckets.values())


def _sorted(rows: pa.Table) -> pa.Table:
    return rows.select(SCHEMA.names).sort_by("id")


SCENARIOS = {
    "unaware": {},
    "unaware-partitioned": {"partitioned": True},
    "unaware-index-file": {"index_file": True},
    "fixed": {"bucket": 2},
    "fixed-partitioned-index-file": {"bucket": 2, "partitioned": True, "index_file": True},
}


def _loaded(tmp_path: Path, scenario: dict[str, Any], **options: str) -> tuple[Any, pa.Table]:
    table = _table(tmp_path, **scenario, **options)
    for k in range(6):  # six small files per bucket
        table.write(_batch(k * 200, 200))
    table.delete("id IN (3, 17, 250, 251, 401, 777, 1002, 1003)")
    table.delete("s = 's3' AND id < 400")  # a vector with many rows in the first files
    return table, _sorted(table.read())


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_java_reads_the_compacted_table_with_the_same_rows_and_index_answers(tmp_path: Path, name: str
                                                                            ) -> None:
    from javaoracle import java_oracle

    table, before = _loaded(tmp_path, SCENARIOS[name])
    files_before = len(_files(table))
    result = table.compact()
    assert result.snapshot_id is not None and result.operation == "compact"
    snapshot = latest_snapshot(table.paimon_table)
    assert snapshot.commit_kind == "COMPACT"
    after = _sorted(table.read())
    assert after.equals(before)
    files = _files(table)
    assert len(files) < files_before
    assert result.files_removed - result.files_added == files_before - len(files)
    rewritten = [m for m in files if m.file_source == 1]
    assert rewritten, "no file was rewritten"
    index_files = SCENARIOS[name].get("index_file", False)
    for meta in rewritten:  # indexes rebuilt as the options say, stored as they say
        assert bool(meta.embedded_index) != index_files
        assert any(e.endswith(".index") for e in meta.extra_files or ()) == index_files
    where = "s = 's5'"
    ours = _sorted(table.read(where=where))
    java_whole, java_filtered, verdicts = java_oracle().batch([
        {"cmd": "read", "warehouse": str(tmp_path), "table": "db.t", "rows": "true"},
        {"cmd": "read", "warehouse": str(tmp_path), "table": "db.t", "where": where, "rows": "true"},
        {"cmd": "read", "warehouse": str(tmp_path), "table": "db.t", "where": where, "per-file": "true"}])
    assert java_whole["rows"] == before.num_rows
    assert sorted(r[0] for r in java_whole["row_values"]) == before.column("id").to_pylist()
    assert sorted(r[0] for r in java_filtered["row_values"]) == ours.column("id").to_pylist()
    by_name = {f["file"]: f for f in verdicts["per_file"]}
    for meta in rewritten:  # Java's evaluator reads our rebuilt container: ROWS, never a REMAIN
        verdict = by_name[meta.file_name]["index_verdict"]
        assert verdict.startswith("ROWS") or verdict == "SKIP", (meta.file_name, verdict)


def test_the_commit_is_exact_and_the_vectors_of_rewritten_files_are_dropped(tmp_path: Path) -> None:
    table, before = _loaded(tmp_path, {})
    assert _dv_entries(table) == 1
    assert table.compact().snapshot_id is not None
    assert _dv_entries(table) == 0  # every file with a vector was rewritten (Paimon: always in DV mode)
    # Files 0-3 and 5 had vectors: one group. File 4 (ids 800-999) had none and is alone among
    # the candidates without one: Paimon packs those only when there are two or more.
    new, old = sorted(_files(table), key=lambda m: m.file_source or 0, reverse=True)
    assert new.file_source == 1 and old.file_source == 0 and old.row_count == 200
    assert new.row_count == before.num_rows - 200 and new.min_sequence_number == 0
    assert new.max_sequence_number == new.row_count - 1
    assert table.compact().snapshot_id is None  # no vector left, fewer small files than min-file-num
    assert _sorted(table.read()).equals(before)
    assert table.compact(full=True).snapshot_id is not None  # full: everything of the partition
    assert len(_files(table)) == 1 and _sorted(table.read()).equals(before)


def test_a_delete_between_plan_and_commit_fails_the_compaction_and_removes_its_files(tmp_path: Path) -> None:
    table, before = _loaded(tmp_path, {"bucket": 2})
    paimon = table.paimon_table
    plan = plan_compaction(paimon)
    assert plan.groups and plan.schema is not None
    rewritten = [rewrite_group(paimon, g, plan.schema) for g in plan.groups]
    written = [m.file_path for metas in rewritten for m in metas]
    assert written and all(os.path.exists(p) for p in written)
    victim = plan.groups[0].files[-1].name
    # A concurrent DELETE of rows of a file being rewritten: a new vector for it.
    deleted = table.delete("id IN (1100, 1101, 1102, 1103, 1104, 1105)")
    assert deleted.snapshot_id is not None
    after_delete = _sorted(table.read())
    assert after_delete.num_rows == before.num_rows - 6
    with pytest.raises(ConcurrentChangeError, match=r"compact on table db\.t was planned on snapshot"):
        commit_compaction(paimon, plan, rewritten)
    assert latest_snapshot(paimon).id == deleted.snapshot_id  # nothing committed
    assert not any(os.path.exists(p) for p in written)  # what it wrote is gone
    for metas in rewritten:
        for meta in metas:
            assert not any(os.path.exists(os.path.join(os.path.dirname(meta.file_path), e))
                           for e in meta.extra_files or ())
    assert _sorted(table.read()).equals(after_delete)  # the delete is not lost
    assert victim in {m.file_name for m in _files(table)}
    # Run again: planned on the new snapshot, it lands and keeps the delete.
    assert table.compact().snapshot_id is not None
    assert _sorted(table.read()).equals(after_delete)


def _meta(name: str, size: int, seq: int, rows: int = 100) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(file_name=name, file_size=size, min_sequence_number=seq, max_sequence_number=seq,
                           row_count=rows)


def _bucket(metas: list[Any], deletions: dict[str, Any] | None = None) -> Any:
    from paimon_index.table.plan import BucketFiles

    return BucketFiles((), None, 0, tuple(metas), deletions or {})


def test_the_picks_follow_paimons_java_rules() -> None:
    """The decisions of AppendCompactCoordinator / BucketedAppendCompactManager on given sizes (the
    examples of their Java tests: min file num, 2 x target bins, the sliding window, full)."""
    from types import SimpleNamespace

    from paimon_index.table.append_compaction import _pick_fixed, _pick_unaware

    mb = 1 << 20
    opts = CompactOptions(target_file_size=10 * mb, min_file_num=3, open_file_cost=0)
    small = [_meta(f"f{i}", mb, i) for i in range(4)]
    assert [[m.file_name for m in g] for g in _pick_unaware(_bucket(small[:2]), opts, False)] == []
    assert [[m.file_name for m in g] for g in _pick_unaware(_bucket(small), opts, False)] == [
        ["f0", "f1", "f2", "f3"]]
    # Bins of 2 x target: 12 MB files, two per bin; a lone leftover waits (fewer than min file num).
    big = [_meta(f"b{i}", 6 * mb, i) for i in range(5)]
    assert [[m.file_name for m in g] for g in _pick_unaware(_bucket(big), opts, False)] == [
        ["b0", "b1", "b2", "b3"]]
    # Large files are not candidates; a vector over the threshold makes one.
    large = _meta("L", 9 * mb, 9, rows=100)
    dv = {"L": SimpleNamespace(dv_index_path="idx-1", cardinality=30)}
    dv_opts = CompactOptions(target_file_size=10 * mb, min_file_num=3, open_file_cost=0,
                             deletion_vectors=True)
    assert _pick_unaware(_bucket([large]), dv_opts, False) == []
    assert [[m.file_name for m in g] for g in _pick_unaware(_bucket([large], dv), dv_opts, False)] == [["L"]]
    dv_low = {"L": SimpleNamespace(dv_index_path="idx-1", cardinality=20)}  # 20 > 100 x 0.2 is false
    assert _pick_unaware(_bucket([large], dv_low), dv_opts, False) == []
    # Fixed bucket, minor: a window of min file num files in sequence order, sliding past 2 x target.
    seq = [_meta("a", 15 * mb, 0), _meta("b", 6 * mb, 1), _meta("c", mb, 2), _meta("d", mb, 3)]
    assert [[m.file_name for m in g] for g in _pick_fixed(_bucket(seq), opts, False)] == [["b", "c", "d"]]
    # Fixed bucket, full: leading large files without a vector stay, the rest is rewritten.
    assert [[m.file_name for m in g] for g in _pick_fixed(_bucket(seq), opts, True)] == [["b", "c", "d"]]
    assert _pick_fixed(_bucket(seq[:2]), opts, True) == []  # fewer than 3 files, no vectors


def test_primary_key_tables_are_not_append_compacted(tmp_path: Path) -> None:
    table = paimon_index.create_table(str(tmp_path), "db.k", SCHEMA, primary_keys=["id"],
                                      options={"bucket": "1", "deletion-vectors.enabled": "true"})
    with pytest.raises(UnsupportedTableError, match="has a primary key"):
        plan_compaction(table.paimon_table)


def test_the_snapshot_is_what_java_calls_a_compaction(tmp_path: Path) -> None:
    table, _ = _loaded(tmp_path, {"partitioned": True})
    snapshot_id = table.compact().snapshot_id
    text = json.loads((tmp_path / "db.db" / "t" / "snapshot" / f"snapshot-{snapshot_id}").read_text())
    assert text["commitKind"] == "COMPACT"
    assert text["deltaRecordCount"] < 0  # rows of deleted rows left with the vectors


@pytest.mark.parametrize("index_file", [False, True])
def test_each_rewritten_files_index_is_built_from_its_rows_beside_the_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_file: bool) -> None:
    """A rewritten file's index is built from the rows in memory while the file is written (not
    from the file read back after it), and is byte for byte the index built from the file."""
    from paimon_index.fileindex.options import FileIndexOptions
    from paimon_index.table import write
    from paimon_index.table.fileio import TableIO
    from paimon_index.table.files import container_source
    from paimon_index.table.paimon import table_options
    from paimon_index.table.schemas import read_schema

    # target-file-size small enough that the rewrite rolls into several files
    table, before = _loaded(tmp_path, {"index_file": index_file}, **{"target-file-size": "8kb"})
    from_file = write.file_container
    calls: list[str] = []

    def spy(meta: Any, *args: Any, **kwargs: Any) -> bytes | None:
        calls.append(meta.file_name)
        return from_file(meta, *args, **kwargs)

    monkeypatch.setattr(write, "file_container", spy)
    assert table.compact(full=True).snapshot_id is not None
    assert calls == []  # every file's index came from its rows in memory
    assert _sorted(table.read()).equals(before)
    paimon = table.paimon_table
    rewritten = [m for m in _files(table) if m.file_source == 1]
    assert len(rewritten) > 1
    io = TableIO.of(paimon)
    options = FileIndexOptions.from_table_options(table_options(paimon))
    for meta in rewritten:
        stored = container_source(meta)
        if isinstance(stored, str):  # a .index file beside the data file (a local warehouse)
            stored = Path(stored.removeprefix("file://").removeprefix("file:")).read_bytes()
        assert stored == from_file(meta, options, read_schema(paimon), io=io), meta.file_name
