"""Resource limits: every piece of work a caller's input can make large is bounded by one of these.

Each limit is a plain field with a default that ordinary inputs never reach; exceeding one raises
:class:`structgen.errors.LimitError` naming the field, so the caller knows what to raise.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GrammarLimits:
    """Bounds on reading and building grammars."""

    #: Largest grammar source text accepted by the GBNF and GLRM readers, in bytes.
    max_source_bytes: int = 8 * 1024 * 1024
    #: Deepest nesting of groups / expressions in one rule body.
    max_nesting: int = 200
    #: Most rules in one grammar.
    max_rules: int = 200_000
    #: Largest finite repetition count (``{n,m}``) accepted in grammar text.
    max_repeat: int = 1_000_000


DEFAULT_GRAMMAR_LIMITS = GrammarLimits()
