"""``changelog-producer`` = ``lookup``: the change rows of every write by key, read back by Java Paimon.

The reference is Java: ``tests/java/ChangelogOracle.java`` (compiled here against the oracle's
jar) reads a table's changelog between two snapshots with Paimon's incremental read
(``incremental-between`` + ``incremental-between-scan-mode`` = ``changelog``). Its rows, per
snapshot, must equal a Python model of Java's ``LookupChangelogMergeFunctionWrapper``: for each key
written, before = the old live row, after = the new (merged) row; ``+I``, ``-U``/``+U``, ``-D``.
Java also writes the same sequences with its own lookup producer; the whole changelog then holds
the same rows.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.table.test_merge_engines import CONFIGS, engine_of, model_upsert
from tests.table.test_merge_engines import SCHEMA as MERGE_SCHEMA
from tests.table.test_merge_engines import as_table as merge_rows
from tests.table.test_merge_engines import rows_strategy as merge_rows_strategy

import paimon_index
from jvm import java_args
from paimon_index.errors import InvalidOptionError, UnsupportedChangelogProducerError

SCHEMA = pa.schema([pa.field("p", pa.int32(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                    ("v", pa.string()), ("n", pa.int64())])
NAMES = [f.name for f in SCHEMA]
DV = {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"}
Change = tuple[Any, ...]  # (kind, *values)


# ------------------------------------------------------------------------------------------------
# Java: the incremental changelog read
# ------------------------------------------------------------------------------------------------
class ChangelogReader:
    def __init__(self, classes: Path, oracle: Any) -> None:
        import pyspark

        jars = os.environ.get("SPARK_JARS") or str(Path(pyspark.__file__).parent / "jars")
        self.classpath = f"{classes}:{oracle.script.parent / 'paimon-oracle.jar'}:{jars}/*"
        self.oracle = oracle

    def read(self, requests: list[tuple[str, str, int, int]], mode: str = "batch",
             scan: str = "changelog") -> list[list[Change]]:
        """Java's changelog rows of each (warehouse, table, from, to), one JVM for all
        (``mode``: ``batch`` incremental read, ``stream`` streaming read; ``scan``: the batch
        read's ``incremental-between-scan-mode``, ``changelog`` or ``delta``)."""
        out = self.run([{"warehouse": warehouse, "table": table, "from": low, "to": high, "mode": mode,
                         "scan": scan} for warehouse, table, low, high in requests])
        return [[tuple(r) for r in o["rows"]] for o in out]

    def run(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``ChangelogOracle`` on raw requests (one JSON object each), one JVM for all."""
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for request in requests:
                f.write(json.dumps(request) + "\n")
        try:
            done = subprocess.run(["java", *java_args(), "-cp", self.classpath, "ChangelogOracle", f.name],
                                  capture_output=True,
                                  text=True, timeout=600, check=False)
        finally:
            os.unlink(f.name)
        assert done.returncode == 0, done.stderr[-3000:]
        out = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert len(out) == len(requests), done.stderr[-3000:]
        for o in out:
            assert "error" not in o, o["error"]
        return out


@pytest.fixture(scope="module")
def changelog_reader(tmp_path_factory: pytest.TempPathFactory) -> ChangelogReader:
    return build_changelog_reader(tmp_path_factory)


def build_changelog_reader(tmp_path_factory: pytest.TempPathFactory) -> ChangelogReader:
    """``ChangelogOracle.java`` compiled against the oracle's jar; skips without java/javac."""
    from tests.javaoracle import java_oracle

    oracle = java_oracle()
    if shutil.which("javac") is None:
        pytest.skip("javac is not installed")
    import pyspark

    classes = tmp_path_factory.mktemp("changelog-oracle")
    source = Path(__file__).resolve().parents[1] / "java" / "ChangelogOracle.java"
    jars = Path(pyspark.__file__).parent / "jars"
    built = subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp",
                            f"{oracle.script.parent / 'paimon-oracle.jar'}:{jars}/*", str(source)],
                           capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    return ChangelogReader(classes, oracle)


def normal(changes: Iterable[Change]) -> Counter[str]:
    """A multiset of change rows, values as Java's JSON prints them."""
    return Counter(json.dumps(list(c)) for c in changes)


def latest(table: Any) -> int:
    snapshot = table._paimon.snapshot_manager().get_latest_snapshot()
    return 0 if snapshot is None else int(snapshot.id)


# ------------------------------------------------------------------------------------------------
# the model: Java's LookupChangelogMergeFunctionWrapper over a model of the table's rows
# ------------------------------------------------------------------------------------------------
def changes_between(before: dict[Any, dict[str, Any]], after: dict[Any, dict[str, Any]],
                    touched: Iterable[Any],
                    names: list[str], dedupe: bool = False) -> list[Change]:
    out: list[Change] = []
    for key in touched:
        old, new = before.get(key), after.get(key)
        if old is None and new is not None:
            out.append(("+I", *(new[c] for c in names)))
        elif old is not None and new is None:
            out.append(("-D", *(old[c] for c in names)))
        elif old is not None and new is not None and not (dedupe and old == new):
            out += [("-U", *(old[c] for c in names)), ("+U", *(new[c] for c in names))]
    return out


def dedup_upsert(model: dict[Any, dict[str, Any]], batch: list[tuple[str, dict[str, Any]]]) -> set[Any]:
    """The deduplicate engine: the last row of a key wins, ``-U``/``-D`` delete it."""
    last: dict[Any, tuple[str, dict[str, Any]]] = {}
    for kind, row in batch:
        last[(row["p"], row["k"])] = (kind, row)
    for key, (kind, row) in last.items():
        if kind in ("-U", "-D"):
            model.pop(key, None)
        else:
            model[key] = dict(row)
    return set(last)


def dedup_table(rows: list[tuple[str, dict[str, Any]]]) -> pa.Table:
    return pa.Table.from_pylist([dict(r, _ROW_KIND=k) for k, r in rows],
                                schema=SCHEMA.append(pa.field("_ROW_KIND", pa.string())))


def dedup_batches() -> st.SearchStrategy:
    row = st.fixed_dictionaries({"p": st.integers(0, 1), "k": st.integers(0, 5),
                                 "v": st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
                                 "n": st.one_of(st.none(), st.integers(-2, 2))})
    return st.lists(st.tuples(st.sampled_from(["+I", "+I", "+U", "-D", "-U"]), row), min_size=1, max_size=8)


def dedup_operations() -> st.SearchStrategy:
    upsert = st.tuples(st.just("upsert"), dedup_batches())
    delete = st.tuples(st.just("delete"), st.integers(0, 5))
    update = st.tuples(st.just("update"), st.integers(0, 5))
    compact = st.tuples(st.just("compact"), st.booleans())
    return st.lists(st.one_of(upsert, upsert, upsert, delete, update, compact), min_size=1, max_size=6)


def create(warehouse: str, layout: str, options: dict[str, str] | None = None) -> Any:
    """``fixed``: 2 buckets; ``dynamic``: bucket -1; ``partitioned``: by ``p``, 2 buckets."""
    opts = {**DV, "bucket": "-1" if layout == "dynamic" else "2", **(options or {})}
    if layout == "dynamic":
        opts["dynamic-bucket.target-row-num"] = "3"
    partitions = ["p"] if layout == "partitioned" else []
    return paimon_index.create_table(warehouse, "db.t", SCHEMA, primary_keys=["p", "k"],
                                     partition_keys=partitions,
                                     options=opts)


def run_dedup(warehouse: str, layout: str, steps: list, dedupe: bool = False
              ) -> list[tuple[int, int, list[Change]]]:
    """Run ``steps`` on a new table; per step that committed: (from, to, expected change rows)."""
    table = create(warehouse, layout, {"changelog-producer.row-deduplicate": str(dedupe).lower()})
    model: dict[Any, dict[str, Any]] = {}
    expected: list[tuple[int, int, list[Change]]] = []
    for op, arg in steps:
        before, low = dict(model), latest(table)
        if op == "upsert":
            touched = dedup_upsert(model, arg)
            table.upsert(dedup_table(arg))
        elif op == "delete":
            touched = {key for key in model if key[1] >= arg}
            model = {key: row for key, row in model.items() if key not in touched}
            table.delete(f"k >= {arg}")
        elif op == "update":
            touched = {key for key in model if key[1] == arg}
            for key in touched:
                model[key] = dict(model[key], v="u")
            table.update({"v": "'u'"}, f"k = {arg}")
        else:
            touched = set()
            table.compact(full=arg)
        high = latest(table)
        changes = changes_between(before, model, sorted(touched), NAMES, dedupe)
        if high != low:
            expected.append((low, high, changes))
        else:
            assert not changes, (op, arg, changes)
    assert {(r["p"], r["k"]): r for r in table.read().to_pylist()} == model
    return expected


def check_against_java(reader: ChangelogReader, runs: list[tuple[str, list[tuple[int, int, list[Change]]]]]
                       ) -> None:
    requests = [(warehouse, "db.t", low, high) for warehouse, expected in runs for low, high, _ in expected]
    got = iter(reader.read(requests))
    for warehouse, expected in runs:
        for low, high, changes in expected:
            assert normal(next(got)) == normal(changes), (warehouse, low, high)


def random_runs_against_java(reader: ChangelogReader, examples: int, strategies: list[Any],
                             run: Callable[..., list[tuple[int, int, list[Change]]]]) -> None:
    """Hypothesis draws ``strategies`` ``examples`` times; each draw is ``run(warehouse, *drawn)``
    in a fresh directory (its expected changes per snapshot range); then Java reads every run's
    changelog in one batch (:func:`check_against_java`)."""
    runs: list[tuple[str, list[tuple[int, int, list[Change]]]]] = []
    keep: list[tempfile.TemporaryDirectory[str]] = []

    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.tuples(*strategies))
    def check(drawn: tuple[Any, ...]) -> None:
        directory = tempfile.TemporaryDirectory()
        keep.append(directory)
        runs.append((directory.name, run(directory.name, *drawn)))

    try:
        check()
        check_against_java(reader, runs)
    finally:
        for directory in keep:
            directory.cleanup()


