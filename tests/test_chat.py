"""chat(): each tool_choice mode, formats, thinking, streams, async and threads, bad input, on
scripted runtimes over a small byte vocabulary (no model: the scripted logits favour a target)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Literal

import pytest
from generation_support import ScriptedRuntime, byte_vocab
from pydantic import BaseModel

import structgen
from structgen import GenerationError, SchemaError, StructgenError
from structgen.chat import CallFormat, ChatDelta, call_format, detect_format, prepare_chat


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
    """Current weather in a city."""
    return {"city": city, "temperature": 21, "unit": unit}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Person(BaseModel):
    name: str
    age: int


TOOLS = [get_weather, add]
USER = [{"role": "user", "content": "hi"}]
ADD = '<tool_call>\n{"name": "add", "arguments": {"a": 40, "b": 2}}\n</tool_call>'
WEATHER = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lima", "unit": "celsius"}}\n</tool_call>'


@pytest.fixture(scope="module")
def vocab():
    return byte_vocab()


def run(vocab, script, **options):
    options.setdefault("seed", 0)
    options.setdefault("max_tokens", 200)
    return structgen.chat(ScriptedRuntime(vocab, script, noise=options.pop("noise", 1.0)), USER, **options)


# -- tool_choice ------------------------------------------------------------------------------


def test_auto_gives_a_typed_call(vocab):
    r = run(vocab, ADD, tools=TOOLS)
    assert r.finish_reason == "tool_calls" and r.content is None
    [call] = r.tool_calls
    assert call.name == "add" and call.arguments.a == 40 and call.invoke() == 42
    assert call.id.startswith("call_")
    assert r.message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": "add", "arguments": '{"a": 40, "b": 2}'}}
        ],
    }


def test_auto_gives_text(vocab):
    r = run(vocab, "Hello there.", tools=TOOLS)
    assert (r.content, r.tool_calls, r.finish_reason) == ("Hello there.", [], "stop")


def test_auto_text_then_a_call(vocab):
    r = run(vocab, "Let me add.\n" + ADD, tools=TOOLS)
    assert r.content == "Let me add." and [c.name for c in r.tool_calls] == ["add"]


def test_auto_is_text_or_valid_calls_never_a_broken_mix(vocab):
    for seed in range(6):
        r = run(vocab, "<tool_call>\n{oops", tools=TOOLS, seed=seed, noise=2.0)
        if r.tool_calls:
            assert r.finish_reason == "tool_calls"
        else:
            assert "<tool_call>" not in (r.content or "")


def test_required_always_calls(vocab):
    for seed in range(4):
        r = run(vocab, "I'd rather chat.", tools=TOOLS, tool_choice="required", seed=seed, noise=2.0)
        assert r.tool_calls and r.finish_reason == "tool_calls"
        assert all(c.name in ("add", "get_weather") for c in r.tool_calls)


def test_none_never_calls(vocab):
    r = run(vocab, ADD, tools=TOOLS, tool_choice="none")
    assert r.tool_calls == [] and r.content == ADD and r.finish_reason == "stop"


def test_named_tool_is_the_one_called(vocab):
    r = run(vocab, ADD, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    [call] = r.tool_calls
    assert call.name == "get_weather"


def test_parallel_calls_and_at_most_one(vocab):
    both = ADD + "\n" + WEATHER
    r = run(vocab, both, tools=TOOLS)
    assert [c.name for c in r.tool_calls] == ["add", "get_weather"]
    assert len({c.id for c in r.tool_calls}) == 2
    r = run(vocab, both, tools=TOOLS, parallel_tool_calls=False)
    assert [c.name for c in r.tool_calls] == ["add"]


def test_ids_are_stable_for_the_same_request(vocab):
    a, b = run(vocab, ADD, tools=TOOLS), run(vocab, ADD, tools=TOOLS)
    assert a.tool_calls[0].id == b.tool_calls[0].id


# -- response_format ---------------------------------------------------------------------------


def test_response_format_pydantic_and_openai_shapes(vocab):
    text = '{"name": "Ann", "age": 4}'
    assert run(vocab, text, response_format=Person).parsed == Person(name="Ann", age=4)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    r = run(vocab, '{"n": 7}', response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    assert r.parsed == {"n": 7} and r.content == '{"n": 7}'
    r = run(vocab, '{"any": [1]}', response_format={"type": "json_object"})
    assert r.parsed == {"any": [1]}


def test_response_format_with_auto_tools_may_still_call(vocab):
    r = run(vocab, ADD, tools=TOOLS, response_format=Person)
    assert [c.name for c in r.tool_calls] == ["add"] and r.parsed is None
    r = run(vocab, '{"name": "Bo", "age": 5}', tools=TOOLS, response_format=Person)
    assert r.parsed == Person(name="Bo", age=5) and not r.tool_calls


# -- formats ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fmt, script",
    [
        ("llama3", '{"name": "add", "parameters": {"a": 1, "b": 2}}'),
        ("mistral", '[TOOL_CALLS][{"name": "add", "arguments": {"a": 1, "b": 2}}]'),
        ("generic", '{"name": "add", "arguments": {"a": 1, "b": 2}}'),
        ("hermes", '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'),
    ],
)
def test_each_format_round_trips(vocab, fmt, script):
    r = run(vocab, script, tools=TOOLS, call_format=fmt)
    assert [(c.name, c.arguments_dict()) for c in r.tool_calls] == [("add", {"a": 1, "b": 2})]
    rendered = call_format(fmt).render_calls([{"name": "add", "arguments": {"a": 1, "b": 2}}])
    assert rendered.replace("<|python_tag|>", "") == script


def test_bare_formats_take_text_that_does_not_start_a_call(vocab):
    r = run(vocab, "Fine, thanks.", tools=TOOLS, call_format="llama3")
    assert r.content == "Fine, thanks." and not r.tool_calls


def test_format_detection_from_templates():
    assert detect_format("{% if tools %}<tool_call>{% endif %}").name == "hermes"
    assert detect_format("{{ '<|python_tag|>' }}").name == "llama3"
    assert detect_format("[AVAILABLE_TOOLS] [TOOL_CALLS]").name == "mistral"
    assert detect_format(None).name == "hermes"
    with pytest.raises(StructgenError, match="unknown call format"):
        call_format("nope")
    with pytest.raises(StructgenError, match="needs an 'open' marker"):
        CallFormat("x", "list")


# -- the prompt ---------------------------------------------------------------------------------


def test_the_default_tool_block_and_history_without_a_template(vocab):
    history = USER + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "3"},
    ]
    req = prepare_chat(ScriptedRuntime(vocab, "ok"), history, tools=TOOLS, tool_choice="required")
    text = req.prompt_text
    assert text.startswith("System: You can call the following tools.")
    assert '"name": "get_weather"' in text and "You must call at least one tool." in text
    assert '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>' in text
    assert "<tool_response>\n3\n</tool_response>" in text
    assert req.prompt_tokens == len(req.prompt_ids) > 0


class TemplatedRuntime(ScriptedRuntime):
    """A scripted runtime with a chat template that renders tools (as Qwen's does)."""

    chat_template = (
        "{% if tools %}<tools>{% for t in tools %}{{ t.function.name }};{% endfor %}</tools>\n{% endif %}"
        "{% for m in messages %}[{{ m.role }}]{{ m.content or '' }}"
        "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}</tool_call>"
        "{% endfor %}{% endif %}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    template_tokens = {"bos_token": "", "eos_token": ""}


def test_a_template_that_renders_tools_gets_them(vocab):
    history = USER + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
            ],
        }
    ]
    req = prepare_chat(TemplatedRuntime(vocab, ADD), history, tools=TOOLS)
    # trim_blocks, as transformers renders: the newline after a block tag is dropped
    assert req.prompt_text.startswith("<tools>get_weather;add;</tools>\n[user]hi[assistant]")
    assert '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>' in req.prompt_text
    assert req.call_format.name == "hermes"
    assert req.run().tool_calls[0].name == "add"


