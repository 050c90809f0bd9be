"""Classic PySpark and Spark Connect through one set of calls (private to the Spark layer).

    is_connect(spark) -> bool                  a Spark Connect client session (no JVM here)
    parallelism(spark) -> int                  the cluster's default parallelism, in both modes
    local_relations(spark, rows, schema) -> DataFrame   Arrow rows as local relations a task can carry
    too_heavy_for_one_relation(spark, rows) -> bool   one local relation of rows: a task over budget
    run_tasks(spark, payloads, run) -> list    one Spark task per payload, their results on the driver
    task_errors(what)                          a project exception a task raised, raised on the driver
    quoted(name) -> str                        a column name as Spark SQL text (`a.b` stays one name)
    local_master(spark) -> bool                this process is the driver of a local master
    active_session(spark)                      within: the source is found from this thread too

A Spark Connect client has no ``SparkContext``: no accumulators, no ``parallelize``, no
``defaultParallelism``, no Py4J. Everything here is DataFrame API, which both modes share; what
only the classic mode has (accumulators for progress and scan reports) is asked for with
:func:`is_connect` and degrades in Connect (docs/clusters.md, "Spark Connect").
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: The Spark Connect client's classes live under this package (classic ones under pyspark.sql and
#: pyspark.sql.classic); asking by module name imports nothing (the Connect client needs grpc).
_CONNECT_PACKAGE = "pyspark.sql.connect"
#: How a local master is spelled (``local``, ``local[2]``, ``local-cluster[...]``).
LOCAL_MASTER_PREFIX = "local"
#: Rows of the probe that reads Spark's default parallelism in Connect: spread evenly over the
#: default number of partitions of ``spark.range``, so every partition holds some.
_PROBE_ROWS = 1 << 16
_ID, _PAYLOAD, _RESULT = "id", "payload", "result"
#: A Python exception's line in a task's traceback, which PySpark (classic and Connect) puts in the
#: message of the exception it raises on the driver; the last one is what the task raised.
_TASK_EXCEPTION = re.compile(r"^(?!org\.|java\.|scala\.)([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$",
                             re.MULTILINE)
_PROJECT_ERRORS = "paimon_index.errors."
#: How a value Spark's store assignment refuses starts its task's error (``spark/assign.py``'s
#: ``raise_error``), after Spark's ``[USER_RAISED_EXCEPTION]``: :func:`task_errors` raises it as a
#: :class:`~paimon_index.errors.DataError`.
STORE_REFUSAL_TAG = "DataError: "
_STORE_REFUSAL = re.compile(r"\[USER_RAISED_EXCEPTION\] " + re.escape(STORE_REFUSAL_TAG)
                            + r"(.*?)(?: SQLSTATE: [0-9A-Z]{5}|$)", re.DOTALL)
_parallelism: dict[str, int] = {}
#: At most this many bytes of a local relation's rows go in one task of the job Spark collects the
#: relation with for a broadcast: it spreads the rows over the leaf partitions and ships each share
#: inside its task (Spark warns from 1000 KiB; one relation of 20M rows' deletion words measured
#: 6.4 MB a task on 2 cores, eight 600 KB payloads of run_tasks 2.4 MB).
LOCAL_RELATION_TASK_BYTES = 640 << 10
#: A row's weight in such a task beyond its UnsafeRow fields (measured: 42 bytes a row of two BIGINTs,
#: 24 of them the row).
_ROW_OVERHEAD_BYTES = 18
_LEAF_PARALLELISM = "spark.sql.leafNodeDefaultParallelism"


def quoted(name: str) -> str:
    """``name`` in backticks, its backticks doubled: Spark reads it as one column name (a dot or a
    space in it is part of the name) in SQL text and in ``F.col``."""
    return "`" + name.replace("`", "``") + "`"


def local_master(spark: SparkSession) -> bool:
    """Whether this process is the driver of a local master: Spark's tasks run on this machine and
    read its local files, so work the driver does itself takes nothing from a cluster. Never
    through Spark Connect: this process is its client, not the driver, and may be elsewhere."""
    if is_connect(spark):
        return False
    return str(spark.sparkContext.master).startswith(LOCAL_MASTER_PREFIX)


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` (a SparkSession) is a Spark Connect client session."""
    return type(spark).__module__.startswith(_CONNECT_PACKAGE)


