"""End to end with real small models through llama-cpp-python (SmolLM2-135M-Instruct, Gemma 3 270M).

Marked ``model``; each model is loaded once per session (see conftest.py). Set
``STRUCTGEN_THREADS`` to choose llama.cpp's thread count.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest
from model_cases import CASES, TOOLS, any_text, convert_currency, get_weather, parses, search_web
from pydantic import BaseModel

from structgen import GenerationError, LimitError, SchemaError, StructgenError, VocabError
from structgen.agent import run_agent
from structgen.generate import generate, generate_result, stream
from structgen.integrations.llama_cpp import LlamaCppRuntime, logits_processor
from structgen.output_types import resolve_output
from structgen.tools import FinalAnswer, ToolCall, ToolDefinitionError

pytestmark = pytest.mark.model

MODELS = ["smollm2_llama", "gemma_llama"]
SEEDS = (0, 1, 2)


@pytest.fixture(params=MODELS)
def llm(request):
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_valid_objects_at_temperature_one(llm, case):
    spec = resolve_output(case.output_type, {})
    for seed in SEEDS:
        r = generate_result(llm, case.output_type, case.messages(), temperature=1.0, seed=seed, max_tokens=160)
        assert spec.grammar.matches(r.text)
        spec.parse(r.text)  # validates again, independently of generate
        if case.output_type is TOOLS:
            assert isinstance(r.value, ToolCall)
        assert len(r.token_ids) <= 160


@pytest.mark.slow  # ~5-10 minutes per model here: unconstrained outputs run to max_tokens
@pytest.mark.parametrize("model", MODELS)
def test_unconstrained_failure_rate(request, model):
    """The same prompts and seeds without a constraint: how often the output would not parse."""
    llm = request.getfixturevalue(model)
    strict_ok = lenient_ok = total = 0
    for case in CASES:
        spec = resolve_output(case.output_type, {})
        for seed in SEEDS:
            text = generate(llm, any_text(), case.messages(), temperature=1.0, seed=seed, max_tokens=160)
            s, le = parses(spec, text)
            strict_ok += s
            lenient_ok += le
            total += 1
    line = (
        f"{model}: unconstrained at temperature 1.0, {total} outputs: {total - strict_ok} ({100 * (total - strict_ok) / total:.0f}%) "  # noqa: E501
        f"are not a valid value as a whole; {total - lenient_ok} ({100 * (total - lenient_ok) / total:.0f}%) hold no valid value anywhere"  # noqa: E501
    )
    print("\n" + line)
    report = os.environ.get("STRUCTGEN_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    assert total == len(CASES) * len(SEEDS)


def test_same_seed_same_output(smollm2_llama):
    case = CASES[0]
    first = generate_result(smollm2_llama, case.output_type, case.messages(), temperature=1.0, seed=5)
    generate(smollm2_llama, CASES[2].output_type, CASES[2].messages(), seed=1)  # another prompt in between
    again = generate_result(smollm2_llama, case.output_type, case.messages(), temperature=1.0, seed=5)
    assert again.text == first.text and again.token_ids == first.token_ids
    sequential = generate_result(
        smollm2_llama, case.output_type, case.messages(), temperature=1.0, seed=5, overlap=False
    )
    assert sequential.text == first.text


def test_stream_matches_generate(smollm2_llama):
    case = CASES[1]
    s = stream(smollm2_llama, case.output_type, case.messages(), temperature=0.7, seed=3)
    text = "".join(s)
    assert text == s.result.text
    assert s.value == generate(smollm2_llama, case.output_type, case.messages(), temperature=0.7, seed=3)


def test_logits_processor_in_create_completion(smollm2_llama):
    from llama_cpp import LogitsProcessorList

    runtime = LlamaCppRuntime(smollm2_llama)
    case = CASES[0]
    prompt, _ = runtime.render_chat(case.messages())
    for seed in (0, 1):
        processor = logits_processor(smollm2_llama, case.output_type, max_tokens=60)
        out = smollm2_llama.create_completion(
            prompt, max_tokens=60, temperature=1.0, seed=seed, logits_processor=LogitsProcessorList([processor])
        )
        person = processor.result(out["choices"][0]["text"])
        assert isinstance(person, case.output_type)


UNBOUNDED = [
    {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}, "title": {"type": "string"}},
        "required": ["notes", "title"],
    },
    {"type": "array", "items": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"type": "string"},
]


@pytest.mark.parametrize("schema", UNBOUNDED, ids=["object", "array_of_objects", "string"])
def test_budget_always_closes(llm, schema):
    spec = resolve_output(schema, {})
    from structgen.constraint_cache import constraint_for

    shortest = constraint_for(spec.grammar, _vocab(llm)).start().shortest_completion()
    prompt = [{"role": "user", "content": "Write a very long and detailed answer with many notes."}]
    for extra in (0, 1, 3, 6):
        for seed in (0, 1):
            r = generate_result(llm, schema, prompt, temperature=1.0, seed=seed, max_tokens=shortest + extra)
            assert spec.grammar.matches(r.text)
            assert len(r.token_ids) <= shortest + extra
    with pytest.raises(GenerationError, match="no valid output fits") as e:
        generate(llm, {"type": "string", "minLength": 30}, prompt, max_tokens=2)
    assert e.value.partial_text == ""


def _vocab(llm):
    from structgen.integrations.protocol import as_runtime

    return as_runtime(llm).vocab


def test_three_tool_agent_loop_ends_on_a_text_answer(smollm2_llama):
    tools = [get_weather, convert_currency, search_web]
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    for temperature, seed in ((0.0, 0), (0.7, 1)):
        run = run_agent(smollm2_llama, tools, messages, max_steps=3, temperature=temperature, seed=seed, max_tokens=96)
        assert isinstance(run.answer, str) or run.answer is None
        assert all(
            isinstance(c, ToolCall) and c.name in ("get_weather", "convert_currency", "search_web")
            for c, _ in run.calls
        )
        assert run.messages[-1]["role"] == "assistant" and "tool_calls" not in run.messages[-1]


def test_gemma_end_of_turn_is_an_end_token(gemma_llama):
    vocab = _vocab(gemma_llama)
    assert {1, 106} <= set(vocab.eos_token_ids)


# -- bad input ------------------------------------------------------------------------------


def test_vocabulary_of_another_model(smollm2_llama, gemma_llama):
    with pytest.raises(VocabError, match="another model|does not match"):
        LlamaCppRuntime(smollm2_llama, vocab=_vocab(gemma_llama))


def test_prompt_longer_than_the_context(smollm2_llama):
    with pytest.raises(LimitError, match="context"):
        generate(smollm2_llama, CASES[0].output_type, "word " * 5000)
    assert isinstance(generate(smollm2_llama, CASES[0].output_type, CASES[0].messages(), seed=0), BaseModel)


def test_schema_that_cannot_be_enforced(smollm2_llama):
    with pytest.raises(SchemaError):
        generate(smollm2_llama, {"type": "string", "pattern": "(?<=a)b"}, "x")
    with pytest.raises(StructgenError):
        generate(smollm2_llama, {"type": "object", "required": ["a"], "properties": {"a": False}}, "x")


def test_tool_whose_signature_cannot_become_a_schema(smollm2_llama):
    def bad(*args: int) -> int:
        return 0

    with pytest.raises(ToolDefinitionError, match="bad"):
        generate(smollm2_llama, [get_weather, bad], "x")


def test_keyboard_interrupt_leaves_the_model_usable(smollm2_llama):
    schema = UNBOUNDED[2]
    prompt = [{"role": "user", "content": "Tell a long story."}]
    expected = generate_result(smollm2_llama, schema, prompt, temperature=1.0, seed=9, max_tokens=40)
    endless = {"type": "string", "minLength": 2000}  # cannot end before the signal arrives
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            generate(smollm2_llama, endless, prompt, temperature=1.0, seed=9, max_tokens=4000)
    finally:
        timer.cancel()
    again = generate_result(smollm2_llama, schema, prompt, temperature=1.0, seed=9, max_tokens=40)
    assert again.text == expected.text
    assert isinstance(generate(smollm2_llama, [get_weather], "Weather in Oslo?", seed=0), (ToolCall, FinalAnswer))
