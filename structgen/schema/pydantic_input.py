"""Pydantic models and any type ``pydantic.TypeAdapter`` takes, to a grammar.

The schema is Pydantic's own ``json_schema(mode="validation")``: it describes what
``model_validate_json`` accepts, which is what generated text is parsed with. Three adjustments
keep the grammar inside what Pydantic accepts while keeping it enforceable:

* ``uniqueItems`` is removed: Pydantic emits it for ``set``/``frozenset``, whose validation
  accepts duplicates (it drops them), so it is not a constraint on the JSON Pydantic takes;
* ``format: "binary"`` (``bytes``) and ``format: "password"`` (``SecretStr``) are removed:
  Pydantic accepts any string there;
* the ``Decimal`` string pattern Pydantic writes with a lookahead is replaced by the equivalent
  pattern without one.

Discriminated unions come out as ``oneOf`` whose branches have distinct ``const`` values of a
required property: the translator proves them disjoint and enforces them exactly.
"""

from __future__ import annotations

from typing import Any

from ..grammar import Grammar

_DECIMAL_PATTERN = r"^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$"
_DECIMAL_EQUIVALENT = r"^[+-]?(\d+\.?\d*|\.\d+)$"
_ANY_STRING_FORMATS = frozenset({"binary", "password"})


def _adjust(schema: Any) -> Any:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            node.pop("uniqueItems", None)
            if node.get("format") in _ANY_STRING_FORMATS:
                del node["format"]
            if node.get("pattern") == _DECIMAL_PATTERN:
                node["pattern"] = _DECIMAL_EQUIVALENT
            for key, value in node.items():
                if key in ("enum", "const", "default", "examples"):
                    continue
                if isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(x for x in node if isinstance(x, (dict, list)))
    return schema


def type_schema(tp: Any) -> dict:
    """The JSON Schema of ``tp`` as translated (Pydantic's validation schema, adjusted)."""
    from pydantic import TypeAdapter

    adapter = tp if isinstance(tp, TypeAdapter) else TypeAdapter(tp)
    return _adjust(adapter.json_schema(mode="validation"))


def type_to_grammar(tp: Any, **options: Any) -> Grammar:
    """A grammar for the JSON Pydantic accepts for ``tp`` (a model, dataclass, TypedDict, ...)."""
    from .translate import json_schema_to_grammar

    return json_schema_to_grammar(type_schema(tp), **options)
