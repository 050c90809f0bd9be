"""The ``range-bitmap`` file index (Paimon ``RangeBitmapFileIndex`` / ``RangeBitmap``, version 1).

A dictionary maps each distinct non-NULL value to its rank (its *code*); a bit-sliced index maps
each row to its code. Point and range predicates become a dictionary lookup plus bitwise
operations over a few slices; TopN walks the slices from the highest bit down.

Layout (big-endian)::

    4      header length      i32 = 13 + bytes of min + bytes of max
    1      version            u8 = 1
    4      row count          i32 >= 0: rows written, NULLs included
    4      cardinality        i32 >= 0: distinct non-NULL values
    var    min                smallest key  (only when cardinality > 0; key encodings:
    var    max                largest key    see range_bitmap_dictionary)
    4      dictionary length  i32 >= 0
    dictionary length         the chunked dictionary   (range_bitmap_dictionary)
    ...                       the bit-sliced index     (bit_slice), to the end of the body

Options: ``chunk-size`` (a memory size, default 16kb; 0b for TINYINT, SMALLINT and BOOLEAN, where
every key is its own chunk). Types: TINYINT, SMALLINT, INT, BIGINT, DATE, TIME, TIMESTAMP(p <= 6),
TIMESTAMP_LTZ(p <= 6), CHAR, VARCHAR, STRING, BOOLEAN, FLOAT, DOUBLE and DECIMAL(p <= 18) (the
types Paimon's ``KeyFactory`` accepts).

Semantics (Java's, all answers are exact row bitmaps):

* NULL rows never match ``=``, ``<>``, ``IN``, ``NOT IN`` or a range; ``IS NULL`` is every row
  without a value. A column with no non-NULL value answers the empty set for everything but
  ``IS NULL``.
* A NULL literal: Java throws (``NullPointerException``) unless the column has no non-NULL value,
  where it answers the empty set. We answer REMAIN where Java throws.
* Floats order by ``Float.compare``/``Double.compare``: ``-0.0 < 0.0``, NaN equals NaN and is the
  largest value, so ``= 0.0`` does not match ``-0.0`` and ``> 1`` matches NaN rows.
* TopN (``visit_topn``): nulls first/last, then the k smallest (ASC) or largest (DESC) codes of the
  selection. Strict (a single sort key): ties at the limit keep the highest row positions; NULLs
  that fill up the limit are the lowest row positions. Non-strict (more sort keys follow): all
  rows tied at the limit are kept, and all NULL rows when NULLs are needed. A column with no
  non-NULL value returns every row, whatever the selection.

Reading is lazy: the header when the first query arrives, dictionary chunks when a lookup touches
them, slices when an operation needs them. Checked: header length and version, non-negative
counts, that min <= max, that the dictionary and bit-sliced index lie inside the body (see the two
sub-modules for what they check).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pyroaring import BitMap

from paimon_index.binary import ByteReader, ByteWriter, Source
from paimon_index.errors import InvalidOptionError, InvalidPredicateError, UnsupportedTypeError
from paimon_index.fileindex.base import IndexReader, IndexType, IndexWriter, TopN
from paimon_index.fileindex.bit_slice import BitSliceReader, serialize_bit_slices
from paimon_index.fileindex.options import parse_memory_size
from paimon_index.fileindex.range_bitmap_dictionary import (
    DictionaryReader,
    KeyCodec,
    codec_for,
    encode_column,
    serialize_dictionary,
    serialize_key,
)
from paimon_index.fileindex.result import REMAIN, SKIP, FileIndexResult, Rows
from paimon_index.types import CanonicalColumn, DataType, TypeRoot

__all__ = [
    "CHUNK_SIZE_OPTION",
    "RangeBitmapIndex",
    "RangeBitmapReader",
    "RangeBitmapWriter",
]

VERSION = 1
CHUNK_SIZE_OPTION = "chunk-size"
#: version + row count + cardinality + dictionary length (min and max come on top)
HEADER_FIXED_BYTES = 1 + 4 + 4 + 4
MAX_TIMESTAMP_PRECISION = 6
MAX_DECIMAL_PRECISION = 18
MAX_INT = 2**31 - 1

SUPPORTED_TYPES = frozenset({
    TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.DATE,
    TypeRoot.TIME, TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ, TypeRoot.CHAR, TypeRoot.VARCHAR,
    TypeRoot.BOOLEAN, TypeRoot.FLOAT, TypeRoot.DOUBLE, TypeRoot.DECIMAL,
})


def _check_chunk_size(value: str, key: str) -> int:
    size = parse_memory_size(value, key)
    if size > MAX_INT:
        raise InvalidOptionError(f"{key}: chunk size {value!r} exceeds {MAX_INT} bytes")
    return size


def chunk_size_of(options: Mapping[str, str], codec: KeyCodec) -> int:
    """The ``chunk-size`` option in bytes, or the key kind's default."""
    value = options.get(CHUNK_SIZE_OPTION)
    if value is None:
        return codec.default_chunk_size
    return _check_chunk_size(value, CHUNK_SIZE_OPTION)


