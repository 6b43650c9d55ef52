"""Write a :class:`Grammar` as GBNF text that llama.cpp accepts unchanged, with the same language.

What the writer takes care of, so that llama.cpp builds the text:

* rule names are cut to llama.cpp's charset (``[a-zA-Z0-9-]``) and made unique; the start rule
  is written as ``root``;
* repetition counts above llama.cpp's ``MAX_REPETITION_THRESHOLD`` (2000) become helper rules
  (``x{5000}`` is ``h{2} x{1000}`` with ``h ::= x{2000}``; "at most" counts likewise), and an
  operand whose generated rules times its count would exceed the threshold moves to a helper
  rule of its own;
* llama.cpp refuses ``x*`` when every element of ``x`` refers to a rule with an empty
  alternative (it sees left recursion there); such an operand is wrapped in parentheses, which
  llama.cpp does not see as nullable.

What it refuses (:class:`GrammarError` naming the rule): greedy lexemes, differences and
intersections (GLRM only), literals that are not valid UTF-8, byte classes with non-ASCII
bytes, negated multi-token atoms, unbound token names and grammar externs, and left recursion
(llama.cpp cannot build it).

Grammars read from GBNF come back unchanged (GBNF -> form -> GBNF -> form is the identity on
the form) unless llama.cpp's repetition budget forces a helper rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import GrammarError
from . import ir
from .gbnf_syntax import MAX_REPETITION_THRESHOLD, NOTHING_TEXT, class_text, is_valid_name, literal_text
from .left_recursion import left_recursive_rule

if TYPE_CHECKING:
    from .grammar import Grammar

_THRESHOLD = MAX_REPETITION_THRESHOLD
_NAMED_TOKEN = re.compile(r"<[^>]*>")


def write_gbnf(grammar: Grammar) -> str:
    """GBNF text for ``grammar`` that llama.cpp reads unchanged and that means the same language.

    Set operations outside greedy lexemes (JSON Schema's ``pattern`` with ``maxLength``, keys
    other than the listed ones) are first written out as the plain rules of their minimal DFA
    (:func:`~structgen.grammar.lowering.lower_set_operations`), which raises
    :class:`~structgen.errors.LimitError` where that automaton would be too large.
    """
    from .lowering import lower_set_operations  # lowering imports the grammar module

    return _Writer(lower_set_operations(grammar)).write()


@dataclass(slots=True)
class _Piece:
    """How one node is written, and what llama.cpp will make of that text."""

    seq: str  # the text as part of a sequence ("" when it has no elements)
    body: str  # the text as a rule body or group content
    single: bool  # ``seq`` is one symbol, so a quantifier may follow it
    zero: bool  # the text compiles to no elements at all
    syms: int  # llama.cpp symbols created while reading ``seq``
    n_prev: int  # llama.cpp's n_prev_rules after reading ``seq`` as one symbol
    nullable: bool  # ``seq``'s elements all refer to rules with an empty alternative
    zero_alt: bool  # ``body`` as a rule has an alternative without elements
    log_start: int  # names this text mentions first: _Writer.log[log_start:log_end]
    log_end: int


def _atom(text: str, log: int, syms: int = 0) -> _Piece:
    return _Piece(text, text, True, False, syms, 1, False, False, log, log)


class _Writer:
    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self.names: dict[str, str] = {}  # form rule name (or helper name) -> GBNF name
        self.taken: set[str] = set()
        # (name Refs use, GBNF name, owning form rule, body); helpers use their GBNF name in Refs
        self.rules: list[tuple[str, str, str, ir.Node]] = []
        self.helper_bodies: dict[ir.Node, str] = {}
        self.locally_nullable: dict[str, bool] = {}
        # simulation of llama.cpp's symbol table, to count the symbols a group creates
        self.seen: set[str] = set()
        self.log: list[str | None] = []
        self.hoisted: list[tuple[str, str, list[str]]] = []
        self.rule = ""

    # -- driver ----------------------------------------------------------------------------

    def write(self) -> str:
        g = self.grammar
        if g.start not in g.rules:
            raise GrammarError("the start rule is an unbound grammar extern; bind it first", rule=g.start)
        self._assign_names()
        for name, body in g.rules.items():
            self.rule = name
            self.rules.append((name, self.names[name], name, self._prepare(body)))
            self._flush_decomposition_helpers(name)
        culprit = left_recursive_rule({key: body for key, _, _, body in self.rules})
        if culprit is not None:
            owner = next(o for key, _, o, _ in self.rules if key == culprit)
            raise GrammarError(
                "left recursion: llama.cpp cannot build a rule that can begin with itself",
                rule=owner,
            )
        for _, gbnf_name, _, body in self.rules:
            self.locally_nullable[gbnf_name] = body == ir.EMPTY or (isinstance(body, ir.Alt) and ir.EMPTY in body.items)
        lines = []
        for _, gbnf_name, owner, body in self.rules:
            self.rule = owner
            self.seen.add(gbnf_name)
            piece = self._render(body)
            lines.append(f"{gbnf_name} ::= {piece.body}")
            for helper, text, names in self.hoisted:
                self.seen.update(names)
                lines.append(f"{helper} ::= {text}")
            self.hoisted = []
        return "\n".join(lines) + "\n"

    def _assign_names(self) -> None:
        g = self.grammar
        self.names[g.start] = "root"
        self.taken.add("root")
        for name in g.rules:
            if name != g.start and name != "root" and is_valid_name(name):
                self.names[name] = name
                self.taken.add(name)
        for name in g.rules:
            if name not in self.names:
                self.names[name] = self._fresh(re.sub(r"[^a-zA-Z0-9-]+", "-", name).strip("-") or "rule")

    def _fresh(self, base: str) -> str:
        name, i = base, 2
        while name in self.taken:
            name, i = f"{base}-{i}", i + 1
        self.taken.add(name)
        return name

    def _error(self, message: str) -> GrammarError:
        return GrammarError(message, rule=self.rule)

    # -- preparation: checks, normal form, large counts -------------------------------------

    def _prepare(self, body: ir.Node) -> ir.Node:
        """``body`` rebuilt with the smart constructors, large repetitions decomposed."""
        self._pending: list[tuple[str, ir.Node]] = []
        return _rebuild(body, self._rebuild_node)

    def _rebuild_node(self, node: ir.Node, kids: list[ir.Node]) -> ir.Node:
        if isinstance(node, ir.Lexeme):
            raise self._error("GBNF cannot express greedy lexing (a GLRM lexeme); llama.cpp has no lexer")
        if isinstance(node, (ir.Difference, ir.Intersection)):
            op = "difference" if isinstance(node, ir.Difference) else "intersection"
            raise self._error(f"GBNF cannot express regular set operations (a GLRM {op})")
        if isinstance(node, ir.Literal):
            return node if node.data else ir.EMPTY
        if isinstance(node, ir.Seq):
            return ir.seq(*kids)
        if isinstance(node, ir.Alt):
            return ir.alt(*kids) if kids else ir.NOTHING
        if isinstance(node, ir.Repeat):
            return self._repeat(kids[0], node.min, node.max)
        return node

    def _repeat(self, item: ir.Node, lo: int, hi: int | None) -> ir.Node:
        if lo <= _THRESHOLD and (hi is None or hi <= _THRESHOLD):
            return ir.repeat(item, lo, hi)
        if item == ir.EMPTY:
            return ir.EMPTY
        # an atom repeats with llama.cpp's rule count 1; anything else gets a rule of its own
        base = item if isinstance(item, (ir.Ref, ir.Literal, ir.CharClass)) else self._helper(item)
        rest = ir.star(base) if hi is None else self._at_most(base, hi - lo)
        return ir.seq(self._exact(base, lo), rest)

    def _exact(self, ref: ir.Node, n: int) -> ir.Node:
        """``ref{n}`` in counts llama.cpp takes: base-2000 digits over helper rules."""
        parts = []
        level: ir.Node = ref
        while True:
            n, digit = divmod(n, _THRESHOLD)
            parts.append(ir.repeat(level, digit, digit))
            if n == 0:
                break
            level = self._helper(ir.repeat(level, _THRESHOLD, _THRESHOLD))
        return ir.seq(*reversed(parts))

    def _at_most(self, ref: ir.Node, k: int) -> ir.Node:
        """``ref{0,k}``: fewer than ``q`` full blocks and a short tail, or ``q`` blocks and at most ``r``."""
        if k <= _THRESHOLD:
            return ir.repeat(ref, 0, k)
        q, r = divmod(k, _THRESHOLD)
        block = self._helper(ir.repeat(ref, _THRESHOLD, _THRESHOLD))
        fewer = ir.seq(self._at_most(block, q - 1), ir.repeat(ref, 0, _THRESHOLD - 1))
        return ir.alt(fewer, ir.seq(self._exact(block, q), ir.repeat(ref, 0, r)))

    def _helper(self, body: ir.Node) -> ir.Ref:
        name = self.helper_bodies.get(body)
        if name is None:
            name = self._fresh(f"{self.names[self.rule]}-rep")
            self.helper_bodies[body] = name
            self._pending.append((name, body))
        return ir.Ref(name)

    def _flush_decomposition_helpers(self, owner: str) -> None:
        for name, body in self._pending:
            self.names[name] = name
            self.rules.append((name, name, owner, body))
        self._pending = []

    # -- rendering --------------------------------------------------------------------------

    def _render(self, root: ir.Node) -> _Piece:
        """Write one rule body, bottom-up and left to right (the order llama.cpp reads it)."""
        work: list[tuple[ir.Node, int]] = [(root, -1)]
        done: list[_Piece] = []
        while work:
            node, log_start = work.pop()
            kids = node.children()
            if log_start < 0:
                work.append((node, len(self.log)))
                work.extend((c, -1) for c in reversed(kids))
                continue
            pieces = done[len(done) - len(kids) :] if kids else []
            if kids:
                del done[len(done) - len(kids) :]
            done.append(self._piece(node, pieces, log_start))
        return done[0]

    def _piece(self, node: ir.Node, kids: list[_Piece], log: int) -> _Piece:
        if isinstance(node, ir.Literal):
            try:
                text = node.data.decode("utf-8")
            except UnicodeDecodeError:
                raise self._error(f"literal {node.data!r} is not valid UTF-8; GBNF literals are characters") from None
            return _atom(literal_text(text), log)
        if isinstance(node, ir.CharClass):
            if not node.codepoints():
                return _atom(NOTHING_TEXT, log)
            if node.negated and not node.ranges:
                return _atom(".", log)
            return _atom(class_text(node.ranges, node.negated), log)
        if isinstance(node, ir.ByteClass):
            ranges = node.byte_ranges()
            if not ranges:
                return _atom(NOTHING_TEXT, log)
            if ranges[-1][1] > 0x7F:
                raise self._error(
                    "a byte class with non-ASCII bytes cannot be written in GBNF, which matches characters"
                )
            return _atom(class_text(ranges, False), log)
        if isinstance(node, ir.Token):
            return self._token(node, log)
        if isinstance(node, ir.Ref):
            return self._ref(node, log)
        if isinstance(node, ir.Seq):
            return self._seq(kids, log)
        if isinstance(node, ir.Alt):
            return self._alt(kids, log)
        if isinstance(node, ir.Repeat):
            return self._repeat_piece(node, kids[0], log)
        raise self._error(f"cannot write {type(node).__name__} in GBNF")  # pragma: no cover

    def _token(self, node: ir.Token, log: int) -> _Piece:
        bang = "!" if node.negated else ""
        if len(node.ids) == 1:
            return _atom(f"{bang}<[{node.ids[0]}]>", log)
        if node.ids:
            if node.negated:
                raise self._error("GBNF cannot exclude several tokens in one atom (!<[a]> excludes one)")
            text = "(" + " | ".join(f"<[{i}]>" for i in node.ids) + ")"
            return _atom(text, log, syms=1)
        if node.name is None:
            return _atom("(<[0]> | !<[0]>)", log, syms=1) if node.negated else _atom(NOTHING_TEXT, log)
        if _NAMED_TOKEN.fullmatch(node.name):
            return _atom(bang + node.name, log)
        raise self._error(f"token {node.name!r} is not bound to token ids; bind it before writing GBNF")

    def _ref(self, node: ir.Ref, log: int) -> _Piece:
        name = self.names.get(node.name)
        if name is None:
            raise self._error(f"{node.name!r} is an unbound grammar extern; bind it before writing GBNF")
        syms = 0
        if name not in self.seen:
            self.seen.add(name)
            self.log.append(name)
            syms = 1
        piece = _atom(name, log, syms)
        piece.log_end = len(self.log)
        piece.nullable = self.locally_nullable.get(name, False)
        return piece

    def _seq(self, kids: list[_Piece], log: int) -> _Piece:
        parts = [k for k in kids if not k.zero]
        text = " ".join(k.seq for k in parts)
        single = len(parts) == 1 and parts[0].single
        return _Piece(
            seq=text,
            body=text or '""',
            single=single,
            zero=not parts,
            syms=sum(k.syms for k in kids),
            n_prev=parts[0].n_prev if single else 1,
            nullable=bool(parts) and all(k.nullable for k in parts),
            zero_alt=not parts,
            log_start=log,
            log_end=len(self.log),
        )

    def _alt(self, kids: list[_Piece], log: int) -> _Piece:
        if not kids:
            return _atom(NOTHING_TEXT, log)
        body = " | ".join('""' if k.zero else k.seq for k in kids)
        syms = 1 + sum(k.syms for k in kids)
        zero_alt = any(k.zero for k in kids)
        return _Piece(f"({body})", body, True, False, syms, syms, zero_alt, zero_alt, log, len(self.log))

    def _repeat_piece(self, node: ir.Repeat, item: _Piece, log: int) -> _Piece:
        lo, hi = node.min, node.max
        if item.zero or hi == 0:
            self._rollback(item)
            return _Piece("", '""', False, True, 0, 1, False, True, log, len(self.log))
        total = hi if hi is not None and hi > 0 else max(lo, 1)
        n_opt = 1 if hi is None else hi - lo

        def fits(n_prev: int, nullable: bool) -> bool:
            return n_prev * total <= _THRESHOLD and not (hi is None and nullable)

        if item.single and fits(item.n_prev, item.nullable):
            text, syms, n_prev, nullable = item.seq, item.syms, item.n_prev, item.nullable
        elif fits(1 + item.syms, False):
            text, syms, n_prev, nullable = f"({item.seq})", 1 + item.syms, 1 + item.syms, False
        else:
            text, syms = self._hoist(item), 1
            n_prev, nullable = 1, False
        if lo == 0:
            nullable = True  # the operand now sits in a generated rule with an empty alternative
        seq = text + _suffix(lo, hi)
        return _Piece(seq, seq, True, False, syms + n_opt, n_prev * total, nullable, False, log, len(self.log))

    def _hoist(self, item: _Piece) -> str:
        """Move ``item`` into a helper rule of its own (emitted after the current rule)."""
        names = self._rollback(item)
        name = self._fresh(f"{self.names.get(self.rule, 'rule')}-part")
        body = f"({item.body})" if item.zero_alt else item.body
        self.hoisted.append((name, body, names))
        self.seen.add(name)
        self.log.append(name)
        return name

    def _rollback(self, item: _Piece) -> list[str]:
        """Forget the names ``item`` mentioned first: its text is leaving this place."""
        names = []
        for i in range(item.log_start, item.log_end):
            name = self.log[i]
            if name is not None:
                self.seen.discard(name)
                names.append(name)
                self.log[i] = None
        return names


def _suffix(lo: int, hi: int | None) -> str:
    if hi is None:
        return "*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}"
    if lo == 0 and hi == 1:
        return "?"
    return f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"


def _rebuild(root: ir.Node, make: Callable[[ir.Node, list[ir.Node]], ir.Node]) -> ir.Node:
    """Rebuild ``root`` bottom-up with ``make(node, rebuilt_children)``, without recursion."""
    work: list[tuple[ir.Node, bool]] = [(root, False)]
    done: list[ir.Node] = []
    while work:
        node, expanded = work.pop()
        kids = node.children()
        if kids and not expanded:
            work.append((node, True))
            work.extend((c, False) for c in reversed(kids))
            continue
        new = done[len(done) - len(kids) :] if kids else []
        if kids:
            del done[len(done) - len(kids) :]
        done.append(make(node, new))
    return done[0]
