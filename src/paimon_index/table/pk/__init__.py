"""Deletion-vectors mode for primary-key tables: upserts that look up older rows, merge-free reads.

    upsert_arrow(table, data) -> snapshot id        rows with an optional ``_ROW_KIND`` column
    read_primary_key(table, predicate) -> (rows, ScanReport)
    compact(table, full=False, threshold=0.5) -> snapshot id | None
    set_deletion_vectors(warehouse, identifier, enabled)
    split_batch / prepare_upsert / commit_prepared / commit_upsert    the Spark path's halves
    input_records(table, data)                      a task's 'input' changelog records

In deletion-vectors mode (seed 004) a reader reads the files of levels >= 1 with their deletion
vectors and merges nothing; every write leaves, for every key, at most one live row in those files.
Every operation is planned on one pinned snapshot and commits exactly as the next one, or raises
:class:`~paimon_index.errors.ConcurrentChangeError` having deleted what it wrote — so concurrent
writers never store a key twice and a compaction never brings overwritten values back.

Modules, bottom up:

    merge.py       merge engines (partial-update, aggregation): options validated, rows of a key
                   merged as Java's merge functions merge them
    plan.py        table facts (DV mode, NULL keys, trimmed keys, levels) and the pinned snapshot's
                   live files and vectors per (partition, bucket)
    lookup.py      vectorized key lookups against a bucket's files -> deletion-vector marks
    levels.py      where a new file goes; rewriting a bucket's live rows
    commit.py      the exact commit (the project's Transaction) and the files to clean up
    upsert.py      upsert_arrow and the executor/driver halves of a distributed upsert
    dynamic.py     dynamic-bucket assignment from the HASH index, Paimon's way (and the records
                   path of an 'input' changelog, which :func:`upsert_arrow` here picks)
    overwrite.py   INSERT OVERWRITE: a task's half and the driver's exact commit
    compaction.py  compact, set_deletion_vectors
    read.py        read_primary_key (merge-free, or merge-on-read over level-0 files)

Partitioned tables: data files store the key *without* the partition fields (Paimon's trimmed
primary key); lookups run per (partition, bucket) on that trimmed key.
"""

from typing import Any

import pyarrow as pa

from paimon_index.errors import NullKeyError, PrimaryKeyTableError
from paimon_index.table.pk import dynamic, upsert
from paimon_index.table.pk.compaction import compact, set_deletion_vectors
from paimon_index.table.pk.plan import DEFAULT_COMPACTION_THRESHOLD, ROW_KIND_COLUMN, dv_mode
from paimon_index.table.pk.read import check_merge_free, read_primary_key
from paimon_index.table.pk.upsert import (
    LATEST,
    PreparedUpsert,
    bucket_of_rows,
    buckets_of,
    commit_prepared,
    commit_upsert,
    fold_level0,
    folded_snapshot_id,
    input_records,
    owned_buckets,
    prepare_upsert,
    split_batch,
)

__all__ = ["DEFAULT_COMPACTION_THRESHOLD", "ROW_KIND_COLUMN", "NullKeyError", "PreparedUpsert",
           "PrimaryKeyTableError", "bucket_of_rows", "buckets_of", "check_merge_free", "commit_prepared",
           "commit_upsert", "compact", "dv_mode", "fold_level0", "folded_snapshot_id", "input_records",
           "owned_buckets", "prepare_upsert", "read_primary_key", "set_deletion_vectors", "split_batch",
           "upsert_arrow"]


def upsert_arrow(table: Any, data: pa.Table, *, planned: int | object | None = LATEST,
                 delete_keys: bool = False, kind: str = "+I") -> int | None:
    """Insert or replace rows by key (``_ROW_KIND`` ``-D``/``-U`` deletes), one commit:
    :func:`paimon_index.table.pk.upsert.upsert_arrow`, or, for a dynamic-bucket table with an
    ``input`` changelog, :func:`paimon_index.table.pk.dynamic.upsert_records` (which reuses the
    upsert's halves, so the choice is made here, above both)."""
    if dynamic.writes_records(table):
        return dynamic.upsert_records(table, data, planned=planned, delete_keys=delete_keys, kind=kind)
    return upsert.upsert_arrow(table, data, planned=planned, delete_keys=delete_keys, kind=kind)
