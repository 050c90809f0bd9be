"""What a file index says about one data file: REMAIN, SKIP, or the rows that may match.

Invariant: **every result is a superset of the rows that match** (for a Bloom filter, of the file
containing a match). ``SKIP`` is the empty set, ``REMAIN`` is "all rows", ``Rows(b)`` is exactly the
rows in the Roaring bitmap ``b``. Combinators keep the invariant::

    a & b      REMAIN & x = x      SKIP & x = SKIP     Rows(p) & Rows(q) = Rows(p ∩ q)
    a | b      REMAIN | x = REMAIN SKIP | x = x        Rows(p) | Rows(q) = Rows(p ∪ q)
    a.and_not(deleted)             Rows(p) - deleted;  REMAIN -> Rows(all - deleted) given a row count

The algebra is Paimon's ``FileIndexResult``/``BitmapIndexResult``. Bitmaps are computed lazily (a
``Rows`` built from a function runs it on first use) so an AND can stop at the first SKIP without
reading the other indexes' bitmaps. A ``Rows`` with an empty bitmap means the file can be skipped.

Exactness (for answers without reading data, e.g. ``count(*) WHERE``): a result may also say that
it is **exactly** the matching rows, not only a superset (:attr:`FileIndexResult.exact`). SKIP is
always exact (the empty superset is the empty set), REMAIN never is, a ``Rows`` is exact only when
built with ``exact=True`` (:mod:`paimon_index.fileindex.evaluate` decides which index answers are)::

    exact(a & b) = a is SKIP or b is SKIP or (exact(a) and exact(b))
    exact(a | b) = exact(a) and exact(b)      (SKIP | x keeps x's exactness)
    exact(r.and_not(deleted)) = exact(r)      exact(r.limit(k)) = False

The same bitmaps come out whatever the flags say: exactness only adds information.
"""

from __future__ import annotations

from collections.abc import Callable

from pyroaring import BitMap

__all__ = ["REMAIN", "SKIP", "FileIndexResult", "Remain", "Rows", "Skip"]


class FileIndexResult:
    """Base of the three kinds of answer. Immutable."""

    __slots__ = ()

    @property
    def remain(self) -> bool:
        """False only when no row of the file can match."""
        raise NotImplementedError

    @property
    def exact(self) -> bool:
        """True when the answer is exactly the matching rows (not only a superset of them)."""
        return False

    def __and__(self, other: FileIndexResult) -> FileIndexResult:
        raise NotImplementedError

    def __or__(self, other: FileIndexResult) -> FileIndexResult:
        raise NotImplementedError


class Remain(FileIndexResult):
    """The index cannot exclude anything."""

    __slots__ = ()

    @property
    def remain(self) -> bool:
        return True

    def __and__(self, other: FileIndexResult) -> FileIndexResult:
        # "cannot tell" AND x: x's rows, but only a superset of the matches (unless x is SKIP).
        return other.inexact() if isinstance(other, Rows) else other

    def __or__(self, other: FileIndexResult) -> FileIndexResult:
        return self

    def __repr__(self) -> str:
        return "REMAIN"


class Skip(FileIndexResult):
    """No row can match: the file can be skipped."""

    __slots__ = ()

    @property
    def remain(self) -> bool:
        return False

    @property
    def exact(self) -> bool:
        return True

    def __and__(self, other: FileIndexResult) -> FileIndexResult:
        return self

    def __or__(self, other: FileIndexResult) -> FileIndexResult:
        return other

    def __repr__(self) -> str:
        return "SKIP"


REMAIN = Remain()
SKIP = Skip()


class Rows(FileIndexResult):
    """The rows (0-based positions in the data file) in a bitmap, computed on first use: a superset
    of the matching rows, or exactly them when ``exact``."""

    __slots__ = ("_bitmap", "_exact", "_supplier")

    def __init__(self, bitmap: BitMap | Callable[[], BitMap], *, exact: bool = False) -> None:
        self._exact = exact
        if isinstance(bitmap, BitMap):
            self._bitmap: BitMap | None = bitmap
            self._supplier: Callable[[], BitMap] | None = None
        else:
            self._bitmap = None
            self._supplier = bitmap

    @property
    def exact(self) -> bool:
        # An empty superset of the matches is exactly them (once the bitmap is known).
        return self._exact or (self._bitmap is not None and not self._bitmap)

    def _with_exact(self, exact: bool) -> Rows:
        if exact == self._exact:
            return self
        if self._bitmap is not None:
            return Rows(self._bitmap, exact=exact)
        return Rows(lambda: self.bitmap, exact=exact)

    def exactly(self) -> Rows:
        """These rows, declared to be exactly the matches (the evaluator's call, see its docstring)."""
        return self._with_exact(True)

    def inexact(self) -> Rows:
        """These rows as a superset of the matches only."""
        return self._with_exact(False)

    @property
    def bitmap(self) -> BitMap:
        """The row bitmap (do not mutate it)."""
        if self._bitmap is None:
            assert self._supplier is not None
            self._bitmap = self._supplier()
            self._supplier = None
        return self._bitmap

    @property
    def remain(self) -> bool:
        return len(self.bitmap) > 0

    def __and__(self, other: FileIndexResult) -> FileIndexResult:
        if isinstance(other, Rows):
            return Rows(lambda: self.bitmap & other.bitmap, exact=self._exact and other._exact)
        return self.inexact() if other.remain else SKIP

    def __or__(self, other: FileIndexResult) -> FileIndexResult:
        if isinstance(other, Rows):
            return Rows(lambda: self.bitmap | other.bitmap, exact=self._exact and other._exact)
        return REMAIN if other.remain else self

    def and_not(self, deleted: BitMap) -> Rows:
        """These rows minus ``deleted`` (e.g. a deletion vector); as exact as these rows."""
        return Rows(lambda: self.bitmap - deleted, exact=self._exact)

    def limit(self, k: int) -> Rows:
        """The ``k`` smallest row positions."""
        def first_k() -> BitMap:
            b = self.bitmap
            return b if len(b) <= k else BitMap(b[:k]) if k > 0 else BitMap()
        return Rows(first_k)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rows) and self.bitmap == other.bitmap

    def __hash__(self) -> int:
        return hash(tuple(self.bitmap))

    def __repr__(self) -> str:
        b = self.bitmap
        shown = ", ".join(str(x) for x in b[:10]) if len(b) else ""
        more = ", ..." if len(b) > 10 else ""
        return f"Rows({len(b)}: [{shown}{more}])"


def and_not(result: FileIndexResult, deleted: BitMap, row_count: int) -> FileIndexResult:
    """Apply a deletion vector to any result (REMAIN becomes the live rows of the file)."""
    if isinstance(result, Rows):
        return result.and_not(deleted)
    if result is SKIP or not deleted:
        return result
    return Rows(lambda: BitMap(range(row_count)) - deleted)
