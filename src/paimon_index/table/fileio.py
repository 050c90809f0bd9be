"""The one seam for every byte a table path reads or writes: the table's pypaimon ``FileIO``.

A warehouse may be a local directory, ``s3://``, ``oss://`` or ``hdfs://``; pypaimon's catalog
gives each table a ``file_io`` for its scheme (built from the catalog options, ``fs.s3.endpoint``
...). Everything in paimon-index that touches a file of a table -- index containers, Parquet data
files, deletion-vector and hash-index files, snapshot listings, orphan removal -- goes through a
:class:`TableIO` over that ``file_io``, never ``open()``, ``os.*`` or a bare path given to pyarrow.

Object stores charge per request and per round trip, so the seam counts both
(:class:`IOCounters`), and reads by range: :class:`FileIOSource` is a
:class:`paimon_index.binary.Source` that keeps one input stream open, serves ``read_at`` from
spans fetched earlier by :meth:`FileIOSource.prefetch` (near ranges coalesced into one request),
and otherwise issues one ranged read per call. Parquet files are read through a counting stream
(footer and column chunks by range, a read's chunks fetched first, near ones together:
:class:`_SerialParquetFile`).

Every reading call takes an optional ``tally`` (another :class:`IOCounters`) that counts the same
requests again, so a caller (a scan, one task) can see its own share while the table's counters
sum everything.

Only the duck-typed ``FileIO`` surface is used (``new_input_stream``, ``new_output_stream``,
``exists``, ``delete``, ``list_status``, ``get_file_status``, ``mkdirs``, ``properties``); nothing
here imports pypaimon.

**Atomic create** (:meth:`TableIO.create_exclusive`, how a snapshot file is published): write a file
only if no file of that name exists, atomically across processes and machines. Local file system:
``os.link`` of a temporary file (fails with ``EEXIST``). ``s3://``: one conditional PUT
(``If-None-Match: *``, AWS S3 since 2024; a store that already holds the key answers 412), sent with
boto3 because pyarrow's S3 file system cannot set the header — boto3 is the optional extra ``s3``.
Any other store (``oss://``, ``hdfs://``, ``gs://`` through pypaimon's check-then-rename) has no
atomic create here: :class:`NoAtomicCreateError`, unless the catalog option
``fs.allow-non-atomic-commit`` is ``true`` (the user vouches for a single writer).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import posixpath
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from paimon_index.errors import CorruptFileError, EnvironmentCheckError, NoAtomicCreateError

__all__ = ["ALLOW_NON_ATOMIC_OPTION", "COALESCE_GAP_BYTES", "FileIOSource", "FileStatus", "IOCounters",
           "NoAtomicCreateError", "TableIO", "coalesce"]

#: Catalog option: publish snapshots on a store without an atomic create anyway (one writer only).
ALLOW_NON_ATOMIC_OPTION = "fs.allow-non-atomic-commit"
#: URI schemes served by S3's API with conditional PUT (pypaimon's PyArrowFileIO takes the same three).
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
#: Prefixes pypaimon accepts for the S3 options (``fs.s3.endpoint``, ``s3.endpoint`` ...).
S3_OPTION_PREFIXES = ("fs.s3.", "s3.", "s3a.", "fs.s3a.")
#: HTTP status of a conditional PUT whose key exists (412) or is being created by another PUT (409).
_PRECONDITION_FAILED, _CONDITIONAL_CONFLICT = 412, 409


#: Two wanted ranges closer than this are fetched as one request (the gap is read and dropped):
#: on an object store a round trip costs far more than 1 MiB of transfer.
COALESCE_GAP_BYTES = 1 << 20
#: One coalesced request never spans more than this.
COALESCE_MAX_SPAN_BYTES = 64 << 20


@dataclass
class IOCounters:
    """Requests and bytes through one :class:`TableIO` (thread-safe; summed over its sources)."""

    read_requests: int = 0
    bytes_read: int = 0
    write_requests: int = 0
    bytes_written: int = 0
    list_requests: int = 0
    other_requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    @property
    def requests(self) -> int:
        """Every request counted: reads, writes, listings, opens and other metadata calls."""
        return self.read_requests + self.write_requests + self.list_requests + self.other_requests

    def as_dict(self) -> dict[str, int]:
        """Every counter by name (derived from the fields, so a new counter is never left out)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.compare}

    def __getstate__(self) -> dict[str, int]:
        return self.as_dict()

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


