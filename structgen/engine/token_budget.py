"""Shortest completions counted in tokens of the vocabulary, for budget masks.

A budget mask (``State.mask_words(budget=k)``) allows a token only when, after it, the sentence
can still be closed within the ``k - 2`` tokens left (the token itself and the end-of-sequence
token are the other two). Counting bytes is safe where every byte is a token, but it refuses
what fits: ``{"name":"","age":0,"active":false}`` is 32 bytes and 11 tokens of SmolLM2.

:meth:`TokenCounter.tokens` gives, for a configuration ``u``, ``T(u)``: the fewest tokens of
this vocabulary that spell ``s(u)``, a *canonical* shortest byte completion of ``u``. ``s(u)``
is built greedily: the first byte, in a fixed order of preference (``TokenBudgetTuning``),
after which the shortest completion is one byte shorter, then the same from there. So

* ``T(u)`` is achievable: any tokenization of a valid byte string into text tokens is a valid
  token path, so a model can close ``u`` in ``T(u)`` tokens;
* ``s`` is closed under suffixes (the greedy choice depends on the configuration only), so with
  ``t1 ... tn`` a fewest-token spelling of ``s(u)``, the configuration after ``t1`` has ``s``
  equal to the rest of ``s(u)`` and ``T`` at most ``n - 1``. A mask that allows a token when
  ``T`` after it fits therefore always allows a next token that fits (``t1``): a model that
  follows the masks ends validly, whatever it samples. An upper bound alone (``T`` of another
  shortest completion, or a cheaper over-estimate) would not: the next step could find no token
  whose own bound fits. ``s(u)`` is also a function of the language after ``u`` (the smallest
  shortest completion in the preference order), so configurations that the engine treats as
  equal for masks (count twins, the unbounded repetition of a string under ``maxLength``) get
  the same ``T``.
* ``T(u) <= shortest(u)`` bytes where every byte has a single-byte token (one spelling is byte by
  byte), so a budget that is plentiful in bytes (budget_bound.py) is plentiful in tokens. A
  vocabulary may lack bytes that no token holds at all (SmolLM2 lacks 21: control characters
  such as 0x04 and bytes that never occur in UTF-8, or only above U+3FFFF); no model can write
  those, so they come last in the preference, and a configuration whose every shortest
  completion needs one is a dead end for the plain masks as much as for budgets: the bound is
  taken to hold there too (``TokenCounter.bytes_bound_tokens``).

The spelling is a dynamic program over ``s(u)`` read through the token trie: ``T`` at position
``i`` is one more than the least ``T`` at ``i + len(t)`` over the tokens ``t`` that start there.
Every configuration on the path gets its ``T`` at once (they are its suffixes), and a path that
meets one known before stops its program there. A configuration whose shortest completion is
longer than ``max_text_bytes`` is not spelled: it counts one token per byte (achievable, and
closed the same way: the single-byte token of ``s``'s first byte leaves at most one byte less),
or none where a byte some token holds is no token by itself.

Tokens used: text tokens in the trie, below the logit width, not end-of-sequence tokens (which
end the output where the grammar accepts). A grammar with token atoms is not spelled: the
constraint keeps byte figures for it, each atom counted as one (it is exactly one token, where a
byte is at most one), so those figures still bound the tokens a completion needs
(constraint.py).
"""

from __future__ import annotations

import string
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .arrays import fifo_put
from .configs import DEAD, ConfigSystem
from .token_trie import TokenTrie


def _default_preference() -> bytes:
    # a space and lower-case letters first: in byte-level vocabularies runs of them merge into
    # long tokens (filler for a ``minLength``), then digits, the rest of ASCII, then the rest
    first = b" " + string.ascii_lowercase.encode() + string.digits.encode() + string.ascii_uppercase.encode()
    rest = bytes(b for b in range(256) if b not in first)
    return first + rest


