"""Paimon data types the indexes see, their Arrow mapping and canonical value encodings.

An index never hashes or stores a Python object: it works on a column's *canonical keys*, the
values Paimon's Java code hashes and serializes. :func:`canonical_column` turns an Arrow array into
them (vectorized), :func:`canonical_literal` does the same for one predicate literal.

    Paimon type                       key kind   canonical key (as Java sees it)
    --------------------------------  ---------  ---------------------------------------------
    TINYINT / SMALLINT / INT / BIGINT INT8..64   the integer
    DATE                              INT32      days since 1970-01-01
    TIME(p)                           INT32      milliseconds of the day
    TIMESTAMP(p), TIMESTAMP_LTZ(p)    INT64      epoch millis if p <= 3, else epoch micros
                                                 (floor: Java's Timestamp keeps nanos >= 0)
    FLOAT / DOUBLE                    FLOAT32/64 the IEEE value (all NaNs are one key)
    BOOLEAN                           BOOL       the boolean
    CHAR / VARCHAR / STRING           BYTES      UTF-8 bytes (BinaryString)
    BINARY / VARBINARY / BYTES        BYTES      the bytes
    DECIMAL(p, s)                     DECIMAL    the unscaled integer (value * 10**s)

Integer and date/time keys are NumPy ``int64`` arrays, floats ``float32``/``float64``, booleans
``bool``, and byte strings an Arrow ``binary`` array (never a Python list).

ARRAY, MULTISET, MAP and ROW are types too (a schema holds them) but have no key: no index takes them.

Type strings (:func:`parse_type`, :func:`parse_fields`, :func:`parse_schema`) are tokenized and
parsed by recursive descent, no Spark needed, in one of two dialects: ``"paimon"`` (how Paimon
writes types in its schema files; the default) or ``"spark"`` (a Spark SQL DDL string, mapped as
Paimon's Spark connector maps Spark types: see :data:`Dialect`). Both accept every name either
system uses (``BYTE``/``TINYINT``, ``LONG``/``BIGINT``, ``STRUCT<a: INT>``/``ROW<a INT>`` ...).
Errors give the position and the token found.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass, replace
from enum import Enum
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import InvalidPredicateError, UnsupportedTypeError

__all__ = [
    "CanonicalColumn",
    "DataType",
    "Dialect",
    "Field",
    "KeyKind",
    "TypeRoot",
    "canonical_column",
    "canonical_literal",
    "from_arrow",
    "parse_fields",
    "parse_schema",
    "parse_type",
]

#: Paimon's maximum CHAR/VARCHAR/BINARY length; VARCHAR of this length is spelled STRING.
MAX_LENGTH = 2147483647
MILLIS_PER_DAY = 86_400_000
#: Timestamps of precision up to this are keyed by epoch millis, above it by epoch micros.
MILLIS_PRECISION = 3
DEFAULT_TIMESTAMP_PRECISION = 6
DEFAULT_TIME_PRECISION = 0
MAX_COMPACT_DECIMAL_PRECISION = 18


class TypeRoot(Enum):
    TINYINT = "TINYINT"
    SMALLINT = "SMALLINT"
    INT = "INT"
    BIGINT = "BIGINT"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    BOOLEAN = "BOOLEAN"
    CHAR = "CHAR"
    VARCHAR = "VARCHAR"
    BINARY = "BINARY"
    VARBINARY = "VARBINARY"
    DATE = "DATE"
    TIME = "TIME"
    TIMESTAMP = "TIMESTAMP"
    TIMESTAMP_LTZ = "TIMESTAMP_LTZ"
    ARRAY = "ARRAY"
    MULTISET = "MULTISET"
    MAP = "MAP"
    ROW = "ROW"


class KeyKind(Enum):
    """How a type's values are keyed (the Java class an index sees)."""

    INT8 = "byte"
    INT16 = "short"
    INT32 = "int"
    INT64 = "long"
    FLOAT32 = "float"
    FLOAT64 = "double"
    BOOL = "boolean"
    BYTES = "bytes"
    DECIMAL = "decimal"


