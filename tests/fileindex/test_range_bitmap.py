"""Range-bitmap index: Java's golden files both ways, a brute-force oracle, corrupt input.

* Reader: on Java's ``index.bin`` every golden predicate gets Java's answer (an ``ERROR`` answer
  must be REMAIN or one of our errors).
* Writer: on the golden values our bytes equal Java's ``index.raw`` and ``index.bin``.
* Properties: random columns of every supported type (NULLs, duplicates, extremes, NaN and ±0.0,
  empty and non-ASCII strings), random chunk sizes and predicates: the answer is exactly the rows
  a plain-Python oracle with Java's ordering and NULL semantics selects.
* Corrupt input: truncated and bit-flipped bodies and containers raise project errors only.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from goldens import (
    GOLDEN,
    answer_of,
    case_names,
    golden_dir,
    golden_type,
    java_answer,
    load_case,
    parse_key,
    predicate_from_fields,
)
from mutations import check_golden_corruption, exercise, queries_for
from paimon_index.binary import ByteReader, BytesSource
from paimon_index.errors import (
    CorruptFileError,
    InvalidOptionError,
    PaimonIndexError,
    UnsupportedTypeError,
)
from paimon_index.fileindex import bit_slice, range_bitmap, range_bitmap_dictionary
from paimon_index.fileindex.bit_slice import serialize_positions
from paimon_index.fileindex.builder import build_index_bodies
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.fileindex.range_bitmap import RangeBitmapIndex, RangeBitmapReader
from paimon_index.fileindex.registry import get_index_type
from paimon_index.fileindex.result import REMAIN, Rows
from paimon_index.predicate import Leaf, Op, Predicate, and_, or_
from paimon_index.types import CanonicalColumn, DataType, KeyKind, parse_type

INDEX = "range-bitmap"
CASES = case_names(INDEX)
needs_golden = pytest.mark.skipif(not CASES, reason=f"golden files not found at {GOLDEN}")


# ------------------------------------------------------------------------------------------------
# Helpers shared by the tests below
# ------------------------------------------------------------------------------------------------
def _agrees(java: str, ours: str) -> bool:
    if java.startswith("ERROR"):
        return ours == "REMAIN" or ours.startswith("ERROR")
    return java == ours


def _answer(evaluate: Callable[[], object]) -> str:
    try:
        return answer_of(evaluate())  # type: ignore[arg-type]
    except PaimonIndexError as e:
        return f"ERROR {e}"


def _table_options(index_type: str, options: dict[str, str], column: str = "c") -> dict[str, str]:
    out = {f"file-index.{index_type}.columns": column}
    out.update({f"file-index.{index_type}.{column}.{k}": v for k, v in options.items()})
    return out


def canonical(dtype: DataType, values: list[object]) -> CanonicalColumn:
    """A canonical column straight from canonical keys (``None`` = NULL)."""
    valid = np.array([v is not None for v in values], dtype=bool)
    kind = dtype.key_kind
    if kind is KeyKind.BYTES:
        return CanonicalColumn(dtype, pa.array(values, pa.binary()), valid)
    if kind is KeyKind.FLOAT32:
        arr = np.array([0.0 if v is None else v for v in values], dtype=np.float32)
    elif kind is KeyKind.FLOAT64:
        arr = np.array([0.0 if v is None else v for v in values], dtype=np.float64)
    elif kind is KeyKind.BOOL:
        arr = np.array([bool(v) for v in values], dtype=bool)
    else:
        arr = np.array([0 if v is None else v for v in values], dtype=np.int64)
    return CanonicalColumn(dtype, arr, valid)


def java_order(value: object) -> object:
    """A sort key with Java's comparator: ``Float.compare`` for floats (NaN largest and equal to
    itself, -0.0 < 0.0), unsigned bytes for strings, false < true."""
    if isinstance(value, float):
        if math.isnan(value):
            return (1, 0.0, True)
        return (0, value, math.copysign(1.0, value) > 0)
    if isinstance(value, bool):
        return int(value)
    return value


class Oracle:
    """Brute-force answers with range-bitmap semantics: NULL rows never match a comparison."""

    def __init__(self, values: list[object]) -> None:
        self.values = values
        self.keys = [None if v is None else java_order(v) for v in values]

    def rows(self, test: Callable[[object], bool]) -> str:
        hits = [i for i, k in enumerate(self.keys) if k is not None and test(k)]
        return "ROWS " + ",".join(map(str, hits)) if hits else "EMPTY"

    def answer(self, op: Op, literals: tuple[object, ...]) -> str:
        lits = [java_order(v) for v in literals]
        if op is Op.IS_NULL:
            hits = [i for i, k in enumerate(self.keys) if k is None]
            return "ROWS " + ",".join(map(str, hits)) if hits else "EMPTY"
        tests: dict[Op, Callable[[object], bool]] = {
            Op.IS_NOT_NULL: lambda k: True,
            Op.EQ: lambda k: k == lits[0],
            Op.NE: lambda k: k != lits[0],
            Op.LT: lambda k: k < lits[0],  # type: ignore[operator]
            Op.LE: lambda k: k <= lits[0],  # type: ignore[operator]
            Op.GT: lambda k: k > lits[0],  # type: ignore[operator]
            Op.GE: lambda k: k >= lits[0],  # type: ignore[operator]
            Op.IN: lambda k: k in lits,
            Op.NOT_IN: lambda k: k not in lits,
            Op.BETWEEN: lambda k: lits[0] <= k <= lits[1],  # type: ignore[operator]
        }
        return self.rows(tests[op])


def build_body(dtype: DataType, values: list[object], options: dict[str, str] | None = None,
               index: str = INDEX) -> bytes:
    return get_index_type(index).create_writer(dtype, options or {}).build(canonical(dtype, values))


def evaluator_for(dtype: DataType, body: bytes, index: str = INDEX) -> FileIndexEvaluator:
    return FileIndexEvaluator(ContainerReader(write_container({"c": {index: body}}), "t.index"),
                              {"c": dtype})


# ------------------------------------------------------------------------------------------------
# Golden files
# ------------------------------------------------------------------------------------------------
@needs_golden
@pytest.mark.parametrize("name", CASES)
def test_reader_gives_java_answers(name: str) -> None:
    case = load_case(name)
    expectations = case.expectations()
    assert expectations, "a golden case without predicates tests nothing"
    with ContainerReader(case.path / "index.bin") as container:
        evaluator = FileIndexEvaluator(container, {"c": case.dtype})
        mismatches = []
        for text, predicate, java in expectations:
            ours = _answer(lambda p=predicate: evaluator.evaluate(p, java_order=True))
            if not _agrees(java, ours):
                mismatches.append(f"{text}: java {java[:70]} ours {ours[:70]}")
    assert not mismatches, "\n".join(mismatches)


@needs_golden
@pytest.mark.parametrize("name", CASES)
def test_writer_gives_java_bytes(name: str) -> None:
    case = load_case(name)
    table = pa.table({"c": case.arrow()})
    bodies = build_index_bodies(table, _table_options(INDEX, case.options), {"c": case.dtype})
    assert bodies["c"][INDEX] == (case.path / "index.raw").read_bytes()
    assert write_container(bodies) == (case.path / "index.bin").read_bytes()


def _mixed() -> tuple[dict[str, DataType], list[str]]:
    root = golden_dir() / "fileindex-multi" / "mixed"
    tokens = (root / "eval_columns.txt").read_text().split()
    schema = {n: golden_type(t) for n, t in (tok.split(":") for tok in tokens if tok != "--col")}
    return schema, (root / "expected.tsv").read_text(encoding="utf-8").splitlines()


@needs_golden
def test_mixed_container_range_bitmap_and_bsi_columns() -> None:
    """Leaves on ``c`` (bitmap + bloom + range-bitmap) and ``b`` (bsi), alone and combined with
    AND/OR across columns and index types, give Java's answers."""
    schema, lines = _mixed()
    root = golden_dir() / "fileindex-multi" / "mixed"
    checked = 0
    with ContainerReader(root / "index.bin") as container:
        evaluator = FileIndexEvaluator(container, schema)
        for line in lines:
            fields = line.split("\t")
            columns = {f.split(".")[0] for f in fields[:-1] if "." in f}
            if not columns & {"b", "c"}:
                continue
            predicate = predicate_from_fields(fields[:-1], schema)
            assert _agrees(java_answer(fields[-1]), answer_of(evaluator.evaluate(predicate))), line
            checked += 1
    assert checked >= 12


