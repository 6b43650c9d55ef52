"""Regular expressions to the grammar form: ``regex_to_node`` (ECMA-262 and GLRM's Rust forms).

Parsing lives in :mod:`.regex_parse`; this module lowers its syntax tree to
:mod:`structgen.grammar.ir` nodes and gives ECMA-262 patterns their JSON Schema meaning: a
pattern matches if it matches *anywhere* in the text, so every side not pinned by an anchor is
opened with "any characters". Anchors are accepted only where they can mean nothing but the start
or the end of the input (``^a|b$``, ``^(a|b)$``, ``(^a)``); elsewhere they are refused.

All passes walk the tree with explicit stacks: a deeply nested pattern costs no recursion.
"""

from __future__ import annotations

from ..errors import GrammarError, RegexError
from ..limits import DEFAULT_GRAMMAR_LIMITS, GrammarLimits
from . import ir
from .regex_ast import (
    Alternation,
    Anchor,
    ByteSet,
    CharSet,
    Concat,
    RegexNode,
    Repetition,
    children,
    postorder,
)
from .regex_parse import FLAVORS, parse_regex

__all__ = ["FLAVORS", "regex_to_node"]

_ALL_SCALARS = ir.subtract_ranges(((0, ir.MAX_CODEPOINT),), (ir.SURROGATES,))


def regex_to_node(
    pattern: str,
    *,
    flavor: str = "ecma",
    search: bool | None = None,
    flags: str = "",
    limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS,
) -> ir.Node:
    """The grammar node for ``pattern``.

    ``flavor="ecma"``: the ECMA-262 subset of JSON Schema ``pattern``. With ``search`` None or
    True the pattern matches anywhere in the text (JSON Schema's rule; ``^``/``$`` pin a side);
    with ``search=False`` it must match the whole text.

    ``flavor="glrm"`` / ``"glrm-bytes"``: GLRM's ``/.../`` and ``b/.../`` regexes (Rust regex
    syntax), which always describe a whole lexeme (``search`` is ignored). ``flags`` takes the
    letters written after the closing slash (``i s x u``); inline ``(?i)`` works as well.

    Raises :class:`~structgen.errors.RegexError` for a construct that is refused or malformed and
    :class:`~structgen.errors.LimitError` for counts or nesting past ``limits``.
    """
    if search is not None and not isinstance(search, bool):
        raise GrammarError(f"search must be True, False or None, not {type(search).__name__}")
    tree = parse_regex(pattern, flavor=flavor, flags=flags, limits=limits)
    if flavor != "ecma":
        return _lower(tree)
    return _lower_with_anchors(tree, pattern, search=search is not False)


# ---------------------------------------------------------------------------------------------
# Lowering


def _char_node(ranges: ir.Ranges) -> ir.Node:
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:  # the common case: one character
        cp = ranges[0][0]
        return ir.NOTHING if ir.SURROGATES[0] <= cp <= ir.SURROGATES[1] else ir.Literal(chr(cp).encode("utf-8"))
    scalars = ir.subtract_ranges(ranges, (ir.SURROGATES,))
    if not scalars:
        return ir.NOTHING  # includes a lone surrogate: text (UTF-8) never contains one
    if len(scalars) == 1 and scalars[0][0] == scalars[0][1]:
        return ir.lit(chr(scalars[0][0]))
    if scalars == _ALL_SCALARS:
        return ir.ANY_CHAR
    # The smaller of the two spellings; the excluded set may keep the surrogates if that merges.
    excluded = ir.complement_ranges(scalars, ir.MAX_CODEPOINT)
    excluded_plain = ir.subtract_ranges(excluded, (ir.SURROGATES,))
    if len(excluded_plain) < len(excluded):
        excluded = excluded_plain
    if len(excluded) < len(scalars):
        return ir.CharClass(excluded, negated=True)
    return ir.CharClass(scalars)


def _byte_node(ranges: ir.Ranges) -> ir.Node:
    if not ranges:
        return ir.NOTHING
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return ir.Literal(bytes([ranges[0][0]]))
    if ranges == ((0, 0xFF),):
        return ir.ANY_BYTE
    excluded = ir.complement_ranges(ranges, 0xFF)
    if len(excluded) < len(ranges):
        return ir.ByteClass(excluded, negated=True)
    return ir.ByteClass(ranges)


