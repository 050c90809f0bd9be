"""Queries over Paimon tables: every reference a planned read, the rest of the statement Spark's.

How a query runs:

1. Each table node that names a Paimon table (:mod:`.names`) is one **reference**; two references
   to one table are two reads, planned independently (no state is shared between them).
2. A reference gets the conjuncts that are sound to apply to that reference's rows alone:

   - the WHERE conjuncts of the SELECT whose FROM/JOIN holds it, unless a join of that SELECT
     makes it null-supplying (the right side of LEFT, the left sources of RIGHT, any FULL);
   - the ON conjuncts of its own join when it is that join's right side of an inner, LEFT
     (outer, SEMI or ANTI) join, and the ON conjuncts of any inner join of the SELECT when no
     join makes it null-supplying;
   - only conjuncts whose every column is one of that reference's columns: qualified by its
     alias, or unqualified when every source of the SELECT is a Paimon table and no other one
     has a column of that name; no subquery, aggregate, window, lambda, struct field access,
     non-deterministic function or function sqlglot does not know (a UDF may be non-deterministic)
     in them.

   - through plain derived tables (a view put in place, ``FROM (SELECT ...) d``): the conjuncts
     of a SELECT whose only source is the derived table are first copied into the derived
     table's own WHERE, renamed to its source's columns (:func:`_copy_into_derived`).

   Those conjuncts (qualifiers removed) are the planned read's ``where``: the indexes and
   statistics pick the files and rows, and Spark applies the same text to the rows read.
3. The statement is regenerated (sqlglot's Spark generator without its rewrites for other
   dialects, :class:`~paimon_index.spark.sql.names.SparkText`) with each reference replaced by a
   placeholder bound to that reference's DataFrame (``spark.sql(text, ref=df)``; Spark Connect
   sends the plan itself) under the reference's alias (its table name when it had none), so
   **every conjunct stays in the statement** and Spark evaluates the whole query with its own
   semantics: the pushed conjuncts only remove rows the statement would remove anyway.

``SELECT ... FROM t [WHERE ...] ORDER BY <t's columns> LIMIT k`` (nothing else between the rows
and the LIMIT, every WHERE conjunct pushed) also hands the read the ORDER BY and k: each file's
range bitmap then keeps only its candidates for the top k.

A SELECT that reads none of a reference's columns (``SELECT count(*) FROM t``) gets the rows counted
from metadata instead (``rows_only``); when it is nothing but ``count(*)`` columns, the answer itself
replaces it, as an inline table Spark collects without a job (:func:`_fold_count`).
``SELECT * FROM t [WHERE <every conjunct pushed>]`` is the planned read's own DataFrame
(:func:`_read_is_the_answer`).

Time travel: ``FROM t VERSION AS OF <snapshot id | 'tag'>`` and ``TIMESTAMP AS OF '<time>'``
(:mod:`.travel`). System tables ``t$snapshots`` ... are read by :mod:`.system_tables`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from paimon_index.errors import SqlError, UnsupportedTableError
from paimon_index.spark.sql.names import DIALECT, PAIMON_CATALOG, WITH_ARG, TableName, relations, resolve
from paimon_index.table.system import AUDIT_LOG, DATA_SYSTEM_TABLES, READ_OPTIMIZED

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from paimon_index.spark.planned import PlannedRead
    from paimon_index.spark.sql.names import Catalog
    from paimon_index.table.api import Table

__all__ = ["OwnConjuncts", "Reference", "Rewritten", "explain", "own_conjuncts", "rewrite", "run",
           "unqualify_database"]

#: Functions whose value differs between two evaluations: a conjunct with one is never pushed
#: (the read would evaluate it apart from the statement, and Spark again on the rows it kept). Nor is
#: one with a function sqlglot does not know (``exp.Anonymous``): a UDF may be non-deterministic
#: (``asNondeterministic()``), and so may a Spark function newer than sqlglot.
#: The name Spark gives ``count(*)`` and ``count(1)`` without an alias.
_SPARK_COUNT_NAME = "count(1)"
_NON_DETERMINISTIC = frozenset({"rand", "random", "randn", "uniform", "randstr", "uuid", "shuffle",
                                "current_timestamp", "now",
                                "current_date", "curdate", "localtimestamp", "current_time",
                                "monotonically_increasing_id", "spark_partition_id", "input_file_name",
                                "input_file_block_start", "input_file_block_length",
                                "try_reflect", "reflect", "java_method"})
#: Expression kinds a pushed conjunct may not contain (their meaning depends on more than the row).
_UNPUSHABLE = (exp.Subquery, exp.Exists, exp.Select, exp.AggFunc, exp.Window, exp.Lambda, exp.Dot,
               exp.Placeholder, exp.Parameter, exp.Star)
#: Select-list expressions that may make a row of the FROM zero or several output rows before the
#: LIMIT (``explode``, ``posexplode``, ``inline``, ``stack`` ...; a function sqlglot does not know may
#: be one too: ``json_tuple``, ``inline_outer``, a Hive UDTF): with one, no read keeps only its top k.
_GENERATORS = (exp.UDTF, exp.Anonymous)
#: EXPLAIN lists the index bodies read and not read of at most this many files per reference.
_EXPLAIN_INDEX_FILES = 20
#: EXPLAIN's modes, as Spark spells them.
_EXPLAIN_MODES = ("EXTENDED", "FORMATTED", "CODEGEN", "COST")
#: Placeholders that stand for a reference in the regenerated text.
_PLACEHOLDER_PREFIX = "__paimon_ref_"
#: Parts of a table node the placeholder keeps (Spark applies them to the reference's rows):
#: ``TABLESAMPLE``, ``PIVOT``/``UNPIVOT``, the joins of a parenthesized join (``FROM (a JOIN b ON
#: ...)``: sqlglot hangs them on ``a``) and the alias with its column names. With any of them the
#: statement's conjuncts see other rows or other names than the table's: none is pushed.
_KEPT_TABLE_ARGS = ("sample", "pivots", "joins")
#: Parts of a table node the rewrite places itself (names, the alias, ``VERSION AS OF``).
_PLACED_TABLE_ARGS = frozenset({"this", "db", "catalog", "alias", "version", *_KEPT_TABLE_ARGS})


@dataclass
class Reference:
    """One Paimon table reference of a statement and how it is read."""

    name: TableName
    alias: str
    placeholder: str
    conjuncts: list[str] = field(default_factory=list)
    version: exp.Expr | None = None
    #: ``ORDER BY ... LIMIT k`` of its SELECT, when the read may keep just those rows (see _topn)
    order_by: str | None = None
    limit: int | None = None
    #: its SELECT reads none of its columns (``SELECT count(*) FROM t``): its rows are counted from
    #: metadata (:func:`~paimon_index.spark.planned.rows_only_read`)
    rows_only: bool = False
    #: with ``rows_only``: the SELECT's WHERE, every conjunct of it pushed (``conjuncts``), counted
    #: by the indexes when they answer it exactly -- then dropped from the statement
    counted_where: exp.Select | None = None
    #: the columns the statement may read of it (a superset, as the table spells them; a hint for the
    #: planned read)
    reads: list[str] | None = None
    #: the table, opened once for this reference (None: a system table)
    opened: Table | None = None
    #: set once read: the planned read (None: a system table or the source's merge read)
    planned: PlannedRead | None = None
    how: str = ""

    @property
    def where(self) -> str | None:
        return " AND ".join(f"({c})" for c in self.conjuncts) or None


@dataclass
class Rewritten:
    """A statement with its references replaced: ``spark.sql(text, **relations)`` runs it."""

    text: str
    relations: dict[str, DataFrame]
    references: list[Reference]

    def bind(self, placeholder: str, df: DataFrame) -> Rewritten:
        """This statement with the table named ``placeholder`` bound to ``df`` (``spark.sql``'s
        formatting: the first binding escapes the text's own braces)."""
        text = self.text if self.relations else self.text.replace("{", "{{").replace("}", "}}")
        text = text.replace(placeholder, "{" + placeholder + "}")
        return Rewritten(text, {**self.relations, placeholder: df}, self.references)

    def dataframe(self, spark: Any) -> DataFrame:
        if not self.relations:
            return spark.sql(self.text)
        return spark.sql(self.text, **self.relations)


# ------------------------------------------------------------------------------------------------
# Pushing conjuncts
# ------------------------------------------------------------------------------------------------
def _conjuncts(condition: exp.Expr | None) -> list[exp.Expr]:
    if condition is None:
        return []
    parts = condition.flatten() if isinstance(condition, exp.And) else [condition]
    return [c.unnest() for c in parts]


def _sources(select: exp.Select) -> list[exp.Expr]:
    """The FROM source and each join's source, in order."""
    from_ = select.args.get("from") or select.args.get("from_")
    first = [from_.this] if from_ is not None else []
    return first + [j.this for j in select.args.get("joins") or []]


def _null_supplying(select: exp.Select, index: int) -> bool:
    """Whether a join of ``select`` can fill source ``index``'s columns with NULLs."""
    for k, join in enumerate(select.args.get("joins") or [], start=1):
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        if side == "FULL" and index <= k:
            return True
        if side == "LEFT" and kind not in ("SEMI", "ANTI") and index == k:
            return True
        if side == "RIGHT" and index < k:
            return True
    return False


def _inner(join: exp.Join) -> bool:
    return not join.side and (join.kind or "").upper() in ("", "INNER", "CROSS")


def _function_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return node.sql_name().lower() if isinstance(node, exp.Func) else ""


def _pushable(conjunct: exp.Expr, alias: str, columns: frozenset[str],
              others: frozenset[str] | None, aliases: frozenset[str]) -> bool:
    """Whether ``conjunct`` reads the reference's columns only (see the module docstring).
    ``others``: the other sources' columns (None: some source's columns are unknown)."""
    if conjunct.find(*_UNPUSHABLE) is not None:
        return False
    if any(isinstance(f, exp.Anonymous) or _function_name(f) in _NON_DETERMINISTIC
           for f in conjunct.find_all(exp.Func)):
        return False
    cols = list(conjunct.find_all(exp.Column))
    if not cols:
        return False
    for col in cols:
        if col.args.get("db") is not None or col.args.get("catalog") is not None:
            return False
        name, qualifier = col.name.lower(), col.table.lower()
        if name not in columns:
            return False
        if qualifier:
            if qualifier != alias.lower():
                return False
        elif others is None or name in others or name in aliases:
            return False
    return True


def _order_text(ordered: exp.Ordered) -> str:
    column = ordered.this
    assert isinstance(column, exp.Column)
    desc = bool(ordered.args.get("desc"))
    nulls_first = ordered.args.get("nulls_first")
    nulls_first = (not desc) if nulls_first is None else bool(nulls_first)
    return (f"`{column.name.replace('`', '``')}` {'DESC' if desc else 'ASC'} "
            f"NULLS {'FIRST' if nulls_first else 'LAST'}")


def _topn(table: exp.Table, alias: str, columns: frozenset[str], pushed: list[str]) -> tuple[str, int] | None:
    """``(order_by, k)`` when the reference's SELECT is ``SELECT ... FROM <it> [WHERE w] ORDER BY
    <its columns> LIMIT k``, with every WHERE conjunct pushed (the read then keeps its own top k:
    the statement's top k is among them), and nothing between the rows and the LIMIT that sees other
    rows (joins, grouping, aggregates, windows, DISTINCT), makes a row zero or several (a generator
    such as ``explode`` in the select list) or renames an ORDER BY column."""
    parent = table.parent
    select = parent.parent if isinstance(parent, exp.From) else None
    if not isinstance(select, exp.Select) or select.args.get("joins") or select.args.get("laterals"):
        return None
    if any(select.args.get(k) for k in ("group", "having", "distinct", "qualify", "offset")):
        return None
    limit, order = select.args.get("limit"), select.args.get("order")
    if not isinstance(limit, exp.Limit) or order is None:
        return None
    count = limit.expression
    if not isinstance(count, exp.Literal) or count.is_string or not str(count.this).isdigit():
        return None
    if any(e.find(exp.AggFunc, exp.Window, *_GENERATORS) is not None for e in select.expressions):
        return None
    renamed = {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}
    for ordered in order.expressions:
        column = ordered.this
        if not isinstance(column, exp.Column) or column.args.get("db") is not None:
            return None
        if column.name.lower() not in columns or column.name.lower() in renamed:
            return None
        if column.table and column.table.lower() != alias.lower():
            return None
    where = select.args.get("where")
    if len(_conjuncts(where.this if where is not None else None)) != len(pushed):
        return None
    return ", ".join(_order_text(o) for o in order.expressions), int(count.this)


def _unqualified_text(conjunct: exp.Expr) -> str:
    copy = conjunct.copy()
    for col in copy.find_all(exp.Column):
        col.set("table", None)
    return copy.sql(DIALECT)


@dataclass(frozen=True)
class OwnConjuncts:
    """:func:`own_conjuncts`' answer."""

    #: one Spark SQL condition every row the statement takes meets (None: no such conjunct)
    text: str | None
    #: whether ``text`` is the whole condition (no conjunct left that reads another table)
    whole: bool


def own_conjuncts(condition: exp.Expr | None, alias: str, columns: frozenset[str]) -> OwnConjuncts:
    """The conjuncts of a single-table statement's condition (DELETE / UPDATE ``WHERE``) that read
    the table's own columns only (``columns``, lower case; qualified by ``alias`` or not)."""
    conjuncts = _conjuncts(condition)
    texts = _pushable_texts(conjuncts, alias, columns, frozenset(), frozenset())
    return OwnConjuncts(" AND ".join(f"({t})" for t in texts) if texts else None, _among(conjuncts, texts))


def _among(conjuncts: list[exp.Expr], texts: list[str]) -> bool:
    """Whether every one of ``conjuncts`` is among ``texts`` (as :func:`_unqualified_text`)."""
    return {_unqualified_text(c) for c in conjuncts} <= set(texts)


def _pushable_texts(candidates: list[exp.Expr], alias: str, columns: frozenset[str],
                    others: frozenset[str] | None, aliases: frozenset[str]) -> list[str]:
    """The distinct unqualified texts of the ``candidates`` that are :func:`_pushable`, in order."""
    texts: list[str] = []
    for conjunct in candidates:
        if _pushable(conjunct, alias, columns, others, aliases):
            text = _unqualified_text(conjunct)
            if text not in texts:
                texts.append(text)
    return texts


def _pushed(table: exp.Table, alias: str, columns: frozenset[str],
            columns_of: dict[int, frozenset[str] | None]) -> list[str]:
    """The conjuncts that hold for ``table``'s reference alone (module docstring), as text."""
    parent = table.parent
    select = parent.parent if isinstance(parent, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select):
        return []
    sources = _sources(select)
    index = next((i for i, s in enumerate(sources) if s is table), None)
    if index is None:
        return []
    others: frozenset[str] | None = frozenset()
    aliases = frozenset(s.alias_or_name.lower() for s in sources if s is not table)
    for i, source in enumerate(sources):
        if i == index:
            continue
        known = columns_of.get(id(source))
        others = None if known is None or others is None else others | known
    if select.args.get("laterals"):
        others = None
    candidates: list[exp.Expr] = []
    joins = select.args.get("joins") or []
    if not _null_supplying(select, index):
        where = select.args.get("where")
        candidates += _conjuncts(where.this if where is not None else None)
        candidates += [c for j in joins if _inner(j) for c in _conjuncts(j.args.get("on"))]
    if index >= 1:
        # Its own join's ON conjuncts about it alone: a row failing one never joins, whatever
        # joins follow (not for RIGHT/FULL, where its unmatched rows are kept).
        own = joins[index - 1]
        side, kind = (own.side or "").upper(), (own.kind or "").upper()
        if side in ("", "LEFT") and kind in ("", "INNER", "CROSS", "OUTER", "SEMI", "ANTI"):
            candidates += _conjuncts(own.args.get("on"))
    return _pushable_texts(candidates, alias, columns, others, aliases)


# ------------------------------------------------------------------------------------------------
# Rewriting and reading
# ------------------------------------------------------------------------------------------------
def _open(catalog: Catalog, name: TableName) -> Table:
    from paimon_index.table.api import open_table

    return open_table(catalog.warehouse, name.identifier, catalog_options=catalog.catalog_options)


def rewrite(catalog: Catalog, statement: exp.Expr, *, skip: frozenset[int] = frozenset()) -> Rewritten:
    """``statement`` with every Paimon reference (but the nodes whose ``id`` is in ``skip``, e.g. a
    DML target) replaced by its planned read. ``statement`` is not modified."""
    from paimon_index.spark.sql.names import cte_names

    tree = statement.copy()
    ctes = cte_names(tree)
    found: list[tuple[exp.Table, TableName]] = []
    skip_paths = _paths(statement, skip)
    for table in relations(tree):
        if _path(table) in skip_paths:
            continue
        name = resolve(catalog, table, cte_names=ctes, must_exist=False)
        if name is not None:
            if not catalog.has_table(name.identifier):
                raise catalog.not_found(str(name))
            _check_table_node(table, name)
            found.append((table, name))
    unqualify_database(tree, [table for table, _ in found], catalog.current_database)
    # Each reference opens its table once (its columns here, its read below); two references of
    # one table are two opens, two reads.
    # A system table of metadata is opened by its reader; t$ro and t$audit_log are reads of the
    # table's rows.
    opened_of = {id(table): None if name.system not in (None, *DATA_SYSTEM_TABLES) else _open(catalog, name)
                 for table, name in found}
    columns_of: dict[int, frozenset[str] | None] = {
        key: None if t is None else frozenset(n.lower() for n in t.schema.names)
        for key, t in opened_of.items()}
    for table, _ in found:  # a view put in place, a subquery: the outer WHERE reaches the table
        opened = opened_of[id(table)]
        if opened is not None and not _reshaped(table):
            _copy_into_derived(table, {n.lower(): n for n in opened.schema.names})
    references: list[Reference] = []
    token = uuid.uuid4().hex[:8]
    spelled = _spelled_columns(tree)
    for i, (table, name) in enumerate(found):
        alias = table.alias or table.name
        placeholder = f"{_PLACEHOLDER_PREFIX}{i}_{token}"
        known, opened = columns_of[id(table)], opened_of[id(table)]
        ref = Reference(name, alias, placeholder, version=table.args.get("version"), opened=opened)
        if known is not None and opened is not None and not _reshaped(table):
            ref.conjuncts = _pushed(table, alias, known, columns_of)
            topn = _topn(table, alias, known, ref.conjuncts)
            if topn is not None:
                ref.order_by, ref.limit = topn
            # An audit log's count is of its rows, -D rows too: not the table's live rows.
            countable = name.system != AUDIT_LOG
            ref.rows_only = countable and _reads_no_column(table)
            if countable and not ref.rows_only and _reads_no_column(table, where=True) and \
                    _all_pushed(table, ref.conjuncts):
                ref.rows_only, ref.counted_where = True, _select_of(table)
            names = list(opened.schema.names)
            ref.reads = names if spelled is None else [n for n in names if n.lower() in spelled]
        references.append(ref)
    reads = []
    for (table, _), ref in zip(found, references, strict=True):
        df = _read(catalog, ref)
        if ref.rows_only and ref.counted_where is not None:  # the indexes counted its rows exactly
            ref.counted_where.set("where", None)
        if not (ref.rows_only and _fold_count(table, ref)):
            reads.append((ref.placeholder, df))
        original = table.args.get("alias")
        replacement = exp.Table(this=exp.to_identifier(ref.placeholder),
                                alias=exp.TableAlias(this=exp.to_identifier(ref.alias),
                                                     columns=None if original is None
                                                     else original.args.get("columns")))
        for key in _KEPT_TABLE_ARGS:
            if table.args.get(key):
                replacement.set(key, table.args[key])
        table.replace(replacement)
    rewritten = Rewritten(tree.sql(DIALECT), {}, references)
    for placeholder, df in reads:
        rewritten = rewritten.bind(placeholder, df)
    return rewritten


def _fold_count(table: exp.Table, ref: Reference) -> bool:
    """Replace the SELECT over ``table`` by its answer when it is nothing but ``count(*)``s of the
    rows counted from metadata: ``SELECT count(*) AS n FROM t`` becomes ``SELECT r.c0 AS n FROM
    VALUES (CAST(<rows> AS BIGINT)) AS r(c0)``; whether it did. Spark collects an inline table
    without a job (a local relation), where counting the reference's ``range`` of rows is one
    (~50 ms; so is a SELECT without FROM, a scan of Spark's one-row relation). Paimon's connector
    answers ``count(*)`` by aggregate push-down the same way. A WHERE the indexes did not count, a
    GROUP BY, HAVING, DISTINCT, ORDER BY, LIMIT, ... or any other projection leave it as it is."""
    select = _select_of(table)
    if select is None or ref.planned is None:
        return False
    if any(value for key, value in select.args.items() if key not in ("expressions", "from_")):
        return False
    names = []
    for projection in select.expressions:
        count = projection.this if isinstance(projection, exp.Alias) else projection
        if not (isinstance(count, exp.Count) and _counts_every_row(count)):
            return False
        names.append(projection.args["alias"] if isinstance(projection, exp.Alias)
                     else exp.to_identifier(_SPARK_COUNT_NAME, quoted=True))
    rows = exp.cast(exp.Literal.number(ref.planned.plan.report.rows_returned), exp.DataType.Type.BIGINT)
    # Positional names inside: a SELECT may name two counts alike, an inline table's columns not.
    inner = [exp.to_identifier(f"c{i}") for i in range(len(names))]
    values = exp.Values(expressions=[exp.Tuple(expressions=[rows.copy() for _ in names])],
                        alias=exp.TableAlias(this=exp.to_identifier(ref.placeholder), columns=inner))
    select.set("expressions", [exp.alias_(exp.column(column, ref.placeholder), name)
                               for column, name in zip(inner, names, strict=True)])
    select.set("from_", exp.From(this=values))
    return True


def _counts_every_row(count: exp.Count) -> bool:
    """``count(*)`` or ``count(1)``: every row counted (no DISTINCT, no column, no filter)."""
    if any(value for key, value in count.args.items() if key not in ("this", "big_int")):
        return False
    argument = count.this
    return isinstance(argument, exp.Star) or (
        isinstance(argument, exp.Literal) and not argument.is_string and argument.this == "1")


def _reshaped(table: exp.Table) -> bool:
    """Whether Spark changes the reference's rows or names before its SELECT sees them
    (``TABLESAMPLE``, ``PIVOT``/``UNPIVOT``, a parenthesized join, column aliases ``AS x(a, b)``)."""
    alias = table.args.get("alias")
    return any(table.args.get(k) for k in _KEPT_TABLE_ARGS) or \
        (alias is not None and bool(alias.args.get("columns")))


def _spelled_columns(statement: exp.Expr) -> frozenset[str] | None:
    """Every name spelled in ``statement`` (lower case), a superset of the columns it reads of any
    table; None (every column) when it holds a ``*`` (but ``count(*)``) or a NATURAL join, which read
    columns unnamed."""
    names = set()
    for node in statement.walk():
        if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):  # count(*) reads none
            return None
        if isinstance(node, exp.Join) and node.text("method").upper() == "NATURAL":
            return None
        if isinstance(node, exp.Identifier):
            names.add(node.name.lower())
    return frozenset(names)


