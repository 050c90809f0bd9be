"""Append compaction as a Spark job and as ``CALL sys.compact``, against Paimon's own Spark connector.

The connector comparison starts both sides from copies of ONE warehouse (small files and deletion
vectors written through the Python API), runs the same ``CALL sys.compact`` statements on each copy
(Paimon's connector on one, ``paimon.sql`` on the other), then both sides read both copies: the same
rows, the same number of data files (Paimon's pick is deterministic on these tables), ``COMPACT``
snapshots on both.
"""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import paimon_index
import paimon_index.spark
import paimonsql
from paimon_index.spark import _connect, jobs
from paimon_index.table.append_compaction import plan_compaction
from paimon_index.table.paimon import latest_snapshot
from payloads import pypaimon_objects

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("v", pa.int64()),
                    ("p", pa.int32())])
INDEXES = {"file-index.bitmap.columns": "s", "file-index.in-manifest-threshold": "64kb"}


def _batch(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "s": [f"s{i % 5}" for i in ids], "v": ids * 3,
                     "p": (ids % 2).astype(np.int32)}, schema=SCHEMA)


#: name -> (options, partitioned, deletes)
TABLES: dict[str, tuple[dict[str, str], bool, list[str]]] = {
    # unaware bucket, vectors: files with a vector always rewritten, the rest bin-packed (>= 3)
    "u": ({"bucket": "-1", "deletion-vectors.enabled": "true", "compaction.min.file-num": "3", **INDEXES},
          False, ["id IN (3, 4, 150)"]),
    # unaware bucket, no vectors: small files packed once there are min-file-num of them
    "plain": ({"bucket": "-1", "compaction.min.file-num": "3", **INDEXES}, False, []),
    # fixed buckets, vectors: the full compaction (CALL's default) rewrites every bucket
    "f": ({"bucket": "2", "bucket-key": "id", "deletion-vectors.enabled": "true", **INDEXES}, False,
          ["id IN (10, 11, 12, 13, 260)"]),
    # fixed buckets, no vectors: full only when small files outnumber large ones (>= 3 files)
    "fn": ({"bucket": "2", "bucket-key": "id", **INDEXES}, False, []),
    # partitioned unaware with vectors
    "pt": ({"bucket": "-1", "deletion-vectors.enabled": "true", "compaction.min.file-num": "3", **INDEXES},
           True, ["id IN (1, 2, 3, 301)"]),
}

CALLS = [
    "CALL sys.compact(table => 'db.u', compact_strategy => 'minor')",  # unaware: Paimon ignores it
    "CALL sys.compact(table => 'db.plain')",
    "CALL sys.compact(table => 'db.f')",
    "CALL sys.compact(table => 'db.fn')",
    "CALL sys.compact(table => 'db.f', compact_strategy => 'minor')",  # 1 file a bucket: nothing
    "CALL sys.compact(table => 'db.pt', where => 'p = 1')",
    "CALL sys.compact(table => 'db.pt', partitions => 'p=0')",
]
READS = [f"SELECT id, s, v, p FROM db.{name} ORDER BY id" for name in TABLES] + \
    [f"SELECT count(*) FROM db.`{name}$files`" for name in TABLES] + \
    [f"SELECT commit_kind FROM db.`{name}$snapshots` ORDER BY snapshot_id DESC LIMIT 1" for name in TABLES]


def _base(warehouse: Path, files_per_table: int = 4) -> None:
    for name, (options, partitioned, deletes) in TABLES.items():
        table = paimon_index.create_table(str(warehouse), f"db.{name}", SCHEMA, options=options,
                                          partition_keys=["p"] if partitioned else [])
        for k in range(files_per_table):
            table.write(_batch(k * 100, 100))
        for where in deletes:
            table.delete(where)


def _rows(df: Any) -> list[list[Any]]:
    return [list(r) for r in df.collect()]


def test_the_job_compacts_as_the_python_api_does(spark: Any, tmp_path: Path) -> None:
    base = tmp_path / "base"
    _base(base)
    ours, api = tmp_path / "job", tmp_path / "api"
    shutil.copytree(base, ours)
    shutil.copytree(base, api)
    for name in ("u", "f", "pt"):
        before = paimon_index.open_table(str(ours), f"db.{name}").read().sort_by("id")
        full = name == "f"  # Paimon's minor pick waits for 5 files in a bucket: these have 2
        result = jobs.compact(spark, f"db.{name}", full=full, warehouse=str(ours))
        expected = paimon_index.open_table(str(api), f"db.{name}").compact(full=full)
        assert result.snapshot_id == expected.snapshot_id is not None
        assert (result.files_added, result.files_removed) == (expected.files_added, expected.files_removed)
        table = paimon_index.open_table(str(ours), f"db.{name}")
        assert table.read().sort_by("id").equals(before)
        assert latest_snapshot(table.paimon_table).commit_kind == "COMPACT"


