"""Pydantic models and any type ``pydantic.TypeAdapter`` takes, to a grammar.

The schema is Pydantic's own ``json_schema(mode="validation")``: it describes what
``model_validate_json`` accepts, which is what generated text is parsed with. Three adjustments
keep the grammar inside what Pydantic accepts while keeping it enforceable:

* ``uniqueItems`` is removed: Pydantic emits it for ``set``/``frozenset``, whose validation
  accepts duplicates (it drops them), so it is not a constraint on the JSON Pydantic takes;
* ``format: "binary"`` (``bytes``) and ``format: "password"`` (``SecretStr``) are removed:
  Pydantic accepts any string there;
* the ``Decimal`` string pattern Pydantic writes with a lookahead is replaced by the equivalent
  pattern without one;
* ``format: "date-time"`` / ``"date"`` / ``"time"`` also exclude what RFC 3339 allows but Python's
  ``datetime`` does not: year 0000 and leap seconds (``:60``). Pydantic accepts more spellings
  than RFC 3339 (naive date-times, a space for ``T``); the grammar writes RFC 3339 only, so a
  ``NaiveDatetime`` field (offset forbidden) is refused.

Discriminated unions come out as ``oneOf`` whose branches have distinct ``const`` values of a
required property: the translator proves them disjoint and enforces them exactly.
"""

from __future__ import annotations

from typing import Any

from ..errors import SchemaError
from ..grammar import Grammar

_DECIMAL_PATTERN = r"^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$"
_DECIMAL_EQUIVALENT = r"^[+-]?(\d+\.?\d*|\.\d+)$"
_ANY_STRING_FORMATS = frozenset({"binary", "password"})
#: Patterns that keep what Python's datetime types accept of RFC 3339 (no year 0000, no leap
#: second), per format; given with the format, the scalar translator builds one automaton.
_YEAR = "(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_PYTHON_DATETIME_PATTERNS = {
    "date-time": f"^{_YEAR}-[0-9]{{2}}-[0-9]{{2}}[Tt][0-9]{{2}}:[0-9]{{2}}:[0-5][0-9]",
    "date": f"^{_YEAR}-",
    "time": "^[0-9]{2}:[0-9]{2}:[0-5][0-9]",
}
_NAIVE = "x-structgen-naive-datetime"


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
            if node.pop(_NAIVE, False):
                raise SchemaError(
                    "NaiveDatetime fields cannot be enforced: RFC 3339 date-times (what the grammar writes)"
                    " always carry an offset",
                    keyword="format",
                    pointer="",
                )
            keep = _PYTHON_DATETIME_PATTERNS.get(node.get("format"))  # type: ignore[arg-type]
            if keep is not None:
                if "pattern" in node:
                    node.setdefault("allOf", []).append({"pattern": keep})
                else:
                    node["pattern"] = keep
            for key, value in node.items():
                if key in ("enum", "const", "default", "examples"):
                    continue
                if isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(x for x in node if isinstance(x, (dict, list)))
    return schema


def _generator() -> type:
    from pydantic.json_schema import GenerateJsonSchema

    class _Generate(GenerateJsonSchema):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            #: the fields being written, outermost first: what an error names
            self.field_path: list[str] = []

        def datetime_schema(self, schema: Any) -> Any:
            out = super().datetime_schema(schema)
            if schema.get("tz_constraint") == "naive":
                out[_NAIVE] = True
            return out

        def _named_required_fields_schema(self, named_required_fields: Any) -> Any:
            # Pydantic writes a model's (dataclass's, TypedDict's) fields here, one at a time; a
            # field name is recorded while its schema is written, so that a field Pydantic
            # cannot describe is named in the error. (A private hook: if Pydantic renames it,
            # errors still come, without the field.)
            path = self.field_path
            depth = len(path)

            def named() -> Any:
                for item in named_required_fields:
                    del path[depth:]
                    path.append(str(item[0]))
                    yield item
                del path[depth:]

            return super()._named_required_fields_schema(named())  # type: ignore[arg-type]

    return _Generate


def _first_line(e: BaseException) -> str:
    return str(e).strip().split("\n", 1)[0]


def type_schema(tp: Any) -> dict:
    """The JSON Schema of ``tp`` as translated (Pydantic's validation schema, adjusted).

    A type Pydantic cannot take, or cannot describe in JSON Schema (a field of a plain class
    with ``arbitrary_types_allowed``), raises :class:`~structgen.errors.SchemaError`; its pointer
    names the field, through the ``properties`` of the models that hold it.
    """
    from pydantic import TypeAdapter
    from pydantic.errors import PydanticUndefinedAnnotation, PydanticUserError

    refused = (PydanticUserError, PydanticUndefinedAnnotation)
    try:
        adapter = tp if isinstance(tp, TypeAdapter) else TypeAdapter(tp)
    except refused as e:
        raise SchemaError(
            f"Pydantic cannot build a schema for {tp!r}: {_first_line(e)}", keyword=None, pointer=""
        ) from e
    tracked: list[Any] = []  # the generator Pydantic makes, to read its field path after an error

    class _Tracked(_generator()):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            tracked.append(self)

    try:
        schema = adapter.json_schema(mode="validation", schema_generator=_Tracked)
    except refused as e:
        path = tracked[-1].field_path if tracked else []
        where = f"field {'.'.join(path)!r}" if path else repr(tp)
        raise SchemaError(
            f"Pydantic cannot write a JSON Schema for {where}: {_first_line(e)}",
            keyword=None,
            pointer="".join(f"/properties/{p.replace('~', '~0').replace('/', '~1')}" for p in path),
        ) from e
    return _adjust(schema)


def type_to_grammar(tp: Any, **options: Any) -> Grammar:
    """A grammar for the JSON Pydantic accepts for ``tp`` (a model, dataclass, TypedDict, ...)."""
    from .translate import json_schema_to_grammar

    return json_schema_to_grammar(type_schema(tp), **options)
