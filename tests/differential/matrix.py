"""The table-kind × read-path × state matrix of the differential suite.

    run = MatrixRun(spark, root, rng)            # one per test run (tests/spark/test_differential_matrix.py)
    run.run_kind(KINDS["pk-fixed"], states)      # one table, a sequence of states, every read path at each
    run.differences[(kind, path)]                # what differed, per cell
    run.java_check()                             # Java Paimon's read of every recorded snapshot, one JVM

One table per kind (:data:`KINDS`: append unaware-bucket / fixed-bucket / partitioned, primary-key
fixed-bucket / dynamic-bucket / partitioned, every one with file indexes and deletion vectors, and a
partitioned primary-key table without them, merge-on-read), one
sequence of states per table (:data:`APPEND_STATES`, :data:`PK_STATES`: load, upserts, DELETE and
UPDATE, overwrite, compaction, schema change), and at each state every read path
(:data:`PATHS`) for a handful of WHEREs drawn by tests/differential/queries.py from the rows the
table holds. Only the public API is used (``paimon_index.create_table``/``open_table``, the
``Table`` verbs, ``paimon_index.spark.jobs``, the ``paimon_index`` source), plus pypaimon's catalog
for the schema change (its ``alter_table``).

The references are things this project did not write: a plain Python model of the live rows
(a dict by key for primary-key tables, a list for append tables) with the WHERE evaluated by
:func:`differential.expr.evaluate` (Spark's semantics, itself checked here against Spark SQL over a
Parquet copy of the model's rows at every state), pypaimon's own read, and Java Paimon's read of the
same snapshot (``../shared/java-paimon``, when present). Results are compared as multisets under
Spark's equality (:mod:`differential.compare`), TopN results in order.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from differential.compare import diff_rows, normalize
from differential.expr import (
    PYTHON,
    SPARK,
    And,
    Between,
    Cmp,
    Expr,
    InList,
    IsNull,
    Lit,
    Not,
    Ref,
    evaluate,
)
from differential.generate import COLUMNS, ID, PARTITION, UNINDEXED, TableSpec, _f32, _value
from differential.known_bugs import Case, claimed_by
from differential.queries import generate_where

__all__ = ["APPEND_STATES", "KINDS", "PATHS", "PK_STATES", "REFERENCE_STATES", "Kind", "MatrixRun"]

IDENTIFIER = "db.t"
#: BIGINT's minimum (Java's Long.MIN_VALUE).
_BIGINT_MIN = -(2**63)
EXTRA = "extra"
RENAMED = "u2"
WIDENED = "i"  # INT -> BIGINT at the schema change
#: Read paths, each a cell column of the matrix.
PATHS = (
    "python",            # Table.read(where)
    "python-noindex",    # Table.read(where, use_index=False)
    "planned-small",     # jobs.read(spark, ..., where): the driver-side small read where it applies
    "planned-parquet",   # jobs.read(..., small_read_bytes=0): Spark's Parquet reader
    "source",            # spark.read.format("paimon_index")...load(t).filter(where)
    "count-python",      # Table.count(where)
    "count-spark",       # jobs.count(spark, t, where)
    "min-max",           # Table.min_max(column, where)
    "topn-python",       # Table.read(where, order_by="c DESC, id", limit=k)
    "topn-spark",        # jobs.read(..., order_by="c DESC, id", limit=k)
    "pypaimon",          # pypaimon's own read of the whole table
    "java",              # Java Paimon's read (full table and Java-spellable WHEREs) of each snapshot
    "reference",         # the evaluator against Spark SQL over a Parquet copy of the model's rows
    "mutation",          # a verb that failed (a crash is a difference too)
)
#: Columns min/max and TopN rotate through (one per state).
MIN_MAX_COLUMNS = ("i", "d", "s", "dt", "dec10", "ts", "f", "bi")
TOPN_COLUMNS = ("i", "d", "dec10", "s", "dt", "ts", "si")
ROWS_PER_BATCH = 45
NULL_RATE = 0.15


@dataclass(frozen=True)
class Kind:
    """One table kind: how it is created."""

    name: str
    primary_key: bool
    partitioned: bool
    bucket: str
    #: file-index options beyond the shared ones (e.g. the in-manifest threshold)
    extra_options: tuple[tuple[str, str], ...] = ()

    @property
    def pypaimon_reads(self) -> bool:
        """pypaimon reads 32-bit deletion vectors only (docs/row-level.md): no reference for 64-bit."""
        return dict(self.extra_options).get("deletion-vectors.bitmap64") != "true"

    @property
    def merge_on_read(self) -> bool:
        """A primary-key table without deletion vectors: readers merge by key (no read plan)."""
        return self.primary_key and dict(self.extra_options).get("deletion-vectors.enabled") == "false"

    @property
    def keys(self) -> list[str]:
        if not self.primary_key:
            return []
        return [PARTITION, ID] if self.partitioned else [ID]

    def options(self) -> dict[str, str]:
        out = {
            "bucket": self.bucket,
            "deletion-vectors.enabled": "true",
            "file-index.bloom-filter.columns": "s,bi,ts" + (",id" if self.primary_key else ""),
            "file-index.bitmap.columns": "ti,b,s,f",
            "file-index.range-bitmap.columns": "i,d,dec10,dt,si",
        }
        if self.bucket not in ("-1",) and not self.primary_key:
            out["bucket-key"] = ID
        out.update(dict(self.extra_options))
        return out


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("append-unaware", False, False, "-1", (("file-index.in-manifest-threshold", "1b"),)),
    Kind("append-fixed", False, False, "3"),
    Kind("append-partitioned", False, True, "-1", (("deletion-vectors.bitmap64", "true"),)),
    Kind("pk-fixed", True, False, "2"),
    Kind("pk-dynamic", True, False, "-1", (("file-index.in-manifest-threshold", "1b"),)),
    Kind("pk-partitioned", True, True, "2"),
    Kind("pk-mor", True, True, "2", (("deletion-vectors.enabled", "false"),)),
)}


# -- the model ------------------------------------------------------------------------------------
class Model:
    """The live rows as plain Python: a dict by key (primary-key tables) or a list (append tables)."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind
        self.by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.listed: list[dict[str, Any]] = []
        self.renamed = False  # after the schema change: u is u2, extra exists, i is BIGINT

    def key(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[k] for k in self.kind.keys)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.by_key.values()) if self.kind.primary_key else list(self.listed)

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        """An append (append table) or an upsert (primary-key table; '-D' rows delete their key)."""
        for row in rows:
            row = dict(row)
            kind = row.pop("_ROW_KIND", "+I")
            if not self.kind.primary_key:
                self.listed.append(row)
            elif kind in ("-D", "-U"):
                self.by_key.pop(self.key(row), None)
            else:
                self.by_key[self.key(row)] = row

    def remove(self, keep: Callable[[dict[str, Any]], bool]) -> None:
        if self.kind.primary_key:
            self.by_key = {k: r for k, r in self.by_key.items() if keep(r)}
        else:
            self.listed = [r for r in self.listed if keep(r)]

    def change(self, where: Callable[[dict[str, Any]], bool],
               change: Callable[[dict[str, Any]], None]) -> None:
        for row in self.rows:
            if where(row):
                change(row)

    def overwrite(self, rows: list[dict[str, Any]]) -> None:
        """``write(rows, mode="overwrite")``: a partitioned table loses only the partitions ``rows``
        hold (Paimon's default ``dynamic-partition-overwrite``), any other table every row."""
        if self.kind.partitioned:
            touched = {r[PARTITION] for r in rows}
            self.remove(lambda r: r[PARTITION] not in touched)
        else:
            self.by_key, self.listed = {}, []
        self.append(rows)

    def evolve(self) -> None:
        for row in self.rows:
            row[RENAMED] = row.pop(UNINDEXED)
            row[EXTRA] = None
        self.renamed = True

    def matching(self, where: Expr | None) -> list[dict[str, Any]]:
        return [r for r in self.rows if where is None or evaluate(where, r) is True]


