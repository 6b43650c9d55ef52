"""Shared calls (``EngineTuning.shared_calls``, ``machines.shared_rules``): on a compile ahead of
time, a regular rule followed by many different continuations (a property's value in an object
whose keys come in any order) is a machine of its own, so that its positions exist once over a
caller instead of once per set of keys left. The language is the same: masks and commits equal
the lazy engine's and the inlined compile's along documents, saved and loaded too; positions
inside a value no longer grow with the object's states."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from engine_support import greedy_tokens, lexeme_grammar, load_vocab, pieces_vocab

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.limits import EngineLimits
from structgen.engine.machines import build_machines, shared_rules
from structgen.engine.tuning import EngineTuning

#: positions only, bounded by count and not by the clock (the load does not change the parts)
EVERY_POSITION = EngineLimits(aot_max_configs=0, aot_max_positions=10**6, aot_budget_ms=10**7)
SHORT = "^[a-z]{2}$"
LONG = "^[a-z]{2}-[0-9]{3}-[A-Z]{4}-[a-f]{5}$"
INLINED = EngineTuning(shared_calls=0)


def _object(keys: int, pattern: str) -> dict[str, object]:
    """An object of ``keys`` optional string properties, in any order (``any_order_up_to``)."""
    props = {f"k{i}": {"type": "string", "pattern": pattern} for i in range(keys)}
    return {"type": "object", "properties": props, "additionalProperties": False}


def _docs(keys: int) -> list[bytes]:
    values = ["ab-123-ABCD-abcde", "zz-000-QQQQ-fffff", "mn-987-XYZW-abcab"]
    out = []
    for n, order in enumerate(itertools.permutations(range(keys), 3)):
        doc = {f"k{i}": values[(n + i) % 3] for i in order}
        out += [json.dumps(doc).encode(), json.dumps(doc, separators=(",", ":")).encode()]
    return out


@pytest.fixture(scope="module")
def vocab():  # type: ignore[no-untyped-def]
    return pieces_vocab(_docs(4))


def test_the_values_of_an_any_order_object_are_shared() -> None:
    grammar = Grammar.from_json_schema(_object(4, LONG))
    values = {f"properties-k{i}" for i in range(4)}
    assert values <= shared_rules(grammar, 4)
    assert grammar.start not in shared_rules(grammar, 1)
    assert shared_rules(grammar, 0) == frozenset()
    machines = build_machines(grammar, shared_calls=4)
    assert values <= set(machines.names)
    # ``ws`` is followed by many continuations too, but may match nothing: it stays inlined
    assert "ws" not in shared_rules(grammar, 4) and "ws" not in machines.names
    assert build_machines(grammar).names == [grammar.start]


def test_values_that_may_end_before_their_last_byte_stay_inlined() -> None:
    # a number may end after any digit: over a caller, each such top is walked with its caller
    numbers = {"type": "object", "properties": {f"n{i}": {"type": "integer"} for i in range(4)}}
    assert not {f"properties-n{i}" for i in range(4)} & shared_rules(Grammar.from_json_schema(numbers), 4)


def test_no_shared_calls_in_a_grammar_with_a_greedy_lexeme() -> None:
    # a lexeme next to a call needs exit summaries (lexeme_frames.py): never made by this
    assert shared_rules(lexeme_grammar(), 1) == frozenset()


def test_positions_inside_a_value_do_not_multiply(vocab) -> None:  # type: ignore[no-untyped-def]
    """The positions a longer value adds: once per continuation inlined (doubling with each key
    the object may take), once per distinct value term called."""

    def added(keys: int, tuning: EngineTuning) -> int:
        counts = []
        for pattern in (SHORT, LONG):
            grammar = Grammar.from_json_schema(_object(keys, pattern))
            c = Constraint.compile(grammar, vocab, mode="aot", limits=EVERY_POSITION, tuning=tuning)
            assert not c.report.truncated  # type: ignore[union-attr]
            counts.append(c.report.positions)  # type: ignore[union-attr]
        return counts[1] - counts[0]

    inlined = [added(keys, INLINED) for keys in (3, 4, 5)]
    shared = [added(keys, EngineTuning()) for keys in (3, 4, 5)]
    # inlined: 2 ** (keys - 1) continuations of each value (measured 105, 225, 465)
    assert inlined[1] > 2 * inlined[0] - 16 and inlined[2] > 2 * inlined[1] - 16
    # called: the same handful of positions whatever the keys (measured 15 each)
    assert shared[0] == shared[1] == shared[2] < 20


@pytest.mark.parametrize("keys", [3, 4])
def test_compiled_masks_equal_lazy_masks(vocab, keys: int) -> None:  # type: ignore[no-untyped-def]
    grammar = Grammar.from_json_schema(_object(keys, LONG))
    lazy = Constraint.compile(grammar, vocab)
    inlined = Constraint.compile(grammar, vocab, mode="aot", limits=EVERY_POSITION, tuning=INLINED)
    shared = Constraint.compile(grammar, vocab, mode="aot", limits=EVERY_POSITION)
    assert len(shared.machines.body) == keys + 1 and len(inlined.machines.body) == 1
    assert shared.report.caller_masks > 0  # type: ignore[union-attr]
    loaded = Constraint.load(shared.save(), vocab)
    assert loaded.machines.names == shared.machines.names
    walked = 0
    for doc in _docs(keys):
        states = [c.start() for c in (lazy, inlined, shared, loaded)]
        for tok in greedy_tokens(vocab, doc):
            masks = [s.mask_words() for s in states]
            assert all(np.array_equal(masks[0], m) for m in masks[1:]), doc
            assert all(s.commit_token(tok) for s in states), doc
            walked += 1
        assert all(s.is_accepting() for s in states)
    assert walked > 100


def test_compiled_masks_equal_lazy_masks_on_llama3() -> None:
    """Values of every kind (strings counted and patterned, numbers, enums, arrays) called from
    objects whose keys come in any order, against the lazy engine along each order."""
    vocab = load_vocab("llama-bpe")
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
            "qty": {"type": "integer", "minimum": 1, "maximum": 999},
            "unit": {"enum": ["kg", "g", "lb"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        },
        "required": ["name", "qty"],
        "additionalProperties": False,
    }
    value = {"name": 'bolt \\u00e9 "x"', "sku": "ABC-1234", "qty": 42, "unit": "kg", "tags": ["a", "bc"]}
    grammar = Grammar.from_json_schema(schema)
    lazy = Constraint.compile(grammar, vocab)
    shared = Constraint.compile(grammar, vocab, mode="aot", limits=EVERY_POSITION)
    assert len(shared.machines.body) > 1 and shared.report.caller_masks > 0  # type: ignore[union-attr]
    for order in list(itertools.permutations(value))[::7]:
        for seps in ((", ", ": "), (",", ":")):
            text = json.dumps({k: value[k] for k in order}, separators=seps)
            s_lazy, s_aot = lazy.start(), shared.start()
            for tok in greedy_tokens(vocab, text.encode()):
                assert np.array_equal(s_lazy.mask_words(), s_aot.mask_words()), text
                assert s_lazy.commit_token(tok) and s_aot.commit_token(tok), text
            assert s_lazy.is_accepting() and s_aot.is_accepting()
