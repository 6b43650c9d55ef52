"""Chat turns for agents: :func:`chat` and its stream and async forms, tools in each model's format.

* :mod:`.formats` - the call formats of model families (Hermes/Qwen, Llama 3, Mistral, generic),
  a small registry;
* :mod:`.grammar` - the grammars of a turn: thinking block, and answer per ``tool_choice``;
* :mod:`.calls` - reading calls back from an answer, whole or while it grows;
* :mod:`.result` - :class:`ChatResult` and :class:`ChatDelta`;
* :mod:`.api` - :func:`prepare_chat`, :func:`chat`, :func:`chat_stream`, :func:`achat`,
  :func:`achat_stream`.
"""

from .api import (
    DEFAULT_CHAT_TUNING,
    ChatPartial,
    ChatRequest,
    ChatStream,
    ChatTuning,
    achat,
    achat_stream,
    chat,
    chat_stream,
    prepare_chat,
    render_prompt,
)
from .formats import CallFormat, call_format, detect_format, register_call_format
from .result import ChatDelta, ChatResult

__all__ = [
    "DEFAULT_CHAT_TUNING",
    "CallFormat",
    "ChatDelta",
    "ChatPartial",
    "ChatRequest",
    "ChatResult",
    "ChatStream",
    "ChatTuning",
    "achat",
    "achat_stream",
    "call_format",
    "chat",
    "chat_stream",
    "detect_format",
    "prepare_chat",
    "register_call_format",
    "render_prompt",
]
