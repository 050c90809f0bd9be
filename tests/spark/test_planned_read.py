"""The planned read (``jobs.read``): Python plans with the indexes, Spark's Parquet reader reads.

References, each able to fail on its own: pypaimon's own read and Java Paimon's (the oracle) of a
table with deletion vectors, the Python reader (``Table.read`` / ``read_arrow``) after schema
changes and for a primary-key table, and Spark's own answer over the same files. The random query
shapes run through the planned read in ``test_differential.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

import paimon_index
from javaoracle import java_oracle
from paimon_index.errors import InvalidOptionError, TableError
from paimon_index.spark import jobs
from paimon_index.spark import planned as planned_module
from paimon_index.sql import parse_order_by
from paimon_index.table.catalog import create_table
from paimon_index.table.paimon import arrow_schema
from paimon_index.table.read import read_arrow
from paimon_index.table.row_level import delete_arrow
from paimon_index.table.write import write_arrow

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("s", pa.string()), ("v", pa.int32()),
                    ("d", pa.float64()), ("ts", pa.timestamp("us"))])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "id",
           "file-index.bitmap.columns": "s", "file-index.in-manifest-threshold": "1b"}
BATCHES, ROWS = 3, 60


def _batch(k: int) -> pa.Table:
    ids = np.arange(k * ROWS, (k + 1) * ROWS)
    return pa.table({"id": ids, "p": (ids % 2).astype(np.int32), "s": [f"s{k}-{i % 4}" for i in ids],
                     "v": (ids % 5).astype(np.int32),
                     "d": [[0.0, -0.0, float("nan"), None, 1.5][i % 5] for i in ids],
                     "ts": pa.array(ids * 1_000_000, pa.timestamp("us"))}, schema=SCHEMA)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A partitioned table with deletion vectors, under a path Spark must URI-encode."""
    root = tmp_path_factory.mktemp("planned") / "a dir%20x"
    t = create_table(str(root), "db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    for k in range(BATCHES):
        write_arrow(t, _batch(k))
    delete_arrow(t, "v = 3 OR id IN (5, 100)")
    write_arrow(t, _batch(BATCHES))  # files without a vector next to files with one
    return str(root)


def _ids(df: Any) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect())


def _table(warehouse: str, name: str = "db.t") -> Any:
    return CatalogFactory.create({"warehouse": warehouse}).get_table(name)


def test_rows_equal_pypaimon_and_java(spark: Any, warehouse: str) -> None:
    t = _table(warehouse)
    builder = t.new_read_builder()
    own = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    got = jobs.read(spark, "db.t", warehouse=warehouse)
    assert got.columns == SCHEMA.names
    assert _ids(got) == sorted(own["id"].to_pylist())
    java = java_oracle().batch([{"cmd": "read", "warehouse": warehouse, "table": "db.t", "rows": "true"},
                                {"cmd": "read", "warehouse": warehouse, "table": "db.t", "rows": "true",
                                 "where": "s = 's1-1' OR id = 7"}])
    assert _ids(got) == sorted(r[0] for r in java[0]["row_values"])
    assert _ids(jobs.read(spark, "db.t", "s = 's1-1' OR id = 7", warehouse=warehouse)) == \
        sorted(r[0] for r in java[1]["row_values"])


