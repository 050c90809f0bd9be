"""WHERE expressions of the differential suite: a small tree, two renderings, one reference evaluator.

    expr.sql(SPARK, qualifier="a")   Spark SQL text (every node)
    expr.sql(PYTHON)                 the paimon_index.sql dialect (a subset: see python_ok)
    evaluate(expr, row)              True / False / None, Spark's semantics, in plain Python

The evaluator is the reference the Python-API test compares against, written from Spark's
documented semantics rather than from our code: three-valued logic (a comparison with NULL is
UNKNOWN; ``x IN (..., NULL)`` is never FALSE; NOT UNKNOWN is UNKNOWN; ``<=>`` and ``IS [NOT]
TRUE/FALSE`` are never UNKNOWN); floating point as Spark orders it (NaN = NaN, NaN greater than
every other value, -0.0 = 0.0); a FLOAT/DOUBLE on either side makes both sides DOUBLE (Spark's
coercion); integers and decimals compare exactly; a DATE against a TIMESTAMP compares as the
timestamp at midnight; strings by code point (= UTF-8 byte order, Spark's binary collation).
It is itself checked against Spark SQL over the same rows (tests/spark/test_differential.py).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PYTHON",
    "SPARK",
    "And",
    "Between",
    "Cmp",
    "Expr",
    "InList",
    "IsBool",
    "IsNull",
    "Like",
    "Lit",
    "Not",
    "Or",
    "Ref",
    "evaluate",
    "python_ok",
]

SPARK, PYTHON = "spark", "python"
#: Literal kinds: how a value is spelled (``strnum`` is an integer in quotes, Spark only).
LITERAL_KINDS = ("null", "int", "decimal", "double", "string", "bool", "date", "ts", "strnum")
COMPARISONS = ("=", "<>", "<", "<=", ">", ">=", "<=>")


@dataclass(frozen=True)
class Lit:
    value: Any
    kind: str

    def sql(self, dialect: str) -> str:
        v, kind = self.value, self.kind
        if v is None or kind == "null":
            return "NULL"
        if kind == "int":
            return str(v)
        if kind == "decimal":
            text = format(v, "f")
            return text if "." in text else text + ".0"
        if kind == "double":
            if math.isnan(v):
                return "CAST('NaN' AS DOUBLE)" if dialect == SPARK else "NaN"
            if math.isinf(v):
                sign = "-" if v < 0 else ""
                return f"CAST('{sign}Infinity' AS DOUBLE)" if dialect == SPARK else f"{sign}Infinity"
            text = repr(float(v))
            # Spark reads 1.5 as a DECIMAL: an exponent makes it a DOUBLE in both dialects.
            return text.upper() if "e" in text else text + "E0"
        if kind in ("string", "strnum"):
            return f"'{v}'"
        if kind == "bool":
            return "TRUE" if v else "FALSE"
        if kind == "date":
            return f"DATE '{v.isoformat()}'"
        if kind == "ts":
            text = v.strftime("%Y-%m-%d %H:%M:%S.%f")
            return f"TIMESTAMP_NTZ '{text}'" if dialect == SPARK else f"TIMESTAMP '{text}'"
        raise AssertionError(kind)


@dataclass(frozen=True)
class Ref:
    """A column, optionally cast (Spark only): ``CAST(i AS DOUBLE)``."""

    column: str
    kind: str  # the column's kind (generate.Column.kind; id/u/p are "int")
    cast: str | None = None

    def sql(self, dialect: str, qualifier: str | None) -> str:
        name = f"{qualifier}.{self.column}" if qualifier else self.column
        return f"CAST({name} AS {self.cast})" if self.cast else name

    @property
    def value_kind(self) -> str:
        return {"DOUBLE": "float", "BIGINT": "int", "DATE": "date", "DECIMAL(38, 10)": "decimal"}.get(
            self.cast or "", self.kind)


class Expr:
    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        raise NotImplementedError

    def leaves(self) -> list[Expr]:
        return [self]

    def refs(self) -> list[Ref]:
        return [leaf.ref for leaf in self.leaves() if hasattr(leaf, "ref")]


@dataclass(frozen=True)
class Cmp(Expr):
    ref: Ref
    op: str
    lit: Lit
    literal_first: bool = False

    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        col, lit = self.ref.sql(dialect, qualifier), self.lit.sql(dialect)
        if self.literal_first:
            flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(self.op, self.op)
            return f"{lit} {flipped} {col}"
        return f"{col} {self.op} {lit}"


@dataclass(frozen=True)
class InList(Expr):
    ref: Ref
    lits: tuple[Lit, ...]
    negated: bool = False

    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        items = ", ".join(x.sql(dialect) for x in self.lits)
        return f"{self.ref.sql(dialect, qualifier)} {'NOT IN' if self.negated else 'IN'} ({items})"


@dataclass(frozen=True)
class IsNull(Expr):
    ref: Ref
    negated: bool = False

    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        return f"{self.ref.sql(dialect, qualifier)} IS {'NOT ' if self.negated else ''}NULL"


@dataclass(frozen=True)
class Between(Expr):
    ref: Ref
    lo: Lit
    hi: Lit
    negated: bool = False

    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        word = "NOT BETWEEN" if self.negated else "BETWEEN"
        return f"{self.ref.sql(dialect, qualifier)} {word} {self.lo.sql(dialect)} AND {self.hi.sql(dialect)}"


@dataclass(frozen=True)
class Like(Expr):
    ref: Ref
    prefix: str

    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        return f"{self.ref.sql(dialect, qualifier)} LIKE '{self.prefix}%'"


@dataclass(frozen=True)
class IsBool(Expr):
    """``<inner> IS [NOT] TRUE|FALSE``; ``inner`` is a boolean column (a Ref) or a leaf."""

    inner: Any
    value: bool
    negated: bool = False

    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        inner = (self.inner.sql(dialect, qualifier) if isinstance(self.inner, Ref)
                 else f"({self.inner.sql(dialect, qualifier)})")
        return f"{inner} IS {'NOT ' if self.negated else ''}{'TRUE' if self.value else 'FALSE'}"

    def leaves(self) -> list[Expr]:
        return [self] if isinstance(self.inner, Ref) else self.inner.leaves()

    def refs(self) -> list[Ref]:
        return [self.inner] if isinstance(self.inner, Ref) else self.inner.refs()


@dataclass(frozen=True)
class Not(Expr):
    child: Expr

    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        return f"NOT ({self.child.sql(dialect, qualifier)})"

    def leaves(self) -> list[Expr]:
        return self.child.leaves()

    def refs(self) -> list[Ref]:
        return self.child.refs()


@dataclass(frozen=True)
class And(Expr):
    left: Expr
    right: Expr

    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        return f"({self.left.sql(dialect, qualifier)}) AND ({self.right.sql(dialect, qualifier)})"

    def leaves(self) -> list[Expr]:
        return self.left.leaves() + self.right.leaves()

    def refs(self) -> list[Ref]:
        return self.left.refs() + self.right.refs()


@dataclass(frozen=True)
class Or(And):
    def sql(self, dialect: str, qualifier: str | None = None) -> str:
        return f"({self.left.sql(dialect, qualifier)}) OR ({self.right.sql(dialect, qualifier)})"


def python_ok(expr: Expr, negated: bool = False) -> bool:
    """Whether the paimon_index.sql dialect can spell ``expr`` (NOT over LIKE has no leaf there)."""
    match expr:
        case Not(child=child):
            return python_ok(child, not negated)
        case And(left=left, right=right):  # Or too
            return python_ok(left, negated) and python_ok(right, negated)
        case IsBool():
            return False
        case Like(ref=ref):
            return not negated and ref.cast is None
        case Cmp(ref=ref, op=op, lit=lit):
            return op != "<=>" and ref.cast is None and lit.kind != "strnum"
        case InList(ref=ref, lits=lits):
            return ref.cast is None and all(x.kind != "strnum" for x in lits)
        case Between(ref=ref):
            return ref.cast is None
        case IsNull(ref=ref):
            return ref.cast is None
    raise AssertionError(expr)


# -- the reference evaluator --------------------------------------------------------------------
def _cast(value: Any, ref: Ref) -> Any:
    if value is None or ref.cast is None:
        return value
    if ref.cast == "DOUBLE":
        return float(value)
    if ref.cast == "BIGINT":
        return int(value)
    if ref.cast == "DATE":
        return value.date() if isinstance(value, dt.datetime) else value
    if ref.cast.startswith("DECIMAL"):
        return decimal.Decimal(value)
    raise AssertionError(ref.cast)


def _float_key(x: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(x) else (0, x + 0.0)  # NaN above all; -0.0 + 0.0 is 0.0


def compare(value: Any, kind: str, lit: Lit) -> int | None:
    """-1/0/1 for ``value <op> lit`` after Spark's coercion; None when either side is NULL."""
    a, b = value, lit.value
    if a is None or b is None or lit.kind == "null":
        return None
    if lit.kind == "strnum":
        b = int(b)
    if kind == "float" or lit.kind == "double":
        ka, kb = _float_key(float(a)), _float_key(float(b))
        return (ka > kb) - (ka < kb)
    if kind == "date" and isinstance(b, dt.datetime):
        a = dt.datetime.combine(a, dt.time())
    if kind == "ts" and not isinstance(b, dt.datetime) and isinstance(b, dt.date):
        b = dt.datetime.combine(b, dt.time())
    return (a > b) - (a < b)


