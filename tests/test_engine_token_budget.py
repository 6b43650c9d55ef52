"""Budget masks count tokens of the vocabulary (token_budget.py).

Against plain references: the count is the fewest tokens spelling the smallest shortest byte
completion in the preference order (enumerated byte by byte), never below the true fewest tokens
(a breadth-first search over token commits) nor above the bytes; with budget ``k`` every token
a budget mask allows leaves a completion of at most ``k - 2`` tokens (the token and the
end-of-sequence token are the other two), on small grammars and real vocabularies; and a model
that follows the masks ends validly."""

from __future__ import annotations

import json
import random

import numpy as np
import pydantic
import pytest
from engine_support import greedy_tokens, json_grammar, load_vocab, person_grammar
from gbnf_strategies import TOKEN_FREE_NODE
from generation_support import ScriptedRuntime
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from structgen import GenerationError, Grammar, GrammarError, LimitError, Vocab
from structgen.engine import Constraint
from structgen.engine.configs import DEAD
from structgen.engine.masks import unpack
from structgen.engine.token_budget import DEFAULT_TOKEN_BUDGET_TUNING, TokenBudgetTuning, TokenCounter
from structgen.generate import generate_result
from structgen.grammar import ir
from structgen.schema import json_schema_to_grammar

L = ir.lit

#: a three-field model's schema (what Pydantic gives for name: str, age: int, active: bool)
THREE_FIELDS = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "active": {"type": "boolean"}},
    "required": ["name", "age", "active"],
    "additionalProperties": False,
}
#: the schema's one key order (the token counts below are of that order's shortest text; with keys
#: in any order, the counter's fixed completion may take another order and a token more)
FIXED_ORDER = {"any_order_up_to": 0, "any_order_required_up_to": 0}


def _toy_vocab() -> Vocab:
    merges = [b"ab", b"ba", b"aab", b"bbb", b"a\xc3", b"\xc3\xa9", b"\xc3\xa9a", b"\xe3\x81", b"b\xe3\x81\x82"]
    merges += [b'{"', b'":', b'",', b'"}', b"true", b"tr", b"ue", b"fal", b"se", b"aaaa", b"  ", b"    ", b"-1"]
    return Vocab([bytes([i]) for i in range(256)] + merges, eos_token_ids=[0])


# -- references -----------------------------------------------------------------------------


def _text_tokens(c: Constraint) -> dict[bytes, int]:
    vocab, eos = c.vocab, set(c.vocab.eos_token_ids)
    out: dict[bytes, int] = {}
    for i in np.flatnonzero(vocab.is_text).tolist():
        if i < vocab.logit_width and i not in eos:
            out.setdefault(vocab.token_bytes(i), i)
    return out


def _fewest_spelling(text: bytes, tokens: dict[bytes, int]) -> int | None:
    """The fewest tokens whose bytes, back to back, are ``text`` (plain dynamic program)."""
    longest = max(len(t) for t in tokens)
    best: list[int | None] = [None] * (len(text) + 1)
    best[0] = 0
    for end in range(1, len(text) + 1):
        for n in range(1, min(longest, end) + 1):
            before = best[end - n]
            if before is not None and text[end - n : end] in tokens:
                if best[end] is None or before + 1 < best[end]:  # type: ignore[operator]
                    best[end] = before + 1
    return best[-1]


def _canonical_text(c: Constraint, cid: int, preference: bytes) -> bytes | None:
    """The smallest shortest byte completion of ``cid`` in the preference order: layer by layer
    over every byte, keeping per configuration the smallest prefix that reaches it (prefixes of
    one length compare as their completions do), and among the accepting ones at the shortest
    length the smallest."""
    d = c.shortest(cid)
    if d is None:
        return None
    rank = {b: i for i, b in enumerate(preference)}
    layer: dict[int, bytes] = {cid: b""}
    for _ in range(d):
        nxt: dict[int, bytes] = {}
        for cfg, text in layer.items():
            row = c.row(cfg)
            for b in np.flatnonzero(row != DEAD).tolist():
                target, longer = int(row[b]), text + bytes([b])
                old = nxt.get(target)
                if old is None or [rank[x] for x in longer] < [rank[x] for x in old]:
                    nxt[target] = longer
        layer = nxt
    done = [text for cfg, text in layer.items() if c.accepting(cfg)]
    return min(done, key=lambda t: [rank[b] for b in t]) if done else None


