"""An upper bound on the bytes left to complete after any token, so that budget masks can skip
their walk while the budget is plentiful.

A budget mask (``State.mask_words(budget=k)``, what ``generate()`` uses at every step) keeps the
tokens after which the grammar can still close within ``k`` tokens, counted in tokens of the
vocabulary (token_budget.py). Computing it takes a walk that records every token's end
configuration and a shortest-completion search for each new one: on ``realistic_model`` about
3 ms per new configuration, against well under 1 ms for the plain mask. But where every byte is
a token of the vocabulary (the constraint checks it once: true of byte-level and byte-fallback
vocabularies), the count in tokens of a configuration is at most its shortest completion in
bytes (one spelling of the canonical completion is byte by byte; past token_budget.py's length
limit the count *is* the bytes). So where every configuration a token can lead to has a
shortest completion of at most ``B`` bytes and ``k`` exceeds ``B`` by the margin below, every
token of the plain mask passes in tokens too and the budget mask *is* the plain mask (cached,
shared with count twins). Where some byte has no token, the constraint does not take this
shortcut.

``B`` comes from :meth:`CompletionBound.term`, the largest shortest completion over all
derivatives of a term, composed over its structure:

* a sequence ``a b``: a derivative is ``a' b`` or a derivative of ``b``, so
  ``max(bound(a) + shortest(b), bound(b))``;
* a choice: the largest of its options' bounds (a derivative of a choice is the choice of the
  options' derivatives, whose shortest completion is at most any live option's);
* ``x{lo,hi}``: ``x' x{lo-1,hi-1}`` or a boundary, so ``max(lo * s, bound(x) + (lo - 1) * s)``
  with ``s`` the shortest ``x``;
* a lazy rule not built yet: the same bound computed on the grammar's rule (machines.py), so
  asking for it builds nothing;
* a call: its machine's bound, a least fixpoint over the machines (:meth:`_machine_bounds`).
  Rules that call themselves only in tail position (numbers with ``multipleOf`` or ranges are
  written that way) have one; rules whose recursion nests (any JSON value, a tree) have none.

Set operations and greedy lexemes (whose derivatives may need more than their operands'), nesting
recursion and token atoms give no bound: their budget masks keep the walk.
"""

from __future__ import annotations

from typing import Callable

from .configs import ConfigSystem
from .machines import is_call, symbol_index
from .terms import (
    ALT_K,
    BYTES_K,
    EMPTY_K,
    HAS_SETOP,
    HAS_SYM,
    LAZY_K,
    NOTHING_K,
    REPEAT_K,
    SEQ_K,
    SYM_K,
    TermStore,
)

#: Bytes between the bound and the budget: a token accepted in bulk inside a multi-byte
#: character is reported with its loop's configuration, up to 3 bytes short (table.py), and the
#: budget counts the token itself and the end-of-sequence token (constraint.py). In tokens the
#: same margin holds: the count after such a token is at most the bytes after it, the loop's
#: plus the 3.
MARGIN = 3 + 2


