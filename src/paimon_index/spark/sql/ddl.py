"""DDL and catalog statements over Paimon tables: CREATE/DROP/ALTER TABLE, databases, SHOW, DESCRIBE, USE.

Each statement does what Paimon's Spark connector (``SparkCatalog``) does with it and answers with
the columns and rows it answers with (checked against ``paimon-sql.sh``):

=================================================  =============================================
statement                                          result columns
=================================================  =============================================
``CREATE TABLE [IF NOT EXISTS] t (cols)``          none
``[PARTITIONED BY (..)] [COMMENT '..']``
``[TBLPROPERTIES ('primary-key' = 'a,b', ..)]``
``CREATE TABLE t [TBLPROPERTIES ..] AS SELECT ..``  none (the rows are written in one snapshot)
``DROP TABLE [IF EXISTS] t``                       none
``ALTER TABLE t SET / UNSET TBLPROPERTIES``        none
``ALTER TABLE t ADD COLUMN(S) / RENAME COLUMN /``  none
``DROP COLUMN / ALTER COLUMN c TYPE ty``
``ALTER TABLE t RENAME TO u``                      none
``CREATE / DROP DATABASE [..] [CASCADE]``          none
``USE db`` / ``USE paimon.db``                     none
``SHOW DATABASES`` (``NAMESPACES``, ``SCHEMAS``)    namespace
``SHOW TABLES [IN db] [LIKE 'p']``                 namespace, tableName, isTemporary
``SHOW CREATE TABLE t``                            createtab_stmt
``DESCRIBE [EXTENDED] t``                          col_name, data_type, comment
``SHOW TBLPROPERTIES t [('key')]``                 key, value
``SHOW PARTITIONS t``                              partition
=================================================  =============================================

As in the connector, ``'primary-key'`` is no table option (it becomes the primary key; primary-key
columns become NOT NULL), ``COMMENT`` is the table's comment, and Spark's ``owner`` property (the
user name) is stored as an option. A statement on a name that is not a Paimon table goes to
``spark.sql`` unchanged.
"""

from __future__ import annotations

import fnmatch
import getpass
from typing import TYPE_CHECKING, Any

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from paimon_index.errors import (
    SqlError,
    TableExistsError,
    TableNotFoundError,
)
from paimon_index.spark.sql.names import (
    DIALECT,
    PAIMON_CATALOG,
    SPARK_CATALOG,
    TableName,
    parse,
    resolve_parts,
    spark_tokens,
)
from paimon_index.table import catalog as _catalog
from paimon_index.types import MAX_LENGTH, DataType, Field, TypeRoot, parse_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.sql.names import Catalog


__all__ = ["command", "describe_column", "run"]

#: The table property Paimon's connector reads the primary key from (it is not kept as an option).
PRIMARY_KEY = "primary-key"
#: Spark's reserved table properties the connector does not list in SHOW TBLPROPERTIES / DESCRIBE.
_OWNER = "owner"
_RESERVED = frozenset({_OWNER, "provider", "location", "comment", "external", "is_managed_location"})
#: The current database after the current one is dropped (Paimon's default database).
_DEFAULT_DATABASE = "default"
#: Paimon's provider name (``USING paimon``).
_PROVIDER = "paimon"


# ------------------------------------------------------------------------------------------------
# Results
# ------------------------------------------------------------------------------------------------
def _frame(catalog: Catalog, columns: list[tuple[str, str]], rows: list[tuple[Any, ...]]) -> DataFrame:
    """A DataFrame of ``rows`` with ``columns`` (name, Spark DDL type)."""
    schema = ", ".join(f"`{name}` {dtype}" for name, dtype in columns)
    return catalog.spark.createDataFrame([list(r) for r in rows], schema)


def _empty(catalog: Catalog) -> DataFrame:
    """The empty result of a DDL statement (as ``spark.sql`` answers one)."""
    from pyspark.sql.types import StructType

    return catalog.spark.createDataFrame([], StructType([]))


# ------------------------------------------------------------------------------------------------
# Names
# ------------------------------------------------------------------------------------------------
def _table_name(catalog: Catalog, table: exp.Table, *, create: bool = False,
                system_ok: bool = False) -> TableName | None:
    """The Paimon table ``table`` names, or None when it is Spark's; a system table's name only
    with ``system_ok`` (statements that list columns)."""
    from paimon_index.spark.sql.names import table_parts

    parts = table_parts(table)
    name = resolve_parts(catalog, parts, must_exist=not create)
    if name is not None and name.system is not None and not system_ok:
        raise SqlError(f"{name} is a system table (read-only); DDL takes the table {name.identifier}")
    return name


def _existing(catalog: Catalog, name: TableName, shown: str) -> TableName:
    """``name`` when it exists, else TableNotFoundError naming it and how to create it."""
    if not catalog.has_table(name.identifier):
        raise catalog.not_found(shown)
    return name


def _database_parts(node: exp.Expr) -> list[str]:
    """The name parts of a database in CREATE/DROP DATABASE, USE (``db`` or ``paimon.db``)."""
    from paimon_index.spark.sql.names import table_parts

    if isinstance(node, exp.Table):
        return table_parts(node)
    return [node.name] if node is not None and node.name else []


def _database(parts: list[str]) -> str | None:
    """The warehouse database ``parts`` names (``db`` / ``paimon.db``), or None when it is Spark's."""
    if len(parts) == 1 and parts[0].lower() not in (SPARK_CATALOG, "global_temp"):
        return parts[0]
    if len(parts) == 2 and parts[0].lower() == PAIMON_CATALOG:
        return parts[1]
    return None


# ------------------------------------------------------------------------------------------------
# Statements sqlglot parses
# ------------------------------------------------------------------------------------------------
def run(catalog: Catalog, statement: exp.Expr, text: str) -> DataFrame:
    """A parsed DDL statement (``CREATE``, ``DROP``, ``ALTER``, ``DESCRIBE``, ``USE``)."""
    try:
        if isinstance(statement, exp.Create):
            return _create(catalog, statement, text)
        if isinstance(statement, exp.Drop):
            return _drop(catalog, statement, text)
        if isinstance(statement, exp.Alter):
            return _alter(catalog, statement, text)
        if isinstance(statement, exp.Describe):
            return _describe(catalog, statement, text)
        if isinstance(statement, exp.Use):
            return _use(catalog, statement, text)
    except _catalog_error_types() as e:  # pypaimon's own, e.g. a concurrent DROP
        raise SqlError(f"{text.strip()[:200]}: {e}") from e
    return catalog.spark.sql(text)


