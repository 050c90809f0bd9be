"""A process-wide cache of immutable table metadata, so a driver answering many queries parses
each manifest, index container and deletion vector once.

    cache = metadata_cache()              # the process's cache (one per Python process)
    configure(max_bytes=64 << 20)         # resize; 0 turns caching off (and empties it)
    cache.stats()                         # {"hits", "misses", "evictions", "bytes", "entries", "max_bytes"}

**What is cached, and why that is safe.** Paimon never rewrites a data, manifest, manifest-list,
index-manifest, ``.index`` or DV index file under the same name: every one is named with a UUID
(a rewritten ``.index`` file gets a new ``-<n>`` name), so the parsed contents of a file stay true
as long as its path exists. Entries are keyed by ``(kind, full path[, size or range])``: the full
path holds the warehouse (and the scheme and bucket of an object store), so two tables never share
an entry. Kinds:

* ``manifest``: every entry of one manifest file (with statistics), before any filter -- each scan
  applies its own bucket, partition and statistics filters to them
  (:func:`paimon_index.table.paimon.cached_manifest_reads`);
* ``manifest-list``: the manifest file metadata of one manifest list;
* ``index``: one ``<data-file>.index`` container -- its head, the byte ranges fetched so far and
  the index readers built on them (a range bitmap's dictionary and bit slices stay parsed)
  (:func:`checkout_container`). Unlike the other files, a ``.index`` name is not unique for all
  time: Paimon numbers it after the data file (``f.index``, ``f-1.index``, ...) and, once an
  expiry deleted ``f.index``, a later rewrite of a file that lost its ``.index`` names the new
  one ``f.index`` again. So each use checks the file's size and modification time (one status
  request, which also gives the size an uncached open would ask for) against the cached entry's
  and parses the file afresh when they differ;
* ``dv``: one deletion vector, by (DV index file, offset, length).

**Never cached**: snapshot files, the ``LATEST``/``EARLIEST`` hints, schema files and directory
listings -- a commit must be seen by the very next query.

**Bounded**: least-recently-used entries are dropped once the estimated bytes exceed ``max_bytes``
(default :data:`DEFAULT_MAX_BYTES`; environment variable :data:`MAX_BYTES_ENV` at import, or
:func:`configure`). An entry's weight is an estimate of its memory: the bytes it was parsed from
times a factor for the Python objects (:data:`MANIFEST_WEIGHT_FACTOR`; index and DV entries count
their raw bytes twice, raw plus parsed, and a range bitmap's slices kept as words count their
size). An entry heavier than the whole budget is not kept.
Lookups and inserts are thread-safe; a checked-out index container is used by one thread at a time
(another thread meanwhile opens the file uncached).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import Any

from paimon_index.errors import InvalidOptionError
from paimon_index.fileindex.format import ContainerReader
from paimon_index.table.fileio import FileIOSource, FileStatus, IOCounters, TableIO

__all__ = ["DEFAULT_MAX_BYTES", "MAX_BYTES_ENV", "CachedContainer", "MetadataCache", "checkout_container",
           "configure", "metadata_cache"]

#: Default budget: the parsed metadata of a few thousand data files' bitmap and Bloom indexes, or of
#: ~230 range bitmaps over 400,000 rows each kept as words (~1.1 MB each, docs/read-path.md).
DEFAULT_MAX_BYTES = 256 << 20
#: Environment variable read at import: the cache budget in bytes (0 disables it).
MAX_BYTES_ENV = "PAIMON_INDEX_METADATA_CACHE_BYTES"
#: Decoded manifest entries (Python objects) weigh about this many times their Avro bytes.
MANIFEST_WEIGHT_FACTOR = 16
#: Raw bytes kept plus the bitmaps parsed from them.
PARSED_WEIGHT_FACTOR = 2
#: Floor of any entry's weight (the key, the object headers).
MIN_ENTRY_WEIGHT = 512


class MetadataCache:
    """An LRU map bounded by the estimated bytes of its values (see the module docstring)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._max_bytes = _checked(max_bytes, "max_bytes")
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def enabled(self) -> bool:
        return self._max_bytes > 0

    def resize(self, max_bytes: int) -> None:
        """Set the budget (0: off), evicting down to it at once."""
        with self._lock:
            self._max_bytes = _checked(max_bytes, "max_bytes")
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def get(self, key: Hashable) -> Any | None:
        """The value of ``key`` (None on a miss), now the most recently used."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: Hashable, value: Any, weight: int) -> None:
        """Keep ``value`` under ``key`` (replacing any), weighing ``weight`` bytes."""
        weight = max(int(weight), MIN_ENTRY_WEIGHT)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            if weight > self._max_bytes:
                return  # off, or larger than the whole budget
            self._entries[key] = (value, weight)
            self.bytes += weight
            self._evict()

    def reweigh(self, key: Hashable, weight: int) -> None:
        """A value grew (more of its file was parsed): account its new weight."""
        weight = max(int(weight), MIN_ENTRY_WEIGHT)
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return
            if weight > self._max_bytes:
                del self._entries[key]
                self.bytes -= found[1]
                self.evictions += 1
                return
            self._entries[key] = (found[0], weight)
            self._entries.move_to_end(key)  # just used
            self.bytes += weight - found[1]
            self._evict()

    def discard(self, key: Hashable) -> None:
        with self._lock:
            found = self._entries.pop(key, None)
            if found is not None:
                self.bytes -= found[1]

    def _evict(self) -> None:
        while self.bytes > self._max_bytes and self._entries:
            _, (_, weight) = self._entries.popitem(last=False)
            self.bytes -= weight
            self.evictions += 1

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def entry_keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._entries)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "evictions": self.evictions,
                    "bytes": self.bytes, "entries": len(self._entries), "max_bytes": self._max_bytes}


def _checked(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidOptionError(f"metadata cache {name} must be a non-negative integer of bytes, "
                                 f"got {value!r}")
    return value


def _from_environment() -> int:
    text = os.environ.get(MAX_BYTES_ENV)
    if text is None or not text.strip():
        return DEFAULT_MAX_BYTES
    try:
        return _checked(int(text.strip()), MAX_BYTES_ENV)
    except ValueError:
        raise InvalidOptionError(f"{MAX_BYTES_ENV} must be a non-negative integer of bytes, "
                                 f"got {text!r}") from None


_CACHE = MetadataCache(_from_environment())


def metadata_cache() -> MetadataCache:
    """The process's metadata cache."""
    return _CACHE