# ------------------------------------------------------------------------------------------------
# Writer
# ------------------------------------------------------------------------------------------------
class RangeBitmapWriter(IndexWriter):
    """Builds a range-bitmap index over a whole column (vectorized)."""

    def build(self, column: CanonicalColumn) -> bytes:
        codec = codec_for(self.dtype)
        chunk_size = chunk_size_of(self.options, codec)
        if len(column) > MAX_INT:
            raise InvalidOptionError(f"a range-bitmap index holds at most {MAX_INT} rows")
        encoded = encode_column(column, codec)
        card = encoded.cardinality
        dictionary = serialize_dictionary(codec, encoded.keys, chunk_size)
        bsi = serialize_bit_slices(encoded.rows, encoded.codes, card - 1)
        bounds = b""
        if card > 0:
            bounds = serialize_key(codec, encoded.keys, 0) + serialize_key(codec, encoded.keys,
                                                                             card - 1)
        w = ByteWriter()
        w.i32(HEADER_FIXED_BYTES + len(bounds))
        w.i8(VERSION)
        w.i32(encoded.row_count)
        w.i32(card)
        w.write(bounds)
        w.i32(len(dictionary))
        w.write(dictionary)
        w.write(bsi)
        return w.getvalue()


# ------------------------------------------------------------------------------------------------
# Reader
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Header:
    row_count: int
    cardinality: int
    min: Any  # comparable form (int or bytes); None when cardinality == 0
    max: Any
    min_raw: Any
    max_raw: Any
    dictionary_at: int
    bsi_at: int
    end: int


Key = Any  # comparable key: int (integers, floats in Java order, booleans) or bytes (strings)


