"""Keys and the chunked dictionary of a range-bitmap index (Paimon ``ChunkedDictionary``, v1).

The dictionary maps each distinct non-NULL value (a *key*) to its *code*: its rank in ascending key
order (0-based). Keys are grouped into chunks; the first key of each chunk is stored in the chunk's
header, so a lookup binary-searches the chunk headers, then reads the keys of one chunk only.

Key encodings (big-endian; Paimon ``KeyFactory``)::

    type                              bytes  encoding                            default chunk-size
    TINYINT                           1      i8                                  0b (a chunk per key)
    SMALLINT                          2      i16                                 0b
    INT, DATE, TIME                   4      i32                                 16kb
    BIGINT, TIMESTAMP(_LTZ), DECIMAL  8      i64 (millis / micros / unscaled)    16kb
    FLOAT / DOUBLE                    4 / 8  IEEE raw bits                       16kb
    BOOLEAN                           1      1 = true, anything else false       0b
    CHAR, VARCHAR, STRING             4 + n  i32 n >= 0, then n UTF-8 bytes      16kb

Key order is Java's: signed integers; floats by ``Float.compare``/``Double.compare`` (-0.0 < 0.0,
every NaN equal and above +Infinity); false < true; strings as unsigned bytes, shorter first on a
common prefix.

Dictionary layout (big-endian)::

    4    header length     i32 = 13
    1    version           u8 = 1
    4    chunk count       i32 >= 0
    4    offsets length    i32 = 4 x chunk count
    4    chunks length     i32 >= 0
    4 x chunk count        offsets: i32 start of each chunk header in the chunks region,
                           ascending from 0
    chunks length          chunk headers, back to back
    ...                    keys region (to the end of the dictionary): each chunk's keys

    fixed-length chunk header           variable-length chunk header (strings)
    1   version u8 = 1                  1      version u8 = 1
    L   first key                       4 + n  first key
    4   code of the first key  i32      4      code of the first key i32
    4   keys offset in keys region i32  4      keys offset in keys region i32
    4   size: keys after the first i32  4      size: keys after the first i32
    4   keys length = size x L  i32     4      offsets length = 4 x size i32
    4   fixed length L  i32             4      keys length i32
    keys: size x L bytes                keys: size x i32 offsets (from the keys start, ascending)
                                              then size encoded keys

Chunking (writer): keys are added in order; a fixed-length chunk holds its first key plus
``chunk-size // L`` more; a variable-length chunk adds keys while their encoded bytes fit in
``chunk-size`` and their offsets (4 bytes each) fit in ``chunk-size``; the first key that does not
fit starts the next chunk.

Checked on read: header sizes, version, counts, ascending chunk offsets inside the chunks region,
each chunk's header length, codes inside ``[0, cardinality)``, key lengths, keys inside the keys
region, fixed-length keys ascending. Not checked: order of variable-length keys and of chunk
headers (a wrong order gives wrong codes, never an out-of-bounds read).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.binary import ByteReader, ByteWriter, Source
from paimon_index.errors import InvalidPredicateError
from paimon_index.types import CanonicalColumn, DataType, KeyKind

__all__ = [
    "DICTIONARY_HEADER_BYTES",
    "DictionaryReader",
    "EncodedColumn",
    "KeyCodec",
    "codec_for",
    "encode_column",
    "serialize_dictionary",
]

DICTIONARY_VERSION = 1
CHUNK_VERSION = 1
#: version + chunk count + offsets length + chunks length
DICTIONARY_HEADER_BYTES = 1 + 4 + 4 + 4
#: version + code + offset + size + keys length + fixed length (plus the key itself)
FIXED_CHUNK_HEADER_BYTES = 1 + 4 * 5
#: version + code + offset + size + offsets length + keys length (plus the key itself)
VARIABLE_CHUNK_HEADER_BYTES = 1 + 4 * 5
STRING_LENGTH_BYTES = 4
OFFSET_BYTES = 4
DEFAULT_CHUNK_SIZE = 16 * 1024
#: bincount-based dictionary encoding when the value span is at most this multiple of the rows.
DENSE_SPAN_FACTOR = 4
DENSE_SPAN_MIN = 1 << 16

_F32_NAN_BITS = 0x7FC00000
_F64_NAN_BITS = 0x7FF8000000000000
_F32_MAGNITUDE = 0x7FFFFFFF
_F64_MAGNITUDE = 0x7FFFFFFFFFFFFFFF
#: magnitude bits of +Infinity: anything above is a NaN
_F32_INF_BITS = 0x7F800000
_F64_INF_BITS = 0x7FF0000000000000
_U32_MASK = 0xFFFFFFFF
_U64_MASK = 0xFFFFFFFFFFFFFFFF


# ------------------------------------------------------------------------------------------------
# Keys
# ------------------------------------------------------------------------------------------------
def _f32_order(bits: np.ndarray) -> np.ndarray:
    """``Float.compare`` order of raw float bits as int64 (NaNs collapse to one key)."""
    b = bits.astype(np.uint32).view(np.int32).astype(np.int64)
    nan = (b & _F32_MAGNITUDE) > _F32_INF_BITS
    b = np.where(nan, _F32_NAN_BITS, b)
    return np.where(b < 0, b ^ _F32_MAGNITUDE, b)


def _f64_order(bits: np.ndarray) -> np.ndarray:
    b = bits.astype(np.uint64).view(np.int64)
    nan = (b & _F64_MAGNITUDE) > _F64_INF_BITS
    b = np.where(nan, np.int64(_F64_NAN_BITS), b)
    return np.where(b < 0, b ^ np.int64(_F64_MAGNITUDE), b)


@dataclass(frozen=True)
class KeyCodec:
    """How one key kind is encoded, ordered and compared.

    Attributes:
        kind: the key kind.
        width: fixed encoded width in bytes, 0 for variable-length (strings).
        wire: NumPy dtype of the encoded fixed-width key (raw bits for floats).
        default_chunk_size: Paimon's default ``chunk-size`` for the kind, in bytes.
    """

    kind: KeyKind
    width: int
    wire: str
    default_chunk_size: int
    _order: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def variable(self) -> bool:
        return self.width == 0

    def order_keys(self, raw: np.ndarray) -> np.ndarray:
        """Sortable int64 keys for raw fixed-width values (``wire`` dtype)."""
        if self._order is not None:
            return self._order(raw)
        if self.kind is KeyKind.BOOL:
            return (raw == 1).astype(np.int64)
        return raw.astype(np.int64)

    def raw_keys(self, distinct: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """Raw key values (``wire`` semantics) of distinct order keys, inverting
        :meth:`order_keys`; for NaN, the bits of the first NaN in ``raw`` (row order)."""
        if self.kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
            magnitude = _F32_MAGNITUDE if self.kind is KeyKind.FLOAT32 else _F64_MAGNITUDE
            bits = np.where(distinct < 0, distinct ^ magnitude, distinct)
            unsigned = np.uint32 if self.kind is KeyKind.FLOAT32 else np.uint64
            signed = np.int32 if self.kind is KeyKind.FLOAT32 else np.int64
            out = bits.astype(signed).view(unsigned)
            nan_key = _F32_NAN_BITS if self.kind is KeyKind.FLOAT32 else _F64_NAN_BITS
            if distinct.size and int(distinct[-1]) == nan_key:
                nan = np.flatnonzero(np.isnan(raw.view(
                    np.float32 if self.kind is KeyKind.FLOAT32 else np.float64)))
                if nan.size:
                    out = out.copy()
                    out[-1] = raw[nan[0]]
            return out
        if self.kind is KeyKind.BOOL:
            return distinct.astype(np.uint8)
        return distinct

    def order_literal(self, literal: Any) -> int | bytes:
        """The comparable form of a predicate literal (canonical key)."""
        kind = self.kind
        if kind is KeyKind.BYTES:
            if isinstance(literal, bytes | bytearray | memoryview):
                return bytes(literal)
            if isinstance(literal, str):
                return literal.encode("utf-8", errors="surrogatepass")
        elif kind is KeyKind.BOOL:
            if isinstance(literal, bool | np.bool_):
                return int(bool(literal))
        elif kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
            if isinstance(literal, int | float | np.integer | np.floating) and not isinstance(
                    literal, bool):
                try:
                    value = float(literal)
                except OverflowError:
                    value = math.inf if literal > 0 else -math.inf
                with np.errstate(over="ignore"):  # beyond FLOAT's range rounds to +-Infinity
                    if kind is KeyKind.FLOAT32:
                        bits = np.array([value], dtype=np.float32).view(np.uint32)
                    else:
                        bits = np.array([value], dtype=np.float64).view(np.uint64)
                return int(self.order_keys(bits)[0])
        elif isinstance(literal, int | np.integer) and not isinstance(literal, bool):
            return int(literal)
        raise InvalidPredicateError(f"literal {literal!r} does not fit a {kind.value} key")

    def decode(self, raw: int | bytes) -> Any:
        """A readable value for ``describe`` (floats from their bits, strings as text)."""
        if isinstance(raw, bytes):
            return raw.decode("utf-8", errors="backslashreplace")
        if self.kind is KeyKind.FLOAT32:
            return struct.unpack(">f", struct.pack(">I", raw & _U32_MASK))[0]
        if self.kind is KeyKind.FLOAT64:
            return struct.unpack(">d", struct.pack(">Q", raw & _U64_MASK))[0]
        if self.kind is KeyKind.BOOL:
            return raw == 1
        return raw

    # -- one key at a cursor --------------------------------------------------------------------
    def read(self, r: ByteReader, field: str) -> int | bytes:
        """One encoded key: raw integer bits for fixed-width kinds, bytes for strings."""
        if self.variable:
            at = r.pos
            n = r.i32(f"{field} length")
            if n < 0:
                raise r.error(f"negative key length {n}", field, at)
            return r.read_bytes(n, field)
        data = r.read_bytes(self.width, field)
        return int(np.frombuffer(data, dtype=self.wire)[0])

    def order_raw(self, raw: int | bytes) -> int | bytes:
        """The comparable form of a key read by :meth:`read`."""
        if isinstance(raw, bytes):
            return raw
        return int(self.order_keys(np.array([raw], dtype=np.dtype(self.wire).newbyteorder("=")))[0])


_CODECS = {
    KeyKind.INT8: KeyCodec(KeyKind.INT8, 1, ">i1", 0),
    KeyKind.INT16: KeyCodec(KeyKind.INT16, 2, ">i2", 0),
    KeyKind.INT32: KeyCodec(KeyKind.INT32, 4, ">i4", DEFAULT_CHUNK_SIZE),
    KeyKind.INT64: KeyCodec(KeyKind.INT64, 8, ">i8", DEFAULT_CHUNK_SIZE),
    KeyKind.DECIMAL: KeyCodec(KeyKind.DECIMAL, 8, ">i8", DEFAULT_CHUNK_SIZE),
    KeyKind.FLOAT32: KeyCodec(KeyKind.FLOAT32, 4, ">u4", DEFAULT_CHUNK_SIZE, _f32_order),
    KeyKind.FLOAT64: KeyCodec(KeyKind.FLOAT64, 8, ">u8", DEFAULT_CHUNK_SIZE, _f64_order),
    KeyKind.BOOL: KeyCodec(KeyKind.BOOL, 1, "u1", 0),
    KeyKind.BYTES: KeyCodec(KeyKind.BYTES, 0, "", DEFAULT_CHUNK_SIZE),
}


def codec_for(dtype: DataType) -> KeyCodec:
    return _CODECS[dtype.key_kind]


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EncodedColumn:
    """A column as dictionary codes.

    Attributes:
        rows: ascending positions of the non-NULL rows (int64).
        codes: code of each of ``rows`` (int64).
        keys: the distinct keys in order: raw fixed-width values (``codec.wire`` semantics, as
            int64/uint64) or an Arrow binary array for strings.
        row_count: rows in the column, NULLs included.
    """

    rows: np.ndarray
    codes: np.ndarray
    keys: np.ndarray | pa.Array
    row_count: int

    @property
    def cardinality(self) -> int:
        return len(self.keys)


def _raw_values(column: CanonicalColumn, codec: KeyCodec, rows: np.ndarray) -> np.ndarray:
    values = np.asarray(column.values)[rows]
    if codec.kind is KeyKind.FLOAT32:
        return values.astype(np.float32).view(np.uint32)
    if codec.kind is KeyKind.FLOAT64:
        return values.astype(np.float64).view(np.uint64)
    if codec.kind is KeyKind.BOOL:
        return values.astype(np.uint8)
    return values.astype(np.int64)


def _dictionary_encode(order_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code of each value, distinct keys ascending) for int64 order keys."""
    n = order_keys.size
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    lo, hi = int(order_keys.min()), int(order_keys.max())
    span = hi - lo + 1
    if span <= max(DENSE_SPAN_FACTOR * n, DENSE_SPAN_MIN):
        shifted = order_keys - lo
        present = np.zeros(span, dtype=bool)
        present[shifted] = True
        rank = np.cumsum(present) - 1
        return rank[shifted], np.flatnonzero(present) + lo
    order = np.argsort(order_keys, kind="stable")
    sorted_keys = order_keys[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new[1:])
    codes = np.empty(n, dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes, sorted_keys[new]


def encode_column(column: CanonicalColumn, codec: KeyCodec) -> EncodedColumn:
    """Dictionary-encode the non-NULL values of ``column`` in Java key order (vectorized).

    Among keys Java considers equal (only NaNs with different payloads), the bits of the first
    row in row order are kept, as Java's ``TreeMap`` keeps its first key.
    """
    valid = np.asarray(column.valid, dtype=bool)
    rows = np.flatnonzero(valid).astype(np.int64)
    if codec.variable:
        values = column.values
        assert isinstance(values, pa.Array | pa.ChunkedArray)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if not pa.types.is_binary(values.type):
            values = values.cast(pa.binary())
        live = values.filter(pa.array(valid)) if len(rows) != len(valid) else values
        encoded = pc.dictionary_encode(live)
        dictionary = encoded.dictionary
        order = np.asarray(pc.array_sort_indices(dictionary)).astype(np.int64)
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        indices = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        codes = rank[indices] if len(indices) else np.zeros(0, dtype=np.int64)
        keys = dictionary.take(pa.array(order))
        return EncodedColumn(rows, codes, keys, len(valid))
    raw = _raw_values(column, codec, rows)
    codes, distinct = _dictionary_encode(codec.order_keys(raw))
    return EncodedColumn(rows, codes, codec.raw_keys(distinct, raw), len(valid))


def _fixed_wire(codec: KeyCodec, keys: np.ndarray) -> np.ndarray:
    native = np.dtype(codec.wire).newbyteorder("=")
    return keys.astype(native).astype(codec.wire)


def serialize_key(codec: KeyCodec, keys: np.ndarray | pa.Array, i: int) -> bytes:
    """The encoding of ``keys[i]`` (min and max in the range-bitmap header)."""
    if codec.variable:
        value = keys[i].as_py()
        return struct.pack(">i", len(value)) + value
    return _fixed_wire(codec, keys[i : i + 1]).tobytes()


def serialize_dictionary(codec: KeyCodec, keys: np.ndarray | pa.Array, chunk_size: int) -> bytes:
    """The dictionary bytes for distinct, ascending ``keys``."""
    if codec.variable:
        assert isinstance(keys, pa.Array)
        offsets, chunks, key_bytes = _variable_chunks(keys, chunk_size)
    else:
        assert isinstance(keys, np.ndarray)
        offsets, chunks, key_bytes = _fixed_chunks(codec, keys, chunk_size)
    n_chunks = len(offsets) // OFFSET_BYTES
    w = ByteWriter()
    w.i32(DICTIONARY_HEADER_BYTES)
    w.i8(DICTIONARY_VERSION)
    w.i32(n_chunks)
    w.i32(len(offsets))
    w.i32(len(chunks))
    w.write(offsets)
    w.write(chunks)
    w.write(key_bytes)
    return w.getvalue()


def _fixed_chunks(codec: KeyCodec, keys: np.ndarray, chunk_size: int) -> tuple[bytes, bytes, bytes]:
    n = len(keys)
    if n == 0:
        return b"", b"", b""
    width = codec.width
    per_chunk = 1 + chunk_size // width
    first = np.arange(0, n, per_chunk, dtype=np.int64)
    sizes = np.minimum(first + per_chunk, n) - first - 1
    record = np.dtype([("version", "u1"), ("key", codec.wire), ("code", ">i4"), ("offset", ">i4"),
                       ("size", ">i4"), ("keys_length", ">i4"), ("fixed_length", ">i4")])
    headers = np.zeros(len(first), dtype=record)
    headers["version"] = CHUNK_VERSION
    headers["key"] = _fixed_wire(codec, keys[first])
    headers["code"] = first
    headers["offset"] = np.concatenate(([0], np.cumsum(sizes * width)[:-1]))
    headers["size"] = sizes
    headers["keys_length"] = sizes * width
    headers["fixed_length"] = width
    is_rest = np.ones(n, dtype=bool)
    is_rest[first] = False
    rest = _fixed_wire(codec, keys[is_rest])
    offsets = (np.arange(len(first), dtype=np.int64) * record.itemsize).astype(">i4")
    return offsets.tobytes(), headers.tobytes(), rest.tobytes()


def _length_prefixed(keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(all keys as ``i32 length + bytes`` back to back, start of each key's encoding + end)."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    value_offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[
        keys.offset : keys.offset + n + 1].astype(np.int64)
    data_buf = keys.buffers()[2]
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
            else np.zeros(0, dtype=np.uint8))[value_offsets[0] : value_offsets[-1]]
    lengths = np.diff(value_offsets)
    enc_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths + STRING_LENGTH_BYTES, out=enc_start[1:])
    out = np.empty(int(enc_start[-1]), dtype=np.uint8)
    prefix = lengths.astype(">i4").view(np.uint8).reshape(n, STRING_LENGTH_BYTES)
    out[enc_start[:-1, None] + np.arange(STRING_LENGTH_BYTES)] = prefix
    shift = np.repeat(enc_start[:-1] + STRING_LENGTH_BYTES - (value_offsets[:-1] - value_offsets[0]),
                      lengths)
    out[np.arange(data.size, dtype=np.int64) + shift] = data
    return out, enc_start


