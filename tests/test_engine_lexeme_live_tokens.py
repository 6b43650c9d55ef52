"""The greedy-lexeme liveness filter per distinct end configuration (``FrameLiveness.live_tokens``)
equals the per-token check it replaced: a mask allows exactly the tokens that are end-of-sequence
where the configuration accepts, or whose commit (each token's bytes stepped, then its end checked
by ``FrameLiveness.live``) is not DEAD. On random recursive GLRM grammars with greedy lexemes and a
vocabulary of multi-byte tokens (tokens that cross rules and end in different configurations), on
token atoms (ids whose commit is more than their bytes), and on Llama 3 with a string lexeme (tokens
the walk reports inside a multi-byte character).
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import load_vocab
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_matcher_lexeme_liveness import _nested_sources, _sources

from structgen.engine.configs import DEAD
from structgen.engine.constraint import Constraint
from structgen.errors import GrammarError
from structgen.grammar import Grammar, ir
from structgen.vocab import Vocab

# every byte, every string of 2 and 3 letters over the grammars' alphabet, and an end token
_WORDS = [bytes([b]) for b in range(256)]
_WORDS += [(x + y).encode() for x in "abc" for y in "abc"]
_WORDS += [(x + y + z).encode() for x in "abc" for y in "abc" for z in "abc"]
EOS = len(_WORDS)
WORDS_VOCAB = Vocab([*_WORDS, b"</s>"], eos_token_ids=[EOS], special_token_ids=[EOS])


def per_token(c: Constraint, cid: int, candidates: list[int]) -> set[int]:
    """The old filter: each candidate kept by its own commit."""
    eos = set(c.vocab.eos_token_ids) if c.accepting(cid) else set()
    return {t for t in candidates if t in eos or c.commit(cid, t) != DEAD}


def _walk(c: Constraint, choices: list[int], candidates: list[int]) -> None:
    state = c.start()
    for pick in choices:
        mask = set(np.flatnonzero(state.mask()).tolist())
        assert mask <= set(candidates)
        assert mask == per_token(c, state.config, candidates), state.config
        text = sorted(t for t in mask if t not in c.vocab.eos_token_ids)
        if not text:
            return
        assert state.commit_token(text[pick % len(text)])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_nested_sources(), _sources(recursive=True)), st.lists(st.integers(0, 2**16), max_size=8))
def test_the_filter_equals_the_per_token_check_on_random_recursive_grammars(src: str, choices: list[int]) -> None:
    try:
        c = Constraint.compile(Grammar.from_glrm(src), WORDS_VOCAB)
    except GrammarError:  # left recursion: the engine refuses it
        return
    _walk(c, [*choices, 0], list(range(EOS + 1)))


def _atom_grammar(negated: bool) -> Grammar:
    """``s = A r | "b"; r = "(" s ")" (T | A q) | "c"; q = "a" q | "a"`` with ``A = /a+/`` and a
    token atom ``T`` on the id of the text token ``a`` (or every id but it). After ``a(b)`` the
    text ``a`` steps to a configuration with no completion (``A`` swallows the ``a`` of ``q``)
    and the atom to one with: the commit of id ``a`` is their union, live."""
    a_plus = ir.Lexeme(ir.plus(ir.lit("a")))
    atom = ir.Token((ord("a"),), negated=negated)
    rules = {
        "s": ir.alt(ir.seq(a_plus, ir.Ref("r")), ir.lit("b")),
        "r": ir.alt(
            ir.seq(ir.lit("("), ir.Ref("s"), ir.lit(")"), ir.alt(atom, ir.seq(a_plus, ir.Ref("q")))), ir.lit("c")
        ),
        "q": ir.alt(ir.seq(ir.lit("a"), ir.Ref("q")), ir.lit("a")),
    }
    return Grammar(rules, "s")


@pytest.mark.parametrize("negated", [False, True])
def test_token_atoms_are_judged_by_their_commits(negated: bool) -> None:
    c = Constraint.compile(_atom_grammar(negated), WORDS_VOCAB)
    state, candidates = c.start(), list(range(EOS + 1))
    for token in [*b"a(b)", ord("b" if negated else "a")]:
        mask = set(np.flatnonzero(state.mask()).tolist())
        assert mask == per_token(c, state.config, candidates)
        assert state.commit_token(token)
    for choices in ([0, 1, 2, 3], [7, 3, 1, 8], [40, 41, 42, 43]):
        _walk(c, choices, candidates)


def test_llama3_along_a_document_with_words_numbers_and_strings() -> None:
    vocab = load_vocab("llama-bpe")
    src = (
        'start v; t W = /[a-z]+/; t N = /[0-9]+/; t S = /"[^"]*"/;'
        ' nt v = W | N | S | "[" (v ("," v)*)? "]" | "{" (W ":" v ("," W ":" v)*)? "}";'
    )
    c = Constraint.compile(Grammar.from_glrm(src), vocab)
    single = {vocab.token_bytes(t): t for t in range(vocab.n_tokens) if vocab.is_text[t] and vocab.lengths[t] == 1}
    # a token can only pass where each of its bytes can: the grammar's bytes, and any in a string
    text = [t for t in range(vocab.n_tokens) if vocab.is_text[t]]
    state = c.start()
    # checked: at the start, in a word, before a number, in a string, inside its characters
    for i, byte in enumerate('{ab:[12,"é x",{c:"€z"}]}'.encode()):
        if i in (0, 2, 5, 9, 10, 11, 20, 22, 24):
            mask = set(np.flatnonzero(state.mask()).tolist())
            assert mask == per_token(c, state.config, text), i
        assert state.commit_token(single[bytes([byte])])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_nested_sources(), st.lists(st.integers(0, 2**16), max_size=6))
def test_the_summaries_are_a_fixpoint(src: str, choices: list[int]) -> None:
    """The solver grows a node by the bits of the nodes it holds and evaluates it again only where
    a callee's exits it read grew: after the masks along a walk, evaluating any summary node again
    gives its value (started from nothing and only grown, it is then the least fixpoint)."""
    try:
        c = Constraint.compile(Grammar.from_glrm(src), WORDS_VOCAB)
    except GrammarError:
        return
    _walk(c, [*choices, 0], list(range(EOS + 1)))
    liveness = c._liveness
    assert liveness is not None and not liveness._work
    for node, value in list(liveness._exits.items()):
        assert liveness._evaluate(node) == value, node
