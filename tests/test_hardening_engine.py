"""Hostile and careless use of the engine's API: ids and counts that are not integers, bitmask
buffers of the wrong kind, limits and options that mean nothing, and saving while other threads
compute masks. Each must give a structgen error (or, for the threads, a correct blob)."""

from __future__ import annotations

import json
import random
import threading
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from engine_support import greedy_tokens, json_grammar, load_vocab, person_grammar

from structgen import ConstraintError, Grammar, GrammarLimits, LimitError, StructgenError
from structgen.engine import Constraint, EngineLimits, fill_bitmasks
from structgen.schema import json_schema_to_grammar
from structgen.vocab import Vocab

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"

NOT_INTEGERS = [58.9, 58.0, "58", b"58", True, False, np.True_, None, [58], 1j, np.float64(3.0)]


@pytest.fixture(scope="module")
def llama3() -> Vocab:
    return load_vocab("llama-bpe")


@pytest.fixture(scope="module")
def narrow() -> Vocab:
    """A narrower vocabulary than Llama 3's (Llama 2's 32,000 ids, for batches sized for the wider model)."""
    return load_vocab("llama-spm")


@pytest.fixture(scope="module")
def json_c(llama3: Vocab) -> Constraint:
    return Constraint.compile(json_grammar(), llama3)


# -- integers only (item 6) -------------------------------------------------------------------


@pytest.mark.parametrize("bad", NOT_INTEGERS, ids=repr)
def test_commit_token_takes_only_integers(json_c: Constraint, bad: object) -> None:
    st = json_c.start()
    with pytest.raises(ConstraintError):
        st.commit_token(bad)  # type: ignore[arg-type]
    assert st.num_tokens == 0  # nothing committed on the way
    with pytest.raises(ConstraintError):
        st.is_allowed(bad)  # type: ignore[arg-type]
    with pytest.raises(ConstraintError):
        st.commit_tokens([bad])  # type: ignore[list-item]
    assert st.num_tokens == 0


@pytest.mark.parametrize("bad", NOT_INTEGERS, ids=repr)
def test_rollback_and_budgets_take_only_integers(json_c: Constraint, llama3: Vocab, bad: object) -> None:
    st = json_c.start()
    assert st.commit_tokens(greedy_tokens(llama3, b"[1, 2"))
    before = st.num_tokens
    with pytest.raises(ConstraintError):
        st.rollback(bad)  # type: ignore[arg-type]
    assert st.num_tokens == before
    if bad is not None:  # None is "no budget"
        with pytest.raises(ConstraintError):
            st.mask(budget=bad)  # type: ignore[arg-type]
        with pytest.raises(ConstraintError):
            st.mask_words(budget=bad)  # type: ignore[arg-type]
    with pytest.raises(ConstraintError):
        st.fill_bitmask(np.zeros(json_c._words, np.int32), row=bad)  # type: ignore[arg-type]


def test_numpy_integers_are_integers(json_c: Constraint, llama3: Vocab) -> None:
    ids = greedy_tokens(llama3, b"[1]")
    st = json_c.start()
    assert st.commit_token(np.int64(ids[0])) and st.commit_token(np.uint32(ids[1]))
    assert st.is_allowed(np.int32(ids[2]))
    st.rollback(np.int64(1))
    assert st.num_tokens == 1
    assert st.mask(budget=np.int16(5)).any()


def test_terminated_state_still_checks_its_budget(json_c: Constraint, llama3: Vocab) -> None:
    st = json_c.start()
    assert st.commit_tokens(greedy_tokens(llama3, b"1") + [llama3.eos_token_ids[0]])
    assert st.is_terminated()
    with pytest.raises(ConstraintError):
        st.mask(budget=1.5)  # type: ignore[arg-type]
    with pytest.raises(ConstraintError):
        st.mask(budget=0)


def test_wrong_argument_types_are_constraint_errors(json_c: Constraint, llama3: Vocab) -> None:
    st = json_c.start()
    for bad in (5, None, "[1]", b"[1]"):
        with pytest.raises(ConstraintError):
            st.commit_tokens(bad)  # type: ignore[arg-type]
    assert st.num_tokens == 0
    for grammar, vocab in ((None, llama3), ("root ::= x", llama3), (json_grammar(), None), (json_grammar(), "v")):
        with pytest.raises(ConstraintError):
            Constraint.compile(grammar, vocab)  # type: ignore[arg-type]
    with pytest.raises(ConstraintError):
        Constraint.load(json_c.save(), None)  # type: ignore[arg-type]
    with pytest.raises(ConstraintError):
        fill_bitmasks(st, np.zeros((1, json_c._words), np.int32))  # type: ignore[arg-type]


