"""The changelog's own lifecycle (``changelog.num-retained.*``, ``changelog.time-retained``).

Paimon decouples a changelog's lifetime from its snapshot's when the changelog options retain more
than the snapshot options (``CoreOptions.changelogLifecycleDecoupled``): expiring a snapshot then
writes ``changelog/changelog-N`` (the snapshot's JSON) and keeps its changelog files, and the
changelogs expire on their own bounds (``ExpireChangelogImpl``). References are Java's: its own
expiry (``ExpireSnapshots`` + ``ExpireChangelog`` with the table's ``ExpireConfig``, as it runs
after a commit) on a copy of the same table leaves the same files, and its streaming read (which
reads expired snapshots' changelogs from ``changelog/``) returns the change rows of the model.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from tests.table.test_changelog import (
    SCHEMA,
    Change,
    ChangelogReader,
    build_changelog_reader,
    latest,
    normal,
)

import paimon_index
from paimon_index.errors import InvalidOptionError
from paimon_index.table.maintenance import changelog_lifecycle, expire_snapshots_as_paimon

#: Snapshots: keep 1 (no time bound); changelogs: keep 2 — decoupled (2 > 1).
DECOUPLED = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
             "snapshot.time-retained": "1 ms", "changelog.num-retained.max": "2"}


@pytest.fixture(scope="module")
def changelog_reader(tmp_path_factory: pytest.TempPathFactory) -> ChangelogReader:
    return build_changelog_reader(tmp_path_factory)


def create(warehouse: str, options: dict[str, str]) -> Any:
    return paimon_index.create_table(warehouse, "db.t", SCHEMA, primary_keys=["p", "k"],
                                     options={"bucket": "1", **options})


def rows(v: str, keys: range | tuple[int, ...] = range(3)) -> pa.Table:
    return pa.Table.from_pylist([{"p": 0, "k": k, "v": v, "n": k} for k in keys], schema=SCHEMA)


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")}


def updates(old: str, new: str, keys: range | tuple[int, ...] = range(3)) -> list[Change]:
    return [c for k in keys for c in (("-U", 0, k, old, k), ("+U", 0, k, new, k))]


def write_four(warehouse: str, options: dict[str, str]) -> Any:
    """Four upserts of keys 0..2 (values a, b, c, d), committed as Java commits them: snapshot 1
    (APPEND: new keys, at their levels), then each update an APPEND (its level-0 files) and a
    COMPACT (its vectors and, with a lookup producer, its changelog): 2-3, 4-5, 6-7."""
    table = create(warehouse, options)
    for v in "abcd":
        table.upsert(rows(v))
    assert latest(table) == 7
    return table


def java_expire(reader: ChangelogReader, warehouse: str) -> dict[str, Any]:
    (out,) = reader.run([{"warehouse": warehouse, "table": "db.t", "mode": "expire", "from": 0, "to": 0}])
    return out


def test_the_lifecycle_is_decoupled_exactly_when_paimon_says() -> None:
    class Options:
        def __init__(self, options: dict[str, str]) -> None:
            self.options = type("M", (), {"to_map": lambda _self: options})()

    def lifecycle(options: dict[str, str]) -> Any:
        table = type("T", (), {"options": Options(options), "identifier": "db.t"})()
        return changelog_lifecycle(table)

    assert lifecycle({}) is None
    assert lifecycle({"changelog.num-retained.min": "10"}) is None  # equal to the snapshots' default
    assert lifecycle({"changelog.num-retained.min": "11"}).retain_min == 11
    assert lifecycle({"changelog.time-retained": "2 h"}).time_retained_ms == 7_200_000
    assert lifecycle({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "5",
                      "changelog.num-retained.max": "6"}).retain_max == 6
    decoupled = lifecycle({"changelog.num-retained.min": "20", "changelog-producer": "lookup"})
    assert decoupled.retain_max == 2**31 - 1 and decoupled.produced and decoupled.max_deletes == 50
    with pytest.raises(InvalidOptionError, match=re.escape("changelog.num-retained.max")):
        lifecycle({"changelog.num-retained.min": "20", "changelog.num-retained.max": "15"})
    with pytest.raises(InvalidOptionError, match=re.escape("'changelog.time-retained' = '2 fortnights'")):
        lifecycle({"changelog.time-retained": "2 fortnights"})
    with pytest.raises(InvalidOptionError, match=re.escape("'changelog.num-retained.min' = 0")):
        lifecycle({"changelog.num-retained.min": "0"})


def test_without_decoupling_expiry_deletes_the_changelog_and_writes_no_changelog_file(tmp_path: Path) -> None:
    table = write_four(str(tmp_path), {"changelog-producer": "lookup", "deletion-vectors.enabled": "true"})
    result = table.expire_snapshots(retain_last=1)
    assert list(result.details.expired_changelogs) == []
    assert not (tmp_path / "db.db" / "t" / "changelog").exists()
    assert len(list(tmp_path.glob("db.db/t/bucket-0/changelog-*"))) == 1


def test_decoupled_expiry_keeps_changelogs_as_java_does(tmp_path: Path,
                                                        changelog_reader: ChangelogReader) -> None:
    """Expiring snapshots 1..6 keeps them as changelog-1..6; the changelog bounds (3, counted from
    the latest snapshot) then expire changelog-1..4. Java's expiry on a copy of the same table
    leaves the same files; Java's streaming read from snapshot 5 reads changelog-5 (the update to
    c), changelog-6 (d's write: no changelog) and snapshot 7 (the update to d); orphan removal
    then finds nothing to remove."""
    options = {"changelog-producer": "lookup", "deletion-vectors.enabled": "true", **DECOUPLED,
               "changelog.num-retained.min": "3", "changelog.num-retained.max": "3"}
    ours, theirs = tmp_path / "ours", tmp_path / "java"
    table = write_four(str(ours), options)
    shutil.copytree(ours, theirs)
    time.sleep(0.01)
    result = expire_snapshots_as_paimon(table._paimon, retain_max=1, retain_min=1,
                                        older_than_ms=time.time() * 1000 - 1, max_deletes=50)
    assert result.expired_snapshots == [1, 2, 3, 4, 5, 6] and result.expired_changelogs == [1, 2, 3, 4]
    out = java_expire(changelog_reader, str(theirs))
    assert (out["expired"], out["changelogs_expired"]) == (6, 4)
    root = Path("db.db") / "t"
    mine, java = files(ours / root), files(theirs / root)
    assert mine == java, (sorted(mine - java), sorted(java - mine))
    assert sorted(p for p in mine if p.startswith("changelog/")) == [
        "changelog/EARLIEST", "changelog/LATEST", "changelog/changelog-5", "changelog/changelog-6"]
    assert len([p for p in mine if p.startswith("bucket-0/changelog-")]) == 2  # snapshots 5 and 7
    (streamed,) = changelog_reader.read([(str(ours), "db.t", 4, 7)], mode="stream")
    assert normal(streamed) == normal(updates("b", "c") + updates("c", "d"))
    assert table.remove_orphan_files(older_than=time.time()).deleted_files == ()
    assert files(ours / root) == mine


def test_changelogs_expire_by_time_on_their_own(tmp_path: Path, changelog_reader: ChangelogReader) -> None:
    """``changelog.time-retained`` beyond the snapshots' keeps every changelog younger than it,
    whatever the counts; the same expiry, once they are older, expires them by count."""
    options = {"changelog-producer": "lookup", "deletion-vectors.enabled": "true",
               "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms",
               "changelog.num-retained.min": "1", "changelog.time-retained": "1 h"}
    table = write_four(str(tmp_path), options)
    time.sleep(0.01)
    first = table.expire_snapshots(retain_last=1)
    assert list(first.expired_snapshots) == [1, 2, 3, 4, 5, 6] and first.details.expired_changelogs == []
    assert len(list(tmp_path.glob("db.db/t/bucket-0/changelog-*"))) == 4  # snapshots 1, 3, 5, 7
    (streamed,) = changelog_reader.read([(str(tmp_path), "db.t", 0, 7)], mode="stream")
    assert normal(streamed) == normal([("+I", 0, k, "a", k) for k in range(3)] + updates("a", "b")
                                      + updates("b", "c") + updates("c", "d"))
    table = table.alter_options(set={"changelog.time-retained": "2 ms"})  # still decoupled: 2 ms > 1 ms
    time.sleep(0.01)
    second = table.expire_snapshots(retain_last=1)
    # latest changelog (6: d's write, no changelog file) stays: Java never expires it (its
    # skipping set needs it); snapshot 7 holds the one changelog file left
    assert second.details.expired_changelogs == [1, 2, 3, 4, 5]
    assert len(list(tmp_path.glob("db.db/t/bucket-0/changelog-*"))) == 1


@pytest.mark.parametrize("after", [pytest.param(1, marks=pytest.mark.slow), 3])
def test_without_a_producer_the_delta_is_the_changelog_as_java_keeps_it(
        tmp_path: Path, after: int, changelog_reader: ChangelogReader) -> None:
    """``changelog-producer`` = none, decoupled: an expired snapshot's delta (its manifests, the
    written data files it adds or deletes) stays with its changelog; Java's expiry leaves the same
    files — with ``after`` = 1 the compaction's changelog (which deleted the written files) is
    kept, with 3 it expires and takes them (``after`` upserts of a new key: one snapshot each)."""
    ours, theirs = tmp_path / "ours", tmp_path / "java"
    table = write_four(str(ours), {"deletion-vectors.enabled": "true", **DECOUPLED})
    table.compact(full=True)
    compaction = latest(table)
    for i, v in enumerate("efg"[:after]):
        table.upsert(rows(v, (10 + i,)))
    shutil.copytree(ours, theirs)
    time.sleep(0.01)
    result = expire_snapshots_as_paimon(table._paimon, retain_max=1, retain_min=1,
                                        older_than_ms=time.time() * 1000 - 1, max_deletes=50)
    assert (compaction in result.expired_changelogs) == (after == 3)
    out = java_expire(changelog_reader, str(theirs))
    assert (out["expired"], out["changelogs_expired"]) == (len(result.expired_snapshots),
                                                          len(result.expired_changelogs))
    root = Path("db.db") / "t"
    mine, java = files(ours / root), files(theirs / root)
    assert mine == java, (sorted(mine - java), sorted(java - mine))
    assert table.remove_orphan_files(older_than=time.time()).deleted_files == ()


def test_orphan_removal_keeps_what_kept_changelogs_name_and_removes_a_stray(tmp_path: Path) -> None:
    table = write_four(str(tmp_path), {"changelog-producer": "lookup", "deletion-vectors.enabled": "true",
                                       "snapshot.num-retained.min": "1", "changelog.num-retained.min": "3",
                                       "changelog.time-retained": "1 h"})
    table.expire_snapshots(retain_last=1)
    bucket = tmp_path / "db.db" / "t" / "bucket-0"
    changelogs = sorted(bucket.glob("changelog-*"))
    assert len(changelogs) == 4
    stray = bucket / "changelog-00000000-0000-0000-0000-000000000000-0.parquet"
    shutil.copy(changelogs[0], stray)
    os.utime(stray, (time.time() - 10, time.time() - 10))
    removed = table.remove_orphan_files(older_than=time.time() - 5)
    assert list(removed.deleted_files) == [str(stray)]
    assert all(p.exists() for p in changelogs)


@pytest.mark.parametrize("how", ["upsert", "rewrite_file_index"])
def test_javas_expiry_keeps_a_data_file_committed_again_under_its_name(
        tmp_path: Path, changelog_reader: ChangelogReader, how: str) -> None:
    """A snapshot that deletes a data file and adds it again under the same name (an upsert's
    compaction moving its level-0 file up a level; a file index rewritten) lists the DELETE entry
    first, as Java's ``FileStoreCommitImpl`` lists a compaction's before/after files: Java's expiry
    nets a delta's entries by path in that order (``planDeletedInDeltaManifest``), so an ADD listed
    before its DELETE made Java's expiry delete a file the retained snapshot still reads."""
    warehouse = str(tmp_path)
    expire_all = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
                  "snapshot.time-retained": "1 ms"}
    if how == "upsert":
        table = create(warehouse, {"deletion-vectors.enabled": "true", **expire_all})
        table.upsert(rows("a"))
        table.upsert(rows("b", (0,)))  # APPEND (level 0), COMPACT (the same file at level >= 1)
        table.upsert(rows("c", (1,)))
        want = [(0, 0, "b", 0), (0, 1, "c", 1), (0, 2, "a", 2)]
    else:
        schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
        table = paimon_index.create_table(warehouse, "db.t", schema, options=expire_all)
        table.write(pa.table({"k": [1, 2], "v": ["x", "y"]}, schema=schema))
        table = table.alter_options(set={"file-index.bloom-filter.columns": "v"})
        table.rewrite_file_index()  # DELETE + ADD of the one data file, a new index
        table.write(pa.table({"k": [3], "v": ["z"]}, schema=schema))
        want = [(1, "x"), (2, "y"), (3, "z")]
    time.sleep(0.01)
    out = java_expire(changelog_reader, warehouse)
    assert out["expired"] >= 2
    assert sorted(tuple(r.values()) for r in table.read().to_pylist()) == want
    read = changelog_reader.oracle.run("read", "--warehouse", warehouse, "--table", "db.t")
    assert read["rows"] == len(want)  # Java reads every file the latest snapshot names
