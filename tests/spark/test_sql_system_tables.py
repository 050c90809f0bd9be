"""System tables (db.`t$snapshots`, $files, $options, $schemas, $manifests, $tags, $file_indexes,
$partitions, $buckets, $table_indexes, $branches, $ro, $audit_log) through paimon.sql, with the
columns (and, on the same warehouse, the rows) of Paimon's connector."""

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


#: Tables whose partitions and buckets the listing tables add up: NULL, boolean and date partition
#: values, deletion vectors, fixed and dynamic buckets, no partition, no snapshot.
LISTED = [
    "CREATE TABLE db.m (id BIGINT, s STRING, d DATE, b BOOLEAN, i INT) PARTITIONED BY (d, b, i) "
    "TBLPROPERTIES ('bucket' = '2', 'bucket-key' = 'id', 'deletion-vectors.enabled' = 'true')",
    "INSERT INTO db.m VALUES (1, 'a', DATE'2024-01-02', true, 5), (2, 'b', NULL, false, NULL), "
    "(3, 'c', DATE'2024-01-02', true, 5)",
    "INSERT INTO db.m VALUES (4, 'd', NULL, false, NULL), (5, 'e', DATE'2024-01-02', true, 5)",
    "DELETE FROM db.m WHERE id IN (1, 4)",
    "CREATE TABLE db.k (id BIGINT NOT NULL, v INT, p INT NOT NULL) PARTITIONED BY (p) "
    "TBLPROPERTIES ('primary-key' = 'id,p', 'bucket' = '2', 'deletion-vectors.enabled' = 'true')",
    "INSERT INTO db.k VALUES (1, 1, 1), (2, 2, 1), (3, 3, 2)",
    "INSERT INTO db.k VALUES (1, 10, 1)",
    "CREATE TABLE db.h (id BIGINT NOT NULL, v INT) "
    "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '-1', 'deletion-vectors.enabled' = 'true')",
    "INSERT INTO db.h VALUES (1, 1), (2, 2)",
    "INSERT INTO db.h VALUES (2, 20), (3, 3)",
    "CREATE TABLE db.e (id BIGINT)",
    "CREATE TABLE db.r (id BIGINT NOT NULL, v INT) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')",
    "INSERT INTO db.r VALUES (1, 1), (2, 2)",
    "UPDATE db.r SET v = 20 WHERE id = 2",
    # FLOAT partition values left out: Java 17's Float.toString prints 3.5E10f as 3.5000001E10
    # (not the shortest digits, as Java 19+ and paimon-index do; docs/sql.md)
    "CREATE TABLE db.f (id BIGINT, x DOUBLE, y DECIMAL(5, 2), ts TIMESTAMP_NTZ, lt TIMESTAMP) "
    "PARTITIONED BY (x, y, ts, lt)",
    "INSERT INTO db.f VALUES (1, 1.0E7, 1.5, TIMESTAMP_NTZ'2024-01-02 03:04:05', "
    "TIMESTAMP'2024-01-02 03:04:05.123'), (2, 0.0001, -2, TIMESTAMP_NTZ'2024-01-02 03:04:05.5', NULL), "
    "(3, 123.25, 0, NULL, NULL), (4, -0.0, 1, NULL, NULL), (5, 1.0E22, 1, NULL, NULL)",
]
LISTING = [
    f"SELECT * FROM db.`{table}${system}`" for table in ("m", "k", "h", "e")
    for system in ("partitions", "buckets", "table_indexes")
] + [
    "SELECT partition, bucket, record_count FROM db.`m$files` ORDER BY partition, bucket, record_count",
    "SHOW PARTITIONS db.m",
    "SHOW PARTITIONS db.m PARTITION (b = false)",
    "SELECT partition FROM db.`f$files` ORDER BY partition",
    "SELECT * FROM db.`m$branches`",
]


def _listed(paimon: Any) -> None:
    paimon.sql("CREATE DATABASE IF NOT EXISTS db")
    for statement in LISTED:
        paimon.sql(statement)


