"""Spark's ANSI store assignment for writes into Paimon tables, on the driver, before any task.

    store_assigned(df, target, by_name=True, case_sensitive=False, table="db.t") -> DataFrame
    target_schema(paimon_table)                                                -> StructType

What Spark's own ``INSERT INTO`` does with ``spark.sql.storeAssignmentPolicy = ANSI`` (its default),
and what Paimon's Spark connector inherits from it (``TableOutputResolver``):

- **Columns are resolved** by name (``jobs.write``, ``INSERT ... BY NAME``; case-insensitive unless
  ``spark.sql.caseSensitive``) or by position (``INSERT INTO t SELECT ...``). A DataFrame column the
  table does not have is an error (Spark: ``INCOMPATIBLE_DATA_FOR_TABLE.EXTRA_COLUMNS``). By name, a
  nullable table column the data does not give is written NULL -- what ``INSERT INTO t BY NAME``
  does through Paimon's own connector (checked with ``paimon-sql.sh``: Paimon's catalog supports
  column defaults, so Spark fills the column) and into a Spark Parquet table; a missing NOT NULL
  column is an error. By position the data must give every column (Spark:
  ``INSERT_COLUMN_ARITY_MISMATCH``).
- **Types** follow ``Cast.canANSIStoreAssign``: the same type, NULL, numeric to numeric, any atomic
  type to STRING, date/timestamp to date/timestamp, and arrays, maps and structs of those. Anything
  else (STRING to INT, BOOLEAN to INT, DOUBLE to DATE ...) is refused before the job starts, naming
  the column, both types and the explicit cast that would make the write legal. (Paimon's connector
  is laxer here: it casts STRING to INT and fails on a malformed value; we follow Spark's rule.)
- **Values** are cast by Spark itself with ``try_cast`` (the ANSI cast's values: widening, DECIMAL
  rounding HALF_UP, timestamps in the session time zone, NaN and infinities into DECIMAL NULL as
  Spark's cast makes them); a value the ANSI cast would fail on (an overflow, NaN into INT) fails
  the job with a message naming the column and the value, as
  Spark's ``CAST_OVERFLOW_IN_TABLE_INSERT`` does, whatever ``spark.sql.ansi.enabled`` says. A NULL
  into a NOT NULL column fails the same way (Paimon's connector: ``NOT_NULL_ASSERT_VIOLATION``;
  a Spark Parquet table keeps no NOT NULL and stores it). CHAR(n) and
  VARCHAR(n) columns get Spark's write-side length check (trailing blanks past n are trimmed, a longer
  value fails; CHAR is padded to n).

Nested NOT NULL fields and elements are not checked here (the top-level columns are).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from paimon_index.errors import DataError
from paimon_index.spark._connect import STORE_REFUSAL_TAG

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType as SparkType
    from pyspark.sql.types import StructField, StructType

__all__ = ["can_store_assign", "nullable", "resolve_columns", "store_assigned", "target_schema"]

#: Spark's session setting for identifier case.
CASE_SENSITIVE = "spark.sql.caseSensitive"
#: Data columns are renamed to this prefix + position while the table's columns are computed.
_POSITION = "__paimon_index_data_"


def target_schema(paimon_table: Any) -> StructType:
    """The table's columns as Spark types, with their nullability; CHAR(n)/VARCHAR(n) kept as
    Spark's ``CharType``/``VarcharType`` (their length is checked on write)."""
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import CharType, StructField, StructType, VarcharType

    from paimon_index.table.catalog import column_types
    from paimon_index.table.paimon import arrow_schema
    from paimon_index.types import MAX_LENGTH, DataType, TypeRoot

    fields = list(paimon_table.fields)
    spark = from_arrow_schema(arrow_schema(fields))
    typed = column_types(fields)
    out = []
    for f, paimon_field in zip(spark.fields, fields, strict=True):
        dtype = typed.get(str(paimon_field.name))
        nullable = bool(paimon_field.type.nullable)
        spark_type: SparkType = f.dataType
        if isinstance(dtype, DataType) and dtype.length is not None and dtype.length < MAX_LENGTH:
            if dtype.root is TypeRoot.CHAR:
                spark_type = CharType(dtype.length)
            elif dtype.root is TypeRoot.VARCHAR:
                spark_type = VarcharType(dtype.length)
        out.append(StructField(f.name, spark_type, nullable))
    return StructType(out)


def nullable(t: SparkType) -> SparkType:
    """``t`` with every nested field, element and value nullable (nested NOT NULL is not checked)."""
    from pyspark.sql import types as T

    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, nullable(f.dataType), True) for f in t.fields])
    if isinstance(t, T.ArrayType):
        return T.ArrayType(nullable(t.elementType), True)
    if isinstance(t, T.MapType):
        return T.MapType(nullable(t.keyType), nullable(t.valueType), True)
    return t


