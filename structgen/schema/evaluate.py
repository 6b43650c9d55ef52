"""Checking one known JSON value against a normalised schema.

Used where the translator meets finite sets: ``enum``/``const`` values intersected with other
keywords, property names checked against ``propertyNames``, disjointness proofs. Strings are
checked with the grammar of the scalar translator (``ctx.string_accepts``), so a value is kept
exactly when the generated grammar would accept it.
"""

from __future__ import annotations

from typing import Any

from ..errors import LimitError
from .algebra import number_accepts
from .jsonvalue import canon, is_number, to_fraction
from .model import ArrayC, NumberC, NumValues, ObjectC, Schema, StrValues
from .objkeys import key_verdict

MAX_DEPTH = 64


def accepts(s: Schema, value: Any, ctx: Any, depth: int = 0) -> bool:
    if depth > MAX_DEPTH:
        raise LimitError("value nested too deeply to check", limit="max_schema_depth", value=MAX_DEPTH)
    if value is None:
        return s.null
    if isinstance(value, bool):
        return value in s.boolean
    if is_number(value):
        f = to_fraction(value)
        for alt in s.number:
            if isinstance(alt, NumValues):
                if f in alt.values:
                    return True
            elif number_accepts(alt, f):
                return True
        return False
    if isinstance(value, str):
        return any(
            (value in alt.values) if isinstance(alt, StrValues) else ctx.string_accepts(alt, value) for alt in s.string
        )
    if isinstance(value, list):
        return any(_array_accepts(alt, value, ctx, depth) for alt in s.array)
    if isinstance(value, dict):
        return any(_object_accepts(alt, value, ctx, depth) for alt in s.object)
    return False


def _array_accepts(rec: ArrayC, value: list, ctx: Any, depth: int) -> bool:
    n = len(value)
    if n < rec.min_items or (rec.max_items is not None and n > rec.max_items):
        return False
    for i, item in enumerate(value):
        if not accepts(ctx.normalize(rec.item_at(i)), item, ctx, depth + 1):
            return False
    for c, lo, hi in rec.contains:
        cs = ctx.normalize(c)
        count = sum(1 for item in value if accepts(cs, item, ctx, depth + 1))
        if count < lo or (hi is not None and count > hi):
            return False
    if rec.unique:
        keys = [canon(v) for v in value]
        if len(set(keys)) != len(keys):
            return False
    return True


def _object_accepts(rec: ObjectC, value: dict, ctx: Any, depth: int) -> bool:
    n = len(value)
    if n < rec.min_props or (rec.max_props is not None and n > rec.max_props):
        return False
    if any(k not in value for k in rec.required):
        return False
    for k, v in value.items():
        if not accepts(ctx.normalize(key_verdict(rec, k, ctx)), v, ctx, depth + 1):
            return False
        for names in rec.names:
            if not accepts(ctx.normalize(names), k, ctx, depth + 1):
                return False
    for a, bs in rec.dep_required:
        if a in value and any(b not in value for b in bs):
            return False
    for a, h in rec.dep_schemas:
        if a in value and not accepts(ctx.normalize(h), value, ctx, depth + 1):
            return False
    for names, patterns, v in rec.witnesses:
        vs = ctx.normalize(v)
        if not any(
            k not in names
            and not any(ctx.pattern_matches(p, ptr, k) for p, ptr in patterns)
            and accepts(vs, x, ctx, depth + 1)
            for k, x in value.items()
        ):
            return False
    return True


def number_value_accepted(s: Schema, f: Any) -> bool:
    return any(
        (f in a.values) if isinstance(a, NumValues) else number_accepts(a, f)
        for a in s.number
        if isinstance(a, (NumValues, NumberC))
    )


def finite_members(s: Schema, limit: int = 256) -> list[Any] | None:
    """The values of ``s`` if it is a small finite set (an ``enum``, possibly narrowed), else None.

    Containers count only in the exact form ``const``/``enum`` gives them."""
    from .jsonvalue import fraction_to_python
    from .model import ConstH, NeverH

    out: list[Any] = []
    if s.null:
        out.append(None)
    out.extend(sorted(s.boolean))
    for a in s.number:
        if not isinstance(a, NumValues):
            return None
        out.extend(fraction_to_python(v) for v in sorted(a.values))
    for a in s.string:
        if not isinstance(a, StrValues):
            return None
        out.extend(sorted(a.values))
    for arr in s.array:
        if not (
            isinstance(arr.items, NeverH) and arr.min_items == len(arr.prefix) == arr.max_items and not arr.contains
        ):
            return None
        if not all(isinstance(h, ConstH) for h in arr.prefix):
            return None
        out.append([h.value for h in arr.prefix])  # type: ignore[attr-defined]
    for obj in s.object:
        if len(obj.policies) != 1 or obj.names or obj.dep_required or obj.dep_schemas or obj.witnesses:
            return None
        pol = obj.policies[0]
        if (
            pol.patterns
            or not isinstance(pol.additional, NeverH)
            or not all(isinstance(h, ConstH) for _, h in pol.props)
        ):
            return None
        if obj.required != frozenset(k for k, _ in pol.props) or obj.min_props or obj.max_props is not None:
            return None
        out.append({k: h.value for k, h in pol.props})  # type: ignore[attr-defined]
    return out if len(out) <= limit else None
