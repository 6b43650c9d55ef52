"""Ahead-of-time parts per grammar position (structgen/engine/ahead.py): along every valid
instance of ``schemas/`` and of a MaskBench sample, on Llama 3's vocabulary, every mask of
``mode="aot"`` equals the lazy engine's bit for bit, and the compile report says what stayed
lazy (a ``complete`` compile refuses the rest)."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab, person_grammar

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.ahead import CompileReport
from structgen.engine.limits import EngineLimits
from structgen.engine.tuning import EngineTuning
from structgen.errors import ConstraintError, LimitError, StructgenError

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.inputs import load_named_schemas, maskbench_sample, serialise  # noqa: E402

#: positions only (no whole configurations), bounded by count, not by the clock, so that the
#: parts a run precomputes do not depend on the machine's load
AHEAD_ONLY = EngineLimits(aot_max_configs=0, aot_max_positions=3000, aot_budget_ms=10**7)


def _walk_both(grammar: Grammar, vocab, texts: list[str]) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Walk ``texts`` on a lazy and an aot constraint; every mask and commit must agree.
    Returns (masks compared, masks the aot constraint took from a precomputed part)."""
    lazy = Constraint.compile(grammar, vocab)
    aot = Constraint.compile(grammar, vocab, mode="aot", limits=AHEAD_ONLY)
    compared = from_parts = 0
    for text in texts:
        s_lazy, s_aot = lazy.start(), aot.start()
        for i, tok in enumerate(greedy_tokens(vocab, text.encode())):
            cid = aot._clamp.config(s_aot.config)
            from_parts += aot._positions.words(cid) is not None
            assert np.array_equal(s_aot.mask_words(), s_lazy.mask_words()), f"masks differ at token {i} of {text!r}"
            ok = s_lazy.commit_token(tok)
            assert s_aot.commit_token(tok) == ok
            compared += 1
            if not ok:
                break  # an instance the translator's departures refuse
    return compared, from_parts


def _texts(instances: list[object]) -> list[str]:
    out: list[str] = []
    for inst in instances:
        for spacing in ("default", "compact"):
            text = serialise(inst, spacing)
            if text not in out:
                out.append(text)
    return out


@pytest.mark.parametrize("case", load_named_schemas(), ids=lambda case: case.name)
def test_aot_masks_equal_lazy_on_schemas(case) -> None:  # type: ignore[no-untyped-def]
    vocab = load_vocab("llama-bpe")
    compared, from_parts = _walk_both(Grammar.from_json_schema(case.schema), vocab, _texts(case.instances))
    assert compared > 10 and from_parts > 0, (compared, from_parts)


def test_aot_masks_equal_lazy_on_maskbench(corpora: pathlib.Path) -> None:
    cases = maskbench_sample(12, max_instances=2)
    if not cases:
        pytest.skip("MaskBench archive not in the corpora: set STRUCTGEN_CORPORA to the shared/corpora folder")
    vocab = load_vocab("llama-bpe")
    total = 0
    for case in cases:
        try:
            grammar = Grammar.from_json_schema(case.schema)
        except StructgenError:
            continue  # refused keywords: the translator's tests count those
        total += _walk_both(grammar, vocab, [json.dumps(i) for i in case.instances])[0]
    assert total > 200


def test_report_names_what_stays_lazy() -> None:
    vocab = load_vocab("llama-bpe")
    lazy = Constraint.compile(person_grammar(), vocab)
    assert lazy.report is None
    c = Constraint.compile(person_grammar(), vocab, mode="aot", limits=AHEAD_ONLY)
    report = c.report
    assert isinstance(report, CompileReport)
    assert report.positions > 0 and report.bottom_masks + report.relative_parts > 0
    assert report.memory_bytes > 0 and report.seconds >= 0
    assert report.describe().startswith(f"{report.positions} positions")
    for kind in report.lazy:
        assert kind in report.describe()


