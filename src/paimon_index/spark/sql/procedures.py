"""``CALL sys.<procedure>(name => value, ...)``: Paimon's Spark procedures on Paimon tables.

Argument names, positional order, and result columns are those of Paimon's Spark connector
(``org.apache.paimon.spark.procedure``); see ``PROCEDURES`` and docs/sql.md:
``compact`` (result), ``expire_snapshots`` (deleted_snapshots_count), ``remove_orphan_files``
(deletedFileCount, deletedFileTotalLenInBytes), ``rewrite_file_index`` (written_partitions,
written_indexes), ``rollback`` / ``rollback_to_timestamp`` (previous_snapshot_id,
current_snapshot_id), ``create_tag`` / ``delete_tag`` (result).

Values are literals (strings, numbers, booleans), cast to the parameter's type as Spark casts a
procedure argument. Times (``older_than``) are read in the Spark session time zone. Defaults come
from the table's options as in Paimon (``snapshot.num-retained.min`` 10, ``snapshot.num-retained.max``
unbounded, ``snapshot.expire.limit`` 50, ``snapshot.time-retained`` 1 h; orphan files: 1 day).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from paimon_index.errors import PaimonIndexError, SqlError
from paimon_index.spark.sql.names import DIALECT, PAIMON_CATALOG
from paimon_index.table import catalog as _catalog
from paimon_index.table.paimon import bucket_number, table_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.sql.names import Catalog, TableName

__all__ = ["PROCEDURES", "call"]

#: The procedures' namespace (``sys.compact``).
SYSTEM_NAMESPACE = "sys"
_STR, _INT, _LONG, _BOOL = "string", "int", "bigint", "boolean"
#: Paimon's defaults (CoreOptions) for expire_snapshots.
_RETAIN_MIN_DEFAULT, _RETAIN_MAX_DEFAULT, _EXPIRE_LIMIT_DEFAULT = 10, 2**31 - 1, 50
_TIME_RETAINED_DEFAULT_MS = 3600 * 1000
#: Duration units of Paimon's TimeUtils.parseDuration, in milliseconds.
_DURATION_UNITS = {
    "ms": 1,
    "s": 1000,
    "sec": 1000,
    "min": 60_000,
    "m": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
}


@dataclass(frozen=True)
class _Param:
    name: str
    type: str
    required: bool = False


@dataclass(frozen=True)
class _Procedure:
    params: tuple[_Param, ...]
    output: tuple[tuple[str, str], ...]
    run: Callable[[Catalog, TableName, dict[str, Any]], list[tuple[Any, ...]]]
    #: accepted for Paimon's spelling but not implemented: refused when given
    unsupported: frozenset[str] = frozenset()


def _table_arg(catalog: Catalog, text: str) -> TableName:
    from paimon_index.spark.sql.names import resolve_parts, table_parts

    try:
        parts = table_parts(exp.to_table(text, dialect=DIALECT))
    except (ParseError, ValueError) as e:
        raise SqlError(f"table {text!r} does not parse: {e}") from e
    name = resolve_parts(catalog, parts, must_exist=False)
    if name is None or name.system is not None or not catalog.has_table(name.identifier):
        raise catalog.not_found(text)
    return name


def _where(catalog: Catalog) -> dict[str, Any]:
    return {"warehouse": catalog.warehouse, "catalog_options": catalog.catalog_options}


def _millis(catalog: Catalog, text: str, what: str) -> int:
    """A time string as epoch milliseconds, read as Spark casts a string to TIMESTAMP."""
    literal = "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    row = catalog.spark.sql(f"SELECT unix_millis(CAST({literal} AS TIMESTAMP))").first()
    if row is None or row[0] is None:
        raise SqlError(f"{what} {text!r} is not a time (e.g. '2024-01-01 12:00:00')")
    return int(row[0])


# ------------------------------------------------------------------------------------------------
# The procedures
# ------------------------------------------------------------------------------------------------
def _compact(catalog: Catalog, name: TableName, args: dict[str, Any]) -> list[tuple[Any, ...]]:
    from paimon_index.spark import jobs

    strategy = (args.get("compact_strategy") or "").lower()
    if strategy not in ("", "full", "minor"):
        raise SqlError(f"compact_strategy {args['compact_strategy']!r}: use 'full' or 'minor'")
    table = _catalog.open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    where, partitions = args.get("where"), args.get("partitions")
    given = [k for k in ("where", "partitions") if args.get(k) is not None]
    if table.is_primary_key_table and given:
        raise SqlError(f"sys.compact: argument(s) {', '.join(given)} are supported on append tables "
                       f"only; {name} has a primary key (drop them, see docs/sql.md)")
    if len(given) == 2:
        raise SqlError("sys.compact: partitions and where cannot be used together")
    selection = where if where is not None else _partition_specs(partitions)
    try:
        if table.is_primary_key_table:
            jobs.compact(catalog.spark, name.identifier, full=strategy == "full", **_where(catalog))
        else:
            # As Paimon's CompactProcedure: 'full' unless said otherwise; an unaware-bucket table
            # gets the coordinator's pick whatever the strategy (Paimon ignores it there).
            fixed = bucket_number(table) > 0
            jobs._compact_append(catalog.spark, name.identifier, full=fixed and strategy in ("", "full"),
                                 partitions=selection, **_where(catalog))
    except PaimonIndexError as e:
        raise SqlError(f"CALL sys.compact(table => '{name}'): {e}") from e
    return [(True,)]


def _partition_specs(text: str | None) -> list[dict[str, str]] | None:
    """Paimon's ``partitions`` argument, ``k=v,k2=v2;k=v3``: one spec per ``;``-separated part."""
    if text is None:
        return None
    specs = []
    for part in text.split(";"):
        if not part.strip():
            continue
        spec = {}
        for pair in part.split(","):
            key, eq, value = pair.partition("=")
            if not eq or not key.strip():
                raise SqlError(f"sys.compact: partitions {text!r}: expected k=v[,k2=v2][;k=v...], "
                               f"got {pair!r}")
            spec[key.strip()] = value.strip()
        specs.append(spec)
    return specs