_INT_BOUNDS = {
    KeyKind.INT8: (-(2**7), 2**7 - 1),
    KeyKind.INT16: (-(2**15), 2**15 - 1),
    KeyKind.INT32: (-(2**31), 2**31 - 1),
    KeyKind.INT64: (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class DataType:
    """A Paimon data type: an atomic type an index can meet, or ARRAY/MULTISET/MAP/ROW of types.

    Nested types carry their children (``element``; ``key`` and ``value``; ``fields``); no index
    handles them, so :attr:`key_kind` raises :class:`UnsupportedTypeError` for them.
    """

    root: TypeRoot
    length: int | None = None  # CHAR, VARCHAR, BINARY, VARBINARY
    precision: int | None = None  # DECIMAL, TIME, TIMESTAMP, TIMESTAMP_LTZ
    scale: int | None = None  # DECIMAL
    nullable: bool = True
    element: DataType | None = None  # ARRAY, MULTISET
    key: DataType | None = None  # MAP
    value: DataType | None = None  # MAP
    fields: tuple[Field, ...] = ()  # ROW

    @property
    def key_kind(self) -> KeyKind:
        kind = _KEY_KIND.get(self.root)
        if kind is None:
            raise UnsupportedTypeError(f"data type {self} has no index key (nested types are not indexed)")
        return kind

    @property
    def is_nested(self) -> bool:
        return self.root in _NESTED

    @property
    def is_string(self) -> bool:
        return self.root in (TypeRoot.CHAR, TypeRoot.VARCHAR)

    @property
    def is_timestamp(self) -> bool:
        return self.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ)

    def with_nullable(self, nullable: bool) -> DataType:
        return replace(self, nullable=nullable)

    def __str__(self) -> str:
        """Paimon's own spelling (Java ``DataType.asSQLString``), e.g. ``ROW<`a` INT NOT NULL>``."""
        r = self.root
        if r is TypeRoot.VARCHAR and self.length == MAX_LENGTH:
            s = "STRING"
        elif r is TypeRoot.VARBINARY and self.length == MAX_LENGTH:
            s = "BYTES"
        elif r in (TypeRoot.CHAR, TypeRoot.VARCHAR, TypeRoot.BINARY, TypeRoot.VARBINARY):
            s = f"{r.value}({self.length})"
        elif r is TypeRoot.DECIMAL:
            s = f"DECIMAL({self.precision}, {self.scale})"
        elif r in (TypeRoot.TIME, TypeRoot.TIMESTAMP):
            s = f"{r.value}({self.precision})"
        elif r is TypeRoot.TIMESTAMP_LTZ:
            s = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        elif r in (TypeRoot.ARRAY, TypeRoot.MULTISET):
            s = f"{r.value}<{self.element}>"
        elif r is TypeRoot.MAP:
            s = f"MAP<{self.key}, {self.value}>"
        elif r is TypeRoot.ROW:
            s = f"ROW<{', '.join(str(f) for f in self.fields)}>"
        else:
            s = r.value
        return s if self.nullable else f"{s} NOT NULL"


@dataclass(frozen=True)
class Field:
    """A named column (or ROW field) with its type and optional comment."""

    name: str
    type: DataType
    comment: str | None = None

    def __str__(self) -> str:
        """Java's ``DataField.asSQLString``: back-quoted name, type, quoted comment."""
        name = "`" + self.name.replace("`", "``") + "`"
        text = f"{name} {self.type}"
        if self.comment:  # Java prints no COMMENT for an empty one
            text += " COMMENT '" + self.comment.replace("'", "''") + "'"
        return text


_NESTED = frozenset({TypeRoot.ARRAY, TypeRoot.MULTISET, TypeRoot.MAP, TypeRoot.ROW})


_KEY_KIND = {
    TypeRoot.TINYINT: KeyKind.INT8,
    TypeRoot.SMALLINT: KeyKind.INT16,
    TypeRoot.INT: KeyKind.INT32,
    TypeRoot.BIGINT: KeyKind.INT64,
    TypeRoot.FLOAT: KeyKind.FLOAT32,
    TypeRoot.DOUBLE: KeyKind.FLOAT64,
    TypeRoot.DECIMAL: KeyKind.DECIMAL,
    TypeRoot.BOOLEAN: KeyKind.BOOL,
    TypeRoot.CHAR: KeyKind.BYTES,
    TypeRoot.VARCHAR: KeyKind.BYTES,
    TypeRoot.BINARY: KeyKind.BYTES,
    TypeRoot.VARBINARY: KeyKind.BYTES,
    TypeRoot.DATE: KeyKind.INT32,
    TypeRoot.TIME: KeyKind.INT32,
    TypeRoot.TIMESTAMP: KeyKind.INT64,
    TypeRoot.TIMESTAMP_LTZ: KeyKind.INT64,
}

# ------------------------------------------------------------------------------------------------
# Parsing "id BIGINT NOT NULL COMMENT 'key', tags ARRAY<STRING>, ts TIMESTAMP(3)"
# ------------------------------------------------------------------------------------------------
#: How a type string is read. ``"paimon"``: Paimon's (Flink SQL's) spelling, the one Paimon writes
#: in its schema files. ``"spark"``: a Spark SQL DDL string, mapped the way Paimon's Spark connector
#: maps Spark types (``SparkTypeUtils``): bare ``TIMESTAMP`` is Spark's local-time-zone instant ->
#: ``TIMESTAMP(6) WITH LOCAL TIME ZONE``; bare ``BINARY`` is Spark's variable-length binary ->
#: ``BYTES``; ``CHAR``/``VARCHAR`` need a length; a MAP key is NOT NULL. Every other spelling means
#: the same in both.
Dialect = Literal["paimon", "spark"]

_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>\d+)
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<string>'(?:[^'\\]|''|\\.)*')
  | (?P<punct>[(),<>:])
