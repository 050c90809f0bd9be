"""Dynamic-bucket ``HASH`` index files and the key hash they store.

Matches Java ``org.apache.paimon.index.HashIndexFile`` / ``IntFileUtils`` (file format) and
``DynamicBucketIndexMaintainer`` (what goes in: ``BinaryRow.hashCode`` of each record's key, the
trimmed primary key). One file per (partition, bucket), layout::

    hash      4 bytes  int32 BE  signed   key hash, repeated ``row_count`` times, nothing else

``IndexFileMeta``: type ``HASH``, ``file_size`` = 4 x ``row_count``, no ranges. Java writes the
distinct hashes in its hash set's iteration order; we write them distinct and ascending (readers
treat the file as a set, so both are valid files for either side).

Key hash = Paimon ``BinaryRow.hashCode()`` = MurmurHash3-32 (seed 42) over the serialized row
(``MurmurHashUtils.hashBytesByWords``), read as little-endian 32-bit words, no tail, finalized with
the byte length::

    k = word * 0xCC9E2D51; k = rotl(k, 15); k *= 0x1B873593
    h ^= k; h = rotl(h, 13); h = h * 5 + 0xE6546B64                 (per word)
    h ^= length; h ^= h >>> 16; h *= 0x85EBCA6B; h ^= h >>> 13; h *= 0xC2B2AE35; h ^= h >>> 16

A ``BinaryRow`` of arity ``n`` (row kind INSERT): a header of ``((n + 63 + 8) // 64) * 8`` bytes
(byte 0 = row kind, then the null bits at bit ``8 + i``), one 8-byte little-endian slot per field,
then the variable-length part. Fixed-width types (BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT,
DOUBLE, DATE) are laid out here with NumPy for whole columns at once. So are strings and bytes
(STRING, VARCHAR, CHAR, BYTES, VARBINARY, BINARY), for all rows whose variable fields have the same
byte lengths at once: a value of at most 7 bytes lives in its slot (bytes 0..6, byte 7 =
``0x80 | length``); a longer one is appended to the variable part, zero-padded to 8 bytes, and its
slot holds ``offset << 32 | length`` (offset from the row's start). Other key types are serialized
row by row with pypaimon's ``GenericRowSerializer``.

Checked on read: the file size is a multiple of 4 (Java silently drops a 1-3 byte tail; we report
it). Not checked: duplicates (Java's writer never produces them; a set ignores them anyway).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.schema.data_types import DataField
from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer
from pypaimon.table.row.internal_row import RowKind

from paimon_index.binary import ByteReader, Source
from paimon_index.deletionvectors.index_file import WriteFile, file_path, new_index_file_name, opened_source

__all__ = [
    "HASH_INDEX",
    "binary_row_hash",
    "hash_index_meta",
    "key_hashes",
    "read_hash_index",
    "serialize_hash_index",
    "write_hash_index",
]

#: Java ``HashIndexFile.HASH_INDEX``: the index type in the manifest.
HASH_INDEX = "HASH"
HASH_BYTES = 4
#: Java ``MurmurHashUtils.DEFAULT_SEED``.
MURMUR_SEED = 42
MURMUR_C1 = 0xCC9E2D51
MURMUR_C2 = 0x1B873593
MURMUR_H_ADD = 0xE6546B64
FMIX_M1 = 0x85EBCA6B
FMIX_M2 = 0xC2B2AE35
BINARY_ROW_HEADER_BITS = 8
BINARY_ROW_SLOT_BYTES = 8
#: Fixed-width Paimon types: the Arrow type of their values and the signed integer type whose
#: little-endian bytes start their 8-byte slot (floats by their raw bits, booleans as 0/1).
_FIXED_WIDTH_TYPES = {
    "BOOLEAN": (pa.bool_(), pa.int8()), "TINYINT": (pa.int8(), pa.int8()),
    "SMALLINT": (pa.int16(), pa.int16()), "INT": (pa.int32(), pa.int32()),
    "INTEGER": (pa.int32(), pa.int32()), "BIGINT": (pa.int64(), pa.int64()),
    "FLOAT": (pa.float32(), pa.int32()), "DOUBLE": (pa.float64(), pa.int64()),
    "DATE": (pa.date32(), pa.int32()),
}

#: String and bytes types: their values' bytes are laid out in the slot or the variable part.
_VARIABLE_WIDTH_TYPES = frozenset({"STRING", "VARCHAR", "CHAR", "BYTES", "VARBINARY", "BINARY"})
#: The longest value kept in its slot; byte 7 of such a slot is ``INLINE_MARK | length``.
INLINE_MAX_BYTES = 7
INLINE_MARK = 0x80
#: A NULL value's "length" when grouping rows by the lengths of their variable fields.
NULL_LENGTH = -1

_U32 = np.uint32


# -- the file ------------------------------------------------------------------------------------
def serialize_hash_index(hashes: Iterable[int] | np.ndarray) -> bytes:
    """The file's bytes: the distinct hashes (as Java ``int``), ascending, 4-byte big-endian."""
    values = np.asarray(hashes if isinstance(hashes, np.ndarray) else list(hashes))
    if values.size and values.dtype.kind not in "iu":
        raise TypeError(f"hashes must be integers, got dtype {values.dtype}")
    # Accept unsigned 32-bit hashes too; store them as Java's signed int.
    as_int32 = values.astype(np.int64, copy=False).astype(np.uint32).view(np.int32) if values.size \
        else np.empty(0, np.int32)
    return np.unique(as_int32).astype(">i4").tobytes()


