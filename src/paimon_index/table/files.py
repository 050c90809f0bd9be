"""One data file of a read plan: what its index and deletion vector leave of it, and its rows.

Every reader of a table goes through this module, whatever it does with the rows (the Python read,
primary-key reads, the Spark source's tasks, the planned read's small read, counts, row-level
matching); :mod:`paimon_index.table.scan` makes the plan of a whole snapshot from it.

    plan = file_plan(meta, deletion_file, partition, bucket)     # unresolved: nothing read yet
    plan = resolve(io, plan, bound, schema, report)              # index + vector applied, or None
    rows = read_rows(io, plan, bound, schema, report)            # the matching live rows (Arrow)

A :class:`FilePlan` names one data file (path, partition, bucket, schema id, row count, size, level)
and carries only plain values, so it is what a Spark task receives (never a pypaimon object): the
index container as embedded bytes or the ``.index`` path, the deletion vector's location
(:class:`DeletionRef`), and, once resolved, two optional row sets, both sorted ``int64`` positions:

* ``deleted``: the file's deletion vector (None: no vector) -- rows that must never be returned;
* ``selected``: the rows the indexes kept, minus the deleted ones (None: the index kept every row,
  or no index answered). A superset of the matching live rows; exactly them when ``exact``.

``deletion_needed`` is False for a file whose vector deletes none of the rows the indexes kept: every
row the query can match is a kept row, so a reader applying the query's own filter never returns a
deleted row and may read the file without its vector. When it is True and the indexes kept rows,
``kept_deleted`` holds the deleted rows among them: by the same argument all that such a reader has
to drop (on a primary-key table after an upsert of 10% of the keys, a few thousand positions
instead of a vector of millions).

A task may get a file :meth:`FilePlan.unresolved` (only its locations: a task-sized message; the
task reads the index and the vector itself, through the process's metadata cache).

Schema evolution (:mod:`paimon_index.table.schemas`): a file written with another schema version is
asked the predicate on its own columns (a column it lacks may rule it out, ``files_skipped_by_schema``);
its index answers are then never taken as exact. Its rows are read under the version it was written
with and mapped to the current columns by field id.

**Which index bodies are read** (:func:`weigh_index`, decided per file from its value statistics
before any body is read; :mod:`paimon_index.table.scan` calls it for append tables): an index body
is read only when its answer can change the plan. A leaf the statistics prove true for every row
is not asked (an index adds nothing to it; with every leaf so, the file's plan is exact: a count
takes its live rows), one they prove false for every row is FALSE. A read of *whole files*
(``whole_files``: the planned Spark read, where Spark's filter decides every row and a selection
only decides whether the file is read) also leaves the indexes unread when no index can skip the
file -- the statistics prove a written row matches (:func:`~paimon_index.table.stats.stats_some_match`)
-- or when a skip is unlikely: the statistics estimate at least :data:`INDEX_SKIP_UNLIKELY_ROWS`
matching rows (:func:`~paimon_index.table.stats.stats_fraction`; a heuristic, so it only ever
chooses not to read, REMAIN, never to skip). A file with a deletion vector is always asked there:
its selection may spare the vector (``deletion_needed``). Inside the evaluator, an index type that
cannot answer a leaf's operator is not read either (:func:`~paimon_index.fileindex.evaluate.answers`).
What was read and what not, and why, is in :attr:`ScanReport.index_uses` (one :class:`IndexUse` per
file with an index).

Errors: a deletion vector naming a row past the file's end is a
:class:`~paimon_index.errors.CorruptFileError`; a data, index or DV file the plan lists that is gone
is a :class:`~paimon_index.errors.TableError` naming it (:func:`missing_files_named`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap

from paimon_index.arrow_filter import filter_rows
from paimon_index.deletionvectors.index_file import prefetch_vectors, read_vector
from paimon_index.deletionvectors.vector import BitmapDeletionVector, DeletionVector, sorted_contains
from paimon_index.errors import CorruptFileError, TableError
from paimon_index.fileindex.base import TopN
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, IndexEntry
from paimon_index.fileindex.range_bitmap import RangeBitmapIndex, RangeBitmapReader
from paimon_index.fileindex.result import REMAIN, SKIP, FileIndexResult, Rows, and_not
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, And, Leaf, Or, Predicate, and_, columns_of, or_
from paimon_index.table.fileio import IOCounters, TableIO
from paimon_index.table.metacache import PARSED_WEIGHT_FACTOR, checkout_container, metadata_cache
from paimon_index.table.schemas import FileMapping, mapping_of
from paimon_index.table.stats import (
    ColumnStats,
    stats_all_match,
    stats_fraction,
    stats_may_match,
    stats_some_match,
)
from paimon_index.types import DataType

__all__ = [
    "FILE_PATH_COLUMN",
    "INDEX_FILE_SUFFIX",
    "INDEX_SKIP_UNLIKELY_ROWS",
    "METADATA_COLUMNS",
    "DeletionRef",
    "FilePlan",
    "IndexUse",
    "IndexWeighing",
    "ScanReport",
    "SplitVectors",
    "bitmap_positions",
    "container_source",
    "estimated_matches",
    "exact_selection",
    "file_gone_error",
    "file_plan",
    "index_answer",
    "index_container",
    "missing_file_error",
    "missing_files_named",
    "missing_path",
    "open_container",
    "partition_text",
    "range_bitmap_reader",
    "read_positions",
    "read_rows",
    "resolve",
    "weigh_index",
]

#: A data file's index container beside it: ``<data-file>.index`` (Paimon's name).
INDEX_FILE_SUFFIX = ".index"

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


#: A read of whole files leaves a file's indexes unread when its value statistics estimate at least
#: this many matching rows (values spread evenly between min and max, columns independent): an
#: index skips a file only when *no* row matches, which that estimate puts at about e^-1000 (a
#: Poisson guess); the margin is for values that are not spread evenly (a file whose values leave
#: a gap the query's range falls in is the case this rule gives up: read whole, not skipped).
#: Measured on TPC-H lineitem Q6 (``benchmarks/scan_costs.py``, ``docs/read-path.md``).
INDEX_SKIP_UNLIKELY_ROWS = 1_000

#: Why an index body was not read (:class:`IndexUse`).
STATS_ALL_MATCH = "statistics prove every row matches"
STATS_NONE_MATCH = "statistics prove no row matches"
STATS_SOME_MATCH = "statistics prove a row matches: no index can skip the file"
SKIP_UNLIKELY = "not worth reading: statistics estimate ~{rows:,} matching rows (>= {limit:,})"


@dataclass(frozen=True)
class IndexUse:
    """What one data file's index bodies did for a query: those read, those not, and why."""

    file: str
    #: (column, index type, body bytes) of every body asked for an answer
    read: tuple[tuple[str, str, int], ...] = ()
    #: (column, index type -- empty when the container was not opened --, why) of those left unread
    not_read: tuple[tuple[str, str, str], ...] = ()

    def describe(self) -> str:
        """One line: ``file: read col/type (N bytes), ...; not read col/type (why), ...``."""
        parts = []
        if self.read:
            parts.append("read " + ", ".join(f"{c}/{t} ({n:,} bytes)" for c, t, n in self.read))
        if self.not_read:
            by_why: dict[str, list[str]] = {}
            for c, t, why in self.not_read:
                by_why.setdefault(why, []).append(f"{c}/{t}" if t else c)
            parts.append("not read " + ", ".join(f"{', '.join(names)} ({why})"
                                                 for why, names in by_why.items()))
        return f"{self.file}: {'; '.join(parts) or 'no index asked'}"


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
    #: Index bodies asked for an answer, and those left unread (the plan's cost decisions, the
    #: index types that cannot answer an operator, an AND decided before them).
    index_bodies_read: int = 0
    index_bodies_not_read: int = 0
    #: Per data file with an index: which bodies were read and which not, and why.
    index_uses: list[IndexUse] = field(default_factory=list)

    def merge(self, other: ScanReport) -> ScanReport:
        """Add ``other``'s counts to this report (reports of several splits or executors)."""
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    def as_dict(self) -> dict[str, int]:
        """The counts (:attr:`index_uses` left out)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "index_uses"}

    def index_lines(self) -> list[str]:
        """One line per file with an index: the bodies read and not read (:meth:`IndexUse.describe`)."""
        return [use.describe() for use in self.index_uses]


@dataclass(frozen=True)
class DeletionRef:
    """Where a data file's deletion vector is: its DV index file and the vector's byte range
    (pypaimon's ``DeletionFile`` fields, as plain values)."""

    dv_index_path: str
    offset: int
    length: int
    #: the vector's deleted rows as the index manifest records them (None: not recorded, as by
    #: Paimon before 0.9): a count needs no more
    cardinality: int | None = None

    @classmethod
    def of(cls, deletion_file: Any) -> DeletionRef | None:
        if deletion_file is None:
            return None
        cardinality = getattr(deletion_file, "cardinality", None)
        return cls(str(deletion_file.dv_index_path), int(deletion_file.offset), int(deletion_file.length),
                   None if cardinality is None else int(cardinality))


@dataclass(frozen=True)
class FilePlan:
    """One data file a read must open (see the module docstring)."""

    path: str
    name: str
    partition: tuple[Any, ...]
    bucket: int
    schema_id: int
    row_count: int
    #: bytes of the data file, as the manifest records it
    file_size: int
    #: Rows the indexes kept, minus the deleted ones (None: every live row may match).
    selected: np.ndarray | None = None
    #: The file's deletion vector (None: no vector, or not read yet; never an empty array).
    deleted: np.ndarray | None = None
    #: False when no row the indexes kept is deleted: a reader applying the query's own filter
    #: never meets a deleted row of this file, so it may skip the vector.
    deletion_needed: bool = True
    #: The deleted rows among the rows the indexes kept (None: the indexes kept every row): what a
    #: reader applying the query's own filter must drop, a subset of ``deleted``.
    kept_deleted: np.ndarray | None = None
    #: The file's index container (embedded bytes or the ``.index`` path; None: no index).
    index: bytes | str | None = field(default=None, repr=False)
    #: Where its deletion vector is (None: the file has none).
    deletion: DeletionRef | None = None
    #: LSM level (primary-key tables; 0 for append tables)
    level: int = 0
    #: False: neither the index nor the vector applied yet (``selected``/``deleted`` unset).
    resolved: bool = True
    #: The live rows of ``selected`` (every live row when None) are exactly the matching rows.
    exact: bool = False

    @property
    def live_rows(self) -> int:
        return self.row_count - (0 if self.deleted is None else len(self.deleted))

    def unresolved(self) -> FilePlan:
        """This file with its locations only (what a task needs to resolve and read it itself)."""
        return replace(self, selected=None, deleted=None, deletion_needed=True, kept_deleted=None,
                       resolved=False, exact=False)

    def live_positions(self) -> np.ndarray | None:
        """The positions a reader takes: the selection, else every row minus the deleted ones (None:
        every row)."""
        if self.selected is not None:
            return self.selected
        if self.deleted is None:
            return None
        keep = np.ones(self.row_count, dtype=bool)
        keep[self.deleted] = False
        return np.flatnonzero(keep).astype(np.int64)


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


def file_plan(meta: Any, deletion_file: Any, partition: tuple[Any, ...], bucket: int) -> FilePlan:
    """The unresolved plan of a data file from its manifest entry (pypaimon's ``DataFileMeta``)."""
    return FilePlan(str(meta.file_path), str(meta.file_name), partition, int(bucket), int(meta.schema_id),
                    int(meta.row_count), int(meta.file_size), index=container_source(meta),
                    deletion=DeletionRef.of(deletion_file), level=int(getattr(meta, "level", 0) or 0),
                    resolved=False)


# -- index containers ------------------------------------------------------------------------------
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


# -- deletion vectors ------------------------------------------------------------------------------
class SplitVectors:
    """The deletion vectors of a group of data files, each DV index file read once.

    The first vector asked of an index file fetches every range the group needs from that file in
    one coalesced request (vectors are small; a round trip is not). ``deletions``: the files'
    :class:`DeletionRef` (or pypaimon ``DeletionFile``; None for a file without a vector).
    """

    def __init__(self, io: TableIO, deletions: Sequence[Any], report: ScanReport) -> None:
        self._io = io
        self._report = report
        self._tally = IOCounters()
        self._ranges: dict[str, list[tuple[int, int]]] = {}
        for d in deletions:
            if d is not None:
                self._ranges.setdefault(d.dv_index_path, []).append((d.offset, d.length))
        self._sources: dict[str, Any] = {}

    def read(self, deletion: Any) -> DeletionVector:
        """The file's vector (do not mutate it: it may be shared through the metadata cache)."""
        path = deletion.dv_index_path
        cache = metadata_cache()
        key = ("dv", path, deletion.offset, deletion.length)
        if cache.enabled:
            cached = cache.get(key)
            if cached is not None:
                self._report.metadata_cache_hits += 1
                return cast(DeletionVector, cached)
        source = self._sources.get(path)
        if source is None:
            source = self._sources[path] = self._io.source(path, tally=self._tally)
            prefetch_vectors(source, self._ranges.get(path, [(deletion.offset, deletion.length)]))
        vector = read_vector(source, deletion.offset, deletion.length)
        if cache.enabled:  # DV index files are never rewritten under one name
            cache.put(key, vector, PARSED_WEIGHT_FACTOR * (deletion.length or 0))
        return vector

    def deleted_positions(self, deletion: Any, row_count: int, vector: DeletionVector | None = None
                          ) -> np.ndarray | None:
        """The file's deletion vector (``vector``: already :meth:`read`) as sorted positions (None
        when it deletes nothing)."""
        if vector is None:
            vector = self.read(deletion)
        positions = np.asarray(vector.positions(), dtype=np.int64)
        if len(positions) and int(positions[-1]) >= row_count:
            raise _past_the_end(deletion, int(positions[-1]), row_count)
        return positions if len(positions) else None

    def close(self) -> None:
        for source in self._sources.values():
            source.close()
        self._sources.clear()
        self._report.dv_requests += self._tally.read_requests
        self._report.files_opened += self._tally.other_requests
        self._tally = IOCounters()

    def __enter__(self) -> SplitVectors:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _past_the_end(deletion: Any, row: int, row_count: int) -> CorruptFileError:
    return CorruptFileError(f"deletion vector holds row {row} of a {row_count}-row file",
                            path=deletion.dv_index_path, offset=deletion.offset, field="deletion vector")


# -- weighing: which index bodies are worth reading ---------------------------------------------
@dataclass(frozen=True)
class IndexWeighing:
    """What a file's index is asked, decided from its value statistics (:func:`weigh_index`)."""

    #: The predicate the index is asked (ALWAYS_TRUE: none; ALWAYS_FALSE: no row matches).
    asked: Predicate
    #: (column, why) of the leaves not asked.
    not_asked: tuple[tuple[str, str], ...] = ()
    #: The statistics prove every row of the file matches (the whole predicate).
    every_row: bool = False


def _reduce(p: Predicate, stats: Mapping[str, ColumnStats], schema: Mapping[str, DataType],
            notes: list[tuple[str, str]]) -> Predicate:
    """``p`` with each leaf the statistics prove true for every row TRUE, false for every row FALSE."""
    if isinstance(p, Leaf):
        if stats_all_match(p, stats, schema):
            notes.append((p.column, STATS_ALL_MATCH))
            return ALWAYS_TRUE
        if not stats_may_match(p, stats, schema):
            notes.append((p.column, STATS_NONE_MATCH))
            return ALWAYS_FALSE
        return p
    if isinstance(p, And):
        return and_(*(_reduce(c, stats, schema, notes) for c in p.children))
    if isinstance(p, Or):
        return or_(*(_reduce(c, stats, schema, notes) for c in p.children))
    return p


def weigh_index(bound: Predicate, stats: Mapping[str, ColumnStats], schema: Mapping[str, DataType],
                row_count: int, *, whole_files: bool, deletions: bool) -> IndexWeighing:
    """What a data file's index is worth asking for ``bound``, from the file's value ``stats``
    (:class:`~paimon_index.table.stats.FileStats`) alone (see the module docstring).

    ``whole_files``: the reader reads whole files and applies the WHERE itself (a selection only
    decides whether the file is read); ``deletions``: the file has a deletion vector. Never drops a
    matching row: the answer only ever leaves out leaves that cannot change the index's answer, or
    (``whole_files``) asks nothing, which answers REMAIN.
    """
    notes: list[tuple[str, str]] = []
    asked = _reduce(bound, stats, schema, notes)
    if asked is ALWAYS_TRUE:
        return IndexWeighing(asked, tuple(notes), every_row=True)
    if asked is ALWAYS_FALSE or not whole_files or deletions:
        return IndexWeighing(asked, tuple(notes))
    columns = columns_of(asked)
    if stats_some_match(asked, stats, schema):
        return IndexWeighing(ALWAYS_TRUE, (*notes, *((c, STATS_SOME_MATCH) for c in columns)))
    fraction = stats_fraction(asked, stats, schema)
    if fraction is not None and fraction * row_count >= INDEX_SKIP_UNLIKELY_ROWS:
        why = SKIP_UNLIKELY.format(rows=round(fraction * row_count), limit=INDEX_SKIP_UNLIKELY_ROWS)
        return IndexWeighing(ALWAYS_TRUE, (*notes, *((c, why) for c in columns)))
    return IndexWeighing(asked, tuple(notes))


def estimated_matches(bound: Predicate, stats: Mapping[str, ColumnStats], schema: Mapping[str, DataType],
                      row_count: int) -> float | None:
    """The statistics' estimate of a file's rows matching ``bound`` (None: none): 0 when they prove
    no row matches, every row when they prove all do, else
    :func:`~paimon_index.table.stats.stats_fraction` of the rows."""
    notes: list[tuple[str, str]] = []
    reduced = _reduce(bound, stats, schema, notes)
    fraction = stats_fraction(reduced, stats, schema)
    return None if fraction is None else fraction * row_count


def _entry_use(entry: IndexEntry) -> tuple[str, str, int]:
    return entry.column, entry.index_type, entry.length


def _record_use(report: ScanReport, plan: FilePlan, evaluator: FileIndexEvaluator | None,
                not_asked: Sequence[tuple[str, str]]) -> None:
    read = tuple(_entry_use(e) for e in evaluator.read) if evaluator is not None else ()
    unread = tuple((e.column, e.index_type, why) for e, why in evaluator.unread.items()) \
        if evaluator is not None else ()
    unread = (*unread, *((column, "", why) for column, why in dict.fromkeys(not_asked)))
    if not read and not unread:
        return
    report.index_bodies_read += len(read)
    report.index_bodies_not_read += len(unread)
    report.index_uses.append(IndexUse(plan.name, read, unread))


# -- resolving: what the index and the vector leave ----------------------------------------------
def bitmap_positions(bitmap: BitMap) -> np.ndarray:
    """A row bitmap as the sorted ``int64`` positions a :class:`FilePlan` holds."""
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32).astype(np.int64)


