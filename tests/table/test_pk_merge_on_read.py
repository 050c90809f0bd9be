"""Primary-key tables without deletion vectors (merge-on-read): DELETE / UPDATE / upsert with row
kinds write level-0 key-value rows (``-D``, ``+U``) in one APPEND snapshot, as Paimon's connector
does; every reader (ours, pypaimon's, Java Paimon's) merges them to the same rows."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest
from tests.javaoracle import java_oracle

import paimon_index
from paimon_index.errors import ConcurrentChangeError, UnsupportedTableError
from paimon_index.table.paimon import latest_snapshot

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64()), ("s", pa.string()),
                    ("dt", pa.string())])

CONFIGS = {
    "fixed": {"partition_keys": [], "options": {"bucket": "2"}},
    "partitioned": {"partition_keys": ["dt"], "options": {"bucket": "2"}},
    "dynamic": {"partition_keys": [], "options": {"bucket": "-1"}},
}


def _rows(ks: range, offset: int = 0) -> pa.Table:
    return pa.table({"k": list(ks), "v": [k * 10 + offset for k in ks], "s": [f"s{k % 4}" for k in ks],
                     "dt": ["a" if k % 2 else "b" for k in ks]}, schema=SCHEMA)


def _create(tmp_path, config: str) -> paimon_index.Table:
    spec = CONFIGS[config]
    keys = ["k", "dt"] if spec["partition_keys"] else ["k"]
    return paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, primary_keys=keys,
                                     partition_keys=spec["partition_keys"], options=spec["options"])


def _contents(table: paimon_index.Table) -> list[tuple]:
    rows = table.read()
    return sorted(tuple(r.values()) for r in rows.to_pylist())


def _pypaimon(table: paimon_index.Table) -> list[tuple]:
    builder = table.paimon_table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(tuple(r.values()) for r in rows.select(SCHEMA.names).to_pylist())


class Model:
    """The table as a dict key -> row."""

    def __init__(self) -> None:
        self.rows: dict[tuple, tuple] = {}

    def upsert(self, rows: pa.Table) -> None:
        for r in rows.to_pylist():
            self.rows[(r["k"], r["dt"])] = (r["k"], r["v"], r["s"], r["dt"])

    def contents(self) -> list[tuple]:
        return sorted(self.rows.values())


@pytest.mark.parametrize("config", list(CONFIGS))
def test_delete_update_upsert_equal_a_model(tmp_path, config: str) -> None:
    table = _create(tmp_path, config)
    model = Model()
    for batch in (_rows(range(0, 30)), _rows(range(20, 45), offset=1)):
        table.write(batch)
        model.upsert(batch)
    assert _contents(table) == model.contents()

    before = table.snapshot_id
    result = table.delete("v % 3 = 0 AND k < 40")
    doomed = [key for key, row in model.rows.items() if row[1] % 3 == 0 and row[0] < 40]
    assert result.rows_affected == len(doomed) > 0
    for key in doomed:
        del model.rows[key]
    assert table.snapshot_id == before + 1  # one snapshot
    snapshot = latest_snapshot(table.paimon_table)
    assert snapshot.commit_kind == "APPEND"
    assert _contents(table) == model.contents() == _pypaimon(table)

    result = table.update({"s": "'up'", "v": "v + 1000"}, where="s = 's1' OR k > 42")
    changed = [key for key, row in model.rows.items() if row[2] == "s1" or row[0] > 42]
    assert result.rows_affected == len(changed) > 0
    for key in changed:
        k, v, _, dt = model.rows[key]
        model.rows[key] = (k, v + 1000, "up", dt)
    assert _contents(table) == model.contents() == _pypaimon(table)

    # An upsert with row kinds: -D deletes its key, +U/+I replace it.
    kinds = _rows(range(0, 6), offset=7).append_column(
        "_ROW_KIND", pa.array(["-D", "+U", "+I", "-D", "+I", "-U"]))
    table.upsert(kinds)
    for r in kinds.to_pylist():
        key = (r["k"], r["dt"])
        if r["_ROW_KIND"] in ("-D", "-U"):
            model.rows.pop(key, None)
        else:
            model.rows[key] = (r["k"], r["v"], r["s"], r["dt"])
    assert _contents(table) == model.contents() == _pypaimon(table)
    assert table.count() == len(model.rows)
    assert table.count("v > 100") == sum(1 for r in model.rows.values() if r[1] > 100)

    # Java Paimon's core reads the same rows from our files.
    oracle = java_oracle()
    out = oracle.batch([{"cmd": "read", "warehouse": str(tmp_path), "table": "db.t", "rows": "true"}])[0]
    java_rows = sorted(tuple(r) for r in out["row_values"])
    assert [tuple(json.loads(json.dumps(list(r)))) for r in model.contents()] == java_rows


def test_an_update_is_exact_on_the_snapshot_it_read(tmp_path) -> None:
    """A change landing between the read and the commit refuses the UPDATE (no stale row wins)."""
    table = _create(tmp_path, "fixed")
    table.write(_rows(range(10)))
    from paimon_index.table.pk.merge_on_read import write_changes

    planned = table.snapshot_id
    table.write(_rows(range(3), offset=5))
    with pytest.raises(ConcurrentChangeError):
        write_changes(table.paimon_table, _rows(range(3)), planned=planned, kind="+U")
    assert table.snapshot_id == planned + 1


def test_a_refused_change_leaves_no_file_and_no_changelog_file(tmp_path) -> None:
    """The change's files are written before its commit is tried (a Spark task writes them; the
    driver commits): refused at commit, it deletes them all, the changelog files ``changelog-producer
    = input`` makes pypaimon's writer write too."""
    table = paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, primary_keys=["k"],
                                      options={"bucket": "2", "changelog-producer": "input"})
    table.write(_rows(range(10)))
    from paimon_index.table.pk.merge_on_read import write_changes

    planned = table.snapshot_id
    table.write(_rows(range(3), offset=5))
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert any(p.name.startswith("changelog-") for p in files)  # the producer writes them
    with pytest.raises(ConcurrentChangeError):
        write_changes(table.paimon_table, _rows(range(3)), planned=planned, kind="+U")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()) == files