def _expire_snapshots(catalog: Catalog, name: TableName, args: dict[str, Any]) -> list[tuple[Any, ...]]:
    from paimon_index.table.maintenance import expire_snapshots_as_paimon

    table = _catalog.open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    options = table_options(table)

    def option(key: str, default: int) -> int:
        return int(options[key]) if key in options else default

    def given(key: str, option_key: str, default: int) -> int:
        value = args.get(key)
        return option(option_key, default) if value is None else int(value)

    retain_max = given("retain_max", "snapshot.num-retained.max", _RETAIN_MAX_DEFAULT)
    retain_min = given("retain_min", "snapshot.num-retained.min", _RETAIN_MIN_DEFAULT)
    max_deletes = given("max_deletes", "snapshot.expire.limit", _EXPIRE_LIMIT_DEFAULT)
    older_than_ms: float
    if args.get("older_than"):
        older_than_ms = _millis(catalog, args["older_than"], "older_than")
    else:
        retained = _duration_ms(options.get("snapshot.time-retained")) or _TIME_RETAINED_DEFAULT_MS
        older_than_ms = time.time() * 1000 - retained
    try:
        result = expire_snapshots_as_paimon(
            table,
            retain_max=retain_max,
            retain_min=retain_min,
            older_than_ms=older_than_ms,
            max_deletes=max_deletes,
        )
    except PaimonIndexError as e:
        raise SqlError(f"CALL sys.expire_snapshots(table => '{name}'): {e}") from e
    return [(len(result.expired_snapshots),)]


def _duration_ms(text: str | None) -> int | None:
    """Paimon's duration spelling (``1 h``, ``30min``, ``10 s``, a bare number: ms) in milliseconds."""
    if not text:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if match is None or match.group(2).lower() not in (*_DURATION_UNITS, ""):
        raise SqlError(f"duration {text!r}: use a number and a unit (ms, s, min, h, d)")
    return int(match.group(1)) * _DURATION_UNITS.get(match.group(2).lower(), 1)