class RangeBitmapReader(IndexReader):
    """Answers predicates and TopN from one range-bitmap index body (lazy)."""

    def __init__(self, dtype: DataType, source: Source, start: int, length: int) -> None:
        super().__init__(dtype, source, start, length)
        self._codec = codec_for(dtype)
        self._header: _Header | None = None
        self._dictionary: DictionaryReader | None = None
        self._bsi: BitSliceReader | None = None

    # -- lazy parts -----------------------------------------------------------------------------
    def prefetch_ranges(self) -> list[tuple[int, int]]:
        # A query reads the head, then only what its literals need: fetch the head up front.
        return self.prefix_range()

    @property
    def header(self) -> _Header:
        if self._header is None:
            self._header = self._read_header()
        return self._header

    def _read_header(self) -> _Header:
        r = ByteReader(self.source, self.start, self.start + self.length)
        at = r.pos
        header_len = r.i32("range-bitmap header length")
        if header_len < HEADER_FIXED_BYTES:
            raise r.error(f"header length {header_len} below {HEADER_FIXED_BYTES}",
                          "range-bitmap header length", at)
        h = r.sub(header_len, "range-bitmap header")
        at = h.pos
        version = h.u8("range-bitmap version")
        if version != VERSION:
            raise h.error(f"unsupported version {version} (supported: {VERSION})",
                          "range-bitmap version", at)
        at = h.pos
        rows = h.i32("range-bitmap row count")
        if rows < 0:
            raise h.error(f"negative row count {rows}", "range-bitmap row count", at)
        at = h.pos
        card = h.i32("range-bitmap cardinality")
        if not 0 <= card <= rows:
            raise h.error(f"cardinality {card} outside [0, row count {rows}]",
                          "range-bitmap cardinality", at)
        lo = hi = lo_raw = hi_raw = None
        if card > 0:
            at = h.pos
            lo_raw = self._codec.read(h, "range-bitmap min")
            hi_raw = self._codec.read(h, "range-bitmap max")
            lo, hi = self._codec.order_raw(lo_raw), self._codec.order_raw(hi_raw)
            if lo > hi or (card == 1) != (lo == hi):  # type: ignore[operator]  # one codec: both int or both bytes
                raise h.error(f"min/max inconsistent with cardinality {card}",
                              "range-bitmap min/max", at)
        at = h.pos
        dict_len = h.i32("range-bitmap dictionary length")
        if dict_len < 0 or dict_len > r.remaining:
            raise h.error(f"dictionary length {dict_len} outside [0, {r.remaining}]",
                          "range-bitmap dictionary length", at)
        h.expect_end("range-bitmap header")
        return _Header(rows, card, lo, hi, lo_raw, hi_raw, r.pos, r.pos + dict_len, r.end)

    @property
    def dictionary(self) -> DictionaryReader:
        if self._dictionary is None:
            h = self.header
            self._dictionary = DictionaryReader(self.source, h.dictionary_at, h.bsi_at,
                                                self._codec, h.cardinality)
        return self._dictionary

    @property
    def bsi(self) -> BitSliceReader:
        if self._bsi is None:
            h = self.header
            self._bsi = BitSliceReader(self.source, h.bsi_at, h.end, h.row_count)
        return self._bsi

    @property
    def cached_bytes(self) -> int:
        """Memory this reader keeps beyond the index bytes it read (its slices as words)."""
        return 0 if self._bsi is None else self._bsi.words_bytes

    def value_range(self) -> tuple[Any, Any] | None:
        """(min, max) of the non-NULL values in Java's order, from the header alone: canonical keys
        (integers, unscaled decimals, epoch units), floats as floats, strings as UTF-8 bytes;
        None when every row is NULL."""
        h = self.header
        if h.cardinality <= 0:
            return None

        def value(raw: Any) -> Any:
            return raw if isinstance(raw, bytes) else self._codec.decode(raw)
        return value(h.min_raw), value(h.max_raw)

    # -- exact row sets over comparable keys (Java RangeBitmap) ---------------------------------
    def not_null(self) -> BitMap:
        return BitMap() if self.header.cardinality <= 0 else self.bsi.not_null().copy()

    def is_null(self, found: BitMap | None = None) -> BitMap:
        h = self.header
        if h.cardinality <= 0:
            return BitMap(range(h.row_count))
        if found is not None and not found:
            return BitMap()
        nulls = BitMap(range(h.row_count)) - self.bsi.not_null()
        return nulls if found is None else nulls & found

    def _not(self, rows: BitMap) -> BitMap:
        return self.bsi.not_null() - rows

    def eq(self, key: Key) -> BitMap:
        h = self.header
        if h.cardinality <= 0:
            return BitMap()
        if key == h.min and key == h.max:
            return self.not_null()
        if key < h.min or key > h.max:
            return BitMap()
        code = self.dictionary.find(key)
        return BitMap() if code < 0 else self.bsi.eq(code)

    def ne(self, key: Key) -> BitMap:
        return BitMap() if self.header.cardinality <= 0 else self._not(self.eq(key))

    def isin(self, keys: Sequence[Key]) -> BitMap:
        out = BitMap()
        if self.header.cardinality <= 0:
            return out
        for key in keys:
            out |= self.eq(key)
        return out

    def notin(self, keys: Sequence[Key]) -> BitMap:
        return BitMap() if self.header.cardinality <= 0 else self._not(self.isin(keys))

    def gte(self, key: Key) -> BitMap:
        h = self.header
        if h.cardinality <= 0:
            return BitMap()
        if key <= h.min:
            return self.not_null()
        if key > h.max:
            return BitMap()
        code = self.dictionary.find(key)
        return self.bsi.gte(code if code >= 0 else -code - 1)

    def gt(self, key: Key) -> BitMap:
        h = self.header
        if h.cardinality <= 0:
            return BitMap()
        if key < h.min:
            return self.not_null()
        if key >= h.max:
            return BitMap()
        code = self.dictionary.find(key)
        return self.bsi.gte(-code - 1) if code < 0 else self.bsi.gt(code)

    def lte(self, key: Key) -> BitMap:
        h = self.header
        if h.cardinality <= 0:
            return BitMap()
        if key >= h.max:
            return self.not_null()
        if key < h.min:
            return BitMap()
        return self._not(self.gt(key))

    def lt(self, key: Key) -> BitMap:
        h = self.header
        if h.cardinality <= 0:
            return BitMap()
        if key > h.max:
            return self.not_null()
        if key <= h.min:
            return BitMap()
        return self._not(self.gte(key))

    def top_n(self, k: int, *, ascending: bool, nulls_first: bool, found: BitMap | None,
              strict: bool) -> BitMap:
        """Rows of the first ``k`` in ``ORDER BY col ASC|DESC NULLS FIRST|LAST`` among ``found``."""
        h = self.header
        if k < 0:
            raise InvalidPredicateError(f"TopN limit must not be negative, got {k}")
        if h.cardinality <= 0:
            return BitMap(range(h.row_count))

        def values(n: int) -> BitMap:
            if ascending:
                return self.bsi.bottom_k(n, found, strict)
            return self.bsi.top_k(n, found, strict)

        if nulls_first:
            rows = self.is_null(found)
            if len(rows) >= k:
                return rows[:k] if strict else rows
            return rows | values(k - len(rows))
        rows = values(k)
        if len(rows) >= k:
            return rows
        nulls = self.is_null(found)
        return rows | (nulls[: k - len(rows)] if strict else nulls)

    # -- predicate visitors ---------------------------------------------------------------------
    def _key(self, literal: Any) -> Key:
        return self._codec.order_literal(literal)

    def _answer(self, literals: Sequence[Any], op: Callable[..., BitMap]) -> FileIndexResult:
        if any(lit is None for lit in literals):
            # Java throws on a NULL literal unless the column has no value at all.
            return SKIP if self.header.cardinality <= 0 else REMAIN
        keys = [self._key(lit) for lit in literals]
        return Rows(lambda: op(*keys))

    def visit_eq(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.eq)

    def visit_ne(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.ne)

    def visit_lt(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.lt)

    def visit_le(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.lte)

    def visit_gt(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.gt)

    def visit_ge(self, literal: Any) -> FileIndexResult:
        return self._answer([literal], self.gte)

    def visit_between(self, low: Any, high: Any) -> FileIndexResult:
        return self._answer([low, high], lambda a, b: self.gte(a) & self.lte(b))

    def visit_in(self, literals: Sequence[Any]) -> FileIndexResult:
        return self._answer(list(literals), lambda *keys: self.isin(keys))

    def visit_not_in(self, literals: Sequence[Any]) -> FileIndexResult:
        return self._answer(list(literals), lambda *keys: self.notin(keys))

    def visit_is_null(self) -> FileIndexResult:
        return Rows(lambda: self.is_null())

    def visit_is_not_null(self) -> FileIndexResult:
        return Rows(self.not_null)

    def visit_topn(self, topn: TopN, selection: FileIndexResult) -> FileIndexResult:
        if not topn.orders:
            return REMAIN
        if not selection.remain and not isinstance(selection, Rows):
            return SKIP
        order = topn.orders[0]
        found = selection.bitmap if isinstance(selection, Rows) else None
        return Rows(lambda: self.top_n(topn.limit, ascending=order.ascending,
                                       nulls_first=order.nulls_first, found=found,
                                       strict=topn.strict))

    def describe(self) -> dict[str, Any]:
        h = self.header
        out: dict[str, Any] = {
            "index": RangeBitmapIndex.name,
            "version": VERSION,
            "rows": h.row_count,
            "cardinality": h.cardinality,
            "min": None if h.min_raw is None else self._codec.decode(h.min_raw),
            "max": None if h.max_raw is None else self._codec.decode(h.max_raw),
            "dictionary_bytes": h.bsi_at - h.dictionary_at,
            "dictionary_chunks": self.dictionary.chunk_count,
            "bsi_bytes": h.end - h.bsi_at,
            "slices": self.bsi.n_slices,
        }
        if h.cardinality > 0:
            out["nulls"] = h.row_count - len(self.bsi.not_null())
        return out


