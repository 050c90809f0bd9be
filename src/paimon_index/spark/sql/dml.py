"""DML over Paimon tables: INSERT INTO/OVERWRITE, DELETE, UPDATE, MERGE INTO, TRUNCATE TABLE.

Every statement runs eagerly and commits at most **one** snapshot; it returns an empty DataFrame
(no columns), as Spark and Paimon's Spark connector do for DML. Every query part (the INSERT's
query, a condition's ``IN (SELECT ...)`` / ``EXISTS``, MERGE's source) is Spark SQL run by Spark,
with the Paimon tables in it read by the planned read (:func:`.query.rewrite`).

=========================  ==========================================================================
statement                  how
=========================  ==========================================================================
``INSERT INTO``            the query's columns by position (or the column list, or ``BY NAME``), cast
                           to the table's types, written by :func:`paimon_index.spark.jobs.write`
                           (a primary-key table: an upsert)
``INSERT OVERWRITE``       :func:`paimon_index.spark.jobs.overwrite`: Spark's
                           ``spark.sql.sources.partitionOverwriteMode`` (``static`` by default: the
                           whole table, or the partitions matching ``PARTITION (p = 'x')``;
                           ``dynamic``: the partitions written), as Paimon's connector
``DELETE`` / ``UPDATE``    append tables: ``SELECT <values>, <row positions> FROM <table at the
                           planned snapshot> WHERE cond`` marked in deletion vectors (+ the new
                           values written) by :func:`paimon_index.spark.jobs.change_matched`;
                           primary-key tables: the rows' keys upserted as deletes / new values
``MERGE INTO``             the target (pinned, with positions) joined with the source; each row's
                           first matching clause decides; append tables: positions marked + new rows
                           written, primary-key tables: one upsert
``TRUNCATE TABLE``         an overwrite with no rows
=========================  ==========================================================================
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from paimon_index.errors import InvalidOptionError, SqlError
from paimon_index.spark.planned import change_statement
from paimon_index.spark.sql.names import DIALECT, WITH_ARG, TableName, relations, resolve
from paimon_index.spark.sql.query import OwnConjuncts, own_conjuncts, rewrite, unqualify_database
from paimon_index.table.files import FILE_PATH_COLUMN, METADATA_COLUMNS, ROW_INDEX_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

    from paimon_index.spark.sql.names import Catalog


__all__ = ["empty_result", "partition_matches", "partition_spec", "run", "truncate"]

#: Spark's session option choosing static or dynamic partition overwrite.
PARTITION_OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"
#: The row-kind column of an upsert (``-D`` deletes the key).
_ROW_KIND = "_ROW_KIND"
_TARGET_ROW = "__paimon_target_row"
_SOURCE_ROW = "__paimon_source_row"
_MATCHED = "__paimon_matched"
_ACTION = "__paimon_action"
_KEY = "__paimon_old_key_"
#: The new values of an UPDATE or MERGE, by the target's column position.
_VALUE_PREFIX = "__paimon_v"


def run(catalog: Catalog, statement: exp.Expr) -> DataFrame:
    """Run a DML statement on its Paimon target; an empty DataFrame, as Spark returns."""
    target = _target_node(statement)
    name = resolve(catalog, target) if target is not None else None
    if name is None:
        # The target is Spark's (e.g. INSERT INTO a Spark table SELECT ... FROM a Paimon table):
        # Spark runs it, the Paimon tables read by the planned read.
        rewrite(catalog, statement, skip=frozenset({id(target)})).dataframe(catalog.spark).collect()
        return empty_result(catalog)
    if name.system is not None:
        raise SqlError(f"{type(statement).__name__.upper()} of the system table {name} is not possible: "
                       "system tables are read-only")
    if not catalog.has_table(name.identifier):
        raise catalog.not_found(str(name))
    assert target is not None
    _refuse_unread_clauses(statement, name)
    _defaults(catalog, statement, name)
    if isinstance(statement, exp.Insert):
        _insert(catalog, statement, target, name)
    elif isinstance(statement, exp.TruncateTable):
        # a partition that does not exist: nothing to truncate (as Paimon's connector, whole specs)
        truncate(catalog, name, statement.args.get("partition"), missing_ok=True)
    elif isinstance(statement, (exp.Delete, exp.Update, exp.Merge)):
        # ``db.t.c`` (the target, or a MERGE's source table, named without an alias) is ``t.c``,
        # as each is read under that alias (Paimon's connector takes both spellings).
        using = statement.args.get("using")
        unqualify_database(statement, [target], catalog.current_database)
        if isinstance(using, exp.Table):  # Spark's table or Paimon's: only as spelled
            unqualify_database(statement, [using])
        with change_statement():  # its target read is consumed before it returns
            if isinstance(statement, exp.Delete):
                _delete(catalog, statement, target, name)
            elif isinstance(statement, exp.Update):
                _update(catalog, statement, target, name)
            else:
                _merge(catalog, statement, target, name)
    else:  # pragma: no cover - sql.execute routes only the kinds above here
        raise SqlError(f"{type(statement).__name__.upper()} is not a DML statement")
    return empty_result(catalog)


#: The parts of each statement kind this module carries out (sqlglot's argument keys; a hint is
#: advisory and stays with the statement's query). Any other clause Spark's parser took is refused:
#: ``INSERT INTO t REPLACE WHERE ...`` ran as a plain INSERT before session 32, and ``TRUNCATE
#: TABLE t PARTITION (...)`` truncated the whole table.
_HANDLED: dict[type[exp.Expr], set[str]] = {
    exp.Insert: {"this", "expression", "overwrite", "by_name", WITH_ARG, "source", "hint"},
    exp.Delete: {"this", "where", "hint"},
    exp.Update: {"this", "expressions", "where", "hint"},
    exp.Merge: {"this", "using", "on", "whens"},
    exp.TruncateTable: {"expressions", "partition"},
}


def _refuse_unread_clauses(statement: exp.Expr, name: TableName) -> None:
    handled = _HANDLED.get(type(statement))
    unread = sorted(k for k, v in statement.args.items() if v and handled is not None and k not in handled)
    if unread:
        kind = type(statement).__name__.upper()
        what = {"where": "REPLACE WHERE (use INSERT OVERWRITE ... PARTITION (...))"}.get(unread[0], unread[0])
        raise SqlError(f"{kind} on {name}: the clause {what} is not supported")
    if isinstance(statement, exp.TruncateTable) and len(statement.expressions) != 1:
        raise SqlError("TRUNCATE TABLE: one table per statement")


def _is_default(node: exp.Expr | None) -> bool:
    """Spark's ``DEFAULT`` keyword as a value (a backticked `DEFAULT` is a column of that name)."""
    if isinstance(node, exp.Var):
        return node.name.upper() == "DEFAULT"
    return isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier) \
        and not node.this.quoted and node.name.upper() == "DEFAULT"


