"""The planned read: Python plans with the indexes, Spark's own Parquet reader reads.

    from paimon_index.spark import jobs
    df = jobs.read(spark, "db.orders", where="status = 'PAID' OR id = 7", columns=["id", "score"],
                   warehouse=W)                       # a normal DataFrame (lazy; SQL through a view)
    planned = jobs.read_planned(spark, "db.orders", where=..., warehouse=W)
    planned.dataframe, planned.plan.report, planned.plan.files  # the plan behind it

What runs where:

1. **Driver, Python** (:func:`paimon_index.table.scan.plan_read`): pin one snapshot; pypaimon's plan
   of its manifests with the value-statistics filter; every remaining file's index (embedded or
   ``.index``) answers the whole WHERE (ORs included; text our parser does not know counts as TRUE);
   deletion vectors are read. Files that cannot hold a matching live row are dropped.
2. **Spark, JVM**: ``spark.read.parquet`` over the surviving files with an explicit schema (no
   footer read to infer it), Spark's column pruning and Parquet filter pushdown, and the user's
   ``where`` applied by Spark itself -- so every row returned is what Spark's filter says, by
   construction. Files with a deletion vector are read with ``_metadata.file_size`` and
   ``_metadata.row_index`` (one BIGINT key) and broadcast-anti-joined with their deleted positions;
   files without one, or whose vector deletes none of the rows the indexes kept
   (``FilePlan.deletion_needed``: Spark's filter then never meets a deleted row), are read with no
   join at all. Row selections of the indexes are *not* joined
   in: Spark's filter is exact anyway, and a semi join cannot make the Parquet reader skip a page
   (``docs/read-path.md``); they only decide which files are read. FLOAT/DOUBLE columns are kept out
   of Spark's Parquet filter pushdown (:func:`_shield_floats`). A TopN (``order_by`` + ``limit``)
   adds its global bound on the first key (:func:`paimon_index.table.scan.topn_bound`) as a filter
   Spark's Parquet reader skips row groups by.

Schema evolution: files are grouped by the schema id they were written with; each group is read
with its own columns and projected to the current schema (renamed by field id, missing columns a
typed NULL, widened types cast -- ``INT -> BIGINT``, ``FLOAT -> DOUBLE`` and the like, which Spark
casts exactly as the Python reader does), then the groups are ``unionByName``-ed.

Primary-key tables in deletion-vectors mode read their level >= 1 files minus their vectors, the
user columns only (as :mod:`paimon_index.table.pk.read` does merge-free); a table that needs a merge
is refused (:class:`~paimon_index.table.read.UnsupportedTableError`).

What falls back to the ``paimon_index`` Python source (the same plan's snapshot, the ``where``
applied by Spark; ``plan.fallback`` says why): a column Spark's Parquet reader cannot read as Paimon
means it (timestamps in nanoseconds), and a type change between schema versions other than the
widenings above (Paimon's Java casts, e.g. narrowing with wrap-around, are the Python reader's).

Data files are read through Spark's own file systems: local paths (and whatever Hadoop file
systems the session is configured for).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from paimon_index.errors import InvalidOptionError
from paimon_index.sql import parse_order_by
from paimon_index.table.read import UnsupportedTableError
from paimon_index.table.scan import FilePlan, ReadPlan, plan_read, topn_bound

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["PlannedRead", "read", "read_planned"]

#: The internal join column (no Paimon table has such a name).
_ROW = "__paimon_index_row__"
#: Row positions take the low 32 bits of the join key; file sizes the rest (up to 2^31 bytes).
_POSITION_SPAN = 1 << 32
_MAX_KEYED = 1 << 31
#: Spark lists more paths than this with a distributed job (see :func:`_no_listing_job`).
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
#: Arrow -> Arrow casts Spark performs exactly as the Python reader (Arrow / Java widening) does.
_WIDENING = {
    (pa.int8(), pa.int16()), (pa.int8(), pa.int32()), (pa.int8(), pa.int64()),
    (pa.int16(), pa.int32()), (pa.int16(), pa.int64()), (pa.int32(), pa.int64()),
    (pa.float32(), pa.float64()), (pa.int8(), pa.float64()), (pa.int16(), pa.float64()),
    (pa.int32(), pa.float64()),
}


@dataclass(frozen=True)
class PlannedRead:
    """A planned read: the DataFrame and the plan behind it."""

    dataframe: DataFrame
    plan: ReadPlan
    #: why the Python source reads instead of Spark's Parquet reader (None: it does not)
    fallback: str | None = None


def _spark_schema(fields: Sequence[Any]) -> Any:
    """Spark's schema of pypaimon fields (every field nullable, as the Python source has it)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from paimon_index.spark.datasource import _nullable
    from paimon_index.table.paimon import arrow_schema

    return _nullable(from_arrow_schema(arrow_schema(fields)))


