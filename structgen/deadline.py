"""A caller-set time bound on translation and compilation: past it, work stops with a LimitError.

Counts and sizes bound most work, but some inputs within every count are slow; a deadline bounds
the time itself. :func:`deadline_scope` opens a scope (``Grammar.from_json_schema(...,
deadline_s=...)``, ``Constraint.compile(..., limits=EngineLimits(deadline_s=...))``) and the
loops that can run long call :func:`check_deadline`, which raises
:class:`~structgen.errors.LimitError` naming the option once the time is up. The scope lives in a
:class:`contextvars.ContextVar`, so it follows the thread (or task) doing the work, and the layers
below need no extra parameter; nested scopes keep the earlier end. Checking costs a clock read.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

from .errors import LimitError


@dataclass(frozen=True)
class _Deadline:
    end: float  # time.monotonic() past which work stops
    limit: str  # the option that set it, named by the error
    seconds: float


_current: ContextVar[_Deadline | None] = ContextVar("structgen_deadline", default=None)


def deadline_problem(value: object) -> str | None:
    """Why ``value`` is not a valid deadline (None or a positive, finite number of seconds), or
    None if it is; the callers raise their own error kind with it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be None or a number of seconds, not {type(value).__name__}"
    if not math.isfinite(value) or value <= 0:
        return f"must be a positive, finite number of seconds (got {value!r})"
    return None


@contextmanager
def deadline_scope(seconds: float | None, *, limit: str) -> Iterator[None]:
    """Run the body with a deadline ``seconds`` from now (None: no new bound; an enclosing scope
    still applies). ``limit`` is the option's name, as the error reports it."""
    outer = _current.get()
    if seconds is None:
        yield
        return
    mine = _Deadline(time.monotonic() + seconds, limit, seconds)
    token = _current.set(mine if outer is None or mine.end < outer.end else outer)
    try:
        yield
    finally:
        _current.reset(token)


def check_deadline() -> None:
    """Raise LimitError if the current scope's deadline has passed (nothing without a scope)."""
    d = _current.get()
    if d is not None and time.monotonic() > d.end:
        raise LimitError(f"the work took longer than its deadline of {d.seconds:g} s", limit=d.limit, value=d.seconds)
