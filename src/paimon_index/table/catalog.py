r"""Create, open and alter Paimon tables from Python (pypaimon's filesystem catalog underneath).

    create_table(warehouse, "db.orders", "id BIGINT NOT NULL, code CHAR(3), ts TIMESTAMP",
                 partition_keys=["dt"], options={...})
    open_table(warehouse, "db.orders")
    alter_table_options(warehouse, "db.orders", set_options={"file-index.bloom-filter.columns": "id"},
                        remove=["file-index.bitmap.columns"])

``schema`` is one of
- a DDL string, parsed here without Spark (:func:`paimon_index.types.parse_fields`, Spark dialect):
  every type name Spark SQL or Paimon uses, ``NOT NULL``, ``COMMENT '...'``, back-quoted names,
  ``ARRAY``/``MAP``/``STRUCT``; mapped the way Paimon's Spark connector maps Spark types, so
  ``CHAR(10)`` stays ``CHAR(10)`` and ``TIMESTAMP`` is ``TIMESTAMP(6) WITH LOCAL TIME ZONE``;
- a Spark ``StructType`` (same mapping, no session needed);
- an Arrow schema (pypaimon's own mapping, ``Schema.from_pyarrow_schema``; Arrow has no CHAR or
  VARCHAR(n), so strings become ``STRING``).
The first two are written as pypaimon ``DataField``s built from our parsed types, because the Arrow
route loses CHAR/VARCHAR lengths and BINARY widths.

Options are Paimon's own spellings and are validated before anything is written
(:func:`validate_table_options`), at ``CREATE`` and at ``ALTER``:
- ``file-index.*``: unknown keys (``file-index.bloom-filter.column``) name the nearest valid key;
  index types, per-index options and their values are checked; every indexed column must exist and
  have a type that index takes (Paimon's Java index and ours), so no write can fail on it later;
- ``deletion-vectors.*`` / ``deletion-vector.*``: only the keys Paimon's ``CoreOptions`` defines, with
  boolean / size values;
- a key whose first segment is a near miss of those prefixes (``file_index.``, ``deletion-vectros.``)
  is refused with the corrected key.
Every other key is passed to Paimon unchanged: Paimon accepts arbitrary options (connectors and
users store their own), so refusing keys we do not know would break legitimate tables.

An ``ALTER`` of index options changes what *new* files get; existing files keep their indexes until
``rewrite_file_index`` rebuilds them (as in Paimon).

Identifiers: every name that enters (Python API, the ``paimon_index`` source's ``load``/``save``,
the Spark jobs, SQL) goes through :func:`parse_identifier` before the catalog or any file is
touched. Paimon's ``Identifier`` splits ``database.object`` and the object into
``table[$branch_<b>][$<system table>]``; its filesystem catalog then builds
``<warehouse>/<database>.db/<table>`` from the raw text, so ``db.../../evil`` would be a path outside
the warehouse. We refuse what could be read as a path (``/``, ``\``, ``..``, control characters),
empty or blank parts, a number of parts other than two, and, for writes, system tables
(``t$snapshots``), branches and Paimon's system database ``sys`` (as Paimon's
``CatalogUtils.checkNotSystemTable``/``checkNotBranch``).

pypaimon internals used: ``CatalogFactory.create({"warehouse": ...})``, ``Schema``,
``Schema.from_pyarrow_schema``, ``DataField``/``AtomicType``/``ArrayType``/``MultisetType``/
``MapType``/``RowType``, ``catalog.create_database/create_table/get_table/alter_table``,
``SchemaChange.set_option/remove_option``.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from paimon_index.errors import (
    InvalidIdentifierError,
    InvalidOptionError,
    InvalidPredicateError,
    PaimonIndexError,
    TableNotFoundError,
    UnsupportedTypeError,
)
from paimon_index.fileindex.options import (
    FileIndexOptions,
    check_index_columns,
    nearest,
    parse_bool,
    parse_int,
    parse_memory_size,
)
from paimon_index.types import MAX_LENGTH, DataType, Field, TypeRoot, parse_fields, parse_type

__all__ = [
    "TableIdentifier",
    "alter_table_options",
    "arrow_schema",
    "catalog",
    "catalog_config",
    "column_types",
    "create_table",
    "dictionary_page_bytes",
    "known_catalog_options",
    "open_table",
    "parse_identifier",
    "row_group_bytes",
    "schema_fields",
    "table_not_found",
    "validate_table_options",
]

WAREHOUSE = "warehouse"
FILE_INDEX_PREFIX = "file-index"
DV_PREFIXES = ("deletion-vectors", "deletion-vector")
#: The ``deletion-vector(s).*`` keys of Paimon's ``CoreOptions`` -> value checker.
DELETION_VECTOR_OPTIONS: dict[str, Callable[[str, str], object]] = {
    "deletion-vectors.enabled": parse_bool,
    "deletion-vectors.modifiable": parse_bool,
    "deletion-vectors.merge-on-read": parse_bool,
    "deletion-vectors.bitmap64": parse_bool,
    "deletion-vector.index-file.target-size": parse_memory_size,
}
#: Parquet row group size, the two keys Java's ``ParquetFileFormat`` honours: Paimon's
#: ``file.block-size`` (a ``MemorySize``; wins when both are set) and the Parquet writer's own
#: ``parquet.block.size`` (a byte count, as Hadoop's ``Configuration.getLong`` reads it).
FILE_BLOCK_SIZE = "file.block-size"
PARQUET_BLOCK_SIZE = "parquet.block.size"
#: The Parquet writer's dictionary page limit (bytes): past it a column chunk falls back to plain pages.
PARQUET_DICTIONARY_PAGE_SIZE = "parquet.dictionary.page.size"
#: The Parquet writer's switch for dictionary encoding (``false``: every column plain).
PARQUET_ENABLE_DICTIONARY = "parquet.enable.dictionary"
_MAX_LONG = 2**63 - 1
_MAX_INT = 2**31 - 1
#: Write options of ours -> value checker.
WRITE_OPTIONS: dict[str, Callable[[str, str], int]] = {
    FILE_BLOCK_SIZE: parse_memory_size,
    PARQUET_BLOCK_SIZE: lambda text, key: parse_int(text, key, maximum=_MAX_LONG),
    PARQUET_DICTIONARY_PAGE_SIZE: lambda text, key: parse_int(text, key, maximum=_MAX_INT),
    PARQUET_ENABLE_DICTIONARY: parse_bool,
}
#: Our default row group size when neither key is set (Java's is 128 MB). Smaller, so that a
#: selective range / bitmap query on a clustered column reads a fraction of a file: measured by
#: benchmarks/row_groups.py, see docs/read-path.md#performance.
DEFAULT_ROW_GROUP_BYTES = 4 * 1024 * 1024
#: The dictionary page limit when ``parquet.dictionary.page.size`` is not set: Java's. (It was 64 KiB
#: while pyarrow dictionary-encoded unique columns; now only columns where a dictionary pays get one,
#: see :mod:`~paimon_index.table.parquet_layout`.)
DEFAULT_DICTIONARY_PAGE_BYTES = 1024 * 1024
#: A first key segment this close (difflib ratio) to a validated prefix is taken for a typo of it.
#: No key Paimon defines comes closer than 0.72 (``full-text-index``, ``file-io``).
PREFIX_TYPO_CUTOFF = 0.8
#: Spark's default TIMESTAMP / TIMESTAMP_NTZ precision (microseconds).
SPARK_TIMESTAMP_PRECISION = 6


#: Catalog key families read only under fixed names: a key there that pypaimon does not read (a
#: misspelt ``fs.s3.endpiont``) would silently leave the store unconfigured, so it is an error.
STRICT_CATALOG_PREFIXES = ("fs.s3.", "fs.s3a.", "s3.", "s3a.", "fs.oss.")
#: Keys pypaimon builds at run time under these prefixes (HDFS mount tables, OSS user agent).
OPEN_CATALOG_PREFIXES = ("fs.viewfs.", "fs.oss.user.agent.")
#: The S3 settings pypaimon's file system reads under each of the S3 prefixes (``s3.endpoint``...).
S3_SETTING_NAMES = ("endpoint", "region", "access-key", "access.key", "secret-key", "secret.key",
                    "session-token", "session.token", "security-token", "security.token",
                    "path-style-access", "path.style.access")
#: Another key this close (difflib ratio) to a known one is taken for a typo of it.
CATALOG_TYPO_CUTOFF = 0.85


def known_catalog_options() -> frozenset[str]:
    """Every catalog key pypaimon (or paimon-index) reads, with pypaimon's spelling."""
    from paimon_index.table.fileio import ALLOW_NON_ATOMIC_OPTION, S3_OPTION_PREFIXES
    from paimon_index.table.paimon import ConfigOption
    from paimon_index.table.paimon import pypaimon_config as config

    declared = {value.key() for cls in vars(config).values() if isinstance(cls, type)
                for value in vars(cls).values() if isinstance(value, ConfigOption)}
    variants = {prefix + name for prefix in S3_OPTION_PREFIXES for name in S3_SETTING_NAMES}
    return frozenset(declared | variants | {ALLOW_NON_ATOMIC_OPTION})


