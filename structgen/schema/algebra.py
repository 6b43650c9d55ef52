"""Intersection and union of normalised schemas (:mod:`.model`), type by type.

``allOf`` is :func:`intersect`: per JSON type, every pair of alternatives is merged into one
record (bounds tightened, patterns and formats accumulated, array positions and object key
policies combined) or found empty. ``anyOf`` is :func:`union`: alternatives are pooled, an
unconstrained record absorbing the rest. Finite value sets are filtered with the value checker
of the compiler (``ctx.accepts_*``), so ``{"enum": [1, 2, 3], "minimum": 2}`` becomes ``{2, 3}``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Any, Callable, Sequence, TypeVar

from ..errors import LimitError
from .model import (
    FALSE,
    NEVER,
    ArrayC,
    Bound,
    KeyPolicy,
    NumAlt,
    NumberC,
    NumValues,
    ObjectC,
    Schema,
    StrAlt,
    StringC,
    StrValues,
    all_of,
)
from .objkeys import key_verdict, policy_verdict

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------
# Numbers


def _frac_lcm(a: Fraction, b: Fraction) -> Fraction:
    """Least common multiple of two positive rationals (lcm of numerators / gcd of denominators)."""
    num = a.numerator * b.numerator // math.gcd(a.numerator, b.numerator)
    return Fraction(num, math.gcd(a.denominator, b.denominator))


def _tighter_lo(a: Bound | None, b: Bound | None) -> Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return (a[0], a[1] or b[1])


def _tighter_hi(a: Bound | None, b: Bound | None) -> Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return (a[0], a[1] or b[1])


def make_number(
    lo: Bound | None,
    hi: Bound | None,
    multiple: Fraction | None,
    integer: bool,
    ptr: str = "",
    non_integer: bool = False,
) -> NumberC | None:
    """A normalised number record, or None if no number satisfies it.

    For integers, bounds become inclusive integers and a fractional ``multipleOf p/q`` becomes
    ``multipleOf p`` (an integer ``x`` is a multiple of ``p/q`` exactly when ``p`` divides ``x``).
    """
    if integer and non_integer:
        return None
    if non_integer and multiple is not None and multiple.denominator == 1:
        return None  # multiples of an integer are integers
    if integer:
        if lo is not None:
            v = math.ceil(lo[0])
            if lo[1] and v == lo[0]:
                v += 1
            lo = (Fraction(v), False)
        if hi is not None:
            v = math.floor(hi[0])
            if hi[1] and v == hi[0]:
                v -= 1
            hi = (Fraction(v), False)
        if multiple is not None:
            multiple = Fraction(multiple.numerator)
            if multiple == 1:
                multiple = None
    if lo is not None and hi is not None:
        if lo[0] > hi[0] or (lo[0] == hi[0] and (lo[1] or hi[1])):
            return None
        if non_integer and lo[0] == hi[0]:
            return None if lo[0].denominator == 1 else NumberC(lo, hi, multiple, False, ptr, True)
        if multiple is not None:
            # is there a multiple of m in [lo, hi]?
            first = math.ceil(lo[0] / multiple) * multiple
            if lo[1] and first == lo[0]:
                first += multiple
            if first > hi[0] or (hi[1] and first == hi[0]):
                return None
    return NumberC(lo, hi, multiple, integer, ptr, non_integer)


def number_accepts(rec: NumberC, v: Fraction) -> bool:
    if rec.integer and v.denominator != 1:
        return False
    if rec.non_integer and v.denominator == 1:
        return False
    if rec.lo is not None and (v < rec.lo[0] or (rec.lo[1] and v == rec.lo[0])):
        return False
    if rec.hi is not None and (v > rec.hi[0] or (rec.hi[1] and v == rec.hi[0])):
        return False
    if rec.multiple is not None and (v / rec.multiple).denominator != 1:
        return False
    return True


def intersect_number(a: NumAlt, b: NumAlt, ctx: Any) -> NumAlt | None:
    if isinstance(a, NumValues) and isinstance(b, NumValues):
        vals = a.values & b.values
        return NumValues(vals) if vals else None
    if isinstance(a, NumValues) or isinstance(b, NumValues):
        vs, rec = (a, b) if isinstance(a, NumValues) else (b, a)
        vals = frozenset(v for v in vs.values if number_accepts(rec, v))  # type: ignore[union-attr,arg-type]
        return NumValues(vals) if vals else None
    assert isinstance(a, NumberC) and isinstance(b, NumberC)
    if a.is_trivial():
        return b
    if b.is_trivial():
        return a
    multiple = a.multiple
    if b.multiple is not None:
        multiple = b.multiple if multiple is None else _frac_lcm(multiple, b.multiple)
    return make_number(
        _tighter_lo(a.lo, b.lo),
        _tighter_hi(a.hi, b.hi),
        multiple,
        a.integer or b.integer,
        a.ptr or b.ptr,
        a.non_integer or b.non_integer,
    )


# ---------------------------------------------------------------------------------------------
# Strings


def intersect_string(a: StrAlt, b: StrAlt, ctx: Any) -> StrAlt | None:
    if isinstance(a, StrValues) and isinstance(b, StrValues):
        vals = a.values & b.values
        return StrValues(vals) if vals else None
    if isinstance(a, StrValues) or isinstance(b, StrValues):
        vs, rec = (a, b) if isinstance(a, StrValues) else (b, a)
        vals = frozenset(v for v in vs.values if ctx.string_accepts(rec, v))  # type: ignore[union-attr]
        return StrValues(vals) if vals else None
    assert isinstance(a, StringC) and isinstance(b, StringC)
    if a.is_trivial():
        return b
    if b.is_trivial():
        return a
    lo = max(a.min_len, b.min_len)
    hi = a.max_len if b.max_len is None else (b.max_len if a.max_len is None else min(a.max_len, b.max_len))
    if hi is not None and lo > hi:
        return None
    return StringC(
        lo,
        hi,
        _merge_unique(a.patterns, b.patterns),
        _merge_unique(a.formats, b.formats),
        _merge_unique(a.minus, b.minus),
    )


def _merge_unique(a: tuple, b: tuple) -> tuple:
    if not a or not b:
        return a or b
    seen = set(a)
    return a + tuple(x for x in b if x not in seen)


# ---------------------------------------------------------------------------------------------
# Arrays and objects


def intersect_array(a: ArrayC, b: ArrayC, ctx: Any) -> ArrayC | None:
    if a.is_trivial():
        return b
    if b.is_trivial():
        return a
    n = max(len(a.prefix), len(b.prefix))
    prefix = tuple(all_of(a.item_at(i), b.item_at(i)) for i in range(n))
    lo = max(a.min_items, b.min_items)
    hi = a.max_items if b.max_items is None else (b.max_items if a.max_items is None else min(a.max_items, b.max_items))
    if hi is not None and lo > hi:
        return None
    return ArrayC(
        prefix,
        all_of(a.items, b.items),
        lo,
        hi,
        _merge_unique(a.contains, b.contains),
        a.unique or b.unique,
        a.ptr or b.ptr,
    )


def intersect_object(a: ObjectC, b: ObjectC, ctx: Any) -> ObjectC | None:
    if a.is_trivial():
        return b
    if b.is_trivial():
        return a
    lo = max(a.min_props, b.min_props)
    hi = a.max_props if b.max_props is None else (b.max_props if a.max_props is None else min(a.max_props, b.max_props))
    if hi is not None and lo > hi:
        return None
    policies = _merge_unique(a.policies, b.policies)
    merged = ObjectC(
        tuple(p for p in policies if not p.is_trivial()),
        a.required | b.required,
        _merge_unique(a.required_order, b.required_order),
        lo,
        hi,
        _merge_unique(a.names, b.names),
        _merge_unique(a.dep_required, b.dep_required),
        _merge_unique(a.dep_schemas, b.dep_schemas),
        a.ptr or b.ptr,
        _merge_unique(a.witnesses, b.witnesses),
    )
    # a required key that one side forbids outright, or whose values the two sides' discriminator
    # ``const``/``enum`` schemas cannot share, empties the record (each side alone was consistent)
    for this, other in ((a, b), (b, a)):
        for k in this.required:
            if any(policy_verdict(p, k, ctx) is FALSE for p in other.policies):
                return None
    for k in merged.required:
        va = key_verdict(a, k, ctx) if a.policies else None
        vb = key_verdict(b, k, ctx) if b.policies else None
        if va is None or vb is None or not (ctx.is_value_like(va) and ctx.is_value_like(vb)):
            continue
        vs = ctx.try_normalize(all_of(va, vb))
        if vs is not None and vs.is_empty():
            return None
    return merged


# ---------------------------------------------------------------------------------------------
# Whole schemas


def _cross(xs: Sequence[T], ys: Sequence[T], merge: Callable[[T, T, Any], T | None], ctx: Any) -> tuple[T, ...]:
    """Pairwise merges of two disjunctions; most pairs of unrelated alternatives come out empty,
    so the work is bounded (16 x ``max_alternatives`` pairs) and so is the result."""
    limit = ctx.opts.max_alternatives
    if len(xs) * len(ys) > 16 * limit:
        raise LimitError(f"intersecting {len(xs)} by {len(ys)} alternatives", limit="max_alternatives", value=limit)
    out: list[T] = []
    for x in xs:
        for y in ys:
            m = merge(x, y, ctx)
            if m is not None and m not in out:
                out.append(m)
    if len(out) > limit:
        raise LimitError(f"intersection with {len(out)} alternatives", limit="max_alternatives", value=limit)
    return tuple(out)


def intersect(a: Schema, b: Schema, ctx: Any) -> Schema:
    if a.is_any():
        return b
    if b.is_any() or a is b:
        return a
    if a.is_empty() or b.is_empty():
        return NEVER
    return Schema(
        a.null and b.null,
        a.boolean & b.boolean,
        _cross(a.number, b.number, intersect_number, ctx),
        _cross(a.string, b.string, intersect_string, ctx),
        _cross(a.array, b.array, intersect_array, ctx),
        _cross(a.object, b.object, intersect_object, ctx),
    )


def intersect_all(parts: Sequence[Schema], ctx: Any) -> Schema:
    out: Schema | None = None
    for p in parts:
        out = p if out is None else intersect(out, p, ctx)
        if out.is_empty():
            return NEVER
    return out if out is not None else Schema()


def _pool(lists: Sequence[tuple], ctx: Any) -> tuple:
    out: list = []
    for alts in lists:
        for alt in alts:
            if getattr(alt, "is_trivial", lambda: False)():
                return (alt,)
            if alt not in out:
                out.append(alt)
    out = list(_merge_values(tuple(out)))
    if len(out) > ctx.opts.max_alternatives:
        raise LimitError(f"union of {len(out)} alternatives", limit="max_alternatives", value=ctx.opts.max_alternatives)
    return tuple(out)


def _merge_values(alts: tuple) -> tuple:
    """Pool the finite value sets of a type into one (``enum`` values stay one alternative)."""
    sets = [a for a in alts if isinstance(a, (NumValues, StrValues))]
    if len(sets) <= 1:
        return alts
    merged = type(sets[0])(frozenset().union(*(s.values for s in sets)))
    rest = tuple(a for a in alts if not isinstance(a, (NumValues, StrValues)))
    return (merged,) + rest


def union(parts: Sequence[Schema], ctx: Any) -> Schema:
    if not parts:
        return NEVER
    if any(p.is_any() for p in parts):
        return Schema()
    return Schema(
        any(p.null for p in parts),
        frozenset().union(*(p.boolean for p in parts)),
        _pool([p.number for p in parts], ctx),
        _pool([p.string for p in parts], ctx),
        _pool([p.array for p in parts], ctx),
        _pool([p.object for p in parts], ctx),
    )


def restrict(base: Schema, **types: tuple) -> Schema:
    """``base`` with the alternatives of the named types replaced."""
    return replace(base, **types)


__all__ = [
    "intersect",
    "intersect_all",
    "make_number",
    "number_accepts",
    "union",
    "restrict",
    "KeyPolicy",
]
