"""Object records to grammar: listed keys in the chosen order, other keys, counts, dependencies.

An :class:`~.model.ObjectC` becomes ``{`` entries ``}`` where

* *listed* keys (named by ``properties`` or ``required``) appear at most once, with the value
  schema every key policy gives them (:func:`~.objkeys.key_verdict`); a required key must appear;
* *other* keys (any string not listed, split by which ``patternProperties`` match) may repeat
  and follow the listed ones (``"schema"`` and ``"required_first"`` orders) or interleave with
  them (``"any"``);
* ``minProperties``/``maxProperties`` are counted in the states of a small automaton;
* ``dependentRequired``/``dependentSchemas`` split the record into alternatives first (the
  trigger key absent, or present together with what it demands).

Other keys are excluded from the listed names in every spelling (:func:`~.json_text.string_not_in`),
so a listed name cannot slip in again as an "other" key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import LimitError
from ..grammar import ir
from .algebra import intersect_all, intersect_object
from .evaluate import accepts
from .json_text import string_literal, string_not_in
from .model import FALSE, TRUE, Handle, KeyPolicy, ObjectC, StringC, StrValues, all_of
from .objkeys import key_verdict, listed_keys

#: Keys not named in ``properties`` (required-only, from dependencies, from a finite
#: ``propertyNames``) are accepted in any order when there are at most this many.
BAG_LIMIT = 8


@dataclass
class _Entry:
    node: ir.Node  # key, colon and value
    required: bool
    index: int
    ordered: bool  # named in a ``properties``: written in schema order; else in any order


def _forbid(rec: ObjectC, key: str, ctx: Any) -> ObjectC | None:
    return intersect_object(rec, ObjectC((KeyPolicy(((key, FALSE),)),)), ctx)


def _require(rec: ObjectC, keys: tuple[str, ...]) -> ObjectC:
    new = tuple(k for k in keys if k not in rec.required)
    return replace(rec, required=rec.required | frozenset(new), required_order=rec.required_order + new)


def expand_dependencies(em: Any, rec: ObjectC) -> list[ObjectC]:
    """Alternatives without ``dependentRequired``/``dependentSchemas`` whose union is ``rec``."""
    if not rec.dep_required and not rec.dep_schemas:
        return [rec]
    ctx = em.ctx
    limit = ctx.opts.max_alternatives
    work: list[tuple[ObjectC, frozenset]] = [(rec, frozenset())]
    done: list[ObjectC] = []
    steps = 0
    while work:
        steps += 1
        if len(work) + len(done) > limit or steps > 4 * limit:
            kw = "dependentSchemas" if rec.dep_schemas else "dependentRequired"
            ctx.refuse(kw, rec.ptr, f"{kw} needs more than {limit} alternatives (max_alternatives)")
            return [replace(rec, dep_required=(), dep_schemas=())]
        r, seen = work.pop()
        if r.dep_required:
            (a, bs), rest = r.dep_required[0], r.dep_required[1:]
            r = replace(r, dep_required=rest)
            if a in r.required:
                work.append((_require(r, bs), seen))
            else:
                forbidden = _forbid(r, a, ctx)
                if forbidden is not None:
                    work.append((forbidden, seen))
                work.append((_require(r, (a,) + bs), seen))
            continue
        if r.dep_schemas:
            (a, h), rest = r.dep_schemas[0], r.dep_schemas[1:]
            r = replace(r, dep_schemas=rest)
            if (a, h) in seen:
                work.append((r, seen))
                continue
            seen = seen | {(a, h)}
            dep = ctx.normalize(h)
            if a not in r.required:
                forbidden = _forbid(r, a, ctx)
                if forbidden is not None:
                    work.append((forbidden, seen))
            present = _require(r, (a,))
            for o in dep.object:
                m = intersect_object(present, o, ctx)
                if m is not None:
                    work.append((m, seen))
            continue
        if r not in done:
            done.append(r)
    return done


def expand_witnesses(em: Any, rec: ObjectC) -> list[ObjectC]:
    """Alternatives for "some key outside ``names`` has a value in ``v``" (a witness): one of
    the record's own listed keys that qualifies is present with such a value, or (the witness
    kept on the record) an unlisted key is; several witnesses are refused."""
    if not rec.witnesses:
        return [rec]
    ctx = em.ctx
    if len(rec.witnesses) > 1:
        ctx.refuse("not", rec.ptr, "several 'some other key' conditions on one object are not supported")
        return [replace(rec, witnesses=())]
    (names, patterns, v) = rec.witnesses[0]
    out = [rec]
    for k in listed_keys(rec):
        if k in names:
            continue
        matches = [ctx.pattern_matches(p, ptr, k) for p, ptr in patterns]
        if any(m is None or m for m in matches):
            continue
        present = intersect_object(
            replace(rec, witnesses=()), ObjectC((KeyPolicy(((k, v),)),), frozenset((k,)), (k,)), ctx
        )
        if present is not None:
            out.append(present)
    return out


def object_node(em: Any, rec: ObjectC, depth: Any, owner: str) -> ir.Node:
    alts = [w for a in expand_dependencies(em, rec) for w in expand_witnesses(em, a)]
    refs = [
        em.keyed_rule(("object", a, depth), owner + "-obj", lambda name, a=a: _build(em, a, depth, name)) for a in alts
    ]
    return ir.alt(*refs)


def _names_schema(em: Any, rec: ObjectC) -> Any:
    if not rec.names:
        return None
    return intersect_all([em.ctx.normalize(h) for h in rec.names], em.ctx)


def _extra_classes(em: Any, rec: ObjectC, listed: list[str], names: Any, depth: Any) -> list[ir.Node]:
    """Entry nodes (key, colon, value) for keys not listed, one per pattern cell."""
    ctx = em.ctx
    child = em.child_depth(depth)
    colon = em.layout.colon()
    pats: list[tuple[str, str]] = []
    for pol in rec.policies:
        for pat, _ in pol.patterns:
            if (pat, pol.ptr) not in pats and pat not in (p for p, _ in pats):
                pats.append((pat, pol.ptr))
    refused = any(ctx.pattern_refused(p, ptr) for p, ptr in pats)
    cells: list[tuple[frozenset[str], Handle]] = []
    if refused:
        cells = [(frozenset(), TRUE)]
        pats = []
    elif not pats:
        cells = [(frozenset(), all_of(*(p.additional for p in rec.policies)))]
    else:
        if 2 ** len(pats) > ctx.opts.max_pattern_cells:
            ctx.refuse(
                "patternProperties",
                rec.ptr,
                f"{len(pats)} different patternProperties need more than {ctx.opts.max_pattern_cells} key classes",
            )
            cells = [(frozenset(), TRUE)]
            pats = []
        else:
            names_only = [p for p, _ in pats]
            for mask in range(2 ** len(pats)):
                m = frozenset(names_only[i] for i in range(len(pats)) if mask >> i & 1)
                parts = []
                for pol in rec.policies:
                    hits = [h for pat, h in pol.patterns if pat in m]
                    parts.append(all_of(*hits) if hits else pol.additional)
                cells.append((m, all_of(*parts)))
    live = [(m, v) for m, v in cells if not ctx.normalize(v).is_empty()]
    if not live:
        return []
    if pats and len({v for _, v in cells}) == 1:
        live = [(frozenset(), cells[0][1])]
        pats = []
    base = string_not_in(
        listed,
        char=em.string_char,
        u_rule=em.u_escape,
        esc_rule=em.short_escape,
        define=lambda n: em.define("key-rest", n),
    )
    names_node = None
    if names is not None:
        names_node = ir.alt(*(em.string_alt(a) for a in names.string))
    out = []
    for m, verdict in live:
        key: ir.Node = base
        if pats:
            for p, ptr in pats:
                pnode = em._string_base(0, None, (p, ptr), None)
                key = ir.Intersection(key, pnode) if p in m else ir.Difference(key, pnode)
        if names_node is not None:
            key = ir.Intersection(key, names_node)
        key_ref = em.shared("key", key)
        out.append(ir.seq(key_ref, colon, em.handle_rule(verdict, child)))
    return out


def _build(em: Any, rec: ObjectC, depth: Any, name: str) -> ir.Node:
    ctx = em.ctx
    child = em.child_depth(depth)
    colon = em.layout.colon()
    names = _names_schema(em, rec)
    if names is not None and not names.string:
        names_keys: list[str] | None = []
    elif names is not None and all(isinstance(a, StrValues) for a in names.string):
        names_keys = sorted(set().union(*(a.values for a in names.string)))  # type: ignore[union-attr]
    else:
        names_keys = None
    listed = listed_keys(rec)
    in_props = {k for pol in rec.policies for k, _ in pol.props}
    all_listed = list(listed)
    if names_keys is not None:
        all_listed += [k for k in names_keys if k not in listed]
    entries: list[_Entry] = []
    for k in all_listed:
        verdict = key_verdict(rec, k, ctx)
        if names is not None and not accepts(names, k, ctx):
            verdict = FALSE
        if ctx.normalize(verdict).is_empty():
            if k in rec.required:
                return ir.NOTHING
            continue
        node = ir.seq(string_literal(k), colon, em.handle_rule(verdict, child))
        entries.append(_Entry(node, k in rec.required, len(entries), k in in_props))
    extras = [] if names_keys is not None else _extra_classes(em, rec, all_listed, names, depth)
    witness = _witness_entry(em, rec, all_listed, names_keys, depth) if rec.witnesses else None
    if witness is not None and witness == ir.NOTHING:
        return ir.NOTHING
    if ctx.opts.property_order == "any" or _small_any_order(em, rec, entries, witness):
        ordered, bag = [], entries
    else:
        ordered = [e for e in entries if e.ordered]
        bag = [e for e in entries if not e.ordered]
        if len(bag) > BAG_LIMIT:  # too many for any order: the order of ``required``, then names
            ordered, bag = entries, []
    if ctx.opts.property_order == "required_first":
        ordered.sort(key=lambda e: (not e.required, e.index))
    if witness is not None and (bag or _Counter(rec.min_props, rec.max_props).counted):
        ctx.refuse("not", rec.ptr, "'some other key' together with counted or unordered keys is not supported")
        witness = None
    floating = _floating_required(em, rec, ordered, bag, witness)
    if floating:
        body = _with_floating(em, rec, [e for e in ordered if e not in floating], floating, extras, depth, name)
    else:
        body = _in_order(em, rec, ordered, bag, extras, depth, name, witness)
    return ir.seq(ir.lit("{"), body, ir.lit("}"))


def _small_any_order(em: Any, rec: ObjectC, entries: list[_Entry], witness: ir.Node | None) -> bool:
    """Whether this object's listed keys go in any order under ``any_order_up_to``: few enough
    of them, and states left in the schema's budget (taken here). An object with a witness keeps
    its order: the witness is not supported together with unordered keys."""
    opts = em.opts
    if witness is not None or not 1 < len(entries) <= opts.any_order_up_to:
        return False
    states = 2 ** len(entries) * (_Counter(rec.min_props, rec.max_props).cap + 1)
    if states > min(em.any_order_budget, opts.max_any_order_states):
        return False
    em.any_order_budget -= states
    return True


def _floating_required(
    em: Any, rec: ObjectC, ordered: list[_Entry], bag: list[_Entry], witness: ir.Node | None
) -> list[_Entry]:
    """The required keys of a larger object that may come anywhere among its ordered ones
    (``any_order_required_up_to``): a model often writes an object's required keys (``name``,
    ``type``, a ``oneOf`` branch's discriminator) first, whatever the schema's order. None when
    the object has keys in any order already, a witness, or too many required keys; budget
    taken as in :func:`_small_any_order`."""
    opts = em.opts
    if bag or witness is not None:
        return []
    floating = [e for e in ordered if e.required]
    if not 1 <= len(floating) <= opts.any_order_required_up_to or len(floating) == len(ordered):
        return []
    counts = _Counter(rec.min_props, rec.max_props).cap + 1
    states = 2 * (len(ordered) - len(floating) + 1) * 2 ** len(floating) * counts
    if states > min(em.any_order_budget, opts.max_any_order_states):
        return []
    em.any_order_budget -= states
    return floating


def _with_floating(
    em: Any,
    rec: ObjectC,
    entries: list[_Entry],
    floating: list[_Entry],
    extras: list[ir.Node],
    depth: Any,
    name: str,
) -> ir.Node:
    """Ordered entries with required ``floating`` ones anywhere among them, each once, then the
    other keys. Two states per (position, floating keys written, count), so that each text has
    one derivation: ``A`` (after a key, or at the start) may write a floating key or go on to
    ``B``; ``B`` writes the ordered entry at the position or skips it if optional, and at the end
    closes once every floating key is written."""
    counter = _Counter(rec.min_props, rec.max_props)
    lay = em.layout
    n, full = len(entries), (1 << len(floating)) - 1
    a_refs: dict[tuple[int, int, int], ir.Node] = {}
    b_refs: dict[tuple[int, int, int], ir.Node] = {}
    for i in range(n, -1, -1):
        for written in range(full, -1, -1):
            for c in range(counter.cap, -1, -1):
                if i == n:
                    b_body = _extras_tail(em, extras, counter, c, depth) if written == full else ir.NOTHING
                else:
                    e = entries[i]
                    b_parts = [] if e.required else [b_refs[(i + 1, written, c)]]
                    if counter.can_add(c):
                        b_parts.append(ir.seq(lay.sep(c, depth), e.node, a_refs[(i + 1, written, counter.add(c))]))
                    b_body = ir.alt(*b_parts)
                b_refs[(i, written, c)] = em.define(f"{name}-{i}-{written}-{c}b", b_body)
                a_parts = [b_refs[(i, written, c)]]
                if counter.can_add(c):
                    for k, f in enumerate(floating):
                        if not written >> k & 1:
                            step = a_refs[(i, written | 1 << k, counter.add(c))]
                            a_parts.append(ir.seq(lay.sep(c, depth), f.node, step))
                a_refs[(i, written, c)] = em.define(f"{name}-{i}-{written}-{c}a", ir.alt(*a_parts))
    return a_refs[(0, 0, 0)]


def _witness_entry(em: Any, rec: ObjectC, listed: list[str], names_keys: Any, depth: Any) -> ir.Node | None:
    """The entry node (key, colon, value) of a key that is not listed anywhere and satisfies the
    record's witness; None if unsupported (refused), NOTHING if no such key can exist."""
    ctx = em.ctx
    names, patterns, v = rec.witnesses[0]
    if names_keys is not None or rec.names or any(pol.patterns for pol in rec.policies):
        ctx.refuse("not", rec.ptr, "'some other key' next to patternProperties or propertyNames is not supported")
        return None
    value = all_of(v, *(p.additional for p in rec.policies))
    if ctx.normalize(value).is_empty():
        return ir.NOTHING
    key: ir.Node = string_not_in(
        sorted(set(listed) | names),
        char=em.string_char,
        u_rule=em.u_escape,
        esc_rule=em.short_escape,
        define=lambda n: em.define("key-rest", n),
    )
    for p, ptr in patterns:
        key = ir.Difference(key, em._string_base(0, None, (p, ptr), None))
    return ir.seq(em.shared("key", key), em.layout.colon(), em.handle_rule(value, em.child_depth(depth)))


