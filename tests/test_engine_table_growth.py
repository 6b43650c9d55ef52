"""Configurations made outside the transition table (the unbounded base of a counted repetition,
token-atom steps) get rows before a walk reads them: a mask asked for one while the table is
exactly full used to fail with an IndexError (met by the benchmark on tool_call, Llama 3)."""

from __future__ import annotations

import numpy as np
from engine_support import greedy_tokens, load_vocab, reference_mask

from structgen import Grammar
from structgen.engine import Constraint


def _fill_table_exactly(c: Constraint) -> None:
    table = c._table
    n = len(c._system.configs)
    table.rows = table.rows[:n].copy()
    table._flat = memoryview(table.rows.reshape(-1))


def test_counted_base_made_when_the_table_is_full() -> None:
    vocab = load_vocab("llama-spm")
    grammar = Grammar.from_json_schema({"type": "string", "maxLength": 5})
    c = Constraint.compile(grammar, vocab)
    text = b'"abc"'
    tokens = greedy_tokens(vocab, text)
    st = c.start()
    done = b""
    for tok in tokens:
        _fill_table_exactly(c)  # the next new configuration has no row
        assert np.array_equal(st.mask(), reference_mask(grammar, vocab, done))
        assert st.commit_token(tok)
        done += vocab.token_bytes(tok)
    assert st.is_accepting()
