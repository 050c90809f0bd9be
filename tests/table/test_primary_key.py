"""Deletion-vectors mode for primary-key tables, against a plain dict model after every step."""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from paimon_index.errors import PrimaryKeyTableError
from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.maintenance import expire_snapshots, referenced_files
from paimon_index.table.pk import (
    compact,
    read_primary_key,
    set_deletion_vectors,
    upsert_arrow,
)

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("tag", pa.string()), ("n", pa.int32())])
BUCKETS = {"fixed": {"bucket": "3"}, "dynamic": {"bucket": "-1", "dynamic-bucket.target-row-num": "20"},
           # ~20 rows a file: rewrites roll into several files at one level, which must stay a sorted run
           "small-files": {"bucket": "1", "target-file-size": "1kb"}}


def new_table(warehouse: str, mode: str, **options: str):
    return create_table(warehouse, "db.pk", SCHEMA, primary_keys=["k"], options={
        **BUCKETS[mode], "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag",
        "num-sorted-run.compaction-trigger": "3", **options})


def contents(table) -> list[tuple]:
    rows, _ = read_primary_key(table, "k IS NOT NULL")
    return sorted(zip(rows["k"].to_pylist(), rows["tag"].to_pylist(), rows["n"].to_pylist(), strict=True))


def pypaimon_contents(table) -> list[tuple]:
    builder = table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(rows["k"].to_pylist(), rows["tag"].to_pylist(), rows["n"].to_pylist(), strict=True))


def check_lsm(table, seen: dict[str, int] | None = None) -> None:
    """No level-0 file; every level >= 1 of every bucket is a sorted run (no overlapping key ranges);
    with ``seen`` (file name -> max sequence number so far), every new file's sequence numbers are
    above those of every file seen before in its bucket."""
    splits = table.new_read_builder().new_scan().plan_for_write().splits()
    if seen is not None:
        before = dict(seen)
        for split in splits:
            old_max = max((before[m.file_name] for m in split.files if m.file_name in before), default=-1)
            for meta in split.files:
                if meta.file_name not in before:
                    assert meta.min_sequence_number > old_max, (meta.file_name, old_max)
                seen[meta.file_name] = meta.max_sequence_number
    levels: dict[tuple, list] = {}
    for split in splits:
        for meta in split.files:
            assert meta.level > 0, meta.file_name
            levels.setdefault((tuple(split.partition.values), split.bucket, meta.level), []).append(
                (meta.min_key.values[0], meta.max_key.values[0]))
    for ranges in levels.values():
        ranges.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), ranges


def files_on_disk(root: Path) -> set[str]:
    table_dir = root / "db.db" / "pk"
    return {str(p) for p in table_dir.rglob("*") if p.is_file()
            and not any(part in ("snapshot", "schema") for part in p.relative_to(table_dir).parts)}


step = st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["+I", "+I", "-D"])),
                                          min_size=1, max_size=25)),
    st.tuples(st.just("compact"), st.sampled_from([0.0, 0.5])),
    st.tuples(st.just("full"), st.just(None)),
    st.tuples(st.just("expire"), st.integers(1, 2)),
)


@pytest.mark.parametrize("mode", list(BUCKETS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=2, max_size=7))
# A full compaction of two interleaved files rolled (small-files) into files whose key ranges overlapped.
@example(steps=[("upsert", [(k, "+I") for k in range(0, 120, 2)]),
                ("upsert", [(k, "+I") for k in range(1, 120, 2)]), ("full", None)])
# A dynamic-bucket rewrite (no free level) used to leave the HASH index file its writer stored.
@example(steps=[("upsert", [(k, "+I") for k in (17, 15, 14, 21, 13, 0, 25, 22, 12)]), ("upsert", [(0, "+I")]),
                ("upsert", [(0, "+I")]), ("upsert", [(0, "+I"), (28, "+I")]), ("expire", 1)])
