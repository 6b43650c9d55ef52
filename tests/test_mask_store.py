"""Masks held once per distinct content (structgen/engine/mask_store.py): a pool hands out the
held equal mask, lets go of one no key refers to, and counts each distinct mask once; a
constraint's caches (whole masks, counted masks, relative parts, position masks) share it, so
that along the instances of ``schemas/`` on Llama 3 each distinct mask is one array, the pool
holds exactly what the caches refer to (under a small cache bound too, and after a save and a
load), and every mask of ``mode="aot"`` equals the lazy engine's bit for bit."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hardening_artifacts import members_of, rebuild, refused

from structgen import Grammar
from structgen.engine import Constraint, EngineLimits
from structgen.engine import artifact as A
from structgen.engine.mask_store import MaskPool, SharedMasks
from structgen.vocab import Vocab

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.inputs import load_named_schemas, serialise  # noqa: E402

#: positions bounded by count, not by the clock: what a compile precomputes does not depend on
#: the machine's load
AHEAD = EngineLimits(aot_max_configs=100, aot_max_positions=3000, aot_budget_ms=10**7)


def _mask(bits: list[int], words: int = 8) -> np.ndarray:
    out = np.zeros(words, dtype=np.int32)
    for b in bits:
        out[b // 32] |= np.int32(1 << (b % 32)) if b % 32 < 31 else np.int32(-(1 << 31))
    out.flags.writeable = False
    return out


def test_pool_holds_each_mask_once() -> None:
    pool = MaskPool()
    a, b, other = _mask([1, 70]), _mask([1, 70]), _mask([2])
    assert pool.intern(a) is a
    assert pool.intern(b) is a  # equal: the held one
    assert pool.intern(a) is a  # the held one itself
    assert pool.intern(other) is other
    assert len(pool) == 2 and pool.nbytes == a.nbytes + other.nbytes
    pool.release(a)
    pool.release(a)
    assert pool.holds(a) and len(pool) == 2
    pool.release(a)
    assert not pool.holds(a) and len(pool) == 1 and pool.nbytes == other.nbytes
    assert pool.intern(b) is b  # a is gone: b is held now


def test_pool_compares_every_word_where_checksums_collide() -> None:
    pool = MaskPool(checksum=lambda data: 0)  # every mask collides
    masks = [_mask([i]) for i in range(40)]
    assert [pool.intern(m) for m in masks] == masks
    assert all(pool.intern(_mask([i])) is masks[i] for i in range(40))
    # the same words in another dtype or shape are another mask
    assert pool.intern(masks[3].view(np.uint32)) is not masks[3]
    assert pool.intern(masks[3].reshape(2, 4)) is not masks[3]


def test_pool_copies_a_writable_mask() -> None:
    """The owner of a writable array may write it later: the pool holds a read-only copy."""
    pool = MaskPool()
    mine = np.zeros(8, dtype=np.int32)
    held = pool.intern(mine)
    assert held is not mine and not held.flags.writeable
    mine[0] = 5
    assert not held.any()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["set", "set_pair", "pop", "del", "popitem", "setdefault", "clear"]),
            st.integers(0, 6),
            st.integers(0, 4),
        ),
        max_size=60,
    )
)
def test_shared_masks_behave_as_a_dict(ops: list[tuple[str, int, int]]) -> None:
    """Any sequence of dict operations on two SharedMasks of one pool reads back what a plain
    dict holds, and the pool then holds one array per distinct mask they refer to, no other."""
    pool = MaskPool()
    stores = [SharedMasks(pool), SharedMasks(pool)]
    models: list[dict[int, object]] = [{}, {}]
    for n, (op, key, content) in enumerate(ops):
        store, model = stores[n % 2], models[n % 2]
        value = _mask([content * 37])
        if op == "set":
            store[key] = model[key] = value
        elif op == "set_pair":
            store[key] = model[key] = (value, {key: content})
        elif op == "pop":
            assert (store.pop(key, None) is None) == (model.pop(key, None) is None)
        elif op == "del" and key in model:
            del store[key], model[key]
        elif op == "popitem" and model:
            k, _ = store.popitem()
            del model[k]
        elif op == "setdefault":
            store.setdefault(key, value)
            model.setdefault(key, value)
        elif op == "clear":
            store.clear()
            model.clear()
    for store, model in zip(stores, models):
        assert set(store) == set(model)
        for key, want in model.items():
            got = store[key]
            if isinstance(want, tuple):
                assert isinstance(got, tuple) and got[1] == want[1]
                got, want = got[0], want[0]
            assert np.array_equal(got, want)  # type: ignore[arg-type]
    held = _held_arrays(stores)
    assert len({id(a) for a in held}) == len({a.tobytes() for a in held}) == len(pool)
    assert pool.nbytes == sum({id(a): a.nbytes for a in held}.values())


def _held_arrays(stores: list[SharedMasks]) -> list[np.ndarray]:
    return [v[0] if isinstance(v, tuple) else v for s in stores for v in s.values()]


def _constraint_masks(c: Constraint) -> list[np.ndarray]:
    """Every mask a constraint's caches and position masks refer to."""
    out = list(c._masks.values()) + list(c._counted_masks._words.values())
    out += [words for words, _ in c._relative_masks.relative.values()]
    return out + list(c._positions._dense.values())