@needs_golden
def test_mixed_container_bodies_are_ours() -> None:
    """Our writers reproduce the mixed container's range-bitmap (c) and bsi (b) bodies."""
    schema, _ = _mixed()
    root = golden_dir() / "fileindex-multi" / "mixed"
    with ContainerReader(root / "index.bin") as container:
        java = container.read_all()
    for column, index in (("c", "range-bitmap"), ("b", "bsi")):
        lines = (root / f"{column}.txt").read_text(encoding="utf-8").splitlines()
        values = [parse_key(t, schema[column]) for t in lines]
        assert build_body(schema[column], values, index=index) == java[column][index]


# ------------------------------------------------------------------------------------------------
# Documented constants and options
# ------------------------------------------------------------------------------------------------
def test_documented_constants() -> None:
    assert range_bitmap.HEADER_FIXED_BYTES == 13 and range_bitmap.VERSION == 1
    assert "i32 = 13 + bytes of min + bytes of max" in (range_bitmap.__doc__ or "")
    assert range_bitmap_dictionary.DICTIONARY_HEADER_BYTES == 13
    assert "i32 = 13" in (range_bitmap_dictionary.__doc__ or "")
    assert range_bitmap_dictionary.FIXED_CHUNK_HEADER_BYTES == 21
    assert bit_slice.BSI_FIXED_HEADER_BYTES == 10 and bit_slice.BSI_INDEX_ENTRY_BYTES == 8
    assert "i32 = 10 + 8 * slices" in (bit_slice.__doc__ or "")
    assert (bit_slice.SERIAL_COOKIE_NO_RUN, bit_slice.SERIAL_COOKIE) == (12346, 12347)
    assert "cookie = 12346" in (bit_slice.__doc__ or "") and "12347" in (bit_slice.__doc__ or "")
    codec = range_bitmap_dictionary.codec_for
    assert codec(parse_type("INT")).default_chunk_size == 16 * 1024
    for t in ("TINYINT", "SMALLINT", "BOOLEAN"):
        assert codec(parse_type(t)).default_chunk_size == 0
    assert serialize_positions(np.zeros(0, np.int64)) == bytes.fromhex("3a30000000000000")


