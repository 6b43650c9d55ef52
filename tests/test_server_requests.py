"""Request checking of the OpenAI-compatible server: every field used, accepted inert, or refused.

No model and no HTTP: :func:`check_chat_request` on bodies as the OpenAI client sends them.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette", reason="the server extra is not installed (pip install '.[server]')")

from structgen.server.config import ServerConfig  # noqa: E402
from structgen.server.errors import ApiError  # noqa: E402
from structgen.server.validation import check_chat_request, parse_body  # noqa: E402

CONFIG = ServerConfig(model_name="smollm2")
USER = [{"role": "user", "content": "hi"}]
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def check(**body):
    body.setdefault("messages", USER)
    return check_chat_request(body, CONFIG)


def refused(status: int = 400, **body) -> ApiError:
    with pytest.raises(ApiError) as info:
        check(**body)
    assert info.value.status == status
    return info.value


# -- bodies -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"{", "not JSON"),
        (b"[1, 2]", "JSON object, not an array"),
        (b'"text"', "not a string"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nests too deeply"),
    ],
)
def test_bodies_that_are_not_a_json_object_are_a_400(raw, words):
    with pytest.raises(ApiError) as info:
        parse_body(raw)
    assert info.value.status == 400 and words in info.value.message


def test_error_body_has_openai_shape():
    error = refused(messages=USER, frequency_penalty=0.5)
    body = error.body()["error"]
    assert set(body) >= {"message", "type", "param", "code"}
    assert body["type"] == "invalid_request_error" and body["param"] == "frequency_penalty"


# -- fields -----------------------------------------------------------------------------------


def test_a_minimal_request():
    call = check(model="smollm2")
    assert call.prepare_kwargs == {"messages": USER, "max_tokens": CONFIG.default_max_tokens}
    assert not call.stream and not call.include_usage


def test_the_model_may_be_left_out_but_not_misnamed():
    assert check().prepare_kwargs["messages"] == USER
    error = refused(404, model="gpt-4o")
    assert error.code == "model_not_found" and "smollm2" in error.message


@pytest.mark.parametrize("name", ["logprobs_extra", "guided_json", "guided_regex", "response_schema", "best_of"])
def test_unknown_fields_are_refused_by_name(name):
    error = refused(**{name: 1})
    assert error.param == name and name in error.message


@pytest.mark.parametrize(
    "name, value",
    [("user", "u-1"), ("metadata", {"k": "v"}), ("store", False), ("service_tier", "auto"), ("prompt_cache_key", "x")],
)
def test_fields_that_cannot_change_the_output_are_accepted(name, value):
    assert "messages" in check(**{name: value}).prepare_kwargs


@pytest.mark.parametrize(
    "name, neutral, other",
    [
        ("frequency_penalty", 0, 0.5),
        ("presence_penalty", 0.0, -1),
        ("logprobs", False, True),
        ("top_logprobs", 0, 3),
        ("logit_bias", {}, {"42": 100}),
        ("modalities", ["text"], ["text", "audio"]),
        ("reasoning_effort", None, "high"),
        ("functions", None, [{"name": "f"}]),
    ],
)
def test_fields_that_change_the_output_are_accepted_only_at_their_neutral_value(name, neutral, other):
    check(**{name: neutral})
    assert refused(**{name: other}).param == name


def test_a_boolean_is_not_a_neutral_zero():
    refused(frequency_penalty=False)


def test_messages():
    refused(messages=None)
    refused(messages=[])
    refused(messages="hi")
    assert refused(messages=[{"role": "wizard", "content": "x"}]).param == "messages[0].role"
    assert refused(messages=[{"role": "user"}]).param == "messages[0].content"
    image = [{"type": "image_url", "image_url": {"url": "http://example.com/a.png"}}]
    assert "image_url" in refused(messages=[{"role": "user", "content": image}]).message
    assert refused(messages=[{"role": "tool", "content": "sunny"}]).param == "messages[0].tool_call_id"
    refused(messages=[{"role": "user", "content": "x", "tool_calls": []}])


def test_message_content_parts_and_the_developer_role():
    parts = [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}]
    call = check(messages=[{"role": "developer", "content": "Be brief."}, {"role": "user", "content": parts}])
    assert call.prepare_kwargs["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello, world"},
    ]


def test_an_agent_history_passes_through():
    history = USER + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    assert check(messages=history, tools=[TOOL]).prepare_kwargs["messages"] == history
    broken = history[:1] + [{"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {}}]}]
    refused(messages=broken)


def test_too_many_messages():
    refused(messages=USER * (CONFIG.max_messages + 1))


def test_tools_and_tool_choice():
    call = check(tools=[TOOL], tool_choice="required", parallel_tool_calls=False)
    assert call.prepare_kwargs["tools"] == [TOOL]
    assert call.prepare_kwargs["tool_choice"] == "required"
    assert call.prepare_kwargs["parallel_tool_calls"] is False
    assert call.schema_param == "tools"
    named = {"type": "function", "function": {"name": "get_weather"}}
    assert check(tools=[TOOL], tool_choice=named).prepare_kwargs["tool_choice"] == named
    for choice in ("none", "auto"):
        assert check(tools=[TOOL], tool_choice=choice).prepare_kwargs["tool_choice"] == choice
    refused(tools=[TOOL], tool_choice="sometimes")
    refused(tool_choice="required")
    refused(tool_choice=named)
    refused(tools=[TOOL], tool_choice={"type": "function"})
    refused(tools=[TOOL], parallel_tool_calls="yes")
    refused(tools=[{"type": "custom", "custom": {"name": "x"}}])
    refused(tools=[{"type": "function", "function": {"parameters": {}}}])
    refused(tools=TOOL)
    refused(tools=[TOOL] * (CONFIG.max_tools + 1))


def test_response_format():
    assert "response_format" not in check(response_format={"type": "text"}).prepare_kwargs
    assert check(response_format={"type": "json_object"}).prepare_kwargs["response_format"] == {"type": "json_object"}
    rf = {"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object"}, "strict": True}}
    call = check(response_format=rf)
    assert call.prepare_kwargs["response_format"] == rf and call.schema_param == "response_format"
    assert "json_schema" in refused(response_format={"type": "json_schema"}).message
    refused(response_format={"type": "json_schema", "json_schema": {"name": "p"}})
    refused(response_format={"type": "json_schema", "json_schema": {"schema": {}, "strict": "yes"}})
    assert "grammar" in refused(response_format={"type": "grammar"}).message
    refused(response_format="json")
    both = check(response_format=rf, tools=[TOOL])
    assert both.schema_param is None


def test_schemas_have_a_size_limit():
    small = ServerConfig(model_name="smollm2", max_schema_bytes=1000)
    big = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(200)}}
    rf = {"type": "json_schema", "json_schema": {"name": "big", "schema": big}}
    with pytest.raises(ApiError) as info:
        check_chat_request({"messages": USER, "response_format": rf}, small)
    assert info.value.code == "schema_too_large"
    tool = {"type": "function", "function": {"name": "f", "parameters": big}}
    with pytest.raises(ApiError) as info:
        check_chat_request({"messages": USER, "tools": [tool]}, small)
    assert info.value.code == "schema_too_large" and info.value.param == "tools[0]"


def test_max_tokens():
    assert check(max_tokens=7).prepare_kwargs["max_tokens"] == 7
    assert check(max_completion_tokens=9).prepare_kwargs["max_tokens"] == 9
    assert check(max_tokens=9, max_completion_tokens=9).prepare_kwargs["max_tokens"] == 9
    refused(max_tokens=9, max_completion_tokens=10)
    for bad in (0, -1, 1.5, True, "10"):
        refused(max_tokens=bad)


def test_sampling_fields():
    kwargs = check(temperature=0, top_p=0.5, seed=3, stop=["\n"]).prepare_kwargs
    assert kwargs["temperature"] == 0.0 and kwargs["top_p"] == 0.5 and kwargs["seed"] == 3 and kwargs["stop"] == ["\n"]
    assert check(stop="END").prepare_kwargs["stop"] == ["END"]
    for name, bad in [("temperature", 2.5), ("temperature", -1), ("temperature", True), ("top_p", 1.5)]:
        assert refused(**{name: bad}).param == name
    refused(seed=1.5)
    refused(seed=-1)  # numpy's generator takes no negative seed: a 400 here, not a 500 later
    refused(seed=2**64)
    refused(top_p=0)
    refused(stop=["a", "b", "c", "d", "e"])
    refused(stop=[""])
    assert check(n=1).prepare_kwargs["max_tokens"]
    assert refused(n=2).param == "n"


def test_streaming_fields():
    call = check(stream=True, stream_options={"include_usage": True})
    assert call.stream and call.include_usage
    assert check(stream=True).include_usage is False
    assert refused(stream_options={"include_usage": True}).param == "stream_options"
    refused(stream="yes")
    refused(stream=True, stream_options={"include_usage": "yes"})
    refused(stream=True, stream_options={"chunk_size": 4})


def test_structgen_options():
    kwargs = check(structgen={"thinking_budget": 64, "whitespace": "compact", "top_k": 5}).prepare_kwargs
    assert kwargs["thinking"] == {"budget": 64} and kwargs["top_k"] == 5
    assert check(structgen={"thinking_budget": 0}).prepare_kwargs["thinking"] is False
    assert check(structgen={"thinking": True}).prepare_kwargs["thinking"] is True
    assert check(structgen={"thinking": True, "thinking_budget": 8}).prepare_kwargs["thinking"] == {"budget": 8}
    refused(structgen={"thinking": "yes"})
    assert kwargs["schema_options"] == {"whitespace": "compact"}
    assert check(structgen={"strict": True, "indent": 4}).prepare_kwargs["schema_options"] == {
        "strict": True,
        "indent": 4,
    }
    for option, value in [("lenient", True), ("formats", "ignore"), ("one_of", "any_of")]:
        error = refused(structgen={option: value})
        assert error.param == f"structgen.{option}" and "refused" in error.message
    assert refused(structgen={"whitespace": "lots"}).param == "structgen.whitespace"
    assert refused(structgen={"thinking_budget": -1}).param == "structgen.thinking_budget"
    assert refused(structgen={"beam_width": 4}).code == "unknown_parameter"
    refused(structgen="fast")


# -- any body ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
field_names = st.sampled_from(
    ["model", "messages", "tools", "tool_choice", "response_format", "max_tokens", "stream", "stream_options", "stop"]
    + ["temperature", "top_p", "seed", "n", "structgen", "logprobs", "user", "parallel_tool_calls", "x"]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(field_names, json_values, max_size=6))
def test_any_json_body_is_accepted_or_an_api_error(body):
    raw = json.dumps(body).encode()
    try:
        call = check_chat_request(parse_body(raw), CONFIG)
    except ApiError as e:
        assert 400 <= e.status < 500 and e.message
        return
    assert call.prepare_kwargs["messages"] and call.prepare_kwargs["max_tokens"] >= 1