def _defaults(catalog: Catalog, statement: exp.Expr, name: TableName) -> None:
    """``DEFAULT`` in an INSERT's VALUES, an UPDATE's or a MERGE's SET and a MERGE's INSERT VALUES
    becomes NULL: a Paimon column's default, as Paimon's connector writes it (Spark's own VALUES
    refused the keyword outside an INSERT: UNRESOLVED_COLUMN `DEFAULT`). A table with
    ``fields.<column>.default-value`` options is refused instead of writing a NULL there."""
    values: list[exp.Expr] = []
    if isinstance(statement, exp.Insert) and isinstance(statement.expression, exp.Values):
        values += [e for row in statement.expression.expressions for e in row.expressions]
    assignments = list(statement.expressions) if isinstance(statement, exp.Update) else []
    if isinstance(statement, exp.Merge):
        for when in statement.find_all(exp.When):
            then = when.args.get("then")
            if isinstance(then, exp.Update):
                assignments += then.expressions
            elif isinstance(then, exp.Insert) and isinstance(then.expression, exp.Tuple):
                values += then.expression.expressions
    found = [v for v in values if _is_default(v)] + \
        [a.expression for a in assignments if isinstance(a, exp.EQ) and _is_default(a.expression)]
    if not found:
        return
    from paimon_index.table.catalog import open_table
    from paimon_index.table.paimon import table_options

    opened = open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    options = table_options(opened)
    defined = sorted(k for k in options if k.startswith("fields.") and k.endswith(".default-value"))
    if defined:
        raise SqlError(f"DEFAULT on {name}, whose columns have default values ({', '.join(defined)}), is "
                       "not supported: write the values")
    for node in found:
        node.replace(exp.Null())


def _target_node(statement: exp.Expr) -> exp.Table | None:
    node = statement.expressions[0] if isinstance(statement, exp.TruncateTable) else statement.this
    if isinstance(node, exp.Schema):
        node = node.this
    return node if isinstance(node, exp.Table) else None


