"""The command line: build, inspect, eval and topn, JSON out, errors with exit status 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from goldens import GOLDEN, load_case
from paimon_index.cli import main

SCHEMA = "id BIGINT, status STRING, score INT"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict | None, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.parquet"
    pq.write_table(pa.table({
        "id": pa.array([10, 11, 12, 13, 14, 15], pa.int64()),
        "status": pa.array(["a", "b", None, "a", "it's", "b"]),
        "score": pa.array([5, 50, 60, None, 90, 50], pa.int32()),
    }), path)
    return path


def test_build_inspect_eval(capsys: pytest.CaptureFixture[str], data_file: Path, tmp_path: Path) -> None:
    index = tmp_path / "data.parquet.index"
    code, out, _ = run(capsys, "file-index", "build", str(data_file), str(index),
                       "-o", "file-index.bitmap.columns=status",
                       "-o", "file-index.bloom-filter.columns=id",
                       "-o", "file-index.bloom-filter.id.items=100")
    assert code == 0 and out is not None
    assert out["rows"] == 6 and out["bytes"] == index.stat().st_size
    built = {(i["column"], i["type"]) for i in out["indexes"]}
    assert built == {("status", "bitmap"), ("id", "bloom-filter")}

    code, out, _ = run(capsys, "file-index", "inspect", str(index), "--schema", SCHEMA)
    assert code == 0 and out is not None
    summaries = {i["type"]: i["summary"] for i in out["indexes"]}
    assert summaries["bitmap"]["rows"] == 6 and summaries["bitmap"]["distinct_values"] == 3
    assert summaries["bitmap"]["null_rows"] == 1 and summaries["bloom-filter"]["hash_functions"] >= 1

    def where(text: str) -> dict | None:
        code, out, err = run(capsys, "file-index", "eval", str(index), "--schema", SCHEMA, "--where", text)
        assert code == 0, err
        return out

    assert where("status = 'a'") == {"result": "ROWS", "rows": [0, 3]}
    assert where("status = 'it''s'") == {"result": "ROWS", "rows": [4]}
    assert where("status <> 'a'") == {"result": "ROWS", "rows": [1, 2, 4, 5]}  # Paimon keeps NULL rows
    assert where("status IS NULL OR status = 'b'") == {"result": "ROWS", "rows": [1, 2, 5]}
    assert where("status = 'zzz'") == {"result": "SKIP"}
    assert where("id = 999999") == {"result": "SKIP"}
    assert where("id = 12") == {"result": "REMAIN"}
    assert where("score > 10") == {"result": "REMAIN"}  # no index on score
    assert where("id = 12 AND status = 'b'") == {"result": "ROWS", "rows": [1, 5]}


def test_errors_go_to_stderr_with_status_2(capsys: pytest.CaptureFixture[str], data_file: Path,
                                           tmp_path: Path) -> None:
    index = tmp_path / "x.index"
    code, out, err = run(capsys, "file-index", "build", str(data_file), str(index),
                         "-o", "file-index.bitmap.columns=nope")
    assert code == 2 and out is None and "column 'nope' does not exist" in err
    code, _, err = run(capsys, "file-index", "build", str(data_file), str(index))
    assert code == 2 and "no index requested" in err
    code, _, _ = run(capsys, "file-index", "build", str(data_file), str(index),
                     "-o", "file-index.bitmap.columns=status")
    assert code == 0
    code, _, err = run(capsys, "file-index", "eval", str(index), "--schema", SCHEMA, "--where", "id = = 1")
    assert code == 2 and "position" in err
    code, _, err = run(capsys, "file-index", "eval", str(index), "--schema", SCHEMA, "--where", "nope = 1")
    assert code == 2 and "unknown column 'nope'" in err
    index.write_bytes(b"\x00" * 30)
    code, _, err = run(capsys, "file-index", "eval", str(index), "--schema", SCHEMA, "--where", "id = 1")
    assert code == 2 and f"{index}@0: magic: not a file index" in err


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="golden files absent")
@pytest.mark.parametrize(("name", "where", "java"), [
    ("int_small__bitmap_v2", "c = 5", [0, 3, 6, 15]),
    ("int_small__bitmap_v1", "c <> 7", [0, 1, 2, 3, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19]),
    ("string_small__bitmap_v2", "c IN ('apple', 'é')", [0, 3, 6, 10, 17]),
    ("string_small__bitmap_v2", "c IS NULL", [2, 11]),
    ("int_small__bloom_i64_f05", "c = 1000", "SKIP"),
])
def test_golden_sample_through_the_cli(capsys: pytest.CaptureFixture[str], name: str, where: str,
                                       java: list[int] | str) -> None:
    case = load_case(name)
    type_name = str(case.dtype)
    code, out, err = run(capsys, "file-index", "eval", str(case.path / "index.bin"),
                         "--schema", f"c {type_name}", "--where", where)
    assert code == 0, err
    expected = {"result": java} if isinstance(java, str) else {"result": "ROWS", "rows": java}
    assert out == expected


def test_console_script_is_installed(data_file: Path, tmp_path: Path) -> None:
    exe = shutil.which("paimon-index", path=str(Path(sys.executable).parent))
    assert exe is not None, "the paimon-index console script is not installed"
    index = tmp_path / "d.index"
    argv = [exe, "file-index", "build", str(data_file), str(index), "-o", "file-index.bitmap.columns=score"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["indexes"][0]["type"] == "bitmap"


@pytest.mark.skipif(not GOLDEN.is_dir(), reason="golden files absent")
@pytest.mark.parametrize("name", ["dv32", "dv64"])
def test_dv_inspect_and_read_give_javas_ranges_and_positions(capsys: pytest.CaptureFixture[str],
                                                            name: str) -> None:
    root = GOLDEN / "dv"
    code, out, err = run(capsys, "dv", "inspect", str(root / f"{name}.bin"), "--positions")
    assert code == 0, err
    assert isinstance(out, list)
    expected = [line.split("\t") for line in (root / f"{name}.expected.tsv").read_text().splitlines() if line]
    assert [(v["offset"], v["length"], v["cardinality"]) for v in out] == [
        (int(e[1]), int(e[2]), int(e[3])) for e in expected]
    assert {v["format"] for v in out} == {32 if name == "dv32" else 64}
    for vector, row in zip(out, expected, strict=True):
        listed = row[4] if len(row) > 4 else ""
        java_positions = [int(p) for p in listed.split(",")] if listed not in ("", "-") else []
        assert vector["positions"] == java_positions
        code, one, _ = run(capsys, "dv", "read", str(root / f"{name}.bin"),
                           "--offset", str(vector["offset"]), "--length", str(vector["length"]))
        assert code == 0 and one is not None and one["positions"] == java_positions
