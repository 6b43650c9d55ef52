"""End to end through transformers (torch, CPU), loading the same two GGUF files.

Marked ``model``; loading is slow (SmolLM2 ~20-70 s, Gemma 3 ~60-120 s), so each model is loaded
once per session (conftest.py) and only a subset of the cases runs here.
"""

from __future__ import annotations

import pytest
from model_cases import CASES, TOOLS

from structgen import VocabError
from structgen.generate import generate, generate_result
from structgen.integrations.transformers import StructgenLogitsProcessor, TransformersRuntime
from structgen.output_types import resolve_output
from structgen.tools import ToolCall

pytestmark = pytest.mark.model

SUBSET = [c for c in CASES if c.name in ("person", "review_enum", "tool_union", "recursion", "constrained_strings")]


@pytest.fixture(params=["smollm2_hf", "gemma_hf"])
def hf(request):
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("case", SUBSET, ids=[c.name for c in SUBSET])
def test_valid_objects_at_temperature_one(hf, case):
    spec = resolve_output(case.output_type, {})
    for seed in (0, 1):
        r = generate_result(hf, case.output_type, case.messages(), temperature=1.0, seed=seed, max_tokens=120)
        assert spec.grammar.matches(r.text)
        spec.parse(r.text)
        if case.output_type is TOOLS:
            assert isinstance(r.value, ToolCall)


def test_logits_processor_in_model_generate(smollm2_hf):
    import torch
    from transformers import LogitsProcessorList

    model, tokenizer = smollm2_hf
    case = CASES[0]
    ids = TransformersRuntime(model, tokenizer).encode_prompt(case.messages())
    input_ids = torch.tensor([ids])
    for seed in (0, 1):
        torch.manual_seed(seed)
        processor = StructgenLogitsProcessor(tokenizer, case.output_type, model=model, max_new_tokens=60)
        out = model.generate(
            input_ids,
            attention_mask=torch.ones_like(input_ids),
            do_sample=True,
            temperature=1.0,
            top_k=0,
            max_new_tokens=60,
            logits_processor=LogitsProcessorList([processor]),
            pad_token_id=tokenizer.eos_token_id,
        )
        text = tokenizer.decode(out[0, input_ids.shape[1] :], skip_special_tokens=True)
        assert isinstance(processor.result(text), case.output_type)


def test_gemma_end_of_turn_is_an_end_token(gemma_hf):
    model, tokenizer = gemma_hf
    assert {1, 106} <= set(TransformersRuntime(model, tokenizer).vocab.eos_token_ids)


def test_tokenizer_of_another_model(smollm2_hf, gemma_hf):
    with pytest.raises(VocabError, match="do not belong together"):
        generate((smollm2_hf[0], gemma_hf[1]), CASES[0].output_type, "x")
    with pytest.raises(VocabError, match="do not belong together"):
        generate((gemma_hf[0], smollm2_hf[1]), CASES[0].output_type, "x")