# -- thinking ---------------------------------------------------------------------------------


def test_thinking_then_a_validated_answer(vocab):
    r = run(
        vocab, '<think>first the name</think>{"name": "Ann", "age": 4}', response_format=Person, thinking={"budget": 40}
    )
    assert r.reasoning == "first the name" and r.parsed == Person(name="Ann", age=4)
    assert 0 < r.reasoning_tokens <= 40


def test_thinking_is_closed_at_its_budget(vocab):
    long = "<think>" + "very long thoughts " * 20 + "</think>" + '{"name": "Ann", "age": 4}'
    r = run(vocab, long, response_format=Person, thinking={"budget": 24})
    assert r.reasoning_tokens <= 24 and r.parsed is not None
    assert len(r.reasoning or "") < 24


def test_thinking_budget_too_small_is_refused_before_the_model(vocab):
    rt = ScriptedRuntime(vocab, "x")
    with pytest.raises(GenerationError, match="no valid reasoning fits"):
        prepare_chat(rt, USER, thinking={"budget": 4})
    assert rt.starts == 0


# -- streams ----------------------------------------------------------------------------------


def _joined(deltas: list[ChatDelta]):
    content = "".join(d.content or "" for d in deltas)
    reasoning = "".join(d.reasoning or "" for d in deltas)
    calls: dict[int, dict] = {}
    for d in deltas:
        if d.tool_call_index is not None:
            c = calls.setdefault(d.tool_call_index, {"id": None, "name": None, "arguments": ""})
            c["id"] = c["id"] or d.tool_call_id
            c["name"] = c["name"] or d.tool_call_name
            c["arguments"] += d.arguments or ""
    return content, reasoning, [calls[i] for i in sorted(calls)]


