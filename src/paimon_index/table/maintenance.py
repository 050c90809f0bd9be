"""Table maintenance: snapshot expiry and orphan-file removal, both safe against crashes.

    expire_snapshots(table, *, retain_last=None, older_than=None) -> ExpireResult
    remove_orphan_files(table, *, older_than=DEFAULT_ORPHAN_AGE) -> OrphanResult

**What a snapshot references** (:func:`referenced_files`): its manifest lists (base, delta,
changelog), the manifest files they list, the data files live in base + delta (ADD entries not
cancelled by a DELETE entry) with their extra files (``<data-file>.index`` file indexes), the
changelog files of its changelog manifests, its index manifest and the index files it lists
(deletion vectors, HASH), and its statistics file. Tags (``tag/tag-NAME``) and the snapshots and
tags of branches (``branch/branch-NAME/``, which share the table's files) are snapshots too:
everything they reference is kept by both operations.

**Expiry.** A snapshot is expired when it is older than the newest ``retain_last`` (default 1 when
only ``older_than`` is given) *and*, with ``older_than``, the snapshot after it was committed before
the cutoff — a reader that planned on a snapshot while it was the latest one, at or after the
cutoff, still finds it (Paimon's ``snapshot.time-retained``). The order makes a crash at any point
harmless:

1. plan: the files the expired snapshots reference and no retained snapshot or tag does;
2. delete the expired snapshot files, oldest first, then move the ``EARLIEST`` hint to the oldest
   snapshot left — from here no snapshot names a doomed file;
3. delete the doomed files: data and their extra files, changelog and index files, then the
   manifests, manifest lists and statistics.

**The changelog's own lifecycle** (:func:`changelog_lifecycle`): when ``changelog.num-retained.*``
or ``changelog.time-retained`` retain more than the snapshot options (Paimon's
``changelogLifecycleDecoupled``), step 2 first writes each expired snapshot's JSON as
``changelog/changelog-N`` (and ``changelog/LATEST``), step 1 keeps what that changelog names
(:func:`referenced_files` ``kept_as``), and after step 3 the changelogs expire by their own bounds
as Paimon's ``ExpireChangelogImpl`` (``changelog-N`` files first, then ``changelog/EARLIEST``,
then the files nothing else names).

A crash in 2 leaves some expired snapshots, still whole (their files are untouched): the next expiry
expires them. A crash in 3 leaves files no snapshot references: :func:`remove_orphan_files` removes
them. (Paimon's ``ExpireSnapshotsImpl`` deletes data files and manifests *before* the snapshot
files and skips the files it cannot read on the next run; deleting the snapshot first means no
snapshot a reader can open ever names a missing file.) Every read tolerates what a crashed or
concurrent expiry removed: a snapshot file that vanished is skipped, and so is a missing manifest of
an expired snapshot (tables left by an older expiry that deleted files first). Two expiries running
at once both finish: each deletes what it planned, a file already gone is not an error.

**Orphan files** are files in the table's file directories that no snapshot, tag or changelog
references, left by failed commits and jobs. As Paimon's ``OrphanFilesClean``: the candidates are
the files of ``manifest/``, ``index/``, ``statistics/`` and the bucket directories (under the
partition directories), plus files in ``snapshot/`` and ``changelog/`` that are neither
snapshot/changelog files nor the ``LATEST``/``EARLIEST`` hints; only files last modified before
``older_than`` are removed (default: one day ago, Paimon's default), so a concurrent writer's files,
written but not committed yet, are left alone. Schema files, snapshot files, tags and hints are
never touched. Snapshots committed while the references were collected are collected too before
anything is deleted.

Every listing, read, write and delete goes through the table's store
(:class:`~paimon_index.table.fileio.TableIO`), so both work on ``s3://`` warehouses as on local ones;
orphan ages are the modification times the store's listing reports (no request per file).

pypaimon internals used: ``snapshot_manager().snapshot_dir/get_snapshot_path/get_latest_snapshot``,
``ManifestListManager(table).read``, ``ManifestFileManager(table).read``, ``IndexFileHandler(table)
.scan``, ``table.path_factory().index_path()``, ``canonical_data_file_path``, ``JSON.from_json`` for
snapshot, tag and changelog files.
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from paimon_index.errors import CorruptFileError, InvalidOptionError
from paimon_index.table.catalog import (
    CHANGELOG_NUM_RETAINED_MAX,
    CHANGELOG_NUM_RETAINED_MIN,
    DEFAULT_SNAPSHOTS_RETAINED_MAX,
    DEFAULT_SNAPSHOTS_RETAINED_MIN,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
)
from paimon_index.table.fileio import FileStatus, TableIO

__all__ = [
    "DEFAULT_ORPHAN_AGE_SECONDS",
    "ChangelogLifecycle",
    "ExpireResult",
    "OrphanResult",
    "changelog_lifecycle",
    "expire_snapshots",
    "referenced_files",
    "remove_orphan_files",
]

EARLIEST_HINT = "EARLIEST"
LATEST_HINT = "LATEST"
SNAPSHOT_PREFIX = "snapshot-"
CHANGELOG_PREFIX = "changelog-"
TAG_PREFIX = "tag-"
BUCKET_PREFIX = "bucket-"
#: Paimon's ``remove_orphan_files`` procedure removes files older than one day by default.
DEFAULT_ORPHAN_AGE_SECONDS = 24 * 3600
#: A cutoff this far past the clock is taken as a mistake (a file written now is never an orphan).
_CLOCK_SKEW_SECONDS = 1.0
_ADD = 0
#: ``DataFileMeta.file_source``: 0 a write (``APPEND``), 1 a compaction.
_APPEND_SOURCE = 0
_SNAPSHOT_FILE = re.compile(r"^snapshot-(\d+)$")
_CHANGELOG_FILE = re.compile(r"^changelog-(\d+)$")


@dataclass
class ExpireResult:
    """Snapshot ids expired (ascending) and files deleted (absolute paths or URIs)."""

    expired_snapshots: list[int] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    #: Decoupled changelogs (``changelog/changelog-N``) expired by their own lifecycle.
    expired_changelogs: list[int] = field(default_factory=list)


@dataclass
class OrphanResult:
    """Files removed (absolute paths or URIs) and their total size."""

    deleted_files: list[str] = field(default_factory=list)
    deleted_bytes: int = 0


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def _cutoff_seconds(older_than: datetime | float | int, name: str = "older_than") -> float:
    """``older_than`` as epoch seconds; a naive datetime is local time (as ``datetime.timestamp``)."""
    if isinstance(older_than, datetime):
        value = older_than.timestamp()
    elif isinstance(older_than, int | float) and not isinstance(older_than, bool):
        value = float(older_than)
    else:
        raise InvalidOptionError(f"{name} must be a datetime or epoch seconds, got {older_than!r}")
    if value > time.time() + _CLOCK_SKEW_SECONDS:
        raise InvalidOptionError(
            f"{name} = {datetime.fromtimestamp(value, UTC).isoformat()} is in the future: "
            "every file would count as old enough, including the files of running writers")
    return value


def _read_json(table: Any, path: str, kind: type) -> Any | None:
    """A snapshot/tag/changelog JSON file, or None when it is gone (expired meanwhile)."""
    from paimon_index.table.paimon import JSON

    text = TableIO.of(table).read_text(path)
    return None if text is None else JSON.from_json(text, kind)


def _snapshot(table: Any, snapshot_id: int) -> Any | None:
    """Snapshot ``snapshot_id``, or None when its file does not exist (or vanished while read)."""
    from paimon_index.table.paimon import Snapshot

    path = table.snapshot_manager().get_snapshot_path(snapshot_id)
    return _read_json(table, path, Snapshot)


def _snapshot_ids(table: Any) -> list[int]:
    """Ids of the snapshot files present, ascending (a listing: hints are not trusted)."""
    listing = TableIO.of(table).list(_local(table.snapshot_manager().snapshot_dir))
    return sorted(int(m.group(1)) for e in listing if not e.is_dir and (m := _SNAPSHOT_FILE.match(e.name)))


def _snapshot_files(table: Any, folder: str, prefix: str) -> list[Any]:
    """The snapshots stored as ``<table>/<folder>/<prefix>*`` files (unreadable ones left out)."""
    from paimon_index.table.paimon import Snapshot

    listing = TableIO.of(table).list(posixpath.join(_local(str(table.table_path)), folder))
    found = (_read_json(table, e.path, Snapshot) for e in listing
             if not e.is_dir and e.name.startswith(prefix))
    return [s for s in found if s is not None]


def _tagged_snapshots(table: Any) -> list[Any]:
    """The snapshots tags point to (their files are kept by expiry and orphan cleaning)."""
    return _snapshot_files(table, "tag", TAG_PREFIX)


def _branch_snapshots(table: Any) -> list[Any]:
    """Snapshots and tags of every branch (``branch/branch-NAME/``): they share the table's files."""
    from paimon_index.table.paimon import Snapshot

    io = TableIO.of(table)
    found = []
    for branch in io.list(posixpath.join(_local(str(table.table_path)), "branch")):
        if not branch.is_dir:
            continue
        for sub, prefix in (("snapshot", SNAPSHOT_PREFIX), ("tag", TAG_PREFIX)):
            found += [_read_json(table, e.path, Snapshot) for e in io.list(posixpath.join(branch.path, sub))
                      if not e.is_dir and e.name.startswith(prefix) and not e.name.endswith(".tmp")]
    return [s for s in found if s is not None]


