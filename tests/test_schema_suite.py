"""JSON-Schema-Test-Suite (draft 2020-12 + optional/format) against the translator, with a ratchet.

Every schema that compiles must accept its valid instances and reject its invalid ones, written
compact and with ``json.dumps`` spacing, keys in schema order (``schema_corpus.Orderer``); every
schema that does not compile must fail with a SchemaError naming a keyword. ``format.json``
checks that ``format`` is only an annotation, which structgen's format assertion contradicts by
design: it is run with ``formats="ignore"`` instead. The any-order option is run on the instances
as given. Counts are compared with llguidance's verdicts and with ``tests/ratchet.json``.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

from schema_corpus import Orderer, TimeLimit, check_ratchet, serialisations, time_limit

from structgen.errors import LimitError, SchemaError
from structgen.schema import json_schema_to_grammar

SUITE = "json-schema-test-suite/tests/draft2020-12"
LLG = "llguidance/expected_json_schema_test_suite.json"


def _files(corpora: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    base = corpora / SUITE
    out = [(p.stem, p) for p in sorted(base.glob("*.json"))]
    out += [(f"optional/format/{p.stem}", p) for p in sorted((base / "optional" / "format").glob("*.json"))]
    return out


def run_suite(corpora: pathlib.Path, *, reorder: bool = True, **options: Any) -> tuple[dict[str, int], list[str]]:
    counts = dict(schemas=0, compiled=0, passing=0, valid_rejected=0, invalid_accepted=0, errors=0, timeouts=0)
    notes: list[str] = []
    for stem, path in _files(corpora):
        opts = dict(options)
        if stem == "format":
            opts["formats"] = "ignore"  # the annotation-only tests; see the module docstring
        for group in json.loads(path.read_text()):
            counts["schemas"] += 1
            where = f"{stem} / {group['description']}"
            try:
                with time_limit(20):
                    grammar = json_schema_to_grammar(group["schema"], **opts)
            except (SchemaError, LimitError) as e:
                if isinstance(e, SchemaError) and not e.keyword:
                    counts["errors"] += 1
                    notes.append(f"REFUSED WITHOUT KEYWORD {where}: {e}")
                continue
            except TimeLimit:
                counts["timeouts"] += 1
                notes.append(f"TIMEOUT compiling {where}")
                continue
            except Exception as e:  # noqa: BLE001 - counted, printed, and failed below
                counts["errors"] += 1
                notes.append(f"CRASH {where}: {type(e).__name__}: {e}")
                continue
            counts["compiled"] += 1
            orderer = Orderer(group["schema"]) if reorder else None
            ok = True
            for test in group["tests"]:
                data = orderer.reorder(test["data"]) if orderer is not None else test["data"]
                for text in serialisations(data):
                    try:
                        with time_limit(20):
                            got = grammar.matches(text)
                    except TimeLimit:
                        got = None
                    if got != test["valid"]:
                        ok = False
                        key = "valid_rejected" if test["valid"] else "invalid_accepted"
                        counts[key] += 1
                        notes.append(f"{key.upper()} {where} / {test['description']}: {text[:120]}")
            counts["passing"] += ok
    return counts, notes


def llguidance_counts(corpora: pathlib.Path) -> dict[str, int]:
    data = json.loads((corpora / LLG).read_text())["draft2020-12"]
    compiled = passing = 0
    for stem, groups in data.items():
        if stem == "format":
            continue
        for tests in groups.values():
            statuses = set(tests.values())
            if not any(s.startswith(("skip_compile", "compile_error")) for s in statuses):
                compiled += 1
                passing += statuses == {"pass"}
    return {"compiled": compiled, "passing": passing}


def test_json_schema_test_suite(corpora: pathlib.Path) -> None:
    counts, notes = run_suite(corpora)
    llg = llguidance_counts(corpora)
    for n in notes:
        print(n)
    print(f"structgen: {json.dumps(counts)}")
    print(f"llguidance (its verdict file, format.json left out): {json.dumps(llg)}")
    failures = check_ratchet("json_schema_test_suite", counts)
    assert counts["errors"] == 0, "crashes or keyword-less refusals"
    assert not failures, failures


def test_json_schema_test_suite_exact_formats(corpora: pathlib.Path) -> None:
    """``formats="exact"`` refuses the formats enforced only as a subset of their valid strings:
    then every schema that compiles is exact on every instance."""
    counts, notes = run_suite(corpora, formats="exact")
    for n in notes:
        print(n)
    print(f"structgen, formats='exact': {json.dumps(counts)}")
    failures = check_ratchet("json_schema_test_suite_exact_formats", counts)
    assert counts["errors"] == 0
    assert counts["valid_rejected"] == 0 and counts["invalid_accepted"] == 0, notes[:20]
    assert not failures, failures


def test_json_schema_test_suite_any_order(corpora: pathlib.Path) -> None:
    counts, notes = run_suite(corpora, reorder=False, property_order="any")
    for n in notes:
        print(n)
    print(f"structgen, property_order='any', instances as given: {json.dumps(counts)}")
    failures = check_ratchet("json_schema_test_suite_any_order", counts)
    assert counts["errors"] == 0
    assert not failures, failures


if __name__ == "__main__":  # pragma: no cover
    import sys

    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/corpora")
    c, n = run_suite(root)
    print("\n".join(n))
    print(c, llguidance_counts(root))
