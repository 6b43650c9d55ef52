"""``chat()``: a model's turn in a conversation, with tools in its own format, text or calls, thinking.

:func:`prepare_chat` does everything that can fail before the model runs: it checks the messages,
tools, ``tool_choice``, ``response_format`` and ``thinking``; renders the prompt through the
model's chat template (tools included where the template renders them, else the call format's
default system block); builds the grammars (:mod:`structgen.chat.grammar`) and compiles them; and
checks that the shortest valid answer fits ``max_tokens``. The :class:`ChatRequest` it returns
shows the exact prompt text, and runs the turn (:meth:`ChatRequest.run`) or streams it
(:meth:`ChatRequest.stream`) through the same loop as :func:`structgen.generate`.
:func:`chat` and :func:`achat` are the one-call forms.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence

from ..decoding import Segment
from ..errors import GenerationError, StructgenError
from ..generate import DEFAULT_MAX_TOKENS, Generation, GenerationResult, iterate_in_thread, split_options
from ..integrations.protocol import Runtime, as_runtime
from ..output_spec import OutputSpec
from ..output_types import resolve_output
from ..partials import PartialCall, PartialReader
from ..prompts import check_messages, compiled_template, plain_transcript
from ..tools import Tool, ToolCall, ToolSet
from .calls import AnswerScanner, RawCall, call_start, split_answer
from .formats import CallFormat, call_format, detect_format
from .grammar import answer_grammar, thinking_grammar
from .result import ChatDelta, ChatResult

_TOOL_CHOICES = ("auto", "none", "required")
_JSON_SCHEMA_TYPES = frozenset(("object", "array", "string", "number", "integer", "boolean", "null"))


@dataclass(frozen=True)
class ChatTuning:
    """Defaults of :func:`chat` that are choices rather than OpenAI's meanings."""

    #: tokens of thinking for ``thinking=True``: enough for a short plan on the small models the
    #: tests run (16-64 tokens is what they use), small enough not to dominate a 512-token turn
    default_thinking_budget: int = 256


DEFAULT_CHAT_TUNING = ChatTuning()


@dataclass(frozen=True)
class _Answer:
    """What the answer segment's text says (the value :class:`Generation` parses)."""

    content: str | None
    calls: list[ToolCall]
    parsed: Any


@dataclass(frozen=True)
class ChatPartial:
    """A typed partial value of a streamed turn: a call's arguments (``tool_call_index`` and
    ``name`` set) or the ``response_format`` object (both None)."""

    tool_call_index: int | None
    name: str | None
    value: Any


class ChatRequest:
    """A prepared turn: the prompt (:attr:`prompt_text`, :attr:`prompt_ids`), and the compiled
    constraints. :meth:`run` or :meth:`stream` it once."""

    def __init__(
        self,
        runtime: Runtime,
        prompt_text: str,
        prompt_ids: list[int],
        generation: Generation,
        fmt: CallFormat,
        calls_possible: bool,
        thinking: bool,
    ) -> None:
        self.runtime = runtime
        self.prompt_text = prompt_text
        self.prompt_ids = prompt_ids
        self.call_format = fmt
        self._generation = generation
        self._calls_possible = calls_possible
        self._thinking = thinking
        #: the tools the turn may call, and the response_format's output type (for partials)
        self.tools: ToolSet | None = None
        self.answer_type: Any = None

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt_ids)

    def run(self) -> ChatResult:
        """Generate the turn and return it validated."""
        steps = self._generation.steps()
        while True:
            try:
                next(steps)
            except StopIteration as stop:
                return self._result(stop.value)

    def stream(self) -> ChatStream:
        """The turn as a :class:`ChatStream` of :class:`ChatDelta` pieces."""
        return ChatStream(self)

    def _result(self, result: GenerationResult) -> ChatResult:
        answer: _Answer = result.value
        reasoning = None
        reasoning_tokens = 0
        if self._thinking:
            parts = dict(result.segments)
            if "reasoning" in parts:
                reasoning = strip_markers(parts["reasoning"], self.call_format) or None
                reasoning_tokens = len(self._generation.decoding.segment_tokens()[0])
        if answer.calls:
            finish = "tool_calls"
        else:
            finish = "length" if result.finish_reason == "length" else "stop"
        n = len(result.token_ids)
        usage = {"prompt_tokens": self.prompt_tokens, "completion_tokens": n, "total_tokens": self.prompt_tokens + n}
        return ChatResult(
            answer.content, answer.calls, answer.parsed, reasoning, finish, usage, reasoning_tokens, result.stats
        )