def configure(max_bytes: int) -> MetadataCache:
    """Resize the process's metadata cache (``0`` turns it off and empties it)."""
    _CACHE.resize(max_bytes)
    return _CACHE


# -- index containers ---------------------------------------------------------------------------------

class _KeptSource(FileIOSource):
    """A :class:`FileIOSource` whose fetched spans outlive each use; its stream is reopened on
    demand, and each use counts its requests to the scan that uses it (:meth:`bind`)."""

    def bind(self, io: TableIO, tally: IOCounters | None) -> None:
        self._io = io
        self._tally = tally

    def release(self) -> None:
        """Close the stream (no file handle is held between queries); keep the spans."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def close(self) -> None:  # the container's own close() must not drop the spans
        self.release()

    @property
    def kept_bytes(self) -> int:
        return sum(len(data) for _, data in self._spans)


class CachedContainer:
    """One ``.index`` file's container and the index readers built on it, shared across queries."""

    def __init__(self, source: _KeptSource, container: ContainerReader, version: tuple[Any, ...]) -> None:
        self.source = source
        self.container = container
        #: (size, modification time) of the file the entry was parsed from.
        self.version = version
        #: Index readers by (column, index type, column type): FileIndexEvaluator's ``readers``.
        self.readers: dict[Any, Any] = {}
        self.lock = threading.Lock()

    @property
    def weight(self) -> int:
        # Raw bytes plus what was parsed from them, plus what readers keep beyond that (a range
        # bitmap's slices as 64-bit words).
        extra = sum(int(getattr(reader, "cached_bytes", 0)) for reader in self.readers.values()
                    if reader is not None)
        return PARSED_WEIGHT_FACTOR * self.source.kept_bytes + extra


@contextmanager
def checkout_container(io: TableIO, path: str, tally: IOCounters | None = None
                       ) -> Iterator[tuple[ContainerReader, dict[Any, Any] | None, bool]]:
    """``(container, shared readers or None, cache hit)`` of the ``.index`` file at ``path``.

    With the cache on, the container comes from (or goes into) the cache, its reads counted on
    ``io``/``tally`` for this use; otherwise (or while another thread uses the cached one) the
    file is opened for this use only and closed after.
    """
    cache = _CACHE
    key = ("index", path)
    cached: CachedContainer | None = None
    status: FileStatus | None = None
    version: tuple[Any, ...] = ()
    if cache.enabled:
        try:
            status = io.status(path)
        except OSError:
            status = None  # the uncached open below raises the error a reader reports
        if status is not None:
            version = (status.size, status.mtime)
            cached = cache.get(key)
            if cached is not None and cached.version != version:
                cache.discard(key)  # the name now holds another file (see the module docstring)
                cached = None
    hit = cached is not None
    if cached is None and cache.enabled and status is not None:
        source = _KeptSource(io, path, size=status.size, tally=tally)
        try:
            cached = CachedContainer(source, ContainerReader(source), version)
        except BaseException:
            source.release()
            raise
        cache.put(key, cached, cached.weight)
    if cached is None or not cached.lock.acquire(blocking=False):
        container = ContainerReader(io.source(path, tally=tally), owns_source=True)
        try:
            yield container, None, False
        finally:
            container.close()
        return
    try:
        cached.source.bind(io, tally)
        yield cached.container, cached.readers, hit
    except BaseException:
        cache.discard(key)  # a corrupt body or a failed read: parse afresh next time
        raise
    finally:
        cached.source.release()
        cached.source.bind(io, None)
        cached.lock.release()
        cache.reweigh(key, cached.weight)
