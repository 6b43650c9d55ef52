"""Typed tool calls: tools from functions, Pydantic models or OpenAI definitions; calls that dispatch.

A :class:`ToolSet` is an output type for :func:`structgen.generate`: the model writes one call
as JSON, ``{"name": "<tool>", "arguments": {...}}``, constrained to the tools' names and their
argument schemas, and gets back a :class:`ToolCall` whose arguments are validated and typed, and
whose :meth:`ToolCall.invoke` runs the tool. With ``final_answer=`` the set also offers a
``final_answer`` pseudo-tool, and ``generate`` returns a :class:`FinalAnswer` when the model
chooses it: the union an agent loop needs (:func:`run_agent` is such a loop).

Tools come from:

* a Python function: its signature (every parameter annotated; no ``*args``/``**kwargs``)
  becomes a Pydantic model, its docstring the description (and ``Args:`` / ``:param x:`` lines
  the parameter descriptions);
* a Pydantic model class: its fields are the arguments, the validated instance is passed to the
  function given with it (or to the model's own ``__call__``);
* an OpenAI tool definition (``{"type": "function", "function": {"name", "description",
  "parameters"}}``, or the inner object): arguments validated with ``jsonschema``; the function to
  run is given separately (``handlers=``).

A signature that cannot become a schema raises :class:`ToolDefinitionError` naming the tool and
the parameter.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .errors import GenerationError, SchemaError, StructgenError
from .grammar import Grammar
from .output_spec import OutputSpec, json_schema_parser
from .schema import normalize_tool_parameters

FINAL_ANSWER = "final_answer"
_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


class ToolDefinitionError(SchemaError):
    """A tool that cannot become a schema (``tool`` and ``parameter`` name it)."""

    def __init__(self, message: str, *, tool: str, parameter: str | None = None) -> None:
        self.tool = tool
        self.parameter = parameter
        pointer = f"/properties/{parameter}" if parameter else ""
        super().__init__(f"tool {tool!r}: {message}", keyword=None, pointer=pointer)


# -- one tool ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Tool:
    """A callable tool: ``name``, ``description``, the JSON Schema of its arguments, and how to
    validate and run them."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any] | None = None
    args_model: Any = None  # a pydantic model class validating the arguments, or None (jsonschema)
    kind: str = "function"  # "function" | "model" | "openai" | "final_answer"
    positional: tuple[str, ...] = ()  # positional-only parameters of `fn`
    _validator: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.description, str):
            raise ToolDefinitionError("a tool description is a string", tool=self.name)
        # the chat template prints both; a lone surrogate failed inside the tokenizer instead
        try:
            self.description.encode("utf-8")
            json.dumps(self.parameters, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError:
            raise ToolDefinitionError("the description or parameters hold a lone surrogate", tool=self.name) from None

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> Tool:
        tool_name = name or getattr(fn, "__name__", None) or type(fn).__name__
        _check_name(tool_name)
        doc = inspect.getdoc(fn)
        if not doc and not inspect.isroutine(fn):
            doc = inspect.getdoc(getattr(type(fn), "__call__", None))
        summary, param_docs = _parse_docstring(doc or "")
        model, positional = _arguments_model(fn, tool_name, param_docs)
        schema = _model_schema(model, tool_name)
        return cls(
            tool_name, description if description is not None else summary, schema, fn, model, "function", positional
        )

    @classmethod
    def from_model(cls, model: Any, *, fn: Callable[..., Any] | None = None, name: str | None = None) -> Tool:
        tool_name = name or model.__name__
        _check_name(tool_name)
        summary, _ = _parse_docstring(inspect.getdoc(model) if model.__doc__ else "")
        schema = _model_schema(model, tool_name)
        return cls(tool_name, summary, schema, fn, model, "model")

    @classmethod
    def from_openai(cls, definition: Mapping[str, Any], *, fn: Callable[..., Any] | None = None) -> Tool:
        spec = definition.get("function", definition) if definition.get("type") == "function" else definition
        tool_name = spec.get("name")
        if not isinstance(tool_name, str):
            raise ToolDefinitionError("an OpenAI tool definition needs a string 'name'", tool=str(tool_name))
        _check_name(tool_name)
        params = spec.get("parameters")
        if params is None:
            params = {"type": "object", "properties": {}}
        if not isinstance(params, dict):
            raise ToolDefinitionError("'parameters' must be a JSON Schema object", tool=tool_name)
        params = normalize_tool_parameters(params)
        kinds = params.get("type")
        if kinds is not None and "object" not in (kinds if isinstance(kinds, list) else [kinds]):
            # a call's arguments are a JSON object in every call format; a string or array schema
            # made calls that could not be read back
            raise ToolDefinitionError(f"'parameters' must describe an object, not type {kinds!r}", tool=tool_name)
        try:
            validator = json_schema_parser(params)
        except Exception as e:  # jsonschema.SchemaError and friends
            raise ToolDefinitionError(f"'parameters' is not a valid JSON Schema: {e}", tool=tool_name) from e
        return cls(tool_name, str(spec.get("description") or ""), params, fn, None, "openai", (), validator)

    @classmethod
    def coerce(cls, obj: Any, handlers: Mapping[str, Callable[..., Any]] | None = None) -> Tool:
        """A :class:`Tool` from a function, a Pydantic model class, an OpenAI definition or a Tool."""
        handlers = handlers or {}
        if isinstance(obj, Tool):
            return obj
        if isinstance(obj, Mapping):
            spec = obj.get("function", obj) if obj.get("type") == "function" else obj
            return cls.from_openai(obj, fn=handlers.get(str(spec.get("name"))))
        if _is_model_class(obj):
            return cls.from_model(obj, fn=handlers.get(obj.__name__))
        if callable(obj):
            return cls.from_function(obj)
        raise StructgenError(
            f"cannot make a tool from a {type(obj).__name__}: pass a function, a Pydantic model or an OpenAI definition"
        )

    # -- use ------------------------------------------------------------------------------------

    def validate_arguments(self, arguments: Any, text: str = "") -> Any:
        """The validated arguments: a model instance, or the dict itself for OpenAI definitions."""
        if self.args_model is not None:
            from pydantic import ValidationError

            try:
                return self.args_model.model_validate_json(json.dumps(arguments))
            except ValidationError as e:
                raise GenerationError(f"arguments of {self.name!r} fail validation: {e}", partial_text=text) from e
        return self._validator(json.dumps(arguments))

    def to_openai(self) -> dict[str, Any]:
        """This tool as an OpenAI tool definition."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class ToolCall:
    """A validated call: ``name``, typed ``arguments`` (a model instance, or a dict for OpenAI
    definitions) and ``id`` (stable: the same call at the same position gets the same id);
    :meth:`invoke` runs the tool."""

    tool: Tool
    arguments: Any
    id: str = ""

    @property
    def name(self) -> str:
        return self.tool.name

    def arguments_dict(self) -> dict[str, Any]:
        if self.tool.args_model is not None:
            return self.arguments.model_dump(mode="json")
        return dict(self.arguments)

    def arguments_json(self) -> str:
        """The arguments as a JSON text (OpenAI's ``function.arguments``)."""
        return json.dumps(self.arguments_dict(), ensure_ascii=False)

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "arguments": self.arguments_dict()}, ensure_ascii=False)

    def to_openai(self) -> dict[str, Any]:
        """This call as an entry of an OpenAI assistant message's ``tool_calls``."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments_json()}}

    def invoke(self) -> Any:
        tool = self.tool
        if tool.kind == "model":
            if tool.fn is not None:
                return tool.fn(self.arguments)
            if callable(self.arguments) and "__call__" in _own_attributes(type(self.arguments)):
                return self.arguments()
            raise StructgenError(
                f"tool {tool.name!r} has no function to run: give one with Tool.from_model(..., fn=...)"
            )
        if tool.fn is None:
            raise StructgenError(f"tool {tool.name!r} has no function to run: pass handlers={{{tool.name!r}: fn}}")
        if tool.args_model is None:
            return tool.fn(**self.arguments)
        values = {k: getattr(self.arguments, k) for k in type(self.arguments).model_fields}
        args = [values.pop(k) for k in tool.positional]
        return tool.fn(*args, **values)


@dataclass(frozen=True)
class FinalAnswer:
    """The model's final answer (the ``final_answer`` pseudo-tool), validated as the answer type."""

    value: Any


