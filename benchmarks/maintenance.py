"""Table maintenance through the Spark surface against Apache Paimon's own Spark connector, in one run:
load, upsert, DELETE, full compaction of a primary-key table, compaction of an append table (200 small
files; files with 30% deleted rows), and the read after each.

    python benchmarks/maintenance.py [--rows 2000000] [--small-files 200] [--tasks 2 | --tasks 1,2]
                                     [--only load,compact,...] [--no-connector] [--data DIR]

Input (numpy, seeded; cached under ``benchmarks/.data/maintenance-<rows>-v<N>/``): ``--rows`` rows
``(id BIGINT, status STRING, amount DOUBLE, customer BIGINT, note STRING)`` (``status`` 8 values, the
rarest 0.1%) and an upsert batch (10% of the ids, random, with new values, plus 1% new ids), written
once as Parquet; the Parquet is loaded once into two plain append tables of a seed warehouse
(``bench.src``, ``bench.src_upsert``, four and one files) because Paimon's connector cannot read plain
Parquet (its Parquet classes come first; ``spark.read.parquet`` hangs in that session). Every run gets
its own copy of the seed warehouse and runs the same SQL text on it:

    CREATE TABLE bench.pk (...) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '4',
        'deletion-vectors.enabled' = 'true', 'file-index.bitmap.columns' = 'status')
    CREATE TABLE bench.app (...) TBLPROPERTIES ('deletion-vectors.enabled' = 'true',
        'file-index.bitmap.columns' = 'status')
    CREATE TABLE bench.mor (...) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '4',
        'file-index.bitmap.columns' = 'status')   (merge-on-read: no deletion vectors)

Steps (``--only`` picks the steps printed; every earlier step of the same table still runs, untimed
in the table, and a table none of whose steps is picked is skipped):

    load                 INSERT INTO bench.pk SELECT * FROM bench.src
    upsert               INSERT INTO bench.pk SELECT * FROM bench.src_upsert (an upsert: 10% updates,
                         1% new keys)
    read after upsert    SELECT * FROM bench.pk WHERE status = 'HELD' (the bitmap's rarest value)
    delete               DELETE FROM bench.pk WHERE status = 'REFUNDED' AND amount < 2 (a non-key predicate)
    full compaction      CALL sys.compact(table => 'bench.pk', compact_strategy => 'full')
    read after compact   the read of ``read after upsert``
    append compact small after ``--small-files`` untimed INSERTs of consecutive id ranges into
                         bench.app: CALL sys.compact(table => 'bench.app')
    append read small    SELECT * FROM bench.app WHERE status = 'HELD'
    append delete 30%    DELETE FROM bench.app WHERE amount < 30
    append compact 30%   CALL sys.compact(table => 'bench.app') (files past
                         ``compaction.delete-ratio-threshold``, default 0.2, are rewritten)
    append read 30%      the append read again
    mor load, mor upsert, mor read after upsert, mor delete, mor update, mor full compaction,
    mor read after compact
                         the primary-key steps on bench.mor, where every read merges the key's
                         rows across files and levels and DELETE/UPDATE write by key (the
                         distributed merge-on-read changes); ``mor update`` is
                         UPDATE bench.mor SET amount = amount + 1, note = 'u' WHERE status = 'RETURNED'

Before the steps each side runs an untimed warm-up (the same statements on a 1,000-row table), so
no step pays a path's first run in the process (the JVM's code generation and JIT, the Python
workers' imports). Paimon's connector runs every change the same way at any size; ours writes a
change of a few rows on the driver and a large one in Spark tasks, so ours runs the warm-up's
changes once more with the driver's path off (``jobs.SMALL_CHANGE_ROWS = 0``): the path each timed
step takes has run once, on both sides.
Paimon's connector (``paimon-sql.sh``: PySpark 4.1.2, ``local[2]``, its own JVM process) runs the whole
sequence once right before ours and once right after; its time per statement is its own
(``spark.sql(text).collect()`` in that process). Ours: ``paimon_index.spark.attach(spark,
warehouse=W).sql(text).collect()`` in this process, one run per ``--tasks`` value (``local[n]``; the
connector always runs ``local[2]``). A step ours refuses with a documented refusal (append compaction
before it exists: a SqlError/TableError naming the append table) is printed as "not supported"; any
other error fails the run.

Checks (a fast wrong answer is not a number): after every step each side runs ``SELECT count(*),
sum(customer), bit_xor(xxhash64(id, status, amount, customer, note))`` over the table (untimed); a
read's rows are its result. Every side's result must equal the connector's first run (harness
equality: floats within 1e-9), and the row counts must equal a pyarrow model of the sequence;
the row counts of every side are printed, and ``$files`` counts after the compactions. Any difference
fails the run (exit 1) after the table is printed.

Printed: seconds per step (connector before, after; ours per ``--tasks``), ours / the mean of the
connector's two runs, the goal (<= 1.2x, issue 22) and whether it is met, and the load average.
Numbers are measured, never adjusted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from sqlref import harness  # noqa: E402  (tests/)

GENERATOR_VERSION = 1
SEED = 20261126
DEFAULT_DATA = HERE / ".data"
GOAL = 1.2
SOURCE_FILES = 4
WARM_ROWS = 1000
STATUSES = ("NEW", "PAID", "SHIPPED", "DELIVERED", "RETURNED", "CANCELLED", "REFUNDED", "HELD")
STATUS_P = (0.30, 0.25, 0.20, 0.15, 0.05, 0.04, 0.009, 0.001)
UPDATE_SHARE = 0.10
NEW_SHARE = 0.01
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("status", pa.string()),
                    ("amount", pa.float64()), ("customer", pa.int64()), ("note", pa.string())])
COLUMNS = "id BIGINT, status STRING, amount DOUBLE, customer BIGINT, note STRING"
PK_OPTIONS = ("'primary-key' = 'id', 'bucket' = '4', 'deletion-vectors.enabled' = 'true', "
              "'file-index.bitmap.columns' = 'status'")
APPEND_OPTIONS = "'deletion-vectors.enabled' = 'true', 'file-index.bitmap.columns' = 'status'"
MOR_OPTIONS = "'primary-key' = 'id', 'bucket' = '4', 'file-index.bitmap.columns' = 'status'"
MOR_UPDATE = "UPDATE bench.mor SET amount = amount + 1, note = 'u' WHERE status = 'RETURNED'"
#: Each merge-on-read step's row count is its primary-key twin's (the UPDATE keeps every row).
MOR_TWINS = {"mor load": "load", "mor upsert": "upsert", "mor read after upsert": "read after upsert",
             "mor delete": "delete", "mor update": "delete", "mor full compaction": "full compaction",
             "mor read after compact": "read after compact"}
READ_WHERE = "status = 'HELD'"
PK_DELETE_WHERE = "status = 'REFUNDED' AND amount < 2"
APPEND_DELETE_WHERE = "amount < 30"


# -- input -------------------------------------------------------------------------------------------
def generate(rows: int) -> tuple[pa.Table, pa.Table]:
    """The base rows (ids 0..rows-1) and the upsert batch (10% of them updated, 1% new ids)."""
    rng = np.random.default_rng(SEED)

    def rows_for(ids: np.ndarray, version: str) -> pa.Table:
        status = np.asarray(STATUSES, dtype=object)[rng.choice(len(STATUSES), ids.size, p=STATUS_P)]
        notes = pc.binary_join_element_wise(version, pa.array(ids % 9973).cast(pa.string()), "")
        return pa.table({"id": ids, "status": pa.array(status, pa.string()),
                         "amount": np.round(rng.random(ids.size) * 100, 2),
                         "customer": rng.integers(0, 100_000, ids.size, dtype=np.int64),
                         "note": notes}, schema=SCHEMA)

    base = rows_for(np.arange(rows, dtype=np.int64), "v0-")
    updated = rng.choice(rows, int(rows * UPDATE_SHARE), replace=False).astype(np.int64)
    fresh = np.arange(rows, rows + int(rows * NEW_SHARE), dtype=np.int64)
    upsert = rows_for(rng.permutation(np.concatenate([updated, fresh])), "v1-")
    return base, upsert


@dataclass(frozen=True)
class Built:
    root: Path
    seed: Path  # the warehouse with bench.src and bench.src_upsert
    rows: int
    model: dict[str, int]  # expected row counts, by check name


def build(data: Path, rows: int) -> Built:
    """Generate (or reuse) the Parquet input and the seed warehouse loaded from it."""
    import paimon_index

    root = data / f"maintenance-r{rows}-v{GENERATOR_VERSION}"
    seed, parquet, marker = root / "seed", root / "parquet", root / "complete.json"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        parquet.mkdir(parents=True)
        start = time.perf_counter()
        base, upsert = generate(rows)
        pq.write_table(base, parquet / "src.parquet")
        pq.write_table(upsert, parquet / "src_upsert.parquet")
        src = paimon_index.create_table(str(seed), "bench.src", SCHEMA)
        loaded = pq.read_table(parquet / "src.parquet")
        per_file = -(-rows // SOURCE_FILES)
        for first in range(0, rows, per_file):
            src.write(loaded.slice(first, per_file))
        paimon_index.create_table(str(seed), "bench.src_upsert", SCHEMA).write(
            pq.read_table(parquet / "src_upsert.parquet"))
        model = expected_counts(base, upsert)
        marker.write_text(json.dumps({"seconds": time.perf_counter() - start, "model": model}))
    model = json.loads(marker.read_text())["model"]
    model |= {mor: model[twin] for mor, twin in MOR_TWINS.items()}
    return Built(root, seed, rows, model)


def expected_counts(base: pa.Table, upsert: pa.Table) -> dict[str, int]:
    """Row counts after each step, from pyarrow alone (the model every side must match)."""
    def count(t: pa.Table, where: pc.Expression | None = None) -> int:
        return t.num_rows if where is None else t.filter(where).num_rows

    read = pc.field("status") == "HELD"
    pk_delete = (pc.field("status") == "REFUNDED") & (pc.field("amount") < 2)
    kept = pc.invert(pc.is_in(base["id"], value_set=upsert["id"].combine_chunks()))
    pk = pa.concat_tables([base.filter(kept), upsert])
    out = {"load": count(base), "upsert": count(pk), "read after upsert": count(pk, read)}
    pk = pk.filter(~pk_delete)
    out |= {"delete": count(pk), "full compaction": count(pk), "read after compact": count(pk, read)}
    app = base
    out |= {"append compact small": count(app), "append read small": count(app, read)}
    app = app.filter(~(pc.field("amount") < 30))
    out |= {"append delete 30%": count(app), "append compact 30%": count(app),
            "append read 30%": count(app, read)}
    return out


# -- the statements ----------------------------------------------------------------------------------
@dataclass
class Step:
    name: str
    table: str  # bench.pk, bench.app or bench.mor
    sql: str
    setup: list[str] = field(default_factory=list)  # untimed, before the step
    read: bool = False  # the result is the rows; else a check query follows
    compaction: bool = False  # $files is counted after it
    refusable: bool = False  # ours may refuse it with a documented refusal (not supported yet)


def check_sql(table: str) -> str:
    return (f"SELECT count(*), sum(customer), bit_xor(xxhash64(id, status, amount, customer, note)) "
            f"FROM {table}")


def files_sql(table: str) -> str:
    return f"SELECT count(*) FROM {table.split('.')[0]}.`{table.split('.')[1]}$files`"


def small_inserts(rows: int, files: int) -> list[str]:
    per = -(-rows // files)
    return [f"INSERT INTO bench.app SELECT * FROM bench.src WHERE id >= {a} AND id < {min(a + per, rows)}"
            for a in range(0, rows, per)]


def steps(rows: int, small_files: int) -> list[Step]:
    pk, app, mor = "bench.pk", "bench.app", "bench.mor"
    read_pk, read_app = f"SELECT * FROM {pk} WHERE {READ_WHERE}", f"SELECT * FROM {app} WHERE {READ_WHERE}"
    read_mor = f"SELECT * FROM {mor} WHERE {READ_WHERE}"
    compact_app = f"CALL sys.compact(table => '{app}')"
    return [
        Step("load", pk, f"INSERT INTO {pk} SELECT * FROM bench.src",
             setup=[f"CREATE TABLE {pk} ({COLUMNS}) TBLPROPERTIES ({PK_OPTIONS})"]),
        Step("upsert", pk, f"INSERT INTO {pk} SELECT * FROM bench.src_upsert"),
        Step("read after upsert", pk, read_pk, read=True),
        Step("delete", pk, f"DELETE FROM {pk} WHERE {PK_DELETE_WHERE}"),
        Step("full compaction", pk, f"CALL sys.compact(table => '{pk}', compact_strategy => 'full')",
             compaction=True),
        Step("read after compact", pk, read_pk, read=True),
        Step("append compact small", app, compact_app, compaction=True, refusable=True,
             setup=[f"CREATE TABLE {app} ({COLUMNS}) TBLPROPERTIES ({APPEND_OPTIONS})",
                    *small_inserts(rows, small_files), files_sql(app)]),
        Step("append read small", app, read_app, read=True),
        Step("append delete 30%", app, f"DELETE FROM {app} WHERE {APPEND_DELETE_WHERE}"),
        Step("append compact 30%", app, compact_app, compaction=True, refusable=True),
        Step("append read 30%", app, read_app, read=True),
        Step("mor load", mor, f"INSERT INTO {mor} SELECT * FROM bench.src",
             setup=[f"CREATE TABLE {mor} ({COLUMNS}) TBLPROPERTIES ({MOR_OPTIONS})"]),
        Step("mor upsert", mor, f"INSERT INTO {mor} SELECT * FROM bench.src_upsert"),
        Step("mor read after upsert", mor, read_mor, read=True),
        Step("mor delete", mor, f"DELETE FROM {mor} WHERE {PK_DELETE_WHERE}"),
        Step("mor update", mor, MOR_UPDATE),
        Step("mor full compaction", mor, f"CALL sys.compact(table => '{mor}', compact_strategy => 'full')",
             compaction=True),
        Step("mor read after compact", mor, read_mor, read=True),
    ]


def warm_up() -> list[str]:
    """The same kinds of statements on a small table of each kind (untimed; both sides)."""
    return [
        "SELECT count(*) FROM bench.src",
        f"CREATE TABLE bench.warm ({COLUMNS}) TBLPROPERTIES ({PK_OPTIONS})",
        f"INSERT INTO bench.warm SELECT * FROM bench.src WHERE id < {WARM_ROWS}",
        f"INSERT INTO bench.warm SELECT * FROM bench.src WHERE id < {WARM_ROWS // 2}",
        f"SELECT * FROM bench.warm WHERE {READ_WHERE}",
        f"DELETE FROM bench.warm WHERE {PK_DELETE_WHERE}",
        "CALL sys.compact(table => 'bench.warm', compact_strategy => 'full')",
        check_sql("bench.warm"),
        f"CREATE TABLE bench.warm_app ({COLUMNS}) TBLPROPERTIES ({APPEND_OPTIONS})",
        f"INSERT INTO bench.warm_app SELECT * FROM bench.src WHERE id < {WARM_ROWS}",
        f"DELETE FROM bench.warm_app WHERE {APPEND_DELETE_WHERE}",
        f"SELECT * FROM bench.warm_app WHERE {READ_WHERE}",
        check_sql("bench.warm_app"),
        f"CREATE TABLE bench.warm_mor ({COLUMNS}) TBLPROPERTIES ({MOR_OPTIONS})",
        f"INSERT INTO bench.warm_mor SELECT * FROM bench.src WHERE id < {WARM_ROWS}",
        f"INSERT INTO bench.warm_mor SELECT * FROM bench.src WHERE id < {WARM_ROWS // 2}",
        f"SELECT * FROM bench.warm_mor WHERE {READ_WHERE}",
        f"DELETE FROM bench.warm_mor WHERE {PK_DELETE_WHERE}",
        MOR_UPDATE.replace("bench.mor", "bench.warm_mor"),
        check_sql("bench.warm_mor"),
    ]


def selected(all_steps: list[Step], only: set[str] | None) -> list[Step]:
    """The steps to run: per table, everything up to its last picked step."""
    if not only:
        return all_steps
    unknown = only - {s.name for s in all_steps}
    if unknown:
        raise SystemExit(f"--only: unknown steps {sorted(unknown)}; steps: {[s.name for s in all_steps]}")
    out = []
    for table in dict.fromkeys(s.table for s in all_steps):
        mine = [s for s in all_steps if s.table == table]
        picked = [i for i, s in enumerate(mine) if s.name in only]
        if picked:
            out += mine[:max(picked) + 1]
    return out


def program(run_steps: list[Step]) -> list[tuple[str, str, str]]:
    """The whole statement sequence: (step name or '', role, text); roles: warm, setup, step (or
    refusable: a step ours may refuse as documented), check, files."""
    out = [("", "warm", s) for s in warm_up()]
    for step in run_steps:
        out += [(step.name, "setup", s) for s in step.setup]
        out.append((step.name, "refusable" if step.refusable else "step", step.sql))
        if not step.read:
            out.append((step.name, "check", check_sql(step.table)))
        if step.compaction:
            out.append((step.name, "files", files_sql(step.table)))
    return out


# -- running -----------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """One side's run: per step its seconds (None: not supported), its result, and $files counts."""
    seconds: dict[str, float | None] = field(default_factory=dict)
    result: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)
    files_before: dict[str, int] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    load_average: float = 0.0