def _changelogs(table: Any) -> list[Any]:
    """Changelogs kept beyond their snapshots (``changelog/changelog-N``), read as snapshots."""
    return _snapshot_files(table, "changelog", CHANGELOG_PREFIX)


#: Paimon's ``CoreOptions`` keys and defaults of the snapshot and changelog lifecycles.
SNAPSHOT_TIME_RETAINED = "snapshot.time-retained"
SNAPSHOT_EXPIRE_LIMIT = "snapshot.expire.limit"
CHANGELOG_TIME_RETAINED = "changelog.time-retained"
_DEFAULTS = {SNAPSHOT_NUM_RETAINED_MIN: DEFAULT_SNAPSHOTS_RETAINED_MIN,
             SNAPSHOT_NUM_RETAINED_MAX: DEFAULT_SNAPSHOTS_RETAINED_MAX,
             SNAPSHOT_TIME_RETAINED: 3600 * 1000, SNAPSHOT_EXPIRE_LIMIT: 50}
#: Units of Paimon's ``TimeUtils.parseDuration``, in milliseconds.
_DURATION_UNITS = {"": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
                   "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
                   "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
                   "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
                   "d": 86_400_000, "day": 86_400_000, "days": 86_400_000}


def _duration_ms(key: str, text: str) -> int:
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if match is None or match.group(2).lower() not in _DURATION_UNITS:
        raise InvalidOptionError(f"'{key}' = {text!r} is not a duration: use a number and a unit "
                                 "(ms, s, min, h, d), e.g. '7 d'")
    return int(match.group(1)) * _DURATION_UNITS[match.group(2).lower()]