# ------------------------------------------------------------------------------------------------
# the tests
# ------------------------------------------------------------------------------------------------
def test_one_upsert_writes_a_changelog_file_in_the_same_snapshot(tmp_path: Path) -> None:
    """The file layout (Paimon's key-value columns, RowKind bytes, sequence numbers as Java's
    wrapper keeps them) and the snapshot's changelog manifest list and record count."""
    table = create(str(tmp_path), "fixed", {"bucket": "1"})
    table.upsert(pa.Table.from_pylist([{"p": 0, "k": 1, "v": "a", "n": 1},
                                       {"p": 0, "k": 2, "v": "b", "n": 2}],
                                      schema=SCHEMA))
    table.upsert(dedup_table([("+I", {"p": 0, "k": 1, "v": "a2", "n": 1}), ("-D", {"p": 0, "k": 2, "v": None,
                                                                               "n": None})]))
    snapshot = table._paimon.snapshot_manager().get_latest_snapshot()
    assert snapshot.changelog_manifest_list is not None and snapshot.changelog_record_count == 3
    assert snapshot.commit_kind == "COMPACT"  # not OVERWRITE: Java's changelog readers skip those
    files = sorted(tmp_path.glob("db.db/t/bucket-*/changelog-*.parquet"), key=os.path.getmtime)
    assert len(files) == 2
    rows = pq.read_table(files[-1]).to_pylist()
    assert list(rows[0]) == ["_KEY_p", "_KEY_k", "_SEQUENCE_NUMBER", "_VALUE_KIND", "p", "k", "v", "n"]
    first = {r["k"]: r["_SEQUENCE_NUMBER"] for r in pq.read_table(files[0]).to_pylist()}
    assert [(r["_VALUE_KIND"], r["k"], r["v"]) for r in rows] == [(1, 1, "a"), (2, 1, "a2"), (3, 2, "b")]
    # -U / -D keep the old row's sequence number, +U the new row's (Java's wrapper copies them).
    assert rows[0]["_SEQUENCE_NUMBER"] == first[1] and rows[2]["_SEQUENCE_NUMBER"] == first[2]
    assert rows[1]["_SEQUENCE_NUMBER"] > max(first.values())