def _variable_chunks(keys: pa.Array, chunk_size: int) -> tuple[bytes, bytes, bytes]:
    n = len(keys)
    if n == 0:
        return b"", b"", b""
    encoded, enc_start = _length_prefixed(keys)
    max_keys = chunk_size // OFFSET_BYTES
    headers: list[bytes] = []
    bodies: list[bytes] = []
    chunk_offsets: list[int] = []
    chunk_at = keys_at = 0
    s = 0
    while s < n:
        # keys s+1 .. s+m join the chunk of s while their encodings fit in chunk_size
        if max_keys == 0 or s + 1 >= n:
            m = 0
        else:
            limit = enc_start[s + 1] + chunk_size
            fit = int(np.searchsorted(enc_start, limit, side="right")) - 1 - (s + 1)
            m = max(0, min(fit, max_keys, n - s - 1))
        key = encoded[enc_start[s] : enc_start[s + 1]].tobytes()
        rel = enc_start[s + 1 : s + 1 + m] - enc_start[s + 1]
        key_bytes = encoded[enc_start[s + 1] : enc_start[s + 1 + m]].tobytes()
        body = rel.astype(">i4").tobytes() + key_bytes
        header = (struct.pack(">b", CHUNK_VERSION) + key
                  + struct.pack(">iiiii", s, keys_at, m, OFFSET_BYTES * m, len(key_bytes)))
        chunk_offsets.append(chunk_at)
        headers.append(header)
        bodies.append(body)
        chunk_at += len(header)
        keys_at += len(body)
        s += 1 + m
    return (np.array(chunk_offsets, dtype=">i4").tobytes(), b"".join(headers), b"".join(bodies))


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------
@dataclass
class _Chunk:
    first: int | bytes  # comparable form of the first key
    code: int
    size: int
    keys_at: int  # absolute offset of the chunk's keys
    offsets_length: int
    keys_length: int
    ordered: np.ndarray | None = None  # fixed-width: comparable keys, loaded on demand
    key_offsets: np.ndarray | None = None  # variable: offsets of the keys, loaded on demand