def test_options_and_types() -> None:
    RangeBitmapIndex.validate_option("chunk-size", "64b", "k")
    with pytest.raises(InvalidOptionError):
        RangeBitmapIndex.validate_option("chunk-size", "lots", "k")
    with pytest.raises(InvalidOptionError, match="exceeds"):
        RangeBitmapIndex.validate_option("chunk-size", "4gb", "k")
    with pytest.raises(InvalidOptionError):
        RangeBitmapIndex.validate_option("block-size", "1kb", "k")
    for bad in ("BYTES", "BINARY(3)", "TIMESTAMP(9)", "DECIMAL(20, 2)"):
        with pytest.raises(UnsupportedTypeError):
            RangeBitmapIndex.create_writer(parse_type(bad), {})
    for good in ("TIMESTAMP(6)", "DECIMAL(18, 4)", "CHAR(3)", "TIME", "TIMESTAMP(3) WITH LOCAL TIME ZONE"):
        RangeBitmapIndex.create_writer(parse_type(good), {})


def test_null_literal_answers_remain_or_empty() -> None:
    """Java throws on a NULL literal (we answer REMAIN) unless the column holds no value."""
    dtype = parse_type("INT")
    ev = evaluator_for(dtype, build_body(dtype, [1, None, 2]))
    for leaf in (Leaf(Op.EQ, "c", (None,)), Leaf(Op.LT, "c", (None,)),
                 Leaf(Op.IN, "c", (1, None)), Leaf(Op.BETWEEN, "c", (None, 3))):
        assert ev.evaluate(leaf) is REMAIN
    empty = evaluator_for(dtype, build_body(dtype, [None, None]))
    assert answer_of(empty.evaluate(Leaf(Op.EQ, "c", (None,)))) == "EMPTY"
    assert answer_of(empty.evaluate(Leaf(Op.IS_NULL, "c"))) == "ROWS 0,1"


