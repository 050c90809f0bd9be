"""Statements a Spark user types every day answer as Paimon's own Spark connector does (the
statements and the comparison: tests/sqlref/idioms.py; slow: the connector's JVM)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sqlref import idioms

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_common_statements_answer_as_paimons_connector(spark: Any, tmp_path: Path) -> None:
    differences = idioms.differences(spark, tmp_path)
    assert not differences, "\n".join(differences)
