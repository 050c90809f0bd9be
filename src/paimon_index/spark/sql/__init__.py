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
goes to Spark too (Spark reports its own error; it cannot reach a Paimon table through it). Every
other statement is first checked by Spark's own parser (:func:`.names.spark_parses`): what Spark
refuses, we refuse with Spark's error, however sqlglot would have read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from paimon_index.errors import SqlError
from paimon_index.spark.sql.names import (
    DIALECT,
    Catalog,
    cte_names,
    names_paimon_table,
    parse,
    spark_parses,
    spark_tokens,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["DIALECT", "cte_names", "execute", "names_paimon_table", "parse"]


def _command(statement: exp.Expr) -> tuple[str, str]:
    """(keyword upper-cased, the rest of the text) of a statement sqlglot kept as a raw command."""
    keyword = str(statement.this).upper()
    expression = statement.expression
    rest = expression.name if isinstance(expression, exp.Literal) else \
        expression if isinstance(expression, str) else \
        (expression.sql(DIALECT) if expression is not None else "")
    return keyword, rest


def _table_statement(text: str) -> str | None:
    """``TABLE t`` (Spark's query for every row of ``t``) as ``SELECT * FROM t``, which sqlglot reads
    (it took ``TABLE t`` for a column aliased ``t``, and the statement went to Spark unread); None
    for any other text."""
    from sqlglot.errors import TokenError
    from sqlglot.tokens import TokenType

    try:
        toks = spark_tokens(text)
    except TokenError:
        return None
    if len(toks) < 2 or toks[0].text.upper() != "TABLE":
        return None
    names = toks[1:-1] if toks[-1].token_type is TokenType.SEMICOLON else toks[1:]
    if not all(t.token_type in (TokenType.VAR, TokenType.IDENTIFIER, TokenType.DOT) or t.text.isidentifier()
               for t in names):
        return None
    return "SELECT * FROM " + text[toks[1].start : names[-1].end + 1]


def _unparsed(catalog: Catalog, text: str) -> DataFrame | None:
    """An ``ALTER`` or ``REPLACE`` statement sqlglot cannot parse (``ALTER TABLE t CHANGE COLUMN c
    AFTER x``, ``REPLACE TABLE t (...)``), run as the statements it keeps as raw text
    (:func:`.ddl.command`: a Paimon table's is run or refused, any other goes to Spark); None for
    other text."""
    from sqlglot.errors import TokenError

    from paimon_index.spark.sql import ddl

    try:
        toks = spark_tokens(text)
    except TokenError:
        return None
    keyword = toks[0].text.upper() if toks else ""
    if len(toks) < 2 or keyword not in ("ALTER", "REPLACE"):
        return None
    spark_parses(catalog.spark, text)
    return ddl.command(catalog, keyword, text[toks[1].start :], text)


def execute(catalog: Catalog, text: str) -> DataFrame:
    """Run one statement (see the module docstring)."""
    from paimon_index.spark.sql import ddl, dml, procedures, query, views

    if not isinstance(text, str) or not text.strip():
        raise SqlError("sql() needs the text of one SQL statement")
    statement = parse(_table_statement(text) or text)
    if statement is None:
        described = ddl.describe_column(catalog, text)  # DESCRIBE t col: sqlglot does not parse it
        if described is not None:
            return described
        altered = _unparsed(catalog, text)  # ALTER TABLE t CHANGE COLUMN c AFTER x, REPLACE TABLE
        return altered if altered is not None else catalog.spark.sql(text)
    if isinstance(statement, (exp.Command, exp.Create, exp.Drop, exp.Alter, exp.Describe, exp.Use)):
        spark_parses(catalog.spark, text)
    if isinstance(statement, exp.Command):
        keyword, rest = _command(statement)
        if keyword == "CALL":
            return procedures.call(catalog, rest)
        if keyword == "EXPLAIN":
            if catalog.views:  # the views it reads, put in place
                explained = parse(rest)
                if explained is not None:
                    rest = views.expand(catalog, explained).sql(DIALECT)
            with catalog.one_statement():
                return query.explain(catalog, rest, text)
        return ddl.command(catalog, keyword, rest, text)
    if isinstance(statement, exp.Create):
        with catalog.one_statement():
            made = views.create(catalog, statement, text)
        if made is not None:
            return made
        if isinstance(statement.expression, exp.Query):  # CREATE TABLE ... AS a query reading views
            statement.set("expression", views.expand(catalog, statement.expression))
    if isinstance(statement, exp.Drop):
        dropped = views.drop(catalog, statement, text)
        if dropped is not None:
            return dropped
    if isinstance(statement, exp.Describe) and catalog.views:
        described = views.describe(catalog, statement)
        if described is not None:
            return described
    if isinstance(statement, (exp.Create, exp.Drop, exp.Alter, exp.Describe, exp.Use)):
        return ddl.run(catalog, statement, text)
    statement = views.expand(catalog, statement)
    with catalog.one_statement():
        if not names_paimon_table(catalog, statement):
            return catalog.spark.sql(text)
        spark_parses(catalog.spark, text)
        if isinstance(statement, exp.Query):
            return query.run(catalog, statement)
        if isinstance(statement, (exp.Insert, exp.Delete, exp.Update, exp.Merge, exp.TruncateTable)):
            return dml.run(catalog, statement)
        if isinstance(statement, exp.Refresh):
            # Every statement plans a Paimon table's latest snapshot: nothing is cached to refresh.
            return catalog.spark.range(0).select()
        if isinstance(statement, (exp.Cache, exp.Uncache)):
            raise SqlError(f"{text.strip()[:200]}: Spark's cache of a Paimon table is not supported (every "
                           "query plans the table's latest snapshot); cache a query's result instead: "
                           "paimon.sql('SELECT ...').cache()")
    raise SqlError(f"statement {type(statement).__name__.upper()} is not supported on Paimon tables: "
                   f"{text.strip()[:200]}")
