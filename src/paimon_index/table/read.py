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

Driver-side pruning (:func:`prune_split`): files whose *embedded* index answers SKIP are dropped
from a split before it is shipped to an executor; ``.index`` files are read where the data is.

Scope so far: append tables, with or without deletion vectors (primary-key tables are refused:
their reads need a merge this reader does not do yet); data files on the local filesystem.
``file-index.read.enabled = false`` in the table options, or ``use_index=False``, turns index use
off.

pypaimon internals used: ``table.new_read_builder().new_scan().plan().splits()``, ``DataSplit.files``
(``DataFileMeta.file_path``, ``row_count``, ``embedded_index``, ``extra_files``),
``DataSplit.data_deletion_files`` (``DeletionFile.dv_index_path``, ``offset``, ``length``),
``table.is_primary_key_table``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.deletionvectors.index_file import read_vector
from paimon_index.errors import CorruptFileError, PaimonIndexError
from paimon_index.fileindex.base import TopN
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader
from paimon_index.fileindex.options import FileIndexOptions
from paimon_index.fileindex.result import REMAIN, FileIndexResult, Rows, and_not
from paimon_index.predicate import ALWAYS_TRUE, Predicate, columns_of
from paimon_index.sql import bind_predicate
from paimon_index.table.stats import plan_splits
from paimon_index.table.write import INDEX_FILE_SUFFIX, table_options, table_schema
from paimon_index.types import DataType

__all__ = [
    "METADATA_COLUMNS",
    "ScanReport",
    "UnsupportedTableError",
    "container_source",
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


class UnsupportedTableError(PaimonIndexError):
    """A table this reader cannot read exactly yet."""


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
    files_skipped_by_stats: int = 0

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


def _group_bytes(parquet: pq.ParquetFile, group: int, columns: list[str] | None) -> int:
    meta = parquet.metadata.row_group(group)
    chunks = (meta.column(c) for c in range(meta.num_columns))
    return sum(c.total_compressed_size for c in chunks
               if columns is None or c.path_in_schema in columns)


def read_positions(path: str, positions: np.ndarray | None, report: ScanReport,
                   columns: list[str] | None = None) -> pa.Table:
    """The rows at ``positions`` (all rows when None), reading only the row groups holding them."""
    parquet = pq.ParquetFile(path)
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


def _subtract_deleted(result: FileIndexResult, deletion_file: Any, row_count: int,
                      report: ScanReport) -> FileIndexResult:
    """The result AND-NOT the file's deletion vector (32- or 64-bit, read by its range)."""
    vector = read_vector(deletion_file.dv_index_path, deletion_file.offset, deletion_file.length)
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


def _exact_selection(meta: Any, result: FileIndexResult, bound: Predicate, exact: Any,
                     report: ScanReport) -> Rows:
    """The rows of ``result`` that satisfy ``bound`` exactly, reading only its columns."""
    positions = _positions(result)
    if positions is None:
        positions = np.arange(meta.row_count, dtype=np.int64)
    rows = read_positions(meta.file_path, positions, report, columns=columns_of(bound))
    matching = rows.append_column(_POSITION, pa.array(positions)).filter(exact).column(_POSITION)
    return Rows(BitMap(matching.to_numpy().astype(np.uint32)))


def _evaluate(meta: Any, source: bytes | str | None, bound: Predicate, schema: Mapping[str, DataType],
              report: ScanReport, topn: TopN | None = None, deletion_file: Any = None) -> FileIndexResult:
    """What the index (and the deletion vector, and TopN) leave of one data file."""
    result: FileIndexResult = REMAIN
    container = None
    try:
        if source is not None:
            container = ContainerReader(source, meta.file_path)
            result = FileIndexEvaluator(container, schema).evaluate(bound)
        if result.remain and deletion_file is not None:
            result = _subtract_deleted(result, deletion_file, meta.row_count, report)
        if topn is not None and container is not None and result.remain:
            if bound is not ALWAYS_TRUE:
                result = _exact_selection(meta, result, bound, to_arrow_expression(bound, schema), report)
            result = FileIndexEvaluator(container, schema).evaluate_topn(topn, result)
            if isinstance(result, Rows):
                report.rows_kept_by_topn += len(result.bitmap)
    finally:
        if container is not None:
            report.index_bytes_read += getattr(container.source, "bytes_read", 0)
            container.close()
    return result


def prune_split(split: Any, bound: Predicate, schema: Mapping[str, DataType],
                report: ScanReport | None = None) -> Any | None:
    """``split`` without the files whose embedded index answers SKIP (None when none is left)."""
    report = report if report is not None else ScanReport()

    def keep(meta: Any) -> bool:
        if not meta.embedded_index:
            return True
        source = bytes(meta.embedded_index)
        if _evaluate(meta, source, bound, schema, ScanReport()).remain:
            return True
        report.files_skipped_on_driver += 1
        return False

    if bound is ALWAYS_TRUE:
        return split
    return split.filter_file(keep)


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


def read_split(split: Any, bound: Predicate, schema: Mapping[str, DataType], *, use_index: bool = True,
               report: ScanReport | None = None, topn: TopN | None = None,
               row_ids: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of one pypaimon split matching the bound predicate, as Arrow batches.

    ``row_ids`` (the table's partition keys) adds the metadata columns :data:`METADATA_COLUMNS`:
    each row's data file, its position in that file, its partition (``k=v/...``) and bucket.
    """
    report = report if report is not None else ScanReport()
    partition = None if row_ids is None else partition_text(row_ids, split.partition)
    exact = to_arrow_expression(bound, schema)
    deletion_files = split.data_deletion_files or [None] * len(split.files)
    for meta, deletion_file in zip(split.files, deletion_files, strict=True):
        report.files_planned += 1
        report.rows_planned += meta.row_count
        source = container_source(meta) if use_index else None
        result = _evaluate(meta, source, bound, schema, report, topn if use_index else None, deletion_file)
        if not result.remain:
            report.files_skipped_by_index += 1
            continue
        positions = _positions(result)
        if positions is not None:
            report.rows_selected_by_index += len(positions)
        rows = read_positions(meta.file_path, positions, report)
        report.rows_read += rows.num_rows
        if partition is not None:
            rows = _with_row_ids(rows, meta, positions, partition, split.bucket)
        kept = rows.filter(exact)
        report.rows_returned += kept.num_rows
        yield from kept.to_batches()


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
    parts = [batch for split in plan_splits(table, bound, schema, report)  # value stats prune first
             for batch in read_split(split, bound, schema, use_index=use_index, report=report,
                                            topn=topn)]
    if not parts:
        return pa.schema([]).empty_table(), report
    return pa.Table.from_batches(parts), report
