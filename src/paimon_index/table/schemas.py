"""Schema evolution: which of a data file's columns is which current column, by field id.

    schema = read_schema(table)          # the current schema: column name -> Paimon type (a dict)
    mapping = schema.mapping(meta.schema_id)
    rows = mapping.evolve(parquet_rows)  # the file's rows under the current schema
    mapping.index_predicate(bound)       # the predicate for the file's index container

Paimon names a column by its *field id*, not its name: every data file records the id of the
schema it was written with (``DataFileMeta.schema_id``), and that schema's fields give the id of
each of the file's columns. A file is read under the table's current schema as Java's
``SchemaEvolutionUtil.createIndexCastMapping`` does:

* a current column whose field id the file has comes from the file's column of that id (under its
  old name after a rename), cast to the current type when the type changed (``INT -> BIGINT``;
  numbers as Paimon's ``NumericPrimitiveCastRule`` casts them, i.e. Java primitive conversions:
  narrowing integers wrap, floating point to integer truncates and saturates, NaN is 0; any other
  cast Arrow cannot make exactly is a :class:`SchemaEvolutionError`);
* a current column whose id the file lacks (added later, or dropped and added again under the same
  name: a new id) is NULL of the current type;
* a file column whose id the current schema lacks (dropped) is not read.

The index container of a data file names the file's columns and was built from the file's values,
so a predicate bound to the current schema is translated per file before it meets the container:

* a leaf on a column the file holds with the same field id and the same type becomes the same leaf
  on the file's name of that column;
* a leaf on a column whose type changed becomes TRUE: the index holds keys of another type
  (Java casts the literals down instead; answering "cannot tell" is the simpler superset);
* a leaf on a column the file lacks is the leaf evaluated on NULL: TRUE for ``IS NULL`` (every
  row), FALSE for every other operator (a comparison with NULL is never TRUE; ``NOT IN`` and
  ``<>`` included), so ``c = 1`` skips a file written before ``c`` existed — Java's scan prunes such
  files by their (all-NULL) statistics the same way.

Predicates hold no NOT node (negations live in the leaves' operators), so the tree is monotone:
replacing a leaf by TRUE gives a superset of its rows, and replacing an UNKNOWN leaf by FALSE
keeps exactly the rows for which the predicate is TRUE. The reader still re-checks the predicate
exactly on the evolved rows.

The current schema is a ``dict`` (name -> :class:`~paimon_index.types.DataType`, the columns an
index can see), so every caller that only needs types keeps using it as before; it pickles to Spark
executors with pypaimon's ``SchemaManager`` inside, which loads older schema versions there on first
use (one small JSON file per version, cached per read).

pypaimon internals used: ``table.table_schema`` (``id``, ``fields``), ``table.schema_manager``
(``get_schema(id)``, picklable), ``DataField.id/name/type``, ``PyarrowFieldParser.from_paimon_schema``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from paimon_index.errors import PaimonIndexError, SchemaEvolutionError
from paimon_index.fileindex.base import TopN
from paimon_index.predicate import ALWAYS_FALSE, ALWAYS_TRUE, And, Leaf, Op, Or, Predicate, and_, or_
from paimon_index.types import DataType, parse_type

__all__ = ["Column", "FileMapping", "ReadSchema", "SchemaEvolutionError", "SchemaVersion", "mapping_of",
           "read_schema"]

#: How Paimon spells a non-nullable type; nullability is not part of "the same type" here.
_NOT_NULL = " NOT NULL"


@dataclass(frozen=True, slots=True)
class Column:
    """One field of one schema version."""

    id: int
    name: str
    type_key: str  # the Paimon type without nullability, e.g. "BIGINT" or "DECIMAL(10, 2)"
    dtype: DataType | None  # None for a type the index layer does not model (ROW, ARRAY, ...)
    nullable: bool = True


def _column(field: Any) -> Column:
    text = str(field.type)
    try:
        dtype: DataType | None = parse_type(text)
    except PaimonIndexError:
        dtype = None
    key = str(replace(dtype, nullable=True)) if dtype is not None else text.upper().removesuffix(_NOT_NULL)
    return Column(int(field.id), str(field.name), key, dtype, not text.upper().endswith(_NOT_NULL))


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """The fields of one schema id."""

    id: int
    columns: tuple[Column, ...]

    @classmethod
    def of(cls, schema: Any) -> SchemaVersion:
        return cls(int(schema.id), tuple(_column(f) for f in schema.fields))


@dataclass(frozen=True)
class _Source:
    """Where one current column comes from in a file."""

    name: str  # current name
    file_name: str | None  # None: the file lacks the column (NULL)
    cast: pa.DataType | None  # target Arrow type when the type changed (or for a NULL column)
    nullable: bool  # as the current schema says (files of different versions concatenate)


@dataclass(frozen=True)
class FileMapping:
    """The columns of files written with one schema version, seen under the current schema."""

    schema_id: int
    identity: bool  # same ids, names, types and order as the current schema: nothing to do
    sources: tuple[_Source, ...]
    index_names: dict[str, str]  # current name -> file name, same field id and same type
    index_types: dict[str, DataType]  # file name -> type, for those columns

    def file_columns(self, current: Iterable[str] | None = None) -> list[str] | None:
        """The file's columns to read for ``current`` columns (all current when None; None: all)."""
        if self.identity and current is None:
            return None
        wanted = None if current is None else set(current)
        return [s.file_name for s in self.sources
                if s.file_name is not None and (wanted is None or s.name in wanted)]

    def evolve(self, rows: pa.Table, current: Sequence[str] | None = None, *, path: str = "") -> pa.Table:
        """``rows`` read from a file (its column names) as the ``current`` columns (default: all)."""
        if self.identity and current is None:
            return rows
        wanted = None if current is None else set(current)
        arrays, fields = [], []
        for source in self.sources:
            if wanted is not None and source.name not in wanted:
                continue
            if source.file_name is None:
                assert source.cast is not None
                column = pa.chunked_array([pa.nulls(rows.num_rows, source.cast)])
            else:
                column = rows.column(source.file_name)
                if source.cast is not None:
                    column = _cast(column, source, path)
            arrays.append(column)
            fields.append(pa.field(source.name, column.type, source.nullable))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def index_predicate(self, bound: Predicate) -> Predicate:
        """``bound`` (current columns) for this file's index container (see the module docstring)."""
        if self.identity:
            return bound
        if isinstance(bound, Leaf):
            name = self.index_names.get(bound.column)
            if name is not None:
                return bound if name == bound.column else Leaf(bound.op, name, bound.literals)
            if self._lacks(bound.column):
                return ALWAYS_TRUE if bound.op is Op.IS_NULL else ALWAYS_FALSE
            return ALWAYS_TRUE  # another type in this file: its index cannot tell
        if isinstance(bound, And):
            return and_(*(self.index_predicate(c) for c in bound.children))
        if isinstance(bound, Or):
            return or_(*(self.index_predicate(c) for c in bound.children))
        return bound

    def index_topn(self, topn: TopN) -> TopN | None:
        """``topn`` on this file's index, or None when its first key has no usable index here."""
        if self.identity or not topn.orders:
            return topn
        name = self.index_names.get(topn.orders[0].column)
        if name is None:
            return None
        return replace(topn, orders=(replace(topn.orders[0], column=name), *topn.orders[1:]))

    def _lacks(self, current: str) -> bool:
        return any(s.name == current and s.file_name is None for s in self.sources)


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _float_to_integer(chunk: pa.Array, target: pa.DataType) -> pa.Array:
    """Java's ``Number.intValue()``/``longValue()`` of a double (the first to INT for narrower
    targets, which then wrap): truncated toward zero, saturated at the bounds, NaN -> 0."""
    bits = 64 if target == pa.int64() else 32
    wide = pa.int64() if bits == 64 else pa.int32()
    limit = 2.0 ** (bits - 1)
    values = np.nan_to_num(chunk.to_numpy(zero_copy_only=False).astype(np.float64), nan=0.0)
    out = np.zeros(len(values), dtype=np.int64)
    inside = (values > -limit) & (values < limit)
    out[inside] = np.trunc(values[inside]).astype(np.int64)
    out[values >= limit] = 2 ** (bits - 1) - 1
    out[values <= -limit] = -(2 ** (bits - 1))
    mask = chunk.is_null().to_numpy(zero_copy_only=False)
    return pa.array(out, pa.int64(), mask=mask).cast(wide).cast(target, safe=False)


