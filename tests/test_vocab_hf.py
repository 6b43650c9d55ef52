"""Vocab.from_hf and Vocab.from_tiktoken against Vocab.from_gguf.

No hub download: the Hugging Face tokenizers are rebuilt with the ``tokenizers`` package from the
GGUF files' own tokens, merges (byte-level BPE) or scores (SentencePiece), as the GGUF converter
would have found them in tokenizer.json. That they are faithful is checked first: they must
reproduce llama.cpp's test vectors id for id.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from vocab_support import assert_same_vocab, gguf_vocab, model_path, model_vocab, read_vectors, vocab_path

from structgen.errors import VocabError
from structgen.grammar import Grammar
from structgen.vocab import Vocab
from structgen.vocab.gguf_file import read_gguf_metadata

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is not installed (pip install '.[vocab]')")
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers  # noqa: E402

_PATTERNS = {
    # the regexes of these models' tokenizer.json files (llama.cpp: llama-vocab.cpp)
    "llama-bpe": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",  # noqa: E501
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",  # noqa: E501
}
NORMAL, CONTROL, USER_DEFINED, UNKNOWN = 1, 3, 4, 2


def _gguf_tables(name: str) -> dict[str, Any]:
    keys = ["tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.scores"]
    return read_gguf_metadata(vocab_path(name), keys)


def _add_non_normal(tok: Tokenizer, texts: list[bytes], types: np.ndarray, skip: tuple[int, ...]) -> None:
    # As the GGUF converter reads tokenizer.json: CONTROL tokens were added tokens marked special,
    # USER_DEFINED ones added tokens not marked special. They are in the model's vocabulary too,
    # so each keeps its id.
    added = []
    for i in np.flatnonzero(~np.isin(types, skip)).tolist():
        added.append(
            (i, AddedToken(texts[i].decode("utf-8"), special=bool(types[i] != USER_DEFINED), normalized=False))
        )
    for i, t in sorted(added):
        n = tok.add_special_tokens([t]) if t.special else tok.add_tokens([t])
        assert n == 1 and tok.token_to_id(t.content) == i, (i, t)


def byte_level_bpe(name: str) -> Tokenizer:
    md = _gguf_tables(name)
    texts, types = md["tokenizer.ggml.tokens"], md["tokenizer.ggml.token_type"]
    vocab = {t.decode("utf-8"): i for i, t in enumerate(texts)}
    merges = []
    for m in md["tokenizer.ggml.merges"]:
        s = m.decode("utf-8")
        cut = s.find(" ", 1)
        merges.append((s[:cut], s[cut + 1 :]))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=(name == "llama-bpe")))
    if name in _PATTERNS:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(_PATTERNS[name]), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    else:  # GPT-2's own regex
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    _add_non_normal(tok, texts, types, (NORMAL,))
    return tok


def sentencepiece_bpe(name: str) -> Tokenizer:
    """Llama 2's tokenizer.json shape: BPE with byte fallback, merges ranked by piece score."""
    md = _gguf_tables(name)
    texts, types, scores = md["tokenizer.ggml.tokens"], md["tokenizer.ggml.token_type"], md["tokenizer.ggml.scores"]
    pieces = [t.decode("utf-8") for t in texts]
    vocab = {p: i for i, p in enumerate(pieces)}
    normal = {pieces[i] for i in np.flatnonzero(types == NORMAL).tolist()}
    ranked = []
    for piece in normal:
        for k in range(1, len(piece)):
            left, right = piece[:k], piece[k:]
            if left in normal and right in normal:
                ranked.append((-float(scores[vocab[piece]]), vocab[left], vocab[right], left, right))
    ranked.sort()
    merges = [(left, right) for *_, left, right in ranked]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    _add_non_normal(tok, texts, types, (NORMAL, 6))
    return tok


_BUILDERS = {
    "llama-bpe": byte_level_bpe,
    "qwen2": byte_level_bpe,
    "gpt-2": byte_level_bpe,
    "llama-spm": sentencepiece_bpe,
}
_built: dict[str, Tokenizer] = {}


def hf_tokenizer(name: str) -> Tokenizer:
    if name not in _built:
        _built[name] = _BUILDERS[name](name)
    return _built[name]


