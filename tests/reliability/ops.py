"""The operations the reliability suite runs, and the model each one is checked against.

Every operation is a plain dict (picklable, loggable as JSON) that :func:`run` applies to the table
through the project's public verbs and :func:`apply_to_model` applies to a model of the table's
rows (a dict keyed by ``id``). An operation that reads the table (delete, update, overwrite, upsert,
compact -- of append tables too, ``table/append_compaction.py``) must land exactly on the snapshot
it planned, so applying the successful operations in the order of the snapshots they produced
reproduces every snapshot's rows.

Tables (``KINDS``): an append table with deletion vectors and file indexes (unaware bucket), the
same with fixed buckets, and primary-key tables in deletion-vectors mode (fixed and dynamic bucket).
Columns: ``id BIGINT, cat STRING, v BIGINT``; primary key ``id`` for the primary-key kinds.
"""

from __future__ import annotations

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
}


def create(warehouse: str, kind: TableKind) -> None:
    from paimon_index.table.catalog import create_table

    create_table(warehouse, IDENTIFIER, SCHEMA, primary_keys=["id"] if kind.primary_key else [],
                 options=dict(kind.options))


def random_op(rng: random.Random, kind: TableKind, worker: int, counter: int,
              allowed: tuple[str, ...] | None = None) -> dict[str, Any]:
    """One random operation for ``kind`` (ids of appended rows are unique per worker and counter)."""
    choices = (["upsert"] * 5 + ["compact", "delete", "update", "expire"]) if kind.primary_key else \
        (["append"] * 4 + ["delete", "delete", "update", "update", "overwrite", "rewrite", "compact",
                           "expire"])
    if allowed is not None:
        choices = [c for c in choices if c in allowed] or list(allowed)
    name = rng.choice(choices)
    if name == "append":
        base = (worker + 1) * 1_000_000 + counter * 1_000
        n = rng.randint(1, 30)
        return {"op": name,
                "rows": [[base + i, rng.choice(CATEGORIES), rng.randint(0, 100)] for i in range(n)]}
    if name == "overwrite":
        base = (worker + 1) * 1_000_000 + counter * 1_000
        return {"op": name, "rows": [[base + i, rng.choice(CATEGORIES), rng.randint(0, 100)]
                                     for i in range(rng.randint(1, 10))]}
    if name in ("delete", "update"):
        op = {"op": name, "cat": rng.choice(CATEGORIES), "below": rng.randint(10, 90)}
        if name == "update":
            op["value"] = rng.randint(1000, 2000)
        return op
    if name == "upsert":
        n = rng.randint(1, 25)
        rows = []
        for _ in range(n):
            key = rng.randrange(KEY_SPACE)
            kind_ = "-D" if rng.random() < 0.15 else "+I"
            rows.append([key, rng.choice(CATEGORIES), rng.randint(0, 100), kind_])
        return {"op": name, "rows": rows}
    if name == "compact":
        return {"op": name, "full": rng.random() < 0.5}
    if name == "rewrite":
        return {"op": name, "bloom": rng.choice(["id", "id,v", "v"])}
    if name == "expire":
        return {"op": name, "retain_last": rng.randint(3, 6)}
    raise AssertionError(name)


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


Model = dict[int, tuple[str, int]]


def apply_to_model(model: Model, op: Mapping[str, Any]) -> Model:
    """The rows after ``op``, as SQL defines it (``model`` is not changed)."""
    name = op["op"]
    out = dict(model)
    if name == "append":
        for key, cat, v in op["rows"]:
            out[key] = (cat, v)
    elif name == "overwrite":  # unpartitioned: the whole table is replaced
        out = {key: (cat, v) for key, cat, v in op["rows"]}
    elif name == "delete":
        out = {k: r for k, r in out.items() if not (r[0] == op["cat"] and r[1] < op["below"])}
    elif name == "update":
        out = {k: ((r[0], op["value"]) if (r[0] == op["cat"] and r[1] < op["below"]) else r)
               for k, r in out.items()}
    elif name == "upsert":
        for key, cat, v, kind in op["rows"]:  # in order: the last row of a key wins
            if kind == "-D":
                out.pop(key, None)
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
