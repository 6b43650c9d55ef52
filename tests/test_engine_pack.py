"""Packing token ids into int32 mask words: the sparse path (few ids, bits set word by word) and
the dense path (a bool array of the whole width, packed) give the same words."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.engine import masks


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
