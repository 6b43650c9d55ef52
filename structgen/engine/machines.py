"""A grammar as machines: one term per recursive rule, everything else inlined.

Rules that cannot reach themselves are regular and are inlined into the terms of the rules that use
them; each rule in a recursive cycle (and the start rule) becomes a *machine*, whose body is a term
in which a reference to a recursive rule is a call symbol and a token atom is a token symbol.
A grammar with no recursion is a single machine with no calls: a plain lazily built DFA.

A *shared* rule (:func:`shared_rules`, on request: ``EngineTuning.shared_calls``) becomes a
machine too: a regular rule that the grammar's sequences follow with many different
continuations (a property's value in an object whose keys come in any order, followed by each
set of keys left). Inlined, every position inside it exists once per continuation (its top term
carries the continuation); called, its positions are over a caller and shared by every caller.
The language is the same either way.

Checks made here, so that the run-time transition system can never loop: machines that cannot
produce any sentence are replaced by the empty language, and left recursion (a machine that can
call itself, directly or not, before reading anything) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, overload

from ..deadline import check_deadline
from ..errors import GrammarError, LimitError
from ..grammar import ir
from ..grammar.emptiness import empty_rules
from ..grammar.grammar import Grammar
from ..grammar.utf8 import class_sequences, mask_of, mask_of_ranges
from .deep import deep_recursion
from .terms import ALT_K, HAS_POSS, HAS_SETOP, NOTHING, REPEAT_K, SEQ_K, SYM_K, TermStore

SYMBOL_BASE = 512


def call_symbol(machine: int) -> int:
    return SYMBOL_BASE + 2 * machine


def token_symbol(atom: int) -> int:
    return SYMBOL_BASE + 2 * atom + 1


def is_call(symbol: int) -> bool:
    return symbol >= SYMBOL_BASE and (symbol - SYMBOL_BASE) % 2 == 0


def symbol_index(symbol: int) -> int:
    return (symbol - SYMBOL_BASE) // 2


@dataclass
class Machines:
    """The terms of a grammar's machines, sharing one :class:`TermStore`."""

    store: TermStore
    names: list[str] = field(default_factory=list)
    body: list[int] = field(default_factory=list)
    start: int = 0
    token_atoms: list[ir.Token] = field(default_factory=list)
    nullable: list[bool] = field(default_factory=list)
    #: for a lazy rule's name: the largest shortest completion after any prefix of it, in bytes
    #: (None: unknown), computed on the grammar without building the rule (budget_bound.py)
    rule_bound: Callable[[object], int | None] = field(default=lambda name: None, repr=False)
    _shortest: list[int | None] | None = None

    @property
    def shortest(self) -> list[int | None]:
        """Shortest sentence of each machine in bytes (computed on first use: it builds terms)."""
        if self._shortest is None:
            self._shortest = _machine_shortest(self.store, self.body)
        return self._shortest

    @property
    def recursive(self) -> bool:
        return len(self.body) > 1 or any(is_call(s) for s in self.store.first_syms(self.body[0]))

    def has_lexeme(self) -> bool:
        """Whether some machine's body holds a greedy lexeme (read from the grammar where the
        bodies are lowered on first use: asking builds none of them)."""
        if isinstance(self.body, _LazyBodies):
            return False  # lazy bodies only for grammars without lexemes (_lazy_facts)
        return any(self.store.flags[b] & HAS_POSS for b in self.body)

    def lower_bodies(self) -> None:
        """Lower every machine's body not lowered yet (a saver needs them all in the term table;
        the caller holds the lock of the constraint's computations: lowering adds terms)."""
        if isinstance(self.body, _LazyBodies):
            for _ in self.body:
                pass


