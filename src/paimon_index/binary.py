"""Bounds-checked binary cursor and writer, and Java's modified UTF-8.

Everything that parses bytes in paimon-index goes through :class:`ByteReader`. It reads from a
:class:`Source` (in-memory bytes or a seekable file) inside a window ``[start, end)``, loading file
bytes lazily in chunks, and turns every short read into a :class:`~paimon_index.errors.CorruptFileError`
naming the file, the absolute offset and the field. No allocation is ever sized from an unchecked
length: :meth:`ByteReader.read_bytes` checks the length against the bytes left in the window first.

Integer encodings (all two's complement):

    i8 / u8 / bool     1 byte          (bool: 0 = false, anything else = true, as Java's readBoolean)
    i16 / i32 / i64    2 / 4 / 8 bytes big-endian    (java.io.DataOutput order)
    i32_le / i64_le    4 / 8 bytes little-endian     (Iceberg / 64-bit deletion vectors)
    f32 / f64          IEEE-754 big-endian

Java modified UTF-8 (``DataOutput.writeUTF``)::

    +-------------------+-----------------------------------------------+
    | u16 BE  length    | encoded bytes (length of them, at most 65535) |
    +-------------------+-----------------------------------------------+

    U+0000            -> C0 80                   (never a raw NUL byte)
    U+0001..U+007F    -> 1 byte
    U+0080..U+07FF    -> 2 bytes
    U+0800..U+FFFF    -> 3 bytes
    above U+FFFF      -> the UTF-16 surrogate pair, each surrogate as 3 bytes (6 in all)
"""

from __future__ import annotations

import io
import os
import struct
from typing import Protocol

from paimon_index.errors import CorruptFileError

__all__ = [
    "ByteReader",
    "ByteWriter",
    "BytesSource",
    "FileSource",
    "Source",
    "decode_modified_utf8",
    "encode_modified_utf8",
    "open_source",
]

#: Largest byte count ``writeUTF`` can store in its unsigned 16-bit length prefix.
MAX_MODIFIED_UTF8_BYTES = 0xFFFF
#: How many bytes a file-backed reader loads at a time when it needs more.
READ_CHUNK_BYTES = 64 * 1024

_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")
_I32_LE = struct.Struct("<i")
_U32_LE = struct.Struct("<I")
_I64_LE = struct.Struct("<q")


class Source(Protocol):
    """Random-access bytes: a whole in-memory buffer or a seekable file."""

    name: str
    size: int

    def read_at(self, offset: int, length: int) -> memoryview | bytes:
        """Exactly ``length`` bytes at ``offset`` (callers check bounds against ``size``)."""
        ...


class BytesSource:
    """A :class:`Source` over bytes already in memory (zero-copy slices)."""

    def __init__(self, data: bytes | bytearray | memoryview, name: str = "<bytes>") -> None:
        self._view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
        self.name = name
        self.size = len(self._view)

    def read_at(self, offset: int, length: int) -> memoryview:
        return self._view[offset : offset + length]


