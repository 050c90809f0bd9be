"""Which table a name in SQL text means: a Paimon table of the attached warehouse, or Spark's own.

Paimon's spelling, as its Spark connector (catalog ``paimon``, the default catalog) reads it:

==========================  =============================================================
``paimon.db.t``             the Paimon table ``db.t`` (an error if there is none)
``db.t``                    ``db.t`` of the warehouse when the warehouse has database ``db``;
                            otherwise Spark's (its session catalog, views)
``t``                       a CTE or a Spark temporary view of that name first; then ``t`` of
                            the current database (``USE db``; ``default`` at first) when it
                            exists there; otherwise Spark's
``spark_catalog.db.t``      always Spark's
```db.`t$snapshots` ```     the system table ``snapshots`` of ``db.t`` (``$files``, ...)
==========================  =============================================================

Names match case-insensitively, as Spark resolves them (the exact spelling first, then the one
spelling that differs only in case); a new name (CREATE) is kept as written.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.generators.spark import SparkGenerator

from paimon_index.errors import SqlError, TableNotFoundError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DIALECT", "PAIMON_CATALOG", "SYSTEM_TABLE_SEPARATOR", "Catalog", "TableName", "cte_names",
           "names_paimon_table", "parse", "relations", "resolve", "resolve_parts", "spark_parses",
           "table_parts"]


class SparkText(Spark):
    """Spark SQL in and out, as Spark itself reads it (sqlglot's Spark dialect, corrected):

    - reading: a doubled quote inside a string is one quote (``'it''s'`` is ``it's``, ``"a""b"`` is
      ``a"b``); sqlglot's Spark reads ``'it''s'`` as two adjacent literals, concatenated (``its``).
      Backslash escapes and adjacent literals (``'a' 'b'``) stay as they are;
    - writing: none of sqlglot's rewrites for older Sparks and other dialects, so Spark runs what it
      was given (or refuses it, as it would). Each answered otherwise than Spark: ``QUALIFY`` became a
      subquery projecting the window as ``_w`` (``SELECT * ... QUALIFY`` answered that extra column),
      ``percentile_cont(f) WITHIN GROUP (ORDER BY x)`` became ``percentile_approx(x, f)`` (9 for 9.5
      over 0..19), ``5 = ANY (arr)`` (which Spark refuses) ``EXISTS(arr, x -> 5 = x)``.
    """

    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES = ["\\", "'", '"']  # noqa: RUF012  (sqlglot's own class attribute)

    class Generator(SparkGenerator):
        TRANSFORMS = {key: value for key, value in SparkGenerator.TRANSFORMS.items()  # noqa: RUF012
                      if key not in (exp.Select, exp.WithinGroup)}


#: The SQL dialect statements are read and written in (:class:`SparkText`).
DIALECT = SparkText
#: sqlglot logs a warning for each statement it keeps as a raw ``Command``; those are expected here.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

#: The catalog name Paimon's Spark connector registers (``spark.sql.catalog.paimon``).
PAIMON_CATALOG = "paimon"
#: The argument a statement's ``WITH`` (its CTEs) is kept under: sqlglot 30 renamed it ``with_``.
WITH_ARG = "with_" if "with_" in exp.Select.arg_types else "with"
#: Spark's own catalog: a name under it is never ours.
SPARK_CATALOG = "spark_catalog"
#: ``t$snapshots``: table ``t``'s system table ``snapshots``.
SYSTEM_TABLE_SEPARATOR = "$"


def spark_tokens(text: str) -> list[Any]:
    """``text`` as Spark's tokens (:data:`DIALECT`): a backticked name or a string is one token.

    Raises:
        TokenError: text Spark's tokenizer cannot read (an unclosed quote).
    """
    from sqlglot.dialects.dialect import Dialect

    return list(Dialect.get_or_raise(DIALECT).tokenize(text))


class Catalog(Protocol):
    """What the SQL layer needs of :class:`paimon_index.spark.catalog.Catalog` (defined there)."""

    spark: SparkSession
    warehouse: str
    catalog_options: dict[str, str]
    current_database: str
    #: Whether the last USE named a Spark database (SHOW CURRENT NAMESPACE is then Spark's).
    uses_spark_database: bool
    #: The temporary views ``paimon.sql`` made (:mod:`.views`), by lower-case name.
    views: dict[str, Any]

    def database_spelling(self, name: str) -> str | None: ...

    def table_spelling(self, database: str, name: str) -> str | None: ...

    def has_table(self, identifier: str) -> bool: ...

    def is_spark_view(self, name: str) -> bool: ...

    def not_found(self, name: str) -> TableNotFoundError: ...

    def one_statement(self) -> AbstractContextManager[None]: ...


@dataclass(frozen=True)
class TableName:
    """A resolved Paimon table name (``system``: the system table asked for, e.g. ``snapshots``)."""

    database: str
    table: str
    system: str | None = None

    @property
    def identifier(self) -> str:
        return f"{self.database}.{self.table}"

    def __str__(self) -> str:
        suffix = f"{SYSTEM_TABLE_SEPARATOR}{self.system}" if self.system else ""
        return f"{self.identifier}{suffix}"


def _split_system(catalog: Catalog, database: str, name: str, must_exist: bool) -> TableName | None:
    """The table (system table) ``database.name`` with the warehouse's spelling, or None."""
    table, sep, system = name.partition(SYSTEM_TABLE_SEPARATOR)
    db = catalog.database_spelling(database)
    if db is None:
        return TableName(database, table, system.lower() if sep else None) if not must_exist else None
    spelt = catalog.table_spelling(db, table)
    if spelt is None and must_exist:
        return None
    return TableName(db, spelt or table, system.lower() if sep else None)


def resolve_parts(catalog: Catalog, parts: list[str], *, cte_names: frozenset[str] = frozenset(),
                  must_exist: bool = True) -> TableName | None:
    """The Paimon table ``parts`` (catalog, database, table; 1 to 3 of them) names, or None when the
    name is Spark's (see the module docstring). ``must_exist=False``: for CREATE, a name in a
    Paimon database (or under ``paimon.``) is ours even when no such table exists yet."""
    if len(parts) == 3:
        if parts[0].lower() != PAIMON_CATALOG:
            return None
        # Under ``paimon.`` the name is ours even when nothing exists: the caller reports it.
        return _split_system(catalog, parts[1], parts[2], False)
    if len(parts) == 2:
        if parts[0].lower() in (SPARK_CATALOG, "global_temp") or catalog.database_spelling(parts[0]) is None:
            return None
        # A database of the warehouse: its tables are ours (a missing one is reported by the caller).
        return _split_system(catalog, parts[0], parts[1], False)
    if len(parts) != 1:
        return None
    if parts[0].lower() in cte_names or catalog.is_spark_view(parts[0]):
        return None
    return _split_system(catalog, catalog.current_database, parts[0], must_exist)


def table_parts(table: exp.Table) -> list[str]:
    """A table node's name parts (catalog, database, table), the present ones."""
    return [p for p in (table.catalog, table.db, table.name) if p]


def resolve(catalog: Catalog, table: exp.Table, *, cte_names: frozenset[str] = frozenset(),
            must_exist: bool = True) -> TableName | None:
    """:func:`resolve_parts` of a table node of the parsed statement."""
    return resolve_parts(catalog, table_parts(table), cte_names=cte_names, must_exist=must_exist)


def parse(text: str) -> exp.Expr | None:
    """The one statement of ``text``, or None when sqlglot cannot parse it.

    Raises:
        SqlError: more than one statement (run them one ``sql`` call each, as ``spark.sql``).
    """
    try:
        statements = [s for s in sqlglot.parse(_temporal_spelled(text), read=DIALECT) if s is not None]
    except (ParseError, TokenError):
        return None
    if len(statements) > 1:
        raise SqlError(f"{len(statements)} statements in one sql() call; run one statement per call "
                       "(as spark.sql does)")
    return statements[0] if statements else None


def spark_parses(spark: SparkSession, text: str) -> None:
    """Raise Spark's own ``ParseException`` when Spark's parser refuses ``text``.

    sqlglot reads more than Spark does (``k IS NULL = false``, ``array_agg(x ORDER BY x)``): without
    this check such text was answered where ``spark.sql`` and Paimon's connector refuse it. Classic
    Spark: the session's parser alone (nothing is analysed or run). Spark Connect has no parser on
    the client: ``EXPLAIN <text>`` on the server parses the whole text and runs nothing (an analysis
    error, e.g. a Paimon table Spark's catalog does not know, comes back as text, not raised).
    """
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        first = text.lstrip().split(None, 1)[:1]
        spark.sql(text if first and first[0].upper() == "EXPLAIN" else f"EXPLAIN {text}").collect()
        return
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import convert_exception

    try:
        jsession.sessionState().sqlParser().parsePlan(text)
    except Py4JJavaError as error:
        raise convert_exception(error.java_exception) from None


#: Spark's spellings of a time-travel clause sqlglot does not read, and the one it reads instead:
#: ``[FOR] SYSTEM_VERSION AS OF`` is ``VERSION AS OF``, ``[FOR] SYSTEM_TIME AS OF`` ``TIMESTAMP AS OF``.
_TEMPORAL = {"SYSTEM_VERSION": "VERSION", "SYSTEM_TIME": "TIMESTAMP", "VERSION": "VERSION",
             "TIMESTAMP": "TIMESTAMP"}


def _temporal_spelled(text: str) -> str:
    """``text`` with Spark's other time-travel spellings in the one sqlglot parses (tokens, so a
    string or a quoted name that reads ``FOR SYSTEM_TIME`` is never touched)."""
    toks = spark_tokens(text)
    edits: list[tuple[int, int, str]] = []
    for i, tok in enumerate(toks):
        word = tok.text.upper()
        if word not in _TEMPORAL or i + 2 >= len(toks) or tok.token_type.name in ("STRING", "IDENTIFIER"):
            continue
        if toks[i + 1].text.upper() != "AS" or toks[i + 2].text.upper() != "OF":
            continue
        start = tok.start
        if i > 0 and toks[i - 1].text.upper() == "FOR" and toks[i - 1].token_type.name == "FOR":
            start = toks[i - 1].start
        elif i == 0 or toks[i - 1].token_type.name not in ("VAR", "IDENTIFIER"):
            continue  # not after a table name: a column ``system_time AS of`` stays one
        if start != tok.start or word != _TEMPORAL[word]:
            edits.append((start, tok.end + 1, _TEMPORAL[word]))
    for start, end, replacement in reversed(edits):
        text = text[:start] + replacement + text[end:]
    return text


def cte_names(statement: exp.Expr) -> frozenset[str]:
    """Every CTE name the statement defines (lower case): such a one-part name is never a table."""
    return frozenset(cte.alias.lower() for cte in statement.find_all(exp.CTE))


def relations(tree: exp.Expr) -> list[exp.Table]:
    """The table nodes of ``tree`` that name a relation: not those of a hint (``/*+ BROADCAST(a) */``
    names the relation whose alias is ``a``; replaced by a read, it stayed a name Spark refused)."""
    return [t for t in tree.find_all(exp.Table) if t.find_ancestor(exp.Hint) is None]


def names_paimon_table(catalog: Catalog, statement: exp.Expr) -> bool:
    """Whether any table the statement names is a Paimon table of the catalog."""
    ctes = cte_names(statement)
    return any(resolve(catalog, t, cte_names=ctes, must_exist=False) is not None
               for t in relations(statement))
