"""Spark's Python worker daemon with the modules Paimon's tasks need already imported.

Spark starts one Python daemon per executor (``pyspark.daemon``) and forks a worker from it for every
Python task slot. PySpark's daemon imports almost nothing, so each forked worker imports pyarrow,
pypaimon and paimon-index itself before its first task (~0.6 s on 2 cores); and Spark's worker
factory closes the workers that sat idle for a minute (a fixed ``IDLE_WORKER_TIMEOUT`` of one
minute, checked every 10 s), so the first Python job after any pause forks and imports again. A
merge-on-read UPDATE of 101,000 rows took 2.4 s after a 70 s pause against 0.7 s right after the
one before (docs/clusters.md).

This module is the daemon with those imports done once, before it forks: a forked worker shares
them. Point Spark at it with ``spark.python.daemon.module=paimon_index.spark.daemon`` (a setting
read when the executor starts its first Python worker; :func:`~paimon_index.spark.session.local_session`
sets it on the sessions it starts). Everything else is PySpark's own daemon (``manager``).

PySpark's daemon imports the worker module only after ``fork`` because some libraries start threads
when imported (numpy's BLAS, Arrow's jemalloc, polars): a lock such a thread holds at the fork stays
locked in the child. The daemon itself never runs a task, so those threads sit idle when it forks;
each of them re-initialises in the child (jemalloc and OpenBLAS by their fork handlers, Arrow's and
polars' thread pools lazily). A module that fails to import is left to the worker, as with
PySpark's daemon: a Paimon task then raises its own error and other Python tasks run as before.
"""

from __future__ import annotations

import contextlib
import importlib
import sys

#: What a Paimon task imports: the task functions (which bring pypaimon, pyarrow and numpy) and
#: PySpark's worker with its Arrow serializers.
PRELOADED = ("paimon_index.spark._tasks", "pyspark.worker", "pyspark.sql.pandas.serializers")


def preload(modules: tuple[str, ...] = PRELOADED) -> list[str]:
    """Import ``modules``; return ``"<module>: <error>"`` for each one that could not be imported."""
    failed = []
    for name in modules:
        try:
            # The daemon tells Spark its port on stdout: nothing an import prints may go there.
            with contextlib.redirect_stdout(sys.stderr):
                importlib.import_module(name)
        except Exception as e:  # an executor without a module: its tasks report it, not the daemon
            failed.append(f"{name}: {type(e).__name__}: {e}")
    return failed


def main() -> None:
    for failure in preload():
        print(f"paimon_index.spark.daemon: not preloaded, {failure}", file=sys.stderr)
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
