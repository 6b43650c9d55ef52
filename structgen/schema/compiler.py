"""The translation context: normalises subschemas on demand, and keeps the books.

A :class:`Compiler` owns one :class:`~.loader.Document` and the options. It normalises handles
(:meth:`Compiler.normalize`, cached, with reference cycles that have no base case reported), and
implements the combinators that need judgement: exact ``oneOf``, ``not`` and ``if``/``then``/
``else``. It records, per schema location, which keywords were enforced, ignored (annotations,
unknown keywords) or refused; in lenient mode a refusal is recorded in :attr:`Compiler.dropped`
and the keyword is weakened (never strengthened), otherwise it raises
:class:`~structgen.errors.SchemaError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from ..deadline import check_deadline
from ..errors import LimitError, SchemaError
from ..grammar import Grammar
from .algebra import intersect, intersect_all, union
from .disjoint import disjoint
from .evaluate import accepts, finite_members
from .keywords import ANNOTATIONS, KNOWN, const_schema, enum_schema, normalize_object
from .loader import Document, pointer_text
from .model import (
    ANY,
    NEVER,
    AllOfH,
    AnyH,
    AnyOfH,
    ConstH,
    Fixed,
    Handle,
    Loc,
    NeverH,
    NotH,
    Schema,
    StringC,
    StrValues,
)
from .negate import Unsupported, complement
from .options import SchemaOptions
from .scalars import string_node


@dataclass(frozen=True)
class Dropped:
    """A keyword lenient mode did not enforce (the grammar accepts more than the schema)."""

    pointer: str
    keyword: str
    reason: str

    def __str__(self) -> str:
        return f"{self.pointer or '#'}: {self.keyword}: {self.reason}"


@dataclass(frozen=True)
class Ignored:
    """A keyword that does not constrain instances (annotation, unknown, or without effect)."""

    pointer: str
    keyword: str
    reason: str


def _only(s: Schema, type_name: str) -> Schema:
    """The part of ``s`` for one JSON type (number, string, array or object)."""
    return replace(NEVER, **{type_name: getattr(s, type_name)})


_NO_TAINT = 1 << 30


class _Cycle(SchemaError):
    """A subschema was needed while it was being normalised."""


class Compiler:
    def __init__(self, doc: Document, options: SchemaOptions) -> None:
        self.doc = doc
        self.opts = options
        self.dropped: list[Dropped] = []
        self.ignored: list[Ignored] = []
        self.enforced: dict[str, list[str]] = {}
        self.empty_reason: tuple[str, str] | None = None
        self._cache: dict[Handle, Schema] = {}
        self._active: list[Handle] = []
        self._active_set: set[Handle] = set()
        self._via: list[str | None] = []  # the keyword each active handle was entered by
        self._taint = _NO_TAINT  # active positions from here up assumed a cycle back-edge
        self._where: list[str] = [""]
        self._string_grammars: dict[tuple[str, str], Grammar | None] = {}

    # -- the books ------------------------------------------------------------------------------

    def account(self, pointer: str, node: dict) -> None:
        kws = self.enforced.setdefault(pointer, [])
        if kws:
            return  # already accounted (a location normalised twice never happens; be safe)
        for kw in node:
            if kw in ANNOTATIONS:
                self.ignored.append(Ignored(pointer, kw, "annotation"))
            elif kw not in KNOWN:
                self.ignored.append(Ignored(pointer, kw, "unknown keyword (ignored, as the specification says)"))
            elif kw == "id" and self.doc.draft not in ("draft-04", "draft-03"):
                self.ignored.append(Ignored(pointer, kw, "unknown keyword outside draft-04"))
            else:
                kws.append(kw)

    def note_ignored(self, pointer: str, keyword: str, reason: str) -> None:
        kws = self.enforced.get(pointer)
        if kws and keyword in kws:
            kws.remove(keyword)
        self.ignored.append(Ignored(pointer, keyword, reason))

    def note_empty(self, keyword: str, pointer: str) -> None:
        if self.empty_reason is None:
            self.empty_reason = (keyword, pointer)

    def refuse(self, keyword: str, pointer: str, reason: str) -> None:
        """Refuse a keyword: raise, or (lenient) record it; the caller then weakens it."""
        if not self.opts.lenient:
            raise SchemaError(reason, keyword=keyword, pointer=pointer)
        self.dropped.append(Dropped(pointer, keyword, reason))
        kws = self.enforced.get(pointer)
        if kws and keyword in kws:
            kws.remove(keyword)

    def refuse_error(self, err: SchemaError) -> None:
        """A SchemaError from a scalar translator: re-raise, or (lenient) record it."""
        if not self.opts.lenient:
            raise err
        self.refuse(err.keyword or "?", err.pointer, err.message)

    @property
    def where(self) -> str:
        return self._where[-1]

    # -- normalisation ----------------------------------------------------------------------------

    def normalize(self, h: Handle, via: tuple[str, str] | None = None) -> Schema:
        """The normal form of ``h`` (cached).

        A subschema that refers back to itself in place through ``allOf`` (and ``$ref``s),
        ``A = allOf[$ref A, P]``, adds nothing to itself: the back reference counts as ``true``
        (the greatest solution, ``A = P``), and what was computed under that assumption inside
        the cycle is not cached. Any other in-place cycle (``$ref`` alone, ``anyOf``, ``not``...)
        has no well-defined meaning and is an error.
        """
        cached = self._cache.get(h)
        if cached is not None:
            return cached
        check_deadline()
        if h in self._active_set:
            index = self._active.index(h)
            steps = self._via[index + 1 :] + [via[0] if via is not None else None]
            if "allOf" in steps and all(step in ("$ref", "allOf") for step in steps):
                self._taint = min(self._taint, index + 1)
                return ANY
            kw, p = via if via is not None else ("$ref", self.where)
            raise _Cycle(
                "reference cycle with no base case (the schema refers to itself in place)", keyword=kw, pointer=p
            )
        if len(self._active) >= self.opts.max_applicator_depth:
            raise LimitError(
                "in-place applicators ($ref, allOf, ...) nest too deeply",
                limit="max_applicator_depth",
                value=self.opts.max_applicator_depth,
            )
        if len(self._cache) >= self.opts.max_schema_nodes:
            raise LimitError("too many distinct subschemas", limit="max_schema_nodes", value=self.opts.max_schema_nodes)
        position = len(self._active)
        self._active.append(h)
        self._via.append(via[0] if via is not None else None)
        self._active_set.add(h)
        pushed = isinstance(h, Loc)
        if pushed:
            self._where.append(pointer_text(h.ptr))  # type: ignore[attr-defined]
        try:
            result = self._normalize(h)
        finally:
            self._active.pop()
            self._via.pop()
            self._active_set.discard(h)
            if pushed:
                self._where.pop()
        if position < self._taint:
            self._cache[h] = result
        if position <= self._taint:
            self._taint = _NO_TAINT
        return result

    def try_normalize(self, h: Handle) -> Schema | None:
        """The normal form of ``h``, or None if it cannot be had now (it depends on a subschema
        being normalised: proofs that look inside subschemas must then give up)."""
        try:
            return self.normalize(h)
        except _Cycle:  # a genuine in-place cycle is reported when the handle is emitted
            return None

    def is_value_like(self, h: Handle) -> bool:
        """Whether ``h`` is a ``const``/``enum`` (directly or through one ``$ref``): cheap to
        normalise, and what discriminators are made of."""
        if isinstance(h, ConstH):
            return True
        if isinstance(h, AllOfH):
            return any(self.is_value_like(x) for x in h.items)
        if not isinstance(h, Loc):
            return False
        node = self.doc.at(h.ptr)
        for _ in range(2):
            if not isinstance(node, dict):
                return False
            if "const" in node or "enum" in node:
                return True
            ref = node.get("$ref")
            if not isinstance(ref, str):
                return False
            try:
                node = self.doc.at(self.doc.resolve(ref, h.ptr))
            except SchemaError:
                return False
        return False

    def _normalize(self, h: Handle) -> Schema:
        if isinstance(h, AnyH):
            return ANY
        if isinstance(h, NeverH):
            return NEVER
        if isinstance(h, Loc):
            return normalize_object(self, h.ptr, self.doc.at(h.ptr))
        if isinstance(h, AllOfH):
            return intersect_all([self.normalize(x) for x in h.items], self)
        if isinstance(h, AnyOfH):
            return union([self.normalize(x) for x in h.items], self)
        if isinstance(h, NotH):
            return self.complement_or_refuse(self.normalize(h.item), "not", h.origin or self.where)
        if isinstance(h, ConstH):
            return const_schema(h.value)
        if isinstance(h, Fixed):
            return h.schema
        raise TypeError(h)  # pragma: no cover

    # -- combinators ----------------------------------------------------------------------------

    def _filter_finite(self, base: Schema | None, keep: Any) -> Schema | None:
        """When ``base`` is a small finite set of values, the schema of those ``keep`` accepts
        (exact whatever the keywords involved); None otherwise."""
        if base is None:
            return None
        members = finite_members(base)
        if members is None:
            return None
        kept = [v for v in members if keep(v)]
        return enum_schema(kept, self) if kept else NEVER

    def complement_or_refuse(self, s: Schema, keyword: str, pointer: str, within: Schema | None = None) -> Schema:
        filtered = self._filter_finite(within, lambda v: not accepts(s, v, self))
        if filtered is not None:
            return filtered
        try:
            return complement(s, self, within)
        except Unsupported as e:
            self.refuse(keyword, pointer, f"cannot enforce {keyword}: {e.reason} (inner keyword {e.keyword})")
            return ANY

    def one_of(self, branches: list[Schema], pointer: str, base: Schema = ANY) -> Schema:
        """Exactly one branch; ``base`` is what the rest of the schema object already requires.

        Only instances of ``base`` matter, so the branches are restricted to it; and the question
        is asked type by type (two branches may overlap on strings and be disjoint on objects).
        Where branches are provably disjoint, ``oneOf`` is ``anyOf``; where they may overlap,
        branch ``i`` becomes ``i`` minus the others (their complement within ``base``).
        """
        if len(branches) == 1:
            return intersect(branches[0], base, self)
        filtered = self._filter_finite(base, lambda v: sum(1 for b in branches if accepts(b, v, self)) == 1)
        if filtered is not None:
            return filtered
        restricted = [intersect(b, base, self) for b in branches]
        parts: list[Schema] = []
        trues = [sum(1 for b in restricted if flag in b.boolean) for flag in (False, True)]
        parts.append(
            replace(
                NEVER,
                null=sum(1 for b in restricted if b.null) == 1,
                boolean=frozenset(flag for flag, count in zip((False, True), trues) if count == 1),
            )
        )
        for type_name in ("number", "string", "array", "object"):
            typed = [_only(b, type_name) for b in restricted]
            live = [i for i, t in enumerate(typed) if not t.is_empty()]
            if not live:
                continue
            overlap: dict[int, list[int]] = {i: [] for i in live}
            first_pair: tuple[int, int] | None = None
            for a_index, i in enumerate(live):
                for j in live[a_index + 1 :]:
                    if not disjoint(typed[i], typed[j], self):
                        overlap[i].append(j)
                        overlap[j].append(i)
                        first_pair = first_pair or (i, j)
            if first_pair is None or self.opts.one_of == "any_of":
                if first_pair is not None:
                    self.ignored.append(Ignored(pointer, "oneOf", "treated as anyOf (one_of='any_of')"))
                parts.append(union([typed[i] for i in live], self))
                continue
            within = _only(base, type_name)
            try:
                complements: dict[int, Schema] = {}
                for i in live:
                    s = typed[i]
                    for j in overlap[i]:
                        if j not in complements:
                            complements[j] = complement(_only(branches[j], type_name), self, within)
                        s = intersect(s, complements[j], self)
                        if s.is_empty():
                            break
                    parts.append(s)
            except (Unsupported, LimitError) as e:
                i, j = first_pair
                reason = e.reason if isinstance(e, Unsupported) else f"that needs too many alternatives: {e}"
                self.refuse(
                    "oneOf",
                    pointer,
                    f"cannot prove oneOf branches {i} and {j} exclusive ({type_name} instances), and cannot exclude"
                    f" their overlap ({reason}); pass one_of='any_of' to treat it as anyOf",
                )
                parts.append(union([typed[i] for i in live], self))
        return union(parts, self)

    def if_then_else(self, cond: Schema, then: Schema, other: Schema, pointer: str, base: Schema = ANY) -> Schema:
        cond = intersect(cond, base, self)
        if cond == base:
            return then
        if cond.is_empty():
            return other
        if then.is_any() and other.is_any():
            return ANY
        filtered = self._filter_finite(
            base, lambda v: accepts(then, v, self) if accepts(cond, v, self) else accepts(other, v, self)
        )
        if filtered is not None:
            return filtered
        try:
            negated = complement(cond, self, base)
            return union([intersect(cond, then, self), intersect(negated, other, self)], self)
        except (Unsupported, LimitError) as e:
            reason = e.reason if isinstance(e, Unsupported) else str(e)
            self.refuse("if", pointer, f"cannot enforce if/then/else: the complement of if is needed ({reason})")
            return union([then, other], self)

    def static_dynamic_ref(self, keyword: str, value: Any, ptr: tuple) -> tuple | None:
        """The target of a ``$dynamicRef`` / ``$recursiveRef`` that can only mean one place."""
        p = pointer_text(ptr)
        if not isinstance(value, str):
            raise SchemaError(f"invalid {keyword}: must be a string", keyword=keyword, pointer=p)
        if keyword == "$recursiveRef":
            if value != "#":
                self.refuse(keyword, p, "$recursiveRef other than '#' is not supported")
                return None
            target = self.doc.resource_at.get(ptr, ())
            node = self.doc.at(target)
            if isinstance(node, dict) and node.get("$recursiveAnchor") is True and len(self.doc.recursive_anchors) > 1:
                self.refuse(keyword, p, "$recursiveRef with several $recursiveAnchor resources is dynamic")
                return None
            return target
        target = self.doc.resolve(value, ptr, keyword=keyword)
        name = value.split("#", 1)[1] if "#" in value else ""
        node = self.doc.at(target)
        if isinstance(node, dict) and node.get("$dynamicAnchor") == name:
            if len(self.doc.dynamic_anchors.get(name, [])) > 1:
                self.refuse(keyword, p, f"$dynamicRef to {name!r} is dynamic (several $dynamicAnchor {name!r})")
                return None
        return target

    # -- strings -------------------------------------------------------------------------------

    def _scalar_grammar(self, kind: str, value: str, pointer: str) -> Grammar | None:
        key = (kind, value)
        if key in self._string_grammars:
            return self._string_grammars[key]
        try:
            node = (
                string_node(pattern=value, pointer=pointer)
                if kind == "pattern"
                else string_node(format=value, pointer=pointer, exact_formats=self.opts.formats == "exact")
            )
            g: Grammar | None = Grammar({"root": node})
        except SchemaError as e:
            self.refuse_error(e)
            g = None
        self._string_grammars[key] = g
        return g

    def string_accepts(self, rec: Any, value: str) -> bool:
        if isinstance(rec, StrValues):
            return value in rec.values
        assert isinstance(rec, StringC)
        n = len(value)
        if n < rec.min_len or (rec.max_len is not None and n > rec.max_len):
            return False
        text = json.dumps(value, ensure_ascii=False)
        for pattern, ptr in rec.patterns:
            g = self._scalar_grammar("pattern", pattern, ptr)
            if g is not None and not g.matches(text):
                return False
        for fmt, ptr in rec.formats:
            g = self._scalar_grammar("format", fmt, ptr)
            if g is not None and not g.matches(text):
                return False
        return not any(self.string_accepts(m, value) for m in rec.minus)

    def pattern_matches(self, pattern: str, pointer: str, key: str) -> bool | None:
        """Whether ``key`` matches ``pattern``; None if the pattern was refused (lenient mode)."""
        g = self._scalar_grammar("pattern", pattern, pointer)
        if g is None:
            return None
        return g.matches(json.dumps(key, ensure_ascii=False))

    def pattern_refused(self, pattern: str, pointer: str) -> bool:
        return self._scalar_grammar("pattern", pattern, pointer) is None


__all__ = ["Compiler", "Dropped", "Ignored", "intersect_all"]
