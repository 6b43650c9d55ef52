"""JSON-Schema-Test-Suite cases that only use scalar keywords, run through the scalar nodes."""

from __future__ import annotations

import json

import pytest

from structgen import Grammar, SchemaError
from structgen.grammar import ir
from structgen.schema.numbers import integer_node, number_node
from structgen.schema.strings import string_node

FILES = [
    "minLength.json", "maxLength.json", "pattern.json", "minimum.json", "maximum.json",
    "exclusiveMinimum.json", "exclusiveMaximum.json", "multipleOf.json", "type.json",
]  # fmt: skip
STRING_KEYWORDS = {"minLength": "min_length", "maxLength": "max_length", "pattern": "pattern"}
NUMBER_KEYWORDS = {
    "minimum": "minimum",
    "maximum": "maximum",
    "exclusiveMinimum": "exclusive_minimum",
    "exclusiveMaximum": "exclusive_maximum",
    "multipleOf": "multiple_of",
}


def _grammar(schema: dict, value: object) -> Grammar | None:
    """The scalar grammar that decides ``value`` under ``schema``, or None if the case is not scalar."""
    keys = set(schema) - {"$schema", "type"}
    kind = schema.get("type")
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        return None
    if isinstance(value, str):
        if kind not in (None, "string") or not keys <= set(STRING_KEYWORDS):
            return None
        return Grammar({"root": string_node(**{STRING_KEYWORDS[k]: schema[k] for k in keys})}, "root")
    if kind not in (None, "number", "integer") or not keys <= set(NUMBER_KEYWORDS):
        return None
    rules: dict[str, ir.Node] = {}
    build = integer_node if kind == "integer" else number_node
    node = build(rules=rules, allow_empty=True, **{NUMBER_KEYWORDS[k]: schema[k] for k in keys})
    return Grammar({"root": node, **rules}, "root")


def test_scalar_keyword_files(corpora) -> None:  # type: ignore[no-untyped-def]
    folder = corpora / "json-schema-test-suite" / "tests" / "draft2020-12"
    checked = 0
    wrong = []
    refused = []
    for name in FILES:
        for group in json.loads((folder / name).read_text(encoding="utf-8")):
            schema = group["schema"]
            if not isinstance(schema, dict):
                continue
            for test in group["tests"]:
                try:
                    g = _grammar(schema, test["data"])
                except SchemaError as exc:
                    refused.append((json.dumps(schema), exc.keyword))
                    continue
                if g is None:
                    continue
                for ensure_ascii in (True, False):
                    text = json.dumps(test["data"], ensure_ascii=ensure_ascii)
                    checked += 1
                    if g.matches(text) != test["valid"]:
                        wrong.append(f"{name}: {json.dumps(schema)} {text} expected {test['valid']}")
    assert not wrong, "\n".join(wrong)
    assert checked > 80
    # divisibility by 123456789 needs an automaton of that many states: refused, never guessed
    assert {kw for _s, kw in refused} <= {"multipleOf"} and len(refused) == 1, refused


@pytest.mark.parametrize("text", ["1.0", "-2.0", "0.0"])
def test_integral_floats_are_integers(text: str) -> None:
    assert Grammar({"root": integer_node()}, "root").matches(text)
