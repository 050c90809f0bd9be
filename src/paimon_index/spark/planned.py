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
   ``_metadata.row_index`` and keep the rows their vector does not hold (:func:`_live`: a filter on
   the deleted runs or positions when there are a few, else a broadcast join with 64-row words of
   deleted bits that Spark reads from a Parquet file on a local master, so no task carries the
   vector, and elsewhere from local relations small enough per task); files without one, or
   whose vector deletes none of the rows the indexes kept (``FilePlan.deletion_needed``: Spark's
   filter then never meets a deleted row), are read with neither. Where the indexes kept rows, only
   the deleted rows among them are dropped (``FilePlan.kept_deleted``): Spark's filter rejects every
   other row anyway. Row selections of the indexes
   are *not* joined in: Spark's filter is exact anyway, and a semi join cannot make the Parquet
   reader skip a page (``docs/read-path.md``); they only decide which files are read. FLOAT/DOUBLE
   columns are kept out of Spark's Parquet filter pushdown (:func:`_shield_floats`). A TopN
   (``order_by`` + ``limit``) adds its global bound on the first key
   (:func:`paimon_index.table.scan.topn_bound`) as a filter Spark's Parquet reader skips row groups by.
3. **Or the driver, for a small plan** (:func:`_small_read`): when a few files' candidate row groups
   hold few bytes and few candidate rows, the driver reads them with pyarrow (deleted rows dropped,
   the index selection and the predicate applied in Arrow as a superset) and hands them to Spark as
   a local relation, the user's ``where`` again applied by Spark on top: no Spark scan job at all.

Schema evolution: files are grouped by the schema id they were written with; each group is read
with its own columns and projected to the current schema (renamed by field id, missing columns a
typed NULL, widened types cast -- ``INT -> BIGINT``, ``FLOAT -> DOUBLE`` and the like, which Spark
casts exactly as the Python reader does), then the groups are ``unionByName``-ed. A read of an
older snapshot (``snapshot_id``) is under that snapshot's schema, not today's: Java's time travel,
pypaimon's and ``Table.read``'s.

Primary-key tables in deletion-vectors mode read their level >= 1 files minus their vectors, the
user columns only (as :mod:`paimon_index.table.pk.read` does merge-free). A primary-key table whose
rows need a merge by key is refused by :func:`read_planned`
(:class:`~paimon_index.errors.UnsupportedTableError`); :func:`read` reads it merged instead
(:func:`merge_read`: no index prunes it), as SQL does.

What falls back to the ``paimon_index`` Python source (the same plan's snapshot, the ``where``
applied by Spark; ``plan.fallback`` says why): a column Spark's Parquet reader cannot read as Paimon
means it (timestamps in nanoseconds), and a type change between schema versions other than the
widenings above (Paimon's Java casts, e.g. narrowing with wrap-around, are the Python reader's).

Data files are read through Spark's own file systems: local paths (and whatever Hadoop file
systems the session is configured for).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime as dt
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa

from paimon_index.errors import InvalidOptionError, PaimonIndexError, UnsupportedTableError
from paimon_index.spark import _connect
from paimon_index.sql import parse_order_by
from paimon_index.table.files import (
    BUCKET_COLUMN,
    FILE_PATH_COLUMN,
    METADATA_COLUMNS,
    PARTITION_COLUMN,
    ROW_INDEX_COLUMN,
    partition_text,
)
from paimon_index.table.pk.plan import VALUE_KIND_COLUMN, VALUE_KINDS
from paimon_index.table.scan import FilePlan, ReadPlan, plan_read, topn_prune
from paimon_index.table.system import ROW_KIND

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from paimon_index.fileindex.base import SortOrder
    from paimon_index.predicate import Predicate
    from paimon_index.table.api import Table

__all__ = ["PlannedRead", "read", "read_planned"]

#: Internal columns of the deletion-vector join (no Paimon table has such names): the row's position,
#: the key of its 64-row word (:func:`_row_key`) and the word of deleted bits.
_ROW = "__paimon_index_row__"
_KEY = "__paimon_index_key__"
_WORD = "__paimon_index_word__"
#: The word's key on the side of the words (another name than the rows' :data:`_KEY`: the join's
#: condition names both).
_WORD_KEY = "__paimon_index_word_key__"
_WORD_SHIFT = 6
_WORD_ROWS = 1 << _WORD_SHIFT
#: A batch's keys (files x words) stay well inside a BIGINT up to this many rows per file.
_MAX_ROWS = 1 << 40
#: ``_VALUE_KIND`` byte -> row kind, and an append table's rows' kind (``t$audit_log``).
_VALUE_KIND = VALUE_KIND_COLUMN
_KINDS = tuple(sorted(VALUE_KINDS, key=VALUE_KINDS.__getitem__))
_INSERT_KIND = "+I"
#: A batch of files whose vectors hold at most this many runs of consecutive deleted positions is
#: filtered on ``_metadata.row_index`` instead of joined (measured faster up to ~10 runs, slower from
#: ~40: each run is one more comparison per row; see :func:`_live`).
_RANGE_RUNS = 16
#: ... else a batch whose vectors hold at most this many deleted positions, every file under 2^31
#: rows, is filtered by a set of positions per file (``CAST(row_index AS INT) IN (...)``, which Spark
#: compiles to a ``switch`` up to ``spark.sql.optimizer.inSetSwitchThreshold``, 400): no broadcast
#: job for the few rows a point change deletes (TPC-H's part after its upsert: 96 positions).
_SET_POSITIONS = 400
_INT_ROWS = 1 << 31
#: The data file's name (URI-decoded) of each row of a read with the metadata columns, joined with
#: the plan's files for their path, partition and bucket (:func:`_with_metadata`).
_NAME = "__paimon_index_file_name__"
#: The kind (file name prefix) of a small read's rows in the scratch directory.
_ROWS_KIND = "rows"
#: Rows per partition of the column-less rows of :func:`rows_only_read` (Spark generates ~1e8 rows
#: a second per core; small tables one partition, no shuffle worth planning).
_ROWS_PER_RANGE_PARTITION = 1 << 26
#: Characters Spark's path globbing (Hadoop's GlobPattern) reads as a pattern: a warehouse under
#: ``wh[2]`` would be read as ``wh2``, and ``*``/``?`` could match other files. Escaped with a
#: backslash, they are literal. (Spark's internal ``__globPaths__=false`` option is no fix: with it,
#: such a path is listed twice and every row read twice, measured on Spark 4.1.)
_GLOB = re.compile(r"([\\\[\]{}*?])")
#: Spark lists more paths than this with a distributed job (see :func:`_resolving_files`).
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
#: The size of Spark's shared file status cache; at 0 a relation made gets no cache (ibid.).
_FILE_STATUS_CACHE = "spark.sql.hive.filesourcePartitionFileCacheSize"
#: Default of ``small_read_bytes``: the most Parquet column-chunk bytes the driver reads itself for a
#: selective query instead of running a Spark scan. Measured (2M-row primary-key table, 8 files,
#: 1,914 rows selected by a bitmap spread over ~26 MB of row groups, local[2]): the driver's read
#: 0.47 s against 1.34 s for the Spark scan it replaces (0.37-0.53 s against 0.82-1.05 s compacted).
SMALL_READ_BYTES = 64 << 20
#: The most rows a small read hands Spark (after the index selection and the pre-filter): each row
#: of a local relation is serialized to Spark on the driver, and an aggregate over it runs as a job.
SMALL_READ_ROWS = 2_000
#: The most data files a small read opens (each costs the driver a footer read before it can tell).
SMALL_READ_FILES = 8
#: On a local master, the most selected rows (an index's answer for every file) the driver reads
#: itself whatever the plan's files and bytes (:func:`_small_read`). Measured on a 20M-row
#: primary-key table after a 10% upsert (24 files, a bitmap selecting 20,119 live rows in every
#: row group, 190 MB of column chunks), local[2]: see ``docs/read-path.md``.
LOCAL_SELECTED_ROWS = 250_000
#: ... in at most this many data files (the driver reads every footer to weigh its bytes).
LOCAL_SELECTED_FILES = 256
#: ... of which files without a selection (read whole, then pre-filtered) hold at most 1/this of
#: the plan's rows. Measured (spark_sql.py's 2M events, 20 files, ``status = 'DISPUTED' OR id IN
#: (...)``, the ids in 1, 2, 3, 5, 10 files, all columns hashed, median of 4): the driver 0.29,
#: 0.24, 0.53, 0.46, 0.51 s against Spark's reader 0.80, 0.62, 0.58, 0.49, 0.51 s.
UNSELECTED_SHARE = 4
#: Inside a change statement (:func:`change_statement`: DELETE, UPDATE, MERGE), the driver also
#: reads selected rows past :data:`LOCAL_SELECTED_ROWS`, up to 1/n of the plan's rows: the
#: statement consumes them and its scratch file goes when it ends. Measured on the 20M-row
#: merge-on-read table of ``benchmarks/maintenance.py`` (22 files, local[2], an UPDATE's target
#: read, whole statement): 5% selected 2.4-2.8 s against 3.3-3.7 s by Spark's reader, 15% 4.7
#: against 5.1-5.7 s, 30% 8.6-8.9 against 7.9-9.7 s (even).
CHANGE_SELECTED_SHARE = 8
#: ... and whose selected rows hold at most this many uncompressed bytes (the footers' sizes of
#: their files, pro rata): what the driver holds before handing them to Spark.
CHANGE_SELECTED_BYTES = 256 << 20
#: The most threads the driver reads a small read's files with.
_MAX_DRIVER_THREADS = 8
#: A small read decodes a file's candidate row groups in slices of at most these column-chunk bytes.
_SLICE_BYTES = 64 << 20
#: A chunk is read as a dictionary when its dictionary page is at most this share of it (1/n).
_DICTIONARY_SHARE = 8
#: Arrow types the small read hands Spark as Spark's Parquet reader reads them (checked against it
#: by tests; timestamps of any unit Spark reads, as Spark's microseconds); any other column (nested)
#: leaves the read to Spark's Parquet reader.
_SMALL_TYPES = (pa.types.is_boolean, pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal,
                pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary,
                pa.types.is_date32, pa.types.is_timestamp)