def test_a_task_gets_plain_values_only(tmp_path: Path) -> None:
    """What the job pickles to a task: the groups (FilePlans, sequence start, rows per file) and the
    detached schema -- no pypaimon object."""
    _base(tmp_path)
    plan = plan_compaction(paimon_index.open_table(str(tmp_path), "db.pt").paimon_table)
    assert plan.groups
    assert pypaimon_objects((list(enumerate(plan.groups)), plan.schema)) == []
    assert all(f.index is None for g in plan.groups for f in g.files)  # containers are rebuilt
    assert any(f.deletion is not None for g in plan.groups for f in g.files)
    assert max(len(pickle.dumps(g)) for g in plan.groups) < 16 << 10


@pytest.mark.slow  # two connector runs (JVM starts, ~1 min each) and both sides' reads
def test_call_compact_equals_paimons_connector(spark: Any, tmp_path: Path) -> None:
    base = tmp_path / "base"
    _base(base)
    theirs_copy, ours_copy = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs_copy)
    shutil.copytree(base, ours_copy)
    theirs = paimonsql.run(theirs_copy, CALLS + READS)
    for statement, reference in zip(CALLS, theirs, strict=False):
        assert reference["ok"], (statement, reference)
    paimon = paimon_index.spark.attach(spark, warehouse=str(ours_copy))
    for statement in CALLS:
        assert _rows(paimon.sql(statement)) == [[True]], statement
    ours = [_rows(paimon.sql(s)) for s in READS]
    theirs_reads = [r["rows"] for r in theirs[len(CALLS):]]
    # Each side reads the other's copy too.
    cross_theirs = [r["rows"] for r in paimonsql.run(ours_copy, READS)]
    cross_ours = [_rows(paimon_index.spark.attach(spark, warehouse=str(theirs_copy)).sql(s)) for s in READS]
    answers = zip(READS, theirs_reads, ours, cross_theirs, cross_ours, strict=True)
    for statement, ref, mine, ref_on_ours, ours_on_ref in answers:
        assert mine == ref, statement  # same rows, same file counts, COMPACT snapshots
        assert ref_on_ours == ref, statement
        assert ours_on_ref == ref, statement
    counts = dict(zip(TABLES, (r[0][0] for r in ours[len(TABLES):2 * len(TABLES)]), strict=True))
    assert counts["u"] < 4 and counts["plain"] == 1 and counts["f"] == 2 and counts["fn"] == 2
    assert counts["pt"] < 8


def test_call_compact_arguments_on_append_and_primary_key_tables(spark: Any, tmp_path: Path) -> None:
    from paimon_index.errors import SqlError

    _base(tmp_path)
    paimon = paimon_index.create_table(str(tmp_path), "db.k", SCHEMA, primary_keys=["id"],
                                       options={"bucket": "1", "deletion-vectors.enabled": "true"})
    del paimon
    sql = paimon_index.spark.attach(spark, warehouse=str(tmp_path)).sql
    with pytest.raises(SqlError, match="partitions and where cannot be used together"):
        sql("CALL sys.compact(table => 'db.pt', where => 'p = 1', partitions => 'p=1')")
    with pytest.raises(SqlError, match=r"supported on append tables only; db\.k has a primary key"):
        sql("CALL sys.compact(table => 'db.k', where => 'id = 1')")
    with pytest.raises(SqlError, match=r"expected k=v"):
        sql("CALL sys.compact(table => 'db.pt', partitions => 'p')")
    with pytest.raises(SqlError, match=r"order_strategy are not supported by paimon-index"):
        sql("CALL sys.compact(table => 'db.pt', order_strategy => 'zorder', order_by => 'id')")
    table = paimon_index.open_table(str(tmp_path), "db.pt")
    before = table.read().sort_by("id")
    assert _rows(sql("CALL sys.compact(table => 'db.pt', partitions => 'p=0')")) == [[True]]
    from paimon_index.table.plan import plan_snapshot

    plan = plan_snapshot(paimon_index.open_table(str(tmp_path), "db.pt").paimon_table)
    counts = {key[0]: len(b.files) for key, b in plan.buckets.items()}
    # only the partition named was compacted: its file with a vector alone, the 3 others packed
    assert counts == {(0,): 2, (1,): 4}
    assert paimon_index.open_table(str(tmp_path), "db.pt").read().sort_by("id").equals(before)


