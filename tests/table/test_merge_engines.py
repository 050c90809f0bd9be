"""Merge engines (partial-update, aggregation) on deletion-vectors primary-key tables.

Against a Python model written here from Java's ``PartialUpdateMergeFunction``,
``AggregateMergeFunction`` and ``Field*Agg`` (record by record), applied as Paimon applies it in
this mode: the rows of one upsert merged per key in order (the writer's buffer), then the key's old
live row and that result merged (lookup compaction); a '-D' result deletes the key. Random
sequences of upserts (every row kind), DELETEs and compactions through ``Table``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_index
from paimon_index.errors import DataError, InvalidOptionError, UnsupportedTableError

SCHEMA = pa.schema([
    pa.field("k", pa.int64(), nullable=False),
    ("s", pa.int64()),    # sum
    ("p", pa.int64()),    # product
    ("mn", pa.int32()),   # min
    ("mx", pa.int32()),   # max
    ("lv", pa.string()),  # last_value
    ("ln", pa.string()),  # last_non_null_value
    ("fv", pa.string()),  # first_value
    ("fn", pa.string()),  # first_non_null_value
    ("la", pa.string()),  # listagg
    ("ba", pa.bool_()),   # bool_and
    ("bo", pa.bool_()),   # bool_or
])
VALUES = [f.name for f in SCHEMA][1:]
FUNCTIONS = {"s": "sum", "p": "product", "mn": "min", "mx": "max", "lv": "last_value",
             "ln": "last_non_null_value", "fv": "first_value", "fn": "first_non_null_value", "la": "listagg",
             "ba": "bool_and", "bo": "bool_or"}
RETRACTABLE = {"s", "p", "lv", "ln"}
AGG_OPTIONS = {f"fields.{c}.aggregate-function": f for c, f in FUNCTIONS.items()} | {
    "fields.la.list-agg-delimiter": "|"}

#: name -> (table options, row kinds the sequence uses)
CONFIGS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "agg": (AGG_OPTIONS, ("+I", "+U")),
    "agg-retract": (AGG_OPTIONS | {f"fields.{c}.ignore-retract": "true" for c in VALUES
                                   if c not in RETRACTABLE}, ("+I", "+U", "-U", "-D")),
    # No product retraction: every group takes the vectorized path (a retracted product is folded
    # row by row).
    "agg-retract-vectorized": (AGG_OPTIONS | {f"fields.{c}.ignore-retract": "true" for c in VALUES
                                              if c not in RETRACTABLE or c == "p"}, ("+I", "+U", "-U", "-D")),
    "agg-remove-on-delete": (AGG_OPTIONS | {"aggregation.remove-record-on-delete": "true"},
                             ("+I", "+U", "-D")),
    # What Java Paimon's core oracle can run too (its jar holds only these aggregators): last_value
    # and the default last_non_null_value, retracted.
    "agg-last": ({"fields.lv.aggregate-function": "last_value"}, ("+I", "+U", "-U", "-D")),
    # sequence.field: a key's rows (and its old row) merge in the order of that column, NULL first.
    "agg-sequence": ({k: v for k, v in AGG_OPTIONS.items() if k != "fields.mn.aggregate-function"}
                     | {"sequence.field": "mn"}, ("+I", "+U")),
    "partial-sequence-descending": ({"sequence.field": "mx", "sequence.field.sort-order": "descending"},
                                    ("+I", "+U")),
    "partial": ({}, ("+I", "+U")),
    "partial-remove-on-delete": ({"partial-update.remove-record-on-delete": "true"},
                                 ("+I", "+U", "-U", "-D")),
    "partial-ignore-delete": ({"ignore-delete": "true"}, ("+I", "+U", "-U", "-D")),
}


def engine_of(config: str) -> str:
    return "aggregation" if config.startswith("agg") else "partial-update"


def new_table(warehouse: str, config: str, bucket: str = "2") -> Any:
    options = {"bucket": bucket, "deletion-vectors.enabled": "true", "merge-engine": engine_of(config),
               **CONFIGS[config][0]}
    if bucket == "-1":
        options["dynamic-bucket.target-row-num"] = "3"
    return paimon_index.create_table(warehouse, "db.m", SCHEMA, primary_keys=["k"], options=options)


# ------------------------------------------------------------------------------------------------
# the model: Java's merge functions, one record at a time
# ------------------------------------------------------------------------------------------------
def java_agg(function: str, acc: Any, value: Any, state: dict[str, bool], delimiter: str) -> Any:
    if function in ("last_value",):
        return value
    if function == "last_non_null_value":
        return acc if value is None else value
    if function == "first_value":
        if not state.get("init"):
            state["init"] = True
            return value
        return acc
    if function == "first_non_null_value":
        if not state.get("init") and value is not None:
            state["init"] = True
            return value
        return acc
    if function == "listagg":
        if value is None or not value.strip():
            return acc
        return value if acc is None or not acc.strip() else acc + delimiter + value
    if acc is None or value is None:
        return value if acc is None else acc
    return {"sum": lambda: acc + value, "product": lambda: acc * value, "min": lambda: min(acc, value),
            "max": lambda: max(acc, value), "bool_and": lambda: acc and value,
            "bool_or": lambda: acc or value}[function]()


def java_retract(function: str, acc: Any, value: Any) -> Any:
    if function == "sum":
        return (None if value is None else -value) if acc is None else acc if value is None else acc - value
    if function == "product":
        if acc is None or value is None:
            return acc
        quotient = abs(acc) // abs(value)
        return quotient if (acc >= 0) == (value >= 0) else -quotient
    if function == "last_value":
        return None
    if function == "last_non_null_value":
        return None if value is not None else acc
    raise AssertionError(function)


def function_of(options: dict[str, str], column: str) -> str:
    return options.get(f"fields.{column}.aggregate-function", "last_non_null_value")


def in_sequence(config: str, records: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Records in merge order: by ``sequence.field`` (NULL first), then as written (a stable sort)."""
    options = CONFIGS[config][0]
    field = options.get("sequence.field")
    if field is None:
        return records
    sign = -1 if options.get("sequence.field.sort-order") == "descending" else 1
    return sorted(records, key=lambda r: (0, 0) if r[1][field] is None else (1, sign * r[1][field]))


