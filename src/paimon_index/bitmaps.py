"""Roaring bitmaps in the portable format (Java RoaringBitmap, CRoaring, Iceberg): safe reading.

Portable layout of a 32-bit bitmap (all integers little-endian)::

    u32 cookie      12346 (no run containers; then a u32 container count follows)
                    or 12347 | (count - 1) << 16, then ceil(count / 8) bytes of run flags
    count x (u16 key = high 16 bits, u16 cardinality - 1)
    count x u32     container offsets (no-run form, or 4+ containers)
    containers      array (u16 values), bitmap (1024 x u64) or run (u16 runs, then start/length-1)

Every index and deletion vector deserializes through :func:`deserialize`, which turns whatever
pyroaring raises on bytes that are not a valid bitmap — empty input included — into a
:class:`~paimon_index.errors.CorruptFileError` naming file, offset and field. Where a bitmap ends
inside a larger body (a bit slice, a deletion vector's bucket) is found by the one structural
walk, :func:`portable_span`, which checks the cookie, the container count and that every container
lies inside the body, without decoding any; :func:`portable_headers` reads everything before the
containers, for readers that decode them themselves. (The writers live with the formats that write
bitmaps.)
"""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap

from paimon_index.binary import ByteReader
from paimon_index.errors import CorruptFileError

__all__ = ["deserialize", "portable_headers", "portable_span"]

SERIAL_COOKIE_NO_RUN = 12346
SERIAL_COOKIE = 12347
#: Below this many containers, a bitmap with run containers has no offset table.
NO_OFFSET_THRESHOLD = 4
ARRAY_MAX_CARDINALITY = 4096
BITMAP_CONTAINER_BYTES = 8192
#: A position's high 16 bits pick its container (the key), the low 16 bits its value inside.
CONTAINER_BITS = 16
LOW_MASK = (1 << CONTAINER_BITS) - 1
CONTAINER_VALUES = 1 << CONTAINER_BITS
MAX_CONTAINERS = 1 << CONTAINER_BITS
#: Bytes of a run container's run count, and of one (start, length - 1) run.
RUN_COUNT_BYTES = 2
RUN_BYTES = 4

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


def _head(r: ByteReader, field: str) -> tuple[int, np.ndarray, bool]:
    """The cookie part of a portable bitmap at the cursor: ``(container count, run flag per
    container, whether container offsets follow the headers)``; checks the cookie and the count."""
    start = r.pos
    cookie = r.u32_le(f"{field} cookie")
    if cookie & LOW_MASK == SERIAL_COOKIE:
        count = (cookie >> CONTAINER_BITS) + 1
        flags = np.frombuffer(r.read_view((count + 7) // 8, f"{field} run flags"), dtype=np.uint8)
        run_flags = np.unpackbits(flags, bitorder="little")[:count].astype(bool)
        return count, run_flags, count >= NO_OFFSET_THRESHOLD
    if cookie == SERIAL_COOKIE_NO_RUN:
        at = r.pos
        count = r.u32_le(f"{field} container count")
        if count > MAX_CONTAINERS:
            raise r.error(f"{count} containers, at most {MAX_CONTAINERS}", f"{field} container count", at)
        return count, np.zeros(count, dtype=bool), True
    raise r.error(f"unknown portable RoaringBitmap cookie {cookie}", f"{field} cookie", start)


def portable_headers(r: ByteReader, field: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Everything of a portable bitmap before its containers, the cursor left at the first one:
    ``(key, cardinality, run flag)`` per container. Checks the cookie and the container count."""
    count, run_flags, has_offsets = _head(r, field)
    headers = np.frombuffer(r.read_view(4 * count, f"{field} container headers"), dtype="<u2")
    if has_offsets:
        r.skip(4 * count, f"{field} container offsets")
    return headers[0::2].astype(np.int64), headers[1::2].astype(np.int64) + 1, run_flags


def portable_span(r: ByteReader, field: str) -> tuple[int, int]:
    """Walk one portable bitmap at the cursor without decoding it: ``(start, end)``, the cursor
    left at ``end``. Checks the cookie, the container count and that every container lies inside
    the reader's range; reads only the run counts of run containers (no per-container Python for
    the others)."""
    start = r.pos
    _, cardinalities, run_flags = portable_headers(r, field)
    sizes = np.where(cardinalities > ARRAY_MAX_CARDINALITY, BITMAP_CONTAINER_BYTES, 2 * cardinalities)
    sizes[run_flags] = 0
    before = np.concatenate(([0], np.cumsum(sizes)))
    body = r.pos
    run_bytes = 0
    for index in np.flatnonzero(run_flags).tolist():
        r.seek(min(body + int(before[index]) + run_bytes, r.end), f"{field} run container {index}")
        runs = int.from_bytes(r.read_view(RUN_COUNT_BYTES, f"{field} run count"), "little")
        run_bytes += RUN_COUNT_BYTES + RUN_BYTES * runs
    end = body + int(before[-1]) + run_bytes
    if end > r.end:
        raise r.error(f"truncated: containers need {end - body} bytes, only {r.end - body} remain",
                      f"{field} containers", body)
    r.seek(end, f"{field} containers")
    return start, end