def test_listing_tables_spell_partitions_as_paimon_does(spark: Any, tmp_path: Path) -> None:
    """$partitions spells a partition ``k=v/...`` with NULL as ``partition.default-name``; $buckets,
    $table_indexes and $files ``{v1, v2}`` with NULL as ``null``; values as Paimon casts them to
    STRING (``true``, not Python's ``True``). SHOW PARTITIONS printed ``b=True/i=None`` before."""
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path))
    _listed(paimon)
    partitions = [list(r) for r in paimon.sql(
        "SELECT partition, record_count, file_count, total_buckets, deleted_record_count "
        "FROM db.`m$partitions`").collect()]
    assert partitions == [["d=2024-01-02/b=true/i=5", 3, 3, 2, 1],
                          ["d=__DEFAULT_PARTITION__/b=false/i=__DEFAULT_PARTITION__", 2, 2, 2, 1]]
    buckets = {r[0] for r in paimon.sql("SELECT partition FROM db.`m$buckets`").collect()}
    assert buckets == {"{2024-01-02, true, 5}", "{null, false, null}"}
    assert [r[0] for r in paimon.sql("SHOW PARTITIONS db.m").collect()] == [
        "d=2024-01-02/b=true/i=5", "d=null/b=false/i=null"]
    indexes = paimon.sql("SELECT index_type, count(*) FROM db.`h$table_indexes` GROUP BY index_type")
    indexes = indexes.collect()
    assert dict((r[0], r[1]) for r in indexes) == {"DELETION_VECTORS": 1, "HASH": 2}
    assert paimon.sql("SELECT * FROM db.`e$partitions`").count() == 0


@pytest.mark.slow
def test_listing_tables_answer_as_paimons_connector(spark: Any, tmp_path: Path) -> None:
    """The same warehouse listed by Paimon's connector (a branch it creates first included)."""
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path))
    _listed(paimon)
    theirs = paimonsql.run(tmp_path, ["CALL sys.create_branch('db.m', 'br1')", *LISTING])
    assert theirs[0]["ok"], theirs[0]
    for statement, reference in zip(LISTING, theirs[1:], strict=True):
        assert reference["ok"], reference
        ours = paimon.sql(statement)
        assert ours.columns == reference["columns"], statement
        got = [[str(v) if hasattr(v, "isoformat") else (v.asDict() if hasattr(v, "asDict") else v) for v in r]
               for r in ours.collect()]
        got = [[[x.asDict() for x in v] if isinstance(v, list) else v for v in r] for r in got]
        assert got == reference["rows"], statement


#: Primary-key tables with and without deletion vectors and an append table, changed by INSERT,
#: UPDATE and DELETE: what ``t$ro`` (the top level) and ``t$audit_log`` (rows with their kinds) show.
CHANGED = [
    "CREATE TABLE db.t (id BIGINT NOT NULL, v INT) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1', "
    "'deletion-vectors.enabled' = 'true')",
    "CREATE TABLE db.n (id BIGINT NOT NULL, v INT) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')",
    "CREATE TABLE db.a (id BIGINT, v INT)",
    "INSERT INTO db.t VALUES (1, 1), (2, 2), (3, 3)",
    "INSERT INTO db.n VALUES (1, 1), (2, 2), (3, 3)",
    "INSERT INTO db.a VALUES (1, 1), (2, 2)",
    "UPDATE db.t SET v = 20 WHERE id = 2",
    "UPDATE db.n SET v = 20 WHERE id = 2",
    "DELETE FROM db.t WHERE id = 3",
    "DELETE FROM db.n WHERE id = 3",
    "INSERT INTO db.t VALUES (4, 4)",
    "INSERT INTO db.n VALUES (4, 4)",
]
READ_BY_KIND = [
    f"SELECT * FROM db.`{table}${system}` ORDER BY id"
    for table in ("t", "n", "a") for system in ("ro", "audit_log")
] + ["SELECT rowkind, count(*) FROM db.`n$audit_log` GROUP BY rowkind ORDER BY rowkind",
     "SELECT count(*) FROM db.`t$ro`", "SELECT id FROM db.`n$audit_log` WHERE rowkind = '-D'"]
#: Their columns, as DESCRIBE and SHOW COLUMNS list them (both refused a system table before).
DESCRIBED = ["DESCRIBE db.`t$audit_log`", "SHOW COLUMNS IN db.`n$ro`", "DESCRIBE db.`a$schemas`"]


def _rows(df: Any) -> list[list[Any]]:
    return [list(r) for r in df.collect()]


