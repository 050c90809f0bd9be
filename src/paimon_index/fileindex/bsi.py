"""The legacy ``bsi`` file index (Paimon ``BitSliceIndexBitmapFileIndex``, version 1).

Deprecated in Paimon in favour of ``range-bitmap`` but still found in tables: we read it and
write it byte-for-byte. Values are 64-bit integers; non-negative values go to a *positive*
bit-sliced index, negative values to a *negative* one holding their absolute values.

Layout (big-endian unless noted)::

    1     version             u8 = 1
    4     row count           i32 >= 0: rows written, NULLs included
    1     has positive        u8: 0 or 1
    var   positive BSI        (only when has positive = 1)
    1     has negative        u8: 0 or 1
    var   negative BSI        (only when has negative = 1)

    BSI (Paimon ``BitSliceIndexRoaringBitmap``):
    1     version             u8 = 1
    8     min                 i64 >= 0 (the writer always stores 0, see below)
    8     max                 i64 >= min: largest stored (absolute) value
    var   existence bitmap    portable Roaring (little-endian inside, see bit_slice): rows stored
    4     slice count         i32 = bit-length of (max - min), 0..63
    var   slice i             portable Roaring: rows whose (value - min) has bit i set

A BSI is written only when it holds at least one row. Types: TINYINT, SMALLINT, INT, BIGINT, DATE,
TIME, TIMESTAMP, TIMESTAMP_LTZ (millis for precision <= 3, else micros) and DECIMAL (unscaled).

Java quirks reproduced:

* The writer's minimum statistic starts at 0 and only ever goes down, so ``min`` is always 0
  and slices hold the values themselves.
* ``Long.MIN_VALUE`` cannot be written (its absolute value overflows): the writer refuses the
  column (:class:`BsiValueError`). Readers answer a ``Long.MIN_VALUE`` literal knowing no row holds
  it.
* A NULL literal makes Java throw; we answer REMAIN.

Answers are exact row bitmaps; NULL rows never match ``=``, ``<>``, ``IN``, ``NOT IN`` or a range.
TopN is not answered (REMAIN). Checked on read: versions, flags 0/1, non-negative row count,
``0 <= min <= max``, slice count = bit-length of ``max - min``, Roaring structure, existence
positions below the row count, no trailing bytes. The whole body is walked on the first query;
bitmaps are decoded only when a query needs them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from pyroaring import BitMap

from paimon_index.binary import ByteReader, ByteWriter, Source
from paimon_index.errors import BsiValueError, InvalidOptionError, InvalidPredicateError
from paimon_index.fileindex.base import IndexReader, IndexType, IndexWriter
from paimon_index.fileindex.bit_slice import (
    deserialize_bitmap,
    portable_span,
    serialize_positions,
)
from paimon_index.fileindex.result import REMAIN, FileIndexResult, Rows
from paimon_index.types import CanonicalColumn, DataType, TypeRoot

__all__ = ["BsiIndex", "BsiReader", "BsiValueError", "BsiWriter"]

VERSION = 1
BSI_VERSION = 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
MAX_INT = 2**31 - 1
#: The writer's min statistic starts here and values are non-negative, so it stays here.
WRITER_MIN = 0

SUPPORTED_TYPES = frozenset({
    TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.DATE,
    TypeRoot.TIME, TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ, TypeRoot.DECIMAL,
})


# ------------------------------------------------------------------------------------------------
# Writer
# ------------------------------------------------------------------------------------------------
def _serialize_bsi(rows: np.ndarray, values: np.ndarray) -> bytes:
    """One BSI over non-negative ``values`` at ascending ``rows``."""
    top = int(values.max()) if values.size else 0
    maximum = max(WRITER_MIN, top)
    n_slices = (maximum - WRITER_MIN).bit_length()
    shifted = (values - WRITER_MIN).astype(np.uint64)
    w = ByteWriter()
    w.i8(BSI_VERSION)
    w.i64(WRITER_MIN)
    w.i64(maximum)
    w.write(serialize_positions(rows))
    w.i32(n_slices)
    for i in range(n_slices):
        bit = ((shifted >> np.uint64(i)) & np.uint64(1)).astype(bool)
        w.write(serialize_positions(rows[bit]))
    return w.getvalue()


class BsiWriter(IndexWriter):
    """Builds a legacy BSI index over a whole column (vectorized)."""

    def build(self, column: CanonicalColumn) -> bytes:
        n = len(column)
        if n > MAX_INT:
            raise InvalidOptionError(f"a bsi index holds at most {MAX_INT} rows")
        valid = np.asarray(column.valid, dtype=bool)
        rows = np.flatnonzero(valid).astype(np.int64)
        values = np.asarray(column.values).astype(np.int64, copy=False)[rows]
        if values.size and int(values.min()) == LONG_MIN:
            raise BsiValueError("the bsi index cannot store -9223372036854775808 "
                                "(Long.MIN_VALUE); Paimon's writer fails on it too")
        positive = values >= 0
        w = ByteWriter()
        w.i8(VERSION)
        w.i32(n)
        for sel, vals in ((positive, values[positive]), (~positive, -values[~positive])):
            present = bool(sel.any())
            w.bool(present)
            if present:
                w.write(_serialize_bsi(rows[sel], vals))
        return w.getvalue()


# ------------------------------------------------------------------------------------------------
# Reader
# ------------------------------------------------------------------------------------------------
@dataclass
class _Bsi:
    """One bit-sliced index (positive or negative); bitmaps decoded on first use."""

    reader: ByteReader | None
    minimum: int
    maximum: int
    ebm_span: tuple[int, int] | None
    slice_spans: list[tuple[int, int]]
    row_count: int
    name: str
    _ebm: BitMap | None = None
    _slices: dict[int, BitMap] = field(default_factory=dict)

    def _decode(self, span: tuple[int, int], what: str) -> BitMap:
        r = self.reader
        assert r is not None
        r.seek(span[0])
        return deserialize_bitmap(r.read_view(span[1] - span[0], what), r, what, span[0])

    def ebm(self) -> BitMap:
        if self._ebm is None:
            if self.ebm_span is None:
                self._ebm = BitMap()
            else:
                what = f"{self.name} existence bitmap"
                ebm = self._decode(self.ebm_span, what)
                if ebm and ebm.max() >= self.row_count:
                    assert self.reader is not None
                    raise self.reader.error(f"row {ebm.max()} beyond the row count "
                                            f"{self.row_count}", what, self.ebm_span[0])
                self._ebm = ebm
        return self._ebm

    def slice(self, i: int) -> BitMap:
        s = self._slices.get(i)
        if s is None:
            s = self._slices[i] = self._decode(self.slice_spans[i], f"{self.name} slice {i}")
        return s

    # Java BitSliceIndexRoaringBitmap.compare: min/max shortcuts, then O'Neil's algorithm.
    def compare(self, op: str, value: int) -> BitMap:
        lo, hi = self.minimum, self.maximum
        shortcut: bool | None = None  # True = every stored row, False = none
        if op == "eq":
            shortcut = True if lo == hi == value else False if value < lo or value > hi else None
        elif op == "ge":
            shortcut = True if value <= lo else False if value > hi else None
        elif op == "gt":
            shortcut = True if value < lo else False if value >= hi else None
        elif op == "le":
            shortcut = True if value >= hi else False if value < lo else None
        elif op == "lt":
            shortcut = True if value > hi else False if value <= lo else None
        if shortcut is not None:
            return self.ebm().copy() if shortcut else BitMap()
        return self._oneil(op, value - lo)

    def _oneil(self, op: str, predicate: int) -> BitMap:
        gt, lt = BitMap(), BitMap()
        eq = self.ebm()
        for i in range(len(self.slice_spans) - 1, -1, -1):
            s = self.slice(i)
            if (predicate >> i) & 1:
                lt |= eq - s
                eq = eq & s
            else:
                gt |= eq & s
                eq = eq - s
        ebm = self.ebm()
        eq = eq & ebm
        if op == "eq":
            return eq
        if op == "gt":
            return gt & ebm
        if op == "lt":
            return lt & ebm
        if op == "le":
            return (lt | eq) & ebm
        return (gt | eq) & ebm  # ge


def _read_bsi(r: ByteReader, name: str, row_count: int) -> _Bsi:
    at = r.pos
    version = r.u8(f"{name} version")
    if version != BSI_VERSION:
        raise r.error(f"unsupported version {version} (supported: {BSI_VERSION})",
                      f"{name} version", at)
    at = r.pos
    minimum = r.i64(f"{name} min")
    maximum = r.i64(f"{name} max")
    if not 0 <= minimum <= maximum:
        raise r.error(f"min {minimum} / max {maximum}: need 0 <= min <= max", f"{name} min/max",
                      at)
    ebm = portable_span(r, f"{name} existence bitmap")
    at = r.pos
    n = r.i32(f"{name} slice count")
    if n != (maximum - minimum).bit_length():
        raise r.error(f"slice count {n} != bit-length of max - min = {maximum - minimum}",
                      f"{name} slice count", at)
    spans = [portable_span(r, f"{name} slice {i}") for i in range(n)]
    return _Bsi(r, minimum, maximum, ebm, spans, row_count, name)


def _empty_bsi(row_count: int) -> _Bsi:
    return _Bsi(None, 0, 0, None, [], row_count, "absent bsi")


@dataclass
class _Body:
    row_count: int
    positive: _Bsi
    negative: _Bsi


class BsiReader(IndexReader):
    """Answers predicates from one legacy BSI body (walked on the first query)."""

    def __init__(self, dtype: DataType, source: Source, start: int, length: int) -> None:
        super().__init__(dtype, source, start, length)
        self._body: _Body | None = None

    def prefetch_ranges(self) -> list[tuple[int, int]]:
        # A query reads the head, then only what its literals need: fetch the head up front.
        return self.prefix_range()

    @property
    def body(self) -> _Body:
        if self._body is None:
            r = ByteReader(self.source, self.start, self.start + self.length)
            at = r.pos
            version = r.u8("bsi version")
            if version != VERSION:
                raise r.error(f"unsupported version {version} (supported: {VERSION})",
                              "bsi version", at)
            at = r.pos
            rows = r.i32("bsi row count")
            if rows < 0:
                raise r.error(f"negative row count {rows}", "bsi row count", at)
            parts = []
            for name in ("positive bsi", "negative bsi"):
                at = r.pos
                flag = r.u8(f"has {name}")
                if flag not in (0, 1):
                    raise r.error(f"flag {flag} is neither 0 nor 1", f"has {name}", at)
                parts.append(_read_bsi(r, name, rows) if flag else _empty_bsi(rows))
            r.expect_end("bsi body")
            self._body = _Body(rows, parts[0], parts[1])
        return self._body

    # -- exact row sets ---------------------------------------------------------------------------
    def not_null(self) -> BitMap:
        b = self.body
        return b.positive.ebm() | b.negative.ebm()

    def is_null(self) -> BitMap:
        return BitMap(range(self.body.row_count)) - self.not_null()

    def _eq(self, value: int) -> BitMap:
        b = self.body
        if value <= LONG_MIN:
            return BitMap()  # no row holds Long.MIN_VALUE
        if value < 0:
            return b.negative.compare("eq", -value)
        return b.positive.compare("eq", value)

    def isin(self, values: Sequence[int]) -> BitMap:
        out = BitMap()
        for v in values:
            out |= self._eq(v)
        return out

    def notin(self, values: Sequence[int]) -> BitMap:
        return self.not_null() - self.isin(values)

    def lt(self, value: int) -> BitMap:
        b = self.body
        if value <= LONG_MIN:
            return BitMap()
        if value < 0:
            return b.negative.compare("gt", -value)
        return b.positive.compare("lt", value) | b.negative.ebm()

    def le(self, value: int) -> BitMap:
        b = self.body
        if value <= LONG_MIN:
            return BitMap()
        if value < 0:
            return b.negative.compare("ge", -value)
        return b.positive.compare("le", value) | b.negative.ebm()

    def gt(self, value: int) -> BitMap:
        b = self.body
        if value <= LONG_MIN:
            return self.not_null()
        if value < 0:
            return b.positive.ebm() | b.negative.compare("lt", -value)
        return b.positive.compare("gt", value)

    def ge(self, value: int) -> BitMap:
        b = self.body
        if value <= LONG_MIN:
            return self.not_null()
        if value < 0:
            return b.positive.ebm() | b.negative.compare("le", -value)
        return b.positive.compare("ge", value)

    # -- predicate visitors -----------------------------------------------------------------------
    @staticmethod
    def _value(literal: Any) -> int:
        if isinstance(literal, bool) or not isinstance(literal, int | np.integer):
            raise InvalidPredicateError(f"bsi literal {literal!r} is not an integer key")
        return int(literal)

    def _answer(self, literals: Sequence[Any], op: Callable[..., BitMap]) -> FileIndexResult:
        if any(lit is None for lit in literals):
            return REMAIN  # Java throws on a NULL literal
        values = [self._value(lit) for lit in literals]
        return Rows(lambda: op(*values))

    def visit_eq(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], lambda v: self.isin([v]))

    def visit_ne(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], lambda v: self.notin([v]))

    def visit_in(self, literals: Sequence[Any]) -> FileIndexResult:
        return self._answer(list(literals), lambda *vs: self.isin(vs))

    def visit_not_in(self, literals: Sequence[Any]) -> FileIndexResult:
        return self._answer(list(literals), lambda *vs: self.notin(vs))

    def visit_lt(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.lt)

    def visit_le(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.le)

    def visit_gt(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.gt)

    def visit_ge(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.ge)

    def visit_between(self, low: Any, high: Any) -> FileIndexResult:
        return self._answer([low, high], lambda a, b: self.ge(a) & self.le(b))

    def visit_is_null(self) -> FileIndexResult:
        return Rows(self.is_null)

    def visit_is_not_null(self) -> FileIndexResult:
        return Rows(self.not_null)

    def describe(self) -> dict[str, Any]:
        b = self.body

        def part(bsi: _Bsi) -> dict[str, Any] | None:
            if bsi.ebm_span is None:
                return None
            return {"min": bsi.minimum, "max": bsi.maximum, "slices": len(bsi.slice_spans),
                    "rows": len(bsi.ebm())}

        return {"index": BsiIndex.name, "version": VERSION, "rows": b.row_count,
                "nulls": b.row_count - len(self.not_null()), "positive": part(b.positive),
                "negative": part(b.negative)}


# ------------------------------------------------------------------------------------------------
# Index type
# ------------------------------------------------------------------------------------------------
class BsiIndex(IndexType):
    """``bsi`` (deprecated in Paimon): exact answers to point and range queries on integers."""

    name: ClassVar[str] = "bsi"
    supported: ClassVar[frozenset[TypeRoot]] = SUPPORTED_TYPES
    reader: ClassVar[type[IndexReader]] = BsiReader
    writer: ClassVar[type[IndexWriter]] = BsiWriter
    option_validators: ClassVar[Mapping[str, Callable[[str, str], object]]] = {}
