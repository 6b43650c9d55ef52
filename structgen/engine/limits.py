"""Bounds on the mask engine's work, each with a default that ordinary grammars never reach."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineLimits:
    """Limits of :meth:`structgen.Constraint.compile`; exceeding one raises LimitError naming it."""

    #: Parse configurations (automaton states) one constraint may create.
    max_configs: int = 2_000_000
    #: Parallel parses of an ambiguous grammar at one position.
    max_stacks_per_config: int = 4096
    #: Masks kept per constraint (16 KB each for a 128k vocabulary); the oldest are dropped.
    max_cached_masks: int = 8192
    #: Configurations explored and masked up front by ``mode="aot"``.
    aot_max_configs: int = 2000
    #: Seconds :meth:`~structgen.Constraint.compile` may take, ``mode="aot"``'s precomputation
    #: included (None: no bound); past it, a LimitError names ``deadline_s``.
    deadline_s: float | None = None


DEFAULT_ENGINE_LIMITS = EngineLimits()
