"""GLRM's separated sequences, ``sep ~ (i1 i2? i3* ...)``, in the grammar form.

The items appear in order, each as often as its quantifier allows, with ``sep`` between every two
*present* occurrences. glrmask 0.5.0 counts an occurrence as present only if it matched
something: an item that matched the empty string is absent and gets no separator
(``"," ~ ("b" r)`` with ``nt r = "a"?;`` accepts ``b`` and ``b,a`` but not ``b,``). The one
exception is an item that is the empty string itself (``eps``, ``""``): it may be present, once,
with its separator (``"," ~ ("b" eps)`` accepts ``b`` and ``b,``).

So an item that can match the empty string is replaced by its non-empty part, and made optional:
:class:`NonEmpty` builds ``L(x) - {""}`` for any node, with a non-empty twin ``R~+`` for each
nullable rule it reaches (bodies filled in once every rule is known).
"""

from __future__ import annotations

from collections.abc import Callable

from . import ir

Item = tuple[ir.Node, int, "int | None"]


def node_nullable(root: ir.Node, rule_nullable: Callable[[str], bool]) -> bool:
    """Whether ``root`` matches the empty string, given each rule's answer (iterative)."""
    done: dict[int, bool] = {}
    stack: list[tuple[ir.Node, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        kids = n.children()
        if kids and not expanded:
            stack.append((n, True))
            stack.extend((k, False) for k in kids)
            continue
        ks = [done[id(k)] for k in kids]
        if isinstance(n, ir.Literal):
            r = not n.data
        elif isinstance(n, ir.Ref):
            r = rule_nullable(n.name)
        elif isinstance(n, ir.Seq):
            r = all(ks)
        elif isinstance(n, ir.Alt):
            r = any(ks)
        elif isinstance(n, ir.Repeat):
            r = n.min == 0 or ks[0]
        elif isinstance(n, ir.Lexeme):
            r = ks[0]
        elif isinstance(n, ir.Difference):
            r = ks[0] and not ks[1]
        elif isinstance(n, ir.Intersection):
            r = ks[0] and ks[1]
        else:  # classes and tokens
            r = False
        done[id(n)] = r
    return done[id(root)]


class NonEmpty:
    """``L(x) - {""}`` as nodes; references to nullable rules go to their non-empty twins.

    ``twin(name)`` must return the name of rule ``name``'s non-empty twin, arranging for its body
    (``NonEmpty.of(body)``) to be made; ``rule_nullable`` answers for every rule (an unknown one,
    such as an extern, is taken as never empty).
    """

    def __init__(self, rule_nullable: Callable[[str], bool], twin: Callable[[str], str]) -> None:
        self.rule_nullable = rule_nullable
        self.twin = twin

    def of(self, root: ir.Node) -> ir.Node:
        # bottom-up: for each node, (nullable, its non-empty part)
        done: dict[int, tuple[bool, ir.Node]] = {}
        stack: list[tuple[ir.Node, bool]] = [(root, False)]
        while stack:
            n, expanded = stack.pop()
            kids = () if isinstance(n, (ir.Lexeme, ir.Difference, ir.Intersection)) else n.children()
            if kids and not expanded:
                stack.append((n, True))
                stack.extend((k, False) for k in kids)
                continue
            done[id(n)] = self._one(n, [done[id(k)] for k in kids])
        return done[id(root)][1]

    def _one(self, n: ir.Node, ks: list[tuple[bool, ir.Node]]) -> tuple[bool, ir.Node]:
        if isinstance(n, ir.Literal):
            return (True, ir.NOTHING) if not n.data else (False, n)
        if isinstance(n, ir.Ref):
            if self.rule_nullable(n.name):
                return True, ir.Ref(self.twin(n.name))
            return False, n
        if isinstance(n, (ir.Lexeme, ir.Difference, ir.Intersection)):
            if node_nullable(n, self.rule_nullable):
                inner = n.item if isinstance(n, ir.Lexeme) else n
                part = ir.Difference(inner, ir.EMPTY)
                return True, ir.Lexeme(part) if isinstance(n, ir.Lexeme) else part
            return False, n
        if isinstance(n, ir.Seq):
            # the first non-empty item comes after a run of items that matched nothing
            choices = []
            for i, (nullable, part) in enumerate(ks):
                choices.append(ir.seq(part, *n.items[i + 1 :]))
                if not nullable:
                    break
            return all(k[0] for k in ks), ir.alt(*choices) if ks else ir.NOTHING
        if isinstance(n, ir.Alt):
            return any(k[0] for k in ks), ir.alt(*(k[1] for k in ks))
        if isinstance(n, ir.Repeat):
            nullable, part = ks[0]
            if n.max == 0:
                return True, ir.NOTHING
            rest = ir.repeat(n.item, max(n.min - 1, 0), None if n.max is None else n.max - 1)
            return n.min == 0 or nullable, ir.seq(part, rest)
        return False, n  # classes and tokens are never empty


def prepare_items(
    items: list[Item],
    empty_items: list[bool],
    nullable: Callable[[ir.Node], bool],
    non_empty: Callable[[ir.Node], ir.Node],
) -> list[Item]:
    """Items as :func:`separated` takes them, with glrmask's reading of empty matches.

    ``empty_items`` marks the items written as the empty string itself (``eps``, ``""``).
    """
    out: list[Item] = []
    for (node, lo, hi), empty in zip(items, empty_items):
        if empty:
            out.append((node, 0, 0 if hi == 0 else 1))  # present at most once, with its separator
        elif hi != 0 and nullable(node):
            out.append((non_empty(node), 0, hi))  # an empty match is an absent occurrence
        else:
            out.append((node, lo, hi))
    return out


def separated(
    sep: ir.Node,
    items: list[Item],
    at_least_one: bool,
    helper_rule: Callable[[ir.Node], ir.Node],
    inline_nodes: int,
) -> ir.Node:
    """``sep ~ (items)``: the present item occurrences in order, ``sep`` between each two.

    The first present occurrence is not preceded by ``sep``; every later one is. Only items up to
    the first mandatory one can be the first present. Written out, that is quadratic in the number
    of leading optional items, so long lists share their tails through helper rules.
    """
    n = len(items)
    leading = next((j for j, (_i, lo, _h) in enumerate(items) if lo >= 1), n)

    def later(item: ir.Node, lo: int, hi: int | None) -> ir.Node:  # after something: (sep item){lo,hi}
        return ir.repeat(ir.seq(sep, item), lo, hi)

    def first(item: ir.Node, lo: int, hi: int | None) -> ir.Node:  # the first present: item (sep item)*
        return ir.seq(item, later(item, max(lo - 1, 0), None if hi is None else hi - 1))

    if (leading + 1) * n <= inline_nodes:
        choices: list[ir.Node] = []
        for j, (item, lo, hi) in enumerate(items):
            if hi == 0:
                continue  # never present
            choices.append(ir.seq(first(item, lo, hi), *(later(*rest) for rest in items[j + 1 :])))
            if lo >= 1:
                break
        else:
            if not at_least_one:
                choices.append(ir.EMPTY)
        return ir.alt(*choices)
    # tail[k]: items k.. after something was present; head[k]: items k.. before anything was
    tail: ir.Node = ir.EMPTY
    tails = [tail]
    for item, lo, hi in reversed(items):
        tail = helper_rule(ir.seq(later(item, lo, hi), tail))
        tails.append(tail)
    tails.reverse()
    head: ir.Node = ir.NOTHING if at_least_one else ir.EMPTY
    for k in range(min(leading, n - 1), -1, -1):
        item, lo, hi = items[k]
        present = ir.NOTHING if hi == 0 else ir.seq(first(item, lo, hi), tails[k + 1])
        head = ir.alt(head, present) if lo == 0 else present
        if k:
            head = helper_rule(head)
    return head