def _case_sensitive(df: DataFrame) -> bool:
    return str(df.sparkSession.conf.get(CASE_SENSITIVE, "false")).strip().lower() == "true"


def _sql(t: SparkType) -> str:
    return str(t.simpleString()).upper()


def can_store_assign(source: SparkType, target: SparkType) -> bool:
    """Spark's ``Cast.canANSIStoreAssign(source, target)`` (nested nullability not checked)."""
    from pyspark.sql import types as T

    def string_like(t: SparkType) -> bool:
        return isinstance(t, T.StringType | T.CharType | T.VarcharType)

    datetime = (T.DateType, T.TimestampType, T.TimestampNTZType)
    if nullable(source) == nullable(target) or isinstance(source, T.NullType):
        return True
    if isinstance(source, T.NumericType) and isinstance(target, T.NumericType):
        return True
    if string_like(target) and isinstance(source, T.AtomicType):
        return True
    if isinstance(source, datetime) and isinstance(target, datetime):
        return True
    if isinstance(source, T.ArrayType) and isinstance(target, T.ArrayType):
        return can_store_assign(source.elementType, target.elementType)
    if isinstance(source, T.MapType) and isinstance(target, T.MapType):
        return can_store_assign(source.keyType, target.keyType) and \
            can_store_assign(source.valueType, target.valueType)
    if isinstance(source, T.StructType) and isinstance(target, T.StructType):
        pairs = zip(source.fields, target.fields, strict=False)
        return len(source.fields) == len(target.fields) and all(
            can_store_assign(a.dataType, b.dataType) for a, b in pairs)
    return False


def resolve_columns(source: Sequence[str], target: StructType, *, by_name: bool, case_sensitive: bool,
                    table: str, passthrough: Sequence[str] = ()) -> list[tuple[StructField, int | None]]:
    """(table column, position of its data column) in the table's order, or a DataError naming
    the problem. By name, a nullable table column the data does not give has position None (it is
    written NULL, as Spark's ``INSERT ... BY NAME`` into a Paimon table does).

    ``passthrough``: data columns kept as they are (not table columns, e.g. ``_ROW_KIND``).
    """
    names = [f.name for f in target.fields]
    positions = [i for i, c in enumerate(source) if c not in passthrough]
    data = [source[i] for i in positions]
    if not by_name:
        if len(data) != len(names):
            what = "too many" if len(data) > len(names) else "not enough"
            raise DataError(f"cannot write to {table}: {what} data columns (table columns: "
                            f"{', '.join(names)}; data columns: {', '.join(data)}); select exactly the "
                            "table's columns")
        return list(zip(target.fields, positions, strict=True))

    def key(name: str) -> str:
        return name if case_sensitive else name.lower()

    by_key: dict[str, int] = {}
    for i in positions:
        column = source[i]
        if key(column) in by_key:
            raise DataError(f"cannot write to {table}: data columns {source[by_key[key(column)]]!r} and "
                            f"{column!r} both name table column {column!r} (names are case-"
                            f"{'sensitive' if case_sensitive else 'insensitive'}: {CASE_SENSITIVE}); "
                            "drop one")
        by_key[key(column)] = i
    table_keys = {key(n) for n in names}
    extra = [c for c in data if key(c) not in table_keys]
    if extra:
        listed = ", ".join(repr(c) for c in extra)
        raise DataError(f"cannot write to {table}: the table has no column {listed} (table columns: "
                        f"{', '.join(names)}); drop it (df.drop({listed})) or add it to the table first "
                        f"(ALTER TABLE {table} ADD COLUMN ...)")
    missing = [f.name for f in target.fields if key(f.name) not in by_key and not f.nullable]
    if missing:
        listed = ", ".join(repr(c) for c in missing)
        raise DataError(f"cannot write to {table}: no data for column {listed}, which is NOT NULL; add it "
                        "to the data (a missing nullable column is written NULL)")
    return [(f, by_key.get(key(f.name))) for f in target.fields]


def _check_types(pairs: list[tuple[StructField, int | None]], source: StructType, table: str) -> None:
    for field, position in pairs:
        if position is None:
            continue
        column, given = source.fields[position].name, source.fields[position].dataType
        if not can_store_assign(given, field.dataType):
            wanted = _cast_target(field.dataType)
            raise DataError(
                f"cannot write to {table}: column {field.name!r} is {_sql(field.dataType)}, the data's "
                f"{column!r} is {_sql(given)}; Spark's ANSI store assignment does not cast "
                f"{_sql(given)} to {_sql(field.dataType)}. Cast it explicitly if that is meant: "
                f"F.col({column!r}).cast({wanted!r}) (or try_cast, NULL where it does not parse)")


