"""Fixed bytes read at once: where a configuration's top starts with a literal (the rest of a key,
of an enum value, of ``true``), a walk follows it down the trie by binary search, without a
configuration per byte (``ConfigSystem.literal_run``). Masks, commits and refusals must be those
of stepping byte by byte, and the matcher's, also in the middle of a literal, where tokens end
inside it or leave it early.

A choice among fixed bytes (enum values, the keys an object may still have, a gap before a
colon) is walked by its top term's derivatives (``TransitionTable._choice_walk``): masks must be
those of the walk through configurations, with the node budget spent or not, inside a recursive
rule's callee too, and the matcher's."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from engine_support import _text_index, greedy_tokens, load_vocab, pieces_vocab, reference_mask
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.configs import DEAD
from structgen.engine.tuning import EngineTuning

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = ("enum", "tool_call", "realistic_model")


def _case(name: str) -> tuple[Grammar, bytes]:
    schema = json.loads((ROOT / "schemas" / f"{name}.json").read_text())
    first = (ROOT / "schemas" / "instances" / f"{name}.jsonl").read_text().splitlines()[0]
    return Grammar.from_json_schema(schema), json.dumps(json.loads(first), ensure_ascii=False).encode()


def _short_tokens(vocab, text: bytes) -> list[int]:  # type: ignore[no-untyped-def]
    """Tokens of at most three bytes: most of them end inside a key or a value."""
    index = _text_index(vocab)
    out, pos = [], 0
    while pos < len(text):
        for n in (3, 2, 1):
            t = index.get(text[pos : pos + n])
            if t is not None:
                out.append(t)
                pos += n
                break
        else:  # a SentencePiece vocabulary spells some bytes only as <0xNN> pieces
            out.extend(greedy_tokens(vocab, text[pos : pos + 1]))
            pos += 1
    return out


#: literals stepped byte by byte in walks
STEPPED = EngineTuning(literal_runs=False)


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
@pytest.mark.parametrize("name", CASES)
def test_literals_read_at_once_equal_stepping(name: str, vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    grammar, text = _case(name)
    for toks in (greedy_tokens(vocab, text), _short_tokens(vocab, text)):
        on, off = Constraint.compile(grammar, vocab), Constraint.compile(grammar, vocab, tuning=STEPPED)
        s_on, s_off = on.start(), off.start()
        for i, tok in enumerate(toks):
            m_on = s_on.mask()
            ok_on = s_on.commit_token(tok)
            m_off = s_off.mask()
            ok_off = s_off.commit_token(tok)
            assert np.array_equal(m_on, m_off), f"{name}: masks differ at step {i}"
            assert ok_on and ok_off
        assert s_on.is_accepting() and s_off.is_accepting()


@pytest.mark.parametrize("name", CASES)
def test_commits_inside_literals_follow_the_mask(name: str) -> None:
    """Every token that starts like the literal ahead (so may leave it early, end inside it or
    go past it) is committed exactly when the mask allows it, and a refused one leaves the
    state as it was."""
    vocab = load_vocab("llama-bpe")
    grammar, text = _case(name)
    c = Constraint.compile(grammar, vocab)
    state = c.start()
    by_first: dict[int, list[int]] = {}
    for tok_bytes, tid in _text_index(vocab).items():
        by_first.setdefault(tok_bytes[0], []).append(tid)
    checked = 0
    for tok in _short_tokens(vocab, text):
        run = c._system.literal_run(state.config)
        if run is not None:
            allowed = state.mask()
            for cand in by_first.get(run[0][0], [])[:400]:
                # the constraint's own step, which State.commit_token reaches only after the mask
                assert (c.commit(state.config, cand) != DEAD) == bool(allowed[cand]), vocab.token_bytes(cand)
                trial = state.fork()
                before = trial.config
                committed = trial.commit_token(cand)
                assert committed == bool(allowed[cand]), (name, vocab.token_bytes(cand))
                if not committed:
                    assert trial.config == before
            checked += 1
        assert state.commit_token(tok)
    assert checked >= 2


@pytest.mark.parametrize("name", ["enum", "tool_call"])
def test_masks_inside_literals_equal_the_matcher(name: str) -> None:
    vocab = load_vocab("llama-spm")
    grammar, text = _case(name)
    c = Constraint.compile(grammar, vocab)
    checked = _masks_against_matcher(c, grammar, vocab, _short_tokens(vocab, text), c._system.literal_run, 6)
    assert checked > 0


def _masks_against_matcher(c, grammar, vocab, toks, where, most: int) -> int:  # type: ignore[no-untyped-def]
    """Along ``toks`` from the start, compare the mask with the matcher's at the first ``most``
    states whose configuration ``where`` recognises; returns how many were compared."""
    state = c.start()
    done = b""
    checked = 0
    for tok in toks:
        if checked < most and where(state.config) is not None:
            assert np.array_equal(state.mask(), reference_mask(grammar, vocab, done)), done
            checked += 1
        assert state.commit_token(tok)
        done += vocab.token_bytes(tok)
    return checked


def _byte_by_byte(grammar, vocab, docs, on: EngineTuning, off: EngineTuning) -> list[Constraint]:  # type: ignore[no-untyped-def]
    """Along each document byte by byte, the mask under the tuning ``on`` equals the matcher's
    and the mask of a second constraint under ``off``; returns the ``on`` constraints."""
    done = []
    for doc in docs:
        c_on, c_off = Constraint.compile(grammar, vocab, tuning=on), Constraint.compile(grammar, vocab, tuning=off)
        s_on, s_off = c_on.start(), c_off.start()
        for i in range(len(doc)):
            m_on = s_on.mask()
            assert np.array_equal(m_on, reference_mask(grammar, vocab, doc[:i])), doc[:i]
            assert np.array_equal(m_on, s_off.mask()), doc[:i]
            assert s_on.commit_token(doc[i]) and s_off.commit_token(doc[i])
        done.append(c_on)
    return done


CHOICE_GBNF = """
root ::= "[" item ("," item)* "]"
item ::= "alpha" | "alpine" | "alps" | "beta" | "bet" | "true" | root
"""
CHOICE_DOCS = [b"[alpha]", b"[alps,[bet,[alpine]],beta]", b"[[[true,alps]],bet]"]


def _choice_cases(vocab):  # type: ignore[no-untyped-def]
    """(grammar, token walks) for the benchmark's closed objects and an enum, and a recursive
    grammar whose choices sit inside a callee (walked over the hole)."""
    for name in ("enum", "tool_call", "tool_union"):
        grammar, text = _case(name)
        yield name, grammar, [greedy_tokens(vocab, text), _short_tokens(vocab, text)]
    grammar = Grammar.from_gbnf(CHOICE_GBNF)
    yield "gbnf", grammar, [w for doc in CHOICE_DOCS for w in (greedy_tokens(vocab, doc), _short_tokens(vocab, doc))]


@pytest.mark.parametrize("budget", [64, 2])
@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
def test_choice_walks_equal_stepping(vocab_name: str, budget: int) -> None:
    vocab = load_vocab(vocab_name)
    walks_on = EngineTuning(choice_nodes=budget)
    walks_off = EngineTuning(choice_nodes=budget, choice_walks=False)
    walked = 0
    for name, grammar, walks in _choice_cases(vocab):
        for toks in walks:
            on = Constraint.compile(grammar, vocab, tuning=walks_on)
            off = Constraint.compile(grammar, vocab, tuning=walks_off)
            s_on, s_off = on.start(), off.start()
            for i, tok in enumerate(toks):
                m_on = s_on.mask()
                ok_on = s_on.commit_token(tok)
                m_off = s_off.mask()
                ok_off = s_off.commit_token(tok)
                assert np.array_equal(m_on, m_off), f"{name}: masks differ at step {i}"
                assert ok_on and ok_off
            assert s_on.is_accepting() and s_off.is_accepting()
            walked += sum(v is not None for v in on._table._choice.values())
    assert walked > 0, "no choice was walked"


@pytest.mark.parametrize("name", ["enum", "tool_call", "gbnf"])
def test_choice_masks_equal_the_matcher(name: str) -> None:
    vocab = load_vocab("llama-spm")
    grammar, walks = next((g, w) for n, g, w in _choice_cases(vocab) if n == name)
    checked = 0
    for toks in walks[:4]:
        c = Constraint.compile(grammar, vocab)
        checked += _masks_against_matcher(c, grammar, vocab, toks, c._table._choice_of, 8 - checked)
    assert checked > 0


_WORDS = st.lists(st.text("abé", min_size=1, max_size=5), min_size=1, max_size=6, unique=True)


NO_CHOICE_WALKS = EngineTuning(choice_walks=False)


@settings(max_examples=25, deadline=None)
@given(words=_WORDS, picks=st.lists(st.integers(0, 5), min_size=1, max_size=4))
def test_choice_walks_on_random_word_sets(words: list[str], picks: list[int]) -> None:
    """Random choices with shared prefixes, words that are prefixes of others and a two-byte
    character, repeated in a list (a choice met again after each comma): on a vocabulary of
    every byte and every piece of up to four bytes of the document, masks with the choice walks
    equal those without, and the matcher's where a choice is walked."""
    alts = " | ".join(json.dumps(w, ensure_ascii=False) for w in words)
    grammar = Grammar.from_gbnf(f'root ::= "[" word ("," word)* "]"\nword ::= {alts}\n')
    doc = ("[" + ",".join(words[p % len(words)] for p in picks) + "]").encode()
    vocab = pieces_vocab([doc], (2, 3, 4))
    on, off = Constraint.compile(grammar, vocab), Constraint.compile(grammar, vocab, tuning=NO_CHOICE_WALKS)
    s_on, s_off = on.start(), off.start()
    done = b""
    for tok in greedy_tokens(vocab, doc):
        m_on = s_on.mask()
        if on._table._choice_of(s_on.config) is not None:
            assert np.array_equal(m_on, reference_mask(grammar, vocab, done)), done
        assert np.array_equal(m_on, s_off.mask()), done
        assert s_on.commit_token(tok) and s_off.commit_token(tok)
        done += vocab.token_bytes(tok)
    assert s_on.is_accepting()


