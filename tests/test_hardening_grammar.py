"""Dead ends: a rule or automaton state that derives nothing must never be entered.

Issue 23, finding 1. Both the mask engine and the reference matcher used to offer the byte that
enters a named rule with an empty language (``root ::= "a" x | "b"``, ``x ::= [z-a]``), after
which nothing was allowed and the state was not accepting. Here: the issue's reproducers, the
productivity analysis against a naive fixpoint, and a property over small random grammars with
empty rules: along any walk of allowed tokens the engine's mask equals the matcher's viable bytes
and is never empty before an accepting state.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import Vocab
from structgen.engine.constraint import Constraint
from structgen.errors import GrammarError
from structgen.grammar import Grammar, ir
from structgen.grammar.emptiness import empty_rules, is_empty_language, productive_rules, without_dead_ends

END = 256
#: every byte a token, and one end token: masks are sets of bytes plus "may end here"
BYTE_VOCAB = Vocab([bytes([b]) for b in range(256)] + [b"</s>"], eos_token_ids=[END], special_token_ids=[END])


def engine_allowed(state) -> set[int]:  # type: ignore[no-untyped-def]
    return set(np.flatnonzero(state.mask()).tolist())


def matcher_allowed(m) -> set[int]:  # type: ignore[no-untyped-def]
    return set(m.viable_next_bytes()) | ({END} if m.is_accepting() else set())


def assert_agree_along(grammar: Grammar, text: bytes) -> None:
    """Engine and matcher allow the same bytes after every prefix of ``text`` that both allow."""
    state = Constraint.compile(grammar, BYTE_VOCAB).start()
    m = grammar.matcher()
    for i, byte in enumerate(text):
        ours = engine_allowed(state)
        assert ours == matcher_allowed(m), text[:i]
        if byte not in ours:
            return
        assert state.commit_token(byte)
        assert m.feed(bytes([byte]))
    assert engine_allowed(state) == matcher_allowed(m), text


# -- the reproducers ----------------------------------------------------------------------

EMPTY_RULE_GBNF = [
    'root ::= "a" x | "b"\nx ::= [z-a]',
    'root ::= "a" x | "b"\nx ::= "\\uD800"',  # a surrogate: no UTF-8 encoding, so nothing
    'root ::= "a" x | "b"\nx ::= "c" x',  # recursive without a way out
    'root ::= "a" x | "b"\nx ::= y "c"\ny ::= [z-a]{1,3}',  # empty two references down
    'root ::= "a" x | "b"\nx ::= "c" ( [z-a] | y )\ny ::= "d" y',
]


@pytest.mark.parametrize("text", EMPTY_RULE_GBNF)
def test_empty_named_rule_is_never_entered(text: str) -> None:
    g = Grammar.from_gbnf(text)
    assert "x" in empty_rules(g) and "root" in productive_rules(g)
    state = Constraint.compile(g, BYTE_VOCAB).start()
    assert engine_allowed(state) == {ord("b")}
    m = g.matcher()
    assert m.viable_next_bytes() == {ord("b")}
    assert not m.feed(b"a")
    assert_agree_along(g, b"acd")
    assert_agree_along(g, b"b")


def test_inline_empty_class_was_already_right() -> None:
    g = Grammar.from_gbnf('root ::= "a" [z-a] | "b"')
    assert engine_allowed(Constraint.compile(g, BYTE_VOCAB).start()) == {ord("b")}
    assert not g.matcher().feed(b"a")


def test_glrm_automaton_with_unreachable_accept_state_allows_nothing() -> None:
    g = Grammar.from_glrm('start s; nt s = fa { start p; accept q; edge p -> r: "a"; };')
    assert is_empty_language(g)
    state = Constraint.compile(g, BYTE_VOCAB).start()
    assert engine_allowed(state) == set() and not state.is_accepting()
    m = g.matcher()
    assert m.is_dead() and not m.feed(b"a") and m.viable_next_bytes() == frozenset()


def test_glrm_dead_automaton_state_behind_a_reference() -> None:
    g = Grammar.from_glrm(
        'start s; nt s = "a" x | "b";'
        ' nt x = fa { start p; accept q; edge p -> r: "a"; edge p -> q: "c"; edge r -> r: "d"; };'
    )
    assert {"x@r"} <= empty_rules(g) and "x" in productive_rules(g)
    assert engine_allowed(Constraint.compile(g, BYTE_VOCAB).start()) == {ord("a"), ord("b")}
    for text in (b"ac", b"aa", b"ad", b"b"):
        assert_agree_along(g, text)
    m = g.matcher()
    assert m.feed(b"a") and m.viable_next_bytes() == {ord("c")}


@pytest.mark.parametrize(
    "operation",
    [ir.Difference(ir.lit("a"), ir.lit("a")), ir.Intersection(ir.lit("a"), ir.lit("b"))],
    ids=["difference", "intersection"],
)
def test_empty_set_operation_behind_a_reference(operation: ir.Node) -> None:
    # syntax cannot tell that these are empty; the engine's and the matcher's searches can
    g = Grammar({"root": ir.alt(ir.seq(ir.lit("a"), ir.Ref("x")), ir.lit("b")), "x": operation})
    assert engine_allowed(Constraint.compile(g, BYTE_VOCAB).start()) == {ord("b")}
    assert not g.matcher().feed(b"a")


def test_repetition_of_an_empty_rule() -> None:
    # x{0,n} of an empty x is the empty string; x{1,n} is nothing
    g = Grammar.from_gbnf('root ::= "a" x* "c" | "b" x+ | "d"\nx ::= [z-a]')
    assert productive_rules(g) == {"root"}
    assert engine_allowed(Constraint.compile(g, BYTE_VOCAB).start()) == {ord("a"), ord("d")}
    assert_agree_along(g, b"ac")
    assert_agree_along(g, b"d")


def test_counted_repetition_past_the_unroll_limit() -> None:
    # the matcher turns large counts into a helper rule with a counted edge
    g = Grammar.from_gbnf('root ::= "a" x{7,9} | "b"\nx ::= "c" y\ny ::= [z-a]')
    assert not g.matcher().feed(b"a")
    assert engine_allowed(Constraint.compile(g, BYTE_VOCAB).start()) == {ord("b")}


def test_grammar_with_no_sentence() -> None:
    g = Grammar.from_gbnf('root ::= x\nx ::= "a" x')
    assert is_empty_language(g)
    assert engine_allowed(Constraint.compile(g, BYTE_VOCAB).start()) == set()
    assert g.matcher().is_dead() and not g.matches("")


def test_token_atoms_count_as_productive() -> None:
    assert productive_rules(Grammar({"root": ir.seq(ir.lit("a"), ir.Token((5,)))})) == {"root"}
    assert productive_rules(Grammar({"root": ir.Token(name="<|end|>")})) == {"root"}
    assert productive_rules(Grammar({"root": ir.Token((), None, negated=True)})) == {"root"}
    assert productive_rules(Grammar({"root": ir.seq(ir.lit("a"), ir.Token(()))})) == frozenset()


def test_unbound_grammar_extern_counts_as_productive() -> None:
    g = Grammar.from_glrm('start s; extern grammar G; nt s = "a" G;')
    assert productive_rules(g) == {"s"}


def test_closed_subtrees_use_their_marked_facts() -> None:
    empty_closed = ir.mark_closed(ir.seq(ir.lit("x"), ir.Alt((ir.CharClass(()), ir.ByteClass(())))))
    full_closed = ir.mark_closed(ir.seq(ir.lit("x"), ir.alt(ir.CharClass(()), ir.lit("y"))))
    g = Grammar({"root": ir.alt(ir.Ref("e"), ir.Ref("f")), "e": empty_closed, "f": full_closed})
    assert productive_rules(g) == {"root", "f"}


# -- the analysis against a naive fixpoint ----------------------------------------------------------


def naive_productive(g: Grammar) -> frozenset[str]:
    """Iterate "a rule is productive if its body is, given the rules known so far" to a fixpoint."""
    known: set[str] = set()

    def node(n: ir.Node) -> bool:
        if isinstance(n, ir.Literal):
            return True
        if isinstance(n, ir.CharClass):
            return bool(n.codepoints())
        if isinstance(n, ir.ByteClass):
            return bool(n.byte_ranges())
        if isinstance(n, ir.Ref):
            return n.name in known
        if isinstance(n, ir.Seq):
            return all(node(i) for i in n.items)
        if isinstance(n, ir.Alt):
            return any(node(i) for i in n.items)
        if isinstance(n, ir.Repeat):
            return n.min == 0 or node(n.item)
        raise AssertionError(n)

    changed = True
    while changed:
        changed = False
        for name, body in g.rules.items():
            if name not in known and node(body):
                known.add(name)
                changed = True
    return frozenset(known)


RULES = ("root", "r1", "r2", "r3")


def _node(depth: int) -> st.SearchStrategy[ir.Node]:
    leaves = st.one_of(
        st.sampled_from([ir.lit("a"), ir.lit("b"), ir.lit("ab"), ir.CharClass(()), ir.char("a", "c"), ir.EMPTY]),
        st.sampled_from([ir.Ref(r) for r in RULES]),
    )
    if depth == 0:
        return leaves
    sub = _node(depth - 1)
    return st.one_of(
        leaves,
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: ir.Seq(tuple(xs))),
        st.lists(sub, min_size=0, max_size=3).map(lambda xs: ir.Alt(tuple(xs))),
        st.tuples(sub, st.integers(0, 2), st.sampled_from([0, 1, 2, None])).map(
            lambda t: ir.Repeat(t[0], t[1], None if t[2] is None else t[1] + t[2])
        ),
        st.tuples(sub, st.integers(5, 6)).map(lambda t: ir.Repeat(t[0], t[1], t[1] + 1)),  # past the unroll limit
    )


small_grammars = st.lists(_node(2), min_size=len(RULES), max_size=len(RULES)).map(
    lambda bodies: Grammar(dict(zip(RULES, bodies)), "root")
)


@settings(max_examples=300, deadline=None)
@given(small_grammars)
def test_productive_rules_match_a_naive_fixpoint(g: Grammar) -> None:
    assert productive_rules(g) == naive_productive(g)


@settings(max_examples=150, deadline=None)
@given(small_grammars, st.lists(st.integers(0, 2**16), min_size=1, max_size=8))
def test_no_dead_end_along_random_walks(g: Grammar, choices: list[int]) -> None:
    """Engine masks equal the matcher's viable bytes at every step of a walk of allowed bytes, and
    a position that is not accepting always allows some byte (no dead end)."""
    try:
        c = Constraint.compile(g, BYTE_VOCAB)
    except GrammarError:  # left recursion: the engine refuses it, the matcher is not asked
        return
    state, m = c.start(), g.matcher()
    if is_empty_language(g):
        assert engine_allowed(state) == set() and m.is_dead()
        return
    for pick in choices:
        ours = engine_allowed(state)
        assert ours == matcher_allowed(m)
        assert ours, "a viable position allows nothing"
        byte = sorted(ours)[pick % len(ours)]
        if byte == END:
            return
        assert state.commit_token(byte) and m.feed(bytes([byte]))


def test_greedy_lexeme_that_can_never_end_in_its_context() -> None:
    # A = /a+/ is greedy, so "A a" matches nothing; the engine's term search finds that, and the
    # matcher's liveness knows what may follow the lexeme (structgen/grammar/lexeme_liveness.py)
    g = Grammar.from_glrm('start s; t A = /a+/; nt s = A "a" | "b";')
    assert engine_allowed(Constraint.compile(g, BYTE_VOCAB).start()) == {ord("b")}
    assert not g.matcher().feed(b"a")


# -- length bounds in exported grammars (finding 11) ----------------------------------------------

BOUNDED_SCHEMA = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "n": {"type": "number", "maximum": 1},
        "i": {"type": "integer"},
        "short": {"type": "string", "maxLength": 3},
        "tags": {"type": "array", "items": {"enum": ["x", "y"]}},
    },
}


def _doc(**fields: str) -> str:
    return "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"


def test_bound_runs_caps_strings_and_digits_only() -> None:
    from structgen.grammar.bounded_runs import bound_runs

    g = Grammar.from_json_schema(BOUNDED_SCHEMA)
    capped = bound_runs(g, max_string_length=5, max_digits=4)
    assert capped.matches(_doc(s='"abcde"')) and not capped.matches(_doc(s='"abcdef"'))
    assert capped.matches(_doc(s='"\\n\\u00e9abc"'))  # an escape is one character
    assert capped.matches(_doc(n="0.0001")) and not capped.matches(_doc(n="0.000001"))
    assert capped.matches(_doc(i="12345")) and not capped.matches(_doc(i="123456"))  # [1-9][0-9]{0,4}
    assert capped.matches(_doc(short='"abc"')) and not capped.matches(_doc(short='"abcd"'))
    many = "[" + ", ".join(['"x"'] * 50) + "]"
    assert capped.matches(_doc(tags=many))  # array repetitions are not runs
    assert capped.matches('{"abcde": 1}') and not capped.matches('{"abcdefg": 1}')  # free keys
    assert bound_runs(g) is g
    assert g.matches(_doc(s='"' + "a" * 100 + '"'))  # the original grammar is unchanged


def test_bound_runs_keeps_a_larger_minimum() -> None:
    from structgen.grammar.bounded_runs import bound_runs

    g = Grammar.from_json_schema({"type": "string", "pattern": "^a{7,}$"})
    capped = bound_runs(g, max_string_length=3)
    assert capped.matches('"' + "a" * 7 + '"')


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bound_runs_refuses_bad_caps(bad: object) -> None:
    g = Grammar.from_json_schema({"type": "string"})
    with pytest.raises(GrammarError):
        g.to_gbnf(max_string_length=bad)  # type: ignore[arg-type]


def test_capped_gbnf_in_llama_cpp() -> None:
    """llama.cpp builds the capped text and stops the runs where the caps say."""
    import llama_cpp_oracle as oracle_module  # a local helper: it says below whether llama.cpp is there

    if not oracle_module.available():
        pytest.skip("llama-cpp-python is not installed (pip install '.[llama]')")
    oracle = oracle_module.LlamaCppOracle()
    try:
        g = Grammar.from_json_schema(BOUNDED_SCHEMA, whitespace="compact")
        text = g.to_gbnf(max_string_length=20, max_digits=6)
        assert oracle.grammar_ok(text)
        assert oracle.accepts(text, '{"s":"' + "a" * 20 + '"}')
        assert not oracle.accepts(text, '{"s":"' + "a" * 21 + '"}')
        assert oracle.accepts(text, '{"n":0.000001}')
        assert not oracle.accepts(text, '{"n":0.00000001}')
        assert not oracle.accepts(text, '{"n":2.00000000000000057900346}')
        # without the caps llama.cpp has no bound: the long forms are accepted
        free = g.to_gbnf()
        assert oracle.accepts(free, '{"s":"' + "a" * 21 + '"}')
        assert oracle.accepts(free, '{"n":0.00000001}')
    finally:
        oracle.close()


def test_capped_glrm_reads_back() -> None:
    g = Grammar.from_json_schema({"type": "string"})
    capped = Grammar.from_glrm(g.to_glrm(max_string_length=4))
    assert capped.matches('"abcd"') and not capped.matches('"abcde"')


# -- exported text without dead ends ----------------------------------------------------------------


@pytest.mark.parametrize("text", EMPTY_RULE_GBNF)
def test_exported_text_leaves_out_what_derives_nothing(text: str) -> None:
    g = Grammar.from_gbnf(text)
    pruned = without_dead_ends(g)
    assert set(pruned.rules) == productive_rules(g)
    assert not empty_rules(pruned)
    for exported in (Grammar.from_gbnf(g.to_gbnf()), Grammar.from_glrm(g.to_glrm())):
        assert not empty_rules(exported)
        assert exported.matches("b") and not exported.matcher().feed(b"a")


def test_a_grammar_without_sentences_is_exported_as_it_is() -> None:
    g = Grammar.from_gbnf('root ::= "a" x\nx ::= [z-a]')
    assert without_dead_ends(g) is g


@settings(max_examples=300, deadline=None)
@given(small_grammars, st.lists(st.text(alphabet="abc", max_size=6), min_size=1, max_size=6))
def test_pruning_keeps_the_language(g: Grammar, samples: list[str]) -> None:
    pruned = without_dead_ends(g)
    if is_empty_language(g):
        assert pruned is g
        return
    assert not empty_rules(pruned)
    for s in samples:
        assert pruned.matches(s) == g.matches(s), s


def test_exported_gbnf_has_no_dead_end_in_llama_cpp() -> None:
    """llama.cpp does not analyse emptiness: given the rule that derives nothing it lets a model
    write ``a`` and then allows nothing; the exported text leaves that branch out."""
    import llama_cpp_oracle as oracle_module  # a local helper: it says below whether llama.cpp is there

    if not oracle_module.available():
        pytest.skip("llama-cpp-python is not installed (pip install '.[llama]')")
    oracle = oracle_module.LlamaCppOracle()
    try:
        raw = 'root ::= "a" x | "b"\nx ::= "c" x'
        assert oracle.allows_prefix(raw, "a")  # what llama.cpp does with the grammar as written
        text = Grammar.from_gbnf(raw).to_gbnf()
        assert oracle.grammar_ok(text)
        assert not oracle.allows_prefix(text, "a")
        assert oracle.accepts(text, "b")
    finally:
        oracle.close()
