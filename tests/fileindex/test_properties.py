"""Property tests: every Bitmap answer equals brute force; a Bloom filter never wrongly says SKIP.

Random columns of every supported type, with NULLs, duplicates and single-occurrence values, go
through our writer, the container and the evaluator; answers are compared with a plain-Python
oracle that follows Paimon's semantics (the bitmap index's ``<>``/``NOT IN`` include NULL rows, a
NULL literal in ``=``/``IN`` matches the NULL rows; float keys compare by IEEE bits, so NaN = NaN and
-0.0 != 0.0).
"""

from __future__ import annotations

import math
import struct

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from goldens import arrow_column
from paimon_index.fileindex.builder import build_file_index
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader
from paimon_index.fileindex.result import Rows
from paimon_index.predicate import Leaf, Op
from paimon_index.types import DataType, KeyKind, TypeRoot, parse_type

TYPES = ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "BOOLEAN", "STRING", "DATE",
         "TIME(3)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"]
BLOOM_TYPES = [t for t in TYPES if t != "BOOLEAN"] + ["BYTES"]
INT_BOUNDS = {"TINYINT": 7, "SMALLINT": 15, "INT": 31, "DATE": 31, "TIME(3)": 31}
SPECIAL_FLOATS = [math.nan, 0.0, -0.0, math.inf, -math.inf, 1.5, -2.25]


def values_for(type_name: str) -> st.SearchStrategy[object]:
    dtype = parse_type(type_name)
    kind = dtype.key_kind
    if kind is KeyKind.BOOL:
        return st.booleans()
    if kind is KeyKind.BYTES:
        small = st.sampled_from(["", "a", "b", "ab", "é", "😀", "a\x00b", "～"])
        text = st.one_of(small, st.text(max_size=6))
        if dtype.root is TypeRoot.VARBINARY:
            return st.binary(max_size=6)
        return text.map(lambda s: s.encode("utf-8", "surrogatepass"))
    if kind in (KeyKind.FLOAT32, KeyKind.FLOAT64):
        width = 32 if kind is KeyKind.FLOAT32 else 64
        floats = st.floats(width=width, allow_nan=True, allow_infinity=True)
        return st.one_of(st.sampled_from(SPECIAL_FLOATS), floats)
    if dtype.root is TypeRoot.TIME:
        return st.integers(0, 86_399_999)
    bits = INT_BOUNDS.get(type_name, 63)
    lo, hi = -(2**bits), 2**bits - 1
    if dtype.root is TypeRoot.DATE:
        lo, hi = -719_162, 2_932_896  # years 1..9999: what Arrow's date32 round-trips
    return st.one_of(st.integers(-3, 3), st.sampled_from([lo, hi]), st.integers(lo, hi))


@st.composite
def column_and_literals(draw: st.DrawFn, type_name: str) -> tuple[list[object], list[object]]:
    values = values_for(type_name)
    pool = draw(st.lists(values, min_size=1, max_size=8))
    rows = draw(st.lists(st.one_of(st.sampled_from(pool), values, st.none()), max_size=60))
    literals = draw(st.lists(st.one_of(st.sampled_from(pool), values, st.none()), min_size=1, max_size=6))
    return rows, literals


def key_of(value: object, dtype: DataType) -> object:
    """Java's key equality: floats by (canonical-NaN) IEEE bits."""
    if value is None or dtype.key_kind not in (KeyKind.FLOAT32, KeyKind.FLOAT64):
        return value
    assert isinstance(value, float)
    if math.isnan(value):
        return "NaN"
    return struct.pack(">f" if dtype.key_kind is KeyKind.FLOAT32 else ">d", value)


def arrow_of(rows: list[object], dtype: DataType) -> pa.Array:
    if dtype.root is TypeRoot.TIME:
        return pa.array(rows, pa.time32("ms"))
    if dtype.root is TypeRoot.TIMESTAMP_LTZ:
        unit = "ms" if (dtype.precision or 0) <= 3 else "us"
        return pa.array(rows, pa.timestamp(unit, tz="UTC"))
    if dtype.root is TypeRoot.VARBINARY:
        return pa.array(rows, pa.binary())
    return arrow_column(rows, dtype)