def test_choices_inside_walks_on_pieces_that_return() -> None:
    """Choices walked by derivatives past ``,`` or ``[`` inside a token, in a recursive grammar
    whose choices sit inside a callee: on a vocabulary of every byte and every
    piece of two to six bytes of the documents (``,alps]]``, ``bet,[``: tokens that enter a
    choice, leave it and return into the caller), every mask with the choice walks equals the
    mask without them, and the matcher's."""
    grammar = Grammar.from_gbnf(CHOICE_GBNF)
    walked = _byte_by_byte(grammar, pieces_vocab(CHOICE_DOCS), CHOICE_DOCS, EngineTuning(), NO_CHOICE_WALKS)
    assert any(v is not None for c in walked for v in c._table._choice.values()), "no choice was walked"


CLASS_GBNF = """
root ::= "[" day ("," day)* "]"
day ::= "0" [1-9] | [1-2] [0-9] | "3" [0-1] | [ab] [xy] "z" | [\\t ] "w" | [cd]{0,3} "q"
"""
CLASS_DOCS = [b"[01,29,31,axz,byz]", b"[12,\tw, w,30,q,cdcq,09]"]


def test_choice_walks_through_classes_of_several_bytes() -> None:
    """Choices whose live bytes share a class (``[1-2] [0-9]`` of a date's day, ``[\\t ]`` before
    a letter) are walked too, with one derivative per class; a repetition first (``[cd]{0,3}``)
    is not. Byte by byte on a vocabulary of every piece of two to six bytes of the documents,
    masks equal the matcher's and those without choice walks, and classes of several bytes
    make more configurations choosable than classes of one byte."""
    grammar = Grammar.from_gbnf(CLASS_GBNF)
    vocab = pieces_vocab(CLASS_DOCS)
    walked, default = {}, EngineTuning().choice_class
    for widest in (1, default):
        on, off = EngineTuning(choice_class=widest), EngineTuning(choice_class=widest, choice_walks=False)
        done = _byte_by_byte(grammar, vocab, CLASS_DOCS, on, off)
        walked[widest] = sum(v is not None for c in done for v in c._table._choice.values())
    assert default > 1
    assert walked[default] > walked[1] > 0


