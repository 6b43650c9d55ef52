"""The complement of a normalised schema (``not``; also used by ``if`` and exact ``oneOf``).

Type by type: an excluded type becomes allowed without constraint and vice versa; a record is
complemented into a disjunction of records wherever that is exact (a range into the ranges
outside it, a string record into "strings minus that language", an object record into "a
required key missing, or a listed key with a value outside its schema, or too few/many keys"...).
Forms that have no exact complement here (``multipleOf``, integers, number values, unique
arrays, patterns of keys...) raise :class:`Unsupported` with the reason.
"""

from __future__ import annotations

from typing import Any

from .algebra import intersect_array, intersect_number, intersect_object, intersect_string
from .model import (
    FALSE,
    TRUE,
    AnyH,
    ArrayC,
    KeyPolicy,
    NeverH,
    NumberC,
    NumValues,
    ObjectC,
    Schema,
    StringC,
    StrValues,
    not_of,
)


class Unsupported(Exception):
    """No exact complement; ``keyword`` names the keyword that blocks it."""

    def __init__(self, keyword: str, reason: str) -> None:
        super().__init__(reason)
        self.keyword = keyword
        self.reason = reason


def _and_all(disjunctions: list[tuple], merge: Any, ctx: Any) -> tuple:
    """Intersection of several disjunctions (each a tuple of alternatives), with the limit."""
    out: tuple | None = None
    for d in disjunctions:
        if out is None:
            out = d
            continue
        nxt: list = []
        for x in out:
            for y in d:
                m = merge(x, y, ctx)
                if m is not None and m not in nxt:
                    nxt.append(m)
        if len(nxt) > ctx.opts.max_alternatives:
            raise Unsupported("not", f"complement needs more than {ctx.opts.max_alternatives} alternatives")
        out = tuple(nxt)
    return out if out is not None else ()


def _number(alt: Any) -> tuple:
    if isinstance(alt, NumValues):
        # the numbers other than v1 < v2 < ... are the open intervals between them
        vs = sorted(alt.values)
        out = [NumberC(hi=(vs[0], True))]
        out.extend(NumberC(lo=(a, True), hi=(b, True)) for a, b in zip(vs, vs[1:]))
        out.append(NumberC(lo=(vs[-1], True)))
        return tuple(out)
    assert isinstance(alt, NumberC)
    if alt.is_trivial():
        return ()
    if alt.multiple is not None:
        raise Unsupported("multipleOf", "the complement of multipleOf is not supported")
    out = []
    if alt.integer:
        out.append(NumberC(non_integer=True, ptr=alt.ptr))
    if alt.non_integer:
        out.append(NumberC(integer=True, ptr=alt.ptr))
    if alt.lo is not None:
        out.append(NumberC(hi=(alt.lo[0], not alt.lo[1]), ptr=alt.ptr))
    if alt.hi is not None:
        out.append(NumberC(lo=(alt.hi[0], not alt.hi[1]), ptr=alt.ptr))
    return tuple(out)


def _string(alt: Any) -> tuple:
    if isinstance(alt, StringC) and alt.is_trivial():
        return ()
    if isinstance(alt, StringC) and not alt.patterns and not alt.formats and not alt.minus:
        out = []
        if alt.min_len > 0:
            out.append(StringC(max_len=alt.min_len - 1))
        if alt.max_len is not None:
            out.append(StringC(min_len=alt.max_len + 1))
        return tuple(out)
    if isinstance(alt, StrValues) or isinstance(alt, StringC):
        return (StringC(minus=(alt,)),)
    raise AssertionError(alt)  # pragma: no cover


def _array(alt: ArrayC, ctx: Any) -> tuple:
    if alt.is_trivial():
        return ()
    if alt.unique:
        raise Unsupported("uniqueItems", "the complement of uniqueItems is not supported")
    out: list[ArrayC] = []
    if alt.min_items > 0:
        out.append(ArrayC(max_items=alt.min_items - 1))
    if alt.max_items is not None:
        out.append(ArrayC(min_items=alt.max_items + 1))
    for i, h in enumerate(alt.prefix):
        if not isinstance(h, AnyH):
            out.append(ArrayC(prefix=(TRUE,) * i + (not_of(h, alt.ptr),), min_items=i + 1))
    if isinstance(alt.items, NeverH):
        out.append(ArrayC(min_items=len(alt.prefix) + 1))
    elif not isinstance(alt.items, AnyH):
        if alt.prefix:
            raise Unsupported("items", "the complement of items after prefixItems is not supported")
        out.append(ArrayC(contains=((not_of(alt.items, alt.ptr), 1, None),)))
    for c, lo, hi in alt.contains:
        if lo == 1:
            out.append(ArrayC(items=not_of(c, alt.ptr)))
        elif lo > 1:
            out.append(ArrayC(contains=((c, 0, lo - 1),)))
        if hi is not None:
            out.append(ArrayC(contains=((c, hi + 1, None),)))
    return tuple(out)