@pytest.mark.parametrize("script", [ADD + "\n" + WEATHER, "Some text.", "Let me see.\n" + ADD])
def test_stream_deltas_join_into_the_result(vocab, script):
    stream = prepare_chat(ScriptedRuntime(vocab, script), USER, tools=TOOLS, seed=0, max_tokens=200).stream()
    deltas = list(stream)
    content, _, calls = _joined(deltas)
    result = stream.result
    assert content == (result.content or "")
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in calls] == [
        (c.id, c.name, c.arguments_dict()) for c in result.tool_calls
    ]
    assert all(sum(x is not None for x in (d.content, d.reasoning, d.tool_call_index)) == 1 for d in deltas)


def test_stream_of_reasoning(vocab):
    stream = prepare_chat(
        ScriptedRuntime(vocab, "<think>a plan</think>Done."), USER, thinking={"budget": 30}, seed=0
    ).stream()
    content, reasoning, _ = _joined(list(stream))
    assert (reasoning, content) == ("a plan", "Done.") == (stream.result.reasoning, stream.result.content)


# -- threads and async --------------------------------------------------------------------------


def test_threads_on_one_runtime_are_serialised(vocab):
    rt = ScriptedRuntime(vocab, ADD, overlap=True)
    results, errors = [], []

    def work():
        try:
            results.append(structgen.chat(rt, USER, tools=TOOLS, seed=0, max_tokens=200))
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 4
    assert all(r.tool_calls[0].invoke() == 42 for r in results)


def test_ten_concurrent_achat_calls(vocab):
    rt = ScriptedRuntime(vocab, ADD, overlap=True)

    async def main():
        return await asyncio.gather(
            *(structgen.achat(rt, USER, tools=TOOLS, seed=i, max_tokens=200) for i in range(10))
        )

    results = asyncio.run(main())
    assert len(results) == 10 and all(r.tool_calls and r.tool_calls[0].name == "add" for r in results)


def test_async_stream(vocab):
    async def main():
        return [d async for d in structgen.achat_stream(ScriptedRuntime(vocab, "Hi."), USER, seed=0)]

    deltas = asyncio.run(main())
    assert "".join(d.content or "" for d in deltas) == "Hi."


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "not one of the tools"),
        ({"tool_choice": "sometimes"}, "tool_choice must be"),
        ({"response_format": {"type": "xml"}}, "unknown response_format type"),
        ({"response_format": {"type": "json_schema"}}, "json_schema"),
        ({"thinking": {"budget": 0}}, "thinking budget"),
        ({"thinking": "lots"}, "thinking must be"),
        ({"parallel_tool_calls": "yes"}, "parallel_tool_calls"),
        ({"call_format": "klingon"}, "unknown call format"),
    ],
)
def test_bad_options_are_refused_before_the_model(vocab, kwargs, match):
    rt = ScriptedRuntime(vocab, "x")
    with pytest.raises(StructgenError, match=match):
        prepare_chat(rt, USER, tools=TOOLS, **kwargs)
    assert rt.starts == 0


@pytest.mark.parametrize(
    "messages",
    [
        "hi",
        [],
        [{"content": "x"}],
        [{"role": "user", "content": 3}],
        [{"role": "user"}],
        # a JSON "\ud800" escape decodes to a lone surrogate, which no tokenizer encodes (a 500 in
        # the server before)
        [{"role": "user", "content": "a \ud800 b"}],
        [{"role": "user", "content": [{"type": "text", "text": "\udc00"}]}],
        [
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [{"function": {"name": "add", "arguments": {"a\ud800": 1}}}]},
        ],
    ],
)
def test_bad_messages(vocab, messages):
    with pytest.raises(StructgenError, match="message"):
        prepare_chat(ScriptedRuntime(vocab, "x"), messages)


