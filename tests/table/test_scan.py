"""The per-file read plan (table/scan.py): files kept, rows selected, rows deleted -- no Spark.

References: the rows ``read_arrow`` (the Python reader, itself checked against pypaimon and Java)
returns, and the planner's own promise: every matching live row lies in a planned file, inside its
selection and outside its vector.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimon_index.predicate import ALWAYS_TRUE
from paimon_index.table.catalog import create_table
from paimon_index.table.read import read_arrow
from paimon_index.table.row_level import delete_arrow
from paimon_index.table.scan import conservative_predicate, plan_read
from paimon_index.table.schemas import read_schema
from paimon_index.table.write import write_arrow
from paimon_index.types import parse_schema

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("v", pa.int32())])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "id",
           "file-index.bitmap.columns": "s", "file-index.in-manifest-threshold": "1b"}
FILES, ROWS_PER_FILE = 4, 50


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    t = create_table(str(tmp_path_factory.mktemp("scan")), "db.t", SCHEMA, options=OPTIONS)
    for k in range(FILES):
        ids = np.arange(k * ROWS_PER_FILE, (k + 1) * ROWS_PER_FILE)
        write_arrow(t, pa.table({"id": ids, "s": [f"s{k}-{i % 3}" for i in ids],
                                 "v": (ids % 7).astype(np.int32)}, schema=SCHEMA))
    delete_arrow(t, "v = 3 OR id = 60")
    return t


def _live_matching(t: Any, where: str) -> set[tuple[str, int]]:
    """(file name, position) of every live row matching ``where``, from the planner's own files."""
    plan = plan_read(t, None, use_index=False)
    found = set()
    for f in plan.files:
        rows = pq.read_table(f.path).append_column("pos", pa.array(np.arange(f.row_count)))
        if f.deleted is not None:
            rows = rows.filter(pc.invert(pc.is_in(rows["pos"], pa.array(f.deleted))))
        from paimon_index.arrow_filter import to_arrow_expression
        from paimon_index.sql import bind_predicate

        schema = read_schema(t)
        kept = rows.filter(to_arrow_expression(bind_predicate(where, schema), schema))
        found |= {(f.name, int(p)) for p in kept["pos"].to_pylist()}
    return found


@pytest.mark.parametrize("where", ["id = 7", "id = 60", "s = 's2-1'", "s = 's1-0' OR id = 170", "v = 3",
                                   "s IN ('s0-0', 's3-2') AND v <> 1", "id > 1000"])
def test_every_matching_live_row_is_planned(table: Any, where: str) -> None:
    plan = plan_read(table, where)
    planned = {}
    for f in plan.files:
        assert f.deleted is None or len(f.deleted)
        allowed = set(range(f.row_count)) if f.selected is None else set(f.selected.tolist())
        if f.deleted is not None:
            assert not allowed & set(f.deleted.tolist()) or f.selected is None
            allowed -= set(f.deleted.tolist())
        planned[f.name] = allowed
    for name, pos in _live_matching(table, where):
        assert pos in planned.get(name, set()), f"{where}: live row {name}@{pos} not planned"
    expected = read_arrow(table, where)[0].num_rows
    assert len(_live_matching(table, where)) == expected


def test_indexes_prune_files_for_or_and_deletes(table: Any) -> None:
    assert len(plan_read(table, "id = 7").files) == 1
    assert len(plan_read(table, "s = 's1-0' OR s = 's3-0'").files) == 2  # an OR still prunes
    plan = plan_read(table, "v = 3")  # no index on v: every file may hold a row (Spark decides)
    assert len(plan.files) == FILES and all(f.selected is None for f in plan.files)
    assert len(plan_read(table, "id = 60").files) == 1  # a Bloom filter says "maybe": the file stays


def test_no_predicate_reads_no_index_and_keeps_vectors(table: Any) -> None:
    plan = plan_read(table)
    assert len(plan.files) == FILES and plan.report.index_bytes_read == 0
    assert sum(f.live_rows for f in plan.files) == read_arrow(table, "TRUE")[0].num_rows
    assert all(f.selected is None for f in plan.files)


def test_pinned_snapshot(table: Any, tmp_path: Path) -> None:
    plan = plan_read(table, snapshot_id=1)
    assert plan.snapshot_id == 1 and len(plan.files) == 1 and all(f.deleted is None for f in plan.files)
    with pytest.raises(Exception, match="snapshot 999"):
        plan_read(table, snapshot_id=999)


def test_empty_table(tmp_path: Path) -> None:
    t = create_table(str(tmp_path), "db.e", SCHEMA, options={"bucket": "-1"})
    plan = plan_read(t, "id = 1")
    assert plan.snapshot_id is None and plan.files == ()


SPARK_ONLY = parse_schema("id BIGINT, s STRING, v INT, st ROW<a INT>")


