"""The SGLang grammar backend against SGLang's own classes (registry, base grammar object and
backend, batched mask fill), on SmolLM2's real tokenizer.

Needs SGLang's source (``make test-sglang`` installs it in ``.venv-sglang``): skipped where it is
absent. No SGLang server runs here: ``pip install sglang`` needs ``cuda-tile``, a stub that
downloads its wheel from a host these machines cannot reach (see docs/serving-engines.md), so
``make test-sglang`` installs SGLang's wheel without its dependencies plus what the constrained
decoding modules import.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("sglang.srt.constrained.base_grammar_backend", reason="SGLang is not installed (make test-sglang)")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")
torch = pytest.importorskip("torch", reason="torch is not installed")

from sglang.srt.constrained.base_grammar_backend import (  # noqa: E402
    GRAMMAR_BACKEND_REGISTRY,
    BaseGrammarBackend,
    BaseGrammarObject,
    GrammarRow,
    InvalidGrammarObject,
)

from structgen.engine.masks import unpack  # noqa: E402
from structgen.integrations.sglang import (  # noqa: E402
    BACKEND_NAME,
    StructgenGrammar,
    StructgenGrammarBackend,
    TokenNotAllowedError,
    register,
)
from structgen.models import find_model  # noqa: E402

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def tokenizer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    path = find_model("smollm2")
    if path is None:
        pytest.skip("the SmolLM2 GGUF is not installed (python tools/fetch_assets.py --models)")
    pytest.importorskip("gguf", reason="gguf is not installed (pip install '.[test]')")
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


@pytest.fixture(scope="module")
def backend(tokenizer):
    register()
    # SGLang's create_grammar_backend calls the registered factory with these four arguments
    made = GRAMMAR_BACKEND_REGISTRY[BACKEND_NAME](None, tokenizer, len(tokenizer), {tokenizer.eos_token_id})
    assert isinstance(made, StructgenGrammarBackend) and isinstance(made, BaseGrammarBackend)
    return made


def compile_through_sglang(backend, key: tuple[str, str]) -> BaseGrammarObject:
    """What SGLang's grammar manager does: the cached value or a compile on the backend's
    executor, then cache the compiled object and copy it for the request."""
    value, hit = backend.get_cached_or_future_value(key, False)
    if not hit:
        value = value.result(timeout=120)
        backend.set_cache(key, value)
        value = value.copy() if not isinstance(value, InvalidGrammarObject) else value
    return value


def text_of(tokenizer, ids) -> str:
    return tokenizer.decode(ids, skip_special_tokens=True)


def sample_run(tokenizer, grammar: StructgenGrammar, rng: np.random.Generator, max_steps: int = 200) -> list[int]:
    """Decode by hand with SGLang's mask calls: allocate, fill, move, apply, then sample from the
    masked logits (random logits: any allowed token may come)."""
    width = len(tokenizer)
    out: list[int] = []
    for _ in range(max_steps):
        if grammar.is_terminated():
            break
        mask = grammar.allocate_vocab_mask(width, 1, "cpu")
        grammar.fill_vocab_mask(mask, 0)
        mask = grammar.move_vocab_mask(mask, "cpu")
        logits = torch.from_numpy(rng.standard_normal((1, width)).astype(np.float32))
        grammar.apply_vocab_mask(logits, mask)
        allowed = torch.isfinite(logits[0]).nonzero().flatten().numpy()
        assert allowed.size, "an empty mask"
        end = tokenizer.eos_token_id
        # end where it may, half the time: uniform picks alone rarely close an open-ended grammar
        token = end if end in allowed and rng.random() < 0.5 else int(rng.choice(allowed))
        grammar.accept_token(token)
        out.append(token)
    return out


def test_registered_name_is_a_grammar_backend_choice():
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES

    register()
    register()  # idempotent: SGLang's plugin loader calls it in every process
    assert GRAMMAR_BACKEND_CHOICES.count(BACKEND_NAME) == 1
    assert BACKEND_NAME in GRAMMAR_BACKEND_REGISTRY


@pytest.mark.parametrize(
    "key,check",
    [
        (("json", json.dumps(PERSON)), lambda text: set(json.loads(text)) == {"name", "age"}),
        (("regex", r"[0-9]{3}-[a-z]{2,4}"), lambda text: __import__("re").fullmatch(r"[0-9]{3}-[a-z]{2,4}", text)),
        (("ebnf", 'root ::= "yes" | "no" | "maybe"'), lambda text: text in ("yes", "no", "maybe")),
    ],
    ids=["json_schema", "regex", "ebnf"],
)
def test_outputs_through_sglangs_compile_path_are_valid(tokenizer, backend, key, check):
    rng = np.random.default_rng(7)
    for _ in range(3):
        grammar = compile_through_sglang(backend, key)
        assert isinstance(grammar, StructgenGrammar) and isinstance(grammar, BaseGrammarObject)
        ids = sample_run(tokenizer, grammar, rng)
        assert grammar.is_terminated(), "the output never ended"
        assert ids[-1] == tokenizer.eos_token_id
        assert check(text_of(tokenizer, ids[:-1]))


def test_any_json_takes_json_and_refuses_the_rest(tokenizer, backend):
    grammar = compile_through_sglang(backend, ("json", "$$ANY$$"))
    for token in tokenizer('[1, {"a": null}]', add_special_tokens=False)["input_ids"]:
        grammar.accept_token(token)
    grammar.accept_token(tokenizer.eos_token_id)
    assert grammar.is_terminated()
    other = compile_through_sglang(backend, ("json", "$$ANY$$"))
    with pytest.raises(TokenNotAllowedError):
        for token in tokenizer("[1,,", add_special_tokens=False)["input_ids"]:
            other.accept_token(token)


def test_cache_hit_copies_a_fresh_state(tokenizer, backend):
    key = ("regex", "ab+c")
    first = compile_through_sglang(backend, key)
    first.accept_token(tokenizer.convert_tokens_to_ids("a"))
    second, hit = backend.get_cached_or_future_value(key, False)
    assert hit and second.state.num_tokens == 0 and first.state.num_tokens == 1


@pytest.mark.parametrize(
    "key,words",
    [
        (("json", "{not json"), "not JSON"),
        (("json", json.dumps({"type": "integer", "minimum": 5, "maximum": 1})), "cannot enforce"),
        (("regex", "(a"), "regex"),
        (("ebnf", "root ::= undefined_rule"), "GBNF"),
        (("structural_tag", "{}"), "structural tags"),
    ],
    ids=["bad_json", "unsatisfiable", "bad_regex", "bad_ebnf", "structural_tag"],
)
def test_bad_constraints_become_sglangs_invalid_grammar_with_the_message(backend, key, words):
    grammar = compile_through_sglang(backend, key)
    assert isinstance(grammar, InvalidGrammarObject)
    assert words in grammar.error_message


def test_a_token_the_mask_did_not_allow_raises_the_valueerror_sglang_aborts_on(tokenizer, backend):
    grammar = compile_through_sglang(backend, ("regex", "[0-9]+"))
    with pytest.raises(TokenNotAllowedError) as info:
        grammar.accept_token(tokenizer.convert_tokens_to_ids("a"))
    assert isinstance(info.value, ValueError)
    assert grammar.state.num_tokens == 0  # the state is unchanged: the next request step is still valid
    grammar.accept_token(tokenizer.convert_tokens_to_ids("1"))
    assert grammar.state.num_tokens == 1


def test_rollback_restores_the_mask_for_draft_trees(tokenizer, backend):
    grammar = compile_through_sglang(backend, ("json", json.dumps(PERSON)))
    width = len(tokenizer)
    before = grammar.allocate_vocab_mask(width, 1, "cpu")
    grammar.fill_vocab_mask(before, 0)
    token = int(np.flatnonzero(unpack(before[0].numpy(), width))[0])
    grammar.accept_token(token)
    grammar.rollback(1)
    after = grammar.allocate_vocab_mask(width, 1, "cpu")
    grammar.fill_vocab_mask(after, 0)
    assert torch.equal(before, after)


def test_batched_fill_leaves_unlisted_rows_unconstrained(tokenizer, backend):
    grammars = [compile_through_sglang(backend, ("regex", p)) for p in ("[0-9]+", "[a-z]+")]
    width = len(tokenizer)
    mask = grammars[0].allocate_vocab_mask(width, 3, "cpu")
    BaseGrammarObject.fill_vocab_mask_batched([GrammarRow(0, grammars[0]), GrammarRow(2, grammars[1])], mask)
    rows = [unpack(mask[i].numpy(), width) for i in range(3)]
    digit, letter = tokenizer.convert_tokens_to_ids("7"), tokenizer.convert_tokens_to_ids("q")
    assert rows[0][digit] and not rows[0][letter]
    assert rows[1].all()
    assert rows[2][letter] and not rows[2][digit]
    StructgenGrammar.reset_vocab_mask(mask)
    assert (mask == -1).all()


def test_jump_forward_offers_the_forced_tokens(tokenizer, backend):
    grammar = compile_through_sglang(backend, ("regex", "the answer is (yes|no)"))
    helper = grammar.try_jump_forward(tokenizer)
    assert helper is not None
    text, _state = grammar.jump_forward_str_state(helper)
    assert text and "the answer is ".startswith(text)
    tokens = helper[0]
    grammar.jump_and_retokenize([], tokens, -1)
    assert grammar.state.num_tokens == len(tokens)
    # retokenizing the same text differently: roll back to the common prefix, accept the rest
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    grammar.jump_and_retokenize(tokens, ids, -1)
    assert grammar.state.num_tokens == len(ids)
    assert text_of(tokenizer, ids) == text
    free = compile_through_sglang(backend, ("regex", "[a-z]+"))
    assert free.try_jump_forward(tokenizer) is None