@dataclass(frozen=True)
class TokenBudgetTuning:
    """How canonical completions are chosen and how long they may be."""

    #: A configuration whose shortest completion is longer than this many bytes counts a token
    #: per byte instead of being spelled: a hostile ``minLength`` of 100,000 would otherwise make
    #: a configuration per byte of its completion. 512 covers every shortest completion of the
    #: benchmark's schemas (the longest is 290 bytes, ``wide_object``).
    max_text_bytes: int = 512
    #: Bytes in order of preference where a shortest completion has a choice (a permutation of
    #: all 256 bytes).
    preference: bytes = field(default_factory=_default_preference)

    def __post_init__(self) -> None:
        if sorted(self.preference) != list(range(256)):
            raise ValueError("preference must hold each of the 256 bytes once")
        if self.max_text_bytes < 0:
            raise ValueError("max_text_bytes must be >= 0")


DEFAULT_TOKEN_BUDGET_TUNING = TokenBudgetTuning()


class _TrieSpeller:
    """The lengths of the usable tokens that start at a position of a text, by the trie."""

    def __init__(self, trie: TokenTrie, usable: np.ndarray) -> None:
        self._views = trie.views() if trie.depth else []
        self._depth = trie.depth
        # per level, whether some usable token ends at the node
        sorted_usable = usable[trie.sorted_ids] if trie.sorted_ids.size else np.zeros(0, dtype=bool)
        running = np.concatenate([[0], np.cumsum(sorted_usable, dtype=np.int64)])
        self._ends: list[memoryview] = []
        for k in range(trie.depth):
            ts, tc = trie.tok_start[k], trie.tok_count[k].astype(np.int64)
            has = (running[ts + tc] - running[ts]) > 0
            self._ends.append(memoryview(has.astype(np.uint8)))
        self._root = [-1] * 256
        if trie.depth:
            for node, b in enumerate(trie.level_byte[0].tolist()):
                self._root[b] = node
        #: the byte values that are a usable token by themselves
        self.single = frozenset(b for b in range(256) if self._root[b] >= 0 and self._ends[0][self._root[b]])
        #: the byte values some text token holds (the only ones a model can write)
        held = 0
        if trie.depth:
            words = np.bitwise_or.reduce(trie.below[0], axis=0) if trie.below[0].size else np.zeros(4, np.uint64)
            held = sum(int(w) << (64 * i) for i, w in enumerate(words.tolist()))
            for b in trie.level_byte[0].tolist():
                held |= 1 << b
        self.held = frozenset(b for b in range(256) if held >> b & 1)

    def lengths(self, text: bytes | bytearray, i: int, end: int) -> list[int]:
        """Lengths ``n`` such that ``text[i:i+n]`` is a usable token, ``i + n <= end``."""
        out: list[int] = []
        node = self._root[text[i]]
        k = 0
        views, ends = self._views, self._ends
        while node >= 0:
            if ends[k][node]:
                out.append(k + 1)
            if i + k + 1 >= end or k + 1 >= self._depth:
                break
            v = views[k]
            start, count = v.child_start[node], v.child_count[node]
            if not count:
                break
            b = text[i + k + 1]
            below = views[k + 1].byte
            j = bisect_left(below, b, start, start + count)
            node = j if j < start + count and below[j] == b else -1
            k += 1
        return out


