"""Corrupt-input checks shared by every index type's tests.

A mutated container is opened, summarized, queried and asked for TopN; only PaimonIndexError
subclasses may escape — never ``struct.error``, ``IndexError``, ``ValueError``, ``OverflowError`` or
``MemoryError``. Small inputs get every prefix truncation and every byte flipped (xor 0xFF and one
bit); larger ones the first bytes exhaustively and a seeded sample of the rest.
"""

from __future__ import annotations

import random

from goldens import GoldenCase
from paimon_index.errors import PaimonIndexError
from paimon_index.fileindex.base import SortOrder, TopN
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader, write_container
from paimon_index.fileindex.result import Rows
from paimon_index.predicate import Leaf, Op
from paimon_index.types import DataType

EXHAUSTIVE_MAX_BYTES = 1_200
#: For larger inputs: this many leading bytes cut and flipped exhaustively, this many random ones.
LEADING_BYTES = 400
LEADING_FLIPS = 200
SAMPLED = 300
COMPARISONS = (Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE)


def queries_for(values: list[object], fallback: object = None) -> list[Leaf]:
    """Leaves over up to three present values (``fallback`` when the column has none)."""
    present = [v for v in values if v is not None][:3]
    if not present and fallback is not None:
        present = [fallback]
    leaves = [Leaf(Op.IS_NULL, "c"), Leaf(Op.IS_NOT_NULL, "c"), Leaf(Op.IN, "c", tuple(present)),
              Leaf(Op.NOT_IN, "c", tuple(present))]
    for v in present:
        leaves += [Leaf(op, "c", (v,)) for op in COMPARISONS]
    return leaves


def exercise(container: bytes, dtype: DataType, leaves: list[Leaf]) -> None:
    """Open, describe, query and TopN a possibly corrupt container: only our errors may escape."""
    try:
        with ContainerReader(container, "mutated.index") as reader:
            evaluator = FileIndexEvaluator(reader, {"c": dtype})
            for entry in reader.entries:
                index = evaluator.reader(entry)
                if index is not None:
                    index.describe()
            for leaf in leaves:
                result = evaluator.evaluate(leaf)
                if isinstance(result, Rows):
                    len(result.bitmap)
            for ascending in (True, False):
                order = SortOrder("c", ascending, not ascending)
                result = evaluator.evaluate_topn(TopN((order,), 3, ascending))
                if isinstance(result, Rows):
                    len(result.bitmap)
    except PaimonIndexError:
        pass


def mutations(data: bytes, rng: random.Random, *, offset: int = 0) -> list[bytes]:
    """Every prefix and every byte flipped (xor 0xFF, one bit) of a small input; samples else."""
    n = len(data)
    if n <= EXHAUSTIVE_MAX_BYTES:
        cuts: list[int] | range = range(offset, n)
        flips = [(i, m) for i in range(offset, n) for m in (0xFF, 1 << (i % 8))]
    else:
        cuts = sorted({*range(offset, offset + LEADING_BYTES),
                       *(rng.randrange(offset, n) for _ in range(SAMPLED))})
        flips = [(rng.randrange(offset, n), 1 << rng.randrange(8)) for _ in range(SAMPLED)]
        flips += [(i, 0xFF) for i in range(offset, min(n, offset + LEADING_FLIPS))]
    out = [data[:c] for c in cuts]
    for i, mask in flips:
        b = bytearray(data)
        b[i] ^= mask
        out.append(bytes(b))
    return out


def container_cuts(container_size: int, head_size: int, rng: random.Random, *,
                   exhaustive: bool = False) -> list[int]:
    """Prefix lengths of a container file to try: all of them for a small file (or ``exhaustive``);
    else every cut inside the head and the first bytes of the body, and a seeded sample of the rest.

    A cut past those leading body bytes meets one check (the body is shorter than the head says),
    the same for every length; what the index parser does with a shorter body is the raw body's
    own cuts (:func:`mutations`). The exhaustive variant runs with ``-m slow``."""
    if exhaustive or container_size <= EXHAUSTIVE_MAX_BYTES:
        return list(range(container_size))
    leading = range(min(container_size, head_size + LEADING_BYTES))
    return sorted({*leading, *(rng.randrange(container_size) for _ in range(SAMPLED))})


def check_golden_corruption(case: GoldenCase, fallback: object = None, *,
                            exhaustive: bool = False) -> None:
    """Mutate a golden case's index body (re-wrapped, so the index parser meets every cut and flip),
    then prefixes of the container file (:func:`container_cuts`) and every byte of its head flipped."""
    rng = random.Random(case.name)
    leaves = queries_for(case.values(), fallback)
    raw = (case.path / "index.raw").read_bytes()
    container = (case.path / "index.bin").read_bytes()
    for body in mutations(raw, rng):
        exercise(write_container({"c": {case.index_type: body}}), case.dtype, leaves)
    for n in container_cuts(len(container), len(container) - len(raw), rng, exhaustive=exhaustive):
        exercise(container[:n], case.dtype, leaves)
    for i in range(len(container) - len(raw)):
        flipped = bytearray(container)
        flipped[i] ^= 0xFF
        exercise(bytes(flipped), case.dtype, leaves)