def _remove_orphan_files(catalog: Catalog, name: TableName, args: dict[str, Any]) -> list[tuple[Any, ...]]:
    from paimon_index.table.maintenance import remove_orphan_files

    older_than = None
    if args.get("older_than"):
        older_than = _millis(catalog, args["older_than"], "older_than") / 1000
    table = _catalog.open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    try:
        result = remove_orphan_files(table, older_than=older_than, dry_run=bool(args.get("dry_run")))
    except PaimonIndexError as e:
        raise SqlError(f"CALL sys.remove_orphan_files(table => '{name}'): {e}") from e
    return [(len(result.deleted_files), result.deleted_bytes)]


def _rewrite_file_index(catalog: Catalog, name: TableName, args: dict[str, Any]) -> list[tuple[Any, ...]]:
    from paimon_index.spark import jobs

    try:
        result = jobs.rewrite_file_index(catalog.spark, name.identifier, args.get("where"), **_where(catalog))
    except PaimonIndexError as e:
        raise SqlError(f"CALL sys.rewrite_file_index(table => '{name}'): {e}") from e
    partitions = _written_partitions(catalog, name, result.snapshot_id)
    return [(partitions, int(result.files_added))]


def _written_partitions(catalog: Catalog, name: TableName, snapshot_id: int | None) -> int:
    """The partitions whose files snapshot ``snapshot_id`` added (0 when nothing was committed)."""
    if snapshot_id is None:
        return 0
    from paimon_index.table.paimon import snapshot_by_id

    table = _catalog.open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    snapshot = snapshot_by_id(table, snapshot_id)
    if snapshot is None:
        return 0
    from paimon_index.table.paimon import ManifestFileManager, ManifestListManager

    delta = ManifestListManager(table).read_delta(snapshot)
    entries = ManifestFileManager(table).read_entries_parallel(delta)
    return len({tuple(getattr(e.partition, "values", []) or []) for e in entries if e.kind == 0})


def _rollback(catalog: Catalog, name: TableName, args: dict[str, Any]) -> list[tuple[Any, ...]]:
    version, snapshot, tag = args.get("version"), args.get("snapshot"), args.get("tag")
    given = [v for v in (version, snapshot, tag) if v not in (None, "")]
    if len(given) != 1:
        raise SqlError(
            "CALL sys.rollback: set exactly one of version / snapshot / tag "
            "(only can set one of version/snapshot/tag in RollbackProcedure)"
        )
    target: int | str
    if version not in (None, ""):
        target = int(version) if str(version).isdigit() else str(version)
    else:
        target = int(snapshot) if snapshot is not None else str(tag)
    try:
        previous, current = _catalog.rollback(
            catalog.warehouse, name.identifier, target, catalog_options=catalog.catalog_options
        )
    except PaimonIndexError as e:
        raise SqlError(f"CALL sys.rollback(table => '{name}'): {e}") from e
    return [(previous, current)]


def _rollback_to_timestamp(catalog: Catalog, name: TableName, args: dict[str, Any]) -> list[tuple[Any, ...]]:
    table = _catalog.open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    found = table.snapshot_manager().earlier_or_equal_time_mills(int(args["timestamp"]))
    if found is None:
        raise SqlError(
            f"CALL sys.rollback_to_timestamp(table => '{name}'): no snapshot was committed at or "
            f"before {args['timestamp']} (epoch ms)"
        )
    return _rollback(catalog, name, {"snapshot": int(found.id)})


def _create_tag(catalog: Catalog, name: TableName, args: dict[str, Any]) -> list[tuple[Any, ...]]:
    retained = args.get("time_retained")
    try:
        _catalog.create_tag(
            catalog.warehouse,
            name.identifier,
            args["tag"],
            args.get("snapshot"),
            time_retained=retained,
            catalog_options=catalog.catalog_options,
        )
    except PaimonIndexError as e:
        raise SqlError(f"CALL sys.create_tag(table => '{name}', tag => '{args['tag']}'): {e}") from e
    return [(True,)]


