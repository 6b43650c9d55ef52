"""Masks inside counted repetitions (counters.py) equal the masks of the ordinary walk at every
count, including the counts that share one mask because they leave more units than any token
holds, and the last counts, where the bound cuts tokens off."""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import byte_tokens, greedy_tokens, load_vocab

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.tuning import EngineTuning
from structgen.grammar import ir

L = ir.lit
#: every count walked, none filtered from a sorted unbounded mask
WALKED = EngineTuning(counted_masks=False)


def _grammar(lo: int, hi: int) -> Grammar:
    body = ir.Repeat(ir.CharClass(((97, 122), (32, 32))), lo, hi)
    return Grammar({"root": ir.seq(L('{"s": "'), body, L('", "n": 1}'))}, "root")


@pytest.mark.parametrize(("lo", "hi"), [(0, 40), (30, 45), (3, 6)])
def test_counted_masks_equal_walks(lo: int, hi: int) -> None:
    vocab = load_vocab("llama-spm")
    text = '{"s": "' + ("the quick brown fox jumps over a lazy dog " * 2)[: (lo + hi) // 2] + '", "n": 1}'
    ids = greedy_tokens(vocab, text.encode())
    fast = Constraint.compile(_grammar(lo, hi), vocab)
    st = fast.start()
    got = []
    for tok in ids:
        got.append((st.mask_words().copy(), _budget_figures(fast, st.config)))
        assert st.commit_token(tok)
    assert fast._counted_masks._words, "the counted path was not taken"
    slow = Constraint.compile(_grammar(lo, hi), vocab, tuning=WALKED)
    st = slow.start()
    for step, tok in enumerate(ids):
        assert np.array_equal(st.mask_words(), got[step][0]), f"mask differs at token {step}"
        for a, b in zip(_budget_figures(slow, st.config), got[step][1]):
            assert np.array_equal(a, b), f"budget figures differ at token {step}"
        assert st.commit_token(tok)


def _budget_figures(c: Constraint, cid: int) -> tuple[np.ndarray, np.ndarray]:
    """Each allowed token with the bytes its shortest completion needs, in id order (counted
    configurations without units still required take them from the unbounded one)."""
    ids, need = c._after(cid)
    order = np.argsort(ids, kind="stable")
    return ids[order], need[order]


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
@pytest.mark.parametrize(("lo", "hi"), [(0, 12), (5, 9)])
def test_counted_masks_inside_a_begun_unit_equal_walks(vocab_name: str, lo: int, hi: int) -> None:
    """Inside a string escape or a multi-byte character of a length-bounded JSON string, every
    byte position and count: the masks from per-token counts taken from the begun unit equal the
    ordinary walk's."""
    from structgen.schema import json_schema_to_grammar

    vocab = load_vocab(vocab_name)
    singles = byte_tokens(vocab)
    grammar = json_schema_to_grammar(
        {"type": "object", "properties": {"s": {"type": "string", "minLength": lo, "maxLength": hi}}, "required": ["s"]}
    )
    # a prefix cut to the bounds, so that the instance is valid
    chars = ["\\u00e9", "a", "\\n", "\u00e9", "\U0001f600", "\\\\", "b", "\\ud83d\\ude00"]
    body = "".join((chars * 2)[: max(lo, min(hi, 9))])
    text = '{"s":"' + body + '"}'
    ids = [singles[b] for b in text.encode()]  # byte by byte: every begun-unit position is reached
    fast = Constraint.compile(grammar, vocab)
    st = fast.start()
    got = []
    for tok in ids:
        got.append((st.mask_words().copy(), _budget_figures(fast, st.config)))
        assert st.commit_token(tok), "the instance must be valid"
    assert any(k[1] is not None and v is not None for k, v in fast._counted_masks.units.items()), (
        "no begun unit was counted"
    )
    slow = Constraint.compile(grammar, vocab, tuning=WALKED)
    st = slow.start()
    for step, tok in enumerate(ids):
        assert np.array_equal(st.mask_words(), got[step][0]), f"mask differs after {text.encode()[:step]!r}"
        for a, b in zip(_budget_figures(slow, st.config), got[step][1]):
            assert np.array_equal(a, b), f"budget figures differ after {text.encode()[:step]!r}"
        assert st.commit_token(tok)


def test_an_optional_unit_is_not_counted() -> None:
    """``x?`` (a number's exponent sign) has no count to share a mask across: it takes the
    ordinary walk. Counting its units walked the whole vocabulary, 11 ms for ``[+-]?`` after
    ``e`` on Llama 3 (regression: the largest warm step of ``any_json``)."""
    from engine_support import json_grammar, reference_mask

    from structgen.engine.counters import counted_head

    vocab = load_vocab("llama-spm")
    grammar = json_grammar()
    c = Constraint.compile(grammar, vocab)
    state = c.start()
    prefix = b"[0,-2.5e"
    for tok in greedy_tokens(vocab, prefix):
        assert state.commit_token(tok)
    store, system = c._machines.store, c._system
    tops = [system.stack_top[sid] for sid in system.configs[state.config]]
    assert all(counted_head(store, top) is None for top in tops)
    assert np.array_equal(state.mask(), reference_mask(grammar, vocab, prefix))


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
def test_exact_counts_equal_walks(vocab_name: str) -> None:
    """Exact counts (``[0-9a-fA-F]{4}``, whose last unit the term store writes as the class
    itself): every mask, greedy and byte by byte, equals the walk's. Also where the class
    overlaps what follows (``[0-9a-f]{3}[0-9]``: never counted) and where the count ends the
    string."""
    from structgen.schema import json_schema_to_grammar

    vocab = load_vocab(vocab_name)
    singles = byte_tokens(vocab)
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "code": {"type": "string", "pattern": "^[0-9a-f]{3}[0-9]-[A-Z]{2}$"},
            "day": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"},
        },
        "required": ["id", "code", "day"],
        "additionalProperties": False,
    }
    text = b'{"id": "1c6e3a52-9f7B-4d8e-a1b2-c3d4e5f60718", "code": "ab37-XY", "day": "2026-03"}'
    grammar = json_schema_to_grammar(schema)
    walks = [greedy_tokens(vocab, text), [singles[b] for b in text]]

    def masks(tuning: EngineTuning) -> tuple[list[list[np.ndarray]], int]:
        c = Constraint.compile(grammar, vocab, tuning=tuning)
        out = []
        for ids in walks:
            st, got = c.start(), []
            for tok in ids:
                got.append(st.mask_words().copy())
                assert st.commit_token(tok), "the instance must be valid"
            got.append(st.mask_words().copy())
            out.append(got)
        taken = [v for v in c._counted_masks.entries.values() if v is not None]
        return out, len(taken)

    fast, taken = masks(EngineTuning())
    assert taken, "no count took the counted path"
    slow, taken = masks(WALKED)
    assert not taken
    for ids, a, b in zip(walks, fast, slow):
        for step, (x, y) in enumerate(zip(a, b)):
            done = b"".join(vocab.token_bytes(t) for t in ids[:step])
            assert np.array_equal(x, y), f"mask differs after {done!r}"
