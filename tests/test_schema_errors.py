"""Refusals and bad input: each error names its keyword and the pointer of the schema object."""

from __future__ import annotations

import json

import pytest

from structgen.errors import LimitError, SchemaError, StructgenError
from structgen.schema import compile_schema, json_schema_to_grammar


def _error(schema, **options) -> SchemaError:
    with pytest.raises(SchemaError) as e:
        json_schema_to_grammar(schema, **options)
    return e.value


@pytest.mark.parametrize("text", ["{", "not json", '{"type": }', "[1, 2", ""])
def test_not_json(text: str) -> None:
    assert "not JSON" in str(_error(text))


def test_not_a_schema() -> None:
    for value in ([], 3, None, "[]"):
        _error(value)


@pytest.mark.parametrize(
    "schema, keyword, pointer",
    [
        ({"type": 5}, "type", ""),
        ({"type": "int"}, "type", ""),
        ({"type": []}, "type", ""),
        ({"properties": {"a": {"minLength": -1}}}, "minLength", "/properties/a"),
        ({"maxItems": 1.5}, "maxItems", ""),
        ({"required": "a"}, "required", ""),
        ({"properties": []}, "properties", ""),
        ({"properties": {"a": 3}}, "properties", ""),
        ({"enum": 3}, "enum", ""),
        ({"multipleOf": 0}, "multipleOf", ""),
        ({"minimum": "1"}, "minimum", ""),
        ({"allOf": []}, "allOf", ""),
        ({"anyOf": {}}, "anyOf", ""),
        ({"items": 1}, "items", ""),
        ({"uniqueItems": 1}, "uniqueItems", ""),
        ({"$defs": {"x": {"not": 1}}, "$ref": "#/$defs/x"}, "not", "/$defs/x"),
        ({"dependentRequired": {"a": "b"}}, "dependentRequired", ""),
        ({"pattern": 1}, "pattern", ""),
    ],
)
def test_wrong_keyword_types(schema, keyword, pointer) -> None:
    e = _error(schema)
    assert (e.keyword, e.pointer) == (keyword, pointer), str(e)


def test_dangling_and_remote_refs() -> None:
    e = _error({"properties": {"a": {"$ref": "#/$defs/missing"}}})
    assert (e.keyword, e.pointer) == ("$ref", "/properties/a")
    e = _error({"$ref": "#nowhere"})
    assert e.keyword == "$ref"
    e = _error({"items": {"$ref": "https://example.com/other.json"}})
    assert (e.keyword, e.pointer) == ("$ref", "/items") and "remote" in e.message
    e = _error({"$ref": "https://json-schema.org/draft/2020-12/schema"})
    assert e.keyword == "$ref"


def test_reference_cycles_without_base_case() -> None:
    e = _error({"$ref": "#"})
    assert e.keyword == "$ref"
    e = _error(
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {}]}}, "$ref": "#/$defs/a"}
    )
    assert e.keyword in ("$ref", "anyOf")
    # through allOf the back reference adds nothing: A = allOf[A, P] is P (self-inheritance)
    g = json_schema_to_grammar(
        {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}, {"type": "integer"}]}}, "$ref": "#/$defs/a"}
    )
    assert g.matches("1") and not g.matches('"s"')
    # recursion through a required property never ends: no finite instance
    e = _error({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})
    assert e.keyword is not None
    # ... but an optional one is fine
    assert json_schema_to_grammar({"type": "object", "properties": {"a": {"$ref": "#"}}}).matches('{"a":{"a":{}}}')


def test_unsatisfiable_schemas() -> None:
    assert _error({"type": "number", "minimum": 5, "maximum": 1}).keyword == "minimum"
    assert _error({"type": "string", "minLength": 5, "maxLength": 1}).keyword == "minLength"
    assert _error({"type": "array", "minItems": 3, "maxItems": 1}).keyword == "minItems"
    assert _error({"allOf": [{"type": "string"}, {"type": "integer"}]}).keyword is not None
    # unsatisfiable for one type only: the others remain
    assert json_schema_to_grammar({"minimum": 5, "maximum": 1}).matches('"s"')


