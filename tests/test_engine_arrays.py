"""The engine's numpy helpers agree with numpy's own functions."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from structgen.engine.arrays import ranges, unique, unique_inverse


@given(st.lists(st.integers(-3, 9), max_size=40))
def test_unique_matches_numpy(values: list[int]) -> None:
    a = np.asarray(values, dtype=np.int32)
    want, want_inverse = np.unique(a, return_inverse=True)
    got, got_inverse = unique_inverse(a)
    assert np.array_equal(unique(a), want)
    assert np.array_equal(got, want)
    assert np.array_equal(got_inverse, want_inverse.reshape(-1))


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5)), max_size=10))
def test_ranges_concatenates_aranges(pairs: list[tuple[int, int]]) -> None:
    starts = np.asarray([s for s, _ in pairs], dtype=np.int64)
    counts = np.asarray([c for _, c in pairs], dtype=np.int64)
    want = np.concatenate([np.arange(s, s + c) for s, c in pairs]) if pairs else np.zeros(0)
    assert np.array_equal(ranges(starts, counts), want)