def fresh_warehouse(built: Built, name: str) -> Path:
    target = built.root / "runs" / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(built.seed, target)
    return target


def collect_outcome(prog: list[tuple[str, str, str]], answers: list[dict[str, Any]], side: str) -> Outcome:
    out = Outcome(load_average=os.getloadavg()[0])
    for (step, role, text), answer in zip(prog, answers, strict=True):
        role = "step" if role == "refusable" else role
        if role == "step" and answer.get("refused"):
            out.seconds[step] = None
            out.refused[step] = answer["refused"]
            continue
        if not answer.get("ok"):
            raise SystemExit(f"{side} failed on {text[:200]!r} ({step or 'warm-up'}): {answer.get('error')}")
        if role == "step":
            out.seconds[step] = float(answer["seconds"])
            if text.lstrip().upper().startswith("SELECT"):
                out.result[step] = answer
        elif role == "check":
            out.result[step] = answer
        elif role == "files":
            out.files[step] = int(answer["rows"][0][0])
        elif role == "setup" and text.startswith("SELECT count(*) FROM") and "$files" in text:
            out.files_before[step] = int(answer["rows"][0][0])
    return out


def run_connector(built: Built, prog: list[tuple[str, str, str]], name: str) -> Outcome:
    warehouse = fresh_warehouse(built, name)
    start = time.perf_counter()
    answers = harness.run_connector(warehouse, [text for _, _, text in prog])
    print(f"{name}: {time.perf_counter() - start:.1f} s (process)", flush=True)
    return collect_outcome(prog, answers, "Paimon's connector")