def _reads_no_column(table: exp.Table, *, where: bool = False) -> bool:
    """Whether the SELECT whose only source is ``table`` uses none of its columns (``SELECT count(*)
    FROM t``, ``SELECT 1 FROM t LIMIT 1``): no column and no ``*`` but ``count(*)`` anywhere in it, no
    WHERE, no join, nothing Spark does to the rows first, no function whose value depends on the row's
    file or partition. Such a statement's answer depends only on how many rows the reference has.
    ``where``: a WHERE is allowed (and its columns): the answer depends only on how many rows pass it."""
    select = _select_of(table)
    if select is None or _reshaped(table):
        return False
    if any(select.args.get(k) for k in ("joins", "laterals")) or (select.args.get("where") and not where):
        return False
    condition = select.args.get("where")
    if where and condition is None:
        return False
    skipped = set() if condition is None else {id(n) for n in condition.walk()}
    for node in select.walk():
        if id(node) in skipped:
            continue
        if isinstance(node, exp.Column):
            return False
        if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
            return False
        if isinstance(node, exp.Func) and _function_name(node) in _NON_DETERMINISTIC:
            return False
    return True


#: What keeps a SELECT from being a plain projection of its one source's rows (each output row one
#: input row that met its WHERE), keys of sqlglot's Select.
_NOT_PLAIN = ("joins", "laterals", "group", "having", "distinct", "qualify", "limit", "offset", "order",
              "windows", "sample", "pivots", WITH_ARG)