# -- bitmask buffers (item 5) -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int16, np.float32, np.int64, np.float64, np.uint64, ">i4"])
def test_fill_bitmask_refuses_other_dtypes(json_c: Constraint, dtype: object) -> None:
    out = np.zeros((2, json_c._words), dtype=dtype)
    before = out.copy()
    with pytest.raises(ConstraintError):
        json_c.start().fill_bitmask(out, 0)
    with pytest.raises(ConstraintError):
        fill_bitmasks([json_c.start()], out)
    assert np.array_equal(out, before)


def test_fill_bitmask_uint32_gets_the_same_bits(json_c: Constraint, llama3: Vocab) -> None:
    st = json_c.start()
    assert st.commit_tokens(greedy_tokens(llama3, b'{"a'))
    out = np.zeros((1, json_c._words), dtype=np.uint32)
    st.fill_bitmask(out, 0)
    assert np.array_equal(out[0].view(np.int32), st.mask_words())


def test_fill_bitmask_refuses_other_shapes_rows_and_read_only(json_c: Constraint) -> None:
    st, n = json_c.start(), json_c._words
    for bad in (np.zeros((2, 2, n), np.int32), np.zeros((), np.int32), np.zeros((2, n - 1), np.int32)):
        with pytest.raises(ConstraintError):
            st.fill_bitmask(bad, 0)
    out = np.zeros((3, n), np.int32)
    for row in (-1, -3, 3, 100):
        with pytest.raises(ConstraintError):
            st.fill_bitmask(out, row)
    assert not out.any()  # row -1 did not write the last row
    with pytest.raises(ConstraintError):
        st.fill_bitmask(np.zeros(n, np.int32), 1)  # a 1-D buffer has row 0 only
    ro = np.zeros((1, n), np.int32)
    ro.flags.writeable = False
    with pytest.raises(ConstraintError):
        st.fill_bitmask(ro, 0)
    with pytest.raises(ConstraintError):
        st.fill_bitmask([[0] * n], 0)  # type: ignore[arg-type]


def test_fill_bitmask_clears_the_whole_row(json_c: Constraint, llama3: Vocab) -> None:
    st = json_c.start()
    wide = json_c._words + 8  # a batch sized for a wider model
    out = np.full((2, wide), -1, dtype=np.int32)
    st.fill_bitmask(out, 1)
    assert np.array_equal(out[1, : json_c._words], st.mask_words())
    assert not out[1, json_c._words :].any()
    assert (out[0] == -1).all()  # the other row is untouched
    flat = np.full(wide, -1, dtype=np.int32)
    st.fill_bitmask(flat)
    assert not flat[json_c._words :].any()


def test_fill_bitmasks_narrow_vocabulary_in_a_wide_batch(json_c: Constraint, narrow: Vocab) -> None:
    """A state of a narrower vocabulary in a batch sized for Llama 3 leaves no stale words."""
    small = Constraint.compile(json_grammar(), narrow)
    assert small._words < json_c._words
    out = np.full((2, json_c._words), -1, dtype=np.int32)
    fill_bitmasks([json_c.start(), small.start()], out)
    assert np.array_equal(out[1, : small._words], small.start().mask_words())
    assert not out[1, small._words :].any()


def test_fill_bitmasks_checks_its_arguments(json_c: Constraint) -> None:
    n = json_c._words
    with pytest.raises(ConstraintError):
        fill_bitmasks([json_c.start()] * 3, np.zeros((2, n), np.int32))
    with pytest.raises(ConstraintError):
        fill_bitmasks([json_c.start()], np.zeros((1, n), np.float32))
    with pytest.raises(ConstraintError):
        fill_bitmasks([json_c.start()], np.zeros((1, n), np.int32), budgets=[None, None])
    with pytest.raises(ConstraintError):
        fill_bitmasks([json_c.start()], np.zeros((1, n), np.int32), budgets=5)  # type: ignore[arg-type]
    with pytest.raises(ConstraintError):
        fill_bitmasks([json_c.start()], np.zeros((1, n), np.int32), budgets=[2.5])  # type: ignore[list-item]
    with pytest.raises(ConstraintError):
        fill_bitmasks(["not a state"], np.zeros((1, n), np.int32))  # type: ignore[list-item]


