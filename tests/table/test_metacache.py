"""The process-wide metadata cache (manifests, ``.index`` containers, deletion vectors): a commit
is seen by the very next query, tables never share entries, and the cache stays in its budget.

Every answer is checked against a plain NumPy model of the live rows and against a read with the
cache off (so a stale entry cannot hide in both sides).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import paimon_index
from paimon_index.errors import InvalidOptionError
from paimon_index.table import metacache
from paimon_index.table.metacache import configure, metadata_cache
from paimon_index.table.read import read_arrow
from paimon_index.table.scan import plan_read

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("status", pa.string()),
                    ("score", pa.int32())])
OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "status",
           "file-index.range-bitmap.columns": "score", "file-index.in-manifest-threshold": "1"}
STATUSES = np.array(["PAID", "OPEN", "CANCELLED"], dtype=object)
WHERES = [None, "status = 'PAID'", "score >= 700", "score BETWEEN 100 AND 300",
          "status = 'OPEN' AND score < 500"]
BUDGET = 64 << 20


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    cache = metadata_cache()
    before = cache.max_bytes
    configure(0)
    configure(BUDGET)
    yield
    configure(0)
    configure(before)


def batch(start: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": np.arange(start, start + n, dtype=np.int64),
                     "status": STATUSES[rng.integers(0, len(STATUSES), n)],
                     "score": rng.integers(0, 1000, n).astype(np.int32)}, schema=SCHEMA)


class Model:
    """The live rows as NumPy arrays."""

    def __init__(self) -> None:
        self.rows = batch(0, 0, 0)

    def add(self, rows: pa.Table) -> None:
        self.rows = pa.concat_tables([self.rows, rows])

    def keep(self, mask: np.ndarray) -> None:
        self.rows = self.rows.filter(pa.array(mask))

    def count(self, where: str | None) -> int:
        status = self.rows.column("status").to_numpy(zero_copy_only=False)
        score = self.rows.column("score").to_numpy()
        masks = {None: np.ones(len(status), dtype=bool), "status = 'PAID'": status == "PAID",
                 "score >= 700": score >= 700, "score BETWEEN 100 AND 300": (score >= 100) & (score <= 300),
                 "status = 'OPEN' AND score < 500": (status == "OPEN") & (score < 500)}
        return int(masks[where].sum())


def check(table: paimon_index.Table, model: Model) -> None:
    """Every query twice (the second one from the cache) equals the model and the uncached read."""
    for where in WHERES:
        expected = model.count(where)
        for _ in range(2):
            assert table.count(where) == expected, where
            plan = plan_read(table.paimon_table, where)
            assert sum(f.live_rows if f.selected is None else len(f.selected) for f in plan.files) >= expected
            assert table.read(where).num_rows == expected, where
    configure(0)
    try:
        for where in WHERES:
            rows, _ = read_arrow(table.paimon_table, where or "id >= 0")
            assert rows.num_rows == model.count(where), where
    finally:
        configure(BUDGET)


def test_every_commit_is_seen_by_the_next_query(tmp_path: Path) -> None:
    table = paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, options=OPTIONS)
    model = Model()
    for start, seed in ((0, 1), (600, 2)):
        rows = batch(start, 600, seed)
        table.write(rows)
        model.add(rows)
    check(table, model)
    assert table.last_aggregate_report.scan.metadata_cache_hits > 0  # the cache is in use

    table.delete("score >= 900")  # deletion vectors
    model.keep(model.rows.column("score").to_numpy() < 900)
    check(table, model)

    table.delete("status = 'PAID' AND score < 100")  # the vectors grow: a new DV index file
    status = model.rows.column("status").to_numpy(zero_copy_only=False)
    model.keep(~((status == "PAID") & (model.rows.column("score").to_numpy() < 100)))
    check(table, model)

    rows = batch(5000, 700, 3)
    table.write(rows, mode="overwrite")
    model.rows = rows
    check(table, model)

    more = batch(9000, 300, 4)
    table.write(more)
    model.add(more)
    table.delete("score < 50")
    model.keep(model.rows.column("score").to_numpy() >= 50)
    table.expire_snapshots(retain_last=1)
    check(table, model)

    # New .index files (new names) for every data file: the next query reads them.
    table.alter_options(set={"file-index.bitmap.columns": "status,score"})
    table.rewrite_file_index()
    check(table, model)


def test_compaction_of_a_primary_key_table_is_seen(tmp_path: Path) -> None:
    table = paimon_index.create_table(str(tmp_path), "db.pk", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "file-index.range-bitmap.columns": "score"})
    latest: dict[int, int] = {}
    for seed in range(3):
        rows = batch(0, 300, seed)
        table.write(rows)
        latest.update(zip(rows.column("id").to_pylist(), rows.column("score").to_pylist(), strict=True))
        table.compact(full=True)
        expected = sum(1 for s in latest.values() if s >= 500)
        for _ in range(2):
            assert table.read("score >= 500").num_rows == expected
            assert table.count("score >= 500") == expected


def test_two_tables_never_share_entries(tmp_path: Path) -> None:
    tables, models = [], []
    for name, seed in (("a", 1), ("b", 2)):
        table = paimon_index.create_table(str(tmp_path / name), "db.t", SCHEMA, options=OPTIONS)
        rows = batch(0, 800, seed)  # same ids and layout, other values
        table.write(rows)
        model = Model()
        model.add(rows)
        tables.append(table)
        models.append(model)
    for _ in range(2):
        for table, model in zip(tables, models, strict=True):
            for where in WHERES:
                assert table.count(where) == model.count(where)
    paths = [str(key[1]) for key in metadata_cache().entry_keys()]
    for name in ("a", "b"):
        assert any(str(tmp_path / name) in p for p in paths)
        assert not any(str(tmp_path / name) in p and str(tmp_path / ("b" if name == "a" else "a")) in p
                       for p in paths)


def test_the_cache_stays_within_its_budget(tmp_path: Path) -> None:
    table = paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, options=OPTIONS)
    model = Model()
    for i in range(4):
        rows = batch(i * 2000, 2000, i)
        table.write(rows)
        model.add(rows)
    budget = 48 << 10
    cache = configure(budget)
    for _ in range(2):
        for where in WHERES:
            assert table.count(where) == model.count(where)
            assert cache.bytes <= budget
    assert cache.evictions > 0
    configure(0)  # off: nothing kept, answers unchanged
    assert len(cache) == 0
    for where in WHERES:
        assert table.count(where) == model.count(where)
    assert len(cache) == 0 and cache.bytes == 0


def test_lru_weights_and_bad_sizes() -> None:
    cache = metacache.MetadataCache(4096)
    cache.put("a", 1, 2048)
    cache.put("b", 2, 2048)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3, 2048)
    assert "b" not in cache and "a" in cache and "c" in cache
    cache.put("huge", 4, 10_000)  # over the whole budget: not kept
    assert "huge" not in cache and cache.bytes <= 4096
    cache.reweigh("a", 4096)  # grew: the others make room
    assert cache.entry_keys() == ["a"] and cache.bytes == 4096
    for bad in (-1, 1.5, "64", True):
        with pytest.raises(InvalidOptionError, match="max_bytes"):
            configure(bad)  # type: ignore[arg-type]


def test_environment_size_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(metacache.MAX_BYTES_ENV, "lots")
    with pytest.raises(InvalidOptionError, match=metacache.MAX_BYTES_ENV):
        metacache._from_environment()
    monkeypatch.setenv(metacache.MAX_BYTES_ENV, "1024")
    assert metacache._from_environment() == 1024


def test_range_bitmap_words_count_in_the_weight(tmp_path: Path) -> None:
    """A range bitmap asked again keeps its slices as words: the entry's weight says so."""
    table = paimon_index.create_table(str(tmp_path), "db.t", SCHEMA, options=OPTIONS)
    rows = batch(0, 5000, 7)
    table.write(rows)
    model = Model()
    model.add(rows)
    for _ in range(3):
        assert table.count("score >= 700") == model.count("score >= 700")
    cache = metadata_cache()
    containers = [key for key in cache.entry_keys() if key[0] == "index"]  # type: ignore[index]
    assert containers
    for key in containers:
        entry = cache.get(key)
        words = sum(getattr(r, "cached_bytes", 0) for r in entry.readers.values() if r is not None)
        assert words > 0
        assert cache._entries[key][1] >= words + 2 * entry.source.kept_bytes



