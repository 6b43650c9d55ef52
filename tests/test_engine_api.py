"""The Constraint / State API: commits, rollback, fork, EOS and special tokens, budgets, forced
tokens, batch fills, saving and loading, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import greedy_tokens, json_grammar, load_vocab, person_grammar, token_grammar
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import ConstraintError, Grammar, GrammarError, VocabError
from structgen.engine import Constraint, allocate_bitmask, apply_mask_numpy, fill_bitmasks
from structgen.grammar import ir
from structgen.vocab import Vocab


@pytest.fixture(scope="module")
def llama3() -> Vocab:
    return load_vocab("llama-bpe")


@pytest.fixture(scope="module")
def json_c(llama3: Vocab) -> Constraint:
    return Constraint.compile(json_grammar(), llama3)


def test_commit_rollback_fork(json_c: Constraint, llama3: Vocab) -> None:
    ids = greedy_tokens(llama3, b'{"a": [1, 2]}')
    st = json_c.start()
    assert st.commit_tokens(ids) and st.is_accepting()
    first = st.fork()
    st.rollback(len(ids))
    assert st.num_tokens == 0 and not st.is_accepting()
    assert first.is_accepting() and first.num_tokens == len(ids)
    with pytest.raises(ConstraintError):
        st.rollback(1)


def test_disallowed_and_out_of_range_tokens(json_c: Constraint, llama3: Vocab) -> None:
    st = json_c.start()
    bad = llama3.lookup_text(b"}")[0]
    assert not st.commit_token(bad) and st.num_tokens == 0  # refused, state unchanged
    with pytest.raises(ConstraintError):
        st.commit_token(llama3.logit_width)
    with pytest.raises(ConstraintError):
        st.commit_token(-1)
    # all or nothing
    assert not st.commit_tokens(greedy_tokens(llama3, b"[1,") + [bad])
    assert st.num_tokens == 0


def test_eos_only_where_the_grammar_can_end(json_c: Constraint, llama3: Vocab) -> None:
    st = json_c.start()
    eos = llama3.eos_token_ids
    assert not any(st.is_allowed(e) for e in eos)
    assert st.commit_tokens(greedy_tokens(llama3, b"[1]"))
    assert all(st.is_allowed(e) for e in eos)
    assert st.commit_token(eos[0]) and st.is_terminated() and not st.is_accepting()
    assert not st.mask().any()


def test_special_tokens_are_never_text(json_c: Constraint, llama3: Vocab) -> None:
    st = json_c.start()
    assert st.commit_tokens(greedy_tokens(llama3, b'{"k": "abc'))
    m = st.mask()
    assert m.sum() > 100_000  # inside a string nearly everything is allowed...
    assert not m[llama3.is_special.nonzero()[0]].any()  # ...but never a control token
    assert not m[llama3.n_tokens :].any()


def test_token_atoms(llama3: Vocab) -> None:
    c = Constraint.compile(token_grammar(), llama3)
    st = c.start()
    assert np.flatnonzero(st.mask()).tolist() == [10]
    assert st.commit_token(10)
    m = st.mask()
    assert m[11] and m[12] and m[llama3.lookup_text(b"hello")[0]]
    assert not any(m[e] for e in llama3.eos_token_ids)
    assert st.commit_token(llama3.lookup_text(b"hello")[0]) and st.commit_token(11)
    assert st.is_accepting()


def test_named_special_token_resolved_by_vocabulary(llama3: Vocab) -> None:
    g = Grammar({"root": ir.seq(ir.lit("ok"), ir.Token(name="<|eot_id|>"))})
    c = Constraint.compile(g, llama3)
    st = c.start()
    assert st.commit_tokens(greedy_tokens(llama3, b"ok"))
    assert np.flatnonzero(st.mask()).tolist() == llama3.lookup_text("<|eot_id|>")
    with pytest.raises(GrammarError):
        Constraint.compile(Grammar({"root": ir.Token(name="<|nope|>")}), llama3)


def test_grammar_that_cannot_end(llama3: Vocab) -> None:
    g = Grammar({"root": ir.seq(ir.lit("a"), ir.Ref("loop")), "loop": ir.seq(ir.lit("b"), ir.Ref("loop"))})
    st = Constraint.compile(g, llama3).start()
    assert st.is_terminated() and not st.mask().any()


def test_batch_fill_and_apply(json_c: Constraint, llama3: Vocab) -> None:
    a, b = json_c.start(), json_c.start()
    assert b.commit_tokens(greedy_tokens(llama3, b"[1"))
    out = allocate_bitmask(2, llama3.logit_width)
    fill_bitmasks([a, b], out)
    assert np.array_equal(out[0], a.mask_words()) and np.array_equal(out[1], b.mask_words())
    logits = np.zeros((2, llama3.logit_width), dtype=np.float32)
    apply_mask_numpy(logits, out)
    assert np.array_equal(np.isfinite(logits[1]), b.mask())


def test_forced_tokens(llama3: Vocab) -> None:
    g = Grammar({"root": ir.seq(ir.lit('{"name": "'), ir.plus(ir.char((97, 122))), ir.lit('"}'))})
    st = Constraint.compile(g, llama3).start()
    assert st.forced_bytes() == b'{"name": "'
    forced = st.forced_tokens()
    text = b"".join(llama3.token_bytes(t) for t in forced)
    assert b'{"name": "'.startswith(text) and text
    assert st.commit_tokens(forced)


def test_save_load_round_trip(llama3: Vocab) -> None:
    c = Constraint.compile(person_grammar(), llama3, mode="aot")
    c2 = Constraint.load(c.save(), llama3)
    ids = greedy_tokens(llama3, b'{"name": "Bo", "age": 7, "role": "user"}')
    s1, s2 = c.start(), c2.start()
    for t in ids:
        assert np.array_equal(s1.mask_words(), s2.mask_words())
        assert s1.commit_token(t) and s2.commit_token(t)
    assert s2.is_accepting()
    with pytest.raises(VocabError):
        Constraint.load(c.save(), load_vocab("llama-spm"))
    with pytest.raises(ConstraintError):
        Constraint.load(b"not a constraint", llama3)


def test_lazy_and_aot_give_identical_masks(llama3: Vocab) -> None:
    lazy = Constraint.compile(person_grammar(), llama3)
    aot = Constraint.compile(person_grammar(), llama3, mode="aot")
    ids = greedy_tokens(llama3, b'{"name": "Al", "age": 100, "role": "guest", "tags": ["a"]}')
    s1, s2 = lazy.start(), aot.start()
    for t in ids:
        assert np.array_equal(s1.mask_words(), s2.mask_words())
        assert s1.commit_token(t) and s2.commit_token(t)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), extra=st.integers(0, 40))
def test_budget_always_closes(seed: int, extra: int) -> None:
    vocab = load_vocab("llama-bpe")
    for g in (json_grammar(), person_grammar()):
        c = _cached(g, vocab)
        rng = np.random.default_rng(seed)
        st = c.start()
        budget = st.shortest_completion() + 1 + extra
        out = []
        for step in range(budget):
            allowed = np.flatnonzero(st.mask(budget=budget - step))
            assert allowed.size
            t = int(rng.choice(allowed))
            assert st.commit_token(t)
            if st.is_terminated():
                break
            out.append(vocab.token_bytes(t))
        assert st.is_terminated()
        assert g.matches(b"".join(out))


_compiled: dict[tuple[Grammar, str], Constraint] = {}


def _cached(g: Grammar, vocab: Vocab) -> Constraint:
    key = (g, vocab.fingerprint)
    if key not in _compiled:
        _compiled[key] = Constraint.compile(g, vocab)
    return _compiled[key]


def test_long_generation_stays_flat(llama3: Vocab) -> None:
    """10,000 steps of an array of objects: configurations and memory do not grow with length."""
    c = Constraint.compile(json_grammar(), llama3)
    st = c.start()
    item = greedy_tokens(llama3, b'{"id": 12, "name": "abc"}, ')
    assert st.commit_tokens(greedy_tokens(llama3, b"["))
    steps = 0
    configs_after_warmup = None
    while steps < 10_000:
        for t in item:
            st.mask_words()
            assert st.commit_token(t)
            steps += 1
        if configs_after_warmup is None and steps > 100:
            configs_after_warmup = c.stats()["configs"]
    assert c.stats()["configs"] == configs_after_warmup


def test_save_load_with_rules_built_lazily(llama3: Vocab) -> None:
    """Regular rules are built on first use; a saved constraint keeps what was built and can
    build the rest after loading."""
    g = Grammar(
        {
            "root": ir.seq(ir.lit("{"), ir.alt(ir.Ref("a"), ir.Ref("b")), ir.lit("}")),
            "a": ir.seq(ir.lit('"a":'), ir.plus(ir.char((48, 57)))),
            "b": ir.seq(ir.lit('"b":'), ir.Repeat(ir.char((97, 122)), 1, 5)),
        }
    )
    c = Constraint.compile(g, llama3)
    st = c.start()
    assert st.commit_tokens(greedy_tokens(llama3, b'{"a":1'))  # builds rule a, not b
    c2 = Constraint.load(c.save(), llama3)
    for text in (b'{"a":12}', b'{"b":xyz}'):
        s1, s2 = c.start(), c2.start()
        for t in greedy_tokens(llama3, text):
            assert np.array_equal(s1.mask_words(), s2.mask_words())
            assert s1.commit_token(t) and s2.commit_token(t)
        assert s1.is_accepting() and s2.is_accepting()
