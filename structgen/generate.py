"""`generate` and `stream`: a model's output, constrained token by token, returned validated.

The loop, per token: read the logits, sample among the tokens the mask allows, commit the token
to the constraint state, append the tokens every valid continuation must start with (fast-forward),
and feed them to the model. Where the runtime releases the GIL during its forward pass the feed runs
on a worker thread while the next mask is computed here.

Token budget: the output closes validly within ``max_tokens``. While tokens are plentiful the mask
is the grammar's; once they get tight it keeps only tokens after which the grammar's shortest
completion still fits (the engine's budget masks). ``max_tokens`` counts output tokens; the
end-of-sequence token is never needed (generation stops as soon as the output is complete and the
model ends it, or the budget is spent with a complete output). If nothing valid fits, or with
``on_max_tokens="error"`` the budget runs out first, :class:`~structgen.errors.GenerationError`
carries the partial text. Nothing invalid is ever returned: the final text is validated (by
Pydantic, ``jsonschema`` or the grammar matcher) before it is.
"""

from __future__ import annotations

import codecs
import functools
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterator, Mapping, Sequence

import numpy as np

from .constraint_cache import constraint_for
from .engine import State
from .engine.masks import unpack
from .errors import GenerationError, LimitError, StructgenError, VocabError
from .integrations.protocol import Runtime, as_runtime
from .output_types import OutputSpec, resolve_output
from .sampling import Sampler, SamplingOptions

#: Whether the engine offers budget masks (``State.mask_words(budget=k)``).

DEFAULT_MAX_TOKENS = 512


@dataclass
class GenerationStats:
    """Where the time of one generation went (seconds) and how many tokens it took."""

    prompt_tokens: int = 0
    output_tokens: int = 0
    sampled_tokens: int = 0
    forced_tokens: int = 0
    forward_passes: int = 0
    masks: int = 0
    prepare_seconds: float = 0.0  # output type to grammar to constraint (cached after the first call)
    prompt_seconds: float = 0.0  # evaluating the prompt
    model_seconds: float = 0.0  # forward passes after the prompt
    mask_seconds: float = 0.0  # computing masks (overlapped with the forward pass where possible)
    sample_seconds: float = 0.0
    decode_seconds: float = 0.0  # wall time from the first mask to the end
    overlapped: bool = False

    @property
    def model_ms_per_token(self) -> float:
        """The model's own time per forward pass, in milliseconds."""
        return 1000 * self.model_seconds / self.forward_passes if self.forward_passes else 0.0

    @property
    def mask_ms_per_token(self) -> float:
        """Time to compute one mask, in milliseconds (whether or not it was hidden)."""
        return 1000 * self.mask_seconds / self.masks if self.masks else 0.0

    @property
    def overhead_ms_per_token(self) -> float:
        """What constrained decoding added to each output token's latency beyond the model's own
        time (masks not hidden behind the forward pass, sampling, bookkeeping), in milliseconds."""
        if not self.output_tokens:
            return 0.0
        return max(0.0, 1000 * (self.decode_seconds - self.model_seconds) / self.output_tokens)

    def summary(self) -> str:
        return (
            f"{self.output_tokens} tokens ({self.forced_tokens} forced), model {self.model_ms_per_token:.1f} ms/token, "
            f"mask {self.mask_ms_per_token:.2f} ms/token, overhead {self.overhead_ms_per_token:.2f} ms/token"
            f"{' (mask computed during the forward pass)' if self.overlapped else ''}"
        )


@dataclass
class GenerationResult:
    """The validated value, the text it was parsed from, the output token ids, and why it ended:
    ``"stop"`` (the output was complete and the model ended it, or nothing else could follow),
    ``"length"`` (``max_tokens`` reached with a complete output) or ``"stop_sequence"``."""

    value: Any
    text: str
    token_ids: list[int]
    finish_reason: str
    stats: GenerationStats = field(default_factory=GenerationStats)


@dataclass(frozen=True)
class _Options:
    max_tokens: int
    sampling: SamplingOptions
    seed: int | None
    stop: tuple[str, ...]
    stop_token_ids: frozenset[int]
    on_max_tokens: str
    fast_forward: bool
    overlap: bool


