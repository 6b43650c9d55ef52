"""Grammar validation's one walk per rule (``grammar.scan_rule``) against the walks it replaced:
``ir.depth``, ``ir.refs`` and a search for set operations, on hypothesis-built trees with shared
subtrees, repeated reference objects and closed subtrees; and the schema clean-up's walk
(``trim._walk``), whose scans a translated grammar is handed instead of walking again, against
``scan_rule`` and the reference counts of the expanded tree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from ir_strategies import ir_trees

from structgen.grammar import ir
from structgen.grammar.rule_scan import scan_rule as _scan
from structgen.schema import trim as trim_mod

_closed_part = ir.mark_closed(ir.seq(ir.lit("k"), ir.alt(ir.char((0x30, 0x39)), ir.lit("z")), ir.lit("!")))
_leaves = st.one_of(
    st.sampled_from(["a", "", "xy"]).map(ir.lit),
    st.just(ir.char((0x61, 0x7A))),
    st.just(ir.ByteClass(((0, 127),))),
    st.just(ir.Token((3,))),
    st.just(ir.EMPTY),
    st.just(ir.NOTHING),
    st.just(_closed_part),
    st.sampled_from(["r1", "r2", "r3"]).map(ir.Ref),
)


_trees = ir_trees(_leaves, lambda c: ir.Seq((c, ir.lit("x"), c)))  # a shared subtree


def _setops(node: ir.Node) -> bool:
    return any(
        isinstance(n, (ir.Lexeme, ir.Difference, ir.Intersection)) and not ir.is_closed(n)
        for n in ir.iter_distinct(node, skip_closed=True)
    )


def _plain(node: ir.Node) -> bool:
    return not any(isinstance(n, (ir.Token, ir.Lexeme, ir.Difference, ir.Intersection)) for n in ir.iter_distinct(node))


@settings(max_examples=400, deadline=None)
@given(_trees)
def test_scan_is_depth_refs_setops_and_plain(node: ir.Node) -> None:
    assert _scan(node) == (ir.depth(node), ir.refs(node), _setops(node), _plain(node))


def test_scan_of_a_closed_set_operation_reports_none() -> None:
    closed = ir.mark_closed(ir.Intersection(ir.repeat(ir.char((0x61, 0x7A)), 1, 5), ir.lit("abc")))
    node = ir.seq(closed, ir.Ref("x"))
    assert _scan(node) == (ir.depth(node), {"x"}, False, False)


def _tree_ref_counts(node: ir.Node) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ir.iter_nodes(node):  # the expanded tree, pre-order, left to right
        if isinstance(n, ir.Ref):
            out[n.name] = out.get(n.name, 0) + 1
    return out


def _check_walk(node: ir.Node) -> None:
    counts, (depth, refs, setops, plain) = trim_mod._walk(node)
    assert (depth, set(refs), setops, plain) == _scan(node)
    want = _tree_ref_counts(node)
    assert counts == want and list(counts) == list(want)


@settings(max_examples=400, deadline=None)
@given(_trees)
def test_cleanup_walk_is_scan_and_ref_counts(node: ir.Node) -> None:
    _check_walk(node)


def test_cleanup_walk_past_its_tree_slack() -> None:
    # a chain of shared pairs: the expanded tree doubles per level, so the walk turns to path
    # counts over the distinct nodes part way
    node: ir.Node = ir.Seq((ir.Ref("r"), ir.Token((1,))))
    for _ in range(12):
        node = ir.Seq((node, ir.lit(","), node))
    node = ir.Alt((ir.Lexeme(ir.lit("q")), node))
    _check_walk(node)