def _catalog_error_types() -> tuple[type[BaseException], ...]:
    from paimon_index.table.paimon import CatalogException

    return (CatalogException,)


def _properties(node: exp.Expr | None) -> dict[str, str]:
    """``TBLPROPERTIES ('k' = 'v', ...)`` of a statement's Properties node."""
    out: dict[str, str] = {}
    if node is None:
        return out
    for prop in node.find_all(exp.Property):
        if type(prop) is not exp.Property:  # PARTITIONED BY, COMMENT, USING: their own kinds
            continue
        key = prop.this.name if isinstance(prop.this, exp.Expr) else str(prop.this)
        value = prop.args.get("value")
        out[key] = value.name if isinstance(value, exp.Literal) else (value.sql(DIALECT) if value else "")
    return out


def _create(catalog: Catalog, statement: exp.Create, text: str) -> DataFrame:
    kind = str(statement.args.get("kind") or "").upper()
    if kind in ("DATABASE", "SCHEMA", "NAMESPACE"):
        target = statement.this
        parts = (
            _database_parts(target)
            if not (isinstance(target, exp.Table) and not target.name)
            else [p for p in (target.catalog, target.db) if p]
        )
        database = _database(parts)
        if database is None:
            return catalog.spark.sql(text)
        _catalog.create_database(
            catalog.warehouse,
            database,
            exist_ok=bool(statement.args.get("exists")),
            catalog_options=catalog.catalog_options,
        )
        return _empty(catalog)
    if kind != "TABLE":
        return _spark_or_refuse(catalog, statement, text)
    schema = statement.this if isinstance(statement.this, exp.Schema) else None
    table = schema.this if schema is not None else statement.this
    if not isinstance(table, exp.Table):
        return catalog.spark.sql(text)
    name = _table_name(catalog, table, create=True)
    if name is None:
        _refuse_missing_database(catalog, table)
        return catalog.spark.sql(text)
    if statement.args.get("replace"):
        raise SqlError(f"CREATE OR REPLACE TABLE {name} is not supported; DROP TABLE {name} first "
                       "(Paimon's connector replaces the schema and overwrites the rows in one snapshot)")
    props = statement.args.get("properties")
    options = _properties(props)
    # PARTITIONED BY, COMMENT, USING arrive as their own property kinds.
    partition_keys: list[str] = []
    comment: str | None = None
    if props is not None:
        for prop in props.expressions:
            if isinstance(prop, exp.PartitionedByProperty):
                part = prop.this
                keys = part.expressions if isinstance(part, exp.Schema | exp.Tuple) else [part]
                odd = [k.sql(DIALECT) for k in keys
                       if not isinstance(k, exp.Column | exp.Identifier | exp.ColumnDef)]
                if odd:  # bucket(4, a), days(ts): Paimon partitions by column values only
                    raise SqlError(f"CREATE TABLE {name}: partition transform {odd[0]} is not supported "
                                   "(PARTITIONED BY (column, ...); buckets: TBLPROPERTIES ('bucket' = 'n'))")
                partition_keys = [k.name for k in keys]
            elif isinstance(prop, exp.SchemaCommentProperty):
                comment = prop.this.name
            elif isinstance(prop, exp.LocationProperty):
                raise SqlError(
                    f"CREATE TABLE {name}: {prop.sql(DIALECT)} is not supported; Paimon tables "
                    "live in the warehouse (drop the clause)"
                )
            elif isinstance(prop, exp.FileFormatProperty):
                if not _provider_clause(prop):
                    raise SqlError(f"CREATE TABLE {name}: {prop.sql(DIALECT)} is not supported; Paimon "
                                   "tables are Paimon's format (drop the clause)")
            elif type(prop) is not exp.Property and not isinstance(prop, exp.OptionsProperty):
                # Never dropped: CLUSTERED BY ... INTO n BUCKETS made a table without buckets, and
                # EXTERNAL a managed one. Paimon's connector refuses them as well.
                hint = " (buckets: TBLPROPERTIES ('bucket' = 'n', 'bucket-key' = 'c'))" \
                    if isinstance(prop, exp.ClusteredByProperty) else ""
                raise SqlError(f"CREATE TABLE {name}: {prop.sql(DIALECT)[:80]} is not supported{hint}")
    provider = _provider(text, props)
    if provider is not None and provider.lower() != _PROVIDER:
        raise SqlError(
            f"CREATE TABLE {name} USING {provider}: the paimon catalog creates Paimon tables "
            "only (USING paimon, or no USING)"
        )
    for key in ("provider", "location", "comment", "partitioned_by"):
        options.pop(key, None)
    pk_text = options.pop(PRIMARY_KEY, None)
    primary_keys = [k.strip() for k in pk_text.split(",")] if pk_text else []
    options.setdefault(_OWNER, getpass.getuser())
    query = statement.args.get("expression")
    exists = catalog.has_table(name.identifier)
    if exists:
        if statement.args.get("exists"):
            return _empty(catalog)
        raise TableExistsError(
            f"table {name} already exists; use CREATE TABLE IF NOT EXISTS, or DROP TABLE {name} first"
        )
    if query is not None:
        return _create_as_select(catalog, name, query, partition_keys, primary_keys, options, comment)
    if schema is None or not schema.expressions:
        raise SqlError(
            f"CREATE TABLE {name} needs columns: CREATE TABLE {name} (id BIGINT, ...) or "
            "CREATE TABLE ... AS SELECT"
        )
    columns = []
    for col in schema.expressions:
        if not isinstance(col, exp.ColumnDef):
            raise SqlError(f"CREATE TABLE {name}: {col.sql(DIALECT)} is not a column definition")
        columns.append(_column_ddl(col, not_null=col.name in primary_keys))
    _create_table(catalog, name, ", ".join(columns), partition_keys, primary_keys, options, comment)
    return _empty(catalog)


def _provider_clause(prop: exp.FileFormatProperty) -> bool:
    """Whether ``prop`` is a ``USING <provider>`` clause (checked by :func:`_provider`), not Hive's
    ``STORED AS <format>``."""
    return not prop.sql(DIALECT).upper().startswith("STORED")