def test_spark_semantics_and_pruning(spark: Any, warehouse: str) -> None:
    """Spark's filter decides every row (NaN, -0.0, NULL, text we do not parse); the indexes only
    choose files, for the whole WHERE including ORs."""
    t = _table(warehouse)
    paths = [f.file_path for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    everything = jobs.read(spark, "db.t", warehouse=warehouse)
    for where in ["d = 0.0 OR d > 1", "d = 'NaN'", "id = 7 OR s = 's2-2'", "s = 's0-1' AND abs(v) = 1"]:
        planned = jobs.read_planned(spark, "db.t", where, warehouse=warehouse)
        assert _ids(planned.dataframe) == _ids(everything.filter(where)), where
        if where == "id = 7 OR s = 's2-2'":
            # id 7 lives in one file of batch 0, s2-* only in batch 2's files
            assert len(planned.plan.files) == 2 and planned.plan.exact
    # the reference without any plan: Spark over the same files, minus what the vectors delete
    raw = spark.read.parquet(*paths)
    assert raw.filter("id = 7").count() == 1
    assert jobs.read(spark, "db.t", "id = 100", warehouse=warehouse).count() == 0  # deleted


def test_plan_shape(spark: Any, warehouse: str) -> None:
    """Files without a vector are read with no join; only the asked columns are read."""
    # small_read_bytes=0: Spark's reader (the small read now takes this table's timestamp column too)
    newest = jobs.read_planned(spark, "db.t", f"id >= {BATCHES * ROWS}", ["id", "s"], warehouse=warehouse,
                               small_read_bytes=0)
    text = newest.dataframe._jdf.queryExecution().executedPlan().toString()
    assert "Join" not in text and all(f.deleted is None for f in newest.plan.files)
    assert "ReadSchema: struct<id:bigint,s:string>" in text
    old = jobs.read_planned(spark, "db.t", "id < 10", ["id"], warehouse=warehouse, small_read_bytes=0)
    text = old.dataframe._jdf.queryExecution().executedPlan().toString()
    assert "_tmp_metadata_row_index" in text  # the vectors applied on Spark's row positions
    assert _ids(old.dataframe) == [i for i in range(10) if i % 5 != 3 and i != 5]


def _file_status_cache_entries(spark: Any) -> int:
    """Entries of Spark's shared file status cache (``FileStatusCache.sharedCache``)."""
    jvm = spark.sparkContext._jvm
    holder = jvm.java.lang.Class.forName("org.apache.spark.sql.execution.datasources.FileStatusCache$")
    field = holder.getDeclaredField("sharedCache")
    field.setAccessible(True)
    shared = field.get(None)
    if shared is None:
        return 0
    inner = shared.getClass().getDeclaredField(
        "org$apache$spark$sql$execution$datasources$SharedInMemoryCache$$cache")
    inner.setAccessible(True)
    return int(inner.get(shared).size())


def test_reads_leave_nothing_in_sparks_file_status_cache(spark: Any, warehouse: str) -> None:
    """Each planned read's Parquet relation would cache its files' statuses under a key no later
    read asks for (10 entries a read of 10 files, kept up to 250 MB in a long session); the read
    gives its relations no cache, and the session's settings are as they were."""
    spark.read.parquet(*_table(warehouse).new_read_builder().new_scan().plan().splits()[0].file_paths).count()
    before = _file_status_cache_entries(spark)
    assert before > 0  # the cache is on in this session: Spark's own read of a file used it
    spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", "7")
    try:
        for k in range(3):
            df = jobs.read(spark, "db.t", f"id >= {k}", warehouse=warehouse, small_read_bytes=0)
            assert df.count() > 0
        assert _file_status_cache_entries(spark) == before
        assert spark.conf.get("spark.sql.sources.parallelPartitionDiscovery.threshold") == "7"
        assert spark.conf.get("spark.sql.hive.filesourcePartitionFileCacheSize", None) is None
    finally:
        spark.conf.unset("spark.sql.sources.parallelPartitionDiscovery.threshold")


def test_overlapping_reads_put_the_sessions_settings_back(spark: Any, warehouse: str) -> None:
    """Reads on one session from several threads overlap while they make their relations: each
    saved and put back the session's settings itself, so one that started second and ended last
    left the first one's values behind (the listing threshold and a file status cache of size 0,
    for every later query of the session). Overlapped here in the order threads can take."""
    from paimon_index.spark import planned

    threshold = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    first, second = planned._resolving_files(spark, 40), planned._resolving_files(spark, 90)
    first.__enter__()
    second.__enter__()
    assert spark.conf.get(threshold) == "91" and spark.conf.get(planned._FILE_STATUS_CACHE) == "0"
    first.__exit__(None, None, None)
    assert spark.conf.get(threshold) == "91"  # the second still makes its relations
    second.__exit__(None, None, None)
    assert spark.conf.get(threshold, None) is None
    assert spark.conf.get(planned._FILE_STATUS_CACHE, None) is None
    # and real threads, each reading while the others do
    from concurrent.futures import ThreadPoolExecutor

    want = jobs.read(spark, "db.t", "id >= 10", warehouse=warehouse, small_read_bytes=0).count()
    with ThreadPoolExecutor(4) as pool:
        counts = list(pool.map(lambda k: jobs.read(spark, "db.t", "id >= 10", warehouse=warehouse,
                                                   small_read_bytes=0).count(), range(12)))
    assert counts == [want] * 12
    assert spark.conf.get(threshold, None) is None
    assert spark.conf.get(planned._FILE_STATUS_CACHE, None) is None


def test_empty_topn_and_errors(spark: Any, warehouse: str) -> None:
    none = jobs.read_planned(spark, "db.t", "id = -1", warehouse=warehouse)
    assert none.plan.files == () and none.dataframe.count() == 0
    assert none.dataframe.columns == SCHEMA.names
    top = jobs.read(spark, "db.t", "s <> 's0-0'", ["id", "v"], warehouse=warehouse, order_by="v DESC, id",
                    limit=4)
    full = jobs.read(spark, "db.t", warehouse=warehouse).filter("s <> 's0-0'").orderBy(
        spark_col("v").desc(), "id").limit(4)
    assert [tuple(r) for r in top.collect()] == [(r["id"], r["v"]) for r in full.collect()]
    with pytest.raises(InvalidOptionError, match="nope"):
        jobs.read(spark, "db.t", columns=["id", "nope"], warehouse=warehouse)
    with pytest.raises(InvalidOptionError, match="order_by"):
        jobs.read(spark, "db.t", limit=3, warehouse=warehouse)


def spark_col(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.col(name)


#: rename k -> kk, widen it INT -> BIGINT and f FLOAT -> DOUBLE, add a column
EVOLVE = [SchemaChange.rename_column("k", "kk"), SchemaChange.update_column_type("kk", AtomicType("BIGINT")),
          SchemaChange.update_column_type("f", AtomicType("DOUBLE")),
          SchemaChange.add_column("note", AtomicType("STRING"))]


def test_schema_evolution(spark: Any, tmp_path: Path) -> None:
    """Renamed, added and widened columns equal the Python reader's; a narrowing cast falls back to
    the Python source (Paimon's Java casts), still exact."""
    w = str(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("f", pa.float32()), ("n", pa.int64())])
    t = create_table(w, "db.e", schema, options={"bucket": "-1"})
    write_arrow(t, pa.table({"id": [1, 2, 3], "k": pa.array([1, 2, None], pa.int32()),
                             "f": pa.array([1.5, None, -0.0], pa.float32()), "n": [5, 2**40, -1]},
                            schema=schema))
    catalog = CatalogFactory.create({"warehouse": w})
    catalog.alter_table("db.e", EVOLVE)
    t = catalog.get_table("db.e")
    write_arrow(t, pa.table({"id": [4], "kk": [2**40], "f": [2.0], "n": [7], "note": ["x"]},
                            schema=arrow_schema(t.table_schema.fields)))

    def check(where: str | None) -> Any:
        planned = jobs.read_planned(spark, "db.e", where, warehouse=w)
        want = read_arrow(catalog.get_table("db.e"), where or "TRUE")[0].sort_by("id").to_pylist()
        got = sorted((r.asDict() for r in planned.dataframe.collect()), key=lambda r: r["id"])
        assert got == want, where
        return planned

    assert check(None).fallback is None
    assert check("kk = 2").fallback is None
    check("note IS NULL OR kk > 1")
    catalog.alter_table("db.e", [SchemaChange.update_column_type("n", AtomicType("INT"))])
    narrowed = check("id > 0")
    assert narrowed.fallback is not None and "'n'" in narrowed.fallback


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_time_travel_reads_under_the_snapshots_schema(spark: Any, tmp_path: Path) -> None:
    """``snapshot_id=N`` reads under snapshot N's schema (docs/semantics.md; Java's
    ``AbstractFileStoreTable.tryTimeTravel``), as pypaimon, Java, ``Table.read`` and the Python
    source with ``scan.snapshot-id`` (the planned read's fallback) do."""
    w = str(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("f", pa.float32())])
    t = create_table(w, "db.e", schema, options={"bucket": "-1", "file-index.bloom-filter.columns": "id"})
    write_arrow(t, pa.table({"id": [1, 2, 3], "k": pa.array([10, 20, None], pa.int32()),
                             "f": pa.array([1.5, None, -0.0], pa.float32())}, schema=schema))
    catalog = CatalogFactory.create({"warehouse": w})
    catalog.alter_table("db.e", EVOLVE)
    t = catalog.get_table("db.e")
    write_arrow(t, pa.table({"id": [4], "kk": [2**40], "f": [2.0], "note": ["x"]},
                            schema=arrow_schema(t.table_schema.fields)))

    pinned = catalog.get_table("db.e").copy({"scan.snapshot-id": "1"})
    builder = pinned.new_read_builder()
    own = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert own.column_names == ["id", "k", "f"]
    java = java_oracle().batch([{"cmd": "read", "warehouse": w, "table": "db.e", "rows": "true",
                                 "snapshot": "1"}])
    table_read = paimon_index.open_table(w, "db.e").read(snapshot_id=1)

    planned = jobs.read_planned(spark, "db.e", warehouse=w, snapshot_id=1)
    assert planned.dataframe.columns == ["id", "k", "f"] and planned.plan.snapshot_id == 1
    want = sorted(tuple(r.values()) for r in own.to_pylist())
    assert _rows(planned.dataframe) == want == sorted(tuple(r.values()) for r in table_read.to_pylist())
    assert sorted(tuple(r) for r in java[0]["row_values"]) == want  # three columns: k, not kk + note
    # the snapshot's column names in WHERE and columns=; its index still prunes
    hit = jobs.read_planned(spark, "db.e", "k = 20 AND id = 2", ["id", "k"], warehouse=w, snapshot_id=1)
    assert _rows(hit.dataframe) == [(2, 20)]
    # the latest snapshot is still read under the current schema
    latest = jobs.read(spark, "db.e", "kk > 15 OR note IS NOT NULL", ["id", "kk", "note"], warehouse=w)
    assert _rows(latest) == [(2, 20, None), (4, 2**40, "x")]
    # the Python source (the planned read's fallback) with scan.snapshot-id agrees
    source = spark.read.format("paimon_index").option("warehouse", w).option("scan.snapshot-id", "1") \
        .load("db.e")
    assert source.columns == ["id", "k", "f"] and _rows(source) == want
    with pytest.raises(TableError, match="snapshot 9"):
        jobs.read(spark, "db.e", warehouse=w, snapshot_id=9)


