"""The per-position parts of a compile ahead of time in a saved constraint (artifact.py): a
compiled constraint saved and loaded gives the masks of the fresh one along every instance of
``schemas/`` on Llama 3's vocabulary and makes no relative walk or crossing the fresh one did not
make after its save; each part member corrupted, truncated or missing, each id out of range in a
resealed blob, is a ConstraintError; a version 2 blob without the part members still loads."""

from __future__ import annotations

import io
import pathlib
import sys
import zipfile
from typing import Any, Callable

import numpy as np
import pytest
from engine_support import greedy_tokens, json_grammar, load_vocab, person_grammar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hardening_artifacts import header_of, members_of, rebuild, refused

from structgen import ConstraintError, Grammar, LimitError
from structgen.engine import Constraint, EngineLimits
from structgen.engine import artifact as A
from structgen.vocab import Vocab

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.inputs import load_named_schemas, serialise  # noqa: E402

#: positions bounded by count, not by the clock: what a compile precomputes does not depend on
#: the machine's load (whole configurations too, as the constraint cache's compile does)
AHEAD = EngineLimits(aot_max_configs=200, aot_max_positions=3000, aot_budget_ms=10**7)
TEXT = b'{"a": [1, {"b": null}], "c": "x", "d": [true, -2.5e3]}'


@pytest.fixture(scope="module")
def llama3() -> Vocab:
    return load_vocab("llama-bpe")


@pytest.fixture(scope="module")
def compiled(llama3: Vocab) -> Constraint:
    """A recursive grammar compiled ahead: every part member holds entries."""
    return Constraint.compile(json_grammar(), llama3, mode="aot", limits=AHEAD)


@pytest.fixture(scope="module")
def blob(compiled: Constraint) -> bytes:
    return compiled.save()


def _walk(a: Constraint, b: Constraint, vocab: Vocab, text: bytes) -> int:
    """Walk ``text`` on both: every mask and commit must agree; returns the masks compared."""
    s1, s2 = a.start(), b.start()
    n = 0
    for i, tok in enumerate(greedy_tokens(vocab, text)):
        assert np.array_equal(s1.mask_words(), s2.mask_words()), f"masks differ at token {i} of {text!r}"
        n += 1
        ok = s1.commit_token(tok)
        assert s2.commit_token(tok) == ok
        if not ok:
            break  # an instance the translator's departures refuse
    return n


def _walks(c: Constraint) -> tuple[int, int]:
    stats = c.stats()
    return stats["relative_walks"], stats["crossing_walks"]


def _without_parts(blob: bytes) -> bytes:
    """``blob`` as a version 2 blob saved before the parts were kept: no part members, no
    report, no refused splits (resealed)."""
    members = {n: d for n, d in members_of(blob).items() if n not in A._PART_ARRAYS}
    h = header_of(members)
    h.pop("report", None)
    h.pop("spine_refused", None)
    return rebuild(members, header=h)


# -- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", load_named_schemas(), ids=lambda case: case.name)
def test_loaded_compiled_constraint_walks_nothing_new(case: Any, llama3: Vocab) -> None:
    fresh = Constraint.compile(Grammar.from_json_schema(case.schema), llama3, mode="aot", limits=AHEAD)
    saved = fresh.save()
    before = _walks(fresh)
    loaded = Constraint.load(saved, llama3)
    assert type(loaded) is Constraint and loaded.report == fresh.report
    assert len(loaded._positions) == len(fresh._positions) + sum(
        r not in fresh._positions for r in fresh._relative_masks.relative
    )
    assert _walks(loaded) == (0, 0)
    compared = 0
    for inst in case.instances:
        for spacing in ("default", "compact"):
            compared += _walk(fresh, loaded, llama3, serialise(inst, spacing).encode())
    assert compared > 10
    # what the fresh one had to walk after its save, the loaded one walks too: nothing more
    after = _walks(fresh)
    assert _walks(loaded) == (after[0] - before[0], after[1] - before[1])
    if fresh.report.complete:  # type: ignore[union-attr]
        assert _walks(loaded) == (0, 0)


