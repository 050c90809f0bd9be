"""The whole Python-API pipeline on ``s3://`` (a real S3 server on 127.0.0.1) against the same
pipeline on a local warehouse: equal answers after every step, every file a snapshot references is
in the bucket, and nothing lands on the local disk.

Steps: create (append table with DV and file indexes, primary-key table), write with embedded and
``.index`` containers, filtered reads, DELETE, UPDATE, overwrite, rewrite_file_index, upsert (with
deletes by key), compact, expire_snapshots, remove_orphan_files. The local run is the reference; both
runs use the same calls, so a step that silently wrote a DV file to the local disk (the bug this
suite came with) or listed nothing on S3 shows up as a difference or a missing key.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_index
from objectstore.conftest import S3Warehouse
from objectstore.files import referenced_files

ORDERS = pa.schema([("id", pa.int64()), ("status", pa.string()), ("score", pa.float64())])
CUSTOMERS = pa.schema([pa.field("cid", pa.int64(), nullable=False), ("name", pa.string()),
                       ("tier", pa.int32())])
#: Containers up to 400 bytes are embedded in the manifest, larger ones are ``.index`` files: the
#: small first write gets embedded ones, the second (more distinct keys) ``.index`` files.
ORDER_OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true",
                 "file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "status",
                 "file-index.in-manifest-threshold": "400"}
CUSTOMER_OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true"}
QUERIES = ["id IN (7, 1500, 2999)", "status <> 'a' AND score >= 50", "score IS NULL OR id >= 2990"]


def orders(first: int, n: int) -> pa.Table:
    ids = list(range(first, first + n))
    return pa.table({"id": ids, "status": ["abcd"[i % 4] for i in ids],
                     "score": [None if i % 10 == 0 else float(i % 100) for i in ids]}, schema=ORDERS)


def customers(ids: list[int], tier: int, kind: str | None = None) -> pa.Table:
    data = pa.table({"cid": ids, "name": [f"c{i}" for i in ids], "tier": [tier] * len(ids)}, schema=CUSTOMERS)
    if kind is not None:
        data = data.append_column("_ROW_KIND", pa.array([kind] * len(ids)))
    return data


def answers(t: paimon_index.Table, queries: bool = True) -> dict[str, list[tuple]]:
    """Every query's rows (or only all rows), sorted: what both warehouses must agree on."""
    out = {}
    for where in [None, *([] if t.is_primary_key_table or not queries else QUERIES)]:
        rows = t.read(where)
        key = rows.column_names[0]
        out[str(where)] = sorted(zip(*(rows.column(c).to_pylist() for c in rows.column_names), strict=True),
                                 key=lambda r: r[0] if r[0] is not None else -1)
        assert len({r[0] for r in out[str(where)]}) == len(out[str(where)]), f"{key} twice"
        if queries and not t.is_primary_key_table:  # the index-only answers read through the store too
            out[f"count {where}"] = [(t.count(where),)]
            out[f"min_max score {where}"] = [t.min_max("score", where)]
    return out


Step = tuple[str, Callable[[paimon_index.Table, paimon_index.Table], Any]]
#: After these steps every query is compared (after the others: all rows), to keep the run short.
QUERY_CHECKPOINTS = {"write .index", "update", "rewrite_file_index"}

STEPS: list[Step] = [
    ("write embedded", lambda o, c: o.write(orders(0, 40)).rows_affected),
    ("write .index", lambda o, c: o.write(orders(1000, 2000)).rows_affected),
    ("delete", lambda o, c: o.delete("status = 'c' AND id < 1500").rows_affected),
    ("update", lambda o, c: o.update({"score": "score + 1000"}, "id < 20 OR id = 2500").rows_affected),
    ("delete again", lambda o, c: o.delete("id >= 1000 AND id < 1003").rows_affected),
    ("rewrite_file_index", lambda o, c: o.alter_options(
        set={"file-index.bitmap.columns": "status,id"}).rewrite_file_index().files_added),
    ("upsert", lambda o, c: c.upsert(customers(list(range(100)), 1)).rows_affected),
    ("upsert changes", lambda o, c: c.upsert(customers(list(range(50, 150)), 2)).rows_affected),
    ("upsert deletes", lambda o, c: c.upsert(customers([1, 2, 60, 149], 0, "-D")).rows_affected),
    ("compact", lambda o, c: c.compact(full=True).snapshot_id is not None),
    ("overwrite", lambda o, c: o.write(orders(5000, 300), mode="overwrite").rows_affected),
    ("append after overwrite", lambda o, c: o.write(orders(6000, 50)).rows_affected),
    ("expire", lambda o, c: (len(o.expire_snapshots(retain_last=2).expired_snapshots),
                             len(c.expire_snapshots(retain_last=1).expired_snapshots))),
]


