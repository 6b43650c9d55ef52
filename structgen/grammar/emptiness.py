"""Which rules of a grammar derive no sentence at all: the productivity (emptiness) analysis.

A rule is *productive* when it derives at least one string. Productivity is a least fixpoint over
the rules (``x ::= "a" x`` is not productive, ``x ::= "a" x | "b"`` is), computed here in one
linear pass over the grammar's node DAG, as the satisfiability of an AND/OR circuit: a sequence
needs all its parts, a choice one option, a reference its rule. Truth spreads upwards from the
leaves that match something, so each node and each parent link is visited once.

A rule that is not productive is a dead end wherever it is referenced: the mask engine's lowering
and the reference matcher use this analysis so that no token leading into one is ever allowed
(``root ::= "a" x | "b"`` with ``x ::= [z-a]`` allows only ``b``).

Syntax decides productivity for everything but the GLRM-only operators over regular operands:
whether ``a - b`` or ``a & b`` is empty, or a greedy lexeme can end in its context, needs a search
over their automata, not a look at their shape. Those count as productive here when their operands
are (a difference when its left side is); the engine's term store and the matcher's regular terms
search them exactly where they meet them. A token atom counts as productive unless it can match no
token at all (no ids, no name, not negated): which ids a vocabulary has is known only later.
An unbound ``grammar`` extern counts as productive: it is not known until it is bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import ir

if TYPE_CHECKING:
    from .grammar import Grammar

_CACHE_KEY = "emptiness.productive"


def productive_rules(grammar: Grammar) -> frozenset[str]:
    """The rules of ``grammar`` that derive at least one sentence (cached on the grammar)."""
    cached = grammar._derived.get(_CACHE_KEY)  # noqa: SLF001 - the grammar owns a derived-data cache
    if cached is None:
        cached = _productive(grammar)
        grammar._derived[_CACHE_KEY] = cached  # noqa: SLF001
    return cached  # type: ignore[no-any-return]


def empty_rules(grammar: Grammar) -> frozenset[str]:
    """The rules of ``grammar`` whose language is empty (what :func:`productive_rules` leaves out)."""
    return frozenset(grammar.rules) - productive_rules(grammar)


def is_empty_language(grammar: Grammar) -> bool:
    """Whether ``grammar`` has no sentence at all (its start rule derives nothing)."""
    if grammar.start not in grammar.rules:
        return False  # an unbound grammar extern: unknown until bound
    return grammar.start not in productive_rules(grammar)


def leaf_productive(node: ir.Node) -> bool:
    """Whether a node without children matches at least one string (or token)."""
    if isinstance(node, ir.Literal):
        return True
    if isinstance(node, ir.CharClass):
        return bool(node.codepoints())
    if isinstance(node, ir.ByteClass):
        return bool(node.byte_ranges())
    if isinstance(node, ir.Token):
        return bool(node.ids) or node.name is not None or node.negated
    if isinstance(node, ir.Seq):  # the empty sequence
        return True
    if isinstance(node, ir.Alt):  # the empty choice
        return False
    raise TypeError(f"{type(node).__name__} is not a leaf")


def _needed_children(node: ir.Node) -> tuple[tuple[ir.Node, ...], bool]:
    """(the children whose productivity decides ``node``'s, whether all of them are needed)."""
    if isinstance(node, ir.Seq):
        return node.items, True
    if isinstance(node, ir.Alt):
        return node.items, False
    if isinstance(node, ir.Repeat):
        return ((), True) if node.min == 0 or node.max == 0 else ((node.item,), True)
    if isinstance(node, ir.Lexeme):
        return (node.item,), True
    if isinstance(node, ir.Difference):
        return (node.left,), True
    if isinstance(node, ir.Intersection):
        return (node.left, node.right), True
    raise TypeError(f"unknown node {node!r}")  # pragma: no cover - every kind with children is above


def _productive(grammar: Grammar) -> frozenset[str]:
    # Circuit vertices: one per distinct node object (by identity, shared subtrees once) and one
    # per rule. ``missing[v]`` counts what v still needs to become true: the number of distinct
    # children of an AND vertex, 1 for an OR vertex (any child will do) or a rule (its body).
    index: dict[int, int] = {}
    missing: list[int] = []
    parents: list[list[int]] = []
    rule_vertex: dict[str, int] = {}
    true_now: list[int] = []
    links: list[tuple[int, list[ir.Node]]] = []  # (vertex, its distinct children), linked below

    def vertex() -> int:
        missing.append(0)
        parents.append([])
        return len(missing) - 1

    for name in grammar.rules:
        rule_vertex[name] = vertex()
    for name, body in grammar.rules.items():
        todo = [body]
        while todo:
            n = todo.pop()
            if id(n) in index:
                continue
            v = index[id(n)] = vertex()
            closed = ir.closed_facts(n)
            if closed is not None and closed.plain:
                # a marked subtree (a format grammar): its shortest sentence was found when marked
                if closed.shortest is not None:
                    true_now.append(v)
                continue
            if isinstance(n, ir.Ref):
                target = rule_vertex.get(n.name)
                if target is None:  # an unbound grammar extern
                    true_now.append(v)
                else:
                    missing[v] = 1
                    parents[target].append(v)
                continue
            kids = n.children()
            if not kids:
                if leaf_productive(n):
                    true_now.append(v)
                continue
            needed, conjunctive = _needed_children(n)
            distinct = list({id(c): c for c in needed}.values())
            if not distinct:
                true_now.append(v)
                continue
            missing[v] = len(distinct) if conjunctive else 1
            for c in distinct:
                todo.append(c)
            links.append((v, distinct))  # linked once the children have vertices
        root = index[id(body)]
        missing[rule_vertex[name]] = 1
        parents[root].append(rule_vertex[name])
        for v, distinct in links:
            for c in distinct:
                parents[index[id(c)]].append(v)
        links.clear()

    done = [False] * len(missing)
    while true_now:
        v = true_now.pop()
        if done[v]:
            continue
        done[v] = True
        for p in parents[v]:
            if not done[p]:
                missing[p] -= 1
                if missing[p] <= 0:
                    true_now.append(p)
    return frozenset(name for name, v in rule_vertex.items() if done[v])