class ChatStream:
    """A turn as it is generated: iterate for :class:`ChatDelta` pieces; :attr:`result` holds the
    :class:`ChatResult` once the iteration ends; :meth:`close` stops generating."""

    def __init__(self, request: ChatRequest) -> None:
        self._request = request
        self._deltas = self._run()
        self._result: ChatResult | None = None

    def __iter__(self) -> Iterator[ChatDelta]:
        return self._deltas

    def __next__(self) -> ChatDelta:
        return next(self._deltas)

    def close(self) -> None:
        self._deltas.close()

    def partials(self, *, grow_strings: bool = False) -> Iterator[ChatPartial]:
        """Typed partial values as the turn grows (:mod:`structgen.partials`): each call's
        arguments (typed like the tool's arguments) and the ``response_format`` object, a value
        appearing once the parse state shows it complete; then the validated values. Consumes
        the stream."""
        req = self._request
        readers: dict[int, PartialReader] = {}
        names: dict[int, str] = {}
        answer = PartialReader(req.answer_type, grow_strings=grow_strings) if req.answer_type is not None else None
        for d in self:
            if d.tool_call_index is not None and req.tools is not None:
                i = d.tool_call_index
                if d.tool_call_name is not None:
                    names[i] = d.tool_call_name
                    readers[i] = PartialReader(req.tools.tools[d.tool_call_name], grow_strings=grow_strings)
                for value in readers[i].feed(d.arguments or ""):
                    yield ChatPartial(i, names[i], value.arguments if isinstance(value, PartialCall) else value)
            elif d.content is not None and answer is not None:
                for value in answer.feed(d.content):
                    yield ChatPartial(None, None, value)
        result = self.result
        for i, call in enumerate(result.tool_calls):
            yield ChatPartial(i, call.name, call.arguments)
        if result.parsed is not None:
            yield ChatPartial(None, None, result.parsed)

    @property
    def result(self) -> ChatResult:
        if self._result is None:
            raise StructgenError("the stream has not finished; iterate it to the end")
        return self._result

    def _run(self) -> Generator[ChatDelta, None, None]:
        req = self._request
        fmt = req.call_format
        scanner = AnswerScanner(fmt, calls_possible=req._calls_possible)
        steps = req._generation.steps()
        texts = {"reasoning": "", "answer": ""}
        shown = {"reasoning": 0, "answer": 0}
        calls_shown: list[tuple[bool, int]] = []  # per call: name shown, argument characters shown
        try:
            while True:
                try:
                    label, chunk = next(steps)
                except StopIteration as stop:
                    gen_result = stop.value
                    break
                texts[label] += chunk
                if label == "reasoning":
                    yield from self._reasoning(texts, shown, final=False)
                else:
                    yield from self._answer(scanner, texts["answer"], shown, calls_shown, final=False)
        finally:
            steps.close()
        yield from self._reasoning(texts, shown, final=True)
        self._result = req._result(gen_result)
        yield from self._answer(scanner, gen_result.text, shown, calls_shown, final=True)

    def _reasoning(self, texts: dict[str, str], shown: dict[str, int], *, final: bool) -> Iterator[ChatDelta]:
        fmt = self._request.call_format
        text = texts["reasoning"]
        if not text:
            return
        finished = final or bool(texts["answer"])
        visible = strip_markers(text, fmt, final=finished)
        if len(visible) > shown["reasoning"]:
            yield ChatDelta(reasoning=visible[shown["reasoning"] :])
            shown["reasoning"] = len(visible)

    def _answer(
        self,
        scanner: AnswerScanner,
        text: str,
        shown: dict[str, int],
        calls_shown: list[tuple[bool, int]],
        *,
        final: bool,
    ) -> Iterator[ChatDelta]:
        content, calls = scanner.read(text, final=final)
        if calls and final:
            content = content.rstrip()
        if len(content) > shown["answer"]:
            yield ChatDelta(content=content[shown["answer"] :])
            shown["answer"] = len(content)
        for i, call in enumerate(calls):
            yield from self._call_delta(i, call, calls_shown)

    def _call_delta(self, i: int, call: RawCall, calls_shown: list[tuple[bool, int]]) -> Iterator[ChatDelta]:
        while len(calls_shown) <= i:
            calls_shown.append((False, 0))
        named, done = calls_shown[i]
        if call.name is None:
            return
        if not named:
            yield ChatDelta(
                tool_call_index=i,
                tool_call_id=call_id(self._request.prompt_ids, i),
                tool_call_name=call.name,
                arguments=call.arguments,
            )
            calls_shown[i] = (True, len(call.arguments))
            return
        if len(call.arguments) > done:
            yield ChatDelta(tool_call_index=i, arguments=call.arguments[done:])
            calls_shown[i] = (True, len(call.arguments))


