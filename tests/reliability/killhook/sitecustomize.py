"""Kill point of every Python process of a Spark job (tests/spark/test_pk_crash.py).

This directory first on ``PYTHONPATH`` makes Python import this module at startup -- the driver
and the Python workers Spark starts with the driver's environment (its tasks, and the one that runs
a data source's commit or abort). With ``PAIMON_INDEX_TEST_KILL_POINT`` (a JSON
:class:`reliability.harness.KillPoint`) set, each process SIGKILLs itself at that point, after
creating ``PAIMON_INDEX_TEST_KILL_MARKER``.
"""

import json
import os

_POINT = os.environ.get("PAIMON_INDEX_TEST_KILL_POINT")
if _POINT:
    from reliability import harness

    harness._install(harness.KillPoint(**json.loads(_POINT)), os.environ.get("PAIMON_INDEX_TEST_KILL_MARKER"))