@dataclass(frozen=True)
class ChangelogLifecycle:
    """The changelog's own lifecycle (Paimon's ``ExpireConfig`` with ``changelogDecoupled``):
    expired snapshots leave their changelog behind as ``changelog/changelog-N``, which expires by
    these bounds. ``produced``: the table has a changelog producer (the changelog is its changelog
    files; without one it is the snapshot's delta)."""

    retain_min: int
    retain_max: int
    time_retained_ms: int
    max_deletes: int
    produced: bool


def changelog_lifecycle(table: Any) -> ChangelogLifecycle | None:
    """The table's decoupled changelog lifecycle, or None when the changelog lives and dies with
    its snapshots. As Paimon's ``CoreOptions.changelogLifecycleDecoupled``: decoupled when
    ``changelog.num-retained.max`` > ``snapshot.num-retained.max``, ``changelog.num-retained.min``
    > ``snapshot.num-retained.min`` or ``changelog.time-retained`` > ``snapshot.time-retained``
    (each changelog option defaulting to its snapshot one, those to Paimon's defaults 10,
    unbounded, 1 h; ``snapshot.expire.limit`` 50 bounds a changelog expiry too).

    Raises:
        InvalidOptionError: a bound that is not a number/duration, below 1, or max < min.
    """
    from paimon_index.table.paimon import table_options  # pypaimon: not at import time

    options = table_options(table)

    def number(key: str, default: int) -> int:
        text = options.get(key)
        if text is None:
            return default
        try:
            value = int(str(text).strip())
        except ValueError:
            raise InvalidOptionError(f"'{key}' = {text!r} on {_name(table)} is not a whole number") from None
        if value < 1:
            raise InvalidOptionError(f"'{key}' = {value} on {_name(table)} must be at least 1")
        return value

    def duration(key: str, default: int) -> int:
        text = options.get(key)
        return default if text is None else _duration_ms(key, str(text))

    snapshot_min = number(SNAPSHOT_NUM_RETAINED_MIN, _DEFAULTS[SNAPSHOT_NUM_RETAINED_MIN])
    snapshot_max = number(SNAPSHOT_NUM_RETAINED_MAX, _DEFAULTS[SNAPSHOT_NUM_RETAINED_MAX])
    snapshot_time = duration(SNAPSHOT_TIME_RETAINED, _DEFAULTS[SNAPSHOT_TIME_RETAINED])
    changelog_min = number(CHANGELOG_NUM_RETAINED_MIN, snapshot_min)
    changelog_max = number(CHANGELOG_NUM_RETAINED_MAX, snapshot_max)
    changelog_time = duration(CHANGELOG_TIME_RETAINED, snapshot_time)
    if not (changelog_max > snapshot_max or changelog_min > snapshot_min or changelog_time > snapshot_time):
        return None
    if changelog_max < changelog_min:
        raise InvalidOptionError(
            f"'{CHANGELOG_NUM_RETAINED_MAX}' ({changelog_max}) must not be less than "
            f"'{CHANGELOG_NUM_RETAINED_MIN}' ({changelog_min}) on {_name(table)}")
    producer = str(options.get("changelog-producer", "none")).strip().lower()
    return ChangelogLifecycle(changelog_min, changelog_max, changelog_time,
                              number(SNAPSHOT_EXPIRE_LIMIT, _DEFAULTS[SNAPSHOT_EXPIRE_LIMIT]),
                              producer != "none")


