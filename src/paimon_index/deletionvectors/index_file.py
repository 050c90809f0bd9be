"""Deletion-vector index files: one framed vector per data file, behind a version byte.

Matches Java ``DeletionVectorsIndexFile`` (reading), ``DeletionFileWriter`` and
``DeletionVectorIndexFileWriter`` (writing, rolling). Layout::

    version   1 byte   u8                 1 (``VERSION_ID_V1``)
    vectors   variable                    one frame per data file, back to back, in the writer's
                                          input order (see :mod:`paimon_index.deletionvectors.vector`)

The index manifest records, per data file, a ``DeletionVectorMeta``: ``offset`` = position of
the frame's 4-byte size prefix in the file, ``length`` = the vector's recorded length (32-bit:
magic + bitmap; 64-bit: the whole frame), ``cardinality`` = number of deleted positions. The
``IndexFileMeta`` has type ``DELETION_VECTORS``, ``file_size`` = bytes written and ``row_count`` =
number of vectors.

Rolling (``writeWithRolling``): vectors are written in order; right after a vector is written, if
the file's size (version byte included) is strictly greater than ``deletion-vector.index-file.target-size``
(default 2 MiB) the file is closed and the next vector starts a new one. A file therefore always
holds at least one vector and may exceed the target by its last vector. With no vectors, rolling
writes no file, while the single-file writer writes a 1-byte file (the version byte).

Checked on read: the version byte, that offsets point past it and inside the file, and everything
:func:`~paimon_index.deletionvectors.vector.read_deletion_vector` checks. A range read touches only
the version byte and that vector's bytes.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pypaimon.index.deletion_vector_meta import DeletionVectorMeta
from pypaimon.index.index_file_meta import IndexFileMeta

from paimon_index.binary import ByteReader, ByteWriter, FileSource, Source, open_source
from paimon_index.deletionvectors.vector import (
    FRAME_OVERHEAD_BYTES,
    MAGIC_BYTES,
    SIZE_PREFIX_BYTES,
    DeletionVector,
    read_deletion_vector,
    vector_kind,
)
from paimon_index.errors import CorruptFileError

__all__ = [
    "DEFAULT_TARGET_SIZE",
    "DELETION_VECTORS_INDEX",
    "VERSION_V1",
    "IndexFileContent",
    "StoredVector",
    "WriteFile",
    "check_version",
    "file_path",
    "iter_vectors",
    "local_write",
    "new_index_file_name",
    "opened_source",
    "prefetch_vectors",
    "read_vector",
    "read_vectors",
    "serialize_index_file",
    "serialize_index_files",
    "write_index_files",
]

#: Java ``DeletionVectorsIndexFile.DELETION_VECTORS_INDEX``: the index type in the manifest.
DELETION_VECTORS_INDEX = "DELETION_VECTORS"
#: Java ``DeletionVectorsIndexFile.VERSION_ID_V1``.
VERSION_V1 = 1
VERSION_BYTES = 1
#: Default of ``deletion-vector.index-file.target-size`` (``MemorySize.ofMebiBytes(2)``).
DEFAULT_TARGET_SIZE = 2 * 1024 * 1024
#: Java ``IndexPathFactory``: ``index-<uuid>-<counter>``.
INDEX_FILE_PREFIX = "index-"


@dataclass
class IndexFileContent:
    """One serialized index file: its bytes and the range of each data file's vector."""

    data: bytes
    ranges: dict[str, DeletionVectorMeta] = field(default_factory=dict)

    def to_meta(self, file_name: str, external_path: str | None = None) -> IndexFileMeta:
        """The index manifest's ``IndexFileMeta`` for this content stored as ``file_name``."""
        return IndexFileMeta(index_type=DELETION_VECTORS_INDEX, file_name=file_name,
                             file_size=len(self.data), row_count=len(self.ranges),
                             dv_ranges=dict(self.ranges), external_path=external_path)


