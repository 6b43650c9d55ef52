"""Long inputs whose parse state need not grow with their length (issue 23, items 8 and 9).

A long property name, a long literal regex and a counted ``contains`` each made the engine's depth
or its parallel parses grow with the length or the count: RecursionError or a misleading
``LimitError('max_nesting')``, and a cost per token that grew with the position. These tests
assert on depth, parallel parses and sizes (never on time) and compare masks with the matcher's.
"""

from __future__ import annotations

import functools
import json

import jsonschema
import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab, pieces_vocab, reference_mask
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.configs import MAX_LITERAL_RUN
from structgen.schema import json_schema_to_grammar
from structgen.vocab import Vocab


@pytest.fixture(scope="module")
def llama3() -> Vocab:
    return load_vocab("llama-bpe")


def _walk(c: Constraint, vocab: Vocab, text: bytes, check: set[int], grammar: object = None) -> list[int]:
    """Commit ``text``'s greedy tokens; the stacks of each configuration met; masks compared with
    the matcher's at the token positions in ``check``."""
    state = c.start()
    done = b""
    stacks = []
    for i, tok in enumerate(greedy_tokens(vocab, text)):
        if i in check:
            assert np.array_equal(state.mask(), reference_mask(grammar, vocab, done)), f"after {done[-40:]!r}"
        else:
            state.mask_words()
        stacks.append(len(c._system.configs[state.config]))
        assert state.commit_token(tok), f"token {i} refused after {done[-40:]!r}"
        done += vocab.token_bytes(tok)
    assert state.is_accepting()
    return stacks


# -- a long property name (item 9) ----------------------------------------------------------------


