"""Committing a primary-key operation through the project's one Transaction.

    begin(table, operation) -> Transaction          pinned on the latest snapshot
    on_snapshot(table, snapshot_id, operation)      pinned on the snapshot executors planned on
    commit_in_two(txn, writes, compactions) -> id   Java's APPEND, then its COMPACT
    abandon(table, paths, operation)                delete files of work that will not commit
    delete_discarded(table, index_dir, metas)       after a commit: files written, then rewritten away
    written_paths(messages, index_dir) -> paths     every file an operation's messages name

Every upsert, compaction and prepared (Spark) commit lands exactly as snapshot planned + 1 or
raises :class:`~paimon_index.errors.ConcurrentChangeError`, and the files it wrote are deleted when
it does not land (see :mod:`paimon_index.table.transaction`). Lookups, vectors and levels are
computed on the pinned snapshot, so there is no retry on a newer one: it would be wrong there.

An upsert that changes older rows commits as Java's writer commits it (:func:`commit_in_two`): an
``APPEND`` snapshot of the write's level-0 files (its rows and its ``-U``/``-D`` rows) and then a
``COMPACT`` snapshot of its lookup compaction (the files moved to their levels, the deletion
vectors). Java's delta readers — streaming reads and ``incremental-between-scan-mode`` = ``delta``
of a table without a changelog producer — read ``APPEND`` snapshots only: a single snapshot that
changes vectors is ``OVERWRITE``, and they would never see its updates and deletes. Between the two
commits the rows are in level-0 files, which deletion-vectors readers do not read (Java, pypaimon,
:func:`~paimon_index.table.pk.plan.merge_free`) until a compaction or the next upsert folds them.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable
from typing import Any

from paimon_index.errors import ConcurrentChangeError
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import table_name
from paimon_index.table.transaction import Transaction

__all__ = ["abandon", "begin", "commit_in_two", "delete_discarded", "on_snapshot", "written_paths"]

log = logging.getLogger(__name__)


def begin(table: Any, operation: str, *, compact: bool = False) -> Transaction:
    """``compact``: the snapshot is ``COMPACT``, as Java commits a compaction."""
    return Transaction.begin(table, operation=operation, compact=compact)


def on_snapshot(table: Any, snapshot_id: int | None, operation: str, written: Iterable[str] = ()
                ) -> Transaction:
    """A transaction pinned on ``snapshot_id`` (the one prepared work was planned on), tracking the
    files ``written`` for it; raises ConcurrentChangeError when that snapshot is gone (those files
    deleted)."""
    return Transaction.on(table, snapshot_id, operation=operation, tracked=written)


def commit_in_two(txn: Transaction, writes: list[Any], compactions: list[Any]) -> int | None:
    """Commit ``writes`` exactly on ``txn``'s snapshot N as ``APPEND`` N + 1, then ``compactions``
    exactly on it as ``COMPACT`` N + 2 (one snapshot when either is empty); the last id landed.

    When the write lands and another snapshot takes N + 2 first (a writer planned on N + 1, which
    folds the level-0 files of N + 1 itself: every upsert and compaction here does), the write
    stands: its rows are committed, the compaction's files are deleted, and N + 1 is returned with
    a warning — as Java's writer leaves a commit whose compaction failed.

    Raises:
        ConcurrentChangeError: the write did not land (nothing applied, every file deleted).
        CommitError: publishing failed, or the compaction's outcome is unknown.
    """
    if not compactions:
        txn.stage(writes)
        return txn.commit()
    if not writes:
        txn.compact = True
        txn.stage(compactions)
        return txn.commit()
    txn.stage(writes)
    written = txn.commit()
    if written is None:  # pypaimon skipped the write as empty: the compaction alone, on N
        written = txn.snapshot_id
    compaction = Transaction.on(txn.table, written, operation=txn.operation, compact=True,
                                staged=compactions)
    compaction.commit_user = txn.commit_user  # one writer, as Java's two snapshots of a commit
    try:
        return compaction.commit()
    except ConcurrentChangeError as e:
        log.warning("%s on table %s: its rows landed in snapshot %s as level-0 files; their compaction "
                    "was refused (%s): the writer that came between folds them, or compact() does",
                    txn.operation, table_name(txn.table), written, e)
        return written


def delete_discarded(table: Any, index_dir: str, discarded: Iterable[Any]) -> None:
    """After a commit: delete the files the operation wrote and then rewrote away (no snapshot has them)."""
    io = TableIO.of(table)
    for path in written_paths([], index_dir, discarded):
        io.delete_quietly(path)


def abandon(table: Any, paths: Iterable[str], operation: str) -> None:
    """Delete files written for an operation that will not be committed."""
    txn = Transaction(table, None, operation=operation)
    txn.track(*paths)
    txn.abort()


def _data_paths(meta: Any) -> list[str]:
    directory = posixpath.dirname(meta.file_path)
    return [meta.file_path, *(posixpath.join(directory, e) for e in meta.extra_files or ())]


def written_paths(messages: Iterable[Any], index_dir: str, files: Iterable[Any] = ()) -> list[str]:
    """Data files (with their ``.index`` files) and added index files of ``messages``, plus ``files``."""
    paths: list[str] = []
    for message in messages:
        for meta in message.new_files:
            paths += _data_paths(meta)
        for entry in message.index_adds:
            meta = entry.index_file
            paths.append(meta.external_path or posixpath.join(index_dir, meta.file_name))
    for meta in files:
        paths += _data_paths(meta)
    return paths
