"""Facts the translator hands on instead of having them recomputed: they must be the ones the
analyses would find.

``declare_all_productive`` (schema/translate.py) tells the engine's lowering that every rule of a
translated grammar derives a sentence, skipping the emptiness analysis, and the clean-up hands the
grammar the recursive rules it found; here the analyses run anyway on ``schemas/`` and a
MaskBench sample (both whitespace modes) and must agree, and so must the scans of rule bodies
the clean-up hands the grammar. The clean-up's own shortcuts are
compared with plain evaluations on hypothesis-built trees.
"""

from __future__ import annotations

import json
import pathlib
import tarfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_strategies import ir_trees

from structgen.errors import StructgenError
from structgen.grammar import Grammar, ir
from structgen.grammar.emptiness import _productive, productive_rules
from structgen.grammar.graphs import nodes_on_cycles
from structgen.grammar.rule_scan import scan_rule
from structgen.schema import json_schema_to_grammar
from structgen.schema import trim as trim_mod
from structgen.schema.loader import Document
from structgen.schema.options import make_options
from structgen.schema.translate import _emit

ROOT = pathlib.Path(__file__).resolve().parent.parent
MASKBENCH = "jsonschemabench/maskbench-data-full.tar.xz"
SAMPLE_EVERY = 40  # every 40th MaskBench schema by name: about 280 schemas, a few seconds


def _named() -> list[tuple[str, object]]:
    return [(p.stem, json.loads(p.read_text(encoding="utf-8"))) for p in sorted((ROOT / "schemas").glob("*.json"))]


def _check(schema: object) -> None:
    for whitespace in ("compact", "pretty"):
        try:
            grammar = json_schema_to_grammar(schema, whitespace=whitespace)
        except StructgenError:
            return
        assert productive_rules(grammar) == frozenset(grammar.rules)
        assert _productive(grammar) == frozenset(grammar.rules)
        # the recursive rules the clean-up handed on, against the grammar's own search
        graph = {name: sorted(ir.refs(body) & grammar.rules.keys()) for name, body in grammar.rules.items()}
        assert grammar.recursive_rules() == frozenset(nodes_on_cycles(graph))
        assert Grammar(dict(grammar.rules), grammar.start).recursive_rules() == grammar.recursive_rules()
        # the bodies the clean-up scanned, against the grammar's own walk of them
        assert Grammar(dict(grammar.rules), grammar.start).plain == grammar.plain
        if whitespace == "compact":  # the translation's own emitted rules, trimmed again
            opts = make_options(None, whitespace=whitespace)
            _, em, start = _emit(Document.load(schema, opts), opts, pretty_depths=False, recursive=frozenset())
            rules, _, scans = trim_mod.trim_rules(em.rules, start)
            assert rules == dict(grammar.rules)
            for name, (depth, refs, setops, plain) in scans.items():
                assert (depth, set(refs), setops, plain) == scan_rule(rules[name])


@pytest.mark.parametrize("name,schema", _named(), ids=[n for n, _ in _named()])
def test_translated_rules_are_productive_named(name: str, schema: object) -> None:
    _check(schema)


def test_translated_rules_are_productive_maskbench(corpora: pathlib.Path) -> None:
    with tarfile.open(corpora / MASKBENCH) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".json")), key=lambda m: m.name)
        for m in members[::SAMPLE_EVERY]:
            f = tar.extractfile(m)
            assert f is not None
            _check(json.load(f)["schema"])


def test_dead_branches_leave_only_productive_rules() -> None:
    # a required property whose schema is false, and recursion without a base case
    schema = {
        "type": "object",
        "properties": {"a": {"anyOf": [{"$ref": "#/$defs/loop"}, {"type": "integer"}]}},
        "required": ["a"],
        "$defs": {"loop": {"type": "array", "items": {"$ref": "#/$defs/loop"}, "minItems": 1}},
    }
    _check(schema)


# ---------------------------------------------------------------------------------------------
# trim's short-circuit productivity against a plain bottom-up evaluation of every node


def _plain_productive(node: ir.Node, productive: set[str]) -> bool:
    value: dict[int, bool] = {}
    for n in reversed(list(ir.iter_nodes(node))):  # children before parents
        kids = [value[id(c)] for c in n.children()]
        if isinstance(n, ir.Ref):
            v = n.name in productive
        elif isinstance(n, ir.CharClass):
            v = bool(n.codepoints())
        elif isinstance(n, (ir.Literal, ir.Token)):
            v = True
        elif isinstance(n, ir.Seq):
            v = all(kids)
        elif isinstance(n, ir.Alt):
            v = any(kids)
        elif isinstance(n, ir.Repeat):
            v = n.min == 0 or kids[0]
        elif isinstance(n, (ir.Lexeme, ir.Difference)):
            v = kids[0]
        elif isinstance(n, ir.Intersection):
            v = kids[0] and kids[1]
        else:
            raise TypeError(type(n))
        value[id(n)] = v
    return value[id(node)]


_leaves = st.one_of(
    st.sampled_from(["a", "", "xy"]).map(ir.lit),
    st.just(ir.char((0x61, 0x7A))),
    st.just(ir.CharClass(((0, ir.MAX_CODEPOINT),), negated=True)),  # no character at all
    st.just(ir.EMPTY),
    st.just(ir.NOTHING),
    st.sampled_from(["r1", "r2", "r3"]).map(ir.Ref),
)


_trees = ir_trees(_leaves, lambda c: ir.Alt((c, ir.Seq((c, c)))))  # a shared subtree


@settings(max_examples=400, deadline=None)
@given(_trees, st.sets(st.sampled_from(["r1", "r2", "r3"])))
def test_short_circuit_productivity_is_the_plain_one(node: ir.Node, productive: set[str]) -> None:
    assert trim_mod._productive_node(node, productive) == _plain_productive(node, productive)


def test_ref_counts_with_a_repeated_reference_object_and_shared_leaves() -> None:
    a, comma = ir.Ref("a"), ir.lit(",")
    # the same Ref and Literal objects in several places, no inner node shared: the fast walk
    assert trim_mod._ref_counts(ir.Seq((a, comma, ir.Alt((a, ir.Ref("b"))), comma, a))) == {"a": 3, "b": 1}
    # an inner node shared as well: the path counts
    inner = ir.Seq((a, comma, ir.Ref("c")))
    body = ir.Alt((ir.Ref("b"), ir.Seq((inner, a, inner))))
    got = trim_mod._ref_counts(body)
    assert got == {"b": 1, "a": 3, "c": 2} and list(got) == ["b", "a", "c"]