def _plain(select: exp.Select) -> bool:
    """Whether ``select`` only filters its one source's rows and picks columns (no grouping,
    ordering, limit, join, aggregate, window or generator): a conjunct on its output columns keeps
    the same rows when applied to its input instead."""
    if any(select.args.get(k) for k in _NOT_PLAIN):
        return False
    return all(e.find(exp.AggFunc, exp.Window, *_GENERATORS) is None for e in select.expressions)


def _is_star(item: exp.Expr) -> bool:
    return isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star))


def _derived_columns(select: exp.Select, derived: exp.Subquery,
                     known: dict[str, str]) -> dict[str, tuple[str, exp.Column]]:
    """The derived table's output columns (lower case) that are one of its SELECT's source columns
    (``known``: lower case -> as spelled), each with its own spelling and that source column (its
    qualifier dropped); none when they cannot be told (a column list over a ``*``). Names given
    twice are left out (ambiguous)."""
    out: dict[str, tuple[str, exp.Column]] = {}
    twice: set[str] = set()
    alias = derived.args.get("alias")
    listed = alias.args.get("columns") if alias is not None else None
    items = list(select.expressions)
    if listed and any(_is_star(e) for e in items):
        return {}
    for i, item in enumerate(items):
        if _is_star(item):
            pairs = [(spelled, spelled) for spelled in known.values()]
        else:
            value = item.this if isinstance(item, exp.Alias) else item
            if not isinstance(value, exp.Column) or value.args.get("db") is not None or \
                    value.name.lower() not in known:
                continue
            name = listed[i].name if listed and i < len(listed) else item.alias_or_name
            pairs = [(name, known[value.name.lower()])]
        for name, source in pairs:
            if name.lower() in out:
                twice.add(name.lower())
            out[name.lower()] = (name, exp.column(exp.to_identifier(source, quoted=True)))
    for key in twice:
        del out[key]
    return out


