"""Value statistics: written as Java writes them, and pruning never drops a matching row.

References: Java Paimon (``oracle.sh write`` of the same rows, whose manifest stats must equal
ours; ``oracle.sh read --where`` pruning by our stats with the same rows), Java's
``TruncateSimpleColStatsCollector`` behaviour worked out by hand, and a plain per-row evaluation
(SQL semantics; a NaN row counts as matching if it matches under IEEE or Spark ordering).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_index.errors import InvalidOptionError
from paimon_index.predicate import Leaf, Op
from paimon_index.sql import bind_predicate
from paimon_index.table.catalog import create_table
from paimon_index.table.read import read_arrow
from paimon_index.table.schemas import read_schema
from paimon_index.table.stats import (
    _FileStats,
    file_value_stats,
    stats_may_match,
    truncate_max,
    truncate_min,
)
from paimon_index.table.write import write_arrow
from paimon_index.types import canonical_literal

ROOT = Path(__file__).resolve().parents[2]
ORACLE_CANDIDATES = [ROOT.parent / "shared" / "java-paimon", ROOT.parent.parent / "shared" / "java-paimon"]


def oracle() -> Path:
    for candidate in ORACLE_CANDIDATES:
        if (candidate / "oracle.sh").is_file():
            if shutil.which("java") is None:
                pytest.skip("java not found")
            return candidate / "oracle.sh"
    pytest.skip("Java Paimon oracle not found")


def run_oracle(*args: str) -> dict:
    env = {**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)}
    out = subprocess.run([str(oracle()), *args], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def manifest_stats(table) -> list[tuple]:
    """(value_stats_cols, mins, maxs, null counts) of every live data file, as pypaimon decodes them."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    snapshot = table.snapshot_manager().get_latest_snapshot()
    found = []
    for manifest in ManifestListManager(table).read_all(snapshot):
        for entry in ManifestFileManager(table).read(manifest.file_name, drop_stats=False):
            stats = entry.file.value_stats
            n = len(stats.min_values.fields)
            found.append((entry.file.value_stats_cols, [stats.min_values.get_field(i) for i in range(n)],
                          [stats.max_values.get_field(i) for i in range(n)], list(stats.null_counts)))
    return found


# --- truncation, as Java's TruncateSimpleColStatsCollector -------------------------------------

def test_truncation_follows_java() -> None:
    assert truncate_min("abcdefghijklmnopqrstuvwxyz", 16) == "abcdefghijklmnop"
    assert truncate_max("abcdefghijklmnopqrstuvwxyz", 16) == "abcdefghijklmnoq"
    assert truncate_max("short", 16) == "short" and truncate_min("short", 16) == "short"
    # Code points, not UTF-16 units or bytes: 16 emoji stay 16 emoji.
    emoji = "\U0001F600" * 20
    assert truncate_min(emoji, 16) == "\U0001F600" * 16
    assert truncate_max(emoji, 16) == "\U0001F600" * 15 + "\U0001F601"
    # The last code point cannot grow: the one before it does, the rest is dropped.
    assert truncate_max("a" * 15 + "\U0010FFFF" + "zz", 16) == "a" * 14 + "b"
    assert truncate_max("\U0010FFFF" * 17, 16) is None
    # Java would write U+D800 as '?' (no upper bound): we jump over the surrogates.
    assert truncate_max("a" * 15 + "\ud7ff" + "z", 16) == "a" * 15 + "\ue000"
    assert truncate_max(b"\x01" * 15 + b"\xff\x02", 16) == b"\x01" * 14 + b"\x02"
    assert truncate_max(b"\xff" * 17, 16) is None
    assert truncate_min(b"\x00" * 20, 16) == b"\x00" * 16


# --- the stats we write equal Java's -------------------------------------------------------------

JAVA_SCHEMA = ("id BIGINT, i INT, s STRING, d DOUBLE, f FLOAT, m DECIMAL(10, 2), day DATE, "
               "t3 TIMESTAMP(3), t6 TIMESTAMP(6), b BOOLEAN")
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("i", pa.int32()), ("s", pa.string()), ("d", pa.float64()),
                          ("f", pa.float32()), ("m", pa.decimal128(10, 2)), ("day", pa.date32()),
                          ("t3", pa.timestamp("ms")), ("t6", pa.timestamp("us")), ("b", pa.bool_())])


