"""The part of a token walk that stays inside a loop, computed once per loop byte set.

Where a walk starts at a configuration that loops on many bytes (inside a JSON string, a digit
run, whitespace), most of the trie nodes it visits are reached by looping: their configuration is
the start configuration, and what happens there depends only on which bytes loop (and on whether
every multi-byte character loops too), not on what the grammar expects after the loop. So that
part is computed once per (vocabulary, loop byte set, multi-byte flag) as a :class:`LoopRegion`:
the tokens it accepts (subtrees accepted in bulk, tokens ending on a looping path) and the
*exits*, the nodes on a looping path whose byte does not loop. A walk from any configuration with
the same loops takes the accepted tokens as they are and continues only from the exits, whose
configurations come from the configuration's own row: the walk of a string body then visits the
few hundred nodes after a quote or a backslash instead of the tens of thousands of nodes above
them. The result is the walk :class:`~.table.TransitionTable` would do node by node, in another
order.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from ..grammar.utf8 import utf8_sequences
from .arrays import fifo_put, mask_to_bools, ranges, unique
from .masks import pack_ids
from .terms import FULL_MASK
from .token_trie import TokenTrie
from .tuning import DEFAULT_ENGINE_TUNING, EngineTuning

_lock = threading.Lock()
#: Slack of a token accepted in bulk under a multi-byte-character loop: it may end up to 3 bytes
#: short of the loop configuration it is reported with (made exact per token by the walk, from
#: the vocabulary's ``utf8_tail_missing``).
MULTIBYTE_SLACK = 3


@dataclass(frozen=True)
class LoopRegion:
    """What a walk from a configuration with these loops does before leaving them."""

    #: int64 positions in ``sorted_ids`` of the tokens accepted in the loop, ascending (so the
    #: tokens under one trie node are a slice)
    positions: np.ndarray
    slack: np.ndarray  #: int32 per position: 3 where accepted under a multi-byte-character loop
    exits: dict[int, tuple[np.ndarray, np.ndarray]]  #: level -> (nodes int64 ascending, their bytes uint8)
    #: level -> the bytes of its exits, as a 256-bit set: a walk skips the levels whose exit
    #: bytes are all dead from its configuration (the newline runs of 80-byte whitespace tokens
    #: inside a string body); computed from ``exits`` when not given
    exit_bytes: dict[int, int] = field(default_factory=dict, compare=False, repr=False)
    #: trimmed copies by the root bytes removed (:meth:`without_children`)
    trimmed: dict[int, LoopRegion] = field(default_factory=dict, compare=False, repr=False)
    #: what masks built on this region reuse, computed once (:meth:`words`, :meth:`cached`)
    derived: dict[object, object] = field(default_factory=dict, compare=False, repr=False)
    #: the most trimmed copies and derived values kept (``EngineTuning.region_max_trimmed``,
    #: ``region_max_derived`` of the constraint whose walk built the region)
    max_trimmed: int = field(default=DEFAULT_ENGINE_TUNING.region_max_trimmed, compare=False, repr=False)
    max_derived: int = field(default=DEFAULT_ENGINE_TUNING.region_max_derived, compare=False, repr=False)

    def __post_init__(self) -> None:
        for k, (_, byts) in self.exits.items():
            if k not in self.exit_bytes:
                self.exit_bytes[k] = _byte_set(byts)

    def words(self, trie: TokenTrie, width: int) -> np.ndarray:
        """The packed mask of the tokens the region accepts (read-only, once per logit width):
        a walk from any configuration with these loops ORs its own tokens into a copy, instead
        of packing some 120,000 ids of a string body again."""
        key = ("words", width)
        found = self.derived.get(key)
        if found is None:
            found = pack_ids(trie.sorted_ids[self.positions], width)
            found.flags.writeable = False
            self.remember(key, found)
        return found  # type: ignore[return-value]

    def cached(self, key: object) -> object | None:
        return self.derived.get(key)

    def remember(self, key: object, value: object) -> None:
        with _lock:
            fifo_put(self.derived, key, value, self.max_derived)

    def without_children(self, trie: TokenTrie, differ: int) -> LoopRegion:
        """This region with the tokens and exits under the root children whose bytes are in
        ``differ`` removed, and those children added as exits at level 0: the walk from a
        configuration one byte before the loop (table.py). Remembered per ``differ`` (an object
        that allows other keys meets the same trimmed key region at every key)."""
        found = self.trimmed.get(differ)
        if found is None:
            found = self._without_children(trie, differ)
            with _lock:
                fifo_put(self.trimmed, differ, found, self.max_trimmed)
        return found

    def _without_children(self, trie: TokenTrie, differ: int) -> LoopRegion:
        root_bytes = trie.level_byte[0]
        differs = mask_to_bools(differ)
        drop = np.flatnonzero(differs[root_bytes])  # root nodes under which to drop
        if drop.size == 0:
            return self
        # the dropped root children's runs of sorted_ids are disjoint and ascending, and so are
        # the region's positions: dropping them is cutting out a few slices
        starts, ends = trie.run_start[0][drop], trie.run_end[0][drop]
        kept = _outside(self.positions, starts, ends)
        positions = np.concatenate([self.positions[i:j] for i, j in kept])
        slack = np.concatenate([self.slack[i:j] for i, j in kept])
        # the exits below level 0 are ordered by their subtrees' first positions too: the same
        # cut keeps those outside the dropped children
        first, levels, nodes, byts = self.exits_by_run(trie)
        pick = np.concatenate([np.arange(i, j) for i, j in _outside(first, starts, ends)])
        exits = exits_by_level(levels[pick], nodes[pick], byts[pick])
        exit_bytes = {
            k: self.exit_bytes[k] for k, (e_nodes, _) in exits.items() if e_nodes.size == self.exits[k][0].size
        }
        level0 = self.exits.get(0, (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)))
        ok0 = ~differs[level0[1]]
        nodes0 = np.concatenate([level0[0][ok0], drop.astype(level0[0].dtype)])
        order = np.argsort(nodes0, kind="stable")
        exits[0] = (nodes0[order], np.concatenate([level0[1][ok0], root_bytes[drop].astype(level0[1].dtype)])[order])
        return LoopRegion(
            positions, slack, exits, exit_bytes, max_trimmed=self.max_trimmed, max_derived=self.max_derived
        )

    def exits_by_run(self, trie: TokenTrie) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every exit below the root ordered by the first position of its subtree in
        ``sorted_ids``: ``(first positions, levels, nodes, bytes)``. The exits under one trie
        node are then one slice (once per region)."""
        found = self.derived.get("exits_by_run")
        if found is None:
            levels = [k for k in self.exits if k != 0]
            if levels:
                first = np.concatenate([trie.run_start[k][self.exits[k][0]] for k in levels])
                lv = np.concatenate([np.full(self.exits[k][0].size, k, dtype=np.int64) for k in levels])
                nodes = np.concatenate([self.exits[k][0] for k in levels])
                byts = np.concatenate([self.exits[k][1] for k in levels])
                order = np.argsort(first, kind="stable")
                found = (first[order], lv[order], nodes[order], byts[order])
            else:
                empty = np.zeros(0, dtype=np.int64)
                found = (empty, empty, empty, np.zeros(0, dtype=np.uint8))
            self.remember("exits_by_run", found)
        return found  # type: ignore[return-value]


