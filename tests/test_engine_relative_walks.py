"""Walks over the hole: a configuration of one stack over a caller is walked once per top term,
with the caller left out, and the walk's exits (bytes that return into the caller) are stepped
from the real caller (``Constraint._relative_words``). The masks must be the ones a walk of the
configuration itself gives, and the byte-level matcher's, whatever the nesting; the walk is
shared by every depth of a recursive document."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from engine_support import (
    greedy_tokens,
    json_grammar,
    load_vocab,
    pieces_vocab,
    reference_mask,
    walk_against_matcher,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.tuning import EngineTuning
from structgen.grammar import ir
from structgen.schema import json_schema_to_grammar

ROOT = pathlib.Path(__file__).resolve().parent.parent
A, L = ir.Ref, ir.lit


def _tree_grammar() -> Grammar:
    return json_schema_to_grammar(json.loads((ROOT / "schemas" / "tree.json").read_text()))


def _node(depth: int, spaced: bool = True) -> dict:
    kids = [_node(depth - 1, spaced)] if depth > 1 else []
    return {"name": f"n{depth}", "value": -depth * 1.5, "children": kids}


def _ambiguous_grammar() -> Grammar:
    """Items that may end or go on with the same byte (``ab`` is one item or two), so that a
    return into the caller and a step inside the callee happen on one byte."""
    return Grammar(
        {
            "root": ir.star(A("item")),
            "item": ir.alt(ir.plus(ir.char((97, 122))), ir.seq(L("("), ir.star(A("item")), L(")"))),
        },
        "root",
    )


def _lexeme_grammar() -> Grammar:
    """A greedy terminal at the end of a callee: it may return only where the next byte cannot
    extend it, a lookahead the return into the hole must respect."""
    word = ir.Lexeme(ir.plus(ir.char((97, 122))))
    return Grammar(
        {
            "root": A("item"),
            "item": ir.alt(word, ir.seq(L("("), A("item"), ir.star(ir.seq(L(" "), A("item"))), L(")"))),
        },
        "root",
    )


GRAMMARS = {
    "json": (
        json_grammar,
        json.dumps({"a": [1, {"b": [[], {}, "x\\"], "c": {"d": [-2.5e3, True, None]}}], "e": "f"}),
    ),
    "tree": (_tree_grammar, json.dumps(_node(5))),
    "ambiguous": (_ambiguous_grammar, "ab(cd(e)f(g(h)))ij((k))"),
    "lexeme": (_lexeme_grammar, "(ab (cd (ef gh) i) (j))"),
}


def _masks_both_ways(  # type: ignore[no-untyped-def]
    grammar: Grammar, vocab, text: str, *, used: bool = True
) -> list[tuple[np.ndarray, np.ndarray]]:
    on = Constraint.compile(grammar, vocab)
    off = Constraint.compile(grammar, vocab, tuning=EngineTuning(relative_walks=False))
    s_on, s_off = on.start(), off.start()
    out = []
    for tok in greedy_tokens(vocab, text.encode()):
        m_on = s_on.mask()
        m_off = s_off.mask()
        out.append((m_on, m_off))
        assert s_on.commit_token(tok) and s_off.commit_token(tok)
    assert on._relative_masks.relative or not used, "the relative walks were not used"
    return out


@pytest.mark.parametrize("vocab_name", ["llama-spm", "llama-bpe"])
@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_relative_walks_equal_direct_walks(name: str, vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    make, text = GRAMMARS[name]
    for i, (m_on, m_off) in enumerate(_masks_both_ways(make(), vocab, text)):
        assert np.array_equal(m_on, m_off), f"{name}: masks differ at step {i}"


@pytest.mark.parametrize("name", ["ambiguous", "lexeme"])
def test_relative_walks_equal_the_matcher(name: str) -> None:
    vocab = load_vocab("llama-spm")
    make, text = GRAMMARS[name]
    grammar = make()
    walk_against_matcher(Constraint.compile(grammar, vocab), grammar, vocab, text.encode(), every=3, first=1)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-999, 999) | st.text('ab "\\é', max_size=4),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text("xyz", max_size=2), kids, max_size=3),
    max_leaves=12,
)


@settings(max_examples=12, deadline=None)
@given(value=_JSON, compact=st.booleans())
def test_relative_walks_on_random_json(value: object, compact: bool) -> None:
    text = json.dumps(value, separators=(",", ":") if compact else None, ensure_ascii=False)
    for m_on, m_off in _masks_both_ways(json_grammar(), load_vocab("llama-spm"), text, used=False):
        assert np.array_equal(m_on, m_off)


def test_deeper_nodes_walk_nothing_new() -> None:
    """Every node of a tree below the first ones reuses the walks made for them: a document
    five levels deeper adds no relative walk and no configuration above the hole."""
    vocab = load_vocab("llama-bpe")
    c = Constraint.compile(_tree_grammar(), vocab)

    def walk(doc: dict) -> None:
        state = c.start()
        for tok in greedy_tokens(vocab, json.dumps(doc).encode()):
            state.mask()
            assert state.commit_token(tok)

    walk(_node(3))
    walks, relative_configs = len(c._relative_masks.relative), _configs_over_the_hole(c)
    walk(_node(8))
    assert len(c._relative_masks.relative) == walks
    assert _configs_over_the_hole(c) == relative_configs


def _configs_over_the_hole(c: Constraint) -> int:
    system = c._system

    def bottom(sid: int) -> int:
        while system.stack_parent[sid] >= 0:
            sid = system.stack_parent[sid]
        return sid

    return sum(1 for stacks in system.configs if stacks and bottom(stacks[0]) == system.hole)


def test_saved_constraint_goes_on_with_relative_walks() -> None:
    vocab = load_vocab("llama-spm")
    grammar = json_grammar()
    text = json.dumps([[1, {"a": [2]}], {"b": [[3], {"c": "d"}]}]).encode()
    toks = greedy_tokens(vocab, text)
    c = Constraint.compile(grammar, vocab)
    state = c.start()
    for tok in toks[: len(toks) // 2]:
        state.mask()
        assert state.commit_token(tok)
    loaded = Constraint.load(c.save(), vocab)
    fresh = Constraint.compile(grammar, vocab)
    a, b = loaded.start(), fresh.start()
    for tok in toks:
        assert np.array_equal(a.mask(), b.mask())
        assert a.commit_token(tok) and b.commit_token(tok)


#: Strings between keys in one order (small objects take any order by default): each string's
#: body and closing quote is walked over a frame holding the rest (``EngineTuning.loop_split``).
FIXED_ORDER = {"any_order_up_to": 0, "any_order_required_up_to": 0}
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
        "tuv": {"type": "string"},
        "wxy": {"type": "string"},
    },
    "required": ["abc", "cde", "efg", "hij", "klm", "nop", "qrs", "tuv", "wxy"],
    "additionalProperties": False,
}
PIECES_DOCS = [
    b'{"abc": 12, "cde": 3, "efg": true, "hij": false, "klm": "xy", "nop": "", "qrs": "z", "tuv": "a b", "wxy": ""}',
    b'{"abc":-4,"cde":56,"efg":false,"hij":true,"klm":"ab","nop":"q","qrs":"c","tuv":"","wxy":"x\\\\"}',
]


def _byte_by_byte(schema: dict, docs: list[bytes], tuning: EngineTuning = EngineTuning()) -> Constraint:  # type: ignore[type-arg]
    """``docs`` byte by byte on a vocabulary of every byte and every piece of two to eight
    bytes of them, under ``tuning`` against the walk without walks over the hole and against
    the matcher: tokens such as ``xy", "no`` leave a string's head and read the rest."""
    grammar = Grammar.from_json_schema(schema, **FIXED_ORDER)
    vocab = pieces_vocab(docs, (2, 3, 4, 5, 6, 7, 8))
    on = Constraint.compile(grammar, vocab, tuning=tuning)
    off = Constraint.compile(grammar, vocab, tuning=EngineTuning(relative_walks=False))
    for doc in docs:
        s_on, s_off = on.start(), off.start()
        for i in range(len(doc)):
            m_on = s_on.mask()
            assert np.array_equal(m_on, reference_mask(grammar, vocab, doc[:i])), doc[:i]
            assert np.array_equal(m_on, s_off.mask()), doc[:i]
            assert s_on.commit_token(doc[i]) and s_off.commit_token(doc[i])
        assert s_on.is_accepting() and s_off.is_accepting()
    return on


def test_split_heads_with_tokens_that_cross_into_the_rest() -> None:
    """Heads are shared by every string of one kind, so exits are stepped from rests they were
    not first walked with."""
    on = _byte_by_byte(PIECES_SCHEMA, PIECES_DOCS)
    assert any(e for _, e in on._relative_masks.relative.values()), "no walk over the hole left an exit"
    splits = [v for v in on._relative_masks._loops.values() if v is not None]
    assert len({head for head, _ in splits}) < len(splits), "no head was shared"


def test_heads_with_many_exits_are_refused() -> None:
    """A head whose first walk over the hole leaves more live exits than
    ``EngineTuning.split_exits`` is walked as it is from then on; with the threshold at 0 every
    head with a live exit is refused, and the masks stay the plain walk's and the matcher's."""
    assert _byte_by_byte(PIECES_SCHEMA, PIECES_DOCS, EngineTuning(split_exits=0))._relative_masks.spine_refused
