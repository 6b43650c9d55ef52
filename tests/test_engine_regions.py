"""Loop regions and what masks reuse from them (loop_regions.py, table.py, counters.py).

* A trimmed region (the walk from a configuration one byte before a loop) cuts slices out of the
  region's sorted positions and exits: it equals filtering every position and exit one by one.
* Whether every multi-byte character loops is decided from the terms where the configuration is
  a plain ``u* t`` loop: the answer equals stepping each character through the table.
* A counted-mask base sorts a few ids itself and selects many from the vocabulary's order: both
  give the same sorted base.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from engine_support import greedy_tokens, json_grammar, load_vocab
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.engine import Constraint
from structgen.engine import counters as counters_mod
from structgen.engine.arrays import mask_to_bools
from structgen.engine.loop_regions import loop_region
from structgen.engine.trie_cache import token_trie_for
from structgen.engine.tuning import EngineTuning

STRING_BODY = sum(1 << b for b in range(0x20, 0x80) if b not in (0x22, 0x5C))


def _trimmed_by_filtering(region, trie, differ: int):  # type: ignore[no-untyped-def]
    """The trimmed region computed position by position and exit by exit."""
    differs = mask_to_bools(differ)
    drop = [n for n, b in enumerate(trie.level_byte[0].tolist()) if differs[b]]
    runs = [(int(trie.run_start[0][n]), int(trie.run_end[0][n])) for n in drop]

    def under_dropped(position: int) -> bool:
        return any(a <= position < b for a, b in runs)

    positions = [p for p in region.positions.tolist() if not under_dropped(p)]
    exits = {}
    for k, (nodes, byts) in region.exits.items():
        if k == 0:
            kept = [(n, b) for n, b in zip(nodes.tolist(), byts.tolist()) if not differs[b]]
        else:
            kept = [
                (n, b) for n, b in zip(nodes.tolist(), byts.tolist()) if not under_dropped(int(trie.run_start[k][n]))
            ]
        exits[k] = kept
    level0 = exits.get(0, []) + [(n, int(trie.level_byte[0][n])) for n in drop]
    exits[0] = sorted(level0)
    return positions, exits


@pytest.mark.parametrize("vocab_name", ["llama-spm", "llama-bpe"])
def test_trimmed_region_equals_filtering(vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    trie = token_trie_for(vocab)
    region = loop_region(trie, STRING_BODY, True, chars=True)
    assert np.all(np.diff(region.positions) > 0)
    rng = np.random.default_rng(7)
    for size in (1, 3, 12, 40):
        differ = 0
        for b in rng.choice(np.arange(0x20, 0x80), size=size, replace=False).tolist():
            differ |= 1 << b
        trimmed = region._without_children(trie, differ)
        positions, exits = _trimmed_by_filtering(region, trie, differ)
        assert trimmed.positions.tolist() == positions
        kept = np.isin(region.positions, trimmed.positions)
        assert np.array_equal(trimmed.slack, region.slack[kept])
        for k in set(exits) | set(trimmed.exits):
            got = list(zip(*(a.tolist() for a in trimmed.exits.get(k, (np.zeros(0), np.zeros(0))))))
            assert got == exits.get(k, []), f"level {k}"
            want_bits = 0
            for _, b in exits.get(k, []):
                want_bits |= 1 << b
            if k in trimmed.exit_bytes:
                assert trimmed.exit_bytes[k] == want_bits, f"exit bytes of level {k}"
        # the packed mask of the trimmed region is its positions' tokens
        words = trimmed.words(trie, vocab.logit_width)
        allowed = np.unpackbits(words.view(np.uint8), bitorder="little")[: vocab.logit_width].astype(bool)
        assert np.array_equal(np.flatnonzero(allowed), np.sort(trie.sorted_ids[trimmed.positions]))


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "code": {"type": "string", "pattern": "^[A-Z]{2}[a-zé]*$"},
        "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "n": {"type": "number"},
    },
}
DOC = json.dumps(
    {"name": 'Zoë "Z" \\ é', "code": "ABéa", "tags": ["ü", "x y", "\u0001"], "n": -1.5e3, "other": "日本"},
    ensure_ascii=False,
)


@pytest.mark.parametrize("which", ["json", "schema"])
def test_characters_loop_from_terms_equals_stepping(which: str) -> None:
    from structgen.schema import json_schema_to_grammar

    vocab = load_vocab("llama-bpe")
    if which == "json":
        grammar, text = json_grammar(), json.dumps({"a": ["Zoë", "\\n", 1.5], "b": {"c": "日本"}}, ensure_ascii=False)
    else:
        grammar, text = json_schema_to_grammar(SCHEMA), DOC
    c = Constraint.compile(grammar, vocab)
    state = c.start()
    decided = 0
    for tok in greedy_tokens(vocab, text.encode()):
        state.mask()
        table = c._table
        # every configuration the walks met so far, not only the states of the document
        for cid in range(1, len(c._system.configs)):
            fast = c._system.characters_loop(cid)
            if fast is not None:
                decided += 1
                assert fast == table.utf8_loop_stepped(cid), f"configuration {cid}"
        assert state.commit_token(tok)
    assert decided > 0


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 400).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(-1, 9), min_size=n, max_size=n),
            st.lists(st.integers(-1, 9), min_size=n, max_size=n),
            st.integers(1, n),
        )
    )
)
def test_counted_base_sorting_paths_agree(case) -> None:  # type: ignore[no-untyped-def]
    stay, leave, cut = case
    counts = counters_mod.UnitCounts(np.asarray(stay, dtype=np.int32), np.asarray(leave, dtype=np.int32))
    ids = np.random.default_rng(len(stay)).permutation(len(stay))[:cut].astype(np.int64)
    small = counters_mod.counted_base(ids, counts)
    large = counters_mod.counted_base(ids, counts, small_base=-1)  # every size through the vocabulary's order
    for field in ("stay_ids", "stay_units", "leave_ids", "leave_units"):
        assert np.array_equal(getattr(small, field), getattr(large, field)), field


@pytest.mark.parametrize("vocab_name", ["llama-spm", "llama-bpe"])
def test_begun_unit_counts_spliced_equal_walked(vocab_name: str) -> None:
    """Counts from a begun unit (after a backslash, inside ``\\u00e``, after a character's first
    byte) taken from the boundary counts below where the unit completes equal those of walking
    every token from the begun state."""
    from structgen.schema import json_schema_to_grammar

    vocab = load_vocab(vocab_name)
    trie = token_trie_for(vocab)
    c = Constraint.compile(json_schema_to_grammar({"type": "string", "maxLength": 50, "pattern": "^[^x]*$"}), vocab)
    state = c.start()
    for tok in greedy_tokens(vocab, '"é\\u00e9'.encode()):
        state.mask()
        assert state.commit_token(tok)
    state.mask()
    units = list(c._counted_masks.automata)
    assert units, "no counted unit met"
    checked = 0
    for unit in units:
        auto = c._counted_masks.automata[unit]
        if auto is None:
            continue
        root = counters_mod._count_units(auto.table, trie, 0)
        for start in range(1, auto.table.shape[0]):
            spliced = counters_mod._count_units(auto.table, trie, start, root)
            walked = counters_mod._count_units(auto.table, trie, start)
            assert np.array_equal(spliced.stay, walked.stay), f"stay from state {start}"
            assert np.array_equal(spliced.leave, walked.leave), f"leave from state {start}"
            checked += 1
    assert checked >= 5


RUN_SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {"type": "object", "properties": {"c": {"type": "string"}}},
    },
}
RUN_DOCS = [
    json.dumps({"a": [1, 22, 333], "b": {"c": "x y", "d": [True, None]}}, indent=indent)
    for indent in (None, 2, 4, "\t", 15, 16, 17, 30, 31, 32, 33)
] + ['{"a":\n\n[1]}', '{"a":\r\n' + " " * 40 + "[]}", '{"a":\n' + " \t" * 16 + "[]}"]


def _masks_and_figures(constraint, vocab, docs: list[str]) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Along each document: the packed mask and the budget figures (ids with the bytes their
    shortest completions need, sorted) at every step; a refused token ends that document."""
    out: list[tuple] = []
    for doc in docs:
        state = constraint.start()
        for tok in greedy_tokens(vocab, doc.encode()):
            ids, need = constraint._after(state.config)
            order = np.lexsort((need, ids))
            out.append((state.mask_words().copy(), ids[order], need[order]))
            if not state.commit_token(tok):
                out.append(("refused", tok))
                break
    return out


