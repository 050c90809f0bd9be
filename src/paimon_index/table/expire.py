"""Snapshot expiry moved to :mod:`paimon_index.table.maintenance`; this name stays for old imports."""

from __future__ import annotations

from paimon_index.table.maintenance import ExpireResult, expire_snapshots, referenced_files

__all__ = ["ExpireResult", "expire_snapshots", "referenced_files"]