# -- limits and options (item 10) -------------------------------------------------------------


@pytest.mark.parametrize("kind", [EngineLimits, GrammarLimits])
@pytest.mark.parametrize("bad", [-1, 2.5, 1.0, "x", True, None, 10**3 * 1.0])
def test_limit_fields_must_be_positive_ints(kind: type, bad: object) -> None:
    for f in fields(kind):
        if f.name == "deadline_s":
            continue  # seconds, None for no bound: tests/test_limits_deadline.py
        with pytest.raises(LimitError) as info:
            kind(**{f.name: bad})
        assert info.value.limit == f.name and f.name in str(info.value)
        assert info.value.value is None  # the error is about the field's value, not a bound reached


@pytest.mark.parametrize(
    ("kind", "zero_ok"),
    [(EngineLimits, {"aot_max_configs"}), (GrammarLimits, {"max_repeat", "separated_inline_nodes"})],
)
def test_zero_only_where_it_means_something(kind: type, zero_ok: set[str]) -> None:
    for f in fields(kind):
        if f.name == "deadline_s":
            continue
        if f.name in zero_ok:
            assert getattr(kind(**{f.name: 0}), f.name) == 0
        else:
            with pytest.raises(LimitError) as info:
                kind(**{f.name: 0})
            assert info.value.limit == f.name


def test_small_cache_limit_works(llama3: Vocab) -> None:
    """``max_cached_masks=1`` (the least that means anything) serves masks; it used to be 0 that
    raised StopIteration on the first mask, and 0 is now refused when the limits are built."""
    c = Constraint.compile(person_grammar(), llama3, limits=EngineLimits(max_cached_masks=1))
    ref = Constraint.compile(person_grammar(), llama3)
    s1, s2 = c.start(), ref.start()
    for t in greedy_tokens(llama3, b'{"name": "Bo", "age": 7, "role": "user"}'):
        assert np.array_equal(s1.mask_words(), s2.mask_words())
        assert s1.commit_token(t) and s2.commit_token(t)
    assert len(c._masks) <= 1


def test_unknown_mode_and_flavor_are_structgen_errors(llama3: Vocab) -> None:
    for mode in ("bogus", "", None, 1):
        with pytest.raises(ConstraintError):
            Constraint.compile(person_grammar(), llama3, mode=mode)  # type: ignore[arg-type]
    with pytest.raises(ConstraintError):
        Constraint.compile(person_grammar(), llama3, limits={"max_configs": 5})  # type: ignore[arg-type]
    for flavor in ("bogus", "pcre", None, 3):
        with pytest.raises(StructgenError):
            Grammar.from_regex("a+", flavor=flavor)  # type: ignore[arg-type]
    with pytest.raises(StructgenError):
        Grammar.from_regex(b"a+")  # type: ignore[arg-type]
    with pytest.raises(StructgenError):
        Grammar.from_regex("a+", flavor="glrm", flags=None)  # type: ignore[arg-type]
    with pytest.raises(StructgenError):
        Grammar.from_regex("a+", search="yes")  # type: ignore[arg-type]


# -- memory in bytes (item 8) -----------------------------------------------------------------


def test_memory_bound_in_bytes(llama3: Vocab) -> None:
    """``^(a|b)*a(a|b){24}$`` makes a configuration (and a mask) per token for a long while: a
    small ``max_memory_bytes`` stops the walk with a LimitError naming it, and the state stays
    where it was (the step is not half taken)."""
    g = Grammar.from_regex("^(a|b)*a(a|b){24}$")
    bound = 4 * 1024 * 1024
    c = Constraint.compile(g, llama3, limits=EngineLimits(max_memory_bytes=bound))
    a, b = greedy_tokens(llama3, b"a")[0], greedy_tokens(llama3, b"b")[0]
    rng = random.Random(7)
    st = c.start()
    with pytest.raises(LimitError) as info:
        for _ in range(10_000):
            st.mask_words()
            before = st.num_tokens
            st.commit_token(rng.choice((a, b)))
    assert info.value.limit == "max_memory_bytes"
    assert st.num_tokens in (before, before + 1)
    with pytest.raises(LimitError):
        st.mask_words()  # past the bound it stays refused, caught or not
    assert c.memory_bytes() > bound
    assert st.num_tokens < 1000  # stopped by the bound, not by the end of the loop
    # the default bound is far from what this walk reached
    assert c.memory_bytes() < EngineLimits().max_memory_bytes // 100


