"""``changelog-producer`` = ``lookup`` (and ``input``, fixed buckets) through the Spark jobs: executors
write the changelog files (``prepare_upsert`` / ``prepare_merge`` / the dynamic-bucket tasks), the
driver commits them in the upsert's snapshot. Java's incremental changelog read gives the same
change rows, snapshot by snapshot, as for :meth:`paimon_index.Table.upsert`/``delete``/``update``
on the same sequence (``input``: the input records a model of the sequence gives)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from tests.table.test_changelog import (
    SCHEMA,
    ChangelogReader,
    build_changelog_reader,
    create,
    dedup_table,
    latest,
    normal,
)

import paimon_index
from paimon_index.spark import jobs

pytestmark = pytest.mark.spark

BATCHES = [
    [("+I", {"p": k % 2, "k": k, "v": "a", "n": k}) for k in range(12)],
    [("+I", {"p": 1, "k": 1, "v": "b", "n": 1}), ("-D", {"p": 0, "k": 2, "v": None, "n": None}),
     ("+I", {"p": 0, "k": 20, "v": "c", "n": None}), ("-D", {"p": 1, "k": 99, "v": None, "n": None})],
]


@pytest.fixture(scope="module")
def changelog_reader(tmp_path_factory: pytest.TempPathFactory) -> ChangelogReader:
    return build_changelog_reader(tmp_path_factory)


def _frame(spark: Any, batch: list) -> Any:
    return spark.createDataFrame([(r["p"], r["k"], r["v"], r["n"], kind) for kind, r in batch],
                                 "p int, k bigint, v string, n bigint, _ROW_KIND string")


def _ranges(table: Any, steps: list) -> list[tuple[int, int]]:
    out = []
    for step in steps:
        low = latest(table)
        step()
        out.append((low, latest(table)))
    return out


@pytest.mark.parametrize("layout", [pytest.param("fixed", marks=pytest.mark.slow), "dynamic"])  # fixed: 31 s
def test_spark_jobs_write_the_changelog_table_upsert_writes(spark: Any, tmp_path: Path, layout: str,
                                                            changelog_reader: ChangelogReader) -> None:
    ours, theirs = str(tmp_path / "spark"), str(tmp_path / "local")
    spark_table, local_table = create(ours, layout), create(theirs, layout)
    spark_steps = [lambda b=b: jobs.upsert(spark, _frame(spark, b), "db.t", warehouse=ours) for b in BATCHES]
    spark_steps += [lambda: jobs.delete(spark, "db.t", "k >= 10", warehouse=ours),
                    lambda: jobs.update(spark, "db.t", {"v": "'u'"}, "k < 3", warehouse=ours)]
    local_steps = [lambda b=b: local_table.upsert(dedup_table(b)) for b in BATCHES]
    local_steps += [lambda: local_table.delete("k >= 10"), lambda: local_table.update({"v": "'u'"}, "k < 3")]
    spark_ranges, local_ranges = _ranges(spark_table, spark_steps), _ranges(local_table, local_steps)
    got = changelog_reader.read([(ours, "db.t", a, b) for a, b in spark_ranges]
                                + [(theirs, "db.t", a, b) for a, b in local_ranges])
    mine, reference = got[:len(spark_ranges)], got[len(spark_ranges):]
    assert [normal(c) for c in mine] == [normal(c) for c in reference]
    # +I x12; -U +U, -D, +I (no row for a key never written); -D x3; -U +U x2
    assert [len(c) for c in reference] == [12, 4, 3, 4], reference
    assert sorted(spark_table.read().to_pylist(), key=lambda r: r["k"]) == \
        sorted(local_table.read().to_pylist(), key=lambda r: r["k"])


def test_a_merge_engine_table_through_spark(spark: Any, tmp_path: Path,
                                            changelog_reader: ChangelogReader) -> None:
    """partial-update: before = the old merged row, after = the new one, written by the tasks."""
    warehouse = str(tmp_path)
    table = paimon_index.create_table(warehouse, "db.t", SCHEMA, primary_keys=["p", "k"], options={
        "bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup",
        "merge-engine": "partial-update"})
    table.upsert(pa.Table.from_pylist([{"p": 0, "k": k, "v": "a", "n": k} for k in range(4)], schema=SCHEMA))
    low = latest(table)
    rows = [("+I", {"p": 0, "k": 1, "v": None, "n": 10}), ("+I", {"p": 0, "k": 7, "v": "z", "n": None})]
    jobs.upsert(spark, _frame(spark, rows), "db.t", warehouse=warehouse)
    (got,) = changelog_reader.read([(warehouse, "db.t", low, latest(table))])
    assert normal(got) == normal([("-U", 0, 1, "a", 1), ("+U", 0, 1, "a", 10), ("+I", 0, 7, "z", None)])


@pytest.mark.parametrize("driver_rows", [0, pytest.param(jobs.SMALL_CHANGE_ROWS, marks=pytest.mark.slow)],
                         ids=["tasks", "small-on-driver"])  # the driver's path: Table's, Java-checked
@pytest.mark.parametrize("layout", ["fixed", "dynamic"])
def test_spark_jobs_write_the_input_changelog(spark: Any, tmp_path: Path, changelog_reader: ChangelogReader,
                                              monkeypatch: pytest.MonkeyPatch, driver_rows: int,
                                              layout: str) -> None:
    """``changelog-producer`` = ``input`` through the jobs: every input record, unmerged, in the
    step's snapshot, as Java reads it -- an upsert's rows as given (a -D of a key never written
    too), a DELETE's -D rows with the full old values, an UPDATE's +U rows with the new ones (Java's
    row-level operations write those). ``tasks``: DELETE/UPDATE distributed as well (the small-change
    threshold at 0). ``dynamic``: the assigners pass every record on to its key's bucket, whose
    writer takes it as changelog (refused on the driver before, as here with a merge engine)."""
    monkeypatch.setattr(jobs, "SMALL_CHANGE_ROWS", driver_rows)
    warehouse = str(tmp_path)
    table = create(warehouse, layout, {"changelog-producer": "input"})
    steps = [lambda b=b: jobs.upsert(spark, _frame(spark, b), "db.t", warehouse=warehouse) for b in BATCHES]
    steps += [lambda: jobs.delete(spark, "db.t", "k >= 10", warehouse=warehouse),
              lambda: jobs.update(spark, "db.t", {"v": "'u'"}, "k < 3", warehouse=warehouse)]
    ranges = _ranges(table, steps)
    got = changelog_reader.read([(warehouse, "db.t", a, b) for a, b in ranges])
    expected = [[(kind, r["p"], r["k"], r["v"], r["n"]) for kind, r in batch] for batch in BATCHES]
    expected.append([("-D", 0, 10, "a", 10), ("-D", 1, 11, "a", 11), ("-D", 0, 20, "c", None)])
    expected.append([("+U", 0, 0, "u", 0), ("+U", 1, 1, "u", 1)])
    assert [normal(c) for c in got] == [normal(c) for c in expected]
    assert sorted((r["p"], r["k"], r["v"]) for r in table.read().to_pylist()) == \
        [(0, 0, "u"), (0, 4, "a"), (0, 6, "a"), (0, 8, "a"), (1, 1, "u"), (1, 3, "a"), (1, 5, "a"),
         (1, 7, "a"), (1, 9, "a")]


def test_input_producer_is_refused_on_the_driver_where_tasks_do_not_write_it(spark: Any,
                                                                            tmp_path: Path) -> None:
    """The source's writer used directly (``df.write.format("paimon_index")``): its tasks are not
    bucket-exclusive, so none could write a bucket's whole input changelog."""
    warehouse = str(tmp_path)
    create(warehouse, "fixed", {"changelog-producer": "input"})
    with pytest.raises(Exception, match="'changelog-producer' = 'input'"):
        _frame(spark, BATCHES[0]).drop("_ROW_KIND").write.format("paimon_index") \
            .option("warehouse", warehouse).mode("append").save("db.t")
    assert not list(tmp_path.glob("db.db/t/bucket-*/*"))


