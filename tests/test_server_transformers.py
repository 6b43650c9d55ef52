"""The real server process on the transformers runtime (``structgen serve smollm2 --runtime
transformers``: SmolLM2's GGUF de-quantized by transformers, nothing downloaded), driven by the
real ``openai`` client: a schema-constrained answer, a tool call and a stream. Marked ``model``."""

from __future__ import annotations

import json

import jsonschema
import pytest
from server_process import server_process

pytestmark = pytest.mark.model

openai = pytest.importorskip("openai", reason="the openai client is not installed (pip install '.[test]')")
pytest.importorskip("starlette", reason="the server extra is not installed (pip install '.[server]')")
pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="transformers is not installed (pip install '.[hf]')")
pytest.importorskip("gguf", reason="transformers reads GGUF files with the gguf package (pip install '.[hf]')")

KEY = "sk-structgen-transformers"
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 16},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 20}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture(scope="module")
def client():
    from structgen.models import find_model

    if find_model("smollm2") is None:
        pytest.skip("the SmolLM2 GGUF is not installed (tools/fetch_assets.py --models)")
    with server_process(["smollm2", "--runtime", "transformers", "--api-key", KEY], "smollm2") as url:
        yield openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0, timeout=900)


def test_schema_answer_validates(client) -> None:
    answer = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Invent a person: a name and an age."}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}},
        max_tokens=32,
        seed=1,
    )
    jsonschema.validate(json.loads(answer.choices[0].message.content), PERSON)
    assert answer.usage.completion_tokens > 0


def test_required_tool_call_validates(client) -> None:
    answer = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=[WEATHER],
        tool_choice="required",
        max_tokens=64,
        seed=2,
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    for call in choice.message.tool_calls:
        assert call.function.name == "get_weather"
        jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])


def test_stream_joins_to_a_valid_answer(client) -> None:
    chunks = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Invent a person."}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}},
        max_tokens=32,
        stream=True,
        seed=3,
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    jsonschema.validate(json.loads(text), PERSON)
