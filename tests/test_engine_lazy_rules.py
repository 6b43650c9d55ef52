"""Named regular rules are built when a generation first reaches them, and the token budget's
shortest completion does not build them: its length comes from the grammar."""

from __future__ import annotations

import json
import pathlib

import pytest
from engine_support import load_vocab

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.terms import LAZY_K
from structgen.grammar import ir
from structgen.schema import json_schema_to_grammar

SCHEMAS = pathlib.Path(__file__).resolve().parent.parent / "schemas"


def _lazy_terms(c: Constraint) -> list[int]:
    store = c._machines.store
    return [t for t in range(len(store)) if store.kind[t] == LAZY_K]


@pytest.mark.parametrize("name", ["realistic_model", "wide_object", "constrained", "tool_union"])
def test_shortest_hints_equal_the_built_terms(name: str) -> None:
    vocab = load_vocab("llama-spm")
    grammar = json_schema_to_grammar(json.loads((SCHEMAS / f"{name}.json").read_text()))
    c = Constraint.compile(grammar, vocab)
    store = c._machines.store
    lazy = _lazy_terms(c)
    assert lazy
    hinted = {t: store.shortest(t) for t in lazy}
    assert not store._forced, "asking for a hinted shortest length built a rule"
    for t in lazy:
        built = store.force(t)
        assert store.shortest(built) == hinted[t], store.b[t]


def test_a_budget_mask_builds_no_rule_the_request_has_not_reached() -> None:
    vocab = load_vocab("llama-spm")
    schema = json.loads((SCHEMAS / "realistic_model.json").read_text())
    c = Constraint.compile(json_schema_to_grammar(schema), vocab)
    state = c.start()
    state.mask_words(budget=4000)
    built = {c._machines.store.b[t] for t in c._machines.store._forced}
    big = {
        name
        for name, body in c.grammar.rules.items()
        if sum(1 for _ in ir.iter_distinct(body)) > 1000  # the date-time format
    }
    assert big and not big & built, built


def test_shortest_hints_of_odd_rules() -> None:
    vocab = load_vocab("llama-spm")
    rules = {
        "root": ir.alt(ir.seq(ir.lit("a"), ir.Ref("x")), ir.seq(ir.lit("b"), ir.Ref("y")), ir.Ref("z")),
        "x": ir.seq(ir.char("é"), ir.Repeat(ir.lit("ab"), 2, 5)),
        "y": ir.alt(ir.CharClass(((0x10000, 0x10001),)), ir.seq(ir.char("\u0800"), ir.lit("q"))),
        "z": ir.seq(ir.lit("["), ir.Repeat(ir.Ref("x"), 0, 3), ir.lit("]")),
    }
    c = Constraint.compile(Grammar(rules, "root"), vocab)
    store = c._machines.store
    for t in _lazy_terms(c):
        hint = store.shortest(t)
        assert store.shortest(store.force(t)) == hint, store.b[t]


@pytest.mark.parametrize("name", ["realistic_model", "tool_union"])
def test_compile_and_first_mask_measure_no_rule(name: str) -> None:
    """A lazy rule's shortest length is read from the grammar when first asked, not at compile:
    a first mask without a token budget asks for none."""
    vocab = load_vocab("llama-spm")
    grammar = json_schema_to_grammar(json.loads((SCHEMAS / f"{name}.json").read_text()))
    c = Constraint.compile(grammar, vocab, mode="lazy")
    c.start().mask_words()
    store = c._machines.store
    assert not [t for t in _lazy_terms(c) if t in store._shortest]
    assert not c._machines.store.shortest_of_key.__self__.shortest_memo  # type: ignore[union-attr]