def _object(alt: ObjectC, ctx: Any) -> tuple:
    if alt.is_trivial():
        return ()
    if alt.names:
        raise Unsupported("propertyNames", "the complement of propertyNames is not supported")
    out: list[ObjectC] = []
    for r in alt.required_order or tuple(sorted(alt.required)):
        out.append(ObjectC((KeyPolicy(((r, FALSE),)),), ptr=alt.ptr))
    for pol in alt.policies:
        if any(not isinstance(h, AnyH) for _, h in pol.patterns):
            raise Unsupported("patternProperties", "the complement of patternProperties is not supported")
        if not isinstance(pol.additional, AnyH):
            if isinstance(pol.additional, NeverH) and not pol.props and not pol.patterns:
                out.append(ObjectC(min_props=1, ptr=alt.ptr))
            else:  # some key outside the listed ones and the patterns, with a value the policy refuses
                names = frozenset(k for k, _ in pol.props)
                patterns = tuple((p, pol.ptr) for p, _ in pol.patterns)
                out.append(ObjectC(witnesses=((names, patterns, not_of(pol.additional, alt.ptr)),), ptr=alt.ptr))
        for k, h in pol.props:
            if isinstance(h, AnyH):
                continue
            out.append(ObjectC((KeyPolicy(((k, not_of(h, alt.ptr)),)),), frozenset((k,)), (k,), ptr=alt.ptr))
    if alt.min_props > 0:
        out.append(ObjectC(max_props=alt.min_props - 1, ptr=alt.ptr))
    if alt.max_props is not None:
        out.append(ObjectC(min_props=alt.max_props + 1, ptr=alt.ptr))
    for names, patterns, v in alt.witnesses:  # every such key has a value outside v
        policy = KeyPolicy(
            tuple((k, TRUE) for k in sorted(names)), tuple((p, TRUE) for p, _ in patterns), not_of(v, alt.ptr), alt.ptr
        )
        out.append(ObjectC((policy,), ptr=alt.ptr))
    for a, bs in alt.dep_required:
        for b in bs:
            out.append(ObjectC((KeyPolicy(((b, FALSE),)),), frozenset((a,)), (a,), ptr=alt.ptr))
    for a, h in alt.dep_schemas:
        inner = complement(ctx.normalize(h), ctx)
        base = ObjectC((), frozenset((a,)), (a,), ptr=alt.ptr)
        for o in inner.object:
            m = intersect_object(base, o, ctx)
            if m is not None:
                out.append(m)
    return tuple(dict.fromkeys(out))


_FULL_NUMBER = (NumberC(),)
_FULL_STRING = (StringC(),)
_FULL_ARRAY = (ArrayC(),)
_FULL_OBJECT = (ObjectC(),)


def complement(s: Schema, ctx: Any, within: Schema | None = None) -> Schema:
    """The schema of every JSON value ``s`` rejects (raises :class:`Unsupported`).

    With ``within``, only the types ``within`` allows are complemented (the others come out
    empty): the caller intersects the result with ``within`` anyway, and a type it excludes may
    hold forms that have no complement.
    """
    if s.is_any():
        return Schema(False, frozenset(), (), (), (), ())
    if s.is_empty():
        return Schema()
    w = within if within is not None else Schema()
    number = (
        (_and_all([_number(a) for a in s.number], intersect_number, ctx) if s.number else _FULL_NUMBER)
        if w.number
        else ()
    )
    string = (
        (_and_all([_string(a) for a in s.string], intersect_string, ctx) if s.string else _FULL_STRING)
        if w.string
        else ()
    )
    array = (
        (_and_all([_array(a, ctx) for a in s.array], intersect_array, ctx) if s.array else _FULL_ARRAY)
        if w.array
        else ()
    )
    obj = (
        (_and_all([_object(a, ctx) for a in s.object], intersect_object, ctx) if s.object else _FULL_OBJECT)
        if w.object
        else ()
    )
    return Schema(
        not s.null,
        frozenset((False, True)) - s.boolean,
        number,
        string,
        array,
        obj,
    )
