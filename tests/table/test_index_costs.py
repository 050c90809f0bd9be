"""The read plan's cost decisions (table/files.py ``weigh_index``): an index body is read only when
its answer can change the plan -- never when the value statistics already prove it useless, still
when it can skip a file -- and the answers never change.

Reads are counted through the table's FileIO (every ``.index`` byte a parser asks for) and the
plan's :class:`~paimon_index.table.files.ScanReport` (``index_uses``: per file, read and not read).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_index.fileindex.evaluate import answers
from paimon_index.fileindex.format import HEAD_CHUNK_BYTES, ContainerReader
from paimon_index.predicate import Op
from paimon_index.table.aggregate import count_rows
from paimon_index.table.catalog import create_table
from paimon_index.table.files import (
    INDEX_SKIP_UNLIKELY_ROWS,
    STATS_ALL_MATCH,
    STATS_SOME_MATCH,
    ScanReport,
    weigh_index,
)
from paimon_index.table.metacache import metadata_cache
from paimon_index.table.read import read_arrow
from paimon_index.table.row_level import delete_arrow
from paimon_index.table.scan import bind_where, plan_read
from paimon_index.table.schemas import read_schema
from paimon_index.table.stats import ColumnStats, stats_all_match, stats_fraction, stats_some_match
from paimon_index.table.write import write_arrow

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("s", pa.string())])
OPTIONS = {"bucket": "-1", "file-index.bloom-filter.columns": "id", "file-index.range-bitmap.columns": "x",
           "file-index.bitmap.columns": "s",
           "file-index.in-manifest-threshold": "64b"}  # every container is a <data-file>.index file
ROWS = 4_000


def _rows(first_id: int, x: np.ndarray) -> pa.Table:
    ids = np.arange(first_id, first_id + len(x), dtype=np.int64)
    return pa.table({"id": ids, "x": x.astype(np.int64), "s": np.where(ids % 2 == 0, "a", "b")},
                    schema=SCHEMA)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two files: ``gap`` holds x in [0, 2000) and [8000, 10000) (min/max 0..9999, nothing between),
    ``dense`` holds x in [0, 4000)."""
    t = create_table(str(tmp_path_factory.mktemp("costs")), "db.t", SCHEMA, options=OPTIONS)
    write_arrow(t, _rows(0, np.concatenate([np.arange(0, 2000), np.arange(8000, 10000)])))
    write_arrow(t, _rows(ROWS, np.arange(0, ROWS)))
    return t


