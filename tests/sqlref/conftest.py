"""The local Spark session of tests/spark/conftest.py, for the SQL differential suite.

``local_session`` returns the running session when there is one, so this and tests/spark's fixture
share one session when both directories run; it is stopped at the end of the run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from paimon_index.spark.session import local_session


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    session = local_session("paimon-index-tests", master="local[2]")
    yield session
    session.stop()
