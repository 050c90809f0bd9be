"""The session helper: executors run this environment's Python and can import paimon-index."""

from __future__ import annotations

import sys

import pytest

import paimon_index
from paimon_index.errors import EnvironmentCheckError
from paimon_index.spark import session as spark_session

pytestmark = pytest.mark.spark


def _worker_probe(_: object) -> tuple[str, int]:
    import paimon_index.fileindex.bloom_filter as bloom

    return sys.executable, bloom.bloom_size(1000, 0.01)[0]


def test_executors_use_this_environment(spark) -> None:
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    results = spark.sparkContext.parallelize(range(4), 2).map(_worker_probe).collect()
    assert {exe for exe, _ in results} == {sys.executable}
    assert {bits for _, bits in results} == {9592}


def _worker_parent(_: object) -> tuple[str, bool]:
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    return (spec.name if spec else ""), "paimon_index.spark._tasks" in sys.modules


def test_python_workers_fork_from_a_daemon_that_imported_the_task_modules(spark) -> None:
    """Each worker imported pyarrow, pypaimon and the task functions itself, and again after Spark
    closed the workers idle for a minute (a merge-on-read UPDATE: 2.4 s after a pause, 0.7 s
    without): a worker is now a fork of paimon-index's daemon, whose ``__main__`` it inherits."""
    assert spark.conf.get(spark_session.DAEMON_MODULE) == "paimon_index.spark.daemon"
    answers = spark.sparkContext.parallelize(range(4), 2).map(_worker_parent).collect()
    assert answers == [("paimon_index.spark.daemon", True)] * 4


def test_the_daemon_preloads_what_imports_and_reports_what_does_not(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    from paimon_index.spark import daemon

    (tmp_path / "noisy_module_for_daemon.py").write_text("print('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    failed = daemon.preload(("noisy_module_for_daemon", "no_such_module_for_daemon", "json"))
    assert len(failed) == 1 and failed[0].startswith("no_such_module_for_daemon: ModuleNotFoundError")
    # The daemon hands Spark its port on stdout: what an import prints goes to stderr.
    out, err = capfd.readouterr()
    assert out == "" and "imported" in err


def test_missing_java_is_reported_with_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", "/nonexistent")
    monkeypatch.setattr(spark_session.shutil, "which", lambda _: None)
    with pytest.raises(EnvironmentCheckError, match="Spark needs Java 17"):
        spark_session.java_version()


def test_configure_checks_that_executors_import_paimon_index(spark) -> None:
    answers = spark_session.check_executors(spark, tasks=2)
    assert answers == [(sys.executable, paimon_index.__version__, None)] * 2
    try:
        # A session whose executors run another Python (here: none at all) fails in configure(),
        # naming the setting, not in the first query.
        with pytest.raises(EnvironmentCheckError, match="PYSPARK_PYTHON"):
            spark_session.configure(spark, python="/nonexistent/python3")
    finally:
        spark_session.configure(spark, python=sys.executable, check=False)
    assert spark.sparkContext.pythonExec == sys.executable


def test_the_progress_bar_is_on_when_a_person_watches() -> None:
    """Spark's console progress bar was turned off for every session (a 57 s upsert was silent)."""
    assert spark_session.session_conf(True)[spark_session.PROGRESS_BAR] == "true"
    assert spark_session.session_conf(False)[spark_session.PROGRESS_BAR] == "false"  # a log, not a person
    assert spark_session.session_conf(True, {spark_session.PROGRESS_BAR: "false"})[
        spark_session.PROGRESS_BAR] == "false"
