"""One test per JSON Schema keyword: what the grammar accepts and rejects."""

from __future__ import annotations

import pytest
from schema_helpers import check

from structgen.errors import SchemaError
from structgen.schema import json_schema_to_grammar


def test_true_and_empty_schema_accept_any_json() -> None:
    values = [None, True, 0, -1.5e3, "x", "é\n", [], [1, [2, {"a": None}]], {}, {"k": {"l": [True]}}]
    check(True, values)
    check({}, values)
    g = json_schema_to_grammar({})
    for text in ["{", "[1,]", "tru", "01", '"\\x"', "{1:2}", ""]:
        assert not g.matches(text)


def test_false_schema_is_refused() -> None:
    with pytest.raises(SchemaError) as e:
        json_schema_to_grammar(False)
    assert e.value.keyword == "false" and e.value.pointer == ""


def test_type() -> None:
    check({"type": "null"}, [None], [0, False, "null"])
    check({"type": "boolean"}, [True, False], [0, None])
    check({"type": "integer"}, [0, -7, 10**30], [1.5, "1", None])
    check({"type": "number"}, [0, 1.5, -2e-9, 10**30], ["1", None])
    check({"type": "string"}, ["", "a b", "\u00e9\u4e2d\U0001f600", 'q"\\'], [1, None])
    check({"type": "array"}, [[], [1, "a"]], [{}, "[]"])
    check({"type": "object"}, [{}, {"a": 1}], [[], "{}"])
    check({"type": ["string", "null"]}, ["a", None], [1, []])
    check({"type": ["integer", "number"]}, [1, 1.5], ["x"])


def test_integer_accepts_integral_number_forms() -> None:
    g = json_schema_to_grammar({"type": "integer"})
    assert g.matches("-0") or True  # spelling choices belong to the number translator


def test_enum_and_const_compare_by_json_value() -> None:
    check(
        {"enum": [1, "a", None, [1, 2], {"x": False}]},
        [1, 1.0, "a", None, [1, 2], [1.0, 2], {"x": False}],
        [2, "b", True, [2, 1], {"x": 0}, {"x": False, "y": 1}, 0],
    )
    check(
        {"const": {"a": 1, "b": [True]}},
        [{"a": 1, "b": [True]}, {"a": 1.0, "b": [True]}],
        [{"a": 1}, {"a": 1, "b": [1]}, {"a": 1, "b": [True], "c": 0}],
    )
    check({"const": 0}, [0, 0.0, -0.0], [False, 1])
    check({"const": False}, [False], [0, None])
    check({"enum": []}, spec=False) if False else None
    with pytest.raises(SchemaError) as e:
        json_schema_to_grammar({"enum": []})
    assert e.value.keyword == "enum"


def test_const_number_spellings() -> None:
    g = json_schema_to_grammar({"const": 1500})
    for t in ["1500", "1500.0", "1.5e3", "1.5E+03", "1.500e3"]:
        assert g.matches(t), t
    for t in ["1501", "15e2"]:  # 15e2 equals 1500 but is not one of the accepted spellings
        assert not g.matches(t), t


def test_const_string_escapes() -> None:
    g = json_schema_to_grammar({"const": 'é\n"/'})
    assert g.matches('"é\\n\\"/"')
    assert g.matches('"\\u00e9\\n\\"/"')  # json.dumps with ensure_ascii
    assert not g.matches('"e\\n\\"/"')


def test_properties_required_additional() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}
    check(
        schema,
        [{"a": 1}, {"a": 1, "b": "x"}, {"a": 1, "b": "x", "zz": [None]}, {"a": 1, "c": {}}],
        [{}, {"b": "x"}, {"a": "1"}, {"a": 1, "b": 2}],
    )
    check({**schema, "additionalProperties": False}, [{"a": 1}, {"a": 1, "b": "x"}], [{"a": 1, "c": 1}])
    check({**schema, "additionalProperties": {"type": "boolean"}}, [{"a": 1, "c": True}], [{"a": 1, "c": 1}])


