"""What a primary-key operation plans on: table facts and the live files of one pinned snapshot.

    check_table(table) -> options            deletion-vectors mode, a merge engine it supports (merge.py)
    dv_mode(table) -> bool
    check_keys(table, rows)                  NULL in a primary-key column -> NullKeyError
    plan_snapshot(table, snapshot) -> Plan   {(partition values, bucket) -> Bucket}
    one_sorted_run(files) -> bool            a merge-on-read bucket read as it is (one version per key)
    maintainer(plan, bucket)                 the bucket's deletion vectors, live files only
    live_rows(meta, maintainer, columns)     a data file's rows minus its vector, with positions

A primary-key data file holds ``_KEY_<k>`` for each *trimmed* primary key ``k`` (the primary key
without the partition fields: Paimon's ``trimmedPrimaryKeys``, pypaimon's
``table.trimmed_primary_keys``; a file lives in one partition, so those fields are constant there),
then ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the table's columns, sorted by the trimmed key, one
row per key. The files' ``min_key``/``max_key`` are trimmed keys too.

A :class:`Plan` is built on the snapshot a transaction pinned, never on "the latest" read a second
time: everything an operation looks up, marks and places must come from the snapshot it commits on.
The files are listed by :func:`paimon_index.table.plan.plan_snapshot` (as a writer sees them:
every level); vectors are restored for live files only (:func:`maintainer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.deletionvectors.maintainer import BucketDvMaintainer
from paimon_index.errors import (
    ConcurrentChangeError,
    InvalidOptionError,
    NullKeyError,
    PrimaryKeyTableError,
    UnsupportedChangelogProducerError,
    UnsupportedTableError,
)
from paimon_index.fileindex.options import parse_bool, parse_int
from paimon_index.table.bucket_vectors import restore
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import DELETING_VALUE_KINDS, table_name, table_options
from paimon_index.table.pk.merge import MERGE_ENGINE, ROW_KIND_COLUMN, SEQUENCE_FIELD, merge_engine
from paimon_index.table.plan import DV_BITMAP64, DV_ENABLED

__all__ = [
    "DEFAULT_COMPACTION_THRESHOLD",
    "DELETING_VALUE_KINDS",
    "ROW_KIND_COLUMN",
    "Bucket",
    "BucketKey",
    "NullKeyError",
    "Plan",
    "PrimaryKeyTableError",
    "check_keys",
    "check_merge_free",
    "check_table",
    "dv_mode",
    "kind_bytes",
    "live_rows",
    "maintainer",
    "merge_free",
    "plan_snapshot",
]

DELETING_KINDS = ("-D", "-U")
KEY_PREFIX = "_KEY_"
SEQUENCE_COLUMN = "_SEQUENCE_NUMBER"
VALUE_KIND_COLUMN = "_VALUE_KIND"
#: Row kind -> ``_VALUE_KIND`` byte (Paimon's ``RowKind.toByteValue``), in byte order.
VALUE_KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
NUM_LEVELS = "num-levels"
SORTED_RUN_TRIGGER = "num-sorted-run.compaction-trigger"
DEFAULT_SORTED_RUN_TRIGGER = 5
MERGE_ON_READ = "deletion-vectors.merge-on-read"
DEFAULT_COMPACTION_THRESHOLD = 0.5
POSITION = "__paimon_index_position__"

#: (partition values, bucket): how buckets are keyed everywhere in this package.
BucketKey = tuple[tuple[Any, ...], int]


# ------------------------------------------------------------------------------------------------
# table facts
# ------------------------------------------------------------------------------------------------
def check_table(table: Any, *, upsert: bool = False, input_ok: bool = False) -> dict[str, str]:
    """The table's options, after checking it is a primary-key table in DV mode whose merge engine
    (deduplicate, partial-update or aggregation) and its options are supported
    (:func:`paimon_index.table.pk.merge.merge_engine` says what is refused and why).

    ``upsert``: the caller writes rows by key. A deduplicate table with ``sequence.field`` is
    refused then: Paimon keeps the row of the highest sequence value, while the deduplicate upsert
    here reads no old values and lets the incoming row win (a wrong row, silently). Reads and
    compaction of such a table are exact (one live row per key) and stay allowed.

    ``input_ok``: the caller writes ``changelog-producer`` = ``input`` itself (``upsert_arrow``).
    """
    options = table_options(table)
    if not table.is_primary_key_table:
        raise UnsupportedTableError("upserts by key need a primary-key table")
    if not parse_bool(options.get(DV_ENABLED, "false"), DV_ENABLED):
        raise InvalidOptionError(f"deletion-vectors mode needs '{DV_ENABLED}' = 'true'")
    if upsert:  # 'changelog-producer' = 'input' / 'full-compaction': refused before any file is written
        changelog_producer(table, options, input_ok=input_ok)
    if options.get(MERGE_ENGINE, "deduplicate") != "deduplicate":
        merge_engine(table, options)
    elif upsert and options.get(SEQUENCE_FIELD, "").strip():
        raise UnsupportedTableError(
            f"'{SEQUENCE_FIELD}' on a deduplicate table: writes by key are not supported yet (Paimon "
            "keeps the row with the highest sequence value; this writer would let the incoming row win); "
            "write with Paimon's connector, or use 'merge-engine' = 'partial-update' / 'aggregation', "
            "which honour it here")
    return options


CHANGELOG_PRODUCER = "changelog-producer"


def changelog_producer(table: Any, options: Mapping[str, str] | None = None, *,
                       input_ok: bool = False) -> str:
    """The table's changelog producer for a write by key: ``none``, ``lookup``, or ``input`` when
    the caller writes it (``input_ok``: ``Table.upsert``/``delete``/``update``, the Spark jobs;
    :mod:`~paimon_index.table.pk.changelog` writes the change rows).

    Raises:
        UnsupportedChangelogProducerError: ``full-compaction``, or ``input`` on another write path
            (nothing written yet).
        InvalidOptionError: an unknown producer.
    """
    options = table_options(table) if options is None else options
    value = str(options.get(CHANGELOG_PRODUCER, "none")).strip().lower()
    if value in ("none", "lookup") or (value == "input" and input_ok):
        return value
    if value == "input":
        raise UnsupportedChangelogProducerError(
            f"'{CHANGELOG_PRODUCER}' = 'input' on {table_name(table)}: this write path does not write the "
            "input changelog (Table.upsert/delete/update and the Spark jobs and SQL statements do); "
            f"write with those, set '{CHANGELOG_PRODUCER}' = 'lookup' (or 'none'), or write the table "
            "with Paimon's own connector")
    if value == "full-compaction":
        raise UnsupportedChangelogProducerError(
            f"'{CHANGELOG_PRODUCER}' = '{value}' on {table_name(table)}: this writer produces the changelog "
            "only with 'lookup' or 'input' (Paimon's lookup producer: the same change rows, from the lookup "
            f"that marks the deletion vectors); set '{CHANGELOG_PRODUCER}' = 'lookup' (or 'none'), or write "
            "the table with Paimon's own connector")
    raise InvalidOptionError(f"'{CHANGELOG_PRODUCER}' = '{value}' on {table_name(table)} is not a changelog "
                             "producer: use 'none', 'input', 'lookup' or 'full-compaction'")


def dv_mode(table: Any) -> bool:
    """Whether ``table`` is a primary-key table in deletion-vectors mode."""
    options = table_options(table)
    return bool(table.is_primary_key_table) and parse_bool(options.get(DV_ENABLED, "false"), DV_ENABLED)


def check_keys(table: Any, rows: pa.Table) -> None:
    """Raise :class:`NullKeyError` naming the first primary-key column of ``rows`` holding NULL."""
    for key in table.primary_keys:
        if key not in rows.column_names:
            raise PrimaryKeyTableError(f"the rows have no primary-key column {key!r}")
        nulls = rows[key].null_count
        if nulls:
            raise NullKeyError(f"primary-key column {key!r} is NULL in {nulls} of {rows.num_rows} rows; "
                               "a primary key cannot be NULL")


def max_level(options: Mapping[str, str]) -> int:
    """The top level (``num-levels`` - 1; default: the sorted-run trigger)."""
    trigger = parse_int(options.get(SORTED_RUN_TRIGGER, str(DEFAULT_SORTED_RUN_TRIGGER)), SORTED_RUN_TRIGGER)
    levels = parse_int(options.get(NUM_LEVELS, str(trigger + 1)), NUM_LEVELS, minimum=2)
    return levels - 1


def kind_bytes(kinds: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Row kinds (``+I``, ``-U``, ``+U``, ``-D``; checked already) as their ``_VALUE_KIND`` bytes."""
    return pc.cast(pc.index_in(kinds, pa.array(list(VALUE_KINDS))), pa.int8())