#: TopN bounds on TIMESTAMP columns: a millisecond key covers these microseconds; NTZ literals count
#: from this wall-clock epoch.
_MICROS_PER_MILLI = 1_000
_EPOCH = dt.datetime(1970, 1, 1)
_SESSION_TIME_ZONE = "spark.sql.session.timeZone"
#: Where :func:`_local_frame` keeps the two JVM methods it calls (each lookup is a Py4J round trip).
_SQL_UTILS = "_paimon_index_sql_utils"
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
    #: the rows the driver read itself and handed Spark (None: Spark's Parquet reader reads)
    small_rows: int | None = None


def _spark_schema(fields: Sequence[Any]) -> Any:
    """Spark's schema of pypaimon fields (every field nullable, as the Python source has it)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from paimon_index.spark.datasource import nullable_type
    from paimon_index.table.paimon import arrow_schema

    return nullable_type(from_arrow_schema(arrow_schema(fields)))


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

    def project(self, df: DataFrame, current: Any, keep: Sequence[str] = ()) -> DataFrame:
        """``df`` (the file's columns) as the current columns, in the current order, then the
        columns ``keep`` (the metadata columns) as they are."""
        from pyspark.sql import functions as F

        if self.mapping.identity:
            return df
        types = {f.name: f.dataType for f in current.fields}
        columns = []
        for source in self.mapping.sources:
            if source.file_name is None:
                columns.append(F.lit(None).cast(types[source.name]).alias(source.name))
            elif source.cast is not None:
                columns.append(F.col(_connect.quoted(source.file_name)).cast(types[source.name]).alias(source.name))
            else:
                columns.append(F.col(_connect.quoted(source.file_name)).alias(source.name))
        return df.select(*columns, *[F.col(k) for k in keep])


def _key_batches(files: Sequence[FilePlan]) -> list[list[FilePlan]]:
    """The files in batches where each file's size is unique (a batch's scan tells its files apart by
    ``_metadata.file_size``, see :func:`_row_key`)."""
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


def _dropped(f: FilePlan) -> np.ndarray:
    """The positions a read of ``f`` that applies the query's own filter drops: the deleted rows the
    indexes kept, else the whole vector."""
    dropped = f.kept_deleted if f.kept_deleted is not None else f.deleted
    assert dropped is not None
    return dropped


def _sorted(deleted: np.ndarray) -> np.ndarray:
    """A vector's positions as sorted, distinct int64 (as read they already are)."""
    positions = deleted.astype(np.int64, copy=False)
    if len(positions) > 1 and not bool(np.all(positions[1:] > positions[:-1])):
        positions = np.unique(positions)
    return positions


def _deleted_runs(deleted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and last positions of each run of consecutive deleted positions (:func:`_sorted`)."""
    breaks = np.flatnonzero(np.diff(deleted) != 1)
    return (deleted[np.concatenate(([0], breaks + 1))],
            deleted[np.concatenate((breaks, [len(deleted) - 1]))])


def _stride(batch: Sequence[FilePlan]) -> int:
    """Keys per file in :func:`_row_key`: one per word of the largest file."""
    return max(f.row_count for f in batch) // _WORD_ROWS + 1


def _row_key(batch: Sequence[FilePlan]) -> Any:
    """One BIGINT per row of a scan of ``batch``: ``ordinal * stride + row_index // 64``, the key of
    the 64-row word of deleted bits (:func:`_deleted_frame`) that holds the row.

    The ordinal is the file's place in the batch, told by ``_metadata.file_size`` (unique within a
    batch, :func:`_key_batches`), so the keys of a batch are dense from 0: Spark's broadcast hash
    relation of BIGINT keys is then a plain array lookup, not a hash probe (a key of ``file_size *
    2^32 + row_index`` per deleted *position* measured 1.2-2x slower on Q6 and ~2x on a count, see
    ``benchmarks/scan_costs.py``). Spark's ``_metadata.file_path`` is also a URI (``file:/a%20b``),
    which a size needs no care for.
    """
    from pyspark.sql import functions as F

    # One SQL expression, parsed once by Spark: built from Column objects it took several Py4J
    # round trips per file (~0.17 s for the 14 files of a primary-key table after an upsert).
    stride = _stride(batch)
    cases = " ".join(f"WHEN {f.file_size} THEN {ordinal * stride}" for ordinal, f in enumerate(batch))
    return F.expr(f"CASE _metadata.file_size {cases} END + shiftright(_metadata.row_index, {_WORD_SHIFT})"
                  ).alias(_KEY)


def _words(batch: Sequence[FilePlan], positions_of: Sequence[np.ndarray]) -> pa.Table:
    """(key, word) of every 64-row word of ``batch`` holding a deleted row (each file's sorted
    positions in ``positions_of``): bit ``i`` of the word is row ``key's first row + i`` (keys of
    :func:`_row_key`)."""
    stride = _stride(batch)
    keys, words = [], []
    for ordinal, positions in enumerate(positions_of):
        word = positions >> _WORD_SHIFT
        starts = np.flatnonzero(np.concatenate(([True], word[1:] != word[:-1])))
        # Distinct positions of one word are distinct bits: their sum is their OR.
        bit = np.left_shift(np.uint64(1), (positions & (_WORD_ROWS - 1)).astype(np.uint64))
        keys.append(word[starts] + ordinal * stride)
        words.append(np.add.reduceat(bit, starts).view(np.int64))
    return pa.table({_WORD_KEY: pa.array(np.concatenate(keys), pa.int64()),
                     _WORD: pa.array(np.concatenate(words), pa.int64())})


def _deleted_frame(spark: SparkSession, batch: Sequence[FilePlan], positions_of: Sequence[np.ndarray]
                   ) -> DataFrame:
    """The deleted rows of ``batch`` as (key, word) rows (:func:`_words`), one DataFrame to broadcast.

    On a local master they are a Parquet file that Spark reads (:func:`_scratch_file`): a local
    relation (``createDataFrame``) is shipped inside the broadcast job's tasks, which measured 14 MiB
    per task for 15% of TPC-H SF1's lineitem deleted and a planned Q6 ~4x slower than without the
    vectors. Elsewhere (a cluster, Spark Connect) the driver's disk is not the executors': local
    relations (:func:`~paimon_index.spark._connect.local_relations`) of at most 640 KiB a leaf
    partition, unioned (one relation was 6.4 MB a task for a 20M-row table with 1/7 of its rows
    deleted on 2 cores; 0.68 MB so).
    """
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([StructField(_WORD_KEY, LongType(), False), StructField(_WORD, LongType(), False)])
    words = _words(batch, positions_of)
    if _connect.local_master(spark):
        return _parquet(spark, schema, [_scratch_file("words", words)])
    # Spark collects a local relation for the broadcast with a job whose tasks carry its rows, a
    # share per leaf partition: _connect.local_relations keeps each share small.
    return _connect.local_relations(spark, words, schema)


def _unreadable_store(spark: SparkSession, files: Sequence[FilePlan]) -> str | None:
    """Why Spark's Parquet reader cannot open these data files (None: it can): a URI scheme
    (``s3://``, ``oss://``) no Hadoop file system of the session serves. pypaimon's file IO, which
    the ``paimon_index`` source reads through, takes the table's ``fs.*`` catalog options instead.
    Through Spark Connect the server's file systems are unknown here: any scheme but local files
    is left to the source."""
    schemes = {urlsplit(f.path).scheme.lower() for f in files}
    for scheme in sorted(schemes - {"", "file"}):  # one JVM lookup per scheme and read: not cached,
        # as the session (and its Hadoop configuration) may be another one next time
        if _connect.is_connect(spark) or not _hadoop_serves(spark, scheme):
            return (f"data files on {scheme}://, which no Hadoop file system of this Spark session reads "
                    "(the paimon_index source reads them through pypaimon's file IO)")
    return None


def _hadoop_serves(spark: SparkSession, scheme: str) -> bool:
    """Whether the session's Hadoop configuration has a file system for ``scheme``."""
    from py4j.protocol import Py4JJavaError

    context = spark.sparkContext
    jvm = context._jvm
    assert jvm is not None and context._jsc is not None
    try:
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, context._jsc.hadoopConfiguration())
    except Py4JJavaError:  # Hadoop's UnsupportedFileSystemException: no such file system
        return False
    return True


def _parquet(spark: SparkSession, schema: Any, paths: list[str]) -> DataFrame:
    """Spark's Parquet reader over exactly ``paths`` (glob characters escaped: see ``_GLOB``)."""
    return spark.read.schema(schema).parquet(*[_GLOB.sub(r"\\\1", p) for p in paths])


