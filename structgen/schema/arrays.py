"""Array records to grammar: positions, lengths, ``contains`` counts and ``uniqueItems``.

* Plain arrays: the ``prefixItems`` positions one by one, then ``items`` repeated; length bounds
  stay symbolic (``maxItems: 1000000`` is one counted repetition, never copies).
* ``contains`` with ``minContains``/``maxContains``: an automaton counting elements and matches
  (states bounded by ``max_count_states``); an upper bound needs the complement of the
  ``contains`` schema, a lower bound alone does not but uses it where it exists, so that the
  parse is at one count, not at all of them.
* ``uniqueItems``: enforced when every position allows finitely many values (enums, booleans,
  consts), by a subset construction over the values used so far (``max_unique_states``);
  otherwise refused. It is trivially true when at most one element is allowed.
"""

from __future__ import annotations

from typing import Any

from ..errors import LimitError
from ..grammar import ir
from .json_text import number_literal, string_literal
from .model import AnyH, ArrayC, ConstH, Fixed, Handle, KeyPolicy, NeverH, NumValues, ObjectC, Schema, StrValues, all_of
from .negate import Unsupported, complement


def array_node(em: Any, rec: ArrayC, depth: Any, owner: str) -> ir.Node:
    return em.keyed_rule(("array", rec, depth), owner + "-arr", lambda name: _build(em, rec, depth, name))


def _simplify_contains(em: Any, rec: ArrayC) -> ArrayC | None:
    """Fold contains clauses that are vacuous or only count elements; None if unsatisfiable."""
    lo, hi = rec.min_items, rec.max_items
    kept = []
    for c, cmin, cmax in rec.contains:
        if cmin == 0 and cmax is None:
            continue
        cs = em.ctx.normalize(c)
        if cs.is_any():  # every element matches: the counts are length bounds
            lo = max(lo, cmin)
            hi = cmax if hi is None else (hi if cmax is None else min(hi, cmax))
            continue
        if cs.is_empty():  # no element matches: the count is 0
            if cmin > 0:
                return None
            continue
        kept.append((c, cmin, cmax))
    if hi is not None and lo > hi:
        return None
    return ArrayC(rec.prefix, rec.items, lo, hi, tuple(kept), rec.unique, rec.ptr)


def _build(em: Any, rec: ArrayC, depth: Any, name: str) -> ir.Node:
    simplified = _simplify_contains(em, rec)
    if simplified is None:
        return ir.NOTHING
    rec = simplified
    # positions that cannot hold anything cap the length
    limit = len(rec.prefix) if isinstance(rec.items, NeverH) else None
    for i, h in enumerate(rec.prefix):
        if em.ctx.normalize(h).is_empty():
            limit = i if limit is None else min(limit, i)
            break
    if limit is not None:
        if rec.min_items > limit:
            return ir.NOTHING
        hi = limit if rec.max_items is None else min(rec.max_items, limit)
        rec = ArrayC(
            rec.prefix[:hi],
            rec.items if hi > len(rec.prefix) else _never(),
            rec.min_items,
            hi,
            rec.contains,
            rec.unique,
            rec.ptr,
        )
    if rec.unique and rec.max_items is not None and rec.max_items <= 1:
        rec = ArrayC(rec.prefix, rec.items, rec.min_items, rec.max_items, rec.contains, False, rec.ptr)
    if rec.unique:
        if rec.contains:
            em.ctx.refuse("uniqueItems", rec.ptr, "uniqueItems together with contains is not supported")
        else:
            node = _unique(em, rec, depth, name)
            if node is not None:
                return ir.seq(ir.lit("["), node, ir.lit("]"))
        rec = ArrayC(rec.prefix, rec.items, rec.min_items, rec.max_items, rec.contains, False, rec.ptr)
    if rec.contains:
        node = _contains(em, rec, depth, name)
        if node is not None:
            return ir.seq(ir.lit("["), node, ir.lit("]"))
        rec = ArrayC(rec.prefix, rec.items, rec.min_items, rec.max_items, (), False, rec.ptr)
    return ir.seq(ir.lit("["), _plain(em, rec, depth, name), ir.lit("]"))


def _never() -> Handle:
    from .model import FALSE

    return FALSE


