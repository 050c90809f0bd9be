"""rewrite_file_index as one Spark job whose tasks carry about equal bytes."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_index.spark import jobs
from paimon_index.spark._tasks import balanced_groups
from paimon_index.table.catalog import alter_table_options, create_table, open_table
from paimon_index.table.system import file_indexes
from paimon_index.table.write import write_arrow

BUCKETS = 60  # one write, one file per bucket
ROWS = 6_000


@pytest.mark.spark
def test_sixty_files_are_rewritten_by_one_job(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    table = create_table(warehouse, "db.t", "id BIGINT, tag STRING",
                         options={"bucket": str(BUCKETS), "bucket-key": "id"})
    ids = list(range(ROWS))
    write_arrow(table, pa.table({"id": pa.array(ids, pa.int64()), "tag": [str(i % 7) for i in ids]}))
    alter_table_options(warehouse, "db.t", set_options={"file-index.bloom-filter.columns": "id"})
    sc = spark.sparkContext
    group = f"rewrite-{tmp_path.name}"
    sc.setJobGroup(group, "rewrite_file_index of 60 files")
    try:
        snapshot = jobs.rewrite_file_index(spark, "db.t", warehouse=warehouse, progress=False).snapshot_id
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert len(sc.statusTracker().getJobIdsForGroup(group)) == 1  # was one job per file
    assert snapshot == 2
    listing = file_indexes(open_table(warehouse, "db.t")).to_pylist()
    assert len({r["file_path"] for r in listing if r["index_type"] == "bloom-filter"}) == BUCKETS


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 10**9), min_size=1, max_size=100), st.integers(1, 16))
def test_groups_are_balanced_and_complete(sizes: list[int], groups: int) -> None:
    got = balanced_groups(sizes, groups)
    assert sorted(i for g in got for i in g) == list(range(len(sizes)))  # every file once
    assert len(got) == min(groups, len(sizes)) and all(got)
    # LPT's guarantee: the heaviest group is at most 4/3 of the best split, which weighs at least
    # the largest file, an even share, and (more files than groups) two of the len(got) + 1
    # largest files sharing a group: [5, 5, 5, 5] in 3 groups is best split as 10, not 6.7.
    largest = sorted(sizes, reverse=True)
    pair = largest[len(got) - 1] + largest[len(got)] if len(sizes) > len(got) else 0
    best_bound = max(largest[0], sum(sizes) / len(got), pair)
    assert max(sum(sizes[i] for i in g) for g in got) <= 4 / 3 * best_bound + 1


def test_zero_groups_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        balanced_groups([1], 0)
