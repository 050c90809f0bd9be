"""The constants and fixed sizes the docs state, pinned so code and docs cannot drift apart."""

from __future__ import annotations

import pyarrow as pa

from paimon_index.fileindex import bitmap, bloom_filter, format
from paimon_index.fileindex.builder import build_file_index


def test_container_constants() -> None:
    assert format.MAGIC == 1493475289347502
    assert format.VERSION == 1
    assert format.EMPTY_INDEX_START == -1
    assert format.MIN_HEAD_BYTES == 24  # magic 8 + version 4 + head length 4 + columns 4 + redundant 4
    assert len(format.write_container({})) == format.MIN_HEAD_BYTES


def test_bloom_filter_defaults_give_paimons_size() -> None:
    bits, k = bloom_filter.bloom_size(bloom_filter.DEFAULT_ITEMS, bloom_filter.DEFAULT_FPP)
    assert (bits, k) == (4_792_536, 3)
    assert bits // 8 + bloom_filter.HASH_COUNT_BYTES == 599_071  # the golden README's figure
    assert bloom_filter.bloom_size(64, 0.05) == (400, 4)  # nb = 399 rounds up to 400 bits
    one_row = pa.table({"c": pa.array([1], pa.int32())})
    blob = build_file_index(one_row, {"file-index.bloom-filter.columns": "c"})
    assert blob is not None and len(blob) == 599_071 + 53  # body + head for column "c"


def test_bitmap_constants() -> None:
    assert (bitmap.VERSION_1, bitmap.VERSION_2, bitmap.DEFAULT_VERSION) == (1, 2, 2)
    assert bitmap.DEFAULT_INDEX_BLOCK_SIZE == "16kb"
    assert bitmap.BLOCK_HEADER_BYTES == 4 and bitmap.ENTRY_INT_BYTES == 8