@pytest.mark.parametrize("producer", ["full-compaction"])
def test_producers_other_than_lookup_are_refused_before_any_file_is_written(tmp_path: Path,
                                                                            producer: str) -> None:
    # With deletion vectors Paimon refuses the table itself (SchemaValidation), as we do now.
    refused = f"'changelog-producer' = '{producer}' with 'deletion-vectors"
    with pytest.raises(InvalidOptionError, match=refused):
        create(str(tmp_path), "fixed", {"changelog-producer": producer})
    assert not (tmp_path / "db.db" / "t").exists()
    # A table made elsewhere with it (pypaimon's own catalog does not validate): refused at the write.
    from pypaimon import CatalogFactory, Schema

    made = CatalogFactory.create({"warehouse": str(tmp_path)})
    made.create_database("db", True)
    made.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["p", "k"], options={
        **DV, "bucket": "2", "changelog-producer": producer}), False)
    table = paimon_index.open_table(str(tmp_path), "db.t")
    with pytest.raises(UnsupportedChangelogProducerError, match=f"'changelog-producer' = '{producer}'"):
        table.upsert(pa.Table.from_pylist([{"p": 0, "k": 1, "v": "a", "n": 1}], schema=SCHEMA))
    assert not list(tmp_path.glob("db.db/t/bucket-*/*")) and latest(table) == 0


def test_row_deduplicate_drops_unchanged_updates(tmp_path: Path) -> None:
    for dedupe in (False, True):
        warehouse = str(tmp_path / str(dedupe))
        expected = run_dedup(warehouse, "fixed", [
            ("upsert", [("+I", {"p": 0, "k": 1, "v": "a", "n": 1})]),
            ("upsert", [("+I", {"p": 0, "k": 1, "v": "a", "n": 1}),
                        ("+I", {"p": 0, "k": 2, "v": "b", "n": 1})]),
        ], dedupe=dedupe)
        kinds = [c[0] for c in expected[-1][2]]
        assert kinds == (["+I"] if dedupe else ["-U", "+U", "+I"])


def test_level0_rows_of_plain_writes_are_new_records_as_java_merges_them(
        tmp_path: Path, changelog_reader: ChangelogReader) -> None:
    """Java's lookup compaction merges level-0 records with the key's row in levels >= 1: the
    before is that row, the level-0 rows are part of the after."""
    from paimon_index.table.catalog import open_table

    warehouse = str(tmp_path)
    table = create(warehouse, "fixed")
    table.upsert(pa.Table.from_pylist([{"p": 0, "k": k, "v": "a", "n": k} for k in range(3)], schema=SCHEMA))
    plain = open_table(warehouse, "db.t")
    builder = plain.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pylist([{"p": 0, "k": k, "v": "b", "n": k} for k in (1, 2, 3)],
                                           schema=SCHEMA))
    commit = builder.new_commit()
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    low = latest(table)
    table.upsert(pa.Table.from_pylist([{"p": 0, "k": 0, "v": "c", "n": 0}], schema=SCHEMA))
    (got,) = changelog_reader.read([(warehouse, "db.t", low, latest(table))])
    assert normal(got) == normal([("-U", 0, 0, "a", 0), ("+U", 0, 0, "c", 0), ("-U", 0, 1, "a", 1),
                                  ("+U", 0, 1, "b", 1), ("-U", 0, 2, "a", 2), ("+U", 0, 2, "b", 2),
                                  ("+I", 0, 3, "b", 3)])


