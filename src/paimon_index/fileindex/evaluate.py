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

This module is the one place that decides what a query does with a corrupt index: by default the
:class:`~paimon_index.errors.CorruptFileError` propagates; with ``on_corrupt="remain"`` the leaf
answers REMAIN (always a correct superset), a warning is logged and :attr:`corrupt_indexes` counts it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Literal

from paimon_index.errors import CorruptFileError, PaimonIndexError
from paimon_index.fileindex.base import IndexReader, TopN
from paimon_index.fileindex.format import ContainerReader, IndexEntry
from paimon_index.fileindex.registry import find_index_type
from paimon_index.fileindex.result import REMAIN, SKIP, FileIndexResult, Rows
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, And, Leaf, Op, Or, Predicate, and_, columns_of
from paimon_index.types import DataType, KeyKind

__all__ = ["EMPTY_INDEX_SKIPS", "FileIndexEvaluator", "java_float_leaf"]

log = logging.getLogger(__name__)

#: Operators an empty index (no rows) answers with SKIP; every other operator gives REMAIN.
EMPTY_INDEX_SKIPS = frozenset({Op.EQ, Op.IN, Op.LT, Op.LE, Op.GT, Op.GE, Op.IS_NOT_NULL,
                               Op.STARTS_WITH, Op.ENDS_WITH, Op.CONTAINS})


_FLOAT_KINDS = (KeyKind.FLOAT32, KeyKind.FLOAT64)
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
    """

    def __init__(self, container: ContainerReader, schema: Mapping[str, DataType], *,
                 on_corrupt: Literal["raise", "remain"] = "raise") -> None:
        self.container = container
        self.schema = schema
        self.on_corrupt = on_corrupt
        self.corrupt_indexes = 0
        self._readers: dict[tuple[str, str], IndexReader | None] = {}

    def reader(self, entry: IndexEntry) -> IndexReader | None:
        """The reader of one index (None for an empty index or an unknown index type)."""
        key = (entry.column, entry.index_type)
        if key not in self._readers:
            index_type = find_index_type(entry.index_type)
            dtype = self.schema.get(entry.column)
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
        if getattr(self.container.source, "prefetch", None) is None:
            return
        ranges: list[tuple[int, int]] = []
        for column in dict.fromkeys(columns):
            for entry in self.container.column_entries(column):
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
            self.prefetch(columns_of(predicate))
        return self._evaluate(predicate, java_order)

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
        assert predicate == ALWAYS_TRUE
        return REMAIN

    def _leaf(self, leaf: Leaf, java_order: bool) -> FileIndexResult:
        dtype = self.schema.get(leaf.column)
        if not java_order and dtype is not None and dtype.key_kind in _FLOAT_KINDS:
            java = java_float_leaf(leaf)
            if java is not leaf:
                return self._evaluate(java, True)
        if dtype is not None and dtype.is_timestamp \
                and (dtype.precision or 0) > MAX_EXACT_TIMESTAMP_PRECISION:
            leaf = floored_timestamp_leaf(leaf)
        result: FileIndexResult = REMAIN
        for entry in self.container.column_entries(leaf.column):
            if entry.empty:
                r = SKIP if leaf.op in EMPTY_INDEX_SKIPS else REMAIN
            else:
                try:
                    reader = self.reader(entry)
                    r = REMAIN if reader is None else _forced(reader.evaluate(leaf))
                except CorruptFileError as e:
                    r = self._corrupt(entry, e)
            result = result & r
            if not result.remain:
                return result
        return result

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
            try:
                reader = self.reader(entry)
                answer = REMAIN if reader is None else _forced(reader.visit_topn(topn, result))
            except CorruptFileError as e:
                answer = self._corrupt(entry, e)
            if answer is not REMAIN:
                return answer
        return result


def _forced(result: FileIndexResult) -> FileIndexResult:
    """Compute a lazy bitmap now, so a corrupt body is reported where the policy applies."""
    if isinstance(result, Rows):
        result.bitmap  # noqa: B018 - forces the lazy bitmap
    return result