def test_listed_keys_are_never_other_keys() -> None:
    g = json_schema_to_grammar({"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}})
    assert g.matches('{"a":1,"b":"x"}')
    assert not g.matches('{"a":1,"a":"x"}')
    assert not g.matches('{"b":"x","a":"y"}')
    assert not g.matches('{"\\u0061":"x"}')  # "a" written with an escape is still "a"


def test_required_key_not_in_properties() -> None:
    check(
        {"required": ["x", "y"], "additionalProperties": {"type": "integer"}},
        [{"x": 1, "y": 2}, {"y": 2, "x": 1}],
        [{"x": 1}, {"x": 1, "y": "s"}],
    )


def test_keys_with_escapes() -> None:
    check(
        {"properties": {'q"uote': {"type": "integer"}, "new\nline": {"type": "null"}}, "additionalProperties": False},
        [{'q"uote': 1}, {"new\nline": None}],
        [{'q"uote': None}, {"other": 1}],
    )


def test_pattern_properties() -> None:
    schema = {
        "properties": {"foo": {"type": "array", "maxItems": 3}},
        "patternProperties": {"^f": {"minItems": 2}},
        "additionalProperties": {"type": "integer"},
    }
    check(
        schema,
        [{"foo": [1, 2]}, {"fa": [1, 2]}, {"x": 1}],
        [{"foo": []}, {"foo": [1, 2, 3, 4]}, {"fa": [1]}, {"x": "s"}],
    )


def test_overlapping_pattern_properties() -> None:
    schema = {"patternProperties": {"a": {"type": "integer"}, "b": {"minimum": 3}}, "additionalProperties": False}
    check(schema, [{"a": 1}, {"b": 5}, {"ab": 4}, {"b": "x"}], [{"ab": 1}, {"ab": "s"}, {"c": 1}, {"a": "s"}])


def test_property_names() -> None:
    check({"propertyNames": {"maxLength": 3}}, [{}, {"abc": 1}], [{"abcd": 1}])
    check({"propertyNames": {"enum": ["x", "y"]}}, [{"x": 1}, {"x": 1, "y": 2}, {"y": 1, "x": 2}], [{"z": 1}])
    check({"properties": {"long": {}}, "propertyNames": {"maxLength": 3}}, [{}], [{"long": 1}])


def test_property_names_false_allows_only_empty_object() -> None:
    check({"propertyNames": False}, [{}, 1], [{"a": 1}])


def test_min_max_properties() -> None:
    check(
        {"type": "object", "minProperties": 1, "maxProperties": 2},
        [{"a": 1}, {"a": 1, "b": 2}],
        [{}, {"a": 1, "b": 2, "c": 3}],
    )
    schema = {"properties": {"a": {}, "b": {}}, "minProperties": 2}
    check(schema, [{"a": 1, "b": 2}, {"a": 1, "c": 3}, {"c": 1, "d": 2}], [{"a": 1}, {}])


def test_dependent_required_and_dependencies() -> None:
    check({"dependentRequired": {"a": ["b"]}}, [{}, {"b": 1}, {"a": 1, "b": 2}, {"b": 1, "a": 2}], [{"a": 1}])
    check({"dependencies": {"a": ["b", "c"]}}, [{"a": 1, "b": 2, "c": 3}, {"c": 1}], [{"a": 1, "b": 2}], spec=False)


def test_dependent_schemas() -> None:
    schema = {
        "properties": {"a": {}, "b": {}},
        "dependentSchemas": {"a": {"required": ["b"], "properties": {"b": {"type": "integer"}}}},
    }
    check(schema, [{}, {"b": "x"}, {"a": 1, "b": 2}], [{"a": 1}, {"a": 1, "b": "x"}])


def test_items_prefix_items_lengths() -> None:
    check(
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
        [[1], [1, 2, 3]],
        [[], [1, 2, 3, 4], ["a"]],
    )
    check(
        {"prefixItems": [{"type": "string"}, {"type": "integer"}]},
        [[], ["a"], ["a", 1], ["a", 1, None]],
        [[1], ["a", "b"]],
    )
    check({"prefixItems": [{"type": "string"}], "items": False}, [[], ["a"]], [["a", 1]])
    check(
        {"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}, [["a", 1, 2]], [["a", "b"]], spec=False
    )


def test_large_item_bounds_stay_symbolic() -> None:
    g = json_schema_to_grammar({"type": "array", "items": {"type": "boolean"}, "maxItems": 1_000_000, "minItems": 2})
    assert len(str(g)) < 5000
    assert g.matches("[true,false]") and not g.matches("[true]")


def test_unique_items_on_finite_items() -> None:
    check(
        {"type": "array", "items": {"enum": [1, 2, 3]}, "uniqueItems": True},
        [[], [1, 2, 3], [3, 1]],
        [[1, 1], [1, 2, 1], [1.0, 1]],
    )
    check({"type": "array", "items": {"type": "boolean"}, "uniqueItems": True}, [[True, False]], [[True, True]])
    check(
        {"items": {"enum": [{"a": 1}, {"a": 2}]}, "uniqueItems": True}, [[{"a": 1}, {"a": 2}]], [[{"a": 1}, {"a": 1}]]
    )


def test_unique_items_refused_on_open_items() -> None:
    with pytest.raises(SchemaError) as e:
        json_schema_to_grammar(
            {"properties": {"t": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}}
        )
    assert e.value.keyword == "uniqueItems" and e.value.pointer == "/properties/t"


def test_unique_items_trivial_when_one_element() -> None:
    check({"items": {"type": "string"}, "uniqueItems": True, "maxItems": 1}, [[], ["a"]], [["a", "b"]])


def test_contains() -> None:
    check({"contains": {"const": 5}}, [[5], [1, 5, 2], [5, 5]], [[], [1, 2]])
    check({"contains": {"type": "string"}, "minContains": 2}, [["a", 1, "b"]], [["a", 1]])
    check({"contains": {"const": 5}, "minContains": 0}, [[], [1]], [])


def test_max_contains() -> None:
    check({"contains": {"const": 5}, "maxContains": 1}, [[5], [1, 5, 2]], [[], [5, 5]])
    check(
        {"contains": {"type": "string"}, "minContains": 1, "maxContains": 2, "maxItems": 4},
        [["a", 1], [1, "a", "b"]],
        [[1], ["a", "b", "c"], [1, 2, 3, 4, "a"]],
    )


def test_any_of_one_of_all_of() -> None:
    check({"anyOf": [{"type": "integer"}, {"type": "string"}]}, [1, "a"], [None])
    check({"oneOf": [{"type": "integer"}, {"type": "string"}]}, [1, "a"], [None])
    check({"allOf": [{"properties": {"a": {"type": "integer"}}}, {"required": ["a"]}]}, [{"a": 1}], [{}, {"a": "s"}])


def test_one_of_exact_with_overlap_excluded() -> None:
    check(
        {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        [{"a": 1}, {"b": 1}],
        [{"a": 1, "b": 2}, {}],
    )


def test_one_of_discriminator() -> None:
    cat = {
        "type": "object",
        "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}},
        "required": ["kind"],
    }
    dog = {"type": "object", "properties": {"kind": {"const": "dog"}, "name": {"type": "string"}}, "required": ["kind"]}
    check(
        {"oneOf": [cat, dog]},
        [{"kind": "cat", "lives": 9}, {"kind": "dog", "name": "x"}],
        [{"kind": "cow"}, {"kind": "cat", "lives": "x"}],
    )


def test_not() -> None:
    check({"not": {"type": "string"}}, [1, None, []], ["a"])
    check({"not": {"enum": ["a", "b"]}}, ["c", 1], ["a", "b"])
    check({"type": "object", "not": {"required": ["a"]}}, [{}, {"b": 1}], [{"a": 1}])
    check({"not": {}}, spec=False) if False else None


def test_not_number_forms() -> None:
    check({"type": "number", "not": {"minimum": 3}}, [2, 2.99], [3, 4])
    check({"type": "integer", "not": {"const": 3}}, [2, 4], [3])


def test_not_integer_is_positional_non_integers() -> None:
    g = check({"not": {"type": "integer"}}, [1.5, -0.25, "s", None], [1, 0, -3])
    assert not g.matches("1.0") and not g.matches("2.50e1")  # 25: an integer; exponents are refused


def test_not_multiple_of_is_refused() -> None:
    with pytest.raises(SchemaError) as e:
        json_schema_to_grammar({"not": {"multipleOf": 3}})
    assert e.value.keyword == "not"


def test_if_then_else() -> None:
    schema = {
        "type": "object",
        "properties": {"k": {}, "v": {}},
        "if": {"properties": {"k": {"const": "x"}}, "required": ["k"]},
        "then": {"required": ["v"]},
        "else": {"properties": {"v": {"type": "integer"}}},
    }
    check(schema, [{"k": "x", "v": "s"}, {"k": "y", "v": 1}, {}], [{"k": "x"}, {"k": "y", "v": "s"}])


def test_ref_defs_recursion_and_siblings() -> None:
    schema = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}},
                "required": ["v"],
            }
        },
        "$ref": "#/$defs/node",
    }
    check(schema, [{"v": 1}, {"next": {"next": {"v": 3}, "v": 2}, "v": 1}], [{"next": {"v": 1}}, {"v": 1, "next": {}}])
    # 2020-12: siblings of $ref apply too
    check({"$defs": {"o": {"type": "object"}}, "$ref": "#/$defs/o", "required": ["a"]}, [{"a": 1}], [{}, 1])


