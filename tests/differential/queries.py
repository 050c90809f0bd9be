"""Random WHERE expressions and query shapes over a generated table.

    where = generate_where(rng, spec, dialect)        an expr.Expr (both dialects, or Spark only)
    queries = generate_queries(rng, spec, count)      Query objects, one per shape

Literals are drawn from the values the table holds (so predicates hit rows), from each column's
edge values, and from outside them (so files get pruned); some are of another type than the
column (an integer on a DOUBLE or DECIMAL column, a DECIMAL finer than the column's scale, and in
Spark only an integer in quotes, a DECIMAL on an integer column, a DATE against a TIMESTAMP).

A :class:`Query` is a list of statements run in order against one source (so "reuse" shapes see
the state an earlier statement left): ``("sql", text)`` with ``{t}`` for the source's temp view,
``("df", where...)`` for a DataFrame loaded once and filtered by each WHERE in turn, and
``("df_count",)`` for its count. Results are compared per statement.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
from dataclasses import dataclass, field
from typing import Any

from differential.expr import (
    PYTHON,
    SPARK,
    And,
    Between,
    Cmp,
    Expr,
    InList,
    IsBool,
    IsNull,
    Like,
    Lit,
    Not,
    Or,
    Ref,
)
from differential.generate import COLUMN_BY_NAME, ID, PARTITION, UNINDEXED, TableSpec, spec_columns

__all__ = ["SHAPES", "Query", "generate_queries", "generate_where", "prune_all_where"]

MANY_VALUES = 40
MAX_DEPTH = 3
#: Shapes of Spark queries (each gets its own test case).
SHAPES = ("filter", "count", "aggregate", "self_join", "scalar_subquery", "in_subquery", "view_reuse",
          "dataframe_reuse", "union", "order_limit", "prune_all")


def _kind(column: str) -> str:
    return COLUMN_BY_NAME[column].kind if column in COLUMN_BY_NAME else "int"


def _values(spec: TableSpec, column: str) -> list[Any]:
    values = [row[column] for batch in spec.batches for row in batch]
    if column in COLUMN_BY_NAME:
        values += list(COLUMN_BY_NAME[column].edges)
    return values


_OUTSIDE = {"int": (123_456_789, -999, 7), "float": (-1e9, 12345.5, 0.25), "string": ("zzz", "a\u00e9b", "A"),
            "decimal": (decimal.Decimal("777.77"), decimal.Decimal("-0.50")),
            "date": (dt.date(1950, 5, 5), dt.date(2100, 1, 1)),
            "ts": (dt.datetime(1950, 5, 5, 1, 2, 3, 4), dt.datetime(2100, 1, 1)), "bool": (True, False)}
_NATURAL = {"int": "int", "float": "double", "decimal": "decimal", "string": "string", "bool": "bool",
            "date": "date", "ts": "ts"}


def _literal(rng: random.Random, spec: TableSpec, column: str, dialect: str, *,
             allow_null: bool = False) -> Lit:
    kind = _kind(column)
    roll = rng.random()
    if allow_null and roll < 0.05:
        return Lit(None, "null")
    value = rng.choice(_OUTSIDE[kind]) if roll < 0.2 else rng.choice(_values(spec, column))
    while value is None:
        value = rng.choice(_values(spec, column))
    return _spell(rng, value, kind, dialect)


def _spell(rng: random.Random, value: Any, kind: str, dialect: str) -> Lit:
    """The literal for ``value``, sometimes of another type than the column's."""
    other = rng.random() < 0.25
    if kind == "int" and other:
        if dialect == SPARK and rng.random() < 0.5:
            return Lit(str(value), "strnum")
        if dialect == SPARK:
            return Lit(decimal.Decimal(value) + decimal.Decimal("0.5") * rng.choice((0, 1)), "decimal")
    if kind == "float" and other and float(value).is_integer() and abs(value) < 2**53:
        return Lit(int(value), "int")
    if kind == "float" and other and value in (0.5, 1.5, -2.25, 3.0, 0.25):
        return Lit(decimal.Decimal(repr(float(value))), "decimal")
    if kind == "decimal" and other:
        if value == value.to_integral_value() and rng.random() < 0.5:
            return Lit(int(value), "int")
        return Lit(value + decimal.Decimal("0.001"), "decimal")  # finer than the column's scale
    if kind == "date" and other and dialect == SPARK:
        return Lit(dt.datetime.combine(value, dt.time()), "ts")
    if kind == "ts" and other and dialect == SPARK and value.time() == dt.time():
        return Lit(value.date(), "date")
    return Lit(value, _NATURAL[kind])


