"""Bitmap file index (``bitmap``), versions 1 and 2: Paimon's ``BitmapFileIndex``.

One Roaring bitmap of row positions per distinct value, plus one for NULL. Keys are encoded as in
:mod:`paimon_index.fileindex.bitmap_keys`; integers are big-endian; bitmaps are portable Roaring,
run-optimized before serializing. An *offset* is relative to the bitmap body; a negative offset
``-1 - row`` means the value occurs in exactly one row, stored inline (no bitmap).

Version 2 (default)::

    1     version            = 2
    4     row count          i32 >= 0
    4     distinct values    i32 >= 0  (non-null keys)
    1     has NULL           bool
    4     NULL offset        i32, only if has NULL: -1-row when one NULL row, else 0
    4     NULL bitmap length i32, only if has NULL (its serialized size, even when inlined)
    4     block count        i32
          per block:  first key | i32 block offset (from the start of the blocks)
    4     blocks length      i32 = bytes of all index blocks
          index blocks, each: i32 entry count | entries (key | i32 offset | i32 length, or -1)
          bitmap body: NULL bitmap (if more than one NULL row), then the other bitmaps

    Entries are sorted by key (Java comparator order); a block holds entries while
    4 + sum(8 + key size) <= index-block-size (option, default 16kb).

Version 1 (``version = 1``)::

    1     version            = 1
    4     row count
    4     distinct values
    1     has NULL
    4     NULL offset        only if has NULL
          per key: key | i32 offset
          bitmap body (as in V2; a bitmap's length is the distance to the next offset)

Dictionary (V1) and body order (both) follow Java ``HashMap`` iteration over the keys (see
:mod:`paimon_index.javacompat`); V2 blocks are sorted. Answers (exact row bitmaps): ``=``, ``IN``
(a NULL literal matches the NULL rows), ``<>``/``NOT IN`` = all rows minus the IN answer (so NULL
rows are included, as in Paimon), ``IS NULL``, ``IS NOT NULL``; other operators REMAIN.

Checked on read: version, non-negative counts that fit, offsets and lengths inside the body, inline
rows and bitmap values below the row count, sorted V2 blocks and entries, no bytes left in a block.
Supported types: TINYINT, SMALLINT, INT, BIGINT, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ, CHAR,
VARCHAR, STRING, BOOLEAN, FLOAT, DOUBLE.
"""

from __future__ import annotations

import array
import bisect
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from paimon_index import bitmaps
from paimon_index.binary import ByteReader, ByteWriter, Source
from paimon_index.errors import CorruptFileError, InvalidOptionError
from paimon_index.fileindex.base import IndexReader, IndexType, IndexWriter
from paimon_index.fileindex.bitmap_keys import (
    distinct_keys,
    encode_entries,
    first_unsorted,
    java_key_hashes,
    key_size,
    parse_entries,
    sort_key,
)
from paimon_index.fileindex.options import parse_int, parse_memory_size
from paimon_index.fileindex.result import FileIndexResult, Rows
from paimon_index.javacompat import hashmap_order
from paimon_index.types import CanonicalColumn, DataType, KeyKind, TypeRoot

__all__ = ["BitmapIndex", "BitmapReader", "BitmapWriter"]

VERSION_1 = 1
VERSION_2 = 2
DEFAULT_VERSION = VERSION_2
DEFAULT_INDEX_BLOCK_SIZE = "16kb"
#: The entry-count prefix every V2 index block starts with.
BLOCK_HEADER_BYTES = 4
#: offset + length of one V2 block entry, besides its key.
ENTRY_INT_BYTES = 8
NO_LENGTH = -1
MAX_ROWS = 2**31 - 1


def _serialize(bitmap: BitMap) -> bytes:
    bitmap.run_optimize()  # Paimon's RoaringBitmap32.serialize() does this first
    return bitmap.serialize()


def _positions_to_bitmap(positions: np.ndarray) -> BitMap:
    buf = array.array("I")
    buf.frombytes(positions.astype(np.uint32).tobytes())
    return BitMap(buf)


