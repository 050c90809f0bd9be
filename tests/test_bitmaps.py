"""The one structural walk of portable Roaring bitmaps (``bitmaps.portable_span``), against
pyroaring's own serialization (CRoaring writes the format Java writes), and its errors as every
reader of a bitmap inside a larger body reports them (bit slices and deletion vectors alike)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from paimon_index import bitmaps
from paimon_index.binary import ByteReader
from paimon_index.deletionvectors.vector import BITMAP32_MAGIC, deserialize_deletion_vector
from paimon_index.errors import CorruptFileError
from paimon_index.fileindex.bit_slice import read_portable

TRAILER = b"\xab" * 7  # bytes after the bitmap: the walk must stop before them


def _shapes() -> dict[str, BitMap]:
    runs = BitMap(range(10, 5000))
    runs.run_optimize()
    many_runs = BitMap(np.concatenate([np.arange(k << 16, (k << 16) + 300) for k in range(6)]))
    many_runs.run_optimize()
    return {"empty": BitMap(), "array": BitMap([1, 7, 70_000]), "bitset": BitMap(range(0, 20_000, 2)),
            "run": runs, "runs in 6 containers (offsets)": many_runs,
            "mixed": BitMap([3, *range(65_536, 75_000), *range(200_000, 260_000, 3)])}


@pytest.mark.parametrize("name", list(_shapes()))
def test_span_ends_where_pyroaring_ends(name: str) -> None:
    bitmap = _shapes()[name]
    data = bitmap.serialize()
    r = ByteReader.of(data + TRAILER)
    assert bitmaps.portable_span(r, "b") == (0, len(data))
    assert r.pos == len(data)
    r.seek(0)
    assert read_portable(r, "b") == bitmap and r.pos == len(data)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 400_000), max_size=3000), st.booleans())
def test_span_of_random_bitmaps(values: list[int], optimize: bool) -> None:
    bitmap = BitMap(values)
    if optimize:
        bitmap.run_optimize()
    data = bitmap.serialize()
    assert bitmaps.portable_span(ByteReader.of(data + TRAILER), "b") == (0, len(data))


CORRUPT = {
    "unknown portable RoaringBitmap cookie 7": struct.pack("<II", 7, 0),
    "70000 containers, at most 65536": struct.pack("<II", 12346, 70_000),
    "truncated: containers need 8192 bytes": BitMap(range(0, 20_000, 2)).serialize()[:-100],
}


@pytest.mark.parametrize("message", list(CORRUPT))
def test_every_reader_reports_the_same_error(message: str) -> None:
    data = CORRUPT[message]
    with pytest.raises(CorruptFileError, match=message):
        bitmaps.portable_span(ByteReader.of(data), "b")
    with pytest.raises(CorruptFileError, match=rf"index@\d+: slice [a-z ]+: {message}"):  # a bit slice
        read_portable(ByteReader.of(data, "index"), "slice")
    body = struct.pack(">i", BITMAP32_MAGIC) + data
    framed = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    with pytest.raises(CorruptFileError, match=message):  # a deletion vector's bitmap
        deserialize_deletion_vector(framed)
