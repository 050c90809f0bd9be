"""Known bugs the differential suite finds today: one table, consulted by every differential test.

A difference the suite finds is a failure unless one entry here claims it; a claimed difference is
reported as xfail with the entry's reason. Each entry also has a minimal repro that the tests run
with ``xfail(strict=True)``: once the fix is merged the repro passes, the strict mark fails, and the
entry is deleted. Empty this table as fixes land; a claimed case that no longer differs is simply a
pass, so stale entries are found through their repro, not through the random cases.

A :class:`Case` says where a difference was seen: ``source`` is ``on``/``off`` (the Spark source
with indexes on or off) or ``python``/``python-off`` (``read_arrow`` with or without indexes),
``statement`` the statement of a query (its position and text, ``{t}`` for the view) and
``wheres`` the WHERE trees involved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from differential.expr import Expr
from differential.generate import TableSpec

__all__ = ["KNOWN_BUGS", "Case", "KnownBug", "claimed_by", "report_differences"]


@dataclass(frozen=True)
class Case:
    spec: TableSpec
    source: str
    wheres: tuple[Expr, ...]
    statement_index: int = 0
    statement: tuple[object, ...] = ()
    detail: str = ""


@dataclass(frozen=True)
class KnownBug:
    key: str
    reason: str
    applies: Callable[[Case], bool] = field(repr=False)


#: Every bug this suite found and fixed has its repro among the ``test_regression_*`` tests.
#: A new difference the suite finds gets an entry here (with a matcher) until it is fixed.
KNOWN_BUGS: tuple[KnownBug, ...] = ()


def report_differences(description: str, failures: list[str], claimed: list[str]) -> None:
    """Fail on any unexplained difference; xfail when every difference is a known bug's."""
    if failures:
        pytest.fail(f"{description}\n" + "\n".join(failures + claimed), pytrace=False)
    if claimed:
        pytest.xfail("known bugs: " + "; ".join(sorted({c.split(":", 1)[0] for c in claimed})))


def claimed_by(case: Case) -> KnownBug | None:
    """The known bug that explains this difference, if any."""
    return next((bug for bug in KNOWN_BUGS if bug.applies(case)), None)


def crash_detail(error: BaseException) -> str:
    """A crash as a one-line difference (a crash is a difference too)."""
    return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"


def file_difference(case: Case, message: str, failures: list[str], claimed: list[str]) -> None:
    """Add one difference to ``failures``, or to ``claimed`` with the key of the known bug that
    explains it."""
    bug = claimed_by(case)
    if bug is None:
        failures.append(message)
    else:
        claimed.append(f"{bug.key}: {message}")