class _Counter:
    """Property counts as automaton states: exact up to ``maxProperties``, or saturating."""

    def __init__(self, lo: int, hi: int | None) -> None:
        self.lo, self.hi = lo, hi
        self.counted = lo > 0 or hi is not None
        self.cap = hi if hi is not None else max(lo, 1)

    def can_add(self, c: int) -> bool:
        return self.hi is None or c < self.hi

    def add(self, c: int) -> int:
        return c + 1 if self.hi is not None else min(c + 1, self.cap)

    def can_end(self, c: int) -> bool:
        return c >= self.lo

    def remaining(self, c: int) -> tuple[int, int | None]:
        lo = 0 if (self.hi is None and c >= self.cap) else max(0, self.lo - c)
        return lo, (None if self.hi is None else self.hi - c)


def _extras_tail(
    em: Any, extras: list[ir.Node], counter: _Counter, c: int, depth: Any, witness: ir.Node | None = None
) -> ir.Node:
    lay = em.layout
    if witness is not None:  # at least one witness among the other keys (counts are not tracked here)
        x = (extras[0] if len(extras) == 1 else em.shared("entry", ir.alt(*extras))) if extras else ir.NOTHING
        rest = ir.star(ir.seq(lay.comma(depth), x))
        if c == 0:
            lead = ir.alt(witness, ir.seq(x, rest, lay.comma(depth), witness))
            return ir.seq(lay.open(depth), lead, rest, lay.close(depth))
        return ir.seq(rest, lay.comma(depth), witness, rest, lay.close(depth))
    end = lay.end(c, depth) if counter.can_end(c) else ir.NOTHING
    if not extras:
        return end
    x = extras[0] if len(extras) == 1 else em.shared("entry", ir.alt(*extras))
    lo, hi = counter.remaining(c)
    comma_x = ir.seq(lay.comma(depth), x)
    if c == 0:
        if hi == 0:
            return end
        first = ir.seq(
            lay.open(depth), x, ir.repeat(comma_x, max(lo - 1, 0), None if hi is None else hi - 1), lay.close(depth)
        )
        return ir.alt(end if lo == 0 else ir.NOTHING, first)
    return ir.seq(ir.repeat(comma_x, lo, hi), lay.close(depth))


