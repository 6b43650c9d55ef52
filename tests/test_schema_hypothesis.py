"""Differential tests: random simple schemas and values, the grammar against ``jsonschema``.

For each generated schema and value, ``jsonschema``'s verdict must equal the grammar's on the
compact and the default-spacing serialisation. Values are drawn near the schema (objects with
its property names, in schema order) so that both verdicts occur often. Schemas the translator
refuses are skipped (a refusal must name a keyword).
"""

from __future__ import annotations

import json
import os
from typing import Any

import jsonschema
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from structgen.errors import SchemaError
from structgen.schema import json_schema_to_grammar

NAMES = ["a", "b", "c", "é", 'q"']
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-20, 20),
    st.sampled_from([0.5, -1.25, 2.0, 1e3]),
    st.sampled_from(["", "x", "ab", "é", "a b"]),
)
JSON = st.recursive(
    SCALARS,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.dictionaries(st.sampled_from(NAMES + ["z"]), kids, max_size=3)
    ),
    max_leaves=8,
)


def _leaf_schema() -> st.SearchStrategy[dict]:
    options = [
        st.builds(
            lambda t: {"type": t},
            st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"]),
        ),
        st.builds(lambda vs: {"enum": vs}, st.lists(SCALARS, min_size=1, max_size=4)),
        st.builds(lambda v: {"const": v}, SCALARS),
        st.just({}),
        st.builds(
            lambda lo, hi: {"type": "integer", "minimum": lo, "maximum": hi}, st.integers(-5, 5), st.integers(-5, 10)
        ),
        st.builds(lambda lo: {"type": "number", "exclusiveMinimum": lo}, st.sampled_from([0, 0.5, -1])),
        st.builds(
            lambda lo, hi: {"type": "string", "minLength": lo, "maxLength": hi}, st.integers(0, 2), st.integers(0, 3)
        ),
        st.builds(lambda m: {"type": "integer", "multipleOf": m}, st.sampled_from([2, 3, 5])),
        st.builds(lambda p: {"type": "string", "pattern": p}, st.sampled_from(["^a", "b$", "^[a-c]*$", "x|é"])),
    ]
    return st.one_of(*options)


def _extend(kids: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    props = st.dictionaries(st.sampled_from(NAMES), kids, max_size=3)
    return st.one_of(
        st.builds(
            lambda p, req, add: {
                "type": "object",
                "properties": p,
                "required": [k for k in p if k in req],
                **({} if add is None else {"additionalProperties": add}),
            },
            props,
            st.sets(st.sampled_from(NAMES)),
            st.one_of(st.none(), st.booleans(), kids),
        ),
        st.builds(
            lambda it, lo, hi: {
                "type": "array",
                "items": it,
                "minItems": lo,
                **({} if hi is None else {"maxItems": hi}),
            },
            kids,
            st.integers(0, 2),
            st.one_of(st.none(), st.integers(1, 3)),
        ),
        st.builds(lambda xs: {"anyOf": xs}, st.lists(kids, min_size=1, max_size=3)),
        st.builds(lambda xs: {"oneOf": xs}, st.lists(kids, min_size=1, max_size=3)),
        st.builds(lambda xs: {"allOf": xs}, st.lists(kids, min_size=1, max_size=2)),
        st.builds(lambda x: {"not": x}, kids),
        st.builds(lambda c, t, e: {"if": c, "then": t, "else": e}, kids, kids, kids),
        st.builds(
            lambda pre, it: {"prefixItems": pre, "items": it},
            st.lists(kids, max_size=2),
            st.one_of(st.booleans(), kids),
        ),
    )


SCHEMAS = st.recursive(_leaf_schema(), _extend, max_leaves=5)


def _near(schema: Any, draw: Any, depth: int = 0) -> Any:
    """A value shaped like ``schema`` (often valid, often not)."""
    if depth > 3 or not isinstance(schema, dict) or draw(st.integers(0, 5)) == 0:
        return draw(JSON)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return _near(draw(st.sampled_from(schema[key])), draw, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if "properties" in schema:
        out = {}
        for k, sub in schema["properties"].items():
            if draw(st.booleans()) or k in schema.get("required", []):
                out[k] = _near(sub, draw, depth + 1)
        if draw(st.integers(0, 3)) == 0:
            out["z"] = draw(JSON)
        return out
    if "items" in schema or "prefixItems" in schema:
        n = draw(st.integers(0, 3))
        pre = schema.get("prefixItems", [])
        return [_near(pre[i] if i < len(pre) else schema.get("items", {}), draw, depth + 1) for i in range(n)]
    return draw(JSON)


@settings(
    max_examples=int(os.environ.get("STRUCTGEN_HYPOTHESIS_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(SCHEMAS, st.data())
def test_grammar_agrees_with_jsonschema(schema: dict, data: st.DataObject) -> None:
    try:
        grammar = json_schema_to_grammar(schema)
    except SchemaError as e:
        assert e.keyword, e
        assume(False)
        return
    validator = jsonschema.Draft202012Validator(schema)
    for _ in range(4):
        value = _near(schema, data.draw)
        expected = validator.is_valid(value)
        for text in {json.dumps(value, separators=(",", ":"), ensure_ascii=False), json.dumps(value)}:
            assert grammar.matches(text) == expected, (schema, text, expected)
