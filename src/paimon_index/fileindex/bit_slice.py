"""Roaring bitmaps byte-for-byte as Java writes them, and the range-bitmap's bit-sliced index.

Part 1 — portable Roaring format, as ``RoaringBitmap32.serialize`` writes it (Java RoaringBitmap
1.x: ``runOptimize()`` then ``serialize``). All integers little-endian::

    no run container:  u32 cookie = 12346 | u32 container count m (0..65536)
    some run container: u32 cookie = 12347 | (m - 1) << 16 | ceil(m / 8) bytes: bit i = container i
                        is a run container (LSB first)
    m x (u16 key = high 16 bits, u16 cardinality - 1)
    m x u32 byte offset of each container from the cookie   (only if no run container, or m >= 4)
    containers, in key order:
      array   (cardinality <= 4096, not run): cardinality x u16 low bits, ascending
      bitmap  (cardinality >  4096, not run): 1024 x u64 words, bit b of word w = value 64w + b
      run:    u16 run count r, r x (u16 start, u16 length - 1)

  Container kinds follow Java's ``runOptimize`` on freshly built containers: an array container
  becomes a run container when ``2 * cardinality > 2 + 4 * runs``, a bitmap container when
  ``8192 > 2 + 4 * runs``. (CRoaring decides the tie ``2 * cardinality == 2 + 4 * runs``
  differently, so we serialize with NumPy instead of pyroaring: :func:`serialize_positions`.)
  Reading goes through pyroaring (CRoaring validates container contents); :func:`read_portable`
  first walks the structure to find where a bitmap ends (:func:`paimon_index.bitmaps.portable_span`,
  the walk deletion vectors use too), which formats without explicit lengths (the legacy BSI
  index) need.

Part 2 — ``BitSliceIndexBitmap`` (Paimon ``fileindex.rangebitmap.BitSliceIndexBitmap``, version 1):
the row -> dictionary code mapping of a range-bitmap index. Big-endian::

    4      header length  i32 = 10 + 8 * slices (bytes from version to the end of the indexes)
    1      version        u8 = 1
    1      slices         u8 in 1..64: bit-length of the largest code (1 for code 0; 64 when the
                          column has no non-NULL value, Java's bit-length of -1)
    4      ebm length     i32 >= 0, bytes of the existence bitmap
    4      indexes length i32 = 8 * slices
    8 x slices            per slice: i32 offset (from the end of the ebm), i32 length
    ebm length            existence bitmap: rows with a non-NULL value (portable Roaring)
    ...                   slice i: rows whose code has bit i set (portable Roaring), contiguous

Checked: header length, version, slice count, index length, that slices are contiguous and end
exactly at the end of the index body, Roaring structure, existence bitmap positions below the row
count. Not checked: that slices are subsets of the existence bitmap (every query intersects with
it or with the caller's selection, so stray bits cannot leak into answers).

Queries (``eq``, ``gt``, ``gte``, ``top_k``, ``bottom_k``) follow Java's algorithms, including the
tie rule of strict TopN (drop the lowest row positions among the rows tied at the limit).
"""

from __future__ import annotations

import struct

import numpy as np
from pyroaring import BitMap

from paimon_index import bitmaps
from paimon_index.binary import ByteReader, ByteWriter, Source
from paimon_index.bitmaps import (  # the portable format's constants, used by the writers here too
    ARRAY_MAX_CARDINALITY,
    BITMAP_CONTAINER_BYTES,
    CONTAINER_BITS,
    CONTAINER_VALUES,
    LOW_MASK,
    NO_OFFSET_THRESHOLD,
    RUN_BYTES,
    RUN_COUNT_BYTES,
    SERIAL_COOKIE,
    SERIAL_COOKIE_NO_RUN,
    portable_headers,
    portable_span,
)
from paimon_index.errors import InvalidPredicateError

__all__ = [
    "SERIAL_COOKIE",
    "SERIAL_COOKIE_NO_RUN",
    "BitSliceReader",
    "dense_words",
    "deserialize_bitmap",
    "portable_span",
    "read_portable",
    "serialize_bit_slices",
    "serialize_positions",
    "words_to_bitmap",
]

INT32_LIMIT = 2**31

BSI_VERSION = 1
#: version + slice count + ebm length + indexes length
BSI_FIXED_HEADER_BYTES = 1 + 1 + 4 + 4
BSI_INDEX_ENTRY_BYTES = 8
MAX_SLICES = 64

