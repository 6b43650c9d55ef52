"""Walks over the hole shared across constraints (shared_walks.py): a head split before a word
(the JSON skeleton between a key and the next one) walked by one constraint is reused by every
later constraint on the vocabulary whose head has the same structure. Masks must be the ones
each constraint computes on its own; structural ids must be equal exactly for equal structures."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab, walk_against_matcher

from structgen import Grammar
from structgen.engine import Constraint, shared_walks
from structgen.engine.terms import EMPTY, TermStore
from structgen.engine.tuning import EngineTuning

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _schema(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((ROOT / "schemas" / f"{name}.json").read_text())


def _texts(name: str, count: int) -> list[str]:
    lines = (ROOT / "schemas" / "instances" / f"{name}.jsonl").read_text().splitlines()
    out = []
    for line in lines[:count]:
        value = json.loads(line)
        out.append(json.dumps(value))
        out.append(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    return out


def _masks(grammar: Grammar, vocab, text: str, shared: bool) -> tuple[list[np.ndarray], int]:  # type: ignore[no-untyped-def]
    """The masks along ``text`` and how many walks the constraint found another one made."""
    c = Constraint.compile(grammar, vocab, tuning=EngineTuning(shared_walks=shared))
    state = c.start()
    out = []
    for tok in greedy_tokens(vocab, text.encode()):
        out.append(state.mask_words().copy())
        assert state.commit_token(tok)
    return out, c.stats()["shared_walk_hits"]


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
def test_shared_walks_equal_each_constraints_own(vocab_name: str) -> None:
    """Schemas in a row, as a server meets them: each later one finds heads the earlier ones
    walked (the hits are counted), and its masks equal those it computes without them."""
    vocab = load_vocab(vocab_name)
    shared_walks.clear()
    hits = 0
    for name in ("realistic_model", "tool_call", "tool_union", "wide_object"):
        grammar = Grammar.from_json_schema(_schema(name))
        for text in _texts(name, 1):
            on, found = _masks(grammar, vocab, text, True)
            off, none = _masks(grammar, vocab, text, False)
            hits += found
            assert none == 0
            for i, (a, b) in enumerate(zip(on, off)):
                assert np.array_equal(a, b), f"{name}: masks differ at token {i} of {text[:60]!r}"
    assert hits, "no constraint found a walk another one made"


def test_shared_walks_equal_the_matcher() -> None:
    """A schema whose heads were all walked by another one first, against the byte-level matcher
    (Llama 2: byte tokens and pieces that cross a head's end)."""
    vocab = load_vocab("llama-spm")
    shared_walks.clear()
    first = {
        "type": "object",
        "properties": {"a1": {"type": "integer"}, "b1": {"type": "boolean"}, "c1": {"type": "string"}},
        "required": ["a1", "b1", "c1"],
        "additionalProperties": False,
    }
    second = {
        "type": "object",
        "properties": {"zz": {"type": "integer"}, "yy": {"type": "boolean"}, "xx": {"type": "string"}},
        "required": ["zz", "yy", "xx"],
        "additionalProperties": False,
    }
    # one key order: a head is split before the next key only where that key is a word, and
    # small objects take any order by default (the tail after a key is then a choice)
    fixed = {"any_order_up_to": 0, "any_order_required_up_to": 0}
    g1 = Grammar.from_json_schema(first, **fixed)
    walk_against_matcher(
        Constraint.compile(g1, vocab), g1, vocab, json.dumps({"a1": 5, "b1": True, "c1": "q"}).encode()
    )
    g2 = Grammar.from_json_schema(second, **fixed)
    c2 = Constraint.compile(g2, vocab)
    walk_against_matcher(c2, g2, vocab, json.dumps({"zz": -12, "yy": False, "xx": "a b"}).encode())
    assert c2.stats()["shared_walk_hits"], "the second schema found no walk of the first"


def test_equal_structures_get_equal_ids() -> None:
    """Across two stores, in any build order: equal structure, equal id; a choice is a set of
    options; a different byte or count is a different structure."""
    s1, s2 = TermStore(), TermStore()
    k1, k2 = shared_walks.TermKeys(s1), shared_walks.TermKeys(s2)

    def build(s: TermStore, order: tuple[int, ...], count: int = 3) -> int:
        opts = [s.bytes_(1 << b) for b in order]
        return s.seq(s.repeat(s.alt(opts), 0, count), s.seq(s.bytes_(1 << ord(",")), EMPTY))

    s2.bytes_(1 << 200)  # other term ids in the second store
    a, b = build(s1, (97, 98, 99)), build(s2, (99, 97, 98))
    assert k1.of(a) is not None and k1.of(a) == k2.of(b)
    assert k1.of(build(s1, (97, 98, 100))) != k1.of(a)
    assert k1.of(build(s1, (97, 98, 99), count=4)) != k1.of(a)


def test_calls_and_large_terms_get_no_id() -> None:
    """A term holding a rule call has no structural id; neither has one with more new terms
    than the budget, nor any term on the way down to its large part (the next top over the same
    rest stops at once)."""
    store = TermStore()
    keys = shared_walks.TermKeys(store, max_nodes=8)
    call = store.seq(store.bytes_(1 << 65), store.sym(1000))
    assert keys.of(call) is None
    long = EMPTY
    for i in range(20):
        long = store.seq(store.bytes_(1 << (97 + i % 26)), long)
    assert keys.of(long) is None
    over = store.seq(store.bytes_(1 << 48), long)
    before = keys.new_terms
    assert keys.of(over) is None
    assert keys.new_terms - before <= 2, "the long rest was walked again"


def test_ids_are_not_given_twice_across_generations() -> None:
    """Past the bound on structures the tables start again; an id kept from before names its
    structure still, so it can never find another structure's walk."""
    shared_walks.clear()
    store = TermStore()
    keys = shared_walks.TermKeys(store, max_structures=4)
    seen = set()
    for b in range(40):
        t = store.seq(store.bytes_(1 << b), store.bytes_(1 << (b + 1)))
        found = keys.of(t)
        assert found is not None and found not in seen
        seen.add(found)
    assert len(shared_walks._structures) <= 4
