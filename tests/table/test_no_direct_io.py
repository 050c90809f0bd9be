"""No table path touches files but through the FileIO seam (``table/fileio.py``).

A warehouse may be an object store: ``open()``, ``os.*`` file calls, ``pathlib`` I/O or a path
handed to pyarrow would read the local disk instead (or fail). The modules that work on tables are
parsed (calls only: docstrings and comments may name anything) and every direct file access must
be on the allow-list below, each with its reason. Entries marked TODO are being converted on
another branch; the list may only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

import paimon_index

PACKAGE = Path(paimon_index.__file__).parent
SCANNED = ("table", "spark", "deletionvectors", "bucket", "fileindex")

#: ``os`` functions that touch the file system (``os.path.join`` and friends only build strings).
OS_FILE_CALLS = frozenset({
    "open", "fdopen", "remove", "unlink", "rmdir", "removedirs", "listdir", "scandir", "walk", "stat",
    "lstat", "replace", "rename", "renames", "link", "symlink", "makedirs", "mkdir", "utime", "chmod",
    "truncate",
})
OS_PATH_FILE_CALLS = frozenset({
    "exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime", "getctime", "getatime",
    "samefile", "realpath",
})
#: Direct readers of a local path (pyarrow given a path, the local byte sources).
PATH_READERS = frozenset({"pq.ParquetFile", "pq.read_table", "pq.read_metadata", "pq.read_schema",
                          "FileSource", "open_source", "Path"})

#: (module, call) -> why it may stay.
ALLOWED: dict[tuple[str, str], str] = {
    ("table/fileio.py", "os.makedirs"): "the seam itself: atomic create / hint replace on a local warehouse",
    ("table/fileio.py", "open"): "the seam itself: atomic create / hint replace on a local warehouse",
    ("table/fileio.py", "os.replace"): "the seam itself: a hint replaced whole on a local warehouse",
    ("table/fileio.py", "os.link"): "the seam itself: exclusive snapshot publish on a local warehouse",
    ("table/fileio.py", "os.open"): "the seam itself: exclusive publish without hard links (O_EXCL)",
    ("table/fileio.py", "os.fdopen"): "the seam itself: exclusive publish without hard links (O_EXCL)",
    ("table/fileio.py", "os.unlink"): "the seam itself: the temporary file of a local exclusive publish",
    ("spark/session.py", "os.path.isfile"): "finds the local java binary for Spark, not table data",
    ("spark/planned.py", "os.path.exists"): "the planned read's deletion-vector words: a scratch "
                                            "Parquet file on the driver (local Spark), not table data",
    ("spark/planned.py", "os.replace"): "publishes that scratch file whole (a concurrent read never sees "
                                        "half of it), not table data",
    ("spark/planned.py", "os.path.isdir"): "the scratch directory of those files is still there, not "
                                           "table data",
    ("spark/planned.py", "os.remove"): "a change statement's own scratch file of the rows it read, "
                                       "removed when it ends, not table data",
    ("spark/class_archive.py", "Path"): "the driver JVM's class archive in the user's cache directory "
                                        "and Spark's jars, not table data",
    ("spark/class_archive.py", "os.path.realpath"): "the java binary the archive is keyed on, not table data",
    ("spark/class_archive.py", "os.replace"): "publishes a checked class archive whole, not table data",
    ("spark/class_archive.py", "os.utime"): "marks the class archive a driver maps as used, not table data",
    ("spark/class_archive.py", "os.open"): "the class archive trainer's lock file, not table data",
    ("fileindex/format.py", "open_source"): "a local path (the CLI); tables pass a FileIOSource",
    ("deletionvectors/index_file.py", "open_source"): "a local path (CLI, tests); tables pass a FileIOSource",
    ("deletionvectors/index_file.py", "Path"): "local_write: DV files outside any table (CLI, tests); "
                                                "tables pass their store's writer",
}


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _direct_io(tree: ast.AST) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name is None:
            continue
        parts = name.split(".")
        if (name == "open"
                or (parts[0] == "os" and len(parts) == 2 and parts[1] in OS_FILE_CALLS)
                or (parts[:2] == ["os", "path"] and len(parts) == 3 and parts[2] in OS_PATH_FILE_CALLS)
                or name in PATH_READERS):
            found.append((name, node.lineno))
    return found


def _scan() -> dict[tuple[str, str], list[int]]:
    hits: dict[tuple[str, str], list[int]] = {}
    for directory in SCANNED:
        for path in sorted((PACKAGE / directory).rglob("*.py")):
            module = path.relative_to(PACKAGE).as_posix()
            for name, line in _direct_io(ast.parse(path.read_text(encoding="utf-8"))):
                hits.setdefault((module, name), []).append(line)
    return hits


def test_table_paths_touch_files_only_through_the_seam() -> None:
    hits = _scan()
    unexpected = {f"{module}:{lines} {name}(...)" for (module, name), lines in hits.items()
                  if (module, name) not in ALLOWED}
    assert not unexpected, ("read/write/list/delete through paimon_index.table.fileio.TableIO "
                            f"(the table's FileIO), not directly: {sorted(unexpected)}")


def test_the_allow_list_holds_no_stale_entry() -> None:
    stale = sorted(set(ALLOWED) - set(_scan()))
    assert not stale, f"remove from ALLOWED, these calls are gone: {stale}"


def test_the_scan_finds_what_it_looks_for() -> None:
    source = ("import os\nopen(p)\nos.remove(p)\nos.path.exists(p)\npq.ParquetFile(p)\n"
              "Path(p).write_bytes(b'')\nos.path.join(a, b)\nio.read_bytes(p)\n")
    assert [name for name, _ in _direct_io(ast.parse(source))] == \
        ["open", "os.remove", "os.path.exists", "pq.ParquetFile", "Path"]
