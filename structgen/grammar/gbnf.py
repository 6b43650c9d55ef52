"""Read llama.cpp's GBNF dialect into a :class:`Grammar` (and re-export the GBNF writer).

The reader accepts exactly what llama.cpp's ``llama_grammar_parser`` accepts and refuses what it
refuses, including its build-time checks (undefined rules, a missing start rule, left recursion
as llama.cpp detects it, and its repetition budget ``MAX_REPETITION_THRESHOLD``), so that a
grammar that works here works there. Where llama.cpp gives a construct a meaning, the grammar
form gets the same one:

* ``"\\xNN"`` is the code point U+00NN (UTF-8 encoded), not a raw byte;
* ``x{n,m}`` with ``m`` above 2000 means ``x{n,}``; ``""``, ``[]`` and ``x{0}`` are empty and
  cannot take a quantifier; ``[z-a]`` matches nothing;
* a rule defined twice keeps its last definition; the text ends at a NUL character.

Deviations, all on input llama.cpp cannot use sensibly: a count above
``GrammarLimits.max_repeat`` raises :class:`LimitError`; ``{n,m}`` with ``m < n`` (which llama.cpp
never finishes building) raises :class:`GrammarError`; ``<token-text>`` is kept as a named token
atom for a vocabulary to resolve later (llama.cpp resolves it at once).

Parsing is iterative (nesting is bounded by ``GrammarLimits.max_nesting``, never by Python's
stack) and linear in the size of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import GrammarError, LimitError
from ..limits import DEFAULT_GRAMMAR_LIMITS, GrammarLimits
from . import ir
from .gbnf_llama_check import RuleGraph
from .gbnf_syntax import MAX_REPETITION_THRESHOLD
from .gbnf_write import write_gbnf
from .grammar import Grammar

__all__ = ["MAX_REPETITION_THRESHOLD", "parse_gbnf", "write_gbnf"]

_SPACE_NL = re.compile(r"(?:[ \t\r\n]+|#[^\r\n]*)*")
_SPACE = re.compile(r"(?:[ \t]+|#[^\r\n]*)*")
_NAME = re.compile(r"[a-zA-Z0-9-]+")
_INT = re.compile(r"[0-9]+")
_LITERAL_RUN = re.compile(r'[^"\\]+')
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_SIMPLE_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}
_HEX_SIZES = {"x": 2, "u": 4, "U": 8}
_UINT64_LIMIT = 1 << 64
_UINT32_MAX = (1 << 32) - 1


def parse_gbnf(
    text: str | bytes,
    start: str = "root",
    limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS,
    *,
    allow_left_recursion: bool = False,
) -> Grammar:
    """Read GBNF ``text`` (llama.cpp's dialect); ``start`` names the start rule.

    Raises :class:`GrammarError` (with ``line``, ``column`` and ``rule`` where known) for text
    llama.cpp would refuse, and :class:`LimitError` when ``limits`` are exceeded.
    ``allow_left_recursion=True`` skips llama.cpp's left-recursion check (the grammar form itself
    allows left recursion).
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise GrammarError(f"grammar text is not valid UTF-8 (byte offset {e.start})") from None
    if len(text) > limits.max_source_bytes:
        raise LimitError(
            f"grammar text is longer than {limits.max_source_bytes} bytes",
            limit="max_source_bytes",
            value=limits.max_source_bytes,
        )
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise _Reader(text, start, limits).error("lone surrogate character in grammar text", e.start) from None
    if size > limits.max_source_bytes:
        raise LimitError(
            f"grammar text is {size} bytes, more than {limits.max_source_bytes}",
            limit="max_source_bytes",
            value=limits.max_source_bytes,
        )
    # llama.cpp reads a C string: a NUL character ends the text
    text = text.split("\0", 1)[0]
    return _Reader(text, start, limits).read(allow_left_recursion)


