"""One table operation, committed exactly on the snapshot it planned — or not at all.

    txn = Transaction.begin(table)             # pins the latest snapshot N (None: empty table)
    ... plan on txn.snapshot_id, write files ...
    txn.stage(messages)                        # pypaimon CommitMessages (None / empty ignored)
    txn.track(path, ...)                       # files written that no message names (optional)
    snapshot_id = txn.commit()                 # N + 1, or None when nothing was staged

Contract
--------
* **Exact** (the default; every operation that read the table: delete, update, upsert, compact,
  rewrite_file_index, overwrite): :meth:`Transaction.commit` builds the new snapshot on snapshot N
  itself — never on a newer one — and publishes ``snapshot-(N+1)`` with an exclusive, atomic
  create. If any other writer took N+1 first (or any snapshot landed after N), the commit raises
  :class:`~paimon_index.errors.ConcurrentChangeError`; of several writers planned on N exactly one
  lands. There is no retry: positions, deletion vectors and key lookups planned on N would be
  wrong on N+1.
* **Append** (``exact=False``, plain appends only): pypaimon may retry on top of newer snapshots
  (``commit.max-retries``), as Paimon does; each attempt is still published exclusively, so two
  appends never overwrite each other's snapshot file.
* **Overwrite** (``overwrite=True``, optional static ``partition``): exact, and it also drops the
  deletion-vector index entries of the partitions it replaces (pypaimon keeps them, which broke
  every later DELETE/UPDATE).
* **Nothing left behind**: every file the operation wrote — data files, their ``.index`` files,
  DV and hash index files the staged messages add, plus whatever :meth:`track` was given — is
  deleted when the commit is refused or fails, when nothing gets committed, or on :meth:`abort`
  (also when a ``with Transaction.begin(...)`` block raises). Files a snapshot references are never
  deleted: a data file re-added under the same name (index rewrite) is not "written", and when
  the outcome of publishing is unknown the files are kept and :class:`CommitError` says so.
* **Compact** (``compact=True``, exact): the snapshot's ``commitKind`` is ``COMPACT``, as Java
  commits a compaction (the files it removed and added, and its index changes).
* Errors: a pypaimon failure surfacing from the commit becomes
  :class:`~paimon_index.errors.ConcurrentChangeError` (another snapshot landed) or
  :class:`~paimon_index.errors.CommitError` (anything else), naming the table and snapshot.
* A transaction commits once; after :meth:`commit` or :meth:`abort` it is closed.

The transaction object is driver-side state (it is not pickled to Spark executors); executors
return commit messages that the driver stages.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import Any

from paimon_index.errors import CommitError, ConcurrentChangeError, PaimonIndexError
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import (
    BATCH_COMMIT_IDENTIFIER,
    ExclusiveSnapshotCommit,
    PaimonTable,
    check_snapshot_store,
    commit_compact,
    latest_snapshot,
    message_written_files,
    new_file_store_commit,
    snapshot_by_id,
    table_name,
)

__all__ = ["Transaction", "committing_as", "new_commit_user", "snapshot_of_user"]

log = logging.getLogger(__name__)

#: Prefix of the commit user recorded in the snapshots a transaction writes.
COMMIT_USER_PREFIX = "paimon-index"
#: The commit user of the transactions begun in this context (:func:`committing_as`).
_COMMIT_USER: ContextVar[str | None] = ContextVar("paimon_index_commit_user", default=None)


@contextmanager
def committing_as(user: str | None) -> Iterator[None]:
    """Transactions begun inside commit as ``user`` (None: each its own), so that a caller in another
    process -- a Spark job whose commit runs in a Python worker -- can find its snapshot afterwards
    (:func:`snapshot_of_user`)."""
    token = _COMMIT_USER.set(user)
    try:
        yield
    finally:
        _COMMIT_USER.reset(token)


def new_commit_user() -> str:
    return f"{COMMIT_USER_PREFIX}-{uuid.uuid4()}"


def snapshot_of_user(table: Any, user: str, after: int | None, upto: int | None = None) -> int | None:
    """The id of the snapshot after snapshot ``after`` (None: the table had none), up to ``upto``
    (None: the latest), that ``user`` committed; None when there is none (nothing was committed,
    or it has expired already)."""
    if upto is None:
        latest = latest_snapshot(table)
        upto = int(latest.id) if latest is not None else 0
    for snapshot_id in range(upto, (after or 0), -1):
        snapshot = snapshot_by_id(table, snapshot_id)
        if snapshot is not None and snapshot.commit_user == user:
            return snapshot_id
    return None


#: pypaimon's conflict detection says so when the commit removes a file the base no longer holds
#: (messages planned on a snapshot older than the transaction's).
_CONFLICT_TEXT = "conflicts detected"

_OPEN, _COMMITTED, _ABORTED, _FAILED = "open", "committed", "aborted", "failed"


class Transaction:
    """Stage commit messages planned on one snapshot; commit them as the next snapshot or raise.

    Args:
        table: a pypaimon ``FileStoreTable``.
        snapshot: the planned snapshot (a pypaimon ``Snapshot``; None for an empty table).
        exact: commit exactly as ``snapshot + 1`` (False: a plain append that may retry).
        overwrite: replace the table's (or ``partition``'s) files with the staged ones.
        partition: static partition spec of an overwrite (column -> value); None: whole table,
            or the partitions written when ``dynamic-partition-overwrite`` is on.
        operation: what the caller does, for messages ("delete", "upsert", ...).
        compact: commit a ``COMPACT`` snapshot (exact, no overwrite).
    """

    def __init__(self, table: PaimonTable, snapshot: Any | None, *, exact: bool = True,
                 overwrite: bool = False,
                 partition: Mapping[str, Any] | None = None, operation: str = "commit",
                 compact: bool = False) -> None:
        if overwrite and not exact:
            raise PaimonIndexError("an overwrite reads the table it replaces: it must commit exactly")
        if compact and (overwrite or not exact):
            raise PaimonIndexError("a compaction rewrites what it read: it commits exactly, never as an "
                                   "overwrite")
        check_snapshot_store(table)  # before any file is written for a commit that could not be safe
        self.table = table
        self.snapshot = snapshot
        self.exact = exact
        self.overwrite = overwrite
        self.partition = dict(partition) if partition is not None else None
        self.operation = operation
        self.compact = compact
        self.commit_user = _COMMIT_USER.get() or new_commit_user()
        self._messages: list[Any] = []
        self._tracked: list[str] = []
        self._state = _OPEN

    @classmethod
    def begin(cls, table: PaimonTable, *, exact: bool = True, overwrite: bool = False,
              partition: Mapping[str, Any] | None = None, operation: str = "commit",
              compact: bool = False) -> Transaction:
        """A transaction planned on the table's latest snapshot."""
        return cls(table, latest_snapshot(table), exact=exact, overwrite=overwrite, partition=partition,
                   operation=operation, compact=compact)

    @classmethod
    def on(cls, table: PaimonTable, snapshot_id: int | None, *, exact: bool = True, overwrite: bool = False,
           partition: Mapping[str, Any] | None = None, operation: str = "commit",
           staged: Iterable[Any | None] = (), tracked: Iterable[str] = (), compact: bool = False
           ) -> Transaction:
        """A transaction planned on snapshot ``snapshot_id`` (None: the table was empty), with the
        commit messages ``staged`` and the files ``tracked`` that were written for it already (work
        planned before this transaction: executors, a rewrite).

        Raises:
            ConcurrentChangeError: that snapshot no longer exists (expired), so nothing planned
                on it can commit exactly; the files of ``staged`` and ``tracked`` were deleted.
        """
        snapshot = None
        if snapshot_id is not None:
            snapshot = snapshot_by_id(table, snapshot_id)
        txn = cls(table, snapshot, exact=exact, overwrite=overwrite, partition=partition, operation=operation,
                  compact=compact)
        txn.stage(staged)
        txn.track(*tracked)
        if snapshot_id is not None and snapshot is None:
            txn.abort()
            raise ConcurrentChangeError(f"{operation} on table {table_name(table)} was "
                                        f"planned on snapshot {snapshot_id}, which no longer exists; "
                                        "nothing was applied and the files written were deleted — run it "
                                        "again")
        return txn

    # state ---------------------------------------------------------------------------------------

    @property
    def snapshot_id(self) -> int | None:
        """The planned snapshot's id (None: the table had no snapshot)."""
        return None if self.snapshot is None else int(self.snapshot.id)

    @property
    def messages(self) -> list[Any]:
        return list(self._messages)

    @property
    def is_open(self) -> bool:
        return self._state == _OPEN

    def _check_open(self) -> None:
        if self._state != _OPEN:
            raise PaimonIndexError(f"{self._what()}: the transaction is {self._state}")

    def _what(self) -> str:
        return f"{self.operation} on table {table_name(self.table)}"

    # staging -------------------------------------------------------------------------------------

    def stage(self, messages: Iterable[Any | None] | Any | None) -> None:
        """Add pypaimon ``CommitMessage``s (a single message, an iterable; None and empty ones skipped)."""
        self._check_open()
        if messages is None:
            return
        items = [messages] if hasattr(messages, "is_empty") else list(messages)
        self._messages.extend(m for m in items if m is not None and not m.is_empty())

    def track(self, *paths: str) -> None:
        """Files the operation wrote that no staged message names (deleted unless committed)."""
        self._check_open()
        self._tracked.extend(paths)

    def written_files(self) -> list[str]:
        """Every file this transaction deletes if it does not commit."""
        seen: dict[str, None] = {}
        for path in [*message_written_files(self.table, self._messages), *self._tracked]:
            seen.setdefault(path, None)
        return list(seen)

    # ending --------------------------------------------------------------------------------------

    def abort(self) -> None:
        """Give up: delete every file written for this transaction; nothing is committed."""
        if self._state != _OPEN:
            return
        self._delete_written()
        self._state = _ABORTED

    def commit(self) -> int | None:
        """Commit the staged messages as one snapshot; returns its id (None: nothing to commit).

        Raises:
            ConcurrentChangeError: another snapshot landed after the planned one (exact mode) —
                nothing was applied and the written files were deleted.
            CommitError: pypaimon refused the commit for another reason (same clean-up), or the
                outcome is unknown (files kept).
        """
        self._check_open()
        if not self._messages and not self.overwrite:
            self.abort()
            return None
        guard = ExclusiveSnapshotCommit(self.table, None if not self.exact else self._next_id())
        committer = new_file_store_commit(self.table, guard, self.commit_user, pinned=self.snapshot,
                                          exact=self.exact, overwrite=self.overwrite)
        try:
            if self.overwrite:
                committer.overwrite(overwrite_partition=self.partition, commit_messages=self._messages,
                                    commit_identifier=BATCH_COMMIT_IDENTIFIER)
            elif self.compact:
                commit_compact(committer, self._messages, BATCH_COMMIT_IDENTIFIER)
            else:
                committer.commit(self._messages, BATCH_COMMIT_IDENTIFIER)
        except Exception as e:
            landed = self._landed(guard)
            if landed is not None:  # published, then something after it failed (a callback)
                log.warning("%s: snapshot %d landed but the commit then raised: %s", self._what(), landed, e)
                self._state = _COMMITTED
                return landed
            if guard.uncertain and guard.landed is None and not self._concurrent():
                self._state = _FAILED
                raise CommitError(f"{self._what()}: publishing snapshot {self._next_id()} failed and its "
                                  f"outcome is unknown; the written files are kept ({e})") from e
            self._fail()
            if guard.refused or self._concurrent() or _CONFLICT_TEXT in str(e):
                raise self._conflict(e) from e
            raise CommitError(f"{self._what()} planned on snapshot {self.snapshot_id} failed; nothing "
                              f"was applied ({e})") from e
        finally:
            committer.close()
        landed = self._landed(guard)
        if landed is None:  # pypaimon skipped it (nothing to commit)
            self._fail()
            return None
        self._state = _COMMITTED
        return landed

    def _next_id(self) -> int:
        return 1 if self.snapshot_id is None else self.snapshot_id + 1

    def _landed(self, guard: ExclusiveSnapshotCommit) -> int | None:
        """The id of the snapshot this transaction published, if any."""
        if guard.landed is not None:
            return guard.landed
        first = self._next_id()
        latest = latest_snapshot(self.table)
        last = first if self.exact or latest is None else max(first, int(latest.id))
        return snapshot_of_user(self.table, self.commit_user, first - 1, upto=last)

    def _concurrent(self) -> bool:
        latest = latest_snapshot(self.table)
        return (None if latest is None else int(latest.id)) != self.snapshot_id

    def _conflict(self, cause: BaseException) -> ConcurrentChangeError:
        latest = latest_snapshot(self.table)
        return ConcurrentChangeError(
            f"{self._what()} was planned on snapshot {self.snapshot_id}, but snapshot "
            f"{None if latest is None else latest.id} was committed meanwhile; nothing was applied "
            f"and the files written were deleted — run it again ({cause})")

    def _fail(self) -> None:
        self._delete_written()
        self._state = _FAILED

    def _delete_written(self) -> None:
        io = TableIO(self.table.file_io)
        for path in self.written_files():
            try:
                io.delete_quietly(path)
            except Exception as e:  # an undeletable leftover is an orphan, never a wrong answer
                log.warning("%s: could not delete %s: %s", self._what(), path, e)

    # context manager -----------------------------------------------------------------------------

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        # Leaving the block without a commit (an exception, or the caller forgot) abandons it.
        self.abort()
