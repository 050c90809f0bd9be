"""Bloom filter file index (``bloom-filter``), Paimon's ``BloomFilterFileIndex`` + ``BloomFilter64``.

Body layout::

    offset  size      field
    0       4         hash function count k   i32 big-endian, 1 <= k <= MAX_HASH_FUNCTIONS
    4       m / 8     bit set, m bits; bit i is bit (i & 7) of byte (i >> 3) (least significant first)

Sizing from the options ``items`` (n, default 1,000,000) and ``fpp`` (p, default 0.1)::

    nb = (int)(-n * ln p / (ln 2)^2)      m = nb + (8 - nb % 8)   (a whole extra byte if nb % 8 == 0)
    k  = max(1, round(m / n * ln 2))

Probing a 64-bit hash h (Java ``long``) with ``h1 = (int) h``, ``h2 = (int) (h >>> 32)``::

    for i in 1..k:  c = h1 + i * h2 (32-bit wrap);  if c < 0: c = ~c;  bit c % m

Hashes (``FastHash``): strings/binary -> xxHash64 (seed 0) of the bytes; TINYINT..BIGINT, DATE, TIME,
TIMESTAMP (millis for precision <= 3, else micros) -> Thomas Wang's mix of the value widened to long;
FLOAT/DOUBLE -> the mix of ``floatToIntBits``/``doubleToLongBits`` (so -0.0 != 0.0, NaN == NaN).
BOOLEAN and DECIMAL are not supported (Paimon refuses them). NULLs are not added.

Answers: ``=`` (and ``IN``, as an OR of ``=``) -> SKIP when the value is certainly absent, else
REMAIN; a NULL literal -> REMAIN; every other operator -> REMAIN. A Bloom filter never answers SKIP
for a value the file holds.

Checked on read: k in range, a non-empty bit set. Not checkable: whether the bits are right.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.binary import ByteReader, Source
from paimon_index.fileindex.base import IndexReader, IndexType, IndexWriter
from paimon_index.fileindex.options import parse_fraction, parse_int
from paimon_index.fileindex.result import REMAIN, SKIP, FileIndexResult
from paimon_index.hashing import long_hash, long_hash_one, xxh64, xxh64_one
from paimon_index.types import CanonicalColumn, DataType, KeyKind, TypeRoot

__all__ = ["BloomFilterIndex", "bloom_size", "fast_hash"]

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
HASH_COUNT_BYTES = 4
BITS_PER_BYTE = 8
#: Sanity bound on k: Paimon's sizing gives k <= ~1000 even for absurdly small fpp; a larger count
#: can only come from a corrupt file and would make every probe loop that long.
MAX_HASH_FUNCTIONS = 4096
FLOAT_NAN_BITS = 0x7FC00000
DOUBLE_NAN_BITS = 0x7FF8000000000000
_INT32_MASK = 0xFFFFFFFF
#: Columns shorter than this are hashed as they are; longer ones are sampled for repeats.
DEDUPE_MIN_ROWS = 65_536
DEDUPE_SAMPLE = 4_096
#: Values hashed and probed per pass: small enough for the work arrays to stay in cache.
CHUNK = 32_768


def bloom_size(items: int, fpp: float) -> tuple[int, int]:
    """``(bits, hash functions)`` exactly as Paimon's ``BloomFilter64`` sizes them."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))  # Java (int) truncates
    bits = nb + (BITS_PER_BYTE - nb % BITS_PER_BYTE)
    k = max(1, math.floor(bits / items * math.log(2) + 0.5))  # Java Math.round
    return bits, k


def _hash_input(values: np.ndarray, kind: KeyKind) -> np.ndarray:
    """The long a numeric key is mixed from: the value, or the canonical-NaN IEEE bits."""
    if kind is KeyKind.FLOAT32:
        bits = values.astype(np.float32).view(np.int32).astype(np.int64)
        bits[np.isnan(values)] = FLOAT_NAN_BITS
        return bits
    if kind is KeyKind.FLOAT64:
        bits = values.astype(np.float64).view(np.int64).copy()
        bits[np.isnan(values)] = DOUBLE_NAN_BITS
        return bits
    return values.astype(np.int64, copy=False)


