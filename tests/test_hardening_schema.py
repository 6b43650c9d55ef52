"""Schemas given as Python data that is not JSON, and Pydantic types Pydantic cannot describe.

Issue 23, finding 7: each must raise :class:`SchemaError` naming the JSON pointer of the value,
never ``ValueError``, ``KeyError``, ``UnicodeEncodeError`` or a Pydantic exception, and never
run for minutes (``1e999999999`` used to be expanded to an exact fraction).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from structgen.errors import SchemaError
from structgen.grammar import Grammar
from structgen.schema import compile_schema


class Plain:
    """A class Pydantic has no schema for."""


# (id, schema, pointer of the offending value)
CASES: list[tuple[str, Any, str]] = [
    ("nan-in-enum", {"enum": [float("nan")]}, "/enum/0"),
    ("inf-const", {"const": float("inf")}, "/const"),
    ("minus-inf-in-nested-enum", {"properties": {"a": {"enum": [1, float("-inf")]}}}, "/properties/a/enum/1"),
    ("decimal-nan", {"const": Decimal("NaN")}, "/const"),
    ("int-property-name", {"properties": {1: {}}}, "/properties"),
    ("int-key-in-const", {"const": {1: "a"}}, "/const"),
    ("none-key-in-deps", {"dependentSchemas": {None: {}}}, "/dependentSchemas"),
    ("surrogate-const", {"const": "\ud800"}, "/const"),
    ("surrogate-in-enum", {"enum": ["a", "b\udfff"]}, "/enum/1"),
    ("surrogate-property-name", {"properties": {"\udc00x": {}}}, "/properties"),
    ("surrogate-required", {"type": "object", "required": ["\udc80"]}, "/required/0"),
    ("surrogate-pattern", {"type": "string", "pattern": "a\ud800"}, "/pattern"),
    ("tuple-enum", {"enum": ("a", "b")}, "/enum"),
    ("tuple-type", {"type": ("string", "null")}, "/type"),
    ("set-enum", {"enum": {"a"}}, "/enum"),
    ("frozenset-required", {"required": frozenset({"a"})}, "/required"),
    ("bytes-const", {"const": b"x"}, "/const"),
    ("object-const", {"const": Plain()}, "/const"),
    ("object-in-all-of", {"allOf": [{}, Plain()]}, "/allOf/1"),
    ("huge-int-const", {"const": 10**5000}, "/const"),
    ("huge-decimal-const", {"const": Decimal("1e999999999")}, "/const"),
    ("tiny-decimal-const", {"const": Decimal("1e-5000")}, "/const"),
    ("huge-decimal-in-items", {"items": {"enum": [Decimal("2e3000")]}}, "/items/enum/0"),
]


@pytest.mark.parametrize("schema, pointer", [pytest.param(s, p, id=i) for i, s, p in CASES])
def test_non_json_value_is_a_schema_error_at_its_pointer(schema: Any, pointer: str) -> None:
    with pytest.raises(SchemaError) as e:
        Grammar.from_json_schema(schema)
    assert e.value.pointer == pointer
    str(e.value).encode("utf-8")  # the message itself is printable: a surrogate is escaped


@pytest.mark.parametrize(
    "text, pointer",
    [
        ('{"enum": [NaN]}', "/enum/0"),
        ('{"properties": {"a": {"const": Infinity}}}', "/properties/a/const"),
        ('{"const": "\\ud800"}', "/const"),
        ('{"properties": {"\\udfff": {}}}', "/properties"),
        ('{"const": 1e999999999}', "/const"),
    ],
)
def test_json_text_with_values_utf8_cannot_carry(text: str, pointer: str) -> None:
    with pytest.raises(SchemaError) as e:
        Grammar.from_json_schema(text)
    assert e.value.pointer == pointer


def test_paired_surrogates_in_json_text_are_one_character() -> None:
    g = Grammar.from_json_schema('{"const": "\\ud83d\\ude00"}')
    assert g.matches('"\U0001f600"'.encode())


def test_free_annotations_are_not_read() -> None:
    # a nan default (Pydantic writes one for `x: float = float("nan")`) does not matter
    g = Grammar.from_json_schema({"type": "integer", "default": float("nan"), "description": b"bytes"})
    assert g.matches("1")
    # but a property *named* like an annotation is a subschema, and is read
    with pytest.raises(SchemaError) as e:
        Grammar.from_json_schema({"properties": {"default": {"const": float("nan")}}})
    assert e.value.pointer == "/properties/default/const"


def test_numbers_within_the_bound_still_work() -> None:
    g = Grammar.from_json_schema({"enum": [Decimal("1e900"), 10**900, 0.5]})
    assert g.matches("0.5") and g.matches("1" + "0" * 900)


_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text("ab", max_size=2))
_bad_leaf = st.sampled_from([float("nan"), float("inf"), "\ud800", b"x", ("a",), {"a"}, Plain()])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["a", "b"]), max_size=4), st.lists(_json_leaf, max_size=3), st.data())
def test_the_pointer_names_where_the_bad_value_is(names: list[str], values: list[Any], data: st.DataObject) -> None:
    """A bad value put in an ``enum`` under any chain of properties is reported at its path."""
    position = data.draw(st.integers(0, len(values)))
    bad = data.draw(_bad_leaf)
    enum = values[:position] + [bad] + values[position:]
    schema: dict[str, Any] = {"enum": enum}
    for name in reversed(names):
        schema = {"properties": {name: schema}}
    with pytest.raises(SchemaError) as e:
        compile_schema(schema)
    assert e.value.pointer == "".join(f"/properties/{n}" for n in names) + f"/enum/{position}"


# -- Pydantic -------------------------------------------------------------------------------------


class WithPlain(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    name: str
    thing: Plain


class Outer(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    label: str = Field(alias="the/label")
    inner: list[WithPlain]


def test_pydantic_field_of_a_plain_class_names_the_field() -> None:
    with pytest.raises(SchemaError) as e:
        Grammar.from_type(WithPlain)
    assert e.value.pointer == "/properties/thing" and "'thing'" in str(e.value)


def test_pydantic_nested_field_is_named_through_its_models() -> None:
    with pytest.raises(SchemaError) as e:
        Grammar.from_type(Outer)
    assert e.value.pointer == "/properties/inner/properties/thing"


@pytest.mark.parametrize("tp", [Plain, list[Plain], 5], ids=["class", "list-of-class", "not-a-type"])
def test_types_pydantic_cannot_take(tp: Any) -> None:
    with pytest.raises(SchemaError) as e:
        Grammar.from_type(tp)
    assert e.value.pointer == ""


def test_a_pydantic_model_with_a_nan_default_still_translates() -> None:
    class Measured(BaseModel):
        value: float = float("nan")

    g = Grammar.from_type(Measured)
    assert g.matches(json.dumps({"value": 1.5}))
