"""One schema object to the normal form: each keyword read, checked and turned into records.

:func:`normalize_object` reads the keywords of one schema object (at a JSON pointer), builds the
per-type records of :mod:`.model` and combines them with the in-place applicators (``$ref``,
``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``) through the compiler. Every
keyword is accounted for in exactly one of :data:`ANNOTATIONS`, :data:`NO_EFFECT_ALONE`, the
keywords handled here, or "unknown" (ignored, as the specification says, and listed in the
enforceability report).

Draft-07 and older spellings are read too: array-form ``items`` with ``additionalItems``,
``dependencies``, ``definitions``, boolean ``exclusiveMinimum``/``exclusiveMaximum`` (draft-04)
and ``id``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction
from typing import Any

from ..errors import SchemaError
from .algebra import intersect_all, make_number, union
from .jsonvalue import canon, is_number, to_fraction
from .loader import pointer_text
from .model import (
    ANY,
    FALSE,
    NEVER,
    TRUE,
    ArrayC,
    ConstH,
    Handle,
    KeyPolicy,
    Loc,
    NumberC,
    NumValues,
    ObjectC,
    Schema,
    StringC,
    StrValues,
    only_types,
)

#: Keywords that never constrain an instance (the specification's annotations and identifiers).
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "$schema",
        "$vocabulary",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$recursiveAnchor",
        "$defs",
        "definitions",
    }
)
#: Keywords that only act together with another one (read where that one is read).
NO_EFFECT_ALONE = {
    "then": "if",
    "else": "if",
    "minContains": "contains",
    "maxContains": "contains",
    "additionalItems": "items (array form)",
}
NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
STRING_KEYWORDS = ("minLength", "maxLength", "pattern", "format")
ARRAY_KEYWORDS = (
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
)
OBJECT_KEYWORDS = (
    "properties",
    "patternProperties",
    "additionalProperties",
    "required",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
)
APPLICATORS = ("$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if")
OTHER = ("type", "enum", "const", "unevaluatedProperties", "unevaluatedItems")

KNOWN = (
    frozenset(NUMBER_KEYWORDS + STRING_KEYWORDS + ARRAY_KEYWORDS + OBJECT_KEYWORDS + APPLICATORS + OTHER)
    | ANNOTATIONS
    | frozenset(NO_EFFECT_ALONE)
    | {"id"}
)

_TYPES = ("null", "boolean", "object", "array", "number", "string", "integer")
_KNOWN_META = re.compile(r"^https?://json-schema\.org/(draft-0[3-7]/schema|draft/(2019-09|2020-12)/schema)#?$")


def _bad(kw: str, ptr: tuple, msg: str) -> SchemaError:
    return SchemaError(f"invalid {kw}: {msg}", keyword=kw, pointer=pointer_text(ptr))


def _nonneg_int(node: dict, kw: str, ptr: tuple) -> int | None:
    v = node.get(kw)
    if v is None and kw not in node:
        return None
    if isinstance(v, bool) or not is_number(v):
        raise _bad(kw, ptr, "must be a non-negative integer")
    f = to_fraction(v)
    if f.denominator != 1 or f < 0:
        raise _bad(kw, ptr, "must be a non-negative integer")
    return int(f)


def _number(node: dict, kw: str, ptr: tuple) -> Fraction | None:
    if kw not in node:
        return None
    v = node[kw]
    if isinstance(v, bool) or not is_number(v):
        raise _bad(kw, ptr, "must be a number")
    try:
        return to_fraction(v)
    except ValueError:
        raise _bad(kw, ptr, "must be a finite number") from None


def _schema_value(node: dict, kw: str, ptr: tuple) -> None:
    if not isinstance(node[kw], (dict, bool)):
        raise _bad(kw, ptr, "must be a schema (an object or a boolean)")


def _schema_list(node: dict, kw: str, ptr: tuple, *, nonempty: bool = True) -> list:
    v = node[kw]
    if not isinstance(v, list) or (nonempty and not v):
        raise _bad(kw, ptr, "must be a non-empty array of schemas")
    for item in v:
        if not isinstance(item, (dict, bool)):
            raise _bad(kw, ptr, "must be an array of schemas")
    return v


def _schema_map(node: dict, kw: str, ptr: tuple) -> dict:
    v = node[kw]
    if not isinstance(v, dict) or not all(isinstance(x, (dict, bool)) for x in v.values()):
        raise _bad(kw, ptr, "must be an object whose values are schemas")
    return v


def _string_list(v: Any, kw: str, ptr: tuple) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _bad(kw, ptr, "must be an array of strings")
    return v


# ---------------------------------------------------------------------------------------------
# Subschema handles


def sub(ctx: Any, ptr: tuple) -> Handle:
    """The handle of the subschema at ``ptr``; a bare ``{"$ref": ...}`` (annotations aside) is
    replaced by its target, so that equal subschemas share one handle (and one rule)."""
    for _ in range(8):
        node = ctx.doc.at(ptr)
        if not isinstance(node, dict) or not isinstance(node.get("$ref"), str):
            break
        if any(k != "$ref" and k not in ANNOTATIONS for k in node) or "$id" in node or "$schema" in node:
            break
        ctx.account(pointer_text(ptr), node)
        ptr = ctx.doc.resolve(node["$ref"], ptr)
    node = ctx.doc.at(ptr)
    if node is True:
        return TRUE
    if node is False:
        return FALSE
    return Loc(ptr)


# ---------------------------------------------------------------------------------------------
# Values


def const_schema(value: Any) -> Schema:
    """The schema allowing exactly ``value`` (object and array members become const handles)."""
    if value is None:
        return replace(NEVER, null=True)
    if isinstance(value, bool):
        return replace(NEVER, boolean=frozenset((value,)))
    if is_number(value):
        return replace(NEVER, number=(NumValues(frozenset((to_fraction(value),))),))
    if isinstance(value, str):
        return replace(NEVER, string=(StrValues(frozenset((value,))),))
    if isinstance(value, list):
        prefix = tuple(const_handle(x) for x in value)
        return replace(NEVER, array=(ArrayC(prefix, FALSE, len(value), len(value)),))
    if isinstance(value, dict):
        props = tuple((k, const_handle(x)) for k, x in value.items())
        keys = tuple(value)
        return replace(NEVER, object=(ObjectC((KeyPolicy(props, (), FALSE),), frozenset(keys), keys),))
    raise SchemaError(f"not a JSON value: {type(value).__name__}", keyword="const", pointer="")


def enum_schema(values: list, ctx: Any) -> Schema:
    """The schema allowing exactly ``values`` (scalars pooled per type, one record per container)."""
    strings = frozenset(v for v in values if isinstance(v, str))
    numbers = frozenset(to_fraction(v) for v in values if is_number(v))
    containers = [const_schema(v) for v in values if isinstance(v, (list, dict))]
    scalars = replace(
        NEVER,
        null=any(v is None for v in values),
        boolean=frozenset(v for v in values if isinstance(v, bool)),
        number=(NumValues(numbers),) if numbers else (),
        string=(StrValues(strings),) if strings else (),
    )
    return union([scalars] + containers, ctx) if containers else scalars


def const_handle(value: Any) -> Handle:
    return ConstH(canon(value), value)


# ---------------------------------------------------------------------------------------------
# Keyword groups


def _type_schema(node: dict, ptr: tuple) -> Schema:
    t = node["type"]
    names = [t] if isinstance(t, str) else t
    if not isinstance(names, list) or not names:
        raise _bad("type", ptr, "must be a type name or a non-empty array of type names")
    for n in names:
        if n not in _TYPES:
            raise _bad("type", ptr, f"unknown type {n!r}")
    parts = []
    for n in names:
        if n == "integer":
            parts.append(only_types("number", integer=True))
        else:
            parts.append(only_types(n))
    if not parts:
        return NEVER
    out = parts[0]
    for p in parts[1:]:
        out = Schema(
            out.null or p.null,
            out.boolean | p.boolean,
            _pool2(out.number, p.number),
            out.string or p.string,
            out.array or p.array,
            out.object or p.object,
        )
    return out


def _pool2(a: tuple, b: tuple) -> tuple:
    for x in a + b:
        if isinstance(x, NumberC) and x.is_trivial():
            return (x,)
    return a or b


def _number_schema(node: dict, ptr: tuple, ctx: Any) -> Schema | None:
    if not any(k in node for k in NUMBER_KEYWORDS):
        return None
    p = pointer_text(ptr)
    lo = _number(node, "minimum", ptr)
    hi = _number(node, "maximum", ptr)
    lo_b = (lo, False) if lo is not None else None
    hi_b = (hi, False) if hi is not None else None
    for kw, is_lo in (("exclusiveMinimum", True), ("exclusiveMaximum", False)):
        if kw not in node:
            continue
        v = node[kw]
        if isinstance(v, bool):  # draft-04: a flag on minimum / maximum
            if v:
                if is_lo and lo_b is not None:
                    lo_b = (lo_b[0], True)
                elif not is_lo and hi_b is not None:
                    hi_b = (hi_b[0], True)
            continue
        x = _number(node, kw, ptr)
        assert x is not None
        if is_lo:
            lo_b = (x, True) if lo_b is None or x >= lo_b[0] else lo_b
        else:
            hi_b = (x, True) if hi_b is None or x <= hi_b[0] else hi_b
    mult = _number(node, "multipleOf", ptr)
    if mult is not None and mult <= 0:
        raise _bad("multipleOf", ptr, "must be greater than 0")
    rec = make_number(lo_b, hi_b, mult, False, p)
    if rec is None:
        ctx.note_empty("minimum" if "minimum" in node else "exclusiveMinimum", p)
    return replace(ANY, number=(rec,) if rec is not None else ())


def _string_schema(node: dict, ptr: tuple, ctx: Any) -> Schema | None:
    if not any(k in node for k in STRING_KEYWORDS):
        return None
    p = pointer_text(ptr)
    lo = _nonneg_int(node, "minLength", ptr) or 0
    hi = _nonneg_int(node, "maxLength", ptr)
    patterns: tuple = ()
    formats: tuple = ()
    if "pattern" in node:
        if not isinstance(node["pattern"], str):
            raise _bad("pattern", ptr, "must be a string")
        patterns = ((node["pattern"], p),)
    if "format" in node:
        if not isinstance(node["format"], str):
            raise _bad("format", ptr, "must be a string")
        if ctx.opts.formats in ("assert", "exact"):
            formats = ((node["format"], p),)
        else:
            ctx.note_ignored(p, "format", "format treated as an annotation (formats='ignore')")
    if hi is not None and lo > hi:
        ctx.note_empty("minLength", p)
        return replace(ANY, string=())
    return replace(ANY, string=(StringC(lo, hi, patterns, formats),))


def _array_schema(node: dict, ptr: tuple, ctx: Any) -> Schema | None:
    if not any(k in node for k in ARRAY_KEYWORDS):
        return None
    p = pointer_text(ptr)
    prefix: tuple[Handle, ...] = ()
    items: Handle = TRUE
    if "prefixItems" in node:
        prefix = tuple(sub(ctx, ptr + ("prefixItems", i)) for i in range(len(_schema_list(node, "prefixItems", ptr))))
    if "items" in node:
        v = node["items"]
        if isinstance(v, list):  # draft-07 tuple form
            _schema_list(node, "items", ptr, nonempty=False)
            prefix = tuple(sub(ctx, ptr + ("items", i)) for i in range(len(v)))
            if "additionalItems" in node:
                _schema_value(node, "additionalItems", ptr)
                items = sub(ctx, ptr + ("additionalItems",))
        else:
            _schema_value(node, "items", ptr)
            items = sub(ctx, ptr + ("items",))
    elif "additionalItems" in node:
        ctx.note_ignored(p, "additionalItems", "no effect without array-form items")
    lo = _nonneg_int(node, "minItems", ptr) or 0
    hi = _nonneg_int(node, "maxItems", ptr)
    unique = node.get("uniqueItems", False)
    if not isinstance(unique, bool):
        raise _bad("uniqueItems", ptr, "must be a boolean")
    contains: tuple = ()
    if "contains" in node:
        _schema_value(node, "contains", ptr)
        cmin = _nonneg_int(node, "minContains", ptr)
        cmax = _nonneg_int(node, "maxContains", ptr)
        contains = ((sub(ctx, ptr + ("contains",)), 1 if cmin is None else cmin, cmax),)
    else:
        for kw in ("minContains", "maxContains"):
            if kw in node:
                _nonneg_int(node, kw, ptr)
                ctx.note_ignored(p, kw, "no effect without contains")
    if hi is not None and lo > hi:
        ctx.note_empty("minItems", p)
        return replace(ANY, array=())
    return replace(ANY, array=(ArrayC(prefix, items, lo, hi, contains, unique, p),))


def _object_schema(node: dict, ptr: tuple, ctx: Any) -> Schema | None:
    if not any(k in node for k in OBJECT_KEYWORDS):
        return None
    p = pointer_text(ptr)
    props: tuple = ()
    patterns: tuple = ()
    if "properties" in node:
        props = tuple((k, sub(ctx, ptr + ("properties", k))) for k in _schema_map(node, "properties", ptr))
    if "patternProperties" in node:
        pats = _schema_map(node, "patternProperties", ptr)
        patterns = tuple((k, sub(ctx, ptr + ("patternProperties", k))) for k in pats)
    additional: Handle = TRUE
    if "additionalProperties" in node:
        _schema_value(node, "additionalProperties", ptr)
        additional = sub(ctx, ptr + ("additionalProperties",))
    if ctx.opts.strict and (props or patterns) and node.get("additionalProperties", True) is True:
        additional = FALSE  # strict: only what the object lists, even where it allows more
    required: list[str] = []
    if "required" in node:
        required = _string_list(node["required"], "required", ptr)
    lo = _nonneg_int(node, "minProperties", ptr) or 0
    hi = _nonneg_int(node, "maxProperties", ptr)
    names: tuple = ()
    if "propertyNames" in node:
        _schema_value(node, "propertyNames", ptr)
        names = (sub(ctx, ptr + ("propertyNames",)),)
    dep_required: list[tuple[str, tuple[str, ...]]] = []
    dep_schemas: list[tuple[str, Handle]] = []
    if "dependentRequired" in node:
        v = node["dependentRequired"]
        if not isinstance(v, dict):
            raise _bad("dependentRequired", ptr, "must be an object of string arrays")
        for k, deps in v.items():
            dep_required.append((k, tuple(_string_list(deps, "dependentRequired", ptr))))
    if "dependentSchemas" in node:
        for k in _schema_map(node, "dependentSchemas", ptr):
            dep_schemas.append((k, sub(ctx, ptr + ("dependentSchemas", k))))
    if "dependencies" in node:
        v = node["dependencies"]
        if not isinstance(v, dict):
            raise _bad("dependencies", ptr, "must be an object")
        for k, dep in v.items():
            if isinstance(dep, list):
                dep_required.append((k, tuple(_string_list(dep, "dependencies", ptr))))
            elif isinstance(dep, (dict, bool)):
                dep_schemas.append((k, sub(ctx, ptr + ("dependencies", k))))
            else:
                raise _bad("dependencies", ptr, "values must be arrays of strings or schemas")
    dep_required = [(k, d) for k, d in dep_required if d]
    if hi is not None and lo > hi:
        ctx.note_empty("minProperties", p)
        return replace(ANY, object=())
    policy = KeyPolicy(props, patterns, additional, p)
    rec = ObjectC(
        (policy,) if not policy.is_trivial() else (),
        frozenset(required),
        tuple(dict.fromkeys(required)),
        lo,
        hi,
        names,
        tuple(dep_required),
        tuple(dep_schemas),
        p,
    )
    return replace(ANY, object=(rec,))


#: In-place applicators whose annotations depend on which branch succeeds: ``unevaluated*``
#: next to them (directly or through ``$ref`` / ``allOf``) is refused.
_BRANCHING = ("anyOf", "oneOf", "not", "if", "dependentSchemas", "dependencies", "$dynamicRef", "$recursiveRef")


def _in_place_closure(node: dict, ptr: tuple, kw: str, ctx: Any) -> list[dict] | str:
    """The schema objects that apply in place to the same instance through ``$ref`` and
    ``allOf`` (``node`` first); a string naming the blocking keyword if a branching applicator
    is among them."""
    out: list[dict] = []
    seen: set[tuple] = set()
    stack: list[tuple[Any, tuple]] = [(node, ptr)]
    while stack:
        n, at = stack.pop()
        if not isinstance(n, dict) or at in seen:
            continue
        seen.add(at)
        out.append(n)
        for k in _BRANCHING:
            if k in n:
                return k
        if at != ptr and kw in n:
            return kw  # a nested unevaluated* keyword: annotations of annotations
        if isinstance(n.get("$ref"), str):
            target = ctx.doc.resolve(n["$ref"], at)
            stack.append((ctx.doc.at(target), target))
        if isinstance(n.get("allOf"), list):
            stack.extend((x, at + ("allOf", i)) for i, x in enumerate(n["allOf"]))
    return out


def _unevaluated(node: dict, ptr: tuple, kw: str, ctx: Any) -> Schema | None:
    """``unevaluatedProperties`` / ``unevaluatedItems`` where the schema objects applying in
    place are reached through ``$ref`` and ``allOf`` only: "evaluated" is then what their
    ``properties``/``patternProperties`` (``prefixItems``/``items``) name, whatever the
    instance, and the keyword works like ``additionalProperties`` (``items``) over all of them.
    Next to a branching applicator (``anyOf``, ``if``...) it is refused (None)."""
    p = pointer_text(ptr)
    closure = _in_place_closure(node, ptr, kw, ctx)
    if isinstance(closure, str):
        ctx.refuse(kw, p, f"{kw} next to {closure} is not supported (annotations of branches are not tracked)")
        return None
    h = Loc(ptr + (kw,))
    if kw == "unevaluatedProperties":
        names: dict[str, None] = {}
        patterns: dict[str, None] = {}
        for n in closure:
            if "additionalProperties" in n:
                ctx.note_ignored(p, kw, "no effect: an additionalProperties evaluates every other key")
                return None
            if isinstance(n.get("properties"), dict):
                names.update(dict.fromkeys(n["properties"]))
            if isinstance(n.get("patternProperties"), dict):
                patterns.update(dict.fromkeys(n["patternProperties"]))
        policy = KeyPolicy(tuple((k, TRUE) for k in names), tuple((k, TRUE) for k in patterns), h, p)
        return replace(ANY, object=(ObjectC((policy,), ptr=p),))
    evaluated = 0
    for n in closure:
        if "contains" in n:
            ctx.refuse(kw, p, "unevaluatedItems next to contains is not supported")
            return None
        items = n.get("items")
        if items is not None and not isinstance(items, list):
            ctx.note_ignored(p, kw, "no effect: an items evaluates every item after prefixItems")
            return None
        if isinstance(items, list) and "additionalItems" in n:
            ctx.note_ignored(p, kw, "no effect: an additionalItems evaluates every other item")
            return None
        prefix = n.get("prefixItems") if isinstance(n.get("prefixItems"), list) else items
        evaluated = max(evaluated, len(prefix) if isinstance(prefix, list) else 0)
    return replace(ANY, array=(ArrayC((TRUE,) * evaluated, h, ptr=p),))


# ---------------------------------------------------------------------------------------------
# The whole object


def normalize_object(ctx: Any, ptr: tuple, node: Any) -> Schema:
    """The normal form of the schema object ``node`` found at ``ptr``."""
    if node is True:
        return ANY
    if node is False:
        ctx.note_empty("false", pointer_text(ptr))
        return NEVER
    if not isinstance(node, dict):
        raise SchemaError("a schema must be an object or a boolean", keyword=None, pointer=pointer_text(ptr))
    p = pointer_text(ptr)
    ctx.account(p, node)
    meta = node.get("$schema")
    if meta is not None and not (isinstance(meta, str) and _KNOWN_META.match(meta)):
        ctx.refuse("$schema", p, f"unknown meta-schema {meta!r}: the vocabularies it enables are unknown")
    node = _as_in_draft(ctx, p, node)
    parts: list[Schema] = []
    if "type" in node:
        parts.append(_type_schema(node, ptr))
    if "const" in node:
        parts.append(const_schema(node["const"]))
    if "enum" in node:
        values = node["enum"]
        if not isinstance(values, list):
            raise _bad("enum", ptr, "must be an array")
        parts.append(enum_schema(values, ctx) if values else NEVER)
        if not values:
            ctx.note_empty("enum", p)
    for build in (_number_schema, _string_schema, _array_schema, _object_schema):
        group = build(node, ptr, ctx)
        if group is not None:
            parts.append(group)
    for kw in ("unevaluatedProperties", "unevaluatedItems"):
        if kw in node:
            _schema_value(node, kw, ptr)
            if node[kw] is not True:
                extra = _unevaluated(node, ptr, kw, ctx)
                if extra is not None:
                    parts.append(extra)
    # in-place applicators
    if "$ref" in node:
        if not isinstance(node["$ref"], str):
            raise _bad("$ref", ptr, "must be a string")
        target = ctx.doc.resolve(node["$ref"], ptr)
        parts.append(ctx.normalize(Loc(target), via=("$ref", p)))
    for kw in ("$dynamicRef", "$recursiveRef"):
        if kw in node:
            target = ctx.static_dynamic_ref(kw, node[kw], ptr)
            parts.append(ANY if target is None else ctx.normalize(Loc(target), via=(kw, p)))
    if "allOf" in node:
        n = len(_schema_list(node, "allOf", ptr))
        parts.extend(ctx.normalize(Loc(ptr + ("allOf", i)), via=("allOf", p)) for i in range(n))
    if "anyOf" in node:
        n = len(_schema_list(node, "anyOf", ptr))
        parts.append(union([ctx.normalize(Loc(ptr + ("anyOf", i)), via=("anyOf", p)) for i in range(n)], ctx))
    # oneOf, not and if only matter for instances of everything else: give them that as a base
    base = intersect_all(parts, ctx)
    if base.is_empty() and parts and not any(x.is_empty() for x in parts):
        ctx.note_empty(_first_constraint(node), p)
    parts = [base]
    if "oneOf" in node:
        n = len(_schema_list(node, "oneOf", ptr))
        branches = [ctx.normalize(Loc(ptr + ("oneOf", i)), via=("oneOf", p)) for i in range(n)]
        parts.append(ctx.one_of(branches, p, base))
    if "not" in node:
        _schema_value(node, "not", ptr)
        inner = ctx.normalize(Loc(ptr + ("not",)), via=("not", p))
        parts.append(ctx.complement_or_refuse(inner, "not", p, base))
    if "if" in node:
        _schema_value(node, "if", ptr)
        cond = ctx.normalize(Loc(ptr + ("if",)), via=("if", p))
        then = ANY
        other = ANY
        if "then" in node:
            _schema_value(node, "then", ptr)
            then = ctx.normalize(Loc(ptr + ("then",)), via=("then", p))
        if "else" in node:
            _schema_value(node, "else", ptr)
            other = ctx.normalize(Loc(ptr + ("else",)), via=("else", p))
        parts.append(ctx.if_then_else(cond, then, other, p, base))
    else:
        for kw in ("then", "else"):
            if kw in node:
                ctx.note_ignored(p, kw, "no effect without if")
    result = intersect_all(parts, ctx)
    if result.is_empty() and not base.is_empty():
        ctx.note_empty(next(k for k in ("oneOf", "not", "if") if k in node), p)
    if result.is_empty() and parts and not any(s.is_empty() for s in parts):
        ctx.note_empty(_first_constraint(node), p)
    return result


#: Validation keywords 2019-09 and 2020-12 introduced: unknown, so ignored, in earlier drafts.
_FROM_2020 = frozenset({"prefixItems"})
_FROM_2019 = _FROM_2020 | frozenset(
    {"dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains"}
)
#: Keywords a draft does not define yet (its validators ignore them as unknown).
_NOT_YET = {
    "draft-03": _FROM_2019 | frozenset({"const", "contains", "propertyNames", "if", "then", "else"}),
    "draft-04": _FROM_2019 | frozenset({"const", "contains", "propertyNames", "if", "then", "else"}),
    "draft-06": _FROM_2019 | frozenset({"if", "then", "else"}),
    "draft-07": _FROM_2019,
    "2019-09": _FROM_2020,
}
#: Drafts in which every keyword next to ``$ref`` is ignored.
_REF_ALONE = ("draft-03", "draft-04", "draft-06", "draft-07")


def _as_in_draft(ctx: Any, p: str, node: dict) -> dict:
    """``node`` without the keywords its document's draft ignores: before 2019-09 the siblings
    of ``$ref``, and keywords later drafts introduced."""
    draft = getattr(getattr(ctx, "doc", None), "draft", "2020-12")
    if draft in _REF_ALONE and isinstance(node.get("$ref"), str):
        ignored = [k for k in node if k != "$ref" and k in KNOWN and k not in ANNOTATIONS]
        for kw in ignored:
            ctx.note_ignored(p, kw, f"next to $ref (ignored in {draft})")
        return {k: v for k, v in node.items() if k not in ignored}
    unknown = _NOT_YET.get(draft, frozenset()) & node.keys()
    for kw in unknown:
        ctx.note_ignored(p, kw, f"not a {draft} keyword")
    return {k: v for k, v in node.items() if k not in unknown} if unknown else node


def _first_constraint(node: dict) -> str:
    for kw in ("const", "enum"):
        if kw in node:
            return kw
    for kw in node:
        if kw in KNOWN and kw not in ANNOTATIONS:
            return kw
    return "type"
