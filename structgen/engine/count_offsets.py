"""Long counted repetitions held at a bounded count: a state keeps the rest of the count beside it.

Inside ``x{0,1000000} rest`` (a string under ``maxLength``, an array under ``maxItems``,
``a{0,100000}``) the count left is part of the parse state, so every token committed would make
a new configuration (and its terms, row and memos) for as long as the constraint lives. But no
query tells counts apart once they exceed what one token can use: each byte read begins at most
one unit, so from any count ``c > L`` (``L`` the longest token's bytes) the same tokens are
allowed, the same ones end or accept, and each leads to ``c - j`` for the same ``j`` or leaves
the repetition, after which the count no longer matters. With no unit still required (the lower
count is 0) the shortest completion does not read the count either, so budget masks and
``shortest_completion()`` agree too. Derivatives treat every count above 1 alike
(``TermStore.repeat`` special-cases ``hi <= 1`` only), and nothing that reads a count prunes them
where the top holds no set operation or greedy lexeme (``HAS_SETOP``, ``HAS_POSS``).

So a state there holds a *position*: the configuration with the count lowered to
``T = L + 2`` (the *representative*: its masks, acceptance, completions, forced bytes and budget
masks are the real configuration's) and the *offset* ``count - T``, packed into one int
(``representative | offset << 32``; ``State.config`` is the representative). A commit steps the
representative at ``T`` and at ``T + 1``:

* the same configuration after both: the token left the repetition (or is refused), and that is
  the real configuration after it; the offset is dropped;
* the repetition one count apart after both, ``j`` below where it was: the token stayed inside
  having begun ``j`` units; the real count is ``T + offset - j``, and the representative is
  rebuilt at ``T`` (offset less ``j``), or within ``T`` of the end at the real count (offset 0);
* anything else (a token ending where the unit and the rest may both go on, which is a choice
  at the top, or in a callee): the real configuration is rebuilt and stepped.

The constraint then interns a bounded set of configurations (two representatives per place in a
unit and one configuration per distinct ``j`` after them), where it interned one configuration
and two terms a token (about 1.4 KB of heap on Llama 3). Configurations of several stacks, a
repetition below the top frame, units still required, token atoms and grammars with frame
liveness (whose commits read more than the steps) hold the real configuration, as before.

Switch: ``EngineTuning.count_offsets``. Tests: ``tests/test_engine_memory_flat.py``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from .configs import DEAD, ConfigSystem
from .terms import EMPTY, HAS_COUNT, HAS_POSS, HAS_SETOP, REPEAT_K, SEQ_K
from .tuning import DEFAULT_ENGINE_TUNING, EngineTuning

#: a position's low bits: the configuration id (``EngineLimits.max_configs`` is far below 2**32)
CONFIG_BITS = 32
CONFIG_MASK = (1 << CONFIG_BITS) - 1


class Counted(NamedTuple):
    """A configuration of one stack whose top is ``p1 (p2 (... (x{0,hi} rest)))``: the first
    repetition with an upper count along the top's sequence, no unit required."""

    parent: int
    parts: tuple[int, ...]
    unit: int
    hi: int
    rest: int


