"""The exact byte-level reference matcher: an Earley recogniser over per-rule automata.

The automata (:mod:`.matcher_automata`) have edges that read a byte set, call a rule, read a token
atom, read a *regular operand* (GLRM's greedy lexemes and the set operations, simulated by
derivatives in :mod:`.regular`) or repeat a helper rule a counted number of times. The recogniser
keeps one Earley set per input position; an item is ``(automaton state, origin position, regular
operand edge, derivative)``. Ambiguity, nullable rules and left or right recursion are all handled,
in polynomial time.

Greedy lexemes look one byte ahead: a lexeme may end at a position only if the next byte cannot
extend it. The closure of the current position therefore depends on the byte that comes next; it
is computed when that byte is known (or for each candidate byte in :meth:`Matcher.viable_next_bytes`).
Whether a position can still be completed depends on what may follow each lexeme too (``A "a"``
with ``A = /a+/`` matches nothing): for grammars with greedy lexemes, a position is live only if
one of its items is live given what may follow its rule instance (:mod:`.lexeme_liveness`; the
follow set of an instance comes from the items waiting for it at its origin).

This matcher is the reference the token mask engine is tested against: clarity comes first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from ..errors import ConstraintError, GrammarError
from . import ir
from .lexeme_liveness import END_BIT, LexemeLiveness
from .matcher_automata import BYTES, CALL, REGULAR, REPEAT, TOKEN, CompiledGrammar, compile_grammar

if TYPE_CHECKING:
    from .grammar import Grammar

#: Lookahead markers besides a byte value 0-255.
LA_END = 256  # end of input
LA_TOKEN = 257  # a whole special token follows

# An item is (state, origin, aux, value): aux -1 for a plain automaton state; aux >= 0 inside the
# regular edge `aux`, value its derivative; aux <= -2 on the repeat edge `-2 - aux`, value the
# number of iterations done.
Item = tuple[int, int, int, "ir.Node | int | None"]


def lexeme_liveness(grammar: Grammar, cg: CompiledGrammar) -> LexemeLiveness | None:
    """The liveness analysis of ``grammar``'s greedy lexemes (None without any; cached)."""
    derived = grammar._derived  # noqa: SLF001 - the grammar owns a derived-data cache
    if "matcher_liveness" not in derived:
        has_lexeme = any(e.kind == REGULAR and e.lexeme for edges in cg.edges for e in edges)
        derived["matcher_liveness"] = LexemeLiveness(cg, grammar.rules) if has_lexeme else None
    return derived["matcher_liveness"]  # type: ignore[no-any-return]


@dataclass
class _Position:
    """An Earley set: the items reached by scanning (``kernel``) and, once the next input symbol is
    known, its closure and the calls waiting at this position."""

    kernel: frozenset[Item]
    lookahead: frozenset[int] | None = None  # what followed this position, once known
    items: set[Item] | None = None
    waiting: dict[int, list[Item]] | None = None
    #: rule -> the symbols that may follow its instances that start here (greedy lexemes only)
    follow: dict[int, int] = field(default_factory=dict)


