"""Sampling the next token from masked logits, in numpy: repetition penalty, temperature, top-k,
top-p, a seeded RNG.

Only the allowed tokens are looked at: their logits are gathered first, so the cost follows the
size of the mask, not of the vocabulary. A :class:`Sampler` draws exactly one uniform number per
sampled token from its own ``numpy.random.Generator``, so the same seed, logits and masks give
the same tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import StructgenError


@dataclass(frozen=True)
class SamplingOptions:
    """``temperature`` 0 is greedy (the most likely allowed token); ``top_k`` 0 and ``top_p`` 1.0
    keep every allowed token. ``repetition_penalty`` divides the positive logits (and multiplies
    the negative ones) of tokens among the last ``repetition_window`` output tokens, as llama.cpp's
    and the CTRL paper's penalty does; 1.0 is off. The default, 1.1 over 64 tokens, is llama.cpp's:
    without it small models sampled inside a free string field repeat one phrase until
    ``max_tokens``. It only reweighs allowed tokens; what the grammar accepts is unchanged."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    repetition_window: int = 64

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and self.temperature >= 0 and np.isfinite(self.temperature)):
            raise StructgenError(f"temperature must be a finite number >= 0, not {self.temperature!r}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, (int, np.integer)) or self.top_k < 0:
            raise StructgenError(f"top_k must be an integer >= 0, not {self.top_k!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise StructgenError(f"top_p must be in (0, 1], not {self.top_p!r}")
        penalty = self.repetition_penalty
        if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not (0 < penalty < 100):
            raise StructgenError(f"repetition_penalty must be a number in (0, 100), not {penalty!r}")
        window = self.repetition_window
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0:
            raise StructgenError(f"repetition_window must be an integer >= 0, not {window!r}")


class Sampler:
    """Chooses tokens among allowed ids; one per request (it owns the random generator)."""

    def __init__(self, options: SamplingOptions, seed: int | None = None) -> None:
        self.options = options
        self._rng = np.random.default_rng(seed)

    def sample(self, logits: np.ndarray, allowed_ids: np.ndarray, recent: Sequence[int] = ()) -> int:
        """One id of ``allowed_ids`` (non-empty, ascending), chosen from ``logits``; ``recent`` are
        the output tokens so far (the repetition penalty reads the last window of them)."""
        if allowed_ids.size == 1:
            return int(allowed_ids[0])
        values = logits[allowed_ids].astype(np.float64)
        opts = self.options
        if opts.repetition_penalty != 1.0 and opts.repetition_window and len(recent):
            seen = np.unique(np.asarray(recent[-opts.repetition_window :], dtype=np.int64))
            hit = np.isin(allowed_ids, seen, assume_unique=False)
            if hit.any():
                v = values[hit]
                values[hit] = np.where(v > 0, v / opts.repetition_penalty, v * opts.repetition_penalty)
        finite = np.isfinite(values)
        if not finite.all():
            if not finite.any():
                # the model gives no finite logit to any allowed token: choose uniformly
                values = np.zeros_like(values)
            else:
                values = np.where(finite, values, -np.inf)
        if opts.temperature == 0:
            return int(allowed_ids[int(np.argmax(values))])
        values = values / opts.temperature
        ids = allowed_ids
        if 0 < opts.top_k < values.size:
            keep = np.argpartition(-values, opts.top_k - 1)[: opts.top_k]
            keep.sort()
            ids, values = ids[keep], values[keep]
        values = values - values.max()
        probs = np.exp(values)
        probs /= probs.sum()
        if opts.top_p < 1.0:
            order = np.argsort(-probs, kind="stable")
            cumulative = np.cumsum(probs[order])
            cut = int(np.searchsorted(cumulative, opts.top_p)) + 1
            keep = np.sort(order[:cut])
            ids, probs = ids[keep], probs[keep]
            probs = probs / probs.sum()
        u = self._rng.random()
        k = int(np.searchsorted(np.cumsum(probs), u, side="right"))
        return int(ids[min(k, ids.size - 1)])
