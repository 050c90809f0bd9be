"""The differential harness's own rules: statement files, ORDER BY detection, result equality."""

from __future__ import annotations

from pathlib import Path

from sqlref.harness import differences, has_top_level_order_by, statements, values_equal


def test_statements_split_name_and_tag(tmp_path: Path) -> None:
    f = tmp_path / "g.sql"
    f.write_text("-- header; with 'quotes\n-- name: one ci\nSELECT ';' AS x;\nSELECT 2\n  AS y;\n"
                 "-- name: three final\nSELECT `a;b` FROM t")
    got = statements(f)
    assert [(s.name, s.text, s.ci, s.final) for s in got] == [
        ("one", "SELECT ';' AS x", True, False), ("g:2", "SELECT 2\n  AS y", False, False),
        ("three", "SELECT `a;b` FROM t", False, True)]


def test_top_level_order_by() -> None:
    assert has_top_level_order_by("SELECT a FROM t ORDER BY a")
    assert has_top_level_order_by("SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY a")
    assert not has_top_level_order_by("SELECT * FROM (SELECT a FROM t ORDER BY a LIMIT 3) s")
    assert not has_top_level_order_by("SELECT row_number() OVER (ORDER BY a) FROM t")
    assert not has_top_level_order_by("WITH x AS (SELECT a FROM t ORDER BY a) SELECT * FROM x")


def test_values_equal() -> None:
    assert values_equal("1.50", "1.5")  # DECIMAL by value
    assert not values_equal("1.50", "1.51")
    assert values_equal(float("nan"), float("nan"))
    assert values_equal(1.0, 1.0 + 1e-12)
    assert not values_equal(1.0, 1.0 + 1e-6)
    assert values_equal(None, None)
    assert not values_equal(None, 0)
    assert not values_equal("a", "b")
    assert values_equal(-0.0, 0.0)


def test_differences() -> None:
    ref = {"columns": ["a", "b"], "rows": [[1, "x"], [2, None]]}
    assert differences(ref, {"columns": ["a", "b"], "rows": [[2, None], [1, "x"]]}, ordered=False) == ""
    assert differences(ref, {"columns": ["a", "b"], "rows": [[2, None], [1, "x"]]}, ordered=True)
    assert differences(ref, {"columns": ["a", "c"], "rows": ref["rows"]}, ordered=False)
    assert differences(ref, {"columns": ["a", "b"], "rows": [[1, "x"]]}, ordered=False)
    assert differences(ref, {"columns": ["a", "b"], "rows": [[1, "x"], [2, "y"]]}, ordered=False)