def resolve(io: TableIO, plan: FilePlan, bound: Predicate, schema: Mapping[str, DataType],
            report: ScanReport, *, vectors: SplitVectors | None = None, topn: TopN | None = None,
            use_index: bool = True, exact_answers: bool = False,
            weighing: IndexWeighing | None = None, superseded: np.ndarray | None = None) -> FilePlan | None:
    """``plan`` with its deletion vector read and its index asked ``bound`` (and ``topn``): the
    rows that may match, or None when no live row of the file can. A resolved plan comes back as it
    is (counted as planned). ``vectors``: the group's vector source (default: the file's own).
    ``exact_answers``: also make the index answers exact that need one more bitmap (a count's).
    ``weighing``: what the file's statistics leave worth asking (:func:`weigh_index`; without
    ``topn``), else the index is asked ``bound``. ``superseded``: sorted positions a merge by key
    removes (a merge-on-read table's older versions, :mod:`paimon_index.table.pk.versions`),
    subtracted as the vector is (the plan's ``deleted`` holds both)."""
    report.files_planned += 1
    report.rows_planned += plan.row_count
    if plan.resolved:
        return plan
    if plan.deletion is not None and vectors is None:
        with SplitVectors(io, [plan.deletion], report) as own:
            return _resolve(io, plan, bound, schema, report, own, topn, use_index, exact_answers, weighing,
                            superseded)
    return _resolve(io, plan, bound, schema, report, vectors, topn, use_index, exact_answers, weighing,
                    superseded)