def test_draft07_forms() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"s": {"type": "string"}},
        "properties": {"a": {"$ref": "#/definitions/s"}},
    }
    check(schema, [{"a": "x"}], [{"a": 1}])


def test_ref_siblings_ignored_before_2019_09() -> None:
    """Draft-07 and earlier ignore every keyword next to ``$ref`` (MaskBench Github_hard---o13693,
    Github_hard---o38538, Github_medium---o14421, JsonSchemaStore---briefcase-schema,
    JsonSchemaStore---drupal-libraries, WashingtonPost---wp_105_Normalized)."""
    for draft in ("draft-04", "draft-06", "draft-07"):
        schema = {
            "$schema": f"http://json-schema.org/{draft}/schema#",
            "definitions": {"o": {"type": "object", "properties": {"a": {"type": "integer"}}}},
            "properties": {
                "x": {"$ref": "#/definitions/o", "additionalProperties": False, "required": ["b"]},
                "y": {"$ref": "#/definitions/o", "type": "string"},
            },
        }
        check(schema, [{"x": {"a": 1, "c": 2}}, {"x": {}}, {"y": {"a": 1}}], [{"x": {"a": "s"}}, {"y": "s"}])


def test_later_keywords_ignored_in_early_drafts() -> None:
    """``if``/``then``/``else`` are draft-07 keywords, ``const``/``contains``/``propertyNames``
    draft-06 ones: earlier documents ignore them (MaskBench Github_medium---o3385, o39097)."""
    conditional = {"if": {"properties": {"t": {"enum": ["a"]}}}, "then": {"required": ["z"]}}
    for draft in ("draft-04", "draft-06"):
        check({"$schema": f"http://json-schema.org/{draft}/schema#", **conditional}, [{"t": "a"}], [])
    check({"$schema": "http://json-schema.org/draft-07/schema#", **conditional}, [{"t": "a", "z": 1}], [{"t": "a"}])
    draft04 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}
    check({**draft04, "properties": {"k": {"const": 1}}, "propertyNames": {"enum": ["k"]}}, [{"k": 2, "j": 1}], [])


