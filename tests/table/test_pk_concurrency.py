"""Primary-key tables under real concurrency: separate processes (multiprocessing spawn) upsert and
compact one table at once.

Each operation either reports success (the snapshot id it committed) or a ConcurrentChangeError;
afterwards the table must equal a dict model built by replaying, in snapshot order, exactly the
operations that reported success — through our merge-free read and through pypaimon's own read —
every key must be stored once, the LSM invariants must hold, the table must still take upserts,
and no data or index file may be left that no snapshot references (a failed commit cleans up).
"""

from __future__ import annotations

import multiprocessing
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_index.errors import ConcurrentChangeError
from paimon_index.table.catalog import create_table, open_table
from paimon_index.table.maintenance import referenced_files

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("tag", pa.string()), ("n", pa.int32())])
BUCKETS = {"fixed": {"bucket": "2"}, "dynamic": {"bucket": "-1", "dynamic-bucket.target-row-num": "50"}}
IDENTIFIER = "db.pk"
#: How long a process waits at a barrier for the others (spawned interpreters start slowly).
BARRIER_TIMEOUT_S = 120
JOIN_TIMEOUT_S = 600


def _new_table(warehouse: str, mode: str) -> Any:
    return create_table(warehouse, IDENTIFIER, SCHEMA, primary_keys=["k"], options={
        **BUCKETS[mode], "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "tag",
        "num-sorted-run.compaction-trigger": "3"})


def _rows(keys: list[int], writer: int, number: int) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "tag": f"w{writer}", "n": number} for k in keys], SCHEMA)


# ------------------------------------------------------------------------------------------------
# workers (module level: a spawned process imports them)
# ------------------------------------------------------------------------------------------------
def _upsert_worker(warehouse: str, writer: int, rounds: list[list[int]], barrier: Any, results: Any) -> None:
    from paimon_index.table.pk import upsert_arrow

    for number, keys in enumerate(rounds):
        barrier.wait(BARRIER_TIMEOUT_S)
        table = open_table(warehouse, IDENTIFIER)
        try:
            snapshot = upsert_arrow(table, _rows(keys, writer, number))
            results.put(("upsert", writer, number, keys, snapshot, None))
        except ConcurrentChangeError as e:
            results.put(("upsert", writer, number, keys, None, type(e).__name__))
        except Exception:  # anything else is a failure the parent reports
            results.put(("upsert", writer, number, keys, None, traceback.format_exc()))


def _compact_worker(warehouse: str, rounds: int, barrier: Any, results: Any) -> None:
    from paimon_index.table.pk import compact

    for number in range(rounds):
        barrier.wait(BARRIER_TIMEOUT_S)
        table = open_table(warehouse, IDENTIFIER)
        try:
            snapshot = compact(table, full=number % 2 == 0, threshold=0.0)
            results.put(("compact", -1, number, [], snapshot, None))
        except ConcurrentChangeError as e:
            results.put(("compact", -1, number, [], None, type(e).__name__))
        except Exception:
            results.put(("compact", -1, number, [], None, traceback.format_exc()))


