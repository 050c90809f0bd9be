"""INSERT OVERWRITE of a primary-key table, in one exact snapshot, in two halves.

    prepare_overwrite(table, rows) -> messages     a task's half: the rows of its buckets written
    commit_overwrite(table, messages, planned=)    the driver's half: one OVERWRITE snapshot on planned
    overwrite_rows(table, rows)                    both, in one process (Table.write(mode="overwrite"))
    check_overwrite(table)                         the refusals, before anything is written

Deletion-vectors mode: the last row per key (a merge engine's fold of the rows) written and placed
straight into levels >= 1, where merge-free readers see them (nothing older survives where they land,
so they need no vector). Merge-on-read: key-value files in level 0 that readers merge, as Paimon's
connector writes an overwrite. Dynamic buckets in both modes: buckets from a fresh HASH index
(:func:`paimon_index.table.pk.dynamic.write_fresh`). No changelog, whatever ``changelog-producer``
says: Java's overwrite commits none either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import InvalidOptionError, PrimaryKeyTableError, UnsupportedTableError
from paimon_index.table.paimon import (
    DYNAMIC_BUCKET,
    bucket_number,
    latest_snapshot,
    table_name,
    table_options,
)
from paimon_index.table.pk.commit import abandon, written_paths
from paimon_index.table.pk.dynamic import write_fresh
from paimon_index.table.pk.levels import free_level, write_rows
from paimon_index.table.pk.lookup import last_per_key
from paimon_index.table.pk.merge import DEDUPLICATE, engine_name, merge_engine
from paimon_index.table.pk.plan import (
    ROW_KIND_COLUMN,
    check_keys,
    check_table,
    dv_mode,
    max_level,
    user_columns,
)
from paimon_index.table.pk.upsert import with_row_kinds

__all__ = ["check_overwrite", "commit_overwrite", "overwrite_rows", "prepare_overwrite"]


def overwrite_rows(table: Any, data: pa.Table, *, partition: Mapping[str, Any] | None = None) -> int | None:
    """``INSERT OVERWRITE`` of a primary-key table, one exact snapshot: the table's rows (the
    partitions ``data`` holds, while ``dynamic-partition-overwrite`` is on) become ``data`` (in
    deletion-vectors mode its last row per key). :func:`prepare_overwrite` then :func:`commit_overwrite` on
    the latest snapshot (a Spark job runs the first in its tasks, bucket by bucket).

    In deletion-vectors mode the new files are placed in levels >= 1 in the same snapshot (nothing
    older survives where they land, so no vector is needed): a merge-free reader, Java's included,
    never reads level 0, and Java's writer in this mode likewise compacts its level-0 files before
    it commits. Level-0 files left by an overwrite were invisible to every reader until the next
    upsert or compaction.

    Raises:
        InvalidOptionError: ``data`` has a ``_ROW_KIND`` column (an overwrite replaces, it deletes nothing).
        NullKeyError: NULL in a primary-key column.
        PrimaryKeyTableError: one bucket's new files overlap more often than the table has levels.
        ConcurrentChangeError: another commit landed after the overwrite started; nothing applied.
    """
    snapshot = latest_snapshot(table)
    planned = None if snapshot is None else int(snapshot.id)
    return commit_overwrite(table, prepare_overwrite(table, data), planned=planned, partition=partition)


def prepare_overwrite(table: Any, data: pa.Table) -> list[Any]:
    """:func:`overwrite_rows`' first half, what a Spark task runs on the rows of its buckets: the
    checks, the last row per key (or the merge engine's fold of the rows), written and placed in
    levels >= 1; their commit messages (nothing committed; the files of a failed write or
    placement deleted). Every row of a key must reach one call (a shuffle by bucket).

    Without deletion vectors (merge-on-read): key-value files in level 0 that readers merge, as
    Paimon's connector writes an overwrite; with dynamic buckets the last row per key, at buckets
    from a fresh HASH index (pypaimon's writer left buckets without an index, which refused every
    later write of the table)."""
    options = check_overwrite(table)
    dynamic = bucket_number(table) == DYNAMIC_BUCKET
    if not dv_mode(table) and not dynamic:
        from paimon_index.table.write import write_files

        return write_files(table, data)  # pypaimon's key-value writer: level 0, readers merge
    if ROW_KIND_COLUMN in data.column_names:
        raise InvalidOptionError(f"an overwrite replaces rows: drop the {ROW_KIND_COLUMN} column (use upsert "
                                 "to delete keys)")
    check_keys(table, data)
    if not dv_mode(table):  # dynamic buckets (deduplicate, check_overwrite): level 0, fresh index
        return write_fresh(table, last_per_key(data, list(table.primary_keys)))
    engine = merge_engine(table, options)
    if engine is None:
        rows = last_per_key(data, list(table.primary_keys))
    else:  # the new rows merged among themselves (nothing older survives an overwrite)
        rows = engine.fold(with_row_kinds(table, data), single_as_is=True)
        adding = pc.is_in(rows[ROW_KIND_COLUMN], pa.array(["+I", "+U"]))
        rows = rows.filter(adding).select(user_columns(table))
    if rows.num_rows == 0:
        return []
    top = max_level(options)
    messages = write_fresh(table, rows) if dynamic else write_rows(table, rows)
    try:
        return [replace(message, new_files=_placed(table, message, top)) for message in messages]
    except BaseException:
        abandon(table, written_paths(messages, str(table.path_factory().index_path())), "overwrite")
        raise


def check_overwrite(table: Any) -> dict[str, str]:
    """The table's options, after the checks an overwrite makes before writing anything (the Spark
    job makes them on the driver): deletion-vectors mode as :func:`check_table` for a write by key;
    merge-on-read with dynamic buckets only with ``deduplicate`` (another engine's rows would need
    its fold before they get their buckets from a fresh index).

    Raises:
        UnsupportedTableError: a dynamic-bucket merge-on-read table with another merge engine.
    """
    if dv_mode(table):
        return check_table(table, upsert=True)
    options = table_options(table)
    engine = engine_name(options)
    if bucket_number(table) == DYNAMIC_BUCKET and engine != DEDUPLICATE:
        raise UnsupportedTableError(
            f"overwrite of {table_name(table)}: a dynamic-bucket ('bucket' = -1) primary-key table with "
            f"'merge-engine' = '{engine}' and no deletion vectors is not supported; set "
            "'deletion-vectors.enabled' = 'true' or a fixed 'bucket', or overwrite with Paimon's connector")
    return options


def _placed(table: Any, message: Any, top: int) -> list[Any]:
    """The message's new files, each in the highest level >= 1 none of the bucket's others overlaps
    (the bucket is replaced: its first sorted run goes to the top, each newer overlapping one below)."""
    placed: list[Any] = []
    for new in sorted(message.new_files, key=lambda m: m.min_sequence_number):
        level = free_level(placed, new, top, from_top=True)
        if level is None:
            raise PrimaryKeyTableError(
                f"overwrite of {table_name(table)}: bucket {message.bucket} got more overlapping "
                f"files than levels 1..{top}; raise 'num-levels' or overwrite in smaller batches")
        placed.append(replace(new, level=level))
    return placed


def commit_overwrite(table: Any, messages: list[Any], *, planned: int | None,
                     partition: Mapping[str, Any] | None = None) -> int | None:
    """:func:`overwrite_rows`' second half: ``messages`` committed as one OVERWRITE snapshot exactly on
    ``planned`` (None: the table was empty); the new snapshot's id. Replaced: the whole table, the
    static ``partition`` spec's partition, or -- ``dynamic-partition-overwrite`` on -- the partitions
    the messages write. When the commit fails, the messages' files are deleted.

    No changelog, whatever 'changelog-producer' says: Java's overwrite commits none either
    (FileStoreCommitImpl.overwritePartition: "Overwrite mode currently does not commit any changelog").

    Raises:
        ConcurrentChangeError: another commit landed after ``planned``; nothing applied.
    """
    from paimon_index.table.transaction import Transaction

    index_dir = str(table.path_factory().index_path())
    with Transaction.on(table, planned, overwrite=True, partition=partition, operation="overwrite",
                        staged=messages, tracked=written_paths(messages, index_dir)) as txn:
        return txn.commit()
