"""Compiled constraints shared across requests, one per (grammar, vocabulary fingerprint).

Compiling is cheap in the lazy engine, but what a constraint learns while serving requests -
automaton transitions and masks - is not: keeping the constraint lets the next request with the
same schema and model reuse all of it. A small LRU bounds the memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from .engine import Constraint

if TYPE_CHECKING:
    from .grammar import Grammar
    from .vocab import Vocab

#: Constraints kept; each holds its masks (up to ``EngineLimits.max_cached_masks``).
MAX_CONSTRAINTS = 32

_cache: OrderedDict[tuple[Grammar, str], Constraint] = OrderedDict()
_lock = threading.Lock()


def constraint_for(grammar: Grammar, vocab: Vocab) -> Constraint:
    """The cached :class:`~structgen.engine.Constraint` for ``grammar`` and ``vocab``."""
    key = (grammar, vocab.fingerprint)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    compiled = Constraint.compile(grammar, vocab)
    with _lock:
        hit = _cache.setdefault(key, compiled)
        _cache.move_to_end(key)
        while len(_cache) > MAX_CONSTRAINTS:
            _cache.popitem(last=False)
    return hit


def clear() -> None:
    """Forget every cached constraint."""
    with _lock:
        _cache.clear()
