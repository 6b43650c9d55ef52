"""llama-cpp-python: a `Runtime` over a loaded ``llama_cpp.Llama``, and a logits processor.

:class:`LlamaCppRuntime` is the dependable path: a hand-written loop of ``Llama.eval`` (which
releases the GIL, so the next mask is computed while it runs), the last position's logits read
straight from llama.cpp (``llama_get_logits_ith``), and sampling in numpy. Prompt tokens already
in the model's KV cache from the previous call are reused (``reuse_prefix``), as
``Llama.generate`` does.

:func:`logits_processor` is for code that keeps calling ``Llama.create_completion`` itself::

    out = llm.create_completion(prompt, max_tokens=200,
                                logits_processor=LogitsProcessorList([logits_processor(llm, Person, max_tokens=200)]))

It masks each step's logits (with the token budget when ``max_tokens`` is given); one processor
serves one completion. llama-cpp-python's own code calls that hook fragile, so prefer
:func:`structgen.generate`.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Sequence

import numpy as np

from ..decoding import Decoding, Segment
from ..errors import StructgenError, VocabError
from ..output_types import resolve_output
from ..prompts import ChatTemplate, check_messages, check_text, compiled_template, is_chat, plain_transcript
from ..vocab import Vocab
from .protocol import as_runtime, register_adapter

#: Token ids sampled when checking that a given vocabulary matches the model's.
_PROBE_TOKENS = 97


class LlamaCppRuntime:
    """A :class:`~structgen.integrations.Runtime` for a ``llama_cpp.Llama``.

    ``vocab`` defaults to :meth:`Vocab.from_llama_cpp`; a vocabulary given here is checked against
    the model (logit width and a sample of token texts) and refused with
    :class:`~structgen.errors.VocabError` if it does not belong to it.
    """

    overlaps_forward_pass = True

    def __init__(self, llm: Any, *, vocab: Any = None, reuse_prefix: bool = True) -> None:
        import llama_cpp

        if getattr(llm, "model", None) is None or not hasattr(llm, "eval"):
            raise StructgenError("LlamaCppRuntime needs a loaded llama_cpp.Llama")
        self.llm = llm
        self._lib = llama_cpp
        self._n_vocab = int(llm.n_vocab())
        if vocab is None:
            vocab = Vocab.from_llama_cpp(llm)
        else:
            check_llama_vocab(llm, vocab)
        self._vocab = vocab
        self.reuse_prefix = reuse_prefix
        #: held for the whole of a generation: one llama.cpp context holds one sequence
        self.lock = threading.RLock()
        self._template: ChatTemplate | None = None
        self._template_ready = False

    @property
    def vocab(self) -> Any:
        return self._vocab

    @property
    def context_length(self) -> int:
        return int(self.llm.n_ctx())

    # -- prompts ------------------------------------------------------------------------------

    @property
    def chat_template(self) -> str | None:
        """The GGUF's ``tokenizer.chat_template``, or None."""
        template = (getattr(self.llm, "metadata", None) or {}).get("tokenizer.chat_template")
        return template or None

    @property
    def model_name(self) -> str | None:
        """The GGUF's ``general.basename`` (else ``general.name``): what call formats are picked by
        where the template names none."""
        meta = getattr(self.llm, "metadata", None) or {}
        return meta.get("general.basename") or meta.get("general.name") or None

    @property
    def template_tokens(self) -> dict[str, str]:
        return {"bos_token": self._bos_text(), "eos_token": self._token_text(self.llm.token_eos())}

    def encode_prompt(self, prompt: Any) -> list[int]:
        if is_chat(prompt):
            text, templated = self.render_chat(check_messages(prompt))
            return self.encode_rendered(text) if templated else self._encode(text, templated=False)
        return self._encode(check_text(prompt), templated=False)

    def encode_rendered(self, text: str) -> list[int]:
        """Ids of a prompt a chat template wrote: special tokens parsed, BOS added only where the
        template did not write it."""
        return self._encode(text, templated=True)

    def _encode(self, text: str, *, templated: bool) -> list[int]:
        bos = self._bos_text()
        add_bos = not (templated and bos and text.startswith(bos))
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=templated))

    def render_chat(self, messages: list[dict[str, Any]]) -> tuple[str, bool]:
        """The prompt text for ``messages`` and whether the model's own template made it."""
        template = self._chat_template()
        if template is None:
            return plain_transcript(messages), False
        return template.render(messages), True

    def _chat_template(self) -> ChatTemplate | None:
        if not self._template_ready:
            source = self.chat_template
            if source:
                self._template = compiled_template(source, **self.template_tokens)
            self._template_ready = True
        return self._template

    def _bos_text(self) -> str:
        return self._token_text(self.llm.token_bos())

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        vocab = self._lib.llama_model_get_vocab(self.llm.model)
        raw = self._lib.llama_vocab_get_text(vocab, token)
        return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else ""

    # -- the sequence -------------------------------------------------------------------------

    def start(self, prompt_ids: Sequence[int]) -> None:
        ids = [int(t) for t in prompt_ids]
        keep = 0
        if self.reuse_prefix and self.llm.n_tokens:
            cached = self.llm.input_ids[: self.llm.n_tokens]
            n = min(len(cached), len(ids) - 1)  # at least one token is evaluated, for its logits
            if n > 0:
                same = np.asarray(cached[:n]) == np.asarray(ids[:n], dtype=cached.dtype)
                keep = n if same.all() else int(np.argmin(same))
        self.llm.n_tokens = keep
        self.llm.eval(ids[keep:])

    def feed(self, token_ids: Sequence[int]) -> None:
        self.llm.eval([int(t) for t in token_ids])

    def logits(self) -> np.ndarray:
        ptr = self._lib.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).copy()


