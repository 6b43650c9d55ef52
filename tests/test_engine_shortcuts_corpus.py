"""The walk's shortcuts on schemas nobody here wrote: along valid MaskBench instances (the
deterministic sample the benchmark uses), every mask with choice walks (with calls further on) and
walks over the hole equals the mask of the walk through
configurations. The shortcuts' own tests use crafted grammars; this one uses real ones."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.tuning import EngineTuning
from structgen.errors import StructgenError

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.inputs import maskbench_sample  # noqa: E402

SCHEMAS = 25


#: the shortcuts off: choice walks, walks over the hole
PLAIN = EngineTuning(choice_walks=False, relative_walks=False)


def test_shortcuts_equal_the_plain_walk_on_maskbench(corpora: pathlib.Path) -> None:
    cases = maskbench_sample(SCHEMAS, max_instances=2)
    if not cases:
        pytest.skip("MaskBench archive not in the corpora: set STRUCTGEN_CORPORA to the shared/corpora folder")
    vocab = load_vocab("llama-bpe")
    walked = steps = split = 0
    for case in cases:
        try:
            grammar = Grammar.from_json_schema(case.schema)
        except StructgenError:
            continue  # refused keywords: the translator's tests count those
        for instance in case.instances:
            for text in (json.dumps(instance), json.dumps(instance, separators=(",", ":"))):
                on, off = Constraint.compile(grammar, vocab), Constraint.compile(grammar, vocab, tuning=PLAIN)
                s_on, s_off = on.start(), off.start()
                for i, tok in enumerate(greedy_tokens(vocab, text.encode())):
                    m_on = s_on.mask_words().copy()
                    ok = s_on.commit_token(tok)
                    assert np.array_equal(m_on, s_off.mask_words()), f"{case.name}: masks differ at token {i}"
                    assert ok == s_off.commit_token(tok)
                    if not ok:
                        break  # an instance the translator's departures refuse (keys out of order)
                    steps += 1
                walked += sum(v is not None for v in on._table._choice.values())
                split += sum(v is not None for v in on._relative_masks._loops.values())
    assert steps > 1000 and walked > 0 and split > 0, (steps, walked, split)