def _run(targets: list[tuple[Any, tuple[Any, ...]]]) -> list[tuple]:
    """Run each (function, args) in its own spawned process, all sharing one barrier."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(targets))
    results = ctx.Queue()
    processes = [ctx.Process(target=f, args=(*args, barrier, results)) for f, args in targets]
    for p in processes:
        p.start()
    for p in processes:
        p.join(JOIN_TIMEOUT_S)
    assert all(p.exitcode == 0 for p in processes), [p.exitcode for p in processes]
    out = []
    while not results.empty():
        out.append(results.get())
    return out


# ------------------------------------------------------------------------------------------------
# checks
# ------------------------------------------------------------------------------------------------
def _ours(table: Any) -> list[tuple]:
    from paimon_index.table.pk import read_primary_key

    rows, _ = read_primary_key(table, "k IS NOT NULL")
    return sorted(zip(rows["k"].to_pylist(), rows["tag"].to_pylist(), rows["n"].to_pylist(), strict=True))


def _pypaimon(table: Any) -> list[tuple]:
    builder = table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(rows["k"].to_pylist(), rows["tag"].to_pylist(), rows["n"].to_pylist(), strict=True))


def _replay(model: dict[int, tuple], results: list[tuple]) -> list[int]:
    """Apply the successful upserts in snapshot order; returns the committed snapshot ids."""
    failures = [r for r in results if r[5] not in (None, "ConcurrentChangeError")]
    assert not failures, failures[0][5]
    done = sorted((r for r in results if r[5] is None and r[4] is not None), key=lambda r: r[4])
    print(f"{len(done)} committed, {sum(r[5] is not None for r in results)} refused as concurrent")
    for kind, writer, number, keys, _, _ in done:
        if kind == "upsert":
            for k in keys:
                model[k] = (k, f"w{writer}", number)
    return [r[4] for r in done]


def _check(warehouse: str, model: dict[int, tuple]) -> None:
    table = open_table(warehouse, IDENTIFIER)
    want = sorted(model.values())
    assert _pypaimon(table) == want  # pypaimon reads levels >= 1 with vectors: a duplicate shows
    assert _ours(table) == want
    splits = table.new_read_builder().new_scan().plan_for_write().splits()
    assert all(m.level > 0 for s in splits for m in s.files)
    # Every file on disk is used by some snapshot: a failed commit removed what it wrote.
    used: set[str] = set()
    manager = table.snapshot_manager()
    for snapshot in manager.list_snapshots():
        used |= referenced_files(table, snapshot)
    table_dir = Path(warehouse) / "db.db" / "pk"
    on_disk = {str(p) for p in table_dir.rglob("*") if p.is_file() and not p.name.startswith(".")
               and p.relative_to(table_dir).parts[0] not in ("snapshot", "schema", "manifest")}
    assert on_disk <= used, sorted(on_disk - used)[:5]


def _still_takes_upserts(warehouse: str, model: dict[int, tuple]) -> None:
    from paimon_index.table.pk import compact, upsert_arrow

    table = open_table(warehouse, IDENTIFIER)
    keys = [*sorted(model)[:5], 10_000]
    upsert_arrow(table, _rows(keys, 99, 99))
    for k in keys:
        model[k] = (k, "w99", 99)
    compact(open_table(warehouse, IDENTIFIER), full=True)
    _check(warehouse, model)


# ------------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------------
WRITERS = 3
ROUNDS = 3
KEYS_PER_ROUND = 20


@pytest.mark.parametrize("mode", list(BUCKETS))
def test_processes_upserting_the_same_new_keys_store_each_key_once(tmp_path: Path, mode: str) -> None:
    """Issue 11.1: every round, all writers upsert the same new keys at once (the last, an old one too)."""
    warehouse = str(tmp_path)
    _new_table(warehouse, mode)
    # New keys only (a plain APPEND commit, which pypaimon retries unchecked), then one older key.
    rounds = [list(range(r * KEYS_PER_ROUND, (r + 1) * KEYS_PER_ROUND)) for r in range(ROUNDS)]
    rounds[-1].append(0)
    results = _run([(_upsert_worker, (warehouse, w, rounds)) for w in range(WRITERS)])
    assert len(results) == WRITERS * ROUNDS
    model: dict[int, tuple] = {}
    snapshots = _replay(model, results)
    assert len(snapshots) == len(set(snapshots))  # each success names its own snapshot
    assert len(snapshots) >= ROUNDS  # at least one writer wins every round
    _check(warehouse, model)
    _still_takes_upserts(warehouse, model)


@pytest.mark.parametrize("mode", list(BUCKETS))
def test_compaction_racing_upserts_loses_nothing_and_leaves_the_table_writable(tmp_path: Path,
                                                                              mode: str) -> None:
    """Issue 11.2: a compaction planned before an upsert commits must not bring old values back."""
    from paimon_index.table.pk import upsert_arrow

    warehouse = str(tmp_path)
    table = _new_table(warehouse, mode)
    model: dict[int, tuple] = {}
    for number in range(2):  # files with deleted rows, so every compaction has work
        keys = list(range(0, 200, number + 1))
        upsert_arrow(table, _rows(keys, 0, number))
        model.update({k: (k, "w0", number) for k in keys})
    first = table.snapshot_manager().get_latest_snapshot().id
    update_rounds = [list(range(r, 200, 7)) for r in range(ROUNDS)]
    results = _run([(_upsert_worker, (warehouse, 1, update_rounds)),
                    (_compact_worker, (warehouse, ROUNDS))])
    # Upserts replayed on the model in snapshot order; compactions change no value.
    for r in results:
        if r[0] == "upsert" and r[4] is not None:
            assert r[4] > first
    _replay(model, results)
    _check(warehouse, model)
    _still_takes_upserts(warehouse, model)