def _name(table: Any) -> str:
    from paimon_index.table.paimon import table_name

    return table_name(table)


def _changelog_ids(table: Any) -> list[int]:
    """Ids of the decoupled changelog files present (``changelog/changelog-N``), ascending."""
    listing = TableIO.of(table).list(_changelog_dir(table))
    return sorted(int(m.group(1)) for e in listing if not e.is_dir and (m := _CHANGELOG_FILE.match(e.name)))


def _changelog_dir(table: Any) -> str:
    return posixpath.join(_local(str(table.table_path)), "changelog")


def _changelog(table: Any, changelog_id: int) -> Any | None:
    from paimon_index.table.paimon import Snapshot

    path = posixpath.join(_changelog_dir(table), f"{CHANGELOG_PREFIX}{changelog_id}")
    return _read_json(table, path, Snapshot)


def _changelog_kept_as(table: Any) -> str:
    """How a decoupled changelog of the table references files (``referenced_files(kept_as=)``)."""
    from paimon_index.table.paimon import table_options  # pypaimon: not at import time

    options = table_options(table)
    producer = str(options.get("changelog-producer", "none")).strip().lower()
    return "delta" if producer == "none" else "changelog"


def _data_file_path(table: Any, entry: Any, memo: dict) -> str:
    from paimon_index.table.paimon import canonical_data_file_path

    meta = entry.file
    if meta.external_path:
        return _local(meta.external_path)
    key = (tuple(entry.partition.values), entry.bucket)
    if key not in memo:  # the bucket directory: the same for every file of the bucket
        memo[key] = posixpath.dirname(_local(canonical_data_file_path(table, key[0], key[1], "f")))
    return posixpath.join(memo[key], meta.file_name)


def _with_extras(path: str, meta: Any) -> Iterable[str]:
    yield path
    directory = posixpath.dirname(path)
    for extra in meta.extra_files or ():
        yield posixpath.join(directory, extra)


def _identifier(entry: Any) -> tuple:
    """A manifest entry's identity as Paimon's ``FileEntry.Identifier``: a rewritten file index gives
    the same data file a new identity (DELETE of the old meta, ADD of the new one)."""
    meta = entry.file
    return (tuple(entry.partition.values), entry.bucket, meta.level, meta.file_name,
            tuple(meta.extra_files or ()), bytes(meta.embedded_index or b""), meta.external_path)