def test_reader_is_lazy() -> None:
    """A point lookup reads a few chunk headers and one chunk's keys; ``>`` reads only the
    slices above the literal code's run of trailing ones."""
    dtype = parse_type("BIGINT")
    keys = np.arange(20_000, dtype=np.int64) * 3
    body = range_bitmap.RangeBitmapWriter(dtype, {}).build(
        CanonicalColumn(dtype, keys, np.ones(keys.size, dtype=bool)))
    reader = RangeBitmapReader(dtype, BytesSource(body), 0, len(body))
    assert reader._header is None
    assert answer_of(reader.visit_eq(3 * 12_345)) == "ROWS 12345"
    chunks = reader.dictionary._chunks
    assert reader.dictionary.chunk_count == 10
    assert sum(c is not None for c in chunks) <= 5
    assert sum(c is not None and c.ordered is not None for c in chunks) == 1
    reader = RangeBitmapReader(dtype, BytesSource(body), 0, len(body))
    code = 0b111  # the literal 21 has code 7: slices 0..2 are not needed for "> 21"
    assert len(reader.gt(3 * code)) == 20_000 - code - 1
    assert reader.bsi._slices[:3] == [None, None, None]
    assert all(s is not None for s in reader.bsi._slices[3:])
    # asked again (a cached reader), the slices are used as 64-bit words: the same ones
    assert len(reader.gt(3 * code)) == 20_000 - code - 1
    assert [s is None for s in reader.bsi._dense[:3]] == [True, True, True]
    assert all(s is not None for s in reader.bsi._dense[3:])


def test_describe() -> None:
    dtype = parse_type("STRING")
    body = build_body(dtype, [b"b", None, "é".encode(), b"a"], {"chunk-size": "0b"})
    reader = RangeBitmapReader(dtype, BytesSource(body), 0, len(body))
    info = reader.describe()
    assert info["rows"] == 4 and info["cardinality"] == 3 and info["nulls"] == 1
    assert (info["min"], info["max"]) == ("a", "é")
    assert info["dictionary_chunks"] == 3 and info["slices"] == 2


# ------------------------------------------------------------------------------------------------
# Roaring bytes as Java writes them
# ------------------------------------------------------------------------------------------------
def test_roaring_containers_follow_java_run_optimize() -> None:
    # {1,2,3}: as runs 6 bytes, as an array 6 bytes: Java keeps the array (CRoaring would not).
    assert serialize_positions(np.array([1, 2, 3])) == bytes.fromhex(
        "3a3000000100000000000200100000000100020003 00".replace(" ", ""))
    # {1..4}: runs (6 bytes) beat the array (8 bytes).
    assert serialize_positions(np.arange(1, 5))[:4] == bytes.fromhex("3b300000")


@given(st.lists(st.integers(0, 300_000), max_size=300), st.integers(0, 3))
@settings(max_examples=60, deadline=None)
def test_roaring_round_trip(positions: list[int], shape: int) -> None:
    if shape == 1:  # long runs
        positions = [p for q in positions[:20] for p in range(q, q + 700)]
    elif shape == 2:  # a dense container
        positions = positions + list(range(70_000, 76_000))
    pos = np.unique(np.array(positions, dtype=np.int64))
    data = serialize_positions(pos)
    assert BitMap.deserialize(data) == BitMap(pos.tolist())
    cursor = ByteReader(BytesSource(b"head" + data + b"tail"), 4)
    assert list(bit_slice.read_portable(cursor, "b")) == pos.tolist()
    assert cursor.remaining == 4