class _Lowering:
    def __init__(
        self,
        grammar: Grammar,
        store: TermStore,
        dead: frozenset[str],
        shared: frozenset[str] = frozenset(),
    ) -> None:
        """``shared``: regular rules to make machines of too (see :func:`shared_rules`)."""
        self.g = grammar
        self.s = store
        self.dead = dead
        machines = grammar.recursive_rules() | (shared - dead)
        self.machine_names = [grammar.start] + sorted(r for r in machines if r != grammar.start)
        self.machine_index = {n: i for i, n in enumerate(self.machine_names)}
        self.shared = shared
        self.inlined: dict[str, int] = {}
        self.atoms: list[ir.Token] = []
        self.atom_index: dict[ir.Token, int] = {}
        self.memo: dict[ir.Node, int] = {}
        self.facts: dict[ir.Node, tuple[bool, bool, bool]] = {}
        self.shortest_memo: dict[ir.Node, int | None] = {}
        self.bound_memo: dict[ir.Node, int | None] = {}
        #: the term of each single byte, once asked (the store interns them: a lookup here saves
        #: the interning for every byte of every literal)
        self.byte_terms: list[int | None] = [None] * 256
        store.expander = self.expand
        store.shortest_of_key = self.key_shortest

    def byte_term(self, b: int) -> int:
        t = self.byte_terms[b]
        if t is None:
            t = self.byte_terms[b] = self.s.bytes_(1 << b)
        return t

    def expand(self, key: object) -> int:
        """Build the term of the rule behind a lazy term."""
        return self.lower(self.g.rules[key])  # type: ignore[index]

    def key_shortest(self, key: object) -> int | None:
        """The shortest length of the pure rule behind a lazy term, from the grammar: token
        budgets need the shortest completion of the whole document at the first mask, and must
        not build every rule to get it (format "date-time": ~6,000 nodes)."""
        return self.shortest_bytes(self.g.rules[key])  # type: ignore[index]

    def _followed(self, name: str) -> ir.Node | None:
        """The body of a rule the analyses below read through (a live inlined rule), else None."""
        if name in self.dead or name in self.machine_index or name not in self.g.rules:
            return None
        return self.g.rules[name]

    def node_facts(self, n: ir.Node) -> tuple[bool, bool, bool]:
        """(pure: no calls, tokens or greedy lexemes below; nullable; has set operations).

        One walk without callbacks (it runs for every rule a machine reaches): leaves are read
        from their parent, and below a greedy lexeme or a token nothing is asked (not pure)."""
        memo = self.facts
        got = memo.get(n)
        if got is not None:
            return got
        leaf = _leaf_facts(n)
        if leaf is not None:
            memo[n] = leaf
            return leaf
        stack: list[tuple[ir.Node, tuple[ir.Node, ...] | None]] = [(n, None)]
        while stack:
            m, kids = stack.pop()
            if kids is not None:
                memo[m] = self._combine_facts(m, kids)
                continue
            if m in memo:
                continue
            closed = ir.closed_facts(m)
            if closed is not None:  # a marked subtree (a format grammar): found when it was marked
                memo[m] = (not closed.lexeme, closed.nullable, closed.setop)
                continue
            cls = m.__class__
            if cls is ir.Ref:
                if m.name in self.dead:  # type: ignore[attr-defined]
                    memo[m] = _PURE_LEAF
                    continue
                body = self._followed(m.name)  # type: ignore[attr-defined]
                if body is None:  # a call of a machine
                    memo[m] = _IMPURE
                    continue
                kids = (body,)
            elif cls is ir.Token or cls is ir.Lexeme:
                memo[m] = _IMPURE
                continue
            else:
                kids = m.children()
            stack.append((m, kids))
            for k in kids:
                if k.__class__ not in _FACT_LEAVES and k not in memo:
                    stack.append((k, None))
        return memo[n]

    def _combine_facts(self, n: ir.Node, kids: tuple[ir.Node, ...]) -> tuple[bool, bool, bool]:
        """The facts of inner node ``n`` (or a followed reference) from its children's."""
        memo = self.facts
        facts = [_leaf_facts(k) if k.__class__ in _FACT_LEAVES else memo[k] for k in kids]
        cls = n.__class__
        if cls is ir.Seq or cls is ir.Alt:
            # one pass, no generators: this runs for most nodes of a grammar
            pure, setop = True, False
            if cls is ir.Seq:
                nullable = True
                for p in facts:
                    pure, nullable, setop = pure and p[0], nullable and p[1], setop or p[2]
            else:
                nullable = False
                for p in facts:
                    pure, nullable, setop = pure and p[0], nullable or p[1], setop or p[2]
            return (pure, nullable, setop)
        if cls is ir.Repeat:
            pure, nul, setop = facts[0]
            return (pure, n.min == 0 or nul or n.max == 0, setop)  # type: ignore[attr-defined]
        if cls is ir.Ref:
            return facts[0]
        if cls is ir.Difference or cls is ir.Intersection:
            (pa, na, _), (pb, nb, _) = facts
            nul = (na and not nb) if cls is ir.Difference else (na and nb)
            return (pa and pb, nul, True)
        raise TypeError(f"unknown node {n!r}")  # pragma: no cover - the kinds with children are above

    def shortest_bytes(self, n: ir.Node) -> int | None:
        """Bytes in the shortest string of a pure node without set operations (``node_facts``);
        None if it has none. One walk without callbacks; literals are read from their parent."""
        memo = self.shortest_memo
        if n in memo:
            return memo[n]
        stack: list[tuple[ir.Node, tuple[ir.Node, ...] | None]] = [(n, None)]
        while stack:
            m, kids = stack.pop()
            if kids is not None:
                memo[m] = self._combine_shortest(m, kids)
                continue
            if m in memo:
                continue
            closed = ir.closed_facts(m)
            if closed is not None and closed.plain:
                memo[m] = closed.shortest
                continue
            cls = m.__class__
            if cls is ir.Seq or cls is ir.Alt:
                kids = m.items  # type: ignore[attr-defined]
            elif cls is ir.Repeat:
                if m.min == 0 or m.max == 0:  # type: ignore[attr-defined]
                    memo[m] = 0
                    continue
                kids = (m.item,)  # type: ignore[attr-defined]
            elif cls is ir.Ref:
                if m.name in self.dead:  # type: ignore[attr-defined]
                    memo[m] = None
                    continue
                kids = (self.g.rules[m.name],)  # type: ignore[attr-defined]
            else:
                memo[m] = _leaf_shortest(m)
                continue
            if not kids:  # the empty sequence or choice
                memo[m] = 0 if cls is ir.Seq else None
                continue
            stack.append((m, kids))
            for k in kids:
                if k.__class__ is not ir.Literal and k not in memo:
                    stack.append((k, None))
        return memo[n]

    def _combine_shortest(self, n: ir.Node, kids: tuple[ir.Node, ...]) -> int | None:
        """The shortest length of inner node ``n`` (or a followed reference) from its children's."""
        memo = self.shortest_memo
        cls = n.__class__
        if cls is ir.Seq:
            total = 0
            for k in kids:
                v = len(k.data) if k.__class__ is ir.Literal else memo[k]  # type: ignore[attr-defined]
                if v is None:
                    return None
                total += v
            return total
        if cls is ir.Alt:
            best: int | None = None
            for k in kids:
                v = len(k.data) if k.__class__ is ir.Literal else memo[k]  # type: ignore[attr-defined]
                if v is not None and (best is None or v < best):
                    best = v
            return best
        k = kids[0]
        v = len(k.data) if k.__class__ is ir.Literal else memo[k]  # type: ignore[attr-defined]
        if cls is ir.Repeat:
            return None if v is None else n.min * v  # type: ignore[attr-defined]
        return v  # a reference: its rule's

    def rule_bound(self, name: object) -> int | None:
        """:meth:`completion_bound` of the pure rule ``name`` (a lazy term's key)."""
        if not isinstance(name, str) or name not in self.g.rules or name in self.dead:
            return None
        return self.completion_bound(self.g.rules[name])

    def completion_bound(self, n: ir.Node) -> int | None:
        """The largest shortest completion, in bytes, after any prefix of a pure node without set
        operations (the grammar-side twin of budget_bound.CompletionBound.term); None if it has
        no sentence."""
        return _bottom_up(n, self.bound_memo, self._bound_children, self._bound_of)

    def _bound_children(self, n: ir.Node) -> tuple[ir.Node, ...]:
        if isinstance(n, ir.Seq):
            return n.items
        if isinstance(n, ir.Alt):
            return tuple(i for i in n.items if self.shortest_bytes(i) is not None)
        if isinstance(n, ir.Repeat):
            unit = self.shortest_bytes(n.item)
            return () if n.max == 0 or unit is None else (n.item,)
        if isinstance(n, ir.Ref):
            return () if n.name in self.dead else (self.g.rules[n.name],)
        return ()

    def _bound_of(self, n: ir.Node, kids: list[int | None]) -> int | None:
        if isinstance(n, (ir.Literal, ir.ByteClass)):
            return self.shortest_bytes(n)
        if isinstance(n, ir.CharClass):
            cps = n.codepoints()
            return _utf8_length(cps[-1][1]) if cps else None  # the longest character bounds its suffixes
        if isinstance(n, ir.Seq):
            r, tail = 0, 0
            for item, bound in zip(reversed(n.items), reversed(kids)):
                short = self.shortest_bytes(item)
                if bound is None or short is None:
                    return None
                r, tail = max(bound + tail, r), tail + short
            return r
        if isinstance(n, ir.Alt):
            return None if not kids or None in kids else max(kids)  # type: ignore[type-var]
        if isinstance(n, ir.Repeat):
            unit = self.shortest_bytes(n.item)
            if n.max == 0 or (unit is None and n.min == 0):
                return 0
            if unit is None:
                return None
            bound = kids[0]
            return None if bound is None else max(n.min * unit, bound + max(n.min - 1, 0) * unit)
        if isinstance(n, ir.Ref):
            return kids[0] if kids else None
        # pragma: no cover - pure nodes without set operations are the kinds above
        raise TypeError(f"no completion bound for {type(n).__name__}")

    def lower(self, n: ir.Node) -> int:
        t = self.memo.get(n)
        if t is not None:
            return t
        check_deadline()
        s = self.s
        cls = n.__class__  # the kinds in the order a translated grammar holds the most of them
        if cls is ir.Ref:
            t = self.ref(n.name)  # type: ignore[attr-defined]
        elif cls is ir.Seq:
            # a literal's bytes go straight into the sequence: lowered on its own and then
            # joined, its chain of terms would be copied once more for the tail (seq keeps
            # sequences right-nested), which for a long literal doubles the terms
            parts: list[int] = []
            memo = self.memo
            for i in n.items:  # type: ignore[attr-defined]
                if i.__class__ is ir.Literal and i not in memo:
                    parts.extend([self.byte_term(b) for b in i.data])  # type: ignore[attr-defined]
                else:
                    parts.append(self.lower(i))
            t = s.seq_list(parts)
        elif cls is ir.Alt:
            t = s.alt([self.lower(i) for i in n.items])  # type: ignore[attr-defined]
        elif cls is ir.Literal:
            t = s.seq_list([self.byte_term(b) for b in n.data])  # type: ignore[attr-defined]
        elif cls is ir.CharClass:
            seqs = class_sequences(n.codepoints())  # type: ignore[attr-defined]
            t = s.alt([s.seq_list([s.bytes_(mask_of(lo, hi)) for lo, hi in seq]) for seq in seqs])
        elif cls is ir.Repeat:
            t = s.repeat(self.lower(n.item), n.min, n.max)  # type: ignore[attr-defined]
        elif cls is ir.ByteClass:
            t = s.bytes_(mask_of_ranges(n.byte_ranges()))  # type: ignore[attr-defined]
        elif cls is ir.Token:
            idx = self.atom_index.get(n)  # type: ignore[call-overload]
            if idx is None:
                idx = self.atom_index[n] = len(self.atoms)  # type: ignore[index]
                self.atoms.append(n)  # type: ignore[arg-type]
            t = s.sym(token_symbol(idx))
        elif cls is ir.Lexeme:
            t = s.poss(self.lower(n.item))  # type: ignore[attr-defined]
        elif cls is ir.Difference:
            t = s.diff(self.lower(n.left), self.lower(n.right))  # type: ignore[attr-defined]
        elif cls is ir.Intersection:
            t = s.and_(self.lower(n.left), self.lower(n.right))  # type: ignore[attr-defined]
        else:  # pragma: no cover
            raise TypeError(f"unknown node {n!r}")
        self.memo[n] = t
        return t

    def machine_body(self, name: str) -> int:
        """The body term of machine ``name``: a shared (regular) rule's is the term it would be
        inlined as (a lazy term where it is pure: built when a generation first reaches it)."""
        if name in self.dead:
            return self.ref(name)
        if name in self.shared:
            return self.inline(name)
        return self.lower(self.g.rules[name])

    def ref(self, name: str) -> int:
        if name in self.dead:
            return NOTHING
        if name in self.machine_index:
            return self.s.sym(call_symbol(self.machine_index[name]))
        return self.inline(name)

    def inline(self, name: str) -> int:
        """The term of rule ``name`` inlined where it is referenced."""
        t = self.inlined.get(name)
        if t is None:
            if name not in self.g.rules:
                raise GrammarError(f"rule {name!r} is an unbound extern; bind it before compiling", rule=name)
            pure, nullable, setop = self.node_facts(self.g.rules[name])  # a live inlined rule's body
            if pure:
                # a regular rule is built when a generation first reaches it
                # (its shortest length is read from the grammar when first asked: key_shortest)
                t = self.s.lazy(name, nullable, HAS_SETOP if setop else 0)
            else:
                t = self.lower(self.g.rules[name])
            self.inlined[name] = t
        return t


