"""Index type name (as Paimon spells it) -> implementation.

    bloom-filter   paimon_index.fileindex.bloom_filter.BloomFilterIndex
    bitmap         paimon_index.fileindex.bitmap.BitmapIndex
    range-bitmap   paimon_index.fileindex.range_bitmap.RangeBitmapIndex
    bsi            paimon_index.fileindex.bsi.BsiIndex

Implementations are imported on first use. :func:`get_index_type` raises for an unknown name (a
table option naming it is a mistake); readers call :func:`find_index_type`, which returns ``None`` so
that a container holding an index type we do not know is read as "cannot tell" (REMAIN).
"""

from __future__ import annotations

import importlib

from paimon_index.errors import InvalidOptionError
from paimon_index.fileindex.base import IndexType

__all__ = ["INDEX_TYPES", "find_index_type", "get_index_type"]

INDEX_TYPES: dict[str, str] = {
    "bloom-filter": "paimon_index.fileindex.bloom_filter:BloomFilterIndex",
    "bitmap": "paimon_index.fileindex.bitmap:BitmapIndex",
    "range-bitmap": "paimon_index.fileindex.range_bitmap:RangeBitmapIndex",
    "bsi": "paimon_index.fileindex.bsi:BsiIndex",
}


def find_index_type(name: str) -> type[IndexType] | None:
    target = INDEX_TYPES.get(name)
    if target is None:
        return None
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def get_index_type(name: str) -> type[IndexType]:
    found = find_index_type(name)
    if found is None:
        known = ", ".join(sorted(INDEX_TYPES))
        raise InvalidOptionError(f"unknown file index type {name!r} (known: {known})")
    return found