def test_compaction_writes_no_changelog(tmp_path: Path, changelog_reader: ChangelogReader) -> None:
    """Java's lookup producer emits change rows only for merges with level-0 records; a
    compaction here reads levels >= 1 only."""
    warehouse = str(tmp_path)
    expected = run_dedup(warehouse, "fixed", [
        ("upsert", [("+I", {"p": 0, "k": k, "v": "a", "n": k}) for k in range(6)]),
        ("upsert", [("-D", {"p": 0, "k": k, "v": None, "n": None}) for k in range(4)]),
        ("compact", True)])
    assert len(expected) == 3 and expected[-1][2] == []
    check_against_java(changelog_reader, [(warehouse, expected)])


@pytest.mark.parametrize("layout", [  # partitioned with -m slow (CI's budget; the input test has it)
    "fixed", "dynamic", pytest.param("partitioned", marks=pytest.mark.slow)])
def test_random_sequences_java_reads_the_model_changelog(layout: str,
                                                         changelog_reader: ChangelogReader) -> None:
    random_runs_against_java(changelog_reader, 4, [dedup_operations(), st.booleans()],
                             lambda warehouse, steps, dedupe: run_dedup(warehouse, layout, steps, dedupe))


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["fixed", "dynamic", "partitioned"])
def test_random_sequences_java_reads_the_model_changelog_long(layout: str,
                                                             changelog_reader: ChangelogReader) -> None:
    random_runs_against_java(changelog_reader, 40, [dedup_operations(), st.booleans()],
                             lambda warehouse, steps, dedupe: run_dedup(warehouse, layout, steps, dedupe))


# merge engines ----------------------------------------------------------------------------------
#: Configurations whose merge functions Java's oracle jar holds (its reader builds them).
MERGE_CONFIGS = ["partial", "partial-remove-on-delete", "agg-last"]
MERGE_NAMES = [f.name for f in MERGE_SCHEMA]


def run_merge(warehouse: str, config: str, steps: list, bucket: str = "2"
              ) -> list[tuple[int, int, list[Change]]]:
    options = {**DV, "bucket": bucket, "merge-engine": engine_of(config), **CONFIGS[config][0]}
    if bucket == "-1":
        options["dynamic-bucket.target-row-num"] = "3"
    table = paimon_index.create_table(warehouse, "db.t", MERGE_SCHEMA, primary_keys=["k"], options=options)
    model: dict[Any, dict[str, Any]] = {}
    expected = []
    for op, arg in steps:
        before, low = {k: dict(v) for k, v in model.items()}, latest(table)
        if op == "upsert":
            model_upsert(config, model, arg)
            touched = {row["k"] for kind, row in arg
                       if CONFIGS[config][0].get("ignore-delete") != "true" or kind in ("+I", "+U")}
            table.upsert(merge_rows(arg))
        else:
            touched = {k for k in model if k >= arg}
            model = {k: v for k, v in model.items() if k < arg}
            table.delete(f"k >= {arg}")
        high = latest(table)
        changes = changes_between(before, model, sorted(touched), MERGE_NAMES)
        if high != low:
            expected.append((low, high, changes))
        else:
            assert not changes, (op, arg, changes)
    return expected


def merge_operations(kinds: tuple[str, ...]) -> st.SearchStrategy:
    upsert = st.tuples(st.just("upsert"), merge_rows_strategy(kinds))
    delete = st.tuples(st.just("delete"), st.integers(0, 4))
    return st.lists(st.one_of(upsert, upsert, upsert, delete), min_size=1, max_size=5)


@pytest.mark.parametrize(("config", "bucket"), [*((c, "2") for c in MERGE_CONFIGS), ("agg-last", "-1"),
                                               pytest.param("partial", "-1", marks=pytest.mark.slow),
                                               pytest.param("partial-remove-on-delete", "-1",
                                                            marks=pytest.mark.slow)])
def test_merge_engines_before_is_the_old_merged_row_after_the_new(config: str, bucket: str,
                                                                  changelog_reader: ChangelogReader) -> None:
    random_runs_against_java(changelog_reader, 3, [merge_operations(CONFIGS[config][1])],
                             lambda warehouse, steps: run_merge(warehouse, config, steps, bucket))


def test_an_overwrite_writes_no_changelog_as_java_commits_none(tmp_path: Path) -> None:
    """Java's FileStoreCommitImpl.overwritePartition: "Overwrite mode currently does not commit
    any changelog" (it drops the files); here none is written."""
    warehouse = str(tmp_path)
    table = create(warehouse, "fixed", {"bucket": "1"})
    table.upsert(pa.Table.from_pylist([{"p": 0, "k": k, "v": "a", "n": k} for k in range(3)], schema=SCHEMA))
    table.write(pa.Table.from_pylist([{"p": 0, "k": k, "v": "b", "n": k} for k in (1, 5)], schema=SCHEMA),
                mode="overwrite")
    snapshot = table._paimon.snapshot_manager().get_latest_snapshot()
    assert snapshot.commit_kind == "OVERWRITE" and snapshot.changelog_manifest_list is None
    assert len(list(tmp_path.glob("db.db/t/bucket-0/changelog-*"))) == 1  # the first upsert's


