"""Test-run options shared by the whole suite.

Tests marked ``slow`` (long property runs, long concurrency histories) are skipped unless the run
asks for them: ``pytest --run-slow`` or ``pytest -m slow``. CI runs the bounded variants only.

``make test`` runs the suite in two pytest-xdist workers (``-n 2``) scheduled here
(:func:`pytest_xdist_make_scheduler`): every test on the local Spark session is one unit of work,
so one worker runs all of them on the run's one session, while the other runs the rest a test
module at a time (a module's fixtures are set up once). The session fixtures fail a run in which a
second worker starts a session (tests/sparksession.py). Without ``-n`` nothing changes.
"""

from __future__ import annotations

from typing import Any

import pytest

#: The unit of work of every test on the run's local Spark session.
SPARK_SCOPE = "spark-session"
#: Where those tests are: the directories whose fixtures start the session, and single tests
#: elsewhere that use it.
SPARK_DIRECTORIES = ("tests/spark/", "tests/sqlref/")
SPARK_TESTS_ELSEWHERE = ("tests/table/test_catalog.py::test_our_ddl_parser_agrees_with_spark_s_parser",)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow") or "slow" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow or -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def scope_of(nodeid: str) -> str:
    """The unit of work a test is scheduled in: the Spark one, else its module."""
    module = nodeid.split("::")[0]
    if module.startswith(SPARK_DIRECTORIES) or nodeid.startswith(SPARK_TESTS_ELSEWHERE):
        return SPARK_SCOPE
    return module


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    # xdist's own "loadgroup" marks cannot do this on pytest 9 (it renames items' nodeid attribute,
    # which pytest 9 no longer reads); its module scheduler with our scopes can.
    from xdist.scheduler import LoadScopeScheduling

    class SparkScopeScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return SparkScopeScheduling(config, log)

