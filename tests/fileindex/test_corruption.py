"""Truncated and bit-flipped index files raise project errors only.

For small golden containers every prefix truncation and every byte (xor 0xFF and a single-bit flip)
is tried; larger ones are sampled. Each mutated file is opened and queried with a set of predicates
and summarized: the only exceptions allowed out are :class:`PaimonIndexError` subclasses — never
``struct.error``, ``IndexError``, ``ValueError``, ``OverflowError`` or ``MemoryError``.
"""

from __future__ import annotations

import random

import pytest

from goldens import GOLDEN, case_names, load_case
from paimon_index.errors import CorruptFileError, PaimonIndexError
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader
from paimon_index.predicate import Leaf, Op
from paimon_index.types import DataType

EXHAUSTIVE_MAX_BYTES = 400
SAMPLED_MUTATIONS = 400
CASES = [n for n in case_names("bloom-filter") + case_names("bitmap")
         if "allnull" not in n or n.endswith("v2")]


def _queries(values: list[object]) -> list[Leaf]:
    present = [v for v in values if v is not None][:3]
    leaves = [Leaf(Op.IS_NULL, "c"), Leaf(Op.IS_NOT_NULL, "c"), Leaf(Op.IN, "c", tuple(present))]
    for v in present:
        leaves += [Leaf(Op.EQ, "c", (v,)), Leaf(Op.NE, "c", (v,))]
    return leaves


def _exercise(data: bytes, dtype: DataType, queries: list[Leaf]) -> None:
    try:
        with ContainerReader(data, "mutated.index") as container:
            evaluator = FileIndexEvaluator(container, {"c": dtype})
            for entry in container.entries:
                reader = evaluator.reader(entry)
                if reader is not None:
                    reader.describe()
            for leaf in queries:
                result = evaluator.evaluate(leaf)
                bitmap = getattr(result, "bitmap", None)
                if bitmap is not None:
                    len(bitmap)
    except PaimonIndexError:
        pass


def _mutations(data: bytes, rng: random.Random) -> list[bytes]:
    if len(data) <= EXHAUSTIVE_MAX_BYTES:
        out = [data[:n] for n in range(len(data))]
        for i in range(len(data)):
            for mask in (0xFF, 1 << (i % 8)):
                flipped = bytearray(data)
                flipped[i] ^= mask
                out.append(bytes(flipped))
        return out
    out = [data[: rng.randrange(len(data))] for _ in range(SAMPLED_MUTATIONS // 2)]
    for _ in range(SAMPLED_MUTATIONS // 2):
        flipped = bytearray(data)
        flipped[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        out.append(bytes(flipped))
    return out


@pytest.mark.skipif(not CASES, reason=f"golden files not found at {GOLDEN}")
@pytest.mark.parametrize("name", CASES)
def test_mutated_golden_files_raise_project_errors_only(name: str) -> None:
    case = load_case(name)
    data = (case.path / "index.bin").read_bytes()
    queries = _queries(case.values())
    for mutated in _mutations(data, random.Random(name)):
        _exercise(mutated, case.dtype, queries)


def test_every_truncation_is_reported_with_file_and_offset() -> None:
    case = load_case("int_small__bitmap_v2")
    data = (case.path / "index.bin").read_bytes()
    for n in range(len(data)):
        with pytest.raises(CorruptFileError, match=r"^cut\.index@\d+: ") as info, \
                ContainerReader(data[:n], "cut.index") as container:
            evaluator = FileIndexEvaluator(container, {"c": case.dtype})
            for leaf in _queries(case.values()):
                getattr(evaluator.evaluate(leaf), "bitmap", None)
        assert info.value.offset is not None and 0 <= info.value.offset <= n


def test_bad_magic_and_version_are_named() -> None:
    case = load_case("int_small__bloom_i64_f05")
    data = bytearray((case.path / "index.bin").read_bytes())
    data[0] ^= 1
    with pytest.raises(CorruptFileError, match=r"x\.index@0: magic: not a file index"):
        ContainerReader(bytes(data), "x.index")
    data[0] ^= 1
    data[11] = 7
    with pytest.raises(CorruptFileError, match=r"x\.index@8: version: unsupported file index version 7"):
        ContainerReader(bytes(data), "x.index")


def test_hostile_counts_do_not_allocate() -> None:
    """A head claiming 2^31-1 columns is rejected before anything is sized from it."""
    import struct

    head = struct.pack(">qii", 1493475289347502, 1, 28) + struct.pack(">i", 2**31 - 1) + b"\0" * 8
    with pytest.raises(CorruptFileError, match="column count: count 2147483647 needs at least"):
        ContainerReader(head, "h.index")
