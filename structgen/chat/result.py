"""What a chat turn returns: :class:`ChatResult`, and the :class:`ChatDelta` pieces of a stream."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..tools import ToolCall


@dataclass(frozen=True)
class ChatDelta:
    """One piece of a streamed turn. Exactly one kind is set: ``content`` (answer text),
    ``reasoning`` (thinking text), or a tool-call piece: ``tool_call_index`` with, on a call's
    first piece, ``tool_call_id`` and ``tool_call_name``, and ``arguments`` (a fragment of the
    arguments' JSON text; the fragments of one call join into its arguments)."""

    content: str | None = None
    reasoning: str | None = None
    tool_call_index: int | None = None
    tool_call_id: str | None = None
    tool_call_name: str | None = None
    arguments: str | None = None


@dataclass
class ChatResult:
    """A model's turn: ``content`` (text, or None), validated ``tool_calls``, ``parsed`` (the
    ``response_format`` object), ``reasoning`` (the thinking text, or None), ``finish_reason``
    (``"stop"``, ``"length"`` or ``"tool_calls"``) and ``usage`` (token counts)."""

    content: str | None
    tool_calls: list[ToolCall]
    parsed: Any
    reasoning: str | None
    finish_reason: str
    usage: dict[str, int]
    #: output tokens of the thinking block (0 without one)
    reasoning_tokens: int = 0
    stats: Any = field(default=None, repr=False)

    def message(self) -> dict[str, Any]:
        """The OpenAI-style assistant message to append to the conversation."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        return out