def _resolve(io: TableIO, plan: FilePlan, bound: Predicate, schema: Mapping[str, DataType],
             report: ScanReport, vectors: SplitVectors | None, topn: TopN | None, use_index: bool,
             exact_answers: bool, weighing: IndexWeighing | None = None,
             superseded: np.ndarray | None = None) -> FilePlan | None:
    deleted = None
    deleted_bitmap: BitMap | None = None  # the vector as a bitmap, where it is one and all of ``deleted``
    if plan.deletion is not None:
        assert vectors is not None
        vector = vectors.read(plan.deletion)
        deleted = vectors.deleted_positions(plan.deletion, plan.row_count, vector)
        if isinstance(vector, BitmapDeletionVector):
            deleted_bitmap = vector.bitmap
    if superseded is not None and len(superseded):
        deleted = superseded if deleted is None else np.union1d(deleted, superseded)
        deleted_bitmap = None
    selected: np.ndarray | None = None
    kept_deleted: np.ndarray | None = None
    deletion_needed = deleted is not None
    exact = bound is ALWAYS_TRUE
    topn = topn if use_index else None
    asked = bound
    if use_index and weighing is not None and topn is None and bound is not ALWAYS_TRUE:
        asked = weighing.asked
        if asked is ALWAYS_FALSE:
            report.files_skipped_by_stats += 1
            return None
        if asked is ALWAYS_TRUE:
            if plan.index is not None:
                _record_use(report, plan, None, weighing.not_asked)
            mapping = mapping_of(schema, plan)
            exact = weighing.every_row and (mapping is None or mapping.identity)
    if use_index and (asked is not ALWAYS_TRUE or topn is not None):
        not_asked = () if weighing is None or asked is bound else weighing.not_asked
        result = index_answer(io, plan, asked, schema, report, topn, deleted, exact_answers,
                              not_asked=not_asked)
        if not result.remain:
            report.files_skipped_by_index += 1
            return None
        if isinstance(result, Rows):
            exact = result.exact and topn is None
            if deleted is not None and deleted_bitmap is not None and topn is None:
                # Both bitmaps: roaring's AND / AND-NOT (~0.2 ms a file of 1.5M rows, 15% deleted,
                # against ~1.4 ms for the positions' lookup below).
                kept_deleted = bitmap_positions(result.bitmap & deleted_bitmap)
                kept = bitmap_positions(result.bitmap - deleted_bitmap)
            elif deleted is not None and topn is None:  # TopN candidates are live rows already
                kept = bitmap_positions(result.bitmap)
                is_deleted = sorted_contains(deleted, kept)
                kept_deleted = kept[is_deleted]
                kept = kept[~is_deleted]
            else:
                kept = bitmap_positions(result.bitmap)
            if kept_deleted is not None:
                report.rows_removed_by_deletion_vectors += len(kept_deleted)
                # Every row the query can match is a kept row: only the deleted ones among them count.
                deletion_needed = bool(len(kept_deleted))
            report.rows_selected_by_index += len(kept)  # live rows: what a reader takes
            if not len(kept):
                report.files_skipped_by_index += 1
                return None
            selected = kept
    if deleted is not None and selected is None:
        report.rows_removed_by_deletion_vectors += len(deleted)
        if len(deleted) >= plan.row_count:
            report.files_skipped_by_index += 1  # every row deleted
            return None
    return replace(plan, selected=selected, deleted=deleted, deletion_needed=deletion_needed,
                   kept_deleted=kept_deleted, resolved=True, exact=exact)