def prepare_chat(
    model: Any,
    messages: Any,
    *,
    tools: Any = None,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    response_format: Any = None,
    thinking: Any = None,
    call_format: str | CallFormat | None = None,
    schema_options: Mapping[str, Any] | None = None,
    template_options: Mapping[str, Any] | None = None,
    tuning: ChatTuning = DEFAULT_CHAT_TUNING,
    **options: Any,
) -> ChatRequest:
    """Check, render and compile a turn (see :func:`chat` for the arguments) without running it.

    Every bad input raises a :class:`~structgen.errors.StructgenError` here, before any model
    call: malformed messages, a tool whose schema cannot be enforced (a
    :class:`~structgen.errors.SchemaError` naming the keyword and its pointer), a ``tool_choice``
    naming an unknown tool, an unknown ``response_format`` type, a template that fails to render,
    and a ``max_tokens`` that the shortest valid answer cannot fit (a
    :class:`~structgen.errors.GenerationError`).
    """
    options.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    if options.get("on_max_tokens", "close") != "close":
        raise StructgenError("chat() always closes its answer within max_tokens (on_max_tokens='close')")
    opts, schema_kwargs = split_options(options)
    if not isinstance(parallel_tool_calls, bool):
        raise StructgenError(f"parallel_tool_calls must be True or False, not {parallel_tool_calls!r}")
    msgs = check_messages(messages)
    toolset = _toolset(tools)
    mode, toolset = _tool_choice(tool_choice, toolset)
    translator = dict(schema_options or {})
    translator.update(schema_kwargs)
    answer = _response_format(response_format, translator)
    answer_spec, answer_type = answer if answer is not None else (None, None)
    think_budget = _thinking(thinking, tuning)
    runtime = as_runtime(model)
    vocab = runtime.vocab
    fmt = call_format_for(runtime, call_format)
    template_vars = dict(template_options or {})
    if think_budget is not None:
        template_vars.setdefault("enable_thinking", True)
    calls_possible = toolset is not None and mode != "none"
    # the answer's grammar first: a tool schema that cannot be enforced is refused before the
    # prompt is rendered from it
    grammar = answer_grammar(
        fmt,
        vocab,
        tools=toolset,
        tool_choice=mode,
        parallel=parallel_tool_calls,
        answer=answer_spec.grammar if answer_spec is not None else None,
        schema_options=translator,
    )
    prompt_text, templated = render_prompt(runtime, msgs, toolset, fmt, mode, template_vars)
    segments = []
    if think_budget is not None:
        opened = prompt_text.rstrip().endswith(fmt.think_open)
        segments.append(Segment(thinking_grammar(fmt, vocab, opened=opened), think_budget, "reasoning"))
    segments.append(Segment(grammar, opts.max_tokens, "answer"))
    encode_rendered = getattr(runtime, "encode_rendered", None)
    if templated and encode_rendered is not None:
        prompt_ids = list(encode_rendered(prompt_text))
    else:
        prompt_ids = list(runtime.encode_prompt(prompt_text))
    parse = _answer_parser(fmt, toolset, answer_spec, calls_possible, prompt_ids)
    generation = Generation(runtime, prompt_ids, segments, parse, opts, special_text=True)
    request = ChatRequest(runtime, prompt_text, prompt_ids, generation, fmt, calls_possible, think_budget is not None)
    request.tools = toolset
    request.answer_type = answer_type
    return request


def chat(model: Any, messages: Any, **options: Any) -> ChatResult:
    """A model's turn in ``messages``: text, or validated tool calls, in the model's own format.

    Arguments mean what OpenAI's Chat Completions parameters mean:

    * ``messages``: OpenAI-style dicts (system, user, assistant with ``tool_calls``, ``tool``
      results);
    * ``tools``: functions, Pydantic models, OpenAI definitions, or a :class:`~structgen.ToolSet`;
    * ``tool_choice``: ``"auto"`` (text, or one or more calls), ``"required"`` (at least one
      call), ``"none"`` (text only), or ``{"type": "function", "function": {"name": ...}}``;
    * ``parallel_tool_calls=False``: at most one call;
    * ``response_format``: a Pydantic model, a type, a JSON Schema, or OpenAI's
      ``{"type": "json_schema", "json_schema": {...}}`` / ``{"type": "json_object"}``: the text
      answer is then that structure, validated into ``ChatResult.parsed``;
    * ``thinking``: ``{"budget": N}`` or ``True`` (:class:`ChatTuning`'s default budget): the model
      may think between the family's markers (``<think>...</think>``) for at most N tokens, closed
      by force at N, then answers within ``max_tokens``;
    * ``max_tokens`` (the answer's tokens), ``temperature``, ``top_p``, ``top_k``, ``seed``,
      ``stop``, ``repetition_penalty`` as in :func:`structgen.generate`.

    structgen's own: ``call_format`` (a registered format's name, else picked from the template),
    ``template_options`` (extra variables for the chat template), and the JSON Schema translator's
    options (``schema_options=``, or as keywords).
    """
    return prepare_chat(model, messages, **options).run()


