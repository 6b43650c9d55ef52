"""Byte-level facts about grammar nodes that decide when GLRM's greedy terminals are harmless.

A GLRM terminal is greedy: it cannot stop where a longer match of the same terminal goes on. That
matters only if a string of its language can be continued into a longer one, so:

* :class:`Shapes` gives, per node, whether its language is *prefix-free* (no string is a proper
  prefix of another: then greedy and exact matching agree), its fixed length in bytes if any,
  its possible first bytes and whether it matches the empty string. The answers are sound
  approximations ("prefix-free" is never claimed wrongly).
* :func:`first_and_nullable` and :func:`follow_sets` compute, for a whole grammar, which bytes
  can come first in each rule and which can follow it (the classic LL sets, over bytes).
* :func:`extension_bytes` finds the bytes that can continue a complete string of a regular
  node into a longer prefix of its language: a greedy terminal is exact wherever none of these
  bytes can follow it. :func:`alphabet_bytes` bounds that set from above in one linear walk
  (every byte any string of the node can contain), which settles most cases without exploring
  the node's automaton.

Everything is iterative; nodes nest arbitrarily deep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import LimitError
from . import ir
from .regular import RegularTerms
from .utf8 import class_sequences, mask_of, mask_of_ranges

ALL_BYTES = (1 << 256) - 1


@dataclass(frozen=True)
class Shape:
    prefix_free: bool
    length: int | None  # every string has this many bytes
    first: int  # 256-bit mask of possible first bytes
    nullable: bool


_UNKNOWN = Shape(False, None, ALL_BYTES, True)
_NOTHING = Shape(True, None, 0, False)


def _char_shape(n: ir.CharClass) -> Shape:
    seqs = class_sequences(n.codepoints())
    if not seqs:
        return _NOTHING
    lengths = {len(s) for s in seqs}
    first = 0
    for s in seqs:
        first |= mask_of(*s[0])
    return Shape(True, lengths.pop() if len(lengths) == 1 else None, first, False)


def _combine(n: ir.Node, kids: list[Shape]) -> Shape:
    if isinstance(n, ir.Literal):
        return Shape(True, len(n.data), (1 << n.data[0]) if n.data else 0, not n.data)
    if isinstance(n, ir.CharClass):
        return _char_shape(n)
    if isinstance(n, ir.ByteClass):
        m = mask_of_ranges(n.byte_ranges())
        return Shape(True, 1, m, False) if m else _NOTHING
    if isinstance(n, ir.Token):
        return Shape(True, None, 0, False)
    if isinstance(n, ir.Seq):
        first = 0
        for k in kids:
            first |= k.first
            if not k.nullable:
                break
        lengths = [k.length for k in kids]
        total = None if any(x is None for x in lengths) else sum(lengths)  # type: ignore[arg-type]
        return Shape(all(k.prefix_free for k in kids), total, first, all(k.nullable for k in kids))
    if isinstance(n, ir.Alt):
        if not kids:
            return _NOTHING
        live = [k for k in kids if k != _NOTHING]
        first = 0
        disjoint = True
        for k in live:
            if first & k.first:
                disjoint = False
            first |= k.first
        lengths = {k.length for k in live}
        same = len(lengths) == 1 and None not in lengths
        nullable = any(k.nullable for k in live)
        pf = all(k.prefix_free for k in live) and (same or len(live) <= 1 or (disjoint and not nullable))
        return Shape(pf, lengths.pop() if same else None, first, nullable)
    if isinstance(n, ir.Repeat):
        k = kids[0]
        if n.max == n.min:
            return Shape(
                k.prefix_free,
                None if k.length is None else k.length * n.min,
                k.first if n.min else 0,
                n.min == 0 or k.nullable,
            )
        return Shape(False, None, k.first, n.min == 0 or k.nullable)
    if isinstance(n, ir.Difference):
        a = kids[0]
        return Shape(a.prefix_free, a.length, a.first, a.nullable)
    if isinstance(n, ir.Intersection):
        a, b = kids
        return Shape(
            a.prefix_free or b.prefix_free,
            a.length if a.length is not None else b.length,
            a.first & b.first,
            a.nullable and b.nullable,
        )
    if isinstance(n, ir.Lexeme):
        return kids[0]
    return _UNKNOWN


class Shapes:
    """Shapes of nodes whose references lead to the rules in ``rules`` (cycles give "unknown")."""

    def __init__(self, rules: Mapping[str, ir.Node]) -> None:
        self._rules = rules
        self._rule_shape: dict[str, Shape] = {}

    def of(self, node: ir.Node) -> Shape:
        self._prepare_refs(node)
        return self._fold(node)

    def _fold(self, node: ir.Node) -> Shape:
        done: dict[int, Shape] = {}
        stack: list[tuple[ir.Node, bool]] = [(node, False)]
        while stack:
            n, expanded = stack.pop()
            if isinstance(n, ir.Ref):
                done[id(n)] = self._rule_shape.get(n.name, _UNKNOWN)
                continue
            kids = n.children()
            if kids and not expanded:
                stack.append((n, True))
                stack.extend((c, False) for c in kids)
                continue
            done[id(n)] = _combine(n, [done[id(c)] for c in kids])
        return done[id(node)]

    def _prepare_refs(self, node: ir.Node) -> None:
        """Compute the shapes of every rule ``node`` reaches, callees first (iterative DFS)."""
        pending = [name for name in sorted(ir.refs(node)) if name not in self._rule_shape]
        visiting: set[str] = set()
        stack: list[tuple[str, bool]] = [(name, False) for name in pending]
        while stack:
            name, ready = stack.pop()
            if name in self._rule_shape:
                continue
            body = self._rules.get(name)
            if body is None:
                self._rule_shape[name] = _UNKNOWN
                continue
            if ready:
                visiting.discard(name)
                self._rule_shape[name] = self._fold(body)
                continue
            if name in visiting:  # a cycle: not regular, nothing can be promised
                self._rule_shape[name] = _UNKNOWN
                continue
            visiting.add(name)
            stack.append((name, True))
            stack.extend((r, False) for r in sorted(ir.refs(body)) if r not in self._rule_shape)


# ---------------------------------------------------------------------------------------------
# Grammar-wide first and follow sets (nt level: lexemes and set operations are opaque atoms)

#: Marker bits beyond the 256 bytes: the end of input, and a whole special token.
END_BIT = 1 << 256
TOKEN_BIT = 1 << 257


def _opaque(n: ir.Node) -> bool:
    return isinstance(n, (ir.Lexeme, ir.Difference, ir.Intersection))


def first_and_nullable(
    rules: Mapping[str, ir.Node], external: Callable[[str], bool]
) -> tuple[dict[str, int], dict[str, bool]]:
    """FIRST masks (bytes, plus :data:`TOKEN_BIT`) and nullability of every rule, by fixpoint.

    ``external(name)`` says a reference names something outside ``rules`` (an unbound extern):
    it may start with anything and may be empty.
    """
    first = {name: 0 for name in rules}
    nullable = {name: False for name in rules}
    shapes = Shapes(rules)
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            f, e = node_first(body, first, nullable, shapes, external)
            if f != first[name] or e != nullable[name]:
                first[name], nullable[name] = f | first[name], e or nullable[name]
                changed = True
    return first, nullable


def node_first(
    node: ir.Node,
    first: Mapping[str, int],
    nullable: Mapping[str, bool],
    shapes: Shapes,
    external: Callable[[str], bool],
) -> tuple[int, bool]:
    """FIRST mask and nullability of an nt-level node, given the current rule tables."""
    done: dict[int, tuple[int, bool]] = {}
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if isinstance(n, ir.Ref):
            done[id(n)] = (
                (ALL_BYTES | TOKEN_BIT, True)
                if external(n.name)
                else (first.get(n.name, 0), nullable.get(n.name, False))
            )
            continue
        if isinstance(n, ir.Token):
            done[id(n)] = (TOKEN_BIT, False)
            continue
        if _opaque(n):
            s = shapes.of(n)
            done[id(n)] = (s.first, s.nullable)
            continue
        kids = n.children()
        if kids and not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids)
            continue
        ks = [done[id(c)] for c in kids]
        if isinstance(n, ir.Seq):
            f, e = 0, True
            for kf, ke in ks:
                f |= kf
                if not ke:
                    e = False
                    break
            done[id(n)] = (f, e)
        elif isinstance(n, ir.Alt):
            done[id(n)] = (_or(k[0] for k in ks), any(k[1] for k in ks))
        elif isinstance(n, ir.Repeat):
            kf, ke = ks[0]
            done[id(n)] = (kf if n.max != 0 else 0, n.min == 0 or ke)
        else:
            s = _combine(n, [])
            done[id(n)] = (s.first, s.nullable)
    return done[id(node)]


def _or(masks: object) -> int:
    out = 0
    for m in masks:  # type: ignore[attr-defined]
        out |= m
    return out


def follow_sets(
    rules: Mapping[str, ir.Node], start: str, external: Callable[[str], bool]
) -> tuple[dict[str, int], Callable[[str], list[tuple[ir.Node, int]]]]:
    """FOLLOW masks of rules (bytes, :data:`END_BIT`, :data:`TOKEN_BIT`) and, per rule, a function
    listing each opaque node of its body with the mask of what can follow that occurrence."""
    first, nullable = first_and_nullable(rules, external)
    shapes = Shapes(rules)
    follow = {name: 0 for name in rules}
    if start in follow:
        follow[start] = END_BIT

    def walk(name: str) -> list[tuple[ir.Node, int, bool]]:
        """(node, follow mask, is-ref) for refs and opaque nodes in rule ``name``'s body."""
        out: list[tuple[ir.Node, int, bool]] = []
        stack: list[tuple[ir.Node, int]] = [(rules[name], follow[name])]
        while stack:
            n, after = stack.pop()
            if isinstance(n, ir.Ref):
                out.append((n, after, True))
            elif _opaque(n):
                out.append((n, after, False))
            elif isinstance(n, ir.Seq):
                rest = after
                for item in reversed(n.items):
                    stack.append((item, rest))
                    f, e = node_first(item, first, nullable, shapes, external)
                    rest = f | (rest if e else 0)
            elif isinstance(n, ir.Alt):
                stack.extend((i, after) for i in n.items)
            elif isinstance(n, ir.Repeat):
                again = 0
                if n.max is None or n.max > 1:
                    again = node_first(n.item, first, nullable, shapes, external)[0]
                stack.append((n.item, after | again))
        return out

    changed = True
    while changed:
        changed = False
        for name in rules:
            for n, after, is_ref in walk(name):
                if is_ref and n.name in follow:  # type: ignore[attr-defined]
                    merged = follow[n.name] | after  # type: ignore[attr-defined]
                    if merged != follow[n.name]:  # type: ignore[attr-defined]
                        follow[n.name] = merged  # type: ignore[attr-defined]
                        changed = True

    def occurrences(name: str) -> list[tuple[ir.Node, int]]:
        return [(n, after) for n, after, is_ref in walk(name) if not is_ref]

    return follow, occurrences