def _unreadable(arrow: pa.Schema) -> str | None:
    """Why Spark's Parquet reader cannot read these columns as Paimon means them (None: it can)."""
    def bad(t: pa.DataType) -> bool:
        if pa.types.is_timestamp(t):
            return t.unit == "ns"
        if pa.types.is_struct(t):
            return any(bad(t.field(i).type) for i in range(t.num_fields))
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return bad(t.value_type)
        if pa.types.is_map(t):
            return bad(t.key_type) or bad(t.item_type)
        return False

    for f in arrow:
        if bad(f.type):
            return f"column {f.name!r} is {f.type}, which Spark's Parquet reader does not read as a timestamp"
    return None


class _Group:
    """Files written with one schema id: their columns and the projection to the current schema."""

    def __init__(self, table: Any, plan: ReadPlan, schema_id: int) -> None:
        from paimon_index.table.paimon import arrow_schema

        current = table.table_schema
        version = current if schema_id == current.id else table.schema_manager.get_schema(schema_id)
        self.fields = list(version.fields)
        self.arrow = arrow_schema(self.fields)
        self.mapping = plan.schema.mapping(schema_id)
        self.current_arrow = arrow_schema(current.fields)

    def problem(self) -> str | None:
        reason = _unreadable(self.arrow)
        if reason is not None:
            return reason
        for source in self.mapping.sources:
            if source.file_name is None or source.cast is None:
                continue
            old = self.arrow.field(source.file_name).type
            if (old, source.cast) not in _WIDENING:
                return (f"column {source.name!r} changed type ({old} -> {source.cast}); the Python reader "
                        "casts it as Paimon's Java does")
        return None

    def project(self, df: DataFrame, current: Any) -> DataFrame:
        """``df`` (the file's columns) as the current columns, in the current order."""
        from pyspark.sql import functions as F

        if self.mapping.identity:
            return df
        types = {f.name: f.dataType for f in current.fields}
        columns = []
        for source in self.mapping.sources:
            if source.file_name is None:
                columns.append(F.lit(None).cast(types[source.name]).alias(source.name))
            elif source.cast is not None:
                columns.append(F.col(f"`{source.file_name}`").cast(types[source.name]).alias(source.name))
            else:
                columns.append(F.col(f"`{source.file_name}`").alias(source.name))
        return df.select(*columns)


def _key_batches(files: Sequence[FilePlan]) -> list[list[FilePlan]]:
    """The files in batches where each file's size is unique (the anti join's key is the file's size
    and the row's position, see :func:`_row_key`)."""
    batches: list[list[FilePlan]] = []
    sizes: list[set[int]] = []
    for f in files:
        for batch, seen in zip(batches, sizes, strict=True):
            if f.file_size not in seen:
                batch.append(f)
                seen.add(f.file_size)
                break
        else:
            batches.append([f])
            sizes.append({f.file_size})
    return batches


def _row_key() -> Any:
    """One BIGINT per row of a scan: ``file_size * 2^32 + row_index``.

    A single long key makes the broadcast anti join a probe of a long hash map (a (path, position)
    key hashes a string per row, measured ~2x slower on a full count); Spark's ``_metadata.file_path``
    is also a URI (``file:/a%20b/...``), which a plain size needs no care for. Unique within a batch
    of files of distinct sizes (:func:`_key_batches`); sizes and positions fit (:data:`_MAX_KEYED`).
    """
    from pyspark.sql import functions as F

    return (F.col("_metadata.file_size") * F.lit(_POSITION_SPAN) + F.col("_metadata.row_index")).alias(_ROW)


def _deleted_frame(spark: SparkSession, files: Sequence[FilePlan]) -> DataFrame:
    """The :func:`_row_key` of every deleted row of ``files``, as one small DataFrame to broadcast."""
    from pyspark.sql.types import LongType, StructField, StructType

    keys = np.concatenate([np.int64(f.file_size) * _POSITION_SPAN + f.deleted
                           for f in files if f.deleted is not None])
    schema = StructType([StructField(_ROW, LongType(), False)])
    return spark.createDataFrame(pa.table({_ROW: pa.array(keys, pa.int64())}), schema)


