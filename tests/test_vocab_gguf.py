"""Vocab.from_gguf on llama.cpp's vocabulary files and test vectors, the two model GGUFs, crafted
and damaged files, and the load cache."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vocab_support import (
    ARRAY,
    ASSETS,
    BOOL,
    INT32,
    STRING,
    UINT32,
    gguf_bytes,
    gguf_vocab,
    model_vocab,
    read_vectors,
    tiny_spm_kvs,
    vocab_cache_dir,  # noqa: F401 - fixture
    vocab_path,
)

from structgen.errors import VocabError
from structgen.vocab import Vocab
from structgen.vocab.gguf_file import read_gguf_metadata

pytestmark = pytest.mark.usefixtures("vocab_cache_dir")

SUPPORTED_WITH_VECTORS = [n for n in ASSETS.vocab_names(with_vectors=True) if n != "bert-bge"]


def _adds_space_prefix(path: Path) -> bool:
    md = read_gguf_metadata(path, ["tokenizer.ggml.model", "tokenizer.ggml.add_space_prefix"])
    return md["tokenizer.ggml.model"] == b"llama" and md.get("tokenizer.ggml.add_space_prefix", True)


@pytest.mark.parametrize("name", SUPPORTED_WITH_VECTORS)
def test_llama_cpp_vectors(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The expected ids of every llama.cpp tokenizer vector are text tokens whose bytes spell the
    input (with SentencePiece's dummy-prefix space, which llama.cpp adds without BOS)."""
    vocab = gguf_vocab(name)
    prefix = _adds_space_prefix(vocab_path(name))
    vectors = read_vectors(name)
    agree = 0
    failures = []
    for text, ids in vectors:
        expected = b" " + text if prefix and text else text
        got = vocab.detokenize(ids)
        if got == expected and all(vocab.is_text[i] for i in ids):
            agree += 1
        else:
            failures.append((text, got))
    with capsys.disabled():
        print(f"\n  vectors {name}: {agree}/{len(vectors)} agree", end="")
    assert not failures, failures[:3]


def test_wordpiece_is_refused() -> None:
    with pytest.raises(VocabError, match="'bert' is not supported"):
        Vocab.from_gguf(vocab_path("bert-bge"), cache=False)


def test_llama3_specials() -> None:
    v = gguf_vocab("llama-bpe")
    assert v.n_tokens == v.logit_width == 128256
    control = np.arange(128000, 128256)
    assert v.is_special[control].all() and not v.is_text[control].any()
    assert int(v.is_text.sum()) == 128000
    assert v.eos_token_ids == (128001, 128009)  # <|end_of_text|>, <|eot_id|>
    assert v.special_texts[128002] == "<|reserved_special_token_0|>"
    assert v.lookup_text("<|eot_id|>") == [128009]
    assert v.lookup_text("<|begin_of_text|>") == [128000]
    assert v.token_bytes(v.lookup_text(" Hello")[0]) == b" Hello"
    assert v.lookup_text(b"\n\n") != []


def test_qwen2_specials() -> None:
    v = gguf_vocab("qwen2")
    # <|endoftext|>, <|im_end|>, and llama.cpp's rule that any token spelled "</s>" ends
    # generation (here the normal token 128247)
    assert v.eos_token_ids == (128247, 151643, 151645)
    assert v.lookup_text("<|im_end|>") == [151645]
    assert v.lookup_text("<|im_start|>") == [151644]
    pads = np.arange(151646, 151936)  # converter padding "[PADn]", user-defined
    assert v.is_special[pads].all() and not v.is_text[pads].any()


def test_llama2_sentencepiece() -> None:
    v = gguf_vocab("llama-spm")
    assert v.eos_token_ids == (2,)
    assert v.special_token_ids.tolist() == [0, 1, 2]
    assert [v.token_bytes(3 + b) for b in (0, 10, 255)] == [b"\x00", b"\n", b"\xff"]
    assert v.lookup_text(" the") != []
    assert not any(b"\xe2\x96\x81" in v.token_bytes(i) for i in range(259, v.n_tokens))


def test_other_vocab_end_tokens() -> None:
    assert gguf_vocab("gpt-2").eos_token_ids == (50256,)
    assert gguf_vocab("phi-3").eos_token_ids == (2, 32000, 32007)  # </s>, <|endoftext|>, <|end|>
    g4 = gguf_vocab("gemma-4")
    assert g4.eos_token_ids == (1, 50, 106)  # <eos>, <|tool_response>, <turn|>
    assert g4.lookup_text("</s>") and g4.is_text[g4.lookup_text("</s>")[0]]  # Gemma 4: plain text
    assert gguf_vocab("starcoder").eos_token_ids == (0, 4)  # <|endoftext|>, <fim_pad>


