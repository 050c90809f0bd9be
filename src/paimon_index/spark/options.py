"""The options of the ``paimon_index`` Spark source, parsed once into typed, frozen values.

    parse_read_options(options)  -> ReadOptions     (load: spark.read.format(...).option(...))
    parse_write_options(options) -> WriteOptions    (save: df.write.format(...).option(...))
    pushdown_safe(version)       -> bool            (does this Spark keep a pushed plan per scan?)

Spark hands a Python source its options as strings with **lower-cased** keys (``CaseInsensitiveDict``),
so keys are matched without case. A key that is neither an option of this source nor a catalog
option (``fs.*``, forwarded to pypaimon's catalog, e.g. ``fs.s3.endpoint``) is an error that names
the key and the nearest valid one: a misspelt option never silently does nothing. Catalog keys get
their spelling back from pypaimon's own option list (``fs.s3.accessKeyId``), since pypaimon matches
them with case.

Filter pushdown (``filter-pushdown``): ``auto`` (default) is on only where Spark keeps the read plan
made during pushdown in the scan that pushed it (:data:`SCAN_SCOPED_PUSHDOWN_SINCE`). Spark 4.1 to
4.3 keep it on the relation instead (``PythonDataSourceV2.setReadInfo``), so every later scan of
the same DataFrame, view or self-joined table reads the plan of the last scan that pushed filters;
there pushdown is off (Spark applies every filter itself, the indexes are not used, the rows are
exact) and ``true`` is **refused**: a user's DataFrame can always be reused (a view counted twice
returned 1,478,870 rows of 6,001,215), so forcing it on is not something a user can do safely.
The project's own one-scan paths (``jobs``' row-level reads) turn it on through a private key,
:data:`SINGLE_SCAN_PUSHDOWN`, which is not a user option. ``false`` forces it off.

The table identifier given to ``load``/``save`` is checked by
:func:`paimon_index.table.catalog.parse_identifier` here, on the driver, before anything is opened
(``save`` also refuses system tables and branches). A writer given a table option (``bucket``,
``primary-key``, ``file-index.*``, any key of Paimon's ``CoreOptions``) gets
:class:`~paimon_index.errors.TableOptionOnWriterError`: table options belong to the table.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from paimon_index.errors import InvalidOptionError, TableOptionOnWriterError
from paimon_index.fileindex.base import TopN
from paimon_index.fileindex.options import parse_bool
from paimon_index.sql import parse_order_by

__all__ = [
    "BUCKET_EXCLUSIVE",
    "COMMIT_USER",
    "CURRENT_SCHEMA",
    "DELETE_KEYS",
    "FILTER_PUSHDOWN",
    "METADATA",
    "READ_ENABLED",
    "READ_OPTIONS",
    "SCAN_SCOPED_PUSHDOWN_SINCE",
    "SINGLE_SCAN_PUSHDOWN",
    "SNAPSHOT_ID",
    "WAREHOUSE",
    "WRITE_OPTIONS",
    "ReadOptions",
    "WriteOptions",
    "parse_read_options",
    "parse_write_options",
    "pushdown_safe",
]

WAREHOUSE = "warehouse"
#: The table identifier ``db.table`` given to ``load``/``save`` arrives as this option.
PATH = "path"
READ_ENABLED = "file-index.read.enabled"
TOPN = "topn"
LIMIT = "limit"
SCAN_REPORT = "scan-report"
METADATA = "metadata-columns"
SNAPSHOT_ID = "scan.snapshot-id"
FILTER_PUSHDOWN = "filter-pushdown"
#: Private read option (not for users, not documented as one): pushdown on even where Spark shares
#: the pushed plan between scans, for the project's own reads that are scanned by one query only.
SINGLE_SCAN_PUSHDOWN = "_paimon-index.single-scan-pushdown"
#: Private read option: with ``scan.snapshot-id``, that snapshot's files under the table's *current*
#: schema (what a change planned on it reads; a schema change commits no snapshot), not time travel.
CURRENT_SCHEMA = "_paimon-index.current-schema"
#: Write option: every bucket reaches one task only, so tasks look keys up themselves.
BUCKET_EXCLUSIVE = "bucket-exclusive"
#: Private write option (the DELETE of a primary-key table): the ``-D`` rows remove their keys
#: whatever the merge engine (Paimon's connector deletes by position or with remove-record-on-delete).
DELETE_KEYS = "_paimon-index.delete-keys"
#: Private write option: the commit user of the write's snapshot, so that the job that started the
#: write (its commit runs in another Python process) finds exactly its own snapshot afterwards.
COMMIT_USER = "_paimon-index.commit-user"
#: Keys starting so are catalog (file system) options, forwarded to pypaimon.
CATALOG_PREFIX = "fs."

READ_OPTIONS = (WAREHOUSE, PATH, READ_ENABLED, TOPN, LIMIT, SCAN_REPORT, METADATA, SNAPSHOT_ID,
                FILTER_PUSHDOWN, SINGLE_SCAN_PUSHDOWN, CURRENT_SCHEMA)
#: Keys never suggested nor listed to users.
_UNLISTED = (PATH, SINGLE_SCAN_PUSHDOWN, CURRENT_SCHEMA, DELETE_KEYS, COMMIT_USER)
WRITE_OPTIONS = (WAREHOUSE, PATH, BUCKET_EXCLUSIVE, DELETE_KEYS, COMMIT_USER)
PUSHDOWN_MODES = ("auto", "true", "false")

#: The first Spark release whose ``PythonScanBuilder`` carries the read plan made during filter
#: pushdown into its own ``PythonScan`` (Spark 4.1-4.3 store it on the provider, shared by every
#: scan of the relation). apache/spark master has the scan-scoped form; 4.3.0 does not.
SCAN_SCOPED_PUSHDOWN_SINCE = (4, 4)
_VERSION = re.compile(r"(\d+)\.(\d+)")


def pushdown_safe(version: str | None = None) -> bool:
    """Whether filter pushdown into a Python source is exact for every query shape on this Spark."""
    if version is None:
        import pyspark

        version = pyspark.__version__
    m = _VERSION.match(version)
    return m is not None and (int(m[1]), int(m[2])) >= SCAN_SCOPED_PUSHDOWN_SINCE


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """What a read asked for (plain values: pickled to every task)."""

    warehouse: str
    table: str
    use_index: bool = True
    pushdown: bool = False
    topn: TopN | None = None
    metadata_columns: bool = False
    snapshot_id: int | None = None
    #: ``snapshot_id``'s files under the current schema (:data:`CURRENT_SCHEMA`)
    current_schema: bool = False
    scan_report: str | None = None
    #: ``fs.*`` options for pypaimon's catalog, with pypaimon's spelling of the key.
    catalog: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class WriteOptions:
    warehouse: str
    table: str
    bucket_exclusive: bool = False
    catalog: tuple[tuple[str, str], ...] = ()
    delete_keys: bool = False
    commit_user: str | None = None


def _catalog_key_spelling() -> dict[str, str]:
    """Lower-cased key -> pypaimon's spelling, for every catalog option pypaimon declares."""
    from paimon_index.table.paimon import ConfigOption
    from paimon_index.table.paimon import pypaimon_config as config

    keys = (value.key() for cls in vars(config).values() if isinstance(cls, type)
            for value in vars(cls).values() if isinstance(value, ConfigOption))
    return {key.lower(): key for key in keys}


