"""What a Spark task receives: plain values, never a pypaimon object (pickled from the driver's plan).

The source's partitions carry each (partition, bucket)'s files as unresolved ``FilePlan``s, the bound
predicate and the current schema detached from pypaimon's schema manager (the mappings of the files'
schema versions computed on the driver). The one pypaimon object a task still gets is the table's
FileIO inside ``TableIO`` (pickled by pypaimon itself: a task must open the same store), checked
here by name so that nothing else slips in beside it. The last test runs one statement per kind of
Spark job and checks everything PySpark pickles for their tasks.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import paimon_index
from paimon_index.spark.datasource import PaimonIndexDataSource
from payloads import pypaimon_objects, pypaimon_objects_in_function

pytestmark = pytest.mark.spark


def _partitions(warehouse: str, name: str) -> list[Any]:
    """The source's partitions; the reader that read them (pickled to every task) and the writer
    hold no pypaimon object either."""
    source = PaimonIndexDataSource({"warehouse": warehouse, "path": name})
    reader = source.reader(source.schema())
    partitions = list(reader.partitions())
    assert pypaimon_objects_in_function(reader) == []
    assert pypaimon_objects_in_function(source.writer(source.schema(), False)) == []
    return partitions


@pytest.mark.parametrize("kind", ["append", "primary-key"])
def test_source_partitions_hold_no_pypaimon_object(tmp_path: Path, kind: str) -> None:
    warehouse = str(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("p", pa.int32())])
    options = {"deletion-vectors.enabled": "true", "file-index.bitmap.columns": "s",
               "file-index.in-manifest-threshold": "16b"}  # .index files: the task reads them
    if kind == "append":
        t = paimon_index.create_table(warehouse, "db.t", schema, partition_keys=["p"],
                                      options={**options, "bucket": "-1"})
    else:
        t = paimon_index.create_table(warehouse, "db.t", schema, primary_keys=["id", "p"],
                                      partition_keys=["p"], options={**options, "bucket": "2"})
    ids = np.arange(200, dtype=np.int64)
    t.write(pa.table({"id": ids, "s": [f"s{i % 4}" for i in ids], "p": (ids % 2).astype(np.int32)},
                     schema=schema))
    t.delete("id < 20")  # deletion vectors: the task reads them by their location
    from pypaimon.schema.schema_change import SchemaChange

    from paimon_index.table.catalog import catalog

    catalog(warehouse).alter_table("db.t", [SchemaChange.add_column("extra", _int_type())], False)
    partitions = _partitions(warehouse, "db.t")
    assert partitions and all(p.files for p in partitions)
    assert {f.schema_id for p in partitions for f in p.files} == {0}  # an older version: a mapping
    files = [f for p in partitions for f in p.files]
    assert all(not f.resolved and f.selected is None and f.deleted is None for f in files)
    assert any(f.deletion is not None for p in partitions for f in p.files)
    assert pypaimon_objects(partitions) == []
    # Small: locations, not row sets (the vectors and .index files are read by the task).
    assert max(len(pickle.dumps(p)) for p in partitions) < 64 << 10


def test_compaction_work_holds_no_pypaimon_object(tmp_path: Path) -> None:
    """jobs.compact sends each bucket's work as plain values: files and vector ranges by location."""
    from paimon_index.table.catalog import open_table
    from paimon_index.table.pk.compaction import plan_buckets
    from paimon_index.table.pk.plan import plan_snapshot

    warehouse = str(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("p", pa.int32())])
    t = paimon_index.create_table(warehouse, "db.t", schema, primary_keys=["id", "p"], partition_keys=["p"],
                                  options={"deletion-vectors.enabled": "true", "bucket": "2"})
    ids = np.arange(200, dtype=np.int64)
    t.upsert(pa.table({"id": ids, "s": [f"s{i % 4}" for i in ids], "p": (ids % 2).astype(np.int32)},
                      schema=schema))
    t.delete("id < 20")
    table = open_table(warehouse, "db.t")
    works = plan_buckets(plan_snapshot(table, table.snapshot_manager().get_latest_snapshot()), True, 0.5, 5)
    assert works and any(w.vectors for w in works)
    assert pypaimon_objects(works) == []


