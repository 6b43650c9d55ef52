"""Vocab.from_llama_cpp (asks the runtime) agrees with Vocab.from_gguf (reads the file)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from vocab_support import ASSETS, assert_same_vocab, gguf_vocab, model_path, model_vocab, vocab_path

from structgen.errors import VocabError
from structgen.vocab import Vocab

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")


def _llama(path: Path) -> object:
    return llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)


def _check(path: Path, expected: Vocab, capsys: pytest.CaptureFixture[str], label: str) -> None:
    llm = _llama(path)
    t0 = time.perf_counter()
    got = Vocab.from_llama_cpp(llm)
    dt = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\n  from_llama_cpp {label}: {1000 * dt:.0f} ms", end="")
    assert_same_vocab(got, expected)
    assert got == expected  # printed forms of special tokens too
    assert got.logit_width == llm.n_vocab()


@pytest.mark.parametrize("name", ["llama-bpe", "qwen2", "llama-spm"])
def test_agrees_with_gguf(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    _check(vocab_path(name), gguf_vocab(name), capsys, name)


@pytest.mark.parametrize("name", ["smollm2", "gemma3-270m"])
def test_agrees_with_gguf_on_models(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    _check(model_path(name), model_vocab(name), capsys, name)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", [n for n in ASSETS.vocab_names() if n not in ("bert-bge", "llama-bpe", "qwen2", "llama-spm")]
)
def test_agrees_with_gguf_everywhere(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    # command-r: normal tokens outside GPT-2's alphabet, printed by llama.cpp as "[UNK_BYTE_0x..]",
    # are never text on both sides
    _check(vocab_path(name), gguf_vocab(name), capsys, name)


def test_not_a_llama() -> None:
    with pytest.raises(VocabError, match="loaded llama_cpp.Llama"):
        Vocab.from_llama_cpp(SimpleNamespace())
    with pytest.raises(VocabError, match="user_defined"):
        Vocab.from_llama_cpp(SimpleNamespace(), user_defined="sometimes")
