"""Row-level DELETE and UPDATE on append tables, through deletion vectors (Paimon's DV mode), or
copy-on-write on a table without them (as Paimon's Spark connector changes such a table).

    change_rows(table, operation, mark) -> RowChange          the one plan / mark / commit shape
    delete_rows(table, where) -> RowChange                    it, with the rows found in this process
    update_rows(table, {"col": value or pa.Array fn}, where) -> RowChange
    assignment_columns(table, names, set) -> {column: value}  SET's columns as the table spells them

The public verbs are :meth:`paimon_index.Table.delete`/``update`` (which call :func:`delete_rows` /
:func:`update_rows`) and :func:`paimon_index.spark.jobs.delete`/``update`` (which call
:func:`change_rows` with a ``mark`` step that runs as Spark tasks). ``delete_arrow`` /
``update_arrow`` are the snapshot-id shorthands the tests use.

The steps (:func:`change_rows` runs 1 and 4 on the driver; step 2 and 3 are its ``mark``):

1. **Plan** (driver, :func:`plan_row_change`): pin the latest snapshot; for every (partition,
   bucket) collect its ``DELETION_VECTORS`` index-manifest entries. A bucket's vectors live in one
   or more DV index files (layout: :mod:`paimon_index.deletionvectors.index_file`).
2. **Find** the rows matching ``where`` in that snapshot, with their data file and row position
   (the metadata columns of :mod:`paimon_index.table.read`); file indexes and existing vectors
   are used, so already-deleted rows are never found again (a repeated delete changes nothing).
3. **Mark** (per bucket, :func:`mark_deleted`): restore the bucket's vectors, add the positions,
   write one new DV index file holding all of the bucket's vectors, and describe the change as a
   pypaimon ``CommitMessage`` (index DELETE entries for the old files, ADD for the new one).
   An UPDATE also writes the changed rows as new data files (with their file indexes).
   Copy-on-write (no deletion vectors, :func:`rewrite_positions`): each data file holding a
   changed row is read whole less those rows and written again as new files; the task reports a
   :class:`RewrittenFile`, which the driver (holding the planned manifest entries, pypaimon's, never
   sent to a task) makes the old file's DELETE entry (:meth:`RowChangePlan.messages`).
4. **Commit** (driver, :func:`commit_row_change`): all messages in **one** pypaimon commit. It
   first checks that no snapshot was committed since the plan: positions refer to the planned
   snapshot's files and vectors, so a concurrent commit makes the change fail cleanly with
   :class:`ConcurrentChangeError` (nothing is applied; re-run it). pypaimon's own conflict
   detection (index deletes make the commit an OVERWRITE with conflict checks) guards the rest.

If anything fails before step 4, no snapshot is written: the table is exactly as it was (the new
files already written are orphans, as after a failed Paimon job).

pypaimon internals used: ``IndexFileHandler(table).scan(snapshot)``, ``CommitMessage`` (partition
tuple, bucket, new_files, index_adds, index_deletes), ``table.path_factory().index_path()``,
``table.copy_without_time_travel({"scan.snapshot-id": ...})`` (``paimon.pinned_current``) to read
the pinned snapshot under the current schema.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import (
    DataError,
    InvalidOptionError,
    PaimonIndexError,
    UnsupportedTableError,
)
from paimon_index.fileindex.options import parse_bool
from paimon_index.predicate import ALWAYS_TRUE, Predicate
from paimon_index.table.bucket_vectors import VectorFile, restore_plain, vector_files
from paimon_index.table.fileio import TableIO
from paimon_index.table.files import (
    BUCKET_COLUMN,
    FILE_PATH_COLUMN,
    METADATA_COLUMNS,
    PARTITION_COLUMN,
    ROW_INDEX_COLUMN,
    FilePlan,
    ScanReport,
    file_plan,
    partition_text,
    read_rows,
)
from paimon_index.table.paimon import CommitMessage, PaimonTable, pinned_current, table_name, table_options
from paimon_index.table.plan import DV_BITMAP64, DV_ENABLED, plan_snapshot
from paimon_index.table.scan import plan_read
from paimon_index.table.schemas import read_schema
from paimon_index.table.transaction import Transaction
from paimon_index.table.write import write_files

__all__ = [
    "BucketPlan",
    "RewrittenFile",
    "RowChange",
    "RowChangePlan",
    "assigned_rows",
    "assignment_columns",
    "bucket_plan",
    "change_rows",
    "commit_row_change",
    "delete_arrow",
    "delete_rows",
    "mark_deleted",
    "mark_positions",
    "plan_row_change",
    "update_arrow",
    "update_rows",
    "write_rows",
]

SNAPSHOT_ID = "scan.snapshot-id"


@dataclass(frozen=True)
class BucketPlan:
    """What an executor needs to update one bucket's deletion vectors (pickled to it: plain values
    and the table's store only)."""

    partition: tuple[Any, ...]  # its values
    bucket: int
    vectors: tuple[VectorFile, ...]  # the bucket's DELETION_VECTORS index files, as plain values
    index_dir: str
    bitmap64: bool
    #: The bucket's data files in the planned snapshot: vectors of other files are not restored.
    live_files: frozenset[str] | None = None
    #: The table's store (pickled with the plan): an executor writes the new DV index file there,
    #: never next to itself.
    io: TableIO | None = None
    #: Copy-on-write (an append table without deletion vectors): the bucket's data files by name,
    #: as plain plans. A file holding a changed row is rewritten without it; None: vectors instead.
    files: Mapping[str, FilePlan] | None = None


