"""Mask source: walks over the hole, shared by every caller of a top (and across constraints).

Invariant. A configuration's step is the union of its stacks' steps. For one stack over a caller,
``(P, t)``, walk ``t`` over the *hole* (an unknown caller that reads nothing): a return into the
hole is recorded as an *exit* (a trie node and its byte). The mask of ``(P, t)`` is that walk's
mask ORed with the tokens a walk from the exits accepts, each exit entered with its byte stepped
from ``P``; every return into ``P`` is an exit, so the union is the plain walk's. The same cut is
made at the bottom before a word (:meth:`RelativeMasks.spine_split`: ``h R`` is ``h`` over a frame
holding ``R``) and after a byte loop (:meth:`RelativeMasks.loop_split`: ``x* b R``), and the
tokens that cross into a caller over a caller are walked over that caller's hole in turn
(:meth:`RelativeMasks.crossing`). The answer is a :class:`~.mask_sources.Partial`: the hole walk's
packed mask and the crossing tokens.

Tuning: ``relative_walks`` (the source's switch), ``relative_nullable``, ``chained_crossings``,
``loop_split``, ``spine_split``, ``spine_word``, ``spine_choices``, ``spine_look``,
``spine_head_elements``, ``spine_exits``, ``shared_walks``, ``relative_memo_bytes``.
"""

from __future__ import annotations

import numpy as np

from . import shared_walks
from .ahead import PositionMasks
from .mask_sources import Answer, ByteBudget, ByteMemo, Partial, Walks, region_words
from .mask_store import MaskPool
from .shared_walks import Exits
from .terms import ALT_K, BYTES_K, EMPTY, HAS_POSS, HAS_SYM, REPEAT_K, SEQ_K
from .tuning import EngineTuning

