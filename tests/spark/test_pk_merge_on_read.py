"""DELETE / UPDATE / MERGE INTO / INSERT INTO on primary-key tables WITHOUT deletion vectors
(merge-on-read) through ``paimon.sql`` and the ``jobs`` verbs: each statement is one APPEND
snapshot of level-0 key-value rows (``-D``, ``+U``), as Paimon's own Spark connector writes them.

Checked against a Python model of the rows (CI), and (slow) against the connector itself: the same
statements run through ``paimon-sql.sh`` on its own copy of the tables, then each side reads the
other side's tables — all four answers equal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_index
import paimon_index.spark
from paimon_index.spark import jobs
from paimon_index.table.paimon import latest_snapshot

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("s", pa.string()), ("v", pa.int64()),
                    pa.field("p", pa.string(), nullable=False)])
#: table kind -> (partitioned, options)
KINDS = {"fixed": (False, {"bucket": "2"}), "part": (True, {"bucket": "2"}), "dyn": (False, {"bucket": "-1"})}
SEED = [(i, f"s{i % 5}", i * 3 % 17, "xyz"[i % 3]) for i in range(1, 31)]

Row = tuple[Any, Any, Any, Any]
Model = dict[tuple[Any, Any], Row]


def _key(row: Row) -> tuple[Any, Any]:
    return row[0], row[3]


def _statements(t: str) -> list[tuple[str, Callable[[Model], None]]]:
    """(statement on table ``t``, its effect on the model)."""

    def delete(pred: Callable[[Row], bool]) -> Callable[[Model], None]:
        return lambda m: [m.pop(k) for k in [k for k, r in m.items() if pred(r)]]  # type: ignore[func-returns-value]

    def update(pred: Callable[[Row], bool], change: Callable[[Row], Row]) -> Callable[[Model], None]:
        def step(m: Model) -> None:
            for k, r in list(m.items()):
                if pred(r):
                    m[k] = change(r)
        return step

    def merge(m: Model) -> None:
        source = [(2, "m2", 7, "z"), (5, "m5", 8, "z"), (50, "m50", 9, "z"), (3, "m3", 1, "x")]
        for row in source:
            old = m.get(_key(row))
            if old is not None and row[2] > 7:
                del m[_key(row)]
            elif old is not None:
                m[_key(row)] = (old[0], row[1], row[2], old[3])
            else:
                m[_key(row)] = row

    def insert(m: Model) -> None:
        for row in [(1, "ins", 1, "y"), (60, "n60", 6, "y")]:
            m[_key(row)] = row

    def subquery_delete(m: Model) -> None:
        doomed = {r[0] for r in m.values() if r[2] > 105}
        for k in [k for k, r in m.items() if r[0] in doomed]:
            del m[k]

    return [
        (f"DELETE FROM {t} WHERE v % 3 = 0 AND id < 25", delete(lambda r: r[2] % 3 == 0 and r[0] < 25)),
        (f"UPDATE {t} SET s = upper(s), v = v + 100 WHERE id % 4 = 1",
         update(lambda r: r[0] % 4 == 1, lambda r: (r[0], r[1].upper(), r[2] + 100, r[3]))),
        (f"MERGE INTO {t} AS t USING (SELECT * FROM VALUES (2, 'm2', 7L, 'z'), (5, 'm5', 8L, 'z'), "
         "(50, 'm50', 9L, 'z'), (3, 'm3', 1L, 'x') AS src(id, s, v, p)) AS s ON t.id = s.id AND t.p = s.p "
         "WHEN MATCHED AND s.v > 7 THEN DELETE WHEN MATCHED THEN UPDATE SET s = s.s, v = s.v "
         "WHEN NOT MATCHED THEN INSERT (id, s, v, p) VALUES (s.id, s.s, s.v, s.p)", merge),
        (f"INSERT INTO {t} VALUES (1, 'ins', 1, 'y'), (60, 'n60', 6, 'y')", insert),
        (f"DELETE FROM {t} WHERE id IN (SELECT id FROM {t} WHERE v > 105)", subquery_delete),
    ]


def _create(warehouse: str, identifier: str, kind: str) -> None:
    partitioned, options = KINDS[kind]
    table = paimon_index.create_table(warehouse, identifier, SCHEMA, primary_keys=["id", "p"],
                                      partition_keys=["p"] if partitioned else [], options=options)
    table.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in SEED], SCHEMA))


def _snapshot(warehouse: str, identifier: str) -> int:
    snapshot = latest_snapshot(paimon_index.open_table(warehouse, identifier).paimon_table)
    return int(snapshot.id)


def _rows(paimon: Any, identifier: str) -> list[Row]:
    return sorted(tuple(r) for r in paimon.sql(f"SELECT id, s, v, p FROM {identifier}").collect())


def _run(spark: Any, warehouse: str, identifier: str) -> Model:
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    model: Model = {_key(r): r for r in SEED}
    for text, step in _statements(identifier):
        before = _snapshot(warehouse, identifier)
        paimon.sql(text)
        step(model)
        assert _rows(paimon, identifier) == sorted(model.values()), text
        assert _snapshot(warehouse, identifier) == before + 1, f"not one snapshot: {text}"
        snapshot = latest_snapshot(paimon_index.open_table(warehouse, identifier).paimon_table)
        assert snapshot.commit_kind == "APPEND", text
    return model


def test_sql_dml_on_a_merge_on_read_table_follows_the_model(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    _create(warehouse, "o.fixed", "fixed")
    model = _run(spark, warehouse, "o.fixed")
    # Our files read by pypaimon's own merge: the same rows.
    assert _pypaimon_merged(warehouse, "o.fixed").to_pylist() == \
        [dict(zip(SCHEMA.names, r, strict=True)) for r in sorted(model.values())]


def _pypaimon_merged(warehouse: str, identifier: str) -> pa.Table:
    """pypaimon's own merge read (its sort-merge reader) of the table, sorted by (id, p)."""
    builder = paimon_index.open_table(warehouse, identifier).paimon_table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits()).select(SCHEMA.names)
    return rows.sort_by([("id", "ascending"), ("p", "ascending")])


