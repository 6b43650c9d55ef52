"""Lark grammar text, in the dialect glrmask 0.5.0 reads, to a :class:`~structgen.grammar.Grammar`.

glrmask reads Lark with the meaning its own GLRM has (terminals are lexed greedily and in
parallel, ``%ignore`` is its ``ignore``), so this reader translates Lark into the syntax tree of
:mod:`.glrm_syntax` and lowers that with :mod:`.glrm_lower`, the same code that gives GLRM its
meaning. The translation:

* ``name: ...`` (a name with a lowercase letter) is ``nt name = ...``; ``NAME: ...`` (no lowercase
  letter, an uppercase first letter after any leading ``_``) is ``t NAME = ...``: one greedy
  lexeme. ``?name``, ``!name``, ``_name`` and ``-> alias`` change trees, not languages, and are
  read and dropped. ``start`` is the start rule and must be defined.
* ``"lit"`` is a literal, ``"lit"i`` the regex ``/lit/i``, ``"a".."z"`` a one-character class,
  ``/re/flags`` a regex (Rust syntax, flags ``i s x u``, as GLRM's ``/.../``). ``x?``, ``[x]``,
  ``x*``, ``x+``, ``x ~ n``, ``x ~ n..m`` are repetitions; an empty alternative is the empty string.
* ``%import common.X`` (also ``-> Y`` and ``common (X, Y)``) defines ``X`` as Lark's common
  terminal, spelt as glrmask spells it (:data:`COMMON_TERMINALS`).
* ``%ignore e`` defines a hidden terminal ``%ignore~k = e`` and makes it an ``ignore`` terminal:
  any number of ignored lexemes may stand before every lexical atom of the grammar (terminal
  reference, literal, regex, token atom, extern grammar) and after the end. Nothing is inserted
  inside a terminal, so ``X: "a" "b"`` never matches ``a b``.
* ``NAME[lazy]`` / ``name[lazy]`` makes the body one terminal that ends at its earliest
  completion: the strings of the body's language ``L`` that have no proper prefix in ``L``, which
  is ``L - L Σ⁺`` (a :class:`~structgen.grammar.ir.Difference`).
* Token atoms: ``<[1,5-7]>``, ``<[^3]>``, ``<[*]>`` and ``@token(N)`` become
  :class:`~structgen.grammar.ir.Token` atoms; ``<|name|>`` is glrmask's ``extern token name`` (bind
  it with :meth:`Grammar.bind`), or with ``special_tokens="vocabulary"`` the named token
  ``<|name|>`` a vocabulary resolves; ``@name`` is an ``extern grammar name``.

Refused, as glrmask refuses them: priorities (``A.2``), attributes other than ``lazy``,
templates, ``%declare`` / ``%override`` / ``%extend`` and any other directive, imports from
modules other than ``common``, bare ``.``. Also refused: ``%json { ... }`` (glrmask embeds its own
JSON Schema compiler, whose layout differs from structgen's; bind a schema grammar to ``@name``
instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..errors import GrammarError, LimitError
from ..limits import DEFAULT_GRAMMAR_LIMITS, GrammarLimits
from . import ir
from .glrm_lower import lower
from .glrm_separated import node_nullable
from .glrm_syntax import (
    EXTERN_GRAMMAR,
    EXTERN_TOKEN,
    NT,
    Decl,
    EAlt,
    EDiff,
    EEps,
    ELit,
    ERef,
    ERegex,
    ERepeat,
    ESeq,
    Expr,
    Scope,
    T,
)
from .grammar import Grammar, _transform
from .lark_lex import (
    AT_NAME,
    AT_TOKEN,
    DIRECTIVE,
    EOF,
    INT,
    NAME,
    NL,
    REGEX,
    SPECIAL,
    STRING,
    TOKENSET,
    LarkLexer,
    LarkTok,
)

__all__ = ["COMMON_TERMINALS", "parse_lark"]

#: glrmask's bound on expression nesting in Lark text.
MAX_EXPRESSION_DEPTH = 128

_NUM_EXP = r"[eE][+-]?[0-9]+"
_DECIMAL = r"([0-9]+\.[0-9]*|\.[0-9]+)"
_FLOAT = rf"([0-9]+{_NUM_EXP}|{_DECIMAL}({_NUM_EXP})?)"
_NUMBER = rf"([0-9]+({_NUM_EXP})?|{_DECIMAL}({_NUM_EXP})?)"

#: The terminals of Lark's ``common.lark`` that glrmask 0.5.0 knows, as regexes (Rust syntax).
COMMON_TERMINALS: dict[str, str] = {
    "DIGIT": r"[0-9]",
    "HEXDIGIT": r"[0-9a-fA-F]",
    "INT": r"[0-9]+",
    "SIGNED_INT": r"[+-]?[0-9]+",
    "DECIMAL": _DECIMAL,
    "_EXP": _NUM_EXP,
    "FLOAT": _FLOAT,
    "SIGNED_FLOAT": rf"[+-]?{_FLOAT}",
    "NUMBER": _NUMBER,
    "SIGNED_NUMBER": rf"[+-]?{_NUMBER}",
    "ESCAPED_STRING": r'"([^"\\\n]|\\[^\n])*"',
    "LCASE_LETTER": r"[a-z]",
    "UCASE_LETTER": r"[A-Z]",
    "LETTER": r"[a-zA-Z]",
    "WORD": r"[a-zA-Z]+",
    "CNAME": r"[_a-zA-Z][_a-zA-Z0-9]*",
    "WS_INLINE": r"[ \t]+",
    "WS": r"[ \t\x0c\r\n]+",
    "CR": r"\r",
    "LF": r"\n",
    "NEWLINE": r"(\r?\n)+",
    "SH_COMMENT": r"#[^\n]*",
    "CPP_COMMENT": r"//[^\n]*",
    "C_COMMENT": r"/\*[^*]*\*+([^/*][^*]*\*+)*/",
    "SQL_COMMENT": r"--[^\n]*",
}

SpecialTokens = Literal["extern", "vocabulary"]
SPECIAL_TOKEN_MODES = ("extern", "vocabulary")

# name prefixes of the declarations the reader makes up; no Lark name can contain these characters
_IGNORE_PREFIX = "%ignore~"
_ATOM_PREFIX = "%token~"


def is_terminal_name(name: str) -> bool:
    """Lark's rule: a terminal's name has no lowercase letter and starts (after ``_``) uppercase."""
    stripped = name.lstrip("_")
    return bool(stripped) and stripped[0].isupper() and not any(c.islower() for c in name)


@dataclass
class _Atom:
    """A token atom met in the text: the ids it names, or a name left for a vocabulary."""

    ids: tuple[int, ...] = ()
    negated: bool = False
    name: str | None = None


@dataclass
class _Reader:
    lx: LarkLexer
    limits: GrammarLimits
    special_tokens: str
    top: Scope = field(default_factory=lambda: Scope((), 0))
    declared: dict[str, int] = field(default_factory=dict)  # Lark names defined, at their offsets
    externs: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (kind, offset)
    atoms: dict[str, _Atom] = field(default_factory=dict)  # made-up extern name -> token atom
    ignores: list[str] = field(default_factory=list)
    lazy: set[str] = field(default_factory=set)

    def error(self, message: str, offset: int) -> GrammarError:
        return self.lx.error(message, offset)

    # -- file and declarations ------------------------------------------------------------

    def read(self) -> Scope:
        lx = self.lx
        while True:
            tok = lx.peek()
            if tok.kind == EOF:
                break
            if tok.kind == NL:
                lx.next()
            elif tok.kind == DIRECTIVE:
                self.directive(lx.next())
            elif tok.kind == NAME or tok.is_punct("!", "?"):
                self.declaration()
            else:
                raise self.error(f"expected rule name, got {tok.describe()}", tok.offset)
        if "start" not in self.declared:
            raise self.error("Lark grammar must define a rule named 'start'", len(self.lx.text))
        self.top.starts.append(("start", self.declared["start"]))
        for name, (kind, offset) in self.externs.items():
            if name in self.declared:
                raise self.error(f"{name!r} names both an extern and a rule or terminal", offset)
            self.top.decls.append(Decl(EXTERN_TOKEN if kind == "token" else EXTERN_GRAMMAR, name, offset))
        return self.top

    def define(self, name: str, offset: int) -> None:
        if name in self.declared:
            raise self.error(f'duplicate Lark declaration "{name}"', offset)
        self.declared[name] = offset

    def end_of_line(self) -> None:
        """A body ends at a newline, or where a directive starts (glrmask reads one mid-line)."""
        tok = self.lx.peek()
        if tok.kind not in (NL, EOF, DIRECTIVE):
            raise self.error(f"expected the end of the line, got {tok.describe()}", tok.offset)

    def declaration(self) -> None:
        lx = self.lx
        while lx.peek().is_punct("!", "?"):  # tree-shaping modifiers: no effect on the language
            lx.next()
        tok = lx.next()
        if tok.kind != NAME:
            raise self.error(f"expected rule name, got {tok.describe()}", tok.offset)
        name = str(tok.value)
        if lx.peek().is_punct("."):
            raise self.error("Lark rule and terminal priorities are not supported", lx.peek().offset)
        lazy = False
        if lx.peek().is_punct("["):
            lx.next()
            while True:
                attr = lx.next()
                if attr.kind != NAME:
                    raise self.error(f"expected a rule attribute, got {attr.describe()}", attr.offset)
                if attr.value != "lazy":
                    raise self.error(
                        f'unsupported Lark rule attribute "{attr.value}"; only [lazy] on regular bodies is supported',
                        attr.offset,
                    )
                lazy = True
                sep = lx.next()
                if sep.is_punct("]"):
                    break
                if not sep.is_punct(","):
                    raise self.error(f"expected ']' after the rule attributes, got {sep.describe()}", sep.offset)
        colon = lx.next()
        if not colon.is_punct(":"):
            raise self.error(f"expected ':' after {name!r}, got {colon.describe()}", colon.offset)
        self.define(name, tok.offset)
        body = self.expansions(0)
        self.end_of_line()
        terminal = is_terminal_name(name)
        if lazy:
            body = _earliest(body)
            self.lazy.add(name)
        self.top.decls.append(Decl(T if (terminal or lazy) else NT, name, tok.offset, body=body))

    def directive(self, tok: LarkTok) -> None:
        word = tok.value
        if word == "import":
            self.import_common(tok)
        elif word == "ignore":
            body = self.expansions(0)
            self.end_of_line()
            name = f"{_IGNORE_PREFIX}{len(self.ignores) + 1}"
            self.ignores.append(name)
            self.top.decls.append(Decl(T, name, tok.offset, body=body))
            self.top.ignores.append((name, tok.offset))
        elif word == "json":
            raise self.error(
                "%json is not read by structgen's Lark reader; declare @name and bind it to "
                "Grammar.from_json_schema(...)",
                tok.offset,
            )
        else:
            raise self.error(f"unsupported Lark directive %{word}; directives are never silently ignored", tok.offset)

    def import_common(self, tok: LarkTok) -> None:
        lx = self.lx
        module = lx.next()
        if module.kind != NAME:
            raise self.error(f"expected name in Lark import, got {module.describe()}", module.offset)
        if module.value != "common":
            raise self.error(
                f"unsupported Lark import module \"{module.value}\"; only 'common' is supported", tok.offset
            )
        sep = lx.next()
        names: list[tuple[LarkTok, LarkTok | None]] = []
        if sep.is_punct("."):
            what = lx.next()
            if what.kind != NAME:
                raise self.error(f"expected name in Lark import, got {what.describe()}", what.offset)
            alias = None
            if lx.peek().is_punct("->"):
                lx.next()
                alias = lx.next()
                if alias.kind != NAME:
                    raise self.error(f"expected alias name after ->, got {alias.describe()}", alias.offset)
            names.append((what, alias))
        elif sep.is_punct("("):
            while True:
                what = lx.next()
                if what.kind != NAME:
                    raise self.error(f"expected name in Lark import, got {what.describe()}", what.offset)
                names.append((what, None))
                close = lx.next()
                if close.is_punct(")"):
                    break
                if not close.is_punct(","):
                    raise self.error(f"expected ',' or ')' in Lark import, got {close.describe()}", close.offset)
        else:
            raise self.error(f"expected name in Lark import, got {sep.describe()}", sep.offset)
        if lx.peek().kind not in (NL, EOF):
            raise self.error("unexpected content after Lark import", lx.peek().offset)
        for what, alias in names:
            pattern = COMMON_TERMINALS.get(str(what.value))
            if pattern is None:
                raise self.error(f'unknown common terminal "{what.value}"', what.offset)
            target = alias if alias is not None else what
            if not is_terminal_name(str(target.value)):
                raise self.error(f'imported terminal alias "{target.value}" must be uppercase', target.offset)
            self.define(str(target.value), target.offset)
            body = ERegex(what.offset, pattern, "", False)
            self.top.decls.append(Decl(T, str(target.value), target.offset, body=body))

    # -- expressions ----------------------------------------------------------------------

    def expansions(self, depth: int) -> Expr:
        """Alternatives up to a token that cannot continue them (left unread)."""
        if depth + 1 > MAX_EXPRESSION_DEPTH:
            raise self.error(
                f"Lark expression nesting exceeds the supported depth of {MAX_EXPRESSION_DEPTH}", self.lx.peek().offset
            )
        if depth + 1 > self.limits.max_nesting:
            raise LimitError(
                f"Lark expression nested more than {self.limits.max_nesting} levels deep",
                limit="max_nesting",
                value=self.limits.max_nesting,
            )
        lx = self.lx
        offset = lx.peek().offset
        alts = [self.expansion(depth)]
        while lx.peek().is_punct("|"):
            lx.next()
            alts.append(self.expansion(depth))
        return alts[0] if len(alts) == 1 else EAlt(offset, alts)

    def expansion(self, depth: int) -> Expr:
        lx = self.lx
        offset = lx.peek().offset
        items: list[Expr] = []
        while True:
            tok = lx.peek()
            if tok.kind in (NL, EOF) or tok.is_punct("|", ")", "]", "->"):
                break
            if tok.kind == DIRECTIVE and tok.value != "json":
                break
            items.append(self.item(depth))
        if lx.peek().is_punct("->"):  # an alias names the tree node only
            lx.next()
            alias = lx.next()
            if alias.kind != NAME:
                raise self.error(f"expected alias name after ->, got {alias.describe()}", alias.offset)
        if not items:
            return EEps(offset)
        return items[0] if len(items) == 1 else ESeq(offset, items)

    def item(self, depth: int) -> Expr:
        atom = self.atom(depth)
        lx = self.lx
        tok = lx.peek()
        if tok.is_punct("?"):
            lx.next()
            return ERepeat(atom.offset, atom, 0, 1)
        if tok.is_punct("*"):
            lx.next()
            return ERepeat(atom.offset, atom, 0, None)
        if tok.is_punct("+"):
            lx.next()
            return ERepeat(atom.offset, atom, 1, None)
        if tok.is_punct("~"):
            lx.next()
            lo = self.count("expected number after ~")
            hi = lo
            if lx.peek().is_punct(".."):
                lx.next()
                hi = self.count("expected upper bound after '..'")
            if hi < lo:
                raise self.error(f"repetition upper bound {hi} is smaller than lower bound {lo}", tok.offset)
            return ERepeat(atom.offset, atom, lo, hi)
        return atom

    def count(self, message: str) -> int:
        tok = self.lx.next()
        if tok.kind != INT:
            raise self.error(message, tok.offset)
        value = int(tok.value)  # type: ignore[call-overload]
        if value > self.limits.max_repeat:
            raise LimitError(
                f"repetition count {value} at line {self.lx.where(tok.offset)[0]}",
                limit="max_repeat",
                value=self.limits.max_repeat,
            )
        return value

    def atom(self, depth: int) -> Expr:
        lx = self.lx
        tok = lx.next()
        if tok.is_punct("(", "["):
            inner = self.expansions(depth + 1)
            close = lx.next()
            want, word = (")", "RParen") if tok.value == "(" else ("]", "RBracket")
            if not close.is_punct(want):
                raise self.error(f"expected {word}, got {close.describe()}", close.offset)
            return inner if tok.value == "(" else ERepeat(tok.offset, inner, 0, 1)
        if tok.kind == STRING:
            text = str(tok.value)
            if lx.peek().is_punct(".."):
                lx.next()
                end = lx.next()
                if end.kind != STRING:
                    raise self.error(
                        f"expected literal after .. in Lark literal range, got {end.describe()}", end.offset
                    )
                return self.literal_range(tok, end)
            if tok.flags:
                return ERegex(tok.offset, _escape_regex(text), "i", False)
            return ELit(tok.offset, text.encode("utf-8"))
        if tok.kind == REGEX:
            return ERegex(tok.offset, str(tok.value), tok.flags, False)
        if tok.kind == NAME:
            return ERef(tok.offset, str(tok.value))
        if tok.kind == TOKENSET:
            ranges, negated, wildcard = tok.value  # type: ignore[misc]
            if wildcard:
                return self.atom_ref(tok.offset, "<[*]>", _Atom((), True))
            key = ",".join(f"{lo}-{hi}" for lo, hi in ranges)
            return self.atom_ref(tok.offset, f"<[{'^' if negated else ''}{key}]>", self.id_atom(ranges, negated))
        if tok.kind == AT_TOKEN:
            return self.atom_ref(tok.offset, f"@token({tok.value})", _Atom((int(tok.value),)))  # type: ignore[call-overload]
        if tok.kind == SPECIAL:
            name = str(tok.value)
            if self.special_tokens == "vocabulary":
                return self.atom_ref(tok.offset, f"<|{name}|>", _Atom(name=f"<|{name}|>"))
            return self.extern_ref(tok.offset, name, "token")
        if tok.kind == AT_NAME:
            return self.extern_ref(tok.offset, str(tok.value), "grammar")
        if tok.kind == DIRECTIVE and tok.value == "json":
            raise self.error(
                "%json is not read by structgen's Lark reader; declare @name and bind it to "
                "Grammar.from_json_schema(...)",
                tok.offset,
            )
        if tok.is_punct("."):
            raise self.error("bare '.' is not a Lark atom; use /./ for a Unicode character", tok.offset)
        raise self.error(f"unexpected {tok.describe()} in a Lark expression", tok.offset)

    def literal_range(self, lo: LarkTok, hi: LarkTok) -> Expr:
        a, b = str(lo.value), str(hi.value)
        if len(a) != 1 or len(b) != 1:
            raise self.error("Lark literal ranges require single Unicode-scalar endpoints", hi.offset)
        if ord(b) < ord(a):
            raise self.error(f"invalid Lark literal range {a!r}..{b!r}", hi.offset)
        return ERegex(lo.offset, f"[\\x{{{ord(a):X}}}-\\x{{{ord(b):X}}}]", "", False)

    def id_atom(self, ranges: tuple[tuple[int, int], ...], negated: bool) -> _Atom:
        total = sum(hi - lo + 1 for lo, hi in ranges)
        if total > self.limits.max_repeat:
            raise LimitError(f"a token atom names {total} token ids", limit="max_repeat", value=self.limits.max_repeat)
        return _Atom(tuple(i for lo, hi in ranges for i in range(lo, hi + 1)), negated)

    def atom_ref(self, offset: int, text: str, atom: _Atom) -> Expr:
        name = f"{_ATOM_PREFIX}{text}"
        self.atoms.setdefault(name, atom)
        self.externs.setdefault(name, ("token", offset))
        return ERef(offset, name)

    def extern_ref(self, offset: int, name: str, kind: str) -> Expr:
        old = self.externs.get(name)
        if old is not None and old[0] != kind:
            raise self.error(f"{name!r} is used both as a special token and as an extern grammar", offset)
        self.externs.setdefault(name, (kind, offset))
        return ERef(offset, name)


def _escape_regex(text: str) -> str:
    """``text`` as a regex matching exactly it: every character other than a letter or digit is
    written as ``\\x{HEX}``."""
    return "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):X}}}" for c in text)


def _earliest(body: Expr) -> Expr:
    """``body - body Σ⁺``: the strings of ``body`` none of whose proper prefixes is in ``body``."""
    any_bytes = ERepeat(body.offset, ERegex(body.offset, ".", "s", True), 1, None)
    return EDiff(body.offset, body, [ESeq(body.offset, [body, any_bytes])])


def _substitute_atoms(grammar: Grammar, atoms: dict[str, _Atom], limits: GrammarLimits) -> Grammar:
    """The grammar with the made-up token externs replaced by the atoms they stand for."""

    def leaf(n: ir.Node) -> ir.Node:
        if isinstance(n, ir.Token) and n.name in atoms and not n.ids:
            a = atoms[n.name]
            if a.negated and not a.ids:
                # any token: "token 0 or any token but 0", so that every atom names an id (an
                # atom with no ids is read as an unbound name by the matcher)
                return ir.alt(ir.Token((0,)), ir.Token((0,), negated=True))
            return ir.Token(a.ids, a.name, a.negated)
        return n

    rules = {name: _transform(body, leaf) for name, body in grammar.rules.items()}
    externs = {k: v for k, v in grammar.externs.items() if k not in atoms}
    return Grammar(rules, grammar.start, externs=externs, limits=limits)


def _nullable_terminals(grammar: Grammar, names: list[str]) -> list[str]:
    """Those of ``names`` whose language holds the empty string (terminal rules: no cycles)."""
    done: dict[str, bool] = {}
    for root in names:
        stack = [root]
        while stack:
            name = stack[-1]
            if name in done:
                stack.pop()
                continue
            pending = [r for r in ir.refs(grammar.rules[name]) if r in grammar.rules and r not in done]
            if pending:
                stack.extend(pending)
                continue
            done[name] = node_nullable(grammar.rules[name], lambda r: done.get(r, False))
            stack.pop()
    return [n for n in names if done[n]]


def parse_lark(text: str, *, limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS, special_tokens: str = "extern") -> Grammar:
    """The grammar Lark ``text`` means, read as glrmask 0.5.0 reads it (see the module doc).

    ``special_tokens``: ``"extern"`` (glrmask's reading) makes ``<|name|>`` an ``extern token``
    slot named ``name``; ``"vocabulary"`` makes it the token whose text is ``<|name|>``, looked up
    in the vocabulary when the grammar is compiled (llguidance's reading).

    Raises :class:`~structgen.errors.GrammarError` with line and column for text glrmask refuses
    (and for ``%json``), :class:`~structgen.errors.LimitError` past ``limits``.
    """
    if special_tokens not in SPECIAL_TOKEN_MODES:
        raise ValueError(f"special_tokens must be one of {SPECIAL_TOKEN_MODES}, not {special_tokens!r}")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_source_bytes:
        raise LimitError(f"Lark source is {size} bytes", limit="max_source_bytes", value=limits.max_source_bytes)
    lexer = LarkLexer(text)
    reader = _Reader(lexer, limits, special_tokens)
    top = reader.read()
    grammar = lower(top, lexer, limits)  # type: ignore[arg-type]  # lower only calls lexer.error
    empty = _nullable_terminals(grammar, reader.ignores)
    if empty:
        offset = next(o for n, o in top.ignores if n == empty[0])
        raise lexer.error("an %ignore terminal must consume at least one byte", offset)
    return _substitute_atoms(grammar, reader.atoms, limits) if reader.atoms else grammar