def test_round_trip_of_a_recursive_grammar(compiled: Constraint, blob: bytes, llama3: Vocab) -> None:
    loaded = Constraint.load(blob, llama3)
    assert (
        loaded._relative_masks.crossings.keys() == compiled._relative_masks.crossings.keys()
        and loaded._relative_masks.crossings
    )
    before = _walks(compiled)
    _walk(compiled, loaded, llama3, TEXT)
    after = _walks(compiled)
    assert _walks(loaded) == (after[0] - before[0], after[1] - before[1])
    # saved again, the same parts
    again = Constraint.load(loaded.save(), llama3)
    assert again.report == compiled.report and len(again._positions) == len(loaded._positions)
    _walk(compiled, again, llama3, TEXT)


def test_keyed_blob_with_parts(compiled: Constraint, llama3: Vocab) -> None:
    key = b"the deployment's key"
    loaded = Constraint.load(compiled.save(key=key), llama3, key=key)
    assert loaded.report == compiled.report
    _walk(compiled, loaded, llama3, TEXT)


def test_version_2_blob_without_parts_loads(compiled: Constraint, blob: bytes, llama3: Vocab) -> None:
    loaded = Constraint.load(_without_parts(blob), llama3)
    assert type(loaded) is Constraint and loaded.report is None and not loaded._positions
    _walk(compiled, loaded, llama3, TEXT)


def test_dynamic_constraint_keeps_its_relative_walks(llama3: Vocab) -> None:
    """The relative walks a lazy constraint made at first use are saved too, as parts."""
    c = Constraint.compile(json_grammar(), llama3)
    text = b'{"name": ["Bo", {"age": 7}], "role": "user"}'
    _walk(c, c, llama3, text)
    assert c._relative_masks.relative
    loaded = Constraint.load(c.save(), llama3)
    assert loaded.report is None and len(loaded._positions) == len(c._relative_masks.relative)
    fresh = Constraint.compile(json_grammar(), llama3)
    _walk(fresh, loaded, llama3, text)
    assert _walks(loaded)[0] == 0


def test_masks_past_the_logit_width_in_parts() -> None:
    vocab = Vocab([bytes([i]) for i in range(256)] + [b"ab", b"abc"], eos_token_ids=[0])
    assert vocab.logit_width % 32
    c = Constraint.compile(person_grammar(), vocab, mode="aot", limits=AHEAD)
    members = members_of(c.save())
    Constraint.load(rebuild(members), vocab)
    parts = A._array(A.PARTS, members[A.PARTS])
    sparse = A._array(A.PART_SPARSE, members[A.PART_SPARSE]).copy()
    words = (vocab.logit_width + 31) // 32
    last = np.flatnonzero(sparse[:, 0] == words - 1)
    if last.size:
        sparse[last[0], 1] = -1
    else:  # no sparse mask reaches the last word: make the first one a mask of it alone
        first = int(parts[0, 3])
        assert first > 0
        sparse[first - 1] = (words - 1, -1)
    members[A.PART_SPARSE] = A._npy(sparse)
    assert "logit width" in str(refused(rebuild(members), vocab))


# -- altered, truncated, missing -----------------------------------------------------------------


@pytest.mark.parametrize("name", A._PART_ARRAYS)
def test_tampered_part_member_fails_its_digest(blob: bytes, llama3: Vocab, name: str) -> None:
    members = members_of(blob)
    data = bytearray(members[name])
    data[-1] ^= 0x01  # the last byte of the array's data (every part member of this blob holds some)
    members[name] = bytes(data)
    assert "digest" in str(refused(rebuild(members, reseal=False), llama3))


