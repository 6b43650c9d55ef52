"""What grammar validation reads from one rule body, in one walk (:func:`scan_rule`).

Its own module, below both :mod:`structgen.grammar.grammar` (validation) and the schema
translator's clean-up (:mod:`structgen.schema.trim`, which finds the same facts in its own walk
and hands them to the grammar), so that neither imports the other.
"""

from __future__ import annotations

from typing import AbstractSet

from . import ir

#: what validation finds in one rule body (:func:`scan_rule`): its depth, the rules it references,
#: whether a set operation or lexeme lies outside a closed subtree, whether it is plain
RuleScan = tuple[int, AbstractSet[str], bool, bool]

#: node kinds without children that are not references: the walks over a rule's nodes do not enter
#: them (a translated grammar's nodes are nearly half literals)
PLAIN_LEAVES = frozenset({ir.Literal, ir.CharClass, ir.ByteClass, ir.Token})


def scan_rule(body: ir.Node) -> tuple[int, set[str], bool, bool]:
    """(:func:`ir.depth` of ``body``, the rules it references, whether a set operation or a lexeme
    outside a closed subtree is in it, whether it is plain: no token atom, lexeme or set operation
    anywhere, closed subtrees included), in one iterative walk over its distinct inner nodes:
    validation needs the first three for every rule, the engine the fourth. Leaves (depth 1) are
    read from their parent, not visited: nearly half of a translated grammar's nodes are literals."""
    if isinstance(body, ir.Ref):
        return 1, {body.name}, False, True
    if body.__class__ in PLAIN_LEAVES:
        return 1, set(), False, body.__class__ is not ir.Token
    leaves = PLAIN_LEAVES
    depth: dict[int, int] = {}
    refs: set[str] = set()
    setops = False
    plain = True
    stack: list[tuple[ir.Node, bool]] = [(body, False)]
    while stack:
        n, expanded = stack.pop()
        if expanded:
            depth[id(n)] = 1 + max([depth.get(id(c), 1) for c in n.children()])
            continue
        if id(n) in depth:
            continue
        closed = ir.closed_facts(n)
        if closed is not None:  # no Ref below, and its operands are regular
            depth[id(n)] = closed.depth
            plain = plain and closed.plain
            continue
        kids = n.children()
        if not kids:
            depth[id(n)] = 1
            continue
        if isinstance(n, (ir.Lexeme, ir.Difference, ir.Intersection)):
            setops = True
        # the node's second visit is queued before its first inner child: a node whose children
        # are all leaves and references (most of them) has depth 2 at once
        inner = False
        for c in kids:
            cls = c.__class__
            if cls in leaves:
                if cls is ir.Token:
                    plain = False
                continue
            if cls is ir.Ref:
                refs.add(c.name)  # type: ignore[attr-defined]
                continue
            if not inner:
                stack.append((n, True))
                inner = True
            if id(c) not in depth:
                stack.append((c, False))
        if not inner:
            depth[id(n)] = 2
    return depth[id(body)], refs, setops, plain and not setops