def _cast_target(t: SparkType) -> str:
    from pyspark.sql import types as T

    return "string" if isinstance(t, T.CharType | T.VarcharType) else str(t.simpleString())


def _fail(message: Column) -> Column:
    """Fails the task with ``message``, tagged so that the job's caller raises a ``DataError``."""
    from pyspark.sql import functions as F

    return F.raise_error(F.concat(F.lit(STORE_REFUSAL_TAG), message))


def _assigned(value: Column, given: SparkType, field: StructField, column: str, table: str) -> Column:
    """``value`` as the ANSI cast stores it into ``field``: an error where that cast would fail."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    target = nullable(field.dataType)
    where = f"cannot write to {table}: column {field.name!r} ({_sql(target)})"
    out = value
    if nullable(given) != target and not isinstance(target, T.CharType | T.VarcharType):
        cast = value.try_cast(target)
        failed = value.isNotNull() & cast.isNull()
        if isinstance(given, T.FloatType | T.DoubleType) and isinstance(target, T.DecimalType):
            # Spark's cast (ANSI too) makes NaN and +-Infinity a NULL DECIMAL, not an error.
            failed = failed & ~(F.isnan(value) | value.isin(float("inf"), float("-inf")))
        text = value.cast("string")
        message = F.concat(
            F.lit(f"{where}: the value "), F.coalesce(text, F.lit("?")),
            F.lit(f" of the data's {column!r} ({_sql(given)}) does not fit {_sql(target)} (Spark's "
                  "ANSI cast fails on it: overflow or not a number); cast or filter it first"))
        out = F.when(failed, _fail(message)).otherwise(cast)
    if isinstance(target, T.CharType | T.VarcharType):
        n = target.length
        text = value if isinstance(given, T.StringType) else value.try_cast("string")
        too_long = _fail(F.concat(F.lit(f"{where}: a value of "), F.length(text).cast("string"),
                                  F.lit(f" characters exceeds the length limit {n}")))
        # Spark's write-side check: trailing blanks past n are trimmed, anything else past n fails.
        fitted = F.when(F.length(text) <= n, text) \
            .when(F.length(F.rtrim(text)) <= n, F.substring(text, 1, n)).otherwise(too_long)
        out = F.rpad(fitted, n, " ") if isinstance(target, T.CharType) else fitted
    if not field.nullable:
        null = _fail(F.lit(f"{where} is NOT NULL: the data's {column!r} has a NULL; filter it or give "
                           "a value"))
        out = F.when(out.isNull(), null).otherwise(out)
    return out.alias(field.name)


def store_assigned(df: DataFrame, target: StructType | Any, *, by_name: bool, table: str,
                   case_sensitive: bool | None = None, passthrough: Sequence[str] = ()) -> DataFrame:
    """``df`` as Spark's ``INSERT INTO table`` would store it: the table's columns, in its order,
    with its types (see the module docstring). Runs on the driver and only plans: refusals are
    raised here, before any task; value failures (overflow, NULL into NOT NULL) fail the job.

    Args:
        target: the table's columns (:func:`target_schema`), or the table itself (a
            :class:`paimon_index.Table` or a pypaimon table).
        by_name: resolve by name (``jobs.write``, ``INSERT ... BY NAME``); else by position.
        case_sensitive: name matching; None reads the session's ``spark.sql.caseSensitive``.
        passthrough: data columns kept after the table's (``_ROW_KIND`` of an upsert).

    Raises:
        DataError: an extra or missing column, or a type pair the ANSI store assignment refuses.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    if not isinstance(target, StructType):
        target = target_schema(getattr(target, "paimon_table", target))
    sensitive = _case_sensitive(df) if case_sensitive is None else case_sensitive
    kept = [c for c in passthrough if c in df.columns]
    pairs = resolve_columns(df.columns, target, by_name=by_name, case_sensitive=sensitive, table=table,
                            passthrough=kept)
    _check_types(pairs, df.schema, table)
    source = df.schema.fields
    # Columns by position (the data may repeat a name, by position that is legal).
    placed = df.toDF(*[f"{_POSITION}{i}" for i in range(len(source))])
    exprs = [F.lit(None).cast(nullable(field.dataType)).alias(field.name) if i is None else
             _assigned(F.col(f"{_POSITION}{i}"), source[i].dataType, field, source[i].name, table)
             for field, i in pairs]
    extra = [F.col(f"{_POSITION}{df.columns.index(c)}").alias(c) for c in kept]
    return placed.select(*exprs, *extra)
