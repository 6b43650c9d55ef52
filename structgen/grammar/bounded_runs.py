"""Length bounds for exported grammars: cap the unbounded runs of JSON strings and numbers.

Inside structgen's own generation loop a token budget closes a document in time (the mask
engine knows the shortest completion of every state). A grammar exported to another runtime
(llama.cpp's GBNF, glrmask's GLRM) has no such closing: a free ``string`` or the fraction digits
of a ``number`` may run until ``max_tokens``, and the output is then not JSON. This module
rewrites a grammar so that those runs are bounded, which changes its language (longer strings
and numbers are no longer sentences) and is therefore an explicit option of the writers:

* ``max_string_length``: a repetition without an upper bound that is the content of a string
  (it is followed, in its sequence, by a literal that starts with ``"``, and its unit cannot
  begin with a bare ``"``) repeats at most this many times: a free JSON string has at most this
  many characters, an escape counting as one; the same holds for the free part of a key.
* ``max_digits``: a repetition without an upper bound of one decimal digit (``[0-9]*``,
  ``"0"+``) repeats at most this many times: the integer part, the fraction and the exponent of
  a number each have at most about this many digits.

A repetition whose minimum is larger than the cap keeps its minimum as its maximum. Runs that
are already bounded (``maxLength``, a bounded ``pattern``) are left as they are. Strings whose
``pattern`` or ``format`` compiled to automaton rules are not runs, and are not capped.
"""

from __future__ import annotations

from ..errors import GrammarError
from . import ir
from .grammar import Grammar

_QUOTE = 0x22
_DIGITS = ((0x30, 0x39),)


def bound_runs(grammar: Grammar, *, max_string_length: int | None = None, max_digits: int | None = None) -> Grammar:
    """``grammar`` with its string and digit runs capped (see the module docstring); ``grammar``
    itself when both caps are None."""
    for name, value in (("max_string_length", max_string_length), ("max_digits", max_digits)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise GrammarError(f"{name} must be a non-negative integer or None, not {value!r}")
    if max_string_length is None and max_digits is None:
        return grammar
    capper = _Capper(grammar, max_string_length, max_digits)
    rules = {name: capper.rebuild(body) for name, body in grammar.rules.items()}
    return Grammar(rules, grammar.start, externs=grammar.externs)


class _Capper:
    def __init__(self, grammar: Grammar, max_string: int | None, max_digits: int | None) -> None:
        self.rules = grammar.rules
        self.max_string = max_string
        self.max_digits = max_digits
        self.first: dict[int, int] = {}

    def rebuild(self, node: ir.Node) -> ir.Node:
        """``node`` rebuilt bottom-up with its runs capped (iterative: bodies may be deep)."""
        done: dict[int, ir.Node] = {}
        stack: list[tuple[ir.Node, bool]] = [(node, False)]
        while stack:
            n, expanded = stack.pop()
            if id(n) in done:
                continue
            kids = n.children()
            if not kids or isinstance(n, (ir.Lexeme, ir.Difference, ir.Intersection)) or ir.is_closed(n):
                # set operations and lexemes are regular operands of their own: left whole
                done[id(n)] = self.digit_capped(n) if isinstance(n, ir.Repeat) else n
                continue
            if not expanded:
                stack.append((n, True))
                stack.extend((c, False) for c in kids if id(c) not in done)
                continue
            new = [done[id(c)] for c in kids]
            if isinstance(n, ir.Seq):
                new = [self.string_capped(n.items, i, item) for i, item in enumerate(new)]
            same = all(a is b for a, b in zip(new, kids))
            if isinstance(n, ir.Seq):
                out: ir.Node = n if same else ir.Seq(tuple(new))
            elif isinstance(n, ir.Alt):
                out = n if same else ir.Alt(tuple(new))
            else:
                assert isinstance(n, ir.Repeat)
                out = self.digit_capped(n if same else ir.Repeat(new[0], n.min, n.max))
            done[id(n)] = out
        return done[id(node)]

    def digit_capped(self, n: ir.Repeat) -> ir.Node:
        if self.max_digits is None or n.max is not None or not _is_digit(n.item):
            return n
        return ir.Repeat(n.item, n.min, max(n.min, self.max_digits))

    def string_capped(self, items: tuple[ir.Node, ...], i: int, item: ir.Node) -> ir.Node:
        if self.max_string is None or not isinstance(item, ir.Repeat) or item.max is not None:
            return item
        nxt = items[i + 1] if i + 1 < len(items) else None
        if not (isinstance(nxt, ir.Literal) and nxt.data[:1] == b'"'):
            return item
        if self.first_bytes(item.item) >> _QUOTE & 1:
            return item  # a bare quote could start a unit: not the inside of a string
        return ir.Repeat(item.item, item.min, max(item.min, self.max_string))

    def first_bytes(self, n: ir.Node, seen: frozenset[str] = frozenset()) -> int:
        """Bytes a non-empty string of ``n`` can start with (a superset; all bytes if unsure)."""
        if isinstance(n, ir.Literal):
            return 1 << n.data[0] if n.data else 0
        if isinstance(n, ir.CharClass):
            out = 0
            for lo, hi in n.codepoints():
                if lo < 0x80:
                    out |= ((1 << (min(hi, 0x7F) + 1)) - 1) ^ ((1 << lo) - 1)
                if hi >= 0x80:
                    out |= ((1 << 256) - 1) ^ ((1 << 0x80) - 1)
            return out
        if isinstance(n, ir.ByteClass):
            out = 0
            for lo, hi in n.byte_ranges():
                out |= ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)
            return out
        if isinstance(n, ir.Alt):
            out = 0
            for x in n.items:
                out |= self.first_bytes(x, seen)
            return out
        if isinstance(n, ir.Seq):
            # the first item may match the empty string: then the next one starts; be safe
            out = 0
            for x in n.items:
                out |= self.first_bytes(x, seen)
                if not _surely_not_nullable(x):
                    break
            return out
        if isinstance(n, ir.Repeat):
            return self.first_bytes(n.item, seen)
        if isinstance(n, ir.Ref) and n.name in self.rules and n.name not in seen and len(seen) < 64:
            return self.first_bytes(self.rules[n.name], seen | {n.name})
        return (1 << 256) - 1


def _surely_not_nullable(n: ir.Node) -> bool:
    if isinstance(n, ir.Literal):
        return bool(n.data)
    return isinstance(n, (ir.CharClass, ir.ByteClass))


def _is_digit(n: ir.Node) -> bool:
    """Whether every string of ``n`` is one ASCII decimal digit."""
    if isinstance(n, ir.Literal):
        return len(n.data) == 1 and 0x30 <= n.data[0] <= 0x39
    if isinstance(n, ir.CharClass):
        cps = n.codepoints()
        return bool(cps) and all(0x30 <= lo and hi <= 0x39 for lo, hi in cps)
    if isinstance(n, ir.ByteClass):
        rs = n.byte_ranges()
        return bool(rs) and all(0x30 <= lo and hi <= 0x39 for lo, hi in rs)
    if isinstance(n, ir.Alt):
        return bool(n.items) and all(_is_digit(x) for x in n.items)
    return False
