"""Mask source: counted repetitions, as slices of the unbounded repetition's sorted mask.

Invariant (counters.py). Where the repeated unit is prefix-free and what follows cannot start like
it, a token allowed at count ``n`` of ``x{lo,hi} rest`` is a token of the unbounded ``x* rest``
whose units fit: the units it uses when it stays inside (at most ``hi - n``) or the units it
completes before leaving (between ``lo - n`` and ``hi - n``). Per token both unit counts are
computed once per (unit, vocabulary); the unbounded mask's ids are sorted by them once per base
configuration, so a count's mask is two slices, and counts with the same effective bounds share
one packed mask (the answer: a :class:`~.mask_sources.Partial` with no ids).

A compile ahead of time (ahead.py) computes the same parts first, under the same keys
(:meth:`CountedMasks.prepare`, :meth:`CountedMasks.prepare_counts`).

Tuning: ``counted_masks`` (the source's switch), ``max_unit_states``, ``max_partial_parts``,
``splice_begun``, ``small_base``, ``tiny_clear``, ``many_clear``, ``max_bounded_words``,
``max_slice_words``, ``counted_memo_bytes``, ``aot_counted_filters``.
"""

from __future__ import annotations

import numpy as np

from .counters import (
    Bases,
    CountedBase,
    CountedHead,
    UnitAutomaton,
    UnitCounts,
    count_bounds,
    count_units,
    counted_base,
    counted_head,
    filter_bounds,
    filter_words,
    unit_automaton,
)
from .loop_regions import LoopRegion
from .mask_sources import Answer, ByteBudget, ByteMemo, Partial, Walks
from .mask_store import MaskPool
from .tuning import EngineTuning

_NO_IDS = np.zeros(0, dtype=np.int64)


