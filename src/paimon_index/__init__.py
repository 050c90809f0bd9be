"""paimon-index: Apache Paimon's index layer in Python, byte-compatible with Paimon (Java).

The table API (:mod:`paimon_index.table.api`)::

    table = paimon_index.create_table(warehouse, "db.t", schema, options={...})
    table = paimon_index.open_table(warehouse, "db.t")
    table.write(data); table.read(where="id = 1"); table.delete("id = 1"); ...
"""

from typing import TYPE_CHECKING

from paimon_index.errors import (
    BsiValueError,
    CommitError,
    ConcurrentChangeError,
    CorruptFileError,
    DataError,
    DeletionVectorTooLargeError,
    EnvironmentCheckError,
    InvalidIdentifierError,
    InvalidOptionError,
    InvalidPredicateError,
    NoAtomicCreateError,
    NullKeyError,
    PaimonIndexError,
    PrimaryKeyTableError,
    SchemaEvolutionError,
    SqlError,
    TableError,
    TableExistsError,
    TableNotFoundError,
    TableOptionOnWriterError,
    UnsupportedChangelogProducerError,
    UnsupportedTableError,
    UnsupportedTypeError,
)

if TYPE_CHECKING:  # at run time the table API loads on first use (see __getattr__)
    from paimon_index.table.api import CommitResult, MaintenanceResult, Table, create_table, open_table

__version__ = "0.1.0"

__all__ = [
    "BsiValueError",
    "CommitError",
    "CommitResult",
    "ConcurrentChangeError",
    "CorruptFileError",
    "DataError",
    "DeletionVectorTooLargeError",
    "EnvironmentCheckError",
    "InvalidIdentifierError",
    "InvalidOptionError",
    "InvalidPredicateError",
    "MaintenanceResult",
    "NoAtomicCreateError",
    "NullKeyError",
    "PaimonIndexError",
    "PrimaryKeyTableError",
    "SchemaEvolutionError",
    "SqlError",
    "Table",
    "TableError",
    "TableExistsError",
    "TableNotFoundError",
    "TableOptionOnWriterError",
    "UnsupportedChangelogProducerError",
    "UnsupportedTableError",
    "UnsupportedTypeError",
    "__version__",
    "create_table",
    "open_table",
]


def __getattr__(name: str) -> object:
    # The table API pulls in pyarrow and pypaimon: load it on first use, so the format modules
    # (and the CLI) import without them.
    if name in ("CommitResult", "MaintenanceResult", "Table", "create_table", "open_table"):
        from paimon_index.table import api

        return getattr(api, name)
    raise AttributeError(f"module 'paimon_index' has no attribute {name!r}")
