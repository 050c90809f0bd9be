"""Temporary views over Paimon tables: ``CREATE [OR REPLACE] TEMP[ORARY] VIEW v [(cols)] AS <query>``.

Spark keeps a temporary view's query and analyses it again in every statement that reads the view,
so the view reads its tables as they are at that statement. A view whose query names a Paimon table
is kept the same way by the noun (:class:`~paimon_index.spark.catalog.Catalog`): its parsed query
(the views it reads put in place as they are then) stands in for every later reference to the view in
``paimon.sql``, as a subquery under the view's name (or the reference's alias) -- so each statement
plans the Paimon tables at their latest snapshot, with the predicates that hold for them, exactly as
if the query had been written there. A view whose query names no Paimon table is Spark's own
(``spark.sql`` creates it).

Names: one part, as Spark's temporary views; a CTE of the same name shadows the view, and the view
shadows a table of the current database (Spark resolves temporary views first). Views live in the
noun, for its statements: Spark's own ``spark.table("v")`` does not see them, and a view cannot be
written to, time travelled or described by column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from paimon_index.errors import SqlError
from paimon_index.spark.sql.dml import empty_result
from paimon_index.spark.sql.names import DIALECT, cte_names, names_paimon_table, relations

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.sql.names import Catalog

__all__ = ["View", "create", "describe", "drop", "expand"]

#: A view's query may read views that read views: at most this deep (a cycle is refused where it
#: closes; the bound keeps anything else from recursing without end).
MAX_DEPTH = 32


@dataclass(frozen=True)
class View:
    """A temporary view of the noun: its query and its column names (empty: the query's own)."""

    name: str
    query: exp.Query
    columns: tuple[str, ...] = ()


def _is_temporary(statement: exp.Create) -> bool:
    props = statement.args.get("properties")
    return props is not None and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions)


def _is_global(statement: exp.Create) -> bool:
    props = statement.args.get("properties")
    return props is not None and any(isinstance(p, exp.GlobalProperty) for p in props.expressions)


def create(catalog: Catalog, statement: exp.Create, text: str) -> DataFrame | None:
    """Keep ``CREATE TEMP VIEW`` of a query over Paimon tables; a view over none is Spark's
    (``spark.sql(text)``, one of the noun's of that name replaced); None for any other statement.

    Raises:
        SqlError: a persistent or global view over Paimon tables, a view name with a database, an
            existing view without ``OR REPLACE``/``IF NOT EXISTS``.
    """
    if str(statement.args.get("kind") or "").upper() != "VIEW":
        return None
    query = statement.expression
    target = statement.this
    columns: tuple[str, ...] = ()
    if isinstance(target, exp.Schema):
        columns = tuple(c.name for c in target.expressions)
        target = target.this
    if not isinstance(query, exp.Query) or not isinstance(target, exp.Table):
        return None
    key = target.name.lower()
    expanded = expand(catalog, query.copy(), reading=(key,))
    if not isinstance(expanded, exp.Query) or not names_paimon_table(catalog, expanded):
        if key in catalog.views and not target.db:
            if not statement.args.get("replace"):
                raise SqlError(f"temporary view {target.name} already exists "
                               "(TEMP_TABLE_OR_VIEW_ALREADY_EXISTS); use CREATE OR REPLACE TEMPORARY VIEW")
            del catalog.views[key]
        return catalog.spark.sql(text)  # Spark's own view: its query reads no Paimon table
    shown = target.sql(DIALECT)
    if not _is_temporary(statement) or _is_global(statement):
        kind = "GLOBAL TEMPORARY VIEW" if _is_global(statement) else "VIEW"
        raise SqlError(f"CREATE {kind} {shown} over Paimon tables is not supported: create a TEMPORARY VIEW "
                       "(paimon.sql keeps it and reads its tables at each statement)")
    if target.db or target.catalog:
        raise SqlError(f"a temporary view's name has one part: {shown}")
    if key in catalog.views and not statement.args.get("replace"):
        if statement.args.get("exists"):
            return empty_result(catalog)
        raise SqlError(f"temporary view {target.name} already exists (TEMP_TABLE_OR_VIEW_ALREADY_EXISTS); "
                       "use CREATE OR REPLACE TEMPORARY VIEW")
    # Spark checks the query when the view is made: its columns must resolve now.
    from paimon_index.spark.sql import query as queries

    names = queries.run(catalog, expanded.copy()).columns
    if columns and len(columns) != len(names):
        raise SqlError(f"temporary view {target.name}: {len(columns)} column names for the query's "
                       f"{len(names)} columns")
    # Kept as written: the views it reads are put in place at each use, as Spark resolves them then.
    catalog.views[key] = View(target.name, query.copy(), columns)
    return empty_result(catalog)