def _fewest_tokens(c: Constraint, cid: int, limit: int) -> int | None:
    """The true fewest text tokens that close ``cid`` (breadth first over commits; None past
    ``limit``)."""
    eos = set(c.vocab.eos_token_ids)
    seen, frontier = {cid}, [cid]
    for depth in range(limit + 1):
        if any(c.accepting(f) for f in frontier):
            return depth
        nxt = []
        for f in frontier:
            for t in np.flatnonzero(unpack(c.mask_words(f), c._width)).tolist():
                if t in eos:
                    continue
                target = c.commit(f, t)
                if target != DEAD and target not in seen:
                    seen.add(target)
                    nxt.append(target)
        frontier = nxt
    return None


def _budget_allows(c: Constraint, cid: int, budget: int) -> list[int]:
    eos = set(c.vocab.eos_token_ids)
    allowed = np.flatnonzero(unpack(c.mask_words_within(cid, budget), c._width)).tolist()
    return [t for t in allowed if t not in eos]


# -- the count against its definition ---------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammar=st.fixed_dictionaries({n: TOKEN_FREE_NODE for n in ("root", "a", "b-2")}), seed=st.integers(0, 1000))
def test_count_is_the_fewest_spelling_of_the_canonical_completion(grammar: dict, seed: int) -> None:
    """Any grammar: along a random walk, the count is its definition (the canonical completion
    enumerated, then spelled), between the true fewest tokens and the bytes."""
    try:
        c = Constraint.compile(Grammar(grammar, "root"), _toy_vocab())
    except (GrammarError, LimitError):
        assume(False)
    tokens = _text_tokens(c)
    rng = random.Random(seed)
    st_ = c.start()
    for _ in range(8):
        cid = st_.config
        d = c.shortest(cid)
        got = c.shortest_tokens(cid)
        if d is None:
            assert got is None
        elif d <= 12:
            text = _canonical_text(c, cid, DEFAULT_TOKEN_BUDGET_TUNING.preference)
            assert text is not None and len(text) == d
            assert got == _fewest_spelling(text, tokens)
            fewest = _fewest_tokens(c, cid, d)
            assert fewest is not None and fewest <= got <= d  # type: ignore[operator]
        allowed = np.flatnonzero(st_.mask()).tolist()
        allowed = [t for t in allowed if t != 0]
        if not allowed:
            break
        assert st_.commit_token(rng.choice(allowed))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammar=st.fixed_dictionaries({n: TOKEN_FREE_NODE for n in ("root", "a", "b-2")}), seed=st.integers(0, 1000))
def test_following_budget_masks_always_closes_on_random_grammars(grammar: dict, seed: int) -> None:
    """With the smallest budget that fits and a few more, a walk that picks any token the budget
    mask allows never finds an empty mask and ends on a sentence within the budget."""
    try:
        c = Constraint.compile(Grammar(grammar, "root"), _toy_vocab())
    except (GrammarError, LimitError):
        assume(False)
    need = c.start().shortest_completion()
    assume(need is not None and need < 40)
    rng = random.Random(seed)
    for extra in (0, 1, 3):
        budget = need + 1 + extra  # type: ignore[operator]
        st_ = c.start()
        for step in range(budget):
            allowed = np.flatnonzero(st_.mask(budget=budget - step)).tolist()
            assert allowed, f"empty budget mask at step {step} of {budget}"
            assert st_.commit_token(rng.choice(allowed))
            if st_.is_terminated():
                break
        assert st_.is_terminated()


# -- real vocabularies ------------------------------------------------------------------------