def _copy_into_derived(table: exp.Table, known: dict[str, str]) -> None:
    """Copy into the WHERE of ``table``'s SELECT the conjuncts of the enclosing SELECTs that hold for
    its rows: when that SELECT is a plain projection (:func:`_plain`) read as a derived table (a
    view put in place, ``FROM (SELECT ...) d``) that is the only source of a SELECT, that SELECT's
    WHERE conjuncts over the derived table's columns only (deterministic, no subquery: as
    :func:`_pushable`) hold for every row the statement keeps, so the reference may be given them.
    Up through derived tables of derived tables. Each copy only adds a filter the outer WHERE
    applies anyway: the outer WHERE keeps every conjunct, Spark evaluates both."""
    chain: list[tuple[exp.Select, exp.Subquery, exp.Select]] = []
    inner = _select_of(table)
    while inner is not None and _plain(inner):
        derived = inner.parent
        if not isinstance(derived, exp.Subquery) or not isinstance(derived.parent, exp.From):
            break
        outer = derived.parent.parent
        if not isinstance(outer, exp.Select) or outer.args.get("joins") or outer.args.get("laterals"):
            break
        chain.append((inner, derived, outer))
        inner = outer if _plain(outer) else None
    # Each level's columns, innermost first (a level's source is the level below it).
    levels: list[tuple[exp.Select, exp.Subquery, exp.Select, dict[str, exp.Column]]] = []
    for inner, derived, outer in chain:
        offered = _derived_columns(inner, derived, known)
        levels.append((inner, derived, outer, {k: column for k, (_, column) in offered.items()}))
        known = {k: spelled for k, (spelled, _) in offered.items()}
    # Outermost first: what an enclosing SELECT gives its derived table travels on down the chain.
    for inner, derived, outer, columns in reversed(levels):
        where = outer.args.get("where")
        if not columns or where is None:
            continue
        alias = derived.alias_or_name.lower()
        for conjunct in _conjuncts(where.this):
            copy = _over_columns(conjunct, alias, columns)
            if copy is not None:
                inner.where(copy, copy=False)


