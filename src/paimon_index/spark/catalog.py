"""The Spark noun: a Paimon warehouse attached to a Spark session, with SQL over its tables.

    import paimon_index.spark
    paimon = paimon_index.spark.attach(spark, warehouse=W)          # classic Spark or Spark Connect
    paimon.sql("CREATE TABLE db.t (id BIGINT, s STRING) TBLPROPERTIES ('bucket' = '-1')")
    paimon.sql("INSERT INTO db.t VALUES (1, 'a'), (2, 'b')")
    paimon.sql("SELECT s, count(*) FROM db.t WHERE id > 1 GROUP BY s").show()
    t = paimon.table("db.t")                                        # the Table's verbs as Spark jobs
    t.read("id > 1"); t.write(df); t.delete("s = 'a'"); t.count(); t.compact() ...
    paimon.databases(); paimon.tables("db")

:meth:`Catalog.sql` takes Spark SQL text (one statement) and answers with a DataFrame, as
``spark.sql`` does; every reference to a Paimon table is read by the planned read with the
predicates that hold for that reference, and the rest of the statement runs in Spark unchanged
(:mod:`paimon_index.spark.sql`). A statement that names no Paimon table goes to ``spark.sql``
unchanged. Nothing is registered in the Spark session: the catalog is this Python object.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any

from paimon_index.errors import TableNotFoundError
from paimon_index.table import catalog as _catalog

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from paimon_index.table.aggregate import AggregateReport
    from paimon_index.table.api import CommitResult, MaintenanceResult

__all__ = ["DEFAULT_DATABASE", "Catalog", "SparkTable", "attach"]

#: The database a one-part name means before ``USE`` (Paimon's default database).
DEFAULT_DATABASE = "default"


def _jobs() -> ModuleType:
    """:mod:`paimon_index.spark.jobs`, imported on first use: it pulls in pypaimon, pandas and
    pyarrow's datasets (~1 s), which :func:`~paimon_index.spark.session.local_session` imports while
    the driver JVM starts, so ``from paimon_index.spark import attach`` stays cheap."""
    from paimon_index.spark import jobs

    return jobs


def attach(spark: SparkSession, *, warehouse: str, catalog_options: Mapping[str, str] | None = None,
           database: str = DEFAULT_DATABASE) -> Catalog:
    """The Paimon warehouse ``warehouse`` as a :class:`Catalog` of ``spark`` (classic or Connect).

    ``catalog_options``: ``fs.*`` options for pypaimon's catalog (object stores), checked here.
    ``database``: the current database of one-part table names (``USE db`` changes it).
    """
    _catalog.catalog_config(str(warehouse), catalog_options)  # a bad option fails here, not later
    return Catalog(spark, str(warehouse), dict(catalog_options or {}), database)


class Catalog:
    """A warehouse attached to a Spark session (see the module docstring)."""

    def __init__(self, spark: SparkSession, warehouse: str, catalog_options: dict[str, str],
                 database: str) -> None:
        self.spark = spark
        self.warehouse = warehouse
        self.catalog_options = catalog_options
        self.current_database = database
        # Whether the last USE named a Spark database (SHOW CURRENT NAMESPACE is then Spark's).
        self.uses_spark_database = False
        # The warehouse's and the session's listings, memoized for one statement (None: not in one),
        # per thread: statements run from several threads at once each have their own (one memo
        # shared between them outlived its statement and hid tables created after it).
        self._statement = threading.local()
        # The temporary views paimon.sql made over Paimon tables (spark/sql/views.py).
        self.views: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r}, current database {self.current_database!r})"

    # -- SQL ---------------------------------------------------------------------------------------
    def sql(self, text: str) -> DataFrame:
        """Run one Spark SQL statement over the warehouse's tables (and Spark's); its result.

        Queries return a lazy DataFrame, as ``spark.sql`` does; DDL, DML and ``CALL`` run now and
        return their (possibly empty) result.
        """
        from paimon_index.spark.sql import execute

        return execute(self, text)

    @contextmanager
    def one_statement(self) -> Iterator[None]:
        """Within it, each listing (databases, a database's tables, Spark's temporary views) is
        read once: a statement resolves every name several times, and on an object store each
        listing is requests. Only for statements that create or drop nothing (queries and DML)."""
        outer = getattr(self._statement, "listings", None)
        self._statement.listings = {} if outer is None else outer
        try:
            yield
        finally:
            self._statement.listings = outer

    def _listed(self, key: tuple[str, ...], list_now: Any) -> Any:
        listings: dict[tuple[str, ...], Any] | None = getattr(self._statement, "listings", None)
        if listings is None:
            return list_now()
        if key not in listings:
            listings[key] = list_now()
        return listings[key]

    # -- tables ------------------------------------------------------------------------------------
    def table(self, name: str) -> SparkTable:
        """The table ``name`` (``db.t``, ``paimon.db.t`` or ``t`` of the current database).

        Raises:
            TableNotFoundError: no such table (the message says how to create one).
            SqlError: ``name`` is a system table (``db.t$snapshots``, ``db.t$ro``): read it in SQL.
        """
        from paimon_index.errors import SqlError
        from paimon_index.spark.sql.names import resolve_parts

        resolved = resolve_parts(self, _name_parts(name), must_exist=False)
        if resolved is not None and resolved.system is not None and self.has_table(resolved.identifier):
            quoted = f"{resolved.database}.`{resolved.table}${resolved.system}`"
            raise SqlError(f"{resolved} is a system table, not a table with verbs: read it with "
                           f"paimon.sql(\"SELECT * FROM {quoted}\")")
        if resolved is None or resolved.system is not None or not self.has_table(resolved.identifier):
            raise self.not_found(name)
        return SparkTable(self, resolved.identifier)

    def databases(self) -> list[str]:
        """The warehouse's databases."""
        return list(self._listed(("databases",),
                                 lambda: _catalog.database_names(self.warehouse, self.catalog_options)))

    def tables(self, database: str | None = None) -> list[str]:
        """The tables of ``database`` (default: the current database)."""
        db = self.database_spelling(database or self.current_database)
        return [] if db is None else _catalog.table_names(self.warehouse, db, self.catalog_options)

    # -- name resolution (used by the SQL layer) ----------------------------------------------------
    def database_spelling(self, name: str) -> str | None:
        """The warehouse's spelling of database ``name`` (case-insensitive), or None."""
        return _spelling(name, self.databases())

    def table_spelling(self, database: str, name: str) -> str | None:
        """The warehouse's spelling of table ``name`` of ``database`` (case-insensitive), or None."""
        names = self._listed(("tables", database),
                             lambda: _catalog.table_names(self.warehouse, database, self.catalog_options))
        return _spelling(name, names)

    def has_table(self, identifier: str) -> bool:
        database, _, table = identifier.partition(".")
        db = self.database_spelling(database)
        return db is not None and self.table_spelling(db, table) is not None

    def is_spark_view(self, name: str) -> bool:
        """Whether ``name`` is a temporary view of the Spark session (it shadows a Paimon table)."""
        views = self._listed(("views",), lambda: frozenset(
            t.name.lower() for t in self.spark.catalog.listTables() if t.isTemporary))
        return name.lower() in views

    def not_found(self, name: str) -> TableNotFoundError:
        return TableNotFoundError(
            f"table {name} not found in warehouse {self.warehouse}; create it with "
            f"paimon.sql(\"CREATE TABLE {name} (...) TBLPROPERTIES (...)\") or paimon_index.create_table")