def _scratch_file(kind: str, table: pa.Table) -> str:
    """A Parquet file of ``table`` (no statistics) in this process's scratch directory, named by its
    content (the same rows -- the same snapshot read again -- reuse one file; the directory goes at
    exit); rows read inside a change statement (:func:`change_statement`) get a file of their own,
    removed when the statement ends."""
    statement = _STATEMENT.get()
    if statement is not None and kind == _ROWS_KIND:
        path = os.path.join(_scratch(), f"{kind}-{uuid.uuid4().hex}.parquet")
        statement.files.append(path)
    else:
        path = os.path.join(_scratch(), f"{kind}-{_content_digest(table)}.parquet")
    if not os.path.exists(path):
        import pyarrow.parquet as pq

        partial = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        # No statistics: Spark's reader then skips no row group of it (pyarrow's float statistics
        # leave NaN out, which Spark's filter pushdown would read as no NaN, see _shield_floats).
        pq.write_table(table, partial, compression="none", write_statistics=False)
        os.replace(partial, path)
    return path


def _content_digest(table: pa.Table) -> str:
    """A digest of ``table``'s schema and every buffer of its columns (its scratch file's name)."""
    import hashlib

    digest = hashlib.blake2b(digest_size=16)
    digest.update(str(table.schema).encode())
    for column in table.columns:
        for chunk in column.chunks:
            # Offset and length too: a slice shares its parent's buffers.
            digest.update(f"{chunk.offset}:{len(chunk)}".encode())
            for buffer in chunk.buffers():
                if buffer is not None:
                    digest.update(buffer)
    return digest.hexdigest()


_SCRATCH: list[str] = []
_SCRATCH_LOCK = threading.Lock()


@dataclass
class _Statement:
    """The running change statement: its scratch files, and the rows its target reads took on the
    driver."""

    files: list[str] = dataclasses.field(default_factory=list)
    rows_read: int = 0


_STATEMENT: contextvars.ContextVar[_Statement | None] = contextvars.ContextVar(
    "paimon_index_change_statement", default=None)


@contextlib.contextmanager
def change_statement() -> Iterator[None]:
    """The scope of one change statement whose reads are consumed before it ends: a small read
    in it may hand Spark more rows (:data:`CHANGE_SELECTED_SHARE`), in scratch files of its own
    that are removed when it ends (a DataFrame read in it must not outlive it). Nested: the
    outermost scope removes them."""
    if _STATEMENT.get() is not None:
        yield
        return
    statement = _Statement()
    token = _STATEMENT.set(statement)
    try:
        yield
    finally:
        _STATEMENT.reset(token)
        for path in statement.files:
            with contextlib.suppress(OSError):
                os.remove(path)


def statement_rows_read() -> int:
    """The rows the running change statement's reads of its target (``read_planned(change_of=...)``)
    took on the driver (0: none, or no statement): rows the driver held once already."""
    statement = _STATEMENT.get()
    return 0 if statement is None else statement.rows_read


def _scratch() -> str:
    with _SCRATCH_LOCK:
        if not _SCRATCH or not os.path.isdir(_SCRATCH[0]):
            import atexit
            import shutil
            import tempfile

            path = tempfile.mkdtemp(prefix="paimon-index-dv-")
            atexit.register(shutil.rmtree, path, True)
            _SCRATCH[:] = [path]
        return _SCRATCH[0]


def _range_filter(batch: Sequence[FilePlan], runs_of: Sequence[tuple[np.ndarray, np.ndarray]]) -> Any:
    """``NOT (file_size = s AND (row_index BETWEEN a AND b OR ...)) AND ...``: the live rows of
    ``batch`` (each file's deleted runs in ``runs_of``, :func:`_deleted_runs`) as a filter on the
    deleted runs (no join); for a few runs only (:data:`_RANGE_RUNS`)."""
    from pyspark.sql import functions as F

    row = F.col("_metadata.row_index")
    live = []
    for f, (firsts, lasts) in zip(batch, runs_of, strict=True):
        runs = [row == F.lit(first) if first == last else row.between(F.lit(first), F.lit(last))
                for first, last in zip(firsts.tolist(), lasts.tolist(), strict=True)]
        deleted = _balanced(runs, lambda a, b: a | b)
        live.append(~((F.col("_metadata.file_size") == F.lit(f.file_size)) & deleted))
    return _balanced(live, lambda a, b: a & b)


def _position_filter(batch: Sequence[FilePlan], positions_of: Sequence[np.ndarray]) -> Any:
    """``CASE file_size WHEN s THEN NOT (CAST(row_index AS INT) IN (p, ...)) ... END``: the live
    rows of ``batch`` (each file's sorted deleted positions in ``positions_of``) as one filter, a set
    of positions per file (for a few positions only: :data:`_SET_POSITIONS`); a row of a file the
    batch does not list (none: the scan is of the batch's files) is kept, as the words join keeps it."""
    from pyspark.sql import functions as F

    row = "CAST(_metadata.row_index AS INT)"
    cases = " ".join(f"WHEN {f.file_size} THEN NOT ({row} IN ({', '.join(map(str, positions.tolist()))}))"
                     for f, positions in zip(batch, positions_of, strict=True) if len(positions))
    return F.expr(f"CASE _metadata.file_size {cases} ELSE TRUE END")


def _balanced(columns: list[Any], op: Any) -> Any:
    """``columns`` joined by ``op`` as a balanced tree (a chain of thousands overflows Spark's stack)."""
    while len(columns) > 1:
        columns = [op(columns[i], columns[i + 1]) if i + 1 < len(columns) else columns[i]
                   for i in range(0, len(columns), 2)]
    return columns[0]


def _live(spark: SparkSession, scanned: DataFrame, batch: Sequence[FilePlan], extra: Sequence[Any] = ()
          ) -> DataFrame:
    """The rows of ``scanned`` (a scan of ``batch``, files of distinct sizes) minus their vectors,
    with the columns ``extra`` (on ``_metadata``: resolvable on the scan, not after a projection).

    A batch whose vectors hold at most :data:`_RANGE_RUNS` runs of deleted positions (a delete of a
    clustered range) is filtered on ``_metadata.row_index`` (:func:`_range_filter`); one holding at
    most :data:`_SET_POSITIONS` positions by a set of them per file (:func:`_position_filter`); any
    other is left-anti joined, broadcast, with its 64-row words of deleted bits (:func:`_deleted_frame`): a
    row goes when its word's bit is set. An anti join, not an outer join and a filter: Spark
    estimates an anti join's output as large as its left side, an outer join's as the product of
    both sides' sizes, which kept a small table with vectors (TPC-H's part) out of broadcast joins.
    """
    from pyspark.sql import functions as F

    # Sorted once per file, for whichever way applies them: a vector can be millions of rows.
    positions_of = [_sorted(_dropped(f)) for f in batch]
    runs_of = [_deleted_runs(positions) for positions in positions_of]
    if sum(len(firsts) for firsts, _ in runs_of) <= _RANGE_RUNS:
        return scanned.where(_range_filter(batch, runs_of)).select("*", *extra)
    if sum(len(p) for p in positions_of) <= _SET_POSITIONS and all(f.row_count < _INT_ROWS for f in batch):
        return scanned.where(_position_filter(batch, positions_of)).select("*", *extra)
    keyed = scanned.select("*", *extra, _row_key(batch), F.col("_metadata.row_index").alias(_ROW))
    deleted = F.expr(f"{_KEY} = {_WORD_KEY} AND "
                     f"shiftright({_WORD}, CAST({_ROW} & {_WORD_ROWS - 1} AS INT)) & 1 = 1")
    live = keyed.join(F.broadcast(_deleted_frame(spark, batch, positions_of)), deleted, "left_anti")
    return live.drop(_KEY, _ROW)


