"""The exact byte-level reference matcher: an Earley recogniser over per-rule automata.

Each rule body is compiled (Thompson construction) into a small automaton whose edges read a byte
set, call a rule, read a token atom, or read a *regular operand* (GLRM's greedy lexemes and the
set operations, simulated by derivatives in :mod:`.regular`). The recogniser keeps one Earley set
per input position; an item is ``(automaton state, origin position, regular operand edge,
derivative)``. Ambiguity, nullable rules and left or right recursion are all handled, in
polynomial time.

Counted repetition is never expanded into copies beyond a small bound: ``x{m,n}`` with large
counts becomes one edge whose items carry the iteration count, so automata and Earley sets stay
small whatever the counts.

Greedy lexemes look one byte ahead: a lexeme may end at a position only if the next byte cannot
extend it. The closure of the current position therefore depends on the byte that comes next; it
is computed when that byte is known (or for each candidate byte in :meth:`Matcher.viable_next_bytes`).

This matcher is the reference the token mask engine is tested against: clarity comes first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from ..errors import ConstraintError, GrammarError, LimitError
from . import ir
from .emptiness import leaf_productive
from .regular import RegularTerms
from .utf8 import class_sequences, mask_of, mask_of_ranges

if TYPE_CHECKING:
    from .grammar import Grammar

# edge kinds
BYTES, CALL, TOKEN, REGULAR, REPEAT = 0, 1, 2, 3, 4

#: Repetition counts up to this are unrolled; larger ones become helper rules.
UNROLL_LIMIT = 4
#: Lookahead markers besides a byte value 0-255.
LA_END = 256  # end of input
LA_TOKEN = 257  # a whole special token follows
#: Deepest rule body the compiler walks (bodies are validated against GrammarLimits first).
MAX_BUILD_DEPTH = 400

# An item is (state, origin, aux, value): aux -1 for a plain automaton state; aux >= 0 inside the
# regular edge `aux`, value its derivative; aux <= -2 on the repeat edge `-2 - aux`, value the
# number of iterations done.
Item = tuple[int, int, int, "ir.Node | int | None"]


@dataclass
class _Edge:
    kind: int
    payload: object  # byte mask (int) | rule index | ir.Token | regular operand node
    target: int
    lexeme: bool = False  # REGULAR edges: greedy (GLRM terminal) or not
    rid: int = -1  # REGULAR / REPEAT edges: index in CompiledGrammar.regular_edges / repeat_edges


@dataclass
class CompiledGrammar:
    """Per-rule automata of a grammar, shared by all its matchers."""

    eps: list[list[int]] = field(default_factory=list)
    edges: list[list[_Edge]] = field(default_factory=list)
    regular_edges: list[tuple[int, _Edge]] = field(default_factory=list)  # id -> (source, edge)
    repeat_edges: list[tuple[int, _Edge]] = field(default_factory=list)  # id -> (source, edge)
    state_rule: list[int] = field(default_factory=list)
    rule_names: list[str] = field(default_factory=list)
    rule_start: list[int] = field(default_factory=list)
    rule_final: list[int] = field(default_factory=list)
    start_rule: int = 0
    terms: RegularTerms | None = None
    #: per rule: whether it derives any sentence (its start state can reach its final state)
    rule_productive: list[bool] = field(default_factory=list)

    def new_state(self, rule: int) -> int:
        self.eps.append([])
        self.edges.append([])
        self.state_rule.append(rule)
        return len(self.eps) - 1


class _Builder:
    """Thompson construction of rule automata from grammar nodes."""

    def __init__(self, grammar: Grammar) -> None:
        self.g = grammar
        self.cg = CompiledGrammar()
        self.rule_index: dict[str, int] = {}
        self.pending: list[tuple[int, ir.Node]] = []
        self.cg.terms = RegularTerms(self._all_rules())

    def _all_rules(self) -> dict[str, ir.Node]:
        return dict(self.g.rules)

    def rule(self, name: str, body: ir.Node | None = None) -> int:
        """Index of rule ``name``, creating it (and queueing its body) on first use."""
        idx = self.rule_index.get(name)
        if idx is not None:
            return idx
        if body is None:
            if name not in self.g.rules:
                raise GrammarError(f"rule {name!r} is an unbound extern; bind it before matching", rule=name)
            body = self.g.rules[name]
        idx = len(self.cg.rule_names)
        self.rule_index[name] = idx
        self.cg.rule_names.append(name)
        self.cg.rule_start.append(self.cg.new_state(idx))
        self.cg.rule_final.append(self.cg.new_state(idx))
        self.pending.append((idx, body))
        return idx

    def build(self) -> CompiledGrammar:
        self.cg.start_rule = self.rule(self.g.start)
        while self.pending:
            idx, body = self.pending.pop()
            if ir.depth(body) > MAX_BUILD_DEPTH:
                raise LimitError(
                    f"rule {self.cg.rule_names[idx]!r} is nested too deeply to match",
                    limit="max_nesting",
                    value=MAX_BUILD_DEPTH,
                )
            self.fragment(body, self.cg.rule_start[idx], self.cg.rule_final[idx], idx)
        _prune_dead_ends(self.cg)
        return self.cg

    # -- fragments: connect state s to state e through node n --------------------------------

    def fragment(self, n: ir.Node, s: int, e: int, rule: int) -> None:
        cg = self.cg
        if isinstance(n, ir.Literal):
            self.chain(s, e, rule, [1 << b for b in n.data])
        elif isinstance(n, ir.ByteClass):
            cg.edges[s].append(_Edge(BYTES, mask_of_ranges(n.byte_ranges()), e))
        elif isinstance(n, ir.CharClass):
            for seq in class_sequences(n.codepoints()):
                self.chain(s, e, rule, [mask_of(lo, hi) for lo, hi in seq])
        elif isinstance(n, ir.Ref):
            cg.edges[s].append(_Edge(CALL, self.rule(n.name), e))
        elif isinstance(n, ir.Token):
            cg.edges[s].append(_Edge(TOKEN, n, e))
        elif isinstance(n, ir.Seq):
            cur = s
            for i, item in enumerate(n.items):
                nxt = e if i == len(n.items) - 1 else cg.new_state(rule)
                self.fragment(item, cur, nxt, rule)
                cur = nxt
            if not n.items:
                cg.eps[s].append(e)
        elif isinstance(n, ir.Alt):
            for item in n.items:
                a, b = cg.new_state(rule), cg.new_state(rule)
                cg.eps[s].append(a)
                cg.eps[b].append(e)
                self.fragment(item, a, b, rule)
        elif isinstance(n, ir.Repeat):
            self.repeat(n, s, e, rule)
        elif isinstance(n, (ir.Lexeme, ir.Difference, ir.Intersection)):
            operand = n.item if isinstance(n, ir.Lexeme) else n
            for sub in ir.iter_nodes(operand):
                if isinstance(sub, ir.Lexeme):
                    raise GrammarError(
                        "a greedy lexeme cannot be nested inside a regular operand", rule=cg.rule_names[rule]
                    )
            edge = _Edge(REGULAR, operand, e, lexeme=isinstance(n, ir.Lexeme), rid=len(cg.regular_edges))
            cg.edges[s].append(edge)
            cg.regular_edges.append((s, edge))
        else:  # pragma: no cover
            raise TypeError(f"unknown node {n!r}")

    def chain(self, s: int, e: int, rule: int, masks: list[int]) -> None:
        if not masks:
            self.cg.eps[s].append(e)
            return
        cur = s
        for i, m in enumerate(masks):
            nxt = e if i == len(masks) - 1 else self.cg.new_state(rule)
            self.cg.edges[cur].append(_Edge(BYTES, m, nxt))
            cur = nxt

    def repeat(self, n: ir.Repeat, s: int, e: int, rule: int) -> None:
        cg = self.cg
        lo, hi = n.min, n.max
        if lo <= UNROLL_LIMIT and (hi is None or hi <= UNROLL_LIMIT):
            cur = s
            for _ in range(lo):
                nxt = cg.new_state(rule)
                self.fragment(n.item, cur, nxt, rule)
                cur = nxt
            if hi is None:
                # cur -> (item -> cur)* -> e
                loop_in, loop_out = cg.new_state(rule), cg.new_state(rule)
                cg.eps[cur].append(loop_in)
                cg.eps[loop_in].append(e)
                self.fragment(n.item, loop_in, loop_out, rule)
                cg.eps[loop_out].append(loop_in)
            else:
                for _ in range(hi - lo):
                    nxt = cg.new_state(rule)
                    cg.eps[cur].append(e)
                    self.fragment(n.item, cur, nxt, rule)
                    cur = nxt
                cg.eps[cur].append(e)
            return
        # large counts: one REPEAT edge whose items carry the iteration count
        body = n.item
        sub = self.rule(f"\x00rep{len(cg.repeat_edges)}", body)
        edge = _Edge(REPEAT, (sub, lo, hi), e, rid=len(cg.repeat_edges))
        cg.edges[s].append(edge)
        cg.repeat_edges.append((s, edge))


def _crossable(cg: CompiledGrammar, edge: _Edge) -> bool | int:
    """Whether some input crosses ``edge`` (True / False), or the rule whose productivity decides."""
    if edge.kind == BYTES:
        return edge.payload != 0
    if edge.kind == TOKEN:
        return leaf_productive(edge.payload)  # type: ignore[arg-type]
    if edge.kind == REGULAR:
        try:
            return not cg.terms.is_empty(edge.payload)  # type: ignore[union-attr, arg-type]
        except LimitError:
            return True  # too big to decide here; the closure asks again when it gets there
    if edge.kind == CALL:
        return edge.payload  # type: ignore[return-value]
    sub, lo, _hi = edge.payload  # type: ignore[misc]
    return True if lo == 0 else sub


def _prune_dead_ends(cg: CompiledGrammar) -> None:
    """Remove every edge into a state from which its rule's final state cannot be reached.

    A state is *live* when some input leads from it to its rule's final state; a rule is
    productive when its start state is live. Both are found together, backwards from the final
    states (a call edge is crossable once its callee is known productive). Without dead states,
    every item of an Earley set can be completed, so a position with items is one that some
    continuation makes a sentence: ``feed`` answers False as soon as none can (with the usual
    exception of greedy lexemes, whose ending depends on what follows them).
    """
    n = len(cg.eps)
    preds: list[list[tuple[int, bool | int]]] = [[] for _ in range(n)]
    for q in range(n):
        for t in cg.eps[q]:
            preds[t].append((q, True))
        for edge in cg.edges[q]:
            cond = _crossable(cg, edge)
            if cond is not False:
                preds[edge.target].append((q, cond))
    live = [False] * n
    productive = [False] * len(cg.rule_names)
    waiting: list[list[int]] = [[] for _ in cg.rule_names]  # states held back by a rule's call
    todo = list(cg.rule_final)

    while todo:
        q = todo.pop()
        if live[q]:
            continue
        live[q] = True
        rule = cg.state_rule[q]
        if q == cg.rule_start[rule] and not productive[rule]:
            productive[rule] = True
            todo.extend(waiting[rule])
            waiting[rule].clear()
        for src, cond in preds[q]:
            if live[src]:
                continue
            if cond is True or productive[cond]:  # type: ignore[index]
                todo.append(src)
            else:
                waiting[cond].append(src)  # type: ignore[index]
    for q in range(n):
        cg.eps[q] = [t for t in cg.eps[q] if live[t]]
        cg.edges[q] = [
            e
            for e in cg.edges[q]
            if live[e.target] and (c := _crossable(cg, e)) is not False and (c is True or productive[c])
        ]
    cg.rule_productive = productive


def compile_grammar(grammar: Grammar) -> CompiledGrammar:
    """The per-rule automata of ``grammar`` (cached on the grammar object)."""
    cached = grammar._derived.get("matcher")  # noqa: SLF001 - the grammar owns a derived-data cache
    if cached is None:
        cached = _Builder(grammar).build()
        grammar._derived["matcher"] = cached  # noqa: SLF001
    return cached


@dataclass
class _Position:
    """An Earley set: the items reached by scanning (``kernel``) and, once the next input symbol is
    known, its closure and the calls waiting at this position."""

    kernel: frozenset[Item]
    lookahead: frozenset[int] | None = None  # what followed this position, once known
    items: set[Item] | None = None
    waiting: dict[int, list[Item]] | None = None


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
        last = self._positions[-1]
        self._positions[-1] = _Position(last.kernel | by_token)
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
        shared: tuple[set[Item], dict[int, list[Item]]] | None = None
        out = set()
        for c in range(256):
            if shared is None or self._la_sensitive(shared[0]):
                items, waiting = self._closure(cur.kernel, pos, frozenset([c]))
                if shared is None:
                    shared = (items, waiting)
            else:
                items, waiting = shared
            probe = _Position(cur.kernel, frozenset([c]), items, waiting)
            if self._scan(probe, c):
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
        self._positions.append(_Position(nxt))
        return bool(nxt)

    def _finalize(self, p: _Position, la: frozenset[int]) -> tuple[set[Item], dict[int, list[Item]]]:
        """Fix the closure of position ``p`` now that the following input ``la`` is known."""
        if p.items is None or p.lookahead != la:
            pos = self._index_of(p)
            p.items, p.waiting = self._closure(p.kernel, pos, la)
            p.lookahead = la
        return p.items, p.waiting  # type: ignore[return-value]

    def _index_of(self, p: _Position) -> int:
        for i in range(len(self._positions) - 1, -1, -1):
            if self._positions[i] is p:
                return i
        raise AssertionError("position not in this matcher")

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