@pytest.mark.parametrize(("text", "expected", "exact"), [
    ("id = 1", "id = 1", True),
    ("id = 1 AND v + 1 = 3", "id = 1", False),
    ("id = 1 OR v + 1 = 3", "TRUE", False),
    ("(id = 1 AND upper(s) = 'A') OR v = 2", "(id = 1 OR v = 2)", False),
    ("v BETWEEN 1 AND 3 AND length(s) > 2", "v BETWEEN 1 AND 3", False),
    ("NOT (v + 1 = 3)", "TRUE", False),
    ("s = 'a AND b' AND abs(v) = 1", "s = b'a AND b'", False),
    ("ID = 1", "TRUE", False),
    ("st IS NULL OR id = 2", "TRUE", False),  # nested columns have no index nor statistics
    ("st IS NULL AND id = 2", "id = 2", False),  # Spark resolves it case-insensitively; we cannot tell: TRUE
    (None, "TRUE", True),
    # cut on sql.py's tokens, read as Spark reads them
    (r"s = 'a\' OR v = 1' AND abs(id) = 2", "s = b\"a' OR v = 1\"", False),  # escaped quote
    (r"(s = 'a\')' OR upper(s) = 'B') AND v = 1", "v = 1", False),
    ("CASE WHEN v = 1 AND id = 2 AND s = 'a' THEN 0 ELSE 1 END = 1 AND v = 4", "v = 4", False),
    ('`v` = 1 OR (id = 2 AND abs(v) = 1 AND `s` IN ("(", "x"))', "(v = 1 OR (id = 2 AND s IN (b'(', b'x')))",
     False),
    ("v = 1 -- OR id = 2", "v = 1", True),
])
def test_conservative_predicate(text: str | None, expected: str, exact: bool) -> None:
    predicate, is_exact = conservative_predicate(text, SPARK_ONLY)
    assert (str(predicate), is_exact) == (expected, exact)
    assert predicate is not None and (predicate is ALWAYS_TRUE) == (expected == "TRUE")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_topn_bound_against_a_model(tmp_path: Path, seed: int) -> None:
    """The bound is never better than the k-th best live value (NumPy over the live rows), and
    equals it: ties, NULLs, deleted best values, BIGINT and SMALLINT keys, several files."""
    from paimon_index.table.scan import topn_bound

    rng = np.random.default_rng(seed)
    schema = pa.schema([("id", pa.int64()), ("big", pa.int64()), ("small", pa.int16())])
    t = create_table(str(tmp_path), "db.b", schema, options={
        "bucket": "-1", "deletion-vectors.enabled": "true", "file-index.range-bitmap.columns": "big,small"})
    for k in range(3):
        n = int(rng.integers(1, 40))
        ids = np.arange(k * 100, k * 100 + n)
        big = rng.integers(-2**62, 2**62, n) if seed == 3 else rng.integers(-5, 6, n)  # ties unless wide
        write_arrow(t, pa.table({"id": ids, "big": pa.array(big, mask=rng.random(n) < 0.2),
                                 "small": pa.array(rng.integers(-300, 300, n).astype(np.int16),
                                                   mask=rng.random(n) < 0.2)}, schema=schema))
    live = read_arrow(t, "TRUE")[0]
    top = pc.max(live["big"]).as_py()
    gone = ", ".join(str(i) for i in live["id"].to_pylist()[::5])
    delete_arrow(t, f"big = {top} OR id IN ({gone})")  # the best values go, the vector matters
    live = read_arrow(t, "TRUE")[0]
    plan = plan_read(t, None)
    for column in ("big", "small"):
        values = np.sort(live[column].drop_null().to_numpy())
        for k in (1, 3, 10, len(values), len(values) + 1):
            for ascending in (True, False):
                bound = topn_bound(plan, column, k, ascending=ascending)
                if k > len(values) or k == 0:
                    assert bound is None
                    continue
                assert bound == (values[k - 1] if ascending else values[-k]), (column, k, ascending)
    assert topn_bound(plan_read(t, "id > 3"), "big", 1, ascending=False) is None  # a WHERE: no bound


@pytest.mark.parametrize("where", ["s = 's2-1'", "s = 's1-0' OR id = 170", "s IN ('s0-0', 's3-2') AND v <> 1",
                                   "s = 's1-0'"])
def test_index_rows_minus_a_bitmap_vector_equal_the_positions_lookup(table: Any, where: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A 32-bit vector splits the index's rows into kept and deleted with roaring's AND / AND-NOT;
    every other vector by a lookup of sorted positions: the same split."""
    from paimon_index.table import files

    def split(plan: Any) -> list[tuple[Any, ...]]:
        return [(f.name, None if f.selected is None else f.selected.tolist(),
                 None if f.kept_deleted is None else f.kept_deleted.tolist(), f.deletion_needed)
                for f in plan.files]

    by_bitmap = split(plan_read(table, where))
    assert any(kept_deleted for _, _, kept_deleted, _ in by_bitmap)  # the vectors hit some index rows
    monkeypatch.setattr(files, "BitmapDeletionVector", type("NoVectorIsOne", (), {}))
    assert split(plan_read(table, where)) == by_bitmap
