"""Splits before a word: a configuration of one stack at the bottom, ``h R`` with ``R`` starting at
a word (an object's next key), is walked as ``h`` over the hole standing for ``R``, its exits
stepped from a frame holding ``R`` (``Constraint._spine_split``). The walk of ``h`` is shared by
every key whose value has the same type. The masks must be the ones the plain walk gives, and
the byte-level matcher's; commits are not touched."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab, pieces_vocab, reference_mask, walk_against_matcher

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.tuning import EngineTuning
from structgen.grammar import ir

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: The split is made where the next key of an object is a word: in objects with one key order.
#: Small objects take any order by default, where the tail after a key is a choice of the keys
#: left (split only before the first); these tests pin the order.
FIXED_ORDER = {"any_order_up_to": 0, "any_order_required_up_to": 0}


def _schema(name: str) -> dict:
    return json.loads((ROOT / "schemas" / f"{name}.json").read_text())


def _instances(name: str, count: int) -> list[object]:
    lines = (ROOT / "schemas" / "instances" / f"{name}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines[:count]]


def _texts(name: str, count: int) -> list[str]:
    out = []
    for value in _instances(name, count):
        out.append(json.dumps(value))
        out.append(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    return out


NO_SPLIT = EngineTuning(spine_split=False)


def _compare(grammar: Grammar, vocab, texts: list[str]) -> Constraint:  # type: ignore[no-untyped-def]
    """Masks and commits with the split against without, along ``texts``; the constraint that
    split. Both constraints live through all texts, so later texts meet shared heads."""
    on, off = Constraint.compile(grammar, vocab), Constraint.compile(grammar, vocab, tuning=NO_SPLIT)
    for text in texts:
        s_on, s_off = on.start(), off.start()
        for i, tok in enumerate(greedy_tokens(vocab, text.encode())):
            m_on = s_on.mask_words().copy()
            ok = s_on.commit_token(tok)
            assert np.array_equal(m_on, s_off.mask_words()), f"masks differ at token {i} of {text[:60]!r}"
            assert ok and s_off.commit_token(tok)
            assert s_on.is_accepting() == s_off.is_accepting()
        assert s_on.is_accepting() and s_off.is_accepting()
    return on


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
@pytest.mark.parametrize("name", ["wide_object", "tool_call", "realistic_model", "constrained"])
def test_splits_equal_the_plain_walk(name: str, vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    on = _compare(Grammar.from_json_schema(_schema(name), **FIXED_ORDER), vocab, _texts(name, 2))
    splits = [v for v in on._spine.values() if v is not None]
    assert splits, "no top was split"
    assert on._relative, "no walk over the hole was made"


def test_heads_are_shared_by_keys_of_one_type() -> None:
    """The head after each key of a ``number`` property is one term, so its walk over the hole
    is made once: four such keys in a row add one relative walk, not four. The keys in one
    order: in any order (small objects by default) the tail after a key is a choice of the keys
    left, which is not split after the first."""
    vocab = load_vocab("llama-bpe")
    schema = {
        "type": "object",
        "properties": {k: {"type": "number"} for k in ("alpha", "bravo", "charlie", "delta")},
        "required": ["alpha", "bravo", "charlie", "delta"],
        "additionalProperties": False,
    }
    c = Constraint.compile(Grammar.from_json_schema(schema, **FIXED_ORDER), vocab)
    state = c.start()
    heads_at: dict[str, set[int]] = {}
    text = json.dumps({"alpha": 1.5, "bravo": 2.5, "charlie": 3.5, "delta": 4.5})
    done = b""
    for tok in greedy_tokens(vocab, text.encode()):
        state.mask_words()
        for key in ("alpha", "bravo", "charlie"):
            if done.endswith(f'"{key}'.encode()):
                split = c._spine.get(c._system.stack_top[c._system.configs[state.config][0]])
                assert split is not None, f"after {key!r}: no split"
                heads_at.setdefault("after key", set()).add(split[0])
        assert state.commit_token(tok)
        done += vocab.token_bytes(tok)
    assert len(heads_at["after key"]) == 1, "the keys' heads differ"


def test_splits_equal_the_matcher() -> None:
    """At every second step of an object whose values repeat their types, against the
    byte-level matcher (Llama 2: byte tokens and pieces that cross the split)."""
    vocab = load_vocab("llama-spm")
    schema = {
        "type": "object",
        "properties": {
            "first": {"type": "integer"},
            "second": {"type": "integer"},
            "third": {"type": "boolean"},
            "fourth": {"type": "boolean"},
            "fifth": {"type": "string", "maxLength": 5},
            "sixth": {"type": "string", "maxLength": 5},
        },
        "required": ["first", "second", "third", "fourth"],
    }
    grammar = Grammar.from_json_schema(schema, **FIXED_ORDER)
    c = Constraint.compile(grammar, vocab)
    text = json.dumps({"first": 12, "second": -3, "third": True, "fourth": False, "fifth": "ab", "sixth": "x"})
    walk_against_matcher(c, grammar, vocab, text.encode(), every=2)
    assert any(v is not None for v in c._spine.values())


PIECES_SCHEMA = {
    "type": "object",
    "properties": {
        "abc": {"type": "integer"},
        "cde": {"type": "integer"},
        "efg": {"type": "boolean"},
        "hij": {"type": "boolean"},
        "klm": {"type": "string", "pattern": "^[a-z]{1,3}$"},
        "nop": {"type": "string", "maxLength": 3},
        "qrs": {"type": "string", "pattern": "^[a-z]{1,3}$"},
    },
    "required": ["abc", "cde", "efg", "hij", "klm", "nop", "qrs"],
    "additionalProperties": False,
}
PIECES_DOCS = [
    b'{"abc": 12, "cde": 3, "efg": true, "hij": false, "klm": "xy", "nop": "", "qrs": "z"}',
    b'{"abc":-4,"cde":56,"efg":false,"hij":true,"klm":"ab","nop":"q","qrs":"c"}',
]


def _byte_by_byte(
    schema: dict = PIECES_SCHEMA,  # type: ignore[type-arg]
    docs: list[bytes] = PIECES_DOCS,
    tuning: EngineTuning = EngineTuning(),
) -> Constraint:
    """``docs`` byte by byte on a vocabulary of every byte and every piece of two to eight
    bytes of them, with the split (under ``tuning``) against the plain walk and the matcher."""
    grammar = Grammar.from_json_schema(schema, **FIXED_ORDER)
    vocab = pieces_vocab(docs, (2, 3, 4, 5, 6, 7, 8))
    on = Constraint.compile(grammar, vocab, tuning=tuning)
    off = Constraint.compile(grammar, vocab, tuning=NO_SPLIT)
    for doc in docs:
        s_on, s_off = on.start(), off.start()
        for i in range(len(doc)):
            m_on = s_on.mask()
            assert np.array_equal(m_on, reference_mask(grammar, vocab, doc[:i])), doc[:i]
            assert np.array_equal(m_on, s_off.mask()), doc[:i]
            assert s_on.commit_token(doc[i]) and s_off.commit_token(doc[i])
    return on


def test_splits_with_tokens_that_cross_into_the_word() -> None:
    """Tokens such as ``1, "cd``, ``": fa`` and ``,"nop"`` leave the head and read the next key:
    their exits are stepped from the tail. Heads are shared across the keys of one type, so
    exits are stepped from tails they were not first walked with."""
    on = _byte_by_byte()
    assert any(e for _, e in on._relative.values()), "no walk over the hole left an exit"
    splits = [v for v in on._spine.values() if v is not None]
    assert len({head for head, _ in splits}) < len(splits), "no head was shared"


OPTIONAL_SCHEMA = {
    "type": "object",
    "properties": {
        "abc": {"type": "integer"},
        "abd": {"type": "boolean"},
        "xyz": {"type": "string", "maxLength": 3},
        "xyw": {"enum": ["p", "q"]},
    },
    "additionalProperties": False,
}
OPTIONAL_DOCS = [
    b'{"abc": 1, "abd": true, "xyw": "q"}',
    b'{"abd":false,"xyz":"ab"}',
    b'{"xyz": "", "xyw": "p"}',
    b"{}",
]


@pytest.mark.parametrize("enter_by_choice", [True, False])
def test_splits_before_a_choice_of_words(enter_by_choice: bool) -> None:
    """Optional keys: after a comma the next key is a choice (``abd`` or ``xyz`` or ``xyw``),
    and the top is split before it (``EngineTuning.spine_choices``) like before one word. Tokens such as
    ``1, "ab`` leave the shared head and enter the choice, by its derivatives and along its
    literals (``TransitionTable._enter_by_choice``, ``_enter_literal``) or, off, by the
    tail's table row: masks equal the plain walk's and the matcher's either way."""
    from structgen.engine.terms import ALT_K

    on = _byte_by_byte(OPTIONAL_SCHEMA, OPTIONAL_DOCS, EngineTuning(enter_by_choice=enter_by_choice))
    store = on._machines.store
    splits = [v for v in on._spine.values() if v is not None]
    choices = [rest for _, rest in splits if store.kind[store.a[rest]] == ALT_K]
    assert choices, "no top was split before a choice of words"
    assert any(e for _, e in on._relative.values()), "no walk over the hole left an exit"
    stats = on.stats()
    entered = (stats["entered_by_choice"], stats["entered_literal"])
    if enter_by_choice:
        assert min(entered) > 0, entered
    else:
        assert entered == (0, 0)


