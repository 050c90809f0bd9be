"""Reading the golden files written by Apache Paimon's Java code (../shared/golden).

Tests that use them skip cleanly when the folder is absent. Layout and token grammar: the golden
README. Values and predicate literals there are already canonical keys (DATE = days, TIMESTAMP(3) =
epoch millis, TIMESTAMP(6) = epoch micros, DECIMAL as text).
"""

from __future__ import annotations

import decimal
import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_index.fileindex.result import FileIndexResult, Rows
from paimon_index.predicate import Leaf, Op, Predicate, and_, or_
from paimon_index.types import DataType, KeyKind, canonical_literal, parse_type

GOLDEN = Path(__file__).resolve().parents[1].parent / "shared" / "golden"
NULL_TOKEN = "\\N"
#: Paimon's PredicateBuilder turns IN lists longer than this into one In leaf (else an OR of =).
IN_LIST_OR_LIMIT = 20

_TYPE_NAMES = {
    "tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INT", "bigint": "BIGINT",
    "float": "FLOAT", "double": "DOUBLE", "boolean": "BOOLEAN", "string": "STRING",
    "date": "DATE", "timestamp(3)": "TIMESTAMP(3)", "timestamp(6)": "TIMESTAMP(6)",
    "decimal(10,2)": "DECIMAL(10, 2)",
}

_OPS = {
    "eq": Op.EQ, "ne": Op.NE, "lt": Op.LT, "le": Op.LE, "gt": Op.GT, "ge": Op.GE,
    "startswith": Op.STARTS_WITH, "endswith": Op.ENDS_WITH, "contains": Op.CONTAINS,
    "like": Op.LIKE,
}


def golden_dir() -> Path:
    if not GOLDEN.is_dir():
        pytest.skip(f"golden files not found at {GOLDEN}")
    return GOLDEN


def golden_type(name: str) -> DataType:
    return parse_type(_TYPE_NAMES[name])


def parse_key(token: str, dtype: DataType) -> object:
    """A golden value or literal token as a canonical key (``None`` for NULL)."""
    if token == NULL_TOKEN:
        return None
    kind = dtype.key_kind
    if kind is KeyKind.BYTES:
        return token.encode("utf-8")
    if kind is KeyKind.BOOL:
        return token == "true"
    if kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
        value = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(token)
        return canonical_literal(float(token) if value is None else value, dtype)
    if kind is KeyKind.DECIMAL:
        return canonical_literal(decimal.Decimal(token), dtype)
    return int(token)


def _leaf(op: Op, column: str, literals: tuple[object, ...]) -> Leaf:
    # Literals are canonical already: build bound leaves directly.
    return Leaf(op, column, literals)


def predicate_from_tokens(op_token: str, arg: str | None, column: str, dtype: DataType) -> Predicate:
    """One golden leaf, built the way Paimon's PredicateBuilder built it."""
    if op_token == "isnull":
        return _leaf(Op.IS_NULL, column, ())
    if op_token == "isnotnull":
        return _leaf(Op.IS_NOT_NULL, column, ())
    assert arg is not None
    if op_token in _OPS:
        return _leaf(_OPS[op_token], column, (parse_key(arg, dtype),))
    if op_token == "between":
        lo, hi = arg.split(",")
        return _leaf(Op.BETWEEN, column, (parse_key(lo, dtype), parse_key(hi, dtype)))
    values = () if arg == "[]" else tuple(parse_key(t, dtype) for t in arg.split(","))
    if op_token in ("in-leaf", "notin-leaf"):
        return _leaf(Op.IN if op_token == "in-leaf" else Op.NOT_IN, column, values)
    if op_token == "in":
        if 0 < len(values) <= IN_LIST_OR_LIMIT:
            return or_(*(_leaf(Op.EQ, column, (v,)) for v in values))
        return _leaf(Op.IN, column, values)
    if op_token == "notin":
        if 0 < len(values) <= IN_LIST_OR_LIMIT:
            return and_(*(_leaf(Op.NE, column, (v,)) for v in values))
        return _leaf(Op.NOT_IN, column, values)
    raise ValueError(f"unknown golden operator {op_token!r}")


