"""Tool-call formats per model family: how a model writes its calls, as a small registry.

Each family was trained to write calls its own way, and writes its best calls in that format:

* ``hermes`` - Hermes-style, Qwen 2.5 / 3 and ChatML fine-tunes: one block per call,
  ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``, blocks separated by a
  newline. The default for templates that know no tools (SmolLM2's ChatML, no template at all).
* ``llama3`` - Llama 3.1 - 3.3 JSON: one object ``{"name": ..., "parameters": {...}}`` at the
  start of the answer, after ``<|python_tag|>`` where the vocabulary has that token (optional).
  One call per turn, as Meta's format defines it.
* ``mistral`` - Mistral (v3+ tokenizers): ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]``,
  all calls of a turn in one JSON array.
* ``smollm2`` - SmolLM2-Instruct's trained form: all calls of a turn as one JSON array inside one
  block, ``<tool_call>[{"name": ..., "arguments": {...}}, ...]</tool_call>``, after a system block
  that lists the tools between ``<tools>`` and ``</tools>``; an empty list means no call. Its
  ChatML template renders no tools, so it is picked by the model's name (GGUF ``general.basename``).
* ``generic`` - structgen's own: a bare ``{"name": ..., "arguments": {...}}``, one call.

A :class:`CallFormat` says where calls start (its trigger), how they are separated and closed,
what the default system block tells a model whose template renders no tools, and how an
assistant turn's calls and a tool's result are written back into such a template. Markers
(``<tool_call>``, ``[TOOL_CALLS]``, ``<|python_tag|>``, ``<think>``) that are special tokens of
the vocabulary become token atoms of the grammar (:mod:`structgen.chat.grammar`); elsewhere they
are text. :func:`detect_format` picks a format from a chat template's source; :func:`call_format`
finds one by name; :func:`register_call_format` adds one.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..errors import StructgenError


@dataclass(frozen=True)
class CallFormat:
    """How one family writes tool calls (see the module docstring).

    ``style`` is ``"blocks"`` (each call between ``open`` and ``close``, separated by
    ``separator``), ``"list"`` (``open``, one JSON array of calls, then ``close`` if set) or
    ``"bare"`` (one call object, after an optional ``prefix`` marker). ``args_key`` names the
    arguments' key. ``think_open`` / ``think_close`` are the family's thinking markers.
    ``template_markers``: texts whose presence in a chat template's source identifies the family;
    ``model_names``: lower-case prefixes of model names (a GGUF's ``general.basename``) that do.
    ``system_prompt``: the family's own system block for templates without tools, with ``{tools}``
    where the definitions go (one JSON line each); empty for structgen's default block.
    """

    name: str
    style: str
    args_key: str = "arguments"
    open: str = ""
    close: str = ""
    separator: str = "\n"
    inner_newlines: bool = True
    prefix: str = ""
    think_open: str = "<think>"
    think_close: str = "</think>"
    template_markers: tuple[str, ...] = ()
    model_names: tuple[str, ...] = ()
    system_prompt: str = ""

    def __post_init__(self) -> None:
        if self.style not in ("blocks", "list", "bare"):
            raise StructgenError(f"call format {self.name!r}: style must be 'blocks', 'list' or 'bare'")
        if self.style in ("blocks", "list") and not self.open:
            raise StructgenError(f"call format {self.name!r}: a {self.style} format needs an 'open' marker")
        if self.style == "blocks" and not self.close:
            raise StructgenError(f"call format {self.name!r}: a blocks format needs a 'close' marker")

    @property
    def parallel(self) -> bool:
        """Whether one turn may hold several calls in this format."""
        return self.style != "bare"

    # -- for templates that render no tools ------------------------------------------------

    def instructions(self, tools: Sequence[Mapping[str, Any]], tool_choice: str) -> str:
        """The default system block: the tools (OpenAI definitions, one JSON line each) and how to
        call them in this format (the family's own block where it has one)."""
        if self.system_prompt:
            listed = "\n".join(json.dumps(t.get("function", t), ensure_ascii=False) for t in tools)
            text = self.system_prompt.replace("{tools}", listed)
            if tool_choice == "required":
                text += "\nCall at least one function."
            elif tool_choice == "none":
                text += "\nDo not call a function now: answer in plain text."
            return text
        lines = [
            "You can call the following tools. Each is a JSON object with its name, what it does and the "
            "JSON Schema of its arguments:"
        ]
        lines.extend(json.dumps(t.get("function", t), ensure_ascii=False) for t in tools)
        example = self.render_calls([{"name": "TOOL_NAME", "arguments": {"ARGUMENT": "VALUE"}}])
        lines.append(f"To call a tool, write exactly:\n{example}")
        if tools:
            lines.append(f"For example:\n{self.render_calls([_example_call(tools[0])])}")
        if self.parallel:
            lines.append("Write one such call for each tool call you need.")
        if tool_choice == "required":
            lines.append("You must call at least one tool.")
        elif tool_choice == "none":
            lines.append("Do not call a tool now: answer in plain text.")
        else:
            lines.append("If no tool is needed, answer in plain text instead.")
        return "\n".join(lines)

    def render_calls(self, calls: Sequence[Mapping[str, Any]]) -> str:
        """An assistant turn's calls (``{"name", "arguments"}``) as this format writes them."""
        objs = [{"name": c["name"], self.args_key: c.get("arguments", {})} for c in calls]
        texts = [json.dumps(o, ensure_ascii=False) for o in objs]
        if self.style == "blocks":
            nl = "\n" if self.inner_newlines else ""
            return self.separator.join(f"{self.open}{nl}{t}{nl}{self.close}" for t in texts)
        if self.style == "list":
            return self.open + "[" + ", ".join(texts) + "]" + self.close
        return self.prefix + texts[0] if texts else ""

    def render_result(self, content: str) -> str:
        """A tool's result as the user turn that carries it back to a template without tools."""
        return f"<tool_response>\n{content}\n</tool_response>"


def _example_call(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A call of ``tool`` with placeholder values for its required arguments (a small model copies
    an example of a real tool far more reliably than a schema). Reads the schema defensively: it
    is shown to the model before (and whether or not) anything else checks it."""
    spec = tool.get("function", tool)
    params = spec.get("parameters") if isinstance(spec, Mapping) else None
    params = params if isinstance(params, Mapping) else {}
    props = params.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = params.get("required")
    names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else list(props)[:1]
    args: dict[str, Any] = {}
    for name in names:
        sub = props.get(name)
        sub = sub if isinstance(sub, Mapping) else {}
        if isinstance(sub.get("enum"), list) and sub["enum"]:
            args[name] = sub["enum"][0]
        else:
            kind = sub.get("type") if isinstance(sub.get("type"), str) else None
            title = sub.get("title") if isinstance(sub.get("title"), str) else name
            args[name] = {"integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}.get(kind, title)
    name = spec.get("name") if isinstance(spec, Mapping) else None
    return {"name": name if isinstance(name, str) else "TOOL_NAME", "arguments": args}


HERMES = CallFormat("hermes", "blocks", open="<tool_call>", close="</tool_call>", template_markers=("<tool_call>",))
LLAMA3 = CallFormat(
    "llama3", "bare", args_key="parameters", prefix="<|python_tag|>", template_markers=("<|python_tag|>", "<|eom_id|>")
)
MISTRAL = CallFormat("mistral", "list", open="[TOOL_CALLS]", template_markers=("[TOOL_CALLS]", "[AVAILABLE_TOOLS]"))
SMOLLM2 = CallFormat(
    "smollm2",
    "list",
    open="<tool_call>",
    close="</tool_call>",
    model_names=("smollm2",),
    system_prompt=(
        "You compose function calls. Given a question and the functions below, make one or more "
        "function calls that answer it.\n"
        "The functions you can call:\n<tools>{tools}</tools>\n"
        "Write the calls exactly in this form, with nothing else around them:\n"
        '<tool_call>[{"name": "function_name", "arguments": {"argument": "value"}}]</tool_call>\n'
        "If no function fits the question, answer in plain text instead."
    ),
)
GENERIC = CallFormat("generic", "bare")

_REGISTRY: dict[str, CallFormat] = {f.name: f for f in (HERMES, LLAMA3, MISTRAL, SMOLLM2, GENERIC)}
_REGISTRY_LOCK = threading.Lock()
#: What a template that names no known family gets.
DEFAULT_FORMAT = HERMES


def register_call_format(fmt: CallFormat) -> None:
    """Add (or replace) a format in the registry, findable by name and by its template markers."""
    if not isinstance(fmt, CallFormat):
        raise StructgenError("register_call_format takes a CallFormat")
    with _REGISTRY_LOCK:
        _REGISTRY[fmt.name] = fmt


def call_format(name: str | CallFormat) -> CallFormat:
    """The registered format called ``name`` (a :class:`CallFormat` is returned as is)."""
    if isinstance(name, CallFormat):
        return name
    with _REGISTRY_LOCK:
        fmt = _REGISTRY.get(name) if isinstance(name, str) else None
        known = sorted(_REGISTRY)
    if fmt is None:
        raise StructgenError(f"unknown call format {name!r}; known: {', '.join(known)}")
    return fmt


def detect_format(template_source: str | None, model_name: str | None = None) -> CallFormat:
    """The format a chat template's source names (by its markers), else the one the model's name
    names, else :data:`DEFAULT_FORMAT`."""
    with _REGISTRY_LOCK:
        formats = list(_REGISTRY.values())
    if template_source:
        for fmt in formats:
            if any(marker in template_source for marker in fmt.template_markers):
                return fmt
    if model_name:
        name = model_name.lower()
        for fmt in formats:
            if any(name.startswith(prefix) for prefix in fmt.model_names):
                return fmt
    return DEFAULT_FORMAT