def _check_catalog_key(key: str, known: frozenset[str]) -> None:
    if key in known or key.startswith(OPEN_CATALOG_PREFIXES):
        return
    same_but_case = next((k for k in known if k.lower() == key.lower()), None)
    strict = key.startswith(STRICT_CATALOG_PREFIXES)
    guess = same_but_case or (nearest(key, known) if strict else next(iter(
        difflib.get_close_matches(key, list(known), n=1, cutoff=CATALOG_TYPO_CUTOFF)), None))
    if guess is None and not strict:
        return  # a key of its own (connectors and users store theirs), as Paimon accepts
    hint = f"; did you mean {guess!r}?" if guess else ""
    raise InvalidOptionError(f"catalog option {key!r} is not one pypaimon reads{hint}")


def catalog_config(warehouse: str, catalog_options: Mapping[str, str] | None = None) -> dict[str, str]:
    """The catalog's options: ``warehouse`` plus ``catalog_options`` (pypaimon's spellings, e.g.
    ``fs.s3.endpoint``), every key and value a string; ``warehouse`` cannot be given twice.

    Raises:
        InvalidOptionError: a key under ``fs.s3.``/``s3.``/``fs.oss.`` ... that pypaimon does not
            read, or any key within a typo of one it reads, naming the nearest valid key.
    """
    config = {WAREHOUSE: str(warehouse)}
    known: frozenset[str] | None = None
    for key, value in (catalog_options or {}).items():
        if not isinstance(key, str) or not key:
            raise InvalidOptionError(f"catalog option names must be non-empty strings, got {key!r}")
        if key == WAREHOUSE:
            raise InvalidOptionError("catalog option 'warehouse' is the warehouse argument; do not repeat it")
        known = known if known is not None else known_catalog_options()
        _check_catalog_key(key, known)
        config[key] = str(value)
    return config


def catalog(warehouse: str, catalog_options: Mapping[str, str] | None = None) -> Any:
    """pypaimon's filesystem catalog over ``warehouse`` (a local path or URI) with ``catalog_options``."""
    from pypaimon import CatalogFactory

    return CatalogFactory.create(catalog_config(warehouse, catalog_options))


# ------------------------------------------------------------------------------------------------
# Identifiers
# ------------------------------------------------------------------------------------------------
#: Paimon's ``Identifier.SYSTEM_TABLE_SPLITTER`` / ``SYSTEM_BRANCH_PREFIX`` and
#: ``Catalog.SYSTEM_DATABASE_NAME``.
SYSTEM_TABLE_SPLITTER = "$"
SYSTEM_BRANCH_PREFIX = "branch_"
SYSTEM_DATABASE = "sys"
_QUOTE = "`"
_IDENTIFIER_FORM = "expected 'database.table', e.g. 'db.orders'"


@dataclass(frozen=True, slots=True)
class TableIdentifier:
    """A checked ``database.table[$branch_<b>][$<system table>]`` (Paimon's ``Identifier``)."""

    database: str
    table: str
    branch: str | None = None
    system_table: str | None = None

    @property
    def object_name(self) -> str:
        """Paimon's object name: the table with its branch and system-table suffixes."""
        parts = [self.table]
        if self.branch is not None:
            parts.append(SYSTEM_BRANCH_PREFIX + self.branch)
        if self.system_table is not None:
            parts.append(self.system_table)
        return SYSTEM_TABLE_SPLITTER.join(parts)

    @property
    def full_name(self) -> str:
        """``database.object``, what pypaimon's catalog takes."""
        return f"{self.database}.{self.object_name}"

    @property
    def is_system_table(self) -> bool:
        return self.system_table is not None

    def __str__(self) -> str:
        return self.full_name


