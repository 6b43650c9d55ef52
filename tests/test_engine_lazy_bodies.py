"""Machine bodies lowered when first called (engine/machines.py ``_LazyBodies``): the machines'
nullability and first calls, found on the grammar, against the eager lowering's on the terms;
refusals (left recursion) the same; masks the same; a save holds every body."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from engine_support import load_vocab
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.artifact import load_constraint, save_constraint
from structgen.engine.configs import ConfigSystem
from structgen.engine.constraint import DEFAULT_ENGINE_LIMITS, DEFAULT_ENGINE_TUNING, DynamicConstraint
from structgen.engine.machines import _build, _first_calls, _LazyBodies, _machine_nullable
from structgen.errors import StructgenError
from structgen.grammar import ir
from structgen.schema import json_schema_to_grammar

SCHEMAS = pathlib.Path(__file__).resolve().parent.parent / "schemas"
NAMES = ("r0", "r1", "r2", "r3")

_leaves = st.one_of(
    st.sampled_from(["a", "", "bc"]).map(ir.lit),
    st.just(ir.char((0x61, 0x7A))),
    st.just(ir.CharClass(())),  # no character: empty
    st.just(ir.ByteClass(((0, 127),))),
    st.just(ir.EMPTY),
    st.just(ir.NOTHING),
    st.sampled_from(NAMES).map(ir.Ref),
)


def _grow(children: st.SearchStrategy[ir.Node]) -> st.SearchStrategy[ir.Node]:
    lists = st.lists(children, min_size=0, max_size=3)
    return st.one_of(
        lists.map(lambda xs: ir.Seq(tuple(xs))),
        lists.map(lambda xs: ir.Alt(tuple(xs))),
        st.tuples(children, st.integers(0, 2), st.sampled_from([0, 1, 2, None])).map(
            lambda t: ir.Repeat(t[0], t[1], None if t[2] is None else t[1] + t[2])
        ),
    )


_bodies = st.recursive(_leaves, _grow, max_leaves=8)


def _outcome(grammar: Grammar, lazy: bool) -> tuple:
    try:
        m = _build(grammar, None, 0, lazy)
    except StructgenError as e:
        return ("refused", type(e).__name__, str(e))
    bodies = list(m.body)  # lowers every body
    nullable = _machine_nullable(m.store, bodies)
    graph = {i: _first_calls(m.store, b, nullable)[0] for i, b in enumerate(bodies)}
    assert m.nullable == nullable
    return ("ok", m.names, m.nullable, graph, isinstance(m.body, _LazyBodies))


@settings(max_examples=600, deadline=None)
@given(st.lists(_bodies, min_size=4, max_size=4))
def test_grammar_side_facts_are_the_terms(bodies: list[ir.Node]) -> None:
    grammar = Grammar(dict(zip(NAMES, bodies)), "r0")
    lazy, eager = _outcome(grammar, True), _outcome(grammar, False)
    assert lazy[:4] == eager[:4]


def test_left_recursion_through_a_nullable_machine_is_refused_alike() -> None:
    L, R = ir.lit, ir.Ref
    rules = {
        "r0": ir.seq(L("<"), R("a"), L(">")),
        "a": ir.alt(L("y"), ir.seq(R("b"), R("a"), L("x"))),
        "b": ir.alt(ir.EMPTY, ir.seq(L("("), R("b"), L(")"))),
    }
    lazy, eager = _outcome(Grammar(rules, "r0"), True), _outcome(Grammar(rules, "r0"), False)
    assert lazy == eager and lazy[0] == "refused" and "left recursion" in lazy[2]


def _eager_constraint(grammar: Grammar, vocab):  # type: ignore[no-untyped-def]
    machines = _build(grammar, None, 0, False)
    system = ConfigSystem(
        machines,
        max_stacks_per_config=DEFAULT_ENGINE_LIMITS.max_stacks_per_config,
        max_configs=DEFAULT_ENGINE_LIMITS.max_configs,
    )
    return DynamicConstraint(grammar, vocab, machines, system, DEFAULT_ENGINE_LIMITS, DEFAULT_ENGINE_TUNING)


@pytest.mark.parametrize("name", ["realistic_model", "tool_union", "tree"])
def test_masks_along_a_document_are_the_eager_ones(name: str) -> None:
    vocab = load_vocab("llama-bpe")
    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    grammar = json_schema_to_grammar(schema)
    lazy = Constraint.compile(grammar, vocab, mode="lazy")
    assert isinstance(lazy._machines.body, _LazyBodies)
    eager = _eager_constraint(grammar, vocab)
    a, b = lazy.start(), eager.start()
    assert lazy._machines.body.built() < len(lazy._machines.body) or len(lazy._machines.body) < 3
    # a greedy walk along the tokens both allow: the lowest allowed id, 40 steps
    for _ in range(40):
        ma, mb = a.mask_words(), b.mask_words()
        assert np.array_equal(ma, mb)
        ids = a.allowed_token_ids()
        if not len(ids):
            break
        tok = int(ids[len(ids) // 2])
        assert a.commit_token(tok) == b.commit_token(tok)


def test_a_save_holds_the_bodies_not_lowered_yet() -> None:
    vocab = load_vocab("llama-bpe")
    grammar = json_schema_to_grammar(json.loads((SCHEMAS / "realistic_model.json").read_text()))
    c = Constraint.compile(grammar, vocab, mode="lazy")
    before = c.start().mask_words()
    assert c._machines.body.built() < len(c._machines.body)
    loaded = load_constraint(save_constraint(c), vocab, limits=DEFAULT_ENGINE_LIMITS)
    assert np.array_equal(loaded.start().mask_words(), before)
