"""What a schema's keywords become, without building a token-level constraint.

:func:`enforceability_report` runs the translator in lenient mode and reports, per schema
location reached, every keyword as *enforced*, *refused* (with the reason; strict translation
would fail there) or *ignored* (annotations, unknown keywords, keywords without effect). An
invalid schema (not JSON, a dangling reference...) is reported with its error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import StructgenError

Status = Literal["enforced", "refused", "ignored"]


@dataclass(frozen=True)
class KeywordStatus:
    pointer: str
    keyword: str
    status: Status
    reason: str = ""

    def __str__(self) -> str:
        why = f" - {self.reason}" if self.reason else ""
        return f"{self.status:8} {self.pointer or '#'} {self.keyword}{why}"


@dataclass(frozen=True)
class EnforceabilityReport:
    entries: tuple[KeywordStatus, ...]
    error: str | None = None

    @property
    def enforceable(self) -> bool:
        """True if strict translation succeeds (nothing refused, no error)."""
        return self.error is None and not self.refused

    @property
    def enforced(self) -> tuple[KeywordStatus, ...]:
        return tuple(e for e in self.entries if e.status == "enforced")

    @property
    def refused(self) -> tuple[KeywordStatus, ...]:
        return tuple(e for e in self.entries if e.status == "refused")

    @property
    def ignored(self) -> tuple[KeywordStatus, ...]:
        return tuple(e for e in self.entries if e.status == "ignored")

    def __str__(self) -> str:
        if self.error is not None:
            return f"schema error: {self.error}"
        head = f"{len(self.enforced)} enforced, {len(self.refused)} refused, {len(self.ignored)} ignored" + (
            " - enforceable" if self.enforceable else " - NOT enforceable as is"
        )
        order = {"refused": 0, "enforced": 1, "ignored": 2}
        lines = [str(e) for e in sorted(self.entries, key=lambda e: (order[e.status], e.pointer, e.keyword))]
        return "\n".join([head] + lines)


def enforceability_report(schema: Any, **options: Any) -> EnforceabilityReport:
    from .translate import compile_schema

    options["lenient"] = True
    try:
        result = compile_schema(schema, **options)
    except StructgenError as e:
        return EnforceabilityReport((), str(e))
    refused = {(d.pointer, d.keyword) for d in result.dropped}
    entries = [KeywordStatus(d.pointer, d.keyword, "refused", d.reason) for d in result.dropped]
    for pointer, kws in result.enforced.items():
        for kw in kws:
            if (pointer, kw) not in refused:
                entries.append(KeywordStatus(pointer, kw, "enforced"))
    entries.extend(KeywordStatus(i.pointer, i.keyword, "ignored", i.reason) for i in result.ignored)
    return EnforceabilityReport(tuple(entries))
