"""One token trie per vocabulary: built on first use, kept in memory and cached on disk."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from .. import caches
from .token_trie import TokenTrie, build_token_trie_from_buffer

if TYPE_CHECKING:
    from ..vocab import Vocab

TRIE_CACHE_KEY = "engine-token-trie-v4"
_memory: dict[str, TokenTrie] = {}
_lock = threading.Lock()


def _clear() -> None:
    with _lock:
        _memory.clear()


def _tries_bytes() -> int:
    with _lock:
        tries = list(_memory.values())
    return caches.deep_bytes(tries)


# one trie per vocabulary a process loads (as its Vocab is): held while any constraint on it
# lives, so clearing it here frees only what no constraint holds
caches.register(
    "engine.token_tries",
    entries=lambda: len(_memory),
    nbytes=_tries_bytes,
    clear=_clear,
    estimate="deep_bytes of the tries: their level arrays and what is kept on them (loop and run regions)",
)


def _build(vocab: Vocab) -> TokenTrie:
    return build_token_trie_from_buffer(vocab.buffer, vocab.offsets, np.asarray(vocab.is_text))


def token_trie_for(vocab: Vocab) -> TokenTrie:
    """The trie of ``vocab``'s text tokens (memory, then disk cache, then built)."""
    fp = vocab.fingerprint
    with _lock:
        trie = _memory.get(fp)
        if trie is not None:
            return trie
        from ..vocab.cache import cached_arrays

        arrays = cached_arrays(fp, TRIE_CACHE_KEY, lambda: _build(vocab).to_arrays())
        trie = TokenTrie.from_arrays(arrays)
        _memory[fp] = trie
        return trie
