"""Chat messages in OpenAI's shape: checked before any model call, normalised for templates.

A message is a dict with a string ``role`` and a ``content`` that is a string, ``None`` (an
assistant turn that only calls tools) or a list of text parts (``{"type": "text", "text": ...}``,
joined). An assistant message may carry ``tool_calls`` (``{"id", "type": "function",
"function": {"name", "arguments"}}``, arguments a JSON text or an object); a ``tool`` message
carries the result of one call (``tool_call_id``, ``content``). Anything else is refused with a
:class:`~structgen.errors.StructgenError` naming the message and the field.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from ..errors import StructgenError


def is_chat(prompt: Any) -> bool:
    """Whether ``prompt`` is a list of chat messages rather than text."""
    return not isinstance(prompt, (str, bytes)) and isinstance(prompt, Sequence)


def check_text(prompt: Any) -> str:
    """A text prompt as a string (bytes are decoded as UTF-8)."""
    if isinstance(prompt, bytes):
        try:
            return prompt.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StructgenError(f"the prompt is not valid UTF-8: {e}") from e
    if not isinstance(prompt, str):
        raise StructgenError(f"a prompt is a string or a list of chat messages, not {type(prompt).__name__}")
    _check_unicode(prompt, "the prompt")
    return prompt


def _check_unicode(text: str, where: str) -> None:
    """Refuse text with a lone surrogate (a JSON ``"\\ud800"`` escape decodes to one): no
    tokenizer can encode it, and it failed inside the runtime instead of here."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise StructgenError(f"{where} is not valid Unicode: it holds a lone surrogate") from None


def check_messages(prompt: Any) -> list[dict[str, Any]]:
    """The messages of ``prompt`` as plain dicts in a form templates take: content a string (or
    ``None`` beside tool calls), tool-call arguments as objects. A clear error for anything else."""
    if not is_chat(prompt) or not prompt:
        raise StructgenError("a chat prompt is a non-empty list of {'role': ..., 'content': ...} messages")
    out = []
    for i, m in enumerate(prompt):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) or not m["role"]:
            raise StructgenError(f"chat message {i} needs a string 'role' (and 'content')")
        msg = dict(m)
        msg["content"] = _content(m.get("content"), i)
        calls = m.get("tool_calls")
        if calls is not None:
            if m["role"] != "assistant":
                raise StructgenError(f"chat message {i}: only an assistant message may carry 'tool_calls'")
            msg["tool_calls"] = [_tool_call(c, i, k) for k, c in enumerate(_list(calls, i, "tool_calls"))]
        elif msg["content"] is None and m["role"] != "assistant":
            raise StructgenError(f"chat message {i} ({m['role']}) has no 'content'")
        if m["role"] == "tool":
            ref = m.get("tool_call_id")
            if ref is not None and not isinstance(ref, str):
                raise StructgenError(f"chat message {i}: 'tool_call_id' must be a string")
        # every field a template may print, keys and tool-call arguments included
        _check_unicode(json.dumps(msg, ensure_ascii=False, default=str), f"chat message {i}")
        out.append(msg)
    return out


def plain_transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """A template-free rendering: each message as ``Role: content``, then ``Assistant:``."""
    parts = [f"{str(m['role']).capitalize()}: {m.get('content') or ''}" for m in messages]
    return "\n\n".join(parts) + "\n\nAssistant:"


def _content(content: Any, i: int) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        texts = []
        for part in content:
            if not isinstance(part, Mapping) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise StructgenError(
                    f"chat message {i}: a content list may hold only text parts ({{'type': 'text', 'text': ...}})"
                )
            texts.append(part["text"])
        return "".join(texts)
    raise StructgenError(f"chat message {i}: 'content' must be a string, a list of text parts or null")


def _list(value: Any, i: int, field: str) -> list[Any]:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise StructgenError(f"chat message {i}: '{field}' must be a list")
    return list(value)


def _tool_call(call: Any, i: int, k: int) -> dict[str, Any]:
    where = f"chat message {i}, tool call {k}"
    if not isinstance(call, Mapping):
        raise StructgenError(f"{where}: a tool call is an object")
    fn = call.get("function", call)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise StructgenError(f"{where}: needs 'function': {{'name': ..., 'arguments': ...}}")
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as e:
            raise StructgenError(f"{where}: 'arguments' is not JSON: {e}") from e
    if not isinstance(args, Mapping):
        raise StructgenError(f"{where}: 'arguments' must be a JSON object")
    out = {"type": "function", "function": {"name": fn["name"], "arguments": dict(args)}}
    if call.get("id") is not None:
        if not isinstance(call["id"], str):
            raise StructgenError(f"{where}: 'id' must be a string")
        out["id"] = call["id"]
    return out