def is_refusal(error: BaseException) -> bool:
    """A documented refusal of a step ours does not support yet (not a failure of one it does)."""
    from paimon_index import errors

    refusals = (errors.SqlError, errors.TableError, errors.UnsupportedTableError)
    failures = (errors.CommitError, errors.ConcurrentChangeError)

    chain = [error, *([error.__cause__] if error.__cause__ is not None else [])]
    return isinstance(error, refusals) and not any(isinstance(e, failures) for e in chain)


def run_ours(spark: Any, warehouse: Path, prog: list[tuple[str, str, str]]) -> Outcome:
    """The program through ``paimon_index.spark.attach(spark, warehouse=W).sql`` (one session)."""
    import paimon_index.spark
    from paimon_index.errors import PaimonIndexError

    paimon = paimon_index.spark.attach(spark, warehouse=str(warehouse))
    answers: list[dict[str, Any]] = []
    task_path_warm = False
    for step, role, text in prog:
        if role != "warm" and not task_path_warm:
            warm_task_path(paimon, [t for _, r, t in prog if r == "warm"])
            task_path_warm = True
        start = time.perf_counter()
        try:
            df = paimon.sql(text)
            rows = [[harness.plain(v) for v in r] for r in df.collect()]
        except PaimonIndexError as e:
            if role == "refusable" and is_refusal(e):
                answers.append({"refused": str(e).strip().splitlines()[0][:160]})
                continue
            raise
        seconds = time.perf_counter() - start
        answers.append({"ok": True, "columns": list(df.columns), "rows": rows, "seconds": seconds})
        if role in ("step", "refusable"):
            print(f"  {step}: {seconds:.2f} s", flush=True)
    return collect_outcome(prog, answers, "paimon-index")


