"""Deterministic automata over Unicode code points, built from regular grammar nodes by derivatives.

A regular node (literals, character classes, sequence, choice, counted repetition, intersection,
difference, references to non-recursive rules) denotes a language of *characters*. This module
turns one into an explicit DFA whose transitions are labelled with code point ranges:

* :class:`CodepointTerms` - Brzozowski derivatives with respect to one code point, and derivative
  *classes*: the code point space cut into intervals on which every derivative is the same, so a
  state needs one derivative per interval, not one per character;
* :func:`node_to_dfa` - breadth-first exploration of derivatives, bounded by ``max_states``
  (:class:`~structgen.errors.LimitError` past it): a counted repetition ``x{0,100000}`` needs at
  least 100,000 states and is refused rather than built;
* :class:`DFA` with :meth:`DFA.intersect`, :meth:`DFA.trim` and :meth:`DFA.minimize` (Hopcroft's
  algorithm over the intervals of all labels), and :func:`dfa_rules`, which writes a DFA as
  right-linear rules (``S3 ::= [a-f] S4 | [0-9] S3 | ""``).

Byte classes and UTF-8 fragments have no code point meaning: operands containing them are refused
with :class:`~structgen.errors.GrammarError`.
"""

from __future__ import annotations

import functools
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..deadline import check_deadline
from ..errors import GrammarError, LimitError
from . import ir

NOTHING = ir.NOTHING
EMPTY = ir.EMPTY

#: Default bound on DFA states built for one regular language.
DEFAULT_MAX_STATES = 50_000

_SURROGATE_LO, _SURROGATE_HI = ir.SURROGATES
_END = ir.MAX_CODEPOINT + 1

Transitions = list[tuple[int, int, int]]  # (lo, hi, target), sorted, non-overlapping
F = TypeVar("F", bound=Callable[..., Any])


