"""JSON values as JSON Schema compares them: numbers by value, objects without key order.

Schemas arrive as Python data (``json.loads`` output, possibly with ``Decimal`` numbers) or as JSON
text. Here: exact numbers (:func:`to_fraction`), a hashable canonical key for equality
(:func:`canon`: ``1`` equals ``1.0``, ``true`` does not equal ``1``, ``{"a":1,"b":2}`` equals
``{"b":2,"a":1}``), the JSON type name of a value, and a depth check that runs before anything
recurses into a value.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from ..errors import LimitError, SchemaError

Canon = tuple  # ("null",) | ("bool", b) | ("num", Fraction) | ("str", s) | ("arr", ...) | ("obj", frozenset)


def is_number(v: object) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def to_fraction(v: object) -> Fraction:
    """The exact value of a JSON number; a float counts as the decimal it prints as (``0.1``)."""
    if isinstance(v, bool) or not is_number(v):
        raise TypeError(f"not a number: {v!r}")
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("not a finite number")
        return Fraction(Decimal(repr(v)))
    assert isinstance(v, Decimal)
    if not v.is_finite():
        raise ValueError("not a finite number")
    return Fraction(v)


def json_type(v: object) -> str:
    """The JSON Schema type name of a value (``"integer"`` is reported as ``"number"``)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if is_number(v):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    raise TypeError(f"not a JSON value: {type(v).__name__}")


def check_depth(value: Any, limit: int, *, what: str = "value") -> None:
    """Raise LimitError if ``value`` nests lists/dicts deeper than ``limit`` (iterative)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            if d > limit:
                raise LimitError(f"{what} nests deeper than {limit} levels", limit="max_schema_depth", value=limit)
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            if d > limit:
                raise LimitError(f"{what} nests deeper than {limit} levels", limit="max_schema_depth", value=limit)
            stack.extend((x, d + 1) for x in v)


def canon(v: Any) -> Canon:
    """A hashable key equal for JSON-equal values (call :func:`check_depth` first on user data)."""
    if v is None:
        return ("null",)
    if isinstance(v, bool):
        return ("bool", v)
    if is_number(v):
        try:
            return ("num", to_fraction(v))
        except ValueError:
            raise SchemaError("non-finite number in a schema value", keyword=None, pointer="") from None
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, list):
        return ("arr", tuple(canon(x) for x in v))
    if isinstance(v, dict):
        return ("obj", frozenset((k, canon(x)) for k, x in v.items()))
    raise SchemaError(f"not a JSON value: {type(v).__name__}", keyword=None, pointer="")


def decimal_text(f: Fraction) -> tuple[bool, str, int]:
    """``(negative, digits, exponent)`` with ``|f| = int(digits) * 10**exponent``, digits minimal.

    Only for fractions with a finite decimal expansion (denominator 2^a 5^b), which all schema
    numbers are. ``0`` is ``(False, "0", 0)``.
    """
    if f == 0:
        return (False, "0", 0)
    neg = f < 0
    num, den = abs(f.numerator), f.denominator
    exp = 0
    while den != 1:
        if den % 10 == 0:
            den //= 10
        elif den % 2 == 0:
            den //= 2
            num *= 5
        elif den % 5 == 0:
            den //= 5
            num *= 2
        else:
            raise ValueError(f"{f} has no finite decimal expansion")
        exp -= 1
    digits = str(num)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    return (neg, stripped, exp)


def fraction_to_python(f: Fraction) -> int | Decimal:
    """An ``int`` for whole values, otherwise the exact ``Decimal``."""
    if f.denominator == 1:
        return int(f)
    neg, digits, exp = decimal_text(f)
    try:
        return Decimal(("-" if neg else "") + digits + f"E{exp}")
    except InvalidOperation:  # pragma: no cover - digits are always valid
        raise ValueError(f) from None
