"""The check that a schema given as Python data is JSON data, before anything reads it.

A schema arrives as ``json.loads`` output or as Python data built by hand or by a library. The
translator reads it as JSON: objects with string keys, arrays, strings, finite numbers, booleans
and null. Anything else would surface deep in the translation as a foreign exception, or as a
silent wrong result: a ``nan`` in ``enum`` (no JSON text has that value), an integer key in
``properties`` (JSON keys are strings), a lone surrogate in ``const`` or a property name (it has
no UTF-8 encoding, so no text can spell it), a tuple or a set where an array belongs, bytes, any
other object. :func:`check_json_data` walks the whole value once, without recursion, and raises
:class:`~structgen.errors.SchemaError` naming the JSON pointer of the first value that is not JSON.
The values of annotations that are never read (:data:`FREE_ANNOTATIONS`: ``default``,
``description``...) are not looked at; every other value is, subschemas and keyword values alike.

Numbers are bounded too: a number whose exact decimal needs more than
:data:`~structgen.schema.numbers.MAX_DIGITS` digits (``1e999999999``, a 5,000-digit integer) is
refused here, where its size is read off its exponent, instead of being expanded to an exact
fraction later (which takes minutes and gigabytes for ``1e999999999``).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from ..errors import SchemaError
from .numbers import MAX_DIGITS
from .subschema_keys import SCHEMA_ARRAY_KEYWORDS, SCHEMA_KEYWORDS, SCHEMA_MAP_KEYWORDS

#: Keywords of a schema object whose values are never read: free text and sample values, which
#: may hold what JSON cannot (a ``nan`` default Pydantic wrote) without harm.
FREE_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
)

#: Python types that are not JSON values but are close enough to be passed by mistake, with the
#: hint each error gives.
_HINTS: dict[type, str] = {
    tuple: "a JSON array is a list",
    set: "a JSON array is a list",
    frozenset: "a JSON array is a list",
    bytes: "a JSON string is a str",
    bytearray: "a JSON string is a str",
}


def pointer_display(path: tuple[Any, ...]) -> str:
    """The JSON pointer of ``path`` as printable text (a lone surrogate written as ``\\udXXX``)."""
    text = "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in path)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _keyword(path: tuple[Any, ...]) -> str | None:
    """The nearest object key above a value: the keyword that holds it, for the error."""
    for t in reversed(path):
        if isinstance(t, str):
            return t.encode("utf-8", "backslashreplace").decode("utf-8")
    return None


def _fail(message: str, path: tuple[Any, ...]) -> SchemaError:
    return SchemaError(message, keyword=_keyword(path), pointer=pointer_display(path))


def _lone_surrogate(s: str) -> str | None:
    """The first lone surrogate of ``s`` as ``U+XXXX``, or None if ``s`` has a UTF-8 encoding."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"U+{ord(s[e.start]):04X}"
    return None


def _int_too_wide(v: int) -> bool:
    bits = v.bit_length()
    if bits <= 3 * MAX_DIGITS:  # below 2**3000 < 10**904
        return False
    if bits > 4 * MAX_DIGITS:  # past 2**4000 > 10**1204; str() would also refuse past 4,300 digits
        return True
    return len(str(abs(v))) > MAX_DIGITS


def _decimal_too_wide(d: Decimal) -> bool:
    if d == 0:
        return False
    _sign, digits, exponent = d.as_tuple()
    top = d.adjusted()
    return len(digits) > MAX_DIGITS or max(top + 1, 1) + max(-int(exponent), 0) > MAX_DIGITS


def check_json_data(schema: Any) -> None:
    """Raise :class:`SchemaError` at the first part of ``schema`` that is not JSON data.

    Call :func:`~structgen.schema.jsonvalue.check_depth` first: this walk is iterative, but it
    visits every value, so its size is the schema's.
    """
    # (value, its path, whether it is in a schema position): free annotations are skipped only
    # where they are keywords of a schema object, not where they name a property
    stack: list[tuple[Any, tuple[Any, ...], bool]] = [(schema, (), True)]
    while stack:
        v, path, is_schema = stack.pop()
        if v is None or isinstance(v, bool):
            continue
        if isinstance(v, str):
            bad = _lone_surrogate(v)
            if bad is not None:
                raise _fail(f"the string has a lone surrogate ({bad}), which no UTF-8 text can spell", path)
        elif isinstance(v, int):
            if _int_too_wide(v):
                raise _fail(f"the integer has more than {MAX_DIGITS} digits", path)
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise _fail(f"{v!r} is not a JSON number (JSON numbers are finite)", path)
        elif isinstance(v, Decimal):
            if not v.is_finite():
                raise _fail(f"{v} is not a JSON number (JSON numbers are finite)", path)
            if _decimal_too_wide(v):
                raise _fail(f"the number needs more than {MAX_DIGITS} digits written out", path)
        elif isinstance(v, dict):
            _check_keys(v, path)
            for key, item in v.items():
                if not is_schema:
                    stack.append((item, path + (key,), False))
                elif key in FREE_ANNOTATIONS:
                    continue
                elif key in SCHEMA_MAP_KEYWORDS and isinstance(item, dict):
                    _check_keys(item, path + (key,))
                    stack.extend((sub, path + (key, name), True) for name, sub in item.items())
                elif key in SCHEMA_ARRAY_KEYWORDS and isinstance(item, list):
                    stack.extend((sub, path + (key, i), True) for i, sub in enumerate(item))
                else:
                    stack.append((item, path + (key,), key in SCHEMA_KEYWORDS))
        elif isinstance(v, list):
            stack.extend((item, path + (i,), False) for i, item in enumerate(v))
        else:
            hint = next((h for t, h in _HINTS.items() if isinstance(v, t)), None)
            raise _fail(f"a value of type {type(v).__name__} is not JSON" + (f" ({hint})" if hint else ""), path)


def _check_keys(obj: dict, path: tuple[Any, ...]) -> None:
    for key in obj:
        if not isinstance(key, str):
            raise _fail(f"the object key {key!r} is of type {type(key).__name__}; JSON object keys are strings", path)
        bad = _lone_surrogate(key)
        if bad is not None:
            shown = key.encode("utf-8", "backslashreplace").decode("utf-8")
            raise _fail(f'the object key "{shown}" has a lone surrogate ({bad}), which no UTF-8 text can spell', path)