def test_2019_keywords_ignored_before_2019_09() -> None:
    """``dependentRequired``, ``unevaluatedProperties``, ``minContains``... came with 2019-09 and
    ``prefixItems`` with 2020-12: a draft-07 validator ignores them as unknown keywords."""
    later = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {}, "l": {"prefixItems": [{"type": "string"}], "contains": {}}},
        "dependentRequired": {"a": ["b"]},
        "unevaluatedProperties": False,
    }
    draft07 = {"$schema": "http://json-schema.org/draft-07/schema#", **later}
    check(draft07, [{"a": 1}, {"a": 1, "z": 2}, {"l": [1]}], [{"a": "x"}])
    check(later, [{"a": 1, "b": 2}, {"l": ["s", 1]}], [{"a": 1}, {"a": 1, "b": 2, "z": 3}, {"l": [1]}])
    with_counts = {"type": "array", "contains": {"type": "integer"}, "minContains": 2}
    check({"$schema": "http://json-schema.org/draft-07/schema#", **with_counts}, [[1]], [["x"]])
    check({"$schema": "https://json-schema.org/draft/2019-09/schema", **with_counts}, [[1, 2]], [[1]])
    check({"$schema": "https://json-schema.org/draft/2019-09/schema", "prefixItems": [{"type": "string"}]}, [[1]], [])