def alphabet_bytes(node: ir.Node, rules: Mapping[str, ir.Node]) -> int:
    """A 256-bit mask holding every byte that occurs in some string of ``node``'s language
    (maybe more): the union over its leaves, narrowed at each intersection.

    Linear in the size of ``node`` and the rules it reaches; a superset of
    :func:`extension_bytes`, so a follow set disjoint from it proves a greedy terminal exact.
    """
    done: dict[int, int] = {}
    rule_mask: dict[str, int] = {}
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in done and not expanded:
            continue
        if isinstance(n, ir.Ref):
            if n.name in rule_mask:
                done[id(n)] = rule_mask[n.name]
                continue
            body = rules.get(n.name)
            if body is None:
                done[id(n)] = ALL_BYTES  # an unbound extern: anything
                continue
            if not expanded:
                rule_mask[n.name] = ALL_BYTES  # a cycle back to this rule adds nothing new; stay sound
                stack.append((n, True))
                stack.append((body, False))
                continue
            rule_mask[n.name] = done[id(n)] = done[id(body)]
            continue
        kids = n.children()
        if not kids:
            done[id(n)] = _leaf_alphabet(n)
            continue
        if not expanded:
            stack.append((n, True))
            stack.extend((k, False) for k in kids)
            continue
        masks = [done[id(k)] for k in kids]
        if isinstance(n, ir.Intersection):
            done[id(n)] = masks[0] & masks[1]
        elif isinstance(n, ir.Difference):
            done[id(n)] = masks[0]
        elif isinstance(n, ir.Repeat) and n.max == 0:
            done[id(n)] = 0
        else:
            done[id(n)] = _or(masks)
    return done[id(node)]