def _in_order(
    em: Any,
    rec: ObjectC,
    entries: list[_Entry],
    bag: list[_Entry],
    extras: list[ir.Node],
    depth: Any,
    name: str,
    witness: ir.Node | None = None,
) -> ir.Node:
    """Listed properties in order (states: position, count), then the bag and the other keys."""
    counter = _Counter(rec.min_props, rec.max_props)
    n = len(entries)
    states = (n + 1) * (counter.cap + 1)
    if states > em.opts.max_count_states:
        raise LimitError(
            f"object at {rec.ptr or '#'} needs {states} states",
            limit="max_count_states",
            value=em.opts.max_count_states,
        )
    lay = em.layout
    machine = _BagMachine(em, rec, bag, extras, counter, depth, name) if bag else None
    refs: dict[tuple[int, int], ir.Node] = {}
    # build from the end so each state refers to already defined ones
    for i in range(n, -1, -1):
        for c in range(counter.cap, -1, -1):
            if i == n:
                if machine is not None:
                    refs[(i, c)] = machine.state(frozenset(), c)
                    continue
                body = _extras_tail(em, extras, counter, c, depth, witness)
            else:
                e = entries[i]
                parts = []
                if not e.required:
                    parts.append(refs[(i + 1, c)])
                if counter.can_add(c):
                    parts.append(ir.seq(lay.sep(c, depth), e.node, refs[(i + 1, counter.add(c))]))
                body = ir.alt(*parts)
            refs[(i, c)] = body if (i == n and not extras and witness is None) else em.define(f"{name}-{i}-{c}", body)
    if machine is not None:
        machine.run()
    return refs[(0, 0)]


