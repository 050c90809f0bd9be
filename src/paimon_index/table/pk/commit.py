"""Committing a primary-key operation through the project's one Transaction.

    begin(table, operation) -> Transaction          pinned on the latest snapshot
    on_snapshot(table, snapshot_id, operation)      pinned on the snapshot executors planned on
    abandon(table, paths, operation)                delete files of work that will not commit
    delete_discarded(table, index_dir, metas)       after a commit: files written, then rewritten away
    written_paths(messages, index_dir) -> paths     every file an operation's messages name

Every upsert, compaction and prepared (Spark) commit lands exactly as snapshot planned + 1 or
raises :class:`~paimon_index.errors.ConcurrentChangeError`, and the files it wrote are deleted when
it does not land (see :mod:`paimon_index.table.transaction`). Lookups, vectors and levels are
computed on the pinned snapshot, so there is no retry on a newer one: it would be wrong there.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Any

from paimon_index.table.fileio import TableIO
from paimon_index.table.transaction import Transaction

__all__ = ["abandon", "begin", "delete_discarded", "on_snapshot", "written_paths"]


def begin(table: Any, operation: str, *, compact: bool = False) -> Transaction:
    """``compact``: the snapshot is ``COMPACT``, as Java commits a compaction."""
    return Transaction.begin(table, operation=operation, compact=compact)


def on_snapshot(table: Any, snapshot_id: int | None, operation: str, written: Iterable[str] = ()
                ) -> Transaction:
    """A transaction pinned on ``snapshot_id`` (the one prepared work was planned on), tracking the
    files ``written`` for it; raises ConcurrentChangeError when that snapshot is gone (those files
    deleted)."""
    return Transaction.on(table, snapshot_id, operation=operation, tracked=written)


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