OPEN_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "tier": {"enum": ["gold", "silver"]}, "n": {"type": "integer"}},
    "required": ["name"],
}
OPEN_DOCS = [b'{"name": "a", "tier": "gold", "n": 3}', b'{"name":"b","tier":"silver","other":[1,{"x":null}]}']


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
def test_choice_walks_with_calls_further_on(vocab_name: str) -> None:
    """An object that allows other keys holds calls (their values are any JSON) in the rest of
    its document, so in the term of every configuration before it. A choice walk steps such a
    term where no call can come first, as the configuration system does (its top's derivative
    alone): along ``realistic_model``'s first instance and two documents of a small open object
    (greedy and short tokens), masks equal those of the walk that keeps every term with a call
    or a set operation out of choice walks (the rule before), and the matcher's where such a
    choice is walked (Llama 2)."""
    from structgen.engine.terms import HAS_POSS, HAS_SETOP, HAS_SYM

    strict = EngineTuning(choice_excludes=HAS_SYM | HAS_POSS | HAS_SETOP)
    vocab = load_vocab(vocab_name)
    grammar, text = _case("realistic_model")
    cases = [(grammar, text), *((Grammar.from_json_schema(OPEN_SCHEMA), doc) for doc in OPEN_DOCS)]
    walked = 0
    for grammar, text in cases:
        for toks in (greedy_tokens(vocab, text), _short_tokens(vocab, text)):
            on, off = Constraint.compile(grammar, vocab), Constraint.compile(grammar, vocab, tuning=strict)
            s_on, s_off = on.start(), off.start()
            for i, tok in enumerate(toks):
                m_on = s_on.mask()
                assert np.array_equal(m_on, s_off.mask()), f"masks differ at step {i}"
                assert s_on.commit_token(tok) and s_off.commit_token(tok)
            store = on._machines.store
            walked += sum(bool(store.flags[top] & HAS_SYM) for (_, top), ok in on._table._choosable.items() if ok)
    assert walked > 0, "no choice with a call further on was walked"
    if vocab_name == "llama-spm":
        assert EngineTuning().choice_excludes == HAS_POSS
        grammar = Grammar.from_json_schema(OPEN_SCHEMA)
        checked = 0
        for doc in OPEN_DOCS:
            c = Constraint.compile(grammar, vocab)
            checked += _masks_against_matcher(c, grammar, vocab, _short_tokens(vocab, doc), c._table._choice_of, 6)
        assert checked > 0


