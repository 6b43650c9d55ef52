"""Resource limits: every piece of work a caller's input can make large is bounded by one of these.

Each limit is a plain field with a default that ordinary inputs never reach; exceeding one raises
:class:`structgen.errors.LimitError` naming the field, so the caller knows what to raise. A field
set to something other than a whole number in its range (a float, a string, a bool, a negative
number, zero where zero bounds nothing) is refused when the limits are built, with a
``LimitError`` naming the field: a bad tuning fails where it is written, not on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .errors import LimitError


def check_limit_fields(limits: Any, minimums: dict[str, int] | None = None, *, skip: tuple[str, ...] = ()) -> None:
    """Refuse a dataclass of limits whose fields are not ints at least their minimum (1 unless
    ``minimums`` says otherwise); the LimitError names the field. Fields in ``skip`` are the
    caller's to check (a deadline in seconds is no count)."""
    kind = type(limits).__name__
    for f in fields(limits):
        if f.name in skip:
            continue
        value = getattr(limits, f.name)
        low = (minimums or {}).get(f.name, 1)
        # bool is an int subclass, but True for a count is a typo, not a tuning
        if isinstance(value, bool) or not isinstance(value, int):
            raise LimitError(f"{kind}.{f.name} must be an int, not {type(value).__name__} {value!r}", limit=f.name)
        if value < low:
            raise LimitError(f"{kind}.{f.name} must be at least {low}, not {value}", limit=f.name)


@dataclass(frozen=True)
class GrammarLimits:
    """Bounds on reading and building grammars."""

    #: Largest grammar source text accepted by the GBNF and GLRM readers, in bytes.
    max_source_bytes: int = 8 * 1024 * 1024
    #: Deepest nesting of groups / expressions in one rule body.
    max_nesting: int = 200
    #: Most rules in one grammar.
    max_rules: int = 200_000
    #: Largest finite repetition count (``{n,m}``) accepted in grammar text (0 allows only ``{0}``).
    max_repeat: int = 1_000_000
    #: Largest written-out expansion of a GLRM separated sequence ``sep ~ (...)``, in nodes; past
    #: it the expansion shares its tails through helper rules (linear, one rule per item). Written
    #: out is what glrmask's own expansion looks like and costs nothing at 256 nodes (a dozen
    #: items); 0 always takes the helper rules (tests check both forms mean the same).
    separated_inline_nodes: int = 256

    def __post_init__(self) -> None:
        check_limit_fields(self, {"max_repeat": 0, "separated_inline_nodes": 0})


DEFAULT_GRAMMAR_LIMITS = GrammarLimits()
