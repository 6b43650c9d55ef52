"""Memory that need not grow with the output (issue 23 item 8): what each token adds.

Inside a long counted string the remaining length is part of the parse state, so each token
makes one new configuration; the configurations between a token's bytes are no state's, and a
commit no longer interns them (four a token on Llama 3, each with a table row and memos). Deep
nesting adds one configuration per level and a few stacks (the calls one ``[`` makes); the count
clamp's memo of caller chains no longer keeps one entry per frame at every level. These tests
count objects (never time), and check that stepping a token's bytes without interning reaches
the configuration stepping through interned ones reaches.
"""

from __future__ import annotations

import functools
import json

import pytest
from engine_support import greedy_tokens, load_vocab, pieces_vocab
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.configs import DEAD
from structgen.engine.constraint import State
from structgen.schema import json_schema_to_grammar
from structgen.vocab import Vocab

_TEXT = "The quick brown fox jumps over the lazy dog, and the committee agreed on the report. "


@pytest.fixture(scope="module")
def llama3() -> Vocab:
    return load_vocab("llama-bpe")


def _walk(state: State, tokens: list[int]) -> None:
    for tok in tokens:
        state.mask_words()
        assert state.commit_token(tok)


_LONG = {"type": "string", "maxLength": 1_000_000}
_IN_OBJECT = {
    "type": "object",
    "properties": {"text": _LONG, "n": {"type": "integer"}, "more": {"type": "array"}},
    "required": ["text", "n", "more"],
}


@pytest.mark.parametrize(("schema", "prefix"), [(_LONG, b'"'), (_IN_OBJECT, b'{"text": "')], ids=["alone", "in_object"])
def test_long_string_adds_one_configuration_per_token(llama3: Vocab, schema: dict, prefix: bytes) -> None:
    """``maxLength: 1000000``: the walk's configurations and stacks grow by one per token
    committed (the count after it), not by one per byte (about five per token before), and
    its terms by two (ten before: the bytes that are whole characters are read at once), also
    where the document after the string holds calls (a value of an object)."""
    g = json_schema_to_grammar(schema)
    tokens = greedy_tokens(llama3, prefix + (_TEXT * 20).encode())
    warm, measured = tokens[:40], tokens[40:340]
    c = Constraint.compile(g, llama3)
    state = c.start()
    _walk(state, warm)
    before = c.stats()
    _walk(state, measured)
    after = c.stats()
    assert after["configs"] - before["configs"] <= len(measured) + 4
    assert after["stacks"] - before["stacks"] <= len(measured) + 4
    # the count's repetition and the sequence after it: two terms a token, not two a byte
    assert after["terms"] - before["terms"] <= 2 * len(measured) + 8


def test_deep_nesting_keeps_one_chain_per_level(llama3: Vocab) -> None:
    """Any JSON nested deep: the count clamp remembers one clamped caller chain per level (the
    one asked for), not one per frame it keeps (four per level before), and a level interns
    two stacks."""
    c = Constraint.compile(json_schema_to_grammar({}), llama3)
    bracket = greedy_tokens(llama3, b"[")
    state = c.start()
    _walk(state, bracket * 50)
    before, stacks = len(c._clamp._chain), c.stats()["stacks"]
    _walk(state, bracket * 300)
    assert len(c._clamp._chain) - before <= 300 + 4
    # the frame of the value after the item and the array's top: not the value's and the
    # array's bodies the call read the ``[`` in (five stacks a level before)
    assert c.stats()["stacks"] - stacks <= 2 * 300 + 4


@functools.lru_cache(maxsize=8)
def _grammar(which: str) -> Grammar:
    if which == "string":
        return json_schema_to_grammar({"type": "string", "minLength": 2, "maxLength": 40})
    if which == "object":
        return json_schema_to_grammar(
            {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 12}, "tags": {"type": "array"}},
                "required": ["name"],
            }
        )
    if which == "any":
        return json_schema_to_grammar({})
    return Grammar.from_regex("(a|b)*a(a|b){3}")


_DOCS = {
    "string": [json.dumps(s).encode() for s in ("hello wörld", 'a\\"b', "x" * 39, "tab\tend", "ab" * 19 + "é")],
    "object": [
        json.dumps(d).encode()
        for d in ({"name": "ab", "tags": [1, [2, {"x": None}]]}, {"name": "ünï"}, {"name": "abcdefghijk", "tags": []})
    ],
    "any": [json.dumps(d).encode() for d in ([[[[1]]]], {"k": [True, "s", 1.5e3]}, "plain")],
    "regex": [b"abababab", b"aaaaab", b"bbbbabab"],
}


@functools.lru_cache(maxsize=8)
def _constraint(which: str) -> Constraint:
    return Constraint.compile(_grammar(which), pieces_vocab(_DOCS[which]))


@settings(max_examples=120, deadline=None)
@given(
    which=st.sampled_from(sorted(_DOCS)),
    pick=st.integers(0, 10),
    cut=st.tuples(st.integers(0, 64), st.integers(0, 64)),
    noise=st.one_of(st.none(), st.binary(min_size=1, max_size=3)),
    literal_runs=st.booleans(),
)
def test_step_bytes_reaches_the_interned_walk(
    which: str, pick: int, cut: tuple[int, int], noise: bytes | None, literal_runs: bool
) -> None:
    """``ConfigSystem.step_bytes`` from any configuration on a document's path, over any piece
    of it (or bytes that may be refused), is the configuration stepping byte by byte through
    interned configurations reaches: the same id, or DEAD for both."""
    c = _constraint(which)
    system = c.system
    doc = _DOCS[which][pick % len(_DOCS[which])]
    start, length = sorted(cut)
    start = min(start, len(doc))
    data = doc[start : start + length] if noise is None else doc[start : start + length] + noise
    cid = system.start
    for byte in doc[:start]:
        cid = system.step(cid, byte)
    assert cid != DEAD
    expected = cid
    for byte in data:
        expected = system.step(expected, byte) if expected != DEAD else DEAD
    assert system.step_bytes(cid, data, literal_runs=literal_runs) == expected
