"""Pydantic models and types: the JSON Pydantic writes is accepted, JSON it rejects is rejected."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid
from typing import Annotated, Literal, Optional, Union

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, TypeAdapter
from typing_extensions import TypedDict

from structgen.grammar import Grammar
from structgen.schema import type_schema, type_to_grammar


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"]
    name: str
    good: bool = True


class Address(BaseModel):
    street: str
    city: str
    zip: Optional[str] = None


class Person(BaseModel):
    name: str
    age: int
    email: Optional[str] = None
    addresses: list[Address] = []
    pet: Annotated[Union[Cat, Dog], Field(discriminator="kind")]
    other_pet: Union[Cat, Dog, None] = None
    color: Color = Color.RED
    priority: Priority = Priority.LOW
    tags: dict[str, int] = {}
    pair: tuple[int, str] = (0, "")


class Tree(BaseModel):
    value: int
    children: list["Tree"] = []


@dataclasses.dataclass
class Point:
    x: float
    y: float
    label: str = ""


class Movie(TypedDict):
    title: str
    year: int


PEOPLE = [
    Person(name="Ann", age=30, pet=Cat(kind="cat")),
    Person(
        name='Bob "B" Ö',
        age=-1,
        email="b@x.org",
        addresses=[Address(street="1 Rd", city="Z")],
        pet=Dog(kind="dog", name="Rex"),
        other_pet=Cat(kind="cat", lives=3),
        color=Color.GREEN,
        priority=Priority.HIGH,
        tags={"a": 1, "é": 2},
        pair=(5, "five"),
    ),
]


@pytest.fixture(scope="module")
def person_grammar() -> Grammar:
    return type_to_grammar(Person)


def test_valid_models_are_accepted(person_grammar: Grammar) -> None:
    for p in PEOPLE:
        assert person_grammar.matches(p.model_dump_json())
        assert person_grammar.matches(p.model_dump_json(indent=2))
        assert Person.model_validate_json(p.model_dump_json()) == p


def test_invalid_json_is_rejected(person_grammar: Grammar) -> None:
    good = json.loads(PEOPLE[1].model_dump_json())
    variants = [
        {k: v for k, v in good.items() if k != "name"},  # missing required
        {**good, "age": 1.5},  # wrong type
        {**good, "pet": {"kind": "cow"}},  # unknown discriminator
        {**good, "pet": {"kind": "dog"}},  # dog without name
        {**good, "color": "blue"},  # not an enum value
        {**good, "priority": 3},
        {**good, "pair": [1]},
        {**good, "tags": {"a": "x"}},
    ]
    for v in variants:
        text = json.dumps(v)
        with pytest.raises(pydantic.ValidationError):
            Person.model_validate_json(text)
        assert not person_grammar.matches(text), text
    # Pydantic's lax mode takes "30" for an int; the schema (and the grammar) do not
    assert not person_grammar.matches(json.dumps({**good, "age": "30"}))


def test_recursive_model() -> None:
    g = type_to_grammar(Tree)
    t = Tree(value=1, children=[Tree(value=2, children=[Tree(value=3)]), Tree(value=4)])
    assert g.matches(t.model_dump_json())
    assert not g.matches('{"value":1,"children":[{"children":[]}]}')


def test_other_types() -> None:
    cases = [
        (list[Person], [[p.model_dump(mode="json") for p in PEOPLE]], [[{"name": "x"}]]),
        (Literal["a", "b", 3], ["a", 3], ["c", 4]),
        (Optional[int], [None, 5], ["x", 1.5]),
        (Color, ["red"], ["RED"]),
        (Point, [{"x": 1.5, "y": -2, "label": "p"}], [{"x": 1}]),
        (Movie, [{"title": "T", "year": 1999}], [{"title": "T"}]),
        (dict[str, list[int]], [{"a": [1, 2]}], [{"a": [1.5]}]),
        (set[int], [[1, 2, 2]], [["x"], [1.5]]),
    ]
    for tp, good, bad in cases:
        g = type_to_grammar(tp)
        adapter = TypeAdapter(tp)
        for v in good:
            text = json.dumps(v)
            adapter.validate_json(text)
            assert g.matches(text), (tp, text)
        for v in bad:
            text = json.dumps(v)
            with pytest.raises(pydantic.ValidationError):
                adapter.validate_json(text)
            assert not g.matches(text), (tp, text)


def test_constrained_fields_and_formats() -> None:
    class Item(BaseModel):
        sku: Annotated[str, Field(pattern=r"^[A-Z]{3}-\d{3}$")]
        qty: Annotated[int, Field(ge=1, le=100)]
        price: Annotated[float, Field(gt=0)]
        note: Annotated[str, Field(max_length=5)] = ""
        when: datetime.datetime
        day: datetime.date
        ident: uuid.UUID

    g = type_to_grammar(Item)
    item = Item(
        sku="ABC-123",
        qty=5,
        price=9.99,
        when=datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        day=datetime.date(2024, 2, 29),
        ident=uuid.UUID(int=7),
    )
    assert g.matches(item.model_dump_json())
    good = json.loads(item.model_dump_json())
    for field, value in [
        ("sku", "abc-123"),
        ("qty", 0),
        ("qty", 101),
        ("price", 0),
        ("note", "toolong"),
        ("day", "2023-02-29"),
        ("day", "0000-01-01"),
        ("when", "2016-12-31T23:59:60Z"),
        ("ident", "not-a-uuid"),
    ]:
        text = json.dumps({**good, field: value})
        with pytest.raises(pydantic.ValidationError):
            Item.model_validate_json(text)
        assert not g.matches(text), text


def test_naive_datetime_is_refused() -> None:
    from pydantic import NaiveDatetime

    from structgen.errors import SchemaError

    with pytest.raises(SchemaError) as e:
        type_to_grammar(NaiveDatetime)
    assert e.value.keyword == "format"


def test_schema_adjustments() -> None:
    s = type_schema(set[bytes])
    assert "uniqueItems" not in json.dumps(s) and "binary" not in json.dumps(s)


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    name=_names,
    age=st.integers(-(10**6), 10**6),
    lives=st.integers(0, 9),
    use_dog=st.booleans(),
    tags=st.dictionaries(_names, st.integers(-5, 5), max_size=3),
)
def test_generated_models_round_trip(name: str, age: int, lives: int, use_dog: bool, tags: dict) -> None:
    g = _cached_person_grammar()
    pet = Dog(kind="dog", name=name) if use_dog else Cat(kind="cat", lives=lives)
    p = Person(name=name, age=age, pet=pet, tags=tags)
    assert g.matches(p.model_dump_json())
    bad = json.loads(p.model_dump_json())
    bad["age"] = str(age)
    assert not g.matches(json.dumps(bad))


_GRAMMAR: list[Grammar] = []


def _cached_person_grammar() -> Grammar:
    if not _GRAMMAR:
        _GRAMMAR.append(type_to_grammar(Person))
    return _GRAMMAR[0]