def _mostly_repeated(values: np.ndarray | pa.Array) -> bool:
    """Whether a strided sample says under half the values are distinct (then dedupe first)."""
    n = len(values)
    if n < DEDUPE_MIN_ROWS:
        return False
    sample = values[:: max(1, n // DEDUPE_SAMPLE)]
    distinct = pc.count_distinct(sample if isinstance(sample, pa.Array) else pa.array(sample)).as_py()
    return distinct * 2 < len(sample)


def fast_hash(values: np.ndarray | pa.Array, kind: KeyKind) -> np.ndarray:
    """Paimon's ``FastHash`` of canonical keys, as int64.

    A Bloom filter is a set, so repeated values need hashing once: when a sample shows many
    repeats, the column is deduplicated by one Arrow hash pass first (speed only; same bits).
    """
    if kind is KeyKind.BYTES:
        assert isinstance(values, pa.Array)
        return xxh64(pc.unique(values) if _mostly_repeated(values) else values)
    bits = _hash_input(np.asarray(values), kind)
    if _mostly_repeated(bits):
        bits = pc.unique(pa.array(bits)).to_numpy()
    return long_hash(bits)


def _literal_hash(literal: Any, kind: KeyKind) -> int:
    """:func:`fast_hash` of one canonical literal (scalar code: a query hashes a handful)."""
    if kind is KeyKind.BYTES:
        return xxh64_one(literal)
    if kind is KeyKind.FLOAT32:
        bits = FLOAT_NAN_BITS if math.isnan(literal) else struct.unpack(">i", struct.pack(">f", literal))[0]
        return long_hash_one(bits)
    if kind is KeyKind.FLOAT64:
        bits = DOUBLE_NAN_BITS if math.isnan(literal) else struct.unpack(">q", struct.pack(">d", literal))[0]
        return long_hash_one(bits)
    return long_hash_one(int(literal))


def _probe_positions(h: int, k: int, bits: int) -> list[int]:
    """The k bit positions of one hash (scalar twin of :func:`_bit_positions`)."""
    h1 = h & _INT32_MASK
    h2 = (h >> 32) & _INT32_MASK
    out = []
    for i in range(1, k + 1):
        c = (h1 + i * h2) & _INT32_MASK
        if c >> 31:  # negative as a Java int: ~c = -c - 1 = the low 31 bits flipped
            c ^= _INT32_MASK
        out.append(c % bits)
    return out


def _bit_positions(hashes: np.ndarray, k: int, bits: int) -> np.ndarray:
    """All probe positions of many hashes, shape (k, n), in 32-bit arithmetic like Java's ints."""
    h = hashes.astype(np.int64, copy=False)
    h1 = h.astype(np.int32)  # low half (the cast wraps)
    h2 = (h >> np.int64(32)).astype(np.int32)
    out = np.empty((k, len(h)), dtype=np.int32)
    c = np.empty_like(h1)
    sign = np.empty_like(h1)
    for i in range(1, k + 1):
        np.multiply(h2, np.int32(i), out=c)  # wraps like Java's int arithmetic
        c += h1
        np.right_shift(c, 31, out=sign)
        c ^= sign  # negative -> ~c, without a branch
        np.remainder(c, np.int32(bits), out=out[i - 1])
    return out


class BloomFilterWriter(IndexWriter):
    def __init__(self, dtype: DataType, options: Mapping[str, str]) -> None:
        super().__init__(dtype, options)
        items = parse_int(options.get("items", str(DEFAULT_ITEMS)), "items")
        fpp = parse_fraction(options.get("fpp", str(DEFAULT_FPP)), "fpp")
        self.bits, self.hash_functions = bloom_size(items, fpp)

    def build(self, column: CanonicalColumn) -> bytes:
        values = column.values
        if column.null_count:
            values = values.filter(pa.array(column.valid)) if isinstance(values, pa.Array) \
                else values[column.valid]
        bitset = np.zeros(self.bits, dtype=bool)
        kind = self.dtype.key_kind
        if kind is KeyKind.BYTES:
            hashes = fast_hash(values, kind)
            for start in range(0, len(hashes), CHUNK):
                np.put(bitset, _bit_positions(hashes[start : start + CHUNK], self.hash_functions,
                                              self.bits), True)
        else:
            keys = _hash_input(np.asarray(values), kind)
            if _mostly_repeated(keys):
                keys = pc.unique(pa.array(keys)).to_numpy()
            # Hash, probe and set one cache-sized chunk at a time: the passes stay in L2.
            for start in range(0, len(keys), CHUNK):
                hashes = long_hash(keys[start : start + CHUNK])
                np.put(bitset, _bit_positions(hashes, self.hash_functions, self.bits), True)
        head = self.hash_functions.to_bytes(HASH_COUNT_BYTES, "big", signed=True)
        return head + np.packbits(bitset, bitorder="little").tobytes()


class BloomFilterReader(IndexReader):
    def __init__(self, dtype: DataType, source: Source, start: int, length: int) -> None:
        super().__init__(dtype, source, start, length)
        self._bits: np.ndarray | None = None
        self._k = 0

    def _load(self) -> np.ndarray:
        if self._bits is None:
            r = ByteReader(self.source, self.start, self.start + self.length)
            at = r.pos
            k = r.i32("bloom filter hash function count")
            if not 1 <= k <= MAX_HASH_FUNCTIONS:
                raise r.error(f"hash function count {k} outside [1, {MAX_HASH_FUNCTIONS}]",
                              "bloom filter hash function count", at)
            if r.remaining == 0:
                raise r.error("empty bit set", "bloom filter bit set")
            # Zero-copy over in-memory bytes; probes look at k bytes, nothing is unpacked.
            self._k = k
            self._bits = np.frombuffer(r.read_view(r.remaining, "bloom filter bit set"), np.uint8)
        return self._bits

    def might_contain(self, literal: Any) -> bool:
        data = self._load()
        h = _literal_hash(literal, self.dtype.key_kind)
        positions = _probe_positions(h, self._k, len(data) * BITS_PER_BYTE)
        return all(data[p >> 3] >> (p & 7) & 1 for p in positions)

    def visit_eq(self, literal: Any) -> FileIndexResult:
        if literal is None:
            return REMAIN
        return REMAIN if self.might_contain(literal) else SKIP

    def describe(self) -> dict[str, Any]:
        data = self._load()
        bits = len(data) * BITS_PER_BYTE
        set_bits = int(np.count_nonzero(np.unpackbits(data)))
        return {"hash_functions": self._k, "bits": bits, "bytes": self.length,
                "set_bits": set_bits, "fill_ratio": round(set_bits / bits, 6)}


_SUPPORTED = frozenset({
    TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.FLOAT,
    TypeRoot.DOUBLE, TypeRoot.CHAR, TypeRoot.VARCHAR, TypeRoot.BINARY, TypeRoot.VARBINARY,
    TypeRoot.DATE, TypeRoot.TIME, TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ,
})


class BloomFilterIndex(IndexType):
    name = "bloom-filter"
    supported = _SUPPORTED
    reader = BloomFilterReader
    writer = BloomFilterWriter
    option_validators: ClassVar[Mapping[str, Callable[[str, str], object]]] = {
        "items": parse_int, "fpp": parse_fraction}
