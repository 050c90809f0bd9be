"""Bloom filter and Bitmap indexes against files and answers produced by Apache Paimon (Java).

Both directions: our reader on Java's bytes gives Java's answer to every golden predicate, and our
writer on the golden values gives Java's bytes (index body and whole container).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from goldens import (
    GOLDEN,
    answer_of,
    case_names,
    golden_dir,
    golden_type,
    java_answer,
    load_case,
    predicate_from_fields,
)
from paimon_index.errors import PaimonIndexError
from paimon_index.fileindex.builder import build_index_bodies, container_order
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.types import DataType

CASES = case_names("bloom-filter") + case_names("bitmap")


def _table_options(index_type: str, options: dict[str, str]) -> dict[str, str]:
    out = {f"file-index.{index_type}.columns": "c"}
    out.update({f"file-index.{index_type}.c.{k}": v for k, v in options.items()})
    return out


def _agrees(java: str, ours: str) -> bool:
    # Java throws on a few inputs (bloom IN []); ours may answer REMAIN or raise our own error.
    if java.startswith("ERROR"):
        return ours == "REMAIN" or ours.startswith("ERROR")
    return java == ours


@pytest.mark.skipif(not CASES, reason=f"golden files not found at {GOLDEN}")
@pytest.mark.parametrize("name", CASES)
def test_reader_gives_java_answers(name: str) -> None:
    case = load_case(name)
    mismatches = []
    with ContainerReader(case.path / "index.bin") as container:
        evaluator = FileIndexEvaluator(container, {"c": case.dtype})
        for text, predicate, java in case.expectations():
            try:
                # java_order: the index's own answer in Java's float order; Spark's order (-0.0 = 0.0)
                # widens it, checked in tests/test_semantics_differential.py.
                ours = answer_of(evaluator.evaluate(predicate, java_order=True))
            except PaimonIndexError as e:
                ours = f"ERROR {e}"
            if not _agrees(java, ours):
                mismatches.append(f"{text}: java {java[:60]} ours {ours[:60]}")
    assert not mismatches, "\n".join(mismatches)
    assert case.expectations(), "a golden case without predicates tests nothing"


@pytest.mark.skipif(not CASES, reason=f"golden files not found at {GOLDEN}")
@pytest.mark.parametrize("name", CASES)
def test_writer_gives_java_bytes(name: str) -> None:
    case = load_case(name)
    table = pa.table({"c": case.arrow()})
    bodies = build_index_bodies(table, _table_options(case.index_type, case.options), {"c": case.dtype})
    assert bodies["c"][case.index_type] == (case.path / "index.raw").read_bytes()
    assert write_container(bodies) == (case.path / "index.bin").read_bytes()


def _mixed_schema() -> dict[str, DataType]:
    """The row type the mixed container is read with (``--col name:type`` tokens)."""
    root = golden_dir() / "fileindex-multi" / "mixed"
    tokens = (root / "eval_columns.txt").read_text().split()
    return {name: golden_type(t) for name, t in (tok.split(":") for tok in tokens if tok != "--col")}


def test_multi_column_container_answers_and_layout() -> None:
    """Several columns and index types in one container, as Paimon's data-file writer lays them out."""
    root = golden_dir() / "fileindex-multi" / "mixed"
    schema = _mixed_schema()
    with ContainerReader(root / "index.bin") as container:
        layout = [(e.column, e.index_type, e.start, e.length) for e in container.entries]
        java_layout = []
        for line in (root / "header.txt").read_text().splitlines()[1:]:
            parts = line.split()
            if len(parts) == 4 and not line.startswith(("meta", "redundant")):
                java_layout.append((parts[0], parts[1], int(parts[2]), int(parts[3])))
        assert layout == java_layout
        evaluator = FileIndexEvaluator(container, schema)
        checked = 0
        for line in (root / "expected.tsv").read_text(encoding="utf-8").splitlines():
            fields = line.split("\t")
            columns = {f.split(".")[0] for f in fields[:-1] if "." in f and f not in ("AND", "OR")}
            types = {e.index_type for c in columns for e in container.column_entries(c)}
            if types - {"bloom-filter", "bitmap"}:
                continue  # range-bitmap and bsi columns are covered by their own tests
            predicate = predicate_from_fields(fields[:-1], schema)
            ours = answer_of(evaluator.evaluate(predicate, java_order=True))
            assert _agrees(java_answer(fields[-1]), ours), line
            checked += 1
        assert checked >= 10


def test_multi_column_container_order_matches_java() -> None:
    """Our builder replays Paimon's HashMap order: same head, byte for byte, given Java's bodies."""
    root = golden_dir() / "fileindex-multi" / "mixed"
    with ContainerReader(root / "index.bin") as container:
        java_bodies = container.read_all()
    options = {
        "file-index.bitmap.columns": "c,s",
        "file-index.bitmap.s.version": "1",
        "file-index.bloom-filter.columns": "c,s,e",
        "file-index.bloom-filter.c.items": "20",
        "file-index.bloom-filter.s.items": "20",
        "file-index.range-bitmap.columns": "c",
        "file-index.bsi.columns": "b",
    }
    order = container_order(options)
    ordered = {col: {t: java_bodies[col][t] for t in types} for col, types in order.items()}
    assert write_container(ordered) == (root / "index.bin").read_bytes()
