"""Cross-engine check of the exported grammars: the GBNF text of a schema's grammar, run by the
real llama.cpp grammar engine, and its GLRM text, run by glrmask 0.5.0, give the same verdict as
structgen's own matcher on every instance.

Schemas: every JSON-Schema-Test-Suite (draft 2020-12 + optional/format) schema that compiles, and
a MaskBench sample. Instances: the corpora's valid and invalid ones, compact and default-spaced,
keys in schema order. llama.cpp gets each instance as llama.cpp's own tokens of the Llama 3
vocabulary (each token offered to its grammar sampler before it is accepted; the end token
offered at the end); glrmask gets it byte by byte. Any difference is a bug on one side and fails
the test with the schema, the instance and the three verdicts.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from schema_corpus import Orderer, TimeLimit, serialisations, time_limit

from structgen.errors import StructgenError
from structgen.schema import json_schema_to_grammar

SUITE = "json-schema-test-suite/tests/draft2020-12"
MASKBENCH_SAMPLE = 40
EXPORT_HANG_GUARD_S = 600  # CPU seconds for both exports and glrmask's parse of one schema


@pytest.fixture(scope="module")
def llama() -> Any:
    import llama_cpp_oracle as oracle_module  # a local helper: it says below whether llama.cpp is there

    if not oracle_module.available():
        pytest.skip("llama-cpp-python is not installed (pip install '.[llama]')")
    if not oracle_module.DEFAULT_VOCAB.exists():
        pytest.skip(f"the Llama 3 vocabulary is missing ({oracle_module.DEFAULT_VOCAB}): run tools/fetch_assets.py")
    oracle = oracle_module.LlamaCppOracle()
    yield oracle
    oracle.close()


@pytest.fixture(scope="module")
def glrm_oracle() -> Any:
    import glrmask_oracle as module  # a local helper: oracle_or_skip says whether glrmask is there

    module.oracle_or_skip()
    return module.Oracle


def _suite_cases(corpora: pathlib.Path) -> list[tuple[str, Any, list[tuple[Any, bool]], dict]]:
    base = corpora / SUITE
    files = [(p.stem, p) for p in sorted(base.glob("*.json"))]
    files += [(f"optional/format/{p.stem}", p) for p in sorted((base / "optional" / "format").glob("*.json"))]
    cases = []
    for stem, path in files:
        options = {"formats": "ignore"} if stem == "format" else {}
        for group in json.loads(path.read_text()):
            tests = [(t["data"], t["valid"]) for t in group["tests"]]
            cases.append((f"{stem} / {group['description']}", group["schema"], tests, options))
    return cases


def _maskbench_cases(corpora: pathlib.Path) -> list[tuple[str, Any, list[tuple[Any, bool]], dict]]:
    from test_schema_maskbench import ARCHIVE, load, sample

    if not (corpora / ARCHIVE).exists():
        pytest.skip("MaskBench archive not found: set STRUCTGEN_CORPORA to the shared/corpora folder")
    return [
        (name, entry["schema"], [(t["data"], t["valid"]) for t in entry.get("tests", [])], {})
        for name, entry in sample(load(corpora), MASKBENCH_SAMPLE)
    ]


def _cross_check(cases: list, llama: Any, glrm_oracle: Any) -> tuple[dict[str, int], list[str]]:
    counts = dict(compiled=0, instances=0, llama_differs=0, glrmask_differs=0, export_failed=0, timeouts=0)
    problems: list[str] = []
    for where, schema, tests, options in cases:
        try:
            with time_limit(20):
                grammar = json_schema_to_grammar(schema, **options)
        except (StructgenError, TimeLimit):
            continue  # refusals are the translator tests' business
        counts["compiled"] += 1
        try:
            # a hang guard, not a speed check: format "hostname" alone lowers to ~24k DFA rules
            with time_limit(EXPORT_HANG_GUARD_S):
                gbnf = grammar.to_gbnf()
                glrm = grammar.to_glrm()
                glrmask = glrm_oracle(glrm)
        except TimeLimit:
            counts["timeouts"] += 1
            problems.append(f"TIMEOUT exporting {where}")
            continue
        except (StructgenError, ValueError) as e:
            counts["export_failed"] += 1
            problems.append(f"EXPORT FAILED {where}: {type(e).__name__}: {e}")
            continue
        if not llama.grammar_ok(gbnf):
            counts["export_failed"] += 1
            problems.append(f"LLAMA.CPP REFUSES the GBNF of {where}")
            continue
        orderer = Orderer(schema)
        for data, _valid in tests:
            for text in serialisations(orderer.reorder(data)):
                counts["instances"] += 1
                ours = grammar.matches(text)
                theirs_llama = llama.accepts(gbnf, text)
                theirs_glrm = glrmask.accepts(text)
                if theirs_llama != ours:
                    counts["llama_differs"] += 1
                if theirs_glrm != ours:
                    counts["glrmask_differs"] += 1
                if theirs_llama != ours or theirs_glrm != ours:
                    verdicts = f"structgen {ours}, llama.cpp {theirs_llama}, glrmask {theirs_glrm}"
                    problems.append(f"DIFFERS {where}: {verdicts}: {text[:120]}")
    return counts, problems


def _report(counts: dict[str, int], problems: list[str]) -> None:
    print(json.dumps(counts))
    assert not problems, "\n".join(problems[:40])


def test_suite_grammars_mean_the_same_in_llama_cpp_and_glrmask(
    corpora: pathlib.Path, llama: Any, glrm_oracle: Any
) -> None:
    counts, problems = _cross_check(_suite_cases(corpora), llama, glrm_oracle)
    assert counts["compiled"] >= 300, counts  # the suite is there and compiles as the ratchet says
    _report(counts, problems)


def test_maskbench_grammars_mean_the_same_in_llama_cpp_and_glrmask(
    corpora: pathlib.Path, llama: Any, glrm_oracle: Any
) -> None:
    counts, problems = _cross_check(_maskbench_cases(corpora), llama, glrm_oracle)
    _report(counts, problems)
