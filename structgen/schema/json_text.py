"""JSON lexical pieces as grammar nodes: string characters in every spelling, literals, numbers.

A JSON string may spell a character raw or escaped (``"a"``, ``"\\u0061"``, ``"\\u0061"`` with
upper-case hex...). Two uses need different answers:

* to *write* a known string (a property name, an ``enum`` value) we accept the spellings Python
  and JavaScript serialisers produce: raw UTF-8 with the short escapes (``json.dumps(...,
  ensure_ascii=False)``) and the ASCII-only form with ``\\uXXXX`` (``json.dumps``);
  :func:`string_literal`;
* to *exclude* known strings (property names that are not "additional", ``not: {enum: [...]}``)
  every spelling must be excluded, so that no spelling of a listed name slips through as another
  name; :func:`spell_class` and :func:`string_not_in` cover them all.

Lone surrogate escapes (``"\\ud800"`` not followed by a low surrogate) are never accepted: they
denote no Unicode text. Numbers: :func:`number_literal` gives the usual spellings of one value.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Callable, Iterable

from ..grammar import ir
from .jsonvalue import decimal_text

QUOTE = ir.lit('"')
_SURR = ir.SURROGATES
_ALL_SCALARS: ir.Ranges = ((0, _SURR[0] - 1), (_SURR[1] + 1, ir.MAX_CODEPOINT))
_SHORT_ESCAPES = {0x22: '"', 0x5C: "\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
_RAW_EXCLUDED: ir.Ranges = ((0, 0x1F), (0x22, 0x22), (0x5C, 0x5C))


def _hex_digit_class(lo: int, hi: int) -> ir.Node:
    """One hex digit with value in [lo, hi], either letter case."""
    ranges: list[tuple[int, int]] = []
    if lo <= 9:
        ranges.append((0x30 + lo, 0x30 + min(hi, 9)))
    if hi >= 10:
        a, b = max(lo, 10) - 10, hi - 10
        ranges.append((0x61 + a, 0x61 + b))
        ranges.append((0x41 + a, 0x41 + b))
    return ir.CharClass(tuple(ranges))


_ANY_HEX = _hex_digit_class(0, 15)


def hex_range(lo: int, hi: int, width: int = 4) -> ir.Node:
    """Exactly ``width`` hex digits (either case) whose value is in ``[lo, hi]``."""
    if width == 1:
        return _hex_digit_class(lo, hi)
    unit = 16 ** (width - 1)
    lo_d, lo_r = divmod(lo, unit)
    hi_d, hi_r = divmod(hi, unit)
    if lo_d == hi_d:
        return ir.seq(_hex_digit_class(lo_d, lo_d), hex_range(lo_r, hi_r, width - 1))
    parts: list[ir.Node] = []
    if lo_r != 0:
        parts.append(ir.seq(_hex_digit_class(lo_d, lo_d), hex_range(lo_r, unit - 1, width - 1)))
        lo_d += 1
    tail = None
    if hi_r != unit - 1:
        tail = ir.seq(_hex_digit_class(hi_d, hi_d), hex_range(0, hi_r, width - 1))
        hi_d -= 1
    if lo_d <= hi_d:
        parts.append(ir.seq(_hex_digit_class(lo_d, hi_d), ir.repeat(_ANY_HEX, width - 1, width - 1)))
    if tail is not None:
        parts.append(tail)
    return ir.alt(*parts)


def _intersect(a: ir.Ranges, b: ir.Ranges) -> ir.Ranges:
    out = []
    for lo, hi in a:
        for lo2, hi2 in b:
            x, y = max(lo, lo2), min(hi, hi2)
            if x <= y:
                out.append((x, y))
    return ir.normalize_ranges(out, ir.MAX_CODEPOINT)


def spell_class(ranges: ir.Ranges) -> ir.Node:
    """Every JSON string-content spelling of one character whose code point is in ``ranges``."""
    ranges = ir.subtract_ranges(ir.normalize_ranges(ranges, ir.MAX_CODEPOINT), (_SURR,))
    parts: list[ir.Node] = []
    raw = ir.subtract_ranges(ranges, _RAW_EXCLUDED)
    if raw:
        parts.append(ir.CharClass(raw))
    for cp, letter in _SHORT_ESCAPES.items():
        if any(lo <= cp <= hi for lo, hi in ranges):
            parts.append(ir.lit("\\" + letter))
    unicode_parts: list[ir.Node] = []
    for lo, hi in _intersect(ranges, ((0, 0xFFFF),)):
        unicode_parts.append(hex_range(lo, hi))
    for lo, hi in _intersect(ranges, ((0x10000, ir.MAX_CODEPOINT),)):
        unicode_parts.extend(_surrogate_pairs(lo, hi))
    if unicode_parts:
        parts.append(ir.seq(ir.lit("\\u"), ir.alt(*unicode_parts)))
    return ir.alt(*parts) if parts else ir.NOTHING


def _surrogate_pairs(lo: int, hi: int) -> list[ir.Node]:
    """``\\uHHHH\\uLLLL`` tails (after the first ``\\u``) for astral code points in [lo, hi]."""
    out: list[ir.Node] = []
    a, b = lo - 0x10000, hi - 0x10000
    ha, la = divmod(a, 0x400)
    hb, lb = divmod(b, 0x400)

    def pair(h1: int, h2: int, l1: int, l2: int) -> ir.Node:
        return ir.seq(hex_range(0xD800 + h1, 0xD800 + h2), ir.lit("\\u"), hex_range(0xDC00 + l1, 0xDC00 + l2))

    if ha == hb:
        return [pair(ha, ha, la, lb)]
    if la != 0:
        out.append(pair(ha, ha, la, 0x3FF))
        ha += 1
    tail = None
    if lb != 0x3FF:
        tail = pair(hb, hb, 0, lb)
        hb -= 1
    if ha <= hb:
        out.append(pair(ha, hb, 0, 0x3FF))
    if tail is not None:
        out.append(tail)
    return out


def spell_char(c: str) -> ir.Node:
    return spell_class(((ord(c), ord(c)),))


ANY_STRING_CHAR = spell_class(_ALL_SCALARS)


def any_string(char: ir.Node = ANY_STRING_CHAR) -> ir.Node:
    """Any JSON string token; ``char`` may be a Ref to a rule holding :data:`ANY_STRING_CHAR`."""
    return ir.seq(QUOTE, ir.star(char), QUOTE)


def string_literal(s: str) -> ir.Node:
    """A string token for ``s`` as serialisers write it: raw UTF-8 or ASCII with ``\\u`` escapes."""
    raw = json.dumps(s, ensure_ascii=False)
    ascii_form = json.dumps(s)
    return ir.alt(ir.lit(raw), ir.lit(ascii_form))


def string_all_spellings(s: str) -> ir.Node:
    """A string token for ``s`` in every spelling JSON allows."""
    return ir.seq(QUOTE, *(spell_char(c) for c in s), QUOTE)


def string_not_in(
    values: Iterable[str],
    *,
    char: ir.Node = ANY_STRING_CHAR,
    define: Callable[[ir.Node], ir.Node] | None = None,
    chunk: int = 24,
) -> ir.Node:
    """A string token whose decoded value is not one of ``values`` (in any spelling).

    Built from a trie of the values, so the result is a plain regular expression (no difference
    operator). ``define`` turns a subtree into a rule reference; it is called every ``chunk``
    trie levels so that long names do not nest the tree too deeply.
    """
    trie: dict = {}
    end = object()
    for v in values:
        t = trie
        for c in v:
            t = t.setdefault(c, {})
        t[end] = True
    if not trie:
        return any_string(char)
    rest = ir.seq(ir.star(char), QUOTE)
    # post-order over the trie without recursion
    order: list[tuple[dict, int]] = []
    stack: list[tuple[dict, int]] = [(trie, 0)]
    while stack:
        t, d = stack.pop()
        order.append((t, d))
        stack.extend((sub, d + 1) for k, sub in t.items() if k is not end)
    built: dict[int, ir.Node] = {}
    for t, d in reversed(order):
        kids = sorted(k for k in t if k is not end)
        parts: list[ir.Node] = []
        if end not in t:
            parts.append(QUOTE)
        for k in kids:
            parts.append(ir.seq(spell_char(k), built[id(t[k])]))
        others = ir.complement_ranges(tuple((ord(k), ord(k)) for k in kids), ir.MAX_CODEPOINT) if kids else (
            (0, ir.MAX_CODEPOINT),
        )
        parts.append(ir.seq(spell_class(others), rest))
        node = ir.alt(*parts)
        if define is not None and d > 0 and d % chunk == 0:
            node = define(node)
        built[id(t)] = node
    return ir.seq(QUOTE, built[id(trie)])


# ---------------------------------------------------------------------------------------------
# Numbers

_DIGIT = ir.CharClass(((0x30, 0x39),))
_E = ir.CharClass(((0x45, 0x45), (0x65, 0x65)))


def number_literal(value: Fraction) -> ir.Node:
    """The spellings of one number: positional with optional trailing fraction zeros, and the
    scientific forms with one leading digit (``1.5e+07``, ``1.5E7``), as serialisers write them.

    Other spellings of the same value (``15e-1``, ``0.15e1``) are not accepted.
    """
    neg, digits, exp = decimal_text(value)
    sign = ir.lit("-") if neg else ir.EMPTY
    zeros = ir.star(ir.lit("0"))
    if digits == "0":
        exponent = ir.seq(_E, ir.opt(ir.CharClass(((0x2B, 0x2B), (0x2D, 0x2D)))), ir.plus(_DIGIT))
        body = ir.seq(ir.lit("0"), ir.opt(ir.seq(ir.lit("."), ir.plus(ir.lit("0")))), ir.opt(exponent))
        return ir.seq(ir.opt(ir.lit("-")), body)
    # positional
    if exp >= 0:
        positional = ir.seq(ir.lit(digits + "0" * exp), ir.opt(ir.seq(ir.lit("."), ir.plus(ir.lit("0")))))
    else:
        point = len(digits) + exp
        if point > 0:
            text = digits[:point] + "." + digits[point:]
        else:
            text = "0." + "0" * (-point) + digits
        positional = ir.seq(ir.lit(text), zeros)
    # scientific: d[.ddd]e<adjusted exponent>
    adjusted = exp + len(digits) - 1
    mantissa = ir.lit(digits[0])
    if len(digits) > 1:
        mantissa = ir.seq(ir.lit(digits[0] + "." + digits[1:]), zeros)
    else:
        mantissa = ir.seq(mantissa, ir.opt(ir.seq(ir.lit("."), ir.plus(ir.lit("0")))))
    if adjusted >= 0:
        exp_sign = ir.opt(ir.lit("+"))
    else:
        exp_sign = ir.lit("-")
    scientific = ir.seq(mantissa, _E, exp_sign, zeros, ir.lit(str(abs(adjusted))))
    if adjusted == 0:
        scientific = ir.seq(mantissa, _E, ir.opt(ir.CharClass(((0x2B, 0x2B), (0x2D, 0x2D)))), ir.plus(ir.lit("0")))
    return ir.seq(sign, ir.alt(positional, scientific))