class FileSource:
    """A :class:`Source` over a seekable binary file; reads only the ranges asked for."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.name = os.fspath(path)
        self._file: io.BufferedReader = open(self.name, "rb")  # noqa: SIM115 - closed in close()
        self.size = os.fstat(self._file.fileno()).st_size
        #: Bytes handed out so far (what a query really needed from this file).
        self.bytes_read = 0

    def read_at(self, offset: int, length: int) -> bytes:
        self._file.seek(offset)
        data = self._file.read(length)
        self.bytes_read += len(data)
        if len(data) != length:
            raise CorruptFileError(f"file ended after {len(data)} of {length} bytes",
                                   path=self.name, offset=offset + len(data))
        return data

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> FileSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_source(data_or_path: bytes | bytearray | memoryview | str | os.PathLike[str],
                name: str | None = None) -> BytesSource | FileSource:
    """A source for in-memory bytes or a file path."""
    if isinstance(data_or_path, bytes | bytearray | memoryview):
        return BytesSource(data_or_path, name or "<bytes>")
    return FileSource(data_or_path)


class ByteReader:
    """A cursor over ``source[start:end]`` that never reads past ``end``.

    Offsets (``pos``, ``start``, ``end``) are absolute in the source, so error messages point at
    the real byte in the file.
    """

    __slots__ = ("_buf", "_buf_start", "end", "pos", "source", "start")

    def __init__(self, source: Source, start: int = 0, end: int | None = None) -> None:
        size = source.size
        if end is None:
            end = size
        if start < 0 or start > end or end > size:
            raise CorruptFileError(f"range [{start}, {end}) lies outside the {size} bytes of the file",
                                   path=source.name, offset=start)
        self.source = source
        self.start = start
        self.end = end
        self.pos = start
        if isinstance(source, BytesSource):
            self._buf: memoryview | bytes = source.read_at(0, size)
            self._buf_start = 0
        else:
            self._buf = b""
            self._buf_start = start

    @classmethod
    def of(cls, data: bytes | bytearray | memoryview, name: str = "<bytes>") -> ByteReader:
        return cls(BytesSource(data, name))

    # -- position -------------------------------------------------------------------------------
    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def seek(self, pos: int, field: str = "seek") -> None:
        if pos < self.start or pos > self.end:
            raise self.error(f"target offset {pos} lies outside [{self.start}, {self.end}]", field)
        self.pos = pos

    def skip(self, n: int, field: str) -> None:
        self._require(n, field)
        self.pos += n

    def sub(self, length: int, field: str) -> ByteReader:
        """A reader over the next ``length`` bytes (checked), advancing past them."""
        self._require(length, field)
        child = ByteReader.__new__(ByteReader)
        child.source, child._buf, child._buf_start = self.source, self._buf, self._buf_start
        child.start = child.pos = self.pos
        child.end = self.pos + length
        self.pos += length
        return child

    def error(self, reason: str, field: str | None = None, offset: int | None = None) -> CorruptFileError:
        return CorruptFileError(reason, path=self.source.name,
                                offset=self.pos if offset is None else offset, field=field)

    def expect_end(self, field: str = "end of data") -> None:
        if self.pos != self.end:
            raise self.error(f"{self.end - self.pos} unexpected trailing bytes", field)

    # -- raw access -----------------------------------------------------------------------------
    def _require(self, n: int, field: str) -> None:
        if n < 0:
            raise self.error(f"negative length {n}", field)
        if n > self.end - self.pos:
            raise self.error(f"truncated: need {n} bytes, only {self.end - self.pos} remain", field)

    def _view(self, n: int, field: str) -> memoryview | bytes:
        """``n`` bytes at ``pos`` (checked), advancing; loads file chunks as needed."""
        self._require(n, field)
        rel = self.pos - self._buf_start
        if rel < 0 or rel + n > len(self._buf):
            load = min(max(n, READ_CHUNK_BYTES), self.end - self.pos)
            self._buf = self.source.read_at(self.pos, load)
            self._buf_start = self.pos
            rel = 0
        self.pos += n
        return self._buf[rel : rel + n]

    def read_bytes(self, n: int, field: str) -> bytes:
        return bytes(self._view(n, field))

    def read_view(self, n: int, field: str) -> memoryview | bytes:
        """Like :meth:`read_bytes` but may return a zero-copy view."""
        return self._view(n, field)

    # -- integers -------------------------------------------------------------------------------
    def u8(self, field: str) -> int:
        return self._view(1, field)[0]

    def i8(self, field: str) -> int:
        v = self._view(1, field)[0]
        return v - 256 if v > 127 else v

    def bool(self, field: str) -> bool:
        return self._view(1, field)[0] != 0

    def i16(self, field: str) -> int:
        return _I16.unpack(self._view(2, field))[0]

    def u16(self, field: str) -> int:
        return _U16.unpack(self._view(2, field))[0]

    def i32(self, field: str) -> int:
        return _I32.unpack(self._view(4, field))[0]

    def i64(self, field: str) -> int:
        return _I64.unpack(self._view(8, field))[0]

    def f32(self, field: str) -> float:
        return _F32.unpack(self._view(4, field))[0]

    def f64(self, field: str) -> float:
        return _F64.unpack(self._view(8, field))[0]

    def i32_le(self, field: str) -> int:
        return _I32_LE.unpack(self._view(4, field))[0]

    def u32_le(self, field: str) -> int:
        return _U32_LE.unpack(self._view(4, field))[0]

    def i64_le(self, field: str) -> int:
        return _I64_LE.unpack(self._view(8, field))[0]

    def count(self, field: str, *, min_item_bytes: int = 1) -> int:
        """A big-endian i32 count of items that follow, each at least ``min_item_bytes`` long.

        Rejects negative counts and counts that could not fit in the bytes left, so a hostile
        count can never size an allocation.
        """
        at = self.pos
        n = self.i32(field)
        if n < 0:
            raise self.error(f"negative count {n}", field, at)
        if min_item_bytes and n * min_item_bytes > self.remaining:
            raise self.error(f"count {n} needs at least {n * min_item_bytes} bytes, "
                             f"only {self.remaining} remain", field, at)
        return n

    def java_utf(self, field: str) -> str:
        n = self.u16(field)
        at = self.pos
        data = self.read_bytes(n, field)
        try:
            return decode_modified_utf8(data)
        except ValueError as e:
            raise self.error(str(e), field, at) from e


class ByteWriter:
    """Appends big-endian (Java ``DataOutput``) encodings to a growing buffer."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = bytearray()

    def __len__(self) -> int:
        return len(self._buf)

    def getvalue(self) -> bytes:
        return bytes(self._buf)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def i8(self, v: int) -> None:
        self._buf.append(v & 0xFF)

    def bool(self, v: bool) -> None:
        self._buf.append(1 if v else 0)

    def i16(self, v: int) -> None:
        self._buf += _I16.pack(v)

    def i32(self, v: int) -> None:
        self._buf += _I32.pack(v)

    def i64(self, v: int) -> None:
        self._buf += _I64.pack(v)

    def f32(self, v: float) -> None:
        self._buf += _F32.pack(v)

    def f64(self, v: float) -> None:
        self._buf += _F64.pack(v)

    def i32_le(self, v: int) -> None:
        self._buf += _I32_LE.pack(v)

    def i64_le(self, v: int) -> None:
        self._buf += _I64_LE.pack(v)

    def java_utf(self, s: str) -> None:
        data = encode_modified_utf8(s)
        if len(data) > MAX_MODIFIED_UTF8_BYTES:
            raise ValueError(f"string of {len(data)} encoded bytes is too long for writeUTF")
        self._buf += _U16.pack(len(data))
        self._buf += data