def test_delete_on_a_partial_update_table_without_vectors_is_refused(tmp_path) -> None:
    table = paimon_index.create_table(str(tmp_path), "db.p", SCHEMA, primary_keys=["k"],
                                      options={"bucket": "1", "merge-engine": "partial-update"})
    table.write(_rows(range(5)))
    with pytest.raises(UnsupportedTableError, match=r"deletion-vectors\.enabled"):
        table.delete("k = 1")


def test_update_of_a_partial_update_table_merges_field_by_field(tmp_path) -> None:
    """+U rows on a partial-update table: a NULL SET keeps the old value (the reader's merge, as with
    Paimon's connector); Java Paimon's core reads the same rows."""
    table = paimon_index.create_table(str(tmp_path), "db.p", SCHEMA, primary_keys=["k"],
                                      options={"bucket": "1", "merge-engine": "partial-update"})
    table.write(_rows(range(6)))
    table.update({"s": "'new'", "v": None}, where="k % 2 = 0")
    expected = sorted((k, k * 10, "new" if k % 2 == 0 else f"s{k % 4}", "a" if k % 2 else "b")
                      for k in range(6))
    assert _contents(table) == expected == _pypaimon(table)
    read = {"cmd": "read", "warehouse": str(tmp_path), "table": "db.p", "rows": "true"}
    out = java_oracle().batch([read])[0]
    assert sorted(tuple(r) for r in out["row_values"]) == [tuple(r) for r in expected]


def test_overwrites_of_a_dynamic_bucket_table_leave_it_writable(tmp_path) -> None:
    """Overwrite, overwrite again, upsert: the model's rows, pypaimon's and Java's reads equal. Before,
    pypaimon's dynamic-bucket writer left buckets with data but no HASH index after an overwrite, and
    every later write was refused ('has data files but no complete HASH index'): a wedged table."""
    table = paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, primary_keys=["k"],
                                      options={"bucket": "-1", "dynamic-bucket.target-row-num": "3"})
    model = Model()
    table.upsert(_rows(range(20)))
    model.upsert(_rows(range(20)))
    for ks, offset in ((range(10, 24, 2), 1), (range(0, 30, 3), 2)):
        table.write(_rows(ks, offset), mode="overwrite")
        model.rows.clear()
        model.upsert(_rows(ks, offset))
        assert _contents(table) == model.contents()
    table.upsert(_rows(range(25, 40), 3))
    model.upsert(_rows(range(25, 40), 3))
    assert _contents(table) == model.contents() == _pypaimon(table)
    read = {"cmd": "read", "warehouse": str(tmp_path), "table": "db.t", "rows": "true"}
    out = java_oracle().batch([read])[0]
    assert [tuple(json.loads(json.dumps(list(r)))) for r in model.contents()] == \
        sorted(tuple(r) for r in out["row_values"])


def test_an_overwrite_of_a_dynamic_bucket_merge_engine_table_is_refused_before_any_file(tmp_path) -> None:
    table = paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, primary_keys=["k"],
                                      options={"bucket": "-1", "merge-engine": "partial-update"})
    table.upsert(_rows(range(5)))
    files = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    with pytest.raises(UnsupportedTableError, match="'merge-engine' = 'partial-update'"):
        table.write(_rows(range(3)), mode="overwrite")
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == files


def _merged(table: paimon_index.Table) -> list[tuple]:
    from paimon_index.table.pk.merge_on_read import merged_splits

    paimon = table.paimon_table
    rows = merged_splits(paimon, paimon.new_read_builder().new_scan().plan().splits())
    assert rows.schema == _pypaimon_schema(table)
    return sorted(tuple(r.values()) for r in rows.to_pylist())


def _pypaimon_schema(table: paimon_index.Table) -> pa.Schema:
    builder = table.paimon_table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits()).schema