def test_random_upserts_deletes_compactions_and_expiry_equal_a_dict(mode: str, steps: list) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        table = new_table(warehouse, mode)
        model: dict[int, tuple] = {}
        seen: dict[str, int] = {}
        for number, (kind, arg) in enumerate(steps):
            if kind == "upsert":
                rows = [{"k": k, "tag": f"t{k % 4}", "n": number, "_ROW_KIND": rk} for k, rk in arg]
                with_kinds = pa.schema([*SCHEMA, ("_ROW_KIND", pa.string())])
                upsert_arrow(table, pa.Table.from_pylist(rows, with_kinds))
                for k, rk in arg:
                    if rk == "-D":
                        model.pop(k, None)
                    else:
                        model[k] = (k, f"t{k % 4}", number)
            elif kind == "compact":
                compact(table, threshold=arg)
            elif kind == "full":
                compact(table, full=True)
            else:
                expire_snapshots(table, retain_last=arg)
                latest = table.snapshot_manager().get_latest_snapshot()
                if latest is not None and arg == 1:  # nothing but what the last snapshot uses
                    assert files_on_disk(Path(warehouse)) == referenced_files(table, latest)
            assert contents(table) == sorted(model.values())
            assert pypaimon_contents(table) == sorted(model.values())
            check_lsm(table, seen)


def test_level0_files_of_plain_writes_are_folded_in(tmp_path: Path) -> None:
    table = new_table(str(tmp_path), "fixed")
    first = [{"k": 1, "tag": "a", "n": 1}, {"k": 2, "tag": "b", "n": 1}]
    upsert_arrow(table, pa.Table.from_pylist(first, SCHEMA))
    writer = table.new_batch_write_builder()  # pypaimon alone writes level-0 files only
    w = writer.new_write()
    w.write_arrow(pa.Table.from_pylist([{"k": 2, "tag": "B", "n": 2}, {"k": 3, "tag": "c", "n": 2}], SCHEMA))
    commit = writer.new_commit()
    commit.commit(w.prepare_commit())
    w.close()
    commit.close()
    table = open_table(str(tmp_path), "db.pk")
    # Level-0 files are not read in deletion-vectors mode until compacted, as Java and pypaimon
    # read them (a write between its two commits looks the same).
    rows, _ = read_primary_key(table, "k > 0")
    assert sorted((r["k"], r["tag"], r["n"]) for r in rows.to_pylist()) == [(1, "a", 1), (2, "b", 1)]
    assert contents(table) == pypaimon_contents(table)
    folded = table.snapshot_manager().get_latest_snapshot().id
    upsert_arrow(table, pa.Table.from_pylist([{"k": 1, "tag": "A", "n": 3}], SCHEMA))
    assert contents(table) == [(1, "A", 3), (2, "B", 2), (3, "c", 2)] == pypaimon_contents(table)
    # Folded by a compaction of their own, then the write and its compaction.
    manager = table.snapshot_manager()
    kinds = [manager.get_snapshot_by_id(i).commit_kind for i in range(folded + 1, folded + 4)]
    assert kinds == ["COMPACT", "APPEND", "COMPACT"]
    check_lsm(table)


def test_reads_merge_nothing_and_skip_files_by_non_key_index(tmp_path: Path) -> None:
    table = new_table(str(tmp_path), "fixed")
    upsert_arrow(table, pa.Table.from_pylist([{"k": k, "tag": "common", "n": 0} for k in range(300)], SCHEMA))
    upsert_arrow(table, pa.Table.from_pylist([{"k": k, "tag": "rare", "n": 1} for k in (5, 6)], SCHEMA))
    rows, report = read_primary_key(table, "tag = 'rare'")
    assert sorted(rows["k"].to_pylist()) == [5, 6]
    assert report.files_skipped_by_index >= 3  # the first write's files hold no 'rare' row
    assert report.rows_read == report.rows_returned == 2  # bitmap rows, no merge, no re-read
    rows, report = read_primary_key(table, "tag = 'common'")
    assert rows.num_rows == 298 and report.rows_removed_by_deletion_vectors == 2


def test_switching_modes_needs_a_full_compaction(tmp_path: Path) -> None:
    table = new_table(str(tmp_path), "fixed")
    for n in range(2):
        upsert_arrow(table, pa.Table.from_pylist([{"k": k, "tag": "x", "n": n} for k in range(50)], SCHEMA))
    with pytest.raises(PrimaryKeyTableError, match="full compaction"):
        set_deletion_vectors(str(tmp_path), "db.pk", False)
    compact(table, full=True)
    table = set_deletion_vectors(str(tmp_path), "db.pk", False)
    assert table.options.options.to_map()["deletion-vectors.enabled"] == "false"
    assert sorted(pypaimon_contents(table)) == [(k, "x", 1) for k in range(50)]