#: facts of a pure leaf that derives no empty string; of a call, token or greedy lexeme
_PURE_LEAF = (True, False, False)
_IMPURE = (False, False, False)
#: node kinds whose facts :meth:`_Lowering.node_facts` reads from their parent (the same whether
#: or not the leaf is marked closed)
_FACT_LEAVES = frozenset({ir.Literal, ir.CharClass, ir.ByteClass})


def _leaf_facts(n: ir.Node) -> tuple[bool, bool, bool] | None:
    """The facts of a literal or a character or byte class, else None."""
    cls = n.__class__
    if cls is ir.Literal:
        return (True, not n.data, False)  # type: ignore[attr-defined]
    if cls is ir.CharClass or cls is ir.ByteClass:
        return _PURE_LEAF
    return None


def _leaf_shortest(n: ir.Node) -> int | None:
    """The shortest length of a leaf of a pure node without set operations."""
    if isinstance(n, ir.Literal):
        return len(n.data)
    if isinstance(n, ir.ByteClass):
        return 1 if n.byte_ranges() else None
    if isinstance(n, ir.CharClass):
        cps = n.codepoints()
        return _utf8_length(cps[0][0]) if cps else None
    # pragma: no cover - pure nodes without set operations are the kinds above
    raise TypeError(f"no shortest length for {type(n).__name__}")