def _delete_tag(catalog: Catalog, name: TableName, args: dict[str, Any]) -> list[tuple[Any, ...]]:
    for tag in str(args["tag"]).split(","):
        if tag.strip():
            _catalog.delete_tag(
                catalog.warehouse, name.identifier, tag.strip(), catalog_options=catalog.catalog_options
            )
    return [(True,)]


_RESULT = (("result", _BOOL),)
_ROLLBACK_OUT = (("previous_snapshot_id", _LONG), ("current_snapshot_id", _LONG))
#: Paimon's procedures paimon-index runs (name -> parameters, result columns, implementation).
PROCEDURES: dict[str, _Procedure] = {
    "compact": _Procedure(
        (
            _Param("table", _STR, True),
            _Param("partitions", _STR),
            _Param("compact_strategy", _STR),
            _Param("order_strategy", _STR),
            _Param("order_by", _STR),
            _Param("where", _STR),
            _Param("options", _STR),
            _Param("partition_idle_time", _STR),
            _Param("buckets", _STR),
        ),
        _RESULT,
        _compact,
        frozenset({"order_strategy", "order_by", "options", "partition_idle_time", "buckets"}),
    ),
    "expire_snapshots": _Procedure(
        (
            _Param("table", _STR, True),
            _Param("retain_max", _INT),
            _Param("retain_min", _INT),
            _Param("older_than", _STR),
            _Param("max_deletes", _INT),
            _Param("options", _STR),
        ),
        (("deleted_snapshots_count", _INT),),
        _expire_snapshots,
        frozenset({"options"}),
    ),
    "remove_orphan_files": _Procedure(
        (
            _Param("table", _STR, True),
            _Param("older_than", _STR),
            _Param("dry_run", _BOOL),
            _Param("parallelism", _INT),
            _Param("mode", _STR),
        ),
        (("deletedFileCount", _LONG), ("deletedFileTotalLenInBytes", _LONG)),
        _remove_orphan_files,
    ),
    "rewrite_file_index": _Procedure(
        (_Param("table", _STR, True), _Param("where", _STR)),
        (("written_partitions", _INT), ("written_indexes", _INT)),
        _rewrite_file_index,
    ),
    "rollback": _Procedure(
        (
            _Param("table", _STR, True),
            _Param("version", _STR),
            _Param("snapshot", _LONG),
            _Param("tag", _STR),
        ),
        _ROLLBACK_OUT,
        _rollback,
    ),
    "rollback_to_timestamp": _Procedure(
        (_Param("table", _STR, True), _Param("timestamp", _LONG, True)), _ROLLBACK_OUT, _rollback_to_timestamp
    ),
    "create_tag": _Procedure(
        (
            _Param("table", _STR, True),
            _Param("tag", _STR, True),
            _Param("snapshot", _LONG),
            _Param("time_retained", _STR),
        ),
        _RESULT,
        _create_tag,
    ),
    "delete_tag": _Procedure((_Param("table", _STR, True), _Param("tag", _STR, True)), _RESULT, _delete_tag),
}


# ------------------------------------------------------------------------------------------------
# Parsing the call
# ------------------------------------------------------------------------------------------------
def _value(node: exp.Expr, what: str) -> Any:
    """A literal argument's Python value."""
    if isinstance(node, exp.Paren):
        return _value(node.this, what)
    if isinstance(node, exp.Neg):
        inner = _value(node.this, what)
        if isinstance(inner, int | float) and not isinstance(inner, bool):
            return -inner
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        text = str(node.this)
        return int(text) if re.fullmatch(r"\d+", text) else float(text)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    raise SqlError(
        f"argument {what}: {node.sql(DIALECT)} is not a literal (give a string, number or boolean)"
    )