def test_merge_on_read_merges_level0_files(tmp_path: Path) -> None:
    table = new_table(str(tmp_path), "fixed", **{"deletion-vectors.merge-on-read": "true"})
    first = [{"k": 1, "tag": "a", "n": 1}, {"k": 2, "tag": "b", "n": 1}]
    upsert_arrow(table, pa.Table.from_pylist(first, SCHEMA))
    writer = table.new_batch_write_builder()
    w = writer.new_write()
    w.write_arrow(pa.Table.from_pylist([{"k": 2, "tag": "B", "n": 2}], SCHEMA))
    commit = writer.new_commit()
    commit.commit(w.prepare_commit())
    w.close()
    commit.close()
    rows, _ = read_primary_key(open_table(str(tmp_path), "db.pk"), "k > 0")
    assert sorted(zip(rows["k"].to_pylist(), rows["tag"].to_pylist(), strict=True)) == [(1, "a"), (2, "B")]


def test_tasks_owning_buckets_prepare_and_the_driver_commits_once(tmp_path: Path) -> None:
    """The Spark path without Spark: one 'task' per bucket looks its keys up; one commit."""
    import numpy as np

    from paimon_index.table.pk import (
        bucket_of_rows,
        commit_prepared,
        owned_buckets,
        prepare_upsert,
        split_batch,
    )
    from paimon_index.table.pk.levels import write_kinded
    from paimon_index.table.write import attach_file_indexes

    table = new_table(str(tmp_path), "fixed")
    upsert_arrow(table, pa.Table.from_pylist([{"k": k, "tag": "old", "n": 0} for k in range(100)], SCHEMA))
    rows = [{"k": k, "tag": "new", "n": 1, "_ROW_KIND": "-D" if k % 10 == 0 else "+I"}
            for k in range(50, 150)]
    batch = pa.Table.from_pylist(rows, pa.schema([*SCHEMA, ("_ROW_KIND", pa.string())]))
    _, buckets = bucket_of_rows(table, batch)
    prepared = []
    before = table.snapshot_manager().get_latest_snapshot().id
    for bucket in sorted(set(buckets)):
        part = batch.filter(pa.array(np.array(buckets) == bucket))
        upserts, removed = split_batch(table, part)
        builder = table.new_batch_write_builder()
        writer = builder.new_write()
        write_kinded(writer, upserts)  # as the source's task writes them: each row with its kind
        messages = attach_file_indexes(table, writer.prepare_commit())
        writer.close()
        assert {m.bucket for m in messages} == {bucket}  # pypaimon's writer agrees with bucket_of_rows
        prepared.append(prepare_upsert(table, messages, removed, owned_buckets(table, messages, removed)))
    commit_prepared(table, prepared)
    # Java's two snapshots: the write (level-0 files), its lookup compaction (vectors, levels).
    manager = table.snapshot_manager()
    assert manager.get_latest_snapshot().id == before + 2
    assert [manager.get_snapshot_by_id(before + i).commit_kind for i in (1, 2)] == ["APPEND", "COMPACT"]
    want = [(k, "old", 0) for k in range(50)] + [(k, "new", 1) for k in range(50, 150) if k % 10]
    assert contents(table) == sorted(want) == pypaimon_contents(table)
    check_lsm(table)


def test_lookup_skips_files_whose_key_index_rules_the_keys_out(tmp_path: Path, monkeypatch) -> None:
    from paimon_index.table.pk import lookup

    table = new_table(str(tmp_path), "fixed", **{"file-index.bitmap.columns": "tag,k"})
    evens = [{"k": k, "tag": "a", "n": 0} for k in range(0, 600, 2)]
    upsert_arrow(table, pa.Table.from_pylist(evens, SCHEMA))
    opened: list[str] = []
    live_rows = lookup.live_rows
    monkeypatch.setattr(lookup, "live_rows",
                        lambda meta, *a, **kw: opened.append(meta.file_name) or live_rows(meta, *a, **kw))
    # Odd keys inside every file's key range, none present: the bitmap on k rules every file out.
    upsert_arrow(table, pa.Table.from_pylist([{"k": k, "tag": "b", "n": 1} for k in (101, 301, 501)], SCHEMA))
    assert opened == []
    # A present key: only the file holding it is read.
    upsert_arrow(table, pa.Table.from_pylist([{"k": 100, "tag": "c", "n": 2}], SCHEMA))
    assert len(opened) == 1
    assert (100, "c", 2) in contents(table) and len(contents(table)) == 303