def _refuse(text: object, what: str) -> InvalidIdentifierError:
    return InvalidIdentifierError(f"invalid table identifier {text!r}: {what}; {_IDENTIFIER_FORM}",
                                  identifier=text)


def _split_parts(text: str) -> list[str]:
    """``text`` split at dots outside back-quotes (Spark's `` `db`.`t` ``), quotes removed."""
    parts: list[str] = []
    current: list[str] = []
    quoted = was_quoted = False
    for i, ch in enumerate(text):
        if ch == _QUOTE:
            if quoted:
                quoted = False
                if i + 1 < len(text) and text[i + 1] != ".":
                    raise _refuse(text, "a back-quoted name must be a whole part")
            elif current:
                raise _refuse(text, "a back-quoted name must be a whole part")
            else:
                quoted = was_quoted = True
        elif ch == "." and quoted:
            raise _refuse(text, "a name cannot contain '.'")
        elif ch == ".":
            parts.append("".join(current))
            current, was_quoted = [], False
        else:
            if was_quoted and not quoted:
                raise _refuse(text, "a back-quoted name must be a whole part")
            current.append(ch)
    if quoted:
        raise _refuse(text, "unclosed back-quote")
    parts.append("".join(current))
    return parts


def parse_identifier(text: str, *, for_write: bool = False) -> TableIdentifier:
    """The checked identifier of ``text`` (``db.t``, `` `db`.`t` ``, ``db.t$snapshots``, ``db.t$branch_b``).

    Nothing is touched: this runs before any catalog or file is opened. ``for_write``: also refuse
    what Paimon refuses to create or write (a system table, a branch, the ``sys`` database), so such
    a name never reaches a path.

    Raises:
        InvalidIdentifierError: naming the identifier and what is wrong.
    """
    if not isinstance(text, str):
        raise InvalidIdentifierError(f"a table identifier must be a string 'database.table', got "
                                     f"{type(text).__name__} {text!r}", identifier=text)
    if not text.strip():
        raise _refuse(text, "empty identifier")
    for i, ch in enumerate(text):
        if unicodedata.category(ch) == "Cc":
            raise _refuse(text, f"control character {ch!r} at position {i}")
    for sep in ("/", "\\"):
        if sep in text:
            raise _refuse(text, f"path separator {sep!r} is not allowed in a name")
    if ".." in text:
        raise _refuse(text, "'..' is not allowed (a parent directory in a path, or an empty name)")
    parts = _split_parts(text)
    if len(parts) != 2:
        raise _refuse(text, f"{len(parts)} part{'s' if len(parts) != 1 else ''} "
                            f"(a name cannot contain '.')" if len(parts) > 2 else "no database part")
    for kind, part in zip(("database", "table"), parts, strict=True):
        if not part.strip():
            raise _refuse(text, f"empty {kind} name")
        if part != part.strip():
            raise _refuse(text, f"{kind} name {part!r} starts or ends with blanks")
    database, obj = parts
    if SYSTEM_TABLE_SPLITTER in database:
        raise _refuse(text, f"database name {database!r} contains {SYSTEM_TABLE_SPLITTER!r}")
    pieces = obj.split(SYSTEM_TABLE_SPLITTER)
    if any(not p.strip() for p in pieces):
        raise _refuse(text, f"empty name around {SYSTEM_TABLE_SPLITTER!r} in {obj!r}")
    branch = system = None
    if len(pieces) == 2:
        if pieces[1].startswith(SYSTEM_BRANCH_PREFIX):
            branch = pieces[1][len(SYSTEM_BRANCH_PREFIX):]
        else:
            system = pieces[1]
    elif len(pieces) == 3:
        if not pieces[1].startswith(SYSTEM_BRANCH_PREFIX):
            raise _refuse(text, f"a system table has one {SYSTEM_TABLE_SPLITTER!r} (or "
                                f"'t$branch_<b>$<system table>'), got {obj!r}")
        branch, system = pieces[1][len(SYSTEM_BRANCH_PREFIX):], pieces[2]
    elif len(pieces) > 3:
        raise _refuse(text, f"invalid object name {obj!r}")
    if branch is not None and not branch:
        raise _refuse(text, "empty branch name")
    ident = TableIdentifier(database, pieces[0], branch, system)
    if for_write:
        if database == SYSTEM_DATABASE:
            raise InvalidIdentifierError(
                f"{ident.full_name}: {SYSTEM_DATABASE!r} is Paimon's system database, read-only; "
                "create and write tables in another database", identifier=text)
        if ident.is_system_table:
            raise InvalidIdentifierError(
                f"{ident.full_name} is a system table: it can be read, not created or written; "
                f"write to the data table {database}.{ident.table}", identifier=text)
        if branch is not None:
            raise InvalidIdentifierError(
                f"{ident.full_name} is a branch: paimon-index creates and writes the main branch "
                f"only; use {database}.{ident.table}", identifier=text)
    return ident


def table_not_found(warehouse: str, identifier: str,
                    cause: BaseException | None = None) -> TableNotFoundError:
    """The error for a table that does not exist: names it and how to create it."""
    detail = "" if cause is None or type(cause).__name__ == "TableNotExistException" else \
        f" ({type(cause).__name__}: {cause})"
    return TableNotFoundError(
        f"table {identifier} does not exist in {warehouse}{detail}; create it first: "
        f"paimon_index.spark.attach(spark, warehouse=W).sql(\"CREATE TABLE {identifier} (...) "
        f"TBLPROPERTIES (...)\") or paimon_index.create_table(W, '{identifier}', schema, options={{...}})")


def open_table(warehouse: str, identifier: str, *, catalog_options: Mapping[str, str] | None = None) -> Any:
    """The pypaimon table ``db.table`` of ``warehouse`` (the identifier checked first).

    Raises:
        InvalidIdentifierError: see :func:`parse_identifier`.
    """
    ident = parse_identifier(identifier)
    return catalog(warehouse, catalog_options).get_table(ident.full_name)