class CountOffsets:
    """Per constraint: positions of states inside long counted repetitions."""

    def __init__(
        self,
        system: ConfigSystem,
        max_token_bytes: int,
        *,
        enabled: bool = True,
        tuning: EngineTuning = DEFAULT_ENGINE_TUNING,
    ) -> None:
        """``max_token_bytes``: the longest token of the vocabulary. Not ``enabled``, every
        position is its configuration."""
        self.system = system
        self.store = system.store
        self.enabled = enabled
        self._parts = tuning.max_partial_parts
        #: ``T``: more units than one token can begin (each begun unit reads one of its bytes),
        #: plus one so that a count stepped from ``T`` stays a repetition (``x{0,1}`` is ``x?``)
        self.bound = max_token_bytes + 2
        #: configuration -> its position (itself where no count is held aside)
        self.positions: dict[int, int] = {}
        self._counted: dict[int, Counted] = {}
        #: (representative, token) -> (configuration after it, units begun while staying in the
        #: repetition; -1 where the count no longer matters; None where the steps did not keep
        #: the form, so the real configuration is stepped; and the representative after it)
        self._moves: dict[tuple[int, int], tuple[int, int | None, int | None]] = {}
        #: (configuration, count) -> the configuration rebuilt at that count
        self._rebuilt: dict[tuple[int, int], int] = {}

    def nbytes(self) -> int:
        """An estimate of the memos' bytes: a dictionary slot and small ints per position (about
        100 B with tracemalloc), a tuple more per other entry."""
        return 100 * len(self.positions) + 200 * (len(self._counted) + len(self._moves) + len(self._rebuilt))

    def position(self, cid: int) -> int:
        """The position of configuration ``cid`` (``cid`` itself unless a long count is held
        aside)."""
        found = self.positions.get(cid)
        if found is None:
            system = self.system
            stacks = system.configs[cid]
            counted = None
            if self.enabled and len(stacks) == 1 and self.store.flags[system.stack_top[stacks[0]]] & HAS_COUNT:
                # counts within ``T`` are never held: not rebuilt to be checked (most counted tops)
                counted = self._find(cid, self.bound + 1)
            if counted is None:
                found = cid
            else:
                self._counted[cid] = counted
                found = self._held(cid, counted, counted.hi)
            self.positions[cid] = found
        return found

    def advance(self, position: int, token: int, commit: Callable[[int, int], int]) -> int:
        """The position after ``token`` from a position holding a count aside; DEAD where the
        token is refused. ``commit(cid, token)`` is the constraint's commit of a configuration."""
        rep, offset = position & CONFIG_MASK, position >> CONFIG_BITS
        counted = self._counted[rep]  # a position with an offset is made at a counted one only
        key = (rep, token)
        move = self._moves.get(key)
        if move is None:
            move = self._moves[key] = self._move(rep, counted, token, commit)
        nxt, begun, held = move
        if begun is None:
            # not the shape the steps keep (a token ending where the unit and the rest overlap):
            # the real configuration is stepped, and the count held aside again where it can be
            return self.position(commit(self._at(rep, counted, counted.hi + offset), token))
        if nxt == DEAD:
            return DEAD
        if begun < 0:
            return self.position(nxt)  # the count no longer matters: this is the real one
        count = counted.hi + offset - begun
        if count > self.bound and held is not None:
            return held | (count - self.bound) << CONFIG_BITS
        return self._at(nxt, self._counted[nxt], count)

    def _move(
        self, rep: int, counted: Counted, token: int, commit: Callable[[int, int], int]
    ) -> tuple[int, int | None, int | None]:
        """What ``token`` does from ``rep``, found by committing it at two counts (``T`` and
        ``T + 1``): the same configuration after both, the count no longer matters (the token
        left the repetition, or is refused); the repetition one count apart after both, the
        token stayed inside having begun as many units as the count fell. Derivatives treat
        every count above 1 alike, so what holds at both holds at the real count."""
        nxt = commit(rep, token)
        other = commit(self._at(rep, counted, counted.hi + 1), token)
        if nxt == other:
            return nxt, -1, None
        after = self.counted(nxt) if nxt != DEAD else None
        if (
            after is not None
            and after.parent == counted.parent
            and after.unit == counted.unit
            and after.rest == counted.rest
            and after.hi <= counted.hi
            and other == self._at(nxt, after, after.hi + 1)
        ):
            rep = self._at(nxt, after, self.bound)
            return nxt, counted.hi - after.hi, rep if self.counted(rep) is not None else None
        return nxt, None, None

    def _held(self, cid: int, counted: Counted, count: int) -> int:
        """The position of ``cid`` (of ``counted``) at the real count ``count``: the
        representative at ``T`` and the offset, or the configuration at ``count`` within ``T``."""
        if count > self.bound:
            rep = self._at(cid, counted, self.bound)
            if self.counted(rep) is not None:  # rebuilt as it was found: always, checked
                return rep | (count - self.bound) << CONFIG_BITS
        return self._at(cid, counted, count)

    def counted(self, cid: int) -> Counted | None:
        """``cid`` as a :class:`Counted` configuration, or None (not remembered: asked once per
        configuration, by :meth:`position`, where it is not one)."""
        found = self._counted.get(cid)
        if found is None:
            found = self._find(cid)
            if found is not None:
                self._counted[cid] = found
        return found

    def _find(self, cid: int, least: int = 2) -> Counted | None:
        """:meth:`counted`, for a count of at least ``least``."""
        system, store = self.system, self.store
        stacks = system.configs[cid]
        if len(stacks) != 1:
            return None
        parent, top = system.stack_parent[stacks[0]], system.stack_top[stacks[0]]
        flags = store.flags[top]
        if not flags & HAS_COUNT or flags & (HAS_POSS | HAS_SETOP):
            return None  # no count; or an emptiness test, which may read one, prunes derivatives
        kind, a, b = store.kind, store.a, store.b
        parts: list[int] = []
        t = top
        for _ in range(self._parts + 1):
            if kind[t] == REPEAT_K:
                head, rest = t, EMPTY
            elif kind[t] == SEQ_K:
                head, rest = a[t], b[t]
            else:
                return None
            if kind[head] == REPEAT_K and b[head][1] is not None:  # type: ignore[index]
                lo, hi = b[head]  # type: ignore[misc]
                if lo != 0 or hi < least:
                    return None
                found = Counted(parent, tuple(parts), a[head], hi, rest)  # type: ignore[arg-type]
                return found if self._top(found, hi) == top else None
            if kind[t] != SEQ_K:
                return None
            parts.append(head)  # type: ignore[arg-type]
            t = rest  # type: ignore[assignment]
        return None

    def _top(self, counted: Counted, hi: int) -> int:
        """The top of ``counted`` at count ``hi``."""
        store = self.store
        top = store.seq(store.repeat(counted.unit, 0, hi), counted.rest)
        for p in reversed(counted.parts):
            top = store.seq(p, top)
        return top

    def _at(self, cid: int, counted: Counted, hi: int) -> int:
        """The configuration ``cid`` (of ``counted``) with its count at ``hi``."""
        if hi == counted.hi:
            return cid
        key = (cid, hi)
        found = self._rebuilt.get(key)
        if found is None:
            system = self.system
            top = self._top(counted, hi)
            found = self._rebuilt[key] = system.config([system.stack(counted.parent, top)])
        return found
