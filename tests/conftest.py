"""Test-run options shared by the whole suite.

Tests marked ``slow`` (long property runs, long concurrency histories) are skipped unless the run
asks for them: ``pytest --run-slow`` or ``pytest -m slow``. CI runs the bounded variants only.

``make test`` runs the suite in two pytest-xdist workers (``-n 2 --dist loadgroup``): every test
that uses the local Spark session (the ``spark`` fixture or the ``spark`` marker) is one group, so
one worker runs all of them on the run's one session while the other runs the rest, a test module
at a time (a module's fixtures are set up once). Without ``-n`` nothing changes.
"""

from __future__ import annotations

import pytest

#: The xdist group of every test on the run's local Spark session.
SPARK_GROUP = "spark-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow")


def _uses_local_spark(item: pytest.Item) -> bool:
    return "spark" in getattr(item, "fixturenames", ()) or item.get_closest_marker("spark") is not None


def _grouped_by_xdist(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") == "loadgroup"


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _grouped_by_xdist(config):
        for item in items:
            group = SPARK_GROUP if _uses_local_spark(item) else item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(group))
    if config.getoption("--run-slow") or "slow" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow or -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
