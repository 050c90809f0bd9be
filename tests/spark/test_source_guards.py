"""What the ``paimon_index`` source and ``jobs.write`` refuse on the driver, before any task (issue 21).

- identifiers: ``load("db.t/../../y")`` / ``save(...)`` are refused and nothing is created on disk;
- a write to a table that does not exist: TableNotFoundError naming the table and how to create
  it, before a job starts (it used to fail inside the tasks with a 17,068-character exception);
- table options on a writer (``bucket``, ``primary-key``, ``file-index.*``): an error saying they
  belong to CREATE/ALTER TABLE;
- ``filter-pushdown = true`` on Spark < 4.4: refused, so the silent wrong count of a reused view
  (1,478,870 instead of 6,001,215 in the issue) cannot be reached by a user.

"No task ran" is checked with a SparkListener-free probe: Spark's status tracker lists the jobs of
a job group; every refused call runs under its own group and must leave it empty.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_index
from filetree import tree
from paimon_index import InvalidIdentifierError, TableNotFoundError, TableOptionOnWriterError
from paimon_index.spark import jobs
from paimon_index.spark.options import SINGLE_SCAN_PUSHDOWN, pushdown_safe

pytestmark = pytest.mark.spark


def jobs_started(spark: Any, group: str, action: Callable[[], Any]) -> tuple[BaseException | None, int]:
    """Run ``action`` in job group ``group``: (the exception it raised, Spark jobs it started)."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    error = None
    try:
        action()
    except Exception as e:  # returned for the caller to check
        error = e
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return error, len(sc.statusTracker().getJobIdsForGroup(group))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("guards") / "w"
    table = paimon_index.create_table(str(root), "db.t", "id BIGINT NOT NULL, s STRING")
    table.write(pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
    return root


def _frame(spark: Any) -> Any:
    return spark.createDataFrame([(3, "c")], "id long, s string")


@pytest.mark.parametrize("name", ["db.t/../../y", "db.../../evil", ".t"])
def test_source_refuses_bad_identifiers_and_touches_nothing(spark, warehouse: Path, name: str) -> None:
    before = tree(warehouse.parent)
    error, started = jobs_started(spark, f"read-{name!r}", lambda: spark.read.format("paimon_index")
                                  .option("warehouse", str(warehouse)).load(name).count())
    assert error is not None and "invalid table identifier" in str(error), error
    assert started == 0
    error, started = jobs_started(spark, f"save-{name!r}", lambda: _frame(spark).write.format("paimon_index")
                                  .option("warehouse", str(warehouse)).mode("append").save(name))
    assert error is not None and "invalid table identifier" in str(error), error
    assert started == 0
    with pytest.raises(InvalidIdentifierError):
        jobs.write(_frame(spark), name, warehouse=str(warehouse))
    assert tree(warehouse.parent) == before
    assert paimon_index.open_table(str(warehouse), "db.t").count() == 2


def test_source_never_writes_a_system_table(spark, warehouse: Path) -> None:
    before = tree(warehouse.parent)
    error, started = jobs_started(spark, "save-system", lambda: _frame(spark).write.format("paimon_index")
                                  .option("warehouse", str(warehouse)).mode("append").save("db.t$snapshots"))
    assert error is not None and "system table" in str(error)
    assert started == 0
    with pytest.raises(InvalidIdentifierError, match="system table"):
        jobs.write(_frame(spark), "db.t$snapshots", warehouse=str(warehouse))
    assert tree(warehouse.parent) == before


def test_write_to_a_missing_table_fails_on_the_driver_naming_the_fix(spark, warehouse: Path) -> None:
    before = tree(warehouse.parent)
    error, started = jobs_started(spark, "jobs-missing",
                                  lambda: jobs.write(_frame(spark), "db.nope", warehouse=str(warehouse)))
    assert isinstance(error, TableNotFoundError)
    message = str(error)
    assert "db.nope" in message and "CREATE TABLE db.nope" in message and "create_table" in message
    assert len(message) < 400
    assert started == 0
    error, started = jobs_started(spark, "save-missing", lambda: _frame(spark).write.format("paimon_index")
                                  .option("warehouse", str(warehouse)).mode("append").save("db.nope"))
    assert error is not None and "TableNotFoundError" in str(error) and "CREATE TABLE db.nope" in str(error)
    assert len(str(error)) < 2000  # Spark adds the Python traceback; it was 17,068 characters
    assert started == 0
    assert tree(warehouse.parent) == before


@pytest.mark.parametrize(("key", "value"), [("bucket", "4"), ("primary-key", "id"),
                                            ("file-index.bloom-filter.columns", "id")])
def test_table_options_on_a_writer_point_to_table_creation(spark, warehouse: Path, key: str,
                                                            value: str) -> None:
    before = tree(warehouse.parent)
    error, started = jobs_started(spark, f"option-{key}", lambda: _frame(spark).write.format("paimon_index")
                                  .option("warehouse", str(warehouse)).option(key, value).mode("append")
                                  .save("db.t"))
    assert error is not None, key
    message = str(error)
    assert TableOptionOnWriterError.__name__ in message
    assert "is a table option" in message and "TBLPROPERTIES" in message and "ALTER TABLE db.t" in message
    assert started == 0
    assert tree(warehouse.parent) == before


@pytest.mark.parametrize("key", ["deletion-vectors.enabled", "merge-engine", "Bucket",
                                 "fields.x.aggregate-function"])
def test_every_paimon_table_option_is_named_as_one(key: str) -> None:
    from paimon_index.spark.options import parse_write_options

    with pytest.raises(TableOptionOnWriterError, match="is a table option"):
        parse_write_options({"warehouse": "/w", "path": "db.t", key: "x"})


def test_an_unknown_write_option_is_still_a_typo_not_a_table_option() -> None:
    from paimon_index.spark.options import parse_write_options

    with pytest.raises(paimon_index.InvalidOptionError, match="unknown write option 'warehous'") as info:
        parse_write_options({"warehouse": "/w", "path": "db.t", "warehous": "x"})
    assert not isinstance(info.value, TableOptionOnWriterError)


# --------------------------------------------------------------------------------------------------
# The reused view: the silent wrong count must be unreachable for users
# --------------------------------------------------------------------------------------------------
FILES, ROWS_PER_FILE = 4, 50


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Four files, each with its own ``k`` values and a bitmap index on ``k``: a pushed ``k = 0``
    prunes three of them."""
    root = str(tmp_path_factory.mktemp("reuse") / "w")
    table = paimon_index.create_table(root, "db.li", "id BIGINT, k INT",
                                      options={"bucket": "-1", "file-index.bitmap.columns": "k"})
    for f in range(FILES):
        ids = range(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE)
        k = pa.array([f] * ROWS_PER_FILE, pa.int32())
        table.write(pa.table({"id": pa.array(ids, pa.int64()), "k": k}))
    return root


def _reused_view(spark: Any, warehouse: str, **options: str) -> tuple[int, int]:
    """The issue's shape: one view, a filtered count, then the full count of the same view."""
    reader = spark.read.format("paimon_index").option("warehouse", warehouse)
    for key, value in options.items():
        reader = reader.option(key, value)
    reader.load("db.li").createOrReplaceTempView("li")
    filtered = spark.sql("SELECT count(*) FROM li WHERE k = 0").first()[0]
    total = spark.sql("SELECT count(*) FROM li").first()[0]
    return filtered, total


def test_the_reused_view_wrong_count_is_unreachable(spark, lineitem: str) -> None:
    right = (ROWS_PER_FILE, FILES * ROWS_PER_FILE)
    assert _reused_view(spark, lineitem) == right
    assert _reused_view(spark, lineitem, **{"filter-pushdown": "auto"}) == right
    assert _reused_view(spark, lineitem, **{"filter-pushdown": "false"}) == right
    if pushdown_safe():
        assert _reused_view(spark, lineitem, **{"filter-pushdown": "true"}) == right
        return
    # Before Spark 4.4 the user option is refused, naming why and the fix ...
    with pytest.raises(Exception, match="filter-pushdown' = 'true' is refused") as info:
        _reused_view(spark, lineitem, **{"filter-pushdown": "TRUE"})
    assert "paimon_index.spark.attach" in str(info.value) and "jobs.read" in str(info.value)
    # ... because this very scenario is wrong with pushdown forced on (what the private key, kept for
    # the project's own one-scan reads, does): the second count reads the first query's pruned plan.
    filtered, total = _reused_view(spark, lineitem, **{SINGLE_SCAN_PUSHDOWN: "true"})
    assert filtered == ROWS_PER_FILE and total != FILES * ROWS_PER_FILE


def test_the_private_pushdown_key_is_not_offered_to_users() -> None:
    from paimon_index.spark.options import parse_read_options

    with pytest.raises(paimon_index.InvalidOptionError) as info:
        parse_read_options({"warehouse": "/w", "path": "db.t", "filter-pushdwn": "true"})
    assert SINGLE_SCAN_PUSHDOWN not in str(info.value) and "filter-pushdown" in str(info.value)


def test_a_spark_catalog_table_over_the_source_points_to_the_noun(spark, warehouse: Path) -> None:
    """``CREATE TABLE x USING paimon_index`` then a query said only "unknown read option 'location'"."""
    try:
        with pytest.raises(Exception, match=r"USING paimon_index\) is not supported.*attach\(spark"):
            spark.sql(f"CREATE TABLE guards_using USING paimon_index OPTIONS (warehouse '{warehouse}', "
                      "path 'db.t')")
            spark.sql("SELECT count(*) FROM guards_using").collect()
    finally:
        spark.sql("DROP TABLE IF EXISTS guards_using")
