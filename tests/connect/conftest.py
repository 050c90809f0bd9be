"""A local Spark Connect server for the whole test run, and a Connect client session on it.

    connect_server   the running server (its ``url``, ``sc://127.0.0.1:<port>``, and its log)
    connect_spark    a Spark Connect client session (no JVM in this process), the ``paimon_index``
                     source registered and the executors checked (``configure``)

The server is Spark's own ``SparkConnectServer`` class started with pyspark's ``spark-submit`` in a
subprocess (its own process group, killed at the end), ``local[2]`` with a 1 GiB driver, on a free
port of 127.0.0.1. Its Python workers run this interpreter (``PYSPARK_PYTHON``) with this checkout's
``src`` first on ``PYTHONPATH``, so they import the paimon-index under test -- what a Connect server
of a cluster needs too (docs/clusters.md, "Spark Connect"). Every test using the fixtures is skipped,
with the reason, when Java 17+ or the Connect client's packages (``pyspark[connect]``: grpcio,
grpcio-status, googleapis-common-protos, zstandard, pandas) are missing, or the server does not
answer within :data:`STARTUP_SECONDS`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import paimon_index
from jvm import spark_conf
from ports import free_port, listening

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
STARTUP_SECONDS = 120
SCALA_VERSION = "2.13"  # Spark 4 is built for Scala 2.13 only
#: The Python client's own dependencies (pyspark[connect]); importing its session module needs them.
CLIENT_MODULES = ("grpc", "grpc_status", "google.protobuf", "zstandard", "pandas",
                  "pyspark.sql.connect.session")


@dataclass
class ConnectServer:
    url: str
    log: Path
    process: subprocess.Popen[bytes]

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)  # the group started for the server only
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def _why_not() -> str | None:
    """Why a Connect server and client cannot run here (None: they can)."""
    import importlib

    for module in CLIENT_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as e:
            return f"Spark Connect client needs pyspark[connect] ({module}: {e})"
    from paimon_index.errors import EnvironmentCheckError
    from paimon_index.spark.session import MIN_JAVA, java_version

    try:
        version = java_version()
    except EnvironmentCheckError as e:
        return str(e)
    if version < MIN_JAVA:
        return f"Spark needs Java {MIN_JAVA}+, found Java {version}"
    return None


def _server_env() -> dict[str, str]:
    import pyspark

    src = str(Path(paimon_index.__file__).resolve().parent.parent)  # the paimon-index under test
    path = [src, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent),
            "SPARK_SCALA_VERSION": SCALA_VERSION, "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(path))}


def start_server(workdir: Path, master: str = "local[2]") -> ConnectServer:
    """A Spark Connect server on a free port (pytest.skip when it does not come up)."""
    import pyspark

    from paimon_index.spark.session import SESSION_CONF

    port = free_port()
    conf = {**SESSION_CONF, **spark_conf(), "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port), "spark.driver.memory": "1g",
            "spark.sql.warehouse.dir": str(workdir / "spark-warehouse")}
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    cmd = [str(submit), "--class", SERVER_CLASS, "--master", master, "--name", "paimon-index-connect-tests"]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "connect-server.log"
    with open(log, "wb") as out:  # the child keeps its own descriptor
        # Own process group: stop() reaches spark-submit's JVM and its Python workers, nothing else.
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=_server_env(), cwd=workdir,
                                   start_new_session=True)
    server = ConnectServer(f"sc://127.0.0.1:{port}", log, process)
    deadline = time.monotonic() + STARTUP_SECONDS
    while not listening(port, process.pid):
        if process.poll() is not None:
            pytest.skip(f"the Spark Connect server exited ({process.returncode}): {server.log_tail(10)}")
        if time.monotonic() > deadline:
            server.stop()
            pytest.skip(f"the Spark Connect server did not listen within {STARTUP_SECONDS}s; log: {log}")
        time.sleep(0.3)
    return server


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    reason = _why_not()
    if reason is not None:
        pytest.skip(reason)
    server = start_server(tmp_path_factory.mktemp("connect-server"))
    try:
        yield server
    finally:
        server.stop()


#: PySpark marks a process as a Spark Connect client with this variable once a remote session is
#: made, and then dispatches ``pyspark.sql.functions``, ``Observation`` ... to their Connect versions
#: and refuses to start a classic session. The classic tests of the same pytest run (tests/spark)
#: need it unset: it is set only while a test of this directory runs (:func:`_connect_mode`).
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


@contextlib.contextmanager
def connect_mode() -> Iterator[None]:
    previous = os.environ.get(CONNECT_MODE)
    os.environ[CONNECT_MODE] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(CONNECT_MODE, None)
        else:
            os.environ[CONNECT_MODE] = previous


@pytest.fixture(scope="session")
def connect_spark(connect_server: ConnectServer) -> Iterator[object]:
    from pyspark.sql import SparkSession

    from paimon_index.spark.session import configure

    with connect_mode():
        # create(), not getOrCreate(): a classic session of this process (tests/spark) is not reused.
        spark = SparkSession.builder.remote(connect_server.url).create()
        try:
            spark.range(1).collect()  # the server answers
        except Exception as e:
            spark.stop()
            pytest.skip(f"the Spark Connect server at {connect_server.url} does not answer: {e}; "
                        f"{connect_server.log_tail(10)}")
        configure(spark)  # registers the source; its check proves the server's workers import paimon-index
    yield spark
    with connect_mode():
        spark.stop()


@pytest.fixture(autouse=True)
def _connect_mode() -> Iterator[None]:
    with connect_mode():
        yield


@pytest.fixture(autouse=True)
def _distributed_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """DELETE/UPDATE of primary-key tables through the distributed upsert (see tests/spark/conftest.py)."""
    from paimon_index.spark import jobs

    monkeypatch.setattr(jobs, "SMALL_CHANGE_ROWS", 0)
