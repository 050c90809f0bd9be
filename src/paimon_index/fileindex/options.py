"""File-index table options, spelled exactly as Paimon spells them.

    file-index.<type>.columns                 comma list of columns that get a <type> index
    file-index.<type>.<column>.<option>       one option of that index on that column
    file-index.in-manifest-threshold          container size up to which the container is embedded
                                              in the manifest (default 500 bytes)
    file-index.read.enabled                   use file indexes when reading (default true)

``<type>`` is one of the registered index types (``bloom-filter``, ``bitmap``, ``range-bitmap``,
``bsi``). Sizes are Paimon ``MemorySize`` strings: a number with an optional unit ``b``/``bytes``,
``k``/``kb``/``kibibytes``, ``m``/``mb``, ``g``/``gb``, ``t``/``tb`` (powers of 1024), case-insensitive.

As in Paimon, an option for a column that its type's ``columns`` list does not declare is an error.
Unlike Paimon, an unknown index type, an option name the index does not know, and a malformed value
are errors too (Paimon ignores the first two silently, which hides typos). Keys of any other shape
(``file-index.bloom-filter.column``) are ignored when a table is read, as Paimon does, and refused
with the nearest valid key when options are set (``strict=True``, used at CREATE/ALTER).
:func:`check_index_columns` adds what needs the schema: the column exists and the index takes its
type.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from paimon_index.errors import InvalidOptionError, UnsupportedTypeError
from paimon_index.types import MAX_COMPACT_DECIMAL_PRECISION, DataType, TypeRoot

__all__ = [
    "DEFAULT_IN_MANIFEST_THRESHOLD",
    "FileIndexOptions",
    "IndexSpec",
    "check_index_columns",
    "nearest",
    "parse_bool",
    "parse_fraction",
    "parse_int",
    "parse_memory_size",
]

PREFIX = "file-index."
COLUMNS_SUFFIX = ".columns"
IN_MANIFEST_THRESHOLD = "file-index.in-manifest-threshold"
READ_ENABLED = "file-index.read.enabled"
DEFAULT_IN_MANIFEST_THRESHOLD = 500

_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([A-Za-z]*)\s*$")
_MAX_LONG = 2**63 - 1
log = logging.getLogger(__name__)
#: difflib ratio from which a valid key counts as "the one you meant".
NEAREST_CUTOFF = 0.6
#: The shapes of valid keys, listed when no valid key is near a misspelt one.
KEY_SHAPES = (f"{PREFIX}<type>{COLUMNS_SUFFIX}", f"{PREFIX}<type>.<column>.<option>", IN_MANIFEST_THRESHOLD,
              READ_ENABLED)


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``word`` (difflib), or None when none is close."""
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=NEAREST_CUTOFF)
    return found[0] if found else None


def _candidate_keys(declared: Mapping[tuple[str, str], object]) -> list[str]:
    """Every valid ``file-index.*`` key given the declared (column, index type) pairs."""
    from paimon_index.fileindex.registry import INDEX_TYPES, get_index_type

    keys = [IN_MANIFEST_THRESHOLD, READ_ENABLED] + [f"{PREFIX}{t}{COLUMNS_SUFFIX}" for t in INDEX_TYPES]
    for column, index_type in declared:
        keys += [f"{PREFIX}{index_type}.{column}.{option}"
                 for option in get_index_type(index_type).option_validators]
    return keys


def _unknown_key(key: str, candidates: Iterable[str], what: str = "unknown file index option") -> \
        InvalidOptionError:
    guess = nearest(key, candidates)
    hint = f"did you mean {guess!r}?" if guess else f"valid keys are {', '.join(KEY_SHAPES)}"
    return InvalidOptionError(f"{key}: {what}; {hint}")