def _plain(em: Any, rec: ArrayC, depth: Any, name: str) -> ir.Node:
    lay = em.layout
    child = em.child_depth(depth)
    p = len(rec.prefix)
    lo, hi = rec.min_items, rec.max_items
    # the tail after the prefix: items repeated
    rem_lo = max(0, lo - p)
    rem_hi = None if hi is None else max(hi - p, 0)
    if isinstance(rec.items, NeverH):
        rem_hi = 0
    x = em.handle_rule(rec.items, child) if rem_hi != 0 else None
    if p == 0:
        end = lay.empty() if lo == 0 else ir.NOTHING
        if x is None:
            return end
        comma_x = ir.seq(lay.comma(depth), x)
        first = ir.seq(
            lay.open(depth),
            x,
            ir.repeat(comma_x, max(rem_lo - 1, 0), None if rem_hi is None else rem_hi - 1),
            lay.close(depth),
        )
        return ir.alt(end, first)
    tail: ir.Node
    if x is None:
        tail = lay.close(depth) if rem_lo == 0 else ir.NOTHING
    else:
        tail = ir.seq(ir.repeat(ir.seq(lay.comma(depth), x), rem_lo, rem_hi), lay.close(depth))
    node = tail
    for i in range(p - 1, -1, -1):
        elem = ir.seq(lay.sep(i, depth), em.handle_rule(rec.prefix[i], child), node)
        if hi is not None and i >= hi:
            elem = ir.NOTHING
        end = lay.end(i, depth) if i >= lo else ir.NOTHING
        node = ir.alt(end, elem)
        if (p - i) % 16 == 0:
            node = em.define(f"{name}-{i}", node)
    return node


# ---------------------------------------------------------------------------------------------
# contains


def _contains(em: Any, rec: ArrayC, depth: Any, name: str) -> ir.Node | None:
    ctx = em.ctx
    if len(rec.contains) > 1:
        ctx.refuse("contains", rec.ptr, "several contains constraints on one array are not supported")
        return None
    c, cmin, cmax = rec.contains[0]
    lay = em.layout
    child = em.child_depth(depth)
    p = len(rec.prefix)
    n_cap = max(p, rec.min_items, rec.max_items or 0, 1)
    exact = cmax is not None
    k_cap = cmax if exact else cmin
    if (n_cap + 1) * (k_cap + 1) > ctx.opts.max_count_states:
        ctx.refuse(
            "contains", rec.ptr, f"contains with these counts needs more than {ctx.opts.max_count_states} states"
        )
        return None
    miss: Handle | None = None
    if exact:
        try:
            miss = Fixed(complement(ctx.normalize(c), ctx))
        except Unsupported as e:
            ctx.refuse("maxContains", rec.ptr, f"maxContains needs the complement of the contains schema ({e.reason})")
            return None
    elif cmin > 1:
        # A lower bound alone is exact with "any element" on the uncounted branch, but a matching
        # element then takes both branches: after n elements the parse is at every count up to
        # min(n, minContains) at once, and each token costs in proportion. With the complement
        # the branches are disjoint and the parse at one count. A bound of 1 keeps two parses,
        # cheaper than a complement's grammar; without a complement the ambiguity stays.
        try:
            miss = Fixed(complement(ctx.normalize(c), ctx))
        except Unsupported:
            miss = None
    names: dict[tuple[int, int], str] = {}
    order: list[tuple[int, int]] = []

    def state(n: int, k: int) -> ir.Ref:
        if (n, k) not in names:
            names[(n, k)] = em.fresh(f"{name}-c")
            order.append((n, k))
        return ir.Ref(names[(n, k)])

    state(0, 0)
    i = 0
    while i < len(order):
        n, k = order[i]
        i += 1
        parts: list[ir.Node] = []
        if n >= rec.min_items and k >= cmin:
            parts.append(lay.end(n, depth))
        if rec.max_items is None or n < rec.max_items:
            base = rec.item_at(n)
            nn = n + 1 if rec.max_items is not None else min(n + 1, n_cap)
            hit_k = k + 1 if exact else min(k + 1, k_cap)
            if not exact or k < cmax:  # type: ignore[operator]
                parts.append(ir.seq(lay.sep(n, depth), em.handle_rule(all_of(base, c), child), state(nn, hit_k)))
            other = base if miss is None else all_of(base, miss)
            parts.append(ir.seq(lay.sep(n, depth), em.handle_rule(other, child), state(nn, k)))
        em.rules[names[(n, k)]] = ir.alt(*parts)
    return ir.Ref(names[(0, 0)])