class BitmapWriter(IndexWriter):
    def __init__(self, dtype: DataType, options: Mapping[str, str]) -> None:
        super().__init__(dtype, options)
        self.version = _parse_version(options.get("version", str(DEFAULT_VERSION)), "version")
        self.block_size = parse_memory_size(options.get("index-block-size", DEFAULT_INDEX_BLOCK_SIZE),
                                            "index-block-size")
        #: False when a Java HashMap bucket became a tree: order inside it differs (answers don't).
        self.java_order_exact = True

    def build(self, column: CanonicalColumn) -> bytes:
        kind = self.dtype.key_kind
        n_rows = len(column)
        if n_rows > MAX_ROWS:
            raise InvalidOptionError(f"bitmap index holds at most {MAX_ROWS} rows, got {n_rows}")
        valid = column.valid
        rows = np.flatnonzero(valid)
        null_rows = np.flatnonzero(~valid)
        values = column.values
        if isinstance(values, np.ndarray):
            present = values[rows] if column.null_count else values
        else:
            present = values.filter(pa.array(valid)) if column.null_count else values
        keyset = distinct_keys(present, kind)
        n_keys = len(keyset)

        # Rows of every key: group the non-null row positions by key code (a stable sort keeps
        # each key's rows ascending; Arrow's sort of small integers is a radix sort).
        counts = np.bincount(keyset.codes, minlength=n_keys)
        grouped = pc.sort_indices(pa.array(keyset.codes)).to_numpy()
        by_key = grouped if not column.null_count else rows[grouped]
        # One uint32 buffer for all rows; pyroaring builds from array('I') slices at memcpy speed.
        by_key_u32 = array.array("I")
        by_key_u32.frombytes(by_key.astype(np.uint32).tobytes())
        ends = np.cumsum(counts)
        starts = ends - counts

        # Paimon fills HashMap<key, bitmap> with computeIfAbsent once per non-null row.
        # Codes are first-occurrence ranks, so the last new key first shows up where code == n-1.
        last_new_row = int(np.argmax(keyset.codes == n_keys - 1)) if n_keys else 0
        order, self.java_order_exact = hashmap_order(
            java_key_hashes(keyset.keys, kind), compute=True,
            trailing_call=n_keys > 0 and last_new_row < len(rows) - 1)
        single = counts == 1
        bodies: list[bytes] = []
        null_bytes = _serialize(_positions_to_bitmap(null_rows))
        null_inline = len(null_rows) == 1
        offset = len(null_bytes) if len(null_rows) > 1 else 0
        offsets = np.empty(n_keys, dtype=np.int64)
        lengths = np.full(n_keys, NO_LENGTH, dtype=np.int64)
        starts, ends, single = starts.tolist(), ends.tolist(), single.tolist()
        for k in order.tolist():  # one bitmap per multi-row key, in HashMap order
            if single[k]:
                offsets[k] = -1 - by_key_u32[starts[k]]
                continue
            data = _serialize(BitMap(by_key_u32[starts[k] : ends[k]]))
            bodies.append(data)
            offsets[k] = offset
            lengths[k] = len(data)
            offset += len(data)

        w = ByteWriter()
        w.i8(self.version)
        w.i32(n_rows)
        w.i32(n_keys)
        w.bool(len(null_rows) > 0)
        if len(null_rows):
            w.i32(-1 - int(null_rows[0]) if null_inline else 0)
            if self.version == VERSION_2:
                w.i32(len(null_bytes))
        if self.version == VERSION_1:
            keys_in_order = _take(keyset.keys, order)
            w.write(encode_entries(kind, keys_in_order, offsets[order])[0])
        else:
            self._write_v2_blocks(w, keyset, offsets, lengths)
        if len(null_rows) > 1:
            w.write(null_bytes)
        for data in bodies:
            w.write(data)
        return w.getvalue()

    def _write_v2_blocks(self, w: ByteWriter, keyset: Any, offsets: np.ndarray,
                         lengths: np.ndarray) -> None:
        kind = self.dtype.key_kind
        if isinstance(keyset.sort_keys, pa.Array):
            sorted_idx = pc.sort_indices(keyset.sort_keys).to_numpy()
        else:
            sorted_idx = np.argsort(keyset.sort_keys, kind="stable")
        keys = _take(keyset.keys, sorted_idx)
        entry_bytes = key_size(kind, keys) + ENTRY_INT_BYTES
        too_big = entry_bytes + BLOCK_HEADER_BYTES > self.block_size
        if too_big.any():
            key = f"file-index.bitmap.{self.column}.index-block-size"
            largest = int(entry_bytes[too_big].max()) - ENTRY_INT_BYTES
            raise InvalidOptionError(
                f"column {self.column!r}: a value of {largest} bytes does not fit one bitmap index block "
                f"({key} = {self.block_size} bytes); set {key} to at least "
                f"{largest + ENTRY_INT_BYTES + BLOCK_HEADER_BYTES}"
                f" bytes (ALTER TABLE ... SET TBLPROPERTIES ('{key}' = '...')), or drop the bitmap index on "
                f"{self.column!r}")
        # Greedy packing, one searchsorted per block: a block takes entries while it fits.
        cum = np.concatenate(([0], np.cumsum(entry_bytes)))
        block_starts: list[int] = []
        i, n = 0, len(keys)
        while i < n:
            block_starts.append(i)
            i = int(np.searchsorted(cum, cum[i] + self.block_size - BLOCK_HEADER_BYTES, "right")) - 1
        block_bounds = [*block_starts, n]
        entries, _ = encode_entries(kind, keys, offsets[sorted_idx], lengths[sorted_idx])
        block_sizes = [BLOCK_HEADER_BYTES + int(cum[b] - cum[a])
                       for a, b in itertools.pairwise(block_bounds)]
        block_offsets = np.concatenate(([0], np.cumsum(block_sizes)[:-1])).astype(np.int64)
        w.i32(len(block_starts))
        if block_starts:
            first_keys = _take(keys, np.array(block_starts, dtype=np.int64))
            w.write(encode_entries(kind, first_keys, block_offsets)[0])
        w.i32(int(sum(block_sizes)))
        for a, b in itertools.pairwise(block_bounds):
            w.i32(b - a)
            w.write(entries[int(cum[a]) : int(cum[b])])