def parallelism(spark: SparkSession) -> int:
    """Spark's default parallelism (``sparkContext.defaultParallelism`` in classic mode).

    In Connect: ``spark.default.parallelism`` when the server sets it, else the number of partitions
    ``spark.range`` gets by default (the same default, read with one small job once per session).
    """
    if not is_connect(spark):
        return max(1, int(spark.sparkContext.defaultParallelism))
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return max(1, int(configured))
    key = str(getattr(spark, "session_id", id(spark)))
    if key not in _parallelism:
        from pyspark.sql import functions as F

        ids = spark.range(_PROBE_ROWS).select(F.spark_partition_id().alias("partition"))
        last = ids.agg(F.max("partition")).collect()[0][0]
        _parallelism[key] = max(1, int(last or 0) + 1)
    return _parallelism[key]


def leaf_parallelism(spark: SparkSession) -> int:
    """How many partitions Spark gives a local relation's scan (``spark.sql.leafNodeDefaultParallelism``,
    else the default parallelism); its rows are spread over them."""
    configured = spark.conf.get(_LEAF_PARALLELISM, None)
    return max(1, int(configured)) if configured else parallelism(spark)


def row_bytes(rows: pa.Table) -> np.ndarray:
    """Each row's bytes as Spark's UnsafeRow holds it (a null word per 64 fields, 8 bytes a field,
    variable-length values rounded up to 8), plus the task's overhead per row."""
    fields = rows.num_columns
    fixed = 8 * ((fields + 63) // 64) + 8 * fields + _ROW_OVERHEAD_BYTES
    out = np.full(rows.num_rows, fixed, dtype=np.int64)
    for column in rows.columns:
        kind = column.type
        if pa.types.is_binary(kind) or pa.types.is_string(kind) or pa.types.is_large_binary(kind) \
                or pa.types.is_large_string(kind):
            lengths = pc.fill_null(pc.binary_length(column), 0).to_numpy().astype(np.int64)
            out += (lengths + 7) // 8 * 8
    return out


def too_heavy_for_one_relation(spark: SparkSession, rows: Sequence[pa.Table]) -> bool:
    """Whether ``rows``, sent to Spark as one local relation, make a task carry more than
    :data:`LOCAL_RELATION_TASK_BYTES` (their estimated UnsafeRow bytes over
    :func:`leaf_parallelism`; decided without asking Spark when they weigh no more than that in all)."""
    total = sum(int(row_bytes(t).sum()) for t in rows if t.num_rows)
    if total <= LOCAL_RELATION_TASK_BYTES:
        return False
    return -(-total // leaf_parallelism(spark)) > LOCAL_RELATION_TASK_BYTES


def local_relations(spark: SparkSession, rows: pa.Table, schema: StructType) -> DataFrame:
    """``rows`` as local relations (``createDataFrame``) unioned, each small enough that a task of
    the job Spark collects it with for a broadcast carries at most :data:`LOCAL_RELATION_TASK_BYTES`
    of it (the relation's bytes over :func:`leaf_parallelism`); one relation when they fit, and a
    row heavier than that alone in its own."""
    if rows.num_rows == 0:
        return spark.createDataFrame(rows, schema)
    budget = LOCAL_RELATION_TASK_BYTES * leaf_parallelism(spark)
    ends = np.cumsum(row_bytes(rows))  # bytes up to and including each row
    out: DataFrame | None = None
    first = 0
    while first < rows.num_rows:
        before = int(ends[first - 1]) if first else 0
        last = max(first + 1, int(np.searchsorted(ends, before + budget, side="right")))
        part = spark.createDataFrame(rows.slice(first, last - first), schema)
        out = part if out is None else out.union(part)
        first = last
    assert out is not None
    return out


#: The JVM class PySpark's classic session wraps (its companion's static forwarders).
_CLASSIC_SESSION = "org.apache.spark.sql.classic.SparkSession"


@contextmanager
def active_session(spark: SparkSession) -> Iterator[None]:
    """Within it, ``spark`` is the active session of this thread's JVM thread.

    Spark finds a Python data source by its name (``format("paimon_index")``) in the *active*
    session only (``DataSource.lookupDataSource`` asks ``SparkSession.getActiveSession``, a
    thread-local), which PySpark sets in the thread that made the session: from another Python
    thread (Py4J pairs it with a JVM thread of its own) every read and write through the source
    failed with ``ClassNotFoundException: paimon_index.DefaultSource``. The thread's own active
    session is put back after. Nothing to do through Spark Connect (the server's session runs
    the plan).
    """
    if is_connect(spark):
        yield
        return
    session = getattr(spark._jvm, _CLASSIC_SESSION)
    before = session.getActiveSession()
    session.setActiveSession(spark._jsparkSession)
    try:
        yield
    finally:
        if before.isDefined():
            session.setActiveSession(before.get())
        else:
            session.clearActiveSession()


@contextmanager
def task_errors(what: str) -> Iterator[None]:
    """Run a Spark job of paimon-index tasks (``what`` names it: ``"compaction of db.t"``).

    A project exception a task raised is raised again on the driver as itself, chained to Spark's:
    PySpark raises a ``PythonException`` whose message is the executor's whole traceback, which an
    ``except ConcurrentChangeError`` (retry) does not catch. A value the store assignment refused in
    a task (:data:`STORE_REFUSAL_TAG`) becomes the :class:`~paimon_index.errors.DataError` naming
    its column, and a file a task found missing the :class:`~paimon_index.errors.TableError` naming
    it. Anything else is left as Spark raised it.
    """
    from paimon_index import errors

    try:
        yield
    except errors.PaimonIndexError:
        raise
    except Exception as e:
        raised = [m.groups() for m in _TASK_EXCEPTION.finditer(str(e))]
        name, message = raised[-1] if raised else ("", "")
        project = name.startswith(_PROJECT_ERRORS)
        kind = getattr(errors, name[len(_PROJECT_ERRORS):], None) if project else None
        if isinstance(kind, type) and issubclass(kind, errors.PaimonIndexError):
            error = kind(message)
            error.args = (message,)  # as the task wrote it (CorruptFileError prefixes its path)
            raise error from e
        refused = None if project else _STORE_REFUSAL.search(str(e))
        if refused is not None:
            raise errors.DataError(refused.group(1).strip()) from e
        if name == "FileNotFoundError":
            from paimon_index.table.files import missing_file_error

            raise missing_file_error(f"{what} (in a Spark task)", FileNotFoundError(message)) from e
        raise


def run_tasks(spark: SparkSession, payloads: Sequence[Any], run: Callable[[Any], Iterator[bytes]],
              what: str = "a Spark job of paimon-index") -> list[bytes]:
    """``run(payload)`` for every payload, one Spark task each; every ``bytes`` they yield, collected
    (a task's error as :func:`task_errors` raises it; ``what`` names the job).

    Classic: ``sc.parallelize(payloads, len(payloads))``, one job, each task unpickling its own
    payload. Connect has no ``parallelize``: ``spark.range(n, numPartitions=n)`` holds one id per
    task and the pickled payloads, a local relation keyed by the same ids, are broadcast-joined onto
    them, so task ``i`` runs payload ``i`` (the payloads reach each executor once, as a broadcast;
    the broadcast is a job of its own).
    """
    if not payloads:
        return []
    if not is_connect(spark):
        def partition(part: Iterable[Any]) -> Iterator[bytes]:
            for payload in part:
                yield from run(payload)

        tasks = spark.sparkContext.parallelize(payloads, len(payloads))
        with task_errors(what):
            return list(tasks.mapPartitions(partition).collect())

    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    schema = StructType([StructField(_ID, LongType(), False), StructField(_PAYLOAD, BinaryType(), False)])
    rows = pa.table({_ID: pa.array(range(len(payloads)), pa.int64()),
                     _PAYLOAD: pa.array([pickle.dumps(p) for p in payloads], pa.binary())})
    pickled = local_relations(spark, rows, schema)  # a task of its broadcast carries its share
    slots = spark.range(0, len(payloads), 1, len(payloads))
    joined = slots.join(F.broadcast(pickled), _ID).select(_PAYLOAD)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for one in batch.column(0).to_pylist():
                out = list(run(pickle.loads(one)))
                yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], [_RESULT])

    result = StructType([StructField(_RESULT, BinaryType(), False)])
    with task_errors(what):
        return [row[0] for row in joined.mapInArrow(task, result).collect()]
