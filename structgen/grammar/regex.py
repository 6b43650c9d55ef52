"""Regular expressions to the grammar form: ``regex_to_node`` (ECMA-262 and GLRM's Rust forms).

Parsing lives in :mod:`.regex_parse`; this module lowers its syntax tree to
:mod:`structgen.grammar.ir` nodes and gives ECMA-262 patterns their JSON Schema meaning: a
pattern matches if it matches *anywhere* in the text, so every side not pinned by an anchor is
opened with "any characters". Anchors are accepted only where they can mean nothing but the start
or the end of the input (``^a|b$``, ``^(a|b)$``, ``(^a)``); elsewhere they are refused.

All passes walk the tree with explicit stacks: a deeply nested pattern costs no recursion.
"""

from __future__ import annotations

from ..errors import RegexError
from ..limits import DEFAULT_GRAMMAR_LIMITS, GrammarLimits
from . import ir
from .regex_ast import Alternation, Anchor, ByteSet, CharSet, Concat, Repetition, RegexNode, children, postorder
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
    tree = parse_regex(pattern, flavor=flavor, flags=flags, limits=limits)
    if flavor != "ecma":
        return _lower(tree)
    return _lower_with_anchors(tree, pattern, search=search is not False)


# ---------------------------------------------------------------------------------------------
# Lowering


def _char_node(ranges: ir.Ranges) -> ir.Node:
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


def _lower_one(node: RegexNode, kids: list[ir.Node]) -> ir.Node:
    """One node, given its lowered children (anchors are handled by the caller)."""
    if isinstance(node, CharSet):
        return _char_node(node.ranges)
    if isinstance(node, ByteSet):
        return _byte_node(node.ranges)
    if isinstance(node, Concat):
        return ir.seq(*kids)
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
_Terms = dict[tuple[bool, bool], ir.Node]


def _add_term(terms: _Terms, key: tuple[bool, bool], body: ir.Node) -> None:
    terms[key] = ir.alt(terms[key], body) if key in terms else body


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

    # Top-down: may this node's first / last position be the input's start / end, and if not, why.
    context: dict[int, tuple[bool, bool, str]] = {id(tree): (True, True, "")}
    for node in reversed(order):  # parents come before their children here
        if not has_anchor[id(node)]:
            continue
        leading, trailing, why = context[id(node)]
        if isinstance(node, Alternation):
            for item in node.items:
                context[id(item)] = (leading, trailing, why)
        elif isinstance(node, Concat):
            items = node.items
            zero_after = [False] * len(items)
            running = True
            for k in range(len(items) - 1, -1, -1):
                zero_after[k] = running
                running = running and zero_width[id(items[k])]
            running = True
            for k, item in enumerate(items):
                context[id(item)] = (leading and running, trailing and zero_after[k], why)
                running = running and zero_width[id(item)]
        elif isinstance(node, Repetition):
            context[id(node.item)] = (False, False, " (it is inside a quantified group)")

    lowered: dict[int, ir.Node] = {}
    terms: dict[int, _Terms] = {}

    def terms_of(node: RegexNode) -> _Terms:
        return terms[id(node)] if has_anchor[id(node)] else {(False, False): lowered[id(node)]}

    for node in order:
        key = id(node)
        if not has_anchor[key]:
            lowered[key] = _lower_one(node, [lowered[id(k)] for k in children(node)])
            continue
        if isinstance(node, Anchor):
            leading, trailing, why = context[key]
            if node.end and not trailing:
                raise RegexError(
                    "'$' is only supported where it can only match at the end of the input" + why,
                    pattern=pattern,
                    position=node.position,
                )
            if not node.end and not leading:
                raise RegexError(
                    "'^' is only supported where it can only match at the start of the input" + why,
                    pattern=pattern,
                    position=node.position,
                )
            terms[key] = {(not node.end, node.end): ir.EMPTY}
        elif isinstance(node, Alternation):
            merged: _Terms = {}
            for item in node.items:
                for k, body in terms_of(item).items():
                    _add_term(merged, k, body)
            terms[key] = merged
        elif isinstance(node, Concat):
            acc: _Terms = {(False, False): ir.EMPTY}
            for item in node.items:
                nxt: _Terms = {}
                for (s1, e1), b1 in acc.items():
                    for (s2, e2), b2 in terms_of(item).items():
                        _add_term(nxt, (s1 or s2, e1 or e2), ir.seq(b1, b2))
                acc = nxt
            terms[key] = acc
        else:  # pragma: no cover - a repeated anchor fails its context check first
            raise RegexError("anchor inside a quantified group", pattern=pattern, position=None)

    root = terms_of(tree)
    if not search:
        return ir.alt(*root.values())
    anything = ir.star(ir.ANY_CHAR)
    parts = []
    for (at_start, at_end), body in root.items():
        parts.append(ir.seq(*([] if at_start else [anything]), body, *([] if at_end else [anything])))
    return ir.alt(*parts)
