"""An agent with tools: the model sees the tools through its chat template and calls them in its
own format, or answers in text.

    python examples/agent_tools.py

``structgen.chat`` renders the tools (SmolLM2's ChatML template renders none, so structgen adds its
default system block for the Hermes ``<tool_call>`` format), lets the model answer in text or call
tools (``tool_choice="auto"``), and returns validated, typed ``ToolCall`` objects; a call's
``invoke()`` runs the function. ``structgen.run_agent`` is this loop, packaged.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import structgen
from structgen.models import load_llama, require_model


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Current weather in a city.

    Args:
        city: City name, e.g. "Paris".
        unit: Temperature unit.
    """
    return {"city": city, "temperature": 18 if unit == "celsius" else 64, "unit": unit, "sky": "cloudy"}


def convert_currency(amount: float, source: str, target: str) -> dict[str, Any]:
    """Convert money between currencies (three-letter codes such as EUR, USD)."""
    rate = 1.08 if (source, target) == ("EUR", "USD") else 1.0
    return {"amount": round(amount * rate, 2), "currency": target}


def local_time(city: str) -> str:
    """The current local time in a city (24-hour clock)."""
    return "14:05"


def main(llm: Any = None, *, max_steps: int = 4) -> tuple[str | None, list[str]]:
    llm = llm or load_llama(require_model("smollm2"), n_ctx=4096)
    tools = [get_weather, convert_currency, local_time]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What's the weather in Paris right now?"}]
    calls = []
    for step in range(max_steps):
        # look something up first, then let the model choose; the last turn can only answer
        choice = "required" if step == 0 else "none" if step == max_steps - 1 else "auto"
        turn = structgen.chat(llm, messages, tools=tools, tool_choice=choice, temperature=0.0, max_tokens=120)
        messages.append(turn.message())
        if not turn.tool_calls:
            print(f"answer: {turn.content}")
            return turn.content, calls
        for call in turn.tool_calls:
            result = call.invoke()  # typed arguments, dispatched to the function
            print(f"call {call.name}({call.arguments_dict()}) -> {result}")
            calls.append(call.name)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    raise AssertionError("unreachable: the last turn cannot call tools")


if __name__ == "__main__":
    main()