def as_generator_row(row: dict[str, Any]) -> dict[str, Any]:
    """A model row under the names the WHERE generator knows (``u``, not ``u2``)."""
    if RENAMED in row:
        row = dict(row)
        row[UNINDEXED] = row.pop(RENAMED)
    return row


def rename_refs(expr: Any, mapping: dict[str, str]) -> Any:
    """``expr`` with its column references renamed."""
    if isinstance(expr, Ref):
        return dataclasses.replace(expr, column=mapping.get(expr.column, expr.column))
    if isinstance(expr, tuple):
        return tuple(rename_refs(x, mapping) for x in expr)
    if dataclasses.is_dataclass(expr) and not isinstance(expr, (Lit, type)):
        return dataclasses.replace(expr, **{f.name: rename_refs(getattr(expr, f.name), mapping)
                                            for f in dataclasses.fields(expr)})
    return expr


# -- rows ---------------------------------------------------------------------------------------
def arrow_schema(kind: Kind, evolved: bool = False) -> pa.Schema:
    fields = [pa.field(ID, pa.int64(), nullable=not kind.primary_key),
              pa.field(RENAMED if evolved else UNINDEXED, pa.int32())]
    if kind.partitioned:
        fields.append(pa.field(PARTITION, pa.int32(), nullable=not kind.primary_key))
    for c in COLUMNS:
        fields.append(pa.field(c.name, pa.int64() if evolved and c.name == WIDENED else c.arrow))
    if evolved:
        fields.append(pa.field(EXTRA, pa.int32()))
    return pa.schema(fields)