def test_user_defined_modes() -> None:
    path = vocab_path("mpt")  # user-defined: runs of spaces (text) and "[PADn]" fillers (markers)
    auto = Vocab.from_gguf(path, cache=False)
    # 24 spaces down to 2 spaces are user-defined ids 50254...
    spaces = [i for i in auto.lookup_text(b" " * 8) if i >= 50254]
    assert spaces and auto.is_text[spaces[0]]
    pad = auto.lookup_text("[PAD50431]")
    assert pad and auto.is_special[pad[0]]
    never = Vocab.from_gguf(path, user_defined="special", cache=False)
    assert never.is_special[spaces[0]]
    always = Vocab.from_gguf(path, user_defined="text", cache=False)
    assert always.is_text[pad[0]]
    with pytest.raises(VocabError, match="user_defined"):
        Vocab.from_gguf(path, user_defined="maybe")


def test_gemma3_model_vocabulary() -> None:
    v = model_vocab("gemma3-270m")
    assert v.n_tokens == v.logit_width == 262144
    assert v.eos_token_ids == (1, 106, 212)  # <eos>, <end_of_turn>, "</s>" (llama.cpp's name rule)
    assert v.token_bytes(107) == b"\n" and v.is_text[107]  # user-defined whitespace is text
    assert v.lookup_text(b"  ") != []
    assert v.is_special[255999] and v.special_texts[255999] == "<start_of_image>"
    assert v.lookup_text("<end_of_turn>") == [106]
    assert v.lookup_text("<start_of_turn>") == [105]
    unused = [i for i, s in v.special_texts.items() if s.startswith("<unused")]
    assert len(unused) == 6242 and not v.is_text[unused].any()
    assert v.max_token_length >= 31


def test_smollm2_model_vocabulary() -> None:
    v = model_vocab("smollm2")
    assert v.n_tokens == 49152
    assert v.eos_token_ids == (0, 2, 4)  # <|endoftext|>, <|im_end|>, <reponame> (FIM repo)
    assert v.lookup_text("<|im_end|>") == [2]
    assert v.special_token_ids.tolist() == list(range(17))


# ----------------------------------------------------------- crafted files


def _write(tmp_path: Path, data: bytes, name: str = "x.gguf") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_tiny_crafted_vocab(tmp_path: Path) -> None:
    v = Vocab.from_gguf(_write(tmp_path, gguf_bytes(tiny_spm_kvs())))
    assert [v.token_bytes(i) for i in range(8)] == [b"", b"", b"", b"\n", b" a", b"b", b" ab", b""]
    assert v.eos_token_ids == (2, 7)  # eos key, and <|im_end|> by name
    assert v.name == "tiny"
    assert v.special_texts[7] == "<|im_end|>"


def test_version_1_and_big_endian_not_needed_but_version_checked(tmp_path: Path) -> None:
    with pytest.raises(VocabError, match="unsupported GGUF version 7"):
        Vocab.from_gguf(_write(tmp_path, gguf_bytes(tiny_spm_kvs(), version=7)), cache=False)


@pytest.mark.parametrize(
    "data, match",
    [
        (b"", "not a GGUF file"),
        (b"hello, this is not a GGUF file at all", "not a GGUF file"),
        (b"GGUF" + b"\x03\x00\x00\x00" + b"\x00" * 8 + b"\xff" * 8, "corrupt GGUF"),
    ],
)
def test_not_gguf(tmp_path: Path, data: bytes, match: str) -> None:
    with pytest.raises(VocabError, match=match):
        Vocab.from_gguf(_write(tmp_path, data), cache=False)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(VocabError, match="cannot read"):
        Vocab.from_gguf(tmp_path / "nope.gguf")
    with pytest.raises(VocabError, match="cannot read"):
        Vocab.from_gguf(tmp_path / "nope.gguf", cache=False)


def test_gguf_without_tokenizer(tmp_path: Path) -> None:
    data = gguf_bytes([("general.name", STRING, "weights only"), ("general.alignment", UINT32, 32)])
    with pytest.raises(VocabError, match="no tokenizer"):
        Vocab.from_gguf(_write(tmp_path, data), cache=False)
    data = gguf_bytes([("tokenizer.ggml.model", STRING, "llama")])
    with pytest.raises(VocabError, match="no token list"):
        Vocab.from_gguf(_write(tmp_path, data), cache=False)
    data = gguf_bytes([("tokenizer.ggml.model", STRING, "no_vocab")])
    with pytest.raises(VocabError, match="no vocabulary"):
        Vocab.from_gguf(_write(tmp_path, data), cache=False)


@pytest.mark.parametrize(
    "kvs, match",
    [
        ([("tokenizer.ggml.token_type", ARRAY, (INT32, [1, 1]))], "token_type"),
        ([("tokenizer.ggml.eos_token_id", STRING, "2")], "not an integer"),
        ([("tokenizer.ggml.model", STRING, "rwkv")], "not supported"),
        ([("tokenizer.ggml.model", UINT32, 3)], "not a string"),
    ],
)
def test_bad_tokenizer_keys(tmp_path: Path, kvs: list, match: str) -> None:
    base = {k: (k, t, v) for k, t, v in tiny_spm_kvs()}
    for k, t, v in kvs:
        base[k] = (k, t, v)
    with pytest.raises(VocabError, match=match):
        Vocab.from_gguf(_write(tmp_path, gguf_bytes(list(base.values()))), cache=False)


