"""Every path under a directory, to show that a refused operation touched nothing on disk."""

from __future__ import annotations

import os
from pathlib import Path


def tree(root: Path | str) -> set[str]:
    """Every path under ``root`` (relative), directories included."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out
