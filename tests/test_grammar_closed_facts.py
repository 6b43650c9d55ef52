"""Facts remembered for closed subtrees (ir.mark_closed) are the facts the walks would find."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from schema_helpers import unmarked

from structgen import Grammar
from structgen.engine.machines import _Lowering
from structgen.engine.terms import TermStore
from structgen.grammar import ir
from structgen.schema import format_datetime, formats

_leaves = st.one_of(
    st.sampled_from(["a", "0", "", "日", "ab"]).map(ir.lit),
    st.sampled_from([((0x61, 0x7A),), ((0xE9, 0xE9),), ((0x10000, 0x10FFFF),)]).map(lambda rs: ir.char(*rs)),
    st.just(ir.ByteClass(((0x80, 0xFF),))),
    st.just(ir.ByteClass((), negated=False)),  # no byte at all
    st.just(ir.NOTHING),
    st.just(ir.EMPTY),
)


def _extend(children: st.SearchStrategy[ir.Node]) -> st.SearchStrategy[ir.Node]:
    lists = st.lists(children, min_size=0, max_size=3)
    counts = st.tuples(st.integers(0, 2), st.integers(0, 2)).map(lambda t: (t[0], t[0] + t[1]))
    return st.one_of(
        lists.map(lambda xs: ir.Seq(tuple(xs))),
        lists.map(lambda xs: ir.Alt(tuple(xs))),
        st.tuples(children, counts).map(lambda t: ir.Repeat(t[0], t[1][0], t[1][1])),
        st.tuples(children, st.integers(1, 2)).map(lambda t: ir.Repeat(t[0], t[1], None)),
        children.map(ir.Lexeme),
        st.tuples(children, children).map(lambda t: ir.Difference(*t)),
        st.tuples(children, children).map(lambda t: ir.Intersection(*t)),
        children.map(lambda c: ir.Seq((c, ir.lit("x"), c))),  # a shared subtree
    )


closed_trees = st.recursive(_leaves, _extend, max_leaves=12)


def _engine_facts(node: ir.Node) -> list[tuple[object, ...]]:
    """The lowering's facts of ``node``'s root and direct children (the nodes a mark covers).

    Below a greedy lexeme (not pure) the lowering reads no other fact: those are left out.
    """
    low = _Lowering(Grammar({"root": ir.Seq((node, ir.lit("."))), "r": ir.lit("r")}, "root"), TermStore(), frozenset())
    out: list[tuple[object, ...]] = []
    for n in (node, *node.children()):
        pure, nullable, setop = low.node_facts(n)
        plain = pure and not setop
        if not pure:
            out.append((pure, ir.depth(n)))
        else:
            out.append((pure, nullable, setop, low.shortest_bytes(n) if plain else None, ir.depth(n)))
    return out


@settings(max_examples=300, deadline=None)
@given(closed_trees)
def test_marked_facts_equal_walked_facts(node: ir.Node) -> None:
    walked = unmarked(lambda: _engine_facts(node))
    unmarked(lambda: ir.mark_closed(node))
    try:
        assert _engine_facts(node) == walked
    finally:
        for n in (node, *node.children()):
            ir._CLOSED.pop(id(n), None)


def test_format_grammars_facts_equal_walked_facts() -> None:
    """The format grammars, the subtrees the marks exist for (date-time: ~6,000 nodes)."""
    nodes = [format_datetime.date_time(), format_datetime.full_date(), format_datetime.duration()]
    nodes += [formats.format_node(name) for name in ("uuid", "ipv4", "ipv6", "email", "hostname", "uri")]
    for node in nodes:
        walked = unmarked(lambda node=node: _engine_facts(node))  # type: ignore[misc]
        ir.mark_closed(node)
        assert _engine_facts(node) == walked


def test_declared_leap_second_facts_equal_walked_facts() -> None:
    """date-time's leap-second hours are marked with facts from their shape, not walked."""
    leap = format_datetime.leap_second_times()
    hours = leap.children()
    assert len(hours) == 24
    for hour in hours:
        declared = ir.closed_facts(hour)
        assert declared is not None
        walked = unmarked(lambda hour=hour: ir.facts_of(hour))  # type: ignore[misc]
        assert declared == walked


def test_declared_facts_are_kept_when_the_marks_are_full() -> None:
    """A process that marked ``MAX_CLOSED`` subtrees already (a server after many schemas) still
    keeps the facts a builder declares: the oldest mark is forgotten, as ``mark_closed`` does.
    Before, a full table refused them, and date-time's leap-second hours were walked again."""
    for i in range(ir.MAX_CLOSED + 8):
        ir.mark_closed(ir.alt(ir.Literal(b"x%d" % i), ir.Literal(b"zz")))
    assert len(ir._CLOSED) >= ir.MAX_CLOSED
    for hour in format_datetime.leap_second_times().children():
        assert ir.closed_facts(hour) is not None
