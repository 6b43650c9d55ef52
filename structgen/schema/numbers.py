"""JSON Schema ``type: integer`` / ``type: number`` with their bounds and ``multipleOf``, as grammar nodes.

:func:`integer_node` and :func:`number_node` return the exact language of JSON number texts whose
value satisfies ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum`` and
``multipleOf``, compared as exact decimals (a schema float such as ``0.1`` is read as the decimal
it was written as, ``repr(0.1)``; pass :class:`decimal.Decimal` values to skip floats entirely).

Number forms accepted (JSON writes one value many ways; some ways make bounds non-regular):

* ``integer``: ``-?(0|[1-9][0-9]*)`` and the same with a zero fraction (``1.0``, ``-2.00``),
  which JSON Schema counts as integers from draft-06 on (``zero_fraction=False`` for draft-04
  and draft-03, where they are not integers). Departure: exponent forms (``1e2``, ``1.5E+1``) are
  rejected.
* ``number`` with no bound on a side of zero: every JSON spelling on that side.
* ``number`` with a bound on that side: plain decimals and normalised scientific notation
  (``[1-9](\\.[0-9]+)?[eE][+-]?[0-9]+``, which is what Python and JavaScript write), and every
  spelling of zero. Departure: other exponent forms (``12e3``, ``0.5e1``) are rejected there.
* ``multipleOf`` on a number: plain decimals only (departure: no exponent forms at all).

Unsatisfiable keywords (``minimum`` above ``maximum``, no multiple in range) raise
:class:`~structgen.errors.SchemaError`, or give :data:`ir.NOTHING` with ``allow_empty=True``
(what a translator wants inside ``anyOf`` or ``not``).

Most results are plain nodes. ``multipleOf`` values that are not powers of ten need a cyclic
automaton (divisibility by 3 has no finite expression); then the result is a reference to
right-linear rules, which are added to the ``rules`` mapping the caller passes. Their names are
derived from the constraint (``num_<hash>_<state>``), so equal constraints share rules and
different ones never collide; such a node must not be put inside an intersection or difference.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import MutableMapping
from decimal import Decimal, localcontext
from math import gcd

from .. import caches
from ..errors import LimitError, SchemaError
from ..grammar import ir
from ..grammar.cp_automata import dfa_rules, node_to_dfa
from .multiple_of import MAX_MULTIPLE_STATES, decompose, multiple_dfa, multiple_states, power_of_ten_texts
from .number_ranges import Bound, integer_in_range, number_in_range

#: Most digits a bound or ``multipleOf`` may have (integer and fraction parts together).
MAX_DIGITS = 1000

Number = int | float | Decimal
Rules = MutableMapping[str, ir.Node]


def to_decimal(value: object, keyword: str, pointer: str) -> Decimal:
    """A keyword value as an exact, finite decimal of bounded size."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise SchemaError(f"{keyword} must be a number, not {type(value).__name__}", keyword=keyword, pointer=pointer)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SchemaError(f"{keyword} must be finite", keyword=keyword, pointer=pointer)
        d = Decimal(repr(value))
    elif isinstance(value, int):
        if value.bit_length() > 3 * MAX_DIGITS + 16:
            raise SchemaError(f"{keyword} has more than {MAX_DIGITS} digits", keyword=keyword, pointer=pointer)
        d = Decimal(value)
    else:
        if not value.is_finite():
            raise SchemaError(f"{keyword} must be finite", keyword=keyword, pointer=pointer)
        d = value
    if d != 0:
        _sign, digits, exponent = d.normalize().as_tuple()
        top = d.adjusted()
        width = max(top + 1, 1) + max(-int(exponent), 0)
        if width > MAX_DIGITS or len(digits) > MAX_DIGITS:
            raise SchemaError(f"{keyword} has more than {MAX_DIGITS} digits", keyword=keyword, pointer=pointer)
    return d