def _over_columns(conjunct: exp.Expr, alias: str, columns: dict[str, exp.Column]) -> exp.Expr | None:
    """``conjunct`` with its columns (all of them the derived table's, by ``alias`` or unqualified)
    replaced by the source columns they are; None when it reads anything else or is not pushable."""
    if conjunct.find(*_UNPUSHABLE) is not None:
        return None
    if any(isinstance(f, exp.Anonymous) or _function_name(f) in _NON_DETERMINISTIC
           for f in conjunct.find_all(exp.Func)):
        return None
    copy = conjunct.copy()
    found = list(copy.find_all(exp.Column))
    if not found:
        return None
    for col in found:
        if col.args.get("db") is not None or (col.table and col.table.lower() != alias):
            return None
        source = columns.get(col.name.lower())
        if source is None:
            return None
        if col is copy:  # a boolean column as the whole conjunct
            return source.copy()
        col.replace(source.copy())
    return copy


def _select_of(table: exp.Table) -> exp.Select | None:
    """The SELECT whose FROM is ``table`` (None: the table is a join's source or elsewhere)."""
    parent = table.parent
    select = parent.parent if isinstance(parent, exp.From) else None
    return select if isinstance(select, exp.Select) else None


def _all_pushed(table: exp.Table, pushed: list[str]) -> bool:
    """Whether every conjunct of the WHERE of ``table``'s SELECT is among the ``pushed`` texts: the
    read that applies them applies the whole WHERE."""
    select = _select_of(table)
    if select is None or select.args.get("where") is None:
        return False
    return _among(_conjuncts(select.args["where"].this), pushed)


