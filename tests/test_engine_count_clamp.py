"""Configurations whose repetition counts differ only above what one token can complete share a
mask (count_clamp.py): masks with the clamp equal masks without it at every step, for arrays and
repeated groups with large ``minItems`` / ``maxItems`` style counts, nested ones, and counts right
at the bound; and the clamp does not cross set operations."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.count_clamp import CountClamp, byte_limits_for, max_byte_count
from structgen.engine.tuning import EngineTuning
from structgen.grammar import ir
from structgen.schema import json_schema_to_grammar

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: every configuration its own twin: each mask computed, none shared
NO_TWINS = EngineTuning(count_twins=False)

SCHEMAS = [
    {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 3}, "maxItems": 30},
    {"type": "array", "items": {"type": "integer"}, "minItems": 12, "maxItems": 40},
    {
        "type": "array",
        "items": {"type": "object", "properties": {"a": {"enum": ["x", "y,z"]}}, "required": ["a"]},
        "minItems": 9,
        "maxItems": 25,
    },
    {"type": "array", "items": {"type": "array", "items": {"enum": [1, 22]}, "maxItems": 14}, "maxItems": 11},
]


def _instances(schema: dict) -> list:
    items = schema["items"]
    lo, hi = schema.get("minItems", 0), schema["maxItems"]
    out = []
    for n in sorted({lo, lo + 1, (lo + hi) // 2, hi - 1, hi}):
        if items.get("type") == "string":
            out.append([("ab", "c,d", 'q"r')[i % 3] for i in range(n)])
        elif items.get("type") == "integer":
            out.append([i * 37 - 5 for i in range(n)])
        elif items.get("type") == "object":
            out.append([{"a": "y,z" if i % 2 else "x"} for i in range(n)])
        else:
            out.append([[1, 22][: i % 3] * (i % 5) for i in range(n)])
    return out


def _walks(constraint: Constraint, texts: list[bytes], vocab) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    masks = []
    for text in texts:
        state = constraint.start()
        for tok in greedy_tokens(vocab, text):
            masks.append(state.mask_words().copy())
            assert state.commit_token(tok)
        masks.append(state.mask_words().copy())
        assert state.is_accepting()
    return masks


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_clamped_masks_equal_exact_masks(vocab_name: str, index: int) -> None:
    vocab = load_vocab(vocab_name)
    schema = SCHEMAS[index]
    grammar = json_schema_to_grammar(schema)
    texts = [
        json.dumps(inst, separators=sep).encode() for inst in _instances(schema) for sep in ((",", ":"), (", ", ": "))
    ]
    fast = Constraint.compile(grammar, vocab)
    got = _walks(fast, texts, vocab)
    assert any(fast._clamp.config(c) != c for c in range(1, len(fast._system.configs))), "nothing was clamped"
    slow = Constraint.compile(grammar, vocab, tuning=NO_TWINS)
    want = _walks(slow, texts, vocab)
    assert len(got) == len(want)
    for step, (a, b) in enumerate(zip(got, want)):
        assert np.array_equal(a, b), f"mask differs at step {step}"


def test_counts_inside_set_operations_are_left_alone() -> None:
    vocab = load_vocab("llama-spm")
    unit = ir.lit("ab,")
    body = ir.Intersection(ir.Repeat(unit, 0, 40), ir.Repeat(ir.ANY_CHAR, 0, 60))
    c = Constraint.compile(Grammar({"root": ir.seq(ir.lit("["), body, ir.lit("]"))}, "root"), vocab)
    state = c.start()
    for tok in greedy_tokens(vocab, b"[ab,ab,"):
        assert state.commit_token(tok)
    assert c._clamp.config(state.config) == state.config
    # the same repetition outside the intersection is clamped
    repeated = ir.seq(ir.lit("["), ir.Repeat(unit, 0, 40), ir.lit("]"))
    plain = Constraint.compile(Grammar({"root": repeated}, "root"), vocab)
    state = plain.start()
    for tok in greedy_tokens(vocab, b"[ab,ab,"):
        assert state.commit_token(tok)
    assert plain._clamp.config(state.config) != state.config


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(min_size=0, max_size=12), min_size=1, max_size=30))
def test_max_byte_count(tokens: list[bytes]) -> None:
    buffer = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    lengths = np.asarray([len(t) for t in tokens])
    for b in sorted(set(b"".join(tokens)) | {0, 44, 255}):
        assert max_byte_count(buffer, lengths, b) == max(t.count(bytes([b])) for t in tokens)


def _nested(depth: int, spaced: bool) -> bytes:
    value: object = {"leaf": "x,y"}
    for i in range(depth):
        value = {"name": f"n{i}", "children": [value, [1, {"k": []}]] if i % 2 else [value]}
    sep = (", ", ": ") if spaced else (",", ":")
    return json.dumps(value, separators=sep).encode()


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
def test_deep_stacks_share_a_twin_and_the_same_masks(vocab_name: str) -> None:
    """Recursive grammars: frames below the deepest one a token can return into are cut from
    the twin; masks along deeply nested documents are unchanged."""
    vocab = load_vocab(vocab_name)
    grammar = json_schema_to_grammar(True)  # any JSON value: recursive
    texts = [_nested(d, spaced) for d in (0, 3, 9, 14) for spaced in (False, True)]
    texts += [b"[" * 12 + b"]" * 12, b'{"a":' * 10 + b"[]" + b"}" * 10]
    fast = Constraint.compile(grammar, vocab)
    got = _walks(fast, texts, vocab)
    system = fast._system
    cut = [sid for sid in range(len(system.stack_top)) if fast._clamp.reach(sid) < len(_chain(system, sid))]
    assert cut, "no stack was deep enough to be cut"
    slow = Constraint.compile(grammar, vocab, tuning=NO_TWINS)
    want = _walks(slow, texts, vocab)
    for step, (a, b) in enumerate(zip(got, want)):
        assert np.array_equal(a, b), f"mask differs at step {step}"


@pytest.mark.parametrize("keep_lengths", [False, True])
def test_twins_built_per_caller_equal_frame_by_frame(keep_lengths: bool) -> None:
    """A twin's frames below the top are built once per caller chain and shared by every
    configuration of that call; the twins are the ones a rebuild of each stack's kept frames,
    frame by frame, gives (the construction before the chains were shared)."""
    vocab = load_vocab("llama-bpe")
    tree = json.loads((ROOT / "schemas" / "tree.json").read_text())

    def node(depth: int) -> dict:
        return {"name": "n", "value": 1, "children": [node(depth - 1)] if depth else []}

    for grammar, text in (
        (json_schema_to_grammar(tree), json.dumps(node(9)).encode()),
        (json_schema_to_grammar(True), _nested(12, True)),
    ):
        c = Constraint.compile(grammar, vocab)
        _walks(c, [text], vocab)
        system = c._system
        shared = CountClamp(system, lambda: byte_limits_for(vocab), keep_lengths=keep_lengths)
        rebuilt = CountClamp(system, lambda: byte_limits_for(vocab), keep_lengths=keep_lengths)
        stacks = [sid for sid in range(len(system.stack_top)) if system.stack_parent[sid] >= -1]
        assert max(len(_chain(system, sid)) for sid in stacks) > 8
        for sid in stacks:
            chain = _chain(system, sid)
            kept = chain[: len(chain) if keep_lengths else rebuilt.reach(sid)]
            want = -1
            for v in reversed(kept):
                want = system.stack(want, rebuilt.term(system.stack_top[v]))
            assert shared._clamp_stack(sid) == want


def _chain(system, sid: int) -> list[int]:  # type: ignore[no-untyped-def]
    out = []
    while sid >= 0:
        out.append(sid)
        sid = system.stack_parent[sid]
    return out


def _budget_figures(constraint: Constraint, texts: list[bytes], vocab) -> list[tuple]:  # type: ignore[no-untyped-def]
    out = []
    for text in texts:
        state = constraint.start()
        for tok in greedy_tokens(vocab, text):
            ids, need = constraint._after(state.config)
            order = np.lexsort((need, ids))
            out.append((ids[order], need[order], state.mask_words(budget=12).copy()))
            assert state.commit_token(tok)
    return out


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_budget_twins_keep_tokens_and_shortest_completions(vocab_name: str, index: int) -> None:
    """Budget masks use twins with only the upper counts clamped: the same tokens, and the same
    shortest completion after each, as the configuration itself."""
    vocab = load_vocab(vocab_name)
    schema = SCHEMAS[index]
    grammar = json_schema_to_grammar(schema)
    texts = [json.dumps(inst, separators=(",", ":")).encode() for inst in _instances(schema)]
    fast = Constraint.compile(grammar, vocab)
    got = _budget_figures(fast, texts, vocab)
    configs = range(1, len(fast._system.configs))
    assert any(fast._budget_clamp.config(c) != c for c in configs), "nothing was clamped"
    slow = Constraint.compile(grammar, vocab, tuning=NO_TWINS)
    want = _budget_figures(slow, texts, vocab)
    assert len(got) == len(want)
    for step, (a, b) in enumerate(zip(got, want)):
        for x, y in zip(a, b):
            assert np.array_equal(x, y), f"budget figures differ at step {step}"


def _toy_vocab(extra: list[bytes]):  # type: ignore[no-untyped-def]
    from structgen import Vocab

    tokens = [bytes([b]) for b in range(256)] + extra
    return Vocab(tokens, eos_token_ids=[], special_token_ids=[])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(st.sampled_from(['"a"', '"bc"', '""', ",", '"', "a", "]", "[", ' "a"']), min_size=1, max_size=9).map(
            lambda parts: "".join(parts).encode()
        ),
        min_size=1,
        max_size=12,
    ),
    st.integers(0, 5),
    st.integers(5, 14),
)
@example([b'"a","a","', b',"a","a","', b'"a","bc"'], 2, 12)
def test_clamp_bound_counts_copies_per_unit(extra: list[bytes], lo: int, hi: int) -> None:
    """An item of an array of strings holds two quotes: a token with ``2k`` quotes holds at most
    ``k`` whole items, which is what the bound counts. Tokens built from whole items, commas and
    stray quotes, at every count of a ``minItems``/``maxItems`` array: masks with the clamp
    equal masks without it."""
    vocab = _toy_vocab(sorted(set(extra)))
    schema = {"type": "array", "items": {"type": "string", "maxLength": 2}, "minItems": lo, "maxItems": hi}
    grammar = json_schema_to_grammar(schema)
    texts = [json.dumps([("a", "bc", "")[i % 3] for i in range(n)]).encode() for n in range(lo, hi + 1)]
    texts += [json.dumps(["a"] * n, separators=(",", ":")).encode() for n in (lo, hi)]
    fast = Constraint.compile(grammar, vocab)
    got = _walks(fast, texts, vocab)
    exact = Constraint.compile(grammar, vocab)
    exact._clamp.config = lambda cid: cid  # type: ignore[method-assign]
    want = _walks(exact, texts, vocab)
    assert len(got) == len(want)
    for step, (a, b) in enumerate(zip(got, want)):
        assert np.array_equal(a, b), f"mask differs at step {step}"


def _rewritten_everywhere(clamp: CountClamp, t: int) -> int:
    """The clamp's rewrite without skipping terms that hold no count: every sequence and choice
    visited (a reference for the ``HAS_COUNT`` shortcut)."""
    from structgen.engine.terms import ALT_K, REPEAT_K, SEQ_K

    s = clamp.s
    memo: dict[int, int] = {}

    def go(u: int) -> int:
        if u in memo:
            return memo[u]
        k = s.kind[u]
        if k == SEQ_K:
            a, b = go(s.a[u]), go(s.b[u])  # type: ignore[arg-type]
            r = u if (a, b) == (s.a[u], s.b[u]) else s.seq(a, b)
        elif k == ALT_K:
            ops = [go(v) for v in s.b[u]]  # type: ignore[union-attr]
            r = u if ops == list(s.b[u]) else s.alt(ops)  # type: ignore[arg-type]
        elif k == REPEAT_K:
            r = clamp._clamp_repeat(u)
        else:
            r = u
        memo[u] = r
        return r

    return go(t)


@pytest.mark.parametrize("schema_name", ["realistic_model", "tool_call", "any_json", "enum"])
def test_terms_without_counts_are_left_as_they_are(schema_name: str) -> None:
    """The clamp skips terms whose ``HAS_COUNT`` flag is clear (a key, an enum value): its
    rewrite of every stack top met along a document equals rewriting every sequence and choice,
    and the flag is set exactly where a repetition counted above 1 is below."""
    from structgen.engine.terms import HAS_COUNT, REPEAT_K

    sys.path.insert(0, str(ROOT))  # the benchmark's schemas and their instances
    from benchmarks.inputs import load_named_schemas, serialise

    vocab = load_vocab("llama-bpe")
    case = next(c for c in load_named_schemas([schema_name]))
    constraint = Constraint.compile(Grammar.from_json_schema(case.schema), vocab)
    system = constraint._system
    tops: set[int] = set()
    for inst in case.instances[:2]:
        state = constraint.start()
        for tok in greedy_tokens(vocab, serialise(inst, "default").encode()):
            state.mask_words()
            tops.update(system.stack_top[sid] for sid in system.configs[state.config])
            assert state.commit_token(tok)
    # a fresh clamp once the walks have built what they reach: its bounds are final for both
    # (a clamp's memo keeps rewrites made while a lazy rule was unbuilt, which are sound too)
    clamp = CountClamp(system, lambda: byte_limits_for(vocab))
    for top in sorted(tops):
        assert clamp.term(top) == _rewritten_everywhere(clamp, top), top
    s = system.store
    for t in range(len(s)):
        below = [t]
        counted = False
        seen: set[int] = set()
        while below and not counted:
            u = below.pop()
            if u in seen:
                continue
            seen.add(u)
            if s.kind[u] == REPEAT_K:
                lo, hi = s.b[u]  # type: ignore[misc]
                counted = lo > 1 or (hi is not None and hi > 1)
            below.extend(s.operands(u))
        assert bool(s.flags[t] & HAS_COUNT) == counted, t