def _table_option(key: str) -> bool:
    """Whether ``key`` (lower-cased) is a Paimon table option (Java's or pypaimon's ``CoreOptions``)."""
    from paimon_index.spark._paimon_options import TABLE_OPTION_KEYS, TABLE_OPTION_PREFIXES

    if key in TABLE_OPTION_KEYS or key.startswith(TABLE_OPTION_PREFIXES):
        return True
    from paimon_index.table.paimon import ConfigOption
    from paimon_index.table.paimon import pypaimon_config as config

    return any(isinstance(v, ConfigOption) and v.key().lower() == key
               for cls in vars(config).values() if isinstance(cls, type) for v in vars(cls).values())


def _table_option_on_writer(key: str, value: str, table: str | None) -> TableOptionOnWriterError:
    name = table or "db.t"
    own = ", ".join(k for k in WRITE_OPTIONS if k not in _UNLISTED)
    return TableOptionOnWriterError(
        f"'{key}' is a table option, not a write option: table options belong to the table, set when it "
        f"is created or altered -- paimon_index.spark.attach(spark, warehouse=W).sql(\"CREATE TABLE {name} "
        f"(...) TBLPROPERTIES ('{key}' = '{value}')\") or \"ALTER TABLE {name} SET TBLPROPERTIES (...)\", or "
        f"paimon_index.create_table(W, '{name}', schema, options={{'{key}': '{value}'}}) / "
        f"Table.alter_options(...); a write takes only {own} and catalog options '{CATALOG_PREFIX}*'")