def _small_grammars() -> dict[str, Grammar]:
    return {
        "enum": json_schema_to_grammar({"enum": ["alpha", "beta", "gamma delta", "epsilon", 12]}),
        "object": json_schema_to_grammar(
            {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": 0, "maximum": 99}},
                "required": ["ok", "n"],
                "additionalProperties": False,
            }
        ),
        "short_string": json_schema_to_grammar({"type": "string", "minLength": 2, "maxLength": 4}),
        "words": Grammar(
            {"root": ir.seq(L("["), ir.Repeat(ir.alt(L("ab"), L("cd"), L("e")), 1, 3), L("]"), ir.star(L("!")))}
        ),
    }


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
@pytest.mark.parametrize("name", sorted(_small_grammars()))
def test_every_allowed_token_leaves_a_completion_within_the_budget(vocab_name: str, name: str) -> None:
    """Brute force on Llama 3 and Llama 2: at every configuration of a random walk and every
    budget ``k`` up to a few past the need, each token the budget mask allows is closed by at
    most ``k - 2`` more tokens; and at the need itself some token is allowed."""
    vocab = load_vocab(vocab_name)
    c = Constraint.compile(_small_grammars()[name], vocab)
    rng = random.Random(7)
    st_ = c.start()
    fewest_after: dict[int, int | None] = {}
    for _ in range(6):
        cid = st_.config
        need = c.shortest_tokens(cid)
        assert need is not None
        for budget in range(1, need + 4):
            allowed = _budget_allows(c, cid, budget)
            if budget >= need + 1 and need > 0:
                assert allowed, (budget, need)
            for t in allowed:
                end = c.commit(cid, t)
                if end not in fewest_after:
                    fewest_after[end] = _fewest_tokens(c, end, budget)
                fewest = fewest_after[end]
                assert fewest is not None and fewest <= budget - 2, (vocab.token_bytes(t), budget)
        allowed = [t for t in np.flatnonzero(st_.mask()).tolist() if t not in set(vocab.eos_token_ids)]
        if not allowed:
            break
        assert st_.commit_token(rng.choice(allowed))


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
def test_budget_masks_always_close_on_json(vocab_name: str) -> None:
    """Recursive JSON and an object with strings: random walks that follow the budget masks at
    the smallest budget and a few more all end on a sentence of the grammar."""
    vocab = load_vocab(vocab_name)
    for g in (json_grammar(), person_grammar(), json_schema_to_grammar(THREE_FIELDS, **FIXED_ORDER)):
        c = Constraint.compile(g, vocab)
        need = c.start().shortest_completion()
        assert need is not None and need <= c.start().shortest_completion_bytes()  # type: ignore[operator]
        for seed, extra in [(0, 0), (1, 0), (2, 2), (3, 6), (4, 15)]:
            rng = np.random.default_rng(seed)
            budget = need + 1 + extra
            st_ = c.start()
            out = []
            for step in range(budget):
                allowed = np.flatnonzero(st_.mask(budget=budget - step))
                assert allowed.size, f"empty budget mask at step {step} of {budget}"
                t = int(rng.choice(allowed))
                assert st_.commit_token(t)
                if st_.is_terminated():
                    break
                out.append(vocab.token_bytes(t))
            assert st_.is_terminated()
            assert g.matches(b"".join(out))


def test_three_field_model_counts_tokens_not_bytes() -> None:
    """The issue's case on Llama 3: 33 bytes, 11 tokens; budget masks at 12 (11 tokens and the
    end-of-sequence token) let the output close."""
    vocab = load_vocab("llama-bpe")
    c = Constraint.compile(json_schema_to_grammar(THREE_FIELDS, **FIXED_ORDER), vocab)
    st_ = c.start()
    assert st_.shortest_completion_bytes() == len(b'{"name":"","age":0,"active":true}')
    need = st_.shortest_completion()
    assert need == len(greedy_tokens(vocab, b'{"name":"","age":0,"active":true}')) == 11
    assert st_.mask(budget=need + 1).any()  # type: ignore[operator]
    assert not st_.mask(budget=need).any()  # type: ignore[operator]


