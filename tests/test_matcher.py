"""The byte-level reference matcher: ambiguity, recursion, counts, tokens, greedy lexemes, UTF-8."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import ConstraintError, Grammar
from structgen.grammar import ir

A, L = ir.Ref, ir.lit


def g(**rules: ir.Node) -> Grammar:
    return Grammar(rules, "root")


def test_sequence_and_repetition() -> None:
    gr = g(root=ir.seq(A("term"), ir.star(ir.seq(L("+"), A("term")))), term=ir.plus(ir.char((48, 57))))
    assert gr.matches("1+22+333")
    assert not gr.matches("1+")
    assert not gr.matches("1+a")


def test_left_and_right_recursion_and_nullable_rules() -> None:
    left = g(root=ir.alt(L("a"), ir.seq(A("root"), L("a"))))
    assert [left.matches("a" * i) for i in range(4)] == [False, True, True, True]
    nullable = g(root=ir.alt(ir.EMPTY, ir.seq(A("e"), A("root"), L("x"))), e=ir.alt(ir.EMPTY, L("a")))
    assert nullable.matches("") and nullable.matches("axx") and nullable.matches("xx")
    assert not nullable.matches("aax")


def test_ambiguous_grammar_is_polynomial() -> None:
    # S -> S S | a : exponentially many parses, Earley stays polynomial
    gr = g(root=ir.alt(L("a"), ir.seq(A("root"), A("root"))))
    assert gr.matches("a" * 60)


def test_large_counts_stay_small() -> None:
    gr = g(root=ir.Repeat(L("ab"), 3, 1_000_000))
    assert gr.matches("ab" * 3) and gr.matches("ab" * 500)
    assert not gr.matches("ab" * 2) and not gr.matches("ab" * 3 + "a")
    exact = g(root=ir.Repeat(L("a"), 777, 777))
    assert exact.matches("a" * 777) and not exact.matches("a" * 776) and not exact.matches("a" * 778)


def test_utf8_classes_and_partial_characters() -> None:
    gr = g(root=ir.plus(ir.char((0x3042, 0x3093))))
    assert gr.matches("あいう") and not gr.matches("あa")
    m = gr.matcher()
    assert m.feed("あ".encode()[:1])
    assert m.viable_next_bytes() == frozenset({0x81, 0x82})
    assert not m.is_accepting()


def test_any_char_never_matches_invalid_utf8() -> None:
    gr = g(root=ir.star(ir.ANY_CHAR))
    assert gr.matches("é☃😀")
    assert not gr.matches(b"\xff")
    assert not gr.matches(b"\xed\xa0\x80")  # an encoded surrogate


def test_token_atoms() -> None:
    gr = g(root=ir.seq(ir.Token((10,)), ir.star(ir.Token((11,), negated=True)), ir.Token((11,))))
    m = gr.matcher()
    assert m.feed_token(10) and m.feed_token(None, b"hello") and m.feed_token(12)
    assert not m.is_accepting()
    assert m.feed_token(11) and m.is_accepting()
    assert not gr.matcher().feed_token(11)


def test_greedy_lexemes() -> None:
    a_plus = ir.Lexeme(ir.plus(L("a")))
    assert not any(g(root=ir.seq(a_plus, a_plus)).matches("a" * i) for i in range(5))
    ab = g(root=ir.seq(ir.Lexeme(ir.seq(L("a"), ir.opt(L("b")))), L("b")))
    assert not ab.matches("ab") and ab.matches("abb")
    # repetition of one-character lexemes is not greedy
    nt = g(root=ir.seq(ir.plus(ir.Lexeme(ir.char((97, 122)))), L("x")))
    assert nt.matches("abx") and nt.matches("xx")


def test_difference_and_intersection() -> None:
    diff = g(root=ir.Lexeme(ir.Difference(ir.plus(L("a")), L("aa"))))
    assert [diff.matches("a" * i) for i in range(5)] == [False, True, False, True, True]
    inter = g(root=ir.Intersection(ir.plus(ir.char((97, 99))), ir.seq(ir.star(ir.ANY_CHAR), L("c"))))
    assert inter.matches("abc") and not inter.matches("abca") and not inter.matches("c!")


def test_rollback_and_viable_bytes() -> None:
    gr = g(root=ir.seq(ir.plus(ir.char((48, 57))), ir.opt(L("+"))))
    m = gr.matcher()
    assert m.feed(b"12")
    assert m.viable_next_bytes() == frozenset(b"0123456789+")
    assert not m.feed(b"x")
    m.rollback(1)
    assert m.is_accepting() and m.feed(b"+") and m.is_accepting()
    m.rollback(3)
    assert m.position == 0 and not m.is_accepting()
    with pytest.raises(ConstraintError):
        m.rollback(1)


# -- property: grammars built from regex-like nodes agree with Python's re -----------------------

_atoms = st.sampled_from([("a", L("a")), ("b", L("b")), ("[ab]", ir.char("a", "b")), ("(?:ab)", L("ab"))])


@st.composite
def regexes(draw: st.DrawFn, depth: int = 3) -> tuple[str, ir.Node]:
    if depth == 0 or draw(st.booleans()):
        return draw(_atoms)
    kind = draw(st.sampled_from(["seq", "alt", "star", "count"]))
    if kind == "seq":
        (p1, n1), (p2, n2) = draw(regexes(depth - 1)), draw(regexes(depth - 1))
        return f"(?:{p1}{p2})", ir.seq(n1, n2)
    if kind == "alt":
        (p1, n1), (p2, n2) = draw(regexes(depth - 1)), draw(regexes(depth - 1))
        return f"(?:{p1}|{p2})", ir.alt(n1, n2)
    p, n = draw(regexes(depth - 1))
    if kind == "star":
        return f"(?:{p})*", ir.star(n)
    lo = draw(st.integers(0, 7))
    hi = draw(st.integers(lo, 9))
    return f"(?:{p}){{{lo},{hi}}}", ir.repeat(n, lo, hi)


@settings(max_examples=200, deadline=None)
@given(regexes(), st.lists(st.text(alphabet="ab", max_size=12), min_size=1, max_size=8))
def test_matcher_agrees_with_re(rx: tuple[str, ir.Node], samples: list[str]) -> None:
    pattern, node = rx
    gr = g(root=node)
    for s in samples:
        assert gr.matches(s) == (re.fullmatch(pattern, s) is not None), (pattern, s)
