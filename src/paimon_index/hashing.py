"""Vectorized 64-bit hashes Paimon's Bloom filter uses (its ``FastHash``).

* :func:`long_hash` — Thomas Wang's 64-bit integer mix, as Paimon writes it (signed ``>>``)::

      k = ~k + (k << 21);  k ^= k >> 24;  k = k + (k << 3) + (k << 8);  k ^= k >> 14
      k = k + (k << 2) + (k << 4);  k ^= k >> 28;  k = k + (k << 31)          (mod 2^64)

* :func:`xxh64` — xxHash64 with seed 0 (``LongHashFunction.xx()``) of every value of an Arrow
  binary array, computed with NumPy over all values of the same length at once: 32-byte stripes
  into four accumulators, then 8-byte lanes, a 4-byte lane and single bytes, then the avalanche.
  All lanes are little-endian. Groups too small to be worth vectorizing go through the ``xxhash``
  package (a C implementation) one value at a time.

Results are signed ``int64`` arrays (Java ``long``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash

__all__ = ["long_hash", "long_hash_one", "xxh64", "xxh64_one"]

P1 = np.uint64(11400714785074694791)
P2 = np.uint64(14029467366897019727)
P3 = np.uint64(1609587929392839161)
P4 = np.uint64(9650029242287828579)
P5 = np.uint64(2870177450012600261)
#: Initial accumulators for seed 0 (computed mod 2^64): P1 + P2 and -P1.
V1_INIT = np.uint64((int(P1) + int(P2)) % (1 << 64))
V4_INIT = np.uint64(-int(P1) % (1 << 64))
STRIPE_BYTES = 32
#: Below this many values of one length, the C hash one by one beats NumPy's per-call overhead.
MIN_VECTOR_GROUP = 48

_U64 = np.uint64


# The mix's shift-adds are multiplications mod 2^64:
#   ~k + (k << 21) = k * (2^21 - 1) - 1;  k + (k << 3) + (k << 8) = k * 265;
#   k + (k << 2) + (k << 4) = k * 21;     k + (k << 31) = k * (2^31 + 1)
MUL_21 = np.uint64(2**21 - 1)
MUL_265 = np.uint64(265)
MUL_21_SMALL = np.uint64(21)
MUL_31 = np.uint64(2**31 + 1)


def long_hash(keys: np.ndarray) -> np.ndarray:
    """Paimon's ``FastHash.getLongHash`` of each int64 key (in place on one work buffer)."""
    k = np.array(keys, dtype=np.int64).view(np.uint64)  # a copy we may overwrite
    signed = k.view(np.int64)
    tmp = np.empty_like(signed)
    k *= MUL_21
    k -= np.uint64(1)
    for shift, mul in ((24, MUL_265), (14, MUL_21_SMALL), (28, MUL_31)):
        np.right_shift(signed, shift, out=tmp)  # Java's signed >>
        k ^= tmp.view(np.uint64)
        k *= mul
    return signed


_MASK64 = (1 << 64) - 1


def long_hash_one(key: int) -> int:
    """:func:`long_hash` of one Python int (a query literal), without NumPy's per-call cost."""
    k = key & _MASK64

    def sar(x: int, n: int) -> int:  # signed >> on a 64-bit pattern
        return ((x - (1 << 64) if x >> 63 else x) >> n) & _MASK64

    k = ((~k) + (k << 21)) & _MASK64
    k ^= sar(k, 24)
    k = (k + (k << 3) + (k << 8)) & _MASK64
    k ^= sar(k, 14)
    k = (k + (k << 2) + (k << 4)) & _MASK64
    k ^= sar(k, 28)
    k = (k + (k << 31)) & _MASK64
    return k - (1 << 64) if k >> 63 else k


def xxh64_one(data: bytes) -> int:
    """xxHash64 (seed 0) of one value, as a signed Java long."""
    h = xxhash.xxh64_intdigest(data)
    return h - (1 << 64) if h >> 63 else h


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U64(r)) | (x >> _U64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * P2, 31) * P1


def _merge(h: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (h ^ _round(np.zeros_like(v), v)) * P1 + P4


def _xxh64_same_length(rows: np.ndarray) -> np.ndarray:
    """xxHash64 (seed 0) of each row of an (n, L) uint8 matrix."""
    n, length = rows.shape
    pos = 0
    if length >= STRIPE_BYTES:
        v1 = np.full(n, V1_INIT, dtype=np.uint64)
        v2 = np.full(n, P2, dtype=np.uint64)
        v3 = np.zeros(n, dtype=np.uint64)
        v4 = np.full(n, V4_INIT, dtype=np.uint64)
        stripes = length // STRIPE_BYTES
        lanes = np.ascontiguousarray(rows[:, : stripes * STRIPE_BYTES]).view("<u8").reshape(n, stripes, 4)
        for s in range(stripes):
            v1 = _round(v1, lanes[:, s, 0])
            v2 = _round(v2, lanes[:, s, 1])
            v3 = _round(v3, lanes[:, s, 2])
            v4 = _round(v4, lanes[:, s, 3])
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
        pos = stripes * STRIPE_BYTES
    else:
        h = np.full(n, P5, dtype=np.uint64)
    h = h + _U64(length)
    while pos + 8 <= length:
        lane = np.ascontiguousarray(rows[:, pos : pos + 8]).view("<u8")[:, 0]
        h = h ^ _round(np.zeros(n, dtype=np.uint64), lane)
        h = _rotl(h, 27) * P1 + P4
        pos += 8
    if pos + 4 <= length:
        lane = np.ascontiguousarray(rows[:, pos : pos + 4]).view("<u4")[:, 0].astype(np.uint64)
        h = h ^ (lane * P1)
        h = _rotl(h, 23) * P2 + P3
        pos += 4
    while pos < length:
        h = h ^ (rows[:, pos].astype(np.uint64) * P5)
        h = _rotl(h, 11) * P1
        pos += 1
    h = h ^ (h >> _U64(33))
    h = h * P2
    h = h ^ (h >> _U64(29))
    h = h * P3
    return h ^ (h >> _U64(32))


def xxh64(values: pa.Array) -> np.ndarray:
    """xxHash64 (seed 0) of each value of a binary/string Arrow array without nulls, as int64."""
    if not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        values = values.cast(pa.binary())
    n = len(values)
    offset_type = np.int64 if pa.types.is_large_binary(values.type) else np.int32
    offsets = np.frombuffer(values.buffers()[1], dtype=offset_type)[values.offset : values.offset + n + 1]
    buf = values.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = offsets[1:].astype(np.int64) - starts
    out = np.empty(n, dtype=np.uint64)
    uniq, inverse, counts = np.unique(lengths, return_inverse=True, return_counts=True)
    by_length = np.argsort(inverse, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(counts)))
    for g, length in enumerate(uniq.tolist()):
        sel = by_length[bounds[g] : bounds[g + 1]]
        if len(sel) < MIN_VECTOR_GROUP:
            for i in sel.tolist():
                s = int(starts[i])
                out[i] = xxhash.xxh64_intdigest(data[s : s + length].tobytes())
            continue
        rows = data[starts[sel, None] + np.arange(length)[None, :]] if length else \
            np.zeros((len(sel), 0), dtype=np.uint8)
        out[sel] = _xxh64_same_length(rows)
    return out.view(np.int64)
