"""TPC-H data (``tpchgen-cli``) loaded into Paimon tables with file indexes and deletion vectors.

    generate(scale, out)          the eight tables as Parquet files (tpchgen-cli), cached in ``out``
    load(warehouse, parquet_dir)  ``tpch.<table>`` in ``warehouse`` by the Python API, then deletes and
                                  an upsert, so deletion vectors are live on append and primary-key tables

Table layouts (every table ``deletion-vectors.enabled``; indexes: bloom on keys, bitmap on
flags/status, range-bitmap on dates/prices)::

    lineitem  append, bucket -1, FILES files   bloom l_orderkey,l_partkey,l_suppkey;
              bitmap l_returnflag,l_linestatus,l_shipmode,l_shipinstruct;
              range-bitmap l_shipdate,l_commitdate,l_receiptdate,l_extendedprice,l_discount,l_quantity
    orders    primary key o_orderkey, 2 buckets  bloom o_custkey; bitmap o_orderstatus,o_orderpriority;
              range-bitmap o_orderdate,o_totalprice
    customer  primary key c_custkey, 1 bucket    bloom c_nationkey; bitmap c_mktsegment;
              range-bitmap c_acctbal
    partsupp  primary key (ps_partkey, ps_suppkey), 2 buckets   range-bitmap ps_supplycost,ps_availqty
    part      append    bloom p_partkey; bitmap p_brand,p_container,p_size; range-bitmap p_retailprice
    supplier  append    bloom s_suppkey; bitmap s_nationkey; range-bitmap s_acctbal
    nation, region  append   bitmap n_name / r_name

Changes after the load (each one snapshot): DELETE on lineitem, orders and part; an upsert of 5% of
the customers with a changed balance (old rows deleted by deletion vectors).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import paimon_index

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
DATABASE = "tpch"
#: lineitem is written in this many Table.write calls (files), ordered by l_orderkey.
FILES = 4
DV = {"deletion-vectors.enabled": "true"}
LAYOUT: dict[str, dict[str, object]] = {
    "lineitem": {"options": {"bucket": "-1", **DV,
                             "file-index.bloom-filter.columns": "l_orderkey,l_partkey,l_suppkey",
                             "file-index.bitmap.columns":
                                 "l_returnflag,l_linestatus,l_shipmode,l_shipinstruct",
                             "file-index.range-bitmap.columns":
                                 "l_shipdate,l_commitdate,l_receiptdate,l_extendedprice,l_discount,l_quantity"}},
    "orders": {"primary_keys": ["o_orderkey"],
               "options": {"bucket": "2", **DV, "file-index.bloom-filter.columns": "o_custkey",
                           "file-index.bitmap.columns": "o_orderstatus,o_orderpriority",
                           "file-index.range-bitmap.columns": "o_orderdate,o_totalprice"}},
    "customer": {"primary_keys": ["c_custkey"],
                 "options": {"bucket": "1", **DV, "file-index.bloom-filter.columns": "c_nationkey",
                             "file-index.bitmap.columns": "c_mktsegment",
                             "file-index.range-bitmap.columns": "c_acctbal"}},
    "partsupp": {"primary_keys": ["ps_partkey", "ps_suppkey"],
                 "options": {"bucket": "2", **DV,
                             "file-index.range-bitmap.columns": "ps_supplycost,ps_availqty"}},
    "part": {"options": {"bucket": "-1", **DV, "file-index.bloom-filter.columns": "p_partkey",
                         "file-index.bitmap.columns": "p_brand,p_container,p_size",
                         "file-index.range-bitmap.columns": "p_retailprice"}},
    "supplier": {"options": {"bucket": "-1", **DV, "file-index.bloom-filter.columns": "s_suppkey",
                             "file-index.bitmap.columns": "s_nationkey",
                             "file-index.range-bitmap.columns": "s_acctbal"}},
    "nation": {"options": {"bucket": "-1", **DV, "file-index.bitmap.columns": "n_name"}},
    "region": {"options": {"bucket": "-1", **DV, "file-index.bitmap.columns": "r_name"}},
}
#: The deletes applied after the load (Table.delete's WHERE text), one snapshot each.
DELETES = {
    "lineitem": "l_shipmode = 'REG AIR' AND l_quantity < 3",
    "orders": "o_orderpriority = '5-LOW' AND o_totalprice < 20000",
    "part": "p_size = 1 AND p_container = 'SM PKG'",
}


def tpchgen() -> str:
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    if not Path(exe).exists():
        raise FileNotFoundError("tpchgen-cli is not installed (pip install tpchgen-cli; the 'test' extra)")
    return exe


def generate(scale: float, out: Path) -> Path:
    """The eight TPC-H tables at ``scale`` as ``out/<table>.parquet`` (kept when already there)."""
    out.mkdir(parents=True, exist_ok=True)
    if all((out / f"{t}.parquet").exists() for t in TABLES):
        return out
    subprocess.run([tpchgen(), "parquet", "-s", str(scale), f"--output-dir={out}"], check=True,
                   capture_output=True)
    return out


def _nullable(rows: pa.Table) -> pa.Table:
    """tpchgen marks every column NOT NULL; Paimon's catalogs (and Spark's INSERT) keep columns
    nullable unless they are keys, so the tables are created that way."""
    return rows.cast(pa.schema([f.with_nullable(True).remove_metadata() for f in rows.schema]))


def load(warehouse: str | Path, parquet_dir: Path, *, changes: bool = True) -> dict[str, int]:
    """Create ``tpch.*`` in ``warehouse`` from ``parquet_dir`` (see the module docstring); the row
    count of each table after the changes."""
    counts: dict[str, int] = {}
    for name in TABLES:
        rows = _nullable(pq.read_table(parquet_dir / f"{name}.parquet"))
        layout = LAYOUT[name]
        keys = list(layout.get("primary_keys", []))  # type: ignore[call-overload]
        if keys:
            fields = [f.with_nullable(False) if f.name in keys else f for f in rows.schema]
            rows = rows.cast(pa.schema(fields))
        table = paimon_index.create_table(str(warehouse), f"{DATABASE}.{name}", rows.schema,
                                          primary_keys=keys, options=layout["options"])  # type: ignore[arg-type]
        parts = FILES if name == "lineitem" else 1
        step = -(-rows.num_rows // parts)
        for i in range(parts):
            table.write(rows.slice(i * step, step))
        counts[name] = rows.num_rows
    if changes:
        for name, where in DELETES.items():
            t = paimon_index.open_table(str(warehouse), f"{DATABASE}.{name}")
            counts[name] -= t.delete(where).rows_affected
        customer = pq.read_table(parquet_dir / "customer.parquet")
        changed = customer.filter(pc.equal(pc.bit_wise_and(customer["c_custkey"], 31), 7))
        bal = pc.add(changed["c_acctbal"], pa.scalar(100, changed["c_acctbal"].type))
        changed = changed.set_column(changed.schema.get_field_index("c_acctbal"), "c_acctbal",
                                     bal.cast(changed["c_acctbal"].type))
        t = paimon_index.open_table(str(warehouse), f"{DATABASE}.customer")
        t.write(changed.cast(t.schema))
    return counts


def write_parquet(warehouse: str | Path, out: Path) -> Path:
    """Each ``tpch`` table's live rows as one plain Parquet file ``out/<table>.parquet`` (the
    benchmark's ``spark.read.parquet`` reference)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        rows = paimon_index.open_table(str(warehouse), f"{DATABASE}.{name}").read()
        pq.write_table(rows, out / f"{name}.parquet")
    return out