""", re.VERBOSE)

_SIMPLE = {
    "TINYINT": TypeRoot.TINYINT, "BYTE": TypeRoot.TINYINT,
    "SMALLINT": TypeRoot.SMALLINT, "SHORT": TypeRoot.SMALLINT,
    "INT": TypeRoot.INT, "INTEGER": TypeRoot.INT,
    "BIGINT": TypeRoot.BIGINT, "LONG": TypeRoot.BIGINT,
    "FLOAT": TypeRoot.FLOAT, "REAL": TypeRoot.FLOAT, "DOUBLE": TypeRoot.DOUBLE,
    "BOOLEAN": TypeRoot.BOOLEAN, "BOOL": TypeRoot.BOOLEAN, "DATE": TypeRoot.DATE,
}
#: Types Paimon (or Spark) has that paimon-index cannot represent.
_UNSUPPORTED = frozenset({"VARIANT", "BLOB", "VECTOR", "GEOMETRY", "GEOGRAPHY", "INTERVAL", "RAW",
                          "OBJECT", "VOID", "NULL"})
MAX_DECIMAL_PRECISION = 38
DEFAULT_DECIMAL_PRECISION = 10
MAX_TIME_PRECISION = 9


@dataclass(frozen=True)
class _Token:
    kind: str  # word, number, quoted, string, punct, end
    text: str
    pos: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise InvalidPredicateError(f"unexpected character {text[pos]!r}", position=pos, text=text)
        if m.lastgroup != "ws":
            tokens.append(_Token(m.lastgroup or "", m.group(), pos))
        pos = m.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


class _TypeParser:
    """Recursive descent over the tokens; every error names the position and the token found."""

    def __init__(self, text: str, dialect: Dialect) -> None:
        if dialect not in ("paimon", "spark"):
            raise InvalidPredicateError(f"unknown type dialect {dialect!r} (paimon or spark)")
        self.text = text
        self.spark = dialect == "spark"
        self.tokens = _tokenize(text)
        self.i = 0

    # -- token helpers --------------------------------------------------------------------------
    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def error(self, what: str, tok: _Token | None = None) -> InvalidPredicateError:
        tok = tok or self.tok
        found = "end of text" if tok.kind == "end" else repr(tok.text)
        return InvalidPredicateError(f"{what}, found {found}", position=tok.pos, text=self.text)

    def next(self) -> _Token:
        tok = self.tok
        if tok.kind != "end":
            self.i += 1
        return tok

    def accept(self, *words: str) -> bool:
        """Consume the keyword sequence ``words`` (or punctuation) if it comes next."""
        for k, word in enumerate(words):
            tok = self.tokens[min(self.i + k, len(self.tokens) - 1)]
            if (tok.upper if word.isalpha() or "_" in word else tok.text) != word:
                return False
        self.i += len(words)
        return True

    def expect(self, punct: str, what: str) -> None:
        if not self.accept(punct):
            raise self.error(f"expected {punct!r} {what}")

    def number(self, what: str) -> int:
        if self.tok.kind != "number":
            raise self.error(f"expected {what}")
        return int(self.next().text)

    def name(self) -> str:
        tok = self.tok
        if tok.kind == "quoted":
            self.next()
            return tok.text[1:-1].replace("``", "`")
        if tok.kind == "word":
            self.next()
            return tok.text
        raise self.error("expected a column name")

    def end(self) -> None:
        if self.tok.kind != "end":
            raise self.error("unexpected text after the type")

    # -- grammar --------------------------------------------------------------------------------
    def fields(self, close: str | None) -> tuple[Field, ...]:
        """``name [:] type [NOT NULL] [COMMENT 'text'], ...`` up to ``close`` (or the end)."""
        out: list[Field] = []
        seen: dict[str, int] = {}
        while True:
            start = self.tok
            name = self.name()
            if name in seen:
                raise InvalidPredicateError(f"column {name!r} declared twice", position=start.pos,
                                            text=self.text)
            seen[name] = start.pos
            self.accept(":")
            dtype = self.type_with_nullability()
            comment = None
            if self.accept("COMMENT"):
                if self.tok.kind != "string":
                    raise self.error("expected a quoted comment after COMMENT")
                comment = _unquote(self.next().text)
            out.append(Field(name, dtype, comment))
            if self.accept(","):
                continue
            if close is None:
                self.end()
            else:
                self.expect(close, "to close the field list")
            return tuple(out)

    def type_with_nullability(self) -> DataType:
        dtype = self.data_type()
        if self.accept("NOT", "NULL"):
            return dtype.with_nullable(False)
        self.accept("NULL")
        return dtype

    def params(self) -> list[int]:
        if not self.accept("("):
            return []
        values = [self.number("a number")]
        while self.accept(","):
            values.append(self.number("a number"))
        self.expect(")", "after the type parameters")
        return values

    def data_type(self) -> DataType:
        tok = self.tok
        if tok.kind != "word":
            raise self.error("expected a data type")
        word = tok.upper
        self.next()

        def arity(params: list[int], most: int) -> list[int]:
            if len(params) > most:
                raise InvalidPredicateError(
                    f"type {word} takes {'no' if most == 0 else f'at most {most}'} parameter"
                    f"{'s' if most != 1 else ''}, got {len(params)}", position=tok.pos, text=self.text)
            return params

        def bad(why: str) -> InvalidPredicateError:
            return InvalidPredicateError(f"{word}: {why}", position=tok.pos, text=self.text)

        if word == "DOUBLE":
            self.accept("PRECISION")
        if word in _SIMPLE:
            arity(self.params(), 0)
            return DataType(_SIMPLE[word])
        if word == "STRING":
            arity(self.params(), 0)
            return DataType(TypeRoot.VARCHAR, length=MAX_LENGTH)
        if word == "BYTES":
            arity(self.params(), 0)
            return DataType(TypeRoot.VARBINARY, length=MAX_LENGTH)
        if word in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            params = arity(self.params(), 1)
            if not params:
                if self.spark and word == "BINARY":
                    return DataType(TypeRoot.VARBINARY, length=MAX_LENGTH)
                if self.spark and word != "VARBINARY":
                    raise bad(f"a Spark DDL {word} needs a length, e.g. {word}(10)")
            length = params[0] if params else 1
            if not 1 <= length <= MAX_LENGTH:
                raise bad(f"length {length} is outside [1, {MAX_LENGTH}]")
            return DataType(TypeRoot[word], length=length)
        if word in ("DECIMAL", "DEC", "NUMERIC"):
            params = arity(self.params(), 2)
            precision = params[0] if params else DEFAULT_DECIMAL_PRECISION
            scale = params[1] if len(params) > 1 else 0
            if not 1 <= precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
                raise bad(f"DECIMAL({precision}, {scale}) needs 1 <= precision <= "
                          f"{MAX_DECIMAL_PRECISION} and 0 <= scale <= precision")
            return DataType(TypeRoot.DECIMAL, precision=precision, scale=scale)
        if word in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_NTZ"):
            params = arity(self.params(), 1)
            default = DEFAULT_TIME_PRECISION if word == "TIME" else DEFAULT_TIMESTAMP_PRECISION
            precision = params[0] if params else default
            if not 0 <= precision <= MAX_TIME_PRECISION:
                raise bad(f"precision {precision} is outside [0, {MAX_TIME_PRECISION}]")
            ltz = word == "TIMESTAMP_LTZ"
            if word in ("TIME", "TIMESTAMP"):
                if self.accept("WITH", "LOCAL", "TIME", "ZONE"):
                    if word == "TIME":
                        raise bad("WITH LOCAL TIME ZONE only follows TIMESTAMP")
                    ltz = True
                elif self.accept("WITHOUT", "TIME", "ZONE"):
                    pass
                elif word == "TIMESTAMP" and not params and self.spark:
                    ltz = True  # Spark's TIMESTAMP is an instant shown in the session time zone
            root = TypeRoot.TIMESTAMP_LTZ if ltz else TypeRoot.TIME if word == "TIME" else TypeRoot.TIMESTAMP
            return DataType(root, precision=precision)
        if word in ("ARRAY", "MULTISET"):
            self.expect("<", f"after {word}")
            element = self.type_with_nullability()
            self.expect(">", f"to close {word}<...>")
            return DataType(TypeRoot[word], element=element)
        if word == "MAP":
            self.expect("<", "after MAP")
            key = self.type_with_nullability()
            if self.spark:
                key = key.with_nullable(False)  # Paimon's Spark connector: map keys are never NULL
            self.expect(",", "between the MAP key and value types")
            value = self.type_with_nullability()
            self.expect(">", "to close MAP<...>")
            return DataType(TypeRoot.MAP, key=key, value=value)
        if word in ("ROW", "STRUCT"):
            if self.accept("<"):
                close = ">"
            else:
                self.expect("(", f"after {word}")
                close = ")"
            if self.accept(close):
                return DataType(TypeRoot.ROW)
            return DataType(TypeRoot.ROW, fields=self.fields(close))
        if word in _UNSUPPORTED:
            raise UnsupportedTypeError(f"data type {word} (at position {tok.pos}) is not supported by "
                                       f"paimon-index")
        raise InvalidPredicateError(f"unknown data type {tok.text!r}", position=tok.pos, text=self.text)


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"''|\\(.)", lambda m: "'" if m.group() == "''" else m.group(1), body)


def parse_type(text: str, *, dialect: Dialect = "paimon") -> DataType:
    """Parse one type, e.g. ``DECIMAL(10, 2)``, ``TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL``,
    ``ARRAY<STRING>``, ``MAP<STRING, INT>``, ``ROW<a INT, b STRING>``.

    Raises:
        InvalidPredicateError: the text is not a type; the message gives the position and token.
        UnsupportedTypeError: a type paimon-index cannot represent (VARIANT, BLOB, INTERVAL ...).
    """
    parser = _TypeParser(text, dialect)
    dtype = parser.type_with_nullability()
    parser.end()
    return dtype


def parse_fields(text: str, *, dialect: Dialect = "paimon") -> tuple[Field, ...]:
    """Parse ``"name TYPE [NOT NULL] [COMMENT '...'], ..."``; names may be back-quoted."""
    if not text.strip():
        raise InvalidPredicateError("empty schema: expected 'name TYPE, ...'")
    return _TypeParser(text, dialect).fields(None)


def parse_schema(text: str, *, dialect: Dialect = "paimon") -> dict[str, DataType]:
    """Parse ``"name TYPE, name TYPE, ..."`` into an ordered ``{name: DataType}``.

    Names may be back-quoted (```weird name` INT``).
    """
    return {f.name: f.type for f in parse_fields(text, dialect=dialect)}


# ------------------------------------------------------------------------------------------------
# Arrow
# ------------------------------------------------------------------------------------------------
_TIME_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def from_arrow(t: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type Paimon itself maps an Arrow type to (dictionary types by their values)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    simple = {
        pa.int8(): TypeRoot.TINYINT, pa.int16(): TypeRoot.SMALLINT, pa.int32(): TypeRoot.INT,
        pa.int64(): TypeRoot.BIGINT, pa.float32(): TypeRoot.FLOAT, pa.float64(): TypeRoot.DOUBLE,
        pa.bool_(): TypeRoot.BOOLEAN, pa.date32(): TypeRoot.DATE, pa.date64(): TypeRoot.DATE,
    }
    if t in simple:
        return DataType(simple[t], nullable=nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return DataType(TypeRoot.VARCHAR, length=MAX_LENGTH, nullable=nullable)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return DataType(TypeRoot.VARBINARY, length=MAX_LENGTH, nullable=nullable)
    if pa.types.is_fixed_size_binary(t):
        return DataType(TypeRoot.BINARY, length=t.byte_width, nullable=nullable)
    if pa.types.is_decimal(t):
        return DataType(TypeRoot.DECIMAL, precision=t.precision, scale=t.scale, nullable=nullable)
    if pa.types.is_time(t):
        return DataType(TypeRoot.TIME, precision=_TIME_UNIT_PRECISION[t.unit], nullable=nullable)
    if pa.types.is_timestamp(t):
        root = TypeRoot.TIMESTAMP_LTZ if t.tz is not None else TypeRoot.TIMESTAMP
        return DataType(root, precision=_TIME_UNIT_PRECISION[t.unit], nullable=nullable)
    raise UnsupportedTypeError(f"Arrow type {t} has no Paimon type an index can handle")


@dataclass(frozen=True)
class CanonicalColumn:
    """A column as canonical keys (see module docstring), with its validity.

    Attributes:
        dtype: the Paimon type.
        values: NumPy array (numbers, booleans) or Arrow ``binary`` array (bytes); entries at
            null positions are unspecified.
        valid: boolean NumPy mask, True where the row is not NULL.
    """

    dtype: DataType
    values: np.ndarray | pa.Array
    valid: np.ndarray

    def __len__(self) -> int:
        return len(self.valid)

    @property
    def null_count(self) -> int:
        return int(len(self.valid) - np.count_nonzero(self.valid))


def _valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)


def _int64_values(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _physical_int64(arr: pa.Array) -> np.ndarray:
    """The stored integers of a temporal array (time32/date32 are 32-bit, others 64-bit)."""
    width = pa.int32() if arr.type.bit_width == 32 else pa.int64()
    return _int64_values(arr.cast(width))


def _to_epoch_units(arr: pa.Array, dtype: DataType) -> np.ndarray:
    """Arrow timestamps to epoch millis (precision <= 3) or micros, rounding down like Java."""
    unit = arr.type.unit
    raw = _physical_int64(arr)
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    target = 1_000 if (dtype.precision or 0) <= MILLIS_PRECISION else 1_000_000
    if per_second == target:
        return raw
    if per_second < target:
        return raw * (target // per_second)
    return np.floor_divide(raw, per_second // target)


def canonical_column(arr: pa.Array | pa.ChunkedArray, dtype: DataType | None = None) -> CanonicalColumn:
    """Convert an Arrow column to the canonical keys of ``dtype`` (default: from the Arrow type)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):  # Parquet and Spark may hand columns over encoded
        arr = arr.dictionary_decode()
    if dtype is None:
        dtype = from_arrow(arr.type)
    valid = _valid_mask(arr)
    kind = dtype.key_kind
    t = arr.type
    values: np.ndarray | pa.Array
    if kind is KeyKind.BYTES:
        if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
                or pa.types.is_string_view(t) or pa.types.is_binary_view(t)):
            raise UnsupportedTypeError(f"column of Arrow type {t} cannot be read as {dtype}")
        values = arr.cast(pa.large_binary()) if pa.types.is_large_string(t) or pa.types.is_large_binary(t) \
            else arr.cast(pa.binary())
    elif kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
        np_type = np.float32 if kind is KeyKind.FLOAT32 else np.float64
        values = np.asarray(arr.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False)
                            ).astype(np_type)
    elif kind is KeyKind.BOOL:
        values = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    elif kind is KeyKind.DECIMAL:
        values = _decimal_unscaled(arr, dtype)
    elif dtype.root is TypeRoot.DATE:
        if pa.types.is_date64(t):
            values = np.floor_divide(_physical_int64(arr), MILLIS_PER_DAY)
        elif pa.types.is_date32(t):
            values = _physical_int64(arr)
        else:
            values = _int64_values(arr)
    elif dtype.root is TypeRoot.TIME:
        if pa.types.is_time(t):
            per_ms = {"s": -1000, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
            raw = _physical_int64(arr)
            values = raw * 1000 if per_ms < 0 else np.floor_divide(raw, per_ms)
        else:
            values = _int64_values(arr)
    elif dtype.is_timestamp:
        values = _to_epoch_units(arr, dtype) if pa.types.is_timestamp(t) else _int64_values(arr)
    else:
        if not (pa.types.is_integer(t)):
            raise UnsupportedTypeError(f"column of Arrow type {t} cannot be read as {dtype}")
        values = _int64_values(arr)
    return CanonicalColumn(dtype, values, valid)


def _decimal_unscaled(arr: pa.Array, dtype: DataType) -> np.ndarray:
    scale = dtype.scale or 0
    if pa.types.is_decimal(arr.type):
        if (dtype.precision or 0) > MAX_COMPACT_DECIMAL_PRECISION:
            raise UnsupportedTypeError(f"{dtype} is not a compact decimal (precision > 18)")
        py = arr.fill_null(decimal.Decimal(0)).to_pylist()
        return np.array([int(v.scaleb(scale)) for v in py], dtype=np.int64)
    return _int64_values(arr)


# ------------------------------------------------------------------------------------------------
# Literals
# ------------------------------------------------------------------------------------------------
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)


