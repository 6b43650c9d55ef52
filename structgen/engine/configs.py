"""Parse configurations and their transitions: the pushdown layer above the machines' terms.

A *stack* is a chain of terms: the top term is where the parse is in the current machine, each
term below it is what remains of a caller once the call returns. Stacks are interned as
``(parent stack id, top term)`` pairs, so equal stacks share one id and pushing or popping is a
dictionary lookup. A *configuration* is a set of stacks (an ambiguous grammar can be in several
places at once) and is interned too: configuration ids are the states of the engine's lazily built
automaton, and configuration 0 is the dead one.

One transition reads a byte or a token symbol: the top term's derivative, plus the calls the top
term can start with (pushed, then the byte read inside the callee), plus a return to the caller
when the top term may end there. A call in tail position replaces the caller's frame, so right
recursion does not grow stacks.
"""

from __future__ import annotations

from ..errors import LimitError
from ..grammar.utf8 import utf8_sequences
from .machines import Machines, call_symbol, is_call, symbol_index
from .terms import (
    ALT_K,
    BYTES_K,
    EMPTY,
    FULL_MASK,
    HAS_POSS,
    HAS_SETOP,
    HAS_SYM,
    LA_END,
    LA_TOKEN,
    NOTHING,
    REPEAT_K,
    SEQ_K,
    SYM_K,
    TermStore,
    refine,
)

DEAD = 0
_MULTIBYTE_SEQUENCES = utf8_sequences(0x80, 0xD7FF) + utf8_sequences(0xE000, 0x10FFFF)
_HIGH_BYTES = ((1 << 128) - 1) << 128


#: The rest of a literal run after some of its bytes is remembered up to this many bytes.
MAX_SHIFTED_RUN = 256

#: The most bytes one literal run holds. A walk follows at most a token of it (128 bytes on the
#: longest vocabularies here) and a commit reads one token; where a longer literal goes on, the
#: configuration after the run has a run of its own. Every position of a literal read in full
#: would scan, and hold, the whole rest of it: quadratic in time and memory for a long key.
MAX_LITERAL_RUN = 256


