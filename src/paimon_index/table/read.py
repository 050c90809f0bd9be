"""Read a Paimon append table with its file indexes pushed down.

    read_arrow(table, predicate, *, use_index=True, topn=None) -> (pa.Table, ScanReport)

1. pypaimon plans the splits of the latest snapshot;
2. for every data file, its index container (``embedded_index`` from the manifest, or the
   ``<data-file>.index`` named in ``extra_files``) answers the predicate: SKIP drops the file,
   a row bitmap selects rows, REMAIN keeps all; then the file's deletion vector (32- or 64-bit,
   read by its manifest range from the DV index file) is subtracted (AND-NOT);
3. only the Parquet row groups holding a selected row are read, then only the selected rows are
   taken, and the exact predicate is applied (index answers are supersets: a Bloom filter keeps
   whole files, the bitmap index's ``<>`` keeps NULL rows);
4. the :class:`ScanReport` says what each step pruned, and how many bytes were read.

TopN (``topn=TopN(...)``, seed 000): after the predicate and the deletion vector, each file keeps
only its range-bitmap TopN candidates; when the predicate is not answered exactly by the index,
the exact selection is computed first (reading only the predicate's columns), so the candidates
are taken among matching rows. The caller still sorts and limits: candidates are a superset of
the file's share of the global TopN (ties at the boundary are kept: ``strict=False``).

Schema evolution (:mod:`paimon_index.table.schemas`): every data file is read under the schema
it was written with (``DataFileMeta.schema_id``) and mapped to the current columns by field id
(renamed columns by id, added columns NULL, dropped columns not read, changed types cast); the
predicate meets the file's index only on columns of the same field id and type, a predicate that
is FALSE on a column the file lacks (NULL there) skips the file, and the exact re-check runs on the
current-schema rows. This needs the schema from :func:`~paimon_index.table.write.table_schema`
(a :class:`~paimon_index.table.schemas.ReadSchema`); a plain ``dict`` reads files by name.

Driver-side pruning (:func:`prune_split`): files whose *embedded* index (or schema version, see
above) answers SKIP are dropped from a split before it is shipped to an executor; ``.index``
files are read where the data is.

I/O (:mod:`paimon_index.table.fileio`): every byte comes through the table's ``FileIO``
(``io=TableIO.of(table)``; executors get it pickled with their split), so a warehouse on an object
store reads the same way. Per data file of a split: one open and a first request for a ``.index``
file's head (small containers come whole), one coalesced request for the index parts the
predicate's columns need, and only then the bitmap block or bitmaps a literal needs; each DV index
file is read once per split (the split's vectors in it fetched in one coalesced request); a
Parquet file's footer and wanted column chunks (``pre_buffer``). :class:`ScanReport` counts them.

Scope so far: append tables, with or without deletion vectors (primary-key tables are refused:
their reads need a merge this reader does not do yet).
``file-index.read.enabled = false`` in the table options, or ``use_index=False``, turns index use
off.

pypaimon internals used: ``table.new_read_builder().new_scan().plan().splits()``, ``DataSplit.files``
(``DataFileMeta.file_path``, ``row_count``, ``embedded_index``, ``extra_files``, ``schema_id``),
``DataSplit.data_deletion_files`` (``DeletionFile.dv_index_path``, ``offset``, ``length``),
``table.is_primary_key_table``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.deletionvectors.index_file import prefetch_vectors, read_vector
from paimon_index.deletionvectors.vector import DeletionVector
from paimon_index.errors import CorruptFileError, UnsupportedTableError
from paimon_index.fileindex.base import TopN
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader
from paimon_index.fileindex.options import FileIndexOptions
from paimon_index.fileindex.range_bitmap import RangeBitmapIndex, RangeBitmapReader
from paimon_index.fileindex.result import REMAIN, SKIP, FileIndexResult, Rows, and_not
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, Predicate, columns_of
from paimon_index.sql import bind_predicate
from paimon_index.table.fileio import IOCounters, TableIO
from paimon_index.table.metacache import PARSED_WEIGHT_FACTOR, checkout_container, metadata_cache
from paimon_index.table.schemas import FileMapping, mapping_of
from paimon_index.table.stats import plan_splits
from paimon_index.table.write import INDEX_FILE_SUFFIX, table_options, table_schema
from paimon_index.types import DataType

__all__ = [
    "METADATA_COLUMNS",
    "ScanReport",
    "SplitVectors",
    "UnsupportedTableError",
    "container_source",
    "open_container",
    "partition_text",
    "prune_split",
    "read_arrow",
    "read_positions",
    "read_split",
]



#: Metadata columns (Paimon's Spark connector spells them so): the data file holding the row, the
#: row's 0-based position in it, the partition and the bucket. Row-level changes key on them.
FILE_PATH_COLUMN = "__paimon_file_path"
ROW_INDEX_COLUMN = "__paimon_row_index"
PARTITION_COLUMN = "__paimon_partition"
BUCKET_COLUMN = "__paimon_bucket"
METADATA_COLUMNS = (FILE_PATH_COLUMN, ROW_INDEX_COLUMN, PARTITION_COLUMN, BUCKET_COLUMN)

#: A selection of more than 1/DIVISOR of the rows read is taken with a boolean mask, not a gather.
DENSE_SELECTION_DIVISOR = 4

#: A column name no Paimon table can have (it carries row positions through a filter).
_POSITION = "__paimon_index_position__"


@dataclass
class ScanReport:
    """What a read planned and what the indexes pruned."""

    files_planned: int = 0
    files_skipped_by_index: int = 0
    rows_planned: int = 0
    row_groups_planned: int = 0
    row_groups_read: int = 0
    rows_selected_by_index: int = 0
    rows_removed_by_deletion_vectors: int = 0
    rows_read: int = 0
    rows_returned: int = 0
    files_skipped_on_driver: int = 0
    rows_kept_by_topn: int = 0
    data_bytes_read: int = 0
    index_bytes_read: int = 0
    files_skipped_by_schema: int = 0
    files_skipped_by_stats: int = 0
    #: Ranged read requests to ``.index`` files, DV index files and Parquet data files.
    index_requests: int = 0
    dv_requests: int = 0
    data_requests: int = 0
    #: Files opened for reading (on an object store, each open is a HEAD request).
    files_opened: int = 0
    #: Manifests, index containers and deletion vectors found parsed in the process's metadata
    #: cache (:mod:`paimon_index.table.metacache`) instead of read again.
    metadata_cache_hits: int = 0

    def merge(self, other: ScanReport) -> ScanReport:
        """Add ``other``'s counts to this report (reports of several splits or executors)."""
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def container_source(meta: Any) -> bytes | str | None:
    """A data file's index container: the embedded bytes, or the path of its ``.index`` file."""
    if meta.embedded_index:
        return bytes(meta.embedded_index)
    for name in meta.extra_files or ():
        if name.endswith(INDEX_FILE_SUFFIX):
            return posixpath.join(posixpath.dirname(meta.file_path), name)
    return None