# ------------------------------------------------------------------------------------------------
# Schemas
# ------------------------------------------------------------------------------------------------
def schema_fields(schema: str | Any) -> tuple[Field, ...]:
    """Our typed fields of a DDL string or a Spark ``StructType`` (no Spark session needed).

    Raises:
        InvalidOptionError: the DDL does not parse (message: position and token).
        UnsupportedTypeError: a type paimon-index cannot write (VARIANT, INTERVAL, ...).
    """
    if isinstance(schema, str):
        try:
            return parse_fields(schema, dialect="spark")
        except InvalidPredicateError as e:
            raise InvalidOptionError(f"schema: {e}") from e
    spark_types: Any
    try:
        from pyspark.sql import types as spark_types
    except ImportError:
        spark_types = None
    if spark_types is not None and isinstance(schema, spark_types.StructType):
        return tuple(_spark_field(f, spark_types) for f in schema.fields)
    raise PaimonIndexError(f"expected an Arrow schema, a Spark StructType or a DDL string, "
                           f"got {type(schema).__name__}")


def _spark_field(field: Any, T: Any) -> Field:
    comment = (field.metadata or {}).get("comment")
    dtype = _spark_type(field.dataType, T).with_nullable(bool(field.nullable))
    return Field(field.name, dtype, comment)


def _spark_type(t: Any, T: Any) -> DataType:
    """Paimon's ``SparkTypeUtils`` mapping (Spark >= 3.4, legacy timestamp mapping off)."""
    simple = {T.BooleanType: TypeRoot.BOOLEAN, T.ByteType: TypeRoot.TINYINT, T.ShortType: TypeRoot.SMALLINT,
              T.IntegerType: TypeRoot.INT, T.LongType: TypeRoot.BIGINT, T.FloatType: TypeRoot.FLOAT,
              T.DoubleType: TypeRoot.DOUBLE, T.DateType: TypeRoot.DATE}
    for cls, root in simple.items():
        if isinstance(t, cls):
            return DataType(root)
    if isinstance(t, T.CharType):
        return DataType(TypeRoot.CHAR, length=t.length)
    if isinstance(t, T.VarcharType):
        return DataType(TypeRoot.VARCHAR, length=t.length)
    if isinstance(t, T.StringType):
        return DataType(TypeRoot.VARCHAR, length=MAX_LENGTH)
    if isinstance(t, T.BinaryType):
        return DataType(TypeRoot.VARBINARY, length=MAX_LENGTH)
    if isinstance(t, T.DecimalType):
        return DataType(TypeRoot.DECIMAL, precision=t.precision, scale=t.scale)
    if isinstance(t, T.TimestampNTZType):
        return DataType(TypeRoot.TIMESTAMP, precision=SPARK_TIMESTAMP_PRECISION)
    if isinstance(t, T.TimestampType):
        return DataType(TypeRoot.TIMESTAMP_LTZ, precision=SPARK_TIMESTAMP_PRECISION)
    if isinstance(t, T.ArrayType):
        return DataType(TypeRoot.ARRAY, element=_spark_type(t.elementType, T).with_nullable(t.containsNull))
    if isinstance(t, T.MapType):
        return DataType(TypeRoot.MAP, key=_spark_type(t.keyType, T).with_nullable(False),
                        value=_spark_type(t.valueType, T).with_nullable(t.valueContainsNull))
    if isinstance(t, T.StructType):
        return DataType(TypeRoot.ROW, fields=tuple(_spark_field(f, T) for f in t.fields))
    raise UnsupportedTypeError(f"Spark type {t.simpleString()} has no Paimon type paimon-index writes")


def _paimon_fields(fields: tuple[Field, ...]) -> list[Any]:
    """pypaimon ``DataField``s; ids as Java's ``Schema.Builder`` gives them (each top-level column
    the next id, then its nested fields, parent before children)."""
    from pypaimon.schema.data_types import ArrayType, AtomicType, DataField, MapType, MultisetType, RowType

    next_id = iter(range(1 << 31))

    def convert(t: DataType) -> Any:
        if t.root is TypeRoot.ARRAY:
            assert t.element is not None
            return ArrayType(t.nullable, convert(t.element))
        if t.root is TypeRoot.MULTISET:
            assert t.element is not None
            return MultisetType(t.nullable, convert(t.element))
        if t.root is TypeRoot.MAP:
            assert t.key is not None and t.value is not None
            return MapType(t.nullable, convert(t.key), convert(t.value))
        if t.root is TypeRoot.ROW:
            return RowType(t.nullable, [field(f) for f in t.fields])
        return AtomicType(str(t.with_nullable(True)), t.nullable)

    def field(f: Field) -> Any:
        fid = next(next_id)
        return DataField(fid, f.name, convert(f.type), f.comment or None)

    return [field(f) for f in fields]


def column_types(paimon_fields: Iterable[Any]) -> dict[str, DataType | str]:
    """Top-level column -> our type, or Paimon's spelling of a type we cannot represent."""
    out: dict[str, DataType | str] = {}
    for f in paimon_fields:
        t = f.type
        text = getattr(t, "type", None)
        if isinstance(text, str):  # AtomicType
            try:
                out[f.name] = parse_type(text).with_nullable(bool(t.nullable))
                continue
            except PaimonIndexError:
                pass
        out[f.name] = str(t)
    return out


def arrow_schema(schema: pa.Schema | Any) -> pa.Schema:
    """The Arrow schema pypaimon reads and writes for ``schema`` (Arrow, StructType or DDL)."""
    if isinstance(schema, pa.Schema):
        return schema
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(_paimon_fields(schema_fields(schema)))


# ------------------------------------------------------------------------------------------------
# Options
# ------------------------------------------------------------------------------------------------
def _check_key_spelling(key: str, value: str) -> None:
    first, dot, rest = key.partition(".")
    families = (FILE_INDEX_PREFIX, *DV_PREFIXES)
    if first not in families:
        low = first.lower().replace("_", "-")
        match = low if low in families else \
            next(iter(difflib.get_close_matches(low, families, n=1, cutoff=PREFIX_TYPO_CUTOFF)), None)
        if match is not None:
            fixed = match + dot + rest
            if match in DV_PREFIXES:
                fixed = nearest(fixed, DELETION_VECTOR_OPTIONS) or fixed
            raise InvalidOptionError(f"{key}: unknown table option; did you mean {fixed!r}?")
        return
    if first in DV_PREFIXES:
        check = DELETION_VECTOR_OPTIONS.get(key)
        if check is None:
            guess = nearest(key, DELETION_VECTOR_OPTIONS)
            hint = f"did you mean {guess!r}?" if guess else f"known: {', '.join(DELETION_VECTOR_OPTIONS)}"
            raise InvalidOptionError(f"{key}: unknown deletion-vectors option; {hint}")
        check(value, key)


