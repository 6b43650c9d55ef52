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
from .arrays import mask_to_bools, ranges
from .token_trie import TokenTrie

#: Regions kept per vocabulary (one per distinct loop byte set met; each a few MB at most).
MAX_REGIONS = 64
#: Trimmed copies kept per region (one per set of root bytes that leave the loop elsewhere).
MAX_TRIMMED = 16
_lock = threading.Lock()
#: Slack of a token accepted in bulk under a multi-byte-character loop: it may end up to 3 bytes
#: short of the loop configuration it is reported with (made exact per token by the walk, from
#: the vocabulary's ``utf8_tail_missing``).
MULTIBYTE_SLACK = 3


@dataclass(frozen=True)
class LoopRegion:
    """What a walk from a configuration with these loops does before leaving them."""

    positions: np.ndarray  #: int64 positions in ``sorted_ids`` of the tokens accepted in the loop
    slack: np.ndarray  #: int32 per position: 3 where accepted under a multi-byte-character loop
    exits: dict[int, tuple[np.ndarray, np.ndarray]]  #: level -> (nodes int64, their bytes uint8)
    #: trimmed copies by the root bytes removed (:meth:`without_children`)
    trimmed: dict[int, LoopRegion] = field(default_factory=dict, compare=False, repr=False)
    #: level -> the bytes of its exits, as a 256-bit set: a walk skips the levels whose exit
    #: bytes are all dead from its configuration (the newline runs of 80-byte whitespace tokens
    #: inside a string body)
    exit_bytes: dict[int, int] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        masks = {}
        for k, (_, byts) in self.exits.items():
            bits = 0
            for b in np.unique(byts).tolist():
                bits |= 1 << b
            masks[k] = bits
        object.__setattr__(self, "exit_bytes", masks)

    def without_children(self, trie: TokenTrie, differ: int) -> LoopRegion:
        """This region with the tokens and exits under the root children whose bytes are in
        ``differ`` removed, and those children added as exits at level 0: the walk from a
        configuration one byte before the loop (table.py). Remembered per ``differ`` (an object
        that allows other keys meets the same trimmed key region at every key: about 1 ms each)."""
        found = self.trimmed.get(differ)
        if found is None:
            found = self._without_children(trie, differ)
            with _lock:
                if len(self.trimmed) >= MAX_TRIMMED:
                    self.trimmed.pop(next(iter(self.trimmed)), None)
                self.trimmed[differ] = found
        return found

    def _without_children(self, trie: TokenTrie, differ: int) -> LoopRegion:
        root_bytes = trie.level_byte[0]
        drop = np.flatnonzero(mask_to_bools(differ)[root_bytes])  # root nodes under which to drop
        if drop.size == 0:
            return self
        starts, ends = trie.run_start[0][drop], trie.run_end[0][drop]

        def outside(positions: np.ndarray) -> np.ndarray:
            # positions in sorted_ids; the dropped root children's runs are sorted and disjoint
            i = np.searchsorted(starts, positions, side="right") - 1
            inside = (i >= 0) & (positions < ends[np.maximum(i, 0)])
            return ~inside

        keep = outside(self.positions)
        exits: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for k, (nodes, byts) in self.exits.items():
            if k == 0:
                ok = ~mask_to_bools(differ)[byts]
            else:
                ok = outside(trie.run_start[k][nodes])
            exits[k] = (nodes[ok], byts[ok])
        level0 = exits.get(0, (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)))
        exits[0] = (
            np.concatenate([level0[0], drop.astype(level0[0].dtype)]),
            np.concatenate([level0[1], root_bytes[drop].astype(level0[1].dtype)]),
        )
        return LoopRegion(self.positions[keep], self.slack[keep], exits)


def loop_region(trie: TokenTrie, loops: int, utf8: bool, chars: bool = False) -> LoopRegion:
    """The region of ``loops`` (a 256-bit set of the bytes that loop) in ``trie``, cached on it.

    ``chars`` (with ``utf8``: every multi-byte character loops, its prefixes live): the region
    goes on through whole multi-byte characters too, so the walk has no exits at lead bytes.
    Tokens that end inside a character are accepted with the loop configuration reported as
    their end and a slack of :data:`MULTIBYTE_SLACK`, which the walk makes the bytes the
    character lacks."""
    cache: dict[tuple[int, bool, bool], LoopRegion] | None = trie.__dict__.get("_loop_regions")
    if cache is None:
        with _lock:
            cache = trie.__dict__.get("_loop_regions")
            if cache is None:
                cache = {}
                object.__setattr__(trie, "_loop_regions", cache)
    chars = chars and utf8
    key = (loops, utf8, chars)
    region = cache.get(key)
    if region is None:
        region = build_loop_region(trie, loops, utf8, chars=chars)
        if region is None:  # a token goes on inside a character with a byte none continues with
            region = loop_region(trie, loops, utf8)
        with _lock:
            if len(cache) >= MAX_REGIONS:
                cache.pop(next(iter(cache)))
            cache[key] = region
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


def build_loop_region(trie: TokenTrie, loops: int, utf8: bool, *, chars: bool = False) -> LoopRegion | None:
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
    return LoopRegion(positions, slack, exits)