def user_columns(table: Any) -> list[str]:
    return [f.name for f in table.fields]


def trimmed_keys(table: Any) -> list[str]:
    """The primary key without the partition fields: what data files store as ``_KEY_*``."""
    return list(table.trimmed_primary_keys)


def writable(table: Any) -> Any:
    """``table`` for pypaimon's key-value writer: the rows this package writes hold one row per key,
    already merged by :mod:`~paimon_index.table.pk.merge`, so pypaimon's buffer merges them as
    ``deduplicate`` (an identity on such rows) — also where pypaimon's own merge functions refuse
    the table's options (``ignore-delete``, ``*.remove-record-on-delete``, ``fields.<f>.ignore-retract``);
    and never with pypaimon's ``input`` changelog (:mod:`~paimon_index.table.pk.changelog` writes it)."""
    options = table_options(table)
    changes: dict[str, str] = {}
    if options.get(MERGE_ENGINE, "deduplicate") != "deduplicate":
        changes[MERGE_ENGINE] = "deduplicate"
    if str(options.get(CHANGELOG_PRODUCER, "none")).strip().lower() == "input":
        # pypaimon's writer would write 'input' changelog files itself (refused for this package's
        # writes, before they start); 'lookup' stays: _prepare reads it from this table.
        changes[CHANGELOG_PRODUCER] = "none"
    return table.copy(changes) if changes else table


