"""Evaluate a bound predicate (and TopN) against one data file's index container.

Semantics are Paimon's ``FileIndexPredicate``:

* a leaf is answered by every index on its column, ANDed, stopping at the first SKIP; a column
  without an index (or with an index type we do not know) answers REMAIN;
* an empty index (start -1: no rows were written) answers SKIP for ``=``, ``IN``, ``<``, ``<=``,
  ``>``, ``>=``, ``IS NOT NULL``, ``STARTS_WITH``, ``ENDS_WITH``, ``CONTAINS`` and REMAIN otherwise;
* AND folds left to right and stops at the first SKIP; OR folds left to right.

Floating point: a query means Spark's order (-0.0 = 0.0, NaN = NaN and largest), while every index
keys floats the Java way (``Float.compare``/``floatToIntBits``: -0.0 and 0.0 are two keys,
-0.0 < 0.0; NaN is one key and largest). NaN already sits where Spark puts it, so only zero needs
care, and :func:`java_float_leaf` rewrites each float leaf before an index sees it: ``= 0.0``
looks up both zeros (also in ``IN``/``NOT IN``), ``>= 0.0`` and ``< 0.0`` start at -0.0,
``> 0.0`` and ``<= 0.0`` at +0.0. Each index then answers a superset of Spark's rows.

TIMESTAMP(7..9) keys are the values floored to micros (:func:`floored_timestamp_leaf`): ``>``
becomes ``>=`` and ``<>``/``NOT IN`` answer ``IS NOT NULL``, since rows inside the literal's
microsecond share its key.

Exactness (:attr:`~paimon_index.fileindex.result.FileIndexResult.exact`): this module is also the
one place that decides which index answers are *exactly* the rows the exact re-check keeps (so a
``count(*)`` can be answered without reading data). A leaf is exact when one of its column's indexes
answers it exactly (the AND with the others' supersets is then that answer), per :data:`EXACT_OPS`:

* ``bitmap``: ``=``, ``IN``, ``IS NULL``, ``IS NOT NULL``; with ``exact_answers=True`` also
  ``<>``/``NOT IN``, whose NULL rows are then taken out (by default the answer keeps them, as
  Paimon's does -- Java's answers are pinned by the golden tests; SQL never matches NULL there);
* ``range-bitmap`` and ``bsi``: every comparison, ``IN``/``NOT IN``, ``BETWEEN``, ``IS [NOT] NULL``
  (NULL rows never match a comparison there, as in SQL);
* ``bloom-filter`` and unknown index types: never.

Never exact, whatever the index: a NULL literal (``c IN (1, NULL)``: an index matches the NULL rows,
SQL does not), CHAR (padding) and TIME columns, TIMESTAMP(7..9) (keys floored to micros), string
matches (``LIKE`` ...), an empty index answering REMAIN, a corrupt index. FLOAT/DOUBLE leaves are
exact after the zero rewrite above (both zeros looked up; every NaN is one key and the largest, as
Spark orders them). AND/OR combine exactness as :mod:`~paimon_index.fileindex.result` describes.

Which bodies are read: only those of the indexes that can answer a leaf's operator
(:func:`answers`: the index type's reader overrides the operator's visit; a Bloom filter answers
``=``/``IN`` only, so ``c < 5`` never reads one), prefetched together at the top level; an AND stops
reading at the first SKIP. The evaluator records what it read (:attr:`FileIndexEvaluator.read`)
and what it left unread and why (:attr:`FileIndexEvaluator.unread`), for the scan report.

This module is the one place that decides what a query does with a corrupt index: by default the
:class:`~paimon_index.errors.CorruptFileError` propagates; with ``on_corrupt="remain"`` the leaf
answers REMAIN (always a correct superset), a warning is logged and :attr:`corrupt_indexes` counts it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from paimon_index.errors import CorruptFileError, PaimonIndexError
from paimon_index.fileindex.base import IndexReader, TopN
from paimon_index.fileindex.format import ContainerReader, IndexEntry
from paimon_index.fileindex.registry import find_index_type
from paimon_index.fileindex.result import REMAIN, SKIP, FileIndexResult, Rows
from paimon_index.predicate import (
    ALWAYS_FALSE,
    ALWAYS_TRUE,
    And,
    Computed,
    Leaf,
    Op,
    Or,
    Predicate,
    and_,
    columns_of,
)
from paimon_index.types import DataType, TypeRoot

__all__ = ["CANNOT_ANSWER", "EMPTY_INDEX_SKIPS", "EXACT_OPS", "NOT_NEEDED", "FileIndexEvaluator", "answers",
           "java_float_leaf"]

log = logging.getLogger(__name__)

#: Operators an empty index (no rows) answers with SKIP; every other operator gives REMAIN.
EMPTY_INDEX_SKIPS = frozenset({Op.EQ, Op.IN, Op.LT, Op.LE, Op.GT, Op.GE, Op.IS_NOT_NULL,
                               Op.STARTS_WITH, Op.ENDS_WITH, Op.CONTAINS})


_COMPARISONS = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.BETWEEN, Op.IN, Op.NOT_IN,
                          Op.IS_NULL, Op.IS_NOT_NULL})
#: Index type -> the leaf operators whose answer is exactly the rows SQL keeps (see the docstring).
EXACT_OPS: Mapping[str, frozenset[Op]] = {
    "bitmap": frozenset({Op.EQ, Op.IN, Op.IS_NULL, Op.IS_NOT_NULL}),
    "range-bitmap": _COMPARISONS,
    "bsi": _COMPARISONS,
}
#: The bitmap index keeps NULL rows for these; the exact answer takes them out.
_BITMAP_NULL_KEEPING = frozenset({Op.NE, Op.NOT_IN})
#: Column types whose index keys compare as Spark compares the values (TIMESTAMP: precision <= 6).
_EXACT_TYPES = frozenset({
    TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.FLOAT,
    TypeRoot.DOUBLE, TypeRoot.DECIMAL, TypeRoot.BOOLEAN, TypeRoot.VARCHAR, TypeRoot.DATE,
    TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ,
})

_FLOAT_ROOTS = (TypeRoot.FLOAT, TypeRoot.DOUBLE)

#: The reader methods that answer each operator (IN and NOT IN fall back to ``=`` and ``<>``).
_VISITS: Mapping[Op, tuple[str, ...]] = {
    Op.EQ: ("visit_eq",), Op.NE: ("visit_ne",), Op.LT: ("visit_lt",), Op.LE: ("visit_le",),
    Op.GT: ("visit_gt",), Op.GE: ("visit_ge",), Op.IN: ("visit_in", "visit_eq"),
    Op.NOT_IN: ("visit_not_in", "visit_ne"), Op.IS_NULL: ("visit_is_null",),
    Op.IS_NOT_NULL: ("visit_is_not_null",), Op.BETWEEN: ("visit_between",),
    Op.STARTS_WITH: ("visit_starts_with",), Op.ENDS_WITH: ("visit_ends_with",),
    Op.CONTAINS: ("visit_contains",), Op.LIKE: ("visit_like",),
}
#: Why a body was not read (see :attr:`FileIndexEvaluator.unread`).
CANNOT_ANSWER = "the index type cannot answer {op}"
NOT_NEEDED = "not needed: the answer was decided without it"


@functools.lru_cache(maxsize=256)
def answers(index_type: str, op: Op) -> bool:
    """Whether an index of ``index_type`` can answer ``op`` with anything but REMAIN (its reader
    overrides the operator's visit); an unknown index type answers nothing."""
    found = find_index_type(index_type)
    if found is None:
        return False
    return any(getattr(found.reader, name) is not getattr(IndexReader, name) for name in _VISITS[op])


def _asked(leaf: Leaf) -> frozenset[Op]:
    """The operators an index may be asked for ``leaf`` (the float and timestamp rewrites included)."""
    ops = {leaf.op}
    if leaf.op is Op.EQ:
        ops.add(Op.IN)
    elif leaf.op is Op.NE:
        ops |= {Op.NOT_IN, Op.IS_NOT_NULL}
    elif leaf.op is Op.NOT_IN:
        ops.add(Op.IS_NOT_NULL)
    elif leaf.op is Op.BETWEEN:
        ops |= {Op.GE, Op.LE}
    elif leaf.op is Op.GT:
        ops.add(Op.GE)
    return frozenset(ops)


def _leaves(p: Predicate) -> list[Leaf]:
    if isinstance(p, Leaf):
        return [p]
    if isinstance(p, And | Or):
        return [leaf for c in p.children for leaf in _leaves(c)]
    return []
#: The zero a range bound on 0.0 becomes in Java's order, so that both zeros fall on the right side.
_ZERO_BOUND = {Op.LT: -0.0, Op.GE: -0.0, Op.LE: 0.0, Op.GT: 0.0}


def _both_zeros(values: tuple[object, ...]) -> tuple[object, ...]:
    out: list[object] = []
    for v in values:
        out.extend((0.0, -0.0) if v == 0 and v is not None else (v,))
    return tuple(out)


def java_float_leaf(leaf: Leaf) -> Predicate:
    """A bound leaf on a FLOAT/DOUBLE column, rewritten so that Java-ordered keys answer it with
    Spark's meaning (see the module docstring); other leaves are returned as they are."""
    lits = leaf.literals
    if not any(v == 0 and v is not None for v in lits):
        return leaf
    match leaf.op:
        case Op.EQ | Op.IN:
            return Leaf(Op.IN, leaf.column, _both_zeros(lits))
        case Op.NE | Op.NOT_IN:
            return Leaf(Op.NOT_IN, leaf.column, _both_zeros(lits))
        case Op.LT | Op.LE | Op.GT | Op.GE:
            return Leaf(leaf.op, leaf.column, (_ZERO_BOUND[leaf.op],))
        case Op.BETWEEN:
            low, high = lits
            return and_(java_float_leaf(Leaf(Op.GE, leaf.column, (low,))),
                        java_float_leaf(Leaf(Op.LE, leaf.column, (high,))))
    return leaf


#: Above this precision a timestamp's key is its epoch micros rounded down (Java's ``toMicros``).
MAX_EXACT_TIMESTAMP_PRECISION = 6


def floored_timestamp_leaf(leaf: Leaf) -> Leaf:
    """A bound leaf on a TIMESTAMP(7..9) column, whose keys are the values floored to micros.

    A literal is whole micros, so ``<``, ``<=``, ``>=``, ``=`` and ``IN`` on the floored keys keep
    every matching row; ``>`` must also keep the rows inside the literal's microsecond (``>=``), and
    ``<>``/``NOT IN`` cannot exclude a key whose rows may differ below a microsecond.
    """
    match leaf.op:
        case Op.GT:
            return Leaf(Op.GE, leaf.column, leaf.literals)
        case Op.NE | Op.NOT_IN if None not in leaf.literals:
            return Leaf(Op.IS_NOT_NULL, leaf.column)
    return leaf


class FileIndexEvaluator:
    """Answers predicates for one data file from its container.

    Args:
        container: the file's index container.
        schema: column name -> Paimon type for every column a predicate may name.
        on_corrupt: ``"raise"`` (default) or ``"remain"`` (see module docstring).
        exact_answers: also make the answers exact that need one more bitmap (the bitmap index's
            ``<>``/``NOT IN`` without NULL rows); off by default, where answers equal Paimon's.
        readers: index readers already built on this container, by (column, index type, column
            type), to reuse and extend (a cache shares them across queries: readers keep what
            they parsed, e.g. a range bitmap's dictionary and bit slices).
    """

    def __init__(self, container: ContainerReader, schema: Mapping[str, DataType], *,
                 on_corrupt: Literal["raise", "remain"] = "raise", exact_answers: bool = False,
                 readers: dict[Any, IndexReader | None] | None = None) -> None:
        self.container = container
        self.schema = schema
        self.on_corrupt = on_corrupt
        self.exact_answers = exact_answers
        self._rewriting = 0  # > 0 while evaluating a leaf rewritten by java_float_leaf
        self.corrupt_indexes = 0
        self._readers: dict[Any, IndexReader | None] = {} if readers is None else readers
        #: The index bodies asked for an answer (each read, or found parsed in a shared reader).
        self.read: dict[IndexEntry, None] = {}
        #: Index bodies of the asked columns left unread, and why (:data:`CANNOT_ANSWER`, ...).
        self.unread: dict[IndexEntry, str] = {}

    def reader(self, entry: IndexEntry) -> IndexReader | None:
        """The reader of one index (None for an empty index or an unknown index type)."""
        dtype = self.schema.get(entry.column)
        # The column type is part of the key: a reader decodes keys as its type says.
        key = (entry.column, entry.index_type, dtype)
        if key not in self._readers:
            index_type = find_index_type(entry.index_type)
            if entry.empty or index_type is None or dtype is None:
                self._readers[key] = None
            else:
                self._readers[key] = index_type.create_reader(
                    dtype, self.container.source, entry.start, entry.length, entry.column)
        return self._readers[key]

    def prefetch(self, columns: Iterable[str]) -> None:
        """Fetch what the indexes of ``columns`` read first, in one request over a ranged source.

        Only a hint: a failure here is left for the evaluation to meet (and the corrupt-index
        policy to decide), so the first error is still reported where it belongs.
        """
        self._prefetch({c: None for c in columns})

    def _prefetch(self, wanted: Mapping[str, frozenset[Op] | None]) -> None:
        """Prefetch the bodies of ``wanted``'s columns that can answer one of its operators
        (None: any)."""
        if getattr(self.container.source, "prefetch", None) is None:
            return
        ranges: list[tuple[int, int]] = []
        for column, ops in wanted.items():
            for entry in self.container.column_entries(column):
                if ops is not None and not any(answers(entry.index_type, op) for op in ops):
                    continue
                try:
                    reader = None if entry.empty else self.reader(entry)
                except PaimonIndexError:
                    continue
                if reader is not None:
                    ranges.extend(reader.prefetch_ranges())
        with contextlib.suppress(PaimonIndexError):
            self.container.prefetch(ranges)

    def evaluate(self, predicate: Predicate, *, java_order: bool = False) -> FileIndexResult:
        """The answer for a bound predicate (see :func:`paimon_index.predicate.bind`).

        ``java_order=True`` (internal): float leaves are already rewritten for Java's key order.
        At the top level, the index parts of every column the predicate names are prefetched
        together first (see :meth:`prefetch`).
        """
        if not java_order:
            wanted: dict[str, frozenset[Op]] = {}
            for leaf in _leaves(predicate):
                wanted[leaf.column] = wanted.get(leaf.column, frozenset()) | _asked(leaf)
            self._prefetch(wanted)
        result = self._evaluate(predicate, java_order)
        for column in columns_of(predicate):
            for entry in self.container.column_entries(column):
                if entry not in self.read and not entry.empty:
                    self.unread.setdefault(entry, NOT_NEEDED)
        return result

    def _evaluate(self, predicate: Predicate, java_order: bool) -> FileIndexResult:
        if isinstance(predicate, Leaf):
            return self._leaf(predicate, java_order)
        if isinstance(predicate, And):
            result: FileIndexResult = REMAIN
            for i, child in enumerate(predicate.children):
                r = self._evaluate(child, java_order)
                result = r if i == 0 else result & r
                if not result.remain:
                    return result
            return result
        if isinstance(predicate, Or):
            result = SKIP
            for i, child in enumerate(predicate.children):
                r = self._evaluate(child, java_order)
                result = r if i == 0 else result | r
            return result
        if predicate == ALWAYS_FALSE:
            return SKIP
        assert predicate == ALWAYS_TRUE or isinstance(predicate, Computed)  # Computed: cannot tell
        return REMAIN

    def _leaf(self, leaf: Leaf, java_order: bool) -> FileIndexResult:
        dtype = self.schema.get(leaf.column)
        is_float = dtype is not None and dtype.root in _FLOAT_ROOTS
        if not java_order and is_float:
            java = java_float_leaf(leaf)
            if java is not leaf:
                self._rewriting += 1
                try:
                    return self._evaluate(java, True)
                finally:
                    self._rewriting -= 1
        floored = dtype is not None and dtype.is_timestamp \
            and (dtype.precision or 0) > MAX_EXACT_TIMESTAMP_PRECISION
        if floored:
            leaf = floored_timestamp_leaf(leaf)
        # A float leaf a caller asked in Java's order (not our rewrite) has Java's rows, not Spark's.
        may_be_exact = not floored and dtype is not None and dtype.root in _EXACT_TYPES \
            and None not in leaf.literals and not (is_float and java_order and not self._rewriting)
        result: FileIndexResult = REMAIN
        exact = False
        for entry in self.container.column_entries(leaf.column):
            r: FileIndexResult
            if entry.empty:
                r = SKIP if leaf.op in EMPTY_INDEX_SKIPS else REMAIN
            elif not answers(entry.index_type, leaf.op):
                # It would answer REMAIN: its body is not read (REMAIN & x is x, as exact as before).
                self.unread.setdefault(entry, CANNOT_ANSWER.format(op=leaf.op.value))
                continue
            else:
                self.read[entry] = None
                self.unread.pop(entry, None)
                try:
                    reader = self.reader(entry)
                    r = REMAIN if reader is None else _forced(reader.evaluate(leaf))
                    if may_be_exact and reader is not None and isinstance(r, Rows):
                        if leaf.op in EXACT_OPS.get(entry.index_type, ()):
                            r, exact = r.exactly(), True
                        elif self.exact_answers and entry.index_type == "bitmap" \
                                and leaf.op in _BITMAP_NULL_KEEPING:
                            r, exact = _without_nulls(reader, r), True
                except CorruptFileError as e:
                    r = self._corrupt(entry, e)
            result = result & r
            if not result.remain:
                return result
        # One exact answer ANDed with supersets of it is still exactly it.
        return result.exactly() if exact and isinstance(result, Rows) else result

    def _corrupt(self, entry: IndexEntry, error: CorruptFileError) -> FileIndexResult:
        if self.on_corrupt == "raise":
            raise error
        self.corrupt_indexes += 1
        log.warning("ignoring corrupt %s index of column %r: %s", entry.index_type, entry.column,
                    error)
        return REMAIN

    def evaluate_topn(self, topn: TopN | None, result: FileIndexResult = REMAIN) -> FileIndexResult:
        """Narrow ``result`` to the TopN candidate rows, as Paimon's ``evaluateTopN`` does."""
        if topn is None or not result.remain:
            return result
        if isinstance(result, Rows) and len(result.bitmap) <= topn.limit:
            return result
        column = topn.orders[0].column
        self.prefetch([column])
        for entry in self.container.column_entries(column):
            if entry.empty:
                continue
            self.read[entry] = None
            self.unread.pop(entry, None)
            try:
                reader = self.reader(entry)
                answer = REMAIN if reader is None else _forced(reader.visit_topn(topn, result))
            except CorruptFileError as e:
                answer = self._corrupt(entry, e)
            if answer is not REMAIN:
                return answer
        return result


def _without_nulls(reader: IndexReader, rows: Rows) -> Rows:
    """A bitmap index's ``<>``/``NOT IN`` answer minus the NULL rows: exactly SQL's rows."""
    nulls = reader.visit_is_null()
    if not isinstance(nulls, Rows):  # pragma: no cover - the bitmap index always answers IS NULL
        return rows
    return Rows(rows.bitmap - nulls.bitmap, exact=True)


def _forced(result: FileIndexResult) -> FileIndexResult:
    """Compute a lazy bitmap now, so a corrupt body is reported where the policy applies."""
    if isinstance(result, Rows):
        result.bitmap  # noqa: B018 - forces the lazy bitmap
    return result