@pytest.mark.parametrize("config,bucket", [
    ("agg-last", "2"), ("partial-remove-on-delete", "-1"),
    pytest.param("partial-remove-on-delete", "2", marks=pytest.mark.slow)])
def test_spark_upserts_of_a_merge_engine_table_write_the_input_changelog(
        spark: Any, tmp_path: Path, changelog_reader: ChangelogReader, config: str, bucket: str) -> None:
    """``input`` on a merge-engine table through the Spark job: each task writes the records of its
    buckets before any merge (``prepare_merge``), as ``Table.upsert`` writes them -- and as Java's
    writer does (``tests/table/test_changelog.py`` checks Table.upsert against Java). Refused before,
    naming the option."""
    from tests.table.test_changelog import INPUT_MERGE_STEPS as steps
    from tests.table.test_merge_engines import CONFIGS, engine_of
    from tests.table.test_merge_engines import SCHEMA as MERGE_SCHEMA
    from tests.table.test_merge_engines import as_table as merge_rows

    options = {"deletion-vectors.enabled": "true", "changelog-producer": "input", "bucket": bucket,
               "merge-engine": engine_of(config), **CONFIGS[config][0]}
    ours, theirs = str(tmp_path / "spark"), str(tmp_path / "local")
    spark_table = paimon_index.create_table(ours, "db.t", MERGE_SCHEMA, primary_keys=["k"], options=options)
    local_table = paimon_index.create_table(theirs, "db.t", MERGE_SCHEMA, primary_keys=["k"], options=options)
    # coalesce(1): the records of a key reach their task in the order given (no shuffle between)
    spark_steps = [lambda b=b: jobs.upsert(spark, spark.createDataFrame(merge_rows(b)).coalesce(1), "db.t",
                                           warehouse=ours) for b in steps]
    local_steps = [lambda b=b: local_table.upsert(merge_rows(b)) for b in steps]
    spark_ranges, local_ranges = _ranges(spark_table, spark_steps), _ranges(local_table, local_steps)
    got = changelog_reader.read([(ours, "db.t", a, b) for a, b in spark_ranges]
                                + [(theirs, "db.t", a, b) for a, b in local_ranges])
    mine, reference = got[:len(spark_ranges)], got[len(spark_ranges):]
    assert [normal(c) for c in mine] == [normal(c) for c in reference]
    assert [len(c) for c in reference] == [4, 4, 3]  # every record, unmerged
    assert sorted(spark_table.read().to_pylist(), key=lambda r: r["k"]) == \
        sorted(local_table.read().to_pylist(), key=lambda r: r["k"])


