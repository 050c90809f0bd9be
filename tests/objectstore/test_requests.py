"""Requests per query on S3, counted by the server: an index that rules a file out means no request
for that file's data, and a query's request count stays bounded (the bounds are the measured counts
plus a small margin: a regression that adds a request per file or re-reads metadata fails)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import paimon_index
from objectstore.conftest import S3Warehouse
from objectstore.server import S3Server

FILES = 4
ROWS = 4000
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "id",
           "file-index.bitmap.columns": "status", "file-index.in-manifest-threshold": "1"}
#: Planning a read (snapshot, manifest lists, manifests, index manifest) measured 35 requests for 4
#: single-file snapshots and a DV commit; per planned file at most a HEAD and 2 GETs of its
#: ``.index`` file; per file read a HEAD and 3 GETs (footer, pre-buffered chunks, DV).
PLANNING_REQUESTS = 40
INDEX_REQUESTS_PER_FILE = 3
DATA_REQUESTS_PER_FILE = 4


@pytest.fixture(scope="module")
def s3_once(s3_server: S3Server) -> S3Warehouse:
    return S3Warehouse(s3_server, s3_server.new_bucket())


@pytest.fixture(scope="module")
def table(s3_once: S3Warehouse) -> paimon_index.Table:
    s3 = s3_once
    schema = pa.schema([("id", pa.int64()), ("status", pa.string())])
    t = paimon_index.create_table(s3.warehouse, "db.t", schema, options=OPTIONS,
                                  catalog_options=s3.catalog_options)
    for k in range(FILES):  # interleaved ids: min/max statistics rule nothing out, the indexes must
        ids = list(range(k, ROWS, FILES))
        t.write(pa.table({"id": ids, "status": ["abc"[i % 3] for i in ids]}))
    t.delete("id = 8")
    return paimon_index.open_table(s3.warehouse, "db.t", catalog_options=s3.catalog_options)


def data_files(calls) -> set[str]:
    return {r.key for r in calls.items if r.method == "GET" and r.key.endswith(".parquet")}


@pytest.mark.parametrize(("where", "rows", "files_read"), [
    ("id = 1501", 1, 1),              # point lookup: the Bloom filters leave one file
    ("status = 'a'", 1334, FILES),    # bitmap: every file holds some
    (None, ROWS - 1, FILES),          # full scan, one row deleted by a vector
])
def test_requests_per_query_are_bounded(s3_once: S3Warehouse, table: paimon_index.Table, where: str | None,
                                        rows: int, files_read: int) -> None:
    s3 = s3_once
    with s3.server.log.counting(s3.bucket) as calls:
        result = table.read(where)
    assert result.num_rows == rows
    assert len(data_files(calls)) == files_read, sorted(data_files(calls))
    bound = PLANNING_REQUESTS + INDEX_REQUESTS_PER_FILE * FILES + DATA_REQUESTS_PER_FILE * files_read
    assert calls.requests <= bound, dict(calls.by_method)
    assert not calls.by_method.get("PUT") and not calls.by_method.get("DELETE")  # a read writes nothing
