"""Merge-on-read tables read through the one read plan: each key's older versions subtracted as
positions (``table/pk/versions.py``), so the indexes prune and select rows as on an append table.

References: pypaimon's own merge read (its row-by-row sort-merge reader, which we did not write),
a dict model of the rows, and Java Paimon's core (the oracle, skipped when absent)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.javaoracle import java_oracle

import paimon_index
from paimon_index.table.pk.versions import newest_live, superseded_positions

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64()), ("s", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
INDEXES = {"file-index.bitmap.columns": "s", "file-index.bloom-filter.columns": "v",
           "file-index.range-bitmap.columns": "v"}
KINDS = {"fixed": ([], {"bucket": "2"}), "partitioned": (["dt"], {"bucket": "2"}),
         "dynamic": ([], {"bucket": "-1"})}
STATUSES = ["HELD", "PAID", "NEW", None]

#: (WHERE, the same as a Python test of a model row (k, v, s, dt))
QUERIES: list[tuple[str | None, Any]] = [
    (None, lambda r: True),
    ("s = 'HELD'", lambda r: r[2] == "HELD"),
    ("s = 'PAID' OR k < 5", lambda r: r[2] == "PAID" or r[0] < 5),
    ("v > 300", lambda r: r[1] is not None and r[1] > 300),
    ("v = 7", lambda r: r[1] == 7),
    ("s IS NULL", lambda r: r[2] is None),
    ("k IN (1, 2, 3, 40)", lambda r: r[0] in (1, 2, 3, 40)),
]


def _create(tmp_path: Any, kind: str) -> paimon_index.Table:
    partitions, options = KINDS[kind]
    keys = ["k", "dt"] if partitions else ["k"]
    return paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, primary_keys=keys,
                                     partition_keys=partitions, options={**options, **INDEXES})


def _batch(keys: list[int], values: list[int | None], statuses: list[str | None]) -> pa.Table:
    return pa.table({"k": keys, "v": values, "s": statuses, "dt": ["a" if k % 2 else "b" for k in keys]},
                    schema=SCHEMA)


def _rows(rows: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in rows.select(SCHEMA.names).to_pylist()), key=repr)


def _pypaimon_merged(table: paimon_index.Table) -> list[tuple]:
    builder = table.paimon_table.new_read_builder()
    return _rows(builder.new_read().to_arrow(builder.new_scan().plan().splits()))


def test_newest_live_keeps_each_keys_newest_version_unless_it_retracts() -> None:
    keys = [pa.array([7, 9, 7, 13, 13, 9], pa.int64())]
    sequence = np.array([10, 11, 12, 14, 13, 15], dtype=np.int64)
    kinds = np.array([0, 0, 2, 3, 0, 1], dtype=np.int8)  # 13's newest is -D, 9's newest is -U
    live = newest_live(keys, sequence, kinds)
    assert live is not None and live.tolist() == [2]
    # Two key columns: equal only when both are.
    two = [pa.array(["a", "a", "b"]), pa.array([1, 1, 1], pa.int32())]
    live = newest_live(two, np.array([1, 2, 3], dtype=np.int64), np.zeros(3, dtype=np.int8))
    assert live is not None and live.tolist() == [1, 2]


def _model_newest_live(rows: list[tuple[int, int, int]], keep_deleting: bool = False) -> list[int] | None:
    """Row indices that are their key's live newest version, by key; None if a key's highest
    sequence number is held twice. ``rows``: (key, sequence, kind). ``keep_deleting``: a newest
    -U/-D counts too (``t$audit_log``)."""
    newest: dict[int, list[int]] = {}
    for i, (key, sequence, _) in enumerate(rows):
        held = newest.get(key)
        if held is None or sequence > rows[held[0]][1]:
            newest[key] = [i]
        elif sequence == rows[held[0]][1]:
            held.append(i)
    if any(len(held) > 1 for held in newest.values()):
        return None
    return [newest[key][0] for key in sorted(newest)
            if keep_deleting or rows[newest[key][0]][2] not in (1, 3)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(-3, 12), st.integers(0, 40), st.integers(0, 3)),
                         max_size=12), max_size=5), st.booleans())
def test_newest_live_against_a_model_for_every_key_shape(files: list[list[tuple[int, int, int]]],
                                                         keep_deleting: bool) -> None:
    """Files one after another, each sorted by key with one row per key (what Paimon writes) or not
    (the function may not rely on it): every key shape -- one integer column (numpy's run merge),
    the same keys as strings and as two columns (Arrow's sort) -- gives the model's rows."""
    rows = [row for file in files for row in sorted(dict((k, (k, q, v)) for k, q, v in file).values())]
    rows += [row for file in files[:1] for row in file]  # and an unsorted file with repeated keys
    expected = _model_newest_live(rows, keep_deleting)
    sequence = np.array([q for _, q, _ in rows], dtype=np.int64)
    kinds = np.array([v for _, _, v in rows], dtype=np.int8)
    keys = [k for k, _, _ in rows]
    for shape in ([pa.array(keys, pa.int64())], [pa.chunked_array([pa.array(keys, pa.int8())])],
                  [pa.array([f"{k + 3:02d}" for k in keys])],
                  [pa.array([k % 2 for k in keys], pa.int32()), pa.array(keys, pa.int16())]):
        live = newest_live(shape, sequence, kinds, keep_deleting=keep_deleting)
        if expected is None:
            assert live is None
            continue
        assert live is not None
        # The key order of the two-column shape is (k % 2, k): compare as sets, and order for one column.
        assert sorted(live.tolist()) == sorted(expected)
        if len(shape) == 1:
            assert live.tolist() == expected


@pytest.mark.parametrize(("keys", "sequence"), [
    ([pa.array([1, None, 1], pa.int64())], [1, 2, 3]),    # NULL key: the comparator's equality
    ([pa.array([0.0, -0.0, 1.0])], [1, 2, 3]),             # float key: -0.0, NaN are not Arrow's
    ([pa.array([5, 5, 6], pa.int64())], [4, 4, 1]),        # two versions, one sequence number
])
def test_newest_live_leaves_what_arrow_cannot_order_to_the_merge_reader(keys: list[pa.Array],
                                                                         sequence: list[int]) -> None:
    assert newest_live(keys, np.array(sequence, dtype=np.int64), np.zeros(3, dtype=np.int8)) is None


def test_a_newer_version_in_a_file_the_index_skips_still_hides_the_older_one(tmp_path) -> None:
    """Key 1 was HELD, then PAID: the newer file holds no HELD row, so its bitmap skips it for
    ``s = 'HELD'`` -- yet it is what makes the older HELD row stale. The versions are told over
    every file of the bucket, before any index is asked."""
    table = _create(tmp_path, "fixed")
    table.write(_batch([1, 2, 3], [10, 20, 30], ["HELD", "HELD", "NEW"]))
    table.write(_batch([1], [11], ["PAID"]))
    assert _rows(table.read("s = 'HELD'")) == [(2, 20, "HELD", "b")]
    report = table.last_scan_report
    assert report.files_skipped_by_index >= 1  # the newer file: no HELD row in it
    assert report.rows_removed_by_deletion_vectors >= 1  # the older HELD version of key 1
    assert table.count("s = 'HELD'") == 1 and table.count() == 3
    assert table.min_max("v", "s = 'HELD'") == (20, 20)
    assert _rows(table.read()) == _pypaimon_merged(table)


def test_superseded_positions_are_cached_per_file_set_and_change_with_a_commit(tmp_path) -> None:
    table = _create(tmp_path, "fixed")
    table.write(_batch(list(range(10)), list(range(10)), ["NEW"] * 10))
    table.write(_batch([2, 4], [20, 40], ["PAID"] * 2))
    from paimon_index.table.paimon import read_snapshot

    first = superseded_positions(table.paimon_table, read_snapshot(table.paimon_table))
    assert first is not None and sum(len(p) for p in first.values()) == 2
    table.write(_batch([2, 6], [21, 60], ["HELD"] * 2))
    second = superseded_positions(table.paimon_table, read_snapshot(table.paimon_table))
    assert second is not None and sum(len(p) for p in second.values()) == 4  # 2 (twice), 4 and 6
    assert _rows(table.read("s = 'HELD'")) == [(2, 21, "HELD", "b"), (6, 60, "HELD", "b")]


def test_another_merge_engine_is_merged_by_key_as_before(tmp_path) -> None:
    """``partial-update`` (and ``sequence.field``, ``ignore-delete``) merge values, not versions:
    not subtracted, read by the merge."""
    table = paimon_index.create_table(str(tmp_path), "db.p", SCHEMA, primary_keys=["k"],
                                      options={"bucket": "1", "merge-engine": "partial-update", **INDEXES})
    table.write(_batch([1, 2], [10, 20], ["HELD", "NEW"]))
    table.write(_batch([1], [None], ["PAID"]))
    from paimon_index.table.paimon import read_snapshot

    assert superseded_positions(table.paimon_table, read_snapshot(table.paimon_table)) is None
    assert _rows(table.read("v = 10")) == [(1, 10, "PAID", "a")]  # the old v, the new s
    assert _rows(table.read()) == _pypaimon_merged(table)


_step = st.tuples(st.lists(st.integers(0, 40), min_size=1, max_size=25, unique=True),
                  st.sampled_from(["+I", "+U", "-U", "-D", "mixed"]), st.integers(0, 2**31 - 1))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(list(KINDS)), steps=st.lists(_step, min_size=1, max_size=6),
       compact_at=st.integers(-1, 5))
def test_planned_reads_of_random_changes_equal_pypaimons_merge_and_the_model(
        tmp_path_factory, kind: str, steps: list, compact_at: int) -> None:
    """Random upserts with every row kind (each a level-0 file per bucket), sometimes a full
    compaction between them: every query's rows, count and min/max through the plan equal the
    model's and pypaimon's merge read filtered by the same query."""
    table = _create(tmp_path_factory.mktemp("versions"), kind)
    model: dict[tuple, tuple] = {}
    for i, (keys, kinds, seed) in enumerate(steps):
        rng = np.random.default_rng(seed)
        values = [None if rng.random() < 0.1 else int(rng.integers(0, 500)) for _ in keys]
        statuses = [STATUSES[int(rng.integers(0, len(STATUSES)))] for _ in keys]
        batch = _batch(keys, values, statuses)
        row_kinds = [str(rng.choice(["+I", "+U", "-U", "-D"])) if kinds == "mixed" else kinds for _ in keys]
        table.upsert(batch.append_column("_ROW_KIND", pa.array(row_kinds)))
        for r, row_kind in zip(batch.to_pylist(), row_kinds, strict=True):
            key = (r["k"], r["dt"])
            if row_kind in ("-U", "-D"):
                model.pop(key, None)
            else:
                model[key] = (r["k"], r["v"], r["s"], r["dt"])
        if i == compact_at:
            table.compact(full=True)
    merged = table.paimon_table.new_read_builder()
    theirs = merged.new_read().to_arrow(merged.new_scan().plan().splits()).select(SCHEMA.names)
    for where, test in QUERIES:
        expected = sorted((r for r in model.values() if test(r)), key=repr)
        assert _rows(table.read(where)) == expected, where
        assert [r for r in _rows(theirs) if test(r)] == expected, where
        assert table.count(where) == len(expected), where
        values = [r[1] for r in expected if r[1] is not None]
        assert table.min_max("v", where) == ((min(values), max(values)) if values else (None, None)), where


def _positions_now(table: paimon_index.Table, keep_deleting: bool = False) -> dict[str, list[int]] | None:
    from paimon_index.table.paimon import read_snapshot

    found = superseded_positions(table.paimon_table, read_snapshot(table.paimon_table),
                                 keep_deleting=keep_deleting)
    return None if found is None else {name: p.tolist() for name, p in found.items()}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(list(KINDS)), steps=st.lists(_step, min_size=2, max_size=6),
       compact_at=st.integers(-1, 5))
def test_positions_updated_from_the_cached_ones_equal_positions_told_whole(
        tmp_path_factory, kind: str, steps: list, compact_at: int) -> None:
    """After each commit, a bucket that only gained files starts from the positions cached for the
    snapshot before (read after every step); they equal the positions told over every file with
    nothing cached, and the plan's rows equal the model's. The same for the positions that keep a
    key's newest -U/-D (``t$audit_log``), cached apart."""
    from paimon_index.table.metacache import metadata_cache

    assert metadata_cache().enabled
    table = _create(tmp_path_factory.mktemp("incremental"), kind)
    model: dict[tuple, tuple] = {}
    for i, (keys, kinds, seed) in enumerate(steps):
        rng = np.random.default_rng(seed)
        batch = _batch(keys, [int(rng.integers(0, 500)) for _ in keys],
                       [STATUSES[int(rng.integers(0, len(STATUSES)))] for _ in keys])
        row_kinds = [str(rng.choice(["+I", "+U", "-U", "-D"])) if kinds == "mixed" else kinds
                     for _ in keys]
        table.upsert(batch.append_column("_ROW_KIND", pa.array(row_kinds)))
        for r, row_kind in zip(batch.to_pylist(), row_kinds, strict=True):
            if row_kind in ("-U", "-D"):
                model.pop((r["k"], r["dt"]), None)
            else:
                model[(r["k"], r["dt"])] = (r["k"], r["v"], r["s"], r["dt"])
        if i == compact_at:
            table.compact(full=True)
        from_cache = [_positions_now(table, keep) for keep in (False, True)]
        metadata_cache().clear()
        assert from_cache == [_positions_now(table, keep) for keep in (False, True)]
        assert _rows(table.read()) == sorted(model.values(), key=repr)


def test_a_commit_that_only_added_files_updates_the_cached_positions(tmp_path) -> None:
    """Key 2 written three times, key 4 deleted: the second and third snapshots' positions come
    from the cached ones (no bucket told whole), equal to the whole telling."""
    from unittest import mock

    from paimon_index.table.metacache import metadata_cache
    from paimon_index.table.pk import versions

    table = _create(tmp_path, "fixed")
    table.write(_batch(list(range(10)), list(range(10)), ["NEW"] * 10))
    table.write(_batch([2, 4], [20, 40], ["PAID"] * 2))
    assert _positions_now(table) is not None
    with mock.patch.object(versions, "_bucket_superseded", wraps=versions._bucket_superseded) as whole:
        table.write(_batch([2, 6], [21, 60], ["HELD"] * 2))
        table.delete("k = 4")
        updated = _positions_now(table)
        assert whole.call_count == 0
    metadata_cache().clear()
    assert updated == _positions_now(table)
    assert sum(len(p) for p in updated.values()) == 6  # 2 (twice), 4 (twice: its -D too), 6
    assert _rows(table.read("k IN (2, 4, 6)")) == [(2, 21, "HELD", "b"), (6, 60, "HELD", "b")]


def test_java_paimon_reads_the_same_rows_with_a_filter(tmp_path) -> None:
    """Java Paimon's core merges the level-0 files itself (its MergeTreeReaders): the same rows."""
    oracle = java_oracle()
    table = _create(tmp_path, "partitioned")
    keys = list(range(30))
    table.write(_batch(keys, [k * 10 for k in keys], ["HELD" if k % 3 else "NEW" for k in keys]))
    table.upsert(_batch([1, 2, 4, 5], [11, 21, 41, 51], ["PAID", "HELD", "PAID", "NEW"]))
    retracted = _batch([7, 8], [71, 81], ["HELD", "HELD"])
    table.upsert(retracted.append_column("_ROW_KIND", pa.array(["-D", "+U"])))
    ours = table.read("s = 'HELD'")
    assert pc.sum(pc.equal(ours["s"], "HELD")).as_py() == ours.num_rows
    java = oracle.batch([{"cmd": "read", "warehouse": str(tmp_path), "table": "db.t", "rows": "true"}])[0]
    java_held = sorted((tuple(r) for r in java["row_values"] if r[2] == "HELD"), key=repr)
    assert [tuple(json.loads(json.dumps(list(r)))) for r in _rows(ours)] == java_held


def test_a_renamed_key_column_is_read_under_each_files_own_name(tmp_path) -> None:
    """Paimon renames a primary-key column in place (``SchemaManager``: a rename asserts only the
    partition keys): files written before hold ``_KEY_k``, files after ``_KEY_kk``; the versions of
    one key across both are still told apart (by field id), as pypaimon's merge and Java read them."""
    from pypaimon import CatalogFactory
    from pypaimon.schema.schema_change import SchemaChange

    table = _create(tmp_path, "fixed")
    table.write(_batch([1, 2, 3], [10, 20, 30], ["HELD", "HELD", "NEW"]))
    catalog = CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.alter_table("db.t", [SchemaChange.rename_column("k", "kk")])
    renamed = paimon_index.open_table(str(tmp_path), "db.t")
    schema = pa.schema([pa.field("kk", pa.int32(), nullable=False), ("v", pa.int64()), ("s", pa.string()),
                        pa.field("dt", pa.string(), nullable=False)])
    renamed.write(pa.table({"kk": [1, 4], "v": [11, 40], "s": ["PAID", "HELD"], "dt": ["a", "b"]},
                           schema=schema))
    names = ["kk", "v", "s", "dt"]
    assert sorted(tuple(r.values()) for r in renamed.read("s = 'HELD'").select(names).to_pylist()) == \
        [(2, 20, "HELD", "b"), (4, 40, "HELD", "b")]
    builder = renamed.paimon_table.new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits()).select(names)
    assert sorted(tuple(r.values()) for r in renamed.read().select(names).to_pylist()) == \
        sorted(tuple(r.values()) for r in theirs.to_pylist())
    assert renamed.count() == 4
