"""Ask the real llama.cpp (through llama-cpp-python's ctypes bindings) about GBNF text and strings.

* :func:`llama_accepts_grammar` - does ``llama_sampler_init_grammar`` build this grammar? (no
  vocabulary needed unless the grammar names tokens by text, ``<|im_end|>``);
* :class:`LlamaCppOracle` - with a vocab-only GGUF model loaded, does llama.cpp's grammar sampler
  accept a whole string (a list of text parts and token ids)? Each text part is tokenized with the
  model's tokenizer, each token is first offered to ``llama_sampler_apply`` alone (a rejected
  token gets logit -inf) and then committed with ``llama_sampler_accept``; at the end the
  end-of-generation token is offered, which llama.cpp allows only where the grammar can stop.
  A token is never committed after being rejected: llama.cpp would throw through the C API.

Only for tests. Never give it a grammar llama.cpp may loop on while building (``{2,1}``, a left
recursion its check misses): building happens in-process.
"""

from __future__ import annotations

import ctypes
import math
import os
from collections.abc import Sequence
from pathlib import Path

try:
    import llama_cpp
except ImportError:  # pragma: no cover - depends on the environment
    llama_cpp = None


def _default_vocab() -> Path:
    """$STRUCTGEN_LLAMA_VOCAB, else the llama-bpe vocabulary asset (``tools/fetch_assets.py``),
    else the one in the llama-cpp-python source tree this environment was built from."""
    if os.environ.get("STRUCTGEN_LLAMA_VOCAB"):
        return Path(os.environ["STRUCTGEN_LLAMA_VOCAB"])
    from vocab_support import ASSETS

    asset = ASSETS.find_asset("vocab", "llama-bpe")
    if asset is not None:
        return asset
    return Path("/tmp/sg/llsrc/llama_cpp_python-0.3.36/vendor/llama.cpp/models/ggml-vocab-llama-bpe.gguf")


DEFAULT_VOCAB = _default_vocab()

_backend_ready = False


def _init_backend() -> None:
    global _backend_ready
    if not _backend_ready:
        llama_cpp.llama_backend_init()
        _backend_ready = True


def available() -> bool:
    return llama_cpp is not None


def llama_accepts_grammar(text: str, root: str = "root", vocab: object = None) -> bool:
    """Whether llama.cpp builds ``text`` with start rule ``root`` (errors go to stderr)."""
    _init_backend()
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode("utf-8"), root.encode("utf-8"))
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


class LlamaCppOracle:
    """llama.cpp's own grammar matcher over a vocab-only model."""

    def __init__(self, model_path: Path = DEFAULT_VOCAB) -> None:
        _init_backend()
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self._model = llama_cpp.llama_model_load_from_file(str(model_path).encode(), params)
        if not self._model:
            raise RuntimeError(f"cannot load {model_path}")
        self.vocab = llama_cpp.llama_model_get_vocab(self._model)
        self.eos = llama_cpp.llama_vocab_eos(self.vocab)

    def close(self) -> None:
        if self._model:
            llama_cpp.llama_model_free(self._model)
            self._model = None

    def tokenize(self, text: str) -> list[int]:
        data = text.encode("utf-8")
        room = len(data) + 8
        buf = (llama_cpp.llama_token * room)()
        n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, room, False, False)
        if n < 0:
            raise RuntimeError("tokenize failed")
        return list(buf[:n])

    def piece(self, token: int) -> bytes:
        buf = ctypes.create_string_buffer(256)
        n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, 256, 0, True)
        return buf.raw[: max(n, 0)]

    def grammar_ok(self, text: str, root: str = "root") -> bool:
        return llama_accepts_grammar(text, root, self.vocab)

    def _allowed(self, sampler: object, token: int) -> bool:
        arr = (llama_cpp.llama_token_data * 1)()
        arr[0].id = token
        arr[0].logit = 0.0
        arr[0].p = 0.0
        cur = llama_cpp.llama_token_data_array(arr, 1, -1, False)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(cur))
        return not math.isinf(arr[0].logit)

    def tokens_for(self, parts: Sequence[str | int]) -> list[int]:
        out: list[int] = []
        for part in parts:
            out.extend([part] if isinstance(part, int) else self.tokenize(part))
        return out

    def allows_prefix(self, grammar: str, parts: Sequence[str | int] | str, root: str = "root") -> bool:
        """Whether llama.cpp allows every token of the input in turn (whether it may stop after
        them is not asked)."""
        return self._walk(grammar, parts, root, and_stop=False)

    def accepts(self, grammar: str, parts: Sequence[str | int] | str, root: str = "root") -> bool:
        """Whether llama.cpp accepts the whole input (text parts and token ids) and may stop there."""
        return self._walk(grammar, parts, root, and_stop=True)

    def _walk(self, grammar: str, parts: Sequence[str | int] | str, root: str, *, and_stop: bool) -> bool:
        if isinstance(parts, str):
            parts = [parts]
        sampler = llama_cpp.llama_sampler_init_grammar(self.vocab, grammar.encode("utf-8"), root.encode("utf-8"))
        if not sampler:
            raise ValueError("llama.cpp refuses the grammar")
        try:
            for token in self.tokens_for(parts):
                if not self._allowed(sampler, token):
                    return False
                llama_cpp.llama_sampler_accept(sampler, token)
            return not and_stop or self._allowed(sampler, self.eos)
        finally:
            llama_cpp.llama_sampler_free(sampler)