def index_answer(io: TableIO | None, plan: FilePlan, bound: Predicate, schema: Mapping[str, DataType],
                 report: ScanReport, topn: TopN | None, deleted: np.ndarray | None,
                 exact_answers: bool, *, not_asked: Sequence[tuple[str, str]] = ()) -> FileIndexResult:
    """What the file's index leaves for ``bound`` (and, with ``topn``, the TopN candidates among the
    live matching rows). A file of another schema version is asked on its own columns. What it read
    goes to ``report.index_uses``, with ``not_asked`` (column, why) of the leaves left out."""
    mapping = mapping_of(schema, plan)
    identity = mapping is None or mapping.identity
    file_bound, file_types = bound, schema
    if not identity:
        assert mapping is not None
        file_bound, file_types = mapping.index_predicate(bound), mapping.index_types
        topn = None if topn is None else mapping.index_topn(topn)
        if file_bound == ALWAYS_FALSE:
            report.files_skipped_by_schema += 1
            return SKIP
    result: FileIndexResult = REMAIN
    with index_container(io, plan.path, plan.index, report) as (container, readers):
        if container is None:
            return REMAIN
        evaluator = FileIndexEvaluator(container, file_types, readers=readers, exact_answers=exact_answers)
        result = evaluator.evaluate(file_bound)
        if not identity and isinstance(result, Rows):
            result = Rows(result.bitmap)  # an evolved file's answer is only ever a superset
        if topn is not None and result.remain:
            if deleted is not None:
                result = and_not(result, BitMap(deleted.astype(np.uint32)), plan.row_count)
            if bound is not ALWAYS_TRUE:
                assert io is not None, "TopN reads data files through io"
                result = exact_selection(io, plan, result, bound, schema, report)
            result = evaluator.evaluate_topn(topn, result)
            if isinstance(result, Rows):
                report.rows_kept_by_topn += len(result.bitmap)
        _record_use(report, plan, evaluator, not_asked)
    return result


