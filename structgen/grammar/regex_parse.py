"""Reading a regular expression into the syntax tree of :mod:`.regex_ast`.

Three flavours share one scanner:

* ``"ecma"``: the ECMA-262 subset JSON Schema ``pattern`` uses, read in Unicode mode (``u``);
* ``"glrm"``: Rust ``regex-syntax`` as GLRM ``/.../`` uses it (Unicode, full-lexeme);
* ``"glrm-bytes"``: GLRM ``b/.../``, Rust regex without Unicode: it matches bytes.

Anything whose meaning is not certain is refused with a :class:`RegexError` naming the construct
and its offset; nothing is read with a different meaning than the flavour gives it. The scanner is
one loop with an explicit stack of open groups, so nesting depth costs no Python recursion (and is
bounded by ``GrammarLimits.max_nesting``); nested Rust character classes recurse, bounded by the
same limit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import GrammarError, LimitError, RegexError
from ..limits import DEFAULT_GRAMMAR_LIMITS, GrammarLimits
from . import regex_unicode as uni
from .ir import MAX_CODEPOINT, Ranges
from .regex_ast import (
    Alternation,
    Anchor,
    ByteSet,
    CharSet,
    Concat,
    RegexNode,
    Repetition,
)

FLAVORS = ("ecma", "glrm", "glrm-bytes")

_HEX = "0123456789abcdefABCDEF"
#: ECMA-262 SyntaxCharacter plus ``/``: the characters an ECMA escape may always quote.
_ECMA_SYNTAX = set("^$\\.*+?()[]{}|/")
#: Rust's ``char::is_whitespace`` (Unicode White_Space), what the ``x`` flag skips.
_RUST_SPACE = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)
}
_SIMPLE_QUANTIFIERS = {"*": (0, None), "+": (1, None), "?": (0, 1)}


@dataclass(frozen=True)
class _Flags:
    case_insensitive: bool = False
    dot_all: bool = False
    extended: bool = False


class _Frame:
    """An open group: the finished alternatives and the items of the current one."""

    __slots__ = ("alternatives", "items", "saved_flags", "open_pos", "quantifiable", "just_quantified")

    def __init__(self, saved_flags: _Flags, open_pos: int) -> None:
        self.alternatives: list[list[RegexNode]] = []
        self.items: list[RegexNode] = []
        self.saved_flags = saved_flags
        self.open_pos = open_pos
        self.quantifiable = False
        self.just_quantified = False

    def push(self, node: RegexNode, *, group: bool = False) -> None:
        self.items.append(node)
        self.quantifiable = group or not isinstance(node, Anchor)  # a group is quantifiable: (?:^)*
        self.just_quantified = False

    def finish(self) -> RegexNode:
        branches = [items[0] if len(items) == 1 else Concat(tuple(items)) for items in self.alternatives + [self.items]]
        return branches[0] if len(branches) == 1 else Alternation(tuple(branches))


def parse_regex(
    pattern: str,
    *,
    flavor: str = "ecma",
    flags: str = "",
    limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS,
) -> RegexNode:
    """The syntax tree of ``pattern`` in ``flavor`` (see the module docstring), or a RegexError."""
    if not isinstance(pattern, str):
        raise GrammarError(f"a regex pattern must be str, not {type(pattern).__name__}")
    if not isinstance(flavor, str) or flavor not in FLAVORS:
        raise RegexError(f"unknown regex flavor {flavor!r}; expected one of {', '.join(FLAVORS)}", pattern=pattern)
    if not isinstance(flags, str):
        raise RegexError(f"regex flags must be a str, not {type(flags).__name__}", pattern=pattern)
    size = len(pattern.encode("utf-8", "surrogatepass")) if len(pattern) <= limits.max_source_bytes else len(pattern)
    if size > limits.max_source_bytes:
        raise LimitError(
            f"regex of {len(pattern)} characters is too long", limit="max_source_bytes", value=limits.max_source_bytes
        )
    return _Parser(pattern, flavor, flags, limits).parse()


class _Parser:
    def __init__(self, pattern: str, flavor: str, flags: str, limits: GrammarLimits) -> None:
        self.p = pattern
        self.n = len(pattern)
        self.i = 0
        self.ecma = flavor == "ecma"
        self.bytes = flavor == "glrm-bytes"
        self.upper = 0xFF if self.bytes else MAX_CODEPOINT
        self.limits = limits
        self.flags = self._initial_flags(flags)
        self.group_names: set[str] = set()

    # -- errors and small helpers ------------------------------------------------------------

    def fail(self, message: str, position: int | None = None) -> RegexError:
        return RegexError(message, pattern=self.p, position=self.i if position is None else position)

    def _initial_flags(self, flags: str) -> _Flags:
        if self.ecma:
            if flags not in ("", "u"):
                raise self.fail(f"ECMA-262 regex flags {flags!r} are not supported (JSON Schema patterns have none)", 0)
            return _Flags()
        result = _Flags()
        for f in flags:
            if f == "i":
                result = replace(result, case_insensitive=True)
            elif f == "s":
                result = replace(result, dot_all=True)
            elif f == "x":
                result = replace(result, extended=True)
            elif f == "u":
                if self.bytes:
                    raise self.fail("the Unicode flag 'u' is not valid on a byte regex", 0)
            else:
                raise self.fail(f"unsupported regex flag {f!r}; supported flags are i, s, x, u", 0)
        return result

    def _set(self, ranges: Ranges) -> RegexNode:
        return ByteSet(ranges) if self.bytes else CharSet(ranges)

    def _fold(self, ranges: Ranges) -> Ranges:
        if not self.flags.case_insensitive:
            return ranges
        return uni.case_fold_ascii(ranges) if self.bytes else uni.case_fold(ranges)

    def _negate(self, ranges: Ranges) -> Ranges:
        return uni.negate(ranges, self.upper)

    def _literal(self, value: int) -> RegexNode:
        single = ((value, value),)
        return self._set(self._fold(single) if self.flags.case_insensitive else single)

    def _skip_extended(self) -> None:
        """With the ``x`` flag, skip whitespace and ``#`` comments (Rust flavours only)."""
        if not self.flags.extended:
            return
        p, n = self.p, self.n
        while self.i < n:
            c = p[self.i]
            if c in _RUST_SPACE:
                self.i += 1
            elif c == "#":
                end = p.find("\n", self.i)
                self.i = n if end < 0 else end + 1
            else:
                return

    def _check_repeat(self, value: int, position: int) -> None:
        if value > self.limits.max_repeat:
            raise LimitError(
                f"repetition count {value} at offset {position} in regex /{self.p}/ is too large",
                limit="max_repeat",
                value=self.limits.max_repeat,
            )

    # -- the main loop -----------------------------------------------------------------------

    def parse(self) -> RegexNode:
        frames = [_Frame(self.flags, -1)]
        while True:
            self._skip_extended()
            if self.i >= self.n:
                break
            c = self.p[self.i]
            frame = frames[-1]
            if c == "(":
                self._open_group(frames)
            elif c == ")":
                if len(frames) == 1:
                    raise self.fail("unmatched ')'")
                self.i += 1
                done = frames.pop()
                self.flags = done.saved_flags
                frames[-1].push(done.finish(), group=True)
            elif c == "|":
                self.i += 1
                frame.alternatives.append(frame.items)
                frame.items = []
                frame.quantifiable = frame.just_quantified = False
            elif c in _SIMPLE_QUANTIFIERS:
                start = self.i
                self.i += 1
                self._quantify(frame, *_SIMPLE_QUANTIFIERS[c], start)
            elif c == "{":
                start = self.i
                counts = self._counted_repetition()
                if counts is None:  # ECMA (Annex B): a brace that cannot start a quantifier is literal
                    self.i += 1
                    frame.push(self._literal(ord("{")))
                else:
                    self._quantify(frame, counts[0], counts[1], start)
            else:
                frame.push(self._atom())
        if len(frames) > 1:
            raise self.fail("unclosed group '('", frames[-1].open_pos)
        return frames[0].finish()

    def _quantify(self, frame: _Frame, lo: int, hi: int | None, start: int) -> None:
        if not frame.quantifiable:
            if frame.items and isinstance(frame.items[-1], Anchor):
                raise self.fail("a quantifier cannot follow an anchor", start)
            raise self.fail("quantifier with nothing to repeat", start)
        if self.ecma and frame.just_quantified:
            raise self.fail(
                "a quantifier cannot follow another quantifier (possessive quantifiers are not ECMA-262)", start
            )
        if self.i < self.n and self.p[self.i] == "?":
            if not self.ecma:
                raise self.fail("lazy quantifiers such as '*?' are not supported in GLRM regexes", start)
            self.i += 1  # lazy: the same language
        self._check_repeat(lo if hi is None else hi, start)
        item = frame.items.pop()
        frame.items.append(Repetition(item, lo, hi, start))
        frame.just_quantified = True

    def _digits(self, j: int) -> tuple[int | None, int]:
        start = j
        while j < self.n and self.p[j].isascii() and self.p[j].isdigit():
            j += 1
        if j == start:
            return None, j
        if j - start > len(str(self.limits.max_repeat)) + 1:
            raise LimitError(
                f"repetition count at offset {start} in regex /{self.p}/ is too large",
                limit="max_repeat",
                value=self.limits.max_repeat,
            )
        return int(self.p[start:j]), j

    def _skip_space_at(self, j: int) -> int:
        if self.flags.extended:
            while j < self.n and self.p[j] in _RUST_SPACE:
                j += 1
        return j

    def _counted_repetition(self) -> tuple[int, int | None] | None:
        """Read ``{n}``, ``{n,}`` or ``{n,m}`` at ``{``; None where ECMA reads the brace literally."""
        start = self.i
        j = self._skip_space_at(start + 1)
        lo, j = self._digits(j)
        j = self._skip_space_at(j)
        if lo is None:
            if j < self.n and self.p[j] == ",":
                raise self.fail("'{,n}' is not supported (flavours disagree on its meaning); write {0,n}", start)
            if self.ecma:
                return None
            raise self.fail("'{' must start a counted repetition {n}, {n,} or {n,m}; write \\{ for a brace", start)
        hi: int | None = lo
        if j < self.n and self.p[j] == ",":
            hi, j = self._digits(self._skip_space_at(j + 1))
            j = self._skip_space_at(j)
        if j >= self.n or self.p[j] != "}":
            raise self.fail("incomplete counted repetition; write \\{ for a literal brace", start)
        if hi is not None and hi < lo:
            raise self.fail(f"numbers out of order in {{{lo},{hi}}}", start)
        self.i = j + 1
        return lo, hi

    # -- groups ------------------------------------------------------------------------------

    def _open_group(self, frames: list[_Frame]) -> None:
        start = self.i
        p = self.p
        self.i += 1
        saved = self.flags
        if p.startswith("?", self.i):
            self.i += 1
            if p.startswith(("=", "!"), self.i):
                raise self.fail("lookahead assertions (?= and (?! are not supported", start)
            if p.startswith(("<=", "<!"), self.i):
                raise self.fail("lookbehind assertions (?<= and (?<! are not supported", start)
            if p.startswith(":", self.i):
                self.i += 1
            elif p.startswith("<", self.i):
                self._group_name(start, self.i + 1)
            elif not self.ecma and p.startswith("P<", self.i):
                self._group_name(start, self.i + 2)
            elif not self.ecma and p.startswith(("P=", "P>"), self.i):
                raise self.fail("backreferences and recursion (?P=...) are not supported", start)
            elif self.ecma:
                what = {
                    "P": "Python-style named groups (?P<name>...); write (?<name>...)",
                    "#": "comment groups (?#...)",
                    ">": "atomic groups (?>...)",
                }.get(p[self.i : self.i + 1], "inline modifiers and other (?...) groups")
                raise self.fail(f"{what} are not supported in ECMA-262 patterns", start)
            elif p.startswith("#", self.i):
                raise self.fail("comment groups (?#...) are not supported", start)
            elif p.startswith(">", self.i):
                raise self.fail("atomic groups (?>...) are not supported", start)
            else:
                new_flags, scoped = self._rust_flags(start)
                if not scoped:  # (?flags) applies to the rest of the enclosing group
                    self.flags = new_flags
                    frames[-1].quantifiable = frames[-1].just_quantified = False
                    return
                saved, self.flags = self.flags, new_flags
        if len(frames) > self.limits.max_nesting:
            raise LimitError(
                f"regex groups nested more than {self.limits.max_nesting} levels deep in /{self.p[:80]}/",
                limit="max_nesting",
                value=self.limits.max_nesting,
            )
        frames.append(_Frame(saved, start))

    def _group_name(self, start: int, name_start: int) -> None:
        end = self.p.find(">", name_start)
        name = self.p[name_start:end] if end >= 0 else ""
        if end < 0 or not name or name[0].isdigit() or not all(c.isalnum() or c in "_$" for c in name):
            raise self.fail("invalid group name", start)
        if not self.ecma:
            if name in self.group_names:
                raise self.fail(f"duplicate group name {name!r}", start)
            self.group_names.add(name)
        self.i = end + 1

    def _rust_flags(self, start: int) -> tuple[_Flags, bool]:
        """Read Rust inline flags after ``(?``; return the new flags and whether a ``:`` scope follows."""
        flags = self.flags
        seen: set[str] = set()
        negate = False
        dangling = False
        while self.i < self.n:
            c = self.p[self.i]
            if c in ":)":
                if dangling:
                    raise self.fail("dangling flag negation '-'", self.i)
                if not seen:
                    raise self.fail("empty flag group '(?)'", start)
                self.i += 1
                return flags, c == ":"
            self.i += 1
            if c == "-":
                if negate:
                    raise self.fail("repeated flag negation '-'", self.i - 1)
                negate = dangling = True
                continue
            if c in seen:
                raise self.fail(f"duplicate flag {c!r}", self.i - 1)
            seen.add(c)
            dangling = False
            if c == "i":
                flags = replace(flags, case_insensitive=not negate)
            elif c == "s":
                flags = replace(flags, dot_all=not negate)
            elif c == "x":
                flags = replace(flags, extended=not negate)
            elif c == "u":
                if negate or self.bytes:
                    raise self.fail(
                        "the byte/Unicode alphabet cannot be changed by an inline flag; choose b/.../ or /.../", start
                    )
            elif c in "mUR":
                raise self.fail(f"inline flag {c!r} is not supported (only i, s, x, u)", self.i - 1)
            else:
                raise self.fail(f"unknown inline flag {c!r}", self.i - 1)
        raise self.fail("unclosed group '('", start)

    # -- atoms -------------------------------------------------------------------------------

    def _atom(self) -> RegexNode:
        c = self.p[self.i]
        start = self.i
        if c == ".":
            self.i += 1
            if self.ecma:
                return CharSet(self._negate(uni.LINE_TERMINATORS_ECMA))
            return self._set(((0, self.upper),) if self.flags.dot_all else self._negate(uni.NEWLINE))
        if c in "^$":
            if not self.ecma:
                raise self.fail("anchors and assertions (^ $) are not supported: a GLRM regex describes a whole lexeme")
            self.i += 1
            return Anchor(end=c == "$", position=start)
        if c == "[":
            return self._set(self._class_ecma() if self.ecma else self._class_rust(1))
        if c == "\\":
            value = self._escape(in_class=False)
            if isinstance(value, int):
                return self._literal(value)
            return self._set(value)
        self.i += 1
        if self.bytes and not c.isascii():
            raise self.fail("raw non-ASCII characters are not allowed in a byte regex; use \\xNN byte escapes", start)
        return self._literal(ord(c))

    # -- escapes -----------------------------------------------------------------------------

    def _escape(self, in_class: bool) -> int | Ranges:
        """Read an escape at ``\\``: a single code point (or byte) as int, or a set as ranges."""
        start = self.i
        self.i += 1
        if self.i >= self.n:
            raise self.fail("the pattern ends with a lone backslash", start)
        c = self.p[self.i]
        self.i += 1
        return self._escape_ecma(c, start, in_class) if self.ecma else self._escape_rust(c, start, in_class)

    def _hex(self, count: int, start: int) -> int:
        digits = self.p[self.i : self.i + count]
        if len(digits) != count or any(d not in _HEX for d in digits):
            raise self.fail(f"expected {count} hexadecimal digits", start)
        self.i += count
        return int(digits, 16)

    def _braced_hex(self, start: int) -> int:
        end = self.p.find("}", self.i)
        digits = self.p[self.i + 1 : end] if end >= 0 else ""
        if not digits or len(digits) > 8 or any(d not in _HEX for d in digits):
            raise self.fail("expected hexadecimal digits in braces", start)
        self.i = end + 1
        value = int(digits, 16)
        if value > MAX_CODEPOINT:
            raise self.fail("code point above U+10FFFF", start)
        return value

    def _escape_ecma(self, c: str, start: int, in_class: bool) -> int | Ranges:
        if c in "dDwWsS":
            base = {"d": uni.DIGIT_ASCII, "w": uni.WORD_ASCII, "s": uni.SPACE_ECMA}[c.lower()]
            return self._negate(base) if c.isupper() else base
        if c in "pP":
            if not self.p.startswith("{", self.i):
                raise self.fail(f"\\{c} must be followed by {{name}} in ECMA-262", start)
            end = self.p.find("}", self.i)
            if end < 0:
                raise self.fail(f"unclosed \\{c}{{...}}", start)
            body = self.p[self.i + 1 : end]
            self.i = end + 1
            try:
                ranges = uni.ecma_property(body)
            except uni.PropertyError as e:
                raise self.fail(str(e), start) from None
            return self._negate(ranges) if c == "P" else ranges
        if c == "b":
            if in_class:
                return 0x08
            raise self.fail("word boundary assertions (\\b) are not supported", start)
        if c == "B":
            raise self.fail("word boundary assertions (\\B) are not supported", start)
        if c in "123456789":
            raise self.fail("backreferences (\\1) and octal escapes are not supported", start)
        if c == "0":
            if self.i < self.n and self.p[self.i].isdigit():
                raise self.fail("octal escapes are not supported", start)
            return 0
        if c == "k":
            raise self.fail("backreferences (\\k<name>) are not supported", start)
        if c in "tnvfr":
            return {"t": 9, "n": 10, "v": 11, "f": 12, "r": 13}[c]
        if c == "c":
            letter = self.p[self.i : self.i + 1]
            if not (letter.isascii() and letter.isalpha()):
                raise self.fail("\\c must be followed by an ASCII letter", start)
            self.i += 1
            return ord(letter) % 32
        if c == "x":
            return self._hex(2, start)
        if c == "u":
            if self.p.startswith("{", self.i):
                return self._braced_hex(start)
            value = self._hex(4, start)
            if 0xD800 <= value <= 0xDBFF and self.p.startswith("\\u", self.i):
                trail = self.p[self.i + 2 : self.i + 6]
                if len(trail) == 4 and all(d in _HEX for d in trail) and 0xDC00 <= int(trail, 16) <= 0xDFFF:
                    self.i += 6
                    return 0x10000 + ((value - 0xD800) << 10) + (int(trail, 16) - 0xDC00)
            return value
        if c in _ECMA_SYNTAX or c == "-" or (c.isascii() and not c.isalnum()):
            # SyntaxCharacter, '/' and '-' are ECMA identity escapes; other ASCII punctuation is
            # accepted as itself (Annex B reading; no flavour gives it another meaning).
            return ord(c)
        raise self.fail(f"unknown escape \\{c}", start)

    def _escape_rust(self, c: str, start: int, in_class: bool) -> int | Ranges:
        if c in "dDwWsS":
            if self.bytes:
                base = {"d": uni.DIGIT_ASCII, "w": uni.WORD_ASCII, "s": uni.SPACE_ASCII}[c.lower()]
            else:
                base = {"d": uni.rust_digit, "w": uni.rust_word, "s": uni.rust_space}[c.lower()]()
            return self._negate(base) if c.isupper() else base
        if c in "pP":
            return self._rust_property(c == "P", start)
        if c in "aftnrv":
            return {"a": 7, "f": 12, "t": 9, "n": 10, "r": 13, "v": 11}[c]
        if c in "xuU":
            if self.bytes and c != "x":
                raise self.fail("Unicode escapes are not allowed in a byte regex; use \\xNN", start)
            if self.p.startswith("{", self.i):
                value = self._braced_hex(start)
            else:
                value = self._hex({"x": 2, "u": 4, "U": 8}[c], start)
            if self.bytes and value > 0xFF:
                raise self.fail("a byte escape must be at most \\xFF", start)
            if not self.bytes and (value > MAX_CODEPOINT or 0xD800 <= value <= 0xDFFF):
                raise self.fail("escape is not a Unicode scalar value", start)
            return value
        if c.isascii() and c.isdigit():
            raise self.fail("backreferences (\\1) are not supported", start)
        if c in "bBAz<>":
            where = " in a character class" if in_class else ""
            raise self.fail(f"anchors and assertions (\\{c}) are not supported{where}", start)
        if c.isascii() and not c.isalnum():
            return ord(c)
        raise self.fail(f"unknown escape \\{c}", start)

    def _rust_property(self, negated: bool, start: int) -> Ranges:
        if self.bytes:
            raise self.fail("Unicode classes (\\p) are not allowed in a byte regex", start)
        if self.p.startswith("{", self.i):
            end = self.p.find("}", self.i)
            if end < 0:
                raise self.fail("unclosed \\p{...}", start)
            body = self.p[self.i + 1 : end]
            self.i = end + 1
        elif self.i < self.n:
            body = self.p[self.i]
            self.i += 1
        else:
            raise self.fail("\\p needs a property name", start)
        if "!=" in body:
            body = body.replace("!=", "=", 1)
            negated = not negated
        if body.strip().startswith("^"):
            raise self.fail("\\p{^...} is not supported; write \\P{...}", start)
        try:
            ranges = uni.rust_property(body)
        except uni.PropertyError as e:
            raise self.fail(str(e), start) from None
        # Rust folds a Unicode class before negating it.
        ranges = self._fold(ranges)
        return self._negate(ranges) if negated else ranges

    # -- character classes -------------------------------------------------------------------

    def _class_ecma(self) -> Ranges:
        start = self.i
        self.i += 1
        negated = self.p.startswith("^", self.i)
        if negated:
            self.i += 1
        parts: list[tuple[int, int]] = []
        while True:
            if self.i >= self.n:
                raise self.fail("unclosed character class '['", start)
            if self.p[self.i] == "]":
                self.i += 1
                break
            item_pos = self.i
            a = self._class_atom_ecma()
            if self.p.startswith("-", self.i) and self.i + 1 < self.n and self.p[self.i + 1] != "]":
                self.i += 1
                b = self._class_atom_ecma()
                if not isinstance(a, int) or not isinstance(b, int):
                    raise self.fail("a class escape such as \\d cannot be a range bound", item_pos)
                if a > b:
                    raise self.fail("range out of order in character class", item_pos)
                parts.append((a, b))
            elif isinstance(a, int):
                parts.append((a, a))
            else:
                parts.extend(a)
        ranges = uni.union(tuple(parts))
        return self._negate(ranges) if negated else ranges

    def _class_atom_ecma(self) -> int | Ranges:
        if self.p[self.i] == "\\":
            return self._escape(in_class=True)
        self.i += 1
        return ord(self.p[self.i - 1])

    def _class_rust(self, depth: int) -> Ranges:
        """A Rust bracket class at ``[``: unions, nested classes, POSIX classes and ``&& -- ~~``."""
        if depth > self.limits.max_nesting:
            raise LimitError(
                f"character classes nested more than {self.limits.max_nesting} levels deep in /{self.p[:80]}/",
                limit="max_nesting",
                value=self.limits.max_nesting,
            )
        start = self.i
        self.i += 1
        self._skip_extended()
        negated = self.p.startswith("^", self.i)
        if negated:
            self.i += 1
            self._skip_extended()
        current: list[Ranges] = []
        # A ']' first is a literal; otherwise so are the '-' characters first.
        if self.p.startswith("]", self.i):
            current.append(((0x5D, 0x5D),))
            self.i += 1
        else:
            while self.p.startswith("-", self.i):
                current.append(((0x2D, 0x2D),))
                self.i += 1
                self._skip_extended()
        accumulated: Ranges | None = None
        operator = ""
        while True:
            self._skip_extended()
            if self.i >= self.n:
                raise self.fail("unclosed character class '['", start)
            c = self.p[self.i]
            if c == "]":
                self.i += 1
                break
            if c == "[":
                posix = self._posix_class()
                current.append(posix if posix is not None else self._class_rust(depth + 1))
                continue
            op = self.p[self.i : self.i + 2]
            if op in ("&&", "--", "~~"):
                accumulated = self._class_operation(accumulated, operator, current)
                operator = op
                current = []
                self.i += 2
                continue
            current.append(self._class_range_rust())
        result = self._class_operation(accumulated, operator, current)
        result = self._fold(result)
        return self._negate(result) if negated else result

    def _class_operation(self, left: Ranges | None, operator: str, items: list[Ranges]) -> Ranges:
        right = self._fold(uni.union(*items))
        if left is None:
            return right
        left = self._fold(left)
        if operator == "&&":
            return uni.intersect(left, right, self.upper)
        if operator == "--":
            return uni.difference(left, right, self.upper)
        return uni.symmetric_difference(left, right, self.upper)

    def _class_range_rust(self) -> Ranges:
        item_pos = self.i
        a = self._class_item_rust()
        self._skip_extended()
        if not self.p.startswith("-", self.i):
            return a if not isinstance(a, int) else ((a, a),)
        after = self._skip_space_at(self.i + 1)
        if after >= self.n or self.p[after] in "]-":
            return a if not isinstance(a, int) else ((a, a),)
        self.i = after
        b = self._class_item_rust()
        if not isinstance(a, int) or not isinstance(b, int):
            raise self.fail("invalid range boundary: a range must go from one literal to another", item_pos)
        if a > b:
            raise self.fail("range out of order in character class", item_pos)
        return ((a, b),)

    def _class_item_rust(self) -> int | Ranges:
        c = self.p[self.i]
        if c == "\\":
            return self._escape(in_class=True)
        if c == "[":
            raise self.fail("a nested class cannot be a range bound", self.i)
        if self.bytes and not c.isascii():
            raise self.fail("raw non-ASCII characters are not allowed in a byte regex; use \\xNN byte escapes")
        self.i += 1
        return ord(c)

    def _posix_class(self) -> Ranges | None:
        """``[:name:]`` or ``[:^name:]`` at ``[``; None (nothing consumed) if it is not one."""
        if not self.p.startswith("[:", self.i):
            return None
        end = self.p.find(":]", self.i + 2)
        if end < 0:
            return None
        name = self.p[self.i + 2 : end]
        negated = name.startswith("^")
        ranges = uni.POSIX_CLASSES.get(name[1:] if negated else name)
        if ranges is None:
            return None
        self.i = end + 2
        ranges = self._fold(ranges)
        return self._negate(ranges) if negated else ranges
