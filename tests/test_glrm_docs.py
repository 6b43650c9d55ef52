"""The examples of docs/grammars-glrm.md: each ```glrm block and the verdicts written under it.

``Verdicts:`` lines must hold for structgen's matcher and for glrmask 0.5.0; ``structgen:`` and
``glrmask:`` lines for that one only (the page's examples of where the two differ).
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest
from glrmask_oracle import Oracle, matcher_verdict

from structgen import Grammar

try:
    import glrmask
except ImportError:
    glrmask = None

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "grammars-glrm.md"
_ITEM = re.compile(r'`("(?:[^"\\]|\\.)*")` (accept|prefix|reject)')
_WHO = ("Verdicts", "glrmask", "structgen")


def _examples() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(source, who, [(text, verdict)]) for each verdict line under a ```glrm block."""
    out = []
    lines = DOC.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```glrm":
            i += 1
            continue
        end = lines.index("```", i + 1)
        source = "\n".join(lines[i + 1 : end]) + "\n"
        i = end + 1
        while i < len(lines) and (not lines[i].strip() or lines[i].split(":")[0] in _WHO):
            who, _, rest = lines[i].partition(":")
            if who in _WHO:
                out.append((source, who, [(json.loads(t), v) for t, v in _ITEM.findall(rest)]))
            i += 1
    return out


EXAMPLES = _examples()


def test_the_page_has_examples() -> None:
    assert len(EXAMPLES) >= 8
    assert all(items for _src, _who, items in EXAMPLES)


@pytest.mark.parametrize(
    "src, who, items", EXAMPLES, ids=[f"example{i}-{who}" for i, (_s, who, _x) in enumerate(EXAMPLES)]
)
def test_example(src: str, who: str, items: list[tuple[str, str]]) -> None:
    if who in ("Verdicts", "structgen"):
        grammar = Grammar.from_glrm(src)
        for text, verdict in items:
            assert matcher_verdict(grammar, text) == verdict, (src, text)
    if who in ("Verdicts", "glrmask") and glrmask is not None:
        oracle = Oracle(src)
        for text, verdict in items:
            assert oracle.verdict(text) == verdict, (src, text)
