"""llama.cpp's own grammar tests and grammars (from $STRUCTGEN_CORPORA/llama.cpp) against our reader.

* build cases: every verdict (builds / refused) matches llama.cpp's;
* integration cases: every ``pass`` string is accepted and every ``fail`` string rejected; in the
  two token cases a ``{"token": N}`` part is one token with id N and a text part one token (with
  an id none of the grammar's) whose text is that string;
* the example grammars parse, and GBNF -> form -> GBNF -> form is the identity;
* every expected grammar of llama.cpp's JSON-Schema converter tests parses.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from conftest import corpora_dir

from structgen import Grammar, GrammarError, LimitError
from structgen.grammar.gbnf import parse_gbnf, write_gbnf

GRAMMAR_FILES = ["arithmetic", "c", "chess", "english", "japanese", "json", "json_arr", "list"]


def _load(corpora: pathlib.Path, name: str) -> Any:
    return json.loads((corpora / "llama.cpp" / "tests" / name).read_text(encoding="utf-8"))


def _count(name: str) -> int:
    """Number of records, read at collection time so that each case is a test of its own."""
    base = corpora_dir()
    if base is None or not (base / "llama.cpp" / "tests" / name).is_file():
        return 0
    return len(_load(base, name))


def test_corpus_sizes(corpora: pathlib.Path) -> None:
    builds = _load(corpora, "llama_grammar_build_cases.json")
    assert len(builds) == 27
    assert sum(c["expect"] == "ok" for c in builds) == 16
    assert len(_load(corpora, "llama_grammar_integration.json")) == 14


@pytest.mark.parametrize("index", range(_count("llama_grammar_build_cases.json")))
def test_build_case_verdict(corpora: pathlib.Path, index: int) -> None:
    case = _load(corpora, "llama_grammar_build_cases.json")[index]
    if case["expect"] == "ok":
        Grammar.from_gbnf(case["grammar"], start=case["root"])
    else:
        with pytest.raises((GrammarError, LimitError)):
            Grammar.from_gbnf(case["grammar"], start=case["root"])


def feed_parts(grammar: Grammar, parts: list[Any]) -> bool:
    """Feed a token-case string: each part is one whole token."""
    m = grammar.matcher()
    for part in parts:
        ok = m.feed_token(part["token"], b"") if isinstance(part, dict) else m.feed_token(None, part.encode())
        if not ok:
            return False
    return m.is_accepting()


def verdict(grammar: Grammar, case: dict[str, Any], s: Any) -> bool:
    return feed_parts(grammar, s) if case.get("uses_tokens") else grammar.matches(s)


@pytest.mark.parametrize("index", range(_count("llama_grammar_integration.json")))
def test_integration_strings(corpora: pathlib.Path, index: int) -> None:
    case = _load(corpora, "llama_grammar_integration.json")[index]
    grammar = Grammar.from_gbnf(case["grammar"])
    wrong = [("pass", s) for s in case["pass"] if not verdict(grammar, case, s)]
    wrong += [("fail", s) for s in case["fail"] if verdict(grammar, case, s)]
    assert not wrong, f"{case['name']}: {wrong}"
    # the written grammar means the same
    again = Grammar.from_gbnf(grammar.to_gbnf())
    assert again == grammar


@pytest.mark.parametrize("name", GRAMMAR_FILES)
def test_example_grammars_parse_and_round_trip(corpora: pathlib.Path, name: str) -> None:
    text = (corpora / "llama.cpp" / "grammars" / f"{name}.gbnf").read_text(encoding="utf-8")
    form = parse_gbnf(text)
    written = write_gbnf(form)
    assert parse_gbnf(written) == form
    assert write_gbnf(parse_gbnf(written)) == written


def test_example_grammars_match_samples(corpora: pathlib.Path) -> None:
    base = corpora / "llama.cpp" / "grammars"
    json_g = parse_gbnf((base / "json.gbnf").read_text(encoding="utf-8"))
    assert json_g.matches('{"a": [1, 2.5e3, "x\\n"], "b": {"c": null}}')
    assert not json_g.matches('{"a": [1, 2,]}')
    arithmetic = parse_gbnf((base / "arithmetic.gbnf").read_text(encoding="utf-8"))
    assert arithmetic.matches("1+2=x\n") and not arithmetic.matches("1+=x\n")
    chess = parse_gbnf((base / "chess.gbnf").read_text(encoding="utf-8"))
    assert chess.matches("1. e4 e5\n2. Nf3 Nc6\n")
    japanese = parse_gbnf((base / "japanese.gbnf").read_text(encoding="utf-8"))
    assert japanese.matches("こんにちは 世界") and not japanese.matches("hello")


def test_json_schema_converter_expected_grammars_parse(corpora: pathlib.Path) -> None:
    cases = [c for c in _load(corpora, "llama_json_schema_to_grammar.json") if c["expected_grammar"]]
    assert len(cases) == 73
    for case in cases:
        form = parse_gbnf(case["expected_grammar"])
        assert parse_gbnf(write_gbnf(form)) == form, case["name"]