def model_fold(config: str, records: list[tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, Any]]:
    options = CONFIGS[config][0]
    records = in_sequence(config, records)
    if engine_of(config) == "partial-update":
        remove = options.get("partial-update.remove-record-on-delete") == "true"
        row: dict[str, Any] = dict.fromkeys(["k", *VALUES])
        meet_insert = filled = delete_row = False
        for kind, values in records:
            delete_row = False
            if kind in ("-U", "-D"):
                if not filled:
                    row, filled = dict(values), True
                assert remove, "the model only retracts under remove-record-on-delete"
                if kind == "-D":
                    delete_row, row = True, dict(values)
                continue
            row.update({c: v for c, v in values.items() if v is not None})
            meet_insert = filled = True
        return ("-D" if delete_row or not meet_insert else "+I"), row
    remove = options.get("aggregation.remove-record-on-delete") == "true"
    acc: dict[str, Any] = dict.fromkeys(["k", *VALUES])
    states: dict[str, dict[str, bool]] = {c: {} for c in VALUES}
    delete_row = False
    for kind, values in records:
        delete_row = remove and kind == "-D"
        if delete_row:
            acc = dict(values)
            continue
        acc["k"] = values["k"]
        for c in VALUES:
            if kind in ("-U", "-D"):
                if options.get(f"fields.{c}.ignore-retract") != "true":
                    acc[c] = java_retract(function_of(options, c), acc[c], values[c])
            else:
                acc[c] = java_agg(function_of(options, c), acc[c], values[c], states[c], "|")
        if options.get("sequence.field") in VALUES:  # Java aggregates a sequence field as last_value
            acc[options["sequence.field"]] = values[options["sequence.field"]]
    return ("-D" if delete_row else "+I"), acc


def model_upsert(config: str, model: dict[int, dict[str, Any]],
                 batch: list[tuple[str, dict[str, Any]]]) -> None:
    options = CONFIGS[config][0]
    if options.get("ignore-delete") == "true":
        batch = [(k, r) for k, r in batch if k not in ("-U", "-D")]
    by_key: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for kind, row in batch:
        by_key.setdefault(row["k"], []).append((kind, row))
    for key, records in by_key.items():
        # The writer's buffer: one record passes as it is (ReducerMergeFunctionWrapper).
        first = records[0] if len(records) == 1 else model_fold(config, records)
        older = [("+I", model[key])] if key in model else []
        kind, row = model_fold(config, [*older, first])  # the lookup merge with the old row
        if kind == "+I":
            model[key] = row
        else:
            model.pop(key, None)


