"""Spark SQL text over Paimon tables: parse (sqlglot, Spark's dialect), then run each statement kind.

=====================================  ===================================================
statement                              runs in
=====================================  ===================================================
``SELECT`` / ``WITH`` / set operations  :mod:`.query` (each Paimon reference: a planned read)
``EXPLAIN <query>``                    :mod:`.query` (Spark's plan + each reference's plan)
``INSERT`` / ``DELETE`` / ``UPDATE`` /  :mod:`.dml`
``MERGE INTO`` / ``TRUNCATE TABLE``
``CREATE`` / ``DROP`` / ``ALTER`` /     :mod:`.ddl`
``SHOW`` / ``DESCRIBE`` / ``USE``
``CALL sys.<procedure>(...)``          :mod:`.procedures`
=====================================  ===================================================

A statement that names no Paimon table (and is no ``CALL``) goes to ``spark.sql`` as written, so
Spark's own tables, views and commands behave exactly as without us. Text sqlglot cannot parse
goes to Spark too (Spark reports its own error; it cannot reach a Paimon table through it).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from paimon_index.errors import SqlError
from paimon_index.spark.sql.names import resolve

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.catalog import Catalog

__all__ = ["DIALECT", "cte_names", "execute", "parse"]

#: sqlglot's name of Spark's SQL dialect.
DIALECT = "spark"
#: sqlglot logs a warning for each statement it keeps as a raw ``Command``; those are expected here.
logging.getLogger("sqlglot").setLevel(logging.ERROR)


def parse(text: str) -> exp.Expr | None:
    """The one statement of ``text``, or None when sqlglot cannot parse it.

    Raises:
        SqlError: more than one statement (run them one ``sql`` call each, as ``spark.sql``).
    """
    try:
        statements = [s for s in sqlglot.parse(text, read=DIALECT) if s is not None]
    except (ParseError, TokenError):
        return None
    if len(statements) > 1:
        raise SqlError(f"{len(statements)} statements in one sql() call; run one statement per call "
                       "(as spark.sql does)")
    return statements[0] if statements else None


def cte_names(statement: exp.Expr) -> frozenset[str]:
    """Every CTE name the statement defines (lower case): such a one-part name is never a table."""
    return frozenset(cte.alias.lower() for cte in statement.find_all(exp.CTE))


def _command(statement: exp.Expr) -> tuple[str, str]:
    """(keyword upper-cased, the rest of the text) of a statement sqlglot kept as a raw command."""
    keyword = str(statement.this).upper()
    expression = statement.expression
    rest = expression.name if isinstance(expression, exp.Literal) else \
        expression if isinstance(expression, str) else \
        (expression.sql(DIALECT) if expression is not None else "")
    return keyword, rest


def names_paimon_table(catalog: Catalog, statement: exp.Expr) -> bool:
    """Whether any table the statement names is a Paimon table of the catalog."""
    ctes = cte_names(statement)
    return any(resolve(catalog, t, cte_names=ctes, must_exist=False) is not None
               for t in statement.find_all(exp.Table))


def execute(catalog: Catalog, text: str) -> DataFrame:
    """Run one statement (see the module docstring)."""
    from paimon_index.spark.sql import ddl, dml, procedures, query

    if not isinstance(text, str) or not text.strip():
        raise SqlError("sql() needs the text of one SQL statement")
    statement = parse(text)
    if statement is None:
        return catalog.spark.sql(text)
    if isinstance(statement, exp.Command):
        keyword, rest = _command(statement)
        if keyword == "CALL":
            return procedures.call(catalog, rest)
        if keyword == "EXPLAIN":
            return query.explain(catalog, rest, text)
        return ddl.command(catalog, keyword, rest, text)
    if isinstance(statement, (exp.Create, exp.Drop, exp.Alter, exp.Describe, exp.Use)):
        return ddl.run(catalog, statement, text)
    if not names_paimon_table(catalog, statement):
        return catalog.spark.sql(text)
    if isinstance(statement, exp.Query):
        return query.run(catalog, statement)
    if isinstance(statement, (exp.Insert, exp.Delete, exp.Update, exp.Merge, exp.TruncateTable)):
        return dml.run(catalog, statement)
    raise SqlError(f"statement {type(statement).__name__.upper()} is not supported on Paimon tables: "
                   f"{text.strip()[:200]}")
