"""Choices of runs of one byte before a star: the longer runs are dropped (terms.py).

``b^n·R*`` is inside ``b^m·R*`` for ``m < n`` when ``b`` is one of ``R``'s sentences, so a choice
keeps only the shortest run. An unanchored literal of one repeated byte is live at every one of
the last positions: without the rule, its derivative was a choice of one more suffix per byte,
left-factored again through ``MAX_FACTOR_DEPTH`` levels each time (34 new terms per byte, 272
per token of a real vocabulary); with it, one new term per byte (the count of bytes matched,
which the language itself needs).
"""

from __future__ import annotations

import pytest
from engine_support import pieces_vocab, walk_against_matcher
from test_hardening_grammar import BYTE_VOCAB, END, engine_allowed, matcher_allowed

from structgen.engine.constraint import Constraint
from structgen.engine.terms import FULL_MASK, TermStore
from structgen.grammar import Grammar
from structgen.schema import json_schema_to_grammar


def test_the_shorter_run_contains_the_longer() -> None:
    s = TermStore()
    a = s.bytes_(1 << ord("a"))
    star = s.repeat(s.bytes_(FULL_MASK), 0, None)
    one, three = s.seq(a, star), s.seq_list([a, a, a, star])
    assert s.alt([three, one]) == one
    assert s.alt([three, star]) == star
    # and before the star's tail: a·a·.*·b inside a·.*·b
    tail = s.seq(star, s.bytes_(1 << ord("b")))
    assert s.alt([s.seq_list([a, a, tail]), s.seq(a, tail)]) == s.seq(a, tail)
    # a is not a sentence of b*: a·a·b* is not inside a·b*, "aa" stays a sentence
    b_star = s.repeat(s.bytes_(1 << ord("b")), 0, None)
    kept = s.alt([s.seq_list([a, a, b_star]), s.seq(a, b_star)])
    assert s.nullable[s.deriv(s.deriv(kept, ord("a")), ord("a"))]
    # a bounded repetition is not a star: "aaaa" stays a sentence
    some = s.repeat(s.bytes_(FULL_MASK), 0, 2)
    kept = s.alt([s.seq_list([a, a, a, some]), s.seq(a, some)])
    assert s.nullable[s.deriv(s.deriv(s.deriv(s.deriv(kept, ord("a")), ord("a")), ord("a")), ord("a"))]


def _terms_per_byte(grammar: Grammar, prefix: bytes, byte: int, steps: int) -> float:
    c = Constraint.compile(grammar, BYTE_VOCAB)
    state = c.start()
    for b in prefix:
        state.mask_words()
        assert state.commit_token(b)
    before = c.stats()["terms"]
    for _ in range(steps):
        state.mask_words()
        assert state.commit_token(byte)
    return (c.stats()["terms"] - before) / steps


@pytest.mark.parametrize("length", [2_000, 20_000])
def test_unanchored_literal_of_one_byte_grows_one_term_per_byte(length: int) -> None:
    # before: 34 new terms per byte (a choice of every live suffix, left-factored 32 levels deep)
    g = Grammar.from_regex("a" * length)
    assert _terms_per_byte(g, b"b" + b"a" * 20, ord("a"), 200) <= 1.0


def test_inside_a_json_string_pattern() -> None:
    g = json_schema_to_grammar({"type": "string", "pattern": "a" * 500})
    assert _terms_per_byte(g, b'"b' + b"a" * 20, ord("a"), 200) <= 1.0


@pytest.mark.parametrize(
    "regex, texts",
    [
        ("a" * 12, [b"baaaaab" + b"a" * 14, b"a" * 20, b"aabaaa" * 4]),
        ("(ab)*" + "a" * 6 + "c", [b"ab" * 3 + b"a" * 9 + b"c", b"aaaaaaaaac"]),
        ("x" + "a" * 8 + ".*", [b"xaaaaaaaaab", b"xaaaa"]),
        ("é" + "a" * 5, ["zéaaaaaaé".encode(), "ééaaaa".encode()]),
    ],
)
def test_masks_equal_the_matcher_where_runs_are_dropped(regex: str, texts: list[bytes]) -> None:
    g = Grammar.from_regex(regex)
    for text in texts:
        state, m = Constraint.compile(g, BYTE_VOCAB).start(), g.matcher()
        for byte in text:
            ours = engine_allowed(state)
            assert ours == matcher_allowed(m), text
            if byte not in ours:
                break
            assert state.commit_token(byte) and m.feed(bytes([byte]))
        else:
            assert (END in engine_allowed(state)) == m.is_accepting()


def test_masks_equal_the_matcher_on_multi_byte_tokens() -> None:
    text = b"b" + b"a" * 120 + b"ba" + b"a" * 40
    g = Grammar.from_regex("a" * 100)
    vocab = pieces_vocab([text], sizes=(2, 3, 5, 8))
    walk_against_matcher(Constraint.compile(g, vocab), g, vocab, text, every=7)
