"""From a language of decoded characters to the language of JSON string bodies that decode into it.

JSON Schema constrains a string's *decoded* value (``minLength``, ``pattern``, ``format``) while a
grammar reads the *encoded* text between the quotes. :func:`encode_chars` bridges the two: it maps
a character-level node (built from :class:`~structgen.grammar.ir.Literal` text and
:class:`~structgen.grammar.ir.CharClass` atoms with sequence, choice, repetition, intersection and
difference) to the node whose strings are exactly the JSON string bodies that decode to a string
of the original language.

Each character ``c`` becomes "any way JSON may write ``c``":

* ``c`` itself, unless it is ``"``, ``\\`` or a control character U+0000-U+001F (JSON forbids
  those raw);
* its two-character escape where it has one: ``\\" \\\\ \\/ \\b \\f \\n \\r \\t``;
* ``\\uXXXX`` with hexadecimal digits in either case, for every character of the Basic
  Multilingual Plane except, by default, printable ASCII (U+0020-U+007E): those are written
  as themselves, or with their short escape for ``"`` ``\\`` ``/`` (``ascii_escapes=True``
  accepts ``\\u0041`` for ``A`` too; the default is a departure no mainstream serialiser
  notices, it keeps grammars for formats and patterns, which are mostly ASCII, several times
  smaller, and it is the same set of spellings the schema translator's own strings use, which
  keeps differences between the two exact);
* for U+10000-U+10FFFF, the UTF-16 surrogate pair ``\\uD8xx\\uDCxx`` (either case).

An escape of a lone surrogate (``\\uD800`` not followed by a low surrogate escape, or a lone low
surrogate) is never produced: it does not decode to a Unicode scalar value. This covers
everything ``json.dumps`` writes with ``ensure_ascii`` true or false.

Why mapping each character independently is exact: every body in the image splits in exactly one
way into per-character encodings (an escape starts with ``\\``, which is never raw, and a surrogate
pair is only ever read as a pair because lone surrogates are excluded). Decoding is therefore a
function on the image, and taking preimages commutes with concatenation, choice, repetition,
intersection and difference. That is what lets ``pattern``, ``format`` and length bounds be
intersected either before or after encoding.
"""

from __future__ import annotations

from functools import lru_cache, partial

from .. import caches
from ..grammar import ir
from ..grammar.lowering import register_encoded
from .digit_ranges import hex_digit, int_range_fixed

#: Characters with a two-character escape, and the letter that follows the backslash.
SHORT_ESCAPES: dict[int, str] = {
    0x22: '"',
    0x5C: "\\",
    0x2F: "/",
    0x08: "b",
    0x0C: "f",
    0x0A: "n",
    0x0D: "r",
    0x09: "t",
}

#: Characters JSON allows unescaped inside a string.
RAW_ALLOWED: ir.Ranges = ir.subtract_ranges(((0x20, ir.MAX_CODEPOINT),), ((0x22, 0x22), (0x5C, 0x5C), ir.SURROGATES))

_BMP_SCALARS: ir.Ranges = ((0, 0xD7FF), (0xE000, 0xFFFF))
#: BMP characters that get a ``\\uXXXX`` form when ASCII escapes are off.
_BMP_ESCAPED: ir.Ranges = ((0, 0x1F), (0x7F, 0xD7FF), (0xE000, 0xFFFF))


def _hex4(lo: int, hi: int) -> ir.Node:
    return int_range_fixed(lo, hi, 4, 16, hex_digit)


def _u(lo: int, hi: int) -> ir.Node:
    return ir.seq(ir.lit("\\u"), _hex4(lo, hi))


def _astral_pairs(lo: int, hi: int) -> list[ir.Node]:
    """Surrogate-pair escapes for the code points ``lo..hi`` (all >= U+10000)."""

    def split(cp: int) -> tuple[int, int]:
        v = cp - 0x10000
        return 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)

    h1, l1 = split(lo)
    h2, l2 = split(hi)
    if h1 == h2:
        return [ir.seq(_u(h1, h1), _u(l1, l2))]
    out: list[ir.Node] = []
    if l1 != 0xDC00:
        out.append(ir.seq(_u(h1, h1), _u(l1, 0xDFFF)))
        h1 += 1
    if l2 != 0xDFFF:
        tail = ir.seq(_u(h2, h2), _u(0xDC00, l2))
        h2 -= 1
    else:
        tail = None
    if h1 <= h2:
        out.append(ir.seq(_u(h1, h2), _u(0xDC00, 0xDFFF)))
    if tail is not None:
        out.append(tail)
    return out