def bitmap_oracle(rows: list[object], op: Op, literals: list[object], dtype: DataType) -> set[int]:
    keys = [key_of(v, dtype) for v in rows]
    wanted = {key_of(v, dtype) for v in literals}
    match op:
        case Op.IN:
            return {i for i, k in enumerate(keys) if k in wanted}
        case Op.NOT_IN:
            return {i for i, k in enumerate(keys) if k not in wanted}
        case Op.IS_NULL:
            return {i for i, k in enumerate(keys) if k is None}
        case Op.IS_NOT_NULL:
            return {i for i, k in enumerate(keys) if k is not None}
    raise AssertionError(op)


def container_for(rows: list[object], dtype: DataType, index_type: str, options: dict[str, str]) -> bytes:
    table = pa.table({"c": arrow_of(rows, dtype)})
    opts = {f"file-index.{index_type}.columns": "c"}
    opts.update({f"file-index.{index_type}.c.{k}": v for k, v in options.items()})
    data = build_file_index(table, opts, {"c": dtype})
    assert data is not None
    return data


def rows_of(result: object, n: int) -> set[int]:
    if isinstance(result, Rows):
        return set(result.bitmap)
    assert result is not None
    return set(range(n)) if result.remain else set()  # type: ignore[attr-defined]


BITMAP_CONFIGS = [{}, {"version": "1"}, {"index-block-size": "64b"}]


def _check_bitmap(type_name: str, data: tuple[list[object], list[object]], config: dict[str, str]) -> None:
    rows, literals = data
    dtype = parse_type(type_name)
    with ContainerReader(container_for(rows, dtype, "bitmap", config)) as container:
        evaluator = FileIndexEvaluator(container, {"c": dtype})
        # java_order: the index's own answer with Java's float keys (-0.0 != 0.0); Spark's order
        # widens it, see tests/test_semantics_differential.py.
        cases = [(Op.IN, literals), (Op.NOT_IN, literals), (Op.IS_NULL, []), (Op.IS_NOT_NULL, [])]
        cases += [(Op.IN, [v]) for v in literals] + [(Op.NOT_IN, [v]) for v in literals]
        for op, lits in cases:
            leaf = Leaf(op, "c", tuple(lits))
            got = rows_of(evaluator.evaluate(leaf, java_order=True), len(rows))
            assert got == bitmap_oracle(rows, op, lits, dtype), (op, lits)
        for v in literals:
            eq = rows_of(evaluator.evaluate(Leaf(Op.EQ, "c", (v,)), java_order=True), len(rows))
            ne = rows_of(evaluator.evaluate(Leaf(Op.NE, "c", (v,)), java_order=True), len(rows))
            assert eq == bitmap_oracle(rows, Op.IN, [v], dtype)
            assert ne == set(range(len(rows))) - eq


def _bitmap_test(type_name: str):
    @settings(max_examples=40, deadline=None)
    @given(data=column_and_literals(type_name), config=st.sampled_from(BITMAP_CONFIGS))
    def test(data: tuple[list[object], list[object]], config: dict[str, str]) -> None:
        _check_bitmap(type_name, data, config)

    test.__name__ = f"test_bitmap_matches_brute_force_{type_name}"
    return test


for _t in TYPES:
    _name = "test_bitmap_matches_brute_force_" + "".join(ch if ch.isalnum() else "_" for ch in _t)
    globals()[_name] = _bitmap_test(_t)