# ------------------------------------------------------------------------------------------------
# Properties against the oracle
# ------------------------------------------------------------------------------------------------
F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).smallest_subnormal)

TYPE_VALUES: dict[str, st.SearchStrategy[object]] = {
    "TINYINT": st.integers(-128, 127),
    "SMALLINT": st.integers(-(2**15), 2**15 - 1),
    "INT": st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([-(2**31), 2**31 - 1, 0])),
    "BIGINT": st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([-(2**63), 2**63 - 1])),
    "DATE": st.integers(-800_000, 3_000_000),
    "TIME": st.integers(0, 86_399_999),
    "TIMESTAMP(3)": st.integers(-(2**62), 2**62),
    "TIMESTAMP(6) WITH LOCAL TIME ZONE": st.integers(-(2**62), 2**62),
    "DECIMAL(10, 2)": st.integers(-(10**10) + 1, 10**10 - 1),
    "FLOAT": st.one_of(
        st.floats(width=32),
        st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, F32_MAX, -F32_MAX, F32_TINY])),
    "DOUBLE": st.one_of(st.floats(), st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf,
                                                      5e-324, -1.7976931348623157e308])),
    "BOOLEAN": st.booleans(),
    "STRING": st.one_of(st.text(max_size=6), st.sampled_from(["", "a", "é", "日本", "😀", "\x00",
                                                               "a\x00", "～", "A", "ab"])).map(
        lambda s: s.encode("utf-8")),
    "CHAR(4)": st.text(alphabet="ab\xe9", max_size=4).map(lambda s: s.encode("utf-8")),
}
OPS = [Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN, Op.BETWEEN, Op.IS_NULL,
       Op.IS_NOT_NULL]
CHUNK_SIZES = [None, "0b", "1b", "5b", "9b", "16b", "64b", "16kb"]


@st.composite
def column_and_queries(draw: st.DrawFn, type_name: str) -> tuple[list[object], list[Leaf], dict]:
    values_st = TYPE_VALUES[type_name]
    pool = draw(st.lists(values_st, min_size=1, max_size=10))
    rows = draw(st.lists(st.one_of(st.none(), st.sampled_from(pool)), max_size=70))
    literal = st.one_of(st.sampled_from(pool), values_st)
    leaves = []
    for _ in range(12):
        op = draw(st.sampled_from(OPS))
        if op in (Op.IS_NULL, Op.IS_NOT_NULL):
            leaves.append(Leaf(op, "c"))
        elif op in (Op.IN, Op.NOT_IN):
            leaves.append(Leaf(op, "c", tuple(draw(st.lists(literal, max_size=4)))))
        elif op is Op.BETWEEN:
            leaves.append(Leaf(op, "c", (draw(literal), draw(literal))))
        else:
            leaves.append(Leaf(op, "c", (draw(literal),)))
    chunk = draw(st.sampled_from(CHUNK_SIZES))
    return rows, leaves, ({} if chunk is None else {"chunk-size": chunk})


def _as_float32(values: list[object]) -> list[object]:
    return [None if v is None else float(np.float32(v)) for v in values]  # type: ignore[arg-type]


