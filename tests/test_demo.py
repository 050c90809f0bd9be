"""The main job runs end to end on a small table and every query agrees with a full scan."""

from __future__ import annotations

from pathlib import Path

import pytest

from paimon_index.demo import QUERIES, run_demo


def test_demo_queries_match_a_full_scan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_demo(warehouse=tmp_path, rows=40_000, spark=False)  # the Spark source has its own tests
    out = capsys.readouterr().out
    assert out.count("same as full scan") == len(QUERIES)
    assert "same as full sort" in out and "MISMATCH" not in out
    index_files = sorted((tmp_path / "demo.db" / "orders").rglob("*.parquet.index"))
    assert index_files, "large containers are written beside their data files"
    assert "FILE" in out
    assert "7 of 8" in out  # the Bloom filter on id leaves one file for a point lookup
    assert "rows -> 0" in out  # the DELETE through deletion vectors
    assert "region:bloom-filter" in out.split("after:")[1]  # rewrite_file_index applied the new options
    assert "still agree with a full scan" in out
    assert "same as the model and pypaimon" in out  # the primary-key table in DV mode
    assert "expired snapshots" in out and "orphan files removed" in out
    assert "the latest snapshots read the same" in out  # maintenance removed nothing the latest needs