def _spelling(name: str, names: list[str]) -> str | None:
    if name in names:
        return name
    same = [n for n in names if n.lower() == name.lower()]
    return same[0] if len(same) == 1 else None


def _name_parts(name: str) -> list[str]:
    """``db.t`` / ``paimon.db.t`` / ``t`` (back-quoted parts allowed) as parts, parsed as Spark would."""
    from sqlglot import exp
    from sqlglot.errors import ParseError

    from paimon_index.errors import InvalidOptionError
    from paimon_index.spark.sql.names import table_parts

    try:
        table = exp.to_table(name, dialect="spark")
    except (ParseError, ValueError) as e:
        raise InvalidOptionError(f"table name {name!r} does not parse: {e}") from e
    return table_parts(table)


class SparkTable:
    """One table of a :class:`Catalog`: :class:`paimon_index.Table`'s verbs as Spark jobs.

    Each verb is the :mod:`paimon_index.spark.jobs` function of the same name on this table.
    """

    def __init__(self, catalog: Catalog, identifier: str) -> None:
        self.catalog = catalog
        self.identifier = identifier

    def __repr__(self) -> str:
        return f"SparkTable({self.identifier!r} of {self.catalog.warehouse!r})"

    @property
    def _where(self) -> dict[str, Any]:
        return {"warehouse": self.catalog.warehouse, "catalog_options": self.catalog.catalog_options}

    def read(self, where: str | None = None, columns: list[str] | None = None, *,
             snapshot_id: int | None = None, order_by: str | None = None, limit: int | None = None,
             use_index: bool = True) -> DataFrame:
        """The rows where ``where`` (Spark SQL) holds, read by the planned read."""
        return _jobs().read(self.catalog.spark, self.identifier, where, columns, snapshot_id=snapshot_id,
                         order_by=order_by, limit=limit, use_index=use_index, **self._where)

    def write(self, df: DataFrame, mode: str = "append") -> CommitResult:
        return _jobs().write(df, self.identifier, mode, **self._where)

    def upsert(self, df: DataFrame) -> CommitResult:
        return _jobs().upsert(self.catalog.spark, df, self.identifier, **self._where)

    def delete(self, where: str) -> CommitResult:
        return _jobs().delete(self.catalog.spark, self.identifier, where, **self._where)

    def update(self, set: Mapping[str, Any], where: str | None = None) -> CommitResult:
        return _jobs().update(self.catalog.spark, self.identifier, set, where, **self._where)

    def count(self, where: str | None = None, *, report: AggregateReport | None = None) -> int:
        return _jobs().count(self.catalog.spark, self.identifier, where, report=report, **self._where)

    def compact(self, full: bool = False) -> CommitResult:
        return _jobs().compact(self.catalog.spark, self.identifier, full=full, **self._where)

    def rewrite_file_index(self, where: str | None = None) -> CommitResult:
        return _jobs().rewrite_file_index(self.catalog.spark, self.identifier, where, **self._where)

    def expire_snapshots(self, retain_last: int | None = None,
                         older_than: datetime | float | None = None) -> MaintenanceResult:
        return _jobs().expire_snapshots(self.catalog.spark, self.identifier, retain_last=retain_last,
                                     older_than=older_than, **self._where)

    def remove_orphan_files(self, older_than: datetime | float) -> MaintenanceResult:
        return _jobs().remove_orphan_files(self.catalog.spark, self.identifier, older_than=older_than,
                                        **self._where)