# ------------------------------------------------------------------------------------------------
# Index type
# ------------------------------------------------------------------------------------------------
class RangeBitmapIndex(IndexType):
    """``range-bitmap``: exact answers to point, range and TopN queries."""

    name: ClassVar[str] = "range-bitmap"
    supported: ClassVar[frozenset[TypeRoot]] = SUPPORTED_TYPES
    reader: ClassVar[type[IndexReader]] = RangeBitmapReader
    writer: ClassVar[type[IndexWriter]] = RangeBitmapWriter
    option_validators: ClassVar[Mapping[str, Callable[[str, str], object]]] = {
        CHUNK_SIZE_OPTION: _check_chunk_size,
    }

    @classmethod
    def check_type(cls, dtype: DataType, column: str = "?") -> None:
        super().check_type(dtype, column)
        if dtype.is_timestamp and (dtype.precision or 0) > MAX_TIMESTAMP_PRECISION:
            raise UnsupportedTypeError(
                f"index type 'range-bitmap' supports TIMESTAMP precision up to "
                f"{MAX_TIMESTAMP_PRECISION}, column {column!r} is {dtype}")
        if dtype.root is TypeRoot.DECIMAL and (dtype.precision or 0) > MAX_DECIMAL_PRECISION:
            raise UnsupportedTypeError(
                f"index type 'range-bitmap' supports DECIMAL precision up to "
                f"{MAX_DECIMAL_PRECISION}, column {column!r} is {dtype}")

