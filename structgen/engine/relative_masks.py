"""Mask source: walks over the hole, shared by every caller of a top.

Invariant. A configuration's step is the union of its stacks' steps. For one stack over a caller,
``(P, t)``, walk ``t`` over the *hole* (an unknown caller that reads nothing): a return into the
hole is recorded as an *exit* (a trie node and its byte). The mask of ``(P, t)`` is that walk's
mask ORed with the tokens a walk from the exits accepts, each exit entered with its byte stepped
from ``P``; every return into ``P`` is an exit, so the union is the plain walk's. The same cut is
made after a byte loop, at the bottom too (:meth:`RelativeMasks.loop_split`: ``x* b R`` is
``x* b`` over a frame holding ``R``), and the tokens that cross into a caller over a caller
are walked over that caller's hole in turn (:meth:`RelativeMasks.crossing`). The answer is a
:class:`~.mask_sources.Partial`: the hole walk's packed mask and the crossing tokens.

Tuning: ``relative_walks`` (the source's switch), ``relative_nullable``, ``chained_crossings``,
``loop_split``, ``split_exits``, ``relative_memo_bytes``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .ahead import PositionMasks
from .arrays import mask_to_bools
from .mask_sources import Answer, ByteBudget, ByteMemo, Partial, Walks, region_words
from .mask_store import MaskPool
from .table import Exits
from .terms import BYTES_K, EMPTY, HAS_POSS, HAS_SYM, REPEAT_K, SEQ_K
from .tuning import EngineTuning


class RelativeMasks:
    """The walks over the hole of one constraint (see the module docstring)."""

    switch = "relative_walks"

    def __init__(
        self,
        walks: Walks,
        positions: PositionMasks,
        tuning: EngineTuning,
        max_entries: int,
        pool: MaskPool,
        mask_of: Callable[[int], np.ndarray],
    ) -> None:
        self._system, self._store, self._table, self._trie, self._width = walks
        #: the pipeline's mask of a configuration (the caller's own mask, for a top that may end)
        self._mask_of = mask_of
        self._positions = positions
        self.tuning = tuning
        self.budget = ByteBudget(tuning.relative_memo_bytes)
        #: relative configuration -> its packed mask and exits
        self.relative = ByteMemo(self.budget, max_entries, pool)
        #: (relative configuration, tops crossed) -> the tokens and exits of the walk from its
        #: exits over the last top (see ``crossing``)
        self.crossings = ByteMemo(self.budget, max_entries)
        #: top term -> (head, rest) of its split after a byte loop, or None (``loop_split``)
        self._loops: dict[int, tuple[int, int] | None] = {}
        #: heads whose walk over the hole left too many exits: their tops are walked as they are
        self.spine_refused: set[int] = set()
        #: relative parts and crossings computed here (not found precomputed or saved)
        self.relative_walks = 0
        self.crossing_walks = 0

    def nbytes(self) -> int:
        return self.budget.used

    def answer(self, cid: int) -> Answer | None:
        """For one stack over a caller, ``(P, t)`` with ``t`` unable to end at once: the packed
        mask of the walk from ``t`` over the hole and the tokens a walk from its exits adds,
        stepped from ``P``. A top that ends a byte loop is walked the same way, split, at the
        bottom too. None where the configuration has another shape."""
        system = self._system
        stacks = system.configs[cid]
        if len(stacks) != 1 or not self.tuning.relative_walks:
            return None
        sid = stacks[0]
        parent, top = system.stack_parent[sid], system.stack_top[sid]
        split = False
        found_split = self.loop_split(top)
        if found_split is not None and found_split[0] not in self.spine_refused:
            # ``h R`` is ``h`` over a frame holding ``R``: the same stack
            top, parent, split = found_split[0], system.stack(parent, found_split[1]), True
        elif parent < 0 or (self._store.nullable[top] and not self.tuning.relative_nullable):
            return None
        rel = system.relative(top)
        found = self.relative.get(rel)
        if found is None:
            found = self._positions.relative(rel) if self._positions else None
        first = found is None
        if first:
            found = self.walk(rel)
            self.relative.put(rel, found)
        words, exits = found
        tail = system.config([parent])
        caller_words = None
        if not split and self._store.nullable[top]:
            # The top may end before the token's first byte: those tokens are the caller's own
            # (the configuration steps as the union of [P, top] reading and [P] reading), whose
            # mask the pipeline has, where the exits at the root would walk them again.
            exits = {k: v for k, v in exits.items() if k != 0}
            caller_words = self._mask_of(tail)
        if exits:
            exits = self.exits_into(exits, tail)
            if first and split and sum(nodes.size for nodes, _ in exits.values()) > self.tuning.split_exits:
                # tokens reach the tail from many nodes: every top with this head would walk
                # them again from its own tail, more than its plain walk costs
                self.spine_refused.add(top)
        if caller_words is not None:
            words = words | caller_words  # with the caller's end of sequence and atoms: whole
        if not exits:
            return Partial(words, np.zeros(0, dtype=np.int64))
        return Partial(words, self.crossing(tail, exits, (rel,)))

    def crossing(self, tail: int, exits: Exits, key: tuple[int, ...]) -> np.ndarray:
        """The tokens a walk from ``exits`` accepts, each exit entered with its byte stepped
        from ``tail``. Where ``tail`` is one stack over a caller, the walk is from its top over
        the hole (``TransitionTable.walk_from_relative``), kept per ``key`` (the relative
        configuration and the tops crossed before, which fix the exits) and the top: every depth
        of a recursive document shares it, and the tokens that cross this frame too go on from
        its exits into the next caller. Exact for the reason a walk over the hole is."""
        system = self._system
        stacks = system.configs[tail]
        parent = system.stack_parent[stacks[0]] if len(stacks) == 1 else -1
        if not self.tuning.chained_crossings or parent < 0:
            return self._table.walk_from(tail, self._trie, exits)
        top = system.stack_top[stacks[0]]
        here = key + (top,)
        found = self.crossings.get(here)
        if found is None:
            found = self._table.walk_from_relative(system.relative(top), self._trie, exits)
            self.crossing_walks += 1
            self.crossings.put(here, found)
        ids, further = found
        if further:
            caller = system.config([parent])
            further = self.exits_into(further, caller)
            if further:
                ids = np.concatenate([ids.astype(np.int64), self.crossing(caller, further, here)])
        return ids

    def walk(self, rel: int) -> tuple[np.ndarray, Exits]:
        """The packed mask and exits of the walk of the relative configuration ``rel``."""
        self.relative_walks += 1
        region, ids, exits = self._table.walk_relative(rel, self._trie)
        words = region_words(region, ids, self._trie, self._width)
        words.flags.writeable = False
        return words, exits

    def exits_into(self, exits: Exits, cid: int) -> Exits:
        """The exits of a walk over the hole whose byte ``cid`` (what the hole stands for) may
        read, by the bound from its terms (``ConfigSystem.first_bytes_bound``): the others lead
        nowhere."""
        bits = mask_to_bools(self._system.first_bytes_bound(cid))
        out: Exits = {}
        for k, (nodes, byts) in exits.items():
            keep = bits[byts]
            if keep.all():
                out[k] = (nodes, byts)
            elif keep.any():
                out[k] = (nodes[keep], byts[keep])
        return out

    def loop_split(self, top: int) -> tuple[int, int] | None:
        """``(x* b, R)`` where the top is ``x* b R``: a loop over bytes (a string's body, a run
        of digits) and the one byte class that ends it (the closing quote), before the rest
        ``R``. The head is the same for every string of that kind, so its walk over the hole (a
        frame holding ``R``) is shared by all of them (``tuning.loop_split``). None where the top
        has another shape, or where the loop or its end holds a call or a greedy lexeme
        (remembered)."""
        found = self._loops.get(top, False)
        if found is False:
            found = None
            store = self._store
            kind, a, b = store.kind, store.a, store.b
            if self.tuning.loop_split and kind[top] == SEQ_K:
                loop, after = a[top], b[top]
                if (
                    kind[loop] == REPEAT_K
                    and store.b[loop] == (0, None)
                    and not store.flags[loop] & (HAS_POSS | HAS_SYM)
                    and kind[after] == SEQ_K
                    and kind[a[after]] == BYTES_K
                    and b[after] != EMPTY
                ):
                    found = (store.seq(loop, a[after]), b[after])  # type: ignore[arg-type]
            self._loops[top] = found
        return found  # type: ignore[return-value]
