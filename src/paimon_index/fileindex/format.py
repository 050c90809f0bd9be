"""The file-index container (Paimon's ``FileIndexFormat``, version 1): all indexes of one data file.

Layout (integers big-endian; strings are Java modified UTF-8 with a u16 length)::

    offset  size  field
    ------  ----  ---------------------------------------------------------------------
    0       8     magic            i64 = 1493475289347502
    8       4     version          i32 = 1
    12      4     head length      i32 = bytes from offset 0 to the end of the head
    16      4     column count     i32 >= 0
                  per column:
                    var   column name       writeUTF
                    4     index count       i32 >= 0
                    per index:
                      var   index type      writeUTF ("bloom-filter", "bitmap", ...)
                      4     start           i32 absolute offset of the index body in this file,
                                            or -1 = the index is empty (no rows were written)
                      4     length          i32 body length (0 when empty)
    ...     4     redundant length i32 (0 in version 1)
    ...     n     redundant bytes  (skipped: reserved for later versions)
    head length ...  BODY: the index bodies, concatenated in head order

Order: Paimon fills a ``HashMap<column, HashMap<type, bytes>>`` and writes it in iteration order;
:func:`write_container` reproduces that order by default (see :mod:`paimon_index.javacompat`).

The :class:`ContainerReader` is lazy: it reads and checks the head only; index bodies are read by
the index readers when a query needs them. Over a source read by range (an object store), the
head comes in one request (the first :data:`HEAD_CHUNK_BYTES`, a second request only for a longer
head) and :meth:`ContainerReader.prefetch` fetches the parts of several bodies a query will need
in one coalesced request before they are parsed. Checked: magic, version, head length within the file,
non-negative counts that fit, every (start, length) inside the body region, no trailing head bytes
beyond the redundant bytes. Not checked: that bodies do not overlap (Paimon never writes overlap).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from paimon_index.binary import ByteReader, ByteWriter, Source, encode_modified_utf8, open_source
from paimon_index.javacompat import hashmap_order, java_string_hash

__all__ = [
    "EMPTY_INDEX_START",
    "MAGIC",
    "VERSION",
    "ContainerReader",
    "IndexEntry",
    "java_map_order",
    "write_container",
]

MAGIC = 1493475289347502
VERSION = 1
EMPTY_INDEX_START = -1
#: magic + version + head length
FIXED_PREFIX_BYTES = 8 + 4 + 4
#: bytes of a head with no columns: prefix + column count + redundant length
MIN_HEAD_BYTES = FIXED_PREFIX_BYTES + 4 + 4
#: smallest encoding of one (index type, start, length) entry: empty UTF string + 2 ints
MIN_INDEX_ENTRY_BYTES = 2 + 4 + 4
#: smallest encoding of one column: empty UTF name + index count
MIN_COLUMN_BYTES = 2 + 4
#: The first request of a ranged source: enough for the heads Paimon writes (a few columns, each
#: a few dozen bytes), and small containers come whole.
HEAD_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """Where one (column, index type) body lives in the container."""

    column: str
    index_type: str
    start: int
    length: int

    @property
    def empty(self) -> bool:
        return self.start == EMPTY_INDEX_START


def java_map_order(calls: list[str], *, compute: bool = False) -> list[str]:
    """Distinct keys of a ``HashMap<String, ?>`` in iteration order.

    Args:
        calls: the keys in the order they were passed to ``put`` (or ``computeIfAbsent`` when
            ``compute``), repeats included.
    """
    keys = list(dict.fromkeys(calls))
    hashes = np.array([java_string_hash(k) for k in keys], dtype=np.int32)
    trailing = bool(keys) and calls.index(keys[-1]) < len(calls) - 1
    order, _ = hashmap_order(hashes, compute=compute, trailing_call=trailing)
    return [keys[i] for i in order]


def write_container(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Serialize ``{column: {index type: body bytes or None (empty)}}`` in the given order.

    (:func:`paimon_index.fileindex.builder.build_file_index` orders them as Paimon does.)
    """
    layout = [(col, list(types)) for col, types in indexes.items()]

    head_len = MIN_HEAD_BYTES
    for col, types in layout:
        head_len += 2 + len(encode_modified_utf8(col)) + 4
        head_len += sum(2 + len(encode_modified_utf8(t)) + 8 for t in types)

    w = ByteWriter()
    w.i64(MAGIC)
    w.i32(VERSION)
    w.i32(head_len)
    w.i32(len(layout))
    body: list[bytes] = []
    offset = head_len
    for col, types in layout:
        w.java_utf(col)
        w.i32(len(types))
        for t in types:
            data = indexes[col][t]
            w.java_utf(t)
            if data is None:
                w.i32(EMPTY_INDEX_START)
                w.i32(0)
            else:
                w.i32(offset)
                w.i32(len(data))
                body.append(data)
                offset += len(data)
    w.i32(0)  # redundant length
    assert len(w) == head_len
    for data in body:
        w.write(data)
    return w.getvalue()


