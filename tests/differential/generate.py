"""Random Paimon tables for the differential suite, and their materialization.

    spec = generate_table(random.Random(seed))         # the plain seeded generator (CI)
    tables()                                           # the same generator as a hypothesis strategy
    made = materialize(spec, tmp_dir)                  # a paimon_index table + a Parquet copy

A :class:`TableSpec` is plain data: the columns (every type an index supports, an unindexed
``id``/``u``, optionally nested STRUCT/ARRAY/MAP columns), the ``file-index.*`` options chosen per
column among the index types that accept its type, partitioning, bucketing, deletion vectors, the
appended batches and the deletes between them (by ``id``, which is unique and unindexed, so what a
delete removes never depends on the code under test). Values are biased to edge cases: NULL, NaN,
±0.0, ±Inf, the integer extremes, empty and non-ASCII strings, DECIMAL(10,2) and (38,10) extremes,
dates and timestamps before 1970 (not before 1900: Parquet readers rebase older dates).

:func:`materialize` writes the table with ``paimon_index`` (create_table, one write_arrow per batch,
delete_arrow between them) and the live rows (after the deletes) to ``<dir>/parquet`` with plain
pyarrow, the reference Spark reads with ``spark.read.parquet``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "COLUMNS",
    "IDENTIFIER",
    "Column",
    "Materialized",
    "TableSpec",
    "generate_table",
    "materialize",
    "tables",
]

IDENTIFIER = "db.t"
ID = "id"
PARTITION = "p"
UNINDEXED = "u"
NESTED = ("st", "arr", "m")
#: Index types per column kind, as the builders accept them (range-bitmap: DECIMAL precision <= 18).
BLOOM, BITMAP, RANGE, BSI = "bloom-filter", "bitmap", "range-bitmap", "bsi"
MAX_ROWS_PER_BATCH = 40
MAX_BATCHES = 4


@dataclass(frozen=True)
class Column:
    """One scalar column: name, Paimon/Spark type text, Arrow type, kind and index types it takes."""

    name: str
    sql_type: str
    arrow: pa.DataType
    kind: str  # int, float, decimal, string, bool, date, ts
    index_types: tuple[str, ...]
    edges: tuple[Any, ...]
    random_value: Callable[[random.Random], Any]


def _d(text: str) -> decimal.Decimal:
    return decimal.Decimal(text)


def _f32(x: float) -> float:
    import numpy as np

    return float(np.float32(x))


_INT_INDEXES = (BLOOM, BITMAP, RANGE, BSI)
_EPOCH = dt.datetime(1970, 1, 1)
_STRING_ALPHABET = "abB é日😀"

COLUMNS: tuple[Column, ...] = (
    Column("ti", "TINYINT", pa.int8(), "int", _INT_INDEXES, (-128, 127, 0, -1, 1, 2, 3),
           lambda r: r.randint(-5, 10)),
    Column("si", "SMALLINT", pa.int16(), "int", _INT_INDEXES, (-32768, 32767, 0, -1, 1, 2, 1000),
           lambda r: r.randint(-5, 10)),
    Column("i", "INT", pa.int32(), "int", _INT_INDEXES, (-2**31, 2**31 - 1, 0, -1, 1, 2, 100_000),
           lambda r: r.randint(-5, 10)),
    # Long.MIN_VALUE is left out: the BSI format cannot store it (Paimon's writer fails as well).
    Column("bi", "BIGINT", pa.int64(), "int", _INT_INDEXES, (-2**63 + 1, 2**63 - 1, 0, -1, 1, 2**40),
           lambda r: r.randint(-5, 10)),
    Column("f", "FLOAT", pa.float32(), "float", (BLOOM, BITMAP, RANGE),
           (float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.5, -2.25, 3.0, _f32(3.4e38)),
           lambda r: r.choice((0.5, 1.0, 2.0, -1.0, 1024.75))),
    Column("d", "DOUBLE", pa.float64(), "float", (BLOOM, BITMAP, RANGE),
           (float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.5, -2.25, 0.1, 1e300, 5e-324),
           lambda r: r.choice((0.5, 1.0, 2.0, -1.0, 3.0))),
    Column("dec10", "DECIMAL(10, 2)", pa.decimal128(10, 2), "decimal", (RANGE, BSI),
           (_d("0.00"), _d("-0.01"), _d("0.01"), _d("99999999.99"), _d("-99999999.99"), _d("12.34")),
           lambda r: decimal.Decimal(r.randint(-500, 500)).scaleb(-2)),
    # No index type takes DECIMAL(38, 10) (BSI and range-bitmap need a compact decimal): unindexed.
    Column("dec38", "DECIMAL(38, 10)", pa.decimal128(38, 10), "decimal", (),
           (_d("0E-10"), _d("1234567890123456789012345678.1234567890"),
            _d("-1234567890123456789012345678.1234567890"), _d("0.0000000001"), _d("-0.0000000001"),
            _d("1.5000000000")),
           lambda r: decimal.Decimal(r.randint(-500, 500)).scaleb(-1).quantize(_d("1E-10"))),
    Column("s", "STRING", pa.string(), "string", (BLOOM, BITMAP, RANGE),
           ("", "a", "ab", "abc", "B", "é", "éa", "日本", "日本語", "😀", " a", "NaN"),
           lambda r: "".join(r.choice(_STRING_ALPHABET) for _ in range(r.randint(0, 3)))),
    Column("b", "BOOLEAN", pa.bool_(), "bool", (BITMAP, RANGE), (True, False),
           lambda r: r.random() < 0.5),
    Column("dt", "DATE", pa.date32(), "date", (BLOOM, BITMAP, RANGE, BSI),
           (dt.date(1900, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(1970, 1, 2),
            dt.date(2000, 2, 29), dt.date(9999, 12, 31)),
           lambda r: dt.date(1969, 12, 25) + dt.timedelta(days=r.randint(0, 14))),
    Column("ts", "TIMESTAMP", pa.timestamp("us"), "ts", (BLOOM, BITMAP, RANGE, BSI),
           (dt.datetime(1969, 12, 31, 23, 59, 59, 999_999), _EPOCH, dt.datetime(1900, 1, 1, 0, 0, 0, 500_000),
            dt.datetime(1969, 7, 20, 20, 17, 40), dt.datetime(1970, 1, 1, 0, 0, 0, 1),
            dt.datetime(2038, 1, 19, 3, 14, 8)),
           lambda r: _EPOCH + dt.timedelta(seconds=r.randint(-5, 5), microseconds=r.randint(0, 2) * 250_000)),
)
COLUMN_BY_NAME = {c.name: c for c in COLUMNS}
_BITMAP_OPTIONS = (("version", ("1", "2")), ("index-block-size", ("64b", "1kb")))
_BLOOM_OPTIONS = (("items", ("10", "1000")), ("fpp", ("0.01", "0.3")))
_RANGE_OPTIONS = (("chunk-size", ("32b", "16kb")),)
_OPTION_CHOICES = {BITMAP: _BITMAP_OPTIONS, BLOOM: _BLOOM_OPTIONS, RANGE: _RANGE_OPTIONS, BSI: ()}


@dataclass(repr=False)
class TableSpec:
    """Everything needed to build one table (plain data, printable as a repro)."""

    name: str
    indexes: dict[str, list[tuple[str, dict[str, str]]]]  # column -> [(index type, options)]
    partitioned: bool
    bucket: str  # "-1" (unaware) or a fixed count keyed by id
    deletion_vectors: bool
    bitmap64: bool
    in_manifest_threshold: str
    nested: bool
    batches: list[list[dict[str, Any]]]  # rows per append
    deletes: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)  # (after batch k, ids)

    @property
    def arrow_schema(self) -> pa.Schema:
        fields = [pa.field(ID, pa.int64()), pa.field(UNINDEXED, pa.int32())]
        if self.partitioned:
            fields.append(pa.field(PARTITION, pa.int32()))
        fields += [pa.field(c.name, c.arrow) for c in COLUMNS]
        if self.nested:
            fields += [pa.field("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
                       pa.field("arr", pa.list_(pa.int32())),
                       pa.field("m", pa.map_(pa.string(), pa.int32()))]
        return pa.schema(fields)

    @property
    def options(self) -> dict[str, str]:
        out = {"bucket": self.bucket, "file-index.in-manifest-threshold": self.in_manifest_threshold}
        if self.bucket != "-1":
            out["bucket-key"] = ID
        if self.deletion_vectors:
            out["deletion-vectors.enabled"] = "true"
            if self.bitmap64:
                out["deletion-vectors.bitmap64"] = "true"
        by_type: dict[str, list[str]] = {}
        for column, specs in self.indexes.items():
            for index_type, opts in specs:
                by_type.setdefault(index_type, []).append(column)
                for k, v in opts.items():
                    out[f"file-index.{index_type}.{column}.{k}"] = v
        for index_type, columns in by_type.items():
            out[f"file-index.{index_type}.columns"] = ",".join(columns)
        return out

    def index_types(self, column: str) -> set[str]:
        return {t for t, _ in self.indexes.get(column, [])}

    @property
    def deleted_ids(self) -> set[int]:
        return {i for _, ids in self.deletes for i in ids}

    def live_rows(self) -> list[dict[str, Any]]:
        gone = self.deleted_ids
        return [row for batch in self.batches for row in batch if row[ID] not in gone]

    def live_table(self) -> pa.Table:
        return pa.Table.from_pylist(self.live_rows(), schema=self.arrow_schema)

    def __repr__(self) -> str:
        return f"TableSpec({self.describe()})"

    def describe(self) -> str:
        """A short summary for failure messages and reports."""
        idx = {c: sorted(t for t, _ in s) for c, s in self.indexes.items() if s}
        return (f"{self.name}: rows={sum(map(len, self.batches))} batches={len(self.batches)} "
                f"deleted={len(self.deleted_ids)} partitioned={self.partitioned} bucket={self.bucket} "
                f"dv={self.deletion_vectors}{'/64' if self.bitmap64 else ''} nested={self.nested} "
                f"threshold={self.in_manifest_threshold} indexes={idx}")


def _value(rng: random.Random, column: Column, null_rate: float) -> Any:
    if rng.random() < null_rate:
        return None
    return rng.choice(column.edges) if rng.random() < 0.6 else column.random_value(rng)


def _nested_values(rng: random.Random) -> dict[str, Any]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.2 else value

    return {"st": maybe({"a": maybe(rng.randint(-3, 3)), "b": maybe(rng.choice(("", "x", "日")))}),
            "arr": maybe([rng.randint(-3, 3) for _ in range(rng.randint(0, 3))]),
            "m": maybe([(k, rng.randint(0, 9)) for k in rng.sample(("a", "b", "é"), rng.randint(0, 2))])}


def _choose_indexes(rng: random.Random) -> dict[str, list[tuple[str, dict[str, str]]]]:
    out: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for column in COLUMNS:
        count = rng.choice((0, 1, 1, 2))
        chosen = rng.sample(column.index_types, min(count, len(column.index_types)))
        out[column.name] = [(t, {k: rng.choice(vs) for k, vs in _OPTION_CHOICES[t] if rng.random() < 0.5})
                            for t in chosen]
    return out


def generate_table(rng: random.Random, name: str = "t") -> TableSpec:
    """One random table spec; deterministic for a seeded ``random.Random`` (or hypothesis's)."""
    indexes = _choose_indexes(rng)
    partitioned = rng.random() < 0.4
    deletion_vectors = rng.random() < 0.6
    nested = rng.random() < 0.25
    null_rate = rng.choice((0.0, 0.1, 0.3))
    batches: list[list[dict[str, Any]]] = []
    deletes: list[tuple[int, tuple[int, ...]]] = []
    next_id = 0
    for k in range(rng.randint(2, MAX_BATCHES)):
        rows = []
        for _ in range(rng.randint(1, MAX_ROWS_PER_BATCH)):
            row: dict[str, Any] = {ID: next_id, UNINDEXED: rng.randint(-3, 3)}
            next_id += 1
            if partitioned:
                row[PARTITION] = rng.randint(0, 2)
            for column in COLUMNS:
                row[column.name] = _value(rng, column, null_rate)
            if nested:
                row.update(_nested_values(rng))
            rows.append(row)
        batches.append(rows)
        if deletion_vectors and rng.random() < 0.6:
            gone = {i for i in range(next_id) if rng.random() < 0.25}
            if gone:
                deletes.append((k, tuple(sorted(gone))))
    return TableSpec(name=name, indexes=indexes, partitioned=partitioned,
                     bucket=rng.choice(("-1", "-1", "2")), deletion_vectors=deletion_vectors,
                     bitmap64=deletion_vectors and rng.random() < 0.5,
                     in_manifest_threshold=rng.choice(("1b", "500b", "64kb")), nested=nested,
                     batches=batches, deletes=deletes)


def tables() -> Any:
    """A hypothesis strategy of table seeds: ``generate_table(random.Random(seed))`` builds the table.

    Hypothesis draws the seed, not every choice: drawing every choice through ``st.randoms()``
    exceeds its per-example entropy budget for tables of this size, and a seed keeps a failing
    example short to print and exact to reproduce (shrinking a seed teaches nothing, so the tests
    skip that phase).
    """
    from hypothesis import strategies as st

    return st.integers(0, 2**32 - 1)


@dataclass(frozen=True)
class Materialized:
    """A written table: where it lives, and its live rows."""

    spec: TableSpec
    warehouse: str
    identifier: str
    parquet_dir: str
    live: pa.Table

    def open(self) -> Any:
        from paimon_index.table.catalog import open_table

        return open_table(self.warehouse, self.identifier)


def materialize(spec: TableSpec, root: Path) -> Materialized:
    """Write ``spec`` with paimon_index under ``root/warehouse`` and its live rows under ``root/parquet``."""
    from paimon_index.table.catalog import create_table
    from paimon_index.table.row_level import delete_arrow
    from paimon_index.table.write import write_arrow

    schema = spec.arrow_schema
    warehouse = root / "warehouse"
    table = create_table(str(warehouse), IDENTIFIER, schema,
                         partition_keys=[PARTITION] if spec.partitioned else [], options=spec.options)
    deletes = dict(spec.deletes)
    for k, rows in enumerate(spec.batches):
        write_arrow(table, pa.Table.from_pylist(rows, schema=schema))
        if k in deletes:
            ids = ", ".join(map(str, deletes[k]))
            delete_arrow(table, f"{ID} IN ({ids})")
    live = spec.live_table()
    parquet_dir = root / "parquet"
    parquet_dir.mkdir()
    # Several files, as the table has: one per batch of live rows. No statistics: pyarrow leaves NaN
    # out of a float column's min/max, and Spark's Parquet filter pushdown then skips row groups
    # whose NaN rows Spark's own semantics keep (`d >= CAST('Infinity' AS DOUBLE)` holds for NaN):
    # the reference must be Spark's evaluation of every row (docs/read-path.md, FLOAT/DOUBLE).
    gone = spec.deleted_ids
    for k, rows in enumerate(spec.batches):
        kept = [r for r in rows if r[ID] not in gone]
        if kept:
            pq.write_table(pa.Table.from_pylist(kept, schema=schema), parquet_dir / f"part-{k}.parquet",
                           write_statistics=False)
    if not any(parquet_dir.iterdir()):
        pq.write_table(schema.empty_table(), parquet_dir / "part-0.parquet", write_statistics=False)
    return Materialized(spec, str(warehouse), IDENTIFIER, str(parquet_dir), live)


def spec_columns(spec: TableSpec) -> Sequence[str]:
    """The scalar columns a query may touch (typed columns, id, u and the partition key)."""
    return [ID, UNINDEXED, *([PARTITION] if spec.partitioned else []), *(c.name for c in COLUMNS)]
