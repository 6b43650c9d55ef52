"""Typed partial streams (structgen.partials): incremental JSON reading, typing, tools, bad input."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import pathlib
import re
import warnings
from enum import Enum
from typing import Any, Literal, Optional, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, RootModel
from typing_extensions import TypedDict

from structgen.errors import GenerationError, LimitError, StructgenError
from structgen.grammar import Grammar
from structgen.partials import (
    PartialCall,
    PartialJSONError,
    PartialReader,
    PartialsTuning,
    apartials,
    partials,
)
from structgen.tools import Tool, ToolCall, ToolSet

ANY_JSON: dict[str, Any] = {}  # the JSON Schema every value passes: plain data partials

# -- helpers ----------------------------------------------------------------------------------


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:])]


def extends(prev: Any, cur: Any, grow: bool) -> bool:
    """Whether ``cur`` shows everything ``prev`` shows (members added, lists longer, growing
    strings longer)."""
    if isinstance(prev, dict):
        return isinstance(cur, dict) and all(k in cur and extends(v, cur[k], grow) for k, v in prev.items())
    if isinstance(prev, list):
        return isinstance(cur, list) and len(prev) <= len(cur) and all(extends(p, c, grow) for p, c in zip(prev, cur))
    if isinstance(prev, str) and grow:
        return isinstance(cur, str) and cur.startswith(prev)
    return type(prev) is type(cur) and prev == cur


def read_all(chunks: list[str], output_type: Any, **options: Any) -> tuple[list[Any], Any, PartialReader]:
    reader = PartialReader(output_type, **options)
    seen = []
    for chunk in chunks:
        seen.extend(reader.feed(chunk))
    return seen, reader.finish(), reader


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=5),
    max_leaves=25,
)
json_layouts = st.sampled_from(
    [
        {},
        {"ensure_ascii": False},
        {"separators": (",", ":")},
        {"indent": 2},
        {"indent": "\t", "ensure_ascii": False},
    ]
)


# -- plain JSON: monotone sequences ending in the value -------------------------------------


@settings(max_examples=300, deadline=None)
@given(json_values, json_layouts, st.lists(st.integers(min_value=0), max_size=40), st.booleans())
def test_every_chunking_is_monotone_and_ends_in_the_value(value, layout, cuts, grow):
    text = json.dumps(value, **layout)
    seen, final, _ = read_all(split(text, cuts), ANY_JSON, grow_strings=grow)
    assert final == value and type(final) is type(value)
    for prev, cur in zip(seen, seen[1:]):
        assert prev != cur
        assert extends(prev, cur, grow)
    for partial in seen:
        assert extends(partial, value, grow)


@settings(max_examples=100, deadline=None)
@given(json_values, st.lists(st.integers(min_value=0), max_size=40), st.booleans())
def test_partials_already_returned_never_change(value, cuts, grow):
    reader = PartialReader(ANY_JSON, grow_strings=grow)
    kept = []
    for chunk in split(json.dumps(value), cuts):
        for partial in reader.feed(chunk):
            kept.append((partial, copy.deepcopy(partial)))
    reader.finish()
    assert all(partial == snapshot for partial, snapshot in kept)


@settings(max_examples=100, deadline=None)
@given(json_values, st.lists(st.integers(min_value=0), max_size=10))
def test_one_character_chunks_match_one_chunk(value, cuts):
    text = json.dumps(value)
    whole, final_whole, _ = read_all([text], ANY_JSON)
    pieces, final_pieces, _ = read_all(list(text), ANY_JSON)
    assert final_whole == final_pieces == value
    assert whole == []  # one chunk holds the whole value: nothing to show before the result
    assert all(extends(p, value, False) for p in pieces)


def test_values_appear_only_once_complete():
    steps = [
        ('{"a": 1', [{}]),  # an object shows once it opens
        ("2", []),
        (",", [{"a": 12}]),
        (' "b": tr', []),
        ("ue", [{"a": 12, "b": True}]),
        (', "c": "x', []),
        ('y"', [{"a": 12, "b": True, "c": "xy"}]),
        (', "d": [', [{"a": 12, "b": True, "c": "xy", "d": []}]),
        ("1.5e2 ", [{"a": 12, "b": True, "c": "xy", "d": [150.0]}]),
        ("]", []),  # closing a list shows nothing new
        ("}", []),  # the root is complete: the result comes from finish()
    ]
    reader = PartialReader(ANY_JSON)
    for chunk, expected in steps:
        assert reader.feed(chunk) == expected, chunk
    assert reader.finish() == {"a": 12, "b": True, "c": "xy", "d": [150.0]}


def test_a_number_at_the_root_ends_with_the_text():
    reader = PartialReader(int)
    assert reader.feed("12") == [] and reader.feed("3") == []
    assert reader.finish() == 123


# -- strings: growing, escapes, surrogates ----------------------------------------------------


def test_growing_strings_never_show_half_an_escape():
    reader = PartialReader(ANY_JSON, grow_strings=True)
    steps = [
        ('{"s": "a', [{"s": "a"}]),
        ("\\", []),
        ("u12", []),  # half an escape shows nothing
        ("34", [{"s": "a\u1234"}]),
        ("b\\", [{"s": "a\u1234b"}]),
        ('n"', [{"s": "a\u1234b\n"}]),
        (', "t": "\\ud83d', [{"s": "a\u1234b\n", "t": ""}]),  # the high surrogate waits for its low half
        ("\\ude00", [{"s": "a\u1234b\n", "t": "\U0001f600"}]),
        ("!", [{"s": "a\u1234b\n", "t": "\U0001f600!"}]),
        ('"}', []),
    ]
    for chunk, expected in steps:
        assert reader.feed(chunk) == expected, chunk
    assert reader.finish() == {"s": "a\u1234b\n", "t": "\U0001f600!"}


def test_strings_without_grow_strings_appear_whole():
    reader = PartialReader(ANY_JSON)
    shown = [p for chunk in ['["ab', "c\\u00", 'e9", "d', '"]'] for p in reader.feed(chunk)]
    assert shown == [[], ["abc\u00e9"]]
    assert reader.finish() == ["abc\u00e9", "d"]


def test_a_lone_surrogate_is_kept_as_json_loads_keeps_it():
    text = '["\\ud800x", "\\udc00", "\\ud800\\ud800"]'
    _, final, _ = read_all(list(text), ANY_JSON, grow_strings=True)
    assert final == json.loads(text)


def test_a_root_string_grows():
    seen, final, _ = read_all(['"he', "llo", '"'], str, grow_strings=True)
    assert seen == ["he", "hello"] and final == "hello"


@given(st.text(max_size=30), st.lists(st.integers(min_value=0), max_size=20), st.booleans())
@settings(max_examples=200, deadline=None)
def test_growing_strings_are_prefixes_of_the_decoded_string(s, cuts, ascii_only):
    text = json.dumps({"s": s}, ensure_ascii=ascii_only)
    seen, final, _ = read_all(split(text, cuts), ANY_JSON, grow_strings=True)
    assert final == {"s": s}
    assert all(s.startswith(p["s"]) for p in seen if "s" in p)


# -- typed partials -------------------------------------------------------------------------


class Color(str, Enum):
    red = "red"
    green = "green"


class Address(BaseModel):
    city: str
    zip: Optional[int] = None


class Person(BaseModel):
    name: str
    age: int = 0
    color: Color
    addresses: list[Address]
    nickname: Optional[str] = None
    tags: tuple[str, ...] = ()


PERSON = Person(
    name='Zoë "Z" O\'Neil',
    age=41,
    color=Color.green,
    addresses=[Address(city="Paris", zip=75001), Address(city="Québec")],
    nickname=None,
    tags=("a", "b"),
)


@pytest.mark.parametrize("grow", [False, True])
def test_a_model_streams_as_typed_instances(grow):
    text = PERSON.model_dump_json()
    seen, final, _ = read_all(list(text), Person, grow_strings=grow)
    assert final == PERSON and isinstance(final, Person)
    assert seen and all(isinstance(p, Person) for p in seen)
    first = seen[0]
    assert first.model_fields_set == set()
    assert (first.name, first.age, first.addresses, first.tags) == (None, None, None, None)  # defaults wait
    for p in seen:
        assert p.color in (None, Color.green)  # an enum never shows as a prefix
        assert all(a is None or isinstance(a, Address) for a in p.addresses or [])
        if p.addresses and len(p.addresses) == 2 and p.addresses[1].city is None:
            assert p.addresses[0] == Address(city="Paris", zip=75001)  # complete items are validated
    dumps = [dict(p.__dict__) for p in seen]
    for prev, cur in zip(dumps, dumps[1:]):
        assert all(cur[k] is not None for k, v in prev.items() if v is not None)
    names = [p.name for p in seen if p.name is not None]
    if grow:
        assert len(set(names)) > 2 and all(PERSON.name.startswith(n) for n in names)
    else:
        assert set(names) == {PERSON.name}
    assert seen[-1].tags == ("a", "b")  # the closed array is validated as a tuple


def test_fields_not_yet_written_are_none_and_not_in_fields_set():
    reader = PartialReader(Person)
    (p,) = reader.feed('{"name": "x", "age": 5, "addresses": [{"city": "A')
    assert p.name == "x" and p.age == 5 and p.color is None and p.tags is None
    assert p.model_fields_set == {"name", "age", "addresses"}
    assert p.addresses == [Address.model_construct(city=None, zip=None)]
    (q,) = reader.feed('"}')
    assert q.addresses == [Address(city="A")]  # complete: validated, its default filled
    assert q.addresses[0].model_fields_set == {"city"}


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: int


class Home(BaseModel):
    pet: Union[Cat, Dog] = Field(discriminator="kind")
    others: list[Union[Cat, Dog]] = []


def test_unions_pick_the_branch_that_fits_what_is_written():
    text = '{"pet": {"kind": "dog", "barks": 3}, "others": [{"kind": "cat", "meows": 1}, {"kind": "dog"'
    reader = PartialReader(Home)
    seen = [p for ch in text for p in reader.feed(ch)]
    pets = [p.pet for p in seen if p.pet is not None]
    assert isinstance(pets[-1], Dog) and pets[-1].barks == 3
    assert any(isinstance(pet, Dog) and pet.barks is None for pet in pets)  # open, after "kind"
    last = seen[-1]
    assert isinstance(last.others[0], Cat) and isinstance(last.others[1], Dog)
    reader.feed(', "barks": 0}]}')
    assert reader.finish() == Home(
        pet=Dog(kind="dog", barks=3), others=[Cat(kind="cat", meows=1), Dog(kind="dog", barks=0)]
    )


class Node(BaseModel):
    label: str
    children: list[Node] = []


def test_recursive_models_and_json_schema_nesting():
    tree = Node(label="r", children=[Node(label="a", children=[Node(label="b")]), Node(label="c")])
    seen, final, _ = read_all(list(tree.model_dump_json()), Node)
    assert final == tree
    assert all(isinstance(p, Node) for p in seen)
    deepest = [p for p in seen if p.children and p.children[0].children]
    assert deepest and isinstance(deepest[0].children[0].children[0], Node)


class Point(TypedDict):
    x: int
    when: str


@dataclasses.dataclass
class Pair:
    left: Color
    right: int


class Wrapped(RootModel[list[Address]]):
    pass


@pytest.mark.parametrize(
    "output_type, text, check",
    [
        (list[int], "[1, 2, 3]", lambda p: isinstance(p, list) and all(isinstance(x, int) for x in p)),
        (
            dict[str, Address],
            '{"a": {"city": "X"}, "b": {"city": "Y"}}',
            lambda p: all(isinstance(v, Address) for v in p.values()),
        ),
        (Point, '{"x": 1, "when": "now"}', lambda p: isinstance(p, dict)),
        (Pair, '{"left": "red", "right": 2}', lambda p: isinstance(p, dict) and p.get("left") in (None, Color.red)),
        (Wrapped, '[{"city": "A"}, {"city": "B"}]', lambda p: isinstance(p, Wrapped) and isinstance(p.root, list)),
        (tuple[int, str, Color], '[1, "s", "green"]', lambda p: isinstance(p, tuple)),
        (set[Color], '["red", "green"]', lambda p: all(isinstance(c, Color) for c in p)),
        (Optional[Address], '{"city": "Z"}', lambda p: isinstance(p, Address)),
    ],
)
def test_python_types_get_the_closest_partials(output_type, text, check):
    seen, final, _ = read_all(list(text), output_type, grow_strings=True)
    from pydantic import TypeAdapter

    assert final == TypeAdapter(output_type).validate_json(text)
    assert seen and all(check(p) for p in seen)


def test_a_completed_part_that_fails_validation_is_constructed():
    class Strict(BaseModel):
        n: int = Field(gt=100)

    class Outer(BaseModel):
        inner: Strict
        more: list[int]

    reader = PartialReader(Outer, parse=lambda text: "checked")
    shown = [p for ch in ['{"inner": {"n": 5}', ', "more": [1'] for p in reader.feed(ch)]
    assert isinstance(shown[-1].inner, Strict) and shown[-1].inner.n == 5
    reader.feed("]}")
    assert reader.finish() == "checked"  # the caller's validator decides the result


class Fragile(BaseModel):
    words: list[str]

    def model_post_init(self, context: Any) -> None:
        self.count = len(self.words)  # fails while words is None

    count: int = 0


def test_a_model_whose_own_code_fails_on_partial_data_shows_as_a_dict():
    reader = PartialReader(Fragile)
    shown = [p for ch in '{"words": ["a", "b"], "count": 2}' for p in reader.feed(ch)]
    assert shown[0] == {}  # model_post_init fails on words=None
    assert isinstance(shown[-1], Fragile) and shown[-1].words == ["a", "b"]
    assert reader.finish() == Fragile(words=["a", "b"])


def test_finish_validates_with_the_output_type_parser():
    reader = PartialReader(Person)
    reader.feed('{"name": "x", "color": "blue", "addresses": []}')
    with pytest.raises(GenerationError):
        reader.finish()


def test_finish_returns_the_callers_value():
    reader = PartialReader(Person)
    reader.feed(PERSON.model_dump_json())
    assert reader.finish(PERSON) is PERSON
    assert reader.finish() is PERSON  # again: the same result
    with pytest.raises(StructgenError):
        reader.feed(" ")


# -- tools ------------------------------------------------------------------------------------


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
    """Current weather in a city."""
    return {"city": city, "unit": unit}


CONVERT = {
    "type": "function",
    "function": {
        "name": "convert",
        "description": "Convert money.",
        "parameters": {
            "type": "object",
            "properties": {"amount": {"type": "number"}, "to": {"type": "string"}},
            "required": ["amount", "to"],
        },
    },
}


@pytest.mark.parametrize("grow", [False, True])
def test_a_tool_call_streams_typed_arguments(grow):
    tools = ToolSet([get_weather, CONVERT])
    text = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "fahrenheit"}}'
    seen, final, _ = read_all(list(text), tools, grow_strings=grow)
    args_model = tools.tools["get_weather"].args_model
    assert all(isinstance(p, PartialCall) and p.name == "get_weather" for p in seen)
    assert all(isinstance(p.arguments, args_model) for p in seen)
    assert seen[0].arguments.city is None
    assert [p.arguments.unit for p in seen].count("fahr") == 0  # a Literal never shows as a prefix
    assert final == PartialCall("get_weather", args_model(city="Paris", unit="fahrenheit"))
    cities = [p.arguments.city for p in seen if p.arguments.city]
    assert (len(set(cities)) > 1) == grow


def test_openai_tool_arguments_are_dicts_and_the_name_comes_first():
    tools = ToolSet([get_weather, CONVERT])
    text = '{"arguments": {"amount": 250, "to": "USD"}, "name": "convert"}'
    seen, final, _ = read_all(list(text), tools)
    assert seen == [PartialCall("convert", {"amount": 250, "to": "USD"})]  # nothing until the name is known
    assert final == PartialCall("convert", {"amount": 250, "to": "USD"})
    seen, _, _ = read_all(list('{"name": "convert", "arguments": {"amount": 250, "to": "USD"}}'), tools)
    assert seen[-1] == PartialCall("convert", {"amount": 250, "to": "USD"})


def test_arguments_of_a_native_call_and_another_arguments_key():
    tool = Tool.from_function(get_weather)
    seen, final, _ = read_all(list('{"city": "Rome"}'), tool)
    assert seen[0] == PartialCall("get_weather", tool.args_model.model_construct(city=None, unit=None))
    assert final == PartialCall("get_weather", tool.args_model(city="Rome"))
    llama = '{"name": "get_weather", "parameters": {"city": "Oslo"}}'
    _, final, _ = read_all(list(llama), [get_weather], arguments_key="parameters")
    assert final.arguments.city == "Oslo"


def test_a_list_of_calls_streams_as_lists_of_calls():
    tools = ToolSet([get_weather, CONVERT])
    weather = tools.tools["get_weather"].args_model
    text = json.dumps(
        [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "nope", "arguments": {}},
            {"name": "convert", "arguments": {"amount": 1, "to": "EUR"}},
        ]
    )
    reader = PartialReader(tools, call_list=True, grow_strings=True)
    seen = [p for ch in text for p in reader.feed(ch)]
    assert seen[0] == []
    assert all(isinstance(c, PartialCall) for p in seen for c in p)
    assert seen[-1] == [
        PartialCall("get_weather", weather(city="Paris")),  # complete: validated, default filled
        PartialCall("convert", {"amount": 1, "to": "EUR"}),  # an unknown tool's call shows nothing
    ]
    with pytest.raises(GenerationError):
        reader.finish()  # "nope" is not a tool
    good = text.replace('{"name": "nope", "arguments": {}}, ', "")
    _, final, _ = read_all(list(good), tools, call_list=True)
    assert final == [
        PartialCall("get_weather", weather(city="Paris")),
        PartialCall("convert", {"amount": 1, "to": "EUR"}),
    ]
    reader = PartialReader(tools, call_list=True)
    reader.feed(good)
    calls = [tools.parse(json.dumps(c)) for c in json.loads(good)]
    assert reader.finish(calls) == final
    with pytest.raises(StructgenError):
        PartialReader(Person, call_list=True)


def test_finish_takes_the_validated_call():
    tools = ToolSet([get_weather])
    text = '{"name": "get_weather", "arguments": {"city": "Rome"}}'
    call = tools.parse(text)
    assert isinstance(call, ToolCall)
    reader = PartialReader(tools)
    reader.feed(text)
    assert reader.finish(call) == PartialCall("get_weather", call.arguments)


def test_final_answer_and_unknown_tools():
    tools = ToolSet([get_weather], final_answer=True)
    text = '{"name": "final_answer", "arguments": {"answer": "hi"}}'
    _, final, _ = read_all(list(text), tools, grow_strings=True)
    assert final.name == "final_answer" and final.arguments.answer == "hi"
    reader = PartialReader(tools)
    assert reader.feed('{"name": "nope", "arguments": {"x": 1}}') == []
    with pytest.raises(GenerationError):
        reader.finish()


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, offset",
    [
        ('{"a": 1,}', 8),
        ("[1 2]", 3),
        ('{"a" 1}', 5),
        ("[01]", 3),
        ("[tru]", 4),
        ('"a\\x"', 3),
        ('"\\u12g4"', 5),
        ('"a\nb"', 2),
        ("[1] x", 4),
        ("@", 0),
        ("[-]", 2),
    ],
)
def test_malformed_text_raises_a_partial_json_error_with_the_offset(text, offset):
    reader = PartialReader(ANY_JSON)
    with pytest.raises(PartialJSONError) as caught:
        for ch in text:
            reader.feed(ch)
    assert caught.value.position == offset
    assert isinstance(caught.value, GenerationError)
    with pytest.raises(PartialJSONError):  # the reader stays failed
        reader.feed("1")


def test_text_that_ends_early_fails_at_finish():
    reader = PartialReader(ANY_JSON)
    reader.feed('{"a": [1, 2')
    with pytest.raises(PartialJSONError, match="ends before"):
        reader.finish()


def test_bad_arguments_and_output_types():
    with pytest.raises(StructgenError):
        PartialReader(ANY_JSON).feed(b"{}")  # type: ignore[arg-type]
    with pytest.raises(StructgenError):
        PartialReader(Grammar.from_regex("a+"))
    with pytest.raises(StructgenError):
        PartialReader('{"type": "object"}')
    with pytest.raises(StructgenError):
        PartialReader(object())
    with pytest.raises(StructgenError):
        PartialReader(ANY_JSON, tuning=PartialsTuning(max_depth=0))


def test_nesting_past_the_tuning_is_a_limit_error():
    reader = PartialReader(ANY_JSON, tuning=PartialsTuning(max_depth=3))
    reader.feed("[[[")
    with pytest.raises(LimitError) as caught:
        reader.feed("[")
    assert caught.value.limit == "max_depth"
    deep = "[" * 10_000
    with pytest.raises(LimitError):
        PartialReader(ANY_JSON).feed(deep)


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list('{}[]",: 0123456789.eE+-truefalsn\\u/ab\n')), max_size=40),
    st.lists(st.integers(min_value=0), max_size=10),
    st.booleans(),
)
def test_any_text_raises_only_structgen_errors_and_agrees_with_json_loads(text, cuts, grow):
    reader = PartialReader(ANY_JSON, grow_strings=grow)
    try:
        for chunk in split(text, cuts):
            reader.feed(chunk)
        value = reader.finish()
    except StructgenError:
        return
    assert value == json.loads(text)


@settings(max_examples=100, deadline=None)
@given(json_values, st.lists(st.integers(min_value=0), max_size=10))
def test_hypothesis_values_typed_as_any(value, cuts):
    seen, final, _ = read_all(split(json.dumps(value), cuts), Any)
    assert final == value and all(extends(p, value, False) for p in seen)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([(Person, PERSON.model_dump_json()), (Home, '{"pet": {"kind": "cat", "meows": 2}, "others": []}')]),
    st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(list('{}[]",:0 1a\\u'))), max_size=4),
    st.lists(st.integers(min_value=0), max_size=10),
    st.booleans(),
)
def test_mutated_text_to_a_typed_reader_raises_only_structgen_errors(case, edits, cuts, grow):
    output_type, text = case
    for position, char in edits:  # insert, or replace where the character is a digit
        i = position % (len(text) + 1)
        text = text[:i] + char + text[i + (char.isdigit() and i < len(text)) :]
    reader = PartialReader(output_type, grow_strings=grow)
    try:
        for chunk in split(text, cuts):
            for partial in reader.feed(chunk):
                assert isinstance(partial, (output_type, list))  # an array where an object belongs: plain data
        reader.finish()
    except StructgenError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0), max_size=30), st.booleans())
def test_every_chunking_of_a_model_gives_a_growing_field_set(cuts, grow):
    text = PERSON.model_dump_json()
    seen, final, _ = read_all(split(text, cuts), Person, grow_strings=grow)
    assert final == PERSON
    for prev, cur in zip(seen, seen[1:]):
        assert prev.model_fields_set <= cur.model_fields_set
    for p in seen:
        for name in p.model_fields_set:
            value, expected = getattr(p, name), getattr(PERSON, name)
            if isinstance(value, (int, Color)) or (isinstance(value, str) and not grow):
                assert value == expected, name  # complete scalars are final
            elif isinstance(value, str):
                assert expected.startswith(value), name


# -- cost: counted, never timed -------------------------------------------------------------


def test_ten_thousand_one_character_chunks_of_a_long_array():
    text = json.dumps(list(range(2_300)))
    assert len(text) >= 10_000
    reader = PartialReader(list[int])
    for ch in text:
        before = reader.stats.scan_steps
        reader.feed(ch)
        assert reader.stats.scan_steps - before <= 2  # one character: at most two parser steps
    assert reader.finish() == list(range(2_300))
    assert reader.stats.scan_steps <= 2 * len(text)
    assert reader.stats.partials == 2_300  # the empty list, then one per completed item but the last


def test_complete_parts_are_shared_and_only_open_containers_are_copied():
    done = list(range(1_000))
    text = json.dumps({"done": done, "text": "x" * 5_000})
    reader = PartialReader(ANY_JSON, grow_strings=True)
    head = text.index('"text"')
    reader.feed(text[:head])
    first = reader.feed('"text": "')[0]
    copied = reader.stats.items_copied
    shown = []
    for ch in text[head + len('"text": "') : -2]:
        shown.extend(reader.feed(ch))
    assert len(shown) == 5_000
    assert all(p["done"] is first["done"] for p in shown)  # built once, shared by every partial
    assert reader.stats.items_copied - copied == 2 * 5_000  # each partial copies the root's 2 members
    reader.feed('"}')
    assert reader.finish() == {"done": done, "text": "x" * 5_000}


def test_a_long_string_without_grow_strings_builds_nothing_while_it_is_written():
    text = json.dumps({"s": "y" * 10_000})
    reader = PartialReader(ANY_JSON)
    results = [reader.feed(ch) for ch in text]
    assert [len(r) for r in results].count(1) == 2  # the empty object, then the complete string
    assert reader.stats.items_copied == 1
    assert reader.stats.scan_steps <= 2 * len(text)


# -- the helper and the docs ------------------------------------------------------------------


def test_partials_helper_yields_partials_then_the_result():
    text = '{"city": "Lyon", "zip": 69001}'
    out = list(partials(iter(text), Address))
    assert out[-1] == Address(city="Lyon", zip=69001) and isinstance(out[-1], Address)
    given_value = Address(city="Lyon", zip=69001)
    out = list(partials(iter(text), Address, final=lambda: given_value))
    assert out[-1] is given_value


def test_apartials_reads_an_async_stream():
    async def chunks():
        for ch in '{"city": "Lyon", "zip": 69001}':
            yield ch

    async def collect():
        return [p async for p in apartials(chunks(), Address, grow_strings=True)]

    out = asyncio.run(collect())
    assert [p.city for p in out[:4]] == [None, "", "L", "Ly"]
    assert out[-1] == Address(city="Lyon", zip=69001) and out[-1].model_fields_set == {"city", "zip"}


def test_partials_of_a_tuple_field_dump_without_warnings():
    reader = PartialReader(Person)
    (partial,) = reader.feed('{"name": "x", "tags": ["a"')
    assert partial.tags == ("a",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert partial.model_dump()["tags"] == ("a",)


class CityReport(BaseModel):
    name: str
    country: str
    population: int
    landmarks: list[str]
    climate: Literal["hot", "mild", "cold"]


@pytest.mark.model
@pytest.mark.parametrize("grow", [False, True])
def test_a_real_stream_reads_into_typed_partials(smollm2_llama, grow):
    import structgen

    prompt = [{"role": "user", "content": "Describe Paris as JSON."}]
    stream = structgen.stream(smollm2_llama, CityReport, prompt, max_tokens=120, temperature=0.0)
    seen = list(partials(stream, CityReport, grow_strings=grow, final=lambda: stream.value))
    *shown, final = seen
    assert final is stream.value and isinstance(final, CityReport)
    assert len(shown) >= 3 and all(isinstance(p, CityReport) for p in shown)
    for prev, cur in zip(shown, shown[1:]):
        assert prev.model_fields_set <= cur.model_fields_set
    assert all(p.climate in (None, final.climate) for p in shown)
    _, again, _ = read_all([stream.result.text], CityReport)
    assert again == final


DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "partials.md"


def test_docs_page_runs():
    code = "\n".join(re.findall(r"^```python\n(.*?)^```", DOCS.read_text(encoding="utf-8"), re.S | re.M))
    assert code.strip()
    # dont_inherit: this module's `from __future__ import annotations` must not reach the page
    exec(compile(code, str(DOCS), "exec", dont_inherit=True), {"__name__": "docs_partials"})