def _bottom_up(
    root: ir.Node,
    memo: dict[ir.Node, Any],
    children: Callable[[ir.Node], Sequence[ir.Node]],
    value: Callable[[ir.Node, list[Any]], Any],
) -> Any:
    """``value(n, [values of children(n)])`` of ``root``, every node's value remembered in ``memo``,
    computed without recursion: a long literal's rules are chains thousands of nodes deep, which
    the analyses read through rule references."""
    if root in memo:
        return memo[root]
    stack: list[tuple[ir.Node, Sequence[ir.Node] | None]] = [(root, None)]
    while stack:
        n, kids = stack.pop()
        if kids is None:
            if n in memo:
                continue
            kids = children(n)
            if not kids:  # a leaf (or a node read as one): no second visit
                memo[n] = value(n, [])
                continue
            stack.append((n, kids))
            stack.extend((k, None) for k in kids if k not in memo)
        elif n not in memo:
            memo[n] = value(n, [memo[k] for k in kids])
    return memo[root]


def shared_rules(grammar: Grammar, min_continuations: int) -> frozenset[str]:
    """The regular rules worth a machine of their own: each is followed, in the grammar's
    sequences, by at least ``min_continuations`` different continuations (the items after it:
    a property's value in an object whose keys come in any order is followed by each set of
    keys left). Inlined, a position inside such a rule is a different top term for each
    continuation; called, it is one position over a caller for all of them (ahead.py
    precomputes it once). Left out: the start rule, plain literals, and rules whose every
    sentence does not end with a literal (:func:`_ends_closed`: a number may end after any
    digit, and a top that may end over a caller is walked with that caller at first use, once
    per caller configuration: on ``tree``, 14 walks along its stream became 34). ``_build``
    also leaves out rules that may match nothing. None where ``min_continuations`` is 0, and
    none in a grammar with a greedy lexeme: a lexeme next to a call needs the exit summaries of
    lexeme_frames.py, which cost far more than the positions saved.

    Sequence heads (``, "key": value`` before each set of keys left) were tried as machines
    too: their common bytes (``, "``) then start one stack per head, and configurations of
    several stacks are walked whole (on ``tool_union``, 396 of them against 14)."""
    if min_continuations <= 0:
        return frozenset()
    recursive = grammar.recursive_rules()
    rules = grammar.rules
    continuations: dict[str, set[tuple[ir.Node, ...]]] = {}
    for body in rules.values():
        for n in ir.iter_distinct(body, skip_closed=True):
            closed = ir.closed_facts(n)
            if isinstance(n, ir.Lexeme) or (closed is not None and closed.lexeme):
                return frozenset()
            if isinstance(n, ir.Seq):
                items = n.items
                for i in range(len(items) - 1):
                    item = items[i]
                    if isinstance(item, ir.Ref) and item.name not in recursive:
                        continuations.setdefault(item.name, set()).add(items[i + 1 :])
    closed: dict[str, bool] = {}
    return frozenset(
        name
        for name, after in continuations.items()
        if len(after) >= min_continuations
        and name != grammar.start
        and name in rules
        and not isinstance(rules[name], ir.Literal)
        and _ends_closed(ir.Ref(name), rules, recursive, closed)
    )


