"""JSON Schema ``type: string`` with ``minLength``, ``maxLength``, ``pattern`` and ``format``, as a grammar node.

:func:`string_node` returns the node of a whole JSON string token, quotes included, whose
*decoded* value satisfies every keyword given:

* lengths count Unicode code points of the decoded value (an escape such as ``\\n`` or a
  surrogate pair ``\\ud83d\\ude00`` is one), kept symbolic (``x{0,100000}`` is one node);
* ``pattern`` is an ECMA-262 regular expression matched anywhere in the decoded value
  (:func:`structgen.grammar.regex.regex_to_node`), so ``\\n`` in the text is a newline to it;
* ``format`` is one of :mod:`.formats`.

The keywords are combined by intersection over decoded characters, and the result is encoded
for JSON by :func:`.json_escapes.encode_chars` (which documents the escapes accepted).
Contradictory lengths are caught here; a language left empty by a pattern or format is caught
when a small search can prove it (otherwise the node is simply empty).
"""

from __future__ import annotations

from functools import lru_cache

from .. import caches
from ..errors import LimitError, RegexError, SchemaError
from ..grammar import ir
from ..grammar.cp_automata import language_is_empty
from .formats import format_node
from .json_escapes import ANY_ENCODED, ANY_ENCODED_ALL, encode_chars

QUOTE = ir.lit('"')

#: States the emptiness check of a pattern/format combination may explore.
EMPTINESS_CHECK_STATES = 2_000


