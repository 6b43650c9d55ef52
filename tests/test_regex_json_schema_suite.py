"""The regex parts of JSON-Schema-Test-Suite (draft 2020-12): ``pattern.json`` and
``optional/ecmascript-regex.json``.

For every schema whose verdict rests on regexes alone (``pattern``, or ``patternProperties`` with
``true`` values and ``additionalProperties: false``), our verdict on each instance must equal the
test's ``valid``. A test whose instance is itself a schema with an invalid ``pattern`` (``\\a``)
agrees when we refuse that pattern. Non-string instances of ``pattern`` are skipped (``type``
decides them, not the regex).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from regex_support import node_fullmatch

from structgen import Grammar, RegexError
from structgen.grammar.regex import regex_to_node

FILES = ["pattern.json", "optional/ecmascript-regex.json"]
_SCHEMA_ONLY_KEYS = {"$schema", "type", "pattern", "description"}


def _matches(pattern: str, text: str) -> bool:
    verdict = Grammar.from_regex(pattern).matches(text)
    assert verdict == node_fullmatch(regex_to_node(pattern), text), (pattern, text)
    return verdict


def _verdicts(group: dict[str, Any]) -> list[tuple[str, bool, bool | None]]:
    """(test description, expected valid, our verdict or None if the test is not about regexes)."""
    schema = group["schema"]
    out: list[tuple[str, bool, bool | None]] = []
    for test in group["tests"]:
        data, valid = test["data"], test["valid"]
        ours: bool | None = None
        if "pattern" in schema and set(schema) <= _SCHEMA_ONLY_KEYS and isinstance(data, str):
            ours = _matches(schema["pattern"], data)
        elif (
            "patternProperties" in schema
            and schema.get("additionalProperties") is False
            and all(v is True for v in schema["patternProperties"].values())
            and isinstance(data, dict)
        ):
            patterns = list(schema["patternProperties"])
            ours = all(any(_matches(p, key) for p in patterns) for key in data)
        elif (
            schema.get("$ref", "").startswith("https://json-schema.org/draft/2020-12/schema")
            and isinstance(data, dict)
            and isinstance(data.get("pattern"), str)
        ):
            try:
                regex_to_node(data["pattern"])
                ours = True
            except RegexError:
                ours = False
        out.append((test["description"], valid, ours))
    return out


@pytest.mark.parametrize("name", FILES)
def test_suite_regex_verdicts(corpora: Path, name: str) -> None:
    path = corpora / "json-schema-test-suite" / "tests" / "draft2020-12" / name
    if not path.is_file():
        pytest.skip(f"{path} is not in the corpora: this copy of JSON-Schema-Test-Suite leaves out that optional file")
    groups = json.loads(path.read_text(encoding="utf-8"))
    checked = 0
    disagreements = []
    for group in groups:
        for description, valid, ours in _verdicts(group):
            if ours is None:
                continue
            checked += 1
            if ours != valid:
                disagreements.append((group["description"], description, valid, ours))
    assert checked > 0
    assert not disagreements, disagreements
