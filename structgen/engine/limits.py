"""Bounds on the mask engine's work, each with a default that ordinary grammars never reach.

The fields are validated when the limits are built (``structgen.limits.check_limit_fields``): each
must be an int of at least 1 (``aot_max_configs`` may be 0; ``deadline_s`` is None or a positive
number of seconds), or a ``LimitError`` names the field.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..deadline import deadline_problem
from ..errors import LimitError
from ..limits import check_limit_fields


@dataclass(frozen=True)
class EngineLimits:
    """Limits of :meth:`structgen.Constraint.compile` and :meth:`structgen.Constraint.load`;
    exceeding one raises LimitError naming it."""

    #: Parse configurations (automaton states) one constraint may create.
    max_configs: int = 2_000_000
    #: Parallel parses of an ambiguous grammar at one position.
    max_stacks_per_config: int = 4096
    #: Masks kept per constraint (16 KB each for a 128k vocabulary); the oldest are dropped.
    max_cached_masks: int = 8192
    #: Configurations explored and masked up front by ``mode="aot"`` (0: only the start's mask).
    aot_max_configs: int = 2000
    #: Grammar positions (top terms) whose parts ``mode="aot"`` precomputes (structgen/engine/ahead.py);
    #: past it the rest are computed at first use, and a ``complete`` compile raises LimitError.
    aot_max_positions: int = 20_000
    #: Milliseconds ``mode="aot"`` may spend on positions before it leaves the rest to first use
    #: (the milestone is a compile under 2 s per schema; positions are explored breadth first, so
    #: the ones near the start come first). Past it, a ``complete`` compile raises LimitError.
    aot_budget_ms: int = 1500
    #: Estimated bytes (``Constraint.memory_bytes``) past which ``mode="aot"`` leaves the rest of
    #: the positions to first use: the milestone is 100 MB per compiled constraint.
    aot_max_bytes: int = 96 * 1024**2
    #: Estimated bytes one constraint may hold (its tables, interned parse state and cached
    #: masks; see ``Constraint.memory_bytes``), and the largest saved constraint ``load`` reads.
    #: 4 GiB: a 24 GB machine holds a few constraints at the bound beside a model's runtime.
    max_memory_bytes: int = 4 * 1024**3
    #: Seconds :meth:`~structgen.Constraint.compile` may take, ``mode="aot"``'s precomputation
    #: included (None: no bound); past it, a LimitError names ``deadline_s``.
    deadline_s: float | None = None
    #: (term, next event) pairs whose exits one constraint may summarise where a greedy lexeme
    #: ends into another rule (structgen/engine/lexeme_frames.py): a few hundred per top term
    #: reached, so a small GLRM grammar uses thousands; past it, a LimitError, never a wrong mask.
    max_liveness_states: int = 2_000_000

    def __post_init__(self) -> None:
        check_limit_fields(self, {"aot_max_configs": 0}, skip=("deadline_s",))
        problem = deadline_problem(self.deadline_s)
        if problem is not None:
            raise LimitError(f"EngineLimits.deadline_s {problem}", limit="deadline_s")


DEFAULT_ENGINE_LIMITS = EngineLimits()
