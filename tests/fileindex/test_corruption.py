"""Truncated and bit-flipped index files raise project errors only.

Bloom filter and bitmap golden cases go through :func:`mutations.check_golden_corruption` (shared
with the range-bitmap and BSI tests): the index body re-wrapped with every prefix and every byte
flipped (sampled beyond 1,200 bytes), prefixes of the container (every one up to 1,200 bytes, else
the head, the body's first bytes and a sample), every head byte flipped. With ``-m slow`` every
prefix of every golden container of every index type.
"""

from __future__ import annotations

import pytest

from goldens import GOLDEN, case_names, load_case
from mutations import check_golden_corruption, queries_for
from paimon_index.errors import CorruptFileError
from paimon_index.fileindex.evaluate import FileIndexEvaluator
from paimon_index.fileindex.format import ContainerReader

CASES = [n for n in case_names("bloom-filter") + case_names("bitmap")
         if "allnull" not in n or n.endswith("v2")]


@pytest.mark.skipif(not CASES, reason=f"golden files not found at {GOLDEN}")
@pytest.mark.parametrize("name", CASES)
def test_mutated_golden_files_raise_project_errors_only(name: str) -> None:
    check_golden_corruption(load_case(name))


#: Containers Java wrote (a case whose ``meta.json`` records a ``write_error``, such as a BSI of a
#: negative BIGINT, has none to corrupt; ``test_bsi.py`` checks that refusal).
EVERY_TYPE = [(n, None) for n in CASES] + [(n, None) for n in case_names("range-bitmap")] + [
    (n, 0) for n in case_names("bsi") if not load_case(n).write_error]


@pytest.mark.slow
@pytest.mark.skipif(not EVERY_TYPE, reason=f"golden files not found at {GOLDEN}")
@pytest.mark.parametrize(("name", "fallback"), EVERY_TYPE)
def test_every_prefix_of_every_golden_container_raises_project_errors_only(
        name: str, fallback: object) -> None:
    check_golden_corruption(load_case(name), fallback, exhaustive=True)


def test_every_truncation_is_reported_with_file_and_offset() -> None:
    case = load_case("int_small__bitmap_v2")
    data = (case.path / "index.bin").read_bytes()
    for n in range(len(data)):
        with pytest.raises(CorruptFileError, match=r"^cut\.index@\d+: ") as info, \
                ContainerReader(data[:n], "cut.index") as container:
            evaluator = FileIndexEvaluator(container, {"c": case.dtype})
            for leaf in queries_for(case.values()):
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
