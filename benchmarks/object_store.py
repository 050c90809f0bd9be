"""Requests and bytes per query shape on an S3 warehouse against the same table on a local one.

    python benchmarks/object_store.py [--rows N] [--files F] [--repeat R]

One table (Bloom filter on ``id``, range bitmap on ``score``, deletion vectors on) is written twice
from the same rows: to a local warehouse and to ``s3://`` on a moto S3 server started on 127.0.0.1
for the run (the test suite's server, every request counted as it arrives). Then, per query shape,
interleaved local / S3, best time of ``--repeat``:

    point lookup    read("id = x")                      the Bloom filters leave one file
    range           read("score >= a AND score < b")    the range bitmaps select ~1% of the rows
    full count      read(columns=["id"]) row count      every file, one column
    DELETE          delete("id = x")                    plan, find the row, one DV index file, commit

Reported per shape: rows returned / deleted; on both warehouses the reads the FileIO seam counted
(``ScanReport``: index, DV and data requests plus file opens) and the bytes it read; on S3 also what
the server saw (requests by method, bytes sent and received — pypaimon's metadata reads included);
the times and the ratio S3 / local. moto is a Python server on the same 2 cores, so S3 times are
upper bounds; the request counts are what a real store would be sent.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import paimon_index
from objectstore.server import S3Server

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("status", pa.string()),
                    ("score", pa.int32())])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "id",
           "file-index.range-bitmap.columns": "score"}
SEAM_REQUESTS = ("index_requests", "dv_requests", "data_requests", "files_opened")


def rows(n: int, k: int, files: int) -> pa.Table:
    ids = np.arange(k, n, files, dtype=np.int64)  # interleaved: statistics rule no file out
    rng = np.random.default_rng(k)
    return pa.table({"id": ids, "status": pa.array(np.array(["a", "b", "c"])[ids % 3]),
                     "score": pa.array(rng.integers(0, 10_000, len(ids)).astype(np.int32))}, schema=SCHEMA)


def build(warehouse: str, options: dict[str, str] | None, n: int, files: int) -> paimon_index.Table:
    table = paimon_index.create_table(warehouse, "db.t", SCHEMA, options=OPTIONS, catalog_options=options)
    for k in range(files):
        table.write(rows(n, k, files))
    return paimon_index.open_table(warehouse, "db.t", catalog_options=options)


def shapes(n: int) -> list[tuple[str, Callable[[paimon_index.Table, int], int]]]:
    def point(t: paimon_index.Table, i: int) -> int:
        return t.read(f"id = {(7919 * (i + 1)) % n}").num_rows

    def ranged(t: paimon_index.Table, i: int) -> int:
        return t.read(f"score >= {100 * i} AND score < {100 * i + 100}").num_rows

    def count(t: paimon_index.Table, i: int) -> int:
        return t.read(columns=["id"]).num_rows

    def delete(t: paimon_index.Table, i: int) -> int:
        return t.delete(f"id = {(104729 * (i + 1)) % n}").rows_affected

    return [("point lookup", point), ("range", ranged), ("full count", count), ("DELETE", delete)]


def measure(table: paimon_index.Table, run: Callable[[paimon_index.Table, int], int], i: int,
            server: S3Server | None, bucket: str | None) -> dict[str, Any]:
    mark = server.log.mark() if server is not None else 0
    before = table.last_scan_report
    start = time.perf_counter()
    result = run(table, i)
    seconds = time.perf_counter() - start
    report = table.last_scan_report
    scanned = report is not before  # a DELETE plans its own scan and reports none
    out: dict[str, Any] = {"rows": result, "s": seconds,
                           "seam": sum(getattr(report, f, 0) for f in SEAM_REQUESTS) if scanned else "-",
                           "seam_bytes": report.data_bytes_read + report.index_bytes_read if scanned else "-"}
    if server is not None:
        calls = server.log.since(mark, bucket)
        methods: dict[str, int] = {}
        for r in calls:
            kind = "LIST" if r.method == "GET" and "list-type" in r.query else r.method
            methods[kind] = methods.get(kind, 0) + 1
        out.update(requests=len(calls), methods=methods, bytes_out=sum(r.bytes_out for r in calls),
                   bytes_in=sum(r.bytes_in for r in calls))
    return out


def _n(value: int | str) -> str:
    return f"{value:,}" if isinstance(value, int) else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    server = S3Server.start()
    try:
        bucket = server.new_bucket("bench")
        with tempfile.TemporaryDirectory() as tmp:
            local = build(str(Path(tmp) / "wh"), None, args.rows, args.files)
            s3 = build(f"s3://{bucket}/wh", server.catalog_options(), args.rows, args.files)
            print(f"object store: {args.rows:,} rows in {args.files} files, best of {args.repeat}; "
                  f"local warehouse vs s3:// on moto at {server.endpoint}")
            print(f"{'shape':<13} {'rows':>6} | {'local s':>8} {'seam req':>8} {'seam bytes':>11} | "
                  f"{'s3 s':>7} {'seam req':>8} {'server req':>10} {'GET/HEAD/LIST/PUT/POST/DEL':>26} "
                  f"{'bytes out':>10} {'bytes in':>9} | {'s3/local':>8}")
            for name, run in shapes(args.rows):
                got_local, got_s3 = [], []
                for i in range(args.repeat):
                    got_local.append(measure(local, run, i, None, None))
                    got_s3.append(measure(s3, run, i, server, bucket))
                    assert got_local[-1]["rows"] == got_s3[-1]["rows"], name
                lo = min(got_local, key=lambda m: m["s"])
                re = min(got_s3, key=lambda m: m["s"])
                methods = "/".join(str(re["methods"].get(k, 0)) for k in ("GET", "HEAD", "LIST", "PUT",
                                                                         "POST", "DELETE"))
                print(f"{name:<13} {lo['rows']:>6} | {lo['s']:>8.3f} {lo['seam']:>8} "
                      f"{_n(lo['seam_bytes']):>11} | "
                      f"{re['s']:>7.3f} {re['seam']:>8} {re['requests']:>10} {methods:>26} "
                      f"{re['bytes_out']:>10,} {re['bytes_in']:>9,} | {re['s'] / lo['s']:>8.1f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
