"""Grammar clean-up after translation: drop what can never match, inline single-use rules.

* *Productive* rules can derive at least one string; references to the others are replaced by
  "nothing" and the alternatives holding them fall away, so the grammar has no dead ends that a
  token mask would have to discover (a required property whose schema is ``false``, recursion
  with no base case...).
* Unreachable rules are dropped.
* A rule referenced exactly once, not recursive, is inlined where that keeps bodies shallow.

Everything is iterative: grammars may have many rules and long chains.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from .. import caches
from ..deadline import check_deadline
from ..grammar import ir
from ..grammar.graphs import nodes_on_cycles
from ..grammar.rule_scan import PLAIN_LEAVES, RuleScan, scan_rule


def _rebuild(node: ir.Node, leaf: Callable[[ir.Node], ir.Node]) -> ir.Node:
    """``node`` rebuilt bottom-up with the smart constructors, ``Ref`` leaves mapped by ``leaf``
    (which must return every other leaf as it is).

    Shared subtrees (format grammars share most of theirs) are rebuilt once; closed ones (no
    ``Ref``, :func:`ir.mark_closed`) are kept without a look inside, and so are leaves other than
    references, which ``leaf`` keeps: they are read from their parent, not visited."""
    plain = PLAIN_LEAVES
    done: dict[int, ir.Node] = {}
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in done:
            continue
        if ir.is_closed(n):
            done[id(n)] = n
            continue
        kids = n.children()
        if not kids:
            done[id(n)] = leaf(n)
            continue
        if not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids if c.__class__ not in plain)
            continue
        new = [c if c.__class__ in plain else done[id(c)] for c in kids]
        if all(a is b for a, b in zip(new, kids)):
            done[id(n)] = n
        elif isinstance(n, ir.Seq):
            done[id(n)] = ir.seq(*new)
        elif isinstance(n, ir.Alt):
            done[id(n)] = ir.alt(*new)
        elif isinstance(n, ir.Repeat):
            item = new[0]
            if item == ir.NOTHING:
                done[id(n)] = ir.EMPTY if n.min == 0 else ir.NOTHING
            else:
                done[id(n)] = ir.repeat(item, n.min, n.max)
        elif isinstance(n, ir.Lexeme):
            done[id(n)] = ir.NOTHING if new[0] == ir.NOTHING else ir.Lexeme(new[0])
        elif isinstance(n, ir.Difference):
            if new[0] == ir.NOTHING:
                done[id(n)] = ir.NOTHING
            elif new[1] == ir.NOTHING:
                done[id(n)] = new[0]
            else:
                done[id(n)] = ir.Difference(new[0], new[1])
        elif isinstance(n, ir.Intersection):
            if ir.NOTHING in new:
                done[id(n)] = ir.NOTHING
            else:
                done[id(n)] = ir.Intersection(new[0], new[1])
        else:  # pragma: no cover
            raise TypeError(type(n))
    return done[id(node)]


#: Productivity of closed subtrees with a lexeme or a set operation below (no Ref inside, so it
#: does not depend on the rules), by identity. Other closed subtrees have it in their mark: they
#: derive a string exactly when they have a shortest one (``ir.ClosedFacts``).
_CLOSED_PRODUCTIVE: dict[int, tuple[ir.Node, bool]] = {}


def _productive_node(node: ir.Node, productive: set[str]) -> bool:
    """Whether ``node`` derives a string, given the rules known ``productive``.

    Evaluated with short circuits, without recursion: a choice stops at its first productive
    option and a sequence at its first unproductive part, so most of a body is never walked
    (the first option of a translated object state is usually a reference to a productive rule).
    """
    value: dict[int, bool] = {}
    # frames of the nodes being decided: [node, the children that decide it, next index, all?]
    stack: list[list] = []
    cur = node
    while True:
        v = _known_productive(cur, productive, value)
        if v is None:
            kids, conj = _deciding(cur)
            stack.append([cur, kids, 0, conj])
            cur = kids[0]
            continue
        while stack:
            frame = stack[-1]
            n, kids, i, conj = frame
            if v == conj:
                i += 1
                if i < len(kids):  # not decided yet: the next child
                    frame[2] = i
                    cur = kids[i]
                    break
            else:  # an unproductive part of a sequence, a productive option of a choice
                v = not conj
            stack.pop()
            value[id(n)] = v
            _remember_closed(n, v)
        else:
            return v


def _known_productive(n: ir.Node, productive: set[str], value: dict[int, bool]) -> bool | None:
    """The productivity of ``n`` when no child needs to be looked at, else None."""
    cls = n.__class__
    if cls is ir.Ref:  # never closed nor a frame of the walk: the checks below would not apply
        return n.name in productive  # type: ignore[attr-defined]
    if cls is ir.Literal or cls is ir.Token:  # closed or not, they derive a string
        return True
    known = value.get(id(n))
    if known is not None:
        return known
    cached = _CLOSED_PRODUCTIVE.get(id(n))
    if cached is not None and cached[0] is n:
        return cached[1]
    facts = ir.closed_facts(n)
    if facts is not None and facts.plain:
        return facts.shortest is not None
    if isinstance(n, ir.CharClass):
        return bool(n.codepoints())
    if isinstance(n, ir.ByteClass):
        return bool(n.byte_ranges())
    if isinstance(n, (ir.Seq, ir.Alt)):
        if not n.items:  # the empty sequence matches "", the empty choice nothing
            return isinstance(n, ir.Seq)
        return None
    if isinstance(n, ir.Repeat):
        return True if n.min == 0 else None
    if isinstance(n, (ir.Lexeme, ir.Difference, ir.Intersection)):
        return None
    return True  # pragma: no cover - every node kind is above


def _deciding(n: ir.Node) -> tuple[tuple[ir.Node, ...], bool]:
    """(the children whose productivity decides ``n``'s, whether all of them must be productive)."""
    if isinstance(n, ir.Alt):
        return n.items, False
    if isinstance(n, ir.Seq):
        return n.items, True
    if isinstance(n, (ir.Repeat, ir.Lexeme, ir.Difference)):  # the item; a difference's left side
        return n.children()[:1], True
    return n.children(), True  # an intersection: both sides


def _remember_closed(n: ir.Node, v: bool) -> None:
    if ir.is_closed(n):
        if len(_CLOSED_PRODUCTIVE) >= ir.MAX_CLOSED:
            _CLOSED_PRODUCTIVE.clear()
        _CLOSED_PRODUCTIVE[id(n)] = (n, v)


#: inner nodes :func:`_ref_counts` may meet again beyond the number of distinct ones before it
#: counts paths instead of expanding the tree
_TREE_SLACK = 64
#: every node kind without children
_LEAVES = PLAIN_LEAVES | {ir.Ref}
#: the node kinds :func:`scan_rule` reports as set operations outside closed subtrees
_SETOP_KINDS = frozenset({ir.Lexeme, ir.Difference, ir.Intersection})


def _ref_counts(node: ir.Node) -> dict[str, int]:
    """How often each rule is referenced in the tree of ``node`` (a shared subtree counts once per
    place it occurs), names in the order a left-to-right pre-order walk first meets them."""
    return _walk(node)[0]


def _walk(node: ir.Node) -> tuple[dict[str, int], RuleScan]:
    """(:func:`_ref_counts` of ``node``, what :func:`scan_rule` says of it), in one walk: the grammar
    built from the trimmed rules is given the scan of every body walked here and left unchanged,
    instead of walking it again.

    Bodies are DAGs (format grammars share subtrees heavily): the walk expands the tree, which
    counts every place exactly, while it meets shared inner nodes again no more often than it
    meets new ones (a key's trie shares one ``string-char*`` among all its levels); past that,
    path counts are propagated over the distinct nodes instead of expanding the tree. Leaves
    other than references are not visited: they hold no reference, and sharing one changes no
    count. Both orders of first meeting are the same: a subtree met again holds no name not met
    in it before. Along the expanded tree the depth is the deepest level met (a node with
    children reaches one level below its own, leaves read from their parent)."""
    leaves = PLAIN_LEAVES
    setop_kinds = _SETOP_KINDS
    closed_facts = ir.closed_facts
    out: dict[str, int] = {}
    seen: set[int] = set()
    again = 0  # inner nodes met again, expanded once more
    depth = 1
    setops = False
    plain = True  # no token atom, and closed subtrees plain
    stack: list[tuple[ir.Node, int]] = [(node, 1)]  # (node, its level: the body's is 1)
    while stack:
        n, level = stack.pop()
        cls = n.__class__
        if cls is ir.Ref:
            out[n.name] = out.get(n.name, 0) + 1  # type: ignore[attr-defined]
            continue
        if id(n) in seen:
            again += 1
            if again > len(seen) + _TREE_SLACK:
                break
        else:
            seen.add(id(n))
        closed = closed_facts(n)
        if closed is not None:  # no Ref inside, and its operands are regular
            if level + closed.depth - 1 > depth:
                depth = level + closed.depth - 1
            plain = plain and closed.plain
            continue
        kids = n.children()
        if not kids:  # the body itself a leaf, or an empty sequence or choice
            if cls is ir.Token:
                plain = False
            continue
        if level >= depth:
            depth = level + 1
        if cls in setop_kinds:
            setops = True
        inner = level + 1
        for c in reversed(kids):
            ccls = c.__class__
            if ccls in leaves:
                if ccls is ir.Token:
                    plain = False
                continue
            stack.append((c, inner))
    else:
        return out, (depth, out.keys(), setops, plain and not setops)
    out.clear()
    preorder: list[ir.Node] = []
    postorder = _post_order_nodes(node, leaves, preorder)
    # path counts flow from parents to children: the reverse post-order has parents first
    paths: dict[int, int] = {id(node): 1}
    for n in reversed(postorder):
        k = paths[id(n)]
        if not ir.is_closed(n):
            for c in n.children():
                if c.__class__ not in leaves:
                    paths[id(c)] = paths.get(id(c), 0) + k
    for n in preorder:
        if isinstance(n, ir.Ref):
            out[n.name] = out.get(n.name, 0) + paths[id(n)]
    return out, scan_rule(node)


def _post_order_nodes(node: ir.Node, leaves: frozenset[type], preorder: list[ir.Node]) -> list[ir.Node]:
    """The distinct nodes under ``node`` (closed subtrees not entered, ``leaves`` left out), each
    after everything below it; ``preorder`` gets them each before everything below it."""
    postorder: list[ir.Node] = []
    seen: set[int] = set()
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if expanded:
            postorder.append(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        preorder.append(n)
        stack.append((n, True))
        if not ir.is_closed(n):
            stack.extend((c, False) for c in reversed(n.children()) if c.__class__ not in leaves)
    return postorder


def _depth(node: ir.Node, memo: dict[int, tuple[ir.Node, int]]) -> int:
    """:func:`ir.depth` with a memo shared across calls (keyed by identity; the memo keeps the
    nodes alive so that identities are not reused): inlining nests the same bodies repeatedly.
    Leaves (depth 1) are read from their parent, not visited or remembered: a translated
    grammar's nodes are nearly half literals and references."""
    leaves = _LEAVES
    if node.__class__ in leaves:
        return 1
    stack: list[tuple[ir.Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if expanded:
            d = 1
            for c in n.children():
                if c.__class__ not in leaves:
                    cd = memo[id(c)][1]
                    if cd > d:
                        d = cd
            memo[id(n)] = (n, d + 1)
            continue
        if id(n) in memo:
            continue
        if ir.is_closed(n):
            memo[id(n)] = (n, ir.depth(n))  # remembered when it was marked
            continue
        kids = n.children()
        if not kids:  # the empty sequence or choice
            memo[id(n)] = (n, 1)
            continue
        stack.append((n, True))
        stack.extend((c, False) for c in kids if c.__class__ not in leaves and id(c) not in memo)
    return memo[id(node)][1]


def _larger_than(node: ir.Node, limit: int) -> bool:
    """Whether ``node`` has more than ``limit`` distinct node objects (:func:`ir.iter_distinct`'s
    count, walked in place without its generator)."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if len(seen) > limit:
            return True
        stack.extend(n.children())
    return False


def _post_order(graph: dict[str, list[str]]) -> list[str]:
    """Rule names with (non-cyclic) callees before callers (iterative DFS)."""
    order: list[str] = []
    seen: set[str] = set()
    for root in graph:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(graph[root]))]
        while stack:
            name, it = stack[-1]
            for r in it:
                if r not in seen:
                    seen.add(r)
                    stack.append((r, iter(graph[r])))
                    break
            else:
                stack.pop()
                order.append(name)
    return order


def productive_rules(rules: dict[str, ir.Node], refs: dict[str, dict[str, int]]) -> set[str]:
    graph = {name: [r for r in refs[name] if r in rules] for name in rules}
    users: dict[str, set[str]] = {}
    for name, callees in graph.items():
        for r in callees:
            users.setdefault(r, set()).add(name)
    productive: set[str] = set()
    # one pass callees-first settles every rule outside cycles; a work list finishes the cycles
    work: list[str] = []
    for name in _post_order(graph):
        check_deadline()
        if _productive_node(rules[name], productive):
            productive.add(name)
        else:
            work.append(name)
    pending = set(work)
    stack = [u for name in productive for u in users.get(name, ()) if u in pending]
    while stack:
        name = stack.pop()
        if name in productive or not _productive_node(rules[name], productive):
            continue
        productive.add(name)
        pending.discard(name)
        stack.extend(u for u in users.get(name, ()) if u in pending)
    return productive


#: Inlining is cosmetic (fewer rules, same language); above this many rules it is skipped to
#: keep translation time linear.
INLINE_MAX_RULES = 2000
#: A rule with more distinct nodes than this keeps its name even when used once: the engine
#: builds a named regular rule only when a generation reaches it (``format: date-time`` is
#: ~6,000 nodes and 40-50 ms of engine lowering), and the exported grammars read better.
INLINE_MAX_NODES = 400


class Trimmed(NamedTuple):
    """What :func:`trim_rules` leaves, and what it found on the way."""

    rules: dict[str, ir.Node]
    #: the rules on cycles of references (the same on the rules before and after inlining: a
    #: rule inlined is on no cycle), None where the inliner did not run
    recursive: frozenset[str] | None
    #: :func:`scan_rule` of the rules whose bodies the clean-up walked and left as they were (most:
    #: inlining rewrites few), for the grammar built from them
    scans: dict[str, RuleScan]


def trim(rules: dict[str, ir.Node], start: str, *, inline_depth: int = 40, max_depth: int = 150) -> dict[str, ir.Node]:
    """Productive, reachable rules with single-use rules inlined; ``{}`` if ``start`` derives nothing."""
    return trim_rules(rules, start, inline_depth=inline_depth, max_depth=max_depth).rules


def trim_rules(rules: dict[str, ir.Node], start: str, *, inline_depth: int = 40, max_depth: int = 150) -> Trimmed:
    """:func:`trim`, with the recursive rules where the inliner found them (a grammar built from
    the rules is given them instead of finding them again)."""
    refs: dict[str, dict[str, int]] = {}
    scans: dict[str, RuleScan] = {}
    for name, body in rules.items():
        check_deadline()
        refs[name], scans[name] = _walk(body)
    productive = productive_rules(rules, refs)
    if start not in productive:
        return Trimmed({}, None, {})
    dead = set(rules) - productive

    def cut(n: ir.Node) -> ir.Node:
        return ir.NOTHING if isinstance(n, ir.Ref) and n.name in dead else n

    cleaned: dict[str, ir.Node] = {}
    for name in rules:
        if name in productive:
            body = rules[name]
            if dead and any(r in dead for r in refs[name]):
                body = _rebuild(body, cut)
                refs[name], scans[name] = _walk(body)
            cleaned[name] = body
    # reachable, in breadth-first order from the start
    order = [start]
    seen = {start}
    i = 0
    while i < len(order):
        for r in refs[order[i]]:
            if r in cleaned and r not in seen:
                seen.add(r)
                order.append(r)
        i += 1
    cleaned = {name: cleaned[name] for name in order}
    scans = {name: scans[name] for name in order}
    if len(cleaned) > INLINE_MAX_RULES:
        return Trimmed(cleaned, None, scans)
    return _inline(cleaned, {n: refs[n] for n in order}, scans, start, inline_depth, max_depth)


def _inline(
    rules: dict[str, ir.Node],
    refs: dict[str, dict[str, int]],
    scans: dict[str, RuleScan],
    start: str,
    inline_depth: int,
    max_depth: int,
) -> Trimmed:
    count: dict[str, int] = {}
    for name in rules:
        for r, k in refs[name].items():
            count[r] = count.get(r, 0) + k
    graph = {name: [r for r in refs[name] if r in rules] for name in rules}
    recursive = frozenset(nodes_on_cycles(graph))
    candidates = {
        n
        for n, c in count.items()
        if c == 1 and n != start and n not in recursive and n in rules and not _larger_than(rules[n], INLINE_MAX_NODES)
    }
    if not candidates:
        return Trimmed(rules, recursive, scans)
    order = _post_order(graph)
    final: dict[str, ir.Node] = {}
    depth_of: dict[str, int] = {}
    inlined: set[str] = set()
    memo: dict[int, tuple[ir.Node, int]] = {}
    for name in order:
        check_deadline()
        body = rules[name]
        subs = [r for r in refs[name] if r in candidates and depth_of.get(r, max_depth) <= inline_depth]
        if subs:
            d0 = scans[name][0]  # the clean-up's walk measured this very body
            if d0 <= max_depth - inline_depth:
                chosen = set(subs)
                inlined.update(chosen)
                body = _rebuild(body, lambda n: final[n.name] if isinstance(n, ir.Ref) and n.name in chosen else n)
        final[name] = body
        if name in candidates:
            depth_of[name] = scans[name][0] if body is rules[name] else _depth(body, memo)
    kept = {name: final[name] for name in rules if name not in inlined}
    return Trimmed(kept, recursive, {name: scans[name] for name in kept if kept[name] is rules[name]})


caches.register_dict("schema.trim.closed_productive", _CLOSED_PRODUCTIVE)