# ------------------------------------------------------------------------------------------------
# partitioned tables (the key includes the partition column) and Java Paimon as the reference
# ------------------------------------------------------------------------------------------------
PART_SCHEMA = pa.schema([pa.field("p", pa.string(), nullable=False),
                         pa.field("k", pa.int64(), nullable=False), ("tag", pa.string()), ("n", pa.int32())])
PART_DDL = "p STRING NOT NULL, k BIGINT NOT NULL, tag STRING, n INT"
ORACLE = Path(__file__).resolve().parents[2].parent / "shared" / "java-paimon" / "oracle.sh"


def java(*args: str) -> list[dict]:
    """Run Java Paimon's oracle (one command, or ``batch``); skip when Java or the oracle is absent."""
    if shutil.which("java") is None or not ORACLE.exists():
        pytest.skip("Java Paimon oracle not available")
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run([str(ORACLE), *args], capture_output=True, text=True, env=env, timeout=900,
                          check=False)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert results and all("error" not in r for r in results), (done.stdout[-3000:], done.stderr[-3000:])
    return results


def java_reads(warehouse: str, identifier: str, snapshots: list[int]) -> list[list[tuple]]:
    """Java's rows of each snapshot, one JVM."""
    commands = Path(warehouse) / "java-reads.jsonl"
    commands.write_text("".join(json.dumps({"cmd": "read", "warehouse": warehouse, "table": identifier,
                                            "rows": "true", "snapshot": str(s)}) + "\n" for s in snapshots))
    return [sorted(tuple(r) for r in out["row_values"]) for out in java("batch", "--file", str(commands))]


def part_contents(table) -> list[tuple]:
    rows, _ = read_primary_key(table, "k IS NOT NULL")
    return sorted(tuple(r.values()) for r in rows.to_pylist())


def part_pypaimon(table) -> list[tuple]:
    builder = table.new_read_builder()
    return sorted(tuple(r.values()) for r in builder.new_read().to_arrow(builder.new_scan().plan().splits())
                  .to_pylist())


def part_upsert(table, model: dict, rows: list[tuple[str, int, str]], number: int) -> None:
    batch = [{"p": p, "k": k, "tag": f"{p}{k % 3}", "n": number, "_ROW_KIND": kind} for p, k, kind in rows]
    upsert_arrow(table, pa.Table.from_pylist(batch, pa.schema([*PART_SCHEMA, ("_ROW_KIND", pa.string())])))
    for p, k, kind in rows:
        if kind in ("-D", "-U"):
            model.pop((p, k), None)
        else:
            model[(p, k)] = (p, k, f"{p}{k % 3}", number)


@pytest.mark.parametrize("mode", list(BUCKETS))
def test_partitioned_upserts_and_deletes_equal_a_dict_pypaimon_and_java(tmp_path: Path, mode: str) -> None:
    """Issue 12 item 6d: data files hold the key without the partition field; the same k lives in
    several partitions and deleting it in one leaves the others."""
    warehouse = str(tmp_path)
    table = create_table(warehouse, "db.pt", PART_SCHEMA, primary_keys=["p", "k"], partition_keys=["p"],
                         options={**BUCKETS[mode], "deletion-vectors.enabled": "true",
                                  "num-sorted-run.compaction-trigger": "3", "file-index.bitmap.columns": "k"})
    rng = random.Random(11)
    model: dict[tuple[str, int], tuple] = {}
    snapshots = []
    for number in range(8):
        kinds = ["+I", "+I", "+U", "-D"]
        rows = [(rng.choice("abc"), rng.randrange(12), rng.choice(kinds)) for _ in range(15)]
        part_upsert(table, model, rows, number)
        if number == 4:
            compact(table, threshold=0.0)
        assert part_contents(table) == sorted(model.values()) == part_pypaimon(table)
        snapshots.append((table.snapshot_manager().get_latest_snapshot().id, sorted(model.values())))
    compact(table, full=True)
    # A compaction is a COMPACT snapshot, as Java commits one (it was OVERWRITE: pypaimon's kind
    # once a file is deleted).
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT"
    assert part_contents(table) == sorted(model.values()) == part_pypaimon(table)
    snapshots.append((table.snapshot_manager().get_latest_snapshot().id, sorted(model.values())))
    assert {k[0] for k in model} == set("abc") and len({k[1] for k in model}) < len(model)  # k shared
    picked = [snapshots[2], snapshots[5], snapshots[-1]]
    assert java_reads(warehouse, "db.pt", [s for s, _ in picked]) == [want for _, want in picked]


