"""MaskBench (JSONSchemaBench + MaskBench-only schemas) through the translator, with a ratchet.

A schema *passes* if it compiles and every test instance gets the right verdict (valid ones
accepted, invalid ones rejected), serialised compact and with ``json.dumps`` spacing. Instance
keys are put in schema order first (``schema_corpus.Orderer``): MaskBench reordered its instances
with llguidance, which left the instances of schemas llguidance refuses in their original order.
``test_maskbench_sample_as_given`` walks the same sample with the keys as written (MaskBench's
own method).
The default run takes a fixed sample; the
full 11,305 schemas run under ``-m slow``. Compare: llguidance 1.9.1 passes 9,489 of them
(``/work/shared/notes/CONFORMANCE_PEERS.md``).
"""

from __future__ import annotations

import json
import pathlib
import random
import tarfile

import pytest
from schema_corpus import Orderer, TimeLimit, check_ratchet, serialisations, time_limit

from structgen.errors import LimitError, SchemaError
from structgen.schema import json_schema_to_grammar

ARCHIVE = "jsonschemabench/maskbench-data-full.tar.xz"
SAMPLE = 150


def load(corpora: pathlib.Path) -> list[tuple[str, dict]]:
    out = []
    with tarfile.open(corpora / ARCHIVE) as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name.endswith(".json"):
                f = tar.extractfile(m)
                assert f is not None
                out.append((m.name.split("/", 1)[1], json.load(f)))
    out.sort()
    return out


def run(
    entries: list[tuple[str, dict]], compile_limit: float = 20, schema_limit: float = 60, *, reorder: bool = True
) -> tuple[dict[str, int], list[str]]:
    """Counts and notes; ``reorder=False`` walks the instances with their keys as written
    (MaskBench's own method)."""
    counts = dict(
        schemas=0,
        compiled=0,
        passing=0,
        valid_rejected=0,
        invalid_accepted=0,
        errors=0,
        timeouts=0,
        schemas_valid_rejected=0,
        schemas_invalid_accepted=0,
    )
    notes: list[str] = []
    refused: dict[str, int] = {}
    for name, entry in entries:
        counts["schemas"] += 1
        try:
            with time_limit(compile_limit):
                grammar = json_schema_to_grammar(entry["schema"])
        except (SchemaError, LimitError) as e:
            key = getattr(e, "keyword", None) or getattr(e, "limit", None) or "?"
            refused[key] = refused.get(key, 0) + 1
            continue
        except TimeLimit:
            counts["timeouts"] += 1
            notes.append(f"TIMEOUT compiling {name}")
            continue
        except Exception as e:  # noqa: BLE001 - counted and reported
            counts["errors"] += 1
            notes.append(f"CRASH {name}: {type(e).__name__}: {e}")
            continue
        counts["compiled"] += 1
        ok = True
        bad_valid = bad_invalid = False
        try:
            with time_limit(schema_limit):
                orderer = Orderer(entry["schema"]) if reorder else None
                for test in entry.get("tests", []):
                    data = orderer.reorder(test["data"]) if orderer is not None else test["data"]
                    for text in serialisations(data):
                        if grammar.matches(text) != test["valid"]:
                            ok = False
                            if test["valid"]:
                                counts["valid_rejected"] += 1
                                bad_valid = True
                            else:
                                counts["invalid_accepted"] += 1
                                bad_invalid = True
                            notes.append(
                                f"{'VALID_REJECTED' if test['valid'] else 'INVALID_ACCEPTED'} {name}: {text[:150]}"
                            )
        except TimeLimit:
            ok = False
            counts["timeouts"] += 1
            notes.append(f"TIMEOUT matching {name}")
        counts["passing"] += ok
        counts["schemas_valid_rejected"] += bad_valid
        counts["schemas_invalid_accepted"] += bad_invalid
    notes.append("refused by keyword: " + json.dumps(dict(sorted(refused.items(), key=lambda kv: -kv[1]))))
    return counts, notes


def sample(entries: list[tuple[str, dict]], n: int = SAMPLE) -> list[tuple[str, dict]]:
    rng = random.Random(20261130)
    return sorted(rng.sample(entries, min(n, len(entries))))


@pytest.fixture(scope="module")
def entries(corpora: pathlib.Path) -> list[tuple[str, dict]]:
    if not (corpora / ARCHIVE).exists():
        pytest.skip("MaskBench archive not found: set STRUCTGEN_CORPORA to the shared/corpora folder")
    return load(corpora)


def _report(counts: dict[str, int], notes: list[str], ratchet: str) -> None:
    for n in notes:
        print(n)
    print(f"structgen: {json.dumps(counts)}")
    print("llguidance 1.9.1 (all 11,305): compiled 9,509, passing 9,489")
    failures = check_ratchet(ratchet, counts)
    assert counts["errors"] == 0, "crashes"
    assert not failures, failures


def test_maskbench_sample(entries: list[tuple[str, dict]]) -> None:
    counts, notes = run(sample(entries))
    _report(counts, notes, "maskbench_sample")


def test_maskbench_sample_as_given(entries: list[tuple[str, dict]]) -> None:
    """The same sample under MaskBench's own method: keys in the order the instances have them
    (small objects take any order, larger ones their required keys anywhere: json-schema.md)."""
    counts, notes = run(sample(entries), reorder=False)
    _report(counts, notes, "maskbench_sample_as_given")


@pytest.mark.slow
def test_maskbench_full(entries: list[tuple[str, dict]]) -> None:
    counts, notes = run(entries)
    _report(counts, notes, "maskbench_full")


def test_orderer_sorts_finite_property_names() -> None:
    """More than a few keys from a finite ``propertyNames`` are written in name order
    (MaskBench Github_medium---o90904, Github_hard---o39233): the Orderer must agree."""
    names = ["N", "NE", "E", "SE", "S", "SW", "W", "NW", "C"]
    schema = {
        "definitions": {"direction": {"enum": names}},
        "type": "object",
        "additionalProperties": {"type": "string"},
        "propertyNames": {"$ref": "#/definitions/direction"},
    }
    instance = {"S": "a", "E": "b", "N": "c"}
    reordered = Orderer(schema).reorder(instance)
    assert list(reordered) == ["E", "N", "S"]
    assert json_schema_to_grammar(schema).matches(json.dumps(reordered))


if __name__ == "__main__":  # pragma: no cover
    import sys

    root = pathlib.Path("/work/shared/corpora")
    everything = load(root)
    chosen = everything if "full" in sys.argv else sample(everything, int(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE)
    c, n = run(chosen)
    print("\n".join(n))
    print(c)