class ContainerReader:
    """Reads a container's head; hands out index entries whose bodies are read on demand.

    Args:
        source: bytes, a local path (the CLI), or an open :class:`~paimon_index.binary.Source`
            (a table's files: :class:`paimon_index.table.fileio.FileIOSource`).
        name: label for error messages when ``source`` is bytes.
        owns_source: close ``source`` with this reader (default: only what it opened itself).
    """

    def __init__(self, source: Source | bytes | bytearray | memoryview | str | os.PathLike[str],
                 name: str | None = None, *, owns_source: bool = False) -> None:
        self._owns_source = owns_source or isinstance(source, bytes | bytearray | memoryview | str
                                                      | os.PathLike)
        if isinstance(source, bytes | bytearray | memoryview | str | os.PathLike):
            source = open_source(source, name)
        self.source: Source = source
        self.entries: list[IndexEntry] = []
        self._by_column: dict[str, list[IndexEntry]] = {}
        try:
            self._read_head()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the file this reader opened (a source passed in stays open)."""
        close = getattr(self.source, "close", None)
        if self._owns_source and close is not None:
            close()

    def __enter__(self) -> ContainerReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _prefetch(self, ranges: list[tuple[int, int]]) -> None:
        """Fetch ``ranges`` in one go when the source reads by range (no-op for bytes)."""
        prefetch = getattr(self.source, "prefetch", None)
        if prefetch is not None:
            prefetch(ranges)

    def prefetch(self, ranges: list[tuple[int, int]]) -> None:
        """Fetch body ranges (absolute offsets) now, near ones in one request, before parsing."""
        self._prefetch(ranges)

    def _read_head(self) -> None:
        self._prefetch([(0, HEAD_CHUNK_BYTES)])
        r = ByteReader(self.source)
        magic = r.i64("magic")
        if magic != MAGIC:
            raise r.error(f"not a file index: magic {magic} != {MAGIC}", "magic", 0)
        version = r.i32("version")
        if version != VERSION:
            raise r.error(f"unsupported file index version {version} (supported: {VERSION})",
                          "version", 8)
        at = r.pos
        head_len = r.i32("head length")
        if head_len < MIN_HEAD_BYTES or head_len > self.source.size:
            raise r.error(f"head length {head_len} outside [{MIN_HEAD_BYTES}, file size "
                          f"{self.source.size}]", "head length", at)
        if head_len > HEAD_CHUNK_BYTES:
            self._prefetch([(0, head_len)])
        head = ByteReader(self.source, r.pos, head_len)
        n_columns = head.count("column count", min_item_bytes=MIN_COLUMN_BYTES)
        seen: set[tuple[str, str]] = set()
        for c in range(n_columns):
            column = head.java_utf(f"column {c} name")
            n_indexes = head.count(f"column {column!r} index count",
                                   min_item_bytes=MIN_INDEX_ENTRY_BYTES)
            for _ in range(n_indexes):
                at = head.pos
                index_type = head.java_utf(f"column {column!r} index type")
                field = f"column {column!r} index {index_type!r}"
                start = head.i32(f"{field} start")
                length = head.i32(f"{field} length")
                if start == EMPTY_INDEX_START:
                    if length != 0:
                        raise head.error(f"empty index with length {length}", field, at)
                elif start < head_len or length < 0 or start + length > self.source.size:
                    raise head.error(
                        f"body [{start}, {start + length}) outside [{head_len}, {self.source.size})",
                        field, at)
                if (column, index_type) in seen:
                    raise head.error("duplicate index entry", field, at)
                seen.add((column, index_type))
                entry = IndexEntry(column, index_type, start, length)
                self.entries.append(entry)
                self._by_column.setdefault(column, []).append(entry)
        at = head.pos
        redundant = head.i32("redundant length")
        if redundant < 0 or redundant != head.remaining:
            raise head.error(f"redundant length {redundant} but {head.remaining} head bytes remain",
                             "redundant length", at)
        self.head_length = head_len

    @property
    def columns(self) -> list[str]:
        return list(self._by_column)

    def column_entries(self, column: str) -> list[IndexEntry]:
        """Index entries of one column (empty list when the column has no index)."""
        return self._by_column.get(column, [])

    def read_body(self, entry: IndexEntry) -> bytes:
        """The raw bytes of one index body (empty for an empty index)."""
        if entry.empty:
            return b""
        return bytes(self.source.read_at(entry.start, entry.length))

    def read_all(self) -> dict[str, dict[str, bytes | None]]:
        out: dict[str, dict[str, bytes | None]] = {}
        for e in self.entries:
            out.setdefault(e.column, {})[e.index_type] = None if e.empty else self.read_body(e)
        return out

