"""Predicates: a tree of small immutable nodes, and binding to a schema.

    Predicate := Leaf(op, column, literals) | And(children) | Or(children) | AlwaysTrue | AlwaysFalse
               | Computed(op, left, right)            (a comparison with arithmetic on a side)

Leaf operators and their literal counts::

    EQ NE LT LE GT GE STARTS_WITH ENDS_WITH CONTAINS LIKE   1 literal
    IN NOT_IN                                               any number (possibly 0)
    BETWEEN                                                 2 literals (inclusive bounds)
    IS_NULL IS_NOT_NULL                                     none

A tree built by hand or parsed from text (:mod:`paimon_index.sql`) holds *natural* literals (``int``,
``str``, ``datetime.date`` ...). :func:`bind` checks every column against a schema and converts the
literals to the canonical keys the indexes compare (:func:`paimon_index.types.canonical_literal`).
Evaluation code only ever sees bound predicates.

Computed comparisons (``id % 7 = 0``, ``a + b > c``): each side is a :data:`Term` (columns,
literals, ``+ - * / %`` and unary minus), evaluated row by row with Spark's semantics
(:func:`paimon_index.expression.evaluate_term`). No index or statistic answers one: pruning treats it
as "cannot tell" (it keeps every row), and only the exact re-check on the rows
(:func:`paimon_index.arrow_filter.filter_rows`) decides.

NULL literals: ``c = NULL`` and ``c IN (..., NULL)`` are kept as written, because Paimon's bitmap
index answers them (it matches the NULL rows); other indexes treat them as "cannot answer".

Three-valued logic. An unbound tree has SQL's exact three-valued meaning: every leaf is TRUE, FALSE
or UNKNOWN (NULL) exactly as in SQL, so :func:`negate` is exact (NOT of a leaf is the leaf that is
TRUE exactly where it was FALSE and UNKNOWN where it was UNKNOWN; De Morgan for AND/OR, which holds
in Kleene logic). There is no NOT node: ``NOT (c <=> 5)`` is built as ``c IS NULL OR c <> 5``.
:func:`null_safe_eq` and :func:`is_true` and friends build two-valued trees for ``<=>`` and
``IS [NOT] TRUE/FALSE``. A *bound* tree is only guaranteed to keep the rows a WHERE keeps (the TRUE
rows): binding may replace ``i = 2.5`` on INT by FALSE, whose negation is not ``i <> 2.5``. So
negate first, bind last.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum

from paimon_index.coercion import Exact, Inexact, coerce_literal
from paimon_index.errors import InvalidPredicateError
from paimon_index.types import DataType, canonical_literal

__all__ = [
    "ALWAYS_FALSE",
    "ALWAYS_TRUE",
    "And",
    "Computed",
    "Leaf",
    "Op",
    "Or",
    "Predicate",
    "Term",
    "and_",
    "bind",
    "columns_of",
    "is_false",
    "is_not_false",
    "is_not_true",
    "is_true",
    "negate",
    "not_null_safe_eq",
    "null_safe_eq",
    "or_",
]


class Op(Enum):
    EQ = "="
    NE = "<>"
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN = "IN"
    NOT_IN = "NOT IN"
    IS_NULL = "IS NULL"
    IS_NOT_NULL = "IS NOT NULL"
    BETWEEN = "BETWEEN"
    STARTS_WITH = "STARTS_WITH"
    ENDS_WITH = "ENDS_WITH"
    CONTAINS = "CONTAINS"
    LIKE = "LIKE"

    @property
    def arity(self) -> int | None:
        """Number of literals, or None for a list of any length."""
        if self in (Op.IS_NULL, Op.IS_NOT_NULL):
            return 0
        if self in (Op.IN, Op.NOT_IN):
            return None
        if self is Op.BETWEEN:
            return 2
        return 1


@dataclass(frozen=True, slots=True)
class Leaf:
    """``column <op> literals``."""

    op: Op
    column: str
    literals: tuple[object, ...] = ()

    def __post_init__(self) -> None:
        arity = self.op.arity
        if arity is not None and len(self.literals) != arity:
            raise InvalidPredicateError(
                f"{self.op.value} takes {arity} literal(s), got {len(self.literals)}")

    def __str__(self) -> str:
        if self.op in (Op.IS_NULL, Op.IS_NOT_NULL):
            return f"{self.column} {self.op.value}"
        if self.op in (Op.IN, Op.NOT_IN):
            return f"{self.column} {self.op.value} ({', '.join(map(repr, self.literals))})"
        if self.op is Op.BETWEEN:
            return f"{self.column} BETWEEN {self.literals[0]!r} AND {self.literals[1]!r}"
        return f"{self.column} {self.op.value} {self.literals[0]!r}"


@dataclass(frozen=True, slots=True)
class And:
    children: tuple[Predicate, ...]

    def __str__(self) -> str:
        return "(" + " AND ".join(map(str, self.children)) + ")"


@dataclass(frozen=True, slots=True)
class Or:
    children: tuple[Predicate, ...]

    def __str__(self) -> str:
        return "(" + " OR ".join(map(str, self.children)) + ")"


#: One side of a :class:`Computed` comparison, a small tree of tuples (picklable, hashable)::
#:
#:     ("column", name) | ("literal", value) | ("negate", term) | ("arith", op, left, right)
#:
#: ``op`` is one of ``+ - * / %``; literal values are natural (int, Decimal, float, str, date ...).
Term = tuple[object, ...]


def term_text(term: Term) -> str:
    """A term as SQL text."""
    kind = term[0]
    if kind == "column":
        name = str(term[1])
        return name if name.isidentifier() else "`" + name.replace("`", "``") + "`"
    if kind == "literal":
        value = term[1]
        return "NULL" if value is None else repr(value) if not isinstance(value, str) else \
            "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if kind == "negate":
        return f"-({term_text(term[1])})"  # type: ignore[arg-type]
    return f"({term_text(term[2])} {term[1]} {term_text(term[3])})"  # type: ignore[arg-type]


def term_columns(term: Term) -> Iterator[str]:
    kind = term[0]
    if kind == "column":
        yield str(term[1])
    elif kind == "negate":
        yield from term_columns(term[1])  # type: ignore[arg-type]
    elif kind == "arith":
        yield from term_columns(term[2])  # type: ignore[arg-type]
        yield from term_columns(term[3])  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Computed:
    """``left <op> right`` where a side is arithmetic (or both are columns): evaluated on the rows.

    ``op`` is EQ NE LT LE GT GE. ``null_safe`` with EQ is ``<=>`` (two-valued), with NE its negation
    ``NOT (left <=> right)``. Indexes and statistics never answer it (see the module docstring).
    """

    op: Op
    left: Term
    right: Term
    null_safe: bool = False

    def __post_init__(self) -> None:
        if self.op not in (Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE):
            raise InvalidPredicateError(f"a computed comparison cannot use {self.op.value}")
        if self.null_safe and self.op not in (Op.EQ, Op.NE):
            raise InvalidPredicateError("a null-safe comparison is = or <>")

    def __str__(self) -> str:
        left, right = term_text(self.left), term_text(self.right)
        if self.null_safe:
            return f"{left} <=> {right}" if self.op is Op.EQ else f"NOT ({left} <=> {right})"
        return f"{left} {self.op.value} {right}"


@dataclass(frozen=True, slots=True)
class _Constant:
    value: bool

    def __str__(self) -> str:
        return "TRUE" if self.value else "FALSE"

    def __reduce__(self) -> str:
        # Unpickle to the module's singletons, so ``p is ALWAYS_TRUE`` holds on Spark executors too.
        return "ALWAYS_TRUE" if self.value else "ALWAYS_FALSE"


ALWAYS_TRUE = _Constant(True)
ALWAYS_FALSE = _Constant(False)

Predicate = Leaf | And | Or | _Constant | Computed


def and_(*children: Predicate) -> Predicate:
    """AND that flattens nested ANDs and folds constants."""
    flat: list[Predicate] = []
    for c in children:
        if c == ALWAYS_FALSE:
            return ALWAYS_FALSE
        if c == ALWAYS_TRUE:
            continue
        flat.extend(c.children if isinstance(c, And) else (c,))
    if not flat:
        return ALWAYS_TRUE
    return flat[0] if len(flat) == 1 else And(tuple(flat))


def or_(*children: Predicate) -> Predicate:
    """OR that flattens nested ORs and folds constants."""
    flat: list[Predicate] = []
    for c in children:
        if c == ALWAYS_TRUE:
            return ALWAYS_TRUE
        if c == ALWAYS_FALSE:
            continue
        flat.extend(c.children if isinstance(c, Or) else (c,))
    if not flat:
        return ALWAYS_FALSE
    return flat[0] if len(flat) == 1 else Or(tuple(flat))


def _columns(p: Predicate) -> Iterator[str]:
    if isinstance(p, Leaf):
        yield p.column
    elif isinstance(p, Computed):
        yield from term_columns(p.left)
        yield from term_columns(p.right)
    elif isinstance(p, And | Or):
        for c in p.children:
            yield from _columns(c)


def columns_of(p: Predicate) -> list[str]:
    """The columns a predicate reads, in first-use order."""
    return list(dict.fromkeys(_columns(p)))


def without_computed(p: Predicate) -> Predicate:
    """``p`` with every :class:`Computed` comparison TRUE: a superset (NOT is at the leaves already,
    so a TRUE leaf only widens an AND or an OR), for readers that leave the exact filter to Spark."""
    if isinstance(p, Computed):
        return ALWAYS_TRUE
    if isinstance(p, And):
        return and_(*(without_computed(c) for c in p.children))
    if isinstance(p, Or):
        return or_(*(without_computed(c) for c in p.children))
    return p


def has_computed(p: Predicate) -> bool:
    """Whether ``p`` holds a :class:`Computed` comparison (evaluated on rows only)."""
    if isinstance(p, Computed):
        return True
    return isinstance(p, And | Or) and any(has_computed(c) for c in p.children)


_NEGATED = {Op.EQ: Op.NE, Op.NE: Op.EQ, Op.LT: Op.GE, Op.LE: Op.GT, Op.GT: Op.LE, Op.GE: Op.LT,
            Op.IN: Op.NOT_IN, Op.NOT_IN: Op.IN, Op.IS_NULL: Op.IS_NOT_NULL, Op.IS_NOT_NULL: Op.IS_NULL}


def negate(p: Predicate) -> Predicate:
    """SQL's ``NOT p`` for an unbound predicate: TRUE exactly where ``p`` is FALSE, UNKNOWN where
    ``p`` is UNKNOWN.

    Raises:
        InvalidPredicateError: ``p`` holds a string match (``STARTS_WITH``, ``ENDS_WITH``,
            ``CONTAINS``, ``LIKE``), which has no negated leaf.
    """
    if isinstance(p, Computed):
        return Computed(_NEGATED[p.op], p.left, p.right, p.null_safe)
    if isinstance(p, Leaf):
        if p.op is Op.BETWEEN:
            low, high = p.literals
            return or_(Leaf(Op.LT, p.column, (low,)), Leaf(Op.GT, p.column, (high,)))
        negated = _NEGATED.get(p.op)
        if negated is None:
            raise InvalidPredicateError(f"NOT {p.op.value} is not supported")
        return Leaf(negated, p.column, p.literals)
    if isinstance(p, And):
        return or_(*(negate(c) for c in p.children))
    if isinstance(p, Or):
        return and_(*(negate(c) for c in p.children))
    return ALWAYS_FALSE if p == ALWAYS_TRUE else ALWAYS_TRUE


def null_safe_eq(column: str, value: object) -> Predicate:
    """``column <=> value``: TRUE when both are equal or both NULL, otherwise FALSE (never NULL)."""
    if value is None:
        return Leaf(Op.IS_NULL, column)
    return And((Leaf(Op.IS_NOT_NULL, column), Leaf(Op.EQ, column, (value,))))


def not_null_safe_eq(column: str, value: object) -> Predicate:
    """``NOT (column <=> value)``: TRUE for NULL rows when ``value`` is not NULL."""
    return negate(null_safe_eq(column, value))


def is_true(column: str) -> Predicate:
    """``column IS TRUE`` (two-valued: FALSE for NULL)."""
    return null_safe_eq(column, True)


def is_not_true(column: str) -> Predicate:
    """``column IS NOT TRUE``: TRUE for FALSE and NULL."""
    return not_null_safe_eq(column, True)


def is_false(column: str) -> Predicate:
    """``column IS FALSE`` (two-valued: FALSE for NULL)."""
    return null_safe_eq(column, False)


def is_not_false(column: str) -> Predicate:
    """``column IS NOT FALSE``: TRUE for TRUE and NULL."""
    return not_null_safe_eq(column, False)


def bind(p: Predicate, schema: Mapping[str, DataType]) -> Predicate:
    """Check columns against ``schema`` and convert literals to canonical keys.

    ``p`` must be unbound (natural literals: an ``int`` on a DECIMAL column is its value, not the
    unscaled key). A literal the column cannot hold exactly is compared by its value, as Spark does
    (see :mod:`paimon_index.coercion`): the leaf becomes an exact one with the same TRUE rows, e.g.
    ``i < 2.5`` on INT binds to ``i <= 2`` and ``i = 2.5`` to FALSE.
    """
    if isinstance(p, Leaf):
        dtype = schema.get(p.column)
        if dtype is None:
            known = ", ".join(schema) or "none"
            raise InvalidPredicateError(f"unknown column {p.column!r} (schema has: {known})")
        return _bind_leaf(p, dtype)
    if isinstance(p, Computed):
        for column in [*term_columns(p.left), *term_columns(p.right)]:
            if column not in schema:
                known = ", ".join(schema) or "none"
                raise InvalidPredicateError(f"unknown column {column!r} (schema has: {known})")
        return p
    if isinstance(p, And):
        return and_(*(bind(c, schema) for c in p.children))
    if isinstance(p, Or):
        return or_(*(bind(c, schema) for c in p.children))
    return p


_STRING_OPS = (Op.STARTS_WITH, Op.ENDS_WITH, Op.CONTAINS, Op.LIKE)


def _bind_leaf(leaf: Leaf, dtype: DataType) -> Predicate:
    column, op = leaf.column, leaf.op
    if op in _STRING_OPS:
        if not dtype.is_string:
            raise InvalidPredicateError(f"{op.value} needs a string column, {column} is {dtype}")
        return Leaf(op, column, tuple(canonical_literal(v, dtype) for v in leaf.literals))
    if op in (Op.IN, Op.NOT_IN) and not leaf.literals:
        # Spark 4: ``x IN ()`` is FALSE and ``x NOT IN ()`` TRUE, even for a NULL x.
        return ALWAYS_FALSE if op is Op.IN else ALWAYS_TRUE
    coerced = [coerce_literal(v, dtype) for v in leaf.literals]
    if all(isinstance(c, Exact) for c in coerced):
        return Leaf(op, column, tuple(c.key for c in coerced))  # type: ignore[union-attr]
    if op in (Op.IN, Op.NOT_IN):
        # A value the column cannot hold equals no row: drop it (NOT IN: ``c <> it`` is TRUE
        # for every non-NULL row, so dropping it keeps the rows too).
        keys = tuple(c.key for c in coerced if isinstance(c, Exact))
        if keys or op is Op.IN:
            return Leaf(op, column, keys) if keys else ALWAYS_FALSE
        return Leaf(Op.IS_NOT_NULL, column)
    if op is Op.BETWEEN:
        return and_(_bound_compare(Op.GE, column, coerced[0]), _bound_compare(Op.LE, column, coerced[1]))
    return _bound_compare(op, column, coerced[0])


def _bound_compare(op: Op, column: str, c: Exact | Inexact) -> Predicate:
    """One comparison with a coerced literal, as an exact leaf or a constant."""
    if isinstance(c, Exact):
        return Leaf(op, column, (c.key,))
    if op is Op.EQ:
        return ALWAYS_FALSE
    if op is Op.NE:
        return Leaf(Op.IS_NOT_NULL, column)
    if op in (Op.LT, Op.LE):  # c < v  <=>  c <= the largest value below v
        return ALWAYS_FALSE if c.below is None else Leaf(Op.LE, column, (c.below,))
    assert op in (Op.GT, Op.GE)
    return ALWAYS_FALSE if c.above is None else Leaf(Op.GE, column, (c.above,))
