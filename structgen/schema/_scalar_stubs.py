"""Stand-ins for the scalar translators (``strings.py`` / ``numbers.py``) until they land.

They give the unconstrained JSON tokens and refuse every constraint, so that nothing is ever
accepted that a constraint would reject. The real modules replace them in :mod:`.scalars`.
"""

from __future__ import annotations

from typing import Any

from ..errors import SchemaError
from ..grammar import ir
from .json_text import any_string

_DIGIT = ir.CharClass(((0x30, 0x39),))
_INT = ir.seq(ir.opt(ir.lit("-")), ir.alt(ir.lit("0"), ir.seq(ir.CharClass(((0x31, 0x39),)), ir.star(_DIGIT))))
_FRAC = ir.seq(ir.lit("."), ir.plus(_DIGIT))
_EXP = ir.seq(ir.CharClass(((0x45, 0x45), (0x65, 0x65))), ir.opt(ir.CharClass(((0x2B, 0x2B), (0x2D, 0x2D)))), ir.plus(_DIGIT))


def _refuse(keyword: str, pointer: str) -> SchemaError:
    return SchemaError(f"{keyword} is not supported yet (scalar translator missing)", keyword=keyword, pointer=pointer)


def string_node(
    *, min_length: int = 0, max_length: int | None = None, pattern: str | None = None, format: str | None = None, pointer: str = ""
) -> ir.Node:
    if min_length:
        raise _refuse("minLength", pointer)
    if max_length is not None:
        raise _refuse("maxLength", pointer)
    if pattern is not None:
        raise _refuse("pattern", pointer)
    if format is not None:
        raise _refuse("format", pointer)
    return any_string()


def _no_bounds(pointer: str, **bounds: Any) -> None:
    names = {
        "minimum": "minimum",
        "maximum": "maximum",
        "exclusive_minimum": "exclusiveMinimum",
        "exclusive_maximum": "exclusiveMaximum",
        "multiple_of": "multipleOf",
    }
    for k, v in bounds.items():
        if v is not None:
            raise _refuse(names[k], pointer)


def integer_node(
    *,
    minimum: Any = None,
    maximum: Any = None,
    exclusive_minimum: Any = None,
    exclusive_maximum: Any = None,
    multiple_of: Any = None,
    pointer: str = "",
) -> ir.Node:
    _no_bounds(pointer, minimum=minimum, maximum=maximum, exclusive_minimum=exclusive_minimum,
               exclusive_maximum=exclusive_maximum, multiple_of=multiple_of)
    return _INT


def number_node(
    *,
    minimum: Any = None,
    maximum: Any = None,
    exclusive_minimum: Any = None,
    exclusive_maximum: Any = None,
    multiple_of: Any = None,
    pointer: str = "",
) -> ir.Node:
    _no_bounds(pointer, minimum=minimum, maximum=maximum, exclusive_minimum=exclusive_minimum,
               exclusive_maximum=exclusive_maximum, multiple_of=multiple_of)
    return ir.seq(_INT, ir.opt(_FRAC), ir.opt(_EXP))
