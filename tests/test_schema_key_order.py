"""Key order: small objects take their keys in any order, larger ones their required keys anywhere.

A model writes keys in the order it learned, which is often not the schema's: MaskBench's own
instances (walked as written) were rejected at a key in 31 schemas of a 2,001-schema sample, among them
``Glaiveai2K---calculate_area_*``, whose ``oneOf`` branches are told apart by ``shape``, a key
the merged order put after ``radius``. The options ``any_order_up_to`` and
``any_order_required_up_to`` (docs/json-schema.md) say how far order is free; every test here
checks the language exactly against a reference written from the rule.
"""

from __future__ import annotations

import itertools
import json

import pytest
from generation_support import byte_vocab
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import Constraint, Grammar

FIXED = {"any_order_up_to": 0, "any_order_required_up_to": 0}


def text(pairs: list[tuple[str, int]]) -> str:
    """An object's JSON text with keys in this order (duplicates kept, as a model might write)."""
    return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in pairs) + "}"


def calculate_area(extra: int = 0) -> dict:
    """The shape of ``Glaiveai2K---calculate_area_*``: ``shape`` tells the branches apart and is
    listed after the others; ``extra`` adds optional properties."""
    outer = {"radius": {"type": "number"}, "length": {"type": "number"}, "width": {"type": "number"}}
    outer.update({f"note{i}": {"type": "string"} for i in range(extra)})
    outer["shape"] = {"type": "string"}
    return {
        "type": "object",
        "properties": outer,
        "oneOf": [
            {"properties": {"shape": {"const": "circle"}}, "required": ["shape", "radius"]},
            {"properties": {"shape": {"const": "rectangle"}}, "required": ["shape", "length", "width"]},
        ],
        "additionalProperties": False,
    }


def test_the_discriminating_key_may_come_first() -> None:
    g = Grammar.from_json_schema(calculate_area())
    assert g.matches('{"shape": "circle", "radius": 10}')
    assert g.matches('{"radius": 10, "shape": "circle"}')
    assert g.matches('{"shape": "rectangle", "width": 2, "length": 3}')
    assert not g.matches('{"shape": "circle", "length": 10}')
    assert not g.matches('{"shape": "circle", "radius": 10, "shape": "circle"}')
    fixed = Grammar.from_json_schema(calculate_area(), **FIXED)
    assert not fixed.matches('{"shape": "circle", "radius": 10}')  # the order before these options


def test_in_a_larger_object_the_required_keys_float() -> None:
    schema = calculate_area(extra=6)  # 10 listed keys: above any_order_up_to
    g = Grammar.from_json_schema(schema)
    assert g.matches('{"shape": "circle", "radius": 10}')
    assert g.matches('{"shape": "circle", "note0": "a", "radius": 10, "note3": "b"}')
    assert g.matches('{"note0": "a", "shape": "circle", "note3": "b", "radius": 10}')
    assert not g.matches('{"note3": "b", "shape": "circle", "note0": "a", "radius": 10}')  # optional keys keep order
    assert not g.matches('{"shape": "circle", "radius": 10, "radius": 10}')
    assert not g.matches('{"note0": "a", "radius": 10}')


def _unique(keys: list[str]) -> bool:
    return len(set(keys)) == len(keys)


def _language_check(schema: dict, names: list[str], accepts, max_len: int, **options: object) -> None:
    g = Grammar.from_json_schema(schema, **options)
    for n in range(max_len + 1):
        for keys in itertools.product(names, repeat=n):
            want = accepts(list(keys))
            assert g.matches(text([(k, 1) for k in keys])) == want, (keys, want)


def test_a_small_object_takes_any_order_each_key_once() -> None:
    names = ["a", "b", "c", "d"]
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in names}, "required": ["b", "d"]}
    schema["additionalProperties"] = False

    def any_order(keys: list[str]) -> bool:
        return _unique(keys) and {"b", "d"} <= set(keys)

    _language_check(schema, names, any_order, 5)

    def schema_order(keys: list[str]) -> bool:
        return any_order(keys) and keys == sorted(keys, key=names.index)

    _language_check(schema, names, schema_order, 5, **FIXED)


def test_other_keys_interleave_with_the_listed_ones() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"]}
    g = Grammar.from_json_schema(schema)
    assert g.matches('{"x": 1, "b": 2, "y": 3, "a": 4}')
    assert not g.matches('{"x": 1, "b": 2}')
    assert not g.matches('{"a": 1, "x": 2, "a": 3}')


def test_counts_hold_in_any_order() -> None:
    names = ["a", "b", "c"]
    schema = {
        "type": "object",
        "properties": {k: {"type": "integer"} for k in names},
        "minProperties": 2,
        "maxProperties": 2,
        "additionalProperties": False,
    }
    _language_check(schema, names, lambda keys: _unique(keys) and len(keys) == 2, 4)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["o1", "o2", "o3", "o4", "o5", "o6", "o7", "r1", "r2"]), max_size=10),
    st.booleans(),
)
def test_floating_required_keys_exactly(keys: list[str], pretty: bool) -> None:
    """Nine listed keys (above ``any_order_up_to``): ``r1``, ``r2`` required and anywhere, the
    optional ``o*`` in schema order, each key at most once."""
    names = ["o1", "r1", "o2", "o3", "o4", "o5", "r2", "o6", "o7"]
    schema = {
        "type": "object",
        "properties": {k: {"type": "integer"} for k in names},
        "required": ["r1", "r2"],
        "additionalProperties": False,
    }
    g = _grammar(json.dumps(schema), "pretty" if pretty else "flexible")
    optional = [k for k in keys if k.startswith("o")]
    want = _unique(keys) and {"r1", "r2"} <= set(keys) and optional == sorted(optional, key=names.index)
    value = dict.fromkeys(keys, 1)
    written = json.dumps(value, indent=2) if pretty and _unique(keys) else text([(k, 1) for k in keys])
    assert g.matches(written) == want


_GRAMMARS: dict[tuple[str, str], Grammar] = {}


def _grammar(schema: str, whitespace: str) -> Grammar:
    key = (schema, whitespace)
    if key not in _GRAMMARS:
        _GRAMMARS[key] = Grammar.from_json_schema(json.loads(schema), whitespace=whitespace)
    return _GRAMMARS[key]


def test_the_budget_keeps_the_fixed_order_past_it() -> None:
    """Past ``any_order_total_states`` the remaining objects keep the fixed order, without error."""
    inner = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    schema = {"type": "object", "properties": {"x": inner, "y": inner | {"required": ["b"]}}, "required": ["x", "y"]}
    loose = Grammar.from_json_schema(schema)
    assert loose.matches('{"y": {"b": 1, "a": 2}, "x": {"b": 1, "a": 2}}')
    tight = Grammar.from_json_schema(schema, any_order_total_states=0, any_order_required_up_to=0)
    assert tight.matches('{"x": {"a": 1, "b": 2}, "y": {"a": 1, "b": 2}}')
    assert not tight.matches('{"x": {"b": 1, "a": 2}, "y": {"a": 1, "b": 2}}')
    assert not tight.matches('{"y": {"a": 1, "b": 2}, "x": {"a": 1, "b": 2}}')


@pytest.mark.parametrize("extra", [0, 6])
def test_the_engine_walks_the_discriminator_first(extra: int) -> None:
    constraint = Constraint.compile(Grammar.from_json_schema(calculate_area(extra)), byte_vocab())
    state = constraint.start()
    for byte in b'{"shape": "circle", "radius": 10}':
        assert state.is_allowed(byte), chr(byte)
        state.commit_token(byte)
    assert state.is_accepting()
