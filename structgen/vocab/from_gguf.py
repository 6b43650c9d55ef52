"""Load a :class:`~structgen.vocab.Vocab` from the tokenizer stored in a GGUF file.

The token bytes are those llama.cpp prints for each token (``llama_token_to_piece``), derived from
the GGUF metadata alone:

* ``tokenizer.ggml.model`` ``gpt2`` (byte-level BPE): normal tokens are spelled in GPT-2's byte
  alphabet and decoded back to raw bytes; ``gemma4`` and the ``gpt2`` pre-tokenizers that escape
  whitespace (``gemma4``, ``sarvam-moe``, ``granite-embed-multi-311m``) spell a space as ``▁``.
* ``llama`` (SentencePiece) and ``t5`` (Unigram): ``▁`` is a space; BYTE tokens ``<0xNN>`` are
  one raw byte.
* Token types: NORMAL and BYTE tokens are text. CONTROL, UNKNOWN, UNUSED and undefined types are
  special (never text; their stored string is kept as the printed form). USER_DEFINED tokens are
  printed verbatim by llama.cpp; they are text unless they look like a marker
  (:func:`~structgen.vocab.token_text.looks_like_marker`), or as ``user_defined`` says: ``"auto"``
  (that rule), ``"special"`` (never text) or ``"text"`` (always text).
* End of generation: llama.cpp's rules (:mod:`structgen.vocab.end_tokens`).

Other tokenizer models (``bert`` WordPiece, ``rwkv``, ``plamo2``...) raise
:class:`~structgen.errors.VocabError`. Results are cached on disk (:mod:`structgen.vocab.cache`)
keyed by the file's path, size and modification time.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np

from ..errors import VocabError
from .cache import cached_arrays
from .end_tokens import llama_cpp_end_tokens
from .gguf_file import read_gguf_metadata
from .token_text import decode_byte_level_many, decode_sentencepiece, looks_like_marker, parse_byte_piece
from .vocab import Vocab

# Bump when the decoding rules change so that cached results are rebuilt.
LOADER_VERSION = 1

# GGUF token types (llama.cpp's LLAMA_TOKEN_TYPE_*).
UNDEFINED, NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = range(7)

_ROLE_KEYS = {
    "bos": "tokenizer.ggml.bos_token_id",
    "eos": "tokenizer.ggml.eos_token_id",
    "eot": "tokenizer.ggml.eot_token_id",
    "eom": "tokenizer.ggml.eom_token_id",
    "unk": "tokenizer.ggml.unknown_token_id",
    "sep": "tokenizer.ggml.seperator_token_id",
    "pad": "tokenizer.ggml.padding_token_id",
    "mask": "tokenizer.ggml.mask_token_id",
    "fim_pre": "tokenizer.ggml.fim_pre_token_id",
    "fim_suf": "tokenizer.ggml.fim_suf_token_id",
    "fim_mid": "tokenizer.ggml.fim_mid_token_id",
    "fim_pad": "tokenizer.ggml.fim_pad_token_id",
    "fim_rep": "tokenizer.ggml.fim_rep_token_id",
    "fim_sep": "tokenizer.ggml.fim_sep_token_id",
}
# The ids llama.cpp assumes per tokenizer model when the file has no key for a role.
_DEFAULT_ROLES: dict[str, dict[str, int]] = {
    "llama": {"bos": 1, "eos": 2, "unk": 0},
    "gpt2": {"bos": 11, "eos": 11},
    "gemma4": {},
    "t5": {"eos": 1, "unk": 2, "pad": 0},
}
_ESCAPED_SPACE_PRE = {"gemma4", "sarvam-moe", "granite-embed-multi-311m"}
_USER_DEFINED_MODES = ("auto", "special", "text")
_WANTED_KEYS = frozenset(
    [
        "tokenizer.ggml.model",
        "tokenizer.ggml.pre",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.token_type",
        "general.name",
        *_ROLE_KEYS.values(),
        # deprecated spellings of the FIM keys, still honoured by llama.cpp
        "tokenizer.ggml.prefix_token_id",
        "tokenizer.ggml.suffix_token_id",
        "tokenizer.ggml.middle_token_id",
    ]
)


def load_gguf_vocab(path: str | os.PathLike[str], *, user_defined: str = "auto", cache: bool = True) -> Vocab:
    """Load the vocabulary of the GGUF file at ``path`` (see the module docstring)."""
    if user_defined not in _USER_DEFINED_MODES:
        raise VocabError(f"user_defined must be one of {_USER_DEFINED_MODES}, not {user_defined!r}")
    p = os.fspath(path)
    if not cache:
        return _load(p, user_defined)
    try:
        st = os.stat(p)
    except OSError as e:
        raise VocabError(f"{p}: cannot read GGUF file: {e}") from e
    source = f"gguf|{LOADER_VERSION}|{os.path.realpath(p)}|{st.st_size}|{st.st_mtime_ns}|{user_defined}"
    source_id = hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()
    arrays = cached_arrays(source_id, "vocab-from-gguf", lambda: _load(p, user_defined).to_arrays())
    try:
        return Vocab.from_arrays(arrays)
    except VocabError:
        return _load(p, user_defined)


def _text(md: dict[str, Any], key: str) -> str | None:
    v = md.get(key)
    if v is None:
        return None
    if not isinstance(v, bytes):
        raise VocabError(f"GGUF key {key} is not a string")
    return v.decode("utf-8", errors="replace")


def _load(path: str, user_defined: str) -> Vocab:
    md = read_gguf_metadata(path, _WANTED_KEYS)
    model = _text(md, "tokenizer.ggml.model")
    if model is None:
        raise VocabError(f"{path}: GGUF file has no tokenizer (no tokenizer.ggml.model key)")
    if model in ("no_vocab", "none"):
        raise VocabError(f"{path}: GGUF file has no vocabulary (tokenizer.ggml.model = {model!r})")
    pre = _text(md, "tokenizer.ggml.pre") or ""
    if model == "gpt2":
        scheme = "escaped" if pre in _ESCAPED_SPACE_PRE else "byte_level"
    elif model == "gemma4":
        scheme = "escaped"
    elif model in ("llama", "t5"):
        scheme = "sentencepiece"
    else:
        raise VocabError(
            f"{path}: tokenizer model {model!r} is not supported "
            "(supported: gpt2 byte-level BPE, gemma4, llama SentencePiece, t5 Unigram)"
        )
    texts = md.get("tokenizer.ggml.tokens")
    if not isinstance(texts, list) or not texts:
        raise VocabError(f"{path}: GGUF file has no token list (tokenizer.ggml.tokens)")
    n = len(texts)
    types = md.get("tokenizer.ggml.token_type")
    if types is None:
        types = np.full(n, NORMAL, dtype=np.int32)
    elif not isinstance(types, np.ndarray) or types.dtype.kind not in "iu" or len(types) < n:
        raise VocabError(f"{path}: tokenizer.ggml.token_type must be an integer array of {n} entries")
    types = types[:n].astype(np.int32)

    key_ids = _role_ids(md, path)
    rules = llama_cpp_end_tokens(texts, key_ids, _DEFAULT_ROLES.get(model, {}))
    for i in rules.forced_control:
        types[i] = CONTROL
    for i in rules.forced_user_defined:
        types[i] = USER_DEFINED
    for i in rules.forced_normal:
        types[i] = NORMAL

    tokens: list[bytes | None] = [None] * n
    special: list[int] = []
    normal = np.flatnonzero(types == NORMAL).tolist()
    if scheme == "byte_level":
        # A string outside GPT-2's alphabet makes llama.cpp print "[UNK_BYTE_0x..]" garbage: such a
        # token can never be text on purpose, so it becomes None (never allowed).
        for i, raw in zip(normal, decode_byte_level_many([texts[i] for i in normal])):
            tokens[i] = raw
    else:
        for i in normal:
            tokens[i] = decode_sentencepiece(texts[i])
    for i in np.flatnonzero(types == BYTE).tolist():
        tokens[i] = parse_byte_piece(texts[i])
    for i in np.flatnonzero(types == USER_DEFINED).tolist():
        raw = texts[i]
        tokens[i] = raw
        if user_defined == "special" or (user_defined == "auto" and looks_like_marker(raw)):
            special.append(i)
    # Everything else (control, unknown, unused, undefined and unknown type numbers) is special,
    # printed as the string the file stores.
    other = ~np.isin(types, (NORMAL, BYTE, USER_DEFINED))
    for i in np.flatnonzero(other).tolist():
        tokens[i] = texts[i]
        special.append(i)
    name = _text(md, "general.name") or os.path.basename(path)
    return Vocab(tokens, eos_token_ids=sorted(rules.eog_ids), special_token_ids=special, name=name)


def _role_ids(md: dict[str, Any], path: str) -> dict[str, int]:
    ids: dict[str, int] = {}
    for role, key in _ROLE_KEYS.items():
        v = md.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise VocabError(f"{path}: GGUF key {key} is not an integer")
        ids[role] = v
    for role, key in (("fim_pre", "prefix"), ("fim_suf", "suffix"), ("fim_mid", "middle")):
        v = md.get(f"tokenizer.ggml.{key}_token_id")
        if isinstance(v, int) and not isinstance(v, bool):
            ids[role] = v
    return ids
