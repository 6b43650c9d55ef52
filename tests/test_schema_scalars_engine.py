"""The token mask engine on scalar schema nodes: masks equal the byte-level matcher's on a real
vocabulary (slow: each reference mask walks the whole vocabulary through the matcher)."""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab, reference_mask

from structgen import Grammar
from structgen.grammar import ir
from structgen.schema.numbers import integer_node, number_node
from structgen.schema.strings import string_node

pytestmark = pytest.mark.slow


def _check(grammar: Grammar, text: str, every: int = 2) -> None:
    from structgen.engine import Constraint

    vocab = load_vocab("llama-bpe")
    assert grammar.matches(text)
    c = Constraint.compile(grammar, vocab)
    ids = greedy_tokens(vocab, text.encode())
    for i in range(0, len(ids) + 1, every):
        st = c.start()
        assert st.commit_tokens(ids[:i])
        prefix = b"".join(vocab.token_bytes(t) for t in ids[:i])
        got, want = st.mask(), reference_mask(grammar, vocab, prefix)
        extra = [vocab.token_bytes(t) for t in np.flatnonzero(got & ~want)[:5].tolist()]
        missing = [vocab.token_bytes(t) for t in np.flatnonzero(want & ~got)[:5].tolist()]
        assert not extra and not missing, f"after {prefix[-30:]!r}: invalid allowed {extra}, valid masked {missing}"


def test_formats_and_numbers() -> None:
    rules: dict[str, ir.Node] = {}
    lit = ir.lit
    body = ir.seq(
        lit('{"when": '), string_node(format="date-time"),
        lit(', "id": '), string_node(format="uuid"),
        lit(', "h": '), string_node(format="hostname"),
        lit(', "n": '), integer_node(minimum=-5, maximum=10**6, multiple_of=7, rules=rules),
        lit(', "x": '), number_node(minimum=-0.5, exclusive_maximum=3.25),
        lit("}"),
    )  # fmt: skip
    g = Grammar({"root": body, **rules}, "root")
    _check(g, '{"when": "2020-02-29T23:59:60Z", "id": "2eb8aa08-aa98-11ea-b4aa-73b441d16380", '
              '"h": "www.example.com", "n": 49, "x": 3.2e0}')  # fmt: skip


def test_pattern_with_max_length() -> None:
    g = Grammar({"root": string_node(pattern="^[a-z ]+\\d$", max_length=12)}, "root")
    _check(g, '"abc de7"', every=1)


def test_number_before_a_pattern_string() -> None:
    body = ir.seq(
        number_node(minimum=-0.5, exclusive_maximum=3.25), ir.lit(","), string_node(pattern="^[a-z]+$", max_length=5)
    )
    g = Grammar({"root": body}, "root")
    _check(g, '1.5,"abc"', every=1)
