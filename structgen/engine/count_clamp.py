"""Large repetition counts that one token cannot tell apart: configurations that share a mask.

``maxItems: 30`` makes the parse configuration inside item 3 differ from the one inside item 4
(27 items may follow, then 26), so each item would walk the token trie again for the same mask.
A mask only looks one token ahead, and one token completes few units of a repetition: every
string of a unit ``x`` contains each of its *required bytes* (bytes that occur in every string of
``x``) at least ``copies(r)`` times, so the whole units a token holds inside ``x{lo,hi}`` are at
most ``limit(r) // copies(r)``, where ``limit(r)`` is the most times ``r`` occurs in one token of
the vocabulary. With ``B = min over r of limit(r) // copies(r) + 1``, the counts ``lo`` and ``hi``
can be replaced by ``min(lo, B)`` and ``min(hi, B)`` without changing which tokens are allowed:

* a token that completes ``j < B`` units (and may begin one more) fits in both (``hi`` and
  ``min(hi, B)`` are both > ``j``);
* it may leave the repetition after ``j`` units in one exactly when it may in the other (``lo <= j``
  and ``min(lo, B) <= j`` agree since ``j < B``);
* what remains is satisfiable in both, and the end of input is allowed in both or in neither
  (``lo == 0`` exactly when ``min(lo, B) == 0``).

:class:`CountClamp` rewrites a configuration that way (every stack, every frame; counts inside set
operations, greedy lexemes and calls are left alone, so their languages do not change), and the
constraint computes the mask of the clamped configuration instead: one walk for all the counts
at or above ``B``. Commits still follow the exact configuration. Masks with a token budget
(:meth:`~structgen.engine.constraint.Constraint.mask_words_within`) depend on the shortest
completion, which depends on ``lo``: they do not use this.

Measured on Llama 3: ``limit`` is 8 for ``,`` and 4 for ``"`` (128,256 tokens); an item of an
array of strings has two quotes, so ``B`` is 3 and every item but the last three shares one mask
(the last five before copies were counted). Each byte's limit is one pass over the
vocabulary's bytes (about 1 ms), done the first time a unit requires that byte.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .. import caches
from .configs import ConfigSystem
from .terms import ALT_K, AND_K, BYTES_K, DIFF_K, HAS_COUNT, LAZY_K, POSS_K, REPEAT_K, SEQ_K, TermStore
from .tuning import DEFAULT_ENGINE_TUNING, EngineTuning

if TYPE_CHECKING:
    from ..vocab import Vocab


def max_byte_count(buffer: np.ndarray, lengths: np.ndarray, byte: int, counted: np.ndarray | None = None) -> int:
    """The most times ``byte`` occurs in one token, for tokens stored back to back in
    ``buffer`` with the given ``lengths`` (only the tokens ``counted`` marks, if given)."""
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    return _max_count(buffer, ends, byte, counted)


def _max_count(buffer: np.ndarray, ends: np.ndarray, byte: int, counted: np.ndarray | None) -> int:
    total = int(ends[-1]) if ends.size else 0
    where = np.flatnonzero(np.asarray(buffer[:total]) == byte)
    token = np.searchsorted(ends, where, side="right")  # the token each occurrence is in
    if counted is not None:
        token = token[counted[token]]
    return int(np.bincount(token).max()) if token.size else 0


class ByteLimits:
    """Per vocabulary: :func:`max_byte_count` over its text tokens, byte by byte on demand (a
    schema needs the few bytes its repeated units require: ``,`` ``"`` ``{`` ``}``...; about
    1 ms each on Llama 3)."""

    def __init__(self, vocab: Vocab) -> None:
        offsets = np.asarray(vocab.offsets)
        self._buffer = vocab.buffer[int(offsets[0]) :]
        self._ends = offsets[1:] - offsets[0]
        self._text = np.asarray(vocab.is_text)
        self._known: dict[int, int] = {}
        self._lock = threading.Lock()

    def __call__(self, byte: int) -> int:
        found = self._known.get(byte)
        if found is None:
            with self._lock:
                found = self._known[byte] = _max_count(self._buffer, self._ends, byte, self._text)
        return found


_memory: dict[str, ByteLimits] = {}
_lock = threading.Lock()


def _limits_bytes() -> int:
    with _lock:
        held = list(_memory.values())
    # the token ends (int64 per token) and the bytes found; the buffer is the vocabulary's own
    return sum(int(b._ends.nbytes) + 100 * len(b._known) for b in held)


def _clear_limits() -> None:
    with _lock:
        _memory.clear()


caches.register(
    "engine.byte_limits",
    entries=lambda: len(_memory),
    nbytes=_limits_bytes,
    clear=_clear_limits,
    estimate="per vocabulary its token ends and the counts found (its bytes are the vocabulary's)",
)


def byte_limits_for(vocab: Vocab) -> ByteLimits:
    """The :class:`ByteLimits` of ``vocab`` (one per vocabulary fingerprint in this process)."""
    fp = vocab.fingerprint
    with _lock:
        found = _memory.get(fp)
        if found is None:
            found = _memory[fp] = ByteLimits(vocab)
        return found


#: bytes probed first (``EngineTuning.clamp_probes`` says how many)
_PREFERRED = b'{}[]",:'
#: :meth:`CountClamp._punctuation_counts` of a term with none, and of each single byte of them
_NO_PUNCTUATION = (0,) * len(_PREFERRED)
_ONE_PUNCTUATION = {b: tuple(int(i == j) for j in range(len(_PREFERRED))) for i, b in enumerate(_PREFERRED)}


class CountClamp:
    """Per constraint: the clamped twin of each configuration (see the module docstring)."""

    def __init__(
        self,
        system: ConfigSystem,
        byte_limit: Callable[[], Callable[[int], int]],
        *,
        keep_lengths: bool = False,
        tuning: EngineTuning = DEFAULT_ENGINE_TUNING,
    ) -> None:
        """``keep_lengths``: twins with the same shortest completions, for the budget's figures:
        only upper counts are clamped (a shortest completion uses ``lo`` units) and no frame is
        dropped (a completion closes every frame). With ``tuning.count_twins`` off every
        configuration is its own twin."""
        self.keep_lengths = keep_lengths
        self._probe_count = tuning.clamp_probes
        self._twins = tuning.count_twins
        self.system = system
        self.s: TermStore = system.store
        self._load_limit = byte_limit  # the vocabulary's counts, looked up when first needed
        self._limit: Callable[[int], int] | None = None
        self._required: dict[int, int] = {}
        self._counts: dict[int, tuple[int, ...]] = {}
        self._provisional_values: dict[object, dict[int, int]] = {}
        self._provisional_at = -1
        self._bound: dict[int, int | None] = {}
        self._term: dict[int, int] = {}
        self._stack: dict[int, int] = {}
        self._config: dict[int, int] = {}
        self._kept: dict[int, int] = {}  # caller chain -> frames of it a twin keeps
        self._kept_at = -1
        self._chain: dict[tuple[int, int], int] = {}  # (chain, frames) -> the clamped chain

    def byte_limit(self, byte: int) -> int:
        """The most copies of ``byte`` in one token of the vocabulary."""
        if self._limit is None:
            self._limit = self._load_limit()
        return self._limit(byte)

    def _probes(self, required: int) -> list[int]:
        """At most ``tuning.clamp_probes`` of the ``required`` bytes whose limits to use: JSON's
        punctuation first (few copies per token, and shared by most units), then the lowest."""
        most = self._probe_count
        out = [b for b in _PREFERRED if required >> b & 1][:most]
        while required and len(out) < most:
            low = required & -required
            b = low.bit_length() - 1
            if b not in out:
                out.append(b)
            required ^= low
        return out

    # -- facts about terms ----------------------------------------------------------------------

    def _fact_kids(self, u: int) -> list[int]:
        """What a fact about ``u`` is folded from; a lazy rule's built term once it is built."""
        s = self.s
        k = s.kind[u]
        if k in (SEQ_K, AND_K):
            return [s.a[u], s.b[u]]  # type: ignore[list-item]
        if k == ALT_K:
            return list(s.b[u])  # type: ignore[call-overload]
        if k == LAZY_K:
            built = s.built(u)
            return [] if built is None else [built]
        return [s.a[u]] if k in (REPEAT_K, POSS_K, DIFF_K) else []

    def _provisional(self, fact: object) -> dict[int, int]:
        """Values of ``fact`` that depend on unbuilt lazy rules, kept until the next rule is
        built (rare: a few per generation), so that asking again does not fold the rest of the
        document again."""
        built = self.s.built_count()
        if built != self._provisional_at:
            self._provisional_at = built
            self._provisional_values.clear()
        return self._provisional_values.setdefault(fact, {})

    def _unbuilt(self, u: int) -> bool:
        """A lazy rule not built yet: facts found below it are provisional (a lower bound,
        not remembered), so that they grow once a generation reaches the rule; asking never
        builds it."""
        return self.s.kind[u] == LAZY_K and self.s.built(u) is None

    def required_bytes(self, t: int) -> int:
        """A 256-bit set of bytes each of which occurs in every string of ``t`` (a subset: calls,
        lazy rules and token symbols contribute none)."""
        s = self.s

        kids = self._fact_kids

        def combine(u: int, parts: list[int]) -> int:
            k = s.kind[u]
            if k == BYTES_K:
                mask = s.b[u]
                return mask if mask & (mask - 1) == 0 else 0  # type: ignore[operator,return-value]
            if k == LAZY_K:
                return parts[0] if parts else 0
            if k in (SEQ_K, AND_K):
                return parts[0] | parts[1]
            if k == ALT_K:
                out = -1
                for part in parts:
                    out &= part
                return out
            if k == REPEAT_K:
                return parts[0] if s.b[u][0] >= 1 else 0  # type: ignore[index]
            if k in (POSS_K, DIFF_K):
                return parts[0]
            return 0  # EMPTY, NOTHING, SYM, LAZY

        return _fold(t, self._required, kids, combine, self._unbuilt, self._provisional("required"))

    def required_count(self, t: int, byte: int) -> int:
        """How many times ``byte`` occurs at least in every string of ``t`` (a lower bound:
        calls, lazy rules and token symbols contribute none; 1 for a byte other than JSON's
        punctuation, whose copies are counted together in one fold)."""
        at = _PREFERRED.find(bytes([byte]))
        return self._punctuation_counts(t)[at] if at >= 0 else 1

    def _punctuation_counts(self, t: int) -> tuple[int, ...]:
        """For each byte of :data:`_PREFERRED`, how many times it occurs at least in every
        string of ``t``."""
        s = self.s
        kids = self._fact_kids
        zero, single = _NO_PUNCTUATION, _ONE_PUNCTUATION

        def combine(u: int, parts: list[tuple[int, ...]]) -> tuple[int, ...]:
            k = s.kind[u]
            if k == BYTES_K:
                mask = s.b[u]
                if mask & (mask - 1):  # type: ignore[operator]
                    return zero
                return single.get(mask.bit_length() - 1, zero)  # type: ignore[union-attr]
            if k == SEQ_K:
                return tuple(x + y for x, y in zip(parts[0], parts[1]))
            if k == ALT_K:
                return tuple(min(col) for col in zip(*parts))
            if k == AND_K:
                return tuple(max(col) for col in zip(*parts))
            if k == REPEAT_K:
                lo = s.b[u][0]  # type: ignore[index]
                return zero if lo == 0 else tuple(lo * x for x in parts[0])
            if k in (POSS_K, DIFF_K, LAZY_K):
                return parts[0] if parts else zero
            return zero  # EMPTY, NOTHING, SYM

        return _fold(t, self._counts, kids, combine, self._unbuilt, self._provisional("counts"))  # type: ignore[arg-type]

    def bound(self, unit: int) -> int | None:
        """``B`` for repetitions of ``unit``: more units than one token can complete (None: no
        required byte, no bound). A token holding ``j`` whole units holds ``j`` times the
        copies of a required byte each unit has, so ``j <= limit // copies``; it may begin one
        more. Any required byte gives a sound bound; the smallest over a few of them
        (:meth:`_probes`) is taken, so an object item requiring every letter of its keys costs
        two byte counts, not twenty. (An item of an array of strings has two quotes: Llama 3's
        tokens hold at most 4, so 3 counts instead of 5.)"""
        found = self._bound.get(unit, False)
        if found is not False:
            return found  # type: ignore[return-value]
        mask = self.s.b[unit]
        if self.s.kind[unit] == BYTES_K and mask & (mask - 1):  # type: ignore[operator]
            # a class of several bytes (``[A-Z]``) requires none: no bound, without the folds
            self._bound[unit] = None
            return None
        best: int | None = None
        for r in self._probes(self.required_bytes(unit)):
            limit = self.byte_limit(r) // max(self.required_count(unit, r), 1) + 1
            best = limit if best is None else min(best, limit)
        if unit in self._required:  # not provisional: no lazy rule below is still unbuilt
            self._bound[unit] = best
        return best

    # -- rewriting ------------------------------------------------------------------------------

    def term(self, t: int) -> int:
        """``t`` with the counts of its repetitions clamped (outside set operations, lexemes and
        the units themselves)."""
        found = self._term.get(t)
        if found is not None:
            return found
        s = self.s
        if not s.flags[t] & HAS_COUNT:
            return t  # nothing to clamp: most new tops hold no count (a key, a literal's rest)
        if s.kind[t] == SEQ_K:
            # a new top is mostly ``x rest`` over a rest rewritten before (the document after a
            # count, one configuration earlier): its head alone is new, without the fold
            head, rest = s.a[t], s.b[t]
            new_rest = self._term.get(rest) if s.flags[rest] & HAS_COUNT else rest  # type: ignore[index]
            if new_rest is not None:
                new_head = self._head_term(head)  # type: ignore[arg-type]
                if new_head is not None:
                    found = t if new_head == head and new_rest == rest else s.seq(new_head, new_rest)
                    self._term[t] = found
                    return found
        return _fold(t, self._term, self._kids, self._combine)

    def _head_term(self, u: int) -> int | None:
        """:meth:`term` of ``u`` where it needs no fold (None where it does)."""
        s = self.s
        if not s.flags[u] & HAS_COUNT:
            return u
        if s.kind[u] == REPEAT_K:
            found = self._term.get(u)
            if found is None:
                found = self._term[u] = self._clamp_repeat(u)
            return found
        return self._term.get(u)

    def _kids(self, u: int) -> list[int]:
        s = self.s
        if not s.flags[u] & HAS_COUNT:
            return []  # nothing to clamp below: a leaf of the rewrite (a key, a literal)
        k = s.kind[u]
        if k == SEQ_K:
            return [s.a[u], s.b[u]]  # type: ignore[list-item]
        return list(s.b[u]) if k == ALT_K else []  # type: ignore[call-overload]

    def _combine(self, u: int, parts: list[int]) -> int:
        s = self.s
        k = s.kind[u]
        if k == REPEAT_K:
            return self._clamp_repeat(u)
        if not parts:
            return u  # a leaf of the rewrite (see _kids)
        if k == SEQ_K:
            return u if parts[0] == s.a[u] and parts[1] == s.b[u] else s.seq(parts[0], parts[1])
        if k == ALT_K:
            return u if parts == list(s.b[u]) else s.alt(parts)  # type: ignore[call-overload]
        return u

    def _clamp_repeat(self, t: int) -> int:
        lo, hi = self.s.b[t]  # type: ignore[misc]
        if lo <= 1 and (hi is None or hi <= 1):
            return t
        unit = self.s.a[t]
        limit = self.bound(unit)
        if limit is None or (lo <= limit and (hi is None or hi <= limit)):
            return t
        if self.keep_lengths:
            # tokens complete fewer than `limit` units: max(lo, limit) leaves room for all of them
            top = max(lo, limit)
            return t if hi is None or hi <= top else self.s.repeat(unit, lo, top)
        return self.s.repeat(unit, min(lo, limit), None if hi is None else min(hi, limit))

    def config(self, cid: int) -> int:
        """The configuration whose mask equals ``cid``'s, with large counts clamped."""
        found = self._config.get(cid)
        if found is None:
            if not self._twins:
                return cid
            system = self.system
            stacks = system.configs[cid]
            if len(stacks) == 1:
                one = self._clamp_stack(stacks[0])
                found = cid if one == stacks[0] else system.config([one])
            else:
                new = [self._clamp_stack(sid) for sid in stacks]
                found = cid if new == list(stacks) else system.config(new)
            self._config[cid] = found
        return found

    def _clamp_stack(self, sid: int) -> int:
        """``sid`` with counts clamped in every frame and the frames below the deepest one a token
        can return into cut off (see :meth:`reach`)."""
        found = self._stack.get(sid)
        if found is not None:
            return found
        system = self.system
        parent = system.stack_parent[sid]
        below = -1 if parent < 0 else self._clamped_chain(parent, self._kept_below(parent))
        out = system.stack(below, self.term(system.stack_top[sid]))
        self._stack[sid] = out
        return out

    def _kept_below(self, parent: int) -> int:
        """How many frames of the caller chain ``parent`` a twin keeps: what :meth:`reach` (or,
        for budget twins, the depth) leaves below the top. It depends on the callers alone, so
        every configuration inside one call shares it (a tree node's positions, at any depth).
        Remembered until a lazy rule is built, as the facts it reads may be provisional."""
        built = self.s.built_count()
        if built != self._kept_at:
            self._kept_at = built
            self._kept.clear()
        found = self._kept.get(parent)
        if found is None:
            found = self._kept[parent] = self._depth(parent) if self.keep_lengths else self._reach_below(parent)
        return found

    def _clamped_chain(self, u: int, n: int) -> int:
        """The top ``n`` frames of the chain ``u``, counts clamped, with no caller below them."""
        system = self.system
        todo: list[int] = []
        out = -1
        while n > 0 and u >= 0:
            found = self._chain.get((u, n))
            if found is not None:
                out = found
                break
            todo.append(u)
            u = system.stack_parent[u]
            n -= 1
        for v in reversed(todo):  # bottom up: each frame's caller is the chain built below it
            out = system.stack(out, self.term(system.stack_top[v]))
        if todo:
            # only the chain asked for is remembered: the next frame pushed asks for this one
            # (with one frame more, a budget twin's whole depth) or walks the few frames a
            # token reaches; remembering every frame on the way held one entry per frame kept
            # for each level of a deep document
            self._chain[(todo[0], n + len(todo))] = out
        return out

    def _depth(self, sid: int) -> int:
        depth = 0
        while sid >= 0:
            depth += 1
            sid = self.system.stack_parent[sid]
        return depth

    def reach(self, sid: int) -> int:
        """How many frames of ``sid`` (top first) one token can get into: the top one, and each
        caller whose callee's remainder a token can complete. To return through a caller, a token
        must hold a whole string of its continuation, so every required byte of it; once more
        frames require some byte than any token holds copies of, no token returns further.
        Frames below that one never see a byte of the token, and a twin without them has the
        same mask (end of input aside: the frame where the cut falls requires a byte, so neither
        configuration can end there)."""
        return 1 + self._reach_below(self.system.stack_parent[sid])

    def _reach_below(self, u: int) -> int:
        """The frames of the caller chain ``u`` that :meth:`reach` counts."""
        system = self.system
        need: dict[int, int] = {}
        depth = 0
        while u >= 0:
            depth += 1
            top = system.stack_top[u]
            for r in self._probes(self.required_bytes(top)):
                need[r] = need.get(r, 0) + max(self.required_count(top, r), 1)
                if need[r] > self.byte_limit(r):
                    return depth
            u = system.stack_parent[u]
        return depth