def _check_table_node(table: exp.Table, name: TableName) -> None:
    """A table node's parts the rewrite would not carry over are refused, never dropped."""
    dropped = sorted(k for k, v in table.args.items() if v and k not in _PLACED_TABLE_ARGS)
    if dropped:
        raise SqlError(f"{name}: {', '.join(dropped)} on a Paimon table is not supported")


def unqualify_database(tree: exp.Expr, tables: Sequence[exp.Table],
                       current_database: str | None = None) -> None:
    """``db.t.c`` or ``paimon.db.t.c`` names column ``c`` of the reference ``db.t``, ``paimon.db.t``
    or ``t`` of ``current_database`` (Paimon tables without an alias: ``tables``), as Spark
    qualifies a resolved table with its
    catalog, database and name: once the reference is read under its alias ``t``, the column is
    ``t.c``."""
    def key(catalog: str, db: str, name: str) -> tuple[str, str]:
        # The catalog is Paimon's whether spelled or not; another catalog's name never matches.
        return (db.lower(), name.lower()) if catalog.lower() in ("", PAIMON_CATALOG) else ("", "")

    # A table named in one part is in the current database: db.t.c names its column c too.
    spelled = {key(t.catalog or "", t.db or current_database or "", t.name)
               for t in tables if not t.alias and (t.db or current_database)} - {("", "")}
    for col in tree.find_all(exp.Column):
        db = col.args.get("db")
        if db is None:
            continue
        catalog = col.args.get("catalog")
        if key(catalog.name if catalog is not None else "", db.name, col.table) in spelled:
            col.set("db", None)
            col.set("catalog", None)


