"""A SparkSession set up the way paimon-index needs it.

    local_session()            local[*] session (embedded default), or the one already running,
                               with the ``paimon_index`` data source registered
    configure(spark)           apply the settings and register the source on a session someone
                               else created (a cluster's); checks that executors import paimon-index
    check_executors(spark)     that check alone: one small job, EnvironmentCheckError naming the fix
    java_version()             the major version of the Java Spark will use

Settings: Spark's console progress bar on when stderr is a terminal (as in Spark's shells; off in
logs and CI), Python
data-source filter pushdown on (``spark.sql.python.filterPushdown.enabled``: Spark
refuses a source that implements ``pushFilters`` without it; whether the ``paimon_index`` source
then *takes* filters is its own ``filter-pushdown`` read option, off by default on Spark 4.1-4.3,
see :mod:`paimon_index.spark.datasource`), the Spark UI off, few shuffle partitions for local work,
Python workers running the interpreter of the current environment (``PYSPARK_PYTHON``), so
executors import the same paimon-index, pyarrow and pypaimon as the driver, and forked from
:mod:`paimon_index.spark.daemon`, which imported those before it forks. Spark 4 needs Java 17 or
newer; without it, :func:`local_session` raises :class:`~paimon_index.errors.EnvironmentCheckError`
saying what to install, instead of Spark's own stack trace.

Which Python the executors run is fixed per Python function when Spark ships it: PySpark takes
``PYSPARK_PYTHON`` from the environment when the SparkContext starts (``python3`` without it; the
``spark.pyspark.python`` setting only reaches ``spark-submit``, not a session built in a running
interpreter) and stamps it on every function it wraps -- the data source when it is registered,
UDFs and RDD functions when they run. So on a session someone else created, :func:`configure` can
still point everything it registers from then on at another interpreter (``python=``), and checks
with one small job (:func:`check_executors`) that the executors import this version of paimon-index,
raising :class:`~paimon_index.errors.EnvironmentCheckError` that names the setting to fix instead of
a Python worker's crash in the first query. See docs/clusters.md.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from paimon_index.errors import EnvironmentCheckError
from paimon_index.spark import _connect, class_archive

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["MIN_JAVA", "check_executors", "configure", "java_version", "local_session", "session_conf"]

MIN_JAVA = 17
DEFAULT_MASTER = "local[*]"
SINGLE_TASK = "spark.sql.optimizer.singleTaskExecution"
DAEMON_MODULE = "spark.python.daemon.module"
SESSION_CONF = {
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Spark 4.3+: a query over a one-file scan that is one partition anyway (or a small local
    # relation) runs its aggregate, sort or limit in that task instead of adding a shuffle stage;
    # an index that leaves one file is then one task end to end (docs/clusters.md). Ignored by
    # Sparks without the setting.
    SINGLE_TASK + ".enabled": "true",
    SINGLE_TASK + ".aggregation": "true",
    SINGLE_TASK + ".sort": "true",
    SINGLE_TASK + ".limitOffset": "true",
    # Python workers forked with pyarrow, pypaimon and the task functions imported: Spark closes
    # workers idle for a minute, and each new one imported them again (docs/clusters.md).
    DAEMON_MODULE: "paimon_index.spark.daemon",
}
RUNTIME_CONF = ("spark.sql.python.filterPushdown.enabled",)
#: Spark's console progress bar (stage, tasks done / total), as Spark's own shells show it; on
#: whenever a person watches stderr (a terminal), so a long upsert or rewrite is not silent.
PROGRESS_BAR = "spark.ui.showConsoleProgress"
_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?')


def _java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.isfile(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def java_version() -> int:
    """Major version of the Java that Spark will start (JAVA_HOME first, then PATH)."""
    java = _java_executable()
    if java is None:
        raise EnvironmentCheckError(
            f"Spark needs Java {MIN_JAVA}+ and none was found (set JAVA_HOME or put java on PATH; "
            "Debian/Ubuntu: apt-get install openjdk-17-jre-headless)")
    text = _version_text(java)
    m = _VERSION_RE.search(text)
    if m is None:
        raise EnvironmentCheckError(f"cannot read the version of {java}: {text.strip()[:200]}")
    return int(m[2] or 0) if m[1] == "1" else int(m[1])


@functools.cache
def _version_text(java: str) -> str:
    done = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    return done.stderr + done.stdout


def local_session(app_name: str = "paimon-index", *, master: str = DEFAULT_MASTER,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """The running SparkSession, or a new local one with paimon-index's settings.

    Raises:
        EnvironmentCheckError: Java is missing or older than 17, or pyspark is not installed.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise EnvironmentCheckError("pyspark is not installed: pip install 'paimon-index[spark]'") from e
    version = java_version()
    if version < MIN_JAVA:
        raise EnvironmentCheckError(f"Spark needs Java {MIN_JAVA}+, found Java {version}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = session_conf(sys.stderr.isatty(), conf)
    _import_in_background()
    archive = class_archive.NO_ARCHIVE
    if _starts_a_driver(master):
        java = _java_executable()
        assert java is not None  # java_version() found it
        archive = class_archive.driver_options(java, _version_text(java), settings)
    try:
        spark = _get_or_create(SparkSession, master, app_name, {**settings, **archive.options})
    except Exception:
        if archive.mapped is None:
            raise
        # A damaged archive stops the JVM from starting; it is only a cache: drop it, start without.
        class_archive.discard(archive.mapped)
        archive = class_archive.NO_ARCHIVE
        spark = _get_or_create(SparkSession, master, app_name, settings)
    if archive.missing is not None:
        class_archive.train(archive.missing, settings)
    if archive.recording is not None:
        from pyspark import SparkContext

        process = getattr(SparkContext._gateway, "proc", None)
        class_path = str(spark.sparkContext._jvm.System.getProperty("java.class.path"))  # type: ignore[union-attr]
        class_archive.watch(replace(archive.recording, class_path=class_path),
                            None if process is None else process.pid)
    spark.sparkContext.setLogLevel("WARN")
    # Local executors are Python workers of this machine started with PYSPARK_PYTHON (set above) and
    # this environment; a local master skips the check's job.
    configure(spark, check=not master.startswith(_connect.LOCAL_MASTER_PREFIX))
    return spark


#: What the first statement needs and ``from paimon_index.spark import attach`` does not import:
#: pypaimon, pandas and pyarrow's datasets (~1 s), sqlglot's dialects, the planned read.
_FIRST_STATEMENT_MODULES = ("paimon_index.spark.jobs", "paimon_index.spark.sql.query",
                            "paimon_index.spark.planned")


def _import_in_background() -> None:
    """Import :data:`_FIRST_STATEMENT_MODULES` in a daemon thread while the driver JVM starts (the
    main thread then waits on a socket, not the interpreter): ~1 s less to the first answer.
    Python's per-module import locks make a later import in the main thread wait for this one."""
    import importlib
    import threading

    def run() -> None:
        # Lowest priority (Linux: per thread): only cycles the JVM's start leaves idle; at normal
        # priority it slowed the start by about as much as it saved on 2 cores.
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        for name in _FIRST_STATEMENT_MODULES:
            try:
                importlib.import_module(name)
            except Exception:  # the main thread's own import of it reports the error
                return

    threading.Thread(target=run, name="paimon-index-imports", daemon=True).start()


def _get_or_create(session_class: type[SparkSession], master: str, app_name: str,
                   settings: Mapping[str, str]) -> SparkSession:
    builder = session_class.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _starts_a_driver(master: str) -> bool:
    """Whether ``getOrCreate`` launches this process's driver JVM (so its Java options apply): a
    local master, no JVM yet, none handed over by ``spark-submit`` (PYSPARK_GATEWAY_PORT)."""
    from pyspark import SparkContext

    return (master.startswith(_connect.LOCAL_MASTER_PREFIX) and SparkContext._gateway is None
            and "PYSPARK_GATEWAY_PORT" not in os.environ)


def session_conf(interactive: bool, conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings :func:`local_session` starts a session with (``conf`` wins)."""
    # Off without a terminal: a log file or CI output would fill with its redraws.
    progress = {PROGRESS_BAR: "true" if interactive else "false"}
    return {**SESSION_CONF, **progress, **(conf or {})}


def configure(spark: SparkSession, *, python: str | None = None, check: bool = True) -> SparkSession:
    """Apply the settings that can change at runtime and register the ``paimon_index`` source.

    Args:
        spark: a running session (any master).
        python: the Python executable the executors run for everything shipped from now on (the
            source registered here, UDFs, RDD functions): a path that exists on every worker, with
            paimon-index installed. None keeps the session's (``PYSPARK_PYTHON`` when it started).
        check: run :func:`check_executors` (one small job: about a second on a warm session, the
            Python workers' start on a fresh one).

    Raises:
        EnvironmentCheckError: (``check``) the executors cannot import paimon-index, or import
            another version.
    """
    from paimon_index.spark.datasource import PaimonIndexDataSource

    for key in RUNTIME_CONF:
        spark.conf.set(key, SESSION_CONF[key])
    if python is not None:
        if _connect.is_connect(spark):
            raise EnvironmentCheckError(
                f"configure(python={python!r}) needs a SparkContext, which a Spark Connect client has "
                "not: the Connect server's Python workers run the server's PYSPARK_PYTHON (or "
                "spark.pyspark.python) -- set it where the server starts (docs/clusters.md)")
        # PySpark stamps this on every function it wraps from now on (see the module docstring).
        spark.sparkContext.pythonExec = python
    spark.dataSource.register(PaimonIndexDataSource)
    if check:
        check_executors(spark)
    return spark


#: What a probe task sends back: its interpreter, and the paimon-index version it imported or the
#: import error.
Probe = tuple[str, str | None, str | None]
_FIX = ("install paimon-index (with pyarrow and pypaimon) in the Python every worker runs and start "
        "the session with PYSPARK_PYTHON (or spark-submit's spark.pyspark.python) naming it, or pass "
        "configure(spark, python=...); or ship the package with spark-submit --py-files / "
        "spark.executorEnv.PYTHONPATH (docs/clusters.md)")


def _probe(_: object) -> Probe:
    # Shipped by reference (a module-level function): an executor without paimon-index already fails
    # to unpickle the task, which check_executors reports as the same problem. A partial install
    # (no pypaimon, no pyarrow) is caught here.
    try:
        # pyarrow and pyspark's data source API; pypaimon (through its boundary module)
        import paimon_index.spark.datasource
        import paimon_index.table.paimon  # noqa: F401
    except ImportError as e:
        return sys.executable, None, f"{type(e).__name__}: {e}"
    return sys.executable, _version(), None


def _probes(task: object) -> Iterator[bytes]:
    yield pickle.dumps(_probe(task))


def _version() -> str:
    # The package's __init__ has run before any of its modules; its version is read from there
    # rather than imported (the application layer's names are not this layer's to import).
    return str(getattr(sys.modules[__name__.split(".")[0]], "__version__", "unknown"))


def check_executors(spark: SparkSession, tasks: int | None = None) -> list[Probe]:
    """Run one small job of ``tasks`` tasks (default: Spark's parallelism) that imports
    paimon-index on the executors; their (python, version, error) answers.

    Raises:
        EnvironmentCheckError: a task could not import it, imported another version than the
            driver's, or the job failed (for instance the configured Python does not exist there).
    """
    count = tasks or _connect.parallelism(spark)
    # Classic: the Python the session stamps on what it ships. Connect: the server's, unknown here.
    python = "the Connect server's PYSPARK_PYTHON" if _connect.is_connect(spark) else \
        repr(spark.sparkContext.pythonExec)
    try:
        answers: list[Probe] = [pickle.loads(p) for p in _connect.run_tasks(spark, range(count), _probes)]
    except Exception as e:  # Py4JJavaError / PythonException / SparkConnectGrpcException
        first = next((line for line in str(e).splitlines() if "Error" in line), str(e)[:300])
        raise EnvironmentCheckError(f"Spark executors (python {python}) cannot run "
                                    f"paimon-index: {first.strip()[:300]}; {_FIX}") from e
    for executable, version, error in answers:
        if error is not None:
            raise EnvironmentCheckError(f"Spark executors (python {executable!r}) cannot import "
                                        f"paimon-index: {error}; {_FIX}")
        if version != _version():
            raise EnvironmentCheckError(f"Spark executors (python {executable!r}) import paimon-index "
                                        f"{version}, the driver {_version()}: {_FIX}")
    return answers