@dataclass(frozen=True)
class RewrittenFile:
    """A data file a copy-on-write change rewrote (its rows, less the changed ones, are in new files):
    what a task reports, and the driver turns into the file's DELETE entry
    (:meth:`RowChangePlan.messages`), since only the driver holds the planned manifest entries."""

    partition: tuple[Any, ...]
    bucket: int
    name: str


@dataclass
class RowChangePlan:
    """A pinned snapshot and, per ``(partition text, bucket)``, the bucket's DV state (or, copy-on-
    write, its files)."""

    snapshot_id: int
    partition_keys: list[str]
    buckets: dict[tuple[str, int], BucketPlan] = field(default_factory=dict)
    snapshot: Any = None  # the pinned pypaimon Snapshot (driver side), the commit's only allowed base
    #: Copy-on-write: the planned manifest entries' files (pypaimon ``DataFileMeta``, driver side
    #: only), by (partition values, bucket) and name.
    metas: dict[tuple[tuple[Any, ...], int], dict[str, Any]] = field(default_factory=dict)

    def bucket(self, partition: str, bucket: int) -> BucketPlan:
        return bucket_plan(self.buckets, self.snapshot_id, partition, bucket)

    def messages(self, staged: Iterable[Any]) -> list[Any]:
        """``staged`` (commit messages and :class:`RewrittenFile` reports) as commit messages: a
        rewritten file becomes the DELETE of its planned entry.

        Raises:
            PaimonIndexError: a report names a file the plan does not hold.
        """
        out: list[Any] = []
        for item in staged:
            if not isinstance(item, RewrittenFile):
                out.append(item)
                continue
            meta = self.metas.get((item.partition, item.bucket), {}).get(item.name)
            if meta is None:
                raise PaimonIndexError(f"bucket {item.bucket} of partition {item.partition}: a rewritten "
                                       f"file {item.name} is not in snapshot {self.snapshot_id}")
            out.append(CommitMessage(partition=item.partition, bucket=item.bucket, new_files=[],
                                     deleted_files=[meta]))
        return out


def bucket_plan(buckets: Mapping[tuple[str, int], BucketPlan], snapshot_id: int, partition: str,
                bucket: int) -> BucketPlan:
    """The plan of ``(partition text, bucket)`` among a row change's ``buckets`` (what a Spark
    task holds of the plan: no pinned snapshot)."""
    try:
        return buckets[(partition, bucket)]
    except KeyError:
        raise PaimonIndexError(f"bucket {bucket} of partition {partition!r} is not in snapshot "
                               f"{snapshot_id}") from None


def _check_table(table: PaimonTable) -> dict[str, str]:
    if table.is_primary_key_table:
        raise UnsupportedTableError("row-level changes by position are for append tables; primary-key "
                                    "tables change rows by key (upsert)")
    return table_options(table)