def _scan(spark: SparkSession, group: _Group, files: Sequence[FilePlan], current: Any,
          extra: Mapping[str, Any] | None = None, *, kinds: bool = False) -> DataFrame:
    """The live rows of ``files`` (one schema id) under the current schema, then the columns
    ``extra`` (name -> column on the scan's ``_metadata``, see :func:`_metadata_columns`).
    ``kinds``: then :data:`ROW_KIND` (``+I``/``-U``/``+U``/``-D``) of each row, from the primary-key
    data file's ``_VALUE_KIND`` byte."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, StructField, StructType

    file_schema = _spark_schema(group.fields)
    extra = dict(extra or {})
    if kinds:
        file_schema = StructType([*file_schema.fields, StructField(_VALUE_KIND, ByteType())])
        names = F.array(*[F.lit(k) for k in _KINDS])
        extra[ROW_KIND] = F.element_at(names, F.col(_VALUE_KIND).cast("int") + 1)
    added = [column.alias(name) for name, column in extra.items()]
    keep = list(extra)
    plain = [f.path for f in files if f.deleted is None or not f.deletion_needed]
    with_dv = [f for f in files if f.deleted is not None and f.deletion_needed]
    if any(f.row_count > _MAX_ROWS for f in with_dv):
        raise UnsupportedTableError("a data file with a deletion vector has over 2^40 rows: "
                                    "read it with Table.read or the paimon_index source")
    parts = []
    if plain:
        scanned = _parquet(spark, file_schema, plain)
        parts.append(group.project(scanned.select("*", *added) if added else scanned, current, keep))
    for batch in _key_batches(with_dv):
        scanned = _parquet(spark, file_schema, [f.path for f in batch])
        parts.append(group.project(_live(spark, scanned, batch, added), current, keep))
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out.drop(_VALUE_KIND) if kinds else out


def _file_name_column() -> Any:
    """The data file's name of each row: Spark's ``_metadata.file_name`` is the name as a URI path
    segment (``a b%`` is ``a%20b%25``; ``+`` and non-ASCII characters stay as they are), which
    ``url_decode`` undoes once ``+`` (it would read a space) is escaped first."""
    from pyspark.sql import functions as F

    encoded = F.replace(F.col("_metadata.file_name"), F.lit("+"), F.lit("%2B"))
    return F.url_decode(encoded)


def _with_metadata(spark: SparkSession, scanned: DataFrame, files: Sequence[FilePlan],
                   partition_keys: Sequence[str], columns: Sequence[str]) -> DataFrame:
    """``scanned`` (``columns``, the row's position and :data:`_NAME`) with the metadata columns,
    the path, partition and bucket of each row's file joined in from the plan (a broadcast of one
    row per file: no scan per partition or bucket, which measured 2-4x slower at 16-100
    partitions). A row whose name matches no planned file fails the job (never a row left out of a
    change)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    schema = StructType([StructField(name, IntegerType() if name == BUCKET_COLUMN else StringType(), False)
                         for name in (_NAME, FILE_PATH_COLUMN, PARTITION_COLUMN, BUCKET_COLUMN)])
    # One row per file (~200 bytes): a table of many thousand files is several relations, so the
    # broadcast's collect job carries no multi-MB task.
    placed = _connect.local_relations(spark, pa.table({
        _NAME: pa.array([f.name for f in files], pa.string()),
        FILE_PATH_COLUMN: pa.array([f.path for f in files], pa.string()),
        PARTITION_COLUMN: pa.array([partition_text(partition_keys, f.partition) for f in files], pa.string()),
        BUCKET_COLUMN: pa.array([int(f.bucket) for f in files], pa.int32()),
    }), schema)
    joined = scanned.join(F.broadcast(placed), [_NAME], "left_outer")
    unknown = F.concat(F.lit("paimon-index: a row of data file "), F.col(_NAME),
                       F.lit(" that the read's plan does not hold"))
    path = F.coalesce(F.col(FILE_PATH_COLUMN), F.raise_error(unknown))
    return joined.select(*[F.col(_connect.quoted(c)) for c in columns],
                         path.cast("string").alias(FILE_PATH_COLUMN), F.col(ROW_INDEX_COLUMN),
                         F.col(PARTITION_COLUMN), F.col(BUCKET_COLUMN))


def _float_paths(dtype: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The paths of the FLOAT/DOUBLE fields in ``dtype``, through nested structs (``()``: itself)."""
    from pyspark.sql.types import DoubleType, FloatType, StructType

    if isinstance(dtype, FloatType | DoubleType):
        return [path]
    if isinstance(dtype, StructType):
        return [p for f in dtype.fields for p in _float_paths(f.dataType, (*path, f.name))]
    return []  # Spark pushes no filter on array elements or map values into Parquet


@dataclass(frozen=True)
class _SmallRead:
    dataframe: DataFrame
    rows: int  # the candidate rows the driver read


def _small_read(spark: SparkSession, plan: ReadPlan, groups: Mapping[int, _Group], current: Any,
                max_bytes: int | None, reads: Sequence[str] | None) -> _SmallRead | None:
    """The candidate rows of a selective plan, read on the driver with pyarrow and handed to Spark
    (and how many); None when the plan is not small.

    Small means: at most :data:`SMALL_READ_FILES` files of plain columns (:data:`_SMALL_TYPES`), whose
    candidate row groups hold at most ``max_bytes`` (None: :data:`SMALL_READ_BYTES`) of column chunks,
    leaving at most :data:`SMALL_READ_ROWS` candidate rows, handed over as a local relation. Without
    a ``max_bytes``, on a local master (:func:`_connect.local_master`: the driver's cores and disk
    are the executors') a plan whose indexes selected rows is small up to
    :data:`LOCAL_SELECTED_ROWS` candidate rows (selected rows; a file without a selection counted
    whole, such files at most 1/:data:`UNSELECTED_SHARE` of the plan's rows) in
    :data:`LOCAL_SELECTED_FILES` files, whatever their bytes, when its candidate row groups hold no
    more column-chunk bytes than Spark would read of the columns ``reads`` (the query's columns;
    None: unknown, no such read): the driver decodes them
    with a thread per core and no job (see :data:`LOCAL_SELECTED_ROWS`); more than
    :data:`SMALL_READ_ROWS` rows go to Spark as a Parquet file in the process's scratch directory
    (:func:`_scratch_file`). Inside a change statement (:func:`change_statement`) the selected rows
    may be up to 1/:data:`CHANGE_SELECTED_SHARE` of the plan's rows, when they hold at most
    :data:`CHANGE_SELECTED_BYTES` uncompressed. A row group is a candidate when it holds a selected row
    (if the index selected rows) and its footer statistics may match the plan's predicate (files
    written with the current schema; :func:`~paimon_index.table.stats.row_group_may_match`).
    Candidate rows drop the deleted positions, keep the selected ones and pass the predicate in
    Arrow (a superset of the WHERE, :mod:`paimon_index.arrow_filter`); Spark applies the WHERE itself
    on top (:func:`read_planned`), so which rows come back is Spark's decision either way.
    """
    if max_bytes == 0 or plan.table is None:
        return None
    from paimon_index.predicate import ALWAYS_TRUE

    plan_rows = sum(f.row_count for f in plan.files)
    local_limit = max(LOCAL_SELECTED_ROWS, plan_rows // CHANGE_SELECTED_SHARE) \
        if _STATEMENT.get() is not None else LOCAL_SELECTED_ROWS
    # Files the indexes could not select rows of (a Bloom filter's "maybe" in an OR) are candidates
    # whole, filtered by the Arrow pre-filter: bounded by the limit and by a share of the plan, so
    # the rows handed to Spark stay few against what Spark's reader would read.
    unselected = [f for f in plan.files if f.selected is None]
    unselected_rows = sum(f.live_rows for f in unselected)
    candidate_rows = sum(len(f.selected) for f in plan.files if f.selected is not None) + unselected_rows
    selected_rows = None if unselected else candidate_rows  # every file's rows selected: their count
    may_be_local = (max_bytes is None and reads is not None
                    and (unselected_rows == 0 or plan.predicate is not ALWAYS_TRUE)
                    and candidate_rows <= local_limit
                    and unselected_rows * UNSELECTED_SHARE <= plan_rows
                    and len(plan.files) <= LOCAL_SELECTED_FILES and _connect.local_master(spark))
    budget = SMALL_READ_BYTES if max_bytes is None else max_bytes
    if not may_be_local:
        if len(plan.files) > SMALL_READ_FILES:
            return None
        if plan.predicate is ALWAYS_TRUE and sum(f.live_rows for f in plan.files) > SMALL_READ_ROWS:
            return None  # every live row is a candidate: known too many without opening a file
        if selected_rows is not None and selected_rows > SMALL_READ_ROWS:
            # A selection is usually the answer itself (a range bitmap's or a bitmap's rows): one over
            # the cap is not read on the driver only to be left to Spark's reader after all.
            return None
    if any(not any(ok(f.type) for ok in _SMALL_TYPES) for g in groups.values() for f in g.arrow):
        return None
    from paimon_index.table.fileio import TableIO

    io = TableIO.of(plan.table)
    with contextlib.ExitStack() as stack:
        chosen: list[tuple[FilePlan, Any, list[int]]] = []
        chosen_bytes = spark_bytes = selected_bytes = 0
        for f in plan.files:
            parquet = stack.enter_context(io.parquet(f.path))
            if parquet.metadata.num_rows != f.row_count:
                return None  # the footer disagrees with the manifest: Spark's reader reads (and says so)
            group = groups[f.schema_id]
            wanted = _candidate_groups(parquet, f, plan, group)
            chosen_bytes += sum(_chunk_bytes(parquet, g, group.arrow.names) for g in wanted)
            if may_be_local:
                assert reads is not None
                read_names = group.mapping.file_columns(reads) or []
                spark_bytes += sum(_chunk_bytes(parquet, g, read_names)
                                   for g in range(parquet.metadata.num_row_groups))
                if candidate_rows > LOCAL_SELECTED_ROWS and f.row_count:
                    # Weighed only past the plain limit (inside a change statement).
                    decoded = sum(parquet.metadata.row_group(g).total_byte_size
                                  for g in range(parquet.metadata.num_row_groups))
                    taken = f.row_count if f.selected is None else len(f.selected)
                    selected_bytes += decoded * taken // f.row_count
            elif chosen_bytes > budget:
                return None
            chosen.append((f, parquet, wanted))
        # The driver decodes every column of its row groups, Spark only the columns read of all of
        # them: the driver reads only when that is no more bytes.
        local = may_be_local and chosen_bytes <= spark_bytes and (
            candidate_rows <= LOCAL_SELECTED_ROWS or selected_bytes <= CHANGE_SELECTED_BYTES)
        if not local and (len(chosen) > SMALL_READ_FILES or chosen_bytes > budget
                          or (selected_rows or 0) > SMALL_READ_ROWS):
            return None
        # Counted only once the driver reads: a plan Spark's reader reads reports no data bytes.
        for _, parquet, wanted in chosen:
            plan.report.row_groups_planned += parquet.metadata.num_row_groups
            plan.report.row_groups_read += len(wanted)
        plan.report.data_bytes_read += chosen_bytes
        reading = [(f, parquet, wanted) for f, parquet, wanted in chosen if wanted]
        tables = _read_candidates(reading, plan, groups, _driver_threads(spark))
    rows = sum(t.num_rows for t in tables)
    if rows > (local_limit if local else SMALL_READ_ROWS):
        return None
    # A local relation's rows travel inside the tasks of any job over it (an aggregate, a join's
    # broadcast): 1,800 rows of 10 KB strings made a 8.9 MB task. Heavy rows go as a scratch file
    # where the executors read the driver's disk, else Spark's reader reads the files.
    heavy = rows <= SMALL_READ_ROWS and _connect.too_heavy_for_one_relation(spark, tables)
    if heavy and not _connect.local_master(spark):
        return None
    as_file = rows > SMALL_READ_ROWS or heavy
    parts: dict[int, list[pa.Table]] = {}
    for (f, _, _), table in zip(reading, tables, strict=True):
        parts.setdefault(f.schema_id, []).append(table)
    out = None
    for sid, group in groups.items():
        found = parts.get(sid)
        if not found and out is not None:
            continue
        schema = _spark_schema(group.fields)
        if not found:
            local_rows = spark.createDataFrame([], schema)
        elif as_file:
            with _resolving_files(spark, 1):
                local_rows = _parquet(spark, schema, [_scratch_file(_ROWS_KIND, pa.concat_tables(found))])
        else:
            local_rows = _local_frame(spark, pa.concat_tables(found), schema)
        part = group.project(local_rows, current)
        out = part if out is None else out.unionByName(part)
    assert out is not None
    return _SmallRead(out, rows)


def _driver_threads(spark: SparkSession) -> int:
    """Threads the driver reads with: the local master's cores (Spark's tasks would use them), else
    this machine's, at most :data:`_MAX_DRIVER_THREADS`."""
    cores = _connect.parallelism(spark) if _connect.local_master(spark) else (os.cpu_count() or 1)
    return max(1, min(cores, _MAX_DRIVER_THREADS))


def _read_candidates(reads: Sequence[tuple[FilePlan, Any, list[int]]], plan: ReadPlan,
                     groups: Mapping[int, _Group], threads: int) -> list[pa.Table]:
    """The candidate rows of each file (:func:`_candidate_rows`), files read in parallel threads
    (pyarrow decodes without the GIL), each file's row groups in slices of at most
    :data:`_SLICE_BYTES` of column chunks so that one thread holds one slice decoded at a time; a
    file the indexes selected rows of, one row group at a time (its rows are taken while its
    decoded columns are still in the CPU's caches: four 5M-row files of 75 row groups, 0.1%
    selected, 2 threads, 0.36-0.38 s against 0.50-0.54 s read whole and taken after)."""
    def one(f: FilePlan, parquet: Any, wanted: list[int]) -> pa.Table:
        group = groups[f.schema_id]
        slices = [[g] for g in wanted] if f.selected is not None else \
            _byte_slices(parquet, wanted, group.arrow.names)
        starts = _group_starts(parquet)
        selected = None if f.selected is None else _live_selected(f)
        rows = pa.concat_tables([_candidate_rows(parquet, f, part, group, starts, selected)
                                 for part in slices])
        return _prefiltered(rows, plan, group)  # once a file: a filter costs ~0.2 ms to start

    if threads <= 1 or len(reads) <= 1:
        return [one(*r) for r in reads]
    from concurrent.futures import ThreadPoolExecutor

    # Each file's stream is read by one thread only; every read returns before the pool closes.
    with ThreadPoolExecutor(max_workers=min(threads, len(reads)), thread_name_prefix="paimon-index") as pool:
        return list(pool.map(lambda r: one(*r), reads))


def _byte_slices(parquet: Any, wanted: list[int], names: Sequence[str]) -> list[list[int]]:
    """Row groups ``wanted`` in runs of at most :data:`_SLICE_BYTES` of column chunks of ``names``
    (a row group larger than that alone)."""
    slices: list[list[int]] = [[]]
    held = 0
    for g in wanted:
        size = _chunk_bytes(parquet, g, names)
        if slices[-1] and held + size > _SLICE_BYTES:
            slices.append([])
            held = 0
        slices[-1].append(g)
        held += size
    return slices


def _local_frame(spark: SparkSession, arrow: pa.Table, schema: Any) -> DataFrame:
    """``spark.createDataFrame(arrow, schema)`` in two Py4J round trips instead of ~35.

    PySpark's ``createDataFrame`` reads a dozen session confs through Py4J element by element (the
    timestamp and large-type ones, which the plain types of a small read do not need) before it does
    what is done here: Arrow batches of Spark's own Arrow types through a file to the JVM, made a
    local relation there (Spark keeps batches under ``spark.sql.execution.arrow.localRelationThreshold``
    on the driver, so a filter and a collect on it run without a job).
    """
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql.pandas.types import to_arrow_schema

    if _connect.is_connect(spark):  # no JVM here: the client sends the Arrow batches itself
        # (only those holding rows: see the empty-batch note below)
        kept = [b for b in arrow.to_batches() if b.num_rows]
        return spark.createDataFrame(pa.Table.from_batches(kept, arrow.schema), schema)
    try:
        from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame
        sc = spark.sparkContext
        members = getattr(sc, _SQL_UTILS, None)
        if members is None:
            utils = sc._jvm.PythonSQLUtils  # type: ignore[union-attr]
            members = (utils.readArrowStreamFromFile, utils.toDataFrame)
            setattr(sc, _SQL_UTILS, members)
        read_file, to_frame = members
        # Spark's Arrow stream reader ends the relation at the first empty batch (measured on
        # Spark 4.3: rows of every later batch were lost), and a concatenation of per-file reads
        # has one for each file the filter emptied: only batches holding rows are sent.
        batches = [b for b in arrow.cast(to_arrow_schema(schema, timezone="UTC")).to_batches() if b.num_rows]
        jiter = sc._serialize_to_jvm(batches, ArrowStreamSerializer(), read_file,
                                     lambda: sc._jvm.ArrowIteratorServer())  # type: ignore[union-attr]
        frame = ClassicFrame(to_frame(jiter, schema.json(), spark._jsparkSession), spark)
    except (ImportError, AttributeError):  # another PySpark than the one this was written for
        return spark.createDataFrame(arrow, schema)
    return frame


def _chunk_bytes(parquet: Any, group: int, names: Sequence[str]) -> int:
    meta = parquet.metadata.row_group(group)
    return sum(meta.column(c).total_compressed_size for c in range(meta.num_columns)
               if meta.column(c).path_in_schema in names)


def _group_starts(parquet: Any) -> np.ndarray:
    """The first row position of every row group, and the file's row count last."""
    meta = parquet.metadata
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    return np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))