def make_tables(warehouse: str, options: dict[str, str] | None
                ) -> tuple[paimon_index.Table, paimon_index.Table]:
    o = paimon_index.create_table(warehouse, "db.orders", ORDERS, options=ORDER_OPTIONS,
                                  catalog_options=options)
    c = paimon_index.create_table(warehouse, "db.customers", CUSTOMERS, primary_keys=["cid"],
                                  options=CUSTOMER_OPTIONS, catalog_options=options)
    return o, c


def assert_referenced_files_in_bucket(s3: S3Warehouse, *tables: paimon_index.Table,
                                      latest_only: bool = False) -> None:
    keys = set(s3.objects())
    for t in tables:
        referenced = referenced_files(t.paimon_table, latest_only)
        prefix = f"s3://{s3.bucket}/"
        assert all(p.startswith(prefix) for p in referenced), sorted(referenced)[:3]
        missing = sorted(p for p in referenced if p[len(prefix):] not in keys)
        assert not missing, f"{t.identifier}: snapshots name files the bucket does not hold: {missing}"


@pytest.fixture()
def empty_local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """cwd and TMPDIR pointed at empty directories (a write to 'the local disk' lands in one)."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return [cwd, tmp]


@pytest.mark.slow  # CI's budget (48 s in two workers); S3 commits, reads and requests stay in CI
def test_pipeline_on_s3_equals_local(s3: S3Warehouse, tmp_path: Path, empty_local_dirs: list[Path]) -> None:
    local = make_tables(str(tmp_path / "local-wh"), None)
    remote = make_tables(s3.warehouse, s3.catalog_options)
    for name, step in STEPS:
        expected, got = step(*local), step(*remote)
        assert got == expected, f"{name}: {got} != {expected}"
        for lt, rt in zip(local, remote, strict=True):
            queries = name in QUERY_CHECKPOINTS
            assert answers(rt, queries) == answers(lt, queries), f"after {name}: {rt.identifier} differs"
        # Older snapshots' files were checked at their step; only expiry removes any (checked below).
        assert_referenced_files_in_bucket(s3, *remote, latest_only=True)
    assert_referenced_files_in_bucket(s3, *remote)
    assert remote[0].read().num_rows == 350

    # An orphan: a file in the table's directories no snapshot names (a crashed writer's).
    orphan_key = "wh/db.db/orders.db/x"  # outside the table: never touched
    orphan = "wh/db.db/orders/bucket-0/data-orphan-0.parquet"
    client = s3.server.client()
    client.put_object(Bucket=s3.bucket, Key=orphan, Body=b"PAR1")
    client.put_object(Bucket=s3.bucket, Key=orphan_key, Body=b"x")
    time.sleep(1.1)  # S3 modification times have one-second resolution
    cutoff = time.time()
    removed = remote[0].remove_orphan_files(older_than=cutoff).deleted_files
    assert f"s3://{s3.bucket}/{orphan}" in removed
    local_removed = local[0].remove_orphan_files(older_than=cutoff).deleted_files
    assert len(removed) == len(local_removed) + 1  # the planted one; the rest are the same steps' leftovers
    assert orphan not in s3.objects() and orphan_key in s3.objects()
    assert answers(remote[0]) == answers(local[0])
    assert_referenced_files_in_bucket(s3, *remote)

    for directory in empty_local_dirs:
        assert not any(directory.rglob("*")), f"written to the local disk: {list(directory.rglob('*'))}"
    assert not [p for p in Path(tmp_path).iterdir() if p.name not in ("local-wh", "cwd", "tmp")]
    assert os.listdir(tmp_path / "cwd") == []
