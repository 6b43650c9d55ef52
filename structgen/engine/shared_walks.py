"""Walks over the hole shared by every constraint on one vocabulary, in this process, and the
filters of their exits.

The walk of a relative configuration (one top term over an unknown caller, the *hole*; see
``Constraint._relative_words``) depends on the top's language and on the vocabulary alone. The
JSON skeleton makes the same tops in every schema: the start ``{"``, the ``": "`` and ``", "``
between a key and a string value, the ``": {"`` before a nested object. But each compile has its
own term store, so equal tops of two constraints have different term ids. :class:`TermKeys` gives
each term of a store a process-wide *structural id* (equal structure, equal id; choices compare
as sets of options), and :func:`lookup` / :func:`remember` keep the walks' packed masks and
exits per (token trie, logit width, structural id).

Terms that hold a call of a rule, a token atom or a greedy lexeme get no structural id: what they
read depends on the grammar around them. A lazy rule in a top is built to find its structure.
Two different structures with one language simply miss each other.

Memory is bounded (``EngineTuning.shared_max_walks``, ``shared_max_structures``, as the
constraint that adds an entry says): walks (a packed mask each: 16 KB on Llama 3) and structural
ids; past the second, both tables start again empty (a new
generation, which every :class:`TermKeys` notices and forgets its ids; ids are never given twice,
so one kept from before names its one structure still).
"""

from __future__ import annotations

import threading

import numpy as np

from .. import caches
from .arrays import mask_to_bools
from .terms import ALT_K, BYTES_K, EMPTY_K, HAS_POSS, HAS_SYM, LAZY_K, NOTHING_K, REPEAT_K, TermStore
from .token_trie import TokenTrie
from .tuning import DEFAULT_ENGINE_TUNING

Exits = dict[int, tuple[np.ndarray, np.ndarray]]

_lock = threading.Lock()
_structures: dict[tuple[object, ...], int] = {}
_walks: dict[tuple[int, int, int], tuple[TokenTrie, np.ndarray, Exits]] = {}
#: (id of a walk's exits, first-byte bound) -> (those exits, the ones the bound reads)
_picks: dict[tuple[int, int], tuple[Exits, Exits]] = {}
_generation = 0
#: the next structural id: never given twice in a process, so an id a store kept from an earlier
#: generation still names its one structure (it just finds nothing)
_next_id = 0


class TermKeys:
    """Structural ids of one term store's terms (see the module docstring), remembered."""

    def __init__(
        self,
        store: TermStore,
        *,
        max_nodes: int = DEFAULT_ENGINE_TUNING.shared_max_nodes,
        max_structures: int = DEFAULT_ENGINE_TUNING.shared_max_structures,
    ) -> None:
        """``max_nodes``, ``max_structures``: ``EngineTuning.shared_max_nodes`` and
        ``shared_max_structures``."""
        self.store = store
        self.max_nodes = max_nodes
        self.max_structures = max_structures
        self._ids: dict[int, int | None] = {}
        self._generation = _generation
        self.new_terms = 0  # terms whose structure was looked at (a test measure)

    def of(self, t: int) -> int | None:
        """The structural id of term ``t``; None where it has none, or where more than
        ``max_nodes`` terms of it are new to this store (a large top, unlikely to recur)."""
        if self._generation != _generation:
            self._ids.clear()
            self._generation = _generation
        found = self._ids.get(t, -1)
        if found != -1:
            return found
        self._budget = self.max_nodes
        try:
            with _lock:
                return self._id(t, set())
        except _TooLarge:
            return None

    def _id(self, u: int, busy: set[int]) -> int | None:
        found = self._ids.get(u, -1)
        if found != -1:
            return found
        self._budget -= 1
        if self._budget < 0:
            raise _TooLarge
        try:
            r = self._id_of_new(u, busy)
        except _TooLarge:
            # every term on the way down holds the large part: none of them gets an id, and the
            # next top over the same rest stops at once
            self._ids[u] = None
            raise
        self._ids[u] = r
        return r

    def _id_of_new(self, u: int, busy: set[int]) -> int | None:
        self.new_terms += 1
        store = self.store
        k = store.kind[u]
        r: int | None = None
        if store.flags[u] & (HAS_SYM | HAS_POSS) or u in busy:
            pass  # calls, atoms and lexemes read what the grammar around them says; a rule in itself
        elif k == LAZY_K:
            # a built rule is its body; a rule in the top is built here, as the walk that follows
            # would build it (its first bytes are read at once) or the next walk past it
            busy.add(u)
            r = self._id(store.force(u), busy)
            busy.discard(u)
        elif k in (NOTHING_K, EMPTY_K, BYTES_K):
            r = _intern((k, store.b[u] if k == BYTES_K else None), self.max_structures)
        elif k == ALT_K:
            parts = [self._id(v, busy) for v in store.b[u]]  # type: ignore[attr-defined]
            if None not in parts:
                r = _intern((k, tuple(sorted(parts))), self.max_structures)  # type: ignore[type-var]
        elif k == REPEAT_K:
            x = self._id(store.a[u], busy)
            if x is not None:
                r = _intern((k, x, store.b[u]), self.max_structures)
        else:  # a sequence or a set operation
            x = self._id(store.a[u], busy)
            y = None if x is None else self._id(store.b[u], busy)  # type: ignore[arg-type]
            if y is not None:
                r = _intern((k, x, y), self.max_structures)
        return r