def open_container(io: TableIO, meta: Any, source: bytes | str | None = None,
                   tally: IOCounters | None = None) -> ContainerReader | None:
    """The data file's index container (head read), embedded or its ``.index`` file through ``io``;
    None when the file has none. Close it after use."""
    source = container_source(meta) if source is None else source
    if source is None:
        return None
    if isinstance(source, bytes):
        return ContainerReader(source, meta.file_path)
    return ContainerReader(io.source(source, tally=tally), owns_source=True)


@contextmanager
def index_container(io: TableIO | None, data_path: str, source: bytes | str | None, report: ScanReport
                    ) -> Iterator[tuple[ContainerReader | None, dict[Any, Any] | None]]:
    """``(container or None, shared index readers or None)`` of the data file at ``data_path`` for
    one use; what reading it cost is added to ``report`` (index bytes and requests, opens).

    A ``.index`` file comes through the metadata cache (parsed once per process, see
    :mod:`paimon_index.table.metacache`); embedded bytes are parsed here.
    """
    if source is None:
        yield None, None
        return
    if isinstance(source, bytes):
        container = ContainerReader(source, data_path)
        try:
            yield container, None
        finally:
            container.close()
        return
    assert io is not None, "an .index file is read through io"
    tally = IOCounters()
    try:
        with checkout_container(io, source, tally) as (container, readers, hit):
            report.metadata_cache_hits += int(hit)
            yield container, readers
    finally:
        report.index_bytes_read += tally.bytes_read
        report.index_requests += tally.read_requests
        report.files_opened += tally.other_requests


def range_bitmap_reader(container: ContainerReader | None, evaluator: FileIndexEvaluator | None,
                        column: str) -> RangeBitmapReader | None:
    """The container's (non-empty) range bitmap on ``column``, built through ``evaluator`` (so a
    cached container's readers are reused); None when it has none."""
    if container is None or evaluator is None:
        return None
    for entry in container.column_entries(column):
        if entry.index_type == RangeBitmapIndex.name and not entry.empty:
            reader = evaluator.reader(entry)
            if isinstance(reader, RangeBitmapReader):
                return reader
    return None