def test_row_change_marks_hold_no_pypaimon_object(tmp_path: Path) -> None:
    """DELETE/UPDATE of an append table: the mark tasks get the buckets' vector files by location
    (they held the planned pypaimon Snapshot and every bucket's IndexManifestEntry objects)."""
    from paimon_index.spark import _tasks
    from paimon_index.table.catalog import open_table
    from paimon_index.table.row_level import plan_row_change

    warehouse = str(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.int32())])
    t = paimon_index.create_table(warehouse, "db.t", schema, partition_keys=["p"],
                                  options={"deletion-vectors.enabled": "true", "bucket": "-1"})
    ids = np.arange(200, dtype=np.int64)
    t.write(pa.table({"id": ids, "p": (ids % 2).astype(np.int32)}, schema=schema))
    t.delete("id < 20")  # vectors to restore
    plan = plan_row_change(open_table(warehouse, "db.t"))
    assert plan is not None and any(b.vectors for b in plan.buckets.values())
    assert pypaimon_objects(plan.buckets) == []
    assert pypaimon_objects_in_function(_tasks._mark_task(plan, warehouse, "db.t", None)) == []


def test_rewrite_tasks_hold_no_pypaimon_object(tmp_path: Path) -> None:
    """rewrite_file_index: a task gets each file's locations and index storage as plain values and
    reports how it stored the new index; the driver keeps the DataFileMeta (they were pickled)."""
    from paimon_index.table.catalog import alter_table_options, open_table
    from paimon_index.table.rewrite import plan_rewrite, rewrite_file

    warehouse = str(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.int32())])
    t = paimon_index.create_table(warehouse, "db.t", schema, partition_keys=["p"], options={"bucket": "-1"})
    ids = np.arange(200, dtype=np.int64)
    t.write(pa.table({"id": ids, "p": (ids % 2).astype(np.int32)}, schema=schema))
    alter_table_options(warehouse, "db.t", set_options={"file-index.bloom-filter.columns": "id",
                                                        "file-index.in-manifest-threshold": "16b"})
    table = open_table(warehouse, "db.t")
    plan = plan_rewrite(table)
    assert len(plan.tasks) == 2
    assert pypaimon_objects(plan.tasks) == []
    outcomes = [rewrite_file(table, task) for task in plan.tasks]
    assert all(o is not None and o.extra_files for o in outcomes)  # new .index files
    assert pypaimon_objects(outcomes) == []


def test_the_function_check_sees_a_pypaimon_object() -> None:
    from pypaimon.schema.data_types import AtomicType

    captured = AtomicType("INT")
    assert pypaimon_objects_in_function(lambda: captured) == ["pypaimon.schema.data_types.AtomicType"]


def _int_type() -> Any:
    from pypaimon.schema.data_types import AtomicType

    return AtomicType("INT")


def test_the_check_sees_a_pypaimon_object() -> None:
    """The recording pickler is not blind: a pypaimon object is named."""
    from pypaimon.schema.data_types import AtomicType

    assert pypaimon_objects({"x": [AtomicType("INT")]}) == ["pypaimon.schema.data_types.AtomicType"]


def test_merge_on_read_partitions_hold_no_pypaimon_object(spark, tmp_path: Path) -> None:
    """A primary-key table without deletion vectors: one partition per (partition, bucket), its
    snapshot and file names; the task merges."""
    from paimon_index.spark.datasource import MergedPartition

    warehouse = str(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()),
                        pa.field("p", pa.date32(), nullable=False)])
    t = paimon_index.create_table(warehouse, "db.m", schema, primary_keys=["id", "p"], partition_keys=["p"],
                                  options={"bucket": "2"})
    import datetime

    days = [datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)]
    t.write(pa.table({"id": list(range(40)), "s": ["a"] * 40, "p": [days[i % 2] for i in range(40)]}, schema))
    t.delete("id < 4")
    partitions = _partitions(warehouse, "db.m")
    assert len(partitions) == 4 and all(isinstance(p, MergedPartition) for p in partitions)
    assert {p.partition for p in partitions} == {(d,) for d in days}
    assert pypaimon_objects(partitions) == []
    # And the tasks' merged rows are the table's (date partitions found by their values).
    got = spark.read.format("paimon_index").option("warehouse", warehouse).load("db.m").collect()
    assert sorted(tuple(r) for r in got) == sorted(tuple(r.values()) for r in t.read().to_pylist())
    assert len(got) == 36