def exact_selection(io: TableIO, plan: FilePlan, result: FileIndexResult, bound: Predicate,
                    schema: Mapping[str, DataType], report: ScanReport) -> Rows:
    """The rows of ``result`` that satisfy ``bound`` exactly, reading only its columns."""
    positions = bitmap_positions(result.bitmap) if isinstance(result, Rows) else None
    if positions is None:
        positions = np.arange(plan.row_count, dtype=np.int64)
    rows = _read_file(io, plan, positions, report, mapping_of(schema, plan), columns_of(bound))
    rows = rows.append_column(_POSITION, pa.array(positions))
    matching = filter_rows(rows, bound, schema).column(_POSITION)
    return Rows(BitMap(matching.to_numpy().astype(np.uint32)), exact=True)


# -- reading rows ---------------------------------------------------------------------------------
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
    if data.num_columns == 0:
        # No column read (a count, or a WHERE only on columns this file's schema lacks): Arrow's take
        # of a table without columns keeps no row, and only the number of rows matters here.
        return data.slice(0, len(local))
    if len(local) * DENSE_SELECTION_DIVISOR > data.num_rows:
        # Most rows wanted (e.g. all but the deleted ones): a mask filter beats a gather.
        mask = np.zeros(data.num_rows, dtype=bool)
        mask[local] = True
        return data.filter(pa.array(mask))
    return data.take(pa.array(local))


