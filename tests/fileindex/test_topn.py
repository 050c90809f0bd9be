"""TopN from a range-bitmap index: Java's answers and a sorting oracle.

``ORDER BY c ASC|DESC NULLS FIRST|LAST LIMIT k`` (optionally after a predicate) answered as the row
bitmap of the first k rows. Strict (``c`` is the only sort key): exactly k rows, ties at the limit
keep the highest row positions, NULLs filling up the limit are the lowest positions. Non-strict
(more sort keys follow): every row tied at the limit is kept, and every NULL when NULLs are needed.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from goldens import GOLDEN, answer_of, case_names, java_answer, load_case, predicate_from_fields
from paimon_index.errors import InvalidPredicateError
from paimon_index.fileindex.base import SortOrder, TopN
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.fileindex.range_bitmap import RangeBitmapIndex
from paimon_index.fileindex.result import REMAIN, SKIP, Rows
from paimon_index.predicate import ALWAYS_TRUE
from paimon_index.types import CanonicalColumn, DataType, KeyKind, parse_type

CASES = case_names("range-bitmap")
needs_golden = pytest.mark.skipif(not CASES, reason=f"golden files not found at {GOLDEN}")


# ------------------------------------------------------------------------------------------------
# Golden topn files
# ------------------------------------------------------------------------------------------------
def parse_topn_line(line: str, dtype: DataType) -> tuple[TopN, object, str]:
    """``asc|desc  first|last  K  strict|nonstrict  [predicate tokens]  answer``.

    A non-strict line had a second sort key in Java; we add one on another column.
    """
    fields = line.split("\t")
    direction, nulls, k, mode = fields[:4]
    orders = (SortOrder("c", direction == "asc", nulls == "first"),)
    if mode == "nonstrict":
        orders += (SortOrder("other"),)
    predicate = predicate_from_fields(fields[4:-1], {"c": dtype}) if fields[4:-1] else ALWAYS_TRUE
    return TopN(orders, int(k), mode == "strict"), predicate, java_answer(fields[-1])


def topn_lines(path: Path) -> list[str]:
    return [x for x in (path / "topn_expected.tsv").read_text(encoding="utf-8").split("\n") if x]


@needs_golden
@pytest.mark.parametrize("name", CASES)
def test_topn_gives_java_answers(name: str) -> None:
    case = load_case(name)
    lines = topn_lines(case.path)
    assert lines, "a golden case without TopN lines tests nothing"
    assert len(lines) == len((case.path / "topn.txt").read_text().split("\n")) - 1
    mismatches = []
    with ContainerReader(case.path / "index.bin") as container:
        evaluator = FileIndexEvaluator(container, {"c": case.dtype})
        for line in lines:
            topn, predicate, java = parse_topn_line(line, case.dtype)
            result = evaluator.evaluate_topn(topn, evaluator.evaluate(predicate))  # type: ignore[arg-type]
            if answer_of(result) != java:
                mismatches.append(f"{line[:60]}: ours {answer_of(result)[:60]}")
    assert not mismatches, "\n".join(mismatches)


# ------------------------------------------------------------------------------------------------
# Oracle
# ------------------------------------------------------------------------------------------------
def java_order(value: object) -> object:
    if isinstance(value, float):
        return (1, 0.0, True) if math.isnan(value) else (0, value, math.copysign(1.0, value) > 0)
    return value


def topn_oracle(values: list[object], k: int, *, ascending: bool, nulls_first: bool,
                strict: bool, selection: list[int] | None) -> set[int]:
    n = len(values)
    if all(v is None for v in values):
        return set(range(n))  # Java: no value at all -> every row, whatever the selection
    chosen = range(n) if selection is None else sorted(set(selection) & set(range(n)))
    nulls = [i for i in chosen if values[i] is None]
    live = [i for i in chosen if values[i] is not None]

    def best(m: int) -> set[int]:
        if m == 0 or len(live) <= m:
            return set(live) if m else set()
        keys = {i: java_order(values[i]) for i in live}
        ranked = sorted(live, key=keys.__getitem__, reverse=not ascending)
        bound = keys[ranked[m - 1]]
        better = [i for i in live if (keys[i] < bound if ascending else keys[i] > bound)]  # type: ignore[operator]
        tied = [i for i in live if keys[i] == bound]
        kept = tied[len(tied) - (m - len(better)):] if strict else tied
        return set(better) | set(kept)

    if nulls_first:
        if len(nulls) >= k:
            return set(nulls[:k]) if strict else set(nulls)
        return set(nulls) | best(k - len(nulls))
    rows = best(k)
    if len(rows) >= k:
        return rows
    return rows | set(nulls[: k - len(rows)] if strict else nulls)


def canonical(dtype: DataType, values: list[object]) -> CanonicalColumn:
    valid = np.array([v is not None for v in values], dtype=bool)
    if dtype.key_kind is KeyKind.BYTES:
        return CanonicalColumn(dtype, pa.array(values, pa.binary()), valid)
    np_type = np.float64 if dtype.key_kind is KeyKind.FLOAT64 else np.int64
    return CanonicalColumn(dtype, np.array([0 if v is None else v for v in values], dtype=np_type),
                           valid)


def evaluator_for(dtype: DataType, values: list[object]) -> FileIndexEvaluator:
    body = RangeBitmapIndex.create_writer(dtype, {"chunk-size": "8b"}).build(canonical(dtype, values))
    return FileIndexEvaluator(ContainerReader(write_container({"c": {"range-bitmap": body}})),
                              {"c": dtype})


VALUES = {
    "INT": st.integers(-3, 3),
    "DOUBLE": st.sampled_from([0.0, -0.0, math.nan, 1.5, -1.5, math.inf, -math.inf]),
    "STRING": st.sampled_from(["", "a", "b", "é", "日本"]).map(lambda s: s.encode("utf-8")),
}


@pytest.mark.parametrize("type_name", list(VALUES))
def test_topn_equals_sorting_the_live_rows(type_name: str) -> None:
    dtype = parse_type(type_name)

    @given(st.lists(st.one_of(st.none(), VALUES[type_name]), max_size=40), st.data())
    @settings(max_examples=60, deadline=None)
    def check(values: list[object], data: st.DataObject) -> None:
        evaluator = evaluator_for(dtype, values)
        reader = evaluator.reader(evaluator.container.entries[0])
        assert reader is not None
        for _ in range(8):
            k = data.draw(st.integers(0, len(values) + 3))
            ascending, nulls_first, strict = (data.draw(st.booleans()) for _ in range(3))
            selection = data.draw(st.one_of(st.none(), st.lists(
                st.integers(0, max(len(values) - 1, 0)), unique=True)))
            orders = (SortOrder("c", ascending, nulls_first),) + (() if strict else (SortOrder("d"),))
            topn = TopN(orders, k, strict)
            found = REMAIN if selection is None else Rows(BitMap(selection))
            expected = topn_oracle(values, k, ascending=ascending, nulls_first=nulls_first,
                                   strict=strict, selection=selection)
            got = reader.visit_topn(topn, found)
            assert isinstance(got, Rows)
            assert set(got.bitmap) == expected, (k, ascending, nulls_first, strict, selection)
            if strict and any(v is not None for v in values):
                available = len(values) if selection is None else len(selection)
                assert len(got.bitmap) == min(k, available)
            # through the evaluator: a selection already within the limit is returned as is
            via = evaluator.evaluate_topn(topn, found)
            if selection is not None and len(selection) <= k:
                assert via is found
            else:
                assert isinstance(via, Rows) and set(via.bitmap) == expected

    check()


def test_large_column_ties_keep_highest_positions() -> None:
    rng = np.random.default_rng(11)
    n = 100_000
    values = rng.integers(0, 50, n)
    valid = rng.random(n) > 0.05
    dtype = parse_type("INT")
    body = RangeBitmapIndex.create_writer(dtype, {}).build(CanonicalColumn(dtype, values, valid))
    ev = FileIndexEvaluator(ContainerReader(write_container({"c": {"range-bitmap": body}})),
                            {"c": dtype})
    live = np.flatnonzero(valid)
    for k in (1, 10, 1_000, 5_000):
        for ascending in (True, False):
            topn = TopN((SortOrder("c", ascending, False),), k, True)
            got = ev.evaluate_topn(topn)
            assert isinstance(got, Rows) and len(got.bitmap) == k
            order = np.lexsort((-live, values[live] if ascending else -values[live]))
            # ties at the limit: highest positions first, i.e. sort ties by descending position
            assert set(got.bitmap) == set(live[order[:k]].tolist())


def test_edge_cases() -> None:
    dtype = parse_type("INT")
    empty = evaluator_for(dtype, [None, None, None])
    topn = TopN((SortOrder("c"),), 1)
    # no value at all: Java answers every row, even outside the selection ...
    assert answer_of(empty.evaluate_topn(topn, Rows(BitMap([2, 1])))) == "ROWS 0,1,2"
    # ... unless the selection is already within the limit (the evaluator returns it as is)
    assert answer_of(empty.evaluate_topn(topn, Rows(BitMap([2])))) == "ROWS 2"
    assert empty.evaluate_topn(topn, SKIP) is SKIP
    ev = evaluator_for(dtype, [3, None, 1])
    reader = ev.reader(ev.container.entries[0])
    assert reader is not None
    with pytest.raises(InvalidPredicateError, match="negative"):
        answer_of(reader.visit_topn(TopN((SortOrder("c"),), -1), REMAIN))
    assert answer_of(ev.evaluate_topn(TopN((SortOrder("c", True, False),), 2))) == "ROWS 0,2"
    assert answer_of(ev.evaluate_topn(TopN((SortOrder("c", False, True),), 2))) == "ROWS 0,1"
    assert ev.evaluate_topn(None) is REMAIN
