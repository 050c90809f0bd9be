"""DELETE / UPDATE through deletion vectors, or copy-on-write on tables without them (one process):
the table always equals a plain model."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_index.errors import ConcurrentChangeError, InvalidOptionError
from paimon_index.table.catalog import create_table
from paimon_index.table.read import read_arrow
from paimon_index.table.row_level import commit_row_change, delete_arrow, plan_row_change, update_arrow
from paimon_index.table.transaction import Transaction
from paimon_index.table.write import write_arrow

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("dt", pa.string())])
TAGS = ["a", "b", "c", "d"]
CONFIGS = {"fixed-32": {"bucket": "2", "bucket-key": "id"}, "unaware-32": {"bucket": "-1"},
           "fixed-64": {"bucket": "2", "bucket-key": "id", "deletion-vectors.bitmap64": "true"},
           "unaware-64": {"bucket": "-1", "deletion-vectors.bitmap64": "true"},
           # no deletion vectors: a changed row's file is rewritten without it (copy-on-write)
           "fixed-cow": {"bucket": "2", "bucket-key": "id", "deletion-vectors.enabled": "false"},
           "unaware-cow": {"bucket": "-1", "deletion-vectors.enabled": "false"}}


def new_table(warehouse: str, config: str, partitioned: bool = True):
    return create_table(warehouse, "db.t", SCHEMA, partition_keys=["dt"] if partitioned else [],
                        options={"deletion-vectors.enabled": "true", **CONFIGS[config],
                                 "file-index.bitmap.columns": "tag", "file-index.bloom-filter.columns": "id"})


def contents(table) -> list[tuple]:
    rows, _ = read_arrow(table, "id IS NOT NULL OR id IS NULL")
    if rows.num_rows == 0:
        return []
    return sorted(zip(*(rows.column(c).to_pylist() for c in SCHEMA.names), strict=True))


def pypaimon_contents(table) -> list[tuple]:
    builder = table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return sorted(zip(*(rows.column(c).to_pylist() for c in SCHEMA.names), strict=True))


operation = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 40)),
    st.tuples(st.just("delete"), st.sampled_from(TAGS)),
    st.tuples(st.just("delete-ids"), st.integers(0, 200)),
    st.tuples(st.just("update"), st.sampled_from(TAGS), st.sampled_from(TAGS)),
)


@pytest.mark.parametrize("config", list(CONFIGS))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=st.lists(operation, min_size=2, max_size=6))
def test_random_changes_equal_a_plain_model(config: str, operations: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        table = new_table(warehouse, config)
        model: list[tuple] = []
        next_id = itertools.count()
        for op in operations:
            if op[0] == "append":
                ids = [next(next_id) for _ in range(op[1])]
                rows = [(i, TAGS[i % len(TAGS)], "x" if i % 3 else "y") for i in ids]
                records = [dict(zip(SCHEMA.names, r, strict=True)) for r in rows]
                write_arrow(table, pa.Table.from_pylist(records, SCHEMA))
                model += rows
            elif op[0] == "delete":
                delete_arrow(table, f"tag = '{op[1]}'")
                model = [r for r in model if r[1] != op[1]]
            elif op[0] == "delete-ids":
                delete_arrow(table, f"id < {op[1]} AND dt = 'x'")
                model = [r for r in model if not (r[0] < op[1] and r[2] == "x")]
            else:
                update_arrow(table, {"tag": op[2]}, f"tag = '{op[1]}'")
                model = [(r[0], op[2], r[2]) if r[1] == op[1] else r for r in model]
            assert contents(table) == sorted(model)
            if config.endswith("32"):
                assert pypaimon_contents(table) == sorted(model)


def test_a_repeated_delete_changes_nothing_and_indexes_still_skip(tmp_path: Path) -> None:
    table = new_table(str(tmp_path), "fixed-32", partitioned=False)
    for first in (0, 1000, 2000):
        ids = np.arange(first, first + 1000)
        write_arrow(table, pa.table({"id": ids, "tag": np.where(ids % 100 == 0, "rare", "common"),
                                     "dt": np.full(1000, "x")}))
    snapshot = delete_arrow(table, "tag = 'rare' AND id < 1500")
    assert snapshot is not None and delete_arrow(table, "tag = 'rare' AND id < 1500") is None
    got, report = read_arrow(table, "tag = 'rare'")
    assert sorted(got["id"].to_pylist()) == list(range(1500, 3000, 100))
    assert report.files_skipped_by_index >= 1  # the first write's files have no live rare row
    assert report.rows_read == report.rows_returned == 15


def test_a_table_without_vectors_is_changed_copy_on_write(tmp_path: Path) -> None:
    """A table without deletion vectors is changed copy-on-write (it was refused before session 33:
    Paimon's connector rewrites such files): the file holding the row is replaced by one without it."""
    plain = create_table(str(tmp_path), "db.plain", SCHEMA, options={"bucket": "-1"})
    write_arrow(plain, pa.table({"id": [1, 2], "tag": ["a", "b"], "dt": ["x", "x"]}))
    assert delete_arrow(plain, "id = 1") is not None
    assert contents(plain) == pypaimon_contents(plain) == [(2, "b", "x")]


@pytest.mark.parametrize("config", ["unaware-32", "unaware-cow"])
def test_a_change_fails_cleanly_on_a_concurrent_commit(tmp_path: Path, config: str) -> None:
    """The new DV index file, or (copy-on-write) the rewritten file, of a change whose commit is
    refused is deleted; the table is as the other commit left it."""
    table = new_table(str(tmp_path), config)
    write_arrow(table, pa.table({"id": [1, 2, 3], "tag": ["a", "b", "c"], "dt": ["x", "x", "x"]}))
    plan = plan_row_change(table)
    from paimon_index.table.row_level import _mark_all, _matching_rows

    marked = Transaction(table, plan.snapshot, operation="delete")
    _mark_all(plan, _matching_rows(table, plan, "id = 2"), marked)
    written = marked.written_files()
    assert written and all(Path(p).exists() for p in written)  # a DV index file, or the rewritten file
    write_arrow(table, pa.table({"id": [4], "tag": ["d"], "dt": ["x"]}))  # lands in between
    before = table.snapshot_manager().get_latest_snapshot().id
    with pytest.raises(ConcurrentChangeError, match="run it again"):
        commit_row_change(table, plan, marked.messages)
    assert table.snapshot_manager().get_latest_snapshot().id == before
    assert [r[0] for r in contents(table)] == [1, 2, 3, 4]
    assert not [p for p in written if Path(p).exists()]  # the refused change left no file behind


def test_update_rewrites_only_matching_rows_with_computed_values(tmp_path: Path) -> None:
    table = new_table(str(tmp_path), "fixed-64")
    write_arrow(table, pa.table({"id": [1, 2, 3], "tag": ["a", "b", "a"], "dt": ["x", "y", "x"]}))
    update_arrow(table, {"tag": lambda rows: pc.binary_join_element_wise(rows["tag"], "!", "")}, "tag = 'a'")
    assert contents(table) == [(1, "a!", "x"), (2, "b", "y"), (3, "a!", "x")]
    with pytest.raises(InvalidOptionError, match="unknown columns"):
        update_arrow(table, {"nope": 1}, "id = 1")


def test_update_assignments_all_see_the_old_row(tmp_path: Path) -> None:
    """SQL semantics: ``SET id = <new>, tag = f(id)`` computes ``tag`` from the old ``id``."""
    table = new_table(str(tmp_path), "unaware-32", partitioned=False)
    write_arrow(table, pa.table({"id": [1, 2], "tag": ["a", "b"], "dt": ["x", "x"]}))
    update_arrow(table, {"id": 10, "tag": lambda rows: pc.cast(rows["id"], pa.string())}, "id = 1")
    assert contents(table) == [(2, "b", "x"), (10, "1", "x")]


def test_update_with_a_value_that_does_not_fit_is_a_data_error(tmp_path: Path) -> None:
    from paimon_index.errors import DataError

    table = new_table(str(tmp_path), "unaware-32", partitioned=False)
    write_arrow(table, pa.table({"id": [1], "tag": ["a"], "dt": ["x"]}))
    with pytest.raises(DataError, match="column 'id'"):
        update_arrow(table, {"id": "not a number"}, "id = 1")
    assert contents(table) == [(1, "a", "x")]


def test_pinned_snapshot_plan_lists_files_deletion_files_and_vectors(tmp_path: Path) -> None:
    from paimon_index.table.plan import plan_snapshot

    table = new_table(str(tmp_path), "fixed-32")
    assert plan_snapshot(table).snapshot is None
    write_arrow(table, pa.table({"id": list(range(20)), "tag": ["a"] * 20, "dt": ["x"] * 10 + ["y"] * 10}))
    delete_arrow(table, "id = 3")
    plan = plan_snapshot(table)
    assert plan.snapshot_id == 2
    files = {(key, meta.file_name) for key, bucket in plan.buckets.items() for meta in bucket.files}
    assert {key[0] for key, _ in files} == {("x",), ("y",)} and {key[1] for key, _ in files} <= {0, 1}
    with_vectors = [b for b in plan.buckets.values() if b.dv_entries]
    assert len(with_vectors) == 1 and len(with_vectors[0].deletion_files) == 1
    bucket = with_vectors[0]
    (name,) = bucket.deletion_files
    assert name in bucket.file_names and bucket.live_dv_entries() == bucket.dv_entries
    earlier = plan_snapshot(table, 1)  # pinned: the state before the delete
    assert earlier.snapshot_id == 1 and not [b for b in earlier.buckets.values() if b.dv_entries]
    before = sorted(m.file_name for b in earlier.buckets.values() for m in b.files)
    assert sorted(f for _, f in files) == before
    with pytest.raises(KeyError, match="snapshot 9"):
        plan_snapshot(table, 9)


@pytest.mark.parametrize("partitioned", [True, False])
def test_matching_rows_carry_each_rows_file_position_partition_and_bucket(tmp_path: Path,
                                                                          partitioned: bool) -> None:
    """The metadata columns (added after the filter, for the kept rows only) name each row's own
    file, position in it, partition text ('' unpartitioned) and bucket, with vectors applied."""
    from paimon_index.table.files import METADATA_COLUMNS
    from paimon_index.table.row_level import _matching_rows

    table = new_table(str(tmp_path), "fixed-32", partitioned=partitioned)
    ids = np.arange(300)
    write_arrow(table, pa.table({"id": ids, "tag": np.array(TAGS)[ids % 4],
                                 "dt": np.where(ids < 150, "x", "é")}))
    delete_arrow(table, "id % 7 = 0")  # vectors: positions of the live rows are no longer 0..n-1
    plan = plan_row_change(table)
    matched = _matching_rows(table, plan, "tag = 'b' OR id > 280")
    assert matched.column_names[-4:] == list(METADATA_COLUMNS)
    expected = sorted(i for i in range(300) if i % 7 and (i % 4 == 1 or i > 280))
    assert sorted(matched["id"].to_pylist()) == expected
    # Every row's position in its file holds that row: read each file back and look it up.
    import pyarrow.parquet as pq

    files = {path: pq.ParquetFile(path).read() for path in set(matched["__paimon_file_path"].to_pylist())}
    for row in matched.to_pylist():
        assert files[row["__paimon_file_path"]]["id"][row["__paimon_row_index"]].as_py() == row["id"]
        assert row["__paimon_partition"] == (f"dt={row['dt']}" if partitioned else "")
        assert (row["__paimon_partition"], row["__paimon_bucket"]) in plan.buckets
    matched.validate(full=True)


def test_java_reads_a_table_changed_copy_on_write(tmp_path: Path) -> None:
    """DELETE and UPDATE of a table without deletion vectors, then Java Paimon's own read: the same
    rows, and the rewritten files' old entries gone (Java plans only the new files)."""
    from javaoracle import java_oracle

    table = new_table(str(tmp_path), "fixed-cow")
    write_arrow(table, pa.table({"id": list(range(20)), "tag": [TAGS[i % 4] for i in range(20)],
                                 "dt": ["x" if i < 10 else "y" for i in range(20)]}))
    write_arrow(table, pa.table({"id": [20, 21], "tag": ["a", None], "dt": ["x", "z"]}))
    assert delete_arrow(table, "tag = 'b' OR id = 21") is not None
    assert update_arrow(table, {"tag": "q"}, "id >= 18") is not None
    ours = contents(table)
    assert ours == pypaimon_contents(table)
    assert [r for r in ours if r[0] in (1, 5, 21)] == [] and (19, "q", "y") in ours
    whole, filtered = java_oracle().batch([
        {"cmd": "read", "warehouse": str(tmp_path), "table": "db.t", "rows": "true"},
        {"cmd": "read", "warehouse": str(tmp_path), "table": "db.t", "where": "tag = 'q'", "rows": "true"}])
    assert sorted(tuple(r) for r in whole["row_values"]) == ours
    assert sorted(r[0] for r in filtered["row_values"]) == [18, 19, 20]