@pytest.mark.parametrize("name", A._PART_ARRAYS)
def test_truncated_part_member(blob: bytes, llama3: Vocab, name: str) -> None:
    members = members_of(blob)
    members[name] = members[name][:-4]
    assert "declares" in str(refused(rebuild(members), llama3))
    members[name] = members[name][:20]
    refused(rebuild(members), llama3)


@pytest.mark.parametrize("name", A._PART_ARRAYS)
def test_missing_part_member(blob: bytes, llama3: Vocab, name: str) -> None:
    """The part members come all together or not at all."""
    members = members_of(blob)
    members.pop(name)
    assert "members" in str(refused(rebuild(members), llama3))


@pytest.mark.parametrize(
    ("name", "array"),
    [
        (A.PARTS, np.zeros((1, 4), "<i8")),
        (A.PARTS, np.zeros((1, 5), "<i4")),
        (A.PART_DENSE, np.zeros((1, 7), "<i4")),
        (A.PART_SPARSE, np.zeros((3, 3), "<i4")),
        (A.EXITS, np.zeros(4, "<i8")),
        (A.EXIT_NODES, np.zeros((2, 2), "<i4")),
        (A.CROSSINGS, np.zeros((1, 2), "<i8")),
        (A.CROSSING_IDS, np.zeros(3, "<f4")),
    ],
)
def test_part_member_of_the_wrong_layout(blob: bytes, llama3: Vocab, name: str, array: np.ndarray) -> None:
    members = members_of(blob)
    members[name] = A._npy(array)
    refused(rebuild(members), llama3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_byte_of_the_parts_changed(blob: bytes, compiled: Constraint, llama3: Vocab, data: Any) -> None:
    """A byte changed inside a part member (unsealed): refused, or harmless (a zip field)."""
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        spans = [(i.header_offset, i.header_offset + 30 + len(i.filename) + i.compress_size) for i in zf.infolist()]
        spans = [span for span, i in zip(spans, zf.infolist()) if i.filename in A._PART_ARRAYS]
    lo, hi = data.draw(st.sampled_from(spans))
    pos = data.draw(st.integers(lo, hi - 1))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != blob[pos]))
    try:
        loaded = Constraint.load(blob[:pos] + bytes([value]) + blob[pos + 1 :], llama3)
    except ConstraintError:
        return
    _walk(compiled, loaded, llama3, TEXT)


# -- ids out of range in a resealed blob ---------------------------------------------------------


def _edit(blob: bytes, name: str, edit: Callable[[np.ndarray, Constraint], Any], vocab: Vocab) -> bytes:
    members = members_of(blob)
    array = A._array(name, members[name]).copy()
    out = edit(array, Constraint.load(blob, vocab))
    members[name] = A._npy(array if out is None else out)
    return rebuild(members)


def _first_relative(parts: np.ndarray) -> int:
    return int(np.flatnonzero((parts[:, 1] == A.RELATIVE) & (parts[:, 4] > np.r_[0, parts[:-1, 4]]))[0])


def _first_sparse(parts: np.ndarray) -> int:
    return int(np.flatnonzero(parts[:, 3] - np.r_[0, parts[:-1, 3]] >= 2)[0])


def _falling_at(parts: np.ndarray) -> int:
    """A sparse part after one whose words end past 0: its end set below that makes the ends
    fall whichever part comes first (an end of 0 on the first part is an empty mask, valid)."""
    return int(np.flatnonzero((parts[1:, 3] - parts[:-1, 3] >= 1) & (parts[:-1, 3] >= 1))[0]) + 1


def _first_bottom(parts: np.ndarray) -> int:
    return int(np.flatnonzero(parts[:, 1] == A.BOTTOM)[0])


def _swap(parts: np.ndarray, i: int, j: int) -> None:
    parts[[i, j], 0] = parts[[j, i], 0]


