"""Tokens of GLRM source text (glrmask 0.5.0's ``glrm 1`` dialect), read on demand.

The lexer turns text into :class:`Tok` values: identifiers (bare or in backticks), integers,
string literals (``"..."``, ``'...'``, ``b"..."``), regex literals (``/.../flags``, ``b/.../flags``)
and punctuation. Comments (``//`` and ``/* */``) are skipped. Every token records its offset, and
:meth:`Lexer.where` turns an offset into a 1-based line and column (in characters), the positions
:class:`~structgen.errors.GrammarError` reports. Scanning is linear in the text.

String escapes follow glrmask: in ``"..."`` the escape ``\\xNN`` is the code point U+00NN (so
``"\\xff"`` is the two UTF-8 bytes of "ÿ"), while in ``b"..."`` it is the raw byte NN.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .text_lexer import LookaheadLexer

# token kinds
IDENT, INT, STRING, REGEX, PUNCT, EOF = "ident", "int", "string", "regex", "punct", "eof"

#: Words that end an expression and cannot be bare references (``fa`` and ``eps`` are special
#: elsewhere: ``fa`` only as the first word of a body, ``eps`` as the empty string).
KEYWORDS = frozenset({"start", "ignore", "nt", "t", "internal", "extern", "grammar", "pragma", "edge", "accept"})

_U64_MAX = (1 << 64) - 1

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT_RE = re.compile(r"[0-9]+")
_SPACE_RE = re.compile(r"[ \t\r\n\f\v]+")
_HEX_RE = re.compile(r"[0-9A-Fa-f]")
_FLAGS_RE = re.compile(r"[0-9A-Za-z_]*")
_PUNCT = (
    "::=",
    "->",
    "~+",
    "=",
    ";",
    "|",
    "(",
    ")",
    "?",
    "*",
    "+",
    "{",
    "}",
    ",",
    "-",
    "&",
    "~",
    ":",
    ".",
    "[",
    "]",
    "@",
)
_SIMPLE_ESCAPES = {"n": 0x0A, "t": 0x09, "r": 0x0D, "\\": 0x5C, '"': 0x22, "'": 0x27, "0": 0x00}
_REGEX_FLAGS = frozenset("isxu")


@dataclass(frozen=True)
class Tok:
    """One token. ``value``: the name, integer, literal bytes, punctuation text, or for a regex
    the pattern text; ``flags`` the regex flags; ``raw_bytes`` marks the ``b`` forms."""

    kind: str
    value: object
    offset: int
    end: int
    escaped: bool = False  # an identifier written in backticks
    raw_bytes: bool = False
    flags: str = ""

    def is_punct(self, *texts: str) -> bool:
        return self.kind == PUNCT and self.value in texts

    def is_word(self, *words: str) -> bool:
        """A bare (not backticked) identifier spelled as one of ``words``."""
        return self.kind == IDENT and not self.escaped and self.value in words

    def describe(self) -> str:
        """The token as glrmask's messages name it (``Semi``, ``Ident("x")``...)."""
        if self.kind == EOF:
            return "end of input"
        if self.kind == IDENT:
            return f'Ident("{self.value}")'
        if self.kind == INT:
            return f"Int({self.value})"
        if self.kind == STRING:
            return f"StringLit({list(self.value)})"  # type: ignore[call-overload]
        if self.kind == REGEX:
            return f"RegexLit(/{self.value}/{self.flags})"
        return _PUNCT_NAMES.get(str(self.value), repr(self.value))


_PUNCT_NAMES = {
    "=": "Equals",
    ";": "Semi",
    "|": "Pipe",
    "(": "LParen",
    ")": "RParen",
    "?": "Quest",
    "*": "Star",
    "+": "Plus",
    "{": "LBrace",
    "}": "RBrace",
    ",": "Comma",
    "-": "Minus",
    "&": "Amp",
    "~": "Tilde",
    "~+": "TildePlus",
    "->": "Arrow",
    ":": "Colon",
    ".": "Dot",
    "[": "LBracket",
    "]": "RBracket",
    "::=": "ColonColonEquals",
    "@": "At",
}


