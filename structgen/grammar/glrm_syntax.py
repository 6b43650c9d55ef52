"""The syntax of GLRM source: declarations and expressions as a small tree, before any meaning.

:class:`GlrmParser` reads the token stream of :mod:`.glrm_lex` into :class:`Scope` objects (the
file and its ``grammar NAME { ... }`` blocks) holding :class:`Decl` entries whose bodies are
expression trees (:class:`ELit`, :class:`ERef`, :class:`ESeq`...). It reports syntax errors at the
places and, where practical, with the words glrmask 0.5.0 uses. Names are resolved, contexts
checked and the grammar form built later, in :mod:`.glrm_lower`.

Expressions are parsed without recursion (an explicit stack of open groups), so nesting is bounded
only by the depth limit, which mirrors glrmask's (128 levels of expressions, 64 of grammars).
Chains of ``-`` and ``&`` are kept flat.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import GrammarError, LimitError
from ..limits import GrammarLimits
from .glrm_lex import EOF, IDENT, INT, KEYWORDS, REGEX, STRING, Lexer, Tok

#: glrmask's bounds: expression nesting (counting the body itself) and grammar-block nesting.
MAX_EXPRESSION_DEPTH = 128
MAX_SCOPE_DEPTH = 64

_LEGACY = "legacy GLRM syntax is not supported by Grammar; use '=' declarations and explicit typed externs"
_EMPTY_BODY = "GLRM v1 declaration bodies cannot be empty; use 'eps' explicitly"
_EMPTY_ALT = "GLRM v1 expressions cannot contain empty alternatives; use 'eps' explicitly"
_EMPTY_GROUP = "GLRM v1 expressions cannot contain empty alternatives or groups; use 'eps' explicitly"
_NO_AT = "GLRM has no @token(id) syntax; declare 'extern token NAME;' and bind it"


# ---------------------------------------------------------------------------------------------
# Expression tree


@dataclass
class Expr:
    offset: int


@dataclass
class ELit(Expr):
    data: bytes


@dataclass
class ERegex(Expr):
    pattern: str
    flags: str
    raw_bytes: bool


@dataclass
class ERef(Expr):
    name: str


@dataclass
class EEps(Expr):
    pass


@dataclass
class ESeq(Expr):
    items: list[Expr]


@dataclass
class EAlt(Expr):
    items: list[Expr]


@dataclass
class ERepeat(Expr):
    item: Expr
    lo: int
    hi: int | None


@dataclass
class EDiff(Expr):
    """``left - r1 - r2 ...``: ``left`` minus every right operand."""

    left: Expr
    rights: list[Expr]


@dataclass
class EInter(Expr):
    items: list[Expr]


@dataclass
class ESep(Expr):
    """``sep ~ (items)`` (``at_least_one``: ``~+``); each item is ``(expr, lo, hi)``."""

    sep: Expr
    items: list[tuple[Expr, int, int | None]]
    at_least_one: bool


@dataclass
class EFa(Expr):
    """An ``fa { ... }`` body: states are names (identifiers, or integers as text)."""

    start: str
    accepts: list[str]
    edges: list[tuple[str, str, Expr]]


# ---------------------------------------------------------------------------------------------
# Declarations and scopes

NT, T, INTERNAL, EXTERN_TOKEN, EXTERN_GRAMMAR, GRAMMAR = (
    "nt",
    "t",
    "internal t",
    "extern token",
    "extern grammar",
    "grammar",
)


@dataclass
class Decl:
    kind: str
    name: str
    offset: int
    body: Expr | None = None  # nt / t / internal t
    scope: Scope | None = None  # grammar


@dataclass
class LexerGroup:
    """One ``lexer group`` of ``pragma glrmask``: items are ``(kind, value, offset)`` with kind
    ``"name"``, ``"literal"``, ``"literals"`` or ``"rest"``."""

    name: str
    items: list[tuple[str, object, int]]
    offset: int


@dataclass
class Scope:
    """The file (``path == ()``) or one ``grammar NAME { ... }`` block."""

    path: tuple[str, ...]
    offset: int
    decls: list[Decl] = field(default_factory=list)
    starts: list[tuple[str, int]] = field(default_factory=list)
    ignores: list[tuple[str, int]] = field(default_factory=list)
    lexer_groups: list[LexerGroup] = field(default_factory=list)
    end_offset: int = 0

    @property
    def display(self) -> str:
        """The scope as glrmask names it in messages: ``grammar``, ``grammar::a::b``."""
        return "::".join(("grammar",) + self.path)


# ---------------------------------------------------------------------------------------------
# Parser

_TOP, _GROUP, _SEP = 0, 1, 2


class _Frame:
    """An open expression level: the body itself, a parenthesised group, or a ``~ (...)`` list."""

    __slots__ = ("alts", "at_least_one", "diff", "inter", "items", "kind", "last_op", "offset", "sep", "seq")

    def __init__(self, kind: int, offset: int) -> None:
        self.kind = kind
        self.offset = offset
        self.alts: list[Expr] = []
        self.diff: list[Expr] = []
        self.inter: list[Expr] = []
        self.seq: list[Expr] = []
        self.last_op: str | None = None
        self.sep: Expr | None = None
        self.at_least_one = False
        self.items: list[tuple[Expr, int, int | None]] = []


class GlrmParser:
    """Parses GLRM text into the top :class:`Scope`."""

    def __init__(self, text: str, limits: GrammarLimits) -> None:
        self.lx = Lexer(text)
        self.limits = limits
        self.has_header = False

    # -- helpers --------------------------------------------------------------------------

    def error(self, message: str, offset: int) -> GrammarError:
        return self.lx.error(message, offset)

    def expect_punct(self, text: str, name: str) -> Tok:
        tok = self.lx.next()
        if not tok.is_punct(text):
            raise self.error(f"expected {name}, got {tok.describe()}", tok.offset)
        return tok

    def expect_name(self) -> Tok:
        tok = self.lx.next()
        if tok.kind != IDENT:
            raise self.error(f"expected identifier, got {tok.describe()}", tok.offset)
        return tok

    def optional_semicolon(self) -> None:
        if self.lx.peek().is_punct(";"):
            self.lx.next()

    # -- file and statements --------------------------------------------------------------

    def parse(self) -> Scope:
        lx = self.lx
        top = Scope((), 0)
        self._header()
        stack = [top]
        while True:
            scope = stack[-1]
            tok = lx.peek()
            if tok.kind == EOF:
                if len(stack) > 1:
                    raise self.error(f"unterminated subgrammar '{scope.path[-1]}'", tok.offset)
                top.end_offset = tok.offset
                return top
            if tok.is_punct("}"):
                lx.next()
                if len(stack) == 1:
                    raise self.error("unexpected '}' at top level", tok.offset)
                scope.end_offset = tok.offset
                if not scope.starts:
                    raise self.error(f"subgrammar '{scope.path[-1]}' has no 'start' declaration", tok.offset)
                stack.pop()
                self.optional_semicolon()
                continue
            child = self._statement(scope, tok)
            if child is not None:
                if len(stack) + 1 > MAX_SCOPE_DEPTH:
                    raise self.error(
                        f"source component nesting exceeds the supported depth of {MAX_SCOPE_DEPTH}", child.offset
                    )
                stack.append(child)

    def _header(self) -> None:
        lx = self.lx
        tok = lx.peek()
        if not tok.is_word("glrm"):
            return
        lx.next()
        version = lx.peek()
        if version.kind == INT:
            lx.next()
            if version.value != 1:
                raise self.error(
                    f"unsupported or malformed GLRM version header: glrm {version.value}; only glrm 1; is supported",
                    tok.offset,
                )
        elif version.kind == STRING or (version.kind == IDENT and not version.is_word(*KEYWORDS)):
            lx.next()  # glrmask accepts and ignores one such token after `glrm`
        self.has_header = True
        self.optional_semicolon()

    def _statement(self, scope: Scope, tok: Tok) -> Scope | None:
        """One statement of ``scope``; returns a newly opened child scope, if any."""
        lx = self.lx
        if tok.is_word("start"):
            lx.next()
            name = self.expect_name()
            if scope.starts:
                who = "grammar" if not scope.path else f"subgrammar '{scope.path[-1]}'"
                raise self.error(f"{who} has more than one 'start' declaration", tok.offset)
            scope.starts.append((str(name.value), name.offset))
            self.optional_semicolon()
        elif tok.is_word("ignore"):
            lx.next()
            name = self.expect_name()
            scope.ignores.append((str(name.value), name.offset))
            self.optional_semicolon()
        elif tok.is_word("internal"):
            lx.next()
            kw = lx.next()
            if not kw.is_word("t"):
                raise self.error(f"expected 't' after 'internal', got {kw.describe()}", kw.offset)
            self._rule(scope, INTERNAL)
        elif tok.is_word("t", "nt"):
            lx.next()
            self._rule(scope, T if tok.value == "t" else NT)
        elif tok.is_word("extern"):
            lx.next()
            if scope.path:
                raise self.error("extern declarations are only allowed at the top level", tok.offset)
            kind = lx.next()
            if not kind.is_word("token", "grammar"):
                raise self.error(
                    "external declarations require 'extern token NAME' or 'extern grammar NAME'", kind.offset
                )
            name = self.expect_name()
            kind_name = EXTERN_TOKEN if kind.value == "token" else EXTERN_GRAMMAR
            scope.decls.append(Decl(kind_name, str(name.value), name.offset))
            self.optional_semicolon()
        elif tok.is_word("grammar"):
            lx.next()
            name = self.expect_name()
            self.expect_punct("{", "LBrace")
            child = Scope(scope.path + (str(name.value),), tok.offset)
            scope.decls.append(Decl(GRAMMAR, str(name.value), name.offset, scope=child))
            return child
        elif tok.is_word("pragma"):
            lx.next()
            name = self.expect_name()
            brace = lx.next()
            if not brace.is_punct("{"):
                raise self.error(f"expected a braced pragma body, got {brace.describe()}", brace.offset)
            if name.value == "glrmask":
                self._glrmask_pragma(scope)
            else:
                lx.skip_braced_body(brace.offset)
            self.optional_semicolon()
        elif tok.is_punct("@"):
            raise self.error(_NO_AT, tok.offset)
        elif tok.kind == IDENT:
            lx.next()
            after = lx.peek()
            if after.is_punct("::="):
                raise self._legacy(after)
            if tok.is_word("g") and after.kind == IDENT:
                raise self.error("inline components use 'grammar NAME { ... }'", tok.offset)
            raise self.error(f"unexpected keyword '{tok.value}' in {scope.display}", tok.offset)
        else:
            raise self.error(f"unexpected token {tok.describe()} in {scope.display}", tok.offset)
        return None

    def _legacy(self, tok: Tok) -> GrammarError:
        if not self.has_header:
            return GrammarError(_LEGACY, line=1, column=1)
        return self.error("GLRM v1 declarations require '='; '::=' is legacy syntax", tok.offset)

    def _rule(self, scope: Scope, kind: str) -> None:
        lx = self.lx
        name = self.expect_name()
        eq = lx.next()
        if eq.is_punct("::="):
            raise self._legacy(eq)
        if not eq.is_punct("="):
            raise self.error("GLRM v1 declarations require '='; '::=' is legacy syntax", eq.offset)
        first = lx.peek()
        body: Expr
        if first.is_word("fa"):
            lx.next()
            body = self._fa(first.offset)
        else:
            body = self.expression()
        scope.decls.append(Decl(kind, str(name.value), name.offset, body=body))
        self.optional_semicolon()

    def _glrmask_pragma(self, scope: Scope) -> None:
        lx = self.lx
        while True:
            tok = lx.next()
            if tok.is_punct("}"):
                return
            if not tok.is_word("lexer") or not lx.peek().is_word("group"):
                raise self.error(f"unexpected token {tok.describe()} in pragma glrmask", tok.offset)
            lx.next()
            name = self.expect_name()
            self.expect_punct("=", "Equals")
            items: list[tuple[str, object, int]] = []
            while True:
                item = lx.next()
                if item.kind == IDENT:
                    items.append(("name", item.value, item.offset))
                elif item.kind == STRING:
                    items.append(("literal", item.value, item.offset))
                elif item.is_punct("*"):
                    items.append(("rest", None, item.offset))
                elif item.is_punct("@"):
                    word = lx.next()
                    if not word.is_word("literals"):
                        raise self.error(f"expected 'literals' after '@', got {word.describe()}", word.offset)
                    items.append(("literals", None, item.offset))
                else:
                    raise self.error(f"unexpected token {item.describe()} in pragma glrmask", item.offset)
                if not lx.peek().is_punct(","):
                    break
                lx.next()
            scope.lexer_groups.append(LexerGroup(str(name.value), items, name.offset))
            self.optional_semicolon()

    # -- fa bodies ------------------------------------------------------------------------

    def _state(self) -> str:
        tok = self.lx.next()
        if tok.kind == INT:
            return str(tok.value)
        if tok.kind == IDENT:
            return str(tok.value)
        raise self.error(f"expected a state name, got {tok.describe()}", tok.offset)

    def _fa(self, offset: int) -> EFa:
        lx = self.lx
        self.expect_punct("{", "LBrace")
        start: str | None = None
        accepts: list[str] = []
        edges: list[tuple[str, str, Expr]] = []
        while True:
            tok = lx.next()
            if tok.is_punct("}"):
                break
            if tok.is_word("start"):
                state = self._state()
                if start is not None:
                    raise self.error("FA has more than one start declaration", tok.offset)
                start = state
            elif tok.is_word("accept"):
                accepts.append(self._state())
                while lx.peek().is_punct(","):
                    lx.next()
                    accepts.append(self._state())
            elif tok.is_word("edge"):
                src = self._state()
                self.expect_punct("->", "Arrow")
                dst = self._state()
                self.expect_punct(":", "Colon")
                edges.append((src, dst, self.expression()))
            else:
                raise self.error("FA transitions require 'edge FROM -> TO: expression'", tok.offset)
            self.optional_semicolon()
        if start is None:
            raise self.error("FA definition must have exactly one start state", tok.offset)
        if not accepts:
            raise self.error("FA definition has no accept state", tok.offset)
        return EFa(offset, start, accepts, edges)

    # -- expressions ----------------------------------------------------------------------

    @staticmethod
    def _starts_primary(tok: Tok) -> bool:
        if tok.kind == IDENT:
            return tok.escaped or tok.value not in KEYWORDS
        return tok.kind in (STRING, REGEX) or tok.is_punct("(")

    def _atom(self) -> Expr:
        tok = self.lx.next()
        if tok.kind == IDENT:
            if tok.is_word("eps"):
                return EEps(tok.offset)
            return ERef(tok.offset, str(tok.value))
        if tok.kind == STRING:
            return ELit(tok.offset, tok.value)  # type: ignore[arg-type]
        return ERegex(tok.offset, str(tok.value), tok.flags, tok.raw_bytes)

    def _push(self, stack: list[_Frame], frame: _Frame) -> None:
        depth = len(stack) + 1
        if depth > MAX_EXPRESSION_DEPTH:
            raise self.error(
                f"GLRM expression nesting exceeds the supported depth of {MAX_EXPRESSION_DEPTH}", frame.offset
            )
        if depth > self.limits.max_nesting:
            raise LimitError(
                f"GLRM expression nested more than {self.limits.max_nesting} levels deep",
                limit="max_nesting",
                value=self.limits.max_nesting,
            )
        stack.append(frame)

    def _quantifier(self) -> tuple[int, int | None] | None:
        lx = self.lx
        tok = lx.peek()
        if tok.is_punct("?"):
            lx.next()
            return 0, 1
        if tok.is_punct("*"):
            lx.next()
            return 0, None
        if tok.is_punct("+"):
            lx.next()
            return 1, None
        if not tok.is_punct("{"):
            return None
        lx.next()
        lo_tok = lx.next()
        if lo_tok.kind != INT:
            raise self.error(f"expected integer, got {lo_tok.describe()}", lo_tok.offset)
        lo: int = lo_tok.value  # type: ignore[assignment]
        hi: int | None = lo
        if lx.peek().is_punct(","):
            lx.next()
            if lx.peek().kind == INT:
                hi = lx.next().value  # type: ignore[assignment]
            else:
                hi = None
        close = lx.next()
        if not close.is_punct("}"):
            raise self.error(f"expected RBrace, got {close.describe()}", close.offset)
        if hi is not None and hi < lo:
            raise self.error(f"repetition upper bound {hi} is smaller than lower bound {lo}", tok.offset)
        biggest = max(lo, hi or 0)
        if biggest > self.limits.max_repeat:
            raise LimitError(
                f"repetition count {biggest} at line {self.lx.where(tok.offset)[0]}",
                limit="max_repeat",
                value=self.limits.max_repeat,
            )
        return lo, hi

    def expression(self) -> Expr:
        """One expression, up to the first token that cannot continue it (left unread)."""
        lx = self.lx
        stack = [_Frame(_TOP, lx.peek().offset)]
        while True:
            f = stack[-1]
            tok = lx.peek()
            if tok.is_punct("@"):
                raise self.error(_NO_AT, tok.offset)
            if f.kind == _SEP:
                if tok.is_punct(")"):
                    lx.next()
                    if not f.items:
                        raise self.error("unexpected token RParen in NT expression", tok.offset)
                    stack.pop()
                    assert f.sep is not None
                    self._deliver(stack, ESep(f.offset, f.sep, f.items, f.at_least_one), sep_result=True)
                elif tok.is_punct("("):
                    lx.next()
                    self._push(stack, _Frame(_GROUP, tok.offset))
                elif self._starts_primary(tok):
                    self._deliver(stack, self._atom())
                else:
                    raise self.error(f"expected RParen, got {tok.describe()}", tok.offset)
                continue
            if tok.is_punct("("):
                lx.next()
                self._push(stack, _Frame(_GROUP, tok.offset))
            elif self._starts_primary(tok):
                self._deliver(stack, self._atom())
            elif tok.is_punct("."):
                raise self.error("bare '.' is not a native GLRM atom; use /./s or b/./s", tok.offset)
            elif tok.is_punct("["):
                raise self.error(
                    "bare character classes are not native GLRM atoms; use /[...]/ or b/[...]/", tok.offset
                )
            elif tok.is_punct("|", "-", "&"):
                lx.next()
                self._operator(f, tok)
            elif tok.is_punct(")") and f.kind == _GROUP:
                lx.next()
                expr = self._finish(f, tok)
                stack.pop()
                self._deliver(stack, expr)
            elif f.kind == _GROUP:
                raise self.error(f"expected RParen, got {tok.describe()}", tok.offset)
            else:
                return self._finish(f, tok)

    def _deliver(self, stack: list[_Frame], expr: Expr, sep_result: bool = False) -> None:
        """Hand a finished primary (or separated sequence) to the innermost open level."""
        lx = self.lx
        f = stack[-1]
        if f.kind == _SEP:
            q = self._quantifier()
            if q is not None and self._quantifier_follows():
                raise self.error(
                    "only one postfix quantifier may bind to a separated-sequence item; use extra parentheses, "
                    "e.g. `sep ~ ( (expr+)? )`, when the outer quantifier should bind to the separator",
                    lx.peek().offset,
                )
            lo, hi = q if q is not None else (1, 1)
            f.items.append((expr, lo, hi))
            return
        if sep_result:
            if self._quantifier_follows():
                raise self.error(
                    "a quantifier can't apply directly to a separated sequence; wrap it in a named rule",
                    lx.peek().offset,
                )
            self._append(f, expr)
            return
        nxt = lx.peek()
        if nxt.is_punct("~", "~+"):
            lx.next()
            self.expect_punct("(", "LParen")
            frame = _Frame(_SEP, expr.offset)
            frame.sep = expr
            frame.at_least_one = nxt.value == "~+"
            self._push(stack, frame)
            return
        q = self._quantifier()
        if q is not None:
            expr = ERepeat(expr.offset, expr, q[0], q[1])
        self._append(f, expr)

    def _quantifier_follows(self) -> bool:
        return self.lx.peek().is_punct("?", "*", "+", "{")

    def _append(self, f: _Frame, expr: Expr) -> None:
        if f.diff and not f.inter and len(f.seq) == 1:
            raise self.error("invalid syntax: RHS sequence subtraction must be parenthesized", expr.offset)
        f.seq.append(expr)

    def _close_seq(self, f: _Frame, tok: Tok) -> Expr:
        if not f.seq:
            if f.last_op is None:
                msg = _EMPTY_BODY if f.kind == _TOP else _EMPTY_GROUP
            elif f.last_op == "|":
                msg = _EMPTY_ALT
            elif f.last_op == "-":
                msg = f"unexpected token {tok.describe()} in NT expression"
            else:
                msg = "expected at least one expression item"
            raise self.error(msg, tok.offset)
        seq = f.seq[0] if len(f.seq) == 1 else ESeq(f.seq[0].offset, f.seq)
        f.seq = []
        return seq

    def _operator(self, f: _Frame, tok: Tok) -> None:
        f.inter.append(self._close_seq(f, tok))
        op = str(tok.value)
        if op != "&":
            f.diff.append(_combine(f.inter, EInter))
            f.inter = []
        if op == "|":
            f.alts.append(_diff(f.diff))
            f.diff = []
        f.last_op = op

    def _finish(self, f: _Frame, tok: Tok) -> Expr:
        f.inter.append(self._close_seq(f, tok))
        f.diff.append(_combine(f.inter, EInter))
        f.alts.append(_diff(f.diff))
        return _combine(f.alts, EAlt)


def _combine(items: list[Expr], cls: type) -> Expr:
    return items[0] if len(items) == 1 else cls(items[0].offset, list(items))


def _diff(items: list[Expr]) -> Expr:
    return items[0] if len(items) == 1 else EDiff(items[0].offset, items[0], items[1:])