def java_rows() -> list[dict]:
    base = dt.datetime(2024, 5, 1, 12, 30, 15, 123456)
    rows = []
    for k in range(40):
        rows.append({
            "id": k * 7 - 100, "i": None if k % 5 == 0 else -k, "s": None if k % 7 == 0 else
            ["", "a", "zzzz" * 6 + str(k), "héllo wörld ünïcode ✓✓", "\U0001F600" * 18,
             "abc" + "L" * 5000][k % 6],  # over pyarrow's statistics size limit
            "d": [0.0, -0.0, 1.5, -2.25, 1e300][k % 5], "f": [0.5, -0.0, 3.25][k % 3],
            "m": None if k % 3 == 0 else decimal.Decimal(k * 37 - 500).scaleb(-2),
            "day": dt.date(2020, 1, 1) + dt.timedelta(days=k * 11),
            "t3": (base + dt.timedelta(minutes=k)).replace(microsecond=123000),
            "t6": base + dt.timedelta(seconds=k * 13), "b": None if k == 3 else k % 4 == 0})
    return rows


def as_json(row: dict) -> dict:
    out = {}
    for key, value in row.items():
        if isinstance(value, decimal.Decimal):
            value = str(value)
        elif isinstance(value, dt.datetime):
            value = value.isoformat(sep=" ")
        elif isinstance(value, dt.date):
            value = value.isoformat()
        out[key] = value
    return out


def test_our_stats_equal_the_stats_java_writes_for_the_same_rows(tmp_path: Path) -> None:
    oracle()
    rows = java_rows()
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(as_json(r)) + "\n" for r in rows))
    run_oracle("write", "--warehouse", str(tmp_path / "java"), "--table", "db.t", "--schema", JAVA_SCHEMA,
               "--options", "bucket=-1", "--jsonl", str(jsonl))
    ours = create_table(str(tmp_path / "ours"), "db.t", ARROW_SCHEMA, options={"bucket": "-1"})
    write_arrow(ours, pa.Table.from_pylist(rows, ARROW_SCHEMA))
    from paimon_index.table.catalog import open_table

    theirs = manifest_stats(open_table(str(tmp_path / "java"), "db.t"))
    mine = manifest_stats(ours)
    assert len(theirs) == len(mine) == 1
    assert mine[0][0] is None and theirs[0][0] is None  # every column has stats
    assert mine[0][3] == theirs[0][3]  # null counts
    for column, (a, b) in enumerate(zip(mine[0][1], theirs[0][1], strict=True)):
        assert a == b, ("min", ARROW_SCHEMA.names[column], a, b)
    for column, (a, b) in enumerate(zip(mine[0][2], theirs[0][2], strict=True)):
        assert a == b, ("max", ARROW_SCHEMA.names[column], a, b)
    # The truncated string bounds are Java's exactly.
    assert mine[0][2][2] == theirs[0][2][2] and len(theirs[0][2][2]) <= 16


def test_stats_modes_and_nan(tmp_path: Path) -> None:
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("x", pa.float64())])
    table = create_table(str(tmp_path), "db.t", schema, options={
        "bucket": "-1", "fields.a.stats-mode": "none", "fields.s.stats-mode": "full"})
    write_arrow(table, pa.table({"a": [1, 2], "s": ["q" * 30, None], "x": [1.0, math.nan]}, schema=schema))
    [(cols, mins, maxs, nulls)] = manifest_stats(table)
    assert cols == ["s", "x"]  # dense store: the column without stats is left out
    assert mins[0] == maxs[0] == "q" * 30  # full: no truncation
    assert mins[1] is None and maxs[1] is None and nulls == [1, 0]  # NaN: no bounds
    bad = create_table(str(tmp_path), "db.bad", schema,
                       options={"bucket": "-1", "metadata.stats-mode": "most"})
    with pytest.raises(InvalidOptionError, match="most"):
        write_arrow(bad, pa.table({"a": [1], "s": ["x"], "x": [1.0]}, schema=schema))


# --- pruning: Java prunes by our stats, we prune the same files ----------------------------------

@pytest.mark.parametrize("where", ["id >= 25", "id < 5 OR id > 36", "x < 0.5", "s = 'k3-0'", "y IS NULL",
                                   "s >= 'k2' AND id < 28"])
def test_java_prunes_by_our_stats_and_we_skip_the_same_files(tmp_path: Path, where: str) -> None:
    oracle()
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("x", pa.float64()), ("y", pa.int32())])
    table = create_table(str(tmp_path), "db.t", schema, options={"bucket": "-1"})
    for k in range(4):
        ids = list(range(k * 10, k * 10 + 10))
        write_arrow(table, pa.table({"id": ids, "s": [f"k{k}-{i % 3}" for i in ids],
                                     "x": [float(k)] * 10, "y": [None if k == 1 else i for i in ids]},
                                    schema=schema))
    java = run_oracle("read", "--warehouse", str(tmp_path), "--table", "db.t", "--where", where)
    rows, report = read_arrow(table, where)
    plain, _ = read_arrow(table, "id IS NOT NULL")
    expected = plain.filter(pa.compute.field("id").isin(rows["id"])).num_rows
    assert rows.num_rows == java["rows"] == expected
    assert java["data_files_planned"] < 4
    assert report.files_planned == java["data_files_planned"]
    assert report.files_skipped_by_stats == 4 - java["data_files_planned"]


