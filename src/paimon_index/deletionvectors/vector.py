"""Deletion vectors: the set of deleted row positions of one data file, framed as Paimon frames it.

Matches Java ``org.apache.paimon.deletionvectors.BitmapDeletionVector`` (32-bit, the default),
``Bitmap64DeletionVector`` (``deletion-vectors.bitmap64 = true``, Iceberg-compatible) and the
framing of ``DeletionVector.read`` / ``serializeTo``. Every frame is::

    size      4 bytes  int32 BE  signed   byte count of ``data`` (>= 4)
    data      size bytes                  magic + bitmap, below
    crc       4 bytes  int32 BE           CRC-32 (zlib polynomial) of ``data``, stored as Java's (int)

32-bit ``data`` (magic 1581511376 = 0x5E43F2D0)::

    magic     4 bytes  int32 BE           1581511376
    bitmap    rest                        portable 32-bit RoaringBitmap (format below), run-optimized
                                          first; every position <= 2^31 - 1

64-bit ``data`` (magic 1681511377 = 0x6439D3D1, written little-endian: bytes D1 D3 39 64)::

    magic     4 bytes  int32 LE           1681511377
    count     8 bytes  int64 LE  signed   number of 32-bit buckets that follow, 0 .. 2^31 - 1
    count x:
      key     4 bytes  int32 LE  signed   high 32 bits of the positions, 0 .. 2^31 - 2, strictly
                                          ascending (gaps allowed on read; Paimon writes every key
                                          below the highest, empty ones included)
      bitmap  variable                    portable 32-bit RoaringBitmap of the low 32 bits (unsigned),
                                          run-optimized first

Portable 32-bit RoaringBitmap (RoaringFormatSpec; all fields little-endian, unsigned)::

    cookie    4 bytes  u32 LE             12346 = no run containers: then ``n`` as u32 LE (<= 65536)
                                          (cookie & 0xFFFF) == 12347: ``n = (cookie >> 16) + 1``, then
                                          a run-flag bitset of ceil(n / 8) bytes
    n x       4 bytes  2 x u16 LE         container key (high 16 bits), cardinality - 1
    n x       4 bytes  u32 LE             container offsets: always for 12346, for 12347 when n >= 4
    n x       variable                    run: u16 run count r, then r x (u16 start, u16 length - 1);
                                          cardinality > 4096: 8192-byte bitset; else cardinality x u16

The manifest's ``length`` of a vector differs between the formats (``DeletionFile.length``):
32-bit records ``size`` (magic + bitmap, no size prefix, no CRC); 64-bit records the whole frame
(``size + 8``), as Iceberg's deletion-vector blob length does.

Checked on read: ``size`` fits in the bytes left; the magic is one of the two; ``size`` agrees with
the manifest ``length`` when one is given; the CRC (Java does *not* verify it); the portable bitmap
header walks to exactly the end of ``data`` (Java ignores trailing bytes there); the bitmap itself
is valid (CRoaring's validation: sorted keys and values, run bounds); 64-bit bucket count range, key
range and strict ascending order; 32-bit positions <= 2^31 - 1 (Java would read larger ones as
negative positions). Not checked: the container offsets inside the portable header (Java and
CRoaring do not use them either). Every failure is a :class:`~paimon_index.errors.CorruptFileError`.
"""

from __future__ import annotations

import abc
import array
import zlib
from collections.abc import Iterable, Iterator
from typing import ClassVar

import numpy as np
from pyroaring import BitMap

from paimon_index import bitmaps
from paimon_index.binary import ByteReader, ByteWriter
from paimon_index.errors import DeletionVectorTooLargeError

__all__ = [
    "BITMAP32_MAGIC",
    "BITMAP64_MAGIC",
    "MAX_BITMAP64_KEY",
    "MAX_POSITION_32",
    "MAX_POSITION_64",
    "Bitmap64DeletionVector",
    "BitmapDeletionVector",
    "DeletionVector",
    "DeletionVectorTooLargeError",
    "deserialize_deletion_vector",
    "new_deletion_vector",
    "read_deletion_vector",
    "sorted_contains",
    "vector_kind",
]

