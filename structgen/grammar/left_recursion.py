"""Which rules of a grammar form can derive the empty string, and which are left-recursive.

Used where a target cannot take left recursion (llama.cpp's GBNF): a rule is left-recursive when
it can derive a string that begins with itself, every symbol before it deriving the empty string.
Both analyses are linear in the size of the rules (counted once per shared node object) and never
recurse in Python.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from . import ir


def nullable_nodes(rules: Mapping[str, ir.Node]) -> tuple[set[str], set[int]]:
    """The rules that derive the empty string, and the ``id()`` of every such node in their bodies.

    Sequences are "and" gates, choices "or" gates; nullability spreads up from the empty leaves.
    """
    parents: dict[Hashable, list[Hashable]] = {}
    pending: dict[int, int] = {}  # sequence node id -> items not yet known to be nullable
    ready: list[Hashable] = []
    seen: set[int] = set()
    for name, body in rules.items():
        parents.setdefault(id(body), []).append(("rule", name))
        work = [body]
        while work:
            node = work.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            kids = node.children()
            work.extend(kids)
            if isinstance(node, (ir.Seq, ir.Alt, ir.Repeat)):
                for kid in kids:
                    parents.setdefault(id(kid), []).append(id(node))
            if isinstance(node, ir.Literal):
                if not node.data:
                    ready.append(id(node))
            elif isinstance(node, ir.Ref):
                parents.setdefault(("rule", node.name), []).append(id(node))
            elif isinstance(node, ir.Seq):
                pending[id(node)] = len(node.items)
                if not node.items:
                    ready.append(id(node))
            elif isinstance(node, ir.Repeat) and (node.min == 0 or node.max == 0):
                ready.append(id(node))
            # Lexeme, Difference, Intersection count as not nullable (callers refuse them)
    done: set[Hashable] = set()
    while ready:
        key = ready.pop()
        if key in done:
            continue
        done.add(key)
        for parent in parents.get(key, ()):
            if isinstance(parent, int) and parent in pending:
                pending[parent] -= 1
                if pending[parent]:
                    continue
            ready.append(parent)
    names = {k[1] for k in done if isinstance(k, tuple)}
    return names, {k for k in done if isinstance(k, int)}


def left_recursive_rule(rules: Mapping[str, ir.Node]) -> str | None:
    """A rule that can derive a string beginning with itself, or ``None``."""
    _, nullable = nullable_nodes(rules)
    edges = {name: sorted(_left_refs(body, nullable)) for name, body in rules.items()}
    color = dict.fromkeys(rules, 0)  # 0 unvisited, 1 on the current path, 2 finished
    for root in rules:
        if color[root]:
            continue
        color[root] = 1
        path = [root]
        todo = [list(edges[root])]
        while path:
            if not todo[-1]:
                color[path.pop()] = 2
                todo.pop()
                continue
            w = todo[-1].pop()
            state = color.get(w, 2)  # references to externs lead nowhere
            if state == 1:
                return w
            if state == 0:
                color[w] = 1
                path.append(w)
                todo.append(list(edges[w]))
    return None


def _left_refs(root: ir.Node, nullable: set[int]) -> set[str]:
    """Rules referenced where nothing non-empty has to come before them."""
    out: set[str] = set()
    work = [root]
    seen: set[int] = set()
    while work:
        node = work.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ir.Ref):
            out.add(node.name)
        elif isinstance(node, ir.Seq):
            for item in node.items:
                work.append(item)
                if id(item) not in nullable:
                    break
        elif isinstance(node, ir.Alt):
            work.extend(node.items)
        elif isinstance(node, ir.Repeat) and node.max != 0:
            work.append(node.item)
        elif isinstance(node, (ir.Lexeme, ir.Difference, ir.Intersection)):
            work.extend(node.children())
    return out
