"""Call formats on real vocabularies: calls round-trip, markers that are special tokens are allowed
only as those tokens, and masks inside calls equal the byte-level matcher's.

llama.cpp's vocab-only files are Llama 3.0 and Qwen 2 base, whose reserved ids Llama 3.1 and
Qwen 2.5 later named: id 128010 is Llama 3.1's ``<|python_tag|>``, ids 151657 / 151658 are Qwen
2.5's ``<tool_call>`` / ``</tool_call>``. The tests name those ids so, which gives the later models'
vocabularies exactly.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab, walk_against_matcher

from structgen.chat.calls import split_answer
from structgen.chat.formats import call_format
from structgen.chat.grammar import answer_grammar, marker
from structgen.constraint_cache import constraint_for
from structgen.tools import ToolSet
from structgen.vocab import Vocab


def get_weather(city: str, days: int = 1) -> dict:
    """Forecast."""
    return {}


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


TOOLS = ToolSet([get_weather, add])
CALLS = [
    {"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}},
    {"name": "add", "arguments": {"a": 1, "b": 2}},
]


@functools.lru_cache(maxsize=None)
def renamed(name: str, ids: tuple[tuple[int, str], ...]) -> Vocab:
    base = load_vocab(name)
    tokens = [base.token_bytes(i) or base.special_texts.get(i, "").encode() or None for i in range(base.n_tokens)]
    for i, text in ids:
        tokens[i] = text.encode()
    return Vocab(
        tokens,
        eos_token_ids=base.eos_token_ids,
        special_token_ids=base.special_token_ids.tolist(),
        logit_width=base.logit_width,
        name=f"{name}-renamed",
    )


def llama31() -> Vocab:
    return renamed("llama-bpe", ((128010, "<|python_tag|>"),))


def qwen25() -> Vocab:
    return renamed("qwen2", ((151657, "<tool_call>"), (151658, "</tool_call>")))


def tokens_of(vocab: Vocab, text: str, markers: list[str]) -> list[int]:
    """Ids of ``text``: each special marker as its token, the rest greedily."""
    out: list[int] = []
    rest = text
    while rest:
        hits = [(rest.find(m), m) for m in markers if m in rest]
        if not hits:
            out += greedy_tokens(vocab, rest.encode())
            break
        at, m = min(hits)
        out += greedy_tokens(vocab, rest[:at].encode()) if at else []
        out.append(marker(m, vocab).ids[0])
        rest = rest[at + len(m) :]
    return out


def walk(vocab: Vocab, grammar, ids: list[int]):
    state = constraint_for(grammar, vocab).start()
    for t in ids:
        assert state.commit_token(t), f"token {t} {vocab.detokenize([t], specials=True)!r} refused"
    assert state.is_accepting()
    return state


@pytest.mark.parametrize(
    "vocab_of, fmt, markers",
    [
        (qwen25, "hermes", ["<tool_call>", "</tool_call>"]),
        (llama31, "llama3", ["<|python_tag|>"]),
        (lambda: load_vocab("llama-bpe"), "hermes", []),
        (lambda: load_vocab("llama-bpe"), "mistral", []),
        (lambda: load_vocab("qwen2"), "generic", []),
    ],
)
def test_rendered_calls_parse_back_to_the_same_typed_calls(vocab_of, fmt, markers):
    vocab = vocab_of()
    f = call_format(fmt)
    for m in markers:
        assert isinstance(marker(m, vocab), type(marker("<|python_tag|>", llama31()))), m
    calls = CALLS if f.parallel else CALLS[:1]
    text = f.render_calls(calls)
    if f.style == "bare" and not markers:
        text = text.removeprefix(f.prefix)
    grammar = answer_grammar(
        f, vocab, tools=TOOLS, tool_choice="required", parallel=True, answer=None, schema_options={}
    )
    ids = tokens_of(vocab, text, markers)
    walk(vocab, grammar, ids)
    printed = vocab.detokenize(ids, specials=True).decode()
    content, raw = split_answer(f, printed, calls_possible=True)
    assert content == "" and raw == [(c["name"], c["arguments"]) for c in calls]
    typed = [TOOLS.tools[n].validate_arguments(a) for n, a in raw]
    assert typed[0].city == "Oslo" and typed[0].days == 3


def test_special_markers_are_allowed_only_as_their_tokens():
    vocab = qwen25()
    f = call_format("hermes")
    grammar = answer_grammar(
        f, vocab, tools=TOOLS, tool_choice="required", parallel=True, answer=None, schema_options={}
    )
    state = constraint_for(grammar, vocab).start()
    assert state.allowed_token_ids().tolist() == [151657]  # `<tool_call>` as text is never offered
    auto = answer_grammar(f, vocab, tools=TOOLS, tool_choice="auto", parallel=True, answer=None, schema_options={})
    state = constraint_for(auto, vocab).start()
    allowed = state.mask()
    assert allowed[151657] and not allowed[151658]
    for t in greedy_tokens(vocab, b"see <tool_call"):
        assert state.commit_token(t)
    # free text never spells the trigger: `>` would complete `<tool_call>` in text
    assert not any(vocab.token_bytes(i).startswith(b">") for i in np.flatnonzero(state.mask()).tolist())


def test_python_tag_is_optional_and_only_a_token():
    vocab = llama31()
    grammar = answer_grammar(
        call_format("llama3"), vocab, tools=TOOLS, tool_choice="required", parallel=True, answer=None, schema_options={}
    )
    allowed = constraint_for(grammar, vocab).start().allowed_token_ids().tolist()
    assert 128010 in allowed
    assert all(i == 128010 or vocab.token_bytes(i).startswith(b"{") for i in allowed)


@pytest.mark.parametrize("fmt", ["hermes", "mistral"])
def test_masks_inside_calls_are_exact(fmt):
    vocab = load_vocab("llama-bpe")
    f = call_format(fmt)
    grammar = answer_grammar(
        f, vocab, tools=TOOLS, tool_choice="required", parallel=True, answer=None, schema_options={}
    )
    text = f.render_calls(CALLS).encode()
    walk_against_matcher(constraint_for(grammar, vocab), grammar, vocab, text, every=5)