def _refuse_missing_database(catalog: Catalog, table: exp.Table) -> None:
    """``CREATE TABLE db.t`` where ``db`` is neither a warehouse database nor Spark's: say how to
    create it (Spark would report its own catalog's missing schema)."""
    from paimon_index.spark.sql.names import table_parts

    parts = table_parts(table)
    if len(parts) == 2 and parts[0].lower() not in (SPARK_CATALOG, "global_temp") and \
            not catalog.spark.catalog.databaseExists(parts[0]):
        raise TableNotFoundError(f"database {parts[0]} not found in warehouse {catalog.warehouse}; create it "
                                 f"with CREATE DATABASE {parts[0]} (then CREATE TABLE {'.'.join(parts)} ...)")


def _provider(text: str, props: exp.Expr | None) -> str | None:
    """The ``USING x`` provider of a CREATE TABLE."""
    if props is not None:
        for prop in props.expressions:
            if isinstance(prop, exp.FileFormatProperty):
                return prop.this.name if isinstance(prop.this, exp.Expr) else str(prop.this)
    del text
    return None


def _column_ddl(col: exp.ColumnDef, *, not_null: bool) -> str:
    """A column definition as DDL text (Spark's dialect), NOT NULL added for a primary-key column."""
    col = col.copy()
    if not_null and not any(
        isinstance(c.args.get("kind"), exp.NotNullColumnConstraint) for c in col.args.get("constraints") or []
    ):
        col.append("constraints", exp.ColumnConstraint(kind=exp.NotNullColumnConstraint()))
    return col.sql(DIALECT)


def _create_table(
    catalog: Catalog,
    name: TableName,
    schema: Any,
    partition_keys: list[str],
    primary_keys: list[str],
    options: dict[str, str],
    comment: str | None,
) -> None:
    """Create ``name`` (partition keys in a primary key become NOT NULL as in Paimon's schema)."""
    from paimon_index.errors import InvalidOptionError

    try:
        _catalog.create_table(
            catalog.warehouse,
            name.identifier,
            schema,
            partition_keys=partition_keys,
            primary_keys=primary_keys,
            options=options,
            comment=comment,
            catalog_options=catalog.catalog_options,
        )
    except InvalidOptionError as e:
        raise SqlError(f"CREATE TABLE {name}: {e}") from e


def _create_as_select(
    catalog: Catalog,
    name: TableName,
    query: exp.Expr,
    partition_keys: list[str],
    primary_keys: list[str],
    options: dict[str, str],
    comment: str | None,
) -> DataFrame:
    """CTAS: the table gets the query's schema, then the query's rows (one snapshot)."""
    from pyspark.sql.types import StructField, StructType

    from paimon_index.spark import jobs
    from paimon_index.spark.sql.names import names_paimon_table
    from paimon_index.spark.sql.query import rewrite

    if names_paimon_table(catalog, query):
        df = rewrite(catalog, query).dataframe(catalog.spark)
    else:
        df = catalog.spark.sql(query.sql(DIALECT))
    # Spark creates a CTAS table with the query's schema made nullable (``asNullable``); Paimon
    # then makes the primary-key columns NOT NULL.
    schema = StructType(
        [
            StructField(f.name, _as_nullable(f.dataType), f.name not in primary_keys, f.metadata)
            for f in df.schema.fields
        ]
    )
    _create_table(catalog, name, schema, partition_keys, primary_keys, options, comment)
    try:
        jobs.write(
            df,
            name.identifier,
            "append",
            warehouse=catalog.warehouse,
            catalog_options=catalog.catalog_options,
        )
    except BaseException:
        # Nothing half-done: the table the statement created goes with its failed write.
        _catalog.drop_table(
            catalog.warehouse, name.identifier, missing_ok=True, catalog_options=catalog.catalog_options
        )
        raise
    return _empty(catalog)


def _as_nullable(dtype: Any) -> Any:
    """Spark's ``DataType.asNullable``: every nested field, element and value nullable."""
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    if isinstance(dtype, StructType):
        fields = [StructField(f.name, _as_nullable(f.dataType), True, f.metadata) for f in dtype.fields]
        return StructType(fields)
    if isinstance(dtype, ArrayType):
        return ArrayType(_as_nullable(dtype.elementType), True)
    if isinstance(dtype, MapType):
        return MapType(_as_nullable(dtype.keyType), _as_nullable(dtype.valueType), True)
    return dtype


def _spark_or_refuse(catalog: Catalog, statement: exp.Expr, text: str) -> DataFrame:
    from paimon_index.spark.sql.names import names_paimon_table

    if names_paimon_table(catalog, statement):
        raise SqlError(f"{text.strip()[:200]}: not supported on Paimon tables")
    return catalog.spark.sql(text)


def _drop(catalog: Catalog, statement: exp.Drop, text: str) -> DataFrame:
    kind = str(statement.args.get("kind") or "").upper()
    targets = statement.args.get("tables") or [statement.this]
    if kind in ("DATABASE", "SCHEMA", "NAMESPACE"):
        database = _database(_database_parts(targets[0]))
        if database is None:
            return catalog.spark.sql(text)
        spelt = catalog.database_spelling(database) or database
        _catalog.drop_database(
            catalog.warehouse,
            spelt,
            missing_ok=bool(statement.args.get("exists")),
            cascade=bool(statement.args.get("cascade")),
            catalog_options=catalog.catalog_options,
        )
        if catalog.current_database == spelt:
            catalog.current_database = _DEFAULT_DATABASE
        return _empty(catalog)
    if kind != "TABLE" or len(targets) != 1 or not isinstance(targets[0], exp.Table):
        return _spark_or_refuse(catalog, statement, text)
    name = _table_name(catalog, targets[0])
    if name is None:
        return catalog.spark.sql(text)
    _catalog.drop_table(
        catalog.warehouse,
        name.identifier,
        missing_ok=bool(statement.args.get("exists")),
        catalog_options=catalog.catalog_options,
    )
    return _empty(catalog)


