"""A primary-key compaction rolls its files at ``target-file-size`` of encoded bytes, as Java's writer
does (pypaimon alone rolls on its Arrow buffer: files 3-5x smaller than the option says), and the
files it rolls at one level are a sorted run Java's writer takes."""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from tests.javaoracle import java_oracle

import paimon_index
from paimon_index.table.paimon import latest_snapshot
from paimon_index.table.pk.lookup import key_tuple
from paimon_index.table.pk.plan import plan_snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("status", pa.string()),
                    ("amount", pa.float64()), ("customer", pa.int64()), ("note", pa.string())])
TARGET = 256 * 1024
ROWS = 240_000


def _rows(ids: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    statuses = np.array(["NEW", "PAID", "SHIPPED", "HELD"])
    return pa.table({"id": ids, "status": statuses[rng.integers(0, 4, len(ids))],
                     "amount": np.round(rng.random(len(ids)) * 100, 2),
                     "customer": rng.integers(0, 100_000, len(ids)),
                     "note": [f"v{seed}-{i % 9973}" for i in ids]}, schema=SCHEMA)


def _check_sorted_run(files: Sequence[Any]) -> None:
    """The files are one level and a sorted run: no two key ranges overlap."""
    ranges = sorted((key_tuple(m.min_key), key_tuple(m.max_key)) for m in files)
    assert len({m.level for m in files}) == 1
    assert all(high < low for (_, high), (low, _) in itertools.pairwise(ranges)), ranges


@pytest.mark.parametrize("mode", ["deletion-vectors", "merge-on-read"])
def test_a_full_compaction_rolls_files_at_the_target_size_on_disk(tmp_path: Path, mode: str) -> None:
    warehouse = str(tmp_path)
    table = paimon_index.create_table(warehouse, "db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "2", "target-file-size": f"{TARGET // 1024}kb",
        "deletion-vectors.enabled": str(mode == "deletion-vectors").lower()})
    ids = np.arange(ROWS, dtype=np.int64)
    for part in range(3):
        table.upsert(_rows(ids[part::3], part))
    changed = np.sort(np.random.default_rng(9).choice(ids, ROWS // 10, replace=False))
    table.upsert(_rows(changed, 7))
    expected = {r["id"]: r for r in table.read().to_pylist()}
    assert len(expected) == ROWS
    assert table.compact(full=True).snapshot_id is not None

    table = paimon_index.open_table(warehouse, "db.t")
    plan = plan_snapshot(table.paimon_table, latest_snapshot(table.paimon_table), vectors=False)
    assert len(plan.buckets) == 2
    for bucket in plan.buckets.values():
        sizes = sorted((os.path.getsize(os.path.join(warehouse, "db.db", "t", f"bucket-{bucket.bucket}",
                                                     str(m.file_name))) for m in bucket.files), reverse=True)
        total = sum(sizes)
        _check_sorted_run(bucket.files)
        assert total > 2 * TARGET  # the test needs more than one file's worth per bucket
        # Every file but the last of the run is about the target (pypaimon's Arrow rolling wrote
        # files of ~a quarter of it here); no more files than the bytes need, plus the remainder.
        assert all(0.5 * TARGET <= s <= 2 * TARGET for s in sizes[:-1]), sizes
        assert len(sizes) <= total // TARGET + 2, sizes
    assert {r["id"]: r for r in table.read().to_pylist()} == expected
    java = java_oracle().batch([{"cmd": "read", "warehouse": warehouse, "table": "db.t"}])[0]
    assert java["rows"] == ROWS


@pytest.mark.parametrize("buckets", ["2", "-1"])
def test_a_first_write_rolls_files_at_the_target_size_on_disk(tmp_path: Path, buckets: str) -> None:
    """New rows (no file to take bytes per row from) roll at the target too: a slice of them is
    encoded first. Before, one upsert of 240,000 rows wrote files of ~a quarter of the target."""
    warehouse = str(tmp_path)
    table = paimon_index.create_table(warehouse, "db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": buckets, "target-file-size": f"{TARGET // 1024}kb", "deletion-vectors.enabled": "true"})
    rows = _rows(np.arange(ROWS, dtype=np.int64), 3)
    table.upsert(rows)
    table = paimon_index.open_table(warehouse, "db.t")
    plan = plan_snapshot(table.paimon_table, latest_snapshot(table.paimon_table), vectors=False)
    for bucket in plan.buckets.values():
        sizes = sorted((os.path.getsize(os.path.join(warehouse, "db.db", "t", f"bucket-{bucket.bucket}",
                                                     str(m.file_name))) for m in bucket.files), reverse=True)
        assert sum(sizes) > 2 * TARGET
        assert all(0.5 * TARGET <= s <= 2 * TARGET for s in sizes[:-1]), sizes
        assert len(sizes) <= sum(sizes) // TARGET + 2, sizes
        _check_sorted_run(bucket.files)
    assert table.read().sort_by("id").equals(rows)
    java = java_oracle().batch([{"cmd": "read", "warehouse": warehouse, "table": "db.t"}])[0]
    assert java["rows"] == ROWS


def test_java_upserts_into_a_bucket_our_compaction_rolled_into_several_files(tmp_path: Path) -> None:
    """Several files at one level must be a sorted run (no two key ranges overlap): Java's lookup
    searches a level's files by key range to find the row an upsert replaces. Rows handed to the
    writer in file order, not key order, rolled into files spanning the whole key range."""
    import json

    warehouse = str(tmp_path)
    table = paimon_index.create_table(warehouse, "db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "target-file-size": f"{TARGET // 1024}kb", "deletion-vectors.enabled": "true"})
    ids = np.arange(ROWS // 2, dtype=np.int64)
    for part in range(3):
        table.upsert(_rows(ids[part::3], part))
    assert table.compact(full=True).snapshot_id is not None
    table = paimon_index.open_table(warehouse, "db.t")
    plan = plan_snapshot(table.paimon_table, latest_snapshot(table.paimon_table), vectors=False)
    (bucket,) = plan.buckets.values()
    assert len(bucket.files) > 1
    _check_sorted_run(bucket.files)
    changed = ids[::97]
    rows = tmp_path / "upsert.jsonl"
    rows.write_text("".join(json.dumps({"id": int(k), "status": "JAVA", "amount": 1.5, "customer": 1,
                                        "note": "java", "_kind": "+U"}) + "\n" for k in changed))
    java = java_oracle().batch([
        {"cmd": "write", "warehouse": warehouse, "table": "db.t", "jsonl": str(rows), "no-create": "true",
         "schema": "id BIGINT NOT NULL, status STRING, amount DOUBLE, customer BIGINT, note STRING",
         "pk": "id"},
        {"cmd": "read", "warehouse": warehouse, "table": "db.t"},
        {"cmd": "read", "warehouse": warehouse, "table": "db.t", "where": "status = 'JAVA'"}])
    assert java[1]["rows"] == len(ids) and java[2]["rows"] == len(changed)
    ours = paimon_index.open_table(warehouse, "db.t").read()
    assert ours.num_rows == len(ids) and len(set(ours["id"].to_pylist())) == len(ids)
    assert sorted(k for k, s in zip(ours["id"].to_pylist(), ours["status"].to_pylist(), strict=True)
                  if s == "JAVA") == changed.tolist()