#: Java ``BitmapDeletionVector.MAGIC_NUMBER`` (written big-endian).
BITMAP32_MAGIC = 1581511376
#: Java ``Bitmap64DeletionVector.MAGIC_NUMBER`` (written little-endian).
BITMAP64_MAGIC = 1681511377
MAGIC_BYTES = 4
SIZE_PREFIX_BYTES = 4
CRC_BYTES = 4
#: Bytes a frame adds around its ``data``: the size prefix and the CRC.
FRAME_OVERHEAD_BYTES = SIZE_PREFIX_BYTES + CRC_BYTES
#: Java ``RoaringBitmap32.MAX_VALUE``: largest row position of a 32-bit vector.
MAX_POSITION_32 = 2**31 - 1
#: Largest 32-bit bucket key of a 64-bit vector (Java ``Integer.MAX_VALUE - 1``).
MAX_BITMAP64_KEY = 2**31 - 2
#: Java ``OptimizedRoaringBitmap64.MAX_VALUE = toPosition(Integer.MAX_VALUE - 1, Integer.MIN_VALUE)``.
MAX_POSITION_64 = (MAX_BITMAP64_KEY << 32) | 0x8000_0000
#: Largest bucket count a 64-bit bitmap may declare (Java reads it into an ``int``).
MAX_BITMAP64_COUNT = 2**31 - 1
BITMAP64_COUNT_BYTES = 8
BITMAP64_KEY_BYTES = 4
#: Java checks ``size prefix + data + CRC <= Integer.MAX_VALUE`` before serializing a 64-bit vector.
MAX_FRAME_BYTES = 2**31 - 1
LOW_32_MASK = 0xFFFF_FFFF

#: Smallest portable bitmap: the cookie and a container count of 0.
EMPTY_PORTABLE_BITMAP = BitMap().serialize()
#: Smallest 64-bit bucket: a key and an empty portable bitmap.
MIN_BITMAP64_BUCKET_BYTES = BITMAP64_KEY_BYTES + len(EMPTY_PORTABLE_BITMAP)

_MAGIC32_BE = BITMAP32_MAGIC.to_bytes(4, "big", signed=True)
_MAGIC64_AS_BE_INT = int.from_bytes(BITMAP64_MAGIC.to_bytes(4, "little"), "big", signed=True)


# -- positions in bulk ---------------------------------------------------------------------------
def _as_positions(positions: Iterable[int] | np.ndarray, max_position: int) -> np.ndarray:
    """Sorted int64 positions, checked against ``[0, max_position]``."""
    if isinstance(positions, range):
        positions = np.arange(positions.start, positions.stop, positions.step, dtype=np.int64)
    arr = np.asarray(positions if isinstance(positions, np.ndarray) else list(positions))
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"row positions must be integers, got dtype {arr.dtype}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi > max_position:
        bad = lo if lo < 0 else hi
        raise ValueError(f"row position {bad} outside [0, {max_position}]")
    return np.sort(arr.astype(np.int64, copy=False).ravel())


def _as_queries(positions: Iterable[int] | np.ndarray, max_position: int) -> np.ndarray:
    """Positions to look up, in their own order, checked against ``[0, max_position]``."""
    queries = np.asarray(positions if isinstance(positions, np.ndarray) else list(positions))
    if queries.size == 0:
        return np.empty(queries.shape, dtype=np.int64)
    if queries.dtype.kind not in "iu":
        raise TypeError(f"row positions must be integers, got dtype {queries.dtype}")
    _check_position(int(queries.min()), max_position)
    _check_position(int(queries.max()), max_position)
    return queries.astype(np.int64, copy=False)