def _outside(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int]]:
    """The slices of ``values`` (ascending) outside every ``[starts[i], ends[i])`` (disjoint,
    ascending)."""
    lo = np.searchsorted(values, starts).tolist()
    hi = np.searchsorted(values, ends).tolist()
    return list(zip([0] + hi, lo + [values.size]))


def exits_by_level(levels: np.ndarray, nodes: np.ndarray, byts: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Exits given in the order of :meth:`LoopRegion.exits_by_run`, grouped by level (within a
    level that order is the nodes' order)."""
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for level in unique(levels).tolist():
        at = levels == level
        out[level] = (nodes[at], byts[at])
    return out


def _byte_set(byts: np.ndarray) -> int:
    """The bytes of an array as a 256-bit set."""
    words = np.packbits(np.bincount(byts, minlength=256).astype(bool), bitorder="little").view(np.uint64).tolist()
    return words[0] | words[1] << 64 | words[2] << 128 | words[3] << 192


def _cache_on(trie: TokenTrie, name: str) -> dict:  # type: ignore[type-arg]
    """The dict kept on the (frozen) trie under ``name``, made on first use: regions belong to
    the vocabulary, so every constraint on it shares them."""
    cache = trie.__dict__.get(name)
    if cache is None:
        with _lock:
            cache = trie.__dict__.get(name)
            if cache is None:
                cache = {}
                object.__setattr__(trie, name, cache)
    return cache  # type: ignore[no-any-return]


def loop_region(
    trie: TokenTrie, loops: int, utf8: bool, chars: bool = False, *, tuning: EngineTuning = DEFAULT_ENGINE_TUNING
) -> LoopRegion:
    """The region of ``loops`` (a 256-bit set of the bytes that loop) in ``trie``, cached on it.

    ``chars`` (with ``utf8``: every multi-byte character loops, its prefixes live): the region
    goes on through whole multi-byte characters too, so the walk has no exits at lead bytes.
    Tokens that end inside a character are accepted with the loop configuration reported as
    their end and a slack of :data:`MULTIBYTE_SLACK`, which the walk makes the bytes the
    character lacks. At most ``tuning.max_loop_regions`` are kept per trie (first in, first out)."""
    cache: dict[tuple[int, bool, bool], LoopRegion] = _cache_on(trie, "_loop_regions")
    chars = chars and utf8
    key = (loops, utf8, chars)
    region = cache.get(key)
    if region is None:
        region = build_loop_region(trie, loops, utf8, chars=chars, tuning=tuning)
        if region is None:  # a token goes on inside a character with a byte none continues with
            region = loop_region(trie, loops, utf8, tuning=tuning)
        with _lock:
            fifo_put(cache, key, region, tuning.max_loop_regions)
    return region


def _utf8_steps() -> np.ndarray:
    """UTF-8 decoding as an ``(states, 256)`` int8 table: state 0 is a character boundary,
    where a lead byte moves to a partial character's state and any other byte gives -1; from a
    partial character, a continuation moves on (0 when the character is complete) and any other
    byte gives -2. Surrogates are not characters."""
    seqs = [tuple(seq) for seq in utf8_sequences(0x80, 0xD7FF) + utf8_sequences(0xE000, 0x10FFFF)]
    start = frozenset(seqs)
    index = {start: 0}
    order = [start]
    rows = []
    i = 0
    while i < len(order):
        row = np.full(256, -1 if i == 0 else -2, dtype=np.int8)
        for b in range(256):
            nxt = frozenset(seq[1:] for seq in order[i] if seq[0][0] <= b <= seq[0][1])
            if not nxt:
                continue
            if () in nxt:  # UTF-8 is prefix-free: a complete character is the only possibility
                row[b] = 0
                continue
            if nxt not in index:
                index[nxt] = len(order)
                order.append(nxt)
            row[b] = index[nxt]
        rows.append(row)
        i += 1
    return np.stack(rows)


_UTF8_STEPS = _utf8_steps()


def build_loop_region(
    trie: TokenTrie, loops: int, utf8: bool, *, chars: bool = False, tuning: EngineTuning = DEFAULT_ENGINE_TUNING
) -> LoopRegion | None:
    """Walk the nodes reachable from the root by looping bytes, with the walk's bulk rules: a
    node whose subtree holds only looping bytes is accepted whole, as is one whose subtree holds
    looping ASCII bytes and well-formed UTF-8 when ``utf8`` (every multi-byte character loops).
    With ``chars``, whole multi-byte characters count as looping (see :func:`loop_region`);
    None if some token holds a lead byte followed by a byte that does not continue it."""
    loop_words = np.asarray([(loops >> (64 * i)) & ((1 << 64) - 1) for i in range(4)], dtype=np.uint64)
    looping = mask_to_bools(loops)
    # steps[state, byte]: 0 back at the loop, > 0 inside a character, -1 an exit, -2 no region
    if chars:
        steps = _UTF8_STEPS.copy()
        steps[0][looping] = 0
    else:
        steps = np.where(looping, 0, -1).astype(np.int8)[None, :]
    runs: list[np.ndarray] = []
    slacks: list[np.ndarray] = []
    exits: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    nodes = np.arange(trie.level_byte[0].size, dtype=np.int64)
    byts = trie.level_byte[0]
    state = np.zeros(nodes.size, dtype=np.int8)
    for k in range(trie.depth):
        nxt = steps[state, byts]
        if chars and (nxt == -2).any():
            return None
        out = nxt < 0
        if out.any():
            exits[k] = (nodes[out], byts[out])
            nodes, nxt = nodes[~out], nxt[~out]
        if nodes.size == 0:
            break
        at_loop = nxt == 0
        outside = trie.below[k][nodes] & ~loop_words
        whole = ~outside.any(axis=1)
        if utf8:
            more = ~whole & trie.utf8_below[k][nodes] & ~outside[:, :2].any(axis=1)
        else:
            more = np.zeros(nodes.size, dtype=bool)
        bulk = (whole | more) & at_loop  # inside a character only its own bytes may follow
        if bulk.any():
            starts = trie.run_start[k][nodes[bulk]]
            counts = trie.run_end[k][nodes[bulk]] - starts
            runs.append(ranges(starts, counts))
            slacks.append(np.repeat(np.where(more[bulk], MULTIBYTE_SLACK, 0).astype(np.int32), counts))
            nodes, nxt, at_loop = nodes[~bulk], nxt[~bulk], at_loop[~bulk]
        tc = trie.tok_count[k][nodes]
        ends = tc > 0
        if ends.any():
            runs.append(ranges(trie.tok_start[k][nodes[ends]], tc[ends]))
            # a token ending inside a character: up to 3 bytes short of the loop
            slacks.append(np.repeat(np.where(at_loop[ends], 0, MULTIBYTE_SLACK).astype(np.int32), tc[ends]))
        if k + 1 == trie.depth:
            break
        counts = trie.child_count[k][nodes]
        has = counts > 0
        if not has.any():
            break
        counts = counts[has]
        state = np.repeat(nxt[has], counts)
        nodes = ranges(trie.child_start[k][nodes[has]], counts)
        byts = trie.level_byte[k + 1][nodes]
    positions = np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)
    slack = np.concatenate(slacks) if slacks else np.zeros(0, dtype=np.int32)
    order = np.argsort(positions)
    return LoopRegion(
        positions[order],
        slack[order],
        exits,
        max_trimmed=tuning.region_max_trimmed,
        max_derived=tuning.region_max_derived,
    )


_Exits = dict[int, tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class RunRegion:
    """Below one trie node, what a walk does inside a run of at most ``most`` bytes of one
    small set (a whitespace gap's ``[ \\t]{0,32}`` after a newline) followed by something that
    cannot start with them: the tokens that end inside the run, and the *exits*, the nodes whose
    byte is the first one after the run. Every count of the run steps those bytes the same way
    (as what follows the run does), so the walk takes the tokens as they are and steps the exits
    from the configuration after the run, instead of meeting one configuration per count."""

    positions: np.ndarray  #: int64 positions in ``sorted_ids`` of the tokens ending inside the run
    exits: dict[int, tuple[np.ndarray, np.ndarray]]  #: level -> (nodes int64, their bytes uint8)
    #: level -> the bytes of its exits, as a 256-bit mask
    exit_bytes: dict[int, int] = field(default_factory=dict, compare=False, repr=False)
    #: exits_within's answers, per mask of bytes
    _within: dict[int, _Exits] = field(default_factory=dict, compare=False, repr=False)
    #: the most of them kept (``EngineTuning.run_max_within``)
    max_within: int = field(default=DEFAULT_ENGINE_TUNING.run_max_within, compare=False, repr=False)

    def exits_within(self, live: int) -> _Exits:
        """The exits whose byte is in ``live`` (a 256-bit mask): the others are dead from any
        configuration that reads only those bytes, and need no step (a whitespace gap before a
        key keeps the few levels where a quote follows the newline and spaces, of the 30-odd
        levels of indented tokens). Remembered per mask."""
        if live == FULL_MASK:
            return self.exits
        found = self._within.get(live)
        if found is None:
            found = {}
            keep = None
            for level, (nodes, byts) in self.exits.items():
                present = self.exit_bytes[level]
                if not present & live:
                    continue
                if present & ~live:
                    if keep is None:
                        keep = mask_to_bools(live)
                    inside = keep[byts]
                    nodes, byts = nodes[inside], byts[inside]
                found[level] = (nodes, byts)
            with _lock:
                fifo_put(self._within, live, found, self.max_within)
        return found


def run_region(
    trie: TokenTrie,
    level: int,
    node: int,
    unit: int,
    most: int | None,
    *,
    tuning: EngineTuning = DEFAULT_ENGINE_TUNING,
) -> RunRegion:
    """The :class:`RunRegion` below ``node`` (at ``level``) of runs of the bytes in ``unit``
    (a 256-bit set) of at most ``most`` bytes (None: any length), cached on the trie (at most
    ``tuning.max_run_regions``, first in, first out)."""
    cache: dict[tuple[int, int, int, int | None], RunRegion] = _cache_on(trie, "_run_regions")
    key = (level, node, unit, most)
    found = cache.get(key)
    if found is not None:
        return found
    in_unit = mask_to_bools(unit)
    runs: list[np.ndarray] = []
    exits: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    exit_bytes: dict[int, int] = {}
    frontier = np.asarray([node], dtype=np.int64)
    k, depth = level, 0
    while frontier.size and k + 1 < trie.depth:
        counts = trie.child_count[k][frontier]
        has = counts > 0
        if not has.any():
            break
        children = ranges(trie.child_start[k][frontier[has]], counts[has])
        byts = trie.level_byte[k + 1][children]
        inside = in_unit[byts]
        if not inside.all():
            exits[k + 1] = (children[~inside], byts[~inside])
            exit_bytes[k + 1] = _byte_set(byts[~inside])
        depth += 1
        k += 1
        if most is not None and depth > most:
            break  # one more byte of the run than the count allows: dead
        frontier = children[inside]
        tc = trie.tok_count[k][frontier]
        ends = tc > 0
        if ends.any():
            runs.append(ranges(trie.tok_start[k][frontier[ends]], tc[ends]))
    positions = np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)
    found = RunRegion(positions, exits, exit_bytes, max_within=tuning.run_max_within)
    with _lock:
        fifo_put(cache, key, found, tuning.max_run_regions)
    return found