def _ends_closed(node: ir.Node, rules: Any, recursive: frozenset[str], memo: dict[str, bool]) -> bool:
    """Whether every sentence of ``node`` ends with a non-empty literal (a string's closing
    quote, an array's bracket), read through references to regular rules: where it holds,
    a rule's positions before its end are rarely ones where it may also end (a number may end
    after any digit). Answers are remembered per rule; without recursion deeper than the
    grammar's nesting of sequences and choices at their ends."""
    if isinstance(node, ir.Literal):
        return bool(node.data)
    if isinstance(node, ir.Seq):
        return bool(node.items) and _ends_closed(node.items[-1], rules, recursive, memo)
    if isinstance(node, ir.Alt):
        return bool(node.items) and all(_ends_closed(i, rules, recursive, memo) for i in node.items)
    if isinstance(node, ir.Ref):
        name = node.name
        if name in recursive or name not in rules:
            return False
        if name not in memo:
            memo[name] = False  # a rule that ends in itself is not closed
            memo[name] = _ends_closed(rules[name], rules, recursive, memo)
        return memo[name]
    return False


def build_machines(grammar: Grammar, store: TermStore | None = None, *, shared_calls: int = 0) -> Machines:
    """Lower ``grammar`` to machines, trimming unproductive ones and refusing left recursion.
    ``shared_calls``: make a machine of every regular rule followed by at least this many
    different continuations (:func:`shared_rules`; 0: none)."""
    if grammar.externs:
        raise GrammarError(f"unbound externs {sorted(grammar.externs)}; bind them before compiling")
    return _build(grammar, store, shared_calls)


