"""One bucket's deletion vectors across a commit: restore, add deletions, write, describe the change.

Matches Java ``BucketedDvMaintainer`` (and its ``Factory.create`` restore path). State: the bucket's
current vectors ``{data file name -> DeletionVector}`` and the ``DELETION_VECTORS`` index files they
came from. A commit (:meth:`BucketDvMaintainer.prepare_commit`) serializes *all* current vectors
into one new index file (layout: :mod:`paimon_index.deletionvectors.index_file`) and yields the
index-manifest entries for it, as pypaimon ``IndexManifestEntry`` objects::

    kind      int   0 = ADD, 1 = DELETE   (Paimon's ``FileKind`` byte)
    partition GenericRow                  the bucket's partition
    bucket    int                         the bucket
    index_file IndexFileMeta              type DELETION_VECTORS, name, size, vector count, ranges

DELETE entries (one per previous index file) come first, then the ADD of the new file, so both
Paimon combiners accept the list (the bucketed one replaces by (partition, bucket, type); the
bucket-unaware one refuses to add a data file's vector twice before the old one is deleted).

Differences from Java, on purpose: when no vector is left, no file is written and only the DELETE
entries are produced (Java writes and adds a 1-byte file holding just the version byte; both leave
the bucket without vectors). Java emits no DELETE entries for bucketed tables and relies on the
bucketed combiner to replace the old entry; ours are redundant there but make the change explicit.
Vectors are written in insertion order (Java: ``HashMap`` order); only the offsets differ, which
the entries record. One file per bucket, never rolled: the bucketed combiner keeps a single entry
per (partition, bucket, type), so a second file would be lost.

Nothing here reads or writes the manifest files themselves or knows about Spark.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.table.row.generic_row import GenericRow
from pypaimon.table.source.deletion_file import DeletionFile

from paimon_index.binary import Source
from paimon_index.deletionvectors.index_file import (
    DELETION_VECTORS_INDEX,
    IndexFileContent,
    WriteFile,
    file_path,
    new_index_file_name,
    opened_source,
    read_vector,
    read_vectors,
    serialize_index_file,
)
from paimon_index.deletionvectors.vector import DeletionVector, new_deletion_vector

__all__ = ["KIND_ADD", "KIND_DELETE", "BucketDvMaintainer", "DeletionVectorCommit", "OpenIndexFile"]

#: Paimon ``FileKind.ADD`` / ``FileKind.DELETE`` as stored in ``IndexManifestEntry.kind``.
KIND_ADD = 0
KIND_DELETE = 1

#: Opens an index file given its manifest metadata: in-memory bytes, a path, or a :class:`Source`.
OpenIndexFile = Callable[[IndexFileMeta], "Source | bytes | str | os.PathLike[str]"]


@dataclass
class DeletionVectorCommit:
    """What one commit of a bucket changes: a new index file (if any) and the manifest entries."""

    entries: list[IndexManifestEntry] = field(default_factory=list)
    new_file_name: str | None = None
    new_file: IndexFileContent | None = None

    @property
    def is_empty(self) -> bool:
        return not self.entries

    @property
    def added(self) -> list[IndexManifestEntry]:
        return [e for e in self.entries if e.kind == KIND_ADD]

    @property
    def deleted(self) -> list[IndexManifestEntry]:
        return [e for e in self.entries if e.kind == KIND_DELETE]

    def write_to(self, directory: str | os.PathLike[str], *, write: WriteFile) -> str | None:
        """Store the new index file (if there is one) in ``directory`` with ``write`` (the table's
        store: on S3 a bare path would land on the local disk of whoever runs this); returns its path."""
        if self.new_file is None or self.new_file_name is None:
            return None
        path = file_path(directory, self.new_file_name)
        write(path, self.new_file.data)
        return path


class BucketDvMaintainer:
    """The current deletion vectors of one (partition, bucket) and the index files holding them."""

    def __init__(self, partition: GenericRow, bucket: int, *, bitmap64: bool = False,
                 vectors: Mapping[str, DeletionVector] | None = None,
                 index_files: Sequence[IndexFileMeta] = ()) -> None:
        self.partition = partition
        self.bucket = bucket
        self.bitmap64 = bitmap64
        self._vectors: dict[str, DeletionVector] = dict(vectors or {})
        self._index_files: list[IndexFileMeta] = list(index_files)
        self._modified = False

    # -- restoring -------------------------------------------------------------------------------
    @classmethod
    def restore(cls, entries: Iterable[IndexManifestEntry], open_index_file: OpenIndexFile, *,
                partition: GenericRow | None = None, bucket: int | None = None,
                bitmap64: bool = False, live_files: Iterable[str] | None = None) -> BucketDvMaintainer:
        """Load the vectors listed by a bucket's ``DELETION_VECTORS`` manifest entries.

        Entries of other index types (e.g. ``HASH``) are ignored. ``partition`` and ``bucket``
        default to those of the entries; all entries must agree with them. With ``live_files`` (the
        bucket's data files in the snapshot the entries come from), vectors of any other data file
        are dropped and the maintainer is left modified, so the next commit writes an index file
        without them: a vector of a file that is gone must never be committed again (Paimon refuses
        such a commit, and every later one on the bucket).
        """
        dv_entries = [e for e in entries if e.index_file.index_type == DELETION_VECTORS_INDEX]
        if partition is None or bucket is None:
            if not dv_entries:
                raise ValueError("partition and bucket are needed when there are no entries to restore")
            partition = dv_entries[0].partition if partition is None else partition
            bucket = dv_entries[0].bucket if bucket is None else bucket
        maintainer = cls(partition, bucket, bitmap64=bitmap64)
        for entry in dv_entries:
            if entry.kind != KIND_ADD:
                raise ValueError(f"cannot restore from a {entry.kind} entry of {entry.index_file.file_name}")
            if entry.bucket != bucket or entry.partition != partition:
                raise ValueError(f"index file {entry.index_file.file_name} belongs to bucket {entry.bucket} "
                                 f"of {entry.partition}, not bucket {bucket} of {partition}")
            maintainer._load_index_file(entry.index_file, open_index_file)
        if live_files is not None:
            maintainer.retain_data_files(live_files)
        return maintainer

    def _load_index_file(self, meta: IndexFileMeta, open_index_file: OpenIndexFile) -> None:
        if not meta.dv_ranges and not meta.row_count:
            # A file of no vector: Java's writer lists one when its compaction removed every vector of
            # the bucket. Kept, so that the next vectors of the bucket replace it.
            self._index_files.append(meta)
            return
        if meta.dv_ranges is None:
            raise ValueError(f"deletion-vector index file {meta.file_name} has no ranges in its metadata")
        self._vectors.update(read_vectors(open_index_file(meta), meta.dv_ranges))
        self._index_files.append(meta)

    @classmethod
    def from_deletion_files(cls, deletion_files: Mapping[str, DeletionFile], *, partition: GenericRow,
                            bucket: int, bitmap64: bool = False,
                            index_files: Sequence[IndexFileMeta] = (),
                            open_path: Callable[[str], Source | bytes | str | os.PathLike[str]] = str,
                            ) -> BucketDvMaintainer:
        """Load vectors from a scan's ``{data file -> DeletionFile}`` ranges, each index file opened once.

        ``index_files`` are the index files these ranges live in (for the commit's DELETE entries);
        ``open_path`` maps a ``DeletionFile.dv_index_path`` to something to read (default: the path).
        """
        by_index_file: dict[str, dict[str, DeletionFile]] = {}
        for data_file, deletion_file in deletion_files.items():
            by_index_file.setdefault(deletion_file.dv_index_path, {})[data_file] = deletion_file
        vectors: dict[str, DeletionVector] = {}
        for index_path, files in by_index_file.items():
            with opened_source(open_path(index_path)) as source:
                for data_file, deletion_file in files.items():
                    vectors[data_file] = read_vector(source, deletion_file.offset, deletion_file.length)
        return cls(partition, bucket, bitmap64=bitmap64, vectors=vectors, index_files=index_files)

    # -- state -----------------------------------------------------------------------------------
    @property
    def vectors(self) -> Mapping[str, DeletionVector]:
        """The current vectors (read-only view)."""
        return MappingProxyType(self._vectors)

    @property
    def index_files(self) -> list[IndexFileMeta]:
        """The index files the current state was loaded from or last committed to."""
        return list(self._index_files)

    @property
    def modified(self) -> bool:
        return self._modified

    def deletion_vector_of(self, data_file: str) -> DeletionVector | None:
        return self._vectors.get(data_file)

    # -- changes ---------------------------------------------------------------------------------
    def notify_new_deletion(self, data_file: str, position: int) -> bool:
        """Delete one row of ``data_file``; ``True`` if it was not deleted before."""
        vector = self._vectors.get(data_file)
        if vector is None:
            vector = new_deletion_vector(self.bitmap64)
        if not vector.checked_delete(position):
            return False
        self._vectors[data_file] = vector
        self._modified = True
        return True

    def notify_new_deletions(self, data_file: str, positions: Iterable[int] | np.ndarray) -> int:
        """Delete many rows of ``data_file`` in bulk; returns how many were not deleted before."""
        vector = self._vectors.get(data_file)
        if vector is None:
            vector = new_deletion_vector(self.bitmap64)
        added = vector.delete_many(positions)
        if added:
            self._vectors[data_file] = vector
            self._modified = True
        return added

    def put_deletion_vector(self, data_file: str, vector: DeletionVector) -> None:
        """Replace ``data_file``'s vector (Java ``notifyNewDeletion(fileName, deletionVector)``)."""
        self._vectors[data_file] = vector
        self._modified = True

    def merge_new_deletion(self, data_file: str, vector: DeletionVector) -> None:
        """Union ``vector`` into ``data_file``'s vector (Java ``mergeNewDeletion``; same kind only)."""
        merged = vector.copy()
        old = self._vectors.get(data_file)
        if old is not None:
            merged.merge(old)
        self._vectors[data_file] = merged
        self._modified = True

    def remove_deletion_vector_of(self, data_file: str) -> bool:
        """Forget ``data_file``'s vector (its file was compacted away); ``True`` if there was one."""
        if self._vectors.pop(data_file, None) is None:
            return False
        self._modified = True
        return True

    def retain_data_files(self, existing: Iterable[str]) -> list[str]:
        """Drop the vectors of data files not in ``existing``; returns the dropped names."""
        keep = set(existing)
        dropped = [name for name in self._vectors if name not in keep]
        for name in dropped:
            self.remove_deletion_vector_of(name)
        return dropped

    # -- committing ------------------------------------------------------------------------------
    def _entry(self, kind: int, meta: IndexFileMeta) -> IndexManifestEntry:
        return IndexManifestEntry(kind=kind, partition=self.partition, bucket=self.bucket, index_file=meta)

    def prepare_commit(self, file_name: str | None = None) -> DeletionVectorCommit:
        """Serialize the vectors for one commit; an empty commit when nothing changed.

        The new file (if any vector is left) is named ``file_name`` or a fresh ``index-<uuid>-0``;
        the caller stores it (:meth:`DeletionVectorCommit.write_to`, in the table's store) before
        committing the entries.
        """
        if not self._modified:
            return DeletionVectorCommit()
        entries = [self._entry(KIND_DELETE, meta) for meta in self._index_files]
        commit = DeletionVectorCommit(entries)
        new_files: list[IndexFileMeta] = []
        if self._vectors:
            commit.new_file = serialize_index_file(self._vectors)
            commit.new_file_name = file_name or new_index_file_name()
            new_meta = commit.new_file.to_meta(commit.new_file_name)
            entries.append(self._entry(KIND_ADD, new_meta))
            new_files.append(new_meta)
        self._index_files = new_files
        self._modified = False
        return commit

    def commit_to(self, directory: str | os.PathLike[str], file_name: str | None = None, *,
                  write: WriteFile) -> DeletionVectorCommit:
        """:meth:`prepare_commit`, then store the new index file in ``directory`` with ``write``."""
        commit = self.prepare_commit(file_name)
        commit.write_to(directory, write=write)
        return commit
