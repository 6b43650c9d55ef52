"""An agent loop with typed tool calls: the model calls tools until it gives a final answer.

    python examples/agent_tools.py

Each step the model writes one JSON call, constrained to the tools' names and argument schemas;
``structgen.generate`` returns a ``ToolCall`` (validated, typed arguments) or a ``FinalAnswer``.
``ToolCall.invoke()`` runs the tool. ``structgen.tools.run_agent`` is this loop, packaged.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import structgen
from structgen.models import load_llama, require_model
from structgen.tools import FinalAnswer, ToolSet


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


def main(llm: Any = None, *, max_steps: int = 4) -> tuple[Any, list[str]]:
    llm = llm or load_llama(require_model("smollm2"), n_ctx=4096)
    tools = ToolSet([get_weather, convert_currency, local_time], final_answer=str)
    system = (
        "You are an assistant that uses tools.\n" + tools.describe() + "\nFirst call a tool to get facts, for example "
        '{"name": "get_weather", "arguments": {"city": "Rome"}}. When you have the facts, answer with final_answer.'
    )
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": "What's the weather in Paris right now?"},
    ]
    calls = []
    for step in range(max_steps):
        allowed = tools if step < max_steps - 1 else tools.only("final_answer")  # the last step must answer
        out = structgen.generate(llm, allowed, messages, temperature=0.0)
        if isinstance(out, FinalAnswer):
            print(f"final answer: {out.value}")
            return out.value, calls
        result = out.invoke()  # typed arguments, dispatched to the function
        print(f"call {out.name}({out.arguments_dict()}) -> {result}")
        calls.append(out.name)
        messages.append({"role": "assistant", "content": out.to_json()})
        messages.append({"role": "tool", "content": json.dumps(result)})
    raise AssertionError("unreachable")


if __name__ == "__main__":
    main()
