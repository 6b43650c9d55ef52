"""A nullable machine called in a loop (``a ::= (b{2,}){3,}`` where ``b`` may match nothing and
calls itself) returns to the same parse stack without reading a byte. Found by the random
grammars of test_engine_budget_bound.py: the byte classes of such a stack recursed until the
"nested too deeply" limit, and a step counted returns as calls until "call chain without input".
Now the masks are the byte-level matcher's, until the grammar's ambiguity reaches its named
limit."""

from __future__ import annotations

import numpy as np
from engine_support import reference_mask

from structgen import Grammar, LimitError, Vocab
from structgen.engine import Constraint
from structgen.grammar import ir


def _grammar() -> Grammar:
    b = ir.Repeat(
        ir.Alt(
            [
                ir.Seq([]),
                ir.Seq([ir.CharClass(((97, 97),)), ir.CharClass(((98, 98),), negated=True), ir.Ref("b"), ir.Ref("a")]),
            ]
        ),
        1,
        4,
    )
    a = ir.Repeat(ir.Repeat(ir.Ref("b"), 2, None), 3, None)
    root = ir.Alt([ir.Literal(b"a"), ir.Ref("b"), ir.Seq([]), ir.Literal(b"aa")])
    return Grammar({"root": root, "a": a, "b": b}, "root")


def test_masks_through_nullable_call_loops() -> None:
    vocab = Vocab([bytes([i]) for i in range(256)] + [b"ab", b"ba", b"aab", b"aca"], eos_token_ids=[0])
    grammar = _grammar()
    c = Constraint.compile(grammar, vocab)
    st = c.start()
    text = b"acac"
    for i in range(len(text) + 1):
        try:
            got = st.mask()
        except LimitError as e:  # the grammar's ambiguity grows with every "ac"
            assert e.limit == "max_stacks_per_config" and i >= 3
            return
        assert np.array_equal(got, reference_mask(grammar, vocab, text[:i])), f"after {text[:i]!r}"
        if i < len(text):
            assert st.commit_token(text[i])
