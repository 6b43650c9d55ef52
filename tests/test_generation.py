"""generate / stream without a real model: scripted runtimes over a small byte vocabulary."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest
from generation_support import EOS, ScriptedRuntime, byte_vocab

from structgen import GenerationError, Grammar, LimitError, StructgenError, VocabError
from structgen.constraint_cache import constraint_for
from structgen.generate import generate, generate_result, stream
from structgen.grammar import ir
from structgen.integrations import PrefixLogitsRuntime
from structgen.sampling import Sampler, SamplingOptions

L = ir.lit
LOWER = ir.char((97, 122))


@pytest.fixture(scope="module")
def vocab():
    return byte_vocab()


def words_grammar() -> Grammar:
    """``[a-z]+ (";" [a-z]+)*``"""
    word = ir.plus(LOWER)
    return Grammar({"root": ir.seq(word, ir.star(ir.seq(L(";"), word)))})


def yes_no() -> Grammar:
    return Grammar({"root": ir.alt(L("yes"), L("no"))})


# -- results --------------------------------------------------------------------------------


def test_grammar_output_is_the_text(vocab):
    rt = ScriptedRuntime(vocab, "no")
    assert generate(rt, yes_no(), "answer:", temperature=1.0, seed=1) == "no"


def test_invalid_script_still_gives_a_valid_output(vocab):
    rt = ScriptedRuntime(vocab, "maybe")
    for seed in range(5):
        assert generate(rt, yes_no(), "answer:", temperature=1.0, seed=seed) in ("yes", "no")


def test_same_seed_same_output_other_seeds_differ(vocab):
    rt = ScriptedRuntime(vocab, "", noise=3.0)
    g = words_grammar()
    runs = [generate(rt, g, "x", seed=s, max_tokens=12, on_max_tokens="error") for s in (7, 7, 8, 9, 10)]
    assert runs[0] == runs[1]
    assert len(set(runs)) > 1
    assert all(g.matches(r) for r in runs)


def test_greedy_ignores_the_seed(vocab):
    rt = ScriptedRuntime(vocab, "", noise=3.0)
    g = words_grammar()
    assert len({generate(rt, g, "x", temperature=0, seed=s, max_tokens=6) for s in range(4)}) == 1


def test_result_has_tokens_text_and_stats(vocab):
    rt = ScriptedRuntime(vocab, "abc;de")
    r = generate_result(rt, words_grammar(), "p", seed=0)
    assert r.text == r.value == "abc;de"
    assert vocab.detokenize(r.token_ids) == b"abc;de"
    assert r.finish_reason == "stop"
    assert r.stats.output_tokens == len(r.token_ids)
    assert r.stats.prompt_tokens == 1
    assert r.stats.masks >= 1


def test_fast_forward_commits_forced_tokens_without_sampling(vocab):
    g = Grammar({"root": ir.seq(L("hello world "), ir.plus(LOWER))})
    rt = ScriptedRuntime(vocab, "hello world ab")
    r = generate_result(rt, g, "p", seed=0)
    assert r.value == "hello world ab"
    assert r.stats.forced_tokens > 0
    assert r.stats.sampled_tokens < len(r.token_ids)
    slow = generate_result(rt, g, "p", seed=0, fast_forward=False)
    assert slow.value == r.value and slow.stats.forced_tokens == 0


def test_end_token_only_where_the_output_is_complete(vocab):
    # the script ends early ("ye"), but the end token is only allowed after a complete word
    rt = ScriptedRuntime(vocab, "ye")
    assert generate(rt, yes_no(), "p", seed=3) == "yes"


# -- streaming ------------------------------------------------------------------------------


def test_stream_chunks_add_up_to_the_value(vocab):
    rt = ScriptedRuntime(vocab, "abc;de;f")
    s = stream(rt, words_grammar(), "p", seed=0)
    chunks = list(s)
    assert "".join(chunks) == s.value == "abc;de;f"
    assert len(chunks) > 1
    assert s.result.finish_reason == "stop"


def test_stream_result_before_the_end_is_an_error(vocab):
    s = stream(ScriptedRuntime(vocab, "abc"), words_grammar(), "p")
    with pytest.raises(StructgenError):
        _ = s.value
    assert s.final() == "abc"


def test_stream_close_leaves_the_runtime_usable(vocab):
    rt = ScriptedRuntime(vocab, "abc;de;fgh")
    s = stream(rt, words_grammar(), "p", seed=0, fast_forward=False)
    next(s)
    s.close()
    assert generate(rt, words_grammar(), "p", seed=0) == "abc;de;fgh"


def test_stream_splits_multibyte_characters_cleanly(vocab):
    g = Grammar({"root": ir.plus(ir.char((97, 122), (0xE0, 0xFF)))})
    s = stream(ScriptedRuntime(vocab, "caf\u00e9s"), g, "p", seed=0)
    chunks = list(s)
    assert all("\ufffd" not in c for c in chunks)
    assert "".join(chunks) == s.value == "caf\u00e9s"


# -- stopping -------------------------------------------------------------------------------


def test_stop_string_ends_where_the_text_before_it_is_complete(vocab):
    rt = ScriptedRuntime(vocab, "abc;de;fg")
    s = stream(rt, words_grammar(), "p", seed=0, stop=";de")
    chunks = list(s)
    assert s.value == "abc" and s.result.finish_reason == "stop_sequence"
    assert "".join(chunks) == "abc"


def test_stop_string_inside_an_incomplete_output_is_not_a_stop(vocab):
    g = Grammar({"root": ir.seq(L("<"), ir.plus(ir.alt(LOWER, L(";"))), L(">"))})
    r = generate_result(ScriptedRuntime(vocab, "<ab;cd>"), g, "p", seed=0, stop=";")
    assert r.value == "<ab;cd>" and r.finish_reason == "stop"


def test_stop_token_ids_end_a_complete_output(vocab):
    rt = ScriptedRuntime(vocab, "abc!")
    r = generate_result(rt, words_grammar(), "p", seed=0, stop_token_ids=[ord("!")])
    assert r.value == "abc" and r.finish_reason == "stop"


# -- budget ---------------------------------------------------------------------------------


def test_on_max_tokens_error_raises_with_the_partial_text(vocab):
    g = Grammar({"root": ir.seq(L("["), ir.plus(ir.char("a")), L("]"))})
    rt = ScriptedRuntime(vocab, "[" + "a" * 50 + "]")
    with pytest.raises(GenerationError) as e:
        generate(rt, g, "p", seed=0, max_tokens=6, on_max_tokens="error")
    assert e.value.partial_text.startswith("[a")
    assert not g.matches(e.value.partial_text)


def test_nothing_fits_raises_with_empty_partial_text(vocab):
    g = Grammar({"root": ir.Repeat(ir.char("a"), 20, 20)})
    with pytest.raises(GenerationError) as e:
        generate(ScriptedRuntime(vocab, "a" * 20), g, "p", max_tokens=5)
    assert e.value.partial_text == ""


def test_budget_closes_unbounded_output_within_max_tokens(vocab):
    g = Grammar(
        {"root": ir.seq(L('["'), ir.star(LOWER), L('"'), ir.star(ir.seq(L(', "'), ir.star(LOWER), L('"'))), L("]"))}
    )
    rt = ScriptedRuntime(vocab, '["' + "abcdefgh" * 40, noise=2.0)
    shortest = 4  # '[""]' as '["', '"', ']' with room to spare
    for max_tokens in range(shortest, shortest + 8):
        for seed in range(5):
            r = generate_result(rt, g, "p", temperature=1.0, seed=seed, max_tokens=max_tokens)
            assert g.matches(r.text)
            assert len(r.token_ids) <= max_tokens


# -- bad input ------------------------------------------------------------------------------


def test_prompt_longer_than_the_context(vocab):
    rt = ScriptedRuntime(vocab, "abc", context_length=8)
    with pytest.raises(LimitError) as e:
        generate(rt, words_grammar(), "a long prompt of many tokens")
    assert e.value.limit == "context_length"


def test_context_caps_the_output(vocab):
    rt = ScriptedRuntime(vocab, "abcdefghijklmnop", context_length=6)
    with pytest.raises(GenerationError):
        generate(rt, Grammar({"root": ir.seq(ir.plus(LOWER), L("."))}), "pp", on_max_tokens="error")


def test_logit_width_mismatch(vocab):
    rt = ScriptedRuntime(vocab, "abc", width=vocab.logit_width + 7)
    with pytest.raises(VocabError, match="does not belong"):
        generate(rt, words_grammar(), "p")


@pytest.mark.parametrize(
    "options",
    [
        {"temperature": -1},
        {"top_p": 0},
        {"top_k": -2},
        {"max_tokens": 0},
        {"seed": "x"},
        {"on_max_tokens": "truncate"},
        {"stop": [""]},
        {"stop": "\ud800"},  # a lone surrogate: no output could ever hold it
        {"stop": ["ok", "x\udc00"]},
    ],
)
def test_bad_options(vocab, options):
    with pytest.raises(StructgenError):
        generate(ScriptedRuntime(vocab, "abc"), words_grammar(), "p", **options)


def test_schema_options_do_not_apply_to_a_grammar(vocab):
    with pytest.raises(StructgenError, match="do not apply"):
        generate(ScriptedRuntime(vocab, "abc"), words_grammar(), "p", whitespace="compact")


def test_unknown_model_object():
    with pytest.raises(StructgenError, match="cannot generate with"):
        generate(object(), words_grammar(), "p")


@pytest.mark.parametrize(
    "prompt", [None, 5, [{"role": 5}], [{"role": "user"}], [], b"\xff", [{"role": "user", "content": 3}]]
)
def test_a_malformed_prompt_is_refused_before_the_runtime_sees_it(vocab, prompt):
    # a runtime of the caller's own got the prompt unchecked (TypeError, KeyError inside it)
    with pytest.raises(StructgenError, match="prompt|message"):
        generate(ScriptedRuntime(vocab, "abc"), words_grammar(), prompt)


def test_chat_prompt_needs_a_runtime_with_a_template(vocab):
    rt = PrefixLogitsRuntime(vocab, lambda ids: np.zeros(vocab.logit_width, dtype=np.float32))
    with pytest.raises(StructgenError, match="string prompt"):
        generate(rt, words_grammar(), [{"role": "user", "content": "hi"}])


def test_prefix_logits_runtime(vocab):
    target = b"yes"

    def logits_for(ids):
        out = np.zeros(vocab.logit_width, dtype=np.float32)
        done = vocab.detokenize(ids[len(prompt) :])
        out[target[len(done)] if len(done) < len(target) else EOS] = 10
        return out

    prompt = PrefixLogitsRuntime(vocab, logits_for).encode_prompt("q:")
    assert generate(PrefixLogitsRuntime(vocab, logits_for), yes_no(), "q:", temperature=0) == "yes"


# -- interruption ---------------------------------------------------------------------------


@pytest.mark.parametrize("overlap", [False, True])
def test_keyboard_interrupt_leaves_the_runtime_usable(vocab, overlap):
    g = words_grammar()
    expected = generate(
        ScriptedRuntime(vocab, "", noise=3.0), g, "p", seed=11, max_tokens=10, on_max_tokens="error", fast_forward=False
    )

    def interrupt(n):
        if n == 3:
            if overlap:  # a real SIGINT, arriving while the main thread waits for the forward pass
                os.kill(os.getpid(), signal.SIGINT)
                threading.Event().wait(0.05)
            else:
                raise KeyboardInterrupt

    rt = ScriptedRuntime(vocab, "", noise=3.0, overlap=overlap, on_feed=interrupt)
    with pytest.raises(KeyboardInterrupt):
        generate(rt, g, "p", seed=11, max_tokens=10, on_max_tokens="error", fast_forward=False)
    rt.on_feed = None
    assert generate(rt, g, "p", seed=11, max_tokens=10, on_max_tokens="error", fast_forward=False) == expected


# -- pieces ---------------------------------------------------------------------------------


def test_constraints_are_cached_per_grammar_and_vocabulary(vocab):
    a = constraint_for(words_grammar(), vocab)
    assert constraint_for(words_grammar(), vocab) is a
    assert constraint_for(words_grammar(), byte_vocab(padding=3)) is not a


def test_sampler_greedy_top_k_top_p():
    logits = np.array([0.0, 3.0, 1.0, 2.9, -1.0], dtype=np.float32)
    ids = np.arange(5)
    assert Sampler(SamplingOptions(temperature=0)).sample(logits, ids) == 1
    assert Sampler(SamplingOptions(top_k=1), seed=1).sample(logits, ids) == 1
    assert Sampler(SamplingOptions(top_p=0.01), seed=1).sample(logits, ids) == 1
    assert Sampler(SamplingOptions(), seed=1).sample(logits, np.array([4])) == 4
    two = {Sampler(SamplingOptions(top_k=2), seed=s).sample(logits, ids) for s in range(40)}
    assert two == {1, 3}


def test_sampler_follows_the_softmax():
    logits = np.log(np.array([0.5, 0.3, 0.2], dtype=np.float64)).astype(np.float32)
    sampler = Sampler(SamplingOptions(), seed=123)
    counts = np.bincount([sampler.sample(logits, np.arange(3)) for _ in range(4000)], minlength=3) / 4000
    assert np.allclose(counts, [0.5, 0.3, 0.2], atol=0.03)


def test_sampler_only_returns_allowed_ids():
    logits = np.array([9.0, 0.0, 5.0, 0.0], dtype=np.float32)
    sampler = Sampler(SamplingOptions(temperature=2.0), seed=5)
    assert {sampler.sample(logits, np.array([1, 3])) for _ in range(50)} <= {1, 3}


def test_a_negative_seed_is_a_structgen_error(vocab):
    # numpy's generator refuses negative seeds with a ValueError deep in the sampler
    with pytest.raises(StructgenError, match="seed"):
        generate(ScriptedRuntime(vocab, "no"), yes_no(), "answer:", seed=-1)