def test_read_optimized_and_audit_log(spark: Any, tmp_path: Path) -> None:
    """``t$ro`` is a primary-key table's top level read as it is: a bucket's first write goes there
    (as Java's first compaction writes it), later changes go below until a full compaction.
    ``t$audit_log`` is each row with its kind: an UPDATE's rows are ``+U`` (as Java's UPDATE writes
    them) and keep it through a compaction; a table without vectors shows a deleted key as its
    ``-D`` row until a compaction drops it; an append table's rows are ``+I``."""
    paimon = paimon_index.spark.attach(spark, warehouse=str(tmp_path))
    paimon.sql("CREATE DATABASE db")
    for statement in CHANGED[:6]:
        paimon.sql(statement)
    assert _rows(paimon.sql("SELECT * FROM db.`t$ro` ORDER BY id")) == [[1, 1], [2, 2], [3, 3]]
    assert _rows(paimon.sql("SELECT * FROM db.`n$ro`")) == []  # level-0 files, as Java's writer leaves them
    for statement in CHANGED[6:]:
        paimon.sql(statement)
    t_ro, t_audit, n_ro, n_audit, a_ro, a_audit, kinds, count, deleted = \
        [_rows(paimon.sql(s)) for s in READ_BY_KIND]
    assert t_ro == [[1, 1]] and count == [[1]]  # 2's new version and 4 went below the top
    assert t_audit == [["+I", 1, 1], ["+U", 2, 20], ["+I", 4, 4]]
    assert n_ro == []
    assert n_audit == [["+I", 1, 1], ["+U", 2, 20], ["-D", 3, 3], ["+I", 4, 4]]
    assert kinds == [["+I", 2], ["+U", 1], ["-D", 1]] and deleted == [[3]]
    assert a_ro == [[1, 1], [2, 2]] and a_audit == [["+I", 1, 1], ["+I", 2, 2]]
    assert paimon.sql("SELECT * FROM db.`t$audit_log`").columns == ["rowkind", "id", "v"]
    # Time travel: the snapshot of the first INSERT.
    assert _rows(paimon.sql("SELECT * FROM db.`n$audit_log` VERSION AS OF 1 ORDER BY id")) == [
        ["+I", 1, 1], ["+I", 2, 2], ["+I", 3, 3]]
    for table in ("t", "n"):
        paimon.sql(f"CALL sys.compact(table => 'db.{table}', compact_strategy => 'full')")
        assert _rows(paimon.sql(f"SELECT * FROM db.`{table}$ro` ORDER BY id")) == [[1, 1], [2, 20], [4, 4]]
        assert _rows(paimon.sql(f"SELECT * FROM db.`{table}$audit_log` ORDER BY id")) == [
            ["+I", 1, 1], ["+U", 2, 20], ["+I", 4, 4]], table
    with pytest.raises(SqlError, match="system tables are read-only"):
        paimon.sql("INSERT INTO db.`t$ro` VALUES (9, 9)")
    with pytest.raises(SqlError, match="system tables are read-only"):
        paimon.sql("DELETE FROM db.`n$audit_log` WHERE id = 1")
    audit, top, schemas = [_rows(paimon.sql(s)) for s in DESCRIBED]
    assert audit == [["rowkind", "string", None], ["id", "bigint", None], ["v", "int", None]]
    assert top == [["id"], ["v"]] and ["update_time", "timestamp_ntz", None] in schemas
    with pytest.raises(SqlError, match=r"DESCRIBE EXTENDED of the system table db.t\$ro is not supported"):
        paimon.sql("DESCRIBE EXTENDED db.`t$ro`")
    # The noun's verbs are a table's; a system table is read in SQL (this said "table not found").
    with pytest.raises(SqlError, match=r"db.t\$ro is a system table.*SELECT \* FROM db.`t\$ro`"):
        paimon.table("db.t$ro")


@pytest.mark.slow
def test_read_optimized_and_audit_log_answer_as_paimons_connector(spark: Any, tmp_path: Path) -> None:
    """Paimon's connector reading our tables' ``t$ro`` and ``t$audit_log`` gives our rows (both
    follow the files, so the same warehouse must give the same answer); running the same statements
    on its own copy gives the same audit logs (its ``t$ro`` there differs: its compactions place
    files elsewhere, see docs/sql.md)."""
    ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
    paimon = paimon_index.spark.attach(spark, warehouse=str(ours_dir))
    paimon.sql("CREATE DATABASE db")
    for statement in CHANGED:
        paimon.sql(statement)
    reads = [*READ_BY_KIND, *DESCRIBED]
    on_ours = paimonsql.run(ours_dir, reads)
    on_theirs = paimonsql.run(theirs_dir, ["CREATE DATABASE db", *CHANGED, *reads])[1 + len(CHANGED):]
    for statement, same_files, own_copy in zip(reads, on_ours, on_theirs, strict=True):
        ours = paimon.sql(statement)
        assert same_files["ok"] and own_copy["ok"], (same_files, own_copy)
        assert ours.columns == same_files["columns"], statement
        assert _rows(ours) == same_files["rows"], statement
        if "$audit_log" in statement or "db.`a$" in statement or statement.startswith(("DESCRIBE", "SHOW")):
            assert _rows(ours) == own_copy["rows"], statement
