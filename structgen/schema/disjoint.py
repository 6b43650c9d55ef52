"""Proofs that two normalised schemas share no instance (for exact ``oneOf``).

:func:`disjoint` returns True only when it can prove that no JSON value satisfies both schemas;
False means "not proved". It looks at types, number ranges, string lengths and value sets, array
lengths and positions, and object keys: a key required by both with provably disjoint values
(the discriminator of a tagged union), a key one requires and the other forbids, or property
counts that cannot meet. It recurses into subschemas to a small depth.
"""

from __future__ import annotations

from typing import Any

from .algebra import number_accepts
from .model import ArrayC, NumberC, NumValues, ObjectC, Schema, StringC, StrValues
from .objkeys import key_verdict, listed_keys

MAX_DEPTH = 6


def _ranges_disjoint(a: NumberC, b: NumberC) -> bool:
    def below(hi: Any, lo: Any) -> bool:  # is every value <= hi strictly below every value >= lo?
        if hi is None or lo is None:
            return False
        return hi[0] < lo[0] or (hi[0] == lo[0] and (hi[1] or lo[1]))

    return below(a.hi, b.lo) or below(b.hi, a.lo)


def _number_pair(a: Any, b: Any) -> bool:
    if isinstance(a, NumValues) and isinstance(b, NumValues):
        return not (a.values & b.values)
    if isinstance(a, NumValues):
        return not any(number_accepts(b, v) for v in a.values)
    if isinstance(b, NumValues):
        return not any(number_accepts(a, v) for v in b.values)
    if (a.integer and b.non_integer) or (a.non_integer and b.integer):
        return True
    return _ranges_disjoint(a, b)


def _string_pair(a: Any, b: Any, ctx: Any) -> bool:
    if isinstance(a, StrValues) and isinstance(b, StrValues):
        return not (a.values & b.values)
    if isinstance(a, StrValues):
        return not any(ctx.string_accepts(b, v) for v in a.values)
    if isinstance(b, StrValues):
        return not any(ctx.string_accepts(a, v) for v in b.values)
    assert isinstance(a, StringC) and isinstance(b, StringC)
    if a.max_len is not None and b.min_len > a.max_len:
        return True
    if b.max_len is not None and a.min_len > b.max_len:
        return True
    return False


def _lengths_disjoint(lo1: int, hi1: int | None, lo2: int, hi2: int | None) -> bool:
    return (hi1 is not None and lo2 > hi1) or (hi2 is not None and lo1 > hi2)


def _array_pair(a: ArrayC, b: ArrayC, ctx: Any, depth: int) -> bool:
    if _lengths_disjoint(a.min_items, a.max_items, b.min_items, b.max_items):
        return True
    if depth >= MAX_DEPTH:
        return False
    # positions every instance of both sides has; past both prefixes they all look alike
    shared = min(a.min_items, b.min_items, max(len(a.prefix), len(b.prefix)) + 1)
    for i in range(shared):
        x, y = ctx.try_normalize(a.item_at(i)), ctx.try_normalize(b.item_at(i))
        if x is not None and y is not None and disjoint(x, y, ctx, depth + 1):
            return True
    return False


def _object_pair(a: ObjectC, b: ObjectC, ctx: Any, depth: int) -> bool:
    if _lengths_disjoint(a.min_props, a.max_props, b.min_props, b.max_props):
        return True
    if depth >= MAX_DEPTH:
        return False
    for first, second in ((a, b), (b, a)):
        for k in listed_keys(first):
            if k not in first.required:
                continue
            vb = ctx.try_normalize(key_verdict(second, k, ctx))
            if vb is None:
                continue
            if vb.is_empty():
                return True  # required by one, forbidden by the other
            # required by ``first``; where ``second`` has the key at all its value must be in vb
            va = ctx.try_normalize(key_verdict(first, k, ctx))
            if va is not None and disjoint(va, vb, ctx, depth + 1):
                return True
    return False


def disjoint(a: Schema, b: Schema, ctx: Any, depth: int = 0) -> bool:
    """True only if no JSON value satisfies both ``a`` and ``b``."""
    if a.is_empty() or b.is_empty():
        return True
    if a.null and b.null:
        return False
    if a.boolean & b.boolean:
        return False
    for x in a.number:
        for y in b.number:
            if not _number_pair(x, y):
                return False
    for x in a.string:
        for y in b.string:
            if not _string_pair(x, y, ctx):
                return False
    for x in a.array:
        for y in b.array:
            if not _array_pair(x, y, ctx, depth):
                return False
    for x in a.object:
        for y in b.object:
            if not _object_pair(x, y, ctx, depth):
                return False
    return True
