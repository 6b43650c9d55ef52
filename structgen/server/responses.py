"""OpenAI's response objects: ``chat.completion``, ``chat.completion.chunk``, and the model list.

Reasoning (the text of a thinking block) goes in ``reasoning_content``, the field the
OpenAI-compatible servers that separate reasoning use; OpenAI's own clients keep unknown fields.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from .. import __version__

SYSTEM_FINGERPRINT = f"structgen-{__version__}"


def completion_id() -> str:
    return f"chatcmpl-{secrets.token_hex(12)}"


def completion(result: Any, *, id_: str, created: int, model: str) -> dict[str, Any]:
    """The ``chat.completion`` object of a :class:`structgen.chat.ChatResult`."""
    message = dict(result.message())
    if result.reasoning and "reasoning_content" not in message:
        message["reasoning_content"] = result.reasoning
    return {
        "id": id_,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": result.finish_reason}],
        "usage": usage(result),
    }


def usage(result: Any) -> dict[str, Any]:
    """OpenAI's usage object; the thinking block's tokens as ``reasoning_tokens``."""
    out: dict[str, Any] = dict(result.usage)
    reasoning_tokens = getattr(result, "reasoning_tokens", 0)
    if reasoning_tokens:
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return out


class ChunkWriter:
    """The server-sent events of one streamed completion, in order."""

    def __init__(self, *, id_: str, created: int, model: str, include_usage: bool) -> None:
        self.id = id_
        self.created = created
        self.model = model
        self.include_usage = include_usage

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if self.include_usage:
            chunk["usage"] = None
        return event(chunk)

    def first(self) -> bytes:
        return self._chunk({"role": "assistant", "content": ""})

    def delta(self, d: Any) -> bytes | None:
        """The chunk of one :class:`structgen.chat.ChatDelta` (None if it carries nothing)."""
        out: dict[str, Any] = {}
        if d.content:
            out["content"] = d.content
        if d.reasoning:
            out["reasoning_content"] = d.reasoning
        if d.tool_call_index is not None:
            call: dict[str, Any] = {"index": d.tool_call_index}
            function: dict[str, Any] = {}
            if d.tool_call_name is not None:
                call["id"] = d.tool_call_id
                call["type"] = "function"
                function["name"] = d.tool_call_name
            if d.arguments is not None or d.tool_call_name is not None:
                function["arguments"] = d.arguments or ""
            if function:
                call["function"] = function
            out["tool_calls"] = [call]
        return self._chunk(out) if out else None

    def last(self, result: Any) -> list[bytes]:
        """The closing chunk (its ``finish_reason``), the usage chunk if asked, and ``[DONE]``."""
        out = [self._chunk({}, result.finish_reason)]
        if self.include_usage:
            out.append(
                event(
                    {
                        "id": self.id,
                        "object": "chat.completion.chunk",
                        "created": self.created,
                        "model": self.model,
                        "system_fingerprint": SYSTEM_FINGERPRINT,
                        "choices": [],
                        "usage": usage(result),
                    }
                )
            )
        out.append(DONE)
        return out


DONE = b"data: [DONE]\n\n"


def event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n\n"


def model_card(name: str, created: int) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": created, "owned_by": "structgen"}


def now() -> int:
    return int(time.time())