#: Paimon's ``CoreOptions`` retention keys (table/maintenance.py expires by them) and defaults.
SNAPSHOT_NUM_RETAINED_MIN = "snapshot.num-retained.min"
SNAPSHOT_NUM_RETAINED_MAX = "snapshot.num-retained.max"
CHANGELOG_NUM_RETAINED_MIN = "changelog.num-retained.min"
CHANGELOG_NUM_RETAINED_MAX = "changelog.num-retained.max"
DEFAULT_SNAPSHOTS_RETAINED_MIN = 10
DEFAULT_SNAPSHOTS_RETAINED_MAX = 2**31 - 1  # Integer.MAX_VALUE: unbounded


def check_retention(options: Mapping[str, str]) -> None:
    """Paimon's checks of a table's retention options (``SchemaValidation.validateTableSchema``),
    made before a table is created or its options altered: each ``*.num-retained.min`` at least 1
    and not larger than its ``*.num-retained.max`` (the changelog's defaulting to the snapshot's).

    Raises:
        InvalidOptionError: naming the options, as Paimon's message does.
    """
    def number(key: str, default: int) -> int:
        text = options.get(key)
        if text is None:
            return default
        try:
            return int(str(text).strip())
        except ValueError:
            raise InvalidOptionError(f"'{key}' = {text!r} is not a whole number") from None

    snapshot_min = number(SNAPSHOT_NUM_RETAINED_MIN, DEFAULT_SNAPSHOTS_RETAINED_MIN)
    snapshot_max = number(SNAPSHOT_NUM_RETAINED_MAX, DEFAULT_SNAPSHOTS_RETAINED_MAX)
    changelog_min = number(CHANGELOG_NUM_RETAINED_MIN, snapshot_min)
    changelog_max = number(CHANGELOG_NUM_RETAINED_MAX, snapshot_max)
    for low, high, low_key, high_key in ((snapshot_min, snapshot_max, SNAPSHOT_NUM_RETAINED_MIN,
                                          SNAPSHOT_NUM_RETAINED_MAX),
                                         (changelog_min, changelog_max, CHANGELOG_NUM_RETAINED_MIN,
                                          CHANGELOG_NUM_RETAINED_MAX)):
        if low < 1:
            raise InvalidOptionError(f"{low_key} should be at least 1 (it is {low})")
        if low > high:
            unset = "" if low_key in options else ", unset: the default"
            raise InvalidOptionError(f"{low_key} should not be larger than {high_key} "
                                     f"({low}{unset} > {high}); set both")


def validate_table_options(options: Mapping[str, str],
                           columns: Mapping[str, DataType | str] | None = None) -> dict[str, str]:
    """Check a table's options as :mod:`paimon_index.table.catalog` describes; return them as strings.

    Args:
        options: every option the table will have.
        columns: top-level column -> type (see :func:`column_types`); None skips the column checks.

    Raises:
        InvalidOptionError: naming the option (and the column, type and index where one is involved).
    """
    plain = {str(k): str(v) for k, v in options.items()}
    for key, value in plain.items():
        _check_key_spelling(key, value)
        if key in WRITE_OPTIONS:
            WRITE_OPTIONS[key](value, key)
    parsed = FileIndexOptions.from_table_options(plain, strict=True)
    if columns is not None:
        check_index_columns(parsed, columns)
    check_retention(plain)
    _check_deletion_vectors(plain)
    return plain


#: The changelog producers Paimon allows with deletion vectors (``SchemaValidation``).
_DV_CHANGELOG_PRODUCERS = ("none", "input", "lookup")
#: Why Paimon refuses ``merge-engine`` = ``first-row`` with deletion vectors (at CREATE here; at the
#: write of a table made elsewhere, :func:`paimon_index.table.pk.merge.merge_engine`).
FIRST_ROW_WITH_VECTORS = ("'merge-engine' = 'first-row' does not need deletion vectors (it never deletes old "
                          "data) and Paimon refuses it with 'deletion-vectors.enabled' = 'true': drop one of "
                          "the two options")


def _check_deletion_vectors(options: Mapping[str, str]) -> None:
    """Refuse what Paimon's ``SchemaValidation.validateForDeletionVectors`` refuses, so that no table
    Java cannot load is created (Java refuses such a table when it loads its schema too)."""
    if not parse_bool(options.get("deletion-vectors.enabled", "false"), "deletion-vectors.enabled"):
        return
    producer = options.get("changelog-producer", "none").strip().lower()
    if producer not in _DV_CHANGELOG_PRODUCERS:
        raise InvalidOptionError(
            f"'changelog-producer' = '{producer}' with 'deletion-vectors.enabled' = 'true': Paimon supports "
            f"deletion vectors with the {', '.join(repr(p) for p in _DV_CHANGELOG_PRODUCERS)} changelog "
            "producers only")
    first_row = options.get("merge-engine", "deduplicate").strip().lower() == "first-row"
    if first_row and not parse_bool(options.get("pk-clustering-override", "false"), "pk-clustering-override"):
        raise InvalidOptionError(FIRST_ROW_WITH_VECTORS)


def row_group_bytes(options: Mapping[str, str]) -> int:
    """The Parquet row group size a table's options ask for, in bytes (see :data:`WRITE_OPTIONS`).

    Raises:
        InvalidOptionError: a value that does not parse (a table made elsewhere, never validated).
    """
    for key in (FILE_BLOCK_SIZE, PARQUET_BLOCK_SIZE):
        if key in options:
            return max(WRITE_OPTIONS[key](str(options[key]), key), 1)
    return DEFAULT_ROW_GROUP_BYTES


