"""Time travel through the planned read (``jobs.read(snapshot_id=N)``) on an evolved table.

The rule (docs/semantics.md, Java's ``AbstractFileStoreTable.tryTimeTravel``): an older snapshot is
read under *that snapshot's* schema. References: pypaimon's read of the pinned table, Java Paimon's
(the oracle, ``--snapshot N``) and ``Table.read(snapshot_id=N)``; the ``paimon_index`` source with
``scan.snapshot-id`` (the planned read's fallback) must agree too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

import paimon_index
from javaoracle import java_oracle
from paimon_index.errors import TableError
from paimon_index.spark import jobs
from paimon_index.table.catalog import create_table
from paimon_index.table.paimon import arrow_schema
from paimon_index.table.write import write_arrow

pytestmark = pytest.mark.spark


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_old_snapshot_reads_under_its_own_schema(spark: Any, tmp_path: Path) -> None:
    w = str(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("f", pa.float32())])
    t = create_table(w, "db.e", schema, options={"bucket": "-1", "file-index.bloom-filter.columns": "id"})
    write_arrow(t, pa.table({"id": [1, 2, 3], "k": pa.array([10, 20, None], pa.int32()),
                             "f": pa.array([1.5, None, -0.0], pa.float32())}, schema=schema))
    catalog = CatalogFactory.create({"warehouse": w})
    catalog.alter_table("db.e", [SchemaChange.rename_column("k", "kk"),
                                 SchemaChange.update_column_type("kk", AtomicType("BIGINT")),
                                 SchemaChange.update_column_type("f", AtomicType("DOUBLE")),
                                 SchemaChange.add_column("note", AtomicType("STRING"))])
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
