"""Check the machine before setting up: Python version, and Java for the Spark pipeline.

Exit status 1 with a message saying what to install when a requirement is missing.

    python3 scripts/check_env.py [--java]
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

MIN_PYTHON = (3, 11)
MIN_JAVA = 17


def check_python() -> str | None:
    if sys.version_info < MIN_PYTHON:
        have = ".".join(map(str, sys.version_info[:3]))
        return (f"Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]}+ is required, this is {have}: "
                f"run with PYTHON=/path/to/python3.11 make ...")
    return None


def check_java() -> str | None:
    java = shutil.which("java")
    if java is None:
        return (f"Java {MIN_JAVA}+ is required for Spark and was not found on PATH "
                "(Debian/Ubuntu: apt-get install openjdk-17-jre-headless; or set JAVA_HOME)")
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return f"could not read the version of {java}"
    major = int(match[1]) if match[1] != "1" else int(match[2] or 0)
    if major < MIN_JAVA:
        return f"Java {MIN_JAVA}+ is required for Spark, {java} is Java {major}"
    return None


def main() -> int:
    problems = [p for p in (check_python(), check_java() if "--java" in sys.argv else None) if p]
    for p in problems:
        print(f"environment check failed: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