def parse_memory_size(text: str, key: str = "size") -> int:
    """Bytes of a Paimon ``MemorySize`` string such as ``16kb`` or ``64b``."""
    m = _SIZE_RE.match(text)
    if not m or m[2].lower() not in _UNITS:
        raise InvalidOptionError(f"{key}: cannot parse size {text!r} (e.g. 500b, 16kb, 2mb)")
    value = int(m[1]) * _UNITS[m[2].lower()]
    if value > _MAX_LONG:
        raise InvalidOptionError(f"{key}: size {text!r} does not fit in a long")
    return value


def parse_bool(text: str, key: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise InvalidOptionError(f"{key}: expected true or false, got {text!r}")


def parse_int(text: str, key: str, *, minimum: int = 1, maximum: int = 2**31 - 1) -> int:
    """An integer option in ``[minimum, maximum]`` (Java ``int`` by default)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidOptionError(f"{key}: expected an integer, got {text!r}") from None
    if not minimum <= value <= maximum:
        raise InvalidOptionError(f"{key}: {value} outside [{minimum}, {maximum}]")
    return value


def parse_fraction(text: str, key: str) -> float:
    """A probability strictly between 0 and 1."""
    try:
        value = float(text.strip())
    except ValueError:
        raise InvalidOptionError(f"{key}: expected a number, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise InvalidOptionError(f"{key}: {value} must be strictly between 0 and 1")
    return value


@dataclass(frozen=True)
class IndexSpec:
    """One index to build: a column, an index type and that index's options."""

    column: str
    index_type: str
    #: ``(option, value)`` pairs, sorted (a tuple keeps the spec hashable).
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class FileIndexOptions:
    """The ``file-index.*`` options of a table, parsed and validated."""

    specs: tuple[IndexSpec, ...] = ()
    in_manifest_threshold: int = DEFAULT_IN_MANIFEST_THRESHOLD
    read_enabled: bool = True

    @property
    def empty(self) -> bool:
        return not self.specs

    @classmethod
    def from_table_options(cls, options: Mapping[str, str], *, strict: bool = False) -> FileIndexOptions:
        """Parse a table's options (keys outside ``file-index.`` are ignored).

        Args:
            options: the table's options.
            strict: also refuse ``file-index.*`` keys of no known shape (``file-index.bitmap.colums``),
                naming the nearest valid key. Off for tables read as they are (Paimon ignores such
                keys); on at ``CREATE``/``ALTER`` (:func:`validate_table_options`).

        Raises:
            InvalidOptionError: unknown index type, empty column name, an option for an undeclared
                column, an option name the index does not know, a malformed value, or (strict) an
                unknown key.
        """
        from paimon_index.fileindex.registry import INDEX_TYPES, get_index_type

        def unknown(key: str) -> InvalidOptionError:
            return _unknown_key(key, _candidate_keys(declared))

        declared: dict[tuple[str, str], dict[str, str]] = {}
        for key, value in options.items():
            if not key.startswith(PREFIX) or not key.endswith(COLUMNS_SUFFIX):
                continue
            index_type = key[len(PREFIX) : -len(COLUMNS_SUFFIX)]
            if "." in index_type:
                if strict:
                    raise unknown(key)
                _ignored(unknown(key))
                continue
            if index_type not in INDEX_TYPES:
                raise _unknown_key(key, _candidate_keys({}), f"unknown file index type {index_type!r}")
            get_index_type(index_type)
            for name in str(value).split(","):
                if not name.strip():
                    raise InvalidOptionError(f"{key}: empty column name in {value!r}")
                declared.setdefault((name.strip(), index_type), {})

        threshold = DEFAULT_IN_MANIFEST_THRESHOLD
        read_enabled = True
        for key, value in options.items():
            if not key.startswith(PREFIX) or key.endswith(COLUMNS_SUFFIX):
                continue
            value = str(value)
            if key == IN_MANIFEST_THRESHOLD:
                threshold = parse_memory_size(value, key)
                continue
            if key == READ_ENABLED:
                read_enabled = parse_bool(value, key)
                continue
            parts = key[len(PREFIX) :].split(".")
            if len(parts) != 3:
                if strict:
                    raise unknown(key)
                _ignored(unknown(key))  # Paimon ignores keys of any other shape
                continue
            index_type, column, option = parts
            if strict and index_type not in INDEX_TYPES:
                raise unknown(key)
            index_options = declared.get((column, index_type))
            if index_options is None:
                raise InvalidOptionError(
                    f"{key}: column {column!r} is not declared in "
                    f"'{PREFIX}{index_type}{COLUMNS_SUFFIX}'; declare it before setting its options")
            get_index_type(index_type).validate_option(option, value, key)
            index_options[option] = value

        specs = tuple(IndexSpec(col, t, tuple(sorted(opts.items()))) for (col, t), opts in declared.items())
        return cls(specs, threshold, read_enabled)

    def to_table_options(self) -> dict[str, str]:
        """The equivalent ``file-index.*`` options."""
        out: dict[str, str] = {}
        by_type: dict[str, list[str]] = {}
        for spec in self.specs:
            by_type.setdefault(spec.index_type, []).append(spec.column)
            for k, v in spec.options:
                out[f"{PREFIX}{spec.index_type}.{spec.column}.{k}"] = v
        for t, cols in by_type.items():
            out[f"{PREFIX}{t}{COLUMNS_SUFFIX}"] = ",".join(cols)
        if self.in_manifest_threshold != DEFAULT_IN_MANIFEST_THRESHOLD:
            out[IN_MANIFEST_THRESHOLD] = f"{self.in_manifest_threshold}b"
        if not self.read_enabled:
            out[READ_ENABLED] = "false"
        return out


def _ignored(error: InvalidOptionError) -> None:
    log.warning("ignoring table option (as Paimon does): %s", error)


def check_index_columns(options: FileIndexOptions, columns: Mapping[str, DataType | str]) -> None:
    """Refuse indexes that every write would fail to build: a column the table lacks, or a type the
    index (Paimon's Java index and ours) does not take.

    Args:
        options: the parsed ``file-index.*`` options.
        columns: the table's top-level columns -> type; a ``str`` is a type paimon-index cannot
            represent (``VARIANT``, ``BLOB`` ...), as Paimon spells it.

    Raises:
        InvalidOptionError: naming the ``columns`` key, the column, its type and the index type.
    """
    from paimon_index.fileindex.registry import get_index_type

    for spec in options.specs:
        key = f"{PREFIX}{spec.index_type}{COLUMNS_SUFFIX}"
        column = spec.column
        if column not in columns:
            if "[" in column and column.endswith("]"):
                raise InvalidOptionError(
                    f"{key}: {column!r} is a map-key index ('<map-column>[<key>]'), which paimon-index "
                    f"does not build; index a top-level column instead")
            guess = nearest(column, columns)
            hint = f"did you mean {guess!r}?" if guess else f"columns are {', '.join(columns) or 'none'}"
            raise InvalidOptionError(f"{key}: the table has no column {column!r}; {hint}")
        dtype = columns[column]
        index = f"index type {spec.index_type!r}"
        if isinstance(dtype, str) or dtype.is_nested:
            raise InvalidOptionError(f"{key}: {index} does not support column {column!r} of type {dtype}")
        try:
            get_index_type(spec.index_type).check_type(dtype, column)
        except UnsupportedTypeError as e:
            raise InvalidOptionError(f"{key}: {e}") from e
        if dtype.root is TypeRoot.DECIMAL and (dtype.precision or 0) > MAX_COMPACT_DECIMAL_PRECISION:
            # Java keys decimals by their unscaled long and fails on the first wider value; our
            # writers refuse the type outright, so every write would fail.
            raise InvalidOptionError(
                f"{key}: {index} supports DECIMAL precision up to {MAX_COMPACT_DECIMAL_PRECISION}, "
                f"column {column!r} is {dtype}")
