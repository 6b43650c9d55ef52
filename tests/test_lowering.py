"""lower_set_operations and the code point automata under it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structgen import Grammar, LimitError
from structgen.errors import GrammarError
from structgen.grammar import ir
from structgen.grammar.cp_automata import DFA, dfa_rules, language_is_empty, node_to_dfa
from structgen.grammar.lowering import lower_set_operations

ALPHABET = "abcé"


def set_ops(g: Grammar) -> int:
    return sum(
        isinstance(n, (ir.Intersection, ir.Difference)) for body in g.rules.values() for n in ir.iter_nodes(body)
    )


leaves = st.one_of(
    st.text(ALPHABET, min_size=0, max_size=2).map(ir.lit),
    st.sets(st.sampled_from(ALPHABET), min_size=1, max_size=3).map(lambda cs: ir.char(*sorted(cs))),
    st.sampled_from(["a", "é"]).map(lambda c: ir.char(c, negated=True)),
)


def _extend(children: st.SearchStrategy[ir.Node]) -> st.SearchStrategy[ir.Node]:
    counts = st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))).filter(
        lambda t: t[1] is None or t[1] >= t[0]
    )
    return st.one_of(
        st.tuples(children, children).map(lambda p: ir.seq(*p)),
        st.tuples(children, children).map(lambda p: ir.alt(*p)),
        st.tuples(children, counts).map(lambda p: ir.Repeat(p[0], p[1][0], p[1][1])),
        st.tuples(children, children).map(lambda p: ir.Intersection(*p)),
        st.tuples(children, children).map(lambda p: ir.Difference(*p)),
    )


regular_nodes = st.recursive(leaves, _extend, max_leaves=8)
inputs = st.lists(st.text(ALPHABET + "<>", max_size=6), min_size=10, max_size=25)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(node=regular_nodes, other=regular_nodes, texts=inputs)
def test_lowering_keeps_the_language(node: ir.Node, other: ir.Node, texts: list[str]) -> None:
    original = Grammar({"root": ir.seq(ir.lit("<"), node, ir.lit(">"), ir.star(other))}, "root")
    lowered = lower_set_operations(original)
    assert set_ops(lowered) == 0
    for text in texts + ["<>", "<a>", "<ab>a"]:
        assert lowered.matches(text) == original.matches(text), (str(node), text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(node=regular_nodes, texts=st.lists(st.text(ALPHABET, max_size=6), min_size=10, max_size=25))
def test_dfa_and_minimal_dfa_agree_with_the_matcher(node: ir.Node, texts: list[str]) -> None:
    g = Grammar({"root": node}, "root")
    dfa = node_to_dfa(node)
    small = dfa.minimize()
    assert small.size <= dfa.trim().size
    assert small.minimize().size == small.size  # minimising twice changes nothing
    for text in texts:
        assert dfa.accepts(text) == small.accepts(text) == g.matches(text), (str(node), text)
    empty = language_is_empty(node)
    assert empty is None or empty == small.is_empty()


def test_minimal_sizes() -> None:
    ab = ir.char("a", "b")
    classic = ir.seq(ir.star(ab), ir.lit("abb"))  # (a|b)*abb: 4 states
    assert node_to_dfa(classic).minimize().size == 4
    same = ir.seq(ir.star(ir.alt(ir.lit("a"), ir.lit("b"))), ir.lit("a"), ir.lit("bb"))
    assert node_to_dfa(same).minimize().size == 4
    assert node_to_dfa(ir.Intersection(ir.star(ab), ir.Repeat(ir.ANY_CHAR, 2, 2))).minimize().size == 3
    assert node_to_dfa(ir.Difference(ir.star(ab), ir.star(ab))).minimize().is_empty()


def test_state_limit() -> None:
    big = ir.Intersection(ir.Repeat(ir.ANY_CHAR, 0, 100_000), ir.star(ir.char("a", "b")))
    with pytest.raises(LimitError) as info:
        lower_set_operations(Grammar({"root": big}, "root"), max_states=1000)
    assert info.value.limit == "max_states"
    with pytest.raises(LimitError):
        node_to_dfa(ir.seq(ir.lit("x"), big), max_states=500)


def test_rules_are_right_linear_and_named_apart() -> None:
    op = ir.Intersection(ir.star(ir.char((97, 122))), ir.Repeat(ir.ANY_CHAR, 1, 3))
    g = Grammar({"root": ir.seq(op, ir.lit("-"), op), "setop0_0": ir.lit("x")}, "root")
    lowered = lower_set_operations(g)
    new = [name for name in lowered.rules if name not in g.rules]
    assert new and not any(name.startswith("setop0_") for name in new)
    assert lowered.rules["setop0_0"] == ir.lit("x")
    for name in new:
        body = lowered.rules[name]
        for alt in body.items if isinstance(body, ir.Alt) else (body,):
            assert alt == ir.EMPTY or (
                isinstance(alt, ir.Seq) and len(alt.items) == 2 and isinstance(alt.items[1], ir.Ref)
            ), str(alt)
    # both copies of the same operation share one set of rules
    assert len(new) == 4
    assert lowered.matches("ab-xyz") and not lowered.matches("abcd-x")


def test_nothing_to_lower_and_empty_language() -> None:
    g = Grammar({"root": ir.lit("a")}, "root")
    assert lower_set_operations(g) is g
    empty = Grammar({"root": ir.seq(ir.lit("a"), ir.Difference(ir.lit("b"), ir.lit("b")))}, "root")
    lowered = lower_set_operations(empty)
    assert not lowered.matches("a") and not lowered.matches("ab")


def test_lexeme_operands_are_left_alone() -> None:
    op = ir.Intersection(ir.star(ir.char("a", "b")), ir.Repeat(ir.ANY_CHAR, 0, 2))
    g = Grammar({"root": ir.seq(ir.Lexeme(ir.Ref("word")), ir.lit(";"), ir.Ref("word")), "word": op}, "root")
    lowered = lower_set_operations(g)
    assert lowered.rules["word"] == op
    assert lowered.matches("ab;a") and not lowered.matches("abb;a")


def test_byte_level_operands_are_refused() -> None:
    g = Grammar({"root": ir.Intersection(ir.ByteClass(((0, 255),)), ir.lit("a"))}, "root")
    with pytest.raises(GrammarError):
        lower_set_operations(g)


def test_dfa_rules_of_empty_language() -> None:
    d = DFA()
    d.add_state(False)
    assert dfa_rules(d, "x") == (ir.NOTHING, {})


def test_references_inside_operands_are_followed() -> None:
    g = Grammar(
        {
            "root": ir.Intersection(ir.Ref("letters"), ir.Repeat(ir.ANY_CHAR, 2, 2)),
            "letters": ir.plus(ir.char((97, 99))),
        },
        "root",
    )
    lowered = lower_set_operations(g)
    assert lowered.matches("ab") and not lowered.matches("abc") and not lowered.matches("a")
