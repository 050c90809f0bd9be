"""Compaction of a deletion-vectors-mode primary-key table, and switching the mode.

    compact(table, full=False, threshold=0.5, run=None) -> snapshot id | None
    plan_buckets(plan, full, top) -> [BucketWork]          the driver: plain values per bucket
    compact_bucket(table, work, ...) -> BucketCompacted     one bucket's rewrite (in a Spark task too)
    set_deletion_vectors(warehouse, identifier, enabled) -> table

``compact`` rewrites the files whose deleted fraction exceeds ``threshold`` (seed 004 §5.1, default
50%) without their deleted rows, at their level, and drops their vectors; ``full=True`` rewrites
each bucket into one file at the top level with no vectors. A table without deletion vectors
(merge-on-read, Paimon's default mode) is fully compacted: each bucket's rows merged by key
(pypaimon's merge read of the pinned snapshot, the table's merge engine, deletes dropped) into one
file at the top level — what Paimon's full compaction does, and what switching such a table to
deletion-vectors mode needs first. Level-0 files of plain pypaimon writes
are folded in first (an empty upsert, its own snapshot). The compaction itself is planned on one
pinned snapshot and committed exactly on it: when an upsert lands in between, the compaction fails
with ConcurrentChangeError and deletes what it wrote — it never brings overwritten values back.

One implementation for both worlds: the driver plans each (partition, bucket)'s work as a
:class:`BucketWork` of plain values (files by location, deletion-vector index files by their
ranges); :func:`compact_bucket` does one bucket's work (restore its vectors, pick, rewrite, write
the new DV index file) and returns its commit message, the removed files by name and every file it
wrote; the driver stages them all and commits once. ``run`` is the step that differs: ``None``
runs the buckets here one after the other (:meth:`paimon_index.Table.compact`);
:func:`paimon_index.spark.jobs.compact` passes one that runs them in Spark tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from paimon_index.deletionvectors.maintainer import BucketDvMaintainer
from paimon_index.errors import (
    ConcurrentChangeError,
    InvalidOptionError,
    PrimaryKeyTableError,
    UnsupportedChangelogProducerError,
)
from paimon_index.table.bucket_vectors import VectorFile, restore_plain, vector_files
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import (
    CommitMessage,
    table_name,
    table_options,
)
from paimon_index.table.pk.commit import begin, written_paths
from paimon_index.table.pk.levels import encoded_bytes_per_row, rewrite, rewrite_merged
from paimon_index.table.pk.plan import (
    DEFAULT_COMPACTION_THRESHOLD,
    Bucket,
    Plan,
    check_table,
    dv_mode,
    max_level,
    plan_snapshot,
)
from paimon_index.table.plan import DV_ENABLED

__all__ = ["BucketCompacted", "BucketWork", "compact", "compact_bucket", "plan_buckets",
           "set_deletion_vectors"]

_COMPACT = "compact"


@dataclass(frozen=True)
class CompactFile:
    """A live data file of the bucket, by location (the names ``DataFileMeta`` uses)."""

    file_name: str
    file_path: str
    level: int
    row_count: int
    schema_id: int
    file_size: int


@dataclass(frozen=True)
class BucketWork:
    """One (partition, bucket)'s compaction, as plain values (what a Spark task receives)."""

    partition: tuple[Any, ...]
    bucket: int
    files: tuple[CompactFile, ...]
    vectors: tuple[VectorFile, ...]
    full: bool
    threshold: float
    top: int
    index_dir: str
    bitmap64: bool
    #: merge-on-read: the snapshot whose rows of this bucket are merged by key (None: DV mode)
    merged_snapshot: int | None = None

    @property
    def weight(self) -> int:
        """Bytes the work reads at most (for balancing tasks)."""
        return max(1, sum(f.file_size for f in self.files))


@dataclass
class BucketCompacted:
    """One bucket's outcome: its commit message without the removed files (named in ``removed``;
    the driver adds its own metadata of them) and every file written for it."""

    partition: tuple[Any, ...]
    bucket: int
    message: Any | None
    removed: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)


#: Runs every bucket's work (here, or in Spark tasks) and returns one outcome per work item.
RunBuckets = Callable[[list[BucketWork]], Sequence[BucketCompacted]]


