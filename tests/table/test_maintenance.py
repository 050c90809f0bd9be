"""Snapshot expiry and orphan-file removal under crashes and concurrency.

References: every snapshot's rows as pypaimon and our reader saw them before expiry; the files a
snapshot needs computed independently, by pypaimon's own planner (``plan_for_write`` of the pinned
snapshot) and its manifest readers; Java Paimon's ``oracle.sh files`` for the latest snapshot.
Crashes are real: a child process is SIGKILLed at its N-th destructive step (a file removal or the
hint write) inside ``expire_snapshots``.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_index.errors import InvalidOptionError
from paimon_index.table import maintenance
from paimon_index.table.catalog import alter_table_options, create_table, open_table
from paimon_index.table.maintenance import expire_snapshots, referenced_files, remove_orphan_files
from paimon_index.table.read import read_arrow
from paimon_index.table.rewrite import rewrite_file_index
from paimon_index.table.row_level import delete_arrow, update_arrow
from paimon_index.table.write import write_arrow

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("dt", pa.string())])
ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
ORACLE_CANDIDATES = [ROOT.parent / "shared" / "java-paimon", ROOT.parent.parent / "shared" / "java-paimon"]
ALL = "id IS NOT NULL OR id IS NULL"
LATEST = 7  # snapshots history() commits


def new_table(warehouse: str):
    # Small in-manifest threshold: every file index becomes a <data-file>.index extra file.
    return create_table(warehouse, "db.t", SCHEMA, partition_keys=["dt"],
                        options={"bucket": "2", "bucket-key": "id", "deletion-vectors.enabled": "true",
                                 "file-index.bitmap.columns": "tag", "file-index.in-manifest-threshold": "8"})


def batch(first: int, count: int) -> pa.Table:
    ids = list(range(first, first + count))
    return pa.table({"id": ids, "tag": [f"t{i % 4}" for i in ids],
                     "dt": ["x" if i % 3 else "y" for i in ids]}, schema=SCHEMA)


def history(warehouse: str):
    """Seven snapshots: appends, a delete, an update (deletion vectors, index files, .index files) and a
    file-index rewrite."""
    table = new_table(warehouse)
    write_arrow(table, batch(0, 30))
    write_arrow(table, batch(30, 30))
    delete_arrow(table, "tag = 't1'")
    write_arrow(table, batch(60, 30))
    update_arrow(table, {"tag": "t9"}, "id < 20")
    # A rewritten file index: the same data files get new metas (and new .index files).
    alter_table_options(warehouse, "db.t", set_options={"file-index.bloom-filter.columns": "id"})
    table = open_table(warehouse, "db.t")
    rewrite_file_index(table)
    write_arrow(table, batch(90, 10))
    return table


def rows_at(table, snapshot_id: int) -> tuple[list, list]:
    """(pypaimon's rows, our reader's rows) of one snapshot, sorted."""
    pinned = table.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = pinned.new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    ours, _ = read_arrow(pinned, ALL)
    as_rows = lambda t: sorted(zip(*(t.column(c).to_pylist() for c in SCHEMA.names), strict=True))  # noqa: E731
    return as_rows(theirs), as_rows(ours)


def independent_references(table, snapshot) -> set[str]:
    """What ``snapshot`` needs, by pypaimon's planner and manifest readers (not our code)."""
    from pypaimon.index.index_file_handler import IndexFileHandler
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    root = str(table.table_path).removeprefix("file://")
    files = set()
    for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.changelog_manifest_list):
        if name:
            files.add(f"{root}/manifest/{name}")
            files |= {f"{root}/manifest/{m.file_name}" for m in ManifestListManager(table).read(name)}
    if snapshot.index_manifest:
        files.add(f"{root}/manifest/{snapshot.index_manifest}")
        files |= {f"{root}/index/{e.index_file.file_name}" for e in IndexFileHandler(table).scan(snapshot)}
    pinned = table.copy({"scan.snapshot-id": str(snapshot.id)})
    for split in pinned.new_read_builder().new_scan().plan_for_write().splits():
        for meta in split.files:
            path = meta.file_path.removeprefix("file://")
            files |= {path, *(posixpath.join(posixpath.dirname(path), e) for e in meta.extra_files or ())}
    return files