def plan_row_change(table: PaimonTable) -> RowChangePlan | None:
    """Pin the latest snapshot and collect each bucket's DV entries, or, on a table without
    deletion vectors (copy-on-write, as Paimon's Spark connector changes such a table), each
    bucket's files (None for an empty table)."""
    options = _check_table(table)
    planned = plan_snapshot(table)
    if planned.snapshot is None:
        return None
    keys = list(table.partition_keys or [])
    plan = RowChangePlan(planned.snapshot.id, keys, snapshot=planned.snapshot)
    bitmap64 = parse_bool(options.get(DV_BITMAP64, "false"), DV_BITMAP64)
    copy_on_write = not parse_bool(options.get(DV_ENABLED, "false"), DV_ENABLED)
    index_dir = str(table.path_factory().index_path())
    io = TableIO.of(table)
    for bucket in planned.buckets.values():
        values = tuple(bucket.partition_row.values)
        files = None
        if copy_on_write:
            files = {str(m.file_name): file_plan(m, None, values, bucket.bucket) for m in bucket.files}
            plan.metas[(values, bucket.bucket)] = {str(m.file_name): m for m in bucket.files}
        plan.buckets[(partition_text(keys, bucket.partition_row), bucket.bucket)] = BucketPlan(
            values, bucket.bucket, vector_files(bucket.dv_entries), index_dir, bitmap64, bucket.file_names,
            io=io, files=files)
    return plan


def mark_deleted(table: PaimonTable, bucket: BucketPlan, rows: pa.Table) -> list[Any]:
    """Add the rows (metadata columns file path + row index) to the bucket's vectors (``table``: the
    table opened where this runs, for its partition fields).

    Writes the bucket's new DV index file and returns its pypaimon ``CommitMessage`` (none when
    nothing changes); copy-on-write, the rewritten files' messages (:func:`mark_positions`).
    """
    paths = rows.column(FILE_PATH_COLUMN).combine_chunks()
    positions = rows.column(ROW_INDEX_COLUMN).to_numpy()
    encoded = paths.dictionary_encode()
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    by_file = {path: positions[indices == code] for code, path in enumerate(encoded.dictionary.to_pylist())}
    return mark_positions(table, bucket, by_file)


def mark_positions(table: PaimonTable, bucket: BucketPlan, positions: Mapping[str, np.ndarray]) -> list[Any]:
    """Add the positions of each data file (path -> row positions, any order, repeats allowed) to
    the bucket's vectors: :func:`mark_deleted` with the rows already grouped by file. Copy-on-write
    (``bucket.files``): each such file's other rows are written as new files
    (:func:`rewrite_positions`).

    Raises:
        PaimonIndexError: a path that is not a data file of the bucket in the planned snapshot (a
            vector of a file no snapshot reads would delete nothing: the rows would stay).
    """
    if bucket.files is not None:
        return rewrite_positions(table, bucket, positions)
    if bucket.live_files is not None:
        strays = sorted({posixpath.basename(p) for p in positions} - bucket.live_files)
        if strays:
            raise PaimonIndexError(f"bucket {bucket.bucket} of partition {bucket.partition}: rows to mark "
                                   f"deleted name data files the planned snapshot does not hold there: "
                                   f"{strays[:3]}")
    if bucket.io is None:
        raise PaimonIndexError(f"bucket {bucket.bucket}: a plan without the table's store cannot read or "
                               "write deletion vectors")
    maintainer = restore_plain(table, bucket.partition, bucket.bucket, bucket.vectors, bucket.index_dir,
                               bucket.io, bitmap64=bucket.bitmap64, live_files=bucket.live_files)
    for path, file_positions in positions.items():
        maintainer.notify_new_deletions(posixpath.basename(path), np.sort(file_positions))
    commit = maintainer.commit_to(bucket.index_dir, write=bucket.io.write_new)
    if commit.is_empty:
        return []
    return [CommitMessage(partition=bucket.partition, bucket=bucket.bucket, new_files=[],
                          index_adds=list(commit.added), index_deletes=list(commit.deleted))]


