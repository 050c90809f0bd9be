"""Options for the JVMs the tests start: Spark's driver (the run's session, the Connect server),
Java Paimon's oracle and changelog reader, and Paimon's own Spark connector.

C1 only (``-XX:TieredStopAtLevel=1``): these JVMs run seconds to minutes on small data, where C2's
compilations cost more CPU than they save, and ``make test`` runs two workers on two cores, so CPU
is the suite's time. Measured on the differential matrix (its Spark session and the oracle),
machine-wide busy CPU 325 s -> 234 s and wall 200 s -> 174 s; on the oracle-heavy table tests,
88-104 s -> 66-74 s of CPU. C1 alone reserves a 48 MB code cache, which a long run fills (the
slow generated-SQL variant, ~1,000 statements in one session: "CodeCache is full. Compiler has been
disabled", every later method interpreted), so the cache is reserved at the tiered default, 240 MB
(address space; pages are committed as code is compiled). ``PAIMON_TEST_JVM_OPTS`` replaces them
("" for the JVM's defaults).
Benchmarks never use them: they measure the JVM as users run it.
"""

from __future__ import annotations

import os

TEST_JVM_OPTIONS = os.environ.get("PAIMON_TEST_JVM_OPTS",
                                  "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m").strip()


def spark_conf() -> dict[str, str]:
    """Spark settings that start the driver JVM with :data:`TEST_JVM_OPTIONS`."""
    return {"spark.driver.extraJavaOptions": TEST_JVM_OPTIONS} if TEST_JVM_OPTIONS else {}


def java_args() -> list[str]:
    """:data:`TEST_JVM_OPTIONS` as arguments of a ``java`` command line."""
    return TEST_JVM_OPTIONS.split()


def tool_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with ``JAVA_TOOL_OPTIONS`` for a JVM started by a script
    we do not write (Paimon's connector, ``paimon-sql.sh``), and without the variables that make
    PySpark a Spark Connect client (set while a test of tests/connect runs): the connector is a
    classic Spark process."""
    out = dict(os.environ if env is None else env)
    for connect in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
        out.pop(connect, None)
    if TEST_JVM_OPTIONS and "JAVA_TOOL_OPTIONS" not in out:
        out["JAVA_TOOL_OPTIONS"] = TEST_JVM_OPTIONS
    return out