@dataclass(frozen=True)
class StoredVector:
    """A vector found by walking an index file, with the range the manifest would record."""

    offset: int
    length: int
    vector: DeletionVector


class _FileBuilder:
    """Accumulates frames after the version byte, recording each range (Java ``DeletionFileWriter``)."""

    def __init__(self) -> None:
        self._out = ByteWriter()
        self._out.i8(VERSION_V1)
        self._ranges: dict[str, DeletionVectorMeta] = {}

    @property
    def size(self) -> int:
        return len(self._out)

    def add(self, data_file: str, vector: DeletionVector) -> None:
        offset = len(self._out)
        frame = vector.serialize()
        self._out.write(frame)
        self._ranges[data_file] = DeletionVectorMeta(data_file, offset, vector.recorded_length(len(frame)),
                                                     vector.get_cardinality())

    def result(self) -> IndexFileContent:
        return IndexFileContent(self._out.getvalue(), self._ranges)


def serialize_index_file(vectors: Mapping[str, DeletionVector]) -> IndexFileContent:
    """All vectors in one file (Java ``writeSingleFile``); no vectors gives the 1-byte file."""
    builder = _FileBuilder()
    for data_file, vector in vectors.items():
        builder.add(data_file, vector)
    return builder.result()


def serialize_index_files(vectors: Mapping[str, DeletionVector],
                          target_size: int = DEFAULT_TARGET_SIZE) -> list[IndexFileContent]:
    """Vectors split into files of about ``target_size`` bytes (Java ``writeWithRolling``)."""
    if target_size <= 0:
        raise ValueError(f"target size must be positive, got {target_size}")
    files: list[IndexFileContent] = []
    builder: _FileBuilder | None = None
    for data_file, vector in vectors.items():
        if builder is None:
            builder = _FileBuilder()
        builder.add(data_file, vector)
        if builder.size > target_size:
            files.append(builder.result())
            builder = None
    if builder is not None:
        files.append(builder.result())
    return files


def new_index_file_name() -> str:
    """A fresh index file name in Paimon's ``index-<uuid>-0`` form."""
    return f"{INDEX_FILE_PREFIX}{uuid.uuid4()}-0"


#: Stores one whole new file, ``write(path, data)``. A table passes its store's writer
#: (``TableIO.write_new``: local disk, S3, OSS, HDFS alike); :func:`local_write` is for files
#: outside any table (the CLI, tests).
WriteFile = Callable[[str, bytes], object]


