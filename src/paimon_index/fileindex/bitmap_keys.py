"""Keys of the bitmap index dictionary: their Java class, bytes, order and hash.

The bitmap index keys each distinct value by the Java object Paimon puts in its ``HashMap``:

    Paimon type                     Java key     serialized (big-endian)         order
    ------------------------------  -----------  ------------------------------  -------------------
    TINYINT                         Byte         1 byte                          signed
    SMALLINT                        Short        2 bytes                         signed
    INT, DATE, TIME                 Integer      4 bytes                         signed
    BIGINT, TIMESTAMP(_LTZ)         Long         8 bytes (millis if p<=3, else   signed
                                                 micros)
    FLOAT                           Float        4 bytes IEEE                    Float.compare
    DOUBLE                          Double       8 bytes IEEE                    Double.compare
    BOOLEAN                         Boolean      1 byte (0/1)                    false < true
    CHAR, VARCHAR, STRING           BinaryString i32 length + UTF-8 bytes        unsigned bytes, then
                                                                                 length

``Float.compare`` order is total: -Inf < ... < -0.0 < 0.0 < ... < +Inf < NaN, and all NaNs are one
key. We give every key a *sort key* with that order: the integer itself, or for floats the IEEE bits
mapped to a signed integer that sorts the same way (``bits ^ ((bits >> 63) & 0x7fff...)``), or the
bytes themselves (Python compares ``bytes`` as unsigned, shorter prefix first: BinaryString order).

A column's distinct keys are found in one vectorized pass, in first-occurrence order (the order
Java inserts them), together with each row's key code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.binary import ByteReader
from paimon_index.javacompat import java_hash_codes
from paimon_index.types import KeyKind

__all__ = ["KeySet", "decode_key", "distinct_keys", "encode_entries", "key_size", "sort_key"]

FLOAT_CANONICAL_NAN = 0x7FC00000
DOUBLE_CANONICAL_NAN = 0x7FF8000000000000
STRING_LENGTH_BYTES = 4
FIXED_KEY_DTYPE = {
    KeyKind.INT8: ">i1", KeyKind.INT16: ">i2", KeyKind.INT32: ">i4", KeyKind.INT64: ">i8",
    KeyKind.FLOAT32: ">f4", KeyKind.FLOAT64: ">f8", KeyKind.BOOL: "u1",
}


@dataclass(frozen=True)
class KeySet:
    """Distinct keys of a column in first-occurrence order.

    Attributes:
        keys: NumPy array of keys (numbers/bools), or an Arrow binary array (strings).
        sort_keys: NumPy array (or list of bytes) ordering the keys as Java's comparator does.
        codes: for every input value, the index of its key in ``keys``.
    """

    keys: np.ndarray | pa.Array
    sort_keys: np.ndarray | list[bytes]
    codes: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)


def _float_sort_bits(values: np.ndarray, kind: KeyKind) -> np.ndarray:
    """Canonical-NaN IEEE bits remapped so signed integer order == Float/Double.compare order."""
    if kind is KeyKind.FLOAT32:
        bits = values.astype(np.float32).view(np.int32).astype(np.int64)
        bits[np.isnan(values)] = FLOAT_CANONICAL_NAN
        return bits ^ ((bits >> 31) & 0x7FFFFFFF)
    bits = values.astype(np.float64).view(np.int64).copy()
    bits[np.isnan(values)] = DOUBLE_CANONICAL_NAN
    return bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFF)


def sort_key(literal: object, kind: KeyKind) -> object:
    """The sort key of one canonical literal (comparable with :attr:`KeySet.sort_keys`)."""
    if kind is KeyKind.BYTES:
        assert isinstance(literal, bytes)
        return literal
    if kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
        return int(_float_sort_bits(np.array([literal], dtype=np.float64), kind)[0])
    return int(literal)  # type: ignore[call-overload]


def distinct_keys(values: np.ndarray | pa.Array, kind: KeyKind) -> KeySet:
    """Distinct keys of non-null ``values`` in first-occurrence order, with per-value codes."""
    if kind is KeyKind.BYTES:
        assert isinstance(values, pa.Array)
        encoded = pc.dictionary_encode(values)
        keys = encoded.dictionary.cast(pa.binary())
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        return KeySet(keys, keys.to_pylist(), codes)
    arr = np.asarray(values)
    if kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
        ident = _float_sort_bits(arr, kind)
    else:
        ident = arr.astype(np.int64)
    uniq, first, inverse = np.unique(ident, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # sorted-unique index -> first-occurrence rank
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    keys = arr[first[order]]
    if kind is KeyKind.BOOL:
        keys = keys.astype(bool)
    return KeySet(keys, uniq[order], rank[inverse.ravel()])


def java_key_hashes(keys: np.ndarray | pa.Array, kind: KeyKind) -> np.ndarray:
    """``hashCode()`` of the boxed keys (for HashMap order)."""
    return java_hash_codes(keys, kind.value)


def key_size(kind: KeyKind, keys: np.ndarray | pa.Array) -> np.ndarray:
    """Serialized bytes of each key."""
    if kind is KeyKind.BYTES:
        assert isinstance(keys, pa.Array)
        lengths = pc.binary_length(keys).to_numpy(zero_copy_only=False).astype(np.int64)
        return lengths + STRING_LENGTH_BYTES
    return np.full(len(keys), np.dtype(FIXED_KEY_DTYPE[kind]).itemsize, dtype=np.int64)


def encode_entries(kind: KeyKind, keys: np.ndarray | pa.Array, *ints: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Serialize ``key, int32, int32, ...`` per entry, all entries concatenated.

    Returns the bytes and each entry's size.
    """
    n = len(keys)
    if kind is not KeyKind.BYTES:
        fields = [("key", FIXED_KEY_DTYPE[kind])] + [(f"i{j}", ">i4") for j in range(len(ints))]
        rec = np.empty(n, dtype=np.dtype(fields))
        rec["key"] = np.asarray(keys).astype(np.uint8) if kind is KeyKind.BOOL else keys
        for j, col in enumerate(ints):
            rec[f"i{j}"] = col
        return rec.tobytes(), np.full(n, rec.dtype.itemsize, dtype=np.int64)
    assert isinstance(keys, pa.Array)
    keys = keys.cast(pa.binary())
    lengths = pc.binary_length(keys).to_numpy(zero_copy_only=False).astype(np.int64)
    sizes = STRING_LENGTH_BYTES + lengths + 4 * len(ints)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    out = np.zeros(int(ends[-1]) if n else 0, dtype=np.uint8)

    def put_i32(at: np.ndarray, values: np.ndarray) -> None:
        be = np.asarray(values, dtype=">i4").view(np.uint8).reshape(-1, 4)
        for b in range(4):
            out[at + b] = be[:, b]

    put_i32(starts, lengths)
    # Gather every key byte to its place: destination runs start after each length prefix.
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[keys.offset : keys.offset + n + 1]
    buf = keys.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    total = int(lengths.sum())
    if total:
        run_start = np.repeat(starts + STRING_LENGTH_BYTES - np.cumsum(lengths) + lengths, lengths)
        src_start = np.repeat(offsets[:-1].astype(np.int64) - (np.cumsum(lengths) - lengths), lengths)
        k = np.arange(total, dtype=np.int64)
        out[run_start + k] = data[src_start + k]
    pos = starts + STRING_LENGTH_BYTES + lengths
    for col in ints:
        put_i32(pos, col)
        pos = pos + 4
    return out.tobytes(), sizes


def decode_key(r: ByteReader, kind: KeyKind, field: str) -> object:
    """Read one key (as a canonical literal) from the cursor."""
    if kind is KeyKind.BYTES:
        at = r.pos
        n = r.i32(field)
        if n < 0:
            raise r.error(f"negative string length {n}", field, at)
        return r.read_bytes(n, field)
    if kind is KeyKind.INT8:
        return r.i8(field)
    if kind is KeyKind.INT16:
        return r.i16(field)
    if kind is KeyKind.INT32:
        return r.i32(field)
    if kind is KeyKind.INT64:
        return r.i64(field)
    if kind is KeyKind.FLOAT32:
        return r.f32(field)
    if kind is KeyKind.FLOAT64:
        return r.f64(field)
    return r.bool(field)
