"""An agent loop on :func:`structgen.chat`: call tools until the model answers in text.

Each step is one chat turn with the tools rendered through the model's template (or the call
format's default block). Each call the model makes is run (:meth:`ToolCall.invoke`) and its result
goes back as a ``tool`` message (``tool_call_id`` set), through the template like any message. The
loop ends on a turn without calls - its text (or ``parsed`` value, with a ``response_format``) is
the answer - or after ``max_steps`` turns; the last turn has ``tool_choice="none"``, so it can
only answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from .chat import chat
from .errors import StructgenError
from .tools import ToolCall, ToolSet


@dataclass
class AgentRun:
    """The end of :func:`run_agent`: the answer, the calls made with their results, the messages
    (the conversation as it stands, the final answer included)."""

    answer: Any
    calls: list[tuple[ToolCall, Any]]
    messages: list[dict[str, Any]]


def run_agent(
    model: Any,
    tools: ToolSet | Iterable[Any],
    messages: list[dict[str, Any]],
    *,
    max_steps: int = 6,
    **chat_options: Any,
) -> AgentRun:
    """Run tools the model calls until it answers without calling one (see the module docstring).

    ``chat_options`` go to every :func:`structgen.chat` turn (``temperature``, ``seed``,
    ``response_format``, ``thinking``...). A tool that raises ends the loop with that exception.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise StructgenError("max_steps must be an integer >= 1")
    if "tool_choice" in chat_options and chat_options["tool_choice"] == "none":
        raise StructgenError("run_agent with tool_choice='none' would never call a tool: use chat()")
    toolset = tools if isinstance(tools, ToolSet) else ToolSet(list(tools))
    history = [dict(m) for m in messages]
    calls: list[tuple[ToolCall, Any]] = []
    for step in range(max_steps):
        last = step == max_steps - 1
        options = dict(chat_options)
        if last:
            options["tool_choice"] = "none"
        result = chat(model, history, tools=toolset, **options)
        history.append(result.message())
        if not result.tool_calls:
            answer = result.parsed if result.parsed is not None else result.content
            return AgentRun(answer, calls, history)
        for call in result.tool_calls:
            value = call.invoke()
            calls.append((call, value))
            history.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "name": call.name,
                    "content": value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False),
                }
            )
    raise AssertionError("unreachable: the last turn cannot call tools")  # pragma: no cover
