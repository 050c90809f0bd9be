"""Predicates: a tree of small immutable nodes, and binding to a schema.

    Predicate := Leaf(op, column, literals) | And(children) | Or(children) | AlwaysTrue | AlwaysFalse

Leaf operators and their literal counts::

    EQ NE LT LE GT GE STARTS_WITH ENDS_WITH CONTAINS LIKE   1 literal
    IN NOT_IN                                               any number (possibly 0)
    BETWEEN                                                 2 literals (inclusive bounds)
    IS_NULL IS_NOT_NULL                                     none

A tree built by hand or parsed from text (:mod:`paimon_index.sql`) holds *natural* literals (``int``,
``str``, ``datetime.date`` ...). :func:`bind` checks every column against a schema and converts the
literals to the canonical keys the indexes compare (:func:`paimon_index.types.canonical_literal`).
Evaluation code only ever sees bound predicates.

NULL literals: ``c = NULL`` and ``c IN (..., NULL)`` are kept as written, because Paimon's bitmap
index answers them (it matches the NULL rows); other indexes treat them as "cannot answer".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum

from paimon_index.errors import InvalidPredicateError
from paimon_index.types import DataType, canonical_literal

__all__ = [
    "ALWAYS_FALSE",
    "ALWAYS_TRUE",
    "And",
    "Leaf",
    "Op",
    "Or",
    "Predicate",
    "and_",
    "bind",
    "columns_of",
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

Predicate = Leaf | And | Or | _Constant


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


def _walk(p: Predicate) -> Iterator[Leaf]:
    if isinstance(p, Leaf):
        yield p
    elif isinstance(p, And | Or):
        for c in p.children:
            yield from _walk(c)


def columns_of(p: Predicate) -> list[str]:
    """The columns a predicate reads, in first-use order."""
    return list(dict.fromkeys(leaf.column for leaf in _walk(p)))


def bind(p: Predicate, schema: Mapping[str, DataType]) -> Predicate:
    """Check columns against ``schema`` and convert literals to canonical keys."""
    if isinstance(p, Leaf):
        dtype = schema.get(p.column)
        if dtype is None:
            known = ", ".join(schema) or "none"
            raise InvalidPredicateError(f"unknown column {p.column!r} (schema has: {known})")
        return Leaf(p.op, p.column, _bind_literals(p, dtype))
    if isinstance(p, And):
        return and_(*(bind(c, schema) for c in p.children))
    if isinstance(p, Or):
        return or_(*(bind(c, schema) for c in p.children))
    return p


def _bind_literals(leaf: Leaf, dtype: DataType) -> tuple[object, ...]:
    if leaf.op in (Op.STARTS_WITH, Op.ENDS_WITH, Op.CONTAINS, Op.LIKE) and not dtype.is_string:
        raise InvalidPredicateError(f"{leaf.op.value} needs a string column, {leaf.column} is {dtype}")
    return tuple(canonical_literal(v, dtype) for v in leaf.literals)
