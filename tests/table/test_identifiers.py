"""Table identifiers are checked before any file is touched (issue 21).

Before: ``create_table(W, "db.../../evil", schema)`` made a table outside the warehouse
(``W/../evil``), ``"db.t/../../y"`` wrote to ``W/y``, and ``"db."`` / ``".t"`` were accepted. Each
bad name must be refused with :class:`InvalidIdentifierError` naming it, and the directory tree
around the warehouse must be exactly as it was (nothing created, not even the warehouse).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import paimon_index
from filetree import tree
from paimon_index import InvalidIdentifierError, InvalidOptionError
from paimon_index.table.catalog import TableIdentifier, alter_table_options, parse_identifier

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])

#: name -> what the message must say (the identifier itself is always named).
BAD = {
    "db.../../evil": "path separator '/'",
    "db.t/../../y": "path separator '/'",
    "../evil.t": "path separator '/'",
    "db.t\\..\\y": "path separator '\\\\'",
    "db..t": "'..'",
    "..": "'..'",
    "db.": "empty table name",
    ".t": "empty database name",
    "db. ": "empty table name",
    "db": "no database part",
    "": "empty identifier",
    "a.b.c": "3 parts",
    "db.t\x00x": "control character '\\x00'",
    "db.t\nx": "control character '\\n'",
    "db.t\x7f": "control character",
    "db. t": "starts or ends with blanks",
    "`db.t`": "cannot contain '.'",
    "d`b`.t": "back-quoted",
    "`db`.`t": "unclosed back-quote",
    "db.t$": "empty name around '$'",
    "db.$snapshots": "empty name around '$'",
    "db.t$a$b": "one '$'",
    "d$b.t": "contains '$'",
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_names_are_refused_with_what_is_wrong(name: str) -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        parse_identifier(name)
    message = str(info.value)
    assert BAD[name] in message, message
    assert repr(name) in message  # names the identifier as given
    assert info.value.identifier == name
    assert isinstance(info.value, InvalidOptionError)  # what create_table raised for 'db' before


@pytest.mark.parametrize("name", list(BAD))
def test_create_open_and_alter_touch_nothing_for_a_bad_name(tmp_path: Path, name: str) -> None:
    warehouse = tmp_path / "sub" / "warehouse"
    before = tree(tmp_path)
    with pytest.raises(InvalidIdentifierError):
        paimon_index.create_table(str(warehouse), name, SCHEMA)
    with pytest.raises(InvalidIdentifierError):
        paimon_index.open_table(str(warehouse), name)
    with pytest.raises(InvalidIdentifierError):
        alter_table_options(str(warehouse), name, set_options={"bucket-key": "id"})
    assert tree(tmp_path) == before


def test_the_reported_escapes_land_nowhere(tmp_path: Path) -> None:
    """The issue's two escapes: no ``evil`` next to the warehouse, no ``y`` inside it."""
    warehouse = tmp_path / "w"
    paimon_index.create_table(str(warehouse), "db.t", SCHEMA)
    before = tree(tmp_path)
    for name in ("db.../../evil", "db.t/../../y"):
        with pytest.raises(InvalidIdentifierError):
            paimon_index.create_table(str(warehouse), name, SCHEMA)
    assert tree(tmp_path) == before
    assert not (tmp_path / "evil").exists() and not (warehouse / "y").exists()


@pytest.mark.parametrize(("text", "expected"), [
    ("db.t", TableIdentifier("db", "t")),
    ("`db`.`t`", TableIdentifier("db", "t")),
    ("DB.T1", TableIdentifier("DB", "T1")),
    ("db.t$snapshots", TableIdentifier("db", "t", None, "snapshots")),
    ("db.t$branch_b1", TableIdentifier("db", "t", "b1")),
    ("db.t$branch_b1$files", TableIdentifier("db", "t", "b1", "files")),
    ("db.my table", TableIdentifier("db", "my table")),
])
def test_good_names_parse_as_paimon_identifier_does(text: str, expected: TableIdentifier) -> None:
    parsed = parse_identifier(text)
    assert parsed == expected
    assert parse_identifier(parsed.full_name) == parsed  # round trip


def test_system_tables_are_readable_and_never_written(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "w")
    table = paimon_index.create_table(warehouse, "db.t", SCHEMA)
    table.write(pa.table({"id": [1, 2], "s": ["a", "b"]}))
    assert parse_identifier("db.t$snapshots").is_system_table
    snapshots = paimon_index.open_table(warehouse, "db.t$snapshots")  # readable: it opens
    before = tree(tmp_path)
    for name, what in [("db.t$snapshots", "system table"), ("db.t$branch_b", "branch"),
                       ("sys.t", "system database")]:
        with pytest.raises(InvalidIdentifierError, match=what):
            parse_identifier(name, for_write=True)
        with pytest.raises(InvalidIdentifierError, match=what):
            paimon_index.create_table(warehouse, name, SCHEMA)
        with pytest.raises(InvalidIdentifierError, match=what):
            alter_table_options(warehouse, name, set_options={"bucket-key": "id"})
    with pytest.raises(InvalidIdentifierError, match="system table"):
        snapshots.write(pa.table({"id": [3], "s": ["c"]}))
    with pytest.raises(InvalidIdentifierError, match="system table"):
        snapshots.delete("id = 1")
    assert tree(tmp_path) == before
    assert paimon_index.open_table(warehouse, "db.t").count() == 2


def test_missing_table_names_it_and_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(paimon_index.TableNotFoundError) as info:
        paimon_index.open_table(str(tmp_path), "db.nope")
    message = str(info.value)
    assert "CREATE TABLE db.nope" in message and "paimon_index.create_table" in message
    assert len(message) < 400
