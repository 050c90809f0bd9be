"""Roaring bitmaps in the portable format (Java RoaringBitmap, CRoaring, Iceberg): safe reading.

Portable layout of a 32-bit bitmap (all integers little-endian)::

    u32 cookie      12346 (no run containers; then a u32 container count follows)
                    or 12347 | (count - 1) << 16, then ceil(count / 8) bytes of run flags
    count x (u16 key = high 16 bits, u16 cardinality - 1)
    count x u32     container offsets (no-run form, or 4+ containers)
    containers      array (u16 values), bitmap (1024 x u64) or run (u16 runs, then start/length-1)

Every index and deletion vector deserializes through :func:`deserialize`, which turns whatever
pyroaring raises on bytes that are not a valid bitmap — empty input included — into a
:class:`~paimon_index.errors.CorruptFileError` naming file, offset and field. (The writers and the
structural walk that finds where a bitmap ends live with the formats that need them.)
"""

from __future__ import annotations

from pyroaring import BitMap

from paimon_index.errors import CorruptFileError

__all__ = ["deserialize"]

#: What pyroaring raises for bytes it cannot read as a bitmap (IndexError: empty input).
PYROARING_ERRORS = (ValueError, OverflowError, MemoryError, RuntimeError, IndexError)


def deserialize(data: bytes | memoryview, *, path: str, offset: int, field: str) -> BitMap:
    """A portable 32-bit Roaring bitmap from ``data``, or a CorruptFileError."""
    if len(data) == 0:
        raise CorruptFileError("empty Roaring bitmap", path=path, offset=offset, field=field)
    try:
        return BitMap.deserialize(bytes(data))
    except PYROARING_ERRORS as e:
        raise CorruptFileError(f"invalid Roaring bitmap: {e}", path=path, offset=offset, field=field) from e
