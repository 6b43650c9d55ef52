"""`DynamicConstraint` (lazy, starts at once) and `Constraint` (compiled ahead of time): the same
state API, the same masks, and `Constraint.load` restores whichever was saved."""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab

from structgen import Constraint, ConstraintError, DynamicConstraint, Grammar

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 20}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["name"],
}
TEXTS = ['{"name": "Zoë", "tags": ["a", "b c"]}', '{"tags": [], "name": ""}', '{"name": "x\\"y"}']


def test_a_lazy_compile_is_a_dynamic_constraint() -> None:
    vocab = load_vocab("llama-bpe")
    g = Grammar.from_json_schema(SCHEMA)
    assert type(Constraint.compile(g, vocab)) is DynamicConstraint
    assert type(DynamicConstraint.compile(g, vocab)) is DynamicConstraint
    compiled = Constraint.compile(g, vocab, mode="aot")
    assert type(compiled) is Constraint and compiled.report is not None
    assert isinstance(DynamicConstraint.compile(g, vocab), Constraint)
    with pytest.raises(ConstraintError, match="lazily"):
        DynamicConstraint.compile(g, vocab, mode="aot")


def test_both_give_the_same_masks_and_load_as_what_was_saved() -> None:
    vocab = load_vocab("llama-bpe")
    g = Grammar.from_json_schema(SCHEMA)
    dynamic, compiled = DynamicConstraint.compile(g, vocab), Constraint.compile(g, vocab, mode="aot")
    for text in TEXTS:
        a, b = dynamic.start(), compiled.start()
        for tok in greedy_tokens(vocab, text.encode()):
            assert np.array_equal(a.mask_words(), b.mask_words()), text
            assert a.commit_token(tok) and b.commit_token(tok)
        assert a.is_accepting() and b.is_accepting()
    assert type(Constraint.load(dynamic.save(), vocab)) is DynamicConstraint
    assert type(Constraint.load(compiled.save(), vocab)) is Constraint
