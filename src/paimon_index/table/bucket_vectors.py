"""A bucket's deletion vectors as the table holds them: restored through the table's store, and
described by plain values so that a Spark task never receives a pypaimon object.

    restore(entries, partition_row, bucket, index_dir, io, ...) -> BucketDvMaintainer
    vector_files(entries) -> (VectorFile, ...)            the driver: DV index files as plain values
    restore_plain(table, partition, bucket, vectors, index_dir, io, ...) -> BucketDvMaintainer
                                                          the task: the same vectors from them

A bucket's vectors live in one or more ``DELETION_VECTORS`` index files, each listed in the index
manifest with the byte range (offset, length, cardinality) of every data file's vector in it (layout:
:mod:`paimon_index.deletionvectors.index_file`). Restoring reads exactly those ranges through the
table's store (``TableIO``: local, object store), never by a local open, and keeps only the
vectors of the bucket's live data files (a vector of a file the snapshot no longer holds is
dropped and never committed again: Paimon refuses such a commit).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from paimon_index.deletionvectors.maintainer import BucketDvMaintainer
from paimon_index.table.fileio import FileIOSource, TableIO
from paimon_index.table.paimon import DELETION_VECTORS, index_manifest_entry, partition_row

__all__ = ["VectorFile", "restore", "restore_plain", "vector_files"]


@dataclass(frozen=True)
class VectorFile:
    """A ``DELETION_VECTORS`` index file of a bucket: where it is and its vectors' ranges
    ((data file, offset, length, cardinality), as the index manifest records them)."""

    file_name: str
    file_size: int
    row_count: int
    external_path: str | None
    ranges: tuple[tuple[str, int, int, int | None], ...]


def vector_files(entries: Iterable[Any]) -> tuple[VectorFile, ...]:
    """The bucket's ``DELETION_VECTORS`` index-manifest entries as plain values."""
    out = []
    for entry in entries:
        meta = entry.index_file
        ranges = tuple((name, int(r.offset), int(r.length),
                        None if r.cardinality is None else int(r.cardinality))
                       for name, r in (meta.dv_ranges or {}).items())
        out.append(VectorFile(meta.file_name, int(meta.file_size), int(meta.row_count), meta.external_path,
                              ranges))
    return tuple(out)


def restore(entries: Iterable[Any], partition: Any, bucket: int, index_dir: str, io: TableIO, *,
            bitmap64: bool, live_files: Iterable[str] | None) -> BucketDvMaintainer:
    """The vectors the bucket's index-manifest ``entries`` list (``partition``: its pypaimon row),
    read by range through ``io``; with ``live_files``, only those files' vectors."""
    opened: list[FileIOSource] = []

    def open_index_file(meta: Any) -> FileIOSource:
        path = meta.external_path or posixpath.join(index_dir, meta.file_name)
        opened.append(io.source(path, size=meta.file_size))  # size from the manifest: no stat
        return opened[-1]

    try:
        return BucketDvMaintainer.restore(entries, open_index_file, partition=partition, bucket=bucket,
                                          bitmap64=bitmap64,
                                          live_files=None if live_files is None else set(live_files))
    finally:
        for source in opened:
            source.close()


def restore_plain(table: Any, partition: Sequence[Any], bucket: int, vectors: Iterable[VectorFile],
                  index_dir: str, io: TableIO, *, bitmap64: bool,
                  live_files: Iterable[str] | None) -> BucketDvMaintainer:
    """:func:`restore` from the plain description (``partition``: its values): the entries rebuilt
    with the table's partition fields, as the manifest holds them."""
    entries = [index_manifest_entry(table, partition, bucket, DELETION_VECTORS, v.file_name, v.file_size,
                                    v.row_count, external_path=v.external_path, dv_ranges=v.ranges)
               for v in vectors]
    return restore(entries, partition_row(table, partition), bucket, index_dir, io, bitmap64=bitmap64,
                   live_files=live_files)
