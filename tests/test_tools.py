"""Tool definitions, the call schema, parsing and dispatch; the agent loop with a scripted runtime."""

from __future__ import annotations

import enum
import json
from typing import Annotated, Callable, Literal

import jsonschema
import pytest
from generation_support import ScriptedRuntime, byte_vocab
from pydantic import BaseModel, Field

from structgen import GenerationError, StructgenError
from structgen.agent import run_agent
from structgen.tools import FINAL_ANSWER, FinalAnswer, Tool, ToolCall, ToolDefinitionError, ToolSet


class Unit(str, enum.Enum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


def get_weather(city: str, unit: Unit = Unit.celsius) -> dict:
    """Current weather in a city.

    Args:
        city: The city, e.g. "Paris".
        unit: Temperature unit.
    """
    return {"city": city, "temperature": 21 if unit is Unit.celsius else 70, "unit": unit.value}


def add(a: int, b: int, /) -> int:
    """Add two integers.

    :param a: the first
    :param b: the second
    """
    return a + b


class Address(BaseModel):
    street: str
    city: str


class CreateContact(BaseModel):
    """Create a contact in the address book."""

    name: str
    address: Address
    tags: list[str] = []


def _validate(schema: dict, instance: object) -> None:
    jsonschema.Draft202012Validator(schema).validate(instance)


# -- definitions ----------------------------------------------------------------------------


def test_tool_from_function():
    tool = Tool.from_function(get_weather)
    assert tool.name == "get_weather"
    assert tool.description == "Current weather in a city."
    props = tool.parameters["properties"]
    assert props["city"]["description"] == 'The city, e.g. "Paris".'
    assert props["unit"]["description"] == "Temperature unit."
    assert tool.parameters["required"] == ["city"]


def test_rest_docstring_and_positional_only():
    tool = Tool.from_function(add)
    assert tool.parameters["properties"]["a"]["description"] == "the first"
    assert tool.positional == ("a", "b")
    call = ToolCall(tool, tool.validate_arguments({"a": 2, "b": 40}))
    assert call.invoke() == 42


def _star_args(*values: int) -> int:
    return sum(values)


def _star_kwargs(**options: str) -> None:
    return None


def _unannotated(x, y: int) -> int:  # noqa: ANN001
    return y


class Opaque:
    pass


def _opaque(thing: Opaque) -> None:
    return None


def _callable_param(fn: Callable[[int], int]) -> int:
    return fn(1)


@pytest.mark.parametrize(
    ("fn", "parameter"),
    [
        (_star_args, "values"),
        (_star_kwargs, "options"),
        (_unannotated, "x"),
        (_opaque, "thing"),
        (_callable_param, "fn"),
    ],
)
def test_signatures_that_cannot_become_a_schema(fn, parameter):
    with pytest.raises(ToolDefinitionError) as e:
        Tool.from_function(fn)
    assert e.value.tool == fn.__name__
    assert e.value.parameter == parameter
    assert fn.__name__ in str(e.value)


def test_callable_object_and_method_tools():
    class Counter:
        def __init__(self) -> None:
            self.total = 0

        def __call__(self, step: int = 1) -> int:
            """Count up."""
            self.total += step
            return self.total

        def reset(self, to: int) -> int:
            """Reset the counter."""
            self.total = to
            return to

    counter = Counter()
    tool = Tool.from_function(counter, name="count")
    assert list(tool.parameters["properties"]) == ["step"] and tool.description == "Count up."
    assert ToolCall(tool, tool.validate_arguments({"step": 3})).invoke() == 3
    reset = Tool.from_function(counter.reset)
    assert reset.name == "reset" and list(reset.parameters["properties"]) == ["to"]
    assert ToolCall(reset, reset.validate_arguments({"to": 9})).invoke() == 9 and counter.total == 9


def test_bad_tool_names():
    with pytest.raises(ToolDefinitionError):
        Tool.from_function(get_weather, name="has space")
    with pytest.raises(ToolDefinitionError, match="reserved"):
        ToolSet([Tool.from_function(get_weather, name=FINAL_ANSWER)])
    with pytest.raises(ToolDefinitionError, match="two tools"):
        ToolSet([get_weather, Tool.from_function(add, name="get_weather")])


def test_tool_from_model_and_dispatch():
    seen = []
    tool = Tool.from_model(CreateContact, fn=seen.append)
    assert tool.name == "CreateContact" and tool.description == "Create a contact in the address book."
    args = tool.validate_arguments({"name": "Ann", "address": {"street": "1 Main St", "city": "Oslo"}})
    ToolCall(tool, args).invoke()
    assert seen == [args] and isinstance(args.address, Address)


def test_model_tool_without_a_function():
    tool = Tool.from_model(Address)
    with pytest.raises(StructgenError, match="no function"):
        ToolCall(tool, tool.validate_arguments({"street": "s", "city": "c"})).invoke()

    class Ping(BaseModel):
        host: str

        def __call__(self) -> str:
            return f"pong from {self.host}"

    ping = Tool.from_model(Ping)
    assert ToolCall(ping, ping.validate_arguments({"host": "h"})).invoke() == "pong from h"


OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["query"],
        },
    },
}