#: One statement per kind of Spark job the verbs run (append, fixed- and dynamic-bucket primary
#: key in deletion-vectors mode, merge-on-read primary key): writes, row-level changes, reads,
#: counts, compactions, index rewrite, overwrite.
_EVERY_JOB = [
    "CREATE TABLE db.a (id BIGINT, s STRING, p INT) PARTITIONED BY (p) TBLPROPERTIES ("
    "'deletion-vectors.enabled' = 'true', 'bucket' = '-1', 'file-index.bitmap.columns' = 's')",
    "INSERT INTO db.a SELECT id, concat('s', id % 5), CAST(id % 2 AS INT) FROM range(2000)",
    "DELETE FROM db.a WHERE id < 100",
    "UPDATE db.a SET s = 'u' WHERE id BETWEEN 100 AND 150",
    "MERGE INTO db.a t USING (SELECT id, 'm' AS s, CAST(id % 2 AS INT) AS p FROM range(1900, 2100)) src "
    "ON t.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s WHEN NOT MATCHED THEN INSERT *",
    "SELECT count(*) FROM db.a WHERE s = 'u'",
    "SELECT * FROM db.a WHERE id = 7",
    "CALL sys.compact(table => 'db.a')",
    "ALTER TABLE db.a SET TBLPROPERTIES ('file-index.bloom-filter.columns' = 'id')",
    "CALL sys.rewrite_file_index(table => 'db.a')",
    "INSERT OVERWRITE db.a SELECT id, 'o', CAST(id % 2 AS INT) FROM range(500)",
    "CREATE TABLE db.k (id BIGINT NOT NULL, s STRING, p INT NOT NULL) PARTITIONED BY (p) TBLPROPERTIES ("
    "'primary-key' = 'id,p', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')",
    "INSERT INTO db.k SELECT id, concat('s', id % 5), CAST(id % 2 AS INT) FROM range(2000)",
    "INSERT INTO db.k SELECT id, 'v2', CAST(id % 2 AS INT) FROM range(0, 2000, 3)",
    "DELETE FROM db.k WHERE id < 100",
    "UPDATE db.k SET s = 'u' WHERE id BETWEEN 100 AND 150",
    "SELECT count(*) FROM db.k WHERE s = 'u'",
    "CALL sys.compact(table => 'db.k')",
    "INSERT OVERWRITE db.k SELECT id, 'o', CAST(id % 2 AS INT) FROM range(500)",
    "CREATE TABLE db.d (id BIGINT NOT NULL, s STRING) TBLPROPERTIES ("
    "'primary-key' = 'id', 'bucket' = '-1', 'deletion-vectors.enabled' = 'true')",
    "INSERT INTO db.d SELECT id, 'a' FROM range(1000)",
    "INSERT INTO db.d SELECT id, 'b' FROM range(500, 1500)",
    "CALL sys.compact(table => 'db.d', compact_strategy => 'full')",
    "CREATE TABLE db.m (id BIGINT NOT NULL, s STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2')",
    "INSERT INTO db.m SELECT id, 'a' FROM range(1000)",
    "DELETE FROM db.m WHERE id < 10",
    "SELECT count(*) FROM db.m",
    "CALL sys.compact(table => 'db.m')",
]


def test_no_statement_ships_a_pypaimon_object_to_a_task(spark: Any, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything PySpark pickles for a task on the driver -- the functions of mapInArrow and
    applyInArrow, parallelized payloads -- checked while each kind of job runs (before: DELETE,
    UPDATE and MERGE of an append table shipped the pinned Snapshot and IndexManifestEntry objects,
    rewrite_file_index each file's DataFileMeta)."""
    from pyspark import serializers

    from paimon_index.spark import attach

    shipped: dict[str, set[str]] = {}
    pickled = [0]
    statement = ["setup"]
    dumps = serializers.CloudPickleSerializer.dumps

    def recording(self: Any, obj: Any) -> bytes:
        pickled[0] += 1
        found = pypaimon_objects_in_function(obj)
        if found:
            shipped.setdefault(statement[0], set()).update(found)
        return dumps(self, obj)

    monkeypatch.setattr(serializers.CloudPickleSerializer, "dumps", recording)
    paimon = attach(spark, warehouse=str(tmp_path))
    paimon.sql("CREATE DATABASE db")
    for text in _EVERY_JOB:
        statement[0] = text
        paimon.sql(text).collect()
    statement[0] = "DataFrame write and the source's read"
    paimon.table("db.a").write(spark.range(100).selectExpr("id", "'w' AS s", "CAST(id % 2 AS INT) AS p"))
    assert spark.read.format("paimon_index").option("warehouse", str(tmp_path)).load("db.a") \
        .filter("s = 'w'").count() == 100
    assert pickled[0] > len(_EVERY_JOB)  # the check saw the jobs' functions
    assert shipped == {}