@pytest.mark.parametrize("name", list(_BUILDERS))
def test_rebuilt_tokenizer_reproduces_llama_cpp(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    tok = hf_tokenizer(name)
    vectors = read_vectors(name)
    agree = sum(tok.encode(t.decode("utf-8"), add_special_tokens=False).ids == ids for t, ids in vectors)
    with capsys.disabled():
        print(f"\n  tokenizers rebuild of {name}: {agree}/{len(vectors)} vectors give llama.cpp's ids", end="")
    assert agree == len(vectors)


@pytest.mark.parametrize("name", ["llama-bpe", "gpt-2", "llama-spm"])
def test_from_hf_matches_from_gguf(name: str) -> None:
    assert_same_vocab(Vocab.from_hf(hf_tokenizer(name)), gguf_vocab(name))


def test_model_unk_token_is_special() -> None:
    tok = Tokenizer(models.BPE(vocab={"<unk>": 0, "a": 1}, merges=[], unk_token="<unk>"))
    v = Vocab.from_hf(tok)
    assert v.is_special.tolist() == [True, False] and v.special_texts[0] == "<unk>"


def test_from_hf_qwen2_differs_only_where_the_runtimes_do() -> None:
    hf = Vocab.from_hf(hf_tokenizer("qwen2"))
    gg = gguf_vocab("qwen2")
    # llama.cpp makes every token spelled "</s>" an end token; in transformers it is plain text.
    differ = np.flatnonzero((hf.is_special != gg.is_special) | (hf.lengths != gg.lengths)).tolist()
    assert differ == [128247]
    assert hf.token_bytes(128247) == b"</s>" and hf.is_text[128247]
    assert hf.eos_token_ids == (151643, 151645)
    assert gg.eos_token_ids == (128247, 151643, 151645)


def test_from_hf_token_bytes_spell_the_vectors() -> None:
    for name in ("llama-bpe", "llama-spm"):
        v = Vocab.from_hf(hf_tokenizer(name))
        prefix = name == "llama-spm"
        for text, ids in read_vectors(name):
            assert v.detokenize(ids) == (b" " + text if prefix and text else text)


class FakeFastTokenizer:
    """The attributes of a transformers PreTrainedTokenizerFast that from_hf reads."""

    def __init__(self, backend: Tokenizer, eos: Any, all_special_ids: list[int]) -> None:
        self.backend_tokenizer = backend
        self.eos_token_id = eos
        self.all_special_ids = all_special_ids
        self.name_or_path = "fake/model"


def test_transformers_style_fast_tokenizer() -> None:
    tok = hf_tokenizer("llama-bpe")
    gg = gguf_vocab("llama-bpe")
    v = Vocab.from_hf(FakeFastTokenizer(tok, 128009, [128000, 128009]))
    assert v.eos_token_ids == (128001, 128009) and v.name == "fake/model"
    v = Vocab.from_hf(FakeFastTokenizer(tok, 128009, []), eos_token_ids=[128009], logit_width=128300)
    assert v.eos_token_ids == (128009,) and v.logit_width == 128300
    assert np.array_equal(v.is_text, gg.is_text)


def test_all_special_ids_make_tokens_special() -> None:
    tok = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")]))
    tok.decoder = decoders.ByteLevel()
    v = Vocab.from_hf(FakeFastTokenizer(tok, None, [2]))
    assert v.is_special.tolist() == [False, False, True] and v.eos_token_ids == ()


def test_slow_byte_level_tokenizer() -> None:
    gg = gguf_vocab("gpt-2")
    md = _gguf_tables("gpt-2")
    from structgen.vocab.token_text import CHAR_TO_BYTE

    slow = SimpleNamespace(
        get_vocab=lambda: {t.decode("utf-8"): i for i, t in enumerate(md["tokenizer.ggml.tokens"])},
        byte_decoder=dict(CHAR_TO_BYTE),
        added_tokens_decoder={50256: SimpleNamespace(content="<|endoftext|>", special=True)},
        all_special_ids=[50256],
        eos_token_id=50256,
        name_or_path="gpt2",
    )
    assert_same_vocab(Vocab.from_hf(slow), gg)


def test_slow_sentencepiece_tokenizer() -> None:
    pieces = ["<unk>", "<s>", "</s>", "<0x0A>", "\u2581hi", "x"]

    class SP:
        def get_piece_size(self) -> int:
            return len(pieces)

        def is_control(self, i: int) -> bool:
            return i in (1, 2)

        def is_unknown(self, i: int) -> bool:
            return i == 0

        def is_unused(self, i: int) -> bool:
            return False

        def id_to_piece(self, i: int) -> str:
            return pieces[i]

    slow = SimpleNamespace(
        get_vocab=lambda: {p: i for i, p in enumerate(pieces)},
        sp_model=SP(),
        added_tokens_decoder={},
        all_special_ids=[0, 1, 2],
        eos_token_id=2,
    )
    v = Vocab.from_hf(slow)
    assert [v.token_bytes(i) for i in range(6)] == [b"", b"", b"", b"\n", b" hi", b"x"]
    assert v.eos_token_ids == (2,) and v.special_texts[1] == "<s>"


def test_added_non_special_tokens_follow_the_marker_rule() -> None:
    tok = Tokenizer(models.BPE(vocab={"a": 0, "\u0120": 1}, merges=[]))
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens(
        [AddedToken("  ", special=False), AddedToken("<tool_call>", special=False), AddedToken("\u00f5", special=False)]
    )
    v = Vocab.from_hf(tok)
    assert v.token_bytes(1) == b" "
    assert v.token_bytes(2) == b"  " and v.is_text[2]  # outside the byte alphabet: its UTF-8
    assert v.is_special[3] and v.special_texts[3] == "<tool_call>"
    assert v.token_bytes(4) == b"\xf5"  # inside the alphabet: decoded, as tokenizers does
    assert Vocab.from_hf(tok, user_defined="text").is_text[3]
    assert Vocab.from_hf(tok, user_defined="special").is_special[2]


def test_end_names_count_only_for_declared_special_tokens() -> None:
    tok = Tokenizer(models.BPE(vocab={"a": 0}, merges=[]))
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens([AddedToken("</s>", special=False)])  # Gemma 3: an HTML tag, not special
    tok.add_special_tokens([AddedToken("<|im_end|>", special=True)])
    v = Vocab.from_hf(tok)
    assert v.is_special.tolist() == [False, True, True]
    assert v.eos_token_ids == (2,)


def test_metaspace_and_plain_tokenizers() -> None:
    tok = Tokenizer(models.Unigram([("<unk>", 0.0), ("\u2581a", -1.0), ("b", -2.0), ("<0x41>", -3.0)], 0, False))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    v = Vocab.from_hf(tok)
    assert [v.token_bytes(i) for i in range(4)] == [b"", b" a", b"b", b"<0x41>"]  # no ByteFallback
    assert v.special_texts[0] == "<unk>"  # Unigram's unk_id
    plain = Tokenizer(models.WordLevel({"x y": 0, "\u2581": 1, "<unk>": 2}, unk_token="<unk>"))
    v = Vocab.from_hf(plain)
    assert [v.token_bytes(i) for i in range(3)] == [b"x y", "\u2581".encode(), b""]


def test_wordpiece_and_junk_refused() -> None:
    wp = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]"))
    wp.decoder = decoders.WordPiece()
    with pytest.raises(VocabError, match="WordPiece"):
        Vocab.from_hf(wp)
    with pytest.raises(VocabError, match="expects"):
        Vocab.from_hf(object())
    with pytest.raises(VocabError, match="unsupported slow tokenizer"):
        Vocab.from_hf(SimpleNamespace(get_vocab=lambda: {"a": 0}))