def drop(catalog: Catalog, statement: exp.Drop, text: str) -> DataFrame | None:
    """``DROP VIEW [IF EXISTS] v``: one of the noun's views is forgotten, any other one-part view is
    Spark's (``spark.sql(text)``); None for any other statement."""
    if str(statement.args.get("kind") or "").upper() != "VIEW":
        return None
    targets = statement.args.get("tables") or [statement.this]
    if len(targets) != 1 or not isinstance(targets[0], exp.Table) or targets[0].db:
        return None
    if catalog.views.pop(targets[0].name.lower(), None) is not None:
        return empty_result(catalog)
    return catalog.spark.sql(text)


def expand(catalog: Catalog, statement: exp.Expr, reading: tuple[str, ...] = ()) -> exp.Expr:
    """``statement`` with every reference to one of the noun's views replaced by its query, the
    views that query reads in turn (``reading``: the views being expanded around it).

    Raises:
        SqlError: a view written to or time travelled, a view that reads itself, or views nested
            deeper than MAX_DEPTH.
    """
    if not catalog.views:
        return statement
    if len(reading) > MAX_DEPTH:
        raise SqlError(f"views read views more than {MAX_DEPTH} deep: {' -> '.join(reading)}")
    ctes = cte_names(statement)
    written = {id(statement.this)} if isinstance(statement, (exp.Insert, exp.Delete, exp.Update,
                                                             exp.Merge)) else set()
    for table in relations(statement):
        key = table.name.lower()
        if key in reading and not table.db and not table.catalog and key not in ctes:
            raise SqlError(f"recursive view {table.name} detected (RECURSIVE_VIEW): "
                           f"{' -> '.join((*reading, key))}")
        view = None if table.db or table.catalog else catalog.views.get(key)
        if view is None or key in ctes:
            continue
        shown = table.sql(DIALECT)
        if id(table) in written or (isinstance(table.parent, exp.Schema) and id(table.parent) in written):
            raise SqlError(f"{shown} is a temporary view: it cannot be written to")
        kept = {k for k, v in table.args.items() if v and k not in ("this", "alias")}
        if kept:
            raise SqlError(f"{shown}: {', '.join(sorted(kept))} on the temporary view {view.name} is not "
                           "supported")
        alias = table.args.get("alias")
        name = alias.name if isinstance(alias, exp.TableAlias) and alias.name else view.name
        columns = [exp.to_identifier(c) for c in view.columns]
        if isinstance(alias, exp.TableAlias) and alias.columns:
            columns = list(alias.columns)
        query = expand(catalog, view.query.copy(), (*reading, key))
        subquery = exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(name),
                                                                   columns=columns or None))
        if table is statement:
            return subquery
        table.replace(subquery)
    return statement


def describe(catalog: Catalog, statement: exp.Describe) -> DataFrame | None:
    """``DESCRIBE v`` of one of the noun's views: its columns as Spark describes a temporary view
    (``col_name, data_type, comment``); None when ``v`` is not one."""
    target = statement.this
    if not isinstance(target, exp.Table) or target.db or target.name.lower() not in catalog.views:
        return None
    from paimon_index.spark.sql import query as queries

    schema = queries.run(catalog, expand(catalog, exp.select(exp.Star()).from_(target.copy()))).schema
    described = [(f.name, f.dataType.simpleString(), None) for f in schema.fields]
    return catalog.spark.createDataFrame(described, "col_name string, data_type string, comment string") \
        if described else empty_result(catalog)