def test_tool_from_openai_definition():
    calls = []
    tool = Tool.from_openai(OPENAI_TOOL, fn=lambda **kw: calls.append(kw) or "ok")
    assert tool.name == "search" and tool.kind == "openai"
    args = tool.validate_arguments({"query": "structgen", "limit": 3})
    assert ToolCall(tool, args).invoke() == "ok" and calls == [{"query": "structgen", "limit": 3}]
    with pytest.raises(GenerationError):
        tool.validate_arguments({"query": "x", "limit": 0})
    inner = Tool.from_openai(OPENAI_TOOL["function"])
    assert inner.parameters == tool.parameters
    assert tool.to_openai()["function"]["name"] == "search"


def test_openai_definition_without_handler():
    toolset = ToolSet([OPENAI_TOOL])
    call = toolset.parse('{"name": "search", "arguments": {"query": "q"}}')
    with pytest.raises(StructgenError, match="handlers"):
        call.invoke()
    with_handler = ToolSet([OPENAI_TOOL], handlers={"search": lambda query, limit=10: [query] * 2})
    assert with_handler.parse('{"name": "search", "arguments": {"query": "q"}}').invoke() == ["q", "q"]


def test_bad_openai_definitions():
    with pytest.raises(ToolDefinitionError):
        Tool.from_openai({"type": "function", "function": {"description": "no name"}})
    with pytest.raises(ToolDefinitionError):
        Tool.from_openai({"name": "t", "parameters": "not a schema"})


@pytest.mark.parametrize("kind", ["string", "array", ["string", "null"], "integer"])
def test_parameters_that_are_not_an_object_are_refused(kind):
    # the model was let write `"arguments": "..."`, which no call format reads back
    with pytest.raises(ToolDefinitionError, match="must describe an object"):
        Tool.from_openai({"name": "t", "parameters": {"type": kind}})
    assert Tool.from_openai({"name": "t", "parameters": {"type": ["object", "null"]}}).name == "t"


# -- the call schema ------------------------------------------------------------------------


def test_call_schema_hoists_definitions():
    toolset = ToolSet([get_weather, CreateContact, OPENAI_TOOL], final_answer=str)
    schema = toolset.schema()
    assert len(schema["anyOf"]) == 4
    assert any(k.endswith(".Address") for k in schema["$defs"])
    _validate(schema, {"name": "CreateContact", "arguments": {"name": "A", "address": {"street": "s", "city": "c"}}})
    _validate(schema, {"name": "get_weather", "arguments": {"city": "Rome", "unit": "fahrenheit"}})
    _validate(schema, {"name": FINAL_ANSWER, "arguments": {"answer": "done"}})
    for bad in (
        {"name": "get_weather", "arguments": {"unit": "celsius"}},
        {"name": "CreateContact", "arguments": {"name": "A", "address": {"street": "s"}}},
        {"name": "nope", "arguments": {}},
        {"name": "search", "arguments": {"query": "x"}, "extra": 1},
    ):
        with pytest.raises(jsonschema.ValidationError):
            _validate(schema, bad)


