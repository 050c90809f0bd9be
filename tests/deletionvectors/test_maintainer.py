"""Per-bucket deletion-vector maintenance with real index files in a temporary directory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pypaimon.deletionvectors.deletion_vector import DeletionVector as PypaimonDeletionVector
from pypaimon.filesystem.local_file_io import LocalFileIO
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.table.row.generic_row import GenericRow
from pypaimon.table.source.deletion_file import DeletionFile

from paimon_index.deletionvectors.index_file import DELETION_VECTORS_INDEX, iter_vectors, local_write
from paimon_index.deletionvectors.maintainer import KIND_ADD, KIND_DELETE, BucketDvMaintainer
from paimon_index.deletionvectors.vector import Bitmap64DeletionVector, BitmapDeletionVector
from paimon_index.errors import CorruptFileError

GOLDEN_DV = Path(__file__).resolve().parents[2].parent / "shared" / "golden" / "dv"
PARTITION = GenericRow(["2024-01-01"], [DataField(0, "dt", AtomicType("STRING"))])
BUCKET = 3


def opener(directory: Path):
    return lambda meta: directory / meta.file_name


def committed(directory: Path, maintainer: BucketDvMaintainer,
              name: str | None = None) -> list[IndexManifestEntry]:
    return maintainer.commit_to(directory, name, write=local_write).entries


def model_of(maintainer: BucketDvMaintainer) -> dict[str, list[int]]:
    return {name: vector.positions().tolist() for name, vector in maintainer.vectors.items()}


def test_first_commit_writes_one_file_and_an_add_entry(tmp_path: Path) -> None:
    maintainer = BucketDvMaintainer(PARTITION, BUCKET)
    assert maintainer.notify_new_deletion("data-1.parquet", 5) is True
    assert maintainer.notify_new_deletion("data-1.parquet", 5) is False
    assert maintainer.notify_new_deletions("data-2.parquet", np.arange(100, 200)) == 100
    commit = maintainer.commit_to(tmp_path, "index-first-0", write=local_write)
    (add,) = commit.entries
    assert (add.kind, add.partition, add.bucket) == (KIND_ADD, PARTITION, BUCKET)
    meta = add.index_file
    assert (meta.index_type, meta.file_name, meta.row_count) == (DELETION_VECTORS_INDEX, "index-first-0", 2)
    path = tmp_path / "index-first-0"
    assert meta.file_size == path.stat().st_size
    assert {s.offset for s in iter_vectors(path)} == {m.offset for m in meta.dv_ranges.values()}
    assert meta.dv_ranges["data-2.parquet"].cardinality == 100
    assert not maintainer.modified and maintainer.prepare_commit().is_empty


def test_restore_change_and_replace(tmp_path: Path) -> None:
    first = BucketDvMaintainer(PARTITION, BUCKET)
    first.notify_new_deletions("a.parquet", [1, 2, 3])
    first.notify_new_deletions("b.parquet", [7])
    entries = committed(tmp_path, first, "index-1-0")

    restored = BucketDvMaintainer.restore(entries, opener(tmp_path))
    assert (restored.partition, restored.bucket) == (PARTITION, BUCKET)
    assert model_of(restored) == {"a.parquet": [1, 2, 3], "b.parquet": [7]}
    assert not restored.modified
    restored.notify_new_deletion("b.parquet", 8)
    assert restored.retain_data_files(["b.parquet", "c.parquet"]) == ["a.parquet"]

    commit = restored.commit_to(tmp_path, "index-2-0", write=local_write)
    assert [e.kind for e in commit.entries] == [KIND_DELETE, KIND_ADD]
    assert commit.deleted[0].index_file == entries[0].index_file
    assert commit.added[0].index_file.file_name == "index-2-0"
    again = BucketDvMaintainer.restore(commit.added, opener(tmp_path))
    assert model_of(again) == {"b.parquet": [7, 8]}
    assert again.index_files == [commit.added[0].index_file]


def test_restore_keeps_only_vectors_of_live_data_files(tmp_path: Path) -> None:
    """A vector of a data file the snapshot no longer holds is dropped on restore and the next
    commit rewrites the index file without it (else Paimon refuses that commit and every later one)."""
    first = BucketDvMaintainer(PARTITION, BUCKET)
    first.notify_new_deletions("gone.parquet", [1, 2])
    first.notify_new_deletions("live.parquet", [4])
    entries = committed(tmp_path, first, "index-1-0")

    restored = BucketDvMaintainer.restore(entries, opener(tmp_path),
                                          live_files=["live.parquet", "new.parquet"])
    assert model_of(restored) == {"live.parquet": [4]}
    assert restored.modified
    commit = restored.commit_to(tmp_path, "index-2-0", write=local_write)
    assert [e.kind for e in commit.entries] == [KIND_DELETE, KIND_ADD]
    assert set(commit.added[0].index_file.dv_ranges) == {"live.parquet"}
    # All live: nothing to rewrite.
    untouched = BucketDvMaintainer.restore(commit.added, opener(tmp_path), live_files=["live.parquet"])
    assert not untouched.modified and untouched.prepare_commit().is_empty


def test_empty_result_removes_the_old_file(tmp_path: Path) -> None:
    maintainer = BucketDvMaintainer(PARTITION, BUCKET)
    maintainer.notify_new_deletion("a.parquet", 0)
    old = committed(tmp_path, maintainer, "index-old-0")
    assert maintainer.remove_deletion_vector_of("a.parquet") is True
    assert maintainer.remove_deletion_vector_of("a.parquet") is False
    before = set(tmp_path.iterdir())
    commit = maintainer.commit_to(tmp_path, write=local_write)
    assert commit.new_file is None and commit.new_file_name is None
    assert [(e.kind, e.index_file) for e in commit.entries] == [(KIND_DELETE, old[0].index_file)]
    assert set(tmp_path.iterdir()) == before
    assert maintainer.index_files == []
    assert BucketDvMaintainer(PARTITION, BUCKET).prepare_commit().entries == []


def test_merge_put_and_kinds(tmp_path: Path) -> None:
    maintainer = BucketDvMaintainer(PARTITION, BUCKET, bitmap64=True)
    maintainer.notify_new_deletion("a.parquet", 2**33)
    assert isinstance(maintainer.deletion_vector_of("a.parquet"), Bitmap64DeletionVector)
    incoming = Bitmap64DeletionVector([1, 2])
    maintainer.merge_new_deletion("a.parquet", incoming)
    assert model_of(maintainer)["a.parquet"] == [1, 2, 2**33]
    assert incoming.positions().tolist() == [1, 2], "the caller's vector is not modified"
    with pytest.raises(TypeError, match="only a BitmapDeletionVector can be merged into one, got Bitmap64"):
        maintainer.merge_new_deletion("a.parquet", BitmapDeletionVector([3]))
    maintainer.merge_new_deletion("a.parquet", BitmapDeletionVector([3]).to_bitmap64())
    assert model_of(maintainer)["a.parquet"] == [1, 2, 3, 2**33]
    maintainer.put_deletion_vector("b.parquet", BitmapDeletionVector([4]))
    entries = committed(tmp_path, maintainer, "index-m-0")
    restored = BucketDvMaintainer.restore(entries, opener(tmp_path), bitmap64=True)
    assert type(restored.deletion_vector_of("b.parquet")) is BitmapDeletionVector
    assert type(restored.deletion_vector_of("a.parquet")) is Bitmap64DeletionVector
    assert restored.deletion_vector_of("missing") is None


def test_restore_checks_entries(tmp_path: Path) -> None:
    maintainer = BucketDvMaintainer(PARTITION, BUCKET)
    maintainer.notify_new_deletion("a.parquet", 1)
    (entry,) = committed(tmp_path, maintainer, "index-r-0")
    hash_entry = IndexManifestEntry(KIND_ADD, PARTITION, BUCKET, IndexFileMeta("HASH", "index-h-0", 4, 1))
    assert model_of(BucketDvMaintainer.restore([hash_entry, entry], opener(tmp_path))) == {"a.parquet": [1]}
    other_bucket = IndexManifestEntry(KIND_ADD, PARTITION, BUCKET + 1, entry.index_file)
    with pytest.raises(ValueError, match="belongs to bucket 4"):
        BucketDvMaintainer.restore([entry, other_bucket], opener(tmp_path))
    with pytest.raises(ValueError, match="partition and bucket are needed"):
        BucketDvMaintainer.restore([hash_entry], opener(tmp_path))
    empty = BucketDvMaintainer.restore([], opener(tmp_path), partition=PARTITION, bucket=0)
    assert empty.vectors == {} and empty.index_files == []
    no_ranges = IndexManifestEntry(KIND_ADD, PARTITION, BUCKET,
                                   IndexFileMeta(DELETION_VECTORS_INDEX, "index-r-0", 31, 1))
    with pytest.raises(ValueError, match="has no ranges"):
        BucketDvMaintainer.restore([no_ranges], opener(tmp_path))
    (tmp_path / "index-r-0").write_bytes(b"\x01garbage")
    with pytest.raises(CorruptFileError, match="index-r-0@"):
        BucketDvMaintainer.restore([entry], opener(tmp_path))


def test_restore_from_java_golden_file(tmp_path: Path) -> None:
    if not GOLDEN_DV.is_dir():
        pytest.skip(f"golden files not found at {GOLDEN_DV}")
    from pypaimon.index.deletion_vector_meta import DeletionVectorMeta

    rows = (GOLDEN_DV / "dv64.manifest.tsv").read_text().split("\n")
    ranges = {n: DeletionVectorMeta(n, int(o), int(ln), int(c))
              for n, o, ln, c in (r.split() for r in rows if r)}
    meta = IndexFileMeta(DELETION_VECTORS_INDEX, "dv64.bin", (GOLDEN_DV / "dv64.bin").stat().st_size,
                         len(ranges), dv_ranges=ranges)
    entry = IndexManifestEntry(KIND_ADD, PARTITION, BUCKET, meta)
    maintainer = BucketDvMaintainer.restore([entry], opener(GOLDEN_DV), bitmap64=True)
    assert maintainer.deletion_vector_of("data-i.parquet").positions().tolist() == [1, 2**32]
    # Rewriting Java's vectors unchanged in the same order gives Java's file back.
    maintainer.put_deletion_vector("data-a.parquet", maintainer.deletion_vector_of("data-a.parquet"))
    commit = maintainer.prepare_commit("index-copy-0")
    assert commit.new_file is not None
    assert commit.new_file.data == (GOLDEN_DV / "dv64.bin").read_bytes()
    assert commit.new_file.ranges == ranges


def test_from_deletion_files_and_pypaimon_reads_our_vectors(tmp_path: Path) -> None:
    maintainer = BucketDvMaintainer(PARTITION, BUCKET)
    maintainer.notify_new_deletions("a.parquet", [0, 5, 9])
    maintainer.notify_new_deletions("b.parquet", np.arange(1000, 70000, 3))
    (entry,) = committed(tmp_path, maintainer, "index-p-0")
    path = str(tmp_path / "index-p-0")
    deletion_files = {name: DeletionFile(path, m.offset, m.length, m.cardinality)
                      for name, m in entry.index_file.dv_ranges.items()}
    loaded = BucketDvMaintainer.from_deletion_files(deletion_files, partition=PARTITION, bucket=BUCKET,
                                                   index_files=[entry.index_file])
    assert model_of(loaded) == model_of(maintainer)
    # pypaimon's own 32-bit reader accepts our frames and lengths.
    file_io = LocalFileIO(str(tmp_path))
    for name, deletion_file in deletion_files.items():
        theirs = PypaimonDeletionVector.read(file_io, deletion_file)
        ours = maintainer.deletion_vector_of(name)
        assert theirs.get_cardinality() == ours.get_cardinality()
        assert all(theirs.is_deleted(p) for p in ours.positions()[:500].tolist())
        assert not theirs.is_deleted(1) and not theirs.is_deleted(69999)
    loaded.notify_new_deletion("a.parquet", 1)
    assert [e.kind for e in loaded.prepare_commit().entries] == [KIND_DELETE, KIND_ADD]


files = st.sampled_from(["f0", "f1", "f2", "f3"])
operations = st.lists(st.one_of(
    st.tuples(st.just("delete"), files, st.lists(st.integers(0, 5000), min_size=1, max_size=20)),
    st.tuples(st.just("remove"), files, st.just([])),
    st.tuples(st.just("commit"), files, st.just([])),
), max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations, st.booleans())
def test_random_operations_survive_commit_and_restore(tmp_path: Path, ops, bitmap64: bool) -> None:
    directory = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
    directory.mkdir()
    maintainer = BucketDvMaintainer(PARTITION, BUCKET, bitmap64=bitmap64)
    model: dict[str, set[int]] = {}
    live: list[IndexManifestEntry] = []
    for op, name, positions in ops:
        if op == "delete":
            maintainer.notify_new_deletions(name, positions)
            model.setdefault(name, set()).update(positions)
        elif op == "remove":
            assert maintainer.remove_deletion_vector_of(name) == (model.pop(name, None) is not None)
        else:
            commit = maintainer.commit_to(directory, write=local_write)
            deleted = {e.index_file.file_name for e in commit.deleted}
            assert deleted == {e.index_file.file_name for e in live} or commit.is_empty
            if not commit.is_empty:
                live = commit.added
            maintainer = BucketDvMaintainer.restore(live, opener(directory), partition=PARTITION,
                                                    bucket=BUCKET, bitmap64=bitmap64)
        assert model_of(maintainer) == {n: sorted(p) for n, p in model.items()}
