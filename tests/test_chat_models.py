"""chat() end to end with the real SmolLM2-135M-Instruct and Gemma 3 270M GGUFs (marked ``model``)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Literal

import pytest
from pydantic import BaseModel

import structgen

pytestmark = pytest.mark.model


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
    """Current weather in a city."""
    return {"city": city, "temperature": 18, "unit": unit}


def convert_currency(amount: float, source: str, target: str) -> dict:
    """Convert money between currencies (three-letter codes)."""
    return {"amount": amount * 1.08, "currency": target}


class Contact(BaseModel):
    name: str
    age: int
    city: str


TOOLS = [get_weather, convert_currency]
ASK = [{"role": "user", "content": "Convert 250 euros to US dollars."}]


@pytest.fixture(params=["smollm2", "gemma"])
def llm(request, smollm2_llama, gemma_llama):
    return smollm2_llama if request.param == "smollm2" else gemma_llama


def _valid(call) -> None:
    assert call.name in ("get_weather", "convert_currency")
    json.loads(call.arguments_json())


def test_required_gives_valid_calls(llm):
    for seed in (0,):
        r = structgen.chat(llm, ASK, tools=TOOLS, tool_choice="required", seed=seed, max_tokens=80)
        assert r.tool_calls and r.finish_reason == "tool_calls"
        for call in r.tool_calls:
            _valid(call)


def test_none_gives_no_call(llm):
    r = structgen.chat(llm, ASK, tools=TOOLS, tool_choice="none", seed=0, max_tokens=24)
    assert r.tool_calls == [] and r.finish_reason in ("stop", "length") and r.content is not None


def test_named_tool_and_one_call_at_most(llm):
    named = {"type": "function", "function": {"name": "get_weather"}}
    r = structgen.chat(llm, ASK, tools=TOOLS, tool_choice=named, seed=0, max_tokens=100)
    assert [c.name for c in r.tool_calls] == ["get_weather"]
    for seed in (0, 1):
        r = structgen.chat(
            llm, ASK, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, seed=seed, max_tokens=80
        )
        assert len(r.tool_calls) == 1


def test_auto_is_text_or_valid_calls(llm):
    for seed in (0, 1):
        r = structgen.chat(llm, ASK, tools=TOOLS, seed=seed, max_tokens=60)
        if r.tool_calls:
            assert r.finish_reason == "tool_calls"
            for call in r.tool_calls:
                _valid(call)
        else:
            assert "<tool_call>" not in (r.content or "") and r.finish_reason in ("stop", "length")


def test_thinking_budget_then_a_validated_object(llm):
    ask = [{"role": "user", "content": "Ann Lee, 42, lives in Oslo. Extract the contact."}]
    r = structgen.chat(llm, ask, response_format=Contact, thinking={"budget": 16}, seed=0, max_tokens=40)
    assert isinstance(r.parsed, Contact)
    assert r.reasoning_tokens <= 16
    assert r.reasoning is None or len(llm.tokenize(r.reasoning.encode(), add_bos=False)) <= 16


def test_stream_joins_into_a_valid_call(smollm2_llama):
    stream = structgen.prepare_chat(
        smollm2_llama, ASK, tools=TOOLS, tool_choice="required", seed=0, max_tokens=80
    ).stream()
    deltas = list(stream)
    args: dict[int, str] = {}
    for d in deltas:
        if d.tool_call_index is not None:
            args[d.tool_call_index] = args.get(d.tool_call_index, "") + (d.arguments or "")
    calls = stream.result.tool_calls
    assert len(args) == len(calls)
    for (_, text), call in zip(sorted(args.items()), calls):
        assert call.tool.validate_arguments(json.loads(text)) == call.arguments


def test_two_threads_and_ten_achat_calls_on_one_llama(smollm2_llama):
    results, errors = [], []

    def work(seed: int) -> None:
        try:
            results.append(
                structgen.chat(smollm2_llama, ASK, tools=TOOLS, tool_choice="required", seed=seed, max_tokens=60)
            )
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 2 and all(r.tool_calls for r in results)

    async def many():
        return await asyncio.gather(
            *(
                structgen.achat(smollm2_llama, ASK, tools=TOOLS, tool_choice="required", seed=s, max_tokens=60)
                for s in range(10)
            )
        )

    out = asyncio.run(many())
    assert len(out) == 10 and all(r.tool_calls for r in out)
    for r in out:
        for call in r.tool_calls:
            _valid(call)