# ---------------------------------------------------------------------------------------------
# uniqueItems


def finite_values(em: Any, s: Schema, depth: Any = None) -> list[tuple[Any, ir.Node]] | None:
    """The values of a finite schema as (canonical key, node); None if not finite."""
    out: list[tuple[Any, ir.Node]] = []
    if s.null:
        out.append((("null",), ir.lit("null")))
    for b in sorted(s.boolean):
        out.append((("bool", b), ir.lit("true" if b else "false")))
    for a in s.number:
        if not isinstance(a, NumValues):
            return None
        out.extend((("num", v), number_literal(v)) for v in sorted(a.values))
    for a in s.string:
        if not isinstance(a, StrValues):
            return None
        out.extend((("str", v), string_literal(v)) for v in sorted(a.values))
    for arr in s.array:
        if not (isinstance(arr.items, NeverH) and arr.min_items == len(arr.prefix) and not arr.contains):
            return None
        if not all(isinstance(h, ConstH) for h in arr.prefix):
            return None
        value = [h.value for h in arr.prefix]  # type: ignore[attr-defined]
        h = ConstH(("arr", tuple(x.key for x in arr.prefix)), value)  # type: ignore[attr-defined]
        out.append((h.key, em.handle_rule(h, depth)))
    for obj in s.object:
        const = _const_object(obj)
        if const is None:
            return None
        out.append((const.key, em.handle_rule(const, depth)))
    return out


def _const_object(obj: ObjectC) -> ConstH | None:
    if len(obj.policies) != 1 or obj.names or obj.dep_required or obj.dep_schemas or obj.witnesses:
        return None
    pol: KeyPolicy = obj.policies[0]
    if pol.patterns or not isinstance(pol.additional, NeverH):
        return None
    if not all(isinstance(h, ConstH) for _, h in pol.props) or obj.required != frozenset(k for k, _ in pol.props):
        return None
    value = {k: h.value for k, h in pol.props}  # type: ignore[attr-defined]
    return ConstH(("obj", frozenset((k, h.key) for k, h in pol.props)), value)  # type: ignore[attr-defined]


def _unique(em: Any, rec: ArrayC, depth: Any, name: str) -> ir.Node | None:
    ctx = em.ctx
    p = len(rec.prefix)
    sets: list[list[tuple[Any, ir.Node]]] = []
    for i in range(p + 1):
        vals = finite_values(em, ctx.normalize(rec.item_at(i)), em.child_depth(depth))
        if vals is None:
            ctx.refuse(
                "uniqueItems",
                rec.ptr,
                "uniqueItems is only enforced when the items are finitely many values (enums, consts, booleans)",
            )
            return None
        sets.append(vals)
    lay = em.layout
    limit = ctx.opts.max_unique_states
    names: dict[frozenset, str] = {}
    order: list[frozenset] = []

    def state(used: frozenset) -> ir.Ref:
        if used not in names:
            if len(names) >= limit:
                raise LimitError(
                    f"uniqueItems at {rec.ptr or '#'} needs more than {limit} states",
                    limit="max_unique_states",
                    value=limit,
                )
            names[used] = em.fresh(f"{name}-u")
            order.append(used)
        return ir.Ref(names[used])

    state(frozenset())
    i = 0
    while i < len(order):
        used = order[i]
        i += 1
        n = len(used)
        parts: list[ir.Node] = []
        if n >= rec.min_items:
            parts.append(lay.end(n, depth))
        if (rec.max_items is None or n < rec.max_items) and not (isinstance(rec.items, NeverH) and n >= p):
            for key, node in sets[min(n, p)]:
                if key not in used:
                    parts.append(ir.seq(lay.sep(n, depth), node, state(used | {key})))
        em.rules[names[used]] = ir.alt(*parts)
    return ir.Ref(names[frozenset()])


__all__ = ["array_node", "finite_values", "AnyH"]