def dictionary_page_bytes(options: Mapping[str, str]) -> int:
    """The Parquet dictionary page limit a table's options ask for, in bytes."""
    if PARQUET_DICTIONARY_PAGE_SIZE in options:
        return WRITE_OPTIONS[PARQUET_DICTIONARY_PAGE_SIZE](str(options[PARQUET_DICTIONARY_PAGE_SIZE]),
                                                           PARQUET_DICTIONARY_PAGE_SIZE)
    return DEFAULT_DICTIONARY_PAGE_BYTES


def dictionaries_enabled(options: Mapping[str, str]) -> bool:
    """``parquet.enable.dictionary`` (default true, as Java's Parquet writer)."""
    if PARQUET_ENABLE_DICTIONARY in options:
        return bool(WRITE_OPTIONS[PARQUET_ENABLE_DICTIONARY](str(options[PARQUET_ENABLE_DICTIONARY]),
                                                             PARQUET_ENABLE_DICTIONARY))
    return True


def _check_keys_exist(kind: str, keys: Iterable[str], columns: Mapping[str, object]) -> None:
    for k in keys:
        if k not in columns:
            guess = nearest(k, columns)
            hint = f"; did you mean {guess!r}?" if guess else ""
            raise InvalidOptionError(f"{kind} key {k!r} is not a column{hint}")


# ------------------------------------------------------------------------------------------------
# DDL
# ------------------------------------------------------------------------------------------------
def create_table(warehouse: str, identifier: str, schema: pa.Schema | Any, *,
                 partition_keys: Iterable[str] = (), primary_keys: Iterable[str] = (),
                 options: Mapping[str, str] | None = None, exist_ok: bool = False,
                 catalog_options: Mapping[str, str] | None = None, comment: str | None = None) -> Any:
    """Create ``db.table`` (and its database) and return the pypaimon table (``comment``: the
    table's comment, kept in its first schema).

    Everything is checked before the database or table is created, so a refused call leaves the
    warehouse as it was.

    Raises:
        InvalidIdentifierError: see :func:`parse_identifier` (``for_write``).
        InvalidOptionError: a bad DDL string, option, or partition/primary key.
        UnsupportedTypeError: a schema type paimon-index cannot write.
    """
    from pypaimon import Schema

    ident = parse_identifier(identifier, for_write=True)
    partition_keys, primary_keys = list(partition_keys), list(primary_keys)
    plain = {str(k): str(v) for k, v in (options or {}).items()}
    try:
        if isinstance(schema, pa.Schema):
            paimon_schema = Schema.from_pyarrow_schema(schema, partition_keys=partition_keys,
                                                       primary_keys=primary_keys or None, options=plain)
        else:
            paimon_schema = Schema(_paimon_fields(schema_fields(schema)), partition_keys, primary_keys, plain)
    except InvalidOptionError:  # ours, from the schema's fields
        raise
    except ValueError as e:  # pypaimon's own checks (a changelog producer without a primary key, ...)
        raise InvalidOptionError(f"table {identifier}: {e}") from e
    if comment:
        paimon_schema.comment = comment
    columns = column_types(paimon_schema.fields)
    _check_keys_exist("partition", partition_keys, columns)
    _check_keys_exist("primary", primary_keys, columns)
    validate_table_options(plain, columns)
    cat = catalog(warehouse, catalog_options)
    cat.create_database(ident.database, True)
    cat.create_table(ident.full_name, paimon_schema, exist_ok)
    return cat.get_table(ident.full_name)


def alter_table_options(warehouse: str, identifier: str, *, set_options: Mapping[str, str] | None = None,
                        remove: Iterable[str] = (), catalog_options: Mapping[str, str] | None = None,
                        dv_switch_checked: bool = False) -> Any:
    """``ALTER TABLE ... SET/RESET TBLPROPERTIES``: change options, return the re-opened table.

    The options the table would end up with are validated against its columns first, and on a table
    with snapshots the changes Paimon refuses are refused (:func:`check_option_changes`); a refused
    call changes nothing. ``dv_switch_checked``: the caller proved the table fully compacted, so
    ``deletion-vectors.enabled`` may change (``paimon_index.table.pk.set_deletion_vectors``).
    """
    from pypaimon.schema.schema_change import SchemaChange

    identifier = parse_identifier(identifier, for_write=True).full_name
    cat = catalog(warehouse, catalog_options)
    table = cat.get_table(identifier)
    from paimon_index.table.paimon import table_options  # pypaimon: not at import time

    current = table_options(table)
    updates = {str(k): str(v) for k, v in (set_options or {}).items()}
    removed = list(remove)
    merged = {k: v for k, v in {**current, **updates}.items() if k not in removed}
    # The whole resulting option set is checked (a misspelt key already on the table is named too;
    # it can be dropped in the same call with ``remove``).
    validate_table_options(merged, column_types(table.fields))
    from paimon_index.table.paimon import latest_snapshot

    if latest_snapshot(table) is not None:
        updates = check_option_changes(identifier, current, updates, removed, list(table.primary_keys),
                                       list(table.partition_keys), dv_switch_checked=dv_switch_checked)
    changes = [SchemaChange.set_option(k, v) for k, v in updates.items()]
    changes += [SchemaChange.remove_option(k) for k in removed]
    if changes:
        cat.alter_table(identifier, changes)
    return cat.get_table(identifier)


#: Options fixed once a table has snapshots (CoreOptions' ``@Immutable`` options): an ALTER that
#: changes one is refused, as Paimon's SchemaManager refuses it.
IMMUTABLE_OPTIONS = frozenset({
    "type", "bucket-key", "bucket-function.type", "data-file.path-directory", "merge-engine",
    "sequence.snapshot-ordering", "aggregation.remove-record-on-delete",
    "partial-update.remove-record-on-delete", "partial-update.remove-record-on-sequence-group",
    "rowkind.field", "primary-key", "primary-key.nullable", "partition", "dynamic-bucket.initial-buckets",
    "force-lookup", "row-tracking.enabled", "data-evolution.enabled", "index-file-in-data-file-dir",
    "blob-field", "blob-descriptor-field", "blob-view-field", "pk-clustering-override"})
#: Options that may go from false to true but never back (old rows were dropped on their strength).
_ONE_WAY_OPTIONS = ("ignore-delete", "ignore-update-before")
_DV_ENABLED = "deletion-vectors.enabled"
_DV_MODIFIABLE = "deletion-vectors.modifiable"
_BUCKET = "bucket"


