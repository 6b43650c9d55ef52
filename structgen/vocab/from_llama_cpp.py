"""Load a :class:`~structgen.vocab.Vocab` from a loaded ``llama_cpp.Llama`` (llama-cpp-python).

The runtime is asked directly, so the result is what it prints and stops on:

* bytes: ``llama_token_to_piece(vocab, id, buf, size, 0, special=True)``, retried with a larger
  buffer when it returns a negative size (``Llama.detokenize`` is not used: its 32-byte buffer
  truncates longer tokens); a normal token that llama.cpp prints as ``[UNK_BYTE_0x...]`` (a
  byte-level token spelled outside GPT-2's alphabet, as in Command-R) is never text;
* special: tokens whose attributes include CONTROL, UNKNOWN or UNUSED, or no type at all; a
  USER_DEFINED token is special when it looks like a marker (or as ``user_defined`` says, as in
  :mod:`structgen.vocab.from_gguf`); the printed form of a special token is its stored text
  (``llama_vocab_get_text``);
* end of generation: every id for which ``llama_vocab_is_eog`` is true;
* logit width: ``llm.n_vocab()``.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..errors import VocabError
from .token_text import looks_like_marker
from .vocab import Vocab

_USER_DEFINED_MODES = ("auto", "special", "text")
_UNK_BYTE = b"[UNK_BYTE_0x"


def _piece(lib: Any, vocab: Any, token: int, buf: Any) -> tuple[bytes, Any]:
    n = lib.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
    if n < 0:
        buf = ctypes.create_string_buffer(-n)
        n = lib.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
        if n < 0:
            raise VocabError(f"llama_token_to_piece failed for token {token}")
    return buf.raw[:n], buf


def load_llama_cpp_vocab(llm: Any, *, user_defined: str = "auto") -> Vocab:
    """Read the vocabulary of ``llm`` (a ``llama_cpp.Llama``); see the module docstring."""
    if user_defined not in _USER_DEFINED_MODES:
        raise VocabError(f"user_defined must be one of {_USER_DEFINED_MODES}, not {user_defined!r}")
    try:
        import llama_cpp as lib
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise VocabError("Vocab.from_llama_cpp needs llama-cpp-python (pip install llama-cpp-python)") from e
    model = getattr(llm, "model", None)
    if model is None:
        raise VocabError("from_llama_cpp expects a loaded llama_cpp.Llama (it has no .model)")
    vocab = lib.llama_model_get_vocab(model)
    if not vocab:
        raise VocabError("the llama.cpp model has no vocabulary")
    n = int(lib.llama_vocab_n_tokens(vocab))
    if n <= 0:
        raise VocabError("the llama.cpp model has an empty vocabulary")

    not_text = lib.LLAMA_TOKEN_ATTR_CONTROL | lib.LLAMA_TOKEN_ATTR_UNKNOWN | lib.LLAMA_TOKEN_ATTR_UNUSED
    text_kinds = lib.LLAMA_TOKEN_ATTR_NORMAL | lib.LLAMA_TOKEN_ATTR_BYTE
    user_def = lib.LLAMA_TOKEN_ATTR_USER_DEFINED
    get_attr = lib.llama_vocab_get_attr
    is_eog = lib.llama_vocab_is_eog
    get_text = lib.llama_vocab_get_text

    buf = ctypes.create_string_buffer(256)
    tokens: list[bytes | None] = [None] * n
    special: list[int] = []
    eos: list[int] = []
    for i in range(n):
        attr = int(get_attr(vocab, i))
        if is_eog(vocab, i):
            eos.append(i)
        if attr & not_text or not attr & (text_kinds | user_def):
            raw = get_text(vocab, i)
            tokens[i] = raw if isinstance(raw, bytes) else None
            special.append(i)
            continue
        piece, buf = _piece(lib, vocab, i, buf)
        if attr & lib.LLAMA_TOKEN_ATTR_NORMAL and piece.startswith(_UNK_BYTE):
            # llama.cpp prints this placeholder for a byte-level token spelled outside GPT-2's
            # alphabet; it is nobody's intended text, so it is never allowed (as in from_gguf).
            continue
        tokens[i] = piece
        if attr & user_def and (user_defined == "special" or (user_defined == "auto" and looks_like_marker(piece))):
            special.append(i)
    width = int(llm.n_vocab()) if hasattr(llm, "n_vocab") else n
    name = ""
    metadata = getattr(llm, "metadata", None)
    if isinstance(metadata, dict):
        name = str(metadata.get("general.name", ""))
    return Vocab(tokens, eos_token_ids=eos, special_token_ids=special, logit_width=max(width, n), name=name)