def _seq(items: list[ir.Node]) -> ir.Node:
    """``ir.seq`` with runs of literals joined first (in one pass: a long literal costs linear time)."""
    out: list[ir.Node] = []
    run: list[bytes] = []
    for item in items:
        if isinstance(item, ir.Literal):
            run.append(item.data)
            continue
        if run:
            out.append(ir.Literal(b"".join(run)))
            run = []
        out.append(item)
    if run:
        out.append(ir.Literal(b"".join(run)))
    return ir.seq(*out)


def _lower_one(node: RegexNode, kids: list[ir.Node]) -> ir.Node:
    """One node, given its lowered children (anchors are handled by the caller)."""
    if isinstance(node, CharSet):
        return _char_node(node.ranges)
    if isinstance(node, ByteSet):
        return _byte_node(node.ranges)
    if isinstance(node, Concat):
        return _seq(kids)
    if isinstance(node, Alternation):
        return ir.alt(*kids)
    if isinstance(node, Repetition):
        item = kids[0]
        if item == ir.NOTHING:
            return ir.EMPTY if node.min == 0 else ir.NOTHING
        return ir.repeat(item, node.min, node.max)
    raise TypeError(f"cannot lower {type(node).__name__}")  # pragma: no cover - anchors go elsewhere


def _lower(tree: RegexNode) -> ir.Node:
    done: dict[int, ir.Node] = {}
    for node in postorder(tree):
        done[id(node)] = _lower_one(node, [done[id(k)] for k in children(node)])
    return done[id(tree)]


# ---------------------------------------------------------------------------------------------
# ECMA anchors and JSON Schema's search semantics

# A pattern's meaning as a union of terms: (pinned to the input start, pinned to the input end)
# -> the body. At most four keys, so sequences of anchored parts never multiply out.
_Key = tuple[bool, bool]
_Terms = dict[_Key, ir.Node]
_PLAIN: _Key = (False, False)


def _merge(groups: dict[_Key, list[ir.Node]]) -> _Terms:
    return {key: ir.alt(*bodies) for key, bodies in groups.items()}


def _concat(left: ir.Node, right: ir.Node) -> ir.Node:
    # Skipping empty sides keeps long runs from being copied once per zero-width anchor.
    if left == ir.EMPTY:
        return right
    if right == ir.EMPTY:
        return left
    return ir.seq(left, right)


def _nullable(root: ir.Node, memo: dict[ir.Node, bool]) -> bool:
    """Whether ``root`` matches the empty string (for the node kinds the regex reader makes)."""
    for node in reversed(list(ir.iter_nodes(root))):  # children before parents
        if node in memo:
            continue
        if isinstance(node, ir.Literal):
            memo[node] = not node.data
        elif isinstance(node, ir.Seq):
            memo[node] = all(memo[c] for c in node.items)
        elif isinstance(node, ir.Alt):
            memo[node] = any(memo[c] for c in node.items)
        elif isinstance(node, ir.Repeat):
            memo[node] = node.min == 0 or memo[node.item]
        else:
            memo[node] = False
    return memo[root]


def _repeat_or_nothing(item: ir.Node, lo: int, hi: int | None) -> ir.Node:
    if item == ir.NOTHING:
        return ir.EMPTY if lo == 0 else ir.NOTHING
    return ir.repeat(item, lo, hi)


def _repeat_terms(inner: _Terms, node: Repetition, pattern: str, memo: dict[ir.Node, bool]) -> _Terms:
    """Terms of ``X{min,max}`` where X holds anchors (in a position where they can hold).

    With ``$`` inside: i plain iterations, then the one that reaches the end, then iterations
    that match nothing (possible if some iteration can match the empty string). ``^`` mirrors it.
    """
    anchored = [key for key in inner if key != _PLAIN]
    if len(anchored) != 1 or anchored[0] == (True, True):
        raise RegexError(
            "a quantified group that holds both '^' and '$' is not supported", pattern=pattern, position=node.position
        )
    key = anchored[0]
    plain = inner.get(_PLAIN, ir.NOTHING)
    edge = inner[key]
    out: _Terms = {}
    repeated = _repeat_or_nothing(plain, node.min, node.max)
    if repeated != ir.NOTHING:
        out[_PLAIN] = repeated
    if node.max == 0:
        return out or {_PLAIN: ir.EMPTY}
    can_skip = _nullable(edge, memo) or (plain != ir.NOTHING and _nullable(plain, memo))
    fewest = 0 if can_skip else max(node.min - 1, 0)
    others = _repeat_or_nothing(plain, fewest, None if node.max is None else node.max - 1)
    body = _concat(edge, others) if key == (True, False) else _concat(others, edge)
    if body != ir.NOTHING:
        out[key] = body
    return out or {_PLAIN: ir.NOTHING}