def _bounds(
    minimum: Number | None,
    maximum: Number | None,
    exclusive_minimum: Number | None,
    exclusive_maximum: Number | None,
    pointer: str,
) -> tuple[Bound | None, Bound | None, str, str]:
    """The tightest lower and upper bounds, and the keywords that set them."""
    lower: Bound | None = None
    upper: Bound | None = None
    lower_kw = upper_kw = ""
    if minimum is not None:
        lower, lower_kw = (to_decimal(minimum, "minimum", pointer), False), "minimum"
    if exclusive_minimum is not None:
        v = to_decimal(exclusive_minimum, "exclusiveMinimum", pointer)
        if lower is None or v >= lower[0]:
            lower, lower_kw = (v, True), "exclusiveMinimum"
    if maximum is not None:
        upper, upper_kw = (to_decimal(maximum, "maximum", pointer), False), "maximum"
    if exclusive_maximum is not None:
        v = to_decimal(exclusive_maximum, "exclusiveMaximum", pointer)
        if upper is None or v <= upper[0]:
            upper, upper_kw = (v, True), "exclusiveMaximum"
    return lower, upper, lower_kw, upper_kw


def _empty(message: str, keyword: str, pointer: str, allow_empty: bool) -> ir.Node:
    if allow_empty:
        return ir.NOTHING
    raise SchemaError(message, keyword=keyword, pointer=pointer)


def _multiple(multiple_of: Number, pointer: str) -> Decimal:
    q = to_decimal(multiple_of, "multipleOf", pointer)
    if q <= 0:
        raise SchemaError("multipleOf must be greater than 0", keyword="multipleOf", pointer=pointer)
    return q