def _take(keys: Any, idx: np.ndarray) -> Any:
    if isinstance(keys, np.ndarray):
        return keys[idx]
    return keys.take(pa.array(idx, pa.int64()))


def _search(keys: np.ndarray | Sequence[bytes], key: Any, side: str) -> int:
    if isinstance(keys, np.ndarray):
        return int(np.searchsorted(keys, key, side=side))  # type: ignore[call-overload]
    return (bisect.bisect_right if side == "right" else bisect.bisect_left)(keys, key)


def _parse_version(text: str, key: str) -> int:
    version = parse_int(text, key)
    if version not in (VERSION_1, VERSION_2):
        raise InvalidOptionError(f"{key}: bitmap index version must be 1 or 2, got {version}")
    return version


class _Entry:
    __slots__ = ("length", "offset")

    def __init__(self, offset: int, length: int) -> None:
        self.offset = offset
        self.length = length


class BitmapReader(IndexReader):
    """Lazy reader: parses the head on first use; V2 loads only the index blocks a query needs."""

    def __init__(self, dtype: DataType, source: Source, start: int, length: int) -> None:
        super().__init__(dtype, source, start, length)
        self.kind: KeyKind = dtype.key_kind
        self._parsed = False
        self._cache: dict[object, BitMap] = {}

    def prefetch_ranges(self) -> list[tuple[int, int]]:
        # A query reads the head, then the one V2 block and the bitmaps of its literals: fetch the
        # head (and, for a small index, everything) up front.
        return self.prefix_range()

    # -- head -----------------------------------------------------------------------------------
    def _parse(self) -> None:
        if self._parsed:
            return
        r = ByteReader(self.source, self.start, self.start + self.length)
        self.version = r.u8("bitmap version")
        if self.version not in (VERSION_1, VERSION_2):
            raise r.error(f"unsupported bitmap index version {self.version}", "bitmap version",
                          self.start)
        at = r.pos
        self.row_count = r.i32("bitmap row count")
        if self.row_count < 0:
            raise r.error(f"negative row count {self.row_count}", "bitmap row count", at)
        min_entry = 4 + (1 if self.kind is not KeyKind.BYTES else 4)
        self.distinct = r.count("bitmap distinct value count",
                                min_item_bytes=min_entry if self.version == VERSION_1 else 0)
        self.has_null = r.bool("bitmap has-null flag")
        self.null_entry: _Entry | None = None
        if self.has_null:
            null_offset = r.i32("bitmap null offset")
            null_length = r.i32("bitmap null length") if self.version == VERSION_2 else NO_LENGTH
            self.null_entry = _Entry(null_offset, null_length)
        if self.version == VERSION_1:
            self._parse_v1(r)
        else:
            self._parse_v2(r)
        self._parsed = True

    def _parse_v1(self, r: ByteReader) -> None:
        entries = parse_entries(r, self.distinct, self.kind, 1, "bitmap dictionary")
        keys = entries.sort_keys.tolist() if isinstance(entries.sort_keys, np.ndarray) \
            else list(entries.sort_keys)
        offsets = entries.ints[:, 0]
        self.body_start = r.pos
        # V1 stores no lengths: a bitmap ends where the next one (in offset order) starts.
        stored = offsets[offsets >= 0]
        if self.null_entry is not None and self.null_entry.offset >= 0:
            stored = np.append(stored, self.null_entry.offset)
        bounds = np.unique(np.append(stored, r.end - self.body_start))
        lengths = np.full(len(offsets), NO_LENGTH, dtype=np.int64)
        nonneg = offsets >= 0
        following = np.searchsorted(bounds, offsets[nonneg], "right").clip(max=len(bounds) - 1)
        lengths[nonneg] = bounds[following] - offsets[nonneg]
        if self.null_entry is not None and self.null_entry.offset >= 0:
            nxt = bounds[min(int(np.searchsorted(bounds, self.null_entry.offset, "right")), len(bounds) - 1)]
            self.null_entry.length = int(nxt) - self.null_entry.offset
        self.dictionary: dict[object, _Entry] = {}
        for i, (key, offset, length) in enumerate(zip(keys, offsets.tolist(), lengths.tolist(), strict=True)):
            if key in self.dictionary:
                raise r.error("duplicate key in bitmap dictionary", f"bitmap key {i}",
                              int(entries.positions[i]))
            self.dictionary[key] = _Entry(offset, length)

    def _parse_v2(self, r: ByteReader) -> None:
        n_blocks = r.count("bitmap index block count", min_item_bytes=5)
        index = parse_entries(r, n_blocks, self.kind, 1, "bitmap block index")
        offsets = index.ints[:, 0]
        bad = first_unsorted(index.sort_keys)
        if bad is None and len(offsets) and offsets[0] != 0:
            bad = 0
        if bad is None:
            bad = first_unsorted(offsets)
        if bad is not None:
            raise r.error("index blocks not in ascending order", f"bitmap block {bad}",
                          int(index.positions[bad]))
        self.block_keys = index.sort_keys
        self.block_offsets = offsets.tolist()
        at = r.pos
        blocks_length = r.i32("bitmap index blocks length")
        if blocks_length < 0 or blocks_length > r.remaining:
            raise r.error(f"index blocks length {blocks_length} outside [0, {r.remaining}]",
                          "bitmap index blocks length", at)
        self.blocks_start = r.pos
        self.blocks_end = r.pos + blocks_length
        if self.block_offsets and self.block_offsets[-1] >= blocks_length:
            raise r.error(f"block offset {self.block_offsets[-1]} beyond blocks length "
                          f"{blocks_length}", "bitmap index blocks", at)
        self.body_start = self.blocks_end
        self._blocks: dict[int, tuple[Any, np.ndarray]] = {}

    def _block(self, b: int) -> tuple[Any, np.ndarray]:
        """Sort keys and (offset, length) rows of index block ``b``, parsed on first use."""
        if b not in self._blocks:
            start = self.blocks_start + self.block_offsets[b]
            end = self.blocks_start + self.block_offsets[b + 1] if b + 1 < len(self.block_offsets) \
                else self.blocks_end
            r = ByteReader(self.source, start, end)
            n = r.count(f"bitmap block {b} entry count", min_item_bytes=ENTRY_INT_BYTES + 1)
            entries = parse_entries(r, n, self.kind, 2, f"bitmap block {b}")
            r.expect_end(f"bitmap block {b}")
            bad = first_unsorted(entries.sort_keys)
            if bad is None and (n == 0 or entries.sort_keys[0] != self.block_keys[b]):
                bad = 0
            if bad is not None:
                raise r.error("entries not sorted or not starting with the block key",
                              f"bitmap block {b} entry {bad}",
                              int(entries.positions[bad]) if n else start)
            self._blocks[b] = (entries.sort_keys, entries.ints)
        return self._blocks[b]

    def _find(self, literal: object) -> _Entry | None:
        if literal is None:
            return self.null_entry
        key = sort_key(literal, self.kind)
        if self.version == VERSION_1:
            return self.dictionary.get(key)
        b = _search(self.block_keys, key, "right") - 1
        if b < 0:
            return None
        keys, ints = self._block(b)
        i = _search(keys, key, "left")
        if i < len(keys) and keys[i] == key:
            return _Entry(int(ints[i, 0]), int(ints[i, 1]))
        return None

    # -- bitmaps --------------------------------------------------------------------------------
    def _bitmap_of(self, literal: object) -> BitMap:
        cache_key = ("key", sort_key(literal, self.kind)) if literal is not None else ("null",)
        found = self._cache.get(cache_key)
        if found is None:
            found = self._read_bitmap(self._find(literal), repr(literal))
            self._cache[cache_key] = found
        return found

    def _read_bitmap(self, entry: _Entry | None, what: str) -> BitMap:
        if entry is None:
            return BitMap()
        field = f"bitmap of {what}"
        if entry.offset < 0:
            row = -1 - entry.offset
            if row >= self.row_count:
                raise CorruptFileError(f"inline row {row} >= row count {self.row_count}",
                                       path=self.source.name, offset=self.start, field=field)
            return BitMap([row])
        start = self.body_start + entry.offset
        end = self.start + self.length
        if entry.length != NO_LENGTH:
            if entry.length < 0:
                raise CorruptFileError(f"negative bitmap length {entry.length}",
                                       path=self.source.name, offset=start, field=field)
            end = start + entry.length
        if not self.body_start <= start <= end <= self.start + self.length:
            raise CorruptFileError(
                f"bitmap bytes [{start}, {end}) outside the body [{self.body_start}, "
                f"{self.start + self.length})", path=self.source.name, offset=start, field=field)
        data = self.source.read_at(start, end - start)
        bitmap = bitmaps.deserialize(data, path=self.source.name, offset=start, field=field)
        if bitmap and bitmap.max() >= self.row_count:
            raise CorruptFileError(f"row {bitmap.max()} >= row count {self.row_count}",
                                   path=self.source.name, offset=start, field=field)
        return bitmap

    def in_bitmap(self, literals: Sequence[object]) -> BitMap:
        self._parse()
        if len(literals) > 1:
            self._prefetch(literals)
        return BitMap.union(BitMap(), *(self._bitmap_of(lit) for lit in literals))

    def _prefetch(self, literals: Sequence[object]) -> None:
        """Over a ranged source: the V2 blocks, then the bitmaps of several literals, each in one
        request (parsing and every check happen later, as for one literal)."""
        prefetch = getattr(self.source, "prefetch", None)
        if prefetch is None:
            return
        if self.version == VERSION_2:
            blocks = {_search(self.block_keys, sort_key(lit, self.kind), "right") - 1
                      for lit in literals if lit is not None} - {-1} - set(self._blocks)
            ends = [*self.block_offsets[1:], self.blocks_end - self.blocks_start]
            prefetch([(self.blocks_start + self.block_offsets[b], ends[b] - self.block_offsets[b])
                      for b in sorted(blocks)])
        ranges = []
        for lit in literals:
            entry = self._find(lit)
            if entry is not None and entry.offset >= 0:
                length = entry.length if entry.length >= 0 else self.start + self.length - self.body_start
                ranges.append((self.body_start + entry.offset, length))
        prefetch(ranges)

    # -- visitors -------------------------------------------------------------------------------
    def visit_eq(self, literal: Any) -> FileIndexResult:
        return self.visit_in((literal,))

    def visit_ne(self, literal: Any) -> FileIndexResult:
        return self.visit_not_in((literal,))

    def visit_in(self, literals: Sequence[Any]) -> FileIndexResult:
        return Rows(lambda: self.in_bitmap(literals))

    def visit_not_in(self, literals: Sequence[Any]) -> FileIndexResult:
        def complement() -> BitMap:
            selected = self.in_bitmap(literals)
            return selected.flip(0, self.row_count)
        return Rows(complement)

    def visit_is_null(self) -> FileIndexResult:
        return self.visit_in((None,))

    def visit_is_not_null(self) -> FileIndexResult:
        return self.visit_not_in((None,))

    def describe(self) -> dict[str, Any]:
        self._parse()
        out: dict[str, Any] = {"version": self.version, "rows": self.row_count,
                               "distinct_values": self.distinct,
                               "null_rows": len(self._bitmap_of(None)) if self.has_null else 0}
        if self.version == VERSION_2:
            out["index_blocks"] = len(self.block_keys)
        return out


_SUPPORTED = frozenset({
    TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.DATE,
    TypeRoot.TIME, TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ, TypeRoot.CHAR, TypeRoot.VARCHAR,
    TypeRoot.BOOLEAN, TypeRoot.FLOAT, TypeRoot.DOUBLE,
})


class BitmapIndex(IndexType):
    name = "bitmap"
    supported = _SUPPORTED
    reader = BitmapReader
    writer = BitmapWriter
    option_validators: ClassVar[Mapping[str, Callable[[str, str], object]]] = {
        "version": _parse_version, "index-block-size": parse_memory_size}