# Java writes the same sequence ----------------------------------------------------------------------
def _ours_and_javas_changelog(tmp_path: Path, steps: list, producer: str,
                              changelog_reader: ChangelogReader, mode: str = "batch",
                              scan: str = "changelog") -> tuple[list, list]:
    """The same upsert steps through our writer and Java's (``changelog-producer`` = ``producer``,
    fixed buckets): each side's whole changelog (``scan`` = ``delta``: its delta), read by Java."""
    ours = str(tmp_path / "ours")
    table = create(ours, "fixed", {"changelog-producer": producer})
    for batch in steps:
        table.upsert(dedup_table(batch))
    theirs = str(tmp_path / "java")
    commands = []
    for i, batch in enumerate(steps):
        path = tmp_path / f"b{i}.jsonl"
        path.write_text("".join(json.dumps(dict(r, _kind=k)) + "\n" for k, r in batch))
        command = {"cmd": "write", "warehouse": theirs, "table": "db.t", "jsonl": str(path)}
        if i:
            command["no-create"] = "true"
        else:
            command |= {"schema": "p INT, k BIGINT, v STRING, n BIGINT", "pk": "p,k",
                        "options": f"bucket=2,deletion-vectors.enabled=true,changelog-producer={producer}"}
        commands.append(command)
    java_snapshot = changelog_reader.oracle.batch(commands)[-1]["snapshot"]
    mine, java = changelog_reader.read([(ours, "db.t", 0, latest(table)),
                                        (theirs, "db.t", 0, int(java_snapshot))], mode=mode, scan=scan)
    return mine, java


#: Upserts with duplicate keys, -U, and a -D of a key never written.
SAME_SEQUENCE = [
    [("+I", {"p": 0, "k": k, "v": "a", "n": k}) for k in range(5)],
    [("+I", {"p": 0, "k": 1, "v": "b", "n": 1}), ("-D", {"p": 0, "k": 2, "v": "a", "n": 2}),
     ("+I", {"p": 0, "k": 7, "v": "c", "n": None}), ("+U", {"p": 0, "k": 1, "v": "d", "n": 9})],
    [("-D", {"p": 0, "k": 9, "v": None, "n": None}), ("+I", {"p": 0, "k": 2, "v": "e", "n": 2}),
     ("-U", {"p": 0, "k": 3, "v": "a", "n": 3})],
]


@pytest.mark.parametrize(("producer", "rows"), [
    ("lookup", 5 + 4 + 2),  # +I x5; -U +U -D +I; +I -D (no row for a deleted key never written)
    ("input", 5 + 4 + 3),  # every input record, the unmerged ones too
])
def test_java_writing_the_same_sequence_produces_the_same_changelog(
        tmp_path: Path, changelog_reader: ChangelogReader, producer: str, rows: int) -> None:
    """Java's own producer (lookup: its write = APPEND + COMPACT snapshots; input: the records as
    written) on the same upserts: the whole changelog holds the same rows as ours."""
    mine, java = _ours_and_javas_changelog(tmp_path, SAME_SEQUENCE, producer, changelog_reader)
    assert normal(mine) == normal(java)
    assert len(java) == rows


def _as_upserts(changes: list[Change]) -> list[Change]:
    """``+U`` read as ``+I``: Java's writer keeps the ``+U`` it was given, ours writes every upsert
    as ``+I`` (both add the row)."""
    return [("+I", *c[1:]) if c[0] == "+U" else c for c in changes]


@pytest.mark.parametrize(("mode", "scan"), [("stream", "changelog"), ("batch", "delta")])
def test_javas_delta_readers_see_our_upserts_as_they_see_javas(
        tmp_path: Path, changelog_reader: ChangelogReader, mode: str, scan: str) -> None:
    """``changelog-producer`` = ``none``: Java's streaming read and its incremental ``delta`` read
    take the files of ``APPEND`` snapshots only (``DeltaFollowUpScanner``,
    ``IncrementalDeltaStartingScanner``: ``COMPACT`` and ``OVERWRITE`` skipped). Java commits a
    write as ``APPEND`` (its level-0 rows, ``-D`` included) and then ``COMPACT`` (the vectors); an
    upsert committed as one snapshot that changes vectors is ``OVERWRITE``, and a consumer missed
    every update and delete in it. Both tables give the same change rows."""
    mine, java = _ours_and_javas_changelog(tmp_path, SAME_SEQUENCE, "none", changelog_reader, mode, scan)
    # +I x5; +U(1) -D(2) +I(7); -D(9) +I(2) -U(3). Java writes the -D of key 9, never written, as
    # given; here the delete of a key the table does not hold is a no-op, written nowhere.
    never_written = ("-D", 0, 9, None, None)
    assert len(java) == 5 + 3 + 3 and never_written in java
    assert normal(_as_upserts(mine)) == normal(_as_upserts([c for c in java if c != never_written]))


def test_each_snapshot_of_an_upsert_reads_as_java_reads_it(tmp_path: Path,
                                                            changelog_reader: ChangelogReader) -> None:
    """Time travel to the write's APPEND snapshot shows the table before the write (its rows are in
    level-0 files, which deletion-vectors readers do not read), its COMPACT snapshot after it —
    the same rows from Java's read at each snapshot."""
    warehouse = str(tmp_path)
    table = create(warehouse, "fixed", {"changelog-producer": "none"})
    table.upsert(pa.Table.from_pylist([{"p": 0, "k": k, "v": "a", "n": k} for k in range(4)], schema=SCHEMA))
    table.upsert(dedup_table([("+I", {"p": 0, "k": 1, "v": "b", "n": 1}),
                              ("-D", {"p": 0, "k": 2, "v": "a", "n": 2}),
                              ("+I", {"p": 0, "k": 9, "v": "b", "n": 9})]))
    kinds = [table._paimon.snapshot_manager().get_snapshot_by_id(i).commit_kind for i in (1, 2, 3)]
    assert kinds == ["APPEND", "APPEND", "COMPACT"]
    java = changelog_reader.oracle.batch([{"cmd": "read", "warehouse": warehouse, "table": "db.t",
                                           "snapshot": i, "rows": "true"} for i in (1, 2, 3)])
    before = sorted((0, k, "a", k) for k in range(4))
    after = [(0, 0, "a", 0), (0, 1, "b", 1), (0, 3, "a", 3), (0, 9, "b", 9)]
    for snapshot, want, theirs in zip((1, 2, 3), (before, before, after), java, strict=True):
        ours = sorted(tuple(r.values()) for r in table.read(snapshot_id=snapshot).to_pylist())
        assert ours == want, snapshot
        assert sorted(tuple(r) for r in theirs["row_values"]) == want, snapshot