class ConfigSystem:
    """Interned stacks and configurations of one grammar, with memoised transitions."""

    def __init__(self, machines: Machines, *, max_stacks_per_config: int = 4096, max_configs: int = 5_000_000) -> None:
        self.m = machines
        self.store: TermStore = machines.store
        self.max_stacks_per_config = max_stacks_per_config
        self.max_configs = max_configs
        self.stack_parent: list[int] = []
        self.stack_top: list[int] = []
        self._stack_index: dict[tuple[int, int], int] = {}
        self.configs: list[tuple[int, ...]] = [()]
        self._config_index: dict[tuple[int, ...], int] = {(): DEAD}
        # values are tuples, not frozensets: tuples of ints leave the garbage collector's tracking,
        # sets never do, and tens of thousands of them would lengthen every full collection
        self._step_memo: dict[tuple[int, int], tuple[int, ...]] = {}
        self._accepting_stack: dict[int, bool] = {}
        self._shortest_stack: dict[int, int | None] = {}
        self._classes_memo: dict[int, tuple[int, ...] | None] = {}
        self._classes_busy: set[int] = set()
        self._term_shortest_memo: dict[int, int | None] = {}
        self._unit_characters: dict[int, bool] = {}
        self._literals: dict[int, tuple[bytes, tuple[int, ...], int] | None] = {}
        self._literal_tops: dict[tuple[int, int], tuple[bytes, tuple[int, ...], int] | None] = {}
        self._first_bytes_bound: dict[int, int] = {}
        self._unit_bytes: dict[int, int] = {}  # unit -> bytes that are a whole unit of it
        #: the frame below a relative stack (see :meth:`relative`) and the stack a return into
        #: it leaves in a configuration (both -1 until the first relative configuration)
        self.hole = -1
        self.exit_mark = -1
        #: the configuration of a walk over the hole that has read all of its top: every byte
        #: after it returns into the hole (-1 until the first relative configuration)
        self.at_hole = -1
        self.start = self.config([self.stack(-1, machines.body[machines.start])])

    # -- interning ------------------------------------------------------------------------------

    def stack(self, parent: int, top: int) -> int:
        key = (parent, top)
        sid = self._stack_index.get(key)
        if sid is None:
            sid = len(self.stack_top)
            self.stack_parent.append(parent)
            self.stack_top.append(top)
            self._stack_index[key] = sid
        return sid

    def config(self, stacks: list[int] | set[int] | frozenset[int]) -> int:
        key = tuple(sorted(stacks))
        cid = self._config_index.get(key)
        if cid is None:
            if len(key) > self.max_stacks_per_config:
                raise LimitError(
                    f"the grammar is ambiguous beyond {self.max_stacks_per_config} parallel parses",
                    limit="max_stacks_per_config",
                    value=self.max_stacks_per_config,
                )
            cid = len(self.configs)
            if cid >= self.max_configs:
                raise LimitError("too many parse configurations", limit="max_configs", value=self.max_configs)
            self.configs.append(key)
            self._config_index[key] = cid
        return cid

    def relative(self, top: int) -> int:
        """The configuration of one stack with ``top`` over an unknown caller, the *hole*.

        What a walk from it does until ``top``'s machine returns does not depend on the caller,
        so it is shared by every configuration with that top, at any depth. A return into the
        hole leaves :attr:`exit_mark`, a stack that reads nothing, in the configuration after
        the byte: the walk records that byte as an exit and steps it from the real caller."""
        if self.hole < 0:
            # parents -2 and -3 are no stack: both are bottoms, and neither top reads a byte
            self.hole = self.stack(-2, NOTHING)
            self.exit_mark = self.stack(-3, NOTHING)
            self.at_hole = self.config([self.stack(self.hole, EMPTY)])
        return self.config([self.stack(self.hole, top)])

    def literal_run(self, cid: int) -> tuple[bytes, tuple[int, ...], int] | None:
        """If ``cid`` is one stack whose top starts with at least two fixed bytes (the rest of a
        key, of an enum value, of ``true``; at most :data:`MAX_LITERAL_RUN` of them):
        ``(bytes, tails, parent)``, the top after ``j + 1`` of those bytes being ``tails[j]``.
        Each of those bytes is the only one the configuration and the ones after it read, none
        of them can end or call, so a walk or a commit can follow them without a configuration
        per byte. None otherwise (remembered)."""
        r = self._literals.get(cid, False)
        if r is False:
            stacks = self.configs[cid]
            r = None
            if len(stacks) == 1:
                r = self.literal_run_of(self.stack_parent[stacks[0]], self.stack_top[stacks[0]])
            self._literals[cid] = r
        return r

    def literal_run_of(self, parent: int, top: int) -> tuple[bytes, tuple[int, ...], int] | None:
        """:meth:`literal_run` of the one stack ``(parent, top)``, with no configuration made
        (remembered: a choice walk asks for every derivative it steps)."""
        key = (parent, top)
        r = self._literal_tops.get(key, False)
        if r is False:
            r = self._literal_tops[key] = self._literal_run_of(parent, top)
        return r

    def _literal_run_of(self, parent: int, top: int) -> tuple[bytes, tuple[int, ...], int] | None:
        store = self.store
        kind, a, b = store.kind, store.a, store.b
        out = bytearray()
        tails: list[int] = []
        t = top
        while kind[t] == SEQ_K and kind[a[t]] == BYTES_K and len(out) < MAX_LITERAL_RUN:
            head = b[a[t]]
            if head.bit_count() != 1:  # type: ignore[union-attr]
                break
            out.append(head.bit_length() - 1)  # type: ignore[union-attr]
            t = b[t]  # type: ignore[assignment]
            tails.append(t)
        return (bytes(out), tuple(tails), parent) if len(out) >= 2 else None

    def after_literal(self, run: tuple[bytes, tuple[int, ...], int], n: int) -> int:
        """The configuration after the first ``n`` bytes of a :meth:`literal_run`."""
        return self.config([self.stack(run[2], self._top_after_literal(run, n))])

    def _top_after_literal(self, run: tuple[bytes, tuple[int, ...], int], n: int) -> int:
        """The top after the first ``n`` bytes of a :meth:`literal_run` (its rest remembered)."""
        parent, top = run[2], run[1][n - 1]
        key = (parent, top)
        left = len(run[0]) - n
        if left <= MAX_SHIFTED_RUN and len(run[0]) < MAX_LITERAL_RUN and key not in self._literal_tops:
            # the rest of the run is a run again when two bytes or more are left (a long one is
            # found again when asked: copies at every position would be quadratic), unless the
            # run stopped at its length bound, not at the literal's end: the rest goes on
            self._literal_tops[key] = (run[0][n:], run[1][n:], parent) if left >= 2 else None
        return top

    def without_exit(self, cid: int) -> int:
        """``cid`` without :attr:`exit_mark` (DEAD when nothing else is left)."""
        stacks = self.configs[cid]
        if self.exit_mark < 0 or self.exit_mark not in stacks:
            return cid
        rest = [s for s in stacks if s != self.exit_mark]
        return self.config(rest) if rest else DEAD

    def union(self, a: int, b: int) -> int:
        if a == DEAD:
            return b
        if b == DEAD or a == b:
            return a
        return self.config(set(self.configs[a]) | set(self.configs[b]))

    # -- transitions ----------------------------------------------------------------------------

    def step(self, cid: int, symbol: int) -> int:
        """The configuration after reading ``symbol`` (a byte 0-255, or a token symbol)."""
        stacks = self.configs[cid]
        if len(stacks) == 1:
            one = self._step_stack(stacks[0], symbol)
            return self.config(one) if one else DEAD
        out: set[int] = set()
        for sid in stacks:
            out.update(self._step_stack(sid, symbol))
        return self.config(out) if out else DEAD

    def step_bytes_each(self, cid: int, symbols: list[int]) -> list[int]:
        """:meth:`step` from ``cid`` by each of ``symbols`` (bytes), in order: the row of a
        configuration, one byte per class. One stack whose top neither calls nor returns on a
        byte steps by its top's derivative alone, as :meth:`_step_stack` does, without a memo
        entry (the configuration's row holds the result); a byte outside the top's first bytes
        derives to NOTHING (``TermStore.first_bytes`` is a superset of the live ones)."""
        stacks = self.configs[cid]
        if len(stacks) != 1:
            return [self.step(cid, b) for b in symbols]
        sid = stacks[0]
        parent, top = self.stack_parent[sid], self.stack_top[sid]
        store = self.store
        if store.flags[top] & HAS_SYM:
            return [self.step(cid, b) for b in symbols]
        live = store.first_bytes(top)
        deriv, nullable_at = store.deriv, store.nullable_at
        out: list[int] = []
        for b in symbols:
            if parent >= 0 and nullable_at(top, b):
                out.append(self.step(cid, b))  # a return into the caller
            elif not live >> b & 1:
                out.append(DEAD)
            else:
                d = deriv(top, b)
                out.append(self.config([self.stack(parent, d)]) if d != NOTHING else DEAD)
        return out

    def row_groups(self, cid: int) -> list[tuple[int, int]] | None:
        """The byte row of ``cid`` in one pass over its frames: ``(bytes, target)`` pairs, the
        bytes as 256-bit masks partitioning all 256 (DEAD where nothing reads them); what
        :meth:`step` gives byte by byte. None where a frame reached before the byte is read has
        a greedy lexeme (then calls and returns depend on the byte: step class by class).

        Without greedy lexemes, which frames :meth:`_advance` visits (the calls a top starts
        with, returns into the caller where it is nullable) does not depend on the byte, only
        each frame's derivative does: the frames are found once (:meth:`_frames`), each derived
        once per class of its own top (``TermStore.classes``; bytes outside its first bytes are
        dead), and bytes are grouped by the stacks they lead to. No byte partition of the
        configuration (:meth:`byte_classes`) is needed, nor a memo entry per byte."""
        store = self.store
        deriv, first_bytes, classes = store.deriv, store.first_bytes, store.classes
        found: list[tuple[int, int]] = []  # (bytes, stack after them)
        every: set[int] = set()  # stacks after any byte: the exit mark of a return into the hole
        for sid in self.configs[cid]:
            frames = self._frames(sid)
            if frames is None:
                return None
            for parent, top in frames:
                if parent == -2:
                    every.add(self.exit_mark)
                    continue
                live = first_bytes(top)
                for part in classes(top):
                    part &= live
                    if part:
                        d = deriv(top, (part & -part).bit_length() - 1)
                        if d != NOTHING:
                            found.append((part, self.stack(parent, d)))
        groups: list[tuple[int, set[int]]] = [(FULL_MASK, set(every))]
        for mask, sid in found:
            nxt: list[tuple[int, set[int]]] = []
            for g, stacks in groups:
                inside = g & mask
                if not inside:
                    nxt.append((g, stacks))
                elif inside == g:
                    stacks.add(sid)
                    nxt.append((g, stacks))
                else:
                    nxt.append((inside, stacks | {sid}))
                    nxt.append((g ^ inside, stacks))
            groups = nxt
        return [(g, self.config(stacks) if stacks else DEAD) for g, stacks in groups]

    def _frames(self, sid: int) -> list[tuple[int, int]] | None:
        """The ``(parent, top)`` frames :meth:`_advance` visits from stack ``sid`` for a byte
        (each derived by it there; a parent of -2 is the return into the hole), where no top
        visited has a greedy lexeme: then ``deriv_sym`` and ``nullable_at`` ignore the byte.
        None otherwise."""
        store = self.store
        flags, nullable = store.flags, store.nullable
        out: list[tuple[int, int]] = []
        seen: set[tuple[int, int]] = set()
        todo = [(self.stack_parent[sid], self.stack_top[sid], 0)]
        while todo:
            parent, top, depth = todo.pop()
            if (parent, top) in seen:
                continue
            seen.add((parent, top))
            out.append((parent, top))
            if parent == -2:
                continue
            if flags[top] & HAS_POSS:
                return None
            if flags[top] & HAS_SYM:
                for sym in store.first_syms(top):
                    if not is_call(sym):
                        continue
                    cont = store.deriv_sym(top, sym, 0)  # the lookahead only matters under HAS_POSS
                    if cont == NOTHING:
                        continue
                    caller = parent if cont == EMPTY else self.stack(parent, cont)
                    if depth > len(self.m.body):  # pragma: no cover - left recursion is refused at build
                        raise LimitError("call chain without input", limit="left_recursion")
                    todo.append((caller, self.m.body[symbol_index(sym)], depth + 1))
            if parent >= 0 and nullable[top]:
                todo.append((self.stack_parent[parent], self.stack_top[parent], max(depth - 1, 0)))
        return out

    def step_bytes(self, cid: int, data: bytes, *, literal_runs: bool = True) -> int:
        """The configuration after ``data`` from ``cid`` (DEAD where a byte is refused): the
        stacks are stepped byte by byte, and only the configuration at the end is interned.

        A commit needs the configuration after the whole token; the ones between its bytes
        are never a state's and rarely a walk's, yet interned they would each hold a table row
        and memos for as long as the constraint lives (inside ``maxLength: 1000000`` every byte
        is a new count: four configurations a token). The transitions are the ones :meth:`step`
        takes, so the end is the configuration stepping through interned ones reaches. One
        stack whose top neither calls nor returns on the byte steps by its top's derivative
        alone (as :meth:`_step_stack` does), and is interned only where another step needs it.
        With ``literal_runs``, a stack's fixed bytes (:meth:`literal_run_of`) are read at once."""
        store = self.store
        flags, kind = store.flags, store.kind
        stacks = self.configs[cid]
        # exactly one stack, as (parent, top), not necessarily interned; else None and ``stacks``
        single = (self.stack_parent[stacks[0]], self.stack_top[stacks[0]]) if len(stacks) == 1 else None
        i, n = 0, len(data)
        while i < n:
            if single is not None:
                parent, top = single
                if literal_runs and kind[top] == SEQ_K and kind[store.a[top]] == BYTES_K:
                    # looked up only where a run can start: remembered per top, one per byte else
                    run = self.literal_run_of(parent, top)
                    if run is not None:
                        lit = run[0]
                        k = min(len(lit), n - i)
                        if data[i : i + k] != lit[:k]:
                            return DEAD
                        single = (parent, self._top_after_literal(run, k))
                        i += k
                        continue
                jump = self._whole_units(top, data, i)
                if jump is not None:
                    single = (parent, jump[0])
                    i += jump[1]
                    continue
                byte = data[i]
                if not flags[top] & HAS_SYM and (parent < 0 or not store.nullable_at(top, byte)):
                    d = store.deriv(top, byte)
                    if d == NOTHING:
                        return DEAD
                    single = (parent, d)
                    i += 1
                    continue
                stacks = self._step_stack(self.stack(parent, top), byte)
            else:
                out: set[int] = set()
                for sid in stacks:
                    out.update(self._step_stack(sid, data[i]))
                stacks = tuple(out)
            if not stacks:
                return DEAD
            single = (self.stack_parent[stacks[0]], self.stack_top[stacks[0]]) if len(stacks) == 1 else None
            i += 1
        if single is not None:
            return self.config([self.stack(*single)])
        return self.config(stacks)

    def _whole_units(self, top: int, data: bytes, i: int) -> tuple[int, int] | None:
        """``(top after, bytes read)`` where ``top`` is ``x{lo,hi} rest`` and ``data`` goes on
        from ``i`` with bytes each of which is a whole unit of ``x`` (``deriv(x, c)`` is
        ``EMPTY``) and none of which ``rest`` can start with: ``j`` of them derive the top to
        ``x{lo-j,hi-j} rest``, built at once. Byte by byte every count between would be two new
        terms (the repetition and the sequence) kept for the constraint's life: inside a long
        ``maxLength`` string, ten a token. The terms are the ones the derivatives make (the
        store interns them): each step derives the head ``x{l,h}`` to ``x{l-1,h-1}`` while it
        stays a repetition (``h - 1 >= 2``; ``x{1,1}`` is ``x``), the rest is never derived, the
        top neither calls nor ends (no call first, ``rest`` not nullable), and nothing in it is
        pruned by emptiness (no lexeme or set operation). None where that does not hold for
        two bytes or more (the ordinary step is as cheap for one). A rest that calls further
        on (the document after a string value) is no obstacle: a step of such a top is the
        derivative alone where no call can come first."""
        store = self.store
        kind = store.kind
        if kind[top] != SEQ_K:
            return None
        head, rest = store.a[top], store.b[top]
        if kind[head] != REPEAT_K or store.flags[top] & (HAS_POSS | HAS_SETOP) or store.flags[head] & HAS_SYM:  # type: ignore[index]
            return None
        if store.nullable[rest]:  # type: ignore[index]
            return None
        lo, hi = store.b[head]  # type: ignore[misc]
        x = store.a[head]
        if hi is None or hi < 3 or kind[x] == REPEAT_K:  # type: ignore[index]
            return None  # an unbounded loop derives to itself; a nested repetition is rewritten
        units = self._single_units(x) & ~store.first_bytes(rest)  # type: ignore[arg-type]
        if not units:
            return None
        if store.flags[rest] & HAS_SYM and any(is_call(sym) for sym in store.first_syms(rest)):  # type: ignore[index,arg-type]
            # a rest that may start with a call is entered once the count may stop: the byte
            # could be read inside the callee (a rest with calls further on, the rest of a
            # document after a string, is never entered: it cannot start with these bytes)
            return None
        most = min(hi - 1, len(data) - i)
        j = 0
        while j < most and units >> data[i + j] & 1:
            j += 1
        if j < 2:
            return None
        return store.seq(store.repeat(x, max(lo - j, 0), hi - j), rest), j  # type: ignore[arg-type]

    def _single_units(self, x: int) -> int:
        """The bytes ``c`` with ``deriv(x, c) == EMPTY`` (a whole unit of one byte), as a 256-bit
        mask; one derivative per byte class of ``x`` (remembered per unit)."""
        found = self._unit_bytes.get(x)
        if found is None:
            store = self.store
            found = 0
            for part in store.classes(x):
                if store.deriv(x, (part & -part).bit_length() - 1) == EMPTY:
                    found |= part
            self._unit_bytes[x] = found
        return found

    def _step_stack(self, sid: int, symbol: int) -> tuple[int, ...]:
        key = (sid, symbol)
        r = self._step_memo.get(key)
        if r is not None:
            return r
        if symbol < 256:
            store, top = self.store, self.stack_top[sid]
            parent = self.stack_parent[sid]
            if not store.flags[top] & HAS_SYM and (parent < 0 or not store.nullable_at(top, symbol)):
                # no call to push, no return to the caller: the top term's derivative alone
                d = store.deriv(top, symbol)
                r = (self.stack(parent, d),) if d != NOTHING else ()
                self._step_memo[key] = r
                return r
        out: set[int] = set()
        self._advance(self.stack_parent[sid], self.stack_top[sid], symbol, out, 0, set())
        r = tuple(out)
        self._step_memo[key] = r
        return r

    def _advance(
        self, parent: int, top: int, symbol: int, out: set[int], depth: int, seen: set[tuple[int, int]]
    ) -> None:
        """Add to ``out`` the stacks after ``symbol`` from the stack ``(parent, top)``: its top's
        derivative, what the calls it starts with read, and a return into ``parent``. A callee's
        frame is interned only where it stays below a stack of ``out`` (its caller, never the
        callee's body itself, which the byte derives away): one ``[`` of any JSON calls a value,
        then an array, and each level of a deep document would keep both frames."""
        # a stack met again in one step adds nothing new: a nullable machine called in a loop
        # (``a ::= b{2,}`` with ``b`` able to match nothing) returns to the same stack forever
        key = (parent, top)
        if key in seen:
            return
        seen.add(key)
        if parent == -2:  # the hole (the one stack over parent -2): a return into it
            out.add(self.exit_mark)
            return
        store = self.store
        is_byte = symbol < 256
        la = symbol if is_byte else LA_TOKEN
        d = store.deriv(top, symbol) if is_byte else store.deriv_sym(top, symbol, la)
        if d != NOTHING:
            out.add(self.stack(parent, d))
        for sym in store.first_syms(top):
            if not is_call(sym):
                continue
            cont = store.deriv_sym(top, sym, la)
            if cont == NOTHING:
                continue
            caller = parent if cont == EMPTY else self.stack(parent, cont)
            if depth > len(self.m.body):  # pragma: no cover - left recursion is refused at build
                raise LimitError("call chain without input", limit="left_recursion")
            self._advance(caller, self.m.body[symbol_index(sym)], symbol, out, depth + 1, seen)
        if parent >= 0 and store.nullable_at(top, la):
            # a return pops the frame a call pushed: `depth` counts calls still open
            self._advance(self.stack_parent[parent], self.stack_top[parent], symbol, out, max(depth - 1, 0), seen)

    # -- byte classes -----------------------------------------------------------------------------

    def byte_classes(self, cid: int) -> tuple[int, ...] | None:
        """A partition of the bytes on which :meth:`step` from ``cid`` is constant (None: unknown)."""
        part: tuple[int, ...] = (FULL_MASK,)
        for sid in self.configs[cid]:
            sc = self._stack_classes(sid)
            if sc is None:
                return None
            part = refine(part, sc)
        return self.store.shared_partition(part)

    def _stack_classes(self, sid: int) -> tuple[int, ...] | None:
        if sid in self._classes_memo:
            return self._classes_memo[sid]
        if sid in self._classes_busy:
            # back at a stack being computed (a nullable machine called in a loop returns to
            # it): no partition, so the table steps byte by byte there (always exact)
            return None
        self._classes_busy.add(sid)
        try:
            part = self._stack_classes_uncached(sid)
        finally:
            self._classes_busy.discard(sid)
        if part is not None:
            part = self.store.shared_partition(part)
        self._classes_memo[sid] = part
        return part

    def _stack_classes_uncached(self, sid: int) -> tuple[int, ...] | None:
        store = self.store
        parent, top = self.stack_parent[sid], self.stack_top[sid]
        part: tuple[int, ...] | None = None
        if not store.flags[top] & HAS_POSS:
            part = store.classes(top)
            for sym in store.first_syms(top):
                if part is None:
                    break
                if is_call(sym):
                    cont = store.deriv_sym(top, sym, 0)
                    if cont == NOTHING:
                        continue
                    caller = parent if cont == EMPTY else self.stack(parent, cont)
                    sub = self._stack_classes(self.stack(caller, self.m.body[symbol_index(sym)]))
                    part = None if sub is None else refine(part, sub)
            if part is not None and parent >= 0 and store.nullable[top]:
                sub = self._stack_classes(parent)
                part = None if sub is None else refine(part, sub)
        return part

    # -- whole characters ------------------------------------------------------------------------

    def characters_loop(self, cid: int) -> bool | None:
        """Whether every multi-byte UTF-8 character read from ``cid`` leads back to ``cid``
        through live configurations, decided from terms alone where ``cid`` is one stack whose
        top is ``u* t``, with ``t`` unable to end, to start with a call or with a byte of 0x80
        or more: reading a character is then reading one unit of ``u`` in front of the same
        top, so the answer is the unit's, found once per unit (a string body, whatever follows
        it). None where ``cid`` has another shape (the table then steps the characters)."""
        stacks = self.configs[cid]
        if len(stacks) != 1:
            return None
        store = self.store
        top = self.stack_top[stacks[0]]
        if store.kind[top] != SEQ_K:
            return None
        head, tail = store.a[top], store.b[top]
        if store.kind[head] != REPEAT_K or store.b[head] != (0, None):
            return None
        if store.flags[head] & (HAS_POSS | HAS_SETOP | HAS_SYM):
            return None
        if store.nullable[tail] or store.first_syms(tail) or store.first_bytes(tail) & _HIGH_BYTES:  # type: ignore[arg-type]
            return None
        unit = store.a[head]
        r = self._unit_characters.get(unit)
        if r is None:
            r = self._unit_characters[unit] = self._every_character_one_unit(unit)
        return r

    def _every_character_one_unit(self, unit: int) -> bool:
        """Whether each multi-byte character is read by ``unit`` as one whole unit: every
        proper prefix leaves a live derivative that cannot end, the whole character ``EMPTY``."""
        store = self.store
        for seq in _MULTIBYTE_SEQUENCES:
            frontier = {unit}
            for i, (lo, hi) in enumerate(seq):
                span = ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)
                last = i + 1 == len(seq)
                nxt: set[int] = set()
                for t in frontier:
                    for part in store.classes(t):
                        both = part & span
                        if not both:
                            continue
                        d = store.deriv(t, (both & -both).bit_length() - 1)
                        if (d != EMPTY) if last else (d == NOTHING or store.nullable[d]):
                            return False
                        nxt.add(d)
                frontier = nxt
        return True

    def first_bytes_bound(self, cid: int) -> int:
        """A superset of the bytes with a live transition from ``cid``, as a 256-bit mask, found
        from its stacks' top terms without computing a transition: every byte where a top can
        call or return into a caller (remembered per configuration)."""
        r = self._first_bytes_bound.get(cid)
        if r is None:
            store = self.store
            r = 0
            for sid in self.configs[cid]:
                top = self.stack_top[sid]
                if store.first_syms(top) or (store.nullable[top] and self.stack_parent[sid] != -1):
                    r = FULL_MASK
                    break
                r |= store.first_bytes(top)
            self._first_bytes_bound[cid] = r
        return r

    # -- acceptance and shortest completion -----------------------------------------------------

    def accepting(self, cid: int) -> bool:
        """Whether the input so far is a sentence (end of generation allowed)."""
        for s in self.configs[cid]:
            if self._stack_accepting(s):
                return True
        return False

    def _stack_accepting(self, sid: int) -> bool:
        r = self._accepting_stack.get(sid)
        if r is None:
            r = True
            s = sid
            while s >= 0:
                if not self._term_can_end(self.stack_top[s]):
                    r = False
                    break
                s = self.stack_parent[s]
            self._accepting_stack[sid] = r
        return r

    def _term_can_end(self, t: int) -> bool:
        store = self.store
        # at the end of input a greedy lexeme's nullability is its plain one (nothing follows to
        # extend it): ``nullable_at(t, LA_END)`` is ``nullable[t]``
        if store.nullable[t]:
            return True
        if not store.flags[t] & HAS_SYM:
            return False  # no call of a machine that could end at once
        # calls of nullable machines before the end
        for sym in store.first_syms(t):
            if is_call(sym) and self.m.nullable[symbol_index(sym)]:
                cont = store.deriv_sym(t, sym, LA_END)
                if cont != NOTHING and self._term_can_end(cont):
                    return True
        return False

    def shortest(self, cid: int) -> int | None:
        """Bytes in the shortest completion of configuration ``cid``, a token atom counted as one
        (None if it has none)."""
        best: int | None = None
        for sid in self.configs[cid]:
            v = self._shortest_of_stack(sid)
            if v is not None and (best is None or v < best):
                best = v
        return best

    def _shortest_of_stack(self, sid: int) -> int | None:
        if sid in self._shortest_stack:
            return self._shortest_stack[sid]
        total = 0
        s = sid
        while s >= 0:
            v = self.term_shortest(self.stack_top[s])
            if v is None:
                total = None  # type: ignore[assignment]
                break
            total += v
            s = self.stack_parent[s]
        self._shortest_stack[sid] = total
        return total

    def term_shortest(self, t: int) -> int | None:
        """Bytes in the shortest sentence of ``t``, a call counting its machine's shortest and a
        token atom one."""
        if not self.store.flags[t] & HAS_SYM:
            return self.store.shortest(t)
        memo = self._term_shortest_memo
        if t in memo:
            return memo[t]
        store, m = self.store, self.m
        # iterative and memoised: a document's term is a long right-nested sequence, and each new
        # configuration's top term shares all but its head with terms measured before
        stack = [t]
        while stack:
            u = stack[-1]
            if u in memo:
                stack.pop()
                continue
            k = store.kind[u]
            r: int | None
            if not store.flags[u] & HAS_SYM:
                r = store.shortest(u)
            elif k == SYM_K:
                sym = store.a[u]
                # a token atom is one token, which budgets count (a byte is at most one)
                r = m.shortest[symbol_index(sym)] if is_call(sym) else 1
            elif k in (SEQ_K, ALT_K, REPEAT_K):
                parts = store.operands(u)
                missing = [p for p in parts if p not in memo]
                if missing:
                    stack.extend(missing)  # type: ignore[arg-type]
                    continue
                vals = [memo[p] for p in parts]  # type: ignore[union-attr, index]
                if k == SEQ_K:
                    r = None if None in vals else vals[0] + vals[1]  # type: ignore[operator]
                elif k == ALT_K:
                    live = [v for v in vals if v is not None]
                    r = min(live) if live else None
                else:
                    lo = store.b[u][0]  # type: ignore[index]
                    r = 0 if lo == 0 else None if vals[0] is None else lo * vals[0]
            else:  # set operations, greedy lexemes: symbols inside count as 0 there
                r = store.shortest(u)
            memo[u] = r
            stack.pop()
        return memo[t]


__all__ = ["ConfigSystem", "DEAD", "call_symbol"]
