"""The run's one local Spark session, also when pytest-xdist runs the suite in several workers.

``make test`` groups every test on the local session onto one worker (tests/conftest.py); the
session fixtures call :func:`claim_the_session`, which fails the run when a second worker starts a
session too (a test that uses Spark without the ``spark`` fixture or marker would do that).
"""

from __future__ import annotations

import os

import pytest

from jvm import spark_conf
from paimon_index.spark.session import local_session


def claim_the_session(tmp_path_factory: pytest.TempPathFactory) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return
    # Each worker's base temp is <run root>/popen-gwN: the run root is shared by the workers.
    owner = tmp_path_factory.getbasetemp().parent / "spark-session-owner"
    try:
        fd = os.open(owner, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        holder = owner.read_text()
        if holder != worker:
            pytest.fail(f"worker {worker} starts a local Spark session, but {holder} holds the run's "
                        "one session: mark the test 'spark' (tests/conftest.py groups those)")
        return
    with os.fdopen(fd, "w") as f:
        f.write(worker)


def shared_session(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The run's local Spark session (``local_session`` returns the running one when there is one)."""
    claim_the_session(tmp_path_factory)
    return local_session("paimon-index-tests", master="local[2]", conf=spark_conf())