class CompletionBound:
    """Per grammar: bounds of terms and configurations (None: no bound), memoised."""

    def __init__(self, system: ConfigSystem, rule_bound: Callable[[object], int | None]) -> None:
        self.system = system
        self.s: TermStore = system.store
        self._rule_bound = rule_bound
        self._terms: dict[int, int | None] = {}
        self._configs: dict[int, int | None] = {}
        self._machines: list[int | None] | None = None

    def known(self, cid: int) -> bool:
        """Whether the bound of ``cid`` is computed (reading it then builds nothing)."""
        return cid in self._configs

    def plentiful(self, cid: int, budget: int) -> bool:
        """Whether every token allowed from ``cid`` leaves a completion that fits ``budget``."""
        bound = self.config(cid)
        return bound is not None and bound + MARGIN <= budget

    def config(self, cid: int) -> int | None:
        """The largest shortest completion of any configuration reachable from ``cid``."""
        if cid in self._configs:
            return self._configs[cid]
        best: int | None = 0
        for sid in self.system.configs[cid]:
            v = self._stack(sid)
            if v is None:
                best = None
                break
            best = max(best, v)  # type: ignore[type-var]
        self._configs[cid] = best
        return best

    def _stack(self, sid: int) -> int | None:
        # a derivative may return into each caller: its bound plus the frames below it
        frames = []
        while sid >= 0:
            frames.append(self.system.stack_top[sid])
            sid = self.system.stack_parent[sid]
        best = below = 0
        for t in reversed(frames):
            bound = self.term(t)
            short = None if bound is None else self.system.term_shortest(t)
            if bound is None or short is None:
                return None
            best = max(best, bound + below)
            below += short
        return best

    def term(self, t: int) -> int | None:
        """The largest shortest completion over the derivatives of ``t`` (None: unknown)."""
        if t not in self._terms:
            self._eval(t, self._machine_bounds(), self._terms)
        return self._terms[t]

    def _machine_bounds(self) -> list[int | None]:
        """Per machine, the bound of its body with calls entered (a least fixpoint). A machine
        that calls itself only in tail position (a number rule written right-recursively)
        converges: its frame is replaced, nothing accumulates. One whose calls keep a
        continuation below them (any JSON value inside an array) grows with every round: no
        bound, since nesting has no limit."""
        if self._machines is not None:
            return self._machines
        bodies = self.system.m.body
        called = sorted(self._called())  # the start machine's body (the document) only if called
        bounds: list[int | None] = [0] * len(bodies)
        for round_ in range(2 * len(called) + 2):
            new = list(bounds)
            for m in called:
                new[m] = self._eval(bodies[m], bounds, {})
            if new == bounds:
                break
            if round_ >= len(called):
                # still growing after every chain of calls had its turn: those that grow have
                # no bound, and neither has any machine that reaches them (the next rounds)
                new = [None if n is not None and b is not None and n > b else n for n, b in zip(new, bounds)]
            bounds = new
        else:  # pragma: no cover - a machine past the rounds would be marked on the round before
            bounds = [None] * len(bodies)
        self._machines = bounds
        return bounds

    def _called(self) -> set[int]:
        """The machines some body calls (one pass over the bodies' terms)."""
        s = self.s
        out: set[int] = set()
        seen: set[int] = set()
        stack = [b for b in self.system.m.body if s.flags[b] & HAS_SYM]
        while stack:
            u = stack.pop()
            if u in seen:
                continue
            seen.add(u)
            if s.kind[u] == SYM_K:
                if is_call(s.a[u]):
                    out.add(symbol_index(s.a[u]))
            else:
                stack.extend(v for v in s.operands(u) if s.flags[v] & HAS_SYM)
        return out

    def _eval(self, t: int, calls: list[int | None], memo: dict[int, int | None]) -> int | None:
        """:meth:`term` with each call of machine ``m`` bounded by ``calls[m]``."""
        if t in memo:
            return memo[t]
        s = self.s
        stack = [t]
        while stack:
            u = stack[-1]
            if u in memo:
                stack.pop()
                continue
            k = s.kind[u]
            r: int | None
            if k in (NOTHING_K, EMPTY_K):
                r = 0
            elif k == BYTES_K:
                r = 1
            elif k == SYM_K:
                sym = s.a[u]
                r = calls[symbol_index(sym)] if is_call(sym) else None
            elif k == LAZY_K:
                built = s.built(u)
                if built is not None and built not in memo:
                    stack.append(built)
                    continue
                if built is not None:
                    r = memo[built]
                else:
                    r = None if s.flags[u] & HAS_SETOP else self._rule_bound(s.b[u])
            elif k in (SEQ_K, ALT_K, REPEAT_K):
                parts = s.operands(u)
                missing = [p for p in parts if p not in memo]
                if missing:
                    stack.extend(missing)  # type: ignore[arg-type]
                    continue
                r = self._compose(u, k, [memo[p] for p in parts])  # type: ignore[union-attr, index]
            else:  # AND, DIFF, POSS
                r = None
            memo[u] = r
            stack.pop()
        return memo[t]

    def _compose(self, u: int, k: int, bounds: list[int | None]) -> int | None:
        if None in bounds:
            return None
        s = self.s
        if k == ALT_K:
            return max(bounds)  # type: ignore[type-var]
        if k == SEQ_K:
            tail = self.system.term_shortest(s.b[u])  # type: ignore[arg-type]
            return None if tail is None else max(bounds[0] + tail, bounds[1])  # type: ignore[operator, type-var]
        unit = self.system.term_shortest(s.a[u])
        lo = s.b[u][0]  # type: ignore[index]
        if unit is None:
            return 0 if lo == 0 else None
        return max(lo * unit, bounds[0] + max(lo - 1, 0) * unit)  # type: ignore[operator]
