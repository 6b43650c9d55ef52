"""The small syntax tree the regex reader produces and the regex lowering consumes.

The tree is already semantic: character sets are resolved to code point (or byte) ranges with
case-insensitivity expanded, groups are gone (they only group), and the only zero-width nodes
left are ECMA-262's input anchors. Nodes compare by identity: the lowering keys its work on
``id(node)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from .ir import Ranges


@dataclass(frozen=True, eq=False)
class CharSet:
    """One Unicode scalar value in ``ranges`` (positive, normalised code point ranges)."""

    ranges: Ranges


@dataclass(frozen=True, eq=False)
class ByteSet:
    """One raw byte in ``ranges`` (positive, normalised, within 0-255)."""

    ranges: Ranges


@dataclass(frozen=True, eq=False)
class Concat:
    """The items in order; ``Concat(())`` is the empty string."""

    items: tuple[RegexNode, ...]


@dataclass(frozen=True, eq=False)
class Alternation:
    """Any one of the items (at least two)."""

    items: tuple[RegexNode, ...]


@dataclass(frozen=True, eq=False)
class Repetition:
    """``item`` repeated ``min`` to ``max`` times (``None``: unbounded); ``position`` is the quantifier's offset."""

    item: RegexNode
    min: int
    max: int | None
    position: int


@dataclass(frozen=True, eq=False)
class Anchor:
    """ECMA-262 ``^`` (``end=False``) or ``$`` (``end=True``), at ``position`` in the pattern."""

    end: bool
    position: int


RegexNode = Union[CharSet, ByteSet, Concat, Alternation, Repetition, Anchor]


def children(node: RegexNode) -> tuple[RegexNode, ...]:
    if isinstance(node, (Concat, Alternation)):
        return node.items
    if isinstance(node, Repetition):
        return (node.item,)
    return ()


def postorder(root: RegexNode) -> list[RegexNode]:
    """Every node under ``root``, children before their parent, without recursion."""
    out: list[RegexNode] = []
    stack: list[tuple[RegexNode, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        kids = children(node)
        if expanded or not kids:
            out.append(node)
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in reversed(kids))
    return out
