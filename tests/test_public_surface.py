"""The public surface stays small: every exception in one module, exported from the package.

* every exception class paimon-index defines lives in :mod:`paimon_index.errors` and is exported
  from ``paimon_index`` (so ``except paimon_index.X`` works whichever module raised it);
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import paimon_index
from paimon_index import errors

PACKAGE = Path(paimon_index.__file__).resolve().parent


def _error_classes() -> dict[str, type[BaseException]]:
    return {name: value for name, value in vars(errors).items()
            if inspect.isclass(value) and issubclass(value, BaseException)
            and value.__module__ == errors.__name__}


def test_every_exception_in_errors_is_exported_from_the_package() -> None:
    classes = _error_classes()
    assert "UnsupportedTableError" in classes and "NullKeyError" in classes  # the scan sees them
    assert sorted(classes) == sorted(errors.__all__)
    missing = sorted(set(classes) - set(paimon_index.__all__))
    assert not missing, f"exceptions of paimon_index.errors not in paimon_index.__all__: {missing}"
    for name, cls in classes.items():
        assert getattr(paimon_index, name) is cls


def test_no_exception_class_is_defined_outside_errors() -> None:
    outside = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_") and any(
                    isinstance(base, ast.Name) and (base.id.endswith(("Error", "Exception")))
                    for base in node.bases):
                outside.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert not outside, f"exception classes outside paimon_index/errors.py: {outside}"