def test_primary_key_table(spark: Any, tmp_path: Path) -> None:
    import paimon_index

    w = str(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = paimon_index.create_table(w, "db.pk", schema, primary_keys=["id"],
                                  options={"bucket": "2", "deletion-vectors.enabled": "true",
                                           "file-index.bloom-filter.columns": "v"})
    t.upsert(pa.table({"id": pa.array(range(20), pa.int64()), "v": [f"a{i}" for i in range(20)]}))
    t.upsert(pa.table({"id": pa.array([3, 4, 25], pa.int64()), "v": ["b3", "b4", "b25"],
                       "_ROW_KIND": ["+U", "-D", "+I"]}))
    want = t.read("TRUE").sort_by("id").to_pylist()
    rows = jobs.read(spark, "db.pk", warehouse=w).collect()
    got = sorted((r.asDict() for r in rows), key=lambda r: r["id"])
    assert got == want and [r["id"] for r in got if r["id"] in (3, 4)] == [3]
    assert jobs.read(spark, "db.pk", "v = 'a3' OR v = 'b3'", warehouse=w).collect()[0]["v"] == "b3"


TOPN_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int32()), ("s", pa.string()), ("d", pa.float64())])


@pytest.fixture(scope="module")
def ranked(tmp_path_factory: pytest.TempPathFactory) -> str:
    """4 files; ``v`` with ties, NULLs and its best values deleted in the first two files."""
    root = str(tmp_path_factory.mktemp("ranked"))
    t = create_table(root, "db.r", TOPN_SCHEMA, options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "file-index.range-bitmap.columns": "v,d",
        "file-index.bitmap.columns": "s"})
    for k in range(4):
        ids = np.arange(k * 50, (k + 1) * 50)
        write_arrow(t, pa.table({
            "id": ids, "v": pa.array([None if i % 11 == 0 else int(i * 7 % 13) for i in ids], pa.int32()),
            "s": ["del" if i * 7 % 13 in (0, 12) else "keep" for i in ids],
            "d": [float("nan") if i % 9 == 0 else float(i % 4) for i in ids]}, schema=TOPN_SCHEMA))
    # the largest and the smallest v of the first two files: a bound taken from them would cut rows
    delete_arrow(t, "id < 100 AND (v = 12 OR v = 0)")
    return root