def compact(table: Any, *, full: bool = False, threshold: float = DEFAULT_COMPACTION_THRESHOLD,
            run: RunBuckets | None = None) -> int | None:
    """Rewrite files whose deleted fraction exceeds ``threshold`` (or everything); one snapshot.

    ``run``: how the buckets' work runs (default: here, one bucket after the other).

    Raises:
        ConcurrentChangeError: another snapshot landed after the compaction planned; nothing applied.
    """
    from paimon_index.table.pk.upsert import fold_level0

    if table.is_primary_key_table and not dv_mode(table):
        return _compact_merge_on_read(table, run)
    options = check_table(table)
    if not 0.0 <= threshold <= 1.0:
        raise InvalidOptionError(f"compaction threshold {threshold} outside [0, 1]")
    runner = run if run is not None else _run_here(table)
    with begin(table, _COMPACT, compact=True) as txn:
        plan = plan_snapshot(table, txn.snapshot)
        if not plan.level0():
            return _compact_on(txn, plan, plan_buckets(plan, full, threshold, max_level(options)), runner)
    fold_level0(table)  # their own COMPACT snapshot first
    with begin(table, _COMPACT, compact=True) as txn:
        plan = plan_snapshot(table, txn.snapshot)
        if plan.level0():
            raise ConcurrentChangeError("level-0 files were written while compacting; run it again")
        return _compact_on(txn, plan, plan_buckets(plan, full, threshold, max_level(options)), runner)


def _compact_merge_on_read(table: Any, run: RunBuckets | None) -> int | None:
    """A merge-on-read table's full compaction: every bucket not already one file at the top level
    merged by key into one; one COMPACT snapshot, exactly on the planned one."""
    from paimon_index.table.pk.changelog import producer

    options = table_options(table)
    # 'input': the changelog was written with the records, Java's compaction writes none either.
    if producer(table, options, input_ok=True) == "lookup":
        # Java's compaction of level-0 records writes their changelog (lookup); this one would not.
        raise UnsupportedChangelogProducerError(
            f"compaction of {table_name(table)} (no deletion vectors) with 'changelog-producer' = 'lookup' "
            "is not supported: it would write no changelog for the level-0 records it merges; compact it "
            "with Paimon's connector, or enable deletion vectors")
    top = max_level(options)
    runner = run if run is not None else _run_here(table)
    with begin(table, _COMPACT, compact=True) as txn:
        plan = plan_snapshot(table, txn.snapshot, vectors=False)
        works = []
        for (partition, bucket_id), bucket in sorted(plan.buckets.items(), key=repr):
            if len(bucket.files) == 1 and bucket.files[0].level == top:
                continue
            works.append(BucketWork(tuple(partition), bucket_id, _compact_files(bucket), (), True, 0.0, top,
                                    plan.index_dir,
                                    plan.bitmap64, merged_snapshot=plan.snapshot_id))
        return _compact_on(txn, plan, works, runner)


def _merge_bucket(table: Any, work: BucketWork, io: TableIO) -> BucketCompacted:
    """One merge-on-read bucket's full compaction: its rows of the planned snapshot merged by key,
    written as new files at the top level; every file of the bucket removed."""
    from paimon_index.table.pk.merge_on_read import merged_bucket_rows

    assert work.merged_snapshot is not None
    done = BucketCompacted(work.partition, work.bucket, None)
    try:
        rows = merged_bucket_rows(table, work.merged_snapshot, work.partition, work.bucket,
                                  [f.file_name for f in work.files], kinds=True)  # each row keeps its kind
        placed = rewrite_merged(table, rows, work.partition, work.bucket, work.top,
                                encoded_bytes_per_row(work.files))
        done.written += written_paths([], work.index_dir, placed)
        done.removed = [f.file_name for f in work.files]
        done.message = CommitMessage(partition=work.partition, bucket=work.bucket, new_files=placed,
                                     deleted_files=[], index_adds=[], index_deletes=[])
        return done
    except BaseException:
        for path in done.written:
            io.delete_quietly(path)
        raise


def _run_here(table: Any) -> RunBuckets:
    def run(works: list[BucketWork]) -> list[BucketCompacted]:
        io = TableIO.of(table)
        return list(compact_buckets(table, works, io))

    return run


def plan_buckets(plan: Plan, full: bool, threshold: float, top: int) -> list[BucketWork]:
    """Every bucket of ``plan`` that has work, as plain values (the driver's half).

    Left out: a bucket without vectors when not ``full`` (nothing to pick, no stale vector to drop),
    and with ``full`` a bucket already in one file at the top level without vectors.
    """
    works = []
    for (partition, bucket_id), bucket in sorted(plan.buckets.items(), key=repr):
        if not bucket.dv_entries and (not full or (len(bucket.files) == 1 and bucket.files[0].level == top)):
            continue
        works.append(BucketWork(tuple(partition), bucket_id, _compact_files(bucket),
                                vector_files(bucket.dv_entries), full, threshold, top, plan.index_dir,
                                plan.bitmap64))
    return works


def _compact_files(bucket: Bucket) -> tuple[CompactFile, ...]:
    return tuple(CompactFile(m.file_name, m.file_path, int(m.level), int(m.row_count), int(m.schema_id),
                             int(m.file_size or 0)) for m in bucket.files)