def test_heads_with_many_exits_are_refused() -> None:
    """A head whose first walk over the hole leaves more live exits than
    ``EngineTuning.spine_exits`` is walked as it is from then on; with the threshold at 0 every
    head with a live exit is refused, and the masks stay the plain walk's and the matcher's."""
    assert _byte_by_byte(tuning=EngineTuning(spine_exits=0))._spine_refused, "no head left a live exit"


def test_greedy_heads_are_not_split() -> None:
    """A greedy lexeme before the word may end only where the word's first byte cannot extend
    it: the split would decide that without the word. Such a top is not split, and the masks
    equal the matcher's."""
    vocab = load_vocab("llama-spm")
    word = ir.Lexeme(ir.plus(ir.char((97, 122))))
    grammar = Grammar(
        {"root": ir.seq(ir.lit("("), word, ir.lit(")"), ir.lit(" "), ir.lit("end"), ir.star(ir.lit("!")))},
        "root",
    )
    c = Constraint.compile(grammar, vocab)
    walk_against_matcher(c, grammar, vocab, b"(abc) end!!")
    top = c._system.stack_top[c._system.configs[c.start_config][0]]
    assert c._spine.get(top) is None


def test_counted_strings_between_split_keys_equal_the_plain_walk() -> None:
    """Counted strings at the bottom (``pattern: ^[A-Z]{3}$``, ``maxLength``, UUIDs) between keys
    whose tops are split before the next word: the masks are the plain walk's."""
    schema = {
        "type": "object",
        "properties": {
            "origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "comment": {"type": "string", "maxLength": 40},
            "remark": {"type": "string", "maxLength": 40},
            "first_id": {"type": "string", "format": "uuid"},
            "second_id": {"type": "string", "format": "uuid"},
        },
        "required": ["origin", "destination", "comment", "remark", "first_id", "second_id"],
        "additionalProperties": False,
    }
    value = {
        "origin": "SFO",
        "destination": "NRT",
        "comment": "window seat",
        "remark": "über",
        "first_id": "1c6e3a52-9f7b-4d8e-a1b2-c3d4e5f60718",
        "second_id": "9b2e6c1a-4f3d-4a5b-8c7d-0e1f2a3b4c5d",
    }
    texts = [json.dumps(value), json.dumps(value, separators=(",", ":"), ensure_ascii=False)]
    on = _compare(Grammar.from_json_schema(schema, **FIXED_ORDER), load_vocab("llama-bpe"), texts)
    assert any(entry is not None for entry in on._counted.values()), "no count took the counted path"