def test_tokens_ending_inside_a_character_get_their_own_end() -> None:
    """Inside a string, tokens of Llama 3 that end inside a multi-byte character are reported by
    the walk with the loop's configuration; their figures use the exact end (a commit)."""
    vocab = load_vocab("llama-bpe")
    c = Constraint.compile(json_schema_to_grammar({"type": "string", "maxLength": 40}), vocab)
    st_ = c.start()
    assert st_.commit_tokens(greedy_tokens(vocab, b'"ab'))
    cid = st_.config
    ids, need = c._after(cid)
    short = vocab.utf8_tail_missing[ids] > 0
    assert short.sum() > 100, "no token ends inside a character here"
    for t, n in zip(ids[short].tolist(), need[short].tolist()):
        assert n == c.shortest_tokens(c.commit(cid, t))


def test_long_completions_count_a_token_per_byte() -> None:
    """Past ``max_text_bytes`` the count is the bytes (no configuration per byte of a hostile
    ``minLength``), and masks still close."""
    vocab = load_vocab("llama-bpe")
    c = Constraint.compile(json_schema_to_grammar({"type": "string", "minLength": 100_000}), vocab)
    st_ = c.start()
    assert st_.shortest_completion() == st_.shortest_completion_bytes() == 100_002
    before = len(c._system.configs)
    assert st_.mask(budget=100_003).any()
    assert len(c._system.configs) - before < 50
    small = Constraint.compile(json_schema_to_grammar({"type": "string", "minLength": 30}), vocab)
    counter = TokenCounter(
        small._system,
        small._table.step,
        small._trie,
        np.ones(vocab.n_tokens, dtype=bool),
        max_cached=64,
        tuning=TokenBudgetTuning(max_text_bytes=8),
    )
    start = small.start().config
    assert counter.tokens(start) == 32
    assert small.shortest_tokens(start) < 32  # type: ignore[operator]


def test_tuning_is_checked() -> None:
    with pytest.raises(ValueError):
        TokenBudgetTuning(preference=b"ab")
    with pytest.raises(ValueError):
        TokenBudgetTuning(max_text_bytes=-1)


def test_cache_is_bounded() -> None:
    vocab = load_vocab("llama-bpe")
    c = Constraint.compile(json_schema_to_grammar(THREE_FIELDS, **FIXED_ORDER), vocab)
    counter = TokenCounter(c._system, c._table.step, c._trie, np.ones(vocab.n_tokens, dtype=bool), max_cached=4)
    assert counter.tokens(c.start().config) == 11
    assert len(counter._tokens) <= 4 and len(counter._next) <= 4


# -- generate ---------------------------------------------------------------------------------


def test_generate_fits_in_the_token_count_and_names_tokens_when_nothing_fits() -> None:
    """Regression: ``max_tokens`` below the bytes but at the tokens of the shortest output was
    refused ("the shortest valid output is 33 bytes"); now it closes, and the refusal below it
    names tokens."""
    vocab = load_vocab("llama-bpe")
    grammar = json_schema_to_grammar(THREE_FIELDS, **FIXED_ORDER)
    rt = ScriptedRuntime(vocab, '{"name": "A very long name that goes on and on", "age": 123456', noise=2.0)
    for max_tokens in (11, 13, 30):
        for seed in range(2):
            r = generate_result(rt, grammar, "p", temperature=1.0, seed=seed, max_tokens=max_tokens)
            assert grammar.matches(r.text)
            assert len(r.token_ids) <= max_tokens
            assert set(json.loads(r.text)) == {"name", "age", "active"}
    with pytest.raises(GenerationError, match=r"shortest valid \w+ is 11 tokens") as e:
        generate_result(rt, grammar, "p", max_tokens=10)
    assert e.value.partial_text == ""


@pytest.mark.model
def test_smollm2_writes_a_three_field_model_in_30_tokens() -> None:
    """The issue's regression with the real model: a Pydantic model of three fields whose
    shortest output is 30-odd bytes and about 11 tokens, generated with ``max_tokens=30``."""
    from structgen import generate
    from structgen.models import find_model, load_llama

    path = find_model("smollm2")
    if path is None:
        pytest.skip("the SmolLM2 GGUF is not installed (python tools/fetch_assets.py --models)")

    class Person(pydantic.BaseModel):
        name: str
        age: int
        active: bool

    llm = load_llama(path, n_ctx=1024, progress=False)
    try:
        prompt = [{"role": "user", "content": "Describe a person with a long biography as JSON."}]
        for seed in range(3):
            person = generate(llm, Person, prompt, max_tokens=30, temperature=1.0, seed=seed)
            assert isinstance(person, Person)
    finally:
        llm.close()  # now, not in __del__ at interpreter exit, when llama_cpp's globals are gone