@pytest.mark.parametrize("type_name", list(TYPE_VALUES))
def test_answers_equal_brute_force(type_name: str) -> None:
    dtype = parse_type(type_name)

    @given(column_and_queries(type_name))
    @settings(max_examples=35, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(data: tuple[list[object], list[Leaf], dict]) -> None:
        rows, leaves, options = data
        if dtype.key_kind is KeyKind.FLOAT32:
            rows = _as_float32(rows)
            leaves = [Leaf(leaf.op, "c", tuple(_as_float32(list(leaf.literals))))
                      for leaf in leaves]
        ev = evaluator_for(dtype, build_body(dtype, rows, options))
        oracle = Oracle(rows)
        for leaf in leaves:
            ours = ev.evaluate(leaf, java_order=True)  # Java's float order, as the oracle's
            assert isinstance(ours, Rows) or not ours.remain, leaf
            assert answer_of(ours) == oracle.answer(leaf.op, leaf.literals), (leaf, rows)

    check()


def test_large_columns_match_numpy() -> None:
    """Many rows: bitmap, run and array containers, several dictionary chunks."""
    rng = np.random.default_rng(7)
    n = 150_000
    cases = {
        "INT": rng.integers(0, 5_000, n),
        "BIGINT": np.sort(rng.integers(-(2**40), 2**40, n)),  # sorted: long runs per slice
        "DOUBLE": np.round(rng.normal(size=n), 2) + 0.0,  # + 0.0: no -0.0 (NumPy's < ignores it)
    }
    for type_name, values in cases.items():
        dtype = parse_type(type_name)
        valid = rng.random(n) > 0.1
        column = CanonicalColumn(dtype, values, valid)
        body = get_index_type(INDEX).create_writer(dtype, {}).build(column)
        ev = evaluator_for(dtype, body)
        live = np.flatnonzero(valid)
        for q in np.quantile(values[valid], [0.0, 0.13, 0.5, 1.0]).tolist():
            lit = q if type_name == "DOUBLE" else int(q)
            for op, fn in ((Op.LT, np.less), (Op.GE, np.greater_equal), (Op.EQ, np.equal)):
                got = ev.evaluate(Leaf(op, "c", (lit,)))
                expected = live[fn(values[live], lit)]
                assert isinstance(got, Rows) and got.bitmap == BitMap(expected.tolist()), (op, lit)
        nulls = ev.evaluate(Leaf(Op.IS_NULL, "c"))
        assert isinstance(nulls, Rows) and nulls.bitmap == BitMap(np.flatnonzero(~valid).tolist())


@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(-5, 5)),
                          st.one_of(st.none(), st.integers(-5, 5))), max_size=40),
       st.integers(-6, 6), st.integers(-6, 6), st.booleans())
@settings(max_examples=60, deadline=None)
def test_combined_predicates_across_index_types(pairs: list[tuple[int | None, int | None]],
                                                x: int, y: int, use_or: bool) -> None:
    """``c`` (range-bitmap) and ``b`` (bsi) in one container: AND/OR of exact answers is exact."""
    c_type, b_type = parse_type("INT"), parse_type("BIGINT")
    cs, bs = [p[0] for p in pairs], [p[1] for p in pairs]
    container = write_container({"c": {"range-bitmap": build_body(c_type, cs)},
                                 "b": {"bsi": build_body(b_type, bs, index="bsi")}})
    ev = FileIndexEvaluator(ContainerReader(container), {"c": c_type, "b": b_type})
    left, right = Leaf(Op.GE, "c", (x,)), Leaf(Op.NE, "b", (y,))
    predicate: Predicate = or_(left, right) if use_or else and_(left, right)
    hits = []
    for i, (c, b) in enumerate(pairs):
        left_hit, right_hit = c is not None and c >= x, b is not None and b != y
        if (left_hit or right_hit) if use_or else (left_hit and right_hit):
            hits.append(i)
    expected = "ROWS " + ",".join(map(str, hits)) if hits else "EMPTY"
    assert answer_of(ev.evaluate(predicate)) == expected


# ------------------------------------------------------------------------------------------------
# Corrupt input
# ------------------------------------------------------------------------------------------------
@needs_golden
@pytest.mark.parametrize("name", CASES)
def test_corrupt_golden_bodies_raise_project_errors_only(name: str) -> None:
    check_golden_corruption(load_case(name))