def _candidate_groups(parquet: Any, f: FilePlan, plan: ReadPlan, group: _Group) -> list[int]:
    """The row groups of ``f`` that may hold a matching live row (see :func:`_small_read`)."""
    from paimon_index.table.stats import row_group_may_match

    starts = _group_starts(parquet)
    if f.selected is not None:
        holding = np.searchsorted(starts, f.selected, side="right") - 1
        wanted = np.flatnonzero(np.bincount(holding, minlength=len(starts) - 1)).tolist()
    else:
        wanted = list(range(len(starts) - 1))
    if not group.mapping.identity:
        return wanted  # the predicate names the current columns: statistics by name could mislead
    return [g for g in wanted if row_group_may_match(parquet, g, plan.predicate, plan.schema)]


def _dictionary_columns(parquet: Any, wanted: Sequence[int], group: _Group) -> list[str]:
    """The string and binary columns whose chunks in row groups ``wanted`` are dictionary-encoded
    throughout, as far as the footer tells: each has a dictionary page of at most
    1/:data:`_DICTIONARY_SHARE` of the chunk's bytes (a writer whose dictionary overflowed fell back
    to plain pages after a dictionary as large as its limit, ~1 MB). Read as indices, such a chunk
    decodes ~4x faster; a chunk that fell back decodes ~2x slower (its values hashed), measured with
    pyarrow on 128k-row groups of 50 and of 2M distinct strings."""
    meta = parquet.metadata
    leaf = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    out = []
    for field in group.arrow:
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
                or pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type)):
            continue
        i = leaf.get(field.name)
        if i is None:
            continue
        chunks = [meta.row_group(g).column(i) for g in wanted]
        if all(c.has_dictionary_page and c.dictionary_page_offset and
               (c.data_page_offset - c.dictionary_page_offset) * _DICTIONARY_SHARE <= c.total_compressed_size
               for c in chunks):
            out.append(field.name)
    return out


def _live_selected(f: FilePlan) -> np.ndarray:
    """The rows of ``f`` the indexes selected that its vector does not delete, sorted, distinct."""
    from paimon_index.deletionvectors.vector import sorted_contains

    assert f.selected is not None
    selected = np.unique(np.asarray(f.selected, dtype=np.int64))  # sorted: the file's order
    if f.deleted is not None:
        # A binary search per selected row: np.isin sorted the whole vector (0.9 s for the 24
        # vectors of a 20M-row table after a 10% upsert, against 2,000 selected rows a file).
        selected = selected[~sorted_contains(_sorted(f.deleted), selected)]
    return selected


