"""Compatibility name for :mod:`paimon_index.table.pk` (deletion-vectors mode for primary-key
tables), kept so existing callers work; new code imports from ``paimon_index.table.pk``."""

from paimon_index.table.pk import *  # noqa: F403
from paimon_index.table.pk import __all__ as __all__
