"""Deletion vectors: Java's golden frames both ways, a set model, round trips and corrupt frames."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from pyroaring import BitMap

from paimon_index.binary import ByteReader
from paimon_index.deletionvectors.vector import (
    BITMAP32_MAGIC,
    BITMAP64_MAGIC,
    MAX_BITMAP64_KEY,
    MAX_POSITION_32,
    MAX_POSITION_64,
    Bitmap64DeletionVector,
    BitmapDeletionVector,
    DeletionVector,
    deserialize_deletion_vector,
    new_deletion_vector,
    read_deletion_vector,
)
from paimon_index.errors import CorruptFileError, DeletionVectorTooLargeError

GOLDEN_DV = Path(__file__).resolve().parents[2].parent / "shared" / "golden" / "dv"
KINDS = {"dv32": BitmapDeletionVector, "dv64": Bitmap64DeletionVector}
CORRUPTION_ERRORS = (struct.error, IndexError, ValueError, MemoryError, OverflowError, TypeError, KeyError)


# -- golden helpers ------------------------------------------------------------------------------
def golden_dv() -> Path:
    if not GOLDEN_DV.is_dir():
        pytest.skip(f"golden files not found at {GOLDEN_DV}")
    return GOLDEN_DV


def parse_positions(text: str) -> list[int]:
    out: list[int] = []
    for token in filter(None, text.split(",")):
        if token == "-":
            continue
        lo, sep, hi = token.partition("-")
        out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    return out


def golden_spec(kind: str) -> dict[str, list[int]]:
    lines = (golden_dv() / f"{kind}.spec.txt").read_text().splitlines()
    return {name: parse_positions(pos) for name, _, pos in (line.partition(":") for line in lines if line)}


def golden_manifest(kind: str) -> dict[str, tuple[int, int, int]]:
    rows = (golden_dv() / f"{kind}.manifest.tsv").read_text().splitlines()
    return {name: (int(o), int(n), int(c)) for name, o, n, c in (r.split() for r in rows if r)}


def golden_frames(kind: str) -> dict[str, bytes]:
    """Each data file's whole frame, cut from Java's index file at its manifest range."""
    data = (golden_dv() / f"{kind}.bin").read_bytes()
    cls = KINDS[kind]
    return {name: data[offset:offset + cls.frame_bytes(length)]
            for name, (offset, length, _) in golden_manifest(kind).items()}


def frame(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def bitmap64_data(buckets: list[tuple[int, bytes]], count: int | None = None) -> bytes:
    body = struct.pack("<iq", BITMAP64_MAGIC, len(buckets) if count is None else count)
    return body + b"".join(struct.pack("<i", key) + bitmap for key, bitmap in buckets)


# -- golden: Java's bytes ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_writer_reproduces_java_frames(kind: str) -> None:
    frames = golden_frames(kind)
    for name, positions in golden_spec(kind).items():
        vector = KINDS[kind](np.array(positions, dtype=np.int64))
        assert vector.serialize() == frames[name], name


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_reader_gives_java_positions(kind: str) -> None:
    frames = golden_frames(kind)
    manifest = golden_manifest(kind)
    for line in (golden_dv() / f"{kind}.expected.tsv").read_text().splitlines():
        name, _, length, cardinality, positions = line.split("\t")
        vector = deserialize_deletion_vector(frames[name], int(length), name=name)
        assert type(vector) is KINDS[kind]
        assert vector.get_cardinality() == int(cardinality) == manifest[name][2]
        assert vector.positions().tolist() == parse_positions(positions)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_recorded_length_semantics(kind: str) -> None:
    """32-bit: magic + bitmap (frame - 8); 64-bit: the whole frame, as the golden manifest shows."""
    frames = golden_frames(kind)
    for name, (_, length, _) in golden_manifest(kind).items():
        size = struct.unpack(">i", frames[name][:4])[0]
        assert len(frames[name]) == size + 8
        expected = size if kind == "dv32" else size + 8
        assert length == expected == KINDS[kind].recorded_length(len(frames[name]))


def test_64bit_golden_writes_every_key_below_the_highest() -> None:
    frames = golden_frames("dv64")
    # data-g holds 4294967295, 2^32, 2^32 + 1 and 8589934597 = 2 * 2^32 + 5: keys 0, 1, 2.
    data = frames["data-g.parquet"][4:-4]
    assert data[:4] == BITMAP64_MAGIC.to_bytes(4, "little")
    assert struct.unpack("<q", data[4:12])[0] == 3
    # data-h holds only key 3: keys 0, 1, 2 are written empty.
    vector = deserialize_deletion_vector(frames["data-h.parquet"])
    assert isinstance(vector, Bitmap64DeletionVector) and vector.bucket_count == 4
    assert struct.unpack("<q", frames["data-h.parquet"][8:16])[0] == 4


# -- behaviour -----------------------------------------------------------------------------------
def test_32bit_position_limits() -> None:
    vector = BitmapDeletionVector()
    vector.delete(MAX_POSITION_32)
    with pytest.raises(ValueError, match="row position 2147483648 outside"):
        vector.delete(MAX_POSITION_32 + 1)
    with pytest.raises(ValueError, match="row position -1 outside"):
        vector.delete_many([3, -1])
    with pytest.raises(ValueError, match="outside"):
        vector.is_deleted(2**31)
    with pytest.raises(TypeError, match="integers"):
        vector.delete_many(np.array([1.5]))
    assert vector.positions().tolist() == [MAX_POSITION_32]


def test_64bit_position_limits_match_java_max_value() -> None:
    assert MAX_POSITION_64 == 0x7FFFFFFE_80000000
    vector = Bitmap64DeletionVector([MAX_POSITION_64])
    assert vector.bucket_count == MAX_BITMAP64_KEY + 1
    with pytest.raises(ValueError, match="outside"):
        vector.delete(MAX_POSITION_64 + 1)
    with pytest.raises(ValueError, match="outside"):
        vector.delete(-1)
    # 2^31 - 1 buckets of at least 12 bytes each: more than Java's 2 GB limit.
    with pytest.raises(DeletionVectorTooLargeError, match="over 2 GiB"):
        vector.serialize()


def test_checked_delete_merge_and_views() -> None:
    a = BitmapDeletionVector([1, 5])
    assert a.checked_delete(7) is True
    assert a.checked_delete(7) is False
    b = BitmapDeletionVector(range(5, 10))
    a.merge(b)
    assert list(a) == [1, 5, 6, 7, 8, 9] and len(a) == 6 == a.cardinality
    assert 6 in a and 2 not in a and -1 not in a and "x" not in a
    assert a.is_deleted_many(np.array([9, 2, 1, 10])).tolist() == [True, False, True, False]
    with pytest.raises(TypeError, match="only a BitmapDeletionVector"):
        a.merge(Bitmap64DeletionVector([1]))
    with pytest.raises(TypeError, match="only a Bitmap64DeletionVector"):
        Bitmap64DeletionVector([1]).merge(a)
    copy = a.copy()
    copy.delete(100)
    assert copy != a and 100 not in a
    assert a.delete_many([]) == 0 and a.delete_many([1, 2]) == 1
    assert isinstance(new_deletion_vector(), BitmapDeletionVector)
    assert isinstance(new_deletion_vector(bitmap64=True), Bitmap64DeletionVector)


def test_64bit_dense_bucket_array_and_sparse_read() -> None:
    vector = Bitmap64DeletionVector([1, 2 * 2**32 + 7])
    assert vector.bucket_count == 3
    data = vector.serialize()[4:-4]
    empty = BitMap().serialize()
    assert data == bitmap64_data([(0, BitMap([1]).serialize()), (1, empty), (2, BitMap([7]).serialize())])
    # Another writer may leave gaps: keys 0 and 2 only. Java fills the gap and writes it back.
    sparse = frame(bitmap64_data([(0, BitMap([1]).serialize()), (2, BitMap([7]).serialize())]))
    read = deserialize_deletion_vector(sparse)
    assert read == vector and read.serialize() == vector.serialize()
    # Trailing empty buckets are kept (Java keeps the array length it read).
    trailing = frame(bitmap64_data([(0, BitMap([1]).serialize()), (4, empty)]))
    assert deserialize_deletion_vector(trailing).bucket_count == 5


def test_32_to_64_conversion_keeps_one_bucket() -> None:
    vector = BitmapDeletionVector([0, 3, MAX_POSITION_32])
    wide = vector.to_bitmap64()
    assert wide.positions().tolist() == [0, 3, MAX_POSITION_32] and wide.bucket_count == 1
    assert Bitmap64DeletionVector.from_bitmap32(vector) == wide
    empty = BitmapDeletionVector().to_bitmap64()
    assert empty.bucket_count == 1 and empty != Bitmap64DeletionVector()
    assert struct.unpack("<q", empty.serialize()[8:16])[0] == 1
    wide.delete(2**32)
    assert 2**32 not in vector


# -- property tests ------------------------------------------------------------------------------
positions_32 = st.integers(0, MAX_POSITION_32)
positions_64 = st.one_of(st.integers(0, 2**34), st.integers(0, 3).map(lambda k: k * 2**32 + 2**32 - 1),
                         st.integers(0, 2**40))


@settings(max_examples=150, deadline=None)
@given(st.lists(positions_32, max_size=300), st.booleans())
def test_32bit_round_trip(positions: list[int], dense: bool) -> None:
    if dense and positions:
        positions = list(range(positions[0] % 100_000, positions[0] % 100_000 + 5000)) + positions
    vector = BitmapDeletionVector(positions)
    framed = vector.serialize()
    back = deserialize_deletion_vector(framed, vector.recorded_length(len(framed)))
    assert back == vector and back.positions().tolist() == sorted(set(positions))


@settings(max_examples=150, deadline=None)
@given(st.lists(positions_64, max_size=300))
def test_64bit_round_trip(positions: list[int]) -> None:
    vector = Bitmap64DeletionVector(np.array(positions, dtype=np.int64))
    framed = vector.serialize()
    assert vector.recorded_length(len(framed)) == len(framed)
    back = deserialize_deletion_vector(framed, len(framed))
    assert back == vector and back.positions().tolist() == sorted(set(positions))
    assert back.bucket_count == (max(positions) >> 32) + 1 if positions else back.bucket_count == 0


class VectorModel(RuleBasedStateMachine):
    """Random operations on a 32-bit and a 64-bit vector against a Python set."""

    def __init__(self) -> None:
        super().__init__()
        self.model32: set[int] = set()
        self.model64: set[int] = set()
        self.v32: DeletionVector = BitmapDeletionVector()
        self.v64: DeletionVector = Bitmap64DeletionVector()

    @rule(position=positions_32)
    def delete32(self, position: int) -> None:
        assert self.v32.checked_delete(position) == (position not in self.model32)
        self.model32.add(position)

    @rule(position=positions_64)
    def delete64(self, position: int) -> None:
        self.v64.delete(position)
        self.model64.add(position)

    @rule(positions=st.lists(positions_32, max_size=50))
    def delete_many32(self, positions: list[int]) -> None:
        assert self.v32.delete_many(np.array(positions, dtype=np.int64)) == len(set(positions) - self.model32)
        self.model32.update(positions)

    @rule(positions=st.lists(positions_64, max_size=50))
    def delete_many64(self, positions: list[int]) -> None:
        assert self.v64.delete_many(positions) == len(set(positions) - self.model64)
        self.model64.update(positions)

    @rule(positions=st.lists(positions_32, max_size=30))
    def merge32(self, positions: list[int]) -> None:
        self.v32.merge(BitmapDeletionVector(positions))
        self.model32.update(positions)

    @rule(positions=st.lists(positions_64, max_size=30))
    def merge64(self, positions: list[int]) -> None:
        self.v64.merge(Bitmap64DeletionVector(positions))
        self.model64.update(positions)

    @rule(queries=st.lists(positions_64, max_size=30))
    def lookups(self, queries: list[int]) -> None:
        assert self.v64.is_deleted_many(queries).tolist() == [q in self.model64 for q in queries]
        small = [q for q in queries if q <= MAX_POSITION_32]
        assert self.v32.is_deleted_many(small).tolist() == [q in self.model32 for q in small]
        for q in small:
            assert self.v32.is_deleted(q) == (q in self.model32)

    @rule()
    def round_trip(self) -> None:
        self.v32 = deserialize_deletion_vector(self.v32.serialize())
        self.v64 = deserialize_deletion_vector(self.v64.serialize())

    @rule()
    def widen(self) -> None:
        wide = self.v32.to_bitmap64()  # type: ignore[attr-defined]
        assert wide.positions().tolist() == sorted(self.model32)

    @invariant()
    def agrees_with_model(self) -> None:
        assert self.v32.get_cardinality() == len(self.model32)
        assert self.v64.get_cardinality() == len(self.model64)
        assert self.v32.positions().tolist() == sorted(self.model32)
        assert self.v64.positions().tolist() == sorted(self.model64)
        assert self.v32.is_empty() == (not self.model32)


TestVectorModel = VectorModel.TestCase
TestVectorModel.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)


# -- corrupt frames ------------------------------------------------------------------------------
def _read_all(data: bytes, length: int | None = None) -> None:
    try:
        vector = deserialize_deletion_vector(data, length, name="mutated")
        vector.positions()
    except CorruptFileError:
        pass


def _mutants(data: bytes, stride: int) -> list[bytes]:
    out = [data[:n] for n in range(0, len(data), max(1, stride // 4))]
    for i in range(0, len(data), stride):
        for mask in (0xFF, 1 << (i % 8)):
            flipped = bytearray(data)
            flipped[i] ^= mask
            out.append(bytes(flipped))
    return out


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_truncation_and_flip_raises_corrupt_file_error_only(kind: str) -> None:
    for name, framed in golden_frames(kind).items():
        length = golden_manifest(kind)[name][1]
        stride = 1 if len(framed) <= 200 else 7
        for mutant in _mutants(framed, stride):
            try:
                _read_all(mutant, length)
                _read_all(mutant)
            except CORRUPTION_ERRORS as e:  # pragma: no cover - the failure being tested for
                pytest.fail(f"{name}: {type(e).__name__}: {e}")
        for n in range(len(framed)):
            with pytest.raises(CorruptFileError):
                deserialize_deletion_vector(framed[:n], length)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_single_byte_flip_is_detected(kind: str) -> None:
    """CRC, magic and length checks leave no byte of a frame unprotected."""
    for name, framed in golden_frames(kind).items():
        if len(framed) > 200:
            continue
        length = golden_manifest(kind)[name][1]
        for i in range(len(framed)):
            flipped = bytearray(framed)
            flipped[i] ^= 0x5A
            with pytest.raises(CorruptFileError):
                deserialize_deletion_vector(bytes(flipped), length)


def test_crc_mismatch_is_reported() -> None:
    framed = bytearray(BitmapDeletionVector([1, 2, 3]).serialize())
    framed[-5] ^= 0x01  # last bitmap byte
    with pytest.raises(CorruptFileError, match=r"<bytes>@\d+: deletion vector CRC: CRC32 mismatch"):
        deserialize_deletion_vector(bytes(framed))
    framed = bytearray(Bitmap64DeletionVector([2**40]).serialize())
    framed[-1] ^= 0x80  # the CRC itself
    with pytest.raises(CorruptFileError, match="CRC32 mismatch: stored 0x"):
        deserialize_deletion_vector(bytes(framed))


def test_magic_and_length_errors() -> None:
    bad_magic = frame(struct.pack(">i", 12345) + BitMap([1]).serialize())
    with pytest.raises(CorruptFileError, match="deletion vector magic: invalid magic 12345"):
        deserialize_deletion_vector(bad_magic)
    # 64-bit magic written big-endian is not accepted.
    swapped = frame(struct.pack(">iq", BITMAP64_MAGIC, 0))
    with pytest.raises(CorruptFileError, match="invalid magic"):
        deserialize_deletion_vector(swapped)
    framed32 = BitmapDeletionVector([1]).serialize()
    with pytest.raises(CorruptFileError, match=r"@0: deletion vector size: size 22 does not match the "
                                               r"recorded length 30 \(expected size 30\)"):
        deserialize_deletion_vector(framed32, 30)
    framed64 = Bitmap64DeletionVector([1]).serialize()
    with pytest.raises(CorruptFileError, match="size 34 does not match the recorded length 34 "
                                               r"\(expected size 26\)"):
        deserialize_deletion_vector(framed64, 34)
    with pytest.raises(CorruptFileError, match="size 2 cannot hold the 4-byte magic"):
        deserialize_deletion_vector(struct.pack(">i", 2) + b"\0" * 6)
    with pytest.raises(CorruptFileError, match="deletion vector data: truncated: need 100 bytes"):
        deserialize_deletion_vector(struct.pack(">i", 100) + b"\0" * 8)
    with pytest.raises(CorruptFileError, match="after deletion vector: 1 unexpected trailing bytes"):
        deserialize_deletion_vector(framed32 + b"\0")


def test_bitmap_body_errors() -> None:
    magic32 = struct.pack(">i", BITMAP32_MAGIC)
    with pytest.raises(CorruptFileError, match="bitmap: 2 unexpected trailing bytes"):
        deserialize_deletion_vector(frame(magic32 + BitMap([1]).serialize() + b"\0\0"))
    with pytest.raises(CorruptFileError, match="bitmap cookie: unknown portable RoaringBitmap cookie 7"):
        deserialize_deletion_vector(frame(magic32 + struct.pack("<II", 7, 0)))
    with pytest.raises(CorruptFileError, match="bitmap container count: 70000 containers"):
        deserialize_deletion_vector(frame(magic32 + struct.pack("<II", 12346, 70000)))
    with pytest.raises(CorruptFileError, match="position 2147483648 exceeds 2147483647"):
        deserialize_deletion_vector(frame(magic32 + BitMap([2**31]).serialize()))
    unsorted = bytearray(BitMap([1, 2, 3]).serialize())
    unsorted[-6:] = struct.pack("<3H", 3, 2, 1)
    with pytest.raises(CorruptFileError, match=r"bitmap: invalid Roaring bitmap: .*not strictly increasing"):
        deserialize_deletion_vector(frame(magic32 + bytes(unsorted)))


def test_bitmap64_body_errors() -> None:
    one = BitMap([1]).serialize()
    with pytest.raises(CorruptFileError, match="bitmap64 bucket key: key 1 after key 1: keys must be"):
        deserialize_deletion_vector(frame(bitmap64_data([(1, one), (1, one)])))
    with pytest.raises(CorruptFileError, match="key 0 after key 2"):
        deserialize_deletion_vector(frame(bitmap64_data([(2, one), (0, one)])))
    with pytest.raises(CorruptFileError, match=r"bitmap64 bucket key: key -1 outside \[0, 2147483646\]"):
        deserialize_deletion_vector(frame(bitmap64_data([(-1, one)])))
    with pytest.raises(CorruptFileError, match=r"key 2147483647 outside"):
        deserialize_deletion_vector(frame(bitmap64_data([(2**31 - 1, one)])))
    with pytest.raises(CorruptFileError, match="bitmap64 bucket count: invalid bucket count -1"):
        deserialize_deletion_vector(frame(bitmap64_data([], count=-1)))
    with pytest.raises(CorruptFileError, match="bitmap64 bucket count: invalid bucket count 2147483648"):
        deserialize_deletion_vector(frame(bitmap64_data([], count=2**31)))
    with pytest.raises(CorruptFileError, match="1000 buckets need at least 12000 bytes"):
        deserialize_deletion_vector(frame(bitmap64_data([(0, one)], count=1000)))
    with pytest.raises(CorruptFileError, match="bitmap64: 3 unexpected trailing bytes"):
        deserialize_deletion_vector(frame(bitmap64_data([(0, one)]) + b"abc"))


def test_reads_one_frame_from_a_stream_position() -> None:
    first = BitmapDeletionVector([1]).serialize()
    second = Bitmap64DeletionVector([2**33]).serialize()
    reader = ByteReader.of(b"\x01" + first + second, "stream")
    reader.seek(1)
    assert read_deletion_vector(reader).positions().tolist() == [1]
    assert reader.pos == 1 + len(first)
    assert read_deletion_vector(reader, len(second)).positions().tolist() == [2**33]
    assert reader.remaining == 0


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_bitmap_parser_survives_mutations_behind_a_valid_crc(kind: str) -> None:
    """Mutate the data (magic excluded) and re-frame it with a fresh CRC, so that the roaring and
    bucket parsers themselves see the damage: they may accept it or raise CorruptFileError only."""
    for name, framed in golden_frames(kind).items():
        data = framed[4:-4]
        stride = 1 if len(data) <= 200 else 13
        mutants = [data[:n] for n in range(4, len(data))]
        for i in range(4, len(data), stride):
            for mask in (0xFF, 0x01, 0x80, 0x10):
                flipped = bytearray(data)
                flipped[i] ^= mask
                mutants.append(bytes(flipped))
        for mutant in mutants:
            try:
                _read_all(frame(mutant))
            except CORRUPTION_ERRORS as e:  # pragma: no cover - the failure being tested for
                pytest.fail(f"{name}: {type(e).__name__}: {e}")


@settings(max_examples=60, deadline=None)
@given(positions=st.lists(st.one_of(st.integers(0, 2**20), st.integers(2**32 - 50, 2**32 + 50),
                                    st.integers(0, 2**40)), max_size=200))
def test_64_bit_vectors_are_icebergs_portable_layout(positions: list[int]) -> None:
    """Inside the frame (size, magic, data, CRC) the data is the 64-bit portable Roaring layout that
    pyroaring's BitMap64 (and Iceberg) read."""
    from pyroaring import BitMap64

    frame = Bitmap64DeletionVector(np.array(positions, dtype=np.int64)).serialize()
    data = frame[8:-4]  # i32 size, i32 magic | data | i32 CRC
    assert sorted(BitMap64.deserialize(data)) == sorted(set(positions))