@pytest.mark.parametrize("kind", list(KINDS))
def test_planned_reads_of_level0_files_equal_sparks_filter_over_pypaimons_merge(spark, tmp_path: Path,
                                                                               kind: str) -> None:
    """A merge-on-read table after DELETE / UPDATE / MERGE / INSERT (level-0 files, every key's older
    versions in them) is read by the planned read, each key's older versions subtracted: through
    SQL (the small read), through Spark's Parquet scan (``small_read_bytes=0``: the vectors' words
    join) and counted -- each equal to Spark's own filter over pypaimon's merge read of the table."""
    warehouse = str(tmp_path)
    partitioned, options = KINDS[kind]
    table = paimon_index.create_table(warehouse, "o.i", SCHEMA, primary_keys=["id", "p"],
                                      partition_keys=["p"] if partitioned else [],
                                      options={**options, "file-index.bitmap.columns": "s",
                                               "file-index.bloom-filter.columns": "v"})
    table.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in SEED], SCHEMA))
    _run(spark, warehouse, "o.i")
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    reference = spark.createDataFrame(_pypaimon_merged(warehouse, "o.i"))
    for where in ("s = 's1'", "v = 7", "v > 5 AND s <> 'S1'", "id < 10 OR s IS NULL", "upper(s) = 'M3'",
                  "true"):
        expected = sorted(tuple(r) for r in reference.filter(where).collect())
        sql = paimon.sql(f"SELECT id, s, v, p FROM o.i WHERE {where}")
        assert sorted(tuple(r) for r in sql.collect()) == expected, where
        scan = jobs.read_planned(spark, "o.i", where, warehouse=warehouse, small_read_bytes=0)
        assert scan.fallback is None, where
        assert sorted(tuple(r) for r in scan.dataframe.select(*SCHEMA.names).collect()) == expected, where
        assert paimon.sql(f"SELECT count(*) FROM o.i WHERE {where}").collect()[0][0] == len(expected), where
    assert paimon.sql("SELECT count(*) FROM o.i").collect()[0][0] == reference.count()


