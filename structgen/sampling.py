"""Sampling the next token from masked logits, in numpy: temperature, top-k, top-p, a seeded RNG.

Only the allowed tokens are looked at: their logits are gathered first, so the cost follows the
size of the mask, not of the vocabulary. A :class:`Sampler` draws exactly one uniform number per
sampled token from its own ``numpy.random.Generator``, so the same seed, logits and masks give
the same tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import StructgenError


@dataclass(frozen=True)
class SamplingOptions:
    """``temperature`` 0 is greedy (the most likely allowed token); ``top_k`` 0 and ``top_p`` 1.0
    keep every allowed token."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and self.temperature >= 0 and np.isfinite(self.temperature)):
            raise StructgenError(f"temperature must be a finite number >= 0, not {self.temperature!r}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, (int, np.integer)) or self.top_k < 0:
            raise StructgenError(f"top_k must be an integer >= 0, not {self.top_k!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise StructgenError(f"top_p must be in (0, 1], not {self.top_p!r}")


class Sampler:
    """Chooses tokens among allowed ids; one per request (it owns the random generator)."""

    def __init__(self, options: SamplingOptions, seed: int | None = None) -> None:
        self.options = options
        self._rng = np.random.default_rng(seed)

    def sample(self, logits: np.ndarray, allowed_ids: np.ndarray) -> int:
        """One id of ``allowed_ids`` (non-empty, ascending), chosen from ``logits``."""
        if allowed_ids.size == 1:
            return int(allowed_ids[0])
        values = logits[allowed_ids].astype(np.float64)
        finite = np.isfinite(values)
        if not finite.all():
            if not finite.any():
                # the model gives no finite logit to any allowed token: choose uniformly
                values = np.zeros_like(values)
            else:
                values = np.where(finite, values, -np.inf)
        opts = self.options
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