def referenced_files(table: Any, snapshot: Any, *, missing_ok: bool = False,
                     cache: dict[str, Any] | None = None, kept_as: str = "snapshot") -> set[str]:
    """Every file (absolute path or URI, as the table names it) ``snapshot`` needs.

    With ``missing_ok`` a manifest list or manifest that does not exist is skipped (what is readable
    is collected); without it, it raises :class:`CorruptFileError` naming the missing file.
    ``cache`` (manifest name -> what it holds) is shared by the calls of one operation: manifests
    never change once written, and consecutive snapshots share most of them.

    ``kept_as``: ``"snapshot"`` (a snapshot or tag: everything above); ``"changelog"`` (a
    decoupled changelog ``changelog/changelog-N`` of a table with a changelog producer: only its
    changelog manifest list, manifests and changelog files — Java's ``SnapshotDeletion`` deletes the
    rest when the snapshot expires); ``"delta"`` (a decoupled changelog of a table without a
    producer, whose delta is its changelog: its base and delta manifest lists and manifests, and the
    data files written by a write, ``FileSource.APPEND``, that its delta adds or deletes — what
    Java's ``SnapshotDeletion`` leaves to ``ExpireChangelogImpl``).
    """
    memo = cache if cache is not None else {}
    from paimon_index.table.paimon import IndexFileHandler, ManifestFileManager, ManifestListManager

    root = _local(str(table.table_path))
    manifest_dir = posixpath.join(root, "manifest")
    index_dir = _local(str(table.path_factory().index_path()))
    lists, manifests = ManifestListManager(table), ManifestFileManager(table)
    files: set[str] = set()

    def read(what: str, path: str, reader: Any, default: Any) -> Any:
        if path in memo:
            return memo[path]
        try:
            memo[path] = reader()
            return memo[path]
        except FileNotFoundError as e:
            if missing_ok:
                return default
            raise CorruptFileError(f"snapshot {snapshot.id} names {what} {path}, which does not exist",
                                   path=path, offset=0, field=what) from e

    def entries(list_name: str | None) -> list[Any]:
        if not list_name:
            return []
        files.add(posixpath.join(manifest_dir, list_name))
        metas = read("manifest list", posixpath.join(manifest_dir, list_name),
                     lambda: lists.read(list_name), [])
        found: list[Any] = []
        for meta in metas:
            path = posixpath.join(manifest_dir, meta.file_name)
            files.add(path)
            found += read("manifest", path, lambda name=meta.file_name: manifests.read(name), [])
        return found

    if kept_as == "changelog":
        for entry in entries(snapshot.changelog_manifest_list):
            if entry.kind == _ADD:
                files.update(_with_extras(_data_file_path(table, entry, memo), entry.file))
        return files
    if kept_as == "delta":
        entries(snapshot.base_manifest_list)
        # The written files (APPEND source) its delta deletes: what Java's snapshot expiry skips
        # and the changelog's own expiry deletes (planDeletedInDeltaManifest with the APPEND
        # skipper). By path, as Java nets them: a file deleted at level 0 and added at a higher
        # one (an upgrade, one name) is not deleted.
        deleted: dict[str, Any] = {}
        for entry in entries(snapshot.delta_manifest_list):
            path = _data_file_path(table, entry, memo)
            if entry.kind == _ADD:
                deleted.pop(path, None)
            elif (entry.file.file_source or _APPEND_SOURCE) == _APPEND_SOURCE:
                deleted[path] = entry
        for path, entry in deleted.items():
            files.update(_with_extras(path, entry.file))
        return files
    added: dict[tuple, Any] = {}
    for entry in entries(snapshot.base_manifest_list) + entries(snapshot.delta_manifest_list):
        key = _identifier(entry)
        if entry.kind == _ADD:
            added[key] = entry
        else:
            added.pop(key, None)
    for entry in added.values():
        files.update(_with_extras(_data_file_path(table, entry, memo), entry.file))
    for entry in entries(snapshot.changelog_manifest_list):
        if entry.kind == _ADD:
            files.update(_with_extras(_data_file_path(table, entry, memo), entry.file))
    if snapshot.index_manifest:
        path = posixpath.join(manifest_dir, snapshot.index_manifest)
        files.add(path)
        for entry in read("index manifest", path, lambda: IndexFileHandler(table).scan(snapshot), []):
            meta = entry.index_file
            files.add(_local(meta.external_path) if meta.external_path
                      else posixpath.join(index_dir, meta.file_name))
    if snapshot.statistics:
        files.add(posixpath.join(root, "statistics", snapshot.statistics))
    return files


def _remove(io: TableIO, path: str) -> bool:
    """Delete ``path``; False when it was already gone (a crashed or concurrent run took it)."""
    return io.delete(path)


def _write_hint(io: TableIO, directory: str, name: str, value: int) -> None:
    # Replaced whole in one step (a rename locally, one PUT on an object store): never half-written.
    io.write_text(posixpath.join(directory, name), str(value))


def _repair_earliest_hint(io: TableIO, snapshot_dir: str, earliest: int) -> None:
    """Point ``EARLIEST`` at ``earliest`` unless it already does (Paimon writes it when missing)."""
    text = io.read_text(posixpath.join(snapshot_dir, EARLIEST_HINT))
    if text is not None and text.strip() == str(earliest):
        return
    _write_hint(io, snapshot_dir, EARLIEST_HINT, earliest)


