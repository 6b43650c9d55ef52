"""Compiled constraints shared across requests, one per (grammar, vocabulary fingerprint).

Compiling is cheap in the lazy engine, but what a constraint learns while serving requests -
automaton transitions and masks - is not: keeping the constraint lets the next request with the
same schema and model reuse all of it. A :class:`ConstraintCache` keeps them in LRU order,
bounded by a count and by the bytes its constraints hold (:meth:`Constraint.memory_bytes`, which
grows as they serve requests, so the bound is checked on every lookup). The constraint a lookup
returns is never the one evicted. :func:`constraint_for` uses the process's default cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .engine import Constraint
from .errors import LimitError

if TYPE_CHECKING:
    from .grammar import Grammar
    from .vocab import Vocab


@dataclass(frozen=True)
class ConstraintCacheTuning:
    """Bounds of a :class:`ConstraintCache`.

    ``max_constraints``: 32 covers the schemas of an agent's tool set, its response formats and
    the server's recent requests. ``max_bytes``: 2 GiB, half of one constraint's own default
    ``EngineLimits.max_memory_bytes``: a 24 GB machine serving with a model loaded keeps room.
    """

    max_constraints: int = 32
    max_bytes: int = 2 << 30

    def __post_init__(self) -> None:
        for name in ("max_constraints", "max_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise LimitError(f"{name} must be a positive integer, not {value!r}", limit=name)


class ConstraintCache:
    """An LRU of compiled constraints per (grammar, vocabulary), bounded in count and bytes."""

    def __init__(self, tuning: ConstraintCacheTuning = ConstraintCacheTuning()) -> None:
        self.tuning = tuning
        self._cache: OrderedDict[tuple[Grammar, str], Constraint] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, grammar: Grammar, vocab: Vocab) -> Constraint:
        """The cached constraint for ``grammar`` and ``vocab``, compiled on a miss."""
        key = (grammar, vocab.fingerprint)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self.hits += 1
                self._cache.move_to_end(key)
                self._evict()
                return hit
        compiled = Constraint.compile(grammar, vocab)
        with self._lock:
            self.misses += 1
            hit = self._cache.setdefault(key, compiled)
            self._cache.move_to_end(key)
            self._evict()
        return hit

    def _evict(self) -> None:
        cache = self._cache
        while len(cache) > self.tuning.max_constraints:
            cache.popitem(last=False)
        held = sum(c.memory_bytes() for c in cache.values())
        while len(cache) > 1 and held > self.tuning.max_bytes:
            _, oldest = cache.popitem(last=False)
            held -= oldest.memory_bytes()

    def stats(self) -> dict[str, int]:
        """Constraints held, their bytes, hits and misses."""
        with self._lock:
            held = sum(c.memory_bytes() for c in self._cache.values())
            return {"constraints": len(self._cache), "bytes": held, "hits": self.hits, "misses": self.misses}

    def clear(self) -> None:
        """Forget every cached constraint."""
        with self._lock:
            self._cache.clear()


#: The process's cache, used by every front end.
DEFAULT_CACHE = ConstraintCache()


def constraint_for(grammar: Grammar, vocab: Vocab) -> Constraint:
    """The :class:`~structgen.engine.Constraint` for ``grammar`` and ``vocab`` from the default cache."""
    return DEFAULT_CACHE.get(grammar, vocab)


def clear() -> None:
    """Forget every constraint of the default cache."""
    DEFAULT_CACHE.clear()