@deep_recursion
def _build(grammar: Grammar, store: TermStore | None, shared_calls: int = 0, lazy_bodies: bool = True) -> Machines:
    try:
        # rules that derive nothing, found on the grammar: an inlined regular rule is a lazy term,
        # which the machine-level check below cannot see into without building it
        dead = empty_rules(grammar)
        shared = shared_rules(grammar, shared_calls) - dead
        if shared:
            # a rule that may match nothing stays inlined: its walk over the hole would read the
            # caller's bytes at once (EngineTuning.relative_nullable)
            facts = _Lowering(grammar, TermStore(), dead)
            shared = frozenset(n for n in shared if not facts.node_facts(grammar.rules[n])[1])
        if lazy_bodies and len(grammar.recursive_rules() | shared) > 0:
            store = TermStore() if store is None else store
            low = _Lowering(grammar, store, dead, shared)
            found = _lazy_facts(low)
            if found is not None:
                nullable, graph = found
                _refuse_left_recursion(graph, low.machine_names)
                bodies = _LazyBodies(low)
                bodies.lower(0)  # the start machine's: the first configuration is made of it
                m = Machines(store, list(low.machine_names), bodies, 0, [], rule_bound=low.rule_bound)  # type: ignore[arg-type]
                m.nullable = nullable
                return m
        while True:
            store = TermStore() if store is None else store
            low = _Lowering(grammar, store, dead, shared)
            bodies = [low.machine_body(n) for n in low.machine_names]
            productive = _productive(store, bodies)
            newly_dead = frozenset(n for n, p in zip(low.machine_names, productive) if not p) - dead
            if not newly_dead:
                break
            dead = dead | newly_dead
            store = None  # terms lowered with a machine taken for productive: start afresh
    except RecursionError:
        raise LimitError("grammar nested too deeply for the engine", limit="max_nesting") from None
    m = Machines(store, list(low.machine_names), bodies, 0, list(low.atoms), rule_bound=low.rule_bound)
    m.nullable = _machine_nullable(store, bodies)
    _refuse_left_recursion({i: _first_calls(store, b, m.nullable)[0] for i, b in enumerate(bodies)}, m.names)
    return m


class _LazyBodies(Sequence[int]):
    """The body terms of a grammar's machines, each lowered when first asked for (a generation
    calls the machine, or a saver needs them all): a schema's object with keys in any order has
    a machine per set of keys left, and the first mask reads the start machine's alone.

    Made only where :func:`_lazy_facts` found the machines' nullability and first calls on the
    grammar, and every machine productive: what the eager lowering finds on the terms."""

    def __init__(self, low: _Lowering) -> None:
        self._low = low
        self._terms: list[int | None] = [None] * len(low.machine_names)

    def __len__(self) -> int:
        return len(self._terms)

    @overload
    def __getitem__(self, i: int) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> list[int]: ...

    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._terms)))]
        t = self._terms[i]
        if t is None:
            t = self._terms[i] = _lower_body(self._low, self._low.machine_names[i])
        return t

    def __iter__(self) -> Iterator[int]:
        for i in range(len(self._terms)):
            yield self[i]

    def lower(self, i: int) -> None:
        """Lower machine ``i``'s body now."""
        self[i]

    def built(self) -> int:
        """How many bodies are lowered so far."""
        return sum(t is not None for t in self._terms)


@deep_recursion
def _lower_body(low: _Lowering, name: str) -> int:
    try:
        return low.machine_body(name)
    except RecursionError:
        raise LimitError("grammar nested too deeply for the engine", limit="max_nesting") from None


#: (machines that may come first, whether it may match nothing) of an empty node
_NO_CALLS: tuple[frozenset[int], bool] = (frozenset(), False)


class _Blocked(Exception):
    """A node the grammar-side facts do not cover (a token, a greedy lexeme, a set operation)."""


def _lazy_facts(low: _Lowering) -> tuple[list[bool], dict[int, set[int]]] | None:
    """(each machine's nullability, the machines each may call before reading anything) found on
    the grammar as :func:`_machine_nullable` and :func:`_first_calls` find them on the lowered
    bodies; None where the grammar holds a token, a greedy lexeme or a set operation (a token's
    atom number follows the order of lowering; the emptiness of a set operation, on which the
    machines' productivity may hang, is only known on terms).

    Without those, a node is empty exactly when the grammar's structure says so (the rules
    ``empty_rules`` found, an empty class, a sequence with an empty part...), which the lowering
    turns into NOTHING and the term-side walks never enter; this walk skips the same nodes."""
    if not low.g.plain:
        return None
    names, index, rules, dead = low.machine_names, low.machine_index, low.g.rules, low.dead
    empty_memo: dict[ir.Node, bool] = {}

    def empty(n: ir.Node) -> bool:
        r = empty_memo.get(n)
        if r is None:
            r = empty_memo[n] = _node_empty(n, dead, empty_memo)
        return r

    nullable = [False] * len(names)
    facts = (index, rules, dead, nullable)
    # a dead machine's body is NOTHING: no calls, not nullable
    live = [i for i, n in enumerate(names) if n not in dead]
    try:
        while True:
            memo: dict[ir.Node, tuple[frozenset[int], bool]] = {}
            changed = False
            for i in live:
                if not nullable[i] and _calls_of(rules[names[i]], facts, memo, empty)[1]:
                    nullable[i] = changed = True
            if not changed:
                break
        graph: dict[int, set[int]] = {i: set() for i in range(len(names))}
        for i in live:
            graph[i] = set(_calls_of(rules[names[i]], facts, memo, empty)[0])
    except _Blocked:  # pragma: no cover - a plain grammar has none
        return None
    return nullable, graph