def arrow_fields(table: Any) -> list[pa.Field]:
    writer = writable(table).new_batch_write_builder().new_write()
    try:
        return list(writer.table_pyarrow_schema)
    finally:
        writer.close()


def key_schema(table: Any, keys: list[str] | None = None) -> pa.Schema:
    """Arrow schema of ``keys`` (default: the whole primary key)."""
    fields = {f.name: f for f in arrow_fields(table)}
    return pa.schema([pa.field(k, fields[k].type) for k in (keys or table.primary_keys)])


# ------------------------------------------------------------------------------------------------
# the planned snapshot
# ------------------------------------------------------------------------------------------------
@dataclass
class Bucket:
    """The live files of one (partition, bucket) in the planned snapshot."""

    partition: Any  # GenericRow
    bucket: int
    files: list[Any] = field(default_factory=list)
    dv_entries: list[Any] = field(default_factory=list)


@dataclass
class Plan:
    snapshot_id: int | None
    buckets: dict[BucketKey, Bucket]
    index_dir: str
    bitmap64: bool
    #: The table's FileIO seam: every data and DV index file of the plan is read through it, and
    #: new DV index files are written there (on an executor too).
    io: TableIO

    def level0(self) -> list[Any]:
        return [m for b in self.buckets.values() for m in b.files if m.level == 0]


def plan_snapshot(table: Any, snapshot: Any | None, *, vectors: bool = True) -> Plan:
    """Every live data file (all levels) and, with ``vectors``, deletion-vector index entry of
    ``snapshot``, per bucket — listed by the project's one snapshot planner."""
    from paimon_index.table.plan import plan_snapshot as plan_buckets

    options = table_options(table)
    index_dir = str(table.path_factory().index_path())
    bitmap64 = parse_bool(options.get(DV_BITMAP64, "false"), DV_BITMAP64)
    plan = Plan(None if snapshot is None else int(snapshot.id), {}, index_dir, bitmap64, TableIO.of(table))
    if snapshot is None:
        return plan
    try:
        listed = plan_buckets(table, int(snapshot.id), for_write=True)
    except KeyError as e:  # expired between pinning and listing
        raise ConcurrentChangeError(f"snapshot {snapshot.id} was expired while planning on it; "
                                    "nothing was applied, run it again") from e
    for key, files in listed.buckets.items():
        plan.buckets[key] = Bucket(files.partition_row, files.bucket, list(files.files),
                                   list(files.dv_entries) if vectors else [])
    return plan