def test_long_property_name_compiles_and_walks(llama3: Vocab) -> None:
    """The keys other than a listed one are a trie of the listed key: a chain of rules as long as
    the name. The engine's grammar analyses followed it by recursion (max_nesting at 5,000
    characters); they walk it with an explicit stack."""
    name = "a" * 6_000
    schema = {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}
    g = json_schema_to_grammar(schema)
    text = json.dumps({name: "x", "ab": 1}, separators=(",", ":")).encode()
    c = Constraint.compile(g, llama3)
    _walk(c, llama3, text, set())
    # a literal run holds a bounded piece of the key: in full, each position's run held the whole
    # rest of it (quadratic in time and memory)
    runs = [r for r in c._system._literal_tops.values() if r is not None]
    assert runs and max(len(r[0]) for r in runs) <= MAX_LITERAL_RUN
    # masks against the matcher's, on a vocabulary of the document's pieces (a small one: the
    # matcher's mask is a walk over every token)
    other = json.dumps({name: "y", "aab": 2, name[:-1]: 3}, separators=(",", ":")).encode()
    pieces = pieces_vocab([text, other])
    c = Constraint.compile(g, pieces)
    # inside the long key, after it, in the key that leaves its trie early, in the one that
    # ends one character short of it
    at = [len(name) // 2, len(name) + 3, len(name) + 12, len(other) - len(name) // 2, len(other) - 4]
    _walk(c, pieces, text, {_token_at(pieces, text, at[0]), _token_at(pieces, text, at[1])}, g)
    _walk(c, pieces, other, {_token_at(pieces, other, i) for i in at[2:]}, g)


def _token_at(vocab: Vocab, text: bytes, offset: int) -> int:
    """The index of the greedy token of ``text`` that holds the byte at ``offset``."""
    end = 0
    for i, tok in enumerate(greedy_tokens(vocab, text)):
        end += len(vocab.token_bytes(tok))
        if end > offset:
            return i
    raise AssertionError(offset)


# -- counted contains (item 9) --------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema,items",
    [
        ({"type": "array", "contains": {"const": 1}, "minContains": 40}, [1] * 60),
        ({"type": "array", "contains": {"const": 1}, "minContains": 40}, [1, 2, 10] * 42),
        ({"type": "array", "contains": {"type": "string"}, "minContains": 30}, ["s", 1] * 35),
        ({"type": "array", "contains": {"const": 1}, "minContains": 30, "maxContains": 45}, [1, 2] * 35),
    ],
)
def test_counted_contains_keeps_one_count(llama3: Vocab, schema: dict, items: list) -> None:
    """With a lower bound alone, an element matching ``contains`` also matched the uncounted
    branch ("any element"), so after n elements the parse was at every count up to n at once
    (n + 1 stacks) and each token cost in proportion. The uncounted branch is the complement of
    ``contains`` where it exists: the parse stays at one count (a stack or two inside a number
    that may still grow into another)."""
    g = json_schema_to_grammar(schema)
    text = json.dumps(items, separators=(",", ":")).encode()
    stacks = _walk(Constraint.compile(g, llama3), llama3, text, set())
    assert max(stacks) <= 3, stacks
    pieces = pieces_vocab([text, json.dumps(items).encode()])
    n = len(greedy_tokens(pieces, text))
    _walk(Constraint.compile(g, pieces), pieces, text, {0, 1, 2, n // 2, n // 2 + 1, n - 2, n - 1}, g)


# -- an unanchored long literal regex (item 9) ----------------------------------------------------


@pytest.mark.parametrize("as_pattern", [False, True])
def test_unanchored_long_literal(llama3: Vocab, as_pattern: bool) -> None:
    """``a`` repeated, unanchored: after some ``a`` the derivative is a choice of several
    suffixes of the literal, which share its whole length. Left-factoring them through it
    recursed once per byte (RecursionError, max_nesting at the first mask) and copied the chain
    on every derivative; factoring stops after ``MAX_FACTOR_DEPTH`` levels."""
    literal = "a" * 20_000
    if as_pattern:
        g = json_schema_to_grammar({"type": "string", "pattern": literal})
        text = b'"b' + b"a" * 300  # inside the string: it cannot end before the literal
    else:
        g = Grammar.from_regex(literal)
        text = b"b" + b"a" * 300
    c = Constraint.compile(g, llama3)
    state = c.start()
    for tok in greedy_tokens(llama3, text):
        state.mask_words()
        assert state.commit_token(tok)
    assert not state.is_accepting()
    # saved and loaded, the choices left unfactored are the same terms
    loaded = Constraint.load(c.save(), llama3)
    assert loaded.stats()["terms"] == c.stats()["terms"]
    again = loaded.start()
    assert again.commit_tokens(greedy_tokens(llama3, text))
    assert np.array_equal(again.mask_words(), state.mask_words())
    # masks against the matcher's, on a vocabulary of the text's pieces
    pieces = pieces_vocab([text])
    n = len(greedy_tokens(pieces, text))
    _walk_prefix(Constraint.compile(g, pieces), pieces, text, {0, 1, 2, n // 2, n - 1}, g)


def _walk_prefix(c: Constraint, vocab: Vocab, text: bytes, check: set[int], grammar: object) -> None:
    """Commit ``text``'s greedy tokens (a prefix of a sentence) with masks compared with the
    matcher's at the token positions in ``check``."""
    state = c.start()
    done = b""
    for i, tok in enumerate(greedy_tokens(vocab, text)):
        if i in check:
            assert np.array_equal(state.mask(), reference_mask(grammar, vocab, done)), f"after {done[-40:]!r}"
        assert state.commit_token(tok)
        done += vocab.token_bytes(tok)


# -- memory per token in a long counted string (item 8) -------------------------------------------


def test_long_string_shares_byte_partitions(llama3: Vocab) -> None:
    """Inside ``maxLength: 1000000`` every token makes a configuration (the remaining length
    is part of the parse state; a commit interns only the one after the token), and each held
    its own copy of the same byte partition (a tuple of 256-bit integers) three times over: for
    its terms, its stack and itself. They share one object per distinct partition."""
    g = json_schema_to_grammar({"type": "string", "maxLength": 1_000_000})
    c = Constraint.compile(g, llama3)
    state = c.start()
    for tok in greedy_tokens(llama3, json.dumps("hello world, the quick brown fox " * 40).encode()[:-1]):
        state.mask_words()
        assert state.commit_token(tok)
    store, system = c._machines.store, c._system
    held = [*store._classes.values(), *(p for p in system._classes_memo.values() if p is not None)]
    assert len(held) > 100
    assert len({id(p) for p in held}) <= 64


_CONTAINS = [{"const": 1}, {"type": "string"}, {"type": "integer", "minimum": 2}, {"enum": [None, True]}]
_VALUES = st.sampled_from([1, 2, 3, 1.0, 1.5, -1, "s", "", None, True, False, [1], {"a": 1}])


@settings(max_examples=60, deadline=None)
@given(
    contains=st.sampled_from(_CONTAINS),
    low=st.integers(2, 4),
    high=st.one_of(st.none(), st.integers(4, 6)),
    items=st.lists(_VALUES, max_size=9),
)
def test_counted_contains_matches_a_validator(contains: dict, low: int, high: int | None, items: list) -> None:
    """The counted ``contains`` grammar (with the complement on the uncounted branch) accepts
    exactly the arrays a JSON Schema validator accepts."""
    schema: dict = {"type": "array", "contains": contains, "minContains": low}
    if high is not None:
        schema["maxContains"] = high
    g = _contains_grammar(json.dumps(schema, sort_keys=True))
    expected = jsonschema.Draft202012Validator(schema).is_valid(items)
    assert g.matches(json.dumps(items)) == expected, (schema, items)


@functools.lru_cache(maxsize=64)
def _contains_grammar(schema: str) -> Grammar:
    return json_schema_to_grammar(json.loads(schema))