def _candidate_rows(parquet: Any, f: FilePlan, wanted: list[int], group: _Group, starts: np.ndarray,
                    selected: np.ndarray | None) -> pa.Table:
    """Row groups ``wanted`` of ``f`` minus deleted rows, kept to the ``selected`` rows (its live
    selection, :func:`_live_selected`; None: no selection); ``starts``: the file's
    :func:`_group_starts`."""
    from paimon_index.deletionvectors.vector import sorted_contains

    # A selection keeps a few rows: its dictionary-encoded strings are read as indices, decoded after.
    dictionary = _dictionary_columns(parquet, wanted, group) if selected is not None else []
    reader = parquet.with_dictionary(dictionary) if dictionary else parquet
    # The schema's columns only: a primary-key table's files also hold its _KEY_/_SEQUENCE_ columns.
    table = reader.read_row_groups(wanted, columns=group.arrow.names)
    if selected is not None:
        # The selected rows taken by their place in the read (no mask over every row read: a
        # bitmap's few thousand rows in a 2M-row file cost a 2M-element isin).
        chosen = np.asarray(wanted, dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(starts[chosen + 1] - starts[chosen])[:-1]))
        # Only the selected rows inside the row groups read (a file is read a slice at a time).
        first, end = np.searchsorted(selected, [starts[chosen[0]], starts[chosen[-1] + 1]])
        inside = selected[first:end]
        holding = np.searchsorted(starts, inside, side="right") - 1
        slot = np.minimum(np.searchsorted(chosen, holding), len(chosen) - 1)
        inside, holding, slot = (a[chosen[slot] == holding] for a in (inside, holding, slot))
        table = table.take(pa.array(inside - starts[holding] + offsets[slot]))
        for name in dictionary:
            at = table.schema.get_field_index(name)
            plain = group.arrow.field(name)
            table = table.set_column(at, plain, table.column(at).cast(plain.type))
    else:
        positions = np.concatenate([np.arange(starts[g], starts[g + 1], dtype=np.int64) for g in wanted])
        if f.deleted is not None:
            table = table.filter(pa.array(~sorted_contains(_sorted(f.deleted), positions)))
    return table


def _prefiltered(table: pa.Table, plan: ReadPlan, group: _Group) -> pa.Table:
    """``table`` (a file's candidate rows) kept to the rows that pass the plan's predicate, when
    Arrow can evaluate it on the file's columns (a superset of the WHERE: Spark's filter decides)."""
    from paimon_index.arrow_filter import to_arrow_expression
    from paimon_index.predicate import ALWAYS_TRUE

    if not group.mapping.identity or plan.predicate is ALWAYS_TRUE:
        return table
    try:
        expression = to_arrow_expression(plan.predicate, plan.schema)
    except PaimonIndexError:
        return table  # a predicate Arrow cannot express: Spark's filter alone decides
    return table.filter(expression)


def _shield_floats(df: DataFrame, schema: Any, keep: Sequence[str] = ()) -> DataFrame:
    """FLOAT/DOUBLE columns, and such fields of struct columns, behind ``nanvl(c, c)`` (the same
    value, -0.0 and NaN included), so Spark cannot push a filter on them into its Parquet reader.

    Why: pyarrow (pypaimon's writer) leaves NaN out of a column's min/max, and Spark's Parquet
    row-group filter then drops groups holding NaN rows that Spark's own semantics keep (``d <=>
    CAST('NaN' AS DOUBLE)``, ``d > 1`` with NaN above every number). Spark pushes filters on struct
    fields too (``s.d > 1``; ``spark.sql.optimizer.nestedPredicatePushdown.supportedFileSources``),
    so a struct's float fields are replaced in place (``withField``: a NULL struct stays NULL).
    Spark's filter still runs on every row; only its row-group skipping on these fields is given up.
    ``keep``: columns after ``schema``'s (the metadata columns), kept as they are.
    """
    # df's schema is known here (asking df would be a Py4J round trip), and so is whether any field
    # needs the shield: a Column is a JVM object, so none is built for a table without floats.
    floats = {f.name: _float_paths(f.dataType) for f in schema.fields}
    if not any(floats.values()):
        return df
    if not any(path for paths in floats.values() for path in paths):
        # Top-level floats only: one selectExpr (Column objects cost Py4J round trips per column).
        quoted = {f.name: _connect.quoted(f.name) for f in schema.fields}
        texts = [f"nanvl({quoted[f.name]}, {quoted[f.name]}) AS {quoted[f.name]}" if floats[f.name]
                 else quoted[f.name] for f in schema.fields]
        return df.selectExpr(*texts, *[_connect.quoted(k) for k in keep])
    from pyspark.sql import functions as F

    columns = []
    for f in schema.fields:
        column = F.col(_connect.quoted(f.name))
        for path in floats[f.name]:
            field = F.col(_connect.quoted(f.name))
            for name in path:
                field = field.getField(name)
            value = F.nanvl(field, field)
            column = column.withField(".".join(_connect.quoted(n) for n in path), value) if path else value
        columns.append(column.alias(f.name))
    return df.select(*columns, *[F.col(k) for k in keep])


@dataclass
class _Resolving:
    """A session's settings while reads make their relations (:func:`_resolving_files`)."""

    previous: dict[str, str | None]  # the session's own values (None: not set)
    readers: int = 0
    threshold: int = 0


_RESOLVING_CONFS = (_LISTING_THRESHOLD, _FILE_STATUS_CACHE)
_RESOLVING_LOCK = threading.Lock()
_resolving: dict[int, _Resolving] = {}


@contextlib.contextmanager
def _resolving_files(spark: SparkSession, files: int) -> Iterator[None]:
    """While a read's Parquet relations are made (``spark.read.parquet``, which resolves them at once
    in classic mode; a Connect server resolves them when it runs the plan, where this does nothing).

    Spark lists the paths given with a Spark job once there are more than 32 of them; the plan
    already knows every file, so the listing stays on the driver (one status call per file). And
    each relation's file index would keep its files' statuses in Spark's shared file status cache
    under a key of its own, which no later read asks for (10 entries a read of 10 files, 200 after
    20 reads; 9,806 in 4 minutes of the slow generated-SQL suite), held until the cache's 250 MB
    (``spark.sql.hive.filesourcePartitionFileCacheSize``); with that size 0 Spark gives the index
    no cache.
    """
    # Reads on one session may overlap (threads): the first to start saves the session's values,
    # the last to end puts them back, and the threshold is the most any of them needs.
    key = id(spark)
    with _RESOLVING_LOCK:
        held = _resolving.get(key)
        if held is None:
            held = _resolving[key] = _Resolving({k: spark.conf.get(k, None) for k in _RESOLVING_CONFS})
            spark.conf.set(_FILE_STATUS_CACHE, "0")
        held.readers += 1
        if files + 1 > held.threshold:
            held.threshold = max(files + 1, 32)
            spark.conf.set(_LISTING_THRESHOLD, str(held.threshold))
    try:
        yield
    finally:
        with _RESOLVING_LOCK:
            held.readers -= 1
            if held.readers == 0:
                del _resolving[key]
                for name, before in held.previous.items():
                    if before is None:
                        spark.conf.unset(name)
                    else:
                        spark.conf.set(name, before)


