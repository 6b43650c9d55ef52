"""structgen.vocab.cache: round trip, damaged files rebuilt, no pickle, never an error."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from vocab_support import vocab_cache_dir  # noqa: F401 - fixture

from structgen.vocab.cache import CACHE_VERSION, cache_dir, cache_path, cached_arrays

pytestmark = pytest.mark.usefixtures("vocab_cache_dir")

FP = "ab" * 32


class Builder:
    def __init__(self, value: int = 7) -> None:
        self.calls = 0
        self.value = value

    def __call__(self) -> dict[str, np.ndarray]:
        self.calls += 1
        return {"table": np.arange(10, dtype=np.int32) * self.value, "flags": np.array([True, False])}


def test_round_trip(vocab_cache_dir: Path) -> None:
    build = Builder()
    first = cached_arrays(FP, "engine-table-v1", build)
    second = cached_arrays(FP, "engine-table-v1", build)
    assert build.calls == 1
    assert set(second) == {"table", "flags"}
    assert np.array_equal(first["table"], second["table"]) and second["table"].dtype == np.int32
    assert np.array_equal(second["flags"], [True, False])
    path = cache_path(FP, "engine-table-v1")
    assert path.parent == vocab_cache_dir == cache_dir()
    assert path.is_file() and f".v{CACHE_VERSION}.npz" in path.name
    assert not [p for p in vocab_cache_dir.iterdir() if p.name.endswith(".tmp")]


def test_keys_and_fingerprints_are_separate() -> None:
    a, b, c = Builder(1), Builder(2), Builder(3)
    cached_arrays(FP, "k", a)
    cached_arrays(FP, "other/key with spaces", b)
    cached_arrays("cd" * 32, "k", c)
    assert (a.calls, b.calls, c.calls) == (1, 1, 1)
    assert cached_arrays(FP, "other/key with spaces", Builder(9))["table"][1] == 2


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"not a zip file"),
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
        lambda p: p.write_bytes(b""),
        lambda p: p.write_bytes(_npy_bytes(np.arange(3))),  # a .npy, not an .npz
    ],
)
def test_damaged_file_is_rebuilt(damage) -> None:  # type: ignore[no-untyped-def]
    cached_arrays(FP, "k", Builder())
    path = cache_path(FP, "k")
    damage(path)
    build = Builder()
    out = cached_arrays(FP, "k", build)
    assert build.calls == 1 and np.array_equal(out["table"], np.arange(10) * 7)
    again = Builder()
    cached_arrays(FP, "k", again)
    assert again.calls == 0  # the rebuilt file is good


def test_entry_for_another_key_is_not_trusted() -> None:
    cached_arrays("cd" * 32, "k", Builder(5))
    # someone copies another entry over this one's name: the stored fingerprint no longer matches
    cache_path("cd" * 32, "k").replace(cache_path(FP, "k"))
    build = Builder()
    assert cached_arrays(FP, "k", build)["table"][1] == 7 and build.calls == 1


UNPICKLED: list[str] = []


def _record() -> str:
    UNPICKLED.append("ran")
    return "payload"


class Payload:
    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_record, ())


def test_pickled_arrays_are_never_loaded() -> None:
    path = cache_path(FP, "k")
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, table=np.array([Payload()], dtype=object))
    path.write_bytes(buf.getvalue())
    build = Builder()
    out = cached_arrays(FP, "k", build)
    assert UNPICKLED == [] and build.calls == 1 and out["table"].dtype == np.int32


def test_object_arrays_are_refused() -> None:
    with pytest.raises(TypeError, match="non-object"):
        cached_arrays(FP, "obj", lambda: {"x": np.array([object()], dtype=object)})
    with pytest.raises(TypeError):
        cached_arrays(FP, "notdict", lambda: [np.arange(3)])  # type: ignore[arg-type, return-value]
    with pytest.raises(ValueError, match="reserved"):
        cached_arrays(FP, "reserved", lambda: {"__structgen_key__": np.arange(3)})


def test_unwritable_cache_dir_is_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("STRUCTGEN_CACHE_DIR", str(blocker / "sub"))
    build = Builder()
    assert cached_arrays(FP, "k", build)["table"][2] == 14
    assert cached_arrays(FP, "k", build)["table"][2] == 14
    assert build.calls == 2


def test_default_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRUCTGEN_CACHE_DIR")
    assert cache_dir() == Path.home() / ".cache" / "structgen"