SETOP_SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"enum": ["x", "yy"]},
        "b": {"type": "string", "pattern": "^(alpha|alps|beta|bet)$", "not": {"pattern": "^alp"}},
    },
    "required": ["a", "b"],
    "additionalProperties": False,
}
SETOP_DOCS = [b'{"a": "x", "b": "beta"}', b'{"a":"yy","b":"bet"}']


def test_choice_walks_through_set_operations() -> None:
    """A value with ``not`` is a set operation in the term of every configuration before it,
    and inside the value the choice itself derives through it: after ``"b": "`` the choice
    ``alpha | alps | beta | bet`` less every word starting ``alp`` derives by ``a`` to a term
    that is not NOTHING but has no sentence, which ``TermStore.deriv`` makes NOTHING. On a
    vocabulary of every byte and every piece of two to six bytes of the documents, byte by
    byte, every mask equals the matcher's and the walk's that keeps set operations out of
    choice walks; some choice with a set operation in its term is walked."""
    from structgen.engine.terms import HAS_POSS, HAS_SETOP, HAS_SYM

    grammar = Grammar.from_json_schema(SETOP_SCHEMA)
    vocab = pieces_vocab(SETOP_DOCS)
    walked = 0
    strict = EngineTuning(choice_excludes=HAS_SYM | HAS_POSS | HAS_SETOP)
    for c in _byte_by_byte(grammar, vocab, SETOP_DOCS, EngineTuning(), strict):
        store = c._machines.store
        walked += sum(bool(store.flags[top] & HAS_SETOP) for (_, top), ok in c._table._choosable.items() if ok)
    assert walked > 0, "no choice with a set operation in its term was walked"
