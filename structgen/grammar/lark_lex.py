"""The tokens of Lark grammar text, in the dialect glrmask 0.5.0 reads (``Grammar.from_lark``).

:class:`LarkLexer` turns the text into :class:`LarkTok` values one at a time. Newlines matter in
Lark (a newline ends a declaration), so they are tokens, with one exception that makes
continuation lines work: a newline whose next non-blank, non-comment line starts with ``|`` is
skipped. Comments are ``//`` and ``#`` to the end of the line.

Strings decode the escapes glrmask decodes (``\\n \\t \\r \\\\ \\" \\'``, ``\\xNN``,
``\\uNNNN`` with surrogate pairs, ``\\UNNNNNNNN``) and keep any other backslash pair, and an
escape that names no character, as written (``"\\q"`` is the two characters ``\\q``, as in
Lark, which reads strings as Python literals). Special-token forms
(``<[...]>``, ``<|name|>``, ``@token(N)``, ``@name``) are single tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .text_lexer import LookaheadLexer

NAME, STRING, REGEX, INT, PUNCT, TOKENSET, SPECIAL, AT_TOKEN, AT_NAME, DIRECTIVE, NL, EOF = (
    "name",
    "string",
    "regex",
    "int",
    "punct",
    "token set",
    "special token",
    "@token",
    "@name",
    "directive",
    "newline",
    "end of input",
)

#: Regex flags glrmask takes after ``/.../`` (Lark's ``m`` and ``l`` are refused there too).
REGEX_FLAGS = "isxu"
#: Largest token id glrmask takes (ids are 32-bit).
MAX_TOKEN_ID = 2**32 - 1

_NAME_RE = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_INT_RE = re.compile(r"[0-9]+")
_BLANK_RE = re.compile(r"(?:[ \t\f\r\n]+|(?://|#)[^\n]*)*")
_SPACE_RE = re.compile(r"[ \t\f\r]+")
_FLAGS_RE = re.compile(r"[a-zA-Z]*")
_PUNCT = ("->", "..", ":", "|", "(", ")", "[", "]", "?", "*", "+", "~", ",", ".", "!")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


@dataclass(frozen=True)
class LarkTok:
    """One token: ``value`` is the name, decoded string, regex pattern, integer, punctuation,
    directive word, or for a token set ``(ids ranges, negated, wildcard)``; ``flags`` holds
    regex flags, or ``"i"`` for a case-insensitive string."""

    kind: str
    value: object
    offset: int
    flags: str = ""

    def is_punct(self, *texts: str) -> bool:
        return self.kind == PUNCT and self.value in texts

    def describe(self) -> str:
        if self.kind in (NL, EOF):
            return self.kind
        if self.kind == PUNCT:
            return repr(self.value)
        return f"{self.kind} {self.value!r}"


class LarkLexer(LookaheadLexer[LarkTok]):
    """Reads Lark tokens from ``text`` with one token of lookahead."""

    def _scan(self) -> LarkTok:
        text = self.text
        while True:
            m = _SPACE_RE.match(text, self.pos)
            if m:
                self.pos = m.end()
            if text.startswith("//", self.pos) or text.startswith("#", self.pos):
                nl = text.find("\n", self.pos)
                self.pos = len(text) if nl < 0 else nl
                continue
            break
        start = self.pos
        if start >= len(text):
            return LarkTok(EOF, None, start)
        c = text[start]
        if c == "\n":
            # blank lines and comments after it are skipped with it, so each is scanned once
            after = _BLANK_RE.match(text, start).end()  # type: ignore[union-attr]
            self.pos = after
            if text.startswith("|", after):  # a continuation line: the newline is not a break
                return self._scan()
            return LarkTok(NL, None, start)
        if c == '"' or c == "'":
            return self._string(start)
        if c == "/":
            return self._regex(start)
        if c == "<":
            return self._special(start)
        if c == "@":
            return self._at(start)
        if c == "%":
            m = _NAME_RE.match(text, start + 1)
            if not m:
                raise self.error("expected a directive name after '%'", start)
            self.pos = m.end()
            return LarkTok(DIRECTIVE, m.group(), start)
        m = _NAME_RE.match(text, start)
        if m:
            self.pos = m.end()
            return LarkTok(NAME, m.group(), start)
        m = _INT_RE.match(text, start)
        if m:
            self.pos = m.end()
            return LarkTok(INT, self._int(m.group(), start), start)
        for p in _PUNCT:
            if text.startswith(p, start):
                self.pos = start + len(p)
                return LarkTok(PUNCT, p, start)
        raise self.error(f"unexpected character {c!r}", start)

    def _int(self, digits: str, offset: int) -> int:
        if len(digits) > 20:
            raise self.error("integer in Lark source is too large", offset)
        return int(digits)

    def _string(self, start: int) -> LarkTok:
        text = self.text
        quote = text[start]
        i = start + 1
        out: list[str] = []
        while True:
            if i >= len(text) or text[i] == "\n":
                raise self.error("unterminated string", start)
            c = text[i]
            if c == quote:
                i += 1
                break
            if c != "\\":
                out.append(c)
                i += 1
                continue
            if i + 1 >= len(text):
                raise self.error("unterminated escape", i)
            e = text[i + 1]
            if e in _SIMPLE_ESCAPES:
                out.append(_SIMPLE_ESCAPES[e])
                i += 2
            elif e in _HEX_ESCAPES:
                width = _HEX_ESCAPES[e]
                digits = text[i + 2 : i + 2 + width]
                if len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
                    if e == "x":  # glrmask refuses a short \x; a short \u or \U stays as written
                        raise self.error(f"invalid \\x escape: {text[i : i + 4]}", start)
                    out.append("\\" + e)
                    i += 2
                    continue
                cp = int(digits, 16)
                i += 2 + width
                if 0xD800 <= cp <= 0xDBFF and text.startswith("\\u", i):
                    low = text[i + 2 : i + 6]
                    if len(low) == 4 and all(d in "0123456789abcdefABCDEF" for d in low):
                        if 0xDC00 <= int(low, 16) <= 0xDFFF:  # a surrogate pair is one character
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                            i += 6
                if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                    out.append(f"\\{e}{digits}")  # not a character: kept as written, as glrmask does
                else:
                    out.append(chr(cp))
            else:  # Lark keeps an unknown escape as written
                out.append("\\" + e)
                i += 2
        flags = ""
        m = _NAME_RE.match(text, i)
        if m and m.group() == "i":  # ``"abc"i``: the flag is glued to the closing quote
            flags = "i"
            i += 1
        self.pos = i
        return LarkTok(STRING, "".join(out), start, flags)

    def _regex(self, start: int) -> LarkTok:
        text = self.text
        i = start + 1
        while True:
            if i >= len(text) or text[i] == "\n":
                raise self.error("unterminated regex", start)
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == "/":
                break
            i += 1
        pattern = text[start + 1 : i]
        flags = _FLAGS_RE.match(text, i + 1).group()  # type: ignore[union-attr]
        for k, f in enumerate(flags):
            if f not in REGEX_FLAGS:
                raise self.error(f"unsupported regex flag {f!r}; supported flags are i, s, x, u", start)
            if f in flags[:k]:
                raise self.error(f"duplicate regex flag {f!r}", start)
        self.pos = i + 1 + len(flags)
        return LarkTok(REGEX, pattern, start, flags)

    def _special(self, start: int) -> LarkTok:
        text = self.text
        if text.startswith("<|", start):
            end = text.find("|>", start + 2)
            if end < 0 or end == start + 2 or text.find("\n", start, end) >= 0:
                raise self.error("unterminated or empty named special token", start)
            self.pos = end + 2
            return LarkTok(SPECIAL, text[start + 2 : end], start)
        if not text.startswith("<[", start):
            raise self.error("expected <[...]> or <|name|>", start)
        end = text.find("]>", start + 2)
        if end < 0 or text.find("\n", start, end) >= 0:
            raise self.error("unterminated <[...]> token atom", start)
        self.pos = end + 2
        return LarkTok(TOKENSET, self._token_set(text[start + 2 : end], start), start)

    def _token_set(self, body: str, offset: int) -> tuple[tuple[tuple[int, int], ...], bool, bool]:
        """``<[...]>``'s ranges, whether negated (``^``), whether the wildcard ``*``."""
        body = body.strip()
        negated = body.startswith("^")
        if negated:
            body = body[1:].strip()
        if body == "*":
            if negated:
                raise self.error("wildcard syntax is <[*]>; a negated wildcard is not supported", offset)
            return (), False, True
        ranges: list[tuple[int, int]] = []
        if body:
            for part in body.split(","):
                part = part.strip()
                if not part:
                    raise self.error("missing token ID after comma", offset)
                lo_text, sep, hi_text = part.partition("-")
                ends = [lo_text.strip(), hi_text.strip()] if sep else [lo_text.strip()]
                if not all(_INT_RE.fullmatch(e) for e in ends):
                    raise self.error("expected numeric token ID", offset)
                values = [int(e) for e in ends]
                if any(v > MAX_TOKEN_ID for v in values):
                    raise self.error("token ID doesn't fit in 32 bits", offset)
                lo, hi = values[0], values[-1]
                if hi < lo:
                    raise self.error("token range endpoints are reversed", offset)
                ranges.append((lo, hi))
        return tuple(ranges), negated, False

    def _at(self, start: int) -> LarkTok:
        text = self.text
        m = _NAME_RE.match(text, start + 1)
        if not m:
            raise self.error("expected external grammar name after @", start)
        if m.group() == "token" and text.startswith("(", m.end()):
            close = text.find(")", m.end())
            digits = text[m.end() + 1 : close] if close >= 0 else ""
            if not _INT_RE.fullmatch(digits):
                raise self.error("expected @token(<token-id>)", start)
            value = self._int(digits, start)
            if value > MAX_TOKEN_ID:
                raise self.error("token ID doesn't fit in 32 bits", start)
            self.pos = close + 1
            return LarkTok(AT_TOKEN, value, start)
        self.pos = m.end()
        return LarkTok(AT_NAME, m.group(), start)