def _node_empty(n: ir.Node, dead: frozenset[str], memo: dict[ir.Node, bool]) -> bool:
    """Whether ``n`` has no sentence, for nodes without tokens, lexemes or set operations, given
    the rules that derive nothing (``dead``): every other rule derives something, so references
    are not followed. Without recursion: bodies may be deep."""
    stack: list[tuple[ir.Node, bool]] = [(n, False)]
    while stack:
        m, expanded = stack.pop()
        if m in memo and not expanded:
            continue
        cls = m.__class__
        if cls is ir.Ref:
            memo[m] = m.name in dead  # type: ignore[attr-defined]
            continue
        if cls is ir.Literal:
            memo[m] = False
            continue
        if cls is ir.CharClass:
            memo[m] = not m.codepoints()  # type: ignore[attr-defined]
            continue
        if cls is ir.ByteClass:
            memo[m] = not m.byte_ranges()  # type: ignore[attr-defined]
            continue
        closed = ir.closed_facts(m)
        if closed is not None:
            if not closed.plain:
                raise _Blocked
            memo[m] = closed.shortest is None
            continue
        if cls is ir.Seq or cls is ir.Alt:
            kids = m.items  # type: ignore[attr-defined]
        elif cls is ir.Repeat:
            if m.min == 0 or m.max == 0:  # type: ignore[attr-defined]
                memo[m] = False
                continue
            kids = (m.item,)  # type: ignore[attr-defined]
        else:
            raise _Blocked
        if not expanded:
            stack.append((m, True))
            stack.extend((k, False) for k in kids if k not in memo)
            continue
        if cls is ir.Alt:
            memo[m] = all(memo[k] for k in kids)
        else:  # a sequence, or a repetition that needs its item
            memo[m] = any(memo[k] for k in kids)
    return memo[n]


def _calls_of(
    n: ir.Node,
    facts: tuple[dict[str, int], Any, frozenset[str], list[bool]],
    memo: dict[ir.Node, tuple[frozenset[int], bool]],
    empty: Callable[[ir.Node], bool],
) -> tuple[frozenset[int], bool]:
    """(the machines ``n`` may call before reading anything, a call of a nullable machine passed
    over; whether ``n`` may match nothing): :func:`_first_calls` on the grammar, ``facts`` being
    (machine indices by name, the rules, the rules that derive nothing, which machines are
    nullable). References to other rules are read through (the lowering inlines them). An empty
    node has neither (the lowering makes it NOTHING); only a sequence's answer can change by it
    (a choice's options and a repetition's unit answer for themselves), and only where it is
    not (none, False) already: the emptiness walk runs for few sequences."""
    got = memo.get(n)
    if got is not None:
        return got
    index, rules, dead, nullable = facts
    cls = n.__class__
    if cls is ir.Literal:
        r = (frozenset(), not n.data)  # type: ignore[attr-defined]
    elif cls is ir.Ref:
        name = n.name  # type: ignore[attr-defined]
        i = index.get(name)
        if name in dead:
            r = _NO_CALLS
        elif i is not None:
            r = (frozenset((i,)), nullable[i])
        else:
            r = _calls_of(rules[name], facts, memo, empty)
    elif cls is ir.CharClass or cls is ir.ByteClass:
        r = _NO_CALLS
    else:
        closed = ir.closed_facts(n)
        if closed is not None:  # no reference below; a plain grammar's marks are plain
            r = _NO_CALLS if closed.shortest is None else (frozenset(), closed.nullable)
        elif cls is ir.Seq:
            calls: frozenset[int] = frozenset()
            nul = True
            for item in n.items:  # type: ignore[attr-defined]
                c, nul = _calls_of(item, facts, memo, empty)
                if c:
                    calls = calls | c
                if not nul:
                    break
            r = (calls, nul) if (calls or nul) and not empty(n) else _NO_CALLS
        elif cls is ir.Alt:
            calls = frozenset()
            nul = False
            for item in n.items:  # type: ignore[attr-defined]
                c, x = _calls_of(item, facts, memo, empty)
                if c:
                    calls = calls | c
                nul = nul or x
            r = (calls, nul)
        elif cls is ir.Repeat:
            if n.max == 0:  # type: ignore[attr-defined]
                r = (frozenset(), True)
            else:
                c, x = _calls_of(n.item, facts, memo, empty)  # type: ignore[attr-defined]
                r = (c, x or n.min == 0)  # type: ignore[attr-defined]
        else:  # pragma: no cover - a plain grammar has no other kind
            raise _Blocked
    memo[n] = r
    return r


