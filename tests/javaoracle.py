"""Apache Paimon's own Java core as a test oracle (``../shared/java-paimon/oracle.sh``).

``java_oracle()`` is a pytest fixture-friendly helper: it skips the calling test cleanly when
``java`` or the oracle folder is absent. ``JavaOracle.batch`` runs many commands in one JVM (a JVM
start costs seconds on a busy 2-core machine); each command is a dict as the oracle's README
describes (``{"cmd": "read", "warehouse": W, "table": "db.t", "where": ..., "rows": "true"}``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

ORACLE = Path(__file__).resolve().parents[1].parent / "shared" / "java-paimon" / "oracle.sh"
TIMEOUT_SECONDS = 600


class JavaOracleError(AssertionError):
    pass


class JavaOracle:
    def __init__(self, script: Path) -> None:
        self.script = script

    def _env(self) -> dict[str, str]:
        from jvm import java_args

        env = {**os.environ, "PYTHON": sys.executable}
        env.setdefault("ORACLE_JAVA_OPTS", " ".join(["-Xmx3g", *java_args()]))  # oracle.sh's default heap
        return env

    def run(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(["bash", str(self.script), *args], capture_output=True, text=True,
                              env=self._env(), timeout=TIMEOUT_SECONDS, check=False)
        if done.returncode != 0:
            raise JavaOracleError(f"oracle {args[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def batch(self, commands: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for command in commands:
                f.write(json.dumps({k: (v if v is None else str(v)) for k, v in command.items()}) + "\n")
            path = f.name
        try:
            done = subprocess.run(["bash", str(self.script), "batch", "--file", path], capture_output=True,
                                  text=True, env=self._env(), timeout=TIMEOUT_SECONDS, check=False)
        finally:
            os.unlink(path)
        if done.returncode != 0:
            raise JavaOracleError(f"oracle batch failed ({done.returncode}): {done.stderr[-2000:]}")
        out = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        errors = [o for o in out if "error" in o]
        if errors:
            first = errors[0]
            raise JavaOracleError(f"oracle command failed: {first['error']}\n{first.get('stack', '')[:3000]}")
        return out


def java_oracle() -> JavaOracle:
    """The oracle, or a clean skip when Java or ../shared/java-paimon is not here."""
    if not ORACLE.exists():
        pytest.skip(f"Java Paimon oracle not found at {ORACLE}")
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    return JavaOracle(ORACLE)