def predicate_from_fields(fields: list[str], schema: dict[str, DataType]) -> Predicate:
    """A golden predicate line: leaves (``op [arg]``, ``col.op`` in multi-column files) joined
    by ``AND`` or ``OR`` tokens (one kind per line)."""
    leaves: list[Predicate] = []
    joiner = None
    i = 0
    while i < len(fields):
        token = fields[i]
        if token in ("AND", "OR"):
            joiner = token
            i += 1
            continue
        column, _, op_token = token.rpartition(".")
        column = column or next(iter(schema))
        if op_token in ("isnull", "isnotnull"):
            arg = None
            i += 1
        else:
            arg = fields[i + 1]
            i += 2
        leaves.append(predicate_from_tokens(op_token, arg, column, schema[column]))
    if len(leaves) == 1:
        return leaves[0]
    return and_(*leaves) if joiner == "AND" else or_(*leaves)


def answer_of(result: FileIndexResult) -> str:
    """Normal form shared with Java's answers: REMAIN, EMPTY (SKIP or no rows), or sorted rows."""
    if isinstance(result, Rows):
        rows = list(result.bitmap)
        return "EMPTY" if not rows else "ROWS " + ",".join(map(str, rows))
    return "REMAIN" if result.remain else "EMPTY"


def java_answer(text: str) -> str:
    if text.startswith("BITMAP "):
        _, count, rows = text.split(" ", 2)
        return "EMPTY" if count == "0" else "ROWS " + rows
    if text == "SKIP":
        return "EMPTY"
    return text  # REMAIN or ERROR ...


@dataclass(frozen=True)
class GoldenCase:
    name: str
    path: Path
    meta: dict
    dtype: DataType

    @property
    def index_type(self) -> str:
        return self.meta["index"]

    @property
    def options(self) -> dict[str, str]:
        return self.meta["options"]

    def values(self) -> list[object]:
        lines = (self.path / "values.txt").read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if self.meta["rows"] == 0:
            lines = []
        assert len(lines) == self.meta["rows"], self.name
        return [parse_key(t, self.dtype) for t in lines]

    def arrow(self) -> pa.Array:
        return arrow_column(self.values(), self.dtype)

    @property
    def write_error(self) -> str | None:
        """Java's writer refused these values (no index files then)."""
        return self.meta.get("write_error")

    def expectations(self) -> list[tuple[str, Predicate, str]]:
        out: list[tuple[str, Predicate, str]] = []
        if self.write_error:
            return out
        for line in (self.path / "expected.tsv").read_text(encoding="utf-8").split("\n"):
            if not line:
                continue
            fields = line.split("\t")
            pred = predicate_from_fields(fields[:-1], {"c": self.dtype})
            out.append((" ".join(fields[:-1]), pred, java_answer(fields[-1])))
        return out


def arrow_column(keys: list[object], dtype: DataType) -> pa.Array:
    """Canonical keys back to an Arrow column of the Paimon type."""
    kind = dtype.key_kind
    if kind is KeyKind.BYTES:
        return pa.array([None if k is None else k.decode("utf-8") for k in keys], pa.string())
    if kind is KeyKind.DECIMAL:
        scale = dtype.scale or 0
        return pa.array([None if k is None else decimal.Decimal(k).scaleb(-scale) for k in keys],
                        pa.decimal128(dtype.precision or 10, scale))
    root = dtype.root.value
    arrow_type = {
        "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
        "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(), "DATE": pa.date32(),
    }.get(root)
    if arrow_type is None:  # TIMESTAMP(p)
        arrow_type = pa.timestamp("ms" if (dtype.precision or 0) <= 3 else "us")
    return pa.array(keys, arrow_type)


@cache
def all_cases() -> list[GoldenCase]:
    root = golden_dir() / "fileindex"
    cases = []
    for d in sorted(root.iterdir()):
        meta = json.loads((d / "meta.json").read_text())
        cases.append(GoldenCase(d.name, d, meta, golden_type(meta["type"])))
    return cases


def case_names(index_type: str) -> list[str]:
    """Case names for parametrization (empty when the golden folder is absent)."""
    root = GOLDEN / "fileindex"
    if not root.is_dir():
        return []
    names = []
    for d in sorted(root.iterdir()):
        meta = json.loads((d / "meta.json").read_text())
        if meta["index"] == index_type:
            names.append(d.name)
    return names


def load_case(name: str) -> GoldenCase:
    for c in all_cases():
        if c.name == name:
            return c
    raise KeyError(name)
