"""A tiny run of benchmarks/maintenance.py (our side, every step): it keeps running and stays right.

The connector's side is not run here (a JVM of its own; ``tests/sqlref`` checks the same statements
against it); our results must equal the benchmark's pyarrow model of the sequence.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks import maintenance

pytestmark = pytest.mark.spark


def test_steps_pick_every_earlier_step_of_the_same_table_only() -> None:
    all_steps = maintenance.steps(1000, 4)
    picked = [s.name for s in maintenance.selected(all_steps, {"delete"})]
    assert picked == ["load", "upsert", "read after upsert", "delete"]
    picked = [s.name for s in maintenance.selected(all_steps, {"append delete 30%"})]
    assert picked == ["append compact small", "append read small", "append delete 30%"]
    picked = [s.name for s in maintenance.selected(all_steps, {"mor update"})]
    assert picked == ["mor load", "mor upsert", "mor read after upsert", "mor delete", "mor update"]
    with pytest.raises(SystemExit, match="unknown steps"):
        maintenance.selected(all_steps, {"vacuum"})
    inserts = maintenance.small_inserts(1000, 7)
    assert len(inserts) == 7 and inserts[-1].endswith("id >= 858 AND id < 1000")


def test_model_counts_follow_the_sequence() -> None:
    base, upsert = maintenance.generate(10_000)
    model = maintenance.expected_counts(base, upsert)
    assert model["load"] == 10_000
    assert model["upsert"] == 10_000 + 100  # 1% new keys; the 10% updates replace rows
    assert model["delete"] < model["upsert"]
    assert 2_000 < model["append delete 30%"] < 8_000  # ~70% kept
    assert model["read after upsert"] > 0


@pytest.mark.slow
def test_our_side_runs_every_step_and_matches_the_model(spark, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    built = maintenance.build(tmp_path, 3000)
    run_steps = maintenance.steps(built.rows, 4)
    prog = maintenance.program(run_steps)
    outcome = maintenance.run_ours(spark, maintenance.fresh_warehouse(built, "ours"), prog)
    sides = {"ours[2]": outcome}
    assert maintenance.wrong_answers(run_steps, sides, built.model) == []
    for step in run_steps:  # measured, or refused as documented (append compaction before it lands)
        assert (outcome.seconds[step.name] is None) == (step.name in outcome.refused)
        assert step.name not in outcome.refused or step.refusable
    maintenance.print_table(run_steps, sides, [], ["ours[2]"], built, 4)
    out = capsys.readouterr().out
    assert "full compaction" in out and "append read 30%" in out and "mor read after compact" in out
    # The UPDATE touched no 'HELD' row: the merge-on-read table's read equals the primary-key one's.
    merged = outcome.result["mor read after compact"]["rows"]
    vectors = outcome.result["read after compact"]["rows"]
    assert merged and sorted(merged) == sorted(vectors)