def empty_result(catalog: Catalog) -> DataFrame:
    """A statement's result: no column, no row (``range(0).select()``: 20-25 ms in a warm session,
    where ``createDataFrame([], StructType([]))`` took 45-55 ms)."""
    return catalog.spark.range(0).select()


# ------------------------------------------------------------------------------------------------
# The target table
# ------------------------------------------------------------------------------------------------
@dataclass
class _Target:
    name: TableName
    schema: StructType  # the table's columns as Spark types
    primary_keys: list[str]
    partition_keys: list[str]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    @property
    def lower_names(self) -> frozenset[str]:
        return frozenset(n.lower() for n in self.names)

    def column(self, name: str, what: str) -> str:
        """The table's spelling of column ``name`` (case-insensitive, as Spark resolves it)."""
        lower = {n.lower(): n for n in self.names}
        found = lower.get(name.lower())
        if found is None:
            raise SqlError(f"{what}: table {self.name} has no column {name!r} (columns: {self.names})")
        return found


def _where(catalog: Catalog) -> dict[str, Any]:
    return {"warehouse": catalog.warehouse, "catalog_options": catalog.catalog_options}


def _open(catalog: Catalog, name: TableName) -> _Target:
    from paimon_index.spark import jobs
    from paimon_index.table.api import open_table

    opened = open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    paimon = opened.paimon_table
    schema = jobs.spark_schema(catalog.spark, name.identifier, **_where(catalog))
    return _Target(name, schema, list(paimon.primary_keys or []) if opened.is_primary_key_table else [],
                   list(paimon.partition_keys or []))


def _store_assigned(df: DataFrame, target: _Target) -> DataFrame:
    """``df``'s first columns, by position, stored into the table's columns as Spark's ``INSERT``
    stores them (ANSI store assignment, :func:`paimon_index.spark.assign.store_assigned`: refusals
    on the driver, overflow failing the job, each naming the column); columns after them
    (``_ROW_KIND``) kept."""
    from paimon_index.spark.assign import store_assigned

    width = len(target.schema.fields)
    if len(df.columns) < width:
        raise SqlError(f"{len(df.columns)} values for the {width} columns of {target.name}")
    extra = df.columns[width:]
    if all(c.startswith(_VALUE_PREFIX) for c in df.columns[:width]):
        # An UPDATE's or MERGE's values under the statement's own names: an error names the column
        # the value is assigned to, never `__paimon_v1`.
        df = df.toDF(*target.names, *extra)
    return store_assigned(df, target.schema, by_name=False, table=str(target.name), passthrough=extra)


def _placeholder() -> str:
    return f"__paimon_target_{uuid.uuid4().hex[:8]}"


def _run_query(catalog: Catalog, query: exp.Expr, bound: dict[str, DataFrame] | None = None) -> DataFrame:
    """``query`` (built here around the target) as a DataFrame: every Paimon reference in it read
    by the planned read, the placeholders of ``bound`` bound to their DataFrames."""
    bound = bound or {}
    skip = frozenset(id(t) for t in relations(query) if t.name in bound)
    rewritten = rewrite(catalog, query, skip=skip)
    for placeholder, df in bound.items():
        rewritten = rewritten.bind(placeholder, df)
    return rewritten.dataframe(catalog.spark)


def _relation(placeholder: str, alias: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(placeholder), alias=exp.TableAlias(this=exp.to_identifier(alias)))


def _col(alias: str, name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True), table=exp.to_identifier(alias))


def _alias_of(table: exp.Table) -> str:
    return table.alias or table.name


def _check_key_assignment(target: _Target, columns: list[str], what: str) -> None:
    changed = sorted(set(columns) & set(target.primary_keys))
    if changed:
        raise InvalidOptionError(f"{what} of {target.name} cannot change primary-key columns {changed}: "
                                 "delete the rows and insert them with their new keys")


# ------------------------------------------------------------------------------------------------
# INSERT INTO / OVERWRITE, TRUNCATE
# ------------------------------------------------------------------------------------------------
def _static_partition(catalog: Catalog, node: exp.Table, target: _Target) -> dict[str, exp.Expr]:
    """``PARTITION (p = 'x', q)``: the static columns and their value expressions (``q`` is dynamic)."""
    spec = node.args.get("partition")
    static: dict[str, exp.Expr] = {}
    for item in spec.expressions if spec is not None else []:
        column = item.this if isinstance(item, exp.EQ) else item
        name = target.column(column.name, "PARTITION clause")
        if name not in target.partition_keys:
            raise SqlError(f"PARTITION clause: {name!r} is not a partition column of {target.name} "
                           f"(partition columns: {target.partition_keys})")
        if isinstance(item, exp.EQ):
            static[name] = item.expression
    return static