def _group_bytes(parquet: pq.ParquetFile, group: int, columns: list[str] | None) -> int:
    meta = parquet.metadata.row_group(group)
    chunks = (meta.column(c) for c in range(meta.num_columns))
    return sum(c.total_compressed_size for c in chunks
               if columns is None or c.path_in_schema in columns)


def read_positions(path: str, positions: np.ndarray | None, report: ScanReport,
                   columns: list[str] | None = None, *, io: TableIO) -> pa.Table:
    """The rows at ``positions`` (all rows when None), reading only the row groups holding them."""
    tally = IOCounters()
    try:
        with io.parquet(path, tally) as parquet:
            return _read_groups(parquet, positions, report, columns)
    finally:
        report.data_requests += tally.read_requests
        report.files_opened += tally.other_requests


def _read_groups(parquet: pq.ParquetFile, positions: np.ndarray | None, report: ScanReport,
                 columns: list[str] | None) -> pa.Table:
    groups = parquet.metadata.num_row_groups
    report.row_groups_planned += groups
    if positions is None:
        report.row_groups_read += groups
        report.data_bytes_read += sum(_group_bytes(parquet, g, columns) for g in range(groups))
        return parquet.read(columns=columns)
    sizes = np.array([parquet.metadata.row_group(g).num_rows for g in range(groups)], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    group_of = np.searchsorted(starts, positions, side="right") - 1
    wanted = np.flatnonzero(np.bincount(group_of, minlength=groups))  # sorted, like np.unique, O(n)
    report.row_groups_read += len(wanted)
    report.data_bytes_read += sum(_group_bytes(parquet, int(g), columns) for g in wanted)
    data = parquet.read_row_groups(wanted.tolist(), columns=columns)
    # Positions inside the concatenation of the wanted groups.
    offset_in_read = np.concatenate(([0], np.cumsum(sizes[wanted])[:-1]))
    slot = np.searchsorted(wanted, group_of)
    local = positions - starts[group_of] + offset_in_read[slot]
    if len(local) * DENSE_SELECTION_DIVISOR > data.num_rows:
        # Most rows wanted (e.g. all but the deleted ones): a mask filter beats a gather.
        mask = np.zeros(data.num_rows, dtype=bool)
        mask[local] = True
        return data.filter(pa.array(mask))
    return data.take(pa.array(local))


class SplitVectors:
    """The deletion vectors of one split's data files, each DV index file read once.

    The first vector asked of an index file fetches every range this split needs from that file
    in one coalesced request (vectors are small; a round trip is not).
    """

    def __init__(self, io: TableIO, deletion_files: Sequence[Any], report: ScanReport) -> None:
        self._io = io
        self._report = report
        self._tally = IOCounters()
        self._ranges: dict[str, list[tuple[int, int]]] = {}
        for d in deletion_files:
            if d is not None:
                self._ranges.setdefault(d.dv_index_path, []).append((d.offset, d.length))
        self._sources: dict[str, Any] = {}

    def read(self, deletion_file: Any) -> DeletionVector:
        """The file's vector (do not mutate it: it may be shared through the metadata cache)."""
        path = deletion_file.dv_index_path
        cache = metadata_cache()
        key = ("dv", path, deletion_file.offset, deletion_file.length)
        if cache.enabled:
            cached = cache.get(key)
            if cached is not None:
                self._report.metadata_cache_hits += 1
                return cast(DeletionVector, cached)
        source = self._sources.get(path)
        if source is None:
            source = self._sources[path] = self._io.source(path, tally=self._tally)
            prefetch_vectors(source, self._ranges.get(path, []))
        vector = read_vector(source, deletion_file.offset, deletion_file.length)
        if cache.enabled:  # DV index files are never rewritten under one name
            cache.put(key, vector, PARSED_WEIGHT_FACTOR * (deletion_file.length or 0))
        return vector

    def close(self) -> None:
        for source in self._sources.values():
            source.close()
        self._sources.clear()
        self._report.dv_requests += self._tally.read_requests
        self._report.files_opened += self._tally.other_requests
        self._tally = IOCounters()


def _subtract_deleted(result: FileIndexResult, deletion_file: Any, row_count: int,
                      report: ScanReport, vectors: SplitVectors) -> FileIndexResult:
    """The result AND-NOT the file's deletion vector (32- or 64-bit, read by its range)."""
    vector = vectors.read(deletion_file)
    positions = vector.positions()
    if len(positions) and int(positions[-1]) >= row_count:
        raise CorruptFileError(f"deletion vector holds row {int(positions[-1])} of a {row_count}-row file",
                               path=deletion_file.dv_index_path, offset=deletion_file.offset,
                               field="deletion vector")
    deleted = BitMap(positions.astype(np.uint32))
    candidates = len(result.bitmap) if isinstance(result, Rows) else row_count
    remaining = and_not(result, deleted, row_count)
    kept = len(remaining.bitmap) if isinstance(remaining, Rows) else candidates
    report.rows_removed_by_deletion_vectors += candidates - kept
    return remaining


def _positions(result: FileIndexResult) -> np.ndarray | None:
    if not isinstance(result, Rows):
        return None
    return np.frombuffer(result.bitmap.to_array(), dtype=np.uint32).astype(np.int64)


def _read_file(io: TableIO, meta: Any, positions: np.ndarray | None, report: ScanReport,
               mapping: FileMapping | None, columns: list[str] | None = None) -> pa.Table:
    """The rows at ``positions`` of a data file under the current schema (``columns`` of it, or all)."""
    if mapping is None:
        return read_positions(meta.file_path, positions, report, columns=columns, io=io)
    rows = read_positions(meta.file_path, positions, report, columns=mapping.file_columns(columns), io=io)
    return mapping.evolve(rows, columns, path=meta.file_path)


def _exact_selection(io: TableIO, meta: Any, result: FileIndexResult, bound: Predicate, exact: Any,
                     report: ScanReport, mapping: FileMapping | None = None) -> Rows:
    """The rows of ``result`` that satisfy ``bound`` exactly, reading only its columns."""
    positions = _positions(result)
    if positions is None:
        positions = np.arange(meta.row_count, dtype=np.int64)
    rows = _read_file(io, meta, positions, report, mapping, columns_of(bound))
    matching = rows.append_column(_POSITION, pa.array(positions)).filter(exact).column(_POSITION)
    return Rows(BitMap(matching.to_numpy().astype(np.uint32)))


def _evaluate(io: TableIO | None, meta: Any, source: bytes | str | None, bound: Predicate,
              schema: Mapping[str, DataType], report: ScanReport, topn: TopN | None = None,
              deletion_file: Any = None, vectors: SplitVectors | None = None) -> FileIndexResult:
    """What the index (and the deletion vector, and TopN) leave of one data file.

    ``bound`` and ``schema`` are the current schema's; a file written with another schema version
    is asked the predicate on its own columns (:meth:`FileMapping.index_predicate`), which alone
    may rule the file out (``c = 1`` on a file written before ``c`` was added).
    """
    mapping = mapping_of(schema, meta)
    file_bound, file_types = bound, schema
    if mapping is not None and not mapping.identity:
        file_bound, file_types = mapping.index_predicate(bound), mapping.index_types
        topn = None if topn is None else mapping.index_topn(topn)
        if file_bound == ALWAYS_FALSE:
            report.files_skipped_by_schema += 1
            return SKIP
    result: FileIndexResult = REMAIN
    with index_container(io, meta.file_path, source, report) as (container, readers):
        if container is not None:
            result = FileIndexEvaluator(container, file_types, readers=readers).evaluate(file_bound)
        if result.remain and deletion_file is not None:
            assert vectors is not None, "read_split passes the split's vectors with its deletion files"
            result = _subtract_deleted(result, deletion_file, meta.row_count, report, vectors)
        if topn is not None and container is not None and result.remain:
            if bound is not ALWAYS_TRUE:
                assert io is not None, "TopN reads data files through io"
                exact = to_arrow_expression(bound, schema)
                result = _exact_selection(io, meta, result, bound, exact, report, mapping)
            evaluator = FileIndexEvaluator(container, file_types, readers=readers)
            result = evaluator.evaluate_topn(topn, result)
            if isinstance(result, Rows):
                report.rows_kept_by_topn += len(result.bitmap)
    return result


def prune_split(split: Any, bound: Predicate, schema: Mapping[str, DataType],
                report: ScanReport | None = None) -> Any | None:
    """``split`` without the files whose embedded index answers SKIP (None when none is left)."""
    report = report if report is not None else ScanReport()

    def keep(meta: Any) -> bool:
        mapping = mapping_of(schema, meta)
        if not meta.embedded_index and (mapping is None or mapping.identity):
            return True
        source = bytes(meta.embedded_index) if meta.embedded_index else None
        if _evaluate(None, meta, source, bound, schema, ScanReport()).remain:
            return True
        report.files_skipped_on_driver += 1
        return False

    if bound is ALWAYS_TRUE:
        return split
    # pypaimon's filter_file calls its function twice per file: decide once, then look it up.
    kept = {id(meta): keep(meta) for meta in split.files}
    if all(kept.values()):
        return split
    return split.filter_file(lambda meta: kept[id(meta)])


def partition_text(partition_keys: Sequence[str], partition: Any) -> str:
    """A split's partition as ``k1=v1/k2=v2`` (empty for an unpartitioned table)."""
    values = list(getattr(partition, "values", partition) or [])
    return "/".join(f"{k}={v}" for k, v in zip(partition_keys, values, strict=False))


def _with_row_ids(rows: pa.Table, meta: Any, positions: np.ndarray | None, partition: str,
                  bucket: int) -> pa.Table:
    count = rows.num_rows
    index = positions if positions is not None else np.arange(count, dtype=np.int64)
    extra = {FILE_PATH_COLUMN: pa.array(np.full(count, meta.file_path, dtype=object), pa.string()),
             ROW_INDEX_COLUMN: pa.array(index, pa.int64()),
             PARTITION_COLUMN: pa.array(np.full(count, partition, dtype=object), pa.string()),
             BUCKET_COLUMN: pa.array(np.full(count, bucket, dtype=np.int32))}
    for name, column in extra.items():
        rows = rows.append_column(name, column)
    return rows


def read_split(split: Any, bound: Predicate, schema: Mapping[str, DataType], *, io: TableIO,
               use_index: bool = True, report: ScanReport | None = None, topn: TopN | None = None,
               row_ids: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of one pypaimon split matching the bound predicate, as Arrow batches.

    ``io`` is the table's FileIO seam (:meth:`TableIO.of`); every file is read through it.
    ``row_ids`` (the table's partition keys) adds the metadata columns :data:`METADATA_COLUMNS`:
    each row's data file, its position in that file, its partition (``k=v/...``) and bucket.
    """
    report = report if report is not None else ScanReport()
    partition = None if row_ids is None else partition_text(row_ids, split.partition)
    exact = to_arrow_expression(bound, schema)
    deletion_files = split.data_deletion_files or [None] * len(split.files)
    vectors = SplitVectors(io, deletion_files, report)
    try:
        for meta, deletion_file in zip(split.files, deletion_files, strict=True):
            report.files_planned += 1
            report.rows_planned += meta.row_count
            source = container_source(meta) if use_index else None
            result = _evaluate(io, meta, source, bound, schema, report, topn if use_index else None,
                               deletion_file, vectors)
            if not result.remain:
                report.files_skipped_by_index += 1
                continue
            positions = _positions(result)
            if positions is not None:
                report.rows_selected_by_index += len(positions)
            rows = _read_file(io, meta, positions, report, mapping_of(schema, meta))
            report.rows_read += rows.num_rows
            if partition is not None:
                rows = _with_row_ids(rows, meta, positions, partition, split.bucket)
            kept = rows.filter(exact)
            report.rows_returned += kept.num_rows
            yield from kept.to_batches()
    finally:
        vectors.close()


def read_arrow(table: Any, predicate: Predicate | str, *, use_index: bool = True,
               topn: TopN | None = None) -> tuple[pa.Table, ScanReport]:
    """All rows of ``table`` matching ``predicate`` (SQL-like text or a predicate tree)."""
    options = table_options(table)
    if table.is_primary_key_table:
        raise UnsupportedTableError("primary-key tables are not read by this reader yet (they need a merge)")
    schema = table_schema(table)
    bound = bind_predicate(predicate, schema) if isinstance(predicate, str) else predicate
    use_index = use_index and FileIndexOptions.from_table_options(options).read_enabled
    report = ScanReport()
    io = TableIO.of(table)
    # Value stats prune first (use_index=False: every file, the plain baseline).
    parts = [batch for split in plan_splits(table, bound if use_index else ALWAYS_TRUE, schema, report)
             for batch in read_split(split, bound, schema, io=io, use_index=use_index, report=report,
                                     topn=topn)]
    if not parts:
        return pa.schema([]).empty_table(), report
    # Files of different schema versions may differ in nullability only (NOT NULL dropped since).
    tables = [pa.Table.from_batches([batch]) for batch in parts]
    return pa.concat_tables(tables, promote_options="default"), report
