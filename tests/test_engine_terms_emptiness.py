"""Emptiness of terms: the composed answer (sequences, choices and repetitions decided from their
parts, a search only under set operations, greedy lexemes and symbols) equals the answer of a
search from the whole term, on random terms with set operations, symbols and greedy lexemes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.engine.terms import TermStore

# a term as a tree of tuples, built the same way in two stores
leaf = st.one_of(
    st.tuples(st.just("bytes"), st.sets(st.integers(97, 98), min_size=1, max_size=2)),
    st.tuples(st.just("sym"), st.integers(0, 1)),
    st.just(("empty",)),
)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.tuples(st.just("seq"), st.lists(children, min_size=2, max_size=4)),
        st.tuples(st.just("alt"), st.lists(children, min_size=2, max_size=3)),
        st.tuples(st.just("repeat"), children, st.integers(0, 2), st.one_of(st.none(), st.integers(2, 3))),
        st.tuples(st.just("and"), children, children),
        st.tuples(st.just("diff"), children, children),
        st.tuples(st.just("poss"), children),
    )


trees = st.recursive(leaf, _extend, max_leaves=10)


def _build(s: TermStore, tree: tuple, built: list[int] | None = None) -> int:
    t = _build_node(s, tree, built)
    if built is not None:
        built.append(t)
    return t


def _build_node(s: TermStore, tree: tuple, built: list[int] | None) -> int:
    kind = tree[0]
    if kind == "bytes":
        m = 0
        for b in tree[1]:
            m |= 1 << b
        return s.bytes_(m)
    if kind == "sym":
        return s.sym(512 + 2 * tree[1])
    if kind == "empty":
        return 1
    if kind == "seq":
        return s.seq_list([_build(s, x, built) for x in tree[1]])
    if kind == "alt":
        return s.alt([_build(s, x, built) for x in tree[1]])
    if kind == "repeat":
        hi = tree[3]
        lo = tree[2] if hi is None else min(tree[2], hi)
        return s.repeat(_build(s, tree[1], built), lo, hi)
    if kind == "and":
        return s.and_(_build(s, tree[1], built), _build(s, tree[2], built))
    if kind == "diff":
        return s.diff(_build(s, tree[1], built), _build(s, tree[2], built))
    return s.poss(_build(s, tree[1], built))


def _symbol_free_set_ops(tree: tuple) -> bool:
    """Symbols never appear inside set operations or greedy lexemes (the grammar lowering
    guarantees it; derivatives by symbols assume it)."""
    kind = tree[0]
    if kind in ("and", "diff", "poss"):
        return not any(_has_sym(x) for x in tree[1:] if isinstance(x, tuple))
    if kind in ("seq", "alt"):
        return all(_symbol_free_set_ops(x) for x in tree[1])
    if kind == "repeat":
        return _symbol_free_set_ops(tree[1])
    return True


def _has_sym(tree: tuple) -> bool:
    if tree[0] == "sym":
        return True
    return any(_has_sym(x) for x in (tree[1] if tree[0] in ("seq", "alt") else tree[1:]) if isinstance(x, tuple))


@settings(max_examples=1000, deadline=None)
@given(trees, st.lists(st.integers(97, 98), max_size=3))
def test_composed_emptiness_equals_search(tree: tuple, word: list[int]) -> None:
    if not _symbol_free_set_ops(tree):
        return
    composed, searched = TermStore(), TermStore()
    parts_a: list[int] = []
    parts_b: list[int] = []
    a, b = _build(composed, tree, parts_a), _build(searched, tree, parts_b)
    # every part, then the derivatives along a word: new heads in front of shared tails
    for x, y in zip(parts_a, parts_b):
        assert composed.is_empty(x) == _searched_empty(searched, y)
    for c in word:
        a, b = composed.deriv(a, c), searched._deriv_unpruned(b, c)
        assert composed.is_empty(a) == _searched_empty(searched, b)


def _searched_empty(s: TermStore, t: int) -> bool:
    if t == 0:
        return True
    if not s.flags[t] & 3:  # no set operation, no greedy lexeme: not empty
        return False
    return s._depth_first_empty(t)


def test_heads_that_do_not_compose() -> None:
    """A greedy lexeme or a symbol at the head is searched, not composed: ``(a+)! a`` is empty
    though both parts are not, and a symbol counts as a completion even before an empty part."""
    s = TermStore()
    a, b = s.bytes_(1 << 97), s.bytes_(1 << 98)
    greedy = s.seq(s.poss(s.repeat(a, 1, None)), a)
    assert s.is_empty(greedy)
    empty_diff = s.diff(a, s.alt([a, b]))
    assert s.is_empty(empty_diff)
    assert not s.is_empty(s.seq(s.sym(512), empty_diff))
    assert s.is_empty(s.seq(b, empty_diff))
    assert not s.is_empty(s.seq(s.repeat(empty_diff, 0, 2), b))
    assert s.is_empty(s.seq(s.repeat(empty_diff, 1, 2), b))


@settings(max_examples=1000, deadline=None)
@given(trees, st.lists(st.integers(97, 98), max_size=3))
def test_composed_shortest_equals_search(tree: tuple, word: list[int]) -> None:
    """Shortest sentence lengths composed around set operations (searched alone) equal a search
    from the whole term. Regression: a term holding any set operation (an object's 'other key'
    difference) was searched to the end of the document for every budget mask, ~11 ms each."""
    if _has_sym(tree):
        return
    composed, searched = TermStore(), TermStore()
    parts_a: list[int] = []
    parts_b: list[int] = []
    a, b = _build(composed, tree, parts_a), _build(searched, tree, parts_b)
    for x, y in zip(parts_a, parts_b):
        assert composed.shortest(x) == searched._search(y)
    for c in word:
        a, b = composed.deriv(a, c), searched._deriv_unpruned(b, c)
        assert composed.shortest(a) == (None if b == 0 else searched._search(b))


def test_shortest_of_a_long_sequence_does_not_recurse() -> None:
    s = TermStore()
    other_key = s.diff(s.repeat(s.bytes_(1 << 97), 1, None), s.bytes_(1 << 97))
    t = s.seq_list([s.seq(other_key, s.bytes_(1 << (i % 250))) for i in range(5000)])
    assert s.shortest(t) == 5000 * 3