@lru_cache(maxsize=4096)
def encode_codepoints(codepoints: ir.Ranges, ascii_escapes: bool = False) -> ir.Node:
    """The JSON encodings of one character in ``codepoints`` (normalised, surrogate-free ranges)."""
    alts: list[ir.Node] = []
    raw = _intersect(codepoints, RAW_ALLOWED)
    if raw:
        alts.append(_char_node(raw))
    short = sorted(SHORT_ESCAPES[c] for c in SHORT_ESCAPES if _contains(codepoints, c))
    if len(short) == 1:
        alts.append(ir.lit("\\" + short[0]))
    elif short:
        alts.append(ir.seq(ir.lit("\\"), ir.char(*short)))
    for lo, hi in _intersect(codepoints, _BMP_SCALARS if ascii_escapes else _BMP_ESCAPED):
        alts.append(_u(lo, hi))
    for lo, hi in _intersect(codepoints, ((0x10000, ir.MAX_CODEPOINT),)):
        alts.extend(_astral_pairs(lo, hi))
    return ir.alt(*alts) if alts else ir.NOTHING


def encode_chars(node: ir.Node, *, ascii_escapes: bool = False) -> ir.Node:
    """The JSON string bodies that decode to a string of the character-level language ``node``.

    ``node`` may contain literals (UTF-8 text), character classes, sequences, choices,
    repetitions, intersections and differences; references, byte classes, token atoms and greedy
    lexemes are refused with ``ValueError`` (they have no character-level meaning here).
    ``ascii_escapes`` also accepts ``\\uXXXX`` for printable ASCII characters. Results are cached
    (formats are large trees used many times in one schema).
    """
    # the cached encoding is the same object in every schema that uses it: later walks
    # (clean-up, grammar checks) step over it
    # _encode refuses references and token atoms: what it returns holds none
    out = ir.mark_closed(_encode_cached(node, ascii_escapes), known_closed=True)
    if isinstance(out, (ir.Intersection, ir.Difference)):
        register_encoded(out, node, partial(encode_codepoints, ascii_escapes=ascii_escapes))
    return out


#: Nodes known to be their own encoding by construction (formats of printable ASCII built in
#: canonical form; a test checks each with :func:`_self_encoded`), by identity: date-time's
#: ~7,000 nodes are not walked again to find it out (about 20 ms on a process's first use).
_KNOWN_SELF_ENCODED: dict[int, ir.Node] = {}


def declare_self_encoded(node: ir.Node) -> None:
    """Record that ``node`` is its own JSON encoding (see :func:`_self_encoded`)."""
    _KNOWN_SELF_ENCODED[id(node)] = node


@lru_cache(maxsize=256)
def _encode_cached(node: ir.Node, ascii_escapes: bool) -> ir.Node:
    if not ascii_escapes and (_KNOWN_SELF_ENCODED.get(id(node)) is node or _self_encoded(node)):
        return node  # e.g. date-time: 6,000 nodes checked in ~10 ms instead of rebuilt in ~40 ms
    return _encode(node, ascii_escapes)


#: Code points JSON writes only as themselves (printable ASCII but ``"`` ``\`` ``/``).
_SELF_ENCODED_RANGES: ir.Ranges = ((0x20, 0x21), (0x23, 0x2E), (0x30, 0x5B), (0x5D, 0x7E))


def _self_encoded(node: ir.Node) -> bool:
    """Whether every character ``node`` can match has exactly one JSON spelling, itself, ``node``
    has no set operation and is in the canonical form the encoder builds: then its encoding is
    ``node`` itself."""
    for n in ir.iter_distinct(node):
        if isinstance(n, ir.Literal):
            try:
                if not n.data or not _SELF_ENCODED.issuperset(n.data.decode("utf-8")):
                    return False
            except UnicodeDecodeError:
                return False
        elif isinstance(n, ir.CharClass):
            # canonical (what _char_node gives back): positive, not one character; inside ASCII
            # the complement always has more ranges, so the positive form is the one kept
            r = n.ranges
            if n.negated or (len(r) == 1 and r[0][0] == r[0][1]) or ir.subtract_ranges(r, _SELF_ENCODED_RANGES):
                return False
        elif isinstance(n, (ir.Seq, ir.Alt, ir.Repeat)):
            if not _rebuilds_to_itself(n, list(n.children())):
                return False  # not in canonical form: the rebuild gives an equal, canonical node
        else:  # set operations (their lowering wants the registered decoded form), anything else
            return False
    return True