EDITS: list[tuple[str, str, Callable[[np.ndarray, Constraint], Any]]] = [
    ("a configuration past the table", A.PARTS, lambda a, c: a.__setitem__((0, 0), len(c.system.configs))),
    ("a negative configuration", A.PARTS, lambda a, c: a.__setitem__((0, 0), -1)),
    ("a configuration twice", A.PARTS, lambda a, c: a.__setitem__((1, 0), a[0, 0])),
    ("the dead configuration", A.PARTS, lambda a, c: a.__setitem__((0, 0), 0)),
    ("exits of a bottom position", A.PARTS, lambda a, c: a.__setitem__((_first_relative(a), 1), A.BOTTOM)),
    ("a bottom and a relative part swapped", A.PARTS, lambda a, c: _swap(a, _first_bottom(a), _first_relative(a))),
    ("a bottom position over the hole", A.PARTS, lambda a, c: a.__setitem__((_first_bottom(a), 1), A.RELATIVE)),
    ("a kind that is none", A.PARTS, lambda a, c: a.__setitem__((0, 1), 2)),
    ("a dense mask past the masks", A.PARTS, lambda a, c: a.__setitem__((0, 2), 10**6)),
    ("a dense mask below -1", A.PARTS, lambda a, c: a.__setitem__((0, 2), -2)),
    ("a dense and sparse part", A.PARTS, lambda a, c: a.__setitem__((_first_sparse(a), 2), 0)),
    ("sparse ends falling", A.PARTS, lambda a, c: a.__setitem__((_falling_at(a), 3), a[_falling_at(a) - 1, 3] - 1)),
    ("sparse ends past the words", A.PARTS, lambda a, c: a.__setitem__((-1, 3), a[-1, 3] + 1)),
    ("exit ends falling", A.PARTS, lambda a, c: a.__setitem__((_first_relative(a), 4), -1)),
    ("exit ends past the groups", A.PARTS, lambda a, c: a.__setitem__((-1, 4), a[-1, 4] + 100)),
    ("a word past the mask", A.PART_SPARSE, lambda a, c: a.__setitem__((0, 0), 4008)),
    ("a negative word", A.PART_SPARSE, lambda a, c: a.__setitem__((0, 0), -1)),
    ("words out of order", A.PART_SPARSE, lambda a, c: a.__setitem__((1, 0), a[0, 0])),
    ("a dense mask a word short", A.PART_DENSE, lambda a, c: a[:, :-1].copy()),
    ("an exit level past the trie", A.EXITS, lambda a, c: a.__setitem__((0, 0), c._trie.depth)),
    ("a negative exit level", A.EXITS, lambda a, c: a.__setitem__((0, 0), -1)),
    ("exit levels out of order", A.EXITS, lambda a, c: a.__setitem__((1, 0), a[0, 0])),
    ("exit node ends falling", A.EXITS, lambda a, c: a.__setitem__((0, 1), -5)),
    ("exit node ends past the nodes", A.EXITS, lambda a, c: a.__setitem__((-1, 1), a[-1, 1] + 1)),
    ("a node past its level", A.EXIT_NODES, lambda a, c: a.__setitem__(0, 10**8)),
    ("a negative node", A.EXIT_NODES, lambda a, c: a.__setitem__(0, -1)),
    ("a crossing key of one id", A.CROSSINGS, lambda a, c: a.__setitem__((0, 0), 1)),
    ("crossing ids ends falling", A.CROSSINGS, lambda a, c: a.__setitem__((0, 1), -1)),
    ("crossing groups before the parts'", A.CROSSINGS, lambda a, c: a.__setitem__((0, 2), 0)),
    ("crossing groups past the groups", A.CROSSINGS, lambda a, c: a.__setitem__((-1, 2), a[-1, 2] + 1)),
    ("a crossing from no relative part", A.CROSSING_KEYS, lambda a, c: a.__setitem__(0, c.start_config)),
    ("a crossing from no configuration", A.CROSSING_KEYS, lambda a, c: a.__setitem__(0, 10**9)),
    ("a crossed top that is no term", A.CROSSING_KEYS, lambda a, c: a.__setitem__(1, 10**9)),
    ("a negative crossed top", A.CROSSING_KEYS, lambda a, c: a.__setitem__(1, -1)),
    ("a crossing twice", A.CROSSING_KEYS, lambda a, c: a.__setitem__(slice(2, 4), a[0:2])),
    ("a token past the logits", A.CROSSING_IDS, lambda a, c: a.__setitem__(0, c.vocab.logit_width)),
    ("a negative token", A.CROSSING_IDS, lambda a, c: a.__setitem__(0, -1)),
]


