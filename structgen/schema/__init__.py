"""JSON Schema, Pydantic models and Python types to the grammar form.

Policy: *enforce or refuse*. Every keyword is enforced exactly, or translation fails with a
:class:`~structgen.errors.SchemaError` naming the keyword and the JSON pointer of the schema object
holding it. ``lenient=True`` drops refused keywords instead (the grammar then accepts more than
the schema) and records each one. Annotations are ignored, as the specification says.

* :func:`json_schema_to_grammar`, :func:`compile_schema` - a schema to a :class:`Grammar`;
* :func:`type_to_grammar` - a Pydantic model or any type ``pydantic.TypeAdapter`` takes;
* :func:`enforceability_report` - what would be enforced, refused or ignored, and why;
* :func:`normalize_tool_parameters` - BFCL-style function parameter schemas to JSON Schema.

Pipeline: :mod:`.loader` (document, references) -> :mod:`.keywords` (each schema object to the
normal form of :mod:`.model`, with :mod:`.algebra`, :mod:`.negate`, :mod:`.disjoint`) ->
:mod:`.emit`, :mod:`.objects`, :mod:`.arrays` (rules) -> :mod:`.trim`.
"""

from .compiler import Dropped, Ignored
from .options import SchemaOptions
from .pydantic_input import type_schema, type_to_grammar
from .report import EnforceabilityReport, KeywordStatus, enforceability_report
from .tool_params import normalize_tool_parameters
from .translate import SchemaCompilation, compile_schema, json_schema_to_grammar

__all__ = [
    "Dropped",
    "EnforceabilityReport",
    "Ignored",
    "KeywordStatus",
    "SchemaCompilation",
    "SchemaOptions",
    "compile_schema",
    "enforceability_report",
    "json_schema_to_grammar",
    "normalize_tool_parameters",
    "type_schema",
    "type_to_grammar",
]