def new_row(rng: random.Random, kind: Kind, row_id: int, evolved: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {ID: row_id, RENAMED if evolved else UNINDEXED: rng.randint(-3, 3)}
    if kind.partitioned:
        row[PARTITION] = row_id % 3  # a key's partition never changes: (p, id) is as unique as id
    for c in COLUMNS:
        row[c.name] = _value(rng, c, NULL_RATE)
    if evolved:
        row[EXTRA] = rng.choice((None, 1, 2, 3))
    return row


def to_arrow(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    kinds = [r.get("_ROW_KIND") for r in rows]
    table = pa.Table.from_pylist([{n: r.get(n) for n in schema.names} for r in rows], schema=schema)
    if any(k is not None for k in kinds):
        table = table.append_column("_ROW_KIND", pa.array([k or "+I" for k in kinds], pa.string()))
    return table


def tuples(rows: Iterable[dict[str, Any]], names: list[str]) -> list[tuple[Any, ...]]:
    return [tuple(r.get(n) for n in names) for r in rows]


def spark_order_key(column: str, descending: bool) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """``ORDER BY column [DESC], id`` as Spark sorts: NULLs first for ASC and last for DESC, NaN above
    every number, -0.0 equal to 0.0; ties by ``id`` ascending."""
    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        v = row[column]
        if v is None:
            return (1 if descending else 0, 0, row[ID])
        if isinstance(v, float):
            v = (1, 0.0) if math.isnan(v) else (0, v + 0.0)
        return (0 if descending else 1, _Reversed(v) if descending else v, row[ID])
    return key


@dataclass(frozen=True)
class _Reversed:
    value: Any

    def __lt__(self, other: _Reversed) -> bool:
        return bool(self.value > other.value)

    def __gt__(self, other: _Reversed) -> bool:
        return bool(self.value < other.value)


def spark_min_max(values: Iterable[Any]) -> tuple[Any, Any]:
    present = [v for v in values if v is not None]
    if not present:
        return None, None

    def key(v: Any) -> Any:
        return ((1, 0.0) if math.isnan(v) else (0, v + 0.0)) if isinstance(v, float) else v
    return min(present, key=key), max(present, key=key)


# -- Java ---------------------------------------------------------------------------------------
_JAVA_KINDS = {"int": "int", "decimal": "decimal", "string": "string", "date": "date", "ts": "ts",
               "bool": "bool"}


def java_ok(expr: Expr, columns: dict[str, str]) -> bool:
    """Whether Java Paimon's oracle reads ``expr`` with Spark's meaning: leaves whose literal has the
    column's own type (the oracle parses each literal as its column's type), no NULL literals, no
    FLOAT/DOUBLE columns (Java orders -0.0 below 0.0), no DECIMAL literal finer than the column."""
    match expr:
        case Not(child=child):
            return java_ok(child, columns)
        case And(left=left, right=right):
            return java_ok(left, columns) and java_ok(right, columns)
        case IsNull(ref=ref):
            return ref.cast is None
        case Cmp(ref=ref, op=op, lit=lit):
            return op != "<=>" and not expr.literal_first and _java_literal(ref, lit, columns)
        case InList(ref=ref, lits=lits):
            return all(_java_literal(ref, x, columns) for x in lits)
        case Between(ref=ref, lo=lo, hi=hi, negated=negated):  # the oracle has no NOT BETWEEN
            return not negated and _java_literal(ref, lo, columns) and _java_literal(ref, hi, columns)
    return False


def _java_literal(ref: Ref, lit: Lit, columns: dict[str, str]) -> bool:
    if ref.cast is not None or lit.value is None or ref.column not in columns:
        return False
    kind = ref.kind
    if kind not in _JAVA_KINDS or lit.kind != _JAVA_KINDS[kind]:
        return False
    if kind == "decimal":
        scale = 2 if ref.column == "dec10" else 10
        return -lit.value.as_tuple().exponent <= scale and abs(lit.value) < 10 ** (8 if scale == 2 else 28)
    if kind == "string":
        return "'" not in lit.value
    if kind == "int":
        bits = {"ti": 8, "si": 16, "i": 32}.get(ref.column, 64)
        return -(2 ** (bits - 1)) <= lit.value < 2 ** (bits - 1)
    return True


def java_value(value: Any) -> Any:
    """A Python value as the oracle prints it (dates ``yyyy-mm-dd``, timestamps epoch micros)."""
    if isinstance(value, dt.datetime):
        delta = value - dt.datetime(1970, 1, 1)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return value.normalize() if value else decimal.Decimal(0)
    if isinstance(value, float):
        return normalize(value)
    return value


def java_row_value(value: Any, column: str) -> Any:
    """A value the oracle printed, comparable with :func:`java_value` of the model's (DECIMALs are
    printed as text, non-finite floats as ``"NaN"``/``"Infinity"``, FLOATs with float precision)."""
    if column.startswith("dec") and isinstance(value, str | int | float):
        return java_value(decimal.Decimal(str(value)))
    if isinstance(value, str) and column in ("f", "d") and value in ("NaN", "Infinity", "-Infinity"):
        return normalize(float(value))
    if column == "f" and isinstance(value, int | float):
        return normalize(_f32(float(value)))
    if isinstance(value, float):
        return normalize(value)
    return value


# -- one run --------------------------------------------------------------------------------------
@dataclass
class JavaCheck:
    kind: str
    state: str
    warehouse: str
    snapshot: int
    where: Expr | None
    text: str | None
    names: list[str]
    want: list[tuple[Any, ...]]


@dataclass
class MatrixRun:
    """The matrix over one Spark session: differences per (kind, path), the small reads taken."""

    spark: Any
    root: Path
    seed: int
    wheres_per_state: int = 3
    spark_wheres_per_state: int = 2
    differences: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    claimed: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: (kind, state, planned files, fallback, small_rows) of every default planned read with a WHERE
    small_reads: list[tuple[str, str, int, str | None, int | None]] = field(default_factory=list)
    visited: set[tuple[str, str, str]] = field(default_factory=set)
    java: list[JavaCheck] = field(default_factory=list)
    #: seconds spent per path (to keep the CI variant in budget)
    seconds: dict[str, float] = field(default_factory=dict)
    #: why Java Paimon's read was not run (no ``java``, no ../shared/java-paimon)
    java_skipped: str | None = None
    #: where the kinds' warehouses live (default: under ``root``), e.g. ``s3://bucket/matrix``, and
    #: the catalog options every verb and read is given for it (``fs.s3.*``)
    warehouse_root: str | None = None
    catalog_options: dict[str, str] = field(default_factory=dict)

    # reporting ----------------------------------------------------------------------------------
    def states_read(self, kind: str, path: str) -> set[str]:
        """The states of ``kind`` that ``path`` read (compared with the model or refused by a crash)."""
        return {s for k, s, p in self.visited if k == kind and p == path}

    def record(self, kind: Kind, state: str, path: str, where: Expr | None, text: str | None,
               detail: str | None, spec: TableSpec) -> None:
        self.visited.add((kind.name, state, path))
        if detail is None:
            return
        case = Case(spec, path, (where,) if where is not None else (), detail=detail,
                    statement=(kind.name, state, text))
        message = f"[{kind.name} / {state} / {path}] WHERE {text}\n    {detail[:1500]}"
        bug = claimed_by(case)
        if bug is None:
            self.differences.setdefault((kind.name, path), []).append(message)
        else:
            self.claimed.setdefault((kind.name, path), []).append(f"{bug.key}: {message}")

    def attempt(self, kind: Kind, state: str, path: str, where: Expr | None, text: str | None,
                spec: TableSpec, check: Callable[[], str | None]) -> None:
        started = time.perf_counter()
        try:
            detail = check()
        except Exception as e:  # a crash is a difference too
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            detail = f"{type(e).__name__}: {first[:400]}"
        self.seconds[path] = self.seconds.get(path, 0.0) + time.perf_counter() - started
        self.record(kind, state, path, where, text, detail, spec)

    # the sequence -------------------------------------------------------------------------------
    def run_kind(self, kind: Kind, states: Iterable[str]) -> None:
        rng = random.Random(f"{self.seed}-{kind.name}")
        warehouse = (str(self.root / kind.name) if self.warehouse_root is None
                     else f"{self.warehouse_root}/{kind.name}")
        import paimon_index

        table = paimon_index.create_table(warehouse, IDENTIFIER, arrow_schema(kind),
                                          partition_keys=[PARTITION] if kind.partitioned else [],
                                          primary_keys=kind.keys, options=kind.options(),
                                          catalog_options=self.catalog_options)
        sequence = TableSequence(self, kind, warehouse, table, Model(kind), rng)
        for number, state in enumerate(states):
            started = time.perf_counter()
            try:
                getattr(sequence, "state_" + state.replace("-", "_"))()
            except Exception as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                self.record(kind, state, "mutation", None, None, f"{type(e).__name__}: {first[:400]}",
                            sequence.spec())
                return  # the model no longer knows what the table holds
            self.seconds["mutation"] = self.seconds.get("mutation", 0.0) + time.perf_counter() - started
            sequence.check_state(state, number)

    # Java, once for the whole run ---------------------------------------------------------------
    def java_check(self, oracle: Any) -> None:
        if not self.java:
            return
        commands = [{"cmd": "read", "warehouse": c.warehouse, "table": IDENTIFIER, "snapshot": c.snapshot,
                     "rows": "true", **({"where": c.text} if c.text else {})} for c in self.java]
        try:
            outs = oracle.batch(commands)
        except AssertionError as e:  # one command the oracle refused fails the batch: that is the cell's
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            for check in self.java:
                self.record(KINDS[check.kind], check.state, "java", check.where, check.text,
                            f"{type(e).__name__}: {first[:400]}", _spec(KINDS[check.kind], []))
            return
        for check, out in zip(self.java, outs, strict=True):
            got = [tuple(java_row_value(v, c) for v, c in zip(row, check.names, strict=True))
                   for row in out.get("row_values", [])]
            want = [tuple(java_value(v) for v in row) for row in check.want]
            detail = diff_rows(want, got)
            kind = KINDS[check.kind]
            self.record(kind, check.state, "java", check.where, f"{check.text} (snapshot {check.snapshot})",
                        detail, _spec(kind, []))


def _spec(kind: Kind, rows: list[dict[str, Any]]) -> TableSpec:
    """A :class:`TableSpec` standing for the table (the WHERE generator draws literals from its rows)."""
    return TableSpec(name=kind.name, indexes={}, partitioned=kind.partitioned, bucket=kind.bucket,
                     deletion_vectors=True, bitmap64=False, in_manifest_threshold="", nested=False,
                     batches=[[as_generator_row(r) for r in rows]] if rows else [[]])


#: States whose WHEREs the evaluator is checked on against Spark SQL (a Spark query each).
REFERENCE_STATES = ("load", "evolve")
APPEND_STATES = ("load", "delete", "update", "overwrite", "evolve", "evolved-update")
#: The overwrite comes last on primary-key tables: "after-overwrite" upserts once more on top of it.
PK_STATES = ("load", "upsert", "delete-update", "compact", "evolve", "evolved-compact", "overwrite",
             "after-overwrite")


def states_of(kind: str) -> tuple[str, ...]:
    """The states the sequence of the kind named ``kind`` goes through."""
    return PK_STATES if KINDS[kind].primary_key else APPEND_STATES


def states_for(kind: str, path: str) -> set[str]:
    """The states of ``kind`` the read path ``path`` reads (the reference: only REFERENCE_STATES)."""
    states = set(states_of(kind))
    return states & set(REFERENCE_STATES) if path == "reference" else states


class TableSequence:
    """One table's states: each ``state_*`` method changes the table through the public API and the
    model alike; :meth:`check_state` then reads it every way."""

    def __init__(self, run: MatrixRun, kind: Kind, warehouse: str, table: Any, model: Model,
                 rng: random.Random) -> None:
        self.run, self.kind, self.warehouse, self.table, self.model, self.rng = run, kind, warehouse, table, \
            model, rng
        self.next_id = 0
        self.evolved = False

    # helpers ------------------------------------------------------------------------------------
    def spec(self) -> TableSpec:
        return _spec(self.kind, self.model.rows)

    def schema(self) -> pa.Schema:
        return arrow_schema(self.kind, self.evolved)

    def fresh(self, count: int) -> list[dict[str, Any]]:
        rows = [new_row(self.rng, self.kind, self.next_id + k, self.evolved) for k in range(count)]
        self.next_id += count
        return rows

    def changed(self, count: int) -> list[dict[str, Any]]:
        """New values for ``count`` existing keys (primary-key tables)."""
        keys = self.rng.sample(sorted(r[ID] for r in self.model.rows), min(count, len(self.model.rows)))
        return [new_row(self.rng, self.kind, k, self.evolved) for k in keys]

    def where(self, lo: float = 0.0, hi: float = 1.0, *, dialect: str = PYTHON) -> Expr:
        """A generated WHERE (both dialects spell it) matching between ``lo`` and ``hi`` of the rows."""
        spec, rows = self.spec(), self.model.rows
        mapping = {UNINDEXED: RENAMED} if self.evolved else {}
        best = None
        for _ in range(40):
            expr = rename_refs(generate_where(self.rng, spec, dialect), mapping)
            share = sum(evaluate(expr, r) is True for r in rows) / max(1, len(rows))
            best = expr
            if lo <= share <= hi:
                return expr
        assert best is not None
        return best

    def spark_df(self, rows: list[dict[str, Any]]) -> Any:
        return self.run.spark.createDataFrame(to_arrow(rows, self.schema()))

    def reopen(self) -> None:
        import paimon_index

        self.table = paimon_index.open_table(self.warehouse, IDENTIFIER,
                                             catalog_options=self.run.catalog_options)

    # states -------------------------------------------------------------------------------------
    def state_load(self) -> None:
        for _ in range(2):
            rows = self.fresh(ROWS_PER_BATCH)
            self.table.write(to_arrow(rows, self.schema()))
            self.model.append(rows)

    def state_delete(self) -> None:
        """Append tables: a DELETE by a generated WHERE (Python), then one by ids (Spark job)."""
        from paimon_index.spark import jobs

        w = self.where(0.05, 0.35)
        self.table.delete(w.sql(PYTHON))
        self.model.remove(lambda r: evaluate(w, r) is not True)
        rows = self.fresh(20)
        self.table.write(to_arrow(rows, self.schema()))
        self.model.append(rows)
        ids = self.rng.sample(sorted(r[ID] for r in self.model.rows), min(8, len(self.model.rows)))
        jobs.delete(self.run.spark, IDENTIFIER, f"id IN ({', '.join(map(str, ids))})",
                    warehouse=self.warehouse, catalog_options=self.run.catalog_options)
        self.model.remove(lambda r: r[ID] not in ids)

    def state_update(self) -> None:
        """UPDATE by a generated WHERE: an expression and a constant on an indexed column (Python),
        a constant on another indexed column (Spark job)."""
        from paimon_index.spark import jobs

        self._update_python()
        w2 = self.where(0.05, 0.4)
        # bi - 1 overflows on BIGINT's minimum, and Spark's UPDATE then fails (ANSI): the generator
        # keeps Long.MIN_VALUE out of the rows, but updates drawn one after another step a row down
        # to it (seed 2344863), so the rows at the minimum are left out of the change.
        above_minimum = f"bi IS NULL OR bi > {_BIGINT_MIN + 1} - 1"
        jobs.update(self.run.spark, IDENTIFIER, {"d": 2.5, "bi": "bi - 1"},
                    f"({w2.sql(SPARK)}) AND ({above_minimum})", warehouse=self.warehouse,
                    catalog_options=self.run.catalog_options)
        self.model.change(lambda r: evaluate(w2, r) is True and (r["bi"] is None or r["bi"] > _BIGINT_MIN),
                          lambda r: r.update(d=2.5, bi=None if r["bi"] is None else r["bi"] - 1))

    def _update_python(self) -> None:
        w = self.where(0.05, 0.4)
        u = RENAMED if self.evolved else UNINDEXED
        self.table.update({u: f"{u} + 10", "s": "'upd'"}, w.sql(PYTHON))
        self.model.change(lambda r: evaluate(w, r) is True,
                          lambda r: r.update({u: None if r[u] is None else r[u] + 10, "s": "upd"}))

    def state_upsert(self) -> None:
        """Primary-key tables: updates of existing keys, new keys and '-D' deletes, by the Spark job."""
        from paimon_index.spark import jobs

        rows = self.changed(25) + self.fresh(15)
        for r in self.rng.sample(sorted(r[ID] for r in self.model.rows), 8):
            gone = dict(next(x for x in self.model.rows if x[ID] == r))
            gone["_ROW_KIND"] = "-D"
            rows.append(gone)
        last: dict[int, dict[str, Any]] = {}
        for r in rows:  # one row per key in a Spark upsert
            last[r[ID]] = r
        rows = list(last.values())
        jobs.upsert(self.run.spark, self.spark_df(rows), IDENTIFIER, warehouse=self.warehouse,
                    catalog_options=self.run.catalog_options)
        self.model.append(rows)

    def state_delete_update(self) -> None:
        """Primary-key tables: DELETE and UPDATE by generated WHEREs (they find the keys and upsert)."""
        w = self.where(0.05, 0.3)
        self.table.delete(w.sql(PYTHON))
        self.model.remove(lambda r: evaluate(w, r) is not True)
        self._update_python()

    def state_compact(self) -> None:
        """An upsert of a few keys, then a compaction (files more than half deleted are rewritten)."""
        rows = self.changed(30)
        self.table.upsert(to_arrow(rows, self.schema()))
        self.model.append(rows)
        self.table.compact()

    def state_after_overwrite(self) -> None:
        """An upsert (updates and new keys) on top of the overwrite, then a compaction."""
        rows = self.changed(10) + self.fresh(10)
        self.table.upsert(to_arrow(rows, self.schema()))
        self.model.append(rows)
        self.table.compact()

    def state_overwrite(self) -> None:
        """``write(rows, mode="overwrite")``; a partitioned table's rows of partitions 0 and 1 only."""
        rows = self.fresh(40)
        if self.kind.partitioned:
            rows = [r for r in rows if r[PARTITION] != 2]
        self.table.write(to_arrow(rows, self.schema()), mode="overwrite")
        self.model.overwrite(rows)

    def state_evolve(self) -> None:
        """pypaimon's ALTER TABLE: rename u -> u2, add ``extra INT``, widen ``i`` INT -> BIGINT; then
        new rows (and, on primary-key tables, new values of old keys) in the new schema."""
        from pypaimon import CatalogFactory
        from pypaimon.schema.data_types import AtomicType
        from pypaimon.schema.schema_change import SchemaChange

        catalog = CatalogFactory.create({"warehouse": self.warehouse, **self.run.catalog_options})
        catalog.alter_table(IDENTIFIER, [SchemaChange.rename_column(UNINDEXED, RENAMED),
                                         SchemaChange.add_column(EXTRA, AtomicType("INT")),
                                         SchemaChange.update_column_type(WIDENED, AtomicType("BIGINT"))])
        self.reopen()
        self.evolved = True
        self.model.evolve()
        rows = self.fresh(30) + (self.changed(10) if self.kind.primary_key else [])
        self.table.write(to_arrow(rows, self.schema()))
        self.model.append(rows)

    def state_evolved_update(self) -> None:
        """After the schema change: an UPDATE of old-schema rows (sets the new column) and a DELETE."""
        w = self.where(0.1, 0.5)
        self.table.update({EXTRA: 7, WIDENED: "i + 1"}, w.sql(PYTHON))
        self.model.change(lambda r: evaluate(w, r) is True,
                          lambda r: r.update({EXTRA: 7,
                                              WIDENED: None if r[WIDENED] is None else r[WIDENED] + 1}))
        w2 = self.where(0.05, 0.2)
        self.table.delete(w2.sql(PYTHON))
        self.model.remove(lambda r: evaluate(w2, r) is not True)

    def state_evolved_compact(self) -> None:
        """After the schema change: a full compaction by the Spark job (old-schema files rewritten)."""
        from paimon_index.spark import jobs

        jobs.compact(self.run.spark, IDENTIFIER, full=True, warehouse=self.warehouse,
                     catalog_options=self.run.catalog_options)

    # reading -------------------------------------------------------------------------------------
    def wheres(self) -> list[Expr]:
        """The state's WHEREs: generated ones, a point lookup by key, and on the new column."""
        out = [self.where(0.0, 1.0) for _ in range(self.run.wheres_per_state)]
        ids = sorted(r[ID] for r in self.model.rows)
        if ids:  # a point lookup (the small read's case): a few keys, one of them absent
            picked = [*self.rng.sample(ids, min(3, len(ids))), self.next_id + 1000]
            out.append(InList(Ref(ID, "int"), tuple(Lit(i, "int") for i in picked)))
        if self.evolved:
            extra = Ref(EXTRA, "int")
            out.append(self.rng.choice((IsNull(extra), Cmp(extra, "=", Lit(7, "int")),
                                        Cmp(Ref(WIDENED, "int"), ">", Lit(2**31 - 2, "int")))))
        return out

    def check_state(self, state: str, number: int) -> None:
        """Every read path at this state: Python paths for every WHERE (and none); the Spark source,
        Spark's Parquet path and jobs.count for the first generated WHERE, the small read for the
        rest of ``spark_wheres`` (the point lookup, and the new column's WHERE after the schema
        change), TopN for one WHERE."""
        self.reopen()
        wheres = self.wheres()
        spark_wheres = wheres[: self.run.spark_wheres_per_state] + wheres[self.run.wheres_per_state:]
        reader = _StateReader(self, state, number, wheres)
        if state in REFERENCE_STATES:
            reader.reference()
        reader.pypaimon()
        for k, where in enumerate([None, *wheres]):
            reader.python(where, MIN_MAX_COLUMNS[(number + k) % len(MIN_MAX_COLUMNS)])
        for k, where in enumerate(spark_wheres):
            reader.spark_paths(where, source=k == 0)  # a Spark query costs about a second
        reader.topn(TOPN_COLUMNS[number % len(TOPN_COLUMNS)], wheres[0])
        reader.java()


class _StateReader:
    """The read paths of one state, each compared with the model."""

    def __init__(self, sequence: TableSequence, state: str, number: int, wheres: list[Expr]) -> None:
        self.s, self.state, self.number, self.wheres = sequence, state, number, wheres
        self.run, self.kind, self.table = sequence.run, sequence.kind, sequence.table
        self.spark, self.warehouse = sequence.run.spark, sequence.warehouse
        self.spec = sequence.spec()
        self.names = self.table.schema.names

    def attempt(self, path: str, where: Expr | None, text: str | None,
                check: Callable[[], str | None]) -> None:
        self.run.attempt(self.kind, self.state, path, where, text, self.spec, check)

    def want(self, where: Expr | None) -> list[tuple[Any, ...]]:
        return tuples(self.s.model.matching(where), self.names)

    def rows(self, got: pa.Table) -> list[tuple[Any, ...]]:
        return tuples(got.to_pylist(), self.names)

    def spark_rows(self, df: Any) -> list[tuple[Any, ...]]:
        return tuples((r.asDict() for r in df.collect()), self.names)

    def reference(self) -> None:
        """The evaluator against Spark SQL over a Parquet copy of the model's rows (every WHERE)."""
        rows, wheres = self.s.model.rows, self.wheres
        parquet = self.run.root / "parquet" / f"{self.kind.name}-{self.number}.parquet"
        parquet.parent.mkdir(exist_ok=True)
        pq.write_table(to_arrow(rows, self.s.schema()), parquet)

        def check() -> str | None:
            columns = ", ".join(f"({w.sql(SPARK)}) AS w{k}" for k, w in enumerate(wheres))
            got = {r[0]: tuple(r)[1:]
                   for r in self.spark.sql(f"SELECT id, {columns} FROM parquet.`{parquet}`").collect()}
            if set(got) != {r[ID] for r in rows}:
                return f"Spark read ids {sorted(got)} from the model's Parquet copy"
            bad = [f"WHERE {w.sql(SPARK)}: id {r[ID]}: Spark {got[r[ID]][k]}, evaluator {evaluate(w, r)}"
                   for r in rows for k, w in enumerate(wheres) if got[r[ID]][k] is not evaluate(w, r)]
            return "\n    ".join(bad[:5]) if bad else None
        self.attempt("reference", None, None, check)

    def pypaimon(self) -> None:
        if not self.kind.pypaimon_reads:
            return

        def check() -> str | None:
            paimon = self.table.paimon_table
            builder = paimon.new_read_builder()
            got = builder.new_read().to_arrow(builder.new_scan().plan().splits())
            return diff_rows(self.want(None), self.rows(got))
        self.attempt("pypaimon", None, None, check)

    def python(self, where: Expr | None, column: str) -> None:
        table, text = self.table, None if where is None else where.sql(PYTHON)
        want = self.want(where)
        self.attempt("python", where, text, lambda: diff_rows(want, self.rows(table.read(text))))
        self.attempt("python-noindex", where, text,
                     lambda: diff_rows(want, self.rows(table.read(text, use_index=False))))
        self.attempt("count-python", where, text, lambda: diff_rows([(len(want),)], [(table.count(text),)]))
        expected = spark_min_max(r[column] for r in self.s.model.matching(where))
        self.attempt("min-max", where, f"min/max({column}) WHERE {text}",
                     lambda: diff_rows([expected], [table.min_max(column, text)], ordered=True))

    def spark_paths(self, where: Expr | None, *, source: bool) -> None:
        from paimon_index.spark import jobs

        spark, name, warehouse = self.spark, IDENTIFIER, self.warehouse
        options = self.run.catalog_options
        sql = None if where is None else where.sql(SPARK)
        text = None if where is None else where.sql(PYTHON)
        want = self.want(where)
        if not source:  # the point lookup (and the new column's WHERE): the small read's own case
            def small() -> str | None:
                if self.kind.merge_on_read:  # no read plan to take: jobs.read reads it merged
                    return diff_rows(want, self.spark_rows(jobs.read(spark, name, sql, warehouse=warehouse,
                                                                            catalog_options=options)))
                planned = jobs.read_planned(spark, name, sql, warehouse=warehouse, catalog_options=options)
                files = len(getattr(planned.plan, "files", ()))
                self.run.small_reads.append((self.kind.name, self.state, files, planned.fallback,
                                             planned.small_rows))
                return diff_rows(want, self.spark_rows(planned.dataframe))
            self.attempt("planned-small", where, sql, small)
            return
        self.attempt("source", where, sql, lambda: diff_rows(want, self.spark_rows(
            _filtered(spark.read.format("paimon_index").option("warehouse", warehouse).options(**options)
                      .load(name), sql))))
        self.attempt("planned-parquet", where, sql, lambda: diff_rows(want, self.spark_rows(
            jobs.read(spark, name, sql, warehouse=warehouse, catalog_options=options, small_read_bytes=0))))
        # jobs.count takes the paimon_index.sql dialect, as Table.count does.
        self.attempt("count-spark", where, text, lambda: diff_rows(
            [(len(want),)], [(jobs.count(spark, name, text, warehouse=warehouse, catalog_options=options),)]))

    def topn(self, column: str, where: Expr) -> None:
        """ORDER BY c DESC, id LIMIT k: Python without a WHERE and with one, Spark with one."""
        from paimon_index.spark import jobs

        order = f"{column} DESC, id"
        for case, k in ((None, 7), (where, 5)):
            text = None if case is None else case.sql(PYTHON)
            ranked = sorted(self.s.model.matching(case), key=spark_order_key(column, True))
            want = tuples(ranked[:k], self.names)
            label = f"{text} ORDER BY {order} LIMIT {k}"
            self.attempt("topn-python", case, label, lambda t=text, w=want, n=k: diff_rows(
                w, self.rows(self.table.read(t, order_by=order, limit=n)), ordered=True))
            if case is None:
                continue
            sql = case.sql(SPARK)
            self.attempt("topn-spark", case, f"{sql} ORDER BY {order} LIMIT {k}",
                         lambda s=sql, w=want, n=k: diff_rows(w, self.spark_rows(jobs.read(
                             self.spark, IDENTIFIER, s, warehouse=self.warehouse,
                             catalog_options=self.run.catalog_options, order_by=order, limit=n)),
                             ordered=True))

    def java(self) -> None:
        """This snapshot, for Java Paimon to read later in one JVM with every other recorded one."""
        snapshot = self.table.snapshot_id
        if snapshot is None or self.run.catalog_options:  # the oracle reads local warehouses
            return
        columns = {c: "x" for c in self.names}
        for where in [None, *[w for w in self.wheres if java_ok(w, columns)][:2]]:
            self.run.java.append(JavaCheck(self.kind.name, self.state, self.warehouse, snapshot, where,
                                           None if where is None else where.sql(PYTHON), self.names,
                                           self.want(where)))


def _filtered(df: Any, where: str | None) -> Any:
    return df if where is None else df.filter(where)
