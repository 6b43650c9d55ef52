"""The examples of the GBNF section of docs/grammars.md do what the text says.

```gbnf blocks must be read without error, ```gbnf refused blocks must be refused, and ```python
blocks must run.
"""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from structgen import Grammar, GrammarError

DOC = ROOT / "docs" / "grammars.md"
FENCE = re.compile(r"^```(\w+)(?:[ \t]+(\w+))?\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("\n## GBNF\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


BLOCKS = [(m.group(1), m.group(2), m.group(3)) for m in FENCE.finditer(_section())]


def test_the_section_has_examples_of_each_kind() -> None:
    kinds = {(lang, flag) for lang, flag, _ in BLOCKS}
    assert {("gbnf", None), ("gbnf", "refused"), ("python", None)} <= kinds


@pytest.mark.parametrize("lang, flag, code", BLOCKS, ids=[f"{i}-{b[0]}" for i, b in enumerate(BLOCKS)])
def test_example(lang: str, flag: str | None, code: str) -> None:
    if lang == "python":
        exec(compile(code, str(DOC), "exec"), {})  # noqa: S102 - running the documented example is the test
    elif flag == "refused":
        with pytest.raises(GrammarError):
            Grammar.from_gbnf(code)
    else:
        g = Grammar.from_gbnf(code)
        assert Grammar.from_gbnf(g.to_gbnf()) == g