INPUT_SQL = [
    "CREATE TABLE db.{name} (k BIGINT NOT NULL, v STRING, n BIGINT) TBLPROPERTIES ('primary-key' = 'k', "
    "'bucket' = '{bucket}', 'dynamic-bucket.target-row-num' = '3', 'deletion-vectors.enabled' = 'true', "
    "'changelog-producer' = 'input')",
    "INSERT INTO db.{name} VALUES (1, 'a', 1), (2, 'a', 2), (3, 'a', 3), (4, 'a', 4), (5, 'a', 5)",
    "INSERT INTO db.{name} VALUES (4, 'b', 40), (7, 'd', 7), (8, 'd', 8)",
    "DELETE FROM db.{name} WHERE n >= 40 OR k = 2",
    "UPDATE db.{name} SET v = 'u' WHERE k < 4",
    "MERGE INTO db.{name} t USING (SELECT * FROM VALUES (3, 'm', 30), (9, 'm', 9) AS s(k, v, n)) s "
    "ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n WHEN NOT MATCHED THEN INSERT *",
]


def test_sql_on_input_tables_writes_the_changelog_paimons_connector_writes(
        spark: Any, tmp_path: Path, changelog_reader: ChangelogReader) -> None:
    """The same statements through Paimon's own Spark connector and through ``paimon.sql`` on a
    dynamic-bucket and a fixed-bucket table with ``changelog-producer`` = ``input``: Java's
    incremental changelog read gives the same change rows on both sides, statement by statement
    (the connector's own records: an INSERT's +I, a DELETE's -D with the old row, an UPDATE's +U,
    a MERGE's +U for a matched row it updates and +I for a row it inserts -- ours wrote +I for
    both before)."""
    import paimonsql
    from paimon_index.spark import attach

    tables = {"dyn": "-1", "fix": "2"}
    theirs_dir, ours_dir = tmp_path / "connector", tmp_path / "ours"
    texts = {name: [s.format(name=name, bucket=bucket) for s in INPUT_SQL] for name, bucket in tables.items()}
    latest_of = {name: f"SELECT max(snapshot_id) FROM db.`{name}$snapshots`" for name in tables}
    # The connector may commit a statement as two snapshots (its data, then a compaction): each
    # statement's range is read from the snapshots table after it.
    program = ["CREATE DATABASE IF NOT EXISTS db"]
    for name in tables:
        program += [t for text in texts[name] for t in (text, latest_of[name])]
        program.append(f"SELECT * FROM db.{name}")
    results = paimonsql.run(theirs_dir, program)
    for text, result in zip(program, results, strict=True):
        assert result["ok"], (text, result)
    paimon = attach(spark, warehouse=str(ours_dir))
    paimon.sql("CREATE DATABASE db")
    for name in tables:
        connector_ids = [r["rows"][0][0] or 0 for text, r in zip(program, results, strict=True)
                         if text == latest_of[name]]
        our_ids = []
        for text in texts[name]:
            paimon.sql(text)
            our_ids.append(paimon.sql(latest_of[name]).collect()[0][0] or 0)
        ranges = [(theirs_dir, a, b) for a, b in itertools.pairwise(connector_ids)]
        ranges += [(ours_dir, a, b) for a, b in itertools.pairwise(our_ids)]
        got = changelog_reader.read([(str(d), f"db.{name}", a, b) for d, a, b in ranges])
        steps = len(connector_ids) - 1
        assert [normal(c) for c in got[steps:]] == [normal(c) for c in got[:steps]], name
        their_rows = results[program.index(f"SELECT * FROM db.{name}")]["rows"]
        ours = paimon_index.open_table(str(ours_dir), f"db.{name}")
        assert sorted(tuple(r) for r in their_rows) == \
            sorted(tuple(r.values()) for r in ours.read().to_pylist())
