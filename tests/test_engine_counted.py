"""Masks inside counted repetitions (counters.py) equal the masks of the ordinary walk at every
count, including the counts that share one mask because they leave more units than any token
holds, and the last counts, where the bound cuts tokens off."""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab

from structgen import Grammar
from structgen.engine import Constraint
from structgen.grammar import ir

L = ir.lit


def _grammar(lo: int, hi: int) -> Grammar:
    body = ir.Repeat(ir.CharClass(((97, 122), (32, 32))), lo, hi)
    return Grammar({"root": ir.seq(L('{"s": "'), body, L('", "n": 1}'))}, "root")


@pytest.mark.parametrize(("lo", "hi"), [(0, 40), (30, 45), (3, 6)])
def test_counted_masks_equal_walks(lo: int, hi: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    vocab = load_vocab("llama-spm")
    text = '{"s": "' + ("the quick brown fox jumps over a lazy dog " * 2)[: (lo + hi) // 2] + '", "n": 1}'
    ids = greedy_tokens(vocab, text.encode())
    fast = Constraint.compile(_grammar(lo, hi), vocab)
    st = fast.start()
    got = []
    for tok in ids:
        got.append(st.mask_words().copy())
        assert st.commit_token(tok)
    assert fast._counted_words, "the counted path was not taken"
    monkeypatch.setattr(Constraint, "_counted_base", lambda self, cid: None)
    slow = Constraint.compile(_grammar(lo, hi), vocab)
    st = slow.start()
    for step, tok in enumerate(ids):
        assert np.array_equal(st.mask_words(), got[step]), f"mask differs at token {step}"
        assert st.commit_token(tok)
