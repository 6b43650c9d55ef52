"""The budget of a compile ahead of time (structgen/engine/ahead.py) is counted from the start it
is given (``Constraint.compile`` gives its own, so that building the machines is inside the
budget): a start already past the budget precomputes nothing and says so in the report."""

from __future__ import annotations

import time

from engine_support import load_vocab, person_grammar

from structgen.engine import Constraint
from structgen.engine.ahead import compile_ahead


def _ahead(started: float | None):  # type: ignore[no-untyped-def]
    c = Constraint.compile(person_grammar(), load_vocab("llama-bpe"))
    return compile_ahead(c, max_positions=1000, budget_ms=60_000, max_bytes=1 << 40, started=started)


def test_a_start_past_the_budget_precomputes_nothing() -> None:
    report = _ahead(time.perf_counter() - 3600)  # an hour ago: the minute's budget is spent
    assert report.truncated and report.stopped_by == "aot_budget_ms"
    assert report.bottom_masks == report.relative_parts == report.crossings == 0


def test_without_a_start_the_budget_begins_now() -> None:
    report = _ahead(None)
    assert not report.truncated and report.bottom_masks + report.relative_parts > 0
