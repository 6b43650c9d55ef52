"""llama.cpp's JSON-schema-to-grammar integration vectors, judged by the specification.

Each vector comes with the ``jsonschema`` verdict of every string (``*_spec_valid``; ``None``:
not JSON). Our grammar must agree with the specification, not with llama.cpp's own choices
(required-first key order, 16-digit integers...). The strings are taken as written, so key order
is left free (``property_order="any"``); the default schema order is checked on the valid ones
with keys reordered. Two documented departures are accounted for: whitespace around the whole
value is not accepted (the text is stripped first), and a ``None`` verdict on a JSON text (the
validator could not judge it: an invalid schema) is skipped.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from schema_corpus import Orderer, check_ratchet

from structgen.errors import LimitError, SchemaError
from structgen.schema import json_schema_to_grammar

VECTORS = "llama.cpp/tests/llama_schema_integration.json"


def run_llama(path: pathlib.Path) -> tuple[dict[str, int], list[str]]:
    counts = dict(schemas=0, compiled=0, passing=0, valid_rejected=0, invalid_accepted=0, errors=0)
    notes: list[str] = []
    for case in json.loads(path.read_text()):
        counts["schemas"] += 1
        try:
            any_order = json_schema_to_grammar(case["schema"], property_order="any")
            in_order = json_schema_to_grammar(case["schema"])
        except (SchemaError, LimitError) as e:
            notes.append(f"REFUSED {case['name']}: {e}")
            continue
        counts["compiled"] += 1
        orderer = Orderer(case["schema"])
        ok = True
        for texts, verdicts in ((case["pass"], case["pass_spec_valid"]), (case["fail"], case["fail_spec_valid"])):
            for text, valid in zip(texts, verdicts):
                if valid is None and _is_json(text):
                    continue
                if valid:
                    text = text.strip()
                got = any_order.matches(text)
                if valid and got:
                    reordered = json.dumps(orderer.reorder(json.loads(text)))
                    got = in_order.matches(reordered)
                if got != bool(valid):
                    ok = False
                    key = "valid_rejected" if valid else "invalid_accepted"
                    counts[key] += 1
                    notes.append(f"{key.upper()} {case['name']}: {text[:120]!r}")
        counts["passing"] += ok
    return counts, notes


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def test_llama_schema_vectors(corpora: pathlib.Path) -> None:
    path = corpora / VECTORS
    if not path.exists():
        pytest.skip("llama.cpp vectors not found: set STRUCTGEN_CORPORA to the shared/corpora folder")
    counts, notes = run_llama(path)
    for n in notes:
        print(n)
    print(f"structgen on llama.cpp's schema vectors: {json.dumps(counts)}")
    failures = check_ratchet("llama_schema_integration", counts)
    assert counts["invalid_accepted"] == 0
    assert not failures, failures


if __name__ == "__main__":  # pragma: no cover
    c, n = run_llama(pathlib.Path("/work/shared/corpora") / VECTORS)
    print("\n".join(n))
    print(c)
