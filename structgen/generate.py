"""`generate` and `stream`: a model's output, constrained token by token, returned validated.

The loop, per token: read the logits, sample among the tokens the mask allows, commit the token
(:class:`~structgen.decoding.Decoding`, the one decoding step every front end shares), append the
tokens every valid continuation must start with (fast-forward), and feed them to the model. Where
the runtime releases the GIL during its forward pass the feed runs on a worker thread while the
next mask is computed here. :func:`structgen.chat` runs the same loop over its own segments.

Token budget: the output closes validly within ``max_tokens``. While tokens are plentiful the mask
is the grammar's; once they get tight it keeps only tokens after which the grammar's shortest
completion still fits (the engine's budget masks). ``max_tokens`` counts output tokens; the
end-of-sequence token is never needed (generation stops as soon as the output is complete and the
model ends it, or the budget is spent with a complete output). If nothing valid fits,
:class:`~structgen.errors.GenerationError` says so before the model runs; with
``on_max_tokens="error"`` the budget masks are off and running out first raises, with the partial
text. Nothing invalid is ever returned: the final text is validated (by Pydantic, ``jsonschema``
or the grammar matcher) before it is.

Sampling defaults: a repetition penalty of 1.1 over the last 64 output tokens (llama.cpp's
default), so a free string field does not loop on one phrase until ``max_tokens``; it changes which
allowed token is likely, never what the grammar accepts (``repetition_penalty=1.0`` turns it off).

Threads and async: a runtime holds one sequence, so each generation holds the runtime's lock
(:func:`~structgen.integrations.runtime_lock`) from the prompt to the last token; calls from
several threads on one model are serialised. :func:`agenerate` and :func:`astream` run the same
loop on a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import inspect
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence

import numpy as np

from .decoding import Decoding, Segment
from .errors import GenerationError, LimitError, StructgenError, VocabError
from .grammar import Grammar
from .integrations.protocol import Runtime, as_runtime, runtime_lock
from .output_types import resolve_output
from .partials import PartialReader
from .prompts.messages import check_messages, check_text, is_chat
from .sampling import Sampler, SamplingOptions

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
    ``"length"`` (``max_tokens`` reached with a complete output) or ``"stop_sequence"``.
    ``segments`` holds ``(label, text)`` per part of the output (one ``"output"`` for
    :func:`generate`; a ``"reasoning"`` part first where :func:`structgen.chat` let the model
    think); ``text`` is the last part's, the one ``value`` was parsed from."""

    value: Any
    text: str
    token_ids: list[int]
    finish_reason: str
    stats: GenerationStats = field(default_factory=GenerationStats)
    segments: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class GenerationOptions:
    """How one generation samples and stops (checked by :func:`generation_options`)."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    sampling: SamplingOptions = SamplingOptions()
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stop_token_ids: frozenset[int] = frozenset()
    on_max_tokens: str = "close"
    fast_forward: bool = True
    overlap: bool = True


def generation_options(
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
    repetition_penalty: float = 1.1,
    repetition_window: int = 64,
) -> GenerationOptions:
    """Checked :class:`GenerationOptions` (a :class:`~structgen.errors.StructgenError` naming the
    bad argument otherwise)."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise StructgenError(f"max_tokens must be a positive integer, not {max_tokens!r}")
    if on_max_tokens not in ("close", "error"):
        raise StructgenError(f"on_max_tokens must be 'close' or 'error', not {on_max_tokens!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise StructgenError(f"seed must be a non-negative integer or None, not {seed!r}")
    stops = (stop,) if isinstance(stop, str) else tuple(stop or ())
    if any(not isinstance(s, str) or not s for s in stops):
        raise StructgenError("stop must be a non-empty string or a list of them")
    for s in stops:
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no output text can ever contain it
            raise StructgenError(f"stop string {s!r} is not valid Unicode: it holds a lone surrogate") from None
    ids = []
    for t in stop_token_ids or ():
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
            raise StructgenError(f"stop_token_ids must be integers, not {t!r}")
        ids.append(int(t))
    return GenerationOptions(
        max_tokens,
        SamplingOptions(temperature, top_k, top_p, repetition_penalty, repetition_window),
        seed,
        stops,
        frozenset(ids),
        on_max_tokens,
        bool(fast_forward),
        bool(overlap),
    )


_GENERATION_OPTION_NAMES = frozenset(inspect.signature(generation_options).parameters)


class Stream:
    """Text chunks of a generation as they are produced; the validated result at the end.

    Iterate to get the chunks (``str``). When the iteration ends, :attr:`value` holds the
    validated object and :attr:`result` the whole :class:`GenerationResult`; :meth:`final`
    consumes what is left and returns the value. A failure raises from the iteration.
    """

    def __init__(self, steps: Generator[tuple[str, str], None, GenerationResult], output_type: Any = None) -> None:
        self._steps = steps
        self._output_type = output_type
        self._result: GenerationResult | None = None

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        return self.next_part()[1]

    def next_part(self) -> tuple[str, str]:
        """The next ``(segment label, text chunk)``."""
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

    def partials(self, *, grow_strings: bool = False) -> Iterator[Any]:
        """Typed partial objects of the output type as the text grows (:mod:`structgen.partials`):
        a value appears once the JSON parse state shows it complete (strings also while they grow,
        with ``grow_strings``); the last item is the validated result. Consumes the stream."""
        if self._output_type is None or isinstance(self._output_type, Grammar):
            raise StructgenError("partials() needs a JSON output type (a model, a type, a JSON Schema or tools)")
        reader = PartialReader(self._output_type, grow_strings=grow_strings)
        for chunk in self:
            yield from reader.feed(chunk)
        yield reader.finish(self.value)


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
    repetition_penalty: float = 1.1,
    repetition_window: int = 64,
    schema_options: Mapping[str, Any] | None = None,
    **schema_kwargs: Any,
) -> Any:
    """Generate from ``model`` an instance of ``output_type`` for ``prompt``; return it validated.

    ``model``: a ``llama_cpp.Llama``, a ``(transformers model, tokenizer)`` pair, or a
    :class:`~structgen.integrations.Runtime`. ``output_type``: a Pydantic model or any type
    ``TypeAdapter`` takes (returns that type), a JSON Schema dict (returns Python data), a
    :class:`~structgen.Grammar` (returns the text), or tools (returns a
    :class:`~structgen.tools.ToolCall` or :class:`~structgen.tools.FinalAnswer`; for agents that
    show the model its tools, use :func:`structgen.chat`). ``prompt``: a string (given to the model
    as is) or chat messages (through the model's chat template).

    Sampling: ``temperature`` (0 = greedy), ``top_k``, ``top_p``, ``seed`` (same seed, same
    output), ``repetition_penalty`` over the last ``repetition_window`` output tokens (1.0 = off).
    ``stop``: strings that end the output where the text before them is complete (they are not
    part of the result); ``stop_token_ids``: extra ids that end it where it is complete.
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
        repetition_penalty=repetition_penalty,
        repetition_window=repetition_window,
        schema_options=schema_options,
        **schema_kwargs,
    ).value


def generate_result(model: Any, output_type: Any, prompt: Any, **options: Any) -> GenerationResult:
    """As :func:`generate`, returning the :class:`GenerationResult` (text, token ids, timings)."""
    return drain(_prepare(model, output_type, prompt, **options).steps())


def stream(model: Any, output_type: Any, prompt: Any, **options: Any) -> Stream:
    """As :func:`generate`, returning a :class:`Stream` of text chunks that ends with the value."""
    return Stream(_prepare(model, output_type, prompt, **options).steps(), output_type)


async def agenerate(model: Any, output_type: Any, prompt: Any, **options: Any) -> Any:
    """As :func:`generate`, awaited: the generation runs on a worker thread, off the event loop."""
    result = await asyncio.to_thread(generate_result, model, output_type, prompt, **options)
    return result.value


async def astream(model: Any, output_type: Any, prompt: Any, **options: Any) -> AsyncIterator[str]:
    """As :func:`stream`, as an async iterator of text chunks (the generation runs on a worker
    thread). The validated value is not returned by an async iterator: use :func:`agenerate`, or
    :func:`stream` in a thread, where the value is needed."""
    job = await asyncio.to_thread(_prepare, model, output_type, prompt, **options)
    async for _, chunk in iterate_in_thread(job.steps()):
        yield chunk


def drain(steps: Generator[Any, None, GenerationResult]) -> GenerationResult:
    """Run a generation's steps to the end and return its result."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