_EMPTY_BITMAP_BYTES = struct.pack("<ii", SERIAL_COOKIE_NO_RUN, 0)


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------
def serialize_positions(positions: np.ndarray) -> bytes:
    """Java's ``RoaringBitmap`` bytes (after ``runOptimize``) for sorted, distinct positions.

    Args:
        positions: ascending, distinct integers in ``[0, 2**32)`` (any integer dtype).
    """
    pos = np.asarray(positions)
    n = int(pos.size)
    if n == 0:
        return _EMPTY_BITMAP_BYTES
    # 32-bit arithmetic halves the memory traffic; positions of a data file fit in int32
    pos = pos.astype(np.int32 if int(pos[-1]) < INT32_LIMIT else np.int64, copy=False)
    hi = pos >> CONTAINER_BITS
    lo = pos & LOW_MASK
    new_container = np.empty(n, dtype=bool)
    new_container[0] = True
    np.not_equal(hi[1:], hi[:-1], out=new_container[1:])
    c_start = np.flatnonzero(new_container)
    m = int(c_start.size)
    keys = hi[c_start]
    card = np.diff(np.append(c_start, n))

    run_break = np.empty(n, dtype=bool)
    run_break[0] = True
    np.not_equal(np.diff(pos), 1, out=run_break[1:])
    run_break |= new_container
    r_start = np.flatnonzero(run_break)
    r_container = np.searchsorted(c_start, r_start, side="right") - 1
    n_runs = np.bincount(r_container, minlength=m)

    is_bitmap = card > ARRAY_MAX_CARDINALITY
    plain_bytes = np.where(is_bitmap, BITMAP_CONTAINER_BYTES, 2 * card)
    run_bytes = RUN_COUNT_BYTES + RUN_BYTES * n_runs
    is_run = plain_bytes > run_bytes  # Java runOptimize: strictly smaller as runs
    sizes = np.where(is_run, run_bytes, plain_bytes)
    has_run = bool(is_run.any())

    # -- body: every container size is even, so fill it as little-endian u16 words -------------
    body_off = np.zeros(m, dtype=np.int64)
    np.cumsum(sizes[:-1], out=body_off[1:])
    body = np.zeros(int(sizes.sum()) // 2, dtype="<u2")
    word_off = body_off // 2

    is_array = ~is_run & ~is_bitmap
    if is_array.any():
        # element i of container c goes to word word_off[c] + (i - c_start[c])
        dest = np.arange(n, dtype=np.int64) + np.repeat(word_off - c_start, card)
        if is_array.all():
            body[dest] = lo
        else:
            sel = np.repeat(is_array, card)
            body[dest[sel]] = lo[sel]
    if has_run:
        run_sel = is_run[r_container]
        first_run = np.zeros(m, dtype=np.int64)
        np.cumsum(n_runs[:-1], out=first_run[1:])
        r_len = np.diff(np.append(r_start, n))
        j = np.arange(r_start.size, dtype=np.int64) - first_run[r_container]
        at = word_off[r_container] + 1 + 2 * j
        body[word_off[is_run]] = n_runs[is_run]
        body[at[run_sel]] = lo[r_start][run_sel]
        body[at[run_sel] + 1] = (r_len - 1)[run_sel]
    for c in np.flatnonzero(is_bitmap & ~is_run).tolist():  # at most n / 4097 containers
        bits = np.zeros(CONTAINER_VALUES, dtype=bool)
        bits[lo[c_start[c] : c_start[c] + card[c]]] = True
        w = int(word_off[c])
        body[w : w + BITMAP_CONTAINER_BYTES // 2] = np.packbits(bits, bitorder="little").view("<u2")

    # -- header ----------------------------------------------------------------------------------
    parts: list[bytes] = []
    if has_run:
        parts.append(struct.pack("<I", SERIAL_COOKIE | ((m - 1) << CONTAINER_BITS)))
        parts.append(np.packbits(is_run, bitorder="little").tobytes())
    else:
        parts.append(struct.pack("<ii", SERIAL_COOKIE_NO_RUN, m))
    descriptive = np.empty((m, 2), dtype="<u2")
    descriptive[:, 0] = keys
    descriptive[:, 1] = card - 1
    parts.append(descriptive.tobytes())
    if not has_run or m >= NO_OFFSET_THRESHOLD:
        header = sum(len(p) for p in parts) + 4 * m
        parts.append((header + body_off).astype("<u4").tobytes())
    parts.append(body.tobytes())
    return b"".join(parts)


def serialize_bit_slices(rows: np.ndarray, codes: np.ndarray, max_code: int) -> bytes:
    """A ``BitSliceIndexBitmap`` body mapping each row to its code.

    Args:
        rows: ascending row positions that have a value (the existence bitmap).
        codes: the code of each of ``rows`` (``0 <= code <= max_code``).
        max_code: the largest code; ``-1`` for a column without non-NULL values (Java then
            still writes 64 empty slices).
    """
    n_slices = max(max_code.bit_length(), 1) if max_code >= 0 else MAX_SLICES
    rows = np.asarray(rows).astype(np.int32, copy=False)  # row positions are Java ints
    ebm = serialize_positions(rows)
    codes = np.asarray(codes).astype(np.int32, copy=False)  # codes < cardinality <= 2^31 - 1
    bit = np.empty(codes.size, dtype=np.int32)
    slices: list[bytes] = []
    for i in range(n_slices):
        if max_code < 0:
            slices.append(_EMPTY_BITMAP_BYTES)
            continue
        np.bitwise_and(codes, np.int32(1 << i), out=bit)
        slices.append(serialize_positions(rows[bit.astype(bool)]))
    header_len = BSI_FIXED_HEADER_BYTES + BSI_INDEX_ENTRY_BYTES * n_slices
    w = ByteWriter()
    w.i32(header_len)
    w.i8(BSI_VERSION)
    w.i8(n_slices)
    w.i32(len(ebm))
    w.i32(BSI_INDEX_ENTRY_BYTES * n_slices)
    lengths = np.array([len(s) for s in slices], dtype=np.int64)
    index = np.empty((n_slices, 2), dtype=">i4")
    index[:, 0] = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    index[:, 1] = lengths
    w.write(index.tobytes())
    w.write(ebm)
    for s in slices:
        w.write(s)
    return w.getvalue()


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------
def deserialize_bitmap(data: bytes | memoryview, r: ByteReader, field: str, at: int) -> BitMap:
    """pyroaring's reader, with its errors reported as :class:`CorruptFileError`."""
    return bitmaps.deserialize(data, path=r.source.name, offset=at, field=field)


def read_portable(r: ByteReader, field: str) -> BitMap:
    """Read one portable Roaring bitmap at the cursor, advancing exactly past it."""
    start, end = portable_span(r, field)
    r.seek(start)
    return deserialize_bitmap(r.read_view(end - start, field), r, field, start)


#: The comparison of a bit-sliced index from which its slices are used as 64-bit words: converting
#: costs about what one Roaring comparison does, and every later one is several times cheaper.
DENSE_AFTER_COMPARISONS = 2
#: 64-bit words of one Roaring container (65,536 bits).
CONTAINER_WORDS = CONTAINER_VALUES // 64


def dense_words(r: ByteReader, n_words: int, field: str) -> np.ndarray:
    """One portable Roaring bitmap at the cursor as ``n_words`` little-endian 64-bit words (bit
    ``b`` of word ``w`` = position ``64 w + b``); positions at or past ``64 * n_words`` are dropped.

    Reads the containers as they are stored: a bitset container is copied word for word, an array
    or run container is scattered with NumPy -- no per-position Python. Structure and bounds are
    checked as :func:`portable_span` checks them; container contents are not (a stray bit is
    harmless: every comparison ends with an AND of the existence bitmap).
    """
    keys, cards, run_flags = portable_headers(r, field)
    # Whole containers up to the row count (never sized from the file); later ones are skipped.
    width = -(-n_words // CONTAINER_WORDS) * CONTAINER_WORDS
    words = np.zeros(width, dtype="<u8")
    for c in range(len(keys)):
        base = int(keys[c]) * CONTAINER_WORDS
        card = int(cards[c])
        if base >= width:
            target = np.zeros(CONTAINER_WORDS, dtype="<u8")  # read past, then dropped
        else:
            target = words[base:base + CONTAINER_WORDS]
        if run_flags[c]:
            runs = int.from_bytes(r.read_bytes(RUN_COUNT_BYTES, f"{field} run count"), "little")
            pairs = np.frombuffer(r.read_view(RUN_BYTES * runs, f"{field} runs of container {c}"),
                                  dtype="<u2").astype(np.int64)
            starts = pairs[0::2]
            ends = np.minimum(starts + pairs[1::2] + 1, CONTAINER_VALUES)
            # +1 where a run starts, -1 past its end: the running sum is > 0 inside a run.
            edges = np.bincount(starts, minlength=CONTAINER_VALUES + 1) \
                - np.bincount(ends, minlength=CONTAINER_VALUES + 1)
            bits = np.cumsum(edges[:CONTAINER_VALUES]) > 0
            target[:] = np.packbits(bits, bitorder="little").view("<u8")
        elif card > ARRAY_MAX_CARDINALITY:
            target[:] = np.frombuffer(r.read_view(BITMAP_CONTAINER_BYTES, f"{field} container {c}"),
                                      dtype="<u8")
        else:
            values = np.frombuffer(r.read_view(2 * card, f"{field} container {c}"), dtype="<u2")
            # OR the bits of each word's values together (values ascending: one group per word).
            word = values >> 6
            first = np.flatnonzero(np.concatenate(([True], word[1:] != word[:-1])))
            ones = np.left_shift(np.uint64(1), (values & 63).astype(np.uint64))
            target[word[first]] |= np.bitwise_or.reduceat(ones, first)
    return words[:n_words]


def words_to_bitmap(words: np.ndarray) -> BitMap:
    """The positions of the set bits of little-endian 64-bit ``words``, as a Roaring bitmap.

    Built as portable Roaring bytes and deserialized by CRoaring: a 65,536-bit chunk holding more
    than 4,096 bits is a bitmap container, which is the chunk's words as they are; sparser chunks
    become array containers of their positions. No per-position Python.
    """
    n_chunks = -(-len(words) // CONTAINER_WORDS)
    padded = np.zeros(n_chunks * CONTAINER_WORDS, dtype="<u8")
    padded[: len(words)] = words
    chunks = padded.reshape(n_chunks, CONTAINER_WORDS)
    cards = np.bitwise_count(chunks).sum(axis=1, dtype=np.int64)
    keys = np.flatnonzero(cards)
    if not len(keys):
        return BitMap()
    # The positions of every sparse chunk at once, from its non-zero words only.
    sparse = cards <= ARRAY_MAX_CARDINALITY
    in_sparse = np.flatnonzero(padded * np.repeat(sparse, CONTAINER_WORDS).astype("<u8"))
    bits = np.unpackbits(padded[in_sparse].view(np.uint8), bitorder="little").reshape(-1, 64)
    rows, columns = np.nonzero(bits)
    positions = in_sparse[rows] * 64 + columns
    bounds = np.searchsorted(positions >> CONTAINER_BITS, np.stack([keys, keys + 1]))
    low = (positions & LOW_MASK).astype("<u2")
    bodies: list[bytes] = []
    for i, key in enumerate(keys.tolist()):
        if sparse[key]:
            bodies.append(low[bounds[0, i]:bounds[1, i]].tobytes())
        else:
            bodies.append(chunks[key].tobytes())
    m = len(keys)
    descriptive = np.empty((m, 2), dtype="<u2")
    descriptive[:, 0] = keys
    descriptive[:, 1] = cards[keys] - 1
    header = 8 + 4 * m + 4 * m
    sizes = np.array([len(body) for body in bodies], dtype=np.int64)
    offsets = header + np.concatenate(([0], np.cumsum(sizes)[:-1]))
    data = b"".join([struct.pack("<ii", SERIAL_COOKIE_NO_RUN, m), descriptive.tobytes(),
                     offsets.astype("<u4").tobytes(), *bodies])
    return BitMap.deserialize(data)


class BitSliceReader:
    """Lazy reader of a ``BitSliceIndexBitmap`` body occupying ``[start, end)`` of ``source``.

    Only the header is read on construction; the existence bitmap and each slice are read and
    deserialized the first time a query needs them.
    """

    def __init__(self, source: Source, start: int, end: int, row_count: int) -> None:
        r = ByteReader(source, start, end)
        at = r.pos
        header_len = r.i32("bsi header length")
        if header_len < BSI_FIXED_HEADER_BYTES + BSI_INDEX_ENTRY_BYTES:
            raise r.error(f"header length {header_len} below the minimum "
                          f"{BSI_FIXED_HEADER_BYTES + BSI_INDEX_ENTRY_BYTES}", "bsi header length", at)
        h = r.sub(header_len, "bsi header")
        at = h.pos
        version = h.u8("bsi version")
        if version != BSI_VERSION:
            raise h.error(f"unsupported version {version} (supported: {BSI_VERSION})",
                          "bsi version", at)
        at = h.pos
        n = h.u8("bsi slice count")
        if not 1 <= n <= MAX_SLICES:
            raise h.error(f"slice count {n} outside [1, {MAX_SLICES}]", "bsi slice count", at)
        at = h.pos
        ebm_len = h.i32("bsi ebm length")
        if ebm_len < 0:
            raise h.error(f"negative length {ebm_len}", "bsi ebm length", at)
        at = h.pos
        index_len = h.i32("bsi indexes length")
        if index_len != BSI_INDEX_ENTRY_BYTES * n:
            raise h.error(f"indexes length {index_len} != 8 x {n} slices", "bsi indexes length", at)
        at = h.pos
        index = np.frombuffer(h.read_bytes(index_len, "bsi indexes"), dtype=">i4").astype(np.int64)
        h.expect_end("bsi header")
        offsets, lengths = index[0::2], index[1::2]
        expected = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        if (lengths < 0).any() or not np.array_equal(offsets, expected):
            raise h.error("slice offsets/lengths are not contiguous from 0", "bsi indexes", at)
        body = r.pos
        if ebm_len + int(lengths.sum()) != r.remaining:
            raise r.error(f"ebm ({ebm_len} bytes) and slices ({int(lengths.sum())} bytes) do not "
                          f"fill the {r.remaining} body bytes", "bsi body", body)
        self._reader = r
        self._ebm_at = body
        self._ebm_len = ebm_len
        self._slice_at = [body + ebm_len + int(o) for o in offsets]
        self._slice_len = [int(x) for x in lengths]
        self._slices: list[BitMap | None] = [None] * n
        self._ebm: BitMap | None = None
        # The same bitmaps as 64-bit words, for comparisons: a word-wise AND/OR over all rows is
        # far cheaper than a Roaring operation through Python once the reader is reused (cached).
        self._dense: list[np.ndarray | None] = [None] * n
        self._dense_ebm: np.ndarray | None = None
        self._n_words = (row_count + 63) // 64
        self._comparisons = 0
        self.row_count = row_count
        self.n_slices = n

    # -- loading --------------------------------------------------------------------------------
    def not_null(self) -> BitMap:
        """Rows with a value (do not mutate)."""
        if self._ebm is None:
            r = self._reader
            r.seek(self._ebm_at)
            ebm = deserialize_bitmap(r.read_view(self._ebm_len, "bsi ebm"), r, "bsi ebm",
                                     self._ebm_at)
            if ebm and ebm.max() >= self.row_count:
                raise r.error(f"row {ebm.max()} beyond the row count {self.row_count}", "bsi ebm",
                              self._ebm_at)
            self._ebm = ebm
        return self._ebm

    def slice(self, i: int) -> BitMap:
        """Rows whose code has bit ``i`` set (do not mutate)."""
        s = self._slices[i]
        if s is None:
            self.load(i, self.n_slices)
            s = self._slices[i]
            assert s is not None
        return s

    def load(self, begin: int, end: int) -> None:
        """Read slices ``[begin, end)`` not yet loaded, with one read of their byte range."""
        missing = [i for i in range(begin, end) if self._slices[i] is None]
        if not missing:
            return
        r = self._reader
        first, last = missing[0], missing[-1]
        r.seek(self._slice_at[first])
        r.read_view(self._slice_at[last] + self._slice_len[last] - self._slice_at[first],
                    "bsi slices")  # one bounds-checked read brings the range into the buffer
        for i in missing:
            r.seek(self._slice_at[i])
            field = f"bsi slice {i}"
            self._slices[i] = deserialize_bitmap(r.read_view(self._slice_len[i], field), r, field,
                                                 self._slice_at[i])

    @property
    def words_bytes(self) -> int:
        """Memory held by the slices kept as words (beyond the bytes they were read from)."""
        kept = [w for w in (*self._dense, self._dense_ebm) if w is not None]
        return sum(int(w.nbytes) for w in kept)

    def _dense_not_null(self) -> np.ndarray:
        if self._dense_ebm is None:
            self.not_null()  # checked as a Roaring bitmap first (positions below the row count)
            r = self._reader
            r.seek(self._ebm_at)
            self._dense_ebm = dense_words(r.sub(self._ebm_len, "bsi ebm"), self._n_words, "bsi ebm")
        return self._dense_ebm

    def _dense_slice(self, i: int) -> np.ndarray:
        words = self._dense[i]
        if words is None:
            r = self._reader
            r.seek(self._slice_at[i])
            field = f"bsi slice {i}"
            words = self._dense[i] = dense_words(r.sub(self._slice_len[i], field), self._n_words, field)
        return words

    # -- queries --------------------------------------------------------------------------------
    def eq(self, code: int) -> BitMap:
        state = self.not_null().copy()
        if not state:
            return state
        self.load(0, self.n_slices)
        for i in range(self.n_slices):
            if (code >> i) & 1:
                state &= self.slice(i)
            else:
                state -= self.slice(i)
        return state

    def gt(self, code: int) -> BitMap:
        """Rows whose code is greater than ``code``."""
        if code < 0:
            return self.not_null().copy()
        found = self.not_null()
        if not found:
            return BitMap()
        start = _trailing_ones(code)
        if start >= self.n_slices:
            return BitMap()
        self._comparisons += 1
        if self._comparisons < DENSE_AFTER_COMPARISONS:
            # O(slices) Roaring operations (O'Neil & Quass's comparison), no per-row Python.
            self.load(start, self.n_slices)
            state = self.slice(start).copy()
            for i in range(start + 1, self.n_slices):
                if (code >> i) & 1:
                    state &= self.slice(i)
                else:
                    state |= self.slice(i)
            state &= found
            return state
        # The same on the slices as 64-bit words: a reader asked again (shared by the metadata
        # cache) converts its slices once, then each comparison is a few word-wise passes.
        self.load_words(start, self.n_slices)
        words = self._dense_slice(start).copy()
        for i in range(start + 1, self.n_slices):
            if (code >> i) & 1:
                np.bitwise_and(words, self._dense_slice(i), out=words)
            else:
                np.bitwise_or(words, self._dense_slice(i), out=words)
        np.bitwise_and(words, self._dense_not_null(), out=words)
        return words_to_bitmap(words)

    def load_words(self, begin: int, end: int) -> None:
        """Bring the byte range of slices ``[begin, end)`` not yet in word form in one read."""
        missing = [i for i in range(begin, end) if self._dense[i] is None]
        if missing:
            r = self._reader
            r.seek(self._slice_at[missing[0]])
            last = missing[-1]
            first = self._slice_at[missing[0]]
            r.read_view(self._slice_at[last] + self._slice_len[last] - first, "bsi slices")

    def gte(self, code: int) -> BitMap:
        return self.gt(code - 1)

    def _selected(self, found: BitMap | None) -> BitMap:
        ebm = self.not_null()
        return ebm.copy() if found is None else ebm & found

    def top_k(self, k: int, found: BitMap | None, strict: bool) -> BitMap:
        """The ``k`` rows of largest code among ``found`` (all rows when None)."""
        return self._extreme_k(k, found, strict, largest=True)

    def bottom_k(self, k: int, found: BitMap | None, strict: bool) -> BitMap:
        """The ``k`` rows of smallest code among ``found`` (all rows when None)."""
        return self._extreme_k(k, found, strict, largest=False)

    def _extreme_k(self, k: int, found: BitMap | None, strict: bool, *, largest: bool) -> BitMap:
        # O'Neil & Quass, "Bit-Sliced Index Arithmetic", algorithm 4.1 (and its mirror image).
        if k == 0 or (found is not None and not found):
            return BitMap()
        if k < 0:
            raise InvalidPredicateError(f"TopN limit must not be negative, got {k}")
        g = BitMap()
        e = self._selected(found)
        if len(e) <= k:
            return e
        self.load(0, self.n_slices)
        for i in range(self.n_slices - 1, -1, -1):
            s = self.slice(i)
            picked = e & s if largest else e - s
            n = len(g) + len(picked)  # g and e are disjoint
            if n > k:
                e = picked
            elif n < k:
                g |= picked
                e = e - s if largest else e & s
            else:
                e = picked
                break
        f = g | e
        if strict:
            extra = len(f) - k
            if extra > 0:
                f -= e[:extra]
        return f


def _trailing_ones(code: int) -> int:
    """Number of consecutive 1 bits from bit 0 (Java ``numberOfTrailingZeros(~code)``)."""
    return ((code ^ (code + 1)).bit_length()) - 1