def warm_task_path(paimon: Any, warm: list[str]) -> None:
    """The warm-up's changes again with the driver's small-change path off (untimed): the timed
    steps' large changes run in Spark tasks, a path the 1,000-row warm-up would not take."""
    from paimon_index.spark import jobs

    saved = jobs.SMALL_CHANGE_ROWS
    jobs.SMALL_CHANGE_ROWS = 0
    try:
        for text in warm:
            if text.split(None, 1)[0].upper() in ("INSERT", "DELETE", "UPDATE"):
                paimon.sql(text).collect()
    finally:
        jobs.SMALL_CHANGE_ROWS = saved


def ours_session(tasks: int) -> Any:
    from paimon_index.spark.session import local_session

    spark = local_session("maintenance-bench", master=f"local[{tasks}]")
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# -- checking and printing ---------------------------------------------------------------------------
def row_count(step: Step, outcome: Outcome) -> int | None:
    result = outcome.result.get(step.name)
    if result is None:
        return None
    return len(result["rows"]) if step.read else int(result["rows"][0][0])


def wrong_answers(run_steps: list[Step], sides: dict[str, Outcome], model: dict[str, int]) -> list[str]:
    wrong = []
    reference_name = next(iter(sides))
    reference = sides[reference_name]
    for step in run_steps:
        for name, outcome in sides.items():
            n = row_count(step, outcome)
            if n != model[step.name]:
                wrong.append(f"{step.name}: {name} has {n} rows, the pyarrow model {model[step.name]}")
            if outcome is not reference and step.name in reference.result:
                diff = harness.differences(reference.result[step.name], outcome.result[step.name],
                                           ordered=False)
                if diff:
                    wrong.append(f"{step.name}: {name} differs from {reference_name}: {diff}")
    return wrong