@needs_golden
def test_truncation_error_names_file_offset_and_field() -> None:
    case = load_case("string_small__rangebitmap_chunk64b")
    raw = (case.path / "index.raw").read_bytes()
    for n in (0, 3, 20, 60, 200, len(raw) - 1):
        data = write_container({"c": {INDEX: raw[:n]}})
        evaluator = FileIndexEvaluator(ContainerReader(data, "cut.index"), {"c": case.dtype})
        with pytest.raises(CorruptFileError, match=r"^cut\.index@\d+: [a-z -]+.*: ") as info:
            for leaf in queries_for(case.values()):
                result = evaluator.evaluate(leaf)
                if isinstance(result, Rows):
                    len(result.bitmap)
        assert info.value.offset is not None and 0 <= info.value.offset <= len(data)
        assert info.value.field


def test_hostile_lengths_do_not_allocate() -> None:
    """Counts and lengths near 2^31 are rejected before anything is sized from them."""
    dtype = parse_type("INT")
    body = bytearray(build_body(dtype, [1, 2, 3]))
    for at in range(0, len(body) - 3):
        mutated = bytearray(body)
        mutated[at : at + 4] = b"\x7f\xff\xff\xf0"
        exercise(write_container({"c": {INDEX: bytes(mutated)}}), dtype, queries_for([1, 2]))


@pytest.mark.parametrize("seed", range(6))
def test_dense_words_equal_the_roaring_bitmap(seed: int) -> None:
    """Bitset, array and run containers (Java's serialization, after runOptimize) read as words."""
    from paimon_index.fileindex.bit_slice import dense_words, serialize_positions, words_to_bitmap

    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 300_000))
    parts = [rng.choice(n_rows, int(rng.integers(0, n_rows // 2 + 1)), replace=False),  # bitset / array
             np.arange(int(rng.integers(0, n_rows)), n_rows)[: int(rng.integers(0, 70_000))]]  # runs
    positions = np.unique(np.concatenate(parts)).astype(np.int64)
    data = serialize_positions(positions)
    for n_words in ((n_rows + 63) // 64, max(1, n_rows // 128)):  # the row count, or fewer words
        words = dense_words(ByteReader(BytesSource(data)), n_words, "test")
        assert len(words) == n_words
        assert list(words_to_bitmap(words)) == [p for p in positions.tolist() if p < 64 * n_words]


def test_dense_words_refuse_a_truncated_bitmap() -> None:
    from paimon_index.errors import CorruptFileError
    from paimon_index.fileindex.bit_slice import dense_words, serialize_positions

    data = serialize_positions(np.arange(0, 100_000, 3))
    with pytest.raises(CorruptFileError, match="slice"):
        dense_words(ByteReader(BytesSource(data[:-10])), 2000, "bsi slice 1")


@pytest.mark.parametrize("seed", range(4))
def test_comparisons_equal_a_model_on_roaring_and_on_words(seed: int) -> None:
    """Every comparison answered twice by one reader: first through Roaring slices, then (a
    cached reader's path) through the slices as 64-bit words; both equal NumPy's answer."""
    rng = np.random.default_rng(seed)
    dtype = parse_type("INT")
    n = int(rng.integers(1, 60_000))
    keys = rng.integers(-1000, int(rng.integers(1, 100_000)), n).astype(np.int64)
    valid = rng.random(n) > 0.1
    body = range_bitmap.RangeBitmapWriter(dtype, {}).build(CanonicalColumn(dtype, keys, valid))
    literals = [int(x) for x in rng.choice(keys, 4)] + [int(keys.min()) - 1, int(keys.max()) + 1, 0]
    for literal in literals:
        reader = RangeBitmapReader(dtype, BytesSource(body), 0, len(body))
        for _ in range(2):
            for name, want in (("gt", keys > literal), ("gte", keys >= literal), ("lt", keys < literal),
                               ("lte", keys <= literal)):
                got = getattr(reader, name)(literal)
                assert list(got) == np.flatnonzero(want & valid).tolist(), (name, literal)