def _insert_rows(catalog: Catalog, statement: exp.Insert, node: exp.Table, target: _Target,
                 static: dict[str, exp.Expr]) -> DataFrame:
    """The INSERT's query aligned to the table's columns (Spark's rules) and stored into its types."""
    from pyspark.sql import functions as F

    source = statement.expression
    if source is None:  # INSERT INTO t TABLE s: sqlglot keeps the table as the insert's source
        source = statement.args.get("source")
        if not isinstance(source, exp.Table):
            raise SqlError(f"INSERT into {target.name}: no query or VALUES to insert")
        source = exp.select(exp.Star()).from_(source.copy())
    query = source.copy()
    # WITH ... INSERT INTO t SELECT ...: the CTEs are the query's (sqlglot 30 keys them "with_")
    with_ = statement.args.get(WITH_ARG)
    if with_ is not None and isinstance(query, exp.Query):
        query.set(WITH_ARG, with_.copy())
    rows = _run_query(catalog, query)
    listed = statement.this.expressions if isinstance(statement.this, exp.Schema) else None
    what = f"INSERT into {target.name}"
    values: dict[str, Column] = {}
    positional = rows.toDF(*[f"__paimon_q{i}" for i in range(len(rows.columns))])
    if statement.args.get("by_name"):
        for i, column in enumerate(rows.columns):
            name = target.column(column, what)
            if name in values:
                raise SqlError(f"{what}: the query gives column {name!r} twice")
            values[name] = F.col(f"__paimon_q{i}")
    else:
        if listed is not None:
            wanted = [target.column(c.name, what) for c in listed]
            if len(set(wanted)) != len(wanted):
                raise SqlError(f"{what}: the column list names a column twice: {wanted}")
        else:
            wanted = [n for n in target.names if n not in static]
        if len(wanted) != len(rows.columns):
            raise SqlError(f"{what}: the query gives {len(rows.columns)} columns for the {len(wanted)} "
                           f"columns {wanted} (INSERT_COLUMN_ARITY_MISMATCH)")
        values = {name: F.col(f"__paimon_q{i}") for i, name in enumerate(wanted)}
    for name, value in static.items():
        if name in values:
            raise SqlError(f"{what}: partition column {name!r} is both static and in the query")
        values[name] = F.expr(value.sql(DIALECT))
    chosen = positional.select(*[values.get(n, F.lit(None)).alias(n) for n in target.names])
    return _store_assigned(chosen, target)


def _insert(catalog: Catalog, statement: exp.Insert, node: exp.Table, name: TableName) -> None:
    from paimon_index.spark import jobs

    target = _open(catalog, name)
    static = _static_partition(catalog, node, target)
    rows = _insert_rows(catalog, statement, node, target, static)
    if not statement.args.get("overwrite"):
        jobs.write(rows, name.identifier, "append", **_where(catalog))
        return
    dynamic = str(catalog.spark.conf.get(PARTITION_OVERWRITE_MODE, "static")).lower() == "dynamic"
    partition = _partition_values(catalog, static, target) if static and not dynamic else None
    jobs.overwrite(rows, name.identifier, partition, dynamic=dynamic, **_where(catalog))


def _partition_values(catalog: Catalog, static: dict[str, exp.Expr], target: _Target) -> dict[str, Any]:
    """A static partition spec's values, each evaluated by Spark and cast to its column's type."""
    evaluated = catalog.spark.createDataFrame([(1,)], "x int").select(
        *[_store_value(v, target, n) for n, v in static.items()]).first()
    assert evaluated is not None
    return {n: evaluated[i] for i, n in enumerate(static)}


def partition_spec(catalog: Catalog, name: TableName, spec: exp.Expr, target: _Target | None = None
                   ) -> dict[str, Any]:
    """``PARTITION (p = v, ...)`` of the table ``name``: each partition column (as the table spells
    it) and its value, evaluated by Spark and cast to the column's type.

    Raises:
        SqlError: a column that is no partition column, one without a value, none at all.
    """
    target = target or _open(catalog, name)
    static: dict[str, exp.Expr] = {}
    for item in spec.expressions:
        if not isinstance(item, exp.EQ):
            raise SqlError(f"PARTITION ({spec.sql(DIALECT)}) of {name}: give every column a value (p = 'x')")
        column = target.column(item.this.name, "PARTITION clause")
        if column not in target.partition_keys:
            raise SqlError(f"PARTITION clause: {column!r} is not a partition column of {name} "
                           f"(partition columns: {target.partition_keys})")
        static[column] = item.expression
    if not static:
        raise SqlError(f"PARTITION () of {name} names no partition column")
    return _partition_values(catalog, static, target)