class _BagMachine:
    """Entries in any order, each at most once, other keys interleaved: states are (entries
    written, count), at most ``max_any_order_states`` of them."""

    def __init__(
        self, em: Any, rec: ObjectC, bag: list[_Entry], extras: list[ir.Node], counter: _Counter, depth: Any, name: str
    ) -> None:
        self.em, self.rec, self.bag, self.counter, self.depth, self.name = em, rec, bag, counter, depth, name
        self.required = frozenset(i for i, e in enumerate(bag) if e.required)
        self.x = None
        if extras:
            self.x = extras[0] if len(extras) == 1 else em.shared("entry", ir.alt(*extras))
        self.names: dict[tuple[frozenset[int], int], str] = {}
        self.order: list[tuple[frozenset[int], int]] = []
        self.done = 0

    def state(self, s: frozenset[int], c: int) -> ir.Ref:
        key = (s, c)
        if key not in self.names:
            limit = self.em.opts.max_any_order_states
            if len(self.names) >= limit:
                raise LimitError(
                    f"the properties of the object at {self.rec.ptr or '#'} in any order need more than {limit} states",
                    limit="max_any_order_states",
                    value=limit,
                )
            self.names[key] = self.em.fresh(f"{self.name}-any")
            self.order.append(key)
        return ir.Ref(self.names[key])

    def run(self) -> None:
        lay, counter, depth = self.em.layout, self.counter, self.depth
        while self.done < len(self.order):
            s, c = self.order[self.done]
            self.done += 1
            parts: list[ir.Node] = []
            if self.required <= s and counter.can_end(c):
                parts.append(lay.end(c, depth))
            if counter.can_add(c):
                for i, e in enumerate(self.bag):
                    if i not in s:
                        parts.append(ir.seq(lay.sep(c, depth), e.node, self.state(s | {i}, counter.add(c))))
                if self.x is not None:
                    parts.append(ir.seq(lay.sep(c, depth), self.x, self.state(s, counter.add(c))))
            self.em.rules[self.names[(s, c)]] = ir.alt(*parts)


__all__ = ["object_node", "expand_dependencies", "StringC"]
