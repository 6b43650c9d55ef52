"""Liveness of parse configurations where a greedy lexeme meets a machine boundary.

Inside one machine the term search is exact: a derivative with no sentence is NOTHING. But a
call symbol counts as non-empty there, and a greedy lexeme (``POSS``) may end only before a byte
that cannot extend it, a byte that comes from the next machine (a callee after the lexeme, or the
caller's frame when the lexeme ends a callee). So in a grammar with both, a configuration the
steps leave non-DEAD may have no completion: ``s = r "a"; r = A | "(" r ")"`` with ``A = /a+/``
after ``a`` (``A`` swallows every ``a``, the ``"a"`` after the call never comes).

Here each top term gets a *summary*: ``exits(t, e)``, the events with which a parse at ``t``
whose next event is ``e`` (a byte, the end of input, or a token atom) can return into its caller
(the event the caller then reads). It is the least fixpoint of

* ``e`` itself, where ``t`` may end before ``e`` (``nullable_at``: a greedy lexeme's end);
* ``exits(deriv(t, e), any event)``, where ``t`` reads ``e``;
* for each call of machine ``M`` that ``t`` can start with (its continuation ``c`` found with
  ``e`` as the lookahead): ``exits(c, x)`` for each ``x`` in ``exits(body of M, e)``;

solved on demand (a worklist over the (term, event) pairs a query reaches: a pair grows by the
bits a pair it holds grew by, and is evaluated again only when a callee's exits it read grew). A
stack ``(P, t)`` is live iff the end of input is among the events that leave its bottom frame:
``exits(t, any)``, then each frame below reads those events in turn. So the answer is exact, for
any depth and for dead stacks with endless pushes (``s = "b" s "a" | A``).

Invariant: with it, every token a mask allows leaves a configuration with a completion.
Applies only to grammars with a greedy lexeme and a call (``needs_frame_liveness``); every other
grammar gets no checker (``for_machines`` returns None) and its masks are untouched. Cost: per new
mask one trie walk with end configurations and one check per distinct end (``live_tokens``), one
chain walk per new configuration, and the summaries of the terms reached (each a few hundred
events at most). Bound: ``EngineLimits.max_liveness_states`` (term, event) pairs per
constraint; past it a ``LimitError`` names it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import LimitError
from .arrays import unique_inverse
from .configs import DEAD, ConfigSystem
from .machines import Machines, is_call, symbol_index, token_symbol
from .terms import HAS_SYM, LA_END, LA_TOKEN, NOTHING

#: the event index of the end of input (bytes are 0-255, token atom ``k`` is ``END_EVENT + 1 + k``)
END_EVENT = 256
#: the event of a summary node that stands for every event (the union of the others)
ANY_EVENT = -1


class FrameLiveness:
    """Whether a configuration has a completion, for grammars where the steps cannot tell."""

    def __init__(self, system: ConfigSystem, max_states: int) -> None:
        self.system = system
        self.store = system.store
        self.max_states = max_states
        self._atoms = len(system.m.token_atoms)
        #: (term, event) -> bit mask of the events with which it can return
        self._exits: dict[tuple[int, int], int] = {}
        #: (term, event) -> the nodes whose value holds its value (a union: they grow by what it grew)
        self._readers: dict[tuple[int, int], set[tuple[int, int]]] = {}
        #: (term, event) -> the nodes whose calls read it for the events a callee returns with
        #: (what they read next depends on it: they are evaluated again when it grows)
        self._callers: dict[tuple[int, int], set[tuple[int, int]]] = {}
        self._work: list[tuple[int, int]] = []
        self._queued: set[tuple[int, int]] = set()
        self._live: dict[int, bool] = {DEAD: False}

    # -- configurations ---------------------------------------------------------------------------

    def live(self, cid: int) -> bool:
        r = self._live.get(cid)
        if r is None:
            r = self._live[cid] = any(self._stack_live(sid) for sid in self.system.configs[cid])
        return r

    def live_tokens(
        self,
        ids: np.ndarray,
        walk: tuple[np.ndarray, np.ndarray, np.ndarray],
        by_commit: np.ndarray,
        commit_live: Callable[[int], bool],
    ) -> np.ndarray:
        """The ids of ``ids`` (a mask's tokens) after which a sentence exists. ``walk`` is the
        trie walk's ``(ids, end configurations, slack)`` from the mask's configuration
        (``TransitionTable.walk_ends``): a token it reaches with no slack ends exactly at its
        configuration there (the walk steps the transitions a commit steps), so each distinct end
        is asked once and its tokens kept or dropped together. ``commit_live`` decides the rest
        one by one: ``by_commit`` (ids whose commit is more than their bytes: end-of-sequence,
        token atoms), tokens the walk reported inside a character (its loop configuration, not
        theirs), and any it did not reach."""
        w_ids, ends, slack = walk
        if not ids.size:
            return ids
        end_of = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
        exact = (slack == 0) & (w_ids < end_of.size)
        end_of[w_ids[exact]] = ends[exact]
        end_of[by_commit[by_commit < end_of.size]] = -1
        found = end_of[ids]
        walked = found >= 0
        keep = np.ones(ids.size, dtype=bool)
        distinct, inverse = unique_inverse(found[walked])
        alive = np.fromiter((self.live(e) for e in distinct.tolist()), dtype=bool, count=distinct.size)
        keep[walked] = alive[inverse]
        rest = np.flatnonzero(~walked)
        keep[rest] = np.fromiter((commit_live(t) for t in ids[rest].tolist()), dtype=bool, count=rest.size)
        return ids[keep]

    def _stack_live(self, sid: int) -> bool:
        system = self.system
        events = self.exits(system.stack_top[sid], ANY_EVENT)
        s = system.stack_parent[sid]
        while s >= 0 and events:
            top, after = system.stack_top[s], 0
            while events:  # each event the frame above returned with is this frame's next one
                low = events & -events
                events ^= low
                after |= self.exits(top, low.bit_length() - 1)
            events = after
            s = system.stack_parent[s]
        if s < -1:  # a relative stack (over the hole): its caller decides, not this check
            return True
        return bool(events >> END_EVENT & 1)

    # -- summaries --------------------------------------------------------------------------------

    def exits(self, term: int, event: int) -> int:
        """The events with which a parse at ``term``, next event ``event``, returns (a bit mask)."""
        node = (term, event)
        r = self._exits.get(node)
        if r is not None and not self._work:
            return r
        self._read(node, None)
        self._solve()
        return self._exits[node]

    def _read(self, node: tuple[int, int], reader: tuple[int, int] | None, *, call: bool = False) -> int:
        r = self._exits.get(node)
        if r is None:
            if len(self._exits) >= self.max_states:
                raise LimitError(
                    "deciding where greedy lexemes can end into other rules needs too many states",
                    limit="max_liveness_states",
                    value=self.max_states,
                )
            r = self._exits[node] = 0
            self._readers[node] = set()
            self._callers[node] = set()
            self._work.append(node)
            self._queued.add(node)
        if reader is not None:
            (self._callers if call else self._readers)[node].add(reader)
        return r

    def _solve(self) -> None:
        """Evaluate the queued nodes until nothing grows. A node's value is the union of what it
        read, and values only grow: where one grows, the nodes holding it grow by the same bits
        (no evaluation), and only the callers reading it for a callee's exits are evaluated again
        (the exits select what they read)."""
        work, queued, values = self._work, self._queued, self._exits
        readers, callers = self._readers, self._callers
        while work:
            node = work.pop()
            queued.discard(node)
            grown = [(node, self._evaluate(node))]
            while grown:
                n, bits = grown.pop()
                old = values[n]
                bits &= ~old
                if not bits:
                    continue
                values[n] = old | bits
                grown.extend((r, bits) for r in readers[n])
                for r in callers[n]:
                    if r not in queued:
                        work.append(r)
                        queued.add(r)

    def _evaluate(self, node: tuple[int, int]) -> int:
        t, e = node
        store = self.store
        if e == ANY_EVENT:
            v = 0
            for event in self._events_of(t):
                v |= self._read((t, event), node)
            return v
        la = e if e < END_EVENT else LA_END if e == END_EVENT else LA_TOKEN
        v = (1 << e) if (store.nullable[t] if e == END_EVENT else store.nullable_at(t, la)) else 0
        if e < END_EVENT:
            d = store.deriv(t, e) if store.first_bytes(t) >> e & 1 else NOTHING
        elif e > END_EVENT:
            d = store.deriv_sym(t, token_symbol(e - END_EVENT - 1), LA_TOKEN)
        else:
            d = NOTHING
        if d != NOTHING:
            v |= self._read((d, ANY_EVENT), node)
        for sym in store.first_syms(t):
            if not is_call(sym):
                continue
            cont = store.deriv_sym(t, sym, la)
            if cont == NOTHING:
                continue
            inner = self._read((self.system.m.body[symbol_index(sym)], e), node, call=True)
            while inner:
                low = inner & -inner
                inner ^= low
                v |= self._read((cont, low.bit_length() - 1), node)
        return v

    def _events_of(self, t: int) -> list[int]:
        """The events ``t`` can do anything with: every one where it calls or may end, else its
        first bytes; the end of input and the token atoms always."""
        store = self.store
        if store.nullable[t] or (store.flags[t] & HAS_SYM and store.first_syms(t)):
            events = list(range(END_EVENT))
        else:
            bound, events = store.first_bytes(t), []
            while bound:
                low = bound & -bound
                bound ^= low
                events.append(low.bit_length() - 1)
        return events + list(range(END_EVENT, END_EVENT + 1 + self._atoms))


def needs_frame_liveness(machines: Machines) -> bool:
    """Whether the steps can leave a configuration without a completion: a greedy lexeme in a
    grammar with calls (a lexeme next to a call ends on a byte of the other machine)."""
    store, body = machines.store, machines.body
    # a single machine with symbols calls itself (or reads a token atom, which costs a check only)
    calls = len(body) > 1 or bool(store.flags[body[0]] & HAS_SYM)
    return calls and machines.has_lexeme()


def for_machines(machines: Machines, system: ConfigSystem, max_states: int) -> FrameLiveness | None:
    """A checker where the grammar needs one (``needs_frame_liveness``), else None."""
    return FrameLiveness(system, max_states) if needs_frame_liveness(machines) else None


__all__ = ["FrameLiveness", "for_machines", "needs_frame_liveness"]