class TokenCounter:
    """Per constraint: ``T(u)`` of configurations (module docstring), cached and bounded."""

    def __init__(
        self,
        system: ConfigSystem,
        step: Callable[[int, int], int],
        trie: TokenTrie,
        usable: np.ndarray,
        *,
        max_cached: int,
        tuning: TokenBudgetTuning = DEFAULT_TOKEN_BUDGET_TUNING,
    ) -> None:
        self._system = system
        self._step = step
        self._speller = _TrieSpeller(trie, np.asarray(usable, dtype=bool))
        self._max_cached = max(1, max_cached)
        self._tuning = tuning
        single = self._speller.single
        # bytes that are no token by themselves last: a canonical completion uses one only where
        # every shortest completion does
        self._preference = bytes(b for b in tuning.preference if b in single) + bytes(
            b for b in tuning.preference if b not in single
        )
        self._tokens: dict[int, int | None] = {}
        #: configuration -> (byte, next configuration) of its canonical completion
        self._next: dict[int, tuple[int, int] | None] = {}

    @property
    def bytes_bound_tokens(self) -> bool:
        """Whether every byte that some token holds is a usable token by itself. Then ``T(u)``
        is at most the bytes of ``u`` wherever ``s(u)`` can be spelled at all: a byte outside
        the tokens is one no model can write, and a configuration whose shortest completions
        all need one is a dead end of the plain masks as much as of the budget's."""
        return self._speller.held <= self._speller.single

    def tokens(self, cid: int) -> int | None:
        """``T(cid)``: tokens of the canonical shortest completion (None: no completion)."""
        found = self._tokens.get(cid, False)
        if found is not False:
            return found  # type: ignore[return-value]
        d = self._system.shortest(cid)
        if d is None:
            value = None
        elif d > self._tuning.max_text_bytes:
            value = d if self.bytes_bound_tokens else None
        else:
            return self._spell(cid, d)
        self._remember(cid, value)
        return value

    def _spell(self, cid: int, d: int) -> int | None:
        """``T`` along the canonical completion of ``cid`` (``d`` bytes long), remembered for
        every configuration on it."""
        configs = [cid]
        text = bytearray()
        known: dict[int, int | None] = {}
        cur = cid
        for left in range(d, 0, -1):
            step = self._next_of(cur, left)
            if step is None:
                return self._fail(configs)
            text.append(step[0])
            cur = step[1]
            configs.append(cur)
            hit = self._tokens.get(cur, False)
            if hit is not False:
                known[len(configs) - 1] = hit  # type: ignore[assignment]
        if not self._system.accepting(cur):
            return self._fail(configs)
        best: list[int | None] = [None] * (d + 1)
        best[d] = 0
        for i in range(d - 1, -1, -1):
            if i in known:
                best[i] = known[i]
                continue
            low: int | None = None
            for n in self._speller.lengths(text, i, d):
                after = best[i + n]
                if after is not None and (low is None or after + 1 < low):
                    low = after + 1
            best[i] = low
            self._remember(configs[i], low)
        self._remember(configs[d], 0)
        return best[0]

    def _fail(self, configs: list[int]) -> None:
        for c in configs:
            self._remember(c, None)
        return None

    def _next_of(self, cid: int, left: int) -> tuple[int, int] | None:
        """The first byte of ``cid``'s canonical completion (``left`` bytes long) and the
        configuration after it."""
        found = self._next.get(cid, False)
        if found is not False:
            return found  # type: ignore[return-value]
        system, step = self._system, self._step
        result = None
        run = system.literal_run(cid)
        candidates = run[0][:1] if run is not None else self._preference
        bound = system.first_bytes_bound(cid)
        for b in candidates:
            if not bound >> b & 1:
                continue
            nxt = step(cid, b)
            if nxt != DEAD and system.shortest(nxt) == left - 1:
                result = (b, nxt)
                break
        fifo_put(self._next, cid, result, self._max_cached)
        return result

    def _remember(self, cid: int, value: int | None) -> None:
        fifo_put(self._tokens, cid, value, self._max_cached)


def multibyte_ends(
    token_ids: np.ndarray,
    ends: np.ndarray,
    slack: np.ndarray,
    token_bytes: Callable[[int], bytes],
    step_bytes: Callable[[int, bytes], int],
) -> np.ndarray:
    """Exact end configurations for a walk's tokens: a token accepted in bulk under a
    multi-byte-character loop is reported with the loop's configuration and the bytes its last
    character lacks (``slack``); its end is the loop's configuration stepped by that unfinished
    character's bytes (one step per distinct loop and tail, not per token)."""
    short = np.flatnonzero(slack > 0)
    if short.size == 0:
        return ends
    out = ends.astype(np.int64, copy=True)
    memo: dict[tuple[int, bytes], int] = {}
    for pos in short.tolist():
        data = token_bytes(int(token_ids[pos]))
        start = len(data) - 1
        while start > 0 and data[start] & 0xC0 == 0x80:
            start -= 1
        key = (int(ends[pos]), data[start:])
        end = memo.get(key)
        if end is None:
            end = memo[key] = step_bytes(key[0], key[1])
        out[pos] = end
    return out