def test_jobs_verbs_on_a_merge_on_read_table(spark, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    _create(warehouse, "o.t", "part")
    model: Model = {_key(r): r for r in SEED}
    jobs.delete(spark, "o.t", "v % 2 = 0", warehouse=warehouse)
    model = {k: r for k, r in model.items() if r[2] % 2 != 0}
    jobs.update(spark, "o.t", {"s": "'u'"}, "id > 20", warehouse=warehouse)
    model = {k: (r[0], "u", r[2], r[3]) if r[0] > 20 else r for k, r in model.items()}
    new = pa.Table.from_pylist([{"id": 1, "s": "a", "v": 1, "p": "y"},
                                {"id": 99, "s": "b", "v": 2, "p": "x"}], SCHEMA)
    jobs.upsert(spark, spark.createDataFrame(new.to_pandas()), "o.t", warehouse=warehouse)
    model.update({(1, "y"): (1, "a", 1, "y"), (99, "x"): (99, "b", 2, "x")})
    assert sorted(tuple(r.values()) for r in paimon_index.open_table(warehouse, "o.t").read().to_pylist()) \
        == sorted(model.values())


def test_jobs_read_merges_a_merge_on_read_table(spark, tmp_path: Path) -> None:
    """``jobs.read`` (and the noun's read) of a table whose rows need a merge by key: the merged
    rows, WHERE, columns, ORDER BY and LIMIT applied by Spark (it refused such tables before)."""
    warehouse = str(tmp_path)
    _create(warehouse, "o.t", "part")
    table = paimon_index.open_table(warehouse, "o.t")
    table.upsert(pa.Table.from_pylist([{"id": i, "s": "new", "v": 1000 + i, "p": "xyz"[i % 3]}
                                       for i in range(1, 11)], SCHEMA))
    table.delete("id = 12")
    model = {_key(r): r for r in SEED if r[0] != 12}
    model.update({(i, "xyz"[i % 3]): (i, "new", 1000 + i, "xyz"[i % 3]) for i in range(1, 11)})
    rows = jobs.read(spark, "o.t", warehouse=warehouse).collect()
    assert sorted(tuple(r) for r in rows) == sorted(model.values())
    picked = jobs.read(spark, "o.t", "v > 1004 OR id = 11", ["v", "id"], warehouse=warehouse,
                       order_by="v DESC", limit=3).collect()
    expected = sorted(((r[2], r[0]) for r in model.values() if r[2] > 1004 or r[0] == 11), reverse=True)[:3]
    assert [tuple(r) for r in picked] == expected
    noun = paimon_index.spark.attach(spark, warehouse=warehouse).table("o.t")
    assert noun.read("s = 'new'").count() == 10
    assert jobs.count(spark, "o.t", "s = 'new'", warehouse=warehouse) == 10
    with pytest.raises(paimon_index.errors.InvalidOptionError, match="nope"):
        jobs.read(spark, "o.t", columns=["nope"], warehouse=warehouse)


def test_call_compact_merges_a_merge_on_read_table_in_spark_tasks(spark, tmp_path: Path) -> None:
    """``CALL sys.compact`` (and ``jobs.compact``) on a table without deletion vectors: each bucket's
    files merged by key into one top-level file by a Spark task, one COMPACT snapshot (it was refused:
    "deletion-vectors mode needs ...")."""
    warehouse = str(tmp_path)
    _create(warehouse, "o.t", "part")
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    paimon.sql("DELETE FROM o.t WHERE v % 3 = 0")
    paimon.sql("UPDATE o.t SET s = 'u' WHERE id > 20")
    before = _rows(paimon, "o.t")
    paimon.sql("CALL sys.compact(table => 'o.t')")
    snapshot = latest_snapshot(paimon_index.open_table(warehouse, "o.t").paimon_table)
    assert snapshot.commit_kind == "COMPACT"
    assert _rows(paimon, "o.t") == before
    assert jobs.compact(spark, "o.t", warehouse=warehouse).snapshot_id is None  # one file per bucket already


@pytest.mark.parametrize("kind", [pytest.param("part", marks=pytest.mark.slow), "dyn"])  # CI's budget
def test_changes_are_written_by_spark_tasks_not_the_driver(spark, tmp_path: Path, kind: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's key-value writer made to fail: every statement still lands, one APPEND snapshot
    each, with the model's rows (the tasks -- other processes -- wrote the level-0 files; the
    driver committed). Before, the changes were collected and written on the driver."""
    from paimon_index.table.pk import merge_on_read

    def on_the_driver(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a merge-on-read change was written on the driver")

    monkeypatch.setattr(merge_on_read, "_write", on_the_driver)
    warehouse = str(tmp_path)
    _create(warehouse, f"o.{kind}", kind)
    model = _run(spark, warehouse, f"o.{kind}")
    rows = paimon_index.open_table(warehouse, f"o.{kind}").read().to_pylist()  # pypaimon's merge
    assert sorted(tuple(r.values()) for r in rows) == sorted(model.values())


def test_a_merge_that_deletes_on_a_partial_update_table_is_refused_before_any_file(
        spark, tmp_path: Path) -> None:
    """Deleting keys needs '*.remove-record-on-delete', which pypaimon's writer refuses: a MERGE
    whose DELETE clause matches is refused on the driver before the write job (no file, no
    snapshot); one whose DELETE clause matches nothing, and an UPDATE, land."""
    from paimon_index.errors import UnsupportedTableError

    warehouse = str(tmp_path)
    table = paimon_index.create_table(warehouse, "o.pu", SCHEMA, primary_keys=["id", "p"],
                                      options={"bucket": "2", "merge-engine": "partial-update"})
    table.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in SEED], SCHEMA))
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    merge = ("MERGE INTO o.pu AS t USING (SELECT * FROM VALUES (2, 'm', 7L, 'z'), (4, 'm', 1L, 'y') "
             "AS src(id, s, v, p)) AS s ON t.id = s.id AND t.p = s.p "
             "WHEN MATCHED AND s.v > {v} THEN DELETE WHEN MATCHED THEN UPDATE SET s = s.s")
    before, files = _snapshot(warehouse, "o.pu"), sorted(p.name for p in tmp_path.rglob("data-*"))
    with pytest.raises(UnsupportedTableError, match=r"deletion-vectors\.enabled"):
        paimon.sql(merge.format(v=5))
    assert _snapshot(warehouse, "o.pu") == before
    assert sorted(p.name for p in tmp_path.rglob("data-*")) == files
    paimon.sql(merge.format(v=100))  # its DELETE matches nothing: +U rows only
    paimon.sql("UPDATE o.pu SET s = NULL, v = 0 WHERE id = 3")  # NULL keeps the old value
    rows = {r[0]: r for r in _rows(paimon, "o.pu")}
    assert rows[2] == (2, "m", 2 * 3 % 17, "z") and rows[4] == (4, "m", 4 * 3 % 17, "y")
    assert rows[3] == (3, "s3", 0, "x")
    assert _snapshot(warehouse, "o.pu") == before + 2


@pytest.mark.slow
def test_the_same_statements_through_paimons_connector_both_ways(spark, tmp_path: Path) -> None:
    """Each side runs the statements on its own tables; then each reads the other's: equal rows."""
    import paimonsql

    warehouse = str(tmp_path)
    for kind in KINDS:
        _create(warehouse, f"o.{kind}", kind)
        _create(warehouse, f"r.{kind}", kind)
    ours = {kind: sorted(_run(spark, warehouse, f"o.{kind}").values()) for kind in KINDS}
    theirs_statements = [text for kind in KINDS for text, _ in _statements(f"r.{kind}")]
    finals = [f"SELECT id, s, v, p FROM {db}.{kind}" for db in ("r", "o") for kind in KINDS]
    results = paimonsql.run(warehouse, theirs_statements + finals)
    assert all(r["ok"] for r in results), [r for r in results if not r["ok"]]
    finals_out = results[len(theirs_statements):]
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    for i, kind in enumerate(KINDS):
        connector_own = sorted(tuple(r) for r in finals_out[i]["rows"])
        connector_reads_ours = sorted(tuple(r) for r in finals_out[len(KINDS) + i]["rows"])
        assert connector_own == ours[kind], kind  # the same statements, the same rows
        assert connector_reads_ours == ours[kind], kind  # the connector merges our files the same
        assert _rows(paimon, f"r.{kind}") == ours[kind], kind  # we merge the connector's files the same


# -- INSERT OVERWRITE ... PARTITION on primary-key tables (both modes) -----------------------------
DV = {"deletion-vectors.enabled": "true"}
OVERWRITE_KINDS = {"mor": {"bucket": "2"}, "dv": {"bucket": "2", **DV},
                   "mor_dyn": {"bucket": "-1"}, "dv_dyn": {"bucket": "-1", **DV}}


def _overwrites(t: str) -> list[tuple[str, Callable[[Model], None]]]:
    def replace(partition: str | None, rows: list[Row]) -> Callable[[Model], None]:
        def step(m: Model) -> None:
            for k in [k for k in m if partition is None or k[1] == partition]:
                del m[k]
            for r in rows:
                m[_key(r)] = r
        return step

    return [
        (f"INSERT OVERWRITE {t} PARTITION (p = 'x') SELECT id, s, v FROM VALUES (3, 'o3', 1L), "
         "(100, 'o100', 2L) AS src(id, s, v)",
         replace("x", [(3, "o3", 1, "x"), (100, "o100", 2, "x")])),
        (f"INSERT OVERWRITE {t} PARTITION (p = 'z') VALUES (7, 'z7', 70)",
         replace("z", [(7, "z7", 70, "z")])),
        (f"INSERT OVERWRITE {t} VALUES (1, 'all', 1, 'y')", replace(None, [(1, "all", 1, "y")])),
    ]


def _create_overwrite(warehouse: str, identifier: str, kind: str) -> None:
    table = paimon_index.create_table(warehouse, identifier, SCHEMA, primary_keys=["id", "p"],
                                      partition_keys=["p"], options=OVERWRITE_KINDS[kind])
    table.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in SEED], SCHEMA))