@dataclass
class _Frame:
    """One rule body or one parenthesised group being read."""

    node: int  # the rule-graph rule this body or group compiles to
    nested: bool  # inside parentheses, where newlines are spaces
    sym_before: int = 0  # llama.cpp's symbol count before the group's own symbol
    open_pos: int = 0
    alts: list[ir.Node] = field(default_factory=list)
    alt_lists: list[int] = field(default_factory=list)
    items: list[ir.Node] = field(default_factory=list)
    prefix: int = RuleGraph.NIL  # elements of the alternative before its last symbol
    last: int = RuleGraph.NIL  # elements of the last symbol
    quantifiable: bool = False  # the last symbol produced elements a quantifier can apply to
    n_prev: int = 1  # llama.cpp's n_prev_rules for the last symbol
    quantifiers: int = 0  # quantifiers applied to the last symbol (each nests it one level deeper)


class _Reader:
    def __init__(self, text: str, start: str, limits: GrammarLimits) -> None:
        self.text = text
        self.n = len(text)
        self.start = start
        self.limits = limits
        self.graph = RuleGraph()
        self.rule = ""  # the rule being read, for error messages
        self.n_symbols = 0  # llama.cpp's symbol_ids.size()
        self.symbols: dict[str, int] = {}  # rule name -> rule-graph rule
        self.symbol_ids: dict[str, int] = {}  # rule name -> llama.cpp symbol id
        self.max_rule_id = -1  # highest symbol id llama.cpp has added a rule for
        self.first_ref: dict[str, tuple[int, str]] = {}  # rule name -> (position, referring rule)
        self.rules: dict[str, ir.Node] = {}
        self.ref_cache: dict[str, ir.Ref] = {}

    # -- errors ----------------------------------------------------------------------------

    def error(self, message: str, pos: int | None, rule: str | None = None) -> GrammarError:
        rule = rule if rule is not None else (self.rule or None)
        if pos is None:
            return GrammarError(message, rule=rule)
        pos = min(pos, self.n)
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return GrammarError(message, line=line, column=column, rule=rule)

    def _limit(self, message: str, limit: str, value: int, pos: int) -> LimitError:
        where = self.error("", pos)
        return LimitError(f"{message} at line {where.line}, column {where.column}", limit=limit, value=value)

    # -- top level -------------------------------------------------------------------------

    def read(self, allow_left_recursion: bool) -> Grammar:
        pos = self._space(0, True)
        while pos < self.n:
            pos = self._rule(pos)
        self.rule = ""
        if not self.rules:
            raise self.error("grammar has no rules", None)
        self._check_undefined()
        if self.start not in self.rules:
            raise self.error(f"grammar has no rule named {self.start!r} to start from", None, self.start)
        if not allow_left_recursion:
            culprit = self.graph.find_left_recursion()
            if culprit is not None:
                raise self.error(
                    "left recursion: llama.cpp cannot build a grammar where a rule can begin with "
                    "itself (rewrite it with repetition, e.g. 'a ::= b (\"x\" b)*')",
                    None,
                    culprit,
                )
        return Grammar(self.rules, self.start, limits=self.limits)

    def _check_undefined(self) -> None:
        """Refuse undefined rules where llama.cpp notices them.

        llama.cpp checks every rule slot up to the highest id it compiled a rule for, and every
        reference left in its compiled rules. A name that is mentioned only where the text no
        longer counts (``a{0}``, the first of two definitions of a rule) and got a later id than
        every compiled rule goes unnoticed, and so it does here.
        """
        undefined = [name for name in self.first_ref if name not in self.rules]
        if not undefined:
            return
        referenced = self.graph.referenced_rules()
        for name in sorted(undefined, key=lambda n: self.first_ref[n][0]):
            if self.symbol_ids[name] <= self.max_rule_id or self.symbols[name] in referenced:
                pos, referrer = self.first_ref[name]
                raise self.error(f"undefined rule {name!r}", pos, referrer)

    def _symbol(self, name: str) -> int:
        node = self.symbols.get(name)
        if node is None:
            self.symbol_ids[name] = self.n_symbols
            self.n_symbols += 1
            node = self.graph.new_rule(name, generated=False)
            self.symbols[name] = node
        return node

    def _rule(self, pos: int) -> int:
        self.rule = ""
        m = _NAME.match(self.text, pos)
        if not m:
            raise self.error("expecting a rule name", pos)
        name = m.group()
        self.rule = name
        node = self._symbol(name)
        pos = self._space(m.end(), False)
        if not self.text.startswith("::=", pos):
            raise self.error("expecting '::='", pos)
        pos = self._space(pos + 3, True)
        body, pos = self._alternates(pos, node)
        if pos < self.n:
            c = self.text[pos]
            if c == "\r":
                pos += 2 if self.text.startswith("\n", pos + 1) else 1
            elif c == "\n":
                pos += 1
            else:
                raise self.error(f"expecting a newline or the end of the text, found {c!r}", pos)
        # llama.cpp keeps the last definition of a rule defined twice
        self.rules[name] = body
        self.max_rule_id = max(self.max_rule_id, self.symbol_ids[name])
        return self._space(pos, True)

    def _space(self, pos: int, newline_ok: bool) -> int:
        return (_SPACE_NL if newline_ok else _SPACE).match(self.text, pos).end()  # type: ignore[union-attr]

    # -- alternatives and sequences (iterative over nesting) --------------------------------

    def _alternates(self, pos: int, rule_node: int) -> tuple[ir.Node, int]:
        text, graph = self.text, self.graph
        frames = [_Frame(rule_node, nested=False)]
        while True:
            f = frames[-1]
            c = text[pos] if pos < self.n else ""
            if c == '"':
                value, pos = self._literal(pos + 1)
                self._push(f, value, graph.TERM if value != ir.EMPTY else graph.NIL)
            elif c == "[":
                node, has_chars, pos = self._class(pos + 1)
                self._push(f, node, graph.TERM if has_chars else graph.NIL)
            elif c == "<" or c == "!":
                node, pos = self._token(pos)
                self._push(f, node, graph.TERM)
            elif c in _WORD_CHARS:
                m = _NAME.match(text, pos)
                name = m.group()  # type: ignore[union-attr]
                self.first_ref.setdefault(name, (pos, self.rule))
                ref = self.ref_cache.get(name)
                if ref is None:
                    ref = self.ref_cache[name] = ir.Ref(name)
                self._push(f, ref, graph.atom(self._symbol(name)))
                pos = m.end()  # type: ignore[union-attr]
            elif c == "(":
                if len(frames) > self.limits.max_nesting:
                    raise self._limit(
                        f"parentheses nested more than {self.limits.max_nesting} deep",
                        "max_nesting",
                        self.limits.max_nesting,
                        pos,
                    )
                before = self.n_symbols
                self.max_rule_id = max(self.max_rule_id, before)
                self.n_symbols += 1
                frames.append(_Frame(graph.new_rule(self.rule, generated=True), True, before, pos))
                pos = self._space(pos + 1, True)
                continue
            elif c == ".":
                self._push(f, ir.ANY_CHAR, graph.TERM)
                pos += 1
            elif c == "*" or c == "+" or c == "?":
                pos = self._space(pos + 1, f.nested)
                self._repeat(f, 1 if c == "+" else 0, 1 if c == "?" else None, pos)
                continue
            elif c == "{":
                lo, hi, pos = self._braces(pos, f.nested)
                self._repeat(f, lo, hi, pos)
                continue
            elif c == "|":
                self._end_alternative(f)
                pos = self._space(pos + 1, True)
                continue
            else:
                self._end_alternative(f)
                body = ir.alt(*f.alts)
                graph.set_alternatives(f.node, f.alt_lists)
                if not f.nested:
                    return body, pos
                if c != ")":
                    where = f"found {c!r}" if c else "reached the end of the text"
                    raise self.error(f"expecting ')' to close the '(' at offset {f.open_pos}, {where}", pos)
                frames.pop()
                parent = frames[-1]
                self._push(parent, body, graph.atom(f.node))
                parent.n_prev = max(1, self.n_symbols - f.sym_before)
                pos += 1
            pos = self._space(pos, frames[-1].nested)

    def _push(self, f: _Frame, node: ir.Node, elements: int) -> None:
        """Append one symbol to the current sequence."""
        f.prefix = self.graph.cat(f.prefix, f.last)
        f.last = elements
        f.n_prev = 1
        f.quantifiers = 0
        f.quantifiable = not self.graph.is_empty(elements)
        f.items.append(node)  # EMPTY items vanish in ir.seq

    def _end_alternative(self, f: _Frame) -> None:
        f.alts.append(ir.seq(*f.items))
        f.alt_lists.append(self.graph.cat(f.prefix, f.last))
        f.items = []
        f.prefix = f.last = RuleGraph.NIL
        f.quantifiable = False
        f.n_prev = 1

    def _repeat(self, f: _Frame, lo: int, hi: int | None, pos: int) -> None:
        """Apply ``{lo,hi}`` to the last symbol, with llama.cpp's checks and rule accounting."""
        if not f.quantifiable:
            raise self.error("expecting an item before */+/?/{ (an empty item cannot be repeated)", pos)
        if hi is not None and hi > 0:
            total = hi
        else:
            total = lo if lo > 0 else 1
        if f.n_prev * total > MAX_REPETITION_THRESHOLD:
            raise self.error(
                f"repetition too large for llama.cpp: {f.n_prev} generated rule(s) repeated {total} "
                f"times exceeds its limit of {MAX_REPETITION_THRESHOLD} (MAX_REPETITION_THRESHOLD); "
                "move the repeated part into a rule of its own or reduce the counts",
                pos,
            )
        if hi is not None and hi < lo:
            raise self.error(f"repetition maximum {hi} is below its minimum {lo}", pos)
        f.quantifiers += 1
        if f.quantifiers > self.limits.max_nesting:
            raise self._limit(
                f"more than {self.limits.max_nesting} quantifiers on one item",
                "max_nesting",
                self.limits.max_nesting,
                pos,
            )
        graph = self.graph
        n_opt = 1 if hi is None else hi - lo
        if hi == 0:
            new_last = graph.NIL
        elif n_opt > 0:
            self.n_symbols += n_opt
            self.max_rule_id = max(self.max_rule_id, self.n_symbols - 1)
            chain = graph.new_rule(self.rule, generated=True)
            looped = graph.cat(f.last, graph.atom(chain))
            graph.set_alternatives(chain, [looped if hi is None else f.last, graph.NIL])
            new_last = looped if lo > 0 else graph.atom(chain)
        else:
            new_last = f.last
        f.last = new_last
        f.quantifiable = not graph.is_empty(new_last)
        f.n_prev *= total
        f.items[-1] = ir.repeat(f.items[-1], lo, hi)

    # -- terminals -------------------------------------------------------------------------

    def _int(self, pos: int, what: str) -> tuple[int, int]:
        m = _INT.match(self.text, pos)
        if not m:
            raise self.error(f"expecting {what}", pos)
        digits = m.group()
        if len(digits) > 20 or int(digits) >= _UINT64_LIMIT:
            raise self.error("integer out of range", pos)
        return int(digits), m.end()

    def _count(self, pos: int) -> tuple[int, int]:
        value, end = self._int(pos, "an integer")
        if value > self.limits.max_repeat:
            raise self._limit(
                f"repetition count {value} is above {self.limits.max_repeat}",
                "max_repeat",
                self.limits.max_repeat,
                pos,
            )
        return value, end

    def _braces(self, pos: int, nested: bool) -> tuple[int, int | None, int]:
        text = self.text
        pos = self._space(pos + 1, nested)
        lo, pos = self._count(pos)
        pos = self._space(pos, nested)
        hi: int | None
        c = text[pos] if pos < self.n else ""
        if c == "}":
            hi = lo
        elif c == ",":
            pos = self._space(pos + 1, nested)
            hi = None
            if _INT.match(text, pos):
                hi, pos = self._count(pos)
                pos = self._space(pos, nested)
            if not text.startswith("}", pos):
                raise self.error("expecting '}'", pos)
        else:
            raise self.error("expecting ',' or '}'", pos)
        pos = self._space(pos + 1, nested)
        if lo > MAX_REPETITION_THRESHOLD:
            raise self.error(
                f"repetition count {lo} exceeds llama.cpp's limit of {MAX_REPETITION_THRESHOLD} "
                "(MAX_REPETITION_THRESHOLD)",
                pos,
            )
        if hi is not None and hi > MAX_REPETITION_THRESHOLD:
            hi = None  # llama.cpp reads a maximum above its threshold as "no maximum"
        return lo, hi, pos

    def _char(self, pos: int) -> tuple[int, int]:
        """One character of a literal or class, escapes decoded: (code point, next position)."""
        text = self.text
        if pos >= self.n:
            raise self.error("unexpected end of the text", pos)
        c = text[pos]
        if c != "\\":
            return ord(c), pos + 1
        e = text[pos + 1] if pos + 1 < self.n else ""
        size = _HEX_SIZES.get(e)
        if size is not None:
            digits = text[pos + 2 : pos + 2 + size]
            if len(digits) != size or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(f"expecting {size} hex digits after '\\{e}'", pos)
            return int(digits, 16), pos + 2 + size
        if e in _SIMPLE_ESCAPES:
            return ord(_SIMPLE_ESCAPES[e]), pos + 2
        raise self.error(f"unknown escape '\\{e}'", pos)

    def _literal(self, pos: int) -> tuple[ir.Node, int]:
        text = self.text
        chars: list[str] = []
        valid = True
        while True:
            m = _LITERAL_RUN.match(text, pos)
            if m:
                chars.append(m.group())
                pos = m.end()
            if pos >= self.n:
                raise self.error("unexpected end of the text inside a string literal", pos)
            if text[pos] == '"':
                break
            cp, pos = self._char(pos)
            if cp > ir.MAX_CODEPOINT or ir.SURROGATES[0] <= cp <= ir.SURROGATES[1]:
                valid = False  # no valid UTF-8 text contains it
            else:
                chars.append(chr(cp))
        if not valid:
            return ir.NOTHING, pos + 1
        return ir.seq(ir.lit("".join(chars))), pos + 1

    def _class(self, pos: int) -> tuple[ir.Node, bool, int]:
        text = self.text
        negated = text.startswith("^", pos)
        if negated:
            pos += 1
        ranges: list[tuple[int, int]] = []
        has_chars = False
        while True:
            if pos >= self.n:
                raise self.error("unexpected end of the text inside a character class", pos)
            if text[pos] == "]":
                break
            lo, pos = self._char(pos)
            hi = lo
            if text.startswith("-", pos) and not text.startswith("]", pos + 1):
                if pos + 1 >= self.n:
                    raise self.error("unexpected end of the text inside a character class", pos + 1)
                hi, pos = self._char(pos + 1)
            has_chars = True
            hi = min(hi, ir.MAX_CODEPOINT)
            if lo <= hi:  # llama.cpp keeps [z-a], which matches nothing
                ranges.append((lo, hi))
        if not has_chars:
            return ir.EMPTY, False, pos + 1  # llama.cpp compiles [] and [^] to nothing at all
        node = ir.CharClass(tuple(ranges), negated)
        if not node.codepoints():
            return ir.NOTHING, has_chars, pos + 1
        return node, has_chars, pos + 1

    def _token(self, pos: int) -> tuple[ir.Node, int]:
        text = self.text
        negated = text[pos] == "!"
        if negated:
            pos += 1
        if not text.startswith("<", pos):
            raise self.error("expecting '<' after '!'", pos)
        start = pos
        pos += 1
        if text.startswith("[", pos):
            token_id, pos = self._int(pos + 1, "a token id")
            if token_id > _UINT32_MAX:
                raise self.error("token id too large", pos)
            if not text.startswith("]", pos):
                raise self.error("expecting ']'", pos)
            if not text.startswith(">", pos + 1):
                raise self.error("expecting '>'", pos + 1)
            return ir.Token(ids=(token_id,), negated=negated), pos + 2
        end = text.find(">", pos)
        if end < 0:
            raise self.error("expecting '>' to end the token", start)
        # llama.cpp tokenizes the text between the brackets (they included) into one token
        return ir.Token(name=text[start : end + 1], negated=negated), end + 1
