"""Masks of counted repetitions without a full vocabulary walk.

Inside ``x{lo,hi}`` (a string with ``minLength``/``maxLength``, a digit count...) every count is
its own configuration, and without loops the token walk cannot accept subtrees in bulk: each
count would cost a full walk. But when the repeated unit ``x`` is *prefix-free* (no unit is a
proper prefix of another) and what follows cannot start like ``x`` (the exit is deterministic),
the mask at count ``i`` is the mask of the same position with an unbounded repetition, filtered
by how many units each token uses:

* a token that stays inside the repetition is allowed iff its units (a unit cut off at the end of
  the token counts) fit in the ``hi - i`` left;
* a token that leaves it is allowed iff it leaves after a number of units between what is still
  required and what is left - the rest of the token is checked by the unbounded mask.

The units of every token are found once per (unit, vocabulary) by a walk of the token trie through
the unit's small automaton; each counted configuration then costs a few vectorised numpy
operations.

The same holds in the middle of a unit (after the ``\\`` of a string escape, or the first byte of a
multi-byte character): the top term is then ``u' x{lo,hi} rest`` with ``u'`` a state of the unit's
automaton, and the unit counts are taken from that state, the rest of ``u'`` counting as a unit
that is already paid for. Without this, each such configuration was a full walk that could not
accept anything in bulk (no count loops): 4-10 ms per escape inside a ``maxLength`` string.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from .. import caches
from .arrays import fifo_put, mask_to_bools, ranges, stable_order, unique
from .masks import LITTLE_ENDIAN, SPARSE_PACK, pack_ids
from .terms import AND_K, HAS_POSS, HAS_SETOP, HAS_SYM, NOTHING, REPEAT_K, SEQ_K, TermStore, refine
from .token_trie import TokenTrie
from .tuning import DEFAULT_ENGINE_TUNING, EngineTuning


@dataclass(frozen=True, slots=True)  # one per configuration in a counted repetition: no __dict__
class CountedHead:
    """A configuration whose top term is ``x{lo,hi}`` (or ``other & x{lo,hi}``, a pattern with
    length bounds) followed by ``rest``; or ``partial x{lo,hi} rest``, where ``partial`` is what
    is left of a unit begun (a state of the unit's automaton, checked by the caller)."""

    unit: int
    lo: int
    hi: int | None
    rest: int
    other: int | None = None
    partial: int | None = None

    def unbounded(self, store: TermStore) -> int:
        """The same top term with the count lifted: its mask is the superset to filter."""
        loop = store.repeat(self.unit, 0, None)
        if self.other is not None:
            loop = store.and_(self.other, loop)
        top = store.seq(loop, self.rest)
        return top if self.partial is None else store.seq(self.partial, top)


def counted_head(store: TermStore, top: int, *, tuning: EngineTuning = DEFAULT_ENGINE_TUNING) -> CountedHead | None:
    """Recognise a counted repetition at the head of ``top`` (or right after a begun unit of at
    most ``tuning.max_partial_parts`` parts) that this module can handle."""
    top = store.force(top)
    found = _head_at(store, *_split(store, top))
    if found is not None or store.kind[top] != SEQ_K:
        return found
    # a begun unit: top = p1 (p2 (... (x{lo,hi} rest))); the caller checks that p1 p2 ... is a
    # state of x's automaton. Nothing is forced here: a lazy rule further on is built when a walk
    # reaches it, not before.
    parts: list[int] = []
    t = top
    while store.kind[t] == SEQ_K and len(parts) < tuning.max_partial_parts:
        parts.append(store.a[t])
        t = store.b[t]  # type: ignore[assignment]
        head, rest = (store.a[t], store.b[t]) if store.kind[t] == SEQ_K else (t, 1)
        if store.kind[head] == REPEAT_K:
            found = _head_at(store, head, rest, with_other=False)
            if found is None:
                return None
            return CountedHead(found.unit, found.lo, found.hi, found.rest, None, store.seq_list(parts))
    return None


def _split(store: TermStore, top: int) -> tuple[int, int]:
    if store.kind[top] == SEQ_K:
        return store.force(store.a[top]), store.b[top]  # type: ignore[return-value]
    return top, 1  # EMPTY


def _head_at(store: TermStore, head: int, rest: int, *, with_other: bool = True) -> CountedHead | None:
    other = None
    if store.kind[head] == AND_K and with_other:
        # a pattern intersected with length bounds: count the units, let the pattern loop
        a, b = store.force(store.a[head]), store.force(store.b[head])  # type: ignore[arg-type]
        if store.kind[b] == REPEAT_K:  # type: ignore[index]
            other, head = a, b  # type: ignore[assignment]
        elif store.kind[a] == REPEAT_K:
            other, head = b, a  # type: ignore[assignment]
        else:
            return None
        if store.flags[other] & (HAS_POSS | HAS_SYM):  # type: ignore[index]
            return None
        if store.kind[head] != REPEAT_K or not _ends_at_any_unit(store, other, store.a[head]):  # type: ignore[arg-type]
            return None
    if store.kind[head] != REPEAT_K:
        return None
    lo, hi = store.b[head]  # type: ignore[misc]
    if hi is None and lo <= 1 and other is None:
        return None  # an unbounded loop: the ordinary walk accepts it in bulk
    if hi is not None and hi <= 1 and other is None:
        # an optional unit (a number's exponent sign): no count to share a mask across, and
        # counting its units walks the whole vocabulary (11 ms for ``[+-]?`` on Llama 3)
        return None
    x = store.a[head]
    if store.flags[x] & (HAS_POSS | HAS_SYM | HAS_SETOP) or store.nullable[x]:
        return None
    if store.flags[rest] & HAS_POSS:  # type: ignore[index]
        return None
    # the store's first-byte sets are supersets, remembered per term: disjoint, they settle it
    # without deriving the rest of the document by every class (a new top at every count)
    if store.first_bytes(x) & store.first_bytes(rest) and _first_bytes(store, x) & _first_bytes(store, rest):  # type: ignore[arg-type]
        return None
    return CountedHead(x, lo, hi, rest, other)  # type: ignore[arg-type]


def _ends_at_any_unit(store: TermStore, pattern: int, unit: int, max_states: int = 2000) -> bool:
    """Whether ``pattern`` accepts at every unit boundary it can reach after one unit or more.

    Then the count alone decides a token: stopping is always possible, so a token that fits the
    units left never leaves the pattern needing more. (``[a-z ]+[0-9]`` fails this: after letters
    it still needs a digit, which the count must leave room for.)"""
    loop = store.repeat(unit, 0, None)
    start = (pattern, loop)
    seen = {start}
    todo = [start]
    while todo:
        p, u = todo.pop()
        for part in refine(store.classes(p), store.classes(u)):
            c = (part & -part).bit_length() - 1
            p2, u2 = store.deriv(p, c), store.deriv(u, c)
            if p2 == NOTHING or u2 == NOTHING:
                continue
            if u2 == loop and not store.nullable[p2]:
                return False
            if (p2, u2) not in seen:
                if len(seen) >= max_states:
                    return False
                seen.add((p2, u2))
                todo.append((p2, u2))
    return True


def _first_bytes(store: TermStore, t: int) -> int:
    mask = 0
    for part in store.classes(t):
        c = (part & -part).bit_length() - 1
        if store.deriv(t, c) != NOTHING:
            mask |= part
    return mask


@dataclass(frozen=True)
class UnitCounts:
    """Per token id: units used when staying in ``x*`` (-1: cannot stay) and units before leaving
    it (-1: does not leave at a unit boundary). ``stay_order`` / ``leave_order`` are every token
    id sorted by those counts (once per unit: each base configuration then selects its ids from
    them in one gather instead of sorting its own)."""

    stay: np.ndarray
    leave: np.ndarray

    def __post_init__(self) -> None:
        self.stay.flags.writeable = False  # shared by every constraint on the vocabulary
        self.leave.flags.writeable = False

    # sorted on first use (about 1 ms each on Llama 3): bases of a few ids sort themselves, and
    # most begun units' counts are only ever used that way
    @cached_property
    def stay_order(self) -> np.ndarray:
        # int32 ids: kept per (unit, begun state, vocabulary) for the process, 1 MB less each
        return stable_order(self.stay).astype(np.int32)

    @cached_property
    def leave_order(self) -> np.ndarray:
        return stable_order(self.leave).astype(np.int32)


@dataclass(frozen=True)
class UnitAutomaton:
    """Dense table of ``x*`` over bytes: state 0 is a unit boundary; entry ``-1`` leaves the
    repetition, ``-2`` is invalid (inside a unit), and ``>= 0`` moves on (``256 + s`` marks a
    completed unit, back at state 0). ``states`` maps each begun unit (a derivative of ``x``) to
    its state."""

    table: np.ndarray
    states: dict[int, int]


def unit_automaton(store: TermStore, x: int, *, tuning: EngineTuning = DEFAULT_ENGINE_TUNING) -> UnitAutomaton | None:
    """The automaton of ``x*`` (see :class:`UnitAutomaton`); None if ``x`` is not prefix-free or
    has more than ``tuning.max_unit_states`` states."""
    index = {x: 0}
    order = [x]
    rows: list[np.ndarray] = []
    i = 0
    while i < len(order):
        t = order[i]
        row = np.full(256, -2 if i else -1, dtype=np.int32)
        # states numbered in byte order, not in the order of the store's classes (which follows
        # term ids): the same unit then has the same table in every constraint, and its counts
        # are found in the memo below
        for part in sorted(store.classes(t), key=lambda p: p & -p):
            c = (part & -part).bit_length() - 1
            d = store.deriv(t, c)
            if d == NOTHING:
                continue
            if store.nullable[d]:
                if _first_bytes(store, d):
                    return None  # a complete unit that can go on: not prefix-free
                target = 256  # unit complete: back to the boundary
            else:
                if d not in index:
                    if len(order) >= tuning.max_unit_states:
                        return None
                    index[d] = len(order)
                    order.append(d)
                target = index[d]
            row[mask_to_bools(part)] = target
        rows.append(row)
        i += 1
    return UnitAutomaton(np.stack(rows), index)


#: Unit counts by (trie, unit automaton): the same unit (a JSON string character, an array item
#: of one shape) recurs across schemas, and its counts depend only on the automaton and the
#: vocabulary (15-20 ms per walk on Llama 3).
_COUNTS_MEMO: dict[tuple[int, bytes], tuple[TokenTrie, UnitCounts]] = {}
_counts_lock = threading.Lock()


def _counts_bytes(counts: UnitCounts) -> int:
    """Bytes of one memo entry: its two count arrays and the two orders sorted from them on first
    use (counted up front: they are made after the entry is kept)."""
    return 2 * (counts.stay.nbytes + counts.leave.nbytes)


def _memo_bytes() -> int:
    with _counts_lock:
        return sum(_counts_bytes(c) for _, c in _COUNTS_MEMO.values())


def _clear_memo() -> None:
    with _counts_lock:
        _COUNTS_MEMO.clear()


caches.register(
    "engine.unit_counts",
    entries=lambda: len(_COUNTS_MEMO),
    nbytes=_memo_bytes,
    clear=_clear_memo,
    estimate="per entry its count arrays and their sorted orders (int32 per token of the vocabulary)",
)


def count_units(
    table: np.ndarray, trie: TokenTrie, start: int = 0, *, tuning: EngineTuning = DEFAULT_ENGINE_TUNING
) -> UnitCounts:
    """Walk every token through the unit automaton ``table`` (see :func:`unit_automaton`) from
    state ``start``; remembered per (vocabulary trie, automaton, start) in this process.

    From a begun unit (``start > 0``) the counts are of the units after it: finishing the begun
    one is free, and a token that ends inside it uses none. The counts are the same under every
    tuning (``tuning.splice_begun`` decides how they are found)."""
    shape = bytes(f"{table.shape}/{start}", "ascii")
    key = (id(trie), np.ascontiguousarray(table, dtype=np.int64).tobytes() + shape)
    with _counts_lock:
        found = _COUNTS_MEMO.get(key)
        if found is not None and found[0] is trie:
            return found[1]
    if start and tuning.splice_begun:
        counts = _count_units(table, trie, start, count_units(table, trie, 0, tuning=tuning))
    else:
        counts = _count_units(table, trie, start)
    with _counts_lock:
        size, budget = _counts_bytes(counts), tuning.max_unit_counts_bytes
        if size <= budget:  # first in, first out, within the count and the bytes
            held = sum(_counts_bytes(c) for _, c in _COUNTS_MEMO.values()) + size
            while _COUNTS_MEMO and (len(_COUNTS_MEMO) >= tuning.max_unit_counts or held > budget):
                held -= _counts_bytes(_COUNTS_MEMO.pop(next(iter(_COUNTS_MEMO)))[1])
            _COUNTS_MEMO[key] = (trie, counts)
    return counts


def _count_units(table: np.ndarray, trie: TokenTrie, start: int, root: UnitCounts | None = None) -> UnitCounts:
    """The walk behind :func:`count_units`. With ``root`` (the counts from a unit boundary,
    for ``start > 0``): where the begun unit completes at a node ``x`` whose bytes, read from a
    unit boundary, also end at one after ``c`` units, every token below ``x`` has the counts
    from the boundary minus ``c``, plus the begun unit: the walk stops at ``x`` and takes them
    from ``root`` for the whole subtree at once. A begun unit completes within a few bytes
    (``\\u00e9``, a character's last byte), so the walk is a few levels instead of every token
    that goes on looping (14 ms to 2 ms on Llama 3)."""
    n = trie.n_tokens
    stay = np.full(n, -1, dtype=np.int32)
    leave = np.full(n, -1, dtype=np.int32)
    if trie.depth == 0:
        return UnitCounts(stay, leave)
    nodes = np.arange(trie.level_byte[0].size, dtype=np.int64)
    state = np.full(nodes.size, start, dtype=np.int32)
    units = np.zeros(nodes.size, dtype=np.int32)
    # bytes that are a whole unit from a boundary, as the trie's 256-bit sets
    single = np.packbits(table[0] == 256, bitorder="little").view(np.uint64)
    lengths = sorted_lengths(trie)
    # the same path read from a unit boundary: its state (-1: invalid or left) and units
    rstate = np.zeros(nodes.size, dtype=np.int32)
    runits = np.zeros(nodes.size, dtype=np.int32)
    for k in range(trie.depth):
        byts = trie.level_byte[k][nodes]
        step = table[state, byts]
        if root is not None:
            rstep = np.where(rstate >= 0, table[np.maximum(rstate, 0), byts], -1)
            rdone = rstep >= 256
            runits = runits + rdone
            rstate = np.where(rstep < 0, -1, np.where(rdone, rstep - 256, rstep))
            # the begun unit completes here, and the boundary reading is at a boundary too
            splice = (step == 256) & (rstate == 0)
            if splice.any():
                at = nodes[splice]
                starts = trie.run_start[k][at]
                sizes = trie.run_end[k][at] - starts
                ids = trie.sorted_ids[ranges(starts, sizes)]
                # minus the c units of the boundary reading, plus those of this one (the begun
                # unit and any completed before it)
                shift = np.repeat(runits[splice] - units[splice] - 1, sizes)
                stay[ids] = np.where(root.stay[ids] >= 0, root.stay[ids] - shift, -1)
                leave[ids] = np.where(root.leave[ids] >= 0, root.leave[ids] - shift, -1)
                keep = ~splice
                nodes, state, units, step = nodes[keep], state[keep], units[keep], step[keep]
                rstate, runits = rstate[keep], runits[keep]
                if nodes.size == 0:
                    break
        # leaving at a unit boundary: the whole subtree leaves after `units` units
        out = step == -1
        if out.any():
            starts = trie.run_start[k][nodes[out]]
            ids = trie.sorted_ids[ranges(starts, trie.run_end[k][nodes[out]] - starts)]
            leave[ids] = np.repeat(units[out], trie.run_end[k][nodes[out]] - starts)
        keep = step >= 0
        nodes, step, units = nodes[keep], step[keep], units[keep]
        rstate, runits = rstate[keep], runits[keep]
        done = step >= 256
        units = units + done
        state = np.where(done, step - 256, step)
        # at a unit boundary with only one-byte units below: every byte further is one unit
        bulk = (state == 0) & ~(trie.below[k][nodes] & ~single).any(axis=1)
        if bulk.any():
            starts = trie.run_start[k][nodes[bulk]]
            sizes = trie.run_end[k][nodes[bulk]] - starts
            positions = ranges(starts, sizes)
            stay[trie.sorted_ids[positions]] = np.repeat(units[bulk] - (k + 1), sizes) + lengths[positions]
            keep = ~bulk
            nodes, state, units, rstate, runits = nodes[keep], state[keep], units[keep], rstate[keep], runits[keep]
        # tokens ending here stay inside, a unit cut off at their end counts as used
        tc = trie.tok_count[k][nodes]
        ends = tc > 0
        if ends.any():
            ids = trie.sorted_ids[ranges(trie.tok_start[k][nodes[ends]], tc[ends])]
            stay[ids] = np.repeat(units[ends] + (state[ends] != 0), tc[ends])
        if k + 1 == trie.depth:
            break
        counts = trie.child_count[k][nodes]
        has = counts > 0
        if not has.any():
            break
        counts = counts[has]
        state = np.repeat(state[has], counts)
        units = np.repeat(units[has], counts)
        rstate = np.repeat(rstate[has], counts)
        runits = np.repeat(runits[has], counts)
        nodes = ranges(trie.child_start[k][nodes[has]], counts)
    if start:
        # the begun unit was counted when it began: a token's first completion is that unit
        # (state 0 is reached only by completing one, so every count here is at least 1)
        stay = np.where(stay > 0, stay - 1, -1).astype(np.int32)
        leave = np.where(leave > 0, leave - 1, -1).astype(np.int32)
    return UnitCounts(stay, leave)


def sorted_lengths(trie: TokenTrie) -> np.ndarray:
    """The byte length of each token in ``sorted_ids`` order (int32, once per trie)."""
    found = trie.__dict__.get("_sorted_lengths")
    if found is None:
        found = np.zeros(trie.sorted_ids.size, dtype=np.int32)
        for k in range(trie.depth):
            found[ranges(trie.tok_start[k], trie.tok_count[k].astype(np.int64))] = k + 1
        object.__setattr__(trie, "_sorted_lengths", found)
    return found  # type: ignore[no-any-return]


@dataclass(frozen=True)
class CountedBase:
    """The ids of an unbounded mask sorted by units used when staying and, apart, by units
    before leaving: the filter of any count is then two slices. A mask may be made of several
    (the tokens of a loop region, shared by every configuration with that loop, and the
    configuration's own tokens beyond it)."""

    stay_ids: np.ndarray
    stay_units: np.ndarray
    leave_ids: np.ndarray
    leave_units: np.ndarray
    #: packed masks of every id that can stay / leave, per (part, logit width), built on demand
    full_words: dict[tuple[str, int], np.ndarray] = field(default_factory=dict, compare=False)
    #: packed masks of a part's slices packed id by id, per (part, start, end, width): the ids
    #: that leave a string are one slice at every count that leaves room for all of them
    slice_words: dict[tuple[str, int, int, int], np.ndarray] = field(default_factory=dict, compare=False)
    #: filtered packed masks per (lo, hi, width), kept where the base is shared (a loop region's)
    bounded_words: dict[tuple[int, int, int], np.ndarray] | None = field(default=None, compare=False)

    @cached_property
    def stay_first(self) -> int:
        """Where the stay part's unit counts reach 0 (ids before cannot stay)."""
        return int(self.stay_units.searchsorted(np.int32(0), "left"))

    @cached_property
    def leave_first(self) -> int:
        """Where the leave part's unit counts reach 0 (ids before cannot leave)."""
        return int(self.leave_units.searchsorted(np.int32(0), "left"))

    @cached_property
    def top(self) -> int:
        """The most units any of its tokens counts (0 for none; remembered: every count of the
        base asks for it)."""
        if not self.stay_units.size:
            return 0
        return max(int(self.stay_units[-1]), int(self.leave_units[-1]), 0)


#: What the filters take: one sorted mask, or the sorted parts of one mask.
Bases = CountedBase | tuple[CountedBase, ...]


def counted_base(
    ids: np.ndarray, counts: UnitCounts, *, shared: bool = False, small_base: int = DEFAULT_ENGINE_TUNING.small_base
) -> CountedBase:
    """Sort the unbounded mask ``ids`` by their unit counts (once per base configuration, or
    once per loop region with ``shared``: its filtered masks are then kept too). Up to
    ``small_base`` ids (``EngineTuning.small_base``) are sorted, more selected from the
    vocabulary's order; both give the same base."""
    ids = ids[ids < counts.stay.size]
    if ids.size <= small_base:
        # a few ids (what a walk found beyond its loop region): sort them, not the vocabulary
        ids = unique(ids)
        stay_ids = ids[stable_order(counts.stay[ids])]
        leave_ids = ids[stable_order(counts.leave[ids])]
    else:
        member = np.zeros(counts.stay.size, dtype=bool)
        member[ids] = True
        # flatnonzero + take: numpy's boolean compress is several times slower at this size
        stay_ids = counts.stay_order[np.flatnonzero(member[counts.stay_order])]
        leave_ids = counts.leave_order[np.flatnonzero(member[counts.leave_order])]
    return CountedBase(
        stay_ids, counts.stay[stay_ids], leave_ids, counts.leave[leave_ids], bounded_words={} if shared else None
    )


def _parts(bases: Bases) -> tuple[CountedBase, ...]:
    return (bases,) if isinstance(bases, CountedBase) else bases


def filter_bounds(bases: Bases, head: CountedHead) -> tuple[int, int]:
    """``(lo, hi)`` of ``head`` clamped to the unit counts that occur in ``bases``: counts with
    equal bounds have equal filters (inside a ``maxLength: 200`` string, every count that
    leaves more units than any token holds has the unbounded mask)."""
    top = max(b.top for b in _parts(bases))
    big = top if head.hi is None else min(head.hi, top)
    return min(max(head.lo, 0), top + 1), big


def count_bounds(bases: Bases, head: CountedHead, most: int) -> list[tuple[int, int]] | None:
    """The distinct :func:`filter_bounds` of ``head``'s count and of every count after it
    (``x{lo-j,hi-j}`` for each ``j`` up to the last), or None where they are more than ``most``.
    Bounds clamp to the most units any token holds, so only the counts within that of ``lo`` or
    of ``hi`` are looked at (not a million counts of a ``maxLength: 1000000`` string)."""
    top = max(b.top for b in _parts(bases))
    steps = {0, *range(max(0, head.lo - top - 1), head.lo + 1)}
    if head.hi is not None:
        steps.update(range(max(0, head.hi - top - 1), head.hi + 1))
    found: set[tuple[int, int]] = set()
    for j in sorted(steps):
        hi = None if head.hi is None else head.hi - j
        found.add(filter_bounds(bases, replace(head, lo=max(head.lo - j, 0), hi=hi)))
        if len(found) > most:
            return None
    return sorted(found)


def filter_ids(bases: Bases, head: CountedHead) -> np.ndarray:
    """The ids of the unbounded mask that the counts of ``head`` allow: those that stay within
    the units left, and those that leave after between ``lo`` and the units left (an id may
    appear twice)."""
    lo, big = filter_bounds(bases, head)
    # int32 scalars: a Python int would make numpy convert the whole sorted array first
    lo32, big32 = np.int32(lo), np.int32(big)
    out = []
    for base in _parts(bases):
        s, lv = base.stay_units, base.leave_units
        out.append(base.stay_ids[s.searchsorted(np.int32(0), "left") : s.searchsorted(big32, "right")])
        out.append(base.leave_ids[lv.searchsorted(lo32, "left") : lv.searchsorted(big32, "right")])
    return np.concatenate(out)


def filter_words(
    bases: Bases,
    head: CountedHead,
    width: int,
    bounds: tuple[int, int] | None = None,
    *,
    tuning: EngineTuning = DEFAULT_ENGINE_TUNING,
) -> np.ndarray:
    """The packed mask of :func:`filter_ids`, without packing a near-full mask id by id: where
    a count keeps most of the unbounded mask (inside a long string, all but the few tokens
    longer than the units left), it is the packed mask of every id that can stay (or leave)
    with the bits of the few ids out of bounds cleared. ``bounds``: :func:`filter_bounds`,
    where the caller has them."""
    lo, big = filter_bounds(bases, head) if bounds is None else bounds
    out: np.ndarray | None = None
    for base in _parts(bases):
        words = _base_words(base, lo, big, width, tuning)
        out = words if out is None else np.bitwise_or(out, words)
    assert out is not None
    return out


def _base_words(base: CountedBase, lo: int, big: int, width: int, tuning: EngineTuning) -> np.ndarray:
    """One base's part of :func:`filter_words` (kept per bounds where the base is shared)."""
    key = (lo, big, width)
    memo = base.bounded_words
    if memo is not None:
        found = memo.get(key)
        if found is not None:
            return found
    big32 = np.int32(big)
    s, lv = base.stay_units, base.leave_units
    sa, sb = base.stay_first, int(s.searchsorted(big32, "right"))
    la, lb = max(int(lv.searchsorted(np.int32(lo), "left")), base.leave_first), int(lv.searchsorted(big32, "right"))
    s_out, l_out = (sa - base.stay_first) + (s.size - sb), (la - base.leave_first) + (lv.size - lb)
    if sb - sa <= max(s_out, SPARSE_PACK) and lb - la <= max(l_out, SPARSE_PACK):
        # both parts are packed id by id: one pack of both (a few units left of a short count)
        words = pack_ids(np.concatenate([base.stay_ids[sa:sb], base.leave_ids[la:lb]]), width)
    else:
        words = np.bitwise_or(
            _part_words(base, "stay", base.stay_ids, base.stay_first, sa, sb, s_out, width, tuning),
            _part_words(base, "leave", base.leave_ids, base.leave_first, la, lb, l_out, width, tuning),
        )
    if memo is not None:
        words.flags.writeable = False
        with _counts_lock:
            fifo_put(memo, key, words, tuning.max_bounded_words)
    return words


def _part_words(
    base: CountedBase,
    part: str,
    ids: np.ndarray,
    first: int,
    a: int,
    b: int,
    outside: int,
    width: int,
    tuning: EngineTuning,
) -> np.ndarray:
    """Packed ``ids[a:b]`` (unit counts ascending from ``first``, the first count >= 0, with
    ``first <= a``); ``outside`` ids of the part lie outside ``[a, b)``."""
    if b - a <= max(outside, SPARSE_PACK):
        key = (part, a, b, width)
        found = base.slice_words.get(key)
        if found is None:
            found = pack_ids(ids[a:b], width)
            with _counts_lock:
                fifo_put(base.slice_words, key, found, tuning.max_slice_words)
        return found  # only ever or-ed into a new mask: shared as it is
    full = base.full_words.get((part, width))
    if full is None:
        full = base.full_words[(part, width)] = pack_ids(ids[first:], width)
    if not outside:
        return full.copy()
    out = np.concatenate([ids[first:a], ids[b:]])
    if outside <= tuning.tiny_clear and LITTLE_ENDIAN:
        buf = bytearray(memoryview(np.ascontiguousarray(full)).cast("B"))
        for i in out.tolist():
            buf[i >> 3] &= ~(1 << (i & 7)) & 0xFF
        return np.frombuffer(buf, dtype=np.int32)
    if outside > tuning.many_clear:
        # many ids (the long tokens of a string near its end): and-not their own packed mask,
        # whose bool scatter costs less an id than ``bitwise_and.at``'s
        return np.bitwise_and(full, ~pack_ids(out, width))
    words = full.view(np.uint32).copy()
    out = out.astype(np.int64)
    np.bitwise_and.at(words, out >> 5, ~np.left_shift(np.uint32(1), (out & 31).astype(np.uint32)))
    return words.view(np.int32)
