"""The changelog of a primary-key table: ``changelog-producer`` = ``lookup`` and ``input``, as Paimon
defines them.

    producer(table, options, input_ok=False) -> 'none' | 'lookup' | 'input'   refuses 'full-compaction'
    bucket_changelog(table, bucket, dvs, new_files, deleted, ...) -> change rows | None   (lookup)
    input_changelog(table, rows, first_sequence) -> change rows                           (input)
    write_changelog(table, partition, bucket, rows, level) -> DataFileMeta

What Java does (``LookupChangelogMergeFunctionWrapper``): when a key's merge holds level-0 records
(new writes), its *before* is the key's live record in levels >= 1 (found by lookup) and its
*after* the merge result:

==================  ==================  =============================================
before (old row)    after (new result)  change rows
==================  ==================  =============================================
none                a row               ``+I after``
a row               a row               ``-U before``, ``+U after`` (none when
                                        ``changelog-producer.row-deduplicate`` is true
                                        and the values are equal, ignoring
                                        ``changelog-producer.row-deduplicate-ignore-fields``)
a row               deleted             ``-D before``
none                deleted             nothing
==================  ==================  =============================================

Each change row keeps the sequence number of the record it copies (``-U``/``-D``: the old row's,
``+I``/``+U``: the new row's). A compaction that reads no level-0 record (here: every compaction,
whose input is levels >= 1 only) produces no changelog; the level-0 files of plain pypaimon writes
are folded into an upsert as new records, exactly as Java's lookup compaction merges them: their
keys' *before* is still the row in levels >= 1.

Here the upsert's lookup (:mod:`~paimon_index.table.pk.upsert`, ``_prepare``) is that lookup: per
bucket, before it marks the old rows in deletion vectors, the old rows of the bucket's new keys
and deleted keys are read (values and ``_SEQUENCE_NUMBER``), joined with the rows of the bucket's
new data files (the merged results, as written), and the change rows written as one changelog file
of the bucket, listed in the same snapshot's changelog manifest list (pypaimon's ``CommitMessage
.changelog_files``; the snapshot's ``changelogRecordCount`` counts them): the upsert's ``COMPACT``
snapshot right after its ``APPEND`` one, as Java commits them (one ``APPEND`` snapshot when the
upsert only adds new keys; one snapshot for a merge engine's).

A changelog file is a Parquet (``changelog-file.format``) data file in the bucket directory, named
``changelog-<uuid>-0.parquet`` (``changelog-file.prefix``), in Paimon's key-value layout::

    _KEY_<k> ... (trimmed primary key)  _SEQUENCE_NUMBER int64  _VALUE_KIND int8  <value columns>

``_VALUE_KIND`` is the RowKind byte: 0 ``+I``, 1 ``-U``, 2 ``+U``, 3 ``-D``; rows are sorted by key,
``-U`` before ``+U``. Readers: Java's incremental read with ``incremental-between-scan-mode`` =
``changelog``, streaming reads, ``$audit_log``.

An overwrite writes no changelog: Java's overwrite commits none either
(``FileStoreCommitImpl.overwritePartition`` logs "Overwrite mode currently does not commit any
changelog" and drops the files).

``input`` (:func:`input_changelog`): the input records themselves, unmerged, each with its own row
kind and sequence number, as Java's ``MergeTreeWriter`` hands its write buffer's records to the
changelog writer before the merge; the records Java's writer gets at all (:func:`written_records`:
``ignore-delete`` / ``ignore-update-before``). Written by ``upsert_arrow`` (``Table.upsert``,
``delete``, ``update``) on fixed-bucket tables; every other write path refuses it.
``full-compaction`` (change rows between full compactions) is refused on every write by key, and
``lookup`` too on merge-on-read writes (:func:`check_merge_on_read`: they run no lookup), before
any file is written: :class:`~paimon_index.errors.UnsupportedChangelogProducerError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.deletionvectors.maintainer import BucketDvMaintainer
from paimon_index.errors import InvalidOptionError
from paimon_index.fileindex.options import parse_bool
from paimon_index.table.fileio import TableIO
from paimon_index.table.paimon import table_name, table_options, write_changelog_file
from paimon_index.table.pk.lookup import FILE, lookup_rows
from paimon_index.table.pk.plan import (
    CHANGELOG_PRODUCER,
    KEY_PREFIX,
    POSITION,
    SEQUENCE_COLUMN,
    VALUE_KIND_COLUMN,
    Bucket,
    arrow_fields,
    changelog_producer,
    trimmed_keys,
    user_columns,
)
from paimon_index.table.write import conform

__all__ = ["CHANGELOG_PRODUCER", "ROW_DEDUPLICATE", "ROW_DEDUPLICATE_IGNORE_FIELDS", "bucket_changelog",
           "check_merge_on_read", "input_changelog", "kv_schema", "producer", "write_changelog",
           "written_records"]

ROW_DEDUPLICATE = "changelog-producer.row-deduplicate"
ROW_DEDUPLICATE_IGNORE_FIELDS = "changelog-producer.row-deduplicate-ignore-fields"
LOOKUP = "lookup"
INPUT = "input"

#: RowKind bytes (``_VALUE_KIND``).
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
_ORDER = "__paimon_index_changelog_order__"
_INDEX = "__paimon_index_changelog_index__"


def producer(table: Any, options: Mapping[str, str] | None = None, *, input_ok: bool = False) -> str:
    """The table's changelog producer for a write by key: ``none``, ``lookup``, or ``input`` when
    ``input_ok`` (:func:`~paimon_index.table.pk.plan.changelog_producer`, which ``check_table`` asks).

    Raises:
        UnsupportedChangelogProducerError: ``full-compaction``, or ``input`` without ``input_ok``
            (nothing written yet).
        InvalidOptionError: an unknown producer.
    """
    return changelog_producer(table, options, input_ok=input_ok)


def check_merge_on_read(table: Any, options: Mapping[str, str] | None = None) -> None:
    """A write by key to a merge-on-read table (no deletion vectors) writes level-0 records and runs
    no lookup and no compaction: ``lookup`` and ``full-compaction`` would commit no changelog at
    all, so they are refused before anything is written. (``input``: pypaimon's writer writes the
    records of its data files as the changelog.)

    Raises:
        UnsupportedChangelogProducerError: ``lookup`` or ``full-compaction``.
    """
    from paimon_index.errors import UnsupportedChangelogProducerError

    options = table_options(table) if options is None else options
    value = str(options.get(CHANGELOG_PRODUCER, "none")).strip().lower()
    if value in (LOOKUP, "full-compaction"):
        raise UnsupportedChangelogProducerError(
            f"'{CHANGELOG_PRODUCER}' = '{value}' on {table_name(table)} without deletion vectors: a "
            "merge-on-read write commits level-0 records and runs no lookup or compaction, so no changelog "
            "would be written; set 'deletion-vectors.enabled' = 'true' (the lookup changelog is written "
            f"there), use '{CHANGELOG_PRODUCER}' = 'input' or 'none', or write with Paimon's own connector")


def written_records(options: Mapping[str, str], rows: pa.Table) -> pa.Table:
    """The records Java's writer gets at all: ``TableWriteImpl``'s ``RowKindFilter`` drops ``-U``
    and ``-D`` under ``ignore-delete`` (and its fallback keys) and ``-U`` under
    ``ignore-update-before`` before the write buffer, so before the input changelog."""
    from paimon_index.table.pk.merge import IGNORE_DELETE, IGNORE_DELETE_FALLBACKS, IGNORE_UPDATE_BEFORE
    from paimon_index.table.pk.plan import ROW_KIND_COLUMN

    def flag(*keys: str) -> bool:
        key = next((k for k in keys if k in options), None)
        return key is not None and parse_bool(str(options[key]), key)

    dropped = ("-U", "-D") if flag(IGNORE_DELETE, *IGNORE_DELETE_FALLBACKS) else \
        ("-U",) if flag(IGNORE_UPDATE_BEFORE) else ()
    if not dropped or rows.num_rows == 0:
        return rows
    return rows.filter(pc.invert(pc.is_in(rows[ROW_KIND_COLUMN], pa.array(dropped, pa.string()))))


def input_changelog(table: Any, rows: pa.Table, first_sequence: int) -> pa.Table:
    """One bucket's ``input`` changelog: every input record of the write (the table's columns and
    ``_ROW_KIND``, in input order), unmerged, in the key-value layout — as Java's
    ``MergeTreeWriter`` hands each record of its write buffer to the changelog writer before the
    merge (``SortBufferWriteBuffer.forEach``'s raw consumer): its own row kind, its own sequence
    number (the bucket's next ones, ``first_sequence`` on, in input order), sorted by key then
    sequence."""
    from paimon_index.table.pk.plan import ROW_KIND_COLUMN, kind_bytes

    target = kv_schema(table)
    columns: dict[str, Any] = {KEY_PREFIX + k: rows[k] for k in trimmed_keys(table)}
    columns[SEQUENCE_COLUMN] = pa.array(np.arange(first_sequence, first_sequence + rows.num_rows,
                                                  dtype=np.int64))
    # Row kinds were checked on the way in (with_row_kinds): each is one of Paimon's four.
    columns[VALUE_KIND_COLUMN] = kind_bytes(rows[ROW_KIND_COLUMN])
    for name in user_columns(table):
        columns[name] = rows[name]
    out = conform(pa.table(columns), target)
    order = [*((KEY_PREFIX + k, "ascending") for k in trimmed_keys(table)), (SEQUENCE_COLUMN, "ascending")]
    return out.sort_by(order)


def kv_schema(table: Any) -> pa.Schema:
    """The key-value layout of the table's data and changelog files."""
    fields = {f.name: f for f in arrow_fields(table)}
    keys = [pa.field(KEY_PREFIX + k, fields[k].type, nullable=False) for k in trimmed_keys(table)]
    return pa.schema([*keys, pa.field(SEQUENCE_COLUMN, pa.int64(), nullable=False),
                      pa.field(VALUE_KIND_COLUMN, pa.int8(), nullable=False), *fields.values()])


def _dedup_columns(table: Any, options: Mapping[str, str]) -> list[str] | None:
    """The value columns compared by ``row-deduplicate`` (None: off)."""
    if not parse_bool(str(options.get(ROW_DEDUPLICATE, "false")), ROW_DEDUPLICATE):
        return None
    ignored = {c.strip() for c in str(options.get(ROW_DEDUPLICATE_IGNORE_FIELDS, "")).split(",") if c.strip()}
    columns = user_columns(table)
    unknown = ignored - set(columns)
    if unknown:
        raise InvalidOptionError(f"'{ROW_DEDUPLICATE_IGNORE_FIELDS}' names no column {sorted(unknown)} of "
                                 f"{table_name(table)}")
    return [c for c in columns if c not in ignored]


def _equal_rows(before: pa.Table, after: pa.Table, columns: list[str]) -> np.ndarray:
    """Per row pair: whether the values of ``columns`` are equal (NULL equals NULL)."""
    same = np.ones(before.num_rows, dtype=bool)
    for name in columns:
        a, b = before[name], after[name]
        try:
            eq = pc.fill_null(pc.equal(a, b), False)
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            same &= pc.or_(eq, both_null).to_numpy(zero_copy_only=False)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # nested types: compare as Python values
            same &= np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)], dtype=bool)
    return same