def _scan(spark: SparkSession, group: _Group, files: Sequence[FilePlan], current: Any) -> DataFrame:
    """The live rows of ``files`` (one schema id) under the current schema."""
    from pyspark.sql import functions as F

    file_schema = _spark_schema(group.fields)
    plain = [f.path for f in files if f.deleted is None or not f.deletion_needed]
    with_dv = [f for f in files if f.deleted is not None and f.deletion_needed]
    if any(f.file_size >= _MAX_KEYED or f.row_count > _POSITION_SPAN for f in with_dv):
        raise UnsupportedTableError("a data file with a deletion vector is over 2 GiB or 2^32 rows: "
                                    "read it with Table.read or the paimon_index source")
    parts = []
    if plain:
        parts.append(group.project(spark.read.schema(file_schema).parquet(*plain), current))
    for batch in _key_batches(with_dv):
        scanned = spark.read.schema(file_schema).parquet(*[f.path for f in batch])
        keyed = scanned.select("*", _row_key())
        live = keyed.join(F.broadcast(_deleted_frame(spark, batch)), [_ROW], "left_anti")
        parts.append(group.project(live.drop(_ROW), current))
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out


def _shield_floats(df: DataFrame) -> DataFrame:
    """FLOAT/DOUBLE columns behind ``nanvl(c, c)`` (the same value, -0.0 and NaN included), so Spark
    cannot push a filter on them into its Parquet reader.

    Why: pyarrow (pypaimon's writer) leaves NaN out of a column's min/max, and Spark's Parquet
    row-group filter then drops groups holding NaN rows that Spark's own semantics keep (``d <=>
    CAST('NaN' AS DOUBLE)``, ``d > 1`` with NaN above every number). Spark's filter still runs on every
    row; only its row-group skipping on these columns is given up.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    floats = {f.name for f in df.schema.fields if isinstance(f.dataType, FloatType | DoubleType)}
    if not floats:
        return df
    return df.select(*[F.nanvl(F.col(f"`{n}`"), F.col(f"`{n}`")).alias(n) if n in floats else F.col(f"`{n}`")
                       for n in df.columns])


@contextlib.contextmanager
def _no_listing_job(spark: SparkSession, files: int) -> Iterator[None]:
    """Spark lists the paths given to ``spark.read.parquet`` when the DataFrame is made, with a Spark
    job once there are more than 32 of them; the plan already knows every file, so the listing stays
    on the driver (one status call per file) while this read's DataFrames are made."""
    conf = spark.conf
    previous = conf.get(_LISTING_THRESHOLD, None)
    conf.set(_LISTING_THRESHOLD, str(max(files + 1, 32)))
    try:
        yield
    finally:
        if previous is None:
            conf.unset(_LISTING_THRESHOLD)
        else:
            conf.set(_LISTING_THRESHOLD, previous)


def _order_columns(order_by: str) -> list[Any]:
    from pyspark.sql import functions as F

    columns = []
    for o in parse_order_by(order_by):
        c = F.col(f"`{o.column}`")
        if o.ascending:
            columns.append(c.asc_nulls_first() if o.nulls_first else c.asc_nulls_last())
        else:
            columns.append(c.desc_nulls_first() if o.nulls_first else c.desc_nulls_last())
    return columns


def _check_columns(columns: Sequence[str] | None, names: Sequence[str], table: str) -> list[str] | None:
    if columns is None:
        return None
    lower = {n.lower(): n for n in names}
    unknown = [c for c in columns if str(c).lower() not in lower]
    if unknown:
        raise InvalidOptionError(f"columns {unknown} are not columns of {table} (columns: {list(names)})")
    return [lower[str(c).lower()] for c in columns]