def test_complete_compile_of_a_flat_schema() -> None:
    """An enum of objects without counts or recursion is precomputed whole."""
    vocab = load_vocab("llama-bpe")
    schema = {"enum": ["red", "green", {"a": 1}]}
    c = Constraint.compile(Grammar.from_json_schema(schema), vocab, mode="aot", limits=AHEAD_ONLY, complete=True)
    assert c.report is not None and c.report.complete and not c.report.truncated


def test_complete_compile_refuses_what_stays_lazy() -> None:
    vocab = load_vocab("llama-bpe")
    # any JSON: a string's counted escapes above a caller and ambiguous prefixes stay lazy
    any_json = json.loads((ROOT / "schemas" / "any_json.json").read_text())
    grammar = Grammar.from_json_schema(any_json)
    with pytest.raises(ConstraintError, match="lazy: .* ambiguous"):
        Constraint.compile(grammar, vocab, mode="aot", limits=AHEAD_ONLY, complete=True)
    with pytest.raises(LimitError, match="limit") as info:
        Constraint.compile(grammar, vocab, mode="aot", limits=EngineLimits(aot_max_positions=3), complete=True)
    assert info.value.limit == "aot_max_positions"
    with pytest.raises(ConstraintError, match="complete"):
        Constraint.compile(grammar, vocab, complete=True)  # lazy: nothing to complete


#: the mechanisms aot's parts rest on, each of which a test switches off to compare
SWITCHES = ("chained_crossings", "loop_split", "relative_nullable")


@pytest.mark.parametrize("switch", SWITCHES)
@pytest.mark.parametrize("case", load_named_schemas(), ids=lambda case: case.name)
def test_switches_keep_the_masks(case, switch: str) -> None:  # type: ignore[no-untyped-def]
    """Tokens that cross several frames walked frame by frame over the hole, a string's body
    walked over a frame holding the rest of the document, a top that may end at once walked over
    the hole: each gives the masks of the walk without it, along every instance of schemas/."""
    vocab = load_vocab("llama-bpe")
    grammar = Grammar.from_json_schema(case.schema)
    on, off = (Constraint.compile(grammar, vocab, tuning=EngineTuning(**{switch: v})) for v in (True, False))
    for text in _texts(case.instances):
        s_on, s_off = on.start(), off.start()
        for i, tok in enumerate(greedy_tokens(vocab, text.encode())):
            assert np.array_equal(s_on.mask_words(), s_off.mask_words()), f"masks differ at token {i} of {text!r}"
            assert s_on.commit_token(tok) and s_off.commit_token(tok)
    if switch == "chained_crossings" and case.name in ("tree", "any_json"):
        assert any(len(key) > 2 for key in on._relative_masks.crossings), "no token crossed two frames"
        assert not off._relative_masks.crossings
    if switch == "loop_split":
        assert not any(v is not None for v in off._relative_masks._loops.values())
        if case.name in ("any_json", "tree"):  # free strings: their bodies are split
            assert any(v is not None for v in on._relative_masks._loops.values())


@pytest.mark.parametrize("switch", SWITCHES)
def test_switches_keep_the_masks_on_maskbench(corpora: pathlib.Path, switch: str) -> None:  # type: ignore[no-untyped-def]
    """The same on schemas nobody here wrote."""
    cases = maskbench_sample(12, max_instances=1)
    if not cases:
        pytest.skip("MaskBench archive not in the corpora: set STRUCTGEN_CORPORA to the shared/corpora folder")
    vocab = load_vocab("llama-bpe")
    compared = 0
    for case in cases:
        try:
            grammar = Grammar.from_json_schema(case.schema)
        except StructgenError:
            continue
        on, off = (Constraint.compile(grammar, vocab, tuning=EngineTuning(**{switch: v})) for v in (True, False))
        for text in [json.dumps(i) for i in case.instances]:
            s_on, s_off = on.start(), off.start()
            for i, tok in enumerate(greedy_tokens(vocab, text.encode())):
                assert np.array_equal(s_on.mask_words(), s_off.mask_words()), f"{case.name}: masks differ at token {i}"
                ok = s_on.commit_token(tok)
                assert ok == s_off.commit_token(tok)
                compared += 1
                if not ok:
                    break
    assert compared > 200