#: The option Spark adds for a table of its own catalog (``CREATE TABLE ... USING <source>``).
SPARK_CATALOG_LOCATION = "location"


def _split(options: Mapping[str, str], known: tuple[str, ...], kind: str
           ) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """(this source's options by lower-cased key, catalog options) or an error naming a bad key."""
    own: dict[str, str] = {}
    catalog: list[tuple[str, str]] = []
    spelling: dict[str, str] | None = None
    if any(k.lower() == SPARK_CATALOG_LOCATION for k in options):
        raise InvalidOptionError(
            "a table of Spark's catalog over the paimon_index source (CREATE TABLE ... USING paimon_index) "
            "is not supported: Spark hands the source a location, not a Paimon table. Use "
            "paimon = paimon_index.spark.attach(spark, warehouse=W); paimon.sql(\"SELECT ... FROM db.t\"), "
            "or paimon.sql(\"CREATE TABLE db.t (...) TBLPROPERTIES (...)\") to create a Paimon table")
    for key, value in options.items():
        lower = key.lower()
        if lower in known:
            own[lower] = value
        elif lower.startswith(CATALOG_PREFIX):
            spelling = spelling if spelling is not None else _catalog_key_spelling()
            catalog.append((spelling.get(lower, key), value))
        elif kind == "write" and _table_option(lower):
            raise _table_option_on_writer(key, value, _path(options))
        else:
            listed = [k for k in known if k not in _UNLISTED]
            nearest = difflib.get_close_matches(lower, listed, n=1, cutoff=0.6)
            hint = f"; did you mean '{nearest[0]}'?" if nearest else ""
            valid = ", ".join(listed)
            raise InvalidOptionError(f"unknown {kind} option '{key}'{hint} (valid: {valid}, and catalog "
                                     f"options '{CATALOG_PREFIX}*')")
    return own, tuple(sorted(catalog))


def _path(options: Mapping[str, str]) -> str | None:
    return next((v for k, v in options.items() if k.lower() == PATH), None)


def _location(own: Mapping[str, str], *, for_write: bool = False) -> tuple[str, str]:
    """(warehouse, the checked ``database.table``): the identifier is validated before any file is
    touched (:func:`paimon_index.table.catalog.parse_identifier`)."""
    from paimon_index.table.catalog import parse_identifier

    warehouse, table = own.get(WAREHOUSE), own.get(PATH)
    if not warehouse or table is None:
        raise InvalidOptionError("paimon_index needs .option('warehouse', ...) and .load('db.table') "
                                 "(or .save('db.table'))")
    return warehouse, parse_identifier(table, for_write=for_write).full_name


def _topn(own: Mapping[str, str]) -> TopN | None:
    order_by, limit = own.get(TOPN), own.get(LIMIT)
    if order_by is None:
        if limit is not None:
            raise InvalidOptionError("option 'limit' is only meaningful with option 'topn'")
        return None
    if limit is None or not limit.strip().isdigit() or int(limit) <= 0:
        raise InvalidOptionError(f"option 'topn' needs option 'limit' as a positive integer, got {limit!r}")
    # Ties at the k-th value are all kept (strict=False): the query's own sort picks among them.
    return TopN(tuple(parse_order_by(order_by)), int(limit), strict=False)


