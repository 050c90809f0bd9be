"""The ``shapes`` database: small tables with every index kind and the awkward values, for the
differential query shapes (``shapes.sql``) and the DML sequences (``dml.sql``).

    shapes.a   append, bucket -1, 3 files, deletion vectors, then a DELETE
    shapes.k   primary key ``id``, 2 buckets, deletion vectors, then an upsert and a DELETE
    shapes.p   append, partitioned by ``region``, deletion vectors, then a DELETE
    shapes.dim a small dimension table (``c`` -> ``label``) for joins, unindexed

Columns of a/k/p: ``id BIGINT`` (bloom), ``c INT`` (bitmap; NULLs), ``s STRING`` (bitmap; NULLs),
``b BOOLEAN`` (bitmap), ``d DOUBLE`` (range-bitmap; NaN, +-0.0, +-Infinity, NULL),
``dec DECIMAL(10, 2)`` (range-bitmap; NULLs), ``dt DATE`` (range-bitmap), ``n BIGINT`` (unindexed).
"""

from __future__ import annotations

import datetime
import decimal
import math
from pathlib import Path

import pyarrow as pa

import paimon_index

DATABASE = "shapes"
FILES = 3
ROWS_PER_FILE = 40
INDEXES = {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "c,s,b",
           "file-index.range-bitmap.columns": "d,dec,dt"}
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("c", pa.int32()), ("s", pa.string()), ("b", pa.bool_()),
    ("d", pa.float64()), ("dec", pa.decimal128(10, 2)), ("dt", pa.date32()), ("n", pa.int64())])
SPECIAL_DOUBLES = (math.nan, -0.0, 0.0, math.inf, -math.inf, None)
WORDS = ("apple", "banana", "cherry", "date", None, "Apple", "")


def rows(file: int, *, offset: int = 0) -> pa.Table:
    """File ``file``'s rows: ids ``file * ROWS_PER_FILE + i (+ offset)``; each file its own range of
    ``c`` and ``dt`` (so statistics and indexes skip files), special values spread over all files."""
    data: dict[str, list[object]] = {k: [] for k in SCHEMA.names}
    for i in range(ROWS_PER_FILE):
        r = file * ROWS_PER_FILE + i
        data["id"].append(r + offset)
        data["c"].append(None if i % 11 == 5 else file * 10 + i % 10)
        data["s"].append(WORDS[(r * 3) % len(WORDS)])
        data["b"].append(None if i % 13 == 7 else bool(i % 2))
        data["d"].append(SPECIAL_DOUBLES[r % len(SPECIAL_DOUBLES)] if i % 4 == 0 else (r - 50) * 1.25)
        data["dec"].append(None if i % 9 == 4 else decimal.Decimal(f"{(r * 37) % 1000 - 500}.{r % 100:02d}"))
        data["dt"].append(datetime.date(2024, 1 + file, 1) + datetime.timedelta(days=i))
        data["n"].append(None if i % 17 == 3 else (r * 7919) % 97)
    return pa.table(data, schema=SCHEMA)


def dim() -> pa.Table:
    return pa.table({"c": pa.array([*range(0, 30, 2), 99, None], pa.int32()),
                     "label": [f"L{i}" for i in range(0, 30, 2)] + ["ninety-nine", "null-c"]})


def load(warehouse: str | Path) -> None:
    """Create and fill the ``shapes`` tables in ``warehouse`` (see the module docstring)."""
    w = str(warehouse)
    dv = {"deletion-vectors.enabled": "true"}
    a = paimon_index.create_table(w, f"{DATABASE}.a", SCHEMA, options={"bucket": "-1", **dv, **INDEXES})
    for f in range(FILES):
        a.write(rows(f))
    a.delete("c = 3 OR s = 'date'")

    k = paimon_index.create_table(w, f"{DATABASE}.k", SCHEMA, primary_keys=["id"],
                                  options={"bucket": "2", **dv, **INDEXES})
    for f in range(FILES):
        k.write(rows(f))
    upsert = rows(1).slice(0, 15)
    upsert = upsert.set_column(upsert.schema.get_field_index("n"), "n",
                               pa.array([1000 + i for i in range(upsert.num_rows)], pa.int64()))
    k.write(upsert)
    k.delete("c = 21 OR id = 7")

    p_schema = SCHEMA.append(pa.field("region", pa.string(), nullable=False))
    p = paimon_index.create_table(w, f"{DATABASE}.p", p_schema, partition_keys=["region"],
                                  options={"bucket": "-1", **dv, **INDEXES})
    for f in range(FILES):
        r = rows(f)
        p.write(r.append_column("region", pa.array([("eu", "us")[i % 2] for i in range(r.num_rows)])))
    p.delete("region = 'us' AND c = 13")

    d = paimon_index.create_table(w, f"{DATABASE}.dim", dim().schema, options={"bucket": "-1"})
    d.write(dim())