async def iterate_in_thread(steps: Generator[Any, None, Any]) -> AsyncIterator[Any]:
    """Items of a blocking generator, produced on one worker thread (the runtime lock is taken
    and released on that thread) and handed to the event loop as they come. Leaving the loop
    early closes the generator, which stops the generation."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in steps:
                loop.call_soon_threadsafe(queue.put_nowait, ("item", item))
                if stop.is_set():
                    break
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            loop.call_soon_threadsafe(queue.put_nowait, ("error", e))
        else:
            loop.call_soon_threadsafe(queue.put_nowait, ("done", None))
        finally:
            steps.close()

    worker = loop.run_in_executor(None, produce)
    try:
        while True:
            kind, item = await queue.get()
            if kind == "item":
                yield item
            elif kind == "error":
                raise item
            else:
                break
    finally:
        stop.set()
        await worker


def split_options(options: Mapping[str, Any]) -> tuple[GenerationOptions, dict[str, Any]]:
    """Checked :class:`GenerationOptions` from the keywords :func:`generation_options` takes,
    and the other keywords (the JSON Schema translator's options), apart."""
    names = _GENERATION_OPTION_NAMES
    return (
        generation_options(**{k: v for k, v in options.items() if k in names}),
        {k: v for k, v in options.items() if k not in names},
    )


def _prepare(
    model: Any, output_type: Any, prompt: Any, *, schema_options: Mapping[str, Any] | None = None, **options: Any
) -> Generation:
    opts, schema_kwargs = split_options(options)
    runtime = as_runtime(model)
    merged = dict(schema_options or {})
    merged.update(schema_kwargs)
    t0 = time.perf_counter()
    spec = resolve_output(output_type, merged)
    # checked here, not only by each runtime, so that a runtime of the caller's own gets a prompt
    # of the documented shape or none
    prompt = check_messages(prompt) if is_chat(prompt) else check_text(prompt)
    prompt_ids = runtime.encode_prompt(prompt)
    job = Generation(runtime, prompt_ids, [Segment(spec.grammar, opts.max_tokens, "output")], spec.parse, opts)
    job.stats.prepare_seconds = time.perf_counter() - t0
    return job


class Generation:
    """One generation on a runtime: the loop behind :func:`generate`, :func:`stream` and
    :func:`structgen.chat`.

    Built before any model call: the prompt's length is checked against the context, and a
    budget that no valid output fits raises :class:`GenerationError` here. :meth:`steps` runs it,
    yielding ``(segment label, text chunk)`` and returning the :class:`GenerationResult`, whose
    value is ``parse`` of the last segment's text. ``special_text``: special tokens appear in the
    text in their printed form (else as nothing, as token bytes have it).
    """

    def __init__(
        self,
        runtime: Runtime,
        prompt_ids: Sequence[int],
        segments: Sequence[Segment],
        parse: Callable[[str], Any],
        opts: GenerationOptions,
        *,
        special_text: bool = False,
    ) -> None:
        self.runtime = runtime
        # chat answers print special tokens (call markers bound as token atoms) to be read back
        self.special_text = special_text
        self.parse = parse
        self.opts = opts
        self.prompt_ids = [int(t) for t in prompt_ids]
        self.vocab = runtime.vocab
        self.width = self.vocab.logit_width
        self.stats = GenerationStats(prompt_tokens=len(self.prompt_ids))
        if not self.prompt_ids:
            raise StructgenError("the prompt encodes to no tokens")
        ctx = runtime.context_length
        if ctx is not None and len(self.prompt_ids) >= ctx:
            raise LimitError(
                f"the prompt is {len(self.prompt_ids)} tokens long; the model's context holds {ctx} "
                "(prompt and output together)",
                limit="context_length",
                value=ctx,
            )
        t = time.perf_counter()
        self.decoding = Decoding(
            self.vocab,
            segments,
            token_limit=None if ctx is None else ctx - len(self.prompt_ids),
            stop_token_ids=opts.stop_token_ids,
            budget_masks=opts.on_max_tokens == "close",
        )
        self.decoding.check_fits()
        self.stats.prepare_seconds += time.perf_counter() - t
        self.sampler = Sampler(opts.sampling, opts.seed)
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._texts: list[bytearray] = [bytearray()]
        self._decoded: list[str] = [""]  # per segment, an unfinished UTF-8 sequence held back
        self._emitted = 0  # characters of the current segment already yielded
        self._stop_scan = 0
        self._started = False

    @property
    def tokens(self) -> list[int]:
        return self.decoding.tokens

    # -- the loop ---------------------------------------------------------------------------

    def steps(self) -> Generator[tuple[str, str], None, GenerationResult]:
        """Run the generation (once): ``(label, chunk)`` as text is produced, then the result."""
        if self._started:
            raise StructgenError("a generation runs once")
        self._started = True
        lock = runtime_lock(self.runtime)
        with lock:
            result = yield from self._run()
        return result

    def _run(self) -> Generator[tuple[str, str], None, GenerationResult]:
        # `pending` is the model work still owed before the next logits can be read: a Future
        # (running on the worker thread) or a thunk (run on this thread, and skipped if the
        # output turns out to be complete without it).
        executor = ThreadPoolExecutor(max_workers=1) if self._overlap else None
        self.stats.overlapped = executor is not None
        pending: Future[Any] | Callable[[], None] | None = None
        decode_start: float | None = None
        dec = self.decoding
        try:
            if executor is not None:
                pending = executor.submit(self._timed_start)
            else:
                self._timed_start()
            if executor is None:
                decode_start = time.perf_counter()
            step = dec.forced() if self.opts.fast_forward else []
            if step:
                self.stats.forced_tokens += len(step)
                yield from self._append(step)
                pending = self._schedule(executor, pending, step)
            while True:
                if dec.remaining() <= 0:
                    result = self._finish("length")
                    break
                t = time.perf_counter()
                allowed = dec.allowed()
                self.stats.mask_seconds += time.perf_counter() - t
                self.stats.masks += 1
                if not allowed.has_text:
                    if allowed.ids.size == 0 and not dec.is_complete():
                        raise GenerationError(
                            "no token can continue the output (the grammar has no completion from here)",
                            partial_text=self._partial(),
                        )
                    result = self._finish("stop")
                    break
                self._run_pending(pending)
                pending = None
                if decode_start is None:
                    decode_start = time.perf_counter()
                logits = self._logits()
                t = time.perf_counter()
                token = self.sampler.sample(logits, allowed.ids, recent=dec.tokens)
                self.stats.sample_seconds += time.perf_counter() - t
                self.stats.sampled_tokens += 1
                if dec.commit(token):
                    result = self._finish("stop")
                    break
                step = [token]
                if self.opts.fast_forward:
                    forced = dec.forced()
                    self.stats.forced_tokens += len(forced)
                    step.extend(forced)
                yield from self._append(step)
                stop_at = self._stop_position()
                if stop_at is not None:
                    text = self._decoded[-1][:stop_at]
                    result = self._result(text, "stop_sequence")
                    break
                pending = self._schedule(executor, pending, step)
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
        tail = result.text[self._emitted :]
        if tail:
            self._emitted += len(tail)
            yield (self._text_label(), tail)
        return result

    @property
    def _overlap(self) -> bool:
        return self.opts.overlap and bool(getattr(self.runtime, "overlaps_forward_pass", False))

    def _schedule(
        self, executor: ThreadPoolExecutor | None, pending: Any, step: Sequence[int]
    ) -> Future[Any] | Callable[[], None] | None:
        """Queue the forward pass over ``step`` (unless the output is already at its limit)."""
        self._run_pending(pending)
        if self.decoding.remaining() <= 0 and self.decoding.in_last_segment:
            return None
        if executor is not None:
            return executor.submit(self._timed_feed, list(step))
        return functools.partial(self._timed_feed, list(step))

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

    def _logits(self) -> np.ndarray:
        logits = np.asarray(self.runtime.logits())
        if logits.ndim != 1 or logits.shape[0] != self.width:
            raise VocabError(
                f"the model gives {logits.shape[-1] if logits.ndim else 0} logits but the vocabulary has a "
                f"width of {self.width}: the vocabulary does not belong to this model"
            )
        return logits

    def _append(self, ids: Sequence[int]) -> Iterator[tuple[str, str]]:
        """Record committed tokens; where they crossed into a new segment, flush the old one's
        text first (yielded) so that every chunk belongs to one segment."""
        self.stats.output_tokens = len(self.tokens)
        starts = self.decoding.segment_starts
        first = len(self.tokens) - len(ids)
        for i, t in enumerate(ids):
            pos = first + i
            if pos in starts[1:] and starts.index(pos) == len(self._texts):
                yield from self._close_segment()
            data = self.vocab.detokenize([t], specials=self.special_text)
            self._texts[-1] += data
            self._decoded[-1] += self._utf8.decode(data)

    def _close_segment(self) -> Iterator[tuple[str, str]]:
        self._decoded[-1] += self._utf8.decode(b"", final=True)
        self._utf8.reset()
        label = self._text_label()
        rest = self._decoded[-1][self._emitted :]
        if rest:
            yield (label, rest)
        self._texts.append(bytearray())
        self._decoded.append("")
        self._emitted = 0
        self._stop_scan = 0

    def _releasable(self) -> tuple[str, str] | None:
        """Decoded text of the current segment not yet yielded, less what could still turn out
        to start a stop string."""
        text = self._decoded[-1]
        end = len(text)
        if self.opts.stop and len(self._texts) == len(self.decoding.segments):
            end -= max(len(s) for s in self.opts.stop) - 1
        if end <= self._emitted:
            return None
        chunk = text[self._emitted : end]
        self._emitted = end
        return (self._text_label(), chunk)

    def _text_label(self) -> str:
        """The label of the segment whose text is being collected (the decoding may already
        have moved on to the next segment: that happens on the token that closes this one)."""
        return self.decoding.segments[len(self._texts) - 1].label

    def _stop_position(self) -> int | None:
        """Offset (in characters) of the earliest stop string whose preceding text is complete.

        An occurrence rejected once stays rejected (the text before it does not change), so only
        occurrences that end in the text added by the last step are new.
        """
        if not self.opts.stop or not self.decoding.in_last_segment:
            return None
        text = self._decoded[-1]
        grammar = self.decoding.segment.grammar
        best = None
        for s in self.opts.stop:
            start = max(0, self._stop_scan - len(s) + 1)
            while True:
                at = text.find(s, start)
                if at < 0 or (best is not None and at >= best):
                    break
                if grammar.matches(text[:at].encode("utf-8")):
                    best = at
                    break
                start = at + 1
        self._stop_scan = len(text)
        return best

    # -- endings ----------------------------------------------------------------------------

    def _partial(self) -> str:
        return b"".join(bytes(t) for t in self._texts).decode("utf-8", errors="replace")

    def _finish(self, reason: str) -> GenerationResult:
        dec = self.decoding
        if not dec.is_complete():
            raise GenerationError(
                f"max_tokens={dec.segment.max_tokens} ran out before the {dec.segment.label} was complete",
                partial_text=self._partial(),
            )
        try:
            text = bytes(self._texts[-1]).decode("utf-8")
        except UnicodeDecodeError as e:
            raise GenerationError(f"the output is not valid UTF-8: {e}", partial_text=self._partial()) from e
        return self._result(text, reason)

    def _result(self, text: str, reason: str) -> GenerationResult:
        value = self.parse(text)
        labels = [s.label for s in self.decoding.segments]
        segments = [(labels[i], bytes(b).decode("utf-8", errors="replace")) for i, b in enumerate(self._texts[:-1])]
        segments.append((labels[len(self._texts) - 1], text))
        return GenerationResult(value, text, list(self.tokens), reason, self.stats, segments)


def describe_engine() -> dict[str, bool]:
    """Engine capabilities :func:`generate` depends on (for diagnostics and tests)."""
    return {"budget_masks": True, "shortest_completion": True}