def _alter(catalog: Catalog, statement: exp.Alter, text: str) -> DataFrame:
    from paimon_index.table.paimon import SchemaChange

    table = statement.this
    if str(statement.args.get("kind") or "").upper() != "TABLE" or not isinstance(table, exp.Table):
        return _spark_or_refuse(catalog, statement, text)
    name = _table_name(catalog, table)
    if name is None:
        return catalog.spark.sql(text)
    name = _existing(catalog, name, table.sql(DIALECT))
    changes: list[Any] = []
    for action in statement.args.get("actions") or []:
        if isinstance(action, exp.AlterSet):
            options = _properties(action)
            if PRIMARY_KEY in options:
                raise SqlError(
                    f"ALTER TABLE {name}: the primary key cannot be changed (Paimon refuses it); "
                    "create a new table with CREATE TABLE ... AS SELECT"
                )
            _alter_options(catalog, name, options, [])
        elif isinstance(action, exp.AlterRename):
            _rename(catalog, name, action.this)
        elif isinstance(action, exp.ColumnDef):
            changes.append(_add_column(action))
        elif isinstance(action, exp.Schema):
            changes += [_add_column(c) for c in action.expressions if isinstance(c, exp.ColumnDef)]
        elif isinstance(action, exp.RenameColumn):
            changes.append(
                SchemaChange.rename_column(_column(catalog, name, action.this.name), action.args["to"].name)
            )
        elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "COLUMN":
            for col in action.args.get("tables") or []:
                changes.append(SchemaChange.drop_column(_column(catalog, name, col.name)))
        elif isinstance(action, exp.AlterColumn) and action.args.get("dtype") is not None:
            column = _column(catalog, name, action.this.name)
            field = _catalog.paimon_field(f"`{column}` {action.args['dtype'].sql(DIALECT)}")
            changes.append(SchemaChange.update_column_type(column, field.type, keep_nullability=True))
        elif isinstance(action, exp.DropPartition):
            _drop_partitions(catalog, name, action)
        elif isinstance(action, exp.AddPartition):
            pass  # a Paimon partition exists once it holds rows: nothing to add (the connector's no-op)
        elif isinstance(action, exp.AlterColumn) and action.args.get("drop") and \
                action.args.get("allow_null"):
            # DROP NOT NULL (Paimon, as the connector, makes a column nullable; never the reverse)
            column = _column(catalog, name, action.this.name)
            changes.append(SchemaChange.update_column_nullability(column, True))
        elif isinstance(action, exp.AlterColumn) and action.args.get("comment") is not None:
            column = _column(catalog, name, action.this.name)
            changes.append(SchemaChange.update_column_comment(column, action.args["comment"].name))
        else:
            raise SqlError(
                f"ALTER TABLE {name} {action.sql(DIALECT)}: not supported; supported: SET/UNSET "
                "TBLPROPERTIES, ADD COLUMN(S), RENAME COLUMN, DROP COLUMN, ALTER COLUMN c TYPE t, "
                "RENAME TO"
            )
    if changes:
        _catalog.alter_columns(
            catalog.warehouse, name.identifier, changes, catalog_options=catalog.catalog_options
        )
    return _empty(catalog)


def _drop_partitions(catalog: Catalog, name: TableName, action: exp.DropPartition) -> None:
    """``ALTER TABLE t DROP [IF EXISTS] PARTITION (p = v, ...)``: the matching partitions' rows
    removed in one snapshot, as ``TRUNCATE TABLE t PARTITION (...)``; one spec per statement (two
    would be two snapshots). A spec matching no partition is refused unless ``IF EXISTS``."""
    from paimon_index.spark.sql.dml import truncate

    specs = action.expressions
    if len(specs) != 1:
        raise SqlError(f"ALTER TABLE {name} DROP PARTITION: one PARTITION (...) per statement (each is "
                       "its own snapshot); run one statement per partition")
    truncate(catalog, name, specs[0], missing_ok=bool(action.args.get("exists")))


def _column(catalog: Catalog, name: TableName, column: str) -> str:
    """The table's spelling of ``column`` (case-insensitive), or SqlError naming the columns."""
    fields = [
        f.name
        for f in _catalog.open_table(
            catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options
        ).fields
    ]
    if column in fields:
        return column
    same = [f for f in fields if f.lower() == column.lower()]
    if len(same) == 1:
        return same[0]
    raise SqlError(f"column {column!r} not found in {name}; columns: {', '.join(fields)}")


def _add_column(col: exp.ColumnDef) -> Any:
    """``ADD COLUMN c type [COMMENT ..] [FIRST | AFTER x]``."""
    from paimon_index.table.paimon import Move, SchemaChange

    position = col.args.get("position")
    move = None
    if position is not None:
        col = col.copy()
        col.set("position", None)
        where = str(position.args.get("position") or "").upper()
        if where == "FIRST":
            move = Move.first(col.name)
        elif where == "AFTER" and position.this is not None:
            move = Move.after(col.name, position.this.name)
        else:
            raise SqlError(f"ADD COLUMN {col.name} {position.sql(DIALECT)}: use FIRST or AFTER <column>")

    if any(
        isinstance(c.args.get("kind"), exp.NotNullColumnConstraint) for c in col.args.get("constraints") or []
    ):
        raise SqlError(
            f"ADD COLUMN {col.name} ... NOT NULL: existing rows have no value for it; add it "
            "nullable (as Paimon requires)"
        )
    field = _catalog.paimon_field(col.sql(DIALECT))
    return SchemaChange.add_column(field.name, field.type, field.description, move)


def _alter_options(catalog: Catalog, name: TableName, set_options: dict[str, str], remove: list[str]) -> None:
    from paimon_index.errors import InvalidOptionError

    try:
        _catalog.alter_table_options(
            catalog.warehouse,
            name.identifier,
            set_options=set_options,
            remove=remove,
            catalog_options=catalog.catalog_options,
        )
    except InvalidOptionError as e:
        raise SqlError(f"ALTER TABLE {name}: {e}") from e


def _rename(catalog: Catalog, name: TableName, target: exp.Expr) -> None:
    if not isinstance(target, exp.Table):
        raise SqlError(f"ALTER TABLE {name} RENAME TO needs a table name")
    from paimon_index.spark.sql.names import table_parts

    parts = table_parts(target)
    if len(parts) == 3 and parts[0].lower() != PAIMON_CATALOG:
        raise SqlError(f"ALTER TABLE {name} RENAME TO {'.'.join(parts)}: a Paimon table stays in its catalog")
    database = parts[-2] if len(parts) >= 2 else name.database
    _catalog.rename_table(
        catalog.warehouse, name.identifier, f"{database}.{parts[-1]}", catalog_options=catalog.catalog_options
    )


def _warehouse_database(catalog: Catalog, node: exp.Expr) -> str | None:
    """The warehouse's spelling of the database ``node`` names (``db`` / ``paimon.db``, USE and
    DESCRIBE DATABASE), or None when the name is Spark's.

    Raises:
        TableNotFoundError: ``paimon.db`` names a database the warehouse does not have.
    """
    parts = _database_parts(node)
    database = _database(parts)
    spelt = None if database is None else catalog.database_spelling(database)
    if spelt is None and len(parts) == 2 and parts[0].lower() == PAIMON_CATALOG:
        raise TableNotFoundError(
            f"database {database} not found in {catalog.warehouse}; create it with "
            f"CREATE DATABASE {database}"
        )
    return spelt