def partition_matches(catalog: Catalog, name: TableName, partition: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The latest snapshot's partitions (their values in key order) that have these values (some of
    the keys: every partition with those)."""
    from paimon_index.table.catalog import open_table
    from paimon_index.table.system import partition_values

    table = open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    keys = list(table.partition_keys or [])

    def same(a: Any, b: Any) -> bool:
        return bool(a == b) or str(a) == str(b)

    return [values for values in partition_values(table)
            if all(same(values[keys.index(k)], v) for k, v in partition.items())]


def _store_value(value: exp.Expr, target: _Target, name: str) -> Column:
    from pyspark.sql import functions as F

    return F.expr(value.sql(DIALECT)).cast(target.schema[name].dataType).alias(name)


def truncate(catalog: Catalog, name: TableName, spec: exp.Expr | None, *, missing_ok: bool = False) -> None:
    """``TRUNCATE TABLE t [PARTITION (p = v, ...)]`` (also ``ALTER TABLE t DROP PARTITION``): an
    overwrite with no rows, of the whole table or of the partitions matching the spec (a spec of
    some partition columns matches every partition with those values), in one snapshot. A spec
    matching no partition is refused before anything is written (``missing_ok``: nothing happens),
    as Paimon's connector refuses it. Before session 32 the PARTITION clause was ignored: the whole
    table was truncated."""
    from paimon_index.spark import jobs

    target = _open(catalog, name)
    partition = None
    if spec is not None:
        partition = partition_spec(catalog, name, spec, target)
        if not partition_matches(catalog, name, partition):
            if missing_ok:
                return
            shown = ", ".join(f"{k} = {v!r}" for k, v in partition.items())
            raise SqlError(f"PARTITION ({shown}) of {name}: no such partition (PARTITIONS_NOT_FOUND); "
                           f"its partitions: SHOW PARTITIONS {name}")
    empty = catalog.spark.createDataFrame([], target.schema)
    jobs.overwrite(empty, name.identifier, partition, dynamic=False, **_where(catalog))


# ------------------------------------------------------------------------------------------------
# DELETE / UPDATE
# ------------------------------------------------------------------------------------------------
def _target_read(catalog: Catalog, name: TableName, own: OwnConjuncts | None = None
                 ) -> tuple[DataFrame, object, int]:
    """A primary-key table's rows, the snapshot the change commits on, and how many rows the
    statement takes at least (0: unknown). The rows are the merged rows of the latest snapshot,
    planned like any read (:func:`paimon_index.spark.merge_on_read.merged_frame`) and pruned by
    ``own`` (the statement's conjuncts on the table's own columns; the rows its plan proves are the
    statement's when they are its whole condition). A merge-on-read table (no deletion vectors)
    commits exactly on the snapshot read; in deletion-vectors mode the upsert plans on the latest
    one itself (its lookup marks the vectors there)."""
    from paimon_index.spark import merge_on_read
    from paimon_index.table.api import open_table
    from paimon_index.table.pk.merge_on_read import LATEST

    opened = open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    # Deletion-vectors tables were read whole through the source, the condition left to Spark: a
    # 2M-row table's 332-row DELETE spent 0.6 of its 0.9 s there; the planned read takes the
    # bitmap's rows on the driver.
    read, snapshot, proven = merge_on_read.merged_frame(
        catalog.spark, catalog.warehouse, name.identifier, catalog.catalog_options,
        where=None if own is None else own.text, opened=opened)
    planned = snapshot if merge_on_read.is_merge_on_read(opened.paimon_table) else LATEST
    return read, planned, proven if own is not None and own.whole else 0


def _where_of(statement: exp.Expr) -> exp.Expr | None:
    where = statement.args.get("where")
    return where.this.copy() if where is not None else None


def _selected(catalog: Catalog, node: exp.Table, target_df: DataFrame, columns: list[exp.Expr],
              where: exp.Expr | None) -> DataFrame:
    """``SELECT columns FROM <target_df> AS <the target's alias> WHERE where`` run by Spark."""
    placeholder = _placeholder()
    query = exp.select(*columns).from_(_relation(placeholder, _alias_of(node)))
    if where is not None:
        query = query.where(where)
    return _run_query(catalog, query, {placeholder: target_df})


def _metadata(alias: str) -> list[exp.Expr]:
    return [_col(alias, c) for c in METADATA_COLUMNS]


def _delete(catalog: Catalog, statement: exp.Delete, node: exp.Table, name: TableName) -> None:
    from pyspark.sql import functions as F

    from paimon_index.spark import jobs

    target = _open(catalog, name)
    alias, where = _alias_of(node), _where_of(statement)
    own = own_conjuncts(where, alias, target.lower_names)
    if target.primary_keys:
        read, planned, at_least = _target_read(catalog, name, own)
        rows = _selected(catalog, node, read, [_col(alias, c) for c in target.names], where)
        jobs.upsert_changes(catalog.spark, rows.withColumn(_ROW_KIND, F.lit("-D")), name.identifier,
                            operation="delete", planned=planned, rows_at_least=at_least, **_where(catalog))
        return

    def build(pinned: DataFrame) -> tuple[DataFrame | None, DataFrame | None]:
        return _selected(catalog, node, pinned, _metadata(alias), where), None

    jobs.change_matched(catalog.spark, name.identifier, build, operation="delete",
                        prune=own.text, **_where(catalog))


def _assignments(target: _Target, items: list[exp.Expr], what: str) -> dict[str, exp.Expr]:
    """``SET a = e, ...`` as the table's columns and their expressions."""
    assigned: dict[str, exp.Expr] = {}
    for item in items:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise SqlError(f"{what}: cannot read the assignment {item.sql(DIALECT)}")
        column = target.column(item.this.name, what)
        if column in assigned:
            raise SqlError(f"{what}: column {column!r} is assigned twice")
        assigned[column] = item.expression.copy()
    return assigned


def _update(catalog: Catalog, statement: exp.Update, node: exp.Table, name: TableName) -> None:
    from pyspark.sql import functions as F

    from paimon_index.spark import jobs

    target = _open(catalog, name)
    alias, where = _alias_of(node), _where_of(statement)
    own = own_conjuncts(where, alias, target.lower_names)
    what = f"UPDATE of {name}"
    assigned = _assignments(target, statement.expressions, what)
    _check_key_assignment(target, list(assigned), "UPDATE")
    values: list[exp.Expr] = [exp.alias_(assigned[n], f"{_VALUE_PREFIX}{i}") if n in assigned else
                              exp.alias_(_col(alias, n), f"{_VALUE_PREFIX}{i}")
                              for i, n in enumerate(target.names)]
    value_names = [F.col(f"{_VALUE_PREFIX}{i}") for i in range(len(target.names))]
    if target.primary_keys:
        read, planned, at_least = _target_read(catalog, name, own)
        rows = _selected(catalog, node, read, values, where)
        jobs.upsert_changes(catalog.spark, _store_assigned(rows, target), name.identifier,
                            operation="update", planned=planned, rows_at_least=at_least, **_where(catalog))
        return

    def build(pinned: DataFrame) -> tuple[DataFrame | None, DataFrame | None]:
        matched = _selected(catalog, node, pinned, [*values, *_metadata(alias)], where)
        return matched.select(*METADATA_COLUMNS), _store_assigned(matched.select(*value_names), target)

    jobs.change_matched(catalog.spark, name.identifier, build, operation="update",
                        prune=own.text, **_where(catalog))


# ------------------------------------------------------------------------------------------------
# MERGE INTO
# ------------------------------------------------------------------------------------------------
@dataclass
class _Clause:
    kind: str  # "matched", "not matched", "not matched by source"
    condition: exp.Expr | None
    action: str  # "update", "delete", "insert"
    values: dict[str, exp.Expr]  # column -> expression (update: the assigned ones; insert: all given)


def _clauses(statement: exp.Merge, target: _Target, source_alias: str) -> list[_Clause]:
    whens = statement.args.get("whens")
    clauses: list[_Clause] = []
    what = f"MERGE INTO {target.name}"
    for when in whens.expressions if whens is not None else []:
        matched, by_source = bool(when.args.get("matched")), bool(when.args.get("source"))
        kind = "matched" if matched else ("not matched by source" if by_source else "not matched")
        then = when.args.get("then")
        condition = when.args.get("condition")
        condition = condition.copy() if condition is not None else None
        if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            if kind == "not matched":
                raise SqlError(f"{what}: WHEN NOT MATCHED cannot DELETE (there is no target row)")
            clauses.append(_Clause(kind, condition, "delete", {}))
        elif isinstance(then, exp.Update):
            if kind == "not matched":
                raise SqlError(f"{what}: WHEN NOT MATCHED cannot UPDATE (there is no target row)")
            if len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star):
                if kind != "matched":
                    raise SqlError(f"{what}: UPDATE SET * needs a source row (WHEN MATCHED)")
                values: dict[str, exp.Expr] = {n: _col(source_alias, n) for n in target.names}
            else:
                values = _assignments(target, then.expressions, what)
            clauses.append(_Clause(kind, condition, "update", values))
        elif isinstance(then, exp.Insert):
            if kind != "not matched":
                raise SqlError(f"{what}: INSERT is only possible WHEN NOT MATCHED")
            if isinstance(then.this, exp.Star):
                values = {n: _col(source_alias, n) for n in target.names}
            else:
                columns = [target.column(c.name, what) for c in then.this.expressions]
                given = list(then.expression.expressions)
                if len(columns) != len(given):
                    raise SqlError(f"{what}: INSERT lists {len(columns)} columns and {len(given)} values")
                values = {c: v.copy() for c, v in zip(columns, given, strict=True)}
            clauses.append(_Clause(kind, condition, "insert", values))
        else:
            raise SqlError(f"{what}: cannot read the clause {when.sql(DIALECT)}")
    return clauses


