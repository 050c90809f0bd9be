"""``row_group_may_match``: a row group is ruled out only when its footer statistics prove it.

Reference: the rows themselves -- every row group holding a row the predicate keeps (Spark's
semantics, :mod:`paimon_index.arrow_filter`) must be kept.
"""

from __future__ import annotations

import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.sql import bind_predicate
from paimon_index.table.stats import row_group_may_match
from paimon_index.types import parse_type

NAN = float("nan")
GROUPS = [  # one row group each
    {"d": [1.0, NAN], "s": ["a", "b"], "m": ["1.50", "2.00"]},   # NaN hides above the footer's max
    {"d": [5.0, -0.0], "s": ["c", None], "m": ["-3.25", None]},
    {"d": [None, None], "s": [None, None], "m": [None, None]},   # all NULL
    {"d": [NAN, NAN], "s": ["zz", "zz"], "m": ["9.99", "9.99"]},  # only NaN: no footer min/max
]
TYPES = {"d": parse_type("DOUBLE"), "s": parse_type("STRING"), "m": parse_type("DECIMAL(5, 2)")}


def _file(tmp_path: Path) -> pq.ParquetFile:
    tables = [pa.table({"d": pa.array(g["d"], pa.float64()), "s": pa.array(g["s"], pa.string()),
                        "m": pa.array([None if v is None else decimal.Decimal(v) for v in g["m"]],
                                      pa.decimal128(5, 2))}) for g in GROUPS]
    path = tmp_path / "f.parquet"
    with pq.ParquetWriter(path, tables[0].schema) as writer:
        for t in tables:
            writer.write_table(t)
    return pq.ParquetFile(path)


def test_kept_groups_hold_every_match(tmp_path: Path) -> None:
    parquet = _file(tmp_path)
    assert parquet.metadata.num_row_groups == len(GROUPS)
    wheres = {"d > 10": [0, 3], "d = 'NaN'": [0, 3], "d = 0.0": [1], "d < 2": [0, 1], "d IS NULL": [2],
              "s = 'c'": [1], "s > 'b'": [1, 3], "s IS NOT NULL": [0, 1, 3], "m = 2.00": [0],
              "m < 0": [1], "d > 4 OR s = 'a'": [0, 1, 3], "d IN (5.0, 7.0)": [1]}
    for where, holding in wheres.items():
        bound = bind_predicate(where, TYPES)
        kept = [g for g in range(len(GROUPS)) if row_group_may_match(parquet, g, bound, TYPES)]
        matching = [g for g in range(len(GROUPS))
                    if parquet.read_row_group(g).filter(to_arrow_expression(bound, TYPES)).num_rows]
        assert matching == holding, where  # the reference itself, checked
        assert set(holding) <= set(kept), where
    # what statistics do prove
    # (a float max is never trusted: "d > 10" cannot rule out group 1)
    for where, ruled_out in {"d > 10": [2], "s = 'c'": [0, 2, 3], "m < 0": [0, 2, 3], "d < 2": [2]}.items():
        bound = bind_predicate(where, TYPES)
        assert not any(row_group_may_match(parquet, g, bound, TYPES) for g in ruled_out), where
