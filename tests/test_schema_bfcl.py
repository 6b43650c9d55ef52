"""BFCL tool definitions: every parameter schema compiles after normalisation, and every
ground-truth call (first allowed value of each argument, ``""`` meaning "omitted") that is valid
against its own schema (``jsonschema``) is accepted. Calls the benchmark gets wrong against its
own schema (Java source text for an array, a value outside an enum...) are counted apart."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import jsonschema
import pytest
from schema_corpus import Orderer, check_ratchet, serialisations

from structgen.errors import LimitError, SchemaError
from structgen.schema import json_schema_to_grammar, normalize_tool_parameters

QUESTIONS = [
    "BFCL_v4_simple_python",
    "BFCL_v4_simple_java",
    "BFCL_v4_simple_javascript",
    "BFCL_v4_multiple",
    "BFCL_v4_parallel",
    "BFCL_v4_parallel_multiple",
    "BFCL_v4_live_simple",
    "BFCL_v4_live_multiple",
]


def _first(allowed: Any) -> tuple[bool, Any]:
    """(present, value) for one argument's list of allowed values."""
    if not isinstance(allowed, list) or not allowed:
        return False, None
    value = allowed[0]
    if value == "":
        return False, None
    return True, _value(value)


def _value(value: Any) -> Any:
    """A dict of allowed-value lists (BFCL's nested form) becomes a dict of first values."""
    if isinstance(value, dict):
        return {k: v for k, (p, v) in ((k, _first(x)) for k, x in value.items()) if p}
    if isinstance(value, list):
        return [_value(x) for x in value]
    return value


def ground_truth_instance(params: dict) -> dict:
    return {k: v for k, (present, v) in ((k, _first(a)) for k, a in params.items()) if present}


def test_normalize_tool_parameters() -> None:
    raw = {
        "type": "dict",
        "properties": {
            "a": {"type": "float"},
            "b": {"type": "tuple", "items": {"type": "String"}},
            "c": {"type": "any"},
            "d": {"type": "HashMap", "optional": True},
        },
    }
    assert normalize_tool_parameters(raw) == {
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "b": {"type": "array", "items": {"type": "string"}},
            "c": {},
            "d": {"type": "object"},
        },
    }
    assert raw["type"] == "dict"  # the input is not modified


def run_bfcl(root: pathlib.Path) -> tuple[dict[str, int], list[str]]:
    counts = dict(functions=0, compiled=0, calls=0, spec_invalid=0, accepted=0, errors=0)
    notes: list[str] = []
    for name in QUESTIONS:
        answers = {}
        for line in (root / "possible_answer" / f"{name}.json").read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                answers[entry["id"]] = entry["ground_truth"]
        for line in (root / f"{name}.json").read_text().splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            grammars: dict[str, Any] = {}
            for fn in entry["function"]:
                counts["functions"] += 1
                schema = normalize_tool_parameters(fn.get("parameters", {"type": "object"}))
                try:
                    grammars[fn["name"]] = (
                        json_schema_to_grammar(schema),
                        Orderer(schema),
                        jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()),
                    )
                    counts["compiled"] += 1
                except (SchemaError, LimitError) as e:
                    notes.append(f"REFUSED {entry['id']} {fn['name']}: {e}")
                except Exception as e:  # noqa: BLE001 - counted and reported
                    counts["errors"] += 1
                    notes.append(f"CRASH {entry['id']} {fn['name']}: {type(e).__name__}: {e}")
            for call in answers.get(entry["id"], []):
                for fn_name, params in call.items():
                    if fn_name not in grammars:
                        continue
                    counts["calls"] += 1
                    grammar, orderer, validator = grammars[fn_name]
                    instance = orderer.reorder(ground_truth_instance(params))
                    if not validator.is_valid(instance):  # the benchmark's answer breaks its own schema
                        counts["spec_invalid"] += 1
                        continue
                    texts = serialisations(instance)
                    if all(grammar.matches(t) for t in texts):
                        counts["accepted"] += 1
                    else:
                        notes.append(f"REJECTED {entry['id']} {fn_name}: {texts[0][:200]}")
    return counts, notes


def test_bfcl(corpora: pathlib.Path) -> None:
    root = corpora / "bfcl" / "data"
    if not root.exists():
        pytest.skip("BFCL corpus not found: set STRUCTGEN_CORPORA to the shared/corpora folder")
    counts, notes = run_bfcl(root)
    for n in notes:
        print(n)
    print(f"structgen on BFCL: {json.dumps(counts)}")
    failures = check_ratchet(
        "bfcl", {"compiled": counts["compiled"], "passing": counts["accepted"], "errors": counts["errors"]}
    )
    assert counts["errors"] == 0
    assert not failures, failures


if __name__ == "__main__":  # pragma: no cover
    c, n = run_bfcl(pathlib.Path("/work/shared/corpora/bfcl/data"))
    print("\n".join(n))
    print(c)
