"""Exactness of the token mask on real vocabularies: the engine's mask equals the mask the
byte-level matcher gives, checked over the whole vocabulary at sampled states."""

from __future__ import annotations

import json

import numpy as np
import pytest

from structgen.engine import Constraint

from engine_support import (
    greedy_tokens,
    json_grammar,
    lexeme_grammar,
    load_vocab,
    person_grammar,
    reference_mask,
)

JSON_DOC = json.dumps(
    {"name": "Zoë \"Z\" Ünal", "n": -12.5e3, "ok": [True, False, None], "nested": {"k": ["a\\b", 7]}},
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


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "qwen2", "llama-spm", "gemma3"])
def test_json_any_value(vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    assert _check(json_grammar(), vocab, JSON_DOC, every=9) > 2


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
def test_schema_like_object(vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    assert _check(person_grammar(), vocab, PERSON_DOC, every=4) > 3


def test_greedy_lexemes() -> None:
    vocab = load_vocab("llama-bpe")
    assert _check(lexeme_grammar(), vocab, "abc = 12; x=y; ", every=2) > 3
