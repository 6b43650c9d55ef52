"""transformers: a `Runtime` over a causal LM and its tokenizer, and a ``LogitsProcessor``.

:class:`TransformersRuntime` runs the model one step at a time with its key/value cache (the
forward pass runs on a worker thread - torch releases the GIL - while the next mask is computed).
The vocabulary comes from the tokenizer (:meth:`Vocab.from_hf`) with the model's logit width, and
the end-of-generation ids of the model's ``generation_config`` added. A tokenizer that cannot be
the model's (more tokens than the model has logits, or far fewer) is refused.

:class:`StructgenLogitsProcessor` plugs into ``model.generate``::

    processor = StructgenLogitsProcessor(tokenizer, Person, max_new_tokens=200)
    out = model.generate(input_ids, logits_processor=LogitsProcessorList([processor]), max_new_tokens=200)
    person = processor.result(tokenizer.decode(out[0, input_ids.shape[1]:], skip_special_tokens=True))

Loading the GGUF files of this project: ``AutoModelForCausalLM.from_pretrained(folder,
gguf_file=name)`` (needs ``accelerate`` and ``gguf``; set ``HF_HUB_OFFLINE=1``), the same for
``AutoTokenizer``.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from ..decoding import Decoding, Segment
from ..errors import StructgenError, VocabError
from ..output_types import resolve_output
from ..prompts import ChatTemplate, check_messages, check_text, compiled_template, is_chat, plain_transcript
from ..vocab import Vocab
from .protocol import register_adapter

#: Logit padding accepted past the tokenizer's last token (models round their output layer up).
MAX_LOGIT_PADDING = 1024


def _logit_width(model: Any) -> int:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    width = getattr(head, "out_features", None)
    if width is None:
        config = model.config
        width = getattr(config, "vocab_size", None) or getattr(getattr(config, "text_config", None), "vocab_size", None)
    if width is None:
        raise StructgenError("cannot tell the model's logit width (no output layer, no config.vocab_size)")
    return int(width)


def hf_vocab(
    tokenizer: Any, model: Any = None, *, logit_width: int | None = None, eos_token_ids: Sequence[int] | None = None
) -> Any:
    """The :class:`~structgen.vocab.Vocab` of ``tokenizer`` for ``model`` (checked to belong
    together). End ids: ``eos_token_ids`` if given, else the tokenizer's and the model's
    ``generation_config``'s."""
    width = logit_width if logit_width is not None else (_logit_width(model) if model is not None else None)
    n_tokens = len(tokenizer)
    if width is not None:
        if n_tokens > width + 1:
            raise VocabError(
                f"the tokenizer has {n_tokens} tokens but the model only {width} logits: they do not belong together"
            )
        if width - n_tokens > max(MAX_LOGIT_PADDING, width // 100):
            raise VocabError(
                f"the tokenizer has {n_tokens} tokens but the model {width} logits: they do not belong together"
            )
    if eos_token_ids is not None:
        return Vocab.from_hf(tokenizer, logit_width=width, eos_token_ids=list(eos_token_ids))
    vocab = Vocab.from_hf(tokenizer, logit_width=width)
    extra = _generation_eos(model)
    extra = {e for e in extra if 0 <= e < vocab.n_tokens} - set(vocab.eos_token_ids)
    if extra:
        vocab = Vocab.from_hf(tokenizer, logit_width=width, eos_token_ids=sorted(set(vocab.eos_token_ids) | extra))
    return vocab


def _generation_eos(model: Any) -> set[int]:
    config = getattr(model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    if eos is None:
        return set()
    return {int(eos)} if isinstance(eos, int) else {int(e) for e in eos}


class TransformersRuntime:
    """A :class:`~structgen.integrations.Runtime` for a ``transformers`` causal LM and tokenizer."""

    overlaps_forward_pass = True

    def __init__(self, model: Any, tokenizer: Any, *, vocab: Any = None) -> None:
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self._torch = torch
        self._vocab = vocab if vocab is not None else hf_vocab(tokenizer, model)
        if vocab is not None and vocab.logit_width != _logit_width(model):
            raise VocabError(
                f"the vocabulary has a logit width of {vocab.logit_width} but the model {_logit_width(model)} logits"
            )
        # transformers 5 renamed the cache (argument and output field) from past_key_values to
        # cache; the first output tells which name this version uses
        self._cache_arg = "past_key_values"
        self._device = next(model.parameters()).device
        self._cache: Any = None
        self._last: np.ndarray | None = None
        #: held for the whole of a generation: the key/value cache holds one sequence
        self.lock = threading.RLock()
        self._template: ChatTemplate | None = None

    @property
    def vocab(self) -> Any:
        return self._vocab

    @property
    def context_length(self) -> int | None:
        config = self.model.config
        n = getattr(config, "max_position_embeddings", None)
        n = n or getattr(getattr(config, "text_config", None), "max_position_embeddings", None)
        return int(n) if n else None

    @property
    def chat_template(self) -> str | None:
        """The tokenizer's chat template, or None."""
        template = getattr(self.tokenizer, "chat_template", None)
        return template if isinstance(template, str) and template else None

    @property
    def template_tokens(self) -> dict[str, str]:
        tok = self.tokenizer
        return {"bos_token": getattr(tok, "bos_token", None) or "", "eos_token": getattr(tok, "eos_token", None) or ""}

    def encode_prompt(self, prompt: Any) -> list[int]:
        if is_chat(prompt):
            messages = check_messages(prompt)
            if self.chat_template:
                if self._template is None:
                    self._template = compiled_template(self.chat_template, **self.template_tokens)
                return self.encode_rendered(self._template.render(messages))
            prompt = plain_transcript(messages)
        return list(self.tokenizer(check_text(prompt), add_special_tokens=True)["input_ids"])

    def encode_rendered(self, text: str) -> list[int]:
        """Ids of a prompt a chat template wrote (it writes any special tokens it wants itself)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def start(self, prompt_ids: Sequence[int]) -> None:
        self._cache = None
        self._run(prompt_ids)

    def feed(self, token_ids: Sequence[int]) -> None:
        if self._cache is None:
            raise StructgenError("feed() before start()")
        self._run(token_ids)

    def logits(self) -> np.ndarray:
        if self._last is None:
            raise StructgenError("logits() before start()")
        return self._last

    def _run(self, ids: Sequence[int]) -> None:
        torch = self._torch
        # inference mode is per thread: this may run on the worker thread
        with torch.inference_mode():
            x = torch.tensor([[int(t) for t in ids]], dtype=torch.long, device=self._device)
            kwargs = {"input_ids": x, "use_cache": True}
            if self._cache is not None:
                kwargs[self._cache_arg] = self._cache
            out = self.model(**kwargs)
            if "cache" in out.keys():
                self._cache_arg = "cache"
                self._cache = out["cache"]
            else:
                self._cache = out["past_key_values"]
            self._last = out.logits[0, -1].float().cpu().numpy()


class StructgenLogitsProcessor:
    """A ``transformers`` logits processor constraining ``model.generate`` to ``output_type``.

    Rows of a batch are followed independently; the first call fixes where the prompt ends (pad
    prompts on the left). ``max_new_tokens`` (the same as given to ``generate``) turns on the
    token budget. The end tokens allowed are the ones ``generate`` stops on: ``eos_token_ids``,
    else the model's ``generation_config.eos_token_id`` (with ``model=``), else the tokenizer's
    ``eos_token_id``; after one, a row may only repeat end tokens (``generate`` pads it anyway).
    """

    def __init__(
        self,
        tokenizer_or_vocab: Any,
        output_type: Any,
        *,
        model: Any = None,
        max_new_tokens: int | None = None,
        eos_token_ids: Sequence[int] | None = None,
        **schema_options: Any,
    ) -> None:
        if isinstance(tokenizer_or_vocab, Vocab):
            self.vocab = tokenizer_or_vocab
        else:
            if eos_token_ids is None:
                stops = _generation_eos(model) if model is not None else set()
                if not stops and getattr(tokenizer_or_vocab, "eos_token_id", None) is not None:
                    stops = {int(tokenizer_or_vocab.eos_token_id)}
                eos_token_ids = sorted(stops) or None
            self.vocab = hf_vocab(tokenizer_or_vocab, model, eos_token_ids=eos_token_ids)
        self._end_ids = np.asarray(self.vocab.eos_token_ids, dtype=np.int64)
        self.spec = resolve_output(output_type, schema_options)
        self.max_new_tokens = max_new_tokens
        self._rows: list[Decoding] = []
        self._seen: list[int] = []
        self._prompt_length: int | None = None

    def _decoding(self) -> Decoding:
        budget = self.max_new_tokens
        return Decoding(self.vocab, [Segment(self.spec.grammar, budget or 1 << 30)], budget_masks=budget is not None)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        batch, n = input_ids.shape
        if self._prompt_length is None:
            self._prompt_length = n
            self._rows = [self._decoding() for _ in range(batch)]
            self._seen = [0] * batch
        if scores.shape[-1] < self.vocab.n_tokens:
            raise VocabError(
                f"the model gives {scores.shape[-1]} logits but the vocabulary has {self.vocab.n_tokens} tokens"
            )
        masks = np.ones((batch, scores.shape[-1]), dtype=bool)
        for row, dec in enumerate(self._rows):
            new = input_ids[row, self._prompt_length + self._seen[row] :].tolist()
            self._seen[row] += len(new)
            for t in new:
                if dec.ended:
                    break  # generate pads a finished row with end tokens
                dec.commit(int(t))
            if dec.ended:
                if self._end_ids.size:
                    masks[row] = False
                    masks[row, self._end_ids] = True
                continue
            allowed = dec.allowed()
            if allowed.ids.size:
                masks[row] = False
                masks[row, allowed.ids[allowed.ids < scores.shape[-1]]] = True
        return scores.masked_fill(~torch.from_numpy(masks).to(scores.device), float("-inf"))

    def result(self, text: str) -> Any:
        """Validate generated text and return the value (as :func:`structgen.generate` would)."""
        return self.spec.parse(text)


def _is_transformers_pair(obj: Any) -> bool:
    return isinstance(obj, tuple) and len(obj) == 2 and hasattr(obj[0], "parameters") and hasattr(obj[1], "encode")


register_adapter("transformers", _is_transformers_pair, lambda pair: TransformersRuntime(pair[0], pair[1]))