def read_hash_index(source: Source | bytes | bytearray | memoryview | str | os.PathLike[str]) -> np.ndarray:
    """All hashes of a file, in file order, as int32."""
    with opened_source(source) as src:
        reader = ByteReader(src)
        if reader.remaining % HASH_BYTES:
            raise reader.error(f"size {reader.remaining} is not a multiple of {HASH_BYTES}",
                               "hash index size", reader.end - reader.remaining % HASH_BYTES)
        raw = reader.read_view(reader.remaining, "hash index")
        return np.frombuffer(raw, dtype=">i4").astype(np.int32)


def hash_index_meta(file_name: str, data: bytes, external_path: str | None = None) -> IndexFileMeta:
    """The index manifest's ``IndexFileMeta`` for a hash index file's bytes."""
    return IndexFileMeta(index_type=HASH_INDEX, file_name=file_name, file_size=len(data),
                         row_count=len(data) // HASH_BYTES, external_path=external_path)


def write_hash_index(directory: str | os.PathLike[str], hashes: Iterable[int] | np.ndarray, *,
                     write: WriteFile,
                     name_factory: Callable[[], str] = new_index_file_name) -> IndexFileMeta:
    """Write a hash index file into ``directory`` with ``write`` (the table's store, see
    :data:`paimon_index.deletionvectors.index_file.WriteFile`); returns its manifest metadata."""
    data = serialize_hash_index(hashes)
    name = name_factory()
    write(file_path(directory, name), data)
    return hash_index_meta(name, data)


# -- the hash ------------------------------------------------------------------------------------
def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def _murmur_words(words: np.ndarray, length: int) -> np.ndarray:
    """``hashBytesByWords`` of each row of ``words`` (rows x words uint32, all ``length`` bytes)."""
    h = np.full(words.shape[0], MURMUR_SEED, dtype=_U32)
    with np.errstate(over="ignore"):
        for column in range(words.shape[1]):
            k = words[:, column] * _U32(MURMUR_C1)
            k = _rotl(k, 15) * _U32(MURMUR_C2)
            h = _rotl(h ^ k, 13) * _U32(5) + _U32(MURMUR_H_ADD)
        h ^= _U32(length)
        h ^= h >> _U32(16)
        h *= _U32(FMIX_M1)
        h ^= h >> _U32(13)
        h *= _U32(FMIX_M2)
        h ^= h >> _U32(16)
    return h.view(np.int32)


def binary_row_hash(rows: Sequence[bytes] | np.ndarray) -> np.ndarray:
    """``BinaryRow.hashCode`` of serialized rows: a list of bytes, or a 2-D uint8 array of equal rows."""
    if isinstance(rows, np.ndarray):
        return _hash_equal_rows(rows)
    out = np.empty(len(rows), dtype=np.int32)
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    for length in np.unique(lengths).tolist():
        selected = np.flatnonzero(lengths == length)
        block = np.frombuffer(b"".join(rows[i] for i in selected.tolist()), dtype=np.uint8)
        out[selected] = _hash_equal_rows(block.reshape(selected.size, length))
    return out


def _hash_equal_rows(rows: np.ndarray) -> np.ndarray:
    length = rows.shape[1]
    if length % HASH_BYTES:
        raise ValueError(f"a BinaryRow is a whole number of 4-byte words, got {length} bytes")
    words = np.ascontiguousarray(rows, dtype=np.uint8).view("<u4").astype(_U32)
    return _murmur_words(words.reshape(rows.shape[0], length // HASH_BYTES), length)


def _type_name(dtype: object) -> str:
    return str(getattr(dtype, "type", "")).upper().split("(")[0].strip()


def _header_bytes(arity: int) -> int:
    return ((arity + 63 + BINARY_ROW_HEADER_BITS) // 64) * 8


def _fixed_width_rows(columns: Sequence[pa.Array], fields: Sequence[DataField], n: int) -> np.ndarray:
    """The fixed part (``n`` rows x bytes, uint8) of serialized BinaryRows, built column-wise: the
    header with every field's null bit, and the slots of fixed-width fields (those of string and
    bytes fields are left zero for :func:`_variable_rows_hash`)."""
    arity = len(fields)
    header = _header_bytes(arity)
    rows = np.zeros((n, header + arity * BINARY_ROW_SLOT_BYTES), dtype=np.uint8)
    rows[:, 0] = RowKind.INSERT.value
    for i, (column, data_field) in enumerate(zip(columns, fields, strict=True)):
        nulls = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else None
        slot = header + i * BINARY_ROW_SLOT_BYTES
        if _type_name(data_field.type) not in _VARIABLE_WIDTH_TYPES:
            values = _fixed_width_values(column, _type_name(data_field.type))
            width = values.dtype.itemsize
            rows[:, slot:slot + width] = values.view(np.uint8).reshape(n, width)
        if nulls is not None:
            rows[nulls, slot:slot + BINARY_ROW_SLOT_BYTES] = 0
            bit = BINARY_ROW_HEADER_BITS + i
            rows[nulls, bit // 8] |= np.uint8(1 << (bit % 8))
    return rows


def _value_bytes(column: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(all value bytes, each value's start, each value's length or NULL_LENGTH) of a string/bytes column."""
    column = column.cast(pa.large_binary())
    start = column.offset
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)[start:start + len(column) + 1]
    data_buffer = column.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.empty(0, np.uint8)
    lengths = np.diff(offsets)
    if column.null_count:
        lengths = np.where(column.is_null().to_numpy(zero_copy_only=False), NULL_LENGTH, lengths)
    return data, offsets[:-1], lengths


def _variable_rows_hash(columns: Sequence[pa.Array], fields: Sequence[DataField], n: int) -> np.ndarray:
    """``BinaryRow.hashCode`` of rows with string/bytes fields: the rows whose variable fields have
    the same lengths share one layout and are built and hashed together."""
    fixed = _fixed_width_rows(columns, fields, n)
    header = _header_bytes(len(fields))
    variable = [i for i, f in enumerate(fields) if _type_name(f.type) in _VARIABLE_WIDTH_TYPES]
    values = [_value_bytes(columns[i]) for i in variable]
    lengths = np.stack([v[2] for v in values], axis=1)
    if len(values) == 1:  # one-dimensional unique: several times faster than axis=0
        distinct, group = np.unique(lengths[:, 0], return_inverse=True)
        layouts = distinct[:, None]
    else:
        layouts, group = np.unique(lengths, axis=0, return_inverse=True)
    order = np.argsort(group.reshape(-1), kind="stable")
    bounds = np.searchsorted(group.reshape(-1)[order], np.arange(len(layouts) + 1))
    out = np.empty(n, dtype=np.int32)
    for g, layout in enumerate(layouts.tolist()):
        selected = order[bounds[g]:bounds[g + 1]]
        extra = sum(-(-length // BINARY_ROW_SLOT_BYTES) * BINARY_ROW_SLOT_BYTES
                    for length in layout if length > INLINE_MAX_BYTES)
        rows = np.zeros((selected.size, fixed.shape[1] + extra), dtype=np.uint8)
        rows[:, :fixed.shape[1]] = fixed[selected]
        cursor = fixed.shape[1]
        for i, (data, starts, _), length in zip(variable, values, layout, strict=True):
            if length == NULL_LENGTH:
                continue
            slot = header + i * BINARY_ROW_SLOT_BYTES
            value = data[starts[selected][:, None] + np.arange(length)]
            if length <= INLINE_MAX_BYTES:
                rows[:, slot:slot + length] = value
                rows[:, slot + INLINE_MAX_BYTES] = INLINE_MARK | length
            else:
                rows[:, cursor:cursor + length] = value
                pointer = np.array([(cursor << 32) | length], dtype="<u8").view(np.uint8)
                rows[:, slot:slot + BINARY_ROW_SLOT_BYTES] = pointer
                cursor += -(-length // BINARY_ROW_SLOT_BYTES) * BINARY_ROW_SLOT_BYTES
        out[selected] = _hash_equal_rows(rows)
    return out


def _fixed_width_values(column: pa.Array, type_name: str) -> np.ndarray:
    """A column's values as the little-endian integers that start their BinaryRow slots.

    The column is first cast (safely: overflow raises) to the key field's type, as Paimon converts
    input rows to the table's row type before hashing.
    """
    value_type, slot_type = _FIXED_WIDTH_TYPES[type_name]
    if column.type != value_type:
        column = column.cast(value_type)
    column = column.cast(slot_type) if pa.types.is_boolean(value_type) else column.view(slot_type)
    filled = column.fill_null(0) if column.null_count else column
    return np.ascontiguousarray(filled.to_numpy(zero_copy_only=False)).astype(
        np.dtype(slot_type.to_pandas_dtype()).newbyteorder("<"), copy=False)


def _combined(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def key_hashes(data: pa.Table | pa.RecordBatch, key_fields: Sequence[DataField]) -> np.ndarray:
    """``BinaryRow.hashCode`` (int32) of each row's key, the key being ``key_fields`` of ``data``.

    For a dynamic-bucket table the key is the trimmed primary key (primary key minus partition
    fields): pypaimon's ``TableSchema.logical_bucket_key_fields``.
    """
    columns = [_combined(data.column(f.name)) for f in key_fields]
    if all(_type_name(f.type) in _FIXED_WIDTH_TYPES for f in key_fields):
        return binary_row_hash(_fixed_width_rows(columns, key_fields, data.num_rows))
    if all(_type_name(f.type) in _FIXED_WIDTH_TYPES or _type_name(f.type) in _VARIABLE_WIDTH_TYPES
           for f in key_fields):
        return _variable_rows_hash(columns, key_fields, data.num_rows)
    fields = list(key_fields)
    python_columns = [c.to_pylist() for c in columns]
    rows = [GenericRowSerializer.to_bytes(GenericRow(list(values), fields, RowKind.INSERT))[HASH_BYTES:]
            for values in zip(*python_columns, strict=True)]
    return binary_row_hash(rows)