def _row_reprs(rows: list[Any]) -> list[str]:
    return [repr(tuple(r)) for r in rows]  # NaN equals NaN, -0.0 differs from 0.0


def _live(spark: Any, warehouse: str, name: str) -> Any:
    """The table's live rows through the Python reader, as a Spark DataFrame (the reference)."""
    from paimon_index.table.api import open_table

    rows = read_arrow(open_table(warehouse, name).paimon_table, "TRUE")[0]
    return spark.createDataFrame(rows, "id long, v int, s string, d double")


def test_dv_skipped_where_no_kept_row_is_deleted(spark: Any, ranked: str) -> None:
    """A vector that deletes none of the rows the index kept is not applied; one that does is (on the
    rows' positions: a range filter or the words join, either reads ``_metadata.row_index``)."""
    live = _live(spark, ranked, "db.r")
    for where, joined in (("s = 'keep'", False), ("s = 'del'", True), ("s = 'keep' OR id = 3", True)):
        # small_read_bytes=0: Spark's reader (this small table would otherwise be read on the driver)
        planned = jobs.read_planned(spark, "db.r", where, warehouse=ranked, small_read_bytes=0)
        text = planned.dataframe._jdf.queryExecution().executedPlan().toString()
        assert ("_tmp_metadata_row_index" in text) == joined, where
        assert any(f.deleted is not None for f in planned.plan.files), where
        assert _ids(planned.dataframe) == _ids(live.filter(where)), where
        assert _ids(jobs.read(spark, "db.r", where, warehouse=ranked)) == _ids(live.filter(where)), where


