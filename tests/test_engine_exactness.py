"""Exactness of the token mask on real vocabularies: the engine's mask equals the mask the
byte-level matcher gives, checked over the whole vocabulary at sampled states."""

from __future__ import annotations

import json

import numpy as np
import pytest
from engine_support import (
    greedy_tokens,
    json_grammar,
    lexeme_grammar,
    load_vocab,
    person_grammar,
    reference_mask,
)

from structgen.engine import Constraint

JSON_DOC = json.dumps(
    {"name": 'Zoë "Z" Ünal', "n": -12.5e3, "ok": [True, False, None], "nested": {"k": ["a\\b", 7]}},
    ensure_ascii=False,
)
PERSON_DOC = '{"name": "Ann Lee", "age": 42, "role": "admin", "tags": ["x", "long name"]}'


def _states(vocab, text: str, every: int):  # type: ignore[no-untyped-def]
    ids = greedy_tokens(vocab, text.encode())
    return [(ids[:i], b"".join(vocab.token_bytes(t) for t in ids[:i])) for i in range(0, len(ids) + 1, every)]


def _check(grammar, vocab, text: str, every: int) -> int:  # type: ignore[no-untyped-def]
    c = Constraint.compile(grammar, vocab)
    checked = 0
    for prefix_ids, prefix in _states(vocab, text, every):
        st = c.start()
        assert st.commit_tokens(prefix_ids)
        got = st.mask()
        want = reference_mask(grammar, vocab, prefix)
        if not np.array_equal(got, want):
            extra = np.flatnonzero(got & ~want)[:10].tolist()
            missing = np.flatnonzero(want & ~got)[:10].tolist()
            pytest.fail(
                f"mask differs after {prefix!r}: allowed but invalid "
                f"{[vocab.token_bytes(t) if t < vocab.n_tokens else t for t in extra]}, "
                f"valid but masked {[vocab.token_bytes(t) if t < vocab.n_tokens else t for t in missing]}"
            )
        checked += 1
    return checked


SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "vocab_name",
    [
        "llama-spm",
        pytest.param("llama-bpe", marks=SLOW),
        pytest.param("qwen2", marks=SLOW),
        pytest.param("gemma3", marks=SLOW),
    ],
)
def test_json_any_value(vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    assert _check(json_grammar(), vocab, JSON_DOC, every=9) > 2


@pytest.mark.parametrize("vocab_name", ["llama-spm", pytest.param("llama-bpe", marks=SLOW)])
def test_schema_like_object(vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    assert _check(person_grammar(), vocab, PERSON_DOC, every=4) > 3


def test_greedy_lexemes() -> None:
    vocab = load_vocab("llama-bpe")
    assert _check(lexeme_grammar(), vocab, "abc = 12; x=y; ", every=2) > 3


def _byte_token(vocab, b: int) -> int:  # type: ignore[no-untyped-def]
    return vocab.lookup_text(bytes([b]))[0]


@pytest.mark.parametrize("vocab_name", ["llama-bpe", pytest.param("gemma3", marks=SLOW)])
def test_states_inside_a_multibyte_character(vocab_name: str) -> None:
    """Tokens that split a UTF-8 character: masks in the middle of one are exact too."""
    vocab = load_vocab(vocab_name)
    g = json_grammar()
    c = Constraint.compile(g, vocab)
    for char in ("é", "☃", "😀"):
        enc = char.encode()
        for cut in range(1, len(enc)):
            prefix = b'["' + enc[:cut]
            ids = greedy_tokens(vocab, b'["') + [_byte_token(vocab, b) for b in enc[:cut]]
            st = c.start()
            assert st.commit_tokens(ids)
            assert np.array_equal(st.mask(), reference_mask(g, vocab, prefix)), (char, cut)


def test_random_reachable_states() -> None:
    """States reached by sampling allowed tokens at random (whitespace runs, odd tokens)."""
    vocab = load_vocab("llama-spm")
    g = json_grammar()
    c = Constraint.compile(g, vocab)
    rng = np.random.default_rng(7)
    for _ in range(3):
        st = c.start()
        text = b""
        for _step in range(int(rng.integers(1, 12))):
            allowed = np.flatnonzero(st.mask())
            allowed = allowed[(allowed < vocab.n_tokens) & ~np.isin(allowed, vocab.eos_token_ids)]
            if allowed.size == 0:
                break
            t = int(rng.choice(allowed))
            assert st.commit_token(t)
            text += vocab.token_bytes(t)
        assert np.array_equal(st.mask(), reference_mask(g, vocab, text)), text


@SLOW
def test_counted_strings_with_escapes() -> None:
    """Counted repetitions (maxLength-style strings) take the unit-count path: still exact."""
    from structgen import Grammar
    from structgen.grammar import ir

    vocab = load_vocab("llama-bpe")
    plain = ir.CharClass(((0, 31), (34, 34), (92, 92)), negated=True)
    escape = ir.seq(
        ir.lit("\\"),
        ir.alt(ir.char('"', "\\", "n", "t"), ir.seq(ir.lit("u"), ir.Repeat(ir.char((48, 57), (97, 102)), 4, 4))),
    )
    unit = ir.alt(plain, escape)
    g = Grammar(
        {
            "root": ir.seq(
                ir.lit('{"a": "'), ir.Repeat(unit, 2, 9), ir.lit('", "b": "'), ir.Repeat(unit, 0, 30), ir.lit('"}')
            )
        }
    )
    assert _check(g, vocab, '{"a": "x\\n\\u00e9zz", "b": "Ünïcödé and \\"quotes\\" here"}', every=1) > 10


def test_counted_pattern_strings() -> None:
    """A pattern intersected with length bounds (how schema strings combine them): exact too."""
    from structgen import Grammar
    from structgen.grammar import ir

    vocab = load_vocab("llama-spm")
    plain = ir.CharClass(((0, 31), (34, 34), (92, 92)), negated=True)
    word = ir.plus(ir.char((97, 122), (48, 57), " "))
    g = Grammar({"root": ir.seq(ir.lit('["'), ir.Intersection(word, ir.Repeat(plain, 3, 20)), ir.lit('"]'))})
    assert _check(g, vocab, '["hello world 42"]', every=1) > 4


def test_counted_strings_small_vocab() -> None:
    """The counted-repetition path on the SentencePiece vocabulary (byte-fallback tokens)."""
    from structgen import Grammar
    from structgen.grammar import ir

    vocab = load_vocab("llama-spm")
    plain = ir.CharClass(((0, 31), (34, 34), (92, 92)), negated=True)
    escape = ir.seq(ir.lit("\\"), ir.char('"', "\\", "n"))
    g = Grammar({"root": ir.seq(ir.lit('{"a": "'), ir.Repeat(ir.alt(plain, escape), 1, 6), ir.lit('"}'))})
    assert _check(g, vocab, '{"a": "é\\nb\\"c"}', every=1) > 5


def test_counted_pattern_that_needs_a_last_character() -> None:
    """Regression: ``[a-z ]+[0-9]`` with at most 12 characters must leave room for the digit
    (a 12-letter token is not allowed after the opening quote)."""
    from structgen import Grammar
    from structgen.grammar import ir

    vocab = load_vocab("llama-spm")
    plain = ir.CharClass(((0, 31), (34, 34), (92, 92)), negated=True)
    pattern = ir.seq(ir.plus(ir.char((97, 122), " ")), ir.char((48, 57)))
    g = Grammar({"root": ir.seq(ir.lit('"'), ir.Intersection(pattern, ir.Repeat(plain, 0, 12)), ir.lit('"'))})
    assert _check(g, vocab, '"abc de7"', every=1) > 3


def test_number_before_an_intersection() -> None:
    """Regression: emptiness searches no longer start nested searches (was a LimitError)."""
    from structgen import Grammar
    from structgen.grammar import ir

    vocab = load_vocab("llama-spm")
    digits = ir.char((48, 57))
    g = Grammar(
        {
            "root": ir.seq(
                ir.plus(digits),
                ir.star(digits),
                ir.Intersection(ir.plus(ir.char((97, 122))), ir.Repeat(ir.ANY_CHAR, 1, 3)),
            )
        }
    )
    assert _check(g, vocab, "12ab", every=1) > 2
