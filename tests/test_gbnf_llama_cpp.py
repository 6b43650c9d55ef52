"""Cross-checks of the GBNF reader and writer against the real llama.cpp (llama-cpp-python).

* what we write, llama.cpp builds: the example grammars, llama.cpp's own test grammars, random
  grammars, and grammars with repetition counts far above llama.cpp's threshold;
* our reader's verdict (builds / refused) is llama.cpp's, on its build cases and on random text;
* with a vocab-only model (``STRUCTGEN_LLAMA_VOCAB``, default the llama-bpe vocabulary of the
  llama-cpp-python source tree), llama.cpp's own matcher gives the same verdicts as ours on
  llama.cpp's integration strings, on large-count grammars and on random grammars and strings.
"""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install '.[llama]')")

from gbnf_strategies import GBNF_TEXT, GRAMMAR, TOKEN_FREE_LEAF, TOKEN_FREE_NODE
from llama_cpp_oracle import DEFAULT_VOCAB, LlamaCppOracle, llama_accepts_grammar
from test_docs_gbnf import BLOCKS
from test_llama_cpp_corpus import GRAMMAR_FILES, feed_parts

from structgen import Grammar, GrammarError, LimitError
from structgen.grammar import ir
from structgen.grammar.gbnf import parse_gbnf, write_gbnf
from structgen.grammar.left_recursion import left_recursive_rule

L, R = ir.lit, ir.Ref


@pytest.fixture(scope="module")
def oracle() -> Iterator[LlamaCppOracle]:
    if not DEFAULT_VOCAB.is_file():
        pytest.skip(f"no vocab-only GGUF model at {DEFAULT_VOCAB} (set STRUCTGEN_LLAMA_VOCAB)")
    o = LlamaCppOracle(DEFAULT_VOCAB)
    yield o
    o.close()


def _tests(corpora: pathlib.Path, name: str) -> list[dict]:
    return json.loads((corpora / "llama.cpp" / "tests" / name).read_text(encoding="utf-8"))


# -- llama.cpp builds what we write ---------------------------------------------------------------


def test_written_example_grammars_build(corpora: pathlib.Path) -> None:
    for name in GRAMMAR_FILES:
        text = (corpora / "llama.cpp" / "grammars" / f"{name}.gbnf").read_text(encoding="utf-8")
        assert llama_accepts_grammar(text), name
        assert llama_accepts_grammar(write_gbnf(parse_gbnf(text))), name


def test_written_test_grammars_build(corpora: pathlib.Path) -> None:
    texts = [c["grammar"] for c in _tests(corpora, "llama_grammar_integration.json")]
    texts += [
        c["expected_grammar"] for c in _tests(corpora, "llama_json_schema_to_grammar.json") if c["expected_grammar"]
    ]
    for text in texts:
        assert llama_accepts_grammar(write_gbnf(parse_gbnf(text))), text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GRAMMAR)
def test_written_random_grammars_build(oracle: LlamaCppOracle, g: Grammar) -> None:
    try:
        text = write_gbnf(g)
    except GrammarError as e:
        assume("left recursion" not in str(e))
        raise
    assert oracle.grammar_ok(text), text


LARGE = [
    ir.Repeat(L("a"), 2500, 2500),
    ir.Repeat(L("a"), 0, 4500),
    ir.Repeat(L("a"), 3000, None),
    ir.Repeat(L("ab"), 1999, 4001),
    ir.Repeat(ir.alt(L("a"), ir.seq(L("b"), R("x"))), 0, 2100),
    ir.Repeat(ir.seq(ir.Repeat(L("a"), 0, 999), R("x")), 3, 3),
    ir.Repeat(ir.Repeat(L("a"), 41, 41), 50, 50),
    ir.Repeat(ir.Repeat(ir.Repeat(L("a"), 0, 30), 0, 30), 0, 30),
    ir.Repeat(L("a"), 5_000_000, 5_000_000),
]


@pytest.mark.parametrize("node", LARGE, ids=[str(i) for i in range(len(LARGE))])
def test_large_counts_build(node: ir.Node) -> None:
    text = write_gbnf(Grammar({"root": node, "x": L("x")}))
    assert llama_accepts_grammar(text), text


@pytest.mark.parametrize(
    "lo, hi, lengths",
    [(2500, 2500, [2499, 2500, 2501]), (0, 4500, [0, 2000, 4500, 4501]), (3000, None, [2999, 3000, 3500])],
)
def test_large_counts_mean_the_same_in_llama_cpp(
    oracle: LlamaCppOracle, lo: int, hi: int | None, lengths: list[int]
) -> None:
    g = Grammar({"root": ir.Repeat(L("a"), lo, hi)})
    text = write_gbnf(g)
    for n in lengths:
        assert oracle.accepts(text, "a" * n) == g.matches("a" * n), n