def _use(catalog: Catalog, statement: exp.Use, text: str) -> DataFrame:
    spelt = _warehouse_database(catalog, statement.this)
    if spelt is None:
        used = catalog.spark.sql(text)
        catalog.uses_spark_database = True
        return used
    catalog.current_database = spelt
    catalog.uses_spark_database = False
    return _empty(catalog)


# ------------------------------------------------------------------------------------------------
# DESCRIBE, SHOW
# ------------------------------------------------------------------------------------------------
def spark_type(t: DataType) -> str:
    """Spark's ``simpleString`` of the Spark type Paimon's connector maps ``t`` to."""
    r = t.root
    simple = {
        TypeRoot.BOOLEAN: "boolean",
        TypeRoot.TINYINT: "tinyint",
        TypeRoot.SMALLINT: "smallint",
        TypeRoot.INT: "int",
        TypeRoot.BIGINT: "bigint",
        TypeRoot.FLOAT: "float",
        TypeRoot.DOUBLE: "double",
        TypeRoot.DATE: "date",
        TypeRoot.TIMESTAMP: "timestamp_ntz",
        TypeRoot.TIMESTAMP_LTZ: "timestamp",
        TypeRoot.BINARY: "binary",
        TypeRoot.VARBINARY: "binary",
        TypeRoot.TIME: "bigint",
    }
    if r in simple:
        return simple[r]
    if r is TypeRoot.DECIMAL:
        return f"decimal({t.precision},{t.scale})"
    if r is TypeRoot.CHAR:
        return f"char({t.length})"
    if r is TypeRoot.VARCHAR:
        return "string" if t.length == MAX_LENGTH else f"varchar({t.length})"
    if r is TypeRoot.ARRAY:
        assert t.element is not None
        return f"array<{spark_type(t.element)}>"
    if r is TypeRoot.MULTISET:
        assert t.element is not None
        return f"map<{spark_type(t.element)},int>"
    if r is TypeRoot.MAP:
        assert t.key is not None and t.value is not None
        return f"map<{spark_type(t.key)},{spark_type(t.value)}>"
    if r is TypeRoot.ROW:
        return "struct<" + ",".join(f"{f.name}:{spark_type(f.type)}" for f in t.fields) + ">"
    return str(t).lower()


def _field_type(field: Any) -> DataType:
    """Our type of a pypaimon field."""
    return _paimon_type(field.type)


def _paimon_type(t: Any) -> DataType:
    """Our type of a pypaimon type object (walked, so ROW field names need no quoting)."""
    nullable = bool(t.nullable)
    atomic = getattr(t, "type", None)
    if isinstance(atomic, str):
        return parse_type(atomic).with_nullable(nullable)
    if hasattr(t, "key") and hasattr(t, "value"):
        return DataType(TypeRoot.MAP, nullable=nullable, key=_paimon_type(t.key), value=_paimon_type(t.value))
    if hasattr(t, "element"):
        root = TypeRoot.MULTISET if type(t).__name__ == "MultisetType" else TypeRoot.ARRAY
        return DataType(root, nullable=nullable, element=_paimon_type(t.element))
    if hasattr(t, "fields"):
        fields = tuple(Field(f.name, _paimon_type(f.type), f.description) for f in t.fields)
        return DataType(TypeRoot.ROW, nullable=nullable, fields=fields)
    raise SqlError(f"Paimon type {t} has no Spark type paimon-index describes")


def _spark_ddl_type(t: DataType) -> str:
    """The type as Spark's ``DataType.sql`` spells it (SHOW CREATE TABLE): ``BIGINT``,
    ``ARRAY<INT>``, ``MAP<STRING, INT>``, ``STRUCT<a: INT NOT NULL, b: STRING>``."""
    r = t.root
    if r is TypeRoot.ARRAY:
        assert t.element is not None
        return f"ARRAY<{_spark_ddl_type(t.element)}>"
    if r is TypeRoot.MAP:
        assert t.key is not None and t.value is not None
        return f"MAP<{_spark_ddl_type(t.key)}, {_spark_ddl_type(t.value)}>"
    if r is TypeRoot.ROW:
        parts = []
        for f in t.fields:
            part = f"{_quote(f.name)}: {_spark_ddl_type(f.type)}"
            if not f.type.nullable:
                part += " NOT NULL"
            if f.comment:
                part += f" COMMENT {_literal(f.comment)}"
            parts.append(part)
        return "STRUCT<" + ", ".join(parts) + ">"
    return spark_type(t).upper()


class _Info:
    """What DESCRIBE / SHOW read of one table."""

    def __init__(self, catalog: Catalog, name: TableName) -> None:
        self.name = name
        self.table = _catalog.open_table(
            catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options
        )
        schema = self.table.table_schema
        self.fields = list(self.table.fields)
        self.partition_keys = list(self.table.partition_keys or [])
        self.primary_keys = list(self.table.primary_keys or [])
        self.comment = getattr(schema, "comment", None)
        self.options = dict(self.table.options.options.to_map())
        self.location = str(self.table.table_path)

    def properties(self) -> dict[str, str]:
        """The Spark table's properties as the connector lists them (sorted; no reserved ones)."""
        props = {k: v for k, v in self.options.items() if k not in _RESERVED}
        props["path"] = self.location
        if self.primary_keys:
            props[PRIMARY_KEY] = ",".join(self.primary_keys)
        return dict(sorted(props.items()))


def _describe_database(catalog: Catalog, statement: exp.Describe, text: str) -> DataFrame:
    """``DESCRIBE {DATABASE | SCHEMA | NAMESPACE} [EXTENDED] db`` of a warehouse database: the
    rows Paimon's connector answers (its EXTENDED adds an empty ``Properties``)."""
    spelt = _warehouse_database(catalog, statement.this)
    if spelt is None:
        return catalog.spark.sql(text)
    rows = [("Catalog Name", PAIMON_CATALOG), ("Namespace Name", spelt)]
    if str(statement.args.get("style") or "").upper() in ("EXTENDED", "FORMATTED"):
        rows.append(("Properties", ""))
    return _frame(catalog, [("info_name", "string"), ("info_value", "string")], rows)