@pytest.mark.parametrize("order_by", ["v DESC, id", "v, id DESC", "v DESC NULLS FIRST, id",
                                      "v ASC NULLS LAST, id"])
def test_topn_bound_equals_spark(spark: Any, ranked: str, order_by: str) -> None:
    """The global bound (ties, NULL ordering, deleted best values) never changes the answer."""
    from paimon_index.table.scan import topn_bound

    live = _live(spark, ranked, "db.r")
    live.createOrReplaceTempView("ranked_live")
    for limit in (6, 25):
        want = spark.sql(f"SELECT * FROM ranked_live ORDER BY {order_by} LIMIT {limit}").collect()
        small = jobs.read_planned(spark, "db.r", warehouse=ranked, order_by=order_by, limit=limit)
        assert _row_reprs(small.dataframe.collect()) == _row_reprs(want), (order_by, limit)
        # Spark's reader (small_read_bytes=0), where the bound is pushed into the Parquet scan
        planned = jobs.read_planned(spark, "db.r", warehouse=ranked, order_by=order_by, limit=limit,
                                    small_read_bytes=0)
        assert _row_reprs(planned.dataframe.collect()) == _row_reprs(want), (order_by, limit)
        bound = topn_bound(planned.plan, "v", limit, ascending=parse_order_by(order_by)[0].ascending)
        text = planned.dataframe._jdf.queryExecution().executedPlan().toString()
        assert bound is not None
        assert re.search(rf"v#\d+ [<>]= {bound}\)", text), (order_by, limit)
    desc = jobs.read_planned(spark, "db.r", warehouse=ranked, order_by="v DESC", limit=6)
    assert topn_bound(desc.plan, "v", 6, ascending=False) == 12  # 12s of files 0, 1 are deleted: fewer
    assert topn_bound(desc.plan, "v", 300, ascending=False) is None  # fewer non-NULL live values


