"""An agent task set end to end with a real model: does the model pick the right tools?

    python benchmarks/agent_tasks.py [--model smollm2] [--seeds 0] [--out benchmarks/results/NAME.json]

20 prompts: 10 that need one of 3 tools, 5 that need two calls, 5 that need none. Two ways of
showing the model its tools, each with tool_choice "auto" (the model may answer in text):

* ``chat`` - ``structgen.chat(..., tools=...)``: the tools through the model's chat template (or,
  for a template without tools, the call format's system block), calls in the model's own format
  (picked from the template or the model's name: SmolLM2's own list-in-a-block form), several
  calls per turn allowed;
* ``chat-hermes`` - the same with the Hermes ``<tool_call>`` format and structgen's default block,
  to show what the family's own format is worth;
* ``chat-required`` - ``chat`` with ``tool_choice="required"``: which tools the model picks when it
  must call (wrong by definition on the text tasks);
* ``describe`` - the way before ``chat()``: ``ToolSet.describe()`` pasted into a system message by
  hand and ``structgen.generate`` with a ``final_answer`` pseudo-tool (one call per turn).

A task is right when the set of tools called is the set it needs (no call for the text tasks; for
``describe``, one call of a needed tool, or ``final_answer`` for the text tasks, since it makes one
call per turn). Reported: how often each is right, by kind, and the tokens and seconds per task.
This is a benchmark, not a test: the figures depend on the model and the machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import structgen
from structgen.models import load_llama, require_model
from structgen.tools import FinalAnswer, ToolCall, ToolSet


def get_weather(city: str) -> dict[str, Any]:
    """Current weather in a city."""
    return {"city": city, "temperature": 18, "sky": "cloudy"}


def convert_currency(amount: float, source: str, target: str) -> dict[str, Any]:
    """Convert an amount of money from one currency to another (three-letter codes such as EUR, USD)."""
    return {"amount": round(amount * 1.08, 2), "currency": target}


def search_web(query: str) -> list[str]:
    """Search the web for pages about a topic."""
    return [f"A page about {query}"]


TOOLS = [get_weather, convert_currency, search_web]

#: (prompt, the tools it needs)
TASKS: list[tuple[str, frozenset[str]]] = [
    ("What's the weather in Paris right now?", frozenset({"get_weather"})),
    ("Is it raining in London today?", frozenset({"get_weather"})),
    ("How warm is it in Tokyo at the moment?", frozenset({"get_weather"})),
    ("Convert 250 euros to US dollars.", frozenset({"convert_currency"})),
    ("How many Japanese yen is 40 British pounds?", frozenset({"convert_currency"})),
    ("I have 1000 USD. How much is that in EUR?", frozenset({"convert_currency"})),
    ("Search the web for the history of the Eiffel Tower.", frozenset({"search_web"})),
    ("Find recent news about electric cars.", frozenset({"search_web"})),
    ("Look up who invented the telephone.", frozenset({"search_web"})),
    ("What is the forecast for Berlin?", frozenset({"get_weather"})),
    ("What's the weather in Rome, and convert 100 EUR to USD.", frozenset({"get_weather", "convert_currency"})),
    ("Search the web for Lisbon hotels and tell me the weather in Lisbon.", frozenset({"search_web", "get_weather"})),
    ("Convert 50 USD to EUR and 50 USD to GBP.", frozenset({"convert_currency"})),
    ("Get the weather in Oslo and in Madrid.", frozenset({"get_weather"})),
    ("Find pages about pandas and convert 20 CNY to USD.", frozenset({"search_web", "convert_currency"})),
    ("Hello! How are you?", frozenset()),
    ("Write a two-line poem about the sea.", frozenset()),
    ("What is 2 plus 2?", frozenset()),
    ("Thank you, that is all.", frozenset()),
    ("Say hi to my friend Sam.", frozenset()),
]


def kind_of(need: frozenset[str], prompt: str) -> str:
    if not need:
        return "none"
    two = len(need) > 1 or " and " in prompt
    return "two" if two else "one"


def run_chat(
    llm: Any, prompt: str, seed: int, call_format: str | None = None, tool_choice: str = "auto"
) -> tuple[set[str], int, float]:
    t = time.perf_counter()
    r = structgen.chat(
        llm,
        [{"role": "user", "content": prompt}],
        tools=TOOLS,
        seed=seed,
        temperature=0.0,
        max_tokens=120,
        call_format=call_format,
        tool_choice=tool_choice,
    )
    return {c.name for c in r.tool_calls}, r.usage["completion_tokens"], time.perf_counter() - t


def run_chat_hermes(llm: Any, prompt: str, seed: int) -> tuple[set[str], int, float]:
    return run_chat(llm, prompt, seed, "hermes")


def run_chat_required(llm: Any, prompt: str, seed: int) -> tuple[set[str], int, float]:
    return run_chat(llm, prompt, seed, tool_choice="required")


def run_describe(llm: Any, prompt: str, seed: int) -> tuple[set[str], int, float]:
    tools = ToolSet(TOOLS, final_answer=str)
    system = "You are an assistant that uses tools.\n" + tools.describe()
    t = time.perf_counter()
    r = structgen.generate_result(
        llm,
        tools,
        [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        seed=seed,
        temperature=0.0,
        max_tokens=120,
    )
    called = {r.value.name} if isinstance(r.value, ToolCall) else set()
    assert isinstance(r.value, (ToolCall, FinalAnswer))
    return called, len(r.token_ids), time.perf_counter() - t


def right(way: str, called: set[str], need: frozenset[str]) -> bool:
    if way == "describe":  # one call per turn: a needed tool, or final_answer for text tasks
        return (not need and not called) or (bool(called) and called <= need)
    return called == set(need)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds (greedy decoding: one is enough)")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    llm = load_llama(require_model(args.model), n_ctx=4096)
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    ways = (
        ("chat", run_chat),
        ("chat-hermes", run_chat_hermes),
        ("chat-required", run_chat_required),
        ("describe", run_describe),
    )
    for way, fn in ways:
        fn(llm, TASKS[0][0], seeds[0])  # warm: compile the constraints once, outside the figures
        for prompt, need in TASKS:
            for seed in seeds:
                called, tokens, seconds = fn(llm, prompt, seed)
                rows.append(
                    {
                        "way": way,
                        "kind": kind_of(need, prompt),
                        "prompt": prompt,
                        "need": sorted(need),
                        "called": sorted(called),
                        "right": right(way, called, need),
                        "tokens": tokens,
                        "seconds": round(seconds, 3),
                    }
                )
                print(
                    f"{way:8} {rows[-1]['kind']:4} {'ok ' if rows[-1]['right'] else 'no '} {sorted(called)!s:40} "
                    f"{tokens:4} tok {seconds:5.2f} s  {prompt}",
                    file=sys.stderr,
                )
    summary: dict[str, Any] = {"model": args.model, "seeds": seeds, "python": platform.python_version(), "ways": {}}
    for way, _ in ways:
        mine = [r for r in rows if r["way"] == way]
        by_kind = {}
        for kind in ("one", "two", "none"):
            sub = [r for r in mine if r["kind"] == kind]
            by_kind[kind] = f"{sum(r['right'] for r in sub)}/{len(sub)}"
        summary["ways"][way] = {
            "right": f"{sum(r['right'] for r in mine)}/{len(mine)}",
            "by_kind": by_kind,
            "tokens_per_task": round(sum(r["tokens"] for r in mine) / len(mine), 1),
            "seconds_per_task": round(sum(r["seconds"] for r in mine) / len(mine), 2),
        }
    print(json.dumps(summary, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return summary


if __name__ == "__main__":
    main()