def _deletion_order(path: str, root: str) -> tuple[int, str]:
    """Data, changelog and index files first, then manifests, manifest lists and statistics."""
    relative = posixpath.relpath(path, root)
    return (1 if relative.startswith(("manifest/", "statistics/")) else 0, path)


def _plan_expiry(table: Any, ids: list[int], retain_last: int, cutoff_ms: float | None) -> list[int]:
    latest = ids[-1]
    candidates = [i for i in ids if i <= latest - retain_last]
    if cutoff_ms is None:
        return candidates
    expire: list[int] = []
    for snapshot_id in candidates:
        # A snapshot is needed while it is the latest: keep it if its successor came at/after the cutoff.
        successor = next((i for i in ids if i > snapshot_id), None)
        later = None if successor is None else _snapshot(table, successor)
        if later is not None and later.time_millis >= cutoff_ms:
            break
        expire.append(snapshot_id)
    return expire


def expire_snapshots(table: Any, *, retain_last: int | None = None,
                     older_than: datetime | float | None = None) -> ExpireResult:
    """Expire old snapshots and delete the files only they referenced.

    Args:
        table: a pypaimon table.
        retain_last: keep at least the newest ``retain_last`` snapshots (>= 1; default 1).
        older_than: datetime or epoch seconds; keep every snapshot that was the latest at or after
            this time. At least one of the two must be given.

    Returns:
        :class:`ExpireResult`: the expired ids and the deleted files.

    Raises:
        InvalidOptionError: neither argument, ``retain_last < 1``, or ``older_than`` in the future.
        CorruptFileError: a retained snapshot names a manifest that does not exist.
    """
    if retain_last is None and older_than is None:
        raise InvalidOptionError("expire_snapshots needs retain_last or older_than")
    if retain_last is not None and (isinstance(retain_last, bool) or retain_last < 1):
        raise InvalidOptionError(f"retain_last must be at least 1, got {retain_last}")
    cutoff_ms = None if older_than is None else _cutoff_seconds(older_than) * 1000
    ids = _snapshot_ids(table)
    if not ids:
        return ExpireResult()
    return _expire(table, ids, set(_plan_expiry(table, ids, retain_last or 1, cutoff_ms)))


def _expire(table: Any, ids: list[int], expire: set[int]) -> ExpireResult:
    """Delete snapshots ``expire`` (of the table's snapshots ``ids``) and the files only they used;
    with a decoupled changelog lifecycle (:func:`changelog_lifecycle`) each expired snapshot is kept
    as ``changelog/changelog-N`` with its changelog, and the changelogs then expire on their own."""
    result = ExpireResult()
    io = TableIO.of(table)
    snapshot_dir = _local(table.snapshot_manager().snapshot_dir)
    lifecycle = changelog_lifecycle(table)
    if not expire:
        _repair_earliest_hint(io, snapshot_dir, ids[0])  # a crash may have come before the hint moved
        if lifecycle is not None:
            _expire_changelogs(table, lifecycle, result)
        return result
    root = _local(str(table.table_path))
    retained: set[str] = set()
    cache: dict[str, Any] = {}
    for snapshot_id in ids:
        snapshot = None if snapshot_id in expire else _snapshot(table, snapshot_id)
        if snapshot is not None:  # None: expired by a concurrent run meanwhile
            retained |= _referenced_or_expired(table, snapshot, cache)
    for tagged in (*_tagged_snapshots(table), *_branch_snapshots(table)):
        retained |= referenced_files(table, tagged, cache=cache)
    kept_as = _changelog_kept_as(table)
    for changelog in _changelogs(table):  # never delete what a kept changelog names
        retained |= referenced_files(table, changelog, missing_ok=True, cache=cache, kept_as=kept_as)
    doomed: set[str] = set()
    texts: dict[int, str] = {}
    for snapshot_id in sorted(expire):
        snapshot = _snapshot(table, snapshot_id)
        if snapshot is None:
            continue
        doomed |= referenced_files(table, snapshot, missing_ok=True, cache=cache)
        if lifecycle is not None:
            text = io.read_text(table.snapshot_manager().get_snapshot_path(snapshot_id))
            if text is not None:
                texts[snapshot_id] = text
                retained |= referenced_files(table, snapshot, missing_ok=True, cache=cache, kept_as=kept_as)
    doomed -= retained
    changelog_dir = _changelog_dir(table)
    for snapshot_id in sorted(expire):
        if snapshot_id in texts:
            # Java's Changelog(snapshot): the same JSON, written before the snapshot goes.
            path = posixpath.join(changelog_dir, f"{CHANGELOG_PREFIX}{snapshot_id}")
            io.write_text(path, texts[snapshot_id])
            _write_hint(io, changelog_dir, LATEST_HINT, snapshot_id)
        _remove(io, posixpath.join(snapshot_dir, f"{SNAPSHOT_PREFIX}{snapshot_id}"))
        result.expired_snapshots.append(snapshot_id)
    left = _snapshot_ids(table)
    if left:
        _write_hint(io, snapshot_dir, EARLIEST_HINT, left[0])
    for path in sorted(doomed, key=lambda p: _deletion_order(p, root)):
        if _remove(io, path):
            result.deleted_files.append(path)
    if lifecycle is not None:
        _expire_changelogs(table, lifecycle, result)
    return result