def _first_calls(store: TermStore, t: int, nullable_calls: list[bool]) -> tuple[set[int], bool]:
    """(machines ``t`` can call before reading anything, whether ``t`` can match nothing), where a
    call of a nullable machine may be passed over."""
    k = store.kind[t]
    if k == SYM_K:
        sym = store.a[t]
        if is_call(sym):
            m = symbol_index(sym)
            return {m}, nullable_calls[m]
        return set(), False
    if k == SEQ_K:
        first, nul = _first_calls(store, store.a[t], nullable_calls)
        if nul:
            rest, nul = _first_calls(store, store.b[t], nullable_calls)  # type: ignore[arg-type]
            first = first | rest
        return first, nul
    if k == ALT_K:
        out: set[int] = set()
        nul = False
        for u in store.b[t]:  # type: ignore[union-attr]
            f, n = _first_calls(store, u, nullable_calls)
            out |= f
            nul = nul or n
        return out, nul
    if k == REPEAT_K:
        f, n = _first_calls(store, store.a[t], nullable_calls)
        return f, n or store.b[t][0] == 0  # type: ignore[index]
    return set(), store.nullable[t]


def _machine_nullable(store: TermStore, bodies: list[int]) -> list[bool]:
    nullable = [False] * len(bodies)
    changed = True
    while changed:
        changed = False
        for i, b in enumerate(bodies):
            if not nullable[i] and _first_calls(store, b, nullable)[1]:
                nullable[i] = changed = True
    return nullable


def _productive(store: TermStore, bodies: list[int]) -> list[bool]:
    """Machines that derive at least one sentence (a least fixpoint over call symbols)."""
    prod = [False] * len(bodies)
    memo: dict[int, bool] = {}

    def term_productive(t: int) -> bool:
        r = memo.get(t)
        if r is None:
            r = memo[t] = _term_productive(t)
        return r

    def _term_productive(t: int) -> bool:
        k = store.kind[t]
        if t == NOTHING:
            return False
        if k == SYM_K:
            sym = store.a[t]
            return prod[(sym - SYMBOL_BASE) // 2] if is_call(sym) else True
        if k == SEQ_K:
            # along the right-nested spine without recursion (a long literal is a long spine),
            # every suffix remembered
            spine = _spine(store, t)
            r = term_productive(spine[-1])
            for u in reversed(spine[:-1]):
                r = r and term_productive(store.a[u])
                memo[u] = r
            return r
        if k == ALT_K:
            return any(term_productive(u) for u in store.b[t])  # type: ignore[union-attr]
        if k == REPEAT_K:
            return store.b[t][0] == 0 or term_productive(store.a[t])  # type: ignore[index]
        return not store.is_empty(t)

    changed = True
    while changed:
        changed = False
        memo.clear()  # answers may change once a machine is known productive
        for i, b in enumerate(bodies):
            if not prod[i] and term_productive(b):
                prod[i] = changed = True
    return prod


def _refuse_left_recursion(graph: dict[int, set[int]], names: list[str]) -> None:
    """Refuse a cycle in ``graph`` (machine -> the machines it may call before reading anything)."""
    state: dict[int, int] = {}
    for root in graph:
        if state.get(root):
            continue
        stack = [(root, iter(sorted(graph[root])))]
        state[root] = 1
        path = [root]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                path_names = " -> ".join(names[i] for i in cycle)
                raise GrammarError(
                    f"left recursion ({path_names}) is not supported by the mask engine; rewrite it with repetition",
                    rule=names[nxt],
                )
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph[nxt]))))


def _spine(store: TermStore, t: int) -> list[int]:
    """The sequence terms along ``t``'s right-nested spine, then the last tail (not a sequence)."""
    out = []
    while store.kind[t] == SEQ_K:
        out.append(t)
        t = store.b[t]  # type: ignore[assignment]
    out.append(t)
    return out


def _machine_shortest(store: TermStore, bodies: list[int]) -> list[int | None]:
    """Shortest sentence length of each machine in bytes (Bellman-Ford style fixpoint)."""
    inf = float("inf")
    best: list[float] = [inf] * len(bodies)
    memo: dict[int, float] = {}

    def length(t: int) -> float:
        r = memo.get(t)
        if r is None:
            r = memo[t] = _length(t)
        return r

    def _length(t: int) -> float:
        k = store.kind[t]
        if k == SYM_K:
            sym = store.a[t]
            return best[(sym - SYMBOL_BASE) // 2] if is_call(sym) else 1  # a token atom: one token
        if k == SEQ_K:  # along the spine, as in _productive
            spine = _spine(store, t)
            total = length(spine[-1])
            for u in reversed(spine[:-1]):
                total += length(store.a[u])
                memo[u] = total
            return total
        if k == ALT_K:
            return min(length(u) for u in store.b[t])  # type: ignore[union-attr]
        if k == REPEAT_K:
            lo = store.b[t][0]  # type: ignore[index]
            return 0 if lo == 0 else lo * length(store.a[t])
        r = store.shortest(t)
        return inf if r is None else r

    for _ in range(len(bodies) + 1):
        changed = False
        memo.clear()
        for i, b in enumerate(bodies):
            v = length(b)
            if v < best[i]:
                best[i] = v
                changed = True
        if not changed:
            break
    return [None if v == inf else int(v) for v in best]


def _utf8_length(codepoint: int) -> int:
    return 1 if codepoint < 0x80 else 2 if codepoint < 0x800 else 3 if codepoint < 0x10000 else 4
