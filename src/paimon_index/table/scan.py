"""The one read plan: which data files a query must read, and which rows of them are live.

    plan = plan_read(table, "status = 'PAID' OR id = 7", snapshot_id=None, use_index=True)
    plan.snapshot_id                  # the one pinned snapshot everything below comes from
    plan.files                        # FilePlan per data file that may hold a matching live row
    plan.predicate, plan.exact        # what the indexes were asked; exact = the whole WHERE text
    plan.report                       # ScanReport: files skipped by stats / index / schema / DVs
    topn_bound(plan, "score", 10, ascending=False)   # ORDER BY score DESC LIMIT 10 keeps score >= it

Every reader plans here, once per query: the Python read and primary-key reads
(:mod:`paimon_index.table.read`), counts and min/max (:mod:`paimon_index.table.aggregate`, with
``exact_answers``), row-level matching (:mod:`paimon_index.table.row_level`), the planned Spark read
and its small read (:mod:`paimon_index.spark.planned`), and the ``paimon_index`` source, whose plan is
``defer``-red: its files go to the tasks unresolved and the tasks resolve them where the data is.
The WHERE is bound once (:func:`bind_where` for the Python API, :func:`conservative_predicate` for
Spark SQL text), the snapshot pinned once, ``use_index`` decided once (with
``file-index.read.enabled``). Each file is a :class:`~paimon_index.table.files.FilePlan` (plain
values; see :mod:`paimon_index.table.files` for its row sets and how it is resolved and read).

Files absent from ``plan.files`` hold no matching live row: their value statistics rule the
predicate out (:func:`paimon_index.table.stats.plan_splits`), their index answers SKIP (embedded or
``<data-file>.index``, for the *whole* predicate, ORs included), they were written before a column
the predicate needs non-NULL (schema evolution), or every selected row is deleted.

**WHERE text a reader applies itself.** :func:`conservative_predicate` turns Spark SQL text into a
predicate the indexes can answer: the whole text when :mod:`paimon_index.sql` parses it; otherwise
its top-level OR / AND parts (cut on :mod:`paimon_index.sql`'s tokens, quotes and escapes read as
Spark reads them; never inside parentheses, ``CASE ... END`` or a ``BETWEEN``), each part that does
not parse replaced by TRUE (an AND keeps the others, an OR with an unknown part is TRUE). The
result is a superset of the rows the text keeps, so pruning with it never drops a row the reader's
own filter would keep; ``exact`` says whether nothing was replaced (TopN candidates are only taken
among rows of an exact predicate).

Costs: one pass over the manifests (pypaimon's plan with the statistics filter); no index is read
when the predicate is TRUE; deletion vectors are read by their manifest ranges only. An index body
is read only when its answer can change the plan (:func:`paimon_index.table.files.weigh_index`,
decided per append-table file from its value statistics): never for a leaf the statistics prove
true for every row of the file, and, for a reader of whole files (``whole_files=True``: the planned
Spark read), not when no index can skip the file or a skip is unlikely. The plan's
``report.index_uses`` says per file what was read and what not, and why.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pyroaring import BitMap

from paimon_index.errors import PaimonIndexError, UnsupportedTableError
from paimon_index.fileindex.base import TopN
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.options import FileIndexOptions
from paimon_index.predicate import ALWAYS_TRUE, And, Leaf, Or, Predicate, and_, or_, without_computed
from paimon_index.sql import bind_predicate, split_top_level, unwrap_parentheses
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import (
    FilePlan,
    ScanReport,
    SplitVectors,
    estimated_matches,
    file_plan,
    index_answer,
    index_container,
    missing_files_named,
    range_bitmap_reader,
    resolve,
    weigh_index,
)
from paimon_index.table.paimon import pinned_current, pinned_table, read_snapshot, table_options
from paimon_index.table.schemas import ReadSchema, mapping_of, read_schema
from paimon_index.table.stats import ColumnStats, plan_splits
from paimon_index.types import TypeRoot

__all__ = ["FilePlan", "ReadPlan", "bind_where", "conservative_predicate", "plan_read", "topn_bound",
           "topn_prune"]


@dataclass(frozen=True)
class ReadPlan:
    """Every data file of one pinned snapshot a query must read."""

    snapshot_id: int | None
    schema: ReadSchema
    predicate: Predicate
    exact: bool
    files: tuple[FilePlan, ...]
    report: ScanReport
    primary_key: bool = False
    #: wall-clock seconds spent planning (manifests, statistics, indexes, vectors)
    seconds: float = 0.0
    #: pypaimon table pinned to the snapshot (None for an empty table)
    table: Any = field(default=None, repr=False)

    @property
    def rows_planned(self) -> int:
        return sum(f.row_count for f in self.files)


# -- WHERE text -> a predicate ----------------------------------------------------------------------
def bind_where(where: str | Predicate | None, schema: Mapping[str, Any]) -> Predicate:
    """The Python API's WHERE (SQL-like text, bound strictly, or a predicate tree; None: TRUE) --
    every reader's one binding (the read plan's, and the merge readers' of tables it refuses).

    Raises:
        InvalidPredicateError: text that does not parse or does not fit the schema.
    """
    if where is None:
        return ALWAYS_TRUE
    return bind_predicate(where, schema) if isinstance(where, str) else where


# -- WHERE text -> a superset predicate --------------------------------------------------------------
def conservative_predicate(text: str | None, schema: Mapping[str, Any]) -> tuple[Predicate, bool]:
    """(a predicate keeping every row ``text`` keeps, whether it is exactly ``text``).

    See the module docstring; never raises for text our parser does not know.
    """
    if text is None or not text.strip():
        return ALWAYS_TRUE, True
    try:
        bound = bind_predicate(text, schema)
    except PaimonIndexError:
        pass
    else:
        # Arithmetic (Computed) is Spark's to evaluate: a superset without it, and not exact.
        scalar = without_computed(_scalar_only(bound, schema))
        return scalar, scalar == bound
    disjuncts = split_top_level(text, "OR")
    if len(disjuncts) > 1 and all(disjuncts):
        parts = [conservative_predicate(d, schema) for d in disjuncts]
        return or_(*(p for p, _ in parts)), all(e for _, e in parts)
    conjuncts = split_top_level(text, "AND")
    if len(conjuncts) > 1 and all(conjuncts):
        parts = [conservative_predicate(c, schema) for c in conjuncts]
        return and_(*(p for p, _ in parts)), all(e for _, e in parts)
    inner = unwrap_parentheses(text)
    if inner is not None:
        return conservative_predicate(inner, schema)
    return ALWAYS_TRUE, False


def _scalar_only(p: Predicate, schema: Mapping[str, Any]) -> Predicate:
    """``p`` with every leaf on a nested column (ROW, ARRAY, MAP: no index, no statistics) TRUE."""
    return _true_where(p, lambda dtype: dtype is None or dtype.is_nested, schema)


def _true_where(p: Predicate, opaque: Callable[[Any], bool], schema: Mapping[str, Any]) -> Predicate:
    """``p`` with every leaf whose column type ``opaque`` holds for TRUE (a superset: NOT is at the
    leaves already, so a TRUE leaf only widens an AND or an OR)."""
    if isinstance(p, Leaf):
        return ALWAYS_TRUE if opaque(schema.get(p.column)) else p
    if isinstance(p, And):
        return and_(*(_true_where(c, opaque, schema) for c in p.children))
    if isinstance(p, Or):
        return or_(*(_true_where(c, opaque, schema) for c in p.children))
    return p


#: Session time zones that read a wall-clock literal as UTC (Spark accepts region ids and offsets).
_UTC_ZONES = frozenset({"UTC", "GMT", "Z", "UCT", "ZULU", "UNIVERSAL", "ETC/UTC", "ETC/GMT", "ETC/UCT",
                        "ETC/ZULU", "ETC/UNIVERSAL", "ETC/GMT0", "GMT0", "+00:00", "-00:00", "UTC+00:00"})


def _ltz_opaque(dtype: Any) -> bool:
    return dtype is not None and dtype.root is TypeRoot.TIMESTAMP_LTZ


# -- planning ------------------------------------------------------------------------------------------
def plan_read(table: Any, where: str | Predicate | None = None, *, snapshot_id: int | None = None,
              use_index: bool = True, topn: TopN | None = None, session_time_zone: str | None = None,
              strict: bool = False, defer: bool = False, exact_answers: bool = False,
              whole_files: bool = False, small_read: tuple[int, int] | None = None,
              read_optimized: bool = False, keep_deleting: bool = False) -> ReadPlan:
    """Plan a read of ``table`` (pypaimon table) on one pinned snapshot (default: the latest).

    The plan's schema is the table's current one, or with ``snapshot_id`` that snapshot's (time
    travel reads an older snapshot as it was written, as pypaimon and Java do).

    ``where``: Spark SQL text (made a superset by :func:`conservative_predicate`) or a bound
    predicate (taken as exact; bind Spark's text once with :func:`conservative_predicate`).
    ``topn``: keep only the files holding a TopN candidate (only used with an exact predicate).
    ``use_index=False`` (or ``file-index.read.enabled = false``) skips statistics and indexes:
    every live file is planned. ``session_time_zone``: the Spark session's
    (``spark.sql.session.timeZone``) when Spark applies the WHERE: Spark reads a TIMESTAMP
    literal against a TIMESTAMP_LTZ column as wall-clock time there, this parser as UTC, so outside
    UTC such leaves prune nothing (TRUE; the plan is then not exact).

    ``strict``: WHERE text must parse whole (the Python API's rule; an error names what does not).
    ``defer``: leave the files unresolved for the tasks that read them (a Spark source's plan): the
    driver drops only the files an embedded index or their schema version rules out, and reads no
    ``.index`` file and no vector. ``exact_answers``: also make the index answers exact that need
    one more bitmap (a count's; :class:`~paimon_index.table.files.FilePlan` ``exact``).
    ``whole_files``: the reader reads every row of the files it is given and applies the WHERE
    itself (the planned Spark read): a row selection only decides whether a file is read, so an
    index is read only where it may skip the file (or spare a deletion vector) -- see
    :func:`~paimon_index.table.files.weigh_index`. ``small_read``: (files, rows) -- such a reader
    reads a plan of at most that many files and matching rows itself, from the selections (the
    planned read's small read): while the statistics cannot estimate the plan's matching rows at
    ``rows`` or more, it is planned as a reader of rows.

    A primary-key table without deletion vectors whose keys have several versions (level-0 files,
    more than one level) is planned with each key's older versions subtracted as if deleted
    (:mod:`paimon_index.table.pk.versions`; not ``defer``-red: a task would not know them).

    ``read_optimized``: Paimon's ``t$ro`` (Java's ``ReadOptimizedTable``): of a primary-key table,
    only the files at the top level (``num-levels`` - 1), each read as it is (minus its deletion
    vector): what full compactions have produced, no merge. One level is one sorted run, so no key
    has two versions there. An append table reads as without it. ``keep_deleting``: a key of a
    primary-key table without deletion vectors whose newest version is a ``-U``/``-D`` keeps that
    row (Java's merge with ``forceKeepDelete``: ``t$audit_log``).

    Raises:
        UnsupportedTableError: a primary-key table whose files need a merge the plan cannot subtract
            (another merge engine, a NULL or floating-point key, tied sequence numbers; ``defer``;
            level-0 files under ``deletion-vectors.merge-on-read``); ``read_optimized``: a top-level
            file holding deleting rows (``-U``/``-D``, which a full compaction drops).
        InvalidPredicateError: (``strict``) WHERE text that does not parse or fit the schema.
        TableError: a file the snapshot lists is missing.
        PaimonIndexError: ``snapshot_id`` does not exist; a corrupt index or deletion vector.
    """
    started = time.perf_counter()
    if snapshot_id is not None:
        # Time travel reads under the snapshot's schema (pypaimon resolves it when pinning), as Java does.
        table = pinned_table(table, snapshot_id)
    schema = read_schema(table)
    if strict or not (isinstance(where, str) or where is None):
        bound, exact = bind_where(where, schema), True
    else:
        bound, exact = conservative_predicate(where, schema)
    if session_time_zone is not None and session_time_zone.strip().upper() not in _UTC_ZONES:
        wide = _true_where(bound, _ltz_opaque, schema)
        bound, exact = wide, exact and wide == bound
    use_index = use_index and FileIndexOptions.from_table_options(table_options(table)).read_enabled
    primary_key = bool(table.is_primary_key_table)
    report = ScanReport()
    superseded: dict[str, np.ndarray] | None = None  # merge-on-read: older versions, per file
    snapshot = read_snapshot(table)  # the pinned one (time travel), else the latest; read once
    if snapshot is None:
        return ReadPlan(None, schema, bound, exact, (), report, primary_key, time.perf_counter() - started)
    # Pinned under ``table``'s own schema: the latest snapshot may predate a schema change (which
    # commits none), and its files are read under today's columns.
    pinned = table if snapshot_id is not None else pinned_current(table, snapshot.id)
    io = TableIO.of(pinned)
    top_level: int | None = None  # read_optimized: the only level read
    if primary_key and read_optimized:
        from paimon_index.table.pk.plan import max_level

        top_level = max_level(table_options(pinned))
    elif primary_key:
        from paimon_index.table.pk.plan import check_merge_free, dv_mode, raw_readable
        from paimon_index.table.pk.versions import superseded_positions

        if not dv_mode(pinned):
            # Without deletion vectors: read as it is where no key has two versions, else with each
            # key's older versions subtracted as a vector (deduplicate), computed here: a task
            # resolving a deferred plan would not know them.
            if defer:
                readable = raw_readable(pinned, snapshot)
            else:
                superseded = superseded_positions(pinned, snapshot, io, keep_deleting=keep_deleting)
                readable = superseded is not None
            if not readable:
                raise UnsupportedTableError(
                    "primary-key tables without deletion vectors need a merge by key (this snapshot has "
                    "level-0 files or more than one level): read them with Table.read, or compact them "
                    "fully")
        elif not check_merge_free(pinned):
            raise UnsupportedTableError("this primary-key table has level-0 files that need a merge "
                                        "(deletion-vectors.merge-on-read): compact it first, or read it "
                                        "with Table.read")
    prune = bound if use_index else ALWAYS_TRUE
    topn = topn if use_index and exact else None
    files: list[FilePlan] = []
    # Append tables only, as the statistics filter (plan_splits); not with TopN (its candidates).
    weigh = not defer and not primary_key and topn is None and prune is not ALWAYS_TRUE
    kept_stats: dict[str, dict[str, ColumnStats]] | None = {} if weigh else None
    with missing_files_named(f"planning a read of snapshot {snapshot.id}"):
        splits = plan_splits(pinned, prune, schema, report, kept_stats=kept_stats)
        if kept_stats is not None and whole_files and small_read is not None:
            whole_files = not _may_be_small(splits, bound, kept_stats, schema, *small_read)
        for split in splits:
            deletions = split.data_deletion_files or [None] * len(split.files)
            partition = tuple(split.partition.values or ())
            unresolved = [file_plan(meta, deletion, partition, int(split.bucket))
                          for meta, deletion in zip(split.files, deletions, strict=True)
                          if top_level is None or _top_level_file(meta, top_level)]
            if defer:
                files.extend(f for f in unresolved if _may_match_on_driver(f, prune, schema, report))
                continue
            # Each DV index file of the split is read once, every vector the split needs in one request.
            with SplitVectors(io, deletions, report) as vectors:
                for f in unresolved:
                    weighing = None if kept_stats is None else weigh_index(
                        bound, kept_stats.get(f.name, {}), schema, f.row_count,
                        whole_files=whole_files, deletions=f.deletion is not None)
                    planned = resolve(io, f, bound, schema, report, vectors=vectors, topn=topn,
                                      use_index=use_index, exact_answers=exact_answers, weighing=weighing,
                                      superseded=None if superseded is None else superseded.get(f.name))
                    if planned is not None:
                        files.append(planned)
    return ReadPlan(int(snapshot.id), schema, bound, exact, tuple(files), report, primary_key,
                    time.perf_counter() - started, pinned)


def _top_level_file(meta: Any, top_level: int) -> bool:
    """Whether a primary-key data file is at ``top_level`` (read as it is); one there holding a
    deleting row would need the merge the read-optimized read does not make."""
    if int(meta.level) != top_level:
        return False
    if meta.delete_row_count:
        raise UnsupportedTableError(
            f"data file {meta.file_name} at the top level {top_level} holds {meta.delete_row_count} deleting "
            "rows (-U/-D): the read-optimized table reads files as they are; read the table itself")
    return True


def _may_be_small(splits: list[Any], bound: Predicate, kept_stats: Mapping[str, Mapping[str, ColumnStats]],
                  schema: ReadSchema, max_files: int, max_rows: int) -> bool:
    """Whether a plan of ``splits`` may be read small (at most ``max_files`` files and ``max_rows``
    matching rows): False once there are more files, or the statistics estimate the matching rows
    of every file and they add up to ``max_rows`` or more."""
    metas = [meta for split in splits for meta in split.files]
    if len(metas) > max_files:
        return False
    total = 0.0
    for meta in metas:
        expected = estimated_matches(bound, kept_stats.get(str(meta.file_name), {}), schema,
                                     int(meta.row_count))
        if expected is None:
            return True
        total += expected
    return total < max_rows


def _may_match_on_driver(f: FilePlan, bound: Predicate, schema: ReadSchema, report: ScanReport) -> bool:
    """Whether ``f`` stays in a deferred plan: only what the driver has in hand is asked (an embedded
    index, the file's schema version); a ``.index`` file and the vector are left to the task."""
    mapping = mapping_of(schema, f)
    embedded = isinstance(f.index, bytes)
    if bound is ALWAYS_TRUE or (not embedded and (mapping is None or mapping.identity)):
        return True
    quick = dataclasses.replace(f, index=f.index if embedded else None)
    if index_answer(None, quick, bound, schema, ScanReport(), None, None, False).remain:
        return True
    report.files_planned += 1
    report.rows_planned += f.row_count
    report.files_skipped_by_index += 1
    report.files_skipped_on_driver += 1
    return False


# -- TopN bound ----------------------------------------------------------------------------------------
#: Columns whose range-bitmap key orders exactly as Spark orders the column: integers (the value),
#: DATE (epoch days), TIMESTAMP and TIMESTAMP_LTZ (epoch millis at precision <= 3, rounded down;
#: else micros), DECIMAL (the unscaled value at the column's scale). Not FLOAT/DOUBLE (NaN sorts
#: above every number in Spark, -0.0 equals 0.0), not strings (Spark's collations).
_BOUNDED_ROOTS = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT,
                            TypeRoot.DATE, TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ, TypeRoot.DECIMAL})
#: Above this LIMIT no bound is computed (each file's k best values are decoded in Python).
MAX_BOUNDED_LIMIT = 10_000


def topn_bound(plan: ReadPlan, column: str, limit: int, *, ascending: bool) -> int | None:
    """A value the ``limit``-th row of ``ORDER BY column [ASC|DESC] LIMIT limit`` cannot be worse than.

    Every live non-NULL value of ``column`` is in a range bitmap here: each file's ``limit`` best
    live values (the vector subtracted) are taken from its bitmap, and the ``limit``-th best of them
    all is the bound -- ``limit`` live rows are at least that good, so every row of the answer is too
    (ties included). The bound is the range bitmap's key (:data:`_BOUNDED_ROOTS` says what it is
    for each type). None when any file cannot tell (no range bitmap on the column, older schema),
    when the plan has a WHERE (the index's rows would have to be exactly the matching ones), for
    other column types, primary-key tables, or fewer than ``limit`` non-NULL live values. NULLs are
    not bounded: a caller whose NULLs sort first keeps them (``column IS NULL``).
    """
    return topn_prune(plan, column, limit, ascending=ascending, nulls_first=True)[0]


def topn_prune(plan: ReadPlan, column: str, limit: int, *, ascending: bool, nulls_first: bool
               ) -> tuple[int | None, tuple[FilePlan, ...]]:
    """(:func:`topn_bound`, the plan's files that can hold a row of the answer).

    A file can when its best live value reaches the bound (ties included), or when it has live
    NULLs and NULLs sort first; the others hold only rows that ``limit`` rows elsewhere beat.
    Without a bound, every file.
    """
    dtype = plan.schema.get(column)
    if (dtype is None or dtype.root not in _BOUNDED_ROOTS or not 0 < limit <= MAX_BOUNDED_LIMIT
            or not plan.files or plan.predicate is not ALWAYS_TRUE or not plan.exact or plan.primary_key
            or plan.table is None):
        return None, plan.files
    current = plan.schema.current.id
    if any(f.schema_id != current or f.index is None for f in plan.files):
        return None, plan.files
    io = TableIO.of(plan.table)
    best: list[np.ndarray] = []
    nulls: list[bool] = []
    for f in plan.files:
        found = _best_values(io, f, column, plan.schema, limit, ascending, plan.report)
        if found is None:
            return None, plan.files
        best.append(found[0])
        nulls.append(found[1])
    every = np.sort(np.concatenate(best))
    if len(every) < limit:
        return None, plan.files
    bound = int(every[limit - 1] if ascending else every[-limit])

    def reaches(values: np.ndarray) -> bool:
        return bool(len(values)) and (int(values.min()) <= bound if ascending else int(values.max()) >= bound)

    kept = tuple(f for f, values, has_null in zip(plan.files, best, nulls, strict=True)
                 if reaches(values) or (nulls_first and has_null))
    return bound, kept


def _best_values(io: TableIO, f: FilePlan, column: str, schema: ReadSchema, limit: int,
                 ascending: bool, report: ScanReport) -> tuple[np.ndarray, bool] | None:
    """(the file's ``limit`` best live non-NULL values of ``column``, fewer when it has fewer;
    whether a live row is NULL there). None: the file has no range bitmap on the column."""
    assert f.index is not None
    with index_container(io, f.path, f.index, report) as (container, readers):
        assert container is not None
        evaluator = FileIndexEvaluator(container, schema, readers=readers)
        reader = range_bitmap_reader(container, evaluator, column)
        if reader is None:
            return None
        if reader.header.cardinality <= 0:
            return np.empty(0, np.int64), f.live_rows > 0  # every row NULL
        bsi = reader.bsi
        live = bsi.not_null()
        if f.deleted is not None:
            live = live - BitMap(f.deleted.astype(np.uint32))
        has_null = len(live) < f.live_rows
        rows = bsi.bottom_k(limit, live, True) if ascending else bsi.top_k(limit, live, True)
        positions = np.asarray(rows.to_array(), dtype=np.uint32)
        codes = np.zeros(len(positions), np.int64)
        for i in range(bsi.n_slices):  # each row's code, bit by bit (k rows, not the file)
            codes |= np.isin(positions, np.asarray((rows & bsi.slice(i)).to_array(), np.uint32)
                             ).astype(np.int64) << i
        distinct, of_row = np.unique(codes, return_inverse=True)
        keys = np.array([reader.dictionary.key_at(int(c)) for c in distinct], np.int64)
        return keys[of_row], has_null