def _java_rows_file(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


# Fixed bucket only: the oracle's plain BatchTableWrite has no dynamic-bucket assigner.
@pytest.mark.parametrize("mode", ["fixed"])
def test_we_read_and_upsert_a_partitioned_table_java_wrote(tmp_path: Path, mode: str) -> None:
    warehouse = str(tmp_path)
    options = ",".join(f"{k}={v}" for k, v in {**BUCKETS[mode], "deletion-vectors.enabled": "true"}.items())
    first = [{"p": p, "k": k, "tag": "java", "n": 0} for p in "ab" for k in range(20)]
    java("write", "--warehouse", warehouse, "--table", "db.pt", "--schema", PART_DDL, "--pk", "p,k",
         "--partition", "p", "--options", options, "--jsonl", _java_rows_file(tmp_path / "w1.jsonl", first))
    second = [{"p": "a", "k": k, "tag": "java2", "n": 1} for k in range(0, 20, 3)] + \
        [{"p": "b", "k": k, "tag": "x", "n": 1, "_kind": "-D"} for k in range(0, 20, 4)]
    java("write", "--warehouse", warehouse, "--table", "db.pt", "--schema", PART_DDL, "--pk", "p,k",
         "--partition", "p", "--no-create", "--jsonl", _java_rows_file(tmp_path / "w2.jsonl", second))
    model = {(r["p"], r["k"]): (r["p"], r["k"], r["tag"], r["n"]) for r in first}
    for r in second:
        if r.get("_kind") == "-D":
            model.pop((r["p"], r["k"]))
        else:
            model[(r["p"], r["k"])] = (r["p"], r["k"], r["tag"], r["n"])
    table = open_table(warehouse, "db.pt")
    assert part_pypaimon(table) == sorted(model.values())
    rows = [(p, k, "-D" if k % 5 == 0 else "+I") for p in "abc" for k in range(10, 25)]
    part_upsert(table, model, rows, 2)
    assert part_contents(table) == sorted(model.values()) == part_pypaimon(table)
    after_upsert = table.snapshot_manager().get_latest_snapshot().id
    upserted = sorted(model.values())
    compact(table, full=True)
    last = table.snapshot_manager().get_latest_snapshot().id
    assert part_contents(table) == sorted(model.values()) == part_pypaimon(table)
    assert java_reads(warehouse, "db.pt", [after_upsert, last]) == [upserted, sorted(model.values())]


def _levels(table) -> set[int]:
    splits = table.new_read_builder().new_scan().plan_for_write().splits()
    return {int(m.level) for s in splits for m in s.files}


def _value_kinds(table) -> dict[int, int]:
    """Each key's ``_VALUE_KIND`` byte as its newest version's data file holds it."""
    import pyarrow.parquet as pq

    files = [m for s in table.new_read_builder().new_scan().plan().splits() for m in s.files]
    kinds: dict[int, int] = {}
    for meta in sorted(files, key=lambda m: m.max_sequence_number):  # newer versions last
        rows = pq.read_table(meta.file_path, columns=["_KEY_k", "_VALUE_KIND"])
        kinds.update(zip(rows["_KEY_k"].to_pylist(), rows["_VALUE_KIND"].to_pylist(), strict=True))
    return kinds


def test_java_writes_into_the_levels_we_place(tmp_path: Path) -> None:
    """A bucket's first write goes to the top level, as Java's first compaction writes it (so
    ``t$ro`` holds a table just loaded); an overlapping write goes below. Java's writer (its lookup
    compaction, which reads and places runs by level) then writes updates and deletes into that
    layout, we upsert again, and Java, pypaimon and we read the model's rows at every step."""
    warehouse = str(tmp_path)
    table = create_table(warehouse, "db.pt", PART_SCHEMA, primary_keys=["p", "k"], partition_keys=["p"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    model: dict[tuple[str, int], tuple] = {}
    part_upsert(table, model, [(p, k, "+I") for p in "ab" for k in range(30)], 0)
    assert _levels(table) == {5}  # num-levels 6 by default: the top level is 5
    loaded = table.snapshot_manager().get_latest_snapshot().id
    part_upsert(table, model, [("a", k, "+I") for k in range(0, 30, 3)] + [("b", 4, "-D")], 1)
    assert _levels(table) == {1, 5}
    java_rows = [{"p": "a", "k": k, "tag": "java", "n": 2, "_kind": "+U"} for k in range(0, 30, 2)] + \
        [{"p": "b", "k": k, "tag": "x", "n": 2, "_kind": "-D"} for k in (5, 6, 7)] + \
        [{"p": "c", "k": 1, "tag": "new", "n": 2}]
    java("write", "--warehouse", warehouse, "--table", "db.pt", "--schema", PART_DDL, "--pk", "p,k",
         "--partition", "p", "--no-create", "--jsonl", _java_rows_file(tmp_path / "w.jsonl", java_rows))
    for r in java_rows:
        if r.get("_kind") == "-D":
            model.pop((r["p"], r["k"]))
        else:
            model[(r["p"], r["k"])] = (r["p"], r["k"], r["tag"], r["n"])
    after_java = sorted(model.values())
    table = open_table(warehouse, "db.pt")
    assert part_contents(table) == after_java == part_pypaimon(table)
    part_upsert(table, model, [("a", k, "+I") for k in range(25, 35)] + [("a", 0, "-D")], 3)
    ours = table.snapshot_manager().get_latest_snapshot().id
    assert part_contents(table) == sorted(model.values()) == part_pypaimon(table)
    check_lsm(table)
    assert java_reads(warehouse, "db.pt", [loaded, ours]) == [
        sorted((p, k, f"{p}{k % 3}", 0) for p in "ab" for k in range(30)), sorted(model.values())]


def test_rows_keep_the_kind_they_were_written_with(tmp_path: Path) -> None:
    """An UPDATE's rows are written as ``+U`` (Java's UPDATE writes them so; ``t$audit_log`` shows
    it), plain upserts as ``+I``, and a compaction keeps each row's kind, as Java's does."""
    from paimon_index import open_table as open_public

    table = new_table(str(tmp_path), "fixed")
    upsert_arrow(table, pa.Table.from_pylist([{"k": k, "tag": "a", "n": k} for k in range(10)], SCHEMA))
    public = open_public(str(tmp_path), "db.pk")
    public.update({"n": "n + 100"}, "k < 3")
    upsert_arrow(table, pa.Table.from_pylist([{"k": 5, "tag": "b", "n": 5}], SCHEMA))
    want = {k: 2 if k < 3 else 0 for k in range(10)}  # '+U' is byte 2, '+I' byte 0
    assert _value_kinds(table) == want
    compact(table, full=True)
    assert _value_kinds(table) == want


def test_null_primary_key_is_a_project_error_naming_the_column(tmp_path: Path) -> None:
    from paimon_index.errors import DataError
    from paimon_index.table.pk import split_batch

    table = create_table(str(tmp_path), "db.pt", PART_SCHEMA, primary_keys=["p", "k"], partition_keys=["p"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    loose = pa.schema([("p", pa.string()), ("k", pa.int64()), ("tag", pa.string()), ("n", pa.int32())])
    bad = pa.Table.from_pylist([{"p": "a", "k": 1}, {"p": "a", "k": None}], loose)
    with pytest.raises(DataError, match="primary-key column 'k' is NULL in 1 of 2 rows"):
        upsert_arrow(table, bad)
    with pytest.raises(DataError, match="'p' is NULL"):
        split_batch(table, pa.Table.from_pylist([{"p": None, "k": 1}], loose))
    assert table.snapshot_manager().get_latest_snapshot() is None
    assert not any(p.suffix == ".parquet" for p in tmp_path.rglob("*"))