class _TooLarge(Exception):
    pass


def _intern(key: tuple[object, ...], max_structures: int) -> int:
    """The structural id of ``key`` (kind and the parts' ids; the caller holds the lock); past
    ``max_structures`` ids, the tables start a new generation."""
    global _next_id
    found = _structures.get(key)
    if found is None:
        if len(_structures) >= max_structures:
            _new_generation()
        found = _structures[key] = _next_id
        _next_id += 1
    return found


def _new_generation() -> None:
    global _generation
    _structures.clear()
    _walks.clear()
    _picks.clear()
    _generation += 1


def lookup(trie: TokenTrie, width: int, structure: int) -> tuple[np.ndarray, Exits] | None:
    """The packed mask and exits of the walk of a top with this structural id, if remembered."""
    with _lock:
        found = _walks.get((id(trie), width, structure))
    if found is None or found[0] is not trie:
        return None
    return found[1], found[2]


def remember(
    trie: TokenTrie,
    width: int,
    structure: int,
    words: np.ndarray,
    exits: Exits,
    *,
    max_walks: int = DEFAULT_ENGINE_TUNING.shared_max_walks,
) -> None:
    """Keep a walk's packed mask (read-only) and exits for the other constraints (at most
    ``max_walks``, first in, first out)."""
    with _lock:
        if len(_walks) >= max_walks:
            _walks.pop(next(iter(_walks)))
        _walks[(id(trie), width, structure)] = (trie, words, exits)


def exits_read_by(exits: Exits, bound: int, *, max_picks: int = DEFAULT_ENGINE_TUNING.shared_max_exit_picks) -> Exits:
    """The exits of a walk over the hole whose byte is in ``bound`` (a 256-bit set: the first
    bytes of what the hole stands for), remembered per (exits, bound) for the process (at most
    ``max_picks``): every key that starts with the same letter, in every constraint that shares
    the walk, shares the filter."""
    key = (id(exits), bound)
    found = _picks.get(key)
    if found is not None and found[0] is exits:
        return found[1]
    bits = mask_to_bools(bound)
    out: Exits = {}
    for k, (nodes, byts) in exits.items():
        keep = bits[byts]
        if keep.all():
            out[k] = (nodes, byts)
        elif keep.any():
            out[k] = (nodes[keep], byts[keep])
    with _lock:
        if len(_picks) >= max_picks:
            _picks.pop(next(iter(_picks)), None)
        _picks[key] = (exits, out)
    return out


def clear() -> None:
    """Forget every shared walk and structural id (tests; ``structgen.caches.clear``)."""
    with _lock:
        _new_generation()


def _held_bytes() -> int:
    with _lock:
        walks = [(words, exits) for _, words, exits in _walks.values()]
        picks = [out for _, out in _picks.values()]
        structures = list(_structures)
    return caches.deep_bytes((walks, picks, structures))


caches.register(
    "engine.shared_walks",
    entries=lambda: len(_walks) + len(_picks) + len(_structures),
    nbytes=_held_bytes,
    clear=clear,
    estimate="deep_bytes of the walks' masks and exits, the filtered exits and the structural ids",
)