def test_a_reused_index_file_name_is_parsed_afresh(tmp_path: Path) -> None:
    """``.index`` names are not unique for all time (Paimon numbers them after the data file, and a
    name an expiry deleted can be written again). A cached container whose file was replaced under
    the same name must be parsed afresh, not read at the old layout's offsets."""
    rows = batch(0, 20_000, 5)  # a .index file larger than the head a first open reads
    tables = {}
    for name, layout in (("a", {"file-index.bitmap.columns": "score,status"}),
                         ("b", {"file-index.bitmap.columns": "status",
                                "file-index.range-bitmap.columns": "score"})):
        options = {k: v for k, v in OPTIONS.items() if not k.endswith(".columns")} | layout
        tables[name] = paimon_index.create_table(str(tmp_path / name), "db.t", SCHEMA, options=options)
        tables[name].write(rows)  # the same rows: each table's .index describes the other's data too
    model = Model()
    model.add(rows)
    table = tables["a"]
    assert table.count("id >= 100") == 19_900  # no index on id: caches the container's head only

    [target] = (tmp_path / "a").rglob("*.index")
    [other] = (tmp_path / "b").rglob("*.index")
    target.write_bytes(other.read_bytes())  # the same name now holds another layout
    for where in WHERES:
        for _ in range(2):
            assert table.count(where) == model.count(where), where
            assert table.read(where).num_rows == model.count(where), where