# -- llama.cpp refuses what we refuse -------------------------------------------------------------


def _our_verdict(text: str, root: str = "root") -> bool:
    try:
        parse_gbnf(text, start=root)
    except (GrammarError, LimitError):
        return False
    return True


def test_build_case_verdicts_are_llama_cpps(corpora: pathlib.Path) -> None:
    for case in _tests(corpora, "llama_grammar_build_cases.json"):
        theirs = llama_accepts_grammar(case["grammar"], case["root"])
        assert theirs == (case["expect"] == "ok"), case["name"]
        assert _our_verdict(case["grammar"], case["root"]) == theirs, case["name"]


@settings(max_examples=400, deadline=None)
@given(GBNF_TEXT)
def test_reader_verdicts_on_random_text_are_llama_cpps(text: str) -> None:
    try:
        form = parse_gbnf(text)
        ours = True
    except LimitError:
        assume(False)  # our own limits, not llama.cpp's
        raise
    except GrammarError as e:
        assume("below its minimum" not in str(e))  # llama.cpp never finishes building x{2,1}
        ours = False
    if ours:
        assume(left_recursive_rule(dict(form.rules)) is None)  # llama.cpp may loop on hidden ones
    assert llama_accepts_grammar(text) == ours, text


def test_doc_examples_get_llama_cpps_verdict() -> None:
    checked = 0
    for lang, flag, code in BLOCKS:
        if lang != "gbnf" or re.search(r"<[^\[]", code):
            continue  # token names need a vocabulary that has them
        assert llama_accepts_grammar(code) == (flag != "refused"), code
        checked += 1
    assert checked >= 5


# -- llama.cpp's matcher agrees with ours ---------------------------------------------------------


def test_integration_strings_in_llama_cpp(oracle: LlamaCppOracle, corpora: pathlib.Path) -> None:
    checked = 0
    for case in _tests(corpora, "llama_grammar_integration.json"):
        grammar = Grammar.from_gbnf(case["grammar"])
        written = write_gbnf(grammar)
        ids = {
            part
            for s in case["pass"] + case["fail"]
            if case.get("uses_tokens")
            for p in s
            if isinstance(p, dict)
            for part in [p["token"]]
        }
        for expect, strings in ((True, case["pass"]), (False, case["fail"])):
            for s in strings:
                if case.get("uses_tokens"):
                    parts = [p["token"] if isinstance(p, dict) else p for p in s]
                    text_tokens = oracle.tokens_for([p for p in parts if isinstance(p, str)])
                    if ids & set(text_tokens):
                        continue  # the vocabulary spells this text with one of the grammar's token ids
                    ours = feed_parts(grammar, s)
                else:
                    parts = [s]
                    ours = grammar.matches(s)
                assert oracle.accepts(case["grammar"], parts) == expect, (case["name"], s)
                assert oracle.accepts(written, parts) == expect, (case["name"], s)
                assert ours == expect
                checked += 1
    assert checked == 139  # 70 pass + 69 fail strings, none skipped with the llama-bpe vocabulary


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.fixed_dictionaries({"root": TOKEN_FREE_NODE, "a": TOKEN_FREE_LEAF, "b-2": TOKEN_FREE_LEAF}),
    st.lists(st.text(alphabet="abé", max_size=6), min_size=1, max_size=8),
)
def test_random_grammars_and_strings_agree_with_llama_cpp(
    oracle: LlamaCppOracle, rules: dict[str, ir.Node], strings: list[str]
) -> None:
    g = Grammar(rules, "root")
    try:
        text = write_gbnf(g)
    except GrammarError as e:
        assume("left recursion" not in str(e))
        raise
    for s in strings:
        assert oracle.accepts(text, s) == g.matches(s), (text, s)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(GBNF_TEXT, st.lists(st.text(alphabet="abxyé\n", max_size=5), min_size=1, max_size=6))
def test_random_text_means_what_llama_cpp_means(oracle: LlamaCppOracle, text: str, strings: list[str]) -> None:
    assume("<" not in text)  # token atoms see token ids, which plain strings do not carry
    try:
        form = parse_gbnf(text)
    except (GrammarError, LimitError):
        assume(False)
        raise
    assume(left_recursive_rule(dict(form.rules)) is None)
    for s in strings:
        assert oracle.accepts(text, s) == form.matches(s), (text, s)
