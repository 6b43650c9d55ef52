"""Whether a matcher state can still be completed, given what may follow its rule.

A greedy lexeme (a GLRM terminal) may end only where the next byte cannot extend it, so
``A "a"`` with ``A = /a+/`` matches nothing although both parts do, and whether an automaton state
can reach its rule's final state depends on what follows the rule. For a state ``q`` of rule ``R``
and a set ``G`` of symbols that may follow ``R``, this module computes

    first(q, G): the symbols that can come next on some valid completion of ``R`` from ``q``:
    a byte, :data:`END_BIT` (end of input) or :data:`TOKEN_BIT` (a special token), or a symbol of
    ``G`` where the completion is empty.

A state is live in a context exactly when ``first`` is not empty there; the matcher builds the
follow set of a rule instance from the Earley items waiting for it (``Matcher._follow``).

- ``first(q, .)`` is distributive over the follow set, so it is a function of one follow symbol
  ``f``. Symbols that no lexeme tells apart (the same membership in every *extension set*: the
  bytes that extend a lexeme at one of its possible ends; end of input and special tokens extend
  none) form a *follow class*, and ``first(q, f)`` is the same for every ``f`` of a class up to
  ``f`` itself, written as the bit :data:`SELF`. So there is one value per (rule, follow class).
- Values are least fixpoints (recursion), found by a worklist over (rule, class) keys, each
  evaluated by a worklist over its rule's states; a key is evaluated again when a value it read
  (a callee's start state) grows. The values are growing sets of at most 259 symbols, so this
  ends; :class:`LivenessLimits` bounds the work.
- Inside a lexeme, the bytes its byte sets, literals and character classes tell apart (its
  *atoms*) decide every derivative, so follow classes refine the atoms of all lexemes, and a
  derivative's moves are one per atom. Whether a lexeme can end before ``G`` from a derivative is
  a search over its derivatives (bounded like the emptiness check; the path to a witness is
  remembered). A search that reaches the bound counts the lexeme as able to end: where a lexeme
  has that many states (a hostname format), the matcher is as permissive as it was before.
- A counted repetition ``x{lo,hi}`` iterates ``X -> first(x, X)``: from the exit upwards to a
  fixpoint (one step per symbol gained at most), then ``lo`` times below the minimum, skipping
  the cycle that sequence falls into.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..errors import LimitError
from . import ir
from .matcher_automata import BYTES, CALL, REGULAR, TOKEN, CompiledGrammar, Edge
from .utf8 import class_sequences, mask_of, mask_of_ranges

BYTE_BITS = (1 << 256) - 1
END_BIT = 1 << 256
TOKEN_BIT = 1 << 257
#: the symbols that extend no lexeme: a lexeme may always end before them
NON_BYTE_BITS = END_BIT | TOKEN_BIT
SYMBOL_BITS = BYTE_BITS | NON_BYTE_BITS
#: "the symbol that follows the rule", in a value computed for one follow class
SELF = 1 << 258


@dataclass(frozen=True)
class LivenessLimits:
    """Bounds on the liveness analysis (a grammar past them gets a :class:`LimitError`)."""

    #: derivatives one search for a lexeme's end explores before it counts the lexeme as able to
    #: end; the bound of one emptiness check of a regular operand (``regular.MAX_EMPTINESS_STATES``)
    max_lexeme_states: int = 20_000
    #: state evaluations of the fixpoint: each is a pass over one state's edges, and a grammar
    #: needs a few per state and follow class (a JSON grammar in GLRM: tens of thousands)
    max_evaluations: int = 2_000_000
    #: steps of a counted repetition's iteration below its minimum before a cycle must show
    max_repeat_steps: int = 100_000


class LexemeLiveness:
    """``first(q, G)`` for the states of one compiled grammar with greedy lexemes (memoised)."""

    def __init__(self, cg: CompiledGrammar, rules: Mapping[str, ir.Node], limits: LivenessLimits | None = None) -> None:
        self._cg = cg
        terms = cg.terms
        assert terms is not None
        self._terms = terms
        self._rules = rules
        self._limits = limits or LivenessLimits()
        n_rules = len(cg.rule_names)
        self._rule_states: list[list[int]] = [[] for _ in range(n_rules)]
        self._preds: list[list[int]] = [[] for _ in cg.eps]
        self._call_states: list[list[int]] = [[] for _ in range(n_rules)]  # states that read a callee
        self._atoms: dict[ir.Node, tuple[int, ...]] = {}  # lexeme operand -> its byte partition
        for q, rule in enumerate(cg.state_rule):
            self._rule_states[rule].append(q)
            for t in cg.eps[q]:
                self._preds[t].append(q)
            reads_callee = False
            for e in cg.edges[q]:
                self._preds[e.target].append(q)
                reads_callee = reads_callee or e.kind not in (BYTES, TOKEN, REGULAR)
                if e.kind == REGULAR and e.lexeme:
                    self._atoms_of(e.payload)  # type: ignore[arg-type]
            if reads_callee:
                self._call_states[rule].append(q)
        self._classes, self._class_rep = self._follow_classes()
        self._values: dict[int, dict[int, int]] = {}  # key rule * n_classes + class -> state -> value
        self._readers: dict[int, set[int]] = {}  # key -> keys that read its start state's value
        self._dirty: dict[int, set[int]] = {}  # key -> states to evaluate
        self._evaluations = 0
        self._first: dict[tuple[int, int], int] = {}
        self._nonempty_first: dict[ir.Node, int] = {}
        self._moves: dict[ir.Node, list[tuple[int, ir.Node]]] = {}  # derivative -> (bytes, next)
        self._ends: dict[tuple[int, int], dict[ir.Node, bool]] = {}  # (follow, class) -> can end
        self._through: dict[tuple[ir.Node, int, int], int] = {}

    # -- public API -----------------------------------------------------------------------------

    def first(self, q: int, follow: int) -> int:
        """The symbols that can come next at state ``q`` on a valid completion of its rule, when
        a symbol of ``follow`` (a mask of bytes, :data:`END_BIT`, :data:`TOKEN_BIT`) follows it."""
        key = (q, follow)
        r = self._first.get(key)
        if r is None:
            rule = self._cg.state_rule[q]
            r = 0
            for c, members in enumerate(self._classes):
                part = follow & members
                if part:
                    self._read(rule, c, None)
                    v = self._values[rule * len(self._classes) + c].get(q, 0)
                    r |= (v & SYMBOL_BITS) | (part if v & SELF else 0)
            self._first[key] = r
        return r

    def first_of_repeat(self, edge: Edge, count: int, follow: int) -> int:
        """``first`` of the repeat edge ``edge`` with ``count`` iterations done."""
        return self._through_repeat(edge, count, self.first(edge.target, follow), -1, None)

    def lexeme_live(self, operand: ir.Node, derivative: ir.Node, follow: int) -> bool:
        """Whether the lexeme ``operand``, having read up to ``derivative``, can still end before a
        symbol of ``follow`` (the symbols that may come right after it)."""
        return self._can_end(derivative, follow, -1, self._atoms_of(operand))

    # -- follow classes -------------------------------------------------------------------------

    def _follow_classes(self) -> tuple[list[int], list[int]]:
        """The bytes partitioned by every lexeme's atoms, and end of input with special tokens
        (which extend no lexeme) as one more class; a representative symbol of each."""
        classes = [BYTE_BITS]
        for atoms in set(self._atoms.values()):
            classes = [part for c in classes for a in atoms if (part := c & a)]
        classes.append(NON_BYTE_BITS)
        reps = [256 if c & END_BIT else (c & -c).bit_length() - 1 for c in classes]
        return classes, reps

    # -- lexemes --------------------------------------------------------------------------------

    def _atoms_of(self, operand: ir.Node) -> tuple[int, ...]:
        """A partition of the bytes on which every derivative of ``operand`` is constant: the
        refinement of its byte sets, literal bytes and the byte ranges of its characters."""
        r = self._atoms.get(operand)
        if r is None:
            masks: set[int] = set()
            seen: set[int] = set()
            rules_seen: set[str] = set()
            stack = [operand]
            while stack:
                n = stack.pop()
                if id(n) in seen:
                    continue
                seen.add(id(n))
                if isinstance(n, ir.Literal):
                    masks.update(1 << b for b in n.data)
                elif isinstance(n, ir.ByteClass):
                    masks.add(mask_of_ranges(n.byte_ranges()))
                elif isinstance(n, ir.CharClass):
                    for seq in class_sequences(n.codepoints()):
                        masks.update(mask_of(lo, hi) for lo, hi in seq)
                elif isinstance(n, ir.Ref):
                    if n.name not in rules_seen:
                        rules_seen.add(n.name)
                        stack.append(self._rules[n.name])
                else:
                    stack.extend(n.children())
            parts = [BYTE_BITS]
            for m in masks:
                parts = [x for c in parts for x in (c & m, c & ~m) if x]
            r = self._atoms[operand] = tuple(parts)
        return r

    def _moves_of(self, d: ir.Node, atoms: tuple[int, ...]) -> list[tuple[int, ir.Node]]:
        """The non-empty derivatives of ``d``, one per atom (``atoms`` holds for ``d``)."""
        r = self._moves.get(d)
        if r is None:
            terms = self._terms
            first = terms.first_bytes(d)
            r = []
            for part in atoms:
                if part & first:
                    child = terms.deriv(d, (part & -part).bit_length() - 1)
                    if child != ir.NOTHING and not terms.is_empty(child):
                        r.append((part, child))
            self._moves[d] = r
        return r

    def _extends(self, d: ir.Node, atoms: tuple[int, ...]) -> int:
        """The bytes that extend a match that reached ``d``."""
        m = 0
        for part, _child in self._moves_of(d, atoms):
            m |= part
        return m

    def _ends_before(self, ext: int, follow: int, cls: int) -> bool:
        """Whether a lexeme end with extension set ``ext`` may be followed by a symbol of
        ``follow`` (with :data:`SELF` standing for the members of follow class ``cls``)."""
        if follow & NON_BYTE_BITS or follow & BYTE_BITS & ~ext:
            return True
        if follow & SELF:
            rep = self._class_rep[cls]
            return rep >= 256 or not ext >> rep & 1
        return False

    def _can_end(self, d: ir.Node, follow: int, cls: int, atoms: tuple[int, ...]) -> bool:
        """Whether a lexeme at derivative ``d`` can read on (or not) to an end before ``follow``.

        Breadth-first over derivatives; the path to a witness is remembered as live, everything
        an exhausted search saw as dead. Past the bound, ``d`` counts as live (see the module)."""
        memo = self._ends.setdefault((follow, cls if follow & SELF else -1), {})
        r = memo.get(d)
        if r is not None:
            return r
        terms = self._terms
        parent: dict[ir.Node, ir.Node | None] = {d: None}
        queue = [d]
        found: ir.Node | None = None
        i = 0
        while i < len(queue) and found is None:
            u = queue[i]
            i += 1
            known = memo.get(u)
            if known is False:
                continue
            if known or (terms.nullable(u) and self._ends_before(self._extends(u, atoms), follow, cls)):
                found = u
                break
            for _part, child in self._moves_of(u, atoms):
                if child not in parent:
                    parent[child] = u
                    queue.append(child)
            if len(parent) > self._limits.max_lexeme_states:
                memo[d] = True
                return True
        if found is None:
            for u in parent:
                memo[u] = False
            return False
        w: ir.Node | None = found
        while w is not None:
            memo[w] = True
            w = parent[w]
        return True

    def _through_lexeme(self, operand: ir.Node, follow: int, cls: int) -> int:
        """``first`` before a greedy lexeme edge whose target has ``first`` = ``follow``."""
        key = (operand, follow, cls if follow & SELF else -1)
        r = self._through.get(key)
        if r is None:
            atoms = self._atoms_of(operand)
            r = 0
            for part, child in self._moves_of(operand, atoms):
                if self._can_end(child, follow, cls, atoms):
                    r |= part
            if self._terms.nullable(operand):  # the empty match: the next symbol must not extend it
                ext = self._extends(operand, atoms)
                r |= follow & (BYTE_BITS & ~ext | NON_BYTE_BITS)
                if follow & SELF and self._ends_before(ext, SELF, cls):
                    r |= SELF
            self._through[key] = r
        return r

    # -- the fixpoint ---------------------------------------------------------------------------

    def _read(self, rule: int, cls: int, reader: int | None) -> int:
        """The value at ``rule``'s start state for follow class ``cls``; ``reader`` is the key
        being evaluated (None: a question from outside, answered once the fixpoint is found)."""
        n = len(self._classes)
        key = rule * n + cls
        vals = self._values.get(key)
        if vals is None:
            vals = self._values[key] = {}
            self._dirty[key] = set(self._rule_states[rule])
        if reader is not None:
            self._readers.setdefault(key, set()).add(reader)
        elif self._dirty:
            self._solve()
        return vals.get(self._cg.rule_start[rule], 0)

    def _solve(self) -> None:
        cg = self._cg
        n = len(self._classes)
        while self._dirty:
            key, todo = self._dirty.popitem()
            rule, cls = divmod(key, n)
            vals = self._values[key]
            start = cg.rule_start[rule]
            before = vals.get(start, 0)
            stack = list(todo)
            pending = set(todo)
            while stack:
                q = stack.pop()
                pending.discard(q)
                self._evaluations += 1
                if self._evaluations > self._limits.max_evaluations:
                    raise LimitError(
                        "deciding where the grammar's greedy lexemes may end took too many steps",
                        limit="max_evaluations",
                        value=self._limits.max_evaluations,
                    )
                old = vals.get(q, 0)
                new = self._evaluate(q, rule, cls, key, vals) | old
                if new != old:
                    vals[q] = new
                    for p in self._preds[q]:
                        if p not in pending:
                            pending.add(p)
                            stack.append(p)
            if vals.get(start, 0) != before:
                for reader in self._readers.get(key, ()):
                    self._dirty.setdefault(reader, set()).update(self._call_states[reader // n])

    def _evaluate(self, q: int, rule: int, cls: int, key: int, vals: dict[int, int]) -> int:
        cg = self._cg
        m = SELF if q == cg.rule_final[rule] else 0
        for t in cg.eps[q]:
            m |= vals.get(t, 0)
        for e in cg.edges[q]:
            after = vals.get(e.target, 0)
            if not after:
                continue
            if e.kind == BYTES:
                m |= e.payload  # type: ignore[operator]
            elif e.kind == TOKEN:
                m |= TOKEN_BIT
            elif e.kind == CALL:
                m |= self._through_rule(e.payload, after, cls, key)  # type: ignore[arg-type]
            elif e.kind == REGULAR:
                if e.lexeme:
                    m |= self._through_lexeme(e.payload, after, cls)  # type: ignore[arg-type]
                else:
                    m |= self._regular_first(e.payload)  # type: ignore[arg-type]
                    if self._terms.nullable(e.payload):  # type: ignore[arg-type]
                        m |= after
            else:
                m |= self._through_repeat(e, 0, after, cls, key)
        return m

    def _through_rule(self, rule: int, follow: int, cls: int, reader: int | None) -> int:
        """``first`` at ``rule``'s start state when ``follow`` follows it."""
        out = 0
        concrete = follow & SYMBOL_BITS
        if concrete:
            for c, members in enumerate(self._classes):
                part = concrete & members
                if part:
                    v = self._read(rule, c, reader)
                    out |= (v & SYMBOL_BITS) | (part if v & SELF else 0)
        if follow & SELF:
            out |= self._read(rule, cls, reader)
        return out

    def _through_repeat(self, edge: Edge, count: int, exit_first: int, cls: int, reader: int | None) -> int:
        """``first`` of a repeat edge with ``count`` iterations done, ``exit_first`` being
        ``first`` at its target."""
        sub, lo, hi = edge.payload  # type: ignore[misc]

        def step(x: int) -> int:
            return self._through_rule(sub, x, cls, reader) if x else 0

        top = max(count, lo)
        x = exit_first
        if hi is None:
            while (nxt := exit_first | step(x)) != x:  # grows: at most one step per symbol
                x = nxt
        else:
            for _ in range(hi - top):
                nxt = exit_first | step(x)
                if nxt == x:
                    break
                x = nxt
        steps = lo - count if count < lo else 0
        seen: dict[int, int] | None = {}
        while steps and x:
            if seen is not None:
                if x in seen:  # periodic from here on
                    steps %= seen[x] - steps
                    seen = None
                    continue
                seen[x] = steps
                if len(seen) > self._limits.max_repeat_steps:
                    raise LimitError(
                        "a counted repetition's follow sets do not settle",
                        limit="max_repeat_steps",
                        value=self._limits.max_repeat_steps,
                    )
            x = step(x)
            steps -= 1
        return x

    def _regular_first(self, operand: ir.Node) -> int:
        """The bytes that begin some non-empty sentence of a (non-greedy) regular operand."""
        r = self._nonempty_first.get(operand)
        if r is None:
            terms = self._terms
            assert terms is not None
            r = 0
            mask = terms.first_bytes(operand)
            while mask:
                low = mask & -mask
                mask ^= low
                d = terms.deriv(operand, low.bit_length() - 1)
                if d != ir.NOTHING and not terms.is_empty(d):
                    r |= low
            self._nonempty_first[operand] = r
        return r
