"""Java hash codes and HashMap iteration order, against a step-by-step HashMap simulation."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_index.javacompat import binary_string_hash, hashmap_order, java_hash_codes, java_string_hash


class SimulatedHashMap:
    """java.util.HashMap's table, buckets as Python lists (no tree bins: reports them instead)."""

    def __init__(self) -> None:
        self.table: list[list[int]] | None = None
        self.size = 0
        self.treeified = False

    def _resize(self) -> None:
        old = self.table
        cap = 16 if old is None else 2 * len(old)
        new: list[list[int]] = [[] for _ in range(cap)]
        for bucket in old or []:
            for h in bucket:  # split keeps the relative order
                new[self.spread(h) & (cap - 1)].append(h)
        self.table = new

    @staticmethod
    def spread(h: int) -> int:
        u = h & 0xFFFFFFFF
        return u ^ (u >> 16)

    def _crowded(self, bucket: list[int], limit: int) -> None:
        if len(bucket) >= limit:
            assert self.table is not None
            if len(self.table) < 64:
                self._resize()
            else:
                self.treeified = True

    def put(self, h: int) -> None:
        if self.table is None:
            self._resize()
        assert self.table is not None
        bucket = self.table[self.spread(h) & (len(self.table) - 1)]
        if h in bucket:
            return
        bucket.append(h)
        self._crowded(bucket, 9)
        self.size += 1
        if self.size > 0.75 * len(self.table):
            self._resize()

    def compute_if_absent(self, h: int) -> None:
        if self.table is None or self.size > 0.75 * len(self.table):
            self._resize()
        assert self.table is not None
        bucket = self.table[self.spread(h) & (len(self.table) - 1)]
        if h in bucket:
            return
        bucket.insert(0, h)
        self._crowded(bucket, 8)
        self.size += 1

    def order(self) -> list[int]:
        return [h for bucket in self.table or [] for h in bucket]


keys = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.integers(0, 40).map(lambda i: i * 16),  # collide in small tables
    st.integers(0, 40).map(lambda i: i * 65536),  # collide until spread mixes them
)


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(keys, max_size=120), compute=st.booleans())
def test_hashmap_order_matches_simulation(calls: list[int], compute: bool) -> None:
    sim = SimulatedHashMap()
    for h in calls:
        sim.compute_if_absent(h) if compute else sim.put(h)
    distinct = list(dict.fromkeys(calls))
    trailing = bool(distinct) and calls.index(distinct[-1]) < len(calls) - 1
    order, exact = hashmap_order(np.array(distinct, dtype=np.int32), compute=compute, trailing_call=trailing)
    assert exact == (not sim.treeified)
    if exact:
        assert [distinct[i] for i in order] == sim.order()


def test_string_hash_code() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_string_hash("polygenelubricants") == -2**31  # a known Integer.MIN_VALUE hash
    assert java_string_hash("😀") == 0xD83D * 31 + 0xDE00


def test_boxed_hash_codes() -> None:
    assert java_hash_codes(np.array([1, -1, 2**40]), "long").tolist() == [1, 0, 256]
    assert java_hash_codes(np.array([True, False]), "boolean").tolist() == [1231, 1237]
    assert java_hash_codes(np.array([1.0]), "float").tolist() == [0x3F800000]
    assert java_hash_codes(np.array([float("nan")]), "double").tolist() == [0x7FF80000]


def test_binary_string_hash() -> None:
    """Paimon's BinaryString hash is MurmurHash3 (seed 42) when the length is a multiple of 4; the
    byte-identical bitmap golden files for strings (tests/fileindex/test_golden.py) pin the rest."""
    assert int(binary_string_hash(pa.array([b""], pa.binary()))[0]) & 0xFFFFFFFF == 0x087FCD5C
    arr = pa.array([b"x" * 7, b"abcde", b"yy"], pa.binary())
    alone = binary_string_hash(pa.array([b"abcde"], pa.binary()))[0]
    assert binary_string_hash(arr)[1] == alone
    assert binary_string_hash(arr.slice(1, 1))[0] == alone
