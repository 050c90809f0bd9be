"""Primary-key tables without deletion vectors (merge-on-read): changes as level-0 key-value files.

    check_changes(table, deleting) -> options           what is refused, before anything is read
    write_changes(table, rows, planned=None, kind="+I") -> snapshot id | None
    prepare_changes(table, rows, kind="+I") -> commit messages     its first half (a Spark task's)
    commit_changes(table, messages, planned=None) -> snapshot id | None   its second half
    merged_bucket_rows(table, snapshot_id, partition, bucket) -> one bucket's rows, merged by key
    merged_splits(table, splits) -> the rows of pypaimon's splits, merged by key

Without deletion vectors a reader merges a key's rows across files (the newest sequence number
wins; a ``-D`` or ``-U`` row removes the key), so a change is just new rows: Paimon's writer puts
them in level-0 files, each row with its ``_VALUE_KIND`` (``+I`` 0, ``-U`` 1, ``+U`` 2, ``-D`` 3).
Paimon's Spark connector does exactly that (``DeleteFromPaimonTableCommand`` /
``UpdatePaimonTableCommand`` on a primary-key table): a DELETE writes the matching rows as ``-D``,
an UPDATE the changed rows as ``+U``, MERGE INTO / an upsert its rows with their kinds, committed as
one APPEND snapshot of level-0 files. Here the same, through pypaimon's key-value writer (buckets,
sequence numbers, the dynamic-bucket HASH index); only the value kind of each row is set from the
rows' ``_ROW_KIND`` (pypaimon's writer sets it only from a table column named by ``rowkind.field``).

One snapshot per statement, exact: a DELETE/UPDATE read its rows on snapshot ``planned`` and
commits exactly as ``planned + 1`` (else :class:`~paimon_index.errors.ConcurrentChangeError`, the
files written deleted), so a change landing in between is never overwritten by stale rows.

Merge engines (:func:`check_changes`): ``deduplicate`` (the last row of a key wins; a ``-D``
removes it); ``partial-update`` for changes that delete nothing (UPDATE, MERGE without DELETE);
deletes on ``partial-update``/``aggregation`` need Paimon's ``*.remove-record-on-delete`` (Java's
``validatePKUpsertDeletable``), which pypaimon's writer refuses, so they are refused here (enable
``deletion-vectors.enabled``, where they are supported).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import InvalidOptionError, PrimaryKeyTableError, UnsupportedTableError
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import VALUE_KIND_INPUT, table_name, table_options, value_kinds_from
from paimon_index.table.pk.commit import on_snapshot, written_paths
from paimon_index.table.pk.plan import (
    ROW_KIND_COLUMN,
    SEQUENCE_COLUMN,
    VALUE_KIND_COLUMN,
    VALUE_KINDS,
    arrow_fields,
    check_keys,
    live_current_rows,
    user_columns,
)
from paimon_index.table.pk.versions import last_version_wins, newest_live
from paimon_index.table.schemas import read_schema
from paimon_index.table.write import attach_file_indexes, conform, writing

__all__ = ["LATEST", "VALUE_KINDS", "check_changes", "commit_changes", "merged_bucket_rows",
           "merged_splits", "prepare_changes", "write_changes"]

MERGE_ENGINE = "merge-engine"
SEQUENCE_FIELD = "sequence.field"


def check_changes(table: Any, operation: str, deleting: bool = True) -> dict[str, str]:
    """The table's options, after refusing a change by key (``operation``: ``delete``, ``update``,
    ``merge``, ``upsert``; ``deleting``: it writes ``-D``/``-U`` rows) that merge-on-read cannot
    apply exactly here.

    ``deduplicate`` takes every change. ``partial-update`` takes rows that delete nothing (an UPDATE,
    a MERGE without a DELETE clause: ``+U``/``+I`` rows the reader merges field by field, NULL keeping
    the old value, as with Paimon's connector); a delete needs Paimon's
    ``partial-update.remove-record-on-delete``, which pypaimon's writer refuses. ``aggregation``:
    UPDATE/MERGE are refused as Paimon refuses them, a delete needs
    ``aggregation.remove-record-on-delete`` (refused by pypaimon too). Other engines are refused.

    Raises:
        UnsupportedTableError: see above; the message names ``deletion-vectors.enabled``.
    """
    options = table_options(table)
    engine = options.get(MERGE_ENGINE, "deduplicate")
    if engine == "deduplicate" or (engine == "partial-update" and not deleting):
        return options
    what = {"delete": "DELETE", "update": "UPDATE", "merge": "MERGE INTO"}.get(operation, "an upsert")
    why = "deleting keys (-D/-U rows)" if deleting else "this change"
    raise UnsupportedTableError(
        f"{what} of {table_name(table)} (merge-engine '{engine}', no deletion vectors): {why} is not "
        "supported here (pypaimon's writer refuses '*.remove-record-on-delete', which Paimon needs for "
        "it): set 'deletion-vectors.enabled' = 'true' on the table (supported there), or use Paimon's "
        "connector")


#: ``planned`` of :func:`write_changes`: the latest snapshot, exactly.
LATEST = object()


def write_changes(table: Any, rows: pa.Table, *, planned: int | object | None = LATEST,
                  kind: str = "+I", operation: str = "upsert") -> int | None:
    """Write ``rows`` as level-0 key-value rows in one APPEND snapshot; the new snapshot's id (None
    when there is nothing to write).

    A row's value kind is its ``_ROW_KIND`` (``+I``, ``-U``, ``+U``, ``-D``) when ``rows`` has that
    column, else ``kind``. ``planned``: the snapshot the rows were read on (commit exactly on it;
    None: the table was empty); :data:`LATEST`: the latest snapshot, exactly.

    Raises:
        NullKeyError: NULL in a primary-key column.
        InvalidOptionError: an unknown row kind.
        UnsupportedTableError: see :func:`check_changes`.
        ConcurrentChangeError: another commit landed after ``planned``; nothing applied.
    """
    planned = _resolved(table, planned)  # before writing: the rows were read on it
    return commit_changes(table, prepare_changes(table, rows, kind=kind, operation=operation),
                          planned=planned, operation=operation)


def prepare_changes(table: Any, rows: pa.Table, *, kind: str = "+I", operation: str = "upsert") -> list[Any]:
    """:func:`write_changes`' first half, what a Spark task runs on the rows of its buckets: the
    checks, then ``rows`` written as level-0 files; their commit messages (nothing committed; the
    files of a failed write deleted). Every row of a bucket must reach one call."""
    kinds = _value_kinds(rows, kind)
    deleting = operation == "delete" or bool(pc.any(pc.is_in(kinds, pa.array([1, 3], pa.int8()))).as_py())
    check_changes(table, operation, deleting=deleting)
    from paimon_index.table.pk.changelog import check_merge_on_read

    check_merge_on_read(table)
    if rows.num_rows == 0:
        return []
    check_keys(table, rows)
    data = rows.drop_columns([ROW_KIND_COLUMN]) if ROW_KIND_COLUMN in rows.column_names else rows
    return _write(table, data, kinds)


def commit_changes(table: Any, messages: list[Any], *, planned: int | object | None = LATEST,
                   operation: str = "upsert") -> int | None:
    """:func:`write_changes`' second half: ``messages`` (of :func:`prepare_changes`) committed as one
    APPEND snapshot exactly on ``planned``; the new snapshot's id (None: no message). When that
    fails, the messages' files are deleted.

    Raises:
        ConcurrentChangeError: another commit landed after ``planned``; nothing applied.
    """
    if not messages:
        return None
    index_dir = str(table.path_factory().index_path())
    with on_snapshot(table, _resolved(table, planned), operation,  # type: ignore[arg-type]
                     written_paths(messages, index_dir)) as txn:
        txn.stage(messages)
        return txn.commit()


def _resolved(table: Any, planned: int | object | None) -> int | object | None:
    if planned is not LATEST:
        return planned
    from paimon_index.table.paimon import latest_snapshot

    snapshot = latest_snapshot(table)
    return None if snapshot is None else int(snapshot.id)


def _value_kinds(rows: pa.Table, kind: str) -> pa.Array:
    if ROW_KIND_COLUMN not in rows.column_names:
        if kind not in VALUE_KINDS:
            raise InvalidOptionError(f"unknown row kind {kind!r} (one of {sorted(VALUE_KINDS)})")
        return pa.array([VALUE_KINDS[kind]] * rows.num_rows, pa.int8())
    given = rows[ROW_KIND_COLUMN]
    unknown = set(pc.unique(given).to_pylist()) - set(VALUE_KINDS)
    if unknown:
        raise InvalidOptionError(f"{ROW_KIND_COLUMN} holds unknown row kinds {sorted(map(str, unknown))} "
                                 f"(one of {sorted(VALUE_KINDS)})")
    codes = pc.index_in(given, pa.array(list(VALUE_KINDS)))
    return pc.cast(codes, pa.int8()).combine_chunks() if isinstance(codes, pa.ChunkedArray) else \
        pc.cast(codes, pa.int8())


def _write(table: Any, data: pa.Table, kinds: pa.Array) -> list[Any]:
    """pypaimon's key-value writer, each row's ``_VALUE_KIND`` taken from ``kinds``."""
    with writing(table) as writer:
        value_kinds_from(writer, VALUE_KIND_INPUT)
        rows = conform(data, writer.table_pyarrow_schema, table=table_name(table))
        rows = rows.append_column(pa.field(VALUE_KIND_INPUT, pa.int8(), nullable=False), kinds)
        writer.write_arrow(rows)
        return attach_file_indexes(table, writer.prepare_commit())


def merged_bucket_rows(table: Any, snapshot_id: int, partition: tuple[Any, ...], bucket: int,
                       files: Collection[str], *, kinds: bool = False) -> pa.Table:
    """The live rows of one (partition, bucket) of snapshot ``snapshot_id``, merged by key with the
    table's merge engine (:func:`merged_splits`, as :meth:`paimon_index.Table.read` reads such a
    table; deleted keys gone), in the table's current columns: what a full compaction writes.
    ``kinds``: with each row's ``_VALUE_KIND`` where the merge is the newest version's (``deduplicate``).

    Raises:
        PrimaryKeyTableError: the bucket's files in pypaimon's plan are not exactly ``files`` (the
            names the caller planned): its rows would not be the ones it replaces.
    """
    from paimon_index.table.paimon import pinned_current

    pinned = pinned_current(table, snapshot_id)
    builder = pinned.new_read_builder()
    splits = [s for s in builder.new_scan().plan().splits()
              if int(s.bucket) == int(bucket) and tuple(s.partition.values or ()) == tuple(partition)]
    listed = {str(m.file_name) for s in splits for m in s.files}
    if listed != set(files):
        raise PrimaryKeyTableError(
            f"internal: snapshot {snapshot_id} of {table_name(table)} lists {len(listed)} files for bucket "
            f"{bucket} of partition {partition}, the plan {len(set(files))}: nothing was compacted")
    return merged_splits(table, splits, kinds=kinds)


def merged_splits(table: Any, splits: list[Any], *, kinds: bool = False) -> pa.Table:
    """The live rows of ``splits`` (pypaimon's plan of this merge-on-read table), merged by key with
    the table's merge engine: per (partition, bucket) by :func:`_newest_versions` where the last
    version wins (``deduplicate``), else by pypaimon's merge read; in the table's current columns."""
    if not last_version_wins(table):
        return table.new_read_builder().new_read().to_arrow(splits)
    buckets: dict[tuple[Any, ...], list[Any]] = {}
    for split in splits:  # a bucket's files may come in several splits
        buckets.setdefault((tuple(split.partition.values or ()), int(split.bucket)), []).append(split)
    parts = []
    for of_bucket in buckets.values():
        merged = _newest_versions(table, [m for s in of_bucket for m in s.files], kinds)
        parts.append(table.new_read_builder().new_read().to_arrow(of_bucket) if merged is None else merged)
    return pa.concat_tables(parts) if parts else pa.schema(arrow_fields(table)).empty_table()


def _newest_versions(table: Any, metas: list[Any], kinds: bool = False) -> pa.Table | None:
    """One bucket's rows merged as ``deduplicate`` merges them, in Arrow: each key's version of the
    highest ``_SEQUENCE_NUMBER`` unless it is a ``-U`` or ``-D``
    (:func:`~paimon_index.table.pk.versions.newest_live`), in key order. pypaimon's merge read,
    which :func:`merged_bucket_rows` used for every bucket, compares and copies rows one at a time
    in Python (3.6-4.7 s for a 550,000-row bucket here; this 0.10-0.21 s).
    None when :func:`~paimon_index.table.pk.versions.newest_live` cannot tell (a NULL or
    floating-point key, two versions of a key with one sequence number): the merge reader's own."""
    io, schema, columns = TableIO.of(table), read_schema(table), user_columns(table)
    fields = arrow_fields(table)
    parts = [live_current_rows(table, meta, None, columns, [SEQUENCE_COLUMN, VALUE_KIND_COLUMN], io=io,
                               schema=schema) for meta in metas]
    if not parts:
        return pa.schema(fields).empty_table()
    rows = pa.concat_tables(parts, promote_options="permissive")
    live = newest_live([rows[k] for k in table.primary_keys], rows[SEQUENCE_COLUMN].to_numpy(),
                       rows[VALUE_KIND_COLUMN].to_numpy())
    if live is None:
        return None
    kept = rows.take(pa.array(live))
    merged = kept.select(columns).cast(pa.schema(fields))
    return merged.append_column(VALUE_KIND_COLUMN, kept[VALUE_KIND_COLUMN]) if kinds else merged
