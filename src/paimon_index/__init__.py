"""paimon-index: Apache Paimon's index layer in Python, byte-compatible with Paimon (Java)."""

from paimon_index.errors import (
    CorruptFileError,
    InvalidOptionError,
    InvalidPredicateError,
    PaimonIndexError,
    UnsupportedTypeError,
)

__version__ = "0.1.0"

__all__ = [
    "CorruptFileError",
    "InvalidOptionError",
    "InvalidPredicateError",
    "PaimonIndexError",
    "UnsupportedTypeError",
    "__version__",
]