def print_table(run_steps: list[Step], sides: dict[str, Outcome], connectors: list[str],
                ours: list[str], built: Built, small_files: int) -> None:
    def s(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    print(f"\n{built.rows:,} rows (bench.pk: bucket 4, deletion vectors, bitmap on status; bench.app: "
          f"deletion vectors, bitmap on status, {small_files} small inserts; bench.mor: bucket 4, "
          "merge-on-read, bitmap on status); seconds per statement")
    cols = [f"{'step':<22}", *(f"{c:>10}" for c in connectors), *(f"{o:>12}" for o in ours),
            f"{'ratio':>7}", f"{'goal':>6}", f"{'met?':>5}"]
    head = " ".join(cols)
    print(head)
    print("-" * len(head))
    main_ours = "ours[2]" if "ours[2]" in ours else ours[-1]
    uncompacted = False
    for step in run_steps:
        conn = [sides[c].seconds.get(step.name) for c in connectors]
        known = [c for c in conn if c is not None]
        mean = statistics.mean(known) if known else None
        mine = [sides[o].seconds.get(step.name) for o in ours]
        cells = [f"{step.name:<22}", *(f"{s(c):>10}" for c in conn)]
        # A read after a compaction ours refused reads the uncompacted table: marked *.
        earlier = [p.name for p in run_steps[:run_steps.index(step)] if p.table == step.table]
        later = {o for o in ours if any(sides[o].refused.get(name) for name in earlier)}
        uncompacted = uncompacted or bool(later)
        for o, m in zip(ours, mine, strict=True):
            cell = "not supported" if step.name in sides[o].refused else s(m) + ("*" if o in later else "")
            cells.append(f"{cell:>12}")
        main = sides[main_ours].seconds.get(step.name)
        if main is None or not mean:
            cells += [f"{'-':>7}", f"{GOAL:>5.1f}x", f"{'-':>5}"]
        else:
            ratio = main / mean
            cells += [f"{ratio:>6.2f}x", f"{GOAL:>5.1f}x", f"{'yes' if ratio <= GOAL else 'no':>5}"]
        print(" ".join(cells))
    print("-" * len(head))
    if uncompacted:
        print("*: after a compaction ours refused (not supported yet): ours worked on the uncompacted table, "
              "the connector compacted")
    print(f"ratio: {main_ours} / the mean of the connector's runs ({', '.join(connectors) or 'none'}); "
          "the connector runs local[2] in its own JVM")
    if len(ours) > 1:
        for step in run_steps:
            if step.compaction:
                t = [sides[o].seconds.get(step.name) for o in ours]
                if all(x is not None for x in t):
                    print(f"scaling {step.name}: " + ", ".join(f"{o} {x:.2f} s" for o, x in
                                                               zip(ours, t, strict=True)))
    print("\nrow counts (checked: equal to the pyarrow model and between the sides):")
    names = list(sides)
    print(f"{'step':<22} {'model':>10} " + " ".join(f"{n:>12}" for n in names))
    for step in run_steps:
        counts = [row_count(step, sides[n]) for n in names]
        print(f"{step.name:<22} {built.model[step.name]:>10,} "
              + " ".join(f"{('-' if c is None else f'{c:,}'):>12}" for c in counts))
    print("\n$files after compaction (before -> after; not compared: each side packs its own way):")
    for step in run_steps:
        if step.compaction:
            cells = []
            for n in names:
                before = sides[n].files_before.get(step.name)
                after = sides[n].files.get(step.name, "-")
                cells.append(f"{n} {'' if before is None else f'{before} -> '}{after}")
            print(f"{step.name:<22} " + "; ".join(cells))
    for n in names:
        for step_name, why in sides[n].refused.items():
            print(f"{n}: {step_name} not supported: {why}")
    print("load average (1 min) after each run: "
          + ", ".join(f"{n} {sides[n].load_average:.2f}" for n in names))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--small-files", type=int, default=200)
    ap.add_argument("--tasks", default="2", help="comma-separated local[n] of our runs, e.g. 1,2")
    ap.add_argument("--only", help="comma-separated step names (default: all)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--no-connector", action="store_true", help="skip Paimon's connector")
    a = ap.parse_args(argv)
    tasks = [int(t) for t in a.tasks.split(",")]

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (1 min) at start", flush=True)
    t0 = time.perf_counter()
    built = build(a.data, a.rows)
    print(f"data ready in {time.perf_counter() - t0:.1f} s: {built.root}", flush=True)
    run_steps = selected(steps(a.rows, a.small_files), set(a.only.split(",")) if a.only else None)
    prog = program(run_steps)
    why_not = None if a.no_connector else harness.connector_unavailable()
    if why_not:
        print(f"Paimon's connector does not run here: {why_not}")
    connector = not a.no_connector and why_not is None
    # One connector process runs the whole sequence (hundreds of statements at 20M rows).
    harness.CONNECTOR_TIMEOUT = max(harness.CONNECTOR_TIMEOUT, 4 * 3600.0)

    sides: dict[str, Outcome] = {}
    if connector:
        sides["conn#1"] = run_connector(built, prog, "conn#1")
    ours = []
    for n in tasks:
        name = f"ours[{n}]"
        # No glob characters in the path: Spark's file reads expand them.
        warehouse = fresh_warehouse(built, f"ours-local{n}")
        spark = ours_session(n)
        start = time.perf_counter()
        sides[name] = run_ours(spark, warehouse, prog)
        print(f"{name}: {time.perf_counter() - start:.1f} s (local[{n}])", flush=True)
        spark.stop()
        ours.append(name)
    if connector:
        sides["conn#2"] = run_connector(built, prog, "conn#2")
    connectors: list[str] = [c for c in ("conn#1", "conn#2") if c in sides]

    wrong = wrong_answers(run_steps, sides, built.model)
    print_table(run_steps, sides, connectors, ours, built, a.small_files)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    if wrong:
        print("\nWRONG ANSWERS:\n" + "\n".join(wrong))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