def canonical_literal(value: object, dtype: DataType) -> object:
    """The canonical key of one literal for ``dtype``; ``None`` stays ``None`` (SQL NULL).

    Accepts the natural Python value (``int``, ``float``, ``str``, ``bytes``, ``bool``,
    ``datetime.date``, ``datetime.datetime``, ``datetime.time``, ``decimal.Decimal``) or the canonical
    key itself (e.g. days for DATE). Raises :class:`InvalidPredicateError` when it does not fit.
    """
    if value is None:
        return None
    kind = dtype.key_kind

    def bad(why: str = "") -> InvalidPredicateError:
        extra = f": {why}" if why else ""
        return InvalidPredicateError(f"literal {value!r} does not fit type {dtype}{extra}")

    if kind is KeyKind.BYTES:
        if isinstance(value, str):
            if dtype.root in (TypeRoot.BINARY, TypeRoot.VARBINARY):
                raise bad("binary columns take bytes literals")
            return value.encode("utf-8", errors="surrogatepass")
        if isinstance(value, bytes | bytearray):
            return bytes(value)
        raise bad()
    if kind is KeyKind.BOOL:
        if isinstance(value, bool):
            return value
        raise bad()
    if kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
        if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
            raise bad()
        f = float(value)
        return float(np.float32(f)) if kind is KeyKind.FLOAT32 else f
    if isinstance(value, bool):
        raise bad()
    if dtype.root is TypeRoot.DATE and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = (value - _EPOCH_DATE).days
    elif dtype.root is TypeRoot.TIME and isinstance(value, dt.time):
        value = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    elif dtype.is_timestamp and isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        delta = value - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        value = micros // 1000 if (dtype.precision or 0) <= MILLIS_PRECISION else micros
    elif kind is KeyKind.DECIMAL:
        if isinstance(value, float | str):
            value = decimal.Decimal(str(value))
        if isinstance(value, decimal.Decimal):
            # Exact: the default context (28 digits) would round a DECIMAL(38) value's unscaled key.
            exact = decimal.Context(prec=max(28, len(value.as_tuple().digits)))
            scaled = value.scaleb(dtype.scale or 0, context=exact)
            if scaled != scaled.to_integral_value():
                raise bad(f"more than {dtype.scale} decimal places")
            value = int(scaled)
        if not isinstance(value, int):
            raise bad()
        if abs(value) >= 10 ** (dtype.precision or 0):
            raise bad(f"more than {dtype.precision} digits")
        return value
    if not isinstance(value, int):
        raise bad()
    lo, hi = _INT_BOUNDS[KeyKind.INT64 if kind is KeyKind.DECIMAL else kind]
    if not lo <= value <= hi:
        raise bad(f"outside [{lo}, {hi}]")
    return value
