"""The operations the reliability suite runs, and the model each one is checked against.

Every operation is a plain dict (picklable, loggable as JSON) that :func:`run` applies to the table
through the project's public verbs and :func:`apply_to_model` applies to a model of the table's
rows (a dict keyed by ``id``). An operation that reads the table (delete, update, overwrite, upsert,
compact -- of append tables too, ``table/append_compaction.py``) must land exactly on the snapshot
it planned, so applying the successful operations in the order of the snapshots they produced
reproduces every snapshot's rows.

Tables (``KINDS``): an append table with deletion vectors and file indexes (unaware bucket), the
same with fixed buckets, and primary-key tables in deletion-vectors mode (fixed and dynamic bucket,
and fixed bucket with the ``partial-update`` merge engine).
Columns: ``id BIGINT, cat STRING, v BIGINT``; primary key ``id`` for the primary-key kinds.

The ``dist_*`` operations run the Spark jobs' distributed paths without Spark, through exactly the
functions their tasks and their driver call (:mod:`paimon_index.spark.jobs`,
:mod:`paimon_index.spark._tasks`, :class:`paimon_index.spark.datasource.PaimonIndexWriter`): the
rows split as the job's shuffles split them, one call per simulated task on a table the task opens
itself, payloads and results pickled as Spark ships them, then the driver's one commit:

* ``dist_upsert`` of a fixed-bucket table: rows grouped by Paimon bucket into tasks
  (``_tasks.with_bucket`` + repartition), each task the source writer with ``bucket-exclusive``
  (``prepare_upsert``, or ``prepare_merge`` with a merge engine), the driver ``commit_prepared``;
* ``dist_upsert`` of a dynamic-bucket table: ``_tasks.dynamic_upsert_job``'s three stages
  (``dynamic.route`` per input split, ``dynamic.assign`` per assigner task, ``dynamic.prepare`` per
  bucket task), the driver ``commit_prepared``;
* ``dist_append`` of an append table: the source writer's tasks, its driver commit
  (``PaimonIndexWriter.commit``; an append may land on a newer snapshot, so this one is for the
  crash tests, not for the concurrent histories, whose log needs each operation's snapshot);
* ``dist_overwrite`` of a primary-key table: ``jobs.overwrite``'s tasks (``prepare_overwrite`` per
  bucket group; a dynamic-bucket table's rows in one task), the driver ``commit_overwrite``;
* ``dist_compact``: a primary-key table's ``pk.compaction.compact`` with ``_tasks.pk_compact_job``'s
  packing and ``compact_buckets`` per task; an append table's ``jobs._compact_append``
  (``plan_compaction``, ``rewrite_group`` per task, ``commit_compaction``).

:func:`_task_finished` and :func:`_tasks_finished` mark where a simulated task ended and where the
driver took over (the crash tests kill there: files written, nothing committed). With ``spill`` (a
path) in the operation, the source writer's operations keep there what their finished tasks
returned, as Spark's driver holds it: a crash test hands it to ``PaimonIndexWriter.abort`` as Spark
does when a task or the commit's Python worker dies (:func:`spark_abort`).
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()),
                    pa.field("v", pa.int64())])
CATEGORIES = tuple(f"c{i}" for i in range(4))
#: Keys of primary-key tables come from a small space so upserts hit existing and new keys.
KEY_SPACE = 60
IDENTIFIER = "db.t"

INDEX_OPTIONS = {"file-index.bitmap.columns": "cat", "file-index.bloom-filter.columns": "id",
                 "file-index.range-bitmap.columns": "v"}


@dataclass(frozen=True)
class TableKind:
    name: str
    primary_key: bool
    options: Mapping[str, str]


KINDS = {
    "append-unaware": TableKind("append-unaware", False, {"bucket": "-1", "deletion-vectors.enabled": "true",
                                                          **INDEX_OPTIONS}),
    "append-fixed": TableKind("append-fixed", False, {"bucket": "2", "bucket-key": "id",
                                                      "deletion-vectors.enabled": "true", **INDEX_OPTIONS}),
    "pk-fixed": TableKind("pk-fixed", True, {"bucket": "2", "deletion-vectors.enabled": "true",
                                             "file-index.bitmap.columns": "cat"}),
    "pk-dynamic": TableKind("pk-dynamic", True, {"bucket": "-1", "deletion-vectors.enabled": "true",
                                                 "file-index.bitmap.columns": "cat"}),
    # NULLs keep the old value. No deletes: Paimon refuses them without 'ignore-delete' or
    # 'partial-update.remove-record-on-delete', and pypaimon's reader refuses tables with those.
    "pk-partial": TableKind("pk-partial", True, {"bucket": "2", "deletion-vectors.enabled": "true",
                                                 "merge-engine": "partial-update",
                                                 "file-index.bitmap.columns": "cat"}),
}


def partial_update(kind: TableKind) -> bool:
    return kind.options.get("merge-engine") == "partial-update"


def create(warehouse: str, kind: TableKind) -> None:
    from paimon_index.table.catalog import create_table

    create_table(warehouse, IDENTIFIER, SCHEMA, primary_keys=["id"] if kind.primary_key else [],
                 options=dict(kind.options))


def random_op(rng: random.Random, kind: TableKind, worker: int, counter: int,
              allowed: tuple[str, ...] | None = None) -> dict[str, Any]:
    """One random operation for ``kind`` (ids of appended rows are unique per worker and counter)."""
    if partial_update(kind):  # DELETE/UPDATE by predicate are not in its mix (NULL values)
        choices = ["upsert"] * 3 + ["dist_upsert"] * 3 + ["compact", "dist_compact", "expire"]
    elif kind.primary_key:
        choices = ["upsert"] * 3 + ["dist_upsert"] * 3 + ["compact", "dist_compact", "delete", "update",
                                                          "expire"]
    else:
        choices = ["append"] * 4 + ["delete", "delete", "update", "update", "overwrite", "rewrite", "compact",
                                    "dist_compact", "expire"]
    if allowed is not None:
        choices = [c for c in choices if c in allowed] or list(allowed)
    name = rng.choice(choices)
    if name == "append":
        base = (worker + 1) * 1_000_000 + counter * 1_000
        n = rng.randint(1, 30)
        return {"op": name,
                "rows": [[base + i, rng.choice(CATEGORIES), rng.randint(0, 100)] for i in range(n)]}
    if name == "dist_append":
        base = (worker + 1) * 1_000_000 + counter * 1_000
        return {"op": name, "tasks": rng.randint(1, 3),
                "rows": [[base + i, rng.choice(CATEGORIES), rng.randint(0, 100)]
                         for i in range(rng.randint(3, 30))]}
    if name == "overwrite":
        base = (worker + 1) * 1_000_000 + counter * 1_000
        return {"op": name, "rows": [[base + i, rng.choice(CATEGORIES), rng.randint(0, 100)]
                                     for i in range(rng.randint(1, 10))]}
    if name == "dist_overwrite":  # a primary-key table's: distinct keys, so no winner is ambiguous
        keys = rng.sample(range(KEY_SPACE), rng.randint(1, 25))
        op = {"op": name, "rows": [[k, rng.choice(CATEGORIES), rng.randint(0, 100)] for k in keys]}
        op.update(_task_layout(rng))
        return op
    if name in ("delete", "update"):
        op = {"op": name, "cat": rng.choice(CATEGORIES), "below": rng.randint(10, 90)}
        if name == "update":
            op["value"] = rng.randint(1000, 2000)
        return op
    if name in ("upsert", "dist_upsert"):
        n = rng.randint(1, 25)
        partial = partial_update(kind)
        rows = []
        for _ in range(n):
            key = rng.randrange(KEY_SPACE)
            kind_ = "-D" if rng.random() < 0.15 and not partial else "+I"
            cat: str | None = rng.choice(CATEGORIES)
            v: int | None = rng.randint(0, 100)
            if partial:  # a NULL keeps the old value
                cat = None if rng.random() < 0.3 else cat
                v = None if rng.random() < 0.3 else v
            rows.append([key, cat, v, kind_])
        op = {"op": name, "rows": rows, "partial": partial}
        if name == "dist_upsert":
            op.update(_task_layout(rng))
        return op
    if name in ("compact", "dist_compact"):
        op = {"op": name, "full": rng.random() < 0.5}
        if name == "dist_compact":
            op.update(_task_layout(rng))
        return op
    if name == "rewrite":
        return {"op": name, "bloom": rng.choice(["id", "id,v", "v"])}
    if name == "expire":
        return {"op": name, "retain_last": rng.randint(3, 6)}
    raise AssertionError(name)


def _task_layout(rng: random.Random) -> dict[str, int]:
    """How a simulated Spark job splits its work: ``tasks`` (the job's parallelism), ``splits``
    (input partitions of the rows) and ``seed`` (which task a hash shuffle sends each key to)."""
    return {"tasks": rng.randint(1, 3), "splits": rng.randint(1, 3), "seed": rng.randrange(1 << 30)}


def _where(op: Mapping[str, Any]) -> str:
    return f"cat = '{op['cat']}' AND v < {op['below']}"


def _rows(op: Mapping[str, Any], with_kind: bool = False) -> pa.Table:
    rows = op["rows"]
    data = {"id": pa.array([r[0] for r in rows], pa.int64()),
            "cat": pa.array([r[1] for r in rows], pa.string()),
            "v": pa.array([r[2] for r in rows], pa.int64())}
    if with_kind:
        data["_ROW_KIND"] = pa.array([r[3] for r in rows], pa.string())
    return pa.table(data)


def run(warehouse: str, op: Mapping[str, Any]) -> int | None:
    """Apply ``op`` through the public table API; the snapshot it committed (None: nothing)."""
    import paimon_index

    table = paimon_index.open_table(warehouse, IDENTIFIER)
    name = op["op"]
    if name == "append":
        return table.write(_rows(op)).snapshot_id
    if name == "overwrite":
        return table.write(_rows(op), mode="overwrite").snapshot_id
    if name == "delete":
        return table.delete(_where(op)).snapshot_id
    if name == "update":
        return table.update({"v": op["value"]}, _where(op)).snapshot_id
    if name == "upsert":
        return table.upsert(_rows(op, with_kind=True)).snapshot_id
    if name == "dist_upsert":
        if table.paimon_table.options.options.to_map().get("bucket") == "-1":
            return _dist_upsert_dynamic(warehouse, table.paimon_table, op)
        return _dist_upsert_fixed(warehouse, table.paimon_table, op)
    if name == "dist_append":
        _dist_append(warehouse, op)
        latest = paimon_index.open_table(warehouse, IDENTIFIER).paimon_table.snapshot_manager() \
            .get_latest_snapshot()
        return None if latest is None else int(latest.id)
    if name == "dist_overwrite":
        return _dist_overwrite_pk(warehouse, table.paimon_table, op)
    if name == "dist_compact":
        if table.is_primary_key_table:
            return _dist_compact_pk(warehouse, table.paimon_table, op)
        return _dist_compact_append(warehouse, table.paimon_table, op)
    if name == "compact":
        return table.compact(full=op["full"]).snapshot_id
    if name == "rewrite":
        # Another index set for the new files, then every old file brought in line with it.
        table.alter_options(set={"file-index.bloom-filter.columns": op["bloom"]})
        return paimon_index.open_table(warehouse, IDENTIFIER).rewrite_file_index().snapshot_id
    if name == "expire":
        table.expire_snapshots(retain_last=op["retain_last"])
        return None
    raise AssertionError(name)


# --------------------------------------------------------------------------------------------------
# the distributed paths, task by task
# --------------------------------------------------------------------------------------------------
def _task_finished() -> None:
    """A simulated task returned its result to the driver (a crash point)."""


def _tasks_finished() -> None:
    """Every task of the job finished; the driver commits next (a crash point)."""


def _shipped(value: Any) -> Any:
    """``value`` as the other side receives it: pickled (a task's payload, a task's result)."""
    return pickle.loads(pickle.dumps(value))


def _task_table(warehouse: str) -> Any:
    """The pypaimon table a task opens itself (``_tasks``: ``open_table(warehouse, table, ...)``)."""
    from paimon_index.table.catalog import open_table

    return open_table(warehouse, IDENTIFIER)


def _splits(rows: pa.Table, count: int) -> list[pa.Table]:
    """``rows`` as ``count`` input partitions, in order (a DataFrame's splits)."""
    size = -(-rows.num_rows // count) if rows.num_rows else 0
    return [rows.slice(i * size, size) for i in range(count)] if size else [rows.slice(0, 0)]


def _shuffled(rows: pa.Table, keys: list[tuple[Any, ...]], tasks: int, seed: int) -> list[pa.Table]:
    """``rows`` repartitioned by ``keys`` into ``tasks`` partitions (every row of a key in one, in
    the order they came; which partition a key goes to is a hash, here a seeded random one, so
    several keys may share a task and a task may get none)."""
    rng = random.Random(seed)
    target: dict[tuple[Any, ...], int] = {}
    for key in sorted(set(keys), key=repr):
        target[key] = rng.randrange(tasks)
    return [rows.take(pa.array([i for i, k in enumerate(keys) if target[k] == t], pa.int64()))
            for t in range(tasks)]


def _source_writer(warehouse: str, exclusive: bool) -> Any:
    """The writer ``jobs`` saves a DataFrame with (``.format("paimon_index").save(table)``)."""
    from paimon_index.spark.datasource import PaimonIndexWriter
    from paimon_index.spark.options import BUCKET_EXCLUSIVE, PATH, WAREHOUSE, parse_write_options

    options = {WAREHOUSE: warehouse, PATH: IDENTIFIER}
    if exclusive:
        options[BUCKET_EXCLUSIVE] = "true"
    return PaimonIndexWriter(parse_write_options(options))


def _spill(op: Mapping[str, Any], parts: list[Any]) -> None:
    """What the finished tasks returned, where a crash test finds it (see :func:`spark_abort`)."""
    path = op.get("spill")
    if path:
        with open(path + ".tmp", "wb") as out:
            pickle.dump(parts, out)
        import os

        os.replace(path + ".tmp", path)


def spark_abort(warehouse: str, op: Mapping[str, Any]) -> bool:
    """What Spark does when a task or the commit's Python worker of a source write died: the
    writer's ``abort`` with the messages of the tasks that finished. False: no task had finished."""
    import os

    path = op.get("spill")
    if not path or not os.path.exists(path):
        return False
    with open(path, "rb") as f:
        parts = pickle.load(f)
    _source_writer(warehouse, op["op"] == "dist_upsert").abort(parts)
    return True


def _dist_append(warehouse: str, op: Mapping[str, Any]) -> None:
    """``jobs.write`` (append) of an append table: tasks write their rows as files with their
    indexes (the source's writer), the driver commits them in one snapshot."""
    rows = _rows(op)
    writer = _source_writer(warehouse, exclusive=False)
    parts: list[Any] = []
    for split in _splits(rows, op["tasks"]):
        result = _shipped(writer).write(iter(split.to_batches()))
        parts.append(_shipped(result))
        _spill(op, parts)
        _task_finished()
    _tasks_finished()
    writer.commit(parts)


def _dist_upsert_fixed(warehouse: str, table: Any, op: Mapping[str, Any]) -> int | None:
    """``jobs.upsert`` of a fixed-bucket table: ``_tasks.with_bucket`` gives each row its bucket, a
    repartition by it gives every bucket to one task, each task is the source's writer with
    ``bucket-exclusive`` (``prepare_upsert``; ``prepare_merge`` with a merge engine), the driver
    commits what they prepared (``PaimonIndexWriter.commit``: ``commit_prepared``)."""
    from paimon_index.table import pk

    pk.folded_snapshot_id(table)  # the driver folds level-0 files first
    rows = _rows(op, with_kind=True)
    _, buckets = pk.bucket_of_rows(table, rows)  # what _tasks.with_bucket adds to each row
    writer = _source_writer(warehouse, exclusive=True)
    parts: list[Any] = []
    for task_rows in _shuffled(rows, [(b,) for b in buckets], op["tasks"], op["seed"]):
        task = _shipped(writer)
        # Spark hands a task its rows as Arrow batches (several when they came from several splits).
        batches = [b for part in _splits(task_rows, op["splits"]) for b in part.to_batches()]
        result = task.write(iter(batches))
        assert not result.messages and result.merged is None, \
            "a bucket-exclusive task left its buckets' lookup to the driver"
        assert result.prepared is not None or not task_rows.num_rows, "a task with rows prepared nothing"
        parts.append(_shipped(result))
        _spill(op, parts)
        _task_finished()
    _tasks_finished()
    # PaimonIndexWriter.commit's branch for prepared tasks (it does not return the snapshot id;
    # with none prepared -- no rows -- its commit_upsert of nothing commits nothing).
    prepared = [p.prepared for p in parts if p.prepared is not None]
    return pk.commit_prepared(table, prepared) if prepared else None


def _dist_overwrite_pk(warehouse: str, table: Any, op: Mapping[str, Any]) -> int | None:
    """``jobs.overwrite`` of a primary-key table: the driver pins the latest snapshot, the rows go to
    tasks by Paimon bucket (a dynamic-bucket table's to one task), each task writes its buckets
    (``_tasks.overwrite_job``: ``prepare_overwrite``), the driver commits their messages as one
    overwrite exactly on the pinned snapshot (``commit_overwrite``)."""
    from paimon_index.table import pk
    from paimon_index.table.paimon import bucket_number, latest_snapshot
    from paimon_index.table.pk.overwrite import commit_overwrite, prepare_overwrite

    before = latest_snapshot(table)
    rows = _rows(op)
    if bucket_number(table) > 0:
        _, buckets = pk.bucket_of_rows(table, rows)
        tasks = _shuffled(rows, [(b,) for b in buckets], op["tasks"], op["seed"])
    else:
        tasks = [rows]
    messages: list[Any] = []
    for task_rows in tasks:
        if task_rows.num_rows:
            messages += _shipped(prepare_overwrite(_task_table(warehouse), task_rows))
            _task_finished()
    _tasks_finished()
    return commit_overwrite(table, messages, planned=None if before is None else int(before.id))


def _dist_upsert_dynamic(warehouse: str, table: Any, op: Mapping[str, Any]) -> int | None:
    """``jobs.upsert`` of a dynamic-bucket table (``_tasks.dynamic_upsert_job``): route each input
    split, one task per assigner partition assigns, one task per bucket partition prepares; the
    driver commits on the snapshot it planned."""
    from paimon_index.table import pk
    from paimon_index.table.pk import dynamic

    planned = pk.folded_snapshot_id(table)  # level-0 files folded first, as jobs.upsert's driver does
    tasks = op["tasks"]
    assigners = dynamic.assigner_count(table, tasks)
    rows = _rows(op, with_kind=True)
    routed = [_shipped(dynamic.route(_task_table(warehouse), split, assigners))
              for split in _splits(rows, op["splits"]) if split.num_rows]
    stage = pa.concat_tables(routed)
    assigned = []
    by_assigner = [(a,) for a in stage[dynamic.ASSIGNER_COLUMN].to_pylist()]
    for part in _shuffled(stage, by_assigner, assigners, op["seed"]):
        if part.num_rows:
            assigned.append(_shipped(dynamic.assign(_task_table(warehouse), planned, part, assigners)))
    stage = pa.concat_tables(assigned)
    by_bucket = [(b,) for b in stage[dynamic.BUCKET_COLUMN].to_pylist()]
    prepared = []
    for part in _shuffled(stage, by_bucket, tasks, op["seed"] + 1):
        if part.num_rows:
            result = dynamic.prepare(_task_table(warehouse), planned, part)
            if result is not None:
                prepared.append(_shipped(result))
                _task_finished()
    _tasks_finished()
    if not prepared:
        return None
    return pk.commit_prepared(table, prepared)


def _dist_compact_pk(warehouse: str, table: Any, op: Mapping[str, Any]) -> int | None:
    """``jobs.compact`` of a primary-key table: the driver plans (``pk.compaction.compact``), the
    buckets' work is packed by bytes as ``_tasks.pk_compact_job`` packs it, each task runs
    ``compact_buckets`` on its group, the driver commits once."""
    from paimon_index.spark._tasks import TASKS_PER_CORE, balanced_groups
    from paimon_index.table.fileio import TableIO
    from paimon_index.table.pk.compaction import BucketCompacted, BucketWork, compact, compact_buckets

    def run(works: list[BucketWork]) -> list[BucketCompacted]:
        slots = min(len(works), op["tasks"] * TASKS_PER_CORE)  # _tasks.packed
        groups = [[works[i] for i in g] for g in balanced_groups([w.weight for w in works], slots)]
        done: list[BucketCompacted] = []
        for group in groups:
            opened = _task_table(warehouse)
            done += [_shipped(d) for d in compact_buckets(opened, _shipped(group), TableIO.of(opened))]
            _task_finished()
        _tasks_finished()
        return done

    return compact(table, full=op["full"], run=run)


def _dist_compact_append(warehouse: str, table: Any, op: Mapping[str, Any]) -> int | None:
    """``jobs._compact_append``: the pick on the driver, each packed group of compaction groups
    rewritten by a task (``rewrite_group``), one ``commit_compaction``."""
    from paimon_index.spark._tasks import TASKS_PER_CORE, balanced_groups
    from paimon_index.table.append_compaction import commit_compaction, plan_compaction, rewrite_group

    plan = plan_compaction(table, full=op["full"])
    if not plan.groups or plan.schema is None:
        return None
    items = list(enumerate(plan.groups))
    slots = min(len(items), op["tasks"] * TASKS_PER_CORE)
    rewritten: list[list[Any]] = [[] for _ in plan.groups]
    for group in balanced_groups([g.bytes for g in plan.groups], slots):
        opened = _task_table(warehouse)
        for index, compact_group in _shipped([items[i] for i in group]):
            rewritten[index] = _shipped(rewrite_group(opened, compact_group, _shipped(plan.schema)))
        _task_finished()
    _tasks_finished()
    return commit_compaction(table, plan, rewritten)


Model = dict[int, tuple[str | None, int | None]]


def apply_to_model(model: Model, op: Mapping[str, Any]) -> Model:
    """The rows after ``op``, as SQL defines it (``model`` is not changed)."""
    name = op["op"]
    out = dict(model)
    if name in ("append", "dist_append"):
        for key, cat, v in op["rows"]:
            out[key] = (cat, v)
    elif name in ("overwrite", "dist_overwrite"):  # unpartitioned: the whole table is replaced
        out = {key: (cat, v) for key, cat, v in op["rows"]}
    elif name == "delete":
        out = {k: r for k, r in out.items() if not (r[0] == op["cat"] and r[1] < op["below"])}
    elif name == "update":
        out = {k: ((r[0], op["value"]) if (r[0] == op["cat"] and r[1] < op["below"]) else r)
               for k, r in out.items()}
    elif name in ("upsert", "dist_upsert"):
        for key, cat, v, kind in op["rows"]:  # in order: the last row of a key wins
            if kind == "-D":
                out.pop(key, None)
            elif op.get("partial") and key in out:  # partial-update: a NULL keeps the old value
                old = out[key]
                out[key] = (old[0] if cat is None else cat, old[1] if v is None else v)
            else:
                out[key] = (cat, v)
    return out


def read_rows(warehouse: str, snapshot_id: int | None = None) -> Model:
    """The table's rows (at a snapshot) through the project's public read."""
    import paimon_index

    return _as_model(paimon_index.open_table(warehouse, IDENTIFIER).read(snapshot_id=snapshot_id))


def read_rows_pypaimon(warehouse: str, snapshot_id: int | None = None) -> Model:
    """The same through pypaimon's own reader (an implementation we did not write)."""
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": warehouse}).get_table(IDENTIFIER)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder().with_projection(["id", "cat", "v"])
    return _as_model(builder.new_read().to_arrow(builder.new_scan().plan().splits()))


def _as_model(rows: pa.Table | None) -> Model:
    if rows is None or rows.num_rows == 0:
        return {}
    ids = rows.column("id").to_pylist()
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})[:10]
        raise AssertionError(f"duplicate ids in the table: {dupes}")
    return dict(zip(ids, zip(rows.column("cat").to_pylist(), rows.column("v").to_pylist(), strict=True),
                    strict=True))