def _describe(catalog: Catalog, statement: exp.Describe, text: str) -> DataFrame:
    target = statement.this
    if str(statement.args.get("kind") or "").upper() in ("DATABASE", "SCHEMA", "NAMESPACE"):
        return _describe_database(catalog, statement, text)
    if not isinstance(target, exp.Table):
        return _spark_or_refuse(catalog, statement, text)
    name = _table_name(catalog, target, system_ok=True)
    if name is None:
        return catalog.spark.sql(text)
    name = _existing(catalog, name, target.sql(DIALECT))
    if statement.args.get("partition") is not None:
        raise SqlError(f"DESCRIBE {name} PARTITION (...) is not supported; use SHOW PARTITIONS {name}")
    style = str(statement.args.get("style") or "").upper()
    if name.system is not None:
        if style in ("EXTENDED", "FORMATTED"):
            raise SqlError(f"DESCRIBE {style} of the system table {name} is not supported; DESCRIBE {name} "
                           f"lists its columns, DESCRIBE {style} {name.identifier} the table's details")
        return _frame(catalog, [("col_name", "string"), ("data_type", "string"), ("comment", "string")],
                      _system_columns(catalog, name))
    info = _Info(catalog, name)
    rows: list[tuple[Any, ...]] = []
    types = {f.name: _field_type(f) for f in info.fields}
    for f in info.fields:
        rows.append((f.name, spark_type(types[f.name]), f.description))
    if info.partition_keys:
        rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
        rows += [
            (k, spark_type(types[k]), next(f.description for f in info.fields if f.name == k))
            for k in info.partition_keys
        ]
    if style in ("EXTENDED", "FORMATTED"):
        props = info.properties()
        rows += [
            ("", "", ""),
            ("# Detailed Table Information", "", ""),
            ("Name", name.identifier, ""),
            ("Type", "MANAGED", ""),
        ]
        if info.comment:
            rows.append(("Comment", info.comment, ""))
        rows += [("Location", info.location, ""), ("Provider", _PROVIDER, "")]
        if _OWNER in info.options:
            rows.append(("Owner", info.options[_OWNER], ""))
        rows.append(("Table Properties", "[" + ",".join(f"{k}={v}" for k, v in props.items()) + "]", ""))
        not_null = [
            (f.name, spark_type(types[f.name]), "NOT NULL") for f in info.fields if not types[f.name].nullable
        ]
        if not_null:
            rows += [("# Column Not Null", "", ""), *not_null]
    return _frame(catalog, [("col_name", "string"), ("data_type", "string"), ("comment", "string")], rows)


def _system_columns(catalog: Catalog, name: TableName) -> list[tuple[str, str, str | None]]:
    """(name, Spark type, comment) of each column of the system table ``name``, as its SELECT
    returns them: ``$ro`` the table's columns, ``$audit_log`` ``rowkind`` and the table's, the
    others their DataFrame's."""
    from paimon_index.spark.sql import system_tables
    from paimon_index.table.system import AUDIT_LOG, DATA_SYSTEM_TABLES, ROW_KIND

    if name.system in DATA_SYSTEM_TABLES:
        fields = _Info(catalog, TableName(name.database, name.table)).fields
        own = [(f.name, spark_type(_field_type(f)), f.description) for f in fields]
        return [(ROW_KIND, "string", None), *own] if name.system == AUDIT_LOG else own
    frame = system_tables.frame(catalog, name)
    return [(f.name, f.dataType.simpleString(), None) for f in frame.schema.fields]


def _tokens(rest: str) -> list[Any]:
    """``rest`` as Spark's tokens (a backticked name is one; sqlglot's generic tokenizer split
    it at each backtick, and ``SHOW TABLES IN `db``` failed)."""
    try:
        return spark_tokens(rest)
    except TokenError as e:
        raise SqlError(f"cannot read {rest[:200]!r}: {e}") from e


def _words(toks: list[Any]) -> list[str]:
    return [t.text.upper() for t in toks]


def _name_at(catalog: Catalog, rest: str, toks: list[Any], start: int, *,
             system_ok: bool = False) -> tuple[TableName | None, int, str]:
    """The table name starting at token ``start``: (resolved or None, next token, its text); a
    system table's only with ``system_ok``."""
    end = start
    if end < len(toks) and toks[end].token_type is not TokenType.DOT:
        end += 1  # the first part (a keyword-like name such as `default` is a part too)
        while end + 1 < len(toks) and toks[end].token_type is TokenType.DOT:
            end += 2
    if end == start:
        raise SqlError(f"expected a table name in {rest[:200]!r}")
    text = rest[toks[start].start : toks[end - 1].end + 1]
    try:
        table = exp.to_table(text, dialect=DIALECT)
    except (ParseError, ValueError) as e:
        raise SqlError(f"table name {text!r} does not parse: {e}") from e
    name = _table_name(catalog, table, system_ok=system_ok)
    return name, end, text


