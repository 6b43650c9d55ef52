"""Hash-consed regular terms and their derivatives: the engine's lexical automata, built lazily.

A term is an integer id into a :class:`TermStore`. Terms describe languages over bytes plus a
few *symbols* (calls of recursive rules, token atoms); equal terms get the same id, so a term id is
a state of a lazily built automaton: the state after reading ``w`` from term ``t`` is the
derivative of ``t`` by ``w``. Canonical construction (flattened, deduplicated, sorted choices;
absorbed empty languages; right-nested sequences) keeps the set of derivatives finite.

Besides the usual operators the store has ``AND``, ``DIFF`` (regular set operations) and ``POSS``
(a greedy lexeme: it may end only where the next byte cannot extend it). ``POSS`` makes
nullability depend on the next byte, so :meth:`TermStore.nullable_at` takes a lookahead: a byte,
:data:`LA_END` (end of input) or :data:`LA_TOKEN` (a whole token symbol follows).

Costs (measured on this machine, see docs/engine.md): one derivative of a cached term is a dict
lookup; a new derivative costs a few microseconds per node of the term's head.
"""

from __future__ import annotations

import heapq
from typing import Callable, Iterator

from ..errors import LimitError

# term kinds
NOTHING_K, EMPTY_K, BYTES_K, SEQ_K, ALT_K, REPEAT_K, AND_K, DIFF_K, POSS_K, SYM_K, LAZY_K = range(11)

NOTHING = 0  # the empty language
EMPTY = 1  # the empty string

LA_END = 256
LA_TOKEN = 257
FULL_MASK = (1 << 256) - 1

# flags
HAS_POSS = 1
HAS_SETOP = 2
HAS_SYM = 4
#: a repetition counted above 1 below (``x{2,}``, ``x{0,32}``): what the count clamp may rewrite
#: (count_clamp.py); terms without one are left as they are without being walked
HAS_COUNT = 8


def repeat_flags(x_flags: int, lo: int, hi: int | None) -> int:
    """The flags of ``x{lo,hi}`` given those of ``x``."""
    return x_flags | HAS_COUNT if lo > 1 or (hi is not None and hi > 1) else x_flags


#: Bound on states explored by one emptiness or shortest-length search.
MAX_SEARCH_STATES = 50_000

#: Levels of common prefix a choice's options are left-factored through; below, the options
#: stay a plain choice (factored one level at a time as derivatives reach them). Two suffixes of
#: one long literal (``.*aaa...a`` after some bytes) share the literal's whole length: factored
#: through it, every derivative would copy the chain (and recurse as deep). Enum values and keys
#: rarely share more.
MAX_FACTOR_DEPTH = 32


