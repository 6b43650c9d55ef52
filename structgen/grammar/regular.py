"""Reference semantics of regular operands by Brzozowski derivatives over grammar nodes.

The byte-level matcher uses this module for the GLRM-only constructs whose operands are regular
(:class:`~structgen.grammar.ir.Lexeme`, :class:`~structgen.grammar.ir.Difference`,
:class:`~structgen.grammar.ir.Intersection`): the state inside such an operand is a node, the
derivative of the operand by the bytes read so far. Nodes are kept canonical (sequences flattened,
choices deduplicated and sorted, the empty language absorbed) so that the set of derivatives of a
term stays finite.

This is written for clarity, as a reference: the token mask engine has its own fast automata and is
tested against the matcher.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from .. import caches
from ..errors import LimitError
from . import ir
from .utf8 import class_sequences, mask_of, mask_of_ranges

NOTHING = ir.NOTHING
EMPTY = ir.EMPTY

#: Bound on derivative states explored by one emptiness check.
MAX_EMPTINESS_STATES = 20_000


class RegularTerms:
    """Derivatives, nullability and emptiness of regular nodes of one grammar (refs are inlined)."""

    def __init__(self, rules: Mapping[str, ir.Node]) -> None:
        self._rules = rules
        self._nullable: dict[ir.Node, bool] = {}
        self._deriv: dict[tuple[ir.Node, int], ir.Node] = {}
        self._empty: dict[ir.Node, bool] = {}

    # -- canonical constructors ---------------------------------------------------------------

    @staticmethod
    def cat(a: ir.Node, b: ir.Node) -> ir.Node:
        if a == NOTHING or b == NOTHING:
            return NOTHING
        if a == EMPTY:
            return b
        if b == EMPTY:
            return a
        left = a.items if isinstance(a, ir.Seq) else (a,)
        right = b.items if isinstance(b, ir.Seq) else (b,)
        return ir.Seq(left + right)

    @staticmethod
    def union(items: list[ir.Node]) -> ir.Node:
        flat: set[ir.Node] = set()
        for it in items:
            if isinstance(it, ir.Alt):
                flat.update(it.items)
            elif it != NOTHING:
                flat.add(it)
        if not flat:
            return NOTHING
        if len(flat) == 1:
            return next(iter(flat))
        return ir.Alt(tuple(sorted(flat, key=hash)))

    # -- nullability --------------------------------------------------------------------------

    def nullable(self, n: ir.Node) -> bool:
        cached = self._nullable.get(n)
        if cached is not None:
            return cached
        if isinstance(n, ir.Literal):
            r = not n.data
        elif isinstance(n, (ir.CharClass, ir.ByteClass)):
            r = False
        elif isinstance(n, ir.Seq):
            r = all(self.nullable(i) for i in n.items)
        elif isinstance(n, ir.Alt):
            r = any(self.nullable(i) for i in n.items)
        elif isinstance(n, ir.Repeat):
            r = n.min == 0 or self.nullable(n.item)
        elif isinstance(n, ir.Ref):
            r = self.nullable(self._rules[n.name])
        elif isinstance(n, ir.Difference):
            r = self.nullable(n.left) and not self.nullable(n.right)
        elif isinstance(n, ir.Intersection):
            r = self.nullable(n.left) and self.nullable(n.right)
        else:
            raise TypeError(f"{type(n).__name__} cannot appear in a regular operand")
        self._nullable[n] = r
        return r

    # -- derivatives --------------------------------------------------------------------------

    def deriv(self, n: ir.Node, c: int) -> ir.Node:
        """The node matching ``{w : bytes([c]) + w in L(n)}``."""
        key = (n, c)
        cached = self._deriv.get(key)
        if cached is not None:
            return cached
        if isinstance(n, ir.Literal):
            r = ir.Literal(n.data[1:]) if n.data and n.data[0] == c else NOTHING
            if r == ir.Literal(b""):
                r = EMPTY
        elif isinstance(n, ir.ByteClass):
            r = EMPTY if mask_of_ranges(n.byte_ranges()) >> c & 1 else NOTHING
        elif isinstance(n, ir.CharClass):
            r = self._char_deriv(n.codepoints(), c)
        elif isinstance(n, ir.Seq):
            if not n.items:
                r = NOTHING
            else:
                head, rest = (
                    n.items[0],
                    (ir.Seq(n.items[1:]) if len(n.items) > 2 else (n.items[1] if len(n.items) == 2 else EMPTY)),
                )
                parts = [self.cat(self.deriv(head, c), rest)]
                if self.nullable(head):
                    parts.append(self.deriv(rest, c))
                r = self.union(parts)
        elif isinstance(n, ir.Alt):
            r = self.union([self.deriv(i, c) for i in n.items])
        elif isinstance(n, ir.Repeat):
            if n.max == 0:
                r = NOTHING
            else:
                lo = 0 if self.nullable(n.item) else max(n.min - 1, 0)
                hi = None if n.max is None else n.max - 1
                tail = EMPTY if hi == 0 else ir.Repeat(n.item, lo, hi) if (lo, hi) != (1, 1) else n.item
                r = self.cat(self.deriv(n.item, c), tail)
        elif isinstance(n, ir.Ref):
            r = self.deriv(self._rules[n.name], c)
        elif isinstance(n, ir.Difference):
            left = self.deriv(n.left, c)
            r = (
                NOTHING
                if left == NOTHING
                else (left if (right := self.deriv(n.right, c)) == NOTHING else ir.Difference(left, right))
            )
        elif isinstance(n, ir.Intersection):
            left = self.deriv(n.left, c)
            right = self.deriv(n.right, c) if left != NOTHING else NOTHING
            r = NOTHING if right == NOTHING else ir.Intersection(left, right)
        else:
            raise TypeError(f"{type(n).__name__} cannot appear in a regular operand")
        self._deriv[key] = r
        return r

    @staticmethod
    @lru_cache(maxsize=8192)
    def _char_deriv(codepoints: ir.Ranges, c: int) -> ir.Node:
        rests: list[ir.Node] = []
        for seq in class_sequences(codepoints):
            lo, hi = seq[0]
            if lo <= c <= hi:
                rests.append(
                    EMPTY
                    if len(seq) == 1
                    else ir.Seq(tuple(ir.ByteClass((r,)) for r in seq[1:]))
                    if len(seq) > 2
                    else ir.ByteClass((seq[1],))
                )
        return RegularTerms.union(rests)

    # -- emptiness ----------------------------------------------------------------------------

    def first_bytes(self, n: ir.Node) -> int:
        """A 256-bit mask that contains every byte ``c`` with a non-empty derivative (maybe more)."""
        if isinstance(n, ir.Literal):
            return 1 << n.data[0] if n.data else 0
        if isinstance(n, ir.ByteClass):
            return mask_of_ranges(n.byte_ranges())
        if isinstance(n, ir.CharClass):
            m = 0
            for seq in class_sequences(n.codepoints()):
                m |= mask_of(*seq[0])
            return m
        if isinstance(n, ir.Seq):
            m = 0
            for i in n.items:
                m |= self.first_bytes(i)
                if not self.nullable(i):
                    break
            return m
        if isinstance(n, ir.Alt):
            m = 0
            for i in n.items:
                m |= self.first_bytes(i)
            return m
        if isinstance(n, ir.Repeat):
            return 0 if n.max == 0 else self.first_bytes(n.item)
        if isinstance(n, ir.Ref):
            return self.first_bytes(self._rules[n.name])
        if isinstance(n, (ir.Difference, ir.Intersection)):
            return self.first_bytes(n.left)
        raise TypeError(f"{type(n).__name__} cannot appear in a regular operand")

    def is_empty(self, n: ir.Node) -> bool:
        """Whether the language of ``n`` is empty (breadth-first search over derivatives)."""
        if n == NOTHING:
            return True
        cached = self._empty.get(n)
        if cached is not None:
            return cached
        seen = {n}
        frontier = [n]
        result = True
        while frontier and result:
            nxt: list[ir.Node] = []
            for t in frontier:
                if self.nullable(t):
                    result = False
                    break
                cached = self._empty.get(t)
                if cached is False:
                    result = False
                    break
                mask = self.first_bytes(t)
                c = 0
                while mask:
                    if mask & 1:
                        d = self.deriv(t, c)
                        if d != NOTHING and d not in seen:
                            seen.add(d)
                            nxt.append(d)
                    mask >>= 1
                    c += 1
            if len(seen) > MAX_EMPTINESS_STATES:
                raise LimitError(
                    "emptiness check of a regular operand explored too many states",
                    limit="MAX_EMPTINESS_STATES",
                    value=MAX_EMPTINESS_STATES,
                )
            frontier = nxt
        self._empty[n] = result
        return result


caches.register_lru(
    "grammar.regular.char_deriv",
    RegularTerms._char_deriv,
    bytes_per_entry=600,
    estimate="measured (deep_bytes): a class's rest after one byte, a few byte classes",
)
