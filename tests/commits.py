"""What one operation commits: one snapshot, or Java's two for a write that changes older rows.

A primary-key upsert (DELETE, UPDATE, MERGE) that changes rows already in the table commits as
Java's writer does: an ``APPEND`` snapshot (its level-0 files) and then a ``COMPACT`` one (the
files moved up, the deletion vectors), by the same commit user. Anything else is one snapshot.
"""

from __future__ import annotations

from typing import Any

from paimon_index.table.paimon import latest_snapshot, snapshot_by_id

#: The snapshot kinds one commit may leave.
ONE_COMMIT = (["APPEND"], ["COMPACT"], ["OVERWRITE"], ["APPEND", "COMPACT"])


def new_kinds(paimon_table: Any, before: int | None) -> list[str]:
    """The commit kinds of the snapshots after snapshot ``before`` (None: the table had none)."""
    latest = latest_snapshot(paimon_table)
    last = 0 if latest is None else int(latest.id)
    return [snapshot_by_id(paimon_table, i).commit_kind for i in range((before or 0) + 1, last + 1)]


def assert_one_commit(paimon_table: Any, before: int | None, what: str) -> list[str]:
    """The snapshots after ``before`` are one commit (one snapshot, or APPEND + COMPACT by one
    commit user); their kinds."""
    kinds = new_kinds(paimon_table, before)
    assert kinds in ONE_COMMIT, f"not one commit: {what}: {kinds}"
    if len(kinds) == 2:
        first, second = (snapshot_by_id(paimon_table, (before or 0) + i) for i in (1, 2))
        assert first.commit_user == second.commit_user, f"two writers: {what}"
    return kinds