def _as_kv(table: Any, rows: pa.Table, kind: int, target: pa.Schema) -> pa.Table:
    """Old rows (``_SEQUENCE_NUMBER`` + the table's columns) in the key-value layout, of ``kind``."""
    columns = {KEY_PREFIX + k: rows[k] for k in trimmed_keys(table)}
    columns[SEQUENCE_COLUMN] = rows[SEQUENCE_COLUMN]
    columns[VALUE_KIND_COLUMN] = pa.array(np.full(rows.num_rows, kind, dtype=np.int8))
    for name in user_columns(table):
        columns[name] = rows[name]
    return conform(pa.table(columns), target)


def _new_rows(new_files: Sequence[Any], target: pa.Schema, io: TableIO) -> pa.Table:
    parts = []
    for meta in new_files:
        with io.parquet(meta.file_path) as parquet:
            parts.append(conform(parquet.read(columns=target.names), target))
    return pa.concat_tables(parts) if parts else target.empty_table()


def bucket_changelog(table: Any, bucket: Bucket, dvs: BucketDvMaintainer, new_files: Sequence[Any],
                     deleted: pa.Table | None, *, io: TableIO, schema: Mapping[str, Any] | None = None,
                     skip: set[str] | frozenset[str] = frozenset(),
                     options: Mapping[str, str] | None = None
                     ) -> tuple[pa.Table | None, dict[str, np.ndarray]]:
    """The change rows of one bucket's upsert (key-value layout, sorted by key; None when none)
    and where the old rows are (data file name -> sorted row positions): every live row of the
    keys written or deleted, exactly the rows :func:`~paimon_index.table.pk.lookup.mark_keys`
    would mark (same files, same pruning), found by this one read.

    ``new_files``: the bucket's new data files (the merged results of the keys written, as
    written); ``deleted``: the trimmed keys deleted in the bucket's partition (looked up here too);
    ``dvs``: the bucket's vectors *before* this upsert marks anything (the old rows must still be
    live); ``skip``: files whose rows are not old (the new files, folded level-0 files)."""
    options = table_options(table) if options is None else options
    keys = trimmed_keys(table)
    target = kv_schema(table)
    key_columns = [KEY_PREFIX + k for k in keys]
    new = _new_rows(new_files, target, io)
    key_types = pa.schema([target.field(c) for c in key_columns])
    probe_parts = [new.select(key_columns)]
    if deleted is not None and deleted.num_rows:
        probe_parts.append(conform(deleted.select(keys).rename_columns(key_columns), key_types))
    probe = pa.concat_tables([conform(p, key_types) for p in probe_parts]).rename_columns(keys)
    old = lookup_rows(table, bucket, dvs, probe, schema, io=io, system=[SEQUENCE_COLUMN], skip=skip,
                      positions=True) if probe.num_rows else pa.table({})
    found: dict[str, np.ndarray] = {}
    if old.num_rows:
        for name in pc.unique(old[FILE]).to_pylist():
            mask = pc.equal(old[FILE], name)
            found[name] = np.sort(old[POSITION].filter(mask).to_numpy())
    if old.num_rows:
        old = old.append_column(_INDEX, pa.array(np.arange(old.num_rows, dtype=np.int64)))
        old_keys = conform(old.select(keys).rename_columns(key_columns), key_types) \
            .append_column(_INDEX, old[_INDEX])
    else:
        old_keys = key_types.append(pa.field(_INDEX, pa.int64())).empty_table()
    new = new.append_column(_ORDER, pa.array(np.arange(new.num_rows, dtype=np.int64)))
    pairs = new.select([*key_columns, _ORDER]).join(old_keys, keys=key_columns, join_type="left outer")
    pairs = pairs.sort_by([(_ORDER, "ascending")])
    matched = pc.is_valid(pairs[_INDEX]).to_numpy(zero_copy_only=False)
    new_order = pairs[_ORDER].to_numpy()
    parts: list[pa.Table] = []
    plain = new.drop_columns([_ORDER])
    inserted = plain.take(pa.array(new_order[~matched]))
    if inserted.num_rows:
        parts.append(inserted.set_column(inserted.schema.get_field_index(VALUE_KIND_COLUMN), target.field(
            VALUE_KIND_COLUMN), pa.array(np.full(inserted.num_rows, INSERT, dtype=np.int8))))
    if matched.any():
        after = plain.take(pa.array(new_order[matched]))
        before = old.take(pa.array(pairs[_INDEX].to_numpy(zero_copy_only=False)[matched].astype(np.int64)))
        compared = _dedup_columns(table, options)
        if compared is not None:
            changed = ~_equal_rows(conform(before.select(user_columns(table)), pa.schema(
                [target.field(c) for c in user_columns(table)])), after, compared)
            after, before = after.filter(pa.array(changed)), before.filter(pa.array(changed))
        if after.num_rows:
            parts.append(_as_kv(table, before, UPDATE_BEFORE, target))
            parts.append(after.set_column(after.schema.get_field_index(VALUE_KIND_COLUMN), target.field(
                VALUE_KIND_COLUMN), pa.array(np.full(after.num_rows, UPDATE_AFTER, dtype=np.int8))))
    if deleted is not None and deleted.num_rows and old.num_rows:
        gone_keys = conform(deleted.select(keys).rename_columns(key_columns), key_types)
        gone = old_keys.join(gone_keys, keys=key_columns, join_type="left semi")
        if gone.num_rows:
            parts.append(_as_kv(table, old.take(gone[_INDEX]), DELETE, target))
    if not parts:
        return None, found
    rows = pa.concat_tables(parts)
    # Java's order: by key, the before row first (-U, then +U).
    kind_order = pc.if_else(pc.equal(rows[VALUE_KIND_COLUMN], UPDATE_AFTER), 1, 0)
    rows = rows.append_column(_ORDER, kind_order)
    rows = rows.sort_by([*((c, "ascending") for c in key_columns), (_ORDER, "ascending")])
    return rows.drop_columns([_ORDER]), found


def write_changelog(table: Any, partition: Sequence[Any], bucket: int, rows: pa.Table, level: int) -> Any:
    """One bucket's change rows as a changelog file (:func:`~paimon_index.table.paimon
    .write_changelog_file`); its ``DataFileMeta``."""
    return write_changelog_file(table, partition, bucket, rows, level)
