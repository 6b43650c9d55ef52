"""A Chat Completions request body, checked field by field, as the arguments of ``prepare_chat``.

Every field OpenAI defines is either used, accepted because it cannot change the output (``user``,
``metadata``...), accepted at its neutral value only (``frequency_penalty: 0``, ``logprobs:
false``), or refused with a 400 naming it: a server that ignores a field which changes the output
answers something the caller did not ask for. Unknown fields are refused too. structgen's own
options travel in the ``structgen`` field (``extra_body={"structgen": {...}}`` in the OpenAI
client); options that would let output fall outside the schema (``lenient``, ``formats:
"ignore"``, ``one_of: "any_of"``) are not among them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from .config import ServerConfig
from .errors import ApiError, invalid

#: Fields that cannot change what the model writes: accepted and not used.
_INERT_FIELDS = frozenset(
    {"user", "metadata", "store", "service_tier", "prompt_cache_key", "safety_identifier", "prompt_cache_retention"}
)

#: Fields accepted only at the value that leaves the output as it is (None is always accepted).
_NEUTRAL_VALUES: dict[str, tuple[Any, ...]] = {
    "frequency_penalty": (0, 0.0),
    "presence_penalty": (0, 0.0),
    "logprobs": (False,),
    "top_logprobs": (0,),
    "logit_bias": ({},),
    "modalities": (["text"],),
    "reasoning_effort": (),
    "verbosity": (),
    "prediction": (),
    "audio": (),
    "web_search_options": (),
    "functions": (),
    "function_call": (),
}

_USED_FIELDS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "seed",
        "stop",
        "n",
        "stream",
        "stream_options",
        "structgen",
    }
)

_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})

#: structgen's options (the ``structgen`` field) that pass on as schema options.
_SCHEMA_OPTIONS = {
    "whitespace": ("flexible", "compact", "pretty"),
    "property_order": ("schema", "required_first", "any"),
}
#: Options refused by name, with the reason: each would let a 200 carry output outside the schema.
_FAIL_OPEN_OPTIONS = {
    "lenient": "it drops keywords that cannot be enforced",
    "formats": "'ignore' would leave 'format' unenforced",
    "one_of": "'any_of' would accept values that match several branches of a oneOf",
    "unbounded_whitespace_ok": "it lets a model loop on whitespace until max_tokens",
}


@dataclass(frozen=True)
class ChatCall:
    """A checked request: the keyword arguments of ``prepare_chat`` and how to answer."""

    prepare_kwargs: dict[str, Any]
    stream: bool
    include_usage: bool
    #: The request field a SchemaError is about when it cannot be told otherwise ("tools" or
    #: "response_format"; None when the request has both or neither).
    schema_param: str | None


def parse_body(body: bytes) -> dict[str, Any]:
    """The JSON object of a request body, or a 400 saying why it is not one."""
    try:
        text = body.decode("utf-8")  # JSON between systems is UTF-8 (RFC 8259); no guessing
    except UnicodeDecodeError:
        raise invalid("the request body is not UTF-8") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise invalid(f"the request body is not JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise invalid("the request body nests too deeply") from None
    if not isinstance(data, dict):
        raise invalid(f"the request body must be a JSON object, not {_kind(data)}")
    return data


def check_chat_request(data: Mapping[str, Any], config: ServerConfig) -> ChatCall:
    """The :class:`ChatCall` for a parsed body; an :class:`ApiError` (400 or 404) for anything
    that is malformed, unknown, or would change the output in a way structgen does not honour."""
    for name in data:
        if name in _USED_FIELDS or name in _INERT_FIELDS:
            continue
        if name in _NEUTRAL_VALUES:
            value = data[name]
            if value is not None and not _is_neutral(value, _NEUTRAL_VALUES[name]):
                raise invalid(f"{name!r} is not supported by this server (it would change the output)", param=name)
            continue
        raise invalid(f"unknown field {name!r}", param=name, code="unknown_parameter")

    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise invalid("'model' must be a string", param="model")
    if model is not None and model != config.model_name:
        raise ApiError(
            404,
            f"the model {model!r} does not exist; this server serves {config.model_name!r}",
            param="model",
            code="model_not_found",
        )

    kwargs: dict[str, Any] = {"messages": _messages(data.get("messages"), config)}

    tools = data.get("tools")
    if tools is not None:
        kwargs["tools"] = _tools(tools, config)
    tool_choice = data.get("tool_choice")
    if tool_choice is not None:
        kwargs["tool_choice"] = _tool_choice(tool_choice, has_tools=bool(tools))
    parallel = data.get("parallel_tool_calls")
    if parallel is not None:
        if not isinstance(parallel, bool):
            raise invalid("'parallel_tool_calls' must be a boolean", param="parallel_tool_calls")
        kwargs["parallel_tool_calls"] = parallel

    response_format = _response_format(data.get("response_format"), config)
    if response_format is not None:
        kwargs["response_format"] = response_format

    kwargs["max_tokens"] = _max_tokens(data, config)
    temperature = data.get("temperature")
    if temperature is not None:
        if not _is_number(temperature) or not 0 <= temperature <= 2:
            raise invalid("'temperature' must be a number from 0 to 2", param="temperature")
        kwargs["temperature"] = float(temperature)
    top_p = data.get("top_p")
    if top_p is not None:
        # 0 would keep no token at all; OpenAI's range includes it, the sampler's does not
        if not _is_number(top_p) or not 0 < top_p <= 1:
            raise invalid("'top_p' must be a number above 0 and at most 1", param="top_p")
        kwargs["top_p"] = float(top_p)
    seed = data.get("seed")
    if seed is not None:
        if not _is_int(seed) or not 0 <= seed < 2**64:
            raise invalid("'seed' must be an integer from 0 to 2**64 - 1", param="seed")
        kwargs["seed"] = seed
    stop = data.get("stop")
    if stop is not None:
        kwargs["stop"] = _stop(stop, config)
    n = data.get("n")
    if n is not None and (not _is_int(n) or n != 1):
        raise invalid("this server answers one choice per request: 'n' must be 1", param="n")

    stream = data.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise invalid("'stream' must be a boolean", param="stream")
    include_usage = _stream_options(data.get("stream_options"), bool(stream))

    kwargs.update(_structgen_options(data.get("structgen")))

    schema_param = None
    if tools and response_format is None:
        schema_param = "tools"
    elif response_format is not None and not tools:
        schema_param = "response_format"
    return ChatCall(kwargs, bool(stream), include_usage, schema_param)


# -- fields -----------------------------------------------------------------------------------


def _messages(value: Any, config: ServerConfig) -> list[dict[str, Any]]:
    if value is None:
        raise invalid("'messages' is required", param="messages")
    if not isinstance(value, list) or not value:
        raise invalid("'messages' must be a non-empty array of messages", param="messages")
    if len(value) > config.max_messages:
        raise invalid(f"at most {config.max_messages} messages per request", param="messages")
    out = []
    for i, m in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise invalid(f"{where} must be an object", param=where)
        if m.get("name") is not None and not isinstance(m["name"], str):
            raise invalid(f"{where}.name must be a string", param=f"{where}.name")
        role = m.get("role")
        if role not in _ROLES:
            raise invalid(f"{where}.role must be one of {', '.join(sorted(_ROLES))}", param=f"{where}.role")
        # Only what a chat template renders: clients echo assistant messages back with fields of
        # the response (refusal, annotations, reasoning_content...) that are not prompt.
        message = {key: m[key] for key in _MESSAGE_KEYS if key in m}
        # Chat templates know "system"; OpenAI's "developer" is the same instruction slot.
        if role == "developer":
            message["role"] = "system"
        message["content"] = _content(m.get("content"), where, role)
        if role == "tool" and not isinstance(m.get("tool_call_id"), str):
            raise invalid(f"{where} has role 'tool' and needs a string 'tool_call_id'", param=f"{where}.tool_call_id")
        tool_calls = m.get("tool_calls")
        if tool_calls is not None:
            if role != "assistant":
                raise invalid(f"{where}: only assistant messages have 'tool_calls'", param=f"{where}.tool_calls")
            message["tool_calls"] = _history_tool_calls(tool_calls, where)
        out.append(message)
    return out


def _content(value: Any, where: str, role: str) -> str | None:
    if value is None:
        if role in ("assistant",):
            return None
        raise invalid(f"{where}.content is required for role {role!r}", param=f"{where}.content")
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for j, part in enumerate(value):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, dict) else _kind(part)
                raise invalid(
                    f"{where}.content[{j}]: only text parts are supported, not {kind!r}",
                    param=f"{where}.content",
                )
            texts.append(part["text"])
        return "".join(texts)
    raise invalid(f"{where}.content must be a string or an array of text parts", param=f"{where}.content")


def _history_tool_calls(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise invalid(f"{where}.tool_calls must be an array", param=f"{where}.tool_calls")
    for j, call in enumerate(value):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not isinstance(fn.get("arguments"), str):
            raise invalid(
                f"{where}.tool_calls[{j}] must be {{'id', 'type': 'function', 'function': {{'name', 'arguments'}}}}",
                param=f"{where}.tool_calls",
            )
    return value


def _tools(value: Any, config: ServerConfig) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise invalid("'tools' must be an array of tool definitions", param="tools")
    if len(value) > config.max_tools:
        raise invalid(f"at most {config.max_tools} tools per request", param="tools")
    for i, tool in enumerate(value):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise invalid(f"{where}: only tools of type 'function' are supported", param=where)
        fn = tool.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise invalid(f"{where}.function must be an object with a string 'name'", param=f"{where}.function")
        params = fn.get("parameters")
        if params is not None:
            if not isinstance(params, dict):
                raise invalid(f"{where}.function.parameters must be a JSON Schema object", param=where)
            _check_schema_size(params, f"{where}.function.parameters", config)
    return value


def _tool_choice(value: Any, *, has_tools: bool) -> Any:
    if isinstance(value, str):
        if value not in ("none", "auto", "required"):
            raise invalid("'tool_choice' must be 'none', 'auto', 'required' or a named function", param="tool_choice")
        if value == "required" and not has_tools:
            raise invalid("tool_choice 'required' needs 'tools'", param="tool_choice")
        return value
    fn = value.get("function") if isinstance(value, dict) and value.get("type") == "function" else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise invalid("a named 'tool_choice' is {'type': 'function', 'function': {'name': ...}}", param="tool_choice")
    if not has_tools:
        raise invalid("a named 'tool_choice' needs 'tools'", param="tool_choice")
    return value


def _response_format(value: Any, config: ServerConfig) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid("'response_format' must be an object", param="response_format")
    kind = value.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return value
    if kind == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, dict):
            raise invalid("response_format 'json_schema' needs a 'json_schema' object", param="response_format")
        schema = spec.get("schema")
        if schema is None:
            raise invalid("response_format.json_schema needs a 'schema'", param="response_format")
        if not isinstance(schema, (dict, bool)):
            raise invalid("response_format.json_schema.schema must be a JSON Schema", param="response_format")
        strict = spec.get("strict")
        if strict is not None and not isinstance(strict, bool):
            raise invalid("response_format.json_schema.strict must be a boolean", param="response_format")
        _check_schema_size(schema, "response_format.json_schema.schema", config)
        return value
    raise invalid(
        f"response_format type {kind!r} is not supported (use 'text', 'json_object' or 'json_schema')",
        param="response_format",
    )


def _check_schema_size(schema: Any, where: str, config: ServerConfig) -> None:
    try:
        size = len(json.dumps(schema, ensure_ascii=False).encode("utf-8"))
    except (RecursionError, ValueError, TypeError):
        raise invalid(f"{where} cannot be read as JSON (nested too deeply?)", param=where.split(".")[0]) from None
    if size > config.max_schema_bytes:
        raise invalid(
            f"{where} is {size} bytes; this server takes schemas up to {config.max_schema_bytes} bytes",
            param=where.split(".")[0],
            code="schema_too_large",
        )


def _max_tokens(data: Mapping[str, Any], config: ServerConfig) -> int:
    given = {name: data[name] for name in ("max_completion_tokens", "max_tokens") if data.get(name) is not None}
    for name, value in given.items():
        if not _is_int(value) or value < 1:
            raise invalid(f"{name!r} must be a positive integer", param=name)
    if len(set(given.values())) > 1:
        raise invalid("'max_tokens' and 'max_completion_tokens' differ; give one", param="max_tokens")
    return next(iter(given.values()), config.default_max_tokens)


def _stop(value: Any, config: ServerConfig) -> list[str]:
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise invalid("'stop' must be a non-empty string or an array of them", param="stop")
    if len(stops) > config.max_stop:
        raise invalid(f"at most {config.max_stop} stop strings", param="stop")
    return stops


def _stream_options(value: Any, stream: bool) -> bool:
    if value is None:
        return False
    if not stream:
        raise invalid("'stream_options' is only allowed with 'stream': true", param="stream_options")
    if not isinstance(value, dict):
        raise invalid("'stream_options' must be an object", param="stream_options")
    for key in value:
        if key not in ("include_usage", "include_obfuscation"):
            raise invalid(f"unknown stream option {key!r}", param="stream_options")
    include = value.get("include_usage", False)
    if not isinstance(include, bool) or not isinstance(value.get("include_obfuscation", False), bool):
        raise invalid("stream options are booleans", param="stream_options")
    return include


def _structgen_options(value: Any) -> dict[str, Any]:
    """``prepare_chat`` keywords from the ``structgen`` field."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid("'structgen' must be an object of structgen options", param="structgen")
    out: dict[str, Any] = {}
    schema_options: dict[str, Any] = {}
    for key, option in value.items():
        param = f"structgen.{key}"
        if key in _FAIL_OPEN_OPTIONS:
            raise invalid(f"{param} is refused: {_FAIL_OPEN_OPTIONS[key]}", param=param)
        if key in _SCHEMA_OPTIONS:
            if option not in _SCHEMA_OPTIONS[key]:
                raise invalid(f"{param} must be one of {', '.join(_SCHEMA_OPTIONS[key])}", param=param)
            schema_options[key] = option
        elif key in ("indent", "max_indent"):
            if not _is_int(option) or not 0 <= option <= 64:
                raise invalid(f"{param} must be an integer from 0 to 64", param=param)
            schema_options[key] = option
        elif key == "strict":
            # narrows what is allowed (no unlisted properties): every output still validates
            if not isinstance(option, bool):
                raise invalid(f"{param} must be a boolean", param=param)
            schema_options[key] = option
        elif key == "thinking_budget":
            # 0: no thinking block; N: at most N tokens of reasoning before the answer
            if not _is_int(option) or option < 0:
                raise invalid(f"{param} must be an integer >= 0 (tokens of reasoning)", param=param)
            out["thinking"] = {"budget": option} if option else False
        elif key == "thinking":
            if not isinstance(option, bool):
                raise invalid(f"{param} must be a boolean (thinking_budget sets the budget)", param=param)
            out.setdefault("thinking", option)
        elif key == "top_k":
            if not _is_int(option) or option < 0:
                raise invalid(f"{param} must be an integer >= 0", param=param)
            out["top_k"] = option
        else:
            raise invalid(f"unknown structgen option {key!r}", param=param, code="unknown_parameter")
    if schema_options:
        out["schema_options"] = schema_options
    return out


# -- small checks -----------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _is_neutral(value: Any, neutral: tuple[Any, ...]) -> bool:
    return any(type(value) is type(n) or (_is_number(value) and _is_number(n)) for n in neutral if value == n)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
