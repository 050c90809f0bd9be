"""Which columns our writers dictionary-encode (paimon_index.table.parquet_layout); the same choice
Java's writer makes is checked against Java itself in test_write.py."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paimon_index.table.parquet_layout import FIRST_PAGE_VALUES, dictionary_columns


def _encoded(table: pa.Table) -> dict[str, bool]:
    """Per leaf column path: does the written file's first row group have a dictionary page."""
    sink = io.BytesIO()
    pq.write_table(table, sink, use_dictionary=dictionary_columns(table))
    group = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata.row_group(0)
    columns = [group.column(i) for i in range(group.num_columns)]
    return {c.path_in_schema: c.has_dictionary_page for c in columns}


def test_nested_leaves_are_decided_by_their_own_values_under_the_paths_pyarrow_writes() -> None:
    n = 5_000
    few = pa.array(np.arange(n) % 3, pa.int64())
    unique = pa.array(np.arange(n), pa.int64())
    table = pa.table({
        "s": pa.StructArray.from_arrays([few, unique], names=["few", "unique"]),
        "l": pa.array([[i % 4, i % 4] for i in range(n)], pa.list_(pa.int32())),
        "m": pa.array([[(f"k{i % 2}", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
    })
    assert _encoded(table) == {"s.few": True, "s.unique": False, "l.list.element": True,
                               "m.key_value.key": True, "m.key_value.value": False}


def test_nulls_do_not_count_and_an_all_null_column_keeps_its_dictionary() -> None:
    n = 10_000
    mostly_null = pa.array([None if i % 10 else i for i in range(n)], pa.int64())  # 1,000 unique values
    table = pa.table({"sparse": mostly_null, "empty": pa.nulls(n, pa.string()),
                      "b": pa.array(np.arange(n) % 2 == 0)})
    assert dictionary_columns(table) == ["empty"]  # unique non-null values: plain; booleans never


def test_the_choice_is_made_on_the_first_page_only() -> None:
    """As Java decides on its first page: a column that repeats there keeps its dictionary even
    when later rows are all distinct (the dictionary then falls back by its page size limit)."""
    n = FIRST_PAGE_VALUES * 3
    values = np.where(np.arange(n) < FIRST_PAGE_VALUES, np.arange(n) % 10, np.arange(n))
    table = pa.table({"v": pa.array(values, pa.int64())})
    assert dictionary_columns(table) == ["v"]
    assert dictionary_columns(table.slice(FIRST_PAGE_VALUES)) == []


def test_the_layout_benchmark_writes_the_same_rows_in_each_layout(tmp_path: Path) -> None:
    from benchmarks import parquet_layout

    built = parquet_layout.build(tmp_path, 30_000, 2)
    tables = {layout: pq.read_table(files) for layout, files in built.items()}
    assert tables["ours"].num_rows == 30_000
    assert tables["arrow"].equals(tables["ours"]) and tables["capped"].equals(tables["ours"])
    first = {layout: pq.ParquetFile(files[0]).metadata.row_group(0) for layout, files in built.items()}
    assert first["capped"].column(0).has_dictionary_page  # id, unique: pyarrow encodes it anyway
    assert not first["ours"].column(0).has_dictionary_page


def test_every_arrow_type_gets_a_choice_and_the_file_reads_back() -> None:
    import decimal

    n = 30_000
    table = pa.table({
        "dictionary": pa.array(["a", "b"] * (n // 2)).dictionary_encode(),
        "decimal": pa.array([decimal.Decimal("1.25"), decimal.Decimal("2.50")] * (n // 2),
                            pa.decimal128(10, 2)),
        "date": pa.array(np.arange(n) % 5, pa.int32()).cast(pa.date32()),
        "timestamp": pa.array(np.arange(n), pa.timestamp("us")),
        "half": pa.array(np.ones(n, dtype=np.float16)),  # no unique kernel: pyarrow's default
    })
    assert dictionary_columns(table) == ["dictionary", "decimal", "date", "half"]
    views = pa.table({"view": pa.array(["x", "y"] * (n // 2), pa.string_view())})
    assert dictionary_columns(views) == ["view"]  # not measured: pyarrow's default
    sink = io.BytesIO()
    pq.write_table(table, sink, use_dictionary=dictionary_columns(table))
    assert pq.read_table(io.BytesIO(sink.getvalue())).num_rows == n
