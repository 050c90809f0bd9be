"""The SQL differential harness: the same Spark SQL text through Apache Paimon's own Spark connector
(``paimon-sql.sh``, its own JVM process with PySpark 4.1.2) and through ``paimon.sql`` (ours).

    statements(path)            the statements of one ``.sql`` file (``;``-separated; a ``-- name: x``
                                comment names the next statement, else ``<file>:<n>``)
    connector_unavailable()     why the connector cannot run here (None when it can)
    run_connector(W, stmts)     one JVM run over warehouse W: one result per statement
    run_ours(paimon, stmt)      our result, in the connector's output format
    differences(ref, ours, ...) why two results differ ('' when equal)

A result is ``{"ok": True, "columns": [...], "rows": [[...]]}`` or ``{"ok": False, "error": "..."}``,
values as the connector prints them: DECIMAL as its string, DATE ``yyyy-mm-dd``, TIMESTAMP
``yyyy-mm-dd hh:mm:ss[.ffffff]``, binary as hex, NaN/Infinity as JSON's spellings.

Equality: the same column names; the same multiset of rows (the same sequence when the statement
has a top-level ``ORDER BY``); DECIMAL exact (by value: ``1.50 == 1.5``), floats within 1e-9
relative (NaN equals NaN), NULL equals NULL.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from jvm import tool_env

CONNECTOR_DIR = Path(os.environ.get("PAIMON_SQL_DIR", "/work/shared/java-paimon/spark"))
CONNECTOR = CONNECTOR_DIR / "paimon-sql.sh"
VENV = Path(os.environ.get("PAIMON_SQL_VENV", str(Path.home() / ".cache" / "paimon-sql-venv")))
SQL_DIR = Path(__file__).parent
REL_TOL = 1e-9
#: Seconds one connector run may take (a JVM start costs seconds; the machine is shared).
CONNECTOR_TIMEOUT = float(os.environ.get("PAIMON_SQL_TIMEOUT", "1200"))


@dataclass(frozen=True)
class Statement:
    name: str
    text: str
    #: Tags after the name in ``-- name: x tag ...``: ``ci`` (in the default run), ``final`` (a
    #: sequence's query that each side also runs on the other side's copy).
    tags: frozenset[str] = frozenset()

    @property
    def ci(self) -> bool:
        return "ci" in self.tags

    @property
    def final(self) -> bool:
        return "final" in self.tags

    @property
    def ordered(self) -> bool:
        return has_top_level_order_by(self.text)


def statements(path: Path) -> list[Statement]:
    """The statements of ``path``: split at ``;`` outside quotes; ``--`` comment lines dropped, a
    ``-- name: x [tag ...]`` line names (and tags) the statement that follows."""
    out: list[Statement] = []
    name: str | None = None
    tags: frozenset[str] = frozenset()
    lines: list[str] = []
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("--"):
            body = stripped[2:].strip()
            if body.startswith("name:"):
                name, *rest = body[5:].split()
                tags = frozenset(rest)
            continue
        lines.append(line)
        if _ends_statement("\n".join(lines)):
            text = "\n".join(lines).strip().rstrip(";").strip()
            if text:
                out.append(Statement(name or f"{path.stem}:{len(out) + 1}", text, tags))
            name, tags, lines = None, frozenset(), []
    rest = "\n".join(lines).strip()
    if rest:
        out.append(Statement(name or f"{path.stem}:{len(out) + 1}", rest, tags))
    names = [s.name for s in out]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"{path}: statement names used twice: {sorted(dup)}"
    return out


def _ends_statement(text: str) -> bool:
    """Whether ``text`` ends with a ``;`` outside quotes (so one line may end a statement)."""
    quote: str | None = None
    last = ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        if not ch.isspace():
            last = ch
    return quote is None and last == ";"


def has_top_level_order_by(text: str) -> bool:
    """Whether the statement's result order is defined: a top-level ORDER BY (not one in a subquery,
    CTE or window). Text sqlglot cannot parse counts as unordered."""
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return False
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    queries = (exp.Select, exp.Union, exp.Except, exp.Intersect)
    return isinstance(tree, queries) and tree.args.get("order") is not None


# -- the connector ---------------------------------------------------------------------------------
def connector_unavailable() -> str | None:
    """Why Paimon's connector cannot run here, or None. Its venv is made on first use (~1 min)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "java is not available (Paimon's Spark connector runs in a JVM)"
    if not CONNECTOR.exists():
        return f"Paimon's connector script {CONNECTOR} is not here"
    if not (VENV / "bin" / "python").exists():
        try:
            done = subprocess.run([str(CONNECTOR), "--warehouse", tempfile.mkdtemp(), "--sql", "SELECT 1"],
                                  capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"cannot make the connector's venv at {VENV}: {e}"
        if done.returncode != 0:
            return f"cannot make the connector's venv at {VENV}: {done.stderr.strip()[-300:]}"
    check = subprocess.run([str(VENV / "bin" / "python"), "-c", "import pyspark"], capture_output=True,
                           check=False)
    if check.returncode != 0:
        return f"the connector's venv {VENV} has no pyspark"
    return None


def run_connector(warehouse: str | Path, stmts: Sequence[str], *, test_jvm: bool = False
                  ) -> list[dict[str, Any]]:
    """Run ``stmts`` in one connector process over ``warehouse``: one result per statement.
    ``test_jvm``: its JVM with the tests' options (tests/jvm.py; benchmarks leave them off)."""
    if not stmts:
        return []
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(";\n".join(stmts) + ";\n")
        path = f.name
    try:
        done = subprocess.run([str(CONNECTOR), "--warehouse", str(warehouse), "--file", path],
                              capture_output=True, text=True, timeout=CONNECTOR_TIMEOUT, check=False,
                              env=tool_env() if test_jvm else None)
    finally:
        os.unlink(path)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(results) != len(stmts):
        raise RuntimeError(f"the connector answered {len(results)} of {len(stmts)} statements "
                           f"(exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return results


# -- ours ------------------------------------------------------------------------------------------
def plain(v: Any) -> Any:
    """A value as the connector prints it (its ``paimon_sql.plain``)."""
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if hasattr(v, "asDict"):
        return {k: plain(x) for k, x in v.asDict().items()}
    return v


def run_ours(paimon: Any, text: str) -> dict[str, Any]:
    """``paimon.sql(text)`` collected, in the connector's format (a refusal: ``ok`` False)."""
    try:
        df = paimon.sql(text)
        rows = df.collect()
        return {"ok": True, "columns": list(df.columns), "rows": [[plain(v) for v in r] for r in rows]}
    except Exception as e:  # reported, compared with the connector's answer
        return {"ok": False, "error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:500]}"}


# -- comparison ------------------------------------------------------------------------------------
def _value_key(v: Any) -> Any:
    """A sortable, comparable form of one value (decimal strings by value, floats rounded for order)."""
    if v is None:
        return (0, "")
    if isinstance(v, bool):
        return (1, int(v))
    if isinstance(v, (int, float)):
        if isinstance(v, float) and math.isnan(v):
            return (2, "nan")
        return (3, float(v))
    if isinstance(v, str):
        try:
            return (3, float(decimal.Decimal(v)))
        except (decimal.InvalidOperation, ValueError):
            return (4, v)
    return (5, json.dumps(v, sort_keys=True, default=str))


def _row_key(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_value_key(v) for v in row)


def values_equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)
    if isinstance(a, str) and isinstance(b, str):
        if a == b:
            return True
        try:  # DECIMAL: exact, by value
            return decimal.Decimal(a) == decimal.Decimal(b)
        except (decimal.InvalidOperation, ValueError):
            return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def rows_equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))


def differences(ref: dict[str, Any], ours: dict[str, Any], *, ordered: bool) -> str:
    """Why ``ours`` differs from ``ref`` ('' when they are equal; refusals are the caller's)."""
    if [c.lower() for c in ref["columns"]] != [c.lower() for c in ours["columns"]]:
        return f"columns differ: connector {ref['columns']} vs ours {ours['columns']}"
    a, b = ref["rows"], ours["rows"]
    if len(a) != len(b):
        return f"{len(a)} rows from the connector vs {len(b)} from ours; first rows {a[:3]} vs {b[:3]}"
    if not ordered:
        a, b = sorted(a, key=_row_key), sorted(b, key=_row_key)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not rows_equal(x, y):
            return f"row {i} differs{' (ordered)' if ordered else ''}: connector {x} vs ours {y}"
    return ""
