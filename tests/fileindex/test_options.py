"""file-index.* table options."""

from __future__ import annotations

import pytest

from paimon_index.errors import InvalidOptionError
from paimon_index.fileindex.options import FileIndexOptions, IndexSpec, parse_memory_size


def test_parses_paimon_spelling() -> None:
    opts = FileIndexOptions.from_table_options({
        "bucket": "4",
        "file-index.bloom-filter.columns": "id, name",
        "file-index.bloom-filter.id.fpp": "0.01",
        "file-index.bloom-filter.id.items": "5000",
        "file-index.bitmap.columns": "status",
        "file-index.bitmap.status.index-block-size": "64b",
        "file-index.in-manifest-threshold": "1kb",
        "file-index.read.enabled": "false",
        "file-index.some.future.key.with.many.parts": "ignored, as Paimon does",
    })
    assert set(opts.specs) == {
        IndexSpec("id", "bloom-filter", (("fpp", "0.01"), ("items", "5000"))),
        IndexSpec("name", "bloom-filter", ()),
        IndexSpec("status", "bitmap", (("index-block-size", "64b"),)),
    }
    assert opts.in_manifest_threshold == 1024
    assert opts.read_enabled is False
    again = FileIndexOptions.from_table_options(opts.to_table_options())
    assert set(again.specs) == set(opts.specs) and again.in_manifest_threshold == 1024


def test_defaults() -> None:
    opts = FileIndexOptions.from_table_options({})
    assert opts.empty and opts.in_manifest_threshold == 500 and opts.read_enabled


@pytest.mark.parametrize(("options", "message"), [
    ({"file-index.zonemap.columns": "a"}, "unknown file index type 'zonemap'"),
    ({"file-index.bitmap.columns": "a,,b"}, "empty column name"),
    ({"file-index.bitmap.b.version": "2"}, "column 'b' is not declared"),
    ({"file-index.bitmap.columns": "a", "file-index.bitmap.a.version": "3"}, "must be 1 or 2"),
    ({"file-index.bitmap.columns": "a", "file-index.bitmap.a.colour": "red"}, "has no option 'colour'"),
    ({"file-index.bloom-filter.columns": "a", "file-index.bloom-filter.a.fpp": "1.5"}, "between 0 and 1"),
    ({"file-index.bloom-filter.columns": "a", "file-index.bloom-filter.a.items": "lots"}, "integer"),
    ({"file-index.in-manifest-threshold": "12 parsecs"}, "cannot parse size"),
    ({"file-index.read.enabled": "yes"}, "true or false"),
])
def test_bad_options_are_rejected(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        FileIndexOptions.from_table_options(options)


@pytest.mark.parametrize(("text", "size"), [
    ("500", 500), ("64b", 64), ("16kb", 16384), ("16 KB", 16384), ("2m", 2 << 20), ("1gb", 1 << 30),
    ("3 bytes", 3), ("1 kibibytes", 1024),
])
def test_memory_sizes(text: str, size: int) -> None:
    assert parse_memory_size(text) == size
