"""The one constrained decoding step: what the next token may be, and what committing it does.

Every front end drives a model through this module: :func:`structgen.generate`, ``stream``,
``chat`` (its own loop over a runtime), the llama-cpp-python and transformers logits processors
(the host samples), and the server and the engine plug-ins. A :class:`Decoding` is one request:

* **segments** - an output is one or more :class:`Segment` in order, each a grammar with its own
  token budget: a thinking block then the answer, or just the answer. A segment ends when its
  text is complete and nothing can extend it; the next one starts with a fresh state. End ids are
  allowed only where the last segment is complete.
* **budgets** - each segment's mask keeps only tokens after which its grammar can still close
  within the tokens it has left (the engine's budget masks), so an output is always complete when
  its budget runs out; a segment's budget is also cut to what the context window has left.
* **forced tokens** - the tokens every valid continuation starts with are committed without
  sampling (fast-forward), at the start of each segment and after each sampled token.
* **end ids** - the vocabulary's end-of-generation ids and the caller's stop ids end the output
  where the last segment is complete; they are never committed to a grammar.

The mask is exact: a token is allowed iff the segment's grammar can continue with it and still
close within the budget. Committing a token the mask did not allow raises
:class:`~structgen.errors.GenerationError` and leaves the state as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .constraint_cache import constraint_for
from .engine import State
from .engine.masks import unpack
from .errors import GenerationError, StructgenError
from .grammar import Grammar
from .vocab import Vocab


@dataclass(frozen=True)
class Segment:
    """One constrained part of an output: its grammar, the most tokens it may take, and a label
    (``"reasoning"``, ``"answer"``) that results and streams use to tell the parts apart."""

    grammar: Grammar
    max_tokens: int
    label: str = "answer"

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise StructgenError(f"a segment's max_tokens must be a positive integer, not {self.max_tokens!r}")


@dataclass(frozen=True)
class Allowed:
    """The ids the next token may be (ascending, end ids included where the output may end) and
    whether any of them is text (not an end id)."""

    ids: np.ndarray
    has_text: bool


class Decoding:
    """One request's constrained decoding over ``segments`` (see the module docstring).

    ``token_limit`` caps the whole output (what the context window has left); ``stop_token_ids``
    end it like the end-of-generation ids; ``budget_masks=False`` turns the budget masks off (the
    output may then run out of tokens unfinished).
    """

    def __init__(
        self,
        vocab: Vocab,
        segments: Sequence[Segment],
        *,
        token_limit: int | None = None,
        stop_token_ids: Iterable[int] = (),
        budget_masks: bool = True,
    ) -> None:
        if not segments:
            raise StructgenError("a decoding needs at least one segment")
        self.vocab = vocab
        self.segments = tuple(segments)
        self.width = vocab.logit_width
        eos = {int(e) for e in vocab.eos_token_ids if int(e) < self.width}
        stops = set()
        for t in stop_token_ids:
            t = int(t)
            if not 0 <= t < self.width:
                raise StructgenError(f"stop_token_ids must be in [0, {self.width})")
            stops.add(t)
        self._stop_only = np.asarray(sorted(stops - eos), dtype=np.int64)
        self._end_ids = frozenset(eos | stops)
        self._end_array = np.asarray(sorted(self._end_ids), dtype=np.int64)
        self.budget_masks = budget_masks
        self.token_limit = token_limit
        self.tokens: list[int] = []
        #: the index in :attr:`tokens` where each segment started (one entry per segment begun)
        self.segment_starts: list[int] = [0]
        self.index = 0
        self.state: State = self._start_segment(0)
        self.ended = False

    # -- where we are ---------------------------------------------------------------------

    @property
    def segment(self) -> Segment:
        return self.segments[self.index]

    @property
    def end_ids(self) -> frozenset[int]:
        return self._end_ids

    @property
    def in_last_segment(self) -> bool:
        return self.index == len(self.segments) - 1

    def remaining(self) -> int:
        """Tokens the current segment may still take (its budget, cut by the overall limit)."""
        used = len(self.tokens) - self.segment_starts[-1]
        left = self.segment.max_tokens - used
        if self.token_limit is not None:
            left = min(left, self.token_limit - len(self.tokens))
        return left

    def is_complete(self) -> bool:
        """Whether the output may end here: the last segment's text is complete."""
        return self.ended or (self.in_last_segment and self.state.is_accepting())

    def segment_tokens(self) -> list[list[int]]:
        """The output's tokens split by segment (segments not reached are absent)."""
        bounds = self.segment_starts + [len(self.tokens)]
        return [self.tokens[a:b] for a, b in zip(bounds, bounds[1:])]

    # -- the mask -------------------------------------------------------------------------

    def allowed(self) -> Allowed:
        """What the next token may be (see :class:`Allowed`); empty once the budget is spent."""
        remaining = self.remaining()
        if self.ended or remaining <= 0:
            return Allowed(np.zeros(0, dtype=np.int64), False)
        allowed = self._mask(self.state, remaining)
        ends = self._end_array
        if self.in_last_segment:
            if self._stop_only.size and self.state.is_accepting():
                allowed[self._stop_only] = True
            saved = allowed[ends]
            allowed[ends] = False
            has_text = bool(allowed.any())
            allowed[ends] = saved
        else:
            allowed[ends] = False
            has_text = bool(allowed.any())
        return Allowed(np.flatnonzero(allowed), has_text)

    def allowed_mask(self) -> np.ndarray:
        """:meth:`allowed` as a bool array of the logit width."""
        out = np.zeros(self.width, dtype=bool)
        out[self.allowed().ids] = True
        return out

    def mask_logits(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the mask forbids set to ``-inf`` (in place; returned)."""
        if logits.shape[-1] != self.width:
            raise StructgenError(
                f"the logits have {logits.shape[-1]} entries but the vocabulary a width of {self.width}"
            )
        logits[~self.allowed_mask()] = -np.inf
        return logits

    def _mask(self, state: State, remaining: int) -> np.ndarray:
        if self.budget_masks:
            # `remaining` tokens may follow; the end id is free (the output stops once complete
            # when the budget is spent), hence one more for the engine
            words = state.mask_words(budget=remaining + 1)
        else:
            words = state.mask_words()
        return unpack(words, self.width)

    # -- committing -----------------------------------------------------------------------

    def commit(self, token: int) -> bool:
        """Commit one token. Returns True when it ended the output (an end or stop id where the
        output is complete). A token the mask forbids raises :class:`GenerationError`."""
        token = int(token)
        if token in self._end_ids:
            if not self.is_complete():
                raise GenerationError(f"end token {token} came before the output was complete")
            self.ended = True
            return True
        if self.remaining() <= 0:
            raise GenerationError("the token budget is spent")
        if not self.state.commit_token(token):
            raise GenerationError(f"token {token} is not allowed here by the constraint")
        self.tokens.append(token)
        self._maybe_next_segment()
        return False

    def forced(self) -> list[int]:
        """Commit the tokens every valid continuation starts with (within the budget) and return
        them; none where there is a choice."""
        out: list[int] = []
        while not self.ended:
            room = self.remaining()
            if room <= 0:
                break
            step = self.state.forced_tokens()[:room]
            done = 0
            for t in step:
                if not self.state.commit_token(t):
                    break
                self.tokens.append(t)
                done += 1
            out.extend(step[:done])
            before = self.index
            if done:
                self._maybe_next_segment()
            if self.index == before:
                break
        return out

    def _maybe_next_segment(self) -> None:
        if self.in_last_segment or not self.state.is_accepting():
            return
        words = self.state.mask_words()
        allowed = unpack(words, self.width)
        allowed[self._end_array] = False
        if allowed.any():
            return  # the segment may go on: it ends only where nothing can extend it
        self.index += 1
        self.segment_starts.append(len(self.tokens))
        self.state = self._start_segment(self.index)

    def _start_segment(self, index: int) -> State:
        return constraint_for(self.segments[index].grammar, self.vocab).start()

    # -- before generating ----------------------------------------------------------------

    def check_fits(self) -> None:
        """Raise :class:`GenerationError` if no valid output fits the budget (before any model call)."""
        if self.allowed().ids.size:
            return
        hint = ""
        need = self.state.shortest_completion()
        if need is not None:
            hint = f" (the shortest valid {self.segment.label} is {need} bytes)"
        raise GenerationError(
            f"no valid {self.segment.label} fits in max_tokens={self.remaining()}{hint}; raise max_tokens",
            partial_text="",
        )
