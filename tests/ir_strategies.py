"""Hypothesis strategies for grammar trees (``structgen.grammar.ir``) built from given leaves, for
tests that compare one walk over the tree with another."""

from __future__ import annotations

from typing import Callable

from hypothesis import strategies as st

from structgen.grammar import ir


def ir_trees(
    leaves: st.SearchStrategy[ir.Node], share: Callable[[ir.Node], ir.Node], *, max_leaves: int = 30
) -> st.SearchStrategy[ir.Node]:
    """Trees of every composite node kind over ``leaves``, where ``share`` makes a node holding
    one subtree twice (the same object: walks must not count it as two)."""

    def grow(children: st.SearchStrategy[ir.Node]) -> st.SearchStrategy[ir.Node]:
        lists = st.lists(children, min_size=0, max_size=4)
        return st.one_of(
            lists.map(lambda xs: ir.Seq(tuple(xs))),
            lists.map(lambda xs: ir.Alt(tuple(xs))),
            st.tuples(children, st.integers(0, 2)).map(lambda t: ir.Repeat(t[0], t[1], t[1] + 1)),
            children.map(ir.Lexeme),
            st.tuples(children, children).map(lambda t: ir.Difference(*t)),
            st.tuples(children, children).map(lambda t: ir.Intersection(*t)),
            children.map(share),
        )

    return st.recursive(leaves, grow, max_leaves=max_leaves)