def _pushdown(own: Mapping[str, str]) -> bool:
    if SINGLE_SCAN_PUSHDOWN in own:  # the project's own one-scan reads
        return parse_bool(own[SINGLE_SCAN_PUSHDOWN], SINGLE_SCAN_PUSHDOWN)
    mode = own.get(FILTER_PUSHDOWN, "auto").strip().lower()
    if mode not in PUSHDOWN_MODES:
        raise InvalidOptionError(f"option '{FILTER_PUSHDOWN}' is one of {', '.join(PUSHDOWN_MODES)}, "
                                 f"got {mode!r}")
    if mode == "true" and not pushdown_safe():
        import pyspark

        raise InvalidOptionError(
            f"option '{FILTER_PUSHDOWN}' = 'true' is refused on Spark {pyspark.__version__}: before Spark "
            f"{'.'.join(map(str, SCAN_SCOPED_PUSHDOWN_SINCE))} every scan of a DataFrame or view reads the "
            "filters pushed by the last one, so reusing it returns wrong rows silently. For reads pruned "
            "by the indexes use paimon_index.spark.attach(spark, warehouse=W).sql(...) or "
            "paimon_index.spark.jobs.read(spark, 'db.t', where, warehouse=W); drop the option otherwise "
            "(docs/semantics.md#spark-versions-and-filter-pushdown)")
    return pushdown_safe() if mode == "auto" else mode == "true"


def _snapshot_id(own: Mapping[str, str]) -> int | None:
    text = own.get(SNAPSHOT_ID)
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) <= 0:
        raise InvalidOptionError(f"option '{SNAPSHOT_ID}' must be a positive integer, got {text!r}")
    return int(text)


#: ``scan-report`` values name an accumulator: this prefix and its id (see spark/report.py).
SCAN_REPORT_PREFIX = "paimon-index-scan-report:"


def _scan_report(own: Mapping[str, str]) -> str | None:
    text = own.get(SCAN_REPORT) or None
    if text is not None and not (text.startswith(SCAN_REPORT_PREFIX)
                                 and text[len(SCAN_REPORT_PREFIX):].isdigit()):
        raise InvalidOptionError(f"option '{SCAN_REPORT}' = {text!r}: expected the name of "
                                 "paimon_index.spark.report.scan_report(spark) (a directory is no longer "
                                 "accepted: it does not work on a cluster)")
    return text


def parse_read_options(options: Mapping[str, str]) -> ReadOptions:
    """The read options, checked: unknown keys, bad values and missing ones are errors."""
    own, catalog = _split(options, READ_OPTIONS, "read")
    warehouse, table = _location(own)
    return ReadOptions(warehouse=warehouse, table=table,
                       use_index=parse_bool(own.get(READ_ENABLED, "true"), READ_ENABLED),
                       pushdown=_pushdown(own), topn=_topn(own),
                       metadata_columns=parse_bool(own.get(METADATA, "false"), METADATA),
                       snapshot_id=_snapshot_id(own), scan_report=_scan_report(own),
                       current_schema=parse_bool(own.get(CURRENT_SCHEMA, "false"), CURRENT_SCHEMA),
                       catalog=catalog)


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    own, catalog = _split(options, WRITE_OPTIONS, "write")
    warehouse, table = _location(own, for_write=True)
    return WriteOptions(warehouse=warehouse, table=table,
                        bucket_exclusive=parse_bool(own.get(BUCKET_EXCLUSIVE, "false"), BUCKET_EXCLUSIVE),
                        catalog=catalog, delete_keys=parse_bool(own.get(DELETE_KEYS, "false"), DELETE_KEYS),
                        commit_user=own.get(COMMIT_USER) or None)
