"""The reference matcher's liveness where greedy lexemes decide it.

A greedy lexeme (a GLRM terminal) ends only before a byte that cannot extend it, so a state that
could complete its rule in some context may be a dead end in the context of its rule instance
(``A "a"`` with ``A = /a+/`` matches nothing). The matcher decides this per rule instance
(structgen/grammar/lexeme_liveness.py). Here: table cases with answers worked out by hand (a
literal, another lexeme, a nullable continuation, end of input, two call sites, recursion, left
recursion, counted repetition, a special token), which the mask engine meets too (left recursion
aside: it refuses it); and properties: matcher and engine allow exactly the same bytes on random
GLRM grammars, non-recursive (the engine inlines them, its term search is exact there) and
recursive (the engine decides those with the exit summaries of structgen/engine/lexeme_frames.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hardening_grammar import BYTE_VOCAB, END, engine_allowed, matcher_allowed

from structgen.engine.constraint import Constraint
from structgen.engine.lexeme_frames import needs_frame_liveness
from structgen.engine.limits import EngineLimits
from structgen.engine.machines import build_machines
from structgen.errors import GrammarError, LimitError
from structgen.grammar import Grammar, ir
from structgen.grammar.lexeme_liveness import LexemeLiveness, LivenessLimits
from structgen.grammar.matcher_automata import compile_grammar


def allowed(spec: str) -> set[int]:
    """``"ab$"``: the bytes a and b and the end of input."""
    return {END if c == "$" else ord(c) for c in spec}


A_PLUS = "start s; t A = /a+/;"

# (source, prefix, allowed next bytes ("$": may end)); the engine agrees on all but RECURSIVE_CASES
TABLE = [
    # a literal the lexeme would swallow
    (A_PLUS + ' nt s = A "a" | "b";', "", "b"),
    (A_PLUS + ' nt s = A "b";', "a", "ab"),
    # the same rule in two contexts: one of them lets it end
    (A_PLUS + ' nt s = r "a" | r "b"; nt r = A;', "", "a"),
    (A_PLUS + ' nt s = r "a" | r "b"; nt r = A;', "aa", "ab"),
    (A_PLUS + ' nt s = r "a" | "b"; nt r = A;', "", "b"),
    # another lexeme after it
    (A_PLUS + ' t B = /a/; nt s = A B | "b";', "", "b"),
    (A_PLUS + " t B = /b+/; nt s = A B;", "a", "ab"),
    (A_PLUS + " t B = /b+/; nt s = A B;", "ab", "b$"),
    ("start s; t A = /[a-z]+/; t N = /[0-9]+/; nt s = A N A;", "ab1", "0123456789abcdefghijklmnopqrstuvwxyz"),
    ("start s; t A = /[a-z]+/; t N = /[0-9]+/; nt s = A N A;", "ab1c", "abcdefghijklmnopqrstuvwxyz$"),
    # a nullable continuation: what follows it counts too
    (A_PLUS + ' nt s = A o "a" | "b"; nt o = "c" | eps;', "", "ab"),
    (A_PLUS + ' nt s = A o "a" | "b"; nt o = "c" | eps;', "a", "ac"),
    (A_PLUS + ' nt s = A o "a" | "b"; nt o = "c" | eps;', "ac", "a"),
    (A_PLUS + ' nt s = A o; nt o = "a" | eps;', "aa", "a$"),
    # the end of input
    (A_PLUS + " nt s = A;", "a", "a$"),
    # where the lexeme may end depends on how far it got
    ('start s; t A = /a+b?/; nt s = A "b" | "c";', "a", "ab"),
    ('start s; t A = /a+b?/; nt s = A "b" | "c";', "ab", "b"),
    ('start s; t A = /a+b?/; nt s = A "a" | "c";', "ab", "a"),
    # counted repetition past the matcher's unroll limit: the last copy is followed by "a"
    (A_PLUS + ' nt s = x{5,6} "a" | "b"; nt x = "c" A;', "", "b"),
    (A_PLUS + ' nt s = x{5,6} ";" | "b"; nt x = "c" A;', "cacacacaca", "ac;"),
    (A_PLUS + ' nt s = x{5,6} ";" | "b"; nt x = "c" A;', "cacaca", "ac"),
]

# recursion: the instance's follow set comes from the items waiting for it
RECURSIVE_CASES = [
    (A_PLUS + ' nt s = r "a" | "b"; nt r = A | "(" r ")";', "", "(b"),
    (A_PLUS + ' nt s = r "a" | "b"; nt r = A | "(" r ")";', "(a", "a)"),
    (A_PLUS + ' nt s = r "a" | "b"; nt r = A | "(" r ")";', "((a)", ")"),
    (A_PLUS + ' nt s = r "a" | "b"; nt r = A | "(" r ")";', "(a)", "a"),
    (A_PLUS + ' nt s = r "a" | r "b"; nt r = A | "(" r ")";', "(a)", "ab"),
    # every nested A is followed by "a": only the outermost one lives (and "b" pushes forever)
    (A_PLUS + ' nt s = "b" s "a" | A;', "", "a"),
    (A_PLUS + ' nt s = "b" s "a" | A;', "a", "a$"),
    # a lexeme before a call: the callee's first byte decides where it ends
    (A_PLUS + ' nt s = A r | "b"; nt r = "a" r | "a";', "", "b"),
    (A_PLUS + ' nt s = A r; nt r = "a" r | "c";', "a", "ac"),
    (A_PLUS + ' nt s = "(" s ")" s | A;', "(a", "a)"),
    (A_PLUS + ' nt s = "(" s ")" s | A;', "(a)", "(a"),
]

# left recursion (the engine refuses it): every A but the last is followed by ","
LEFT_RECURSIVE_CASES = [
    (A_PLUS + ' nt s = l "a" | "b"; nt l = l "," A | A;', "", "b"),
    (A_PLUS + ' nt s = l ";" | "b"; nt l = l "," A | A;', "a,a", "a,;"),
]


def _walk_to(grammar: Grammar, prefix: str):  # type: ignore[no-untyped-def]
    m = grammar.matcher()
    assert m.feed(prefix.encode()), prefix
    return m


@pytest.mark.parametrize("src, prefix, spec", TABLE + RECURSIVE_CASES + LEFT_RECURSIVE_CASES)
def test_matcher_allows_exactly(src: str, prefix: str, spec: str) -> None:
    assert matcher_allowed(_walk_to(Grammar.from_glrm(src), prefix)) == allowed(spec)


@pytest.mark.parametrize("src, prefix, spec", TABLE)
def test_engine_agrees_on_the_table(src: str, prefix: str, spec: str) -> None:
    state = Constraint.compile(Grammar.from_glrm(src), BYTE_VOCAB).start()
    assert all(state.commit_token(b) for b in prefix.encode())
    assert engine_allowed(state) == allowed(spec)


@pytest.mark.parametrize("src, prefix, spec", RECURSIVE_CASES)
def test_engine_in_a_recursive_context(src: str, prefix: str, spec: str) -> None:
    state = Constraint.compile(Grammar.from_glrm(src), BYTE_VOCAB).start()
    assert all(state.commit_token(b) for b in prefix.encode())
    assert engine_allowed(state) == allowed(spec)


def test_engine_liveness_work_is_bounded() -> None:
    g = Grammar.from_glrm(RECURSIVE_CASES[0][0])
    state = Constraint.compile(g, BYTE_VOCAB, limits=EngineLimits(max_liveness_states=5)).start()
    with pytest.raises(LimitError) as info:
        state.mask()
    assert info.value.limit == "max_liveness_states"


def test_budget_masks_have_no_dead_end_either() -> None:
    state = Constraint.compile(Grammar.from_glrm(RECURSIVE_CASES[0][0]), BYTE_VOCAB).start()
    for budget in (1, 2, 3, 4, 10):
        assert set(np.flatnonzero(state.mask(budget)).tolist()) <= allowed("(b")


def test_only_grammars_with_a_lexeme_and_a_call_are_checked() -> None:
    def needs(src: str) -> bool:
        return needs_frame_liveness(build_machines(Grammar.from_glrm(src)))

    assert needs(RECURSIVE_CASES[0][0]) and needs(A_PLUS + ' nt s = "b" s "a" | A;')
    assert not needs(TABLE[0][0])  # no recursion: one machine, exact term search
    assert not needs('start s; nt s = "(" s ")" | "x";')  # recursion without greedy lexemes
    schema = Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "array", "items": {}}}})
    assert not needs_frame_liveness(build_machines(schema))


def test_a_language_with_no_sentence_is_dead_from_the_start() -> None:
    for src in (A_PLUS + " nt s = A A;", A_PLUS + ' nt s = A "a";', 'start s; nt s = /[a-z]+/ "x";'):
        m = Grammar.from_glrm(src).matcher()
        assert m.is_dead() and m.viable_next_bytes() == frozenset(), src


def test_a_nullable_lexeme_matches_empty_only_where_the_next_byte_cannot_extend_it() -> None:
    # built directly (the GLRM reader gives a nullable terminal an explicit empty choice)
    a_star = ir.Lexeme(ir.Repeat(ir.lit("a"), 0, None))
    g = Grammar({"root": ir.alt(ir.seq(a_star, ir.lit("a")), ir.lit("b"))})
    assert matcher_allowed(g.matcher()) == {ord("b")}
    assert engine_allowed(Constraint.compile(g, BYTE_VOCAB).start()) == {ord("b")}
    g = Grammar({"root": ir.seq(a_star, ir.lit("b"))})
    assert matcher_allowed(g.matcher()) == {ord("a"), ord("b")}


def test_a_special_token_ends_a_lexeme() -> None:
    g = Grammar({"root": ir.seq(ir.Lexeme(ir.Repeat(ir.lit("a"), 1, None)), ir.Token((300,)))})
    m = g.matcher()
    assert m.feed(b"aa") and m.viable_next_bytes() == {ord("a")}
    assert m.feed_token(300) and m.is_accepting()


def test_analysis_work_is_bounded() -> None:
    g = Grammar.from_glrm(A_PLUS + ' nt s = r "a" | "b"; nt r = A | "(" r ")";')
    tiny = LexemeLiveness(compile_grammar(g), g.rules, LivenessLimits(max_evaluations=3))
    with pytest.raises(Exception, match="too many steps"):
        tiny.first(compile_grammar(g).rule_start[compile_grammar(g).start_rule], 1 << 256)


# -- properties -------------------------------------------------------------------------------------

_TERMINALS = "t A = /a+/; t B = /ab?/; t D = /b+/; t E = /(ab)+/; t F = /a*/; t C = /[ab]+c/;"
_ATOMS = ['"a"', '"b"', '"c"', '"ab"', "eps", "A", "B", "D", "E", "F", "C"]


def _expression(refs: list[str], depth: int) -> st.SearchStrategy[str]:
    atom = st.sampled_from(_ATOMS + refs)
    if depth == 0:
        return atom
    inner = _expression(refs, depth - 1)
    quantified = st.tuples(inner, st.sampled_from(["?", "*", "+", "{2}", "{5,6}"])).map(lambda t: f"({t[0]}){t[1]}")
    sequence = st.lists(inner, min_size=2, max_size=3).map(" ".join)
    choice = st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(" + " | ".join(xs) + ")")
    return st.one_of(atom, quantified, sequence, choice)


@st.composite
def _sources(draw: st.DrawFn, recursive: bool) -> str:
    rules = ["s", "r1", "r2"]
    bodies = []
    for i, name in enumerate(rules):
        refs = rules if recursive else rules[i + 1 :]
        body = draw(_expression(refs, 2))
        bodies.append(f"nt {name} = {body} | {draw(st.sampled_from(_ATOMS))};")
    return f"start s; {_TERMINALS} " + " ".join(bodies)


@st.composite
def _nested_sources(draw: st.DrawFn) -> str:
    """Recursive rules called between other items (``"b" r "a"``): frames the callee's greedy
    lexemes end into, not only tail calls. Each rule calls the next one so, in a ring, and has
    a way out, mostly a lexeme."""
    rules = ["s", "r1", "r2"]
    bodies = []
    for i, name in enumerate(rules):
        ring = st.tuples(st.sampled_from(_ATOMS), st.just(rules[(i + 1) % 3]), st.sampled_from(_ATOMS))
        wrapped = st.tuples(st.sampled_from(_ATOMS), st.sampled_from(rules), st.sampled_from(_ATOMS))
        first = draw(ring.map(" ".join))
        others = draw(st.lists(st.one_of(wrapped.map(" ".join), _expression(rules, 1)), max_size=2))
        base = draw(st.sampled_from(["A", "B", "D", "E", "F", "C", '"a"', '"b"']))
        bodies.append(f"nt {name} = {' | '.join([first, *others])} | {base};")
    return f"start s; {_TERMINALS} " + " ".join(bodies)


def _walk(src: str, choices: list[int], exact: bool) -> None:
    g = Grammar.from_glrm(src)
    try:
        state = Constraint.compile(g, BYTE_VOCAB).start()
    except GrammarError:  # left recursion: the engine refuses it
        return
    m = g.matcher()
    for pick in choices:
        ours, engine = matcher_allowed(m), engine_allowed(state)
        if exact:
            assert ours == engine, (src, m.position)
        else:
            assert ours <= engine and (END in ours) == (END in engine), (src, m.position)
        assert ours or m.is_dead(), "a live position allows nothing"
        if not ours:
            return
        byte = sorted(ours)[pick % len(ours)]
        if byte == END:
            return
        assert state.commit_token(byte) and m.feed(bytes([byte]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_sources(recursive=False), st.lists(st.integers(0, 2**16), min_size=1, max_size=10))
def test_matcher_equals_engine_on_non_recursive_grammars(src: str, choices: list[int]) -> None:
    _walk(src, choices, exact=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_sources(recursive=True), st.lists(st.integers(0, 2**16), min_size=1, max_size=10))
def test_matcher_equals_engine_on_recursive_grammars(src: str, choices: list[int]) -> None:
    _walk(src, choices, exact=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_nested_sources(), st.lists(st.integers(0, 2**16), min_size=1, max_size=10))
def test_matcher_equals_engine_on_nested_recursion(src: str, choices: list[int]) -> None:
    _walk(src, choices, exact=True)