def test_javas_delta_read_of_our_deletes_keeps_each_rows_kind(tmp_path: Path,
                                                               changelog_reader: ChangelogReader) -> None:
    """The ``-U``/``-D`` rows an upsert writes for the keys it deletes are sorted by key; each keeps
    its own kind (given in descending key order, the kinds once stayed in input order)."""
    warehouse = str(tmp_path)
    table = create(warehouse, "fixed", {"changelog-producer": "none", "bucket": "1"})
    table.upsert(pa.Table.from_pylist([{"p": 0, "k": k, "v": "a", "n": k} for k in range(6)], schema=SCHEMA))
    low = latest(table)
    table.upsert(dedup_table([("-D", {"p": 0, "k": 5, "v": "x", "n": 5}),
                              ("-U", {"p": 0, "k": 1, "v": "y", "n": 1}),
                              ("-D", {"p": 0, "k": 3, "v": "z", "n": 3})]))
    (got,) = changelog_reader.read([(warehouse, "db.t", low, latest(table))], scan="delta")
    want = [("-U", 0, 1, "y", 1), ("-D", 0, 3, "z", 3), ("-D", 0, 5, "x", 5)]
    assert sorted(got, key=lambda c: c[2]) == want
    assert sorted(r["k"] for r in table.read().to_pylist()) == [0, 2, 4]

@pytest.mark.slow
def test_paimons_spark_connector_reads_our_changelog(tmp_path: Path) -> None:
    """Paimon's own Spark connector reads the changelog of our table (``paimon_incremental_query``
    over ``$audit_log``: the incremental scan, changelog mode by default with a producer): the
    change rows with their row kinds."""
    from tests import paimonsql

    warehouse = str(tmp_path)
    table = create(warehouse, "fixed")
    table.upsert(pa.Table.from_pylist([{"p": 0, "k": k, "v": "a", "n": k} for k in range(3)], schema=SCHEMA))
    table.upsert(dedup_table([("+I", {"p": 0, "k": 1, "v": "b", "n": 1}),
                              ("-D", {"p": 0, "k": 2, "v": None, "n": None})]))
    # The second upsert commits two snapshots, as Java does: APPEND (its level-0 files) as 2 and
    # COMPACT (the lookup's changelog) as 3; the range (1, 2] held no change rows since session 20.
    results = paimonsql.run(warehouse, [
        "SELECT rowkind, k, v FROM paimon_incremental_query('db.`t$audit_log`', 1, 3)"])
    assert "error" not in results[-1], results[-1]
    assert sorted(map(tuple, results[-1]["rows"])) == sorted([("-U", 1, "a"), ("+U", 1, "b"), ("-D", 2, "a")])


# maintenance ----------------------------------------------------------------------------------------
def test_expiry_deletes_the_changelog_files_of_expired_snapshots_and_orphan_removal_keeps_the_rest(
        tmp_path: Path, changelog_reader: ChangelogReader) -> None:
    """Without ``changelog.num-retained.*`` beyond the snapshots' (changelog lifecycle not
    decoupled), Java's expiry deletes an expired snapshot's changelog files with it; orphan removal
    keeps every changelog file a snapshot lists and removes one no snapshot does."""
    import time

    warehouse = str(tmp_path)
    table = create(warehouse, "fixed", {"bucket": "1"})
    for v in ("a", "b", "c"):
        table.upsert(pa.Table.from_pylist([{"p": 0, "k": k, "v": v, "n": k} for k in range(3)],
                                          schema=SCHEMA))
    bucket = tmp_path / "db.db" / "t" / "bucket-0"
    changelogs = sorted(bucket.glob("changelog-*"), key=os.path.getmtime)
    assert len(changelogs) == 3
    stray = bucket / "changelog-00000000-0000-0000-0000-000000000000-0.parquet"
    shutil.copy(changelogs[0], stray)  # written by a commit that failed: no snapshot lists it
    # The last upsert: its write (APPEND) and its lookup compaction (COMPACT, the changelog).
    result = table.expire_snapshots(retain_last=2)
    assert sorted(map(str, changelogs[:2])) == sorted(p for p in map(str, result.deleted_files)
                                                       if "/changelog-" in p)
    assert [p.exists() for p in changelogs] == [False, False, True]
    os.utime(stray, (time.time() - 10, time.time() - 10))
    orphans = table.remove_orphan_files(older_than=time.time() - 5)
    assert [str(stray)] == [p for p in map(str, orphans.deleted_files) if "/changelog-" in p]
    assert changelogs[2].exists()
    (got,) = changelog_reader.read([(warehouse, "db.t", latest(table) - 1, latest(table))])
    assert normal(got) == normal([c for k in range(3) for c in (("-U", 0, k, "b", k), ("+U", 0, k, "c", k))])


