"""Small builders for character-level grammar nodes, shared by the format definitions.

These build *decoded-character* languages (what a JSON Schema ``format`` describes); the string
translator encodes them for JSON afterwards (:mod:`.json_escapes`).
"""

from __future__ import annotations

from ..grammar import ir
from .digit_ranges import decimal_digit, int_range_fixed

CharSpec = str | tuple[str, str] | tuple[int, int]


def ranges_of(*items: CharSpec) -> ir.Ranges:
    """Code point ranges from ``("a", "z")`` / ``(0x80, 0xFF)`` pairs and strings of single characters."""
    out: list[tuple[int, int]] = []
    for it in items:
        if isinstance(it, tuple):
            a, b = it
            out.append((ord(a) if isinstance(a, str) else a, ord(b) if isinstance(b, str) else b))
        else:
            out.extend((ord(c), ord(c)) for c in it)
    return ir.normalize_ranges(out, ir.MAX_CODEPOINT)


def cc(*items: CharSpec) -> ir.Node:
    """One character from the given ranges and characters (a literal when it is a single one)."""
    ranges = ranges_of(*items)
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return ir.lit(chr(ranges[0][0]))
    return ir.CharClass(ranges)


def caseless(text: str) -> ir.Node:
    """``text`` with ASCII letters in either case (ABNF quoted strings are case-insensitive)."""
    parts: list[ir.Node] = []
    for c in text:
        if c.isascii() and c.isalpha():
            parts.append(ir.char(c.lower(), c.upper()))
        else:
            parts.append(ir.lit(c))
    return ir.seq(*parts)


def lits(*texts: str) -> ir.Node:
    """A choice of literal texts."""
    return ir.alt(*(ir.lit(t) for t in texts))


DIGIT = cc(("0", "9"))
HEXDIG = cc(("0", "9"), ("a", "f"), ("A", "F"))
ALPHA = cc(("a", "z"), ("A", "Z"))
ALNUM = cc(("a", "z"), ("A", "Z"), ("0", "9"))


def rep(node: ir.Node, lo: int, hi: int | None = None) -> ir.Node:
    """``node{lo,hi}`` (``hi`` defaults to ``lo``; pass ``None`` explicitly through :func:`rep_open`)."""
    return ir.repeat(node, lo, lo if hi is None else hi)


def rep_open(node: ir.Node, lo: int) -> ir.Node:
    """``node{lo,}``."""
    return ir.repeat(node, lo, None)


def two_digits(lo: int, hi: int) -> ir.Node:
    """Zero-padded two-digit numbers ``lo..hi``."""
    return int_range_fixed(lo, hi, 2, 10, decimal_digit)