def _java_bool(value: str | None) -> bool:
    """Java's ``Boolean.parseBoolean`` (what SchemaManager compares): only ``true``, any case."""
    return value is not None and value.strip().lower() == "true"


def _key_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def check_option_changes(identifier: str, current: Mapping[str, str], updates: Mapping[str, str],
                         removed: Iterable[str], primary_keys: list[str], partition_keys: list[str], *,
                         dv_switch_checked: bool = False) -> dict[str, str]:
    """The effective ``updates`` of an ALTER on a table with snapshots (values that change nothing
    dropped), after refusing the changes Paimon's ``SchemaManager.checkAlterTableOption`` refuses:
    an immutable option, a dynamic bucket (``-1``) changed or a table made dynamic, the
    deletion-vectors mode switched without ``deletion-vectors.modifiable`` (rows could be read twice
    or lost), ``ignore-delete``/``ignore-update-before`` turned off.

    Raises:
        InvalidOptionError: naming the option and what to do instead.
    """
    effective: dict[str, str] = {}
    for key, new in updates.items():
        old = current.get(key)
        unchanged = old == new or (key == "type" and new.lower() == (old or "table").lower()) or (
            old is None and ((key == "primary-key" and _key_list(new) == primary_keys)
                             or (key == "partition" and _key_list(new) == partition_keys)))
        if unchanged:
            continue
        _check_change(identifier, current, key, old, new, dv_switch_checked)
        effective[key] = new
    for key in removed:
        if key in IMMUTABLE_OPTIONS:
            _check_change(identifier, current, key, current.get(key), None, dv_switch_checked)
        elif key == _BUCKET:
            raise InvalidOptionError(f"{identifier}: 'bucket' cannot be reset once the table has snapshots "
                                     "(as in Paimon); set it to a value instead")
        elif key == _DV_ENABLED:
            _check_change(identifier, current, key, current.get(key), "false", dv_switch_checked)
    return effective


def _check_change(identifier: str, current: Mapping[str, str], key: str, old: str | None, new: str | None,
                  dv_switch_checked: bool) -> None:
    if key in IMMUTABLE_OPTIONS:
        raise InvalidOptionError(f"{identifier}: '{key}' cannot change once the table has snapshots (Paimon "
                                 "fixes it at creation); create a new table with it and INSERT the rows")
    if key == _BUCKET and new is not None:
        if (old or "-1").strip() == "-1":
            raise InvalidOptionError(f"{identifier}: 'bucket' cannot change on a dynamic-bucket table "
                                     "(bucket -1), as in Paimon; create a new table and INSERT the rows")
        if new.strip() == "-1":
            raise InvalidOptionError(f"{identifier}: 'bucket' cannot change to -1 (dynamic), as in Paimon; "
                                     "create a new table and INSERT the rows")
    if key == _DV_ENABLED and not dv_switch_checked:
        if _java_bool(current.get(_DV_MODIFIABLE)):
            return
        if _java_bool(old) != _java_bool(new):
            raise InvalidOptionError(
                f"{identifier}: switching '{_DV_ENABLED}' on a table with snapshots can read rows twice or "
                "lose deletes unless the table is fully compacted first; use "
                "paimon_index.table.pk.set_deletion_vectors (it checks that), or set "
                f"'{_DV_MODIFIABLE}' = 'true' if you are sure (as in Paimon)")
    if key in _ONE_WAY_OPTIONS and _java_bool(old) and not _java_bool(new):
        raise InvalidOptionError(f"{identifier}: '{key}' cannot change from true to false (as in Paimon)")


# ------------------------------------------------------------------------------------------------
# Listing
# ------------------------------------------------------------------------------------------------
def database_names(warehouse: str, catalog_options: Mapping[str, str] | None = None) -> list[str]:
    """The warehouse's databases, sorted."""
    return sorted(catalog(warehouse, catalog_options).list_databases())


def table_names(warehouse: str, database: str, catalog_options: Mapping[str, str] | None = None) -> list[str]:
    """The tables of ``database``, sorted (empty when the database does not exist)."""
    cat = catalog(warehouse, catalog_options)
    if database not in cat.list_databases():
        return []
    return sorted(cat.list_tables(database))


# ------------------------------------------------------------------------------------------------
# Catalog DDL beyond options (the SQL layer's CREATE/DROP/ALTER, tags and rollback)
# ------------------------------------------------------------------------------------------------
def _catalog_errors() -> Any:
    from pypaimon.catalog import catalog_exception

    return catalog_exception


def create_database(warehouse: str, name: str, *, exist_ok: bool = False,
                    catalog_options: Mapping[str, str] | None = None) -> None:
    """``CREATE DATABASE [IF NOT EXISTS] name``.

    Raises:
        TableExistsError: the database exists and ``exist_ok`` is false.
    """
    from paimon_index.errors import TableExistsError

    cat = catalog(warehouse, catalog_options)
    if not exist_ok and name in cat.list_databases():
        raise TableExistsError(f"database {name} already exists in {warehouse}; "
                               f"use CREATE DATABASE IF NOT EXISTS {name}")
    cat.create_database(name, True)


def drop_database(warehouse: str, name: str, *, missing_ok: bool = False, cascade: bool = False,
                  catalog_options: Mapping[str, str] | None = None) -> None:
    """``DROP DATABASE [IF EXISTS] name [CASCADE]`` (without CASCADE only an empty one).

    Raises:
        TableNotFoundError: no such database (and not ``missing_ok``).
        TableError: the database has tables and ``cascade`` is false.
    """
    from paimon_index.errors import TableError, TableNotFoundError

    cat = catalog(warehouse, catalog_options)
    if name not in cat.list_databases():
        if missing_ok:
            return
        raise TableNotFoundError(f"database {name} not found in {warehouse}; use DROP DATABASE IF EXISTS")
    tables = cat.list_tables(name)
    if tables and not cascade:
        raise TableError(f"database {name} is not empty (tables: {', '.join(sorted(tables))}); "
                         f"drop them first or use DROP DATABASE {name} CASCADE")
    cat.drop_database(name, False, cascade)


