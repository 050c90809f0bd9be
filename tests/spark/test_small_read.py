"""The planned read's small path: a selective plan's few candidate rows read on the driver and handed
to Spark as a local relation, Spark's filter on top.

Reference: ``spark.read.parquet`` of the table's data files with the deletion predicate's negation
and the query's filter (Parquet filter pushdown off there: Spark's row-group filter over pyarrow's
NaN-less float statistics drops NaN rows its own semantics keep); for an evolved table the planned
read's Spark Parquet path (``small_read_bytes=0``). Every query must take the small path where
asked, so a test cannot pass by quietly reading through Spark's reader.
"""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

from paimon_index.errors import InvalidOptionError
from paimon_index.spark import jobs, planned
from paimon_index.table.catalog import create_table
from paimon_index.table.paimon import arrow_schema
from paimon_index.table.row_level import delete_arrow
from paimon_index.table.write import write_arrow

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("s", pa.string()), ("d", pa.float64()),
                    ("m", pa.decimal128(10, 2)), ("day", pa.date32()), ("ok", pa.bool_()),
                    ("f", pa.float32())])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "id",
           "file-index.bitmap.columns": "s", "file-index.range-bitmap.columns": "m",
           "file.block-size": "1kb"}  # many row groups a file: statistics get something to skip
ROWS = 400
DELETED = "id IN (" + ", ".join(str(i) for i in range(3, 2 * ROWS, 7)) + ")"  # of the first two batches
FLOATS = [0.0, -0.0, float("nan"), None, 1.5, -2.5, float("inf")]