def _expire_changelogs(table: Any, lifecycle: ChangelogLifecycle, result: ExpireResult) -> None:
    """Paimon's ``ExpireChangelogImpl.expire``: keep at most ``retain_max`` and at least
    ``retain_min`` (counted back from the latest *snapshot*), at most ``max_deletes`` at a time,
    never the latest changelog; between the bounds stop at the first changelog committed within
    ``time_retained_ms``. The expired changelogs' files that no snapshot, tag or other changelog
    names are deleted after their changelog files (the same crash order as snapshot expiry)."""
    snapshots = _snapshot_ids(table)
    changelogs = _changelog_ids(table)
    if not snapshots or not changelogs:
        return
    io = TableIO.of(table)
    earliest, latest, latest_snapshot = changelogs[0], changelogs[-1], snapshots[-1]
    low = max(latest_snapshot - lifecycle.retain_max + 1, earliest)
    until = min(latest_snapshot - lifecycle.retain_min + 1, earliest + lifecycle.max_deletes, latest)
    if until <= earliest:
        return
    older_than_ms = time.time() * 1000 - lifecycle.time_retained_ms
    end = until
    for changelog_id in range(low, until + 1):
        changelog = _changelog(table, changelog_id)
        if changelog is not None and older_than_ms <= changelog.time_millis:
            end = changelog_id
            break
    if end <= earliest or _changelog(table, end) is None:  # Java skips when its end changelog is gone
        return
    expire = [i for i in changelogs if i < end]
    kept_as = "changelog" if lifecycle.produced else "delta"
    cache: dict[str, Any] = {}
    retained: set[str] = set()
    for snapshot_id in snapshots:
        snapshot = _snapshot(table, snapshot_id)
        if snapshot is not None:
            retained |= _referenced_or_expired(table, snapshot, cache)
    for tagged in (*_tagged_snapshots(table), *_branch_snapshots(table)):
        retained |= referenced_files(table, tagged, cache=cache)
    doomed: set[str] = set()
    for changelog_id in changelogs:
        changelog = _changelog(table, changelog_id)
        if changelog is None:
            continue
        files = referenced_files(table, changelog, missing_ok=True, cache=cache, kept_as=kept_as)
        if changelog_id in expire:
            doomed |= files
        else:
            retained |= files
    doomed -= retained
    changelog_dir = _changelog_dir(table)
    for changelog_id in expire:
        _remove(io, posixpath.join(changelog_dir, f"{CHANGELOG_PREFIX}{changelog_id}"))
        result.expired_changelogs.append(changelog_id)
    _write_hint(io, changelog_dir, EARLIEST_HINT, end)
    root = _local(str(table.table_path))
    for path in sorted(doomed, key=lambda p: _deletion_order(p, root)):
        if _remove(io, path):
            result.deleted_files.append(path)


def _referenced_or_expired(table: Any, snapshot: Any, cache: dict[str, Any]) -> set[str]:
    """A retained snapshot's files; empty when a concurrent expiry removed it while it was read."""
    try:
        return referenced_files(table, snapshot, cache=cache)
    except CorruptFileError:
        if _snapshot(table, snapshot.id) is None:
            return set()
        raise


def _all_referenced(table: Any, seen: set[int], cache: dict[str, Any]) -> set[str]:
    """Files of every snapshot not in ``seen`` (added to it), of every tag and changelog."""
    used: set[str] = set()
    for snapshot_id in _snapshot_ids(table):
        if snapshot_id in seen:
            continue
        snapshot = _snapshot(table, snapshot_id)
        if snapshot is not None:
            used |= referenced_files(table, snapshot, missing_ok=True, cache=cache)
        seen.add(snapshot_id)
    for other in (*_tagged_snapshots(table), *_branch_snapshots(table)):
        used |= referenced_files(table, other, missing_ok=True, cache=cache)
    kept_as = _changelog_kept_as(table)
    for changelog in _changelogs(table):
        used |= referenced_files(table, changelog, missing_ok=True, cache=cache, kept_as=kept_as)
    return used


