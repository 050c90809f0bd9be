"""The project's exception hierarchy.

Every error raised on purpose by paimon-index derives from :class:`PaimonIndexError`::

    PaimonIndexError
    ├── CorruptFileError       bytes that do not follow the format (names file, offset, field)
    ├── UnsupportedTypeError   an index asked to handle a data type it cannot
    ├── InvalidOptionError     a malformed or unknown ``file-index.*`` option (also a ValueError)
    │   ├── InvalidIdentifierError  a table name that is not ``database.table`` or could leave the warehouse
    │   └── TableOptionOnWriterError  a table option given to a writer (it belongs to CREATE/ALTER TABLE)
    ├── InvalidPredicateError  a predicate that does not parse or does not fit the schema
    ├── EnvironmentCheckError  the machine lacks something (Java for Spark, an optional package)
    ├── BsiValueError          a value the legacy bsi index cannot store (also a ValueError)
    ├── DeletionVectorTooLargeError  a 64-bit vector whose frame would pass 2 GiB (also a ValueError)
    ├── SchemaEvolutionError   a data file that cannot be read under the current schema
    ├── UnsupportedTableError  a table (or table state) an operation cannot handle exactly
    │   └── UnsupportedChangelogProducerError  a ``changelog-producer`` this writer cannot produce
    ├── SqlError               SQL text the Spark noun cannot run (also a ValueError)
    ├── PrimaryKeyTableError   a primary-key operation the table's state or options do not allow
    │   └── NullKeyError           NULL in a primary-key column (also a DataError)
    ├── TableError             a table-level operation failed (names the table and what)
    │   ├── ConcurrentChangeError  another commit landed after the operation planned; nothing applied
    │   ├── CommitError            the commit failed for another reason; nothing applied
    │   │   └── NoAtomicCreateError    the store cannot create a snapshot file atomically
    │   ├── TableNotFoundError     no such table
    │   ├── TableExistsError       ``create_table`` of a table that exists already
    │   └── DataError              rows that do not fit the table (NULL key, type mismatch)

Every class is defined here and exported from :mod:`paimon_index` (``tests/test_public_surface.py``
checks both), so ``except paimon_index.<Name>`` works whichever module raised it.

A corrupt file is never reported as a raw ``struct.error``, ``IndexError`` or ``ValueError``: the
binary cursor (:mod:`paimon_index.binary`) turns every short read into a :class:`CorruptFileError`
whose message reads ``<file>@<offset>: <field>: <reason>``.
"""

from __future__ import annotations

__all__ = [
    "BsiValueError",
    "CommitError",
    "ConcurrentChangeError",
    "CorruptFileError",
    "DataError",
    "DeletionVectorTooLargeError",
    "EnvironmentCheckError",
    "InvalidIdentifierError",
    "InvalidOptionError",
    "InvalidPredicateError",
    "NoAtomicCreateError",
    "NullKeyError",
    "PaimonIndexError",
    "PrimaryKeyTableError",
    "SchemaEvolutionError",
    "SqlError",
    "TableError",
    "TableExistsError",
    "TableNotFoundError",
    "TableOptionOnWriterError",
    "UnsupportedChangelogProducerError",
    "UnsupportedTableError",
    "UnsupportedTypeError",
]


class PaimonIndexError(Exception):
    """Root of every error paimon-index raises on purpose."""


class CorruptFileError(PaimonIndexError):
    """Bytes that do not follow the format they claim.

    Attributes:
        path: the file (or a label such as ``<bytes>``) the bytes came from.
        offset: absolute byte offset in that file where the problem was found.
        field: the field being read, e.g. ``"bitmap entry 3 offset"``.
        reason: what was wrong.
    """

    def __init__(self, reason: str, *, path: str | None = None, offset: int | None = None,
                 field: str | None = None) -> None:
        self.path = path or "<bytes>"
        self.offset = offset
        self.field = field
        self.reason = reason
        where = self.path if offset is None else f"{self.path}@{offset}"
        what = f"{field}: {reason}" if field else reason
        super().__init__(f"{where}: {what}")