def _ref(rng: random.Random, spec: TableSpec, dialect: str, kinds: tuple[str, ...] | None = None) -> Ref:
    columns = [c for c in spec_columns(spec) if kinds is None or _kind(c) in kinds]
    column = rng.choice(columns)
    kind = _kind(column)
    if dialect == SPARK and rng.random() < 0.1 and kind in ("int", "float", "decimal", "ts"):
        cast = {"int": rng.choice(("DOUBLE", "BIGINT", "DECIMAL(38, 10)")), "float": "DOUBLE",
                "decimal": "DOUBLE", "ts": "DATE"}[kind]
        if not (kind == "int" and cast.startswith("DECIMAL") and column == "bi"):
            return Ref(column, kind, cast)
    return Ref(column, kind)


def _cast_literal(rng: random.Random, spec: TableSpec, ref: Ref, dialect: str, *,
                  allow_null: bool = False) -> Lit:
    lit = _literal(rng, spec, ref.column, dialect, allow_null=allow_null)
    if ref.cast == "DOUBLE" and lit.kind in ("int", "decimal", "strnum"):
        return Lit(float(lit.value) + rng.choice((0.0, 0.5)), "double")
    if ref.cast == "DATE" and lit.kind == "ts":
        return Lit(lit.value.date(), "date")
    return lit


def _leaf(rng: random.Random, spec: TableSpec, dialect: str) -> Expr:
    roll = rng.random()
    if roll < 0.08:
        return IsNull(_ref(rng, spec, dialect), rng.random() < 0.5)
    if roll < 0.22:
        ref = _ref(rng, spec, dialect)
        count = MANY_VALUES if rng.random() < 0.3 else rng.randint(1, 4)
        lits = [_cast_literal(rng, spec, ref, dialect) for _ in range(count)]
        if rng.random() < 0.3:
            lits.insert(rng.randint(0, len(lits)), Lit(None, "null"))
        first = next((x.kind for x in lits if x.kind != "null"), "null")
        lits = [x for x in lits if x.kind in ("null", first)]  # one literal type per list
        return InList(ref, tuple(lits), rng.random() < 0.4)
    if roll < 0.32:
        ref = _ref(rng, spec, dialect, ("int", "float", "decimal", "string", "date", "ts"))
        lo, hi = _cast_literal(rng, spec, ref, dialect), _cast_literal(rng, spec, ref, dialect)
        if lo.kind != hi.kind:
            hi = lo
        return Between(ref, lo, hi, rng.random() < 0.4)
    if roll < 0.40:
        values = [v for v in _values(spec, "s") if v]
        prefix = rng.choice(values)[: rng.randint(0, 2)] if values else ""
        return Like(Ref("s", "string"), prefix)
    if roll < 0.48 and dialect == SPARK:
        if rng.random() < 0.5:
            return IsBool(Ref("b", "bool"), rng.random() < 0.5, rng.random() < 0.5)
        return IsBool(_comparison(rng, spec, dialect), rng.random() < 0.5, rng.random() < 0.5)
    return _comparison(rng, spec, dialect)


def _comparison(rng: random.Random, spec: TableSpec, dialect: str) -> Cmp:
    ref = _ref(rng, spec, dialect)
    ops = ("=", "<>", "<", "<=", ">", ">=") + (("<=>",) if dialect == SPARK else ())
    op = rng.choice(ops)
    lit = _cast_literal(rng, spec, ref, dialect, allow_null=True)
    return Cmp(ref, op, lit, literal_first=rng.random() < 0.15)


def generate_where(rng: random.Random, spec: TableSpec, dialect: str, depth: int = 0) -> Expr:
    """A random WHERE expression; with ``dialect=PYTHON`` one the paimon_index.sql parser can spell."""
    roll = rng.random()
    if depth >= MAX_DEPTH or roll < 0.45:
        leaf = _leaf(rng, spec, dialect)
        if dialect == PYTHON and isinstance(leaf, Like):
            return leaf  # a NOT above it has no leaf in that dialect
        return Not(leaf) if rng.random() < 0.15 else leaf
    if roll < 0.6:
        child = generate_where(rng, spec, dialect, depth + 1)
        if dialect == PYTHON and any(isinstance(x, Like) for x in child.leaves()):
            return child
        return Not(child)
    left = generate_where(rng, spec, dialect, depth + 1)
    right = generate_where(rng, spec, dialect, depth + 1)
    return And(left, right) if roll < 0.8 else Or(left, right)


def prune_all_where(rng: random.Random, spec: TableSpec) -> Expr:
    """A predicate no row satisfies, on an indexed column when there is one (every file pruned)."""
    indexed = [c for c, specs in spec.indexes.items() if specs and _kind(c) in ("int", "string", "date")]
    column = rng.choice(indexed) if indexed else ID
    kind = _kind(column)
    present = set(_values(spec, column))
    candidates = [v for v in _OUTSIDE[kind] if v not in present]
    if kind == "int" and column in ("ti", "si"):
        candidates = [v for v in (7, 9, -3, 11) if v not in present]
    if not candidates:
        return Cmp(Ref(ID, "int"), "<", Lit(-1, "int"))
    return Cmp(Ref(column, kind), "=", Lit(candidates[0], _NATURAL[kind]))