def test_schema_evolved_files_map_stats_by_field_id(tmp_path: Path) -> None:
    from paimon_index.table.catalog import catalog

    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    table = create_table(str(tmp_path), "db.t", schema, options={"bucket": "-1"})
    write_arrow(table, pa.table({"id": [1, 2], "v": [10, 20]}, schema=schema))
    from pypaimon.schema.schema_change import SchemaChange

    # Rename v -> w and add a new v: the old file's stats for "v" belong to w (same field id).
    catalog(str(tmp_path)).alter_table("db.t", [SchemaChange.rename_column("v", "w"),
                                                 SchemaChange.add_column("v", _bigint())], False)
    table = catalog(str(tmp_path)).get_table("db.t")
    file_stats = _FileStats(table, read_schema(table))
    [split] = table.new_read_builder().new_scan().plan().splits()
    meta = split.files[0]
    stats = _entry_stats(table, meta)
    columns = file_stats.columns(stats, ["w", "v"])
    assert "v" not in columns  # added after the file was written: not used
    assert columns["w"].min == 10 and columns["w"].max == 20


def _bigint():
    from pypaimon.schema.data_types import AtomicType

    return AtomicType("BIGINT")


def _entry_stats(table, meta):
    """The file's meta as the manifest holds it (pypaimon's plan drops stats)."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    snapshot = table.snapshot_manager().get_latest_snapshot()
    for manifest in ManifestListManager(table).read_all(snapshot):
        for entry in ManifestFileManager(table).read(manifest.file_name, drop_stats=False):
            if entry.file.file_name == meta.file_name:
                return entry.file
    raise AssertionError("file not in the manifests")


def test_float_bounds_java_writes_with_nan_never_prune_wrongly() -> None:
    from paimon_index.table.stats import ColumnStats
    from paimon_index.types import parse_type

    schema = {"x": parse_type("DOUBLE")}
    # Java's stats of [1.0, NaN, -0.0]: min -0.0, max NaN; a NaN min (writer saw NaN first) bounds nothing.
    java = {"x": ColumnStats(-0.0, math.nan, 0, 3)}
    assert stats_may_match(Leaf(Op.GT, "x", (100.0,)), java, schema)  # the NaN row (Spark: NaN > 100)
    assert stats_may_match(Leaf(Op.EQ, "x", (0.0,)), java, schema)  # -0.0 = 0.0
    assert not stats_may_match(Leaf(Op.LT, "x", (-1.0,)), java, schema)
    nan_min = {"x": ColumnStats(math.nan, math.nan, 0, 3)}
    for op in (Op.LT, Op.LE, Op.EQ, Op.GT, Op.BETWEEN):
        literals = (1.0, 2.0) if op is Op.BETWEEN else (1.0,)
        assert stats_may_match(Leaf(op, "x", literals), nan_min, schema)
    # Without a max (our writer, NaN present) only the min prunes.
    ours = {"x": ColumnStats(None, None, 0, 3)}
    assert stats_may_match(Leaf(Op.LT, "x", (-1.0,)), ours, schema)


# --- property: stats pruning never drops a matching row ------------------------------------------

PROP_SCHEMA = pa.schema([("n", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
_floats = st.one_of(st.sampled_from([math.nan, 0.0, -0.0, math.inf, -math.inf, 1.0, -1.0]),
                    st.floats(-5, 5, allow_nan=False))
_strings = st.one_of(st.sampled_from(["", "a", "ab", "b", "a" * 16, "a" * 17, "a" * 15 + "\U0010FFFF" + "x",
                                      "\U0001F600" * 17]), st.text(max_size=20))
_rows = st.lists(st.tuples(st.one_of(st.none(), st.integers(-5, 5)), st.one_of(st.none(), _floats),
                           st.one_of(st.none(), _strings)), min_size=1, max_size=12)
_ops = [Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN, Op.BETWEEN, Op.IS_NULL, Op.IS_NOT_NULL,
        Op.STARTS_WITH]


@st.composite
def leaves(draw) -> Leaf:
    column = draw(st.sampled_from(["n", "x", "s"]))
    op = draw(st.sampled_from(_ops if column == "s" else _ops[:-1]))
    value = {"n": st.integers(-6, 6), "x": _floats, "s": _strings}[column]
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        literals: tuple = ()
    elif op in (Op.IN, Op.NOT_IN):
        literals = tuple(draw(st.lists(value, min_size=1, max_size=3)))
    elif op is Op.BETWEEN:
        literals = tuple(sorted(draw(st.lists(value.filter(lambda v: v == v), min_size=2, max_size=2))))
    else:
        literals = (draw(value),)
    return Leaf(op, column, literals)


def _cmp(a, b, spark: bool) -> int | None:
    """-1/0/1, IEEE (None when NaN is involved) or Spark (NaN largest, NaN = NaN)."""
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        if not spark:
            return None
        return 0 if math.isnan(a) and math.isnan(b) else (1 if math.isnan(a) else -1)
    return (a > b) - (a < b)


def row_matches(leaf: Leaf, value, spark: bool) -> bool:
    if leaf.op is Op.IS_NULL:
        return value is None
    if leaf.op is Op.IS_NOT_NULL:
        return value is not None
    if value is None:
        return False
    c = [_cmp(value, lit, spark) for lit in leaf.literals]
    match leaf.op:
        case Op.EQ | Op.IN:
            return any(x == 0 for x in c)
        case Op.NE | Op.NOT_IN:
            return all(x is not None and x != 0 for x in c)
        case Op.LT:
            return c[0] is not None and c[0] < 0
        case Op.LE:
            return c[0] is not None and c[0] <= 0
        case Op.GT:
            return c[0] is not None and c[0] > 0
        case Op.GE:
            return c[0] is not None and c[0] >= 0
        case Op.BETWEEN:
            return c[0] is not None and c[1] is not None and c[0] >= 0 and c[1] <= 0
        case Op.STARTS_WITH:
            return value.startswith(leaf.literals[0])
    raise AssertionError(leaf)


@pytest.fixture(scope="module")
def prop_table(tmp_path_factory):
    return create_table(str(tmp_path_factory.mktemp("prop")), "db.t", PROP_SCHEMA,
                        options={"bucket": "-1"})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_rows, leaf=leaves(), row_group=st.sampled_from([2, 5, 1000]))
def test_stats_pruning_never_drops_a_matching_row(prop_table, tmp_path_factory, rows, leaf,
                                                  row_group) -> None:
    from pypaimon.table.row.binary_row import BinaryRow
    from pypaimon.table.row.generic_row import GenericRowSerializer

    path = str(tmp_path_factory.getbasetemp() / "prop.parquet")
    data = pa.Table.from_pylist([dict(zip(PROP_SCHEMA.names, r, strict=True)) for r in rows], PROP_SCHEMA)
    pq.write_table(data, path, row_group_size=row_group)
    meta = SimpleNamespace(file_path=path, row_count=len(rows), schema_id=prop_table.table_schema.id)
    stats, _ = file_value_stats(prop_table, meta)
    # Through the bytes Java and pypaimon read back.
    for name in ("min_values", "max_values"):
        row = getattr(stats, name)
        setattr(stats, name, BinaryRow(GenericRowSerializer.to_bytes(row), row.fields))
    meta.value_stats = stats
    schema = read_schema(prop_table)
    columns = _FileStats(prop_table, schema).columns(meta, ["n", "x", "s"])
    dtype = schema[leaf.column]
    bound = Leaf(leaf.op, leaf.column, tuple(canonical_literal(v, dtype) for v in leaf.literals))
    index = PROP_SCHEMA.names.index(leaf.column)
    values = [r[index] for r in rows]
    if any(row_matches(leaf, v, spark) for v in values for spark in (False, True)):
        assert stats_may_match(bound, columns, schema), (leaf, values, columns.get(leaf.column))


def test_read_with_stats_equals_plain_evaluation_on_several_files(tmp_path: Path) -> None:
    table = create_table(str(tmp_path), "db.t", PROP_SCHEMA, options={"bucket": "-1"})
    batches = [[(i, math.nan if k == 4 and i % 3 == 0 else k + (i % 2) / 2, f"w{i:03d}" * 6)
                for i in range(k * 10, k * 10 + 10)] for k in range(5)]
    for rows in batches:
        write_arrow(table, pa.Table.from_pylist([dict(zip(PROP_SCHEMA.names, r, strict=True)) for r in rows],
                                                PROP_SCHEMA))
    everything = [r for rows in batches for r in rows]
    for where, keep in [("n >= 31", lambda r: r[0] >= 31), ("x < 1.0", lambda r: r[1] < 1.0),
                        ("s < 'w012'", lambda r: r[2] < "w012"),
                        ("n BETWEEN 12 AND 14", lambda r: 12 <= r[0] <= 14)]:
        got, report = read_arrow(table, where)
        assert sorted(got["n"].to_pylist()) == sorted(r[0] for r in everything if keep(r)), where
        assert report.files_skipped_by_stats >= 1, where
    got, report = read_arrow(table, "x > 2.5")  # NaN rows: the files holding them are never skipped by max
    assert report.files_skipped_by_stats == 0
    assert bind_predicate("x > 2.5", read_schema(table)) is not None


def test_decimal_date_timestamp_and_boolean_stats_prune_exactly(tmp_path: Path) -> None:
    schema = pa.schema([("m", pa.decimal128(10, 2)), ("day", pa.date32()), ("t", pa.timestamp("us")),
                        ("t3", pa.timestamp("ms")), ("b", pa.bool_())])
    table = create_table(str(tmp_path), "db.t", schema, options={"bucket": "-1"})
    start = dt.datetime(2024, 1, 1, 0, 0, 0, 999)
    everything = []
    for k in range(4):
        rows = [{"m": decimal.Decimal(k * 100 + i).scaleb(-2),
                 "day": dt.date(2024, 1, 1) + dt.timedelta(days=k * 10 + i),
                 "t": start + dt.timedelta(hours=k * 10 + i),
                 "t3": (start + dt.timedelta(hours=k * 10 + i)).replace(microsecond=0),  # millis
                 "b": k == 2} for i in range(5)]
        write_arrow(table, pa.Table.from_pylist(rows, schema))
        everything += rows
    for where, keep in [
        ("m >= 2.01", lambda r: r["m"] >= decimal.Decimal("2.01")),
        ("day < DATE '2024-01-11'", lambda r: r["day"] < dt.date(2024, 1, 11)),
        ("t > TIMESTAMP '2024-01-02 06:00:00'", lambda r: r["t"] > dt.datetime(2024, 1, 2, 6)),
        ("t3 <= TIMESTAMP '2024-01-01 01:00:00'", lambda r: r["t3"] <= dt.datetime(2024, 1, 1, 1)),
        ("b = true", lambda r: r["b"]),
    ]:
        got, report = read_arrow(table, where)
        expected = sorted(r["m"] for r in everything if keep(r))
        assert sorted(got["m"].to_pylist()) == expected, where
        assert report.files_skipped_by_stats >= 2, (where, report.files_skipped_by_stats)


def _manifest_files(table) -> list:
    """The live data files of the latest snapshot as the manifests hold them (splits drop the stats)."""
    scan = table.new_read_builder().new_scan()
    scanner = scan.file_scanner
    original = scanner._filter_manifest_entry
    seen: dict = {}

    def keep(entry) -> bool:
        if original(entry):
            seen.setdefault(entry.file.file_name, entry.file)
            return True
        return False

    scanner._filter_manifest_entry = keep
    live = {f.file_name for split in scan.plan().splits() for f in split.files}
    return [seen[name] for name in sorted(live)]


def test_every_write_path_gives_new_files_value_stats(tmp_path: Path) -> None:
    """Append, UPDATE's rewritten rows, upsert and compaction: every new data file carries min/max
    of every column (what Java plans with), none is left with pypaimon's empty stats."""
    import paimon_index

    rows = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "v": pa.array(["a", "b", "c", "d"])})
    append = paimon_index.create_table(str(tmp_path), "db.append", rows.schema,
                                       options={"deletion-vectors.enabled": "true"})
    append.write(rows)
    append.update({"v": "'z'"}, "id = 2")
    keyed = paimon_index.create_table(str(tmp_path), "db.keyed", rows.schema, primary_keys=["id"],
                                      options={"bucket": "1", "deletion-vectors.enabled": "true"})
    keyed.upsert(rows)
    keyed.upsert(rows.slice(0, 2))
    keyed.compact(full=True)
    from paimon_index.table.schemas import read_schema
    from paimon_index.table.stats import _FileStats

    for table, files in ((append, 2), (keyed, 1)):
        metas = _manifest_files(table.paimon_table)
        assert len(metas) == files
        stats = _FileStats(table.paimon_table, read_schema(table.paimon_table))
        for meta in metas:
            assert meta.value_stats_cols is None, meta.file_name  # every column has stats
            for name, column in stats.columns(meta, ["id", "v"]).items():
                assert None not in (column.min, column.max, column.null_count), (meta.file_name, name)
