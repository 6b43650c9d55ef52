"""Grammar clean-up after translation: drop what can never match, inline single-use rules.

* *Productive* rules can derive at least one string; references to the others are replaced by
  "nothing" and the alternatives holding them fall away, so the grammar has no dead ends that a
  token mask would have to discover (a required property whose schema is ``false``, recursion
  with no base case...).
* Unreachable rules are dropped.
* A rule referenced exactly once, not recursive, is inlined where that keeps bodies shallow.

Everything is iterative: grammars may have many rules and long chains.
"""

from __future__ import annotations

from typing import Callable

from ..grammar import ir


def _rebuild(node: ir.Node, leaf: Callable[[ir.Node], ir.Node]) -> ir.Node:
    """``node`` rebuilt bottom-up with the smart constructors, leaves mapped by ``leaf``."""
    done: dict[int, ir.Node] = {}
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        kids = n.children()
        if not kids:
            done[id(n)] = leaf(n)
            continue
        if not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids)
            continue
        new = [done[id(c)] for c in kids]
        if all(a is b for a, b in zip(new, kids)):
            done[id(n)] = n
        elif isinstance(n, ir.Seq):
            done[id(n)] = ir.seq(*new)
        elif isinstance(n, ir.Alt):
            done[id(n)] = ir.alt(*new)
        elif isinstance(n, ir.Repeat):
            item = new[0]
            if item == ir.NOTHING:
                done[id(n)] = ir.EMPTY if n.min == 0 else ir.NOTHING
            else:
                done[id(n)] = ir.repeat(item, n.min, n.max)
        elif isinstance(n, ir.Lexeme):
            done[id(n)] = ir.NOTHING if new[0] == ir.NOTHING else ir.Lexeme(new[0])
        elif isinstance(n, ir.Difference):
            if new[0] == ir.NOTHING:
                done[id(n)] = ir.NOTHING
            elif new[1] == ir.NOTHING:
                done[id(n)] = new[0]
            else:
                done[id(n)] = ir.Difference(new[0], new[1])
        elif isinstance(n, ir.Intersection):
            if ir.NOTHING in new:
                done[id(n)] = ir.NOTHING
            else:
                done[id(n)] = ir.Intersection(new[0], new[1])
        else:  # pragma: no cover
            raise TypeError(type(n))
    return done[id(node)]


def _productive_node(node: ir.Node, productive: set[str]) -> bool:
    value: dict[int, bool] = {}
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        kids = n.children()
        if kids and not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids)
            continue
        if isinstance(n, ir.Ref):
            v = n.name in productive
        elif isinstance(n, ir.CharClass):
            v = bool(n.codepoints())
        elif isinstance(n, ir.ByteClass):
            v = bool(n.byte_ranges())
        elif isinstance(n, (ir.Literal, ir.Token)):
            v = True
        elif isinstance(n, ir.Seq):
            v = all(value[id(c)] for c in kids)
        elif isinstance(n, ir.Alt):
            v = any(value[id(c)] for c in kids)
        elif isinstance(n, ir.Repeat):
            v = n.min == 0 or value[id(kids[0])]
        elif isinstance(n, (ir.Lexeme, ir.Difference)):
            v = value[id(kids[0])]
        elif isinstance(n, ir.Intersection):
            v = value[id(kids[0])] and value[id(kids[1])]
        else:  # pragma: no cover
            v = True
        value[id(n)] = v
    return value[id(node)]


def productive_rules(rules: dict[str, ir.Node]) -> set[str]:
    users: dict[str, set[str]] = {}
    for name, body in rules.items():
        for r in ir.refs(body):
            users.setdefault(r, set()).add(name)
    productive: set[str] = set()
    work = list(rules)
    queued = set(work)
    while work:
        name = work.pop()
        queued.discard(name)
        if name in productive:
            continue
        if _productive_node(rules[name], productive):
            productive.add(name)
            for u in users.get(name, ()):
                if u not in productive and u not in queued:
                    queued.add(u)
                    work.append(u)
    return productive


def reachable_rules(rules: dict[str, ir.Node], start: str) -> list[str]:
    seen = {start}
    order = [start]
    i = 0
    while i < len(order):
        for r in sorted(ir.refs(rules[order[i]])):
            if r in rules and r not in seen:
                seen.add(r)
                order.append(r)
        i += 1
    return order


def _recursive(rules: dict[str, ir.Node]) -> set[str]:
    from ..grammar import Grammar

    return set(Grammar(rules, next(iter(rules))).recursive_rules()) if rules else set()


def trim(rules: dict[str, ir.Node], start: str, *, inline_depth: int = 40, max_depth: int = 150) -> dict[str, ir.Node]:
    """Productive, reachable rules with single-use rules inlined; ``{}`` if ``start`` derives nothing."""
    productive = productive_rules(rules)
    if start not in productive:
        return {}

    def cut(n: ir.Node) -> ir.Node:
        return ir.NOTHING if isinstance(n, ir.Ref) and n.name not in productive else n

    cleaned = {name: _rebuild(body, cut) for name, body in rules.items() if name in productive}
    order = reachable_rules(cleaned, start)
    cleaned = {name: cleaned[name] for name in order}
    return _inline(cleaned, start, inline_depth, max_depth)


def _inline(rules: dict[str, ir.Node], start: str, inline_depth: int, max_depth: int) -> dict[str, ir.Node]:
    count: dict[str, int] = {}
    for body in rules.values():
        for n in ir.iter_nodes(body):
            if isinstance(n, ir.Ref):
                count[n.name] = count.get(n.name, 0) + 1
    recursive = _recursive(rules)
    candidates = {n for n, c in count.items() if c == 1 and n != start and n not in recursive and n in rules}
    # callees before callers: reverse of a DFS post-order over non-recursive references
    order: list[str] = []
    state: dict[str, int] = {}
    for root in rules:
        if root in state:
            continue
        stack = [(root, iter(sorted(ir.refs(rules[root]))))]
        state[root] = 1
        while stack:
            name, it = stack[-1]
            advanced = False
            for r in it:
                if r in rules and r not in state:
                    state[r] = 1
                    stack.append((r, iter(sorted(ir.refs(rules[r])))))
                    advanced = True
                    break
            if not advanced:
                stack.pop()
                state[name] = 2
                order.append(name)
    final: dict[str, ir.Node] = {}
    depth_of: dict[str, int] = {}
    inlined: set[str] = set()
    for name in order:
        body = rules[name]
        if ir.depth(body) <= max_depth - inline_depth:

            def sub(n: ir.Node) -> ir.Node:
                if isinstance(n, ir.Ref) and n.name in candidates and n.name in final and depth_of[n.name] <= inline_depth:
                    inlined.add(n.name)
                    return final[n.name]
                return n

            body = _rebuild(body, sub)
        final[name] = body
        depth_of[name] = ir.depth(body)
    return {name: final[name] for name in rules if name not in inlined}
