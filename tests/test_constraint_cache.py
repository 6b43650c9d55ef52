"""The shared constraint cache: LRU, bounded in count and in the bytes its constraints hold; a
dynamic constraint first, the ahead-of-time compiled one when the background compile finishes;
compiled constraints kept on disk between processes."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from generation_support import byte_vocab

from structgen import Grammar, LimitError
from structgen.constraint_cache import ConstraintCache, ConstraintCacheTuning
from structgen.engine import artifact as A
from structgen.grammar import ir


def grammar(word: str) -> Grammar:
    return Grammar({"root": ir.seq(ir.lit(word), ir.plus(ir.char((97, 122))))})


LAZY_ONLY = ConstraintCacheTuning(compile_ahead=False)


def test_hits_return_the_same_constraint():
    cache = ConstraintCache(LAZY_ONLY)
    vocab = byte_vocab()
    a = cache.get(grammar("x"), vocab)
    assert cache.get(grammar("x"), vocab) is a
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1


def test_count_bound_evicts_the_oldest():
    cache = ConstraintCache(ConstraintCacheTuning(max_constraints=2, compile_ahead=False))
    vocab = byte_vocab()
    first = cache.get(grammar("a"), vocab)
    cache.get(grammar("b"), vocab)
    cache.get(grammar("c"), vocab)
    assert cache.stats()["constraints"] == 2
    assert cache.get(grammar("a"), vocab) is not first


def test_byte_bound_keeps_only_what_fits_and_never_the_one_returned():
    vocab = byte_vocab()
    cache = ConstraintCache(ConstraintCacheTuning(max_bytes=1, compile_ahead=False))
    for w in ("a", "b", "c"):
        c = cache.get(grammar(w), vocab)
        assert c.memory_bytes() > 1
        assert cache.stats()["constraints"] == 1
    assert cache.get(grammar("c"), vocab) is c


@pytest.mark.parametrize(
    "bad",
    [
        {"max_constraints": 0},
        {"max_bytes": -1},
        {"max_bytes": 1.5},
        {"max_constraints": True},
        {"compile_ahead": 1},
        {"ahead_deadline_s": 0},
        {"ahead_deadline_s": True},
        {"max_pending": 0},
        {"max_disk_bytes": 0},
        {"disk_dir": 3},
    ],
)
def test_tuning_is_checked(bad):
    with pytest.raises(LimitError):
        ConstraintCacheTuning(**bad)


def walk_masks(constraint, text: bytes) -> list[bytes]:
    state, masks = constraint.start(), []
    for b in text:
        masks.append(state.mask_words().tobytes())
        assert state.commit_token(b)
    masks.append(state.mask_words().tobytes())
    return masks


def test_a_miss_is_dynamic_and_the_compiled_constraint_replaces_it():
    vocab = byte_vocab()
    cache = ConstraintCache()
    g = grammar("key")
    first = cache.get(g, vocab)
    assert cache.wait(timeout=60)
    assert cache.is_compiled(g, vocab)
    compiled = cache.get(g, vocab)
    assert compiled is not first
    assert cache.stats()["compiled_ahead"] == 1 and cache.stats()["compiled"] == 1
    assert walk_masks(compiled, b"keyabc") == walk_masks(first, b"keyabc")
    # a state started on the dynamic constraint goes on there: the swap only affects new lookups
    assert cache.get(g, vocab) is compiled


def test_an_ahead_compile_past_its_deadline_keeps_the_dynamic_constraint():
    vocab = byte_vocab()
    cache = ConstraintCache(ConstraintCacheTuning(ahead_deadline_s=1e-9))
    g = grammar("q")
    first = cache.get(g, vocab)
    assert cache.wait(timeout=60)
    assert cache.get(g, vocab) is first
    assert cache.stats()["ahead_failures"] == 1 and not cache.is_compiled(g, vocab)


def test_the_backlog_is_bounded():
    vocab = byte_vocab()
    cache = ConstraintCache(ConstraintCacheTuning(max_pending=1))
    for w in ("aa", "bb", "cc", "dd"):
        cache.get(grammar(w), vocab)
    assert cache.stats()["pending"] <= 1
    assert cache.wait(timeout=60)


def test_compiled_constraints_are_kept_on_disk_for_the_next_process(tmp_path):
    vocab = byte_vocab()
    tuning = ConstraintCacheTuning(disk_dir=str(tmp_path))
    g = grammar("disk")
    writer = ConstraintCache(tuning)
    dynamic = writer.get(g, vocab)
    assert writer.wait(timeout=60)
    files = list(tmp_path.glob("*.sgc"))
    assert len(files) == 1
    assert (tmp_path / "seal.key").stat().st_mode & 0o077 == 0
    reader = ConstraintCache(tuning)
    loaded = reader.get(g, vocab)
    stats = reader.stats()
    assert stats["disk_hits"] == 1
    # the saved one holds its compile's parts and report: compiled at once, no compile queued
    assert reader.is_compiled(g, vocab) and loaded.report is not None
    assert stats["pending"] == 0 and reader.wait(timeout=0)
    assert walk_masks(loaded, b"diskzz") == walk_masks(dynamic, b"diskzz")
    assert reader.get(g, vocab) is loaded and reader.stats()["compiled_ahead"] == 0


def test_an_altered_file_on_disk_is_deleted_and_never_served(tmp_path):
    vocab = byte_vocab()
    tuning = ConstraintCacheTuning(disk_dir=str(tmp_path))
    g = grammar("tamper")
    writer = ConstraintCache(tuning)
    writer.get(g, vocab)
    assert writer.wait(timeout=60)
    (path,) = tmp_path.glob("*.sgc")
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    reader = ConstraintCache(ConstraintCacheTuning(disk_dir=str(tmp_path), compile_ahead=False))
    served = reader.get(g, vocab)
    assert reader.stats()["disk_hits"] == 0 and not path.exists()
    state = served.start()
    assert np.array_equal(np.flatnonzero(state.mask()), [ord("t")])


def test_the_disk_store_is_bounded_in_bytes(tmp_path):
    vocab = byte_vocab()
    cache = ConstraintCache(ConstraintCacheTuning(disk_dir=str(tmp_path), max_disk_bytes=1))
    cache.get(grammar("big"), vocab)
    assert cache.wait(timeout=60)
    assert list(tmp_path.glob("*.sgc")) == []


def test_a_compiled_constraint_saved_without_its_parts_is_compiled_again(tmp_path):
    """A file written before saved constraints held their compile's parts and report (the same
    version 2 format without those members) serves at once and is compiled in the background."""
    vocab = byte_vocab()
    tuning = ConstraintCacheTuning(disk_dir=str(tmp_path))
    g = grammar("older")
    writer = ConstraintCache(tuning)
    writer.get(g, vocab)
    assert writer.wait(timeout=60)
    (path,) = tmp_path.glob("*.sgc")
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as zf:
        members = {name: zf.read(name) for name in zf.namelist() if name not in A._PART_ARRAYS}
    header = json.loads(bytes(A._array(A.HEADER, members[A.HEADER])).decode())
    for name in ("report", "spine_refused"):
        header.pop(name)
    header["digests"] = {name: header["digests"][name] for name in A._ARRAYS + (A.MASK_ROWS,)}
    members[A.HEADER] = A._npy(np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
    members[A.SEAL] = A._seal(members[A.HEADER], (tmp_path / "seal.key").read_bytes())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    path.write_bytes(buf.getvalue())
    reader = ConstraintCache(tuning)
    loaded = reader.get(g, vocab)
    assert reader.stats()["disk_hits"] == 1 and loaded.report is None
    assert reader.wait(timeout=60) and reader.is_compiled(g, vocab) and reader.stats()["compiled_ahead"] == 1
    assert reader.get(g, vocab) is not loaded