def table_files(table) -> set[str]:
    """Every file of the table but schema and snapshot files and the hints."""
    root = Path(str(table.table_path).removeprefix("file://"))
    return {str(p) for p in root.rglob("*") if p.is_file()
            and p.relative_to(root).parts[0] not in ("schema", "snapshot", "tag")}


def snapshot_ids(table) -> list[int]:
    return maintenance._snapshot_ids(table)


def earliest_hint(table) -> int:
    return int(Path(table.snapshot_manager().snapshot_dir.removeprefix("file://"), "EARLIEST").read_text())


CHILD = textwrap.dedent("""
    import os, signal, sys
    from paimon_index.table import maintenance
    from paimon_index.table.catalog import open_table
    warehouse, crash_at, retain = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    steps = [0]
    def step(real):
        def wrapped(*args, **kwargs):
            steps[0] += 1
            if steps[0] == crash_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)
        return wrapped
    maintenance._remove = step(maintenance._remove)
    maintenance._write_hint = step(maintenance._write_hint)
    maintenance.expire_snapshots(open_table(warehouse, "db.t"), retain_last=retain)
    print(steps[0])
""")


def run_child(warehouse: str, crash_at: int, retain: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-c", CHILD, warehouse, str(crash_at), str(retain)],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def crashed_history(tmp_path_factory) -> tuple[str, dict[int, tuple[list, list]], int]:
    """A table with six snapshots, every snapshot's rows, and the number of steps a full expiry takes."""
    warehouse = str(tmp_path_factory.mktemp("history"))
    table = history(warehouse)
    rows = {i: rows_at(table, i) for i in snapshot_ids(table)}
    for theirs, ours in rows.values():
        assert theirs == ours
    dry = str(tmp_path_factory.mktemp("dry"))
    shutil.copytree(warehouse, dry, dirs_exist_ok=True)
    done = run_child(dry, 10**9, 2)
    assert done.returncode == 0, done.stderr
    return warehouse, rows, int(done.stdout.strip())


def crash_points(total: int) -> list[int]:
    expired = LATEST - 2  # two retained
    return sorted({1, 2, expired, expired + 1, expired + 2, (expired + total) // 2, total})


@pytest.mark.parametrize("which", range(7))
def test_a_crash_anywhere_in_expiry_leaves_retained_snapshots_whole(crashed_history, tmp_path: Path,
                                                                    which: int) -> None:
    source, rows, total = crashed_history
    points = crash_points(total)
    if which >= len(points):
        pytest.skip("fewer distinct crash points")
    warehouse = str(tmp_path / "w")
    shutil.copytree(source, warehouse)
    crashed = run_child(warehouse, points[which], 2)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    table = open_table(warehouse, "db.t")
    latest = max(rows)
    # Every snapshot still there reads as before: the retained ones must be there.
    assert {latest - 1, latest} <= set(snapshot_ids(table))
    for snapshot_id in snapshot_ids(table):
        assert rows_at(table, snapshot_id) == rows[snapshot_id], snapshot_id
    # The next expiry finishes, and orphan cleaning leaves exactly what the retained snapshots need.
    expire_snapshots(table, retain_last=2)
    assert snapshot_ids(table) == [latest - 1, latest] and earliest_hint(table) == latest - 1
    time.sleep(0.01)
    remove_orphan_files(table, older_than=time.time())
    needed = set().union(*(independent_references(table, table.snapshot_manager().get_snapshot_by_id(i))
                           for i in (latest - 1, latest)))
    assert table_files(table) == needed
    for snapshot_id in (latest - 1, latest):
        assert rows_at(table, snapshot_id) == rows[snapshot_id]


def test_expiry_succeeds_after_an_old_style_crash_that_deleted_files_first(tmp_path: Path) -> None:
    """Before: a crash after some files of expired snapshots were deleted -> FileNotFoundError forever."""
    table = history(str(tmp_path))
    manager = table.snapshot_manager()
    kept = referenced_files(table, manager.get_snapshot_by_id(LATEST - 1)) | referenced_files(
        table, manager.get_snapshot_by_id(LATEST))
    # The old expiry deleted the files only expired snapshots used, then the snapshot files.
    doomed = sorted(set().union(*(referenced_files(table, manager.get_snapshot_by_id(i)) for i in (1, 2)))
                    - kept)
    assert any("/manifest/" in p for p in doomed)
    for path in doomed[: len(doomed) // 2 + 1]:
        os.remove(path)
    result = expire_snapshots(table, retain_last=2)
    assert result.expired_snapshots == list(range(1, LATEST - 1))
    assert rows_at(table, LATEST)[0] == rows_at(table, LATEST)[1]


def test_two_interleaved_expiries_both_finish(tmp_path: Path) -> None:
    """Before: the outer expiry read a snapshot the inner one had deleted -> AttributeError on None."""
    for outer, inner in ((2, 1), (1, 3)):
        warehouse = str(tmp_path / f"w{outer}{inner}")
        table = history(warehouse)
        expected = rows_at(table, LATEST)
        real = maintenance._remove
        calls = [0]

        def interleaved(io, path: str, inner: int = inner, real=real, calls=calls,
                        warehouse=warehouse) -> bool:
            calls[0] += 1
            if calls[0] == 1:  # the outer expiry has planned; a whole other expiry runs now
                maintenance._remove = real
                expire_snapshots(open_table(warehouse, "db.t"), retain_last=inner)
            return real(io, path)

        maintenance._remove = interleaved
        try:
            expire_snapshots(table, retain_last=outer)
        finally:
            maintenance._remove = real
        assert snapshot_ids(table) == ([LATEST] if min(outer, inner) == 1 else [LATEST - 1, LATEST])
        assert rows_at(table, LATEST) == expected
        remove_orphan_files(table, older_than=time.time())
        assert rows_at(table, LATEST) == expected


def test_concurrent_expiries_in_threads_both_finish(tmp_path: Path) -> None:
    table = history(str(tmp_path))
    expected = rows_at(table, LATEST)
    barrier, errors = threading.Barrier(2), []

    def run(retain: int) -> None:
        try:
            barrier.wait()
            expire_snapshots(open_table(str(tmp_path), "db.t"), retain_last=retain)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(r,)) for r in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert snapshot_ids(table) in ([LATEST - 1, LATEST], [LATEST])
    assert rows_at(table, LATEST) == expected


def test_older_than_keeps_every_snapshot_that_was_latest_after_the_cutoff(tmp_path: Path) -> None:
    table = new_table(str(tmp_path))
    write_arrow(table, batch(0, 5))
    write_arrow(table, batch(5, 5))
    time.sleep(0.05)
    cutoff = datetime.now(UTC)
    time.sleep(0.05)
    write_arrow(table, batch(10, 5))
    # Snapshot 2 was the latest until after the cutoff: a reader may still be on it.
    assert expire_snapshots(table, older_than=cutoff).expired_snapshots == [1]
    assert snapshot_ids(table) == [2, 3]
    assert expire_snapshots(table, older_than=time.time(), retain_last=2).expired_snapshots == []
    assert expire_snapshots(table, older_than=time.time()).expired_snapshots == [2]
    with pytest.raises(InvalidOptionError, match="in the future"):
        expire_snapshots(table, older_than=datetime.now(UTC) + timedelta(hours=1))
    with pytest.raises(InvalidOptionError, match="retain_last or older_than"):
        expire_snapshots(table)
    with pytest.raises(InvalidOptionError, match="at least 1"):
        expire_snapshots(table, retain_last=0)


def test_tagged_snapshots_keep_their_files(tmp_path: Path) -> None:
    table = history(str(tmp_path))
    tagged = rows_at(table, 2)
    table.snapshot_manager()  # the tag manager writes tag/tag-NAME as Paimon does
    from pypaimon.tag.tag_manager import TagManager

    TagManager(table.file_io, str(table.table_path)).create_tag(
        table.snapshot_manager().get_snapshot_by_id(2), "keep")
    expire_snapshots(table, retain_last=1)
    remove_orphan_files(table, older_than=time.time())
    pinned = table.copy({"scan.tag-name": "keep"})
    builder = pinned.new_read_builder()
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert sorted(zip(*(got.column(c).to_pylist() for c in SCHEMA.names), strict=True)) == tagged[0]


def test_branch_snapshots_keep_their_files(tmp_path: Path) -> None:
    table = history(str(tmp_path))
    root = Path(str(table.table_path).removeprefix("file://"))
    # A branch created from snapshot 2 holds a copy of it (and of the schema) and shares the files.
    branch = root / "branch" / "branch-b"
    (branch / "snapshot").mkdir(parents=True)
    shutil.copy(root / "snapshot" / "snapshot-2", branch / "snapshot" / "snapshot-2")
    shutil.copytree(root / "schema", branch / "schema")
    needed = referenced_files(table, table.snapshot_manager().get_snapshot_by_id(2))
    expire_snapshots(table, retain_last=1)
    remove_orphan_files(table, older_than=time.time())
    assert all(Path(p).is_file() for p in needed)


def test_orphan_files_of_a_failed_commit_go_only_when_old_enough(tmp_path: Path) -> None:
    table = new_table(str(tmp_path))
    write_arrow(table, batch(0, 20))
    before = table_files(table)
    # A job that wrote files and died before its commit.
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(batch(100, 20))
    left = [m.file_path.removeprefix("file://") for msg in writer.prepare_commit() for m in msg.new_files]
    writer.close()
    stray = Path(str(table.table_path).removeprefix("file://"), "manifest", "manifest-crashed-0")
    stray.write_bytes(b"half a manifest")
    tmp_hint = Path(table.snapshot_manager().snapshot_dir.removeprefix("file://"), ".snapshot-9.tmp")
    tmp_hint.write_text("{")
    orphans = {*left, str(stray), str(tmp_hint)}
    assert table_files(table) - before >= orphans - {str(tmp_hint)}
    assert remove_orphan_files(table).deleted_files == []  # Paimon's default: one day old
    old = time.time() - 3600
    for path in orphans:
        os.utime(path, (old, old))
    fresh = Path(left[0]).with_name("data-running-writer-0.parquet")
    fresh.write_bytes(b"PAR1")  # a running writer's file: too new to touch
    result = remove_orphan_files(table, older_than=time.time() - 60)
    assert set(result.deleted_files) == orphans
    assert result.deleted_bytes > 0 and fresh.exists()
    fresh.unlink()
    assert table_files(table) == before == independent_references(
        table, table.snapshot_manager().get_latest_snapshot())
    with pytest.raises(InvalidOptionError, match="in the future"):
        remove_orphan_files(table, older_than=time.time() + 3600)


def _oracle() -> Path:
    for candidate in ORACLE_CANDIDATES:
        if (candidate / "oracle.sh").is_file():
            break
    else:
        pytest.skip("Java Paimon oracle not found")
    if shutil.which("java") is None:
        pytest.skip("java not found")
    return candidate / "oracle.sh"


def test_java_sees_exactly_the_files_left_after_expiry_and_orphan_cleaning(tmp_path: Path) -> None:
    oracle = _oracle()
    table = history(str(tmp_path))
    expire_snapshots(table, retain_last=1)
    remove_orphan_files(table, older_than=time.time())
    env = {**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)}
    out = subprocess.run([str(oracle), "files", "--warehouse", str(tmp_path), "--table", "db.t"],
                         capture_output=True, text=True, env=env, timeout=600, check=True).stdout
    java = json.loads(out.strip().splitlines()[-1])
    ours = {p for p in table_files(table) if "/bucket-" in p}
    theirs = set()
    for f in java["files"]:
        theirs.add(f["file"])
        theirs.update(f.get("extra_files") or [])
    assert {posixpath.basename(p) for p in ours} == theirs
    read = subprocess.run([str(oracle), "read", "--warehouse", str(tmp_path), "--table", "db.t"],
                          capture_output=True, text=True, env=env, timeout=600, check=True).stdout
    assert json.loads(read.strip().splitlines()[-1])["rows"] == len(rows_at(table, LATEST)[0])
