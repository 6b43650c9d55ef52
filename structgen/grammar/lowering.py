"""Lowering set operations to plain rules, for dialects that cannot express them.

GBNF has no intersection or difference, and GLRM's ``&`` / ``-`` only work between lexemes, but the
grammars built from JSON Schema need them (``pattern`` *and* ``maxLength``). Both operands of an
:class:`~structgen.grammar.ir.Intersection` / :class:`~structgen.grammar.ir.Difference` are
regular, so the whole operation is a regular language: :func:`lower_set_operations` replaces each
outermost one by a reference to the right-linear rules of its minimal DFA over code points
(:mod:`.cp_automata`). The result has the same language and no set operations outside greedy
lexemes (whose operands must stay non-recursive; GLRM reads those natively).

Sizes are bounded: building one DFA past ``max_states`` raises
:class:`~structgen.errors.LimitError` (counted repetitions inside an operand are where this
happens: ``(pattern) & .{0,100000}`` needs 100,000 states).
"""

from __future__ import annotations

from collections.abc import Callable

from .. import caches
from . import ir
from .cp_automata import DEFAULT_MAX_STATES, CodepointTerms, dfa_rules, node_to_dfa
from .grammar import Grammar

Encoder = Callable[[ir.Ranges], ir.Node]

# Set operations known to be the image of a character-level one under a per-character encoding
# (JSON string escapes): node -> (character-level node, encoder). Keyed by value, so an equal node
# built elsewhere means the same language and may use the same entry.
_ENCODED: dict[ir.Node, tuple[ir.Node, Encoder]] = {}
_MAX_ENCODED = 4096


def register_encoded(node: ir.Node, chars: ir.Node, encode_class: Encoder) -> None:
    """Record that ``node`` is ``chars`` with every character replaced by ``encode_class`` of it.

    The encoding must be uniquely decodable (no string of encodings splits two ways), so that it
    commutes with intersection and difference. Lowering then builds the DFA of ``chars`` (over
    decoded characters: a few states per character position) and writes each transition as the
    encoded class, instead of spelling every escape sequence out as DFA states.
    """
    if len(_ENCODED) >= _MAX_ENCODED:
        _ENCODED.pop(next(iter(_ENCODED)))
    _ENCODED[node] = (chars, encode_class)


def lower_set_operations(grammar: Grammar, *, max_states: int = DEFAULT_MAX_STATES, prefix: str = "setop") -> Grammar:
    """``grammar`` with every intersection and difference outside a lexeme replaced by DFA rules.

    New rules are named ``{prefix}{k}_{state}``, with ``prefix`` extended if it would collide with
    an existing rule name. Identical operations share one set of rules. Returns ``grammar``
    itself when there is nothing to lower.
    """
    if not any(_has_set_op(body) for body in grammar.rules.values()):
        return grammar
    prefix = _free_prefix(prefix, grammar.rules.keys())
    terms = CodepointTerms(grammar.rules)
    lowered: dict[ir.Node, ir.Node] = {}
    new_rules: dict[str, ir.Node] = {}

    def lower(node: ir.Node) -> ir.Node:
        done = lowered.get(node)
        if done is None:
            encoded = _ENCODED.get(node)
            if encoded is not None:
                chars, encode_class = encoded
                dfa = node_to_dfa(chars, max_states=max_states).minimize()
                done, rules = dfa_rules(dfa, f"{prefix}{len(lowered)}", label=encode_class)
            else:
                dfa = node_to_dfa(node, grammar.rules, max_states=max_states, terms=terms).minimize()
                done, rules = dfa_rules(dfa, f"{prefix}{len(lowered)}")
            new_rules.update(rules)
            lowered[node] = done
        return done

    # rules a greedy lexeme reaches must stay non-recursive: they keep their set operations
    protected = _reached_from_lexemes(grammar)
    rules = {
        name: body if name in protected else replace_set_operations(body, lower) for name, body in grammar.rules.items()
    }
    rules.update(new_rules)
    return Grammar(rules, grammar.start, externs=grammar.externs)


def _has_set_op(node: ir.Node) -> bool:
    return any(isinstance(n, (ir.Intersection, ir.Difference)) for n in _outside_lexemes(node))


def _outside_lexemes(root: ir.Node):  # type: ignore[no-untyped-def]
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ir.Lexeme, ir.Intersection, ir.Difference)):
            stack.extend(n.children())


def _reached_from_lexemes(grammar: Grammar) -> set[str]:
    seen: set[str] = set()
    todo = [
        r
        for body in grammar.rules.values()
        for n in ir.iter_nodes(body)
        if isinstance(n, ir.Lexeme)
        for r in ir.refs(n.item)
    ]
    while todo:
        name = todo.pop()
        if name in seen or name not in grammar.rules:
            continue
        seen.add(name)
        todo.extend(ir.refs(grammar.rules[name]))
    return seen


def _free_prefix(prefix: str, names) -> str:  # type: ignore[no-untyped-def]
    names = list(names)
    candidate = prefix
    k = 0
    while any(n.startswith(candidate) for n in names):
        k += 1
        candidate = f"{prefix}{k}x"
    return candidate


def replace_set_operations(node: ir.Node, lower: Callable[[ir.Node], ir.Node]) -> ir.Node:
    """``node`` rebuilt with each outermost set operation (outside lexemes) replaced by ``lower(op)``."""
    done: dict[int, ir.Node] = {}
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if isinstance(n, (ir.Intersection, ir.Difference)):
            done[id(n)] = lower(n)
            continue
        kids = () if isinstance(n, ir.Lexeme) else n.children()
        if not kids:
            done[id(n)] = n
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
        else:  # pragma: no cover - the node kinds with children are listed above
            raise TypeError(type(n))
    return done[id(node)]


caches.register_dict("grammar.lowering.encoded", _ENCODED)
