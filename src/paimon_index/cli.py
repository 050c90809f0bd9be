"""The ``paimon-index`` command line. JSON on stdout; errors on stderr with exit status 2.

    paimon-index file-index build DATA.parquet OUT.index -o KEY=VALUE ... [--schema "c INT, ..."]
    paimon-index file-index inspect OUT.index [--schema "c INT, ..."]
    paimon-index file-index eval OUT.index --schema "c INT, s STRING" --where "c = 5 AND s <> 'x'"
    paimon-index file-index topn OUT.index --schema "score INT" --order-by "score DESC" --limit 10
    paimon-index dv inspect FILE [--positions]
    paimon-index dv read FILE --offset O --length L
    paimon-index demo [--warehouse DIR] [--rows N] [--no-spark]

``eval`` and ``topn`` print ``{"result": "REMAIN"}``, ``{"result": "SKIP"}`` (no row of the file can
match; an empty row bitmap is reported this way too) or ``{"result": "ROWS", "rows": [...]}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paimon_index.errors import InvalidOptionError, PaimonIndexError

__all__ = ["main"]

EXIT_ERROR = 2


def _result_json(result: Any) -> dict[str, Any]:
    from paimon_index.fileindex.result import Rows

    if isinstance(result, Rows) and result.remain:
        return {"result": "ROWS", "rows": list(result.bitmap)}
    return {"result": "REMAIN" if result.remain else "SKIP"}


def _parse_kv(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidOptionError(f"option {pair!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _schema(text: str | None) -> dict[str, Any]:
    from paimon_index.types import parse_schema

    return parse_schema(text) if text else {}


def cmd_build(args: argparse.Namespace) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from paimon_index.fileindex.builder import build_file_index
    from paimon_index.fileindex.format import ContainerReader
    from paimon_index.fileindex.options import FileIndexOptions

    options = FileIndexOptions.from_table_options(_parse_kv(args.option))
    if options.empty:
        raise InvalidOptionError("no index requested: pass -o file-index.<type>.columns=<columns>")
    table = pq.read_table(args.data)
    data = build_file_index(table, options, _schema(args.schema))
    assert data is not None
    Path(args.out).write_bytes(data)
    with ContainerReader(data, args.out) as reader:
        indexes = [{"column": e.column, "type": e.index_type, "bytes": e.length} for e in reader.entries]
    return {"output": args.out, "rows": table.num_rows, "bytes": len(data),
            "embedded_in_manifest": len(data) <= options.in_manifest_threshold, "indexes": indexes}


def cmd_inspect(args: argparse.Namespace) -> dict[str, Any]:
    from paimon_index.fileindex.evaluate import FileIndexEvaluator
    from paimon_index.fileindex.format import ContainerReader

    schema = _schema(args.schema)
    with ContainerReader(args.index) as reader:
        evaluator = FileIndexEvaluator(reader, schema)
        indexes = []
        for e in reader.entries:
            item: dict[str, Any] = {"column": e.column, "type": e.index_type, "start": e.start,
                                    "length": e.length, "empty": e.empty}
            index_reader = evaluator.reader(e)
            if index_reader is not None:
                item["summary"] = index_reader.describe()
            elif not e.empty and e.column not in schema:
                item["summary"] = "pass --schema with this column's type for a summary"
            indexes.append(item)
        return {"file": args.index, "bytes": reader.source.size, "head_length": reader.head_length,
                "columns": reader.columns, "indexes": indexes}


def _open(args: argparse.Namespace) -> tuple[Any, Any]:
    from paimon_index.fileindex.evaluate import FileIndexEvaluator
    from paimon_index.fileindex.format import ContainerReader

    schema = _schema(args.schema)
    reader = ContainerReader(args.index)
    return reader, FileIndexEvaluator(reader, schema)


def _where(evaluator: Any, text: str | None) -> Any:
    from paimon_index.fileindex.result import REMAIN
    from paimon_index.sql import bind_predicate

    return evaluator.evaluate(bind_predicate(text, evaluator.schema)) if text else REMAIN


def cmd_eval(args: argparse.Namespace) -> dict[str, Any]:
    reader, evaluator = _open(args)
    with reader:
        return _result_json(_where(evaluator, args.where))


def cmd_topn(args: argparse.Namespace) -> dict[str, Any]:
    from paimon_index.fileindex.base import TopN
    from paimon_index.sql import parse_order_by

    orders = parse_order_by(args.order_by)
    if args.limit < 0:
        raise InvalidOptionError(f"--limit must be >= 0, got {args.limit}")
    reader, evaluator = _open(args)
    with reader:
        for order in orders:
            if order.column not in evaluator.schema:
                raise InvalidOptionError(f"ORDER BY column {order.column!r} is not in --schema")
        topn = TopN(tuple(orders), args.limit, strict=len(orders) == 1)
        return _result_json(evaluator.evaluate_topn(topn, _where(evaluator, args.where)))


def _vector_json(stored_offset: int, length: int, vector: Any, positions: bool) -> dict[str, Any]:
    from paimon_index.deletionvectors.vector import Bitmap64DeletionVector

    out: dict[str, Any] = {"offset": stored_offset, "length": length,
                           "format": 64 if isinstance(vector, Bitmap64DeletionVector) else 32,
                           "cardinality": vector.get_cardinality()}
    if positions:
        out["positions"] = vector.positions().tolist()
    return out


def cmd_dv_inspect(args: argparse.Namespace) -> list[dict[str, Any]]:
    from paimon_index.deletionvectors.index_file import iter_vectors

    return [_vector_json(v.offset, v.length, v.vector, args.positions) for v in iter_vectors(args.file)]


def cmd_dv_read(args: argparse.Namespace) -> dict[str, Any]:
    from paimon_index.deletionvectors.index_file import read_vector

    vector = read_vector(args.file, args.offset, args.length)
    return _vector_json(args.offset, args.length, vector, True)


def cmd_demo(args: argparse.Namespace) -> None:
    from paimon_index.demo import run_demo

    run_demo(warehouse=args.warehouse, rows=args.rows, spark=not args.no_spark)
    return None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paimon-index",
                                     description="Apache Paimon's index layer, in Python.")
    sub = parser.add_subparsers(dest="command", required=True)

    fi = sub.add_parser("file-index", help="build, inspect and query file-index containers")
    fsub = fi.add_subparsers(dest="action", required=True)

    b = fsub.add_parser("build", help="build one container for a Parquet file's rows")
    b.add_argument("data", help="the Parquet data file")
    b.add_argument("out", help="where to write the container")
    b.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a Paimon table option, e.g. file-index.bloom-filter.columns=id")
    b.add_argument("--schema", help="override column types, e.g. \"ts TIMESTAMP(3), d DATE\"")
    b.set_defaults(func=cmd_build)

    i = fsub.add_parser("inspect", help="list the indexes of a container")
    i.add_argument("index")
    i.add_argument("--schema", help="column types, for per-index summaries")
    i.set_defaults(func=cmd_inspect)

    e = fsub.add_parser("eval", help="what the indexes answer for a predicate")
    e.add_argument("index")
    e.add_argument("--schema", required=True, help="types of every column the predicate uses")
    e.add_argument("--where", required=True, help="e.g. \"c = 5 AND s IN ('a', 'b')\"")
    e.set_defaults(func=cmd_eval)

    t = fsub.add_parser("topn", help="candidate rows for ORDER BY ... LIMIT k")
    t.add_argument("index")
    t.add_argument("--schema", required=True)
    t.add_argument("--order-by", required=True, help="e.g. \"score DESC NULLS LAST\"")
    t.add_argument("--limit", type=int, required=True)
    t.add_argument("--where", help="restrict to the rows a predicate selects first")
    t.set_defaults(func=cmd_topn)

    dv = sub.add_parser("dv", help="read deletion-vector index files")
    dvsub = dv.add_subparsers(dest="action", required=True)
    di = dvsub.add_parser("inspect", help="every vector of a DV index file, in file order")
    di.add_argument("file")
    di.add_argument("--positions", action="store_true", help="also list the deleted positions")
    di.set_defaults(func=cmd_dv_inspect)
    dr = dvsub.add_parser("read", help="one vector, by the range the index manifest records")
    dr.add_argument("file")
    dr.add_argument("--offset", type=int, required=True)
    dr.add_argument("--length", type=int, required=True)
    dr.set_defaults(func=cmd_dv_read)

    d = sub.add_parser("demo", help="the whole pipeline on a local warehouse")
    d.add_argument("--warehouse", default="demo-warehouse")
    d.add_argument("--rows", type=int, default=3_000_000)
    d.add_argument("--no-spark", action="store_true", help="run every step in this process, without Spark")
    d.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        out = args.func(args)
    except PaimonIndexError as e:
        print(f"paimon-index: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as e:
        print(f"paimon-index: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    if out is not None:
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