def _read_file(io: TableIO, plan: FilePlan, positions: np.ndarray | None, report: ScanReport,
               mapping: FileMapping | None, columns: list[str] | None = None) -> pa.Table:
    """The rows at ``positions`` of a data file under the current schema (``columns`` of it, or all)."""
    if mapping is None:
        return read_positions(plan.path, positions, report, columns=columns, io=io)
    rows = read_positions(plan.path, positions, report, columns=mapping.file_columns(columns), io=io)
    return mapping.evolve(rows, columns, path=plan.path)


def partition_text(partition_keys: Sequence[str], partition: Any) -> str:
    """A partition as ``k1=v1/k2=v2`` (empty for an unpartitioned table)."""
    values = list(getattr(partition, "values", partition) or [])
    return "/".join(f"{k}={v}" for k, v in zip(partition_keys, values, strict=False))


def _constant_strings(value: str, count: int) -> pa.Array:
    """``count`` copies of ``value`` as a string array, built from its buffers (one allocation each;
    a Python object per row cost seconds per million rows)."""
    data = value.encode()
    if count * len(data) >= 2**31:  # past 32-bit offsets: Arrow's own repeat
        return pa.repeat(pa.scalar(value, pa.string()), count)
    offsets = (np.arange(count + 1, dtype=np.int64) * len(data)).astype(np.int32)
    return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data * count))


