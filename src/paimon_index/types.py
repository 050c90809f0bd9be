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
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_index.errors import InvalidPredicateError, UnsupportedTypeError

__all__ = [
    "CanonicalColumn",
    "DataType",
    "KeyKind",
    "TypeRoot",
    "canonical_column",
    "canonical_literal",
    "from_arrow",
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
    """A Paimon data type (the subset an index can meet)."""

    root: TypeRoot
    length: int | None = None  # CHAR, VARCHAR, BINARY, VARBINARY
    precision: int | None = None  # DECIMAL, TIME, TIMESTAMP, TIMESTAMP_LTZ
    scale: int | None = None  # DECIMAL
    nullable: bool = True

    @property
    def key_kind(self) -> KeyKind:
        return _KEY_KIND[self.root]

    @property
    def is_string(self) -> bool:
        return self.root in (TypeRoot.CHAR, TypeRoot.VARCHAR)

    @property
    def is_timestamp(self) -> bool:
        return self.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ)

    def __str__(self) -> str:
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
        else:
            s = r.value
        return s if self.nullable else f"{s} NOT NULL"


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
# Parsing "id BIGINT, status STRING, ts TIMESTAMP(3)"
# ------------------------------------------------------------------------------------------------
_TYPE_RE = re.compile(
    r"""\s*(?P<name>[A-Za-z_]+(?:\s+PRECISION)?)\s*
        (?:\(\s*(?P<a>\d+)\s*(?:,\s*(?P<b>\d+)\s*)?\))?
        (?P<ltz>\s+WITH\s+LOCAL\s+TIME\s+ZONE)?
        (?P<notnull>\s+NOT\s+NULL)?\s*$""",
    re.IGNORECASE | re.VERBOSE,
)

_SIMPLE = {
    "TINYINT": TypeRoot.TINYINT, "SMALLINT": TypeRoot.SMALLINT, "INT": TypeRoot.INT,
    "INTEGER": TypeRoot.INT, "BIGINT": TypeRoot.BIGINT, "FLOAT": TypeRoot.FLOAT,
    "REAL": TypeRoot.FLOAT, "DOUBLE": TypeRoot.DOUBLE, "DOUBLE PRECISION": TypeRoot.DOUBLE,
    "BOOLEAN": TypeRoot.BOOLEAN, "BOOL": TypeRoot.BOOLEAN, "DATE": TypeRoot.DATE,
}


def parse_type(text: str) -> DataType:
    """Parse one Paimon type as Paimon spells it, e.g. ``DECIMAL(10, 2)`` or ``TIMESTAMP(3)``."""
    m = _TYPE_RE.match(text)
    if not m:
        raise InvalidPredicateError(f"cannot parse data type {text!r}")
    name = " ".join(m["name"].upper().split())
    a = int(m["a"]) if m["a"] is not None else None
    b = int(m["b"]) if m["b"] is not None else None
    nullable = m["notnull"] is None
    ltz = m["ltz"] is not None
    if ltz and name != "TIMESTAMP":
        raise InvalidPredicateError(f"WITH LOCAL TIME ZONE only follows TIMESTAMP in {text!r}")

    def no_args() -> None:
        if a is not None:
            raise InvalidPredicateError(f"type {name} takes no parameters in {text!r}")

    if name in _SIMPLE:
        no_args()
        return DataType(_SIMPLE[name], nullable=nullable)
    if name == "STRING":
        no_args()
        return DataType(TypeRoot.VARCHAR, length=MAX_LENGTH, nullable=nullable)
    if name == "BYTES":
        no_args()
        return DataType(TypeRoot.VARBINARY, length=MAX_LENGTH, nullable=nullable)
    if name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        if b is not None:
            raise InvalidPredicateError(f"type {name} takes one length in {text!r}")
        length = 1 if a is None else a
        if not 1 <= length <= MAX_LENGTH:
            raise InvalidPredicateError(f"length {length} out of range in {text!r}")
        return DataType(TypeRoot[name], length=length, nullable=nullable)
    if name in ("DECIMAL", "DEC", "NUMERIC"):
        precision = 10 if a is None else a
        scale = 0 if b is None else b
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise InvalidPredicateError(f"invalid DECIMAL({precision}, {scale}) in {text!r}")
        return DataType(TypeRoot.DECIMAL, precision=precision, scale=scale, nullable=nullable)
    if name in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
        if b is not None:
            raise InvalidPredicateError(f"type {name} takes one precision in {text!r}")
        default = DEFAULT_TIME_PRECISION if name == "TIME" else DEFAULT_TIMESTAMP_PRECISION
        precision = default if a is None else a
        if not 0 <= precision <= 9:
            raise InvalidPredicateError(f"precision {precision} out of range in {text!r}")
        root = TypeRoot.TIMESTAMP_LTZ if (ltz or name == "TIMESTAMP_LTZ") else TypeRoot[name]
        return DataType(root, precision=precision, nullable=nullable)
    raise UnsupportedTypeError(f"data type {name} is not one an index can handle")


def _split_top_level(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_schema(text: str) -> dict[str, DataType]:
    """Parse ``"name TYPE, name TYPE, ..."`` into an ordered ``{name: DataType}``.

    Names may be back-quoted (```weird name` INT``).
    """
    schema: dict[str, DataType] = {}
    for part in _split_top_level(text):
        part = part.strip()
        if not part:
            raise InvalidPredicateError(f"empty column in schema {text!r}")
        if part.startswith("`"):
            end = part.find("`", 1)
            if end < 0:
                raise InvalidPredicateError(f"unclosed back-quote in schema {text!r}")
            name, rest = part[1:end], part[end + 1 :]
        else:
            pieces = part.split(None, 1)
            if len(pieces) != 2:
                raise InvalidPredicateError(f"column {part!r} needs a name and a type")
            name, rest = pieces
        if name in schema:
            raise InvalidPredicateError(f"column {name!r} declared twice in schema")
        schema[name] = parse_type(rest)
    return schema


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
            scaled = value.scaleb(dtype.scale or 0)
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
