"""Shared helpers for the schema unit tests (not a test module)."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, TypeVar

import jsonschema

from structgen.grammar import ir
from structgen.schema import json_schema_to_grammar
from structgen.schema import trim as trim_mod

T = TypeVar("T")


def texts(value: Any) -> list[str]:
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    spaced = json.dumps(value, ensure_ascii=False)
    return [compact] if compact == spaced else [compact, spaced]


def check(schema: Any, good: Iterable[Any] = (), bad: Iterable[Any] = (), *, spec: bool = True, **options: Any):
    """Compile ``schema``; every value of ``good`` is accepted and every value of ``bad`` rejected
    (compact and with default spacing). With ``spec`` the expectations are first checked against
    the ``jsonschema`` package, so the test itself cannot be wrong about the specification."""
    grammar = json_schema_to_grammar(schema, **options)
    validator = (
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(
            schema, format_checker=jsonschema.FormatChecker()
        )
        if spec
        else None
    )
    for v in good:
        if validator is not None:
            assert validator.is_valid(v), f"test expectation wrong: {v!r} is invalid"
        for t in texts(v):
            assert grammar.matches(t), f"valid instance rejected: {t}"
    for v in bad:
        if validator is not None:
            assert not validator.is_valid(v), f"test expectation wrong: {v!r} is valid"
        for t in texts(v):
            assert not grammar.matches(t), f"invalid instance accepted: {t}"
    return grammar


def unmarked(fn: Callable[[], T]) -> T:
    """Run ``fn`` with the closed-subtree registry (``ir.mark_closed``) and the clean-up's cache
    of it emptied: what the walks find without the marks."""
    saved, saved_prod = dict(ir._CLOSED), dict(trim_mod._CLOSED_PRODUCTIVE)
    ir._CLOSED.clear()
    trim_mod._CLOSED_PRODUCTIVE.clear()
    try:
        return fn()
    finally:
        ir._CLOSED.update(saved)
        trim_mod._CLOSED_PRODUCTIVE.update(saved_prod)
