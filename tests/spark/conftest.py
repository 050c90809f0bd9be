"""One local Spark session for the whole test run (starting one takes seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from paimon_index.spark.session import local_session


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    session = local_session("paimon-index-tests", master="local[2]")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _distributed_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark tests run DELETE/UPDATE of primary-key tables through the distributed upsert, as
    before the driver's small-change path existed; tests/spark/test_small_change.py covers that
    path against this one."""
    from paimon_index.spark import jobs

    monkeypatch.setattr(jobs, "SMALL_CHANGE_ROWS", 0)
