"""`Grammar`: named rules over the node form of :mod:`structgen.grammar.ir`, plus a start rule.

This is the one grammar object every input becomes (GBNF, GLRM, regex, JSON Schema, Python
types) and every output is written from. It is immutable and hashable; reading and writing the
text dialects live in their own modules and are reached through the classmethods here.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping
from typing import Literal as Lit

from ..deadline import check_deadline
from ..errors import GrammarError
from ..limits import DEFAULT_GRAMMAR_LIMITS, GrammarLimits
from . import ir
from .emptiness import without_dead_ends
from .graphs import nodes_on_cycles
from .rule_scan import RuleScan, scan_rule

if TYPE_CHECKING:
    from .matcher import Matcher

ExternKind = Lit["token", "grammar"]


class Grammar:
    """An immutable context-free grammar over bytes (with token atoms), and its start rule.

    ``rules`` maps rule names to bodies; every :class:`~structgen.grammar.ir.Ref` must name a rule
    or an unbound ``grammar`` extern. ``externs`` lists GLRM ``extern`` slots still to be bound
    with :meth:`bind`: a ``token`` extern appears in bodies as ``Token(name=NAME)``, a ``grammar``
    extern as ``Ref(NAME)``. ``recursive`` names the rules on cycles of references where the
    builder found them already on these rules (the JSON Schema translator's clean-up); it is
    trusted, not checked. ``scans`` gives, for some rules, what :func:`scan_rule` says of their
    bodies, where the builder walked these very bodies already (the same clean-up): trusted too,
    and the rules it leaves out are walked here.
    """

    __slots__ = ("_rules", "_start", "_externs", "_hash", "_recursive", "_derived", "_plain")

    def __init__(
        self,
        rules: Mapping[str, ir.Node] | Iterable[tuple[str, ir.Node]],
        start: str = "root",
        *,
        externs: Mapping[str, ExternKind] | None = None,
        limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS,
        recursive: frozenset[str] | None = None,
        scans: Mapping[str, RuleScan] | None = None,
    ) -> None:
        items = list(rules.items()) if isinstance(rules, Mapping) else list(rules)
        table: dict[str, ir.Node] = {}
        for name, body in items:
            if not isinstance(body, ir.Node):
                raise TypeError(f"rule {name!r}: body must be a grammar node, not {type(body).__name__}")
            if name in table:
                raise GrammarError("rule defined twice", rule=name)
            table[name] = body
        self._rules = MappingProxyType(table)
        self._start = start
        self._externs = MappingProxyType(dict(externs or {}))
        self._hash = hash((start, frozenset(table.items()), frozenset(self._externs.items())))
        # the rules on cycles, where the builder found them on these rules already (the schema
        # translator's clean-up; tests compare them with the grammar's own), else found here
        self._recursive: frozenset[str] | None = recursive
        # data other modules derive from the grammar (matcher automata...), computed once
        self._derived: dict[str, Any] = {}
        self._validate(limits, scans or {})

    # -- identity -------------------------------------------------------------------------

    @property
    def rules(self) -> Mapping[str, ir.Node]:
        return self._rules

    @property
    def start(self) -> str:
        return self._start

    @property
    def externs(self) -> Mapping[str, ExternKind]:
        """Unbound GLRM extern slots, name to kind."""
        return self._externs

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return (
            self._hash == other._hash
            and self._start == other._start
            and dict(self._rules) == dict(other._rules)
            and dict(self._externs) == dict(other._externs)
        )

    def __repr__(self) -> str:
        return f"<Grammar start={self._start!r} rules={len(self._rules)}>"

    def __str__(self) -> str:
        lines = [f"{name} ::= {ir.format_node(body)}" for name, body in self._rules.items()]
        return "\n".join([f"# start: {self._start}"] + lines)

    def with_start(self, start: str) -> Grammar:
        """The same rules with another start rule."""
        return Grammar(self._rules, start, externs=self._externs)

    # -- checks ---------------------------------------------------------------------------

    def _validate(self, limits: GrammarLimits, scans: Mapping[str, RuleScan]) -> None:
        if len(self._rules) > limits.max_rules:
            from ..errors import LimitError

            raise LimitError(f"grammar has {len(self._rules)} rules", limit="max_rules", value=limits.max_rules)
        if self._start not in self._rules and self._externs.get(self._start) != "grammar":
            raise GrammarError(f"start rule {self._start!r} is not defined", rule=self._start)
        graph: dict[str, list[str]] = {}
        with_setops: list[str] = []
        plain_rules = True
        for name, body in self._rules.items():
            check_deadline()
            scan = scans.get(name)
            depth, refs, setops, plain = scan_rule(body) if scan is None else scan
            plain_rules = plain_rules and plain
            if depth > limits.max_nesting:
                from ..errors import LimitError

                raise LimitError(
                    f"rule {name!r} is nested more than {limits.max_nesting} levels deep",
                    limit="max_nesting",
                    value=limits.max_nesting,
                )
            if not refs <= self._rules.keys():
                self._refuse_undefined(name, body)
            if self._recursive is None:
                graph[name] = sorted(refs & self._rules.keys())
            if setops:
                with_setops.append(name)
        self._plain = plain_rules
        if self._recursive is None:
            self._recursive = frozenset(nodes_on_cycles(graph))
        recursive = self._recursive
        for name in with_setops:
            for node in ir.iter_distinct(self._rules[name], skip_closed=True):
                # a closed subtree holds no Ref or Token: its operands are regular
                if isinstance(node, (ir.Lexeme, ir.Difference, ir.Intersection)) and not ir.is_closed(node):
                    for operand in node.children():
                        self._check_regular(operand, recursive, name, type(node).__name__)

    def _refuse_undefined(self, name: str, body: ir.Node) -> None:
        """Raise for the first reference of ``body`` (in :func:`ir.iter_distinct`'s order) to a rule
        that is neither defined nor an unbound grammar extern."""
        for node in ir.iter_distinct(body, skip_closed=True):
            if isinstance(node, ir.Ref) and node.name not in self._rules:
                if self._externs.get(node.name) != "grammar":
                    raise GrammarError(f"undefined rule {node.name!r}", rule=name)

    def _check_regular(self, node: ir.Node, recursive: frozenset[str], rule: str, op: str) -> None:
        seen: set[str] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            for sub in ir.iter_distinct(n, skip_closed=True):
                if isinstance(sub, ir.Token):
                    raise GrammarError(f"{op} cannot contain a token atom", rule=rule)
                if isinstance(sub, ir.Ref):
                    if sub.name in recursive or sub.name in self._externs:
                        raise GrammarError(
                            f"{op} needs a regular operand, but {sub.name!r} is recursive or external",
                            rule=rule,
                        )
                    if sub.name not in seen:
                        seen.add(sub.name)
                        stack.append(self._rules[sub.name])

    @property
    def plain(self) -> bool:
        """Whether no rule holds a token atom, a greedy lexeme or a set operation (closed
        subtrees included): syntax alone then decides which parts derive nothing."""
        return self._plain

    def recursive_rules(self) -> frozenset[str]:
        """Rules that can reach themselves through references (Tarjan's SCCs, iteratively)."""
        if self._recursive is not None:
            return self._recursive
        graph = {name: sorted(ir.refs(body) & self._rules.keys()) for name, body in self._rules.items()}
        self._recursive = frozenset(nodes_on_cycles(graph))
        return self._recursive

    # -- binding --------------------------------------------------------------------------

    def bind(self, **bindings: Any) -> Grammar:
        """Bind GLRM extern slots: a ``token`` extern to an id or ids, a ``grammar`` extern to a Grammar.

        Returns a new grammar; the rules of a bound grammar are added under ``NAME::rule``.
        """
        rules = dict(self._rules)
        externs = dict(self._externs)
        token_ids: dict[str, tuple[int, ...]] = {}
        for name, value in bindings.items():
            kind = externs.get(name)
            if kind is None:
                raise GrammarError(f"there is no extern named {name!r}")
            if kind == "token":
                if isinstance(value, Grammar):
                    raise GrammarError(f"extern {name!r} is a token extern; bind it to a token id or ids")
                ids = (int(value),) if isinstance(value, int) else tuple(int(v) for v in value)
                if not ids:
                    raise GrammarError(f"extern token {name!r} bound to no token ids")
                token_ids[name] = ids
            else:
                if not isinstance(value, Grammar):
                    raise GrammarError(f"extern {name!r} is a grammar extern; bind it to a Grammar")
                # the bound grammar's rules and its own unbound externs all move under NAME::
                prefix = f"{name}::"
                renamed = {r: f"{prefix}{r}" for r in (*value.rules, *value.externs)}
                for r, body in value.rules.items():
                    rules[renamed[r]] = _rename_in_bound(body, renamed, value.externs)
                rules[name] = ir.Ref(renamed[value.start])
                for ext, ext_kind in value.externs.items():
                    externs[renamed[ext]] = ext_kind
            del externs[name]
        if token_ids:
            rules = {r: bind_tokens(body, token_ids) for r, body in rules.items()}
        return Grammar(rules, self._start, externs=externs)

    # -- readers (each dialect lives in its own module) -------------------------------------

    @classmethod
    def from_gbnf(
        cls,
        text: str,
        start: str = "root",
        *,
        limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS,
        allow_left_recursion: bool = False,
    ) -> Grammar:
        """Read llama.cpp GBNF text; ``start`` names the start rule. Left recursion is refused as
        llama.cpp refuses it, unless ``allow_left_recursion`` (the matcher handles it)."""
        from .gbnf import parse_gbnf

        return parse_gbnf(text, start=start, limits=limits, allow_left_recursion=allow_left_recursion)

    @classmethod
    def from_glrm(cls, text: str, *, limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS) -> Grammar:
        """Read GLRM text (glrmask 0.5.0's ``glrm 1`` dialect)."""
        from .glrm import parse_glrm

        return parse_glrm(text, limits=limits)

    @classmethod
    def from_lark(
        cls,
        text: str,
        *,
        limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS,
        special_tokens: Lit["extern", "vocabulary"] = "extern",
    ) -> Grammar:
        """Read Lark grammar text in the dialect glrmask 0.5.0 reads (see ``docs/grammars-lark.md``).

        ``special_tokens="extern"`` makes ``<|name|>`` an ``extern token`` slot to :meth:`bind`, as
        glrmask does; ``"vocabulary"`` makes it the token with that text in the vocabulary.
        """
        from .lark import parse_lark

        return parse_lark(text, limits=limits, special_tokens=special_tokens)

    @classmethod
    def from_regex(cls, pattern: str, *, flavor: str = "ecma", search: bool | None = None, flags: str = "") -> Grammar:
        """A grammar for a regular expression (see ``docs/regex.md``).

        ``flavor="ecma"`` reads the ECMA-262 subset JSON Schema ``pattern`` uses; an unanchored
        pattern matches anywhere in the text (``search`` defaults to JSON Schema's rule:
        unanchored sides are open). ``flavor="glrm"`` (``/.../``) and ``"glrm-bytes"``
        (``b/.../``) read the Rust-regex forms GLRM uses, which describe a whole lexeme; ``flags``
        takes the letters GLRM writes after the closing slash (``i s x u``).
        """
        from .regex import regex_to_node

        return cls({"root": regex_to_node(pattern, flavor=flavor, search=search, flags=flags)}, "root")

    @classmethod
    def from_json_schema(cls, schema: Any, **options: Any) -> Grammar:
        """A grammar whose sentences are exactly the JSON texts valid against ``schema``."""
        from ..schema import json_schema_to_grammar

        return json_schema_to_grammar(schema, **options)

    @classmethod
    def from_type(cls, tp: Any, **options: Any) -> Grammar:
        """A grammar for the JSON form of a Pydantic model or any type Pydantic's TypeAdapter takes."""
        from ..schema import type_to_grammar

        return type_to_grammar(tp, **options)

    # -- writers --------------------------------------------------------------------------

    def to_gbnf(self, *, max_string_length: int | None = None, max_digits: int | None = None) -> str:
        """GBNF text that llama.cpp reads unchanged and that means this grammar's language.

        llama.cpp has no token budget that closes a document in time (that exists only in
        structgen's own loop): ``max_string_length`` and ``max_digits`` cap the free runs of
        strings and of number digits in the text written (:mod:`.bounded_runs`), so that a
        model cannot run on inside one until ``max_tokens``. The language is then smaller.
        Parts that derive nothing are left out (:func:`.emptiness.without_dead_ends`): llama.cpp
        would let a model into them and then allow nothing.
        """
        from .bounded_runs import bound_runs
        from .gbnf import write_gbnf

        live = without_dead_ends(self)
        return write_gbnf(bound_runs(live, max_string_length=max_string_length, max_digits=max_digits))

    def to_glrm(self, *, max_string_length: int | None = None, max_digits: int | None = None) -> str:
        """GLRM text that glrmask 0.5.0 reads unchanged and that means this grammar's language
        (with the runs of strings and number digits capped as :meth:`to_gbnf` says)."""
        from .bounded_runs import bound_runs
        from .glrm import write_glrm

        live = without_dead_ends(self)
        return write_glrm(bound_runs(live, max_string_length=max_string_length, max_digits=max_digits))

    # -- matching -------------------------------------------------------------------------

    def matcher(self) -> Matcher:
        """A byte-level matcher positioned at the start of the input."""
        from .matcher import Matcher

        return Matcher(self)

    def matches(self, text: str | bytes) -> bool:
        """Whether the whole of ``text`` is a sentence of the grammar."""
        m = self.matcher()
        return m.feed(text.encode("utf-8") if isinstance(text, str) else bytes(text)) and m.is_accepting()


def _transform(node: ir.Node, leaf: Any) -> ir.Node:
    """Rebuild ``node`` bottom-up, replacing each leaf by ``leaf(leaf_node)``; iterative."""
    done: dict[int, ir.Node] = {}
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        kids = n.children()
        if not kids:
            done[id(n)] = leaf(n)
            continue
        if not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids)
            continue
        new = [done[id(c)] for c in kids]
        if all(a is b for a, b in zip(new, kids)):
            done[id(n)] = n
        elif isinstance(n, ir.Seq):
            done[id(n)] = ir.Seq(tuple(new))
        elif isinstance(n, ir.Alt):
            done[id(n)] = ir.Alt(tuple(new))
        elif isinstance(n, ir.Repeat):
            done[id(n)] = ir.Repeat(new[0], n.min, n.max)
        elif isinstance(n, ir.Lexeme):
            done[id(n)] = ir.Lexeme(new[0])
        elif isinstance(n, ir.Difference):
            done[id(n)] = ir.Difference(new[0], new[1])
        elif isinstance(n, ir.Intersection):
            done[id(n)] = ir.Intersection(new[0], new[1])
        else:  # pragma: no cover
            raise TypeError(type(n))
    return done[id(node)]


def rename_refs(node: ir.Node, mapping: Mapping[str, str]) -> ir.Node:
    """``node`` with every ``Ref(a)`` replaced by ``Ref(mapping[a])`` where ``a`` is mapped."""
    return _transform(node, lambda n: ir.Ref(mapping[n.name]) if isinstance(n, ir.Ref) and n.name in mapping else n)


def _rename_in_bound(node: ir.Node, mapping: Mapping[str, str], externs: Mapping[str, str]) -> ir.Node:
    """A bound grammar's body: references and its unbound token externs renamed by ``mapping``."""

    def leaf(n: ir.Node) -> ir.Node:
        if isinstance(n, ir.Ref) and n.name in mapping:
            return ir.Ref(mapping[n.name])
        if isinstance(n, ir.Token) and n.name is not None and not n.ids and externs.get(n.name) == "token":
            return ir.Token(n.ids, mapping[n.name], n.negated)
        return n

    return _transform(node, leaf)


def bind_tokens(node: ir.Node, ids: Mapping[str, tuple[int, ...]]) -> ir.Node:
    """``node`` with each unbound ``Token(name=N)`` given the ids bound to ``N``."""

    def leaf(n: ir.Node) -> ir.Node:
        if isinstance(n, ir.Token) and not n.ids and n.name in ids:
            return ir.Token(ids[n.name], n.name, n.negated)  # type: ignore[index]
        return n

    return _transform(node, leaf)
