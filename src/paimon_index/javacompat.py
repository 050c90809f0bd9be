"""Java behaviours that decide byte order: ``hashCode`` of boxed keys and ``HashMap`` iteration.

Paimon writes some layouts in the iteration order of a ``java.util.HashMap`` (the file-index
container's columns and index types, the bitmap index's dictionary and bitmap bodies). To write the
same bytes we reproduce that order, vectorized:

* ``hashCode`` of the key classes Paimon puts in those maps::

    Byte/Short/Integer   the value                 Long     (int)(v ^ (v >>> 32))
    Float                floatToIntBits(v)         Double   (int)(b ^ (b >>> 32)), b = doubleToLongBits
    Boolean              1231 (true) / 1237 (false)
    String               s[0]*31^(n-1) + ... over UTF-16 code units
    BinaryString         Paimon's MurmurHash3 variant, seed 42, 4-byte little-endian words,
                         each tail byte mixed alone as a sign-extended int, finalized with the length

* ``HashMap`` (Java 8+): table of ``cap`` buckets (16, doubling when ``size > 0.75 * cap``), bucket
  ``spread(h) & (cap - 1)`` with ``spread(h) = h ^ (h >>> 16)``; iteration walks buckets in order.
  Inside a bucket the order depends on how keys went in (a resize splits buckets without
  reordering them):

    put(k, v)                 appends to the bucket; grows right after the insert; a bucket
                              reaching 9 keys is "crowded"
    computeIfAbsent(k, f)     prepends to the bucket; grows at the *start* of a call (any call,
                              also one that finds its key); a bucket reaching 8 keys is crowded

  A crowded bucket doubles the table while it has fewer than 64 buckets.

A crowded bucket in a table of 64 or more buckets becomes a red-black tree in Java, whose iteration
order differs; :func:`hashmap_order` reports such cases as not exact (the keys are the same and every
query answer is the same; only the byte order of that bucket may differ).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = [
    "binary_string_hash",
    "hashmap_order",
    "java_hash_codes",
    "java_string_hash",
]

HASHMAP_INITIAL_CAPACITY = 16
HASHMAP_LOAD_FACTOR_NUM, HASHMAP_LOAD_FACTOR_DEN = 3, 4  # 0.75
TREEIFY_BIN_SIZE = 9  # put: the 9th key in a bucket treeifies (its count starts at the 2nd)
COMPUTE_TREEIFY_BIN_SIZE = 8  # computeIfAbsent: the 8th key does
MIN_TREEIFY_CAPACITY = 64
BOOLEAN_TRUE_HASH, BOOLEAN_FALSE_HASH = 1231, 1237
FLOAT_CANONICAL_NAN_BITS = 0x7FC00000
DOUBLE_CANONICAL_NAN_BITS = 0x7FF8000000000000
MURMUR_SEED = 42
MURMUR_C1, MURMUR_C2 = 0xCC9E2D51, 0x1B873593
MURMUR_H_ADD = 0xE6546B64
FMIX_M1, FMIX_M2 = 0x85EBCA6B, 0xC2B2AE35

_U32 = np.uint32


def _to_int32(v: np.ndarray) -> np.ndarray:
    return v.astype(np.uint32).view(np.int32)


def java_string_hash(s: str) -> int:
    """``java.lang.String.hashCode`` (signed int32)."""
    h = 0
    units = s.encode("utf-16-be", errors="surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def _mix_k1(k: np.ndarray) -> np.ndarray:
    k = k * _U32(MURMUR_C1)
    k = _rotl(k, 15)
    return k * _U32(MURMUR_C2)


def _mix_h1(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    h = h ^ k
    h = _rotl(h, 13)
    return h * _U32(5) + _U32(MURMUR_H_ADD)


def _fmix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U32(16))
    h = h * _U32(FMIX_M1)
    h = h ^ (h >> _U32(13))
    h = h * _U32(FMIX_M2)
    return h ^ (h >> _U32(16))


def binary_string_hash(values: pa.Array) -> np.ndarray:
    """``BinaryString.hashCode`` of each value of a binary/string Arrow array (no nulls), int32."""
    values = values.cast(pa.binary()) if not pa.types.is_binary(values.type) else values
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[values.offset : values.offset + n + 1]
    data_buf = values.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    out = np.empty(n, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for length in np.unique(lengths):
            sel = np.nonzero(lengths == length)[0]
            L = int(length)
            rows = data[starts[sel, None] + np.arange(L)[None, :]] if L else np.zeros((len(sel), 0), np.uint8)
            h = np.full(len(sel), MURMUR_SEED, dtype=np.uint32)
            aligned = L - L % 4
            if aligned:
                words = np.ascontiguousarray(rows[:, :aligned]).view("<u4")
                for j in range(words.shape[1]):
                    h = _mix_h1(h, _mix_k1(words[:, j].astype(np.uint32)))
            for j in range(aligned, L):
                # Java reads a (signed) byte and widens it to int before mixing.
                tail = rows[:, j].astype(np.int8).astype(np.int32).view(np.uint32)
                h = _mix_h1(h, _mix_k1(tail))
            out[sel] = _fmix(h ^ _U32(L))
    return out.view(np.int32)


def java_hash_codes(values: np.ndarray | pa.Array, kind: str) -> np.ndarray:
    """``hashCode()`` of boxed keys: ``kind`` is a :class:`paimon_index.types.KeyKind` value."""
    if kind == "bytes":
        assert isinstance(values, pa.Array)
        return binary_string_hash(values)
    v = np.asarray(values)
    if kind in ("byte", "short", "int"):
        return v.astype(np.int64).astype(np.int32)
    if kind == "long":
        u = v.astype(np.int64).view(np.uint64)
        return (u ^ (u >> np.uint64(32))).astype(np.uint32).view(np.int32)
    if kind == "boolean":
        return np.where(v.astype(bool), BOOLEAN_TRUE_HASH, BOOLEAN_FALSE_HASH).astype(np.int32)
    if kind == "float":
        bits = v.astype(np.float32).view(np.uint32).copy()
        bits[np.isnan(v)] = FLOAT_CANONICAL_NAN_BITS
        return bits.view(np.int32)
    if kind == "double":
        b = v.astype(np.float64).view(np.uint64).copy()
        b[np.isnan(v)] = DOUBLE_CANONICAL_NAN_BITS
        return (b ^ (b >> np.uint64(32))).astype(np.uint32).view(np.int32)
    raise ValueError(f"no Java hashCode for key kind {kind!r}")


def _spread(h: np.ndarray) -> np.ndarray:
    u = h.astype(np.int32).view(np.uint32)
    return u ^ (u >> _U32(16))


def _capacity_for(size: int) -> int:
    """Smallest table (from 16, doubling) whose threshold (0.75 * cap) admits ``size`` keys."""
    cap = HASHMAP_INITIAL_CAPACITY
    while size * HASHMAP_LOAD_FACTOR_DEN > cap * HASHMAP_LOAD_FACTOR_NUM:
        cap *= 2
    return cap


def _over_threshold(size: int, cap: int) -> bool:
    return size * HASHMAP_LOAD_FACTOR_DEN > cap * HASHMAP_LOAD_FACTOR_NUM


def _small_table_capacity(spread: np.ndarray, compute: bool) -> int:
    """Exact capacity once the table first has 64 buckets (or all keys are in, if sooner).

    Below 64 buckets a crowded bucket doubles the table (``treeifyBin``), so the capacity depends
    on collisions, not only on the size. Only the first few dozen keys can get here, so a plain
    simulation is cheap.
    """
    cap = HASHMAP_INITIAL_CAPACITY
    crowded = COMPUTE_TREEIFY_BIN_SIZE if compute else TREEIFY_BIN_SIZE
    inserted: list[int] = []
    counts: dict[int, int] = {}
    for s in spread.tolist():
        if cap >= MIN_TREEIFY_CAPACITY:
            break
        old = cap
        if compute and _over_threshold(len(inserted), cap):  # lazy: checked before each call
            cap *= 2
        inserted.append(s)
        b = s & (cap - 1)
        if cap != old:
            counts = {}
            for t in inserted[:-1]:
                counts[t & (cap - 1)] = counts.get(t & (cap - 1), 0) + 1
        counts[b] = counts.get(b, 0) + 1
        grew = False
        if counts[b] >= crowded:
            cap *= 2
            grew = True
        if not compute and _over_threshold(len(inserted), cap):  # eager: after the insert
            cap *= 2
            grew = True
        if grew:
            counts = {}
            for t in inserted:
                counts[t & (cap - 1)] = counts.get(t & (cap - 1), 0) + 1
    return cap


def hashmap_order(hashes: np.ndarray, *, compute: bool = False,
                  trailing_call: bool = False) -> tuple[np.ndarray, bool]:
    """Iteration order of a ``HashMap`` filled with distinct keys in the given order.

    Args:
        hashes: the keys' ``hashCode()`` values (int32), in insertion order.
        compute: keys were added with ``computeIfAbsent`` (each new key goes to the *front* of
            its bucket; the table grows at the start of the next call, and a bucket of 8 is
            crowded) instead of ``put`` (back of the bucket; grows right after the insert; 9).
        trailing_call: with ``compute``, whether any call (for an existing key) came after the
            last new key, which is when a pending resize happens.

    Returns:
        ``(order, exact)``: ``order`` indexes ``hashes`` in iteration order; ``exact`` is False when
        some bucket became a tree in Java, whose order inside that bucket we do not reproduce.
    """
    n = len(hashes)
    if n == 0:
        return np.zeros(0, dtype=np.int64), True
    spread = _spread(np.asarray(hashes))
    first_large = _small_table_capacity(spread, compute)
    # computeIfAbsent grows only when a later call starts over the threshold.
    by_size = _capacity_for(n if trailing_call or not compute else n - 1)
    cap = max(first_large, by_size)
    crowded = COMPUTE_TREEIFY_BIN_SIZE if compute else TREEIFY_BIN_SIZE
    exact = True
    epoch = first_large
    while MIN_TREEIFY_CAPACITY <= epoch <= cap:
        # Keys present while the table had `epoch` buckets (one past the threshold at most);
        # bucket sizes only grow within an epoch, so the end state shows any crowding.
        present = min(n, epoch * HASHMAP_LOAD_FACTOR_NUM // HASHMAP_LOAD_FACTOR_DEN + 1)
        if np.bincount(spread[:present] & _U32(epoch - 1)).max() >= crowded:
            exact = False
            break
        epoch *= 2
    buckets = spread & _U32(cap - 1)
    rank = np.arange(n, dtype=np.int64)
    return np.lexsort((-rank if compute else rank, buckets)), exact