# ------------------------------------------------------------------------------------------------
# random operations
# ------------------------------------------------------------------------------------------------
def rows_strategy(kinds: tuple[str, ...]) -> st.SearchStrategy:
    small = st.one_of(st.none(), st.sampled_from([-2, -1, 1, 2, 3]))
    text = st.one_of(st.none(), st.sampled_from(["a", "b", " ", "", "c d"]))
    flag = st.one_of(st.none(), st.booleans())
    row = st.fixed_dictionaries({
        "k": st.integers(0, 4), "s": small, "p": small, "mn": small, "mx": small, "lv": text, "ln": text,
        "fv": text, "fn": text, "la": text, "ba": flag, "bo": flag})
    return st.lists(st.tuples(st.sampled_from(kinds), row), min_size=1, max_size=6)


def operations(kinds: tuple[str, ...]) -> st.SearchStrategy:
    upsert = st.tuples(st.just("upsert"), rows_strategy(kinds))
    delete = st.tuples(st.just("delete"), st.integers(0, 4))
    compact = st.tuples(st.just("compact"), st.booleans())
    return st.lists(st.one_of(upsert, upsert, upsert, delete, compact), min_size=1, max_size=6)


def as_table(batch: Iterable[tuple[str, dict[str, Any]]]) -> pa.Table:
    rows = [dict(row, _ROW_KIND=kind) for kind, row in batch]
    schema = SCHEMA.append(pa.field("_ROW_KIND", pa.string()))
    return pa.Table.from_pylist(rows, schema=schema)


def contents(table: Any) -> dict[int, dict[str, Any]]:
    return {r["k"]: r for r in table.read().to_pylist()}


def run(config: str, steps: list, bucket: str = "2") -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        table = new_table(warehouse, config, bucket)
        model: dict[int, dict[str, Any]] = {}
        for op, arg in steps:
            if op == "upsert":
                table.upsert(as_table(arg))
                model_upsert(config, model, arg)
            elif op == "delete":
                table.delete(f"k >= {arg}")
                model = {k: v for k, v in model.items() if k < arg}
            else:
                table.compact(full=arg)
            assert contents(table) == model, (op, arg)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_random_sequences_equal_the_java_model(config: str) -> None:
    kinds = CONFIGS[config][1]

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(operations(kinds))
    def check(steps: list) -> None:
        run(config, steps)

    check()


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_random_sequences_equal_the_java_model_dynamic_bucket_long(config: str) -> None:
    kinds = CONFIGS[config][1]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(operations(kinds), st.sampled_from(["1", "3", "-1"]))
    def check(steps: list, bucket: str) -> None:
        run(config, steps, bucket)

    check()


def test_dynamic_bucket_merges_with_the_old_row(tmp_path: Any) -> None:
    table = new_table(str(tmp_path), "agg", bucket="-1")
    steps = [("upsert", [("+I", dict.fromkeys(VALUES) | {"k": k, "s": 1, "la": "x"}) for k in range(5)]),
             ("upsert", [("+I", dict.fromkeys(VALUES) | {"k": k, "s": 2, "la": "y"}) for k in range(5)])]
    for _, batch in steps:
        table.upsert(as_table(batch))
    rows = sorted((r["k"], r["s"], r["la"]) for r in table.read().to_pylist())
    assert rows == [(k, 3, "x|y") for k in range(5)]


# ------------------------------------------------------------------------------------------------
# refusals, as Paimon refuses
# ------------------------------------------------------------------------------------------------
def _create(tmp_path: Any, options: dict[str, str], schema: pa.Schema = SCHEMA) -> Any:
    return paimon_index.create_table(str(tmp_path), "db.r", schema, primary_keys=["k"],
                                     options={"bucket": "1", "deletion-vectors.enabled": "true", **options})