def command(catalog: Catalog, keyword: str, rest: str, text: str) -> DataFrame:
    """A statement sqlglot keeps as raw text (``SHOW ...``, ``ALTER TABLE ... UNSET``)."""
    toks = _tokens(rest)
    words = _words(toks)
    if keyword == "SHOW" and words:
        if words[0] in ("DATABASES", "NAMESPACES", "SCHEMAS"):
            return _show_databases(catalog, rest, toks, words, text)
        if words in (["CURRENT", "NAMESPACE"], ["CURRENT", "SCHEMA"], ["CURRENT", "DATABASE"]) \
                and not catalog.uses_spark_database:
            # One-part names resolve in the noun's current database first (USE db): as the connector
            return _frame(catalog, [("catalog", "string"), ("namespace", "string")],
                          [(PAIMON_CATALOG, catalog.current_database)])
        if words[0] == "TABLES":
            return _show_tables(catalog, rest, toks, words, text)
        if words[:2] == ["CREATE", "TABLE"]:
            name, end, shown = _name_at(catalog, rest, toks, 2)
            if name is None:
                return catalog.spark.sql(text)
            if end < len(toks):
                raise SqlError(
                    f"SHOW CREATE TABLE {shown} {rest[toks[end].start :]}: not supported "
                    "(SHOW CREATE TABLE t only)"
                )
            return _show_create(catalog, _existing(catalog, name, shown))
        if words[0] == "TBLPROPERTIES":
            name, end, shown = _name_at(catalog, rest, toks, 1)
            if name is None:
                return catalog.spark.sql(text)
            props = _Info(catalog, _existing(catalog, name, shown)).properties()
            keys = [t.text for t in toks[end:] if t.token_type is TokenType.STRING]
            if keys:
                rows = [
                    (k, props.get(k, f"Table {name.identifier} does not have property: {k}")) for k in keys
                ]
            else:
                rows = list(props.items())
            return _frame(catalog, [("key", "string"), ("value", "string")], rows)
        if words[0] == "COLUMNS" and words[1:2] in (["IN"], ["FROM"]):
            return _show_columns(catalog, rest, toks, words, text)
        if words[0] == "PARTITIONS":
            name, end, shown = _name_at(catalog, rest, toks, 1)
            if name is None:
                return catalog.spark.sql(text)
            spec = None
            if end < len(toks):  # PARTITION (p = v, ...): the partitions with those values
                spelled = rest[toks[end].start :]
                parsed = parse(f"TRUNCATE TABLE t {spelled}")
                spec = parsed.args.get("partition") if isinstance(parsed, exp.TruncateTable) else None
                if spec is None:
                    raise SqlError(f"SHOW PARTITIONS {shown} {spelled[:100]}: expected PARTITION (column = "
                                   "value, ...)")
            return _show_partitions(catalog, _existing(catalog, name, shown), spec)
    moved = _move_column(catalog, rest, toks, words, text) if keyword == "ALTER" else None
    if moved is not None:
        return moved
    if keyword == "ALTER" and words[:1] == ["TABLE"] and "UNSET" in words:
        name, end, shown = _name_at(catalog, rest, toks, 1)
        if name is None:
            return catalog.spark.sql(text)
        name = _existing(catalog, name, shown)
        tail = words[end:]
        if tail[:2] != ["UNSET", "TBLPROPERTIES"]:
            raise SqlError(f"ALTER TABLE {shown} {rest[toks[end].start :][:100]}: not supported")
        keys = [t.text for t in toks[end:] if t.token_type is TokenType.STRING]
        if_exists = tail[2:4] == ["IF", "EXISTS"]
        current = _Info(catalog, name).options
        missing = [k for k in keys if k not in current]
        if missing and not if_exists:
            raise SqlError(
                f"ALTER TABLE {name} UNSET TBLPROPERTIES: {', '.join(missing)} not set on the table "
                "(use UNSET TBLPROPERTIES IF EXISTS)"
            )
        if PRIMARY_KEY in keys:
            raise SqlError(f"ALTER TABLE {name}: the primary key cannot be removed (Paimon refuses it)")
        _alter_options(catalog, name, {}, [k for k in keys if k in current])
        return _empty(catalog)
    if keyword == "REPLACE" and words[:1] == ["TABLE"]:
        name, _, shown = _name_at(catalog, rest, toks, 1)
        if name is not None:
            raise SqlError(f"REPLACE TABLE {shown} is not supported on Paimon tables; DROP TABLE {shown} "
                           "first, then CREATE TABLE (Paimon's connector replaces the schema and overwrites "
                           "the rows in one snapshot)")
    if keyword in ("SHOW", "ALTER", "DESC", "DESCRIBE", "TRUNCATE", "ANALYZE", "REFRESH", "MSCK", "COMMENT"):
        for i, t in enumerate(toks):
            if t.token_type in (TokenType.VAR, TokenType.IDENTIFIER):
                try:
                    name, _, _ = _name_at(catalog, rest, toks, i)
                except SqlError:
                    continue
                if name is not None and catalog.has_table(name.identifier):
                    raise SqlError(f"{keyword} {rest[:200]}: not supported on the Paimon table {name}")
    return catalog.spark.sql(text)


def _move_column(catalog: Catalog, rest: str, toks: list[Any], words: list[str],
                 text: str) -> DataFrame | None:
    """``ALTER TABLE t {ALTER | CHANGE} [COLUMN] c {FIRST | AFTER x}`` (text sqlglot keeps raw):
    Paimon's column move. None when the text is not that."""
    from paimon_index.table.paimon import Move, SchemaChange

    if words[:1] != ["TABLE"] or not (words[-1:] == ["FIRST"] or words[-2:-1] == ["AFTER"]):
        return None
    name, end, shown = _name_at(catalog, rest, toks, 1)
    tail = words[end:]
    at = end + 1 + (tail[1:2] == ["COLUMN"])  # the moved column's token
    position = words[at + 1:]
    if not tail or tail[0] not in ("ALTER", "CHANGE") or not (position == ["FIRST"] or (
            len(position) == 2 and position[0] == "AFTER")):
        return None
    if name is None:
        return catalog.spark.sql(text)
    name = _existing(catalog, name, shown)
    column = _column(catalog, name, toks[at].text)
    if position == ["FIRST"]:
        move = Move.first(column)
    else:
        move = Move.after(column, _column(catalog, name, toks[at + 2].text))
    _catalog.alter_columns(catalog.warehouse, name.identifier, [SchemaChange.update_column_position(move)],
                           catalog_options=catalog.catalog_options)
    return _empty(catalog)


def describe_column(catalog: Catalog, text: str) -> DataFrame | None:
    """``DESC[RIBE] [TABLE] [EXTENDED|FORMATTED] t col`` of a Paimon table (text sqlglot does not
    parse): the column's name, type and comment, as Paimon's connector answers (EXTENDED adds no
    statistics there either). None when ``text`` is not that or names no Paimon table."""
    try:  # Spark's tokenizer: a backticked column name is one identifier
        toks = spark_tokens(text)
    except TokenError:
        return None
    words = _words(toks)
    if not words or words[0] not in ("DESC", "DESCRIBE"):
        return None
    start = 1 + (words[1:2] == ["TABLE"])
    start += words[start : start + 1] in (["EXTENDED"], ["FORMATTED"])
    if start >= len(toks):
        return None
    try:
        name, end, shown = _name_at(catalog, text, toks, start)
    except SqlError:
        return None
    if name is None or end >= len(toks):
        return None
    info = _Info(catalog, _existing(catalog, name, shown))
    spelled = text[toks[end].start :].strip().rstrip(";").strip()
    if end + 1 != len(toks) or toks[end].token_type not in (TokenType.VAR, TokenType.IDENTIFIER):
        raise SqlError(f"DESCRIBE {shown} {spelled}: only a top-level column can be described")
    wanted = toks[end].text
    field = next((f for f in info.fields if f.name == wanted), None) or \
        next((f for f in info.fields if f.name.lower() == wanted.lower()), None)
    if field is None:
        raise SqlError(f"DESCRIBE {shown}: no column {wanted!r} (UNRESOLVED_COLUMN); its columns: "
                       f"{[f.name for f in info.fields]}")
    rows = [("col_name", field.name), ("data_type", spark_type(_field_type(field))),
            ("comment", field.description if field.description is not None else "NULL")]
    return _frame(catalog, [("info_name", "string"), ("info_value", "string")], rows)


