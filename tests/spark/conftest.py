"""One local Spark session for the whole test run (starting one takes seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sparksession import shared_session


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    session: Any = shared_session(tmp_path_factory)
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _distributed_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark tests run DELETE/UPDATE of primary-key tables through the distributed upsert, as
    before the driver's small-change path existed; tests/spark/test_small_change.py covers that
    path against this one."""
    from paimon_index.spark import jobs

    monkeypatch.setattr(jobs, "SMALL_CHANGE_ROWS", 0)
