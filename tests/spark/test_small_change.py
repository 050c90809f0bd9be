"""The driver's small-change path (``jobs.SMALL_CHANGE_ROWS``): a DELETE/UPDATE of a primary-key table
matching a few rows is upserted on the driver. Checked against the distributed upsert (itself checked
against Paimon's connector and Java elsewhere): the same statements on two copies of a table leave
the same rows, one snapshot per statement, across table kinds and column types."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_index
from commits import assert_one_commit
from paimon_index.spark import attach, jobs
from paimon_index.table import pk

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string()), ("x", pa.float64()), ("m", pa.decimal128(12, 2)),
                    ("d", pa.date32()), ("ts", pa.timestamp("us"))])
KINDS = {
    "fixed": ({"bucket": "2"}, []),
    "dynamic": ({"bucket": "-1"}, []),
    "partitioned": ({"bucket": "2"}, ["p"]),
    "partial-update": ({"bucket": "2", "merge-engine": "partial-update"}, []),
    "lookup-changelog": ({"bucket": "2", "changelog-producer": "lookup"}, []),
}
STATEMENTS = [
    "DELETE FROM db.{t} WHERE v = 'a' AND x < 0.5",
    "UPDATE db.{t} SET m = m + 1.25, ts = ts + INTERVAL 1 DAY, d = date_add(d, 3) WHERE id % 7 = 0",
    "UPDATE db.{t} SET v = 'z' WHERE p = 'q1' AND id > 150",
]


def _rows() -> pa.Table:
    n = 200
    start = datetime.datetime(2024, 2, 28, 23, 30)
    return pa.table({"id": range(n), "p": [f"q{i % 3}" for i in range(n)],
                     "v": [("a", "b", "c")[i % 3] for i in range(n)],
                     "x": [(i * 37 % 100) / 100 for i in range(n)],
                     "m": [decimal.Decimal(i * 13 - 900).scaleb(-2) for i in range(n)],
                     "d": [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(n)],
                     "ts": [start + datetime.timedelta(minutes=17 * i) for i in range(n)]}, schema=SCHEMA)


def _table(warehouse: str, name: str, kind: str) -> paimon_index.Table:
    options, partitions = KINDS[kind]
    keys = ["id", *partitions]
    table = paimon_index.create_table(warehouse, f"db.{name}", SCHEMA, primary_keys=keys,
                                      partition_keys=partitions,
                                      options={"deletion-vectors.enabled": "true", **options})
    table.upsert(_rows())
    return table


def _snapshots(table: paimon_index.Table) -> int:
    return table.snapshot_id or 0


#: CI's budget: the fixed-bucket kind is the partitioned one's subset; the lookup changelog's small
#: path is Table.upsert's, checked against Java in tests/table/test_changelog.py. -m slow runs all.
SLOW_SMALL_KINDS = ("fixed", "lookup-changelog")


@pytest.mark.parametrize("kind", [pytest.param(k, marks=[pytest.mark.slow] if k in SLOW_SMALL_KINDS else [])
                                  for k in KINDS])
def test_small_changes_on_the_driver_equal_the_distributed_upsert(spark, tmp_path: Path, kind: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = str(tmp_path)
    small, dist = _table(warehouse, "small", kind), _table(warehouse, "dist", kind)
    paimon = attach(spark, warehouse=warehouse)
    driver_upserts: list[int] = []
    upsert_arrow = pk.upsert_arrow

    def counted(table, data, **kwargs):  # type: ignore[no-untyped-def]
        driver_upserts.append(data.num_rows)
        return upsert_arrow(table, data, **kwargs)

    monkeypatch.setattr(pk, "upsert_arrow", counted)
    for statement in STATEMENTS:
        kinds = []
        for name, rows in ((small, 10_000), (dist, 0)):
            monkeypatch.setattr(jobs, "SMALL_CHANGE_ROWS", rows)
            before = _snapshots(name)
            paimon.sql(statement.format(t=name.identifier.split(".")[1])).collect()
            kinds.append(assert_one_commit(name.paimon_table, before, statement))
        assert kinds[0] == kinds[1], statement  # the driver's path commits as the tasks' path
    assert len(driver_upserts) == len(STATEMENTS) and all(driver_upserts)
    assert small.read().sort_by("id").equals(dist.read().sort_by("id"))


def test_a_change_over_the_limit_runs_in_tasks(spark, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(str(tmp_path), "t", "fixed")
    calls: list[int] = []
    upsert_arrow = pk.upsert_arrow
    monkeypatch.setattr(pk, "upsert_arrow",
                        lambda t, d, **k: calls.append(d.num_rows) or upsert_arrow(t, d, **k))
    monkeypatch.setattr(jobs, "SMALL_CHANGE_ROWS", 5)
    paimon = attach(spark, warehouse=str(tmp_path))
    paimon.sql("DELETE FROM db.t WHERE id < 10").collect()
    assert calls == []
    assert table.count() == 190
    paimon.sql("DELETE FROM db.t WHERE id < 15").collect()
    assert calls == [5]
    assert table.count() == 185


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_a_change_of_a_deletion_vectors_table_reads_the_rows_its_indexes_select(
        spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bucket: str) -> None:
    """DELETE / UPDATE of a deletion-vectors table (SQL and the jobs' verbs) read their rows by the
    planned read, pruned by the statement's condition, at the latest snapshot: not the whole table
    through the source with the condition left to Spark (0.6 of a 0.9 s DELETE at 2M rows). Every
    step's rows equal a model's, read back by pypaimon."""
    from paimon_index.spark import planned

    reads: list[tuple[str | None, int | None]] = []
    read_planned = planned.read_planned

    def recorded(spark: object, table: str, where: str | None = None, **options: object) -> object:
        reads.append((where, options.get("change_of")))  # type: ignore[arg-type]
        return read_planned(spark, table, where, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(planned, "read_planned", recorded)
    warehouse = str(tmp_path)
    paimon = attach(spark, warehouse=warehouse)
    paimon.sql("CREATE DATABASE o")
    paimon.sql("CREATE TABLE o.t (id BIGINT NOT NULL, k INT, s STRING) TBLPROPERTIES ('primary-key' = 'id', "
               f"'bucket' = '{bucket}', 'deletion-vectors.enabled' = 'true', "
               "'file-index.bitmap.columns' = 'k')")
    paimon.sql("INSERT INTO o.t SELECT id, CAST(id % 10 AS INT), 'a' FROM range(1000)")
    paimon.sql("INSERT INTO o.t SELECT id, CAST(id % 10 AS INT), 'b' FROM range(0, 1000, 3)")  # two versions
    model = {i: (i, i % 10, "b" if i % 3 == 0 else "a") for i in range(1000)}
    table = paimon_index.open_table(warehouse, "o.t")
    statements = [
        (lambda: paimon.sql("DELETE FROM o.t WHERE k = 3 AND s = 'b'"), lambda i, v: None if v[1] == 3 and
         v[2] == "b" else v),
        (lambda: paimon.sql("UPDATE o.t SET s = concat(s, '!') WHERE k = 2"),
         lambda i, v: (i, 2, v[2] + "!") if v[1] == 2 else v),
        (lambda: jobs.update(spark, "o.t", {"s": "'d'"}, "k = 4", warehouse=warehouse),
         lambda i, v: (i, 4, "d") if v[1] == 4 else v),
        (lambda: jobs.delete(spark, "o.t", "k = 5", warehouse=warehouse),
         lambda i, v: None if v[1] == 5 else v),
    ]
    for statement, change in statements:
        reads.clear()
        latest = paimon_index.open_table(warehouse, "o.t").snapshot_id
        statement()
        model = {i: w for i, v in model.items() if (w := change(i, v)) is not None}
        # One read of the latest snapshot with the condition on the table's columns.
        assert len(reads) == 1 and reads[0][1] == latest and reads[0][0] is not None and "k" in reads[0][0]
        assert sorted(tuple(r.values()) for r in table.read().to_pylist()) == sorted(model.values())
