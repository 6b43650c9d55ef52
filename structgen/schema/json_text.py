"""JSON lexical pieces as grammar nodes: string characters and their spellings, literals, numbers.

A JSON string may spell a character raw or escaped (``"é"``, ``"\\u00e9"``, ``"\\u00E9"``). The
translator accepts raw characters, the short escapes (``\\n``, ``\\"``, ``\\/``...) and
``\\uXXXX`` in either hex case for every character *except printable ASCII*: ``"\\u0061"`` for
``"a"`` is not accepted (no serialiser writes it, and the scalar string translator makes the same
choice). Lone surrogate escapes (``"\\ud800"`` not followed by a low surrogate) are never accepted:
they denote no Unicode text. Because every decoded string then has a small, known set of
spellings, a set of known strings can be excluded exactly (:func:`string_not_in`: object keys
other than the listed ones; no spelling of a listed name slips through as "another" key).

Known strings are written (:func:`string_literal`) as serialisers write them: raw UTF-8 with the
short escapes (``json.dumps(..., ensure_ascii=False)``) or ASCII-only (``json.dumps``).
Numbers: :func:`number_literal` gives the usual spellings of one value.
"""

from __future__ import annotations

import json
from fractions import Fraction
from functools import lru_cache
from typing import Callable, Iterable

from .. import caches
from ..grammar import ir
from .jsonvalue import decimal_text

QUOTE = ir.lit('"')
_SURR = ir.SURROGATES
ALL_SCALARS: ir.Ranges = ((0, _SURR[0] - 1), (_SURR[1] + 1, ir.MAX_CODEPOINT))
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


#: Code points whose ``\\uXXXX`` spelling is accepted: everything but printable ASCII (see the
#: module docstring: ``"\\u0061"`` for ``"a"`` is refused, like the scalar string translator does).
U_ESCAPED: ir.Ranges = ((0, 0x1F), (0x7F, _SURR[0] - 1), (_SURR[1] + 1, ir.MAX_CODEPOINT))


@lru_cache(maxsize=4096)
def _u_escapes(ranges: ir.Ranges) -> ir.Node:
    parts: list[ir.Node] = []
    for lo, hi in _intersect(ranges, ((0, 0xFFFF),)):
        parts.append(hex_range(lo, hi))
    for lo, hi in _intersect(ranges, ((0x10000, ir.MAX_CODEPOINT),)):
        parts.extend(_surrogate_pairs(lo, hi))
    return ir.seq(ir.lit("\\u"), ir.alt(*parts)) if parts else ir.NOTHING


SHORT_ESCAPES = ir.alt(*(ir.lit("\\" + letter) for letter in _SHORT_ESCAPES.values()))
_SHORT_CPS = tuple(sorted(_SHORT_ESCAPES))


@lru_cache(maxsize=4096)
def spell_class(
    ranges: ir.Ranges, *, all_escapes: bool = False, u_rule: ir.Node | None = None, esc_rule: ir.Node | None = None
) -> ir.Node:
    """The JSON string-content spellings of one character whose code point is in ``ranges``.

    Raw characters, the short escapes, and ``\\uXXXX`` (either hex case, surrogate pairs for
    astral characters) - the latter only outside printable ASCII unless ``all_escapes``.
    ``u_rule`` stands for the ``\\u`` spellings of all of :data:`U_ESCAPED` and ``esc_rule`` for
    all the short escapes (:data:`SHORT_ESCAPES`), as shared rules.
    """
    ranges = ir.subtract_ranges(ir.normalize_ranges(ranges, ir.MAX_CODEPOINT), (_SURR,))
    parts: list[ir.Node] = []
    raw = ir.subtract_ranges(ranges, _RAW_EXCLUDED)
    if raw:
        parts.append(ir.CharClass(raw))
    present = [cp for cp in _SHORT_CPS if any(lo <= cp <= hi for lo, hi in ranges)]
    if esc_rule is not None and len(present) == len(_SHORT_CPS):
        parts.append(esc_rule)
    else:
        parts.extend(ir.lit("\\" + _SHORT_ESCAPES[cp]) for cp in present)
    escaped = ranges if all_escapes else _intersect(ranges, U_ESCAPED)
    if escaped:
        if u_rule is not None and escaped == U_ESCAPED:
            parts.append(u_rule)
        else:
            parts.append(_u_escapes(escaped))
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


def spell_char(c: str, *, all_escapes: bool = False) -> ir.Node:
    return spell_class(((ord(c), ord(c)),), all_escapes=all_escapes)


ANY_U_ESCAPE = _u_escapes(U_ESCAPED)
ANY_STRING_CHAR = spell_class(ALL_SCALARS)


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
    return ir.seq(QUOTE, *(spell_char(c, all_escapes=True) for c in s), QUOTE)


def _seq2(x: ir.Node, y: ir.Node) -> ir.Node:
    """``ir.seq(x, y)``, built directly where that is what it gives: neither part a literal or
    a sequence (which it would join or flatten) nor the empty choice."""
    cx, cy = x.__class__, y.__class__
    if (cx is ir.CharClass or cx is ir.Ref or (cx is ir.Alt and x.items)) and (  # type: ignore[attr-defined]
        cy is ir.CharClass or cy is ir.Ref or (cy is ir.Alt and y.items)  # type: ignore[attr-defined]
    ):
        return ir.Seq((x, y))
    return ir.seq(x, y)


def string_not_in(
    values: Iterable[str],
    *,
    char: ir.Node = ANY_STRING_CHAR,
    u_rule: ir.Node | None = None,
    esc_rule: ir.Node | None = None,
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
    # per call: the spelling of each character and of the characters outside each set of
    # children (the same objects spell_class's cache gives; a trie repeats both often)
    spelled: dict[str, ir.Node] = {}
    outside: dict[tuple[str, ...], ir.Node] = {}
    for t, d in reversed(order):
        kids = sorted(k for k in t if k is not end)
        parts: list[ir.Node] = []
        if end not in t:
            parts.append(QUOTE)
        for k in kids:
            sk = spelled.get(k)
            if sk is None:
                sk = spelled[k] = spell_class(((ord(k), ord(k)),), u_rule=u_rule, esc_rule=esc_rule)
            parts.append(_seq2(sk, built[id(t[k])]))
        key = tuple(kids)
        so = outside.get(key)
        if so is None:
            others = (
                ir.complement_ranges(tuple((ord(k), ord(k)) for k in kids), ir.MAX_CODEPOINT)
                if kids
                else ((0, ir.MAX_CODEPOINT),)
            )
            so = outside[key] = spell_class(others, u_rule=u_rule, esc_rule=esc_rule)
        parts.append(ir.seq(so, rest))
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


#: Numbers with a non-zero fractional part, written without an exponent (the spellings accepted
#: for "not an integer": with an exponent, integrality is not a regular property of the text).
NON_INTEGER = ir.seq(
    ir.opt(ir.lit("-")),
    ir.alt(ir.lit("0"), ir.seq(ir.CharClass(((0x31, 0x39),)), ir.star(_DIGIT))),
    ir.lit("."),
    ir.star(_DIGIT),
    ir.CharClass(((0x31, 0x39),)),
    ir.star(_DIGIT),
)


caches.register_lru(
    "schema.json_text.u_escapes", _u_escapes, bytes_per_entry=4_000, estimate="measured (deep_bytes): 2-8 KB per class"
)
caches.register_lru(
    "schema.json_text.spell_class",
    spell_class,
    bytes_per_entry=2_000,
    estimate="measured (deep_bytes): 0.5-13 KB per class",
)