# changelog-producer = input ---------------------------------------------------------------------------
INPUT = {"changelog-producer": "input"}


def run_input(warehouse: str, layout: str, steps: list) -> list[tuple[int, int, list[Change]]]:
    """Run ``steps`` on a new ``input`` table; per step that committed: (from, to, the input
    records themselves — Java's MergeTreeWriter hands every record to the changelog writer before
    its merge)."""
    table = create(warehouse, layout, INPUT)
    model: dict[Any, dict[str, Any]] = {}
    expected: list[tuple[int, int, list[Change]]] = []
    for op, arg in steps:
        low = latest(table)
        if op == "upsert":
            dedup_upsert(model, arg)
            changes = [(kind, *(row[c] for c in NAMES)) for kind, row in arg]
            table.upsert(dedup_table(arg))
        elif op == "delete":  # Java's DELETE: -D rows, full values
            changes = [("-D", *(row[c] for c in NAMES)) for key, row in sorted(model.items())
                       if key[1] >= arg]
            model = {key: row for key, row in model.items() if key[1] < arg}
            table.delete(f"k >= {arg}")
        elif op == "update":  # Java's UPDATE: +U rows, new values
            for key in [key for key in model if key[1] == arg]:
                model[key] = dict(model[key], v="u")
            changes = [("+U", *(row[c] for c in NAMES)) for key, row in sorted(model.items())
                       if key[1] == arg]
            table.update({"v": "'u'"}, f"k = {arg}")
        else:
            changes = []
            table.compact(full=arg)
        high = latest(table)
        if high != low:
            expected.append((low, high, changes))
        else:
            assert not changes, (op, arg, changes)
    assert {(r["p"], r["k"]): r for r in table.read().to_pylist()} == model
    return expected


def test_input_changelog_holds_every_input_record_with_its_own_sequence(tmp_path: Path) -> None:
    """Two records of one key in one upsert are both in the changelog (unmerged), each with its
    own sequence number, in the bucket's next range, sorted by key then sequence; the data file
    holds the merged row."""
    table = create(str(tmp_path), "fixed", {**INPUT, "bucket": "1"})
    table.upsert(pa.Table.from_pylist([{"p": 0, "k": 1, "v": "a", "n": 1}], schema=SCHEMA))
    table.upsert(dedup_table([("+I", {"p": 0, "k": 2, "v": "b", "n": 2}),
                              ("+U", {"p": 0, "k": 1, "v": "c", "n": 1}),
                              ("-D", {"p": 0, "k": 7, "v": None, "n": None}),
                              ("+U", {"p": 0, "k": 1, "v": "d", "n": 1})]))
    from paimon_index.table.paimon import snapshot_by_id

    # As Java commits it: the input changelog with the write (APPEND), none with its compaction.
    write, compaction = snapshot_by_id(table._paimon, latest(table) - 1), snapshot_by_id(table._paimon,
                                                                                         latest(table))
    assert write.commit_kind == "APPEND" and write.changelog_record_count == 4
    assert compaction.commit_kind == "COMPACT" and compaction.changelog_manifest_list is None
    files = sorted(tmp_path.glob("db.db/t/bucket-0/changelog-*.parquet"), key=os.path.getmtime)
    assert len(files) == 2
    rows = pq.read_table(files[-1]).to_pylist()
    assert [(r["_VALUE_KIND"], r["k"], r["v"]) for r in rows] == [(2, 1, "c"), (2, 1, "d"), (0, 2, "b"),
                                                                    (3, 7, None)]
    first = pq.read_table(files[0]).to_pylist()[0]["_SEQUENCE_NUMBER"]
    assert sorted(r["_SEQUENCE_NUMBER"] for r in rows) == list(range(first + 1, first + 5))
    assert rows[0]["_SEQUENCE_NUMBER"] < rows[1]["_SEQUENCE_NUMBER"]  # input order within a key
    assert {(r["k"], r["v"]) for r in table.read().to_pylist()} == {(1, "d"), (2, "b")}


@pytest.mark.parametrize("layout", [pytest.param("fixed", marks=pytest.mark.slow), "partitioned", "dynamic"])
def test_input_random_sequences_java_reads_the_input_records(layout: str,
                                                             changelog_reader: ChangelogReader) -> None:
    random_runs_against_java(changelog_reader, 4, [dedup_operations()],
                             lambda warehouse, steps: run_input(warehouse, layout, steps))