# -- a set of tools ---------------------------------------------------------------------------


class ToolSet:
    """Tools the model may call, as one output type (see the module docstring).

    ``final_answer``: a type (``str``, a Pydantic model...) to also offer a ``final_answer``
    pseudo-tool with an ``answer`` argument of that type (``True`` means ``str``).
    ``handlers``: functions for OpenAI definitions (and Pydantic model tools), by tool name.
    """

    def __init__(
        self,
        tools: Iterable[Any],
        *,
        final_answer: Any = None,
        handlers: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        self.tools: dict[str, Tool] = {}
        for obj in tools:
            tool = Tool.coerce(obj, handlers)
            if tool.name in self.tools:
                raise ToolDefinitionError("two tools have this name", tool=tool.name)
            if tool.name == FINAL_ANSWER and tool.kind != "final_answer":
                raise ToolDefinitionError(f"{FINAL_ANSWER!r} is reserved for the final answer", tool=tool.name)
            self.tools[tool.name] = tool
        self.answer_type = str if final_answer is True else final_answer
        if self.answer_type is not None:
            self.tools[FINAL_ANSWER] = _final_answer_tool(self.answer_type)
        if not self.tools:
            raise StructgenError("a tool set needs at least one tool")

    def __repr__(self) -> str:
        return f"ToolSet({list(self.tools)})"

    def only(self, *names: str) -> ToolSet:
        """A tool set with only the named tools (``only("final_answer")`` ends an agent loop)."""
        missing = [n for n in names if n not in self.tools]
        if missing:
            raise StructgenError(f"no tools named {missing}")
        out = ToolSet.__new__(ToolSet)
        out.tools = {n: self.tools[n] for n in names}
        out.answer_type = self.answer_type if FINAL_ANSWER in names else None
        return out

    def schema(self, *, args_key: str = "arguments") -> dict[str, Any]:
        """The JSON Schema of one call, ``{"name": ..., ARGS_KEY: {...}}``: an ``anyOf`` with one
        branch per tool (``args_key="parameters"`` is Llama 3's spelling)."""
        branches = []
        defs: dict[str, Any] = {}
        for i, tool in enumerate(self.tools.values()):
            key = f"tool{i}"
            params, tool_defs = _hoist(tool.parameters, key)
            defs[key] = params
            defs.update(tool_defs)
            branches.append(
                {
                    "type": "object",
                    "properties": {"name": {"const": tool.name}, args_key: {"$ref": f"#/$defs/{key}"}},
                    "required": ["name", args_key],
                    "additionalProperties": False,
                }
            )
        return {"anyOf": branches, "$defs": defs} if len(branches) > 1 else {**branches[0], "$defs": defs}

    def output_spec(self, **schema_options: Any) -> OutputSpec:
        """The spec of one call in the generic JSON format (what :func:`structgen.generate` writes)."""
        grammar = Grammar.from_json_schema(self.schema(), **schema_options)
        return OutputSpec(grammar, self.parse, "tools", repr(self))

    def parse(self, text: str) -> ToolCall | FinalAnswer:
        """The validated call (or final answer) written in ``text``."""
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise GenerationError(f"the tool call is not JSON: {e}", partial_text=text) from e
        if not isinstance(obj, dict) or obj.get("name") not in self.tools or "arguments" not in obj:
            raise GenerationError("the output is not a call of one of the tools", partial_text=text)
        tool = self.tools[obj["name"]]
        arguments = tool.validate_arguments(obj["arguments"], text)
        if tool.kind == "final_answer":
            return FinalAnswer(arguments.answer)
        return ToolCall(tool, arguments)

    def describe(self) -> str:
        """A prompt paragraph listing the tools and the call format."""
        lines = ['Reply with one JSON object {"name": TOOL, "arguments": {...}} calling one of these tools:']
        for tool in self.tools.values():
            props = tool.parameters.get("properties", {})
            args = ", ".join(f"{k}: {_type_hint(v)}" for k, v in props.items())
            doc = f" - {tool.description}" if tool.description else ""
            lines.append(f"- {tool.name}({args}){doc}")
        return "\n".join(lines)

    def to_openai(self) -> list[dict[str, Any]]:
        return [t.to_openai() for t in self.tools.values() if t.kind != "final_answer"]


def looks_like_tools(obj: Any) -> bool:
    """Whether ``obj`` is a list or tuple of tools (functions, model classes, definitions, Tools)."""
    if not isinstance(obj, (list, tuple)) or not obj:
        return False
    return all(
        isinstance(x, (Tool, Mapping)) or _is_model_class(x) or (callable(x) and not isinstance(x, type)) for x in obj
    )


# -- helpers ----------------------------------------------------------------------------------


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ToolDefinitionError("a tool name is 1-64 letters, digits, '_', '-' or '.'", tool=str(name))


def _is_model_class(obj: Any) -> bool:
    try:
        from pydantic import BaseModel
    except ImportError:  # pragma: no cover - pydantic is a core dependency
        return False
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def _own_attributes(cls: type) -> set[str]:
    from pydantic import BaseModel

    out: set[str] = set()
    for klass in cls.__mro__:
        if klass is BaseModel or klass is object:
            break
        out.update(vars(klass))
    return out


def _arguments_model(fn: Callable[..., Any], tool: str, param_docs: Mapping[str, str]) -> tuple[Any, tuple[str, ...]]:
    from pydantic import Field, create_model

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise ToolDefinitionError(f"its signature cannot be read: {e}", tool=tool) from e
    # a callable object's annotations live on its __call__
    annotated = fn if inspect.isroutine(fn) or isinstance(fn, type) else getattr(type(fn), "__call__", fn)
    try:
        hints = typing.get_type_hints(annotated, include_extras=True)
    except Exception as e:  # unresolved forward references and the like
        raise ToolDefinitionError(f"its annotations cannot be resolved: {e}", tool=tool) from e
    fields: dict[str, Any] = {}
    positional = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            star = "*" if p.kind is p.VAR_POSITIONAL else "**"
            raise ToolDefinitionError(
                f"{star}{p.name} cannot become a schema: name every parameter", tool=tool, parameter=p.name
            )
        if p.name not in hints:
            raise ToolDefinitionError("parameter has no type annotation", tool=tool, parameter=p.name)
        if p.name.startswith("_"):
            raise ToolDefinitionError("parameter names may not start with '_'", tool=tool, parameter=p.name)
        if p.kind is p.POSITIONAL_ONLY:
            positional.append(p.name)
        default = ... if p.default is p.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=param_docs.get(p.name)))
    try:
        model = create_model(f"{tool}_arguments", **fields)
    except Exception as e:  # pydantic refuses the type
        raise ToolDefinitionError(
            f"its parameters cannot become a Pydantic model: {e}", tool=tool, parameter=_culprit(e, fields)
        ) from e
    return model, tuple(positional)


