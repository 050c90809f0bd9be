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
