"""Full compaction of primary-key tables without deletion vectors (merge-on-read, Paimon's default
mode): each bucket's files merged by key into one file at the top level, one COMPACT snapshot.

Checked against a model of the rows, pypaimon's own merge read, and Java Paimon (it reads our
compacted tables; we compact the level-0 files Java's own writer wrote). Then seed 004's migration:
the compacted table switches to deletion-vectors mode and takes upserts there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.javaoracle import java_oracle

import paimon_index
from paimon_index.errors import ConcurrentChangeError, UnsupportedChangelogProducerError
from paimon_index.table.paimon import latest_snapshot, table_options
from paimon_index.table.pk import compaction, set_deletion_vectors
from paimon_index.table.pk.plan import max_level, plan_snapshot

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64()), ("s", pa.string()),
                    pa.field("p", pa.string(), nullable=False)])
KINDS: dict[str, dict[str, Any]] = {
    "fixed": {"partition_keys": [], "options": {"bucket": "2"}},
    "partitioned": {"partition_keys": ["p"], "options": {"bucket": "2"}},
    "dynamic": {"partition_keys": [], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "7"}},
    "partial-update": {"partition_keys": [], "options": {"bucket": "2", "merge-engine": "partial-update"}},
    "aggregation": {"partition_keys": ["p"], "options": {
        "bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
        "fields.s.aggregate-function": "max"}},
}


def _create(warehouse: str, kind: str, name: str = "db.t") -> paimon_index.Table:
    spec = KINDS[kind]
    keys = ["k", "p"] if spec["partition_keys"] else ["k"]
    return paimon_index.create_table(warehouse, name, SCHEMA, primary_keys=keys,
                                     partition_keys=spec["partition_keys"], options=spec["options"])


def _sorted(rows: pa.Table) -> list[tuple]:
    # NULLs sort too (a key of (is null, value) per field).
    return sorted((tuple(r.values()) for r in rows.select(SCHEMA.names).to_pylist()),
                  key=lambda t: tuple((v is None, v if v is not None else "") for v in t))


def _contents(table: paimon_index.Table) -> list[tuple]:
    return _sorted(table.read())


def _pypaimon(table: paimon_index.Table) -> list[tuple]:
    builder = table.paimon_table.new_read_builder()
    return _sorted(builder.new_read().to_arrow(builder.new_scan().plan().splits()))


def _batch(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)


def _check_compacted(table: paimon_index.Table) -> None:
    """One file per bucket, at the top level, in a COMPACT snapshot."""
    paimon = table.paimon_table
    snapshot = latest_snapshot(paimon)
    assert snapshot.commit_kind == "COMPACT"
    top = max_level(table_options(paimon))
    plan = plan_snapshot(paimon, snapshot, vectors=False)
    assert plan.buckets or table.count() == 0  # every key deleted: no file left
    for key, bucket in plan.buckets.items():
        assert [m.level for m in bucket.files] == [top], key


OPS = st.lists(st.tuples(st.sampled_from(["write", "delete", "update"]),
                         st.lists(st.tuples(st.integers(0, 30), st.one_of(st.none(), st.integers(-9, 99)),
                                            st.sampled_from(["a", "b", None]), st.sampled_from(["x", "y"])),
                                  min_size=1, max_size=25),
                         st.integers(0, 30)),
               min_size=1, max_size=5)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["fixed", "partitioned", "dynamic", "partial-update", "aggregation"]), ops=OPS)
def test_compaction_keeps_the_merged_rows(tmp_path_factory: pytest.TempPathFactory, kind: str,
                                          ops: list) -> None:
    """Random writes, DELETEs and UPDATEs (level-0 files, as Paimon's writer leaves them), then a
    compaction: the same rows by our read and pypaimon's merge read, one top-level file per bucket."""
    warehouse = str(tmp_path_factory.mktemp("mor"))
    table = _create(warehouse, kind)
    engine = KINDS[kind]["options"].get("merge-engine")
    for op, rows, threshold in ops:
        if op == "write":
            table.write(_batch(rows))
        elif op == "delete" and engine is None:
            table.delete(f"k < {threshold}")
        elif op == "update" and engine != "aggregation":
            table.update({"s": "'u'"}, f"k >= {threshold}")
    before = _contents(table)
    assert before == _pypaimon(table)
    result = table.compact()
    table = paimon_index.open_table(warehouse, "db.t")
    assert _contents(table) == before == _pypaimon(table)
    if result.snapshot_id is not None:
        _check_compacted(table)
    assert table.compact().snapshot_id is None  # nothing left to do


@pytest.mark.parametrize("kind", [  # partitioned and dynamic (5 s of Java each) with -m slow
    "fixed", pytest.param("partitioned", marks=pytest.mark.slow),
    pytest.param("dynamic", marks=pytest.mark.slow), "partial-update"])
def test_java_reads_our_compaction_and_the_table_moves_to_deletion_vectors(tmp_path: Path, kind: str) -> None:
    warehouse = str(tmp_path)
    table = _create(warehouse, kind)
    table.write(_batch([(k, k, f"s{k % 3}", "xy"[k % 2]) for k in range(40)]))
    table.write(_batch([(k, 100 + k, "n", "xy"[k % 2]) for k in range(0, 40, 3)]))
    if KINDS[kind]["options"].get("merge-engine") is None:
        table.delete("k % 5 = 0")
    expected = _contents(table)
    compacted = table.compact()
    assert compacted.files_removed > compacted.files_added > 0
    table = paimon_index.open_table(warehouse, "db.t")
    _check_compacted(table)
    assert _contents(table) == expected

    out = java_oracle().batch([{"cmd": "read", "warehouse": warehouse, "table": "db.t", "rows": "true"}])[0]
    assert sorted(tuple(r) for r in out["row_values"]) == [tuple(json.loads(json.dumps(list(r))))
                                                           for r in expected]

    # Seed 004's migration: a fully compacted table switches to deletion-vectors mode.
    set_deletion_vectors(warehouse, "db.t", True)
    table = paimon_index.open_table(warehouse, "db.t")
    table.upsert(_batch([(1, 7, "dv", "y"), (1000, 1, "new", "x")]))
    assert table.count() == len(expected) + 1


def test_we_compact_the_level_0_files_javas_writer_wrote(tmp_path: Path) -> None:
    oracle = java_oracle()
    warehouse = str(tmp_path)
    commands = []
    for step, rows in enumerate([[(k, k, "a", "x", "+I") for k in range(30)],
                                 [(k, -k, "b", "x", "+U") for k in range(0, 30, 2)],
                                 [(k, None, None, "x", "-D") for k in range(0, 30, 5)]]):
        jsonl = tmp_path / f"rows{step}.jsonl"
        jsonl.write_text("".join(json.dumps({"k": k, "v": v, "s": s, "p": p, "_kind": kind}) + "\n"
                                 for k, v, s, p, kind in rows))
        commands.append({"cmd": "write", "warehouse": warehouse, "table": "db.j",
                         "schema": "k INT NOT NULL, v BIGINT, s STRING, p STRING NOT NULL", "pk": "k",
                         "options": "bucket=2", "jsonl": str(jsonl),
                         **({"no-create": "true"} if step else {})})
    oracle.batch(commands)
    table = paimon_index.open_table(warehouse, "db.j")
    expected = _contents(table)
    assert len(expected) == 24
    assert table.compact().snapshot_id is not None
    table = paimon_index.open_table(warehouse, "db.j")
    _check_compacted(table)
    assert _contents(table) == expected
    out = oracle.batch([{"cmd": "read", "warehouse": warehouse, "table": "db.j", "rows": "true"}])[0]
    assert sorted(tuple(r) for r in out["row_values"]) == [tuple(r) for r in expected]


def test_a_write_landing_during_the_compaction_fails_it_and_leaves_nothing(tmp_path: Path) -> None:
    """The compaction commits exactly on the snapshot it merged: a write in between (here from the
    compaction's own run step, another handle on the table) is never overwritten by stale rows."""
    warehouse = str(tmp_path)
    table = _create(warehouse, "fixed")
    table.write(_batch([(k, k, "a", "x") for k in range(20)]))
    table.write(_batch([(k, -k, "b", "x") for k in range(10)]))
    paimon = table.paimon_table
    files_before = sorted(p.name for p in tmp_path.rglob("data-*"))

    def run(works: list[Any]) -> list[Any]:
        done = [compaction.compact_bucket(paimon, work, compaction.TableIO.of(paimon)) for work in works]
        paimon_index.open_table(warehouse, "db.t").write(_batch([(3, 333, "late", "x")]))
        return done

    with pytest.raises(ConcurrentChangeError):
        compaction.compact(paimon, run=run)
    table = paimon_index.open_table(warehouse, "db.t")
    assert (3, 333, "late", "x") in _contents(table)
    files_after = sorted(p.name for p in tmp_path.rglob("data-*"))
    assert len(files_after) == len(files_before) + 1  # the late write's file; none of the compaction's


def test_a_changelog_producer_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    from paimon_index.table.catalog import alter_table_options

    table = paimon_index.create_table(str(tmp_path), "db.c", SCHEMA, primary_keys=["k"],
                                      options={"bucket": "1"})
    table.write(_batch([(1, 1, "a", "x")]))
    table.write(_batch([(1, 2, "b", "x")]))
    # (Our writes refuse 'lookup' on such a table; Paimon's connector writes it.)
    alter_table_options(str(tmp_path), "db.c", set_options={"changelog-producer": "lookup"})
    table = paimon_index.open_table(str(tmp_path), "db.c")
    snapshot = table.snapshot_id
    with pytest.raises(UnsupportedChangelogProducerError, match="changelog-producer"):
        table.compact()
    assert paimon_index.open_table(str(tmp_path), "db.c").snapshot_id == snapshot


def test_an_input_changelog_table_compacts_as_java_does(tmp_path: Path) -> None:
    """'input': the changelog was written with the records; Java's compaction writes none either."""
    table = paimon_index.create_table(str(tmp_path), "db.i", SCHEMA, primary_keys=["k"],
                                      options={"bucket": "1", "changelog-producer": "input"})
    table.write(_batch([(1, 1, "a", "x"), (2, 2, "b", "x")]))
    table.write(_batch([(1, 5, "c", "x")]))
    expected = _contents(table)
    assert table.compact().snapshot_id is not None
    assert expected == [(1, 5, "c", "x"), (2, 2, "b", "x")]
    assert _contents(paimon_index.open_table(str(tmp_path), "db.i")) == expected