def encode_modified_utf8(s: str) -> bytes:
    """Java's modified UTF-8 (without the length prefix)."""
    if s.isascii() and "\x00" not in s:
        return s.encode("ascii")
    # UTF-16 code units, then each unit as 1-3 bytes: surrogates are encoded individually.
    units = s.encode("utf-16-be")
    out = bytearray()
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        if 0x0001 <= c <= 0x007F:
            out.append(c)
        elif c <= 0x07FF:  # includes U+0000 -> C0 80
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    return bytes(out)


def decode_modified_utf8(data: bytes) -> str:
    """Inverse of :func:`encode_modified_utf8`; raises ``ValueError`` on malformed input."""
    if data.isascii() and 0 not in data:
        return data.decode("ascii")
    units: list[int] = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if b < 0x80:
            if b == 0:
                raise ValueError(f"raw NUL byte at {i} in modified UTF-8")
            units.append(b)
            i += 1
        elif b >> 5 == 0b110:
            if i + 1 >= n or data[i + 1] >> 6 != 0b10:
                raise ValueError(f"malformed 2-byte sequence at {i} in modified UTF-8")
            units.append(((b & 0x1F) << 6) | (data[i + 1] & 0x3F))
            i += 2
        elif b >> 4 == 0b1110:
            if i + 2 >= n or data[i + 1] >> 6 != 0b10 or data[i + 2] >> 6 != 0b10:
                raise ValueError(f"malformed 3-byte sequence at {i} in modified UTF-8")
            units.append(((b & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F))
            i += 3
        else:
            raise ValueError(f"invalid byte 0x{b:02x} at {i} in modified UTF-8")
    raw = b"".join(u.to_bytes(2, "big") for u in units)
    # surrogatepass keeps unpaired surrogates (Java strings may hold them) instead of failing.
    return raw.decode("utf-16-be", errors="surrogatepass")