def test_recursive_model_tool_schema():
    class Node(BaseModel):
        label: str
        children: list["Node"] = []

    schema = ToolSet([Tool.from_model(Node, fn=lambda n: n)]).schema()
    _validate(schema, {"name": "Node", "arguments": {"label": "a", "children": [{"label": "b", "children": []}]}})
    with pytest.raises(jsonschema.ValidationError):
        _validate(schema, {"name": "Node", "arguments": {"label": "a", "children": [{"children": []}]}})


def test_parse_gives_typed_calls_and_final_answers():
    toolset = ToolSet([get_weather, add], final_answer=int)
    call = toolset.parse('{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "fahrenheit"}}')
    assert isinstance(call, ToolCall) and call.name == "get_weather"
    assert call.arguments.unit is Unit.fahrenheit
    assert call.invoke() == {"city": "Oslo", "temperature": 70, "unit": "fahrenheit"}
    assert json.loads(call.to_json()) == {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "fahrenheit"}}
    assert toolset.parse('{"name": "final_answer", "arguments": {"answer": 7}}') == FinalAnswer(7)
    for bad in (
        '{"name": "add"}',
        '{"name": "zzz", "arguments": {}}',
        "[]",
        "not json",
        '{"name": "add", "arguments": {"a": "x", "b": 1}}',
    ):
        with pytest.raises(GenerationError):
            toolset.parse(bad)


def test_only_and_describe():
    toolset = ToolSet([get_weather, add], final_answer=True)
    assert list(toolset.only(FINAL_ANSWER).tools) == [FINAL_ANSWER]
    text = toolset.describe()
    assert "get_weather(city: string, unit: " in text and "add(a: integer, b: integer)" in text
    assert [t["function"]["name"] for t in toolset.to_openai()] == ["get_weather", "add"]
    with pytest.raises(StructgenError):
        toolset.only("missing")


def test_annotated_parameters_keep_constraints():
    def book(nights: Annotated[int, Field(ge=1, le=14)], room: Literal["single", "double"]) -> str:
        """Book a room."""
        return f"{nights} {room}"

    tool = Tool.from_function(book)
    assert tool.parameters["properties"]["nights"]["maximum"] == 14
    with pytest.raises(GenerationError):
        tool.validate_arguments({"nights": 20, "room": "single"})


# -- generating calls (needs the JSON Schema translator) ------------------------------------


@pytest.fixture(scope="module")
def vocab():
    return byte_vocab()


def test_generate_returns_a_typed_call(vocab):
    from structgen.generate import generate

    script = '{"name": "get_weather", "arguments": {"city": "Lima", "unit": "celsius"}}'
    out = generate(ScriptedRuntime(vocab, script), [get_weather, add], "p", seed=0)
    assert isinstance(out, ToolCall) and out.arguments.city == "Lima"
    assert out.invoke()["temperature"] == 21


def test_generated_calls_are_always_valid(vocab):
    from structgen.generate import generate

    toolset = ToolSet([get_weather, add, CreateContact], final_answer=str)
    for seed in range(4):
        out = generate(
            ScriptedRuntime(vocab, "garbage", noise=2.0), toolset, "p", seed=seed, max_tokens=120, on_max_tokens="close"
        )
        assert isinstance(out, (ToolCall, FinalAnswer))


def test_run_agent_reaches_a_text_answer(vocab):
    def script(prompt: str) -> str:
        if "<tool_response>\n42" in prompt:
            return "The sum is 42."
        return '<tool_call>\n{"name": "add", "arguments": {"a": 40, "b": 2}}\n</tool_call>'

    run = run_agent(ScriptedRuntime(vocab, script), [get_weather, add], [{"role": "user", "content": "40+2?"}], seed=0)
    assert run.answer == "The sum is 42."
    assert [(c.name, r) for c, r in run.calls] == [("add", 42)]
    call, _ = run.calls[0]
    assert run.messages[-2] == {"role": "tool", "tool_call_id": call.id, "name": "add", "content": "42"}
    assert run.messages[-1] == {"role": "assistant", "content": "The sum is 42."}


def test_run_agent_last_step_can_only_answer(vocab):
    always_calls = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 1}}\n</tool_call>'
    run = run_agent(
        ScriptedRuntime(vocab, always_calls), [add], [{"role": "user", "content": "go"}], max_steps=3, seed=0
    )
    assert len(run.calls) == 2 and isinstance(run.answer, str)