def _one_row() -> pa.Table:
    return pa.Table.from_pylist([dict.fromkeys(VALUES) | {"k": 1}], schema=SCHEMA)


@pytest.mark.parametrize(("options", "error", "names"), [
    ({"merge-engine": "first-row"}, InvalidOptionError, "first-row"),  # with vectors: refused at CREATE
    ({"merge-engine": "aggregation", "fields.s.aggregate-function": "count"}, InvalidOptionError,
     "fields.s.aggregate-function"),
    ({"merge-engine": "aggregation", "fields.s.aggregate-function": "collect"}, UnsupportedTableError,
     "collect"),
    ({"merge-engine": "aggregation", "fields.lv.aggregate-function": "sum"}, InvalidOptionError, "numeric"),
    ({"merge-engine": "aggregation", "fields.s.aggregate-function": "bool_and"}, InvalidOptionError,
     "BOOLEAN"),
    ({"merge-engine": "aggregation", "fields.la.aggregate-function": "listagg", "fields.la.distinct": "true"},
     UnsupportedTableError, "fields.la.distinct"),
    ({"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
      "fields.s.ignore-retract": "true"}, InvalidOptionError, "fields.s.ignore-retract"),
    ({"merge-engine": "partial-update", "fields.s.aggregate-function": "sum"}, InvalidOptionError,
     "sequence group"),
    ({"merge-engine": "partial-update", "fields.s.sequence-group": "p"}, UnsupportedTableError,
     "sequence-group"),
    ({"merge-engine": "aggregation", "sequence.field": "s", "fields.s.aggregate-function": "sum"},
     InvalidOptionError, "sequence field"),
    ({"merge-engine": "partial-update", "ignore-delete": "true",
      "partial-update.remove-record-on-delete": "true"}, InvalidOptionError, "conflicting"),
    # Paimon keeps the highest sequence value; the deduplicate upsert let the incoming row win.
    ({"sequence.field": "mx"}, UnsupportedTableError, "sequence.field"),
])
def test_unsupported_or_invalid_options_are_refused_naming_the_option(tmp_path: Any, options: dict[str, str],
                                                                        error: type, names: str) -> None:
    try:
        table = _create(tmp_path, options)
    except error as e:  # Paimon's catalog may refuse it at CREATE already
        assert names in str(e)
        return
    with pytest.raises(error, match=names):
        table.upsert(_one_row())


def test_retractions_the_engine_cannot_take_are_refused_before_writing(tmp_path: Any) -> None:
    partial = new_table(str(tmp_path / "p"), "partial")
    partial.upsert(_one_row())
    with pytest.raises(DataError, match=r"partial-update\.remove-record-on-delete"):
        partial.upsert(as_table([("-D", dict.fromkeys(VALUES) | {"k": 1})]))
    aggregated = new_table(str(tmp_path / "a"), "agg")
    aggregated.upsert(_one_row())
    with pytest.raises(DataError, match=r"fields\.mn\.ignore-retract"):
        aggregated.upsert(as_table([("-U", dict.fromkeys(VALUES) | {"k": 1, "mn": 1})]))
    assert aggregated.snapshot_id == 1  # nothing committed


def test_update_is_refused_on_aggregation_and_merges_on_partial_update(tmp_path: Any) -> None:
    aggregated = new_table(str(tmp_path / "a"), "agg")
    aggregated.upsert(_one_row())
    with pytest.raises(UnsupportedTableError, match="can not support UPDATE"):
        aggregated.update({"s": "5"}, "k = 1")
    partial = new_table(str(tmp_path / "p"), "partial")
    partial.upsert(pa.Table.from_pylist([dict.fromkeys(VALUES) | {"k": 1, "s": 4, "lv": "x"}], schema=SCHEMA))
    partial.update({"s": "7", "lv": "NULL"}, "k = 1")  # NULL keeps the old value (a partial update)
    assert [(r["s"], r["lv"]) for r in partial.read().to_pylist()] == [(7, "x")]


def test_delete_removes_keys_on_every_engine(tmp_path: Any) -> None:
    for config in ("agg", "partial"):
        table = new_table(str(tmp_path / config), config)
        table.upsert(pa.Table.from_pylist([dict.fromkeys(VALUES) | {"k": k, "s": k} for k in range(4)],
                                          schema=SCHEMA))
        table.delete("s >= 2")
        assert sorted(r["k"] for r in table.read().to_pylist()) == [0, 1]


