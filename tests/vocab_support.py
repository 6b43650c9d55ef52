"""Helpers for the vocabulary tests: asset lookup, llama.cpp's tokenizer test vectors, a tiny
GGUF writer for crafted files, and an isolated cache directory."""

from __future__ import annotations

import functools
import importlib.util
import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from structgen.vocab import Vocab

_REPO = Path(__file__).resolve().parent.parent


def _load_assets_module() -> ModuleType:
    name = "structgen_tools_assets"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _REPO / "tools" / "assets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


ASSETS = _load_assets_module()


def vocab_path(name: str) -> Path:
    p = ASSETS.find_asset("vocab", name)
    if p is None:
        pytest.skip(ASSETS.missing_reason("vocab", name))
    return p


def model_path(name: str) -> Path:
    p = ASSETS.find_asset("model", name)
    if p is None:
        pytest.skip(ASSETS.missing_reason("model", name))
    return p


@functools.lru_cache(maxsize=None)
def _load_cached(path: str) -> Vocab:
    return Vocab.from_gguf(path, cache=False)


def gguf_vocab(name: str) -> Vocab:
    """The vocabulary asset ``name`` loaded with from_gguf (memoised for the session)."""
    return _load_cached(str(vocab_path(name)))


def model_vocab(name: str) -> Vocab:
    return _load_cached(str(model_path(name)))


_SEPARATOR = b"\n__ggml_vocab_test__\n"


def read_vectors(name: str) -> list[tuple[bytes, list[int]]]:
    """llama.cpp's test vectors for vocabulary ``name``: (text, expected ids), parsed as
    ``tests/test-tokenizer-0.cpp`` reads them (texts split by a marker line, one id line each)."""
    paths = ASSETS.vocab_vectors(name)
    if paths is None:
        pytest.skip(ASSETS.missing_reason("vocab", name))
    inp, out = paths
    raw = inp.read_bytes()
    texts: list[bytes] = []
    pos = 0
    while pos < len(raw):
        nxt = raw.find(_SEPARATOR, pos)
        if nxt < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(_SEPARATOR)
    lines = out.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert len(lines) == len(texts), f"{name}: {len(texts)} texts but {len(lines)} id lines"
    return [(t, [int(x) for x in line.split()]) for t, line in zip(texts, lines)]


# ----------------------------------------------------------------- GGUF writer

_SCALAR_CODES = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
UINT32, INT32, BOOL, STRING, ARRAY = 4, 5, 7, 8, 9


def _value(vtype: int, value: Any) -> bytes:
    if vtype == STRING:
        b = value if isinstance(value, bytes) else str(value).encode("utf-8")
        return struct.pack("<Q", len(b)) + b
    if vtype == ARRAY:
        etype, items = value
        body = b"".join(_value(etype, item) for item in items)
        return struct.pack("<IQ", etype, len(items)) + body
    return struct.pack("<" + _SCALAR_CODES[vtype], value)


def gguf_bytes(kvs: list[tuple[str, int, Any]], version: int = 3) -> bytes:
    """A GGUF file with metadata ``kvs`` ((key, type, value); arrays as (elem_type, items)) and
    no tensors."""
    out = [b"GGUF", struct.pack("<IQQ", version, 0, len(kvs))]
    for key, vtype, value in kvs:
        out.append(_value(STRING, key) + struct.pack("<I", vtype) + _value(vtype, value))
    return b"".join(out)


def tiny_spm_kvs(extra: list[tuple[str, int, Any]] | None = None) -> list[tuple[str, int, Any]]:
    """Metadata of a 8-token SentencePiece vocabulary."""
    tokens = ["<unk>", "<s>", "</s>", "<0x0A>", "\u2581a", "b", "\u2581ab", "<|im_end|>"]
    types = [2, 3, 3, 6, 1, 1, 1, 4]
    return [
        ("general.name", STRING, "tiny"),
        ("tokenizer.ggml.model", STRING, "llama"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (INT32, types)),
        ("tokenizer.ggml.eos_token_id", UINT32, 2),
        *(extra or []),
    ]


@pytest.fixture
def vocab_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the structgen cache at a fresh temporary directory."""
    d = tmp_path / "structgen-cache"
    monkeypatch.setenv("STRUCTGEN_CACHE_DIR", str(d))
    return d


def assert_same_vocab(a: Vocab, b: Vocab) -> None:
    """Equal token bytes, text/special flags, eos ids and width, with a readable first difference."""
    assert a.n_tokens == b.n_tokens
    diff = np.flatnonzero((a.lengths != b.lengths) | (a.is_special != b.is_special))
    if len(diff) == 0 and not np.array_equal(a.buffer, b.buffer):
        diff = np.array([i for i in range(a.n_tokens) if a.token_bytes(i) != b.token_bytes(i)][:5])
    if len(diff):
        i = int(diff[0])
        pytest.fail(
            f"{len(diff)} tokens differ; first {i}: {a.token_bytes(i)!r} special={a.is_special[i]} "
            f"vs {b.token_bytes(i)!r} special={b.is_special[i]}"
        )
    assert a.eos_token_ids == b.eos_token_ids
    assert a.logit_width == b.logit_width
