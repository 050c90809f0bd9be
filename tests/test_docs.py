"""The docs cannot drift from the code.

* ``docs/architecture.md`` lists every module under ``src/paimon_index`` exactly once, under one
  layer, and names no module that does not exist;
* every import of the package goes to the importer's own layer (to a module listed before it) or
  to a lower layer, as that page states; pyspark is imported only where the page says;
* every relative link in ``README.md`` and ``docs/*.md`` points to an existing file, and a link's
  ``#anchor`` to a heading of that file.

The page is parsed, not trusted: each layer is a ``### N. title`` heading followed by a code block
whose lines start with a module path (relative to ``src/paimon_index``; ``pkg/`` is the package's
``__init__.py``); indented lines continue the previous entry.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "paimon_index"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
#: Paths starting so are relative to the repository; other module paths to ``src/paimon_index``.
REPO_DIRS = ("src/", "tests/", "docs/", "benchmarks/", "scripts/")
#: Where pyspark may be imported (architecture.md: "Spark only in spark/", the demo, and the
#: optional StructType schema of table/catalog.py).
SPARK_ALLOWED = ("spark/", "demo.py", "table/catalog.py")

_LAYER = re.compile(r"^### (\d+)\. ", re.M)
_MODULE_PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.py)\b")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _entry(path: Path) -> str:
    """A module's name on the page: ``table/api.py``; a package's ``__init__.py`` is ``table/``."""
    rel = path.relative_to(PACKAGE).as_posix()
    if rel.endswith("/__init__.py"):
        return rel[: -len("__init__.py")]
    return rel


def _modules() -> dict[str, Path]:
    return {_entry(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _layers() -> list[tuple[int, list[str]]]:
    """(layer number, module entries in listed order) for every layer section of the page."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    heads = list(_LAYER.finditer(text))
    assert heads, "docs/architecture.md has no '### N. layer' sections"
    layers = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        section = text[head.end():end]
        blocks = re.findall(r"```\n(.*?)```", section, re.S)
        assert len(blocks) == 1, f"layer {head.group(1)}: expected one code block, found {len(blocks)}"
        entries = [line.split()[0] for line in blocks[0].splitlines() if line and not line[0].isspace()]
        layers.append((int(head.group(1)), entries))
    return layers


def _position() -> dict[str, tuple[int, int]]:
    """Module entry -> (layer, index within the layer)."""
    position: dict[str, tuple[int, int]] = {}
    for layer, entries in _layers():
        for index, entry in enumerate(entries):
            assert entry not in position, f"{entry} is listed twice in docs/architecture.md"
            position[entry] = (layer, index)
    return position


def test_every_module_is_listed_under_one_layer() -> None:
    listed = set(_position())
    modules = set(_modules())
    assert not modules - listed, f"modules missing from docs/architecture.md: {sorted(modules - listed)}"
    assert not listed - modules, f"docs/architecture.md lists missing modules: {sorted(listed - modules)}"


def test_every_module_path_the_page_names_exists() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = set(_MODULE_PATH.findall(text))
    assert "table/api.py" in named  # the pattern finds the page's module names
    missing = [name for name in sorted(named)
               if not (ROOT / name if name.startswith(REPO_DIRS) else PACKAGE / name).is_file()]
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def _target(module: str) -> str | None:
    """``paimon_index.a.b`` -> the page entry of that module or package (None: not ours)."""
    parts = module.split(".")
    if parts[0] != "paimon_index":
        return None
    rel = "/".join(parts[1:])
    if not rel:
        return "__init__.py"
    if (PACKAGE / f"{rel}.py").is_file():
        return f"{rel}.py"
    if (PACKAGE / rel / "__init__.py").is_file():
        return f"{rel}/"
    return None


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(page entries of the package modules ``path`` imports, outside top-level packages it imports)."""
    ours: set[str] = set()
    outside: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                outside.add(alias.name.split(".")[0])
                target = _target(alias.name)
                if target:
                    ours.add(target)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            outside.add(node.module.split(".")[0])
            for alias in node.names:  # ``from paimon_index.table import catalog`` imports a module
                target = _target(f"{node.module}.{alias.name}") or _target(node.module)
                if target:
                    ours.add(target)
    return ours, outside


def test_imports_go_to_the_same_or_a_lower_layer() -> None:
    position = _position()
    wrong = []
    for entry, path in _modules().items():
        layer, index = position[entry]
        for target in _imports(path)[0] - {entry}:
            if entry.endswith("/") and target.startswith(entry):
                continue  # a package's __init__ re-exports its own modules
            target_layer, target_index = position[target]
            if (target_layer, target_index) > (layer, index):
                wrong.append(f"{entry} (layer {layer}) imports {target} (layer {target_layer}, listed later)")
    assert not wrong, "imports against docs/architecture.md's layering:\n" + "\n".join(wrong)


def test_pyspark_only_where_the_page_allows() -> None:
    importing = sorted(entry for entry, path in _modules().items() if "pyspark" in _imports(path)[1])
    assert "spark/datasource.py" in importing  # the scan sees Spark's imports at all
    wrong = [entry for entry in importing if not entry.startswith(SPARK_ALLOWED)]
    assert not wrong, f"pyspark imported outside spark/: {wrong} (docs/architecture.md)"


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_point_to_existing_files(doc: Path) -> None:
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for link in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):
            continue  # https:, mailto: ...
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        if not path.exists():
            broken.append(f"{link}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{link}: no heading #{anchor} in {path.name}")
    assert not broken, f"{doc.relative_to(ROOT)}: broken links: {broken}"


def test_links_are_checked_at_all() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/architecture.md" in _LINK.findall(readme)
    assert "spark-versions-and-filter-pushdown" in _anchors(ROOT / "docs" / "semantics.md")
