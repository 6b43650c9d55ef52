"""Vocab itself (arrays, specials, lookup, fingerprint, immutability, errors) and the token
spelling and end-of-generation rules, on small hand-made vocabularies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.errors import VocabError
from structgen.vocab import Vocab
from structgen.vocab.end_tokens import llama_cpp_end_tokens
from structgen.vocab.token_text import (
    BYTE_TO_CHAR,
    decode_byte_level,
    decode_byte_level_many,
    decode_byte_level_utf8,
    decode_sentencepiece,
    encode_byte_level,
    looks_like_marker,
    parse_byte_piece,
)


def small() -> Vocab:
    return Vocab(
        [b"a", b"bc", None, b"<s>", b"", b"a", b"<|im_end|>", b"\xe4\xb8"],
        special_token_ids=[3],
        eos_token_ids=[6],
        name="small",
    )


def test_arrays_and_accessors() -> None:
    v = small()
    assert v.n_tokens == len(v) == 8
    assert v.logit_width == 8
    assert v.name == "small"
    assert v.is_text.tolist() == [True, True, False, False, False, True, False, True]
    assert v.is_special.tolist() == [False, False, False, True, False, False, True, False]
    assert v.lengths.dtype == np.int32 and v.lengths.tolist() == [1, 2, 0, 0, 0, 1, 0, 2]
    assert v.buffer.dtype == np.uint8 and v.offsets.dtype == np.int64
    assert v.buffer.tobytes() == b"abca\xe4\xb8"
    assert v.offsets.tolist() == [0, 1, 3, 3, 3, 3, 4, 4, 6]
    assert [v.token_bytes(i) for i in range(8)] == [b"a", b"bc", b"", b"", b"", b"a", b"", b"\xe4\xb8"]
    assert v.eos_token_ids == (6,)
    assert dict(v.special_texts) == {3: "<s>", 6: "<|im_end|>"}
    assert v.special_token_ids.tolist() == [3, 6]
    assert v.max_token_length == 2


def test_lookup_text_and_detokenize() -> None:
    v = small()
    assert v.lookup_text(b"a") == [0, 5]  # same bytes, several ids: normal
    assert v.lookup_text("bc") == [1]
    assert v.lookup_text("<|im_end|>") == [6]  # special by its printed form
    assert v.lookup_text(b"<s>") == [3]
    assert v.lookup_text(b"zz") == []
    assert v.detokenize([0, 1, 6, 5]) == b"abca"
    assert v.detokenize([0, 6], specials=True) == b"a<|im_end|>"


def test_eos_is_special_and_logit_width() -> None:
    v = Vocab([b"x", b"</s>"], eos_token_ids=[1], logit_width=64)
    assert v.is_special.tolist() == [False, True]
    assert v.logit_width == 64
    with pytest.raises(VocabError, match="logit_width"):
        Vocab([b"x", b"y"], logit_width=1)


@pytest.mark.parametrize("bad", ["64", 64.0, 2.5, True, None.__class__])
def test_logit_width_takes_only_integers(bad: object) -> None:
    # int() used to turn "64" and 64.9 into widths; ids and widths take integers only
    with pytest.raises(VocabError, match="logit_width"):
        Vocab([b"x", b"y"], logit_width=bad)  # type: ignore[arg-type]
    assert Vocab([b"x", b"y"], logit_width=np.int64(8)).logit_width == 8


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"eos_token_ids": [5]}, "out of range"),
        ({"special_token_ids": [-1]}, "out of range"),
        ({"special_token_ids": ["1"]}, "not an integer"),
        ({"eos_token_ids": [True]}, "not an integer"),
    ],
)
def test_bad_ids(kwargs: dict, match: str) -> None:
    with pytest.raises(VocabError, match=match):
        Vocab([b"a", b"b"], **kwargs)


def test_bad_tokens() -> None:
    with pytest.raises(VocabError, match="expected bytes"):
        Vocab([b"a", "b"])  # type: ignore[list-item]
    with pytest.raises(VocabError, match="at least one token"):
        Vocab([])
    with pytest.raises(VocabError, match="out of range"):
        small().token_bytes(8)
    with pytest.raises(VocabError, match="not an integer"):
        small().token_bytes(1.5)  # type: ignore[arg-type]
    assert small().token_bytes(np.int64(1)) == b"bc"


def test_immutable() -> None:
    v = small()
    with pytest.raises(AttributeError):
        v.name = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del v._buffer
    for arr in (v.buffer, v.offsets, v.lengths, v.is_text, v.is_special, v.special_token_ids):
        with pytest.raises(ValueError):
            arr[0] = 0
    with pytest.raises(TypeError):
        v.special_texts[3] = "x"  # type: ignore[index]


def test_fingerprint() -> None:
    base = small()
    assert base.fingerprint == small().fingerprint
    assert len(base.fingerprint) == 64
    same_but_name = Vocab(
        [b"a", b"bc", None, b"<s>", b"", b"a", b"<|im_end|>", b"\xe4\xb8"],
        special_token_ids=[3],
        eos_token_ids=[6],
        name="other",
    )
    assert same_but_name == base and hash(same_but_name) == hash(base)
    tokens = [b"a", b"bc", None, b"<s>", b"", b"a", b"<|im_end|>", b"\xe4\xb8"]
    variants = [
        Vocab([b"b"] + tokens[1:], special_token_ids=[3], eos_token_ids=[6]),  # bytes
        Vocab(tokens, special_token_ids=[3, 0], eos_token_ids=[6]),  # special flag
        Vocab(tokens, special_token_ids=[3], eos_token_ids=[6, 3]),  # eos
        Vocab(tokens, special_token_ids=[3], eos_token_ids=[6], logit_width=9),  # width
        Vocab(tokens[:3] + [b"<S>"] + tokens[4:], special_token_ids=[3], eos_token_ids=[6]),  # printed form
        # moving a byte from one token to the next keeps the buffer, changes the offsets
        Vocab([b"ab", b"c"] + tokens[2:], special_token_ids=[3], eos_token_ids=[6]),
    ]
    prints = {base.fingerprint} | {v.fingerprint for v in variants}
    assert len(prints) == len(variants) + 1


def test_array_round_trip_and_malformed() -> None:
    v = small()
    arrays = v.to_arrays()
    back = Vocab.from_arrays(arrays)
    assert back == v and back.name == "small" and dict(back.special_texts) == dict(v.special_texts)
    broken = dict(arrays, offsets=arrays["offsets"][:-1])
    with pytest.raises(VocabError):
        Vocab.from_arrays(broken)
    with pytest.raises(VocabError):
        Vocab.from_arrays({k: a for k, a in arrays.items() if k != "buffer"})
    with pytest.raises(VocabError):
        Vocab.from_arrays(dict(arrays, format_version=np.array([999])))
    with pytest.raises(VocabError):
        Vocab.from_arrays(dict(arrays, eos_token_ids=np.array([100])))


token_lists = st.lists(st.one_of(st.none(), st.binary(max_size=6)), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(tokens=token_lists, data=st.data())
def test_arrays_agree_with_tokens(tokens: list[bytes | None], data: st.DataObject) -> None:
    n = len(tokens)
    special = data.draw(st.sets(st.integers(0, n - 1), max_size=n))
    eos = data.draw(st.sets(st.integers(0, n - 1), max_size=3))
    v = Vocab(tokens, special_token_ids=special, eos_token_ids=eos)
    all_special = special | eos
    for i, t in enumerate(tokens):
        text = b"" if (t is None or i in all_special) else t
        assert v.token_bytes(i) == text
        assert v.buffer[v.offsets[i] : v.offsets[i + 1]].tobytes() == text
        assert v.is_text[i] == bool(text)
        assert v.is_special[i] == (i in all_special)
        if text:
            assert i in v.lookup_text(text)
    assert v.eos_token_ids == tuple(sorted(eos))
    assert Vocab.from_arrays(v.to_arrays()) == v


# ------------------------------------------------------------ token spelling


def test_gpt2_alphabet_is_a_bijection() -> None:
    assert len(set(BYTE_TO_CHAR)) == 256
    assert BYTE_TO_CHAR[ord("A")] == "A" and BYTE_TO_CHAR[ord(" ")] == "\u0120"  # 'Ġ'
    assert BYTE_TO_CHAR[ord("\n")] == "\u010a"  # 'Ċ'


@given(st.binary(max_size=64))
def test_byte_level_round_trip(raw: bytes) -> None:
    assert decode_byte_level(encode_byte_level(raw)) == raw


@given(st.lists(st.one_of(st.binary(max_size=5).map(encode_byte_level), st.text(max_size=3)), max_size=8))
def test_batch_byte_level_decode_matches_single(pieces: list[str]) -> None:
    raw = [p.encode("utf-8") for p in pieces]
    assert decode_byte_level_many(raw) == [decode_byte_level_utf8(r) for r in raw]


@pytest.mark.parametrize("piece", [" ", "a b", "\n", "\u4e2d", "\xad", "\x7f"])
def test_byte_level_rejects_characters_outside_the_alphabet(piece: str) -> None:
    assert decode_byte_level(piece) is None


def test_sentencepiece_pieces() -> None:
    assert decode_sentencepiece("\u2581the\u2581end".encode()) == b" the end"
    assert parse_byte_piece(b"<0x0A>") == b"\n"
    assert parse_byte_piece(b"<0xff>") == b"\xff"
    for bad in (b"<0x0G>", b"<0x0A", b"x<0x0A>", b"<0x100>"):
        assert parse_byte_piece(bad) is None


@pytest.mark.parametrize(
    "text, marker",
    [
        (b"<|im_start|>", True),
        (b"<start_of_image>", True),
        (b"[PAD151646]", True),
        (b"</s>", True),
        (b"<table>", True),
        (b"\n\n", False),
        (b"    ", False),
        (b"\xc3\xb5", False),
        (b"<", False),
        (b"a<b>", False),
    ],
)
def test_marker_rule(text: bytes, marker: bool) -> None:
    assert looks_like_marker(text) is marker


# ------------------------------------------------------- end-of-generation rules


def test_end_tokens_by_name_and_defaults() -> None:
    texts = [b"<unk>", b"<s>", b"</s>", b"hello", b"<|im_end|>", b"<|fim_pad|>"]
    r = llama_cpp_end_tokens(texts, {}, {"bos": 1, "eos": 2, "unk": 0})
    assert r.eog_ids == {2, 4, 5}
    assert {4, 5, 2} <= r.forced_control
    assert r.roles["eot"] == 4 and r.roles["fim_pad"] == 5
    # an explicit key wins over the default; out-of-range ids are ignored, as llama.cpp does
    r = llama_cpp_end_tokens(texts, {"eos": 3, "eot": 99}, {"eos": 2})
    assert r.roles["eos"] == 3 and r.roles["eot"] == 4
    assert 3 in r.eog_ids and 99 not in r.eog_ids


def test_end_tokens_harmony_and_gemma4_corrections() -> None:
    harmony = [b"x", b"<|end|>", b"<|return|>", b"<|call|>", b"<|channel|>"]
    r = llama_cpp_end_tokens(harmony, {}, {})
    assert r.eog_ids == {2, 3}
    assert 1 in r.forced_user_defined and 4 in r.forced_user_defined
    gemma4 = [b"<eos>", b"</s>", b"<|tool_response>"]
    r = llama_cpp_end_tokens(gemma4, {"eos": 0}, {})
    assert r.eog_ids == {0, 2} and r.forced_normal == {1}
    # without the marker, "</s>" ends generation
    r = llama_cpp_end_tokens([b"<eos>", b"</s>"], {"eos": 0}, {})
    assert r.eog_ids == {0, 1}


def test_end_tokens_duplicate_text_uses_highest_id() -> None:
    r = llama_cpp_end_tokens([b"<|im_end|>", b"a", b"<|im_end|>"], {}, {})
    assert r.eog_ids == {2}