def test_a_file_a_task_finds_missing_is_named_on_the_driver(spark: Any, tmp_path: Path) -> None:
    """A Spark task's error reached the user as PySpark's ``PythonException``, whose message is
    the executor's whole traceback: a data file removed by hand failed the compaction job with a
    raw ``FileNotFoundError`` in it. Now the TableError naming the job and the file, as the Python
    API's ``compact`` raises."""
    from paimon_index.errors import TableError

    table = paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, options=TABLES["u"][0])
    for k in range(4):
        table.write(_batch(k * 100, 100))
    gone = sorted((tmp_path / "db.db" / "t" / "bucket-0").glob("data-*.parquet"))[0]
    gone.unlink()
    with pytest.raises(TableError, match=rf"^compaction of db\.t \(in a Spark task\): a file it lists is "
                                         rf"missing: .*{gone.name}$") as caught:
        jobs.compact(spark, "db.t", full=True, warehouse=str(tmp_path))
    assert "PythonException" in type(caught.value.__cause__).__name__
    assert table.snapshot_id == 4  # nothing committed


def test_a_project_error_a_task_raises_is_raised_as_itself(spark: Any) -> None:
    """``except ConcurrentChangeError`` (retry) did not catch a refusal raised in a Spark task."""
    from paimon_index.errors import ConcurrentChangeError, CorruptFileError

    def refused(payload: int) -> Any:
        if payload == 2:
            raise ConcurrentChangeError(f"snapshot 3 was expired while task {payload} ran: run it again")
        yield b"ok"

    with pytest.raises(ConcurrentChangeError, match=r"^snapshot 3 was expired while task 2 ran: run it again$"
                       ):
        _connect.run_tasks(spark, [1, 2, 3], refused)

    def corrupt(payload: int) -> Any:
        raise CorruptFileError("bad magic", path="/x/data-1.parquet.index", offset=0)
        yield b""

    with pytest.raises(CorruptFileError, match=r"^/x/data-1\.parquet\.index@0: bad magic$"):
        _connect.run_tasks(spark, [1], corrupt)
    def failed_while_refused(payload: int) -> Any:
        try:
            raise ConcurrentChangeError("refused")
        except ConcurrentChangeError:
            raise ValueError("the clean-up failed")  # noqa: B904 (both in the traceback, chained)
        yield b""

    # What the task raised last counts: a ValueError while handling a refusal is no refusal.
    with pytest.raises(Exception, match="the clean-up failed") as other:
        _connect.run_tasks(spark, [1], failed_while_refused)
    assert not isinstance(other.value, ConcurrentChangeError)
    # Not a project error: left as Spark raised it.
    with pytest.raises(Exception, match="ZeroDivisionError") as other:
        _connect.run_tasks(spark, [0], lambda payload: iter([bytes(1 // payload)]))
    assert not isinstance(other.value, ConcurrentChangeError)


def test_local_relations_split_rows_by_the_bytes_a_task_carries(spark: Any, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """_connect.local_relations: rows in order, each relation's bytes over the leaf partitions
    within LOCAL_RELATION_TASK_BYTES, a heavier row alone in its own relation."""
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    monkeypatch.setattr(_connect, "LOCAL_RELATION_TASK_BYTES", 1000)
    leaf = _connect.leaf_parallelism(spark)
    sizes = [10, 300, 5000 * leaf, 0, 700, 40, 2000, 1, 1]
    rows = pa.table({"id": pa.array(range(len(sizes)), pa.int64()),
                     "payload": pa.array([bytes(n) for n in sizes], pa.binary())})
    schema = StructType([StructField("id", LongType(), False), StructField("payload", BinaryType(), False)])
    df = _connect.local_relations(spark, rows, schema)
    assert [(r["id"], len(r["payload"])) for r in df.collect()] == list(enumerate(sizes))
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    relations = [leaves.apply(i).data().size() for i in range(leaves.size())]
    assert sum(relations) == len(sizes) and len(relations) > 2
    weights = _connect.row_bytes(rows)
    first = 0
    for count in relations:  # the relations in order, each within the budget unless one row
        assert count == 1 or int(weights[first:first + count].sum()) <= 1000 * leaf
        first += count
    assert _connect.local_relations(spark, rows.slice(0, 0), schema).count() == 0