def _check_held_once(c: Constraint) -> int:
    """Each distinct mask the constraint refers to is one array, the pool holds those and no
    other, and counts their bytes once. Returns how many distinct masks there are."""
    held = _constraint_masks(c)
    distinct = {id(a): a for a in held}
    assert len(distinct) == len({a.tobytes() for a in held})
    assert len(c._mask_pool) == len(distinct)
    assert c._mask_pool.nbytes == sum(a.nbytes for a in distinct.values())
    return len(distinct)


def _texts(name: str) -> list[str]:
    (case,) = load_named_schemas([name])
    out: list[str] = []
    for inst in case.instances[:4]:
        for spacing in ("default", "compact"):
            text = serialise(inst, spacing)
            if text not in out:
                out.append(text)
    return out


def _walk(cs: list[Constraint], vocab: Vocab, texts: list[str]) -> int:
    """Walk ``texts`` on every constraint of ``cs``; every mask and commit must agree with the
    first's. Returns the masks compared."""
    compared = 0
    for text in texts:
        states = [c.start() for c in cs]
        for i, tok in enumerate(greedy_tokens(vocab, text.encode())):
            first = states[0].mask_words()
            for s in states[1:]:
                assert np.array_equal(s.mask_words(), first), f"masks differ at token {i} of {text!r}"
            oks = [s.commit_token(tok) for s in states]
            assert len(set(oks)) == 1
            compared += 1
            if not oks[0]:
                break
    return compared


@pytest.fixture(scope="module")
def llama3() -> Vocab:
    return load_vocab("llama-bpe")


@pytest.mark.parametrize("name", ["realistic_model", "tool_call"])
def test_constraint_holds_each_mask_once(llama3: Vocab, name: str) -> None:
    (case,) = load_named_schemas([name])
    grammar = Grammar.from_json_schema(case.schema)
    lazy = Constraint.compile(grammar, llama3)
    aot = Constraint.compile(grammar, llama3, mode="aot", limits=AHEAD)
    _check_held_once(aot)
    assert _walk([lazy, aot], llama3, _texts(name)) > 50
    for c in (lazy, aot):
        distinct = _check_held_once(c)
        # positions inside string bodies and values share their masks: fewer arrays than keys
        assert distinct < len(_constraint_masks(c))


def test_small_cache_bound_lets_go_of_masks(llama3: Vocab) -> None:
    """Entries pushed out of a bounded cache release their masks: the pool holds no more than
    the caches refer to."""
    (case,) = load_named_schemas(["realistic_model"])
    grammar = Grammar.from_json_schema(case.schema)
    lazy = Constraint.compile(grammar, llama3)
    small = Constraint.compile(grammar, llama3, limits=EngineLimits(max_cached_masks=3))
    _walk([lazy, small], llama3, _texts("realistic_model"))
    assert len(small._masks) <= 3 and len(small._relative_masks.relative) <= 3
    assert _check_held_once(small) <= 3 + 3 + len(small._counted_masks._words)


