"""Row-level changes of an append table without deletion vectors (copy-on-write), through
``paimon.sql`` and through Apache Paimon's own Spark connector (``paimon-sql.sh``), in one run.

Each side loads the same table on a warehouse of its own (``--rows`` rows in ``--files`` INSERTs,
so that many data files; ``bucket = -1``, no deletion vectors), then runs the same statements in
order: a DELETE touching every file, an UPDATE touching every file, a DELETE of a narrow range,
and a read of the result. Printed: seconds per statement on each side (the connector's as its
``paimon-sql.sh`` times them, in its own JVM, after the load statements warmed it), the ratio, and
whether both answered the same (the final read's rows). One run each: a single measurement, not a
median.

    python benchmarks/copy_on_write.py [--rows 2000000] [--files 4]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import paimonsql  # noqa: E402  (tests/: runs paimon-sql.sh)

STATEMENTS = [
    "DELETE FROM db.t WHERE id % 100 = 0",
    "UPDATE db.t SET v = -v WHERE id % 1000 = 1",
    "DELETE FROM db.t WHERE id BETWEEN 100 AND 200",
    "SELECT count(*), sum(v) FROM db.t",
]


def load(rows: int, files: int) -> list[str]:
    """The statements that make the table: one INSERT per data file."""
    per = -(-rows // files)
    create = "CREATE TABLE db.t (id BIGINT, s STRING, v DOUBLE) TBLPROPERTIES ('bucket' = '-1')"
    return ["CREATE DATABASE db", create] + [
        f"INSERT INTO db.t SELECT id, concat('s', id % 1000), id * 0.5 "
        f"FROM range({first}, {min(first + per, rows)})" for first in range(0, rows, per)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=4)
    args = ap.parse_args()
    from paimon_index.spark import attach
    from paimon_index.spark.session import local_session

    setup = load(args.rows, args.files)
    root = Path(tempfile.mkdtemp(prefix="cow-bench-"))
    theirs = paimonsql.run(root / "theirs", setup + STATEMENTS)[len(setup):]
    paimon = attach(local_session(), warehouse=str(root / "ours"))
    for text in setup:
        paimon.sql(text)
    print(f"append table without deletion vectors: {args.rows:,} rows in {args.files} files; seconds")
    print(f"{'statement':50s} {'ours':>8s} {'connector':>10s} {'ours/conn':>10s} {'same':>5s}")
    print("-" * 87)
    same_all = True
    for text, their in zip(STATEMENTS, theirs, strict=True):
        start = time.perf_counter()
        rows = [list(r) for r in paimon.sql(text).collect()]
        ours = time.perf_counter() - start
        same = their.get("ok", False) and rows == their.get("rows")
        same_all &= bool(same)
        conn = float(their.get("seconds", float("nan")))
        print(f"{text[:50]:50s} {ours:8.2f} {conn:10.2f} {ours / conn:9.2f}x {'yes' if same else 'NO':>5s}")
    return 0 if same_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
