"""The translator's shortcuts give the same grammars as the plain walks they replace.

Translation speed work (DAG walks instead of tree walks, nodes kept when encoding leaves them
unchanged, format grammars built once) must not change a single rule: these tests compare each
shortcut with a straightforward reference on hypothesis-built trees, including trees that share
subtrees and trees not in the smart constructors' normal form. No timings are asserted.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schema_helpers import unmarked

from structgen.grammar import ir
from structgen.schema import trim as trim_mod
from structgen.schema.json_escapes import encode_chars, encode_codepoints

# ---------------------------------------------------------------------------------------------
# character-level trees, built with the raw constructors (not normalised) and with sharing

_chars = st.sampled_from(["a", "0", "/", '"', "\\", "é", "\n", "ab", "", "-:", "日本"])
_classes = st.sampled_from([((0x61, 0x7A),), ((0x30, 0x39),), ((0x2F, 0x2F),), ((0x20, 0x7E),), ((0xE9, 0xE9),)])


def _leaf() -> st.SearchStrategy[ir.Node]:
    return st.one_of(
        _chars.map(ir.lit),
        _classes.map(lambda rs: ir.char(*rs)),
        st.just(ir.EMPTY),
        st.just(ir.NOTHING),
    )


def _extend(children: st.SearchStrategy[ir.Node]) -> st.SearchStrategy[ir.Node]:
    lists = st.lists(children, min_size=0, max_size=4)
    counts = st.tuples(st.integers(0, 2), st.integers(0, 3)).map(lambda t: (t[0], t[0] + t[1]))
    return st.one_of(
        lists.map(lambda xs: ir.Seq(tuple(xs))),
        lists.map(lambda xs: ir.Alt(tuple(xs))),
        lists.map(lambda xs: ir.seq(*xs)),
        lists.map(lambda xs: ir.alt(*xs)),
        st.tuples(children, counts).map(lambda t: ir.Repeat(t[0], t[1][0], t[1][1])),
        # the same object twice: a shared subtree
        children.map(lambda c: ir.Seq((c, ir.lit("x"), c))),
        children.map(lambda c: ir.Alt((c, ir.Seq((c, c))))),
    )


char_trees = st.recursive(_leaf(), _extend, max_leaves=25)


def _reference_encode(node: ir.Node) -> ir.Node:
    """Encoding rebuilt with the smart constructors everywhere (the walk before the shortcut)."""
    done: dict[int, ir.Node] = {}
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in done:
            continue
        kids = n.children()
        if kids and not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids)
            continue
        new = [done[id(c)] for c in kids]
        if isinstance(n, ir.Literal):
            text = n.data.decode("utf-8")
            out = ir.seq(*(encode_codepoints(((ord(c), ord(c)),)) for c in text)) if text else ir.EMPTY
        elif isinstance(n, ir.CharClass):
            out = encode_codepoints(n.codepoints())
        elif isinstance(n, ir.Seq):
            out = ir.seq(*new) if new else ir.EMPTY
        elif isinstance(n, ir.Alt):
            out = ir.alt(*new) if new else ir.NOTHING
        else:
            assert isinstance(n, ir.Repeat)
            out = ir.NOTHING if new[0] == ir.NOTHING and n.min > 0 else ir.repeat(new[0], n.min, n.max)
        done[id(n)] = out
    return done[id(node)]


@settings(max_examples=400, deadline=None)
@given(char_trees)
def test_encode_chars_equals_the_plain_rebuild(node: ir.Node) -> None:
    assert encode_chars(node) == _reference_encode(node)


def test_ascii_format_encodes_to_the_same_object() -> None:
    """Mostly-ASCII languages come back as the very node given (its sharing kept)."""
    node = ir.seq(ir.lit("20"), ir.char((0x30, 0x39)), ir.alt(ir.lit("-01"), ir.lit("-02")))
    assert encode_chars(node) is node
    slash = ir.seq(ir.lit("a/b"), ir.char((0x30, 0x39)))
    assert encode_chars(slash) != slash  # "/" may be written "\/"


# ---------------------------------------------------------------------------------------------
# trim's DAG walks against tree walks

rule_trees = st.recursive(
    st.one_of(_leaf(), st.sampled_from(["r1", "r2", "r3"]).map(ir.Ref)),
    _extend,
    max_leaves=25,
)


def _tree_ref_counts(node: ir.Node) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ir.iter_nodes(node):
        if isinstance(n, ir.Ref):
            out[n.name] = out.get(n.name, 0) + 1
    return out


def _tree_depth(node: ir.Node) -> int:
    best = 0
    stack = [(node, 1)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        stack.extend((c, d + 1) for c in n.children())
    return best


@settings(max_examples=300, deadline=None)
@given(rule_trees)
def test_ref_counts_count_every_occurrence_in_first_seen_order(node: ir.Node) -> None:
    expected = _tree_ref_counts(node)
    got = trim_mod._ref_counts(node)
    assert got == expected
    assert list(got) == list(expected)


@settings(max_examples=300, deadline=None)
@given(rule_trees)
def test_dag_depths_equal_tree_depths(node: ir.Node) -> None:
    assert ir.depth(node) == _tree_depth(node)
    memo: dict[int, tuple[ir.Node, int]] = {}
    assert trim_mod._depth(node, memo) == _tree_depth(node)
    assert trim_mod._depth(ir.Seq((node, node)), memo) == _tree_depth(node) + 1


@settings(max_examples=300, deadline=None)
@given(rule_trees)
def test_distinct_walk_finds_the_same_nodes(node: ir.Node) -> None:
    assert {id(n) for n in ir.iter_distinct(node)} == {id(n) for n in ir.iter_nodes(node)}
    assert ir.refs(node) == set(_tree_ref_counts(node))


def test_shared_subtree_counts_once_per_occurrence() -> None:
    shared = ir.seq(ir.Ref("a"), ir.lit("x"))
    body = ir.Alt((ir.Seq((shared, shared)), shared, ir.Ref("b")))
    assert trim_mod._ref_counts(body) == {"a": 3, "b": 1}


@pytest.mark.parametrize("levels", [3, 12, 80])
def test_ref_counts_past_the_tree_walk_slack(levels: int) -> None:
    """A DAG whose tree doubles at every level: expanded while it meets few shared nodes again
    (3 levels), counted by paths past ``_TREE_SLACK`` (12 levels: 4,096 leaves, 80: 2^80)."""
    node: ir.Node = ir.Ref("a")
    for i in range(levels):
        node = ir.Seq((node, ir.Ref("b"), node, ir.lit(str(i))))
    got = trim_mod._ref_counts(node)
    assert got == {"a": 2**levels, "b": 2**levels - 1}
    assert list(got) == ["a", "b"]
    if levels <= 12:
        assert list(got.items()) == list(_tree_ref_counts(node).items())


# ---------------------------------------------------------------------------------------------
# closed subtrees (ir.mark_closed): walks step over them, results unchanged


def test_mark_closed_refuses_references_and_tokens() -> None:
    with_ref = ir.Seq((ir.lit("a"), ir.Alt((ir.Ref("r"), ir.lit("b")))))
    with_token = ir.Seq((ir.lit("a"), ir.Token((5,))))
    for node in (with_ref, with_token, ir.Ref("r")):
        assert ir.mark_closed(node) is node
        assert not ir.is_closed(node)
    closed = ir.Seq((ir.lit("a"), ir.Alt((ir.lit("b"), ir.char((0x30, 0x39))))))
    assert ir.mark_closed(closed) is closed
    assert ir.is_closed(closed) and ir.is_closed(closed.items[1])


@settings(max_examples=200, deadline=None)
@given(rule_trees, rule_trees, rule_trees, char_trees)
def test_trim_and_grammar_checks_ignore_marks(a: ir.Node, b: ir.Node, c: ir.Node, shared: ir.Node) -> None:
    """The same rules trimmed with closed marks on a shared character subtree and without."""
    rules = {
        "root": ir.Alt((ir.Seq((ir.lit("<"), shared, ir.Ref("r1"))), a)),
        "r1": ir.Seq((b, shared, ir.Repeat(ir.Ref("r2"), 0, 2))),
        "r2": ir.Alt((c, ir.Seq((shared, shared)), ir.Ref("r3"))),
        "r3": ir.Seq((ir.Ref("r1"), shared)),
    }
    plain = unmarked(lambda: list(trim_mod.trim(dict(rules), "root").items()))
    ir.mark_closed(shared)
    assert list(trim_mod.trim(dict(rules), "root").items()) == plain
    assert ir.depth(rules["r2"]) == _tree_depth(rules["r2"])
    assert ir.refs(rules["r3"]) == {"r1"}


def test_grammar_validation_still_sees_everything_outside_closed_subtrees() -> None:
    import pytest

    from structgen.errors import GrammarError
    from structgen.grammar import Grammar

    closed = ir.mark_closed(ir.Intersection(ir.repeat(ir.char((0x61, 0x7A)), 1, 5), ir.lit("abc")))
    assert ir.is_closed(closed)
    Grammar({"root": ir.seq(closed, ir.Ref("x")), "x": ir.lit("y")})
    with pytest.raises(GrammarError, match="undefined rule"):
        Grammar({"root": ir.seq(closed, ir.Ref("missing"))})
    with pytest.raises(GrammarError, match="regular operand"):
        Grammar({"root": ir.Intersection(closed, ir.Ref("root"))})


def test_self_encoded_fast_path_keeps_the_canonical_rebuild() -> None:
    """encode_chars returns a self-encoded node as it is only where the rebuild would give an
    equal node: empty literals, one-character classes, negated classes and non-canonical
    sequences still go through the rebuild."""
    for node in (
        ir.lit(""),
        ir.char("a"),
        ir.CharClass(((0x30, 0x39),), negated=True),
        ir.Seq((ir.lit("a"), ir.lit("b"))),
        ir.Seq((ir.Seq((ir.lit("a"), ir.char((0x30, 0x39)))), ir.lit("b"))),
    ):
        assert encode_chars(node) == _reference_encode(node), node
    from structgen.schema.format_datetime import date_time

    assert encode_chars(date_time()) is date_time()