class UnsupportedTypeError(PaimonIndexError, TypeError):
    """An index type cannot handle a column's data type (Paimon refuses it too)."""


class InvalidOptionError(PaimonIndexError, ValueError):
    """A malformed, unknown or inconsistent option."""


class InvalidPredicateError(PaimonIndexError, ValueError):
    """A predicate that cannot be parsed, or whose literal does not fit the column type.

    Attributes:
        position: 0-based character position in the predicate text, when known.
    """

    def __init__(self, message: str, *, position: int | None = None, text: str | None = None):
        self.position = position
        self.text = text
        if position is not None:
            message = f"{message} (at position {position})"
            if text is not None:
                message += f"\n  {text}\n  {' ' * position}^"
        super().__init__(message)


class EnvironmentCheckError(PaimonIndexError, RuntimeError):
    """Something the machine must provide is missing; the message says what to install."""


class BsiValueError(PaimonIndexError, ValueError):
    """A value the BSI format cannot store (``Long.MIN_VALUE``); Paimon's writer fails too."""


class DeletionVectorTooLargeError(PaimonIndexError, ValueError):
    """A 64-bit vector whose frame would pass 2 GiB (Java: "Can't serialize index > 2GB")."""


class SchemaEvolutionError(PaimonIndexError):
    """A data file cannot be read under the current schema (missing schema file, failed cast)."""


class UnsupportedTableError(PaimonIndexError):
    """A table (or a table state) an operation cannot handle exactly yet: a primary-key table
    where an append table is needed, level-0 files a merge-free read cannot read, ..."""


class UnsupportedChangelogProducerError(UnsupportedTableError):
    """A write by key to a table whose ``changelog-producer`` (``input``, ``full-compaction``) this
    writer cannot produce; refused before any file is written (never a changelog silently missing)."""


class PrimaryKeyTableError(PaimonIndexError):
    """A primary-key operation that the table's state or options do not allow."""


class TableError(PaimonIndexError):
    """A table-level operation failed; the message names the table and the operation."""


class ConcurrentChangeError(TableError):
    """Another commit landed between planning an operation and committing it.

    Nothing was applied and the files the operation wrote were deleted; run it again.
    """


class CommitError(TableError):
    """A commit failed for a reason other than a concurrent change; nothing was applied."""


class NoAtomicCreateError(CommitError):
    """The table's store cannot create a file atomically, so a commit could silently lose a race."""


class TableNotFoundError(TableError, LookupError):
    """The table does not exist."""


class TableExistsError(TableError):
    """``create_table`` of a table that exists already."""


class DataError(TableError, ValueError):
    """Rows that do not fit the table: a NULL primary key, a value the column type cannot hold."""


class NullKeyError(PrimaryKeyTableError, DataError):
    """Rows with NULL in a primary-key column (Paimon keys are never NULL)."""


class SqlError(PaimonIndexError, ValueError):
    """SQL text the Spark noun cannot run: a statement it does not support on Paimon tables, a
    procedure or argument it does not know (the message names it and what to use instead)."""


class InvalidIdentifierError(InvalidOptionError):
    """A table identifier that is not ``database.table`` (Paimon's ``Identifier``), or that names a
    path (separators, ``..``, control characters) and could leave the warehouse; nothing was touched.

    Attributes:
        identifier: the text given.
    """

    def __init__(self, message: str, *, identifier: object = None) -> None:
        self.identifier = identifier
        super().__init__(message)


class TableOptionOnWriterError(InvalidOptionError):
    """A table option (``bucket``, ``primary-key``, ``file-index.*`` ...) given to a writer: table
    options belong to the table (``CREATE TABLE ... TBLPROPERTIES`` / ``ALTER TABLE ... SET
    TBLPROPERTIES``), not to one write."""