def _guard(clause: _Clause, target_alias: str, source_alias: str) -> exp.Expr:
    target_row = exp.column(_TARGET_ROW, table=target_alias)
    source_row = exp.column(_SOURCE_ROW, table=source_alias)
    if clause.kind == "matched":
        base: exp.Expr = exp.and_(exp.Not(this=exp.Is(this=target_row, expression=exp.Null())),
                                  exp.Not(this=exp.Is(this=source_row, expression=exp.Null())))
    elif clause.kind == "not matched":
        base = exp.Is(this=target_row, expression=exp.Null())
    else:
        base = exp.Is(this=source_row, expression=exp.Null())
    return base if clause.condition is None else exp.and_(base, exp.Paren(this=clause.condition))


def _case(guards: list[exp.Expr], values: list[exp.Expr | None]) -> exp.Expr:
    case = exp.Case()
    for guard, value in zip(guards, values, strict=True):
        case = case.when(guard.copy(), value.copy() if value is not None else exp.Null())
    return case


def _merge(catalog: Catalog, statement: exp.Merge, node: exp.Table, name: TableName) -> None:
    from pyspark.sql import functions as F

    from paimon_index.spark import jobs

    target = _open(catalog, name)
    using = statement.args["using"]
    target_alias = _alias_of(node)
    source_alias = using.alias or (using.name if isinstance(using, exp.Table) else "__paimon_source")
    clauses = _clauses(statement, target, source_alias)
    kinds = {c.kind for c in clauses}
    join = {(True, True): "FULL OUTER", (True, False): "RIGHT OUTER", (False, True): "LEFT OUTER",
            (False, False): "INNER"}[("not matched" in kinds, "not matched by source" in kinds)]
    guards = [_guard(c, target_alias, source_alias) for c in clauses]
    action = exp.Case()
    for i, guard in enumerate(guards, start=1):
        action = action.when(guard.copy(), exp.Literal.number(i))
    action = action.else_(exp.Literal.number(0))
    columns: list[exp.Expr] = [exp.alias_(action, _ACTION)]
    for j, column in enumerate(target.names):
        per_clause: list[exp.Expr | None] = []
        for clause in clauses:
            if clause.action == "delete":
                per_clause.append(_col(target_alias, column))
            elif clause.action == "update":
                per_clause.append(clause.values.get(column, _col(target_alias, column)))
            else:
                per_clause.append(clause.values.get(column))
        value = _case(guards, per_clause) if clauses else exp.Null()
        columns.append(exp.alias_(value, f"{_VALUE_PREFIX}{j}"))
    matched_flag = exp.and_(exp.Not(this=exp.Is(this=exp.column(_TARGET_ROW, table=target_alias),
                                                 expression=exp.Null())),
                            exp.Not(this=exp.Is(this=exp.column(_SOURCE_ROW, table=source_alias),
                                                expression=exp.Null())))
    columns.append(exp.alias_(matched_flag, _MATCHED))
    identity = [FILE_PATH_COLUMN, ROW_INDEX_COLUMN] if not target.primary_keys else \
        [f"{_KEY}{i}" for i in range(len(target.primary_keys))]
    if target.primary_keys:
        columns += [exp.alias_(_col(target_alias, k), f"{_KEY}{i}")
                    for i, k in enumerate(target.primary_keys)]
    else:
        columns += _metadata(target_alias)
    source_query = using.copy()
    source_query.set("alias", None)
    inner_source = exp.select(exp.Star(), exp.alias_(exp.true(), _SOURCE_ROW)).from_(
        source_query if isinstance(source_query, exp.Table)
        else exp.Subquery(this=source_query.this, alias=exp.TableAlias(this=exp.to_identifier("__paimon_s"))))
    placeholder = _placeholder()
    inner_target = exp.select(exp.Star(), exp.alias_(exp.true(), _TARGET_ROW)).from_(
        _relation(placeholder, "__paimon_t"))
    query = exp.select(*columns).from_(exp.Subquery(this=inner_target,
                                                    alias=exp.TableAlias(this=exp.to_identifier(target_alias))))
    source = exp.Subquery(this=inner_source, alias=exp.TableAlias(this=exp.to_identifier(source_alias)))
    query = query.join(source, on=statement.args["on"].copy(), join_type=join)
    value_names = [F.col(f"{_VALUE_PREFIX}{j}") for j in range(len(target.names))]
    by_action = {i: c.action for i, c in enumerate(clauses, start=1)}
    deleting = [i for i, a in by_action.items() if a in ("update", "delete")]
    writing = [i for i, a in by_action.items() if a in ("update", "insert")]
    removing = [i for i, a in by_action.items() if a == "delete"]
    check_cardinality = "matched" in kinds

    def joined(target_df: DataFrame) -> DataFrame:
        merged = _run_query(catalog, query, {placeholder: target_df})
        if check_cardinality:
            _check_cardinality(merged, identity, target.name)
        return merged.where(F.col(_ACTION) != 0)

    if target.primary_keys:
        read, planned, _ = _target_read(catalog, name)
        changes = joined(read)
        _check_keys_kept(changes, target, [i for i, c in enumerate(clauses, start=1) if c.action == "update"])
        # Row kinds as Paimon's connector writes a MERGE: -D deletes, +U updates, +I inserts (they
        # show in an 'input' changelog; the data is the same for +U and +I).
        updating = [i for i, a in by_action.items() if a == "update"]
        kind_column = F.lit("+I")
        if updating:
            kind_column = F.when(F.col(_ACTION).isin(updating), F.lit("+U")).otherwise(kind_column)
        if removing:
            kind_column = F.when(F.col(_ACTION).isin(removing), F.lit("-D")).otherwise(kind_column)
        rows = _store_assigned(changes.select(*value_names, kind_column.alias(_ROW_KIND)), target)
        jobs.upsert_changes(catalog.spark, rows, name.identifier, operation="merge", planned=planned,
                            **_where(catalog))
        return

    def build(pinned: DataFrame) -> tuple[DataFrame | None, DataFrame | None]:
        changes = joined(pinned)
        marked = changes.where(F.col(_ACTION).isin(deleting)).select(*METADATA_COLUMNS) if deleting else None
        written = _store_assigned(changes.where(F.col(_ACTION).isin(writing)).select(*value_names),
                                  target) if writing else None
        return marked, written

    jobs.change_matched(catalog.spark, name.identifier, build, operation="merge", **_where(catalog))


