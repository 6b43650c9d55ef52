"""Write a :class:`~structgen.grammar.Grammar` as GLRM text that glrmask 0.5.0 reads unchanged.

GLRM lexes greedily: a terminal (``t`` rule, anonymous regex, ``a - b``, ``a & b``) ends only
where the input cannot continue it. Grammars from GBNF or JSON Schema are scannerless, so the
writer keeps every terminal it emits unextendable:

* literals are strings (``b"..."`` when the bytes are not UTF-8), character classes and ``.`` are
  one-character regexes (``/[a-z]/``, ``/./s``, ``b/[\\x80-\\xff]/``), and sequences, choices and
  repetition stay at ``nt`` level, where GLRM is an ordinary context-free grammar;
* a :class:`~structgen.grammar.ir.Lexeme` - greedy on purpose - becomes a ``t`` rule;
* a :class:`~structgen.grammar.ir.Difference` or :class:`~structgen.grammar.ir.Intersection`
  outside a lexeme is written as a GLRM ``-``/``&`` terminal only where no byte that can follow
  it could continue one of its strings (then greedy and exact matching agree); elsewhere the
  writer refuses with a :class:`~structgen.errors.GrammarError`;
* token atoms become ``extern token`` slots (``TOKEN_12``...); :func:`glrm_token_bindings`
  gives the ids to bind them to.

Rule names are made GLRM identifiers (``my-rule`` -> ``my_rule``, ``g::x`` -> ``g__x``), kept
unique, and keywords are written in backticks. A rule used both as a nonterminal and inside
terminals is written twice, as ``nt NAME`` and ``t NAME_t``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import GrammarError, LimitError
from . import ir
from .glrm_analysis import ALL_BYTES, Shapes, alphabet_bytes, extension_bytes, follow_sets
from .glrm_lex import KEYWORDS
from .grammar import Grammar

__all__ = ["glrm_token_bindings", "write_glrm"]

#: Nesting of parentheses the writer allows before it moves a subexpression into a helper rule
#: (glrmask refuses expressions nested more than 128 levels deep).
MAX_WRITTEN_DEPTH = 100
#: Most nullable items one written nt sequence may hold. glrmask 0.5.0 expands every production
#: into all 2^k ways of leaving out its k nullable items: at 20 it runs out of memory, past 24 it
#: refuses. Longer sequences (JSON objects: a nullable ``ws`` between every two tokens) are split,
#: their tails moved into helper nts.
MAX_NULLABLE_ITEMS = 8

_RESERVED = KEYWORDS | {"eps", "fa"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NOTHING_TEXT = "/[^\\x{0}-\\x{10FFFF}]/"  # an empty character class: matches nothing

# precedence of written expressions, loosest first
_ALT, _DIFF, _INTER, _SEQ, _POSTFIX, _ATOM = range(6)
_NT, _T = 0, 1


@dataclass
class _Written:
    text: str
    prec: int
    depth: int  # parenthesis nesting inside the text


@dataclass
class _Plan:
    """What will be written: names of every rule version, token slot and extern."""

    grammar: Grammar
    nt_name: dict[str, str] = field(default_factory=dict)
    t_name: dict[str, str] = field(default_factory=dict)
    emitting: set[str] = field(default_factory=set)  # rules whose t version is used as a lexeme
    whole_terminal: set[str] = field(default_factory=set)  # nt-level rules written as one `t`
    token_name: dict[ir.Token, str] = field(default_factory=dict)
    extern_name: dict[str, str] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)

    def fresh(self, wanted: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", wanted) or "_"
        if base[0].isdigit():
            base = "_" + base
        name, k = base, 2
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name


def _token_wanted_name(tok: ir.Token, externs: dict[str, str]) -> str:
    if tok.name is not None and (not tok.ids or externs.get(tok.name) == "token" or _IDENT.match(tok.name)):
        return tok.name
    body = "_".join(str(i) for i in tok.ids) or "UNBOUND"
    return ("NOT_TOKEN_" if tok.negated else "TOKEN_") + body


def _plan(grammar: Grammar) -> _Plan:
    rules = grammar.rules
    plan = _Plan(grammar)
    externs = dict(grammar.externs)
    for name in externs:  # extern names are chosen by the user: keep them first
        plan.extern_name[name] = plan.fresh(name)
    referenced: set[str] = set()
    for body in rules.values():
        referenced |= ir.refs(body)
    roots = [grammar.start] + [r for r in rules if r not in referenced and r != grammar.start]
    need_nt: set[str] = set()
    need_t: set[str] = set()
    seen: set[tuple[str, int]] = set()
    work = [(r, _NT) for r in reversed(roots)]
    tokens: dict[ir.Token, None] = {}
    plan.whole_terminal = _whole_terminal_rules(grammar)
    while work:
        name, ctx = work.pop()
        if (name, ctx) in seen or name not in rules:
            continue
        seen.add((name, ctx))
        (need_nt if ctx == _NT else need_t).add(name)
        walk_ctx = _T if name in plan.whole_terminal else ctx
        stack: list[tuple[ir.Node, int]] = [(rules[name], walk_ctx)]
        while stack:
            n, c = stack.pop()
            if isinstance(n, ir.Ref):
                work.append((n.name, c))
            elif isinstance(n, ir.Token):
                tokens.setdefault(n, None)
            elif isinstance(n, ir.Lexeme) and c == _NT:
                if isinstance(n.item, ir.Ref):
                    plan.emitting.add(n.item.name)
                stack.append((n.item, _T))
            elif isinstance(n, (ir.Difference, ir.Intersection)):
                stack.extend((k, _T) for k in n.children())
            else:
                stack.extend((k, c) for k in n.children())
    for name in rules:
        if name in need_nt:
            plan.nt_name[name] = plan.fresh(name)
        if name in need_t:
            plan.t_name[name] = plan.fresh(name + "_t" if name in need_nt else name)
    for tok in tokens:
        if tok.name is not None and not tok.ids and externs.get(tok.name) == "token":
            plan.token_name[tok] = plan.extern_name[tok.name]
        else:
            plan.token_name[tok] = plan.fresh(_token_wanted_name(tok, externs))
    return plan


def _open_set_operation(body: ir.Node) -> bool:
    """Whether ``body`` has a ``-``/``&`` outside any lexeme (it would need a helper terminal)."""
    stack = [body]
    while stack:
        n = stack.pop()
        if isinstance(n, (ir.Difference, ir.Intersection)):
            return True
        if not isinstance(n, ir.Lexeme):
            stack.extend(n.children())
    return False


def _whole_terminal_rules(grammar: Grammar) -> set[str]:
    """Rules with a set operation at nt level that can be written as one ``t`` rule instead.

    That needs a regular body (no recursion, token, lexeme or extern reachable) and a language
    that no byte able to follow the rule can continue, so that greedy and exact agree.
    """
    rules = grammar.rules
    candidates = [r for r, body in rules.items() if _open_set_operation(body)]
    if not candidates:
        return set()
    recursive = grammar.recursive_rules()
    follow, _occurrences = follow_sets(rules, grammar.start, lambda name: name not in rules)
    shapes = Shapes(rules)
    out = set()
    for name in candidates:
        if not _regular_closure(grammar, name, recursive):
            continue
        if not shapes.of(rules[name]).prefix_free:
            try:
                risky = extension_bytes(ir.Ref(name), rules)
            except LimitError:
                continue
            if risky & follow.get(name, ALL_BYTES) & ALL_BYTES:
                continue
        out.add(name)
    return out


def _regular_closure(grammar: Grammar, name: str, recursive: frozenset[str]) -> bool:
    seen = {name}
    stack = [name]
    while stack:
        r = stack.pop()
        if r in recursive or r not in grammar.rules:
            return False
        for n in ir.iter_nodes(grammar.rules[r]):
            if isinstance(n, (ir.Token, ir.Lexeme)):
                return False
            if isinstance(n, ir.Ref) and n.name not in seen:
                seen.add(n.name)
                stack.append(n.name)
    return True


def glrm_token_bindings(grammar: Grammar, vocab_size: int | None = None) -> dict[str, list[int]]:
    """Token ids to bind to the ``extern token`` slots :func:`write_glrm` declares.

    ``glrmask.Grammar.from_glrm(write_glrm(g))`` then ``.bind(NAME=glrmask.TokenSet(ids))`` for
    each entry. A negated token atom (any token but these) needs ``vocab_size``. Slots of
    unbound named tokens are left out: bind them yourself.
    """
    out: dict[str, list[int]] = {}
    for tok, name in _plan(grammar).token_name.items():
        if not tok.ids:
            continue
        if tok.negated:
            if vocab_size is None:
                raise GrammarError(f"token slot {name} is a negated token atom; pass vocab_size to list its ids")
            excluded = set(tok.ids)
            out[name] = [i for i in range(vocab_size) if i not in excluded]
        else:
            out[name] = list(tok.ids)
    return out


# ---------------------------------------------------------------------------------------------
# Atoms


def _written_name(name: str) -> str:
    return f"`{name}`" if name in _RESERVED else name


def _string(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return 'b"' + "".join(_byte_escape(b) for b in data) + '"'
    return '"' + "".join(_char_escape(c) for c in text) + '"'


def _char_escape(c: str) -> str:
    cp = ord(c)
    if c == '"':
        return '\\"'
    if c == "\\":
        return "\\\\"
    if 0x20 <= cp < 0x7F:
        return c
    if cp < 0x80:
        return f"\\x{cp:02x}"  # U+00NN is the byte NN below 0x80
    return f"\\u{{{cp:x}}}"


def _byte_escape(b: int) -> str:
    if b in (0x22, 0x5C) or not 0x20 <= b < 0x7F:
        return f"\\x{b:02x}"
    return chr(b)


def _class_member(cp: int, wide: bool) -> str:
    if chr(cp).isascii() and chr(cp).isalnum():
        return chr(cp)
    return f"\\x{{{cp:x}}}" if wide else f"\\x{cp:02x}"


def _class_body(ranges: ir.Ranges, wide: bool) -> str:
    parts = []
    for lo, hi in ranges:
        a = _class_member(lo, wide)
        parts.append(a if lo == hi else f"{a}-{_class_member(hi, wide)}")
    return "".join(parts)


_ALL_SCALARS = ir.subtract_ranges(((0, ir.MAX_CODEPOINT),), (ir.SURROGATES,))


def _char_class(n: ir.CharClass) -> str:
    cps = n.codepoints()
    if not cps:
        return _NOTHING_TEXT
    if cps == _ALL_SCALARS:
        return "/./s"
    if len(cps) == 1 and cps[0][0] == cps[0][1]:
        return _string(chr(cps[0][0]).encode("utf-8"))
    excluded = ir.subtract_ranges(ir.complement_ranges(cps, ir.MAX_CODEPOINT), (ir.SURROGATES,))
    if len(excluded) < len(cps):
        return f"/[^{_class_body(excluded, True)}]/"
    return f"/[{_class_body(cps, True)}]/"


def _byte_class(n: ir.ByteClass) -> str:
    bs = n.byte_ranges()
    if not bs:
        return _NOTHING_TEXT
    if len(bs) == 1 and bs[0][0] == bs[0][1]:
        return _string(bytes([bs[0][0]]))
    if bs == ((0, 255),):
        return "b/./s"
    excluded = ir.complement_ranges(bs, 0xFF)
    if len(excluded) < len(bs):
        return f"b/[^{_class_body(excluded, False)}]/"
    return f"b/[{_class_body(bs, False)}]/"


def _spelled_out_repeat(item: ir.Node, text: str) -> str:
    """A choice's alternative ``x*`` / ``x+`` as ``x{0,}`` / ``x{1,}``.

    glrmask 0.5.0 misreads ``*`` and ``+`` on an alternative of a parenthesised choice in a
    nonterminal: ``"x" ("b" | "c"*) "y"`` accepts ``xbcy``. The spelled-out counts are read right.
    """
    if isinstance(item, ir.Repeat) and item.max is None and text[-1:] in ("*", "+"):
        return text[:-1] + ("{0,}" if text[-1] == "*" else "{1,}")
    return text


# ---------------------------------------------------------------------------------------------
# Expressions


class _Writer:
    def __init__(self, grammar: Grammar) -> None:
        self.g = grammar
        self.plan = _plan(grammar)
        self.helpers: list[str] = []  # helper declarations, written after the rules
        self.lexeme_helper: dict[ir.Node, str] = {}
        self._follow: dict[ir.Node, int] | None = None
        self._shapes = Shapes(grammar.rules)

    # -- greedy safety of set operations at nt level ----------------------------------------

    def follow_of(self, node: ir.Node) -> int:
        if self._follow is None:
            rules = self.g.rules
            _follow, occurrences = follow_sets(rules, self.g.start, lambda name: name not in rules)
            merged: dict[ir.Node, int] = {}
            for name in rules:
                for n, after in occurrences(name):
                    merged[n] = merged.get(n, 0) | after
            self._follow = merged
        return self._follow.get(node, ALL_BYTES)

    def clash(self, node: ir.Node) -> int:
        """Bytes that may follow ``node`` and could also continue one of its strings (0: a greedy
        GLRM terminal for ``node`` means exactly ``node`` here)."""
        if self._shapes.of(node).prefix_free:
            return 0
        follow = self.follow_of(node) & ALL_BYTES
        if not alphabet_bytes(node, self.g.rules) & follow:
            return 0  # no byte that may follow can occur in the node at all
        try:
            risky = extension_bytes(node, self.g.rules)
        except LimitError:
            risky = ALL_BYTES
        return risky & follow

    def open_set_operations(self) -> list[tuple[str, ir.Node]]:
        """(rule, node) for each set operation the nt versions of rules hold outside lexemes."""
        out = []
        for name in self.plan.nt_name:
            if name in self.plan.whole_terminal:
                continue
            stack = [self.g.rules[name]]
            while stack:
                n = stack.pop()
                if isinstance(n, (ir.Difference, ir.Intersection)):
                    out.append((name, n))
                elif not isinstance(n, ir.Lexeme):
                    stack.extend(n.children())
        return out

    def check_exact(self, node: ir.Node, rule: str) -> None:
        """Refuse a set operation whose greedy GLRM reading could differ from its exact meaning."""
        clash = self.clash(node)
        if clash:
            sample = ", ".join(f"0x{b:02x}" for b in range(256) if clash >> b & 1)
            raise GrammarError(
                f"{ir.format_node(node)} cannot be written as GLRM: a GLRM '-'/'&' is a greedy terminal, "
                f"and here a byte that may follow it ({sample[:60]}) could also continue it, so glrmask "
                f"would refuse inputs this grammar accepts",
                rule=rule,
            )

    # -- formatting ---------------------------------------------------------------------------

    def helper(self, text: str, ctx: int, hint: str) -> str:
        name = self.plan.fresh(hint)
        kind = "nt" if ctx == _NT else "internal t"
        self.helpers.append(f"{kind} {_written_name(name)} = {text};")
        return _written_name(name)

    def lexeme_name(self, node: ir.Node, rule: str) -> str:
        """The ``t`` rule written for a greedy node used at nt level."""
        if isinstance(node, ir.Lexeme) and isinstance(node.item, ir.Ref) and node.item.name in self.plan.t_name:
            return _written_name(self.plan.t_name[node.item.name])
        name = self.lexeme_helper.get(node)
        if name is None:
            body = node.item if isinstance(node, ir.Lexeme) else node
            text = self.expression(body, _T, rule)
            name = self.plan.fresh("LEXEME")
            self.helpers.append(f"t {_written_name(name)} = {text};")
            name = _written_name(name)
            self.lexeme_helper[node] = name
        return name

    def wrap(self, w: _Written, need: int, ctx: int) -> _Written:
        if w.prec >= need:
            return w
        if w.depth + 1 > MAX_WRITTEN_DEPTH:
            return _Written(self.helper(w.text, ctx, "HELPER"), _ATOM, 0)
        return _Written(f"({w.text})", _ATOM, w.depth + 1)

    def split_nullable_items(self, items: tuple[ir.Node, ...], parts: list[_Written]) -> list[_Written]:
        """``parts`` with at most :data:`MAX_NULLABLE_ITEMS` nullable items, the tail after that
        many moved (repeatedly, from the right) into helper nts; the language is unchanged."""
        flags = [self._shapes.of(item).nullable for item in items]
        if sum(flags) <= MAX_NULLABLE_ITEMS:
            return parts
        chunk: list[_Written] = []  # reversed
        count = 0
        for part, nullable in zip(reversed(parts), reversed(flags)):
            if nullable and count == MAX_NULLABLE_ITEMS:
                text = " ".join(p.text for p in reversed(chunk))
                chunk, count = [_Written(self.helper(text, _NT, "SEQ"), _ATOM, 0)], 1  # the helper may be nullable
            chunk.append(part)
            count += nullable
        return chunk[::-1]

    def expression(self, root: ir.Node, root_ctx: int, rule: str) -> str:
        """GLRM text for ``root`` in nt or terminal context (iterative post-order)."""
        done: dict[tuple[int, int], _Written] = {}
        stack: list[tuple[ir.Node, int, bool]] = [(root, root_ctx, False)]
        while stack:
            n, ctx, expanded = stack.pop()
            key = (id(n), ctx)
            if key in done and not expanded:
                continue
            if ctx == _NT and isinstance(n, (ir.Lexeme, ir.Difference, ir.Intersection)):
                if not isinstance(n, ir.Lexeme):
                    self.check_exact(n, rule)
                done[key] = _Written(self.lexeme_name(n, rule), _ATOM, 0)
                continue
            kids = n.children()
            if kids and not expanded:
                stack.append((n, ctx, True))
                stack.extend((k, ctx, False) for k in kids)
                continue
            done[key] = self.combine(n, ctx, [done[(id(k), ctx)] for k in kids], rule)
        return done[(id(root), root_ctx)].text

    def combine(self, n: ir.Node, ctx: int, kids: list[_Written], rule: str) -> _Written:
        plan = self.plan
        if isinstance(n, ir.Literal):
            return _Written(_string(n.data) if n.data else "eps", _ATOM, 0)
        if isinstance(n, ir.CharClass):
            return _Written(_char_class(n), _ATOM, 0)
        if isinstance(n, ir.ByteClass):
            return _Written(_byte_class(n), _ATOM, 0)
        if isinstance(n, ir.Ref):
            if n.name in plan.extern_name:
                return _Written(_written_name(plan.extern_name[n.name]), _ATOM, 0)
            names = plan.nt_name if ctx == _NT else plan.t_name
            return _Written(_written_name(names[n.name]), _ATOM, 0)
        if isinstance(n, ir.Token):
            return _Written(_written_name(plan.token_name[n]), _ATOM, 0)
        if isinstance(n, ir.Seq):
            if not kids:
                return _Written("eps", _ATOM, 0)
            parts = [self.wrap(k, _POSTFIX, ctx) for k in kids]
            if ctx == _NT:
                parts = self.split_nullable_items(n.items, parts)
            return _Written(" ".join(p.text for p in parts), _SEQ, max(p.depth for p in parts))
        if isinstance(n, ir.Alt):
            if not kids:
                return _Written(_NOTHING_TEXT, _ATOM, 0)
            parts = [self.wrap(k, _DIFF, ctx) for k in kids]
            texts = [_spelled_out_repeat(item, p.text) for item, p in zip(n.items, parts)]
            return _Written(" | ".join(texts), _ALT, max(p.depth for p in parts))
        if isinstance(n, ir.Repeat):
            if n.max == 0:
                return _Written("eps", _ATOM, 0)
            item = self.wrap(kids[0], _ATOM, ctx)
            lo, hi = n.min, n.max
            suffix = {(0, 1): "?", (0, None): "*", (1, None): "+"}.get((lo, hi))
            if suffix is None:
                suffix = f"{{{lo}}}" if lo == hi else f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
            return _Written(item.text + suffix, _POSTFIX, item.depth)
        if isinstance(n, (ir.Difference, ir.Intersection)):  # terminal context only
            left = self.wrap(kids[0], _POSTFIX, ctx)
            right = self.wrap(kids[1], _ATOM if isinstance(n, ir.Difference) else _POSTFIX, ctx)
            op = " - " if isinstance(n, ir.Difference) else " & "
            return _Written(left.text + op + right.text, _DIFF if op == " - " else _INTER, max(left.depth, right.depth))
        if isinstance(n, ir.Lexeme):
            raise GrammarError("a greedy lexeme nested inside a terminal cannot be written as GLRM", rule=rule)
        raise GrammarError(f"cannot write {type(n).__name__} as GLRM", rule=rule)  # pragma: no cover

    # -- the file -----------------------------------------------------------------------------

    def write(self) -> str:
        g, plan = self.g, self.plan
        start = plan.extern_name.get(g.start) or plan.nt_name[g.start]
        lines = ["glrm 1;", f"start {_written_name(start)};"]
        for name, kind in g.externs.items():
            lines.append(f"extern {kind} {_written_name(plan.extern_name[name])};")
        declared = set(plan.extern_name.values())
        for name in plan.token_name.values():
            if name not in declared:
                declared.add(name)
                lines.append(f"extern token {_written_name(name)};")
        for name, body in g.rules.items():
            if name in plan.nt_name:
                lines.append(self.nonterminal(name, body))
            if name in plan.t_name:
                kind = "t" if name in plan.emitting else "internal t"
                lines.append(f"{kind} {_written_name(plan.t_name[name])} = {self.expression(body, _T, name)};")
            lines.extend(self.helpers)  # helpers right after the rule that needs them
            self.helpers.clear()
        return "\n".join(lines) + "\n"

    def nonterminal(self, name: str, body: ir.Node) -> str:
        """The nt version of a rule; a rule that is one greedy node as a whole is written as a
        ``t`` rule (its references then read back as that same lexeme)."""
        written = _written_name(self.plan.nt_name[name])
        if name in self.plan.whole_terminal:
            return f"t {written} = {self.expression(body, _T, name)};"
        if name not in self.plan.t_name:
            if isinstance(body, ir.Lexeme) and not isinstance(body.item, ir.Ref):
                return f"t {written} = {self.expression(body.item, _T, name)};"
            if isinstance(body, (ir.Difference, ir.Intersection)):
                self.check_exact(body, name)
                return f"t {written} = {self.expression(body, _T, name)};"
        return f"nt {written} = {self.expression(body, _NT, name)};"


def write_glrm(grammar: Grammar) -> str:
    """GLRM text (``glrm 1``) that glrmask 0.5.0 reads unchanged, meaning ``grammar``'s language.

    A set operation outside a lexeme that GLRM's greedy ``-``/``&`` would not express exactly is
    first turned into plain rules (:func:`~structgen.grammar.lowering.lower_set_operations`).
    Raises :class:`~structgen.errors.GrammarError` where that is not possible (a set operation in a
    rule used both inside terminals and at nt level) and
    :class:`~structgen.errors.LimitError` where the plain rules would be too many.
    """
    writer = _Writer(grammar)
    unsafe = {node for _rule, node in writer.open_set_operations() if writer.clash(node)}
    if unsafe:
        writer = _Writer(_lower_unsafe(grammar, writer, unsafe))
    return writer.write()


def _lower_unsafe(grammar: Grammar, writer: _Writer, unsafe: set[ir.Node]) -> Grammar:
    """``grammar`` with the set operations GLRM cannot express lowered to plain rules.

    The ones GLRM can express (exact as greedy terminals) are marked as lexemes first, so that
    lowering keeps them and they are still written as ``-``/``&``.
    """
    from .lowering import lower_set_operations

    plan = writer.plan
    rules: dict[str, ir.Node] = {}
    for name, body in grammar.rules.items():
        if name in plan.t_name:
            rules[name] = body  # used inside terminals: a lexeme there would be nested
        elif name in plan.whole_terminal:
            rules[name] = ir.Lexeme(body)
        else:
            rules[name] = _mark_exact_set_operations(body, unsafe)
    marked = Grammar(rules, grammar.start, externs=grammar.externs)
    return lower_set_operations(marked)


def _mark_exact_set_operations(root: ir.Node, unsafe: set[ir.Node]) -> ir.Node:
    """``root`` with each set operation outside lexemes, except the ``unsafe`` ones, made a
    ``Lexeme`` (which it equals where it stands)."""
    from .lowering import replace_set_operations

    return replace_set_operations(root, lambda n: n if n in unsafe else ir.Lexeme(n))