# ------------------------------------------------------------------------------------------------
# Java Paimon: the same row sequences through Paimon's own writer, both tables read by both sides
# ------------------------------------------------------------------------------------------------
def java_schema() -> str:
    names = {pa.int64(): "BIGINT", pa.int32(): "INT", pa.string(): "STRING", pa.bool_(): "BOOLEAN"}
    return ", ".join(f"{f.name} {names[f.type]}" for f in SCHEMA)


def random_steps(config: str, seed: int, steps: int = 4) -> list[list[tuple[str, dict[str, Any]]]]:
    import random

    rnd = random.Random(seed)
    kinds = CONFIGS[config][1]

    def value(choices: list[Any]) -> Any:
        return None if rnd.random() < 0.3 else rnd.choice(choices)

    out = []
    for _ in range(steps):
        batch = []
        for _ in range(rnd.randint(1, 8)):
            row = {"k": rnd.randint(0, 5), "s": value([-2, -1, 1, 2, 3]), "p": value([-2, -1, 1, 2, 3]),
                   "mn": value([-2, 1, 3]), "mx": value([-2, 1, 3]), "lv": value(["a", "b"]),
                   "ln": value(["a", "b"]), "fv": value(["a", "b"]), "fn": value(["a", "b"]),
                   "la": value(["a", "b", " "]), "ba": value([True, False]), "bo": value([True, False])}
            batch.append((rnd.choice(kinds), row))
        out.append(batch)
    return out


#: The configurations Java's core oracle writes with its own jar (which holds only the last_value,
#: last_non_null_value and primary-key aggregators).
JAVA_CONFIGS = ["agg-last", "partial", "partial-remove-on-delete", "partial-ignore-delete"]
MIRROR = Path("/work/.mirror/apache+paimon/repo")
ORACLE_COMMIT = "5dacde516bf6"  # the commit paimon-oracle.jar was built from (its README)
AGGREGATORS = ["FieldSumAgg", "FieldProductAgg", "FieldMinAgg", "FieldMaxAgg", "FieldFirstValueAgg",
               "FieldFirstNonNullValueAgg", "FieldListaggAgg", "FieldBoolAndAgg", "FieldBoolOrAgg"]


def oracle_with_every_aggregator(work: Path) -> Any:
    """Java's core oracle with Paimon's other aggregators on its class path: their classes compiled
    (javac) from Paimon's source at the oracle's commit, with their ServiceLoader entries. Skips when
    javac or the source mirror is absent."""
    import shutil
    import subprocess

    from javaoracle import JavaOracle, java_oracle

    oracle = java_oracle()
    if shutil.which("javac") is None or not (MIRROR / "HEAD").exists():
        pytest.skip("javac or Paimon's source mirror is absent")
    import pyspark

    spark_jars = Path(pyspark.__file__).parent / "jars"
    jar_dir, src, classes = work / "jars", work / "src", work / "classes"
    for d in (jar_dir, src, classes / "META-INF" / "services"):
        d.mkdir(parents=True, exist_ok=True)
    base = "paimon-core/src/main/java/org/apache/paimon/mergetree/compact/aggregate"
    for name in AGGREGATORS:
        for path in (f"{base}/{name}.java", f"{base}/factory/{name}Factory.java"):
            text = subprocess.run(["git", "--git-dir", str(MIRROR), "show", f"{ORACLE_COMMIT}:{path}"],
                                  capture_output=True, text=True, check=False)
            if text.returncode:
                pytest.skip(f"{path} not in the mirror at {ORACLE_COMMIT}")
            (src / Path(path).name).write_text(text.stdout)
    built = subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp",
                            f"{oracle.script.parent / 'paimon-oracle.jar'}:{spark_jars}/*",
                            *map(str, sorted(src.glob("*.java")))],
                           capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    (classes / "META-INF" / "services" / "org.apache.paimon.factories.Factory").write_text("".join(
        f"org.apache.paimon.mergetree.compact.aggregate.factory.{n}Factory\n" for n in AGGREGATORS))
    subprocess.run(["jar", "cf", str(jar_dir / "paimon-aggregators.jar"), "-C", str(classes), "."],
                   check=True)
    for jar in spark_jars.glob("*.jar"):
        (jar_dir / jar.name).symlink_to(jar)

    class WithAggregators(JavaOracle):
        def _env(self) -> dict[str, str]:
            return {**super()._env(), "SPARK_JARS": str(jar_dir)}

    return WithAggregators(oracle.script)


