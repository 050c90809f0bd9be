"""Read a Paimon append table with its file indexes pushed down.

    read_arrow(table, predicate, *, use_index=True) -> (pa.Table, ScanReport)

1. pypaimon plans the splits of the latest snapshot;
2. for every data file, its index container (``embedded_index`` from the manifest, or the
   ``<data-file>.index`` named in ``extra_files``) answers the predicate: SKIP drops the file,
   a row bitmap selects rows, REMAIN keeps all; then the file's deletion vector (32- or 64-bit,
   read by its manifest range from the DV index file) is subtracted (AND-NOT);
3. only the Parquet row groups holding a selected row are read, then only the selected rows are
   taken, and the exact predicate is applied (index answers are supersets: a Bloom filter keeps
   whole files, the bitmap index's ``<>`` keeps NULL rows);
4. the :class:`ScanReport` says what each step pruned.

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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap

from paimon_index.arrow_filter import to_arrow_expression
from paimon_index.deletionvectors.index_file import read_vector
from paimon_index.errors import CorruptFileError, PaimonIndexError
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader
from paimon_index.fileindex.options import FileIndexOptions
from paimon_index.fileindex.result import REMAIN, FileIndexResult, Rows, and_not
from paimon_index.predicate import Predicate
from paimon_index.sql import bind_predicate
from paimon_index.table.write import INDEX_FILE_SUFFIX, table_options, table_schema
from paimon_index.types import DataType

__all__ = [
    "ScanReport",
    "UnsupportedTableError",
    "container_source",
    "read_arrow",
    "read_positions",
    "read_split",
]



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


def container_source(meta: Any) -> bytes | str | None:
    """A data file's index container: the embedded bytes, or the path of its ``.index`` file."""
    if meta.embedded_index:
        return bytes(meta.embedded_index)
    for name in meta.extra_files or ():
        if name.endswith(INDEX_FILE_SUFFIX):
            return posixpath.join(posixpath.dirname(meta.file_path), name)
    return None


def read_positions(path: str, positions: np.ndarray | None, report: ScanReport) -> pa.Table:
    """The rows at ``positions`` (all rows when None), reading only the row groups holding them."""
    parquet = pq.ParquetFile(path)
    groups = parquet.metadata.num_row_groups
    report.row_groups_planned += groups
    if positions is None:
        report.row_groups_read += groups
        return parquet.read()
    sizes = np.array([parquet.metadata.row_group(g).num_rows for g in range(groups)], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    group_of = np.searchsorted(starts, positions, side="right") - 1
    wanted = np.unique(group_of)
    report.row_groups_read += len(wanted)
    data = parquet.read_row_groups(wanted.tolist())
    # Positions inside the concatenation of the wanted groups.
    offset_in_read = np.concatenate(([0], np.cumsum(sizes[wanted])[:-1]))
    slot = np.searchsorted(wanted, group_of)
    return data.take(pa.array(positions - starts[group_of] + offset_in_read[slot]))


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


def read_split(split: Any, bound: Predicate, schema: Mapping[str, DataType], *, use_index: bool = True,
               report: ScanReport | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of one pypaimon split matching the bound predicate, as Arrow batches."""
    report = report if report is not None else ScanReport()
    exact = to_arrow_expression(bound, schema)
    deletion_files = split.data_deletion_files or [None] * len(split.files)
    for meta, deletion_file in zip(split.files, deletion_files, strict=True):
        report.files_planned += 1
        report.rows_planned += meta.row_count
        result: FileIndexResult = REMAIN
        source = container_source(meta) if use_index else None
        if source is not None:
            with ContainerReader(source, meta.file_path) as container:
                result = FileIndexEvaluator(container, schema).evaluate(bound)
        if result.remain and deletion_file is not None:
            result = _subtract_deleted(result, deletion_file, meta.row_count, report)
        if not result.remain:
            report.files_skipped_by_index += 1
            continue
        positions = None
        if isinstance(result, Rows):
            positions = np.frombuffer(result.bitmap.to_array(), dtype=np.uint32).astype(np.int64)
            report.rows_selected_by_index += len(positions)
        rows = read_positions(meta.file_path, positions, report)
        report.rows_read += rows.num_rows
        kept = rows.filter(exact)
        report.rows_returned += kept.num_rows
        yield from kept.to_batches()


def read_arrow(table: Any, predicate: Predicate | str, *,
               use_index: bool = True) -> tuple[pa.Table, ScanReport]:
    """All rows of ``table`` matching ``predicate`` (SQL-like text or a predicate tree)."""
    options = table_options(table)
    if table.is_primary_key_table:
        raise UnsupportedTableError("primary-key tables are not read by this reader yet (they need a merge)")
    schema = table_schema(table)
    bound = bind_predicate(predicate, schema) if isinstance(predicate, str) else predicate
    use_index = use_index and FileIndexOptions.from_table_options(options).read_enabled
    report = ScanReport()
    parts = [batch for split in table.new_read_builder().new_scan().plan().splits()
             for batch in read_split(split, bound, schema, use_index=use_index, report=report)]
    if not parts:
        return pa.schema([]).empty_table(), report
    return pa.Table.from_batches(parts), report
