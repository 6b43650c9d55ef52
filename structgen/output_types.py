"""What :func:`structgen.generate` is asked to produce, as a grammar plus a parser that validates.

:func:`resolve_output` turns an ``output_type`` into an :class:`OutputSpec`:

* a :class:`~structgen.Grammar` - the text itself is the result (checked with the byte-level
  matcher);
* a JSON Schema ``dict`` - the JSON text, parsed and validated with ``jsonschema``, as Python data;
* a :class:`~structgen.tools.ToolSet` (or a list of tools) - a typed tool call;
* anything ``pydantic.TypeAdapter`` takes (a ``BaseModel`` subclass, ``list[int]``, an ``Enum``,
  ``Literal[...]``, a ``TypedDict``...) - the JSON text validated by Pydantic, as that type.

Schema options (whitespace, property order...) go to the translator. For generation the defaults
differ from the translator's in two ways: ``strict=True`` (an object never gets properties its
schema does not list, even where the schema allows them - Pydantic models allow them by default -
so a model cannot wander off into made-up keys), and whitespace between JSON tokens is at most
one space (``whitespace_pattern="[ ]?"``) unless ``whitespace=`` or ``whitespace_pattern=`` is
given. Specs are cached per (output type, options).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Mapping

from . import caches
from .errors import SchemaError, StructgenError
from .grammar import Grammar
from .output_spec import OutputSpec, grammar_parser, json_schema_parser, pydantic_parser
from .tools import ToolSet, looks_like_tools

__all__ = ["OutputSpec", "json_schema_parser", "resolve_output", "with_generation_defaults"]

#: Translator options :func:`structgen.generate` sets unless the caller does.
GENERATION_SCHEMA_DEFAULTS: Mapping[str, Any] = {"strict": True}
#: Whitespace between JSON tokens when the caller chooses none: at most one space. Small models
#: sampled at temperature 1 otherwise spend their budget on newlines and indentation.
GENERATION_WHITESPACE = "[ ]?"

_CACHE_SIZE = 256
_cache: OrderedDict[Any, OutputSpec] = OrderedDict()
_cache_lock = threading.Lock()


def resolve_output(output_type: Any, schema_options: Mapping[str, Any] | None = None) -> OutputSpec:
    """The :class:`OutputSpec` for ``output_type`` (cached; see the module docstring)."""
    options = dict(schema_options or {})
    key = _cache_key(output_type, options)
    if key is not None:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return hit
    spec = _build(output_type, options)
    if key is not None:
        with _cache_lock:
            _cache[key] = spec
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return spec


def _cache_key(output_type: Any, options: Mapping[str, Any]) -> Any:
    try:
        opts = tuple(sorted(options.items()))
        hash(opts)
        if isinstance(output_type, dict):
            return ("schema", json.dumps(output_type, sort_keys=True, default=repr), opts)
        if isinstance(output_type, (list, tuple)):
            return None  # tool lists are cheap to rebuild and may hold unhashable definitions
        hash(output_type)
        return ("obj", type(output_type), output_type, opts)
    except (TypeError, ValueError):
        return None


def _build(output_type: Any, options: dict[str, Any]) -> OutputSpec:
    if isinstance(output_type, Grammar):
        if options:
            raise StructgenError(f"schema options {sorted(options)} do not apply to a Grammar output type")
        return OutputSpec(output_type, grammar_parser(output_type), "grammar", repr(output_type))
    if isinstance(output_type, ToolSet) or looks_like_tools(output_type):
        toolset = output_type if isinstance(output_type, ToolSet) else ToolSet(output_type)
        return toolset.output_spec(**with_generation_defaults(options))
    if isinstance(output_type, dict):
        grammar = Grammar.from_json_schema(output_type, **with_generation_defaults(options))
        return OutputSpec(grammar, json_schema_parser(output_type), "json_schema", "JSON Schema")
    if isinstance(output_type, (str, bytes)):
        raise StructgenError(
            "output_type is a string: pass a JSON Schema as a dict (json.loads it first), "
            "or a grammar as Grammar.from_gbnf(...) / Grammar.from_regex(...)"
        )
    adapter = _type_adapter(output_type)
    grammar = Grammar.from_type(output_type, **with_generation_defaults(options))
    return OutputSpec(grammar, pydantic_parser(adapter), "type", _type_label(output_type))


def with_generation_defaults(options: Mapping[str, Any]) -> dict[str, Any]:
    """Translator options for generation: ``options`` over :data:`GENERATION_SCHEMA_DEFAULTS` and
    the one-space whitespace unless the caller chose whitespace."""
    out = dict(GENERATION_SCHEMA_DEFAULTS)
    if "whitespace" not in options and "whitespace_pattern" not in options:
        out["whitespace_pattern"] = GENERATION_WHITESPACE
    out.update(options)
    return out


def _type_adapter(tp: Any) -> Any:
    from pydantic import TypeAdapter
    from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

    try:
        return TypeAdapter(tp)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as e:
        raise SchemaError(
            f"output_type {_type_label(tp)} is neither a Grammar, a JSON Schema dict, tools, nor a type "
            f"Pydantic can validate: {e}",
            keyword=None,
            pointer="",
        ) from e


def _type_label(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


caches.register_dict("output_types.specs", _cache, lock=_cache_lock)
