"""Spark reads of an evolved table: the current schema, old files mapped by field id.

Before issue 12's fix every Spark read after ``ADD COLUMN`` failed (``KeyError``: an old file has
no such column) and a reused column name returned the old column's values. The reference is Spark
SQL itself over pypaimon's read of the whole table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

from paimon_index.table.write import write_arrow

pytestmark = pytest.mark.spark

ROWS = 400
BIG = 2**33
OPTIONS = {"bucket": "-1", "file-index.bitmap.columns": "k", "file-index.bloom-filter.columns": "v",
           "file-index.range-bitmap.columns": "s", "file-index.in-manifest-threshold": "1kb"}
QUERIES = [
    "k = 'a'",  # a new column under an old name: old files hold NULL, their "k" index is k_old's
    "k IS NULL",
    "k_old = 'b'",  # renamed: old files' index answers by field id
    "note = 'x'",
    "note IS NULL AND s >= 50",
    "v = 7",  # widened INT -> BIGINT: old files' INT Bloom filters are not asked
    f"v >= {BIG}",
]


def _batch(columns: dict[str, pa.DataType], start: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    strings = np.array(["a", "b", "x", None], dtype=object)
    data: dict[str, pa.Array] = {}
    for name, dtype in columns.items():
        if name == "id":
            data[name] = pa.array(np.arange(start, start + ROWS, dtype=np.int64))
        elif pa.types.is_string(dtype):
            data[name] = pa.array(strings[rng.integers(0, len(strings), ROWS)], dtype)
        else:
            values = rng.integers(0, 100, ROWS).astype(object)
            if dtype == pa.int64() and name == "v":
                values[: ROWS // 4] = [BIG + i % 10 for i in range(ROWS // 4)]
            values[rng.random(ROWS) < 0.1] = None
            data[name] = pa.array(list(values), dtype)
    return pa.table(data)


def test_spark_reads_an_evolved_table_like_spark_sql_over_pypaimon(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    before = {"id": pa.int64(), "k": pa.string(), "v": pa.int32(), "s": pa.int32()}
    catalog.create_table("db.t", Schema.from_pyarrow_schema(pa.schema(before), options=OPTIONS), False)
    for start in (0, 1000):
        write_arrow(catalog.get_table("db.t"), _batch(before, start, start))
    catalog.alter_table("db.t", [SchemaChange.rename_column("k", "k_old"),
                                 SchemaChange.add_column("k", AtomicType("STRING")),
                                 SchemaChange.add_column("note", AtomicType("STRING")),
                                 SchemaChange.update_column_type("v", AtomicType("BIGINT"))])
    after = {"id": pa.int64(), "k_old": pa.string(), "v": pa.int64(), "s": pa.int32(), "k": pa.string(),
             "note": pa.string()}
    write_arrow(catalog.get_table("db.t"), _batch(after, 2000, 2))
    # A Spark append in the current schema, too.
    (spark.createDataFrame(_batch(after, 3000, 3).to_pandas(), ", ".join(
        f"{n} {'string' if pa.types.is_string(t) else 'bigint' if t == pa.int64() else 'int'}"
        for n, t in after.items()))
     .write.format("paimon_index").option("warehouse", warehouse).mode("append").save("db.t"))

    table = catalog.get_table("db.t")
    builder = table.new_read_builder()
    truth = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert truth.num_rows == 4 * ROWS
    spark.createDataFrame(truth.to_pandas(), "id bigint, k_old string, v bigint, s int, k string, "
                          "note string").createOrReplaceTempView("truth")

    def load():  # a fresh DataFrame per query (docs/read-path.md)
        return spark.read.format("paimon_index").option("warehouse", warehouse).load("db.t")

    assert load().schema.simpleString() == \
        "struct<id:bigint,k_old:string,v:bigint,s:int,k:string,note:string>"
    everything = sorted(tuple(r) for r in load().collect())
    assert everything == sorted(tuple(r) for r in spark.sql("SELECT * FROM truth").collect())
    for where in QUERIES:
        got = sorted(tuple(r) for r in load().filter(where).collect())
        want = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM truth WHERE {where}").collect())
        assert want, where
        assert got == want, where


@pytest.mark.parametrize("kind", ["append", "pk_dv", "pk_merge_on_read"])
def test_sql_right_after_a_schema_change(spark, tmp_path: Path, kind: str) -> None:
    """A schema change commits no snapshot, so the latest one was written under the old names: the
    read and every change through ``paimon.sql`` must still use today's columns (a primary-key table
    in deletion-vectors mode read back the old names; changes of merge-on-read tables failed).
    Checked against a dict of the rows and Java Paimon's read."""
    import paimon_index.spark
    from javaoracle import java_oracle

    warehouse = str(tmp_path)
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    paimon.sql("CREATE DATABASE db")
    keyed = "" if kind == "append" else "'primary-key' = 'id', 'bucket' = '2', "
    dv = "'false'" if kind == "pk_merge_on_read" else "'true'"
    paimon.sql(f"CREATE TABLE db.t (id BIGINT NOT NULL, u INT, v STRING) TBLPROPERTIES ({keyed}"
               f"'deletion-vectors.enabled' = {dv}, 'file-index.bitmap.columns' = 'v')")
    paimon.sql("INSERT INTO db.t VALUES " + ", ".join(f"({i}, {i}, 'v{i % 3}')" for i in range(30)))
    if kind != "append":
        paimon.sql("CALL sys.compact(table => 'db.t', compact_strategy => 'full')")
    model = {i: (i, i, f"v{i % 3}", None) for i in range(30)}

    def rename(old: str, new: str) -> None:
        paimon.sql(f"ALTER TABLE db.t RENAME COLUMN {old} TO {new}")

    rename("u", "u2")
    paimon.sql("ALTER TABLE db.t ADD COLUMN note STRING")

    def rows() -> list[tuple]:
        return sorted(tuple(r) for r in paimon.sql("SELECT * FROM db.t").collect())

    assert paimon.sql("SELECT * FROM db.t").columns == ["id", "u2", "v", "note"]
    assert rows() == sorted(model.values())
    assert paimon.sql("SELECT count(*) FROM db.t WHERE u2 >= 20").collect()[0][0] == 10
    paimon.sql("UPDATE db.t SET note = 'x' WHERE u2 < 5")
    model = {i: (*r[:3], "x" if r[1] < 5 else r[3]) for i, r in model.items()}
    assert rows() == sorted(model.values())
    rename("u2", "u3")  # again no snapshot before the DELETE
    paimon.sql("DELETE FROM db.t WHERE u3 BETWEEN 10 AND 14")
    model = {i: r for i, r in model.items() if not 10 <= r[1] <= 14}
    assert rows() == sorted(model.values())
    java = java_oracle().batch([{"cmd": "read", "warehouse": warehouse, "table": "db.t", "rows": "true"}])
    assert sorted(tuple(r) for r in java[0]["row_values"]) == sorted(model.values())