def chat_stream(model: Any, messages: Any, **options: Any) -> ChatStream:
    """As :func:`chat`, as a :class:`ChatStream` of :class:`ChatDelta` pieces."""
    return prepare_chat(model, messages, **options).stream()


async def achat(model: Any, messages: Any, **options: Any) -> ChatResult:
    """As :func:`chat`, awaited: the turn runs on a worker thread, off the event loop. Concurrent
    calls on one model are served one at a time (the runtime's lock)."""
    return await asyncio.to_thread(chat, model, messages, **options)


async def achat_stream(model: Any, messages: Any, **options: Any) -> AsyncIterator[ChatDelta]:
    """As :func:`chat_stream`, as an async iterator (the generation runs on a worker thread)."""
    request = await asyncio.to_thread(prepare_chat, model, messages, **options)
    async for delta in iterate_in_thread(iter(request.stream())):
        yield delta


# -- the parts -------------------------------------------------------------------------------


def call_format_for(runtime: Any, name: str | CallFormat | None) -> CallFormat:
    """The call format asked for by name, else the one the runtime's chat template names."""
    if name is not None:
        return call_format(name)
    return detect_format(getattr(runtime, "chat_template", None), getattr(runtime, "model_name", None))


def render_prompt(
    runtime: Any,
    messages: list[dict[str, Any]],
    toolset: ToolSet | None,
    fmt: CallFormat,
    mode: str,
    template_vars: Mapping[str, Any],
) -> tuple[str, bool]:
    """The prompt text, and whether the model's template wrote it (so it holds special tokens).

    A template that renders tools gets them as OpenAI definitions (``tools=``) and the messages as
    they are; any other gets the call format's default system block, and earlier calls and tool
    results written as text in the format. A model without a template gets the plain transcript.
    """
    source = getattr(runtime, "chat_template", None)
    template = compiled_template(source, **(getattr(runtime, "template_tokens", None) or {})) if source else None
    definitions = toolset.to_openai() if toolset is not None else []
    if template is not None and template.supports_tools:
        return template.render(messages, tools=definitions or None, **template_vars), True
    flat = _flatten_for(fmt, messages)
    if definitions:
        block = fmt.instructions(definitions, mode)
        if flat and flat[0]["role"] == "system":
            flat[0] = {**flat[0], "content": f"{flat[0]['content'] or ''}\n\n{block}".strip()}
        else:
            flat.insert(0, {"role": "system", "content": block})
    if template is None:
        return plain_transcript(flat), False
    return template.render(flat, **template_vars), True