class _Counting:
    """The table's FileIO with the bytes read from ``.index`` files counted."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.index_bytes: Counter[str] = Counter()

    def new_input_stream(self, path: str) -> Any:
        stream = self._inner.new_input_stream(path)
        if not path.endswith(".index"):
            return stream
        counts, name = self.index_bytes, path

        class Stream:
            def read(self, *args: Any) -> Any:
                data = stream.read(*args)
                counts[name] += len(data)
                return data

            def __getattr__(self, attr: str) -> Any:
                return getattr(stream, attr)

            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: object) -> None:
                stream.close()

        return Stream()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _counted(t: Any, run: Any) -> tuple[Any, int]:
    """(``run()``, the ``.index`` bytes it read), parsed containers not reused from earlier calls."""
    metadata_cache().clear()
    counting = _Counting(t.file_io)
    original, t.file_io = t.file_io, counting
    try:
        return run(), sum(counting.index_bytes.values())
    finally:
        t.file_io = original


def _names(plan: Any) -> list[int]:
    """The first id of each planned file (0: gap, ROWS: dense)."""
    return sorted(0 if f.row_count and _which(f) == "gap" else ROWS for f in plan.files)


def _which(f: Any) -> str:
    import pyarrow.parquet as pq

    return "gap" if pq.read_table(f.path, columns=["id"])["id"][0].as_py() == 0 else "dense"


def _use(report: ScanReport, which: str, t: Any) -> Any:
    plan = plan_read(t, None, use_index=False)
    name = next(f.name for f in plan.files if _which(f) == which)
    return next(u for u in report.index_uses if u.file == name)


# -- proofs: no body read -----------------------------------------------------------------------------
def test_no_index_body_is_read_when_the_statistics_prove_every_row_matches(table: Any) -> None:
    plan, read = _counted(table, lambda: plan_read(table, "x >= 0 AND s IS NOT NULL"))
    assert read == 0 and plan.report.index_bytes_read == 0 and plan.report.index_bodies_read == 0
    assert len(plan.files) == 2 and all(f.exact and f.selected is None for f in plan.files)
    for which in ("gap", "dense"):
        use = _use(plan.report, which, table)
        assert not use.read and {(c, why) for c, _, why in use.not_read} == {
            ("x", STATS_ALL_MATCH), ("s", STATS_ALL_MATCH)}
    # What it was worth before: the bodies are real, and asked they answer "every row".
    _, asked = _counted(table, lambda: plan_read(table, "x >= 1"))
    assert asked > 0


def test_a_proven_leaf_is_left_out_and_the_others_still_read(table: Any) -> None:
    plan = plan_read(table, "x >= 0 AND s = 'a'")
    for which in ("gap", "dense"):
        use = _use(plan.report, which, table)
        assert [(c, t) for c, t, _ in use.read] == [("s", "bitmap")]
        assert ("x", "", STATS_ALL_MATCH) in use.not_read
    assert all(f.exact and f.selected is not None and len(f.selected) == ROWS // 2 for f in plan.files)


def test_a_count_the_statistics_prove_reads_no_index_and_no_data(table: Any) -> None:
    (count, report), read = _counted(table, lambda: count_rows(table, "x BETWEEN 0 AND 10000"))
    assert count == 2 * ROWS and read == 0
    assert report.files_read == 0 and report.files_answered_by_index == 2


def test_an_index_type_that_cannot_answer_the_operator_is_not_read(tmp_path: Any) -> None:
    assert not answers("bloom-filter", Op.GT) and answers("bloom-filter", Op.IN)
    assert answers("range-bitmap", Op.BETWEEN) and not answers("bitmap", Op.LT)
    t = create_table(str(tmp_path), "db.big", SCHEMA, options=OPTIONS)
    rng = np.random.default_rng(5)
    n = 200_000  # a Bloom filter body well past the first request's HEAD_CHUNK_BYTES
    write_arrow(t, pa.table({"id": rng.permutation(n).astype(np.int64), "x": np.zeros(n, np.int64),
                             "s": ["a"] * n}, schema=SCHEMA))
    (f,) = plan_read(t, None, use_index=False).files
    assert isinstance(f.index, str)
    with ContainerReader(f.index) as container:
        (bloom,) = container.column_entries("id")
    assert bloom.length > HEAD_CHUNK_BYTES
    plan, read = _counted(t, lambda: plan_read(t, "id > 100"))
    assert read <= HEAD_CHUNK_BYTES < bloom.length, read  # only the head chunk: no Bloom filter body
    (use,) = plan.report.index_uses
    assert not use.read and use.not_read == (("id", "bloom-filter", "the index type cannot answer >"),)
    assert read_arrow(t, "id > 100")[0].num_rows == n - 101


# -- whole files: read only where a skip is possible -----------------------------------------------
def test_whole_files_do_not_read_an_index_that_cannot_skip_or_likely_will_not(table: Any) -> None:
    where = "x BETWEEN 3000 AND 7000"
    plan, read = _counted(table, lambda: plan_read(table, where, whole_files=True))
    assert read == 0 and plan.report.files_skipped_by_index == 0 and len(plan.files) == 2
    gap, dense = _use(plan.report, "gap", table), _use(plan.report, "dense", table)
    # gap: min/max 0..9999, ~1600 rows estimated (none there in truth: the rule's documented miss,
    # read whole, never a row lost); dense: its max 3999 is a matching row, no index can skip it.
    assert gap.not_read[0][2].startswith("not worth reading") and not gap.read
    assert dense.not_read == (("x", "", STATS_SOME_MATCH),)
    # A reader that takes the selected rows still asks both indexes; the gap file is skipped.
    rows_plan, rows_read = _counted(table, lambda: plan_read(table, where))
    assert rows_read > 0 and rows_plan.report.files_skipped_by_index == 1
    expected = read_arrow(table, where, use_index=False)[0].num_rows
    assert read_arrow(table, where)[0].num_rows == expected == 1000


def test_whole_files_still_read_an_index_that_can_skip(table: Any) -> None:
    plan, read = _counted(table, lambda: plan_read(table, "x BETWEEN 3000 AND 3010", whole_files=True))
    assert read > 0 and plan.report.files_skipped_by_index == 1  # the gap file: no row in range
    assert [_which(f) for f in plan.files] == ["dense"]
    # Both files asked (~4 and ~11 rows estimated): the range bitmap of each read.
    assert [[(c, t) for c, t, _ in u.read] for u in plan.report.index_uses] == [[("x", "range-bitmap")]] * 2


def test_whole_files_that_may_be_read_small_still_take_the_selections(table: Any) -> None:
    small = (8, 2_000)  # the planned read's SMALL_READ_FILES, SMALL_READ_ROWS
    # ~7 rows estimated over both files: the selections may feed a small read, so both are asked.
    plan = plan_read(table, "x < 5", whole_files=True, small_read=small)
    assert plan.report.index_bodies_read == 2 and all(f.selected is not None for f in plan.files)
    assert plan_read(table, "x < 5", whole_files=True).report.index_bodies_read == 0
    # ~2,600 estimated: not small, the whole-file rules hold.
    assert plan_read(table, "x BETWEEN 3000 AND 7000", whole_files=True,
                     small_read=small).report.index_bodies_read == 0
    assert plan_read(table, "x < 5", whole_files=True, small_read=(1, 2_000)).report.index_bodies_read == 0


def test_whole_files_with_a_deletion_vector_still_ask_the_index(tmp_path: Any) -> None:
    t = create_table(str(tmp_path), "db.dv", SCHEMA, options={**OPTIONS, "deletion-vectors.enabled": "true"})
    write_arrow(t, _rows(0, np.arange(0, ROWS)))
    delete_arrow(t, "x < 10")
    plan = plan_read(t, "x >= 1000", whole_files=True)  # ~3000 rows estimated, but a vector to spare
    (f,) = plan.files
    assert plan.report.index_bodies_read == 1 and f.selected is not None and not f.deletion_needed


# -- the decisions themselves ------------------------------------------------------------------------
def test_weighing_from_statistics() -> None:
    schema = table_schema_of({"x": "BIGINT", "s": "STRING", "d": "DOUBLE"})
    x = ColumnStats(0, 9_999, 0, 10_000)
    stats = {"x": x, "s": ColumnStats(b"a", b"b", 0, 10_000), "d": ColumnStats(0.0, 1.0, 0, 10_000)}

    def weigh(where: str, *, whole: bool = True, deletions: bool = False) -> Any:
        return weigh_index(bind_where(where, schema), stats, schema, 10_000, whole_files=whole,
                           deletions=deletions)

    assert weigh("x >= 0").every_row and weigh("x <= 9999 AND s IS NOT NULL").every_row
    assert weigh("x BETWEEN 0 AND 9999 OR x = 5").every_row
    assert not weigh("x > 0").every_row  # min 0 does not match
    assert not weigh("d >= 0").every_row  # FLOAT/DOUBLE: NaN may hide behind any max
    assert weigh("x > 0", whole=False).asked == bind_where("x > 0", schema)  # a selection is wanted
    assert str(weigh("x > 0").asked) == "TRUE" and weigh("x > 0").not_asked[0][1] == STATS_SOME_MATCH
    assert weigh("x > 0", deletions=True).asked == bind_where("x > 0", schema)
    # Point lookups are never estimated: the index is read.
    assert weigh("x = 4321").asked == bind_where("x = 4321", schema)
    assert weigh("s = 'ab'").asked == bind_where("s = 'ab'", schema)
    # A narrow range (few rows expected) is read, a wide one (a skip unlikely) is not.
    narrow = f"x BETWEEN 100 AND {100 + INDEX_SKIP_UNLIKELY_ROWS // 2}"
    wide = f"x BETWEEN 100 AND {100 + INDEX_SKIP_UNLIKELY_ROWS * 2}"
    assert weigh(narrow).asked == bind_where(narrow, schema)
    assert str(weigh(wide).asked) == "TRUE"
    # An AND with a leaf that cannot be estimated is read (that leaf may match no row).
    assert weigh(f"{wide} AND s = 'ab'").asked == bind_where(f"{wide} AND s = 'ab'", schema)
    # A leaf that matches no row of the file drops out of an OR.
    assert weigh("x > 20000 OR s = 'ab'", whole=False).asked == bind_where("s = 'ab'", schema)


def test_statistics_proofs_are_never_claimed_without_proof() -> None:
    schema = table_schema_of({"x": "BIGINT", "s": "STRING"})
    nulls = {"x": ColumnStats(0, 10, 3, 100)}
    x = bind_where("x >= 0", schema)
    assert not stats_all_match(x, nulls, schema)  # a NULL row matches no comparison
    assert stats_some_match(x, nulls, schema)
    assert not stats_all_match(x, {}, schema) and not stats_some_match(x, {}, schema)
    truncated = {"s": ColumnStats(b"abc", b"abd", 0, 100)}  # string bounds may be truncated
    assert not stats_some_match(bind_where("s = 'abc'", schema), truncated, schema)
    assert stats_all_match(bind_where("s >= 'abc'", schema), truncated, schema)
    both = bind_where("x >= 5 AND x <= 10", schema)
    assert stats_some_match(both, {"x": ColumnStats(0, 10, 0, 100)}, schema)  # max 10 holds both
    assert not stats_some_match(bind_where("x >= 5 AND s = 'a'", schema),
                                {"x": ColumnStats(0, 10, 0, 100)}, schema)
    assert stats_fraction(bind_where("x < 5", schema), {"x": ColumnStats(0, 10, 0, 100)}, schema) == 0.5
    assert stats_fraction(bind_where("x = 5", schema), {"x": ColumnStats(0, 10, 0, 100)}, schema) is None


def table_schema_of(types: dict[str, str]) -> Any:
    from paimon_index.types import parse_type

    return {name: parse_type(t) for name, t in types.items()}


# -- answers never change -----------------------------------------------------------------------------
WHERES = ["x >= 0", "x > 0", "x BETWEEN 3000 AND 7000", "x BETWEEN 3000 AND 3010", "x < 1 OR x > 9998",
          "x >= 0 AND s = 'a'", "id > 100", "id = 77 OR x = 9000", "x BETWEEN 2000 AND 7999",
          "x IS NULL", "x IS NOT NULL AND x <> 5", "x NOT IN (1, 2) AND id < 4010"]


@pytest.mark.parametrize("where", WHERES)
def test_answers_are_the_same_whatever_is_read(table: Any, where: str) -> None:
    def rows(**kw: Any) -> list[dict[str, Any]]:
        return sorted(read_arrow(table, where, **kw)[0].to_pylist(), key=lambda r: r["id"])

    expected = rows(use_index=False)
    assert rows() == expected
    assert count_rows(table, where)[0] == len(expected)
    schema = read_schema(table)
    for whole in (False, True):
        plan = plan_read(table, where, whole_files=whole)
        planned = {f.name: f for f in plan.files}
        full = plan_read(table, None, use_index=False)
        from paimon_index.arrow_filter import to_arrow_expression
        from paimon_index.table.files import read_rows

        for f in full.files:
            rows = read_rows(_io(table), f, bind_where(where, schema), schema, ScanReport())
            if rows.num_rows:
                assert f.name in planned, (where, whole)
                kept = planned[f.name]
                if kept.selected is not None:
                    import pyarrow.parquet as pq

                    data = pq.read_table(f.path).append_column("pos", pa.array(np.arange(f.row_count)))
                    hits = data.filter(to_arrow_expression(bind_where(where, schema), schema))["pos"]
                    assert set(hits.to_pylist()) <= set(kept.selected.tolist()), (where, whole)


def _io(t: Any) -> Any:
    from paimon_index.table.fileio import TableIO

    return TableIO.of(t)
