"""The public table API: one ``Table`` noun, a few verbs, each returning a result value.

    t = paimon_index.create_table(warehouse, "db.t", schema, partition_keys=["dt"],
                                  options={"file-index.bloom-filter.columns": "id"})
    t = paimon_index.open_table(warehouse, "db.t")
    t.write(data, mode="append" | "overwrite")            -> CommitResult
    t.read(where=None, columns=None, snapshot_id=None)    -> pa.Table   (t.last_scan_report beside it)
    t.count(where=None) -> int ; t.min_max(column, where=None) -> (min, max)   (index-only when it can)
    t.delete(where) / t.update(set, where)                -> CommitResult (rows_affected)
    t.upsert(data)                                        -> CommitResult (primary-key tables)
    t.compact(full=False)                                 -> CommitResult (COMPACT snapshot)
    t.rewrite_file_index(where=None)                      -> CommitResult
    t.expire_snapshots(retain_last=None, older_than=None) / t.remove_orphan_files(older_than)
    t.file_indexes() -> pa.Table ; t.alter_options(set=..., remove=...) -> Table

Every verb that changes the table commits **one** snapshot through
:class:`~paimon_index.table.transaction.Transaction`: exactly on the snapshot it read
(:class:`~paimon_index.errors.ConcurrentChangeError` otherwise, nothing applied) — except a plain
append, which may land on top of newer snapshots. A verb that changes nothing commits nothing and
returns ``snapshot_id=None``.

``update(set, where)``: ``set`` maps a column to a Python value (a constant) or to SQL expression
text (``"score + 1"``, ``"'PAID'"`` — a string is *always* an expression, so a string constant is
quoted, as in Spark's ``UPDATE ... SET``): :mod:`paimon_index.expression` evaluates it over the old
row with Spark's meaning, then the result is cast to the column's type as Spark's assignment does
(fractions truncated toward zero into integer columns; overflow is an error).

``where``: SQL-like predicate text (:mod:`paimon_index.sql`) or a predicate tree; None means all rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import (
    DataError,
    InvalidOptionError,
    PaimonIndexError,
    TableError,
    TableExistsError,
    UnsupportedTableError,
)
from paimon_index.expression import compile_expression
from paimon_index.fileindex.base import SortOrder, TopN
from paimon_index.predicate import ALWAYS_TRUE, Predicate
from paimon_index.table import catalog as _catalog
from paimon_index.table.aggregate import AggregateReport
from paimon_index.table.files import ScanReport
from paimon_index.table.paimon import (
    delta_file_counts,
    latest_snapshot,
    pinned_current,
    pinned_table,
    snapshot_exists,
)
from paimon_index.table.pk.upsert import LATEST as UPSERT_LATEST

__all__ = ["CommitResult", "MaintenanceResult", "Table", "commit_result", "create_table", "open_table"]

#: ``write(mode=...)`` values.
APPEND, OVERWRITE = "append", "overwrite"


@dataclass(frozen=True)
class CommitResult:
    """What a verb committed.

    Attributes:
        operation: the verb ("append", "overwrite", "delete", "update", "upsert", "compact",
            "rewrite_file_index").
        snapshot_id: the snapshot it committed; None when it changed nothing.
        rows_affected: rows written, deleted or updated (0 for compact and index rewrites).
        files_added / files_removed: data files the snapshot added / removed (a DELETE by
            deletion vectors removes none; an index rewrite re-adds the files it re-indexed).
    """

    operation: str
    snapshot_id: int | None
    rows_affected: int = 0
    files_added: int = 0
    files_removed: int = 0


@dataclass(frozen=True)
class MaintenanceResult:
    """What a maintenance verb removed: expired snapshot ids and deleted files (paths)."""

    operation: str
    expired_snapshots: tuple[int, ...] = ()
    deleted_files: tuple[str, ...] = ()
    details: Any = field(default=None, compare=False)


def commit_result(table: Any, operation: str, snapshot_id: int | None, rows: int) -> CommitResult:
    """A verb's result (the ``Table`` verb's and its :mod:`paimon_index.spark.jobs` twin's): the data
    files snapshot ``snapshot_id`` added and removed, read from the snapshot (``table``: pypaimon's)."""
    if snapshot_id is None:
        return CommitResult(operation, None, 0)
    added, removed = delta_file_counts(table, snapshot_id)
    return CommitResult(operation, snapshot_id, rows, added, removed)


def _column_list(names: Iterable[str] | None, argument: str) -> list[str]:
    """``names`` as a list of column names; a bare string is refused (``list("id")`` would be two
    one-letter columns)."""
    if names is None:
        return []
    if isinstance(names, str):
        raise InvalidOptionError(f"{argument} must be a list of column names, got the string {names!r} "
                                 f"(write [{names!r}])")
    return [str(n) for n in names]


def create_table(warehouse: str, identifier: str, schema: pa.Schema | Any, *,
                 partition_keys: Iterable[str] | None = (), primary_keys: Iterable[str] | None = (),
                 options: Mapping[str, str] | None = None,
                 catalog_options: Mapping[str, str] | None = None) -> Table:
    """Create table ``identifier`` ("database.table") in ``warehouse`` and open it.

    Args:
        schema: an Arrow schema (or what :func:`paimon_index.table.catalog.create_table` accepts).
        partition_keys, primary_keys: column names (None: none).
        options: Paimon table options (``bucket``, ``deletion-vectors.enabled``, ``file-index.*`` ...).
        catalog_options: options of the catalog (beyond the warehouse path).

    Raises:
        TableExistsError: the table exists already.
        InvalidOptionError: a malformed or unknown option.
    """
    from paimon_index.table.paimon import TableAlreadyExistException

    partitions = _column_list(partition_keys, "partition_keys")
    keys = _column_list(primary_keys, "primary_keys")
    try:
        _catalog.create_table(str(warehouse), identifier, schema, partition_keys=partitions,
                              primary_keys=keys, options=dict(options or {}),
                              catalog_options=catalog_options)
    except PaimonIndexError:
        raise
    except TableAlreadyExistException as e:
        raise TableExistsError(f"cannot create table {identifier} in {warehouse}: it exists already") from e
    except Exception as e:
        raise TableError(f"cannot create table {identifier} in {warehouse}: {e}") from e
    return open_table(warehouse, identifier, catalog_options=catalog_options)


def open_table(warehouse: str, identifier: str, *, catalog_options: Mapping[str, str] | None = None) -> Table:
    """Open table ``identifier`` ("database.table") of ``warehouse``.

    Raises:
        TableNotFoundError: no such table.
    """
    return Table(str(warehouse), identifier, catalog_options)


class Table:
    """A Paimon table with file indexes and deletion vectors (see the module docstring)."""

    def __init__(self, warehouse: str, identifier: str,
                 catalog_options: Mapping[str, str] | None = None) -> None:
        self.warehouse = warehouse
        self.identifier = identifier
        self.catalog_options = dict(catalog_options or {})
        #: The :class:`~paimon_index.table.read.ScanReport` of the last :meth:`read`.
        self.last_scan_report: ScanReport | None = None
        self.last_aggregate_report: AggregateReport | None = None
        self._paimon = self._open()

    def _open(self) -> Any:
        _catalog.parse_identifier(self.identifier)  # before the catalog or any file is touched
        try:
            return _catalog.open_table(self.warehouse, self.identifier, catalog_options=self.catalog_options)
        except PaimonIndexError:
            raise
        except Exception as e:
            raise _catalog.table_not_found(self.warehouse, self.identifier, e) from e

    def __repr__(self) -> str:
        return f"Table({self.warehouse!r}, {self.identifier!r})"

    def _writable(self) -> None:
        """Refuse a change to a system table or branch (read-only here; see ``parse_identifier``)."""
        _catalog.parse_identifier(self.identifier, for_write=True)

    @contextmanager
    def _changing(self, operation: str) -> Iterator[None]:
        """Run a change: refused on a system table or branch (read-only here; see
        ``parse_identifier``); a file it needed that goes missing while it runs is a refusal when a
        newer commit replaced it and an expiry removed it, else an error naming the file
        (:func:`~paimon_index.table.files.file_gone_error`; the concurrency suite found a raw
        ``FileNotFoundError`` from ``rewrite_file_index``)."""
        self._writable()
        try:
            yield
        except FileNotFoundError as e:
            from paimon_index.table.files import file_gone_error

            raise file_gone_error(self._paimon, f"{operation} of {self.identifier}", e) from e

    @property
    def paimon_table(self) -> Any:
        """The underlying pypaimon table (for the table layer; not a stable API)."""
        return self._paimon

    @property
    def is_primary_key_table(self) -> bool:
        return bool(self._paimon.is_primary_key_table)

    @property
    def schema(self) -> pa.Schema:
        from paimon_index.table.paimon import arrow_schema

        return arrow_schema(self._paimon.table_schema.fields)

    @property
    def snapshot_id(self) -> int | None:
        """The latest snapshot's id (None: nothing committed yet)."""
        snapshot = latest_snapshot(self._paimon)
        return None if snapshot is None else int(snapshot.id)

    # writing -------------------------------------------------------------------------------------

    def write(self, data: pa.Table | pa.RecordBatch, mode: str = APPEND) -> CommitResult:
        """Append ``data``, or replace the table's rows with it (``mode="overwrite"``).

        An overwrite of a partitioned table replaces only the partitions ``data`` holds while the
        table option ``dynamic-partition-overwrite`` is true (Paimon's default), else every row.
        On a primary-key table an append is an upsert (the last row per key wins).

        Raises:
            InvalidOptionError: an unknown mode.
            DataError: rows that do not fit the table.
            ConcurrentChangeError: (overwrite, upsert) another commit landed meanwhile.
        """
        with self._changing(mode):
            from paimon_index.table.write import write_arrow

            if mode not in (APPEND, OVERWRITE):
                raise InvalidOptionError(f"write mode must be {APPEND!r} or {OVERWRITE!r}, got {mode!r}")
            rows = _as_table(data)
            if mode == APPEND and self.is_primary_key_table:
                return self._result(APPEND, self._upsert(rows), rows.num_rows)
            if self.is_primary_key_table:
                from paimon_index.table.pk.overwrite import overwrite_rows

                # Deletion vectors: new files in levels >= 1, where merge-free readers see them;
                # merge-on-read: key-value files in level 0 (dynamic buckets: from a fresh HASH index).
                snapshot = overwrite_rows(self._paimon, rows)
                return self._result(mode, snapshot, rows.num_rows if snapshot is not None else 0)
            snapshot = write_arrow(self._paimon, rows, overwrite=mode == OVERWRITE)
            return self._result(mode, snapshot, rows.num_rows if snapshot is not None else 0)

    def upsert(self, data: pa.Table | pa.RecordBatch) -> CommitResult:
        """Insert or replace rows by primary key (rows with ``_ROW_KIND`` '-D'/'-U' delete their key)."""
        with self._changing("upsert"):
            if not self.is_primary_key_table:
                raise TableError(f"upsert needs a primary-key table; {self.identifier} has no primary key "
                                 "(use write)")
            rows = _as_table(data)
            return self._result("upsert", self._upsert(rows), rows.num_rows)

    def _upsert(self, rows: pa.Table, planned: int | object | None = UPSERT_LATEST, *,
                delete_keys: bool = False) -> int | None:
        """Upsert ``rows``; ``planned``: the snapshot they were read from (commit exactly on it);
        ``delete_keys``: the ``-D`` rows of a DELETE (their keys removed whatever the merge engine)."""
        from paimon_index.table.pk import ROW_KIND_COLUMN, dv_mode, upsert_arrow
        from paimon_index.table.pk.merge import change_kind
        from paimon_index.table.write import write_arrow

        if rows.num_rows == 0:
            return None
        # Rows read by an UPDATE or DELETE are planned on a snapshot (an UPDATE's are +U, as Java's are).
        operation = "upsert" if planned is UPSERT_LATEST else "update"
        if not dv_mode(self._paimon):
            # Without deletion vectors a reader merges rows by key: changes are level-0 key-value
            # rows with their value kinds (pk/merge_on_read.py), as Paimon's connector writes them.
            from paimon_index.table.pk.changelog import check_merge_on_read

            check_merge_on_read(self._paimon)  # 'lookup' / 'full-compaction' would write no changelog
            if ROW_KIND_COLUMN not in rows.column_names and planned is UPSERT_LATEST:
                return write_arrow(self._paimon, rows)
            from paimon_index.table.pk.merge_on_read import LATEST, write_changes

            return write_changes(self._paimon, rows, planned=LATEST if planned is UPSERT_LATEST else planned,
                                 kind=change_kind(operation),
                                 operation="delete" if delete_keys else operation)
        try:
            return upsert_arrow(self._paimon, rows, planned=planned, delete_keys=delete_keys,
                                kind=change_kind(operation))
        except PaimonIndexError:
            raise
        except (pa.ArrowInvalid, pa.ArrowTypeError, RuntimeError, ValueError) as e:
            raise DataError(f"upsert into {self.identifier}: {e}") from e

    def delete(self, where: Predicate | str) -> CommitResult:
        """``DELETE FROM t WHERE where`` in one commit (deletion vectors; on an append table without
        them, copy-on-write: each file holding a deleted row rewritten without it; keys on
        primary-key tables: Java's APPEND + COMPACT snapshots,
        :func:`paimon_index.table.pk.commit.commit_in_two`).

        Raises:
            ConcurrentChangeError: another commit landed after the rows were found.
        """
        with self._changing("delete"):
            if self.is_primary_key_table:
                return self._pk_change("delete", where, None)
            from paimon_index.table.row_level import delete_rows

            change = delete_rows(self._paimon, where)
            return commit_result(self._paimon, "delete", change.snapshot_id, change.rows)

    def update(self, set: Mapping[str, Any], where: Predicate | str | None = None) -> CommitResult:
        """``UPDATE t SET col = value-or-expression, ... WHERE where`` in one commit (as ``delete``).

        Raises:
            InvalidOptionError: an unknown column, or (append table) no deletion vectors.
            InvalidPredicateError: expression text that does not parse or is not supported.
            DataError: a value that does not fit its column (overflow, division by zero).
        """
        with self._changing("update"):
            assignments = self._assignments(set)
            predicate = ALWAYS_TRUE if where is None else where
            if self.is_primary_key_table:
                return self._pk_change("update", predicate, assignments)
            from paimon_index.table.row_level import update_rows

            change = update_rows(self._paimon, assignments, predicate)
            return commit_result(self._paimon, "update", change.snapshot_id, change.rows)

    def _assignments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        from paimon_index.table.row_level import assignment_columns

        schema = self.schema
        assignments = assignment_columns(self.identifier, schema.names, values)
        for name, value in assignments.items():
            if isinstance(value, str):
                expression = compile_expression(value, schema)
                assignments[name] = _assigned(expression, schema.field(name).type, name)
        return assignments

    def _pk_change(self, operation: str, where: Predicate | str, assignments: dict[str, Any] | None
                   ) -> CommitResult:
        """DELETE/UPDATE on a primary-key table: find the rows, then upsert (or delete) their keys."""
        from paimon_index.table.pk.upsert import change_by_key

        snapshot, rows = change_by_key(self._paimon, where, assignments, _ArrowKeyedRows(self))
        return commit_result(self._paimon, operation, snapshot, rows)

    def compact(self, full: bool = False) -> CommitResult:
        """Compact the table's files in one ``COMPACT`` snapshot.

        A primary-key table: files past the delete ratio rewritten (``full``: everything into the
        highest level); without deletion vectors always a full compaction (each bucket merged by
        key into one top-level file, :mod:`paimon_index.table.pk.compaction`). An append table
        (:mod:`paimon_index.table.append_compaction`): small files bin-packed toward
        ``target-file-size`` once ``compaction.min.file-num`` are there, files past
        ``compaction.delete-ratio-threshold`` rewritten without their deleted rows (``full``: as
        Paimon's full compaction). ``snapshot_id`` is None when nothing was worth compacting.
        """
        with self._changing("compact"):
            if not self.is_primary_key_table:
                from paimon_index.table.append_compaction import compact_append

                return self._result("compact", compact_append(self._paimon, full=full), 0)
            from paimon_index.table.pk import compact

            return self._result("compact", compact(self._paimon, full=full), 0)

    def rewrite_file_index(self, where: Any = None) -> CommitResult:
        """Rebuild the file indexes the current ``file-index.*`` options ask for (``where``: partitions)."""
        with self._changing("rewrite_file_index"):
            from paimon_index.table.rewrite import rewrite_file_index

            return self._result("rewrite_file_index", rewrite_file_index(self._paimon, where), 0)

    def _result(self, operation: str, snapshot_id: int | None, rows: int) -> CommitResult:
        return commit_result(self._paimon, operation, snapshot_id, rows)

    # reading -------------------------------------------------------------------------------------

    def read(self, where: Predicate | str | None = None, columns: Iterable[str] | None = None,
             snapshot_id: int | None = None, *, order_by: str | None = None, limit: int | None = None,
             use_index: bool = True) -> pa.Table:
        """The rows matching ``where`` (all when None), of the latest snapshot or ``snapshot_id``.

        Args:
            where: SQL-like predicate text or a predicate tree.
            columns: the columns to return (all when None).
            snapshot_id: read this snapshot (time travel) instead of the latest.
            order_by: ``"col [ASC|DESC] [NULLS FIRST|LAST], ..."`` with Spark's meaning (NULLs first
                for ASC, last for DESC; NaN above every number; -0.0 equal to 0.0).
            limit: at most this many rows (after ``order_by``). With both, each data file of an
                append table contributes only its range-bitmap TopN candidates.
            use_index: False reads without file indexes (the same rows; for comparison).

        Primary-key tables return one row per key. The read's
        :class:`~paimon_index.table.read.ScanReport` is left in :attr:`last_scan_report`.

        Raises:
            TableError: ``snapshot_id`` does not exist (never committed or expired).
            InvalidPredicateError: ``where`` or ``order_by`` does not parse or does not fit the schema.
            InvalidOptionError: ``columns`` names an unknown column; a negative ``limit``.
        """
        from paimon_index.sql import parse_order_by

        table = self._paimon
        if snapshot_id is not None:
            if not snapshot_exists(table, snapshot_id):
                raise TableError(f"table {self.identifier} has no snapshot {snapshot_id} (latest: "
                                 f"{self.snapshot_id})")
            table = pinned_table(table, snapshot_id)
        predicate = ALWAYS_TRUE if where is None else where
        schema = self.schema
        wanted = list(columns) if columns is not None else None
        orders = parse_order_by(order_by) if order_by is not None else ()
        unknown = [c for c in [*(wanted or ()), *(o.column for o in orders)] if c not in schema.names]
        if unknown:
            raise InvalidOptionError(f"read of {self.identifier}: unknown columns {unknown} "
                                     f"(columns: {schema.names})")
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise InvalidOptionError(f"read of {self.identifier}: limit must be a non-negative integer, "
                                     f"got {limit!r}")
        topn = TopN(tuple(orders), limit, strict=False) if orders and limit is not None and use_index \
            else None
        what = f"read of {self.identifier} (snapshot {snapshot_id or self.snapshot_id})"
        rows, report = self._read(table, predicate, schema, topn=topn, use_index=use_index, what=what)
        self.last_scan_report = report
        if rows.num_columns == 0:
            rows = schema.empty_table()
        if orders:
            rows = rows.take(spark_sort_indices(rows, orders))
        if limit is not None:
            rows = rows.slice(0, limit)
        return rows.select(wanted) if wanted is not None else rows

    def _read(self, table: Any, predicate: Predicate | str, schema: pa.Schema, *, topn: TopN | None,
              use_index: bool, what: str) -> tuple[pa.Table, ScanReport]:
        """The rows of ``table`` (pinned or not) matching ``predicate``; ``what`` names the read in
        the error for a listed file that is gone (by hand, or an expiry meanwhile)."""
        try:
            if latest_snapshot(table) is None:
                return schema.empty_table(), ScanReport()
            if self.is_primary_key_table:
                from paimon_index.table.pk import dv_mode, read_primary_key

                if dv_mode(table):
                    return read_primary_key(table, predicate)
            from paimon_index.table.read import read_arrow

            try:  # merge-on-read: planned with each key's older versions subtracted (table/pk/versions.py)
                return read_arrow(table, predicate, use_index=use_index, topn=topn)
            except UnsupportedTableError:
                if not self.is_primary_key_table:
                    raise
                return _merged_read(table, predicate)  # another merge engine: merged by key
        except FileNotFoundError as e:
            from paimon_index.table.files import missing_file_error

            raise missing_file_error(what, e) from e

    def count(self, where: Predicate | str | None = None, *, use_index: bool = True) -> int:
        """``SELECT count(*) ... WHERE where`` on the latest snapshot, from the indexes where they
        hold the answer (:mod:`paimon_index.table.aggregate`): a file's row count minus its deletion
        vector, or an index answer that is exactly the matching rows; other files are read (only the
        predicate's columns of the candidate rows). The
        :class:`~paimon_index.table.aggregate.AggregateReport` is left in :attr:`last_aggregate_report`.
        A primary-key table in deletion-vectors mode counts its merge-free files the same way; one
        whose rows need a merge by key reads them merged.

        Raises:
            InvalidPredicateError: ``where`` does not parse or does not fit the schema.
        """
        from paimon_index.table.aggregate import count_rows

        if latest_snapshot(self._paimon) is None:
            self.last_aggregate_report = AggregateReport()
            return 0
        try:  # a primary-key table in deletion-vectors mode counts as its merge-free files
            total, self.last_aggregate_report = count_rows(self._paimon, where, use_index=use_index)
        except UnsupportedTableError:  # rows that need a merge by key: one row per key read
            return self.read(where, use_index=use_index).num_rows
        return total

    def min_max(self, column: str, where: Predicate | str | None = None, *,
                use_index: bool = True) -> tuple[Any, Any]:
        """``SELECT min(column), max(column) ... WHERE where`` with Spark's meaning: NULLs ignored,
        NaN above every number, ``(None, None)`` when no row has a value. Range bitmaps answer it
        without reading data where they can (see :mod:`paimon_index.table.aggregate`).

        Raises:
            InvalidOptionError: ``column`` is unknown or not a scalar column.
            InvalidPredicateError: ``where`` does not parse or does not fit the schema.
        """
        from paimon_index.table.aggregate import min_max, spark_min_max

        if latest_snapshot(self._paimon) is None:
            if column not in self.schema.names:
                raise InvalidOptionError(f"min/max: unknown column {column!r} (columns: {self.schema.names})")
            self.last_aggregate_report = AggregateReport()
            return None, None
        try:  # a primary-key table in deletion-vectors mode: its merge-free files, as an append table's
            answer, self.last_aggregate_report = min_max(self._paimon, column, where, use_index=use_index)
        except UnsupportedTableError:  # rows that need a merge by key: the merged read's column
            if column not in self.schema.names:
                raise InvalidOptionError(f"min/max: unknown column {column!r} "
                                         f"(columns: {self.schema.names})") from None
            return spark_min_max(self.read(where, columns=[column], use_index=use_index).column(column))
        return answer

    def file_indexes(self) -> pa.Table:
        """One row per (data file, column, index type) of the latest snapshot (``$file_indexes``)."""
        from paimon_index.table.system import file_indexes

        return file_indexes(self._paimon)

    # maintenance ---------------------------------------------------------------------------------

    def expire_snapshots(self, retain_last: int | None = None,
                         older_than: datetime | float | None = None) -> MaintenanceResult:
        """Expire old snapshots (keep the newest ``retain_last``; expire those ``older_than``)."""
        self._writable()
        from paimon_index.table.maintenance import expire_snapshots

        result = expire_snapshots(self._paimon, retain_last=retain_last, older_than=older_than)
        return MaintenanceResult("expire_snapshots", tuple(result.expired_snapshots),
                                 tuple(result.deleted_files), result)

    def remove_orphan_files(self, older_than: datetime | float) -> MaintenanceResult:
        """Delete files no snapshot references that are older than ``older_than`` (a datetime or
        seconds since the epoch) — never a file a running write may still commit."""
        self._writable()
        from paimon_index.table.maintenance import remove_orphan_files

        result = remove_orphan_files(self._paimon, older_than=older_than)
        return MaintenanceResult("remove_orphan_files", (), tuple(result.deleted_files), result)

    def alter_options(self, set: Mapping[str, str] | None = None,
                      remove: Iterable[str] = ()) -> Table:
        """``ALTER TABLE SET/RESET TBLPROPERTIES``; returns this table, re-opened with the new options."""
        _catalog.alter_table_options(self.warehouse, self.identifier, set_options=dict(set or {}),
                                     remove=list(remove), catalog_options=self.catalog_options)
        self._paimon = self._open()
        return self


class _ArrowKeyedRows:
    """:class:`~paimon_index.table.pk.upsert.KeyedRows` of a ``Table``: Arrow tables in this process,
    read and upserted exactly on the planned snapshot."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def matching(self, where: Predicate | str, snapshot_id: int) -> pa.Table:
        # The planned snapshot's rows under today's columns, not time travel: the change's condition
        # and values name the current columns, and a schema change commits no snapshot.
        table = self.table
        pinned = pinned_current(table.paimon_table, snapshot_id)
        return table._read(pinned, where, table.schema, topn=None, use_index=True,
                           what=f"change of {table.identifier} (snapshot {snapshot_id})")[0]

    def deleted(self, rows: pa.Table) -> pa.Table:
        from paimon_index.table.pk.upsert import DELETE_KIND, ROW_KIND_COLUMN

        return rows.append_column(ROW_KIND_COLUMN, pa.array([DELETE_KIND] * rows.num_rows, pa.string()))

    def assigned(self, rows: pa.Table, assignments: Mapping[str, Any]) -> pa.Table:
        from paimon_index.table.row_level import assigned_rows

        if rows.num_rows == 0:
            return rows  # nothing matched: no value to evaluate (nor to fail)
        return assigned_rows(self.table.identifier, rows, assignments)

    def upsert(self, rows: pa.Table, snapshot_id: int) -> tuple[int | None, int]:
        from paimon_index.table.pk.upsert import ROW_KIND_COLUMN

        # Rows with a row kind are a DELETE's (``deleted``): they remove their keys on every engine.
        return self.table._upsert(rows, snapshot_id, delete_keys=ROW_KIND_COLUMN in rows.column_names), \
            rows.num_rows


def spark_sort_indices(rows: pa.Table, orders: Iterable[SortOrder]) -> pa.Array:
    """Row order of ``ORDER BY orders`` as Spark sorts: NULL placement per key, NaN above every
    number, -0.0 equal to 0.0 (ties keep their order)."""
    keys: list[tuple[str, str]] = []
    helpers: dict[str, pa.Array] = {}
    for i, order in enumerate(orders):
        column = rows.column(order.column)
        direction = "ascending" if order.ascending else "descending"
        # NULLs: a 0/1 key of their own, before the values.
        nulls = pc.is_null(column)
        helpers[f"n{i}"] = pc.invert(nulls) if order.nulls_first else nulls
        keys.append((f"n{i}", "ascending"))
        if pa.types.is_floating(column.type):
            nan = pc.fill_null(pc.is_nan(column), False)
            helpers[f"x{i}"] = nan  # NaN above every number
            keys.append((f"x{i}", direction))
            column = pc.if_else(nan, pa.scalar(0.0, column.type), pc.add(column, pa.scalar(0.0, column.type)))
        helpers[f"v{i}"] = column
        keys.append((f"v{i}", direction))
    return pc.sort_indices(pa.table(helpers), sort_keys=keys)


def _merged_read(table: Any, predicate: Predicate | str) -> tuple[pa.Table, ScanReport]:
    """A primary-key table without deletion vectors: merged by key, then the exact filter."""
    from paimon_index.arrow_filter import filter_rows
    from paimon_index.table.pk.merge_on_read import merged_splits
    from paimon_index.table.scan import bind_where
    from paimon_index.table.schemas import read_schema

    schema = read_schema(table)
    bound = bind_where(predicate, schema)
    merged = merged_splits(table, table.new_read_builder().new_scan().plan().splits())
    report = ScanReport()
    report.rows_read = merged.num_rows
    rows = filter_rows(merged, bound, schema)
    report.rows_returned = rows.num_rows
    return rows, report


def _as_table(data: pa.Table | pa.RecordBatch) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    raise DataError(f"expected a pyarrow Table or RecordBatch, got {type(data).__name__}")


def _assigned(expression: Any, target: pa.DataType, column: str) -> Any:
    """The expression's values cast into the column as Spark's assignment casts them."""

    def values(rows: pa.Table) -> pa.Array:
        result = expression.evaluate(rows)
        if pa.types.is_null(result.type):
            return pa.nulls(len(result), target)
        fractional = pa.types.is_floating(result.type) or pa.types.is_decimal(result.type)
        if pa.types.is_integer(target) and fractional:
            # CAST(x AS INT) truncates toward zero (overflow still fails the safe cast below).
            result = pc.trunc(result.cast(pa.float64()) if pa.types.is_decimal(result.type) else result)
        try:
            return result.cast(target)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise DataError(f"SET {column} = {expression.text!r}: the value does not fit {target}: {e}") \
                from e

    return values
