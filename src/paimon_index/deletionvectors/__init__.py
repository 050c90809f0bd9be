"""Deletion vectors (one per data file) and the deletion-vector index files that hold them.

* :mod:`~paimon_index.deletionvectors.vector` — 32-bit and 64-bit vectors and their frames;
* :mod:`~paimon_index.deletionvectors.index_file` — the ``DELETION_VECTORS`` index file format,
  single-file and rolling writers, range and sequential readers;
* :mod:`~paimon_index.deletionvectors.maintainer` — one bucket's vectors across commits.

Byte layouts, length semantics and Java quirks: ``docs/deletion-vectors.md``.
"""

from paimon_index.deletionvectors.index_file import (
    DEFAULT_TARGET_SIZE,
    DELETION_VECTORS_INDEX,
    IndexFileContent,
    StoredVector,
    iter_vectors,
    read_vector,
    read_vectors,
    serialize_index_file,
    serialize_index_files,
    write_index_files,
)
from paimon_index.deletionvectors.maintainer import BucketDvMaintainer, DeletionVectorCommit
from paimon_index.deletionvectors.vector import (
    Bitmap64DeletionVector,
    BitmapDeletionVector,
    DeletionVector,
    DeletionVectorTooLargeError,
    deserialize_deletion_vector,
    new_deletion_vector,
    read_deletion_vector,
)

__all__ = [
    "DEFAULT_TARGET_SIZE",
    "DELETION_VECTORS_INDEX",
    "Bitmap64DeletionVector",
    "BitmapDeletionVector",
    "BucketDvMaintainer",
    "DeletionVector",
    "DeletionVectorCommit",
    "DeletionVectorTooLargeError",
    "IndexFileContent",
    "StoredVector",
    "deserialize_deletion_vector",
    "iter_vectors",
    "new_deletion_vector",
    "read_deletion_vector",
    "read_vector",
    "read_vectors",
    "serialize_index_file",
    "serialize_index_files",
    "write_index_files",
]