class Matcher:
    """Incremental byte-level matcher for one grammar.

    ``feed(data)`` consumes bytes and returns False once no continuation of the input can be a
    sentence (the matcher then stays dead until rolled back); ``feed_token(id, data)`` consumes one
    whole token (token atoms see its id, everything else its bytes); ``is_accepting()`` says whether
    the input so far is a sentence; ``viable_next_bytes()`` gives the bytes that keep the input
    viable; ``rollback(n)`` undoes the last ``n`` positions (bytes).
    """

    def __init__(self, grammar: Grammar) -> None:
        if grammar.externs:
            raise GrammarError(f"unbound externs {sorted(grammar.externs)}; bind them before matching")
        self._cg = compile_grammar(grammar)
        self._terms = self._cg.terms
        start = (self._cg.rule_start[self._cg.start_rule], 0, -1, None)
        # a grammar with no sentence is dead from the start
        kernel = frozenset([start]) if self._cg.rule_productive[self._cg.start_rule] else frozenset()
        self._liveness = lexeme_liveness(grammar, self._cg)
        if kernel and self._liveness is not None and not self._liveness.first(start[0], END_BIT):
            kernel = frozenset()  # every sentence would need a lexeme to end where it cannot
        self._positions: list[_Position] = [_Position(kernel)]

    # -- public API ---------------------------------------------------------------------------

    @property
    def position(self) -> int:
        """Number of input positions consumed so far."""
        return len(self._positions) - 1

    def is_dead(self) -> bool:
        return not self._positions[-1].kernel

    def feed(self, data: bytes | str) -> bool:
        """Consume bytes; False once the input can no longer be completed to a sentence."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        for c in data:
            if not self._step_byte(c):
                return False
        return not self.is_dead()

    def feed_token(self, token_id: int | None, data: bytes | str = b"") -> bool:
        """Consume one whole token: ``token_id`` for token atoms, ``data`` for everything else."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if self.is_dead():
            return False
        cur = self._positions[-1]
        la = {LA_TOKEN} | ({data[0]} if data else set())
        items, _ = self._finalize(cur, frozenset(la))
        by_token: set[Item] = set()
        for q, org, r, _t in items:
            if r != -1:
                continue
            for edge in self._cg.edges[q]:
                if edge.kind == TOKEN and _token_matches(edge.payload, token_id):  # type: ignore[arg-type]
                    by_token.add((edge.target, org, -1, None))
        for i, c in enumerate(data):
            self._positions.append(_Position(self._scan(self._positions[-1], c)))
            if i + 1 < len(data):
                self._finalize(self._positions[-1], frozenset([data[i + 1]]))
        if not data:
            self._positions.append(_Position(frozenset()))
        kernel = self._positions[-1].kernel | by_token
        self._positions[-1] = _Position(kernel if self._alive(kernel) else frozenset())
        return not self.is_dead()

    def is_accepting(self) -> bool:
        """Whether the input consumed so far is a sentence of the grammar."""
        if self.is_dead():
            return False
        items, _ = self._closure(self._positions[-1].kernel, len(self._positions) - 1, frozenset([LA_END]))
        final = (self._cg.rule_final[self._cg.start_rule], 0, -1, None)
        return final in items

    def viable_next_bytes(self) -> frozenset[int]:
        """Bytes ``c`` such that the input followed by ``c`` can still become a sentence."""
        if self.is_dead():
            return frozenset()
        cur = self._positions[-1]
        pos = len(self._positions) - 1
        shared: tuple[set[Item], dict[int, list[Item]], dict[int, int]] | None = None
        out = set()
        for c in range(256):
            if shared is None or self._la_sensitive(shared[0]):
                items, waiting = self._closure(cur.kernel, pos, frozenset([c]))
                follow: dict[int, int] = {}
                if shared is None:
                    shared = (items, waiting, follow)
            else:
                items, waiting, follow = shared
            probe = _Position(cur.kernel, frozenset([c]), items, waiting, follow)
            if self._alive(self._scan(probe, c), probe):
                out.add(c)
        return frozenset(out)

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` input positions."""
        if n < 0 or n > len(self._positions) - 1:
            raise ConstraintError(f"cannot roll back {n} positions; {len(self._positions) - 1} consumed")
        if n:
            del self._positions[-n:]
            last = self._positions[-1]
            self._positions[-1] = _Position(last.kernel)

    # -- Earley machinery ---------------------------------------------------------------------

    def _step_byte(self, c: int) -> bool:
        cur = self._positions[-1]
        if not cur.kernel:
            return False
        self._finalize(cur, frozenset([c]))
        nxt = self._scan(cur, c)
        if not self._alive(nxt):
            nxt = frozenset()
        self._positions.append(_Position(nxt))
        return bool(nxt)

    def _finalize(self, p: _Position, la: frozenset[int]) -> tuple[set[Item], dict[int, list[Item]]]:
        """Fix the closure of position ``p`` now that the following input ``la`` is known."""
        if p.items is None or p.lookahead != la:
            pos = self._index_of(p)
            p.items, p.waiting = self._closure(p.kernel, pos, la)
            p.lookahead = la
            p.follow = {}
        return p.items, p.waiting  # type: ignore[return-value]

    def _index_of(self, p: _Position) -> int:
        for i in range(len(self._positions) - 1, -1, -1):
            if self._positions[i] is p:
                return i
        raise AssertionError("position not in this matcher")

    # -- liveness with greedy lexemes ---------------------------------------------------------------

    def _alive(self, kernel: frozenset[Item], probe: _Position | None = None) -> bool:
        """Whether some item of ``kernel`` (the next position's) can be completed to a sentence.

        Without greedy lexemes every item can (dead states are pruned); with them, an item is
        live when its rest of the rule has a valid completion before a symbol that may follow
        the rule's instance. ``probe`` stands for the last position (a candidate closure)."""
        lv = self._liveness
        if not kernel or lv is None:
            return bool(kernel)
        cg = self._cg
        by_instance: dict[tuple[int, int], list[Item]] = {}
        for item in kernel:
            by_instance.setdefault((cg.state_rule[item[0]], item[1]), []).append(item)
        for (rule, org), items in by_instance.items():
            follow = self._follow(rule, org, probe)
            if not follow:
                continue
            for q, _org, r, value in items:
                if r == -1:
                    if lv.first(q, follow):
                        return True
                    continue
                edge = cg.regular_edges[r][1]
                after = lv.first(edge.target, follow)
                if after and (not edge.lexeme or lv.lexeme_live(edge.payload, value, after)):  # type: ignore[arg-type]
                    return True  # a set operation's derivative in the kernel has a sentence
        return False

    def _follow(self, rule: int, org: int, probe: _Position | None) -> int:
        """The symbols that may come right after an instance of ``rule`` started at ``org``: what
        may follow the items waiting for it there, given what may follow their own instances
        (end of input after the start rule's outermost one).

        Callers start at or before the callee, so the instances are solved by origin, from the
        oldest; instances at one origin can wait for each other (left recursion, nullable
        prefixes) and are iterated to a fixpoint. Each position remembers its answers."""
        last = len(self._positions) - 1

        def at(i: int) -> _Position:
            return probe if probe is not None and i == last else self._positions[i]

        known = at(org).follow.get(rule)
        if known is not None:
            return known
        cg = self._cg
        callers: dict[tuple[int, int], list[tuple[tuple[int, int], Item]]] = {}
        stack = [(rule, org)]
        while stack:
            node = stack.pop()
            if node in callers or node[0] in at(node[1]).follow:
                continue
            waiting = at(node[1]).waiting or {}
            callers[node] = [((cg.state_rule[it[0]], it[1]), it) for it in waiting.get(node[0], ())]
            stack.extend(caller for caller, _it in callers[node])
        top = (cg.start_rule, 0)
        for origin in sorted({o for _r, o in callers}):
            group = [node for node in callers if node[1] == origin]
            value = {node: END_BIT if node == top else 0 for node in group}
            changed = True
            while changed:
                changed = False
                for node in group:
                    v = value[node]
                    for caller, it in callers[node]:
                        outer = value[caller] if caller in value else at(caller[1]).follow[caller[0]]
                        if outer:
                            v |= self._first_after(it, outer)
                    if v != value[node]:
                        value[node] = v
                        changed = True
            memo = at(origin).follow
            for node, v in value.items():
                memo[node[0]] = v
        return at(org).follow[rule]

    def _first_after(self, waiting_item: Item, follow: int) -> int:
        """What may come next after a call returns to ``waiting_item``, ``follow`` following its rule."""
        lv = self._liveness
        assert lv is not None
        q, _org, r, count = waiting_item
        if r == -1:
            return lv.first(q, follow)
        return lv.first_of_repeat(self._cg.repeat_edges[-2 - r][1], count, follow)  # type: ignore[arg-type]

    def _la_sensitive(self, items: Iterable[Item]) -> bool:
        """Whether some item's closure depended on the lookahead (a greedy lexeme could end)."""
        for q, _org, r, term in items:
            if r >= 0 and self._cg.regular_edges[r][1].lexeme and self._terms.nullable(term):  # type: ignore[union-attr, arg-type]
                return True
        return False

    def _lexeme_may_end(self, term: ir.Node, la: frozenset[int]) -> bool:
        for c in la:
            if c >= 256:
                return True
            if self._terms.is_empty(self._terms.deriv(term, c)):  # type: ignore[union-attr]
                return True
        return False

    def _closure(
        self, kernel: frozenset[Item], pos: int, la: frozenset[int]
    ) -> tuple[set[Item], dict[int, list[Item]]]:
        cg = self._cg
        terms = self._terms
        items: set[Item] = set(kernel)
        agenda = list(kernel)
        waiting: dict[int, list[Item]] = {}
        completed_here: set[int] = set()

        def add(it: Item) -> None:
            if it not in items:
                items.add(it)
                agenda.append(it)

        while agenda:
            item = agenda.pop()
            q, org, r, value = item
            if r >= 0:
                edge = cg.regular_edges[r][1]
                if terms.nullable(value) and (not edge.lexeme or self._lexeme_may_end(value, la)):  # type: ignore[union-attr, arg-type]
                    add((edge.target, org, -1, None))
                continue
            if r <= -2:
                edge = cg.repeat_edges[-2 - r][1]
                sub, lo, hi = edge.payload  # type: ignore[misc]
                count: int = value  # type: ignore[assignment]
                if count >= lo:
                    add((edge.target, org, -1, None))
                if hi is None or count < hi:
                    # unbounded: counts past the minimum need not be told apart
                    after = (q, org, r, count + 1 if (hi is not None or count < lo) else count)
                    waiting.setdefault(sub, []).append(after)
                    add((cg.rule_start[sub], pos, -1, None))
                    if sub in completed_here and count < lo:
                        add((q, org, r, lo))  # empty iterations can make up the minimum
                continue
            for q2 in cg.eps[q]:
                add((q2, org, -1, None))
            for edge in cg.edges[q]:
                if edge.kind == CALL:
                    callee = edge.payload
                    after = (edge.target, org, -1, None)
                    waiting.setdefault(callee, []).append(after)  # type: ignore[arg-type]
                    add((cg.rule_start[callee], pos, -1, None))  # type: ignore[index]
                    if callee in completed_here:
                        add(after)
                elif edge.kind == REGULAR:
                    if not terms.is_empty(edge.payload):  # type: ignore[union-attr, arg-type]
                        add((q, org, edge.rid, edge.payload))  # type: ignore[arg-type]
                elif edge.kind == REPEAT:
                    add((q, org, -2 - edge.rid, 0))
            rule = cg.state_rule[q]
            if q == cg.rule_final[rule]:
                if org == pos:
                    if rule not in completed_here:
                        completed_here.add(rule)
                        for it in list(waiting.get(rule, ())):
                            if it[2] > -2:
                                add(it)
                            else:
                                # an empty iteration only matters to reach the minimum count
                                lo = cg.repeat_edges[-2 - it[2]][1].payload[1]  # type: ignore[index]
                                if it[3] <= lo:  # type: ignore[operator]
                                    add((it[0], it[1], it[2], lo))
                else:
                    origin = self._positions[org]
                    for it in (origin.waiting or {}).get(rule, ()):
                        add(it)
        return items, waiting

    def _scan(self, p: _Position, c: int) -> frozenset[Item]:
        """Items of the next position after reading byte ``c`` from finalised position ``p``."""
        assert p.items is not None
        cg = self._cg
        terms = self._terms
        out: set[Item] = set()
        for q, org, r, term in p.items:
            if r <= -2:
                continue
            if r >= 0:
                d = terms.deriv(term, c)  # type: ignore[union-attr, arg-type]
                if d != ir.NOTHING and not terms.is_empty(d):  # type: ignore[union-attr]
                    out.add((q, org, r, d))
                continue
            for edge in cg.edges[q]:
                if edge.kind == BYTES and (edge.payload >> c) & 1:  # type: ignore[operator]
                    out.add((edge.target, org, -1, None))
        return frozenset(out)


def _token_matches(atom: ir.Token, token_id: int | None) -> bool:
    if not atom.ids:
        return False  # unbound named token: only a vocabulary can resolve it
    hit = token_id is not None and token_id in atom.ids
    return hit != atom.negated