class TermStore:
    """Interned terms with memoised nullability, derivatives, byte classes and shortest lengths."""

    def __init__(self, max_terms: int = 2_000_000) -> None:
        self.max_terms = max_terms
        self.kind: list[int] = []
        self.a: list[int] = []
        self.b: list[object] = []
        self.nullable: list[bool] = []
        self.flags: list[int] = []
        self._intern: dict[tuple, int] = {}
        self._deriv: dict[int, int] = {}  # key: term * 512 + byte
        self._deriv_np: dict[int, int] = {}
        self._lower: dict[int, int] = {}
        self._forced: dict[int, int] = {}
        #: builds the term of a lazy term's key (set by the grammar lowering)
        self.expander: Callable[[object], int] | None = None
        #: the shortest length, in bytes, of a lazy term's key without building it (None: no
        #: sentence); asked on first use for lazy terms without set operations (set by the
        #: grammar lowering: most rules a compile makes lazy are never measured before the
        #: first mask, and a grammar walk per rule at compile costs more than the rest of it)
        self.shortest_of_key: Callable[[object], int | None] | None = None
        self._deriv_sym: dict[tuple[int, int, int], int] = {}
        self._nullable_at: dict[tuple[int, int], bool] = {}
        self._classes: dict[int, tuple[int, ...]] = {}
        self._first_bytes: dict[int, int] = {}
        self._first_syms: dict[int, frozenset[int]] = {}
        self._symbol_sets: dict[frozenset[int], frozenset[int]] = {}
        self._partitions: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._empty: dict[int, bool] = {}
        self._shortest: dict[int, int] = {}
        self._runs: dict[int, tuple[int, int, int]] = {}  # b^n·end: (b, n, end), see _run
        self._make((NOTHING_K,), NOTHING_K, 0, None, False, 0)
        self._make((EMPTY_K,), EMPTY_K, 0, None, True, 0)

    def __len__(self) -> int:
        return len(self.kind)

    # -- construction ---------------------------------------------------------------------------

    def _make(self, key: tuple, kind: int, a: int, b: object, nullable: bool, flags: int) -> int:
        tid = self._intern.get(key)
        if tid is not None:
            return tid
        return self._new(key, kind, a, b, nullable, flags)

    def _new(self, key: tuple, kind: int, a: int, b: object, nullable: bool, flags: int) -> int:
        """A new term for ``key``, which the caller looked up and did not find."""
        tid = len(self.kind)
        if tid >= self.max_terms:
            raise LimitError("the grammar's automata grew too large", limit="max_terms", value=self.max_terms)
        self.kind.append(kind)
        self.a.append(a)
        self.b.append(b)
        self.nullable.append(nullable)
        self.flags.append(flags)
        self._intern[key] = tid
        return tid

    def lazy(self, key: object, nullable: bool, flags: int) -> int:
        """A term whose structure is built on first use by the ``expander`` (a rule not lowered
        yet): compile stays proportional to what a generation actually reaches."""
        return self._make((LAZY_K, key), LAZY_K, 0, key, nullable, flags)

    def force(self, t: int) -> int:
        """The built term behind a lazy one (any other term is returned as is)."""
        if self.kind[t] != LAZY_K:
            return t
        r = self._forced.get(t)
        if r is None:
            if self.expander is None:
                raise AssertionError("lazy term without an expander")
            r = self._forced[t] = self.expander(self.b[t])
        return r

    def built_count(self) -> int:
        """How many lazy terms have been built so far (facts that stop at unbuilt ones hold
        until this changes)."""
        return len(self._forced)

    def built(self, t: int) -> int | None:
        """The term behind lazy term ``t`` if it was built already, else None (builds nothing)."""
        return self._forced.get(t)

    def operands(self, t: int) -> tuple[int, ...]:
        """The terms ``t`` is built from: both parts of a sequence or set operation, a choice's
        options, the unit of a repetition or lexeme (none for leaves)."""
        k = self.kind[t]
        if k in (SEQ_K, AND_K, DIFF_K):
            return (self.a[t], self.b[t])  # type: ignore[return-value]
        if k == ALT_K:
            return self.b[t]  # type: ignore[return-value]
        if k in (REPEAT_K, POSS_K):
            return (self.a[t],)
        return ()

    def bytes_(self, mask: int) -> int:
        if mask == 0:
            return NOTHING
        return self._make((BYTES_K, mask), BYTES_K, 0, mask, False, 0)

    def sym(self, symbol: int) -> int:
        return self._make((SYM_K, symbol), SYM_K, symbol, None, False, HAS_SYM)

    def seq(self, x: int, y: int) -> int:
        if x == NOTHING or y == NOTHING:
            return NOTHING
        if x == EMPTY:
            return y
        if y == EMPTY:
            return x
        if self.kind[x] == SEQ_K:
            # keep sequences right-nested so that tails are shared
            parts = []
            while self.kind[x] == SEQ_K:
                parts.append(self.a[x])
                x = self.b[x]  # type: ignore[assignment]
            parts.append(x)
            out = y
            for p in reversed(parts):
                out = self.seq(p, out)
            return out
        return self._make(
            (SEQ_K, x, y), SEQ_K, x, y, self.nullable[x] and self.nullable[y], self.flags[x] | self.flags[y]
        )

    def seq_list(self, items: list[int]) -> int:
        out = EMPTY
        kind, intern = self.kind, self._intern
        for t in reversed(items):
            if t > EMPTY and out > EMPTY and kind[t] != SEQ_K:
                # :meth:`seq`'s last case, its lookup in place (a literal's bytes are lowered here)
                key = (SEQ_K, t, out)
                tid = intern.get(key)
                if tid is None:
                    tid = self._new(
                        key,
                        SEQ_K,
                        t,
                        out,
                        self.nullable[t] and self.nullable[out],
                        self.flags[t] | self.flags[out],
                    )
                out = tid
            else:
                out = self.seq(t, out)
        return out

    def alt(self, items: list[int] | tuple[int, ...]) -> int:
        return self._alt(items, 0)

    def _alt(self, items: list[int] | tuple[int, ...], depth: int) -> int:
        flat: set[int] = set()
        for t in items:
            if self.kind[t] == ALT_K:
                flat.update(self.b[t])  # type: ignore[arg-type]
            elif t != NOTHING:
                flat.add(t)
        if not flat:
            return NOTHING
        if len(flat) > 1:
            self._drop_longer_runs(flat)
        if len(flat) == 1:
            return next(iter(flat))
        # left-factor alternatives with the same first part: a big enum of strings becomes a trie,
        # so a derivative touches the few branches that share the byte read, not all of them
        heads: dict[int, list[int]] = {}
        if depth < MAX_FACTOR_DEPTH:
            for t in flat:
                if self.kind[t] == SEQ_K:
                    heads.setdefault(self.a[t], []).append(self.b[t])  # type: ignore[arg-type]
                else:
                    heads.setdefault(t, []).append(EMPTY)
        if heads and len(heads) < len(flat):
            flat = {h if tails == [EMPTY] else self.seq(h, self._alt(tails, depth + 1)) for h, tails in heads.items()}
            if len(flat) == 1:
                return next(iter(flat))
        # single-byte alternatives merge into one byte set
        masks = [t for t in flat if self.kind[t] == BYTES_K]
        if len(masks) > 1:
            m = 0
            for t in masks:
                m |= self.b[t]  # type: ignore[operator]
                flat.discard(t)
            flat.add(self.bytes_(m))
            if len(flat) == 1:
                return next(iter(flat))
        return self._choice(tuple(sorted(flat)))

    def _drop_longer_runs(self, flat: set[int]) -> None:
        """Drop the options ``b^n·E`` that another option ``b^m·E`` (``m < n``) or ``E`` itself
        contains, where ``E`` is ``R*`` or ``R*·T`` and the byte ``b`` is one of ``R``'s sentences
        (so ``b^k·R* ⊆ R*``). The language is the same, so every mask is.

        An unanchored literal of one repeated byte (``a`` 20,000 times inside ``.*``) is live, after
        ``k`` of its bytes, at every one of the last ``k`` positions: the derivative is a choice of
        ``k`` suffixes ``a^j·.*`` of the literal, all inside the shortest. Without this, the choice
        grows by one option per byte (and is left-factored again through ``MAX_FACTOR_DEPTH``
        levels each time): dozens of new terms per byte, and a tuple as long as the input."""
        shortest: dict[tuple[int, int], tuple[int, int]] = {}  # (b, end) -> (n, option)
        kind, a = self.kind, self.a
        for t in list(flat):
            if kind[t] != SEQ_K or kind[a[t]] != BYTES_K:
                continue
            m: int = self.b[a[t]]  # type: ignore[assignment]
            if m & (m - 1):
                continue  # not a single byte
            u: int = self.b[t]  # type: ignore[assignment]
            if kind[u] == SEQ_K and a[u] == a[t]:
                b, n, end = self._run(t)
            else:  # a run of one byte (most options: a key's quote, then its first letter)
                b, n, end = m.bit_length() - 1, 1, u
            star = a[end] if kind[end] == SEQ_K else end
            if kind[star] != REPEAT_K or self.b[star] != (0, None) or self.flags[star] & (HAS_POSS | HAS_SYM):
                continue
            if not self._unit_has_byte(a[star], b):
                continue
            if end in flat:
                flat.discard(t)
                continue
            best = shortest.get((b, end))
            if best is None or n < best[0]:
                if best is not None:
                    flat.discard(best[1])
                shortest[(b, end)] = (n, t)
            else:
                flat.discard(t)

    def _run(self, t: int) -> tuple[int, int, int]:
        """``(b, n, end)`` for a sequence ``t = b^n·end`` whose head is the single byte ``b`` and
        whose ``end`` does not start with ``b`` (walked once per chain, without recursion)."""
        runs = self._runs
        r = runs.get(t)
        if r is not None:
            return r
        b = self.b[self.a[t]].bit_length() - 1  # type: ignore[union-attr]
        head = self.a[t]
        chain = []
        u = t
        while u not in runs and self.kind[u] == SEQ_K and self.a[u] == head:
            chain.append(u)
            u = self.b[u]  # type: ignore[assignment]
        below = runs.get(u) if self.kind[u] == SEQ_K and self.a[u] == head else None
        n, end = (below[1], below[2]) if below is not None else (0, u)
        for v in reversed(chain):
            n += 1
            runs[v] = (b, n, end)
        return runs[t]

    def _unit_has_byte(self, unit: int, b: int) -> bool:
        """Whether the one-byte string ``b`` is a sentence of ``unit`` (a byte set, or a choice
        with such an option; anything else counts as no)."""
        k = self.kind[unit]
        if k == BYTES_K:
            return bool(self.b[unit] >> b & 1)  # type: ignore[operator]
        if k == ALT_K:
            return any(self.kind[u] == BYTES_K and self.b[u] >> b & 1 for u in self.b[unit])  # type: ignore[union-attr, operator]
        return False

    def _choice(self, ops: tuple[int, ...]) -> int:
        nullable = any(self.nullable[t] for t in ops)
        flags = 0
        for t in ops:
            flags |= self.flags[t]
        return self._make((ALT_K, ops), ALT_K, 0, ops, nullable, flags)

    def saved_choice(self, ops: list[int]) -> int | None:
        """The choice of exactly ``ops``, as a saved constraint holds it (options below
        :data:`MAX_FACTOR_DEPTH` may share a first part, so :meth:`alt` could factor them
        into other terms); None if ``ops`` is not in the form :meth:`alt` leaves: two or more
        options in increasing order, none empty or a choice, at most one byte set."""
        kinds = [self.kind[t] for t in ops]
        if len(ops) < 2 or any(x >= y for x, y in zip(ops, ops[1:])) or NOTHING in ops or ALT_K in kinds:
            return None
        if kinds.count(BYTES_K) > 1:
            return None
        return self._choice(tuple(ops))

    def repeat(self, x: int, lo: int, hi: int | None) -> int:
        if hi == 0 or x == EMPTY:
            return EMPTY
        if x == NOTHING:
            return EMPTY if lo == 0 else NOTHING
        if self.nullable[x]:
            lo = 0
        if lo == 1 and hi == 1:
            return x
        if self.kind[x] == REPEAT_K and hi is None and lo <= 1:
            # (x{l,})* style nesting: (x*)* = x*, (x+)* = x*
            lo2, hi2 = self.b[x]  # type: ignore[misc]
            if hi2 is None and lo2 <= 1:
                return self.repeat(self.a[x], 0 if lo == 0 or lo2 == 0 else 1, None)
        return self._make((REPEAT_K, x, lo, hi), REPEAT_K, x, (lo, hi), lo == 0, repeat_flags(self.flags[x], lo, hi))

    def and_(self, x: int, y: int) -> int:
        if x == NOTHING or y == NOTHING:
            return NOTHING
        if x == y:
            return x
        if x > y:
            x, y = y, x
        return self._make(
            (AND_K, x, y), AND_K, x, y, self.nullable[x] and self.nullable[y], self.flags[x] | self.flags[y] | HAS_SETOP
        )

    def diff(self, x: int, y: int) -> int:
        if x == NOTHING or x == y:
            return NOTHING
        if y == NOTHING:
            return x
        return self._make(
            (DIFF_K, x, y),
            DIFF_K,
            x,
            y,
            self.nullable[x] and not self.nullable[y],
            self.flags[x] | self.flags[y] | HAS_SETOP,
        )

    def poss(self, x: int) -> int:
        if x in (NOTHING, EMPTY) or self.kind[x] == POSS_K:
            return x
        return self._make((POSS_K, x), POSS_K, x, None, self.nullable[x], self.flags[x] | HAS_POSS)

    # -- lookahead-dependent nullability ----------------------------------------------------------

    def nullable_at(self, t: int, la: int) -> bool:
        """Whether ``t`` can match the empty string when the next input is ``la``."""
        if not self.flags[t] & HAS_POSS:
            return self.nullable[t]
        key = (t, la)
        r = self._nullable_at.get(key)
        if r is not None:
            return r
        k = self.kind[t]
        if k == SEQ_K:
            r = self.nullable_at(self.a[t], la) and self.nullable_at(self.b[t], la)  # type: ignore[arg-type]
        elif k == ALT_K:
            r = any(self.nullable_at(u, la) for u in self.b[t])  # type: ignore[union-attr]
        elif k == REPEAT_K:
            r = self.b[t][0] == 0 or self.nullable_at(self.a[t], la)  # type: ignore[index]
        elif k == POSS_K:
            inner = self.a[t]
            r = self.nullable[inner] and (la >= 256 or self.is_empty(self.deriv(inner, la)))
        elif k == AND_K:
            r = self.nullable_at(self.a[t], la) and self.nullable_at(self.b[t], la)  # type: ignore[arg-type]
        elif k == DIFF_K:
            r = self.nullable_at(self.a[t], la) and not self.nullable_at(self.b[t], la)  # type: ignore[arg-type]
        else:
            r = self.nullable[t]
        self._nullable_at[key] = r
        return r

    # -- derivatives ----------------------------------------------------------------------------

    def deriv(self, t: int, c: int) -> int:
        """The derivative of ``t`` by byte ``c``, with semantically empty results made NOTHING."""
        key = t * 512 + c
        r = self._deriv.get(key)
        if r is not None:
            return r
        r = self._derive(t, c, self.deriv)
        if r != NOTHING and self.flags[r] & (HAS_POSS | HAS_SETOP) and self.is_empty(r):
            r = NOTHING
        self._deriv[key] = r
        return r

    def _deriv_unpruned(self, t: int, c: int) -> int:
        """Derivative with no emptiness pruning anywhere below: what emptiness searches walk, so
        that a search never starts another search (which could recurse without end)."""
        key = t * 512 + c
        r = self._deriv_np.get(key)
        if r is None:
            r = self._deriv_np[key] = self._derive(t, c, self._deriv_unpruned)
        return r

    def _derive(self, t: int, c: int, sub: Callable[[int, int], int]) -> int:
        k = self.kind[t]
        if k == LAZY_K:
            return sub(self.force(t), c)
        if k == BYTES_K:
            return EMPTY if (self.b[t] >> c) & 1 else NOTHING  # type: ignore[operator]
        if k == SEQ_K:
            head, tail = self.a[t], self.b[t]
            first = self.first_bytes
            # first-byte sets are supersets: a byte outside one derives to NOTHING, so neither
            # side is derived for nothing (the document after a nullable whitespace gap)
            r = self.seq(sub(head, c), tail) if first(head) >> c & 1 else NOTHING  # type: ignore[arg-type]
            if first(tail) >> c & 1 and self.nullable_at(head, c):  # type: ignore[arg-type]
                r = self.alt((r, sub(tail, c))) if r != NOTHING else sub(tail, c)  # type: ignore[arg-type]
            return r
        if k == ALT_K:
            # only the options that can start with ``c`` (a left-factored enum: one or two)
            first = self.first_bytes
            return self.alt([sub(u, c) for u in self.b[t] if first(u) >> c & 1])  # type: ignore[union-attr]
        if k == REPEAT_K:
            lo, hi = self.b[t]  # type: ignore[misc]
            x = self.a[t]
            rest = self.repeat(x, max(lo - 1, 0), None if hi is None else hi - 1)
            return self.seq(sub(x, c), rest)
        if k == POSS_K:
            return self.poss(sub(self.a[t], c))
        if k == AND_K:
            return self.and_(sub(self.a[t], c), sub(self.b[t], c))  # type: ignore[arg-type]
        if k == DIFF_K:
            return self.diff(sub(self.a[t], c), sub(self.b[t], c))  # type: ignore[arg-type]
        return NOTHING  # NOTHING, EMPTY, SYM

    def first_bytes(self, t: int) -> int:
        """A superset of the bytes ``b`` with ``deriv(t, b) != NOTHING``, as a 256-bit mask (every
        byte for a lazy term not built yet: asking must not build it; a term over one is
        remembered with every byte even once it is built)."""
        r = self._first_bytes.get(t)
        if r is not None:
            return r
        k = self.kind[t]
        if k == BYTES_K:
            r = self.b[t]  # type: ignore[assignment]
        elif k == SEQ_K:
            head = self.a[t]
            r = self.first_bytes(head)
            if self.nullable[head]:  # nullable_at(head, .) implies nullable[head]
                r |= self.first_bytes(self.b[t])  # type: ignore[arg-type]
        elif k == ALT_K:
            r = 0
            for u in self.b[t]:  # type: ignore[union-attr]
                r |= self.first_bytes(u)
        elif k in (REPEAT_K, POSS_K, DIFF_K):
            r = self.first_bytes(self.a[t])
        elif k == AND_K:
            r = self.first_bytes(self.a[t]) & self.first_bytes(self.b[t])  # type: ignore[arg-type]
        elif k == LAZY_K:
            built = self._forced.get(t)
            if built is None:
                return FULL_MASK  # not remembered: exact once the rule is built
            r = self.first_bytes(built)
        else:
            r = 0  # NOTHING, EMPTY, SYM: no byte
        self._first_bytes[t] = r
        return r  # type: ignore[return-value]

    def deriv_sym(self, t: int, symbol: int, la: int) -> int:
        """The derivative of ``t`` by a non-byte symbol; ``la`` is the first byte the symbol stands
        for (or LA_TOKEN), which decides whether greedy lexemes before it may end."""
        if not self.flags[t] & HAS_SYM:
            return NOTHING
        if not self.flags[t] & HAS_POSS:
            la = 0
        key = (t, symbol, la)
        r = self._deriv_sym.get(key)
        if r is not None:
            return r
        k = self.kind[t]
        if k == SYM_K:
            r = EMPTY if self.a[t] == symbol else NOTHING
        elif k == SEQ_K:
            head, tail = self.a[t], self.b[t]
            r = self.seq(self.deriv_sym(head, symbol, la), tail)  # type: ignore[arg-type]
            if self.nullable_at(head, la):
                r = self.alt((r, self.deriv_sym(tail, symbol, la)))  # type: ignore[arg-type]
        elif k == ALT_K:
            r = self.alt([self.deriv_sym(u, symbol, la) for u in self.b[t]])  # type: ignore[union-attr]
        elif k == REPEAT_K:
            lo, hi = self.b[t]  # type: ignore[misc]
            x = self.a[t]
            r = self.seq(self.deriv_sym(x, symbol, la), self.repeat(x, max(lo - 1, 0), None if hi is None else hi - 1))
        else:
            r = NOTHING  # symbols never appear inside lexemes or set operations
        self._deriv_sym[key] = r
        return r

    def first_syms(self, t: int) -> frozenset[int]:
        """Symbols that can come first in ``t`` (after any nullable prefix)."""
        if not self.flags[t] & HAS_SYM:
            return frozenset()
        r = self._first_syms.get(t)
        if r is not None:
            return r
        k = self.kind[t]
        if k == SYM_K:
            r = frozenset([self.a[t]])
        elif k == SEQ_K:
            r = self.first_syms(self.a[t])
            if self.nullable[self.a[t]] or self.flags[self.a[t]] & HAS_POSS:
                r = r | self.first_syms(self.b[t])  # type: ignore[arg-type]
        elif k == ALT_K:
            r = frozenset().union(*(self.first_syms(u) for u in self.b[t]))  # type: ignore[union-attr]
        elif k == REPEAT_K:
            r = self.first_syms(self.a[t])
        else:
            r = frozenset()
        # one object per distinct set: sets stay tracked by the garbage collector, and a
        # grammar has few distinct ones but many terms
        r = self._symbol_sets.setdefault(r, r)
        self._first_syms[t] = r
        return r

    # -- byte classes ---------------------------------------------------------------------------

    def classes(self, t: int) -> tuple[int, ...]:
        """A partition of the 256 bytes (as bit masks) on which ``deriv(t, .)`` and
        ``nullable_at(t, .)`` are constant."""
        r = self._classes.get(t)
        if r is not None:
            return r
        if self.kind[t] == LAZY_K:
            r = self._classes[t] = self.classes(self.force(t))
            return r
        k = self.kind[t]
        if k == BYTES_K:
            m = self.b[t]
            r = _partition([m, FULL_MASK ^ m])  # type: ignore[list-item,operator]
        elif k == SEQ_K:
            r = self.classes(self.a[t])
            if self.nullable[self.a[t]] or self.flags[self.a[t]] & HAS_POSS:
                r = refine(r, self.classes(self.b[t]))  # type: ignore[arg-type]
        elif k == ALT_K:
            r = (FULL_MASK,)
            for u in self.b[t]:  # type: ignore[union-attr]
                r = refine(r, self.classes(u))
        elif k in (REPEAT_K, POSS_K):
            r = self.classes(self.a[t])
        elif k in (AND_K, DIFF_K):
            r = refine(self.classes(self.a[t]), self.classes(self.b[t]))  # type: ignore[arg-type]
        else:
            r = (FULL_MASK,)
        r = self._classes[t] = self.shared_partition(r)
        return r

    def shared_partition(self, p: tuple[int, ...]) -> tuple[int, ...]:
        """One object per distinct byte partition: the terms, stacks and configurations of a long
        counted run (a string's remaining length, one per character) each hold the same one,
        and a copy is a tuple of up to 256-bit integers (hundreds of bytes) per count."""
        return self._partitions.setdefault(p, p)

    # -- emptiness and shortest completions -----------------------------------------------------

    def is_empty(self, t: int) -> bool:
        """Whether ``t`` has no sentence (searches derivatives where set operations or greedy
        lexemes make syntax alone insufficient). Symbols count as non-empty."""
        if t == NOTHING:
            return True
        if not self.flags[t] & (HAS_POSS | HAS_SETOP):
            return False
        r = self._empty.get(t)
        if r is not None:
            return r
        return self._composed_empty(t)

    def _composed_empty(self, t: int) -> bool:
        """Emptiness where it composes, a search only where it does not.

        A sequence whose head has no symbols and no greedy lexemes is empty iff its head or its
        tail is (the head is an ordinary regular language); a choice iff every option is; a
        repetition of such a unit iff it needs one and the unit is empty. So a new derivative
        ``head' tail`` of a long sequence (the rest of a JSON document, where a set operation
        sits somewhere in the tail) asks about ``head'`` alone and finds its tail's answer in
        the record, where a search would walk to the end of the document again. Set operations,
        greedy lexemes and heads with symbols are searched as before (symbols count as
        non-empty there, as here)."""
        memo = self._empty
        chain: list[int] = []  # sequences whose answer is the one found below them
        u = t
        while True:
            if u == NOTHING:
                r = True
                break
            if not self.flags[u] & (HAS_POSS | HAS_SETOP):
                r = False
                break
            known = memo.get(u)
            if known is not None:
                r = known
                break
            k = self.kind[u]
            if k == LAZY_K:
                chain.append(u)
                u = self.force(u)
            elif k == SEQ_K and not self.flags[self.a[u]] & (HAS_SYM | HAS_POSS):
                chain.append(u)
                if self.is_empty(self.a[u]):
                    r = True
                    break
                u = self.b[u]  # type: ignore[assignment]
            elif k == ALT_K:
                r = all(self.is_empty(x) for x in self.b[u])  # type: ignore[union-attr]
                memo[u] = r
                break
            elif k == REPEAT_K and not self.flags[self.a[u]] & (HAS_SYM | HAS_POSS):
                r = self.b[u][0] > 0 and self.is_empty(self.a[u])  # type: ignore[index]
                memo[u] = r
                break
            else:
                r = self._depth_first_empty(u)
                break
        for x in chain:
            memo[x] = r
        return r

    def _accepts(self, t: int) -> bool:
        return self.nullable_at(t, LA_END) or bool(self.flags[t] & HAS_SYM and self.first_syms(t))

    def _depth_first_empty(self, t: int) -> bool:
        """Best-first search for a sentence, guided by a lower bound on the bytes still needed:
        a witness is usually a few bytes away, and the states on its path are recorded as
        non-empty, so the derivatives a walk asks about next are answered from the record."""
        memo = self._empty
        if self._accepts(t):
            memo[t] = False
            return False
        parent: dict[int, int] = {t: -1}
        heap = [(self._estimate(t), 0, t)]
        order = 0
        while heap:
            _, _, u = heapq.heappop(heap)
            for nxt in self._successors(u):
                if nxt in parent:
                    continue
                known = memo.get(nxt)
                if known is True:
                    continue
                parent[nxt] = u
                if known is False or self._accepts(nxt):
                    while nxt != -1:  # the witness path: all non-empty
                        memo[nxt] = False
                        nxt = parent[nxt]
                    return False
                if len(parent) > MAX_SEARCH_STATES:
                    raise LimitError(
                        "a regular set operation or greedy lexeme needs too large an automaton",
                        limit="MAX_SEARCH_STATES",
                        value=MAX_SEARCH_STATES,
                    )
                order += 1
                heapq.heappush(heap, (self._estimate(nxt), order, nxt))
        for u in parent:  # nothing reachable from any of them accepts
            memo[u] = True
        return True

    def _estimate(self, t: int) -> int:
        """A lower bound on the bytes of any sentence of ``t`` (structural, memoised)."""
        r = self._lower.get(t)
        if r is None:
            k = self.kind[t]
            if k == LAZY_K:
                r = self._estimate(self.force(t))
            elif k in (EMPTY_K, SYM_K, NOTHING_K):
                r = 0
            elif k == BYTES_K:
                r = 1
            elif k == SEQ_K:
                r = self._estimate(self.a[t]) + self._estimate(self.b[t])  # type: ignore[arg-type]
            elif k == ALT_K:
                r = min(self._estimate(u) for u in self.b[t])  # type: ignore[union-attr]
            elif k == REPEAT_K:
                r = self.b[t][0] * self._estimate(self.a[t])  # type: ignore[index]
            elif k == AND_K:
                r = max(self._estimate(self.a[t]), self._estimate(self.b[t]))  # type: ignore[arg-type]
            else:  # DIFF, POSS
                r = self._estimate(self.a[t])
            self._lower[t] = r
        return r

    def _successors(self, t: int) -> Iterator[int]:
        for part in self.classes(t):
            d = self._deriv_unpruned(t, (part & -part).bit_length() - 1)
            if d != NOTHING:
                yield d

    def shortest(self, t: int) -> int | None:
        """Length in bytes of the shortest sentence of ``t`` (symbols count as 0), or None.

        Composed over sequences, choices and repetitions (iteratively: a document's term is a
        long right-nested sequence); a greedy lexeme (which looks ahead, so does not compose) and
        a set operation are searched, each on its own."""
        r = self._shortest.get(t)
        if r is not None:
            return None if r < 0 else r
        stack = [t]
        while stack:
            u = stack[-1]
            if u in self._shortest:
                stack.pop()
                continue
            k = self.kind[u]
            if u == NOTHING:
                self._shortest[u] = -1
            elif self.flags[u] & HAS_POSS or k in (AND_K, DIFF_K):
                found = self._search(u)
                self._shortest[u] = -1 if found is None else found
            elif k == LAZY_K:
                if self.shortest_of_key is not None and not self.flags[u] & HAS_SETOP:
                    n = self.shortest_of_key(self.b[u])
                    self._shortest[u] = -1 if n is None else n
                    stack.pop()
                    continue
                forced = self.force(u)
                if forced not in self._shortest:
                    stack.append(forced)
                    continue
                self._shortest[u] = self._shortest[forced]
            elif k in (EMPTY_K, SYM_K):
                self._shortest[u] = 0
            elif k == BYTES_K:
                self._shortest[u] = 1
            else:
                parts = self.operands(u)
                missing = [p for p in parts if p not in self._shortest]
                if missing:
                    stack.extend(missing)  # type: ignore[arg-type]
                    continue
                lengths = [self._shortest[p] for p in parts]  # type: ignore[union-attr, index]
                if k == SEQ_K:
                    self._shortest[u] = -1 if min(lengths) < 0 else sum(lengths)
                elif k == ALT_K:
                    live = [n for n in lengths if n >= 0]
                    self._shortest[u] = min(live) if live else -1
                else:  # REPEAT
                    lo = self.b[u][0]  # type: ignore[index]
                    self._shortest[u] = 0 if lo == 0 else -1 if lengths[0] < 0 else lo * lengths[0]
            stack.pop()
        r = self._shortest[t]
        return None if r < 0 else r

    def _search(self, t: int) -> int | None:
        """Breadth-first search for the shortest path from ``t`` to an accepting derivative."""
        seen = {t}
        frontier = [t]
        depth = 0
        while frontier:
            for u in frontier:
                if self.nullable_at(u, LA_END) or (self.flags[u] & HAS_SYM and self.first_syms(u)):
                    return depth
            nxt = []
            for u in frontier:
                for m in self.classes(u):
                    c = (m & -m).bit_length() - 1
                    d = self._deriv_unpruned(u, c)
                    if d != NOTHING and d not in seen:
                        seen.add(d)
                        nxt.append(d)
            if len(seen) > MAX_SEARCH_STATES:
                raise LimitError(
                    "a regular set operation or greedy lexeme needs too large an automaton",
                    limit="MAX_SEARCH_STATES",
                    value=MAX_SEARCH_STATES,
                )
            frontier = nxt
            depth += 1
        return None


def _partition(masks: list[int]) -> tuple[int, ...]:
    return tuple(m for m in masks if m)


def refine(p: tuple[int, ...], q: tuple[int, ...]) -> tuple[int, ...]:
    """The coarsest common refinement of two partitions of the byte set."""
    if len(p) == 1:
        return q
    if len(q) == 1:
        return p
    out = []
    for x in p:
        for y in q:
            z = x & y
            if z:
                out.append(z)
    return tuple(out)