def _path(node: exp.Expr) -> tuple[Any, ...]:
    """Where a node sits in its tree (argument keys and list positions from the root)."""
    steps: list[Any] = []
    while node.parent is not None:
        steps.append((node.arg_key, node.index))
        node = node.parent
    return tuple(reversed(steps))


def _paths(statement: exp.Expr, ids: frozenset[int]) -> set[tuple[Any, ...]]:
    return {_path(n) for n in statement.walk() if id(n) in ids}


def _read(catalog: Catalog, ref: Reference) -> DataFrame:
    """The DataFrame of one reference (its planned read, a system table, or the merge read)."""
    from paimon_index.spark import jobs
    from paimon_index.spark.planned import merge_read

    if ref.name.system is not None and ref.name.system not in DATA_SYSTEM_TABLES:
        from paimon_index.spark.sql import system_tables

        if ref.version is not None:
            raise SqlError(f"time travel on the system table {ref.name} is not supported")
        ref.how = f"system table {ref.name.system}"
        return system_tables.frame(catalog, ref.name)
    snapshot_id = None
    read_optimized = ref.name.system == READ_OPTIMIZED
    if ref.version is not None:
        from paimon_index.spark.sql import travel

        snapshot_id = travel.snapshot_id(catalog, ref.name, ref.version,
                                         None if ref.opened is None else ref.opened.paimon_table)
    try:
        if ref.rows_only:
            from paimon_index.spark.planned import rows_only_read

            counted = rows_only_read(catalog.spark, ref.name.identifier, snapshot_id=snapshot_id,
                                     warehouse=catalog.warehouse, catalog_options=catalog.catalog_options,
                                     opened=ref.opened,
                                     where=None if ref.counted_where is None else ref.where,
                                     read_optimized=read_optimized)
            if counted is not None:
                ref.planned = counted
                rows = counted.plan.report.rows_returned
                ref.how = (f"row count from metadata ({rows} rows, no data read)" if ref.counted_where is None
                           else f"row count from the indexes' exact answer ({rows} rows, no data read)")
                return counted.dataframe
            ref.rows_only, ref.counted_where = False, None  # not exact: read, the WHERE left to Spark
        planned = jobs.read_planned(catalog.spark, ref.name.identifier, ref.where, snapshot_id=snapshot_id,
                                    order_by=ref.order_by, limit=ref.limit, warehouse=catalog.warehouse,
                                    catalog_options=catalog.catalog_options, opened=ref.opened,
                                    reads=ref.reads, read_optimized=read_optimized,
                                    audit_log=ref.name.system == AUDIT_LOG)
    except UnsupportedTableError as refusal:
        if ref.name.system is not None:  # the merge read reads the table's live rows, not these
            raise SqlError(f"{ref.name}: {refusal}") from refusal
        ref.conjuncts, ref.order_by, ref.limit, ref.rows_only = [], None, None, False
        frame, ref.how = merge_read(catalog.spark, ref.name.identifier, snapshot_id, catalog.warehouse,
                                    catalog.catalog_options, refusal, opened=ref.opened)
        return frame
    ref.planned = planned
    ref.how = "planned read" + {READ_OPTIMIZED: " of the top level (read-optimized)",
                                AUDIT_LOG: " with row kinds (audit log)"}.get(ref.name.system or "", "")
    return planned.dataframe