def _candidate_files(table: Any) -> list[FileStatus]:
    """The files orphan cleaning may remove: Paimon's file directories, hints and metadata excluded.

    One listing per directory; each entry carries the size and modification time the store reports.
    """
    io = TableIO.of(table)
    root = _local(str(table.table_path))
    data_root = _local(str(table.path_factory().data_file_path()))
    directories = [posixpath.join(root, "manifest"), _local(str(table.path_factory().index_path())),
                   posixpath.join(root, "statistics")]
    level = [data_root]
    for _ in table.partition_keys:
        level = [e.path for d in level for e in io.list(d) if e.is_dir and "=" in e.name]
    directories += [e.path for d in level for e in io.list(d)
                    if e.is_dir and e.name.startswith(BUCKET_PREFIX)]
    files = [e for d in directories for e in io.list(d) if not e.is_dir]
    for directory, prefix in (("snapshot", SNAPSHOT_PREFIX), ("changelog", CHANGELOG_PREFIX)):
        files += [e for e in io.list(posixpath.join(root, directory))
                  if not e.is_dir and not e.name.startswith(prefix)
                  and e.name not in (EARLIEST_HINT, LATEST_HINT)]
    return files


def remove_orphan_files(table: Any, *, older_than: datetime | float | None = None,
                        dry_run: bool = False) -> OrphanResult:
    """Remove the files no snapshot, tag or changelog references, last modified before ``older_than``.

    Args:
        table: a pypaimon table.
        older_than: datetime or epoch seconds (default: one day ago, as Paimon's procedure); a file
            modified at or after it is kept — a running writer's uncommitted files are that new.

    Returns:
        :class:`OrphanResult`: the removed files and their bytes.

    Raises:
        InvalidOptionError: ``older_than`` in the future.

    ``dry_run``: find and count the orphans, delete nothing (Paimon's ``dry_run``).
    """
    cutoff = time.time() - DEFAULT_ORPHAN_AGE_SECONDS if older_than is None else _cutoff_seconds(older_than)
    result = OrphanResult()
    # List first, then collect references: a file committed after the listing is either too new to
    # be a candidate or referenced by a snapshot collected below.
    # A file without a modification time in the listing is kept: its age is unknown.
    aged = [(e.path, e.size or 0) for e in _candidate_files(table)
            if e.mtime is not None and e.mtime < cutoff]
    seen: set[int] = set()
    cache: dict[str, Any] = {}
    used = _all_referenced(table, seen, cache)
    used |= _all_referenced(table, seen, cache)  # snapshots committed while the first pass ran
    io = TableIO.of(table)
    for path, size in aged:
        if path not in used and (dry_run or _remove(io, path)):
            result.deleted_files.append(path)
            result.deleted_bytes += size
    return result


def expire_snapshots_as_paimon(table: Any, *, retain_max: int, retain_min: int, older_than_ms: float,
                               max_deletes: int) -> ExpireResult:
    """Paimon's ``ExpireSnapshotsImpl.expire`` rule: keep at most ``retain_max`` and at least
    ``retain_min`` snapshots, expire at most ``max_deletes`` from the earliest, and between the two
    bounds expire a snapshot only while its successor was committed before ``older_than_ms``.

    Raises:
        InvalidOptionError: ``retain_max < retain_min`` or a bound below 1 (Paimon's message).
    """
    if retain_min < 1 or retain_max < 1:
        raise InvalidOptionError(f"retain_max ({retain_max}) and retain_min ({retain_min}) "
                                 "must be at least 1")
    if retain_max < retain_min:
        raise InvalidOptionError(f"retainMax ({retain_max}) must not be less than retainMin ({retain_min}).")
    ids = _snapshot_ids(table)
    if not ids:
        return ExpireResult()
    earliest, latest = ids[0], ids[-1]
    low = max(latest - retain_max + 1, earliest)
    until = min(latest - retain_min + 1, earliest + max_deletes)
    end = until
    for snapshot_id in range(low, until):
        successor = _snapshot(table, snapshot_id + 1)
        if successor is not None and older_than_ms <= successor.time_millis:
            end = snapshot_id
            break
    return _expire(table, ids, {i for i in ids if i < end})
