"""The real server process with SmolLM2 (``python -m structgen serve smollm2``) on a free loopback
port, driven by the ``openai`` client: every answer parses and validates, or is a 4xx that says why.

Marked ``model``. Budgets are small: on a loaded 2-core machine SmolLM2-135M can take a second
per token. Tool-call budgets leave room for the Hermes markers (``<tool_call>`` ... ``</tool_call>``).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import jsonschema
import pytest
from server_process import server_process

pytestmark = pytest.mark.model

openai = pytest.importorskip("openai", reason="the openai client is not installed (pip install '.[test]')")
pytest.importorskip("starlette", reason="the server extra is not installed (pip install '.[server]')")
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install '.[llama]')")

KEY = "sk-structgen-test"

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 16},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "maxLength": 20},
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
            "name": "get_time",
            "description": "Current time in a time zone",
            "parameters": {
                "type": "object",
                "properties": {"zone": {"type": "string", "maxLength": 20}},
                "required": ["zone"],
                "additionalProperties": False,
            },
        },
    },
]
PARAMETERS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
WEATHER_QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def person_format(schema=PERSON):
    return {"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": True}}


@pytest.fixture(scope="module")
def server():
    """The server process; yields its base URL and stops it at the end."""
    from structgen.models import find_model

    if find_model("smollm2") is None:
        pytest.skip("the SmolLM2 GGUF is not installed (tools/fetch_assets.py --models)")
    with server_process(["smollm2", "--api-key", KEY], "smollm2") as url:
        yield url


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"{server}/v1", api_key=KEY, max_retries=0, timeout=900)


def check_calls(message, *, at_most=None):
    calls = message.tool_calls or []
    assert calls, message
    if at_most is not None:
        assert len(calls) <= at_most
    for call in calls:
        assert call.type == "function" and call.id
        jsonschema.validate(json.loads(call.function.arguments), PARAMETERS[call.function.name])
    return calls


def test_json_schema_answer_parses_and_validates(client):
    answer = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Invent a person: a name and an age."}],
        response_format=person_format(),
        max_tokens=32,
        temperature=0.7,
        seed=1,
    )
    choice = answer.choices[0]
    jsonschema.validate(json.loads(choice.message.content), PERSON)
    assert choice.finish_reason in ("stop", "length")
    assert answer.usage.completion_tokens > 0 and answer.usage.prompt_tokens > 0


def test_json_object_answer_is_a_json_object(client):
    answer = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "A JSON object about a cat."}],
        response_format={"type": "json_object"},
        max_tokens=30,
        seed=2,
    )
    assert isinstance(json.loads(answer.choices[0].message.content), dict)


def test_tool_choice_required(client):
    answer = client.chat.completions.create(
        model="smollm2", messages=WEATHER_QUESTION, tools=TOOLS, tool_choice="required", max_tokens=96, seed=3
    )
    assert answer.choices[0].finish_reason == "tool_calls"
    check_calls(answer.choices[0].message)


def test_tool_choice_named(client):
    answer = client.chat.completions.create(
        model="smollm2",
        messages=WEATHER_QUESTION,
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_time"}},
        max_tokens=96,
        seed=4,
    )
    assert answer.choices[0].finish_reason == "tool_calls"
    assert {c.function.name for c in check_calls(answer.choices[0].message)} == {"get_time"}


def test_tool_choice_auto(client):
    answer = client.chat.completions.create(
        model="smollm2", messages=WEATHER_QUESTION, tools=TOOLS, tool_choice="auto", max_tokens=72, seed=5
    )
    choice = answer.choices[0]
    if choice.message.tool_calls:
        assert choice.finish_reason == "tool_calls"
        check_calls(choice.message)
    else:
        assert choice.finish_reason in ("stop", "length") and isinstance(choice.message.content, str)


def test_tool_choice_none(client):
    answer = client.chat.completions.create(
        model="smollm2", messages=WEATHER_QUESTION, tools=TOOLS, tool_choice="none", max_tokens=20, seed=6
    )
    choice = answer.choices[0]
    assert not choice.message.tool_calls and isinstance(choice.message.content, str)
    assert choice.finish_reason in ("stop", "length")


def test_parallel_tool_calls_false_gives_one_call(client):
    answer = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Weather in Paris and time in Tokyo?"}],
        tools=TOOLS,
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=96,
        seed=7,
    )
    check_calls(answer.choices[0].message, at_most=1)


def test_streamed_json_schema_answer_joins_into_a_valid_result(client):
    stream = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Invent a person: a name and an age."}],
        response_format=person_format(),
        max_tokens=32,
        seed=8,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    jsonschema.validate(json.loads(text), PERSON)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes in (["stop"], ["length"])
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_streamed_tool_calls_join_into_valid_calls(client):
    stream = client.chat.completions.create(
        model="smollm2",
        messages=WEATHER_QUESTION,
        tools=TOOLS,
        tool_choice="required",
        max_tokens=96,
        seed=9,
        stream=True,
    )
    calls: dict[int, dict] = {}
    finish = None
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        for part in delta.tool_calls or []:
            call = calls.setdefault(part.index, {"id": None, "name": None, "arguments": ""})
            if part.id:
                call["id"] = part.id
            if part.function and part.function.name:
                call["name"] = part.function.name
            if part.function and part.function.arguments:
                call["arguments"] += part.function.arguments
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls" and calls
    for call in calls.values():
        assert call["id"] and call["name"] in PARAMETERS
        jsonschema.validate(json.loads(call["arguments"]), PARAMETERS[call["name"]])


def test_unknown_format_is_a_bad_request_naming_the_keyword(client):
    schema = {"type": "object", "properties": {"when": {"type": "string", "format": "lunar-date"}}}
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="smollm2", messages=WEATHER_QUESTION, response_format=person_format(schema), max_tokens=20
        )
    assert "format" in info.value.message and "/properties/when" in info.value.message
    assert info.value.body["keyword"] == "format" and info.value.body["pointer"] == "/properties/when"
    with pytest.raises(openai.BadRequestError):  # the same for a streamed request: before any event
        client.chat.completions.create(
            model="smollm2", messages=WEATHER_QUESTION, response_format=person_format(schema), stream=True
        )


def test_unenforceable_tool_parameters_are_a_bad_request(client):
    parameters = {"type": "object", "properties": {"day": {"type": "string", "format": "lunar-date"}}}
    tool = {"type": "function", "function": {"name": "f", "parameters": parameters}}
    with pytest.raises(openai.BadRequestError, match="format"):
        client.chat.completions.create(model="smollm2", messages=WEATHER_QUESTION, tools=[tool], tool_choice="required")


def test_max_tokens_too_small_is_a_bad_request(client):
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="smollm2", messages=WEATHER_QUESTION, response_format=person_format(), max_tokens=2
        )


def test_output_changing_unknown_fields_are_refused(client):
    with pytest.raises(openai.BadRequestError, match="logit_bias"):
        client.chat.completions.create(model="smollm2", messages=WEATHER_QUESTION, logit_bias={"1": 5})
    with pytest.raises(openai.BadRequestError, match="guided_json"):
        client.chat.completions.create(model="smollm2", messages=WEATHER_QUESTION, extra_body={"guided_json": PERSON})


def test_unknown_model_is_not_found(client):
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4o", messages=WEATHER_QUESTION, max_tokens=5)


def test_wrong_api_key_is_401(server):
    wrong = openai.OpenAI(base_url=f"{server}/v1", api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model="smollm2", messages=WEATHER_QUESTION, max_tokens=5)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()


def test_models_endpoint(client):
    assert [m.id for m in client.models.list().data] == ["smollm2"]


# small, so that sixteen answers cost little model time: the test is about the queue
SMALL = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}


def test_sixteen_concurrent_requests_all_valid_and_the_server_stays_up(client, server):
    def ask(i: int):
        return client.chat.completions.create(
            model="smollm2",
            messages=[{"role": "user", "content": f"Is {i} a small number?"}],
            response_format=person_format(SMALL),
            max_tokens=16,
            seed=i,
            stream=(i % 4 == 0),
        )

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(ask, range(16)))
    for i, answer in enumerate(answers):
        if i % 4 == 0:
            text = "".join(c.choices[0].delta.content or "" for c in answer if c.choices)
        else:
            text = answer.choices[0].message.content
        jsonschema.validate(json.loads(text), SMALL)
    health = httpx.get(f"{server}/health", headers={"Authorization": f"Bearer {KEY}"}, timeout=30).json()
    assert health["status"] == "ok"