def test_topn_bound_refused(spark: Any, ranked: str) -> None:
    """No bound for a WHERE (index rows are not the matching rows), a float column (NaN, -0.0)."""
    from paimon_index.table.scan import topn_bound

    where = jobs.read_planned(spark, "db.r", "s = 'keep'", warehouse=ranked, order_by="v DESC", limit=3)
    assert topn_bound(where.plan, "v", 3, ascending=False) is None
    assert topn_bound(where.plan, "d", 3, ascending=False) is None
    plain = jobs.read_planned(spark, "db.r", warehouse=ranked, order_by="d DESC", limit=3)
    assert topn_bound(plain.plan, "d", 3, ascending=False) is None
    want = _live(spark, ranked, "db.r").orderBy(spark_col("d").desc(), "id").limit(3).collect()
    got = jobs.read(spark, "db.r", warehouse=ranked, order_by="d DESC, id", limit=3).collect()
    assert _row_reprs(got) == _row_reprs(want)
    # the bound's column need not be among the columns returned
    ids = jobs.read(spark, "db.r", columns=["id"], warehouse=ranked, order_by="v DESC, id", limit=3).collect()
    assert [r["id"] for r in ids] == [r["id"] for r in _live(spark, ranked, "db.r").orderBy(
        spark_col("v").desc(), "id").limit(3).collect()]


def test_one_file_plan_runs_as_one_task(spark: Any, tmp_path: Path) -> None:
    """An index that leaves one file makes the aggregate one task with no shuffle (the session's
    single-task setting); a table without floats gets no shielding projection; the answer is
    Spark's over the same file."""
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    t = create_table(str(tmp_path), "db.one", schema, options={
        "bucket": "-1", "file-index.bloom-filter.columns": "id"})
    for k in range(3):
        ids = np.arange(k * 100, (k + 1) * 100)
        write_arrow(t, pa.table({"id": ids, "s": [f"x{i % 7}" for i in ids]}, schema=schema))
    where = "id = 150 OR (id > 120 AND id < 130 AND s <> 'x3')"
    planned = jobs.read_planned(spark, "db.one", where, warehouse=str(tmp_path), small_read_bytes=0)
    assert len(planned.plan.files) == 1
    counted = planned.dataframe.groupBy("s").count()
    text = counted._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in text and "nanvl" not in text, text
    want = spark.read.parquet(planned.plan.files[0].path).filter(where).groupBy("s").count()
    assert sorted(map(tuple, counted.collect())) == sorted(map(tuple, want.collect()))
    assert sum(r[1] for r in counted.collect()) == 8  # 121..129 but 122, 129 (x3); and 150


TEMPORAL_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("ts", pa.timestamp("us")),
                             ("tm", pa.timestamp("ms")), ("tl", pa.timestamp("us", tz="UTC")),
                             ("dc", pa.decimal128(10, 2))])
TEMPORAL_SPARK = "id long, dt date, ts timestamp_ntz, tm timestamp_ntz, tl timestamp, dc decimal(10,2)"


