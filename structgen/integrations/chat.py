"""Prompts as chat messages: checking them, and a plain transcript for models without a template.

Adapters render messages with the model's own chat template where it has one (the GGUF's
``tokenizer.chat_template``, a tokenizer's ``chat_template``). A model without one (a base model
such as Gemma 3 270M) gets :func:`plain_transcript`: ``"User: ...\\n\\nAssistant:"``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..errors import StructgenError


def is_chat(prompt: Any) -> bool:
    """Whether ``prompt`` is a list of chat messages rather than text."""
    return not isinstance(prompt, (str, bytes)) and isinstance(prompt, Sequence)


def check_messages(prompt: Any) -> list[dict[str, Any]]:
    """The messages of ``prompt`` as plain dicts; a clear error for anything else."""
    if not is_chat(prompt) or not prompt:
        raise StructgenError("a chat prompt is a non-empty list of {'role': ..., 'content': ...} messages")
    out = []
    for i, m in enumerate(prompt):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise StructgenError(f"chat message {i} needs a string 'role' (and 'content')")
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            raise StructgenError(f"chat message {i}: 'content' must be a string")
        out.append(dict(m))
    return out


def check_text(prompt: Any) -> str:
    if isinstance(prompt, bytes):
        return prompt.decode("utf-8")
    if not isinstance(prompt, str):
        raise StructgenError(f"a prompt is a string or a list of chat messages, not {type(prompt).__name__}")
    return prompt


def plain_transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """A template-free rendering: each message as ``Role: content``, then ``Assistant:``."""
    parts = [f"{str(m['role']).capitalize()}: {m.get('content') or ''}" for m in messages]
    return "\n\n".join(parts) + "\n\nAssistant:"