# --------------------------------------------------------------- tiktoken


def test_from_tiktoken_matches_from_gguf() -> None:
    gg = gguf_vocab("llama-bpe")
    ranks = {gg.token_bytes(i): i for i in range(128000)}
    special = {gg.special_texts[i]: i for i in range(128000, 128256)}
    v = Vocab.from_tiktoken(ranks, special, name="llama3-tiktoken")
    assert v == gg  # same bytes, specials, printed forms, end ids (<|end_of_text|>, <|eot_id|>)
    assert Vocab.from_tiktoken(ranks, special, eos_token_ids=[128009]).eos_token_ids == (128009,)


@pytest.mark.parametrize(
    "ranks, special, match",
    [
        ({b"a": 0, b"b": 0}, {}, "same id"),
        ({b"a": 0}, {"<s>": 0}, "reuses id"),
        ({"a": 0}, {}, "not bytes"),
        ({b"a": -1}, {}, "not an integer"),
        ({b"a": 1 << 30}, {}, "not an integer"),
        ({}, {}, "empty"),
    ],
)
def test_from_tiktoken_errors(ranks: dict, special: dict, match: str) -> None:
    with pytest.raises(VocabError, match=match):
        Vocab.from_tiktoken(ranks, special)


def test_tiktoken_holes_are_not_text() -> None:
    v = Vocab.from_tiktoken({b"a": 0, b"b": 2}, {"<|endoftext|>": 4}, logit_width=8)
    assert v.is_text.tolist() == [True, False, True, False, False]
    assert v.eos_token_ids == (4,) and v.logit_width == 8


