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

Optional, for chat prompts rendered by structgen (:func:`structgen.chat`): ``chat_template`` (the
model's Jinja2 template source, or ``None``), ``template_tokens`` (``{"bos_token": ...,
"eos_token": ...}`` as the template sees them) and ``encode_rendered(text)`` (ids of a prompt
text a template wrote: special tokens parsed, no second BOS). A runtime without them gets its
messages rendered by ``encode_prompt``.

A runtime holds one sequence, so one generation at a time: :func:`runtime_lock` gives the lock
every front end holds for the whole of a generation (the runtime's own ``lock`` attribute if it
has one), so calls from several threads are serialised, never interleaved.

Adapters register themselves with :func:`register_adapter` (a test on the user's object and a
factory); this module imports none of them.

:class:`PrefixLogitsRuntime` adapts the simplest possible runtime - a function from a token prefix
to logits - and :func:`as_runtime` turns the objects users hold (``llama_cpp.Llama``, a
``(model, tokenizer)`` pair of ``transformers``, or a runtime) into a runtime.
"""

from __future__ import annotations

import threading
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
# Adapter factories in registration order: (name, accepts(obj), build(obj)).
_FACTORIES: list[tuple[str, Callable[[Any], bool], Callable[[Any], Any]]] = []
_FACTORIES_LOCK = threading.Lock()
# Locks of runtimes that bring none of their own, per runtime object.
_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCKS_BY_ID: dict[int, threading.RLock] = {}


def register_adapter(name: str, accepts: Callable[[Any], bool], build: Callable[[Any], Any]) -> None:
    """Teach :func:`as_runtime` a kind of model object: ``accepts(obj)`` tells whether ``build(obj)``
    makes its runtime. Registering a name again replaces its entry."""
    with _FACTORIES_LOCK:
        _FACTORIES[:] = [f for f in _FACTORIES if f[0] != name]
        _FACTORIES.append((name, accepts, build))


def as_runtime(model: Any) -> Runtime:
    """The runtime for ``model``: a :class:`Runtime` as is, or what a registered adapter makes of
    it (``llama_cpp.Llama``, a ``(model, tokenizer)`` pair of ``transformers``). Adapters are
    cached per model object (per the first element of a pair)."""
    if _is_runtime(model):
        return model
    key = model[0] if isinstance(model, tuple) and model else model
    cached = _cached(key)
    if cached is not None and (not isinstance(model, tuple) or getattr(cached, "tokenizer", None) is model[-1]):
        return cached
    with _FACTORIES_LOCK:
        factories = list(_FACTORIES)
    for _, accepts, build in factories:
        if accepts(model):
            runtime = build(model)
            _remember(key, runtime)
            return runtime
    raise StructgenError(
        f"cannot generate with a {type(model).__module__}.{type(model).__name__}: pass a llama_cpp.Llama, "
        "a (transformers model, tokenizer) pair, or an object implementing structgen.integrations.Runtime"
    )


def runtime_lock(runtime: Any) -> threading.RLock:
    """The lock that serialises generations on ``runtime`` (its ``lock`` attribute, or one kept
    here per runtime object)."""
    own = getattr(runtime, "lock", None)
    if own is not None:
        return own  # type: ignore[no-any-return]
    with _FACTORIES_LOCK:
        try:
            lock = _LOCKS.get(runtime)
            if lock is None:
                lock = _LOCKS[runtime] = threading.RLock()
        except TypeError:  # not weak-referenceable: kept by id for the process
            lock = _LOCKS_BY_ID.setdefault(id(runtime), threading.RLock())
    return lock


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