class CodepointTerms:
    """Derivatives, nullability and derivative classes of regular nodes over code points."""

    def __init__(self, rules: Mapping[str, ir.Node] | None = None) -> None:
        self._rules = rules or {}
        self._nullable: dict[ir.Node, bool] = {}
        self._deriv: dict[tuple[ir.Node, int], ir.Node] = {}
        self._bounds: dict[ir.Node, frozenset[int]] = {}
        self._text: dict[bytes, str] = {}
        # hash-consing: structurally equal terms become one object, so the many dictionary
        # lookups below compare by identity instead of walking trees
        self._interned: dict[ir.Node, ir.Node] = {}

    def intern(self, n: ir.Node) -> ir.Node:
        return self._interned.setdefault(n, n)

    # -- canonical constructors ---------------------------------------------------------------

    def cat(self, a: ir.Node, b: ir.Node) -> ir.Node:
        if a == NOTHING or b == NOTHING:
            return NOTHING
        if a == EMPTY:
            return b
        if b == EMPTY:
            return a
        left = a.items if isinstance(a, ir.Seq) else (a,)
        right = b.items if isinstance(b, ir.Seq) else (b,)
        return self.intern(ir.Seq(left + right))

    def union(self, items: list[ir.Node]) -> ir.Node:
        flat: set[ir.Node] = set()
        for it in items:
            if isinstance(it, ir.Alt):
                flat.update(it.items)
            elif it != NOTHING:
                flat.add(it)
        if not flat:
            return NOTHING
        if len(flat) == 1:
            return next(iter(flat))
        return self.intern(ir.Alt(tuple(sorted(flat, key=hash))))

    # -- text of literals ---------------------------------------------------------------------

    def _chars(self, lit: ir.Literal) -> str:
        text = self._text.get(lit.data)
        if text is None:
            try:
                text = lit.data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise GrammarError("a literal that is not whole UTF-8 characters has no code point automaton") from exc
            self._text[lit.data] = text
        return text

    # -- nullability --------------------------------------------------------------------------

    def nullable(self, n: ir.Node) -> bool:
        cached = self._nullable.get(n)
        if cached is not None:
            return cached
        if isinstance(n, ir.Literal):
            r = not n.data
        elif isinstance(n, ir.CharClass):
            r = False
        elif isinstance(n, ir.Seq):
            r = all(self.nullable(i) for i in n.items)
        elif isinstance(n, ir.Alt):
            r = any(self.nullable(i) for i in n.items)
        elif isinstance(n, ir.Repeat):
            r = n.min == 0 or self.nullable(n.item)
        elif isinstance(n, ir.Ref):
            r = self.nullable(self._rule(n.name))
        elif isinstance(n, ir.Difference):
            r = self.nullable(n.left) and not self.nullable(n.right)
        elif isinstance(n, ir.Intersection):
            r = self.nullable(n.left) and self.nullable(n.right)
        else:
            raise _refuse(n)
        self._nullable[n] = r
        return r

    def _rule(self, name: str) -> ir.Node:
        body = self._rules.get(name)
        if body is None:
            raise GrammarError(f"undefined rule {name!r} in a regular operand", rule=name)
        return body

    # -- derivative classes -------------------------------------------------------------------

    def boundaries(self, n: ir.Node) -> frozenset[int]:
        """Start points of code point intervals on which the derivative of ``n`` is constant."""
        cached = self._bounds.get(n)
        if cached is not None:
            return cached
        out: set[int] = set()
        if isinstance(n, ir.Literal):
            if n.data:
                c = ord(self._chars(n)[0])
                out.update((c, c + 1))
        elif isinstance(n, ir.CharClass):
            for lo, hi in n.codepoints():
                out.update((lo, hi + 1))
        elif isinstance(n, ir.Seq):
            for it in n.items:
                out |= self.boundaries(it)
                if not self.nullable(it):
                    break
        elif isinstance(n, (ir.Alt, ir.Intersection, ir.Difference)):
            for it in n.children():
                out |= self.boundaries(it)
        elif isinstance(n, ir.Repeat):
            if n.max != 0:
                out |= self.boundaries(n.item)
        elif isinstance(n, ir.Ref):
            out |= self.boundaries(self._rule(n.name))
        else:
            raise _refuse(n)
        out.discard(_END)
        result = frozenset(out)
        self._bounds[n] = result
        return result

    # -- derivatives --------------------------------------------------------------------------

    def deriv(self, n: ir.Node, c: int) -> ir.Node:
        """The node matching ``{w : chr(c) + w in L(n)}``."""
        key = (n, c)
        cached = self._deriv.get(key)
        if cached is not None:
            return cached
        if isinstance(n, ir.Literal):
            text = self._chars(n) if n.data else ""
            if text and ord(text[0]) == c:
                r = self.intern(ir.Literal(text[1:].encode("utf-8"))) if len(text) > 1 else EMPTY
            else:
                r = NOTHING
        elif isinstance(n, ir.CharClass):
            r = EMPTY if _in_ranges(n.codepoints(), c) else NOTHING
        elif isinstance(n, ir.Seq):
            if not n.items:
                r = NOTHING
            else:
                head = n.items[0]
                rest = (
                    self.intern(ir.Seq(n.items[1:]))
                    if len(n.items) > 2
                    else (n.items[1] if len(n.items) == 2 else EMPTY)
                )
                parts = [self.cat(self.deriv(head, c), rest)]
                if self.nullable(head):
                    parts.append(self.deriv(rest, c))
                r = self.union(parts)
        elif isinstance(n, ir.Alt):
            r = self.union([self.deriv(i, c) for i in n.items])
        elif isinstance(n, ir.Repeat):
            if n.max == 0:
                r = NOTHING
            else:
                lo = 0 if self.nullable(n.item) else max(n.min - 1, 0)
                hi = None if n.max is None else n.max - 1
                if hi == 0:
                    tail = EMPTY
                elif (lo, hi) == (1, 1):
                    tail = n.item
                else:
                    tail = self.intern(ir.Repeat(n.item, lo, hi))
                r = self.cat(self.deriv(n.item, c), tail)
        elif isinstance(n, ir.Ref):
            r = self.deriv(self._rule(n.name), c)
        elif isinstance(n, ir.Difference):
            left = self.deriv(n.left, c)
            if left == NOTHING:
                r = NOTHING
            else:
                right = self.deriv(n.right, c)
                r = left if right == NOTHING else self.intern(ir.Difference(left, right))
        elif isinstance(n, ir.Intersection):
            left = self.deriv(n.left, c)
            right = self.deriv(n.right, c) if left != NOTHING else NOTHING
            r = NOTHING if right == NOTHING else (left if left == right else self.intern(ir.Intersection(left, right)))
        else:
            raise _refuse(n)
        self._deriv[key] = r
        return r