@dataclass
class Query:
    shape: str
    statements: list[tuple[Any, ...]]
    wheres: list[Expr] = field(default_factory=list)
    ordered: bool = False

    def describe(self) -> str:
        return "; ".join(" ".join(str(x) for x in s) for s in self.statements)


def _w(expr: Expr, qualifier: str | None = None) -> str:
    return expr.sql(SPARK, qualifier)


def _query(rng: random.Random, spec: TableSpec, shape: str) -> Query:
    w1, w2 = generate_where(rng, spec, SPARK), generate_where(rng, spec, SPARK)
    scalar = [c for c in spec_columns(spec)]
    c = rng.choice(scalar)
    match shape:
        case "filter":
            return Query(shape, [("sql", f"SELECT * FROM {{t}} WHERE {_w(w1)}")], [w1])
        case "count":
            return Query(shape, [("sql", f"SELECT count(*) FROM {{t}} WHERE {_w(w1)}")], [w1])
        case "aggregate":
            g = rng.choice(("b", UNINDEXED, PARTITION if spec.partitioned else "b"))
            return Query(shape, [("sql", f"SELECT {g}, count(*), count({c}), min({c}), max({c}), sum(i), "
                                         f"sum(dec10), count(DISTINCT {c}) FROM {{t}} WHERE {_w(w1)} "
                                         f"GROUP BY {g}")], [w1])
        case "self_join":
            k = rng.choice(("ti", "s", "b", "dt", UNINDEXED))
            return Query(shape, [("sql", f"SELECT a.id, b.id FROM {{t}} a JOIN {{t}} b ON a.{k} = b.{k} "
                                         f"WHERE ({_w(w1, 'a')}) AND ({_w(w2, 'b')})")], [w1, w2])
        case "scalar_subquery":
            return Query(shape, [
                ("sql", f"SELECT (SELECT count(*) FROM {{t}} WHERE {_w(w1)}), "
                        f"(SELECT count(*) FROM {{t}} WHERE {_w(w2)}), (SELECT count(*) FROM {{t}})"),
                ("sql", f"SELECT id FROM {{t}} WHERE ({_w(w1)}) AND id >= "
                        f"(SELECT min(id) FROM {{t}} WHERE {_w(w2)})")], [w1, w2])
        case "in_subquery":
            return Query(shape, [
                ("sql", f"SELECT id FROM {{t}} WHERE ({_w(w1)}) AND id IN "
                        f"(SELECT id FROM {{t}} WHERE {_w(w2)})"),
                ("sql", f"SELECT id FROM {{t}} WHERE id NOT IN (SELECT id FROM {{t}} WHERE {_w(w2)})")],
                [w1, w2])
        case "view_reuse":
            return Query(shape, [
                ("sql", f"CREATE OR REPLACE TEMP VIEW {{t}}_v AS SELECT * FROM {{t}} WHERE {_w(w1)}"),
                ("sql", "SELECT * FROM {t}_v"),
                ("sql", "SELECT * FROM {t}"),
                ("sql", f"SELECT id FROM {{t}}_v WHERE {_w(w2)}"),
                ("sql", f"SELECT id FROM {{t}} WHERE {_w(w2)}"),
                ("sql", "SELECT count(*) FROM {t}_v")], [w1, w2])
        case "dataframe_reuse":
            return Query(shape, [("df", _w(w1)), ("df_count",), ("df", _w(w2)), ("df", _w(w1), _w(w2)),
                                 ("df",)], [w1, w2])
        case "union":
            return Query(shape, [
                ("sql", f"SELECT id FROM {{t}} WHERE {_w(w1)} UNION ALL SELECT id FROM {{t}} WHERE {_w(w2)}"),
                ("sql", f"SELECT {c} FROM {{t}} WHERE {_w(w1)} UNION SELECT {c} FROM {{t}} WHERE {_w(w2)}")],
                [w1, w2])
        case "order_limit":
            direction = rng.choice(("ASC NULLS FIRST", "DESC NULLS LAST", "ASC NULLS LAST"))
            limit = rng.randint(1, 12)
            return Query(shape, [("sql", f"SELECT id, {c} FROM {{t}} WHERE {_w(w1)} "
                                         f"ORDER BY {c} {direction}, id LIMIT {limit}")], [w1], ordered=True)
        case "prune_all":
            none = prune_all_where(rng, spec)
            return Query(shape, [("sql", f"SELECT * FROM {{t}} WHERE {_w(none)}"),
                                 ("sql", f"SELECT count(*), max(id) FROM {{t}} WHERE {_w(none)}"),
                                 ("sql", f"SELECT id FROM {{t}} WHERE {_w(none)} OR ({_w(w1)})")], [none, w1])
    raise AssertionError(shape)


def generate_queries(rng: random.Random, spec: TableSpec, shapes: tuple[str, ...] = SHAPES) -> list[Query]:
    """One query per shape over ``spec``."""
    return [_query(rng, spec, shape) for shape in shapes]
