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


def declare_all_productive(grammar: Grammar) -> Grammar:
    """Record that every rule of ``grammar`` derives a sentence, without the analysis.

    For a builder that removed the others itself by the same fixpoint (the JSON Schema
    translator's clean-up, schema/trim.py, keeps only productive rules): the engine's lowering
    asks for :func:`productive_rules` of every grammar it compiles, and the walk would repeat the
    translator's. Tests compare the two on the schema corpora."""
    grammar._derived[_CACHE_KEY] = frozenset(grammar.rules)  # noqa: SLF001 - the grammar's derived-data cache
    return grammar


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


def without_dead_ends(grammar: Grammar) -> Grammar:
    """``grammar`` with every part that derives nothing removed: rules without sentences, the
    options of a choice that lead into one, optional repetitions of one. The language is the
    same; what changes is what an engine that does not run this analysis offers. Exported text
    (GBNF for llama.cpp, GLRM for glrmask) is written from this form, so that those engines never
    let a model into a branch it cannot finish. A grammar whose start rule derives nothing is
    returned as it is (there is nothing to keep)."""
    live_rules = productive_rules(grammar)
    if len(live_rules) == len(grammar.rules) or grammar.start not in live_rules:
        return grammar
    memo: dict[int, ir.Node | None] = {}
    rules = {}
    for name, body in grammar.rules.items():
        if name in live_rules:
            pruned = _prune(body, grammar, live_rules, memo)
            assert pruned is not None  # a productive rule's body is productive
            rules[name] = pruned
    return type(grammar)(rules, grammar.start, externs=grammar.externs)


def _prune(
    root: ir.Node, grammar: Grammar, live_rules: frozenset[str], memo: dict[int, ir.Node | None]
) -> ir.Node | None:
    """The node without its dead parts, or None where it derives nothing; iterative post-order
    (grammars may nest deeply), each distinct node once."""
    stack: list[tuple[ir.Node, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in memo:
            continue
        closed = ir.closed_facts(n)
        if closed is not None and closed.plain:
            memo[id(n)] = n if closed.shortest is not None else None
            continue
        if isinstance(n, ir.Ref):
            memo[id(n)] = n if (n.name in live_rules or n.name not in grammar.rules) else None
            continue
        kids = n.children()
        if not kids:
            memo[id(n)] = n if leaf_productive(n) else None
            continue
        if not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids if id(c) not in memo)
            continue
        memo[id(n)] = _rebuilt(n, [memo[id(c)] for c in kids])
    return memo[id(root)]


def _rebuilt(n: ir.Node, new: list[ir.Node | None]) -> ir.Node | None:
    kids = n.children()
    if isinstance(n, ir.Alt):
        alive = [k for k in new if k is not None]
        if not alive:
            return None
        return n if len(alive) == len(kids) and all(a is b for a, b in zip(alive, kids)) else ir.alt(*alive)
    if isinstance(n, ir.Repeat):
        if new[0] is None:
            return ir.EMPTY if n.min == 0 else None
        return n if new[0] is kids[0] else ir.Repeat(new[0], n.min, n.max)
    if isinstance(n, ir.Difference):
        left, right = new
        if left is None:
            return None
        if right is None:  # nothing to take away
            return left
        return n if left is kids[0] and right is kids[1] else ir.Difference(left, right)
    if any(k is None for k in new):  # a sequence, an intersection, a lexeme: every part is needed
        return None
    if all(a is b for a, b in zip(new, kids)):
        return n
    if isinstance(n, ir.Seq):
        return ir.Seq(tuple(new))  # type: ignore[arg-type]
    if isinstance(n, ir.Lexeme):
        return ir.Lexeme(new[0])  # type: ignore[arg-type]
    if isinstance(n, ir.Intersection):
        return ir.Intersection(new[0], new[1])  # type: ignore[arg-type]
    raise TypeError(f"unknown node {n!r}")  # pragma: no cover - every kind with children is above