@pytest.mark.parametrize("configs", [
    pytest.param(JAVA_CONFIGS, id="oracle-jar"),
    pytest.param(sorted(set(CONFIGS) - set(JAVA_CONFIGS)), id="every-aggregator"),
])
def test_java_paimon_writes_the_same_sequences_to_the_same_rows_and_reads_ours(tmp_path: Path,
                                                                                 configs: list[str]) -> None:
    import json

    from javaoracle import java_oracle

    oracle = java_oracle() if configs == JAVA_CONFIGS else oracle_with_every_aggregator(tmp_path / "java")
    warehouse = str(tmp_path / "w")
    commands: list[dict[str, Any]] = []
    expected: dict[str, dict[int, dict[str, Any]]] = {}
    for i, config in enumerate(configs):
        ours = paimon_index.create_table(warehouse, f"db.ours{i}", SCHEMA, primary_keys=["k"], options={
            "bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": engine_of(config),
            **CONFIGS[config][0]})
        model: dict[int, dict[str, Any]] = {}
        options = {"bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": engine_of(config),
                   **CONFIGS[config][0]}
        for step, batch in enumerate(random_steps(config, seed=i)):
            ours.upsert(as_table(batch))
            model_upsert(config, model, batch)
            jsonl = tmp_path / f"{config}-{step}.jsonl"
            jsonl.write_text("".join(json.dumps(dict(row, _kind=kind)) + "\n" for kind, row in batch))
            commands.append({"cmd": "write", "warehouse": warehouse, "table": f"db.java{i}",
                             "schema": java_schema(),
                             "pk": "k", "options": ",".join(f"{k}={v}" for k, v in options.items()),
                             "jsonl": str(jsonl), **({"no-create": "true"} if step else {})})
        expected[config] = model
        assert contents(ours) == model, config
        commands += [{"cmd": "read", "warehouse": warehouse, "table": f"db.{side}{i}", "rows": "true",
                      "id": f"{side}:{config}"} for side in ("ours", "java")]
    results = {r["id"]: r for r in oracle.batch(commands) if "id" in r}
    names = [f.name for f in SCHEMA]
    for i, config in enumerate(configs):
        for side in ("ours", "java"):
            rows = {r[0]: dict(zip(names, r, strict=True)) for r in results[f"{side}:{config}"]["row_values"]}
            assert rows == expected[config], (side, config)
        java_table = paimon_index.open_table(warehouse, f"db.java{i}")
        assert contents(java_table) == expected[config], ("we read Java's table", config)


def _pypaimon_write(table: Any, rows: pa.Table) -> None:
    """A plain pypaimon write: level-0 files only (its buffer merges with the table's engine)."""
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(rows)
    commit = builder.new_commit()
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()


def test_level0_files_are_merged_on_read_and_folded_by_the_next_upsert(tmp_path: Path) -> None:
    from paimon_index.table.catalog import open_table
    from paimon_index.table.pk import read_primary_key

    warehouse = str(tmp_path)
    paimon_index.create_table(warehouse, "db.l0", SCHEMA, primary_keys=["k"], options={
        "bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": "aggregation",
        "deletion-vectors.merge-on-read": "true", **AGG_OPTIONS})
    table = paimon_index.open_table(warehouse, "db.l0")

    def rows(s: int, la: str) -> pa.Table:
        return pa.Table.from_pylist([dict.fromkeys(VALUES) | {"k": k, "s": s, "la": la} for k in range(3)],
                                    schema=SCHEMA)

    table.upsert(rows(1, "a"))
    _pypaimon_write(open_table(warehouse, "db.l0"), rows(10, "b"))  # level 0, not yet merged
    merged, _ = read_primary_key(open_table(warehouse, "db.l0"), "k >= 0")
    assert sorted((r["k"], r["s"], r["la"]) for r in merged.to_pylist()) == [(k, 11, "a|b") for k in range(3)]
    table.upsert(rows(100, "c"))  # folds the level-0 rows in, then merges with the old rows
    assert sorted((r["k"], r["s"], r["la"]) for r in table.read().to_pylist()) == \
        [(k, 111, "a|b|c") for k in range(3)]