def _with_row_ids(rows: pa.Table, plan: FilePlan, partition: str) -> pa.Table:
    """``rows`` (their positions already in :data:`ROW_INDEX_COLUMN`) with the metadata columns in
    :data:`METADATA_COLUMNS` order; added after the filter, so only for the rows kept."""
    count = rows.num_rows
    index = rows.column(ROW_INDEX_COLUMN)
    rows = rows.drop_columns([ROW_INDEX_COLUMN])
    extra = {FILE_PATH_COLUMN: _constant_strings(plan.path, count), ROW_INDEX_COLUMN: index,
             PARTITION_COLUMN: _constant_strings(partition, count),
             BUCKET_COLUMN: pa.array(np.full(count, plan.bucket, dtype=np.int32))}
    for name, column in extra.items():
        rows = rows.append_column(name, column)
    return rows


def read_rows(io: TableIO, plan: FilePlan, bound: Predicate, schema: Mapping[str, DataType],
              report: ScanReport, *, columns: Sequence[str] | None = None,
              row_ids: Sequence[str] | None = None) -> pa.Table:
    """The live rows of a resolved ``plan`` that satisfy ``bound`` (the exact re-check: index answers
    are supersets), under the current schema: ``columns`` of it (all when None; the predicate's
    columns are read too and dropped after the filter). ``row_ids`` (the table's partition keys)
    adds the metadata columns :data:`METADATA_COLUMNS`."""
    assert plan.resolved, "resolve() a file before reading it"
    positions = plan.live_positions()
    wanted = None if columns is None else list(dict.fromkeys([*columns, *columns_of(bound)]))
    rows = _read_file(io, plan, positions, report, mapping_of(schema, plan), wanted)
    report.rows_read += rows.num_rows
    if row_ids is not None:  # the positions go through the filter; the constant columns after it
        index = positions if positions is not None else np.arange(rows.num_rows, dtype=np.int64)
        rows = rows.append_column(ROW_INDEX_COLUMN, pa.array(index, pa.int64()))
    if bound is not ALWAYS_TRUE:
        rows = filter_rows(rows, bound, schema)
    if row_ids is not None:
        rows = _with_row_ids(rows, plan, partition_text(row_ids, plan.partition))
    report.rows_returned += rows.num_rows
    if columns is not None:
        rows = rows.select([*columns, *(METADATA_COLUMNS if row_ids is not None else ())])
    return rows


