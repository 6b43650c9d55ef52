"""The output types and prompts the real-model tests generate, and the unconstrained baseline.

Each case pairs an output type with an instruction; the prompt also shows the JSON Schema (as a
user would), so the unconstrained run gets the same information the constrained one does.
"""

from __future__ import annotations

import datetime
import enum
import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, Field, TypeAdapter

from structgen.grammar import Grammar, ir
from structgen.tools import ToolSet


class Person(BaseModel):
    name: str = Field(max_length=40)
    age: int = Field(ge=0, le=120)


class Item(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-[0-9]{3}$")
    quantity: int = Field(ge=1, le=99)
    unit_price: float = Field(ge=0)


class Customer(BaseModel):
    name: str
    email: str = Field(pattern=r"^[a-z.]+@[a-z]+\.[a-z]{2,3}$")


class Order(BaseModel):
    order_id: int
    customer: Customer
    items: list[Item] = Field(min_length=1, max_length=3)


class Sentiment(str, enum.Enum):
    positive = "positive"
    negative = "negative"
    neutral = "neutral"


class Review(BaseModel):
    sentiment: Sentiment
    confidence: float = Field(ge=0, le=1)


class Circle(BaseModel):
    kind: Literal["circle"]
    radius: float = Field(gt=0)


class Rectangle(BaseModel):
    kind: Literal["rectangle"]
    width: float = Field(gt=0)
    height: float = Field(gt=0)


class Drawing(BaseModel):
    shape: Union[Circle, Rectangle] = Field(discriminator="kind")


class Tree(BaseModel):
    name: str
    children: list["Tree"] = []


class Event(BaseModel):
    title: str
    date: datetime.date
    location: Optional[str] = None


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Current weather in a city."""
    return {"city": city, "temperature": 18, "unit": unit}


def convert_currency(amount: float, source: str, target: str) -> float:
    """Convert an amount of money between currencies (three-letter codes)."""
    return round(amount * 1.1, 2)


def search_web(query: str) -> list[str]:
    """Search the web and return result titles."""
    return [f"About {query}"]


TOOLS = ToolSet([get_weather, convert_currency, search_web])

CODES_SCHEMA = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{4}$"},
        "nickname": {"type": "string", "minLength": 2, "maxLength": 8},
    },
    "required": ["code", "nickname"],
}

MEASURE_SCHEMA = {
    "type": "object",
    "properties": {
        "temperature": {"type": "number", "minimum": -50, "maximum": 60},
        "humidity": {"type": "integer", "minimum": 0, "maximum": 100},
        "station": {"type": "integer", "exclusiveMinimum": 0},
    },
    "required": ["temperature", "humidity", "station"],
}

STATUS_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "version": {"const": 2}, "note": {"type": ["string", "null"]}},
    "required": ["ok", "version", "note"],
}


@dataclass(frozen=True)
class Case:
    name: str
    output_type: Any
    instruction: str

    def schema(self) -> Any:
        if isinstance(self.output_type, dict):
            return self.output_type
        if isinstance(self.output_type, ToolSet):
            return self.output_type.schema()
        return TypeAdapter(self.output_type).json_schema()

    def messages(self) -> list[dict[str, str]]:
        schema = json.dumps(self.schema(), separators=(",", ":"))
        return [
            {
                "role": "user",
                "content": f"{self.instruction}\nReply with JSON only, following this JSON Schema:\n{schema}",
            }
        ]


CASES = [
    Case("person", Person, "Ann Lee is a 42-year-old nurse. Extract the person."),
    Case("order", Order, "Order 1182 by Bo Chen (bo.chen@example.com): 2 x ABC-123 at 4.50 and 1 x XYZ-900 at 12.00."),
    Case(
        "review_enum", Review, "Classify the sentiment of this review: 'The battery died after two days. Never again.'"
    ),
    Case("shape_union", Drawing, "Describe a circle of radius 2.5."),
    Case(
        "tool_union",
        TOOLS,
        "You can call get_weather, convert_currency or search_web. Call one tool for: what is the weather in Paris?",
    ),
    Case(
        "constrained_strings",
        CODES_SCHEMA,
        "Make up a product code (two capital letters and four digits) and a short nickname.",
    ),
    Case(
        "constrained_numbers",
        MEASURE_SCHEMA,
        "Weather station 7 reports 21.5 degrees and 64% humidity. Record the measurement.",
    ),
    Case("recursion", Tree, "Write the folder tree: src contains app and lib; lib contains utils."),
    Case(
        "enum_array",
        Annotated[list[Literal["red", "green", "blue"]], Field(min_length=1, max_length=3)],
        "Which of red, green and blue appear in the Italian flag?",
    ),
    Case("dates_optional", Event, "The team offsite is on 12 May 2025 in Lisbon. Extract the event."),
    Case("top_level_array", Annotated[list[Person], Field(max_length=3)], "List the people: Tom (30) and Ada (36)."),
    Case("map", dict[str, int], "Count the words: 'to be or not to be' as a map from word to count."),
    Case("const_nullable", STATUS_SCHEMA, "Report that the service is healthy, version 2, with no note."),
]


def any_text() -> Grammar:
    """Every byte string: generating with it is generating without a constraint."""
    return Grammar({"root": ir.star(ir.ByteClass(((0, 255),)))})


def parses(spec: Any, text: str) -> tuple[bool, bool]:
    """(the whole output is a valid value, a valid value can be cut out of it: the first JSON
    object or array in the text, e.g. inside a ```json fence)."""
    from structgen.errors import GenerationError

    def ok(t: str) -> bool:
        try:
            spec.parse(t)
            return True
        except GenerationError:
            return False

    strict = ok(text.strip())
    if strict:
        return True, True
    for m in re.finditer(r"[\[{]", text):
        depth_text = _balanced(text, m.start())
        if depth_text is not None and ok(depth_text):
            return False, True
    return False, False


def _balanced(text: str, start: int) -> str | None:
    """The bracketed JSON-like span starting at ``start`` (strings skipped), or None."""
    depth = 0
    in_string = escape = False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None