def test_tasks_owning_buckets_merge_with_old_rows_and_the_driver_commits_once(tmp_path: Path) -> None:
    """The Spark path of a merge-engine table without Spark: one 'task' per bucket merges its keys
    with their old rows, writes and marks; one commit."""
    import numpy as np

    from paimon_index.table.catalog import open_table
    from paimon_index.table.pk import bucket_of_rows, commit_prepared
    from paimon_index.table.pk.upsert import prepare_merge

    table = new_table(str(tmp_path), "agg-retract")
    first = [("+I", dict.fromkeys(VALUES) | {"k": k, "s": 1, "lv": "x"}) for k in range(5)]
    table.upsert(as_table(first))
    model: dict[int, dict[str, Any]] = {}
    model_upsert("agg-retract", model, first)
    batch = [("-U" if k % 2 else "+I", dict.fromkeys(VALUES) | {"k": k, "s": 2, "lv": "y"})
             for k in range(3, 8)]
    model_upsert("agg-retract", model, batch)
    paimon = open_table(str(tmp_path), "db.m")
    data = as_table(batch)
    _, buckets = bucket_of_rows(paimon, data.drop_columns(["_ROW_KIND"]))
    owned = np.array(buckets)
    prepared = [prepare_merge(paimon, data.filter(pa.array(owned == b))) for b in sorted(set(buckets))]
    commit_prepared(paimon, prepared)
    assert contents(table) == model


def test_a_sum_or_product_past_its_type_is_refused_not_wrapped(tmp_path: Path) -> None:
    """Java's exact arithmetic throws; a wrapped 64-bit value would be a silently wrong row."""
    table = new_table(str(tmp_path), "agg")
    big = (1 << 62)
    rows = [("+I", dict.fromkeys(VALUES) | {"k": 1, "s": big, "p": big}),
            ("+I", dict.fromkeys(VALUES) | {"k": 1, "s": big})]
    with pytest.raises(DataError, match="column 's' overflows"):
        table.upsert(as_table(rows))
    table.upsert(as_table(rows[:1]))
    with pytest.raises(DataError, match="column 'p' overflows"):
        table.upsert(as_table([("+I", dict.fromkeys(VALUES) | {"k": 1, "p": 4})]))
    assert [(r["s"], r["p"]) for r in table.read().to_pylist()] == [(big, big)]


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_decimal_and_temporal_columns_merge(tmp_path, engine: str) -> None:
    """Arrow's group first/last have no DECIMAL kernel: a partial-update (or last_non_null_value)
    merge of a DECIMAL column failed with Arrow's message instead of merging."""
    import datetime
    import decimal

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("m", pa.decimal128(12, 2)),
                        ("d", pa.date32()), ("ts", pa.timestamp("us")), ("v", pa.string())])
    options = {"bucket": "1", "deletion-vectors.enabled": "true", "merge-engine": engine}
    if engine == "aggregation":
        options["fields.default-aggregate-function"] = "last_non_null_value"
    table = paimon_index.create_table(str(tmp_path), "db.t", schema, primary_keys=["id"], options=options)
    day, moment = datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 12, 0, 0, 123456)
    table.upsert(pa.table({"id": [1, 2], "m": [decimal.Decimal("1.50"), None], "d": [day, None],
                           "ts": [moment, None], "v": ["a", "b"]}, schema=schema))
    table.upsert(pa.table({"id": [1, 2, 2], "m": [None, decimal.Decimal("-2.25"), None],
                           "d": [None, day, None], "ts": [None, None, moment], "v": [None, "c", None]},
                          schema=schema))
    assert table.read().sort_by("id").to_pylist() == [
        {"id": 1, "m": decimal.Decimal("1.50"), "d": day, "ts": moment, "v": "a"},
        {"id": 2, "m": decimal.Decimal("-2.25"), "d": day, "ts": moment, "v": "c"},
    ]