def _not(v: bool | None) -> bool | None:
    return None if v is None else not v


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


_OPS = {"=": lambda c: c == 0, "<>": lambda c: c != 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0,
        ">": lambda c: c > 0, ">=": lambda c: c >= 0}


def evaluate(expr: Expr, row: dict[str, Any]) -> bool | None:
    """``expr`` on one row (column -> Python value), under Spark's semantics."""
    match expr:
        case Not(child=child):
            return _not(evaluate(child, row))
        case Or(left=left, right=right):
            return _or(evaluate(left, row), evaluate(right, row))
        case And(left=left, right=right):
            return _and(evaluate(left, row), evaluate(right, row))
        case IsBool(inner=inner, value=value, negated=negated):
            got = _cast(row[inner.column], inner) if isinstance(inner, Ref) else evaluate(inner, row)
            return (got is value) != negated
        case Cmp(ref=ref, op=op, lit=lit):
            v = _cast(row[ref.column], ref)
            if op == "<=>":
                if v is None or lit.value is None:
                    return v is None and lit.value is None
                return compare(v, ref.value_kind, lit) == 0
            c = compare(v, ref.value_kind, lit)
            return None if c is None else _OPS[op](c)
        case InList(ref=ref, lits=lits, negated=negated):
            v = _cast(row[ref.column], ref)
            if v is None:
                return None
            results = [compare(v, ref.value_kind, x) for x in lits]
            found: bool | None = True if 0 in results else (None if None in results else False)
            return _not(found) if negated else found
        case IsNull(ref=ref, negated=negated):
            return (row[ref.column] is None) != negated
        case Between(ref=ref, lo=lo, hi=hi, negated=negated):
            v = _cast(row[ref.column], ref)
            c_lo, c_hi = compare(v, ref.value_kind, lo), compare(v, ref.value_kind, hi)
            got = _and(None if c_lo is None else c_lo >= 0, None if c_hi is None else c_hi <= 0)
            return _not(got) if negated else got
        case Like(ref=ref, prefix=prefix):
            v = row[ref.column]
            return None if v is None else v.startswith(prefix)
    raise AssertionError(expr)