@pytest.mark.parametrize(("what", "name", "edit"), EDITS, ids=[e[0] for e in EDITS])
def test_ids_out_of_range(blob: bytes, llama3: Vocab, what: str, name: str, edit: Any) -> None:
    assert "corrupt" in str(refused(_edit(blob, name, edit, llama3), llama3))


WRONG_REPORTS: list[Callable[[dict[str, Any]], Any]] = [
    lambda r: r.pop("positions"),
    lambda r: r.update(positions=-1),
    lambda r: r.update(positions=True),
    lambda r: r.update(relative_parts="3"),
    lambda r: r.update(extra=1),
    lambda r: r.update(lazy={"no such kind": 1}),
    lambda r: r.update(lazy={"limit": -1}),
    lambda r: r.update(lazy=[]),
    lambda r: r.update(truncated=1),
    lambda r: r.update(stopped_by="the moon"),
    lambda r: r.update(seconds=-1.0),
    lambda r: r.update(seconds="1"),
    lambda r: r.update(memory_bytes=10**30),
]


@pytest.mark.parametrize("edit", WRONG_REPORTS)
def test_wrong_report(blob: bytes, llama3: Vocab, edit: Callable[[dict[str, Any]], Any]) -> None:
    members = members_of(blob)
    h = header_of(members)
    edit(h["report"])
    assert "report" in str(refused(rebuild(members, header=h), llama3))


@pytest.mark.parametrize("value", [None, 5, [-1], [10**9], ["x"], [True]], ids=repr)
def test_wrong_refused_splits(blob: bytes, llama3: Vocab, value: Any) -> None:
    members = members_of(blob)
    h = header_of(members)
    h["spine_refused"] = value
    refused(rebuild(members, header=h), llama3)


def test_report_of_a_dynamic_constraint_is_refused(blob: bytes, llama3: Vocab) -> None:
    members = members_of(blob)
    h = header_of(members)
    h["kind"] = "dynamic"
    assert "report" in str(refused(rebuild(members, header=h), llama3))
    h.pop("report")
    assert Constraint.load(rebuild(members, header=h), llama3).report is None


def test_parts_are_bounded_by_the_callers_memory(blob: bytes, llama3: Vocab) -> None:
    """The parts are charged against ``max_memory_bytes`` before they are built."""
    bare = Constraint.load(_without_parts(blob), llama3).memory_bytes()
    limit = max(bare, len(blob)) + 1024
    with pytest.raises(LimitError) as info:
        Constraint.load(blob, llama3, limits=EngineLimits(max_memory_bytes=limit))
    assert info.value.limit == "max_memory_bytes" and "parts" in str(info.value)


def test_a_blob_bloated_with_parts_is_refused_before_they_are_built(blob: bytes, llama3: Vocab) -> None:
    members = members_of(blob)
    members[A.PART_DENSE] = A._npy(np.zeros((2000, 4008), "<i4"))  # 32 MB of dense masks
    big = rebuild(members)
    with pytest.raises(LimitError):
        Constraint.load(big, llama3, limits=EngineLimits(max_memory_bytes=len(big) - 1))
    with pytest.raises(LimitError) as info:  # the blob fits, its parts built would not
        Constraint.load(big, llama3, limits=EngineLimits(max_memory_bytes=len(big) + 1024))
    assert "parts" in str(info.value)
