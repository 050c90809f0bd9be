"""Deletion-vector index files: Java's golden files both ways, range reads, rolling, corruption."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypaimon.index.deletion_vector_meta import DeletionVectorMeta

from paimon_index.binary import BytesSource, FileSource
from paimon_index.deletionvectors.index_file import (
    DEFAULT_TARGET_SIZE,
    DELETION_VECTORS_INDEX,
    check_version,
    iter_vectors,
    local_write,
    read_vector,
    read_vectors,
    serialize_index_file,
    serialize_index_files,
    write_index_files,
)
from paimon_index.deletionvectors.vector import Bitmap64DeletionVector, BitmapDeletionVector, DeletionVector
from paimon_index.errors import CorruptFileError

GOLDEN_DV = Path(__file__).resolve().parents[2].parent / "shared" / "golden" / "dv"
KINDS = {"dv32": BitmapDeletionVector, "dv64": Bitmap64DeletionVector}
SCAN_KIND = {"v1": BitmapDeletionVector, "v2": Bitmap64DeletionVector}
CORRUPTION_ERRORS = (IndexError, ValueError, MemoryError, OverflowError, TypeError, KeyError)


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


def golden_vectors(kind: str) -> dict[str, DeletionVector]:
    lines = (golden_dv() / f"{kind}.spec.txt").read_text().splitlines()
    return {name: KINDS[kind](parse_positions(pos))
            for name, _, pos in (line.partition(":") for line in lines if line)}


def golden_manifest(kind: str) -> dict[str, DeletionVectorMeta]:
    rows = (golden_dv() / f"{kind}.manifest.tsv").read_text().splitlines()
    return {name: DeletionVectorMeta(name, int(o), int(n), int(c))
            for name, o, n, c in (r.split() for r in rows if r)}


def parse_scan_line(line: str) -> tuple[str, int, int, int, list[int]]:
    kind, *fields = line.split(" ")
    values = dict(f.split("=", 1) for f in fields)
    return (kind, int(values["offset"]), int(values["length"]), int(values["cardinality"]),
            parse_positions(values["positions"]))


def compat_files() -> list[tuple[Path, type[DeletionVector]]]:
    compat = golden_dv() / "compat"
    return [(compat / "dvindex-32", BitmapDeletionVector), (compat / "dvindex-64", Bitmap64DeletionVector)]


# -- golden --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_writer_reproduces_java_index_file(kind: str) -> None:
    content = serialize_index_file(golden_vectors(kind))
    assert content.data == (golden_dv() / f"{kind}.bin").read_bytes()
    assert content.ranges == golden_manifest(kind)
    meta = content.to_meta("index-x-0")
    assert (meta.index_type, meta.file_size, meta.row_count) == (DELETION_VECTORS_INDEX, len(content.data),
                                                                  len(content.ranges))


@pytest.mark.parametrize("bits", ["32", "64"])
def test_writer_reproduces_paimon_compat_files(bits: str) -> None:
    cls = BitmapDeletionVector if bits == "32" else Bitmap64DeletionVector
    data = serialize_index_file({"f1": cls([2, 3]), "f2": cls([1])}).data
    compat = golden_dv() / "compat"
    assert data == (compat / f"dvindex-{bits}").read_bytes() == (compat / f"regen-{bits}.bin").read_bytes()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_range_reads_give_java_answers(kind: str) -> None:
    source = BytesSource((golden_dv() / f"{kind}.bin").read_bytes(), f"{kind}.bin")
    for line in (golden_dv() / f"{kind}.expected.tsv").read_text().splitlines():
        name, offset, length, cardinality, positions = line.split("\t")
        vector = read_vector(source, int(offset), int(length))
        assert vector.get_cardinality() == int(cardinality)
        assert vector.positions().tolist() == parse_positions(positions), name
    vectors = read_vectors(source, golden_manifest(kind))
    assert vectors == golden_vectors(kind)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_sequential_walk_gives_java_scan(kind: str) -> None:
    expected = [parse_scan_line(line) for line in (golden_dv() / f"{kind}.scan.txt").read_text().splitlines()]
    walked = list(iter_vectors(golden_dv() / f"{kind}.bin"))
    assert len(walked) == len(expected)
    for stored, (scan_kind, offset, length, cardinality, positions) in zip(walked, expected, strict=True):
        assert type(stored.vector) is SCAN_KIND[scan_kind]
        assert (stored.offset, stored.length) == (offset, length)
        assert stored.vector.get_cardinality() == cardinality
        assert stored.vector.positions().tolist() == positions


def test_compat_files_read_as_paimon_reads_them() -> None:
    for path, cls in compat_files():
        scan = path.with_name(path.name + ".scan.txt").read_text().splitlines()
        expected = [parse_scan_line(line) for line in scan]
        walked = list(iter_vectors(path))
        assert [(s.offset, s.length, s.vector.positions().tolist()) for s in walked] == \
            [(o, n, p) for _, o, n, _, p in expected]
        assert all(type(s.vector) is cls for s in walked)


class CountingSource:
    """A source that records every byte range read from it."""

    def __init__(self, data: bytes) -> None:
        self._inner = BytesSource(data, "counted")
        self.name, self.size = self._inner.name, self._inner.size
        self.reads: list[tuple[int, int]] = []

    def read_at(self, offset: int, length: int) -> memoryview:
        self.reads.append((offset, length))
        return self._inner.read_at(offset, length)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_range_read_touches_only_the_version_byte_and_its_frame(kind: str, tmp_path: Path) -> None:
    data = (golden_dv() / f"{kind}.bin").read_bytes()
    path = tmp_path / "dv.index"
    path.write_bytes(data)
    cls = KINDS[kind]
    for meta in golden_manifest(kind).values():
        counting = CountingSource(data)
        with FileSource(path) as file_source:
            from_file = read_vector(file_source, meta.offset, meta.length)
        counting_vector = read_vector(counting, meta.offset, meta.length)
        assert from_file == counting_vector
        frame_end = meta.offset + cls.frame_bytes(meta.length)
        for offset, length in counting.reads:
            assert (offset, length) == (0, 1) or meta.offset <= offset <= offset + length <= frame_end


# -- rolling -------------------------------------------------------------------------------------
def _vectors(sizes: list[int], bitmap64: bool) -> dict[str, DeletionVector]:
    rng = np.random.default_rng(7)
    cls = Bitmap64DeletionVector if bitmap64 else BitmapDeletionVector
    return {f"data-{i}.parquet": cls(rng.choice(1 << 20, size=n, replace=False)) for i, n in enumerate(sizes)}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=12), st.integers(1, 3000), st.booleans())
def test_rolling_follows_javas_rule(sizes: list[int], target: int, bitmap64: bool) -> None:
    vectors = _vectors(sizes, bitmap64)
    files = serialize_index_files(vectors, target)
    if not vectors:
        assert files == []
        return
    assert [name for f in files for name in f.ranges] == list(vectors)
    for i, content in enumerate(files):
        assert content.ranges, "every file holds at least one vector"
        last = list(content.ranges.values())[-1]
        size_before_last = last.offset
        assert size_before_last <= target, "the file would have been closed before its last vector"
        if i < len(files) - 1:
            assert len(content.data) > target
        assert read_vectors(content.data, content.ranges) == {n: vectors[n] for n in content.ranges}


def test_single_file_and_empty_inputs() -> None:
    assert serialize_index_file({}).data == b"\x01"
    assert serialize_index_files({}) == []
    vectors = _vectors([10, 20, 30], bitmap64=False)
    assert len(serialize_index_files(vectors)) == 1  # far below 2 MiB
    assert DEFAULT_TARGET_SIZE == 2 * 1024 * 1024
    with pytest.raises(ValueError, match="target size must be positive"):
        serialize_index_files(vectors, 0)


def test_write_index_files_to_a_directory(tmp_path: Path) -> None:
    vectors = _vectors([500, 500, 500, 5], bitmap64=True)
    names = iter(["index-a-0", "index-b-0", "index-c-0"])
    metas = write_index_files(tmp_path, vectors, write=local_write, target_size=1500,
                              name_factory=lambda: next(names))
    assert [m.file_name for m in metas] == ["index-a-0", "index-b-0"]
    restored: dict[str, DeletionVector] = {}
    for meta in metas:
        path = tmp_path / meta.file_name
        assert meta.file_size == path.stat().st_size and meta.row_count == len(meta.dv_ranges)
        restored.update(read_vectors(path, meta.dv_ranges))
    assert restored == vectors
    (single,) = write_index_files(tmp_path, {}, write=local_write, target_size=None,
                                  name_factory=lambda: "index-empty-0")
    assert (tmp_path / "index-empty-0").read_bytes() == b"\x01" and single.row_count == 0


# -- errors and corruption -----------------------------------------------------------------------
def test_version_and_range_errors() -> None:
    good = serialize_index_file({"f": BitmapDeletionVector([1])}).data
    with pytest.raises(CorruptFileError, match=r"<bytes>@0: index file version: unsupported version 2"):
        check_version(BytesSource(b"\x02" + good[1:]))
    with pytest.raises(CorruptFileError, match="index file version: truncated"):
        list(iter_vectors(b""))
    assert len(good) == 31 and read_vector(good, 1, 22).positions().tolist() == [1]
    with pytest.raises(CorruptFileError, match=r"deletion vector offset: offset 0 outside \[1, 31\]"):
        read_vector(good, 0, 22)
    with pytest.raises(CorruptFileError, match="offset 99 outside"):
        read_vector(good, 99, 22)
    with pytest.raises(CorruptFileError, match="negative recorded length -3"):
        read_vector(good, 1, -3)
    with pytest.raises(CorruptFileError, match="size 22 does not match the recorded length 21"):
        read_vector(good, 1, 21)
    with pytest.raises(CorruptFileError, match=r"short@5: deletion vector data: truncated: need 22 bytes"):
        read_vector(BytesSource(good[:20], "short"), 1, 22)
    assert read_vector(good, 1).positions().tolist() == [1]


def _walk(data: bytes) -> list[list[int]]:
    return [s.vector.positions().tolist() for s in iter_vectors(BytesSource(data, "mutated"))]


def _golden_files() -> list[Path]:
    root = golden_dv()
    compat = root / "compat"
    return [root / "dv32.bin", root / "dv64.bin", compat / "dvindex-32", compat / "dvindex-64"]


def test_every_prefix_truncation_is_corrupt_or_a_shorter_valid_file() -> None:
    for path in _golden_files():
        data = path.read_bytes()
        boundaries = {1} | {s.offset + type(s.vector).frame_bytes(s.length) for s in iter_vectors(data)}
        step = 1 if len(data) < 400 else 3
        for n in range(0, len(data), step):
            if n in boundaries:
                assert len(_walk(data[:n])) == sum(b <= n for b in boundaries) - 1
                continue
            with pytest.raises(CorruptFileError):
                _walk(data[:n])


def test_every_single_byte_flip_is_detected() -> None:
    """Version byte, size prefixes, magics, bitmaps and CRCs: no byte of a file goes unchecked."""
    rng = random.Random(11)
    for path in _golden_files():
        data = path.read_bytes()
        indexes = range(len(data)) if len(data) < 400 else sorted(rng.sample(range(len(data)), 1500))
        for i in indexes:
            for mask in (0xFF, 1 << rng.randrange(8)):
                flipped = bytearray(data)
                flipped[i] ^= mask
                try:
                    with pytest.raises(CorruptFileError):
                        _walk(bytes(flipped))
                except CORRUPTION_ERRORS as e:  # pragma: no cover - the failure being tested for
                    pytest.fail(f"{path.name} byte {i}: {type(e).__name__}: {e}")


def test_range_reads_of_a_truncated_file_fail_cleanly() -> None:
    data = (golden_dv() / "dv64.bin").read_bytes()
    manifest = golden_manifest("dv64")
    for n in range(0, len(data), 97):
        source = BytesSource(data[:n], "short")
        for meta in manifest.values():
            end = meta.offset + meta.length
            if n >= end:
                read_vector(source, meta.offset, meta.length)
            else:
                with pytest.raises(CorruptFileError):
                    read_vector(source, meta.offset, meta.length)
