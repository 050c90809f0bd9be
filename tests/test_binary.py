"""The bounds-checked cursor and Java's modified UTF-8."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimon_index.binary import (
    ByteReader,
    ByteWriter,
    FileSource,
    decode_modified_utf8,
    encode_modified_utf8,
)
from paimon_index.errors import CorruptFileError


@pytest.mark.parametrize(("text", "encoded"), [
    ("", b""),
    ("abc", b"abc"),
    ("\x00", b"\xc0\x80"),  # NUL is never a raw zero byte
    ("é", b"\xc3\xa9"),
    ("～", b"\xef\xbd\x9e"),
    ("😀", b"\xed\xa0\xbd\xed\xb8\x80"),  # a surrogate pair, 3 bytes per surrogate
])
def test_modified_utf8_matches_java(text: str, encoded: bytes) -> None:
    assert encode_modified_utf8(text) == encoded
    assert decode_modified_utf8(encoded) == text


@given(st.text())
def test_modified_utf8_round_trips(text: str) -> None:
    w = ByteWriter()
    w.java_utf(text)
    data = w.getvalue()
    assert int.from_bytes(data[:2], "big") == len(data) - 2
    assert 0 not in data[2:]
    assert ByteReader.of(data).java_utf("s") == text


@pytest.mark.parametrize("bad", [b"\x00", b"\xc3", b"\xe0\x80", b"\xff", b"\xc3\x41"])
def test_malformed_modified_utf8_is_a_corrupt_file(bad: bytes) -> None:
    data = len(bad).to_bytes(2, "big") + bad
    with pytest.raises(CorruptFileError, match=r"^f@2: name: "):
        ByteReader.of(data, "f").java_utf("name")


def test_integers_round_trip_big_and_little_endian() -> None:
    w = ByteWriter()
    w.i8(-1)
    w.i16(-2)
    w.i32(-3)
    w.i64(-4)
    w.f32(1.5)
    w.f64(-0.0)
    w.i32_le(5)
    w.i64_le(-6)
    r = ByteReader.of(w.getvalue())
    assert [r.i8("a"), r.i16("b"), r.i32("c"), r.i64("d"), r.f32("e")] == [-1, -2, -3, -4, 1.5]
    assert str(r.f64("f")) == "-0.0"
    assert (r.i32_le("g"), r.i64_le("h")) == (5, -6)
    r.expect_end()


def test_short_reads_name_file_offset_and_field() -> None:
    r = ByteReader.of(b"\x00\x00\x00\x01\x02", "x.index")
    r.i32("count")
    expected = r"^x\.index@4: entry 3 offset: truncated: need 4 bytes, only 1 remain$"
    with pytest.raises(CorruptFileError, match=expected):
        r.i32("entry 3 offset")


def test_counts_are_checked_before_anything_is_allocated() -> None:
    r = ByteReader.of((2**31 - 1).to_bytes(4, "big") + b"\0" * 16, "c.bin")
    with pytest.raises(CorruptFileError, match="count 2147483647 needs at least 2147483647 bytes"):
        r.count("items")
    with pytest.raises(CorruptFileError, match="negative count -1"):
        ByteReader.of(b"\xff\xff\xff\xff").count("items")
    with pytest.raises(CorruptFileError, match="truncated: need 1000000000"):
        ByteReader.of(b"").read_bytes(10**9, "blob")


def test_window_cannot_be_escaped() -> None:
    r = ByteReader.of(b"abcdef")
    sub = r.sub(3, "head")
    assert sub.read_bytes(3, "x") == b"abc"
    with pytest.raises(CorruptFileError):
        sub.u8("past the window")
    with pytest.raises(CorruptFileError, match="outside"):
        ByteReader(r.source, 4, 10)


def test_file_source_reads_lazily_in_chunks(tmp_path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * 1000)
    with FileSource(path) as src:
        r = ByteReader(src, 250_000, 256_000)
        assert r.u8("a") == 250_000 % 256
        r.seek(255_999)
        assert r.u8("b") == 255_999 % 256
        with pytest.raises(CorruptFileError, match=str(path)):
            r.u8("c")