def test_memory_estimate_counts_what_grows(json_c: Constraint, llama3: Vocab) -> None:
    before = json_c.memory_bytes()
    st = json_c.start()
    assert st.commit_tokens(greedy_tokens(llama3, b"[" * 40 + b'{"deep": "x'))
    st.mask_words()
    assert json_c.memory_bytes() > before


def test_loaded_constraint_memory_bound(llama3: Vocab) -> None:
    c = Constraint.compile(json_grammar(), llama3)
    st = c.start()
    assert st.commit_tokens(greedy_tokens(llama3, b'[{"a": [1, 2, "x"]}'))
    st.mask_words()
    blob = c.save()
    with pytest.raises(LimitError) as info:
        Constraint.load(blob, llama3, limits=EngineLimits(max_memory_bytes=len(blob) + 1))
    assert info.value.limit == "max_memory_bytes"


# -- saving while other threads compute (item 2) ----------------------------------------------


def _realistic(llama3: Vocab) -> Constraint:
    schema = json.loads((SCHEMAS / "realistic_model.json").read_text())
    return Constraint.compile(json_schema_to_grammar(schema), llama3)


def _random_walk(c: Constraint, rng: random.Random, steps: int) -> list[int]:
    """Tokens of a random walk, preferring short tokens so the walk goes deep into the document."""
    st = c.start()
    path: list[int] = []
    for _ in range(steps):
        allowed = np.flatnonzero(st.mask())
        if not allowed.size:
            break
        t = int(allowed[rng.randrange(allowed.size)]) if rng.random() < 0.3 else int(allowed[0])
        if not st.commit_token(t) or st.is_terminated():
            break
        path.append(t)
    return path


def test_save_while_other_threads_compute_masks(llama3: Vocab) -> None:
    """Six threads walk one constraint (each walk reaches configurations nobody reached before)
    while a seventh saves it 20 times: every blob loads and serves the masks the live constraint
    serves, along every path walked. Before save took the lock, some blobs raised IndexError when
    used and some served wrong masks."""
    c = _realistic(llama3)
    instances = (SCHEMAS / "instances" / "realistic_model.jsonl").read_text().splitlines()
    paths: list[list[int]] = [greedy_tokens(llama3, line.encode()) for line in instances[:2]]
    stop = threading.Event()
    errors: list[BaseException] = []

    def walk(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                path = _random_walk(c, rng, 60)
                if len(paths) < 40:
                    paths.append(path)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    walkers = [threading.Thread(target=walk, args=(seed,)) for seed in range(6)]
    for w in walkers:
        w.start()
    blobs = []
    try:
        for _ in range(20):
            blobs.append(c.save())
    finally:
        stop.set()
        for w in walkers:
            w.join()
    assert not errors
    for blob in blobs:
        loaded = Constraint.load(blob, llama3)
        for path in paths[:6]:
            live, saved = c.start(), loaded.start()
            for t in path:
                assert np.array_equal(live.mask_words(), saved.mask_words())
                assert live.commit_token(t) and saved.commit_token(t)


def test_fill_bitmask_on_a_cached_mask_checks_as_much(json_c: Constraint, llama3: Vocab) -> None:
    """A mask met before is written by a shorter path (few lookups for cold caches): it refuses
    the same rows and buffers, and writes the same bits, as the full path."""
    st, n = json_c.start(), json_c._words
    assert st.commit_tokens(greedy_tokens(llama3, b'{"a'))
    want = st.mask_words()  # now cached
    out = np.zeros((3, n), np.int32)
    for row in (-1, -3, 3, True, np.int64(1)):
        if type(row) is not int and not isinstance(row, bool):
            st.fill_bitmask(out, row)  # a numpy integer is a row like any other
            assert np.array_equal(out[1], want)
            out[:] = 0
            continue
        with pytest.raises(ConstraintError):
            st.fill_bitmask(out, row)
    assert not out.any()
    with pytest.raises(ConstraintError):
        st.fill_bitmask(np.zeros(n, np.int32), 1)
    ro = np.zeros(n, np.int32)
    ro.flags.writeable = False
    with pytest.raises(ConstraintError):
        st.fill_bitmask(ro)
    flat = np.full(n, -1, np.int32)
    st.fill_bitmask(flat)
    assert np.array_equal(flat, want)
    st.fill_bitmask(out, 2)
    assert np.array_equal(out[2], want) and not out[:2].any()
