"""Translator options: whitespace, property order, strict, oneOf mode, formats, lenient."""

from __future__ import annotations

import itertools
import json

import pytest

from structgen.errors import SchemaError
from structgen.schema import SchemaOptions, compile_schema, json_schema_to_grammar

OBJ = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "boolean"}}},
    "required": ["a"],
}
VALUE = {"a": 1, "b": [True, False]}


def test_flexible_whitespace_default() -> None:
    g = json_schema_to_grammar(OBJ)
    for text in [
        json.dumps(VALUE, separators=(",", ":")),
        json.dumps(VALUE),
        json.dumps(VALUE, indent=2),
        json.dumps(VALUE, indent=4),
        '{ "a" : 1 , "b" : [ true ] }',
        '{\r\n\t"a": 1\r\n}',
    ]:
        assert g.matches(text), text
    for text in [
        " " + json.dumps(VALUE),
        json.dumps(VALUE) + "\n",
        '{"a":  1}',
        '{"a":\n\n1}',
        '{"a":' + "\n" + " " * 33 + "1}",
    ]:
        assert not g.matches(text), text


def test_compact_whitespace() -> None:
    g = json_schema_to_grammar(OBJ, whitespace="compact")
    assert g.matches(json.dumps(VALUE, separators=(",", ":")))
    assert not g.matches(json.dumps(VALUE))


@pytest.mark.parametrize("indent", [2, 4])
def test_pretty_whitespace_is_exactly_json_dumps(indent: int) -> None:
    schema = {
        "type": "object",
        "properties": {"x": OBJ, "l": {"type": "array", "items": OBJ}, "e": {"type": "object"}, "z": {"type": "array"}},
    }
    value = {"x": VALUE, "l": [VALUE, {"a": 2}], "e": {}, "z": []}
    g = json_schema_to_grammar(schema, whitespace="pretty", indent=indent)
    assert g.matches(json.dumps(value, indent=indent))
    assert not g.matches(json.dumps(value, indent=indent + 1))
    assert not g.matches(json.dumps(value))


def test_pretty_whitespace_in_recursive_schema() -> None:
    schema = {
        "$defs": {
            "t": {
                "type": "object",
                "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}},
                "required": ["v"],
            }
        },
        "$ref": "#/$defs/t",
    }
    value = {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}
    g = json_schema_to_grammar(schema, whitespace="pretty", indent=2)
    assert g.matches(json.dumps(value, indent=2))
    assert not g.matches(json.dumps(value))


def test_custom_whitespace_pattern() -> None:
    g = json_schema_to_grammar(OBJ, whitespace_pattern="[ ]{0,2}")
    assert g.matches('{ "a" :  1 }') and not g.matches('{   "a":1}') and not g.matches('{\n"a":1}')
    with pytest.raises(SchemaError):
        json_schema_to_grammar(OBJ, whitespace_pattern=r"\s*")
    g = json_schema_to_grammar(OBJ, whitespace_pattern=r"\s*", unbounded_whitespace_ok=True)
    assert g.matches('{"a":    1}') and not g.matches('{"a":\u00a01}'.encode().decode("unicode_escape").encode("utf-8"))
    g = json_schema_to_grammar(OBJ, whitespace_pattern="x?")  # only JSON whitespace can ever match
    assert g.matches('{"a":1}') and not g.matches('{"a":x1}')


#: the fixed orders alone: small objects take any order, larger ones float their required keys
FIXED_ORDER = {"any_order_up_to": 0, "any_order_required_up_to": 0}


def test_property_order_schema_default() -> None:
    schema = {"properties": {"a": {}, "b": {}, "c": {}}, "required": ["c"]}
    g = json_schema_to_grammar(schema, **FIXED_ORDER)
    assert g.matches('{"a":1,"c":2}') and g.matches('{"c":2}')
    assert not g.matches('{"c":2,"a":1}')
    assert g.matches('{"c":2,"zz":1}') and not g.matches('{"zz":1,"c":2}')


def test_property_order_required_first() -> None:
    schema = {"properties": {"a": {}, "b": {}, "c": {}}, "required": ["c"]}
    g = json_schema_to_grammar(schema, property_order="required_first", **FIXED_ORDER)
    assert g.matches('{"c":2,"a":1,"b":3}')
    assert not g.matches('{"a":1,"c":2}')


