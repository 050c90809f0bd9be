"""Known bugs the differential suite finds today: one table, consulted by every differential test.

A difference the suite finds is a failure unless one entry here claims it; a claimed difference is
reported as xfail with the entry's reason. Each entry also has a minimal repro that the tests run
with ``xfail(strict=True)``: once the fix is merged the repro passes, the strict mark fails, and the
entry is deleted. Empty this table as fixes land; a claimed case that no longer differs is simply a
pass, so stale entries are found through their repro, not through the random cases.

A :class:`Case` says where a difference was seen: ``source`` is ``on``/``off`` (the Spark source
with indexes on or off) or ``python``/``python-off`` (``read_arrow`` with or without indexes),
``statement`` the statement of a query (its position and text, ``{t}`` for the view) and
``wheres`` the WHERE trees involved.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from differential.expr import Expr, Lit
from differential.generate import COLUMN_BY_NAME, TableSpec

__all__ = ["KNOWN_BUGS", "Case", "KnownBug", "claimed_by"]

SPARK_SOURCES = ("on", "off")
#: Python's default decimal context keeps 28 significant digits; DECIMAL(38, s) needs 38.
DECIMAL_CONTEXT_DIGITS = 28


@dataclass(frozen=True)
class Case:
    spec: TableSpec
    source: str
    wheres: tuple[Expr, ...]
    statement_index: int = 0
    statement: tuple[object, ...] = ()
    detail: str = ""


@dataclass(frozen=True)
class KnownBug:
    key: str
    reason: str
    applies: Callable[[Case], bool] = field(repr=False)


def _literals(case: Case) -> list[Lit]:
    out: list[Lit] = []
    for where in case.wheres:
        for leaf in where.leaves():
            for name in ("lit", "lo", "hi"):
                if isinstance(getattr(leaf, name, None), Lit):
                    out.append(getattr(leaf, name))
            out += list(getattr(leaf, "lits", ()))
    return out


def _later_scan(case: Case) -> bool:
    """A statement that is not the first read of its DataFrame/view, or that reads it twice."""
    if case.source not in SPARK_SOURCES:
        return False
    text = case.statement[1] if len(case.statement) > 1 and case.statement[0] == "sql" else ""
    return case.statement_index > 0 or str(text).count("{t}") > 1


def _wide_decimal_literal(case: Case) -> bool:
    return any(x.kind == "decimal" and len(x.value.as_tuple().digits) > DECIMAL_CONTEXT_DIGITS
               for x in _literals(case))


def _is_nan_or_negative_zero(value: object) -> bool:
    if not isinstance(value, float):
        return False
    return math.isnan(value) or (value == 0.0 and math.copysign(1.0, value) < 0)


def _float_nan_or_negative_zero(case: Case) -> bool:
    """A FLOAT/DOUBLE column holding NaN or -0.0, or compared with a NaN/-0.0 literal."""
    columns = {ref.column for where in case.wheres for ref in where.refs() if ref.kind == "float"}
    if any(_is_nan_or_negative_zero(x.value) for x in _literals(case)) and columns:
        return True
    return any(_is_nan_or_negative_zero(row.get(c)) for row in case.spec.live_rows() for c in columns)


def _decimal_literal_finer_than_column(case: Case) -> bool:
    for where in case.wheres:
        for leaf in where.leaves():
            ref = getattr(leaf, "ref", None)
            if ref is None or ref.kind != "decimal" or ref.cast:
                continue
            scale = COLUMN_BY_NAME[ref.column].arrow.scale
            lits = [getattr(leaf, n) for n in ("lit", "lo", "hi") if hasattr(leaf, n)] + list(
                getattr(leaf, "lits", ()))
            if any(x.kind == "decimal" and -x.value.as_tuple().exponent > scale for x in lits):
                return True
    return False


_INT_BITS = {"ti": 8, "si": 16, "i": 32, "p": 32, "u": 32, "bi": 64, "id": 64}


def _int_literal_out_of_range(case: Case) -> bool:
    for where in case.wheres:
        for leaf in where.leaves():
            ref = getattr(leaf, "ref", None)
            if ref is None or ref.column not in _INT_BITS or ref.cast:
                continue
            bound = 2 ** (_INT_BITS[ref.column] - 1)
            lits = [getattr(leaf, n) for n in ("lit", "lo", "hi") if hasattr(leaf, n)] + list(
                getattr(leaf, "lits", ()))
            if any(x.kind == "int" and not -bound <= x.value < bound for x in lits):
                return True
    return False


def _nested_through_spark(case: Case) -> bool:
    return case.spec.nested and case.source in SPARK_SOURCES


KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug("spark-shared-pushdown",
             "Spark source: filters pushed for one scan leak into the next scan of the same "
             "DataFrame/view (self-joins, subqueries, reused views and DataFrames read filtered rows)",
             _later_scan),
    KnownBug("decimal-literal-precision",
             "DECIMAL literal with more than 28 digits is rounded when bound (decimal context "
             "precision): DECIMAL(38,10) comparisons drop or add rows",
             _wide_decimal_literal),
    KnownBug("nan-negative-zero",
             "NaN/-0.0 in FLOAT/DOUBLE columns: the exact re-check (Arrow compare) treats NaN as "
             "unordered (NaN >= x is false, NaN = NaN is false) where Spark orders NaN above all",
             _float_nan_or_negative_zero),
    KnownBug("decimal-literal-scale",
             "Python API: a DECIMAL literal with more decimal places than the column (dec10 < 777.771) "
             "is rejected with InvalidPredicateError instead of compared exactly",
             _decimal_literal_finer_than_column),
    KnownBug("int-literal-out-of-range",
             "Python API: an integer literal outside the column type's range (si <= 123456789) is "
             "rejected with InvalidPredicateError; SQL compares it (always TRUE/FALSE for non-NULL)",
             _int_literal_out_of_range),
    KnownBug("nested-through-spark",
             "Spark source refuses a table with STRUCT/ARRAY/MAP columns ('column types this source "
             "cannot read yet')",
             _nested_through_spark),
)


def claimed_by(case: Case) -> KnownBug | None:
    """The known bug that explains this difference, if any."""
    return next((bug for bug in KNOWN_BUGS if bug.applies(case)), None)
