"""The one place the translator reaches the scalar translators (strings, integers, numbers).

``strings.string_node`` and ``numbers.integer_node`` / ``numbers.number_node`` give the node of a
whole JSON token under the string / number keywords; until those modules exist the stand-ins of
:mod:`._scalar_stubs` (which refuse every constraint) are used. Bounds are handed over as ``int``
or exact ``Decimal`` values.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..grammar import ir
from .jsonvalue import fraction_to_python
from .model import NumberC

try:  # pragma: no cover - depends on which branch is merged
    from .strings import string_node as _string_node  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    from ._scalar_stubs import string_node as _string_node
try:  # pragma: no cover
    from .numbers import integer_node as _integer_node  # type: ignore[import-not-found]
    from .numbers import number_node as _number_node  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    from ._scalar_stubs import integer_node as _integer_node
    from ._scalar_stubs import number_node as _number_node

REAL_SCALARS = _string_node.__module__.endswith(".strings")


def string_node(
    *, min_length: int = 0, max_length: int | None = None, pattern: str | None = None, format: str | None = None, pointer: str = ""
) -> ir.Node:
    return _string_node(min_length=min_length, max_length=max_length, pattern=pattern, format=format, pointer=pointer)


def _py(f: Fraction | None) -> Any:
    return None if f is None else fraction_to_python(f)


def number_record_node(rec: NumberC, rules: dict[str, ir.Node]) -> ir.Node:
    """The token node of a number record (bounds already normalised by the algebra).

    ``multipleOf`` may need auxiliary (right-linear) rules; they are added to ``rules``."""
    lo, lo_ex = rec.lo if rec.lo is not None else (None, False)
    hi, hi_ex = rec.hi if rec.hi is not None else (None, False)
    kwargs = dict(
        minimum=_py(lo) if not lo_ex else None,
        exclusive_minimum=_py(lo) if lo_ex else None,
        maximum=_py(hi) if not hi_ex else None,
        exclusive_maximum=_py(hi) if hi_ex else None,
        multiple_of=_py(rec.multiple),
        pointer=rec.ptr,
    )
    fn = _integer_node if rec.integer else _number_node
    if REAL_SCALARS:
        return fn(rules=rules, **kwargs)
    return fn(**kwargs)