def _length(value: object, keyword: str, pointer: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(f"{keyword} must be a non-negative integer", keyword=keyword, pointer=pointer)
    if isinstance(value, float):
        if not value.is_integer():
            raise SchemaError(f"{keyword} must be a non-negative integer", keyword=keyword, pointer=pointer)
        value = int(value)
    if value < 0:
        raise SchemaError(f"{keyword} must be a non-negative integer", keyword=keyword, pointer=pointer)
    return int(value)


def pattern_node(pattern: object, pointer: str = "") -> ir.Node:
    """The decoded-character language of a JSON Schema ``pattern`` (unanchored ECMA-262)."""
    if not isinstance(pattern, str):
        raise SchemaError("pattern must be a string", keyword="pattern", pointer=pointer)
    from ..grammar.regex import regex_to_node

    try:
        return regex_to_node(pattern, flavor="ecma", search=None)
    except RegexError as exc:
        raise SchemaError(f"pattern cannot be enforced: {exc}", keyword="pattern", pointer=pointer) from exc


def string_chars(
    *,
    min_length: int = 0,
    max_length: int | None = None,
    pattern: str | None = None,
    format: str | None = None,
    pointer: str = "",
    allow_empty: bool = False,
    exact_formats: bool = False,
) -> ir.Node:
    """The language of decoded string values (no quotes, no escaping) satisfying the keywords."""
    lo = _length(min_length, "minLength", pointer)
    hi = None if max_length is None else _length(max_length, "maxLength", pointer)
    if hi is not None and lo > hi:
        return _empty("minLength is greater than maxLength", "maxLength", pointer, allow_empty)
    languages: list[tuple[ir.Node, str]] = []
    if format is not None:
        languages.append((format_node(format, pointer=pointer, exact_only=exact_formats), "format"))
    if pattern is not None:
        languages.append((pattern_node(pattern, pointer), "pattern"))
    if not languages:
        return ir.repeat(ir.ANY_CHAR, lo, hi)
    body = languages[0][0]
    for extra, _kw in languages[1:]:
        body = ir.Intersection(body, extra)
    if lo == 0 and hi is None:
        # no length keyword: nothing to compare with the language's lengths (a walk of the
        # whole format or pattern, 10 ms for date-time)
        least, most = 0, None
    else:
        least, most = length_bounds(body)
    if (hi is not None and least > hi) or (most is not None and most < lo):
        kw = "maxLength" if hi is not None and least > hi else "minLength"
        return _empty(f"no string allowed by {languages[0][1]} has the length {kw} requires", kw, pointer, allow_empty)
    if lo > least or (hi is not None and (most is None or most > hi)):
        body = ir.Intersection(body, ir.repeat(ir.ANY_CHAR, lo, hi))
    if (len(languages) > 1 or isinstance(body, ir.Intersection)) and _proved_empty(body):
        keywords = " and ".join(kw for _n, kw in languages)
        return _empty(
            f"no string satisfies {keywords} together with the length bounds", languages[-1][1], pointer, allow_empty
        )
    return body


def string_node(
    *,
    min_length: int = 0,
    max_length: int | None = None,
    pattern: str | None = None,
    format: str | None = None,
    pointer: str = "",
    allow_empty: bool = False,
    exact_formats: bool = False,
    ascii_escapes: bool = False,
) -> ir.Node:
    """A whole JSON string token (quotes included) whose decoded value satisfies the keywords.

    Raises :class:`~structgen.errors.SchemaError` for invalid keyword values, an unknown or
    unenforceable format, a pattern the regex reader refuses, and an unsatisfiable combination
    (unless ``allow_empty``, which returns :data:`ir.NOTHING` instead). ``exact_formats`` refuses
    the formats enforced only as a subset of their valid strings (see :data:`.formats.FORMATS`).
    ``ascii_escapes`` also accepts ``\\uXXXX`` spellings of printable ASCII characters (every
    JSON encoding; see :mod:`.json_escapes` for why that is off by default).
    """
    if pattern is None and format is None:
        lo = _length(min_length, "minLength", pointer)
        hi = None if max_length is None else _length(max_length, "maxLength", pointer)
        if hi is not None and lo > hi:
            return _empty("minLength is greater than maxLength", "maxLength", pointer, allow_empty)
        any_char = ANY_ENCODED_ALL if ascii_escapes else ANY_ENCODED
        return ir.seq(QUOTE, ir.repeat(any_char, lo, hi), QUOTE)
    chars = string_chars(
        min_length=min_length,
        max_length=max_length,
        pattern=pattern,
        format=format,
        pointer=pointer,
        allow_empty=allow_empty,
        exact_formats=exact_formats,
    )
    if chars == ir.NOTHING:
        return ir.NOTHING
    return ir.seq(QUOTE, encode_chars(chars, ascii_escapes=ascii_escapes), QUOTE)


def _proved_empty(chars: ir.Node) -> bool:
    """Whether a small search proves the language empty (inconclusive searches say no)."""
    try:
        return language_is_empty(chars, max_states=EMPTINESS_CHECK_STATES) is True
    except LimitError:
        return False


def _empty(message: str, keyword: str, pointer: str, allow_empty: bool) -> ir.Node:
    if allow_empty:
        return ir.NOTHING
    raise SchemaError(message, keyword=keyword, pointer=pointer)


@lru_cache(maxsize=256)
def length_bounds(node: ir.Node) -> tuple[int, int | None]:
    """Shortest and longest string lengths (in characters) of a character-level node; longest None if unbounded.

    A safe approximation: the true language may be narrower (intersections, differences).
    """
    done: dict[int, tuple[int, int | None]] = {}
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
        sub = [done[id(c)] for c in kids]
        if isinstance(n, ir.Literal):
            k = len(n.data.decode("utf-8", "replace"))
            r: tuple[int, int | None] = (k, k)
        elif isinstance(n, ir.CharClass):
            r = (1, 1)
        elif isinstance(n, ir.Seq):
            r = (sum(a for a, _b in sub), None if any(b is None for _a, b in sub) else sum(b for _a, b in sub))  # type: ignore[misc]
        elif isinstance(n, ir.Alt):
            r = (
                min((a for a, _b in sub), default=0),
                None if any(b is None for _a, b in sub) else max((b for _a, b in sub), default=0),
            )  # type: ignore[type-var]
        elif isinstance(n, ir.Repeat):
            a, b = sub[0]
            r = (a * n.min, None if (n.max is None and b != 0) or b is None else b * (n.max or 0))
        elif isinstance(n, ir.Intersection):
            (a1, b1), (a2, b2) = sub
            r = (max(a1, a2), b1 if b2 is None else (b2 if b1 is None else min(b1, b2)))
        elif isinstance(n, ir.Difference):
            r = sub[0]
        else:
            r = (0, None)
        done[id(n)] = r
    return done[id(node)]


caches.register_lru(
    "schema.strings.length_bounds", length_bounds, bytes_per_entry=100, estimate="a tuple of two ints and its key"
)