def _fold(
    root: int,
    memo: dict[int, int],
    kids: Callable[[int], list[int]],
    combine: Callable[[int, list[int]], int],
    provisional: Callable[[int], bool] | None = None,
    local: dict[int, int] | None = None,
) -> int:
    """``combine(u, [values of kids(u)])`` for ``root`` and every term below it, children first,
    memoised in ``memo``; iterative (a document's term is a long right-nested sequence). Values
    at or above a term ``provisional`` marks go to ``local`` instead (kept by the caller only
    while they hold)."""
    stack = [(root, False)]
    if provisional is None:
        # the clamp's term rewrite runs on every new configuration: no bookkeeping it needs not
        while stack:
            u, ready = stack.pop()
            if u in memo:
                continue
            below = kids(u)
            if below and not ready:
                stack.append((u, True))
                stack.extend((c, False) for c in below if c not in memo)
                continue
            memo[u] = combine(u, [memo[c] for c in below])
        return memo[root]
    if local is None:
        local = {}
    while stack:
        u, ready = stack.pop()
        if u in memo or u in local:
            continue
        below = kids(u)
        if below and not ready:
            stack.append((u, True))
            stack.extend((c, False) for c in below if c not in memo and c not in local)
            continue
        value = combine(u, [memo[c] if c in memo else local[c] for c in below])
        if (provisional is not None and provisional(u)) or any(c in local for c in below):
            local[u] = value
        else:
            memo[u] = value
    return memo[root] if root in memo else local[root]