def local_write(path: str, data: bytes) -> None:
    """Write ``data`` to a local file, creating its directory (a table's index/ folder appears with
    its first file). Not for tables: their files go through the table's store."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def file_path(directory: str | os.PathLike[str], name: str) -> str:
    """``directory/name`` for a local path or a URI (``Path`` would fold ``s3://`` into ``s3:/``)."""
    return posixpath.join(os.fspath(directory), name)


def write_index_files(directory: str | os.PathLike[str], vectors: Mapping[str, DeletionVector], *,
                      write: WriteFile, target_size: int | None = DEFAULT_TARGET_SIZE,
                      name_factory: Callable[[], str] = new_index_file_name) -> list[IndexFileMeta]:
    """Write vectors into ``directory`` with ``write`` and return each file's manifest metadata.

    ``target_size=None`` writes exactly one file (also for no vectors), like Java's single-file
    writer that bucketed tables use; otherwise files roll as in :func:`serialize_index_files`.
    """
    contents = ([serialize_index_file(vectors)] if target_size is None
                else serialize_index_files(vectors, target_size))
    metas = []
    for content in contents:
        name = name_factory()
        write(file_path(directory, name), content.data)
        metas.append(content.to_meta(name))
    return metas


# -- reading -------------------------------------------------------------------------------------
def check_version(source: Source) -> None:
    """The file's first byte must be version 1."""
    reader = ByteReader(source, 0, min(VERSION_BYTES, source.size))
    version = reader.u8("index file version")
    if version != VERSION_V1:
        raise reader.error(f"unsupported version {version}, expected {VERSION_V1}", "index file version", 0)


@contextmanager
def opened_source(source: Source | bytes | bytearray | memoryview | str | os.PathLike[str],
                  ) -> Iterator[Source]:
    """``source`` as a :class:`Source`; a file opened here from a path is closed on exit."""
    if hasattr(source, "read_at"):
        yield source  # type: ignore[misc]
        return
    src = open_source(source)
    try:
        yield src
    finally:
        if isinstance(src, FileSource):
            src.close()


def prefetch_vectors(source: Source, ranges: Iterable[tuple[int, int | None]]) -> None:
    """Over a source read by range: fetch the version byte and the frames at ``(offset, recorded
    length)`` in one coalesced request, so reading them one by one costs no more requests.

    A superset is fetched (the recorded length plus the frame overhead); nothing is checked here.
    """
    prefetch = getattr(source, "prefetch", None)
    if prefetch is None:
        return
    wanted = [(0, VERSION_BYTES)]
    for offset, length in ranges:
        wanted.append((offset, source.size - offset if length is None else length + FRAME_OVERHEAD_BYTES))
    prefetch(wanted)


def read_vector(source: Source | bytes | str | os.PathLike[str], offset: int,
                length: int | None = None) -> DeletionVector:
    """The vector whose frame starts at ``offset``, reading only its bytes (and the version byte).

    ``length`` is the manifest's recorded length, checked against the frame when given.
    """
    with opened_source(source) as src:
        return _read_vector(src, offset, length)


def _read_vector(src: Source, offset: int, length: int | None) -> DeletionVector:
    check_version(src)
    if not VERSION_BYTES <= offset <= src.size:
        raise CorruptFileError(f"offset {offset} outside [{VERSION_BYTES}, {src.size}]", path=src.name,
                               offset=offset, field="deletion vector offset")
    if length is not None and length < 0:
        raise CorruptFileError(f"negative recorded length {length}", path=src.name, offset=offset,
                               field="deletion vector length")
    return read_deletion_vector(ByteReader(src, offset, _frame_end(src, offset, length)), length)


def _frame_end(src: Source, offset: int, length: int | None) -> int:
    """Where the frame at ``offset`` ends, so that no byte past it is read.

    The recorded length means different things in the two formats: peek at the magic (the 8 bytes
    of size and magic belong to any frame) to tell which one applies.
    """
    if length is None:
        return src.size
    head = ByteReader(src, offset, min(src.size, offset + SIZE_PREFIX_BYTES + MAGIC_BYTES))
    head.skip(SIZE_PREFIX_BYTES, "deletion vector size")
    kind = vector_kind(head.i32("deletion vector magic"))
    frame_bytes = length + FRAME_OVERHEAD_BYTES if kind is None else kind.frame_bytes(length)
    return min(src.size, offset + frame_bytes)


def read_vectors(source: Source | bytes | str | os.PathLike[str],
                 ranges: Mapping[str, DeletionVectorMeta]) -> dict[str, DeletionVector]:
    """The vectors of the given data files (Java ``readAllDeletionVectors``), by their ranges."""
    with opened_source(source) as src:
        prefetch_vectors(src, [(meta.offset, meta.length) for meta in ranges.values()])
        return {data_file: _read_vector(src, meta.offset, meta.length) for data_file, meta in ranges.items()}


def iter_vectors(source: Source | bytes | str | os.PathLike[str]) -> Iterator[StoredVector]:
    """Walk the whole file, yielding each vector with its offset and recorded length."""
    with opened_source(source) as src:
        check_version(src)
        reader = ByteReader(src, VERSION_BYTES)
        while reader.remaining:
            offset = reader.pos
            vector = read_deletion_vector(reader)
            yield StoredVector(offset, vector.recorded_length(reader.pos - offset), vector)