def _lower_with_anchors(tree: RegexNode, pattern: str, *, search: bool) -> ir.Node:
    order = postorder(tree)
    zero_width: dict[int, bool] = {}
    has_anchor: dict[int, bool] = {}
    for node in order:
        kids = children(node)
        key = id(node)
        if isinstance(node, Anchor):
            zero_width[key] = has_anchor[key] = True
        elif isinstance(node, (Concat, Alternation)):
            zero_width[key] = all(zero_width[id(k)] for k in kids)
            has_anchor[key] = any(has_anchor[id(k)] for k in kids)
        else:
            zero_width[key] = False
            has_anchor[key] = any(has_anchor[id(k)] for k in kids)

    # Top-down: may this node's first / last position be the input's start / end? A concatenation
    # passes that on only across zero-width items; a quantified group passes it to its body.
    context: dict[int, tuple[bool, bool]] = {id(tree): (True, True)}
    for node in reversed(order):  # parents come before their children here
        if not has_anchor[id(node)]:
            continue
        leading, trailing = context[id(node)]
        if isinstance(node, (Alternation, Repetition)):
            for item in children(node):
                context[id(item)] = (leading, trailing)
        elif isinstance(node, Concat):
            items = node.items
            zero_after = [False] * len(items)
            running = True
            for k in range(len(items) - 1, -1, -1):
                zero_after[k] = running
                running = running and zero_width[id(items[k])]
            running = True
            for k, item in enumerate(items):
                context[id(item)] = (leading and running, trailing and zero_after[k])
                running = running and zero_width[id(item)]

    lowered: dict[int, ir.Node] = {}
    terms: dict[int, _Terms] = {}
    memo: dict[ir.Node, bool] = {}

    def terms_of(node: RegexNode) -> _Terms:
        return terms[id(node)] if has_anchor[id(node)] else {_PLAIN: lowered[id(node)]}

    for node in order:
        key = id(node)
        if not has_anchor[key]:
            lowered[key] = _lower_one(node, [lowered[id(k)] for k in children(node)])
            continue
        if isinstance(node, Anchor):
            leading, trailing = context[key]
            if (trailing if node.end else leading) is False:
                where = "end" if node.end else "start"
                raise RegexError(
                    f"'{'$' if node.end else '^'}' is only supported where it can only match at the {where} of the"
                    " input (at that end of the pattern, of a top-level alternative, or of a group there)",
                    pattern=pattern,
                    position=node.position,
                )
            terms[key] = {(not node.end, node.end): ir.EMPTY}
        elif isinstance(node, Alternation):
            groups: dict[_Key, list[ir.Node]] = {}
            for item in node.items:
                for k, body in terms_of(item).items():
                    groups.setdefault(k, []).append(body)
            terms[key] = _merge(groups)
        elif isinstance(node, Concat):
            # Anchor-free runs are lowered in one piece: only the ends of a concatenation can hold
            # anchors, so the products below run a bounded number of times per anchor.
            acc: _Terms = {_PLAIN: ir.EMPTY}
            run: list[ir.Node] = []
            for item in node.items + (None,):  # type: ignore[operator]
                if item is not None and not has_anchor[id(item)]:
                    run.append(lowered[id(item)])
                    continue
                parts = [terms_of(item)] if item is not None else []
                if run:
                    parts.insert(0, {_PLAIN: _seq(run)})
                    run = []
                for item_terms in parts:
                    combined: dict[_Key, list[ir.Node]] = {}
                    for (s1, e1), b1 in acc.items():
                        for (s2, e2), b2 in item_terms.items():
                            combined.setdefault((s1 or s2, e1 or e2), []).append(_concat(b1, b2))
                    acc = _merge(combined)
            terms[key] = acc
        else:
            assert isinstance(node, Repetition)
            terms[key] = _repeat_terms(terms_of(node.item), node, pattern, memo)

    root = terms_of(tree)
    if not search:
        return ir.alt(*root.values())
    anything = ir.star(ir.ANY_CHAR)
    parts_out = []
    for (at_start, at_end), body in root.items():
        parts_out.append(ir.seq(*([] if at_start else [anything]), body, *([] if at_end else [anything])))
    return ir.alt(*parts_out)