def test_loaded_constraint_holds_each_mask_once(llama3: Vocab) -> None:
    (case,) = load_named_schemas(["realistic_model"])
    grammar = Grammar.from_json_schema(case.schema)
    aot = Constraint.compile(grammar, llama3, mode="aot", limits=AHEAD)
    texts = _texts("realistic_model")
    _walk([aot], llama3, texts[:2])
    loaded = Constraint.load(aot.save(), llama3)
    _check_held_once(loaded)
    _walk([aot, loaded], llama3, texts)
    _check_held_once(loaded)


# -- a saved constraint holds each distinct cached mask once (artifact.py's mask_rows.npy) ------


@pytest.fixture(scope="module")
def walked(llama3: Vocab) -> Constraint:
    (case,) = load_named_schemas(["realistic_model"])
    c = Constraint.compile(Grammar.from_json_schema(case.schema), llama3)
    _walk([c], llama3, _texts("realistic_model")[:2])
    return c


def test_saved_masks_are_each_held_once(walked: Constraint, llama3: Vocab) -> None:
    members = members_of(walked.save())
    masks = A._array(A.MASKS, members[A.MASKS])
    rows = A._array(A.MASK_ROWS, members[A.MASK_ROWS])
    ids = A._array(A.MASK_IDS, members[A.MASK_IDS])
    assert rows.size == ids.size == len(walked._masks) > masks.shape[0]
    assert len({m.tobytes() for m in masks}) == masks.shape[0]
    for cid, row in zip(ids.tolist(), rows.tolist()):
        assert np.array_equal(masks[row], walked._masks[cid])
    loaded = Constraint.load(walked.save(), llama3)
    assert sorted(loaded._masks) == sorted(walked._masks)
    assert all(np.array_equal(loaded._masks[cid], m) for cid, m in walked._masks.items())
    _check_held_once(loaded)


def test_blob_of_one_row_per_mask_still_loads(walked: Constraint, llama3: Vocab) -> None:
    """A blob saved before ``mask_rows.npy`` was written: one row per id, in order."""
    members = members_of(walked.save())
    masks = A._array(A.MASKS, members[A.MASKS])
    rows = A._array(A.MASK_ROWS, members[A.MASK_ROWS])
    members[A.MASKS] = A._npy(masks[rows])
    del members[A.MASK_ROWS]
    loaded = Constraint.load(rebuild(members), llama3)
    assert all(np.array_equal(loaded._masks[cid], m) for cid, m in walked._masks.items())
    _walk([walked, loaded], llama3, _texts("realistic_model"))


def test_mask_rows_are_checked(walked: Constraint, llama3: Vocab) -> None:
    members = members_of(walked.save())
    rows = A._array(A.MASK_ROWS, members[A.MASK_ROWS])
    masks = A._array(A.MASKS, members[A.MASKS])
    for bad in (
        np.where(rows == 0, -1, rows),  # a row before the first
        np.where(rows == 0, masks.shape[0], rows),  # a row past the last
        np.zeros_like(rows),  # rows no id refers to
        rows[:-1],  # one id without a row
    ):
        altered = dict(members)
        altered[A.MASK_ROWS] = A._npy(bad)
        assert "corrupt" in str(refused(rebuild(altered), llama3))
    altered = dict(members)
    altered[A.MASK_ROWS] = A._npy(np.zeros((rows.size, 1), "<i8"))  # another shape
    refused(rebuild(altered), llama3)
    extra = dict(members)
    extra[A.MASKS] = A._npy(np.concatenate([masks, masks[:1]]))  # a row no id refers to
    refused(rebuild(extra), llama3)


def test_a_member_taken_away_is_refused(walked: Constraint, llama3: Vocab) -> None:
    """The sealed header names every member: without the rows the masks would go to other ids,
    so a keyed blob whose rows were taken away (its seal untouched) is refused."""
    key = b"the deployment's key"
    members = members_of(walked.save(key=key))
    del members[A.MASK_ROWS]
    assert "members" in str(refused(rebuild(members, reseal=False), llama3, key=key))
