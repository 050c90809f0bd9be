"""Time travel: ``VERSION AS OF <snapshot id | 'tag'>`` and ``TIMESTAMP AS OF '<time>'``, as Paimon's
Spark connector reads them.

- ``VERSION AS OF 5`` / ``'5'``: snapshot 5 (it must still exist).
- ``VERSION AS OF 'name'``: the snapshot tag ``name`` points to (a tag wins over a snapshot id of the
  same digits, as in Paimon).
- ``TIMESTAMP AS OF <expr>``: Spark evaluates ``CAST(<expr> AS TIMESTAMP)`` (a string is read in the
  session time zone ``spark.sql.session.timeZone``, a number is epoch seconds), then the latest
  snapshot committed at or before that instant is read (Paimon's rule).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from paimon_index.errors import SqlError, TableNotFoundError
from paimon_index.spark.sql.names import DIALECT
from paimon_index.table import catalog as _catalog
from paimon_index.table.paimon import latest_snapshot, snapshot_exists

if TYPE_CHECKING:
    from paimon_index.spark.sql.names import Catalog, TableName

__all__ = ["snapshot_id"]


def _available(table: Any) -> str:
    latest = latest_snapshot(table)
    if latest is None:
        return "the table has no snapshot yet"
    earliest = table.snapshot_manager().try_get_earliest_snapshot()
    first = earliest.id if earliest is not None else latest.id
    return f"available snapshots: {first}..{latest.id}"


def snapshot_id(catalog: Catalog, name: TableName, version: exp.Expr, table: Any | None = None) -> int:
    """The snapshot a time-travel clause of ``name`` asks for (``table``: its pypaimon table, when
    the caller opened it already).

    Raises:
        SqlError: no such snapshot or tag, or no snapshot at or before the time (naming the table).
    """
    if table is None:
        if not catalog.has_table(name.identifier):
            raise TableNotFoundError(f"table {name} not found in warehouse {catalog.warehouse}")
        table = _catalog.open_table(catalog.warehouse, name.identifier,
                                    catalog_options=catalog.catalog_options)
    kind = str(version.this).upper()
    value = version.args.get("expression")
    shown = version.sql(DIALECT)
    if kind == "VERSION" and isinstance(value, exp.Literal):
        text = str(value.this)
        if value.is_string:
            tagged = _catalog.tag_snapshot_id(table, text)
            if tagged is not None:
                return tagged
        if not text.isdigit():
            tags = ", ".join(table.list_tags()) or "none"
            raise SqlError(
                f"{name} {shown}: tag {text!r} does not exist (tags: {tags}); "
                "create it with CALL sys.create_tag(table => ..., tag => ...)"
            )
        wanted = int(text)
        if not snapshot_exists(table, wanted):
            raise SqlError(f"{name} {shown}: snapshot {wanted} does not exist ({_available(table)})")
        return wanted
    if kind == "TIMESTAMP" and value is not None:
        micros = catalog.spark.sql(
            f"SELECT unix_micros(CAST({value.sql(DIALECT)} AS TIMESTAMP))"
        ).first()
        if micros is None or micros[0] is None:
            raise SqlError(f"{name} {shown}: the time is NULL")
        millis = micros[0] // 1000
        found = table.snapshot_manager().earlier_or_equal_time_mills(millis)
        if found is None:
            when = datetime.fromtimestamp(millis / 1000, tz=UTC).isoformat()
            raise SqlError(
                f"{name} {shown}: no snapshot was committed at or before {when} ({_available(table)})"
            )
        return int(found.id)
    raise SqlError(
        f"time travel {shown} on {name}: use VERSION AS OF <snapshot id | 'tag'> or TIMESTAMP AS OF '<time>'"
    )
