"""An agent through the OpenAI client, against ``structgen serve``: every tool call it gets is valid.

    structgen serve smollm2 &                                 # in one shell
    python examples/openai_agent.py --base-url http://127.0.0.1:8000/v1

    python examples/openai_agent.py                           # or: serve SmolLM2 in this process

The loop is the usual Chat Completions agent: send the tools, run each ``tool_calls`` entry, send
the results back as ``tool`` messages, until the model answers in text. Nothing in it is
structgen-specific - any OpenAI-compatible server would do - except that here each call's
arguments parse and validate against the tool's JSON Schema, so the loop needs no retries and no
repair. The last step sends ``tool_choice="none"``, so the agent always ends with an answer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from typing import Any, Iterator

import openai

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris", "maxLength": 40},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city", "unit"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "local_time",
            "description": "The current local time in a city (24-hour clock)",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 40}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
]


def get_weather(city: str, unit: str) -> dict[str, Any]:
    return {"city": city, "temperature": 18 if unit == "celsius" else 64, "unit": unit, "sky": "cloudy"}


def local_time(city: str) -> str:
    return "14:05"


HANDLERS = {"get_weather": get_weather, "local_time": local_time}


def run_agent(client: openai.OpenAI, model: str, question: str, *, max_steps: int = 3) -> tuple[str, list[str]]:
    """The answer to ``question`` and the names of the tools called on the way."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer questions about cities. Use the tools to get facts."},
        {"role": "user", "content": question},
    ]
    calls: list[str] = []
    for step in range(max_steps):
        last = step == max_steps - 1
        response = client.chat.completions.create(
            model=model,
            messages=messages,
            tools=TOOLS,
            tool_choice="none" if last else ("required" if step == 0 else "auto"),
            parallel_tool_calls=False,
            max_tokens=48,
            temperature=0.0,
        )
        message = response.choices[0].message
        if not message.tool_calls:
            print(f"answer: {message.content}")
            return message.content or "", calls
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)  # valid by construction: no try/except
            result = HANDLERS[call.function.name](**arguments)
            print(f"call {call.function.name}({arguments}) -> {result}")
            calls.append(call.function.name)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    raise AssertionError("unreachable: the last step has tool_choice='none'")


@contextlib.contextmanager
def served(llm: Any) -> Iterator[str]:
    """``llm`` served by structgen on a free loopback port in this process; yields the base URL."""
    import uvicorn

    from structgen.server import ServerConfig, create_app

    app = create_app(llm, ServerConfig(model_name="smollm2"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def main(llm: Any = None, *, base_url: str | None = None, api_key: str = "none") -> tuple[str, list[str]]:
    question = "What's the weather in Paris right now?"
    if base_url is not None:
        client = openai.OpenAI(base_url=base_url, api_key=api_key)
        return run_agent(client, client.models.list().data[0].id, question)
    if llm is None:
        from structgen.models import load_llama, require_model

        llm = load_llama(require_model("smollm2"), n_ctx=4096)
    with served(llm) as url:
        return run_agent(openai.OpenAI(base_url=url, api_key=api_key, timeout=600), "smollm2", question)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="a running server (default: serve SmolLM2 in this process)")
    parser.add_argument("--api-key", default="none", help="the server's --api-key, if it has one")
    args = parser.parse_args()
    main(base_url=args.base_url, api_key=args.api_key)