def test_refusals_name_keyword_and_pointer() -> None:
    e = _error(
        {
            "$defs": {"u": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
            "properties": {"x": {"$ref": "#/$defs/u"}},
        }
    )
    assert (e.keyword, e.pointer) == ("uniqueItems", "/$defs/u")
    e = _error({"properties": {"a": {"anyOf": [{}], "unevaluatedProperties": False}}})
    assert (e.keyword, e.pointer) == ("unevaluatedProperties", "/properties/a")
    e = _error({"anyOf": [{"not": {"multipleOf": 2}}]})
    assert (e.keyword, e.pointer) == ("not", "/anyOf/0")
    e = _error({"$schema": "https://example.com/my-meta", "type": "string"})
    assert e.keyword == "$schema"


def test_dynamic_refs() -> None:
    static = {"$dynamicAnchor": "node", "type": "object", "properties": {"kid": {"$dynamicRef": "#node"}}}
    assert json_schema_to_grammar(static).matches('{"kid":{"kid":{}}}')
    dynamic = {
        "$id": "https://x/root",
        "$dynamicAnchor": "n",
        "$defs": {"o": {"$id": "other", "$dynamicAnchor": "n"}},
        "properties": {"k": {"$dynamicRef": "#n"}},
    }
    assert _error(dynamic).keyword == "$dynamicRef"


def test_limits_are_errors_not_crashes() -> None:
    deep = {"type": "object"}
    for _ in range(5000):
        deep = {"properties": {"a": deep}}
    with pytest.raises(LimitError) as e:
        json_schema_to_grammar(deep)
    assert e.value.limit == "max_schema_depth"
    text = "[" * 100_000 + "]" * 100_000
    with pytest.raises(LimitError):
        json_schema_to_grammar('{"enum": ' + text + "}")
    with pytest.raises(LimitError) as e:
        json_schema_to_grammar(json.dumps({"description": "x" * 2000}), max_schema_bytes=1000)
    assert e.value.limit == "max_schema_bytes"
    chain = {"$defs": {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(500)}, "$ref": "#/$defs/d0"}
    chain["$defs"]["d500"] = {"type": "integer"}
    with pytest.raises(LimitError) as e:
        json_schema_to_grammar(chain)
    assert e.value.limit == "max_applicator_depth"
    with pytest.raises(SchemaError):
        json_schema_to_grammar(chain, max_applicator_depth=1000)
    short = {"$defs": {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(150)}, "$ref": "#/$defs/d0"}
    short["$defs"]["d150"] = {"type": "integer"}
    assert json_schema_to_grammar(short, max_applicator_depth=200).matches("1")


def test_thousands_of_properties() -> None:
    props = {f"property_{i}": {"type": ["string", "integer", "null"]} for i in range(2000)}
    schema = {"type": "object", "properties": props, "required": ["property_0", "property_1999"]}
    g = json_schema_to_grammar(json.dumps(schema))
    assert g.matches('{"property_0":1,"property_7":"x","property_1999":null}')
    assert not g.matches('{"property_0":1}')


@pytest.mark.slow
def test_one_megabyte_schema() -> None:
    big = {
        "type": "object",
        "properties": {
            f"k{i}": {"type": "object", "properties": {f"v{j}": {"enum": [j, str(j)]} for j in range(30)}}
            for i in range(2000)
        },
    }
    text = json.dumps(big)
    assert len(text) > 1_000_000
    assert json_schema_to_grammar(text).matches('{"k3":{"v4":"4"}}')


def test_every_error_is_a_structgen_error() -> None:
    for schema in ['{"$ref": 1}', {"$ref": "#/a/b"}, {"properties": {"a": {"$ref": "#/properties/a"}}}]:
        with pytest.raises(StructgenError):
            compile_schema(schema)