def _show_columns(catalog: Catalog, rest: str, toks: list[Any], words: list[str], text: str) -> DataFrame:
    """``SHOW COLUMNS (IN|FROM) t [(IN|FROM) db]``: one row per column, as Paimon's connector lists
    them (its column is named ``column``)."""
    name, end, shown = _name_at(catalog, rest, toks, 2, system_ok=True)
    if end < len(toks):
        if words[end] not in ("IN", "FROM") or end + 1 >= len(toks):
            raise SqlError(f"SHOW COLUMNS {rest[:200]}: expected IN <database> after the table name")
        database, after, _ = _name_at(catalog, rest, toks, end + 1)
        if after < len(toks):
            raise SqlError(f"SHOW COLUMNS {rest[:200]}: unexpected text after the database name")
        spelled = rest[toks[end + 1].start : toks[after - 1].end + 1]
        qualified = f"{spelled}.{shown}" if "." not in shown else None
        if qualified is None:
            raise SqlError(f"SHOW COLUMNS {rest[:200]}: the table {shown} names its database already")
        name, _, shown = _name_at(catalog, qualified, _tokens(qualified), 0, system_ok=True)
        del database
    if name is None:
        return catalog.spark.sql(text)
    name = _existing(catalog, name, shown)
    if name.system is not None:
        return _frame(catalog, [("column", "string")], [(c,) for c, _, _ in _system_columns(catalog, name)])
    info = _Info(catalog, name)
    return _frame(catalog, [("column", "string")], [(f.name,) for f in info.fields])


def _show_databases(catalog: Catalog, rest: str, toks: list[Any], words: list[str], text: str) -> DataFrame:
    del rest
    if len(words) > 1 and words[1] in ("IN", "FROM"):
        return catalog.spark.sql(text)
    names = _catalog.database_names(catalog.warehouse, catalog.catalog_options)
    pattern = _like(words, toks)
    if pattern is not None:
        names = [n for n in names if _matches(n, pattern)]
    return _frame(catalog, [("namespace", "string")], [(n,) for n in names])


def _like(words: list[str], toks: list[Any]) -> str | None:
    """The LIKE pattern of a SHOW statement (the last string literal), if any."""
    if "LIKE" not in words:
        return None
    strings = [t.text for t in toks if t.token_type is TokenType.STRING]
    return strings[-1] if strings else None


def _matches(name: str, pattern: str) -> bool:
    """Spark's SHOW ... LIKE: ``*`` any, ``|`` alternatives, case-insensitive."""
    return any(fnmatch.fnmatchcase(name.lower(), p.strip().lower()) for p in pattern.split("|"))


def _show_tables(catalog: Catalog, rest: str, toks: list[Any], words: list[str], text: str) -> DataFrame:
    database = catalog.current_database
    if len(words) > 1 and words[1] in ("IN", "FROM"):
        end = 2
        while end < len(toks) and toks[end].token_type in (
            TokenType.VAR,
            TokenType.DOT,
            TokenType.IDENTIFIER,
        ):
            end += 1
        parts = [t.text for t in toks[2:end] if t.token_type is not TokenType.DOT]
        db = _database(parts)
        if db is None:
            return catalog.spark.sql(text)
        spelt = catalog.database_spelling(db)
        if spelt is None:
            if parts[0].lower() == PAIMON_CATALOG:
                raise TableNotFoundError(f"database {db} not found in {catalog.warehouse}")
            return catalog.spark.sql(text)
        database = spelt
    elif catalog.database_spelling(database) is None:
        database = catalog.current_database
    del rest
    pattern = _like(words, toks)
    tables = _catalog.table_names(catalog.warehouse, database, catalog.catalog_options)
    if pattern is not None:
        tables = [t for t in tables if _matches(t, pattern)]
    # Only the warehouse's tables: Spark lists temporary views for its session catalog only, and
    # Paimon's catalog (the connector's `paimon`) is not one.
    rows: list[tuple[Any, ...]] = [(database, t, False) for t in tables]
    return _frame(
        catalog, [("namespace", "string"), ("tableName", "string"), ("isTemporary", "boolean")], rows
    )


def _quote(name: str) -> str:
    plain = name.replace("_", "").isalnum() and not name[:1].isdigit()
    return name if plain else "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _show_create(catalog: Catalog, name: TableName) -> DataFrame:
    """Spark's SHOW CREATE TABLE text of a Paimon table, as the connector prints it."""
    info = _Info(catalog, name)
    columns = []
    for f in info.fields:
        t = _field_type(f)
        line = f"  {_quote(f.name)} {_spark_ddl_type(t)}"
        if not t.nullable:
            line += " NOT NULL"
        if f.description:
            line += f" COMMENT {_literal(f.description)}"
        columns.append(line)
    out = f"CREATE TABLE {PAIMON_CATALOG}.{_quote(name.database)}.{_quote(name.table)} (\n" + ",\n".join(
        columns
    )
    out += ")\nUSING paimon\n"
    if info.partition_keys:
        out += f"PARTITIONED BY ({', '.join(_quote(k) for k in info.partition_keys)})\n"
    if info.comment:
        out += f"COMMENT {_literal(info.comment)}\n"
    out += f"LOCATION {_literal(info.location)}\n"
    props = info.properties()
    if props:
        out += (
            "TBLPROPERTIES (\n"
            + ",\n".join(f"  {_literal(k)} = {_literal(v)}" for k, v in props.items())
            + ")\n"
        )
    return _frame(catalog, [("createtab_stmt", "string")], [(out,)])


def _show_partitions(catalog: Catalog, name: TableName, spec: exp.Expr | None = None) -> DataFrame:
    """``SHOW PARTITIONS t [PARTITION (p = v, ...)]``: ``k=v/k2=v2`` rows, sorted; with a spec, the
    partitions with those values (some of the keys: every such partition)."""
    from paimon_index.spark.sql.dml import partition_matches, partition_spec
    from paimon_index.table.system import partitions

    table = _catalog.open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)
    if not table.partition_keys:
        raise SqlError(f"SHOW PARTITIONS {name}: the table is not partitioned")
    matched = None if spec is None else partition_matches(catalog, name, partition_spec(catalog, name, spec))
    listed = partitions(table, matched)
    return _frame(catalog, [("partition", "string")], [(p,) for p in listed])
