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

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.binary import ByteReader
from paimon_index.javacompat import java_hash_codes
from paimon_index.types import KeyKind

__all__ = [
    "Entries",
    "FixedWidthKeys",
    "KeySet",
    "distinct_keys",
    "encode_entries",
    "first_unsorted",
    "key_size",
    "parse_entries",
    "sort_key",
]

FLOAT_CANONICAL_NAN = 0x7FC00000
DOUBLE_CANONICAL_NAN = 0x7FF8000000000000
STRING_LENGTH_BYTES = 4
STRUCT_I32 = struct.Struct(">i")
FIXED_KEY_DTYPE = {
    KeyKind.INT8: ">i1", KeyKind.INT16: ">i2", KeyKind.INT32: ">i4", KeyKind.INT64: ">i8",
    KeyKind.FLOAT32: ">f4", KeyKind.FLOAT64: ">f8", KeyKind.BOOL: "u1",
}


@dataclass(frozen=True)
class KeySet:
    """Distinct keys of a column in first-occurrence order.

    Attributes:
        keys: NumPy array of keys (numbers/bools), or an Arrow binary array (strings).
        sort_keys: NumPy array ordering the keys as Java's comparator does (for byte strings,
            the keys themselves: Arrow sorts binary values as unsigned bytes, shorter first).
        codes: for every input value, the index of its key in ``keys``.
    """

    keys: np.ndarray | pa.Array
    sort_keys: np.ndarray | pa.Array
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


def _from_float_sort_bits(bits: np.ndarray, kind: KeyKind) -> np.ndarray:
    """Inverse of :func:`_float_sort_bits` (the remapping is its own inverse)."""
    if kind is KeyKind.FLOAT32:
        raw = (bits ^ ((bits >> 31) & 0x7FFFFFFF)).astype(np.int32)
        return raw.view(np.float32)
    return (bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFF)).view(np.float64)


def distinct_keys(values: np.ndarray | pa.Array, kind: KeyKind) -> KeySet:
    """Distinct keys of non-null ``values`` in first-occurrence order, with per-value codes.

    One hash pass (Arrow's ``dictionary_encode``, which keeps first-occurrence order); floats are
    encoded by their sort bits so that keys follow Java's ``equals`` (NaN = NaN, -0.0 != 0.0).
    """
    if kind is KeyKind.BYTES:
        assert isinstance(values, pa.Array)
        encoded = pc.dictionary_encode(values)
        keys = encoded.dictionary.cast(pa.binary())
        return KeySet(keys, keys, encoded.indices.to_numpy(zero_copy_only=False))
    arr = np.asarray(values)
    is_float = kind in (KeyKind.FLOAT32, KeyKind.FLOAT64)
    ident = _float_sort_bits(arr, kind) if is_float else arr.astype(np.int64)
    encoded = pc.dictionary_encode(pa.array(ident, pa.int64()))
    sort_keys = encoded.dictionary.to_numpy(zero_copy_only=False)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    if is_float:
        keys = _from_float_sort_bits(sort_keys, kind)
    elif kind is KeyKind.BOOL:
        keys = sort_keys.astype(bool)
    else:
        keys = sort_keys
    return KeySet(keys, sort_keys, codes)


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