def read_planned(spark: SparkSession, table: str, where: str | None = None,
                 columns: Sequence[str] | None = None, *, warehouse: str, snapshot_id: int | None = None,
                 order_by: str | None = None, limit: int | None = None, use_index: bool = True,
                 catalog_options: Mapping[str, str] | None = None) -> PlannedRead:
    """:func:`read`, with the plan it made (files, what each step pruned, planning time)."""
    from paimon_index.table.api import open_table

    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise InvalidOptionError(f"limit must be a non-negative integer, got {limit!r}")
    if limit is not None and order_by is None:
        raise InvalidOptionError("limit needs order_by (which rows would be kept is otherwise undefined)")
    opened = open_table(warehouse, table, catalog_options=catalog_options)
    paimon = opened.paimon_table
    current = _spark_schema(paimon.table_schema.fields)
    selected = _check_columns(columns, current.names, table)
    if order_by is not None:
        parse_order_by(order_by)  # a bad ORDER BY fails before any planning
    # No TopN hint: per-file candidates never empty a file that holds a matching row (each file has
    # its own top k), so they would cost a Python read of the predicate's columns and prune nothing.
    plan = plan_read(paimon, where, snapshot_id=snapshot_id, use_index=use_index)
    groups = {sid: _Group(paimon, plan, sid) for sid in sorted({f.schema_id for f in plan.files})}
    fallback = next((p for p in (g.problem() for g in groups.values()) if p is not None), None)
    if fallback is not None:
        df = _python_source(spark, table, snapshot_id, warehouse, catalog_options)
    elif not plan.files:
        df = spark.createDataFrame([], current)
    else:
        df = None
        with _no_listing_job(spark, len(plan.files)):
            for sid, group in groups.items():
                part = _scan(spark, group, [f for f in plan.files if f.schema_id == sid], current)
                df = part if df is None else df.unionByName(part)
    assert df is not None
    df = _shield_floats(df)
    if where is not None and where.strip():
        df = df.filter(where)
    if order_by is not None and limit is not None and fallback is None:
        df = _bounded(df, plan, order_by, limit)  # before the projection: the key may not be selected
    if selected is not None:
        df = df.select(*[f"`{c}`" for c in selected])
    if order_by is not None:
        df = df.orderBy(*_order_columns(order_by))
        if limit is not None:
            df = df.limit(limit)
    return PlannedRead(df, plan, fallback)


def _bounded(df: DataFrame, plan: ReadPlan, order_by: str, limit: int) -> DataFrame:
    """``df`` with the TopN's global bound on its first ORDER BY key as a filter Spark pushes into
    its Parquet reader (row groups whose min/max cannot reach the bound are skipped); the same
    rows in the answer (:func:`~paimon_index.table.scan.topn_bound`: ties kept by ``>=``/``<=``,
    NULLs kept where they sort first)."""
    from pyspark.sql import functions as F

    first = parse_order_by(order_by)[0]
    bound = topn_bound(plan, first.column, limit, ascending=first.ascending)
    if bound is None:
        return df
    c = F.col(f"`{first.column}`")
    value = F.lit(bound).cast(df.schema[first.column].dataType)  # the column's type: pushed as is
    keep = c <= value if first.ascending else c >= value
    return df.filter(keep | c.isNull() if first.nulls_first else keep)


def _python_source(spark: SparkSession, table: str, snapshot_id: int | None, warehouse: str,
                   catalog_options: Mapping[str, str] | None) -> DataFrame:
    """The ``paimon_index`` source over the same table (a snapshot only when one was asked for: the
    source reads a pinned snapshot under that snapshot's schema, not the current one)."""
    from paimon_index.spark.datasource import SOURCE_NAME
    from paimon_index.spark.options import SNAPSHOT_ID, WAREHOUSE

    reader = spark.read.format(SOURCE_NAME).options(**dict(catalog_options or {}))
    reader = reader.option(WAREHOUSE, warehouse)
    if snapshot_id is not None:
        reader = reader.option(SNAPSHOT_ID, str(snapshot_id))
    return reader.load(table)


def read(spark: SparkSession, table: str, where: str | None = None, columns: Sequence[str] | None = None,
         *, warehouse: str, snapshot_id: int | None = None, order_by: str | None = None,
         limit: int | None = None, use_index: bool = True,
         catalog_options: Mapping[str, str] | None = None) -> DataFrame:
    """The rows of ``table`` where ``where`` (Spark SQL) holds, as a DataFrame Spark's Parquet reader reads.

    Args:
        where: a Spark SQL condition, applied by Spark; the indexes only choose the files.
        columns: the columns to return (default: all), in this order.
        snapshot_id: read this snapshot (default: the latest, pinned when this is called).
        order_by, limit: ``"score DESC, id"`` and k: the DataFrame is sorted (and limited).
        use_index: False plans every live file (statistics and indexes unused), for comparison.
        catalog_options: ``fs.*`` options for pypaimon's catalog.

    Returns:
        A DataFrame of the current schema's columns (all nullable), planned on one snapshot: it
        reads the same files whenever it runs.

    Raises:
        InvalidOptionError: an unknown column, a bad ``limit``.
        UnsupportedTableError: a primary-key table that needs a merge.
    """
    return read_planned(spark, table, where, columns, warehouse=warehouse, snapshot_id=snapshot_id,
                        order_by=order_by, limit=limit, use_index=use_index,
                        catalog_options=catalog_options).dataframe