def _whitespace_vocab():  # type: ignore[no-untyped-def]
    """Every byte, every run of 1-40 spaces or tabs, a newline before each, and some JSON."""
    from structgen import Vocab

    tokens = [bytes([b]) for b in range(256)]
    for n in range(2, 41):
        tokens += [b" " * n, b"\t" * n, b"\n" + b" " * n, b"\n" + b"\t" * (n // 2) + b" " * (n - n // 2)]
        tokens += [b" " * n + b'"', b"\n" + b" " * n + b'"c', b" " * n + b"]"]
    tokens += [b"\n ", b"\n\t", b'{"', b'":', b'": [', b", ", b",\n", b"[\n"]
    return Vocab(tokens, eos_token_ids=[], special_token_ids=[])


@pytest.mark.parametrize("vocab_name", ["whitespace", "llama-spm", "llama-bpe"])
def test_run_regions_equal_stepping_each_count(vocab_name: str) -> None:
    """Below a node in a whitespace gap after a newline (``[ \\t]{0,32}`` then what follows), the
    walk takes a run region instead of one configuration per count: plain masks and budget
    figures equal those of the walk that steps every count, along indented documents (some
    past the gap's bound, which must then be refused the same way)."""
    from structgen.schema import json_schema_to_grammar

    vocab = _whitespace_vocab() if vocab_name == "whitespace" else load_vocab(vocab_name)
    grammar = json_schema_to_grammar(RUN_SCHEMA)

    fast = Constraint.compile(grammar, vocab)
    got = _masks_and_figures(fast, vocab, RUN_DOCS)
    assert any(v is not None for v in fast._table._runs.values()), "no run region was used"
    stepped = Constraint.compile(grammar, vocab, tuning=EngineTuning(run_regions=False))
    want = _masks_and_figures(stepped, vocab, RUN_DOCS)
    assert not any(v is not None for v in stepped._table._runs.values())
    assert len(got) == len(want)
    for step, (a, b) in enumerate(zip(got, want)):
        for x, y in zip(a, b):
            assert np.array_equal(np.asarray(x), np.asarray(y)), f"step {step}"


def _reference_counts(table: np.ndarray, data: bytes, start: int) -> tuple[int, int]:
    """(stay, leave) of one token through a unit automaton, byte by byte."""
    state, units = start, 0
    for b in data:
        nxt = int(table[state, b])
        if nxt == -1:
            stay, leave = -1, units
            break
        if nxt == -2:
            stay, leave = -1, -1
            break
        if nxt >= 256:
            units, state = units + 1, nxt - 256
        else:
            state = nxt
    else:
        stay, leave = units + (state != 0), -1
    if start:
        stay, leave = (stay - 1 if stay > 0 else -1), (leave - 1 if leave > 0 else -1)
    return stay, leave


@pytest.mark.parametrize("vocab_name", ["llama-spm", "llama-bpe"])
def test_unit_counts_equal_stepping_each_token(vocab_name: str) -> None:
    """The vectorised unit counts (bulk runs of one-byte units, begun units spliced onto the
    boundary counts) equal stepping each token's bytes through the unit's automaton."""
    from structgen.engine.counters import count_units, unit_automaton
    from structgen.schema import json_schema_to_grammar

    vocab = load_vocab(vocab_name)
    trie = token_trie_for(vocab)
    c = Constraint.compile(json_schema_to_grammar({"type": "string", "maxLength": 9}), vocab)
    state = c.start()
    state.commit_token(greedy_tokens(vocab, b'"')[0])
    head = counters_mod.counted_head(c._machines.store, c._system.stack_top[c._system.configs[state.config][0]])
    assert head is not None
    auto = unit_automaton(c._machines.store, head.unit)
    assert auto is not None and auto.table.shape[0] > 5
    rng = np.random.default_rng(3)
    text = np.flatnonzero(np.asarray(vocab.is_text))
    sample = np.concatenate([rng.choice(text, 1500, replace=False), text[vocab.lengths[text] > 12][:300]])
    for start in range(auto.table.shape[0]):
        counts = count_units(auto.table, trie, start)
        for tid in sample.tolist():
            want = _reference_counts(auto.table, vocab.token_bytes(tid), start)
            assert (int(counts.stay[tid]), int(counts.leave[tid])) == want, (start, vocab.token_bytes(tid))


ESCAPE_DOCS = [
    json.dumps({"name": "a\nb \u00e9 \\ z", "code": "AB", "tags": ["x\ty", '"q"'], "other": "n\u00e9"}),
    json.dumps({"name": "Zoë", "tags": ["日本", "é"], "n": 3, "zeta": {"k": "v"}}, ensure_ascii=False),
]


@pytest.mark.parametrize("vocab_name", ["llama-spm", "llama-bpe"])
def test_string_bodies_after_escapes_equal_walking_without_regions(vocab_name: str) -> None:
    """String bodies reached after an escape or a multi-byte character, and keys that left the
    listed names: masks and budget figures with loop regions equal those without
    (``loop_region_min_bytes`` above 256)."""
    from structgen.schema import json_schema_to_grammar

    vocab = load_vocab(vocab_name)
    grammar = json_schema_to_grammar(SCHEMA)
    got = _masks_and_figures(Constraint.compile(grammar, vocab), vocab, ESCAPE_DOCS)
    assert not any(isinstance(step[0], str) for step in got), "a token of a valid document was refused"
    plain = Constraint.compile(grammar, vocab, tuning=EngineTuning(loop_region_min_bytes=257))
    want = _masks_and_figures(plain, vocab, ESCAPE_DOCS)
    assert len(got) == len(want)
    for step, (a, b) in enumerate(zip(got, want)):
        for x, y in zip(a, b):
            assert np.array_equal(x, y), f"step {step}"


CLOSED_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"const": "search"},
        "args": {
            "type": "object",
            "properties": {"origin": {"type": "string"}, "count": {"type": "integer"}, "tags": {"type": "array"}},
            "required": ["origin"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "args"],
    "additionalProperties": False,
}
CLOSED_DOCS = [
    json.dumps({"name": "search", "args": {"origin": "OSL", "count": 2, "tags": ["a", {"b": [1]}]}}, indent=indent)
    for indent in (None, 2, 4, "\t", 31, 32, 33)
]


@pytest.mark.parametrize("vocab_name", ["whitespace", "llama-spm", "llama-bpe"])
def test_run_exits_filtered_by_first_bytes_equal_stepping_all(vocab_name: str) -> None:
    """A run region's exits whose byte the configuration after the run cannot read (by
    ``ConfigSystem.first_bytes_bound``, from its terms) are dropped before they are stepped:
    masks and budget figures equal those of stepping every exit, along indented documents of
    a closed object (where the bound is a key's quote or a closing brace) and of any JSON; and
    the bound holds every live byte of each configuration whose row is complete."""
    from structgen.engine import table as table_mod
    from structgen.schema import json_schema_to_grammar

    vocab = _whitespace_vocab() if vocab_name == "whitespace" else load_vocab(vocab_name)
    dropped = False
    for schema, docs in ((CLOSED_SCHEMA, CLOSED_DOCS), (RUN_SCHEMA, RUN_DOCS)):
        grammar = json_schema_to_grammar(schema)
        fast = Constraint.compile(grammar, vocab)
        got = _masks_and_figures(fast, vocab, docs)
        table, system = fast._table, fast._system
        for cid in range(1, len(system.configs)):
            if cid < table.rows.shape[0] and not (table.rows[cid] == table_mod.UNKNOWN).any():
                live = sum(1 << b for b in np.flatnonzero(table.rows[cid] != 0).tolist())
                assert live & ~system.first_bytes_bound(cid) == 0, f"config {cid}: a live byte outside the bound"
        trie = token_trie_for(vocab)
        for region in getattr(trie, "_run_regions", {}).values():
            for kept in region._within.values():
                dropped |= sum(n.size for n, _ in kept.values()) < sum(n.size for n, _ in region.exits.values())
        unfiltered = Constraint.compile(grammar, vocab, tuning=EngineTuning(run_exit_filter=False))
        want = _masks_and_figures(unfiltered, vocab, docs)
        assert len(got) == len(want)
        for step, (a, b) in enumerate(zip(got, want)):
            for x, y in zip(a, b):
                assert np.array_equal(np.asarray(x), np.asarray(y)), f"step {step}"
    assert dropped, "no run region dropped an exit"


def _string_unit_table(schema: dict, text: bytes, vocab) -> np.ndarray:  # type: ignore[no-untyped-def,type-arg]
    """The unit automaton of the counted string a walk along ``text`` (a document's start,
    ending inside the string) sits in."""
    from structgen.schema import json_schema_to_grammar

    c = Constraint.compile(json_schema_to_grammar(schema), vocab)
    state = c.start()
    for tok in greedy_tokens(vocab, text):
        state.mask()
        assert state.commit_token(tok)
    state.mask()
    top = c._system.stack_top[c._system.configs[state.config][0]]
    head = counters_mod.counted_head(c._machines.store, top)
    assert head is not None
    auto = counters_mod.unit_automaton(c._machines.store, head.unit)
    assert auto is not None
    return auto.table


def test_same_unit_same_automaton_across_grammars() -> None:
    """A JSON string's character is one unit automaton whatever else the grammar holds: its
    states are numbered in byte order, not in the order of the term store's ids, so the
    process-wide memo of unit counts finds it (it missed after an object's keys, and a second
    schema counted every token again: 20 ms)."""
    vocab = load_vocab("llama-bpe")
    alone = _string_unit_table({"type": "string", "maxLength": 9}, b'"ab', vocab)
    schema = json.loads((Path(__file__).parent.parent / "schemas" / "tool_union.json").read_text())
    inside = _string_unit_table(schema, b'{"tool": "get_weather", "location": "Re', vocab)
    assert alone.shape[0] > 5
    assert np.array_equal(alone, inside)


#: keys that may be a listed name or any other key (``additionalProperties`` allowed): a key
#: position one byte before the string body's loop, whose name prefix differs from it in a byte
OPEN_KEYS_SCHEMA = {
    "type": "object",
    "properties": {
        "zip": {"type": "string"},
        "zone": {"type": "integer"},
        "vendor-dir": {"type": "string"},
        "version": {"type": "array", "items": {"type": "string"}},
    },
    "additionalProperties": {"type": "string"},
}


@pytest.mark.parametrize(("vocab_name", "sparse_live"), [("llama-spm", 16), ("llama-bpe", 16), ("llama-bpe", 1)])
def test_walks_before_a_loop_from_its_kept_walk_equal_the_plain_walk(vocab_name: str, sparse_live: int) -> None:
    """A walk one byte before a loop takes what lies below the root children it steps as the
    loop does from the loop's own kept walk (``EngineTuning.shared_loop_exits``), descending
    along the children whose byte differs: for every one-stack configuration a compile ahead
    of time met (relative ones with the exits of their walk over the hole, bottom ones with
    their tokens), the tokens and exits equal those of the plain walk (no loop regions) on the
    same configuration system, and the kept walks were used. ``sparse_live`` 1 stops descents
    where two bytes differ, so that the walk takes the nodes below over from them."""
    from structgen.engine.limits import EngineLimits
    from structgen.engine.mask_sources import region_words
    from structgen.engine.table import TransitionTable
    from structgen.schema import json_schema_to_grammar

    vocab = load_vocab(vocab_name)
    trie = token_trie_for(vocab)
    c = Constraint.compile(
        json_schema_to_grammar(OPEN_KEYS_SCHEMA), vocab, mode="aot", limits=EngineLimits(aot_budget_ms=600_000)
    )
    assert not c.report.truncated
    system, width = c._system, vocab.logit_width
    tail = lambda: vocab.utf8_tail_missing  # noqa: E731
    plain = TransitionTable(system, tail_missing=tail, tuning=EngineTuning(loop_region_min_bytes=257))
    off = TransitionTable(system, tail_missing=tail, tuning=EngineTuning(shared_loop_exits=False))
    shared = TransitionTable(system, tail_missing=tail, tuning=EngineTuning(sparse_live=sparse_live))
    before_loop = 0
    for cid in range(1, len(system.configs)):
        stacks = system.configs[cid]
        if len(stacks) != 1 or system.stack_top[stacks[0]] == 0:
            continue
        parent = system.stack_parent[stacks[0]]
        if parent == system.hole:
            walks = [t.walk_relative(cid, trie) for t in (shared, off, plain)]
            exits = [{k: sorted(n.tolist()) for k, (n, _) in w[2].items() if n.size} for w in walks]
            assert exits[0] == exits[2] and exits[1] == exits[2], f"exits of {cid}"
            parts = [(w[0], w[1]) for w in walks]
        elif parent < 0:
            parts = [t.walk_parts(cid, trie) for t in (shared, off, plain)]
        else:
            continue
        masks = [region_words(r, ids, trie, width) for r, ids in parts]
        assert np.array_equal(masks[0], masks[2]) and np.array_equal(masks[1], masks[2]), f"mask of {cid}"
        found = shared._before_loop.get(cid)
        before_loop += bool(found)
    assert before_loop > 3, "no walk started one byte before a loop"
    assert shared._beyond, "no loop's walk was kept"
    assert not off._beyond