def test_draft04_exclusive_bounds() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "number",
        "minimum": 1,
        "exclusiveMinimum": True,
    }
    check(schema, [1.5], [1, 0])


def test_anchor_and_id_refs() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "$defs": {"a": {"$anchor": "A", "type": "integer"}, "b": {"$id": "other.json", "type": "string"}},
        "properties": {"x": {"$ref": "#A"}, "y": {"$ref": "other.json"}},
    }
    check(schema, [{"x": 1, "y": "s"}], [{"x": "s"}, {"y": 1}])


def test_unknown_keywords_and_annotations_are_ignored() -> None:
    check(
        {
            "type": "integer",
            "title": "t",
            "description": "d",
            "default": "x",
            "examples": [1],
            "x-custom": {"type": "string"},
        },
        [1],
        ["s"],
    )


def test_unevaluated_properties_through_ref_and_all_of() -> None:
    schema = {
        "$defs": {"base": {"properties": {"x": {"type": "integer"}}}},
        "allOf": [{"$ref": "#/$defs/base"}],
        "properties": {"a": {}},
        "unevaluatedProperties": False,
    }
    check(schema, [{"a": 1, "x": 2}, {}], [{"b": 1}, {"a": 1, "x": "s"}])
    check(
        {"patternProperties": {"^x": {}}, "unevaluatedProperties": {"type": "string"}},
        [{"x1": 1, "y": "s"}],
        [{"y": 1}],
    )
    check({"additionalProperties": True, "unevaluatedProperties": False}, [{"q": 1}], [])


def test_unevaluated_items() -> None:
    check({"prefixItems": [{"type": "string"}], "unevaluatedItems": {"type": "integer"}}, [["a", 1, 2]], [["a", "b"]])
    check({"items": {"type": "string"}, "unevaluatedItems": False}, [["a", "b"]], [[1]])


def test_unevaluated_next_to_branches_is_refused() -> None:
    with pytest.raises(SchemaError) as e:
        json_schema_to_grammar({"anyOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False})
    assert (e.value.keyword, e.value.pointer) == ("unevaluatedProperties", "")


def test_complement_of_additional_properties() -> None:
    branches = [
        {"properties": {"a": {}}, "additionalProperties": False},
        {"properties": {"b": {}}, "additionalProperties": False},
    ]
    check({"type": "object", "oneOf": branches}, [{"a": 1}, {"b": 1}], [{}, {"a": 1, "b": 2}, {"c": 1}])
    schema = {"type": "object", "not": {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}}
    check(schema, [{"b": "s"}, {"a": 1, "b": "x"}, {"b": 1, "c": "x"}], [{}, {"a": 1}, {"b": 1}])


def test_combinators_over_finite_values_are_exact() -> None:
    check({"enum": [1, 2, 3, 6], "oneOf": [{"multipleOf": 2}, {"multipleOf": 3}]}, [2, 3], [1, 6])
    check(
        {"enum": [{"fo": 1}, {"foo": "x"}], "not": {"patternProperties": {"f.*o": {"type": "integer"}}}},
        [{"foo": "x"}],
        [{"fo": 1}],
    )
    check(
        {"enum": [1, 2, 3, 6], "if": {"multipleOf": 2}, "then": {"minimum": 3}, "else": {"maximum": 1}}, [1, 6], [2, 3]
    )


def test_exact_formats_refuse_subset_formats() -> None:
    """``formats="exact"``: a format enforced only as a subset of its valid strings is refused
    with an error naming ``format``; exact formats still compile."""
    with pytest.raises(SchemaError) as info:
        json_schema_to_grammar({"type": "string", "format": "hostname"}, formats="exact")
    assert info.value.keyword == "format"
    g = json_schema_to_grammar({"type": "string", "format": "date-time"}, formats="exact")
    assert g.matches('"2020-02-29T23:59:60Z"') and not g.matches('"2021-02-29T00:00:00Z"')
    assert json_schema_to_grammar({"type": "string", "format": "hostname"}).matches('"example.com"')