def rewrite_positions(table: PaimonTable, bucket: BucketPlan, positions: Mapping[str, np.ndarray]
                      ) -> list[Any]:
    """Copy-on-write: each data file of ``positions`` (path -> its changed rows' positions) read
    whole, less those rows, under the current schema, and written as new data files with their
    indexes (its partition and bucket, from the rows' values); the messages of the new files and a
    :class:`RewrittenFile` per file (the driver makes it the old file's DELETE entry).

    Raises:
        PaimonIndexError: a path that is not a data file of the bucket in the planned snapshot.
    """
    assert bucket.files is not None
    if bucket.io is None:
        raise PaimonIndexError(f"bucket {bucket.bucket}: a plan without the table's store cannot rewrite "
                               "files")
    schema = read_schema(table)
    out: list[Any] = []
    for path, file_positions in positions.items():
        name = posixpath.basename(path)
        planned = bucket.files.get(name)
        if planned is None:
            raise PaimonIndexError(f"bucket {bucket.bucket} of partition {bucket.partition}: rows to change "
                                   f"name a data file the planned snapshot does not hold there: {name}")
        changed = np.unique(np.asarray(file_positions, dtype=np.int64))
        if len(changed) and (changed[0] < 0 or changed[-1] >= planned.row_count):
            raise PaimonIndexError(f"{name}: a changed row's position is outside its {planned.row_count} "
                                   "rows")
        whole = replace(planned, resolved=True, deleted=changed if len(changed) else None)
        kept = read_rows(bucket.io, whole, ALWAYS_TRUE, schema, ScanReport())
        if kept.num_rows:
            out += write_rows(table, kept)
        out.append(RewrittenFile(bucket.partition, bucket.bucket, name))
    return out


def write_rows(table: PaimonTable, rows: pa.Table) -> list[Any]:
    """Write rows as new data files with their file indexes; returns the commit messages."""
    return write_files(table, rows)


def commit_row_change(table: PaimonTable, plan: RowChangePlan, messages: Iterable[Any], *,
                      operation: str = "row-level change") -> int | None:
    """Commit all messages as snapshot ``plan.snapshot_id + 1``, or raise and delete their files.

    Raises:
        ConcurrentChangeError: any commit landed after ``plan`` (positions and vectors refer to the
            planned snapshot); nothing was applied, the new files were deleted.
    """
    txn = Transaction(table, plan.snapshot, operation=operation)
    with txn:
        txn.stage(messages)
        return txn.commit()


def _matching_rows(table: PaimonTable, plan: RowChangePlan, where: Predicate | str) -> pa.Table:
    """The matching live rows of the planned snapshot, with their file, position, partition and
    bucket (the one read plan: statistics, indexes and vectors, then the exact filter)."""
    scan = plan_read(pinned_current(table, plan.snapshot_id), where, strict=True)
    io = TableIO.of(scan.table) if scan.table is not None else TableIO.of(table)
    parts = [read_rows(io, f, scan.predicate, scan.schema, scan.report, row_ids=plan.partition_keys)
             for f in scan.files]
    parts = [p for p in parts if p.num_rows]
    return pa.concat_tables(parts, promote_options="default") if parts \
        else pa.table({c: [] for c in METADATA_COLUMNS})


def _mark_all(plan: RowChangePlan, matched: pa.Table, txn: Transaction) -> None:
    """Mark the matched rows deleted, bucket by bucket, staging each bucket's message at once (so
    a failure in a later bucket still deletes the DV files written for the earlier ones)."""
    if matched.num_rows == 0:
        return
    keys = pa.table({"p": matched.column(PARTITION_COLUMN), "b": matched.column(BUCKET_COLUMN)})
    for group in keys.group_by(["p", "b"]).aggregate([]).to_pylist():
        mask = pc.and_(pc.equal(matched.column(PARTITION_COLUMN), group["p"]),
                       pc.equal(matched.column(BUCKET_COLUMN), group["b"]))
        marked = mark_deleted(txn.table, plan.bucket(group["p"], group["b"]), matched.filter(mask))
        txn.stage(plan.messages(marked))


@dataclass(frozen=True)
class RowChange:
    """What a DELETE or UPDATE did: the new snapshot (None: nothing matched) and the rows it changed."""

    snapshot_id: int | None
    rows: int


#: A row change's step 2 and 3: find the rows on the plan's snapshot, stage the change in the
#: transaction (DV index files, an UPDATE's new data files) and say how many rows it changed.
MarkStep = Callable[[RowChangePlan, Transaction], int]