def _refuse(n: ir.Node) -> GrammarError:
    return GrammarError(f"{type(n).__name__} cannot appear in a code point automaton (only regular character nodes)")


def _in_ranges(ranges: ir.Ranges, c: int) -> bool:
    i = bisect_right(ranges, (c, _END)) - 1
    return i >= 0 and ranges[i][0] <= c <= ranges[i][1]


def _intervals(bounds: frozenset[int]) -> list[tuple[int, int]]:
    """The intervals that ``bounds`` cut the scalar values into, surrogates left out."""
    points = sorted(bounds | {0, _SURROGATE_LO, _SURROGATE_HI + 1})
    out = []
    for i, lo in enumerate(points):
        hi = points[i + 1] - 1 if i + 1 < len(points) else ir.MAX_CODEPOINT
        if lo == _SURROGATE_LO:
            continue
        out.append((lo, hi))
    return out


# ---------------------------------------------------------------------------------------------
# DFAs


@dataclass
class DFA:
    """A DFA over code points; missing transitions go to an implicit dead state."""

    transitions: list[Transitions] = field(default_factory=list)
    accepting: list[bool] = field(default_factory=list)
    start: int = 0

    @property
    def size(self) -> int:
        return len(self.transitions)

    def add_state(self, accepting: bool) -> int:
        self.transitions.append([])
        self.accepting.append(accepting)
        return len(self.transitions) - 1

    def step(self, state: int, c: int) -> int | None:
        for lo, hi, t in self.transitions[state]:
            if lo <= c <= hi:
                return t
        return None

    def accepts(self, text: str) -> bool:
        s: int | None = self.start
        for ch in text:
            s = self.step(s, ord(ch))  # type: ignore[arg-type]
            if s is None:
                return False
        return self.accepting[s]  # type: ignore[index]

    def is_empty(self) -> bool:
        return not any(self.trim().accepting)

    def trim(self) -> DFA:
        """The same language without states that cannot be reached or cannot reach acceptance."""
        reach = {self.start}
        todo = [self.start]
        while todo:
            s = todo.pop()
            for _lo, _hi, t in self.transitions[s]:
                if t not in reach:
                    reach.add(t)
                    todo.append(t)
        preds: dict[int, list[int]] = {}
        for s in reach:
            for _lo, _hi, t in self.transitions[s]:
                preds.setdefault(t, []).append(s)
        live = {s for s in reach if self.accepting[s]}
        todo = list(live)
        while todo:
            s = todo.pop()
            for p in preds.get(s, ()):
                if p not in live:
                    live.add(p)
                    todo.append(p)
        out = DFA()
        if self.start not in live:
            out.add_state(False)
            return out
        order = _bfs_order(self, live)
        index = {s: i for i, s in enumerate(order)}
        out.accepting = [self.accepting[s] for s in order]
        # dropping transitions keeps the lists sorted and merged
        out.transitions = [[(lo, hi, index[t]) for lo, hi, t in self.transitions[s] if t in index] for s in order]
        return out

    def intersect(self, other: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
        """The product automaton for the intersection of both languages."""
        return self._product(other, difference=False, max_states=max_states)

    def difference(self, other: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
        """The product automaton for the strings of this language that are not in ``other``."""
        return self._product(other, difference=True, max_states=max_states)

    def _product(self, other: DFA, *, difference: bool, max_states: int) -> DFA:
        out = DFA()
        index: dict[tuple[int, int], int] = {}
        todo: list[tuple[int, int]] = []
        dead = -1  # `other` has no transition: its implicit dead state

        def state(pair: tuple[int, int]) -> int:
            i = index.get(pair)
            if i is None:
                if len(index) >= max_states:
                    raise LimitError(
                        f"the product automaton needs more than {max_states} states",
                        limit="max_states",
                        value=max_states,
                    )
                a, b = pair
                b_accepts = b != dead and other.accepting[b]
                i = out.add_state(self.accepting[a] and (not b_accepts if difference else b_accepts))
                index[pair] = i
                todo.append(pair)
            return i

        out.start = state((self.start, other.start))
        while todo:
            check_deadline()
            a, b = todo.pop()
            src = index[(a, b)]
            ta = self.transitions[a]
            trans: Transitions = []
            if b == dead:
                trans = [(lo, hi, state((t, dead))) for lo, hi, t in ta]
            else:
                tb = other.transitions[b]
                j = 0
                for lo, hi, t in ta:
                    cur = lo
                    while j < len(tb) and tb[j][1] < cur:
                        j += 1
                    k = j
                    while cur <= hi:
                        if k < len(tb) and tb[k][0] <= cur:
                            top = min(hi, tb[k][1])
                            trans.append((cur, top, state((t, tb[k][2]))))
                            cur = top + 1
                            k += 1
                        else:
                            top = hi if k >= len(tb) else min(hi, tb[k][0] - 1)
                            if difference:
                                trans.append((cur, top, state((t, dead))))
                            cur = top + 1
            out.transitions[src] = _merge(trans)
        return out

    def minimize(self) -> DFA:
        """The minimal DFA of the same language (trimmed first, then Hopcroft's algorithm)."""
        d = self.trim()
        n = d.size
        if not any(d.accepting):
            return d
        # global alphabet: intervals of the union of all label boundaries
        points = sorted(
            {lo for tr in d.transitions for lo, _hi, _t in tr} | {hi + 1 for tr in d.transitions for _lo, hi, _t in tr}
        )
        dead = n
        # preds[a][q]: states p with delta(p, a) == q, for each symbol a (interval index)
        symbol_count = max(len(points), 1)
        delta: list[list[int]] = [[dead] * symbol_count for _ in range(n + 1)]
        for s, tr in enumerate(d.transitions):
            for lo, hi, t in tr:
                a = bisect_right(points, lo) - 1
                while a < symbol_count and points[a] <= hi:
                    delta[s][a] = t
                    a += 1
        preds: list[dict[int, list[int]]] = [{} for _ in range(n + 1)]
        for s in range(n + 1):
            row = delta[s]
            for a in range(symbol_count):
                preds[row[a]].setdefault(a, []).append(s)
        accepting = {i for i in range(n) if d.accepting[i]}
        rejecting = set(range(n + 1)) - accepting
        blocks: list[set[int]] = [accepting] + ([rejecting] if rejecting else [])
        block_of = [0] * (n + 1)
        for b, members in enumerate(blocks):
            for s in members:
                block_of[s] = b
        work: set[int] = set() if len(blocks) == 1 else ({0} if len(accepting) <= len(rejecting) else {1})
        while work:
            splitter = blocks[work.pop()]
            by_symbol: dict[int, set[int]] = {}
            for q in splitter:
                for a, ps in preds[q].items():
                    by_symbol.setdefault(a, set()).update(ps)
            for x in by_symbol.values():
                touched: dict[int, set[int]] = {}
                for p in x:
                    touched.setdefault(block_of[p], set()).add(p)
                for b, inside in touched.items():
                    members = blocks[b]
                    if len(inside) == len(members):
                        continue
                    outside = members - inside
                    new = len(blocks)
                    small, large = (inside, outside) if len(inside) <= len(outside) else (outside, inside)
                    blocks[b] = large
                    blocks.append(small)
                    for s in small:
                        block_of[s] = new
                    # Hopcroft: if b was waiting, both halves wait (b now names the larger one);
                    # otherwise the smaller half is enough
                    work.add(new)
        out = DFA()
        dead_block = block_of[dead]
        reps: dict[int, int] = {}
        for s in range(n):
            reps.setdefault(block_of[s], s)
        numbering: dict[int, int] = {}
        for b in sorted(reps, key=lambda b: reps[b]):
            if b == dead_block:
                continue
            numbering[b] = out.add_state(d.accepting[reps[b]])
        for b, i in numbering.items():
            s = reps[b]
            out.transitions[i] = _merge(
                [(lo, hi, numbering[block_of[t]]) for lo, hi, t in d.transitions[s] if block_of[t] != dead_block]
            )
        out.start = numbering[block_of[d.start]]
        return out


def _merge(trans: Transitions) -> Transitions:
    """Sort transitions and join adjacent intervals that go to the same state."""
    trans = sorted(trans)
    out: Transitions = []
    for lo, hi, t in trans:
        if out and out[-1][2] == t and out[-1][1] + 1 >= lo:
            out[-1] = (out[-1][0], max(out[-1][1], hi), t)
        elif out and out[-1][2] == t and out[-1][1] + 1 == _SURROGATE_LO and lo == _SURROGATE_HI + 1:
            out[-1] = (out[-1][0], hi, t)  # a label may span the surrogates: they never occur
        else:
            out.append((lo, hi, t))
    return out


def _bfs_order(d: DFA, keep: set[int]) -> list[int]:
    order = [d.start]
    seen = {d.start}
    i = 0
    while i < len(order):
        for _lo, _hi, t in d.transitions[order[i]]:  # sorted by code point already
            if t in keep and t not in seen:
                seen.add(t)
                order.append(t)
        i += 1
    return order


def _no_recursion_error(fn: F) -> F:
    """Derivatives recurse over a term's head; a term nested past Python's stack is a LimitError."""

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise LimitError(
                "a regular operand is nested too deeply to build its automaton", limit="max_nesting"
            ) from None

    return wrapper  # type: ignore[return-value]


@_no_recursion_error
def node_to_dfa(
    node: ir.Node,
    rules: Mapping[str, ir.Node] | None = None,
    *,
    max_states: int = DEFAULT_MAX_STATES,
    terms: CodepointTerms | None = None,
) -> DFA:
    """The DFA of a regular node (not minimised; dead states dropped).

    An intersection or difference at the top is built as the product of its operands' minimal
    DFAs (integer work, much cheaper than derivatives of the product terms); everything else by
    derivatives.
    """
    t = terms or CodepointTerms(rules)
    return _node_to_dfa(node, t, max_states, 0)


#: Nested set operations handled as products before falling back to derivatives of the whole.
_MAX_PRODUCT_DEPTH = 50


def _node_to_dfa(node: ir.Node, t: CodepointTerms, max_states: int, depth: int) -> DFA:
    seen_refs = 0
    while isinstance(node, ir.Ref) and seen_refs < 1000:
        node = t._rule(node.name)
        seen_refs += 1
    if isinstance(node, (ir.Intersection, ir.Difference)) and depth < _MAX_PRODUCT_DEPTH:
        left = _node_to_dfa(node.left, t, max_states, depth + 1).minimize()
        right = _node_to_dfa(node.right, t, max_states, depth + 1).minimize()
        if isinstance(node, ir.Intersection):
            return left.intersect(right, max_states=max_states)
        return left.difference(right, max_states=max_states)
    out = DFA()
    index: dict[ir.Node, int] = {}
    todo: deque[ir.Node] = deque()

    def state(term: ir.Node) -> int:
        i = index.get(term)
        if i is None:
            if len(index) >= max_states:
                raise LimitError(
                    f"the automaton of a regular expression needs more than {max_states} states",
                    limit="max_states",
                    value=max_states,
                )
            i = out.add_state(t.nullable(term))
            index[term] = i
            todo.append(term)
        return i

    out.start = state(node)
    while todo:
        check_deadline()
        term = todo.popleft()
        src = index[term]
        trans: Transitions = []
        for lo, hi in _intervals(t.boundaries(term)):
            d = t.deriv(term, lo)
            if d != NOTHING:
                trans.append((lo, hi, state(d)))
        out.transitions[src] = _merge(trans)
    return out


#: Labels printed longer than this become a shared helper rule instead of being repeated inline.
SHARED_LABEL_CHARS = 40


def dfa_rules(
    dfa: DFA, name: str, *, label: Callable[[ir.Ranges], ir.Node] | None = None
) -> tuple[ir.Node, dict[str, ir.Node]]:
    """Right-linear rules for ``dfa``: the node to use in place of the language, and the rules.

    State ``i`` becomes rule ``f"{name}_{i}"`` (``i`` in breadth-first order from the start):
    one alternative ``[class] next`` per target state, plus ``""`` where the state accepts.
    ``label`` turns a transition's code point ranges into the node that reads it (by default
    the character class itself); a label used more than once and longer than
    :data:`SHARED_LABEL_CHARS` when printed becomes one helper rule ``f"{name}_c{k}"``.
    An empty language is :data:`ir.NOTHING` with no rules.
    """
    d = dfa.trim()
    if not any(d.accepting):
        return NOTHING, {}
    make = label or _class_label
    rules: dict[str, ir.Node] = {}
    labels: dict[ir.Ranges, ir.Node] = {}
    uses: dict[ir.Ranges, int] = {}
    for tr in d.transitions:
        for ranges in _labels_of(tr).values():
            uses[ranges] = uses.get(ranges, 0) + 1
    for ranges, count in uses.items():
        node = make(ranges)
        if count > 1 and len(ir.format_node(node)) > SHARED_LABEL_CHARS:
            helper = f"{name}_c{len([r for r in rules if r.startswith(name + '_c')])}"
            rules[helper] = node
            node = ir.Ref(helper)
        labels[ranges] = node
    for s in range(d.size):
        alts: list[ir.Node] = [
            ir.seq(labels[ranges], ir.Ref(f"{name}_{t}")) for t, ranges in _labels_of(d.transitions[s]).items()
        ]
        if d.accepting[s]:
            alts.append(EMPTY)
        rules[f"{name}_{s}"] = ir.alt(*alts) if alts else NOTHING
    return ir.Ref(f"{name}_{d.start}"), rules


def _labels_of(trans: Transitions) -> dict[int, ir.Ranges]:
    """A state's transitions grouped by target: target -> the code point ranges that lead there."""
    by_target: dict[int, list[tuple[int, int]]] = {}
    for lo, hi, t in trans:
        by_target.setdefault(t, []).append((lo, hi))
    return {t: ir.normalize_ranges(by_target[t], ir.MAX_CODEPOINT) for t in sorted(by_target)}


def _class_label(ranges: ir.Ranges) -> ir.Node:
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return ir.lit(chr(ranges[0][0]))
    return ir.CharClass(ranges)


@_no_recursion_error
def language_is_empty(
    node: ir.Node, rules: Mapping[str, ir.Node] | None = None, *, max_states: int = 2_000
) -> bool | None:
    """Whether ``node`` matches nothing; ``None`` when deciding would explore more than ``max_states``."""
    t = CodepointTerms(rules)
    seen = {node}
    todo = [node]  # depth first: a non-empty language usually shows a witness within its length
    while todo:
        check_deadline()
        term = todo.pop()
        if t.nullable(term):
            return False
        for lo, _hi in _intervals(t.boundaries(term)):
            d = t.deriv(term, lo)
            if d != NOTHING and d not in seen:
                if len(seen) >= max_states:
                    return None
                seen.add(d)
                todo.append(d)
    return True