def _flatten_for(fmt: CallFormat, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages for a template that knows no tools: calls as the format's text, results as user turns."""
    out = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = [c["function"] for c in m["tool_calls"]]
            text = "\n".join(t for t in (m.get("content") or "", fmt.render_calls(calls)) if t)
            out.append({"role": "assistant", "content": text})
        elif m["role"] == "tool":
            out.append({"role": "user", "content": fmt.render_result(m.get("content") or "")})
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    return out


def strip_markers(text: str, fmt: CallFormat, *, final: bool = True) -> str:
    """Thinking text without its markers; while it grows (``final=False``), less any tail that
    could be the start of the closing marker."""
    body = text.lstrip()
    if body.startswith(fmt.think_open):
        body = body[len(fmt.think_open) :]
    elif fmt.think_open.startswith(body):
        return ""
    close = fmt.think_close
    if body.endswith(close):
        return body[: -len(close)].strip()
    if final:
        return body.strip()
    for k in range(min(len(close) - 1, len(body)), 0, -1):
        if close.startswith(body[-k:]):
            body = body[:-k]
            break
    return body.lstrip()


def call_id(prompt_ids: Sequence[int], index: int) -> str:
    """A call's id: the same for the same request and position, different across requests."""
    key = ",".join(str(int(t)) for t in prompt_ids) + f":{index}"
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"call_{digest[:24]}"


def _toolset(tools: Any) -> ToolSet | None:
    if tools is None:
        return None
    if isinstance(tools, ToolSet):
        return tools
    if isinstance(tools, (list, tuple)):
        return ToolSet(tools) if tools else None
    if isinstance(tools, (Tool, Mapping)) or callable(tools):
        return ToolSet([tools])
    raise StructgenError(f"tools must be a list of tools or a ToolSet, not {type(tools).__name__}")


def _tool_choice(choice: Any, toolset: ToolSet | None) -> tuple[str, ToolSet | None]:
    """The mode (``none``, ``auto``, ``required``, ``named``) and the tools it may call."""
    if isinstance(choice, str):
        if choice not in _TOOL_CHOICES:
            raise StructgenError(f"tool_choice must be 'auto', 'none', 'required' or a named tool, not {choice!r}")
        if choice == "required" and toolset is None:
            raise StructgenError("tool_choice='required' needs tools")
        return choice, toolset
    if isinstance(choice, Mapping):
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if choice.get("type") != "function" or not isinstance(name, str):
            raise StructgenError("a named tool_choice is {'type': 'function', 'function': {'name': ...}}")
        if toolset is None or name not in toolset.tools:
            known = sorted(toolset.tools) if toolset is not None else []
            raise StructgenError(f"tool_choice names {name!r}, which is not one of the tools {known}")
        return "named", toolset.only(name)
    raise StructgenError(f"tool_choice must be a string or a named tool, not {type(choice).__name__}")


def _response_format(fmt: Any, options: Mapping[str, Any]) -> tuple[OutputSpec, Any] | None:
    """The answer's spec and the output type it came from (a JSON Schema for OpenAI's shapes)."""
    if fmt is None:
        return None
    if isinstance(fmt, Mapping) and isinstance(fmt.get("type"), str) and fmt["type"] not in _JSON_SCHEMA_TYPES:
        kind = fmt["type"]
        if kind == "text":
            return None
        if kind == "json_object":
            return resolve_output({"type": "object"}, options), {"type": "object"}
        if kind == "json_schema":
            spec = fmt.get("json_schema")
            schema = spec.get("schema") if isinstance(spec, Mapping) else None
            if not isinstance(schema, Mapping):
                raise StructgenError("response_format json_schema needs 'json_schema': {'schema': {...}}")
            return resolve_output(dict(schema), options), dict(schema)
        raise StructgenError(
            f"unknown response_format type {kind!r}: use 'text', 'json_object', 'json_schema', "
            "a JSON Schema, a Pydantic model or a type"
        )
    return resolve_output(fmt, options), fmt


def _thinking(thinking: Any, tuning: ChatTuning) -> int | None:
    if thinking is None or thinking is False:
        return None
    if thinking is True:
        return tuning.default_thinking_budget
    if isinstance(thinking, Mapping):
        unknown = set(thinking) - {"budget"}
        if unknown:
            raise StructgenError(f"thinking takes {{'budget': N}}; unknown keys {sorted(unknown)}")
        budget = thinking.get("budget", tuning.default_thinking_budget)
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 2:
            raise StructgenError(f"the thinking budget must be an integer >= 2 (tokens), not {budget!r}")
        return budget
    raise StructgenError(f"thinking must be None, a bool or {{'budget': N}}, not {thinking!r}")


def _answer_parser(
    fmt: CallFormat,
    toolset: ToolSet | None,
    answer_spec: OutputSpec | None,
    calls_possible: bool,
    prompt_ids: Sequence[int],
) -> Callable[[str], _Answer]:
    def parse(text: str) -> _Answer:
        content, raw = split_answer(fmt, text, calls_possible=calls_possible)
        if raw:
            assert toolset is not None
            calls = []
            for i, (name, args) in enumerate(raw):
                tool = toolset.tools.get(name)
                if tool is None:
                    raise GenerationError(f"the model called {name!r}, which is not a tool here", partial_text=text)
                calls.append(ToolCall(tool, tool.validate_arguments(args, text), call_id(prompt_ids, i)))
            return _Answer(content.strip() or None, calls, None)
        if calls_possible and call_start(fmt, text) is not None:
            return _Answer(content.strip() or None, [], None)  # an empty list of calls: no call
        parsed = answer_spec.parse(text) if answer_spec is not None else None
        return _Answer(text if text else None, [], parsed)

    return parse