def test_out_of_range_special_key_is_ignored_like_llama_cpp(tmp_path: Path) -> None:
    data = gguf_bytes(tiny_spm_kvs([("tokenizer.ggml.eot_token_id", UINT32, 10_000)]))
    v = Vocab.from_gguf(_write(tmp_path, data), cache=False)
    assert v.eos_token_ids == (2, 7)


def test_truncated_real_file(tmp_path: Path) -> None:
    data = vocab_path("llama-spm").read_bytes()
    for cut in (30, 1000, len(data) // 3):
        with pytest.raises(VocabError, match="corrupt GGUF|truncated"):
            Vocab.from_gguf(_write(tmp_path, data[:cut], f"cut{cut}.gguf"), cache=False)


def test_truncated_inside_string_arrays(tmp_path: Path) -> None:
    """Cuts inside the token list (read) and the merges (skipped) of a byte-level file: a clear
    error, whichever loop of the string-array reader meets the end."""
    data = vocab_path("llama-bpe").read_bytes()
    for cut in (len(data) // 5, len(data) // 2, len(data) * 4 // 5):
        with pytest.raises(VocabError, match="corrupt GGUF|truncated"):
            Vocab.from_gguf(_write(tmp_path, data[:cut], f"cut{cut}.gguf"), cache=False)


@pytest.mark.parametrize("key", ["tokenizer.ggml.tokens", "x.skipped"])
def test_string_length_past_the_end(tmp_path: Path, key: str) -> None:
    """A string whose length runs past the end of the file, in an array that is read and in
    one that is skipped."""
    kvs = [kv for kv in tiny_spm_kvs() if kv[0] != key] + [(key, ARRAY, (STRING, ["zz-last", "<unk>"]))]
    data = gguf_bytes(kvs)
    at = data.index(b"zz-last") - 8
    data = data[:at] + (1 << 40).to_bytes(8, "little") + data[at + 8 :]
    with pytest.raises(VocabError, match="corrupt GGUF"):
        Vocab.from_gguf(_write(tmp_path, data), cache=False)


def test_nested_arrays_are_bounded(tmp_path: Path) -> None:
    inner: tuple = (UINT32, [1])
    for _ in range(10):
        inner = (ARRAY, [inner])
    data = gguf_bytes([("x.nested", ARRAY, inner)] + tiny_spm_kvs())
    with pytest.raises(VocabError, match="nested too deeply"):
        Vocab.from_gguf(_write(tmp_path, data), cache=False)


_TINY = gguf_bytes(tiny_spm_kvs([("tokenizer.ggml.add_bos_token", BOOL, True)]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(st.tuples(st.integers(0, len(_TINY) - 1), st.integers(0, 255)), max_size=6),
    cut=st.integers(0, len(_TINY)),
)
def test_damaged_files_load_or_raise_vocab_error(tmp_path: Path, edits: list, cut: int) -> None:
    data = bytearray(_TINY)
    for pos, val in edits:
        data[pos] = val
    p = _write(tmp_path, bytes(data[:cut]) if cut > 24 else bytes(data), "fuzz.gguf")
    try:
        v = Vocab.from_gguf(p, cache=False)
    except VocabError:
        return
    assert v.n_tokens >= 1


# ----------------------------------------------------------------- cache


def test_load_cache_round_trip_and_invalidation(tmp_path: Path, vocab_cache_dir: Path) -> None:
    p = _write(tmp_path, gguf_bytes(tiny_spm_kvs()))
    first = Vocab.from_gguf(p)
    assert list(vocab_cache_dir.glob("*.npz"))
    again = Vocab.from_gguf(p)
    assert again == first and again.name == "tiny"
    # a changed file (new size and time) is read again, not served from the cache
    p.write_bytes(gguf_bytes(tiny_spm_kvs([("tokenizer.ggml.eot_token_id", UINT32, 5)])))
    os.utime(p, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    changed = Vocab.from_gguf(p)
    assert changed.eos_token_ids == (2, 5, 7)


def test_load_times(vocab_cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Measure (print, never assert) first and cached load times."""
    rows = []
    names = ("llama-spm", "phi-3", "gpt-2", "llama-bpe", "qwen2", "command-r", "gemma-4")
    candidates = [(n, ASSETS.find_asset("vocab", n)) for n in names]
    candidates += [(n, ASSETS.find_asset("model", n)) for n in ASSETS.MODELS]
    for name, path in candidates:
        if path is None:
            continue
        t0 = time.perf_counter()
        v = Vocab.from_gguf(path)
        t1 = time.perf_counter()
        Vocab.from_gguf(path)
        t2 = time.perf_counter()
        rows.append(
            f"{name:14s} {v.n_tokens:7d} tokens  first {1000 * (t1 - t0):7.1f} ms  cached {1000 * (t2 - t1):6.1f} ms"
        )
    if not rows:
        pytest.skip(ASSETS.missing_reason("vocab", "llama-bpe"))
    with capsys.disabled():
        print("\n  from_gguf load times:\n    " + "\n    ".join(rows))
