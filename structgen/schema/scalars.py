"""The one place the translator reaches the scalar translators (strings, integers, numbers).

:func:`.strings.string_node` and :func:`.numbers.integer_node` / :func:`.numbers.number_node`
give the node of a whole JSON token under the string / number keywords. Unsatisfiable
combinations come back as "nothing" (``allow_empty``): a dead alternative the grammar clean-up
removes, not an error, since the rest of the schema may still allow other values. Bounds are
handed over as ``int`` or exact ``Decimal`` values.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..grammar import ir
from .jsonvalue import fraction_to_python
from .model import NumberC
from .numbers import integer_node, number_node
from .strings import string_node as _string_node


def string_node(
    *,
    min_length: int = 0,
    max_length: int | None = None,
    pattern: str | None = None,
    format: str | None = None,
    pointer: str = "",
    exact_formats: bool = False,
) -> ir.Node:
    return _string_node(
        min_length=min_length,
        max_length=max_length,
        pattern=pattern,
        format=format,
        pointer=pointer,
        allow_empty=True,
        exact_formats=exact_formats,
    )


def _py(f: Fraction | None) -> Any:
    return None if f is None else fraction_to_python(f)


def number_record_node(rec: NumberC, rules: dict[str, ir.Node], *, zero_fraction: bool = True) -> ir.Node:
    """The token node of a number record (bounds already normalised by the algebra).

    ``multipleOf`` may need auxiliary (right-linear) rules; they are added to ``rules``.
    ``zero_fraction`` false: integers without ``.0`` forms (draft-04 and draft-03)."""
    lo, lo_ex = rec.lo if rec.lo is not None else (None, False)
    hi, hi_ex = rec.hi if rec.hi is not None else (None, False)
    keywords: dict[str, Any] = dict(
        minimum=_py(lo) if not lo_ex else None,
        exclusive_minimum=_py(lo) if lo_ex else None,
        maximum=_py(hi) if not hi_ex else None,
        exclusive_maximum=_py(hi) if hi_ex else None,
        multiple_of=_py(rec.multiple),
        pointer=rec.ptr,
        rules=rules,
        allow_empty=True,
    )
    if rec.integer:
        return integer_node(**keywords, zero_fraction=zero_fraction)
    return number_node(**keywords)
