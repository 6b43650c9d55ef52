"""Facts the translator hands on instead of having them recomputed: they must be the ones the
analyses would find.

``declare_all_productive`` (schema/translate.py) tells the engine's lowering that every rule of a
translated grammar derives a sentence, skipping the emptiness analysis; here the analysis runs
anyway on ``schemas/`` and a MaskBench sample and must agree.
"""

from __future__ import annotations

import json
import pathlib
import tarfile

import pytest

from structgen.errors import StructgenError
from structgen.grammar.emptiness import _productive, productive_rules
from structgen.schema import json_schema_to_grammar

ROOT = pathlib.Path(__file__).resolve().parent.parent
MASKBENCH = "jsonschemabench/maskbench-data-full.tar.xz"
SAMPLE_EVERY = 40  # every 40th MaskBench schema by name: about 280 schemas, a few seconds


def _named() -> list[tuple[str, object]]:
    return [(p.stem, json.loads(p.read_text(encoding="utf-8"))) for p in sorted((ROOT / "schemas").glob("*.json"))]


def _check(schema: object) -> None:
    try:
        grammar = json_schema_to_grammar(schema)
    except StructgenError:
        return
    assert productive_rules(grammar) == frozenset(grammar.rules)
    assert _productive(grammar) == frozenset(grammar.rules)


@pytest.mark.parametrize("name,schema", _named(), ids=[n for n, _ in _named()])
def test_translated_rules_are_productive_named(name: str, schema: object) -> None:
    _check(schema)


def test_translated_rules_are_productive_maskbench(corpora: pathlib.Path) -> None:
    with tarfile.open(corpora / MASKBENCH) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".json")), key=lambda m: m.name)
        for m in members[::SAMPLE_EVERY]:
            f = tar.extractfile(m)
            assert f is not None
            _check(json.load(f)["schema"])


def test_dead_branches_leave_only_productive_rules() -> None:
    # a required property whose schema is false, and recursion without a base case
    schema = {
        "type": "object",
        "properties": {"a": {"anyOf": [{"$ref": "#/$defs/loop"}, {"type": "integer"}]}},
        "required": ["a"],
        "$defs": {"loop": {"type": "array", "items": {"$ref": "#/$defs/loop"}, "minItems": 1}},
    }
    _check(schema)