def test_input_on_a_dynamic_bucket_table_lands_in_the_assigned_buckets(
        tmp_path: Path, changelog_reader: ChangelogReader) -> None:
    """Dynamic buckets: each record goes to its key's bucket's changelog -- a ``-D`` of a key never
    written too (a new bucket, as Java's assigner gives every record one). Refused before."""
    from paimon_index.table.pk import dynamic

    table = create(str(tmp_path), "dynamic", INPUT)  # 3 keys a bucket
    table.upsert(dedup_table([("+I", {"p": 0, "k": k, "v": "a", "n": k}) for k in range(5)]))
    low = latest(table)
    table.upsert(dedup_table([("+U", {"p": 0, "k": 4, "v": "b", "n": 4}),
                              ("-D", {"p": 0, "k": 50, "v": None, "n": None}),
                              ("+U", {"p": 0, "k": 4, "v": "c", "n": 4}),
                              ("+I", {"p": 0, "k": 7, "v": "d", "n": 7})]))
    (got,) = changelog_reader.read([(str(tmp_path), "db.t", low, latest(table))])
    assert normal(got) == normal([("+U", 0, 4, "b", 4), ("-D", 0, 50, None, None), ("+U", 0, 4, "c", 4),
                                  ("+I", 0, 7, "d", 7)])
    buckets = dynamic.buckets_of(table._paimon, latest(table), [(0, k) for k in (0, 3, 4, 7)])
    by_bucket: dict[int, list[int]] = {}
    for path in tmp_path.glob("db.db/t/bucket-*/changelog-*.parquet"):
        bucket = int(path.parent.name.split("-")[1])
        by_bucket.setdefault(bucket, []).extend(r["k"] for r in pq.read_table(path).to_pylist())
    for k in (0, 3, 4, 7):  # each key's records in its own bucket's changelog
        assert k in by_bucket[buckets[(0, k)]]
    assert sum(len(v) for v in by_bucket.values()) == 5 + 4
    assert {(r["k"], r["v"]) for r in table.read().to_pylist()} == {(0, "a"), (1, "a"), (2, "a"), (3, "a"),
                                                                     (4, "c"), (7, "d")}


def _merge_row(k: int, **values: Any) -> dict[str, Any]:
    return {"k": k, **{c: values.get(c) for c in MERGE_NAMES[1:]}}


#: Upserts of a merge-engine table whose input records matter: two records of one key in one write,
#: a -D of a key never written, -U/+U pairs.
INPUT_MERGE_STEPS = [
    [("+I", _merge_row(k, s=k, lv="a", mn=k)) for k in range(4)],
    [("+U", _merge_row(1, s=5, lv=None, mx=3)), ("-D", _merge_row(2, s=2, lv="a", mn=2)),
     ("+I", _merge_row(1, lv="b")), ("-D", _merge_row(9))],
    [("-U", _merge_row(3, s=3, lv="a", mn=3)), ("+U", _merge_row(3, s=7, lv="c")),
     ("+I", _merge_row(0, fn="x"))],
]


@pytest.mark.parametrize("config", [  # one in CI; the others (10 s of Java each) with -m slow
    pytest.param("partial-remove-on-delete", marks=pytest.mark.slow),
    pytest.param("partial-ignore-delete", marks=pytest.mark.slow), "agg-last"])
def test_input_with_merge_engines_java_writes_the_same_changelog(tmp_path: Path, config: str,
                                                                 changelog_reader: ChangelogReader) -> None:
    """The input records are written before any merge, whatever the merge engine (``ignore-delete``
    included: Java's merge function drops the delete, its changelog writer still gets it)."""
    steps = INPUT_MERGE_STEPS
    ours = str(tmp_path / "ours")
    # fixed buckets: the oracle's writer takes no dynamic-bucket table (its rows need a bucket each)
    options = {**DV, **INPUT, "bucket": "2", "merge-engine": engine_of(config), **CONFIGS[config][0]}
    table = paimon_index.create_table(ours, "db.t", MERGE_SCHEMA, primary_keys=["k"], options=options)
    for batch in steps:
        table.upsert(merge_rows(batch))
    theirs = str(tmp_path / "java")
    types = {pa.int64(): "BIGINT", pa.int32(): "INT", pa.string(): "STRING", pa.bool_(): "BOOLEAN"}
    commands = []
    for i, batch in enumerate(steps):
        path = tmp_path / f"b{i}.jsonl"
        path.write_text("".join(json.dumps(dict(r, _kind=k)) + "\n" for k, r in batch))
        command = {"cmd": "write", "warehouse": theirs, "table": "db.t", "jsonl": str(path)}
        if i:
            command["no-create"] = "true"
        else:
            command |= {"schema": ", ".join(f"{f.name} {types[f.type]}" for f in MERGE_SCHEMA), "pk": "k",
                        "options": ",".join(f"{k}={v}" for k, v in options.items())}
        commands.append(command)
    java_snapshot = changelog_reader.oracle.batch(commands)[-1]["snapshot"]
    mine, java = changelog_reader.read([(ours, "db.t", 0, latest(table)),
                                        (theirs, "db.t", 0, int(java_snapshot))])
    assert normal(mine) == normal(java)
    # ignore-delete: Java's RowKindFilter drops the -D and -U records before the writer
    assert len(java) == 4 + 4 + 3 - (3 if config == "partial-ignore-delete" else 0)


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_merge_on_read_refuses_producers_it_would_silently_skip(tmp_path: Path, producer: str) -> None:
    """Without deletion vectors a write by key commits level-0 records and runs no lookup and no
    compaction: before this check the write committed with no changelog at all."""
    table = create(str(tmp_path), "fixed",
                   {"changelog-producer": producer, "deletion-vectors.enabled": "false"})
    with pytest.raises(UnsupportedChangelogProducerError, match="without deletion vectors"):
        table.upsert(pa.Table.from_pylist([{"p": 0, "k": 1, "v": "a", "n": 1}], schema=SCHEMA))
    with pytest.raises(UnsupportedChangelogProducerError, match="without deletion vectors"):
        table.upsert(dedup_table([("-D", {"p": 0, "k": 1, "v": None, "n": None})]))
    assert not list(tmp_path.glob("db.db/t/bucket-*/*")) and latest(table) == 0