def _run_overwrites(spark: Any, warehouse: str, identifier: str) -> list[Row]:
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    model: Model = {_key(r): r for r in SEED}
    for text, step in _overwrites(identifier):
        before = _snapshot(warehouse, identifier)
        paimon.sql(text)
        step(model)
        assert _rows(paimon, identifier) == sorted(model.values()), text
        assert _snapshot(warehouse, identifier) == before + 1, f"not one snapshot: {text}"
    return sorted(model.values())


#: CI runs one kind per mode and per bucket layout (the differential matrix's overwrite state runs
#: the same two halves, prepare_overwrite + commit_overwrite, through Table.write on fixed-bucket
#: tables of both modes); -m slow runs all four.
CI_OVERWRITE_KINDS = ("dv", "mor_dyn")


@pytest.mark.parametrize("kind", [pytest.param(k, marks=[] if k in CI_OVERWRITE_KINDS else [pytest.mark.slow])
                                  for k in OVERWRITE_KINDS])
def test_insert_overwrite_partition_of_a_primary_key_table(spark, tmp_path: Path, kind: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused before ('INSERT OVERWRITE ... PARTITION of the primary-key table ... is not supported').
    The driver's writers made to fail: the rows are written by the Spark tasks (other processes),
    the driver commits (before, they were collected and written on the driver)."""
    from paimon_index.table import write
    from paimon_index.table.pk import upsert

    _create_overwrite(str(tmp_path), "o.t", kind)

    def on_the_driver(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an INSERT OVERWRITE was written on the driver")

    monkeypatch.setattr(upsert, "write_rows", on_the_driver)
    monkeypatch.setattr(write, "write_files", on_the_driver)
    _run_overwrites(spark, str(tmp_path), "o.t")


@pytest.mark.slow
def test_insert_overwrite_partition_through_paimons_connector_both_ways(spark, tmp_path: Path) -> None:
    import paimonsql

    warehouse = str(tmp_path)
    ours = {}
    for kind in OVERWRITE_KINDS:
        _create_overwrite(warehouse, f"o.{kind}", kind)
        _create_overwrite(warehouse, f"r.{kind}", kind)
        ours[kind] = _run_overwrites(spark, warehouse, f"o.{kind}")
    statements = [text for kind in OVERWRITE_KINDS for text, _ in _overwrites(f"r.{kind}")]
    finals = [f"SELECT id, s, v, p FROM {db}.{kind}" for db in ("r", "o") for kind in OVERWRITE_KINDS]
    results = paimonsql.run(warehouse, statements + finals)
    assert all(r["ok"] for r in results), [r for r in results if not r["ok"]]
    out = results[len(statements):]
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    for i, kind in enumerate(OVERWRITE_KINDS):
        assert sorted(tuple(r) for r in out[i]["rows"]) == ours[kind], kind
        assert sorted(tuple(r) for r in out[len(OVERWRITE_KINDS) + i]["rows"]) == ours[kind], kind
        assert _rows(paimon, f"r.{kind}") == ours[kind], kind


@pytest.mark.slow
def test_partial_update_without_vectors_through_paimons_connector_both_ways(spark, tmp_path: Path) -> None:
    """UPDATE (a NULL SET keeps the old value) and MERGE without DELETE on a partial-update table."""
    import paimonsql

    warehouse = str(tmp_path)
    options = {"bucket": "2", "merge-engine": "partial-update"}
    for db in ("o", "r"):
        table = paimon_index.create_table(warehouse, f"{db}.pu", SCHEMA, primary_keys=["id", "p"],
                                          partition_keys=["p"], options=options)
        table.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in SEED], SCHEMA))
    statements = [
        "UPDATE {t} SET s = NULL, v = v + 1 WHERE id % 3 = 0",
        "MERGE INTO {t} AS t USING (SELECT * FROM VALUES (2, NULL, 7L, 'z'), (77, 'n', 8L, 'x') "
        "AS src(id, s, v, p)) AS s ON t.id = s.id AND t.p = s.p "
        "WHEN MATCHED THEN UPDATE SET s = s.s, v = s.v WHEN NOT MATCHED THEN INSERT *",
    ]
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    for text in statements:
        paimon.sql(text.format(t="o.pu"))
    results = paimonsql.run(warehouse, [t.format(t="r.pu") for t in statements]
                            + ["SELECT id, s, v, p FROM r.pu", "SELECT id, s, v, p FROM o.pu"])
    assert all(r["ok"] for r in results), [r for r in results if not r["ok"]]
    ours = _rows(paimon, "o.pu")
    assert sorted(tuple(r) for r in results[-2]["rows"]) == ours  # the connector's own changes
    assert sorted(tuple(r) for r in results[-1]["rows"]) == ours  # the connector reads ours
    assert _rows(paimon, "r.pu") == ours  # we read the connector's
    # NULL SET values kept the old ones (partial-update), new values landed.
    assert all(r[1] is not None for r in ours if r[0] % 3 == 0)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_fully_compacted_merge_on_read_table_takes_the_planned_read(spark, tmp_path: Path,
                                                                       kind: str) -> None:
    """After a full compaction every bucket is one top-level file without a retraction: no key has
    two versions, so the read is planned (indexes asked, Spark's Parquet reader) with nothing
    subtracted, as Java reads such a bucket raw (``MergeTreeSplitGenerator``). With level-0 files
    the planned read subtracts each key's older versions (``table/pk/versions.py``). The rows are
    the merged ones either way, and the model's."""
    warehouse = str(tmp_path)
    _create(warehouse, "o.t", kind)
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    model = _run(spark, warehouse, "o.t")
    before = jobs.read_planned(spark, "o.t", "v > 3", warehouse=warehouse, small_read_bytes=0)
    assert before.fallback is None and any(f.deleted is not None for f in before.plan.files)
    assert sorted(tuple(r) for r in before.dataframe.select("id", "s", "v", "p").collect()) == \
        sorted(r for r in model.values() if r[2] > 3)
    merged = _rows(paimon, "o.t")
    assert merged == sorted(model.values())
    paimon.sql("CALL sys.compact(table => 'o.t', compact_strategy => 'full')")
    planned = jobs.read_planned(spark, "o.t", "v > 3", warehouse=warehouse, small_read_bytes=0)
    assert planned.fallback is None and planned.plan.files
    assert sorted(tuple(r) for r in planned.dataframe.select("id", "s", "v", "p").collect()) == \
        sorted(r for r in model.values() if r[2] > 3)
    assert _rows(paimon, "o.t") == merged
    assert jobs.count(spark, "o.t", warehouse=warehouse) == len(model)
    # A change makes level-0 files again: older versions subtracted once more.
    paimon.sql("DELETE FROM o.t WHERE v > 10")
    after = jobs.read_planned(spark, "o.t", warehouse=warehouse, small_read_bytes=0)
    assert after.fallback is None and any(f.deleted is not None for f in after.plan.files)
    assert _rows(paimon, "o.t") == sorted(r for r in model.values() if r[2] <= 10)


def test_a_change_the_plan_proves_large_is_not_fetched_first(spark, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An UPDATE whose WHERE the bitmap answers exactly for more rows than the driver writes goes
    to the tasks without a LIMIT fetching rows first; a DELETE the indexes cannot count (an
    unindexed conjunct) is fetched and, being few, written on the driver; on a local master the
    driver writes up to ``LOCAL_CHANGE_ROWS``. Each leaves pypaimon's merge read equal to the model."""
    from paimon_index.spark import planned
    from paimon_index.table.pk import merge_on_read as table_merge_on_read

    monkeypatch.setattr(jobs, "SMALL_CHANGE_ROWS", 50)
    monkeypatch.setattr(jobs, "LOCAL_CHANGE_ROWS", 50)
    # Spark's reader reads the rows (the driver writes rows its own read took: the test below).
    monkeypatch.setattr(planned, "SMALL_READ_ROWS", 10)
    monkeypatch.setattr(planned, "LOCAL_SELECTED_ROWS", 10)
    limits: list[int] = []
    frame = type(spark.range(1))
    limit = frame.limit
    monkeypatch.setattr(frame, "limit", lambda self, n: limits.append(n) or limit(self, n))
    driver_writes: list[str] = []
    write_changes = table_merge_on_read.write_changes
    monkeypatch.setattr(table_merge_on_read, "write_changes",
                        lambda *a, **k: driver_writes.append(k["operation"]) or write_changes(*a, **k))
    warehouse = str(tmp_path)
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    paimon.sql("CREATE DATABASE o")
    paimon.sql("CREATE TABLE o.t (id BIGINT NOT NULL, k INT, s STRING) TBLPROPERTIES ('primary-key' = 'id', "
               "'bucket' = '2', 'file-index.bitmap.columns' = 'k')")
    paimon.sql("INSERT INTO o.t SELECT id, CAST(id % 5 AS INT), 'a' FROM range(1000)")
    paimon.sql("INSERT INTO o.t SELECT id, CAST(id % 5 AS INT), 'b' FROM range(0, 1000, 3)")  # two versions
    model = {i: (i, i % 5, "b" if i % 3 == 0 else "a") for i in range(1000)}

    paimon.sql("UPDATE o.t SET s = concat(s, '!') WHERE k = 2")  # 200 rows, counted by the bitmap
    model = {i: (i, v[1], v[2] + "!") if v[1] == 2 else v for i, v in model.items()}
    assert (limits, driver_writes) == ([], [])
    paimon.sql("DELETE FROM o.t WHERE k = 3 AND s = 'b' AND id < 100")  # 7 rows, s not indexed
    model = {i: v for i, v in model.items() if not (v[1] == 3 and v[2] == "b" and i < 100)}
    assert driver_writes == ["delete"]
    # On a local master the driver writes up to LOCAL_CHANGE_ROWS (the executors' machine anyway).
    monkeypatch.setattr(jobs, "LOCAL_CHANGE_ROWS", 1_000)
    paimon.sql("UPDATE o.t SET s = 'c' WHERE k = 4")  # 200 rows
    model = {i: (i, v[1], "c") if v[1] == 4 else v for i, v in model.items()}
    assert driver_writes == ["delete", "update"]
    # The jobs' verbs pass their plan's count too: no LIMIT before the tasks.
    monkeypatch.setattr(jobs, "LOCAL_CHANGE_ROWS", 50)
    fetched = len(limits)
    jobs.update(spark, "o.t", {"s": "'d'"}, "k = 0", warehouse=warehouse)  # 200 rows
    model = {i: (i, v[1], "d") if v[1] == 0 else v for i, v in model.items()}
    assert (len(limits), driver_writes) == (fetched, ["delete", "update"])
    merged = paimon_index.open_table(warehouse, "o.t").read()  # pypaimon's merge
    assert sorted(tuple(r.values()) for r in merged.to_pylist()) == sorted(model.values())


@pytest.mark.parametrize(("bucket", "partitioned"), [("2", False), ("-1", False), ("2", True)])
def test_a_change_reads_its_selected_rows_on_the_driver_into_a_file_it_removes(
        spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bucket: str, partitioned: bool) -> None:
    """Inside DELETE / UPDATE (SQL and the jobs' verbs) the driver reads the rows the bitmap selected
    past ``LOCAL_SELECTED_ROWS`` (up to 1/``CHANGE_SELECTED_SHARE`` of the plan's rows) and hands
    them to Spark's tasks in a scratch file of the statement's own, gone when it ends; a query
    outside a change keeps the limit. Every step's rows equal the model, read back by pypaimon's
    merge."""
    from paimon_index.spark import planned

    monkeypatch.setattr(planned, "LOCAL_SELECTED_ROWS", 10)
    monkeypatch.setattr(planned, "SMALL_READ_ROWS", 20)
    files: list[tuple[int, str]] = []
    scratch_file = planned._scratch_file

    def recorded(kind: str, table: pa.Table) -> str:
        path = scratch_file(kind, table)
        if kind == "rows":
            files.append((table.num_rows, path))
        return path

    monkeypatch.setattr(planned, "_scratch_file", recorded)
    warehouse = str(tmp_path)
    paimon = paimon_index.spark.attach(spark, warehouse=warehouse)
    paimon.sql("CREATE DATABASE o")
    # Partitioned: a partition column p = id % 3 in the key (every k in every partition); the model
    # keeps (id, k, s).
    partition = (", p INT) PARTITIONED BY (p", ",p", ", CAST(id % 3 AS INT)") if partitioned else ("", "", "")
    paimon.sql(f"CREATE TABLE o.t (id BIGINT NOT NULL, k INT, s STRING{partition[0]}) TBLPROPERTIES ("
               f"'primary-key' = 'id{partition[1]}', 'bucket' = '{bucket}', "
               "'file-index.bitmap.columns' = 'k')")
    paimon.sql(f"INSERT INTO o.t SELECT id, CAST(id % 10 AS INT), 'a'{partition[2]} FROM range(1000)")
    paimon.sql(f"INSERT INTO o.t SELECT id, CAST(id % 10 AS INT), 'b'{partition[2]} "
               "FROM range(0, 1000, 3)")  # two versions
    model = {i: (i, i % 10, "b" if i % 3 == 0 else "a") for i in range(1000)}

    def merged() -> list[tuple[Any, ...]]:
        rows = paimon_index.open_table(warehouse, "o.t").read().to_pylist()
        return sorted((r["id"], r["k"], r["s"]) for r in rows)

    rows = paimon.sql("SELECT * FROM o.t WHERE k = 2").collect()  # 100 selected rows: Spark's reader
    assert sorted((r.id, r.k, r.s) for r in rows) == sorted(v for v in model.values() if v[1] == 2)
    assert files == []

    paimon.sql("UPDATE o.t SET s = concat(s, '!') WHERE k = 2")
    model = {i: (i, v[1], v[2] + "!") if v[1] == 2 else v for i, v in model.items()}
    assert [n for n, _ in files] == [100]
    paimon.sql("DELETE FROM o.t WHERE k = 3 AND s = 'b'")
    model = {i: v for i, v in model.items() if not (v[1] == 3 and v[2] == "b")}
    jobs.update(spark, "o.t", {"s": "'d'"}, "k = 4", warehouse=warehouse)
    model = {i: (i, v[1], "d") if v[1] == 4 else v for i, v in model.items()}
    jobs.delete(spark, "o.t", "k = 5", warehouse=warehouse)
    model = {i: v for i, v in model.items() if v[1] != 5}
    # The DELETE's 100 selected rows (k = 3) kept to its 34 by the read's Arrow pre-filter.
    assert [n for n, _ in files] == [100, 34, 100, 100]
    assert not any(Path(path).exists() for _, path in files)
    assert merged() == sorted(model.values())

    # With the driver's writes on (a local master), rows the statement's read held on the driver
    # are written there past LOCAL_CHANGE_ROWS.
    from paimon_index.table.pk import merge_on_read as table_merge_on_read

    monkeypatch.setattr(jobs, "SMALL_CHANGE_ROWS", 50)
    monkeypatch.setattr(jobs, "LOCAL_CHANGE_ROWS", 50)
    driver_writes: list[int] = []
    write_changes = table_merge_on_read.write_changes

    def written_on_the_driver(table: Any, rows: pa.Table, **options: Any) -> int | None:
        driver_writes.append(rows.num_rows)
        return write_changes(table, rows, **options)

    monkeypatch.setattr(table_merge_on_read, "write_changes", written_on_the_driver)
    paimon.sql("UPDATE o.t SET s = 'e' WHERE k = 6")
    model = {i: (i, v[1], "e") if v[1] == 6 else v for i, v in model.items()}
    assert driver_writes == [100]
    # Rows a subquery's read took are not the change's: its 100 rows go to the tasks.
    paimon.sql("DELETE FROM o.t WHERE id IN (SELECT id FROM o.t WHERE k = 7)")
    model = {i: v for i, v in model.items() if v[1] != 7}
    assert driver_writes == [100]
    # Selected rows past LOCAL_SELECTED_ROWS holding more than CHANGE_SELECTED_BYTES: Spark's reader.
    monkeypatch.setattr(planned, "CHANGE_SELECTED_BYTES", 1)
    read_before = len(files)
    paimon.sql("UPDATE o.t SET s = 'f' WHERE k = 8")
    model = {i: (i, v[1], "f") if v[1] == 8 else v for i, v in model.items()}
    assert (len(files), driver_writes) == (read_before, [100])
    assert merged() == sorted(model.values())
