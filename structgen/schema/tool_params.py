"""Tool (function-calling) parameter schemas in the loose dialects LLM benchmarks use, made JSON Schema.

BFCL and many tool definitions write Python, Java or JavaScript type names where JSON Schema
expects its own (``"dict"``, ``"float"``, ``"tuple"``, ``"any"``, ``"String"``, ``"HashMap"``,
``"long"``...). :func:`normalize_tool_parameters` rewrites those type names (recursively, in
``properties``, ``items``, ``additionalProperties`` and the combinators) and leaves everything
else alone. BFCL's non-standard ``"optional"`` flag is dropped (requiredness is what ``required``
says).
"""

from __future__ import annotations

import copy
from typing import Any

#: Loose type name -> JSON Schema type name (``None``: any value, the ``type`` is removed).
TYPE_NAMES: dict[str, str | None] = {
    "dict": "object",
    "object": "object",
    "hashmap": "object",
    "map": "object",
    "float": "number",
    "double": "number",
    "number": "number",
    "int": "integer",
    "integer": "integer",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "tuple": "array",
    "list": "array",
    "array": "array",
    "arraylist": "array",
    "set": "array",
    "str": "string",
    "string": "string",
    "char": "string",
    "bool": "boolean",
    "boolean": "boolean",
    "null": "null",
    "none": "null",
    "any": None,
    "": None,
}

_SUBSCHEMA_KEYS = ("items", "additionalProperties", "not", "contains", "propertyNames")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _fix_type(t: Any) -> Any:
    if isinstance(t, str):
        return TYPE_NAMES.get(t.lower(), t)
    if isinstance(t, list):
        out = []
        for x in t:
            y = _fix_type(x)
            if y is None:
                return None
            if y not in out:
                out.append(y)
        return out
    return t


def normalize_tool_parameters(schema: Any) -> Any:
    """A copy of a loose tool parameter schema, rewritten as JSON Schema (iteratively)."""
    root = copy.deepcopy(schema)
    stack = [root]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if "type" in node:
            fixed = _fix_type(node["type"])
            if fixed is None:
                del node["type"]
            else:
                node["type"] = fixed
        node.pop("optional", None)
        props = node.get("properties")
        if isinstance(props, dict):
            stack.extend(props.values())
        for key in _SUBSCHEMA_KEYS:
            if isinstance(node.get(key), dict):
                stack.append(node[key])
        for key in _SUBSCHEMA_LISTS:
            if isinstance(node.get(key), list):
                stack.extend(node[key])
        if isinstance(node.get("items"), list):
            stack.extend(node["items"])
    return root
