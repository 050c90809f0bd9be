"""A local SparkSession set up the way paimon-index needs it.

    local_session()            local[*] session (embedded default), or the one already running,
                               with the ``paimon_index`` data source registered
    configure(spark)           apply the settings and register the source on a session someone
                               else created
    java_version()             the major version of the Java Spark will use

Settings: Python data-source filter pushdown on (``spark.sql.python.filterPushdown.enabled``: Spark
refuses a source that implements ``pushFilters`` without it; whether the ``paimon_index`` source
then *takes* filters is its own ``filter-pushdown`` read option, off by default on Spark 4.1-4.3,
see :mod:`paimon_index.spark.datasource`), the Spark UI off, few shuffle partitions for local work,
and Python workers running the interpreter of the current environment (``PYSPARK_PYTHON``), so
executors import the same paimon-index, pyarrow and pypaimon as the driver. Spark 4 needs Java 17 or
newer; without it, :func:`local_session` raises :class:`~paimon_index.errors.EnvironmentCheckError`
saying what to install, instead of Spark's own stack trace.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from paimon_index.errors import EnvironmentCheckError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["MIN_JAVA", "configure", "java_version", "local_session"]

MIN_JAVA = 17
DEFAULT_MASTER = "local[*]"
SESSION_CONF = {
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}
RUNTIME_CONF = ("spark.sql.python.filterPushdown.enabled",)
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
    done = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    m = _VERSION_RE.search(done.stderr + done.stdout)
    if m is None:
        raise EnvironmentCheckError(f"cannot read the version of {java}: {done.stderr.strip()[:200]}")
    return int(m[2] or 0) if m[1] == "1" else int(m[1])


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
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**SESSION_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    configure(spark)
    return spark


def configure(spark: SparkSession) -> SparkSession:
    """Apply the settings that can change at runtime and register the ``paimon_index`` source."""
    from paimon_index.spark.datasource import PaimonIndexDataSource

    for key in RUNTIME_CONF:
        spark.conf.set(key, SESSION_CONF[key])
    spark.dataSource.register(PaimonIndexDataSource)
    return spark