def run(catalog: Catalog, statement: exp.Expr) -> DataFrame:
    """A query (SELECT, WITH, set operation) as a DataFrame."""
    rewritten = rewrite(catalog, statement)
    answer = _read_is_the_answer(statement, rewritten)
    return answer if answer is not None else rewritten.dataframe(catalog.spark)


def _read_is_the_answer(statement: exp.Expr, rewritten: Rewritten) -> DataFrame | None:
    """The planned read itself when the statement is ``SELECT * FROM t [WHERE ...]`` with every
    conjunct of its WHERE pushed into that read: the read applies them (Spark's ``filter`` of the
    same texts) and has the table's columns in the table's order, which is that statement's answer.
    Running the statement over it instead costs a temporary view made and dropped and an analysis
    of the text (~15-20 ms of a 40 ms point lookup)."""
    if not isinstance(statement, exp.Select) or len(rewritten.references) != 1:
        return None
    if any(value for key, value in statement.args.items() if key not in ("expressions", "from_", "where")):
        return None
    (star,) = statement.expressions if len(statement.expressions) == 1 else (None,)
    if not isinstance(star, exp.Star) or any(star.args.values()):
        return None
    source = statement.args["from_"].this
    (ref,) = rewritten.references
    # No planned read (a system table, the source's merge read) or the counted rows of a SELECT
    # that reads no column: the statement over it.
    if not isinstance(source, exp.Table) or _reshaped(source) or ref.planned is None or ref.rows_only \
            or ref.order_by is not None:
        return None
    where = statement.args.get("where")
    if where is not None and not _among(_conjuncts(where.this), ref.conjuncts):
        return None
    return ref.planned.dataframe


# ------------------------------------------------------------------------------------------------
# EXPLAIN
# ------------------------------------------------------------------------------------------------
def _describe(ref: Reference) -> str:
    lines = [f"{ref.name} AS {ref.alias}: {ref.how}"
             + (f", snapshot {ref.version.sql(DIALECT)}" if ref.version is not None else "")]
    lines.append(f"  pushed: {ref.where or '(nothing)'}")
    if ref.limit is not None:
        lines.append(f"  top {ref.limit} by {ref.order_by}")
    if ref.planned is not None:
        r = ref.planned.plan.report
        lines.append(f"  files planned {r.files_planned}, skipped by statistics {r.files_skipped_by_stats}, "
                     f"by index {r.files_skipped_by_index}, by schema {r.files_skipped_by_schema}; "
                     f"rows planned {r.rows_planned}, selected by index {r.rows_selected_by_index}, "
                     f"removed by deletion vectors {r.rows_removed_by_deletion_vectors}")
        if r.index_uses:
            lines.append(f"  index bodies read {r.index_bodies_read}, not read {r.index_bodies_not_read}:")
            shown = r.index_lines()
            lines.extend(f"    {line}" for line in shown[:_EXPLAIN_INDEX_FILES])
            if len(shown) > _EXPLAIN_INDEX_FILES:
                lines.append(f"    ... {len(shown) - _EXPLAIN_INDEX_FILES} more files")
        if ref.planned.small_rows is not None:
            lines.append(f"  small read on the driver: {ref.planned.small_rows} candidate rows")
        if ref.planned.fallback is not None:
            lines.append(f"  read by the paimon_index source: {ref.planned.fallback}")
    return "\n".join(lines)


def explain(catalog: Catalog, rest: str, text: str) -> DataFrame:
    """``EXPLAIN [mode] <query>``: Spark's plan of the rewritten query, then each reference's plan."""
    from paimon_index.spark.sql.names import names_paimon_table, parse

    words = rest.split(None, 1)
    mode = words[0].upper() if words and words[0].upper() in _EXPLAIN_MODES else ""
    body = rest.split(None, 1)[1] if mode and len(words) > 1 else rest
    statement = parse(body)
    if statement is None or not names_paimon_table(catalog, statement):
        return catalog.spark.sql(text)
    if not isinstance(statement, exp.Query):
        raise SqlError("EXPLAIN of a statement other than a query is not supported on Paimon tables")
    rewritten = rewrite(catalog, statement)
    prefix = f"EXPLAIN {mode} " if mode else "EXPLAIN "
    spark_plan = Rewritten(prefix + rewritten.text, rewritten.relations, rewritten.references) \
        .dataframe(catalog.spark).collect()[0][0]
    ours = "\n".join(_describe(r) for r in rewritten.references)
    combined = f"{spark_plan}\n== Paimon references ==\n{ours}\n"
    return catalog.spark.createDataFrame([(combined,)], "plan string")
