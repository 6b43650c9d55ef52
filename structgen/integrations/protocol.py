"""The small protocol a model runtime implements so that :func:`structgen.generate` can drive it.

A runtime holds one sequence at a time. :func:`structgen.generate` asks it to encode the prompt,
then alternates between reading the logits for the next position and feeding the chosen tokens:

* ``vocab`` - the :class:`~structgen.vocab.Vocab` whose ids the logits are indexed by;
* ``context_length`` - the most tokens (prompt plus output) one sequence may hold, or ``None``;
* ``encode_prompt(prompt)`` - token ids for a string (as is) or a list of chat messages (through
  the model's chat template);
* ``start(prompt_ids)`` - forget the previous sequence and evaluate the prompt;
* ``feed(token_ids)`` - append tokens to the sequence and evaluate them;
* ``logits()`` - the logits for the position after everything started and fed so far (a
  ``float32`` array of width ``vocab.logit_width``);
* ``overlaps_forward_pass`` - True when ``start`` and ``feed`` release the GIL, so that the next
  mask can be computed on the calling thread while they run on a worker thread.

:class:`PrefixLogitsRuntime` adapts the simplest possible runtime - a function from a token prefix
to logits - and :func:`as_runtime` turns the objects users hold (``llama_cpp.Llama``, a
``(model, tokenizer)`` pair of ``transformers``, or a runtime) into a runtime.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import StructgenError, VocabError

if TYPE_CHECKING:
    from ..vocab import Vocab


@runtime_checkable
class Runtime(Protocol):
    """What :func:`structgen.generate` needs from a model runtime (see the module docstring)."""

    @property
    def vocab(self) -> Vocab: ...

    @property
    def context_length(self) -> int | None: ...

    @property
    def overlaps_forward_pass(self) -> bool: ...

    def encode_prompt(self, prompt: Any) -> list[int]: ...

    def start(self, prompt_ids: Sequence[int]) -> None: ...

    def feed(self, token_ids: Sequence[int]) -> None: ...

    def logits(self) -> np.ndarray: ...


class PrefixLogitsRuntime:
    """A runtime from a function ``logits_for(prefix_ids) -> logits`` (recomputed from the whole
    prefix each time: simple, and slow for real models) and a prompt encoder.

    ``encode`` takes the prompt (a string, or chat messages) and returns token ids; by default a
    string is encoded greedily with the vocabulary's longest tokens and chat messages are refused.
    """

    overlaps_forward_pass = False

    def __init__(
        self,
        vocab: Vocab,
        logits_for: Callable[[Sequence[int]], np.ndarray],
        *,
        encode: Callable[[Any], list[int]] | None = None,
        context_length: int | None = None,
    ) -> None:
        self._vocab = vocab
        self._logits_for = logits_for
        self._encode = encode
        self._context_length = context_length
        self._ids: list[int] = []

    @property
    def vocab(self) -> Vocab:
        return self._vocab

    @property
    def context_length(self) -> int | None:
        return self._context_length

    def encode_prompt(self, prompt: Any) -> list[int]:
        if self._encode is not None:
            return list(self._encode(prompt))
        if not isinstance(prompt, str):
            raise StructgenError("this runtime takes a string prompt (it has no chat template)")
        return greedy_encode(self._vocab, prompt.encode("utf-8"))

    def start(self, prompt_ids: Sequence[int]) -> None:
        self._ids = list(prompt_ids)

    def feed(self, token_ids: Sequence[int]) -> None:
        self._ids.extend(int(t) for t in token_ids)

    def logits(self) -> np.ndarray:
        return np.asarray(self._logits_for(list(self._ids)), dtype=np.float32)


def greedy_encode(vocab: Vocab, data: bytes) -> list[int]:
    """Token ids for ``data``: at each position the longest text token that matches (not the
    model's own tokenizer; enough for test runtimes and prompts of plain text)."""
    index: dict[bytes, int] = {}
    for i in np.flatnonzero(vocab.is_text).tolist():
        index.setdefault(vocab.token_bytes(i), i)
    longest = vocab.max_token_length
    out: list[int] = []
    pos = 0
    while pos < len(data):
        for n in range(min(longest, len(data) - pos), 0, -1):
            t = index.get(data[pos : pos + n])
            if t is not None:
                out.append(t)
                pos += n
                break
        else:
            raise VocabError(f"byte {data[pos]:#04x} at offset {pos} has no token in this vocabulary")
    return out


def _is_runtime(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("vocab", "encode_prompt", "start", "feed", "logits"))


# One adapter per model object: building the vocabulary takes a second or more.
_ADAPTERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def as_runtime(model: Any) -> Runtime:
    """The runtime for ``model``: a :class:`Runtime` as is, a ``llama_cpp.Llama``, or a
    ``(model, tokenizer)`` pair of ``transformers`` objects. Adapters are cached per model object."""
    if _is_runtime(model):
        return model
    if isinstance(model, tuple) and len(model) == 2:
        hf_model, tokenizer = model
        cached = _cached(hf_model)
        if cached is not None and getattr(cached, "tokenizer", None) is tokenizer:
            return cached
        from .transformers import TransformersRuntime

        runtime = TransformersRuntime(hf_model, tokenizer)
        _remember(hf_model, runtime)
        return runtime
    if type(model).__module__.startswith("llama_cpp"):
        cached = _cached(model)
        if cached is not None:
            return cached
        from .llama_cpp import LlamaCppRuntime

        runtime = LlamaCppRuntime(model)
        _remember(model, runtime)
        return runtime
    raise StructgenError(
        f"cannot generate with a {type(model).__module__}.{type(model).__name__}: pass a llama_cpp.Llama, "
        "a (transformers model, tokenizer) pair, or an object implementing structgen.integrations.Runtime"
    )


def _cached(key: Any) -> Any:
    try:
        return _ADAPTERS.get(key)
    except TypeError:  # not weak-referenceable or not hashable
        return None


def _remember(key: Any, runtime: Any) -> None:
    try:
        _ADAPTERS[key] = runtime
    except TypeError:
        pass