class FixedWidthKeys(Sequence[bytes]):
    """Byte-string keys of one length, viewed in place as an (n, length) matrix (no copies)."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return self.rows.shape[0]

    def __getitem__(self, i: int) -> bytes:  # type: ignore[override]
        return self.rows[i].tobytes()

    def first_unsorted(self) -> int | None:
        n, width = self.rows.shape
        if n < 2:
            return None
        if width == 0:
            return 1  # two empty keys: a duplicate
        a, b = self.rows[:-1], self.rows[1:]
        differs = a != b
        first = np.argmax(differs, axis=1)
        idx = np.arange(len(first))
        ascending = differs.any(axis=1) & (b[idx, first] > a[idx, first])
        bad = np.flatnonzero(~ascending)
        return int(bad[0]) + 1 if len(bad) else None


@dataclass(frozen=True)
class Entries:
    """Parsed ``key | i32 ... `` entries: sort keys and one int column per i32 field."""

    sort_keys: np.ndarray | Sequence[bytes]
    ints: np.ndarray  # shape (n, fields)
    #: absolute offset of each entry (for error messages)
    positions: np.ndarray


def parse_entries(r: ByteReader, count: int, kind: KeyKind, n_ints: int, what: str) -> Entries:
    """Read ``count`` entries of ``key | i32 * n_ints`` from the cursor, all at once.

    Fixed-width keys are decoded with one NumPy call; byte-string keys with a tight loop over the
    buffer. Every length is checked against the bytes left before it is used.
    """
    if kind is not KeyKind.BYTES:
        fields = [("key", FIXED_KEY_DTYPE[kind])] + [(f"i{j}", ">i4") for j in range(n_ints)]
        dtype = np.dtype(fields)
        start = r.pos
        raw = r.read_view(count * dtype.itemsize, f"{what} ({count} entries)")
        rec = np.frombuffer(raw, dtype=dtype, count=count)
        keys = rec["key"]
        if kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
            sort_keys = _float_sort_bits(keys.astype(np.float64) if kind is KeyKind.FLOAT64
                                         else keys.astype(np.float32), kind)
        else:
            sort_keys = keys.astype(np.int64)
        ints = np.stack([rec[f"i{j}"].astype(np.int64) for j in range(n_ints)], axis=1) if count \
            else np.zeros((0, n_ints), dtype=np.int64)
        return Entries(sort_keys, ints, start + np.arange(count, dtype=np.int64) * dtype.itemsize)
    # Byte strings: i32 length | bytes | i32 * n_ints, sequential by nature. Read through a window
    # that grows only as entries need it, so a block index or one block never pulls in the rest of
    # the index (the bitmaps after it) from a file read by range.
    start = r.pos
    tail = 4 * n_ints
    fixed = _fixed_width_entries(r, count, n_ints)
    if fixed is not None:  # every key has the same length: a matrix, no loop
        fixed_keys, ints, size = fixed
        return Entries(fixed_keys, ints, start + np.arange(count, dtype=np.int64) * (size // count))
    unpack_len = STRUCT_I32.unpack_from
    unpack_ints = struct.Struct(">" + "i" * n_ints).unpack_from
    total = r.end - start  # bytes left for the entries (error messages count against these)
    window = _Window(r, start, count * (STRING_LENGTH_BYTES + tail + ENTRY_KEY_GUESS_BYTES))
    keys_out: list[bytes] = []
    ints_out: list[tuple[int, ...]] = []
    positions: list[int] = []
    at = 0  # offset from ``start``
    for i in range(count):
        left = total - at
        if left < STRING_LENGTH_BYTES + tail:
            raise r.error(f"truncated: entry needs at least {STRING_LENGTH_BYTES + tail} bytes, "
                          f"only {left} remain", f"{what} entry {i}", start + at)
        buf, pos = window.at(at, STRING_LENGTH_BYTES)
        (n,) = unpack_len(buf, pos)
        if n < 0 or n > left - STRING_LENGTH_BYTES - tail:
            raise r.error(f"string length {n} does not fit in the {left} bytes left",
                          f"{what} entry {i} key", start + at)
        positions.append(start + at)
        buf, pos = window.at(at, STRING_LENGTH_BYTES + n + tail)
        key_end = pos + STRING_LENGTH_BYTES + n
        keys_out.append(bytes(buf[pos + STRING_LENGTH_BYTES : key_end]))
        ints_out.append(unpack_ints(buf, key_end))
        at += STRING_LENGTH_BYTES + n + tail
    r.seek(start + at, what)
    ints_arr = np.array(ints_out, dtype=np.int64).reshape(count, n_ints)
    return Entries(keys_out, ints_arr, np.array(positions, dtype=np.int64))


#: Key bytes per entry guessed for the first read of byte-string entries (the window then doubles).
ENTRY_KEY_GUESS_BYTES = 16
#: The smallest first read of byte-string entries.
MIN_WINDOW_BYTES = 4096


class _Window:
    """A reader's bytes from ``start`` on, loaded in growing windows (never past the reader's end)."""

    def __init__(self, r: ByteReader, start: int, guess: int) -> None:
        self._r = r
        self._start = start
        self._base = 0
        self._buf: memoryview | bytes = b""
        self._next = max(guess, MIN_WINDOW_BYTES)

    def at(self, offset: int, need: int) -> tuple[memoryview | bytes, int]:
        """A buffer and the position in it of ``need`` bytes at ``offset`` (bounds checked by the caller)."""
        rel = offset - self._base
        if rel + need > len(self._buf):
            size = min(max(need, self._next), self._r.end - self._start - offset)
            self._r.seek(self._start + offset)
            self._buf = self._r.read_view(size, "entries")
            self._base, rel = offset, 0
            self._next = 2 * size
        return self._buf, rel


def _fixed_width_entries(r: ByteReader, count: int,
                         n_ints: int) -> tuple[FixedWidthKeys, np.ndarray, int] | None:
    """Keys, ints and byte size of ``count`` entries whose keys all have the first key's length.

    Reads only those entries' bytes; on None the cursor is back where it was.
    """
    start = r.pos
    if count == 0 or r.remaining < STRING_LENGTH_BYTES:
        return None
    (length,) = STRUCT_I32.unpack_from(r.read_view(STRING_LENGTH_BYTES, "entries"), 0)
    r.seek(start)
    stride = STRING_LENGTH_BYTES + length + 4 * n_ints
    if length < 0 or count * stride > r.remaining:
        return None
    buf = r.read_view(count * stride, "entries")
    fields = [("n", ">i4"), ("key", np.uint8, (length,))] + [(f"i{j}", ">i4") for j in range(n_ints)]
    rec = np.frombuffer(buf, dtype=np.dtype(fields), count=count)
    if not np.all(rec["n"] == length):
        r.seek(start)
        return None
    ints = np.stack([rec[f"i{j}"].astype(np.int64) for j in range(n_ints)], axis=1)
    return FixedWidthKeys(rec["key"].reshape(count, length)), ints, count * stride


def first_unsorted(sort_keys: np.ndarray | Sequence[bytes]) -> int | None:
    """Index of the first key not strictly greater than the one before, or None if ascending."""
    if isinstance(sort_keys, FixedWidthKeys):
        return sort_keys.first_unsorted()
    if isinstance(sort_keys, np.ndarray):
        bad = np.flatnonzero(sort_keys[1:] <= sort_keys[:-1])  # not np.diff: it overflows at the extremes
        return int(bad[0]) + 1 if len(bad) else None
    for i in range(1, len(sort_keys)):
        if sort_keys[i] <= sort_keys[i - 1]:
            return i
    return None