def _options(
    max_tokens: int,
    temperature: float,
    top_p: float,
    top_k: int,
    seed: int | None,
    stop: str | Sequence[str] | None,
    stop_token_ids: Sequence[int] | None,
    on_max_tokens: str,
    fast_forward: bool,
    overlap: bool,
) -> _Options:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise StructgenError(f"max_tokens must be a positive integer, not {max_tokens!r}")
    if on_max_tokens not in ("close", "error"):
        raise StructgenError(f"on_max_tokens must be 'close' or 'error', not {on_max_tokens!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise StructgenError(f"seed must be an integer or None, not {seed!r}")
    stops = (stop,) if isinstance(stop, str) else tuple(stop or ())
    if any(not isinstance(s, str) or not s for s in stops):
        raise StructgenError("stop must be a non-empty string or a list of them")
    return _Options(
        max_tokens,
        SamplingOptions(temperature, top_k, top_p),
        seed,
        stops,
        frozenset(int(t) for t in (stop_token_ids or ())),
        on_max_tokens,
        bool(fast_forward),
        bool(overlap),
    )


class Stream:
    """Text chunks of a generation as they are produced; the validated result at the end.

    Iterate to get the chunks (``str``). When the iteration ends, :attr:`value` holds the
    validated object and :attr:`result` the whole :class:`GenerationResult`; :meth:`final`
    consumes what is left and returns the value. A failure raises from the iteration.
    """

    def __init__(self, steps: Generator[str, None, GenerationResult]) -> None:
        self._steps = steps
        self._result: GenerationResult | None = None

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        if self._result is not None:
            raise StopIteration(self._result.value)
        try:
            return next(self._steps)
        except StopIteration as stop:
            self._result = stop.value
            raise StopIteration(stop.value.value) from None

    def close(self) -> None:
        """Stop generating (the model is left usable)."""
        self._steps.close()

    @property
    def result(self) -> GenerationResult:
        if self._result is None:
            raise StructgenError("the stream has not finished; iterate it to the end (or call final())")
        return self._result

    @property
    def value(self) -> Any:
        return self.result.value

    def final(self) -> Any:
        for _ in self:
            pass
        return self.value


def generate(
    model: Any,
    output_type: Any,
    prompt: Any,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = 0,
    seed: int | None = None,
    stop: str | Sequence[str] | None = None,
    stop_token_ids: Sequence[int] | None = None,
    on_max_tokens: str = "close",
    fast_forward: bool = True,
    overlap: bool = True,
    schema_options: Mapping[str, Any] | None = None,
    **schema_kwargs: Any,
) -> Any:
    """Generate from ``model`` an instance of ``output_type`` for ``prompt``; return it validated.

    ``model``: a ``llama_cpp.Llama``, a ``(transformers model, tokenizer)`` pair, or a
    :class:`~structgen.integrations.Runtime`. ``output_type``: a Pydantic model or any type
    ``TypeAdapter`` takes (returns that type), a JSON Schema dict (returns Python data), a
    :class:`~structgen.Grammar` (returns the text), or tools (returns a
    :class:`~structgen.tools.ToolCall` or :class:`~structgen.tools.FinalAnswer`). ``prompt``: a
    string (given to the model as is) or chat messages (through the model's chat template).

    Sampling: ``temperature`` (0 = greedy), ``top_k``, ``top_p``, ``seed`` (same seed, same
    output). ``stop``: strings that end the output where the text before them is complete (they
    are not part of the result); ``stop_token_ids``: extra ids that end it where it is complete.
    ``on_max_tokens="error"`` turns off the budget masks and raises if the output is not complete
    when ``max_tokens`` runs out. ``fast_forward``: commit forced tokens without sampling.
    ``overlap``: compute masks during the forward pass where the runtime allows it. Other keyword
    arguments (and ``schema_options``) go to the JSON Schema translator (``whitespace=``,
    ``property_order=``...).
    """
    return generate_result(
        model,
        output_type,
        prompt,
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=top_p,
        top_k=top_k,
        seed=seed,
        stop=stop,
        stop_token_ids=stop_token_ids,
        on_max_tokens=on_max_tokens,
        fast_forward=fast_forward,
        overlap=overlap,
        schema_options=schema_options,
        **schema_kwargs,
    ).value


def generate_result(model: Any, output_type: Any, prompt: Any, **options: Any) -> GenerationResult:
    """As :func:`generate`, returning the :class:`GenerationResult` (text, token ids, timings)."""
    steps = _steps(model, output_type, prompt, **options)
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def stream(model: Any, output_type: Any, prompt: Any, **options: Any) -> Stream:
    """As :func:`generate`, returning a :class:`Stream` of text chunks that ends with the value."""
    return Stream(_steps(model, output_type, prompt, **options))


def _steps(
    model: Any,
    output_type: Any,
    prompt: Any,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = 0,
    seed: int | None = None,
    stop: str | Sequence[str] | None = None,
    stop_token_ids: Sequence[int] | None = None,
    on_max_tokens: str = "close",
    fast_forward: bool = True,
    overlap: bool = True,
    schema_options: Mapping[str, Any] | None = None,
    **schema_kwargs: Any,
) -> Generator[str, None, GenerationResult]:
    opts = _options(
        max_tokens, temperature, top_p, top_k, seed, stop, stop_token_ids, on_max_tokens, fast_forward, overlap
    )
    runtime = as_runtime(model)
    merged = dict(schema_options or {})
    merged.update(schema_kwargs)
    t0 = time.perf_counter()
    spec = resolve_output(output_type, merged)
    prompt_ids = runtime.encode_prompt(prompt)
    decoder = _Decoder(runtime, spec, prompt_ids, opts)
    decoder.stats.prepare_seconds = time.perf_counter() - t0
    result = yield from decoder.run()
    return result


class _Decoder:
    """One generation: the state machine behind :func:`generate` and :func:`stream`."""

    def __init__(self, runtime: Runtime, spec: OutputSpec, prompt_ids: list[int], opts: _Options) -> None:
        self.runtime = runtime
        self.spec = spec
        self.opts = opts
        self.prompt_ids = list(prompt_ids)
        self.vocab = runtime.vocab
        self.width = self.vocab.logit_width
        self.eos = np.asarray(sorted(set(self.vocab.eos_token_ids)), dtype=np.int64)
        self.stop_ids = np.asarray(sorted(opts.stop_token_ids - set(self.eos.tolist())), dtype=np.int64)
        if self.stop_ids.size and (self.stop_ids.min() < 0 or self.stop_ids.max() >= self.width):
            raise StructgenError(f"stop_token_ids must be in [0, {self.width})")
        self.budget_masks = opts.on_max_tokens == "close"
        self.stats = GenerationStats(prompt_tokens=len(self.prompt_ids))
        self.sampler = Sampler(opts.sampling, opts.seed)
        self.tokens: list[int] = []
        self.text = bytearray()
        self._end_ids = frozenset(self.eos.tolist()) | frozenset(self.stop_ids.tolist())
        self._end_array = np.asarray(sorted(self._end_ids), dtype=np.int64)
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._decoded = ""  # the output decoded so far (an unfinished UTF-8 sequence held back)
        self._emitted_chars = 0  # how much of it has been yielded
        self._stop_scan = 0  # how much of it has been searched for stop strings
        ctx = runtime.context_length
        if not self.prompt_ids:
            raise StructgenError("the prompt encodes to no tokens")
        if ctx is not None and len(self.prompt_ids) >= ctx:
            raise LimitError(
                f"the prompt is {len(self.prompt_ids)} tokens long; the model's context holds {ctx} "
                "(prompt and output together)",
                limit="context_length",
                value=ctx,
            )
        self.limit = opts.max_tokens if ctx is None else min(opts.max_tokens, ctx - len(self.prompt_ids))

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> Generator[str, None, GenerationResult]:
        # `pending` is the model work still owed before the next logits can be read: a Future
        # (running on the worker thread) or a thunk (run on this thread, and skipped if the
        # output turns out to be complete without it).
        executor = ThreadPoolExecutor(max_workers=1) if self._overlap else None
        self.stats.overlapped = executor is not None
        pending: Future[Any] | Callable[[], None] | None = None
        decode_start: float | None = None
        try:
            if executor is not None:
                pending = executor.submit(self._timed_start)
            else:
                self._timed_start()
            t = time.perf_counter()
            state = constraint_for(self.spec.grammar, self.vocab).start()
            self.stats.prepare_seconds += time.perf_counter() - t
            if executor is None:
                decode_start = time.perf_counter()
            first = True
            while True:
                remaining = self.limit - len(self.tokens)
                if remaining <= 0:
                    result = self._finish(state, "length")
                    break
                ids, has_text = self._allowed(state, remaining)
                if first and ids.size == 0:
                    raise self._no_fit(state)
                first = False
                if not has_text:
                    if ids.size == 0:
                        raise GenerationError(
                            "no token can continue the output (the grammar has no completion from here)",
                            partial_text=self._partial(),
                        )
                    result = self._finish(state, "stop")
                    break
                self._run_pending(pending)
                pending = None
                if decode_start is None:
                    decode_start = time.perf_counter()
                logits = self._logits()
                t = time.perf_counter()
                token = self.sampler.sample(logits, ids)
                self.stats.sample_seconds += time.perf_counter() - t
                self.stats.sampled_tokens += 1
                if token in self._end_ids:
                    result = self._finish(state, "stop")
                    break
                if not state.commit_token(token):  # pragma: no cover - the mask allowed it
                    raise GenerationError(
                        f"the engine refused token {token} it had allowed", partial_text=self._partial()
                    )
                step = [token]
                if self.opts.fast_forward:
                    step.extend(self._forced(state, remaining - 1))
                self._append(step)
                stop_at = self._stop_position()
                if stop_at is not None:
                    result = self._validated(self._decoded[:stop_at], "stop_sequence")
                    break
                if len(self.tokens) < self.limit:
                    if executor is not None:
                        pending = executor.submit(self._timed_feed, step)
                    else:
                        pending = functools.partial(self._timed_feed, step)
                chunk = self._releasable()
                if chunk:
                    yield chunk  # the forward pass for the next token is already running
        finally:
            if decode_start is not None:
                self.stats.decode_seconds = time.perf_counter() - decode_start
            # an error or a KeyboardInterrupt must not leave the model inside a forward pass
            if isinstance(pending, Future):
                self._drain(pending)
            if executor is not None:
                executor.shutdown(wait=True)
        tail = result.text[self._emitted_chars :]
        if tail:
            self._emitted_chars += len(tail)
            yield tail
        return result

    @property
    def _overlap(self) -> bool:
        return self.opts.overlap and bool(getattr(self.runtime, "overlaps_forward_pass", False))

    # -- steps ------------------------------------------------------------------------------

    def _timed_start(self) -> None:
        t = time.perf_counter()
        self.runtime.start(self.prompt_ids)
        self.stats.prompt_seconds += time.perf_counter() - t

    def _timed_feed(self, ids: Sequence[int]) -> None:
        t = time.perf_counter()
        self.runtime.feed(ids)
        self.stats.model_seconds += time.perf_counter() - t
        self.stats.forward_passes += 1

    @staticmethod
    def _run_pending(pending: Future[Any] | Callable[[], None] | None) -> None:
        if isinstance(pending, Future):
            pending.result()
        elif pending is not None:
            pending()

    @staticmethod
    def _drain(pending: Future[Any] | None) -> None:
        if pending is None:
            return
        try:
            pending.result()
        except BaseException:  # noqa: BLE001 - the original exception is already propagating
            pass

    def _allowed(self, state: State, remaining: int) -> tuple[np.ndarray, bool]:
        """Ids allowed next (ascending; end-of-sequence and stop ids included where they apply),
        and whether any of them is text."""
        t = time.perf_counter()
        if self.budget_masks:
            # `remaining` output tokens may follow; the end-of-sequence token is free (we stop
            # on a complete output when the budget is spent), hence one more for the engine
            words = state.mask_words(budget=remaining + 1)  # type: ignore[call-arg]
        else:
            words = state.mask_words()
        allowed = unpack(words, self.width)
        if self.stop_ids.size and state.is_accepting():
            allowed[self.stop_ids] = True
        ends = self._end_array
        saved = allowed[ends]
        allowed[ends] = False
        has_text = bool(allowed.any())
        allowed[ends] = saved
        ids = np.flatnonzero(allowed)
        self.stats.mask_seconds += time.perf_counter() - t
        self.stats.masks += 1
        return ids, has_text

    def _logits(self) -> np.ndarray:
        logits = np.asarray(self.runtime.logits())
        if logits.ndim != 1 or logits.shape[0] != self.width:
            raise VocabError(
                f"the model gives {logits.shape[-1] if logits.ndim else 0} logits but the vocabulary has a "
                f"width of {self.width}: the vocabulary does not belong to this model"
            )
        return logits

    def _forced(self, state: State, room: int) -> list[int]:
        if room <= 0:
            return []
        forced = state.forced_tokens()[:room]
        done = 0
        for t in forced:
            if not state.commit_token(t):
                break
            if self.budget_masks and not state.mask_words(budget=room - done).any():  # type: ignore[call-arg]
                # the forced spelling took more tokens than the budget counts: sampling goes on
                state.rollback(1)
                break
            done += 1
        self.stats.forced_tokens += done
        return forced[:done]

    def _append(self, ids: Sequence[int]) -> None:
        self.tokens.extend(ids)
        self.stats.output_tokens = len(self.tokens)
        data = self.vocab.detokenize(ids)
        self.text += data
        self._decoded += self._utf8.decode(data)

    def _releasable(self) -> str:
        """Decoded text not yet yielded, less what could still turn out to start a stop string."""
        end = len(self._decoded)
        if self.opts.stop:
            end -= max(len(s) for s in self.opts.stop) - 1
        if end <= self._emitted_chars:
            return ""
        chunk = self._decoded[self._emitted_chars : end]
        self._emitted_chars = end
        return chunk

    def _stop_position(self) -> int | None:
        """Offset (in characters) of the earliest stop string whose preceding text is complete.

        An occurrence rejected once stays rejected (the text before it does not change), so only
        occurrences that end in the text added by the last step are new.
        """
        if not self.opts.stop:
            return None
        text = self._decoded
        best = None
        for s in self.opts.stop:
            start = max(0, self._stop_scan - len(s) + 1)
            while True:
                at = text.find(s, start)
                if at < 0 or (best is not None and at >= best):
                    break
                if self.spec.grammar.matches(text[:at].encode("utf-8")):
                    best = at
                    break
                start = at + 1
        self._stop_scan = len(text)
        return best

    # -- endings ----------------------------------------------------------------------------

    def _partial(self) -> str:
        return bytes(self.text).decode("utf-8", errors="replace")

    def _no_fit(self, state: State) -> GenerationError:
        hint = ""
        shortest = getattr(state, "shortest_completion", None)
        if shortest is not None:
            need = shortest()
            if need is not None:
                hint = f" (the shortest valid output is {need} tokens of this vocabulary)"
        return GenerationError(
            f"no valid output fits in max_tokens={self.limit}{hint}; raise max_tokens", partial_text=""
        )

    def _finish(self, state: State, reason: str) -> GenerationResult:
        if not state.is_accepting():
            raise GenerationError(
                f"max_tokens={self.limit} ran out before the output was complete",
                partial_text=self._partial(),
            )
        try:
            text = bytes(self.text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise GenerationError(f"the output is not valid UTF-8: {e}", partial_text=self._partial()) from e
        return self._validated(text, reason)

    def _validated(self, text: str, reason: str) -> GenerationResult:
        value = self.spec.parse(text)
        return GenerationResult(value, text, list(self.tokens), reason, self.stats)


def describe_engine() -> dict[str, bool]:
    """Engine capabilities :func:`generate` depends on (for diagnostics and tests)."""
    return {"budget_masks": True, "shortest_completion": True}
