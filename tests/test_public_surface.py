"""The public surface stays small: every exception in one module, exported from the package.

* every exception class paimon-index defines lives in :mod:`paimon_index.errors` and is exported
  from ``paimon_index`` (so ``except paimon_index.X`` works whichever module raised it);
* a verb has two public entry points, :class:`paimon_index.Table` and the Spark layer's one module
  of verbs, :mod:`paimon_index.spark.jobs`, returning the same result types; the old Spark modules
  of verbs and the old-name shims of the table layer are gone.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

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


#: What a user does to a table: each is a ``Table`` method and a :mod:`paimon_index.spark.jobs` function.
VERBS = ("write", "upsert", "delete", "update", "compact", "rewrite_file_index", "expire_snapshots",
         "remove_orphan_files", "count")


@pytest.mark.parametrize("module", ["paimon_index.spark.row_level", "paimon_index.spark.primary_key",
                                    "paimon_index.table.primary_key", "paimon_index.table.expire"])
def test_removed_entry_points_are_not_importable(module: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


def test_jobs_is_the_only_spark_module_of_verbs() -> None:
    others = []
    for path in sorted((PACKAGE / "spark").glob("*.py")):
        if path.name.startswith("_") or path.name == "jobs.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name in VERBS:
                others.append(f"spark/{path.name}: {node.name}")
    assert not others, f"verbs outside paimon_index.spark.jobs: {others}"


def test_table_and_jobs_offer_the_same_verbs_with_the_same_result_types() -> None:
    pytest.importorskip("pyspark")
    from paimon_index.spark import jobs

    for verb in VERBS:
        assert verb in jobs.__all__, verb
        ours = inspect.signature(getattr(paimon_index.Table, verb)).return_annotation
        theirs = inspect.signature(getattr(jobs, verb)).return_annotation
        assert ours == theirs, (verb, ours, theirs)


def test_no_private_name_is_imported_across_modules() -> None:
    """A module uses another's private names only through a public one (the old readers shared
    read.py's _evaluate/_exact_selection/_subtract_deleted, so one planner's fix missed the others).
    A private *module* of a package (spark/_tasks.py) is imported by its own package only."""

    root = Path(paimon_index.__file__).parent
    wrong = []
    for path in root.rglob("*.py"):
        package = ".".join(("paimon_index", *path.relative_to(root).parent.parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("paimon_index"):
                continue
            for alias in node.names:
                if not alias.name.startswith("_"):
                    continue
                if (root / Path(*node.module.split(".")[1:]) / f"{alias.name}.py").exists() \
                        and node.module == package:
                    continue  # a private module imported by its own package
                wrong.append(f"{path.relative_to(root)}: from {node.module} import {alias.name}")
    assert not wrong, wrong