class Lexer(LookaheadLexer[Tok]):
    """Reads tokens from ``text`` one at a time, with one token of lookahead."""

    def _skip_trivia(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            m = _SPACE_RE.match(text, self.pos)
            if m:
                self.pos = m.end()
                continue
            if text.startswith("//", self.pos):
                nl = text.find("\n", self.pos)
                self.pos = n if nl < 0 else nl + 1
                continue
            if text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close < 0:
                    raise self.error("unterminated block comment", self.pos)
                self.pos = close + 2
                continue
            return

    def _scan(self) -> Tok:
        self._skip_trivia()
        text, start = self.text, self.pos
        if start >= len(text):
            return Tok(EOF, None, start, start)
        ch = text[start]
        if ch == "b" and start + 1 < len(text) and text[start + 1] in "\"'/":
            self.pos = start + 1
            tok = self._string(start) if text[start + 1] != "/" else self._regex(start)
            return tok
        m = _IDENT_RE.match(text, start)
        if m:
            self.pos = m.end()
            return Tok(IDENT, m.group(), start, self.pos)
        if ch == "`":
            close = text.find("`", start + 1)
            inner = text[start + 1 : close] if close >= 0 else ""
            if close < 0 or not _IDENT_RE.fullmatch(inner):
                raise self.error("escaped identifiers require a nonempty identifier between backticks", start)
            self.pos = close + 1
            return Tok(IDENT, inner, start, self.pos, escaped=True)
        m = _INT_RE.match(text, start)
        if m:
            self.pos = m.end()
            value = int(m.group())
            if value > _U64_MAX:
                raise self.error("integer in GLRM source is too large", start)
            return Tok(INT, value, start, self.pos)
        if ch in "\"'":
            return self._string(start)
        if ch == "/":
            return self._regex(start)
        for p in _PUNCT:
            if text.startswith(p, start):
                self.pos = start + len(p)
                return Tok(PUNCT, p, start, self.pos)
        raise self.error(f"unexpected character {ch!r} (U+{ord(ch):04X})", start)

    # -- literals -------------------------------------------------------------------------

    def _string(self, start: int) -> Tok:
        """A string literal; ``self.pos`` is at the opening quote, ``start`` at the literal."""
        text = self.text
        raw_bytes = text[start] == "b"
        quote = text[self.pos]
        i = self.pos + 1
        out = bytearray()
        while True:
            if i >= len(text):
                raise self.error("unterminated string literal", start)
            c = text[i]
            if c == quote:
                i += 1
                break
            if c != "\\":
                if raw_bytes and ord(c) > 0x7F:
                    raise self.error(
                        "raw non-ASCII characters are not allowed in byte strings; use byte escapes", start
                    )
                out += c.encode("utf-8")
                i += 1
                continue
            if i + 1 >= len(text):
                raise self.error("unterminated string literal", start)
            e = text[i + 1]
            if e in _SIMPLE_ESCAPES:
                out.append(_SIMPLE_ESCAPES[e])
                i += 2
            elif e == "x":
                digits = text[i + 2 : i + 4]
                for d in digits.ljust(2, quote):
                    if not _HEX_RE.fullmatch(d):
                        raise self.error(f"invalid hex digit {d!r}", start)
                value = int(digits, 16)
                if raw_bytes:
                    out.append(value)
                else:
                    out += chr(value).encode("utf-8")
                i += 4
            elif e == "u":
                if raw_bytes:
                    raise self.error("Unicode escapes are not allowed in byte strings", start)
                cp, i = self._unicode_escape(i, start)
                out += chr(cp).encode("utf-8")
            else:
                raise self.error(f"unknown string escape \\{e}", start)
        self.pos = i
        return Tok(STRING, bytes(out), start, i, raw_bytes=raw_bytes)

    def _unicode_escape(self, i: int, start: int) -> tuple[int, int]:
        """``\\uXXXX`` or ``\\u{X...}`` at ``text[i]``: the scalar value and the offset after it."""
        text = self.text
        if text.startswith("{", i + 2):
            close = text.find("}", i + 3)
            digits = text[i + 3 : close] if close >= 0 else ""
            if not digits or len(digits) > 6 or not all(_HEX_RE.fullmatch(d) for d in digits):
                raise self.error("invalid braced Unicode scalar escape", start)
            cp = int(digits, 16)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise self.error("Unicode escape is not a scalar value", start)
            return cp, close + 1
        digits = text[i + 2 : i + 6]
        if len(digits) != 4 or not all(_HEX_RE.fullmatch(d) for d in digits):
            raise self.error("invalid Unicode scalar escape", start)
        cp = int(digits, 16)
        if 0xD800 <= cp <= 0xDFFF:
            raise self.error("invalid Unicode scalar escape", start)
        return cp, i + 6

    def _regex(self, start: int) -> Tok:
        """A regex literal; ``self.pos`` is at the opening slash, ``start`` at the literal."""
        text = self.text
        raw_bytes = text[start] == "b"
        i = self.pos + 1
        while True:
            if i >= len(text):
                raise self.error("unterminated regex literal", start)
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == "/":
                break
            i += 1
        pattern = text[self.pos + 1 : i]
        flags = _FLAGS_RE.match(text, i + 1).group()  # type: ignore[union-attr]
        for f in flags:
            if f not in _REGEX_FLAGS:
                raise self.error(f"unsupported regex flag {f!r}; supported flags are i, s, x, u", start)
        if raw_bytes and "u" in flags:
            raise self.error("Unicode flag is not valid on a byte regex", start)
        self.pos = i + 1 + len(flags)
        return Tok(REGEX, pattern, start, self.pos, raw_bytes=raw_bytes, flags=flags)

    # -- foreign pragma bodies ------------------------------------------------------------

    def skip_braced_body(self, open_offset: int) -> None:
        """Skip a foreign ``pragma NAME { ... }`` body; the opening brace was just read.

        Braces nest; quoted values, regex literals and comments are skipped whole, so a brace
        inside them does not count. Everything else is ignored.
        """
        assert self._peeked is None
        text, n = self.text, len(self.text)
        depth = 1
        i = self.pos
        while i < n:
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    self.pos = i + 1
                    return
            elif c in "\"'":
                j = i + 1
                while j < n and text[j] != c:
                    j += 2 if text[j] == "\\" else 1
                if j >= n:
                    raise self.error("unterminated quoted value in foreign pragma", open_offset)
                i = j
            elif text.startswith("//", i):
                nl = text.find("\n", i)
                i = n - 1 if nl < 0 else nl
            elif text.startswith("/*", i):
                close = text.find("*/", i + 2)
                if close < 0:
                    raise self.error("unterminated block comment", i)
                i = close + 1
            elif c == "/":
                j = i + 1
                while j < n and text[j] != "/":
                    j += 2 if text[j] == "\\" else 1
                if j >= n:
                    raise self.error("unterminated regex literal", i)
                i = j
            i += 1
        raise self.error("unterminated foreign pragma block", open_offset)
