"""Packing token ids into int32 mask words: the sparse path (few ids, bits set word by word) and
the dense path (a bool array of the whole width, packed) give the same words."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.engine import masks
from structgen.engine.tuning import EngineTuning


def _reference(ids: list[int], width: int) -> np.ndarray:
    words = [0] * masks.words_for(width)
    for i in ids:
        words[i >> 5] |= 1 << (i & 31)
    return np.asarray(words, dtype=np.uint32).view(np.int32)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5000).flatmap(lambda w: st.tuples(st.just(w), st.lists(st.integers(0, w - 1), max_size=600))))
def test_pack_ids_paths_agree(case: tuple[int, list[int]]) -> None:
    width, ids = case
    arr = np.asarray(ids, dtype=np.int64)
    got = masks.pack_ids(arr, width)
    assert got.dtype == np.int32
    assert np.array_equal(got, _reference(ids, width))
    assert np.array_equal(np.flatnonzero(masks.unpack(got, width)), np.unique(arr))


def test_pack_ids_bit_31_and_duplicates() -> None:
    for ids in ([31, 31, 63, 0], list(range(0, 128256, 97)), [128255]):
        arr = np.asarray(ids, dtype=np.int64)
        assert np.array_equal(masks.pack_ids(arr, 128256), _reference(ids, 128256))
        assert np.array_equal(masks.pack_ids(arr.astype(np.int32), 128256), _reference(ids, 128256))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 3000).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(-1, 12), min_size=n, max_size=n),
            st.lists(st.integers(-1, 12), min_size=n, max_size=n),
            st.integers(0, 14),
            st.one_of(st.none(), st.integers(0, 14)),
            st.integers(0, n),
        )
    )
)
def test_counted_filter_words_equal_packed_filter_ids(case) -> None:  # type: ignore[no-untyped-def]
    from structgen.engine.counters import CountedHead, UnitCounts, counted_base, filter_ids, filter_words

    stay, leave, lo, hi, cut = case
    n = len(stay)
    counts = UnitCounts(np.asarray(stay, dtype=np.int32), np.asarray(leave, dtype=np.int32))
    ids = np.random.default_rng(n).permutation(n)[: max(cut, 1)].astype(np.int64)  # a mask's ids, any order
    base = counted_base(ids, counts)
    head = CountedHead(unit=0, lo=lo, hi=hi, rest=0)
    width = n + 7
    for _ in range(2):  # the second time from the cached full masks
        got = filter_words(base, head, width)
        assert np.array_equal(got, masks.pack_ids(filter_ids(base, head), width))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 5000).flatmap(
        lambda w: st.tuples(
            st.just(w),
            st.lists(st.integers(0, w - 1), max_size=40),
            st.lists(st.integers(0, w - 1), max_size=300),
        )
    )
)
def test_pack_ids_onto_sets_the_union(case: tuple[int, list[int], list[int]]) -> None:
    """On a packed mask, the tiny (Python), sparse and dense paths all give the union of bits."""
    width, base, more = case
    words = masks.pack_ids(np.asarray(base, dtype=np.int64), width)
    got = masks.pack_ids_onto(words, np.asarray(more, dtype=np.int32))
    assert np.array_equal(got, _reference(base + more, width))
    assert np.array_equal(words, _reference(base, width)), "the mask it started from is left alone"


def test_counted_filter_clears_a_few_ids_from_a_full_mask() -> None:
    """Most ids fit the count and a few (long tokens) do not: the few are cleared from the
    part's full mask (bytes in Python up to ``EngineTuning.tiny_clear`` ids, ``np.bitwise_and.at``
    beyond)."""
    from structgen.engine.counters import CountedHead, UnitCounts, counted_base, filter_ids, filter_words

    n = 3000
    rng = np.random.default_rng(7)
    tiny = EngineTuning().tiny_clear
    for long_ids in (3, tiny, tiny + 5):
        stay = np.ones(n, dtype=np.int32)
        stay[rng.choice(n, long_ids, replace=False)] = 9
        leave = np.where(rng.random(n) < 0.5, 2, -1).astype(np.int32)
        counts = UnitCounts(stay, leave)
        base = counted_base(np.arange(n, dtype=np.int64), counts)
        head = CountedHead(unit=0, lo=0, hi=4, rest=0)
        for _ in range(2):
            got = filter_words(base, head, n + 40)
            assert np.array_equal(got, masks.pack_ids(filter_ids(base, head), n + 40))


def test_empty_addition_shares_a_read_only_mask() -> None:
    words = masks.pack_ids(np.asarray([3, 70], dtype=np.int64), 128)
    words.flags.writeable = False
    assert masks.pack_ids_onto(words, np.zeros(0, dtype=np.int64)) is words
    writable = masks.pack_ids(np.asarray([3], dtype=np.int64), 128)
    assert masks.pack_ids_onto(writable, np.zeros(0, dtype=np.int64)) is not writable