def test_small_objects_take_any_order_by_default() -> None:
    schema = {"properties": {"a": {}, "b": {}, "c": {}}, "required": ["c"]}
    for order in ("schema", "required_first"):
        g = json_schema_to_grammar(schema, property_order=order)
        assert g.matches('{"c":2,"a":1}') and g.matches('{"zz":1,"c":2,"b":3}')
        assert not g.matches('{"c":2,"c":1}') and not g.matches('{"a":1}')


def test_property_order_any() -> None:
    schema = {
        "properties": {"a": {"type": "integer"}, "b": {}, "c": {}},
        "required": ["a", "c"],
        "additionalProperties": {"type": "string"},
    }
    g = json_schema_to_grammar(schema, property_order="any")
    for perm in itertools.permutations(['"a":1', '"b":2', '"c":3', '"x":"s"']):
        assert g.matches("{" + ",".join(perm) + "}"), perm
    assert g.matches('{"c":3,"a":1}')
    for bad in ['{"a":1}', '{"a":1,"c":2,"a":3}', '{"c":1,"a":"s"}', '{"a":1,"c":2,"x":1}']:
        assert not g.matches(bad), bad


def test_property_order_any_state_limit() -> None:
    from structgen.errors import LimitError

    schema = {"properties": {f"p{i}": {} for i in range(20)}}
    with pytest.raises(LimitError) as e:
        json_schema_to_grammar(schema, property_order="any")
    assert e.value.limit == "max_any_order_states"


def test_strict_forbids_unlisted_keys() -> None:
    g = json_schema_to_grammar({"properties": {"a": {}}, "required": ["a"], "additionalProperties": True}, strict=True)
    assert g.matches('{"a":1}') and not g.matches('{"a":1,"b":2}')
    g = json_schema_to_grammar({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}, strict=True)
    assert g.matches('{"a":1,"b":2}')  # an additionalProperties schema is a real constraint: kept
    g = json_schema_to_grammar({"properties": {"a": {"type": "object"}}}, strict=True)
    assert g.matches('{"a":{"free":1}}')  # a free-form object stays free-form
    assert not g.matches('{"a":{},"b":2}')


def test_one_of_modes() -> None:
    schema = {"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 10}]}
    with pytest.raises(SchemaError) as e:
        json_schema_to_grammar({"oneOf": [{"multipleOf": 2}, {"multipleOf": 3}]})
    assert e.value.keyword == "oneOf" and e.value.pointer == ""
    g = json_schema_to_grammar({"oneOf": [{"multipleOf": 2}, {"multipleOf": 3}]}, one_of="any_of") if False else None
    g = json_schema_to_grammar({"oneOf": [{"enum": [1, 2]}, {"enum": [2, 3]}]})
    assert g.matches("1") and g.matches("3") and not g.matches("2")
    g = json_schema_to_grammar({"oneOf": [{"enum": [1, 2]}, {"enum": [2, 3]}]}, one_of="any_of")
    assert g.matches("2")
    del schema


def test_formats_ignore() -> None:
    g = json_schema_to_grammar({"type": "string", "format": "email"}, formats="ignore")
    assert g.matches('"not an email"')
    with pytest.raises(SchemaError) as e:
        json_schema_to_grammar({"type": "string", "format": "no-such-format"})
    assert e.value.keyword == "format"


def test_lenient_records_dropped_keywords() -> None:
    schema = {
        "properties": {
            "t": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "n": {"not": {"multipleOf": 3}},
        }
    }
    with pytest.raises(SchemaError):
        compile_schema(schema)
    result = compile_schema(schema, lenient=True)
    dropped = {(d.pointer, d.keyword) for d in result.dropped}
    assert dropped == {("/properties/t", "uniqueItems"), ("/properties/n", "not")}
    assert not result.exact
    g = result.grammar
    assert g.matches('{"t":["a","a"],"n":9}')  # the dropped constraints are not enforced
    assert not g.matches('{"t":[1]}')  # the others are
    assert json_schema_to_grammar(schema, lenient=True)._derived["schema.dropped"] == result.dropped


def test_options_are_validated() -> None:
    for bad in [
        dict(whitespace="wide"),
        dict(property_order="random"),
        dict(indent=-1),
        dict(strict="yes"),
        dict(bogus=1),
    ]:
        with pytest.raises(SchemaError):
            json_schema_to_grammar({}, **bad)
    assert compile_schema({}, SchemaOptions(whitespace="compact")).grammar.matches("[1,2]")