def _cast(value: Any, param: _Param, procedure: str) -> Any:
    """``value`` as Spark casts it to the parameter's type."""
    if value is None:
        return None
    bad = SqlError(f"sys.{procedure}: argument {param.name} expects {param.type.upper()}, got {value!r}")
    if param.type == _STR:
        return str(value).lower() if isinstance(value, bool) else str(value)
    if param.type in (_INT, _LONG):
        if isinstance(value, bool):
            raise bad
        if isinstance(value, float) and not value.is_integer():
            raise bad
        try:
            return int(str(value).strip()) if isinstance(value, str) else int(value)
        except ValueError:
            raise bad from None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise bad


def _parse(text: str) -> tuple[str, list[exp.Expr]]:
    """(procedure name, its argument nodes) of ``sys.name(args)`` / ``paimon.sys.name(args)``."""
    try:
        node = sqlglot.parse_one(text, read=DIALECT)
    except (ParseError, TokenError) as e:
        raise SqlError(
            f"CALL {text[:200]}: does not parse ({e}); e.g. CALL sys.compact(table => 'db.t')"
        ) from e
    parts: list[str] = []
    call_node: exp.Expr = node
    if isinstance(node, exp.Dot):
        parts = node.this.sql(DIALECT).split(".")
        call_node = node.expression
    if not isinstance(call_node, exp.Func):
        raise SqlError(f"CALL {text[:200]}: expected sys.<procedure>(name => value, ...)")
    name = call_node.name if isinstance(call_node, exp.Anonymous) else call_node.sql_name()
    namespace = [p.strip("`").lower() for p in parts]
    if namespace not in ([SYSTEM_NAMESPACE], [PAIMON_CATALOG, SYSTEM_NAMESPACE]):
        raise SqlError(
            f"CALL {text[:200]}: procedures live in sys (CALL sys.{name.lower()}(...)); "
            f"known: {', '.join(PROCEDURES)}"
        )
    if isinstance(call_node, exp.Anonymous):
        args = list(call_node.expressions)
    else:
        args = [a for a in call_node.args.values() if isinstance(a, exp.Expr)]
    return name.lower(), args


def call(catalog: Catalog, text: str) -> DataFrame:
    """Run ``CALL <text>``."""
    name, nodes = _parse(text)
    procedure = PROCEDURES.get(name)
    if procedure is None:
        raise SqlError(f"procedure sys.{name} is not supported; known: {', '.join(sorted(PROCEDURES))}")
    params = {p.name: p for p in procedure.params}
    args: dict[str, Any] = {}
    positional = True
    for i, node in enumerate(nodes):
        if isinstance(node, exp.Kwarg):
            positional = False
            key = node.this.name.lower()
            if key not in params:
                raise SqlError(f"sys.{name}: unknown argument {key!r}; its arguments: {', '.join(params)}")
            if key in args:
                raise SqlError(f"sys.{name}: argument {key} given twice")
            args[key] = _cast(_value(node.expression, key), params[key], name)
            continue
        if not positional:
            raise SqlError(f"sys.{name}: a positional argument after named ones (name them all: x => value)")
        if i >= len(procedure.params):
            raise SqlError(
                f"sys.{name}: {len(nodes)} arguments, it takes at most {len(procedure.params)} "
                f"({', '.join(params)})"
            )
        param = procedure.params[i]
        args[param.name] = _cast(_value(node, param.name), param, name)
    missing = [p.name for p in procedure.params if p.required and args.get(p.name) is None]
    if missing:
        raise SqlError(
            f"sys.{name}: missing required argument(s) {', '.join(missing)} "
            f"(e.g. CALL sys.{name}(table => 'db.t'))"
        )
    unsupported = sorted(k for k in args if k in procedure.unsupported and args[k] is not None)
    if unsupported:
        raise SqlError(
            f"sys.{name}: argument(s) {', '.join(unsupported)} are not supported by paimon-index; "
            "drop them (see docs/sql.md)"
        )
    table = _table_arg(catalog, args["table"])
    rows = procedure.run(catalog, table, args)
    schema = ", ".join(f"`{col}` {dtype}" for col, dtype in procedure.output)
    return catalog.spark.createDataFrame([list(r) for r in rows], schema)