@pytest.fixture(scope="module")
def ranked_temporal(tmp_path_factory: pytest.TempPathFactory) -> str:
    """4 files of DATE, TIMESTAMP(6), TIMESTAMP(3), TIMESTAMP_LTZ(6) and DECIMAL(10, 2) columns with
    range bitmaps: ties, NULLs, values before 1970 (negative keys), sub-millisecond parts, and the
    best values of every column (both ends) deleted in the first two files."""
    import datetime as dt
    from decimal import Decimal

    root = str(tmp_path_factory.mktemp("temporal"))
    t = create_table(root, "db.tt", TEMPORAL_SCHEMA, options={
        "bucket": "-1", "deletion-vectors.enabled": "true",
        "file-index.range-bitmap.columns": "dt,ts,tm,tl,dc"})
    base_time = dt.datetime(1969, 12, 31, 23, 59, 58, 999_000)
    for k in range(4):
        ids = list(range(k * 50, (k + 1) * 50))
        rank = [None if i % 11 == 0 else i * 7 % 13 for i in ids]
        write_arrow(t, pa.table({
            "id": ids,
            "dt": [None if r is None else dt.date(1969, 12, 25) + dt.timedelta(days=r) for r in rank],
            "ts": [None if r is None else base_time + dt.timedelta(microseconds=r * 1500 + i % 2)
                   for r, i in zip(rank, ids, strict=True)],
            "tm": [None if r is None else base_time + dt.timedelta(milliseconds=r * 250) for r in rank],
            "tl": [None if r is None else (base_time + dt.timedelta(microseconds=r * 777)).replace(
                tzinfo=dt.UTC) for r in rank],
            "dc": [None if r is None else Decimal(r * 37 - 200).scaleb(-2) for r in rank],
        }, schema=TEMPORAL_SCHEMA))
    delete_arrow(t, "id < 100 AND (dc = 2.44 OR dc = -2.00)")  # ranks 12 and 0: each column's ends
    return root


@pytest.mark.parametrize("column", ["dt", "ts", "tm", "tl", "dc"])
def test_topn_bound_on_dates_timestamps_decimals(spark: Any, ranked_temporal: str, column: str) -> None:
    """The bound on DATE, TIMESTAMP (NTZ, millis and micros keys), TIMESTAMP_LTZ and DECIMAL keys
    is pushed into Spark's Parquet reader and never changes the answer (Spark's ORDER BY/LIMIT over
    pypaimon's read of the live rows)."""
    from paimon_index.table.api import open_table

    rows = read_arrow(open_table(ranked_temporal, "db.tt").paimon_table, "TRUE")[0]
    spark.createDataFrame(rows, TEMPORAL_SPARK).createOrReplaceTempView("temporal_live")
    for order_by, limit in ((f"{column} DESC, id", 5), (f"{column} DESC, id", 30), (f"{column}, id DESC", 5),
                            (f"{column} DESC NULLS FIRST, id", 5), (f"{column} ASC NULLS LAST, id", 30)):
        want = spark.sql(f"SELECT * FROM temporal_live ORDER BY {order_by} LIMIT {limit}").collect()
        planned = jobs.read_planned(spark, "db.tt", warehouse=ranked_temporal, order_by=order_by,
                                    limit=limit, small_read_bytes=0)
        assert _row_reprs(planned.dataframe.collect()) == _row_reprs(want), (order_by, limit)
        text = planned.dataframe._jdf.queryExecution().executedPlan().toString()
        assert re.search(rf"PushedFilters: \[[^\]]*(GreaterThanOrEqual|LessThanOrEqual)\({column},", text), \
            (order_by, limit, text)