@dataclass(frozen=True)
class FileStatus:
    """One entry of a directory listing."""

    path: str
    name: str
    size: int | None
    is_dir: bool
    #: Modification time in seconds since the epoch (None when the store does not say).
    mtime: float | None


def _mtime(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value)


def coalesce(ranges: Iterable[tuple[int, int]], gap: int = COALESCE_GAP_BYTES,
             max_span: int = COALESCE_MAX_SPAN_BYTES) -> list[tuple[int, int]]:
    """Sorted ``(offset, length)`` spans covering ``ranges``, near ones merged into one."""
    spans: list[list[int]] = []
    for offset, length in sorted((o, n) for o, n in ranges if n > 0):
        end = offset + length
        if spans and offset - spans[-1][1] <= gap and end - spans[-1][0] <= max_span:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([offset, end])
    return [(start, end - start) for start, end in spans]


class FileIOSource:
    """A :class:`paimon_index.binary.Source` over one file of a ``FileIO``, read by range."""

    def __init__(self, io: TableIO, path: str, size: int | None = None,
                 tally: IOCounters | None = None) -> None:
        self.name = path
        self._io = io
        self._tally = tally
        self._stream: Any = None
        #: Bytes handed out to the parser so far.
        self.bytes_read = 0
        #: Requests this source issued (ranged reads; the open counts in ``other_requests``).
        self.requests = 0
        self._spans: list[tuple[int, bytes]] = []
        # Unknown size: the opened stream knows it (an object store's open is the HEAD request
        # that learns it), so no separate status call.
        self.size = size if size is not None else _stream_size(self._open())

    def _count(self, **counts: int) -> None:
        self._io.counters.add(**counts)
        if self._tally is not None:
            self._tally.add(**counts)

    def _open(self) -> Any:
        if self._stream is None:
            self._stream = self._io.input_stream(self.name)
            self._count(other_requests=1)
        return self._stream

    def _fetch(self, offset: int, length: int) -> bytes:
        stream = self._open()
        stream.seek(offset)
        data = stream.read(length)
        self.requests += 1
        self._count(read_requests=1, bytes_read=len(data))
        if len(data) != length:
            raise CorruptFileError(f"file ended after {len(data)} of {length} bytes",
                                   path=self.name, offset=offset + len(data))
        return bytes(data)

    def prefetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Fetch ``ranges`` now, near ones in one request; later ``read_at`` inside them is free.

        Ranges are clipped to the file (a caller may ask for "up to n bytes from here").
        """
        wanted = []
        for offset, length in ranges:
            end = min(offset + length, self.size)
            offset = max(offset, 0)
            for start, data in sorted(self._spans):  # skip what is already here
                if start <= offset < start + len(data):
                    offset = start + len(data)
            if offset < end:
                wanted.append((offset, end - offset))
        for offset, length in coalesce(wanted):
            self._spans.append((offset, self._fetch(offset, length)))
        self._merge_spans()

    def _merge_spans(self) -> None:
        """Join touching or overlapping spans, so a read across their border is served too."""
        merged: list[tuple[int, bytes]] = []
        for start, data in sorted(self._spans, key=lambda span: span[0]):
            if merged and start <= merged[-1][0] + len(merged[-1][1]):
                first, head = merged[-1]
                tail = data[first + len(head) - start:]
                merged[-1] = (first, head + tail if tail else head)
            else:
                merged.append((start, data))
        self._spans = merged

    def _cached(self, offset: int, length: int) -> memoryview | None:
        for start, data in self._spans:
            if start <= offset and offset + length <= start + len(data):
                return memoryview(data)[offset - start: offset - start + length]
        return None

    def read_at(self, offset: int, length: int) -> memoryview | bytes:
        data: memoryview | bytes | None = self._cached(offset, length)
        if data is None:
            data = self._fetch(offset, length)
        self.bytes_read += len(data)
        return data

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._spans = []

    def __enter__(self) -> FileIOSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stream_size(stream: Any) -> int:
    """The size of an open input stream: pyarrow's ``NativeFile.size()``, else seek to the end."""
    size = getattr(stream, "size", None)
    if callable(size):
        return int(size())
    at = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(at)
    return int(end)