def _encode(node: ir.Node, ascii_escapes: bool) -> ir.Node:
    """The walk is iterative, so deeply nested patterns cost no Python recursion."""
    done: dict[int, ir.Node] = {}
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in done:
            continue
        kids = n.children()
        if kids and not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids)
            continue
        new = [done[id(c)] for c in kids]
        if isinstance(n, ir.Literal):
            out = _encode_literal(n.data, ascii_escapes)
            if out == n:
                out = n
        elif isinstance(n, ir.CharClass):
            out = encode_codepoints(n.codepoints(), ascii_escapes)
            if out == n:
                out = n
        elif isinstance(n, (ir.Seq, ir.Alt, ir.Repeat)) and _rebuilds_to_itself(n, new):
            # mostly-ASCII formats encode to themselves: keep the node (and its sharing) as is
            out = n
        elif isinstance(n, ir.Seq):
            out = ir.seq(*new) if new else ir.EMPTY
        elif isinstance(n, ir.Alt):
            out = ir.alt(*new) if new else ir.NOTHING
        elif isinstance(n, ir.Repeat):
            out = ir.NOTHING if new[0] == ir.NOTHING and n.min > 0 else ir.repeat(new[0], n.min, n.max)
        elif isinstance(n, (ir.Intersection, ir.Difference)):
            out = ir.Intersection(new[0], new[1]) if isinstance(n, ir.Intersection) else ir.Difference(new[0], new[1])
            # lowering may build the (much smaller) automaton of the decoded language instead
            register_encoded(out, n, partial(encode_codepoints, ascii_escapes=ascii_escapes))
        else:
            raise ValueError(f"{type(n).__name__} has no meaning in a character-level string language")  # noqa: TRY004
        done[id(n)] = out
    return done[id(node)]


def _rebuilds_to_itself(n: ir.Node, new: list[ir.Node]) -> bool:
    """Whether the smart constructor over ``new`` gives back a node equal to ``n``: the children
    are unchanged and ``n`` is already in the form :func:`ir.seq` / :func:`ir.alt` /
    :func:`ir.repeat` produce."""
    kids = n.children()
    if any(a is not b for a, b in zip(new, kids)):
        return False
    if isinstance(n, ir.Seq):
        if len(kids) == 1:
            return False
        after_literal = False
        for k in kids:
            if isinstance(k, ir.Seq) or (isinstance(k, ir.Alt) and not k.items):
                return False
            if isinstance(k, ir.Literal):
                if after_literal or not k.data:
                    return False
                after_literal = True
            else:
                after_literal = False
        return True
    if isinstance(n, ir.Alt):
        return len(kids) != 1 and not any(isinstance(k, ir.Alt) for k in kids) and len(set(kids)) == len(kids)
    assert isinstance(n, ir.Repeat)
    item = n.item
    return not (
        (isinstance(item, ir.Alt) and not item.items) or n.max == 0 or item == ir.EMPTY or (n.min == 1 and n.max == 1)
    )


#: Characters written only as themselves (printable ASCII but ``"`` ``\`` ``/``; with
#: ``ascii_escapes`` none): a literal made of them encodes to itself.
_SELF_ENCODED = frozenset(chr(c) for c in range(0x20, 0x7F)) - frozenset('"\\/')


def _encode_literal(data: bytes, ascii_escapes: bool) -> ir.Node:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError("a literal in a character-level language must be valid UTF-8") from exc
    if not ascii_escapes and text and _SELF_ENCODED.issuperset(text):
        return ir.Literal(data)
    return ir.seq(*(encode_codepoints(((ord(c), ord(c)),), ascii_escapes) for c in text)) if text else ir.EMPTY


def _char_node(ranges: ir.Ranges) -> ir.Node:
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return ir.lit(chr(ranges[0][0]))
    excluded = ir.complement_ranges(ranges, ir.MAX_CODEPOINT)
    # "anything but a few characters" prints and matches more simply negated
    if len(excluded) < len(ranges):
        return ir.CharClass(excluded, negated=True)
    return ir.CharClass(ranges)


def _contains(ranges: ir.Ranges, cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


def _intersect(a: ir.Ranges, b: ir.Ranges) -> ir.Ranges:
    out = []
    for lo, hi in a:
        for lo2, hi2 in b:
            x, y = max(lo, lo2), min(hi, hi2)
            if x <= y:
                out.append((x, y))
    return ir.normalize_ranges(out, ir.MAX_CODEPOINT)


#: Any one character, encoded: the body of an unconstrained JSON string is ``ANY_ENCODED*``.
ANY_ENCODED: ir.Node = encode_codepoints(ir.ANY_CHAR.codepoints())
#: The same with ``\\uXXXX`` escapes of ASCII characters as well (every JSON encoding).
ANY_ENCODED_ALL: ir.Node = encode_codepoints(ir.ANY_CHAR.codepoints(), True)


caches.register_lru(
    "schema.json_escapes.encode_codepoints",
    encode_codepoints,
    bytes_per_entry=3_000,
    estimate="measured (deep_bytes): like json_text.spell_class",
)
caches.register_lru(
    "schema.json_escapes.encode_cached",
    _encode_cached,
    bytes_per_entry=10_000,
    estimate="measured (deep_bytes): most entries are the node itself (shared), an encoded format is 10-100 KB",
)
