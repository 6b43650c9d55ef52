"""Saved constraints from an untrusted source: every malformed, truncated, altered or oversized
blob raises a structgen error (ConstraintError; VocabError for another vocabulary; LimitError for
one past the caller's limits), never MemoryError, RecursionError, KeyError and the like, and a
loaded constraint runs under the caller's limits, never the blob's."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zipfile
from typing import Any, Callable

import numpy as np
import pytest
from engine_support import greedy_tokens, json_grammar, load_vocab, person_grammar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structgen import ConstraintError, LimitError, StructgenError, VocabError
from structgen.engine import Constraint, EngineLimits
from structgen.engine import artifact as A
from structgen.vocab import Vocab

TEXT = b'{"name": "Bo", "age": 7, "role": "user"}'


@pytest.fixture(scope="module")
def llama3() -> Vocab:
    return load_vocab("llama-bpe")


@pytest.fixture(scope="module")
def person(llama3: Vocab) -> Constraint:
    c = Constraint.compile(person_grammar(), llama3)
    st_ = c.start()
    for t in greedy_tokens(llama3, TEXT):  # masks and table rows to save
        st_.mask_words()
        assert st_.commit_token(t)
    return c


@pytest.fixture(scope="module")
def blob(person: Constraint) -> bytes:
    return person.save()


def members_of(blob: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def header_of(members: dict[str, bytes]) -> dict[str, Any]:
    return json.loads(bytes(A._array(A.HEADER, members[A.HEADER])).decode())


def rebuild(
    members: dict[str, bytes],
    *,
    header: dict[str, Any] | bytes | None = None,
    reseal: bool = True,
    key: bytes | None = None,
    compression: int = zipfile.ZIP_STORED,
) -> bytes:
    """A blob of ``members`` (zip CRCs recomputed); with ``reseal``, the digests and the seal
    recomputed too, as a forger who read the format would (a plain SHA-256 seal stops
    corruption, not forgery: see ``save(key=...)``)."""
    members = dict(members)
    if reseal:
        h = header_of(members) if header is None else header
        if isinstance(h, dict):
            h = dict(h)
            names = A._ARRAYS + A._PART_ARRAYS + (A.MASK_ROWS,)
            h["digests"] = {n: hashlib.sha256(members[n]).hexdigest() for n in names if n in members}
            h = json.dumps(h).encode()
        members[A.HEADER] = A._npy(np.frombuffer(h, dtype=np.uint8))
        members[A.SEAL] = A._seal(members[A.HEADER], key)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def same_masks(a: Constraint, b: Constraint, vocab: Vocab, text: bytes = TEXT) -> None:
    s1, s2 = a.start(), b.start()
    for t in greedy_tokens(vocab, text):
        assert np.array_equal(s1.mask_words(), s2.mask_words())
        assert s1.commit_token(t) and s2.commit_token(t)


def refused(blob: object, vocab: Vocab, **kw: Any) -> ConstraintError:
    with pytest.raises(ConstraintError) as info:
        Constraint.load(blob, vocab, **kw)  # type: ignore[arg-type]
    return info.value


# -- round trips -------------------------------------------------------------------------------


def test_round_trip_and_cached_masks_served(person: Constraint, blob: bytes, llama3: Vocab) -> None:
    loaded = Constraint.load(blob, llama3)
    assert len(loaded._masks) == len(person._masks) > 0
    same_masks(person, loaded, llama3)
    assert Constraint.load(bytearray(blob), llama3).stats()["configs"] == person.stats()["configs"]


def test_round_trip_of_a_recursive_grammar(llama3: Vocab) -> None:
    c = Constraint.compile(json_grammar(), llama3)
    text = b'{"a": [1, {"b": null}], "c": "x"}'
    same_masks(c, c, llama3, text)
    same_masks(c, Constraint.load(c.save(), llama3), llama3, text)


# -- not a blob, empty, truncated --------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, "", "text", 0, 1.5, [], {}, object(), b"", b"PK", b"not a constraint"], ids=repr)
def test_not_a_blob(bad: object, llama3: Vocab) -> None:
    refused(bad, llama3)


def test_truncated_anywhere(blob: bytes, llama3: Vocab) -> None:
    cuts = sorted({*range(0, 64), *range(0, len(blob), max(1, len(blob) // 150)), len(blob) - 1, len(blob) - 22})
    for n in cuts:
        refused(blob[:n], llama3)


# -- altered bytes -----------------------------------------------------------------------------


def test_rewritten_masks_with_fresh_crcs_are_refused(blob: bytes, llama3: Vocab) -> None:
    """The issue's attack: cached masks rewritten to allow every token, the zip's CRCs
    recomputed, the vocabulary fingerprint untouched."""
    members = members_of(blob)
    masks = A._array(A.MASKS, members[A.MASKS]).copy()
    masks[:] = -1
    members[A.MASKS] = A._npy(masks)
    e = refused(rebuild(members, reseal=False), llama3)
    assert "digest" in str(e)


def test_rewritten_header_with_fresh_crcs_is_refused(blob: bytes, llama3: Vocab) -> None:
    members = members_of(blob)
    h = header_of(members)
    h["machines"]["nullable"] = [True for _ in h["machines"]["nullable"]]
    members[A.HEADER] = A._npy(np.frombuffer(json.dumps(h).encode(), dtype=np.uint8))
    assert "digest" in str(refused(rebuild(members, reseal=False), llama3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_byte_changed_is_refused_or_harmless(blob: bytes, person: Constraint, llama3: Vocab, data: Any) -> None:
    """A byte changed anywhere: refused, or (a zip field nothing reads, a file time) a
    constraint with the same masks."""
    pos = data.draw(st.integers(0, len(blob) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != blob[pos]))
    mutated = blob[:pos] + bytes([value]) + blob[pos + 1 :]
    try:
        loaded = Constraint.load(mutated, llama3)
    except ConstraintError:
        return
    same_masks(person, loaded, llama3)


def test_keyed_seal(person: Constraint, llama3: Vocab) -> None:
    key = b"a secret of the deployment"
    sealed = person.save(key=key)
    same_masks(person, Constraint.load(sealed, llama3, key=key), llama3)
    refused(sealed, llama3)  # no key: the caller did not ask for a keyed blob
    refused(sealed, llama3, key=b"another key")
    refused(person.save(), llama3, key=key)  # an unkeyed blob where a keyed one is required
    # a forger who recomputes every digest without the key is refused
    members = members_of(sealed)
    masks = A._array(A.MASKS, members[A.MASKS]).copy()
    masks[:] = -1
    members[A.MASKS] = A._npy(masks)
    refused(rebuild(members), llama3, key=key)
    for bad_key in (b"", "text", 5):
        with pytest.raises(ConstraintError):
            person.save(key=bad_key)  # type: ignore[arg-type]
        refused(sealed, llama3, key=bad_key)


# -- limits come from the caller ---------------------------------------------------------------


def test_header_cannot_set_limits(blob: bytes, person: Constraint, llama3: Vocab) -> None:
    members = members_of(blob)
    h = header_of(members)
    h["limits"] = {"max_configs": 10**12, "max_cached_masks": 10**12}
    loaded = Constraint.load(rebuild(members, header=h), llama3)
    assert loaded.limits == EngineLimits()
    mine = EngineLimits(max_configs=500, max_cached_masks=64)
    loaded = Constraint.load(blob, llama3, limits=mine)
    assert loaded.limits is mine and loaded._system.max_configs == 500
    same_masks(person, loaded, llama3)


def test_caller_limits_bound_the_loaded_constraint(blob: bytes, person: Constraint, llama3: Vocab) -> None:
    n = person.stats()["configs"]
    with pytest.raises(LimitError) as info:
        Constraint.load(blob, llama3, limits=EngineLimits(max_configs=n - 1))
    assert info.value.limit == "max_configs"
    loaded = Constraint.load(blob, llama3, limits=EngineLimits(max_cached_masks=2))
    assert len(loaded._masks) == 2
    same_masks(person, loaded, llama3)
    with pytest.raises(LimitError) as info:
        Constraint.load(blob, llama3, limits=EngineLimits(max_memory_bytes=len(blob) - 1))
    assert info.value.limit == "max_memory_bytes"
    members = members_of(blob)
    h = header_of(members)
    h["note"] = "x" * 200_000
    padded = rebuild(members, header=h)
    with pytest.raises(LimitError) as info:  # the blob fits, its header parsed would not
        Constraint.load(padded, llama3, limits=EngineLimits(max_memory_bytes=len(padded) + 1))
    assert info.value.limit == "max_memory_bytes" and "header" in str(info.value)
    with pytest.raises(ConstraintError):
        Constraint.load(blob, llama3, limits={"max_configs": 5})  # type: ignore[arg-type]


def test_another_vocabulary(blob: bytes) -> None:
    with pytest.raises(VocabError):
        Constraint.load(blob, load_vocab("llama-spm"))


# -- what members declare ----------------------------------------------------------------------


def _central_sizes(blob: bytes, name: str, size: int) -> bytes:
    """``blob`` with the sizes the central directory declares for ``name`` set to ``size``
    (zip64 is not used: the field is 32 bits)."""
    out = bytearray(blob)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        name_len = struct.unpack_from("<H", out, at + 28)[0]
        if out[at + 46 : at + 46 + name_len] == name.encode():
            struct.pack_into("<II", out, at + 20, size, size)
            return bytes(out)
        at = out.find(b"PK\x01\x02", at + 4)
    raise AssertionError(name)


@pytest.mark.parametrize("name", [A.HEADER, A.TABLE, A.MASKS, A.SEAL])
def test_huge_declared_member_sizes(blob: bytes, llama3: Vocab, name: str) -> None:
    refused(_central_sizes(blob, name, 0xFFFF_FFF0), llama3)


def test_npy_header_declaring_954_gib(blob: bytes, llama3: Vocab) -> None:
    """A table member whose .npy header declares 954 GiB (and whose digests are right)."""
    members = members_of(blob)
    data = members[A.TABLE]
    fake = io.BytesIO()
    np.lib.format.write_array_header_1_0(fake, {"descr": "<i4", "fortran_order": False, "shape": (10**9, 256)})
    members[A.TABLE] = fake.getvalue() + data[len(fake.getvalue()) :]
    e = refused(rebuild(members), llama3)
    assert "declares" in str(e)


def test_zip_bomb_and_compressed_members(blob: bytes, llama3: Vocab) -> None:
    members = members_of(blob)
    # 64 MB of zeros deflate to about 64 KB: a member is refused before it is inflated
    members[A.MASKS] = A._npy(np.zeros((64 * 1024 * 1024 // 4,), dtype="<i4"))
    bomb = rebuild(members, compression=zipfile.ZIP_DEFLATED)
    assert len(bomb) < 1024 * 1024
    assert "compressed" in str(refused(bomb, llama3))
    assert "compressed" in str(refused(rebuild(members_of(blob), compression=zipfile.ZIP_DEFLATED), llama3))


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.pop(A.SEAL),
        lambda m: m.pop(A.MASKS),
        lambda m: m.update({"extra.npy": b"x"}),
        lambda m: m.update({A.SEAL: b""}),
        lambda m: m.update({A.MASKS: b"not npy"}),
        lambda m: m.update({A.MASKS: A._npy(np.zeros((1, 4), np.float64))}),
        lambda m: m.update({A.MASKS: A._npy(np.zeros((2, 2, 2), np.int32))}),
        lambda m: m.update({A.TABLE: A._npy(np.zeros((4, 255), np.int32))}),
        lambda m: m.update({A.MASK_IDS: A._npy(np.zeros(3, np.int32))}),
        lambda m: m.update({A.HEADER: A._npy(np.zeros((2, 2), np.uint8))}),
    ],
)
def test_wrong_members(blob: bytes, llama3: Vocab, edit: Callable[[dict[str, bytes]], object]) -> None:
    members = members_of(blob)
    header = header_of(members)
    edit(members)
    if A.HEADER in members and members[A.HEADER] != members_of(blob)[A.HEADER]:
        # the header itself replaced: seal what is there, so the layout check is what refuses
        if A.SEAL in members:
            members[A.SEAL] = A._seal(members[A.HEADER], None)
        refused(rebuild(members, reseal=False), llama3)
    else:
        refused(rebuild(members, header=header, reseal=A.SEAL in members and members[A.SEAL] != b""), llama3)


def test_version_1_blob_is_refused_by_name(llama3: Vocab) -> None:
    buf = io.BytesIO()
    np.savez(
        buf,
        header=np.frombuffer(b'{"format": "structgen-constraint", "version": 1}', np.uint8),
        table=np.zeros(1),
        mask_ids=np.zeros(1),
        masks=np.zeros(1),
    )
    assert "version 1" in str(refused(buf.getvalue(), llama3))


def test_encrypted_flag(blob: bytes, llama3: Vocab) -> None:
    out = bytearray(blob)
    at = out.find(b"PK\x01\x02")
    out[at + 8] |= 1  # general purpose flag, bit 0: encrypted
    refused(bytes(out), llama3)


def test_duplicate_member_names(blob: bytes, llama3: Vocab) -> None:
    members = members_of(blob)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        with pytest.warns(UserWarning):
            zf.writestr(A.MASKS, members[A.MASKS])
    refused(buf.getvalue(), llama3)


# -- the header's contents (sealed again, as a forger would) ----------------------------------


def test_deeply_nested_header(blob: bytes, llama3: Vocab) -> None:
    members = members_of(blob)
    for deep in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000):
        e = refused(rebuild(members, header=deep), llama3)
        assert "nested" in str(e)
    # brackets inside strings (and escaped quotes) are no nesting
    h = header_of(members)
    h["note"] = '\\"' + "[" * 1000 + '"\\\\'
    Constraint.load(rebuild(members, header=h), llama3)


@pytest.mark.parametrize(
    "header",
    [b"", b"null", b"[]", b'"x"', b"{", b"\xff\xfe", b"{}", b'{"format": "structgen-constraint"}', b"1e999999"],
    ids=repr,
)
def test_header_not_a_header(blob: bytes, llama3: Vocab, header: bytes) -> None:
    refused(rebuild(members_of(blob), header=header), llama3)


WRONG = [None, True, 1.5, -1, 10**30, "x", "", [], {}, [[]], [-5, "a"], {"a": 1}]


def _paths(h: Any, prefix: tuple = ()) -> list[tuple]:
    """Paths to the fields of the header (the grammar's and the tables' first entries too)."""
    out = [prefix] if prefix else []
    if isinstance(h, dict):
        for k, v in h.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(h, list):
        for i, v in enumerate(h[:3]):
            out += _paths(v, prefix + (i,))
    return out


def _replaced(h: Any, path: tuple, value: Any) -> Any:
    h = json.loads(json.dumps(h))
    node = h
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return h


def test_every_header_field_with_wrong_values(blob: bytes, person: Constraint, llama3: Vocab) -> None:
    """Each field of the header (each key, the first entries of each list) replaced by values of
    the wrong type or range: refused with a structgen error, or a constraint that works."""
    members = members_of(blob)
    h = header_of(members)
    paths = [p for p in _paths(h) if p[0] not in ("digests", "seal")]
    assert len(paths) > 40
    for path in paths:
        for value in WRONG:
            try:
                loaded = Constraint.load(rebuild(members, header=_replaced(h, path, value)), llama3)
            except VocabError:
                assert path == ("vocab_fingerprint",)
                continue
            except StructgenError:
                continue
            _use(loaded, llama3)


def _use(c: Constraint, vocab: Vocab) -> None:
    """Walk a loaded (perhaps forged) constraint: structgen errors only, whatever it allows."""
    st_ = c.start()
    try:
        for t in greedy_tokens(vocab, TEXT):
            st_.mask_words()
            if not st_.commit_token(t):
                break
    except StructgenError:
        pass


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("stacks", 0), [5, 0]),  # a parent after the stack
        (("stacks", 0), [-9, 2]),
        (("stacks", 0), [-1, 10**9]),  # a top past the terms
        (("configs", 0), [10**6]),
        (("configs", 0), []),
        (("terms", 0), [1, 0, "-5"]),  # a negative byte set
        (("terms", 0), [1, 0, "1_f"]),
        (("terms", 0), [3, 10**6, 2]),  # a sequence of terms that do not exist
        (("terms", 0), [3, -1, 2]),
        (("terms", 0), [9, 5, None]),  # a symbol below the symbols
        (("terms", 0), [9, 10**6, None]),  # a call to a machine that does not exist
        (("terms", 0), [10, [False, 0], "no such rule"]),
        (("terms", 0), [99, 0, 0]),
        (("machines", "start"), 7),
        (("machines", "body"), [10**6]),
        (("machines", "atoms"), [[[-1], None, False]]),
    ],
)
def test_header_indices_out_of_range(blob: bytes, llama3: Vocab, where: tuple, value: Any) -> None:
    members = members_of(blob)
    refused(rebuild(members, header=_replaced(header_of(members), where, value)), llama3)


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.__setitem__((1, 5), 10**6),  # a target that is no configuration
        lambda t: t.__setitem__((1, 5), -7),
        lambda t: t.__setitem__((0, 0), 1),  # the dead configuration leads somewhere
    ],
)
def test_table_targets_out_of_range(blob: bytes, llama3: Vocab, edit: Callable[[np.ndarray], None]) -> None:
    members = members_of(blob)
    table = A._array(A.TABLE, members[A.TABLE]).copy()
    edit(table)
    members[A.TABLE] = A._npy(table)
    refused(rebuild(members), llama3)


def test_extra_table_rows(blob: bytes, llama3: Vocab) -> None:
    members = members_of(blob)
    table = A._array(A.TABLE, members[A.TABLE])
    members[A.TABLE] = A._npy(np.concatenate([table, np.full((10**4, 256), -1, np.int32)]))
    refused(rebuild(members), llama3)


@pytest.mark.parametrize("ids", [[-1], [10**6], "dup"])
def test_mask_ids_out_of_range(blob: bytes, llama3: Vocab, ids: Any) -> None:
    members = members_of(blob)
    mask_ids = A._array(A.MASK_IDS, members[A.MASK_IDS]).copy()
    if ids == "dup":
        mask_ids[1] = mask_ids[0]
    else:
        mask_ids[0] = ids[0]
    members[A.MASK_IDS] = A._npy(mask_ids)
    refused(rebuild(members), llama3)


def test_masks_past_the_logit_width() -> None:
    vocab = Vocab([bytes([i]) for i in range(256)] + [b"ab", b"abc"], eos_token_ids=[0])
    assert vocab.logit_width % 32  # the last word has bits past the width
    c = Constraint.compile(person_grammar(), vocab)
    c.start().mask_words()
    members = members_of(c.save())
    masks = A._array(A.MASKS, members[A.MASKS]).copy()
    masks[0, -1] = -1
    members[A.MASKS] = A._npy(masks)
    refused(rebuild(members), vocab)
    members = members_of(c.save())
    masks = A._array(A.MASKS, members[A.MASKS])
    members[A.MASKS] = A._npy(masks[:, :-1].copy())  # one word short
    refused(rebuild(members), vocab)
