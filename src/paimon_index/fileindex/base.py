"""The contract every file index type implements: a column writer and a lazy leaf reader.

A writer turns one whole column (canonical keys, see :mod:`paimon_index.types`) into the index's
serialized bytes, vectorized. A reader answers leaf predicates on one column of one data file with
a :class:`~paimon_index.fileindex.result.FileIndexResult`.

Defaults follow Paimon's ``FileIndexReader``: every operator answers ``REMAIN`` ("cannot tell"),
``IN`` is the OR of ``=`` over its literals and ``NOT IN`` the OR of ``<>`` (Paimon's default; an
index with exact answers overrides both). An index type overrides only what it can answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from paimon_index.binary import Source
from paimon_index.errors import InvalidOptionError, InvalidPredicateError, UnsupportedTypeError
from paimon_index.fileindex.result import REMAIN, FileIndexResult
from paimon_index.predicate import Leaf, Op
from paimon_index.types import CanonicalColumn, DataType, TypeRoot

__all__ = ["PREFETCH_PREFIX_BYTES", "IndexReader", "IndexType", "IndexWriter", "SortOrder", "TopN"]

#: What an index that reads its body piecewise (a head, then the one block or bitmap a query
#: needs) asks to have fetched up front: its head and, for a small index, all of it.
PREFETCH_PREFIX_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class SortOrder:
    """One ``ORDER BY`` key."""

    column: str
    ascending: bool = True
    nulls_first: bool = True


@dataclass(frozen=True, slots=True)
class TopN:
    """``ORDER BY orders LIMIT limit``; ``strict`` = the first key is the only sort key."""

    orders: tuple[SortOrder, ...]
    limit: int
    strict: bool = True


class IndexReader:
    """Answers leaf predicates for one column from one index's bytes.

    Subclasses are constructed with ``(dtype, source, start, length)`` and must not read bytes
    before a query needs them.
    """

    def __init__(self, dtype: DataType, source: Source, start: int, length: int) -> None:
        self.dtype = dtype
        self.source = source
        self.start = start
        self.length = length

    def prefetch_ranges(self) -> list[tuple[int, int]]:
        """The ``(offset, length)`` ranges a query will read first (fetched together beforehand
        when the container is read by range); by default the whole body."""
        return [(self.start, self.length)]

    def prefix_range(self) -> list[tuple[int, int]]:
        """The first :data:`PREFETCH_PREFIX_BYTES` of the body (for :meth:`prefetch_ranges`)."""
        return [(self.start, min(self.length, PREFETCH_PREFIX_BYTES))]

    # -- dispatch -------------------------------------------------------------------------------
    def evaluate(self, leaf: Leaf) -> FileIndexResult:
        """The answer for one bound leaf on this index's column."""
        lits = leaf.literals
        match leaf.op:
            case Op.EQ:
                return self.visit_eq(lits[0])
            case Op.NE:
                return self.visit_ne(lits[0])
            case Op.LT:
                return self.visit_lt(lits[0])
            case Op.LE:
                return self.visit_le(lits[0])
            case Op.GT:
                return self.visit_gt(lits[0])
            case Op.GE:
                return self.visit_ge(lits[0])
            case Op.IN:
                return self.visit_in(lits)
            case Op.NOT_IN:
                return self.visit_not_in(lits)
            case Op.IS_NULL:
                return self.visit_is_null()
            case Op.IS_NOT_NULL:
                return self.visit_is_not_null()
            case Op.BETWEEN:
                return self.visit_between(lits[0], lits[1])
            case Op.STARTS_WITH:
                return self.visit_starts_with(lits[0])
            case Op.ENDS_WITH:
                return self.visit_ends_with(lits[0])
            case Op.CONTAINS:
                return self.visit_contains(lits[0])
            case Op.LIKE:
                return self.visit_like(lits[0])
        raise InvalidPredicateError(f"unknown operator {leaf.op}")  # pragma: no cover

    # -- defaults: cannot tell ------------------------------------------------------------------
    def visit_eq(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_ne(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_lt(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_le(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_gt(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_ge(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_between(self, low: Any, high: Any) -> FileIndexResult:
        return REMAIN

    def visit_is_null(self) -> FileIndexResult:
        return REMAIN

    def visit_is_not_null(self) -> FileIndexResult:
        return REMAIN

    def visit_starts_with(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_ends_with(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_contains(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_like(self, literal: Any) -> FileIndexResult:
        return REMAIN

    def visit_in(self, literals: Sequence[Any]) -> FileIndexResult:
        if not literals:
            # Paimon's default IN folds nothing and throws; we answer "cannot tell" instead.
            return REMAIN
        result: FileIndexResult | None = None
        for lit in literals:
            r = self.visit_eq(lit)
            result = r if result is None else result | r
        assert result is not None
        return result

    def visit_not_in(self, literals: Sequence[Any]) -> FileIndexResult:
        if not literals:
            return REMAIN
        result: FileIndexResult | None = None
        for lit in literals:
            r = self.visit_ne(lit)
            result = r if result is None else result | r
        assert result is not None
        return result

    def visit_topn(self, topn: TopN, selection: FileIndexResult) -> FileIndexResult:
        """Rows of the top ``topn.limit`` among ``selection``; REMAIN when this index cannot tell."""
        return REMAIN

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary for ``paimon-index file-index inspect``."""
        return {}


class IndexWriter:
    """Builds one index for one whole column."""

    #: The column's name, for messages (set by :meth:`IndexType.create_writer`).
    column: str = "?"

    def __init__(self, dtype: DataType, options: Mapping[str, str]) -> None:
        self.dtype = dtype
        self.options = dict(options)

    def build(self, column: CanonicalColumn) -> bytes:
        """Serialized index bytes for every row of ``column`` (row position = array position)."""
        raise NotImplementedError


class IndexType:
    """An index type as Paimon names it, with the data types it accepts."""

    name: ClassVar[str]
    supported: ClassVar[frozenset[TypeRoot]]
    reader: ClassVar[type[IndexReader]]
    writer: ClassVar[type[IndexWriter]]
    #: ``file-index.<type>.<column>.<option>`` names this index understands -> value checker
    #: (raises :class:`InvalidOptionError` on a malformed value).
    option_validators: ClassVar[Mapping[str, Callable[[str, str], object]]] = {}

    @classmethod
    def validate_option(cls, option: str, value: str, key: str) -> None:
        check = cls.option_validators.get(option)
        if check is None:
            known = ", ".join(sorted(cls.option_validators)) or "none"
            raise InvalidOptionError(
                f"{key}: index type {cls.name!r} has no option {option!r} (known: {known})")
        check(value, key)

    @classmethod
    def check_type(cls, dtype: DataType, column: str = "?") -> None:
        if dtype.root not in cls.supported:
            raise UnsupportedTypeError(
                f"index type {cls.name!r} does not support column {column!r} of type {dtype}")

    @classmethod
    def create_writer(cls, dtype: DataType, options: Mapping[str, str], column: str = "?") -> IndexWriter:
        cls.check_type(dtype, column)
        writer = cls.writer(dtype, options)
        writer.column = column
        return writer

    @classmethod
    def create_reader(cls, dtype: DataType, source: Source, start: int, length: int,
                      column: str = "?") -> IndexReader:
        cls.check_type(dtype, column)
        return cls.reader(dtype, source, start, length)
