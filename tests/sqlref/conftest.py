"""The local Spark session of tests/spark/conftest.py, for the SQL differential suite.

``local_session`` returns the running session when there is one, so this and tests/spark's fixture
share one session when both directories run; it is stopped at the end of the run.
"""

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
