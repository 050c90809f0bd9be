"""Partition values as Paimon casts them to STRING (``$partitions``, ``$buckets``, ``$files``,
SHOW PARTITIONS): the expected texts are Java's (``Double.toString``, ``BigDecimal.toPlainString``,
``DateTimeUtils.formatTimestamp``); tests/spark/test_sql_system_tables.py compares whole tables with
Paimon's connector."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pytest

from paimon_index.table.system import java_text
from paimon_index.types import parse_type


@pytest.mark.parametrize(("value", "type_text", "expected"), [
    (True, "BOOLEAN", "true"),
    (False, "BOOLEAN", "false"),
    (5, "INT", "5"),
    (1.0e7, "DOUBLE", "1.0E7"),
    (9999999.0, "DOUBLE", "9999999.0"),
    (0.001, "DOUBLE", "0.001"),
    (0.0001, "DOUBLE", "1.0E-4"),
    (123.25, "DOUBLE", "123.25"),
    (1.0e22, "DOUBLE", "1.0E22"),
    (-1.5e-7, "DOUBLE", "-1.5E-7"),
    (-0.0, "DOUBLE", "-0.0"),
    (0.0, "DOUBLE", "0.0"),
    (math.nan, "DOUBLE", "NaN"),
    (-math.inf, "DOUBLE", "-Infinity"),
    (0.10000000149011612, "FLOAT", "0.1"),  # the float nearest 0.1, printed as a float
    (9.999999747378752e-06, "FLOAT", "1.0E-5"),
    (decimal.Decimal("1.5"), "DECIMAL(5, 2)", "1.50"),
    (decimal.Decimal("-2"), "DECIMAL(5, 2)", "-2.00"),
    (dt.date(2024, 1, 2), "DATE", "2024-01-02"),
    (dt.datetime(2024, 1, 2, 3, 4, 5), "TIMESTAMP(6)", "2024-01-02 03:04:05.000000"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 500000), "TIMESTAMP(6)", "2024-01-02 03:04:05.500000"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 120000), "TIMESTAMP(3)", "2024-01-02 03:04:05.120"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 123456), "TIMESTAMP(3)", "2024-01-02 03:04:05.123456"),
    (dt.datetime(2024, 1, 2, 3, 4, 5), "TIMESTAMP(0)", "2024-01-02 03:04:05"),
    (b"ab", "BYTES", "ab"),
    ("x/y", "STRING", "x/y"),
])
def test_values_are_printed_as_paimon_casts_them(value: object, type_text: str, expected: str) -> None:
    assert java_text(value, parse_type(type_text)) == expected
