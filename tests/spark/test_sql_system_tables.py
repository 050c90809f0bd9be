"""System tables (db.`t$snapshots`, $files, $options, $schemas, $manifests, $tags, $file_indexes) through
paimon.sql, with the columns (and, on the same warehouse, the rows) of Paimon's connector."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import paimon_index.spark
import paimonsql
from paimon_index.errors import SqlError

pytestmark = pytest.mark.spark

#: Paimon's connector's columns (paimon-sql.sh, Paimon 2.1-SNAPSHOT); $snapshots' ``operation`` is
#: not in pypaimon's snapshot (docs/sql.md).
COLUMNS = {
    "files": [
        "partition",
        "bucket",
        "file_path",
        "file_format",
        "schema_id",
        "level",
        "record_count",
        "file_size_in_bytes",
        "min_key",
        "max_key",
        "null_value_counts",
        "min_value_stats",
        "max_value_stats",
        "min_sequence_number",
        "max_sequence_number",
        "creation_time",
        "deleteRowCount",
        "file_source",
        "first_row_id",
        "write_cols",
    ],
    "options": ["key", "value"],
    "schemas": ["schema_id", "fields", "partition_keys", "primary_keys", "options", "comment", "update_time"],
    "manifests": [
        "file_name",
        "file_size",
        "num_added_files",
        "num_deleted_files",
        "schema_id",
        "min_partition_stats",
        "max_partition_stats",
        "min_row_id",
        "max_row_id",
    ],
    "tags": [
        "tag_name",
        "snapshot_id",
        "schema_id",
        "commit_time",
        "record_count",
        "create_time",
        "time_retained",
    ],
}


@pytest.fixture(scope="module")
def paimon(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path_factory.mktemp("sys") / "w"))
    paimon.sql("CREATE DATABASE db")
    paimon.sql(
        "CREATE TABLE db.t (id INT, s STRING, dt STRING) PARTITIONED BY (dt) TBLPROPERTIES "
        "('bucket' = '-1', 'file-index.bloom-filter.columns' = 's')"
    )
    for i in range(2):
        paimon.table("db.t").write(spark.sql(f"SELECT {i} AS id, 's{i}' AS s, 'd{i}' AS dt"))
    return paimon


@pytest.mark.parametrize("system", sorted(COLUMNS))
def test_columns_as_paimons(paimon: Any, system: str) -> None:
    assert paimon.sql(f"SELECT * FROM db.`t${system}`").columns == COLUMNS[system]


def test_rows(paimon: Any) -> None:
    snapshots = paimon.sql(
        "SELECT snapshot_id, commit_kind, total_record_count FROM db.`t$snapshots`"
    ).collect()
    assert [list(r) for r in snapshots] == [[1, "APPEND", 1], [2, "APPEND", 2]]
    files = paimon.sql(
        "SELECT partition, file_path, min_value_stats, file_source FROM db.`t$files` ORDER BY partition"
    ).collect()
    assert [r[0] for r in files] == ["{d0}", "{d1}"]
    assert files[0][1].startswith(paimon.warehouse) and "/dt=d0/bucket-0/" in files[0][1]
    assert files[0][2] == "{dt=d0, id=0, s=s0}" and files[0][3] == "APPEND"
    indexes = paimon.sql("SELECT column, index_type FROM db.`t$file_indexes`").collect()
    assert {tuple(r) for r in indexes} == {("s", "bloom-filter")}
    with pytest.raises(SqlError, match=r"system table db.t\$nope is not supported; known: db.t\$snapshots"):
        paimon.sql("SELECT * FROM db.`t$nope`")


@pytest.mark.slow
def test_same_rows_as_paimons_connector(paimon: Any) -> None:
    statements = [
        "SELECT partition, bucket, file_path, file_format, schema_id, level, record_count, "
        "file_size_in_bytes, min_key, max_key, null_value_counts, min_value_stats, max_value_stats, "
        "file_source FROM db.`t$files` ORDER BY partition",
        "SELECT * FROM db.`t$options` ORDER BY key",
        "SELECT file_name, file_size, num_added_files, num_deleted_files, schema_id, min_partition_stats, "
        "max_partition_stats FROM db.`t$manifests` ORDER BY file_name",
        "SELECT snapshot_id, schema_id, commit_user, commit_kind, total_record_count, delta_record_count "
        "FROM db.`t$snapshots`",
    ]
    theirs = paimonsql.run(Path(paimon.warehouse), statements)
    for statement, reference in zip(statements, theirs, strict=True):
        assert reference["ok"], reference
        assert [list(r) for r in paimon.sql(statement).collect()] == reference["rows"], statement