class _CountingStream:
    """A read-only file object over an input stream that counts every read (for pyarrow), with
    spans fetched ahead (:meth:`prefetch`) served from memory."""

    def __init__(self, stream: Any, count: Any) -> None:
        self._stream = stream
        self._count = count
        self._position = 0
        self._spans: list[tuple[int, bytes]] = []
        self.closed = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def prefetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Fetch ``ranges`` now, near ones in one counted request each (:func:`coalesce`); reads
        inside them are then served from memory. Replaces what was fetched before."""
        spans = []
        for offset, length in coalesce(ranges):
            self._stream.seek(offset)
            data = self._stream.read(length)
            self._count(read_requests=1, bytes_read=len(data))
            spans.append((offset, data if isinstance(data, bytes) else bytes(data)))
        self._spans = spans

    def read(self, n: int = -1) -> bytes | memoryview:
        if n is not None and n >= 0:
            for start, data in self._spans:
                if start <= self._position and self._position + n <= start + len(data):
                    at = self._position - start
                    self._position += n
                    # A view, not a copy: pyarrow takes any buffer, and a slice of bytes copied
                    # every column chunk it read once more (~5% of a 20M-row selective read).
                    return memoryview(data)[at:at + n]
        self._stream.seek(self._position)
        data = self._stream.read() if n is None or n < 0 else self._stream.read(n)
        self._count(read_requests=1, bytes_read=len(data))
        self._position += len(data)
        return bytes(data) if not isinstance(data, bytes) else data

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 0:
            self._position = offset
        elif whence == 1:
            self._position += offset
        else:
            self._position = self.size() + offset
        return self._position

    def tell(self) -> int:
        return self._position

    def size(self) -> int:
        return _stream_size(self._stream)

    def close(self) -> None:
        self.closed = True
        self._spans = []
        self._stream.close()


def _in_column(path: str, column: str) -> bool:
    """A leaf column's dotted ``path`` belongs to the requested ``column`` (a field or a nested path)."""
    return path == column or path.startswith(column + ".")