def test_a_tool_that_cannot_be_enforced_names_the_keyword(vocab):
    tool = {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {"type": "object", "properties": {"x": {"type": "string", "format": "no-such-format"}}},
        },
    }
    with pytest.raises(SchemaError) as e:
        prepare_chat(ScriptedRuntime(vocab, "x"), USER, tools=[tool])
    assert e.value.keyword == "format" and "/x" in e.value.pointer


def test_a_budget_no_call_fits_is_refused(vocab):
    with pytest.raises(GenerationError, match="no valid answer fits"):
        prepare_chat(ScriptedRuntime(vocab, "x"), USER, tools=TOOLS, tool_choice="required", max_tokens=10)


def test_a_template_that_fails_is_a_structgen_error(vocab):
    class Broken(ScriptedRuntime):
        chat_template = "{{ raise_exception('roles must alternate') }}"

    with pytest.raises(StructgenError, match="roles must alternate"):
        prepare_chat(Broken(vocab, "x"), USER)


# -- typed partials -----------------------------------------------------------------------------


def test_chat_partials_grow_to_the_validated_arguments(vocab):
    stream = prepare_chat(ScriptedRuntime(vocab, WEATHER), USER, tools=TOOLS, seed=0, max_tokens=200).stream()
    items = list(stream.partials())
    assert items[-1].value == stream.result.tool_calls[0].arguments
    cities = [p.value.city for p in items if p.tool_call_index == 0]
    assert cities[0] is None or cities[0] == "Lima"
    assert cities[-1] == "Lima" and all(p.name == "get_weather" for p in items)


def test_response_format_partials(vocab):
    text = '{"name": "Ann", "age": 4}'
    stream = prepare_chat(ScriptedRuntime(vocab, text), USER, response_format=Person, seed=0).stream()
    values = [p.value for p in stream.partials()]
    assert isinstance(values[0], Person) and values[-1] == Person(name="Ann", age=4)
    assert [v.name for v in values].index("Ann") <= [v.age for v in values].index(4)


def test_generate_stream_partials(vocab):
    values = list(structgen.stream(ScriptedRuntime(vocab, '{"name": "Bo", "age": 7}'), Person, "p", seed=0).partials())
    assert values[-1] == Person(name="Bo", age=7) and len(values) >= 2


def test_smollm2_format_lists_calls_in_one_block(vocab):
    calls = '{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "add", "arguments": {"a": 3, "b": 4}}'
    script = f"<tool_call>[{calls}]</tool_call>"
    r = run(vocab, script, tools=TOOLS, call_format="smollm2")
    assert [c.arguments_dict() for c in r.tool_calls] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    r = run(vocab, "<tool_call>[]</tool_call>", tools=TOOLS, call_format="smollm2")
    assert r.tool_calls == [] and r.content is None and r.finish_reason == "stop"
    req = prepare_chat(ScriptedRuntime(vocab, "x"), USER, tools=TOOLS, call_format="smollm2")
    assert "<tools>{" in req.prompt_text and "</tools>" in req.prompt_text
    assert detect_format(None, "smollm2").name == "smollm2"


def test_a_lone_surrogate_in_a_tool_description_is_refused(vocab):
    # the template prints descriptions; the tokenizer raised UnicodeEncodeError on them
    for fn in ({"name": "f", "description": "bad \ud800"}, {"name": "f", "parameters": {"description": "\udc00"}}):
        with pytest.raises(StructgenError, match="lone surrogate"):
            prepare_chat(ScriptedRuntime(vocab, "x"), USER, tools=[{"type": "function", "function": fn}])


def test_malformed_tool_parameters_are_refused_before_the_prompt_is_rendered(vocab):
    # the default system block reads the schema to write an example call: it must not be the one
    # to find out that `properties` is not an object
    for params in ({"type": None, "properties": True}, {"type": "object", "properties": [1]}):
        tool = {"type": "function", "function": {"name": "f", "parameters": params}}
        with pytest.raises(StructgenError):
            prepare_chat(ScriptedRuntime(vocab, "x"), USER, tools=[tool])