def test_tokenizer_json_round_trip(tmp_path: Path) -> None:
    """A tokenizer saved as tokenizer.json and read back gives the same Vocab."""
    tok = hf_tokenizer("llama-spm")
    p = tmp_path / "tokenizer.json"
    p.write_text(tok.to_str())
    assert json.loads(p.read_text())["model"]["byte_fallback"] is True
    assert Vocab.from_hf(Tokenizer.from_file(str(p))) == Vocab.from_hf(tok)


@pytest.mark.parametrize("name, eos", [("llama-bpe", "<|eot_id|>"), ("llama-spm", "</s>")])
def test_real_transformers_fast_tokenizer(name: str, eos: str) -> None:
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=hf_tokenizer(name), eos_token=eos)
    v = Vocab.from_hf(fast)
    assert_same_vocab(v, gguf_vocab(name))


def _smollm2_tokenizer() -> Tokenizer:
    """SmolLM2's tokenizer as its tokenizer.json has it, rebuilt from the model's own GGUF file:
    byte-level BPE over the file's tokens and merges, its 17 CONTROL tokens added as special."""
    md = read_gguf_metadata(
        model_path("smollm2"), ["tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"]
    )
    texts, types = md["tokenizer.ggml.tokens"], md["tokenizer.ggml.token_type"]
    merges = []
    for m in md["tokenizer.ggml.merges"]:
        s = m.decode("utf-8")
        cut = s.find(" ", 1)
        merges.append((s[:cut], s[cut + 1 :]))
    tok = Tokenizer(models.BPE(vocab={t.decode("utf-8"): i for i, t in enumerate(texts)}, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    _add_non_normal(tok, texts, types, (NORMAL,))
    return tok


@pytest.mark.parametrize("wrapped", [False, True], ids=["tokenizers", "transformers"])
def test_smollm2_same_vocabulary_from_hf_and_from_gguf(wrapped: bool) -> None:
    """Issue 23, finding 11: the end ids were [0, 2] from the tokenizer and [0, 2, 4] from the
    GGUF file (llama.cpp also ends on the FIM repository token <reponame>), so a constraint saved
    with one vocabulary was refused with the other."""
    from structgen.engine.constraint import Constraint

    gg = model_vocab("smollm2")
    tok: Any = _smollm2_tokenizer()
    if wrapped:
        transformers = pytest.importorskip("transformers", reason="transformers is not installed")
        tok = transformers.PreTrainedTokenizerFast(
            tokenizer_object=tok, eos_token="<|im_end|>", bos_token="<|im_start|>"
        )
    hf = Vocab.from_hf(tok)
    assert_same_vocab(hf, gg)
    assert hf.eos_token_ids == gg.eos_token_ids == (0, 2, 4)
    assert hf.fingerprint == gg.fingerprint
    schema = Grammar.from_json_schema({"type": "object", "properties": {"ok": {"type": "boolean"}}})
    saved = Constraint.compile(schema, gg)
    state = saved.start()
    loaded = Constraint.load(saved.save(), hf)
    assert np.array_equal(loaded.start().mask(), state.mask())