def test_forced_tokens_keep_the_budget() -> None:
    """Regression: fast-forward spells forced bytes greedily (``abc`` ``d`` ``e`` ``f``), which
    can take more tokens than the budget's count (``ab`` ``cdef``); committed at a tight budget
    they left the output unfinished ("max_tokens=3 ran out"). A forced token that leaves no
    allowed token at the budget is not committed: sampling takes over."""
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)] + [b"</s>", b"abc", b"cdef", b"ab"]
    vocab = Vocab(tokens, eos_token_ids=[256], name="forced-spelling")
    grammar = Grammar({"root": ir.seq(ir.alt(L("x"), L("y")), L("abcdef"))})
    assert Constraint.compile(grammar, vocab).start().shortest_completion() == 3
    for seed in range(4):
        rt = ScriptedRuntime(vocab, "xabcdef", noise=1.0)
        r = generate_result(rt, grammar, "p", temperature=1.0, seed=seed, max_tokens=3)
        assert grammar.matches(r.text) and len(r.token_ids) <= 3


def test_bytes_no_token_holds_come_last_and_keep_the_byte_shortcut() -> None:
    """A vocabulary without a byte that no token holds (SmolLM2 lacks 21): the canonical
    completion avoids it where it can, and budgets plentiful in bytes still take the plain mask."""
    tokens: list[bytes | None] = [bytes([b]) for b in range(256) if b != 0x20] + [b"</s>", b"bb"]
    vocab = Vocab(tokens, eos_token_ids=[255], name="no-space")
    c = Constraint.compile(Grammar({"root": ir.Repeat(ir.alt(L(" "), L("b")), 2, 2)}), vocab)
    assert c._bytes_bound_tokens()
    assert c.start().shortest_completion() == 1  # "bb", not the unwritable "  "
    assert np.array_equal(c.start().mask_words(budget=50), c.start().mask_words())


def test_a_byte_held_only_inside_tokens_turns_the_byte_shortcut_off() -> None:
    """``z`` only inside ``zz``: a completion's bytes no longer bound its tokens, so budget masks
    always count tokens, and walks that follow them still close."""
    tokens: list[bytes | None] = [bytes([b]) for b in range(256) if b != ord("z")] + [b"</s>", b"zz"]
    vocab = Vocab(tokens, eos_token_ids=[255], name="no-single-z")
    grammar = Grammar({"root": ir.seq(L("a"), ir.plus(L("zz")), ir.star(L("b")))})
    c = Constraint.compile(grammar, vocab)
    assert not c._bytes_bound_tokens()
    assert c.start().shortest_completion() == 2
    rng = random.Random(3)
    for budget in (3, 4, 7):
        st_ = c.start()
        for step in range(budget):
            allowed = np.flatnonzero(st_.mask(budget=budget - step)).tolist()
            assert allowed
            assert st_.commit_token(rng.choice(allowed))
            if st_.is_terminated():
                break
        assert st_.is_terminated()


def test_token_atoms_count_one_token_each_in_budgets() -> None:
    """Two special-token atoms and one byte need three tokens and the end: the shortest
    completion counted the atoms as nothing, so a budget of 3 allowed the first atom and then
    left an empty mask."""
    vocab = load_vocab("llama-bpe")
    c = Constraint.compile(Grammar.from_gbnf('root ::= <[128010]> <[128010]> "x"'), vocab)
    assert c.start().shortest_completion() == 3
    assert not c.start().mask(budget=3).any()
    state = c.start()
    while not state.is_accepting():
        ids = np.flatnonzero(state.mask(budget=4 - state.num_tokens))
        assert ids.size
        assert state.commit_token(int(ids[0]))
    assert state.num_tokens == 3 and state.mask(budget=1)[list(vocab.eos_token_ids)].any()