def check_llama_vocab(llm: Any, vocab: Any) -> None:
    """Raise :class:`VocabError` unless ``vocab`` is ``llm``'s vocabulary (logit width and the
    texts of a spread of tokens)."""
    import llama_cpp as lib

    n_vocab = int(llm.n_vocab())
    if vocab.logit_width != n_vocab:
        raise VocabError(
            f"the vocabulary has a logit width of {vocab.logit_width} but the model has {n_vocab} logits: "
            "it belongs to another model"
        )
    lvocab = lib.llama_model_get_vocab(llm.model)
    n = min(vocab.n_tokens, int(lib.llama_vocab_n_tokens(lvocab)))
    buf = ctypes.create_string_buffer(256)
    for i in np.linspace(0, n - 1, num=min(n, _PROBE_TOKENS), dtype=np.int64).tolist():
        if not vocab.is_text[i]:
            continue
        size = lib.llama_token_to_piece(lvocab, i, buf, len(buf), 0, True)
        if size < 0:
            continue
        if buf.raw[:size] != vocab.token_bytes(i):
            raise VocabError(
                f"the vocabulary does not match the model: token {i} is {vocab.token_bytes(i)!r} in the "
                f"vocabulary but {buf.raw[:size]!r} in the model"
            )


class LlamaCppLogitsProcessor:
    """A llama-cpp-python logits processor that masks each step to the constraint.

    Called as ``processor(input_ids, scores)`` by ``create_completion``; the first call fixes
    where the prompt ends. ``max_tokens`` (the completion's own) turns on the token budget so the
    output closes validly before it. The step itself is :class:`~structgen.decoding.Decoding`,
    the one every front end shares.
    """

    def __init__(self, vocab: Any, output_type: Any, *, max_tokens: int | None = None, **schema_options: Any) -> None:
        self.vocab = vocab
        self.spec = resolve_output(output_type, schema_options)
        self.max_tokens = max_tokens
        self.decoding = Decoding(
            vocab, [Segment(self.spec.grammar, max_tokens or 1 << 30)], budget_masks=max_tokens is not None
        )
        self._prompt_length: int | None = None

    @property
    def state(self) -> Any:
        return self.decoding.state

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        n = len(input_ids)
        if self._prompt_length is None:
            self._prompt_length = n
        if scores.shape[-1] != self.vocab.logit_width:
            raise VocabError(
                f"the model gives {scores.shape[-1]} logits but the vocabulary has a width of {self.vocab.logit_width}"
            )
        for t in input_ids[self._prompt_length + len(self.decoding.tokens) : n]:
            self.decoding.commit(int(t))
        allowed = self.decoding.allowed()
        if allowed.ids.size == 0:
            return scores  # the constraint is finished; llama.cpp stops on its end token
        keep = np.zeros(scores.shape[-1], dtype=bool)
        keep[allowed.ids] = True
        scores[~keep] = -np.inf
        return scores

    def result(self, text: str) -> Any:
        """Validate the completion's text and return the value (as :func:`structgen.generate` would)."""
        return self.spec.parse(text)


def logits_processor(
    llm_or_vocab: Any, output_type: Any, *, max_tokens: int | None = None, **schema_options: Any
) -> LlamaCppLogitsProcessor:
    """A :class:`LlamaCppLogitsProcessor` for ``output_type``; the first argument is the
    ``llama_cpp.Llama`` (its vocabulary is read once and cached) or a :class:`~structgen.vocab.Vocab`."""
    vocab = llm_or_vocab if isinstance(llm_or_vocab, Vocab) else as_runtime(llm_or_vocab).vocab
    return LlamaCppLogitsProcessor(vocab, output_type, max_tokens=max_tokens, **schema_options)


def _is_llama(obj: Any) -> bool:
    return type(obj).__module__.startswith("llama_cpp") and hasattr(obj, "eval")


register_adapter("llama_cpp", _is_llama, LlamaCppRuntime)
