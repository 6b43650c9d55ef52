"""The mask pipeline's one interface: a *mask source* answers for some configurations.

``Constraint._compute_mask`` is: the cache, then the sources in order (:data:`MaskSource`), then
the plain walk (``TransitionTable.walk_parts``), then the special tokens (end of sequence, token
atoms). A source, given a configuration id, gives

- a packed mask (read-only int32 words): the configuration's whole mask, special tokens included;
- a :class:`Partial`: packed words and token ids whose union is the mask of the configuration's
  text tokens, which the pipeline finishes (special tokens added, packed, cached);
- or None: not this source's case, the next one is asked.

The invariant every source keeps, and ``tests/test_engine_mask_sources.py`` checks for each one
along ``schemas/`` and MaskBench: an answer equals the plain walk's mask of the same position
(the mask under a tuning with every source's :attr:`MaskSource.switch` off). Each source reads its
switches and bounds from :class:`~structgen.engine.tuning.EngineTuning` and keeps its memos in
:class:`ByteMemo` tables under one :class:`ByteBudget`, which ``Constraint.memory_bytes`` counts.

The three thinnest sources are here: count twins (count_clamp.py) and precomputed positions
(ahead.py) hold their logic in their own modules, the union of stacks is a few lines. Counted
repetitions are counted_masks.py, walks over the hole relative_masks.py.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Protocol

import numpy as np

from ..caches import deep_bytes
from .ahead import PositionMasks
from .configs import ConfigSystem
from .count_clamp import CountClamp
from .loop_regions import LoopRegion
from .mask_store import MASK_ENTRY_BYTES, MaskPool
from .masks import pack_ids, pack_ids_onto
from .table import TransitionTable
from .terms import TermStore
from .token_trie import TokenTrie


class Walks(NamedTuple):
    """What the sources walk with: one constraint's configurations, terms, table, trie and width."""

    system: ConfigSystem
    store: TermStore
    table: TransitionTable
    trie: TokenTrie
    width: int


class Partial(NamedTuple):
    """Part of a mask: the bits of ``words`` (packed, read-only; None for none) and ``ids``."""

    words: np.ndarray | None
    ids: np.ndarray


Answer = np.ndarray | Partial


class MaskSource(Protocol):
    """One way of finding a configuration's mask other than walking it (see the module docstring)."""

    #: the ``EngineTuning`` field that turns the source off (None: it is on with ``mode="aot"``)
    switch: str | None

    def answer(self, cid: int) -> Answer | None:
        """The mask of ``cid``, a part of it, or None where the source does not apply."""
        ...

    def nbytes(self) -> int:
        """Bytes the source's memos hold (an estimate, counted by ``Constraint.memory_bytes``)."""
        ...


def region_words(region: LoopRegion | None, ids: np.ndarray, trie: TokenTrie, width: int) -> np.ndarray:
    """The packed mask of ``ids``, on the region's packed mask where a walk started from one."""
    return pack_ids(ids, width) if region is None else pack_ids_onto(region.words(trie, width), ids)


class ByteBudget:
    """The bytes the memos of one source hold together, and their bound."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0


class ByteMemo(dict[Any, Any]):
    """A memo that forgets its oldest entries (first in, first out) past ``max_entries``, or while
    the memos sharing its ``budget`` hold more than the budget's bytes. Read as a dict; written
    by :meth:`put` only, which counts the entry's bytes (:func:`structgen.caches.deep_bytes`).
    With a ``pool``, each value is a packed mask or a tuple whose first item is one: the mask is
    held once per distinct content (mask_store.py), and the pool's bytes count it, not the memo."""

    def __init__(self, budget: ByteBudget, max_entries: int, pool: MaskPool | None = None) -> None:
        super().__init__()
        self.budget = budget
        self.max_entries = max_entries
        self.pool = pool
        self._sizes: dict[Any, int] = {}

    def put(self, key: Any, value: Any) -> None:
        self.forget(key)
        size = deep_bytes(value)
        if self.pool is not None:
            words = value[0] if isinstance(value, tuple) else value
            shared = self.pool.intern(words)
            value = (shared,) + value[1:] if isinstance(value, tuple) else shared
            size += MASK_ENTRY_BYTES - words.nbytes
        budget = self.budget
        while self and (len(self) >= self.max_entries or budget.used + size > budget.limit):
            self.forget(next(iter(self)))
        self[key] = value
        self._sizes[key] = size
        budget.used += size

    def forget(self, key: Any) -> None:
        if key in self:
            value = self.pop(key)
            self.budget.used -= self._sizes.pop(key)
            if self.pool is not None:
                self.pool.release(value[0] if isinstance(value, tuple) else value)


class CountTwins:
    """Count twins (count_clamp.py). Invariant: a configuration whose counts one token cannot tell
    apart from a smaller one's (or whose frames below the deepest a token reaches differ) has its
    clamped twin's whole mask, which the pipeline computes (``mask_of``)."""

    switch = "count_twins"

    def __init__(self, clamp: CountClamp, mask_of: Callable[[int], np.ndarray]) -> None:
        self._clamp = clamp
        self._mask_of = mask_of

    def answer(self, cid: int) -> Answer | None:
        twin = self._clamp.config(cid)
        return None if twin == cid else self._mask_of(twin)

    def nbytes(self) -> int:
        return 0  # the twins' memos are the clamp's (count_clamp.py registers its process-wide part)


class StackUnion:
    """The union of a configuration's stacks. Invariant: a configuration steps as the union of
    its stacks' steps (``ConfigSystem.step``) and is dead only when all of them are, so a token
    is allowed from it exactly when it is allowed from one of its stacks alone; likewise the end
    of sequence (``accepting``) and each token atom. Its mask is the OR of the masks of its
    one-stack configurations, which the pipeline finds (``mask_of``) from the sources before this
    one: precomputed positions and walks over the hole where a compile ahead of time made them.
    Not for the walks over the hole's own configurations (a stack on the hole), and not where
    greedy lexemes filter masks by liveness (``enabled`` False): there a mask is not the union
    of its stacks' filtered masks by construction, only by an argument no test pins down."""

    switch = "stack_union"

    def __init__(self, system: ConfigSystem, mask_of: Callable[[int], np.ndarray], *, enabled: bool) -> None:
        self._system = system
        self._mask_of = mask_of
        self._enabled = enabled

    def answer(self, cid: int) -> Answer | None:
        system = self._system
        stacks = system.configs[cid]
        if len(stacks) < 2 or not self._enabled:
            return None
        parent = system.stack_parent
        for sid in stacks:
            while parent[sid] >= 0:  # a chain is walked to its bottom once per configuration
                sid = parent[sid]
            if parent[sid] != -1:
                return None  # on the hole: a walk over the hole's own configuration
        words = None
        for sid in stacks:
            one = self._mask_of(system.config([sid]))
            words = one.copy() if words is None else np.bitwise_or(words, one, out=words)
        assert words is not None
        words.flags.writeable = False
        return words

    def nbytes(self) -> int:
        return 0  # the stacks' masks are cached by the pipeline, not here


class PrecomputedPositions:
    """Masks a compile ahead of time computed (ahead.py), kept compact. Invariant: each was the
    pipeline's whole mask of its bottom position when it was computed."""

    switch = None

    def __init__(self, positions: PositionMasks) -> None:
        self._positions = positions

    def answer(self, cid: int) -> Answer | None:
        return self._positions.words(cid) if self._positions else None

    def nbytes(self) -> int:
        return self._positions.nbytes