def _model_schema(model: Any, tool: str) -> dict[str, Any]:
    try:
        return model.model_json_schema()
    except Exception as e:  # PydanticSchemaGenerationError, PydanticInvalidForJsonSchema
        fields = getattr(model, "model_fields", {})
        raise ToolDefinitionError(
            f"its arguments cannot become a JSON Schema: {e}", tool=tool, parameter=_culprit(e, fields)
        ) from e


def _culprit(error: Exception, fields: Mapping[str, Any]) -> str | None:
    """The parameter an error message is about, where it names one."""
    from pydantic import TypeAdapter

    for name, spec in fields.items():
        tp = spec[0] if isinstance(spec, tuple) else getattr(spec, "annotation", None)
        try:
            TypeAdapter(tp).json_schema()
        except Exception:  # noqa: BLE001 - this is the one
            return name
    return None


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$", re.I)
_GOOGLE_PARAM = re.compile(r"^\s+(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (first paragraph) and per-parameter descriptions of a docstring."""
    lines = doc.splitlines()
    summary_lines = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER.match(line) or _REST_PARAM.match(line):
            break
        summary_lines.append(line.strip())
    params: dict[str, str] = {}
    in_args = False
    current = None
    for line in lines:
        m = _REST_PARAM.match(line)
        if m:
            params[m.group(1)] = m.group(2).strip()
            current = m.group(1)
            continue
        if _ARGS_HEADER.match(line):
            in_args, current = True, None
            continue
        if in_args:
            g = _GOOGLE_PARAM.match(line)
            if g and (not current or len(line) - len(line.lstrip()) <= _indent_of(lines, current)):
                current = g.group(1).lstrip("*")
                params[current] = g.group(3).strip()
            elif line.strip() and current and line.startswith((" ", "\t")):
                params[current] = (params[current] + " " + line.strip()).strip()
            elif line.strip() and not line.startswith((" ", "\t")):
                in_args = False
    return " ".join(summary_lines), params


def _indent_of(lines: list[str], name: str) -> int:
    for line in lines:
        if re.match(rf"^\s+\*{{0,2}}{re.escape(name)}\s*(\(|:)", line):
            return len(line) - len(line.lstrip())
    return 0


def _final_answer_tool(answer_type: Any) -> Tool:
    from pydantic import Field, create_model

    model = create_model(
        "final_answer_arguments", answer=(answer_type, Field(description="the final answer to the user"))
    )
    schema = _model_schema(model, FINAL_ANSWER)
    return Tool(FINAL_ANSWER, "Give the final answer.", schema, None, model, "final_answer")


def _hoist(schema: dict[str, Any], key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``schema`` with its ``$defs`` / ``definitions`` moved out under ``KEY.NAME``, and local
    references rewritten to match (the schema itself becomes ``#/$defs/KEY``)."""
    body = {k: v for k, v in schema.items() if k not in ("$defs", "definitions", "$schema")}
    defs: dict[str, Any] = {}
    for bucket in ("definitions", "$defs"):
        for name, sub in (schema.get(bucket) or {}).items():
            defs[f"{key}.{name}"] = sub

    def rewrite(ref: str) -> str:
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix):
                return f"#/$defs/{key}." + ref[len(prefix) :]
        if ref == "#":
            return f"#/$defs/{key}"
        if ref.startswith("#/"):
            return f"#/$defs/{key}" + ref[1:]
        return ref

    out_body = _map_refs(body, rewrite)
    out_defs = {k: _map_refs(v, rewrite) for k, v in defs.items()}
    return out_body, out_defs


def _map_refs(node: Any, rewrite: Callable[[str], str]) -> Any:
    """A deep copy of ``node`` with every ``$ref`` string passed through ``rewrite`` (iterative)."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(node, root, 0)]
    while stack:
        src, parent, slot = stack.pop()
        if isinstance(src, dict):
            dst: Any = {}
            for k, v in src.items():
                if k == "$ref" and isinstance(v, str):
                    dst[k] = rewrite(v)
                else:
                    dst[k] = None
                    stack.append((v, dst, k))
        elif isinstance(src, list):
            dst = [None] * len(src)
            stack.extend((v, dst, i) for i, v in enumerate(src))
        else:
            dst = src
        parent[slot] = dst
    return root[0]


def _type_hint(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    t = schema.get("type")
    if t == "array":
        return f"list[{_type_hint(schema.get('items'))}]"
    if isinstance(t, str):
        return t
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return "|".join(_type_hint(s) for s in schema["anyOf"])
    return "any"
