"""An output's grammar and the parser that validates its text: what every front end decodes against.

:class:`OutputSpec` pairs the :class:`~structgen.Grammar` a generation is constrained with and
``parse(text)``, which returns the validated result or raises
:class:`~structgen.errors.GenerationError`. The parsers here are the three ways structgen checks
text after generating it: the grammar's own byte-level matcher, ``jsonschema`` (formats
asserted) and Pydantic. This module sits below tools and output types, which both build specs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from .errors import GenerationError
from .grammar import Grammar


@dataclass(frozen=True)
class OutputSpec:
    """A grammar to constrain with and ``parse(text)``, which returns the validated result or
    raises :class:`~structgen.errors.GenerationError`."""

    grammar: Grammar
    parse: Callable[[str], Any]
    kind: str  # "grammar" | "json_schema" | "type" | "tools"
    label: str


def grammar_parser(grammar: Grammar) -> Callable[[str], Any]:
    """``parse(text)``: the text itself, once the grammar's matcher accepts it."""

    def parse(text: str) -> str:
        if not grammar.matches(text):
            raise GenerationError("the output does not match the grammar", partial_text=text)
        return text

    return parse


def json_schema_parser(schema: Any) -> Callable[[str], Any]:
    """``parse(text)``: ``json.loads`` then validation against ``schema`` (formats asserted)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)

    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise GenerationError(f"the output is not JSON: {e}", partial_text=text) from e
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path)
            raise GenerationError(f"the output fails the schema at /{where}: {error.message}", partial_text=text)
        return value

    return parse


def pydantic_parser(adapter: Any) -> Callable[[str], Any]:
    """``parse(text)``: the value of a ``pydantic.TypeAdapter``, validated from JSON text."""
    from pydantic import ValidationError

    def parse(text: str) -> Any:
        try:
            return adapter.validate_json(text)
        except ValidationError as e:
            raise GenerationError(f"the output fails validation: {e}", partial_text=text) from e

    return parse