def _java_numeric_cast(column: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """A numeric column cast as Paimon's ``NumericPrimitiveCastRule`` does (Java primitive
    conversions): integers narrow by wrapping, numbers to floating point round to nearest."""
    if pa.types.is_floating(column.type) and pa.types.is_integer(target):
        return pa.chunked_array([_float_to_integer(c, target) for c in column.chunks], target)
    return column.cast(target, safe=False)


def _cast(column: pa.ChunkedArray, source: _Source, path: str) -> pa.ChunkedArray:
    assert source.cast is not None
    if _is_number(column.type) and _is_number(source.cast):
        return _java_numeric_cast(column, source.cast)
    try:
        return column.cast(source.cast)  # safe: a value the new type cannot hold is an error
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        where = f" of {path}" if path else ""
        raise SchemaEvolutionError(f"column {source.file_name!r}{where} ({column.type}) cannot be read as "
                                   f"{source.name!r} ({source.cast}): {e}") from e


def _mapping(file: SchemaVersion, current: SchemaVersion,
             arrow: dict[str, pa.DataType | None]) -> FileMapping:
    by_id = {c.id: c for c in file.columns}
    identity = [(c.id, c.name, c.type_key) for c in file.columns] == \
        [(c.id, c.name, c.type_key) for c in current.columns]
    sources, index_names, index_types = [], {}, {}
    for column in current.columns:
        old = by_id.get(column.id)
        same_type = old is not None and old.type_key == column.type_key
        target = None if same_type else arrow.get(column.name)
        if not same_type and target is None:
            raise SchemaEvolutionError(f"column {column.name!r} ({column.type_key}) has no Arrow type to "
                                       f"read files of schema {file.id} into")
        # A file may hold no NULL where the current schema allows them (NOT NULL dropped); a column
        # added later is NULL in old files whatever the current schema says.
        nullable = column.nullable or old is None
        if old is None:
            sources.append(_Source(column.name, None, target, nullable))
            continue
        sources.append(_Source(column.name, old.name, target, nullable))
        if same_type and old.dtype is not None:
            index_names[column.name] = old.name
            index_types[old.name] = old.dtype
    return FileMapping(file.id, identity, tuple(sources), index_names, index_types)


class ReadSchema(dict[str, DataType]):
    """The current schema (column name -> type, the columns an index can see), and per schema id
    the mapping of older files' columns (:meth:`mapping`).

    Not built by ``__init__`` arguments but by :func:`read_schema`; a plain ``dict`` copy of it
    loses the history (files are then read by name).
    """

    current: SchemaVersion
    arrow_types: dict[str, pa.DataType | None]  # current column -> pypaimon's Arrow type (None: none)
    _manager: Any
    _mappings: dict[int, FileMapping]

    def mapping(self, schema_id: int) -> FileMapping:
        """How files written with schema ``schema_id`` map to the current columns (cached)."""
        if schema_id not in self._mappings:
            self._mappings[schema_id] = _mapping(self._version(schema_id), self.current, self.arrow_types)
        return self._mappings[schema_id]

    def detached(self, schema_ids: Iterable[int]) -> ReadSchema:
        """This schema with the mappings of ``schema_ids`` computed and no link to the table's schema
        manager (a pypaimon object): what a task gets with the files it reads."""
        copy = ReadSchema(self)
        copy.current, copy.arrow_types, copy._manager = self.current, self.arrow_types, None
        copy._mappings = {i: self.mapping(i) for i in schema_ids}
        return copy

    def _version(self, schema_id: int) -> SchemaVersion:
        if schema_id == self.current.id:
            return self.current
        schema = self._manager.get_schema(schema_id) if self._manager is not None else None
        if schema is None:
            raise SchemaEvolutionError(f"schema {schema_id} of the table is missing (a data file was written "
                                       "with it); its columns cannot be mapped to the current ones")
        return SchemaVersion.of(schema)


def read_schema(table: Any) -> ReadSchema:
    """The table's current schema, able to map every older data file's columns to it."""
    from paimon_index.table.paimon import PyarrowFieldParser

    current = table.table_schema
    schema = ReadSchema()
    schema.current = SchemaVersion.of(current)
    schema.arrow_types = {}
    for f in current.fields:
        try:
            schema.arrow_types[f.name] = PyarrowFieldParser.from_paimon_type(f.type)
        except Exception:  # a type pypaimon cannot map: only an error if a file needs a cast to it
            schema.arrow_types[f.name] = None
    schema._manager = getattr(table, "schema_manager", None)
    schema._mappings = {}
    for column in schema.current.columns:
        if column.dtype is not None:
            schema[column.name] = column.dtype
    return schema


def mapping_of(schema: Any, meta: Any) -> FileMapping | None:
    """The file's mapping when ``schema`` knows the history (a :class:`ReadSchema`), else None."""
    if isinstance(schema, ReadSchema):
        return schema.mapping(int(meta.schema_id))
    return None