def _order_columns(orders: Sequence[SortOrder]) -> list[Any]:
    from pyspark.sql import functions as F

    columns = []
    for o in orders:
        c = F.col(_connect.quoted(o.column))
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
                 catalog_options: Mapping[str, str] | None = None,
                 small_read_bytes: int | None = None, opened: Table | None = None,
                 metadata: bool = False, change_of: int | None = None,
                 reads: Sequence[str] | None = None, read_optimized: bool = False,
                 audit_log: bool = False) -> PlannedRead:
    """:func:`read`, with the plan it made (files, what each step pruned, planning time);
    ``opened``: ``table`` already opened by the caller (SQL opens each reference once).
    ``reads``: the columns the caller's query reads of the DataFrame (default ``columns``; None:
    unknown), a hint only: on a local master the driver reads a plan its indexes selected when its
    row groups hold no more bytes than Spark would read of these columns (see :func:`_small_read`).
    ``metadata``: the metadata columns (:data:`~paimon_index.table.files.METADATA_COLUMNS`: each
    row's data file, position, partition and bucket, what a change by position marks) follow the
    table's, as the ``paimon_index`` source's ``metadata-columns`` gives them; no small read.
    ``change_of``: read the files of that snapshot under the table's *current* schema (what a
    change planned on it reads; ``snapshot_id`` is time travel, under the snapshot's schema).
    ``read_optimized``: Paimon's ``t$ro`` (see :func:`~paimon_index.table.scan.plan_read`).
    ``audit_log``: Paimon's ``t$audit_log``: :data:`ROW_KIND` first, then the table's columns; of a
    primary-key table each row's kind as its data file holds it, and without deletion vectors a key
    whose newest version deletes it keeps that row (``-U``/``-D``); an append table's rows are ``+I``."""
    if change_of is not None and snapshot_id is not None:
        raise InvalidOptionError("snapshot_id (time travel) and change_of exclude each other")
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise InvalidOptionError(f"limit must be a non-negative integer, got {limit!r}")
    if small_read_bytes is not None and (not isinstance(small_read_bytes, int) or small_read_bytes < 0):
        raise InvalidOptionError(f"small_read_bytes must be a non-negative integer, got {small_read_bytes!r}")
    if limit is not None and order_by is None:
        raise InvalidOptionError("limit needs order_by (which rows would be kept is otherwise undefined)")
    paimon = _read_table(table, warehouse, snapshot_id, catalog_options, opened)
    if change_of is not None:
        from paimon_index.table.paimon import pinned_current

        paimon = pinned_current(paimon, change_of)
    current = _spark_schema(paimon.table_schema.fields)
    selected = _check_columns(columns, current.names, table)
    if audit_log and any(n.lower() == ROW_KIND for n in current.names):
        raise UnsupportedTableError(f"{table}$audit_log: the table has a column named {ROW_KIND!r}, "
                                    "the audit log's row kind column")
    kinds = audit_log and bool(paimon.is_primary_key_table)
    if order_by is not None:
        orders = parse_order_by(order_by)  # parsed once; a bad ORDER BY fails before any planning
    # No TopN hint: per-file candidates never empty a file that holds a matching row (each file has
    # its own top k), so they would cost a Python read of the predicate's columns and prune nothing.
    # Spark reads the WHERE's TIMESTAMP literals in the session's time zone (see plan_read).
    # ``paimon`` is pinned already when time travelling: plan_read plans on its snapshot.
    # Spark reads whole files and applies the WHERE itself: an index is read only where it may skip
    # a file (or spare its deletion vector), see plan_read's whole_files.
    # A small read takes the selections: while the plan may be small, the indexes are read.
    plan = plan_read(paimon, where, use_index=use_index, session_time_zone=spark.conf.get(_SESSION_TIME_ZONE),
                     whole_files=True, read_optimized=read_optimized, keep_deleting=audit_log,
                     small_read=(SMALL_READ_FILES, SMALL_READ_ROWS) if small_read_bytes != 0 else None)
    bound, first = None, None
    if order_by is not None and limit is not None:
        first = orders[0]
        bound, kept = topn_prune(plan, first.column, limit, ascending=first.ascending,
                                 nulls_first=first.nulls_first)
        if use_index and len(kept) < len(plan.files):  # files no row of the answer is in
            plan.report.files_skipped_by_index += len(plan.files) - len(kept)
            plan = dataclasses.replace(plan, files=kept)
    groups = {sid: _Group(paimon, plan, sid) for sid in sorted({f.schema_id for f in plan.files})}
    fallback = next((p for p in (g.problem() for g in groups.values()) if p is not None), None)
    if fallback is None:
        fallback = _unreadable_store(spark, plan.files)
    if (read_optimized or audit_log) and fallback is not None:  # the source reads the table's rows
        system = "$ro" if read_optimized else "$audit_log"
        raise UnsupportedTableError(f"{table}{system} cannot be read by Spark's Parquet reader ({fallback}); "
                                    f"read {table} itself")
    if metadata and fallback is None and len({f.name for f in plan.files}) < len(plan.files):
        fallback = "two data files of one name (the metadata columns join the plan's files by name)"
    # use_index=False is the comparison without any pruning: no row-group statistics either.
    small = None if fallback is not None or not plan.files or not use_index or metadata or audit_log else \
        _small_read(spark, plan, groups, current, small_read_bytes, reads if reads is not None else selected)
    statement = _STATEMENT.get()
    if small is not None and statement is not None and change_of is not None:
        statement.rows_read += small.rows  # the change's own rows (not a subquery's)
    extra = list(METADATA_COLUMNS) if metadata else []
    if fallback is not None:
        df = source_read(spark, table, snapshot_id if change_of is None else change_of, warehouse,
                         catalog_options, metadata=metadata, current_schema=change_of is not None)
    elif not plan.files:
        from paimon_index.spark.datasource import metadata_fields

        df = spark.createDataFrame([], _with_fields(current, metadata_fields() if metadata else []))
    elif small is not None:
        df = small.dataframe
    else:
        df = None
        from pyspark.sql import functions as F

        added = None if not metadata else {_NAME: _file_name_column(),
                                           ROW_INDEX_COLUMN: F.col("_metadata.row_index")}
        with _resolving_files(spark, len(plan.files)):
            for sid, group in groups.items():
                part = _scan(spark, group, [f for f in plan.files if f.schema_id == sid], current, added,
                             kinds=kinds)
                df = part if df is None else df.unionByName(part)
        if metadata and df is not None:
            df = _with_metadata(spark, df, plan.files, list(paimon.partition_keys or []), current.names)
    assert df is not None
    if audit_log:
        from pyspark.sql import functions as F

        if not kinds or not plan.files:  # an append table's rows (or none) are inserts
            df = df.withColumn(ROW_KIND, F.lit(_INSERT_KIND))
        extra.append(ROW_KIND)
    if small is None:  # the driver's rows have no Parquet statistics to shield floats from
        df = _shield_floats(df, current if fallback is None else _without(df.schema, extra), extra)
    if where is not None and where.strip():
        df = df.filter(where)
    if first is not None and bound is not None and fallback is None:
        df = _bounded(df, plan, first, bound)  # before the projection: the key may not be selected
    if audit_log:  # Java's column order: the row kind first
        df = df.select(ROW_KIND, *[_connect.quoted(c) for c in (selected or current.names)])
    elif selected is not None:
        df = df.select(*[_connect.quoted(c) for c in [*selected, *extra]])
    if order_by is not None:
        df = df.orderBy(*_order_columns(orders))
        if limit is not None:
            df = df.limit(limit)
    return PlannedRead(df, plan, fallback, None if small is None else small.rows)


def _with_fields(schema: Any, fields: Sequence[Any]) -> Any:
    from pyspark.sql.types import StructType

    return StructType([*schema.fields, *fields])


def _without(schema: Any, names: Sequence[str]) -> Any:
    from pyspark.sql.types import StructType

    return StructType([f for f in schema.fields if f.name not in names])


