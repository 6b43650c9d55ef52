"""Lexical facts of llama.cpp's GBNF dialect shared by the GBNF reader and writer.

Kept apart so that the writer can escape and name things exactly as the reader (and llama.cpp)
reads them back, without the two modules importing each other.
"""

from __future__ import annotations

import re

#: llama.cpp's ``MAX_REPETITION_THRESHOLD``: a ``{n}`` minimum above it is refused, a ``{n,m}``
#: maximum above it is read as "no maximum", and a quantifier whose count times the number of
#: rules its operand generated exceeds it is refused.
MAX_REPETITION_THRESHOLD = 2000

#: Characters allowed in a rule name (llama.cpp's ``is_word_char``).
NAME_RE = re.compile(r"[a-zA-Z0-9-]+")

#: Characters that must be escaped inside ``[...]`` (``^`` only matters first; it has no escape
#: in llama.cpp, so it is written as ``\x5E`` there).
_CLASS_SPECIAL = {0x5C: "\\\\", 0x5D: "\\]", 0x5B: "\\[", 0x2D: "\\-", 0x22: '\\"'}
_LITERAL_SPECIAL = {0x5C: "\\\\", 0x22: '\\"'}
_CONTROL = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}

#: A character class that matches no Unicode scalar value: how the writer spells "nothing".
NOTHING_TEXT = "[^\\x00-\\U0010FFFF]"


def is_valid_name(name: str) -> bool:
    return NAME_RE.fullmatch(name) is not None


def escape_codepoint(cp: int, special: dict[int, str]) -> str:
    """One code point as GBNF source text: printable characters raw, the rest escaped."""
    if cp in special:
        return special[cp]
    if cp in _CONTROL:
        return _CONTROL[cp]
    if cp < 0x80:
        return chr(cp) if 0x20 <= cp < 0x7F else f"\\x{cp:02X}"
    if 0xD800 <= cp <= 0xDFFF:
        return f"\\u{cp:04X}"
    ch = chr(cp)
    if ch.isprintable():
        return ch
    return f"\\u{cp:04X}" if cp <= 0xFFFF else f"\\U{cp:08X}"


def literal_text(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return '"' + "".join(escape_codepoint(ord(c), _LITERAL_SPECIAL) for c in text) + '"'


def class_text(ranges: tuple[tuple[int, int], ...], negated: bool) -> str:
    """A GBNF character class for inclusive code point ``ranges`` (non-empty)."""
    parts = []
    for i, (lo, hi) in enumerate(ranges):
        first = escape_codepoint(lo, _CLASS_SPECIAL)
        if i == 0 and not negated and lo == 0x5E:
            first = "\\x5E"  # a leading ^ would negate the class
        if lo == hi:
            parts.append(first)
        else:
            parts.append(f"{first}-{escape_codepoint(hi, _CLASS_SPECIAL)}")
    return "[" + ("^" if negated else "") + "".join(parts) + "]"