def _check_position(position: int, max_position: int) -> int:
    position = int(position)
    if position < 0 or position > max_position:
        raise ValueError(f"row position {position} outside [0, {max_position}]")
    return position


def _uint32_array(values: np.ndarray) -> array.array:
    """An ``array('I')``: pyroaring's fast bulk-insert path (NumPy input goes element-wise)."""
    out = array.array("I")
    out.frombytes(np.ascontiguousarray(values, dtype=np.uint32).tobytes())
    return out


def _bitmap_of(values: np.ndarray) -> BitMap:
    """A 32-bit bitmap of sorted uint32-range values (sorted input is ~10x faster to insert)."""
    return BitMap(_uint32_array(values))


def _bitmap_values(bitmap: BitMap) -> np.ndarray:
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32)


#: A dense lookup table is used when the queried range is at most this many times the query count
#: (plus a floor): then building it costs no more than looking the queries up.
DENSE_LOOKUP_FACTOR = 8
DENSE_LOOKUP_MIN = 1 << 16


def _contains_mask(bitmap: BitMap, queries: np.ndarray) -> np.ndarray:
    """``[q in bitmap for q in queries]`` without a Python loop (:func:`sorted_contains`)."""
    return sorted_contains(_bitmap_values(bitmap), queries)


def sorted_contains(values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``[q in values for q in queries]`` for ascending ``values`` (a vector's positions), without a
    Python loop.

    Queries spanning a bounded range (e.g. every row of a file) use a dense lookup table over that
    range, linear in its size; sparse queries over a wide range use a binary search per query.
    """
    if queries.size == 0:
        return np.zeros(queries.shape, dtype=bool)
    lo, hi = int(queries.min()), int(queries.max())
    if hi - lo + 1 <= DENSE_LOOKUP_FACTOR * queries.size + DENSE_LOOKUP_MIN:
        inside = values[np.searchsorted(values, lo) : np.searchsorted(values, hi, side="right")]
        table = np.zeros(hi - lo + 1, dtype=bool)
        table[inside.astype(np.int64) - lo] = True
        return table[queries - lo]
    idx = np.searchsorted(values, queries)
    found = idx < values.size
    found[found] = values[idx[found]] == queries[found]
    return found


def _frame(data: bytes) -> bytes:
    out = ByteWriter()
    out.i32(len(data))
    out.write(data)
    out.write((zlib.crc32(data) & LOW_32_MASK).to_bytes(CRC_BYTES, "big"))
    return out.getvalue()


# -- the vectors ---------------------------------------------------------------------------------
class DeletionVector(abc.ABC):
    """Deleted row positions of one data file (Java ``DeletionVector``).

    Method names follow pypaimon's ``DeletionVector`` (``delete``, ``is_deleted``,
    ``get_cardinality``...), so a vector can be handed to pypaimon's readers as is.
    """

    __slots__ = ()

    #: Largest position this kind of vector stores.
    MAX_POSITION: ClassVar[int]
    #: Whether the manifest ``length`` covers the whole frame (64-bit) or only ``data`` (32-bit).
    LENGTH_COVERS_FRAME: ClassVar[bool]

    @abc.abstractmethod
    def delete(self, position: int) -> None:
        """Mark one row position as deleted."""

    @abc.abstractmethod
    def delete_many(self, positions: Iterable[int] | np.ndarray) -> int:
        """Mark many positions as deleted in bulk; returns how many were not deleted before."""

    @abc.abstractmethod
    def is_deleted(self, position: int) -> bool:
        """Whether one row position is deleted."""

    @abc.abstractmethod
    def is_deleted_many(self, positions: Iterable[int] | np.ndarray) -> np.ndarray:
        """A boolean mask: which of ``positions`` are deleted."""

    @abc.abstractmethod
    def get_cardinality(self) -> int:
        """Number of deleted positions."""

    @abc.abstractmethod
    def positions(self) -> np.ndarray:
        """All deleted positions, ascending, as int64."""

    @abc.abstractmethod
    def merge(self, other: DeletionVector) -> None:
        """Add every position of ``other`` (same kind only, as in Java)."""

    @abc.abstractmethod
    def serialize_data(self) -> bytes:
        """The frame's ``data``: magic + run-optimized bitmap."""

    @abc.abstractmethod
    def copy(self) -> DeletionVector:
        """An independent copy."""

    def checked_delete(self, position: int) -> bool:
        """Delete ``position``; ``True`` if it was not deleted before."""
        if self.is_deleted(position):
            return False
        self.delete(position)
        return True

    def is_empty(self) -> bool:
        return self.get_cardinality() == 0

    @property
    def cardinality(self) -> int:
        return self.get_cardinality()

    def serialize(self) -> bytes:
        """The whole frame: size prefix, data, CRC (Java ``serializeTo``)."""
        return _frame(self.serialize_data())

    @classmethod
    def recorded_length(cls, frame_bytes: int) -> int:
        """The manifest ``length`` Paimon records for a frame of ``frame_bytes`` bytes."""
        return frame_bytes if cls.LENGTH_COVERS_FRAME else frame_bytes - FRAME_OVERHEAD_BYTES

    @classmethod
    def frame_bytes(cls, recorded_length: int) -> int:
        """Inverse of :meth:`recorded_length`."""
        return recorded_length if cls.LENGTH_COVERS_FRAME else recorded_length + FRAME_OVERHEAD_BYTES

    def __len__(self) -> int:
        return self.get_cardinality()

    def __contains__(self, position: object) -> bool:
        return bool(isinstance(position, int | np.integer) and 0 <= position <= self.MAX_POSITION
                    and self.is_deleted(int(position)))

    def __iter__(self) -> Iterator[int]:
        return iter(self.positions().tolist())

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cardinality={self.get_cardinality()})"