def _leaf_alphabet(n: ir.Node) -> int:
    if isinstance(n, ir.Literal):
        return _or(1 << b for b in set(n.data))
    if isinstance(n, ir.ByteClass):
        return mask_of_ranges(n.byte_ranges())
    if isinstance(n, ir.CharClass):
        return _or(mask_of(lo, hi) for seq in class_sequences(n.codepoints()) for lo, hi in seq)
    return ALL_BYTES  # token atoms and anything else: no claim


def extension_bytes(node: ir.Node, rules: Mapping[str, ir.Node], max_states: int = 5_000) -> int:
    """Bytes ``c`` such that some string ``w`` of ``node``'s language has ``w + c`` as a prefix
    of a string of the language (a greedy terminal could go on with ``c`` after ``w``).

    Raises :class:`~structgen.errors.LimitError` past ``max_states`` derivative states.
    """
    terms = RegularTerms(rules)
    seen = {node}
    frontier = [node]
    out = 0
    while frontier:
        nxt: list[ir.Node] = []
        for t in frontier:
            mask = terms.first_bytes(t)
            grow = terms.nullable(t)
            c = 0
            while mask:
                if mask & 1:
                    d = terms.deriv(t, c)
                    if d != ir.NOTHING and not terms.is_empty(d):
                        if grow:
                            out |= 1 << c
                        if d not in seen:
                            seen.add(d)
                            nxt.append(d)
                mask >>= 1
                c += 1
        if len(seen) > max_states:
            raise LimitError("greedy-terminal analysis explored too many states", limit="max_states", value=max_states)
        frontier = nxt
    return out
