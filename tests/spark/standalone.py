"""A Spark standalone cluster of this machine for tests: one master and N workers, as subprocesses.

The pip pyspark ships no ``sbin/start-master.sh``; the master and the workers are the same Java
classes the scripts start, run with the jars pyspark carries. Every process is started in its own
process group and tracked by PID: :meth:`Standalone.kill_worker` kills one worker with its
executors, :meth:`Standalone.stop` kills whatever is left (only the processes started here).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ports import free_port, listening

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
STARTUP_SECONDS = 90
SCALA_VERSION = "2.13"  # Spark 4 is built for Scala 2.13 only
_REGISTERED = re.compile(r"Master: Registering worker")


class ClusterUnavailable(RuntimeError):
    """The cluster could not be started here (no Java, ports, or a process died)."""


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else "java"


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class Standalone:
    """A running master and its workers; ``url`` is ``spark://127.0.0.1:<port>``."""

    workdir: Path
    url: str = ""
    master: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @classmethod
    def start(cls, workdir: Path, workers: int = 2, *, cores: int = 1, memory: str = "1g",
              env: dict[str, str] | None = None) -> Standalone:
        cluster = cls(workdir)
        try:
            cluster._start(workers, cores, memory, {**os.environ, **(env or {})})
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        cmd = [_java(), "-Xmx512m", "-cp", str(_spark_home() / "jars" / "*"), *args]
        with open(self.workdir / f"{name}.log", "wb") as log:  # the child keeps its own descriptor
            # Own process group: a kill reaches the worker's executors too, and nothing else.
            return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir,
                                    start_new_session=True)

    def _start(self, workers: int, cores: int, memory: str, env: dict[str, str]) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # A worker builds its executors' class path from SPARK_HOME/jars; without a RELEASE file
        # (pip's pyspark has none) Spark's launcher also wants the Scala version spelled out.
        env = {**env, "SPARK_HOME": str(_spark_home()), "SPARK_SCALA_VERSION": SCALA_VERSION,
               "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(self.workdir / "work")}
        port = free_port()
        self.url = f"spark://127.0.0.1:{port}"
        # No REST submission server: it takes a fixed port (6066) another cluster may hold.
        self.master = self._spawn("master", ["-Dspark.master.rest.enabled=false", MASTER_CLASS, "--host",
                                             "127.0.0.1", "--port", str(port), "--webui-port", "0"], env)
        master = self.master
        self._wait(lambda: listening(port, master.pid), "the master to listen")
        for i in range(workers):
            self.workers.append(self._spawn(f"worker-{i}", [
                WORKER_CLASS, self.url, "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                "--webui-port", "0", "--work-dir", str(self.workdir / f"work-{i}")], env))
        self._wait(lambda: self.registered() >= workers, f"{workers} workers to register")

    def registered(self) -> int:
        return len(_REGISTERED.findall((self.workdir / "master.log").read_text(errors="replace")))

    def _wait(self, ready, what: str) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready():
            for proc in [self.master, *self.workers]:
                if proc is not None and proc.poll() is not None:
                    raise ClusterUnavailable(f"a cluster process exited ({proc.returncode}) waiting for "
                                             f"{what}; logs in {self.workdir}")
            if time.monotonic() > deadline:
                raise ClusterUnavailable(f"timed out waiting for {what}; logs in {self.workdir}")
            time.sleep(0.2)

    def kill_worker(self, index: int) -> None:
        """SIGKILL worker ``index`` and its executors (its process group), as a lost machine."""
        _kill_group(self.workers[index])

    def stop(self) -> None:
        for proc in [*self.workers, self.master]:
            if proc is not None:
                _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group this helper created for the process
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
