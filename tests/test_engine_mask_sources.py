"""Every mask source (``Constraint.mask_sources``, structgen/engine/mask_sources.py) against the
plain walk: along the valid instances of schemas/ and a MaskBench sample, wherever a source
answers, its answer as the pipeline finishes it equals the mask of the same position under a
tuning with every source's switch off. The sources are read from the constraint, so a source
added to the pipeline is checked here too, and must answer somewhere in these walks."""

from __future__ import annotations

import json
import pathlib
import sys
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.limits import EngineLimits
from structgen.engine.mask_sources import ByteBudget, ByteMemo
from structgen.engine.tuning import DEFAULT_ENGINE_TUNING
from structgen.errors import StructgenError

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.inputs import load_named_schemas, maskbench_sample, serialise  # noqa: E402

#: positions only, bounded by count, not by the clock: what a run precomputes is the same on
#: every machine
AHEAD_ONLY = EngineLimits(aot_max_configs=0, aot_max_positions=3000, aot_budget_ms=10**7)


def _texts(instances: list[object], most: int = 3) -> list[str]:
    out: list[str] = []
    for inst in instances[:most]:
        for spacing in ("default", "compact"):
            text = serialise(inst, spacing)
            if text not in out:
                out.append(text)
    return out


def _check_sources(grammar: Grammar, vocab, texts: list[str], mode: str, answered: Counter[str]) -> None:  # type: ignore[no-untyped-def]
    """Walk ``texts``; at every position ask each source of a ``mode`` constraint, and compare
    each answer with the mask of a lazy constraint whose sources are all switched off."""
    c = Constraint.compile(grammar, vocab, mode=mode, limits=AHEAD_ONLY if mode == "aot" else EngineLimits())
    off = {s.switch: False for s in c.mask_sources if s.switch is not None}
    plain = Constraint.compile(grammar, vocab, tuning=replace(DEFAULT_ENGINE_TUNING, **off))
    assert not any(s.answer(plain.start_config) is not None for s in plain.mask_sources), "a source is still on"
    for text in texts:
        state, reference = c.start(), plain.start()
        for i, tok in enumerate(greedy_tokens(vocab, text.encode())):
            want = reference.mask_words()
            for source in c.mask_sources:
                found = source.answer(state.config)
                if found is not None:
                    name = type(source).__name__
                    got = c._finish(state.config, found)
                    assert np.array_equal(got, want), f"{name} differs from the plain walk at token {i} of {text!r}"
                    answered[name] += 1
            assert np.array_equal(state.mask_words(), want), f"the pipeline differs at token {i} of {text!r}"
            ok = reference.commit_token(tok)
            assert state.commit_token(tok) == ok
            if not ok:
                break  # an instance the translator's departures refuse


def _source_names() -> set[str]:
    c = Constraint.compile(Grammar.from_json_schema({"type": "string"}), load_vocab("llama-bpe"))
    return {type(s).__name__ for s in c.mask_sources}


def test_every_source_equals_the_plain_walk_on_schemas() -> None:
    vocab = load_vocab("llama-bpe")
    answered: Counter[str] = Counter()
    for case in load_named_schemas():
        grammar = Grammar.from_json_schema(case.schema)
        for mode in ("lazy", "aot"):
            _check_sources(grammar, vocab, _texts(case.instances, 2 if mode == "aot" else 3), mode, answered)
    assert set(answered) == _source_names(), f"sources that never answered: {_source_names() - set(answered)}"


def test_every_source_equals_the_plain_walk_on_maskbench(corpora: pathlib.Path) -> None:
    cases = maskbench_sample(12, max_instances=2)
    if not cases:
        pytest.skip("MaskBench archive not in the corpora: set STRUCTGEN_CORPORA to the shared/corpora folder")
    vocab = load_vocab("llama-bpe")
    answered: Counter[str] = Counter()
    for case in cases:
        try:
            grammar = Grammar.from_json_schema(case.schema)
        except StructgenError:
            continue  # refused keywords: the translator's tests count those
        _check_sources(grammar, vocab, [json.dumps(i) for i in case.instances], "lazy", answered)
    assert sum(answered.values()) > 100


def test_a_byte_memo_forgets_its_oldest_entries_past_its_bytes() -> None:
    budget = ByteBudget(3 * 1000 + 400)
    first, second = ByteMemo(budget, max_entries=100), ByteMemo(budget, max_entries=2)
    for k in range(3):
        first.put(k, np.zeros(1000, dtype=np.uint8))
    assert list(first) == [0, 1, 2]
    second.put("a", np.zeros(1000, dtype=np.uint8))  # the shared budget is full: its own oldest go
    assert list(first) == [0, 1, 2] and list(second) == ["a"] and budget.used > budget.limit
    first.put(3, np.zeros(1000, dtype=np.uint8))
    assert list(first) == [2, 3] and budget.used <= budget.limit
    second.put("b", np.zeros(10, dtype=np.uint8))
    second.put("c", np.zeros(10, dtype=np.uint8))
    assert list(second) == ["b", "c"]  # and by count
    first.forget(2)
    assert budget.used == sum(first._sizes.values()) + sum(second._sizes.values())