def _restore(table: Any, work: BucketWork, io: TableIO) -> BucketDvMaintainer:
    """The bucket's vectors from the plain description (live files only, as the plan's maintainer)."""
    return restore_plain(table, work.partition, work.bucket, work.vectors, work.index_dir, io,
                         bitmap64=work.bitmap64, live_files={f.file_name for f in work.files})


def compact_bucket(table: Any, work: BucketWork, io: TableIO) -> BucketCompacted:
    """One bucket's compaction (where it runs: here or a Spark task): pick the files, rewrite them
    without their deleted rows (``full``: all into one file at the top level), write the bucket's new
    DV index file; merge-on-read: all its files merged by key into one at the top level. Nothing is
    committed; on failure the files it wrote are deleted."""
    if work.merged_snapshot is not None:
        return _merge_bucket(table, work, io)
    dvs = _restore(table, work, io)
    done = BucketCompacted(work.partition, work.bucket, None)
    try:
        if work.full:
            picked = list(work.files)
        else:
            picked = []
            for meta in work.files:
                vector = dvs.deletion_vector_of(meta.file_name)
                deleted = 0 if vector is None else vector.cardinality
                if vector is not None and meta.row_count and deleted / meta.row_count > work.threshold:
                    picked.append(meta)
        if work.full and len(picked) == 1 and dvs.deletion_vector_of(picked[0].file_name) is None \
                and picked[0].level == work.top:
            picked = []
        placed: list[Any] = []
        removed: list[Any] = []
        if work.full and picked:
            placed, removed = rewrite(table, dvs, picked, work.top)
            done.written += written_paths([], work.index_dir, placed)
        else:
            for meta in picked:
                new, gone = rewrite(table, dvs, [meta], meta.level)
                done.written += written_paths([], work.index_dir, new)
                placed += new
                removed += gone
        # Also commits a bucket whose index held vectors of files no longer live (restore dropped them).
        dv = dvs.prepare_commit()
        stored = dv.write_to(work.index_dir, write=io.write_new)
        if stored is not None:
            done.written.append(stored)
        done.removed = [m.file_name for m in removed]
        if placed or removed or not dv.is_empty:
            done.message = CommitMessage(partition=work.partition, bucket=work.bucket, new_files=placed,
                                         deleted_files=[], index_adds=list(dv.added),
                                         index_deletes=list(dv.deleted))
        return done
    except BaseException:
        for path in done.written:
            io.delete_quietly(path)
        raise


def compact_buckets(table: Any, works: Sequence[BucketWork], io: TableIO) -> Iterator[BucketCompacted]:
    """:func:`compact_bucket` of each work item in turn; a failure deletes what the earlier ones
    wrote too (a Spark task's group, or the whole compaction here)."""
    finished: list[BucketCompacted] = []
    try:
        for work in works:
            finished.append(compact_bucket(table, work, io))
    except BaseException:
        for path in (p for f in finished for p in f.written):
            io.delete_quietly(path)
        raise
    yield from finished


def _compact_on(txn: Any, plan: Plan, works: list[BucketWork], run: RunBuckets) -> int | None:
    if not works:
        return txn.commit()
    results = list(run(works))
    for result in results:
        txn.track(*result.written)
    planned = {(w.partition, w.bucket) for w in works}
    if {(r.partition, r.bucket) for r in results} != planned or len(results) != len(works):
        raise PrimaryKeyTableError("internal: the compaction tasks returned other buckets than planned")
    for result in results:
        if result.message is None:
            continue
        by_name = {m.file_name: m for m in plan.buckets[(result.partition, result.bucket)].files}
        txn.stage(replace(result.message, deleted_files=[by_name[n] for n in result.removed]))
    return txn.commit()


def set_deletion_vectors(warehouse: str, identifier: str, enabled: bool, *,
                         catalog_options: Mapping[str, str] | None = None) -> Any:
    """Turn deletion-vectors mode on or off; only after a full compaction (seed 004, compatibility)."""
    from paimon_index.table.catalog import alter_table_options, open_table

    table = open_table(warehouse, identifier, catalog_options=catalog_options)
    plan = plan_snapshot(table, table.snapshot_manager().get_latest_snapshot())
    files = [m for b in plan.buckets.values() for m in b.files]
    vectors = [e for b in plan.buckets.values() for e in b.dv_entries]
    fully_compacted = all(len(b.files) <= 1 and not b.dv_entries for b in plan.buckets.values())
    if files and not fully_compacted:
        raise PrimaryKeyTableError(
            f"switching deletion-vectors mode {'on' if enabled else 'off'} needs a full compaction first: "
            f"{len(files)} data files, {len(vectors)} deletion-vector index files "
            "(run compact(table, full=True))")
    return alter_table_options(warehouse, identifier, set_options={DV_ENABLED: str(enabled).lower()},
                               catalog_options=catalog_options, dv_switch_checked=True)
