"""A schema translates to the same grammar in every process: rule names must not depend on
Python's per-process string hash (long names were shortened with ``hash()``, so the grammar's
text and fingerprint, which key the on-disk constraint cache, changed from one process to the
next)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = """
import structgen
name = "AVeryVeryLongDefinitionNameThatGoesOnAndOnAndOnForever"
schema = {
    "type": "object",
    "properties": {"x": {"$ref": "#/$defs/" + name}, "y": {"$ref": "#/$defs/" + name}},
    "$defs": {name: {"type": "object", "properties": {"n": {"type": "integer"}}}},
}
g = structgen.Grammar.from_json_schema(schema)
from structgen.constraint_cache import grammar_fingerprint
print(grammar_fingerprint(g))
print(g.to_gbnf())
"""


def _run(seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return out.stdout


def test_grammar_text_and_fingerprint_do_not_depend_on_the_hash_seed() -> None:
    first = _run("1")
    assert "defs-AVeryVeryLongDefinitionNameTha" in first and first == _run("2") == _run("3")