def change_rows(table: PaimonTable, operation: str, mark: MarkStep) -> RowChange:
    """The one shape of a DELETE/UPDATE by position: plan on the latest snapshot (pinned), ``mark``
    (in this process, or as Spark tasks whose messages the driver stages), commit exactly on the
    planned snapshot.

    Raises:
        ConcurrentChangeError: another commit landed after the plan; nothing was applied and the
            files ``mark`` staged were deleted.
    """
    plan = plan_row_change(table)
    if plan is None:
        return RowChange(None, 0)
    with Transaction(table, plan.snapshot, operation=operation) as txn:
        rows = mark(plan, txn)
        snapshot = txn.commit()
    return RowChange(snapshot, rows if snapshot is not None else 0)


def delete_rows(table: PaimonTable, where: Predicate | str) -> RowChange:
    """``DELETE FROM table WHERE where`` in one snapshot, exactly on the snapshot it read."""

    def mark(plan: RowChangePlan, txn: Transaction) -> int:
        matched = _matching_rows(table, plan, where)
        _mark_all(plan, matched, txn)
        return matched.num_rows

    return change_rows(table, "delete", mark)


def delete_arrow(table: PaimonTable, where: Predicate | str) -> int | None:
    """:func:`delete_rows`' snapshot: None when no row matched."""
    return delete_rows(table, where).snapshot_id


Assignment = Any | Callable[[pa.Table], pa.Array]


def assignment_columns(table: str, columns: Sequence[str], values: Mapping[str, Any]) -> dict[str, Any]:
    """SET's columns resolved as Spark resolves them (case-insensitively) to the table's spelling.

    Raises:
        InvalidOptionError: a column the table does not have.
    """
    lower = {name.lower(): name for name in columns}
    resolved: dict[str, Any] = {}
    for column, value in values.items():
        name = lower.get(str(column).lower())
        if name is None:
            raise InvalidOptionError(f"UPDATE of {table} sets unknown column {column!r} "
                                     f"(columns: {list(columns)})")
        resolved[name] = value
    return resolved


def update_arrow(table: PaimonTable, assignments: Mapping[str, Assignment],
                 where: Predicate | str) -> int | None:
    """:func:`update_rows`' snapshot: None when no row matched."""
    return update_rows(table, assignments, where).snapshot_id


def update_rows(table: PaimonTable, assignments: Mapping[str, Assignment],
                where: Predicate | str) -> RowChange:
    """``UPDATE table SET col = value, ... WHERE where`` in one snapshot, exactly on the snapshot
    it read: the matching rows marked deleted, their new values appended as new data files.

    A value is a constant or a function of the matching rows (an Arrow table) returning the column.
    """
    unknown = set(assignments) - set(read_schema(table))
    if unknown:
        raise InvalidOptionError(f"UPDATE sets unknown columns: {sorted(unknown)}")

    def mark(plan: RowChangePlan, txn: Transaction) -> int:
        matched = _matching_rows(table, plan, where)
        if matched.num_rows == 0:
            return 0
        updated = assigned_rows(table_name(table), matched.drop_columns(list(METADATA_COLUMNS)), assignments)
        _mark_all(plan, matched, txn)
        txn.stage(write_rows(table, updated))
        return matched.num_rows

    return change_rows(table, "update", mark)


def assigned_rows(table: str, before: pa.Table, assignments: Mapping[str, Assignment]) -> pa.Table:
    """The rows with their new values (``table``: its name, for errors); every assignment sees the
    rows as they were (SQL: ``SET a = b, b = a`` swaps them). Append and primary-key UPDATEs alike."""
    updated = before
    for name, value in assignments.items():
        field = before.schema.field(name)
        try:
            column = value(before) if callable(value) else \
                pa.array(np.full(before.num_rows, value, dtype=object))
            column = pa.array(column) if not isinstance(column, pa.Array | pa.ChunkedArray) else column
            column = column.cast(field.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise DataError(f"UPDATE of table {table}: the value for column "
                            f"{name!r} does not fit its type {field.type}: {e}") from e
        updated = updated.set_column(before.schema.get_field_index(name), field, column)
    return updated
