"""GLRM's meaning: parsed scopes (:mod:`.glrm_syntax`) to a :class:`~structgen.grammar.Grammar`.

How GLRM maps onto the grammar form:

* ``t NAME = e;`` becomes rule ``NAME`` holding the regular body ``e``. From ``nt`` context a
  reference is one greedy lexeme, ``Lexeme(Ref(NAME))``; inside another ``t`` it is a plain
  ``Ref`` (part of that lexeme). ``internal t`` rules may only be used inside ``t`` bodies.
* In ``nt`` context a literal is exact (one string cannot be extended); an anonymous regex, and
  ``a - b`` / ``a & b`` (whose operands are read as terminal expressions), are one greedy lexeme
  each. A lexeme whose language is prefix-free needs no ``Lexeme`` node: it is left plain.
* ``ignore W;`` lets ``W*`` (greedy lexemes) stand before every lexical atom of the scope - a
  terminal reference, a literal, a regex, a set operation, a child or extern grammar, an extern
  token - and after the end of the scope's start. Nothing is inserted inside terminals.
* ``grammar g { ... }`` blocks are flattened: their rules are named ``g::rule`` and the block
  itself is rule ``g`` (its start, plus its trailing ignore). Names are scope-local, as in glrmask.
* An ``nt`` FA becomes one rule per state (``NAME@STATE``); a ``t`` FA becomes one regular
  expression by state elimination.
* ``extern token X`` is ``Token(name="X")`` and ``extern grammar X`` is ``Ref("X")``; both are
  listed in :attr:`Grammar.externs` until :meth:`Grammar.bind` fills them.

Refused although glrmask 0.5.0 compiles it: ``x - e`` where ``x`` names a nonterminal or a child
grammar. glrmask then does not compute a language difference (``x - "aa"`` keeps ``aa``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import GrammarError, LimitError
from ..limits import GrammarLimits
from . import ir
from .glrm_analysis import Shapes
from .glrm_lex import Lexer
from .glrm_separated import NonEmpty, node_nullable, prepare_items, separated
from .glrm_syntax import (
    EXTERN_GRAMMAR,
    EXTERN_TOKEN,
    GRAMMAR,
    INTERNAL,
    NT,
    EAlt,
    EDiff,
    EEps,
    EFa,
    EInter,
    ELit,
    ERef,
    ERegex,
    ERepeat,
    ESep,
    ESeq,
    Expr,
    Scope,
    T,
)
from .grammar import Grammar

#: Name of the start rule made when the file's start needs wrapping (ignore, extern token start).
START_WRAPPER = "::start"
#: Bound on the size of the expression a ``t`` FA turns into.
MAX_FA_EXPRESSION_NODES = 200_000

# expression contexts
_NT_CTX, _T_CTX, _FA_EDGE_CTX = 0, 1, 2


@dataclass
class _Def:
    kind: str
    qualified: str
    scope: Scope
    offset: int
    bodies: list[Expr] = field(default_factory=list)
    child: Scope | None = None


class _Lowering:
    def __init__(self, top: Scope, lexer: Lexer, limits: GrammarLimits) -> None:
        self.top = top
        self.lx = lexer
        self.limits = limits
        self.tables: dict[tuple[str, ...], dict[str, _Def]] = {}
        self.scopes: list[Scope] = []
        self.all_names: dict[str, list[Scope]] = {}
        self.rules: dict[str, ir.Node] = {}
        self.order: dict[str, tuple[float, int, int]] = {}  # rules are listed in source order
        self.owner = ("", 0)  # the rule being lowered (name, source offset), for helper rules
        self.helper_count: dict[str, int] = {}
        self.null: dict[str, bool] = {}  # which rules match the empty string
        self.regex_cache: dict[tuple[str, str, bool], ir.Node] = {}
        self.pending_twins: list[str] = []
        self.non_empty = NonEmpty(self.rule_nullable, self.twin)
        self.externs: dict[str, str] = {}
        self.ignore_node: dict[tuple[str, ...], ir.Node | None] = {}
        self.shapes = Shapes(self.rules)

    def put(self, name: str, body: ir.Node, key: tuple[float, int, int]) -> None:
        self.rules[name] = body
        self.order.setdefault(name, key)

    def ordered_rules(self) -> dict[str, ir.Node]:
        return dict(sorted(self.rules.items(), key=lambda item: self.order[item[0]]))

    def error(self, message: str, offset: int | None = None) -> GrammarError:
        if offset is None:
            return GrammarError(message)
        return self.lx.error(message, offset)

    # -- symbol tables --------------------------------------------------------------------

    def collect(self) -> None:
        stack = [self.top]
        while stack:
            scope = stack.pop()
            self.scopes.append(scope)
            table: dict[str, _Def] = {}
            self.tables[scope.path] = table
            for d in scope.decls:
                qualified = "::".join(scope.path + (d.name,))
                old = table.get(d.name)
                if d.kind in (GRAMMAR, EXTERN_TOKEN, EXTERN_GRAMMAR) or (
                    old and old.kind in (GRAMMAR, EXTERN_TOKEN, EXTERN_GRAMMAR)
                ):
                    if old is not None:
                        raise self.error(
                            f"subgrammar '{d.name}' conflicts with another definition in {scope.display}", d.offset
                        )
                    if d.kind != GRAMMAR:
                        qualified = d.name  # externs live at the top level under their own name
                        self.externs[d.name] = "token" if d.kind == EXTERN_TOKEN else "grammar"
                    table[d.name] = _Def(d.kind, qualified, scope, d.offset, child=d.scope)
                    if d.scope is not None:
                        stack.append(d.scope)
                elif old is None:
                    table[d.name] = _Def(d.kind, qualified, scope, d.offset, [d.body])  # type: ignore[list-item]
                elif old.kind != d.kind:
                    raise self.error(f"definition '{d.name}' has conflicting kinds in {scope.display}", d.offset)
                else:
                    old.bodies.append(d.body)  # type: ignore[arg-type]
                self.all_names.setdefault(d.name, []).append(scope)
        self.scopes.sort(key=lambda s: (len(s.path), s.offset))

    def resolve(self, scope: Scope, name: str, offset: int, terminal: bool) -> _Def:
        found = self.tables[scope.path].get(name)
        if found is not None:
            return found
        elsewhere = [s for s in self.all_names.get(name, []) if s is not scope]
        if elsewhere:
            raise self.error(
                f"definition '{name}' is not visible in {scope.display}; definitions are scope-local", offset
            )
        if terminal:
            raise self.error(f"terminal refers to {name}, which is not a terminal rule", offset)
        raise self.error(f"unknown rule referenced from nonterminal context: {name}", offset)

    # -- terminals ------------------------------------------------------------------------

    def lower_terminals(self) -> None:
        for scope in self.scopes:
            for d in self.tables[scope.path].values():
                if d.kind in (T, INTERNAL):
                    self.owner = (d.qualified, d.offset)
                    parts = [
                        self.fa_regular(b, scope) if isinstance(b, EFa) else self.node(b, scope, _T_CTX)
                        for b in d.bodies
                    ]
                    self.put(d.qualified, ir.alt(*parts), (d.offset, 0, 0))
        self.check_terminal_cycles()

    def check_terminal_cycles(self) -> None:
        terminals = {q for q, body in self.rules.items()}
        graph = {q: sorted(ir.refs(body) & terminals) for q, body in self.rules.items()}
        state: dict[str, int] = {}  # 1 on the DFS path, 2 done
        for root in sorted(graph):
            if root in state:
                continue
            stack: list[tuple[str, int]] = [(root, 0)]
            state[root] = 1
            while stack:
                v, i = stack.pop()
                if i < len(graph[v]):
                    stack.append((v, i + 1))
                    w = graph[v][i]
                    if state.get(w) == 1:
                        raise self.error(f"cycle detected in terminal rule references: {w.split('::')[-1]}")
                    if w not in state:
                        state[w] = 1
                        stack.append((w, 0))
                else:
                    state[v] = 2

    def lexeme(self, node: ir.Node) -> ir.Node:
        """``node`` as one greedy lexeme; a prefix-free language needs no greedy wrapper.

        glrmask matches the empty string of a nullable terminal wherever it stands (greediness
        only rules its non-empty matches), so a nullable lexeme gets an explicit empty choice.
        """
        if self.shapes.of(node).prefix_free:
            return node
        if node_nullable(node, self.rule_nullable):
            return ir.alt(ir.EMPTY, ir.Lexeme(node))
        return ir.Lexeme(node)

    # -- ignore ---------------------------------------------------------------------------

    def lower_ignores(self) -> None:
        for scope in self.scopes:
            lexemes = []
            for name, offset in scope.ignores:
                d = self.tables[scope.path].get(name)
                if d is None:
                    raise self.error(
                        f"ignore terminal '{name}' is not defined in {scope.display}; definitions are scope-local",
                        offset,
                    )
                if d.kind != T:
                    raise self.error(f"ignore '{name}' in {scope.display} must name a local emitting terminal", offset)
                lexemes.append(self.lexeme(ir.Ref(d.qualified)))
            self.ignore_node[scope.path] = ir.star(ir.alt(*lexemes)) if lexemes else None

    def with_ignore(self, scope: Scope, atom: ir.Node) -> ir.Node:
        ign = self.ignore_node.get(scope.path)
        return atom if ign is None else ir.seq(ign, atom)

    def check_lexer_groups(self) -> None:
        for scope in self.scopes:
            assigned: set[str] = set()
            for group in scope.lexer_groups:
                for kind, value, offset in group.items:
                    if kind != "name":
                        continue
                    d = self.tables[scope.path].get(str(value))
                    if d is None or d.kind != T:
                        raise self.error(f"lexer group references unknown or non-emitting terminal '{value}'", offset)
                    if value in assigned:
                        raise self.error(f"terminal '{value}' is assigned to more than one lexer group", offset)
                    assigned.add(str(value))

    # -- nonterminals and scopes ----------------------------------------------------------

    def lower_nonterminals(self) -> None:
        for scope in self.scopes:
            for d in self.tables[scope.path].values():
                if d.kind == NT:
                    self.owner = (d.qualified, d.offset)
                    parts = []
                    for k, b in enumerate(d.bodies):
                        if isinstance(b, EFa):
                            parts.append(self.fa_rules(b, scope, d.qualified, k, d.offset))
                        else:
                            parts.append(self.node(b, scope, _NT_CTX))
                    self.put(d.qualified, ir.alt(*parts), (d.offset, 0, 0))
            if scope.path:
                self.put("::".join(scope.path), self.scope_body(scope), (scope.offset, 0, 0))

    def start_atom(self, scope: Scope) -> ir.Node:
        if not scope.starts:
            raise self.error("grammar has no 'start' declaration")
        name, offset = scope.starts[0]
        d = self.tables[scope.path].get(name)
        if d is None:
            raise self.error(f"start '{name}' is not defined in {scope.display}; definitions are scope-local", offset)
        if d.kind == INTERNAL:
            raise self.error(f"start '{name}' in {scope.display} is an internal terminal", offset)
        if d.kind == NT:
            return ir.Ref(d.qualified)
        return self.reference(d, scope, offset, _NT_CTX)

    def scope_body(self, scope: Scope) -> ir.Node:
        body = self.start_atom(scope)
        ign = self.ignore_node.get(scope.path)
        return body if ign is None else ir.seq(body, ign)

    def top_start(self) -> str:
        body = self.scope_body(self.top)
        if isinstance(body, ir.Ref):
            return body.name
        if isinstance(body, ir.Lexeme) and isinstance(body.item, ir.Ref):
            return body.item.name  # the whole input is one lexeme: exactly the terminal's language
        self.put(START_WRAPPER, body, (float("inf"), 0, 0))
        return START_WRAPPER

    # -- expressions ----------------------------------------------------------------------

    def reference(self, d: _Def, scope: Scope, offset: int, ctx: int) -> ir.Node:
        """A resolved name used in ``nt`` context."""
        if d.kind == NT:
            return ir.Ref(d.qualified)
        if d.kind == T:
            return self.with_ignore(scope, self.lexeme(ir.Ref(d.qualified)))
        if d.kind == INTERNAL:
            raise self.error(
                f"internal-only terminal {d.qualified.split('::')[-1]} referenced from nonterminal context", offset
            )
        if d.kind == EXTERN_TOKEN:
            return self.with_ignore(scope, ir.Token(name=d.qualified))
        return self.with_ignore(scope, ir.Ref(d.qualified))  # a child or extern grammar

    def terminal_reference(self, d: _Def, name: str, offset: int) -> ir.Node:
        if d.kind in (T, INTERNAL):
            return ir.Ref(d.qualified)
        if d.kind in (EXTERN_TOKEN, EXTERN_GRAMMAR):
            raise self.error(f"terminal refers to extern {name}; an extern cannot be part of a terminal", offset)
        raise self.error(f"terminal refers to {name}, which is not a terminal rule", offset)

    def regex(self, e: ERegex) -> ir.Node:
        key = (e.pattern, e.flags, e.raw_bytes)
        node = self.regex_cache.get(key)
        if node is None:
            node = self.regex_cache[key] = self.read_regex(e)
        return node

    def read_regex(self, e: ERegex) -> ir.Node:
        from .regex import (
            regex_to_node,  # the regex reader is optional until it is on main
        )

        try:
            return regex_to_node(
                e.pattern, flavor="glrm-bytes" if e.raw_bytes else "glrm", flags=e.flags, limits=self.limits
            )
        except LimitError:
            raise
        except GrammarError as exc:
            raise self.error(f"invalid regex: {exc}", e.offset) from exc

    def node(self, root: Expr, scope: Scope, root_ctx: int) -> ir.Node:
        """The form of expression ``root`` in a context (iterative post-order)."""
        done: dict[tuple[int, int], ir.Node] = {}
        stack: list[tuple[Expr, int, bool]] = [(root, root_ctx, False)]
        while stack:
            e, ctx, expanded = stack.pop()
            kids = _children(e)
            if kids and not expanded:
                if isinstance(e, EDiff) and ctx != _T_CTX:
                    self.check_difference_operand(e, scope)
                if isinstance(e, ESep) and ctx == _T_CTX:
                    raise self.error("a separated sequence can't appear inside a terminal rule", e.offset)
                kid_ctx = _T_CTX if isinstance(e, (EDiff, EInter)) else ctx
                stack.append((e, ctx, True))
                stack.extend((k, kid_ctx, False) for k in kids)
                continue
            kid_ctx = _T_CTX if isinstance(e, (EDiff, EInter)) else ctx
            parts = [done[(id(k), kid_ctx)] for k in kids]
            done[(id(e), ctx)] = self.combine(e, ctx, parts, scope)
        return done[(id(root), root_ctx)]

    def check_difference_operand(self, e: EDiff, scope: Scope) -> None:
        left = e.left
        if isinstance(left, ERef):
            d = self.tables[scope.path].get(left.name)
            if d is not None and d.kind in (NT, GRAMMAR):
                what = "nonterminal" if d.kind == NT else "grammar"
                raise self.error(
                    f"'{left.name} - ...' subtracts from a {what}; glrmask 0.5.0 does not compute a language "
                    f"difference there (it keeps strings it should remove), so structgen refuses it: "
                    f"subtract from terminal-level expressions only",
                    e.offset,
                )

    def combine(self, e: Expr, ctx: int, parts: list[ir.Node], scope: Scope) -> ir.Node:
        terminal = ctx == _T_CTX
        if isinstance(e, ELit):
            atom: ir.Node = ir.Literal(e.data)
            return atom if terminal else self.with_ignore(scope, atom)
        if isinstance(e, ERegex):
            if ctx == _FA_EDGE_CTX:
                raise self.error("raw regex literals are only allowed in terminal (`t`) rules", e.offset)
            atom = self.regex(e)
            return atom if terminal else self.with_ignore(scope, self.lexeme(atom))
        if isinstance(e, EEps):
            return ir.EMPTY
        if isinstance(e, ERef):
            d = self.resolve(scope, e.name, e.offset, terminal)
            return self.terminal_reference(d, e.name, e.offset) if terminal else self.reference(d, scope, e.offset, ctx)
        if isinstance(e, ESeq):
            return ir.seq(*parts)
        if isinstance(e, EAlt):
            return ir.alt(*parts)
        if isinstance(e, ERepeat):
            return ir.repeat(parts[0], e.lo, e.hi)
        if isinstance(e, (EDiff, EInter)):
            if isinstance(e, EDiff):
                op: ir.Node = ir.Difference(parts[0], ir.alt(*parts[1:]))
            else:
                op = _balanced_intersection(parts)
            return op if terminal else self.with_ignore(scope, self.lexeme(op))
        if isinstance(e, ESep):
            items = [(p, lo, hi) for p, (_x, lo, hi) in zip(parts[1:], e.items)]
            empty_items = [_is_empty(x) for x, _lo, _hi in e.items]
            items = prepare_items(items, empty_items, lambda x: node_nullable(x, self.rule_nullable), self.non_empty.of)
            return separated(parts[0], items, e.at_least_one, self.helper_rule, self.limits.separated_inline_nodes)
        raise self.error("an fa { ... } body must be a whole declaration body", e.offset)

    def helper_rule(self, body: ir.Node) -> ir.Node:
        """A reference to a new rule holding ``body``, named after the rule being lowered."""
        owner, offset = self.owner
        k = self.helper_count.get(owner, 0) + 1
        self.helper_count[owner] = k
        name = f"{owner}~{k}"
        self.put(name, body, (offset, 1000, k))
        self.null[name] = node_nullable(body, self.rule_nullable)
        return ir.Ref(name)

    # -- nullability and non-empty twins (for separated sequences) ---------------------------

    def rule_nullable(self, name: str) -> bool:
        return self.null.get(name, False)

    def twin(self, name: str) -> str:
        """The rule matching the non-empty strings of rule ``name`` (its body is made last)."""
        twin = f"{name}~+"
        if twin not in self.null:
            self.null[twin] = False
            self.pending_twins.append(name)
            offset = self.order[name][0] if name in self.order else self.owner[1]
            self.order.setdefault(twin, (offset, 2000, len(self.order)))
        return twin

    def fill_twins(self) -> None:
        while self.pending_twins:
            name = self.pending_twins.pop()
            self.rules[f"{name}~+"] = self.non_empty.of(self.rules[name])

    def compute_nullable(self) -> None:
        """Which rules match the empty string, from the source (a fixpoint), before lowering."""
        entries: list[tuple[str, Scope, list[Expr] | None]] = []
        for scope in self.scopes:
            for d in self.tables[scope.path].values():
                if d.kind in (T, INTERNAL, NT):
                    entries.append((d.qualified, scope, d.bodies))
            if scope.path:
                entries.append(("::".join(scope.path), scope, None))
        changed = True
        while changed:
            changed = False
            for qualified, scope, bodies in entries:
                if self.null.get(qualified):
                    continue
                if bodies is None:
                    now = self.name_nullable(scope, scope.starts[0][0] if scope.starts else "")
                else:
                    now = any(self.expr_nullable(b, scope, qualified, k) for k, b in enumerate(bodies))
                if now:
                    self.null[qualified] = True
                    changed = True

    def name_nullable(self, scope: Scope, name: str) -> bool:
        d = self.tables[scope.path].get(name)
        if d is None or d.kind in (EXTERN_TOKEN, EXTERN_GRAMMAR):
            return False
        return self.null.get(d.qualified, False)

    def expr_nullable(self, root: Expr, scope: Scope, qualified: str, index: int = 0) -> bool:
        if isinstance(root, EFa):
            return self.fa_nullable(root, scope, qualified, index)
        done: dict[int, bool] = {}
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            e, expanded = stack.pop()
            kids = _children(e)
            if kids and not expanded:
                stack.append((e, True))
                stack.extend((k, False) for k in kids)
                continue
            ks = [done[id(k)] for k in kids]
            if isinstance(e, ELit):
                r = not e.data
            elif isinstance(e, ERegex):
                r = node_nullable(self.regex(e), self.rule_nullable)
            elif isinstance(e, EEps):
                r = True
            elif isinstance(e, ERef):
                r = self.name_nullable(scope, e.name)
            elif isinstance(e, (ESeq, EInter)):
                r = all(ks)
            elif isinstance(e, EAlt):
                r = any(ks)
            elif isinstance(e, ERepeat):
                r = e.lo == 0 or ks[0]
            elif isinstance(e, EDiff):
                r = ks[0] and not any(ks[1:])
            elif isinstance(e, ESep):
                absent = [lo == 0 or hi == 0 or k for (_x, lo, hi), k in zip(e.items, ks[1:])]
                empty_items = [hi != 0 and _is_empty(x) for x, _lo, hi in e.items]
                r = all(absent) and (not e.at_least_one or any(empty_items))
            else:
                r = False
            done[id(e)] = r
        return done[id(root)]

    def fa_nullable(self, fa: EFa, scope: Scope, qualified: str, index: int) -> bool:
        """Whether an accept state is reachable over edges that can match nothing; for an ``nt``
        FA, records the answer for each of its state rules too."""
        back: dict[str, list[str]] = {}
        for src, dst, expr in fa.edges:
            if self.expr_nullable(expr, scope, qualified):
                back.setdefault(dst, []).append(src)
        good = set(fa.accepts)
        todo = list(good)
        while todo:
            for prev in back.get(todo.pop(), ()):
                if prev not in good:
                    good.add(prev)
                    todo.append(prev)
        prefix = f"{qualified}@" if index == 0 else f"{qualified}@{index + 1}@"
        for state in good:
            self.null[prefix + state] = True
        return fa.start in good

    # -- finite automata ------------------------------------------------------------------

    def fa_rules(self, fa: EFa, scope: Scope, qualified: str, index: int, offset: int) -> ir.Node:
        prefix = f"{qualified}@" if index == 0 else f"{qualified}@{index + 1}@"
        states = _fa_states(fa)
        outgoing: dict[str, list[ir.Node]] = {s: [] for s in states}
        for src, dst, expr in fa.edges:
            outgoing[src].append(ir.seq(self.node(expr, scope, _FA_EDGE_CTX), ir.Ref(prefix + dst)))
        accepting = set(fa.accepts)
        for s in states:
            body = ir.alt(*outgoing[s], *([ir.EMPTY] if s in accepting else []))
            self.put(prefix + s, body, (offset, 1 + index, len(self.order)))
        return ir.Ref(prefix + fa.start)

    def fa_regular(self, fa: EFa, scope: Scope) -> ir.Node:
        edges = [(src, dst, self.node(expr, scope, _T_CTX)) for src, dst, expr in fa.edges]
        return eliminate_states(_fa_states(fa), fa.start, fa.accepts, edges)


def _is_empty(e: Expr) -> bool:
    """An item that is the empty string itself (``eps``, ``""``)."""
    return isinstance(e, EEps) or (isinstance(e, ELit) and not e.data)


def _children(e: Expr) -> list[Expr]:
    if isinstance(e, (ESeq, EAlt, EInter)):
        return list(e.items)
    if isinstance(e, ERepeat):
        return [e.item]
    if isinstance(e, EDiff):
        return [e.left, *e.rights]
    if isinstance(e, ESep):
        return [e.sep, *(item for item, _lo, _hi in e.items)]
    return []


def _balanced_intersection(parts: list[ir.Node]) -> ir.Node:
    """``a & b & c ...`` as a balanced tree, so long chains stay shallow."""
    while len(parts) > 1:
        paired = [ir.Intersection(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            paired.append(parts[-1])
        parts = paired
    return parts[0]


def _fa_states(fa: EFa) -> list[str]:
    seen: dict[str, None] = {fa.start: None}
    for s in fa.accepts:
        seen.setdefault(s, None)
    for src, dst, _e in fa.edges:
        seen.setdefault(src, None)
        seen.setdefault(dst, None)
    return list(seen)


def _size(n: ir.Node) -> int:
    return sum(1 for _ in ir.iter_nodes(n))


def eliminate_states(
    states: list[str], start: str, accepts: list[str], edges: list[tuple[str, str, ir.Node]]
) -> ir.Node:
    """The language of a finite automaton with expression-labelled edges, as one node.

    Classic state elimination: a fresh entry and exit are added, then each state ``k`` is removed,
    replacing every path ``i -> k -> j`` by an edge ``i -> j`` labelled ``a (loop)* b``. The state
    with the fewest in-out pairs goes first. Raises LimitError if the expression grows too big.
    """
    entry, exit_ = "\x00entry", "\x00exit"
    label: dict[tuple[str, str], ir.Node] = {}
    size: dict[tuple[str, str], int] = {}
    outs: dict[str, set[str]] = {s: set() for s in [*states, entry, exit_]}
    ins: dict[str, set[str]] = {s: set() for s in [*states, entry, exit_]}

    def add(i: str, j: str, node: ir.Node, n: int) -> None:
        key = (i, j)
        if key in label:
            label[key] = ir.alt(label[key], node)
            size[key] += n + 1
        else:
            label[key] = node
            size[key] = n
        outs[i].add(j)
        ins[j].add(i)
        if size[key] > MAX_FA_EXPRESSION_NODES:
            raise LimitError(
                "a terminal fa { ... } body gives too big a regular expression",
                limit="MAX_FA_EXPRESSION_NODES",
                value=MAX_FA_EXPRESSION_NODES,
            )

    add(entry, start, ir.EMPTY, 1)
    for a in dict.fromkeys(accepts):
        add(a, exit_, ir.EMPTY, 1)
    for src, dst, node in edges:
        add(src, dst, node, _size(node))
    order = {s: i for i, s in enumerate(states)}
    remaining = set(states)
    while remaining:
        k = min(remaining, key=lambda s: (len(ins[s] - {s}) * len(outs[s] - {s}), order[s]))
        remaining.discard(k)
        loop = label.pop((k, k), None)
        loop_size = size.pop((k, k), 0)
        outs[k].discard(k)
        ins[k].discard(k)
        star = ir.star(loop) if loop is not None else ir.EMPTY
        incoming = [(i, label.pop((i, k)), size.pop((i, k))) for i in sorted(ins[k])]
        outgoing = [(j, label.pop((k, j)), size.pop((k, j))) for j in sorted(outs[k])]
        for i, _a, _n in incoming:
            outs[i].discard(k)
        for j, _b, _n in outgoing:
            ins[j].discard(k)
        ins[k].clear()
        outs[k].clear()
        for i, a, na in incoming:
            for j, b, nb in outgoing:
                add(i, j, ir.seq(a, star, b), na + loop_size + nb + 2)
    return label.get((entry, exit_), ir.NOTHING)


def lower(top: Scope, lexer: Lexer, limits: GrammarLimits) -> Grammar:
    """The grammar a parsed GLRM file means."""
    lw = _Lowering(top, lexer, limits)
    lw.collect()
    if not top.starts:
        raise GrammarError("grammar has no 'start' declaration")
    lw.compute_nullable()
    lw.lower_terminals()
    lw.lower_ignores()
    lw.check_lexer_groups()
    lw.lower_nonterminals()
    lw.fill_twins()
    start = lw.top_start()
    return Grammar(lw.ordered_rules(), start, externs=lw.externs, limits=limits)  # type: ignore[arg-type]