def test_timestamp_ltz_literals_follow_the_session_time_zone(spark: Any, tmp_path: Path) -> None:
    """Spark reads ``TIMESTAMP '...'`` against a TIMESTAMP_LTZ column in the session's time zone; the
    plan must not prune by the literal read as UTC (a file of 03:00 UTC rows matches ``tl <
    TIMESTAMP '2025-01-01 00:00'`` in Los Angeles, where that midnight is 08:00 UTC)."""
    import datetime as dt

    schema = pa.schema([("id", pa.int64()), ("tl", pa.timestamp("us", tz="UTC")), ("tn", pa.timestamp("us"))])
    t = create_table(str(tmp_path), "db.ltz", schema, options={
        "bucket": "-1", "file-index.range-bitmap.columns": "tl"})
    for day in (1, 2):
        at = dt.datetime(2025, 1, day, 3, 0)
        write_arrow(t, pa.table({"id": [day], "tl": [at.replace(tzinfo=dt.UTC)], "tn": [at]}, schema=schema))
    splits = _table(str(tmp_path), "db.ltz").new_read_builder().new_scan().plan().splits()
    paths = [f.file_path for s in splits for f in s.files]
    previous = spark.conf.get("spark.sql.session.timeZone")
    try:
        for zone in ("America/Los_Angeles", "Asia/Tokyo", "UTC"):
            spark.conf.set("spark.sql.session.timeZone", zone)
            for where in ("tl < TIMESTAMP '2025-01-01 00:00:00'", "tl >= TIMESTAMP '2025-01-02 12:00:00'",
                          "tl = TIMESTAMP '2025-01-01 03:00:00'", "tn < TIMESTAMP '2025-01-01 04:00:00'"):
                want = sorted(r.id for r in spark.read.parquet(*paths).filter(where).collect())
                for small in (0, planned_module.SMALL_READ_BYTES):
                    got = jobs.read(spark, "db.ltz", where, warehouse=str(tmp_path), small_read_bytes=small)
                    assert sorted(r.id for r in got.collect()) == want, (zone, where, small)
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def test_topn_reads_only_files_that_reach_the_bound(spark: Any, tmp_path: Path) -> None:
    """TopN drops the files whose best live value cannot reach the bound (ties and NULLs that sort
    first kept); the answer is Spark's ORDER BY/LIMIT over pypaimon's read of the live rows."""
    from paimon_index.table.api import open_table

    schema = pa.schema([("id", pa.int64()), ("v", pa.int32())])
    t = create_table(str(tmp_path), "db.c", schema, options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "file-index.range-bitmap.columns": "v"})
    for k in range(4):  # file k: v in [100k, 100k + 99], file 0 with NULLs
        ids = np.arange(k * 100, (k + 1) * 100)
        values = [None if k == 0 and i % 10 == 0 else int(i) for i in ids]
        write_arrow(t, pa.table({"id": ids, "v": pa.array(values, pa.int32())}, schema=schema))
    delete_arrow(t, "v >= 300 AND v < 397")  # file 3 keeps 397..399: the rest of a top 5 is in file 2
    rows = read_arrow(open_table(str(tmp_path), "db.c").paimon_table, "TRUE")[0]
    spark.createDataFrame(rows, "id long, v int").createOrReplaceTempView("clustered_live")
    for order_by, files in (("v DESC, id", 2), ("v DESC NULLS FIRST, id", 3), ("v, id", 1),
                            ("v ASC NULLS LAST, id", 1)):
        want = spark.sql(f"SELECT * FROM clustered_live ORDER BY {order_by} LIMIT 5").collect()
        for small in (0, planned_module.SMALL_READ_BYTES):
            got = jobs.read_planned(spark, "db.c", warehouse=str(tmp_path), order_by=order_by, limit=5,
                                    small_read_bytes=small)
            assert len(got.plan.files) == files, order_by
            assert _row_reprs(got.dataframe.collect()) == _row_reprs(want), (order_by, small)


@pytest.mark.parametrize("directory", ["wh[2]", "wh{a,b}*?"])
def test_a_warehouse_path_with_glob_characters(spark: Any, tmp_path: Path, directory: str) -> None:
    """Spark's Parquet reader globs the paths it is given: a warehouse under ``wh[2]`` was read as the
    pattern ``wh2`` and failed (PATH_NOT_FOUND); ``*`` and ``?`` could match other files."""
    root = tmp_path / directory
    t = create_table(str(root), "db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    write_arrow(t, _batch(0))
    write_arrow(t, _batch(1))
    delete_arrow(t, "v = 3")
    expected = sorted(read_arrow(t, None)[0].column("id").to_pylist())
    got = jobs.read(spark, "db.t", warehouse=str(root), small_read_bytes=0).select("id").collect()
    assert sorted(r.id for r in got) == expected
    got = jobs.read(spark, "db.t", "s = 's1-2'", warehouse=str(root), small_read_bytes=0).collect()
    assert sorted(r.id for r in got) == [i for i in expected if f"s1-{i % 4}" == "s1-2" and i >= ROWS]