# -- errors ------------------------------------------------------------------------------------------
def missing_file_error(what: str, error: FileNotFoundError) -> TableError:
    """A data, index or DV file a plan lists that is gone (removed by hand, or by an expiry or orphan
    clean-up that ran while an old snapshot was read), as a :class:`~paimon_index.errors.TableError`
    naming the file; ``what``: the operation, e.g. ``"read of db.t (snapshot 4)"``."""
    return TableError(f"{what}: a file it lists is missing: {missing_path(error)}")


def missing_path(error: FileNotFoundError) -> str:
    """The path a ``FileNotFoundError`` names (in its ``filename``, or quoted in its message)."""
    if error.filename:
        return str(error.filename)
    quoted = re.search(r"'([^']+)'", str(error))  # pyarrow names the path only in its message
    return quoted.group(1) if quoted else str(error)


def file_gone_error(table: Any, what: str, error: FileNotFoundError, planned: int | None = None
                    ) -> TableError:
    """A file the change ``what`` needed went missing while it ran.

    A refusal (:class:`~paimon_index.errors.ConcurrentChangeError`: run it again) when a newer
    commit replaced the file and an expiry removed it -- the change would have been refused at its
    commit anyway: the snapshot ``planned`` it planned on no longer exists, or (``planned`` unknown)
    the latest snapshot does not reference the file (by name: unique in a table, whatever the path's
    spelling). Else the error naming the file (removed by hand). Found by the concurrent histories:
    ``rewrite_file_index`` raised a raw ``FileNotFoundError``, as a DELETE's fold of level-0 files
    once did."""
    from paimon_index.errors import ConcurrentChangeError
    from paimon_index.table.maintenance import referenced_files
    from paimon_index.table.paimon import latest_snapshot, snapshot_exists

    path = missing_path(error)
    if planned is not None:
        if not snapshot_exists(table, planned):
            return ConcurrentChangeError(f"{what}: snapshot {planned} it planned on was expired while it "
                                         f"ran ({path} is gone); run it again")
        return missing_file_error(f"{what} (snapshot {planned})", error)
    latest = latest_snapshot(table)
    if latest is not None:
        names = {posixpath.basename(p) for p in referenced_files(table, latest, missing_ok=True)}
        if posixpath.basename(path) not in names:
            return ConcurrentChangeError(f"{what}: {path} was replaced by a newer commit and expired while "
                                         "it ran; run it again")
    return missing_file_error(what, error)


@contextmanager
def missing_files_named(what: str) -> Iterator[None]:
    """:func:`missing_file_error` for whatever runs inside."""
    try:
        yield
    except FileNotFoundError as e:
        raise missing_file_error(what, e) from e