def integer_node(
    minimum: Number | None = None,
    maximum: Number | None = None,
    exclusive_minimum: Number | None = None,
    exclusive_maximum: Number | None = None,
    multiple_of: Number | None = None,
    pointer: str = "",
    *,
    rules: Rules | None = None,
    allow_empty: bool = False,
    zero_fraction: bool = True,
) -> ir.Node:
    """JSON texts of integers satisfying the keywords (see the module docstring for the forms);
    ``zero_fraction=False`` leaves out ``1.0`` forms (draft-04 and draft-03 count them as no integer)."""
    with localcontext() as ctx:
        ctx.prec = 3 * MAX_DIGITS
        lower, upper, lower_kw, upper_kw = _bounds(minimum, maximum, exclusive_minimum, exclusive_maximum, pointer)
        lo = hi = None
        if lower is not None:
            v, strict = lower
            lo = (
                int(v.to_integral_value(rounding="ROUND_FLOOR")) + 1 if strict or v != v.to_integral_value() else int(v)
            )
        if upper is not None:
            v, strict = upper
            hi = (
                int(v.to_integral_value(rounding="ROUND_CEILING")) - 1
                if strict or v != v.to_integral_value()
                else int(v)
            )
        if lo is not None and hi is not None and lo > hi:
            return _empty(f"no integer satisfies {lower_kw} and {upper_kw}", upper_kw, pointer, allow_empty)
        modulus = 1
        if multiple_of is not None:
            c, e = decompose(_multiple(multiple_of, pointer))
            modulus = c * 10**e if e >= 0 else c // gcd(c, 10**-e)
            first = None if lo is None else -(-lo // modulus) * modulus
            last = None if hi is None else (hi // modulus) * modulus
            if first is not None and last is not None and first > last:
                return _empty(f"no multiple of {multiple_of} between the bounds", "multipleOf", pointer, allow_empty)
        ranged = integer_in_range(lo, hi, zero_fraction=zero_fraction)
        if modulus == 1:
            return ranged
        c, e = decompose(Decimal(modulus))
        if c == 1:
            multiples = power_of_ten_texts(e, integer_only=True, zero_fraction_allowed=zero_fraction)
            return multiples if lo is None and hi is None else ir.Intersection(ranged, multiples)
        key = ("integer", lo, hi, modulus) if zero_fraction else ("integer-plain", lo, hi, modulus)
        return _automaton(key, ranged, modulus, 0, pointer, rules, allow_empty)


def number_node(
    minimum: Number | None = None,
    maximum: Number | None = None,
    exclusive_minimum: Number | None = None,
    exclusive_maximum: Number | None = None,
    multiple_of: Number | None = None,
    pointer: str = "",
    *,
    rules: Rules | None = None,
    allow_empty: bool = False,
) -> ir.Node:
    """JSON texts of numbers satisfying the keywords (see the module docstring for the forms)."""
    with localcontext() as ctx:
        ctx.prec = 3 * MAX_DIGITS
        lower, upper, lower_kw, upper_kw = _bounds(minimum, maximum, exclusive_minimum, exclusive_maximum, pointer)
        if lower is not None and upper is not None:
            if lower[0] > upper[0] or (lower[0] == upper[0] and (lower[1] or upper[1])):
                return _empty(f"no number satisfies {lower_kw} and {upper_kw}", upper_kw, pointer, allow_empty)
        if multiple_of is None:
            return number_in_range(lower, upper)
        q = _multiple(multiple_of, pointer)
        if lower is not None and upper is not None:
            first = (lower[0] / q).to_integral_value(rounding="ROUND_CEILING")
            if lower[1] and first * q == lower[0]:
                first += 1
            last = (upper[0] / q).to_integral_value(rounding="ROUND_FLOOR")
            if upper[1] and last * q == upper[0]:
                last -= 1
            if first > last:
                return _empty(f"no multiple of {multiple_of} between the bounds", "multipleOf", pointer, allow_empty)
        c, e = decompose(q)
        ranged = number_in_range(lower, upper, plain_only=True)
        if c == 1:
            multiples = power_of_ten_texts(e, integer_only=False)
            return multiples if lower is None and upper is None else ir.Intersection(ranged, multiples)
        key = ("number", lower, upper, c, e)
        return _automaton(key, ranged, c * 10 ** max(e, 0), max(0, -e), pointer, rules, allow_empty)


def _automaton(
    key: tuple, ranged: ir.Node, modulus: int, scale: int, pointer: str, rules: Rules | None, allow_empty: bool
) -> ir.Node:
    """Right-linear rules for ``ranged`` intersected with the divisibility automaton."""
    if rules is None:
        raise TypeError("this multipleOf needs auxiliary rules: pass a rules mapping to receive them")
    if multiple_states(modulus, scale) > MAX_MULTIPLE_STATES:
        raise SchemaError(
            f"multipleOf needs an automaton of about {multiple_states(modulus, scale)} states "
            f"(limit MAX_MULTIPLE_STATES = {MAX_MULTIPLE_STATES})",
            keyword="multipleOf",
            pointer=pointer,
        )
    try:
        built = _automaton_rules(key, ranged, modulus, scale)
    except LimitError as exc:
        raise SchemaError(
            f"multipleOf with these bounds is too large to enforce: {exc}", keyword="multipleOf", pointer=pointer
        ) from exc
    if built is None:
        return _empty("no number between the bounds is a multiple of multipleOf", "multipleOf", pointer, allow_empty)
    node, new_rules = built
    rules.update(new_rules)
    return node


#: Built automata by ``repr(key)`` (which determines ``ranged`` and the rule names): a product and a minimisation per
#: ``multipleOf`` is most of a small schema's translation time, and the result is immutable.
_AUTOMATA: dict[tuple, tuple[ir.Node, dict[str, ir.Node]] | None] = {}
_MAX_AUTOMATA = 256


def _automaton_rules(
    key: tuple, ranged: ir.Node, modulus: int, scale: int
) -> tuple[ir.Node, dict[str, ir.Node]] | None:
    """The start node and rules of ``ranged`` ∩ multiples, or None if that is empty; LimitError if too large."""
    full_key = (repr(key), modulus, scale)  # repr: Decimal("1.0") == Decimal("1"), but the rule names differ
    if full_key in _AUTOMATA:
        return _AUTOMATA[full_key]
    dfa = node_to_dfa(ranged, max_states=MAX_MULTIPLE_STATES).intersect(
        multiple_dfa(modulus, scale), max_states=MAX_MULTIPLE_STATES * 4
    )
    dfa = dfa.minimize()
    built = None if dfa.is_empty() else dfa_rules(dfa, "num_" + hashlib.sha256(repr(key).encode()).hexdigest()[:12])
    if len(_AUTOMATA) >= _MAX_AUTOMATA:
        _AUTOMATA.clear()
    _AUTOMATA[full_key] = built
    return built


caches.register_dict("schema.numbers.automata", _AUTOMATA)
