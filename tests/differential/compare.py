"""Result comparison as Spark's own equality sees values: multisets of normalized rows.

NaN equals NaN and -0.0 equals 0.0 (Spark's ``=``, GROUP BY and DISTINCT treat them so); decimals
compare by value; Spark ``Row``s, structs, arrays and maps become plain tuples. Unordered results
are compared as sorted lists (a multiset), ordered ones (ORDER BY ... LIMIT) as they are.
"""

from __future__ import annotations

import decimal
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["diff_rows", "normalize"]

#: How NaN appears after normalization (a value no column holds).
NAN = ("<NaN>",)


def normalize(value: Any) -> Any:
    """A hashable value equal to another exactly when Spark's equality says so."""
    if isinstance(value, float):
        if math.isnan(value):
            return NAN
        return value + 0.0  # -0.0 -> 0.0
    if isinstance(value, decimal.Decimal):
        return value.normalize() if value else decimal.Decimal(0)
    if isinstance(value, Mapping):
        return tuple(sorted((normalize(k), normalize(v)) for k, v in value.items()))
    if hasattr(value, "asDict") and isinstance(value, tuple):  # pyspark Row
        return tuple(normalize(v) for v in value)
    if isinstance(value, list | tuple):
        return tuple(normalize(v) for v in value)
    return value


def _sort_key(row: tuple[Any, ...]) -> str:
    return repr(row)


def diff_rows(want: Iterable[Any], got: Iterable[Any], *, ordered: bool = False,
              limit: int = 5) -> str | None:
    """None when equal; otherwise a short description of what is missing and what is extra."""
    a = [normalize(r) for r in want]
    b = [normalize(r) for r in got]
    if ordered:
        if a == b:
            return None
        return f"ordered results differ:\n  want {a[:limit * 2]}\n  got  {b[:limit * 2]}"
    ca, cb = Counter(a), Counter(b)
    if ca == cb:
        return None
    missing = sorted((ca - cb).elements(), key=_sort_key)
    extra = sorted((cb - ca).elements(), key=_sort_key)
    return (f"{len(a)} rows wanted, {len(b)} got; missing {len(missing)}: {missing[:limit]}; "
            f"extra {len(extra)}: {extra[:limit]}")