class CountedMasks:
    """The counted-repetition masks of one constraint (see the module docstring)."""

    switch = "counted_masks"

    def __init__(self, walks: Walks, tuning: EngineTuning, max_entries: int, pool: MaskPool) -> None:
        self._system, self._store, self._table, self._trie, self._width = walks
        self.tuning = tuning
        self.budget = ByteBudget(tuning.counted_memo_bytes)
        #: (base, unit, lo, hi) -> the packed mask of those bounds
        self._words = ByteMemo(self.budget, max_entries, pool)
        #: configuration -> (head, unit counts, base configuration), or None where not counted
        self.entries: dict[int, tuple[CountedHead, UnitCounts, int] | None] = {}
        self.units: dict[tuple[int, int | None], UnitCounts | None] = {}
        self.automata: dict[int, UnitAutomaton | None] = {}
        self._bases: dict[tuple[int, int], Bases] = {}
        #: (unit, rest, other, partial) of a counted head -> its top with the count lifted
        self._unbounded_tops: dict[tuple[int, int, int | None, int | None], int] = {}

    def nbytes(self) -> int:
        return self.budget.used

    def answer(self, cid: int) -> Answer | None:
        counted = self.base(cid)
        if counted is None:
            return None
        sorted_base, head, key = counted
        words = self._words.get(key)
        if words is None:
            self._filter(sorted_base, head, key)
            words = self._words[key]
        return Partial(words, _NO_IDS)

    def base(self, cid: int) -> tuple[Bases, CountedHead, tuple[int, int, int, int]] | None:
        """If ``cid`` sits in a counted repetition: the sorted unbounded mask, the repetition, and
        the key of its filtered mask (equal keys, equal masks). None for every configuration
        where ``tuning.counted_masks`` is off."""
        if not self.tuning.counted_masks:
            return None
        entry = self.entries.get(cid, False)
        if entry is False:
            entry = self.entries[cid] = self._entry(cid)
        if entry is None:
            return None
        head, counts, base = entry
        key = (base, head.unit)
        sorted_base = self._bases.get(key)
        if sorted_base is None:
            region, ids = self._table.walk_parts(base, self._trie)
            sorted_base = counted_base(ids, counts, small_base=self.tuning.small_base)
            if region is not None:
                sorted_base = (self._region_base(region, counts), sorted_base)
            self._bases[key] = sorted_base
        return sorted_base, head, key + filter_bounds(sorted_base, head)

    def prepare(self, cid: int) -> tuple[bool, bool]:
        """Compute ahead (ahead.py) what a first ``answer(cid)`` computes: the unit counts of its
        repetition, its sorted unbounded base and the filtered mask of its count, under the keys
        ``answer`` looks them up by. Whether the base, and whether the filtered mask, were new
        (neither where ``cid`` is not in a counted repetition)."""
        if not self.tuning.counted_masks:
            return False, False
        entry = self.entries.get(cid, False)
        if entry is False:
            entry = self.entries[cid] = self._entry(cid)
        known = entry is not None and (entry[2], entry[0].unit) in self._bases
        counted = self.base(cid)
        if counted is None:
            return False, False
        return not known, self._filter(*counted)

    def prepare_counts(self, cid: int) -> int:
        """Compute ahead the filtered masks of every count of ``cid``'s repetition (``cid``'s
        own and those after it), where they have at most ``tuning.aot_counted_filters``
        distinct bounds: a short repetition (``maxLength: 10``, ``[0-9]{6}``), whose every count
        is a filter of its own, of a base of up to the whole vocabulary. How many were new."""
        counted = self.base(cid)
        if counted is None:
            return 0
        sorted_base, head, key = counted
        bounds = count_bounds(sorted_base, head, self.tuning.aot_counted_filters)
        if bounds is None:
            return 0
        return sum(self._filter(sorted_base, head, key[:2] + b) for b in bounds)

    def _filter(self, sorted_base: Bases, head: CountedHead, key: tuple[int, int, int, int]) -> bool:
        """The filtered mask of bounds ``key[2:]``, what ``answer`` computes for that key;
        whether it was not known."""
        if key in self._words:
            return False
        words = filter_words(sorted_base, head, self._width, key[2:], tuning=self.tuning)  # type: ignore[arg-type]
        words.flags.writeable = False
        self._words.put(key, words)
        return True

    def _entry(self, cid: int) -> tuple[CountedHead, UnitCounts, int] | None:
        system = self._system
        stacks = system.configs[cid]
        if len(stacks) != 1:
            return None
        sid = stacks[0]
        parent, top = system.stack_parent[sid], system.stack_top[sid]
        head = counted_head(self._store, top, tuning=self.tuning)
        counts = None if head is None else self.unit_counts(head.unit, head.partial)
        if head is None or counts is None:
            return None
        return head, counts, system.config([system.stack(parent, self._unbounded(head))])

    def _unbounded(self, head: CountedHead) -> int:
        """``head.unbounded``, remembered: every count of one repetition has the same one."""
        key = (head.unit, head.rest, head.other, head.partial)
        found = self._unbounded_tops.get(key)
        if found is None:
            found = self._unbounded_tops[key] = head.unbounded(self._store)
        return found

    def _region_base(self, region: LoopRegion, counts: UnitCounts) -> CountedBase:
        """The tokens of a loop region sorted by ``counts``, kept on the region: every counted
        string of the same loops shares them and their filtered masks, and sorts only the tokens
        its own walk found beyond the region."""
        key = ("counted", id(counts))
        found = region.cached(key)
        if found is not None and found[0] is counts:  # type: ignore[index]
            return found[1]  # type: ignore[index,no-any-return]
        base = counted_base(
            self._trie.sorted_ids[region.positions], counts, shared=True, small_base=self.tuning.small_base
        )
        region.remember(key, (counts, base))
        return base

    def unit_counts(self, unit: int, partial: int | None = None) -> UnitCounts | None:
        """Per-token counts of ``unit`` from a unit boundary, or from the begun unit ``partial``
        (None where that is not a state of the unit's automaton)."""
        key = (unit, partial)
        if key not in self.units:
            if unit not in self.automata:
                self.automata[unit] = unit_automaton(self._store, unit, tuning=self.tuning)
            auto = self.automata[unit]
            found = None
            if auto is not None:
                # state 0 is the unit itself, not begun: only a unit boundary counts from there
                start = 0 if partial is None else auto.states.get(partial, 0)
                if partial is None or start > 0:
                    found = count_units(auto.table, self._trie, start, tuning=self.tuning)
            self.units[key] = found
        return self.units[key]
