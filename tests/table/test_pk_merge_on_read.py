"""Primary-key tables without deletion vectors (merge-on-read): DELETE / UPDATE / upsert with row
kinds write level-0 key-value rows (``-D``, ``+U``) in one APPEND snapshot, as Paimon's connector
does; every reader (ours, pypaimon's, Java Paimon's) merges them to the same rows."""

from __future__ import annotations

import json

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
