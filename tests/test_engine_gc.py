"""The engine's memo tables hold no objects the garbage collector must keep scanning: per
transition it stores ints and tuples of ints (which the collector stops tracking), never a
set per entry, so a full collection does not grow with the automaton the engine has built."""

from __future__ import annotations

import gc
import json

from engine_support import greedy_tokens, json_grammar, load_vocab

from structgen.engine import Constraint

DOC = json.dumps({"name": "Zoë", "tags": ["a", "b c"], "n": [1.5, -2, True, None], "o": {"k": {"x": "y"}}})


def walk(c: Constraint, vocab) -> None:  # type: ignore[no-untyped-def]
    st = c.start()
    for tok in greedy_tokens(vocab, DOC.encode()):
        st.mask_words()
        assert st.commit_token(tok)


def test_walks_leave_few_tracked_objects() -> None:
    vocab = load_vocab("llama-spm")
    # what the process keeps per vocabulary (shared walks, unit counts, loop regions) is made by
    # a first constraint, so that the count below is the constraint's own whatever ran before
    walk(Constraint.compile(json_grammar(), vocab), vocab)
    c = Constraint.compile(json_grammar(), vocab)
    st = c.start()
    st.mask_words()
    gc.collect()
    before = len(gc.get_objects())
    for tok in greedy_tokens(vocab, DOC.encode()):
        st.mask_words()
        assert st.commit_token(tok)
    gc.collect()
    grown = len(gc.get_objects()) - before
    # transitions the table computed (a whole row in one pass keeps no memo entry per byte)
    transitions = c._table.filled
    assert transitions > 200
    assert grown < transitions // 4, (grown, transitions)
