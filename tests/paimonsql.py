"""Run SQL through Apache Paimon's own Spark connector (``paimon-sql.sh``) and read its JSON lines.

Minimal and self-contained: :func:`run` skips the calling test when ``java`` or the script (or its
venv) is unavailable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from jvm import tool_env

SCRIPT = Path(os.environ.get("PAIMON_SQL_SH", "/work/shared/java-paimon/spark/paimon-sql.sh"))
TIMEOUT_SECONDS = 900


def available() -> bool:
    return shutil.which("java") is not None and SCRIPT.is_file()


def run(warehouse: str | Path, statements: list[str]) -> list[dict[str, Any]]:
    """One result per statement (``ok``, ``columns``, ``rows`` or ``error``); skip when unavailable."""
    if not available():
        pytest.skip("java or paimon-sql.sh unavailable")
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(";\n".join(statements) + ";\n")
        path = f.name
    try:
        done = subprocess.run(
            [str(SCRIPT), "--warehouse", str(warehouse), "--file", path],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
            env=tool_env(),
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"paimon-sql.sh did not run: {e}")
    finally:
        os.unlink(path)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(results) != len(statements):
        pytest.skip(
            f"paimon-sql.sh gave {len(results)} results for {len(statements)} statements: "
            f"{done.stderr[-2000:]}"
        )
    return results
