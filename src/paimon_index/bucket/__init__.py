"""Bucket-level indexes: the dynamic-bucket ``HASH`` index (:mod:`~paimon_index.bucket.hash_index`)."""

from paimon_index.bucket.hash_index import (
    HASH_INDEX,
    binary_row_hash,
    hash_index_meta,
    key_hashes,
    read_hash_index,
    serialize_hash_index,
    write_hash_index,
)

__all__ = [
    "HASH_INDEX",
    "binary_row_hash",
    "hash_index_meta",
    "key_hashes",
    "read_hash_index",
    "serialize_hash_index",
    "write_hash_index",
]