def drop_table(warehouse: str, identifier: str, *, missing_ok: bool = False,
               catalog_options: Mapping[str, str] | None = None) -> bool:
    """``DROP TABLE [IF EXISTS]``: delete the table's directory; whether a table was dropped.

    Raises:
        TableNotFoundError: no such table (and not ``missing_ok``).
    """
    from paimon_index.errors import TableNotFoundError

    errors = _catalog_errors()
    cat = catalog(warehouse, catalog_options)
    try:
        cat.get_table(identifier)
    except (errors.TableNotExistException, errors.DatabaseNotExistException):
        if missing_ok:
            return False
        raise TableNotFoundError(f"table {identifier} not found in {warehouse}; "
                                 f"use DROP TABLE IF EXISTS {identifier}") from None
    cat.drop_table(identifier, False)
    return True


def rename_table(warehouse: str, identifier: str, new_identifier: str, *,
                 catalog_options: Mapping[str, str] | None = None) -> None:
    """``ALTER TABLE db.t RENAME TO db.u`` (within one warehouse; the target database must exist).

    Raises:
        TableExistsError: ``new_identifier`` exists.
        TableNotFoundError: the target database does not exist.
    """
    from paimon_index.errors import TableExistsError, TableNotFoundError

    errors = _catalog_errors()
    cat = catalog(warehouse, catalog_options)
    try:
        cat.rename_table(identifier, new_identifier)
    except errors.TableAlreadyExistException:
        raise TableExistsError(f"cannot rename {identifier} to {new_identifier}: that table exists; "
                               "drop it first or pick another name") from None
    except errors.DatabaseNotExistException:
        database = new_identifier.split(".", 1)[0]
        raise TableNotFoundError(f"cannot rename {identifier} to {new_identifier}: database "
                                 f"{database} does not exist; create it first") from None


def paimon_field(ddl: str) -> Any:
    """The pypaimon ``DataField`` of one DDL column (``name TYPE [NOT NULL] [COMMENT '...']``)."""
    fields = schema_fields(ddl)
    if len(fields) != 1:
        raise InvalidOptionError(f"expected one column definition, got {ddl!r}")
    return _paimon_fields(fields)[0]


def alter_columns(warehouse: str, identifier: str, changes: Iterable[Any], *,
                  catalog_options: Mapping[str, str] | None = None) -> Any:
    """Apply pypaimon ``SchemaChange``s (add / rename / drop column, column type) as one schema
    change; return the re-opened table.

    Raises:
        SchemaEvolutionError: pypaimon refused the change (the message names the column), or the
            schema it makes has a ``file-index.<type>.columns`` naming a column it lacks or cannot
            index (a renamed or dropped indexed column: Paimon validates every new schema so, and
            every later write would fail to build the index). Nothing is changed.
    """
    from paimon_index.errors import SchemaEvolutionError
    from paimon_index.table.paimon import schema_after

    changes = list(changes)
    cat = catalog(warehouse, catalog_options)
    try:
        after = schema_after(cat.get_table(identifier), changes)
    except (ValueError, RuntimeError, _catalog_errors().CatalogException) as e:
        raise SchemaEvolutionError(f"ALTER TABLE {identifier}: {e}") from e
    indexes = FileIndexOptions.from_table_options(dict(after.options))
    try:
        check_index_columns(indexes, column_types(after.fields))
    except InvalidOptionError as e:
        raise SchemaEvolutionError(f"ALTER TABLE {identifier}: {e} after this change; take the column out "
                                   "of the option first (ALTER TABLE ... SET/UNSET TBLPROPERTIES)") from None
    try:
        cat.alter_table(identifier, changes)
    except (ValueError, RuntimeError, _catalog_errors().CatalogException) as e:
        raise SchemaEvolutionError(f"ALTER TABLE {identifier}: {e}") from e
    return cat.get_table(identifier)


def create_tag(warehouse: str, identifier: str, tag: str, snapshot_id: int | None = None, *,
               time_retained: str | None = None, catalog_options: Mapping[str, str] | None = None) -> None:
    """Tag snapshot ``snapshot_id`` (default: the latest) of ``db.t`` as ``tag``.

    Raises:
        TableExistsError: the tag exists.
        TableError: no such snapshot (or the table has none).
    """
    from paimon_index.errors import TableError, TableExistsError

    table = open_table(warehouse, identifier, catalog_options=catalog_options)
    if tag in table.list_tags():
        raise TableExistsError(f"tag {tag!r} of {identifier} already exists; delete_tag it first")
    try:
        table.create_tag(tag, snapshot_id=snapshot_id, time_retained=time_retained)
    except (ValueError, FileNotFoundError) as e:
        raise TableError(f"cannot tag {identifier}: {e}") from e


def delete_tag(warehouse: str, identifier: str, tag: str, *,
               catalog_options: Mapping[str, str] | None = None) -> bool:
    """Delete tag ``tag`` of ``db.t``; whether it existed."""
    return bool(open_table(warehouse, identifier, catalog_options=catalog_options).delete_tag(tag))


def tag_snapshot_id(table: Any, tag: str) -> int | None:
    """The snapshot id tag ``tag`` of the pypaimon table points to, or None."""
    found = table.tag_manager().get(tag)
    return None if found is None else int(found.id)


def rollback(warehouse: str, identifier: str, target: int | str, *,
             catalog_options: Mapping[str, str] | None = None) -> tuple[int, int]:
    """Roll ``db.t`` back to snapshot ``target`` (int) or tag ``target`` (str):
    (previous latest snapshot id, current snapshot id), as Paimon's ``rollback`` procedure answers.

    Raises:
        TableError: no snapshot, or the snapshot/tag does not exist.
    """
    from paimon_index.errors import TableError
    from paimon_index.table.paimon import latest_snapshot, snapshot_exists

    table = open_table(warehouse, identifier, catalog_options=catalog_options)
    latest = latest_snapshot(table)
    if latest is None:
        raise TableError(f"table {identifier} has no snapshot to roll back")
    if isinstance(target, str):
        current = tag_snapshot_id(table, target)
        if current is None:
            raise TableError(f"tag {target!r} of {identifier} does not exist; tags: "
                             f"{', '.join(table.list_tags()) or 'none'}")
    else:
        if not snapshot_exists(table, target):
            raise TableError(f"snapshot {target} of {identifier} does not exist (latest: {latest.id})")
        current = target
    table.rollback_to(target)
    return int(latest.id), int(current)