class BitmapDeletionVector(DeletionVector):
    """32-bit deletion vector (Java ``BitmapDeletionVector``): positions 0 .. 2^31 - 1."""

    MAX_POSITION = MAX_POSITION_32
    LENGTH_COVERS_FRAME = False

    __slots__ = ("bitmap",)

    def __init__(self, positions: Iterable[int] | np.ndarray | None = None) -> None:
        self.bitmap = BitMap()
        if positions is not None:
            self.delete_many(positions)

    @classmethod
    def from_bitmap(cls, bitmap: BitMap) -> BitmapDeletionVector:
        """Wrap ``bitmap`` (not copied); its values must be <= 2^31 - 1."""
        if bitmap and bitmap.max() > MAX_POSITION_32:
            raise ValueError(f"row position {bitmap.max()} outside [0, {MAX_POSITION_32}]")
        vector = cls()
        vector.bitmap = bitmap
        return vector

    def delete(self, position: int) -> None:
        self.bitmap.add(_check_position(position, MAX_POSITION_32))

    def delete_many(self, positions: Iterable[int] | np.ndarray) -> int:
        values = _as_positions(positions, MAX_POSITION_32)
        before = len(self.bitmap)
        self.bitmap.update(_uint32_array(values))
        return len(self.bitmap) - before

    def is_deleted(self, position: int) -> bool:
        return _check_position(position, MAX_POSITION_32) in self.bitmap

    def is_deleted_many(self, positions: Iterable[int] | np.ndarray) -> np.ndarray:
        queries = _as_queries(positions, MAX_POSITION_32)
        if queries.size == 0:
            return np.zeros(queries.shape, dtype=bool)
        return _contains_mask(self.bitmap, queries)

    def get_cardinality(self) -> int:
        return len(self.bitmap)

    def positions(self) -> np.ndarray:
        return _bitmap_values(self.bitmap).astype(np.int64)

    def merge(self, other: DeletionVector) -> None:
        if not isinstance(other, BitmapDeletionVector):
            raise TypeError("only a BitmapDeletionVector can be merged into one, "
                            f"got {type(other).__name__}")
        self.bitmap |= other.bitmap

    def serialize_data(self) -> bytes:
        # Paimon's RoaringBitmap32.serialize runs runOptimize() first; the bytes depend on it.
        self.bitmap.run_optimize()
        return _MAGIC32_BE + self.bitmap.serialize()

    def copy(self) -> BitmapDeletionVector:
        return BitmapDeletionVector.from_bitmap(self.bitmap.copy())

    def to_bitmap64(self) -> Bitmap64DeletionVector:
        """The same positions as a 64-bit vector (Java ``Bitmap64DeletionVector.fromBitmapDeletionVector``).

        Like Java, the result always holds exactly one bucket (key 0), even when empty, so an empty
        converted vector serializes one empty bucket where a new empty 64-bit vector has none.
        """
        return Bitmap64DeletionVector._from_buckets({0: self.bitmap.copy()}, bucket_count=1)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BitmapDeletionVector) and self.bitmap == other.bitmap