def _check_cardinality(merged: DataFrame, identity: list[str], table: TableName) -> None:
    """Paimon's (and Spark's) rule: a target row matched by two source rows is an error."""
    from pyspark.sql import functions as F

    pairs = merged.where(F.col(_MATCHED)).groupBy(*identity).count()
    twice = pairs.where(F.col("count") > 1).limit(1).collect()
    if twice:
        raise SqlError(f"MERGE INTO {table}: a target row is matched by more than one source row "
                       "(MERGE_CARDINALITY_VIOLATION); make the ON condition match at most one source row "
                       "per target row")


def _check_keys_kept(changes: DataFrame, target: _Target, updating: list[int]) -> None:
    from pyspark.sql import functions as F

    if not updating:
        return
    moved = None
    for i, key in enumerate(target.primary_keys):
        j = target.names.index(key)
        differs = ~F.col(f"{_VALUE_PREFIX}{j}").eqNullSafe(F.col(f"{_KEY}{i}"))
        moved = differs if moved is None else (moved | differs)
    assert moved is not None
    if changes.where(F.col(_ACTION).isin(updating) & moved).limit(1).count():
        raise InvalidOptionError(f"MERGE INTO {target.name}: an UPDATE would change a primary-key column "
                                 f"{target.primary_keys}; delete the row and insert it with its new key")