_WORD_BYTES = sum(1 << c for c in b"0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


class RelativeMasks:
    """The walks over the hole of one constraint (see the module docstring)."""

    switch = "relative_walks"

    def __init__(
        self, walks: Walks, positions: PositionMasks, tuning: EngineTuning, max_entries: int, pool: MaskPool
    ) -> None:
        self._system, self._store, self._table, self._trie, self._width = walks
        self._positions = positions
        self.tuning = tuning
        self.budget = ByteBudget(tuning.relative_memo_bytes)
        #: relative configuration -> its packed mask and exits
        self.relative = ByteMemo(self.budget, max_entries, pool)
        #: (relative configuration, tops crossed) -> the tokens and exits of the walk from its
        #: exits over the last top (see ``crossing``)
        self.crossings = ByteMemo(self.budget, max_entries)
        #: top term -> (head, tail) of its split before the next word, or None (``spine_split``)
        self.spine: dict[int, tuple[int, int] | None] = {}
        #: top term -> (head, rest) of its split after a byte loop, or None (``loop_split``)
        self._loops: dict[int, tuple[int, int] | None] = {}
        #: heads whose walk over the hole left too many exits: their tops are walked as they are
        self.spine_refused: set[int] = set()
        #: (term, bytes) -> whether every option starts with that many word bytes
        self._word_starts: dict[tuple[int, int], bool] = {}
        #: structural ids of terms, shared by every constraint in the process (shared_walks.py)
        self._term_keys = shared_walks.TermKeys(
            walks.store, max_nodes=tuning.shared_max_nodes, max_structures=tuning.shared_max_structures
        )
        self.shared_walk_hits = 0  # walks over the hole another constraint made
        #: relative parts and crossings computed here (not found precomputed or saved)
        self.relative_walks = 0
        self.crossing_walks = 0

    def nbytes(self) -> int:
        return self.budget.used

    def answer(self, cid: int) -> Answer | None:
        """For one stack over a caller, ``(P, t)`` with ``t`` unable to end at once: the packed
        mask of the walk from ``t`` over the hole and the tokens a walk from its exits adds,
        stepped from ``P``. A stack at the bottom whose top reaches a word or ends a byte loop is
        walked the same way, split. None where the configuration has another shape."""
        system = self._system
        stacks = system.configs[cid]
        if len(stacks) != 1 or not self.tuning.relative_walks:
            return None
        sid = stacks[0]
        parent, top = system.stack_parent[sid], system.stack_top[sid]
        split = False
        if parent < 0:
            found_split = self.spine.get(top, False) if self.tuning.spine_split else None
            if found_split is False:
                found_split = self.spine_split(top)
            if found_split is None or found_split[0] in self.spine_refused:
                found_split = self.loop_split(top)
            if found_split is None or found_split[0] in self.spine_refused:
                return None
            # ``h R`` at the bottom is ``h`` over a frame holding ``R``: the same stack
            top, parent, split = found_split[0], system.stack(parent, found_split[1]), True
        else:
            found_split = self.loop_split(top)
            if found_split is not None and found_split[0] not in self.spine_refused:
                top, parent, split = found_split[0], system.stack(parent, found_split[1]), True
            elif self._store.nullable[top] and not self.tuning.relative_nullable:
                return None
        rel = system.relative(top)
        found = self.relative.get(rel)
        if found is None:
            found = self._positions.relative(rel) if self._positions else None
        first = found is None
        if first:
            found = self.walk(rel, top, shared=split)
            self.relative.put(rel, found)
        words, exits = found
        if exits:
            tail = system.config([parent])
            exits = self.exits_into(exits, tail)
            if first and split and sum(nodes.size for nodes, _ in exits.values()) > self.tuning.spine_exits:
                # tokens reach the tail from many nodes: every top with this head would walk
                # them again from its own tail, more than its plain walk costs
                self.spine_refused.add(top)
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

    def walk(self, rel: int, top: int, *, shared: bool) -> tuple[np.ndarray, Exits]:
        """The packed mask and exits of the walk of ``rel`` (``top`` over the hole). With
        ``shared`` (a split head: small, and the JSON skeleton between a key and the next one
        recurs in every schema), another constraint on this vocabulary may have walked a head of
        the same structure already (shared_walks.py)."""
        self.relative_walks += 1
        structure = self._term_keys.of(top) if shared and self.tuning.shared_walks else None
        if structure is not None:
            found = shared_walks.lookup(self._trie, self._width, structure)
            if found is not None:
                self.shared_walk_hits += 1
                return found
        region, ids, exits = self._table.walk_relative(rel, self._trie)
        words = region_words(region, ids, self._trie, self._width)
        words.flags.writeable = False
        if structure is not None:
            shared_walks.remember(
                self._trie, self._width, structure, words, exits, max_walks=self.tuning.shared_max_walks
            )
        return words, exits

    def exits_into(self, exits: Exits, cid: int) -> Exits:
        """The exits of a walk over the hole whose byte ``cid`` (what the hole stands for) may
        read, by the bound from its terms (``ConfigSystem.first_bytes_bound``): the others lead
        nowhere. Remembered per (exits, bound) for the process (``shared_walks.exits_read_by``)."""
        bound = self._system.first_bytes_bound(cid)
        return shared_walks.exits_read_by(exits, bound, max_picks=self.tuning.shared_max_exit_picks)

    def spine_split(self, top: int) -> tuple[int, int] | None:
        """``(h, R)`` where the top sequence ``e0 e1 ... R`` reaches a *word* (``tuning.spine_word``
        letters, digits or ``_`` as single fixed bytes, after the first element): ``R`` starts
        at the word, ``h`` is what comes before it. Inside a JSON object, ``h`` is a key's
        closing quote, the colon, the value, the comma and the next key's quote, and ``R`` the
        rest of the document from the next key's name on; ``h`` is the same term after every key
        whose value has the same type, so its walk over the hole is shared by all of them. A
        choice whose every option starts with a word (optional keys) is a word too
        (``tuning.spine_choices``). ``h`` must hold at least ``tuning.spine_head_elements``
        elements that need a byte and no greedy lexeme (whose end looks at ``R``'s first byte).
        None where there is no such word (remembered per top, and for each suffix of the top
        before the word, the tops a walk meets next)."""
        store = self._store
        kind, a, b, nullable = store.kind, store.a, store.b, store.nullable
        tuning = self.tuning
        word, look, choices = tuning.spine_word, tuning.spine_look, tuning.spine_choices
        elements: list[int] = []
        tops: list[int] = []
        run = 0
        t = top
        while kind[t] == SEQ_K and len(elements) < look:
            e = a[t]
            mask = b[e]
            run = run + 1 if kind[e] == BYTES_K and mask & _WORD_BYTES and mask.bit_count() == 1 else 0  # type: ignore[operator,union-attr]
            elements.append(e)
            tops.append(t)
            if run == word or (choices and kind[e] == ALT_K and self._starts_with_word(e, word)):
                cut = len(elements) - max(run, 1)
                rest = tops[cut]
                # every suffix of the top before the word reaches the same word: its split is
                # the head's suffix, built on the way
                head, needed = EMPTY, 0
                for i in range(cut - 1, -1, -1):
                    head = store.seq(elements[i], head)
                    needed += not nullable[elements[i]]
                    ok = needed >= tuning.spine_head_elements and not store.flags[head] & HAS_POSS
                    self.spine[tops[i]] = (head, rest) if ok else None
                break
            t = b[t]  # type: ignore[assignment]
        return self.spine.setdefault(top, None)

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

    def _starts_with_word(self, t: int, need: int) -> bool:
        """Whether every option of the choice or sequence ``t`` starts with ``need`` single
        fixed word bytes (looked at as built: a rule not built yet is no word)."""
        key = (t, need)
        found = self._word_starts.get(key)
        if found is None:
            store = self._store
            kind, a, b = store.kind, store.a, store.b
            found = False
            if kind[t] == ALT_K:
                found = all(self._starts_with_word(u, need) for u in b[t])  # type: ignore[union-attr]
            elif kind[t] == SEQ_K:
                e = a[t]
                mask = b[e]
                if kind[e] == BYTES_K and mask & _WORD_BYTES and mask.bit_count() == 1:  # type: ignore[operator,union-attr]
                    found = need == 1 or self._starts_with_word(b[t], need - 1)  # type: ignore[arg-type]
                elif kind[e] == ALT_K:
                    found = self._starts_with_word(e, need)  # type: ignore[arg-type]
            self._word_starts[key] = found
        return found