@pytest.mark.parametrize("seed", range(6))
def test_the_arrow_merge_equals_pypaimons_merge_read_over_random_changes(tmp_path, seed: int) -> None:
    """``merged_splits`` (sorted by key and sequence number in Arrow) against pypaimon's merge read,
    the row-by-row reader it replaced for ``deduplicate`` tables: random batches of every row kind
    into several level-0 files per bucket, DELETEs and UPDATEs, then a full compaction."""
    rng = random.Random(seed)
    config = list(CONFIGS)[seed % len(CONFIGS)]
    table = _create(tmp_path, config)
    for step in range(7):
        keys = sorted(rng.sample(range(80), rng.randint(1, 30)))
        batch = pa.table({"k": keys, "v": [rng.randint(-5, 5) * 100 + step for _ in keys],
                          "s": [rng.choice(["x", "y", None]) for _ in keys],
                          "dt": ["a" if k % 2 else "b" for k in keys]}, schema=SCHEMA)
        if step:
            kinds = [rng.choice(["+I", "+U", "-U", "-D"]) for _ in keys]
            batch = batch.append_column("_ROW_KIND", pa.array(kinds))
        table.upsert(batch)
        if step == 3:
            table.delete("v < 0")
        if step == 5:
            table.update({"s": "'u'"}, where="k % 3 = 0")
        assert _merged(table) == _pypaimon(table) == _contents(table)
    table.compact(full=True)
    assert _merged(table) == _pypaimon(table) == _contents(table)


def test_versions_of_a_key_with_one_sequence_number_are_left_to_pypaimons_merge(tmp_path) -> None:
    """Two writers prepared on one snapshot number their rows from the same sequence number: a key
    both wrote has two versions the sequence number cannot order. Which wins is the merge reader's
    own choice (pypaimon's here took writer 1's row for one key and writer 2's for the other), so
    such a bucket is not merged in Arrow."""
    from paimon_index.table.pk.merge_on_read import _newest_versions

    table = _create(tmp_path, "fixed")
    table.write(_rows(range(10)))
    paimon = table.paimon_table
    builders = [paimon.new_batch_write_builder() for _ in range(2)]
    writes = [b.new_write() for b in builders]
    messages = []
    for offset, write in enumerate(writes, start=1):
        write.write_arrow(_rows(range(3, 5), offset=offset))
        messages.append(write.prepare_commit())
    for builder, prepared in zip(builders, messages, strict=True):
        builder.new_commit().commit(prepared)
    splits = table.paimon_table.new_read_builder().new_scan().plan().splits()
    tied = [s for s in splits if any(m.file_name for m in s.files if m.min_sequence_number > 0)]
    assert tied and all(_newest_versions(table.paimon_table, list(s.files)) is None for s in tied)
    assert _merged(table) == _pypaimon(table) == _contents(table)


def test_a_file_of_retractions_counts_them_so_java_merges_it_instead_of_reading_it_raw(tmp_path) -> None:
    """Java's split generator reads a file that no other file's key range overlaps *raw* (no merge,
    deletes kept) when its ``deleteRowCount`` is 0. pypaimon's writer recorded 0 for every file, so
    a first upsert with ``-U``/``-D`` rows into empty buckets came back from Java Paimon (and from
    pypaimon, which splits the same way) with the retracted keys as live rows."""
    table = _create(tmp_path, "partitioned")
    kinds = ["-U", "+I", "-D", "+I", "-D", "+U"]
    table.upsert(_rows(range(0, 6)).append_column("_ROW_KIND", pa.array(kinds)))
    live = sorted(tuple(r.values()) for r, kind in zip(_rows(range(0, 6)).to_pylist(), kinds, strict=True)
                  if kind in ("+I", "+U"))
    assert _contents(table) == _pypaimon(table) == live
    files = [m for s in table.paimon_table.new_read_builder().new_scan().plan().splits() for m in s.files]
    assert sum(m.delete_row_count for m in files) == 3 and sum(m.row_count for m in files) == 6
    read = {"cmd": "read", "warehouse": str(tmp_path), "table": "db.t", "rows": "true"}
    java_rows = sorted(tuple(r) for r in java_oracle().batch([read])[0]["row_values"])
    assert java_rows == [tuple(json.loads(json.dumps(list(r)))) for r in live]


def test_a_floating_point_key_is_left_to_pypaimons_merge(tmp_path) -> None:
    """Arrow's equality is not a key comparator's for floats (``-0.0 == 0.0``, ``NaN != NaN``): a
    bucket keyed by a DOUBLE is merged by pypaimon's reader, whose rows the read returns."""
    from paimon_index.table.pk.merge_on_read import _newest_versions

    schema = pa.schema([pa.field("d", pa.float64(), nullable=False), ("v", pa.int64())])
    table = paimon_index.create_table(str(tmp_path), "db.f", schema, primary_keys=["d"],
                                      options={"bucket": "1"})
    for version in (1, 2):
        table.write(pa.table({"d": [-0.0, 0.0, float("nan"), 1.5], "v": [version] * 4}, schema=schema))
    paimon = table.paimon_table
    splits = paimon.new_read_builder().new_scan().plan().splits()
    assert _newest_versions(paimon, [m for s in splits for m in s.files]) is None
    builder = paimon.new_read_builder()
    theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert sorted(map(repr, table.read().to_pylist())) == sorted(map(repr, theirs.to_pylist()))