class _SerialParquetFile(pq.ParquetFile):
    """A ``ParquetFile`` whose reads decode in the calling thread (``use_threads=False``).

    Over a Python file object every column chunk is a buffer of Python bytes. With pyarrow's threads,
    a worker drops the last reference to a column reader just *after* the read returns; when the
    interpreter is exiting by then, freeing those bytes needs the GIL, the worker is killed while
    unwinding and the process aborts ("terminate called without an active exception", exit code 134)
    — a script ending with ``table.count()`` did so about one run in three. Reads in one thread free
    everything before they return. For the same reason pyarrow's ``pre_buffer`` is off: its I/O
    threads call the Python stream and drop the Python buffers they read, and a script exiting as
    they did aborted the same way (1 run in 24 with four such scripts at once). What it saved is
    done here in the reading thread: a read first fetches the column chunks it needs, near ones in
    one request (:meth:`_CountingStream.prefetch`).
    """

    def __init__(self, source: _CountingStream, **kwargs: Any) -> None:
        super().__init__(source, **kwargs)
        self._counting = source

    def with_dictionary(self, columns: Sequence[str]) -> _SerialParquetFile:
        """A reader over the same stream and footer that reads ``columns`` (strings, binary) as
        Arrow dictionaries: their pages' indices decoded, not every value -- for a caller that keeps
        a few rows of a dictionary-encoded chunk. (A chunk whose dictionary overflowed to plain
        pages is slower so: its values are hashed into a dictionary.)"""
        return _SerialParquetFile(self._counting, pre_buffer=False, metadata=self.metadata,
                                  read_dictionary=list(columns))

    def _prefetch(self, row_groups: Iterable[int], columns: Sequence[str] | None) -> None:
        meta = self.metadata
        leaves = [i for i in range(meta.num_columns)
                  if columns is None or any(_in_column(meta.schema.column(i).path, c) for c in columns)]
        ranges = []
        for group in row_groups:
            chunks = meta.row_group(group)
            for i in leaves:
                chunk = chunks.column(i)
                start = chunk.data_page_offset
                if chunk.has_dictionary_page and chunk.dictionary_page_offset:
                    start = min(start, chunk.dictionary_page_offset)
                ranges.append((start, chunk.total_compressed_size))
        self._counting.prefetch(ranges)

    def read(self, columns: Sequence[str] | None = None, use_threads: bool = False,
             **kwargs: Any) -> pa.Table:
        self._prefetch(range(self.metadata.num_row_groups), columns)
        return super().read(columns=columns, use_threads=use_threads, **kwargs)

    def read_row_groups(self, row_groups: Sequence[int], columns: Sequence[str] | None = None,
                        use_threads: bool = False, **kwargs: Any) -> pa.Table:
        self._prefetch(row_groups, columns)
        return super().read_row_groups(row_groups, columns=columns, use_threads=use_threads, **kwargs)

    def read_row_group(self, i: int, columns: Sequence[str] | None = None,
                       use_threads: bool = False, **kwargs: Any) -> pa.Table:
        self._prefetch([i], columns)
        return super().read_row_group(i, columns=columns, use_threads=use_threads, **kwargs)

    def iter_batches(self, *args: Any, use_threads: bool = False, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        return super().iter_batches(*args, use_threads=use_threads, **kwargs)


class TableIO:
    """A table's ``FileIO`` with request counting: read, write, list, delete by path."""

    def __init__(self, file_io: Any, counters: IOCounters | None = None) -> None:
        self.file_io = file_io
        self.counters = counters if counters is not None else IOCounters()

    @classmethod
    def of(cls, table: Any) -> TableIO:
        """The seam over a pypaimon table's ``file_io``."""
        return cls(table.file_io)

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to executors with a split: the file_io pickles (pypaimon's FileIOs do); the
        # counters start afresh there (each task reports its own).
        return {"file_io": self.file_io}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.file_io = state["file_io"]
        self.counters = IOCounters()

    @property
    def is_local(self) -> bool:
        """Whether paths are on the local file system (where ``os.link`` gives an atomic create)."""
        return type(self.file_io).__name__ == "LocalFileIO"

    # -- reading ---------------------------------------------------------------------------------

    def source(self, path: str, size: int | None = None, tally: IOCounters | None = None) -> FileIOSource:
        """A ranged-read :class:`~paimon_index.binary.Source` (``size`` known saves a request)."""
        return FileIOSource(self, path, size, tally)

    def input_stream(self, path: str) -> Any:
        """The FileIO's input stream of ``path``; a missing file is a ``FileNotFoundError`` whose
        ``filename`` is the path (FileIOs differ in how they say it)."""
        try:
            return self.file_io.new_input_stream(path)
        except FileNotFoundError as e:
            if e.filename:
                raise
            raise FileNotFoundError(errno.ENOENT, f"no such file ({e})", path) from e

    def read_bytes(self, path: str) -> bytes:
        with self.input_stream(path) as stream:
            data = bytes(stream.read())
        self.counters.add(read_requests=1, bytes_read=len(data))
        return data

    def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]],
                    size: int | None = None) -> list[bytes]:
        """The bytes of each ``(offset, length)`` of one file, near ranges fetched together."""
        end = size if size is not None else max((o + n for o, n in ranges), default=0)
        with self.source(path, end) as src:
            src.prefetch(ranges)
            return [bytes(src.read_at(o, n)) for o, n in ranges]

    @contextmanager
    def parquet(self, path: str, tally: IOCounters | None = None) -> Iterator[pq.ParquetFile]:
        """A Parquet reader over the file's stream (footer and column chunks by range), closed after.

        Every read pyarrow makes is counted (``read_requests``/``bytes_read``), each made by the
        calling thread; a read's column chunks are fetched first, near ones in one request
        (:class:`_SerialParquetFile`, in place of pyarrow's ``pre_buffer``).
        """
        def count(**counts: int) -> None:
            self.counters.add(**counts)
            if tally is not None:
                tally.add(**counts)

        stream = _CountingStream(self.input_stream(path), count)
        count(other_requests=1)
        try:
            yield _SerialParquetFile(stream, pre_buffer=False)
        finally:
            stream.close()

    # -- metadata --------------------------------------------------------------------------------

    def size(self, path: str) -> int:
        self.counters.add(other_requests=1)
        status = self.file_io.get_file_status(path)
        return int(status.size)

    def status(self, path: str) -> FileStatus:
        """The size and modification time of the file at ``path`` (one request)."""
        self.counters.add(other_requests=1)
        found = self.file_io.get_file_status(path)
        return FileStatus(path=path, name=posixpath.basename(path), size=int(found.size), is_dir=False,
                          mtime=_mtime(getattr(found, "mtime", None)))

    def exists(self, path: str) -> bool:
        self.counters.add(other_requests=1)
        return bool(self.file_io.exists(path))

    def list(self, directory: str) -> list[FileStatus]:
        """The entries directly in ``directory`` (empty when it does not exist), sorted by name."""
        self.counters.add(list_requests=1)
        entries = []
        for status in self.file_io.list_status(directory) or ():
            name = getattr(status, "base_name", None) or posixpath.basename(str(status.path).rstrip("/"))
            is_dir = getattr(status.type, "name", str(status.type)) == "Directory"
            entries.append(FileStatus(path=posixpath.join(directory, name), name=name,
                                      size=None if is_dir else status.size, is_dir=is_dir,
                                      mtime=_mtime(getattr(status, "mtime", None))))
        return sorted(entries, key=lambda e: e.name)

    # -- writing ---------------------------------------------------------------------------------

    def write_bytes(self, path: str, data: bytes | bytearray | memoryview, *,
                    overwrite: bool = False) -> None:
        """Write a whole file (refuses an existing one unless ``overwrite``)."""
        if not overwrite and self.exists(path):
            raise FileExistsError(path)
        with self.file_io.new_output_stream(path) as out:
            out.write(data)
        self.counters.add(write_requests=1, bytes_written=len(data))

    def delete(self, path: str) -> bool:
        """Delete one file; False when it was not there."""
        self.counters.add(other_requests=1)
        try:
            return bool(self.file_io.delete(path, False))
        except FileNotFoundError:
            return False

    def delete_quietly(self, path: str) -> None:
        self.counters.add(other_requests=1)
        self.file_io.delete_quietly(path)

    def write_new(self, path: str, data: bytes | bytearray | memoryview) -> None:
        """Write a file under a fresh unique name (``index-<uuid>-0``): no existence check first,
        which would cost a request per file on an object store."""
        with self.file_io.new_output_stream(path) as out:
            out.write(data)
        self.counters.add(write_requests=1, bytes_written=len(data))

    def read_text(self, path: str) -> str | None:
        """A small text file (hint, JSON metadata); None when it does not exist."""
        try:
            return self.read_bytes(path).decode("utf-8")
        except FileNotFoundError:
            return None

    def write_text(self, path: str, text: str) -> None:
        """Replace a small text file in one request (an object store PUT replaces atomically; on a
        local file system a temporary file is renamed over it)."""
        data = text.encode("utf-8")
        if self.is_local:
            local = self.file_io.to_filesystem_path(path)
            os.makedirs(os.path.dirname(local), exist_ok=True)
            temp = _temp_name(local)  # unique per writer and thread
            with open(temp, "wb") as out:
                out.write(data)
            os.replace(temp, local)
        else:
            with self.file_io.new_output_stream(path) as out:
                out.write(data)
        self.counters.add(write_requests=1, bytes_written=len(data))

    # -- atomic create ---------------------------------------------------------------------------

    @property
    def scheme(self) -> str:
        """The URI scheme of the warehouse the ``FileIO`` was made for ("file" when local)."""
        if self.is_local:
            return "file"
        warehouse = str(self._properties().get("warehouse", ""))
        return urlparse(warehouse).scheme.lower() or "file"

    def _properties(self) -> dict[str, str]:
        props = getattr(self.file_io, "properties", None)
        to_map = getattr(props, "to_map", None)
        return dict(to_map()) if callable(to_map) else dict(props or {})

    def supports_atomic_create(self) -> bool:
        return self.is_local or self.scheme in S3_SCHEMES

    def check_atomic_create(self) -> None:
        """Raise now what :meth:`create_exclusive` would raise (before an operation writes files).

        Raises:
            NoAtomicCreateError: no atomic create on this store and no opt-out.
            EnvironmentCheckError: an ``s3://`` table without boto3.
        """
        if self.is_local or self.allows_non_atomic():
            return
        if self.scheme in S3_SCHEMES:
            _s3_client(tuple(sorted(self._s3_settings().items())))
            return
        raise self._no_atomic_create()

    def allows_non_atomic(self) -> bool:
        """The user set :data:`ALLOW_NON_ATOMIC_OPTION` (a single writer)."""
        return str(self._properties().get(ALLOW_NON_ATOMIC_OPTION, "false")).lower() == "true"

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` holding ``data`` only if it does not exist; False when it does.

        Atomic across processes and machines: of several writers of one path exactly one gets
        True. An exception means the outcome is unknown (the file may exist).

        Raises:
            NoAtomicCreateError: the store has no atomic create (see the module docstring).
            EnvironmentCheckError: an ``s3://`` table without boto3 (``pip install 'paimon-index[s3]'``).
        """
        if self.is_local:
            created = self._create_local(self.file_io.to_filesystem_path(path), data)
        elif self.scheme in S3_SCHEMES:
            created = self._create_s3(path, data)
        elif self.allows_non_atomic():
            created = self._create_check_then_write(path, data)
        else:
            raise self._no_atomic_create(path)
        return created

    def _no_atomic_create(self, path: str | None = None) -> NoAtomicCreateError:
        what = f"cannot publish {path}: a" if path else "A"
        return NoAtomicCreateError(
            f"{what} '{self.scheme}://' store has no atomic create-if-absent here, so two writers could "
            "both publish the same snapshot and one would be lost. Use a local or s3:// warehouse, or set "
            f"the catalog option '{ALLOW_NON_ATOMIC_OPTION}' = 'true' if only one writer ever commits to "
            "this table")

    def _create_local(self, target: str, data: bytes) -> bool:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        temp = _temp_name(target)
        with open(temp, "wb") as out:
            out.write(data)  # no fsync: as durable as Paimon's own commit
        self.counters.add(write_requests=1, bytes_written=len(data))
        try:
            # link() never replaces an existing name: of two writers, exactly one wins.
            os.link(temp, target)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
                raise
            # No hard links here: an exclusive create of the final name is the next best guard.
            try:
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)

    def _create_s3(self, path: str, data: bytes) -> bool:
        from botocore.exceptions import ClientError

        parsed = urlparse(path)
        bucket, key = parsed.netloc, parsed.path.lstrip("/")
        client = _s3_client(tuple(sorted(self._s3_settings().items())))
        self.counters.add(write_requests=1, bytes_written=len(data))
        try:
            client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except ClientError as e:
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status not in (_PRECONDITION_FAILED, _CONDITIONAL_CONFLICT):
                raise
            # The key exists, or another writer's create of it is in flight. It may be our own PUT:
            # boto3 retries one whose answer was lost, and the retry sees the first attempt's object.
            return self._holds(client, bucket, key, data)
        return True

    def _holds(self, client: Any, bucket: str, key: str, data: bytes) -> bool:
        from botocore.exceptions import ClientError

        try:
            body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError:
            return False  # 409: not there yet, and the in-flight create is another writer's
        self.counters.add(read_requests=1, bytes_read=len(body))
        return bytes(body) == bytes(data)

    def _s3_settings(self) -> dict[str, str]:
        """The catalog's S3 options, looked up under every prefix pypaimon accepts."""
        props = self._properties()

        def get(*names: str) -> str | None:
            for name in names:
                for prefix in S3_OPTION_PREFIXES:
                    if prefix + name in props:
                        return str(props[prefix + name])
            return None

        settings = {"endpoint": get("endpoint"), "region": get("region"),
                    "access_key": get("accessKeyId", "access-key", "access.key"),
                    "secret_key": get("accessKeySecret", "secret-key", "secret.key"),
                    "token": get("securityToken", "session-token", "session.token", "security-token",
                                 "security.token"),
                    "path_style": get("path-style-access", "path.style.access")}
        return {k: v for k, v in settings.items() if v is not None}

    def _create_check_then_write(self, path: str, data: bytes) -> bool:
        # The user accepted the race (ALLOW_NON_ATOMIC_OPTION): one writer only.
        if self.exists(path):
            return False
        self.write_new(path, data)
        return True


def _temp_name(path: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.{uuid.uuid4()}.tmp")


@functools.lru_cache(maxsize=16)
def _s3_client(settings: tuple[tuple[str, str], ...]) -> Any:
    """One boto3 client per distinct S3 configuration (making one costs ~0.1 s)."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError as e:
        raise EnvironmentCheckError(
            "committing to an s3:// table needs boto3 for its conditional PUT (pyarrow cannot send "
            "If-None-Match): pip install 'paimon-index[s3]'") from e
    given = dict(settings)
    endpoint = given.get("endpoint")
    if endpoint and "://" not in endpoint:
        endpoint = "https://" + endpoint  # pyarrow's default scheme for an endpoint override
    path_style = given.get("path_style", "false").lower() == "true"
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name=given.get("region"),
        aws_access_key_id=given.get("access_key"), aws_secret_access_key=given.get("secret_key"),
        aws_session_token=given.get("token"),
        config=Config(s3={"addressing_style": "path" if path_style else "auto"},
                      retries={"max_attempts": 5, "mode": "standard"}))
