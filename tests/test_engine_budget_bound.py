"""Budget masks skip their walk while the budget exceeds a bound on the completion any token can
leave (budget_bound.py). Along real instances: the bound holds for every token's shortest
completion, the masks with and without the shortcut are equal at the smallest budget that takes
it, and the shortcut is taken where the grammar is regular (lazy format rules included)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab
from gbnf_strategies import TOKEN_FREE_NODE
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from structgen.engine import Constraint
from structgen.engine.budget_bound import MARGIN
from structgen.engine.masks import pack_ids
from structgen.engine.terms import LAZY_K
from structgen.schema import json_schema_to_grammar

SCHEMAS = pathlib.Path(__file__).resolve().parent.parent / "schemas"


def _walked(c: Constraint, cid: int, budget: int) -> np.ndarray:
    """The budget mask as computed without the shortcut."""
    ids, need = c._after(cid)
    keep = ids[need <= budget - 2]
    if c._system.accepting(cid) and len(c._eos):
        keep = np.concatenate([keep, c._eos])
    return pack_ids(keep, c._width)


#: Whether each schema has a bound: recursion that nests (any JSON value, also the value of a key
#: an object does not list) has none; numbers written as tail-recursive rules do.
BOUNDED = {
    "tool_call": True,
    "constrained": True,
    "tool_union": True,
    "wide_object": True,
    "any_json": False,
    "realistic_model": False,
}


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_completion_bound_holds_along_instances(name: str) -> None:
    vocab = load_vocab("llama-bpe")
    c = Constraint.compile(json_schema_to_grammar(json.loads((SCHEMAS / f"{name}.json").read_text())), vocab)
    instance = json.loads((SCHEMAS / "instances" / f"{name}.jsonl").read_text().splitlines()[0])
    ids = greedy_tokens(vocab, json.dumps(instance).encode())
    st = c.start()
    bounded = 0
    for tok in ids:
        cid = st.config
        bound = c._bound.config(cid)
        if bound is not None:
            bounded += 1
            _, need = c._after(cid)
            assert int(need.max(initial=0)) <= bound + 3, "a token leaves more than the bound"
            budget = bound + MARGIN
            assert np.array_equal(st.mask_words(budget=budget), _walked(c, cid, budget))
        assert st.commit_token(tok)
    assert bounded == (len(ids) if BOUNDED[name] else 0)


def test_lazy_rules_stay_unbuilt_when_bounded() -> None:
    """The bound of a document holding a lazy format rule comes from the grammar: asking for it
    builds nothing."""
    vocab = load_vocab("llama-bpe")
    schema = {
        "type": "object",
        "properties": {"at": {"type": "string", "format": "date-time"}},
        "required": ["at"],
        "additionalProperties": False,
    }
    c = Constraint.compile(json_schema_to_grammar(schema), vocab)
    st = c.start()
    store = c._machines.store
    assert any(store.kind[t] == LAZY_K for t in range(len(store))), "date-time is no longer a lazy rule"
    built = len(store._forced)
    assert c._bound.config(st.config) is not None
    assert len(c._machines.store._forced) == built
    # '{"at": "' + the longest shortest completion inside a date-time + '"}'
    assert np.array_equal(st.mask_words(budget=200), st.mask_words())
    # a saved and loaded constraint bounds its lazy rules the same way
    loaded = Constraint.load(c.save(), vocab)
    assert loaded._bound.config(loaded.start().config) == c._bound.config(st.config)


@pytest.mark.parametrize("name", ["realistic_model", "tool_call"])
def test_budget_masks_equal_their_figures_at_every_budget(name: str) -> None:
    """Whichever shortcut answers (no token can need the budget: the bound, or the largest figure
    of the configuration), the budget mask is the one its figures give, tight budgets included."""
    vocab = load_vocab("llama-bpe")
    c = Constraint.compile(json_schema_to_grammar(json.loads((SCHEMAS / f"{name}.json").read_text())), vocab)
    instance = json.loads((SCHEMAS / "instances" / f"{name}.jsonl").read_text().splitlines()[0])
    ids = greedy_tokens(vocab, json.dumps(instance).encode())
    st = c.start()
    for step, tok in enumerate(ids[:60]):
        cid = st.config
        _, need = c._after(cid)
        top = int(need.max(initial=0))
        for budget in sorted({1, 2, 3, top, top + 1, top + 2, top + 3, top + MARGIN, 10_000}):
            if budget >= 1:
                assert np.array_equal(st.mask_words(budget=budget), _walked(c, cid, budget)), (step, budget)
        assert st.commit_token(tok)


def test_budget_mask_of_a_pattern_with_a_length_bound() -> None:
    """Regression: a pattern intersected with ``maxLength`` is a counted configuration that is its
    own unbounded one once its count is lifted; its budget figures recursed forever into
    themselves ("grammar nested too deeply")."""
    vocab = load_vocab("llama-bpe")
    c = Constraint.compile(json_schema_to_grammar({"type": "string", "pattern": "^[a-z]+$", "maxLength": 5}), vocab)
    st = c.start()
    for tok in greedy_tokens(vocab, b'"abcd"'):
        for budget in (3, 6, 50):
            assert np.array_equal(st.mask_words(budget=budget), _walked(c, st.config, budget))
        assert st.commit_token(tok)


def _toy_vocab():  # type: ignore[no-untyped-def]
    from structgen import Vocab

    multi = [b"ab", b"ba", b"aab", b"bbb", b"a\xc3", b"\xc3\xa9", b"\xc3\xa9a", b"\xe3\x81", b"b\xe3\x81\x82"]
    return Vocab([bytes([i]) for i in range(256)] + multi, eos_token_ids=[0])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammar=st.fixed_dictionaries({n: TOKEN_FREE_NODE for n in ("root", "a", "b-2")}), seed=st.integers(0, 1000))
def test_completion_bound_holds_on_random_grammars(grammar: dict, seed: int) -> None:
    """Any grammar (recursion, counted repetitions, optional parts): wherever the bound is
    known, no allowed token leaves a longer completion, along a random walk."""
    import random

    from structgen import Grammar, GrammarError, LimitError

    try:
        c = Constraint.compile(Grammar(grammar, "root"), _toy_vocab())
    except (GrammarError, LimitError):
        assume(False)
    rng = random.Random(seed)
    st_ = c.start()
    for _ in range(12):
        cid = st_.config
        ids, need = c._after(cid)
        bound = c._bound.config(cid)
        if bound is not None and ids.size:
            assert int(need.max()) <= bound + 3
        if not ids.size:
            break
        assert st_.commit_token(int(ids[rng.randrange(ids.size)]))
