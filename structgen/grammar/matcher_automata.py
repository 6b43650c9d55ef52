"""Per-rule automata of a grammar, as the reference matcher (:mod:`.matcher`) walks them.

Each rule body is compiled (Thompson construction) into a small automaton whose edges read a byte
set, call a rule, read a token atom, read a *regular operand* (GLRM's greedy lexemes and the set
operations, simulated by derivatives in :mod:`.regular`) or repeat a helper rule a counted number
of times. Counted repetition is never expanded into copies beyond a small bound: ``x{m,n}`` with
large counts becomes one edge whose items carry the iteration count.

States from which the rule's final state cannot be reached are pruned, so that every Earley item
of the matcher can be completed in *some* context; where a greedy lexeme may end depends on the
context too, which :mod:`.lexeme_liveness` decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import GrammarError, LimitError
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
#: Deepest rule body the compiler walks (bodies are validated against GrammarLimits first).
MAX_BUILD_DEPTH = 400


@dataclass
class Edge:
    kind: int
    payload: object  # byte mask (int) | rule index | ir.Token | regular operand node
    target: int
    lexeme: bool = False  # REGULAR edges: greedy (GLRM terminal) or not
    rid: int = -1  # REGULAR / REPEAT edges: index in CompiledGrammar.regular_edges / repeat_edges


@dataclass
class CompiledGrammar:
    """Per-rule automata of a grammar, shared by all its matchers."""

    eps: list[list[int]] = field(default_factory=list)
    edges: list[list[Edge]] = field(default_factory=list)
    regular_edges: list[tuple[int, Edge]] = field(default_factory=list)  # id -> (source, edge)
    repeat_edges: list[tuple[int, Edge]] = field(default_factory=list)  # id -> (source, edge)
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
        prune_dead_ends(self.cg)
        return self.cg

    # -- fragments: connect state s to state e through node n --------------------------------

    def fragment(self, n: ir.Node, s: int, e: int, rule: int) -> None:
        cg = self.cg
        if isinstance(n, ir.Literal):
            self.chain(s, e, rule, [1 << b for b in n.data])
        elif isinstance(n, ir.ByteClass):
            cg.edges[s].append(Edge(BYTES, mask_of_ranges(n.byte_ranges()), e))
        elif isinstance(n, ir.CharClass):
            for seq in class_sequences(n.codepoints()):
                self.chain(s, e, rule, [mask_of(lo, hi) for lo, hi in seq])
        elif isinstance(n, ir.Ref):
            cg.edges[s].append(Edge(CALL, self.rule(n.name), e))
        elif isinstance(n, ir.Token):
            cg.edges[s].append(Edge(TOKEN, n, e))
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
            edge = Edge(REGULAR, operand, e, lexeme=isinstance(n, ir.Lexeme), rid=len(cg.regular_edges))
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
            self.cg.edges[cur].append(Edge(BYTES, m, nxt))
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
        edge = Edge(REPEAT, (sub, lo, hi), e, rid=len(cg.repeat_edges))
        cg.edges[s].append(edge)
        cg.repeat_edges.append((s, edge))


def _crossable(cg: CompiledGrammar, edge: Edge) -> bool | int:
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


def prune_dead_ends(cg: CompiledGrammar) -> None:
    """Remove every edge into a state from which its rule's final state cannot be reached.

    A state is *live* when some input leads from it to its rule's final state; a rule is
    productive when its start state is live. Both are found together, backwards from the final
    states (a call edge is crossable once its callee is known productive). Without dead states,
    every item of an Earley set can be completed, so a position with items is one that some
    continuation makes a sentence in *some* context. A greedy lexeme's ending depends on what
    follows its rule, which this context-free pass does not see (it counts a non-empty lexeme as
    crossable); :mod:`.lexeme_liveness` decides that per context, for the matcher's ``feed``.
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