def rows_only_read(spark: SparkSession, table: str, *, warehouse: str, snapshot_id: int | None = None,
                   catalog_options: Mapping[str, str] | None = None, opened: Table | None = None,
                   where: str | None = None, read_optimized: bool = False) -> PlannedRead | None:
    """A read for a consumer of no column (``SELECT count(*) FROM t``): as many rows, without
    columns, as the table's live rows, from metadata only -- each planned file's row count minus its
    deletion vector, no data file opened. Spark counts, limits or filters them as the statement says.

    ``where`` (Spark SQL text): as many rows as pass it, when the indexes answer it *exactly* for
    every file the statistics keep (:attr:`~paimon_index.table.files.FilePlan.exact`: a bitmap's
    ``=``/``IN``/``IS NULL``, a range bitmap's comparisons, ... with Spark's NULL, NaN and ±0.0
    rules, see :mod:`paimon_index.fileindex.evaluate`); None when they do not (the caller reads).
    ``read_optimized``: the rows of Paimon's ``t$ro`` (see :func:`~paimon_index.table.scan.plan_read`).

    Raises:
        UnsupportedTableError: a primary-key table whose rows need a merge by key (as :func:`read_planned`).
    """
    paimon = _read_table(table, warehouse, snapshot_id, catalog_options, opened)
    if where is None:
        plan = _counted_by_manifest(paimon, read_optimized)
        if plan is None:
            plan = plan_read(paimon, None, whole_files=True, read_optimized=read_optimized)
        resolved = all(f.resolved for f in plan.files)
        rows = _selected_rows(plan.files) if resolved else _manifest_rows(plan.files)
    else:
        bound = _bound_on_indexed_columns(paimon, where)
        if bound is None:
            return None  # a column without an index: no exact answer to hope for, no plan spent
        plan = plan_read(paimon, bound, exact_answers=True, read_optimized=read_optimized,
                         session_time_zone=spark.conf.get(_SESSION_TIME_ZONE))
        counted = proven_rows(plan)
        if counted is None:
            return None
        rows = counted
    plan.report.rows_returned = rows
    partitions = max(1, -(-rows // _ROWS_PER_RANGE_PARTITION))
    return PlannedRead(spark.range(0, rows, 1, partitions).select(), plan)


def proven_rows(plan: ReadPlan) -> int | None:
    """How many rows match the plan's WHERE, when its indexes answered it exactly for every file
    (resolved plans only); else None."""
    if not plan.exact or not all(f.exact and f.resolved for f in plan.files):
        return None
    return _selected_rows(plan.files)


def _selected_rows(files: Sequence[FilePlan]) -> int:
    """The rows resolved files select: each file's selection, else its live rows."""
    return sum(f.live_rows if f.selected is None else len(f.selected) for f in files)


def _counted_by_manifest(paimon: Any, read_optimized: bool = False) -> ReadPlan | None:
    """The unresolved plan of every file when the index manifest records each deletion vector's
    cardinality (no vector read for a count); None when one is unrecorded, or the table's rows need
    its read plan (a merge-on-read table's older versions)."""
    from paimon_index.table.pk.plan import dv_mode

    if paimon.is_primary_key_table and not dv_mode(paimon) and not read_optimized:
        return None  # its count needs the versions the plan subtracts (none in a deferred plan)
    try:
        plan = plan_read(paimon, None, defer=True, read_optimized=read_optimized)
    except UnsupportedTableError:
        return None  # level-0 files merged on read
    if any(f.deletion is not None and f.deletion.cardinality is None for f in plan.files):
        return None
    return plan


def _manifest_rows(files: Sequence[FilePlan]) -> int:
    """The live rows of unresolved files: each row count minus its vector's recorded cardinality."""
    return sum(f.row_count - (0 if f.deletion is None or f.deletion.cardinality is None
                              else f.deletion.cardinality) for f in files)


def _bound_on_indexed_columns(paimon: Any, where: str) -> Predicate | None:
    """``where`` bound to the table's schema when it binds exactly and each column it names has a
    file index in the table's options (a cheap test before a plan that must answer it exactly);
    else None."""
    from paimon_index.fileindex.options import FileIndexOptions
    from paimon_index.predicate import columns_of
    from paimon_index.table.paimon import table_options
    from paimon_index.table.scan import conservative_predicate
    from paimon_index.table.schemas import read_schema

    options = FileIndexOptions.from_table_options(table_options(paimon))
    if not options.read_enabled:
        return None
    indexed = {spec.column.lower() for spec in options.specs}
    bound, exact = conservative_predicate(where, read_schema(paimon))
    return bound if exact and all(c.lower() in indexed for c in columns_of(bound)) else None


def _read_table(table: str, warehouse: str, snapshot_id: int | None,
                catalog_options: Mapping[str, str] | None, opened: Table | None) -> Any:
    """The pypaimon table a read plans on: ``opened`` (else ``table`` opened now), pinned to
    ``snapshot_id`` when one is asked for (:func:`_time_travel`)."""
    from paimon_index.table.api import open_table

    if opened is None:
        opened = open_table(warehouse, table, catalog_options=catalog_options)
    paimon = opened.paimon_table
    return paimon if snapshot_id is None else _time_travel(paimon, table, snapshot_id)


def _time_travel(paimon: Any, table: str, snapshot_id: int) -> Any:
    """``paimon`` pinned to ``snapshot_id``, under that snapshot's schema (Java's and pypaimon's
    rule for time travel, which ``Table.read`` follows too)."""
    from paimon_index.errors import TableError
    from paimon_index.table.paimon import pinned_table, snapshot_exists

    if not snapshot_exists(paimon, snapshot_id):
        raise TableError(f"table {table} has no snapshot {snapshot_id} (never committed or expired)")
    return pinned_table(paimon, snapshot_id)


def _bounded(df: DataFrame, plan: ReadPlan, first: SortOrder, bound: int) -> DataFrame:
    """``df`` with the TopN's global bound on its first ORDER BY key as a filter Spark pushes into
    its Parquet reader (row groups whose min/max cannot reach the bound are skipped); the same
    rows in the answer (:func:`~paimon_index.table.scan.topn_bound`: ties kept by ``>=``/``<=``,
    NULLs kept where they sort first)."""
    from pyspark.sql import functions as F

    value = _bound_value(bound, plan.schema.get(first.column), df.schema[first.column].dataType,
                         ascending=first.ascending)
    if value is None:
        return df
    c = F.col(_connect.quoted(first.column))
    keep = c <= value if first.ascending else c >= value
    return df.filter(keep | c.isNull() if first.nulls_first else keep)


def _bound_value(key: int, dtype: Any, spark_type: Any, *, ascending: bool) -> Any:
    """The TopN bound (a range-bitmap key) as a literal of the column's Spark type, which Spark
    folds and pushes into its Parquet reader; None when it has no such literal.

    A TIMESTAMP key in millis (precision <= 3) stands for every microsecond of that millisecond
    (keys round down), so ``<=`` takes its last microsecond and ``>=`` its first: the filter keeps
    every row whose key reaches the bound.
    """
    from decimal import Decimal

    from pyspark.sql import functions as F

    from paimon_index.types import MILLIS_PRECISION, TypeRoot

    root = dtype.root
    if root is TypeRoot.DATE:
        return F.expr(f"date_from_unix_date({int(key)})")
    if root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        micros = int(key)
        if (dtype.precision or 0) <= MILLIS_PRECISION:
            micros = micros * _MICROS_PER_MILLI + (_MICROS_PER_MILLI - 1 if ascending else 0)
        if root is TypeRoot.TIMESTAMP_LTZ:
            return F.expr(f"timestamp_micros({micros})")  # an instant: no time zone involved
        try:  # TIMESTAMP is Spark's TIMESTAMP_NTZ: a wall-clock literal, exact to the microsecond
            text = (_EPOCH + dt.timedelta(microseconds=micros)).isoformat(sep=" ", timespec="microseconds")
        except OverflowError:
            return None  # outside years 1..9999: Spark sorts everything
        return F.expr(f"TIMESTAMP_NTZ '{text}'")
    if root is TypeRoot.DECIMAL:
        return F.lit(Decimal(int(key)).scaleb(-(dtype.scale or 0))).cast(spark_type)
    return F.lit(int(key)).cast(spark_type)  # integers: the column's type, pushed as is


def source_read(spark: SparkSession, table: str, snapshot_id: int | None, warehouse: str,
                catalog_options: Mapping[str, str] | None, *, metadata: bool = False,
                current_schema: bool = False, single_scan_pushdown: bool = False) -> DataFrame:
    """The ``paimon_index`` source over the same table (a snapshot only when one was asked for: the
    source reads a pinned snapshot under that snapshot's schema, not the current one --
    ``current_schema``: under the current one, as a change planned on it reads); ``metadata``: with
    its metadata columns."""
    from paimon_index.spark.datasource import METADATA, SOURCE_NAME
    from paimon_index.spark.options import CURRENT_SCHEMA, SINGLE_SCAN_PUSHDOWN, SNAPSHOT_ID, WAREHOUSE

    reader = spark.read.format(SOURCE_NAME).options(**dict(catalog_options or {}))
    reader = reader.option(WAREHOUSE, warehouse)
    if metadata:
        reader = reader.option(METADATA, "true")
    if current_schema:
        reader = reader.option(CURRENT_SCHEMA, "true")
    if snapshot_id is not None:
        reader = reader.option(SNAPSHOT_ID, str(snapshot_id))
    if single_scan_pushdown:
        reader = reader.option(SINGLE_SCAN_PUSHDOWN, "true")
    with _connect.active_session(spark):
        return reader.load(table)


def merge_read(spark: SparkSession, table: str, snapshot_id: int | None, warehouse: str,
               catalog_options: Mapping[str, str] | None, refusal: Exception,
               opened: Table | None = None) -> tuple[DataFrame, str]:
    """The rows of a primary-key table the planned read refused (``refusal``: its files need a merge
    by key) as a DataFrame, and how it was read: the ``paimon_index`` source, whose tasks merge
    each bucket's rows (without deletion vectors: one task per bucket, pypaimon's merge read; in
    deletion-vectors mode with level-0 files: the merge of the source's read); no index prunes it.

    Raises:
        UnsupportedTableError: ``refusal`` again when the table is not a primary-key table.
    """
    from paimon_index.table.api import open_table

    if opened is None:
        opened = open_table(warehouse, table, catalog_options=catalog_options)
    if not opened.is_primary_key_table:
        raise refusal
    return (source_read(spark, table, snapshot_id, warehouse, catalog_options),
            f"merge read through the paimon_index source ({refusal})")


def read(spark: SparkSession, table: str, where: str | None = None, columns: Sequence[str] | None = None,
         *, warehouse: str, snapshot_id: int | None = None, order_by: str | None = None,
         limit: int | None = None, use_index: bool = True,
         catalog_options: Mapping[str, str] | None = None,
         small_read_bytes: int | None = None) -> DataFrame:
    """The rows of ``table`` where ``where`` (Spark SQL) holds, as a DataFrame Spark's Parquet reader reads.

    Args:
        where: a Spark SQL condition, applied by Spark; the indexes only choose the files.
        columns: the columns to return (default: all), in this order.
        snapshot_id: read this snapshot (default: the latest, pinned when this is called).
        order_by, limit: ``"score DESC, id"`` and k: the DataFrame is sorted (and limited).
        use_index: False plans every live file (statistics and indexes unused, no small read), for
            comparison.
        catalog_options: ``fs.*`` options for pypaimon's catalog.
        small_read_bytes: a selective plan whose candidate row groups hold at most this many bytes
            of column chunks (and at most :data:`SMALL_READ_ROWS` candidate rows, in at most
            :data:`SMALL_READ_FILES` files) is read on the driver and handed to Spark as a local
            relation, Spark's filter on top (0: never; default :data:`SMALL_READ_BYTES`, and on a
            local master no byte or file limit for a plan whose indexes selected every file's rows,
            up to :data:`LOCAL_SELECTED_ROWS` of them; see ``docs/read-path.md``).

    Returns:
        A DataFrame of the current schema's columns (with ``snapshot_id``: that snapshot's schema's),
        all nullable, planned on one snapshot: it reads the same files whenever it runs. A
        primary-key table whose rows need a merge by key: its merged rows (:func:`merge_read`).

    Raises:
        InvalidOptionError: an unknown column, a bad ``limit``.
        TableError: ``snapshot_id`` does not exist.
    """
    from paimon_index.table.api import open_table

    opened = open_table(warehouse, table, catalog_options=catalog_options)  # once, for either read
    try:
        return read_planned(spark, table, where, columns, warehouse=warehouse, snapshot_id=snapshot_id,
                            order_by=order_by, limit=limit, use_index=use_index,
                            catalog_options=catalog_options, small_read_bytes=small_read_bytes,
                            opened=opened).dataframe
    except UnsupportedTableError as refusal:  # a primary-key table whose rows need a merge by key
        df = merge_read(spark, table, snapshot_id, warehouse, catalog_options, refusal, opened=opened)[0]
    # The planned read's arguments were checked before it refused; Spark applies them to the merged rows.
    selected = _check_columns(columns, df.columns, table)
    if where is not None and where.strip():
        df = df.filter(where)
    if selected is not None:
        df = df.select(*[_connect.quoted(c) for c in selected])
    if order_by is not None:
        df = df.orderBy(*_order_columns(parse_order_by(order_by)))
        if limit is not None:
            df = df.limit(limit)
    return df