def merge_free(table: Any, plan: Plan) -> bool:
    """Whether a deletion-vectors table reads merge-free at ``plan``'s snapshot: its files of levels
    >= 1 minus their vectors. Level-0 files are not read, as Java and pypaimon do not read them:
    they are a write whose compaction has not committed (between the two snapshots of an upsert,
    :func:`~paimon_index.table.pk.commit.commit_in_two`; left by a crash or a plain pypaimon write),
    seen once a compaction or the next upsert folds them. False only when level-0 files exist and
    ``deletion-vectors.merge-on-read`` is on: they are merged in."""
    options = check_table(table)
    return not (plan.level0() and parse_bool(options.get(MERGE_ON_READ, "false"), MERGE_ON_READ))


def one_sorted_run(files: Sequence[Any]) -> bool:
    """Whether a merge-on-read bucket's ``files`` hold one version per key as they are: every file
    at one level above 0 and none with a ``-U``/``-D`` row (``deleteRowCount`` 0, or unknown, which
    Java takes as 0). One level above 0 is one sorted run; Java's ``MergeTreeSplitGenerator`` reads
    such a bucket raw too (after a full compaction, every bucket)."""
    levels = {int(m.level) for m in files}
    return 0 not in levels and len(levels) == 1 and not any(m.delete_row_count for m in files)


def raw_readable(table: Any, snapshot: Any) -> bool:
    """Whether a merge-on-read table (no deletion vectors) needs no merge at ``snapshot``: every
    bucket :func:`one_sorted_run`."""
    buckets = plan_snapshot(table, snapshot, vectors=False).buckets.values()
    return all(one_sorted_run(b.files) for b in buckets)


def check_merge_free(table: Any) -> bool:
    """:func:`merge_free` of the snapshot the table reads (the pinned one, else the latest)."""
    from paimon_index.table.paimon import read_snapshot

    return merge_free(table, plan_snapshot(table, read_snapshot(table), vectors=False))


def maintainer(plan: Plan, bucket: Bucket) -> BucketDvMaintainer:
    """The bucket's vectors, restricted to its live data files (a vector of a file the snapshot no
    longer holds is dropped, never committed again)."""
    return restore(bucket.dv_entries, bucket.partition, bucket.bucket, plan.index_dir, plan.io,
                   bitmap64=plan.bitmap64, live_files={m.file_name for m in bucket.files})


def live_current_rows(table: Any, meta: Any, dvs: BucketDvMaintainer | None, columns: list[str],
                      system: list[str], *, io: TableIO, schema: Any = None) -> pa.Table:
    """:func:`live_rows` of the ``system`` columns (``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) and of the
    current schema's ``columns``, the file's own columns mapped to them by field id (a file written
    before a rename holds the column under its old name; one written before ``ADD COLUMN`` lacks
    it: NULL; a widened column is cast)."""
    from paimon_index.table.schemas import read_schema

    mapping = (schema if schema is not None else read_schema(table)).mapping(int(meta.schema_id))
    file_columns = mapping.file_columns(columns) or []
    rows = live_rows(meta, dvs, [*system, *file_columns], io=io)
    current = mapping.evolve(rows.select(file_columns), columns, path=str(meta.file_path))
    for name in reversed(system):
        current = current.add_column(0, rows.schema.field(name), rows.column(name))
    return current


def live_rows(meta: Any, dvs: BucketDvMaintainer | None, columns: list[str] | None = None, *,
              io: TableIO) -> pa.Table:
    """A data file's rows not deleted by its vector (``dvs`` None: a table without vectors), with
    their positions (column ``POSITION``)."""
    with io.parquet(meta.file_path) as parquet:
        rows = parquet.read(columns=columns)
    rows = rows.append_column(POSITION, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    vector = None if dvs is None else dvs.deletion_vector_of(meta.file_name)
    if vector is not None:
        deleted = vector.positions()
        keep = np.ones(rows.num_rows, dtype=bool)
        keep[deleted[deleted < rows.num_rows]] = False
        rows = rows.filter(pa.array(keep))
    return rows
