"""The engine's numpy helpers agree with numpy's own functions; its memo bound is first in, first
out."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from structgen.engine.arrays import fifo_put, ranges, stable_order, unique, unique_inverse
from structgen.engine.counters import UnitCounts, counted_base


@given(st.lists(st.integers(-3, 9), max_size=40))
def test_unique_matches_numpy(values: list[int]) -> None:
    a = np.asarray(values, dtype=np.int32)
    want, want_inverse = np.unique(a, return_inverse=True)
    got, got_inverse = unique_inverse(a)
    assert np.array_equal(unique(a), want)
    assert np.array_equal(got, want)
    assert np.array_equal(got_inverse, want_inverse.reshape(-1))


@given(st.lists(st.tuples(st.integers(0, 6), st.integers()), max_size=40), st.integers(1, 4))
def test_fifo_put_keeps_the_newest_keys_within_its_bound(puts: list[tuple[int, int]], most: int) -> None:
    """Against a model: keys in first-put order, the oldest forgotten when a new key would make
    more than ``most``; putting a key held again replaces its value and forgets nothing."""
    memo: dict[int, int] = {}
    order: list[int] = []
    values: dict[int, int] = {}
    for key, value in puts:
        fifo_put(memo, key, value, most)
        if key not in order:
            if len(order) >= most:
                del values[order.pop(0)]
            order.append(key)
        values[key] = value
        assert list(memo) == order and memo == values and len(memo) <= most


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5)), max_size=10))
def test_ranges_concatenates_aranges(pairs: list[tuple[int, int]]) -> None:
    starts = np.asarray([s for s, _ in pairs], dtype=np.int64)
    counts = np.asarray([c for _, c in pairs], dtype=np.int64)
    want = np.concatenate([np.arange(s, s + c) for s, c in pairs]) if pairs else np.zeros(0)
    assert np.array_equal(ranges(starts, counts), want)


@given(st.lists(st.integers(-(2**31), 2**31 - 1) | st.integers(-3, 300), max_size=60))
def test_stable_order_is_numpys_stable_argsort(values: list[int]) -> None:
    a = np.asarray(values, dtype=np.int32)
    assert np.array_equal(stable_order(a), np.argsort(a, kind="stable"))


def test_counted_base_sorts_the_ids_of_a_mask_by_units() -> None:
    rng = np.random.default_rng(7)
    stay = rng.integers(-1, 40, size=5000).astype(np.int32)
    leave = rng.integers(-1, 200, size=5000).astype(np.int32)
    counts = UnitCounts(stay, leave)
    ids = np.sort(rng.choice(6000, size=3000, replace=False))  # some beyond the vocabulary
    base = counted_base(ids, counts)
    inside = ids[ids < 5000]
    parts = ((base.stay_ids, base.stay_units, stay), (base.leave_ids, base.leave_units, leave))
    for got_ids, got_units, units in parts:
        want = inside[np.argsort(units[inside], kind="stable")]
        assert np.array_equal(got_ids, want)
        assert np.array_equal(got_units, units[want])