def _bloom_test(type_name: str):
    @settings(max_examples=30, deadline=None)
    @given(data=column_and_literals(type_name),
           items=st.sampled_from(["1", "8", "64", "1000"]), fpp=st.sampled_from(["0.5", "0.1", "0.01"]))
    def test(data: tuple[list[object], list[object]], items: str, fpp: str) -> None:
        rows, literals = data
        dtype = parse_type(type_name)
        blob = container_for(rows, dtype, "bloom-filter", {"items": items, "fpp": fpp})
        present = {key_of(v, dtype) for v in rows if v is not None}
        with ContainerReader(blob) as container:
            evaluator = FileIndexEvaluator(container, {"c": dtype})
            for v in [*rows, *literals]:
                result = evaluator.evaluate(Leaf(Op.EQ, "c", (v,)))
                if v is None or key_of(v, dtype) in present:
                    assert result.remain, f"bloom filter wrongly skipped {v!r}"
            in_result = evaluator.evaluate(Leaf(Op.IN, "c", tuple(literals)))
            if any(v is None or key_of(v, dtype) in present for v in literals):
                assert in_result.remain

    return test


for _t in BLOOM_TYPES:
    _name = "test_bloom_never_wrongly_skips_" + "".join(ch if ch.isalnum() else "_" for ch in _t)
    globals()[_name] = _bloom_test(_t)


def test_bloom_filter_skips_absent_values_at_the_configured_rate() -> None:
    """Not only 'maybe': with fpp 0.01 almost every absent value is skipped."""
    import numpy as np

    rng = np.random.default_rng(7)
    present = rng.choice(10**9, size=2000, replace=False)
    table = pa.table({"c": pa.array(present[:1000], pa.int64())})
    blob = build_file_index(table, {"file-index.bloom-filter.columns": "c",
                                    "file-index.bloom-filter.c.items": "1000",
                                    "file-index.bloom-filter.c.fpp": "0.01"})
    assert blob is not None
    dtype = parse_type("BIGINT")
    with ContainerReader(blob) as container:
        evaluator = FileIndexEvaluator(container, {"c": dtype})
        false_positives = sum(evaluator.evaluate(Leaf(Op.EQ, "c", (int(v),))).remain for v in present[1000:])
    assert false_positives < 40  # expected ~10 at fpp 0.01


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=20),
       data=st.lists(st.binary(max_size=80), min_size=1, max_size=20),
       k=st.integers(1, 12), bits=st.integers(8, 10**7))
def test_scalar_and_vector_hashing_agree(keys: list[int], data: list[bytes], k: int, bits: int) -> None:
    """Queries hash one literal with scalar code, builds hash columns with NumPy: same answers."""
    import numpy as np

    from paimon_index.fileindex.bloom_filter import _bit_positions, _probe_positions
    from paimon_index.hashing import long_hash, long_hash_one, xxh64, xxh64_one

    assert long_hash(np.array(keys, dtype=np.int64)).tolist() == [long_hash_one(v) for v in keys]
    hashes = xxh64(pa.array(data, pa.binary()))
    assert hashes.tolist() == [xxh64_one(v) for v in data]
    vector = _bit_positions(hashes, k, bits)
    for j, h in enumerate(hashes.tolist()):
        assert vector[:, j].tolist() == _probe_positions(h, k, bits)


@st.composite
def run_structured_positions(draw: st.DrawFn) -> list[int]:
    """Sets made of runs and gaps, so container kinds (array, run, bitmap) and their ties occur."""
    out: list[int] = []
    position = draw(st.integers(0, 200_000))
    for _ in range(draw(st.integers(1, 30))):
        length = draw(st.one_of(st.integers(1, 4), st.integers(1, 5000)))
        out.extend(range(position, position + length))
        position += length + draw(st.integers(1, 70_000))
    return out


@settings(max_examples=150, deadline=None)
@given(positions=run_structured_positions())
def test_bitmap_bodies_use_javas_container_choices(positions: list[int]) -> None:
    """The bitmap index serializes with pyroaring; Java's runOptimize rule is written out in
    bit_slice.serialize_positions (golden-tested through the range-bitmap). Both must agree."""
    import numpy as np
    from pyroaring import BitMap

    from paimon_index.fileindex.bit_slice import serialize_positions
    from paimon_index.fileindex.bitmap import _serialize

    array = np.array(sorted(set(positions)), dtype=np.uint32)
    assert _serialize(BitMap(array)) == serialize_positions(array)