def _batch(k: int) -> pa.Table:
    ids = np.arange(k * ROWS, (k + 1) * ROWS)
    return pa.table({
        "id": ids, "p": (ids % 2).astype(np.int32),
        "s": [None if i % 11 == 0 else f"s{i % 9}" for i in ids],
        "d": [FLOATS[i % len(FLOATS)] for i in ids],
        "m": [None if i % 13 == 0 else decimal.Decimal(int(i) * 7 - 500).scaleb(-2) for i in ids],
        "day": pa.array((ids // 10).astype(np.int32), pa.int32()).cast(pa.date32()),
        "ok": [None if i % 5 == 0 else bool(i % 2) for i in ids],
        "f": pa.array([FLOATS[(i + 3) % len(FLOATS)] for i in ids], pa.float32()),
    }, schema=SCHEMA)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A partitioned table with deletion vectors on some files, several row groups a file."""
    root = tmp_path_factory.mktemp("small")
    t = create_table(str(root), "db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    for k in range(2):
        write_arrow(t, _batch(k))
    delete_arrow(t, DELETED)
    write_arrow(t, _batch(2))  # files without a vector next to files with one
    return str(root)


def _key(rows: list[Any]) -> list[str]:
    return sorted(repr(tuple(r)) for r in rows)  # repr: NaN equals NaN, -0.0 differs from 0.0


def _live_rows(spark: Any, warehouse: str) -> Any:
    """Spark's own read of the table's data files minus the deleted rows, cached (filters on it
    are Spark's, with no Parquet statistics involved)."""
    t = CatalogFactory.create({"warehouse": warehouse}).get_table("db.t")
    paths = [f.file_path for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    previous = spark.conf.get("spark.sql.parquet.filterPushdown")
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        live = spark.read.parquet(*paths).select(*SCHEMA.names).filter(f"NOT ({DELETED})").cache()
        assert live.count() == 3 * ROWS - len(range(3, 2 * ROWS, 7))
    finally:
        spark.conf.set("spark.sql.parquet.filterPushdown", previous)
    return live


WHERES = [
    "id = 123",                      # Bloom: one file, statistics: one row group
    "id = 3",                        # deleted
    "id IN (1, 2, 401, 802, 1199)",  # several files, a deleted one among them
    "id BETWEEN 700 AND 720 AND d > 1",   # NaN and +inf are above 1 in Spark
    "id < 60 AND (d = 'NaN' OR f = 0.0)",  # NaN = NaN, -0.0 = 0.0
    "id < 40 AND d <=> NULL",
    "s = 's4' AND id < 100",
    "m = 10.25 OR m = -4.93",        # DECIMAL literals (range bitmap)
    "day = DATE'1970-01-05'",
    "id > 1000 AND ok AND upper(s) = 'S2'",  # text the parser does not know: TRUE for pruning
    "id = -1",                       # no file left
    "id = 5 AND d = 7.0",            # a file, no row
]


def test_small_read_equals_spark(spark: Any, warehouse: str) -> None:
    live = _live_rows(spark, warehouse)
    for where in WHERES:
        small = jobs.read_planned(spark, "db.t", where, warehouse=warehouse)
        if small.plan.files:
            assert small.small_rows is not None, where
        got = _key(small.dataframe.collect())
        assert got == _key(live.filter(where).collect()), where
    live.unpersist()
    assert len(got) == 0 and small.small_rows == 0 and small.dataframe.columns == SCHEMA.names
    # columns, order and SQL on top of the local relation
    df = jobs.read(spark, "db.t", "id IN (10, 11, 12)", ["d", "id"], warehouse=warehouse,
                   order_by="id DESC", limit=2)
    assert [tuple(r) for r in df.collect()] == [(-2.5, 12), (1.5, 11)]  # 10 is deleted
    assert df.columns == ["d", "id"]


def test_when_the_small_path_is_not_taken(spark: Any, warehouse: str, monkeypatch: Any) -> None:
    over_bytes = jobs.read_planned(spark, "db.t", "id = 123", warehouse=warehouse, small_read_bytes=100)
    assert over_bytes.small_rows is None and len(over_bytes.dataframe.collect()) == 1
    unpruned = jobs.read_planned(spark, "db.t", "id = 123", warehouse=warehouse, use_index=False)
    assert unpruned.small_rows is None
    monkeypatch.setattr(planned, "SMALL_READ_ROWS", 100)
    over_rows = jobs.read_planned(spark, "db.t", "id >= 300", warehouse=warehouse)
    assert over_rows.small_rows is None and over_rows.dataframe.count() > 100
    with pytest.raises(InvalidOptionError, match="small_read_bytes"):
        jobs.read(spark, "db.t", warehouse=warehouse, small_read_bytes=-1)


def _local_relation_rows(df: Any) -> int:
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    return sum(leaves.apply(i).data().size() for i in range(leaves.size())
               if leaves.apply(i).getClass().getSimpleName() == "LocalRelation")


def test_heavy_rows_do_not_travel_inside_tasks(spark: Any, warehouse: str, monkeypatch: Any) -> None:
    """A local relation's rows travel inside the tasks of any job over it (an aggregate, a
    broadcast): 1,800 candidate rows of 10 KB strings made an 8.9 MB task. Rows that would put more
    than ``LOCAL_RELATION_TASK_BYTES`` in a task go to Spark as a scratch Parquet file on a local
    master, and are left to Spark's reader elsewhere."""
    live = _live_rows(spark, warehouse)
    where = "id < 60"
    want = _key(live.filter(where).collect())
    live.unpersist()
    light = jobs.read_planned(spark, "db.t", where, warehouse=warehouse)
    assert light.small_rows and _local_relation_rows(light.dataframe) == light.small_rows
    monkeypatch.setattr(planned._connect, "LOCAL_RELATION_TASK_BYTES", 1000)  # ~100 bytes a row here
    heavy = jobs.read_planned(spark, "db.t", where, warehouse=warehouse)
    assert heavy.small_rows == light.small_rows and _local_relation_rows(heavy.dataframe) == 0
    assert "rows-" in heavy.dataframe._jdf.queryExecution().toString()  # the scratch file
    assert _key(heavy.dataframe.collect()) == want and want
    monkeypatch.setattr(planned._connect, "local_master", lambda spark: False)
    elsewhere = jobs.read_planned(spark, "db.t", where, warehouse=warehouse)
    assert elsewhere.small_rows is None and _local_relation_rows(elsewhere.dataframe) == 0
    assert _key(elsewhere.dataframe.collect()) == want


#: Queries whose indexes select the rows of every file they keep (bitmap on s, range bitmap on m).
SELECTING = [
    "s = 's4'",
    "s IN ('s2', 's5') AND (d = 'NaN' OR f = 0.0)",  # NaN = NaN, -0.0 = 0.0 on the Parquet file
    "s = 's1' AND d > 1",                            # NaN and +inf are above 1 in Spark
    "s = 's6' AND d >= 'NaN'",                       # NaN is above +inf (Parquet's statistics hold no NaN)
    "m >= 10.25 AND m < 20",
    "s = 's3' AND m IS NULL",
]


def test_selected_rows_on_a_local_master_are_read_on_the_driver(spark: Any, warehouse: str,
                                                               monkeypatch: Any) -> None:
    """On a local master a plan whose indexes selected every file's rows is read on the driver
    whatever its files, when its row groups hold no more bytes than Spark would read of the columns
    read; more rows than a local relation holds go to Spark as a Parquet file. An explicit byte
    budget keeps the plain limits, and so does a read whose columns are unknown."""
    live = _live_rows(spark, warehouse)
    # The cached reference's batch pruning reads NaN as below +inf: `d >= 'NaN'` found no row there.
    pruning = "spark.sql.inMemoryColumnarStorage.partitionPruning"
    previous = spark.conf.get(pruning)
    spark.conf.set(pruning, "false")
    monkeypatch.setattr(planned, "SMALL_READ_FILES", 1)
    monkeypatch.setattr(planned, "SMALL_READ_ROWS", 5)
    try:
        for where in SELECTING:
            read = jobs.read_planned(spark, "db.t", where, SCHEMA.names, warehouse=warehouse)
            assert len(read.plan.files) > 1 and all(f.selected is not None for f in read.plan.files), where
            assert read.small_rows is not None and read.small_rows > 5, where
            assert "rows-" in read.dataframe._jdf.queryExecution().toString(), where  # the Parquet file
            want = _key(live.filter(where).collect())
            assert _key(read.dataframe.collect()) == want and want, where
            budgeted = jobs.read_planned(spark, "db.t", where, SCHEMA.names, warehouse=warehouse,
                                         small_read_bytes=planned.SMALL_READ_BYTES)
            assert budgeted.small_rows is None and _key(budgeted.dataframe.collect()) == want, where
            unknown = jobs.read_planned(spark, "db.t", where, warehouse=warehouse)  # columns unknown
            assert unknown.small_rows is None and _key(unknown.dataframe.collect()) == want, where
            narrow = jobs.read_planned(spark, "db.t", where, ["id"], warehouse=warehouse)
            assert narrow.small_rows is None, where  # all columns of its row groups > Spark's "id"
            assert sorted(r.id for r in narrow.dataframe.collect()) == sorted(
                r.id for r in live.filter(where).collect()), where
        monkeypatch.setattr(planned, "LOCAL_SELECTED_ROWS", 5)  # over it: Spark's Parquet reader
        over = jobs.read_planned(spark, "db.t", SELECTING[0], SCHEMA.names, warehouse=warehouse)
        assert over.small_rows is None
        assert _key(over.dataframe.collect()) == _key(live.filter(SELECTING[0]).collect())
    finally:
        spark.conf.set(pruning, previous)
        live.unpersist()


#: ORs whose Bloom-filter leaf leaves the files holding the key without a selection (a "maybe"),
#: the bitmap selecting the rows of every other file.
UNSELECTING = ["s = 's4' OR id = 123", "s = 's2' OR id IN (5, 777)"]


def test_files_the_indexes_could_not_select_in_are_read_on_the_driver_within_a_share(
        spark: Any, warehouse: str, monkeypatch: Any) -> None:
    """On a local master, files without a selection among files with one are read whole on the
    driver and pre-filtered there, while they hold at most 1/``UNSELECTED_SHARE`` of the plan's
    rows; past that share, Spark's Parquet reader reads the plan."""
    live = _live_rows(spark, warehouse)
    monkeypatch.setattr(planned, "SMALL_READ_FILES", 1)
    monkeypatch.setattr(planned, "SMALL_READ_ROWS", 5)
    try:
        for where in UNSELECTING:
            want = _key(live.filter(where).collect())
            monkeypatch.setattr(planned, "UNSELECTED_SHARE", 2)
            read = jobs.read_planned(spark, "db.t", where, SCHEMA.names, warehouse=warehouse)
            unselected = [f for f in read.plan.files if f.selected is None]
            assert 0 < len(unselected) < len(read.plan.files), where
            assert read.small_rows is not None and read.small_rows > 5, where
            assert _key(read.dataframe.collect()) == want and want, where
            monkeypatch.setattr(planned, "UNSELECTED_SHARE", 100)
            over = jobs.read_planned(spark, "db.t", where, SCHEMA.names, warehouse=warehouse)
            assert over.small_rows is None and _key(over.dataframe.collect()) == want, where
    finally:
        live.unpersist()


def test_small_read_evolved_and_timestamp_tables(spark: Any, tmp_path: Path) -> None:
    """Files of an older schema are projected as on Spark's path (renamed, widened, added columns);
    a timestamp column leaves the read to Spark's Parquet reader."""
    w = str(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("f", pa.float32())])
    t = create_table(w, "db.e", schema, options={"bucket": "-1"})
    write_arrow(t, pa.table({"id": [1, 2, 3], "k": pa.array([1, 2, None], pa.int32()),
                             "f": pa.array([1.5, float("nan"), -0.0], pa.float32())}, schema=schema))
    catalog = CatalogFactory.create({"warehouse": w})
    catalog.alter_table("db.e", [SchemaChange.rename_column("k", "kk"),
                                 SchemaChange.update_column_type("kk", AtomicType("BIGINT")),
                                 SchemaChange.update_column_type("f", AtomicType("DOUBLE")),
                                 SchemaChange.add_column("note", AtomicType("STRING"))])
    t = catalog.get_table("db.e")
    write_arrow(t, pa.table({"id": [4], "kk": [2**40], "f": [2.0], "note": ["x"]},
                            schema=arrow_schema(t.table_schema.fields)))
    for where in ["kk = 2", "note IS NULL OR kk > 1", "f > 1", "f = 0.0", "id > 0"]:
        small = jobs.read_planned(spark, "db.e", where, warehouse=w)
        parquet = jobs.read_planned(spark, "db.e", where, warehouse=w, small_read_bytes=0)
        assert small.small_rows is not None and parquet.small_rows is None
        assert _key(small.dataframe.collect()) == _key(parquet.dataframe.collect()), where
        assert small.dataframe.schema == parquet.dataframe.schema
    # Timestamps (NTZ in millis and micros, LTZ) go the small way too, as Spark's microseconds.
    ts = pa.schema([("id", pa.int64()), ("at", pa.timestamp("us")), ("ms", pa.timestamp("ms")),
                    ("tl", pa.timestamp("us", tz="UTC"))])
    timed = create_table(w, "db.ts", ts, options={"bucket": "-1"})
    stamps = [10**15 + 1, -86_400_000_001, None]  # after 2001, before 1970 with a microsecond, NULL
    write_arrow(timed, pa.table({"id": [1, 2, 3], "at": pa.array(stamps, pa.timestamp("us")),
                                 "ms": pa.array([None if s is None else s // 1000 for s in stamps],
                                                pa.timestamp("ms")),
                                 "tl": pa.array(stamps, pa.timestamp("us", tz="UTC"))}, schema=ts))
    for where in ["id = 1", "id >= 2", "at < TIMESTAMP '1970-01-01 00:00:00'", "tl IS NULL OR id = 1"]:
        small = jobs.read_planned(spark, "db.ts", where, warehouse=w)
        parquet = jobs.read_planned(spark, "db.ts", where, warehouse=w, small_read_bytes=0)
        assert small.small_rows is not None and parquet.small_rows is None, where
        assert _key(small.dataframe.collect()) == _key(parquet.dataframe.collect()), where
        assert small.dataframe.schema == parquet.dataframe.schema


def test_local_relation_keeps_rows_after_an_empty_batch(spark: Any) -> None:
    """Spark's Arrow stream reader ended the relation at an empty batch: a small read whose first
    file's candidates all failed the filter returned only the rows before it (primary-key point
    lookups over 4 buckets came back empty)."""
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([StructField("id", LongType(), True)])
    empty = pa.table({"id": pa.array([], pa.int64())})
    chunked = pa.concat_tables([pa.table({"id": [1, 2]}), empty, pa.table({"id": [3]}), empty])
    assert sorted(r.id for r in planned._local_frame(spark, chunked, schema).collect()) == [1, 2, 3]
    assert planned._local_frame(spark, pa.concat_tables([empty, empty]), schema).collect() == []


def test_candidate_rows_take_the_selected_live_rows_of_the_wanted_groups(tmp_path: Path) -> None:
    """The selected rows are taken by their place in the groups read: rows in groups not read, and
    deleted rows, are left out; file order is kept (the mask over every row it replaces)."""
    from types import SimpleNamespace

    import pyarrow.parquet as pq

    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"id": np.arange(1000, dtype=np.int64), "s": [f"r{i}" for i in range(1000)]}),
                   path, row_group_size=100)
    group = SimpleNamespace(arrow=pa.schema([("id", pa.int64()), ("s", pa.string())]),
                            mapping=SimpleNamespace(identity=False))
    rng = np.random.default_rng(5)
    for _ in range(20):
        wanted = sorted(rng.choice(10, rng.integers(1, 11), replace=False).tolist())
        selected = np.unique(rng.integers(0, 1000, rng.integers(0, 300)))
        deleted = np.unique(rng.integers(0, 1000, 50)) if rng.random() < 0.5 else None
        f = SimpleNamespace(selected=selected, deleted=deleted)
        with pq.ParquetFile(path) as parquet:
            starts, live = planned._group_starts(parquet), planned._live_selected(f)
            got = planned._candidate_rows(parquet, f, wanted, group, starts, live)
            # A row group at a time (how a file with a selection is read): the same rows.
            one_by_one = pa.concat_tables([planned._candidate_rows(parquet, f, [g], group, starts, live)
                                           for g in wanted])
        want = [int(i) for i in selected if i // 100 in wanted and (deleted is None or i not in deleted)]
        assert got["id"].to_pylist() == want and got["s"].to_pylist() == [f"r{i}" for i in want]
        assert one_by_one.equals(got)


def test_selected_rows_of_dictionary_encoded_strings_are_read_as_indices(tmp_path: Path) -> None:
    """A selection's string columns that are dictionary-encoded throughout are read as Arrow
    dictionaries and decoded after the take; one whose dictionary overflowed to plain pages (a
    dictionary page near the writer's limit) is read plainly. The rows are the same either way."""
    from types import SimpleNamespace

    import pyarrow.parquet as pq
    from pypaimon.filesystem.local_file_io import LocalFileIO

    from paimon_index.table.fileio import TableIO

    rows = 300_000
    rng = np.random.default_rng(7)
    table = pa.table({"id": np.arange(rows, dtype=np.int64),
                      "few": [f"note-{i}" for i in rng.integers(0, 50, rows)],
                      "many": [f"{i:032x}" for i in rng.integers(0, 2**62, rows)]})
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, row_group_size=100_000)
    group = SimpleNamespace(arrow=table.schema, mapping=SimpleNamespace(identity=False))
    selected = np.unique(rng.integers(0, rows, 500))
    f = SimpleNamespace(selected=selected, deleted=selected[::7])
    with TableIO(LocalFileIO()).parquet(path) as parquet:
        assert planned._dictionary_columns(parquet, [0, 1, 2], group) == ["few"]
        got = planned._candidate_rows(parquet, f, [0, 2], group, planned._group_starts(parquet),
                                      planned._live_selected(f))
    want = [int(i) for i in selected if i // 100_000 in (0, 2) and i not in set(selected[::7].tolist())]
    assert got.schema == table.schema
    assert got.to_pylist() == table.take(pa.array(want)).to_pylist()
