"""``rewrite_file_index``: rebuild data files' index containers after ``file-index.*`` options change.

    rewrite_file_index(table, where=None) -> snapshot id | None

Per data file of the latest snapshot (those of the partitions ``where`` selects, a predicate on
partition columns):

1. build the container the table's *current* options ask for from the file's own rows (only the
   indexed columns are read) — index types or columns no longer configured are dropped, an empty
   configuration removes the index;
2. compare it with the file's current container (embedded bytes or ``.index`` file): identical
   bytes mean the file is up to date and is left untouched;
3. otherwise store it as Paimon's ``FileIndexProcessor`` does: embedded when at most
   ``file-index.in-manifest-threshold`` bytes, else a **new** index file beside the data file —
   ``<data-file>.index`` when the file had none, else the next name in Paimon's sequence
   (``<data-file>-1.index``, ``-2``, ...), so older snapshots keep the file they reference;
4. all changed files go into **one** commit: for each, the old ``DataFileMeta`` is deleted and the
   same data file with its new index is added. Manifest entries are identified by partition, bucket,
   level, file name, extra files *and* embedded index (in Java and in pypaimon), so DELETE + ADD of
   one file name is a replacement. Deletion vectors are keyed by data-file name and keep applying.

Java commits this as a COMPACT snapshot (compact before/after); pypaimon's batch commit takes no
compact increments, so here it is an OVERWRITE-kind snapshot (deleted files) with the same content.

``plan_rewrite`` and ``rewrite_file`` are the driver and executor halves, so a Spark job
(:func:`paimon_index.spark.row_level.rewrite_file_index`) can spread the work.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from paimon_index.fileindex.options import FileIndexOptions
from paimon_index.predicate import Predicate
from paimon_index.sql import bind_predicate
from paimon_index.table.read import container_source
from paimon_index.table.write import (
    INDEX_FILE_SUFFIX,
    file_container,
    store_container,
    table_options,
    table_schema,
)

__all__ = ["RewriteTask", "commit_rewrite", "next_index_file_name", "plan_rewrite", "rewrite_file",
           "rewrite_file_index"]

#: ``<name>-<n>.index``: the n-th rewritten index file of a data file (Paimon's numbering).
_NUMBERED = re.compile(r"^(?P<stem>.*)-(?P<n>\d+)" + re.escape(INDEX_FILE_SUFFIX) + "$")


def next_index_file_name(data_file: str, current: str | None) -> str:
    """The name of a data file's next index file, as Paimon's ``createNewFileIndexFilePath``."""
    if current is None:
        return data_file + INDEX_FILE_SUFFIX
    numbered = _NUMBERED.match(current)
    if numbered:
        return f"{numbered['stem']}-{int(numbered['n']) + 1}{INDEX_FILE_SUFFIX}"
    return current[: -len(INDEX_FILE_SUFFIX)] + "-1" + INDEX_FILE_SUFFIX


@dataclass(frozen=True)
class RewriteTask:
    """One data file to check (pickled to an executor)."""

    partition: tuple[Any, ...]
    bucket: int
    meta: Any  # pypaimon DataFileMeta, as listed in the snapshot


def plan_rewrite(table: Any, where: Predicate | str | None = None) -> list[RewriteTask]:
    """Every data file of the latest snapshot in the partitions ``where`` selects."""
    keys = list(table.partition_keys or [])
    keep: Callable[[Any], bool] = lambda split: True  # noqa: E731
    if where is not None:
        import pyarrow as pa

        from paimon_index.arrow_filter import to_arrow_expression

        schema = {k: v for k, v in table_schema(table).items() if k in keys}
        bound = bind_predicate(where, schema) if isinstance(where, str) else where
        expression = to_arrow_expression(bound, schema)

        def keep(split: Any) -> bool:
            values = list(getattr(split.partition, "values", []) or [])
            row = pa.Table.from_pylist([dict(zip(keys, values, strict=True))])
            return row.filter(expression).num_rows == 1

    tasks = []
    for split in table.new_read_builder().new_scan().plan().splits():
        if keep(split):
            partition = tuple(getattr(split.partition, "values", []) or [])
            tasks += [RewriteTask(partition, split.bucket, meta) for meta in split.files]
    return tasks


def _current(meta: Any) -> tuple[bytes | None, str | None]:
    source = container_source(meta)
    if source is None or isinstance(source, bytes):
        return source, None
    with open(source, "rb") as f:
        return f.read(), posixpath.basename(source)


def rewrite_file(table: Any, task: RewriteTask, options: FileIndexOptions | None = None) -> Any | None:
    """The pypaimon ``CommitMessage`` replacing the file's index, or None when it is up to date."""
    from pypaimon.write.commit_message import CommitMessage

    opts = options or FileIndexOptions.from_table_options(table_options(table))
    meta = task.meta
    wanted = None if opts.empty else file_container(meta, opts, table_schema(table))
    current, current_file = _current(meta)
    same_storage = wanted is None or (len(wanted) <= opts.in_manifest_threshold) == (current_file is None)
    if wanted == current and same_storage:
        return None
    new_meta = store_container(table, meta, wanted, opts, next_index_file_name(meta.file_name, current_file))
    return CommitMessage(partition=task.partition, bucket=task.bucket, new_files=[new_meta],
                         deleted_files=[meta])


def commit_rewrite(table: Any, messages: list[Any]) -> int | None:
    """Commit the rewritten files as one snapshot (nothing when no file changed)."""
    collected = [m for m in messages if m is not None]
    if not collected:
        return None
    committer = table.new_batch_write_builder().new_commit()
    try:
        committer.commit(collected)
    finally:
        committer.close()
    return table.snapshot_manager().get_latest_snapshot().id


def rewrite_file_index(table: Any, where: Predicate | str | None = None,
                       progress: Callable[[int, int], None] | None = None) -> int | None:
    """Rebuild every out-of-date file index in one snapshot; the new snapshot id or None."""
    options = FileIndexOptions.from_table_options(table_options(table))
    tasks = plan_rewrite(table, where)
    messages = []
    for done, task in enumerate(tasks, 1):
        messages.append(rewrite_file(table, task, options))
        if progress is not None:
            progress(done, len(tasks))
    return commit_rewrite(table, messages)