class Bitmap64DeletionVector(DeletionVector):
    """64-bit deletion vector (Java ``Bitmap64DeletionVector`` / ``OptimizedRoaringBitmap64``).

    Positions are split into 32-bit buckets by their high 32 bits. Like Java's bitmap array, the
    vector remembers how many buckets it has allocated (``bucket_count``: one past the highest
    key ever added, read or merged); all of them are written, empty ones included. Empty buckets
    are not kept in memory, so a hostile sparse bucket count costs nothing until written.
    """

    MAX_POSITION = MAX_POSITION_64
    LENGTH_COVERS_FRAME = True

    __slots__ = ("_bucket_count", "_buckets")

    def __init__(self, positions: Iterable[int] | np.ndarray | None = None) -> None:
        self._buckets: dict[int, BitMap] = {}
        self._bucket_count = 0
        if positions is not None:
            self.delete_many(positions)

    @classmethod
    def _from_buckets(cls, buckets: dict[int, BitMap], bucket_count: int) -> Bitmap64DeletionVector:
        vector = cls()
        vector._buckets = {key: bm for key, bm in buckets.items() if bm}
        vector._bucket_count = bucket_count
        return vector

    @classmethod
    def from_bitmap32(cls, vector: BitmapDeletionVector) -> Bitmap64DeletionVector:
        """Java ``fromBitmapDeletionVector``; see :meth:`BitmapDeletionVector.to_bitmap64`."""
        return vector.to_bitmap64()

    @property
    def bucket_count(self) -> int:
        """Buckets written on serialization: the 8-byte count of the 64-bit layout."""
        return self._bucket_count

    def _bucket_for_update(self, key: int) -> BitMap:
        self._bucket_count = max(self._bucket_count, key + 1)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = BitMap()
        return bucket

    def delete(self, position: int) -> None:
        position = _check_position(position, MAX_POSITION_64)
        self._bucket_for_update(position >> 32).add(position & LOW_32_MASK)

    def delete_many(self, positions: Iterable[int] | np.ndarray) -> int:
        values = _as_positions(positions, MAX_POSITION_64)
        if values.size == 0:
            return 0
        keys = values >> 32
        bounds = np.flatnonzero(np.diff(keys)) + 1
        added = 0
        for start, stop in zip(np.r_[0, bounds], np.r_[bounds, values.size], strict=True):
            bucket = self._bucket_for_update(int(keys[start]))
            before = len(bucket)
            bucket.update(_uint32_array(values[start:stop] & LOW_32_MASK))
            added += len(bucket) - before
        return added

    def is_deleted(self, position: int) -> bool:
        position = _check_position(position, MAX_POSITION_64)
        bucket = self._buckets.get(position >> 32)
        return bucket is not None and (position & LOW_32_MASK) in bucket

    def is_deleted_many(self, positions: Iterable[int] | np.ndarray) -> np.ndarray:
        queries = _as_queries(positions, MAX_POSITION_64)
        mask = np.zeros(queries.shape, dtype=bool)
        if queries.size == 0:
            return mask
        keys = queries >> 32
        first, last = int(keys.min()), int(keys.max())
        for key, bucket in self._buckets.items():
            if not bucket or not first <= key <= last:
                continue
            if first == last:  # the usual case: every query in one 2^32 bucket, no selection needed
                return _contains_mask(bucket, queries & LOW_32_MASK)
            selected = keys == key
            mask[selected] = _contains_mask(bucket, queries[selected] & LOW_32_MASK)
        return mask

    def get_cardinality(self) -> int:
        return sum(len(bucket) for bucket in self._buckets.values())

    def positions(self) -> np.ndarray:
        parts = [(_bitmap_values(self._buckets[key]).astype(np.int64) | (key << 32))
                 for key in sorted(self._buckets)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def merge(self, other: DeletionVector) -> None:
        if not isinstance(other, Bitmap64DeletionVector):
            raise TypeError("only a Bitmap64DeletionVector can be merged into one, "
                            f"got {type(other).__name__}")
        for key, bucket in other._buckets.items():
            self._bucket_for_update(key).__ior__(bucket)
        self._bucket_count = max(self._bucket_count, other._bucket_count)

    def serialize_data(self) -> bytes:
        serialized = {}
        for key, bucket in self._buckets.items():
            bucket.run_optimize()  # Java's runLengthEncode() before serializing
            serialized[key] = bucket.serialize()
        empty = (self._bucket_count - len(serialized)) * len(EMPTY_PORTABLE_BITMAP)
        data_size = (MAGIC_BYTES + BITMAP64_COUNT_BYTES + self._bucket_count * BITMAP64_KEY_BYTES
                     + sum(map(len, serialized.values())) + empty)
        if FRAME_OVERHEAD_BYTES + data_size > MAX_FRAME_BYTES:
            raise DeletionVectorTooLargeError(
                f"a 64-bit deletion vector of {self._bucket_count} buckets needs "
                f"{FRAME_OVERHEAD_BYTES + data_size} bytes; Paimon cannot store one over 2 GiB")
        out = ByteWriter()
        out.i32_le(BITMAP64_MAGIC)
        out.i64_le(self._bucket_count)
        for key in range(self._bucket_count):
            out.i32_le(key)
            out.write(serialized.get(key, EMPTY_PORTABLE_BITMAP))
        return out.getvalue()

    def copy(self) -> Bitmap64DeletionVector:
        return Bitmap64DeletionVector._from_buckets(
            {key: bucket.copy() for key, bucket in self._buckets.items()}, self._bucket_count)

    def __eq__(self, other: object) -> bool:
        # Java compares the bitmap arrays, so the allocated bucket count matters too.
        return (isinstance(other, Bitmap64DeletionVector) and self._bucket_count == other._bucket_count
                and self._buckets == other._buckets)


def new_deletion_vector(bitmap64: bool = False) -> DeletionVector:
    """An empty vector of the kind ``deletion-vectors.bitmap64`` selects."""
    return Bitmap64DeletionVector() if bitmap64 else BitmapDeletionVector()


# -- reading -------------------------------------------------------------------------------------
def _read_portable_bitmap(reader: ByteReader, field: str) -> BitMap:
    start, end = bitmaps.portable_span(reader, field)
    reader.seek(start, field)
    raw = reader.read_view(end - start, field)
    return bitmaps.deserialize(raw, path=reader.source.name, offset=start, field=field)


def _read_bitmap32(body: ByteReader) -> BitmapDeletionVector:
    start = body.pos
    bitmap = _read_portable_bitmap(body, "bitmap")
    body.expect_end("bitmap")
    if bitmap and bitmap.max() > MAX_POSITION_32:
        raise body.error(f"position {bitmap.max()} exceeds {MAX_POSITION_32}", "bitmap", start)
    return BitmapDeletionVector.from_bitmap(bitmap)


def _read_bitmap64(body: ByteReader) -> Bitmap64DeletionVector:
    count_at = body.pos
    count = body.i64_le("bitmap64 bucket count")
    if count < 0 or count > MAX_BITMAP64_COUNT:
        raise body.error(f"invalid bucket count {count}", "bitmap64 bucket count", count_at)
    if count * MIN_BITMAP64_BUCKET_BYTES > body.remaining:
        raise body.error(f"{count} buckets need at least {count * MIN_BITMAP64_BUCKET_BYTES} bytes, "
                         f"only {body.remaining} remain", "bitmap64 bucket count", count_at)
    buckets: dict[int, BitMap] = {}
    last_key = -1
    for _ in range(count):
        key_at = body.pos
        key = body.i32_le("bitmap64 bucket key")
        if key < 0 or key > MAX_BITMAP64_KEY:
            raise body.error(f"key {key} outside [0, {MAX_BITMAP64_KEY}]", "bitmap64 bucket key", key_at)
        if key <= last_key:
            raise body.error(f"key {key} after key {last_key}: keys must be strictly ascending",
                             "bitmap64 bucket key", key_at)
        buckets[key] = _read_portable_bitmap(body, f"bitmap64 bucket {key}")
        last_key = key
    body.expect_end("bitmap64")
    return Bitmap64DeletionVector._from_buckets(buckets, last_key + 1)


def vector_kind(magic: int) -> type[DeletionVector] | None:
    """The vector class a frame's magic (read as a big-endian int32) announces, if any."""
    if magic == BITMAP32_MAGIC:
        return BitmapDeletionVector
    if magic == _MAGIC64_AS_BE_INT:
        return Bitmap64DeletionVector
    return None


def read_deletion_vector(reader: ByteReader, length: int | None = None) -> DeletionVector:
    """Read one frame at ``reader.pos`` (advancing past it).

    ``length`` is the manifest's recorded length (``DeletionFile.length``), checked when given.
    """
    size_at = reader.pos
    size = reader.i32("deletion vector size")
    if size < MAGIC_BYTES:
        raise reader.error(f"size {size} cannot hold the {MAGIC_BYTES}-byte magic",
                           "deletion vector size", size_at)
    body = reader.sub(size, "deletion vector data")
    magic = body.i32("deletion vector magic")
    kind = vector_kind(magic)
    if kind is None:
        raise body.error(f"invalid magic {magic}: neither {BITMAP32_MAGIC} (32-bit, big-endian) nor "
                         f"{BITMAP64_MAGIC} (64-bit, little-endian)", "deletion vector magic", body.start)
    if length is not None and kind.frame_bytes(length) != size + FRAME_OVERHEAD_BYTES:
        raise reader.error(f"size {size} does not match the recorded length {length} "
                           f"(expected size {kind.frame_bytes(length) - FRAME_OVERHEAD_BYTES})",
                           "deletion vector size", size_at)
    crc_at = reader.pos
    stored_crc = reader.i32("deletion vector CRC") & LOW_32_MASK
    body.seek(body.start)
    computed_crc = zlib.crc32(body.read_view(size, "deletion vector data"))
    if computed_crc != stored_crc:
        raise reader.error(f"CRC32 mismatch: stored 0x{stored_crc:08x}, computed 0x{computed_crc:08x}",
                           "deletion vector CRC", crc_at)
    body.seek(body.start + MAGIC_BYTES)
    return _read_bitmap32(body) if kind is BitmapDeletionVector else _read_bitmap64(body)


def deserialize_deletion_vector(data: bytes | bytearray | memoryview, length: int | None = None,
                                *, name: str = "<bytes>") -> DeletionVector:
    """Read a whole frame from ``data`` (which must hold exactly one frame)."""
    reader = ByteReader.of(data, name)
    vector = read_deletion_vector(reader, length)
    reader.expect_end("after deletion vector")
    return vector