class DictionaryReader:
    """Lazy reader of a dictionary occupying ``[start, end)`` of ``source``.

    The header is read on construction; chunk headers and keys when a lookup touches them.
    """

    def __init__(self, source: Source, start: int, end: int, codec: KeyCodec,
                 cardinality: int) -> None:
        r = ByteReader(source, start, end)
        at = r.pos
        header_len = r.i32("dictionary header length")
        if header_len != DICTIONARY_HEADER_BYTES:
            raise r.error(f"header length {header_len} != {DICTIONARY_HEADER_BYTES}",
                          "dictionary header length", at)
        at = r.pos
        version = r.u8("dictionary version")
        if version != DICTIONARY_VERSION:
            raise r.error(f"unsupported version {version} (supported: {DICTIONARY_VERSION})",
                          "dictionary version", at)
        at = r.pos
        n_chunks = r.i32("dictionary chunk count")
        if n_chunks < 0 or n_chunks > max(cardinality, 0):
            raise r.error(f"chunk count {n_chunks} outside [0, cardinality {cardinality}]",
                          "dictionary chunk count", at)
        if cardinality > 0 and n_chunks == 0:
            raise r.error(f"no chunks for {cardinality} keys", "dictionary chunk count", at)
        at = r.pos
        offsets_len = r.i32("dictionary offsets length")
        if offsets_len != OFFSET_BYTES * n_chunks:
            raise r.error(f"offsets length {offsets_len} != 4 x {n_chunks} chunks",
                          "dictionary offsets length", at)
        at = r.pos
        chunks_len = r.i32("dictionary chunks length")
        if chunks_len < 0:
            raise r.error(f"negative length {chunks_len}", "dictionary chunks length", at)
        self._offsets_at = r.pos
        r.skip(offsets_len, "dictionary offsets")
        self._chunks_at = r.pos
        r.skip(chunks_len, "dictionary chunks")
        self._keys_at = r.pos
        self._keys_len = r.remaining
        self._reader = r
        self._codec = codec
        self._cardinality = cardinality
        self._chunks_len = chunks_len
        self._chunk_starts: np.ndarray | None = None
        self._chunks: list[_Chunk | None] = [None] * n_chunks
        self.chunk_count = n_chunks

    def _starts(self) -> np.ndarray:
        if self._chunk_starts is None:
            r = self._reader
            r.seek(self._offsets_at)
            starts = np.frombuffer(r.read_bytes(OFFSET_BYTES * self.chunk_count,
                                                "dictionary offsets"), dtype=">i4").astype(np.int64)
            bounds = np.append(starts, self._chunks_len)
            if starts.size and (starts[0] != 0 or (np.diff(bounds) <= 0).any()):
                raise r.error("chunk offsets are not ascending from 0 inside the chunks region",
                              "dictionary offsets", self._offsets_at)
            self._chunk_starts = bounds
        return self._chunk_starts

    def _chunk(self, j: int) -> _Chunk:
        chunk = self._chunks[j]
        if chunk is not None:
            return chunk
        bounds = self._starts()
        codec = self._codec
        parent = self._reader
        h = ByteReader(parent.source, self._chunks_at + int(bounds[j]),
                       self._chunks_at + int(bounds[j + 1]))
        field = f"dictionary chunk {j}"
        at = h.pos
        version = h.u8(f"{field} version")
        if version != CHUNK_VERSION:
            raise h.error(f"unsupported version {version} (supported: {CHUNK_VERSION})", field, at)
        first = codec.order_raw(codec.read(h, f"{field} first key"))
        at = h.pos
        code = h.i32(f"{field} code")
        keys_offset = h.i32(f"{field} keys offset")
        size = h.i32(f"{field} size")
        if codec.variable:
            offsets_len = h.i32(f"{field} offsets length")
            keys_len = h.i32(f"{field} keys length")
            ok = offsets_len == OFFSET_BYTES * size
        else:
            offsets_len = 0
            keys_len = h.i32(f"{field} keys length")
            fixed = h.i32(f"{field} fixed length")
            ok = fixed == codec.width and keys_len == size * codec.width
        if not ok or size < 0 or keys_len < 0:
            raise h.error("inconsistent size / lengths", field, at)
        if code < 0 or code + size >= self._cardinality:
            raise h.error(f"codes [{code}, {code + size}] outside [0, {self._cardinality})",
                          field, at)
        if keys_offset < 0 or keys_offset + offsets_len + keys_len > self._keys_len:
            raise h.error(f"keys [{keys_offset}, {keys_offset + offsets_len + keys_len}) outside "
                          f"the {self._keys_len}-byte keys region", field, at)
        h.expect_end(field)
        chunk = _Chunk(first, code, size, self._keys_at + keys_offset, offsets_len, keys_len)
        self._chunks[j] = chunk
        return chunk

    def find(self, key: int | bytes) -> int:
        """The code of ``key``, or ``-(insertion point) - 1`` when absent (Java's convention)."""
        low, high = 0, self.chunk_count - 1
        while low <= high:
            mid = (low + high) >> 1
            first = self._chunk(mid).first
            if first < key:  # type: ignore[operator]
                low = mid + 1
            elif first > key:  # type: ignore[operator]
                high = mid - 1
            else:
                return self._chunk(mid).code
        if low == 0:
            return -1
        return self._find_in(low - 1, key)

    def key_at(self, code: int) -> int:
        """The comparable key of dictionary code ``code`` of a fixed-width dictionary (codes are the
        keys' ranks: chunk ``j`` holds its first key at ``chunk.code`` and the next ``size`` after)."""
        if self._codec.variable or not 0 <= code < self._cardinality:
            raise ValueError(f"code {code} outside [0, {self._cardinality}) of a fixed-width dictionary")
        low, high = 0, self.chunk_count - 1
        while low < high:  # the last chunk whose first code is <= code
            mid = (low + high + 1) >> 1
            if self._chunk(mid).code <= code:
                low = mid
            else:
                high = mid - 1
        chunk = self._chunk(low)
        if code == chunk.code:
            return int(chunk.first)
        return int(self._fixed_keys(low, chunk)[code - chunk.code - 1])

    def _find_in(self, j: int, key: int | bytes) -> int:
        chunk = self._chunk(j)
        base = chunk.code + 1
        if chunk.size == 0:
            return -(base + 1)
        if self._codec.variable:
            assert isinstance(key, bytes)
            found, pos = self._variable_search(j, chunk, key)
        else:
            ordered = self._fixed_keys(j, chunk)
            pos = int(np.searchsorted(ordered, key, side="left"))
            found = pos < chunk.size and int(ordered[pos]) == key
        return base + pos if found else -(base + pos + 1)

    def _fixed_keys(self, j: int, chunk: _Chunk) -> np.ndarray:
        if chunk.ordered is None:
            r = self._reader
            r.seek(chunk.keys_at)
            field = f"dictionary chunk {j} keys"
            raw = np.frombuffer(r.read_bytes(chunk.keys_length, field), dtype=self._codec.wire)
            ordered = self._codec.order_keys(raw)
            # neighbours compared directly: np.diff would overflow on int64 extremes
            if ordered.size and (ordered[0] <= chunk.first or (ordered[1:] <= ordered[:-1]).any()):
                raise r.error("keys are not ascending after the chunk's first key", field,
                              chunk.keys_at)
            chunk.ordered = ordered
        return chunk.ordered

    def _variable_search(self, j: int, chunk: _Chunk, key: bytes) -> tuple[bool, int]:
        """(found, index or insertion point) of ``key`` among the chunk's keys."""
        r = self._reader
        field = f"dictionary chunk {j}"
        if chunk.key_offsets is None:
            r.seek(chunk.keys_at)
            offs = np.frombuffer(r.read_bytes(chunk.offsets_length, f"{field} key offsets"),
                                 dtype=">i4").astype(np.int64)
            if (offs < 0).any() or (offs > chunk.keys_length - STRING_LENGTH_BYTES).any():
                raise r.error("key offsets outside the chunk's keys", f"{field} key offsets",
                              chunk.keys_at)
            chunk.key_offsets = offs
        offs = chunk.key_offsets
        keys = ByteReader(r.source, chunk.keys_at + chunk.offsets_length,
                          chunk.keys_at + chunk.offsets_length + chunk.keys_length)
        base = keys.start

        def key_at(i: int) -> bytes:
            keys.seek(base + int(offs[i]), f"{field} key {i}")
            return bytes(self._codec.read(keys, f"{field} key {i}"))

        low, high = 0, chunk.size - 1
        while low <= high:
            mid = (low + high) >> 1
            probe = key_at(mid)
            if probe < key:
                low = mid + 1
            elif probe > key:
                high = mid - 1
            else:
                return True, mid
        return False, low

